//! Rewrite tests: TTL / hop limit, checksum validity, MACs, untouched frames on error,
//! DSCP, and the TTL property test against full recomputation.

use super::*;
use crate::pkt::build::{self, Ext6, FrameSpec, VlanTag};
use crate::pkt::csum;
use crate::pkt::parse::parse;
use proptest::prelude::*;
use std::net::{Ipv4Addr, Ipv6Addr};

const DMAC: [u8; 6] = [0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0x01];
const SMAC: [u8; 6] = [0x02, 0x11, 0x22, 0x33, 0x44, 0x55];
const S4: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const D4: Ipv4Addr = Ipv4Addr::new(10, 9, 8, 7);

fn s6() -> Ipv6Addr {
    "fd00::1".parse().unwrap()
}
fn d6() -> Ipv6Addr {
    "fd00:1::2".parse().unwrap()
}

fn with_ttl(ttl: u8) -> FrameSpec {
    FrameSpec {
        ttl,
        ..FrameSpec::default()
    }
}

/// Every byte except `changed` ranges is equal.
fn same_except(a: &[u8], b: &[u8], changed: &[std::ops::Range<usize>]) {
    assert_eq!(a.len(), b.len());
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        if !changed.iter().any(|r| r.contains(&i)) {
            assert_eq!(x, y, "byte {i} changed");
        }
    }
}

#[test]
fn ipv4_ttl_64_to_63_with_valid_checksum_and_macs() {
    let orig = build::udp4(&with_ttl(64), S4, D4, 1000, 53, b"hello");
    let p = parse(&orig).unwrap();
    let mut f = orig.clone();
    forward_rewrite(&mut f, &p, DMAC, SMAC).unwrap();
    assert_eq!(f[14 + 8], 63);
    assert!(csum::verify_ipv4_header(&f[14..34]));
    assert_eq!(
        u16::from_be_bytes([f[24], f[25]]),
        csum::ipv4_header_checksum(&f[14..34])
    );
    assert_eq!(&f[..6], &DMAC);
    assert_eq!(&f[6..12], &SMAC);
    same_except(&orig, &f, &[0..12, 22..23, 24..26]);
    // The result parses to the same packet, one hop older.
    let q = parse(&f).unwrap();
    assert_eq!(q, Parsed { ttl: 63, ..p });
    assert!(ipv4_checksum_ok(&f, &q));
}

#[test]
fn ipv4_ttl_expired_leaves_frame_untouched() {
    for ttl in [0, 1] {
        let orig = build::tcp4(&with_ttl(ttl), S4, D4, 1, 2, 0, b"");
        let p = parse(&orig).unwrap();
        let mut f = orig.clone();
        assert_eq!(
            forward_rewrite(&mut f, &p, DMAC, SMAC),
            Err(RewriteError::TtlExpired)
        );
        assert_eq!(f, orig);
    }
    // TTL 2 is still forwarded, to 1.
    let mut f = build::tcp4(&with_ttl(2), S4, D4, 1, 2, 0, b"");
    let p = parse(&f).unwrap();
    forward_rewrite(&mut f, &p, DMAC, SMAC).unwrap();
    assert_eq!(f[22], 1);
    assert!(csum::verify_ipv4_header(&f[14..34]));
}

#[test]
fn ipv6_hop_limit() {
    let spec = FrameSpec {
        vlans: vec![VlanTag::dot1ad(1), VlanTag::dot1q(2)],
        ipv6_ext: vec![Ext6::HopByHop { len8: 0 }],
        ..with_ttl(64)
    };
    let orig = build::udp6(&spec, s6(), d6(), 1, 2, b"abc");
    let p = parse(&orig).unwrap();
    let mut f = orig.clone();
    forward_rewrite(&mut f, &p, DMAC, SMAC).unwrap();
    let hl = 22 + 7;
    assert_eq!(f[hl], 63);
    assert_eq!(&f[..6], &DMAC);
    assert_eq!(&f[6..12], &SMAC);
    same_except(&orig, &f, &[0..12, hl..hl + 1]);
    // The UDP checksum does not cover the hop limit: still valid.
    let l4 = usize::from(p.l4_off);
    assert_eq!(csum::l4_checksum_v6(&p.src, &p.dst, 17, &f[l4..]), 0);

    for hl in [0, 1] {
        let orig = build::icmp6_echo(&with_ttl(hl), s6(), d6(), 1, 1, b"");
        let p = parse(&orig).unwrap();
        let mut f = orig.clone();
        assert_eq!(
            forward_rewrite(&mut f, &p, DMAC, SMAC),
            Err(RewriteError::TtlExpired)
        );
        assert_eq!(f, orig);
    }
}

