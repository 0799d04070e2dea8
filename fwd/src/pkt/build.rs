//! Frame builders for tests, benchmarks and the e2e / pcap generators: Ethernet +
//! VLAN tags + IPv4/IPv6 (+ options / extension headers) + UDP/TCP/ICMP with correct
//! lengths and checksums. Allocates; not for the fast path.
//!
//! The L4 checksum always uses the `dst` given to the builder; with a Routing header
//! that has segments left, a real sender would use the final destination instead.

use std::net::{Ipv4Addr, Ipv6Addr};

use super::csum;
use super::parse::{ethertype, ipproto};

/// One VLAN tag: TPID and TCI (PCP:3, DEI:1, VID:12).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VlanTag {
    /// 0x8100 (802.1Q) or 0x88a8 (802.1ad).
    pub tpid: u16,
    /// Tag control information.
    pub tci: u16,
}

impl VlanTag {
    /// An 802.1Q tag with this VID, PCP 0.
    pub fn dot1q(vid: u16) -> Self {
        Self {
            tpid: ethertype::VLAN,
            tci: vid & 0x0fff,
        }
    }

    /// An 802.1ad (QinQ service) tag with this VID, PCP 0.
    pub fn dot1ad(vid: u16) -> Self {
        Self {
            tpid: ethertype::QINQ,
            tci: vid & 0x0fff,
        }
    }
}

/// One IPv6 extension header to insert between the fixed header and the L4 header,
/// in order. Next-header fields are chained by the builder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ext6 {
    /// Hop-by-Hop Options of `8 * (len8 + 1)` bytes, filled with a PadN option.
    HopByHop {
        /// Hdr Ext Len field.
        len8: u8,
    },
    /// Destination Options of `8 * (len8 + 1)` bytes, filled with a PadN option.
    DestOpts {
        /// Hdr Ext Len field.
        len8: u8,
    },
    /// Routing header of `8 * (len8 + 1)` bytes (type 4 / SRH, segments left 0).
    Routing {
        /// Hdr Ext Len field.
        len8: u8,
    },
    /// Fragment header.
    Fragment {
        /// Fragment offset in 8-octet units.
        offset: u16,
        /// M flag.
        more: bool,
        /// Identification.
        id: u32,
    },
    /// Authentication Header of `4 * (len4 + 2)` bytes.
    Ah {
        /// Payload Len field.
        len4: u8,
    },
    /// Arbitrary header: its protocol number and bytes, whose first byte the builder
    /// overwrites with the next header.
    Raw {
        /// This header's protocol number (used in the previous next-header field).
        proto: u8,
        /// The header bytes.
        bytes: Vec<u8>,
    },
}

impl Ext6 {
    fn proto(&self) -> u8 {
        match self {
            Self::HopByHop { .. } => ipproto::HOPOPTS,
            Self::DestOpts { .. } => ipproto::DSTOPTS,
            Self::Routing { .. } => ipproto::ROUTING,
            Self::Fragment { .. } => ipproto::FRAGMENT,
            Self::Ah { .. } => ipproto::AH,
            Self::Raw { proto, .. } => *proto,
        }
    }

    fn write(&self, next: u8, out: &mut Vec<u8>) {
        match self {
            Self::HopByHop { len8 } | Self::DestOpts { len8 } => {
                let len = 8 * (usize::from(*len8) + 1);
                out.extend_from_slice(&[next, *len8, 1, (len - 4) as u8]);
                out.resize(out.len() + len - 4, 0);
            }
            Self::Routing { len8 } => {
                let len = 8 * (usize::from(*len8) + 1);
                out.extend_from_slice(&[next, *len8, 4, 0]);
                out.resize(out.len() + len - 4, 0);
            }
            Self::Fragment { offset, more, id } => {
                let fo = (offset << 3) | u16::from(*more);
                out.extend_from_slice(&[next, 0]);
                out.extend_from_slice(&fo.to_be_bytes());
                out.extend_from_slice(&id.to_be_bytes());
            }
            Self::Ah { len4 } => {
                let len = 4 * (usize::from(*len4) + 2);
                out.extend_from_slice(&[next, *len4, 0, 0]);
                out.resize(out.len() + len - 4, 0);
            }
            Self::Raw { bytes, .. } => {
                let start = out.len();
                out.extend_from_slice(bytes);
                if let Some(b) = out.get_mut(start) {
                    *b = next;
                }
            }
        }
    }
}

