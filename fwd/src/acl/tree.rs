//! The base structure: an immutable multi-way range-split decision tree
//! (HyperSplit-style, Qi et al. 2009) over `D` `u32` dimensions.
//!
//! * Optional first level: if every rule of the tree lies inside one 64Ki
//!   slice of some dimension (true for the "specific source" / "specific
//!   destination" groups, whose prefixes are >= /16), a 64Ki-entry table
//!   indexed by the top 16 bits of that dimension replaces the top levels
//!   with one load and no replication (rte_acl's first-byte idea).
//! * Inner nodes split one dimension at up to 15 thresholds (one 64-byte
//!   node; child = number of thresholds `< value`, children contiguous).
//!   Thresholds and keys are sign-flipped so SSE2's signed compares do the
//!   unsigned comparison; the count is a compare mask and one bit scan.
//!   Splits are chosen per dimension to minimise the largest child, widened
//!   while a piece still shrinks by >= 25%, and refused unless the largest
//!   child is <= 7/8 of the node (which bounds replication on overlapping
//!   sets: acl2's wildcard rules blew up to 17M nodes without it).
//! * Chains of one-cut nodes (wildcard-heavy groups split two ways at a
//!   time) are packed after the build: a packed node holds the binary tree
//!   of up to three such levels (7 thresholds with their dimensions, 8
//!   exits) in one cache line, so a descent loads a third of the lines.
//! * Leaves list candidate rules in precedence order, copied contiguously
//!   into an arena as records of four candidates ([`Leaf`]); the
//!   first live rule whose full match holds wins.
//!   Leaves keep *every* rule that intersects their region (no redundancy
//!   pruning), so marking a rule dead in a later version needs no change to
//!   the tree: the scan simply continues to the next candidate.
//! * Lookups of a burst descend all lanes interleaved (each round issues
//!   one independent node load per unfinished lane) before scanning leaves.
//! * Every node knows the smallest rule index below it ([`Tree::bound`]), so
//!   a lookup that already holds a better match from another tree skips a
//!   root-table slice or the root's child without descending it (the order
//!   of the trees: `order.rs`).

use super::compiled::{flip, BoxRule, Leaf};
use crate::arch::{self, Simd, Sse2};

/// Leaf size under which a region is not split further.
pub(crate) const LEAF_MAX: usize = 8;
/// Depth limit (guards against pathological sets).
const MAX_DEPTH: usize = 48;

const KIND_INNER: u32 = 0;
const KIND_BIN3: u32 = 1;
const KIND_LEAF: u32 = 2;
const PAYLOAD: u32 = 0x03FF_FFFF;

/// One 64-byte node. Word 15 = `kind:2 | dim:4 | payload:26`, except in a
/// packed binary node: `kind:2 | 7 x dim:4`, words 0..7 its thresholds and
/// 7..15 its exits (breadth-first slots, see `bin3_exit`).
/// Inner: words 0..15 thresholds (unused = `u32::MAX`), payload = first child.
/// Leaves are *absorbing*: payload = the leaf's own index and the child
/// offset is masked to 0, so a descent step is branch-free and a lane that
/// reached its leaf stays there while the other lanes of a burst continue.
/// Leaf: word 0 = offset of its records in `arena`, word 1 = its number of
/// candidates, word 2 = of records (see [`Leaf`]).
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
pub(crate) struct Node([u32; 16]);

/// `u32::MAX` in the sign-flipped threshold encoding (never `< v`).
const FLIPPED_MAX: u32 = 0x7FFF_FFFF;

impl Node {
    /// Thresholds are stored sign-flipped (`t ^ 0x8000_0000`) so the lookup
    /// compares them as `i32` against a flipped key: SSE2 has only signed
    /// 32-bit compares.
    fn inner(dim: usize, thr: &[u32], first_child: u32) -> Node {
        let mut w = [FLIPPED_MAX; 16];
        for (w, &t) in w.iter_mut().zip(thr) {
            *w = flip(t) as u32;
        }
        w[15] = (KIND_INNER << 30) | ((dim as u32) << 26) | first_child;
        Node(w)
    }
}

