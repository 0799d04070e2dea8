//! `parse_plain_v4` and `parse_plain_v6` accept the common frames, refuse
//! everything else, and never disagree with the general parser (which
//! stays the reference).

use super::super::build::{self, FrameSpec, VlanTag};
use super::super::{flow_hash, ipproto, ipv4_checksum_ok, parse, Parsed};
use super::{parse_plain_v4, parse_plain_v6, plain_v4, plain_v6, PlainV4, PlainV6};
use proptest::prelude::*;
use std::net::{Ipv4Addr, Ipv6Addr};

fn plain(f: &[u8], nic: Option<bool>) -> Option<Parsed> {
    let mut p = Parsed::default();
    parse_plain_v4(f, nic.into(), &mut p).then_some(p)
}

/// What must hold for any frame: an accepted frame is one the general
/// parser accepts with the same result and whose checksum verifies (or
/// the NIC said so); a NIC-reported bad checksum is never accepted.
fn agrees(f: &[u8]) -> Result<bool, TestCaseError> {
    prop_assert!(plain(f, Some(false)).is_none());
    let mut accepted = false;
    for nic in [None, Some(true)] {
        if let Some(p) = plain(f, nic) {
            prop_assert_eq!(parse(f), Ok(p));
            if nic.is_none() {
                prop_assert!(ipv4_checksum_ok(f, &p));
            }
            // The tuple's hash from the frame's words, through the view
            // and through the view taken again, is the general one's.
            prop_assert_eq!(
                plain_v4(f, nic.into()).map(|h| h.flow_hash()),
                Some(flow_hash(&p))
            );
            prop_assert_eq!(
                PlainV4::again(f).map(|h| h.flow_hash()),
                Some(flow_hash(&p))
            );
            accepted = true;
        }
    }
    let mut p = Parsed::default();
    if parse_plain_v6(f, &mut p) {
        prop_assert!(!accepted, "a frame both IPv4 and IPv6");
        prop_assert_eq!(parse(f), Ok(p));
        prop_assert_eq!(plain_v6(f).map(|h| h.flow_hash()), Some(flow_hash(&p)));
        prop_assert_eq!(
            PlainV6::again(f).map(|h| h.flow_hash()),
            Some(flow_hash(&p))
        );
        accepted = true;
    }
    Ok(accepted)
}

fn s4() -> Ipv4Addr {
    Ipv4Addr::new(10, 0, 0, 1)
}

fn d4() -> Ipv4Addr {
    Ipv4Addr::new(192, 0, 2, 7)
}

#[test]
fn plain_udp_and_tcp_are_accepted_as_the_general_parser_reads_them() {
    let df = FrameSpec {
        dont_fragment: true,
        ttl: 1,
        dscp: 46,
        ..FrameSpec::default()
    };
    let frames = [
        build::udp4(&FrameSpec::default(), s4(), d4(), 1, 2, b""),
        build::udp4(&df, s4(), d4(), 53, 53, &[9; 1400]),
        build::tcp4(&FrameSpec::default(), s4(), d4(), 80, 1234, 0xfff, b""),
        build::tcp4(&df, s4(), d4(), 80, 1234, 0x12, &[1; 100]),
    ];
    for f in &frames {
        let p = plain(f, None).expect("a plain frame");
        assert_eq!(parse(f), Ok(p));
        assert_eq!(plain(f, Some(true)), Some(p));
    }
    // Ethernet padding after the IP packet is allowed (the worker trims it).
    let mut padded = frames[0].clone();
    padded.extend_from_slice(&[0; 10]);
    assert_eq!(plain(&padded, None), parse(&padded).ok());
}

