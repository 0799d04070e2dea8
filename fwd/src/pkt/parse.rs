//! The parser: Ethernet / VLAN / IPv4 / IPv6 (+ extension headers) / L4 in one pass.
#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// EtherType values the parser knows.
pub mod ethertype {
    /// IPv4.
    pub const IPV4: u16 = 0x0800;
    /// ARP.
    pub const ARP: u16 = 0x0806;
    /// IEEE 802.1Q customer VLAN tag.
    pub const VLAN: u16 = 0x8100;
    /// IEEE 802.1ad service VLAN tag (QinQ outer tag).
    pub const QINQ: u16 = 0x88a8;
    /// IPv6.
    pub const IPV6: u16 = 0x86dd;
    /// LLDP.
    pub const LLDP: u16 = 0x88cc;
}

/// IP protocol / IPv6 next-header numbers the parser knows.
pub mod ipproto {
    /// IPv6 Hop-by-Hop Options.
    pub const HOPOPTS: u8 = 0;
    /// ICMP (IPv4).
    pub const ICMP: u8 = 1;
    /// TCP.
    pub const TCP: u8 = 6;
    /// UDP.
    pub const UDP: u8 = 17;
    /// IPv6 Routing header.
    pub const ROUTING: u8 = 43;
    /// IPv6 Fragment header.
    pub const FRAGMENT: u8 = 44;
    /// GRE.
    pub const GRE: u8 = 47;
    /// Encapsulating Security Payload.
    pub const ESP: u8 = 50;
    /// Authentication Header.
    pub const AH: u8 = 51;
    /// ICMPv6.
    pub const ICMPV6: u8 = 58;
    /// IPv6 No Next Header.
    pub const NONXT: u8 = 59;
    /// IPv6 Destination Options.
    pub const DSTOPTS: u8 = 60;
    /// SCTP.
    pub const SCTP: u8 = 132;
}

/// TCP flag bits as found in [`Parsed::tcp_flags`]: the 12 bits below the
/// data offset in header bytes 12-13.
pub mod tcp_flags {
    /// FIN.
    pub const FIN: u16 = 0x01;
    /// SYN.
    pub const SYN: u16 = 0x02;
    /// RST.
    pub const RST: u16 = 0x04;
    /// PSH.
    pub const PSH: u16 = 0x08;
    /// ACK.
    pub const ACK: u16 = 0x10;
    /// URG.
    pub const URG: u16 = 0x20;
    /// ECE.
    pub const ECE: u16 = 0x40;
    /// CWR.
    pub const CWR: u16 = 0x80;
    /// AE (Accurate ECN, RFC 9768), formerly NS (ECN nonce, RFC 3540).
    pub const AE: u16 = 0x100;
    /// The same bit under its RFC 3540 name.
    pub const NS: u16 = AE;
    /// The whole field, three reserved bits included.
    pub const ALL: u16 = 0xFFF;
}

/// At most this many VLAN tags (802.1Q / 802.1ad); one more is [`ParseError::TooManyVlanTags`].
pub const MAX_VLAN_TAGS: usize = 2;

/// At most this many IPv6 extension headers are walked; one more is
/// [`ParseError::ExtChainTooLong`]. Bounds the per-packet work of a hostile chain.
pub const MAX_IPV6_EXT_HEADERS: usize = 8;

