//! The forwarding fast path: routed IPv4 and IPv6 traffic in two passes
//! over the burst, around one batched classification and one batched
//! lookup per family.
//!
//! The general stages ([`super::pipeline`]) give every packet a verdict and
//! pass over the burst once per stage to refine it, so that every case
//! (neighbour protocols, local delivery, ICMP errors, fragmentation, the
//! host path) has its place. For the common packet (plain IPv4 or IPv6,
//! unicast, routed to a resolved next hop on an up port, TTL > 1, within
//! the MTU) that costs more than the work itself. Here:
//!
//! 1. recognise the common frame ([`pkt::plain_v4`]: untagged IPv4
//!    without options, not a fragment, header checksum good;
//!    [`pkt::plain_v6`]: untagged IPv6 without extension headers, not to a
//!    link-local address, not neighbour discovery; UDP, TCP or any other
//!    upper-layer protocol: ICMP, ESP, GRE...; one pass a family, the
//!    first frame's family first), leave multicast, and list the rest by
//!    family with their destinations; while rules are loaded,
//!    the classifier's key of each, read from the frame at its fixed
//!    offsets, in the form the flow cache keeps it ([`acl::Flow4`],
//!    [`acl::Flow6`]). The rest of the path reads the frame at its fixed
//!    offsets too (no [`pkt::Parsed`]), and an ECMP group's flow hash
//!    reads the tuple from the frame's words when asked;
//! 2. while rules are loaded, one
//!    [`Classifier::classify_burst_cached4`](crate::acl::Classifier::classify_burst_cached4)
//!    of the IPv4 keys and one
//!    [`Classifier::classify_burst_cached6`](crate::acl::Classifier::classify_burst_cached6)
//!    of the IPv6 ones (through the worker's flow cache,
//!    [`crate::acl::FlowCache`]): a packet goes on only if its first match
//!    merely permits ([`RuleEntry::only_permits`]) or nothing matches. The
//!    matches stay beside their candidates, in the lists' order, and a
//!    burst whose matches all go on (the common one) is kept as it is, one
//!    pass that moves nothing;
//! 3. one [`Routing::lookup4_burst`](crate::route::Routing::lookup4_burst)
//!    and one `lookup6_burst`;
//! 4. per family (one loop without next-hop changes when the whole
//!    family's candidates found one), the plain frame's rewrite
//!    ([`pkt::forward_plain_v4`]:
//!    TTL and MTU checks, TTL and checksum, the next hop's MAC pair in two
//!    stores), trim the Ethernet padding, count the rules' hits (a run of
//!    packets on one rule at once) and mark `Tx` what forwards (only when
//!    the burst does not go out whole to one port: then each verdict is
//!    that port's `Tx` without a store, see [`Pipeline::fast`]).
//!
//! A packet stops at the first condition it fails and is left unchanged to
//! the general stages, which decide it from scratch: the fast path only
//! ever takes packets for which the general stages would produce the very
//! same rewrite and `Tx` verdict (a property test runs both on the same
//! bursts).

use crate::acl::{self, CounterWriter, RuleEntry, Slot};
use crate::dpdk::mbuf::BURST;
use crate::pkt;
use crate::route::Resolved;

use super::local;
use super::pipeline::{
    egress, is_multicast_or_link_local_v6, is_multicast_v4, key_of, Clock, Egress, Packets,
    Pipeline, Scratch, Tally, Verdict,
};

/// A set of packets of a burst: bit `i` is packet `i`.
pub type Mask = u32;

static_assertions::const_assert!(BURST <= Mask::BITS as usize);

/// The indices of a set's bits in increasing order: a [`Mask`]'s packets in
/// burst order.
pub struct Bits(pub Mask);

impl Iterator for Bits {
    type Item = usize;

    #[inline(always)]
    fn next(&mut self) -> Option<usize> {
        if self.0 == 0 {
            return None;
        }
        let i = self.0.trailing_zeros() as usize;
        self.0 &= self.0 - 1;
        Some(i)
    }
}

