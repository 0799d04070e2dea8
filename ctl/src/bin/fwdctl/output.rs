//! Printing answers: aligned tables for people, the answer's JSON for
//! machines (`--json`).
//!
//! JSON mode prints exactly the protocol's payloads: the `ok` body of a
//! single answer; a JSON array of the `item` bodies for a dump (a valid
//! document, streamed); one `item` body per line for `watch` (endless).

use std::fmt::Write as _;
use std::io::{self, Write};

use ctl::wire::{
    Done, FpmStatus, Item, PortInfo, PortStats, PortXstats, RateSample, Request, Response,
    RouteLookup, Saved, StatsReport, StatusReport,
};

use crate::table::Table;

fn json_line<W: Write, T: serde::Serialize>(out: &mut W, v: &T) -> io::Result<()> {
    serde_json::to_writer(&mut *out, v).map_err(io::Error::from)?;
    out.write_all(b"\n")
}

// ------------------------------------------------------------ single answers

/// Prints an `ok` answer. `Done` is handled by the caller (its text depends
/// on the command).
pub fn response<W: Write>(mut out: W, r: &Response, json: bool) -> io::Result<()> {
    if json {
        json_line(&mut out, r)?;
        return out.flush();
    }
    match r {
        Response::Done(d) => done(&mut out, d, None)?,
        Response::RouteLookup(l) => route_lookup(&mut out, l)?,
        Response::Ports(p) => ports(&mut out, p)?,
        Response::PortStats(p) => port_stats(&mut out, p)?,
        Response::PortXstats(p) => port_xstats(&mut out, p)?,
        Response::Stats(s) => stats(&mut out, s)?,
        Response::Status(s) => status(&mut out, s)?,
        Response::Saved(s) => saved(&mut out, s)?,
        Response::Fpm(s) => fpm(&mut out, s)?,
    }
    out.flush()
}

/// A change's answer: silent like `ip`, except for rule ids the daemon
/// chose and for batches (`what` = the batch's name).
pub fn done<W: Write>(out: &mut W, d: &Done, what: Option<&str>) -> io::Result<()> {
    if let Some(name) = what {
        writeln!(
            out,
            "{name}: applied {} change{} in generation {}",
            d.changes,
            if d.changes == 1 { "" } else { "s" },
            d.generation
        )?;
    }
    match d.rule_ids.len() {
        0 => {}
        1 => writeln!(out, "rule {}", d.rule_ids[0])?,
        n if n <= 20 => {
            let ids: Vec<String> = d.rule_ids.iter().map(u32::to_string).collect();
            writeln!(out, "rules {}", ids.join(" "))?;
        }
        n => writeln!(
            out,
            "{n} rule ids assigned, {} to {} (--json lists them)",
            d.rule_ids[0],
            d.rule_ids[n - 1]
        )?,
    }
    Ok(())
}

fn route_lookup<W: Write>(out: &mut W, l: &RouteLookup) -> io::Result<()> {
    writeln!(out, "{} table {}: route {}", l.addr, l.table, l.route)?;
    let mut t = Table::new(
        &mut *out,
        &["  VIA", "DEV", "WEIGHT", "NHID", "LLADDR"],
        0b0_1100,
    );
    for p in &l.paths {
        t.row(vec![
            format!(
                "  {}",
                p.via
                    .map_or_else(|| "on-link".to_string(), |v| v.to_string())
            ),
            p.dev.clone(),
            p.weight.to_string(),
            opt(p.nhid),
            p.lladdr
                .map_or_else(|| "(unresolved)".to_string(), |m| m.to_string()),
        ])?;
    }
    t.finish()?;
    Ok(())
}

