//! What one scrape reports, read from the live sources ([`gather`]) into
//! plain data ([`Sample`]) that the renderer turns into text.
//!
//! Every read here is one a management thread may make while the data
//! path runs: the per-lcore counters with `Relaxed` loads
//! ([`Stats::snapshot`]), the rule counters likewise, the tables, the
//! versioning state and the neighbour table from the board the control
//! lcore posts them on ([`ControlHandle`]: a short lock the writer only
//! takes to post, never one the data path takes), and the driver's
//! counters (`rte_eth_stats_get`, `rte_eth_xstats_get`, which DPDK allows
//! concurrently with the queues' owners). Nothing is written anywhere.

use std::sync::Arc;

use ctl::wire;

use crate::acl;
use crate::control::ports::{port_stats, PortMeta};
use crate::control::ControlHandle;
use crate::dpdk::mempool::Mempool;
use crate::dpdk::port;
use crate::hostif::path::HostCounters;
use crate::neigh::State;
use crate::qsbr::QsbrStats;
use crate::stats::{LcoreTotals, Stats};

/// Xstats series per port at most (drivers name a few dozen to a few
/// hundred; this bounds a misbehaving one).
pub const MAX_XSTATS_PER_PORT: usize = 1024;

/// The live sources a scrape reads.
pub struct Sources {
    pub control: ControlHandle,
    pub stats: Arc<Stats>,
    pub rule_counters: Arc<acl::CounterSet>,
    /// Indexed like the config's ports (and the counters' port blocks).
    pub ports: Vec<PortMeta>,
    /// The mbuf pool, when there is one to report.
    pub pool: Option<Arc<Mempool>>,
    /// The host thread's counters, when the host path is on.
    pub host: Option<Arc<HostCounters>>,
    /// The FPM session's counters, when FPM is on.
    pub fpm: Option<crate::control::fpm::SharedStatus>,
    /// Rules with a series of their own, at most.
    pub max_rule_series: usize,
    /// `fwd x.y.z`, for `fwd_build_info`.
    pub version: String,
}

/// One port.
#[derive(Debug, Clone, PartialEq)]
pub struct PortSample {
    /// Packets and bytes (the workers' counters) and the driver's
    /// missed/error counters, as `fwdctl port stats` reports them.
    pub stats: wire::PortStats,
    /// Carrier as the control lcore last saw it.
    pub carrier: bool,
    pub admin_up: bool,
    /// The driver's extended counters, at most [`MAX_XSTATS_PER_PORT`].
    pub xstats: Vec<(String, u64)>,
}

/// One rule's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuleSample {
    pub id: u32,
    pub packets: u64,
    pub bytes: u64,
}

/// One routing table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableSample {
    pub table: u32,
    pub routes_v4: u64,
    pub routes_v6: u64,
}

/// Everything one scrape reports.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub version: String,
    pub ports: Vec<PortSample>,
    /// Per worker lcore: polls, packets, drops by reason, events.
    pub lcores: Vec<LcoreTotals>,
    /// Control-side and host-thread counters, by name (`neigh_probes`, ...).
    pub control_events: Vec<(&'static str, u64)>,
    /// Packets held for unresolved neighbours now.
    pub neigh_held: u64,
    /// Neighbour entries by (port name, state), every state of every port.
    pub neighbours: Vec<(String, &'static str, u64)>,
    /// The first `max_rule_series` rules in evaluation order.
    pub rules: Vec<RuleSample>,
    /// Rules in the classifier.
    pub rules_total: u64,
    /// Rules without a series of their own (over `max_rule_series`).
    pub rules_omitted: u64,
    pub tables: Vec<TableSample>,
    pub nexthops: u64,
    pub groups: u64,
    pub fpm_routes: u64,
    /// The memory the routing tables are charged, and its limit
    /// (`route::Limits`), bytes.
    pub routing_bytes: (u64, u64),
    /// The limit on routing tables (VRFs); the tables are `tables`.
    pub routing_tables_limit: u64,
    /// Versioning: generation, pending memory, latency histogram, workers.
    pub qsbr: QsbrStats,
    /// Mbufs (in use, capacity), when a pool is known.
    pub mempool: Option<(u64, u64)>,
}

/// Every neighbour state, in `ip neigh`'s words.
pub const NEIGH_STATES: [State; 6] = [
    State::Incomplete,
    State::Reachable,
    State::Stale,
    State::Probe,
    State::Failed,
    State::Permanent,
];

/// A state's label value (exhaustive: a new state must be named here).
pub fn state_name(s: State) -> &'static str {
    match s {
        State::Incomplete => "incomplete",
        State::Reachable => "reachable",
        State::Stale => "stale",
        State::Probe => "probe",
        State::Failed => "failed",
        State::Permanent => "permanent",
    }
}

