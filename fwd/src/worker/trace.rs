//! Packet trace and capture, the data-path side: what a worker records
//! when the control side arms a trace or a capture, and nothing otherwise.
//!
//! Contract:
//! - **Free when off.** A worker reads one relaxed atomic per burst
//!   ([`Taps::generation`]) and compares it with the generation it last
//!   took; while nothing is armed both are 0 and the burst runs the plain
//!   [`Pipeline::run`]. Everything else here runs only while armed.
//! - **Never blocks, never allocates.** When the generation changes, the
//!   worker takes the armed sessions with a `try_lock` (held by the control
//!   side only for the moment of an arm or disarm; on contention it tries
//!   again next burst). Records go into per-worker [`ArrayQueue`]s
//!   preallocated by the control side; a capture's packet buffers are
//!   preallocated too and circulate between a free and a full queue. A full
//!   queue counts a loss, it never waits.
//! - **Bounded.** A trace records at most its `count` packets and a capture
//!   copies at most its `count`, claimed from one shared budget by every
//!   worker; a capture copies at most `rate` packets per second (fixed
//!   one-second windows, shared by the workers).
//!
//! A traced burst runs the stages one by one ([`run_tapped`]), keeping the
//! verdict after each, so a record shows exactly what the pipeline did: the
//! parse result (from a parse of the frame as received), the rules the
//! classifier matched, the table and prefix of the route lookup, the next
//! hop, and the final verdict the poll loop carries out.

use std::net::IpAddr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crossbeam_queue::ArrayQueue;

use crate::acl::{self, CounterWriter, Key};
use crate::dpdk::mbuf::BURST;
use crate::pkt::{self, Parsed};
use crate::route::Prefix;
use crate::tables::Tables;

use super::pipeline::{key_of, Clock, Packets, Pipeline, Scratch, Tally, Verdict};

/// Records each worker can hold for a trace before the collector takes
/// them (more are counted as lost).
pub const TRACE_RING: usize = 1024;
/// Capture buffers of a session (shared by its workers).
pub const CAPTURE_RING: usize = 1024;
/// Rules a record lists: every rule of one evaluation.
pub const MAX_RULES: usize = acl::MAX_CONTINUE + 1;

/// What is armed, shared by the workers and the control side.
#[derive(Default)]
pub struct Taps {
    /// Generation of the armed sessions; 0 while none is. Relaxed: it only
    /// tells a worker to look; the sessions themselves are taken under
    /// `slot`'s lock (which orders them), and a worker that reads a stale
    /// value catches up at its next burst.
    armed: AtomicU64,
    slot: Mutex<Slot>,
}

#[derive(Default)]
struct Slot {
    generation: u64,
    armed: Option<Arc<Armed>>,
}

/// The sessions armed at one generation.
#[derive(Default, Clone)]
pub struct Armed {
    pub trace: Option<Arc<TraceTap>>,
    pub capture: Option<Arc<CaptureTap>>,
}

/// One session already armed (`busy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Busy;

impl Taps {
    /// What a worker compares per burst.
    #[inline(always)]
    pub fn generation(&self) -> u64 {
        self.armed.load(Ordering::Relaxed)
    }

    /// The sessions armed at generation `g`, or `None` when the control
    /// side holds the lock right now (try again later).
    #[cold]
    pub fn take(&self) -> Option<(u64, Option<Arc<Armed>>)> {
        let s = self.slot.try_lock().ok()?;
        Some((s.generation, s.armed.clone()))
    }

    fn change(&self, f: impl FnOnce(&mut Armed) -> Result<(), Busy>) -> Result<(), Busy> {
        let mut s = self.slot.lock().unwrap_or_else(PoisonError::into_inner);
        let mut a = s.armed.as_deref().cloned().unwrap_or_default();
        f(&mut a)?;
        s.generation += 1;
        let any = a.trace.is_some() || a.capture.is_some();
        s.armed = any.then(|| Arc::new(a));
        let g = if any { s.generation } else { 0 };
        // Relaxed: see `armed`; the lock's release publishes the sessions.
        self.armed.store(g, Ordering::Relaxed);
        Ok(())
    }

    /// Arms `t`; `Busy` while another trace is armed.
    ///
    /// # Errors
    /// [`Busy`].
    pub fn arm_trace(&self, t: &Arc<TraceTap>) -> Result<(), Busy> {
        self.change(|a| match a.trace {
            Some(_) => Err(Busy),
            None => {
                a.trace = Some(Arc::clone(t));
                Ok(())
            }
        })
    }

