//! Unit tests of the parser on byte arrays: every frame kind with exact field checks,
//! every error, truncation at every length.

use super::*;
use crate::pkt::build::{self, Ext6, FrameSpec, VlanTag};
use std::net::{Ipv4Addr, Ipv6Addr};

const S4: Ipv4Addr = Ipv4Addr::new(10, 1, 2, 3);
const D4: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 200);

fn s6() -> Ipv6Addr {
    "2001:db8:1::1".parse().unwrap()
}
fn d6() -> Ipv6Addr {
    "2001:db8:ffff::42".parse().unwrap()
}

fn a4(a: Ipv4Addr) -> [u8; 16] {
    let mut r = [0; 16];
    r[..4].copy_from_slice(&a.octets());
    r
}

/// No Ethernet padding: the IP packet runs to the end of the frame.
fn bare() -> FrameSpec {
    FrameSpec {
        min_len: 0,
        ..FrameSpec::default()
    }
}

fn v4(l3_off: u16, l4_off: u16, proto: u8, sport: u16, dport: u16, l3_len: u16) -> Parsed {
    Parsed {
        l3_off,
        l4_off,
        outer_vlan: None,
        inner_vlan: None,
        kind: L3Kind::V4,
        proto,
        src: a4(S4),
        dst: a4(D4),
        ttl: 64,
        dscp: 0,
        sport,
        dport,
        tcp_flags: 0,
        frag: Fragment::None,
        l3_len,
    }
}

fn v6(l3_off: u16, l4_off: u16, proto: u8, sport: u16, dport: u16, l3_len: u16) -> Parsed {
    Parsed {
        kind: L3Kind::V6,
        src: s6().octets(),
        dst: d6().octets(),
        ..v4(l3_off, l4_off, proto, sport, dport, l3_len)
    }
}

/// The example header from the IPv4 checksum literature (checksum 0xb861), followed by
/// a hand-written UDP header: an oracle independent of the builders.
fn handmade_udp4() -> Vec<u8> {
    let mut f = vec![
        0x00, 0x11, 0x22, 0x33, 0x44, 0x55, // dst MAC
        0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, // src MAC
        0x08, 0x00, // IPv4
        0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, //
        0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7, // 192.168.0.1 -> 192.168.0.199
        0x00, 0x35, 0xe7, 0xa1, 0x00, 0x5f, 0x00, 0x00, // UDP 53 -> 59297, len 95
    ];
    f.resize(14 + 0x73, 0);
    f
}

#[test]
fn handmade_ipv4_udp() {
    let f = handmade_udp4();
    let p = parse(&f).unwrap();
    let mut src = [0; 16];
    src[..4].copy_from_slice(&[192, 168, 0, 1]);
    let mut dst = [0; 16];
    dst[..4].copy_from_slice(&[192, 168, 0, 199]);
    assert_eq!(
        p,
        Parsed {
            l3_off: 14,
            l4_off: 34,
            outer_vlan: None,
            inner_vlan: None,
            kind: L3Kind::V4,
            proto: 17,
            src,
            dst,
            ttl: 64,
            dscp: 0,
            sport: 53,
            dport: 59297,
            tcp_flags: 0,
            frag: Fragment::None,
            l3_len: 0x73,
        }
    );
    assert_eq!(p.src_v4(), 0xc0a8_0001);
    assert_eq!(p.dst_v4(), 0xc0a8_00c7);
    assert_eq!(
        p.dst_addr(),
        "192.168.0.199".parse::<std::net::IpAddr>().unwrap()
    );
    assert_eq!(ether_type(&f), Some(ethertype::IPV4));
}

