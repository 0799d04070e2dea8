//! Packet trace and capture: the records a trace streams back, the pcap
//! bytes a capture streams back, and their bounds.
//!
//! A trace (`fwdctl trace N`) arms the workers to record the next `N`
//! packets that match its filter on their way through the stages; the
//! daemon streams one [`TraceRecord`] per packet. A capture (`fwdctl
//! capture`) copies matching packets of one port into a bounded ring that
//! the session's thread turns into a classic pcap stream ([`PcapChunk`]s,
//! concatenated they are the file); `fwdctl` writes the file as the user who
//! ran it, so the daemon never opens a path for a peer.

use std::fmt;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use super::IpNet;

/// The most packets one trace may ask for.
pub const MAX_TRACE_PACKETS: u32 = 10_000;
/// The most packets one capture may ask for.
pub const MAX_CAPTURE_PACKETS: u32 = 1_000_000;
/// Bytes of each captured packet kept when the request names no snaplen.
pub const DEFAULT_SNAPLEN: u32 = 256;
/// The largest snaplen a capture may ask for.
pub const MAX_SNAPLEN: u32 = 2048;
/// Packets per second a capture copies when the request names no rate.
pub const DEFAULT_CAPTURE_RATE: u32 = 1000;
/// The highest capture rate a request may ask for.
pub const MAX_CAPTURE_RATE: u32 = 100_000;

/// Which side of the port a capture sees.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// As received, before any stage touched it.
    #[default]
    In,
    /// As transmitted: forwarded (rewritten) or redirected out of the port.
    Out,
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Direction::In => "in",
            Direction::Out => "out",
        })
    }
}

/// What the parse stage made of a packet.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum TracePacket {
    /// IPv4 or IPv6 with its 5-tuple (ports 0 for protocols without them;
    /// ICMP type and code as `sport` and `dport`).
    Ip {
        src: IpAddr,
        dst: IpAddr,
        proto: u8,
        sport: u16,
        dport: u16,
    },
    /// Not IP (ARP, LLDP, ...).
    NotIp,
    /// Not parseable as Ethernet / IP (truncated, bad lengths).
    Malformed,
}

/// The route lookup a packet went through.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceRoute {
    pub table: u32,
    /// The longest prefix that matched; absent when none did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<IpNet>,
}

/// The next hop a packet was sent to (by its route or a rule).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceNexthop {
    pub id: u32,
    /// Absent for a connected destination.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<IpAddr>,
    pub dev: String,
}

/// One traced packet's way through the stages.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceRecord {
    /// The worker (lcore) that handled it, by config index.
    pub worker: u16,
    /// Ingress port.
    pub port: String,
    /// Length on the wire.
    pub len: u32,
    pub packet: TracePacket,
    /// The rules that matched, in evaluation order (rules without a verdict
    /// first, the deciding one last); empty when none did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<TraceRoute>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nexthop: Option<TraceNexthop>,
    /// `forward`, `fragment`, `drop`, `icmp_error`, `hold` (waiting for the
    /// next hop's MAC), `reply` (answered by the appliance), `punt` (to the
    /// host interface) or `consumed` (ARP / ND taken by the appliance).
    pub verdict: String,
    /// The output port of `forward`, `fragment` and `hold`, or the ingress
    /// port of `reply` and `icmp_error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub out: Option<String>,
    /// Why it was dropped (`drop`, `icmp_error`): the drop counter's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Consecutive bytes of a capture's pcap stream, hex encoded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PcapChunk {
    pub hex: String,
}

impl PcapChunk {
    pub fn new(bytes: &[u8]) -> PcapChunk {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut hex = String::with_capacity(bytes.len() * 2);
        for b in bytes {
            hex.push(char::from(DIGITS[usize::from(b >> 4)]));
            hex.push(char::from(DIGITS[usize::from(b & 15)]));
        }
        PcapChunk { hex }
    }

    /// The bytes; `None` for an odd length or a non-hex digit.
    pub fn bytes(&self) -> Option<Vec<u8>> {
        let h = self.hex.as_bytes();
        if !h.len().is_multiple_of(2) {
            return None;
        }
        let digit = |c: u8| char::from(c).to_digit(16).map(|d| d as u8);
        h.chunks_exact(2)
            .map(|p| Some(digit(p[0])? << 4 | digit(p[1])?))
            .collect()
    }
}

/// The last item of a capture stream: what was and was not captured.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaptureSummary {
    /// Packets written to the pcap stream.
    pub captured: u64,
    /// Matching packets not copied: the ring was full (the writer behind).
    pub ring_full: u64,
    /// Matching packets not copied: over the rate limit.
    pub rate_limited: u64,
}

/// Trace records the workers could not hand over (their buffer was full),
/// sent before the end of a trace stream when there were any.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceLost {
    pub records: u64,
}