    /// Disarms `t` (if it is the armed trace).
    pub fn disarm_trace(&self, t: &Arc<TraceTap>) {
        let _ = self.change(|a| {
            if a.trace.as_ref().is_some_and(|x| Arc::ptr_eq(x, t)) {
                a.trace = None;
            }
            Ok(())
        });
    }

    /// Arms `c`; `Busy` while another capture is armed.
    ///
    /// # Errors
    /// [`Busy`].
    pub fn arm_capture(&self, c: &Arc<CaptureTap>) -> Result<(), Busy> {
        self.change(|a| match a.capture {
            Some(_) => Err(Busy),
            None => {
                a.capture = Some(Arc::clone(c));
                Ok(())
            }
        })
    }

    /// Disarms `c` (if it is the armed capture).
    pub fn disarm_capture(&self, c: &Arc<CaptureTap>) {
        let _ = self.change(|a| {
            if a.capture.as_ref().is_some_and(|x| Arc::ptr_eq(x, c)) {
                a.capture = None;
            }
            Ok(())
        });
    }
}

/// Which packets a session takes: a rule's match, and whether packets that
/// are not IP can match at all (only when nothing but the port is asked).
#[derive(Clone, Copy, Debug, Default)]
pub struct Filter {
    pub m: acl::RuleMatch,
}

impl Filter {
    pub fn new(m: acl::RuleMatch) -> Filter {
        Filter { m }
    }

    /// Whether a packet received on `in_port`, as parsed (`None`: not IP
    /// or not parseable), matches.
    #[inline]
    pub fn matches(&self, key: Option<&Key>, in_port: u16) -> bool {
        match key {
            Some(k) => self.m.matches(k),
            None => {
                let only_port = acl::RuleMatch {
                    in_port: self.m.in_port,
                    ..acl::RuleMatch::default()
                };
                self.m == only_port && self.m.in_port.is_none_or(|p| p == in_port)
            }
        }
    }
}

/// Claims one of `budget`'s units; false when none is left.
#[inline]
fn claim(budget: &AtomicU32) -> bool {
    // Relaxed: a counter; no data is published through it.
    budget
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
        .is_ok()
}

/// An armed trace.
pub struct TraceTap {
    pub filter: Filter,
    count: u32,
    /// Packets still to record.
    remaining: AtomicU32,
    /// Per worker, by config index.
    rings: Vec<ArrayQueue<TraceRecord>>,
    /// Claimed records that did not fit their worker's ring.
    lost: AtomicU64,
}

impl TraceTap {
    /// A trace of `count` packets over `workers` workers, each with a ring
    /// of `ring` records.
    pub fn new(filter: Filter, count: u32, workers: usize, ring: usize) -> TraceTap {
        TraceTap {
            filter,
            count,
            remaining: AtomicU32::new(count),
            rings: (0..workers.max(1))
                .map(|_| ArrayQueue::new(ring.max(1)))
                .collect(),
            lost: AtomicU64::new(0),
        }
    }

    pub fn count(&self) -> u32 {
        self.count
    }

    /// Records lost so far (their rings were full).
    pub fn lost(&self) -> u64 {
        // Relaxed: a counter.
        self.lost.load(Ordering::Relaxed)
    }

    /// Claims the right to record one more packet.
    #[inline]
    pub fn claim(&self) -> bool {
        claim(&self.remaining)
    }

    /// Hands over a claimed record from `worker`; a full ring loses it.
    pub fn push(&self, worker: usize, r: TraceRecord) {
        let ok = self.rings.get(worker).is_some_and(|q| q.push(r).is_ok());
        if !ok {
            // Relaxed: a counter.
            self.lost.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The next record of any worker (the collector's side).
    pub fn pop(&self) -> Option<TraceRecord> {
        self.rings.iter().find_map(ArrayQueue::pop)
    }
}

/// What the parse of a frame as received gave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seen {
    Ip(Key),
    NotIp,
    Malformed,
}

impl Seen {
    fn of(frame: Option<&mut [u8]>, in_port: u16) -> Seen {
        let Some(f) = frame else {
            return Seen::Malformed;
        };
        let mut p = Parsed::default();
        match pkt::parse_into(f, &mut p) {
            Ok(()) => Seen::Ip(key_of(&p, in_port)),
            Err(e) if e.is_malformed() => Seen::Malformed,
            Err(_) => Seen::NotIp,
        }
    }

    fn key(&self) -> Option<&Key> {
        match self {
            Seen::Ip(k) => Some(k),
            _ => None,
        }
    }
}

/// The route lookup of a traced packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RouteSeen {
    pub table: u32,
    /// The longest matching prefix; `None` when nothing matched.
    pub prefix: Option<Prefix>,
}

/// The next hop of a traced packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NexthopSeen {
    pub id: u32,
    pub gateway: Option<IpAddr>,
    pub port: u16,
}

