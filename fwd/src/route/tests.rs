//! Tests of the whole module against the reference LPM.

use std::net::{IpAddr, Ipv4Addr};

use proptest::prelude::*;

use super::reference::RefLpm;
use super::*;

fn nh(port: u16) -> NextHop {
    NextHop {
        gateway: Some(IpAddr::V4(Ipv4Addr::new(192, 0, 2, port as u8))),
        port,
        mac: None,
    }
}

/// Next hops 0..8 and group 0 = {1:1, 2:3}.
fn base() -> Routing {
    let mut b: Vec<RouteChange> = (0..8)
        .map(|i| RouteChange::NhAdd {
            id: i,
            nh: nh(i as u16),
        })
        .collect();
    b.push(RouteChange::GroupAdd {
        id: 0,
        members: vec![(1, 1), (2, 3)],
    });
    Routing::new().apply(&b).unwrap()
}

fn p4(s: &str) -> Prefix {
    Prefix::V4(s.parse().unwrap())
}

fn add(prefix: Prefix, target: Target) -> RouteChange {
    RouteChange::Add {
        vrf: 0,
        prefix,
        target,
    }
}

fn del(prefix: Prefix) -> RouteChange {
    RouteChange::Del { vrf: 0, prefix }
}

/// First-level pages left all zero go back to the shared zero page at the
/// end of the batch that emptied them, however the batch got there.
#[test]
fn emptied_first_level_pages_are_shared_again_after_each_batch() {
    let empty = base().apply(&[RouteChange::VrfAdd { vrf: 0 }]).unwrap();
    let routes = ["10.0.0.0/24", "10.0.1.0/24", "10.0.3.0/25", "10.0.3.128/26"];
    let adds: Vec<RouteChange> = routes
        .iter()
        .map(|r| add(p4(r), Target::NextHop(1)))
        .collect();
    let full = empty.apply(&adds).unwrap();
    assert!(full.memory_bytes() > empty.memory_bytes());
    // One route per batch: the last one empties the page.
    let mut r = full.clone();
    for (k, route) in routes.iter().enumerate() {
        r = r.apply(&[del(p4(route))]).unwrap();
        if k + 1 < routes.len() {
            assert!(r.memory_bytes() > empty.memory_bytes(), "after {route}");
        }
    }
    assert_eq!(r.memory_bytes(), empty.memory_bytes());
    // All in one batch.
    let dels: Vec<RouteChange> = routes.iter().map(|r| del(p4(r))).collect();
    assert_eq!(
        full.apply(&dels).unwrap().memory_bytes(),
        empty.memory_bytes()
    );
    // Emptied, then written again in the same batch: the page stays.
    let mut again = dels.clone();
    again.push(add(p4("10.0.2.0/24"), Target::NextHop(2)));
    let r = full.apply(&again).unwrap();
    assert!(r.memory_bytes() > empty.memory_bytes());
    assert_eq!(r.lookup4(0, 0x0a00_0201, || 0), Resolved::Forward(2));
    assert_eq!(r.lookup4(0, 0x0a00_0001, || 0), Resolved::NoRoute);
}

// ---------------------------------------------------------------------------
// The DPDK 22.11 rte_fib dir24_8 bug sequence and other top-of-space cases.

#[test]
fn rte_fib_bug_sequence() {
    let a = p4("255.255.255.254/32");
    let b = p4("255.255.255.255/32");
    let c = p4("255.255.255.254/31");
    let r0 = base();
    let r1 = r0
        .apply(&[add(a, Target::NextHop(1)), add(b, Target::NextHop(2))])
        .unwrap();
    let r2 = r1.apply(&[add(c, Target::NextHop(3))]).unwrap();
    let check = |r: &Routing, expect: &[(u32, Option<Target>)]| {
        for &(addr, t) in expect {
            assert_eq!(r.target4(0, addr), t, "{}", Ipv4Addr::from(addr));
        }
        // the rest of the address space is untouched
        for addr in [0u32, 1, 0x0a00_0000, 0xffff_fffd, 0xffff_ff00, 0x7fff_ffff] {
            assert_eq!(r.target4(0, addr), None, "{}", Ipv4Addr::from(addr));
        }
    };
    check(
        &r2,
        &[
            (0xffff_fffe, Some(Target::NextHop(1))),
            (0xffff_ffff, Some(Target::NextHop(2))),
        ],
    );
    let r3 = r2.apply(&[del(a)]).unwrap();
    check(
        &r3,
        &[
            (0xffff_fffe, Some(Target::NextHop(3))),
            (0xffff_ffff, Some(Target::NextHop(2))),
        ],
    );
    let r4 = r3.apply(&[del(b)]).unwrap();
    check(
        &r4,
        &[
            (0xffff_fffe, Some(Target::NextHop(3))),
            (0xffff_ffff, Some(Target::NextHop(3))),
        ],
    );
    let r5 = r4.apply(&[del(c)]).unwrap();
    check(&r5, &[(0xffff_fffe, None), (0xffff_ffff, None)]);
    // other orders: the /31 first, then the /32s, then delete the /31 first
    let s = r0
        .apply(&[
            add(c, Target::NextHop(3)),
            add(a, Target::NextHop(1)),
            add(b, Target::NextHop(2)),
            del(c),
        ])
        .unwrap();
    check(
        &s,
        &[
            (0xffff_fffe, Some(Target::NextHop(1))),
            (0xffff_ffff, Some(Target::NextHop(2))),
        ],
    );
    // old versions still answer as before
    check(
        &r1,
        &[
            (0xffff_fffe, Some(Target::NextHop(1))),
            (0xffff_ffff, Some(Target::NextHop(2))),
        ],
    );
    assert_eq!(r5.memory_bytes(), {
        let e = r0.apply(&[RouteChange::VrfAdd { vrf: 0 }]).unwrap();
        e.memory_bytes()
    });
}

