//! Neighbour-protocol messages: ARP (RFC 826) and IPv6 neighbour discovery
//! (RFC 4861), parsed for the control side to learn from and built for it to send.
//!
//! The parsers return a small `Copy` [`NeighMsg`] or None; [`parse_nd`] applies the
//! validity checks of RFC 4861 (§6.1.1, §7.1.1, §7.1.2) so that what it returns may
//! be learned from: hop limit 255 (the sender is on the link), code 0, a correct
//! checksum, the minimum length, well-formed options, no fragmentation. [`parse_arp`]
//! checks the format only (Ethernet/IPv4 ARP); which addresses to believe is the
//! control side's policy.
//!
//! The builders write complete untagged Ethernet frames (padded to 60 bytes) into a
//! caller-owned buffer and return their length, or None when it is too small (`out`
//! may then have been partly written). Like the rest of `pkt`, nothing here
//! allocates or panics, whatever the bytes.
#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::net::{Ipv4Addr, Ipv6Addr};

use super::csum::l4_checksum_v6;
use super::icmp_error::{pad, put, put_ethernet, seal_icmp6};
use super::parse::{ether_type, ethertype, ipproto, l2_len, L3Kind, Parsed};

/// A neighbour-protocol message seen on the wire (what the control side learns from).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NeighMsg {
    /// ARP request (op 1), including gratuitous ones (`sender_ip == target_ip`).
    ArpRequest {
        /// Sender protocol address.
        sender_ip: Ipv4Addr,
        /// Sender hardware address.
        sender_mac: [u8; 6],
        /// Target protocol address.
        target_ip: Ipv4Addr,
    },
    /// ARP reply (op 2).
    ArpReply {
        /// Sender protocol address: the address resolved.
        sender_ip: Ipv4Addr,
        /// Sender hardware address: what it resolves to.
        sender_mac: [u8; 6],
        /// Target protocol address.
        target_ip: Ipv4Addr,
    },
    /// Neighbour solicitation (type 135).
    Solicitation {
        /// IPv6 source (`::` for duplicate address detection).
        src: Ipv6Addr,
        /// The address being resolved.
        target: Ipv6Addr,
        /// Source link-layer address option.
        sll: Option<[u8; 6]>,
    },
    /// Neighbour advertisement (type 136).
    Advertisement {
        /// The address advertised.
        target: Ipv6Addr,
        /// Target link-layer address option.
        tll: Option<[u8; 6]>,
        /// R: the sender is a router.
        router: bool,
        /// S: an answer to a solicitation.
        solicited: bool,
        /// O: override an existing cache entry.
        override_flag: bool,
    },
    /// Router solicitation (type 133).
    RouterSolicitation {
        /// IPv6 source (`::` before the host has an address).
        src: Ipv6Addr,
        /// Source link-layer address option.
        sll: Option<[u8; 6]>,
    },
}

/// ARP for Ethernet/IPv4: htype 1, ptype 0x0800, hlen 6, plen 4.
const ARP_FORMAT: [u8; 6] = [0, 1, 0x08, 0x00, 6, 4];
/// ARP operations.
const ARP_OP_REQUEST: u16 = 1;
const ARP_OP_REPLY: u16 = 2;
/// ICMPv6 types of neighbour discovery.
const RS: u8 = 133;
const RA: u8 = 134;
const NS: u8 = 135;
const NA: u8 = 136;
/// Option types: source / target link-layer address, prefix information, MTU.
const OPT_SLL: u8 = 1;
const OPT_TLL: u8 = 2;
const OPT_PREFIX: u8 = 3;
const OPT_MTU: u8 = 5;
/// Hop limit of every neighbour discovery message (RFC 4861 §6.1, §7.1).
const ND_HOP_LIMIT: u8 = 255;

