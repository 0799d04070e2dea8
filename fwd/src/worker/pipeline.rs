//! The stages of the data path, over a burst of frames and their verdicts.
//!
//! Each stage runs over the whole burst before the next starts (l3fwd / VPP
//! style), reading and writing the per-burst [`Scratch`]:
//!
//! 1. [`Pipeline::parse`]: every frame into a [`Parsed`]; RFC 1812 input
//!    checks (IPv4 header checksum, padding past the IP length trimmed,
//!    multi-segment frames counted); ARP and neighbour discovery answered in
//!    place or recorded for the control side ([`super::local`]).
//! 2. [`Pipeline::classify`]: the rule set, run only while it has rules;
//!    actions run in rule order (count, police, DSCP, mirror; then drop,
//!    redirect, next hop or table). A matched rule without a verdict
//!    (count / mirror / set-dscp / mark only) does not end evaluation: its
//!    actions run and the next matching rule follows, up to
//!    [`acl::MAX_CONTINUE`] of them ([`acl::Chain`]).
//! 3. [`Pipeline::route`]: one batched longest-prefix lookup per family,
//!    ECMP members picked by the flow hash.
//! 4. [`Pipeline::act`]: the output port's state and MTU, TTL, the
//!    neighbour's MAC; rewrite in place. Every packet ends with one final
//!    [`Verdict`] that the poll loop carries out (transmit, answer, ICMP
//!    error, hand to the control side, drop).
//!
//! The stages know frames only through [`Packets`], so they run in unit
//! tests on plain byte vectors built with [`crate::pkt::build`], with no
//! DPDK. No allocation, lock or syscall here.

use std::net::IpAddr;

use crate::acl::{self, CounterWriter, Flow4, Flow6, FlowCache, Key, RuleEntry, VLAN_NONE};
use crate::dpdk::mbuf::BURST;
use crate::pkt::{self, IcmpError, L3Kind, NeighMsg, NicCsum, Parsed};
use crate::route::Resolved;
use crate::stats::{DropReason, Event};
use crate::tables::Tables;

use super::fast::{Bits, Mask, Whole};
use super::local;

/// A burst of frames as the stages see them.
pub trait Packets {
    /// Frames in the burst (some may have been taken out).
    fn count(&self) -> usize;
    /// The headers of frame `i` (its first segment), writable.
    fn frame(&mut self, i: usize) -> Option<&mut [u8]>;
    /// Frame `i`'s length on the wire (all segments).
    fn wire_len(&self, i: usize) -> u32;
    /// Segments of frame `i`.
    fn segments(&self, i: usize) -> u16;
    /// The NIC's verdict on frame `i`'s IPv4 header checksum (RX
    /// offload).
    fn ip_csum(&self, _i: usize) -> NicCsum {
        NicCsum::UNCHECKED
    }
    /// Cuts frame `i` to `len` bytes (Ethernet padding after the IP packet).
    fn trim_to(&mut self, i: usize, len: usize);
    /// Sends a copy of frame `i`, as it is now, out of `port`.
    fn mirror(&mut self, i: usize, port: u16) -> bool;
    /// Hint that frame `i` is next.
    fn prefetch(&self, _i: usize) {}
    /// Frame `i` when it is one segment (so its length is its wire
    /// length), with [`ip_csum`](Packets::ip_csum)'s verdict: all the fast
    /// path reads of a packet before its parse, in one access.
    #[inline(always)]
    fn single(&mut self, i: usize) -> Option<(&mut [u8], NicCsum)> {
        if self.segments(i) != 1 {
            return None;
        }
        let nic_csum = self.ip_csum(i);
        self.frame(i).map(|f| (f, nic_csum))
    }
}