#[test]
fn all_lengths_nested_v4_and_v6() {
    // /0 .. /32 all covering 255.255.255.255 (and /0../128 for IPv6), added
    // shortest-first and longest-first, deleted in both orders.
    let r0 = base();
    let v4: Vec<Prefix> = (0..=32u8)
        .map(|l| Prefix::V4(Prefix4::new_truncate(u32::MAX, l).unwrap()))
        .collect();
    let v6: Vec<Prefix> = (0..=128u8)
        .map(|l| Prefix::V6(Prefix6::new_truncate(u128::MAX, l).unwrap()))
        .collect();
    let tgt = |l: u8| Target::NextHop(u32::from(l) % 8);
    for rev in [false, true] {
        let mut order: Vec<Prefix> = v4.iter().chain(v6.iter()).copied().collect();
        if rev {
            order.reverse();
        }
        let r = r0
            .apply(
                &order
                    .iter()
                    .map(|&p| add(p, tgt(p.len())))
                    .collect::<Vec<_>>(),
            )
            .unwrap();
        let mut m4 = RefLpm::v4();
        let mut m6 = RefLpm::v6();
        for p in &order {
            match p {
                Prefix::V4(p) => m4.insert4(*p, tgt(p.len())),
                Prefix::V6(p) => m6.insert6(*p, tgt(p.len())),
            };
        }
        let mut cur = r;
        for (i, p) in order.iter().enumerate() {
            for l in 0..=32u32 {
                let a = if l == 32 { 0 } else { u32::MAX >> l };
                let a2 = !a;
                for x in [a, a2, a.wrapping_sub(1), a2.wrapping_add(1)] {
                    assert_eq!(cur.target4(0, x), m4.lookup4(x), "step {i} {x:#x}");
                }
            }
            for l in 0..=128u32 {
                let a = if l == 128 { 0 } else { u128::MAX >> l };
                for x in [a, !a, a.wrapping_sub(1), (!a).wrapping_add(1)] {
                    assert_eq!(cur.target6(0, x), m6.lookup6(x), "step {i} {x:#x}");
                }
            }
            cur = cur.apply(&[del(*p)]).unwrap();
            match p {
                Prefix::V4(p) => m4.remove(p.addr() as u128, p.len()),
                Prefix::V6(p) => m6.remove(p.addr(), p.len()),
            };
        }
        let st = cur.stats();
        assert_eq!(st.vrfs[0].tbl8_capacity4, 0);
        assert_eq!(st.vrfs[0].tbl8_capacity6, 0);
        assert_eq!(st.vrfs[0].tbl24_pages4, 0);
        assert_eq!(st.vrfs[0].tbl24_pages6, 0);
    }
}

// ---------------------------------------------------------------------------
// Property tests against the reference LPM.

#[derive(Clone, Debug)]
enum Op {
    Add(u128, u8, Target),
    Del(u128, u8),
    Replace(u128, u8, Target),
    Upsert(u128, u8, Target),
}

fn target_strategy() -> impl Strategy<Value = Target> {
    prop_oneof![
        6 => (0u32..8).prop_map(Target::NextHop),
        1 => Just(Target::Group(0)),
        1 => Just(Target::Blackhole),
        1 => Just(Target::Reject),
        1 => Just(Target::Local),
    ]
}

/// Prefixes clustered around a few anchors so they overlap at every length.
fn prefix_strategy(width: u8, anchors: Vec<u128>) -> impl Strategy<Value = (u128, u8)> {
    let all = if width == 32 {
        u32::MAX as u128
    } else {
        u128::MAX
    };
    (
        0..anchors.len(),
        any::<u128>(),
        0..(width as u32 + 1),
        0..=width,
    )
        .prop_map(move |(k, noise, sh, len)| {
            let sh = sh.min(127);
            let a = (anchors[k] ^ ((noise & all) >> sh)) & all;
            let mask = if len == 0 {
                0
            } else {
                (all >> (width - len)) << (width - len)
            };
            (a & mask, len)
        })
}

fn op_strategy(width: u8, anchors: Vec<u128>) -> impl Strategy<Value = Op> {
    let p = prefix_strategy(width, anchors);
    (p, target_strategy(), 0..10u8).prop_map(|((a, l), t, k)| match k {
        0..=4 => Op::Add(a, l, t),
        5..=6 => Op::Del(a, l),
        7 => Op::Replace(a, l, t),
        _ => Op::Upsert(a, l, t),
    })
}

fn mkprefix(width: u8, a: u128, l: u8) -> Prefix {
    if width == 32 {
        Prefix::V4(Prefix4::new(a as u32, l).unwrap())
    } else {
        Prefix::V6(Prefix6::new(a, l).unwrap())
    }
}

fn to_change(width: u8, op: &Op) -> RouteChange {
    let vrf = 0;
    match *op {
        Op::Add(a, l, target) => RouteChange::Add {
            vrf,
            prefix: mkprefix(width, a, l),
            target,
        },
        Op::Del(a, l) => RouteChange::Del {
            vrf,
            prefix: mkprefix(width, a, l),
        },
        Op::Replace(a, l, target) => RouteChange::Replace {
            vrf,
            prefix: mkprefix(width, a, l),
            target,
        },
        Op::Upsert(a, l, target) => RouteChange::Upsert {
            vrf,
            prefix: mkprefix(width, a, l),
            target,
        },
    }
}

/// Applies `ops` to a copy of `m`; returns the index of the first op that the
/// real table must refuse (and then `m` is to be left unchanged).
fn model_apply(m: &RefLpm, ops: &[Op]) -> Result<RefLpm, usize> {
    let mut m = m.clone();
    for (i, op) in ops.iter().enumerate() {
        match *op {
            Op::Add(a, l, t) => {
                if m.get(a, l).is_some() {
                    return Err(i);
                }
                m.insert(a, l, t);
            }
            Op::Del(a, l) => {
                if m.remove(a, l).is_none() {
                    return Err(i);
                }
            }
            Op::Replace(a, l, t) => {
                if m.get(a, l).is_none() {
                    return Err(i);
                }
                m.insert(a, l, t);
            }
            Op::Upsert(a, l, t) => {
                m.insert(a, l, t);
            }
        }
    }
    Ok(m)
}

/// Rewrites `ops` so that each is valid when applied in order to `m`: adds of
/// existing prefixes become replaces, deletes and replaces of missing prefixes
/// target an existing prefix (chosen by the op's address) or become adds.
fn repair(m: &RefLpm, ops: &[Op]) -> Vec<Op> {
    let mut m = m.clone();
    let mut out = Vec::new();
    for op in ops {
        let op = match *op {
            Op::Add(a, l, t) if m.get(a, l).is_some() => Op::Replace(a, l, t),
            Op::Replace(a, l, t) if m.get(a, l).is_none() => Op::Add(a, l, t),
            Op::Del(a, l) if m.get(a, l).is_none() => {
                let all = m.sorted();
                if all.is_empty() {
                    continue;
                }
                let (a, l, _) = all[(a % all.len() as u128) as usize];
                Op::Del(a, l)
            }
            ref o => o.clone(),
        };
        match op {
            Op::Add(a, l, t) | Op::Replace(a, l, t) | Op::Upsert(a, l, t) => {
                m.insert(a, l, t);
            }
            Op::Del(a, l) => {
                m.remove(a, l);
            }
        }
        out.push(op);
    }
    out
}

