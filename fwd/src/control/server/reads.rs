//! Read requests: dumps, lookups, statistics, status and `watch`. Each is
//! served on the session's thread from the last published version of the
//! tables (a clone of its root): a 900k-route dump or a status never waits
//! for the writer, and never holds it.

use std::io::{self, BufWriter, Write};
use std::net::IpAddr;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ctl::wire::{
    self, Address, DropCount, ErrorBody, ErrorKind, GroupEntry, GroupMember, Item, Latency,
    LcoreStats, Mac, NeighEntry, NexthopEntry, Path as WirePath, PortRates, RateSample, Request,
    Response, ResponseLine, RouteLookup, RoutingUsage, StatsReport, StatusReport, WorkerStatus,
};

use super::session::send;
use super::{PortMeta, ServerContext, Shutdown};
use crate::acl;
use crate::control::ports::port_stats;
use crate::control::{route_to_wire, NeighReport, RouteSelector, Snapshot};
use crate::dpdk::port;
use crate::route::{self, Prefix, Target};
use crate::stats::{DropReason, StatsSnapshot};
use crate::tables::Tables;

use super::low_priority;

type Writer = BufWriter<UnixStream>;

/// Answers a read request that is not a session matter.
pub(super) fn answer(w: &mut Writer, ctx: &ServerContext, id: u64, req: Request) -> io::Result<()> {
    let ok = |w: &mut Writer, r: Result<Response, ErrorBody>| match r {
        Ok(r) => send(w, &ResponseLine::ok(id, r)),
        Err(e) => send(w, &ResponseLine::error(id, e)),
    };
    match req {
        Request::RouteGet { addr, table } => ok(w, route_get(ctx, addr, table)),
        Request::PortShow { port } => ok(w, port_show(ctx, port.as_deref())),
        Request::PortStats { port } => ok(w, port_stats_answer(ctx, port.as_deref())),
        Request::PortXstats { port } => ok(
            w,
            select_ports(ctx, port.as_deref()).map(|ps| {
                Response::PortXstats(
                    ps.into_iter()
                        .map(|p| wire::PortXstats {
                            name: p.name.clone(),
                            xstats: port::xstats(p.dpdk_id)
                                .into_iter()
                                .map(|(name, value)| wire::Xstat { name, value })
                                .collect(),
                        })
                        .collect(),
                )
            }),
        ),
        Request::Stats {} => ok(w, Ok(Response::Stats(stats_report(ctx, None)))),
        Request::FpmShow {} => ok(
            w,
            Ok(Response::Fpm(
                ctx.fpm
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .clone(),
            )),
        ),
        stream => {
            // What sits behind a lock the control lcore also takes (the
            // board's tables and neighbour report) is read here, at the
            // session's priority: a thread under SCHED_IDLE must never hold
            // what the writer waits for. The dump thread formats and writes.
            let input = match dump_input(ctx, &stream) {
                Ok(i) => i,
                Err(e) => return send(w, &ResponseLine::error(id, e)),
            };
            low_priority::run(ctx.dump_cpu, || dump(w, ctx, id, &stream, &input))
        }
    }
}

/// What a dump reads from the control lcore's board.
struct DumpInput {
    tables: Snapshot,
    /// For `neigh show` only.
    neigh: Option<NeighReport>,
}

fn dump_input(ctx: &ServerContext, req: &Request) -> Result<DumpInput, ErrorBody> {
    let (_, tables) = snapshot(ctx)?;
    let neigh = match req {
        Request::NeighShow { .. } => Some(ctx.control.neighbours()?),
        _ => None,
    };
    Ok(DumpInput { tables, neigh })
}

pub(super) fn neigh_flush(ctx: &ServerContext, dev: Option<&str>) -> Result<Response, ErrorBody> {
    let port = match dev {
        None => None,
        Some(d) => {
            let (_, t) = snapshot(ctx)?;
            let i = t.port_index(d).ok_or_else(|| {
                ErrorBody::new(ErrorKind::NotFound, format!("no port named {d:?}"))
            })?;
            Some(i as u16)
        }
    };
    ctx.control.neigh_flush(port).map(Response::Done)
}

