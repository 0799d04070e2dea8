//! Batches against the tables: next-hop ids, rules' next hops, addresses.

use ctl::wire::{ErrorBody, ErrorKind};

use super::{apply, prefix_of, AUTO_MIN_ID};
use crate::acl;
use crate::route::{Limits, Origin, Target};
use crate::tables::{PortInfo, Tables};

pub(crate) struct World {
    pub t: Tables,
    pub acl: acl::ClassifierWriter,
}

impl World {
    pub fn new() -> World {
        World::with_limits(crate::tables::Limits::default())
    }

    /// A world whose routing tables are held to `limits`.
    pub fn with_routing_limits(limits: Limits) -> World {
        World::with_limits(crate::tables::Limits {
            routing: limits,
            ..crate::tables::Limits::default()
        })
    }

    /// A world whose tables are held to `limits`.
    pub fn with_limits(limits: crate::tables::Limits) -> World {
        let acl = acl::ClassifierWriter::new(acl::Config::default());
        let ports = vec![
            PortInfo::new("p0", [2, 0, 0, 0, 0, 1], 0),
            PortInfo::new("p1", [2, 0, 0, 0, 0, 2], 0),
            PortInfo::new("red", [2, 0, 0, 0, 0, 3], 5),
        ];
        World {
            t: Tables::empty(ports, acl.current().clone(), limits),
            acl,
        }
    }

    /// Applies a batch given as text; publishes it on success.
    pub fn run(&mut self, text: &str) -> Result<(), ErrorBody> {
        let batch = ctl::text::parse_batch(text).expect("test batch parses");
        let o = apply(&self.t, &mut self.acl, &batch.changes, None)?;
        self.t = o.tables;
        Ok(())
    }

    pub fn ok(&mut self, text: &str) {
        if let Err(e) = self.run(text) {
            panic!("{text}: {e}");
        }
    }

    pub fn refused(&mut self, text: &str, kind: ErrorKind, needle: &str) {
        match self.run(text) {
            Ok(()) => panic!("{text}: accepted"),
            Err(e) => {
                assert_eq!(e.kind, kind, "{text}: {e}");
                assert!(e.message.contains(needle), "{text}: {e}");
            }
        }
    }

    pub fn route(&self, table: u32, p: &str) -> Option<crate::route::Entry> {
        self.t
            .routing
            .entry(table, prefix_of(p.parse().unwrap()).unwrap())
    }
}

#[test]
fn wire_tcp_flags_beyond_the_12_bit_field_are_refused_and_change_nothing() {
    // The text parser stops these; a client speaking JSON does not.
    let mut w = World::new();
    for (value, mask) in [(0x1000u16, 0x1000u16), (0, 0xffff), (0x100, 0x8100)] {
        let rule = ctl::wire::Change::RuleAdd(Box::new(ctl::wire::Rule {
            id: Some(1),
            priority: 1,
            matches: ctl::wire::RuleMatch {
                tcp_flags: Some(ctl::wire::Masked16 { value, mask }),
                ..Default::default()
            },
            actions: vec![ctl::wire::Action::Drop],
        }));
        let e = match apply(&w.t, &mut w.acl, &[rule], None) {
            Ok(_) => panic!("{value:#x}/{mask:#x}: accepted"),
            Err(e) => e,
        };
        assert_eq!(e.kind, ErrorKind::Invalid, "{e}");
        assert!(e.message.contains("tcp_flags"), "{e}");
        assert!(e.message.contains("12-bit"), "{e}");
    }
    assert_eq!(w.t.acl.entries().count(), 0);
    w.ok("rule add id 1 prio 1 tcp_flags ae/0xf00 action drop");
    assert_eq!(w.t.acl.entries().count(), 1);
}

// Finding 6: rules hold references to their next hops.

