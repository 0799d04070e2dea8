//! N-tuple packet classifier (ACL): rule model, versions, lookups, counters.
//!
//! # Contract
//!
//! * **Rules** ([`Rule`]): caller-chosen stable `id`, explicit `priority`
//!   (**lower value = higher precedence**, ties broken by lower id), a
//!   [`RuleMatch`] on src/dst prefix (v4, v6, or family-agnostic when both
//!   are wildcards), protocol value/mask, src/dst port ranges, ingress port,
//!   VLAN, DSCP and TCP-flags value/mask, and an action list; lists end in
//!   at most one terminal action (Permit/Drop/Redirect). Validation
//!   rejects (never normalises) host bits, out-of-range values and
//!   contradictory action lists ([`RuleError`]).
//! * **Evaluation** (iptables / nftables semantics): a rule *has a verdict*
//!   ([`Rule::has_verdict`]) when its list holds Permit, Drop, Redirect,
//!   SetNextHop, SetTable or Police (which passes or drops), or is empty
//!   (= Permit). A rule without one (only Count, Mirror, SetDscp, Mark)
//!   does not end evaluation. Matching rules are taken in precedence
//!   order: each one's actions apply, in list order, and its counter
//!   counts the packet; the first one with a verdict ends evaluation (its
//!   actions are the last applied); if none matches, the default is Permit
//!   (to routing). Because everything applies in precedence order, two
//!   mirrors send two copies and of two SetDscp (or Mark) the later,
//!   lower-precedence one is what the packet leaves with. Bound: at most
//!   [`MAX_CONTINUE`] (8) rules without a verdict apply to one packet; if
//!   one more matches, evaluation stops there and the caller drops the
//!   packet (fail closed: `acl_chain_cut`), so no rule set makes an evaluation cost more than
//!   9 lookups. [`Classifier::chain`] returns that list ([`Chain`]),
//!   [`effective`] is its definition.
//! * **Versions** ([`Classifier`]) are immutable and persistent. The control
//!   thread's [`ClassifierWriter::apply`] turns a batch of [`Update`]s into a
//!   new `Arc<Classifier>` that shares every untouched part with the previous
//!   one; a batch is all-or-nothing and becomes visible only with the version
//!   that carries it (publish it through the QSBR root). Old versions are
//!   never affected by new ones.
//! * **Lookups** ([`Classifier::classify`], [`Classifier::classify_burst`])
//!   read immutable memory only: no allocation, no lock, no atomic, no write
//!   to shared memory. A match is a `&RuleEntry` (8 bytes), giving the
//!   rule's [`Slot`] (for counters), its action list and
//!   [`RuleEntry::has_verdict`]. Only a match without a verdict costs more:
//!   [`Classifier::chain`] continues with scalar
//!   [`Classifier::classify_after`] lookups (the same trees and overlay,
//!   with a lower bound on the precedence), so rule sets without such
//!   rules pay one well-predicted branch per packet.
//!   [`Classifier::classify_burst_cached`] answers the same through a
//!   worker's own [`FlowCache`] (an exact-match cache of recent keys,
//!   valid only for the version that filled it); the cache is the one
//!   thing a lookup writes, and only its owner ever touches it.
//!   [`Classifier::classify_burst_cached4`] and
//!   [`Classifier::classify_burst_cached6`] take keys already in the
//!   cache's form ([`Flow4`], [`Flow6`]), as the fast path writes them.
//! * **Counters** ([`CounterSet`], [`CounterWriter`]): per worker, per slot,
//!   single writer, summed on read; `last_used` stored at most once per tick.
//!   Slots of deleted rules ([`Applied::retired_slots`]) are reused only after
//!   the control side calls [`ClassifierWriter::release_slots`] once the
//!   versions that referenced them are reclaimed (a worker on an older
//!   version still counts and polices on them). So there are
//!   [`Config::slots`] = 2 x [`Config::capacity`] slots: live rules are
//!   bounded by the capacity, and an atomic swap of a full set (flush plus
//!   `capacity` inserts, one batch) takes fresh slots. A second full swap
//!   before the first one's slots are released is refused with
//!   [`UpdateError::SlotsPending`] (retry after reclamation).
//!
//! # Design: tree base + tuple-space overlay (an LSM-like hybrid)
//!
//! A version is `base` (an immutable decision tree built from a snapshot of
//! the rules) + `dead` (bitmap of base rules deleted/replaced since) +
//! `overlay` (a TupleMerge-style tuple space holding rules inserted or
//! replaced since). A lookup descends the tree, scans the leaf's candidate
//! list in precedence order skipping dead rules, then probes the overlay
//! tuples whose best rule could still beat that result (priority-sorted
//! tuple pruning; zero cost while the overlay is empty).
//!
//! * Single-rule insert/replace: the overlay copies the one tuple it touches
//!   (`Arc::make_mut`, once per batch). Delete of a base rule: one bit in a
//!   copied bitmap (n/8 bytes). No tree work, so updates cost microseconds
//!   and never wait for readers.
//! * When the overlay grows ([`ClassifierWriter::needs_rebuild`]), the
//!   control side takes a [`RebuildJob`] (a snapshot of `Arc`s), runs it on
//!   any thread, and [`ClassifierWriter::install`]s the result; changes made
//!   meanwhile are carried over into the new version's overlay/dead set by
//!   pointer identity, so a rebuild never blocks lookups or updates. Large
//!   batches (`sync_rebuild_batch`) rebuild the base directly.
//! * The base is, per address family, three trees over disjoint groups
//!   of rules (`groups.rs`; more where a group is split, below): specific
//!   source (a prefix fixing >= 16 bits past what every source prefix of
//!   the family shares: /16 for a typical IPv4 set, /48 for an IPv6 set
//!   inside one /32), wild source but specific destination, both wild.
//!   Without this split a wild
//!   rule is copied into every child of every address split (acl2_10k: 17M
//!   nodes / 1.7 GB; with it: 5.4k nodes / 4 MB). Trees are searched in
//!   order of their best rule and skipped once the match so far beats them.
//! * A tree's build has a budget (nodes and leaf entries: 128 per rule plus
//!   64Ki). A group that goes past it is split by the fields its rules
//!   leave wide (ports, then addresses, then protocol), one tree a part;
//!   a part no field separates is built without splits (whole leaves
//!   scanned). So no rule set makes memory grow faster than its rules:
//!   rules crossed on the two ports built 944 MB for 8,000 before; 50,000
//!   now build two trees of 5 MB.
//! * Each tree (see `tree.rs`) is a HyperSplit-style range-split tree with
//!   up-to-16-way nodes of one cache line each (chains of two-way nodes
//!   packed three levels to a line), a 64Ki-entry first level on
//!   the top 16 bits of the group's address when that splits without
//!   replication, and leaves whose candidates are copied contiguously.
//!   Leaves keep every intersecting rule (no redundancy pruning), which is
//!   what makes "mark dead" a correct delete. IPv4 and IPv6 have separate
//!   trees over 8 and 14 `u32` dimensions; fields a box cannot express
//!   exactly (proto and TCP flags under arbitrary masks) are checked at the
//!   leaf. A leaf candidate is one 64-byte record in both families (IPv6:
//!   the high 64 address bits as value/mask, /65+ tails in a side table).
//! * The writer's own state (id -> rule map, slot free list) is not part of
//!   any version: only lookup structures are shared with workers.
//!
//! # Measured (bench_acl, 2-vCPU AMD EPYC VM, noisy; details and the runs
//! in `bench-results/acl.md`)
//!
//! * Lookup, burst 32, ClassBench traces: 52-62 ns/packet on the acl1 sets,
//!   66-69 ns on acl2. rte_acl's best method (AVX-512) on a quiet run of the
//!   same VM: 31-37 ns and 45-58 ns, so this is 1.2-1.9x slower -- the one
//!   goal not met. Tuple space alone (the same overlay code holding every
//!   rule): 110-690 ns/packet, 35-71 tuples.
//! * Rules without a verdict (issue 11 runs in `bench-results/acl.md`):
//!   the worker's evaluation costs the lookup plus one scalar
//!   `classify_after` (~150-250 ns) per matched rule without a verdict;
//!   with none in the set the difference is within the noise (69 vs 67 ns).
//! * Build of 10k rules 9-37 ms (rte_acl 340-2600 ms); 50k: 100-160 ms.
//!   Single-rule insert p99 ~4 us, delete p99 < 1 us; 100k updates in one
//!   batch (50k-rule set, full reload) 90-220 ms. Lookup structures
//!   1.5-3.7 MB per 10k set (rte_acl 17-39 MB).
//!
//! Why not only TupleMerge: its lookups probe tens of tuples per packet,
//! 3-8x slower than the tree here. Why not only a tree: a rebuild takes
//! milliseconds, too slow per rule and it would copy the whole classifier
//! per update. The hybrid keeps tree-speed lookups and tuple-space update
//! cost. What a burst lookup costs: ~half compute (about 31 ns on a
//! cache-hot trace), ~half cache misses on the 2-4 nodes and the leaf of a
//! random header. The descent prefetches each lane's next node and its
//! leaf's first lines ([`crate::arch::prefetch`]); a leaf's candidates,
//! four at a time, are compared with SSE2 ([`crate::arch::quad_hits`]),
//! which every x86_64 CPU has, and a node's 16 thresholds in one AVX-512
//! compare where the CPU has AVX-512F and the process allows it (the
//! daemon: DPDK's max SIMD bitwidth 512, [`crate::arch::allow_simd_bits`]),
//! in two AVX2 ones where it has the x86-64-v3 instructions (the daemon's
//! default bitwidth 256; the whole burst is then compiled with BMI2's
//! shifts too: -12 to -16% instructions a lookup), in four SSE2 ones otherwise (a
//! burst is dispatched once, [`crate::arch::dispatch`]; AVX-512 made the
//! 10k sets 4-11% faster, `bench-results/acl.md`). On 50k and 100k sets (14-24 MB of trees, ~1.2
//! trees, ~3.5 nodes and ~10 leaf checks per lookup) lookups are still
//! 2.3-2.7x rte_acl's AVX-512 ones (`bench-results/acl_large.md`).