/// Parses an Ethernet/IPv4 ARP request or reply (htype 1, ptype 0x0800, hlen 6,
/// plen 4, op 1 or 2) after up to two VLAN tags. None for anything else.
pub fn parse_arp(frame: &[u8]) -> Option<NeighMsg> {
    if ether_type(frame)? != ethertype::ARP {
        return None;
    }
    let arp = frame.get(l2_len(frame)?..)?;
    let (hdr, rest) = arp.split_first_chunk::<8>()?;
    let (sha, rest) = rest.split_first_chunk::<6>()?;
    let (spa, rest) = rest.split_first_chunk::<4>()?;
    let (_tha, rest) = rest.split_first_chunk::<6>()?;
    let tpa = rest.first_chunk::<4>()?;
    let [h0, h1, h2, h3, h4, h5, op0, op1] = *hdr;
    if [h0, h1, h2, h3, h4, h5] != ARP_FORMAT {
        return None;
    }
    let (sender_ip, sender_mac, target_ip) = (Ipv4Addr::from(*spa), *sha, Ipv4Addr::from(*tpa));
    match u16::from_be_bytes([op0, op1]) {
        ARP_OP_REQUEST => Some(NeighMsg::ArpRequest {
            sender_ip,
            sender_mac,
            target_ip,
        }),
        ARP_OP_REPLY => Some(NeighMsg::ArpReply {
            sender_ip,
            sender_mac,
            target_ip,
        }),
        _ => None,
    }
}

/// Parses a router solicitation (133), neighbour solicitation (135) or neighbour
/// advertisement (136). `p` is `parse(frame)`'s result.
///
/// None unless the RFC 4861 validity checks pass: not a fragment, hop limit 255,
/// code 0, correct ICMPv6 checksum, at least 8 (RS) or 24 (NS, NA) bytes, every
/// option of non-zero length and inside the message, link-layer options of Ethernet
/// size. NS and NA: the target is not multicast. NS from `::` (duplicate address
/// detection): to a solicited-node address and without a source link-layer option.
/// NA to a multicast address: the solicited flag clear. RS from `::`: without a
/// source link-layer option. Of several link-layer options the first counts.
pub fn parse_nd(frame: &[u8], p: &Parsed) -> Option<NeighMsg> {
    if p.kind != L3Kind::V6
        || p.proto != ipproto::ICMPV6
        || p.l4_off == 0
        || p.is_fragment()
        || p.ttl != ND_HOP_LIMIT
    {
        return None;
    }
    let end = usize::from(p.l3_off) + usize::from(p.l3_len);
    let msg = frame.get(usize::from(p.l4_off)..end)?;
    let [ty, code, ..] = *msg.first_chunk::<4>()?;
    if code != 0 || l4_checksum_v6(&p.src, &p.dst, ipproto::ICMPV6, msg) != 0 {
        return None;
    }
    let src = Ipv6Addr::from(p.src);
    let dst = Ipv6Addr::from(p.dst);
    match ty {
        RS => {
            let sll = ll_option(msg.get(8..)?, OPT_SLL)?;
            if src.is_unspecified() && sll.is_some() {
                return None;
            }
            Some(NeighMsg::RouterSolicitation { src, sll })
        }
        NS => {
            let target = nd_target(msg)?;
            let sll = ll_option(msg.get(24..)?, OPT_SLL)?;
            if src.is_unspecified() && (sll.is_some() || dst != solicited_node(target)) {
                return None;
            }
            Some(NeighMsg::Solicitation { src, target, sll })
        }
        NA => {
            let target = nd_target(msg)?;
            let tll = ll_option(msg.get(24..)?, OPT_TLL)?;
            let flags = *msg.get(4)?;
            let solicited = flags & 0x40 != 0;
            if solicited && dst.is_multicast() {
                return None;
            }
            Some(NeighMsg::Advertisement {
                target,
                tll,
                router: flags & 0x80 != 0,
                solicited,
                override_flag: flags & 0x20 != 0,
            })
        }
        _ => None,
    }
}

/// The target address of an NS or NA (bytes 8..24), None if missing or multicast.
fn nd_target(msg: &[u8]) -> Option<Ipv6Addr> {
    let target = Ipv6Addr::from(*msg.get(8..)?.first_chunk::<16>()?);
    (!target.is_multicast()).then_some(target)
}