/// What the fast path leaves of a burst.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Left {
    /// The packets for the general stages.
    pub rest: Mask,
    /// When the fast path forwarded every packet of the burst to one
    /// port: the burst can go to the driver as it is. ([`Pipeline::fast`]
    /// then leaves the verdicts unwritten.)
    pub whole: Option<Whole>,
}

/// A burst forwarded whole to one port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Whole {
    /// The port every packet goes to (`Tx`).
    pub port: u16,
    /// The burst's bytes as it goes out (the frames' lengths after their
    /// padding was trimmed): the port's transmitted bytes, which the poll
    /// loop then need not add up from the mbufs.
    pub bytes: u64,
}

/// The first `n` packets.
#[inline(always)]
pub fn first(n: usize) -> Mask {
    if n >= Mask::BITS as usize {
        Mask::MAX
    } else {
        (1 << n) - 1
    }
}

impl Pipeline<'_> {
    /// Forwards what it can of the burst (`s.verdict[i] = Tx(port)`, frame
    /// rewritten, received bytes and rule hits counted) and returns what
    /// it left for the general stages. A burst it forwards whole
    /// ([`Left::whole`]) keeps the verdicts it had: each packet's is `Tx`
    /// of that port, and the poll loop, which then sends the burst as it
    /// is, never reads them (two stores and a load a packet, in a loop that
    /// spilled the port to the stack for them).
    #[inline(always)]
    pub fn fast<P: Packets>(
        &self,
        pkts: &mut P,
        s: &mut Scratch,
        tally: &mut Tally,
        rc: &mut CounterWriter,
        clock: Clock,
    ) -> Left {
        if self.tables.acl.is_empty() {
            self.fast_with::<P, false>(pkts, s, tally, rc, clock)
        } else {
            self.fast_with::<P, true>(pkts, s, tally, rc, clock)
        }
    }

    /// [`Pipeline::fast`], `RULES` saying whether rules are loaded: only
    /// then is each candidate's key read, the candidates classified, and
    /// their rule hits counted.
    #[inline(always)]
    fn fast_with<P: Packets, const RULES: bool>(
        &self,
        pkts: &mut P,
        s: &mut Scratch,
        tally: &mut Tally,
        rc: &mut CounterWriter,
        clock: Clock,
    ) -> Left {
        let n = pkts.count();
        let t = self.tables;
        let rest = first(n);
        if !t.port(self.in_port).is_some_and(|p| p.is_up()) {
            return Left { rest, whole: None };
        }
        // Every frame's first line is asked for before the first is read,
        // so that their loads overlap (l3fwd prefetches the first few
        // packets of a burst before its loop; the whole burst ran ~3% faster
        // than one packet ahead, `bench-results/throughput.md`).
        for i in 0..n {
            pkts.prefetch(i);
        }
        if CUTOFF == Cutoff::Rx {
            return self.cut(pkts, s, rest, rest);
        }
        // The candidates by family, in burst order; with rules loaded, the
        // key of each (the IPv4 ones', then the IPv6 ones').
        let (mut n4, mut n6) = recognise::<P, RULES>(pkts, s, n, self.in_port as u16);
        if CUTOFF == Cutoff::Parse {
            return self.cut(pkts, s, listed(s, n4, n6), rest);
        }
        // The first match of each candidate that goes on, in its list's
        // order: IPv4 ones from 0, IPv6 ones from `n4` as recognised (None:
        // no match, or no rules).
        let mut found: [Option<&RuleEntry>; BURST] = [None; BURST];
        let at6 = n4;
        if RULES && n4 + n6 > 0 {
            let (f4, f6) = found.split_at_mut(n4);
            if n4 > 0 {
                t.acl
                    .classify_burst_cached4(&s.flows4[..n4], f4, &mut s.flows);
                n4 = keep_permitted(&mut s.v4_idx, &mut s.v4_dst, f4);
            }
            if n6 > 0 {
                t.acl
                    .classify_burst_cached6(&s.flows6[..n6], &mut f6[..n6], &mut s.flows);
                n6 = keep_permitted(&mut s.v6_idx, &mut s.v6_dst, &mut f6[..n6]);
            }
        }
        if CUTOFF == Cutoff::Classify {
            return self.cut(pkts, s, listed(s, n4, n6), rest);
        }
        // Per family, the next hop when every candidate found the same.
        let vrf = t.port_vrf(self.in_port);
        let (mut one4, mut one6) = (None, None);
        if n4 > 0 {
            let idx = &s.v4_idx;
            let hash = |k: usize| flow_hash_of::<P, false>(pkts, idx[k]);
            one4 = t
                .routing
                .lookup4_burst(vrf, &s.v4_dst[..n4], hash, &mut s.v4_out[..n4]);
        }
        if n6 > 0 {
            let idx = &s.v6_idx;
            let hash = |k: usize| flow_hash_of::<P, true>(pkts, idx[k]);
            one6 = t
                .routing
                .lookup6_burst(vrf, &s.v6_dst[..n6], hash, &mut s.v6_out[..n6]);
        }
        if CUTOFF == Cutoff::Lookup {
            let found = (s.v4_idx[..n4].iter().zip(&s.v4_out[..n4]))
                .chain(s.v6_idx[..n6].iter().zip(&s.v6_out[..n6]));
            let m = found.fold(0, |m, (&i, r)| {
                m | Mask::from(matches!(r, Resolved::Forward(_))) << i
            });
            return self.cut(pkts, s, m, rest);
        }
        let mut out = Forwarded {
            rest,
            to: None,
            mixed: false,
            run: HitRun::default(),
            cached: (u32::MAX, None),
            unwritten: [(0, 0); 2],
            trimmed: 0,
        };
        // The received bytes counted so far: what `forward` adds to them is
        // the bytes of the packets it forwards.
        let rx_before = tally.rx_bytes;
        let (v4, v6) = (
            (&s.v4_idx[..n4], &s.v4_out[..n4], &found[..n4]),
            (&s.v6_idx[..n6], &s.v6_out[..n6], &found[at6..at6 + n6]),
        );
        let mut step = Step {
            tables: t,
            hops: &mut s.hops,
            verdict: &mut s.verdict,
            tally,
            rc,
            tick: clock.tick_ms,
            out: &mut out,
        };
        step.forward::<P, false, RULES>(pkts, v4, one4);
        step.forward::<P, true, RULES>(pkts, v6, one6);
        out.run.flush(rc, clock.tick_ms);
        let whole = match out.to {
            Some(port) if out.rest == 0 && !out.mixed => Some(Whole {
                port,
                bytes: tally.rx_bytes - rx_before - out.trimmed,
            }),
            _ => None,
        };
        if whole.is_none() {
            for (m, port) in out.unwritten {
                for i in Bits(m) {
                    s.verdict[i] = Verdict::Tx(port);
                }
            }
        }
        Left {
            rest: out.rest,
            whole,
        }
    }

    /// A stage-cutoff build's end of the fast path: the packets of `m`
    /// (a subset of `rest`) go to port `in_port ^ 1` unchanged; the rest
    /// of `rest` is left to the general stages.
    #[inline(always)]
    fn cut<P: Packets>(&self, pkts: &P, s: &mut Scratch, m: Mask, rest: Mask) -> Left {
        let port = (self.in_port ^ 1) as u16;
        let mut bytes = 0;
        for i in Bits(m) {
            s.verdict[i] = Verdict::Tx(port);
            bytes += u64::from(pkts.wire_len(i));
        }
        let rest = rest & !m;
        Left {
            rest,
            whole: (rest == 0 && m != 0).then_some(Whole { port, bytes }),
        }
    }
}

