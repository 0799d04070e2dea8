//! The fast path against the general stages alone: on any burst and rule
//! set, the same verdicts, the same frames and the same counts (rule hits
//! included); and it does take the common packets.

use std::net::{Ipv4Addr, Ipv6Addr};

use ctl::wire::{self, Change, RouteTarget};
use proptest::prelude::*;

use super::super::pipeline::tests::{
    from_host, neigh, pipe, prio_rule, route_via, run_settled, tables, with_ports, Frames, GW_MAC,
    MAC_B,
};
use super::super::pipeline::{Clock, Scratch, Tally, Verdict};
use super::{first, Left, Whole};
use crate::acl;
use crate::pkt::build::{self, Ext6, FrameSpec, VlanTag};
use crate::pkt::ipproto;
use crate::tables::Tables;

/// Packets and bytes counted per rule id.
type Hits = Vec<(u32, u64, u64)>;

fn hits(t: &Tables, set: &acl::CounterSet) -> Hits {
    let mut h: Hits = t
        .acl
        .entries()
        .map(|e| {
            let c = set.read(e.slot());
            (e.id(), c.packets, c.bytes)
        })
        .collect();
    h.sort_unstable();
    h
}

/// `Pipeline::run`: the fast path first, then the general stages for what
/// it left (every verdict written, `run_settled`).
fn with_fast(t: &Tables, f: &mut Frames) -> (Scratch, Tally, Hits, Option<u16>) {
    let (mut s, mut tally) = (Scratch::default(), Tally::default());
    let (set, mut w) = acl::CounterSet::new(1, 64);
    let whole = run_settled(&pipe(t), f, &mut s, &mut tally, &mut w[0]);
    (s, tally, hits(t, &set), whole)
}

/// The general stages over the whole burst.
fn general(t: &Tables, f: &mut Frames) -> (Scratch, Tally, Hits) {
    let (mut s, mut tally) = (Scratch::default(), Tally::default());
    let (set, mut w) = acl::CounterSet::new(1, 64);
    let n = f.f.len();
    let p = pipe(t);
    p.parse(f, &mut s, &mut tally, first(n));
    if !t.acl.is_empty() {
        p.classify(f, &mut s, &mut tally, &mut w[0], Clock::default());
    }
    p.route(&mut s, n);
    p.act(f, &mut s, first(n));
    (s, tally, hits(t, &set))
}

/// Rules drawn by the bits of `pick`, over destination ports 9, 53 and 80:
/// some only permit (the fast path goes on), the others drop, count or mark
/// (left to the general stages), one catches everything.
fn rules(pick: u8) -> Vec<Change> {
    let all = [
        prio_rule(10, Some(9), vec![wire::Action::Permit]),
        prio_rule(20, None, vec![wire::Action::Count]),
        prio_rule(30, Some(53), vec![wire::Action::Drop]),
        prio_rule(5, Some(80), vec![wire::Action::Mark(1)]),
        prio_rule(
            40,
            Some(80),
            vec![wire::Action::Count, wire::Action::Permit],
        ),
        prio_rule(90, None, vec![]),
    ];
    all.into_iter()
        .enumerate()
        .filter(|(b, _)| pick & (1 << b) != 0)
        .map(|(_, r)| r)
        .collect()
}