/// Walks the options `opts` (the rest of the message) and returns the address of
/// the first link-layer option of type `want`. None when an option has length zero,
/// runs past the message, or is a link-layer option not of Ethernet size (8 bytes).
fn ll_option(mut opts: &[u8], want: u8) -> Option<Option<[u8; 6]>> {
    let mut found = None;
    while !opts.is_empty() {
        let [ty, len] = *opts.first_chunk::<2>()?;
        if len == 0 {
            return None;
        }
        let (opt, rest) = opts.split_at_checked(usize::from(len) * 8)?;
        if ty == want {
            let [_, _, a, b, c, d, e, f] = *opt.first_chunk::<8>()?;
            if len != 1 {
                return None;
            }
            found = found.or(Some([a, b, c, d, e, f]));
        }
        opts = rest;
    }
    Some(found)
}

/// Writes a broadcast ARP request (who-has `target_ip` tell `sender_ip`) from
/// `src_mac`, or, with `unicast_to`, the same request sent to that MAC only (a
/// unicast re-probe of a known neighbour, RFC 1122 §2.3.2.1). The target hardware
/// address field is zero. Returns the frame length (60).
pub fn build_arp_request(
    out: &mut [u8],
    src_mac: [u8; 6],
    sender_ip: Ipv4Addr,
    target_ip: Ipv4Addr,
    unicast_to: Option<[u8; 6]>,
) -> Option<usize> {
    let dst = unicast_to.unwrap_or([0xff; 6]);
    let at = put_ethernet(out, dst, src_mac, &[], ethertype::ARP)?;
    let at = put(out, at, &ARP_FORMAT)?;
    let at = put(out, at, &ARP_OP_REQUEST.to_be_bytes())?;
    let at = put(out, at, &src_mac)?;
    let at = put(out, at, &sender_ip.octets())?;
    let at = put(out, at, &[0; 6])?;
    let at = put(out, at, &target_ip.octets())?;
    pad(out, at)
}

/// Writes a neighbour solicitation for `target` from `src` / `src_mac`: to the
/// solicited-node multicast group of `target` (and its 33:33 MAC), or, with
/// `unicast_to`, to `target` itself at that MAC (reachability confirmation,
/// RFC 4861 §7.3.3). Hop limit 255; a source link-layer option unless `src` is `::`
/// (duplicate address detection, where RFC 4861 §7.1.1 forbids it). None also for a
/// multicast `target`, and for a unicast probe from `::` (RFC 4861 §7.1.1 sends those
/// to the solicited-node group only).
pub fn build_ns(
    out: &mut [u8],
    src_mac: [u8; 6],
    src: Ipv6Addr,
    target: Ipv6Addr,
    unicast_to: Option<[u8; 6]>,
) -> Option<usize> {
    if target.is_multicast() || (src.is_unspecified() && unicast_to.is_some()) {
        return None;
    }
    let (dst, dst_mac) = match unicast_to {
        Some(mac) => (target, mac),
        None => {
            let group = solicited_node(target);
            (group, multicast_mac(group))
        }
    };
    let l3 = put_ethernet(out, dst_mac, src_mac, &[], ethertype::IPV6)?;
    let l4 = l3 + 40;
    let at = put(out, l4, &[NS, 0, 0, 0, 0, 0, 0, 0])?;
    let mut at = put(out, at, &target.octets())?;
    if !src.is_unspecified() {
        at = put_sll(out, at, src_mac)?;
    }
    let end = seal_icmp6(out, l3, src, dst, ND_HOP_LIMIT, at - l4)?;
    pad(out, end)
}

/// What a router advertisement says (RFC 4861 §4.2, §4.6.2, §4.6.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RaParams<'a> {
    /// Cur Hop Limit for hosts (0: unspecified).
    pub hop_limit: u8,
    /// Router Lifetime in seconds (0: not a default router).
    pub lifetime_s: u16,
    /// Link MTU, in an MTU option when Some.
    pub mtu: Option<u32>,
    /// On-link prefixes for autoconfiguration: one Prefix Information option each,
    /// with the L and A flags; bits past the length are sent as zero.
    pub prefixes: &'a [(Ipv6Addr, u8)],
    /// Valid lifetime of every prefix, in seconds.
    pub valid_s: u32,
    /// Preferred lifetime of every prefix, in seconds (at most `valid_s`).
    pub preferred_s: u32,
}