/// The packets on the candidate lists (the first `n4` and `n6`), as a set.
#[inline(always)]
fn listed(s: &Scratch, n4: usize, n6: usize) -> Mask {
    let idx = s.v4_idx[..n4].iter().chain(&s.v6_idx[..n6]);
    idx.fold(0, |m, &i| m | 1 << i)
}

/// Where the fast path of a stage-cutoff build stops
/// (`deploy/bench/stages.sh`): such a build, made with `FWD_FAST_CUTOFF`
/// set at compile time, sends what passed the stages before the cutoff
/// out unchanged, so that the forwarding rates of the cutoffs, side by
/// side, give each stage's cost in the real loop. Not for use: it forwards
/// without rewriting. [`Cutoff::None`] (the variable unset) in every other
/// build, where the checks compile away.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Cutoff {
    None,
    /// After the receive: every packet of the burst.
    Rx,
    /// After recognition: the plain unicast candidates.
    Parse,
    /// After the classification (while rules are loaded): the candidates
    /// whose first match permits, or that match nothing.
    Classify,
    /// After the route lookup: the candidates with a next hop.
    Lookup,
}

const CUTOFF: Cutoff = cutoff(option_env!("FWD_FAST_CUTOFF"));

const fn cutoff(v: Option<&str>) -> Cutoff {
    match v {
        None => Cutoff::None,
        Some(v) => match v.as_bytes() {
            b"" => Cutoff::None,
            b"rx" => Cutoff::Rx,
            b"parse" => Cutoff::Parse,
            b"classify" => Cutoff::Classify,
            b"lookup" => Cutoff::Lookup,
            _ => panic!("FWD_FAST_CUTOFF must be rx, parse, classify or lookup"),
        },
    }
}

