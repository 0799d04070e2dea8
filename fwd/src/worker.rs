//! The poll loop of a worker lcore: the data path, stage by stage.
//!
//! Each iteration takes one table snapshot (a single Acquire load in
//! [`qsbr::Reader::snapshot`]) and uses it for every burst of the iteration;
//! dropping it at the end reports quiescence. Per burst:
//!
//! 1. **parse** every packet into a [`Parsed`] (malformed / not-IP are
//!    counted drops);
//! 2. **classify** the burst against the rule set (skipped while it is
//!    empty); the first matching rule's actions run in order: count (always),
//!    police, set DSCP, mirror a copy, then drop / redirect (bypasses
//!    routing, frame unchanged) / set next hop or table (policy routing) /
//!    permit;
//! 3. **route**: one batched longest-prefix lookup for the IPv4 packets of the
//!    burst, one for the IPv6 ones, ECMP members picked by the flow hash;
//! 4. **act**: TTL / hop-limit decrement with incremental checksum, MAC
//!    rewrite from the next hop's neighbour entry, enqueue on the output
//!    port's TX buffer (flushed when full);
//! 5. TX buffers are also flushed when the drain timer fires (~100 µs).
//!
//! No allocation, lock, syscall or log line per packet. Counters are
//! accumulated per burst in locals and written once per burst into this
//! lcore's own padded block.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::acl::{self, CounterWriter, Key, RuleEntry, VLAN_NONE};
use crate::dpdk::mbuf::{Flushed, Mbuf, RxBurst, TxBuffer, BURST};
use crate::dpdk::mempool::Mempool;
use crate::dpdk::port::{RxQueue, TxQueue};
use crate::dpdk::{rdtsc, tsc_hz};
use crate::pkt::{self, L3Kind, Parsed};
use crate::qsbr::Reader;
use crate::route::Resolved;
use crate::stats::{DropReason, LcoreCounters, Stats};
use crate::tables::Tables;

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
    /// This worker's rule counters and policer state.
    pub rule_counters: CounterWriter,
    /// Where mirror copies come from.
    pub pool: Arc<Mempool>,
}

/// Per-burst scratch, on the worker's stack.
struct Scratch {
    parsed: [Parsed; BURST],
    keys: [Key; BURST],
    key_idx: [u8; BURST],
    verdict: [Verdict; BURST],
    v4_idx: [u8; BURST],
    v4_dst: [u32; BURST],
    v4_hash: [u32; BURST],
    v4_out: [Resolved; BURST],
    v6_idx: [u8; BURST],
    v6_dst: [u128; BURST],
    v6_hash: [u32; BURST],
    v6_out: [Resolved; BURST],
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    Drop(DropReason),
    /// Look the destination up in the ingress port's table.
    Route,
    /// Look it up in this table (policy routing).
    RouteIn(u32),
    Forward(u32),
    /// Out of this port unchanged (classifier redirect).
    Redirect(u16),
    /// Addressed to the appliance: answered if it is a ping.
    Local,
    /// Turned into our answer (ARP, echo reply): back out of the ingress port.
    Reply,
}

impl Default for Scratch {
    fn default() -> Self {
        Scratch {
            parsed: [Parsed::default(); BURST],
            keys: [Key::default(); BURST],
            key_idx: [0; BURST],
            verdict: [Verdict::Route; BURST],
            v4_idx: [0; BURST],
            v4_dst: [0; BURST],
            v4_hash: [0; BURST],
            v4_out: [Resolved::NoRoute; BURST],
            v6_idx: [0; BURST],
            v6_dst: [0; BURST],
            v6_hash: [0; BURST],
            v6_out: [Resolved::NoRoute; BURST],
        }
    }
}

/// Local per-burst tallies, written to the shared block once per burst.
#[derive(Default)]
struct Tally {
    drops: [u64; DropReason::COUNT],
    /// Mirror copies that could not be made (pool empty) or sent.
    mirror_failed: u64,
    /// ARP and echo replies the appliance answered with.
    replies: u64,
}

/// The worker's state while it runs.
pub struct Worker {
    setup: WorkerSetup,
    txbufs: Vec<TxBuffer>,
    stats: Arc<Stats>,
}

impl Worker {
    pub fn new(setup: WorkerSetup, stats: Arc<Stats>) -> Worker {
        let txbufs = (0..setup.tx.len()).map(|_| TxBuffer::default()).collect();
        Worker {
            setup,
            txbufs,
            stats,
        }
    }

