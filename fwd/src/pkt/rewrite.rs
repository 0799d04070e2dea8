//! In-place forwarding rewrite: TTL / hop limit, MAC addresses, DSCP.
#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use super::csum;
use super::parse::{L3Kind, Parsed};

/// Why [`forward_rewrite`] did not rewrite a frame. `Copy`, for drop counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum RewriteError {
    /// TTL / hop limit is 0 or 1: the packet must not be forwarded (the worker drops
    /// it or answers with ICMP Time Exceeded).
    TtlExpired,
    /// The frame is too short for the offsets in the `Parsed` (it was not produced by
    /// parsing this frame). Never happens when `p` comes from `parse(frame)`.
    FrameMismatch,
}

impl RewriteError {
    /// Stable snake_case name for counters.
    pub fn name(self) -> &'static str {
        match self {
            Self::TtlExpired => "ttl_expired",
            Self::FrameMismatch => "frame_mismatch",
        }
    }
}

impl std::fmt::Display for RewriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::error::Error for RewriteError {}

/// The first `N` bytes of the IP header of `frame` as described by `p`.
#[inline(always)]
fn l3_mut<'a, const N: usize>(frame: &'a mut [u8], p: &Parsed) -> Option<&'a mut [u8; N]> {
    frame
        .get_mut(usize::from(p.l3_off)..)
        .and_then(|s| s.first_chunk_mut::<N>())
}

/// Forwarding rewrite in place: decrements the IPv4 TTL (updating the header checksum
/// incrementally, RFC 1624 eqn. 3) or the IPv6 hop limit, and writes the destination
/// and source MAC addresses. The TTL is read from the frame, not from `p`.
///
/// # Errors
///
/// [`RewriteError::TtlExpired`] when the TTL / hop limit is <= 1, and
/// [`RewriteError::FrameMismatch`] when the frame is shorter than `p` says; in both
/// cases the frame is left untouched.
#[inline(always)]
pub fn forward_rewrite(
    frame: &mut [u8],
    p: &Parsed,
    dst_mac: [u8; 6],
    src_mac: [u8; 6],
) -> Result<(), RewriteError> {
    // Checked up front so that no error path leaves a half-written frame.
    if frame.len() < 12 {
        return Err(RewriteError::FrameMismatch);
    }
    match p.kind {
        L3Kind::V4 => {
            let h = l3_mut(frame, p).ok_or(RewriteError::FrameMismatch)?;
            if !decrement_ttl_v4(h) {
                return Err(RewriteError::TtlExpired);
            }
        }
        L3Kind::V6 => {
            let h = l3_mut(frame, p).ok_or(RewriteError::FrameMismatch)?;
            if !decrement_hop_limit(h) {
                return Err(RewriteError::TtlExpired);
            }
        }
    }
    if let Some(eth) = frame.first_chunk_mut::<12>() {
        // Two 6-byte copies: assembling the 12 bytes one by one compiled
        // to byte moves (23 instructions a packet, `bench-results/throughput.md`).
        let (d, s) = eth.split_at_mut(6);
        d.copy_from_slice(&dst_mac);
        s.copy_from_slice(&src_mac);
    }
    Ok(())
}

/// Decrements the TTL of the IPv4 header that starts with `h` and updates
/// its checksum (RFC 1624); false, `h` untouched, when the TTL is 0 or 1.
#[inline(always)]
fn decrement_ttl_v4(h: &mut [u8; 12]) -> bool {
    let ttl = h[8];
    if ttl <= 1 {
        return false;
    }
    // The checksummed 16-bit word is TTL:protocol.
    h[8] = ttl - 1;
    [h[10], h[11]] = csum::ttl_decrement_update([h[10], h[11]]);
    true
}

/// [`decrement_ttl_v4`] for the hop limit of the IPv6 header that starts
/// with `h`.
#[inline(always)]
fn decrement_hop_limit(h: &mut [u8; 8]) -> bool {
    let hl = h[7];
    if hl <= 1 {
        return false;
    }
    h[7] = hl - 1;
    true
}

/// A frame's destination and source MAC addresses, ready to write as two
/// stores (an 8-byte and a 4-byte one): built once per next hop. As a
/// 12-byte array the copy compiled to byte moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MacPair {
    /// Bytes 0..8 (the destination, then the source's first two).
    lo: u64,
    /// Bytes 8..12.
    hi: u32,
}