#[test]
fn plain_routed_traffic_is_all_taken_by_the_fast_path() {
    let t = tables(vec![]);
    let frames = (0..32u8)
        .map(|i| {
            let d = Ipv4Addr::new(198, 51, 100, i);
            if i % 2 == 0 {
                build::udp4(&from_host(), Ipv4Addr::new(10, 1, 0, 2), d, 1, 2, &[0; 10])
            } else {
                build::tcp4(&from_host(), Ipv4Addr::new(10, 1, 0, 2), d, 1, 2, 0x10, b"")
            }
        })
        .collect();
    let mut f = Frames::new(frames);
    let mut s = Scratch::default();
    let mut tally = Tally::default();
    let (_, mut w) = acl::CounterSet::new(1, 16);
    let left = pipe(&t).fast(&mut f, &mut s, &mut tally, &mut w[0], Clock::default());
    assert_eq!(
        left,
        Left {
            rest: 0,
            // Out as trimmed: 52-byte UDP and 54-byte TCP frames, each
            // received padded to 60 bytes.
            whole: Some(Whole {
                port: 1,
                bytes: 16 * 52 + 16 * 54
            })
        }
    );
    for fr in &f.f {
        assert_eq!(fr[..6], GW_MAC);
        assert_eq!(fr[6..12], MAC_B);
        assert_eq!(fr[22], 63, "TTL decremented");
        assert!(crate::pkt::csum::verify_ipv4_header(&fr[14..34]));
    }
    // Forwarded whole: each verdict is `Tx(1)`, left unwritten.
    assert_eq!(s.verdict, Scratch::default().verdict);
    assert_eq!(tally.rx_bytes, 32 * 60);
}

#[test]
fn plain_ipv6_to_a_resolved_gateway_is_taken_too() {
    let t = tables(vec![neigh("fd02::fe", GW_MAC, "b")]);
    let s6: Ipv6Addr = "fd01::2".parse().unwrap();
    let d6: Ipv6Addr = "2001:db8::7".parse().unwrap();
    let ll: Ipv6Addr = "fe80::7".parse().unwrap();
    let mut f = Frames::new(vec![
        build::udp6(&from_host(), s6, d6, 1, 2, b""),
        build::tcp6(&from_host(), s6, d6, 1, 2, 0x02, b""),
        build::ipv6(&from_host(), s6, d6, ipproto::ESP, &[7; 24]),
        build::icmp6_echo(&from_host(), s6, d6, 1, 1, b""),
        build::udp6(&from_host(), s6, ll, 1, 2, b""),
        // A neighbour solicitation to a global address.
        build::icmp6(&from_host(), s6, d6, 135, 0, &[0; 20]),
    ]);
    let mut s = Scratch::default();
    let mut tally = Tally::default();
    let (_, mut w) = acl::CounterSet::new(1, 16);
    let rest = pipe(&t)
        .fast(&mut f, &mut s, &mut tally, &mut w[0], Clock::default())
        .rest;
    assert_eq!(
        rest, 0b11_0000,
        "link-local and neighbour discovery are left to the general stages"
    );
    for fr in &f.f[..4] {
        assert_eq!(fr[..6], GW_MAC);
        assert_eq!(fr[14 + 7], 63, "hop limit decremented");
    }
}

/// A burst that starts with an IPv6 frame is recognised IPv6 first, then
/// IPv4: both families' plain frames are taken whatever the order, each
/// family's list in burst order.
#[test]
fn a_burst_of_both_families_is_taken_whichever_comes_first() {
    let t = tables(vec![neigh("fd02::fe", GW_MAC, "b")]);
    let (s4, d4) = (Ipv4Addr::new(10, 1, 0, 2), Ipv4Addr::new(198, 51, 100, 7));
    let s6: Ipv6Addr = "fd01::2".parse().unwrap();
    let d6: Ipv6Addr = "2001:db8::7".parse().unwrap();
    for v6_first in [true, false] {
        let kinds: Vec<bool> = (0..9).map(|i| (i % 3 == 0) == v6_first).collect();
        let frames = kinds
            .iter()
            .map(|&v6| {
                if v6 {
                    build::udp6(&from_host(), s6, d6, 1, 2, b"")
                } else {
                    build::udp4(&from_host(), s4, d4, 1, 2, &[0; 10])
                }
            })
            .collect();
        let mut f = Frames::new(frames);
        let (s, _, _, whole) = with_fast(&t, &mut f);
        assert_eq!(whole, Some(1), "v6 first: {v6_first}");
        let want =
            |v6: bool| -> Vec<u8> { (0..9u8).filter(|&i| kinds[usize::from(i)] == v6).collect() };
        let (n4, n6) = (want(false).len(), want(true).len());
        assert_eq!(s.v4_idx[..n4], want(false)[..]);
        assert_eq!(s.v6_idx[..n6], want(true)[..]);
        for (fr, &v6) in f.f.iter().zip(&kinds) {
            assert_eq!(fr[..6], GW_MAC);
            assert_eq!(fr[if v6 { 14 + 7 } else { 22 }], 63);
        }
    }
}

