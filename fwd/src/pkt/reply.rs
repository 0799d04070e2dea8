//! Answers the appliance gives itself on the data path: ARP replies and IPv6
//! neighbour advertisements for its own addresses, and ICMP / ICMPv6 echo
//! replies to pings of them.
//!
//! Both turn the received frame into the answer in place (no allocation)
//! and return whether they did; the worker then sends it back out of the
//! port it came in on. Checksums are updated incrementally: swapping source
//! and destination addresses leaves every one's-complement sum unchanged
//! (the IPv4 header checksum and the ICMPv6 pseudo-header alike), so only
//! the changed type byte (and the IPv4 TTL) needs an update.
#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use super::csum::{incremental_update, l4_checksum_v6};
use super::parse::{ether_type, ethertype, ipproto, l2_len, L3Kind, Parsed};

/// Turns an ARP request for an address `ours` accepts into the reply from
/// `mac`, in place. Returns false (frame untouched) for anything else.
pub fn arp_reply_in_place(frame: &mut [u8], mac: [u8; 6], ours: impl Fn(u32) -> bool) -> bool {
    arp_reply(frame, mac, ours).is_some()
}

fn arp_reply(frame: &mut [u8], mac: [u8; 6], ours: impl Fn(u32) -> bool) -> Option<()> {
    if ether_type(frame) != Some(ethertype::ARP) {
        return None;
    }
    let off = l2_len(frame)?;
    let arp = frame.get(off..)?;
    let (hdr, rest) = arp.split_first_chunk::<8>()?;
    let (sha, rest) = rest.split_first_chunk::<6>()?;
    let (spa, rest) = rest.split_first_chunk::<4>()?;
    let (_tha, rest) = rest.split_first_chunk::<6>()?;
    let tpa = rest.first_chunk::<4>()?;
    // Ethernet/IPv4 request: htype 1, ptype 0x0800, hlen 6, plen 4, op 1.
    if *hdr != [0, 1, 0x08, 0x00, 6, 4, 0, 1] || !ours(u32::from_be_bytes(*tpa)) {
        return None;
    }
    let (sha, spa, tpa) = (*sha, *spa, *tpa);
    let mut reply = [0u8; 28];
    let parts: [&[u8]; 5] = [&[0, 1, 0x08, 0x00, 6, 4, 0, 2], &mac, &tpa, &sha, &spa];
    let mut at = 0;
    for part in parts {
        reply.get_mut(at..at + part.len())?.copy_from_slice(part);
        at += part.len();
    }
    frame.get_mut(off..off + 28)?.copy_from_slice(&reply);
    set_macs(frame, sha, mac)
}

/// Writes the Ethernet destination and source.
fn set_macs(frame: &mut [u8], dst: [u8; 6], src: [u8; 6]) -> Option<()> {
    let (d, rest) = frame.split_first_chunk_mut::<6>()?;
    *d = dst;
    *rest.first_chunk_mut::<6>()? = src;
    Some(())
}

/// Turns an IPv6 neighbour solicitation for an address `ours` accepts into
/// the solicited neighbour advertisement from `mac` (router and override
/// flags set, target link-layer address option), in place. Handles the
/// usual 32-byte solicitation (24 bytes + source link-layer option), which
/// the advertisement exactly replaces; duplicate address detection probes
/// (from `::`), solicitations from a multicast source and anything else
/// return false, frame untouched.
pub fn nd_reply_in_place(
    frame: &mut [u8],
    p: &Parsed,
    mac: [u8; 6],
    ours: impl Fn(u128) -> bool,
) -> bool {
    nd_reply(frame, p, mac, ours).is_some()
}

fn nd_reply(frame: &mut [u8], p: &Parsed, mac: [u8; 6], ours: impl Fn(u128) -> bool) -> Option<()> {
    let (l3, l4) = (usize::from(p.l3_off), usize::from(p.l4_off));
    if p.kind != L3Kind::V6 || p.proto != ipproto::ICMPV6 || l4 == 0 || p.is_fragment() {
        return None;
    }
    // The ICMPv6 message must be exactly type 135, code 0, 32 bytes, and
    // the packet must have come from a neighbour (hop limit 255).
    let icmp_len = (usize::from(p.l3_len) + l3).checked_sub(l4)?;
    let ns = frame.get(l4..)?.first_chunk::<32>()?;
    // A multicast source is no neighbour (RFC 4291 2.7): the answer would
    // be a solicited advertisement to a group, which RFC 4861 7.2.4 forbids.
    let src_ok = p.src_v6() != 0 && p.src_v6() >> 120 != 0xff;
    if icmp_len != 32 || ns[0] != 135 || ns[1] != 0 || p.ttl != 255 || !src_ok {
        return None;
    }
    let target: [u8; 16] = *ns.get(8..)?.first_chunk::<16>()?;
    if !ours(u128::from_be_bytes(target)) {
        return None;
    }
    let peer = *frame.get(6..)?.first_chunk::<6>()?;
    let src = p.src;
    // The advertisement: type 136, flags R|S|O, target, target link-layer option.
    let mut na = [0u8; 32];
    na[0] = 136;
    na[4] = 0xe0;
    na[8..24].copy_from_slice(&target);
    na[24] = 2;
    na[25] = 1;
    na[26..32].copy_from_slice(&mac);
    let c = l4_checksum_v6(&target, &src, ipproto::ICMPV6, &na);
    na[2..4].copy_from_slice(&c.to_be_bytes());
    // IPv6 header: from our target address to the solicitor, hop limit 255.
    let ip = frame.get_mut(l3..)?.first_chunk_mut::<40>()?;
    ip[7] = 255;
    ip[8..24].copy_from_slice(&target);
    ip[24..40].copy_from_slice(&src);
    frame
        .get_mut(l4..)?
        .first_chunk_mut::<32>()?
        .copy_from_slice(&na);
    set_macs(frame, peer, mac)
}