#[test]
fn udp4_tcp4_icmp4() {
    let f = build::udp4(&bare(), S4, D4, 4000, 53, b"hello");
    assert_eq!(parse(&f).unwrap(), v4(14, 34, 17, 4000, 53, 33));

    let spec = FrameSpec {
        dscp: 46,
        ecn: 1,
        ttl: 7,
        ..bare()
    };
    let f = build::tcp4(
        &spec,
        S4,
        D4,
        33000,
        443,
        tcp_flags::SYN | tcp_flags::ACK,
        b"",
    );
    let want = Parsed {
        dscp: 46,
        ttl: 7,
        tcp_flags: 0x12,
        ..v4(14, 34, 6, 33000, 443, 40)
    };
    assert_eq!(parse(&f).unwrap(), want);

    let f = build::icmp4_echo(&bare(), S4, D4, 1, 2, b"ping");
    // ICMP: type in sport, code in dport.
    assert_eq!(parse(&f).unwrap(), v4(14, 34, 1, 8, 0, 32));
}

#[test]
fn tcp_flags_keep_ae_and_reserved_bits() {
    // AE/NS (bit 8) and the reserved bits share byte 12 with the data
    // offset: the parser keeps the 12-bit field and drops only the offset.
    for flags in [
        tcp_flags::NS | tcp_flags::SYN,
        tcp_flags::AE,
        0xE00,
        tcp_flags::ALL,
    ] {
        let f = build::tcp4(&bare(), S4, D4, 1, 2, flags, b"");
        assert_eq!(f[14 + 20 + 12] >> 4, 5, "data offset intact");
        assert_eq!(parse(&f).unwrap().tcp_flags, flags);
        let f = build::tcp6(&bare(), s6(), d6(), 1, 2, flags, b"");
        assert_eq!(parse(&f).unwrap().tcp_flags, flags);
    }
}

#[test]
fn udp6_tcp6_icmp6() {
    let f = build::udp6(&bare(), s6(), d6(), 4000, 53, b"hello");
    let p = parse(&f).unwrap();
    assert_eq!(p, v6(14, 54, 17, 4000, 53, 53));
    assert_eq!(p.dst_v6(), u128::from(d6()));
    assert_eq!(p.src_addr(), std::net::IpAddr::V6(s6()));

    let spec = FrameSpec {
        dscp: 0x2e,
        ecn: 3,
        ttl: 255,
        flow_label: 0xabcde,
        ..bare()
    };
    let f = build::tcp6(&spec, s6(), d6(), 1, 2, tcp_flags::FIN, b"xy");
    let want = Parsed {
        dscp: 0x2e,
        ttl: 255,
        tcp_flags: 1,
        ..v6(14, 54, 6, 1, 2, 62)
    };
    assert_eq!(parse(&f).unwrap(), want);

    let f = build::icmp6_echo(&bare(), s6(), d6(), 1, 2, b"");
    assert_eq!(parse(&f).unwrap(), v6(14, 54, 58, 128, 0, 48));
}

#[test]
fn vlan_and_qinq() {
    let spec = FrameSpec {
        vlans: vec![VlanTag {
            tpid: 0x8100,
            tci: 0xe064, // PCP 7, DEI 0, VID 100
        }],
        ..bare()
    };
    let f = build::udp4(&spec, S4, D4, 1, 2, b"");
    let want = Parsed {
        outer_vlan: Some(100),
        ..v4(18, 38, 17, 1, 2, 28)
    };
    assert_eq!(parse(&f).unwrap(), want);

    let spec = FrameSpec {
        vlans: vec![VlanTag::dot1ad(200), VlanTag::dot1q(300)],
        ..bare()
    };
    let f = build::tcp6(&spec, s6(), d6(), 1, 2, 0, b"");
    let want = Parsed {
        outer_vlan: Some(200),
        inner_vlan: Some(300),
        ..v6(22, 62, 6, 1, 2, 60)
    };
    assert_eq!(parse(&f).unwrap(), want);
    assert_eq!(ether_type(&f), Some(ethertype::IPV6));

    // Two 802.1Q tags (old-style QinQ) are accepted too.
    let spec = FrameSpec {
        vlans: vec![VlanTag::dot1q(1), VlanTag::dot1q(4095)],
        ..bare()
    };
    let p = parse(&build::udp4(&spec, S4, D4, 1, 2, b"")).unwrap();
    assert_eq!(
        (p.outer_vlan, p.inner_vlan, p.l3_off),
        (Some(1), Some(4095), 22)
    );
}

