//! A worker lcore: the poll loop that strings the data-path stages together.
//!
//! - [`pipeline`]: the stages over a burst (parse, classify, route, act),
//!   each producing per-packet verdicts; pure over byte frames and tested
//!   without DPDK.
//! - [`fast`]: the common packet (plain IPv4/IPv6, any upper layer but
//!   neighbour discovery, routed to a resolved next hop) in two passes
//!   ahead of the stages, which get what it leaves.
//! - [`local`]: what the appliance answers or originates itself (ARP, ND,
//!   echo, ICMP errors and their rate limiter).
//! - [`trace`]: packet trace and capture, when the control side arms them
//!   (one relaxed load per burst when it does not).
//! - [`idle`]: when a worker whose queues stay empty sleeps between polls.
//! - this file: RX, carrying out the verdicts (a full burst forwarded
//!   whole to one port straight to the driver, the rest through the TX
//!   buffers; ICMP errors in fresh mbufs, IPv4 fragments, handing packets
//!   to the control side through [`crate::punt`]), draining what the
//!   control side asks to send, and the drain timer.
//!
//! Each received burst takes a table snapshot (a single Acquire load in
//! [`qsbr::Reader::snapshot`](crate::qsbr::Reader::snapshot)) after it has
//! arrived, and dropping it reports quiescence. Taken after the receive, a
//! packet that arrives once a version is published (once `fwdctl` has
//! returned) is processed with that version or a newer one; a snapshot
//! taken before the receive could be older than the packet when the lcore
//! was preempted in between (it was: a route added by `fwdctl` was not yet
//! seen by the ping sent after it, on a loaded test machine). An iteration
//! that received nothing takes and drops one, so an idle lcore still
//! reports quiescence; one that sleeps ([`idle`]) is offline meanwhile.
//! No allocation, lock, syscall or log line per packet.
//! Counters are accumulated per burst in locals and written once per burst
//! into this lcore's own padded block.

pub mod fast;
pub mod idle;
pub mod local;
pub mod pipeline;
pub mod trace;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::acl::CounterWriter;
use crate::dpdk::mbuf::{Flushed, Mbuf, Received, RxBurst, TxBuffer, BURST};
use crate::dpdk::mempool::Mempool;
use crate::dpdk::port::{RxQueue, TxQueue};
use crate::dpdk::{rdtsc, tsc_hz};
use crate::pkt::{self, IcmpError, NicCsum};
use crate::punt::{Channel, Punt, ToControl};
use crate::qsbr::Reader;
use crate::stats::{DropReason, Event, LcoreCounters, Stats};
use crate::tables::Tables;

use pipeline::{Clock, Packets, Pipeline, Scratch, Tally, Verdict};

/// What a worker needs, built by the daemon before launch.
pub struct WorkerSetup {
    /// Index of this worker in the config (its counter block).
    pub index: usize,
    /// The RX queues it polls, with the index of their port.
    pub rx: Vec<(usize, RxQueue)>,
    /// One TX queue per port, indexed by port index.
    pub tx: Vec<TxQueue>,
    /// TX buffers are flushed at least every this many TSC cycles.
    pub drain_cycles: u64,
    /// The longest it sleeps between polls when idle (zero: it always
    /// polls; see [`idle`]).
    pub idle_sleep: Duration,
    /// Entries of its flow cache in front of the rule set (0: none).
    pub flow_cache: usize,
    /// This worker's rule counters and policer state.
    pub rule_counters: CounterWriter,
    /// Where mirror copies, ICMP errors and fragments come from.
    pub pool: Arc<Mempool>,
    /// Its queues to and from the control side.
    pub channel: Arc<Channel>,
    /// ICMP errors: rate, burst, and the code of `reject` routes.
    pub icmp: IcmpSettings,
    /// The host path, when on: this worker's share of each port's punt
    /// rate (packets per second, indexed by port) and burst.
    pub punt: Option<(Vec<u32>, u32)>,
    /// Trace and capture sessions the control side arms.
    pub taps: Arc<trace::Taps>,
}