/// What happens to a packet. The first four are intermediate (between
/// stages); the rest are final.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Look the destination up in the ingress port's table.
    Route,
    /// Look it up in this table (policy routing).
    RouteIn(u32),
    /// Send via this next hop.
    Forward(u32),
    /// Addressed to the appliance: answered if it is a ping.
    Local,
    /// Dropped and counted.
    Drop(DropReason),
    /// Rewritten: out of this port.
    Tx(u16),
    /// IPv4 larger than the port's MTU without DF, rewritten: fragment it
    /// to `mtu` and send the fragments out of `port`.
    Fragment { port: u16, mtu: u16 },
    /// Turned into our answer in place: back out of the ingress port.
    Reply,
    /// Dropped for `DropReason`, answered with this ICMP error (rate
    /// permitting) out of the ingress port.
    Error(DropReason, IcmpError),
    /// The next hop on `port` has no MAC yet: to the control side, which
    /// holds it while it resolves [`Scratch::hold_addr`].
    Hold { port: u16 },
    /// Consumed: an ARP / ND message recorded for the control side.
    Consumed,
    /// For the ingress port's kernel interface (the host path).
    Punt,
}

// One register: the stages write a verdict per packet, and a larger enum is
// built in a stack temporary with partial stores and copied, which stalls
// store-to-load forwarding (measured: ~13% of the worker's time).
static_assertions::const_assert!(std::mem::size_of::<Verdict>() <= 8);

/// Per-burst scratch, on the worker's stack, and the worker's flow cache.
pub struct Scratch {
    pub parsed: [Parsed; BURST],
    pub verdict: [Verdict; BURST],
    /// For `Hold`: the address to resolve (the gateway, or the destination
    /// of a connected route).
    pub hold_addr: [IpAddr; BURST],
    /// ARP / ND messages to hand to the control side: (packet, message).
    pub learned: [(u8, NeighMsg); BURST],
    pub n_learned: usize,
    pub(super) keys: [Key; BURST],
    /// The fast path's keys in the flow cache's form: IPv4, IPv6.
    pub(super) flows4: [Flow4; BURST],
    pub(super) flows6: [Flow6; BURST],
    pub(super) key_idx: [u8; BURST],
    pub(super) v4_idx: [u8; BURST],
    pub(super) v4_dst: [u32; BURST],
    pub(super) v4_out: [Resolved; BURST],
    pub(super) v6_idx: [u8; BURST],
    pub(super) v6_dst: [u128; BURST],
    pub(super) v6_out: [Resolved; BURST],
    /// This worker's first matches of recent flows (kept across bursts).
    pub flows: FlowCache,
    /// The next hops the fast path resolved (kept across bursts).
    pub(super) hops: super::fast::Hops,
}

impl Default for Scratch {
    fn default() -> Self {
        let none = NeighMsg::RouterSolicitation {
            src: std::net::Ipv6Addr::UNSPECIFIED,
            sll: None,
        };
        Scratch {
            parsed: [Parsed::default(); BURST],
            verdict: [Verdict::Route; BURST],
            hold_addr: [IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED); BURST],
            learned: [(0, none); BURST],
            n_learned: 0,
            keys: [Key::default(); BURST],
            flows4: [Flow4::default(); BURST],
            flows6: [Flow6::default(); BURST],
            key_idx: [0; BURST],
            v4_idx: [0; BURST],
            v4_dst: [0; BURST],
            v4_out: [Resolved::NoRoute; BURST],
            v6_idx: [0; BURST],
            v6_dst: [0; BURST],
            v6_out: [Resolved::NoRoute; BURST],
            flows: FlowCache::default(),
            hops: super::fast::Hops::default(),
        }
    }
}

impl Scratch {
    /// With a flow cache of `entries` entries (0: none).
    pub fn with_flow_cache(entries: usize) -> Self {
        Scratch {
            flows: FlowCache::new(entries),
            ..Scratch::default()
        }
    }
}

/// Coarse time for rule counters (`last_used` tick) and policers.
#[derive(Clone, Copy, Debug, Default)]
pub struct Clock {
    pub tick_ms: u64,
    pub now_ns: u64,
}