/// Writes a router advertisement from `src` (the router's link-local address) and
/// `src_mac` to `dst`: all nodes (ff02::1) or a soliciting host. A multicast `dst`
/// goes to its 33:33 MAC; a unicast one to `dst_mac`. Hop limit 255, M and O flags
/// clear, reachable time and retransmission timer unspecified; options: source
/// link-layer address, MTU when `ra.mtu` is Some, then the prefixes.
///
/// None also when hosts would discard the message or its prefixes (RFC 4861 §6.1.2,
/// RFC 4862 §5.5.3): `src` not link-local, a prefix length over 128, a preferred
/// lifetime above the valid one; or a unicast `dst` without `dst_mac`.
pub fn build_ra(
    out: &mut [u8],
    src_mac: [u8; 6],
    src: Ipv6Addr,
    dst: Ipv6Addr,
    dst_mac: Option<[u8; 6]>,
    ra: &RaParams<'_>,
) -> Option<usize> {
    if !src.is_unicast_link_local() || ra.preferred_s > ra.valid_s {
        return None;
    }
    let dst_mac = if dst.is_multicast() {
        multicast_mac(dst)
    } else {
        dst_mac?
    };
    let l3 = put_ethernet(out, dst_mac, src_mac, &[], ethertype::IPV6)?;
    let l4 = l3 + 40;
    let [l0, l1] = ra.lifetime_s.to_be_bytes();
    let head = [RA, 0, 0, 0, ra.hop_limit, 0, l0, l1];
    let at = put(out, l4, &head)?;
    // Reachable Time and Retrans Timer: 0, unspecified.
    let at = put(out, at, &[0; 8])?;
    let mut at = put_sll(out, at, src_mac)?;
    if let Some(mtu) = ra.mtu {
        at = put(out, at, &[OPT_MTU, 1, 0, 0])?;
        at = put(out, at, &mtu.to_be_bytes())?;
    }
    for &(prefix, len) in ra.prefixes {
        if len > 128 {
            return None;
        }
        let mask = u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0);
        // Type, length 4 (32 bytes), prefix length, flags L (on-link) and A (autonomous).
        at = put(out, at, &[OPT_PREFIX, 4, len, 0xc0])?;
        at = put(out, at, &ra.valid_s.to_be_bytes())?;
        at = put(out, at, &ra.preferred_s.to_be_bytes())?;
        at = put(out, at, &[0; 4])?;
        at = put(out, at, &(u128::from(prefix) & mask).to_be_bytes())?;
    }
    let end = seal_icmp6(out, l3, src, dst, ND_HOP_LIMIT, at - l4)?;
    pad(out, end)
}

/// Writes a source link-layer address option for Ethernet.
fn put_sll(out: &mut [u8], at: usize, mac: [u8; 6]) -> Option<usize> {
    let at = put(out, at, &[OPT_SLL, 1])?;
    put(out, at, &mac)
}

/// The solicited-node multicast address of `target`: ff02::1:ff00:0/104 and the
/// low 24 bits of `target` (RFC 4291 §2.7.1).
pub fn solicited_node(target: Ipv6Addr) -> Ipv6Addr {
    const PREFIX: u128 = 0xff02_0000_0000_0000_0000_0001_ff00_0000;
    Ipv6Addr::from(PREFIX | (u128::from(target) & 0xff_ffff))
}

/// The Ethernet address of an IPv6 multicast group: 33:33 and the group's low 32
/// bits (RFC 2464 §7).
pub fn multicast_mac(group: Ipv6Addr) -> [u8; 6] {
    let [.., a, b, c, d] = group.octets();
    [0x33, 0x33, a, b, c, d]
}

/// The link-local address of an interface with this MAC: fe80::/64 and the modified
/// EUI-64 interface identifier, the U/L bit flipped (RFC 4291 app. A, RFC 2464 §4).
pub fn link_local(mac: [u8; 6]) -> Ipv6Addr {
    let [a, b, c, d, e, f] = mac;
    Ipv6Addr::from([
        0xfe,
        0x80,
        0,
        0,
        0,
        0,
        0,
        0,
        a ^ 0x02,
        b,
        c,
        0xff,
        0xfe,
        d,
        e,
        f,
    ])
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]
#[path = "neigh_tests.rs"]
mod tests;
