//! What the management side reports about ports besides the tables: their
//! fixed facts ([`PortMeta`]) and their counters ([`port_stats`]), the
//! workers' per-lcore sums joined with the driver's own counters. The
//! fwdctl server (`port stats`, `stats`) and the metrics endpoint answer
//! from the same function, so they cannot disagree.

use ctl::wire;

use crate::dpdk::port;
use crate::stats::StatsSnapshot;

/// What `port show` reports that the tables do not hold.
#[derive(Debug, Clone)]
pub struct PortMeta {
    pub name: String,
    pub dpdk_id: u16,
    pub driver: String,
    pub rx_queues: u16,
    pub tx_queues: u16,
    pub mtu: u16,
}

/// Every port's counters: packets and bytes from the workers' counters
/// (`snap`, indexed like `ports`), missed/errors/no-mbuf from the driver.
pub fn port_stats(ports: &[PortMeta], snap: &StatsSnapshot) -> Vec<wire::PortStats> {
    ports
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let hw = port::hw_stats(m.dpdk_id);
            let c = snap.ports.get(i).cloned().unwrap_or_default();
            wire::PortStats {
                name: m.name.clone(),
                rx_packets: c.rx_packets,
                rx_bytes: c.rx_bytes,
                rx_missed: hw.imissed,
                rx_errors: hw.ierrors,
                rx_nombuf: hw.rx_nombuf,
                tx_packets: c.tx_packets,
                tx_bytes: c.tx_bytes,
                tx_errors: hw.oerrors,
                tx_dropped: c.tx_dropped,
            }
        })
        .collect()
}