impl fmt::Display for TracePacket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TracePacket::Ip {
                src,
                dst,
                proto,
                sport,
                dport,
            } => {
                let v6 = src.is_ipv6();
                let name = match (*proto, v6) {
                    (6, _) => Some("tcp"),
                    (17, _) => Some("udp"),
                    (1, false) => Some("icmp"),
                    (58, true) => Some("icmpv6"),
                    _ => None,
                };
                let fam = if v6 { "ipv6" } else { "ipv4" };
                match name {
                    Some(n @ ("tcp" | "udp")) => {
                        let (s, d) = if v6 {
                            (format!("[{src}]"), format!("[{dst}]"))
                        } else {
                            (src.to_string(), dst.to_string())
                        };
                        write!(f, "{fam} {n} {s}:{sport} > {d}:{dport}")
                    }
                    Some(n) => write!(f, "{fam} {n} {src} > {dst} type {sport} code {dport}"),
                    None => write!(f, "{fam} proto {proto} {src} > {dst}"),
                }
            }
            TracePacket::NotIp => f.write_str("not-ip"),
            TracePacket::Malformed => f.write_str("malformed"),
        }
    }
}

/// One line: `worker 0 in p0 len 60 ipv4 udp A:1 > B:2 | rules 10 |
/// route table 0 10.1.0.0/24 | nexthop 3 via 10.0.1.2 dev p1 | forward p1`.
impl fmt::Display for TraceRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "worker {} in {} len {} {}",
            self.worker, self.port, self.len, self.packet
        )?;
        if !self.rules.is_empty() {
            let ids: Vec<String> = self.rules.iter().map(u32::to_string).collect();
            write!(f, " | rules {}", ids.join(" "))?;
        }
        if let Some(r) = &self.route {
            match r.prefix {
                Some(p) => write!(f, " | route table {} {p}", r.table)?,
                None => write!(f, " | route table {} none", r.table)?,
            }
        }
        if let Some(n) = &self.nexthop {
            write!(f, " | nexthop {}", n.id)?;
            if let Some(v) = n.via {
                write!(f, " via {v}")?;
            }
            write!(f, " dev {}", n.dev)?;
        }
        write!(f, " | {}", self.verdict)?;
        if let Some(o) = &self.out {
            write!(f, " {o}")?;
        }
        if let Some(r) = &self.reason {
            write!(f, " ({r})")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> TraceRecord {
        TraceRecord {
            worker: 0,
            port: "p0".into(),
            len: 60,
            packet: TracePacket::Ip {
                src: "10.0.0.1".parse().unwrap(),
                dst: "10.1.0.5".parse().unwrap(),
                proto: 17,
                sport: 1000,
                dport: 53,
            },
            rules: vec![],
            route: Some(TraceRoute {
                table: 0,
                prefix: Some("10.1.0.0/24".parse().unwrap()),
            }),
            nexthop: Some(TraceNexthop {
                id: 3,
                via: Some("10.0.1.2".parse().unwrap()),
                dev: "p1".into(),
            }),
            verdict: "forward".into(),
            out: Some("p1".into()),
            reason: None,
        }
    }

    #[test]
    fn a_routed_record_prints_its_route_and_next_hop_on_one_line() {
        assert_eq!(
            record().to_string(),
            "worker 0 in p0 len 60 ipv4 udp 10.0.0.1:1000 > 10.1.0.5:53 \
             | route table 0 10.1.0.0/24 | nexthop 3 via 10.0.1.2 dev p1 | forward p1"
        );
    }

    #[test]
    fn a_dropped_record_prints_the_rules_and_the_reason() {
        let r = TraceRecord {
            rules: vec![5, 10],
            route: None,
            nexthop: None,
            verdict: "drop".into(),
            out: None,
            reason: Some("acl_drop".into()),
            packet: TracePacket::Ip {
                src: "2001:db8::1".parse().unwrap(),
                dst: "2001:db8:1::1".parse().unwrap(),
                proto: 6,
                sport: 4000,
                dport: 22,
            },
            ..record()
        };
        assert_eq!(
            r.to_string(),
            "worker 0 in p0 len 60 ipv6 tcp [2001:db8::1]:4000 > [2001:db8:1::1]:22 \
             | rules 5 10 | drop (acl_drop)"
        );
        let icmp = TracePacket::Ip {
            src: "10.0.0.1".parse().unwrap(),
            dst: "10.0.0.2".parse().unwrap(),
            proto: 1,
            sport: 8,
            dport: 0,
        };
        assert_eq!(
            icmp.to_string(),
            "ipv4 icmp 10.0.0.1 > 10.0.0.2 type 8 code 0"
        );
        assert_eq!(TracePacket::NotIp.to_string(), "not-ip");
    }

    #[test]
    fn records_round_trip_through_json() {
        let r = record();
        let s = serde_json::to_string(&r).unwrap();
        assert_eq!(serde_json::from_str::<TraceRecord>(&s).unwrap(), r);
    }

    #[test]
    fn pcap_chunks_round_trip_and_refuse_bad_hex() {
        let bytes: Vec<u8> = (0..=255).collect();
        let c = PcapChunk::new(&bytes);
        assert_eq!(&c.hex[..6], "000102");
        assert_eq!(c.bytes().unwrap(), bytes);
        assert_eq!(PcapChunk { hex: "abc".into() }.bytes(), None);
        assert_eq!(PcapChunk { hex: "zz".into() }.bytes(), None);
    }
}
