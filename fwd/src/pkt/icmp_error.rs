//! ICMP and ICMPv6 error messages the router sends about packets it cannot deliver
//! (RFC 792, RFC 1812 §4.3, RFC 4443).
//!
//! Two steps, both pure and allocation-free, neither able to panic whatever the bytes:
//!
//! - [`may_send_error`]: whether the rules allow an error about this packet at all
//!   (never about an error, a non-first fragment, a broadcast or multicast, or a
//!   source that does not name one host: RFC 1812 §4.3.2.7, RFC 4443 §2.4(e));
//! - [`build_error`]: the complete Ethernet frame of the error, written into a
//!   caller-owned buffer of [`MAX_ERROR_FRAME`] bytes, sent back the way the packet
//!   came (to its source MAC, with its VLAN tags).
//!
//! Rate limiting (RFC 1812 §4.3.2.8, RFC 4443 §2.4(f)) is the caller's: it is state,
//! and this module has none.
//!
//! The small writers at the bottom (`put`, `put_ethernet`, `seal_icmp6`, `pad`) are
//! shared with `neigh.rs`, which builds ICMPv6 messages of its own.
#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::net::{IpAddr, Ipv6Addr};

use super::csum::{checksum, ipv4_header_checksum, l4_checksum_v6};
use super::parse::{ethertype, ipproto, Fragment, L3Kind, Parsed};

/// The error to send about a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IcmpError {
    /// TTL / hop limit reached zero in transit: v4 type 11 code 0; v6 type 3 code 0.
    TimeExceeded,
    /// No route: v4 3/0; v6 1/0.
    NetUnreachable,
    /// Next hop does not answer (address resolution failed): v4 3/1; v6 1/3.
    HostUnreachable,
    /// v4 3/3; v6 1/4.
    PortUnreachable,
    /// Refused by a filter: v4 3/13; v6 1/1.
    AdminProhibited,
    /// IPv4 only: 3/4, DF set but the packet exceeds the next hop's `mtu`.
    FragNeeded {
        /// Next-hop MTU, written to bytes 6..8 (RFC 1191).
        mtu: u16,
    },
    /// IPv6 only: type 2 code 0.
    PacketTooBig {
        /// Next-hop MTU, written to bytes 4..8 (16 bits are plenty for an
        /// Ethernet MTU, and keep this type, and the worker's per-packet
        /// verdict that carries it, register-sized).
        mtu: u16,
    },
}

impl IcmpError {
    /// Type and code for the packet's family; None where the error has no meaning
    /// for it (`FragNeeded` for IPv6, `PacketTooBig` for IPv4).
    fn type_code(self, kind: L3Kind) -> Option<(u8, u8)> {
        let v4 = kind == L3Kind::V4;
        Some(match self {
            Self::TimeExceeded if v4 => (11, 0),
            Self::TimeExceeded => (3, 0),
            Self::NetUnreachable if v4 => (3, 0),
            Self::NetUnreachable => (1, 0),
            Self::HostUnreachable if v4 => (3, 1),
            Self::HostUnreachable => (1, 3),
            Self::PortUnreachable if v4 => (3, 3),
            Self::PortUnreachable => (1, 4),
            Self::AdminProhibited if v4 => (3, 13),
            Self::AdminProhibited => (1, 1),
            Self::FragNeeded { .. } if v4 => (3, 4),
            Self::PacketTooBig { .. } if !v4 => (2, 0),
            Self::FragNeeded { .. } | Self::PacketTooBig { .. } => return None,
        })
    }

    /// The four bytes after the checksum: unused (zero), or the MTU.
    fn rest_of_header(self) -> [u8; 4] {
        match self {
            Self::FragNeeded { mtu } => {
                let [hi, lo] = mtu.to_be_bytes();
                [0, 0, hi, lo]
            }
            Self::PacketTooBig { mtu } => u32::from(mtu).to_be_bytes(),
            _ => [0; 4],
        }
    }
}

/// RFC 1812 §4.3.2.3: an IPv4 error's datagram is at most 576 bytes.
const V4_MAX_DATAGRAM: usize = 576;
/// RFC 4443 §2.4(c): an ICMPv6 error must not exceed the minimum IPv6 MTU.
const V6_MIN_MTU: usize = 1280;
/// Ethernet header with two VLAN tags: the most `parse` accepts.
const MAX_L2: usize = 22;
/// Minimum Ethernet frame without FCS.
const MIN_FRAME: usize = 60;

/// Largest frame [`build_error`] can produce (for sizing `out`): two VLAN tags and a
/// 1280-byte IPv6 packet.
pub const MAX_ERROR_FRAME: usize = MAX_L2 + V6_MIN_MTU;