fn probes(width: u8, m: &RefLpm, extra: &[u128], seed: u64) -> Vec<u128> {
    let all = if width == 32 {
        u32::MAX as u128
    } else {
        u128::MAX
    };
    let mut v = vec![0, all, 1, all - 1];
    for (a, l, _) in m.sorted() {
        let last = a | (all >> l.min(127) as u32 >> u32::from(l == 128));
        let last = if l == 0 { all } else { last };
        v.extend([a, last, a.wrapping_sub(1) & all, last.wrapping_add(1) & all]);
    }
    v.extend_from_slice(extra);
    let mut x = seed | 1;
    for _ in 0..64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.push(((x as u128) << 64 | x.rotate_left(17) as u128) & all);
    }
    v
}

/// Burst lookups of `d` (IPv4 when `width` is 32) return the next hop
/// when every lane's route (in the model `m`) is the same plain next hop,
/// and `out` is then that next hop for every lane: over each probe alone,
/// repeated, over runs of consecutive probes, of up to more than a chunk
/// (the most a burst lookup takes at once), and over two chunks of one
/// probe each.
fn check_one_next_hop(width: u8, r: &Routing, m: &RefLpm, d: &[u128]) {
    let plain = |&a: &u128| {
        let t = if width == 32 {
            m.lookup4(a as u32)
        } else {
            m.lookup6(a)
        };
        match t {
            Some(Target::NextHop(id)) => Some(id),
            _ => None,
        }
    };
    let burst = |d: &[u128]| {
        let mut out = vec![Resolved::NoRoute; d.len()];
        let one = if width == 32 {
            let d: Vec<u32> = d.iter().map(|&a| a as u32).collect();
            r.lookup4_burst(0, &d, |_| 0, &mut out)
        } else {
            r.lookup6_burst(0, d, |_| 0, &mut out)
        };
        let first = plain(&d[0]);
        let want = first.filter(|_| d.iter().all(|a| plain(a) == first));
        assert_eq!(one, want, "{d:x?}");
        if let Some(nh) = one {
            assert!(out.iter().all(|&o| o == Resolved::Forward(nh)), "{d:x?}");
        }
        one.is_some()
    };
    let mut named = 0;
    for &a in d {
        named += usize::from(burst(&[a; 3]));
        named += usize::from(burst(&[a; 40]));
    }
    for n in [2, 5, 32, 64, 100] {
        for w in d.chunks(n) {
            burst(w);
        }
    }
    // Two chunks, each all one next hop: the same one, or two.
    const CHUNK: usize = super::fib::BURST_MAX;
    for w in d.windows(2) {
        burst(&[[w[0]; CHUNK], [w[1]; CHUNK]].concat());
    }
    // Not vacuous: the probes hit plain next hops.
    assert!(named > 0 || !d.iter().any(|a| plain(a).is_some()));
}

fn check_version(width: u8, r: &Routing, m: &RefLpm, extra: &[u128], seed: u64) {
    let pr = probes(width, m, extra, seed);
    check_one_next_hop(width, r, m, &pr);
    let hashes: Vec<u32> = (0..pr.len() as u32).collect();
    let mut out = vec![Resolved::NoRoute; pr.len()];
    if width == 32 {
        let d: Vec<u32> = pr.iter().map(|&a| a as u32).collect();
        let mut asked = vec![false; d.len()];
        r.lookup4_burst(
            0,
            &d,
            |i| {
                asked[i] = true;
                hashes[i]
            },
            &mut out,
        );
        for (i, &a) in d.iter().enumerate() {
            let want = m.lookup4(a);
            // The hash is asked for exactly when the route is a group.
            assert_eq!(asked[i], matches!(want, Some(Target::Group(_))), "{a:#x}");
            assert_eq!(r.target4(0, a), want, "addr {}", Ipv4Addr::from(a));
            let mut single_asked = false;
            let single = r.lookup4(0, a, || {
                single_asked = true;
                hashes[i]
            });
            assert_eq!(single, out[i]);
            assert_eq!(single_asked, asked[i], "single lookup {a:#x}");
            assert_eq!(out[i], resolve_model(r, want, hashes[i]));
            assert_eq!(r.route4(0, a).map(|x| x.1), want);
        }
        let dump: Vec<(u128, u8, Target)> = r
            .routes4(0)
            .map(|(p, t)| (p.addr() as u128, p.len(), t))
            .collect();
        assert_eq!(dump, m.sorted());
    } else {
        let mut asked = vec![false; pr.len()];
        r.lookup6_burst(
            0,
            &pr,
            |i| {
                asked[i] = true;
                hashes[i]
            },
            &mut out,
        );
        for (i, &a) in pr.iter().enumerate() {
            let want = m.lookup6(a);
            assert_eq!(asked[i], matches!(want, Some(Target::Group(_))), "{a:#x}");
            assert_eq!(r.target6(0, a), want, "addr {a:#x}");
            let mut single_asked = false;
            let single = r.lookup6(0, a, || {
                single_asked = true;
                hashes[i]
            });
            assert_eq!(single, out[i]);
            assert_eq!(single_asked, asked[i], "single lookup {a:#x}");
            assert_eq!(out[i], resolve_model(r, want, hashes[i]));
            assert_eq!(r.route6(0, a).map(|x| x.1), want);
        }
        let dump: Vec<(u128, u8, Target)> =
            r.routes6(0).map(|(p, t)| (p.addr(), p.len(), t)).collect();
        assert_eq!(dump, m.sorted());
    }
}

fn resolve_model(r: &Routing, t: Option<Target>, hash: u32) -> Resolved {
    match t {
        None => Resolved::NoRoute,
        Some(Target::NextHop(n)) => Resolved::Forward(n),
        Some(Target::Group(g)) => Resolved::Forward(r.group(g).unwrap().select(hash)),
        Some(Target::Blackhole) => Resolved::Blackhole,
        Some(Target::Reject) => Resolved::Reject,
        Some(Target::Local) => Resolved::Local,
    }
}

