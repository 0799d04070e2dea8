//! Fuzz-style property tests: random bytes and random mutations of valid frames never
//! make `parse`, `ether_type`, `forward_rewrite`, `set_dscp`, `ipv4_checksum_ok` or
//! `flow_hash` panic, and whatever `parse` accepts satisfies the `Parsed` invariants
//! and survives the rewrite consistently.

use super::build::{self, Ext6, FrameSpec, VlanTag};
use super::*;
use proptest::prelude::*;
use std::net::{Ipv4Addr, Ipv6Addr};

const DMAC: [u8; 6] = [2, 0, 0, 0, 0, 0xd];
const SMAC: [u8; 6] = [2, 0, 0, 0, 0, 0x5];

/// Valid frames of every kind: the seeds that mutations start from.
fn corpus() -> Vec<Vec<u8>> {
    let s4 = Ipv4Addr::new(10, 0, 0, 1);
    let d4 = Ipv4Addr::new(172, 16, 5, 4);
    let s6: Ipv6Addr = "2001:db8::1".parse().unwrap();
    let d6: Ipv6Addr = "2001:db8::2".parse().unwrap();
    let plain = FrameSpec::default();
    let qinq = FrameSpec {
        vlans: vec![VlanTag::dot1ad(100), VlanTag::dot1q(200)],
        ..FrameSpec::default()
    };
    let opts = FrameSpec {
        vlans: vec![VlanTag::dot1q(5)],
        ipv4_options: vec![1, 1, 0x94, 4, 0, 0],
        ..FrameSpec::default()
    };
    let frag4 = FrameSpec {
        frag_offset: 100,
        ..FrameSpec::default()
    };
    let chain = FrameSpec {
        ipv6_ext: vec![
            Ext6::HopByHop { len8: 0 },
            Ext6::Routing { len8: 1 },
            Ext6::Ah { len4: 1 },
            Ext6::Fragment {
                offset: 0,
                more: true,
                id: 3,
            },
            Ext6::DestOpts { len8: 0 },
        ],
        ..FrameSpec::default()
    };
    let frag6 = FrameSpec {
        ipv6_ext: vec![Ext6::Fragment {
            offset: 20,
            more: true,
            id: 3,
        }],
        ..FrameSpec::default()
    };
    vec![
        build::udp4(&plain, s4, d4, 1, 2, b"payload"),
        build::tcp4(&opts, s4, d4, 80, 1234, 0x18, b"GET / HTTP/1.1"),
        build::icmp4_echo(&qinq, s4, d4, 1, 2, b""),
        build::ipv4(&frag4, s4, d4, 17, &[7; 30]),
        build::udp6(&qinq, s6, d6, 53, 53, b"q"),
        build::tcp6(&chain, s6, d6, 1, 2, 0x02, b""),
        build::icmp6_echo(&plain, s6, d6, 9, 9, &[1; 20]),
        build::ipv6(&frag6, s6, d6, 6, &[0; 40]),
        build::arp_request(&plain, s4, d4),
    ]
}

#[derive(Clone, Debug)]
enum Mutation {
    Set(usize, u8),
    FlipBit(usize, u8),
    Truncate(usize),
    Extend(Vec<u8>),
    Insert(usize, Vec<u8>),
    Remove(usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<usize>(), any::<u8>()).prop_map(|(i, v)| Mutation::Set(i, v)),
        4 => (any::<usize>(), 0u8..8).prop_map(|(i, b)| Mutation::FlipBit(i, b)),
        2 => any::<usize>().prop_map(Mutation::Truncate),
        1 => proptest::collection::vec(any::<u8>(), 0..64).prop_map(Mutation::Extend),
        1 => (any::<usize>(), proptest::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(i, v)| Mutation::Insert(i, v)),
        1 => (any::<usize>(), 1usize..16).prop_map(|(i, n)| Mutation::Remove(i, n)),
    ]
}

fn apply(f: &mut Vec<u8>, m: &Mutation) {
    // Indices are taken modulo the length: small frames get hit everywhere.
    let at = |i: usize, len: usize| if len == 0 { 0 } else { i % len };
    match m {
        Mutation::Set(i, v) => {
            if !f.is_empty() {
                let i = at(*i, f.len());
                f[i] = *v;
            }
        }
        Mutation::FlipBit(i, b) => {
            if !f.is_empty() {
                let i = at(*i, f.len());
                f[i] ^= 1 << b;
            }
        }
        Mutation::Truncate(n) => f.truncate(n % (f.len() + 1)),
        Mutation::Extend(v) => f.extend_from_slice(v),
        Mutation::Insert(i, v) => {
            let i = i % (f.len() + 1);
            f.splice(i..i, v.iter().copied());
        }
        Mutation::Remove(i, n) => {
            let i = at(*i, f.len());
            let end = (i + n).min(f.len());
            f.drain(i..end);
        }
    }
}

