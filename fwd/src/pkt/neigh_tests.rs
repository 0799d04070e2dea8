use std::net::{Ipv4Addr, Ipv6Addr};

use proptest::prelude::*;

use super::*;
use crate::pkt::build::{self, Ext6, FrameSpec, VlanTag};
use crate::pkt::{arp_reply_in_place, csum, nd_reply_in_place, parse};

const MAC: [u8; 6] = [0x52, 0x54, 0x00, 0x12, 0x34, 0x56];
const PEER: [u8; 6] = [0x02, 0, 0, 0, 0, 0xbb];

fn v4(s: &str) -> Ipv4Addr {
    s.parse().unwrap()
}

fn v6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

fn built(f: impl FnOnce(&mut [u8]) -> Option<usize>) -> Vec<u8> {
    let mut out = [0u8; 1600];
    let n = f(&mut out).unwrap();
    out[..n].to_vec()
}

#[test]
fn addresses_derived_from_others() {
    assert_eq!(solicited_node(v6("2001:db8::1:2:3")), v6("ff02::1:ff02:3"));
    assert_eq!(
        solicited_node(v6("fe80::21b:21ff:fe3a:4f10")),
        v6("ff02::1:ff3a:4f10")
    );
    assert_eq!(
        multicast_mac(v6("ff02::1:ff3a:4f10")),
        [0x33, 0x33, 0xff, 0x3a, 0x4f, 0x10]
    );
    assert_eq!(multicast_mac(v6("ff02::1")), [0x33, 0x33, 0, 0, 0, 1]);
    // RFC 4291 appendix A: the U/L bit flips.
    assert_eq!(
        link_local([0x00, 0x1b, 0x21, 0x3a, 0x4f, 0x10]),
        v6("fe80::21b:21ff:fe3a:4f10")
    );
    assert_eq!(link_local(MAC), v6("fe80::5054:ff:fe12:3456"));
    assert_eq!(link_local([0x02, 0, 0, 0, 0, 1]), v6("fe80::ff:fe00:1"));
}

#[test]
fn arp_request_layout() {
    let f = built(|o| build_arp_request(o, MAC, v4("10.0.0.1"), v4("10.0.0.2"), None));
    #[rustfmt::skip]
    let want: [u8; 42] = [
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff,  // to everyone
        0x52, 0x54, 0x00, 0x12, 0x34, 0x56,  // from MAC
        0x08, 0x06,                          // ARP
        0x00, 0x01, 0x08, 0x00, 6, 4,        // Ethernet, IPv4, hlen, plen
        0x00, 0x01,                          // request
        0x52, 0x54, 0x00, 0x12, 0x34, 0x56,  // sender MAC
        10, 0, 0, 1,                         // sender IP
        0, 0, 0, 0, 0, 0,                    // target MAC unknown
        10, 0, 0, 2,                         // target IP
    ];
    assert_eq!(f.len(), 60);
    assert_eq!(&f[..42], &want);
    assert!(f[42..].iter().all(|&b| b == 0));
    // The test builder agrees.
    let spec = FrameSpec {
        dst_mac: [0xff; 6],
        src_mac: MAC,
        ..FrameSpec::default()
    };
    assert_eq!(f, build::arp_request(&spec, v4("10.0.0.1"), v4("10.0.0.2")));

    // A unicast re-probe differs in the Ethernet destination only.
    let g = built(|o| build_arp_request(o, MAC, v4("10.0.0.1"), v4("10.0.0.2"), Some(PEER)));
    assert_eq!(&g[..6], &PEER);
    assert_eq!(&g[6..], &f[6..]);

    let mut small = [0u8; 59];
    assert_eq!(
        build_arp_request(&mut small, MAC, v4("10.0.0.1"), v4("10.0.0.2"), None),
        None
    );
}