#[test]
fn everything_else_is_left_to_the_general_stages() {
    let t = tables(vec![]);
    let h = from_host();
    let src = Ipv4Addr::new(10, 1, 0, 2);
    let ttl1 = FrameSpec {
        ttl: 1,
        ..h.clone()
    };
    let df = FrameSpec {
        dont_fragment: true,
        ..h.clone()
    };
    let to = |d: [u8; 4]| build::udp4(&h, src, Ipv4Addr::from(d), 1, 2, b"");
    let mut f = Frames::new(vec![
        to([203, 0, 113, 1]), // reject
        to([192, 0, 2, 1]),   // blackhole
        to([8, 8, 8, 8]),     // no route
        to([10, 2, 0, 9]),    // unresolved neighbour
        to([10, 1, 0, 1]),    // ours
        to([224, 0, 0, 5]),   // multicast
        build::udp4(&ttl1, src, Ipv4Addr::new(198, 51, 100, 1), 1, 2, b""),
        build::udp4(&df, src, Ipv4Addr::new(198, 51, 100, 1), 1, 2, &[0; 1300]),
        to([198, 51, 100, 1]), // taken
        // Other protocols are taken too: ICMP, ESP, GRE.
        build::icmp4_echo(&h, src, Ipv4Addr::new(198, 51, 100, 1), 1, 1, b""),
        build::ipv4(
            &h,
            src,
            Ipv4Addr::new(198, 51, 100, 1),
            ipproto::ESP,
            &[7; 24],
        ),
        build::ipv4(
            &h,
            src,
            Ipv4Addr::new(198, 51, 100, 1),
            ipproto::GRE,
            &[0; 4],
        ),
    ]);
    let mut s = Scratch::default();
    let mut tally = Tally::default();
    let (_, mut w) = acl::CounterSet::new(1, 16);
    let rest = pipe(&t)
        .fast(&mut f, &mut s, &mut tally, &mut w[0], Clock::default())
        .rest;
    assert_eq!(rest, first(8));
    for i in 8..12 {
        assert_eq!(s.verdict[i], Verdict::Tx(1), "packet {i}");
    }
}

/// 0.0.0.0/0 and ::/0 via the gateways on b: multicast, link-local and
/// the unrouted then have a route too.
fn default_via_gateway() -> [Change; 2] {
    [
        route_via("0.0.0.0/0", "10.2.0.254", "b"),
        route_via("::/0", "fd02::fe", "b"),
    ]
}

/// 198.18.0.0/24 back out of port a, via a resolved gateway there: with
/// it, a burst can be forwarded to two ports.
fn route_back_to_a() -> [Change; 2] {
    [
        neigh("10.1.0.9", [2, 0, 0, 0, 0, 9], "a"),
        route_via("198.18.0.0/24", "10.1.0.9", "a"),
    ]
}

/// 9.9.9.0/24 and 2001:db8::/64 spread over two resolved gateways on b
/// each (ECMP groups: the next hop is chosen by the flow hash).
fn ecmp_routes() -> Vec<Change> {
    let neigh = |a: &str, last: u8| neigh(a, [2, 0, 0, 0, 0xec, last], "b");
    let hop = |g: &str| wire::NextHopSpec {
        via: Some(g.parse().unwrap()),
        dev: Some("b".into()),
        weight: 1,
    };
    let multi = |prefix: &str, a: &str, b: &str| {
        Change::RouteAdd(wire::Route {
            linkdown: false,
            proto: None,
            prefix: prefix.parse().unwrap(),
            table: 0,
            target: RouteTarget::Multipath(vec![hop(a), hop(b)]),
        })
    };
    vec![
        neigh("10.2.0.252", 1),
        neigh("10.2.0.253", 2),
        neigh("fd02::fc", 3),
        neigh("fd02::fd", 4),
        multi("9.9.9.0/24", "10.2.0.252", "10.2.0.253"),
        multi("2001:db8::/64", "fd02::fc", "fd02::fd"),
    ]
}

