//! The common case of [`parse_into`](super::parse_into), recognised in one
//! go: an untagged IPv4 frame with a 20-byte header (no options), not a
//! fragment, whose header checksum verifies; or an untagged IPv6 frame
//! without extension headers. Any upper-layer protocol: UDP and TCP, and
//! also ICMP, ESP, GRE, SCTP and the rest (a router's transit traffic is
//! not only UDP and TCP: IPsec and GRE tunnels, pings, traceroutes), with
//! as much of its header as the general parser reads of it.
//!
//! It is a filter in front of the general parser, never a second opinion:
//! when it accepts a frame, [`parse_into`](super::parse_into) accepts it
//! too and produces the very same [`Parsed`], and the checksum check
//! ([`ipv4_checksum_ok`](super::ipv4_checksum_ok), or the NIC's verdict)
//! passes; everything else (VLAN tags, options, extension headers,
//! fragments, bad or truncated headers) is refused and left to the general
//! parser. The property tests hold it to that.
//!
//! [`plain_v4`] and [`plain_v6`] only recognise, and hand back a view of
//! the frame that reads what is asked of it (the destination for the
//! lookup; the whole [`Parsed`] only where a rule key or a flow hash needs
//! it); [`parse_plain_v4`] and [`parse_plain_v6`] fill a `Parsed` at once.
#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use super::csum::{self, NicCsum};
use super::hash;
use super::parse::{ipproto, l4_ports, tcp_flags, Fragment, L3Kind, Parsed};

/// Ethernet header, untagged.
const L3: usize = 14;
/// A 20-byte IPv4 header.
const L4: usize = L3 + 20;
/// The IPv6 header.
const L4_V6: usize = L3 + 40;

/// A frame [`plain_v4`] accepted: its Ethernet, IPv4 and first 20 L4
/// bytes, read on demand.
#[derive(Clone, Copy)]
pub struct PlainV4<'a>(&'a [u8; L4 + 20]);

/// A frame [`plain_v6`] accepted, as [`PlainV4`]: its Ethernet and IPv6
/// headers and what follows them.
#[derive(Clone, Copy)]
pub struct PlainV6<'a>(&'a [u8; L4_V6], &'a [u8]);

/// Recognises a plain IPv4 frame: untagged, IHL 5, not a fragment, the
/// packet within the frame, what the general parser reads of its
/// upper-layer header within the packet ([`other_need`]), and its header
/// checksum good. `nic_csum` is the NIC's verdict on the checksum
/// ([`NicCsum::UNCHECKED`]: checked here).
///
/// The header is read as 64-bit words, the checks masked compares on them
/// and the checksum their one's-complement sum: the frame's bytes 12..36
/// as three little-endian words hold the EtherType, the whole IPv4 header
/// and its addresses at fixed places.
#[inline(always)]
pub fn plain_v4(frame: &[u8], nic_csum: NicCsum) -> Option<PlainV4<'_>> {
    // Ethernet, IPv4 and the first 20 bytes after it (a UDP frame of the
    // minimum size, 60 bytes without the FCS, has them).
    let h = frame.first_chunk::<{ L4 + 20 }>()?;
    let word = |at: usize| le_word(h, at);
    // w0: EtherType, version/IHL, TOS, total length, id (bytes 12..20);
    // w1: flags/fragment offset, TTL, protocol, checksum, source (20..28);
    // w2: source, destination, the first L4 bytes (28..36).
    let (w0, w1, w2) = (word(12), word(20), word(28));
    let total = usize::from(((w0 >> 32) as u16).swap_bytes());
    // Untagged IPv4 (0x0800), IHL 5, the packet within the frame, no
    // fragment (the offset and MF are zero; DF may be set).
    if w0 & 0xff_ffff != 0x45_0008 || total > frame.len() - L3 || w1 & 0xff3f != 0 {
        return None;
    }
    let tcp_doff = || h.get(L4 + 12).copied();
    if !upper_fits((w1 >> 24) as u8, 20, total, tcp_doff, ipproto::ICMP) {
        return None;
    }
    // The header, bytes 14..34, in 16-bit lanes of the same byte order:
    // w0's upper 48 bits, w1 as two halves, w2's lower 48 bits. Their sum
    // cannot overflow a u64, so no carry needs wrapping.
    // (A match, not `unwrap_or_else`: its closure was not inlined.)
    let ok = match nic_csum.checked() {
        Some(ok) => ok,
        None => {
            csum::verifies((w0 >> 16) + (w1 & 0xffff_ffff) + (w1 >> 32) + (w2 & 0xffff_ffff_ffff))
        }
    };
    ok.then_some(PlainV4(h))
}

