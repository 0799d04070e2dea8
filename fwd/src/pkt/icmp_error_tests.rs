use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use proptest::prelude::*;

use super::*;
use crate::pkt::build::{self, Ext6, FrameSpec, VlanTag};
use crate::pkt::{csum, parse};

const ROUTER: [u8; 6] = [2, 0, 0, 0, 0, 0xaa];
const HOST: [u8; 6] = [2, 0, 0, 0, 0, 0xbb];

fn v4(s: &str) -> Ipv4Addr {
    s.parse().unwrap()
}

fn v6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

/// The router's own addresses (the error's source).
fn r4() -> IpAddr {
    IpAddr::V4(v4("192.0.2.1"))
}

fn r6() -> IpAddr {
    IpAddr::V6(v6("2001:db8::1"))
}

/// A packet from HOST to the router's MAC, on its way elsewhere.
fn spec() -> FrameSpec {
    FrameSpec {
        src_mac: HOST,
        dst_mac: ROUTER,
        ..FrameSpec::default()
    }
}

fn udp4(spec: &FrameSpec, payload: usize) -> Vec<u8> {
    build::udp4(
        spec,
        v4("10.0.0.2"),
        v4("198.51.100.7"),
        4000,
        53,
        &vec![0x5a; payload],
    )
}

fn udp6(spec: &FrameSpec, payload: usize) -> Vec<u8> {
    build::udp6(
        spec,
        v6("2001:db8:1::2"),
        v6("2001:db8:2::7"),
        4000,
        53,
        &vec![0x5a; payload],
    )
}

const V4_ERRORS: [(IcmpError, u8, u8); 6] = [
    (IcmpError::TimeExceeded, 11, 0),
    (IcmpError::NetUnreachable, 3, 0),
    (IcmpError::HostUnreachable, 3, 1),
    (IcmpError::PortUnreachable, 3, 3),
    (IcmpError::AdminProhibited, 3, 13),
    (IcmpError::FragNeeded { mtu: 1400 }, 3, 4),
];

const V6_ERRORS: [(IcmpError, u8, u8); 6] = [
    (IcmpError::TimeExceeded, 3, 0),
    (IcmpError::NetUnreachable, 1, 0),
    (IcmpError::HostUnreachable, 1, 3),
    (IcmpError::PortUnreachable, 1, 4),
    (IcmpError::AdminProhibited, 1, 1),
    (IcmpError::PacketTooBig { mtu: 1280 }, 2, 0),
];

const ALL_ERRORS: [IcmpError; 7] = [
    IcmpError::TimeExceeded,
    IcmpError::NetUnreachable,
    IcmpError::HostUnreachable,
    IcmpError::PortUnreachable,
    IcmpError::AdminProhibited,
    IcmpError::FragNeeded { mtu: 576 },
    IcmpError::PacketTooBig { mtu: 1280 },
];

/// Builds the error about `frame` and checks what every error frame must be; returns
/// it with its parse.
fn build_checked(frame: &[u8], err: IcmpError, src: IpAddr) -> (Vec<u8>, Parsed) {
    let p = parse(frame).unwrap();
    assert!(may_send_error(frame, &p, err), "{err:?}");
    let mut out = [0u8; MAX_ERROR_FRAME];
    let n = build_error(&mut out, frame, &p, err, src, ROUTER).unwrap();
    assert!((60..=MAX_ERROR_FRAME).contains(&n));
    let f = out[..n].to_vec();
    let q = parse(&f).unwrap();
    let (l3, l4) = (usize::from(q.l3_off), usize::from(q.l4_off));
    let end = l3 + usize::from(q.l3_len);
    // Back the way it came: to the sender's MAC, with its tags.
    assert_eq!(&f[..6], &frame[6..12]);
    assert_eq!(&f[6..12], &ROUTER);
    assert_eq!(&f[12..l3], &frame[12..usize::from(p.l3_off)]);
    assert_eq!((q.outer_vlan, q.inner_vlan), (p.outer_vlan, p.inner_vlan));
    assert_eq!(q.src_addr(), src);
    assert_eq!(q.dst, p.src);
    assert_eq!((q.ttl, q.frag), (64, Fragment::None));
    assert!(f[end..].iter().all(|&b| b == 0), "padding is zero");
    match q.kind {
        L3Kind::V4 => {
            assert_eq!(q.proto, ipproto::ICMP);
            assert_eq!(&f[l3..l3 + 2], &[0x45, 0xc0], "TOS internetwork control");
            assert_eq!(&f[l3 + 4..l3 + 8], &[0; 4], "id 0, no DF");
            assert!(csum::verify_ipv4_header(&f[l3..l4]));
            assert_eq!(csum::checksum(&f[l4..end]), 0, "ICMP checksum");
        }
        L3Kind::V6 => {
            assert_eq!(q.proto, ipproto::ICMPV6);
            assert_eq!(&f[l3..l3 + 4], &[0x60, 0, 0, 0]);
            assert_eq!(l4, l3 + 40);
            assert_eq!(
                csum::l4_checksum_v6(&q.src, &q.dst, ipproto::ICMPV6, &f[l4..end]),
                0,
                "ICMPv6 checksum"
            );
        }
    }
    // The quote is the start of the original IP packet.
    let quote = &f[l4 + 8..end];
    let o3 = usize::from(p.l3_off);
    assert_eq!(quote, &frame[o3..o3 + quote.len()]);
    (f, q)
}