    /// Polls until `stop` is set, then flushes and goes offline.
    pub fn run(mut self, mut reader: Reader<Tables>, stop: Arc<AtomicBool>) -> i32 {
        let stats = Arc::clone(&self.stats);
        let counters = stats.lcore(self.setup.index);
        let mut scratch = Scratch::default();
        let mut burst = RxBurst::default();
        let mut last_drain = rdtsc();
        let clock_base = ClockBase::new(tsc_hz());
        reader.online();
        // Relaxed: the flag carries no data; the daemon joins the lcore
        // (rte_eal_wait_lcore) before touching anything the worker used.
        while !stop.load(Ordering::Relaxed) {
            let snap = reader.snapshot();
            let tables: &Tables = &snap;
            let mut busy = 0;
            for ri in 0..self.setup.rx.len() {
                let (port, rxq) = &mut self.setup.rx[ri];
                let port = *port;
                let n = rxq.rx(&mut burst);
                if n == 0 {
                    continue;
                }
                busy += 1;
                self.process(
                    tables,
                    port,
                    &mut burst,
                    &mut scratch,
                    counters,
                    &clock_base,
                );
            }
            drop(snap);
            counters.polls.add(1);
            if busy > 0 {
                counters.busy_polls.add(1);
            }
            let now = rdtsc();
            if now.wrapping_sub(last_drain) >= self.setup.drain_cycles {
                self.flush_all(counters);
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

    #[inline(always)]
    fn process(
        &mut self,
        t: &Tables,
        in_port: usize,
        burst: &mut RxBurst,
        s: &mut Scratch,
        counters: &LcoreCounters,
        clock_base: &ClockBase,
    ) {
        let n = burst.len();
        let mut tally = Tally::default();
        let mut rx_bytes = 0u64;

        // Stage 1: parse.
        for i in 0..n {
            burst.prefetch(i + 1);
            let Some(m) = burst.get_mut(i) else {
                continue;
            };
            rx_bytes += u64::from(m.pkt_len());
            s.verdict[i] = match pkt::parse_into(m.data(), &mut s.parsed[i]) {
                // Neighbour solicitations (ICMPv6 type 135) for our addresses.
                Ok(()) if s.parsed[i].proto == pkt::ipproto::ICMPV6 && s.parsed[i].sport == 135 => {
                    let port = t.ports.get(in_port);
                    let mac = port.map_or([0; 6], |p| p.mac);
                    let ours =
                        |a: u128| port.is_some_and(|p| p.owns(std::net::IpAddr::V6(a.into())));
                    if pkt::nd_reply_in_place(m.data_mut(), &s.parsed[i], mac, ours) {
                        Verdict::Reply
                    } else {
                        Verdict::Route
                    }
                }
                Ok(()) => Verdict::Route,
                Err(e) if e.is_malformed() => Verdict::Drop(DropReason::Malformed),
                Err(_) => {
                    let port = t.ports.get(in_port);
                    let mac = port.map_or([0; 6], |p| p.mac);
                    let ours =
                        |a: u32| port.is_some_and(|p| p.owns(std::net::IpAddr::V4(a.into())));
                    if pkt::arp_reply_in_place(m.data_mut(), mac, ours) {
                        Verdict::Reply
                    } else {
                        Verdict::Drop(DropReason::NotIp)
                    }
                }
            };
        }

        // Stage 2: classify.
        if !t.acl.is_empty() {
            let clock = clock_base.now();
            self.classify(t, in_port, burst, s, &mut tally, counters, clock);
        }

        // Stage 3: route, batched per family; policy-routed packets alone.
        // The flow hash only matters to ECMP groups.
        let ecmp = t.routing.has_groups();
        let (mut n4, mut n6) = (0usize, 0usize);
        for i in 0..n {
            if let Verdict::RouteIn(vrf) = s.verdict[i] {
                let p = &s.parsed[i];
                let h = if ecmp { pkt::flow_hash(p) } else { 0 };
                s.verdict[i] = resolved_verdict(match p.kind {
                    L3Kind::V4 => t.routing.lookup4(vrf, p.dst_v4(), h),
                    L3Kind::V6 => t.routing.lookup6(vrf, p.dst_v6(), h),
                });
                continue;
            }
            if s.verdict[i] != Verdict::Route {
                continue;
            }
            let p = &s.parsed[i];
            match p.kind {
                L3Kind::V4 => {
                    s.v4_idx[n4] = i as u8;
                    s.v4_dst[n4] = p.dst_v4();
                    s.v4_hash[n4] = if ecmp { pkt::flow_hash(p) } else { 0 };
                    n4 += 1;
                }
                L3Kind::V6 => {
                    s.v6_idx[n6] = i as u8;
                    s.v6_dst[n6] = p.dst_v6();
                    s.v6_hash[n6] = if ecmp { pkt::flow_hash(p) } else { 0 };
                    n6 += 1;
                }
            }
        }
        let vrf = t.port_vrf(in_port);
        if n4 > 0 {
            t.routing
                .lookup4_burst(vrf, &s.v4_dst[..n4], &s.v4_hash[..n4], &mut s.v4_out[..n4]);
            for k in 0..n4 {
                s.verdict[usize::from(s.v4_idx[k])] = resolved_verdict(s.v4_out[k]);
            }
        }
        if n6 > 0 {
            t.routing
                .lookup6_burst(vrf, &s.v6_dst[..n6], &s.v6_hash[..n6], &mut s.v6_out[..n6]);
            for k in 0..n6 {
                s.verdict[usize::from(s.v6_idx[k])] = resolved_verdict(s.v6_out[k]);
            }
        }

        // Stage 4: act.
        let mut cached: (u32, Egress) = (u32::MAX, Err(DropReason::NoRoute));
        for i in 0..n {
            let nh_id = match s.verdict[i] {
                Verdict::Forward(nh) => nh,
                Verdict::Drop(r) => {
                    tally.drops[r as usize] += 1;
                    continue;
                }
                Verdict::Route | Verdict::RouteIn(_) => {
                    tally.drops[DropReason::NoRoute as usize] += 1;
                    continue;
                }
                Verdict::Local | Verdict::Reply => {
                    let replied = s.verdict[i] == Verdict::Reply || {
                        let mac = t.port_mac(in_port).unwrap_or([0; 6]);
                        burst.get_mut(i).is_some_and(|m| {
                            pkt::echo_reply_in_place(m.data_mut(), &s.parsed[i], mac)
                        })
                    };
                    let sent = replied
                        && burst.take(i).is_some_and(|m| {
                            enqueue(&mut self.txbufs, &mut self.setup.tx, in_port, m, counters)
                        });
                    if sent {
                        tally.replies += 1;
                    } else {
                        tally.drops[DropReason::Local as usize] += 1;
                    }
                    continue;
                }
                Verdict::Redirect(port) => {
                    let out = usize::from(port);
                    let sent = burst.take(i).is_some_and(|m| {
                        enqueue(&mut self.txbufs, &mut self.setup.tx, out, m, counters)
                    });
                    if !sent {
                        tally.drops[DropReason::BadPort as usize] += 1;
                    }
                    continue;
                }
            };
            // Packets of a burst mostly share a next hop: resolve it once.
            if cached.0 != nh_id {
                cached = (nh_id, resolve_nexthop(t, nh_id, self.txbufs.len()));
            }
            let (out, dst_mac, src_mac) = match cached.1 {
                Ok(x) => x,
                Err(r) => {
                    tally.drops[r as usize] += 1;
                    continue;
                }
            };
            let Some(mut m) = burst.take(i) else {
                continue;
            };
            if pkt::forward_rewrite(m.data_mut(), &s.parsed[i], dst_mac, src_mac).is_err() {
                tally.drops[DropReason::TtlExpired as usize] += 1;
                drop(m);
                continue;
            }
            enqueue(&mut self.txbufs, &mut self.setup.tx, out, m, counters);
        }
        // What is left in the burst are the drops: free them so the next
        // rx_burst starts empty.
        burst.clear();

        counters.rx_packets.add(n as u64);
        let pc = &counters.ports[in_port];
        pc.rx_packets.add(n as u64);
        pc.rx_bytes.add(rx_bytes);
        if tally.replies > 0 {
            counters.replies.add(tally.replies);
        }
        if tally.mirror_failed > 0 {
            counters.mirror_failed.add(tally.mirror_failed);
        }
        for (r, &c) in tally.drops.iter().enumerate() {
            if c != 0 {
                counters.drops[r].add(c);
            }
        }
    }
}

/// Output port index, destination and source MAC of a next hop, or why it
/// cannot be used.
type Egress = Result<(usize, [u8; 6], [u8; 6]), DropReason>;

/// Resolves next hop `id` for transmission.
#[inline(always)]
fn resolve_nexthop(t: &Tables, id: u32, n_ports: usize) -> Egress {
    let nh = t.routing.nexthop(id).ok_or(DropReason::NoRoute)?;
    let out = usize::from(nh.port);
    let dst = nh.mac.ok_or(DropReason::NoNeighbour)?;
    let src = t
        .port_mac(out)
        .filter(|_| out < n_ports)
        .ok_or(DropReason::BadPort)?;
    Ok((out, dst, src))
}

/// Coarse time for rule counters (`last_used` tick) and policers.
#[derive(Clone, Copy)]
struct Clock {
    tick_ms: u64,
    now_ns: u64,
}

/// TSC to time without a division per burst: fixed-point multipliers.
struct ClockBase {
    /// Nanoseconds per cycle, scaled by 2^32.
    ns_mult: u128,
    /// Milliseconds per cycle, scaled by 2^32.
    ms_mult: u128,
}

impl ClockBase {
    fn new(hz: u64) -> ClockBase {
        let hz = u128::from(hz.max(1));
        ClockBase {
            ns_mult: (1_000_000_000u128 << 32) / hz,
            ms_mult: (1_000u128 << 32) / hz,
        }
    }

    #[inline(always)]
    fn now(&self) -> Clock {
        let c = u128::from(rdtsc());
        Clock {
            tick_ms: ((c * self.ms_mult) >> 32) as u64,
            now_ns: ((c * self.ns_mult) >> 32) as u64,
        }
    }
}

impl Worker {
    /// Classifies the burst's routable packets and runs their rules'
    /// actions, turning verdicts into drops, redirects or policy routes.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn classify(
        &mut self,
        t: &Tables,
        in_port: usize,
        burst: &mut RxBurst,
        s: &mut Scratch,
        tally: &mut Tally,
        counters: &LcoreCounters,
        clock: Clock,
    ) {
        let mut m = 0;
        for i in 0..burst.len() {
            if s.verdict[i] != Verdict::Route {
                continue;
            }
            let p = &s.parsed[i];
            let v6 = p.kind == L3Kind::V6;
            s.keys[m] = Key {
                src: if v6 {
                    p.src_v6()
                } else {
                    u128::from(p.src_v4())
                },
                dst: if v6 {
                    p.dst_v6()
                } else {
                    u128::from(p.dst_v4())
                },
                is_v6: v6,
                proto: p.proto,
                sport: p.sport,
                dport: p.dport,
                in_port: in_port as u16,
                vlan: p.outer_vlan.unwrap_or(VLAN_NONE),
                dscp: p.dscp,
                tcp_flags: p.tcp_flags,
            };
            s.key_idx[m] = i as u8;
            m += 1;
        }
        if m == 0 {
            return;
        }
        let mut found: [Option<&RuleEntry>; BURST] = [None; BURST];
        t.acl.classify_burst(&s.keys[..m], &mut found[..m]);
        for (k, hit) in found[..m].iter().enumerate() {
            let Some(rule) = hit else {
                continue;
            };
            let i = usize::from(s.key_idx[k]);
            let Some(mbuf) = burst.get_mut(i) else {
                continue;
            };
            let bytes = mbuf.pkt_len();
            let rc = &mut self.setup.rule_counters;
            rc.hit(rule.slot(), bytes, clock.tick_ms);
            for a in rule.actions() {
                match *a {
                    acl::Action::Permit | acl::Action::Count | acl::Action::Mark { .. } => {}
                    acl::Action::Drop => {
                        s.verdict[i] = Verdict::Drop(DropReason::AclDrop);
                        break;
                    }
                    acl::Action::Police { rate, burst: depth } => {
                        if !rc.police(rule.slot(), rate, depth, bytes, clock.now_ns) {
                            s.verdict[i] = Verdict::Drop(DropReason::Policed);
                            break;
                        }
                    }
                    acl::Action::SetDscp { dscp } => {
                        pkt::set_dscp(mbuf.data_mut(), &s.parsed[i], dscp);
                    }
                    acl::Action::Mirror { port } => {
                        let out = usize::from(port);
                        let sent = mbuf.deep_copy(&self.setup.pool).is_some_and(|copy| {
                            enqueue(&mut self.txbufs, &mut self.setup.tx, out, copy, counters)
                        });
                        if !sent {
                            tally.mirror_failed += 1;
                        }
                    }
                    acl::Action::Redirect { port } => {
                        s.verdict[i] = Verdict::Redirect(port);
                        break;
                    }
                    acl::Action::SetNextHop { nh } => {
                        s.verdict[i] = Verdict::Forward(nh);
                        break;
                    }
                    acl::Action::SetTable { vrf } => {
                        s.verdict[i] = Verdict::RouteIn(vrf);
                        break;
                    }
                }
            }
        }
    }
}

#[inline(always)]
fn resolved_verdict(r: Resolved) -> Verdict {
    match r {
        Resolved::Forward(nh) => Verdict::Forward(nh),
        Resolved::NoRoute => Verdict::Drop(DropReason::NoRoute),
        Resolved::Blackhole => Verdict::Drop(DropReason::Blackhole),
        Resolved::Reject => Verdict::Drop(DropReason::Reject),
        Resolved::Local => Verdict::Local,
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