#[test]
fn arp_round_trips() {
    let (a, b) = (v4("10.0.0.1"), v4("10.0.0.2"));
    let f = built(|o| build_arp_request(o, MAC, a, b, None));
    let req = NeighMsg::ArpRequest {
        sender_ip: a,
        sender_mac: MAC,
        target_ip: b,
    };
    assert_eq!(parse_arp(&f), Some(req));
    // Gratuitous.
    let g = built(|o| build_arp_request(o, MAC, a, a, None));
    assert!(
        matches!(parse_arp(&g), Some(NeighMsg::ArpRequest { sender_ip, target_ip, .. }) if sender_ip == target_ip)
    );
    // Tagged, and the reply the data path makes of it.
    for vlans in [
        vec![],
        vec![VlanTag::dot1q(7)],
        vec![VlanTag::dot1ad(1), VlanTag::dot1q(2)],
    ] {
        let spec = FrameSpec {
            src_mac: MAC,
            vlans,
            ..FrameSpec::default()
        };
        let mut f = build::arp_request(&spec, a, b);
        assert_eq!(parse_arp(&f), Some(req));
        assert!(arp_reply_in_place(&mut f, PEER, |ip| ip == u32::from(b)));
        assert_eq!(
            parse_arp(&f),
            Some(NeighMsg::ArpReply {
                sender_ip: b,
                sender_mac: PEER,
                target_ip: a,
            })
        );
    }
}

#[test]
fn arp_that_is_not_ethernet_ipv4_is_refused() {
    let f = built(|o| build_arp_request(o, MAC, v4("10.0.0.1"), v4("10.0.0.2"), None));
    // htype, ptype, hlen, plen, op.
    for (at, v) in [(15, 6), (16, 0x86), (18, 8), (19, 16), (21, 0), (21, 3)] {
        let mut g = f.clone();
        g[at] = v;
        assert_eq!(parse_arp(&g), None, "byte {at} = {v}");
    }
    // Truncated, another EtherType, three tags.
    assert_eq!(parse_arp(&f[..41]), None);
    assert!(parse_arp(&f[..42]).is_some());
    let mut g = f.clone();
    g[13] = 0x00;
    assert_eq!(parse_arp(&g), None);
    let spec = FrameSpec {
        vlans: vec![VlanTag::dot1q(1); 3],
        ..FrameSpec::default()
    };
    assert_eq!(
        parse_arp(&build::arp_request(&spec, v4("1.1.1.1"), v4("2.2.2.2"))),
        None
    );
    assert_eq!(parse_arp(&[]), None);
}

/// Checks the IPv6 side of a built ND frame: it parses, hop limit 255, checksum.
fn check_nd_frame(f: &[u8]) -> Parsed {
    let p = parse(f).unwrap();
    assert_eq!(
        (p.proto, p.ttl, p.l3_off, p.l4_off),
        (ipproto::ICMPV6, 255, 14, 54)
    );
    let end = 14 + usize::from(p.l3_len);
    assert_eq!(
        csum::l4_checksum_v6(&p.src, &p.dst, ipproto::ICMPV6, &f[54..end]),
        0
    );
    assert_eq!(&f[12..14], &[0x86, 0xdd]);
    assert_eq!(&f[6..12], &MAC);
    p
}

#[test]
fn ns_layout_and_round_trip() {
    let src = link_local(MAC);
    let target = v6("2001:db8::2:3");
    let f = built(|o| build_ns(o, MAC, src, target, None));
    assert_eq!(f.len(), 14 + 40 + 32);
    let p = check_nd_frame(&f);
    assert_eq!(Ipv6Addr::from(p.dst), v6("ff02::1:ff02:3"));
    assert_eq!(&f[..6], &[0x33, 0x33, 0xff, 0x02, 0, 3]);
    assert_eq!(&f[54..56], &[135, 0]);
    assert_eq!(&f[56 + 2..62], &[0; 4], "reserved");
    assert_eq!(&f[62..78], &target.octets());
    assert_eq!(&f[78..80], &[1, 1], "source link-layer option");
    assert_eq!(&f[80..86], &MAC);
    let ns = NeighMsg::Solicitation {
        src,
        target,
        sll: Some(MAC),
    };
    assert_eq!(parse_nd(&f, &p), Some(ns));

    // Unicast: to the target itself at the MAC we know.
    let g = built(|o| build_ns(o, MAC, src, target, Some(PEER)));
    let q = check_nd_frame(&g);
    assert_eq!((&g[..6], Ipv6Addr::from(q.dst)), (&PEER[..], target));
    assert_eq!(parse_nd(&g, &q), Some(ns));

    // Duplicate address detection: from ::, no link-layer option.
    let d = built(|o| build_ns(o, MAC, Ipv6Addr::UNSPECIFIED, target, None));
    assert_eq!(d.len(), 14 + 40 + 24);
    let q = check_nd_frame(&d);
    assert_eq!(
        parse_nd(&d, &q),
        Some(NeighMsg::Solicitation {
            src: Ipv6Addr::UNSPECIFIED,
            target,
            sll: None,
        })
    );

    let mut out = [0u8; 85];
    assert_eq!(build_ns(&mut out, MAC, src, target, None), None);
    let mut out = [0u8; 86];
    assert_eq!(build_ns(&mut out, MAC, src, v6("ff02::1"), None), None);
}