fn ports<W: Write>(out: &mut W, ps: &[PortInfo]) -> io::Result<()> {
    let mut t = Table::new(
        &mut *out,
        &[
            "IDX",
            "NAME",
            "MAC",
            "LINK",
            "SPEED",
            "MTU",
            "RXQ",
            "TXQ",
            "TABLE",
            "DRIVER",
            "ADDRESSES",
        ],
        0b001_1111_0001,
    );
    for p in ps {
        let addrs: Vec<String> = p.addresses.iter().map(ToString::to_string).collect();
        t.row(vec![
            p.index.to_string(),
            p.name.clone(),
            p.mac.to_string(),
            match (p.admin_down, p.link_up) {
                (true, _) => "admin-down",
                (false, true) => "up",
                (false, false) => "down",
            }
            .into(),
            if p.speed_mbps == 0 {
                "-".into()
            } else if p.speed_mbps % 1000 == 0 {
                format!("{}G", p.speed_mbps / 1000)
            } else {
                format!("{}M", p.speed_mbps)
            },
            p.mtu.to_string(),
            p.rx_queues.to_string(),
            p.tx_queues.to_string(),
            p.table.to_string(),
            p.driver.clone(),
            addrs.join(" "),
        ])?;
    }
    t.finish()?;
    Ok(())
}

const PORT_STATS: &[&str] = &[
    "PORT",
    "RX-PKTS",
    "RX-BYTES",
    "RX-MISSED",
    "RX-ERR",
    "RX-NOMBUF",
    "TX-PKTS",
    "TX-BYTES",
    "TX-ERR",
    "TX-DROP",
];

fn port_stats_rows<W: Write>(t: &mut Table<W>, ps: &[PortStats]) -> io::Result<()> {
    for p in ps {
        t.row(vec![
            p.name.clone(),
            p.rx_packets.to_string(),
            p.rx_bytes.to_string(),
            p.rx_missed.to_string(),
            p.rx_errors.to_string(),
            p.rx_nombuf.to_string(),
            p.tx_packets.to_string(),
            p.tx_bytes.to_string(),
            p.tx_errors.to_string(),
            p.tx_dropped.to_string(),
        ])?;
    }
    Ok(())
}

fn port_stats<W: Write>(out: &mut W, ps: &[PortStats]) -> io::Result<()> {
    let mut t = Table::new(&mut *out, PORT_STATS, !1);
    port_stats_rows(&mut t, ps)?;
    t.finish()?;
    Ok(())
}

fn port_xstats<W: Write>(out: &mut W, ps: &[PortXstats]) -> io::Result<()> {
    let mut t = Table::new(&mut *out, &["PORT", "NAME", "VALUE"], 0b100);
    for p in ps {
        for x in &p.xstats {
            t.row(vec![p.name.clone(), x.name.clone(), x.value.to_string()])?;
        }
    }
    t.finish()?;
    Ok(())
}

fn stats<W: Write>(out: &mut W, s: &StatsReport) -> io::Result<()> {
    writeln!(
        out,
        "uptime {}  rx {} pkts  tx {} pkts  dropped {} pkts",
        duration(s.uptime_ms),
        s.rx_packets,
        s.tx_packets,
        s.dropped
    )?;
    if let Some(r) = &s.rates {
        writeln!(
            out,
            "rates over {} ms: rx {}pps {}bit/s  tx {}pps {}bit/s  drop {}pps",
            r.interval_ms,
            si(r.rx_pps),
            si(r.rx_bps),
            si(r.tx_pps),
            si(r.tx_bps),
            si(r.drop_pps)
        )?;
    }
    writeln!(out)?;
    let mut t = Table::new(
        &mut *out,
        &[
            "LCORE", "POLLS", "BUSY%", "SLEPT-S", "RX-PKTS", "TX-PKTS", "DROPPED",
        ],
        !0,
    );
    for l in &s.lcores {
        let busy = if l.polls == 0 {
            0.0
        } else {
            l.busy_polls as f64 * 100.0 / l.polls as f64
        };
        t.row(vec![
            l.lcore.to_string(),
            l.polls.to_string(),
            format!("{busy:.1}"),
            format!("{:.1}", l.idle_sleep_ms as f64 / 1000.0),
            l.rx_packets.to_string(),
            l.tx_packets.to_string(),
            l.dropped.to_string(),
        ])?;
    }
    t.finish()?;
    if !s.ports.is_empty() {
        writeln!(out)?;
        let mut t = Table::new(&mut *out, PORT_STATS, !1);
        port_stats_rows(&mut t, &s.ports)?;
        t.finish()?;
    }
    writeln!(out)?;
    let mut t = Table::new(&mut *out, &["DROP-REASON", "PACKETS"], 0b10);
    for d in &s.drops {
        t.row(vec![d.reason.clone(), d.packets.to_string()])?;
    }
    t.finish()?;
    if !s.events.is_empty() {
        writeln!(out)?;
        let mut t = Table::new(&mut *out, &["EVENT", "COUNT"], 0b10);
        for e in &s.events {
            t.row(vec![e.event.clone(), e.count.to_string()])?;
        }
        t.finish()?;
    }
    Ok(())
}

