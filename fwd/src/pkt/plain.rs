//! The common case of [`parse_into`](super::parse_into), recognised in one
//! go: an untagged IPv4 frame with a 20-byte header (no options), not a
//! fragment, carrying UDP or TCP, whose header checksum verifies; or an
//! untagged IPv6 frame without extension headers carrying UDP or TCP.
//!
//! It is a filter in front of the general parser, never a second opinion:
//! when it accepts a frame, [`parse_into`](super::parse_into) accepts it
//! too and produces the very same [`Parsed`], and the checksum check
//! ([`ipv4_checksum_ok`](super::ipv4_checksum_ok), or the NIC's verdict)
//! passes; everything else (VLAN tags, options, extension headers,
//! fragments, other protocols, bad or truncated headers) is refused and
//! left to the general parser. The property tests hold it to that.
#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use super::csum;
use super::parse::{ipproto, tcp_flags, Fragment, L3Kind, Parsed};

/// Ethernet header, untagged.
const L3: usize = 14;
/// A 20-byte IPv4 header.
const L4: usize = L3 + 20;
/// The IPv6 header.
const L4_V6: usize = L3 + 40;

/// Fills `out` for a plain IPv4 UDP or TCP frame and returns true; false
/// (with `out` in any state) for every other frame. `nic_csum` is the
/// NIC's verdict on the header checksum when it checked (`None`: checked
/// here).
#[inline(always)]
pub fn parse_plain_v4(frame: &[u8], nic_csum: Option<bool>, out: &mut Parsed) -> bool {
    // Ethernet, IPv4 and the first 20 bytes after it (a UDP frame of the
    // minimum size, 60 bytes without the FCS, has them).
    let Some((eth, rest)) = frame.split_first_chunk::<L3>() else {
        return false;
    };
    let Some((ip, rest)) = rest.split_first_chunk::<20>() else {
        return false;
    };
    let Some(l4) = rest.first_chunk::<20>() else {
        return false;
    };
    let [.., e0, e1] = *eth;
    let [vihl, tos, tl0, tl1, _, _, fo0, fo1, ttl, proto, _, _, s0, s1, s2, s3, d0, d1, d2, d3] =
        *ip;
    let total = usize::from(u16::from_be_bytes([tl0, tl1]));
    // Untagged IPv4, IHL 5, the packet within the frame, no fragment (the
    // offset and MF are zero; DF may be set).
    if [e0, e1] != [0x08, 0x00]
        || vihl != 0x45
        || total > frame.len() - L3
        || u16::from_be_bytes([fo0, fo1]) & 0x3fff != 0
    {
        return false;
    }
    let flags = match proto {
        ipproto::UDP if total >= 20 + 8 => 0,
        ipproto::TCP if total >= 20 + 20 => {
            let doff = usize::from(l4[12] >> 4) * 4;
            if doff < 20 || 20 + doff > total {
                return false;
            }
            u16::from_be_bytes([l4[12], l4[13]]) & tcp_flags::ALL
        }
        _ => return false,
    };
    if !nic_csum.unwrap_or_else(|| csum::verify_ipv4_header(ip)) {
        return false;
    }
    *out = Parsed {
        l3_off: L3 as u16,
        l4_off: L4 as u16,
        outer_vlan: None,
        inner_vlan: None,
        kind: L3Kind::V4,
        proto,
        src: u128::from(u32::from_le_bytes([s0, s1, s2, s3])).to_le_bytes(),
        dst: u128::from(u32::from_le_bytes([d0, d1, d2, d3])).to_le_bytes(),
        ttl,
        dscp: tos >> 2,
        sport: u16::from_be_bytes([l4[0], l4[1]]),
        dport: u16::from_be_bytes([l4[2], l4[3]]),
        tcp_flags: flags,
        frag: Fragment::None,
        l3_len: total as u16,
    };
    true
}

/// [`parse_plain_v4`]'s IPv6 counterpart: fills `out` for an untagged
/// IPv6 frame whose next header is UDP or TCP (no extension headers) and
/// returns true; false (with `out` in any state) for every other frame.
#[inline(always)]
pub fn parse_plain_v6(frame: &[u8], out: &mut Parsed) -> bool {
    let Some((eth, rest)) = frame.split_first_chunk::<L3>() else {
        return false;
    };
    let Some((ip, l4)) = rest.split_first_chunk::<40>() else {
        return false;
    };
    let [.., e0, e1] = *eth;
    let total = 40 + usize::from(u16::from_be_bytes([ip[4], ip[5]]));
    // Untagged IPv6, the packet within the frame (and its length a u16,
    // as `Parsed::l3_len` is).
    if [e0, e1] != [0x86, 0xdd]
        || ip[0] >> 4 != 6
        || total > l4.len() + 40
        || total > usize::from(u16::MAX)
    {
        return false;
    }
    let (sport, dport, flags) = match ip[6] {
        ipproto::UDP if total >= 40 + 8 => match l4.first_chunk::<8>() {
            Some(u) => (
                u16::from_be_bytes([u[0], u[1]]),
                u16::from_be_bytes([u[2], u[3]]),
                0,
            ),
            None => return false,
        },
        ipproto::TCP if total >= 40 + 20 => {
            let Some(t) = l4.first_chunk::<20>() else {
                return false;
            };
            let doff = usize::from(t[12] >> 4) * 4;
            if doff < 20 || 40 + doff > total {
                return false;
            }
            (
                u16::from_be_bytes([t[0], t[1]]),
                u16::from_be_bytes([t[2], t[3]]),
                u16::from_be_bytes([t[12], t[13]]) & tcp_flags::ALL,
            )
        }
        _ => return false,
    };
    let addr = |at: usize| {
        ip.get(at..)
            .and_then(|a| a.first_chunk::<16>())
            .copied()
            .unwrap_or_default()
    };
    *out = Parsed {
        l3_off: L3 as u16,
        l4_off: L4_V6 as u16,
        outer_vlan: None,
        inner_vlan: None,
        kind: L3Kind::V6,
        proto: ip[6],
        src: addr(8),
        dst: addr(24),
        ttl: ip[7],
        dscp: ((ip[0] & 0x0f) << 2) | (ip[1] >> 6),
        sport,
        dport,
        tcp_flags: flags,
        frag: Fragment::None,
        l3_len: total as u16,
    };
    true
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]
#[path = "plain_tests.rs"]
mod tests;