#[test]
fn the_data_path_answer_to_our_ns_parses_as_an_advertisement() {
    let target = v6("2001:db8::2:3");
    let mut f = built(|o| build_ns(o, MAC, link_local(MAC), target, None));
    let p = parse(&f).unwrap();
    assert!(nd_reply_in_place(&mut f, &p, PEER, |a| a == u128::from(target)));
    let q = parse(&f).unwrap();
    assert_eq!(
        parse_nd(&f, &q),
        Some(NeighMsg::Advertisement {
            target,
            tll: Some(PEER),
            router: true,
            solicited: true,
            override_flag: true,
        })
    );
}

fn nd_spec(hop_limit: u8) -> FrameSpec {
    FrameSpec {
        src_mac: PEER,
        dst_mac: MAC,
        ttl: hop_limit,
        ..FrameSpec::default()
    }
}

/// NS / NA body after the checksum: 4 bytes (flags / reserved), target, options.
fn nd_body(first: u8, target: Ipv6Addr, opts: &[u8]) -> Vec<u8> {
    let mut b = vec![first, 0, 0, 0];
    b.extend_from_slice(&target.octets());
    b.extend_from_slice(opts);
    b
}

fn ll_opt(ty: u8, mac: [u8; 6]) -> Vec<u8> {
    [&[ty, 1][..], &mac].concat()
}

fn nd(spec: &FrameSpec, src: &str, dst: &str, ty: u8, code: u8, body: &[u8]) -> Option<NeighMsg> {
    let f = build::icmp6(spec, v6(src), v6(dst), ty, code, body);
    parse_nd(&f, &parse(&f).unwrap())
}

#[test]
fn advertisements_and_router_solicitations_parse() {
    let s = nd_spec(255);
    let t = v6("2001:db8::7");
    for (flags, (r, so, o)) in [
        (0xe0, (true, true, true)),
        (0x20, (false, false, true)),
        (0x40, (false, true, false)),
        (0x80, (true, false, false)),
        (0x1f, (false, false, false)),
    ] {
        let body = nd_body(flags, t, &ll_opt(2, PEER));
        assert_eq!(
            nd(&s, "2001:db8::7", "2001:db8::1", 136, 0, &body),
            Some(NeighMsg::Advertisement {
                target: t,
                tll: Some(PEER),
                router: r,
                solicited: so,
                override_flag: o,
            })
        );
    }
    // Unsolicited to all nodes, without the option.
    let body = nd_body(0x20, t, &[]);
    assert!(matches!(
        nd(&s, "fe80::1", "ff02::1", 136, 0, &body),
        Some(NeighMsg::Advertisement { tll: None, .. })
    ));
    // Unknown options are skipped; the first link-layer option counts.
    let opts = [&[9, 2][..], &[0; 14], &ll_opt(2, PEER), &ll_opt(2, MAC)].concat();
    assert!(matches!(
        nd(&s, "fe80::1", "fe80::2", 136, 0, &nd_body(0, t, &opts)),
        Some(NeighMsg::Advertisement {
            tll: Some(PEER),
            ..
        })
    ));

    let rs = |src, opts: &[u8]| nd(&s, src, "ff02::2", 133, 0, &[&[0; 4][..], opts].concat());
    assert_eq!(
        rs("fe80::1", &ll_opt(1, PEER)),
        Some(NeighMsg::RouterSolicitation {
            src: v6("fe80::1"),
            sll: Some(PEER),
        })
    );
    assert_eq!(
        rs("::", &[]),
        Some(NeighMsg::RouterSolicitation {
            src: Ipv6Addr::UNSPECIFIED,
            sll: None,
        })
    );
    assert_eq!(rs("::", &ll_opt(1, PEER)), None, "SLL from ::");
    assert_eq!(
        rs("fe80::1", &[1, 0, 0, 0, 0, 0, 0, 0]),
        None,
        "zero length"
    );
}