#[test]
fn triple_vlan_is_malformed() {
    for tpids in [
        [0x88a8, 0x8100, 0x8100],
        [0x8100, 0x8100, 0x8100],
        [0x88a8, 0x88a8, 0x88a8],
    ] {
        let spec = FrameSpec {
            vlans: tpids.iter().map(|&tpid| VlanTag { tpid, tci: 5 }).collect(),
            ..bare()
        };
        let f = build::udp4(&spec, S4, D4, 1, 2, b"");
        assert_eq!(parse(&f), Err(ParseError::TooManyVlanTags));
        assert!(ParseError::TooManyVlanTags.is_malformed());
        assert_eq!(ether_type(&f), None);
    }
}

#[test]
fn ipv4_options() {
    let spec = FrameSpec {
        // NOP, NOP, Router Alert (RFC 2113), then EOL padding to 8 bytes.
        ipv4_options: vec![1, 1, 0x94, 4, 0, 0, 0],
        ..bare()
    };
    let f = build::udp4(&spec, S4, D4, 7, 9, b"data");
    assert_eq!(f[14], 0x47); // IHL 7
    assert_eq!(parse(&f).unwrap(), v4(14, 42, 17, 7, 9, 40));

    // Maximal IHL 15: 40 bytes of options.
    let spec = FrameSpec {
        ipv4_options: vec![1; 40],
        ..bare()
    };
    let f = build::tcp4(&spec, S4, D4, 7, 9, 0, b"");
    assert_eq!(parse(&f).unwrap(), v4(14, 74, 6, 7, 9, 80));
}

#[test]
fn ipv6_extension_chain() {
    let spec = FrameSpec {
        ipv6_ext: vec![
            Ext6::HopByHop { len8: 0 },
            Ext6::DestOpts { len8: 1 },
            Ext6::Routing { len8: 2 },
            Ext6::Ah { len4: 4 },
            Ext6::Fragment {
                offset: 0,
                more: true,
                id: 9,
            },
            Ext6::DestOpts { len8: 0 },
        ],
        ..bare()
    };
    let f = build::udp6(&spec, s6(), d6(), 1000, 2000, b"z");
    let ext = 8 + 16 + 24 + 24 + 8 + 8;
    let want = Parsed {
        frag: Fragment::First,
        ..v6(14, 54 + ext, 17, 1000, 2000, 40 + ext + 9)
    };
    assert_eq!(parse(&f).unwrap(), want);
}

#[test]
fn ipv6_eight_ext_headers_ok_nine_too_long() {
    let chain = |n: usize| FrameSpec {
        ipv6_ext: vec![Ext6::DestOpts { len8: 0 }; n],
        ..bare()
    };
    let f = build::udp6(&chain(8), s6(), d6(), 1, 2, b"");
    assert_eq!(parse(&f).unwrap().l4_off, 54 + 64);
    let f = build::udp6(&chain(9), s6(), d6(), 1, 2, b"");
    assert_eq!(parse(&f), Err(ParseError::ExtChainTooLong));
    let f = build::udp6(&chain(200), s6(), d6(), 1, 2, b"");
    assert_eq!(parse(&f), Err(ParseError::ExtChainTooLong));
}