fn snapshot(ctx: &ServerContext) -> Result<(u64, Snapshot), ErrorBody> {
    ctx.control.snapshot()
}

/// Streams a dump from one snapshot.
fn dump(
    w: &mut Writer,
    ctx: &ServerContext,
    id: u64,
    req: &Request,
    input: &DumpInput,
) -> io::Result<()> {
    let t = &*input.tables;
    let mut count = 0u64;
    let mut item = |w: &mut Writer, i: Item| -> io::Result<()> {
        count += 1;
        send(w, &ResponseLine::item(id, i))
    };
    match req {
        Request::RouteShow(filter) => {
            let sel = match RouteSelector::new(filter) {
                Ok(s) => s,
                Err(e) => return send(w, &ResponseLine::error(id, e)),
            };
            for (vrf, p, e) in sel.routes(&t.routing) {
                item(w, Item::Route(route_to_wire(t, vrf, p, e)))?;
            }
        }
        Request::RuleShow { id: want } | Request::RuleCounters { id: want } => {
            let mut entries: Vec<&Arc<acl::RuleEntry>> = t.acl.entries().collect();
            entries.sort_by_key(|e| e.rule().order());
            let now = (ctx.tick_ms)();
            for e in entries {
                if want.is_some_and(|x| x != e.id()) {
                    continue;
                }
                let i = if matches!(req, Request::RuleShow { .. }) {
                    Item::Rule(crate::control::rule_to_wire(t, e.rule()))
                } else {
                    let s = ctx.rule_counters.read(e.slot());
                    Item::RuleCounters(wire::RuleCounters {
                        id: e.id(),
                        priority: e.rule().priority,
                        packets: s.packets,
                        bytes: s.bytes,
                        idle_ms: (s.last_used != 0).then(|| now.saturating_sub(s.last_used)),
                    })
                };
                item(w, i)?;
            }
        }
        Request::NexthopShow { id: want } => {
            for (nid, nh) in t.routing.nexthops() {
                if want.is_some_and(|x| x != nid) {
                    continue;
                }
                item(
                    w,
                    Item::Nexthop(NexthopEntry {
                        id: nid,
                        via: nh.gateway,
                        dev: port_name(t, nh.port),
                        refs: u64::from(t.routing.nexthop_refs(nid))
                            + t.mgmt.rule_nexthops.count(nid) as u64,
                        lladdr: nh.mac.map(Mac),
                    }),
                )?;
            }
        }
        Request::GroupShow { id: want } => {
            for (gid, g) in t.routing.groups() {
                if want.is_some_and(|x| x != gid) {
                    continue;
                }
                item(
                    w,
                    Item::Group(GroupEntry {
                        id: gid,
                        members: g
                            .members()
                            .iter()
                            .map(|&(id, weight)| GroupMember { id, weight })
                            .collect(),
                        refs: u64::from(t.routing.group_refs(gid)),
                    }),
                )?;
            }
        }
        Request::NeighShow { dev } => {
            let entries = input.neigh.iter().flat_map(|r| &r.entries);
            for e in entries {
                let name = port_name(t, e.port);
                if dev.as_ref().is_some_and(|d| *d != name) {
                    continue;
                }
                item(
                    w,
                    Item::Neigh(NeighEntry {
                        addr: e.ip,
                        lladdr: e.mac.map(Mac),
                        dev: name,
                        state: format!("{:?}", e.state).to_lowercase(),
                        age_ms: e.age_ms.unwrap_or(0),
                        probes: e.probes,
                        held: e.held as u32,
                    }),
                )?;
            }
        }
        Request::AddressShow { dev } => {
            for p in t.ports.iter() {
                if dev.as_ref().is_some_and(|d| *d != p.name) {
                    continue;
                }
                for a in &p.addresses {
                    item(
                        w,
                        Item::Address(Address {
                            addr: crate::control::net_of_ifaddr(*a),
                            dev: p.name.clone(),
                        }),
                    )?;
                }
            }
        }
        _ => {
            return send(
                w,
                &ResponseLine::error(
                    id,
                    ErrorBody::new(ErrorKind::BadRequest, "not a stream request"),
                ),
            )
        }
    }
    send(w, &ResponseLine::end(id, count))
}