#[test]
fn vlan_offsets_are_respected() {
    let spec = FrameSpec {
        vlans: vec![VlanTag::dot1q(42)],
        ipv4_options: vec![1; 4],
        ..with_ttl(9)
    };
    let orig = build::udp4(&spec, S4, D4, 1, 2, b"");
    let p = parse(&orig).unwrap();
    let mut f = orig.clone();
    forward_rewrite(&mut f, &p, DMAC, SMAC).unwrap();
    assert_eq!(f[18 + 8], 8);
    assert!(csum::verify_ipv4_header(&f[18..42]));
    same_except(&orig, &f, &[0..12, 26..27, 28..30]);
}

#[test]
fn mismatched_parse_result_is_refused_untouched() {
    let long = build::udp6(&FrameSpec::default(), s6(), d6(), 1, 2, &[0; 100]);
    let p = parse(&long).unwrap();
    let mut p_far = p;
    p_far.l3_off = 200;
    for len in [0, 5, 11, 12, 20] {
        let mut f = vec![0x33; len];
        assert_eq!(
            forward_rewrite(&mut f, &p_far, DMAC, SMAC),
            Err(RewriteError::FrameMismatch)
        );
        assert_eq!(f, vec![0x33; len]);
        set_dscp(&mut f, &p_far, 10);
        assert_eq!(f, vec![0x33; len]);
        assert!(!ipv4_checksum_ok(
            &f,
            &Parsed {
                kind: crate::pkt::L3Kind::V4,
                ..p_far
            }
        ));
    }
    assert_eq!(RewriteError::TtlExpired.to_string(), "ttl_expired");
}

#[test]
fn dscp_ipv4_keeps_ecn_and_checksum() {
    let spec = FrameSpec {
        dscp: 10,
        ecn: 2,
        ..FrameSpec::default()
    };
    let orig = build::tcp4(&spec, S4, D4, 1, 2, 0, b"");
    let p = parse(&orig).unwrap();
    for dscp in [0u8, 46, 63, 0xff] {
        let mut f = orig.clone();
        set_dscp(&mut f, &p, dscp);
        assert_eq!(f[15], ((dscp & 0x3f) << 2) | 2);
        assert!(csum::verify_ipv4_header(&f[14..34]));
        same_except(&orig, &f, &[15..16, 24..26]);
        assert_eq!(
            parse(&f).unwrap(),
            Parsed {
                dscp: dscp & 0x3f,
                ..p
            }
        );
    }
}

#[test]
fn dscp_ipv6_keeps_version_ecn_and_flow_label() {
    let spec = FrameSpec {
        dscp: 0x15,
        ecn: 1,
        flow_label: 0xfedcb,
        ..FrameSpec::default()
    };
    let orig = build::udp6(&spec, s6(), d6(), 1, 2, b"");
    let p = parse(&orig).unwrap();
    assert_eq!(p.dscp, 0x15);
    for dscp in [0u8, 0x2e, 0x3f] {
        let mut f = orig.clone();
        set_dscp(&mut f, &p, dscp);
        let vtf = u32::from_be_bytes([f[14], f[15], f[16], f[17]]);
        assert_eq!(vtf >> 28, 6);
        assert_eq!((vtf >> 22) & 0x3f, u32::from(dscp));
        assert_eq!((vtf >> 20) & 3, 1);
        assert_eq!(vtf & 0xf_ffff, 0xfedcb);
        same_except(&orig, &f, &[14..15, 15..16]);
        assert_eq!(parse(&f).unwrap().dscp, dscp);
    }
}

#[test]
fn checksum_ok_detects_corruption_and_rewrite_keeps_it_bad() {
    let orig = build::udp4(&FrameSpec::default(), S4, D4, 1, 2, b"");
    let p = parse(&orig).unwrap();
    assert!(ipv4_checksum_ok(&orig, &p));
    let mut bad = orig.clone();
    bad[14 + 12] ^= 0x40; // source address bit
    let pb = parse(&bad).unwrap();
    assert!(!ipv4_checksum_ok(&bad, &pb));
    forward_rewrite(&mut bad, &pb, DMAC, SMAC).unwrap();
    assert!(
        !ipv4_checksum_ok(&bad, &pb),
        "incremental update laundered a bad checksum"
    );
    let v6 = build::udp6(&FrameSpec::default(), s6(), d6(), 1, 2, b"");
    assert!(ipv4_checksum_ok(&v6, &parse(&v6).unwrap()));
}

/// Random IPv4 header fields and options, behind 0..=2 VLAN tags.
fn v4_frame() -> impl Strategy<Value = Vec<u8>> {
    (
        2u8..=255,
        any::<u8>(),
        any::<u16>(),
        any::<[u8; 4]>(),
        any::<[u8; 4]>(),
        any::<u8>(),
        proptest::collection::vec(any::<u8>(), 0..=40),
        0usize..=2,
        proptest::collection::vec(any::<u8>(), 0..64),
    )
        .prop_map(|(ttl, tos, id, s, d, proto, opts, tags, payload)| {
            let spec = FrameSpec {
                ttl,
                dscp: tos >> 2,
                ecn: tos & 3,
                ip_id: id,
                ipv4_options: opts,
                vlans: vec![VlanTag::dot1q(7); tags],
                ..FrameSpec::default()
            };
            build::ipv4(&spec, s.into(), d.into(), proto, &payload)
        })
}