#[test]
fn every_rfc_4861_validity_check() {
    let t = v6("2001:db8::7");
    let good = nd_body(0, t, &ll_opt(1, PEER));
    let (src, dst) = ("fe80::1", "ff02::1:ff00:7");
    assert!(nd(&nd_spec(255), src, dst, 135, 0, &good).is_some());

    // Hop limit below 255: not from the link.
    for hl in [0, 1, 64, 254] {
        assert_eq!(
            nd(&nd_spec(hl), src, dst, 135, 0, &good),
            None,
            "hop limit {hl}"
        );
    }
    let s = nd_spec(255);
    // Code not 0.
    assert_eq!(nd(&s, src, dst, 135, 1, &good), None);
    // Bad checksum (every byte of it).
    let f = build::icmp6(&s, v6(src), v6(dst), 135, 0, &good);
    for at in [56, 57] {
        let mut g = f.clone();
        g[at] ^= 0x10;
        assert_eq!(parse_nd(&g, &parse(&g).unwrap()), None);
    }
    // ...and a changed pseudo-header (the destination address).
    let mut g = f.clone();
    g[53] ^= 1;
    assert_eq!(parse_nd(&g, &parse(&g).unwrap()), None);
    // Shorter than 24 bytes (NS / NA).
    for ty in [135, 136] {
        assert_eq!(nd(&s, src, dst, ty, 0, &good[..16]), None, "type {ty}");
        assert_eq!(nd(&s, src, dst, ty, 0, &good[..19]), None, "type {ty}");
    }
    // Zero-length option, option past the end, a stray trailing byte, a
    // link-layer option not of Ethernet size.
    for opts in [
        vec![1, 0, 0, 0, 0, 0, 0, 0],
        vec![14, 0, 0, 0, 0, 0, 0, 0],
        vec![1, 2, 1, 2, 3, 4, 5, 6],
        [&ll_opt(1, PEER)[..], &[0]].concat(),
        [&[1, 2][..], &[0; 14]].concat(),
    ] {
        assert_eq!(
            nd(&s, src, dst, 135, 0, &nd_body(0, t, &opts)),
            None,
            "{opts:?}"
        );
    }
    // Multicast target.
    for ty in [135, 136] {
        let body = nd_body(0, v6("ff02::1"), &[]);
        assert_eq!(nd(&s, src, dst, ty, 0, &body), None);
    }
    // DAD probe with a link-layer option, or not to the solicited-node group.
    assert_eq!(nd(&s, "::", dst, 135, 0, &good), None);
    assert_eq!(nd(&s, "::", "ff02::1", 135, 0, &nd_body(0, t, &[])), None);
    // Solicited advertisement to a multicast address.
    assert_eq!(nd(&s, src, "ff02::1", 136, 0, &nd_body(0x40, t, &[])), None);
    // Fragmented.
    let frag = FrameSpec {
        ipv6_ext: vec![Ext6::Fragment {
            offset: 0,
            more: true,
            id: 1,
        }],
        ..nd_spec(255)
    };
    assert_eq!(nd(&frag, src, dst, 135, 0, &good), None);
    // Not neighbour discovery: echo request, redirect, router advertisement.
    for ty in [128, 134, 137] {
        assert_eq!(nd(&s, src, dst, ty, 0, &good), None, "type {ty}");
    }
    // Not ICMPv6.
    let f = build::udp6(&s, v6(src), v6(dst), 1, 2, &good);
    assert_eq!(parse_nd(&f, &parse(&f).unwrap()), None);
    let f = build::icmp4_echo(&s, v4("10.0.0.1"), v4("10.0.0.2"), 1, 1, &good);
    assert_eq!(parse_nd(&f, &parse(&f).unwrap()), None);
}