#[test]
fn a_rule_must_steer_to_an_existing_named_next_hop() {
    let mut w = World::new();
    w.ok("address add 10.0.0.1/24 dev p0\n\
          route add 10.9.0.0/16 via 10.0.0.2\n\
          nexthop add 10 via 10.0.0.3 dev p0\n\
          group add 20 members 10");
    w.refused(
        "rule add id 1 prio 1 action nexthop 11",
        ErrorKind::NotFound,
        "no next hop 11",
    );
    w.refused(
        "rule add id 1 prio 1 action nexthop 20",
        ErrorKind::Invalid,
        "ECMP group",
    );
    let auto = *w.t.mgmt.auto_by_id.keys().next().unwrap();
    w.refused(
        &format!("rule add id 1 prio 1 action nexthop {auto}"),
        ErrorKind::Invalid,
        "not one of the operator's",
    );
    w.ok("rule add id 1 prio 1 action nexthop 10");
    w.refused(
        "rule replace id 1 prio 1 action nexthop 12",
        ErrorKind::NotFound,
        "no next hop 12",
    );
    assert!(w.t.acl.entries().count() == 1);
}

#[test]
fn a_next_hop_used_by_a_rule_is_not_deleted_under_it() {
    let mut w = World::new();
    w.ok("address add 10.0.0.1/24 dev p0\n\
          nexthop add 10 via 10.0.0.3 dev p0\n\
          rule add id 7 prio 1 dst 10.8.0.0/16 action nexthop 10");
    assert_eq!(w.t.mgmt.rule_nexthops.count(10), 1);
    w.refused("nexthop del 10", ErrorKind::Conflict, "rule 7");
    // Replacing the rule away from it frees it; a later id reuse cannot
    // capture the rule.
    w.ok("nexthop add 11 via 10.0.0.4 dev p0\n\
          rule replace id 7 prio 1 dst 10.8.0.0/16 action nexthop 11\n\
          nexthop del 10");
    w.refused("nexthop del 11", ErrorKind::Conflict, "rule 7");
    // A rule and its next hop go together; a flush frees them all.
    w.ok("rule del 7\nnexthop del 11");
    assert_eq!(w.t.mgmt.rule_nexthops.count(11), 0);
    w.ok("nexthop add 12 via 10.0.0.5 dev p0\n\
          rule add id 8 prio 1 action nexthop 12\n\
          rule add id 9 prio 2 action nexthop 12");
    w.refused("nexthop del 12", ErrorKind::Conflict, "rule 8, 9");
    w.ok("rule flush\nnexthop del 12");
    // A refused batch leaves the references as they were.
    w.ok("nexthop add 13 via 10.0.0.5 dev p0\nrule add id 1 prio 1 action nexthop 13");
    w.refused(
        "rule del 1\nroute add 1.0.0.0/8 nhid 99",
        ErrorKind::NotFound,
        "99",
    );
    w.refused("nexthop del 13", ErrorKind::Conflict, "rule 1");
}

// Finding 7: the operator's ids and the unnamed ones do not meet.

#[test]
fn unnamed_next_hops_never_take_an_operators_id() {
    let mut w = World::new();
    w.ok("address add 198.51.100.1/24 dev p0\n\
          address add 10.0.0.1/24 dev p1\n\
          route add 10.1.0.0/16 via 10.0.0.2\n\
          route add 10.2.0.0/16 nexthop via 10.0.0.2 nexthop via 10.0.0.3");
    assert!(w.t.mgmt.auto_by_id.keys().all(|&id| id >= AUTO_MIN_ID));
    assert!(w
        .t
        .mgmt
        .auto_group_by_id
        .keys()
        .all(|&id| id >= AUTO_MIN_ID));
    // The README's own example.
    w.ok("nexthop add 10 via 198.51.100.254 dev p0\n\
          nexthop add 11 via 198.51.100.253 dev p0\n\
          group add 100 members 10 11:3\n\
          route replace default nexthop-group 100");
    let auto = *w.t.mgmt.auto_by_id.keys().next().unwrap();
    for (text, needle) in [
        (format!("nexthop add {AUTO_MIN_ID} dev p0"), "out of range"),
        ("nexthop add 0 dev p0".to_string(), "out of range"),
        (
            format!("group add {AUTO_MIN_ID} members 10"),
            "out of range",
        ),
        (format!("nexthop replace {auto} dev p0"), "out of range"),
        (
            format!("group add 5 members {auto}"),
            "not one of the operator's",
        ),
        (
            format!("route add 1.0.0.0/8 nhid {auto}"),
            "not one of the operator's",
        ),
    ] {
        w.refused(&text, ErrorKind::Invalid, needle);
    }
}