fn run_model(width: u8, batches: Vec<Vec<Op>>) {
    let live = larc::live_nodes();
    let mut r = base();
    let mut m = if width == 32 {
        RefLpm::v4()
    } else {
        RefLpm::v6()
    };
    let extra: Vec<u128> = batches
        .iter()
        .flatten()
        .map(|op| match *op {
            Op::Add(a, ..) | Op::Del(a, _) | Op::Replace(a, ..) | Op::Upsert(a, ..) => a,
        })
        .collect();
    let mut history = vec![(r.clone(), m.clone())];
    for (bi, ops) in batches.iter().enumerate() {
        // Two batches in three are made valid against the model (so the table grows
        // and shrinks); the third keeps its raw ops and mostly exercises refusal.
        let repaired;
        let ops = if bi % 3 == 2 {
            ops
        } else {
            repaired = repair(&m, ops);
            &repaired
        };
        let changes: Vec<RouteChange> = ops.iter().map(|o| to_change(width, o)).collect();
        match (model_apply(&m, ops), r.apply(&changes)) {
            (Ok(m2), Ok(r2)) => {
                m = m2;
                r = r2;
            }
            (Err(i), Err(e)) => assert_eq!(e.index, i, "batch {bi}: {e}"),
            (Ok(_), Err(e)) => panic!("batch {bi} refused: {e}"),
            (Err(i), Ok(_)) => panic!("batch {bi} accepted, op {i} should fail"),
        }
        check_version(width, &r, &m, &extra, bi as u64);
        assert_eq!(
            r.charged_bytes(),
            r.recharge(),
            "batch {bi}: the running charge"
        );
        history.push((r.clone(), m.clone()));
    }
    // Persistence: every old version still answers as it did.
    for (i, (r, m)) in history.iter().enumerate() {
        check_version(width, r, m, &extra, 1000 + i as u64);
    }
    // Refcounts match the routes that exist.
    for id in 0..8u32 {
        let routes = m
            .sorted()
            .iter()
            .filter(|x| x.2 == Target::NextHop(id))
            .count() as u32;
        let member = u32::from(id == 1 || id == 2);
        assert_eq!(r.nexthop_refs(id), routes + member, "nh {id}");
    }
    // Deleting everything returns to the memory of an empty table.
    let dels: Vec<RouteChange> = m
        .sorted()
        .iter()
        .map(|&(a, l, _)| del(mkprefix(width, a, l)))
        .collect();
    let empty = r.apply(&dels).unwrap();
    let baseline = base().apply(&[RouteChange::VrfAdd { vrf: 0 }]).unwrap();
    if r.vrfs().count() > 0 {
        assert_eq!(empty.memory_bytes(), baseline.memory_bytes());
        assert_eq!(empty.charged_bytes(), baseline.charged_bytes());
    }
    // Every node of every version (refused batches' copies included) freed
    // once: none leaked, none freed twice.
    drop((r, history, empty, baseline));
    assert_eq!(larc::live_nodes(), live);
}

fn anchors(width: u8, seeds: Vec<u128>) -> Vec<u128> {
    let all = if width == 32 {
        u32::MAX as u128
    } else {
        u128::MAX
    };
    let mut v = vec![
        0,
        all,
        if width == 32 {
            0x0a00_0000
        } else {
            0x2001_0db8 << 96
        },
    ];
    v.extend(seeds.into_iter().map(|s| s & all));
    v
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn v4_matches_reference(
        batches in prop::collection::vec(any::<u128>(), 3).prop_flat_map(|seeds| {
            let a = anchors(32, seeds);
            prop::collection::vec(prop::collection::vec(op_strategy(32, a), 1..25), 1..12)
        })
    ) {
        run_model(32, batches);
    }

    #[test]
    fn v6_matches_reference(
        batches in prop::collection::vec(any::<u128>(), 3).prop_flat_map(|seeds| {
            let a = anchors(128, seeds);
            prop::collection::vec(prop::collection::vec(op_strategy(128, a), 1..25), 1..12)
        })
    ) {
        run_model(128, batches);
    }
}

// ---------------------------------------------------------------------------
// ECMP, next hops, refcounts, errors.

#[test]
fn ecmp_is_stable_per_flow_and_follows_weights() {
    let r = base()
        .apply(&[
            RouteChange::GroupAdd {
                id: 5,
                members: vec![(3, 1), (4, 2), (5, 5)],
            },
            add(p4("10.0.0.0/8"), Target::Group(5)),
        ])
        .unwrap();
    let n = 80_000u32;
    let mut count = [0u32; 8];
    for h in 0..n {
        // a spread of flow hashes, including ones that differ only in high bits
        let hash = h.wrapping_mul(2_654_435_761) ^ (h << 20);
        let Resolved::Forward(x) = r.lookup4(0, 0x0a01_0203, || hash) else {
            panic!("no forward");
        };
        assert_eq!(r.lookup4(0, 0x0a01_0203, || hash), Resolved::Forward(x));
        count[x as usize] += 1;
    }
    for (nh, w) in [(3usize, 1.0), (4, 2.0), (5, 5.0)] {
        let share = count[nh] as f64 / n as f64;
        assert!((share - w / 8.0).abs() < 0.02, "nh {nh}: {share}");
    }
    // Hashes that share their low bits (one RSS queue) still spread.
    let mut seen = HashSet::new();
    for h in 0..64u32 {
        if let Resolved::Forward(x) = r.lookup4(0, 0x0a00_0001, || h << 8) {
            seen.insert(x);
        }
    }
    assert_eq!(seen.len(), 3);
    // A flow keeps its path across versions that do not touch the group.
    let r2 = r
        .apply(&[add(p4("11.0.0.0/8"), Target::NextHop(1))])
        .unwrap();
    for h in 0..1000u32 {
        assert_eq!(
            r.lookup4(0, 0x0a00_0001, || h),
            r2.lookup4(0, 0x0a00_0001, || h)
        );
    }
}

use std::collections::HashSet;

#[test]
fn nexthop_update_reaches_every_route() {
    let r = base()
        .apply(&[
            add(p4("10.0.0.0/8"), Target::NextHop(1)),
            add(p4("10.1.0.0/16"), Target::NextHop(1)),
            add(p4("10.1.2.3/32"), Target::Group(0)),
            RouteChange::Add {
                vrf: 0,
                prefix: "2001:db8::/32".parse().unwrap(),
                target: Target::NextHop(1),
            },
        ])
        .unwrap();
    assert_eq!(r.nexthop_refs(1), 3 + 1);
    let mac = [2, 0, 0, 0, 0, 1];
    let r2 = r
        .apply(&[RouteChange::NhUpdate {
            id: 1,
            nh: NextHop {
                mac: Some(mac),
                ..nh(1)
            },
        }])
        .unwrap();
    for a in [0x0a00_0001u32, 0x0a01_0001] {
        let Resolved::Forward(id) = r2.lookup4(0, a, || 0) else {
            panic!()
        };
        assert_eq!(r2.nexthop(id).unwrap().mac, Some(mac));
        assert_eq!(r.nexthop(id).unwrap().mac, None, "old version unchanged");
    }
    let Resolved::Forward(id) = r2.lookup6(0, 0x2001_0db8 << 96, || 0) else {
        panic!()
    };
    assert_eq!(r2.nexthop(id).unwrap().mac, Some(mac));
    // the group member resolves to the updated next hop as well
    let with_1 = (0..64u32)
        .filter_map(|h| match r2.lookup4(0, 0x0a01_0203, || h) {
            Resolved::Forward(1) => Some(()),
            _ => None,
        })
        .count();
    assert!(with_1 > 0);
    assert_eq!(r2.nexthop(1).unwrap().mac, Some(mac));
    assert_eq!(r2.nexthop_refs(1), 4);
}