#[test]
fn plain_ipv6_is_accepted_whatever_its_upper_layer_and_nothing_else() {
    let s6: Ipv6Addr = "2001:db8::1".parse().unwrap();
    let d6: Ipv6Addr = "2001:db8::2".parse().unwrap();
    let spec = FrameSpec {
        ttl: 1,
        dscp: 46,
        ..FrameSpec::default()
    };
    let v6 = |f: &[u8]| {
        let mut p = Parsed::default();
        parse_plain_v6(f, &mut p).then_some(p)
    };
    for f in [
        build::udp6(&spec, s6, d6, 1, 2, b""),
        build::udp6(&spec, s6, d6, 1, 2, &[3; 1400]),
        build::tcp6(&spec, s6, d6, 1, 2, 0xfff, b""),
        build::icmp6_echo(&spec, s6, d6, 1, 1, b""),
        build::ipv6(&spec, s6, d6, ipproto::ESP, &[9; 40]),
        build::ipv6(&spec, s6, d6, ipproto::ESP, b""),
        build::ipv6(
            &spec,
            s6,
            d6,
            ipproto::SCTP,
            &[1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0],
        ),
    ] {
        let p = v6(&f).expect("a plain frame");
        assert_eq!(parse(&f), Ok(p));
    }
    let hbh = FrameSpec {
        ipv6_ext: vec![super::super::build::Ext6::HopByHop { len8: 0 }],
        ..FrameSpec::default()
    };
    let vlan = FrameSpec {
        vlans: vec![VlanTag::dot1q(5)],
        ..FrameSpec::default()
    };
    for f in [
        build::udp6(&hbh, s6, d6, 1, 2, b""),
        build::udp6(&vlan, s6, d6, 1, 2, b""),
        build::udp4(&spec, s4(), d4(), 1, 2, b""),
        // No next header; the extension headers by number alone (the
        // general parser walks them).
        build::ipv6(&spec, s6, d6, ipproto::NONXT, &[0; 16]),
        build::ipv6(
            &spec,
            s6,
            d6,
            ipproto::AH,
            &[ipproto::UDP, 1, 0, 0, 0, 0, 0, 0],
        ),
        build::ipv6(
            &spec,
            s6,
            d6,
            ipproto::DSTOPTS,
            &[ipproto::UDP, 0, 0, 0, 0, 0, 0, 0],
        ),
        // ICMPv6 and SCTP shorter than what the general parser reads.
        build::ipv6(&spec, s6, d6, ipproto::ICMPV6, &[128, 0, 0, 0]),
        build::ipv6(&spec, s6, d6, ipproto::SCTP, &[1, 2, 3, 4, 0, 0, 0, 0]),
    ] {
        assert_eq!(v6(&f), None, "{f:02x?}");
    }
    // Payload length past the frame, or too short for the UDP header.
    let udp = build::udp6(&spec, s6, d6, 1, 2, b"");
    for payload in [9u16, 7] {
        let mut f = udp.clone();
        f[18..20].copy_from_slice(&payload.to_be_bytes());
        assert_eq!(v6(&f), None);
        assert!(parse(&f).is_err());
    }
    // TCP data offset below 5, or past the packet (by 4 bytes, or 8).
    let tcp = build::tcp6(&spec, s6, d6, 1, 2, 0x10, b"");
    for doff in [0x40, 0x60, 0x70] {
        let mut f = tcp.clone();
        f[14 + 40 + 12] = doff;
        assert_eq!(v6(&f), None);
        assert!(parse(&f).is_err());
    }
}

#[test]
fn everything_else_is_left_to_the_general_parser() {
    let v = FrameSpec {
        vlans: vec![VlanTag::dot1q(5)],
        ..FrameSpec::default()
    };
    let opts = FrameSpec {
        ipv4_options: vec![1, 1, 1, 0],
        ..FrameSpec::default()
    };
    let mf = FrameSpec {
        more_fragments: true,
        ..FrameSpec::default()
    };
    let off = FrameSpec {
        frag_offset: 8,
        ..FrameSpec::default()
    };
    let s6: Ipv6Addr = "2001:db8::1".parse().unwrap();
    let d6: Ipv6Addr = "2001:db8::2".parse().unwrap();
    let spec = FrameSpec::default();
    let refused = [
        build::udp4(&v, s4(), d4(), 1, 2, b""),
        build::udp4(&opts, s4(), d4(), 1, 2, b""),
        build::udp4(&mf, s4(), d4(), 1, 2, b""),
        build::udp4(&off, s4(), d4(), 1, 2, b""),
        build::udp6(&spec, s6, d6, 1, 2, b""),
        build::arp_request(&spec, s4(), d4()),
        // ICMP and SCTP shorter than what the general parser reads.
        build::ipv4(&spec, s4(), d4(), ipproto::ICMP, &[8, 0, 0, 0]),
        build::ipv4(&spec, s4(), d4(), ipproto::SCTP, &[1, 2, 3, 4, 0, 0, 0, 0]),
    ];
    for f in &refused {
        assert_eq!(plain(f, None), None, "{f:02x?}");
        assert_eq!(plain(f, Some(true)), None, "{f:02x?}");
    }
    // Any other upper layer is taken as the general parser reads it:
    // ICMP's type and code in the ports, SCTP's ports, none for GRE or ESP.
    for f in [
        build::icmp4_echo(&spec, s4(), d4(), 1, 1, b""),
        build::ipv4(&spec, s4(), d4(), ipproto::GRE, &[0; 30]),
        build::ipv4(&spec, s4(), d4(), ipproto::ESP, b""),
        build::ipv4(
            &spec,
            s4(),
            d4(),
            ipproto::SCTP,
            &[1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0],
        ),
    ] {
        let p = plain(&f, None).expect("a plain frame");
        assert_eq!(parse(&f), Ok(p));
    }

    let good = build::tcp4(&spec, s4(), d4(), 80, 1234, 0x10, b"");
    // A bad header checksum, unless the NIC vouches for it.
    let mut bad = good.clone();
    bad[24] ^= 1;
    assert_eq!(plain(&bad, None), None);
    assert!(plain(&bad, Some(true)).is_some());
    assert_eq!(plain(&good, Some(false)), None);
    // TCP data offset below 5, or past the packet (by 4 bytes, or 8).
    for doff in [0x40, 0x60, 0x70] {
        let mut f = good.clone();
        f[14 + 20 + 12] = doff;
        assert_eq!(plain(&f, Some(true)), None);
        assert!(parse(&f).is_err());
    }
    // Total length past the frame, or too short for the UDP header.
    let udp = build::udp4(&spec, s4(), d4(), 1, 2, b"");
    for total in [47u16, 27] {
        let mut f = udp.clone();
        f[16..18].copy_from_slice(&total.to_be_bytes());
        assert_eq!(plain(&f, Some(true)), None);
        assert!(parse(&f).is_err());
    }
    // Shorter than Ethernet + IPv4 + 20 bytes.
    assert_eq!(plain(&good[..53], Some(true)), None);
}