#[test]
fn ipv6_bad_ext_headers() {
    // Hop-by-Hop anywhere but first.
    let spec = FrameSpec {
        ipv6_ext: vec![Ext6::DestOpts { len8: 0 }, Ext6::HopByHop { len8: 0 }],
        ..bare()
    };
    let f = build::udp6(&spec, s6(), d6(), 1, 2, b"");
    assert_eq!(parse(&f), Err(ParseError::BadExtHeader));
    // Two Fragment headers.
    let frag = Ext6::Fragment {
        offset: 0,
        more: true,
        id: 1,
    };
    let spec = FrameSpec {
        ipv6_ext: vec![frag.clone(), frag],
        ..bare()
    };
    let f = build::udp6(&spec, s6(), d6(), 1, 2, b"");
    assert_eq!(parse(&f), Err(ParseError::BadExtHeader));
    // An extension header longer than the packet.
    let mut f = build::udp6(
        &FrameSpec {
            ipv6_ext: vec![Ext6::DestOpts { len8: 0 }],
            ..bare()
        },
        s6(),
        d6(),
        1,
        2,
        b"",
    );
    f[54 + 1] = 3; // claims 32 bytes, 16 are left in the packet
    assert_eq!(parse(&f), Err(ParseError::Truncated));
}

#[test]
fn ipv4_fragments() {
    let spec = FrameSpec {
        more_fragments: true,
        ..bare()
    };
    let f = build::udp4(&spec, S4, D4, 1234, 80, &[0; 16]);
    let want = Parsed {
        frag: Fragment::First,
        ..v4(14, 34, 17, 1234, 80, 44)
    };
    let p = parse(&f).unwrap();
    assert_eq!(p, want);
    assert!(p.is_fragment());

    // Non-first: whatever follows the header is payload, not ports.
    for more in [true, false] {
        let spec = FrameSpec {
            frag_offset: 185,
            more_fragments: more,
            dont_fragment: false,
            ..bare()
        };
        let f = build::ipv4(&spec, S4, D4, 17, &[0xaa; 24]);
        let want = Parsed {
            frag: Fragment::NonFirst,
            ..v4(14, 0, 17, 0, 0, 44)
        };
        assert_eq!(parse(&f).unwrap(), want);
    }
    // A non-first fragment shorter than any L4 header is fine.
    let spec = FrameSpec {
        frag_offset: 1,
        ..bare()
    };
    let f = build::ipv4(&spec, S4, D4, 6, &[0xaa; 3]);
    assert_eq!(parse(&f).unwrap().frag, Fragment::NonFirst);
    // DF alone is not a fragment.
    let spec = FrameSpec {
        dont_fragment: true,
        ..bare()
    };
    let f = build::udp4(&spec, S4, D4, 1, 2, b"");
    assert_eq!(parse(&f).unwrap().frag, Fragment::None);
}

#[test]
fn ipv6_fragments() {
    let frag = |offset, more| FrameSpec {
        ipv6_ext: vec![Ext6::Fragment {
            offset,
            more,
            id: 77,
        }],
        ..bare()
    };
    let f = build::ipv6(&frag(100, true), s6(), d6(), 6, &[0xbb; 16]);
    let want = Parsed {
        frag: Fragment::NonFirst,
        ..v6(14, 0, 6, 0, 0, 40 + 8 + 16)
    };
    assert_eq!(parse(&f).unwrap(), want);

    let f = build::udp6(&frag(0, true), s6(), d6(), 5, 6, b"");
    let want = Parsed {
        frag: Fragment::First,
        ..v6(14, 62, 17, 5, 6, 56)
    };
    assert_eq!(parse(&f).unwrap(), want);

    // Atomic fragment (RFC 6946): offset 0, M clear.
    let f = build::udp6(&frag(0, false), s6(), d6(), 5, 6, b"");
    assert_eq!(parse(&f).unwrap(), v6(14, 62, 17, 5, 6, 56));
}

