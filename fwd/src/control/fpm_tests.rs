//! zebra's routes against the others: precedence, restoration, multipath
//! groups, and mark and sweep across sessions.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ctl::wire::{self, Change, RouteTarget};

use super::fpm::{FpmControl, FpmEvent, FpmSettings, SharedStatus};
use super::state::{self, FpmOp};
use crate::acl;
use crate::fpm::rib::{FpmPath, FpmRib, FpmTarget};
use crate::qsbr::{self, QsbrConfig, Writer};
use crate::route::{Origin, Prefix, Target};
use crate::tables::{PortInfo, Tables};

const BGP: u8 = 186;

fn p(s: &str) -> Prefix {
    super::prefix_of(s.parse().unwrap()).unwrap()
}

fn via(gw: &str, port: u16) -> FpmTarget {
    FpmTarget::Paths(vec![FpmPath {
        gateway: Some(gw.parse().unwrap()),
        port: Some(port),
        weight: 1,
    }])
}

fn set(prefix: &str, target: FpmTarget) -> FpmOp {
    FpmOp::Set {
        vrf: 0,
        prefix: p(prefix),
        target,
        proto: BGP,
    }
}

fn del(prefix: &str) -> FpmOp {
    FpmOp::Del {
        vrf: 0,
        prefix: p(prefix),
    }
}

fn route_add(prefix: &str, target: RouteTarget) -> Change {
    Change::RouteAdd(wire::Route {
        prefix: prefix.parse().unwrap(),
        table: 0,
        target,
        linkdown: false,
        proto: None,
    })
}

fn route_del(prefix: &str) -> Change {
    Change::RouteDel(wire::RouteDel {
        prefix: prefix.parse().unwrap(),
        table: 0,
        target: None,
    })
}

/// Two ports with addresses: a 10.0.0.1/24, b 10.1.0.1/24.
struct Fixture {
    t: Tables,
    acl: acl::ClassifierWriter,
    rib: FpmRib,
}

impl Fixture {
    fn new() -> Fixture {
        Fixture::with_limits(crate::route::Limits::default())
    }

    fn with_limits(limits: crate::route::Limits) -> Fixture {
        let mut acl = acl::ClassifierWriter::new(acl::Config::default());
        let ports = vec![
            PortInfo::new("a", [2, 0, 0, 0, 0, 1], 0),
            PortInfo::new("b", [2, 0, 0, 0, 0, 2], 0),
        ];
        let limits = crate::tables::Limits {
            routing: limits,
            ..crate::tables::Limits::default()
        };
        let base = Tables::empty(ports, acl.current().clone(), limits);
        let t = state::apply(
            &base,
            &mut acl,
            &[
                Change::AddressAdd(wire::Address {
                    addr: "10.0.0.1/24".parse().unwrap(),
                    dev: "a".into(),
                }),
                Change::AddressAdd(wire::Address {
                    addr: "10.1.0.1/24".parse().unwrap(),
                    dev: "b".into(),
                }),
            ],
            None,
        )
        .unwrap_or_else(|e| panic!("{e}"))
        .tables;
        Fixture {
            t,
            acl,
            rib: FpmRib::new(),
        }
    }

    fn fpm(&mut self, ops: Vec<FpmOp>) -> state::fpm::FpmApplied {
        let (t, done) = state::apply_fpm(&self.t, &self.acl, &mut self.rib, ops);
        if let Some(t) = t {
            self.t = t;
        }
        done
    }

    fn operator(&mut self, changes: &[Change]) -> Result<(), wire::ErrorBody> {
        let o = state::apply(&self.t, &mut self.acl, changes, Some(&self.rib))?;
        self.t = o.tables;
        Ok(())
    }

    fn entry(&self, prefix: &str) -> Option<(Target, Origin)> {
        self.t
            .routing
            .entry(0, p(prefix))
            .map(|e| (e.target, e.origin))
    }

    fn gateway_of(&self, prefix: &str) -> Option<IpAddr> {
        match self.entry(prefix)?.0 {
            Target::NextHop(id) => self.t.routing.nexthop(id)?.gateway,
            _ => None,
        }
    }
}

