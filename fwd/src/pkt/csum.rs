//! Internet checksum (RFC 1071) and its incremental update (RFC 1624).
//!
//! Sums run over 32-bit big-endian words into a `u64` and are folded at the end: the
//! one's-complement sum is the same whatever the word width (2^16 ≡ 1 mod 0xFFFF), and
//! a `u64` cannot overflow before 2^32 words.
#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

/// What the NIC said of a frame's IPv4 header checksum (receive offload),
/// in the two bits of an mbuf's `ol_flags` that DPDK keeps it in
/// (`RTE_MBUF_F_RX_IP_CKSUM_BAD`, bit 4, and `_GOOD`, bit 7): reading an
/// mbuf's is a load and a mask. (As an `Option<bool>` made from the flags,
/// a select chain, it cost the fast path's recognition ~5 instructions a
/// packet more: `bench-results/counts.md`, 2026-12-07.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NicCsum(u8);

impl NicCsum {
    const BAD: u8 = 1 << 4;
    const GOOD: u8 = 1 << 7;
    /// Not checked: the software checks it.
    pub const UNCHECKED: NicCsum = NicCsum(0);

    /// The verdict in an mbuf's `ol_flags`: GOOD or BAD alone are the
    /// NIC's word; neither (UNKNOWN), or both (NONE: the header's
    /// integrity verified, its checksum field not), leave the check to the
    /// software.
    #[inline(always)]
    pub const fn from_ol_flags(ol_flags: u64) -> NicCsum {
        NicCsum(ol_flags as u8 & (Self::BAD | Self::GOOD))
    }

    /// `Some(good)` when the NIC checked the checksum; `None`: check it in
    /// software.
    #[inline(always)]
    pub fn checked(self) -> Option<bool> {
        match self.0 {
            Self::GOOD => Some(true),
            Self::BAD => Some(false),
            _ => None,
        }
    }
}

impl From<Option<bool>> for NicCsum {
    /// `Some(good)`: the NIC checked it; `None`: it did not.
    fn from(v: Option<bool>) -> Self {
        NicCsum(match v {
            Some(true) => Self::GOOD,
            Some(false) => Self::BAD,
            None => 0,
        })
    }
}

/// Adds `data` to a running one's-complement sum (not folded). `data` must start at
/// an even offset of the checksummed region; an odd final byte is padded with zero.
#[inline]
pub fn sum(mut data: &[u8], mut acc: u64) -> u64 {
    while let Some((w, rest)) = data.split_first_chunk::<4>() {
        acc += u64::from(u32::from_be_bytes(*w));
        data = rest;
    }
    if let Some((w, rest)) = data.split_first_chunk::<2>() {
        acc += u64::from(u16::from_be_bytes(*w));
        data = rest;
    }
    if let Some(&b) = data.first() {
        acc += u64::from(b) << 8;
    }
    acc
}

/// Folds a running sum to 16 bits with end-around carry (not complemented):
/// the two halves added with the carry out wrapped around, 64 to 32 bits,
/// then 32 to 16 (an add and an add-with-carry each). The result is 0 only
/// for a zero sum.
#[inline]
pub fn fold(acc: u64) -> u16 {
    let (s, carry) = (acc as u32).overflowing_add((acc >> 32) as u32);
    // No overflow: with a carry, `s` is at most 2^32 - 2.
    let s = s + u32::from(carry);
    let (s, carry) = (s as u16).overflowing_add((s >> 16) as u16);
    s + u16::from(carry)
}

/// The IPv4 header checksum to store for `hdr` (the whole header, IHL*4 bytes),
/// computed as if the checksum field (bytes 10..12) were zero.
#[inline]
pub fn ipv4_header_checksum(hdr: &[u8]) -> u16 {
    let head = hdr.get(..10).unwrap_or(hdr);
    let tail = hdr.get(12..).unwrap_or(&[]);
    !fold(sum(tail, sum(head, 0)))
}

/// True when `hdr` (the whole IPv4 header, checksum field included) is at least 20
/// bytes long and its checksum verifies.
#[inline(always)]
pub fn verify_ipv4_header(hdr: &[u8]) -> bool {
    // The common 20-byte header as two 64-bit and one 32-bit native-endian
    // loads with end-around carries. The one's-complement sum does not
    // depend on byte order (RFC 1071 §2(B)): summed little-endian it comes
    // out byte-swapped, and the verdict `0xFFFF` reads the same either way.
    // Options take the general loop.
    if let Ok(h) = <&[u8; 20]>::try_from(hdr) {
        let [a0, a1, a2, a3, a4, a5, a6, a7, b0, b1, b2, b3, b4, b5, b6, b7, c0, c1, c2, c3] = *h;
        let a = u64::from_ne_bytes([a0, a1, a2, a3, a4, a5, a6, a7]);
        let b = u64::from_ne_bytes([b0, b1, b2, b3, b4, b5, b6, b7]);
        let c = u64::from(u32::from_ne_bytes([c0, c1, c2, c3]));
        return verifies(add_carry(add_carry(a, b), c));
    }
    hdr.len() >= 20 && verifies(sum(hdr, 0))
}

