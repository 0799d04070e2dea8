//! Data-path counters: per lcore, cache-line padded, written only by their
//! lcore, summed on read.
//!
//! A worker owns one [`LcoreCounters`] block and bumps it with a plain
//! load + store (no read-modify-write bus lock: it is the only writer);
//! readers (the management side) load each block with `Relaxed` and sum.
//! Counters are monotonic, so a reader never needs a consistent cut across
//! fields: it sees each one at some recent value.

use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam_utils::CachePadded;
use serde::Serialize;

/// Why a packet was dropped. `Copy`, feeds counters, never allocates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[repr(u8)]
pub enum DropReason {
    /// Failed parsing (truncated, bad IHL, bad lengths, bad extension chain).
    Malformed,
    /// Not IPv4/IPv6 (ARP, LLDP, ...), with no handler for it.
    NotIp,
    /// No route matched the destination.
    NoRoute,
    /// TTL / hop limit would reach zero.
    TtlExpired,
    /// The next hop's MAC address is unknown.
    NoNeighbour,
    /// The TX ring was full.
    TxFull,
    /// A classifier rule said drop.
    AclDrop,
    /// More than `acl::MAX_CONTINUE` matching rules without a verdict:
    /// evaluation stopped there, and a firewall fails closed.
    AclChainCut,
    /// A policer was out of tokens.
    Policed,
    /// A blackhole route matched.
    Blackhole,
    /// A reject route matched (answered with the configured ICMP
    /// unreachable, rate permitting).
    Reject,
    /// Addressed to the appliance itself and not answered on the data
    /// path, or multicast / broadcast (not routed).
    Local,
    /// The output port is not usable by this worker.
    BadPort,
    /// Larger than the output port's MTU and not fragmentable (IPv4 with
    /// DF, IPv6): answered with "fragmentation needed" / "packet too big".
    MtuExceeded,
    /// The input or output port is down (admin or carrier).
    LinkDown,
    /// IPv4 header checksum wrong (RFC 1812 5.2.2).
    BadChecksum,
    /// A multi-segment frame (the data path reads headers from the first
    /// segment only; jumbo frames need a larger `mempool.data_room`).
    MultiSegment,
    /// For the host interface, over the port's punt rate (control-plane
    /// policing).
    PuntPoliced,
    /// For the host interface, but its queue was full (the host thread is
    /// behind).
    PuntQueueFull,
}

impl DropReason {
    pub const ALL: [DropReason; 19] = [
        DropReason::Malformed,
        DropReason::NotIp,
        DropReason::NoRoute,
        DropReason::TtlExpired,
        DropReason::NoNeighbour,
        DropReason::TxFull,
        DropReason::AclDrop,
        DropReason::AclChainCut,
        DropReason::Policed,
        DropReason::Blackhole,
        DropReason::Reject,
        DropReason::Local,
        DropReason::BadPort,
        DropReason::MtuExceeded,
        DropReason::LinkDown,
        DropReason::BadChecksum,
        DropReason::MultiSegment,
        DropReason::PuntPoliced,
        DropReason::PuntQueueFull,
    ];
    pub const COUNT: usize = Self::ALL.len();

    pub fn name(self) -> &'static str {
        match self {
            DropReason::Malformed => "malformed",
            DropReason::NotIp => "not_ip",
            DropReason::NoRoute => "no_route",
            DropReason::TtlExpired => "ttl_expired",
            DropReason::NoNeighbour => "no_neighbour",
            DropReason::TxFull => "tx_full",
            DropReason::AclDrop => "acl_drop",
            DropReason::AclChainCut => "acl_chain_cut",
            DropReason::Policed => "policed",
            DropReason::Blackhole => "blackhole",
            DropReason::Reject => "reject",
            DropReason::Local => "local",
            DropReason::BadPort => "bad_port",
            DropReason::MtuExceeded => "mtu_exceeded",
            DropReason::LinkDown => "link_down",
            DropReason::BadChecksum => "bad_checksum",
            DropReason::MultiSegment => "multi_segment",
            DropReason::PuntPoliced => "punt_policed",
            DropReason::PuntQueueFull => "punt_queue_full",
        }
    }
}