#[test]
fn zebra_routes_land_with_their_protocol_and_leave_on_withdrawal() {
    let mut f = Fixture::new();
    let done = f.fpm(vec![
        set("192.0.2.0/24", via("10.0.0.2", 0)),
        set("198.51.100.0/24", FpmTarget::Blackhole),
        set("203.0.113.0/24", FpmTarget::Reject),
    ]);
    assert_eq!((done.added, done.refused), (3, 0));
    assert_eq!(f.entry("192.0.2.0/24").unwrap().1, Origin::fpm(BGP));
    assert_eq!(f.gateway_of("192.0.2.0/24"), "10.0.0.2".parse().ok());
    assert_eq!(f.entry("198.51.100.0/24").unwrap().0, Target::Blackhole);
    assert_eq!(f.entry("203.0.113.0/24").unwrap().0, Target::Reject);
    assert_eq!(f.t.routing.fpm_route_count(), 3);
    let w = super::route_to_wire(
        &f.t,
        0,
        p("192.0.2.0/24"),
        f.t.routing.entry(0, p("192.0.2.0/24")).unwrap(),
    );
    assert_eq!(w.proto.as_deref(), Some("bgp"));
    let nhs = f.t.routing.nexthops().count();
    f.fpm(vec![del("192.0.2.0/24"), del("198.51.100.0/24")]);
    assert!(f.entry("192.0.2.0/24").is_none());
    assert!(f.entry("198.51.100.0/24").is_none());
    assert_eq!(f.rib.len(), 1);
    assert_eq!(
        f.t.routing.nexthops().count(),
        nhs - 1,
        "the unnamed next hop went with its last route"
    );
}

#[test]
fn a_replayed_route_publishes_nothing() {
    let mut f = Fixture::new();
    f.fpm(vec![set("192.0.2.0/24", via("10.0.0.2", 0))]);
    let (t, done) = state::apply_fpm(
        &f.t,
        &f.acl,
        &mut f.rib,
        vec![set("192.0.2.0/24", via("10.0.0.2", 0))],
    );
    assert!(t.is_none(), "same route again: no new generation");
    assert_eq!(done.added, 1);
}

#[test]
fn the_operator_wins_and_zebra_comes_back_when_the_operator_leaves() {
    let mut f = Fixture::new();
    // The operator first, zebra second: zebra's waits beneath.
    f.operator(&[route_add("192.0.2.0/24", RouteTarget::Blackhole)])
        .unwrap();
    f.fpm(vec![set("192.0.2.0/24", via("10.0.0.2", 0))]);
    assert_eq!(
        f.entry("192.0.2.0/24"),
        Some((Target::Blackhole, Origin::STATIC))
    );
    assert_eq!(f.t.routing.fpm_route_count(), 0);
    assert_eq!(f.rib.len(), 1);
    f.operator(&[route_del("192.0.2.0/24")]).unwrap();
    assert_eq!(f.entry("192.0.2.0/24").unwrap().1, Origin::fpm(BGP));
    assert_eq!(f.gateway_of("192.0.2.0/24"), "10.0.0.2".parse().ok());

    // zebra first, then the operator overrides with an add.
    f.operator(&[route_add(
        "192.0.2.0/24",
        RouteTarget::Gateway {
            via: Some("10.1.0.9".parse().unwrap()),
            dev: None,
        },
    )])
    .unwrap();
    assert_eq!(f.entry("192.0.2.0/24").unwrap().1, Origin::STATIC);
    assert_eq!(f.gateway_of("192.0.2.0/24"), "10.1.0.9".parse().ok());
    // zebra changes its route meanwhile: still beneath.
    f.fpm(vec![set("192.0.2.0/24", via("10.0.0.3", 0))]);
    assert_eq!(f.gateway_of("192.0.2.0/24"), "10.1.0.9".parse().ok());
    f.operator(&[route_del("192.0.2.0/24")]).unwrap();
    assert_eq!(
        f.gateway_of("192.0.2.0/24"),
        "10.0.0.3".parse().ok(),
        "zebra's latest route is back"
    );
    // zebra withdraws while beneath an operator route: nothing comes back.
    f.operator(&[route_add("192.0.2.0/24", RouteTarget::Reject)])
        .unwrap();
    f.fpm(vec![del("192.0.2.0/24")]);
    assert_eq!(f.entry("192.0.2.0/24").unwrap().0, Target::Reject);
    f.operator(&[route_del("192.0.2.0/24")]).unwrap();
    assert!(f.entry("192.0.2.0/24").is_none());
}

#[test]
fn the_operator_cannot_delete_a_route_zebra_owns() {
    let mut f = Fixture::new();
    f.fpm(vec![set("192.0.2.0/24", via("10.0.0.2", 0))]);
    let e = f.operator(&[route_del("192.0.2.0/24")]).unwrap_err();
    assert_eq!(e.kind, wire::ErrorKind::Conflict);
    assert!(e.message.contains("bgp"), "{}", e.message);
    assert_eq!(f.entry("192.0.2.0/24").unwrap().1, Origin::fpm(BGP));
}