/// Why a frame is not forwarded by the parser. The worker maps it to drop counters
/// with [`ParseError::index`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ParseError {
    /// The frame (or the IP packet, for headers inside it) ends inside a header it
    /// announces: Ethernet, VLAN tag, IP header, IPv4 options, an IPv6 extension
    /// header, or the TCP/UDP/SCTP/ICMP header.
    Truncated,
    /// Not IPv4/IPv6: ARP, LLDP, 802.3 length frames, any other EtherType. Not malformed.
    NotIp,
    /// More than [`MAX_VLAN_TAGS`] VLAN tags.
    TooManyVlanTags,
    /// The IP version nibble does not match the EtherType.
    BadIpVersion,
    /// IPv4 IHL below 5.
    BadIhl,
    /// IPv4 total length below IHL*4, or above what the frame carries.
    BadTotalLength,
    /// IPv6 payload length above what the frame carries (jumbograms are not supported).
    BadPayloadLength,
    /// A Hop-by-Hop header that is not first, or a second Fragment header.
    BadExtHeader,
    /// More than [`MAX_IPV6_EXT_HEADERS`] IPv6 extension headers.
    ExtChainTooLong,
    /// TCP data offset below 5.
    BadTcpHeader,
}

impl ParseError {
    /// Number of variants: the size of a per-reason drop counter array.
    pub const COUNT: usize = 10;

    /// Every variant, in [`ParseError::index`] order.
    pub const ALL: [ParseError; Self::COUNT] = [
        Self::Truncated,
        Self::NotIp,
        Self::TooManyVlanTags,
        Self::BadIpVersion,
        Self::BadIhl,
        Self::BadTotalLength,
        Self::BadPayloadLength,
        Self::BadExtHeader,
        Self::ExtChainTooLong,
        Self::BadTcpHeader,
    ];

    /// True for frames that are broken; false for [`ParseError::NotIp`], which is
    /// well-formed traffic this parser does not forward (ARP goes to the control side).
    #[inline]
    pub fn is_malformed(self) -> bool {
        self != Self::NotIp
    }

    /// Dense index in `0..COUNT`, for counter arrays.
    #[inline]
    pub fn index(self) -> usize {
        self as usize
    }

    /// Stable snake_case name for counters and `fwdctl` output.
    pub fn name(self) -> &'static str {
        match self {
            Self::Truncated => "truncated",
            Self::NotIp => "not_ip",
            Self::TooManyVlanTags => "too_many_vlan_tags",
            Self::BadIpVersion => "bad_ip_version",
            Self::BadIhl => "bad_ihl",
            Self::BadTotalLength => "bad_total_length",
            Self::BadPayloadLength => "bad_payload_length",
            Self::BadExtHeader => "bad_ext_header",
            Self::ExtChainTooLong => "ext_chain_too_long",
            Self::BadTcpHeader => "bad_tcp_header",
        }
    }
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::error::Error for ParseError {}

/// Network-layer family.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum L3Kind {
    /// IPv4: addresses in the first 4 bytes of `src`/`dst`.
    #[default]
    V4 = 4,
    /// IPv6.
    V6 = 6,
}

/// Fragmentation state of the IP packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Fragment {
    /// Not a fragment (IPv6 atomic fragments, offset 0 without M, count as this).
    #[default]
    None,
    /// First fragment (offset 0, more-fragments set): the L4 header is present.
    First,
    /// Offset > 0: no L4 header, ports are 0 and `l4_off` is 0.
    NonFirst,
}