/// What the data path did besides forwarding, and how its flow cache fared,
/// counted per lcore.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Event {
    /// ARP replies, neighbour advertisements and echo replies sent.
    Replies,
    /// ICMP / ICMPv6 errors sent.
    IcmpErrors,
    /// ICMP errors not sent: over the rate limit or no mbuf.
    IcmpSuppressed,
    /// Packets handed to the control side to wait for their neighbour.
    Held,
    /// ARP / neighbour discovery messages handed to the control side.
    NeighMessages,
    /// Router solicitations on a port that sends no advertisements.
    RsIgnored,
    /// IPv4 fragments sent (of packets larger than the output MTU).
    Fragments,
    /// Packets the control side asked this worker to send (probes, held
    /// packets, router advertisements).
    Injected,
    /// Mirror copies that could not be made (pool empty) or sent.
    MirrorFailed,
    /// Packets handed to the host thread for the port's kernel interface.
    Punted,
    /// Rule-set lookups answered by the worker's flow cache.
    AclCacheHits,
    /// Rule-set lookups that went to the classifier (missed the flow
    /// cache, or it stood aside for traffic it kept missing).
    AclCacheMisses,
}

impl Event {
    pub const ALL: [Event; 12] = [
        Event::Replies,
        Event::IcmpErrors,
        Event::IcmpSuppressed,
        Event::Held,
        Event::NeighMessages,
        Event::RsIgnored,
        Event::Fragments,
        Event::Injected,
        Event::MirrorFailed,
        Event::Punted,
        Event::AclCacheHits,
        Event::AclCacheMisses,
    ];
    pub const COUNT: usize = Self::ALL.len();

    pub fn name(self) -> &'static str {
        match self {
            Event::Replies => "replies",
            Event::IcmpErrors => "icmp_errors",
            Event::IcmpSuppressed => "icmp_suppressed",
            Event::Held => "held",
            Event::NeighMessages => "neigh_messages",
            Event::RsIgnored => "rs_ignored",
            Event::Fragments => "fragments",
            Event::Injected => "injected",
            Event::MirrorFailed => "mirror_failed",
            Event::Punted => "punted",
            Event::AclCacheHits => "acl_cache_hits",
            Event::AclCacheMisses => "acl_cache_misses",
        }
    }
}

/// A counter with a single writer.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    /// Adds `n`. Only the owning lcore calls this.
    #[inline(always)]
    pub fn add(&self, n: u64) {
        // Relaxed load + store: this thread is the only writer, so no update
        // can be lost; readers only need some recent value.
        self.0.store(
            self.0.load(Ordering::Relaxed).wrapping_add(n),
            Ordering::Relaxed,
        );
    }

    /// Current value (any thread).
    #[inline]
    pub fn get(&self) -> u64 {
        // Relaxed: monotonic counter, no other memory is published through it.
        self.0.load(Ordering::Relaxed)
    }
}

/// Per-port counters inside one lcore's block.
#[derive(Debug, Default)]
pub struct PortCounters {
    pub rx_packets: Counter,
    pub rx_bytes: Counter,
    pub tx_packets: Counter,
    pub tx_bytes: Counter,
    pub tx_dropped: Counter,
}

/// One lcore's counters.
#[derive(Debug)]
pub struct LcoreCounters {
    pub lcore: u32,
    pub polls: Counter,
    pub busy_polls: Counter,
    pub rx_packets: Counter,
    pub tx_packets: Counter,
    pub drops: [Counter; DropReason::COUNT],
    pub events: [Counter; Event::COUNT],
    pub ports: Box<[CachePadded<PortCounters>]>,
    /// Sleeps while idle, and the time they took (`datapath.idle_sleep_us`);
    /// last, so the fields the loop writes under load keep their places.
    pub idle_sleeps: Counter,
    pub idle_sleep_ns: Counter,
}