/// Per-burst counts the poll loop adds to the lcore's block once.
#[derive(Default)]
pub struct Tally {
    /// Written only by [`Tally::drop`] and [`Tally::event`], which keep
    /// the bits below (outside the worker, read with [`Tally::each_drop`] /
    /// [`Tally::each_event`]).
    pub(super) drops: [u64; DropReason::COUNT],
    pub(super) events: [u64; Event::COUNT],
    /// Bytes received (all segments).
    pub rx_bytes: u64,
    /// Which of `drops` / `events` are not zero (bit = index): the poll
    /// loop adds those alone, not every count of a burst that has none.
    dropped: u32,
    evented: u32,
}

static_assertions::const_assert!(DropReason::COUNT <= 32 && Event::COUNT <= 32);

impl Tally {
    /// Counts a hand-over to another thread: `sent`, or dropped as `full`
    /// when the queue gave the packet back (it is freed here).
    #[inline]
    pub fn handed_over<T>(&mut self, r: Result<(), T>, sent: Event, full: DropReason) {
        match r {
            Ok(()) => self.event(sent),
            Err(back) => {
                drop(back);
                self.drop(full);
            }
        }
    }

    #[inline(always)]
    pub fn drop(&mut self, r: DropReason) {
        self.drops[r as usize] += 1;
        self.dropped |= 1 << r as u32;
    }

    #[inline(always)]
    pub fn event(&mut self, e: Event) {
        self.events[e as usize] += 1;
        self.evented |= 1 << e as u32;
    }

    /// The drop counts that are not zero, by [`DropReason`] index.
    #[inline(always)]
    pub fn each_drop(&self, f: impl FnMut(usize, u64)) {
        each_set(self.dropped, &self.drops, f);
    }

    /// The event counts that are not zero, by [`Event`] index.
    #[inline(always)]
    pub fn each_event(&self, f: impl FnMut(usize, u64)) {
        each_set(self.evented, &self.events, f);
    }
}

#[inline(always)]
fn each_set(bits: u32, counts: &[u64], mut f: impl FnMut(usize, u64)) {
    for i in Bits(bits) {
        f(i, counts[i]);
    }
}

/// One burst from one port through the stages.
pub struct Pipeline<'a> {
    pub tables: &'a Tables,
    pub in_port: usize,
    /// The unreachable code `reject` routes answer with.
    pub reject: IcmpError,
    /// The host path is on: what is for the appliance and not answered
    /// here goes to the port's kernel interface instead of being dropped.
    pub host: bool,
}