/// One packet's way through the stages (`Copy`: it moves through a ring).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceRecord {
    pub worker: u16,
    pub port: u16,
    pub len: u32,
    pub seen: Seen,
    pub rules: [u32; MAX_RULES],
    pub n_rules: u8,
    pub route: Option<RouteSeen>,
    pub nexthop: Option<NexthopSeen>,
    /// The pipeline's final verdict.
    pub verdict: Verdict,
}

impl TraceRecord {
    pub fn rules(&self) -> &[u32] {
        &self.rules[..usize::from(self.n_rules)]
    }
}

/// A copied packet.
pub struct CaptureBuf {
    /// When it was copied (the workers' TSC clock, nanoseconds).
    pub ts_ns: u64,
    /// Its length on the wire.
    pub orig_len: u32,
    /// Bytes of `data` in use.
    pub len: usize,
    pub data: Box<[u8]>,
}

/// An armed capture.
pub struct CaptureTap {
    pub port: u16,
    /// True: as transmitted; false: as received.
    pub out: bool,
    pub filter: Filter,
    count: u32,
    remaining: AtomicU32,
    rate: u32,
    /// Start of the current one-second rate window (TSC nanoseconds).
    window_start: AtomicU64,
    window_count: AtomicU32,
    free: ArrayQueue<CaptureBuf>,
    full: ArrayQueue<CaptureBuf>,
    ring_full: AtomicU64,
    rate_limited: AtomicU64,
}

impl CaptureTap {
    /// A capture of `count` packets of `port`, each cut to `snaplen` bytes,
    /// at most `rate` per second, through `ring` preallocated buffers.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        port: u16,
        out: bool,
        filter: Filter,
        count: u32,
        snaplen: usize,
        rate: u32,
        ring: usize,
    ) -> CaptureTap {
        let ring = ring.max(1);
        let free = ArrayQueue::new(ring);
        for _ in 0..ring {
            let _ = free.push(CaptureBuf {
                ts_ns: 0,
                orig_len: 0,
                len: 0,
                data: vec![0; snaplen.max(1)].into_boxed_slice(),
            });
        }
        CaptureTap {
            port,
            out,
            filter,
            count,
            remaining: AtomicU32::new(count),
            rate,
            window_start: AtomicU64::new(0),
            window_count: AtomicU32::new(0),
            free,
            full: ArrayQueue::new(ring),
            ring_full: AtomicU64::new(0),
            rate_limited: AtomicU64::new(0),
        }
    }

    pub fn count(&self) -> u32 {
        self.count
    }

    /// (packets lost to a full ring, packets over the rate).
    pub fn losses(&self) -> (u64, u64) {
        // Relaxed: counters.
        (
            self.ring_full.load(Ordering::Relaxed),
            self.rate_limited.load(Ordering::Relaxed),
        )
    }

    /// Within the rate at `now_ns`? Fixed one-second windows shared by the
    /// workers: a race at a window's start can let a few packets more
    /// through, never unboundedly many.
    fn allow(&self, now_ns: u64) -> bool {
        // Relaxed throughout: counters that publish no data.
        let start = self.window_start.load(Ordering::Relaxed);
        if now_ns.wrapping_sub(start) >= 1_000_000_000
            && self
                .window_start
                .compare_exchange(start, now_ns, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            self.window_count.store(0, Ordering::Relaxed);
        }
        self.window_count.fetch_add(1, Ordering::Relaxed) < self.rate
    }

    /// Copies `frame` (`wire_len` bytes on the wire) if the budget, the
    /// rate and a free buffer allow; counts why not otherwise.
    pub fn copy(&self, frame: &[u8], wire_len: u32, now_ns: u64) {
        // Relaxed: counters.
        if self.remaining.load(Ordering::Relaxed) == 0 {
            return;
        }
        if !self.allow(now_ns) {
            self.rate_limited.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let Some(mut b) = self.free.pop() else {
            self.ring_full.fetch_add(1, Ordering::Relaxed);
            return;
        };
        if !claim(&self.remaining) {
            let _ = self.free.push(b);
            return;
        }
        let n = frame.len().min(b.data.len());
        b.data[..n].copy_from_slice(&frame[..n]);
        b.len = n;
        b.orig_len = wire_len;
        b.ts_ns = now_ns;
        // Cannot fail: `full` holds as many as there are buffers.
        let _ = self.full.push(b);
    }

    /// The next copied packet (the writer's side).
    pub fn pop(&self) -> Option<CaptureBuf> {
        self.full.pop()
    }

    /// Gives a buffer back once written.
    pub fn recycle(&self, b: CaptureBuf) {
        let _ = self.free.push(b);
    }
}