/// How this worker sends ICMP errors.
#[derive(Clone, Copy, Debug)]
pub struct IcmpSettings {
    /// Errors per second (per worker); 0 sends none.
    pub rate: u32,
    pub burst: u32,
    /// What `reject` routes answer.
    pub reject: IcmpError,
}

/// The worker's state while it runs.
pub struct Worker {
    setup: WorkerSetup,
    txbufs: Vec<TxBuffer>,
    stats: Arc<Stats>,
    limiter: local::TokenBucket,
    /// Per port: the punt policer (empty when the host path is off).
    punt_limit: Vec<local::TokenBucket>,
    /// Where ICMP errors are built (allocated once, never zeroed per error).
    err_buf: Box<[u8; pkt::MAX_ERROR_FRAME]>,
    /// The taps' generation last taken (0: nothing armed) and what was
    /// armed at it.
    tap_gen: u64,
    tap: Option<Arc<trace::Armed>>,
    /// When it sleeps while idle (made in `run`, on the worker's thread).
    idle: idle::Idle,
}

impl Worker {
    pub fn new(setup: WorkerSetup, stats: Arc<Stats>) -> Worker {
        let txbufs = (0..setup.tx.len()).map(|_| TxBuffer::default()).collect();
        let limiter = local::TokenBucket::new(setup.icmp.rate, setup.icmp.burst);
        let punt_limit = setup.punt.as_ref().map_or_else(Vec::new, |(rates, burst)| {
            rates
                .iter()
                .map(|&r| local::TokenBucket::new(r, *burst))
                .collect()
        });
        Worker {
            setup,
            txbufs,
            stats,
            limiter,
            punt_limit,
            err_buf: Box::new([0; pkt::MAX_ERROR_FRAME]),
            tap_gen: 0,
            tap: None,
            idle: idle::Idle::new(Duration::ZERO),
        }
    }

    /// Takes what is armed after the control side changed it (retried at
    /// the next burst if the control side holds the lock right now).
    #[cold]
    #[inline(never)]
    fn retap(&mut self, g: u64) {
        if g == 0 {
            self.tap = None;
            self.tap_gen = 0;
        } else if let Some((g, a)) = self.setup.taps.take() {
            self.tap = a;
            self.tap_gen = g;
        }
    }

    /// Polls until `stop` is set, then flushes and goes offline.
    pub fn run(mut self, mut reader: Reader<Tables>, stop: Arc<AtomicBool>) -> i32 {
        let stats = Arc::clone(&self.stats);
        let counters = stats.lcore(self.setup.index);
        let mut scratch = Scratch::with_flow_cache(self.setup.flow_cache);
        scratch.flows.prepare();
        let mut burst = RxBurst::default();
        let mut last_drain = rdtsc();
        let clock_base = ClockBase::new(tsc_hz());
        self.idle = idle::Idle::start(self.setup.idle_sleep);
        reader.online();
        // Relaxed: the flag carries no data; the daemon joins the lcore
        // (rte_eal_wait_lcore) before touching anything the worker used.
        while !stop.load(Ordering::Relaxed) {
            let mut busy = 0;
            for ri in 0..self.setup.rx.len() {
                let (port, rxq) = &mut self.setup.rx[ri];
                let port = *port;
                let rx = rxq.rx(&mut burst);
                if rx.is_empty() {
                    continue;
                }
                busy += 1;
                // After the receive: see the module doc.
                let snap = reader.snapshot();
                self.process(&snap, port, rx, &mut scratch, counters, &clock_base);
            }
            if !self.setup.channel.down_is_empty() {
                self.send_from_control(counters);
            }
            counters.polls.add(1);
            if busy > 0 {
                counters.busy_polls.add(1);
            } else {
                // Nothing received, so no snapshot was taken: report
                // quiescence all the same, or an idle lcore would hold
                // every replaced version back from reclamation.
                drop(reader.snapshot());
                self.idle_turn(&mut reader, counters);
            }
            let now = rdtsc();
            if now.wrapping_sub(last_drain) >= self.setup.drain_cycles {
                self.flush_all(counters);
                let (hits, misses) = scratch.flows.take_counts();
                counters.event_n(Event::AclCacheHits, hits);
                counters.event_n(Event::AclCacheMisses, misses);
                last_drain = now;
            }
        }
        self.flush_all(counters);
        reader.offline();
        0
    }