/// Consecutive hits on one rule, counted with one counter update: the
/// packets of a burst mostly match the same rule, and a counter updated
/// per packet is a chain of dependent loads and stores.
#[derive(Default)]
struct HitRun {
    slot: Option<Slot>,
    packets: u64,
    bytes: u64,
}

impl HitRun {
    #[inline(always)]
    fn add(&mut self, slot: Slot, bytes: u64, rc: &mut CounterWriter, tick: u64) {
        if self.slot != Some(slot) {
            self.flush(rc, tick);
            self.slot = Some(slot);
        }
        self.packets += 1;
        self.bytes += bytes;
    }

    #[inline(always)]
    fn flush(&mut self, rc: &mut CounterWriter, tick: u64) {
        if let Some(slot) = self.slot.take() {
            rc.hits(slot, self.packets, self.bytes, tick);
            self.packets = 0;
            self.bytes = 0;
        }
    }
}

/// Step 4 over one family's candidates.
struct Step<'a, 't> {
    tables: &'t crate::tables::Tables,
    hops: &'a mut Hops,
    verdict: &'a mut [Verdict; BURST],
    tally: &'a mut Tally,
    rc: &'a mut CounterWriter,
    tick: u64,
    out: &'a mut Forwarded,
}

impl Step<'_, '_> {
    /// Forwards the packets `idx` (IPv6 ones when `V6`) whose lookup
    /// (`found`; `one`: the next hop when every lookup found it) gave a
    /// ready next hop and that the plain frame's rewrite
    /// ([`pkt::forward_plain_v4`] or `_v6`) takes; counts their rule hits
    /// (`rule`, in `idx`'s order) when `RULES` (rules are loaded). The
    /// per-packet work is the rewrite and the verdict: what is forwarded
    /// is collected as a set and taken from `rest` once, and the ports are
    /// followed where the next hop changes.
    #[inline(always)]
    fn forward<P: Packets, const V6: bool, const RULES: bool>(
        &mut self,
        pkts: &mut P,
        (idx, found, rule): (&[u8], &[Resolved], &[Option<&RuleEntry>]),
        one: Option<u32>,
    ) {
        let mut done: Mask = 0;
        let mut bytes = 0u64;
        match one {
            // The common burst: every candidate via one next hop. Its loop
            // has no next hop to follow, and fewer values to keep: the
            // loop below spilled a dozen of them to the stack a packet.
            // Its verdicts are written only if the burst is not forwarded
            // whole (see `Pipeline::fast`).
            Some(nh) => {
                if let Some(hop) = self.hop(nh) {
                    (done, bytes) = self.via_one::<P, V6, RULES>(pkts, idx, rule, &hop);
                    self.out.unwritten[usize::from(V6)] = (done, hop.port);
                }
            }
            None => {
                for (k, (&i, &r)) in idx.iter().zip(found).enumerate() {
                    let Resolved::Forward(nh) = r else {
                        continue;
                    };
                    let Some(hop) = self.hop(nh) else {
                        continue;
                    };
                    let rule = rule.get(k).copied().flatten();
                    self.one::<P, V6, RULES, true>(pkts, i, &hop, rule, &mut done, &mut bytes);
                }
            }
        }
        self.tally.rx_bytes += bytes;
        self.out.rest &= !done;
    }