/// Tuning knobs for the build (exposed for the benchmark's measurements).
#[derive(Clone, Copy, Debug)]
pub struct TreeParams {
    /// Stop splitting at this many candidate rules.
    pub leaf_max: usize,
    /// Maximum fan-out of an inner node (2..=16).
    pub fanout: usize,
    /// A tree gets a direct-indexed first level (64Ki entries on the top 16
    /// bits of one dimension) if it has at least this many rules ...
    pub root_min_rules: usize,
    /// ... and they fall into at least this many distinct 16-bit slices.
    pub root_min_slices: usize,
    /// The build gives up ([`TooLarge`]) once the tree holds more than
    /// `max_replication` x its rules + `replication_slack` nodes and leaf
    /// entries together (a rule in several leaves counts once in each).
    /// Rules that overlap in ways no split separates (half the rules exact
    /// on the source port and wild on the destination port, half the other
    /// way round) otherwise replicate quadratically: 4,000 such rules built
    /// a 236 MB tree, 8,000 a 944 MB one. The caller splits such a group
    /// ([`super::groups`]). The real sets stay well below: at most 87
    /// (ClassBench fw1_100k's both-wild group, 6,434 rules).
    pub max_replication: usize,
    /// See [`TreeParams::max_replication`].
    pub replication_slack: usize,
}

impl Default for TreeParams {
    fn default() -> Self {
        TreeParams {
            leaf_max: LEAF_MAX,
            fanout: 16,
            root_min_rules: 256,
            root_min_slices: 16,
            max_replication: 128,
            replication_slack: 1 << 16,
        }
    }
}

/// A build that went past its budget ([`TreeParams::max_replication`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TooLarge;

/// Size of one tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TreeStats {
    pub v6: bool,
    pub rules: usize,
    pub nodes: usize,
    pub leaves: usize,
    /// Sum of leaf list lengths (replication).
    pub leaf_rules: usize,
    /// Packed binary nodes (see `Tree::pack`).
    pub packed: usize,
    pub depth: usize,
    pub mem_bytes: usize,
}

/// Immutable tree over rules sorted by precedence (rank 0 = best).
#[derive(Clone, Debug)]
pub(crate) struct Tree<const D: usize, L: Leaf<D>> {
    nodes: Vec<Node>,
    /// Build-time boxes (emptied after the build).
    rules: Vec<BoxRule<D>>,
    /// Each leaf's candidates as records ([`Leaf`]), contiguous and in
    /// precedence order, so a leaf scan streams through adjacent lines
    /// instead of chasing one rule per cache miss.
    arena: Vec<L>,
    /// What the records do not hold, by base index (see [`Leaf::push`]).
    long: Vec<L::Side>,
    /// Build-time leaf lists (ranks), which leaf nodes index until the
    /// records replace them.
    ext: Vec<u32>,
    n_rules: usize,
    first: u32,
    depth: usize,
    /// Optional direct-indexed first level: subtree root per value of the
    /// top 16 bits of `root_dim` (indexed by the flipped value).
    root: Vec<u32>,
    root_dim: usize,
    /// Smallest base index in each node's subtree (`u32::MAX`: none, or
    /// a node no descent reaches): the lower bound of [`Tree::entry`].
    node_min: Vec<u32>,
    /// Nodes and leaf entries the build may make (see
    /// [`TreeParams::max_replication`]).
    budget: usize,
}

/// Result of choosing a split for one dimension.
struct Split {
    dim: usize,
    cuts: Vec<u32>,
    max_child: usize,
    total: usize,
}