    fn flush_all(&mut self, counters: &LcoreCounters) {
        for p in 0..self.txbufs.len() {
            if !self.txbufs[p].is_empty() {
                let f = self.txbufs[p].flush(&mut self.setup.tx[p]);
                account_tx(counters, p, f);
            }
        }
    }

    /// A turn of the loop that received nothing: counts it towards an
    /// idle stretch, and sleeps when [`idle::Idle`] says so. What waits in
    /// the TX buffers goes out first, and the worker is offline while it
    /// sleeps. Out of the loop's code, as is the idle state (in `self`, not
    /// a local of `run`): with them inside, the loop's registers and frame
    /// changed and the forwarding A/Bs measured x0.96-0.99.
    #[cold]
    #[inline(never)]
    fn idle_turn(&mut self, reader: &mut Reader<Tables>, counters: &LcoreCounters) {
        let Some(d) = self.idle.empty_poll(counters.busy_polls.get()) else {
            return;
        };
        self.flush_all(counters);
        reader.offline();
        let t0 = Instant::now();
        std::thread::sleep(d);
        let slept = u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX);
        counters.idle_sleeps.add(1);
        counters.idle_sleep_ns.add(slept);
    }

    /// Sends what the control side queued for this worker (a burst at most
    /// per iteration, so forwarding keeps its share): work, for the idle
    /// stretch.
    fn send_from_control(&mut self, counters: &LcoreCounters) {
        let mut n = 0;
        while n < BURST {
            let Some(m) = self.setup.channel.pop_down() else {
                break;
            };
            n += 1;
            let out = usize::from(m.port);
            if enqueue(&mut self.txbufs, &mut self.setup.tx, out, m.mbuf, counters) {
                counters.event_n(Event::Injected, 1);
            } else {
                counters.drop_n(DropReason::BadPort, 1);
            }
        }
        if n > 0 {
            self.idle.worked();
        }
    }

    #[inline(always)]
    fn process(
        &mut self,
        t: &Tables,
        in_port: usize,
        mut rx: Received<'_>,
        s: &mut Scratch,
        counters: &LcoreCounters,
        clock_base: &ClockBase,
    ) {
        let n = rx.len();
        let mut tally = Tally::default();
        let pipe = Pipeline {
            tables: t,
            in_port,
            reject: self.setup.icmp.reject,
            host: !self.punt_limit.is_empty(),
        };
        // The one check trace and capture cost when off.
        let g = self.setup.taps.generation();
        if g != self.tap_gen {
            self.retap(g);
        }
        let whole = {
            let mut io = Io {
                burst: &mut rx,
                txbufs: &mut self.txbufs,
                tx: &mut self.setup.tx,
                pool: &self.setup.pool,
                counters,
            };
            match &self.tap {
                None => pipe.run(
                    &mut io,
                    s,
                    &mut tally,
                    &mut self.setup.rule_counters,
                    || clock_base.now(),
                ),
                Some(armed) => {
                    trace::run_tapped(
                        armed,
                        &pipe,
                        &mut io,
                        s,
                        &mut tally,
                        &mut self.setup.rule_counters,
                        clock_base.now(),
                        self.setup.index,
                    );
                    None
                }
            }
        };

        // A full burst that the fast path forwarded whole to one port whose
        // buffer is empty goes out as it is (l3fwd's shortcut); the rest
        // one by one. (With packets waiting in that buffer, the order on
        // the port needs them sent first: the one-by-one path.)
        if let (true, Some(w)) = (n == BURST, whole) {
            let out = usize::from(w.port);
            if self.txbufs.get(out).is_some_and(TxBuffer::is_empty) {
                if let Some(q) = self.setup.tx.get_mut(out) {
                    let f = rx.send_all(q, w.bytes);
                    account_tx(counters, out, f);
                }
            }
        }
        let burst = rx.into_burst();
        // Carry out the verdicts (none are left after the shortcut). A
        // burst forwarded whole to one port has its verdicts unwritten
        // (`Pipeline::run`): each is `Tx` of that port.
        let mut now_ns = None;
        for i in 0..burst.len() {
            let v = whole.map_or(s.verdict[i], |w| Verdict::Tx(w.port));
            // Forwarding first, as a predicted branch, not a jump table.
            if let Verdict::Tx(port) = v {
                let out = usize::from(port);
                let sent = burst.take(i).is_some_and(|m| {
                    enqueue(&mut self.txbufs, &mut self.setup.tx, out, m, counters)
                });
                if !sent {
                    tally.drop(DropReason::BadPort);
                }
                continue;
            }
            self.carry_out_other(
                t,
                in_port,
                burst,
                s,
                i,
                &mut tally,
                counters,
                &mut now_ns,
                clock_base,
            );
        }
        for k in 0..s.n_learned {
            let (_, msg) = s.learned[k];
            let m = ToControl::Neigh {
                port: in_port as u16,
                msg,
            };
            // A full queue loses the message, not a packet: the neighbour
            // is learned from the next one.
            let _ = self.setup.channel.push_up(m);
        }
        // What is left in the burst are the drops: free them so the next
        // rx_burst starts empty.
        burst.clear();

        counters.rx_packets.add(n as u64);
        let pc = &counters.ports[in_port];
        pc.rx_packets.add(n as u64);
        pc.rx_bytes.add(tally.rx_bytes);
        tally.each_drop(|r, c| counters.drops[r].add(c));
        tally.each_event(|e, c| counters.events[e].add(c));
    }

    /// Carries out a verdict other than `Tx` (answers, errors, hand-overs,
    /// fragments, drops): out of line, the forwarding loop stays small.
    #[allow(clippy::too_many_arguments)]
    #[cold]
    #[inline(never)]
    fn carry_out_other(
        &mut self,
        t: &Tables,
        in_port: usize,
        burst: &mut RxBurst,
        s: &Scratch,
        i: usize,
        tally: &mut Tally,
        counters: &LcoreCounters,
        now_ns: &mut Option<u64>,
        clock_base: &ClockBase,
    ) {
        let v = s.verdict[i];
        match v {
            Verdict::Tx(_) => {}
            Verdict::Reply => {
                let sent = burst.take(i).is_some_and(|m| {
                    enqueue(&mut self.txbufs, &mut self.setup.tx, in_port, m, counters)
                });
                if sent {
                    tally.event(Event::Replies);
                } else {
                    tally.drop(DropReason::BadPort);
                }
            }
            Verdict::Drop(r) => tally.drop(r),
            Verdict::Error(r, err) => {
                tally.drop(r);
                let now = *now_ns.get_or_insert_with(|| clock_base.now().now_ns);
                self.icmp_error(t, in_port, burst, s, i, err, now, tally, counters);
            }
            Verdict::Hold { port } => {
                let Some(mbuf) = burst.take(i) else {
                    return;
                };
                let m = ToControl::Hold {
                    in_port: in_port as u16,
                    port,
                    addr: s.hold_addr[i],
                    mbuf,
                };
                let r = self.setup.channel.push_up(m);
                tally.handed_over(r, Event::Held, DropReason::NoNeighbour);
            }
            Verdict::Fragment { port, mtu } => {
                let Some(m) = burst.take(i) else {
                    return;
                };
                self.fragment(m, &s.parsed[i], port, mtu, tally, counters);
            }
            Verdict::Consumed => tally.event(Event::NeighMessages),
            Verdict::Punt => {
                let now = *now_ns.get_or_insert_with(|| clock_base.now().now_ns);
                self.punt(in_port, burst, i, now, tally);
            }
            Verdict::Route | Verdict::RouteIn(_) | Verdict::Forward(_) | Verdict::Local => {
                tally.drop(DropReason::NoRoute);
            }
        }
    }

    /// Hands packet `i` to the host thread for `in_port`'s kernel
    /// interface, if the port's policer allows.
    #[cold]
    fn punt(
        &mut self,
        in_port: usize,
        burst: &mut RxBurst,
        i: usize,
        now_ns: u64,
        tally: &mut Tally,
    ) {
        let allowed = self
            .punt_limit
            .get_mut(in_port)
            .is_some_and(|l| l.allow(now_ns));
        if !allowed {
            tally.drop(DropReason::PuntPoliced);
            return;
        }
        let Some(mbuf) = burst.take(i) else {
            return;
        };
        let p = Punt {
            port: in_port as u16,
            mbuf,
        };
        let r = self.setup.channel.push_host(p);
        tally.handed_over(r, Event::Punted, DropReason::PuntQueueFull);
    }

    /// Answers packet `i` with `err` out of the ingress port, rate
    /// permitting, in a fresh mbuf (the packet itself is dropped).
    #[allow(clippy::too_many_arguments)]
    #[cold]
    fn icmp_error(
        &mut self,
        t: &Tables,
        in_port: usize,
        burst: &mut RxBurst,
        s: &Scratch,
        i: usize,
        err: IcmpError,
        now_ns: u64,
        tally: &mut Tally,
        counters: &LcoreCounters,
    ) {
        let (Some(port), Some(m)) = (t.port(in_port), burst.get_mut(i)) else {
            return;
        };
        let buf = &mut self.err_buf[..];
        let len = match local::error_frame(
            buf,
            m.data(),
            &s.parsed[i],
            err,
            port,
            &mut self.limiter,
            now_ns,
        ) {
            Ok(len) => len,
            Err(local::NoError::RateLimited) => {
                tally.event(Event::IcmpSuppressed);
                return;
            }
            Err(local::NoError::NotAllowed) => return,
        };
        let Some(mut e) = self.setup.pool.alloc() else {
            tally.event(Event::IcmpSuppressed);
            return;
        };
        if !e.append(&self.err_buf[..len]) {
            tally.event(Event::IcmpSuppressed);
            return;
        }
        if enqueue(&mut self.txbufs, &mut self.setup.tx, in_port, e, counters) {
            tally.event(Event::IcmpErrors);
        }
    }

    /// Sends rewritten IPv4 packet `m` (no DF, larger than `mtu`) as
    /// fragments of at most `mtu` bytes out of `port`.
    #[cold]
    fn fragment(
        &mut self,
        m: Mbuf,
        p: &pkt::Parsed,
        port: u16,
        mtu: u16,
        tally: &mut Tally,
        counters: &LcoreCounters,
    ) {
        let mut buf = [0u8; 2048];
        let mut offset = 0usize;
        loop {
            let Some((len, next)) = pkt::fragment_v4(&mut buf, m.data(), p, mtu, offset) else {
                tally.drop(DropReason::MtuExceeded);
                return;
            };
            let Some(mut f) = self.setup.pool.alloc() else {
                tally.drop(DropReason::MtuExceeded);
                return;
            };
            if !f.append(&buf[..len]) {
                tally.drop(DropReason::MtuExceeded);
                return;
            }
            if !enqueue(
                &mut self.txbufs,
                &mut self.setup.tx,
                usize::from(port),
                f,
                counters,
            ) {
                tally.drop(DropReason::BadPort);
                return;
            }
            tally.event(Event::Fragments);
            match next {
                Some(o) => offset = o,
                None => return,
            }
        }
    }
}