/// What [`parse`] found. Flat and `Copy`; all offsets are from the start of the frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Parsed {
    /// Offset of the IP header (14, 18 or 22).
    pub l3_off: u16,
    /// Offset of the upper-layer header (after IPv4 options / IPv6 extension headers);
    /// 0 when there is none: IPv6 No Next Header, non-first fragments.
    pub l4_off: u16,
    /// VID (12 bits) of the first (outer) VLAN tag.
    pub outer_vlan: Option<u16>,
    /// VID of the second VLAN tag (QinQ: 0x88a8 or 0x8100 outer, then 0x8100).
    pub inner_vlan: Option<u16>,
    /// IPv4 or IPv6.
    pub kind: L3Kind,
    /// Upper-layer protocol: IPv4 protocol, or the IPv6 next header after the
    /// extension headers (50 for ESP, 59 for No Next Header; for a non-first IPv6
    /// fragment, the Fragment header's next header).
    pub proto: u8,
    /// Source address: IPv4 in `src[..4]` (network order) with the rest zero, or IPv6.
    pub src: [u8; 16],
    /// Destination address, same layout as `src`.
    pub dst: [u8; 16],
    /// IPv4 TTL or IPv6 hop limit.
    pub ttl: u8,
    /// DSCP (upper 6 bits of the TOS / traffic class).
    pub dscp: u8,
    /// TCP/UDP/SCTP source port; ICMP/ICMPv6 type. 0 for other protocols and
    /// non-first fragments.
    pub sport: u16,
    /// TCP/UDP/SCTP destination port; ICMP/ICMPv6 code. 0 otherwise.
    pub dport: u16,
    /// TCP flags, the 12-bit field (reserved, AE, CWR..FIN, see
    /// [`tcp_flags`]); 0 for non-TCP.
    pub tcp_flags: u16,
    /// Fragmentation state.
    pub frag: Fragment,
    /// IP packet length: IPv4 total length, IPv6 40 + payload length. The frame may
    /// be longer (Ethernet padding).
    pub l3_len: u16,
}

impl Parsed {
    /// IPv4 source as a host-order `u32` (meaningless for IPv6).
    #[inline]
    pub fn src_v4(&self) -> u32 {
        let [a, b, c, d, ..] = self.src;
        u32::from_be_bytes([a, b, c, d])
    }

    /// IPv4 destination as a host-order `u32` (meaningless for IPv6).
    #[inline]
    pub fn dst_v4(&self) -> u32 {
        let [a, b, c, d, ..] = self.dst;
        u32::from_be_bytes([a, b, c, d])
    }

    /// IPv6 source as a host-order `u128` (for IPv4: the address in the top 32 bits).
    #[inline]
    pub fn src_v6(&self) -> u128 {
        u128::from_be_bytes(self.src)
    }

    /// IPv6 destination as a host-order `u128`.
    #[inline]
    pub fn dst_v6(&self) -> u128 {
        u128::from_be_bytes(self.dst)
    }

    /// Source as a std address (not for the fast path; logs, tests, control plane).
    pub fn src_addr(&self) -> IpAddr {
        match self.kind {
            L3Kind::V4 => IpAddr::V4(Ipv4Addr::from(self.src_v4())),
            L3Kind::V6 => IpAddr::V6(Ipv6Addr::from(self.src)),
        }
    }

    /// Destination as a std address.
    pub fn dst_addr(&self) -> IpAddr {
        match self.kind {
            L3Kind::V4 => IpAddr::V4(Ipv4Addr::from(self.dst_v4())),
            L3Kind::V6 => IpAddr::V6(Ipv6Addr::from(self.dst)),
        }
    }

    /// True for first and non-first fragments.
    #[inline]
    pub fn is_fragment(&self) -> bool {
        self.frag != Fragment::None
    }
}

#[inline(always)]
fn be16(hi: u8, lo: u8) -> u16 {
    u16::from_be_bytes([hi, lo])
}

/// `N` bytes at `off`, or `Truncated`. The only way this file reads a header.
#[inline(always)]
fn chunk<const N: usize>(b: &[u8], off: usize) -> Result<&[u8; N], ParseError> {
    b.get(off..)
        .and_then(|s| s.first_chunk::<N>())
        .ok_or(ParseError::Truncated)
}

#[inline(always)]
fn is_vlan_tpid(et: u16) -> bool {
    et == ethertype::VLAN || et == ethertype::QINQ
}

