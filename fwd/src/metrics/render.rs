//! A [`Sample`] as OpenMetrics text (or the Prometheus text format 0.0.4),
//! written by the official client library (`prometheus-client`) through a
//! [`Collector`], so names, `_total` suffixes, units, escaping and the
//! `# EOF` end are its business.
//!
//! Conventions: every name starts with `fwd_`; counters end in `_total`;
//! bytes and seconds are base units; every label is bounded: ports,
//! lcores, workers and tables by the config, reasons, events and states
//! by the code, rules by `metrics.max_rule_series`, xstats by the driver
//! (and [`super::sample::MAX_XSTATS_PER_PORT`]).

use std::fmt;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

use super::sample::Sample;
use crate::qsbr::LATENCY_BUCKETS_NS;
use crate::stats::{DropReason, Event};

/// Which text format a scraper asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenMetrics 1.0.0 (the default).
    OpenMetrics,
    /// The Prometheus text format 0.0.4 (for scrapers that ask only for
    /// `text/plain`).
    PrometheusText,
}

impl Format {
    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::PrometheusText => prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
        }
    }
}

/// The exposition of `sample` in `format`.
///
/// # Errors
/// When the library refuses to encode (it does not for what is built
/// here; the endpoint answers 500 if it ever did).
pub fn render(sample: Sample, format: Format) -> Result<String, fmt::Error> {
    let mut reg = Registry::default();
    reg.register_collector(Box::new(SampleCollector(sample)));
    let mut out = String::new();
    match format {
        Format::OpenMetrics => prometheus_client::encoding::text::encode(&mut out, &reg)?,
        Format::PrometheusText => {
            prometheus_client::encoding::prometheus_text::encode(&mut out, &reg)?;
        }
    }
    Ok(out)
}

#[derive(Debug)]
struct SampleCollector(Sample);