fn fpm<W: Write>(out: &mut W, s: &FpmStatus) -> io::Result<()> {
    let Some(listen) = &s.listen else {
        return writeln!(out, "fpm: off (no fpm section in the config)");
    };
    let mut rows = vec![
        ("listen", listen.clone()),
        (
            "zebra",
            s.peer
                .clone()
                .unwrap_or_else(|| "not connected".to_string()),
        ),
        ("connects", s.connects.to_string()),
        (
            "routes",
            format!(
                "{} ({} installed, {} beneath operator routes)",
                s.routes,
                s.installed,
                s.routes.saturating_sub(s.installed)
            ),
        ),
        (
            "received",
            format!(
                "{} messages in {} batches: {} adds, {} deletes, {} ignored, {} refused",
                s.messages, s.batches, s.routes_added, s.routes_deleted, s.ignored, s.refused
            ),
        ),
        ("swept", s.swept.to_string()),
    ];
    if let Some(ms) = s.sweep_in_ms {
        rows.push((
            "replay",
            format!("{} stale routes, swept in {}", s.stale, duration(ms)),
        ));
    }
    if let Some(e) = &s.last_error {
        rows.push(("last error", e.clone()));
    }
    for (k, v) in rows {
        writeln!(out, "{k:<12}{v}")?;
    }
    Ok(())
}

fn status<W: Write>(out: &mut W, s: &StatusReport) -> io::Result<()> {
    let l = &s.publish_to_quiescent;
    let rows = [
        ("version", s.version.clone()),
        ("uptime", duration(s.uptime_ms)),
        ("generation", s.generation.to_string()),
        (
            "pending",
            format!("{} objects, {}", s.pending_objects, bytes(s.pending_bytes)),
        ),
        (
            "reclaimed",
            format!(
                "{} objects, {}",
                s.reclaimed_objects,
                bytes(s.reclaimed_bytes)
            ),
        ),
        ("stalls", s.stalls.to_string()),
        (
            "backpressure",
            format!(
                "{} events, {} overruns",
                s.backpressure_events, s.backpressure_overruns
            ),
        ),
        (
            "quiescence",
            format!(
                "p50 {}  p99 {}  p99.9 {}  max {}  ({} publishes)",
                nanos(l.p50_ns),
                nanos(l.p99_ns),
                nanos(l.p999_ns),
                nanos(l.max_ns),
                l.count
            ),
        ),
        ("clients", s.clients.to_string()),
    ];
    for (k, v) in rows {
        writeln!(out, "{k:<13}{v}")?;
    }
    if let Some(r) = &s.routing {
        writeln!(
            out,
            "{:<13}{} of {} tables, {} of {} (the config's limits)",
            "routing",
            r.tables,
            r.tables_limit,
            bytes(r.bytes),
            bytes(r.bytes_limit)
        )?;
    }
    writeln!(out)?;
    let mut t = Table::new(
        &mut *out,
        &[
            "WORKER",
            "ONLINE",
            "GENERATION",
            "BEHIND",
            "STALLED",
            "LAST-PROGRESS",
        ],
        0b10_1100,
    );
    for w in &s.workers {
        t.row(vec![
            w.name.clone(),
            yes(w.online),
            opt(w.reported_generation),
            w.reported_generation.map_or_else(
                || "-".into(),
                |g| s.generation.saturating_sub(g).to_string(),
            ),
            yes(w.stalled),
            format!("{} ms", w.last_progress_ms),
        ])?;
    }
    t.finish()?;
    Ok(())
}