impl<'a> PlainV4<'a> {
    /// The view of a frame that [`plain_v4`] accepted earlier, and that
    /// nothing changed since, without checking it again (None: shorter
    /// than any frame it accepts). Of a frame it did not accept, the view's
    /// answers are meaningless, though never a panic.
    #[inline(always)]
    pub fn again(frame: &'a [u8]) -> Option<Self> {
        frame.first_chunk().map(PlainV4)
    }

    /// [`flow_hash`](super::flow_hash)`(&self.parsed())`, from the frame's
    /// words: the addresses and both ports are one load each.
    #[inline(always)]
    pub fn flow_hash(&self) -> u32 {
        let [.., proto, _, _, s0, s1, s2, s3, d0, d1, d2, d3] = *self.ip();
        let l4 = self.0.last_chunk::<20>().unwrap_or(&[0; 20]);
        hash::flow_hash_words(
            (u64::from(u32::from_le_bytes([s0, s1, s2, s3])), 0),
            (u64::from(u32::from_le_bytes([d0, d1, d2, d3])), 0),
            proto,
            L3Kind::V4,
            l4_ports(proto, ipproto::ICMP, [l4[0], l4[1], l4[2], l4[3]]),
        )
    }

    /// The destination address, host order.
    #[inline(always)]
    pub fn dst(&self) -> u32 {
        let [.., d0, d1, d2, d3] = *self.ip();
        u32::from_be_bytes([d0, d1, d2, d3])
    }

    #[inline(always)]
    fn ip(&self) -> &[u8; 20] {
        self.0
            .get(L3..L4)
            .and_then(|s| s.first_chunk::<20>())
            .unwrap_or(&[0; 20])
    }

    /// The frame as [`parse_into`](super::parse_into) reads it.
    #[inline(always)]
    pub fn parsed(&self) -> Parsed {
        let [_, tos, tl0, tl1, _, _, _, _, ttl, proto, _, _, s0, s1, s2, s3, d0, d1, d2, d3] =
            *self.ip();
        let l4 = self.0.last_chunk::<20>().unwrap_or(&[0; 20]);
        let flags = if proto == ipproto::TCP {
            u16::from_be_bytes([l4[12], l4[13]]) & tcp_flags::ALL
        } else {
            0
        };
        let ports = l4_ports(proto, ipproto::ICMP, [l4[0], l4[1], l4[2], l4[3]]);
        Parsed {
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
            sport: (ports >> 16) as u16,
            dport: ports as u16,
            tcp_flags: flags,
            frag: Fragment::None,
            l3_len: u16::from_be_bytes([tl0, tl1]),
        }
    }
}

/// [`plain_v4`] filling `out` with [`PlainV4::parsed`]: true when the
/// frame is a plain IPv4 frame (`out` in any state otherwise).
#[inline(always)]
pub fn parse_plain_v4(frame: &[u8], nic_csum: NicCsum, out: &mut Parsed) -> bool {
    plain_v4(frame, nic_csum)
        .map(|h| *out = h.parsed())
        .is_some()
}