#[test]
fn ra_layout() {
    let src = link_local(MAC);
    let prefixes = [(v6("2001:db8:1::"), 64), (v6("2001:db8:2:3::ffff"), 48)];
    let ra = RaParams {
        hop_limit: 64,
        lifetime_s: 1800,
        mtu: Some(1500),
        prefixes: &prefixes,
        valid_s: 86400,
        preferred_s: 14400,
    };
    let all = v6("ff02::1");
    let f = built(|o| build_ra(o, MAC, src, all, None, &ra));
    assert_eq!(f.len(), 14 + 40 + 16 + 8 + 8 + 2 * 32);
    let p = check_nd_frame(&f);
    assert_eq!(&f[..6], &[0x33, 0x33, 0, 0, 0, 1]);
    assert_eq!((Ipv6Addr::from(p.src), Ipv6Addr::from(p.dst)), (src, all));
    let m = &f[54..];
    #[rustfmt::skip]
    let head: [u8; 16] = [
        134, 0, m[2], m[3],   // type, code, checksum
        64, 0, 0x07, 0x08,    // cur hop limit, M/O clear, lifetime 1800
        0, 0, 0, 0,           // reachable time
        0, 0, 0, 0,           // retrans timer
    ];
    assert_eq!(&m[..16], &head);
    assert_eq!(&m[16..24], &[&[1, 1][..], &MAC].concat()[..]);
    assert_eq!(&m[24..32], &[5, 1, 0, 0, 0, 0, 0x05, 0xdc]);
    #[rustfmt::skip]
    let pi: [u8; 16] = [
        3, 4, 64, 0xc0,             // type, length, prefix length, L|A
        0, 1, 0x51, 0x80,           // valid 86400
        0, 0, 0x38, 0x40,           // preferred 14400
        0, 0, 0, 0,                 // reserved
    ];
    assert_eq!(&m[32..48], &pi);
    assert_eq!(&m[48..64], &v6("2001:db8:1::").octets());
    assert_eq!(&m[64..67], &[3, 4, 48]);
    assert_eq!(&m[80..96], &v6("2001:db8:2::").octets(), "masked to /48");

    // No MTU option, no prefixes.
    let bare = RaParams {
        mtu: None,
        prefixes: &[],
        ..ra
    };
    let g = built(|o| build_ra(o, MAC, src, all, None, &bare));
    assert_eq!(g.len(), 14 + 40 + 16 + 8);
    check_nd_frame(&g);
    // /0 and /128.
    let edge = [(v6("2001:db8::1"), 0), (v6("2001:db8::1"), 128)];
    let g = built(|o| {
        build_ra(
            o,
            MAC,
            src,
            all,
            None,
            &RaParams {
                prefixes: &edge,
                ..ra
            },
        )
    });
    assert_eq!(&g[54 + 48..][..16], &[0; 16]);
    assert_eq!(&g[54 + 80..][..16], &v6("2001:db8::1").octets());

    // Unicast to a solicitor needs its MAC.
    let host = v6("fe80::99");
    let g = built(|o| build_ra(o, MAC, src, host, Some(PEER), &ra));
    let q = check_nd_frame(&g);
    assert_eq!((&g[..6], Ipv6Addr::from(q.dst)), (&PEER[..], host));
    let mut out = [0u8; 256];
    assert_eq!(build_ra(&mut out, MAC, src, host, None, &ra), None);

    // What hosts would discard is not built.
    let global = v6("2001:db8::1");
    assert_eq!(build_ra(&mut out, MAC, global, all, None, &ra), None);
    let bad_len = [(v6("2001:db8::"), 129)];
    let r = RaParams {
        prefixes: &bad_len,
        ..ra
    };
    assert_eq!(build_ra(&mut out, MAC, src, all, None, &r), None);
    let r = RaParams {
        preferred_s: 86401,
        ..ra
    };
    assert_eq!(build_ra(&mut out, MAC, src, all, None, &r), None);
    // Too small a buffer.
    assert_eq!(
        build_ra(&mut out[..f.len() - 1], MAC, src, all, None, &ra),
        None
    );
    assert_eq!(
        build_ra(&mut out[..f.len()], MAC, src, all, None, &ra),
        Some(f.len())
    );
}