#[test]
fn terminal_and_other_protocols() {
    // ESP ends the walk: proto 50, header offset known, no ports.
    let f = build::ipv4(&bare(), S4, D4, ipproto::ESP, &[1; 16]);
    assert_eq!(parse(&f).unwrap(), v4(14, 34, 50, 0, 0, 36));
    let spec = FrameSpec {
        ipv6_ext: vec![Ext6::HopByHop { len8: 0 }],
        ..bare()
    };
    let f = build::ipv6(&spec, s6(), d6(), ipproto::ESP, &[1; 16]);
    assert_eq!(parse(&f).unwrap(), v6(14, 62, 50, 0, 0, 64));
    // No Next Header: no L4 at all.
    let f = build::ipv6(&bare(), s6(), d6(), ipproto::NONXT, &[]);
    assert_eq!(parse(&f).unwrap(), v6(14, 0, 59, 0, 0, 40));
    // GRE: parses, ports 0.
    let f = build::ipv4(&bare(), S4, D4, ipproto::GRE, &[0; 4]);
    assert_eq!(parse(&f).unwrap(), v4(14, 34, 47, 0, 0, 24));
    // SCTP: ports.
    let mut sctp = vec![0x0b, 0xb8, 0x0b, 0xb9];
    sctp.extend_from_slice(&[0; 8]);
    let f = build::ipv4(&bare(), S4, D4, ipproto::SCTP, &sctp);
    assert_eq!(parse(&f).unwrap(), v4(14, 34, 132, 3000, 3001, 32));
    // ICMPv4 carried in IPv6 and ICMPv6 in IPv4 are "other" protocols.
    let f = build::ipv6(
        &bare(),
        s6(),
        d6(),
        ipproto::ICMP,
        &[8, 0, 0, 0, 0, 0, 0, 0],
    );
    assert_eq!(parse(&f).unwrap(), v6(14, 54, 1, 0, 0, 48));
    let f = build::ipv4(
        &bare(),
        S4,
        D4,
        ipproto::ICMPV6,
        &[128, 0, 0, 0, 0, 0, 0, 0],
    );
    assert_eq!(parse(&f).unwrap(), v4(14, 34, 58, 0, 0, 28));
    // Empty upper layer of an unknown protocol: fine, offset points at the end.
    let f = build::ipv4(&bare(), S4, D4, 253, &[]);
    assert_eq!(parse(&f).unwrap(), v4(14, 34, 253, 0, 0, 20));
}

#[test]
fn non_ip_is_not_malformed() {
    let arp = build::arp_request(&FrameSpec::default(), S4, D4);
    assert_eq!(parse(&arp), Err(ParseError::NotIp));
    assert!(!ParseError::NotIp.is_malformed());
    assert_eq!(ether_type(&arp), Some(ethertype::ARP));
    let tagged = FrameSpec {
        vlans: vec![VlanTag::dot1ad(5), VlanTag::dot1q(6)],
        ..FrameSpec::default()
    };
    let arp = build::arp_request(&tagged, S4, D4);
    assert_eq!(parse(&arp), Err(ParseError::NotIp));
    assert_eq!(ether_type(&arp), Some(ethertype::ARP));
    let lldp = build::ethernet(&FrameSpec::default(), ethertype::LLDP, &[0; 40]);
    assert_eq!(parse(&lldp), Err(ParseError::NotIp));
    // An 802.3 frame: the type field is a length.
    let llc = build::ethernet(&FrameSpec::default(), 46, &[0xaa; 46]);
    assert_eq!(parse(&llc), Err(ParseError::NotIp));
}

#[test]
fn bad_ip_version() {
    let mut f = build::udp4(&bare(), S4, D4, 1, 2, b"");
    f[14] = 0x65;
    assert_eq!(parse(&f), Err(ParseError::BadIpVersion));
    // An IPv4 packet behind the IPv6 EtherType.
    let mut f = build::udp6(&bare(), s6(), d6(), 1, 2, b"");
    f[14] = 0x45;
    assert_eq!(parse(&f), Err(ParseError::BadIpVersion));
}