#[test]
fn groups_and_routes_through_named_next_hops_keep_to_one_family() {
    let mut w = World::new();
    w.ok("nexthop add 1 via 10.0.0.2 dev p0\n\
          nexthop add 2 via 2001:db8::2 dev p0\n\
          nexthop add 3 dev p0\n\
          group add 10 members 1 3");
    w.refused(
        "group add 11 members 1 2",
        ErrorKind::Invalid,
        "different families",
    );
    w.refused(
        "route add 2001:db8:5::/48 nexthop-group 10",
        ErrorKind::Invalid,
        "IPv4",
    );
    w.refused(
        "route add 2001:db8:5::/48 nhid 1",
        ErrorKind::Invalid,
        "families",
    );
    w.ok("route add 2001:db8:5::/48 nhid 3\nroute add 10.5.0.0/16 nexthop-group 10");
    w.refused(
        "nexthop replace 1 via 2001:db8::9 dev p0",
        ErrorKind::Invalid,
        "must stay",
    );
    w.refused(
        "group replace 10 members 2",
        ErrorKind::Invalid,
        "must stay",
    );
    // An on-link next hop has no family of its own: its users decide
    // (found by the saved-state property test). 3 is used by an IPv6
    // route and, through group 10, by an IPv4 one: no gateway fits.
    w.refused(
        "nexthop replace 3 via 10.0.0.9 dev p0",
        ErrorKind::Invalid,
        "of IPv6",
    );
    w.refused(
        "nexthop replace 3 via 2001:db8::9 dev p0",
        ErrorKind::Invalid,
        "of IPv4",
    );
    w.ok("nexthop add 4 dev p0\nroute add 10.6.0.0/16 nhid 4");
    w.refused(
        "nexthop replace 4 via 2001:db8::7 dev p0",
        ErrorKind::Invalid,
        "must stay",
    );
    w.ok("nexthop replace 4 via 10.0.0.7 dev p0");
    // Unused, it may take either.
    w.ok("nexthop add 5 dev p0\nnexthop replace 5 via 2001:db8::5 dev p0");
    // In a group no route uses, the other members decide: 6 joined 5
    // (IPv6) while on-link, so it may not become IPv4 (found by the
    // saved-state property test: the saved group no longer loaded).
    w.ok("nexthop add 6 dev p0\ngroup add 12 members 6 5");
    w.refused(
        "nexthop replace 6 via 10.0.0.6 dev p0",
        ErrorKind::Invalid,
        "of IPv6",
    );
    w.ok("nexthop replace 6 via 2001:db8::6 dev p0");
}

// Finding 9: addresses on two ports, and the operator's routes.