    /// [`Step::forward`]'s loop for candidates that all go via `hop`:
    /// returns the packets forwarded and their received bytes; their
    /// verdicts are left to the caller. Out of line: its own registers,
    /// where inside the poll loop's one function it kept the received
    /// bytes, the MTU and a MAC word on the stack (IPv6 x1.021 in a loop
    /// A/B for one more instruction a packet; the recognition pass out of
    /// line as well, x1.003: not done, `bench-results/counts.md`).
    #[inline(never)]
    fn via_one<P: Packets, const V6: bool, const RULES: bool>(
        &mut self,
        pkts: &mut P,
        idx: &[u8],
        rule: &[Option<&RuleEntry>],
        hop: &Hop,
    ) -> (Mask, u64) {
        let (mut done, mut bytes) = (0, 0);
        for (k, &i) in idx.iter().enumerate() {
            let rule = rule.get(k).copied().flatten();
            self.one::<P, V6, RULES, false>(pkts, i, hop, rule, &mut done, &mut bytes);
        }
        (done, bytes)
    }

    /// Next hop `nh` when it is ready (see [`Forwarded::cached`]), and
    /// where the ports are followed: every packet after this one that is
    /// forwarded goes out of its port until the next change. (A hop whose
    /// packets then all fail leaves a packet in `rest`, and a burst with
    /// one there is not sent whole, see `Pipeline::fast`.)
    #[inline(always)]
    fn hop(&mut self, nh: u32) -> Option<Hop> {
        let out = &mut *self.out;
        if out.cached.0 != nh {
            out.cached = (nh, self.hops.get(self.tables, nh));
            if let Some(hop) = out.cached.1 {
                if out.to != Some(hop.port) {
                    out.mixed |= out.to.is_some();
                    out.to = Some(hop.port);
                }
            }
        }
        out.cached.1
    }

    /// Forwards packet `i` via `hop` if the plain frame's rewrite takes it:
    /// its bit in `done`, its received bytes in `bytes`, its hit on `rule`
    /// when `RULES` (`rule` is None otherwise), its verdict when `VERDICT`
    /// (the caller writes it otherwise).
    #[inline(always)]
    fn one<P: Packets, const V6: bool, const RULES: bool, const VERDICT: bool>(
        &mut self,
        pkts: &mut P,
        i: u8,
        hop: &Hop,
        rule: Option<&RuleEntry>,
        done: &mut Mask,
        bytes: &mut u64,
    ) {
        // Below BURST (a burst index, from step 1): said so, the verdict's
        // index needs no check of its own (an `and` for a compare and a
        // branch).
        let i = usize::from(i) % BURST;
        let Some(frame) = pkts.frame(i) else {
            return;
        };
        // One segment (step 1), so the frame's length is the wire length.
        let len = frame.len();
        let end = if V6 {
            pkt::forward_plain_v6(frame, hop.mtu, hop.eth)
        } else {
            pkt::forward_plain_v4(frame, hop.mtu, hop.eth)
        };
        let Some(end) = end else {
            return;
        };
        // Received bytes as the general parse counts them: before trimming.
        *bytes += len as u64;
        if len > end {
            pkts.trim_to(i, end);
            self.out.trimmed += (len - end) as u64;
        }
        if let (true, Some(r)) = (RULES, rule) {
            // What the general classify counts: the trimmed length.
            self.out
                .run
                .add(r.slot(), len.min(end) as u64, self.rc, self.tick);
        }
        if VERDICT {
            self.verdict[i] = Verdict::Tx(hop.port);
        }
        *done |= 1 << i;
    }
}