/// Everything about a frame except the addresses, ports and payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameSpec {
    /// Destination MAC.
    pub dst_mac: [u8; 6],
    /// Source MAC.
    pub src_mac: [u8; 6],
    /// VLAN tags, outermost first.
    pub vlans: Vec<VlanTag>,
    /// IPv4 TTL / IPv6 hop limit.
    pub ttl: u8,
    /// DSCP (6 bits).
    pub dscp: u8,
    /// ECN (2 bits).
    pub ecn: u8,
    /// IPv4 identification.
    pub ip_id: u16,
    /// IPv4 DF flag.
    pub dont_fragment: bool,
    /// IPv4 MF flag.
    pub more_fragments: bool,
    /// IPv4 fragment offset in 8-octet units.
    pub frag_offset: u16,
    /// IPv4 options, padded with zeros (End of Option List) to a multiple of 4.
    pub ipv4_options: Vec<u8>,
    /// IPv6 extension headers, in order.
    pub ipv6_ext: Vec<Ext6>,
    /// IPv6 flow label (20 bits).
    pub flow_label: u32,
    /// Pad the frame with zeros to at least this length (60 = Ethernet minimum without
    /// FCS; 0 = no padding).
    pub min_len: usize,
}

impl Default for FrameSpec {
    fn default() -> Self {
        Self {
            dst_mac: [0x02, 0, 0, 0, 0, 0x02],
            src_mac: [0x02, 0, 0, 0, 0, 0x01],
            vlans: Vec::new(),
            ttl: 64,
            dscp: 0,
            ecn: 0,
            ip_id: 0,
            dont_fragment: false,
            more_fragments: false,
            frag_offset: 0,
            ipv4_options: Vec::new(),
            ipv6_ext: Vec::new(),
            flow_label: 0,
            min_len: 60,
        }
    }
}

/// Ethernet header + tags + `payload`, padded to `spec.min_len`.
pub fn ethernet(spec: &FrameSpec, ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(22 + payload.len().max(spec.min_len));
    f.extend_from_slice(&spec.dst_mac);
    f.extend_from_slice(&spec.src_mac);
    for t in &spec.vlans {
        f.extend_from_slice(&t.tpid.to_be_bytes());
        f.extend_from_slice(&t.tci.to_be_bytes());
    }
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    if f.len() < spec.min_len {
        f.resize(spec.min_len, 0);
    }
    f
}