impl<const D: usize, L: Leaf<D>> Tree<D, L> {
    /// Build over `rules`, which must be sorted by precedence, within the
    /// budget of [`TreeParams::max_replication`].
    pub fn build(rules: Vec<BoxRule<D>>, params: TreeParams) -> Result<Self, TooLarge> {
        let budget = params
            .max_replication
            .saturating_mul(rules.len())
            .saturating_add(params.replication_slack);
        let mut t = Tree {
            nodes: Vec::with_capacity(rules.len() / 2 + 1),
            rules,
            arena: Vec::new(),
            long: Vec::new(),
            ext: Vec::new(),
            n_rules: 0,
            first: u32::MAX,
            depth: 0,
            root: Vec::new(),
            root_dim: 0,
            node_min: Vec::new(),
            budget,
        };
        let region = ([0u32; D], [u32::MAX; D]);
        t.nodes.push(Node([0; 16]));
        let mut scratch = Scratch::default();
        match t.root_dim(params) {
            Some(d) => {
                // Every rule lies in one 64Ki-wide slice of `d`: split on
                // the top 16 bits directly, no replication.
                t.root_dim = d;
                t.set_leaf(0, &[]); // shared by empty slices
                let mut by_slice: Vec<(u32, u32)> = t
                    .rules
                    .iter()
                    .enumerate()
                    .map(|(i, b)| (b.lo[d] >> 16, i as u32))
                    .collect();
                by_slice.sort_unstable();
                t.root = vec![0; 1 << 16];
                for group in by_slice.chunk_by(|a, b| a.0 == b.0) {
                    let s = group[0].0;
                    let at = t.nodes.len();
                    t.nodes.push(Node([0; 16]));
                    let mut sub = region;
                    sub.0[d] = s << 16;
                    sub.1[d] = (s << 16) | 0xFFFF;
                    let list = group.iter().map(|x| x.1).collect();
                    t.build_node(at, list, sub, 1, params, &mut scratch);
                    t.root[(s ^ 0x8000) as usize] = at as u32;
                }
            }
            None => {
                let all: Vec<u32> = (0..t.rules.len() as u32).collect();
                t.build_node(0, all, region, 0, params, &mut scratch);
            }
        }
        if t.over_budget() {
            return Err(TooLarge);
        }
        if t.root.is_empty() {
            t.pack(0);
        } else {
            let mut subtrees: Vec<u32> = t.root.clone();
            subtrees.sort_unstable();
            subtrees.dedup();
            for n in subtrees {
                t.pack(n as usize);
            }
        }
        let (mut arena, mut long) = (Vec::new(), Vec::new());
        let mut boxes = Vec::new();
        for n in &mut t.nodes {
            let w = &mut n.0;
            if w[15] >> 30 != KIND_LEAF {
                continue;
            }
            let (off, len) = (w[0] as usize, w[1] as usize);
            boxes.clear();
            boxes.extend(t.ext[off..off + len].iter().map(|&r| &t.rules[r as usize]));
            let at = arena.len();
            L::push(&boxes, &mut arena, &mut long);
            w[0] = at as u32;
            w[2] = (arena.len() - at) as u32;
        }
        t.arena = arena;
        t.long = long;
        t.node_min = vec![u32::MAX; t.nodes.len()];
        if t.root.is_empty() {
            t.fill_min(0);
        } else {
            for k in 0..t.root.len() {
                t.fill_min(t.root[k] as usize);
            }
        }
        t.n_rules = t.rules.len();
        t.first = t.rules.first().map_or(u32::MAX, |r| r.idx);
        t.rules = Vec::new();
        t.ext = Vec::new();
        Ok(t)
    }

    /// Whether the nodes and leaf entries so far exceed the build's budget.
    fn over_budget(&self) -> bool {
        self.nodes.len() + self.ext.len() > self.budget
    }

    /// Sets `node_min` for `n`'s subtree and returns `n`'s: a leaf's first
    /// candidate (they are in precedence order), the least of the
    /// children's otherwise.
    fn fill_min(&mut self, n: usize) -> u32 {
        if self.node_min[n] != u32::MAX {
            return self.node_min[n];
        }
        let w = self.nodes[n].0;
        let min = match w[15] >> 30 {
            KIND_LEAF => {
                let (off, recs) = (w[0] as usize, w[2] as usize);
                self.arena[off..off + recs]
                    .first()
                    .map_or(u32::MAX, |r| r.idx(0))
            }
            // Exits of unused tests are `FLIPPED_MAX` (never taken).
            KIND_BIN3 => (7..15)
                .filter(|&s| w[s] != FLIPPED_MAX)
                .map(|s| self.fill_min(w[s] as usize))
                .min()
                .unwrap_or(u32::MAX),
            _ => {
                let first = (w[15] & PAYLOAD) as usize;
                let k = 1 + w[..15].iter().filter(|&&t| t != FLIPPED_MAX).count();
                (first..first + k)
                    .map(|c| self.fill_min(c))
                    .min()
                    .unwrap_or(u32::MAX)
            }
        };
        self.node_min[n] = min;
        min
    }

    /// A dimension in which every rule lies within one 64Ki-aligned slice
    /// and which has the most distinct slices (at least
    /// `root_min_slices`), if any.
    fn root_dim(&self, params: TreeParams) -> Option<usize> {
        if self.rules.len() < params.root_min_rules.max(1) {
            return None;
        }
        let mut best: Option<(usize, usize)> = None;
        for d in 0..D {
            if !self.rules.iter().all(|b| b.lo[d] >> 16 == b.hi[d] >> 16) {
                continue;
            }
            let mut s: Vec<u32> = self.rules.iter().map(|b| b.lo[d] >> 16).collect();
            s.sort_unstable();
            s.dedup();
            if s.len() >= params.root_min_slices && best.is_none_or(|(_, n)| s.len() > n) {
                best = Some((d, s.len()));
            }
        }
        best.map(|b| b.0)
    }