#[test]
fn connected_routes_win_and_zebras_returns_when_the_address_goes() {
    let mut f = Fixture::new();
    f.fpm(vec![set("10.2.0.0/24", via("10.0.0.2", 0))]);
    f.operator(&[Change::AddressAdd(wire::Address {
        addr: "10.2.0.1/24".parse().unwrap(),
        dev: "b".into(),
    })])
    .unwrap();
    assert_eq!(f.entry("10.2.0.0/24").unwrap().1, Origin::KERNEL);
    assert_eq!(f.entry("10.2.0.1/32").unwrap().0, Target::Local);
    f.operator(&[Change::AddressDel(wire::Address {
        addr: "10.2.0.1/24".parse().unwrap(),
        dev: "b".into(),
    })])
    .unwrap();
    assert_eq!(f.entry("10.2.0.0/24").unwrap().1, Origin::fpm(BGP));
    assert!(f.entry("10.2.0.1/32").is_none());
}

#[test]
fn multipath_routes_share_one_unnamed_group_until_the_last_goes() {
    let mut f = Fixture::new();
    let ecmp = || {
        FpmTarget::Paths(vec![
            FpmPath {
                gateway: Some("10.0.0.2".parse().unwrap()),
                port: Some(0),
                weight: 1,
            },
            FpmPath {
                gateway: Some("10.1.0.2".parse().unwrap()),
                port: None,
                weight: 3,
            },
        ])
    };
    f.fpm(vec![
        set("192.0.2.0/24", ecmp()),
        set("198.51.100.0/24", ecmp()),
    ]);
    let (Target::Group(g1), _) = f.entry("192.0.2.0/24").unwrap() else {
        panic!("not a group: {:?}", f.entry("192.0.2.0/24"));
    };
    assert_eq!(f.entry("198.51.100.0/24").unwrap().0, Target::Group(g1));
    let members = f.t.routing.group(g1).unwrap().members().to_vec();
    assert_eq!(members.len(), 2);
    assert_eq!(members.iter().map(|m| m.1).sum::<u32>(), 4);
    match super::target_to_wire(&f.t, Target::Group(g1)) {
        RouteTarget::Multipath(paths) => {
            assert_eq!(paths.len(), 2);
            assert!(paths
                .iter()
                .any(|p| p.dev.as_deref() == Some("b") && p.weight == 3));
        }
        other => panic!("{other:?}"),
    }
    let nhs = f.t.routing.nexthops().count();
    f.fpm(vec![del("192.0.2.0/24")]);
    assert!(f.t.routing.group(g1).is_some());
    f.fpm(vec![del("198.51.100.0/24")]);
    assert!(f.t.routing.group(g1).is_none(), "the group went");
    assert_eq!(f.t.routing.nexthops().count(), nhs - 2, "and its next hops");
}

#[test]
fn a_batch_applies_each_prefixs_changes_in_zebras_order() {
    let mut f = Fixture::new();
    // Applied in prefix order: the changes to one prefix must keep theirs
    // among the others'.
    f.fpm(vec![
        set("203.0.113.0/24", via("10.0.0.2", 0)),
        set("192.0.2.0/24", via("10.0.0.3", 0)),
        del("203.0.113.0/24"),
        set("198.51.100.0/24", via("10.1.0.2", 1)),
        set("192.0.2.0/24", via("10.1.0.3", 1)),
        set("203.0.113.0/24", via("10.0.0.4", 0)),
        del("198.51.100.0/24"),
        set("10.200.0.0/16", FpmTarget::Blackhole),
        del("10.200.0.0/16"),
        set("10.200.0.0/16", via("10.0.0.5", 0)),
    ]);
    let gw = |s: &str| Some(s.parse::<IpAddr>().unwrap());
    assert_eq!(f.gateway_of("192.0.2.0/24"), gw("10.1.0.3"));
    assert_eq!(f.gateway_of("203.0.113.0/24"), gw("10.0.0.4"));
    assert_eq!(f.gateway_of("10.200.0.0/16"), gw("10.0.0.5"));
    assert!(f.entry("198.51.100.0/24").is_none());
    assert!(f.rib.get(0, p("198.51.100.0/24")).is_none());
    assert_eq!(f.rib.len(), 3);
}