impl MacPair {
    #[inline(always)]
    pub fn new(dst: [u8; 6], src: [u8; 6]) -> MacPair {
        let [d0, d1, d2, d3, d4, d5] = dst;
        let [s0, s1, s2, s3, s4, s5] = src;
        MacPair {
            lo: u64::from_le_bytes([d0, d1, d2, d3, d4, d5, s0, s1]),
            hi: u32::from_le_bytes([s2, s3, s4, s5]),
        }
    }

    /// Writes the addresses over the frame's first 12 bytes.
    #[inline(always)]
    fn write<const N: usize>(self, frame: &mut [u8; N]) {
        if let Some((lo, rest)) = frame.split_first_chunk_mut::<8>() {
            *lo = self.lo.to_le_bytes();
            if let Some(hi) = rest.first_chunk_mut::<4>() {
                *hi = self.hi.to_le_bytes();
            }
        }
    }
}

/// [`forward_rewrite`] of a frame [`plain_v4`](super::plain_v4) accepted,
/// with the egress MTU checked, at the frame's fixed offsets: the TTL
/// decremented (and the header checksum updated), then `eth` (destination
/// and source MAC) written. Returns the IP packet's end in the frame (the
/// frame may be longer: Ethernet padding), or None, the frame untouched,
/// when the TTL is 0 or 1, the packet is longer than `mtu`, or the frame
/// is shorter than the headers.
#[inline(always)]
pub fn forward_plain_v4(frame: &mut [u8], mtu: u16, eth: MacPair) -> Option<usize> {
    let h = frame.first_chunk_mut::<34>()?;
    let total = u16::from_be_bytes([h[16], h[17]]);
    if total > mtu || !decrement_ttl_v4(h.get_mut(14..)?.first_chunk_mut()?) {
        return None;
    }
    eth.write(h);
    Some(14 + usize::from(total))
}

/// [`forward_plain_v4`] for a frame [`plain_v6`](super::plain_v6) accepted:
/// the hop limit decremented, `eth` written.
#[inline(always)]
pub fn forward_plain_v6(frame: &mut [u8], mtu: u16, eth: MacPair) -> Option<usize> {
    let h = frame.first_chunk_mut::<22>()?;
    let total = 40 + usize::from(u16::from_be_bytes([h[18], h[19]]));
    if total > usize::from(mtu) || !decrement_hop_limit(h.get_mut(14..)?.first_chunk_mut()?) {
        return None;
    }
    eth.write(h);
    Some(14 + total)
}

/// Sets the DSCP (the upper 6 bits of `dscp` are ignored) keeping the ECN bits; for
/// IPv4 the header checksum is updated incrementally. Does nothing when the frame is
/// too short for `p` (see [`RewriteError::FrameMismatch`]).
#[inline]
pub fn set_dscp(frame: &mut [u8], p: &Parsed, dscp: u8) {
    let dscp = dscp & 0x3f;
    match p.kind {
        L3Kind::V4 => {
            let Some(h) = l3_mut::<12>(frame, p) else {
                return;
            };
            let tos = (dscp << 2) | (h[1] & 0x03);
            let old = u16::from_be_bytes([h[0], h[1]]);
            let new = u16::from_be_bytes([h[0], tos]);
            let c = csum::incremental_update(u16::from_be_bytes([h[10], h[11]]), old, new);
            h[1] = tos;
            [h[10], h[11]] = c.to_be_bytes();
        }
        L3Kind::V6 => {
            let Some(h) = l3_mut::<2>(frame, p) else {
                return;
            };
            // Traffic class straddles bytes 0 and 1: vvvv TTTT | TTTT ffff, DSCP is its
            // top 6 bits, ECN the bottom 2.
            h[0] = (h[0] & 0xf0) | (dscp >> 2);
            h[1] = ((dscp & 0x03) << 6) | (h[1] & 0x3f);
        }
    }
}

/// True when the IPv4 header checksum of `frame` (as parsed into `p`) verifies; true
/// for IPv6, which has none. For NICs without RX checksum offload.
#[inline(always)]
pub fn ipv4_checksum_ok(frame: &[u8], p: &Parsed) -> bool {
    if p.kind == L3Kind::V6 {
        return true;
    }
    let l3 = usize::from(p.l3_off);
    let Some(&[vihl, ..]) = frame.get(l3..).and_then(|s| s.first_chunk::<1>()) else {
        return false;
    };
    let ihl = usize::from(vihl & 0x0f) * 4;
    frame
        .get(l3..l3 + ihl)
        .is_some_and(csum::verify_ipv4_header)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]
#[path = "rewrite_tests.rs"]
mod tests;