fn saved<W: Write>(out: &mut W, s: &Saved) -> io::Result<()> {
    writeln!(
        out,
        "saved {} lines of generation {} to {}",
        s.lines, s.generation, s.path
    )
}

// ------------------------------------------------------------ streams

/// Prints a stream as it arrives.
pub enum StreamOut<W: Write> {
    /// A JSON array of item bodies.
    JsonArray {
        out: W,
        first: bool,
    },
    /// One JSON item body per line, flushed (watch).
    JsonLines {
        out: W,
    },
    Table(Table<W>),
    Watch {
        out: W,
        rows: u64,
    },
    /// One line per item as it comes, flushed (trace).
    Lines {
        out: W,
    },
}

impl<W: Write> StreamOut<W> {
    pub fn new(out: W, req: &Request, json: bool) -> Self {
        let watch = matches!(req, Request::Watch { .. });
        if matches!(req, Request::Trace { .. }) {
            return if json {
                StreamOut::JsonLines { out }
            } else {
                StreamOut::Lines { out }
            };
        }
        match (json, watch) {
            (true, true) => StreamOut::JsonLines { out },
            (true, false) => StreamOut::JsonArray { out, first: true },
            (false, true) => StreamOut::Watch { out, rows: 0 },
            (false, false) => {
                let (headers, right): (&'static [&'static str], u64) = match req {
                    Request::RuleShow { .. } => (&["ID", "PRIO", "MATCH", "ACTIONS"], 0b11),
                    Request::RuleCounters { .. } => {
                        (&["ID", "PRIO", "PACKETS", "BYTES", "IDLE"], 0b1_1111)
                    }
                    Request::NexthopShow { .. } => {
                        (&["ID", "VIA", "DEV", "REFS", "LLADDR"], 0b1001)
                    }
                    Request::GroupShow { .. } => (&["ID", "REFS", "MEMBERS"], 0b11),
                    Request::NeighShow { .. } => (
                        &["ADDRESS", "LLADDR", "DEV", "STATE", "AGE", "PROBES", "HELD"],
                        0b111_0000,
                    ),
                    Request::AddressShow { .. } => (&["DEV", "ADDRESS"], 0),
                    _ => (&["TABLE", "PREFIX", "TARGET"], 0b1),
                };
                StreamOut::Table(Table::new(out, headers, right))
            }
        }
    }

    pub fn item(&mut self, item: &Item) -> io::Result<()> {
        match self {
            StreamOut::JsonArray { out, first } => {
                out.write_all(if *first { b"[\n" } else { b",\n" })?;
                *first = false;
                serde_json::to_writer(&mut *out, item).map_err(io::Error::from)
            }
            StreamOut::JsonLines { out } => {
                json_line(out, item)?;
                out.flush()
            }
            StreamOut::Table(t) => t.row(row(item)),
            StreamOut::Lines { out } => {
                match item {
                    Item::Trace(r) => writeln!(out, "{r}")?,
                    Item::TraceLost(l) => writeln!(
                        out,
                        "({} records lost: the workers' trace buffers were full)",
                        l.records
                    )?,
                    _ => {}
                }
                out.flush()
            }
            StreamOut::Watch { out, rows } => {
                match item {
                    Item::Rates(r) => {
                        watch_row(out, r, *rows)?;
                        *rows += 1;
                    }
                    Item::Event(e) => {
                        writeln!(out, "{:>10}  {}", duration(e.uptime_ms), e.message)?
                    }
                    _ => {}
                }
                out.flush()
            }
        }
    }

    pub fn finish(self) -> io::Result<()> {
        match self {
            StreamOut::JsonArray { mut out, first } => {
                out.write_all(if first { b"[]\n" } else { b"\n]\n" })?;
                out.flush()
            }
            StreamOut::JsonLines { mut out }
            | StreamOut::Watch { mut out, .. }
            | StreamOut::Lines { mut out } => out.flush(),
            StreamOut::Table(t) => t.finish().map(drop),
        }
    }
}