impl Pipeline<'_> {
    /// Runs every stage. The [fast path](super::fast) goes first and the
    /// stages see only what it left. Returns the port every packet goes to
    /// and the burst's bytes when the fast path forwarded the whole burst
    /// to one (the burst can go to the driver as it is): `s.verdict` is
    /// then left as it was (each packet's verdict is `Tx` of that port,
    /// [`Pipeline::fast`]). Otherwise (None) `s.verdict[..n]` are final
    /// afterwards.
    #[inline(always)]
    pub fn run<P: Packets>(
        &self,
        pkts: &mut P,
        s: &mut Scratch,
        tally: &mut Tally,
        rules: &mut CounterWriter,
        clock: impl FnOnce() -> Clock,
    ) -> Option<Whole> {
        let acl = !self.tables.acl.is_empty();
        let clock = if acl { clock() } else { Clock::default() };
        let left = self.fast(pkts, s, tally, rules, clock);
        s.n_learned = 0;
        let todo = left.rest;
        if todo == 0 {
            return left.whole;
        }
        self.parse(pkts, s, tally, todo);
        if acl {
            self.classify(pkts, s, tally, rules, clock);
        }
        self.route(s, pkts.count());
        self.act(pkts, s, todo);
        None
    }

    /// Stage 1 for the packets in `todo` (the others keep their verdict):
    /// parse, input checks, neighbour protocols.
    #[inline(always)]
    pub fn parse<P: Packets>(&self, pkts: &mut P, s: &mut Scratch, tally: &mut Tally, todo: Mask) {
        let port = self.tables.port(self.in_port);
        let up = port.is_some_and(|p| p.is_up());
        s.n_learned = 0;
        for i in 0..pkts.count() {
            if todo & (1 << i) == 0 {
                continue;
            }
            pkts.prefetch(i + 1);
            tally.rx_bytes += u64::from(pkts.wire_len(i));
            if !up {
                s.verdict[i] = Verdict::Drop(DropReason::LinkDown);
                continue;
            }
            if pkts.segments(i) > 1 {
                s.verdict[i] = Verdict::Drop(DropReason::MultiSegment);
                continue;
            }
            let nic_csum = pkts.ip_csum(i);
            let Some(frame) = pkts.frame(i) else {
                s.verdict[i] = Verdict::Drop(DropReason::Malformed);
                continue;
            };
            let p = &mut s.parsed[i];
            s.verdict[i] = match pkt::parse_into(frame, p) {
                Ok(()) => {
                    let end = usize::from(p.l3_off) + usize::from(p.l3_len);
                    let csum_ok = || {
                        nic_csum
                            .checked()
                            .unwrap_or_else(|| pkt::ipv4_checksum_ok(frame, p))
                    };
                    if p.kind == L3Kind::V4 && !csum_ok() {
                        Verdict::Drop(DropReason::BadChecksum)
                    } else if let Some(v) = port.filter(|_| local::is_nd(p)).and_then(|pi| {
                        local::neighbour_v6(
                            frame,
                            p,
                            pi,
                            &mut s.learned,
                            &mut s.n_learned,
                            i,
                            tally,
                            self.host,
                        )
                    }) {
                        v
                    } else {
                        if frame.len() > end {
                            pkts.trim_to(i, end);
                        }
                        if is_multicast(p) {
                            // No multicast routing: link-scope control
                            // traffic (MLD, IGMP, OSPF, VRRP, ...) is for
                            // the appliance's host side.
                            self.multicast(p)
                        } else if p.kind == L3Kind::V6
                            && port.is_some_and(|pi| pi.link_local == p.dst_v6())
                        {
                            Verdict::Local
                        } else {
                            Verdict::Route
                        }
                    }
                }
                Err(e) if e.is_malformed() => Verdict::Drop(DropReason::Malformed),
                Err(_) => match port {
                    Some(pi) => {
                        local::arp(frame, pi, &mut s.learned, &mut s.n_learned, i, self.host)
                    }
                    None => Verdict::Drop(DropReason::NotIp),
                },
            };
        }
    }

    /// Stage 2: the rule set over the routable packets. Out of line: it
    /// runs once per burst, only while rules exist, and keeps the hot
    /// function small enough for the parse and rewrite to inline.
    #[inline(never)]
    pub fn classify<P: Packets>(
        &self,
        pkts: &mut P,
        s: &mut Scratch,
        tally: &mut Tally,
        rc: &mut CounterWriter,
        clock: Clock,
    ) {
        let t = self.tables;
        let mut m = 0;
        for i in 0..pkts.count() {
            if s.verdict[i] != Verdict::Route {
                continue;
            }
            s.keys[m] = key_of(&s.parsed[i], self.in_port as u16);
            s.key_idx[m] = i as u8;
            m += 1;
        }
        if m == 0 {
            return;
        }
        let mut found: [Option<&RuleEntry>; BURST] = [None; BURST];
        t.acl
            .classify_burst_cached(&s.keys[..m], &mut found[..m], &mut s.flows);
        for (k, hit) in found[..m].iter().enumerate() {
            let Some(rule) = *hit else {
                continue;
            };
            let i = usize::from(s.key_idx[k]);
            if rule.has_verdict() {
                // The common case: the first match decides.
                apply_rule(pkts, s, i, tally, rc, rule, clock);
                continue;
            }
            // No verdict (count, mirror, set-dscp, mark): its actions, then
            // those of the following matches up to the first verdict.
            let chain = t.acl.chain(&s.keys[k], Some(rule));
            for r in chain.rules() {
                apply_rule(pkts, s, i, tally, rc, r, clock);
            }
            if chain.cut() {
                // A deeper verdict was not looked for: fail closed, so
                // stacked rules without a verdict cannot open a gap.
                s.verdict[i] = Verdict::Drop(DropReason::AclChainCut);
            }
        }
    }

    /// Stage 3: longest-prefix match, batched per family; policy-routed
    /// packets one by one. The flow hash only matters to ECMP groups: every
    /// lookup asks for it only for packets whose route is a group.
    #[inline(always)]
    pub fn route(&self, s: &mut Scratch, n: usize) {
        let t = self.tables;
        let (mut n4, mut n6) = (0usize, 0usize);
        for i in 0..n {
            if let Verdict::RouteIn(vrf) = s.verdict[i] {
                let p = &s.parsed[i];
                let h = || pkt::flow_hash(p);
                s.verdict[i] = self.resolved(match p.kind {
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
                    n4 += 1;
                }
                L3Kind::V6 => {
                    s.v6_idx[n6] = i as u8;
                    s.v6_dst[n6] = p.dst_v6();
                    n6 += 1;
                }
            }
        }
        let vrf = t.port_vrf(self.in_port);
        if n4 > 0 {
            let (parsed, idx) = (&s.parsed, &s.v4_idx);
            let hash = |k: usize| pkt::flow_hash(&parsed[usize::from(idx[k])]);
            t.routing
                .lookup4_burst(vrf, &s.v4_dst[..n4], hash, &mut s.v4_out[..n4]);
            for k in 0..n4 {
                s.verdict[usize::from(s.v4_idx[k])] = self.resolved(s.v4_out[k]);
            }
        }
        if n6 > 0 {
            let (parsed, idx) = (&s.parsed, &s.v6_idx);
            let hash = |k: usize| pkt::flow_hash(&parsed[usize::from(idx[k])]);
            t.routing
                .lookup6_burst(vrf, &s.v6_dst[..n6], hash, &mut s.v6_out[..n6]);
            for k in 0..n6 {
                let i = usize::from(s.v6_idx[k]);
                // Link-local destinations are never forwarded (RFC 4291 2.5.6).
                s.verdict[i] = if is_link_local_v6(s.v6_dst[k]) {
                    Verdict::Drop(DropReason::NoRoute)
                } else {
                    self.resolved(s.v6_out[k])
                };
            }
        }
    }

    /// The verdict of a lookup. Forwarding is tested first, as a branch the
    /// predictor learns, rather than through a jump table.
    #[inline(always)]
    fn resolved(&self, r: Resolved) -> Verdict {
        if let Resolved::Forward(nh) = r {
            return Verdict::Forward(nh);
        }
        self.not_forwarded(r)
    }

    #[cold]
    #[inline(never)]
    fn not_forwarded(&self, r: Resolved) -> Verdict {
        match r {
            Resolved::Forward(nh) => Verdict::Forward(nh),
            Resolved::NoRoute => Verdict::Error(DropReason::NoRoute, IcmpError::NetUnreachable),
            Resolved::Blackhole => Verdict::Drop(DropReason::Blackhole),
            Resolved::Reject => Verdict::Error(DropReason::Reject, self.reject),
            Resolved::Local => Verdict::Local,
        }
    }

    /// Stage 4 for the packets in `todo`: egress checks and rewrite; every
    /// verdict is final after it.
    #[inline(always)]
    pub fn act<P: Packets>(&self, pkts: &mut P, s: &mut Scratch, todo: Mask) {
        let t = self.tables;
        let in_mac = t.port_mac(self.in_port).unwrap_or([0; 6]);
        // Packets of a burst mostly share a next hop: resolve it once.
        let mut cached: (u32, Egress) = (u32::MAX, Egress::Drop(DropReason::NoRoute));
        for i in 0..pkts.count() {
            if todo & (1 << i) == 0 {
                continue;
            }
            // The forwarding path inline; everything else out of line, so
            // the compiler keeps this a predicted branch (not a jump table).
            let Verdict::Forward(nh_id) = s.verdict[i] else {
                self.act_other(pkts, s, i, in_mac);
                continue;
            };
            if cached.0 != nh_id {
                cached = (nh_id, egress(t, nh_id));
            }
            let (port, mtu, dst_mac, src_mac, gateway) = match cached.1 {
                Egress::Ok {
                    port,
                    mtu,
                    dst_mac,
                    src_mac,
                    gateway,
                } => (port, mtu, dst_mac, src_mac, gateway),
                Egress::Drop(r) => {
                    s.verdict[i] = Verdict::Drop(r);
                    continue;
                }
            };
            let p = &s.parsed[i];
            if p.ttl <= 1 {
                s.verdict[i] = Verdict::Error(DropReason::TtlExpired, IcmpError::TimeExceeded);
                continue;
            }
            let mut fragment = false;
            if p.l3_len > mtu {
                let df = pkts.frame(i).is_some_and(|f| local::dont_fragment(f, p));
                s.verdict[i] = match p.kind {
                    L3Kind::V4 if !df => {
                        fragment = true;
                        s.verdict[i]
                    }
                    L3Kind::V4 => {
                        Verdict::Error(DropReason::MtuExceeded, IcmpError::FragNeeded { mtu })
                    }
                    L3Kind::V6 => {
                        Verdict::Error(DropReason::MtuExceeded, IcmpError::PacketTooBig { mtu })
                    }
                };
                if !fragment {
                    continue;
                }
            }
            let Some(dst_mac) = dst_mac else {
                s.hold_addr[i] = gateway.unwrap_or_else(|| p.dst_addr());
                s.verdict[i] = Verdict::Hold { port };
                continue;
            };
            let rewritten = pkts
                .frame(i)
                .is_some_and(|f| pkt::forward_rewrite(f, p, dst_mac, src_mac).is_ok());
            s.verdict[i] = match (rewritten, fragment) {
                (false, _) => Verdict::Drop(DropReason::Malformed),
                (true, false) => Verdict::Tx(port),
                (true, true) => Verdict::Fragment { port, mtu },
            };
        }
    }
}