#[test]
fn ecmp_traffic_is_taken_and_spread_by_the_flow_hash() {
    let t = tables(ecmp_routes());
    let (s4, s6): (Ipv4Addr, Ipv6Addr) = ("10.1.0.2".parse().unwrap(), "fd01::2".parse().unwrap());
    let frames = (0..32u16)
        .map(|i| {
            let (sport, h) = (1000 + i, from_host());
            if i % 2 == 0 {
                build::udp4(&h, s4, Ipv4Addr::new(9, 9, 9, 9), sport, 53, b"")
            } else {
                build::tcp6(&h, s6, "2001:db8::9".parse().unwrap(), sport, 80, 0x10, b"")
            }
        })
        .collect();
    let mut a = Frames::new(frames);
    let (mut b, mut c) = (a.clone(), a.clone());
    let mut s = Scratch::default();
    let (_, mut w) = acl::CounterSet::new(1, 16);
    let left = pipe(&t).fast(
        &mut c,
        &mut s,
        &mut Tally::default(),
        &mut w[0],
        Clock::default(),
    );
    assert_eq!(left.rest, 0, "all taken by the fast path");
    // The gateway each packet goes to is the one the general stages pick.
    let (sa, ..) = with_fast(&t, &mut a);
    let (sb, ..) = general(&t, &mut b);
    assert_eq!(sa.verdict, sb.verdict);
    assert_eq!(a.f, b.f);
    assert_eq!(a.f, c.f);
    let mut macs: Vec<u8> = a.f.iter().map(|f| f[5]).collect();
    macs.sort_unstable();
    macs.dedup();
    assert_eq!(macs, [1, 2, 3, 4], "every gateway of both groups");
}

/// One packet of a random burst: what it is and how it arrives.
#[derive(Clone, Debug)]
struct Pkt {
    kind: u8,
    host: u8,
    ttl: u8,
    len: usize,
    df: bool,
    nic_csum: Option<bool>,
    segs: u16,
    corrupt: Option<(usize, u8)>,
}

fn pkt() -> impl Strategy<Value = Pkt> {
    (
        0u8..23,
        any::<u8>(),
        prop_oneof![Just(64u8), 0u8..3],
        prop_oneof![0usize..40, 1200usize..1300],
        any::<bool>(),
        prop_oneof![Just(None), Just(Some(true)), Just(Some(false))],
        prop_oneof![4 => Just(1u16), 1 => Just(2u16)],
        proptest::option::weighted(0.2, (0usize..60, any::<u8>())),
    )
        .prop_map(|(kind, host, ttl, len, df, nic_csum, segs, corrupt)| Pkt {
            kind,
            host,
            ttl,
            len,
            df,
            nic_csum,
            segs,
            corrupt,
        })
}

