//! The OpenMetrics / Prometheus endpoint (`metrics:` in the config; off
//! when absent).
//!
//! A thread of its own ([`http`]) answers `GET /metrics`. Each scrape
//! reads the live sources once ([`sample::gather`]: the per-lcore
//! counters, the rule counters, the tables and versioning state the
//! control lcore posts, the drivers' counters) and writes them with the
//! official client library ([`fn@render`]). It never touches the data path:
//! the workers' counters are read with plain loads, the control side's
//! state is taken from what it already posts for `fwdctl`, and nothing
//! takes a lock a worker could wait for.
//!
//! The endpoint has no authentication and no TLS. Bind it to loopback or
//! a management address.
//!
//! The metrics (see also the README's table):
//!
//! | name | type | labels |
//! |---|---|---|
//! | `fwd_port_{rx,tx}_packets_total`, `fwd_port_{rx,tx}_bytes_total` | counter | port |
//! | `fwd_port_tx_dropped_packets_total`, `fwd_port_rx_missed_packets_total`, `fwd_port_{rx,tx}_errors_total`, `fwd_port_rx_nombuf_total` | counter | port |
//! | `fwd_port_xstat_total` | counter | port, name |
//! | `fwd_port_up`, `fwd_port_admin_up` | gauge | port |
//! | `fwd_dropped_packets_total` | counter | lcore, reason |
//! | `fwd_events_total` | counter | lcore, event |
//! | `fwd_lcore_{rx,tx}_packets_total`, `fwd_lcore_polls_total`, `fwd_lcore_busy_polls_total` | counter | lcore |
//! | `fwd_control_events_total` | counter | event |
//! | `fwd_rule_packets_total`, `fwd_rule_bytes_total` | counter | rule |
//! | `fwd_rules`, `fwd_rule_series_omitted` | gauge | |
//! | `fwd_routes` | gauge | table, family |
//! | `fwd_nexthops`, `fwd_nexthop_groups`, `fwd_fpm_routes` | gauge | |
//! | `fwd_routing_memory_bytes`, `fwd_routing_memory_limit_bytes`, `fwd_routing_tables_limit` | gauge | |
//! | `fwd_table_generation`, `fwd_reclaim_pending_bytes`, `fwd_reclaim_pending_objects` | gauge | |
//! | `fwd_reclaimed_bytes_total`, `fwd_reclaimed_objects_total`, `fwd_worker_stalls_total`, `fwd_backpressure_{events,overruns}_total` | counter | |
//! | `fwd_worker_online`, `fwd_worker_stalled`, `fwd_worker_reported_generation` | gauge | worker |
//! | `fwd_publish_to_quiescent_seconds` | histogram | le |
//! | `fwd_neighbours` | gauge | port, state |
//! | `fwd_neighbour_held_packets`, `fwd_mempool_mbufs_in_use`, `fwd_mempool_mbufs` | gauge | |
//! | `fwd_build_info` | info | version |

pub mod exposition;
pub mod http;
pub mod render;
pub mod sample;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

pub use http::MetricsServer;
pub use render::{render, Format};
pub use sample::{gather, Sample, Sources};

/// Binds `listen` and serves the metrics of `sources` there.
///
/// # Errors
/// When the address cannot be bound or the thread not spawned.
pub fn start(
    listen: SocketAddr,
    max_connections: usize,
    timeout: Duration,
    sources: Sources,
) -> std::io::Result<MetricsServer> {
    let scrape: Arc<http::Scrape> = Arc::new(move |format| {
        let s = gather(&sources).map_err(|e| e.to_string())?;
        render(s, format).map_err(|_| "the metrics could not be encoded".to_string())
    });
    http::start(
        listen,
        http::Limits {
            max_connections,
            timeout,
        },
        scrape,
    )
}

#[cfg(test)]
mod tests;