/// The burst as the stages see it, with what a mirror copy needs.
struct Io<'a, 'b> {
    burst: &'a mut Received<'b>,
    txbufs: &'a mut [TxBuffer],
    tx: &'a mut [TxQueue],
    pool: &'a Mempool,
    counters: &'a LcoreCounters,
}

impl Packets for Io<'_, '_> {
    #[inline(always)]
    fn count(&self) -> usize {
        self.burst.len()
    }

    #[inline(always)]
    fn frame(&mut self, i: usize) -> Option<&mut [u8]> {
        self.burst.get_mut(i).map(|m| m.data_mut())
    }

    #[inline(always)]
    fn wire_len(&self, i: usize) -> u32 {
        self.burst.pkt_len(i)
    }

    #[inline(always)]
    fn segments(&self, i: usize) -> u16 {
        self.burst.segments(i)
    }

    #[inline(always)]
    fn ip_csum(&self, i: usize) -> NicCsum {
        self.burst.ip_csum(i)
    }

    #[inline(always)]
    fn trim_to(&mut self, i: usize, len: usize) {
        if let Some(m) = self.burst.get_mut(i) {
            m.trim_to(len);
        }
    }

    fn mirror(&mut self, i: usize, port: u16) -> bool {
        let Some(m) = self.burst.get_mut(i) else {
            return false;
        };
        m.deep_copy(self.pool).is_some_and(|copy| {
            enqueue(self.txbufs, self.tx, usize::from(port), copy, self.counters)
        })
    }

