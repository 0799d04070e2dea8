//! Versions ([`Classifier`]) and the single writer ([`ClassifierWriter`]).

use crate::arch::{self, Simd};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::compiled::{exact_word, point4, point6, BoxRule, Compiled, Leaf, Leaf4, Leaf6, D4, D6};
use super::counters::CounterSet;
use super::groups;
use super::order;
use super::overlay::{OvRule, Overlay};
use super::rule::{Family, Key, Rule, RuleError, RuleId};
use super::tree::{Tree, TreeParams, TreeStats};
use super::{RuleEntry, Slot};

/// The rebuilt part of a version: rules in precedence order and, per address
/// family, a few trees over disjoint groups of rules (family-agnostic rules
/// are in both families; which rules go to which tree: [`groups`]). A
/// lookup probes the trees in order of their best rule and skips a tree
/// once the match so far beats everything in it.
#[derive(Debug)]
pub(crate) struct Base {
    entries: Vec<Arc<RuleEntry>>,
    /// `entries[i].order`, dense: compared with the overlay on every lookup
    /// without touching the (scattered) entry.
    orders: Vec<u64>,
    v4: Vec<Tree<D4, Leaf4>>,
    v6: Vec<Tree<D6, Leaf6>>,
}

impl Base {
    fn build(mut entries: Vec<Arc<RuleEntry>>, params: TreeParams) -> Base {
        entries.sort_unstable_by_key(|e| e.order);
        let (mut v4, mut v6) = groups::trees(&entries, params);
        let sample = |fam: Family| -> Vec<&Arc<RuleEntry>> {
            let of: Vec<_> = entries
                .iter()
                .filter(|e| e.compiled.fam == fam || e.compiled.fam == Family::Any)
                .collect();
            order::sample_indexes(of.len()).map(|k| of[k]).collect()
        };
        let s4: Vec<_> = sample(Family::V4)
            .into_iter()
            .enumerate()
            .map(|(k, e)| order::sample_point(&BoxRule::v4(&e.rule.matches, 0), 2, k as u64))
            .collect();
        let s6: Vec<_> = sample(Family::V6)
            .into_iter()
            .enumerate()
            .map(|(k, e)| order::sample_point(&BoxRule::v6(&e.rule.matches, 0), 8, k as u64))
            .collect();
        order::order_trees(&mut v4, &s4);
        order::order_trees(&mut v6, &s6);
        let orders = entries.iter().map(|e| e.order).collect();
        Base {
            entries,
            orders,
            v4,
            v6,
        }
    }

    fn empty() -> Base {
        Base {
            entries: Vec::new(),
            orders: Vec::new(),
            v4: Vec::new(),
            v6: Vec::new(),
        }
    }
}

/// Best base index over a family's trees among indexes `>= from` (> 0:
/// rules after a given one in precedence order). The trees are searched in
/// their order (see [`order::order_trees`]); a tree is skipped when the
/// best match so far beats its lower bound for this point ([`Tree::entry`],
/// [`Tree::bound`]).
#[inline(always)]
fn lookup_trees<const D: usize, L: Leaf<D>>(
    trees: &[Tree<D, L>],
    p: &[i32; D],
    ex: u64,
    dead: Option<&[u64]>,
    from: u32,
) -> Option<u32> {
    let mut best = u32::MAX;
    for t in trees {
        let Some(n) = t.entry_under(p, best) else {
            continue;
        };
        let leaf = t.descend_from(n, p);
        if let Some(i) = t.scan_leaf(leaf, p, ex, dead, from, best) {
            best = i;
        }
    }
    (best != u32::MAX).then_some(best)
}