/// What the forwarding pass has done so far.
struct Forwarded {
    /// The packets still for the general stages.
    rest: Mask,
    /// The port the packets forwarded so far go to, and whether to more
    /// than one.
    to: Option<u16>,
    mixed: bool,
    /// Their rule hits, a run of packets on one rule counted at once.
    run: HitRun,
    /// Packets of a burst mostly share a next hop: the last one's, taken
    /// again without asking [`Hops`].
    cached: (u32, Option<Hop>),
    /// Per family (IPv4, IPv6), the packets forwarded by the one-next-hop
    /// loop and their port: their verdicts, to be written unless the burst
    /// goes whole.
    unwritten: [(Mask, u16); 2],
    /// The bytes trimmed off the packets forwarded (Ethernet padding,
    /// rare): their received bytes (in the tally) less these are what goes
    /// out.
    trimmed: u64,
}

/// The next hops the fast path resolved ([`ready`]), kept across bursts
/// for as long as the tables are the same value ([`Tables::uid`]): a
/// router's traffic goes to several next hops in no order, and resolving
/// one (its entry in the next-hop table, its port, its MAC pair) took ~80
/// instructions a packet when the packets of a burst took turns between 16
/// (`bench_pkt`'s "16 next hops" cases, `bench-results/throughput.md`,
/// 2026-12-06). Direct-mapped by next-hop id; a slot answers only for the
/// uid it was filled under, so a new version of the tables (a neighbour's
/// MAC, a port going down) is seen at once, without a flush.
///
/// [`Tables::uid`]: crate::tables::Tables::uid
pub(crate) struct Hops {
    slots: [HopSlot; HOP_SLOTS],
}

/// Slots of [`Hops`].
const HOP_SLOTS: usize = 64;

#[derive(Clone, Copy)]
struct HopSlot {
    /// The [`Tables::uid`](crate::tables::Tables::uid) it was filled under
    /// (0, which no tables have: empty).
    uid: u64,
    nh: u32,
    hop: Option<Hop>,
}

impl Default for Hops {
    fn default() -> Self {
        Hops {
            slots: [HopSlot {
                uid: 0,
                nh: 0,
                hop: None,
            }; HOP_SLOTS],
        }
    }
}

impl Hops {
    /// [`ready`]`(t, nh)`, from the slot when it was filled under `t`.
    #[inline(always)]
    fn get(&mut self, t: &crate::tables::Tables, nh: u32) -> Option<Hop> {
        let slot = &mut self.slots[nh as usize % HOP_SLOTS];
        if slot.uid != t.uid() || slot.nh != nh {
            *slot = HopSlot {
                uid: t.uid(),
                nh,
                hop: ready(t, nh),
            };
        }
        slot.hop
    }
}

/// A next hop ready for the fast path: up, its neighbour resolved.
#[derive(Clone, Copy)]
struct Hop {
    port: u16,
    mtu: u16,
    /// The Ethernet addresses to write.
    eth: pkt::MacPair,
}

#[inline(always)]
fn ready(t: &crate::tables::Tables, nh: u32) -> Option<Hop> {
    let Egress::Ok {
        port,
        mtu,
        dst_mac: Some(dst),
        src_mac,
        ..
    } = egress(t, nh)
    else {
        return None;
    };
    let eth = pkt::MacPair::new(dst, src_mac);
    Some(Hop { port, mtu, eth })
}

/// The flow hash of packet `i`, a frame of the family `V6` says that step
/// 1 recognised (and nothing has changed since): an ECMP group's lanes ask
/// for it, and only these lanes read the tuple.
#[inline(always)]
fn flow_hash_of<P: Packets, const V6: bool>(pkts: &mut P, i: u8) -> u32 {
    let Some(f) = pkts.frame(usize::from(i)) else {
        return 0;
    };
    if V6 {
        pkt::PlainV6::again(f).map_or(0, |h| h.flow_hash())
    } else {
        pkt::PlainV4::again(f).map_or(0, |h| h.flow_hash())
    }
}