    pub fn stats(&self, v6: bool) -> TreeStats {
        let mut leaves = 0;
        let mut leaf_rules = 0;
        let mut packed = 0;
        for n in &self.nodes {
            match n.0[15] >> 30 {
                KIND_LEAF => {
                    leaves += 1;
                    leaf_rules += n.0[1] as usize;
                }
                KIND_BIN3 => packed += 1,
                _ => {}
            }
        }
        TreeStats {
            v6,
            rules: self.n_rules,
            nodes: self.nodes.len(),
            leaves,
            leaf_rules,
            packed,
            depth: self.depth,
            mem_bytes: self.mem_bytes(),
        }
    }

    pub fn depth(&self) -> usize {
        self.depth
    }

    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    pub fn mem_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.arena.capacity() * std::mem::size_of::<L>()
            + self.long.capacity() * std::mem::size_of::<L::Side>()
            + self.root.capacity() * 4
            + self.node_min.capacity() * 4
    }

    fn set_leaf(&mut self, at: usize, rules: &[u32]) {
        let mut w = [0u32; 16];
        w[0] = self.ext.len() as u32;
        w[1] = rules.len() as u32;
        self.ext.extend_from_slice(rules);
        w[15] = (KIND_LEAF << 30) | at as u32;
        self.nodes[at] = Node(w);
    }

    /// True if every point of `region` satisfies rule `r` (so no lower
    /// ranked rule can be the first match while `r` is live).
    fn covers(&self, r: u32, region: &([u32; D], [u32; D])) -> bool {
        let b = &self.rules[r as usize];
        (0..D).all(|d| b.lo[d] <= region.0[d] && b.hi[d] >= region.1[d])
            && b.flags.mask == 0
            && super::compiled::masked_exact(b.proto)
    }

    fn build_node(
        &mut self,
        at: usize,
        rules: Vec<u32>,
        region: ([u32; D], [u32; D]),
        depth: usize,
        params: TreeParams,
        scratch: &mut Scratch,
    ) {
        self.depth = self.depth.max(depth + 1);
        if self.over_budget() {
            // The build has failed: finish the walk at no cost.
            self.set_leaf(at, &[]);
            return;
        }
        // Candidates up to (and including) the first covering rule are the
        // ones that decide a lookup while nothing is dead.
        let effective = rules
            .iter()
            .position(|&r| self.covers(r, &region))
            .map_or(rules.len(), |p| p + 1);
        if effective <= params.leaf_max || depth >= MAX_DEPTH {
            self.set_leaf(at, &rules);
            return;
        }
        let split = match self.choose_split(&rules, &region, params, scratch) {
            Some(s) if s.max_child * 8 <= rules.len() * 7 => s,
            _ => {
                self.set_leaf(at, &rules);
                return;
            }
        };
        let k = split.cuts.len() + 1;
        let first = self.nodes.len();
        self.nodes[at] = Node::inner(split.dim, &split.cuts, first as u32);
        self.nodes.extend(std::iter::repeat_n(Node([0; 16]), k));
        // Distribute rules to children (each child list stays sorted).
        let d = split.dim;
        let mut lists: Vec<Vec<u32>> = (0..k).map(|_| Vec::new()).collect();
        for &r in &rules {
            let b = &self.rules[r as usize];
            let lo = b.lo[d].max(region.0[d]);
            let hi = b.hi[d].min(region.1[d]);
            let c0 = split.cuts.partition_point(|&t| t < lo);
            let c1 = split.cuts.partition_point(|&t| t < hi);
            for l in &mut lists[c0..=c1] {
                l.push(r);
            }
        }
        drop(rules);
        for (c, list) in lists.into_iter().enumerate() {
            let mut sub = region;
            if c > 0 {
                sub.0[d] = split.cuts[c - 1] + 1;
            }
            if c < k - 1 {
                sub.1[d] = split.cuts[c];
            }
            self.build_node(first + c, list, sub, depth + 1, params, scratch);
        }
    }

    /// `(dim, flipped threshold, first child)` of a range-split node with
    /// exactly one cut.
    fn one_cut(&self, n: usize) -> Option<(u32, u32, usize)> {
        let w = &self.nodes[n].0;
        let one = w[15] >> 30 == KIND_INNER && w[0] != FLIPPED_MAX && w[1] == FLIPPED_MAX;
        one.then(|| ((w[15] >> 26) & 0xF, w[0], (w[15] & PAYLOAD) as usize))
    }

    /// Packs chains of one-cut nodes below `n` (inclusive): a one-cut node
    /// with a one-cut child becomes a [`KIND_BIN3`] node holding the binary
    /// tree of up to three levels below it in its own cache line, so a
    /// descent through sets that only split two ways at a time (wildcard-
    /// heavy groups: acl1_10k's both-wild tree is 8 such nodes deep) loads
    /// a third of the lines. The absorbed nodes stay in the array unused.
    fn pack(&mut self, n: usize) {
        let w = self.nodes[n].0;
        match w[15] >> 30 {
            KIND_LEAF | KIND_BIN3 => {}
            _ => match self.one_cut(n) {
                Some((_, _, first))
                    if self.one_cut(first).is_some() || self.one_cut(first + 1).is_some() =>
                {
                    let mut node = [FLIPPED_MAX; 16];
                    let mut dims = 0u32;
                    let mut exits = Vec::with_capacity(8);
                    self.bin3_fill(&mut node, &mut dims, 0, n, &mut exits);
                    node[15] = (KIND_BIN3 << 30) | dims;
                    self.nodes[n] = Node(node);
                    for e in exits {
                        self.pack(e);
                    }
                }
                _ => {
                    let first = (w[15] & PAYLOAD) as usize;
                    let k = 1 + w[..15].iter().filter(|&&t| t != FLIPPED_MAX).count();
                    for c in first..first + k {
                        self.pack(c);
                    }
                }
            },
        }
    }

    /// Fills slot `slot` (breadth-first: 0..7 tests, 7..15 exits) of a
    /// packed node with node `n`: its test if `n` is a one-cut node above
    /// the third level, else `n` as the exit reached by always going left.
    fn bin3_fill(
        &self,
        node: &mut [u32; 16],
        dims: &mut u32,
        slot: usize,
        n: usize,
        exits: &mut Vec<usize>,
    ) {
        if slot < 7 {
            if let Some((dim, t, first)) = self.one_cut(n) {
                node[slot] = t;
                *dims |= dim << (4 * slot);
                self.bin3_fill(node, dims, 2 * slot + 1, first, exits);
                self.bin3_fill(node, dims, 2 * slot + 2, first + 1, exits);
                return;
            }
        }
        // A test left at FLIPPED_MAX never goes right (dimension 0 is as
        // good as any).
        let mut s = slot;
        while s < 7 {
            s = 2 * s + 1;
        }
        node[s] = n as u32;
        exits.push(n);
    }

    /// Best split over all dimensions: minimise the largest child, then the
    /// total (replication).
    fn choose_split(
        &self,
        rules: &[u32],
        region: &([u32; D], [u32; D]),
        params: TreeParams,
        scratch: &mut Scratch,
    ) -> Option<Split> {
        let mut best: Option<Split> = None;
        for d in 0..D {
            if region.0[d] == region.1[d] {
                continue;
            }
            if let Some(s) = self.split_dim(rules, region, d, params, scratch) {
                let better = match &best {
                    None => true,
                    Some(b) => (s.max_child, s.total) < (b.max_child, b.total),
                };
                if better {
                    best = Some(s);
                }
            }
        }
        best
    }

    /// Cuts for dimension `d`: repeatedly bisect the largest piece at the
    /// point that minimises its larger half, up to the fan-out.
    fn split_dim(
        &self,
        rules: &[u32],
        region: &([u32; D], [u32; D]),
        d: usize,
        params: TreeParams,
        scratch: &mut Scratch,
    ) -> Option<Split> {
        let (rlo, rhi) = (region.0[d], region.1[d]);
        scratch.iv.clear();
        for &r in rules {
            let b = &self.rules[r as usize];
            scratch.iv.push((b.lo[d].max(rlo), b.hi[d].min(rhi)));
        }
        // Pieces: (lo, hi) value ranges with their interval lists implicit.
        let mut cuts: Vec<u32> = Vec::new();
        let n = rules.len();
        let c = best_cut(&scratch.iv, rlo, rhi, &mut scratch.a, &mut scratch.b)?;
        if c.1 >= n {
            return None;
        }
        cuts.push(c.0);
        // Grow the fan-out while the biggest piece still splits well.
        while cuts.len() + 1 < params.fanout {
            // Evaluate each piece's size; bisect the largest.
            let mut pieces: Vec<(usize, u32, u32)> = Vec::with_capacity(cuts.len() + 1);
            let mut lo = rlo;
            for (i, &t) in cuts.iter().enumerate() {
                pieces.push((i, lo, t));
                lo = t + 1;
            }
            pieces.push((cuts.len(), lo, rhi));
            let mut best_piece: Option<(usize, u32, usize)> = None; // (size, cut, new max)
            for &(_, plo, phi) in &pieces {
                if plo == phi {
                    continue;
                }
                scratch.iv2.clear();
                scratch.iv2.extend(
                    scratch
                        .iv
                        .iter()
                        .filter(|&&(a, b)| a <= phi && b >= plo)
                        .map(|&(a, b)| (a.max(plo), b.min(phi))),
                );
                let size = scratch.iv2.len();
                if size <= params.leaf_max {
                    continue;
                }
                if let Some((cut, m)) =
                    best_cut(&scratch.iv2, plo, phi, &mut scratch.a, &mut scratch.b)
                {
                    // Only worth a wider node if it shrinks the piece well.
                    if m * 4 <= size * 3 && best_piece.is_none_or(|(s, _, _)| size > s) {
                        best_piece = Some((size, cut, m));
                    }
                }
            }
            match best_piece {
                Some((_, cut, _)) => {
                    let pos = cuts.partition_point(|&t| t < cut);
                    cuts.insert(pos, cut);
                }
                None => break,
            }
        }
        // Child sizes.
        let k = cuts.len() + 1;
        scratch.counts.clear();
        scratch.counts.resize(k + 1, 0);
        for &(a, b) in &scratch.iv {
            let c0 = cuts.partition_point(|&t| t < a);
            let c1 = cuts.partition_point(|&t| t < b);
            scratch.counts[c0] += 1;
            scratch.counts[c1 + 1] -= 1;
        }
        let (mut run, mut max_child, mut total) = (0i64, 0usize, 0usize);
        for &c in &scratch.counts[..k] {
            run += c;
            max_child = max_child.max(run as usize);
            total += run as usize;
        }
        Some(Split {
            dim: d,
            cuts,
            max_child,
            total,
        })
    }

    /// Base index of the best rule in this tree (rules are in precedence
    /// order); `u32::MAX` if empty.
    pub fn first_idx(&self) -> u32 {
        self.first
    }

    /// Where a descent for the (flipped) point `p` starts: the root's child
    /// for `p` (the root is one line, in cache) or the root table's
    /// subtree. Its [`Tree::bound`] is a lower bound for the lookup.
    #[inline(always)]
    pub fn entry(&self, p: &[i32; D]) -> usize {
        self.entry_in(Sse2, p)
    }

    /// [`Tree::entry`] with the instructions `s`.
    #[inline(always)]
    pub fn entry_in<S: Simd>(&self, s: S, p: &[i32; D]) -> usize {
        if self.root.is_empty() {
            self.step(s, 0, p)
        } else {
            self.root[(p[self.root_dim] as u32 >> 16) as usize] as usize
        }
    }

    /// Whether entry `n` is the empty leaf that the root table's slices
    /// without rules share: a lookup skips it without loading its bound.
    #[inline(always)]
    pub fn is_empty_slice(&self, n: usize) -> bool {
        (n == 0) & !self.root.is_empty()
    }

    /// The smallest base index below node `n` (`u32::MAX`: none): a lookup
    /// that already holds a match at or below it skips the subtree.
    #[inline(always)]
    pub fn bound(&self, n: usize) -> u32 {
        self.node_min[n]
    }

    /// The entry for `p` if this tree may hold a match better than `best`
    /// (by its first rule, then by the entry's [`Tree::bound`]).
    #[inline(always)]
    pub fn entry_under(&self, p: &[i32; D], best: u32) -> Option<usize> {
        if self.first >= best {
            return None;
        }
        let at = self.entry(p);
        (self.bound(at) < best).then_some(at)
    }

    /// Node index of the leaf containing the (flipped) point `p`.
    #[inline(always)]
    pub fn descend(&self, p: &[i32; D]) -> usize {
        self.descend_from(self.entry(p), p)
    }

    /// [`Tree::descend`] from node `n` (an [`Tree::entry`]).
    #[inline(always)]
    pub fn descend_from(&self, mut n: usize, p: &[i32; D]) -> usize {
        loop {
            let next = self.step(Sse2, n, p);
            if next == n {
                return n;
            }
            n = next;
        }
    }

    /// One descent step; a leaf maps to itself, without a compare. (A leaf
    /// once shared the range-split path, its compare masked off: branch-free,
    /// but ~9% more instructions a lookup on the 10k sets, and 7-11% slower
    /// on their traces, `bench-results/acl.md`.) A packed binary node (see
    /// [`Tree::pack`]) takes its own path. `s`: the instructions of the
    /// node's compare.
    #[inline(always)]
    fn step<S: Simd>(&self, s: S, n: usize, p: &[i32; D]) -> usize {
        let node = &self.nodes[n].0;
        let meta = node[15];
        match meta >> 30 {
            KIND_BIN3 => bin3_exit(node, p),
            KIND_LEAF => n,
            _ => {
                let dim = ((meta >> 26) & 0xF) as usize;
                (meta & PAYLOAD) as usize + child_index(s, node, point_at(p, dim)) as usize
            }
        }
    }

    /// Descend the lanes in `live` of a burst from their entries (`node[i]`,
    /// see [`Tree::entry`]), interleaved so the node loads of different
    /// packets overlap; each lane leaves the loop when it reaches its leaf
    /// (`node[i]`). Lanes not in `live` are not touched.
    /// Each step prefetches the lane's next node, and a lane that reaches
    /// its leaf prefetches the leaf's first 4 lines for the scan that
    /// follows: on the 100k set (20 MB of trees) that took a lookup from
    /// 239-306 to 152-167 ns (`bench-results/acl_large.md`).
    /// (A lock-step variant without per-lane branches measured slower: it
    /// runs every lane to the deepest lane's depth.) `s`: the instructions
    /// of the nodes' compares (see [`crate::arch::dispatch`]).
    #[inline(always)]
    pub fn descend_burst<S: Simd, const N: usize>(
        &self,
        s: S,
        pts: &[[i32; D]; N],
        node: &mut [usize; N],
        mut live: u32,
    ) {
        // Every lane's first node is asked for before the first is read.
        let mut m = live;
        while m != 0 {
            let i = m.trailing_zeros() as usize;
            m &= m - 1;
            arch::prefetch(&self.nodes[node[i]]);
        }
        while live != 0 {
            let mut m = live;
            while m != 0 {
                let i = m.trailing_zeros() as usize;
                m &= m - 1;
                let next = self.step(s, node[i], &pts[i]);
                if next == node[i] {
                    live &= !(1 << i);
                    // The leaf's first lines, for the scan after.
                    arch::prefetch_lines(self.leaf_list(next), 4);
                } else {
                    // The next round's node, while the other lanes step.
                    arch::prefetch(&self.nodes[next]);
                }
                node[i] = next;
            }
        }
    }

    #[inline(always)]
    fn leaf_list(&self, leaf: usize) -> &[L] {
        let node = &self.nodes[leaf].0;
        let off = node[0] as usize;
        &self.arena[off..off + node[2] as usize]
    }

    /// Diagnostic: (nodes visited, rules checked) for one lookup.
    pub fn cost(&self, p: &[i32; D], ex: u64, bound: u32) -> (usize, usize) {
        let mut n = self.entry(p);
        let mut steps = 1;
        loop {
            let next = self.step(Sse2, n, p);
            if next == n {
                break;
            }
            n = next;
            steps += 1;
        }
        // Candidates under the bound up to the first match, as a scan one
        // by one would check them.
        let mut checks = 0;
        let q = L::probe(p, ex);
        for r in self.leaf_list(n) {
            let hits = r.hits(&q, &self.long, 0, bound);
            let upto = if hits != 0 {
                hits.trailing_zeros() as usize + 1
            } else {
                L::LANES
            };
            checks += (0..upto).filter(|&j| r.idx(j) < bound).count();
            if hits != 0 || r.idx(L::LANES - 1) >= bound {
                break;
            }
        }
        (steps, checks)
    }

    /// First live rule of leaf `leaf` matching the point with base index
    /// in `from..bound` (`from` > 0: the continued lookup of a rule without
    /// a verdict).
    #[inline(always)]
    pub fn scan_leaf(
        &self,
        leaf: usize,
        p: &[i32; D],
        ex: u64,
        dead: Option<&[u64]>,
        from: u32,
        bound: u32,
    ) -> Option<u32> {
        first_live(
            self.leaf_list(leaf),
            &L::probe(p, ex),
            &self.long,
            dead,
            from,
            bound,
        )
    }
}