fn frame(p: &Pkt) -> Vec<u8> {
    let spec = FrameSpec {
        ttl: p.ttl,
        dont_fragment: p.df,
        ..from_host()
    };
    let src = Ipv4Addr::new(10, 1, 0, 2);
    let body = vec![0x5a; p.len];
    let dport = [9, 53, 80][usize::from(p.host % 3)];
    let v4 = |a: u8, b: u8, c: u8| Ipv4Addr::new(a, b, c, p.host);
    let mut f = match p.kind {
        0..=2 => build::udp4(&spec, src, v4(198, 51, 100), 7, dport, &body),
        3 => build::tcp4(&spec, src, v4(198, 51, 100), 7, dport, 0x12, &body),
        4 => build::udp4(&spec, src, v4(203, 0, 113), 7, dport, &body),
        5 => build::udp4(&spec, src, v4(10, 2, 0), 7, dport, &body),
        6 => build::udp4(&spec, src, v4(10, 1, 0), 7, dport, &body),
        7 => build::udp4(&spec, src, v4(224, 0, 0), 7, dport, &body),
        8 => build::udp4(&spec, src, v4(9, 9, 9), 7, dport, &body),
        9 => build::icmp4_echo(&spec, src, v4(198, 51, 100), 1, 1, &body),
        16 => build::udp4(&spec, src, v4(198, 18, 0), 7, dport, &body),
        17 => build::ipv4(&spec, src, v4(198, 51, 100), ipproto::ESP, &body),
        18 => build::ipv4(&spec, src, v4(198, 51, 100), ipproto::SCTP, &body),
        19 => build::ipv4(&spec, src, v4(9, 9, 9), ipproto::GRE, &body),
        10 => {
            let vlan = FrameSpec {
                vlans: vec![VlanTag::dot1q(3)],
                ..spec
            };
            build::udp4(&vlan, src, v4(198, 51, 100), 7, dport, &body)
        }
        _ => {
            let s6: Ipv6Addr = "fd01::2".parse().unwrap();
            let h = u16::from(p.host);
            let d6 = |a: u16, b: u16| Ipv6Addr::new(a, b, 0, 0, 0, 0, 0, h);
            match p.kind {
                11 => build::udp6(&spec, s6, d6(0x2001, 0xdb8), 7, dport, &body),
                12 => build::tcp6(&spec, s6, d6(0x2001, 0xdb8), 7, dport, 0x12, &body),
                13 => build::udp6(&spec, s6, d6(0xfe80, 0), 7, dport, &body),
                14 => build::udp6(&spec, s6, d6(0xff02, 0), 7, dport, &body),
                20 => build::ipv6(&spec, s6, d6(0x2001, 0xdb8), ipproto::ESP, &body),
                21 => build::icmp6_echo(&spec, s6, d6(0x2001, 0xdb8), 1, 1, &body),
                // Neighbour discovery (the host byte picks the type,
                // 133-137 or not) to a global address.
                22 => build::icmp6(&spec, s6, d6(0x2001, 0xdb8), 131 + p.host % 8, 0, &body),
                _ => {
                    let ext = FrameSpec {
                        ipv6_ext: vec![Ext6::HopByHop { len8: 0 }],
                        ..spec
                    };
                    build::udp6(&ext, s6, d6(0x2001, 0xdb8), 7, dport, &body)
                }
            }
        }
    };
    if let Some((at, v)) = p.corrupt {
        let at = at % f.len();
        f[at] = v;
    }
    f
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 300,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Whatever the burst, the fast path changes nothing but the cost: the
    /// same verdicts, addresses to resolve, frames and counts as the
    /// general stages alone.
    #[test]
    fn the_fast_path_decides_as_the_general_stages_do(
        burst in proptest::collection::vec(pkt(), 1..=32),
        default_route in any::<bool>(),
        v6_resolved in any::<bool>(),
        pick in prop_oneof![Just(0u8), any::<u8>()],
        ecmp in any::<bool>(),
        two_ports in any::<bool>(),
    ) {
        let mut extra = rules(pick);
        if default_route {
            extra.extend(default_via_gateway());
        }
        if ecmp {
            extra.extend(ecmp_routes());
        }
        if two_ports {
            extra.extend(route_back_to_a());
        }
        if v6_resolved {
            extra.push(neigh("fd02::fe", GW_MAC, "b"));
        }
        let t = tables(extra);
        let mut a = Frames::new(burst.iter().map(frame).collect());
        a.segs = burst.iter().map(|p| p.segs).collect();
        a.nic_csum = burst.iter().map(|p| p.nic_csum).collect();
        let mut b = a.clone();
        let (sa, ta, ha, whole) = with_fast(&t, &mut a);
        let (sb, tb, hb) = general(&t, &mut b);
        prop_assert_eq!(ha, hb);
        let n = burst.len();
        prop_assert_eq!(&sa.verdict[..n], &sb.verdict[..n]);
        for i in 0..n {
            if matches!(sa.verdict[i], Verdict::Hold { .. }) {
                prop_assert_eq!(sa.hold_addr[i], sb.hold_addr[i]);
            }
        }
        prop_assert_eq!(a.f, b.f);
        prop_assert_eq!(ta.drops, tb.drops);
        prop_assert_eq!(ta.events, tb.events);
        prop_assert_eq!(ta.rx_bytes, tb.rx_bytes);
        prop_assert_eq!(sa.n_learned, sb.n_learned);
        // A burst named whole goes to the driver as it is: every packet
        // of it must be forwarded out of that port.
        if let Some(port) = whole {
            prop_assert!(sa.verdict[..n].iter().all(|&v| v == Verdict::Tx(port)));
        }
    }

    /// A burst of routed packets to two ports, some with their TTL spent:
    /// it is named whole exactly when the fast path forwarded every packet
    /// of it out of one port.
    #[test]
    fn a_burst_is_whole_only_when_all_of_it_goes_out_of_one_port(
        pkts in proptest::collection::vec(
            (any::<bool>(), prop_oneof![6 => Just(64u8), 1 => 0u8..2], any::<u8>()),
            1..=32,
        ),
    ) {
        let t = tables(route_back_to_a().into());
        let src = Ipv4Addr::new(10, 1, 0, 2);
        let frames = pkts
            .iter()
            .map(|&(to_a, ttl, host)| {
                let spec = FrameSpec { ttl, ..from_host() };
                let d = if to_a { [198, 18, 0, host] } else { [198, 51, 100, host] };
                build::udp4(&spec, src, Ipv4Addr::from(d), 7, 9, &[0; 10])
            })
            .collect();
        let (s, _, _, whole) = with_fast(&t, &mut Frames::new(frames));
        let all_routed = pkts.iter().all(|&(_, ttl, _)| ttl > 1);
        let ports: std::collections::BTreeSet<u16> =
            pkts.iter().map(|&(to_a, _, _)| if to_a { 0 } else { 1 }).collect();
        let want = match (all_routed, ports.len()) {
            (true, 1) => ports.first().copied(),
            _ => None,
        };
        prop_assert_eq!(whole, want);
        if let Some(port) = whole {
            prop_assert!(s.verdict[..pkts.len()].iter().all(|&v| v == Verdict::Tx(port)));
        }
    }
}