fn row(item: &Item) -> Vec<String> {
    match item {
        Item::Route(r) => vec![
            r.table.to_string(),
            r.prefix.to_string(),
            if r.linkdown {
                format!("{} linkdown", r.target)
            } else {
                r.target.to_string()
            },
        ],
        Item::Rule(r) => vec![
            opt(r.id),
            r.priority.to_string(),
            r.matches.to_string(),
            // As the command line prints it: a rule without a verdict ends
            // in `continue`, so it cannot be read as ending evaluation.
            r.actions
                .iter()
                .map(ToString::to_string)
                .chain(r.continues().then(|| "continue".to_string()))
                .collect::<Vec<_>>()
                .join(" "),
        ],
        Item::RuleCounters(c) => vec![
            c.id.to_string(),
            c.priority.to_string(),
            c.packets.to_string(),
            c.bytes.to_string(),
            c.idle_ms.map_or_else(|| "never".into(), duration),
        ],
        Item::Nexthop(n) => vec![
            n.id.to_string(),
            n.via.map_or_else(|| "on-link".into(), |v| v.to_string()),
            n.dev.clone(),
            n.refs.to_string(),
            n.lladdr
                .map_or_else(|| "(unresolved)".into(), |m| m.to_string()),
        ],
        Item::Group(g) => vec![
            g.id.to_string(),
            g.refs.to_string(),
            g.members
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(" "),
        ],
        Item::Neigh(n) => vec![
            n.addr.to_string(),
            n.lladdr.map_or_else(|| "-".into(), |m| m.to_string()),
            n.dev.clone(),
            n.state.clone(),
            duration(n.age_ms),
            n.probes.to_string(),
            n.held.to_string(),
        ],
        Item::Address(a) => vec![a.dev.clone(), a.addr.to_string()],
        Item::Event(e) => vec![duration(e.uptime_ms), e.message.clone()],
        Item::Rates(r) => vec![
            duration(r.uptime_ms),
            si(r.rx_pps),
            si(r.tx_pps),
            si(r.drop_pps),
        ],
        Item::Trace(r) => vec![r.to_string()],
        Item::TraceLost(l) => vec![format!("{} records lost", l.records)],
        Item::Pcap(c) => vec![format!("{} pcap bytes", c.hex.len() / 2)],
        Item::CaptureSummary(c) => vec![format!(
            "{} captured, {} ring full, {} rate limited",
            c.captured, c.ring_full, c.rate_limited
        )],
    }
}

fn watch_row<W: Write>(out: &mut W, r: &RateSample, n: u64) -> io::Result<()> {
    if n.is_multiple_of(20) {
        writeln!(
            out,
            "{:>10}  {:>8}  {:>8}  {:>8}  {:>9}  {:>9}",
            "UPTIME", "RX-PPS", "TX-PPS", "DROP-PPS", "RX-BIT/S", "TX-BIT/S"
        )?;
    }
    writeln!(
        out,
        "{:>10}  {:>8}  {:>8}  {:>8}  {:>9}  {:>9}",
        duration(r.uptime_ms),
        si(r.rx_pps),
        si(r.tx_pps),
        si(r.drop_pps),
        si(r.rx_bps),
        si(r.tx_bps)
    )
}