/// The first live rule of `list` (records in base-index order) matching
/// the point with base index in `from..bound`.
#[inline(always)]
fn first_live<const D: usize, L: Leaf<D>>(
    list: &[L],
    q: &L::Probe,
    long: &[L::Side],
    dead: Option<&[u64]>,
    from: u32,
    bound: u32,
) -> Option<u32> {
    for r in list {
        let mut hits = r.hits(q, long, from, bound);
        while hits != 0 {
            let idx = r.idx(hits.trailing_zeros() as usize);
            hits &= hits - 1;
            match dead {
                Some(dead) if dead[(idx >> 6) as usize] >> (idx & 63) & 1 != 0 => {}
                _ => return Some(idx),
            }
        }
        // Sorted: no later record has an index under the bound.
        if r.idx(L::LANES - 1) >= bound {
            return None;
        }
    }
    None
}

/// `p[d]` for a dimension `d < D`, the only ones inner and packed nodes
/// name. With a power-of-two `D` (IPv4) the index is masked instead of
/// checked (-5% instructions a lookup); past the dimensions it would read
/// another one's value (IPv4) or 0, never panic.
#[inline(always)]
fn point_at<const D: usize>(p: &[i32; D], d: usize) -> i32 {
    debug_assert!(d < D, "dimension {d} of {D}");
    if D.is_power_of_two() {
        p[d & (D - 1)]
    } else if d < D {
        p[d]
    } else {
        0
    }
}