/// Everything the fast path does to one frame; asserts what must hold. Returns
/// whether the frame parsed.
fn exercise(f: &[u8]) -> Result<bool, TestCaseError> {
    let et = ether_type(f);
    let r = parse(f);
    if let Err(e) = r {
        prop_assert!(e.index() < ParseError::COUNT);
        if e == ParseError::NotIp {
            prop_assert!(et.is_some());
            prop_assert!(et != Some(ethertype::IPV4) && et != Some(ethertype::IPV6));
        }
        return Ok(false);
    }
    let p = r.unwrap();
    let len = f.len();
    let l3 = usize::from(p.l3_off);
    let l4 = usize::from(p.l4_off);
    let end = l3 + usize::from(p.l3_len);
    prop_assert!([14, 18, 22].contains(&l3));
    prop_assert_eq!(p.inner_vlan.is_some(), l3 == 22);
    prop_assert_eq!(p.outer_vlan.is_some(), l3 >= 18);
    prop_assert!(end <= len);
    prop_assert_eq!(
        et,
        Some(if p.kind == L3Kind::V4 {
            ethertype::IPV4
        } else {
            ethertype::IPV6
        })
    );
    match p.kind {
        L3Kind::V4 => {
            prop_assert!(p.src[4..].iter().all(|&b| b == 0));
            prop_assert!(p.dst[4..].iter().all(|&b| b == 0));
            prop_assert!(p.l3_len >= 20);
        }
        L3Kind::V6 => prop_assert!(p.l3_len >= 40),
    }
    if l4 == 0 {
        prop_assert!(p.frag == Fragment::NonFirst || p.proto == ipproto::NONXT);
        prop_assert_eq!((p.sport, p.dport, p.tcp_flags), (0, 0, 0));
    } else {
        prop_assert!(p.frag != Fragment::NonFirst);
        let fixed = if p.kind == L3Kind::V4 { 20 } else { 40 };
        prop_assert!(l4 >= l3 + fixed);
        prop_assert!(l4 <= end);
        let icmp = if p.kind == L3Kind::V4 {
            ipproto::ICMP
        } else {
            ipproto::ICMPV6
        };
        let min_l4 = match p.proto {
            ipproto::TCP => 20,
            ipproto::UDP => 8,
            ipproto::SCTP => 12,
            x if x == icmp => 8,
            _ => 0,
        };
        prop_assert!(
            l4 + min_l4 <= end,
            "L4 header beyond the IP packet: {:?}",
            p
        );
    }
    if p.proto != ipproto::TCP {
        prop_assert_eq!(p.tcp_flags, 0);
    }
    let _ = flow_hash(&p);

    // Rewrite: either TtlExpired with the frame untouched, or exactly one hop less,
    // the checksum as valid as before, and the same parse otherwise.
    let csum_ok = ipv4_checksum_ok(f, &p);
    let mut g = f.to_vec();
    match forward_rewrite(&mut g, &p, DMAC, SMAC) {
        Err(RewriteError::TtlExpired) => {
            prop_assert!(p.ttl <= 1);
            prop_assert_eq!(&g[..], f);
        }
        Err(RewriteError::FrameMismatch) => prop_assert!(false, "mismatch on its own parse"),
        Ok(()) => {
            prop_assert!(p.ttl > 1);
            let q = parse(&g);
            prop_assert_eq!(
                q,
                Ok(Parsed {
                    ttl: p.ttl - 1,
                    ..p
                })
            );
            prop_assert_eq!(ipv4_checksum_ok(&g, &p), csum_ok);
            prop_assert_eq!(&g[..6], &DMAC[..]);
            prop_assert_eq!(&g[6..12], &SMAC[..]);
        }
    }
    let mut h = f.to_vec();
    set_dscp(&mut h, &p, 0x2e);
    prop_assert_eq!(parse(&h), Ok(Parsed { dscp: 0x2e, ..p }));
    prop_assert_eq!(ipv4_checksum_ok(&h, &p), csum_ok);
    Ok(true)
}

/// A `Parsed` that did not come from the frame it is used with.
fn foreign_parsed() -> impl Strategy<Value = Parsed> {
    (
        any::<u16>(),
        any::<u16>(),
        any::<bool>(),
        any::<[u8; 16]>(),
        any::<u8>(),
        0u8..3,
        any::<u16>(),
    )
        .prop_map(|(l3_off, l4_off, v6, src, ttl, frag, l3_len)| Parsed {
            l3_off: l3_off % 128,
            l4_off,
            kind: if v6 { L3Kind::V6 } else { L3Kind::V4 },
            src,
            ttl,
            frag: [Fragment::None, Fragment::First, Fragment::NonFirst][usize::from(frag)],
            l3_len,
            ..Parsed::default()
        })
}