/// [`lookup_trees`] for the lanes `lanes` of a chunk at once: each tree is
/// descended by every lane whose best so far its bound does not rule out
/// ([`Tree::descend_burst`]), then their leaves are scanned. `pts[i]` is
/// lane `i`'s point (of `keys[i]`); `best[i]` its best base index so far,
/// `u32::MAX` (none) in every lane on entry.
///
/// Which lanes a tree's first rule could still improve is one mask
/// ([`Simd::above32`]), not a branch a lane: once lanes had matched in
/// earlier trees, that branch's way was random, and cachegrind's branch
/// simulation counted it 0.9 of a lookup's ~5.4 mispredictions on the
/// ipc1_50k set (`bench-results/acl_large.md`).
#[inline(always)]
fn burst_trees<const D: usize, L: Leaf<D>, S: Simd>(
    s: S,
    trees: &[Tree<D, L>],
    pts: &[[i32; D]; CHUNK],
    keys: &[Key],
    lanes: u32,
    dead: Option<&[u64]>,
    best: &mut [u32; CHUNK],
) {
    debug_assert_eq!(
        lanes & s.above32(best, u32::MAX - 1),
        lanes,
        "a lane starts matched"
    );
    let mut node = [0usize; CHUNK];
    // The lanes that hold a match (from an earlier tree).
    let mut found = 0u32;
    for t in trees {
        let first = t.first_idx();
        let mut m = if found != 0 {
            lanes & s.above32(best, first)
        } else if first == u32::MAX {
            0
        } else {
            lanes
        };
        let mut live = 0u32;
        if found & m == 0 {
            // Without a match yet there is nothing to bound: no wait for
            // the bound's load before the descent.
            while m != 0 {
                let i = m.trailing_zeros() as usize;
                m &= m - 1;
                let at = t.entry_in(s, &pts[i]);
                node[i] = at;
                live |= u32::from(!t.is_empty_slice(at)) << i;
            }
        } else {
            // A lane without a match has `best` u32::MAX: its bound only
            // skips an empty subtree.
            while m != 0 {
                let i = m.trailing_zeros() as usize;
                m &= m - 1;
                let at = t.entry_in(s, &pts[i]);
                node[i] = at;
                live |= u32::from(t.bound(at) < best[i]) << i;
            }
        }
        if live == 0 {
            continue;
        }
        t.descend_burst(s, pts, &mut node, live);
        while live != 0 {
            let i = live.trailing_zeros() as usize;
            live &= live - 1;
            let ex = exact_word(&keys[i]);
            if let Some(b) = t.scan_leaf(node[i], &pts[i], ex, dead, 0, best[i]) {
                best[i] = b;
                found |= 1 << i;
            }
        }
    }
}

/// One immutable version of the classifier. Cheap to clone (a few `Arc`s);
/// `Send + Sync`; lookups allocate nothing, take no lock and write nothing
/// shared.
#[derive(Clone, Debug)]
pub struct Classifier {
    base: Arc<Base>,
    /// Base rules deleted or replaced since the base was built (bit per base
    /// index); `None` while there are none, so the common case skips it.
    dead: Option<Arc<Vec<u64>>>,
    n_dead: usize,
    overlay: Overlay,
    version: u64,
    /// Names this version's content for the workers' flow caches
    /// ([`super::FlowCache`]): unique in the process (a writer made anew
    /// restarts `version`, never this), shared only by clones, which hold
    /// the same rules at the same addresses.
    uid: u64,
    len: usize,
}

/// A fresh [`Classifier::uid`] (never 0: an empty cache entry's owner).
fn fresh_uid() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    // Relaxed: only uniqueness matters, which the read-modify-write gives.
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Sizes of a version, for `show` commands and the benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClassifierStats {
    pub version: u64,
    /// Live rules.
    pub rules: usize,
    /// Rules in the base trees (including dead ones).
    pub base_rules: usize,
    pub dead_base_rules: usize,
    pub overlay_rules: usize,
    pub overlay_tuples: usize,
    /// Trees in the base (both families).
    pub trees: usize,
    pub max_depth: usize,
    pub tree_nodes: usize,
    /// Bytes of the lookup structures (trees, leaf arenas, root tables,
    /// overlay, dead bitmap; shared parts counted fully).
    pub mem_bytes: usize,
    /// Bytes of the base's rule records (`RuleEntry`: the rule as given, its
    /// slot and compiled form), which a match points to.
    pub rule_bytes: usize,
}

/// Matches per burst chunk in [`Classifier::classify_burst`].
const CHUNK: usize = 32;

impl Classifier {
    fn empty() -> Classifier {
        Classifier {
            base: Arc::new(Base::empty()),
            dead: None,
            n_dead: 0,
            overlay: Overlay::default(),
            version: 0,
            uid: fresh_uid(),
            len: 0,
        }
    }