/// The exit of a packed binary node for point `p`: three compares, each
/// choosing the left (`v <= t`) or right subtree, breadth-first slots.
#[inline(always)]
fn bin3_exit<const D: usize>(node: &[u32; 16], p: &[i32; D]) -> usize {
    let meta = node[15];
    let mut s = 0usize;
    for _ in 0..3 {
        let d = ((meta >> (4 * s)) & 0xF) as usize;
        let v = point_at(p, d);
        s = 2 * s + 1 + ((node[s & 15] as i32) < v) as usize;
    }
    node[s & 15] as usize
}

/// Number of thresholds `< v`. Thresholds are sorted (unused ones are
/// `u32::MAX`), so the comparison bits form a run of ones from bit 0 and
/// the count is the run's length: a compare mask and one bit scan (BSF is
/// baseline x86-64; a popcount would be emulated without `-C target-cpu`).
#[inline(always)]
fn child_index<S: Simd>(s: S, node: &[u32; 16], v: i32) -> u32 {
    // All 16 words are compared (one whole number of vectors); bit 15, the
    // meta word, is then cleared.
    let mask = s.lt_mask16(node, v);
    (!(mask & 0x7FFF)).trailing_zeros()
}

#[derive(Default)]
struct Scratch {
    iv: Vec<(u32, u32)>,
    iv2: Vec<(u32, u32)>,
    a: Vec<u32>,
    b: Vec<u32>,
    counts: Vec<i64>,
}