#[test]
fn bad_ihl() {
    for ihl in 0..5u8 {
        let mut f = build::udp4(&bare(), S4, D4, 1, 2, b"");
        f[14] = 0x40 | ihl;
        assert_eq!(parse(&f), Err(ParseError::BadIhl), "ihl {ihl}");
    }
    // IHL announcing options that the frame does not have.
    let mut f = build::ipv4(&bare(), S4, D4, 253, &[]);
    f[14] = 0x4f;
    assert_eq!(parse(&f), Err(ParseError::Truncated));
}

#[test]
fn bad_total_length() {
    let set_total = |f: &mut Vec<u8>, t: u16| f[16..18].copy_from_slice(&t.to_be_bytes());
    let base = build::udp4(&bare(), S4, D4, 1, 2, b"abcd"); // total 32
    for t in [0u16, 1, 19, 33, 1500, 65535] {
        let mut f = base.clone();
        set_total(&mut f, t);
        assert_eq!(parse(&f), Err(ParseError::BadTotalLength), "total {t}");
    }
    // Total length below IHL*4 with options present.
    let spec = FrameSpec {
        ipv4_options: vec![1; 4],
        ..bare()
    };
    let mut f = build::udp4(&spec, S4, D4, 1, 2, b"");
    set_total(&mut f, 20);
    assert_eq!(parse(&f), Err(ParseError::BadTotalLength));
    // A total length that ends inside the UDP header: the frame's padding does not
    // count as L4 bytes.
    let mut f = build::udp4(&FrameSpec::default(), S4, D4, 1, 2, b"");
    set_total(&mut f, 24);
    assert_eq!(parse(&f), Err(ParseError::Truncated));
}

#[test]
fn bad_payload_length() {
    let base = build::udp6(&bare(), s6(), d6(), 1, 2, b"abcd"); // payload 12
    for pl in [13u16, 100, 65535] {
        let mut f = base.clone();
        f[18..20].copy_from_slice(&pl.to_be_bytes());
        assert_eq!(parse(&f), Err(ParseError::BadPayloadLength), "payload {pl}");
    }
    // Payload length shorter than the UDP header.
    let mut f = base.clone();
    f[18..20].copy_from_slice(&4u16.to_be_bytes());
    assert_eq!(parse(&f), Err(ParseError::Truncated));
    // Zero payload length (jumbogram style) with Hop-by-Hop: the header is outside.
    let spec = FrameSpec {
        ipv6_ext: vec![Ext6::HopByHop { len8: 0 }],
        ..bare()
    };
    let mut f = build::udp6(&spec, s6(), d6(), 1, 2, b"");
    f[18..20].copy_from_slice(&0u16.to_be_bytes());
    assert_eq!(parse(&f), Err(ParseError::Truncated));
}

#[test]
fn bad_tcp_header() {
    let base = build::tcp4(&bare(), S4, D4, 1, 2, 0, &[0; 8]);
    for doff in 0..5u8 {
        let mut f = base.clone();
        f[34 + 12] = doff << 4;
        assert_eq!(parse(&f), Err(ParseError::BadTcpHeader), "doff {doff}");
    }
    // Data offset 7 fits (8 payload bytes become options), 8 does not.
    let mut f = base.clone();
    f[34 + 12] = 7 << 4;
    assert_eq!(parse(&f).unwrap().sport, 1);
    f[34 + 12] = 8 << 4;
    assert_eq!(parse(&f), Err(ParseError::Truncated));
}

#[test]
fn ethernet_padding_is_ignored() {
    let padded = build::udp4(&FrameSpec::default(), S4, D4, 1, 2, b"");
    let bare = build::udp4(&bare(), S4, D4, 1, 2, b"");
    assert_eq!(padded.len(), 60);
    assert_eq!(bare.len(), 42);
    let p = parse(&padded).unwrap();
    assert_eq!(p, parse(&bare).unwrap());
    assert_eq!(p.l3_len, 28);
    // Cutting the padding keeps the same result, cutting into the packet fails.
    for len in 0..=padded.len() {
        let r = parse(&padded[..len]);
        if len >= 42 {
            assert_eq!(r, Ok(p));
        } else {
            assert!(r.is_err(), "len {len}");
        }
    }
}

