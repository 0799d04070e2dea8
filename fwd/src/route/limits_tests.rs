//! Tests of the routing tables' limits (`limits`): what goes past one is
//! refused, the refusal changes nothing, and deleting makes room again.

use std::net::{IpAddr, Ipv6Addr};

use super::*;

fn p6(a: u128, len: u8) -> Prefix {
    Prefix::V6(Prefix6::new_truncate(a, len).unwrap())
}

fn add(vrf: Vrf, prefix: Prefix) -> RouteChange {
    RouteChange::Add {
        vrf,
        prefix,
        target: Target::Blackhole,
    }
}

/// IPv6 host routes scattered over the address space (the costliest
/// routes: a first-level page and 13 groups each).
fn scattered(i: u64) -> Prefix {
    let h = u128::from(mix(i)) << 64 | u128::from(mix(!i));
    p6(h, 128)
}

/// A 64-bit mix (splitmix64's finaliser).
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[test]
fn the_messages_name_the_limit() {
    let e = RouteError::Full {
        capacity: Capacity::Memory,
        limit: 2048 << 20,
    };
    assert_eq!(e.to_string(), "routing memory full: 2048 MiB");
    let e = RouteError::Full {
        capacity: Capacity::Tables,
        limit: 1024,
    };
    assert_eq!(e.to_string(), "routing tables full: 1024 tables");
}

#[test]
fn a_table_past_the_limit_is_refused_and_none_is_created() {
    let limits = Limits {
        tables: 2,
        bytes: usize::MAX,
    };
    let r = Routing::with_limits(limits)
        .apply(&[RouteChange::VrfAdd { vrf: 0 }, add(1, p6(1 << 120, 8))])
        .unwrap();
    let full = RouteError::Full {
        capacity: Capacity::Tables,
        limit: 2,
    };
    // Neither a route into a third table nor the table alone.
    assert_eq!(r.apply(&[add(2, p6(1 << 120, 8))]).unwrap_err().error, full);
    assert_eq!(
        r.apply(&[RouteChange::VrfAdd { vrf: 2 }])
            .unwrap_err()
            .error,
        full
    );
    // A transaction that goes on after the refusal: no table was made.
    let mut t = r.txn();
    assert_eq!(t.add(2, p6(1 << 120, 8), Target::Blackhole), Err(full));
    t.add(0, p6(1 << 120, 8), Target::Blackhole).unwrap();
    let r2 = t.commit();
    assert_eq!(r2.vrfs().collect::<Vec<_>>(), vec![0, 1]);
    assert_eq!(r2.charged_bytes(), r2.recharge());
    // Deleting a table makes room for another.
    let r3 = r
        .apply(&[
            RouteChange::Del {
                vrf: 1,
                prefix: p6(1 << 120, 8),
            },
            RouteChange::VrfDel { vrf: 1 },
            add(2, p6(1 << 120, 8)),
        ])
        .unwrap();
    assert_eq!(r3.vrfs().collect::<Vec<_>>(), vec![0, 2]);
    assert_eq!(r3.charged_bytes(), r3.recharge());
    assert_eq!(r3.charged_bytes(), r.charged_bytes());
}

/// The main table alone (and the empty version), held to `room` bytes
/// above its charge; then `next(0)`, `next(1)`... added one a version
/// until one is refused. Returns the empty version, the version at the
/// limit, the routes in it and the one refused.
fn filled(room: usize, next: impl Fn(u64) -> Prefix) -> (Routing, Routing, Vec<Prefix>, Prefix) {
    let empty = Routing::new()
        .apply(&[RouteChange::VrfAdd { vrf: 0 }])
        .unwrap();
    let limit = empty.charged_bytes() + room;
    let mut r = Routing::with_limits(Limits {
        tables: 4,
        bytes: limit,
    })
    .apply(&[RouteChange::VrfAdd { vrf: 0 }])
    .unwrap();
    let mut added = Vec::new();
    for i in 0..1000 {
        let p = next(i);
        if r.get(0, p).is_some() {
            continue;
        }
        match r.apply(&[add(0, p)]) {
            Ok(more) => {
                assert!(more.charged_bytes() <= limit);
                assert_eq!(more.charged_bytes(), more.recharge());
                r = more;
                added.push(p);
            }
            Err(e) => {
                let full = RouteError::Full {
                    capacity: Capacity::Memory,
                    limit,
                };
                assert_eq!(e.error, full);
                assert!(added.len() > 20, "refused after {} routes", added.len());
                return (empty, r, added, p);
            }
        }
    }
    panic!("no refusal");
}