proptest! {
    #![proptest_config(super::super::proptest_config(2000))]

    /// Plain frames with any header values, then any byte of the first 54
    /// overwritten: whatever is accepted, the general parser reads the same.
    #[test]
    fn never_disagrees_with_the_general_parser(
        kind in 0u8..6,
        src in any::<u32>(),
        dst in any::<u32>(),
        ports in any::<(u16, u16)>(),
        flags in any::<u16>(),
        ttl in any::<u8>(),
        dscp in 0u8..64,
        df in any::<bool>(),
        payload in 0usize..64,
        v6 in any::<bool>(),
        sets in proptest::collection::vec((0usize..74, any::<u8>()), 0..3),
    ) {
        let spec = FrameSpec { ttl, dscp, dont_fragment: df, ..FrameSpec::default() };
        let (s, d) = (Ipv4Addr::from(src), Ipv4Addr::from(dst));
        let (s6, d6) = (Ipv6Addr::from(u128::from(src) << 64), Ipv6Addr::from(u128::from(dst)));
        let body = vec![0xa5; payload];
        let flags = flags & 0xfff;
        // Another upper layer: ICMP, ESP, SCTP or GRE, the body its header.
        let other = |proto: u8| {
            let proto = if proto == ipproto::ICMP && v6 { ipproto::ICMPV6 } else { proto };
            if v6 {
                build::ipv6(&spec, s6, d6, proto, &body)
            } else {
                build::ipv4(&spec, s, d, proto, &body)
            }
        };
        let mut f = match (v6, kind) {
            (false, 0) => build::tcp4(&spec, s, d, ports.0, ports.1, flags, &body),
            (false, 1) => build::udp4(&spec, s, d, ports.0, ports.1, &body),
            (true, 0) => build::tcp6(&spec, s6, d6, ports.0, ports.1, flags, &body),
            (true, 1) => build::udp6(&spec, s6, d6, ports.0, ports.1, &body),
            (_, 2) => other(ipproto::ICMP),
            (_, 3) => other(ipproto::ESP),
            (_, 4) => other(ipproto::SCTP),
            _ => other(ipproto::GRE),
        };
        let untouched = sets.is_empty();
        for (at, v) in sets {
            let at = at % f.len();
            f[at] = v;
        }
        let accepted = agrees(&f)?;
        // Untouched, every frame is plain but ICMP and SCTP bodies shorter
        // than what the general parser reads of them.
        let short = (kind == 2 && payload < 8) || (kind == 4 && payload < 12);
        prop_assert!(accepted || !untouched || short, "a plain frame was refused");
    }

    /// Random bytes behind an IPv4 or IPv6 Ethernet header.
    #[test]
    fn random_frames_agree(
        v6 in any::<bool>(),
        body in proptest::collection::vec(any::<u8>(), 0..120),
    ) {
        let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2];
        f.extend_from_slice(if v6 { &[0x86, 0xdd, 0x60] } else { &[0x08, 0x00, 0x45] });
        f.extend_from_slice(&body);
        agrees(&f)?;
    }
}