fn quote_len(q: &Parsed) -> usize {
    usize::from(q.l3_off) + usize::from(q.l3_len) - usize::from(q.l4_off) - 8
}

#[test]
fn every_v4_error_parses_back() {
    let frame = udp4(&spec(), 100);
    for (err, ty, code) in V4_ERRORS {
        let (f, q) = build_checked(&frame, err, r4());
        assert_eq!((q.sport, q.dport), (u16::from(ty), u16::from(code)));
        let l4 = usize::from(q.l4_off);
        let rest: [u8; 4] = if err == (IcmpError::FragNeeded { mtu: 1400 }) {
            [0, 0, 0x05, 0x78]
        } else {
            [0; 4]
        };
        assert_eq!(&f[l4 + 4..l4 + 8], &rest, "{err:?}");
        assert_eq!(quote_len(&q), 20 + 8 + 100, "the whole packet");
        assert_eq!(q.dst_v4(), u32::from(v4("10.0.0.2")));
    }
}

#[test]
fn every_v6_error_parses_back() {
    let frame = udp6(&spec(), 100);
    for (err, ty, code) in V6_ERRORS {
        let (f, q) = build_checked(&frame, err, r6());
        assert_eq!((q.sport, q.dport), (u16::from(ty), u16::from(code)));
        let l4 = usize::from(q.l4_off);
        let rest: [u8; 4] = if err == (IcmpError::PacketTooBig { mtu: 1280 }) {
            [0, 0, 0x05, 0x00]
        } else {
            [0; 4]
        };
        assert_eq!(&f[l4 + 4..l4 + 8], &rest, "{err:?}");
        assert_eq!(quote_len(&q), 40 + 8 + 100, "the whole packet");
        assert_eq!(q.dst_v6(), u128::from(v6("2001:db8:1::2")));
    }
}

#[test]
fn the_family_must_match() {
    let mut out = [0u8; MAX_ERROR_FRAME];
    let f4 = udp4(&spec(), 10);
    let p4 = parse(&f4).unwrap();
    let ptb = IcmpError::PacketTooBig { mtu: 1280 };
    assert!(!may_send_error(&f4, &p4, ptb));
    assert_eq!(build_error(&mut out, &f4, &p4, ptb, r4(), ROUTER), None);
    let te = IcmpError::TimeExceeded;
    assert_eq!(build_error(&mut out, &f4, &p4, te, r6(), ROUTER), None);

    let f6 = udp6(&spec(), 10);
    let p6 = parse(&f6).unwrap();
    let fragn = IcmpError::FragNeeded { mtu: 1400 };
    assert!(!may_send_error(&f6, &p6, fragn));
    assert_eq!(build_error(&mut out, &f6, &p6, fragn, r6(), ROUTER), None);
    assert_eq!(build_error(&mut out, &f6, &p6, te, r4(), ROUTER), None);

    // A `Parsed` of the other frame does not fit.
    assert!(!may_send_error(&f4, &p6, te));
    assert_eq!(build_error(&mut out, &f4, &p6, te, r6(), ROUTER), None);
    assert_eq!(build_error(&mut out, &f6, &p4, te, r4(), ROUTER), None);
}