#[test]
fn a_subnet_is_held_by_one_port_of_a_table() {
    let mut w = World::new();
    w.ok("address add 10.0.0.1/24 dev p0");
    w.refused("address add 10.0.0.2/24 dev p1", ErrorKind::Conflict, "p0");
    w.refused("address add 10.0.0.0/16 dev p1", ErrorKind::Conflict, "p0");
    w.refused("address add 10.0.0.9/30 dev p1", ErrorKind::Conflict, "p0");
    w.refused("address add 10.0.0.1/8 dev p1", ErrorKind::Conflict, "p0");
    w.refused(
        "address add 10.0.0.1/24 dev p0",
        ErrorKind::Exists,
        "already",
    );
    // Another table may hold it.
    w.ok("address add 10.0.0.2/24 dev red");
    let conn = Target::NextHop(w.t.mgmt.auto_nh[&(None, 0)]);
    assert_eq!(w.route(0, "10.0.0.0/24").map(|e| e.target), Some(conn));
    // A second address of the same subnet on the same port: its deletion
    // keeps the connected route the first still needs.
    w.ok("address add 10.0.0.5/24 dev p0");
    w.ok("address del 10.0.0.5/24 dev p0");
    assert_eq!(w.route(0, "10.0.0.0/24").map(|e| e.target), Some(conn));
    assert_eq!(w.route(0, "10.0.0.5/32"), None);
    assert_eq!(
        w.route(0, "10.0.0.1/32").map(|e| e.target),
        Some(Target::Local)
    );
}

#[test]
fn an_address_never_overwrites_nor_deletes_the_operators_routes() {
    let mut w = World::new();
    w.ok("route add 10.0.0.0/24 blackhole\nroute add 10.0.0.1/32 reject");
    w.ok("address add 10.0.0.1/24 dev p0");
    let e = w.route(0, "10.0.0.0/24").unwrap();
    assert_eq!((e.target, e.origin), (Target::Blackhole, Origin::STATIC));
    assert_eq!(w.route(0, "10.0.0.1/32").unwrap().target, Target::Reject);
    w.ok("address del 10.0.0.1/24 dev p0");
    assert_eq!(w.route(0, "10.0.0.0/24").unwrap().target, Target::Blackhole);
    assert_eq!(w.route(0, "10.0.0.1/32").unwrap().target, Target::Reject);
    // An operator's host route through an attached neighbour has the same
    // target as the derived one; it stays when the address goes.
    w.ok("address add 10.0.0.1/24 dev p0\n\
          route add 10.0.0.7/32 via 10.0.0.7\n\
          neigh add 10.0.0.7 lladdr 02:00:00:00:00:07 dev p0\n\
          address del 10.0.0.1/24 dev p0");
    assert_eq!(w.route(0, "10.0.0.7/32").unwrap().origin, Origin::STATIC);
}

/// Unnamed rules are numbered above the largest id of the rules before the
/// batch (listed only when a batch needs them), and a flush deletes every
/// rule of the version before it, whatever came earlier in the batch.
#[test]
fn unnamed_rules_are_numbered_above_the_rules_before_and_a_flush_takes_them_all() {
    let mut w = World::new();
    let ids = |w: &mut World, text: &str| {
        let batch = ctl::text::parse_batch(text).expect("test batch parses");
        let o = apply(&w.t, &mut w.acl, &batch.changes, None).expect(text);
        w.t = o.tables;
        o.rule_ids
    };
    assert_eq!(ids(&mut w, "rule add prio 5 action drop"), vec![1]);
    assert_eq!(
        ids(&mut w, "rule add id 40 prio 1 action drop"),
        Vec::<u32>::new()
    );
    assert_eq!(
        ids(
            &mut w,
            "rule add prio 2 action drop\nrule add prio 3 action drop"
        ),
        vec![41, 42]
    );
    let mut live: Vec<u32> = w.t.acl.entries().map(|e| e.id()).collect();
    live.sort_unstable();
    assert_eq!(live, vec![1, 40, 41, 42]);
    assert_eq!(
        ids(
            &mut w,
            "rule del id 42\nrule flush\nrule add prio 9 action drop"
        ),
        vec![43]
    );
    let live: Vec<u32> = w.t.acl.entries().map(|e| e.id()).collect();
    assert_eq!(live, vec![43]);
    w.ok("rule flush");
    assert_eq!(w.t.acl.entries().count(), 0);
}