/// The stages of [`Pipeline::run`] one by one, recording for the armed
/// trace and copying for the armed capture. Out of line: only armed
/// bursts come here.
#[cold]
#[inline(never)]
#[allow(clippy::too_many_arguments)]
pub fn run_tapped<P: Packets>(
    armed: &Armed,
    pipe: &Pipeline<'_>,
    pkts: &mut P,
    s: &mut Scratch,
    tally: &mut Tally,
    rc: &mut CounterWriter,
    clock: Clock,
    worker: usize,
) {
    let n = pkts.count();
    let in_port = pipe.in_port as u16;
    let mut seen = [Seen::Malformed; BURST];
    for (i, x) in seen.iter_mut().enumerate().take(n) {
        *x = Seen::of(pkts.frame(i), in_port);
    }
    let mut traced = [false; BURST];
    if let Some(t) = armed.trace.as_deref() {
        for i in 0..n {
            traced[i] = t.filter.matches(seen[i].key(), in_port) && t.claim();
        }
    }
    let capture = armed.capture.as_deref();
    if let Some(c) = capture.filter(|c| !c.out && c.port == in_port) {
        for (i, x) in seen.iter().enumerate().take(n) {
            if c.filter.matches(x.key(), in_port) {
                let len = pkts.wire_len(i);
                if let Some(f) = pkts.frame(i) {
                    c.copy(f, len, clock.now_ns);
                }
            }
        }
    }

    pipe.parse(pkts, s, tally, super::fast::first(n));
    let parsed = s.verdict;
    if !pipe.tables.acl.is_empty() {
        pipe.classify(pkts, s, tally, rc, clock);
    }
    let classified = s.verdict;
    pipe.route(s, n);
    let routed = s.verdict;
    pipe.act(pkts, s, super::fast::first(n));

    if let Some(c) = capture.filter(|c| c.out) {
        for (i, x) in seen.iter().enumerate().take(n) {
            if s.verdict[i] == Verdict::Tx(c.port) && c.filter.matches(x.key(), in_port) {
                let len = pkts.wire_len(i);
                if let Some(f) = pkts.frame(i) {
                    c.copy(f, len, clock.now_ns);
                }
            }
        }
    }
    if let Some(t) = armed.trace.as_deref() {
        for i in (0..n).filter(|&i| traced[i]) {
            let stages = [parsed[i], classified[i], routed[i], s.verdict[i]];
            let r = record(
                pipe.tables,
                worker,
                in_port,
                pkts.wire_len(i),
                seen[i],
                stages,
            );
            t.push(worker, r);
        }
    }
}

/// A packet's record from the verdicts after parse, classify, route and
/// act: the rules and the route are looked up again in the same tables
/// (the same answer the stages had; only traced packets pay for it).
pub fn record(
    t: &Tables,
    worker: usize,
    in_port: u16,
    len: u32,
    seen: Seen,
    [parsed, classified, routed, last]: [Verdict; 4],
) -> TraceRecord {
    let mut r = TraceRecord {
        worker: worker as u16,
        port: in_port,
        len,
        seen,
        rules: [0; MAX_RULES],
        n_rules: 0,
        route: None,
        nexthop: None,
        verdict: last,
    };
    let Seen::Ip(key) = seen else {
        return r;
    };
    // Classified: only what the parse stage sent on to routing.
    if parsed == Verdict::Route && !t.acl.is_empty() {
        for (slot, rule) in r.rules.iter_mut().zip(t.acl.evaluate(&key).rules()) {
            *slot = rule.id();
            r.n_rules += 1;
        }
    }
    let table = match classified {
        Verdict::Route => Some(t.port_vrf(usize::from(in_port))),
        Verdict::RouteIn(vrf) => Some(vrf),
        _ => None,
    };
    if let Some(table) = table {
        let prefix = if key.is_v6 {
            t.routing.route6(table, key.dst).map(|(p, _)| Prefix::V6(p))
        } else {
            t.routing
                .route4(table, key.dst as u32)
                .map(|(p, _)| Prefix::V4(p))
        };
        r.route = Some(RouteSeen { table, prefix });
    }
    if let Verdict::Forward(id) = routed {
        r.nexthop = t.routing.nexthop(id).map(|nh| NexthopSeen {
            id,
            gateway: nh.gateway,
            port: nh.port,
        });
    }
    r
}

#[cfg(test)]
#[path = "trace_tests.rs"]
mod tests;