fn truncation_frames() -> Vec<Vec<u8>> {
    let q = FrameSpec {
        vlans: vec![VlanTag::dot1ad(10), VlanTag::dot1q(20)],
        ..bare()
    };
    let chain = FrameSpec {
        vlans: vec![VlanTag::dot1q(3)],
        ipv6_ext: vec![
            Ext6::HopByHop { len8: 1 },
            Ext6::Routing { len8: 0 },
            Ext6::Ah { len4: 1 },
            Ext6::Fragment {
                offset: 0,
                more: true,
                id: 1,
            },
            Ext6::DestOpts { len8: 0 },
        ],
        ..bare()
    };
    let opts = FrameSpec {
        ipv4_options: vec![1; 12],
        ..bare()
    };
    let mut tcp_opts = build::tcp4(
        &opts,
        S4,
        D4,
        1,
        2,
        tcp_flags::SYN,
        &[2, 4, 5, 0xb4, 1, 1, 1, 0],
    );
    tcp_opts[14 + 32 + 12] = 7 << 4; // MSS + NOPs as TCP options
    vec![
        build::udp4(&bare(), S4, D4, 1, 2, b"payload"),
        tcp_opts,
        build::icmp4_echo(&q, S4, D4, 1, 1, b"abc"),
        build::tcp6(&q, s6(), d6(), 1, 2, 0, b""),
        build::udp6(&chain, s6(), d6(), 1, 2, b"x"),
        build::icmp6_echo(&chain, s6(), d6(), 1, 1, b""),
        build::ipv4(
            &FrameSpec {
                frag_offset: 9,
                ..bare()
            },
            S4,
            D4,
            17,
            &[1; 9],
        ),
        build::ipv6(
            &FrameSpec {
                ipv6_ext: vec![Ext6::Fragment {
                    offset: 3,
                    more: false,
                    id: 2,
                }],
                ..bare()
            },
            s6(),
            d6(),
            6,
            &[1; 9],
        ),
    ]
}

/// Every prefix of an unpadded frame is an error (its IP length covers the whole
/// frame); the error is `Truncated` while still inside the L2 or fixed IP header.
#[test]
fn truncation_at_every_length() {
    for (i, f) in truncation_frames().iter().enumerate() {
        let full = parse(f).unwrap_or_else(|e| panic!("frame {i}: {e}"));
        for len in 0..f.len() {
            let cut = &f[..len];
            let r = parse(cut);
            let fixed = usize::from(full.l3_off) + if full.kind == L3Kind::V4 { 20 } else { 40 };
            match r {
                Err(ParseError::Truncated) => {}
                Err(ParseError::BadTotalLength | ParseError::BadPayloadLength) => {
                    assert!(
                        len >= fixed,
                        "frame {i} len {len}: length error before the header ends"
                    );
                }
                other => panic!("frame {i} len {len}: {other:?}"),
            }
            if len < usize::from(full.l3_off) {
                assert_eq!(r, Err(ParseError::Truncated), "frame {i} len {len}");
            }
            if len < fixed {
                assert_eq!(r, Err(ParseError::Truncated), "frame {i} len {len}");
            }
            // The L2 view only needs the tags.
            let et = ether_type(cut);
            assert_eq!(
                et.is_some(),
                len >= usize::from(full.l3_off),
                "frame {i} len {len}"
            );
        }
    }
}