#[test]
fn routes_that_cannot_be_installed_are_refused_alone() {
    let mut f = Fixture::new();
    let done = f.fpm(vec![
        // No port for this gateway, and zebra named no interface.
        set(
            "192.0.2.0/24",
            FpmTarget::Paths(vec![FpmPath {
                gateway: Some("172.16.0.1".parse().unwrap()),
                port: None,
                weight: 1,
            }]),
        ),
        // An IPv6 gateway for an IPv4 prefix.
        set("198.51.100.0/24", via("2001:db8::1", 0)),
        set("203.0.113.0/24", via("10.0.0.2", 0)),
    ]);
    assert_eq!((done.added, done.refused), (3, 2));
    assert!(done.last_error.is_some());
    assert!(f.entry("192.0.2.0/24").is_none());
    assert!(f.entry("198.51.100.0/24").is_none());
    assert!(f.entry("203.0.113.0/24").is_some());
    assert_eq!(f.rib.len(), 1, "refused routes are not kept");
}

#[test]
fn zebra_routes_past_the_routing_memory_limit_are_refused_one_by_one() {
    let roomy = Fixture::new();
    // 64 KiB above the two ports' tables: a few scattered /32s fit.
    let mut f = Fixture::with_limits(crate::route::Limits {
        tables: 4,
        bytes: roomy.t.routing.charged_bytes() + (64 << 10),
    });
    let ops: Vec<FpmOp> = (0..64u32)
        .map(|i| {
            let a = std::net::Ipv4Addr::from(0x0b00_0001 + (i << 18));
            set(&format!("{a}/32"), via("10.0.0.2", 0))
        })
        .collect();
    let done = f.fpm(ops);
    assert_eq!(done.added, 64);
    assert!(done.refused > 0 && done.refused < 64, "{done:?}");
    let e = done.last_error.as_deref().unwrap_or_default();
    assert!(e.contains("limits.routing_mb"), "{e}");
    assert_eq!(f.rib.len(), 64 - done.refused as usize);
    assert_eq!(f.t.routing.fpm_route_count(), f.rib.len());
    assert!(f.t.routing.charged_bytes() <= f.t.routing.limits().bytes);
}

#[test]
fn operator_multipath_routes_make_and_free_groups_too() {
    let mut f = Fixture::new();
    let mp = RouteTarget::Multipath(vec![
        wire::NextHopSpec {
            via: Some("10.0.0.2".parse().unwrap()),
            dev: None,
            weight: 1,
        },
        wire::NextHopSpec {
            via: Some("10.1.0.2".parse().unwrap()),
            dev: Some("b".into()),
            weight: 2,
        },
    ]);
    f.operator(&[route_add("192.0.2.0/24", mp.clone())])
        .unwrap();
    let (Target::Group(g), Origin::STATIC) = f.entry("192.0.2.0/24").unwrap() else {
        panic!();
    };
    // Dumps name every path's port.
    let RouteTarget::Multipath(mut dumped) = super::target_to_wire(&f.t, Target::Group(g)) else {
        panic!();
    };
    assert_eq!(dumped[0].dev.as_deref(), Some("a"));
    dumped[0].dev = None;
    assert_eq!(RouteTarget::Multipath(dumped), mp);
    // A named next hop cannot take the group's id (it is not in the
    // operator's range at all).
    let e = f
        .operator(&[Change::NexthopAdd(wire::Nexthop {
            id: g,
            via: None,
            dev: "a".into(),
        })])
        .unwrap_err();
    assert_eq!(e.kind, wire::ErrorKind::Invalid);
    f.operator(&[Change::RouteDel(wire::RouteDel {
        prefix: "192.0.2.0/24".parse().unwrap(),
        table: 0,
        target: Some(mp),
    })])
    .unwrap();
    assert!(f.t.routing.group(g).is_none());
}

fn writer(f: &Fixture) -> Writer<Tables> {
    qsbr::domain(f.t.clone(), QsbrConfig::default())
}

#[test]
fn a_reconnect_keeps_routes_until_the_sweep_then_removes_what_was_not_replayed() {
    let f = Fixture::new();
    let shared: SharedStatus = Arc::default();
    let settings = FpmSettings {
        listen: "127.0.0.1:0".parse().unwrap(),
        // Swept at the first poll after the reconnect: no waiting.
        stale: Duration::ZERO,
        tables: [(254, 0)].into_iter().collect(),
        allowed_uids: None,
    };
    let mut c = FpmControl::new(&settings, Arc::clone(&shared));
    let mut w = writer(&f);
    let now = Instant::now();
    c.event(FpmEvent::Connected, &mut w, &f.acl, now);
    c.event(
        FpmEvent::Batch(vec![
            set("192.0.2.0/24", via("10.0.0.2", 0)),
            set("198.51.100.0/24", via("10.0.0.2", 0)),
        ]),
        &mut w,
        &f.acl,
        now,
    );
    c.poll(&mut w, &f.acl);
    assert_eq!(
        w.current().routing.route_count(0).0,
        6,
        "nothing swept in a first session"
    );
    // zebra restarts: connects again, replays one route of two.
    c.event(FpmEvent::Connected, &mut w, &f.acl, now);
    assert_eq!(shared.lock().unwrap().stale, 2);
    let has = |w: &Writer<Tables>, s: &str| w.current().routing.get(0, p(s)).is_some();
    assert!(has(&w, "198.51.100.0/24"), "stale routes stay installed");
    c.event(
        FpmEvent::Batch(vec![set("192.0.2.0/24", via("10.0.0.2", 0))]),
        &mut w,
        &f.acl,
        now,
    );
    assert!(has(&w, "198.51.100.0/24"));
    c.poll(&mut w, &f.acl);
    assert!(has(&w, "192.0.2.0/24"));
    assert!(!has(&w, "198.51.100.0/24"), "not replayed: swept");
    let s = shared.lock().unwrap().clone();
    assert_eq!((s.routes, s.installed, s.stale, s.swept), (1, 1, 0, 1));
    assert!(s.sweep_in_ms.is_none());
}