type Labels = Vec<(&'static str, String)>;

/// One metric family: its descriptor, then each point.
fn family<V>(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<Unit>,
    kind: MetricType,
    points: impl IntoIterator<Item = (Labels, V)>,
    mut point: impl FnMut(&mut MetricEncoder, V) -> fmt::Result,
) -> fmt::Result {
    let mut m = enc.encode_descriptor(name, help, unit.as_ref(), kind)?;
    for (labels, v) in points {
        if labels.is_empty() {
            point(&mut m, v)?;
        } else {
            point(&mut m.encode_family(&labels)?, v)?;
        }
    }
    Ok(())
}

fn counter(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<Unit>,
    points: impl IntoIterator<Item = (Labels, u64)>,
) -> fmt::Result {
    family(
        enc,
        name,
        help,
        unit,
        MetricType::Counter,
        points,
        |m, v| m.encode_counter::<NoLabelSet, u64, u64>(&v, None),
    )
}

fn gauge(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<Unit>,
    points: impl IntoIterator<Item = (Labels, u64)>,
) -> fmt::Result {
    family(enc, name, help, unit, MetricType::Gauge, points, |m, v| {
        m.encode_gauge(&v)
    })
}

fn one(v: u64) -> [(Labels, u64); 1] {
    [(Vec::new(), v)]
}

fn flag(b: bool) -> u64 {
    u64::from(b)
}

impl Collector for SampleCollector {
    fn encode(&self, mut enc: DescriptorEncoder) -> fmt::Result {
        let s = &self.0;
        let e = &mut enc;
        e.encode_descriptor("fwd_build", "The daemon's version.", None, MetricType::Info)?
            .encode_info(&vec![("version", s.version.clone())])?;
        self.ports(e)?;
        self.lcores(e)?;
        counter(
            e,
            "fwd_control_events",
            "Control-side and host-thread events (neighbour probes, learned, released, \
             dropped, unreachable sent, router advertisements; host_* when the host path is on).",
            None,
            s.control_events
                .iter()
                .map(|&(n, v)| (vec![("event", n.to_string())], v)),
        )?;
        self.rules(e)?;
        self.tables(e)?;
        self.versions(e)?;
        gauge(
            e,
            "fwd_neighbours",
            "Neighbour entries by port and state.",
            None,
            s.neighbours
                .iter()
                .map(|(p, st, n)| (vec![("port", p.clone()), ("state", (*st).to_string())], *n)),
        )?;
        gauge(
            e,
            "fwd_neighbour_held_packets",
            "Packets held for unresolved neighbours now.",
            None,
            one(s.neigh_held),
        )?;
        if let Some((used, cap)) = s.mempool {
            gauge(
                e,
                "fwd_mempool_mbufs_in_use",
                "Mbufs taken from the pool (rings, held packets, in flight).",
                None,
                one(used),
            )?;
            gauge(e, "fwd_mempool_mbufs", "Mbufs in the pool.", None, one(cap))?;
        }
        Ok(())
    }
}

impl SampleCollector {
    fn ports(&self, e: &mut DescriptorEncoder) -> fmt::Result {
        let ps = &self.0.ports;
        let by_port = |f: fn(&super::sample::PortSample) -> u64| {
            ps.iter()
                .map(move |p| (vec![("port", p.stats.name.clone())], f(p)))
        };
        counter(
            e,
            "fwd_port_rx_packets",
            "Packets received (the workers' count).",
            None,
            by_port(|p| p.stats.rx_packets),
        )?;
        counter(
            e,
            "fwd_port_rx",
            "Bytes received (frames as the driver delivered them).",
            Some(Unit::Bytes),
            by_port(|p| p.stats.rx_bytes),
        )?;
        counter(
            e,
            "fwd_port_tx_packets",
            "Packets sent.",
            None,
            by_port(|p| p.stats.tx_packets),
        )?;
        counter(
            e,
            "fwd_port_tx",
            "Bytes sent.",
            Some(Unit::Bytes),
            by_port(|p| p.stats.tx_bytes),
        )?;
        counter(
            e,
            "fwd_port_tx_dropped_packets",
            "Packets the TX ring did not take (also counted as drops, reason tx_full).",
            None,
            by_port(|p| p.stats.tx_dropped),
        )?;
        counter(
            e,
            "fwd_port_rx_missed_packets",
            "Packets the NIC dropped for lack of RX descriptors (driver imissed).",
            None,
            by_port(|p| p.stats.rx_missed),
        )?;
        counter(
            e,
            "fwd_port_rx_errors",
            "Erroneous received packets (driver ierrors).",
            None,
            by_port(|p| p.stats.rx_errors),
        )?;
        counter(
            e,
            "fwd_port_rx_nombuf",
            "RX mbuf allocation failures (driver rx_nombuf).",
            None,
            by_port(|p| p.stats.rx_nombuf),
        )?;
        counter(
            e,
            "fwd_port_tx_errors",
            "Failed transmissions (driver oerrors).",
            None,
            by_port(|p| p.stats.tx_errors),
        )?;
        counter(
            e,
            "fwd_port_xstat",
            "The driver's extended statistics, by its own names (`fwdctl port xstats`).",
            None,
            ps.iter().flat_map(|p| {
                p.xstats.iter().map(move |(n, v)| {
                    (
                        vec![("port", p.stats.name.clone()), ("name", n.clone())],
                        *v,
                    )
                })
            }),
        )?;
        gauge(
            e,
            "fwd_port_up",
            "1 when the port's carrier is up (as the control lcore last read it).",
            None,
            by_port(|p| flag(p.carrier)),
        )?;
        gauge(
            e,
            "fwd_port_admin_up",
            "1 unless the port was set down (`fwdctl port set NAME down`).",
            None,
            by_port(|p| flag(p.admin_up)),
        )
    }

    fn lcores(&self, e: &mut DescriptorEncoder) -> fmt::Result {
        let ls = &self.0.lcores;
        let by_lcore = |f: fn(&crate::stats::LcoreTotals) -> u64| {
            ls.iter()
                .map(move |l| (vec![("lcore", l.lcore.to_string())], f(l)))
        };
        counter(
            e,
            "fwd_lcore_rx_packets",
            "Packets a worker lcore received.",
            None,
            by_lcore(|l| l.rx_packets),
        )?;
        counter(
            e,
            "fwd_lcore_tx_packets",
            "Packets a worker lcore sent.",
            None,
            by_lcore(|l| l.tx_packets),
        )?;
        counter(
            e,
            "fwd_lcore_polls",
            "Poll loop turns of a worker lcore.",
            None,
            by_lcore(|l| l.polls),
        )?;
        counter(
            e,
            "fwd_lcore_busy_polls",
            "Poll loop turns that received packets.",
            None,
            by_lcore(|l| l.busy_polls),
        )?;
        counter(
            e,
            "fwd_lcore_idle_sleeps",
            "Sleeps of a worker lcore between polls while idle (datapath.idle_sleep_us).",
            None,
            by_lcore(|l| l.idle_sleeps),
        )?;
        family(
            e,
            "fwd_lcore_idle_sleep",
            "Time a worker lcore slept between polls while idle.",
            Some(Unit::Seconds),
            MetricType::Counter,
            by_lcore(|l| l.idle_sleep_ns),
            |m, ns| m.encode_counter::<NoLabelSet, f64, u64>(&(ns as f64 / 1e9), None),
        )?;
        counter(
            e,
            "fwd_dropped_packets",
            "Packets dropped, by worker lcore and reason.",
            None,
            ls.iter().flat_map(|l| {
                DropReason::ALL.iter().map(move |&r| {
                    (
                        vec![("lcore", l.lcore.to_string()), ("reason", r.name().into())],
                        l.drops_by_reason[r as usize],
                    )
                })
            }),
        )?;
        counter(
            e,
            "fwd_events",
            "What a worker lcore did besides forwarding (replies, ICMP errors, punts, ...).",
            None,
            ls.iter().flat_map(|l| {
                Event::ALL.iter().map(move |&ev| {
                    (
                        vec![("lcore", l.lcore.to_string()), ("event", ev.name().into())],
                        l.events[ev as usize],
                    )
                })
            }),
        )
    }

    fn rules(&self, e: &mut DescriptorEncoder) -> fmt::Result {
        let s = &self.0;
        let by_rule = |f: fn(&super::sample::RuleSample) -> u64| {
            s.rules
                .iter()
                .map(move |r| (vec![("rule", r.id.to_string())], f(r)))
        };
        counter(
            e,
            "fwd_rule_packets",
            "Packets that matched a rule (the first metrics.max_rule_series rules in \
             evaluation order).",
            None,
            by_rule(|r| r.packets),
        )?;
        counter(
            e,
            "fwd_rule",
            "Bytes of the packets that matched a rule.",
            Some(Unit::Bytes),
            by_rule(|r| r.bytes),
        )?;
        gauge(
            e,
            "fwd_rules",
            "Rules in the classifier.",
            None,
            one(s.rules_total),
        )?;
        gauge(
            e,
            "fwd_rule_series_omitted",
            "Rules without series of their own (over metrics.max_rule_series).",
            None,
            one(s.rules_omitted),
        )
    }

    fn tables(&self, e: &mut DescriptorEncoder) -> fmt::Result {
        let s = &self.0;
        gauge(
            e,
            "fwd_routes",
            "Routes by table and family.",
            None,
            s.tables.iter().flat_map(|t| {
                [("ipv4", t.routes_v4), ("ipv6", t.routes_v6)].map(|(f, n)| {
                    (
                        vec![("table", t.table.to_string()), ("family", f.to_string())],
                        n,
                    )
                })
            }),
        )?;
        gauge(
            e,
            "fwd_nexthops",
            "Next hops (the operator's and the appliance's own).",
            None,
            one(s.nexthops),
        )?;
        gauge(e, "fwd_nexthop_groups", "ECMP groups.", None, one(s.groups))?;
        gauge(
            e,
            "fwd_fpm_routes",
            "Routes installed by zebra over FPM, in every table.",
            None,
            one(s.fpm_routes),
        )?;
        gauge(
            e,
            "fwd_routing_memory_bytes",
            "Memory the routing tables are charged (FIBs, RIBs, next hops, groups).",
            None,
            one(s.routing_bytes.0),
        )?;
        gauge(
            e,
            "fwd_routing_memory_limit_bytes",
            "The config's limits.routing_mb: changes past it are refused.",
            None,
            one(s.routing_bytes.1),
        )?;
        gauge(
            e,
            "fwd_routing_tables_limit",
            "The config's limits.tables: tables past it are refused.",
            None,
            one(s.routing_tables_limit),
        )
    }

    fn versions(&self, e: &mut DescriptorEncoder) -> fmt::Result {
        let q = &self.0.qsbr;
        gauge(
            e,
            "fwd_table_generation",
            "The generation of the last published table version.",
            None,
            one(q.generation),
        )?;
        gauge(
            e,
            "fwd_reclaim_pending",
            "Memory of retired versions waiting for every worker's quiescence.",
            Some(Unit::Bytes),
            one(q.pending_bytes as u64),
        )?;
        gauge(
            e,
            "fwd_reclaim_pending_objects",
            "Retired objects waiting for every worker's quiescence.",
            None,
            one(q.pending_objects as u64),
        )?;
        counter(
            e,
            "fwd_reclaimed",
            "Memory of retired versions freed.",
            Some(Unit::Bytes),
            one(q.reclaimed_bytes_total),
        )?;
        counter(
            e,
            "fwd_reclaimed_objects",
            "Retired objects freed.",
            None,
            one(q.reclaimed_objects_total),
        )?;
        counter(
            e,
            "fwd_worker_stalls",
            "Workers found stalled (each stall once).",
            None,
            one(q.stalls_detected),
        )?;
        counter(
            e,
            "fwd_backpressure_events",
            "Changes that found pending memory over control.max_pending_bytes and waited.",
            None,
            one(q.backpressure_events),
        )?;
        counter(
            e,
            "fwd_backpressure_overruns",
            "Backpressure waits that ended with memory still over the bound.",
            None,
            one(q.backpressure_overruns),
        )?;
        let by_worker = |f: fn(&crate::qsbr::ReaderStats) -> Option<u64>| {
            q.readers
                .iter()
                .filter_map(move |r| f(r).map(|v| (vec![("worker", r.name.clone())], v)))
        };
        gauge(
            e,
            "fwd_worker_online",
            "1 while a worker takes part in quiescence (0 when idle or stopping).",
            None,
            by_worker(|r| Some(flag(r.online))),
        )?;
        gauge(
            e,
            "fwd_worker_stalled",
            "1 while a worker holds reclamation back without progress.",
            None,
            by_worker(|r| Some(flag(r.stalled))),
        )?;
        gauge(
            e,
            "fwd_worker_reported_generation",
            "The generation a worker last reported (online workers only).",
            None,
            by_worker(|r| r.reported_generation),
        )?;
        let l = &q.publish_to_quiescent;
        let mut buckets: Vec<(f64, u64)> = LATENCY_BUCKETS_NS
            .iter()
            .zip(l.buckets.iter())
            .map(|(&b, &n)| (b as f64 / 1e9, n))
            .collect();
        buckets.push((f64::INFINITY, l.buckets[LATENCY_BUCKETS_NS.len()]));
        family(
            e,
            "fwd_publish_to_quiescent",
            "Time from publishing a table version until every online worker reported it.",
            Some(Unit::Seconds),
            MetricType::Histogram,
            [(Vec::new(), ())],
            |m, ()| {
                m.encode_histogram::<NoLabelSet>(
                    l.sum_ns as f64 / 1e9,
                    l.buckets.iter().sum(),
                    &buckets,
                    None,
                )
            },
        )
    }
}