fn port_name(t: &Tables, p: u16) -> String {
    t.ports
        .get(usize::from(p))
        .map_or_else(|| format!("#{p}"), |x| x.name.clone())
}

fn route_get(ctx: &ServerContext, addr: IpAddr, table: u32) -> Result<Response, ErrorBody> {
    let (_, t) = snapshot(ctx)?;
    let found = match addr {
        IpAddr::V4(a) => t
            .routing
            .route4(table, u32::from(a))
            .map(|(p, tg)| (Prefix::V4(p), tg)),
        IpAddr::V6(a) => t
            .routing
            .route6(table, u128::from(a))
            .map(|(p, tg)| (Prefix::V6(p), tg)),
    };
    let (p, target) = found.ok_or_else(|| {
        ErrorBody::new(
            ErrorKind::NotFound,
            format!("no route to {addr} in table {table}"),
        )
    })?;
    let path = |nhid: u32, weight: u32| {
        t.routing.nexthop(nhid).map(|nh| WirePath {
            nhid: (!t.mgmt.auto_by_id.contains_key(&nhid)).then_some(nhid),
            via: nh.gateway,
            dev: port_name(&t, nh.port),
            weight,
            lladdr: nh.mac.map(Mac),
        })
    };
    let paths = match target {
        Target::NextHop(id) => path(id, 1).into_iter().collect(),
        Target::Group(g) => t
            .routing
            .group(g)
            .map(|g| {
                g.members()
                    .iter()
                    .filter_map(|&(id, wgt)| path(id, wgt))
                    .collect()
            })
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    Ok(Response::RouteLookup(RouteLookup {
        addr,
        table,
        route: route_to_wire(
            &t,
            table,
            p,
            t.routing.entry(table, p).unwrap_or(route::Entry {
                target,
                origin: route::Origin::STATIC,
            }),
        ),
        paths,
    }))
}

fn select_ports<'a>(
    ctx: &'a ServerContext,
    name: Option<&str>,
) -> Result<Vec<&'a PortMeta>, ErrorBody> {
    match name {
        None => Ok(ctx.ports.iter().collect()),
        Some(n) => ctx
            .ports
            .iter()
            .find(|p| p.name == n)
            .map(|p| vec![p])
            .ok_or_else(|| ErrorBody::new(ErrorKind::NotFound, format!("no port named {n:?}"))),
    }
}

fn port_show(ctx: &ServerContext, name: Option<&str>) -> Result<Response, ErrorBody> {
    let (_, t) = snapshot(ctx)?;
    let sel = select_ports(ctx, name)?;
    Ok(Response::Ports(
        sel.into_iter()
            .map(|m| {
                let idx = ctx.ports.iter().position(|x| x.name == m.name).unwrap_or(0);
                let info = t.ports.get(idx);
                let link = port::link(m.dpdk_id);
                wire::PortInfo {
                    index: idx as u32,
                    name: m.name.clone(),
                    driver: m.driver.clone(),
                    mac: Mac(info.map_or([0; 6], |i| i.mac)),
                    link_up: info.is_none_or(|i| i.carrier),
                    admin_down: info.is_some_and(|i| !i.admin_up),
                    speed_mbps: link.speed_mbps,
                    mtu: u32::from(info.map_or(m.mtu, |i| i.mtu)),
                    rx_queues: u32::from(m.rx_queues),
                    tx_queues: u32::from(m.tx_queues),
                    table: info.map_or(0, |i| i.vrf),
                    addresses: info
                        .map(|i| {
                            i.addresses
                                .iter()
                                .map(|&a| crate::control::net_of_ifaddr(a))
                                .collect()
                        })
                        .unwrap_or_default(),
                }
            })
            .collect(),
    ))
}