#[test]
fn routes_past_the_memory_limit_are_refused_and_undone() {
    // 1 MiB is a few dozen of these.
    let (empty, r, added, refused) = filled(1 << 20, scattered);
    let limit = r.limits().bytes;
    // The charge follows the tables' own accounting on this costliest
    // kind of route too.
    let ratio = r.charged_bytes() as f64 / r.memory_bytes() as f64;
    eprintln!("{} routes: charged / counted {ratio:.3}", added.len());
    assert!((0.9..1.3).contains(&ratio), "charged / counted {ratio}");
    // The refused write was undone: after its batch the tables are what
    // they were, to the byte.
    let mut t = r.txn();
    assert!(t.add(0, refused, Target::Blackhole).is_err());
    let after = t.commit();
    assert_eq!(after.charged_bytes(), r.charged_bytes());
    assert_eq!(after.memory_bytes(), r.memory_bytes());
    assert_eq!(after.route_count(0), r.route_count(0));
    let Prefix::V6(rp) = refused else {
        unreachable!()
    };
    assert_eq!(after.lookup6(0, rp.addr(), || 0), Resolved::NoRoute);
    // At the limit, what costs nothing more still goes: a new target for
    // a route that exists.
    let nh = RouteChange::NhAdd {
        id: 1,
        nh: NextHop {
            gateway: Some(IpAddr::V6(Ipv6Addr::LOCALHOST)),
            port: 0,
            mac: None,
        },
    };
    if let Ok(with_nh) = r.apply(&[nh]) {
        with_nh
            .apply(&[RouteChange::Replace {
                vrf: 0,
                prefix: added[0],
                target: Target::NextHop(1),
            }])
            .unwrap();
    }
    // Deleting makes room again.
    let dels: Vec<RouteChange> = added[..4]
        .iter()
        .map(|&prefix| RouteChange::Del { vrf: 0, prefix })
        .collect();
    let r = r.apply(&dels).unwrap().apply(&[add(0, refused)]).unwrap();
    assert!(r.charged_bytes() <= limit);
    // Everything deleted: the charge of the empty table again.
    let dels: Vec<RouteChange> = added[4..]
        .iter()
        .chain([&refused])
        .map(|&prefix| RouteChange::Del { vrf: 0, prefix })
        .collect();
    assert_eq!(
        r.apply(&dels).unwrap().charged_bytes(),
        empty.charged_bytes()
    );
}

#[test]
fn next_hops_and_groups_past_the_memory_limit_are_refused() {
    let limit = Routing::new().charged_bytes() + (256 << 10);
    let mut r = Routing::with_limits(Limits {
        tables: 1,
        bytes: limit,
    });
    let nh = |port| NextHop {
        gateway: None,
        port,
        mac: None,
    };
    // Ids far apart: a page of the table each.
    let mut ids = Vec::new();
    let refused = loop {
        let id = ids.len() as u32 * 4096;
        match r.apply(&[RouteChange::NhAdd { id, nh: nh(1) }]) {
            Ok(next) => {
                assert_eq!(next.charged_bytes(), next.recharge());
                r = next;
                ids.push(id);
            }
            Err(e) => {
                assert!(matches!(e.error, RouteError::Full { .. }), "{e}");
                break id;
            }
        }
        assert!(ids.len() < 1000, "no refusal");
    };
    assert!(ids.len() > 2, "refused after {}", ids.len());
    let mut t = r.txn();
    assert!(t.nh_add(refused, nh(1)).is_err());
    let after = t.commit();
    assert_eq!(after.nexthop(refused), None);
    assert_eq!(after.charged_bytes(), r.charged_bytes());
    // Groups of 64 members (4096 slots each) until one does not fit:
    // refused, and its members' counts are as before.
    let r = r
        .apply(&[
            RouteChange::NhDel { id: ids[1] },
            RouteChange::NhDel { id: ids[2] },
        ])
        .unwrap();
    let many: Vec<RouteChange> = (0..64u32)
        .map(|i| RouteChange::NhAdd {
            id: 1 + i,
            nh: nh(1),
        })
        .collect();
    let r = r.apply(&many).unwrap();
    let members: Vec<(NhId, u32)> = (1..=64).map(|id| (id, 64)).collect();
    let mut fill = r.clone();
    let mut g = 0;
    let e = loop {
        match fill.apply(&[RouteChange::GroupAdd {
            id: g,
            members: members.clone(),
        }]) {
            Ok(next) => {
                fill = next;
                g += 1;
            }
            Err(e) => break e,
        }
        assert!(g < 1000, "no refusal");
    };
    assert!(matches!(e.error, RouteError::Full { .. }), "{e}");
    let mut t = fill.txn();
    assert!(t.group_add(g, &members).is_err());
    let after = t.commit();
    assert!(after.group(g).is_none());
    assert_eq!(after.nexthop_refs(1), fill.nexthop_refs(1));
    assert_eq!(after.charged_bytes(), fill.charged_bytes());
    assert_eq!(after.charged_bytes(), after.recharge());
}

/// IPv4 /24s scattered over the first level: a page each, which a delete
/// gives back only when its batch is trimmed.
fn scattered24(i: u64) -> Prefix {
    Prefix::V4(Prefix4::new_truncate(mix(i) as u32, 24).unwrap())
}

#[test]
fn a_batch_that_deletes_and_adds_at_the_limit_is_judged_on_what_it_leaves() {
    let (_, r, added, refused) = filled(256 << 10, scattered24);
    let limit = r.limits().bytes;
    // One batch: a route out, another in. The page the delete frees is
    // credited before the add is judged.
    let swapped = r
        .apply(&[
            RouteChange::Del {
                vrf: 0,
                prefix: added[0],
            },
            add(0, refused),
        ])
        .unwrap();
    assert!(swapped.charged_bytes() <= limit);
    assert_eq!(swapped.charged_bytes(), swapped.recharge());
    assert_eq!(swapped.route_count(0), r.route_count(0));
    // Without the delete it is still refused.
    assert!(r.apply(&[add(0, refused)]).is_err());
}