#[test]
fn quotes_stop_at_576_and_1280_and_ignore_padding() {
    let te = IcmpError::TimeExceeded;
    // Short packets: padded to 60 on the wire, quoted without the padding.
    let f = udp4(&spec(), 0);
    assert_eq!(f.len(), 60);
    let (g, q) = build_checked(&f, te, r4());
    assert_eq!(quote_len(&q), 28);
    assert_eq!(g.len(), 14 + 20 + 8 + 28);
    let f = udp6(&spec(), 0);
    let (_, q) = build_checked(&f, te, r6());
    assert_eq!(quote_len(&q), 48);

    // Exactly at the limit, and one byte over.
    for (payload, quoted) in [(520, 548), (521, 548)] {
        let (_, q) = build_checked(&udp4(&spec(), payload), te, r4());
        assert_eq!(quote_len(&q), quoted);
    }
    for (payload, quoted) in [(1184, 1232), (1185, 1232)] {
        let (_, q) = build_checked(&udp6(&spec(), payload), te, r6());
        assert_eq!(quote_len(&q), quoted);
    }

    // Full-size 1500-byte packets.
    let (g, q) = build_checked(&udp4(&spec(), 1472), te, r4());
    assert_eq!((q.l3_len, g.len()), (576, 14 + 576));
    let (g, q) = build_checked(&udp6(&spec(), 1452), te, r6());
    assert_eq!((q.l3_len, g.len()), (1280, 14 + 1280));

    // The largest possible error frame: two tags and a truncated IPv6 quote.
    let qinq = FrameSpec {
        vlans: vec![VlanTag::dot1ad(100), VlanTag::dot1q(200)],
        ..spec()
    };
    let (g, _) = build_checked(&udp6(&qinq, 1452), te, r6());
    assert_eq!(g.len(), MAX_ERROR_FRAME);
}

#[test]
fn vlan_tags_are_kept() {
    for vlans in [
        vec![VlanTag::dot1q(7)],
        vec![VlanTag::dot1ad(100), VlanTag::dot1q(200)],
    ] {
        let s = FrameSpec {
            vlans: vlans.clone(),
            ..spec()
        };
        for (f, src) in [(udp4(&s, 30), r4()), (udp6(&s, 30), r6())] {
            let (g, q) = build_checked(&f, IcmpError::NetUnreachable, src);
            assert_eq!(q.outer_vlan, Some(vlans[0].tci));
            assert_eq!(q.inner_vlan, vlans.get(1).map(|t| t.tci));
            assert_eq!(
                &g[12..16],
                &[vlans[0].tpid.to_be_bytes(), vlans[0].tci.to_be_bytes()].concat()[..]
            );
        }
    }
}

#[test]
fn a_small_buffer_is_refused() {
    let f = udp4(&spec(), 100);
    let p = parse(&f).unwrap();
    let te = IcmpError::TimeExceeded;
    let need = 14 + 20 + 8 + 128;
    let mut out = vec![0u8; need];
    assert_eq!(build_error(&mut out, &f, &p, te, r4(), ROUTER), Some(need));
    assert_eq!(
        build_error(&mut out[..need - 1], &f, &p, te, r4(), ROUTER),
        None
    );
    assert_eq!(build_error(&mut [], &f, &p, te, r4(), ROUTER), None);
}

/// `may_send_error` with the error that a router sends most.
fn allowed(frame: &[u8]) -> bool {
    may_send_error(frame, &parse(frame).unwrap(), IcmpError::TimeExceeded)
}

#[test]
fn no_error_about_an_icmp_error() {
    let (s, d) = (v4("10.0.0.2"), v4("198.51.100.7"));
    for ty in [3, 4, 5, 11, 12] {
        let f = build::icmp4(&spec(), s, d, ty, 0, &[0; 32]);
        for err in ALL_ERRORS {
            assert!(!may_send_error(&f, &parse(&f).unwrap(), err), "type {ty}");
        }
    }
    // Queries are fine: echo reply, echo request, timestamp.
    for ty in [0, 8, 13] {
        assert!(
            allowed(&build::icmp4(&spec(), s, d, ty, 0, &[0; 4])),
            "type {ty}"
        );
    }

    let (s, d) = (v6("2001:db8:1::2"), v6("2001:db8:2::7"));
    // Errors (below 128) and redirects (RFC 4443 2.4(e.2)).
    for ty in [1, 2, 3, 4, 100, 127, 137] {
        let f = build::icmp6(&spec(), s, d, ty, 0, &[0; 52]);
        for err in ALL_ERRORS {
            assert!(!may_send_error(&f, &parse(&f).unwrap(), err), "type {ty}");
        }
    }
    for ty in [128, 129, 135, 136] {
        assert!(
            allowed(&build::icmp6(&spec(), s, d, ty, 0, &[0; 20])),
            "type {ty}"
        );
    }
}