/// Valid neighbour frames, the seeds of the mutation test.
fn corpus() -> Vec<Vec<u8>> {
    let t = v6("2001:db8::7");
    let s = nd_spec(255);
    let tagged = FrameSpec {
        vlans: vec![VlanTag::dot1q(3)],
        ..nd_spec(255)
    };
    let ra = RaParams {
        hop_limit: 64,
        lifetime_s: 1800,
        mtu: Some(1500),
        prefixes: &[(Ipv6Addr::UNSPECIFIED, 64)],
        valid_s: 10,
        preferred_s: 5,
    };
    vec![
        built(|o| build_arp_request(o, MAC, v4("10.0.0.1"), v4("10.0.0.2"), None)),
        build::arp_request(&tagged, v4("10.0.0.1"), v4("10.0.0.2")),
        built(|o| build_ns(o, MAC, link_local(MAC), t, None)),
        built(|o| build_ns(o, MAC, Ipv6Addr::UNSPECIFIED, t, None)),
        build::icmp6(
            &tagged,
            t,
            v6("fe80::1"),
            136,
            0,
            &nd_body(0x60, t, &ll_opt(2, PEER)),
        ),
        build::icmp6(
            &s,
            v6("fe80::1"),
            v6("ff02::2"),
            133,
            0,
            &[&[0; 4][..], &ll_opt(1, PEER)].concat(),
        ),
        built(|o| build_ra(o, MAC, link_local(MAC), v6("ff02::1"), None, &ra)),
    ]
}

/// Both parsers on `f`; what `parse_nd` accepts satisfies its own checks.
fn exercise(f: &[u8]) -> Result<(), TestCaseError> {
    let _ = parse_arp(f);
    if let Ok(p) = parse(f) {
        if parse_nd(f, &p).is_some() {
            prop_assert_eq!(p.ttl, 255);
            prop_assert_eq!(p.proto, ipproto::ICMPV6);
            prop_assert!(!p.is_fragment());
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(crate::pkt::proptest_config(5_000))]

    #[test]
    fn random_frames_never_panic(f in proptest::collection::vec(any::<u8>(), 0..160)) {
        exercise(&f)?;
    }

    #[test]
    fn mutated_frames_never_panic(
        seed in 0usize..7,
        sets in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..6),
        cut in proptest::option::weighted(0.3, any::<usize>()),
        l4_off in any::<u16>(),
        l3_len in any::<u16>(),
    ) {
        let orig = corpus().swap_remove(seed);
        let before = parse(&orig);
        let mut f = orig;
        for (i, v) in sets {
            let at = i % f.len();
            f[at] = v;
        }
        if let Some(n) = cut {
            f.truncate(n % (f.len() + 1));
        }
        exercise(&f)?;
        // With a parse that does not fit the frame.
        if let Ok(p) = before {
            let _ = parse_nd(&f, &p);
            let _ = parse_nd(&f, &Parsed { l4_off, l3_len, ..p });
        }
    }

    #[test]
    fn built_messages_parse_back(
        mac in any::<[u8; 6]>(),
        sender in any::<u32>(),
        target4 in any::<u32>(),
        src in any::<u128>(),
        target in any::<u128>(),
        unicast in proptest::option::of(any::<[u8; 6]>()),
    ) {
        let mut out = [0u8; 128];
        let n = build_arp_request(&mut out, mac, sender.into(), target4.into(), unicast);
        prop_assert_eq!(n, Some(60));
        prop_assert_eq!(
            parse_arp(&out[..60]),
            Some(NeighMsg::ArpRequest {
                sender_ip: sender.into(),
                sender_mac: mac,
                target_ip: target4.into(),
            })
        );
        let (src, target) = (Ipv6Addr::from(src), Ipv6Addr::from(target));
        let n = build_ns(&mut out, mac, src, target, unicast);
        if target.is_multicast() || (src.is_unspecified() && unicast.is_some()) {
            prop_assert_eq!(n, None);
            return Ok(());
        }
        let f = &out[..n.unwrap()];
        let p = parse(f);
        prop_assert!(p.is_ok());
        let sll = (!src.is_unspecified()).then_some(mac);
        prop_assert_eq!(
            parse_nd(f, &p.unwrap()),
            Some(NeighMsg::Solicitation { src, target, sll })
        );
    }
}