/// Step 1: lists the plain unicast frames by family (index and
/// destination) and, when `RULES` (rules are loaded), writes the key of
/// each (received on `port`) in its list's order and the flow cache's
/// form: the IPv4 candidates' to `s.flows4`, the IPv6 ones' to
/// `s.flows6`. Multicast, broadcast and
/// link-local IPv6 destinations, and ICMPv6 neighbour discovery, are the
/// general stages'.
///
/// One pass a family: the family of the burst's first frame over every
/// frame, then the other over the frames that the first did not take.
/// (One pass trying both on each frame kept the second family's registers
/// live through the first's, which spilled and restored ~20 values a
/// packet: `bench-results/counts.md`, 2026-12-07.)
#[inline(always)]
fn recognise<P: Packets, const RULES: bool>(
    pkts: &mut P,
    s: &mut Scratch,
    n: usize,
    port: u16,
) -> (usize, usize) {
    let v6_first = pkts
        .frame(0)
        .is_some_and(|f| pkt::ether_type(f) == Some(pkt::ethertype::IPV6));
    if v6_first {
        let (n6, rest) = pass::<P, true, RULES>(pkts, s, 0..n, port);
        (pass::<P, false, RULES>(pkts, s, Bits(rest), port).0, n6)
    } else {
        let (n4, rest) = pass::<P, false, RULES>(pkts, s, 0..n, port);
        (n4, pass::<P, true, RULES>(pkts, s, Bits(rest), port).0)
    }
}

/// [`recognise`]'s pass over the frames `todo` (in burst order) for one
/// family (IPv6 when `V6`): lists its candidates; returns how many, and
/// the frames of `todo` not of the family's plain form.
#[inline(always)]
fn pass<P: Packets, const V6: bool, const RULES: bool>(
    pkts: &mut P,
    s: &mut Scratch,
    todo: impl Iterator<Item = usize>,
    port: u16,
) -> (usize, Mask) {
    let mut others: Mask = 0;
    let mut k = 0;
    for i in todo {
        let Some((frame, nic_csum)) = pkts.single(i) else {
            continue;
        };
        if V6 {
            let Some(h) = pkt::plain_v6(frame) else {
                others |= 1 << i;
                continue;
            };
            let dst = h.dst();
            // Link-local is ours or never forwarded; neighbour discovery
            // is the general stages' whatever its destination.
            let nd = h.icmp_type().is_some_and(|t| local::is_nd_type(t.into()));
            if is_multicast_or_link_local_v6(dst) || nd {
                continue;
            }
            if RULES {
                // In the flow cache's form (never None for an IPv6 key).
                let Some(f) = acl::Flow6::of(&key_of(&h.parsed(), port)) else {
                    continue;
                };
                s.flows6[k] = f;
            }
            s.v6_idx[k] = i as u8;
            s.v6_dst[k] = dst;
        } else {
            let Some(h) = pkt::plain_v4(frame, nic_csum) else {
                others |= 1 << i;
                continue;
            };
            let dst = h.dst();
            if is_multicast_v4(dst) {
                continue;
            }
            if RULES {
                // Only the key's fields of the parse are computed, and
                // packed as the flow cache keeps them (always an IPv4 key:
                // `of` is never None here).
                let Some(f) = acl::Flow4::of(&key_of(&h.parsed(), port)) else {
                    continue;
                };
                s.flows4[k] = f;
            }
            s.v4_idx[k] = i as u8;
            s.v4_dst[k] = dst;
        }
        k += 1;
    }
    (k, others)
}

/// Keeps, in order, the candidates (`idx`, `dst`) whose first match
/// (`found`, one per candidate, kept beside them) merely permits or is
/// none; returns how many are kept. Where every one is (the common
/// burst), one pass without a store.
#[inline(always)]
fn keep_permitted<T: Copy>(
    idx: &mut [u8; BURST],
    dst: &mut [T; BURST],
    found: &mut [Option<&RuleEntry>],
) -> usize {
    let goes_on = |hit: &Option<&RuleEntry>| hit.is_none_or(|r| r.only_permits());
    if found.iter().all(goes_on) {
        return found.len();
    }
    let mut kept = 0;
    for k in 0..found.len() {
        if goes_on(&found[k]) {
            idx[kept] = idx[k];
            dst[kept] = dst[k];
            found[kept] = found[k];
            kept += 1;
        }
    }
    kept
}

#[cfg(test)]
#[path = "fast_tests.rs"]
mod tests;