#[test]
fn no_error_about_a_non_first_fragment() {
    let later = FrameSpec {
        frag_offset: 10,
        ..spec()
    };
    assert!(!allowed(&udp4(&later, 40)));
    // Nor about a later fragment of an ICMP error (its type is not even visible).
    let f = build::ipv4(
        &later,
        v4("10.0.0.2"),
        v4("198.51.100.7"),
        ipproto::ICMP,
        &[0; 40],
    );
    assert!(!allowed(&f));
    let first = FrameSpec {
        more_fragments: true,
        ..spec()
    };
    assert!(allowed(&udp4(&first, 40)));

    let frag6 = |offset, more| FrameSpec {
        ipv6_ext: vec![Ext6::Fragment {
            offset,
            more,
            id: 1,
        }],
        ..spec()
    };
    assert!(!allowed(&udp6(&frag6(10, true), 40)));
    assert!(!allowed(&udp6(&frag6(10, false), 40)));
    assert!(allowed(&udp6(&frag6(0, true), 40)));
}

#[test]
fn no_error_about_broadcast_or_multicast() {
    let ptb = IcmpError::PacketTooBig { mtu: 1400 };
    // Link-layer broadcast and multicast.
    for mac in [
        [0xff; 6],
        [0x01, 0x00, 0x5e, 0, 0, 1],
        [0x33, 0x33, 0, 0, 0, 1],
    ] {
        let s = FrameSpec {
            dst_mac: mac,
            ..spec()
        };
        assert!(!allowed(&udp4(&s, 10)));
        let f = udp6(&s, 10);
        assert!(!allowed(&f));
        // RFC 4443 2.4(e.4, e.5): Packet Too Big is the exception.
        assert!(may_send_error(&f, &parse(&f).unwrap(), ptb));
    }
    // IPv4 multicast and limited broadcast destinations.
    for dst in ["224.0.0.5", "239.255.255.255", "255.255.255.255"] {
        let f = build::udp4(&spec(), v4("10.0.0.2"), v4(dst), 1, 2, &[]);
        for err in ALL_ERRORS {
            assert!(!may_send_error(&f, &parse(&f).unwrap(), err), "{dst}");
        }
    }
    let f = build::udp4(&spec(), v4("10.0.0.2"), v4("223.255.255.255"), 1, 2, &[]);
    assert!(allowed(&f));
    // IPv6 multicast: only Packet Too Big (RFC 4443 2.4(e.3)).
    for dst in ["ff02::1", "ff0e::1:3", "ff05::1:3"] {
        let f = build::udp6(&spec(), v6("2001:db8:1::2"), v6(dst), 1, 2, &[]);
        let p = parse(&f).unwrap();
        for (err, ..) in V6_ERRORS {
            let too_big = matches!(err, IcmpError::PacketTooBig { .. });
            assert_eq!(may_send_error(&f, &p, err), too_big, "{dst} {err:?}");
        }
        build_checked(&f, ptb, r6());
    }
}

#[test]
fn no_error_to_a_source_that_is_not_one_host() {
    for src in [
        "0.0.0.0",
        "0.1.2.3",
        "127.0.0.1",
        "127.255.0.9",
        "224.0.0.1",
        "239.1.1.1",
        "240.0.0.1",
        "255.255.255.255",
    ] {
        let f = build::udp4(&spec(), v4(src), v4("198.51.100.7"), 1, 2, &[]);
        for err in ALL_ERRORS {
            assert!(!may_send_error(&f, &parse(&f).unwrap(), err), "{src}");
        }
    }
    for src in ["1.0.0.0", "126.255.255.255", "128.0.0.1", "223.255.255.255"] {
        let f = build::udp4(&spec(), v4(src), v4("198.51.100.7"), 1, 2, &[]);
        assert!(allowed(&f), "{src}");
    }
    for src in ["::", "::1", "ff02::1", "ff0e::2"] {
        let f = build::udp6(&spec(), v6(src), v6("2001:db8:2::7"), 1, 2, &[]);
        for err in ALL_ERRORS {
            assert!(!may_send_error(&f, &parse(&f).unwrap(), err), "{src}");
        }
    }
    for src in ["::2", "fe80::1", "2001:db8::9"] {
        let f = build::udp6(&spec(), v6(src), v6("2001:db8:2::7"), 1, 2, &[]);
        assert!(allowed(&f), "{src}");
    }
}