/// Ethernet + VLAN tags: (EtherType after the tags, L3 offset, outer VID, inner VID).
#[inline(always)]
#[allow(clippy::type_complexity)]
fn l2(frame: &[u8]) -> Result<(u16, usize, Option<u16>, Option<u16>), ParseError> {
    let eth: &[u8; 14] = chunk(frame, 0)?;
    let et = be16(eth[12], eth[13]);
    if !is_vlan_tpid(et) {
        return Ok((et, 14, None, None));
    }
    let t1: &[u8; 4] = chunk(frame, 14)?;
    let outer = Some(be16(t1[0], t1[1]) & 0x0fff);
    let et = be16(t1[2], t1[3]);
    if !is_vlan_tpid(et) {
        return Ok((et, 18, outer, None));
    }
    let t2: &[u8; 4] = chunk(frame, 18)?;
    let inner = Some(be16(t2[0], t2[1]) & 0x0fff);
    let et = be16(t2[2], t2[3]);
    if is_vlan_tpid(et) {
        return Err(ParseError::TooManyVlanTags);
    }
    Ok((et, 22, outer, inner))
}

/// The length of the Ethernet header with its VLAN tags (where ARP or IP
/// starts). `None` when the frame is too short for its tags or carries more
/// than two.
#[inline]
pub(crate) fn l2_len(frame: &[u8]) -> Option<usize> {
    l2(frame).ok().map(|(_, off, ..)| off)
}

/// The EtherType after up to two VLAN tags (the worker uses it to spot ARP). `None`
/// when the frame is too short for its tags or carries more than two.
#[inline]
pub fn ether_type(frame: &[u8]) -> Option<u16> {
    l2(frame).ok().map(|(et, ..)| et)
}

/// Parses one frame. See [`parse_into`] for what is accepted.
///
/// # Errors
///
/// The [`ParseError`] naming the first check the frame failed.
#[inline]
pub fn parse(frame: &[u8]) -> Result<Parsed, ParseError> {
    let mut p = Parsed::default();
    parse_into(frame, &mut p)?;
    Ok(p)
}

/// Parses one frame into a caller-owned slot (e.g. one element of a burst array).
///
/// Accepts Ethernet II with up to two VLAN tags (TPID 0x8100 or 0x88a8 in either
/// position), then:
///
/// - **IPv4**: version 4, IHL >= 5 with the options inside the frame, IHL*4 <= total
///   length <= the bytes after the L2 header (more is padding). Fragments: offset > 0 is
///   [`Fragment::NonFirst`] (no L4 parse, ports 0, `l4_off` 0); offset 0 with MF is
///   [`Fragment::First`].
/// - **IPv6**: version 6, 40 + payload length <= the bytes after the L2 header. The
///   extension headers Hop-by-Hop (0, first only), Routing (43), Fragment (44, once;
///   a non-first fragment ends the walk), Destination Options (60) and AH (51) are
///   walked, at most [`MAX_IPV6_EXT_HEADERS`] of them. ESP (50) and No Next Header
///   (59) end the walk. Anything else is the upper-layer protocol.
/// - **L4**, bounded by the IP length: TCP (data offset >= 5, header and options
///   present), UDP (8 bytes), SCTP (12-byte common header: ports), ICMP for IPv4 /
///   ICMPv6 for IPv6 (8 bytes; type -> `sport`, code -> `dport`). Other protocols
///   parse with ports 0.
///
/// On error `out` holds partial results and must not be used.
///
/// # Errors
///
/// The [`ParseError`] naming the first check the frame failed.
#[inline(always)]
pub fn parse_into(frame: &[u8], out: &mut Parsed) -> Result<(), ParseError> {
    let (et, l3, outer, inner) = l2(frame)?;
    out.outer_vlan = outer;
    out.inner_vlan = inner;
    // l3 <= 22, so it fits everywhere below.
    out.l3_off = l3 as u16;
    let ip = frame.get(l3..).ok_or(ParseError::Truncated)?;
    match et {
        ethertype::IPV4 => ipv4(ip, l3, out),
        ethertype::IPV6 => ipv6(ip, l3, out),
        _ => Err(ParseError::NotIp),
    }
}