/// The stage-cutoff names `deploy/bench/stages.sh` builds with, and no
/// cutoff in a build without the variable (the tests above would fail in a
/// cutoff build, which forwards without rewriting).
#[test]
fn stage_cutoffs_are_named_and_off_by_default() {
    use super::{cutoff, Cutoff, CUTOFF};
    assert_eq!(CUTOFF, Cutoff::None, "tests built with FWD_FAST_CUTOFF set");
    assert_eq!(cutoff(None), Cutoff::None);
    assert_eq!(cutoff(Some("")), Cutoff::None);
    assert_eq!(cutoff(Some("rx")), Cutoff::Rx);
    assert_eq!(cutoff(Some("parse")), Cutoff::Parse);
    assert_eq!(cutoff(Some("classify")), Cutoff::Classify);
    assert_eq!(cutoff(Some("lookup")), Cutoff::Lookup);
}

/// `Pipeline::run` names the one port of a burst the fast path forwarded
/// whole (the poll loop then sends it as it is), and none when a packet
/// was left to the general stages, whatever they decided, or when the
/// burst goes to two ports.
#[test]
fn a_burst_forwarded_whole_names_its_port() {
    // 198.18.0.0/24 goes back out of port a.
    let t = tables(route_back_to_a().into());
    // 31 packets to port b, the last one as `last` says.
    let burst = |last_ttl: u8, last_dst: Ipv4Addr| {
        let frames = (0..32u8)
            .map(|i| {
                let (ttl, d) = if i == 31 {
                    (last_ttl, last_dst)
                } else {
                    (64, Ipv4Addr::new(198, 51, 100, i))
                };
                let spec = FrameSpec { ttl, ..from_host() };
                build::udp4(&spec, Ipv4Addr::new(10, 1, 0, 2), d, 1, 2, &[0; 10])
            })
            .collect();
        Frames::new(frames)
    };
    let run = |f: &mut Frames| {
        let (mut s, mut tally) = (Scratch::default(), Tally::default());
        let (_, mut w) = acl::CounterSet::new(1, 16);
        let whole = pipe(&t).run(f, &mut s, &mut tally, &mut w[0], Clock::default);
        (whole.map(|w| w.port), s)
    };
    let b = Ipv4Addr::new(198, 51, 100, 31);
    let (whole, s) = run(&mut burst(64, b));
    assert_eq!(whole, Some(1));
    // Sent as it is: `run` leaves the verdicts as they were.
    assert_eq!(s.verdict, Scratch::default().verdict);
    // TTL 1: the general stages answer it; the others still go to port b.
    let (whole, s) = run(&mut burst(1, b));
    assert_eq!(whole, None);
    assert_eq!(s.verdict[0], Verdict::Tx(1));
    assert_ne!(s.verdict[31], Verdict::Tx(1));
    // All forwarded by the fast path, to two ports.
    let (whole, s) = run(&mut burst(64, Ipv4Addr::new(198, 18, 0, 1)));
    assert_eq!(whole, None);
    assert_eq!(s.verdict[0], Verdict::Tx(1));
    assert_eq!(s.verdict[31], Verdict::Tx(0));
}

