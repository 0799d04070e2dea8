//! The collector's output read back with the strict reader: names, types,
//! units, `_total`, labels and values; and a gather from a real control
//! lcore (the rule series bound).

use std::sync::Arc;
use std::time::Duration;

use ctl::wire::{self, Change, RouteTarget};

use super::exposition::{parse, Exposition};
use super::sample::{gather, PortSample, RuleSample, Sample, Sources, TableSample};
use super::{render, Format};
use crate::acl;
use crate::control::{link, ControlLcore, ControlState};
use crate::qsbr::{self, LatencyStats, QsbrConfig, QsbrStats, ReaderStats};
use crate::stats::{DropReason, Event, LcoreTotals, Stats};
use crate::tables::{PortInfo, Tables};

fn port(name: &str, rx: u64) -> PortSample {
    PortSample {
        stats: wire::PortStats {
            name: name.into(),
            rx_packets: rx,
            rx_bytes: rx * 64,
            rx_missed: 1,
            rx_errors: 2,
            rx_nombuf: 3,
            tx_packets: rx / 2,
            tx_bytes: rx * 32,
            tx_errors: 4,
            tx_dropped: 5,
        },
        carrier: name != "down",
        admin_up: true,
        xstats: vec![
            ("rx_good_packets".into(), rx),
            ("weird \"name\"\\x".into(), 7),
        ],
    }
}

fn sample() -> Sample {
    let mut drops = [0; DropReason::COUNT];
    drops[DropReason::NoRoute as usize] = 11;
    let mut events = [0; Event::COUNT];
    events[Event::Punted as usize] = 3;
    let mut buckets = [0; qsbr::LATENCY_BUCKETS];
    buckets[0] = 2; // <= 10 us
    buckets[6] = 1; // <= 1 ms
    buckets[qsbr::LATENCY_BUCKETS - 1] = 1; // above 10 s
    Sample {
        version: "fwd 0.1.0".into(),
        ports: vec![port("wan", 1000), port("down", 0)],
        lcores: vec![
            LcoreTotals {
                lcore: 1,
                polls: 100,
                busy_polls: 10,
                idle_sleeps: 4,
                idle_sleep_ns: 1_500_000_000,
                rx_packets: 1000,
                tx_packets: 500,
                replies: 0,
                drops: 11,
                drops_by_reason: drops,
                events,
            },
            LcoreTotals {
                lcore: 2,
                ..LcoreTotals::default()
            },
        ],
        control_events: vec![("neigh_probes", 4), ("host_to_kernel", 9)],
        neigh_held: 2,
        neighbours: vec![("wan".into(), "reachable", 3), ("wan".into(), "failed", 0)],
        rules: vec![
            RuleSample {
                id: 7,
                packets: 70,
                bytes: 7000,
            },
            RuleSample {
                id: 9,
                packets: 0,
                bytes: 0,
            },
        ],
        rules_total: 5,
        rules_omitted: 3,
        tables: vec![
            TableSample {
                table: 0,
                routes_v4: 12,
                routes_v6: 3,
            },
            TableSample {
                table: 5,
                routes_v4: 1,
                routes_v6: 0,
            },
        ],
        nexthops: 4,
        groups: 1,
        fpm_routes: 0,
        routing_bytes: (3 << 20, 2048 << 20),
        routing_tables_limit: 1024,
        qsbr: QsbrStats {
            generation: 42,
            readers: vec![
                ReaderStats {
                    name: "worker0@lcore1".into(),
                    online: true,
                    reported_generation: Some(41),
                    stalled: false,
                    last_progress_age: Duration::ZERO,
                },
                ReaderStats {
                    name: "worker1@lcore2".into(),
                    online: false,
                    reported_generation: None,
                    stalled: false,
                    last_progress_age: Duration::ZERO,
                },
            ],
            pending_objects: 2,
            pending_bytes: 4096,
            backpressure_events: 0,
            backpressure_overruns: 0,
            stalls_detected: 1,
            publish_to_quiescent: LatencyStats {
                count: 4,
                buckets,
                sum_ns: 3_000_000,
                ..LatencyStats::default()
            },
            reclaimed_objects_total: 10,
            reclaimed_bytes_total: 1 << 20,
        },
        mempool: Some((300, 16383)),
    }
}

