//! `trace` and `capture`: the control side of [`crate::worker::trace`].
//!
//! Both run on the session's own thread (never a worker, never the control
//! lcore): they check the request, arm the workers, then drain the
//! workers' rings every few milliseconds and stream what they find back to
//! the client, until the asked count is reached, [`MAX_DURATION`] has
//! passed, the client hangs up (or sends anything), or the daemon stops. Whatever ends them disarms them
//! ([`Disarm`]), so a peer that goes away never leaves a tap armed.
//!
//! A capture's pcap bytes are streamed, not written by the daemon: `fwdctl`
//! writes the file as the user who ran it. So a socket-group peer cannot
//! make the root daemon create or overwrite a path, and the file belongs
//! to its reader.

use std::io::{self, BufWriter, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ctl::wire::{
    self, CaptureSummary, Direction, ErrorBody, ErrorKind, Item, PcapChunk, ResponseLine,
    TraceLost, TraceNexthop, TracePacket, TraceRoute,
};

use super::reads::pause;
use super::session::send;
use super::{ServerContext, Shutdown};
use crate::control::{net_of, rule_from_wire};
use crate::pkt::pcap;
use crate::stats::DropReason;
use crate::tables::Tables;
use crate::worker::pipeline::Verdict;
use crate::worker::trace::{
    CaptureTap, Filter, Seen, TraceRecord, TraceTap, CAPTURE_RING, TRACE_RING,
};
use crate::worker::ClockBase;

type Writer = BufWriter<UnixStream>;

/// How often the rings are drained.
const POLL: Duration = Duration::from_millis(10);
/// A pcap chunk is sent once it holds this many bytes (or at each poll).
const CHUNK: usize = 32 << 10;
/// A trace or capture ends after this long even if fewer packets matched,
/// so no peer holds the one slot of each for ever.
pub const MAX_DURATION: Duration = Duration::from_secs(600);

/// Disarms on drop, however the stream ends.
struct Disarm<F: FnMut()>(F);

impl<F: FnMut()> Drop for Disarm<F> {
    fn drop(&mut self) {
        (self.0)();
    }
}

fn invalid(m: impl Into<String>) -> ErrorBody {
    ErrorBody::new(ErrorKind::Invalid, m)
}

/// A request's filter as the workers match it; `port` (a name) becomes its
/// ingress port.
pub(super) fn filter(
    t: &Tables,
    m: &wire::RuleMatch,
    port: Option<&str>,
) -> Result<Filter, ErrorBody> {
    let mut m = m.clone();
    if let Some(p) = port {
        if m.in_port.is_some() {
            return Err(invalid("give the port once: 'port' or 'iif'"));
        }
        m.in_port = Some(p.to_string());
    }
    let rule = wire::Rule {
        id: None,
        priority: 0,
        matches: m,
        actions: vec![wire::Action::Permit],
    };
    let r = rule_from_wire(0, &rule, |name| port_index(t, name))?;
    Ok(Filter::new(r.matches))
}

fn port_index(t: &Tables, name: &str) -> Result<u16, ErrorBody> {
    t.port_index(name)
        .map(|i| i as u16)
        .ok_or_else(|| ErrorBody::new(ErrorKind::NotFound, format!("no port named {name:?}")))
}

fn port_name(t: &Tables, p: u16) -> String {
    t.ports
        .get(usize::from(p))
        .map_or_else(|| format!("#{p}"), |x| x.name.clone())
}

/// Streams a trace of `count` packets.
#[allow(clippy::too_many_arguments)]
pub(super) fn trace(
    w: &mut Writer,
    ctx: &ServerContext,
    stop: &Shutdown,
    id: u64,
    count: u32,
    port: Option<&str>,
    m: &wire::RuleMatch,
) -> io::Result<()> {
    let fail = |w: &mut Writer, e| send(w, &ResponseLine::error(id, e));
    if count == 0 || count > wire::MAX_TRACE_PACKETS {
        let e = ErrorBody::new(
            ErrorKind::TooLarge,
            format!(
                "a trace takes 1 to {} packets (asked {count})",
                wire::MAX_TRACE_PACKETS
            ),
        );
        return fail(w, e);
    }
    let t = match ctx.control.snapshot() {
        Ok((_, t)) => t,
        Err(e) => return fail(w, e),
    };
    let f = match filter(&t, m, port) {
        Ok(f) => f,
        Err(e) => return fail(w, e),
    };
    let ring = TRACE_RING.min(count as usize);
    let tap = Arc::new(TraceTap::new(f, count, ctx.workers, ring));
    if ctx.taps.arm_trace(&tap).is_err() {
        let e = ErrorBody::new(ErrorKind::Busy, "a trace is running (one at a time)");
        return fail(w, e);
    }
    let _disarm = Disarm(|| ctx.taps.disarm_trace(&tap));
    let end = Instant::now() + MAX_DURATION;
    let mut got = 0u64;
    loop {
        while let Some(r) = tap.pop() {
            send(w, &ResponseLine::item(id, Item::Trace(to_wire(&t, &r))))?;
            got += 1;
        }
        w.flush()?;
        if got + tap.lost() >= u64::from(count) || Instant::now() >= end {
            break;
        }
        if pause(w.get_ref(), stop, POLL) {
            // Hung up, sent something, or the daemon stops: the stream
            // ends here (a closed peer reads nothing more anyway).
            break;
        }
    }
    let mut items = got;
    if tap.lost() > 0 {
        let l = TraceLost {
            records: tap.lost(),
        };
        send(w, &ResponseLine::item(id, Item::TraceLost(l)))?;
        items += 1;
    }
    send(w, &ResponseLine::end(id, items))
}

/// A worker's record in wire form (port names from `t`).
pub fn to_wire(t: &Tables, r: &TraceRecord) -> wire::TraceRecord {
    let packet = match r.seen {
        Seen::Ip(k) => {
            let (src, dst) = if k.is_v6 {
                (
                    IpAddr::V6(Ipv6Addr::from(k.src)),
                    IpAddr::V6(Ipv6Addr::from(k.dst)),
                )
            } else {
                (
                    IpAddr::V4(Ipv4Addr::from(k.src as u32)),
                    IpAddr::V4(Ipv4Addr::from(k.dst as u32)),
                )
            };
            TracePacket::Ip {
                src,
                dst,
                proto: k.proto,
                sport: k.sport,
                dport: k.dport,
            }
        }
        Seen::NotIp => TracePacket::NotIp,
        Seen::Malformed => TracePacket::Malformed,
    };
    let in_name = || Some(port_name(t, r.port));
    let (verdict, out, reason): (&str, Option<String>, Option<DropReason>) = match r.verdict {
        Verdict::Tx(p) if r.nexthop.is_none() => ("redirect", Some(port_name(t, p)), None),
        Verdict::Tx(p) => ("forward", Some(port_name(t, p)), None),
        Verdict::Fragment { port, .. } => ("fragment", Some(port_name(t, port)), None),
        Verdict::Hold { port } => ("hold", Some(port_name(t, port)), None),
        Verdict::Drop(d) => ("drop", None, Some(d)),
        Verdict::Error(d, _) => ("icmp_error", in_name(), Some(d)),
        Verdict::Reply => ("reply", in_name(), None),
        Verdict::Punt => ("punt", None, None),
        Verdict::Consumed => ("consumed", None, None),
        // Not final: the poll loop drops these as unroutable.
        Verdict::Route | Verdict::RouteIn(_) | Verdict::Forward(_) | Verdict::Local => {
            ("drop", None, Some(DropReason::NoRoute))
        }
    };
    wire::TraceRecord {
        worker: r.worker,
        port: port_name(t, r.port),
        len: r.len,
        packet,
        rules: r.rules().to_vec(),
        route: r.route.map(|x| TraceRoute {
            table: x.table,
            prefix: x.prefix.map(net_of),
        }),
        nexthop: r.nexthop.map(|n| TraceNexthop {
            id: n.id,
            via: n.gateway,
            dev: port_name(t, n.port),
        }),
        verdict: verdict.to_string(),
        out,
        reason: reason.map(|d| d.name().to_string()),
    }
}

/// What a capture request asks, checked.
pub(super) struct CaptureAsk<'a> {
    pub port: &'a str,
    pub direction: Direction,
    pub filter: &'a wire::RuleMatch,
    pub count: u32,
    pub snaplen: Option<u32>,
    pub rate: Option<u32>,
}