#[test]
fn a_learned_mac_reaches_the_named_and_the_unnamed_next_hops_through_that_neighbour() {
    let mut w = World::new();
    w.ok("address add 10.0.0.1/24 dev p0\n\
          address add 10.1.0.1/24 dev p1\n\
          nexthop add 7 via 10.0.0.9 dev p0\n\
          nexthop add 8 via 10.0.0.10 dev p0\n\
          route add 10.9.0.0/16 via 10.0.0.9 dev p0\n\
          route add 10.8.0.0/16 via 10.0.0.10 dev p0\n\
          route add 10.7.0.0/16 via 10.1.0.9 dev p1");
    let ip = "10.0.0.9".parse().unwrap();
    let via = |t: &Tables, dst: &str| {
        let dst: std::net::Ipv4Addr = dst.parse().unwrap();
        match t.routing.route4(0, u32::from(dst)).unwrap().1 {
            Target::NextHop(id) => id,
            other => panic!("{other:?}"),
        }
    };
    let mac_of = |t: &Tables, id| t.routing.nexthop(id).unwrap().mac;
    let unnamed = via(&w.t, "10.9.1.1");
    assert!(unnamed >= AUTO_MIN_ID);
    let (other, other_port) = (via(&w.t, "10.8.1.1"), via(&w.t, "10.7.1.1"));
    let all = [7, 8, unnamed, other, other_port];
    assert!(all.iter().all(|&id| mac_of(&w.t, id).is_none()));

    let mac = [2, 0, 0, 0, 0, 9];
    let t = super::apply_learned(&w.t, &w.acl, &[(0, ip, Some(mac))], None).unwrap();
    // Through 10.0.0.9 on p0: the named 7 and the unnamed one; not 8 nor
    // the others (another neighbour; the same address on another port is
    // another neighbour too, and p1 has no 10.0.0.9).
    let got: Vec<_> = all.iter().map(|&id| mac_of(&t, id)).collect();
    assert_eq!(got, [Some(mac), None, Some(mac), None, None]);
    let t = super::apply_learned(&t, &w.acl, &[(1, ip, Some([2, 0, 0, 0, 1, 9]))], None).unwrap();
    let got: Vec<_> = all.iter().map(|&id| mac_of(&t, id)).collect();
    assert_eq!(got, [Some(mac), None, Some(mac), None, None]);
    // Withdrawn: both lose it.
    let t = super::apply_learned(&t, &w.acl, &[(0, ip, None)], None).unwrap();
    assert!(all.iter().all(|&id| mac_of(&t, id).is_none()));
}

#[test]
fn batches_past_the_routing_limits_are_refused_whole_naming_the_config_key() {
    let mut w = World::with_routing_limits(Limits {
        tables: 2,
        bytes: usize::MAX,
    });
    w.ok("route add 10.0.0.0/8 blackhole\nroute add 10.0.0.0/8 blackhole table 1\n");
    w.refused(
        "route add 10.1.0.0/16 blackhole\nroute add 10.0.0.0/8 blackhole table 2\n",
        ErrorKind::TooLarge,
        "limits.tables",
    );
    assert!(w.route(0, "10.1.0.0/16").is_none(), "refused whole");
    assert_eq!(w.t.routing.vrfs().count(), 2);

    // 1 MiB above an empty main table: a few hundred scattered host
    // routes (their paths in the FIB pairs, `route/fib.rs`).
    let empty = World::new();
    let mut w = World::with_routing_limits(Limits {
        tables: 8,
        bytes: empty.t.routing.charged_bytes() + (1 << 20),
    });
    let batch: String = (0..2000u32)
        .map(|i| format!("route add 2001:db8:{i:x}:1:{i:x}::{i:x}/128 blackhole\n"))
        .collect();
    w.refused(&batch, ErrorKind::TooLarge, "limits.routing_mb");
    assert!(
        w.route(0, "2001:db8:0:1:0::0/128").is_none(),
        "refused whole"
    );
    w.ok(&batch[..batch.find("route add 2001:db8:a:").unwrap()]);
    assert!(w.route(0, "2001:db8:9:1:9::9/128").is_some());
}