/// Turns an ICMP echo request (IPv4) or ICMPv6 echo request addressed to
/// the appliance into the echo reply from `mac`, in place. `p` must come
/// from parsing `frame`. Returns false (frame untouched) for anything else,
/// including fragments.
pub fn echo_reply_in_place(frame: &mut [u8], p: &Parsed, mac: [u8; 6]) -> bool {
    echo_reply(frame, p, mac).is_some()
}

fn echo_reply(frame: &mut [u8], p: &Parsed, mac: [u8; 6]) -> Option<()> {
    let (l3, l4) = (usize::from(p.l3_off), usize::from(p.l4_off));
    if l4 == 0 || p.is_fragment() {
        return None;
    }
    let (echo, reply, addr_off, addr_len) = match p.kind {
        L3Kind::V4 if p.proto == ipproto::ICMP => (8u8, 0u8, 12, 4),
        L3Kind::V6 if p.proto == ipproto::ICMPV6 => (128u8, 129u8, 8, 16),
        _ => return None,
    };
    let icmp = frame.get(l4..)?.first_chunk::<4>()?;
    if icmp[0] != echo || icmp[1] != 0 {
        return None;
    }
    let peer = *frame.get(6..)?.first_chunk::<6>()?;
    // Everything is checked: from here on the frame is rewritten.
    // Swap the addresses (one's-complement sums unchanged).
    let addrs = frame.get_mut(l3 + addr_off..l3 + addr_off + 2 * addr_len)?;
    let (src, dst) = addrs.split_at_mut(addr_len);
    src.swap_with_slice(dst);
    // Type byte: echo -> reply; the checksum word covers [type, code].
    let icmp = frame.get_mut(l4..)?.first_chunk_mut::<4>()?;
    let c = incremental_update(
        u16::from_be_bytes([icmp[2], icmp[3]]),
        u16::from_be_bytes([echo, 0]),
        u16::from_be_bytes([reply, 0]),
    );
    icmp[0] = reply;
    [icmp[2], icmp[3]] = c.to_be_bytes();
    // A fresh TTL / hop limit for our own answer.
    if p.kind == L3Kind::V4 {
        let h = frame.get_mut(l3..)?.first_chunk_mut::<12>()?;
        let old = u16::from_be_bytes([h[8], h[9]]);
        h[8] = 64;
        let c = incremental_update(
            u16::from_be_bytes([h[10], h[11]]),
            old,
            u16::from_be_bytes([h[8], h[9]]),
        );
        [h[10], h[11]] = c.to_be_bytes();
    } else {
        *frame.get_mut(l3 + 7)? = 64;
    }
    set_macs(frame, peer, mac)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used)]
mod tests {
    use std::net::{Ipv4Addr, Ipv6Addr};

    use super::*;
    use crate::pkt::build::{self, FrameSpec, VlanTag};
    use crate::pkt::{csum, parse};

    const OURS: [u8; 6] = [2, 0, 0, 0, 0, 0xaa];
    const PEER: [u8; 6] = [2, 0, 0, 0, 0, 0xbb];

    fn spec() -> FrameSpec {
        FrameSpec {
            src_mac: PEER,
            dst_mac: [0xff; 6],
            ..Default::default()
        }
    }

    #[test]
    fn arp_request_for_our_address_becomes_the_reply() {
        let ip = |s: &str| s.parse::<Ipv4Addr>().unwrap();
        for vlans in [vec![], vec![VlanTag::dot1q(7)]] {
            let spec = FrameSpec { vlans, ..spec() };
            let mut f = build::arp_request(&spec, ip("10.0.0.2"), ip("10.0.0.1"));
            let ours = |a: u32| a == u32::from(ip("10.0.0.1"));
            assert!(arp_reply_in_place(&mut f, OURS, ours));
            let off = 14 + spec.vlans.len() * 4;
            let a = &f[off..off + 28];
            assert_eq!(a[7], 2);
            assert_eq!(&a[8..14], &OURS);
            assert_eq!(&a[14..18], &[10, 0, 0, 1]);
            assert_eq!(&a[18..24], &PEER);
            assert_eq!(&a[24..28], &[10, 0, 0, 2]);
            assert_eq!(&f[..6], &PEER);
            assert_eq!(&f[6..12], &OURS);
            // Not ours, or already a reply: untouched.
            let mut g = build::arp_request(&spec, ip("10.0.0.2"), ip("10.0.0.9"));
            let before = g.clone();
            assert!(!arp_reply_in_place(&mut g, OURS, ours));
            assert_eq!(g, before);
            assert!(
                !arp_reply_in_place(&mut f, OURS, ours),
                "a reply is not answered"
            );
        }
    }