    #[inline(always)]
    fn prefetch(&self, i: usize) {
        self.burst.prefetch(i);
    }

    #[inline(always)]
    fn single(&mut self, i: usize) -> Option<(&mut [u8], NicCsum)> {
        self.burst.single(i)
    }
}

/// TSC to time without a division per burst: fixed-point multipliers.
pub(crate) struct ClockBase {
    /// Nanoseconds per cycle, scaled by 2^32.
    ns_mult: u128,
    /// Milliseconds per cycle, scaled by 2^32.
    ms_mult: u128,
}

impl ClockBase {
    pub(crate) fn new(hz: u64) -> ClockBase {
        let hz = u128::from(hz.max(1));
        ClockBase {
            ns_mult: (1_000_000_000u128 << 32) / hz,
            ms_mult: (1_000u128 << 32) / hz,
        }
    }

    #[inline(always)]
    pub(crate) fn now(&self) -> Clock {
        let c = u128::from(rdtsc());
        Clock {
            tick_ms: ((c * self.ms_mult) >> 32) as u64,
            now_ns: ((c * self.ns_mult) >> 32) as u64,
        }
    }
}

/// Queues `m` on port `out`'s TX buffer (flushing it when full). False when
/// the port does not exist; `m` is then freed.
#[inline(always)]
fn enqueue(
    txbufs: &mut [TxBuffer],
    tx: &mut [TxQueue],
    out: usize,
    m: Mbuf,
    counters: &LcoreCounters,
) -> bool {
    let (Some(buf), Some(q)) = (txbufs.get_mut(out), tx.get_mut(out)) else {
        return false;
    };
    if let Some(f) = buf.push(m, q) {
        account_tx(counters, out, f);
    }
    true
}

#[inline(always)]
fn account_tx(counters: &LcoreCounters, port: usize, f: Flushed) {
    counters.tx_packets.add(u64::from(f.sent));
    let pc = &counters.ports[port];
    pc.tx_packets.add(u64::from(f.sent));
    pc.tx_bytes.add(f.sent_bytes);
    if f.dropped > 0 {
        pc.tx_dropped.add(u64::from(f.dropped));
        counters.drop_n(DropReason::TxFull, u64::from(f.dropped));
    }
}
