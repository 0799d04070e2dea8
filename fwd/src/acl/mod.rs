//! N-tuple packet classifier (ACL): rule model, versions, lookups, counters.
//!
//! # Contract
//!
//! * **Rules** ([`Rule`]): caller-chosen stable `id`, explicit `priority`
//!   (**lower value = higher precedence**, ties broken by lower id), a
//!   [`RuleMatch`] on src/dst prefix (v4, v6, or family-agnostic when both
//!   are wildcards), protocol value/mask, src/dst port ranges, ingress port,
//!   VLAN, DSCP and TCP-flags value/mask, and an action list. The first
//!   (highest-precedence) matching rule wins and its whole action list is
//!   applied in order; lists end in at most one terminal action
//!   (Permit/Drop/Redirect), implicit Permit otherwise. Validation rejects
//!   (never normalises) host bits, out-of-range values and contradictory
//!   action lists ([`RuleError`]).
//! * **Versions** ([`Classifier`]) are immutable and persistent. The control
//!   thread's [`ClassifierWriter::apply`] turns a batch of [`Update`]s into a
//!   new `Arc<Classifier>` that shares every untouched part with the previous
//!   one; a batch is all-or-nothing and becomes visible only with the version
//!   that carries it (publish it through the QSBR root). Old versions are
//!   never affected by new ones.
//! * **Lookups** ([`Classifier::classify`], [`Classifier::classify_burst`])
//!   read immutable memory only: no allocation, no lock, no atomic, no write
//!   to shared memory. A match is a `&RuleEntry` (8 bytes), giving the
//!   rule's [`Slot`] (for counters) and its action list.
//! * **Counters** ([`CounterSet`], [`CounterWriter`]): per worker, per slot,
//!   single writer, summed on read; `last_used` stored at most once per tick.
//!   Slots of deleted rules ([`Applied::retired_slots`]) are reused only after
//!   the control side calls [`ClassifierWriter::release_slots`] once the
//!   versions that referenced them are reclaimed.
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
//! * The base is, per address family, up to three trees over disjoint
//!   groups of rules: specific source (prefix >= half the width), wild
//!   source but specific destination, both wild. Without this split a wild
//!   rule is copied into every child of every address split (acl2_10k: 17M
//!   nodes / 1.7 GB; with it: 5.4k nodes / 4 MB). Trees are searched in
//!   order of their best rule and skipped once the match so far beats them.
//! * Each tree (see `tree.rs`) is a HyperSplit-style range-split tree with
//!   up-to-16-way nodes of one cache line each, a 64Ki-entry first level on
//!   the top 16 bits of the group's address when that splits without
//!   replication, and leaves whose candidates are copied contiguously.
//!   Leaves keep every intersecting rule (no redundancy pruning), which is
//!   what makes "mark dead" a correct delete. IPv4 and IPv6 have separate
//!   trees over 8 and 14 `u32` dimensions; fields a box cannot express
//!   exactly (proto and TCP flags under arbitrary masks) are checked at the
//!   leaf.
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
//! random header; no `unsafe` is allowed here, so there is no software
//! prefetch or runtime SIMD dispatch (rte_acl uses both).

mod classbench;
mod classifier;
mod compiled;
mod counters;
mod overlay;
mod reference;
mod rule;
mod tree;

#[cfg(test)]
mod tests;

pub use classbench::{parse_rules, parse_trace, ParseError, TraceEntry, TraceTag};
pub use classifier::{
    Applied, BatchError, Classifier, ClassifierStats, ClassifierWriter, Config, RebuildJob,
    Rebuilt, Update, UpdateError,
};
pub use counters::{CounterSet, CounterWriter, RuleStats};
pub use reference::{first_match, Linear};
pub use rule::{
    order_key, validate_actions, Action, Family, IpPrefix, Key, Masked8, PoliceRate, PortRange,
    Rule, RuleError, RuleId, RuleMatch, MAX_ACTIONS, VLAN_NONE,
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
}

/// A lookup result.
pub type Match<'a> = &'a RuleEntry;