/// Best single cut `c` in `[lo, hi)` for intervals `iv` (clipped to
/// `[lo, hi]`): minimises `max(#{a <= c}, #{b > c})`. Returns the cut and
/// that maximum, or `None` if no cut separates anything.
fn best_cut(
    iv: &[(u32, u32)],
    lo: u32,
    hi: u32,
    a: &mut Vec<u32>,
    b: &mut Vec<u32>,
) -> Option<(u32, usize)> {
    let n = iv.len();
    a.clear();
    b.clear();
    a.extend(iv.iter().map(|x| x.0));
    b.extend(iv.iter().map(|x| x.1));
    a.sort_unstable();
    b.sort_unstable();
    // Candidate cuts c in [lo, hi): interval ends (b) and starts minus one
    // (a - 1), visited in increasing order by merging the two sorted lists.
    // left(c) = #{a <= c}, right(c) = #{b > c}.
    let mut best: Option<(u32, usize)> = None;
    let (mut ia, mut ib) = (0usize, 0usize); // candidate cursors
    let (mut ca, mut cb) = (0usize, 0usize); // count cursors
    let mut last: Option<u32> = None;
    loop {
        while ia < n && a[ia] <= lo {
            ia += 1;
        }
        let next_a = (ia < n).then(|| a[ia] - 1);
        let next_b = (ib < n).then(|| b[ib]);
        let c = match (next_a, next_b) {
            (None, None) => break,
            (Some(x), None) => {
                ia += 1;
                x
            }
            (None, Some(y)) => {
                ib += 1;
                y
            }
            (Some(x), Some(y)) => {
                if x <= y {
                    ia += 1;
                    x
                } else {
                    ib += 1;
                    y
                }
            }
        };
        if c >= hi {
            break;
        }
        if last == Some(c) {
            continue;
        }
        last = Some(c);
        while ca < n && a[ca] <= c {
            ca += 1;
        }
        while cb < n && b[cb] <= c {
            cb += 1;
        }
        let m = ca.max(n - cb);
        if best.is_none_or(|(_, bm)| m < bm) {
            best = Some((c, m));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_cut_separates() {
        let iv = [(0, 10), (20, 30), (40, 50), (60, 70)];
        let (c, m) = best_cut(&iv, 0, 100, &mut Vec::new(), &mut Vec::new()).unwrap();
        assert_eq!(m, 2);
        assert!((30..40).contains(&c), "cut {c}");
        // Fully overlapping intervals: a cut cannot help.
        let iv = [(0, 100), (0, 100)];
        let r = best_cut(&iv, 0, 100, &mut Vec::new(), &mut Vec::new());
        assert!(r.is_none_or(|(_, m)| m == 2));
    }
}