/// Streams a capture as pcap bytes.
pub(super) fn capture(
    w: &mut Writer,
    ctx: &ServerContext,
    stop: &Shutdown,
    id: u64,
    ask: &CaptureAsk<'_>,
) -> io::Result<()> {
    let fail = |w: &mut Writer, e| send(w, &ResponseLine::error(id, e));
    let snaplen = ask.snaplen.unwrap_or(wire::DEFAULT_SNAPLEN);
    let rate = ask.rate.unwrap_or(wire::DEFAULT_CAPTURE_RATE);
    let bounds = [
        ("count", ask.count, wire::MAX_CAPTURE_PACKETS),
        ("snaplen", snaplen, wire::MAX_SNAPLEN),
        ("rate", rate, wire::MAX_CAPTURE_RATE),
    ];
    for (what, v, max) in bounds {
        if v == 0 || v > max {
            let e = ErrorBody::new(
                ErrorKind::TooLarge,
                format!("capture {what} must be 1 to {max} (asked {v})"),
            );
            return fail(w, e);
        }
    }
    if ask.filter.in_port.is_some() {
        return fail(w, invalid("a capture's port is 'port', not 'iif'"));
    }
    let t = match ctx.control.snapshot() {
        Ok((_, t)) => t,
        Err(e) => return fail(w, e),
    };
    let checked = port_index(&t, ask.port).and_then(|p| Ok((p, filter(&t, ask.filter, None)?)));
    let (port, f) = match checked {
        Ok(x) => x,
        Err(e) => return fail(w, e),
    };
    let ring = CAPTURE_RING.min(ask.count as usize);
    let tap = Arc::new(CaptureTap::new(
        port,
        ask.direction == Direction::Out,
        f,
        ask.count,
        snaplen as usize,
        rate,
        ring,
    ));
    if ctx.taps.arm_capture(&tap).is_err() {
        let e = ErrorBody::new(ErrorKind::Busy, "a capture is running (one at a time)");
        return fail(w, e);
    }
    let _disarm = Disarm(|| ctx.taps.disarm_capture(&tap));
    // The workers stamp with the TSC clock; the file wants the epoch.
    let clock = ClockBase::new(crate::dpdk::tsc_hz());
    let epoch_ns = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let offset = epoch_ns.wrapping_sub(clock.now().now_ns);
    let end = Instant::now() + MAX_DURATION;
    let mut pw = pcap::Writer::new(Vec::with_capacity(CHUNK * 2))?;
    let mut written = 0u64;
    let mut items = 0u64;
    let mut chunk = |w: &mut Writer, buf: &mut Vec<u8>| -> io::Result<()> {
        if !buf.is_empty() {
            send(w, &ResponseLine::item(id, Item::Pcap(PcapChunk::new(buf))))?;
            buf.clear();
            items += 1;
        }
        Ok(())
    };
    loop {
        while let Some(b) = tap.pop() {
            let ts_usec = b.ts_ns.wrapping_add(offset) / 1000;
            let r = pw.write_cut(ts_usec, &b.data[..b.len], u64::from(b.orig_len));
            tap.recycle(b);
            r?;
            written += 1;
            if pw.get_mut().len() >= CHUNK {
                chunk(w, pw.get_mut())?;
            }
        }
        chunk(w, pw.get_mut())?;
        w.flush()?;
        if written >= u64::from(ask.count)
            || Instant::now() >= end
            || pause(w.get_ref(), stop, POLL)
        {
            break;
        }
    }
    let (ring_full, rate_limited) = tap.losses();
    let s = CaptureSummary {
        captured: written,
        ring_full,
        rate_limited,
    };
    send(w, &ResponseLine::item(id, Item::CaptureSummary(s)))?;
    send(w, &ResponseLine::end(id, items + 1))
}