#[test]
fn refcounts_and_typed_errors() {
    let r = base()
        .apply(&[
            add(p4("10.0.0.0/8"), Target::NextHop(3)),
            add(p4("10.1.0.0/16"), Target::Group(0)),
        ])
        .unwrap();
    let err = |batch: &[RouteChange]| r.apply(batch).unwrap_err();
    assert_eq!(
        err(&[RouteChange::NhDel { id: 3 }]).error,
        RouteError::NextHopInUse { id: 3, refs: 1 }
    );
    assert_eq!(
        err(&[RouteChange::NhDel { id: 1 }]).error,
        RouteError::NextHopInUse { id: 1, refs: 1 }
    );
    assert_eq!(
        err(&[RouteChange::GroupDel { id: 0 }]).error,
        RouteError::GroupInUse { id: 0, refs: 1 }
    );
    assert_eq!(
        err(&[add(p4("10.0.0.0/8"), Target::Blackhole)]).error,
        RouteError::RouteExists {
            vrf: 0,
            prefix: p4("10.0.0.0/8")
        }
    );
    assert_eq!(
        err(&[del(p4("10.0.0.0/9"))]).error,
        RouteError::RouteNotFound {
            vrf: 0,
            prefix: p4("10.0.0.0/9")
        }
    );
    assert_eq!(
        err(&[RouteChange::Replace {
            vrf: 1,
            prefix: p4("10.0.0.0/8"),
            target: Target::Local
        }])
        .error,
        RouteError::RouteNotFound {
            vrf: 1,
            prefix: p4("10.0.0.0/8")
        }
    );
    assert_eq!(
        err(&[add(p4("12.0.0.0/8"), Target::NextHop(99))]).error,
        RouteError::UnknownNextHop(99)
    );
    assert_eq!(
        err(&[add(p4("12.0.0.0/8"), Target::Group(9))]).error,
        RouteError::UnknownGroup(9)
    );
    assert_eq!(
        err(&[RouteChange::NhAdd { id: 3, nh: nh(3) }]).error,
        RouteError::NextHopExists(3)
    );
    assert_eq!(
        err(&[RouteChange::NhAdd {
            id: MAX_ID + 1,
            nh: nh(3)
        }])
        .error,
        RouteError::IdOutOfRange {
            id: MAX_ID + 1,
            max: MAX_ID
        }
    );
    assert_eq!(
        err(&[RouteChange::GroupAdd {
            id: 1,
            members: vec![(1, 1), (42, 1)]
        }])
        .error,
        RouteError::UnknownNextHop(42)
    );
    assert_eq!(
        err(&[RouteChange::VrfDel { vrf: 0 }]).error,
        RouteError::VrfNotEmpty { vrf: 0, routes: 2 }
    );
    // The failing change's index is reported and nothing of the batch applies.
    let e = err(&[
        add(p4("20.0.0.0/8"), Target::NextHop(1)),
        RouteChange::NhUpdate {
            id: 1,
            nh: NextHop {
                mac: Some([1; 6]),
                ..nh(1)
            },
        },
        del(p4("10.0.0.0/8")),
        del(p4("10.0.0.0/8")),
    ]);
    assert_eq!(e.index, 3);
    assert_eq!(r.target4(0, 0x1400_0000), None);
    assert_eq!(r.target4(0, 0x0a00_0000), Some(Target::NextHop(3)));
    assert_eq!(r.nexthop(1).unwrap().mac, None);
    assert_eq!(r.nexthop_refs(3), 1);
    // Releasing the users releases the objects.
    let r2 = r
        .apply(&[
            del(p4("10.0.0.0/8")),
            RouteChange::NhDel { id: 3 },
            del(p4("10.1.0.0/16")),
            RouteChange::GroupDel { id: 0 },
            RouteChange::NhDel { id: 1 },
            RouteChange::VrfDel { vrf: 0 },
        ])
        .unwrap();
    assert!(r2.nexthop(3).is_none());
    assert!(r2.group(0).is_none());
    assert_eq!(r2.vrfs().count(), 0);
    assert_eq!(r2.nexthop_refs(2), 0);
    // Updating a group moves the member references.
    let r3 = base()
        .apply(&[RouteChange::GroupUpdate {
            id: 0,
            members: vec![(6, 1)],
        }])
        .unwrap();
    assert_eq!(r3.nexthop_refs(1), 0);
    assert_eq!(r3.nexthop_refs(6), 1);
    // Deleting every object returns to the memory of Routing::new().
    let mut b: Vec<RouteChange> = vec![RouteChange::GroupDel { id: 0 }];
    b.extend((0..8).map(|id| RouteChange::NhDel { id }));
    assert_eq!(
        r3.apply(&b).unwrap().memory_bytes(),
        Routing::new().memory_bytes()
    );
}

#[test]
fn txn_keeps_going_after_an_error() {
    let mut t = base().into_txn();
    t.add(0, p4("10.0.0.0/8"), Target::NextHop(1)).unwrap();
    assert!(t.add(0, p4("10.0.0.0/8"), Target::NextHop(2)).is_err());
    assert_eq!(
        t.upsert(0, p4("10.0.0.0/8"), Target::NextHop(2)).unwrap(),
        Some(Target::NextHop(1))
    );
    let r = t.commit();
    assert_eq!(r.target4(0, 0x0a00_0001), Some(Target::NextHop(2)));
    assert_eq!(r.nexthop_refs(1), 1); // group member only
    assert_eq!(r.nexthop_refs(2), 2); // route + group member
    assert_eq!(r.version(), 2);
}

