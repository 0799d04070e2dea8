//! What the appliance answers or originates about a received frame: ICMP /
//! ICMPv6 errors, echo replies, ARP replies and neighbour advertisements.
//! Input: one byte choosing the error, two of MTU, then the frame.
#![no_main]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use fwd::pkt::{self, ipproto, IcmpError, L3Kind, NeighMsg};
use libfuzzer_sys::fuzz_target;

const MAC: [u8; 6] = [2, 0, 0, 0, 0, 0xaa];

fuzz_target!(|data: &[u8]| {
    let Some((&[which, m0, m1], frame)) = data.split_first_chunk::<3>() else {
        return;
    };
    let mtu = u16::from_be_bytes([m0, m1]);
    let err = match which % 7 {
        0 => IcmpError::TimeExceeded,
        1 => IcmpError::NetUnreachable,
        2 => IcmpError::HostUnreachable,
        3 => IcmpError::PortUnreachable,
        4 => IcmpError::AdminProhibited,
        5 => IcmpError::FragNeeded { mtu },
        _ => IcmpError::PacketTooBig { mtu },
    };

    // ARP needs no IP parse. A reply keeps the frame length and is itself
    // an ARP reply; a refusal leaves the frame untouched.
    let mut g = frame.to_vec();
    if pkt::arp_reply_in_place(&mut g, MAC, |_| true) {
        assert!(matches!(
            pkt::parse_arp(&g),
            Some(NeighMsg::ArpReply { .. })
        ));
    } else {
        assert_eq!(&g[..], frame);
    }

    let Some(p) = appliance_fuzz::checked_parse(frame) else {
        return;
    };
    let (src, icmp) = match p.kind {
        L3Kind::V4 => (IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)), ipproto::ICMP),
        L3Kind::V6 => (
            IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1)),
            ipproto::ICMPV6,
        ),
    };
    let mut out = vec![0u8; pkt::MAX_ERROR_FRAME];
    let built = pkt::build_error(&mut out, frame, &p, err, src, MAC);
    if pkt::may_send_error(frame, &p, err) {
        let n = built.expect("an allowed error could not be built");
        assert!((60..=pkt::MAX_ERROR_FRAME).contains(&n), "{n}");
        let q = pkt::parse(&out[..n]).unwrap_or_else(|e| panic!("error frame: {e:?}"));
        assert_eq!((q.kind, q.proto), (p.kind, icmp));
        assert!(pkt::ipv4_checksum_ok(&out[..n], &q));
    }

    let mut g = frame.to_vec();
    if pkt::echo_reply_in_place(&mut g, &p, MAC) {
        let q = pkt::parse(&g).expect("an echo reply parses");
        assert_eq!((q.src, q.dst, q.kind), (p.dst, p.src, p.kind));
        assert_eq!(
            pkt::ipv4_checksum_ok(&g, &q),
            pkt::ipv4_checksum_ok(frame, &p)
        );
    } else {
        assert_eq!(&g[..], frame);
    }

    // Our addresses are unicast ones.
    let mut g = frame.to_vec();
    if pkt::nd_reply_in_place(&mut g, &p, MAC, |t| t >> 120 != 0xff) {
        let q = pkt::parse(&g).expect("an advertisement parses");
        assert!(matches!(
            pkt::parse_nd(&g, &q),
            Some(NeighMsg::Advertisement { .. })
        ));
    } else {
        assert_eq!(&g[..], frame);
    }
});