/// [`plain_v4`]'s IPv6 counterpart: an untagged IPv6 frame whose next
/// header is an upper-layer protocol (no extension headers, not "no next
/// header"), the packet within the frame, what the general parser reads of
/// its upper-layer header within the packet ([`other_need`]).
#[inline(always)]
pub fn plain_v6(frame: &[u8]) -> Option<PlainV6<'_>> {
    let (h, l4) = frame.split_first_chunk::<L4_V6>()?;
    // Bytes 12..20 (the EtherType, the version nibble, the payload length)
    // and 20 (the next header) as a word and a byte, as `plain_v4` reads
    // its header: one load and one test for the first three checks.
    let w = le_word(h, 12);
    let payload = usize::from(((w >> 48) as u16).swap_bytes());
    let total = 40 + payload;
    // Untagged IPv6, the packet within the frame (and its length a u16,
    // as `Parsed::l3_len` is).
    if w & 0xf0_ffff != 0x60_dd86 || payload > l4.len().min(usize::from(u16::MAX) - 40) {
        return None;
    }
    let proto = h.get(20).copied().unwrap_or(ipproto::NONXT);
    let tcp_doff = || l4.get(12).copied();
    upper_fits(proto, 40, total, tcp_doff, ipproto::ICMPV6).then_some(PlainV6(h, l4))
}

/// The 8 bytes of `h` from `at` as a little-endian word (0 past its end:
/// the callers' headers are fixed-size arrays that hold their words).
#[inline(always)]
fn le_word(h: &[u8], at: usize) -> u64 {
    h.get(at..)
        .and_then(|w| w.first_chunk::<8>())
        .map_or(0, |w| u64::from_le_bytes(*w))
}

/// Whether the upper-layer header of protocol `proto` lies within a packet
/// of `total` bytes behind an IP header of `ip` bytes, as far as the
/// general parser reads it: UDP's 8 bytes; TCP's data offset (the high
/// nibble of `tcp_doff()`, its 13th byte, in 4-byte words), at least 20;
/// [`other_need`]'s for the others (`icmp`: the family's ICMP). UDP and
/// then TCP are tested first, each as one test of the protocol and the
/// length together: LLVM folds branches on compares of `proto` alone into
/// one switch, which for IPv6's protocols became a jump table (7
/// instructions before UDP's test) and for IPv4's a decision tree (UDP
/// through five compares). `tcp_doff` is a closure, not the byte, though
/// every packet past UDP's test reads it: passed as a value, IPv6's byte
/// was read before that test, +3.1 instructions a packet in the poll loop
/// (`counts.sh`, 2026-12-08).
#[inline(always)]
fn upper_fits(
    proto: u8,
    ip: usize,
    total: usize,
    tcp_doff: impl FnOnce() -> Option<u8>,
    icmp: u8,
) -> bool {
    if (proto == ipproto::UDP) & (ip + 8 <= total) {
        return true;
    }
    let doff = tcp_doff().map_or(0, |b| usize::from(b >> 4) * 4);
    if (proto == ipproto::TCP) & (doff >= 20) & (ip + doff <= total) {
        return true;
    }
    match proto {
        // Their headers beyond the packet.
        ipproto::UDP | ipproto::TCP => false,
        _ => ip + other_need(proto, icmp) <= total,
    }
}

/// How many bytes of the upper-layer header of protocol `proto`, neither
/// UDP nor TCP, the general parser reads (`icmp`: the family's ICMP):
/// ICMP's 8 bytes, SCTP's 12, none for the others; [`REFUSED`] for IPv6's
/// extension headers and "no next header", which it walks on from (for
/// IPv4 they are upper-layer protocols like any other). Inline: its call,
/// out of line, made the recognition loops around it keep their values on
/// the stack for UDP and TCP too (fwd's own instructions a packet on the
/// replay recipes 168.5 -> 163.3 IPv6, 167.8 -> 165.1 IPv4, 2026-12-07).
#[inline(always)]
fn other_need(proto: u8, icmp: u8) -> usize {
    match proto {
        ipproto::SCTP => 12,
        p if p == icmp => 8,
        ipproto::HOPOPTS
        | ipproto::ROUTING
        | ipproto::FRAGMENT
        | ipproto::DSTOPTS
        | ipproto::AH
        | ipproto::NONXT
            if icmp == ipproto::ICMPV6 =>
        {
            REFUSED
        }
        _ => 0,
    }
}