fn port_stats_answer(ctx: &ServerContext, name: Option<&str>) -> Result<Response, ErrorBody> {
    let sel = select_ports(ctx, name)?;
    let snap = ctx.stats.snapshot();
    Ok(Response::PortStats(
        port_stats(&ctx.ports, &snap)
            .into_iter()
            .filter(|p| sel.iter().any(|s| s.name == p.name))
            .collect(),
    ))
}

fn stats_report(ctx: &ServerContext, rates: Option<RateSample>) -> StatsReport {
    let s = ctx.stats.snapshot();
    let drops: Vec<DropCount> = DropReason::ALL
        .iter()
        .map(|&r| DropCount {
            reason: r.name().to_string(),
            packets: s.dropped(r),
        })
        .collect();
    let mut events: Vec<wire::EventCount> = s
        .events_by_name()
        .into_iter()
        .map(|(e, count)| wire::EventCount {
            event: e.to_string(),
            count,
        })
        .collect();
    if let Ok(n) = ctx.control.neighbours() {
        let c = n.counters;
        for (e, count) in [
            ("neigh_probes", c.probes),
            ("neigh_learned", c.learned),
            ("neigh_released", c.released),
            ("neigh_dropped", c.dropped),
            ("neigh_unreachable_sent", c.unreachable_sent),
            ("neigh_held_now", n.held as u64),
            ("router_advertisements", c.router_advertisements),
        ] {
            events.push(wire::EventCount {
                event: e.to_string(),
                count,
            });
        }
    }
    if let Some(h) = &ctx.host {
        for (e, count) in h.named() {
            events.push(wire::EventCount {
                event: e.to_string(),
                count,
            });
        }
    }
    StatsReport {
        uptime_ms: ctx.started.elapsed().as_millis() as u64,
        rx_packets: s.rx_packets,
        tx_packets: s.tx_packets,
        dropped: drops.iter().map(|d| d.packets).sum(),
        drops,
        events,
        lcores: s
            .lcores
            .iter()
            .map(|l| LcoreStats {
                lcore: l.lcore,
                polls: l.polls,
                busy_polls: l.busy_polls,
                idle_sleep_ms: l.idle_sleep_ns / 1_000_000,
                rx_packets: l.rx_packets,
                tx_packets: l.tx_packets,
                dropped: l.drops,
            })
            .collect(),
        ports: port_stats(&ctx.ports, &s),
        rates,
    }
}

pub(super) fn status(ctx: &ServerContext, clients: u32) -> Result<Response, ErrorBody> {
    let q = ctx.control.status()?;
    let (_, t) = snapshot(ctx)?;
    let limits = t.routing.limits();
    Ok(Response::Status(StatusReport {
        version: ctx.version.clone(),
        uptime_ms: ctx.started.elapsed().as_millis() as u64,
        generation: q.generation,
        workers: q
            .readers
            .iter()
            .map(|r| WorkerStatus {
                name: r.name.clone(),
                online: r.online,
                reported_generation: r.reported_generation,
                stalled: r.stalled,
                last_progress_ms: r.last_progress_age.as_millis() as u64,
            })
            .collect(),
        pending_objects: q.pending_objects as u64,
        pending_bytes: q.pending_bytes as u64,
        reclaimed_objects: q.reclaimed_objects_total,
        reclaimed_bytes: q.reclaimed_bytes_total,
        stalls: q.stalls_detected,
        backpressure_events: q.backpressure_events,
        backpressure_overruns: q.backpressure_overruns,
        publish_to_quiescent: Latency {
            count: q.publish_to_quiescent.count,
            p50_ns: q.publish_to_quiescent.p50_ns,
            p99_ns: q.publish_to_quiescent.p99_ns,
            p999_ns: q.publish_to_quiescent.p999_ns,
            max_ns: q.publish_to_quiescent.max_ns,
        },
        clients,
        routing: Some(RoutingUsage {
            tables: t.routing.vrfs().count() as u64,
            tables_limit: limits.tables as u64,
            bytes: t.routing.charged_bytes() as u64,
            bytes_limit: limits.bytes as u64,
        }),
    }))
}