/// A batch remembers the targets it found present (`Txn::present`): a
/// next hop or group it used and then deleted is unknown again to the next
/// route of the same batch, and targets that share a slot of that memory
/// (ids 16 apart, a next hop and a group of one id) are told apart.
#[test]
fn a_target_deleted_in_the_batch_is_unknown_to_its_next_routes() {
    let mut t = base().into_txn();
    t.nh_add(17, nh(17)).unwrap();
    t.add(0, p4("10.0.0.0/8"), Target::NextHop(1)).unwrap();
    t.add(0, p4("10.1.0.0/16"), Target::NextHop(17)).unwrap();
    t.add(0, p4("10.2.0.0/16"), Target::Group(0)).unwrap();
    // Same slots, other targets: never seen present.
    assert_eq!(
        t.add(0, p4("10.3.0.0/16"), Target::NextHop(33)),
        Err(RouteError::UnknownNextHop(33))
    );
    assert_eq!(
        t.add(0, p4("10.3.0.0/16"), Target::Group(1)),
        Err(RouteError::UnknownGroup(1))
    );
    assert_eq!(
        t.add(0, p4("10.3.0.0/16"), Target::Group(16)),
        Err(RouteError::UnknownGroup(16))
    );
    // Each deletion checked right after the target was last found present.
    t.del(0, p4("10.2.0.0/16")).unwrap();
    t.group_del(0).unwrap();
    assert_eq!(
        t.upsert(0, p4("10.2.0.0/16"), Target::Group(0)),
        Err(RouteError::UnknownGroup(0))
    );
    t.del(0, p4("10.1.0.0/16")).unwrap();
    t.upsert(0, p4("10.1.0.0/16"), Target::NextHop(17)).unwrap();
    t.del(0, p4("10.1.0.0/16")).unwrap();
    t.nh_del(17).unwrap();
    assert_eq!(
        t.add(0, p4("10.1.0.0/16"), Target::NextHop(17)),
        Err(RouteError::UnknownNextHop(17))
    );
    // Added again, usable again.
    t.nh_add(17, nh(17)).unwrap();
    t.add(0, p4("10.1.0.0/16"), Target::NextHop(17)).unwrap();
    let r = t.commit();
    assert_eq!(r.target4(0, 0x0a01_0001), Some(Target::NextHop(17)));
    assert_eq!(r.target4(0, 0x0a02_0001), Some(Target::NextHop(1)));
    assert_eq!(r.nexthop_refs(17), 1);
}

#[test]
fn vrfs_are_separate() {
    let r = base()
        .apply(&[
            RouteChange::Add {
                vrf: 7,
                prefix: p4("10.0.0.0/8"),
                target: Target::NextHop(1),
            },
            add(p4("10.0.0.0/8"), Target::NextHop(2)),
        ])
        .unwrap();
    assert_eq!(r.lookup4(7, 0x0a00_0001, || 0), Resolved::Forward(1));
    assert_eq!(r.lookup4(0, 0x0a00_0001, || 0), Resolved::Forward(2));
    assert_eq!(r.lookup4(8, 0x0a00_0001, || 0), Resolved::NoRoute);
    let mut out = [Resolved::Local; 2];
    r.lookup4_burst(8, &[1, 2], |_| unreachable!("no table, no group"), &mut out);
    assert_eq!(out, [Resolved::NoRoute; 2]);
    assert_eq!(r.vrfs().collect::<Vec<_>>(), vec![0, 7]);
}

/// A burst whose every entry is a plain next hop or no route takes the
/// shortcut past the per-entry dispatch; one other entry (a group, a
/// blackhole) sends its 32 through the dispatch. Both answer what `lookup4`
/// does.
#[test]
fn burst_lookups_with_and_without_the_all_next_hop_shortcut() {
    let r = base()
        .apply(&[
            add(p4("10.0.0.0/16"), Target::NextHop(3)),
            add(p4("10.0.1.0/24"), Target::NextHop(5)),
            add(p4("10.0.2.0/24"), Target::Group(0)),
            add(p4("10.0.3.0/24"), Target::Blackhole),
        ])
        .unwrap();
    let plain: Vec<u32> = (0..64).map(|i| 0x0a00_0000 | (i % 2) << 8 | i).collect();
    // Lanes without a route among them, the first and the last included:
    // still the shortcut.
    let mut unrouted = plain.clone();
    for (i, a) in [(0, 0), (17, 0x0b00_0000), (33, 0xe000_0001), (63, u32::MAX)] {
        unrouted[i] = a;
    }
    let mut odd = plain.clone();
    odd[40] = 0x0a00_0207; // the group
    odd[45] = 0x0a00_0307; // the blackhole
    odd[50] = 0x0b00_0000; // no route
    for d in [&plain, &unrouted, &odd] {
        let mut out = vec![Resolved::Local; d.len()];
        let mut asked = Vec::new();
        r.lookup4_burst(
            0,
            d,
            |i| {
                asked.push(i);
                7
            },
            &mut out,
        );
        for (i, &a) in d.iter().enumerate() {
            assert_eq!(out[i], r.lookup4(0, a, || 7), "{}", Ipv4Addr::from(a));
        }
        let groups: Vec<usize> = (0..d.len()).filter(|&i| d[i] >> 8 == 0x0a0002).collect();
        assert_eq!(
            asked, groups,
            "the hash is asked for the group's lanes only"
        );
    }
    assert!(plain
        .iter()
        .all(|&a| matches!(r.lookup4(0, a, || 0), Resolved::Forward(3 | 5))));
    for i in [0, 17, 33, 63] {
        assert_eq!(r.lookup4(0, unrouted[i], || 0), Resolved::NoRoute);
    }
    assert_eq!(r.lookup4(0, 0x0a00_0307, || 0), Resolved::Blackhole);
}
// ---------------------------------------------------------------------------
// The real full tables.