proptest! {
    #![proptest_config(crate::pkt::proptest_config(1000))]

    /// The incrementally updated checksum after the TTL decrement equals a full
    /// recomputation over the rewritten header, for random headers.
    #[test]
    fn ttl_update_equals_full_recomputation(f in v4_frame(), dscp in any::<u8>()) {
        // Unknown protocols with random payload may still be ICMP/TCP/UDP headers that
        // are too short; only parsed frames are rewritten.
        let Ok(p) = parse(&f) else { return Ok(()) };
        let l3 = usize::from(p.l3_off);
        let ihl = usize::from(f[l3] & 0x0f) * 4;
        let mut g = f.clone();
        forward_rewrite(&mut g, &p, DMAC, SMAC).unwrap();
        let stored = u16::from_be_bytes([g[l3 + 10], g[l3 + 11]]);
        prop_assert_eq!(stored, csum::ipv4_header_checksum(&g[l3..l3 + ihl]));
        prop_assert_eq!(g[l3 + 8], p.ttl - 1);
        set_dscp(&mut g, &p, dscp);
        let stored = u16::from_be_bytes([g[l3 + 10], g[l3 + 11]]);
        prop_assert_eq!(stored, csum::ipv4_header_checksum(&g[l3..l3 + ihl]));
    }
}

/// A plain UDP, TCP or ESP frame of either family, any TTL, maybe padded.
fn plain_frame() -> impl Strategy<Value = Vec<u8>> {
    (
        any::<bool>(),
        0u8..3,
        any::<u8>(),
        any::<u8>(),
        0usize..1600,
        0usize..4,
    )
        .prop_map(|(v6, l4, ttl, tos, len, pad)| {
            let spec = FrameSpec {
                ttl,
                dscp: tos >> 2,
                ecn: tos & 3,
                ..FrameSpec::default()
            };
            let body = vec![7; len];
            let mut f = match (v6, l4) {
                (false, 0) => build::udp4(&spec, S4, D4, 1, 2, &body),
                (false, 1) => build::tcp4(&spec, S4, D4, 1, 2, 0x10, &body),
                (false, _) => build::ipv4(&spec, S4, D4, 50, &body),
                (true, 0) => build::udp6(&spec, s6(), d6(), 1, 2, &body),
                (true, 1) => build::tcp6(&spec, s6(), d6(), 1, 2, 0x10, &body),
                (true, _) => build::ipv6(&spec, s6(), d6(), 50, &body),
            };
            f.extend(std::iter::repeat_n(0, pad));
            f
        })
}

proptest! {
    #![proptest_config(crate::pkt::proptest_config(1000))]

    /// On the frames `plain_v4` / `plain_v6` accept, the plain rewrite is
    /// `forward_rewrite` with the MTU check: the same bytes, the packet's
    /// end; or None, the frame untouched, exactly when the TTL is spent or
    /// the packet is longer than the MTU.
    #[test]
    fn the_plain_rewrite_is_forward_rewrite(f in plain_frame(), mtu in 0u16..1600) {
        let p = parse(&f).unwrap();
        let eth = MacPair::new(DMAC, SMAC);
        let mut g = f.clone();
        let end = match p.kind {
            L3Kind::V4 => {
                prop_assert!(crate::pkt::plain_v4(&f, crate::pkt::NicCsum::UNCHECKED).is_some());
                forward_plain_v4(&mut g, mtu, eth)
            }
            L3Kind::V6 => {
                prop_assert!(crate::pkt::plain_v6(&f).is_some());
                forward_plain_v6(&mut g, mtu, eth)
            }
        };
        if p.ttl <= 1 || p.l3_len > mtu {
            prop_assert_eq!(end, None);
            prop_assert_eq!(g, f);
        } else {
            let mut h = f.clone();
            forward_rewrite(&mut h, &p, DMAC, SMAC).unwrap();
            prop_assert_eq!(end, Some(usize::from(p.l3_off) + usize::from(p.l3_len)));
            prop_assert_eq!(g, h);
        }
    }
}

#[test]
fn the_plain_rewrite_refuses_a_frame_shorter_than_its_headers() {
    let eth = MacPair::new(DMAC, SMAC);
    let f = build::udp4(&FrameSpec::default(), S4, D4, 1, 2, b"");
    let mut short = f[..33].to_vec();
    assert_eq!(forward_plain_v4(&mut short, 1500, eth), None);
    assert_eq!(short, f[..33]);
    let f = build::udp6(&FrameSpec::default(), s6(), d6(), 1, 2, b"");
    let mut short = f[..21].to_vec();
    assert_eq!(forward_plain_v6(&mut short, 1500, eth), None);
    assert_eq!(short, f[..21]);
}