/// Where the last header of a parsed frame ends: L4 header (with TCP options), or the
/// IP header (with the Fragment header) for non-first fragments.
fn headers_end(f: &[u8], p: &Parsed) -> usize {
    let l3 = usize::from(p.l3_off);
    if p.l4_off == 0 {
        return match p.kind {
            L3Kind::V4 => l3 + usize::from(f[l3] & 0x0f) * 4,
            L3Kind::V6 => l3 + 48,
        };
    }
    let l4 = usize::from(p.l4_off);
    l4 + match p.proto {
        6 => usize::from(f[l4 + 12] >> 4) * 4,
        17 | 1 | 58 => 8,
        other => panic!("unexpected proto {other}"),
    }
}

/// When the IP length is also cut (as a middlebox that truncates and fixes lengths
/// would), every prefix either fails with `Truncated` or parses consistently.
#[test]
fn truncation_with_consistent_lengths() {
    for (i, f) in truncation_frames().iter().enumerate() {
        let full = parse(f).unwrap();
        let l3 = usize::from(full.l3_off);
        for len in l3 + 40..f.len() {
            let mut g = f[..len].to_vec();
            let ip_len = len - l3;
            match full.kind {
                L3Kind::V4 => g[l3 + 2..l3 + 4].copy_from_slice(&(ip_len as u16).to_be_bytes()),
                L3Kind::V6 => {
                    g[l3 + 4..l3 + 6].copy_from_slice(&((ip_len - 40) as u16).to_be_bytes())
                }
            }
            let r = parse(&g);
            assert_eq!(
                r.is_ok(),
                len >= headers_end(f, &full),
                "frame {i} len {len}: {r:?}"
            );
            match r {
                Err(ParseError::Truncated) => {}
                Ok(p) => {
                    assert_eq!(usize::from(p.l3_len), ip_len, "frame {i} len {len}");
                    assert_eq!(
                        (p.src, p.dst, p.proto, p.frag),
                        (full.src, full.dst, full.proto, full.frag)
                    );
                    if full.frag != Fragment::NonFirst {
                        assert_eq!(
                            (p.sport, p.dport, p.l4_off),
                            (full.sport, full.dport, full.l4_off)
                        );
                    }
                }
                Err(e) => panic!("frame {i} len {len}: {e:?}"),
            }
        }
    }
}

#[test]
fn parse_into_overwrites_a_used_slot() {
    let mut slot = parse(&build::tcp4(&bare(), S4, D4, 1, 2, 0xff, b"")).unwrap();
    let f = build::ipv6(
        &FrameSpec {
            ipv6_ext: vec![Ext6::Fragment {
                offset: 3,
                more: false,
                id: 2,
            }],
            ..bare()
        },
        s6(),
        d6(),
        6,
        &[1; 9],
    );
    parse_into(&f, &mut slot).unwrap();
    assert_eq!(slot, parse(&f).unwrap());
    assert_eq!(
        (slot.sport, slot.dport, slot.tcp_flags, slot.l4_off),
        (0, 0, 0, 0)
    );
    let g = build::udp4(
        &FrameSpec {
            vlans: vec![VlanTag::dot1q(9)],
            ..bare()
        },
        S4,
        D4,
        1,
        2,
        b"",
    );
    parse_into(&g, &mut slot).unwrap();
    assert_eq!(slot, parse(&g).unwrap());
}

/// A burst of 32 results stays small: one `Parsed` fits in a cache line.
#[test]
fn parsed_fits_a_cache_line() {
    assert!(
        std::mem::size_of::<Parsed>() <= 64,
        "{}",
        std::mem::size_of::<Parsed>()
    );
    assert_eq!(std::mem::size_of::<ParseError>(), 1);
    assert_eq!(std::mem::size_of::<Result<(), ParseError>>(), 1);
}

#[test]
fn error_index_and_names_are_dense_and_unique() {
    let mut names = std::collections::HashSet::new();
    for (i, e) in ParseError::ALL.iter().enumerate() {
        assert_eq!(e.index(), i);
        assert!(names.insert(e.name()));
        assert_eq!(e.to_string(), e.name());
    }
    assert_eq!(names.len(), ParseError::COUNT);
}