/// The published full tables (`$FWD_DATA/routing`, see [`crate::corpus`]).
fn corpus_tables() -> (Vec<Prefix>, Vec<Prefix>) {
    let dir = crate::corpus::require("routing");
    let read = |name: &str| {
        let p = dir.join(name);
        loader::read_prefixes(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    };
    (
        read("ipv4_fulltable_gaissmai.txt.gz"),
        read("ipv6_fulltable_gaissmai.txt"),
    )
}

/// A generated table shaped like the Internet's (mostly /24 and /16–/23 in
/// IPv4, /32–/48 in IPv6, nested more-specifics), written to files (the IPv4
/// one gzipped) and read back through the loader like the corpus.
fn generated_tables(n4: usize, n6: usize) -> (Vec<Prefix>, Vec<Prefix>) {
    use std::collections::HashSet;
    use std::io::Write;
    let mut x = 0x0DDB_A110_u64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut seen4 = HashSet::new();
    let mut text4 = String::new();
    while seen4.len() < n4 {
        let k = rnd();
        let len = [
            8, 12, 16, 19, 20, 22, 22, 23, 24, 24, 24, 24, 24, 24, 28, 32,
        ][(k % 16) as usize];
        let p = Prefix4::new_truncate((k >> 32) as u32, len).unwrap();
        if seen4.insert(p) {
            text4.push_str(&format!("{}/{}\n", Ipv4Addr::from(p.addr()), p.len()));
        }
    }
    let mut seen6 = HashSet::new();
    let mut text6 = String::from("# generated\n");
    while seen6.len() < n6 {
        let k = rnd();
        let len = [
            20, 29, 32, 32, 36, 40, 44, 48, 48, 48, 48, 56, 64, 64, 96, 128,
        ][(k % 16) as usize];
        // Inside 2000::/4, like the global unicast table.
        let a = (0x2u128 << 124) | (u128::from(rnd()) << 60 >> 4) | u128::from(rnd());
        let p = Prefix6::new_truncate(a, len).unwrap();
        if seen6.insert(p) {
            text6.push_str(&format!(
                "{}/{}\n",
                std::net::Ipv6Addr::from(p.addr()),
                p.len()
            ));
        }
    }
    let dir = std::env::temp_dir().join(format!("fwd-route-gen-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f4 = dir.join("v4.txt.gz");
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(&f4).unwrap(),
        flate2::Compression::fast(),
    );
    gz.write_all(text4.as_bytes()).unwrap();
    gz.finish().unwrap();
    let f6 = dir.join("v6.txt");
    std::fs::write(&f6, text6).unwrap();
    let got = (
        loader::read_prefixes(&f4).unwrap(),
        loader::read_prefixes(&f6).unwrap(),
    );
    std::fs::remove_dir_all(&dir).unwrap();
    got
}

/// Deterministic next hop of a prefix among 16.
fn nh_of(p: &Prefix) -> NhId {
    let (a, l) = match p {
        Prefix::V4(p) => (p.addr() as u128, p.len()),
        Prefix::V6(p) => (p.addr(), p.len()),
    };
    let h = (a ^ (a >> 64) ^ u128::from(l)).wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835);
    ((h >> 100) % 16) as NhId
}

#[test]
#[ignore = "needs the routing corpora (FWD_DATA); deploy/test.sh runs it when present"]
fn corpus_full_tables_match_reference_and_delete_to_baseline() {
    let (v4, v6) = corpus_tables();
    assert_eq!(v4.len(), 901_899);
    assert_eq!(v6.len(), 160_147);
    let bytes = check_full_tables(&v4, &v6);
    assert!(bytes < 200 << 20, "{bytes} bytes");
}

#[test]
fn generated_full_tables_match_reference_and_delete_to_baseline() {
    let (v4, v6) = generated_tables(150_000, 30_000);
    assert_eq!((v4.len(), v6.len()), (150_000, 30_000));
    check_full_tables(&v4, &v6);
}

/// Loads `v4` and `v6` (distinct prefixes) into VRF 0 in one transaction,
/// checks ~100k lookups and the dump against the reference, deletes it all
/// in one batch back to the empty table's memory, and returns the loaded
/// version's size in bytes.
fn check_full_tables(v4: &[Prefix], v6: &[Prefix]) -> usize {
    let mut b: Vec<RouteChange> = (0..16)
        .map(|i| RouteChange::NhAdd {
            id: i,
            nh: nh(i as u16),
        })
        .collect();
    b.push(RouteChange::VrfAdd { vrf: 0 });
    let r0 = Routing::new().apply(&b).unwrap();
    let baseline = r0.stats();

    let mut t = r0.txn();
    let mut m4 = RefLpm::v4();
    let mut m6 = RefLpm::v6();
    for p in v4.iter().chain(v6.iter()) {
        let target = Target::NextHop(nh_of(p));
        t.add(0, *p, target).unwrap();
        match p {
            Prefix::V4(p) => m4.insert4(*p, target),
            Prefix::V6(p) => m6.insert6(*p, target),
        };
    }
    let r = t.commit();
    let st = r.stats();
    assert_eq!(st.vrfs[0].routes4, v4.len());
    assert_eq!(st.vrfs[0].routes6, v6.len());
    // The running charge is the recomputed one, and near the tables' own
    // accounting (it leaves out directories, uniform pages and headers;
    // see `limits`).
    assert_eq!(r.charged_bytes(), r.recharge());
    let ratio = st.charged_bytes as f64 / st.total_bytes as f64;
    eprintln!(
        "charged {} of {} bytes ({ratio:.3})",
        st.charged_bytes, st.total_bytes
    );
    assert!((0.9..1.3).contains(&ratio), "charged / counted {ratio}");

    // ~100k lookups: random addresses and addresses inside the table's prefixes.
    let mut x = 0x1234_5678_9abc_def1u64;
    let mut rnd = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut d4 = Vec::new();
    let mut d6 = Vec::new();
    for i in 0..40_000 {
        let k = rnd();
        d4.push(k as u32);
        let Prefix::V4(p) = v4[(k >> 32) as usize % v4.len()] else {
            unreachable!()
        };
        d4.push(if i % 2 == 0 { p.addr() } else { p.last() });
    }
    for i in 0..10_000 {
        let k = rnd();
        let Prefix::V6(p) = v6[(k >> 32) as usize % v6.len()] else {
            unreachable!()
        };
        d6.push(if i % 2 == 0 { p.addr() } else { p.last() });
        d6.push(p.addr() | ((u128::from(rnd()) << 64 | u128::from(rnd())) & !mask6(p.len())));
    }
    // A full table of plain next hops: the lookups never ask for a hash.
    let mut out = vec![Resolved::NoRoute; d4.len()];
    r.lookup4_burst(
        0,
        &d4,
        |_| panic!("hash asked for without groups"),
        &mut out,
    );
    for (i, &a) in d4.iter().enumerate() {
        let want = m4.lookup4(a);
        assert_eq!(out[i], resolve_model(&r, want, 0), "{}", Ipv4Addr::from(a));
    }
    let mut out = vec![Resolved::NoRoute; d6.len()];
    r.lookup6_burst(
        0,
        &d6,
        |_| panic!("hash asked for without groups"),
        &mut out,
    );
    for (i, &a) in d6.iter().enumerate() {
        let want = m6.lookup6(a);
        assert_eq!(out[i], resolve_model(&r, want, 0), "{a:#x}");
    }
    // The dump is the sorted table.
    let mut sorted4: Vec<Prefix4> = v4
        .iter()
        .map(|p| match p {
            Prefix::V4(p) => *p,
            Prefix::V6(_) => unreachable!(),
        })
        .collect();
    sorted4.sort();
    assert!(r.routes4(0).map(|x| x.0).eq(sorted4.iter().copied()));

    // Delete everything in one batch: back to the empty table's memory.
    let dels: Vec<RouteChange> = v4.iter().chain(v6.iter()).map(|&p| del(p)).collect();
    let e = r.apply(&dels).unwrap();
    let est = e.stats();
    assert_eq!(est.vrfs, baseline.vrfs);
    assert_eq!(est.total_bytes, baseline.total_bytes);
    assert_eq!(est.charged_bytes, baseline.charged_bytes);
    // and the loaded version is untouched by that
    assert_eq!(r.stats().vrfs, st.vrfs);
    st.total_bytes
}

#[test]
fn protocol_names_round_trip() {
    for (p, n) in [
        (186, "bgp"),
        (188, "ospf"),
        (187, "isis"),
        (196, "zstatic"),
        (4, "static"),
        (2, "kernel"),
        (194, "sharp"),
    ] {
        assert_eq!(super::proto_name(p), n);
        assert_eq!(super::proto_from_name(n), Some(p));
    }
    for p in 0..=255u8 {
        assert_eq!(super::proto_from_name(&super::proto_name(p)), Some(p));
    }
    assert_eq!(super::proto_from_name("BGP"), Some(186));
    assert_eq!(super::proto_name(250), "250");
    assert_eq!(super::proto_from_name("nonsense"), None);
    assert_eq!(super::proto_from_name("256"), None);
}

#[test]
fn routes_keep_their_origin_and_the_fib_ignores_it() {
    let mut t = base().into_txn();
    let pfx = p4("10.9.0.0/16");
    t.set(0, pfx, Target::Blackhole, Origin::fpm(186)).unwrap();
    let r = t.commit();
    assert_eq!(
        r.entry(0, pfx),
        Some(Entry {
            target: Target::Blackhole,
            origin: Origin::fpm(186)
        })
    );
    // Only the origin changes: the same FIB answer.
    let mut t = r.txn();
    let old = t.set(0, pfx, Target::Blackhole, Origin::STATIC).unwrap();
    assert_eq!(old.map(|e| e.origin), Some(Origin::fpm(186)));
    let r2 = t.commit();
    assert_eq!(r2.entry(0, pfx).unwrap().origin, Origin::STATIC);
    assert_eq!(r2.lookup4(0, 0x0a09_0001, || 0), Resolved::Blackhole);
    // Deleted prefixes are recorded on request.
    let mut t = r2.txn();
    t.record_removals();
    t.del(0, pfx).unwrap();
    assert_eq!(t.take_removed(), vec![(0, pfx)]);
}

/// A duplicate add is refused after the insert that found the duplicate:
/// the entry it displaced (another target, another origin) is put back, so
/// the RIB, the FIB, the reference counts and the FPM count are as before,
/// and a delete that finds nothing changes nothing either.
#[test]
fn a_refused_add_or_delete_leaves_everything_as_it_was() {
    let mut t = base().txn();
    t.set(0, p4("10.0.0.0/8"), Target::NextHop(1), Origin::fpm(11))
        .unwrap();
    t.add(0, p4("10.1.0.0/16"), Target::NextHop(2)).unwrap();
    let before = t.commit();
    let mut t = before.txn();
    assert_eq!(
        t.add(0, p4("10.0.0.0/8"), Target::NextHop(3)),
        Err(RouteError::RouteExists {
            vrf: 0,
            prefix: p4("10.0.0.0/8")
        })
    );
    assert_eq!(
        t.del(0, p4("10.2.0.0/16")),
        Err(RouteError::RouteNotFound {
            vrf: 0,
            prefix: p4("10.2.0.0/16")
        })
    );
    assert_eq!(
        t.del(7, p4("10.0.0.0/8")),
        Err(RouteError::RouteNotFound {
            vrf: 7,
            prefix: p4("10.0.0.0/8")
        })
    );
    let after = t.commit();
    assert_eq!(after.vrfs().collect::<Vec<_>>(), vec![0], "no VRF created");
    assert_eq!(
        after.entry(0, p4("10.0.0.0/8")),
        before.entry(0, p4("10.0.0.0/8"))
    );
    assert_eq!(after.fpm_route_count(), 1);
    for id in 1..4 {
        assert_eq!(after.nexthop_refs(id), before.nexthop_refs(id), "nh {id}");
    }
    for a in [0x0a00_0001u32, 0x0a01_0001, 0x0a02_0001, 0x0b00_0001] {
        assert_eq!(after.lookup4(0, a, || 0), before.lookup4(0, a, || 0));
    }
    assert_eq!(after.lookup4(0, 0x0a02_0001, || 0), Resolved::Forward(1));
}

/// Versions dropped on other threads (as dumps drop their snapshots) while
/// the writer copies nodes of the same tables: the reference counts change
/// only under each table's lock (`larc`), so every snapshot keeps answering
/// what it answered when it was taken until its last holder lets it go, in
/// whatever order the holders do.
#[test]
fn versions_dropped_on_other_threads_while_the_writer_copies() {
    use std::sync::mpsc;
    let prefixes: Vec<(Prefix, u32)> = (0..24u32)
        .map(|i| {
            (
                p4(&format!("10.{i}.0.0/16")),
                0x0a00_0000 | i << 16 | 0x0101,
            )
        })
        .chain((0..24u32).map(|i| {
            (
                p4(&format!("10.{i}.7.128/25")),
                0x0a00_0000 | i << 16 | 7 << 8 | 0x81,
            )
        }))
        .collect();
    let mut r = base()
        .apply(
            &prefixes
                .iter()
                .map(|&(p, _)| add(p, Target::NextHop(0)))
                .collect::<Vec<_>>(),
        )
        .unwrap();
    let mut want = vec![0u32; prefixes.len()];
    let (txs, holders): (Vec<_>, Vec<_>) = (0..2)
        .map(|_| {
            let (tx, rx) = mpsc::channel::<(Routing, Vec<u32>)>();
            let addrs: Vec<u32> = prefixes.iter().map(|&(_, a)| a).collect();
            let h = std::thread::spawn(move || {
                // Hold up to three snapshots and drop them out of order.
                let mut held: Vec<(Routing, Vec<u32>)> = Vec::new();
                let mut n = 0usize;
                for s in rx {
                    held.push(s);
                    n += 1;
                    if held.len() > 3 {
                        held.remove(n % 4);
                    }
                    for (snap, want) in &held {
                        for (a, w) in addrs.iter().zip(want) {
                            assert_eq!(snap.lookup4(0, *a, || 0), Resolved::Forward(*w));
                        }
                    }
                }
            });
            (tx, h)
        })
        .unzip();
    // Fewer under Miri (see `larc`), which interprets every step.
    let versions = if cfg!(miri) { 60 } else { 600 };
    for v in 0..versions {
        let k = (v * 7) % prefixes.len();
        let nh = (v % 7) as u32 + 1;
        r = r
            .apply(&[RouteChange::Upsert {
                vrf: 0,
                prefix: prefixes[k].0,
                target: Target::NextHop(nh),
            }])
            .unwrap();
        want[k] = nh;
        txs[v % 2].send((r.clone(), want.clone())).unwrap();
    }
    drop(txs);
    for h in holders {
        h.join().unwrap();
    }
    for (&(_, a), w) in prefixes.iter().zip(&want) {
        assert_eq!(r.lookup4(0, a, || 0), Resolved::Forward(*w));
    }
}