    /// Every live rule of this version (base rules not deleted since the
    /// base was built, then overlay rules), in no particular order. For
    /// dumps served from a snapshot; allocates nothing.
    pub fn entries(&self) -> impl Iterator<Item = &Arc<RuleEntry>> + '_ {
        let dead = self.dead.as_deref();
        let live = move |i: usize| {
            dead.is_none_or(|d| d.get(i / 64).is_none_or(|w| w & (1 << (i % 64)) == 0))
        };
        self.base
            .entries
            .iter()
            .enumerate()
            .filter(move |(i, _)| live(*i))
            .map(|(_, e)| e)
            .chain(self.overlay.rules().map(|r| &r.entry))
    }

    /// Number of live rules.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Version number (0 for the empty classifier, +1 per applied batch or
    /// installed rebuild).
    pub fn version(&self) -> u64 {
        self.version
    }

    pub fn stats(&self) -> ClassifierStats {
        ClassifierStats {
            version: self.version,
            rules: self.len,
            base_rules: self.base.entries.len(),
            dead_base_rules: self.n_dead,
            overlay_rules: self.overlay.len(),
            overlay_tuples: self.overlay.tuple_count(),
            trees: self.base.v4.len() + self.base.v6.len(),
            max_depth: self
                .base
                .v4
                .iter()
                .map(|t| t.depth())
                .chain(self.base.v6.iter().map(|t| t.depth()))
                .max()
                .unwrap_or(0),
            tree_nodes: self.base.v4.iter().map(|t| t.node_count()).sum::<usize>()
                + self.base.v6.iter().map(|t| t.node_count()).sum::<usize>(),
            mem_bytes: self.base.v4.iter().map(|t| t.mem_bytes()).sum::<usize>()
                + self.base.v6.iter().map(|t| t.mem_bytes()).sum::<usize>()
                + self.base.entries.capacity() * std::mem::size_of::<Arc<RuleEntry>>()
                + self.dead.as_ref().map_or(0, |d| d.len() * 8)
                + self.overlay.mem_bytes(),
            rule_bytes: self
                .base
                .entries
                .iter()
                .map(|e| {
                    std::mem::size_of::<RuleEntry>()
                        + e.rule.actions.capacity() * std::mem::size_of::<super::Action>()
                })
                .sum(),
        }
    }

    /// Diagnostic for tuning: (trees searched, nodes visited, leaf rules
    /// checked) by an IPv4 lookup of `k` in the base (dead rules ignored).
    pub fn lookup_cost(&self, k: &Key) -> (usize, usize, usize) {
        let p = point4(k);
        let (mut trees, mut nodes, mut checks) = (0, 0, 0);
        let mut best = u32::MAX;
        for t in &self.base.v4 {
            if t.entry_under(&p, best).is_none() {
                continue;
            }
            trees += 1;
            let (n, c) = t.cost(&p, exact_word(k), best);
            nodes += n;
            checks += c;
            let leaf = t.descend(&p);
            if let Some(i) = t.scan_leaf(leaf, &p, exact_word(k), None, 0, best) {
                best = i;
            }
        }
        (trees, nodes, checks)
    }

    /// Per-tree sizes of the base (IPv4 trees first).
    pub fn tree_stats(&self) -> Vec<TreeStats> {
        let v4 = self.base.v4.iter().map(|t| t.stats(false));
        v4.chain(self.base.v6.iter().map(|t| t.stats(true)))
            .collect()
    }

    #[inline(always)]
    fn dead(&self) -> Option<&[u64]> {
        self.dead.as_deref().map(|v| v.as_slice())
    }

    #[inline(always)]
    fn finish(&self, k: &Key, base: Option<u32>) -> Option<&RuleEntry> {
        if self.overlay.is_empty() {
            return base.map(|i| &*self.base.entries[i as usize]);
        }
        let bound = base.map_or(u64::MAX, |i| self.base.orders[i as usize]);
        match self.overlay.lookup(k, bound) {
            Some(r) => Some(&r.entry),
            None => base.map(|i| &*self.base.entries[i as usize]),
        }
    }

    /// First (highest-precedence) matching rule.
    #[inline]
    pub fn classify(&self, k: &Key) -> Option<&RuleEntry> {
        let dead = self.dead();
        let b = if k.is_v6 {
            lookup_trees(&self.base.v6, &point6(k), exact_word(k), dead, 0)
        } else {
            lookup_trees(&self.base.v4, &point4(k), exact_word(k), dead, 0)
        };
        self.finish(k, b)
    }

    /// First matching rule that comes strictly after the rule of order
    /// `after` ([`Rule::order`](super::Rule::order)) in precedence order:
    /// the lookup that continues evaluation past a rule without a verdict
    /// (see [`Classifier::chain`]). Scalar, and only run for packets whose
    /// match has no verdict, so rule sets without such rules never pay
    /// for it. Same structures as [`Classifier::classify`], with a lower
    /// bound: base rules are in precedence order, so "after" is an index
    /// (`lo`) there, and an order comparison in the overlay.
    pub fn classify_after(&self, k: &Key, after: u64) -> Option<&RuleEntry> {
        let dead = self.dead();
        let lo = self.base.orders.partition_point(|&o| o <= after) as u32;
        let b = if k.is_v6 {
            lookup_trees(&self.base.v6, &point6(k), exact_word(k), dead, lo)
        } else {
            lookup_trees(&self.base.v4, &point4(k), exact_word(k), dead, lo)
        };
        let base = b.map(|i| &*self.base.entries[i as usize]);
        if self.overlay.is_empty() {
            return base;
        }
        let bound = b.map_or(u64::MAX, |i| self.base.orders[i as usize]);
        match self.overlay.lookup_after(k, after, bound) {
            Some(r) => Some(&r.entry),
            None => base,
        }
    }

    /// Classify a burst: `out[i] = classify(&keys[i])`.
    ///
    /// The keys of each family descend the trees in interleaved groups so
    /// the node loads of different packets overlap (the burst analogue of
    /// rte_acl's multi-flow search).
    ///
    /// The burst runs compiled for AVX-512 or AVX2 where the CPU has it and
    /// the process allows it ([`crate::arch::allow_simd_bits`]), for SSE2
    /// otherwise ([`crate::arch::dispatch`], once per call).
    ///
    /// # Panics
    /// If `out.len() < keys.len()`.
    pub fn classify_burst<'a>(&'a self, keys: &[Key], out: &mut [Option<&'a RuleEntry>]) {
        self.classify_burst_coded(keys, out, &mut []);
    }

    /// [`Classifier::classify_burst`] that also says, in `codes[i]` (when
    /// `codes` is not empty), how [`Classifier::coded_entry`] gives the
    /// match back: the base index of a base rule, [`CODE_NONE`] for no
    /// match, [`CODE_OVERLAY`] for an overlay rule (which it does not give
    /// back: the flow cache does not keep those).
    pub(crate) fn classify_burst_coded<'a>(
        &'a self,
        keys: &[Key],
        out: &mut [Option<&'a RuleEntry>],
        codes: &mut [u32],
    ) {
        arch::dispatch(BurstJob {
            cls: self,
            keys,
            out,
            codes,
        })
    }

    /// The match that code `code` of this version's
    /// [`Classifier::classify_burst_coded`] stands for.
    #[inline(always)]
    pub(crate) fn coded_entry(&self, code: u32) -> Option<&RuleEntry> {
        debug_assert_ne!(code, CODE_OVERLAY);
        self.base.entries.get(code as usize).map(|e| &**e)
    }

    /// See the field.
    #[inline(always)]
    pub(crate) fn uid(&self) -> u64 {
        self.uid
    }

    /// [`Classifier::classify_burst_coded`] with the instructions `s`.
    #[inline(always)]
    pub(crate) fn classify_burst_in<'a, S: Simd>(
        &'a self,
        s: S,
        keys: &[Key],
        out: &mut [Option<&'a RuleEntry>],
        codes: &mut [u32],
    ) {
        assert!(out.len() >= keys.len(), "out shorter than keys");
        assert!(
            codes.is_empty() || codes.len() >= keys.len(),
            "codes shorter than keys"
        );
        let dead = self.dead();
        for (c, (kc, oc)) in keys.chunks(CHUNK).zip(out.chunks_mut(CHUNK)).enumerate() {
            let n = kc.len();
            let mut best = [u32::MAX; CHUNK];
            let (mut v4, mut v6) = (0u32, 0u32);
            for (i, k) in kc.iter().enumerate() {
                v4 |= u32::from(!k.is_v6) << i;
                v6 |= u32::from(k.is_v6) << i;
            }
            if v4 != 0 {
                let mut pts = [[0i32; D4]; CHUNK];
                for (p, k) in pts.iter_mut().zip(kc) {
                    *p = point4(k);
                }
                burst_trees(s, &self.base.v4, &pts, kc, v4, dead, &mut best);
            }
            if v6 != 0 {
                let mut pts = [[0i32; D6]; CHUNK];
                for (p, k) in pts.iter_mut().zip(kc) {
                    *p = point6(k);
                }
                burst_trees(s, &self.base.v6, &pts, kc, v6, dead, &mut best);
            }
            if !codes.is_empty() {
                codes[c * CHUNK..c * CHUNK + n].copy_from_slice(&best[..n]);
            }
            if self.overlay.is_empty() {
                for (o, &b) in oc.iter_mut().zip(&best[..n]) {
                    *o = (b != u32::MAX).then(|| &*self.base.entries[b as usize]);
                }
            } else {
                let mut bound = [u64::MAX; CHUNK];
                for (o, &b) in bound.iter_mut().zip(&best[..n]) {
                    if b != u32::MAX {
                        *o = self.base.orders[b as usize];
                    }
                }
                let mut hit = [None; CHUNK];
                self.overlay
                    .lookup_burst(kc, &mut bound[..n], &mut hit[..n]);
                for i in 0..n {
                    oc[i] = match hit[i] {
                        Some(r) => {
                            if !codes.is_empty() {
                                codes[c * CHUNK + i] = CODE_OVERLAY;
                            }
                            Some(&*r.entry)
                        }
                        None => {
                            (best[i] != u32::MAX).then(|| &*self.base.entries[best[i] as usize])
                        }
                    };
                }
            }
        }
    }
}