/// Reads every source once.
///
/// # Errors
/// When the control side's published state cannot be read.
pub fn gather(src: &Sources) -> Result<Sample, wire::ErrorBody> {
    let snap = src.stats.snapshot();
    let (_, t) = src.control.snapshot()?;
    let qsbr = src.control.status()?;
    let neigh = src.control.neighbours()?;

    let ports = port_stats(&src.ports, &snap)
        .into_iter()
        .zip(&src.ports)
        .enumerate()
        .map(|(i, (stats, m))| {
            let info = t.ports.get(i);
            let mut xstats = port::xstats(m.dpdk_id);
            xstats.truncate(MAX_XSTATS_PER_PORT);
            PortSample {
                stats,
                carrier: info.is_none_or(|p| p.carrier),
                admin_up: info.is_none_or(|p| p.admin_up),
                xstats,
            }
        })
        .collect();

    let c = neigh.counters;
    let mut control_events = vec![
        ("neigh_probes", c.probes),
        ("neigh_learned", c.learned),
        ("neigh_released", c.released),
        ("neigh_dropped", c.dropped),
        ("neigh_unreachable_sent", c.unreachable_sent),
        ("router_advertisements", c.router_advertisements),
    ];
    if let Some(h) = &src.host {
        control_events.extend(h.named());
    }
    if let Some(f) = &src.fpm {
        let f = f.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        control_events.extend([
            ("fpm_connects", f.connects),
            ("fpm_routes_added", f.routes_added),
            ("fpm_routes_deleted", f.routes_deleted),
            // Refused routes (the limits among the reasons): `fpm show`
            // has the last error.
            ("fpm_routes_refused", f.refused),
        ]);
    }

    let port_name = |p: u16| {
        t.ports
            .get(usize::from(p))
            .map_or_else(|| format!("#{p}"), |x| x.name.clone())
    };
    let mut neighbours: Vec<(String, &'static str, u64)> = t
        .ports
        .iter()
        .flat_map(|p| {
            NEIGH_STATES
                .iter()
                .map(|&s| (p.name.clone(), state_name(s), 0))
        })
        .collect();
    for e in &neigh.entries {
        let (port, state) = (port_name(e.port), state_name(e.state));
        match neighbours
            .iter_mut()
            .find(|(p, s, _)| *p == port && *s == state)
        {
            Some(n) => n.2 += 1,
            None => neighbours.push((port, state, 1)),
        }
    }

    let mut entries: Vec<&Arc<acl::RuleEntry>> = t.acl.entries().collect();
    let rules_total = entries.len();
    entries.sort_by_key(|e| e.rule().order());
    let rules = entries
        .iter()
        .take(src.max_rule_series)
        .map(|e| {
            let s = src.rule_counters.read(e.slot());
            RuleSample {
                id: e.id(),
                packets: s.packets,
                bytes: s.bytes,
            }
        })
        .collect::<Vec<_>>();

    Ok(Sample {
        version: src.version.clone(),
        ports,
        lcores: snap.lcores,
        control_events,
        neigh_held: neigh.held as u64,
        neighbours,
        rules_omitted: (rules_total - rules.len()) as u64,
        rules,
        rules_total: rules_total as u64,
        tables: t
            .routing
            .vrfs()
            .map(|v| {
                let (r4, r6) = t.routing.route_count(v);
                TableSample {
                    table: v,
                    routes_v4: r4 as u64,
                    routes_v6: r6 as u64,
                }
            })
            .collect(),
        nexthops: t.routing.nexthops().count() as u64,
        groups: t.routing.groups().count() as u64,
        fpm_routes: t.routing.fpm_route_count() as u64,
        routing_bytes: (
            t.routing.charged_bytes() as u64,
            t.routing.limits().bytes as u64,
        ),
        routing_tables_limit: t.routing.limits().tables as u64,
        qsbr,
        mempool: src.pool.as_ref().map(|p| {
            let used = u64::from(p.in_use());
            (used, used + u64::from(p.available()))
        }),
    })
}