/// The IPv4 header (with options and checksum) for an L4 segment of `l4_len` bytes.
///
/// # Panics
///
/// When the options exceed 40 bytes or the packet 65,535 bytes.
pub fn ipv4_header(
    spec: &FrameSpec,
    src: Ipv4Addr,
    dst: Ipv4Addr,
    proto: u8,
    l4_len: usize,
) -> Vec<u8> {
    let mut opts = spec.ipv4_options.clone();
    opts.resize(opts.len().div_ceil(4) * 4, 0);
    assert!(opts.len() <= 40, "IPv4 options longer than 40 bytes");
    let hlen = 20 + opts.len();
    let total = u16::try_from(hlen + l4_len).expect("IPv4 packet longer than 65535 bytes");
    let flags = (u16::from(spec.dont_fragment) << 14)
        | (u16::from(spec.more_fragments) << 13)
        | (spec.frag_offset & 0x1fff);
    let mut h = Vec::with_capacity(hlen);
    h.push(0x40 | (hlen / 4) as u8);
    h.push((spec.dscp << 2) | (spec.ecn & 3));
    h.extend_from_slice(&total.to_be_bytes());
    h.extend_from_slice(&spec.ip_id.to_be_bytes());
    h.extend_from_slice(&flags.to_be_bytes());
    h.extend_from_slice(&[spec.ttl, proto, 0, 0]);
    h.extend_from_slice(&src.octets());
    h.extend_from_slice(&dst.octets());
    h.extend_from_slice(&opts);
    let c = csum::ipv4_header_checksum(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h
}

/// An Ethernet/IPv4 frame carrying `l4` as is (no L4 checksum work). Panics like
/// [`ipv4_header`]; so do the other IPv4 builders, and the IPv6 ones like [`ipv6`].
pub fn ipv4(spec: &FrameSpec, src: Ipv4Addr, dst: Ipv4Addr, proto: u8, l4: &[u8]) -> Vec<u8> {
    let mut ip = ipv4_header(spec, src, dst, proto, l4.len());
    ip.extend_from_slice(l4);
    ethernet(spec, ethertype::IPV4, &ip)
}

/// An Ethernet/IPv6 frame with `spec.ipv6_ext` and then `l4` (upper-layer protocol
/// `proto`) as is.
///
/// # Panics
///
/// When the payload (extension headers + `l4`) exceeds 65,535 bytes.
pub fn ipv6(spec: &FrameSpec, src: Ipv6Addr, dst: Ipv6Addr, proto: u8, l4: &[u8]) -> Vec<u8> {
    let mut ext = Vec::new();
    for (i, e) in spec.ipv6_ext.iter().enumerate() {
        let next = spec.ipv6_ext.get(i + 1).map_or(proto, Ext6::proto);
        e.write(next, &mut ext);
    }
    let first = spec.ipv6_ext.first().map_or(proto, Ext6::proto);
    let plen = u16::try_from(ext.len() + l4.len()).expect("IPv6 payload longer than 65535 bytes");
    let tc = (spec.dscp << 2) | (spec.ecn & 3);
    let vtf = (6u32 << 28) | (u32::from(tc) << 20) | (spec.flow_label & 0xf_ffff);
    let mut ip = Vec::with_capacity(40 + ext.len() + l4.len());
    ip.extend_from_slice(&vtf.to_be_bytes());
    ip.extend_from_slice(&plen.to_be_bytes());
    ip.extend_from_slice(&[first, spec.ttl]);
    ip.extend_from_slice(&src.octets());
    ip.extend_from_slice(&dst.octets());
    ip.extend_from_slice(&ext);
    ip.extend_from_slice(l4);
    ethernet(spec, ethertype::IPV6, &ip)
}

fn udp_segment(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut u = Vec::with_capacity(8 + payload.len());
    u.extend_from_slice(&sport.to_be_bytes());
    u.extend_from_slice(&dport.to_be_bytes());
    u.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    u.extend_from_slice(&[0, 0]);
    u.extend_from_slice(payload);
    u
}

fn tcp_segment(sport: u16, dport: u16, flags: u16, payload: &[u8]) -> Vec<u8> {
    let mut t = Vec::with_capacity(20 + payload.len());
    t.extend_from_slice(&sport.to_be_bytes());
    t.extend_from_slice(&dport.to_be_bytes());
    t.extend_from_slice(&1u32.to_be_bytes()); // sequence number
    t.extend_from_slice(&0u32.to_be_bytes()); // acknowledgment number
                                              // Data offset 5 words above the 12-bit flags field.
    t.extend_from_slice(&((5 << 12) | (flags & 0x0FFF)).to_be_bytes());
    t.extend_from_slice(&0xffffu16.to_be_bytes()); // window
    t.extend_from_slice(&[0, 0, 0, 0]); // checksum, urgent pointer
    t.extend_from_slice(payload);
    t
}

/// The body of an echo request after type, code and checksum: id, sequence
/// number, data.
fn echo_body(id: u16, seq: u16, payload: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(4 + payload.len());
    b.extend_from_slice(&id.to_be_bytes());
    b.extend_from_slice(&seq.to_be_bytes());
    b.extend_from_slice(payload);
    b
}

fn put_csum(seg: &mut [u8], at: usize, c: u16, udp: bool) {
    let c = if udp && c == 0 { 0xffff } else { c };
    seg[at..at + 2].copy_from_slice(&c.to_be_bytes());
}

/// Ethernet/IPv4/UDP with a correct UDP checksum.
pub fn udp4(
    spec: &FrameSpec,
    src: Ipv4Addr,
    dst: Ipv4Addr,
    sport: u16,
    dport: u16,
    payload: &[u8],
) -> Vec<u8> {
    let mut u = udp_segment(sport, dport, payload);
    let c = csum::l4_checksum_v4(src.octets(), dst.octets(), ipproto::UDP, &u);
    put_csum(&mut u, 6, c, true);
    ipv4(spec, src, dst, ipproto::UDP, &u)
}

/// Ethernet/IPv4/TCP (data offset 5) with a correct TCP checksum.
pub fn tcp4(
    spec: &FrameSpec,
    src: Ipv4Addr,
    dst: Ipv4Addr,
    sport: u16,
    dport: u16,
    flags: u16,
    payload: &[u8],
) -> Vec<u8> {
    let mut t = tcp_segment(sport, dport, flags, payload);
    let c = csum::l4_checksum_v4(src.octets(), dst.octets(), ipproto::TCP, &t);
    put_csum(&mut t, 16, c, false);
    ipv4(spec, src, dst, ipproto::TCP, &t)
}

/// Ethernet/IPv4/ICMP echo request with a correct ICMP checksum.
pub fn icmp4_echo(
    spec: &FrameSpec,
    src: Ipv4Addr,
    dst: Ipv4Addr,
    id: u16,
    seq: u16,
    payload: &[u8],
) -> Vec<u8> {
    icmp4(spec, src, dst, 8, 0, &echo_body(id, seq, payload))
}

/// Ethernet/IPv6/UDP with a correct UDP checksum.
pub fn udp6(
    spec: &FrameSpec,
    src: Ipv6Addr,
    dst: Ipv6Addr,
    sport: u16,
    dport: u16,
    payload: &[u8],
) -> Vec<u8> {
    let mut u = udp_segment(sport, dport, payload);
    let c = csum::l4_checksum_v6(&src.octets(), &dst.octets(), ipproto::UDP, &u);
    put_csum(&mut u, 6, c, true);
    ipv6(spec, src, dst, ipproto::UDP, &u)
}

/// Ethernet/IPv6/TCP (data offset 5) with a correct TCP checksum.
pub fn tcp6(
    spec: &FrameSpec,
    src: Ipv6Addr,
    dst: Ipv6Addr,
    sport: u16,
    dport: u16,
    flags: u16,
    payload: &[u8],
) -> Vec<u8> {
    let mut t = tcp_segment(sport, dport, flags, payload);
    let c = csum::l4_checksum_v6(&src.octets(), &dst.octets(), ipproto::TCP, &t);
    put_csum(&mut t, 16, c, false);
    ipv6(spec, src, dst, ipproto::TCP, &t)
}

/// Ethernet/IPv6/ICMPv6 echo request with a correct ICMPv6 checksum.
pub fn icmp6_echo(
    spec: &FrameSpec,
    src: Ipv6Addr,
    dst: Ipv6Addr,
    id: u16,
    seq: u16,
    payload: &[u8],
) -> Vec<u8> {
    icmp6(spec, src, dst, 128, 0, &echo_body(id, seq, payload))
}

/// Ethernet/IPv4/ICMP message of any type: `[ty, code, checksum]` then `body` (the
/// rest of the header and the data), with a correct ICMP checksum.
pub fn icmp4(
    spec: &FrameSpec,
    src: Ipv4Addr,
    dst: Ipv4Addr,
    ty: u8,
    code: u8,
    body: &[u8],
) -> Vec<u8> {
    let mut i = vec![ty, code, 0, 0];
    i.extend_from_slice(body);
    let c = csum::checksum(&i);
    put_csum(&mut i, 2, c, false);
    ipv4(spec, src, dst, ipproto::ICMP, &i)
}

/// Ethernet/IPv6/ICMPv6 message of any type (neighbour discovery, errors...):
/// `[ty, code, checksum]` then `body`, with a correct ICMPv6 checksum.
pub fn icmp6(
    spec: &FrameSpec,
    src: Ipv6Addr,
    dst: Ipv6Addr,
    ty: u8,
    code: u8,
    body: &[u8],
) -> Vec<u8> {
    let mut i = vec![ty, code, 0, 0];
    i.extend_from_slice(body);
    let c = csum::l4_checksum_v6(&src.octets(), &dst.octets(), ipproto::ICMPV6, &i);
    put_csum(&mut i, 2, c, false);
    ipv6(spec, src, dst, ipproto::ICMPV6, &i)
}

/// Ethernet ARP request (who-has `target_ip` tell `sender_ip`) from `spec.src_mac`.
pub fn arp_request(spec: &FrameSpec, sender_ip: Ipv4Addr, target_ip: Ipv4Addr) -> Vec<u8> {
    let mut a = Vec::with_capacity(28);
    a.extend_from_slice(&[0, 1, 0x08, 0x00, 6, 4, 0, 1]); // Ethernet, IPv4, request
    a.extend_from_slice(&spec.src_mac);
    a.extend_from_slice(&sender_ip.octets());
    a.extend_from_slice(&[0; 6]);
    a.extend_from_slice(&target_ip.octets());
    ethernet(spec, ethertype::ARP, &a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udp4_minimum_frame_is_padded_to_60() {
        let f = udp4(
            &FrameSpec::default(),
            Ipv4Addr::new(10, 0, 0, 1),
            Ipv4Addr::new(10, 0, 0, 2),
            1,
            2,
            &[],
        );
        assert_eq!(f.len(), 60);
        // IPv4 total length is 28: the rest is padding.
        assert_eq!(&f[16..18], &28u16.to_be_bytes());
        assert!(f[42..].iter().all(|&b| b == 0));
    }

    #[test]
    fn no_padding_when_min_len_is_zero() {
        let spec = FrameSpec {
            min_len: 0,
            ..FrameSpec::default()
        };
        let f = udp4(&spec, Ipv4Addr::LOCALHOST, Ipv4Addr::LOCALHOST, 1, 2, &[]);
        assert_eq!(f.len(), 42);
    }

    #[test]
    fn l4_checksums_verify() {
        let s4 = Ipv4Addr::new(192, 0, 2, 1);
        let d4 = Ipv4Addr::new(198, 51, 100, 7);
        let spec = FrameSpec {
            min_len: 0,
            ..FrameSpec::default()
        };
        for payload in [&b""[..], b"x", b"hello world", &[0xff; 33]] {
            let f = udp4(&spec, s4, d4, 5000, 53, payload);
            assert_eq!(
                csum::l4_checksum_v4(s4.octets(), d4.octets(), 17, &f[34..]),
                0
            );
            let f = tcp4(&spec, s4, d4, 5000, 80, 0x12, payload);
            assert_eq!(
                csum::l4_checksum_v4(s4.octets(), d4.octets(), 6, &f[34..]),
                0
            );
            let f = icmp4_echo(&spec, s4, d4, 7, 9, payload);
            assert_eq!(csum::checksum(&f[34..]), 0);
            assert!(csum::verify_ipv4_header(&f[14..34]));

            let s6: Ipv6Addr = "2001:db8::1".parse().unwrap();
            let d6: Ipv6Addr = "2001:db8:ffff::2".parse().unwrap();
            let f = udp6(&spec, s6, d6, 5000, 53, payload);
            assert_eq!(
                csum::l4_checksum_v6(&s6.octets(), &d6.octets(), 17, &f[54..]),
                0
            );
            let f = tcp6(&spec, s6, d6, 5000, 80, 0x02, payload);
            assert_eq!(
                csum::l4_checksum_v6(&s6.octets(), &d6.octets(), 6, &f[54..]),
                0
            );
            let f = icmp6_echo(&spec, s6, d6, 1, 2, payload);
            assert_eq!(
                csum::l4_checksum_v6(&s6.octets(), &d6.octets(), 58, &f[54..]),
                0
            );
        }
    }

    #[test]
    fn ipv6_ext_chain_is_linked() {
        let spec = FrameSpec {
            min_len: 0,
            ipv6_ext: vec![
                Ext6::HopByHop { len8: 0 },
                Ext6::Fragment {
                    offset: 0,
                    more: true,
                    id: 7,
                },
            ],
            ..FrameSpec::default()
        };
        let f = udp6(
            &spec,
            Ipv6Addr::LOCALHOST,
            Ipv6Addr::LOCALHOST,
            1,
            2,
            b"abc",
        );
        assert_eq!(f[14 + 6], ipproto::HOPOPTS);
        assert_eq!(f[54], ipproto::FRAGMENT); // HBH next header
        assert_eq!(f[54 + 1], 0); // HBH hdr ext len
        assert_eq!(f[62], ipproto::UDP); // Fragment next header
        assert_eq!(&f[62 + 2..62 + 4], &1u16.to_be_bytes()); // offset 0, M
        assert_eq!(&f[18..20], &((8 + 8 + 8 + 3) as u16).to_be_bytes()); // payload length
    }
}