mod chain;
mod classbench;
mod classifier;
mod compiled;
mod counters;
mod flow_cache;
mod groups;
mod order;
mod overlay;
mod reference;
mod rule;
mod tree;

#[cfg(test)]
mod tests;

pub use chain::{Chain, MAX_CONTINUE};
pub use classbench::{parse_rules, parse_trace, ParseError, TraceEntry, TraceTag};
pub use classifier::{
    Applied, BatchError, Classifier, ClassifierStats, ClassifierWriter, Config, RebuildJob,
    Rebuilt, Update, UpdateError,
};
pub use counters::{CounterSet, CounterWriter, RuleStats};
pub use flow_cache::{Flow4, Flow6, FlowCache};
pub use reference::{effective, first_match, Linear};
pub use rule::{
    order_key, validate_actions, Action, Family, IpPrefix, Key, Masked16, Masked8, PoliceRate,
    PortRange, Rule, RuleError, RuleId, RuleMatch, MAX_ACTIONS, TCP_FLAGS_MAX, VLAN_NONE,
};
pub use tree::{TreeParams, TreeStats};

/// Dense per-rule index assigned by the writer, for counters.
pub type Slot = u32;

/// A live rule as stored in versions; what a lookup returns.
#[derive(Debug)]
pub struct RuleEntry {
    rule: Rule,
    slot: Slot,
    order: u64,
    /// [`Rule::has_verdict`], cached: tested for every match.
    verdict: bool,
    /// [`Rule::only_permits`], cached: tested by the fast path per match.
    permit: bool,
    compiled: compiled::Compiled,
}

impl RuleEntry {
    /// The rule as given.
    pub fn rule(&self) -> &Rule {
        &self.rule
    }

    pub fn id(&self) -> RuleId {
        self.rule.id
    }

    /// Counter slot (stable across `Replace`).
    pub fn slot(&self) -> Slot {
        self.slot
    }

    /// The action list to apply (empty = Permit).
    pub fn actions(&self) -> &[Action] {
        &self.rule.actions
    }

    /// True when a match of this rule ends evaluation
    /// ([`Rule::has_verdict`]); false for count / mirror / set-dscp / mark
    /// rules, after which [`Classifier::chain`] goes on.
    #[inline(always)]
    pub fn has_verdict(&self) -> bool {
        self.verdict
    }

    /// True when a match of this rule ends evaluation and only lets the
    /// packet on to routing ([`Rule::only_permits`]): all it does is
    /// count the packet.
    #[inline(always)]
    pub fn only_permits(&self) -> bool {
        self.permit
    }

    /// Precedence key ([`Rule::order`]): smaller comes first.
    pub fn order(&self) -> u64 {
        self.order
    }
}

/// A lookup result.
pub type Match<'a> = &'a RuleEntry;