/// Valid frames of many kinds, the seeds of the mutation test.
fn corpus() -> Vec<Vec<u8>> {
    let qinq = FrameSpec {
        vlans: vec![VlanTag::dot1ad(1), VlanTag::dot1q(2)],
        ipv4_options: vec![1, 1, 1, 0],
        ..spec()
    };
    let chain = FrameSpec {
        ipv6_ext: vec![
            Ext6::HopByHop { len8: 0 },
            Ext6::Fragment {
                offset: 0,
                more: true,
                id: 9,
            },
        ],
        ..spec()
    };
    let (s4, d4) = (v4("10.0.0.2"), v4("198.51.100.7"));
    let (s6, d6) = (v6("2001:db8:1::2"), v6("2001:db8:2::7"));
    vec![
        udp4(&spec(), 20),
        udp4(&qinq, 700),
        build::icmp4(&spec(), s4, d4, 8, 0, &[1; 20]),
        build::icmp4(&spec(), s4, d4, 11, 0, &[0; 32]),
        udp6(&chain, 20),
        udp6(&spec(), 1300),
        build::icmp6(&qinq, s6, d6, 128, 0, &[1; 20]),
        build::icmp6(&spec(), s6, d6, 1, 0, &[0; 52]),
    ]
}

/// Exercises both functions on `f` with every error and `p`; checks that what is
/// built is a well-formed error frame.
fn exercise(f: &[u8], p: &Parsed, out_len: usize) -> Result<(), TestCaseError> {
    let mut out = vec![0u8; out_len];
    for err in ALL_ERRORS {
        let _ = may_send_error(f, p, err);
        for src in [r4(), r6()] {
            if let Some(n) = build_error(&mut out, f, p, err, src, ROUTER) {
                prop_assert!((60..=MAX_ERROR_FRAME.min(out_len)).contains(&n));
                let q = parse(&out[..n]);
                prop_assert!(q.is_ok(), "{:?}", q);
                let q = q.unwrap();
                prop_assert!(q.proto == ipproto::ICMP || q.proto == ipproto::ICMPV6);
                prop_assert_eq!(q.dst, p.src);
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(crate::pkt::proptest_config(3_000))]

    #[test]
    fn random_frames_never_panic(
        f in proptest::collection::vec(any::<u8>(), 0..200),
        out_len in 0usize..=MAX_ERROR_FRAME + 8,
    ) {
        if let Ok(p) = parse(&f) {
            exercise(&f, &p, out_len)?;
        }
        exercise(&f, &Parsed::default(), out_len)?;
    }

    /// Byte changes and a truncation on a valid frame, with its own parse when it
    /// still parses, and with the parse of the unchanged frame (which then does not
    /// fit it) always.
    #[test]
    fn mutated_frames_never_panic(
        seed in 0usize..8,
        sets in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..6),
        cut in proptest::option::weighted(0.3, any::<usize>()),
    ) {
        let orig = corpus().swap_remove(seed);
        let before = parse(&orig).unwrap();
        let mut f = orig.clone();
        for (i, v) in sets {
            let at = i % f.len();
            f[at] = v;
        }
        if let Some(n) = cut {
            f.truncate(n % (f.len() + 1));
        }
        if let Ok(p) = parse(&f) {
            exercise(&f, &p, MAX_ERROR_FRAME)?;
        }
        exercise(&f, &before, MAX_ERROR_FRAME)?;
    }

    /// A `Parsed` of random content never makes either function panic or read
    /// outside the frame.
    #[test]
    fn foreign_parsed_never_panics(
        seed in 0usize..8,
        l3_off in 0u16..40,
        l4_off in any::<u16>(),
        l3_len in any::<u16>(),
        v6 in any::<bool>(),
        proto in any::<u8>(),
        sport in any::<u16>(),
        src in any::<[u8; 16]>(),
    ) {
        let f = corpus().swap_remove(seed);
        let p = Parsed {
            l3_off,
            l4_off,
            l3_len,
            kind: if v6 { L3Kind::V6 } else { L3Kind::V4 },
            proto,
            sport,
            src,
            ..Parsed::default()
        };
        for err in ALL_ERRORS {
            let _ = may_send_error(&f, &p, err);
            let mut out = [0u8; MAX_ERROR_FRAME];
            let _ = build_error(&mut out, &f, &p, err, r4(), ROUTER);
            let _ = build_error(&mut out, &f, &p, err, r6(), ROUTER);
        }
    }
}