/// A [`Classifier::classify_burst`] call, for [`arch::dispatch`].
struct BurstJob<'a, 'k, 'o> {
    cls: &'a Classifier,
    keys: &'k [Key],
    out: &'o mut [Option<&'a RuleEntry>],
    codes: &'o mut [u32],
}

impl arch::WithSimd for BurstJob<'_, '_, '_> {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self, s: S) {
        self.cls
            .classify_burst_in(s, self.keys, self.out, self.codes);
    }
}

/// [`Classifier::classify_burst_coded`]'s code for no match.
pub(crate) const CODE_NONE: u32 = u32::MAX;
/// [`Classifier::classify_burst_coded`]'s code for an overlay rule's match.
pub(crate) const CODE_OVERLAY: u32 = u32::MAX - 1;

// Versions are handed to worker threads.
const _: () = {
    fn assert_send_sync<T: Send + Sync>() {}
    fn check() {
        assert_send_sync::<Classifier>();
        assert_send_sync::<RebuildJob>();
        assert_send_sync::<Rebuilt>();
    }
    let _ = check;
};

/// One change of a batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Update {
    /// Add a rule; its id must not be live.
    Insert(Rule),
    /// Replace the live rule with the same id (keeps its slot and counters).
    Replace(Rule),
    /// Remove a live rule.
    Delete(RuleId),
}