proptest! {
    #![proptest_config(crate::pkt::proptest_config(20_000))]

    /// Uniformly random bytes.
    #[test]
    fn random_bytes_never_panic(f in proptest::collection::vec(any::<u8>(), 0..160)) {
        exercise(&f)?;
    }

    /// Random bytes behind a plausible L2 header and IP version nibble, with the IP
    /// length field made consistent most of the time, to get past the first checks
    /// far more often than uniform noise does (IPv6 next headers are drawn from the
    /// extension headers and L4 protocols the parser knows).
    #[test]
    fn random_ip_bodies_never_panic(
        tags in 0usize..=3,
        v6 in any::<bool>(),
        first in 0u8..16,
        fix_len in proptest::bool::weighted(0.8),
        nh in proptest::sample::select(vec![0u8, 1, 6, 17, 43, 44, 50, 51, 58, 59, 60, 132, 200]),
        body in proptest::collection::vec(any::<u8>(), 0..160),
    ) {
        let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2];
        for _ in 0..tags {
            f.extend_from_slice(&[0x81, 0x00, 0x00, 0x07]);
        }
        f.extend_from_slice(if v6 { &[0x86, 0xdd] } else { &[0x08, 0x00] });
        let l3 = f.len();
        f.push(if v6 { 0x60 } else { 0x40 | first.max(5) });
        f.extend_from_slice(&body);
        let ip_len = f.len() - l3;
        if fix_len {
            if v6 && ip_len >= 40 {
                f[l3 + 4..l3 + 6].copy_from_slice(&((ip_len - 40) as u16).to_be_bytes());
                f[l3 + 6] = nh;
            } else if !v6 && ip_len >= 20 {
                f[l3 + 2..l3 + 4].copy_from_slice(&(ip_len as u16).to_be_bytes());
                f[l3 + 6] &= 0xc0; // mostly unfragmented
                f[l3 + 9] = nh;
            }
        }
        exercise(&f)?;
    }

    /// A chain of mutations on a valid frame of every kind.
    #[test]
    fn mutated_frames_never_panic(
        seed in 0usize..9,
        muts in proptest::collection::vec(mutation(), 1..6),
    ) {
        let mut f = corpus()[seed].clone();
        for m in &muts {
            apply(&mut f, m);
        }
        exercise(&f)?;
    }

    /// The rewrite functions given a `Parsed` of some other frame never panic and
    /// never write outside the frame (the slice bounds see to it).
    #[test]
    fn foreign_parsed_never_panics(
        p in foreign_parsed(),
        mut f in proptest::collection::vec(any::<u8>(), 0..100),
        dscp in any::<u8>(),
    ) {
        let _ = forward_rewrite(&mut f, &p, DMAC, SMAC);
        set_dscp(&mut f, &p, dscp);
        let _ = ipv4_checksum_ok(&f, &p);
        let _ = flow_hash(&p);
    }
}

/// The corpus itself parses (so the mutation test starts from valid frames), and a
/// deterministic sweep of every single-byte value at every offset of every seed frame
/// is exercised: exhaustive where random mutation is only sampled.
#[test]
fn every_single_byte_mutation_of_the_corpus() {
    let mut parsed = 0usize;
    let mut total = 0usize;
    for (i, f) in corpus().iter().enumerate() {
        let ok = exercise(f).unwrap();
        assert_eq!(ok, i != 8, "seed {i}"); // the ARP frame is NotIp
                                            // Header bytes only: the payload does not steer the parser.
        for at in 0..f.len().min(90) {
            for v in [
                0x00u8, 0x01, 0x05, 0x06, 0x11, 0x2c, 0x3a, 0x3b, 0x45, 0x60, 0x81, 0x88, 0xa8,
                0xdd, 0xff,
            ] {
                let mut g = f.clone();
                g[at] = v;
                total += 1;
                if exercise(&g).unwrap() {
                    parsed += 1;
                }
            }
        }
    }
    // Most single-byte changes still parse (addresses, ports...), many do not.
    assert!(parsed > total / 4 && parsed < total, "{parsed}/{total}");
}

/// Found by the pkt_reply fuzz target: a solicitation from a multicast
/// source (ff..) was answered with a solicited advertisement to that group.
#[test]
fn fuzz_regression_no_advertisement_to_a_multicast_solicitor() {
    let frame: [u8; 86] = [
        0x33, 0x33, 0xff, 0x00, 0x00, 0xfe, 0x02, 0x00, 0x08, 0x00, 0x00, 0x01, 0x86, 0xdd, 0x60,
        0x00, 0x0c, 0x00, 0x00, 0x20, 0x3a, 0xff, 0xff, 0xff, 0xff, 0xb8, 0x00, 0x3d, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0xff, 0x12, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x1c, 0xff, 0x00, 0x00, 0xfe, 0x87, 0x00, 0xf1, 0xf1, 0xf1, 0x00,
        0xd2, 0xe8, 0x08, 0x0c, 0x00, 0x00, 0x20, 0x3a, 0xff, 0x20, 0x01, 0x18, 0xb8, 0x00, 0x00,
        0x00, 0xff, 0xff, 0xff, 0xfe, 0x01, 0x01, 0x00, 0x00, 0x00, 0x01,
    ];
    let p = parse(&frame).unwrap();
    assert_eq!(p.src_v6() >> 120, 0xff);
    let mut g = frame;
    assert!(!nd_reply_in_place(&mut g, &p, DMAC, |t| t >> 120 != 0xff));
    assert_eq!(g, frame, "untouched");
}