/// True when a running sum over a region that includes its checksum
/// (not folded; any width of lanes, any byte order) folds to `0xFFFF`,
/// i.e. the checksum verifies. The fold keeps the sum's residue modulo
/// `0xFFFF` and is 0 only for a zero sum, so this is `acc` nonzero and a
/// multiple of `0xFFFF`: a multiply and a compare, where the fold takes
/// two add-with-carry rounds.
#[inline(always)]
pub fn verifies(acc: u64) -> bool {
    acc != 0 && acc.is_multiple_of(0xffff)
}

/// One's-complement addition of two 64-bit words (the carry out of bit 63
/// wraps around to bit 0; 2^64 ≡ 1 mod 0xFFFF, so the 16-bit fold is
/// unchanged).
#[inline(always)]
pub fn add_carry(a: u64, b: u64) -> u64 {
    let (s, carry) = a.overflowing_add(b);
    // No overflow: with a carry, `s` is at most 2^64 - 2.
    s + u64::from(carry)
}

/// RFC 1624 eqn. 3: the new checksum after one 16-bit word of the covered data changed
/// from `old` to `new`: `HC' = ~(~HC + ~m + m')`. Equals a full recomputation
/// (including the `0x0000` result where RFC 1141's method gives `0xFFFF`). Several
/// changed words can be chained through repeated calls.
#[inline]
pub fn incremental_update(old_csum: u16, old: u16, new: u16) -> u16 {
    let s = u32::from(!old_csum) + u32::from(!old) + u32::from(new);
    let s = (s & 0xffff) + (s >> 16);
    let s = (s & 0xffff) + (s >> 16);
    !(s as u16)
}

/// [`incremental_update`] for the one change a router makes to every IPv4
/// header, the TTL's decrement, on the checksum field as stored (network
/// order): the TTL:protocol word loses 0x0100, so the checksum gains 0x0100
/// with an end-around carry (the TTL must be at least 1). A result of
/// `0xFFFF` becomes `0x0000`, which is what RFC 1624 eqn. 3 and a full
/// recomputation give (Linux's `ip_decrease_ttl`). The addition is done on
/// the field as loaded, in native order: a one's-complement sum commutes
/// with swapping its bytes (RFC 1071 §2(B)), so no byte swap is needed.
#[inline(always)]
pub fn ttl_decrement_update(field: [u8; 2]) -> [u8; 2] {
    let c = u32::from(u16::from_ne_bytes(field)) + u32::from(0x0100u16.to_be());
    ((c + u32::from(c >= 0xffff)) as u16).to_ne_bytes()
}

/// TCP/UDP/ICMPv6-style checksum over the IPv4 pseudo-header and `segment` (the L4
/// header and payload). With the segment's checksum field zeroed this is the value to
/// store (UDP: store `0xFFFF` instead of `0`); over a segment whose field is filled
/// it is `0` when the checksum verifies. ICMPv4 has no pseudo-header: use
/// [`checksum`] for it.
pub fn l4_checksum_v4(src: [u8; 4], dst: [u8; 4], proto: u8, segment: &[u8]) -> u16 {
    let len = segment.len() as u64;
    let mut acc = u64::from(u32::from_be_bytes(src)) + u64::from(u32::from_be_bytes(dst));
    acc += u64::from(proto) + len;
    !fold(sum(segment, acc))
}

/// Like [`l4_checksum_v4`] with the IPv6 pseudo-header (RFC 8200 §8.1): `next_header`
/// is the upper-layer protocol, `dst` the final destination.
pub fn l4_checksum_v6(src: &[u8; 16], dst: &[u8; 16], next_header: u8, segment: &[u8]) -> u16 {
    let len = segment.len() as u64;
    let acc = sum(dst, sum(src, 0)) + len + u64::from(next_header);
    !fold(sum(segment, acc))
}

/// Plain Internet checksum of `data` (ICMPv4): the value to store with the field
/// zeroed, `0` over data whose field verifies.
pub fn checksum(data: &[u8]) -> u16 {
    !fold(sum(data, 0))
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]
#[path = "csum_tests.rs"]
mod tests;