/// Why an update was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UpdateError {
    #[error("rule {id}: {source}")]
    Invalid { id: RuleId, source: RuleError },
    #[error("rule {0} already exists")]
    DuplicateId(RuleId),
    #[error("rule {0} does not exist")]
    UnknownId(RuleId),
    /// The batch would make more than [`Config::capacity`] rules live (at
    /// this update, counting the batch's deletes before it).
    #[error("more than {0} rules (the rule capacity)")]
    Capacity(u32),
    /// Every slot is live or retired by a batch whose older versions are
    /// not reclaimed yet: only after a second full swap in a row, before
    /// reclamation. Retrying once the workers have moved on succeeds.
    #[error(
        "no free rule slot: {retired} slots of deleted rules wait until the versions \
         that used them are reclaimed; retry"
    )]
    SlotsPending { retired: u32 },
}

/// A refused batch: nothing of it was applied.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("update #{index}: {error}")]
pub struct BatchError {
    /// Position of the offending update in the batch.
    pub index: usize,
    pub error: UpdateError,
}

/// Writer configuration.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Most live rules. Slots are `0..2 * capacity` ([`Config::slots`];
    /// size the [`CounterSet`] with that): a batch can replace every rule
    /// while the old rules' slots are still retired.
    pub capacity: u32,
    pub tree: TreeParams,
    /// [`ClassifierWriter::needs_rebuild`] turns true above this many overlay
    /// rules.
    pub overlay_soft_limit: usize,
    /// Above this many overlay rules `apply` rebuilds synchronously.
    pub overlay_hard_limit: usize,
    /// Batches with at least this many updates rebuild synchronously.
    pub sync_rebuild_batch: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            capacity: 1 << 17,
            tree: TreeParams::default(),
            overlay_soft_limit: 64,
            overlay_hard_limit: 1024,
            sync_rebuild_batch: 2048,
        }
    }
}