/// What `p` points at in `frame`.
struct Original<'a> {
    /// VLAN tags: bytes 12 .. `l3_off` - 2 (empty when untagged).
    tags: &'a [u8],
    /// The IP packet, without Ethernet padding.
    ip: &'a [u8],
}

/// The original packet's parts, None when `p` does not describe `frame`: an offset
/// `parse` does not produce, something other than VLAN tags before the EtherType, an
/// EtherType or IP version not of `p.kind`, a packet beyond the frame.
fn original<'a>(frame: &'a [u8], p: &Parsed) -> Option<Original<'a>> {
    let l3 = usize::from(p.l3_off);
    if !matches!(l3, 14 | 18 | 22) {
        return None;
    }
    let (et, version, min) = match p.kind {
        L3Kind::V4 => (ethertype::IPV4, 4, 20),
        L3Kind::V6 => (ethertype::IPV6, 6, 40),
    };
    let ip = frame.get(l3..l3 + usize::from(p.l3_len))?;
    let tags = frame.get(12..l3 - 2)?;
    let tags_ok = tags.chunks(4).all(|t| {
        let tpid = t.first_chunk::<2>().map(|b| u16::from_be_bytes(*b));
        tpid == Some(ethertype::VLAN) || tpid == Some(ethertype::QINQ)
    });
    let et_ok = frame.get(l3 - 2..l3)? == et.to_be_bytes();
    if !tags_ok || !et_ok || ip.len() < min || ip.first()? >> 4 != version {
        return None;
    }
    Some(Original { tags, ip })
}

/// Whether RFC 1812 §4.3.2.7 / RFC 4443 §2.4(e) allow an error about this packet.
///
/// `p` is `parse(frame)`'s result. False when `err` is not of the packet's family,
/// `p` does not fit `frame`, or the packet is: an ICMP error (IPv4 types 3, 4, 5, 11,
/// 12) or an ICMPv6 error or redirect (types below 128, and 137); a non-first
/// fragment; sent to a link-layer group address, an IPv4 multicast or limited
/// broadcast address, or an IPv6 multicast address (except that `PacketTooBig` may
/// answer IPv6 multicast and link-layer multicast, RFC 4443 §2.4(e.3-5)); from a
/// source that does not name a single host (IPv4 0/8, 127/8, 224/4 and above; IPv6
/// `::`, `::1`, ff00::/8).
pub fn may_send_error(frame: &[u8], p: &Parsed, err: IcmpError) -> bool {
    may_send(frame, p, err).is_some()
}

fn may_send(frame: &[u8], p: &Parsed, err: IcmpError) -> Option<()> {
    err.type_code(p.kind)?;
    original(frame, p)?;
    if p.frag == Fragment::NonFirst {
        return None;
    }
    let link_group = frame.first()? & 1 != 0;
    let refused = match p.kind {
        L3Kind::V4 => {
            let src = p.src_v4() >> 24;
            let dst = p.dst_v4();
            let about_error = p.proto == ipproto::ICMP
                && (p.l4_off == 0 || matches!(p.sport, 3 | 4 | 5 | 11 | 12));
            about_error
                || link_group
                || dst >> 28 == 0xe
                || dst == u32::MAX
                || src == 0
                || src == 127
                || src >= 224
        }
        L3Kind::V6 => {
            let (src, dst) = (p.src_v6(), p.dst_v6());
            let about_error =
                p.proto == ipproto::ICMPV6 && (p.l4_off == 0 || p.sport < 128 || p.sport == 137);
            let group = link_group || dst >> 120 == 0xff;
            let too_big = matches!(err, IcmpError::PacketTooBig { .. });
            about_error || (group && !too_big) || src <= 1 || src >> 120 == 0xff
        }
    };
    (!refused).then_some(())
}