fn rates(ctx: &ServerContext, a: &StatsSnapshot, b: &StatsSnapshot, dt: Duration) -> RateSample {
    let secs = dt.as_secs_f64().max(1e-9);
    let per = |x: u64, y: u64| (y.saturating_sub(x) as f64 / secs) as u64;
    let drops = |s: &StatsSnapshot| s.drops.iter().sum::<u64>();
    let bytes = |s: &StatsSnapshot, rx: bool| {
        s.ports
            .iter()
            .map(|p| if rx { p.rx_bytes } else { p.tx_bytes })
            .sum::<u64>()
    };
    RateSample {
        uptime_ms: ctx.started.elapsed().as_millis() as u64,
        interval_ms: dt.as_millis() as u64,
        rx_pps: per(a.rx_packets, b.rx_packets),
        tx_pps: per(a.tx_packets, b.tx_packets),
        drop_pps: per(drops(a), drops(b)),
        rx_bps: per(bytes(a, true), bytes(b, true)) * 8,
        tx_bps: per(bytes(a, false), bytes(b, false)) * 8,
        ports: ctx
            .ports
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let (pa, pb) = (
                    a.ports.get(i).cloned().unwrap_or_default(),
                    b.ports.get(i).cloned().unwrap_or_default(),
                );
                PortRates {
                    name: m.name.clone(),
                    rx_pps: per(pa.rx_packets, pb.rx_packets),
                    tx_pps: per(pa.tx_packets, pb.tx_packets),
                    rx_bps: per(pa.rx_bytes, pb.rx_bytes) * 8,
                    tx_bps: per(pa.tx_bytes, pb.tx_bytes) * 8,
                }
            })
            .collect(),
    }
}

/// Sleeps `d` between samples; true (end the watch) as soon as the server
/// stops or the peer hangs up (or sends anything: a watching client only
/// reads), so a dead client's session does not hold a slot for an interval.
pub(super) fn pause(s: &UnixStream, stop: &Shutdown, d: Duration) -> bool {
    use nix::poll::{PollFd, PollFlags, PollTimeout};
    use std::os::fd::AsFd;
    let end = Instant::now() + d;
    loop {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        if stop.wait(left.min(Duration::from_millis(100))) {
            return true;
        }
        let mut fds = [PollFd::new(s.as_fd(), PollFlags::POLLIN)];
        if nix::poll::poll(&mut fds, PollTimeout::ZERO).unwrap_or(0) > 0 {
            return true;
        }
    }
}

pub(super) fn watch(
    w: &mut Writer,
    ctx: &ServerContext,
    stop: &Shutdown,
    id: u64,
    interval_ms: u64,
    count: Option<u64>,
) -> io::Result<()> {
    if !(10..=3_600_000).contains(&interval_ms) {
        let e = ErrorBody::new(ErrorKind::Invalid, "interval_ms must be 10..=3600000");
        return send(w, &ResponseLine::error(id, e));
    }
    let mut sent = 0u64;
    let mut prev = (ctx.stats.snapshot(), Instant::now());
    let (_, mut seen) = ctx.events.since(u64::MAX);
    while count.is_none_or(|c| sent < c) {
        if pause(w.get_ref(), stop, Duration::from_millis(interval_ms)) {
            return Ok(());
        }
        let (events, last) = ctx.events.since(seen);
        seen = last;
        for e in events {
            let e = wire::LoggedEvent {
                uptime_ms: e.uptime_ms,
                message: e.message,
            };
            send(w, &ResponseLine::item(id, Item::Event(e)))?;
        }
        let now = (ctx.stats.snapshot(), Instant::now());
        let sample = rates(ctx, &prev.0, &now.0, now.1 - prev.1);
        // A closed client ends the watch with a write error.
        send(w, &ResponseLine::item(id, Item::Rates(sample)))?;
        w.flush()?;
        sent += 1;
        prev = now;
    }
    send(w, &ResponseLine::end(id, sent))
}