// ------------------------------------------------------------ units

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "-".into(), |v| v.to_string())
}

fn yes(b: bool) -> String {
    if b { "yes" } else { "no" }.into()
}

/// `1.23M`, `950`, `12.0G`.
pub fn si(v: u64) -> String {
    const UNITS: [(u64, &str); 4] = [
        (1_000_000_000_000, "T"),
        (1_000_000_000, "G"),
        (1_000_000, "M"),
        (1_000, "k"),
    ];
    for (div, u) in UNITS {
        if v >= div {
            return format!("{:.2}{u}", v as f64 / div as f64);
        }
    }
    v.to_string()
}

/// `4.0 KiB`.
fn bytes(v: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut x = v as f64;
    let mut u = 0;
    while x >= 1024.0 && u + 1 < UNITS.len() {
        x /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{v} B")
    } else {
        format!("{x:.1} {}", UNITS[u])
    }
}

/// `850ns`, `12.3us`, `4.1ms`, `1.20s`.
fn nanos(ns: u64) -> String {
    match ns {
        0..=999 => format!("{ns}ns"),
        1_000..=999_999 => format!("{:.1}us", ns as f64 / 1e3),
        1_000_000..=999_999_999 => format!("{:.1}ms", ns as f64 / 1e6),
        _ => format!("{:.2}s", ns as f64 / 1e9),
    }
}

/// `850ms`, `42s`, `3m07s`, `2h03m`, `5d02h`.
pub fn duration(ms: u64) -> String {
    let s = ms / 1000;
    let mut o = String::new();
    let _ = match s {
        0 => write!(o, "{ms}ms"),
        1..=59 => write!(o, "{s}s"),
        60..=3599 => write!(o, "{}m{:02}s", s / 60, s % 60),
        3600..=86_399 => write!(o, "{}h{:02}m", s / 3600, s % 3600 / 60),
        _ => write!(o, "{}d{:02}h", s / 86_400, s % 86_400 / 3600),
    };
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctl::wire::{Done, Item, Request, Route, RouteTarget};

    #[test]
    fn units() {
        assert_eq!(si(950), "950");
        assert_eq!(si(1_234_567), "1.23M");
        assert_eq!(bytes(4096), "4.0 KiB");
        assert_eq!(bytes(12), "12 B");
        assert_eq!(nanos(12_345), "12.3us");
        assert_eq!(duration(850), "850ms");
        assert_eq!(duration(187_000), "3m07s");
        assert_eq!(duration(2 * 86_400_000 + 3_600_000), "2d01h");
    }

    #[test]
    fn done_text() {
        let mut out = Vec::new();
        let d = Done {
            generation: 7,
            changes: 3,
            rule_ids: vec![4],
        };
        done(&mut out, &d, Some("routes.txt")).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "routes.txt: applied 3 changes in generation 7\nrule 4\n"
        );
    }

    #[test]
    fn json_stream_is_one_array() {
        let req = Request::RouteShow(ctl::wire::RouteFilter {
            table: None,
            family: None,
            within: None,
            proto: None,
        });
        let item = Item::Route(Route {
            linkdown: false,
            proto: None,
            prefix: "10.0.0.0/8".parse().unwrap(),
            table: 0,
            target: RouteTarget::Blackhole,
        });
        let mut out = Vec::new();
        let mut s = StreamOut::new(&mut out, &req, true);
        s.item(&item).unwrap();
        s.item(&item).unwrap();
        s.finish().unwrap();
        let text = String::from_utf8(out).unwrap();
        let v: Vec<Item> = serde_json::from_str(&text).unwrap();
        assert_eq!(v, vec![item.clone(), item]);
        let mut out = Vec::new();
        StreamOut::new(&mut out, &req, true).finish().unwrap();
        assert_eq!(out, b"[]\n");
    }
}