/// Writes the complete Ethernet frame of the error about `frame` into `out` and
/// returns its length (at least 60, at most [`MAX_ERROR_FRAME`]).
///
/// The frame goes back to `frame`'s source MAC from `src_mac`, with `frame`'s VLAN
/// tags. IPv4: TOS 0xc0, id 0, no DF, TTL 64, from `src` to the packet's source,
/// quoting as much of the packet as fits a 576-byte datagram. IPv6: hop limit 64,
/// quoting as much as fits 1280 bytes. The quote never includes Ethernet padding.
///
/// Does not check [`may_send_error`]: the caller does, first. None when `out` is too
/// small, `err` or `src` is not of the packet's family, or `p` does not fit `frame`;
/// `out` may then have been partly written.
pub fn build_error(
    out: &mut [u8],
    frame: &[u8],
    p: &Parsed,
    err: IcmpError,
    src: IpAddr,
    src_mac: [u8; 6],
) -> Option<usize> {
    let (ty, code) = err.type_code(p.kind)?;
    let o = original(frame, p)?;
    let peer = *frame.get(6..)?.first_chunk::<6>()?;
    let (ip_hdr, limit, et) = match p.kind {
        L3Kind::V4 => (20, V4_MAX_DATAGRAM, ethertype::IPV4),
        L3Kind::V6 => (40, V6_MIN_MTU, ethertype::IPV6),
    };
    let quote = o.ip.get(..o.ip.len().min(limit - ip_hdr - 8))?;
    let icmp_len = 8 + quote.len();
    let l3 = 14 + o.tags.len();
    let l4 = l3 + ip_hdr;
    let end = l4 + icmp_len;
    let out = out.get_mut(..end.max(MIN_FRAME))?;

    put_ethernet(out, peer, src_mac, o.tags, et)?;
    let [a, b, c, d] = err.rest_of_header();
    let at = put(out, l4, &[ty, code, 0, 0, a, b, c, d])?;
    put(out, at, quote)?;
    match (p.kind, src) {
        (L3Kind::V4, IpAddr::V4(src)) => {
            let [d0, d1, d2, d3, ..] = p.src;
            // icmp_len <= 556: the total length fits.
            let [t0, t1] = ((ip_hdr + icmp_len) as u16).to_be_bytes();
            let mut h = [0u8; 20];
            h[..4].copy_from_slice(&[0x45, 0xc0, t0, t1]);
            h[8..10].copy_from_slice(&[64, ipproto::ICMP]);
            h[12..16].copy_from_slice(&src.octets());
            h[16..20].copy_from_slice(&[d0, d1, d2, d3]);
            let hc = ipv4_header_checksum(&h);
            h[10..12].copy_from_slice(&hc.to_be_bytes());
            put(out, l3, &h)?;
            let ic = checksum(out.get(l4..end)?);
            put(out, l4 + 2, &ic.to_be_bytes())?;
        }
        (L3Kind::V6, IpAddr::V6(src)) => {
            seal_icmp6(out, l3, src, Ipv6Addr::from(p.src), 64, icmp_len)?;
        }
        _ => return None,
    }
    pad(out, end)
}

/// Copies `bytes` into `out` at `at`; returns the offset after them.
pub(super) fn put(out: &mut [u8], at: usize, bytes: &[u8]) -> Option<usize> {
    let end = at.checked_add(bytes.len())?;
    out.get_mut(at..end)?.copy_from_slice(bytes);
    Some(end)
}

/// Writes an Ethernet header (with `tags`, raw VLAN tag bytes, between the source
/// MAC and the EtherType); returns the L3 offset.
pub(super) fn put_ethernet(
    out: &mut [u8],
    dst: [u8; 6],
    src: [u8; 6],
    tags: &[u8],
    et: u16,
) -> Option<usize> {
    let at = put(out, 0, &dst)?;
    let at = put(out, at, &src)?;
    let at = put(out, at, tags)?;
    put(out, at, &et.to_be_bytes())
}

/// Writes the IPv6 header at `l3` for the ICMPv6 message of `len` bytes already in
/// place behind it, and fills in the message's checksum (RFC 4443 §2.3); returns the
/// offset after the message.
pub(super) fn seal_icmp6(
    out: &mut [u8],
    l3: usize,
    src: Ipv6Addr,
    dst: Ipv6Addr,
    hop_limit: u8,
    len: usize,
) -> Option<usize> {
    let [l0, l1] = u16::try_from(len).ok()?.to_be_bytes();
    let (src, dst) = (src.octets(), dst.octets());
    let mut h = [0u8; 40];
    h[..8].copy_from_slice(&[0x60, 0, 0, 0, l0, l1, ipproto::ICMPV6, hop_limit]);
    h[8..24].copy_from_slice(&src);
    h[24..40].copy_from_slice(&dst);
    let l4 = put(out, l3, &h)?;
    let end = l4.checked_add(len)?;
    let msg = out.get_mut(l4..end)?;
    put(msg, 2, &[0, 0])?;
    let c = l4_checksum_v6(&src, &dst, ipproto::ICMPV6, msg);
    put(msg, 2, &c.to_be_bytes())?;
    Some(end)
}

/// Zero-fills `out` from `end` up to the 60-byte Ethernet minimum; returns the frame
/// length.
pub(super) fn pad(out: &mut [u8], end: usize) -> Option<usize> {
    let len = end.max(MIN_FRAME);
    out.get_mut(end..len)?.fill(0);
    Some(len)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]
#[path = "icmp_error_tests.rs"]
mod tests;