#[test]
fn a_neighbour_learned_at_the_routing_memory_limit_keeps_its_mac_without_a_host_route() {
    let setup = "address add 10.0.0.1/24 dev p0\nroute add 10.9.0.0/16 via 10.0.0.9\n";
    let mut roomy = World::new();
    roomy.ok(setup);
    // The same tables, held to exactly the memory they take.
    let mut full = World::with_routing_limits(Limits {
        tables: 8,
        bytes: roomy.t.routing.charged_bytes(),
    });
    full.ok(setup);
    assert_eq!(
        full.t.routing.charged_bytes(),
        full.t.routing.limits().bytes
    );
    let (ip, mac) = ("10.0.0.9".parse().unwrap(), [2, 0, 0, 0, 0, 9]);
    let gw_mac = |t: &Tables| match t
        .routing
        .entry(0, prefix_of("10.9.0.0/16".parse().unwrap()).unwrap())
    {
        Some(e) => match e.target {
            Target::NextHop(id) => t.routing.nexthop(id).unwrap().mac,
            other => panic!("{other:?}"),
        },
        None => panic!("the route"),
    };
    let host = prefix_of("10.0.0.9/32".parse().unwrap()).unwrap();
    let t = super::apply_learned(&full.t, &full.acl, &[(0, ip, Some(mac))], None).unwrap();
    assert_eq!(gw_mac(&t), Some(mac));
    assert!(
        t.routing.entry(0, host).is_none(),
        "no room for the host route"
    );
    let t = super::apply_learned(&roomy.t, &roomy.acl, &[(0, ip, Some(mac))], None).unwrap();
    assert_eq!(gw_mac(&t), Some(mac));
    assert!(t.routing.entry(0, host).is_some());
}

#[test]
fn static_neighbours_past_the_limit_are_refused_and_replacing_or_deleting_goes() {
    let limits = crate::tables::Limits {
        neighbours: 2,
        ..crate::tables::Limits::default()
    };
    let mut w = World::with_limits(limits);
    // Off any subnet: nothing but the limit stops them.
    w.ok("neigh add 172.16.0.1 lladdr 02:00:00:00:00:01 dev p0\n\
          neigh add 172.16.0.2 lladdr 02:00:00:00:00:02 dev p0\n");
    w.refused(
        "neigh add 172.16.0.3 lladdr 02:00:00:00:00:03 dev p0\n",
        ErrorKind::TooLarge,
        "limits.neighbours",
    );
    assert_eq!(w.t.mgmt.neighbours.len(), 2);
    w.ok("neigh replace 172.16.0.2 lladdr 02:00:00:00:00:09 dev p0\n");
    w.ok("neigh del 172.16.0.1 dev p0\nneigh add 172.16.0.3 lladdr 02:00:00:00:00:03 dev p0\n");
    assert_eq!(w.t.mgmt.neighbours.len(), 2);
    assert_eq!(w.t.limits(), limits, "every version keeps the limits");
}

#[test]
fn addresses_past_the_limit_of_a_port_are_refused_and_deleting_makes_room() {
    let limits = crate::tables::Limits {
        addresses: 2,
        ..crate::tables::Limits::default()
    };
    let mut w = World::with_limits(limits);
    w.ok("address add 10.0.0.1/24 dev p0\naddress add 10.0.0.2/24 dev p0\n");
    w.refused(
        "address add 10.0.0.3/24 dev p0\n",
        ErrorKind::TooLarge,
        "limits.addresses",
    );
    assert_eq!(w.t.ports[0].addresses.len(), 2);
    assert!(w.route(0, "10.0.0.3/32").is_none());
    // A limit a port: another port has room of its own.
    w.ok("address add 10.1.0.1/24 dev p1\n");
    w.ok("address del 10.0.0.1/24 dev p0\naddress add 10.0.0.3/24 dev p0\n");
    assert!(w.route(0, "10.0.0.3/32").is_some());
    assert!(w.route(0, "10.0.0.1/32").is_none());
    assert_eq!(w.t.limits(), limits);
}