fn flush(table: Option<u32>, proto: Option<&str>, within: Option<&str>) -> Change {
    Change::RouteFlush(wire::RouteFilter {
        table,
        family: None,
        within: within.map(|w| w.parse().unwrap()),
        proto: proto.map(String::from),
    })
}

#[test]
fn route_flush_removes_the_operators_routes_only_and_zebra_comes_back() {
    let mut f = Fixture::new();
    f.fpm(vec![
        set("192.0.2.0/24", via("10.0.0.2", 0)),
        set("198.51.100.0/24", via("10.0.0.2", 0)),
    ]);
    let gw = |a: &str| RouteTarget::Gateway {
        via: Some(a.parse().unwrap()),
        dev: None,
    };
    f.operator(&[
        route_add("203.0.113.0/24", gw("10.1.0.9")),
        route_add("203.0.114.0/24", RouteTarget::Blackhole),
        route_add("172.16.0.0/12", gw("10.0.0.7")),
        // Over zebra's: it waits beneath.
        route_add("192.0.2.0/24", RouteTarget::Reject),
    ])
    .unwrap();
    let nexthops = f.t.routing.nexthops().count();

    // Refused, and nothing changes: kernel routes, zebra's, unknown names.
    let before = f.t.routing.stats();
    let e = f
        .operator(&[flush(None, Some("kernel"), None)])
        .unwrap_err();
    assert_eq!(e.kind, wire::ErrorKind::Invalid, "{}", e.message);
    let e = f.operator(&[flush(None, Some("bgp"), None)]).unwrap_err();
    assert_eq!(e.kind, wire::ErrorKind::Conflict, "{}", e.message);
    let e = f
        .operator(&[flush(None, Some("nonsense"), None)])
        .unwrap_err();
    assert_eq!(e.kind, wire::ErrorKind::Invalid, "{}", e.message);
    // A failure later in the batch undoes the flush.
    let e = f
        .operator(&[flush(None, None, None), route_del("10.99.0.0/16")])
        .unwrap_err();
    assert_eq!(e.kind, wire::ErrorKind::NotFound, "{}", e.message);
    assert_eq!(f.t.routing.stats().vrfs, before.vrfs);

    // Within a prefix, then another table (empty: nothing to do).
    f.operator(&[flush(None, Some("static"), Some("203.0.0.0/8"))])
        .unwrap();
    assert!(f.entry("203.0.113.0/24").is_none());
    assert!(f.entry("203.0.114.0/24").is_none());
    assert!(f.entry("172.16.0.0/12").is_some());
    f.operator(&[flush(Some(7), None, None)]).unwrap();
    assert!(f.entry("172.16.0.0/12").is_some());

    // Everything else of the operator's: zebra's route comes back from
    // beneath, the connected and local routes stay, and the unnamed next
    // hops the flushed routes used are gone.
    f.operator(&[flush(None, None, None)]).unwrap();
    assert!(f.entry("172.16.0.0/12").is_none());
    assert_eq!(f.entry("192.0.2.0/24").unwrap().1, Origin::fpm(BGP));
    assert_eq!(f.entry("198.51.100.0/24").unwrap().1, Origin::fpm(BGP));
    assert_eq!(f.entry("10.0.0.0/24").unwrap().1, Origin::KERNEL);
    assert_eq!(f.entry("10.1.0.1/32").unwrap().1, Origin::KERNEL);
    assert!(f.t.routing.nexthops().count() < nexthops);
    assert!(f
        .t
        .routing
        .entries(0)
        .all(|(_, e)| e.origin != Origin::STATIC));
}