/// The classifier's key of a parsed packet received on `in_port`.
#[inline(always)]
pub fn key_of(p: &Parsed, in_port: u16) -> Key {
    let v6 = p.kind == L3Kind::V6;
    Key {
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
        in_port,
        vlan: p.outer_vlan.unwrap_or(VLAN_NONE),
        dscp: p.dscp,
        tcp_flags: p.tcp_flags,
    }
}

/// Counts packet `i` on `rule` and carries out its actions in order; a
/// verdict action sets `s.verdict[i]`. Rules of one evaluation are applied
/// in precedence order, so of two DSCP rewrites or marks the later
/// (lower-precedence) one is what the packet leaves with, and each mirror
/// action sends its own copy.
#[inline(always)]
fn apply_rule<P: Packets>(
    pkts: &mut P,
    s: &mut Scratch,
    i: usize,
    tally: &mut Tally,
    rc: &mut CounterWriter,
    rule: &RuleEntry,
    clock: Clock,
) {
    let bytes = pkts.wire_len(i);
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
                if let Some(f) = pkts.frame(i) {
                    pkt::set_dscp(f, &s.parsed[i], dscp);
                }
            }
            acl::Action::Mirror { port } => {
                if !pkts.mirror(i, port) {
                    tally.event(Event::MirrorFailed);
                }
            }
            acl::Action::Redirect { port } => {
                s.verdict[i] = Verdict::Tx(port);
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

/// An IPv6 link-local address (fe80::/10), never forwarded.
#[inline(always)]
pub(super) fn is_link_local_v6(dst: u128) -> bool {
    dst >> 118 == 0x3fa
}

/// IPv4 multicast (224.0.0.0/4) or limited broadcast (and class E), or
/// IPv6 multicast (ff00::/8).
#[inline(always)]
pub(super) fn is_multicast(p: &Parsed) -> bool {
    match p.kind {
        L3Kind::V4 => is_multicast_v4(p.dst_v4()),
        L3Kind::V6 => is_multicast_v6(p.dst_v6()),
    }
}

/// [`is_multicast`] of an IPv4 destination (host order): 224.0.0.0/4 and
/// above.
#[inline(always)]
pub(super) fn is_multicast_v4(dst: u32) -> bool {
    dst >= 0xe000_0000
}

/// [`is_multicast`] of an IPv6 destination (host order): ff00::/8.
#[inline(always)]
pub(super) fn is_multicast_v6(dst: u128) -> bool {
    dst >> 120 == 0xff
}

/// [`is_multicast_v6`] or [`is_link_local_v6`] (never routed), as one
/// compare of the address's top 10 bits: fe80::/10 is 0x3fa, ff00::/8
/// 0x3fc to 0x3ff, and with the lowest of the 10 flipped they are 0x3fb
/// to 0x3ff, all above fec0::/10's 0x3fa (the two tests apart were a
/// dozen instructions a packet on the fast path, a test of each range
/// eight).
#[inline(always)]
pub(super) fn is_multicast_or_link_local_v6(dst: u128) -> bool {
    ((dst >> 118) as u32 ^ 1) >= 0x3fb
}

impl Pipeline<'_> {
    /// Multicast and broadcast (never routed): link-scope groups and the
    /// limited broadcast go to the host interface when there is one.
    #[cold]
    #[inline(never)]
    fn multicast(&self, p: &Parsed) -> Verdict {
        let link_scope = match p.kind {
            // 224.0.0.0/24 (RFC 5771 local network control) and
            // 255.255.255.255.
            L3Kind::V4 => (p.dst[..3] == [224, 0, 0]) || p.dst[..4] == [255; 4],
            // ff02::/16 (link-local scope).
            L3Kind::V6 => p.dst[1] & 0x0f == 2,
        };
        if self.host && link_scope {
            Verdict::Punt
        } else {
            Verdict::Drop(DropReason::Local)
        }
    }

    /// Stage 4 for a packet that is not being forwarded.
    #[cold]
    #[inline(never)]
    fn act_other<P: Packets>(&self, pkts: &mut P, s: &mut Scratch, i: usize, in_mac: [u8; 6]) {
        match s.verdict[i] {
            Verdict::Route | Verdict::RouteIn(_) => {
                s.verdict[i] = Verdict::Drop(DropReason::NoRoute);
            }
            Verdict::Local => {
                let p = &s.parsed[i];
                let replied = pkts
                    .frame(i)
                    .is_some_and(|f| pkt::echo_reply_in_place(f, p, in_mac));
                s.verdict[i] = if replied {
                    Verdict::Reply
                } else if self.host {
                    Verdict::Punt
                } else {
                    Verdict::Drop(DropReason::Local)
                };
            }
            // A classifier redirect goes out unchanged, if the port is up.
            Verdict::Tx(port)
                if !self
                    .tables
                    .port(usize::from(port))
                    .is_some_and(|p| p.is_up()) =>
            {
                s.verdict[i] = Verdict::Drop(DropReason::LinkDown);
            }
            _ => {}
        }
    }
}

/// A next hop, ready for transmission, or why it cannot be used.
#[derive(Clone, Copy)]
pub(super) enum Egress {
    Ok {
        port: u16,
        mtu: u16,
        /// `None` while the neighbour is unresolved.
        dst_mac: Option<[u8; 6]>,
        src_mac: [u8; 6],
        gateway: Option<IpAddr>,
    },
    Drop(DropReason),
}

#[inline(always)]
pub(super) fn egress(t: &Tables, id: u32) -> Egress {
    let Some(nh) = t.routing.nexthop(id) else {
        return Egress::Drop(DropReason::NoRoute);
    };
    let Some(out) = t.port(usize::from(nh.port)) else {
        return Egress::Drop(DropReason::BadPort);
    };
    if !out.is_up() {
        return Egress::Drop(DropReason::LinkDown);
    }
    Egress::Ok {
        port: nh.port,
        mtu: out.mtu,
        dst_mac: nh.mac,
        src_mac: out.mac,
        gateway: nh.gateway,
    }
}

#[cfg(test)]
#[path = "pipeline_tests.rs"]
pub(super) mod tests;