/// What [`other_need`] answers for a header that is not an upper layer:
/// more than the longest packet.
const REFUSED: usize = 1 << 17;

impl<'a> PlainV6<'a> {
    /// [`PlainV4::again`] for [`plain_v6`].
    #[inline(always)]
    pub fn again(frame: &'a [u8]) -> Option<Self> {
        frame.split_first_chunk().map(|(h, l4)| PlainV6(h, l4))
    }

    /// [`flow_hash`](super::flow_hash)`(&self.parsed())`, from the frame's
    /// words.
    #[inline(always)]
    pub fn flow_hash(&self) -> u32 {
        hash::flow_hash_words(
            hash::halves(&self.addr(8)),
            hash::halves(&self.addr(24)),
            self.ip()[6],
            L3Kind::V6,
            self.ports(),
        )
    }

    /// The ports, or ICMPv6's type and code, as `sport << 16 | dport`
    /// (the general parser's [`l4_ports`]).
    #[inline(always)]
    fn ports(&self) -> u32 {
        let head = self.1.first_chunk::<4>().copied().unwrap_or_default();
        l4_ports(self.ip()[6], ipproto::ICMPV6, head)
    }

    /// The ICMPv6 type, for an ICMPv6 packet.
    #[inline(always)]
    pub fn icmp_type(&self) -> Option<u8> {
        (self.ip()[6] == ipproto::ICMPV6).then(|| self.1.first().copied().unwrap_or(0))
    }

    #[inline(always)]
    fn ip(&self) -> &'a [u8; 40] {
        self.0.last_chunk::<40>().unwrap_or(&[0; 40])
    }

    #[inline(always)]
    fn addr(&self, at: usize) -> [u8; 16] {
        self.ip()
            .get(at..)
            .and_then(|a| a.first_chunk::<16>())
            .copied()
            .unwrap_or_default()
    }

    /// The destination address as a host-order `u128`.
    #[inline(always)]
    pub fn dst(&self) -> u128 {
        u128::from_be_bytes(self.addr(24))
    }

    /// The frame as [`parse_into`](super::parse_into) reads it.
    #[inline(always)]
    pub fn parsed(&self) -> Parsed {
        let (ip, l4) = (self.ip(), self.1);
        let get = |at: usize| {
            let b = |i: usize| l4.get(i).copied().unwrap_or(0);
            u16::from_be_bytes([b(at), b(at + 1)])
        };
        let flags = if ip[6] == ipproto::TCP {
            get(12) & tcp_flags::ALL
        } else {
            0
        };
        let ports = self.ports();
        Parsed {
            l3_off: L3 as u16,
            l4_off: L4_V6 as u16,
            outer_vlan: None,
            inner_vlan: None,
            kind: L3Kind::V6,
            proto: ip[6],
            src: self.addr(8),
            dst: self.addr(24),
            ttl: ip[7],
            dscp: ((ip[0] & 0x0f) << 2) | (ip[1] >> 6),
            sport: (ports >> 16) as u16,
            dport: ports as u16,
            tcp_flags: flags,
            frag: Fragment::None,
            // At most u16::MAX: plain_v6 refuses more.
            l3_len: (40 + usize::from(u16::from_be_bytes([ip[4], ip[5]]))) as u16,
        }
    }
}

/// [`plain_v6`] filling `out` with [`PlainV6::parsed`]: true when the
/// frame is a plain IPv6 frame (`out` in any state otherwise).
#[inline(always)]
pub fn parse_plain_v6(frame: &[u8], out: &mut Parsed) -> bool {
    plain_v6(frame).map(|h| *out = h.parsed()).is_some()
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