impl Config {
    /// Size of the slot space: twice [`Config::capacity`], so that an
    /// atomic swap of a full rule set (flush plus `capacity` inserts in one
    /// batch) finds fresh slots while the deleted rules' slots wait for
    /// reclamation. Slots cannot be reused within the batch: workers still
    /// on the older version keep counting (and policing) on them until
    /// they pass a quiescent point, and the new rule must start at zero.
    pub fn slots(&self) -> u32 {
        self.capacity.saturating_mul(2)
    }
}

#[derive(Clone, Debug)]
struct Live {
    entry: Arc<RuleEntry>,
    /// Index in the current base, if the rule lives there (else overlay).
    in_base: Option<u32>,
}

/// Result of a successful [`ClassifierWriter::apply`].
#[derive(Debug)]
pub struct Applied {
    /// The new version, to publish.
    pub version: Arc<Classifier>,
    /// Slots of rules this batch deleted. Hand them back with
    /// [`ClassifierWriter::release_slots`] once every version that can still
    /// reference them (the ones published before `version`) is reclaimed.
    pub retired_slots: Vec<Slot>,
}

/// A base rebuild taken from a snapshot; run [`RebuildJob::run`] on any
/// thread, then [`ClassifierWriter::install`] the result.
#[derive(Debug)]
pub struct RebuildJob {
    entries: Vec<Arc<RuleEntry>>,
    params: TreeParams,
    /// The writer's rule-set sequence number when the snapshot was taken.
    seq: u64,
}

/// A finished rebuild.
#[derive(Debug)]
pub struct Rebuilt {
    base: Arc<Base>,
    seq: u64,
}

impl RebuildJob {
    /// Build the trees (the expensive part; touches no writer state).
    pub fn run(self) -> Rebuilt {
        Rebuilt {
            base: Arc::new(Base::build(self.entries, self.params)),
            seq: self.seq,
        }
    }
}

/// The control thread's handle: owns the rule set and slot allocator and
/// produces new versions. Not shared with workers.
#[derive(Debug)]
pub struct ClassifierWriter {
    cfg: Config,
    current: Arc<Classifier>,
    rules: HashMap<RuleId, Live>,
    free: Vec<Slot>,
    next_slot: Slot,
    /// Counts the batches that changed the rule set.
    seq: u64,
    /// `seq` of the snapshot the current base was built from: a rebuild
    /// from an older snapshot is never installed over it.
    base_seq: u64,
}

enum Presence {
    Present,
    Absent,
}

impl ClassifierWriter {
    pub fn new(cfg: Config) -> Self {
        ClassifierWriter {
            cfg,
            current: Arc::new(Classifier::empty()),
            rules: HashMap::new(),
            free: Vec::new(),
            next_slot: 0,
            seq: 0,
            base_seq: 0,
        }
    }