/// Bursts to 16 gateways in turn, through one scratch, under several
/// values of the tables: each burst's frames carry the MACs of the tables
/// it ran under, so the next hops the fast path keeps across bursts answer
/// only for the tables they were resolved under (`Hops`).
#[test]
fn resolved_next_hops_are_kept_only_for_the_tables_they_came_from() {
    // Gateway g: 10.2.0.(100 + g) on b, MAC 02:00:00:00:<last>:<g>, and
    // 198.19.g.0/24 via it.
    let with_gateways = |last: u8| {
        let mut extra = Vec::new();
        for g in 0..16u8 {
            let gw = format!("10.2.0.{}", 100 + g);
            extra.push(neigh(&gw, [2, 0, 0, 0, last, g], "b"));
            extra.push(route_via(&format!("198.19.{g}.0/24"), &gw, "b"));
        }
        tables(extra)
    };
    let (c0, d0) = (with_gateways(0xc0), with_gateways(0xd0));
    let c0_again = c0.clone();
    assert!(c0.uid() != d0.uid() && c0.uid() != c0_again.uid());
    let burst = || {
        Frames::new(
            (0..32u8)
                .map(|i| {
                    let d = Ipv4Addr::new(198, 19, i % 16, 7);
                    build::udp4(&from_host(), Ipv4Addr::new(10, 1, 0, 2), d, 1, 2, &[0; 10])
                })
                .collect(),
        )
    };
    let mut s = Scratch::default();
    let (_, mut w) = acl::CounterSet::new(1, 16);
    for (t, last) in [
        (&c0, 0xc0),
        (&d0, 0xd0),
        (&c0, 0xc0),
        (&c0_again, 0xc0),
        (&d0, 0xd0),
    ] {
        let mut f = burst();
        let mut tally = Tally::default();
        let left = pipe(t).fast(&mut f, &mut s, &mut tally, &mut w[0], Clock::default());
        assert_eq!(left.rest, 0);
        for (i, fr) in f.f.iter().enumerate() {
            assert_eq!(fr[..6], [2, 0, 0, 0, last, i as u8 % 16], "packet {i}");
        }
    }
    // Port b down in a new value: the same scratch forwards none of it.
    let mut ports = d0.ports.to_vec();
    ports[1].carrier = false;
    let down = with_ports(&d0, ports);
    let mut f = burst();
    let mut tally = Tally::default();
    let left = pipe(&down).fast(&mut f, &mut s, &mut tally, &mut w[0], Clock::default());
    assert_eq!(left.rest, first(32));
}