impl LcoreCounters {
    #[inline(always)]
    pub fn drop_n(&self, r: DropReason, n: u64) {
        self.drops[r as usize].add(n);
    }

    #[inline(always)]
    pub fn event_n(&self, e: Event, n: u64) {
        self.events[e as usize].add(n);
    }
}

/// Every lcore's counters; shared (`Arc`) between the workers and readers.
#[derive(Debug)]
pub struct Stats {
    lcores: Box<[CachePadded<LcoreCounters>]>,
    n_ports: usize,
}

impl Stats {
    /// Blocks for the given worker lcores over `n_ports` ports.
    pub fn new(lcores: &[u32], n_ports: usize) -> Stats {
        Stats {
            lcores: lcores
                .iter()
                .map(|&l| {
                    CachePadded::new(LcoreCounters {
                        lcore: l,
                        polls: Counter::default(),
                        busy_polls: Counter::default(),
                        rx_packets: Counter::default(),
                        tx_packets: Counter::default(),
                        drops: Default::default(),
                        events: Default::default(),
                        ports: (0..n_ports)
                            .map(|_| CachePadded::new(PortCounters::default()))
                            .collect(),
                        idle_sleeps: Counter::default(),
                        idle_sleep_ns: Counter::default(),
                    })
                })
                .collect(),
            n_ports,
        }
    }

    /// The block of worker `i` (index in the config's worker list).
    pub fn lcore(&self, i: usize) -> &LcoreCounters {
        &self.lcores[i]
    }

    /// Sums every block into a plain snapshot.
    pub fn snapshot(&self) -> StatsSnapshot {
        let mut s = StatsSnapshot {
            ports: vec![PortTotals::default(); self.n_ports],
            ..Default::default()
        };
        for l in self.lcores.iter() {
            let mut ls = LcoreTotals {
                lcore: l.lcore,
                polls: l.polls.get(),
                busy_polls: l.busy_polls.get(),
                idle_sleeps: l.idle_sleeps.get(),
                idle_sleep_ns: l.idle_sleep_ns.get(),
                rx_packets: l.rx_packets.get(),
                tx_packets: l.tx_packets.get(),
                replies: l.events[Event::Replies as usize].get(),
                drops: 0,
                drops_by_reason: [0; DropReason::COUNT],
                events: [0; Event::COUNT],
            };
            for (i, d) in l.drops.iter().enumerate() {
                let v = d.get();
                s.drops[i] += v;
                ls.drops += v;
                ls.drops_by_reason[i] = v;
            }
            for (i, e) in l.events.iter().enumerate() {
                let v = e.get();
                s.events[i] += v;
                ls.events[i] = v;
            }
            for (p, pc) in l.ports.iter().enumerate() {
                let t = &mut s.ports[p];
                t.rx_packets += pc.rx_packets.get();
                t.rx_bytes += pc.rx_bytes.get();
                t.tx_packets += pc.tx_packets.get();
                t.tx_bytes += pc.tx_bytes.get();
                t.tx_dropped += pc.tx_dropped.get();
            }
            s.rx_packets += ls.rx_packets;
            s.tx_packets += ls.tx_packets;
            s.lcores.push(ls);
        }
        s
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PortTotals {
    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub tx_dropped: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LcoreTotals {
    pub lcore: u32,
    pub polls: u64,
    pub busy_polls: u64,
    pub idle_sleeps: u64,
    pub idle_sleep_ns: u64,
    pub rx_packets: u64,
    pub tx_packets: u64,
    pub replies: u64,
    pub drops: u64,
    /// This lcore's drops, indexed by [`DropReason`] (not in the JSON
    /// documents, which carry the sums).
    #[serde(skip)]
    pub drops_by_reason: [u64; DropReason::COUNT],
    /// This lcore's events, indexed by [`Event`].
    #[serde(skip)]
    pub events: [u64; Event::COUNT],
}

/// A summed view of every counter.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatsSnapshot {
    pub rx_packets: u64,
    pub tx_packets: u64,
    pub drops: [u64; DropReason::COUNT],
    pub events: [u64; Event::COUNT],
    pub ports: Vec<PortTotals>,
    pub lcores: Vec<LcoreTotals>,
}

impl StatsSnapshot {
    pub fn dropped(&self, r: DropReason) -> u64 {
        self.drops[r as usize]
    }

    pub fn counted(&self, e: Event) -> u64 {
        self.events[e as usize]
    }

    /// Event counters by name, in a stable order.
    pub fn events_by_name(&self) -> Vec<(&'static str, u64)> {
        Event::ALL
            .iter()
            .map(|&e| (e.name(), self.counted(e)))
            .collect()
    }

    /// Drop counters by name, in a stable order.
    pub fn drops_by_name(&self) -> Vec<(&'static str, u64)> {
        DropReason::ALL
            .iter()
            .map(|&r| (r.name(), self.dropped(r)))
            .collect()
    }
}

/// The final counters as one JSON document (the daemon writes it at exit
/// with `--stats-json`; tests read it).
pub fn final_json(
    s: &StatsSnapshot,
    port_names: &[String],
    port_macs: &[[u8; 6]],
    hw: &[crate::dpdk::port::PortHwStats],
) -> String {
    let ports: Vec<serde_json::Value> = port_names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            serde_json::json!({
                "name": n,
                "mac": port_macs.get(i).map(|m| format_mac(*m)),
                "counters": s.ports.get(i),
                "driver": hw.get(i),
            })
        })
        .collect();
    let drops: serde_json::Map<String, serde_json::Value> = s
        .drops_by_name()
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.into()))
        .collect();
    let events: serde_json::Map<String, serde_json::Value> = s
        .events_by_name()
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.into()))
        .collect();
    serde_json::json!({
        "rx_packets": s.rx_packets,
        "tx_packets": s.tx_packets,
        "drops": drops,
        "events": events,
        "ports": ports,
        "lcores": s.lcores,
    })
    .to_string()
}