#[inline(always)]
fn ipv4(ip: &[u8], l3: usize, out: &mut Parsed) -> Result<(), ParseError> {
    let h: &[u8; 20] = chunk(ip, 0)?;
    let [vihl, tos, tl0, tl1, _, _, fo0, fo1, ttl, proto, _, _, s0, s1, s2, s3, d0, d1, d2, d3] =
        *h;
    if vihl >> 4 != 4 {
        return Err(ParseError::BadIpVersion);
    }
    let ihl = usize::from(vihl & 0x0f) * 4;
    if ihl < 20 {
        return Err(ParseError::BadIhl);
    }
    if ihl > ip.len() {
        return Err(ParseError::Truncated);
    }
    let total = usize::from(be16(tl0, tl1));
    if total < ihl || total > ip.len() {
        return Err(ParseError::BadTotalLength);
    }
    out.kind = L3Kind::V4;
    out.l3_len = total as u16;
    out.proto = proto;
    out.ttl = ttl;
    out.dscp = tos >> 2;
    // Built as one u128 so each address is a single 16-byte store: later stages
    // (flow hash, FIB) load it whole, and a load spanning several smaller stores
    // cannot be store-forwarded (a ~10-cycle stall per packet, measured).
    out.src = u128::from(u32::from_le_bytes([s0, s1, s2, s3])).to_le_bytes();
    out.dst = u128::from(u32::from_le_bytes([d0, d1, d2, d3])).to_le_bytes();
    let fo = be16(fo0, fo1);
    if fo & 0x1fff != 0 {
        out.frag = Fragment::NonFirst;
        return no_l4(out);
    }
    out.frag = if fo & 0x2000 != 0 {
        Fragment::First
    } else {
        Fragment::None
    };
    let pkt = ip.get(..total).ok_or(ParseError::BadTotalLength)?;
    l4(pkt, ihl, l3, proto, ipproto::ICMP, out)
}

#[inline(always)]
fn ipv6(ip: &[u8], l3: usize, out: &mut Parsed) -> Result<(), ParseError> {
    let h: &[u8; 40] = chunk(ip, 0)?;
    if h[0] >> 4 != 6 {
        return Err(ParseError::BadIpVersion);
    }
    let total = 40 + usize::from(be16(h[4], h[5]));
    // `l3_len` is a u16: a 65,536+ byte IPv6 packet cannot be carried in an mbuf here.
    if total > ip.len() || total > usize::from(u16::MAX) {
        return Err(ParseError::BadPayloadLength);
    }
    out.kind = L3Kind::V6;
    out.l3_len = total as u16;
    out.ttl = h[7];
    out.dscp = ((h[0] & 0x0f) << 2) | (h[1] >> 6);
    out.src = ipv6_addr(h, 8);
    out.dst = ipv6_addr(h, 24);
    out.frag = Fragment::None;
    let pkt = ip.get(..total).ok_or(ParseError::BadPayloadLength)?;

    let mut nh = h[6];
    let mut off = 40usize;
    let mut count = 0usize;
    let mut seen_frag = false;
    loop {
        let len = match nh {
            ipproto::HOPOPTS | ipproto::ROUTING | ipproto::DSTOPTS | ipproto::AH => {
                if nh == ipproto::HOPOPTS && count != 0 {
                    return Err(ParseError::BadExtHeader);
                }
                let e: &[u8; 2] = chunk(pkt, off)?;
                let len = if nh == ipproto::AH {
                    (usize::from(e[1]) + 2) * 4
                } else {
                    (usize::from(e[1]) + 1) * 8
                };
                nh = e[0];
                len
            }
            ipproto::FRAGMENT => {
                if seen_frag {
                    return Err(ParseError::BadExtHeader);
                }
                seen_frag = true;
                let e: &[u8; 8] = chunk(pkt, off)?;
                let fo = be16(e[2], e[3]);
                if fo >> 3 != 0 {
                    out.frag = Fragment::NonFirst;
                    out.proto = e[0];
                    return no_l4(out);
                }
                if fo & 1 != 0 {
                    out.frag = Fragment::First;
                }
                nh = e[0];
                8
            }
            ipproto::NONXT => {
                out.proto = nh;
                return no_l4(out);
            }
            // ESP and every upper-layer protocol end the walk.
            _ => break,
        };
        count += 1;
        if count > MAX_IPV6_EXT_HEADERS {
            return Err(ParseError::ExtChainTooLong);
        }
        // The whole extension header must be inside the IP packet.
        if off + len > pkt.len() {
            return Err(ParseError::Truncated);
        }
        off += len;
    }
    out.proto = nh;
    l4(pkt, off, l3, nh, ipproto::ICMPV6, out)
}