fn scraped(s: Sample) -> Exposition {
    let text = render(s, Format::OpenMetrics).unwrap();
    parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

#[test]
fn every_family_is_fwd_prefixed_typed_and_counters_end_in_total() {
    let text = render(sample(), Format::OpenMetrics).unwrap();
    let ex = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert!(ex.families.len() > 30, "{}", ex.families.len());
    for f in &ex.families {
        assert!(f.name.starts_with("fwd_"), "{}", f.name);
        assert!(
            f.help.as_deref().is_some_and(|h| !h.is_empty()),
            "{} has help",
            f.name
        );
        assert!(
            ["counter", "gauge", "histogram", "info"].contains(&f.kind.as_str()),
            "{}: {}",
            f.name,
            f.kind
        );
        // Units are the base ones, and part of the name.
        if let Some(u) = &f.unit {
            assert!(["bytes", "seconds"].contains(&u.as_str()), "{}", f.name);
        }
        assert!(
            !f.name.ends_with("_ms") && !f.name.ends_with("_ns") && !f.name.ends_with("_kb"),
            "{}",
            f.name
        );
    }
    for p in &ex.points {
        let f = ex
            .families
            .iter()
            .find(|f| p.name.starts_with(f.name.as_str()))
            .unwrap();
        if f.kind == "counter" {
            assert!(p.name.ends_with("_total"), "{}", p.name);
        }
    }
    // The kinds of a few by name.
    for (name, kind, unit) in [
        ("fwd_port_rx_bytes", "counter", Some("bytes")),
        ("fwd_port_rx_packets", "counter", None),
        ("fwd_dropped_packets", "counter", None),
        ("fwd_table_generation", "gauge", None),
        ("fwd_reclaim_pending_bytes", "gauge", Some("bytes")),
        (
            "fwd_publish_to_quiescent_seconds",
            "histogram",
            Some("seconds"),
        ),
        ("fwd_build", "info", None),
    ] {
        let f = ex
            .family(name)
            .unwrap_or_else(|| panic!("{name} missing\n{text}"));
        assert_eq!((f.kind.as_str(), f.unit.as_deref()), (kind, unit), "{name}");
    }
}

#[test]
fn values_and_labels_are_the_samples() {
    let ex = scraped(sample());
    let g = |n: &str, l: &[(&str, &str)]| {
        ex.get(n, l)
            .unwrap_or_else(|| panic!("{n}{l:?} missing: {:?}", ex.points))
    };
    assert_eq!(g("fwd_port_rx_packets_total", &[("port", "wan")]), 1000.0);
    assert_eq!(g("fwd_port_rx_bytes_total", &[("port", "wan")]), 64000.0);
    assert_eq!(g("fwd_port_tx_packets_total", &[("port", "wan")]), 500.0);
    assert_eq!(g("fwd_port_tx_bytes_total", &[("port", "wan")]), 32000.0);
    assert_eq!(
        g("fwd_port_rx_missed_packets_total", &[("port", "wan")]),
        1.0
    );
    assert_eq!(
        g("fwd_port_tx_dropped_packets_total", &[("port", "wan")]),
        5.0
    );
    assert_eq!(g("fwd_port_up", &[("port", "wan")]), 1.0);
    assert_eq!(g("fwd_port_up", &[("port", "down")]), 0.0);
    assert_eq!(
        g(
            "fwd_port_xstat_total",
            &[("port", "wan"), ("name", "rx_good_packets")]
        ),
        1000.0
    );
    // A driver's odd name survives escaping.
    assert_eq!(
        g(
            "fwd_port_xstat_total",
            &[("port", "down"), ("name", "weird \"name\"\\x")]
        ),
        7.0
    );
    // Every reason of every lcore, zeros included: a bounded, stable set.
    assert_eq!(
        ex.select("fwd_dropped_packets_total", &[]).count(),
        2 * DropReason::COUNT
    );
    assert_eq!(
        g(
            "fwd_dropped_packets_total",
            &[("lcore", "1"), ("reason", "no_route")]
        ),
        11.0
    );
    assert_eq!(
        g(
            "fwd_dropped_packets_total",
            &[("lcore", "2"), ("reason", "no_route")]
        ),
        0.0
    );
    assert_eq!(
        g("fwd_events_total", &[("lcore", "1"), ("event", "punted")]),
        3.0
    );
    assert_eq!(g("fwd_lcore_polls_total", &[("lcore", "1")]), 100.0);
    assert_eq!(g("fwd_lcore_idle_sleeps_total", &[("lcore", "1")]), 4.0);
    assert_eq!(
        g("fwd_lcore_idle_sleep_seconds_total", &[("lcore", "1")]),
        1.5
    );
    assert_eq!(
        g("fwd_control_events_total", &[("event", "host_to_kernel")]),
        9.0
    );
    assert_eq!(g("fwd_rule_packets_total", &[("rule", "7")]), 70.0);
    assert_eq!(g("fwd_rule_bytes_total", &[("rule", "7")]), 7000.0);
    assert_eq!(ex.select("fwd_rule_packets_total", &[]).count(), 2);
    assert_eq!(g("fwd_rules", &[]), 5.0);
    assert_eq!(g("fwd_rule_series_omitted", &[]), 3.0);
    assert_eq!(g("fwd_routes", &[("table", "0"), ("family", "ipv4")]), 12.0);
    assert_eq!(g("fwd_routes", &[("table", "5"), ("family", "ipv6")]), 0.0);
    assert_eq!(g("fwd_routing_memory_bytes", &[]), f64::from(3 << 20));
    assert_eq!(
        g("fwd_routing_memory_limit_bytes", &[]),
        f64::from(2048u32 << 20)
    );
    assert_eq!(g("fwd_routing_tables_limit", &[]), 1024.0);
    assert_eq!(g("fwd_table_generation", &[]), 42.0);
    assert_eq!(g("fwd_reclaim_pending_bytes", &[]), 4096.0);
    assert_eq!(g("fwd_reclaimed_bytes_total", &[]), 1048576.0);
    assert_eq!(g("fwd_worker_stalls_total", &[]), 1.0);
    assert_eq!(
        g(
            "fwd_worker_reported_generation",
            &[("worker", "worker0@lcore1")]
        ),
        41.0
    );
    assert_eq!(
        ex.get(
            "fwd_worker_reported_generation",
            &[("worker", "worker1@lcore2")]
        ),
        None,
        "an offline worker reports no generation"
    );
    assert_eq!(g("fwd_worker_online", &[("worker", "worker1@lcore2")]), 0.0);
    assert_eq!(
        g("fwd_neighbours", &[("port", "wan"), ("state", "reachable")]),
        3.0
    );
    assert_eq!(g("fwd_neighbour_held_packets", &[]), 2.0);
    assert_eq!(g("fwd_mempool_mbufs_in_use", &[]), 300.0);
    assert_eq!(g("fwd_mempool_mbufs", &[]), 16383.0);
    assert_eq!(g("fwd_build_info", &[("version", "fwd 0.1.0")]), 1.0);
    // The histogram: seconds, cumulative, +Inf = count, sum in seconds.
    let h = "fwd_publish_to_quiescent_seconds";
    assert_eq!(g(&format!("{h}_count"), &[]), 4.0);
    assert_eq!(g(&format!("{h}_sum"), &[]), 0.003);
    assert_eq!(g(&format!("{h}_bucket"), &[("le", "0.00001")]), 2.0);
    assert_eq!(g(&format!("{h}_bucket"), &[("le", "0.001")]), 3.0);
    assert_eq!(g(&format!("{h}_bucket"), &[("le", "10.0")]), 3.0);
    assert_eq!(g(&format!("{h}_bucket"), &[("le", "+Inf")]), 4.0);
    assert_eq!(
        ex.select(&format!("{h}_bucket"), &[]).count(),
        qsbr::LATENCY_BUCKETS
    );
}

#[test]
fn the_older_text_format_is_served_on_request() {
    let text = render(sample(), Format::PrometheusText).unwrap();
    assert!(!text.contains("# EOF"), "{text}");
    assert!(
        text.contains("# TYPE fwd_port_rx_packets_total counter\n"),
        "{text}"
    );
    assert!(
        text.contains("fwd_port_rx_packets_total{port=\"wan\"} 1000\n"),
        "{text}"
    );
    assert!(Format::PrometheusText
        .content_type()
        .starts_with("text/plain; version=0.0.4"));
}

/// A control lcore with `n` rules and a route, and the sources on it.
fn live(n: u32, max_rule_series: usize) -> (ControlLcore, qsbr::Reader<Tables>, Sources) {
    let cfg = acl::Config {
        capacity: 1024,
        ..acl::Config::default()
    };
    let acl_w = acl::ClassifierWriter::new(cfg);
    let (counters, _) = acl::CounterSet::new(1, cfg.slots() as usize);
    let ports = vec![PortInfo::new("p0", [2, 0, 0, 0, 0, 1], 0)];
    let mut writer = qsbr::domain(
        Tables::empty(
            ports,
            acl_w.current().clone(),
            crate::tables::Limits::default(),
        ),
        QsbrConfig::default(),
    );
    let reader = writer.register_reader("worker0@lcore1");
    let st = ControlState {
        writer,
        acl: acl_w,
        counters: Arc::clone(&counters),
        neigh: None,
        links: None,
        events: link::EventLog::new(),
        fpm: None,
    };
    let c = ControlLcore::start(st, None).unwrap();
    let mut changes: Vec<Change> = (1..=n)
        .map(|id| {
            Change::RuleAdd(Box::new(wire::Rule {
                id: Some(id),
                // Evaluation order is priority first: rule n comes first.
                priority: n + 1 - id,
                matches: wire::RuleMatch::default(),
                actions: vec![wire::Action::Drop],
            }))
        })
        .collect();
    changes.push(Change::RouteAdd(wire::Route {
        linkdown: false,
        proto: None,
        prefix: "10.9.0.0/16".parse().unwrap(),
        table: 0,
        target: RouteTarget::Blackhole,
    }));
    c.handle().apply(changes).unwrap();
    let src = Sources {
        control: c.handle(),
        stats: Arc::new(Stats::new(&[1], 0)),
        rule_counters: counters,
        ports: Vec::new(),
        pool: None,
        host: None,
        fpm: Some(Arc::new(std::sync::Mutex::new(ctl::wire::FpmStatus {
            routes_added: 7,
            refused: 2,
            ..Default::default()
        }))),
        max_rule_series,
        version: "fwd test".into(),
    };
    (c, reader, src)
}

#[test]
fn rule_series_are_bounded_and_the_rest_counted() {
    let (c, reader, src) = live(5, 3);
    let s = gather(&src).unwrap();
    assert_eq!(s.rules_total, 5);
    assert_eq!(s.rules_omitted, 2);
    // The first three in evaluation order (lowest priority value first).
    assert_eq!(
        s.rules.iter().map(|r| r.id).collect::<Vec<_>>(),
        vec![5, 4, 3]
    );
    assert_eq!(
        s.tables,
        vec![TableSample {
            table: 0,
            routes_v4: 1,
            routes_v6: 0
        }]
    );
    assert_eq!(s.qsbr.generation, src.control.status().unwrap().generation);
    let ex = scraped(s);
    assert_eq!(ex.select("fwd_rule_packets_total", &[]).count(), 3);
    assert_eq!(ex.get("fwd_rule_series_omitted", &[]), Some(2.0));
    // No port, no pool: their families are empty or absent, never wrong.
    assert_eq!(ex.select("fwd_port_rx_packets_total", &[]).count(), 0);
    assert!(ex.family("fwd_mempool_mbufs").is_none());
    // Neighbour states: every state of every port, zero here.
    assert_eq!(ex.select("fwd_neighbours", &[("port", "p0")]).count(), 6);
    // The FPM session's counters.
    let event = |e: &str| ex.get("fwd_control_events_total", &[("event", e)]);
    assert_eq!(event("fpm_routes_added"), Some(7.0));
    assert_eq!(event("fpm_routes_refused"), Some(2.0));
    drop(src);
    drop(reader);
    c.stop();

    let (c, reader, src) = live(5, 0);
    let ex = scraped(gather(&src).unwrap());
    assert_eq!(ex.select("fwd_rule_packets_total", &[]).count(), 0);
    assert_eq!(ex.get("fwd_rule_series_omitted", &[]), Some(5.0));
    drop(src);
    drop(reader);
    c.stop();
}