/// `02:00:00:00:00:01`.
pub fn format_mac(m: [u8; 6]) -> String {
    format!(
        "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
        m[0], m[1], m[2], m[3], m[4], m[5]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_lcore_counters_sum_on_read() {
        let s = Stats::new(&[1, 2], 2);
        s.lcore(0).rx_packets.add(3);
        s.lcore(1).rx_packets.add(4);
        s.lcore(0).drop_n(DropReason::NoRoute, 2);
        s.lcore(1).drop_n(DropReason::NoRoute, 1);
        s.lcore(1).ports[1].tx_packets.add(7);
        let snap = s.snapshot();
        assert_eq!(snap.rx_packets, 7);
        assert_eq!(snap.dropped(DropReason::NoRoute), 3);
        assert_eq!(snap.ports[1].tx_packets, 7);
        assert_eq!(snap.lcores[0].drops, 2);
        assert_eq!(
            snap.lcores[1].drops_by_reason[DropReason::NoRoute as usize],
            1
        );
        s.lcore(1).event_n(Event::Punted, 5);
        assert_eq!(s.snapshot().lcores[1].events[Event::Punted as usize], 5);
        assert_eq!(s.snapshot().lcores[0].events[Event::Punted as usize], 0);
        assert_eq!(DropReason::ALL.len(), DropReason::COUNT);
        for (i, r) in DropReason::ALL.iter().enumerate() {
            assert_eq!(*r as usize, i);
        }
        for (i, e) in Event::ALL.iter().enumerate() {
            assert_eq!(*e as usize, i);
        }
    }

    #[test]
    fn blocks_do_not_share_cache_lines() {
        assert!(std::mem::align_of::<CachePadded<LcoreCounters>>() >= 64);
    }
}