#[inline(always)]
fn ipv6_addr(h: &[u8; 40], at: usize) -> [u8; 16] {
    h.get(at..)
        .and_then(|s| s.first_chunk::<16>())
        .copied()
        .unwrap_or([0; 16])
}

#[inline(always)]
fn no_l4(out: &mut Parsed) -> Result<(), ParseError> {
    out.l4_off = 0;
    out.sport = 0;
    out.dport = 0;
    out.tcp_flags = 0;
    Ok(())
}

/// L4 header at `off` inside the IP packet `pkt` (which starts at frame offset `l3`).
#[inline(always)]
fn l4(
    pkt: &[u8],
    off: usize,
    l3: usize,
    proto: u8,
    icmp: u8,
    out: &mut Parsed,
) -> Result<(), ParseError> {
    out.proto = proto;
    // l3 <= 22 and off <= 40 + 8 * 2048 (eight maximal extension headers): fits in u16.
    out.l4_off = (l3 + off) as u16;
    out.tcp_flags = 0;
    match proto {
        ipproto::TCP => {
            let t: &[u8; 20] = chunk(pkt, off)?;
            let doff = usize::from(t[12] >> 4) * 4;
            if doff < 20 {
                return Err(ParseError::BadTcpHeader);
            }
            if off + doff > pkt.len() {
                return Err(ParseError::Truncated);
            }
            out.tcp_flags = be16(t[12], t[13]) & tcp_flags::ALL;
        }
        ipproto::UDP => {
            chunk::<8>(pkt, off)?;
        }
        ipproto::SCTP => {
            chunk::<12>(pkt, off)?;
        }
        p if p == icmp => {
            chunk::<8>(pkt, off)?;
        }
        _ => {}
    }
    // Within the packet for every protocol whose ports are read (checked
    // above); zeros for the others, whose ports are 0 whatever they hold.
    let head = pkt
        .get(off..)
        .and_then(|h| h.first_chunk::<4>())
        .copied()
        .unwrap_or_default();
    let ports = l4_ports(proto, icmp, head);
    out.sport = (ports >> 16) as u16;
    out.dport = ports as u16;
    Ok(())
}

/// The ports of an upper-layer header of protocol `proto` as `sport << 16
/// | dport`, from its first 4 bytes: those of TCP, UDP and SCTP, ICMP's
/// type and code (`icmp`: the family's ICMP), 0 for the others. The one
/// definition, for the general parser and the plain recognisers
/// (`plain.rs`). Selects, not branches: inside the fast path's flow hash, a
/// branch here made the hash too large to inline into the group lanes'
/// loop (+40 instructions an IPv6 ECMP packet).
#[inline(always)]
pub(super) fn l4_ports(proto: u8, icmp: u8, l4: [u8; 4]) -> u32 {
    let ports = u32::from_be_bytes(l4);
    let type_code = (ports >> 8) & 0x00ff_0000 | (ports >> 16) & 0xff;
    let ported = matches!(proto, ipproto::UDP | ipproto::TCP | ipproto::SCTP);
    let v = if proto == icmp { type_code } else { 0 };
    if ported {
        ports
    } else {
        v
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]
#[path = "parse_tests.rs"]
mod tests;