    #[test]
    fn echo_requests_become_valid_replies() {
        let (a, b) = (
            "10.0.0.2".parse::<Ipv4Addr>().unwrap(),
            "10.0.0.1".parse::<Ipv4Addr>().unwrap(),
        );
        let mut f = build::icmp4_echo(&FrameSpec { ttl: 9, ..spec() }, a, b, 77, 3, b"payload");
        let p = parse(&f).unwrap();
        assert!(echo_reply_in_place(&mut f, &p, OURS));
        let q = parse(&f).unwrap();
        assert_eq!(
            (q.src_v4(), q.dst_v4(), q.ttl),
            (u32::from(b), u32::from(a), 64)
        );
        assert_eq!(&f[..6], &PEER);
        assert_eq!(&f[6..12], &OURS);
        let l3 = usize::from(q.l3_off);
        assert!(csum::verify_ipv4_header(&f[l3..l3 + 20]));
        let l4 = usize::from(q.l4_off);
        assert_eq!(f[l4], 0);
        assert_eq!(
            csum::checksum(&f[l4..l3 + usize::from(q.l3_len)]),
            0,
            "ICMP checksum valid"
        );
        // A reply is not answered again.
        assert!(!echo_reply_in_place(&mut f, &q, OURS));

        let (a6, b6) = (
            "fd00::2".parse::<Ipv6Addr>().unwrap(),
            "fd00::1".parse::<Ipv6Addr>().unwrap(),
        );
        let mut g = build::icmp6_echo(&spec(), a6, b6, 1, 2, b"v6");
        let p = parse(&g).unwrap();
        assert!(echo_reply_in_place(&mut g, &p, OURS));
        let q = parse(&g).unwrap();
        assert_eq!(
            (q.src_v6(), q.dst_v6(), q.ttl),
            (u128::from(b6), u128::from(a6), 64)
        );
        let l4 = usize::from(q.l4_off);
        assert_eq!(g[l4], 129);
        let seg = &g[l4..usize::from(q.l3_off) + usize::from(q.l3_len)];
        assert_eq!(
            csum::l4_checksum_v6(&q.src, &q.dst, 58, seg),
            0,
            "ICMPv6 checksum valid"
        );

        // A neighbour solicitation for our address becomes the advertisement.
        let ns_frame = |target: Ipv6Addr, hop: u8| {
            let mut body = vec![135, 0, 0, 0, 0, 0, 0, 0];
            body.extend_from_slice(&target.octets());
            body.extend_from_slice(&[1, 1]);
            body.extend_from_slice(&PEER);
            let spec = FrameSpec { ttl: hop, ..spec() };
            let mut f = build::ipv6(&spec, a6, "ff02::1:ff00:1".parse().unwrap(), 58, &body);
            let l4 = 14 + 40;
            let c = csum::l4_checksum_v6(
                &a6.octets(),
                &"ff02::1:ff00:1".parse::<Ipv6Addr>().unwrap().octets(),
                58,
                &f[l4..l4 + 32],
            );
            f[l4 + 2..l4 + 4].copy_from_slice(&c.to_be_bytes());
            f
        };
        let ours6 = |x: u128| x == u128::from(b6);
        let mut n = ns_frame(b6, 255);
        let p = parse(&n).unwrap();
        assert!(nd_reply_in_place(&mut n, &p, OURS, ours6));
        let q = parse(&n).unwrap();
        assert_eq!(
            (q.src_v6(), q.dst_v6(), q.ttl),
            (u128::from(b6), u128::from(a6), 255)
        );
        let l4 = usize::from(q.l4_off);
        assert_eq!(n[l4], 136);
        assert_eq!(&n[l4 + 8..l4 + 24], &b6.octets());
        assert_eq!(&n[l4 + 24..l4 + 32], &[2, 1, 2, 0, 0, 0, 0, 0xaa]);
        assert_eq!(
            csum::l4_checksum_v6(&q.src, &q.dst, 58, &n[l4..l4 + 32]),
            0,
            "NA checksum"
        );
        assert_eq!(&n[..6], &PEER);
        // Not ours, not from a neighbour (hop limit), or already answered: untouched.
        for (mut f, why) in [
            (ns_frame(a6, 255), "not ours"),
            (ns_frame(b6, 64), "hop limit"),
            (n.clone(), "an NA"),
        ] {
            let before = f.clone();
            let p = parse(&f).unwrap();
            assert!(!nd_reply_in_place(&mut f, &p, OURS, ours6), "{why}");
            assert_eq!(f, before, "{why}");
        }

        // Other traffic to us is untouched.
        let mut u = build::udp4(&spec(), a, b, 1, 2, b"x");
        let before = u.clone();
        let p = parse(&u).unwrap();
        assert!(!echo_reply_in_place(&mut u, &p, OURS));
        assert_eq!(u, before);
    }
}