    /// The latest version.
    pub fn current(&self) -> &Arc<Classifier> {
        &self.current
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The live rule with this id.
    pub fn get(&self, id: RuleId) -> Option<&Arc<RuleEntry>> {
        self.rules.get(&id).map(|l| &l.entry)
    }

    /// All live rules, in no particular order.
    pub fn rules(&self) -> impl Iterator<Item = &Arc<RuleEntry>> {
        self.rules.values().map(|l| &l.entry)
    }

    /// True when the overlay or the dead set has grown enough that a
    /// background rebuild ([`Self::rebuild_job`]) is worth it.
    pub fn needs_rebuild(&self) -> bool {
        let c = &self.current;
        c.overlay.len() > self.cfg.overlay_soft_limit
            || c.n_dead > (c.base.entries.len() / 8).max(self.cfg.overlay_soft_limit)
    }

    /// Apply a batch atomically: either every update takes effect in one new
    /// version, or nothing changes and the first failing update is named.
    ///
    /// Small batches go to the overlay (cost proportional to the batch, not
    /// the rule set); batches of at least `sync_rebuild_batch` updates, or
    /// ones that push the overlay past `overlay_hard_limit`, rebuild the base.
    ///
    /// # Errors
    /// [`BatchError`] naming the first invalid update.
    pub fn apply(&mut self, batch: &[Update]) -> Result<Applied, BatchError> {
        self.check(batch)?;
        self.seq += 1;
        let mut retired = Vec::new();
        let full = batch.len() >= self.cfg.sync_rebuild_batch;
        let cur = self.current.clone();
        let mut dead = cur.dead.clone();
        let mut n_dead = cur.n_dead;
        let mut ov = cur.overlay.edit();
        for u in batch {
            match u {
                Update::Insert(r) => {
                    let slot = self.alloc_slot();
                    let e = Arc::new(RuleEntry::new(r.clone(), slot));
                    if !full {
                        ov.insert(ov_rule(&e));
                    }
                    self.rules.insert(
                        r.id,
                        Live {
                            entry: e,
                            in_base: None,
                        },
                    );
                }
                Update::Replace(r) => {
                    let old = self.rules.remove(&r.id).expect("checked");
                    if !full {
                        retire(
                            &old,
                            &mut ov,
                            &mut dead,
                            &mut n_dead,
                            cur.base.entries.len(),
                        );
                    }
                    let e = Arc::new(RuleEntry::new(r.clone(), old.entry.slot));
                    if !full {
                        ov.insert(ov_rule(&e));
                    }
                    self.rules.insert(
                        r.id,
                        Live {
                            entry: e,
                            in_base: None,
                        },
                    );
                }
                Update::Delete(id) => {
                    let old = self.rules.remove(id).expect("checked");
                    if !full {
                        retire(
                            &old,
                            &mut ov,
                            &mut dead,
                            &mut n_dead,
                            cur.base.entries.len(),
                        );
                    }
                    retired.push(old.entry.slot);
                }
            }
        }
        let overlay = ov.finish();
        let version = if full || overlay.len() > self.cfg.overlay_hard_limit {
            let job = self.rebuild_job();
            self.install_base(job.run())
        } else {
            Classifier {
                base: cur.base.clone(),
                dead,
                n_dead,
                overlay,
                version: cur.version + 1,
                uid: fresh_uid(),
                len: self.rules.len(),
            }
        };
        self.current = Arc::new(version);
        Ok(Applied {
            version: self.current.clone(),
            retired_slots: retired,
        })
    }

    /// Validate a batch against the current rule set without changing it.
    fn check(&self, batch: &[Update]) -> Result<(), BatchError> {
        let mut pending: HashMap<RuleId, Presence> = HashMap::new();
        let present = |p: &HashMap<RuleId, Presence>, id: RuleId| match p.get(&id) {
            Some(Presence::Present) => true,
            Some(Presence::Absent) => false,
            None => self.rules.contains_key(&id),
        };
        let mut slots_left =
            self.free.len() as u64 + (u64::from(self.cfg.slots()) - u64::from(self.next_slot));
        let mut live = self.rules.len() as u64;
        for (index, u) in batch.iter().enumerate() {
            let err = |error| Err(BatchError { index, error });
            match u {
                Update::Insert(r) | Update::Replace(r) => {
                    if let Err(source) = r.validate() {
                        return err(UpdateError::Invalid { id: r.id, source });
                    }
                    let is_insert = matches!(u, Update::Insert(_));
                    match (is_insert, present(&pending, r.id)) {
                        (true, true) => return err(UpdateError::DuplicateId(r.id)),
                        (false, false) => return err(UpdateError::UnknownId(r.id)),
                        _ => {}
                    }
                    if is_insert {
                        if live >= u64::from(self.cfg.capacity) {
                            return err(UpdateError::Capacity(self.cfg.capacity));
                        }
                        if slots_left == 0 {
                            // Neither live nor free: retired, not released.
                            let retired =
                                self.next_slot as usize - self.free.len() - self.rules.len();
                            return err(UpdateError::SlotsPending {
                                retired: retired as u32,
                            });
                        }
                        slots_left -= 1;
                        live += 1;
                    }
                    pending.insert(r.id, Presence::Present);
                }
                Update::Delete(id) => {
                    if !present(&pending, *id) {
                        return err(UpdateError::UnknownId(*id));
                    }
                    pending.insert(*id, Presence::Absent);
                    live -= 1;
                }
            }
        }
        Ok(())
    }

    fn alloc_slot(&mut self) -> Slot {
        match self.free.pop() {
            Some(s) => s,
            None => {
                self.next_slot += 1;
                self.next_slot - 1
            }
        }
    }

    /// Return retired slots (from [`Applied::retired_slots`]) for reuse, once
    /// every version that referenced them has been reclaimed. Zeroes their
    /// counters in `counters` (if given) so the next rule starts from 0.
    pub fn release_slots(&mut self, slots: &[Slot], counters: Option<&CounterSet>) {
        for &s in slots {
            if let Some(c) = counters {
                c.reset(s);
            }
            self.free.push(s);
        }
    }

    /// Snapshot the current rule set for a rebuild.
    pub fn rebuild_job(&self) -> RebuildJob {
        RebuildJob {
            entries: self.rules.values().map(|l| l.entry.clone()).collect(),
            params: self.cfg.tree,
            seq: self.seq,
        }
    }

    /// Publishable version on top of a finished rebuild: rules changed since
    /// the job's snapshot are carried in the overlay / dead set. O(rules).
    ///
    /// `None` (and nothing changes) when the current base was built from a
    /// newer snapshot than the job's (a synchronous rebuild ran meanwhile):
    /// installing it would swap in an older tree and carry everything since
    /// in the overlay, past its hard limit.
    pub fn install(&mut self, rebuilt: Rebuilt) -> Option<Arc<Classifier>> {
        if rebuilt.seq < self.base_seq {
            return None;
        }
        let v = self.install_base(rebuilt);
        self.current = Arc::new(v);
        Some(self.current.clone())
    }

    /// Synchronous rebuild of the current rule set.
    pub fn compact(&mut self) -> Arc<Classifier> {
        let job = self.rebuild_job();
        self.install(job.run())
            .expect("a snapshot of the current rule set is never stale")
    }

    fn install_base(&mut self, rebuilt: Rebuilt) -> Classifier {
        let base = rebuilt.base;
        self.base_seq = rebuilt.seq;
        for l in self.rules.values_mut() {
            l.in_base = None;
        }
        let n = base.entries.len();
        let mut dead = vec![0u64; n.div_ceil(64)];
        let mut n_dead = 0;
        for (i, e) in base.entries.iter().enumerate() {
            match self.rules.get_mut(&e.rule.id) {
                Some(l) if Arc::ptr_eq(&l.entry, e) => l.in_base = Some(i as u32),
                _ => {
                    dead[i / 64] |= 1 << (i % 64);
                    n_dead += 1;
                }
            }
        }
        let mut ov = Overlay::default().edit();
        for l in self.rules.values() {
            if l.in_base.is_none() {
                ov.insert(ov_rule(&l.entry));
            }
        }
        Classifier {
            base,
            dead: (n_dead > 0).then(|| Arc::new(dead)),
            n_dead,
            overlay: ov.finish(),
            version: self.current.version + 1,
            uid: fresh_uid(),
            len: self.rules.len(),
        }
    }
}

fn ov_rule(e: &Arc<RuleEntry>) -> OvRule {
    OvRule {
        c: e.compiled,
        order: e.order,
        entry: e.clone(),
    }
}

/// Take `old` out of the version being built: mark it dead in the base or
/// remove it from the overlay. The dead bitmap is copied at most once per
/// batch (`Arc::make_mut` on the first base deletion).
fn retire(
    old: &Live,
    ov: &mut super::overlay::OverlayEdit,
    dead: &mut Option<Arc<Vec<u64>>>,
    n_dead: &mut usize,
    base_len: usize,
) {
    match old.in_base {
        Some(i) => {
            let bits = dead.get_or_insert_with(|| Arc::new(vec![0; base_len.div_ceil(64)]));
            Arc::make_mut(bits)[i as usize / 64] |= 1 << (i % 64);
            *n_dead += 1;
        }
        None => {
            let found = ov.remove(&old.entry.compiled, old.entry.rule.id);
            debug_assert!(found, "overlay rule {} missing", old.entry.rule.id);
        }
    }
}

impl RuleEntry {
    fn new(rule: Rule, slot: Slot) -> Self {
        RuleEntry {
            order: rule.order(),
            verdict: rule.has_verdict(),
            permit: rule.only_permits(),
            compiled: Compiled::new(&rule.matches),
            rule,
            slot,
        }
    }
}
