//! The FIB: a persistent leaf-pushed multibit trie, DIR-24-8 for IPv4 and
//! DIR-24-8-8-...-8 (24-bit first stride, then 13 strides of 8 bits) for IPv6.
//!
//! Entries are `u32`:
//! * `0`: no route;
//! * bit 31 ([`EXT`]) set and bit 30 ([`PAIR`]) clear: the low 30 bits are
//!   the index of a 256-entry group in `pool` that resolves the next 8
//!   address bits;
//! * [`EXT`] and [`PAIR`] set: a *pair* stands for a group whose entries
//!   are all one plain value but one, which leads further down (the path
//!   to a long prefix: an IPv6 /128 alone in its /24 needed a chain of 13
//!   groups, 13 KiB; now 12 pairs and its last level's group, 1.1 KiB);
//!   bits 22..30 are the byte `k` of that one entry, the low 22 bits the
//!   index `p` of the pair, whose two entries are pool entries `2p` (every
//!   byte but `k`) and `2p + 1` (byte `k`). A lookup takes entry
//!   `2p + (byte == k)`: still one load a level, and no branch. Pairs are
//!   packed 128 to a group of the pool ([`Pool::blocks`]). A group whose
//!   one exception is a plain value (where lookups end) stays a group:
//!   pairs there put the pair's index arithmetic in the lanes of the
//!   common bursts (the IPv6 fast path +10% in-process on 1000 /64 routes
//!   through one gateway, `bench-results/route.md`);
//! * otherwise an encoded [`Target`](super::Target) (see `encode`), below
//!   bit 27 (bit 30 tells a burst that a lane's next level is a pair).
//!
//! The first level (2^24 entries, 64 MiB when fully private) and the group pool
//! are [`PArray`]s of 4 KiB pages, so a batch copies only the pages it touches and
//! every untouched page stays shared with older versions. Groups are allocated from
//! a per-version free bitmap (lowest index first, so the pool stays compact), freed
//! when their 256 entries become equal (collapsed into the parent entry), and the
//! pool's tail is trimmed at the end of a batch; freed groups are zeroed so their
//! pages fall back to the shared zero page.
//!
//! Updates follow rte_fib's approach rather than rte_lpm's depth-tagged entries:
//! setting prefix P to value v writes v into P's range *minus* the maximal more
//! specific prefixes of P (taken from the RIB), so entries need no depth field and
//! every write is final. Range arithmetic is done on inclusive `u128` bounds with
//! checked increments (the DPDK 22.11 dir24_8 bug was an overflow at the top of
//! the address space).

use std::collections::HashSet;
use std::mem::size_of;
use triomphe::Arc;

use super::cow::{make_mut, ARC_HEADER};
use super::parray::{all_eq, PArray};
use crate::arch;

/// Longest burst the burst lookups take in one call.
pub(crate) const BURST_MAX: usize = 64;

/// Entry flag: the entry points to a group of the next level.
pub(crate) const EXT: u32 = 1 << 31;
/// With [`EXT`]: the next level is a pair (see the module doc).
const PAIR: u32 = 1 << 30;
/// A dense group's index in an [`EXT`] entry.
const GROUP_MASK: u32 = PAIR - 1;
/// A pair's index in a [`PAIR`] entry; its exceptional byte is above it.
/// (The unit tests take 13 bits, so that the pool groups that can hold
/// pairs, [`PAIR_GROUPS`], are few enough to fill.)
const PAIR_BITS: u32 = if cfg!(test) { 13 } else { 22 };
const PAIR_MASK: u32 = (1 << PAIR_BITS) - 1;
/// Pairs a pool group holds.
const PAIRS_PER_GROUP: usize = GROUP / 2;
/// Pool groups that can hold pairs: those whose pairs' indices fit the
/// entry's 22 bits (the first 32,768). In an IPv6 FIB whole groups are
/// taken above them ([`Fib::DENSE_FLOOR`]), so that the groups that end
/// long prefixes' paths, one each, do not take the pairs' room; an IPv4
/// FIB has no pairs (one level below the first). Past them a group stays
/// whole.
const PAIR_GROUPS: usize = (1 << PAIR_BITS) / PAIRS_PER_GROUP;
// Whole words of the pool's free bitmap (`Fib::take_group`).
static_assertions::const_assert_eq!(PAIR_GROUPS % 64, 0);
const GROUP: usize = 256;
const PAGE: usize = 1024;
const MIDP: usize = 32;
const DIRM: usize = 32;
type Tbl = PArray<u32, PAGE, MIDP, DIRM>;
const GROUPS_PER_DIR: usize = Tbl::PER_DIR / GROUP;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Tab {
    T24,
    Pool,
}

/// See the module doc. `W` is the address width: 32 or 128.
#[derive(Clone)]
pub(crate) struct Fib<const W: u32> {
    tbl24: Tbl,
    /// Behind an `Arc` of its own: a batch that writes no group (most
    /// IPv4 changes) shares it whole, one count, where copying the `Fib`
    /// copied the pool's directory and its free bitmap every version.
    pool: Arc<Pool>,
    /// First-level pages this batch wrote zeros to: each may have become
    /// all zero, and is checked once, at the end of the batch ([`Fib::trim`]),
    /// rather than scanned (4 KiB) after every write, which made deleting
    /// a page's routes one by one quadratic in the page.
    zeroed: Vec<u32>,
}

/// The groups of the levels below the first, and their allocator.
#[derive(Clone)]
struct Pool {
    tbl: Tbl,
    /// One bit per group of `tbl`: set = free.
    free: Vec<u64>,
    /// No free group from [`Fib::DENSE_FLOOR`] up to `free_hint * 64`.
    free_hint: usize,
    used: usize,
    /// The groups that hold pairs, by group index, each with its free
    /// pairs (bit `j` set: pair `g * 128 + j` is free). A group's last
    /// pair freed frees the group.
    blocks: Vec<(u32, [u64; 2])>,
    /// No block with a free pair before `blocks[block_hint]`.
    block_hint: usize,
    /// No free group below `pair_hint * 64` (among [`PAIR_GROUPS`]).
    pair_hint: usize,
    /// Pairs in use.
    pairs: usize,
}

/// What a group could become after a write ([`Fib::group_shape`]).
enum Shape {
    /// One value everywhere.
    Uniform(u32),
    /// `fill` everywhere but at byte `k`, which holds `x`, an [`EXT`] entry.
    Pair { fill: u32, k: usize, x: u32 },
    /// Neither.
    Other,
}

/// What an [`EXT`] entry points to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Child {
    /// A group.
    Group(usize),
    /// Pair `p`, its exceptional byte `k`.
    Pair(usize, usize),
}

impl Child {
    #[inline(always)]
    fn of(e: u32) -> Child {
        debug_assert_ne!(e & EXT, 0);
        if e & PAIR == 0 {
            Child::Group((e & GROUP_MASK) as usize)
        } else {
            Child::Pair(
                (e & PAIR_MASK) as usize,
                ((e & GROUP_MASK) >> PAIR_BITS) as usize,
            )
        }
    }

    fn entry(self) -> u32 {
        match self {
            Child::Group(g) => EXT | g as u32,
            Child::Pair(p, k) => EXT | PAIR | (k as u32) << PAIR_BITS | p as u32,
        }
    }
}

/// The pool index of the entry that [`EXT`] entry `e` leads to for the
/// address byte `byte`: a group's entry `byte`, or a pair's first or
/// second entry. Branch-free (a select), as the burst lookups need it.
#[inline(always)]
fn next_index(e: u32, byte: usize) -> usize {
    let group = ((e & GROUP_MASK) as usize) << 8 | byte;
    let k = ((e & GROUP_MASK) >> PAIR_BITS) as usize;
    let pair = ((e & PAIR_MASK) as usize) << 1 | usize::from(byte == k);
    std::hint::select_unpredictable(e & PAIR != 0, pair, group)
}

impl<const W: u32> Default for Fib<W> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const W: u32> Fib<W> {
    const SHIFT0: u32 = W - 24;
    /// The first group whole groups take: IPv6 leaves the pairs' groups
    /// below it to pairs (see [`PAIR_GROUPS`]).
    const DENSE_FLOOR: usize = if W == 128 { PAIR_GROUPS } else { 0 };

    pub(crate) fn new() -> Self {
        Fib {
            tbl24: Tbl::new(1 << 24, 0),
            pool: Arc::new(Pool {
                tbl: Tbl::new(0, 0),
                free: Vec::new(),
                free_hint: 0,
                used: 0,
                blocks: Vec::new(),
                block_hint: 0,
                pair_hint: 0,
                pairs: 0,
            }),
            zeroed: Vec::new(),
        }
    }

    /// Groups in use (those that hold pairs too).
    pub(crate) fn groups_used(&self) -> usize {
        self.pool.used
    }

    /// Pairs in use (see the module doc).
    pub(crate) fn pairs_used(&self) -> usize {
        self.pool.pairs
    }

    /// Groups allocated in the pool (used + free).
    pub(crate) fn groups_capacity(&self) -> usize {
        self.pool.tbl.capacity() / GROUP
    }

    /// The memory this FIB is charged (`route::limits`): its two paged
    /// arrays (pages written in place, and the shared nodes). O(1).
    pub(crate) fn charge(&self) -> usize {
        self.tbl24.charge() + self.pool.tbl.charge()
    }

    /// Distinct private (non-zero) pages of the first level.
    pub(crate) fn tbl24_pages(&self) -> usize {
        self.tbl24.private_pages()
    }

    pub(crate) fn mem(&self, seen: &mut HashSet<usize>) -> usize {
        let pool = if seen.insert(Arc::as_ptr(&self.pool) as usize) {
            ARC_HEADER
                + size_of::<Pool>()
                + self.pool.tbl.mem(seen)
                + self.pool.free.capacity() * size_of::<u64>()
                + self.pool.blocks.capacity() * size_of::<(u32, [u64; 2])>()
        } else {
            0
        };
        self.tbl24.mem(seen) + pool
    }

    #[inline]
    fn tab(&self, t: Tab) -> &Tbl {
        match t {
            Tab::T24 => &self.tbl24,
            Tab::Pool => &self.pool.tbl,
        }
    }

    #[inline]
    fn tab_mut(&mut self, t: Tab) -> &mut Tbl {
        match t {
            Tab::T24 => &mut self.tbl24,
            Tab::Pool => &mut make_mut(&mut self.pool).tbl,
        }
    }

    #[inline]
    fn get(&self, t: Tab, i: usize) -> u32 {
        *self.tab(t).get(i)
    }

    #[inline]
    fn set(&mut self, t: Tab, i: usize, v: u32) {
        let arr = self.tab_mut(t);
        if *arr.get(i) == v {
            return;
        }
        arr.set(i, v);
        if v == 0 && t == Tab::T24 {
            self.zeroed_page(i / PAGE);
        }
    }

    /// Page `p` of the first level had zeros written: see `zeroed`.
    #[inline]
    fn zeroed_page(&mut self, p: usize) {
        let p = p as u32;
        if self.zeroed.last() != Some(&p) {
            self.zeroed.push(p);
        }
    }

    /// Value of the entry that `addr` resolves to (walks the levels).
    #[inline]
    pub(crate) fn lookup_wide(&self, addr: u128) -> u32 {
        let mut e = *self.tbl24.get((addr >> Self::SHIFT0) as usize);
        let mut shift = Self::SHIFT0;
        while e & EXT != 0 && shift >= 8 {
            shift -= 8;
            e = *self
                .pool
                .tbl
                .get(next_index(e, (addr >> shift) as usize & 0xff));
        }
        e
    }

    /// Asks for the first-level page that a write at `addr` would copy, so
    /// that its 64 lines stream in while the caller walks the RIB (a
    /// one-change version spent ~17% of its time copying that page from
    /// memory, `bench-results/route.md`).
    #[inline]
    pub(crate) fn prefetch_page(&self, addr: u128) {
        let i = (addr >> Self::SHIFT0) as usize;
        if i < self.tbl24.capacity() {
            arch::prefetch_lines(&self.tbl24.page(i / PAGE)[..], PAGE * size_of::<u32>() / 64);
        }
    }

    /// Sets the prefix `addr/len` to `v`, leaving the ranges of `children` (the
    /// maximal strict sub-prefixes of it present in the RIB, sorted) untouched.
    pub(crate) fn apply_prefix(&mut self, addr: u128, len: u8, v: u32, children: &[(u128, u8)]) {
        debug_assert_eq!(v & EXT, 0);
        let hi = addr | Self::host_mask(len);
        if children.is_empty() && u32::from(len) <= 24 {
            // Whole first-level entries and no holes (most routes of a
            // table): straight to them, without the range arithmetic.
            let (a, b) = (
                (addr >> Self::SHIFT0) as usize,
                (hi >> Self::SHIFT0) as usize,
            );
            self.full(Tab::T24, a, b, v);
            return;
        }
        let mut start = Some(addr);
        for &(ca, cl) in children {
            let Some(s) = start else { break };
            if ca > s {
                self.fill(s, ca - 1, v);
            }
            start = (ca | Self::host_mask(cl)).checked_add(1);
        }
        if let Some(s) = start {
            if s <= hi {
                self.fill(s, hi, v);
            }
        }
    }

    #[inline]
    fn host_mask(len: u8) -> u128 {
        let bits = W - len as u32;
        if bits == 128 {
            u128::MAX
        } else {
            (1u128 << bits) - 1
        }
    }

    /// Writes `v` for every address in `[lo, hi]` (inclusive).
    pub(crate) fn fill(&mut self, lo: u128, hi: u128, v: u32) {
        debug_assert!(lo <= hi);
        self.fill_in(Tab::T24, 0, 24, Self::SHIFT0, lo, hi, v);
    }

    /// Fills `[lo, hi]` inside the table segment `t[base .. base + 2^nbits]` whose
    /// entries each cover `2^shift` addresses.
    #[allow(clippy::too_many_arguments)]
    fn fill_in(&mut self, t: Tab, base: usize, nbits: u32, shift: u32, lo: u128, hi: u128, v: u32) {
        let blk = (1u128 << shift) - 1;
        let imask = (1u128 << nbits) - 1;
        let i_lo = ((lo >> shift) & imask) as usize;
        let i_hi = ((hi >> shift) & imask) as usize;
        let lo_part = lo & blk != 0;
        let hi_part = hi & blk != blk;
        if i_lo == i_hi {
            if lo_part || hi_part {
                self.partial(t, base + i_lo, shift, lo, hi, v);
            } else {
                self.full(t, base + i_lo, base + i_lo, v);
            }
            return;
        }
        let (mut a, mut b) = (i_lo, i_hi);
        if lo_part {
            self.partial(t, base + i_lo, shift, lo, lo | blk, v);
            a += 1;
        }
        if hi_part {
            self.partial(t, base + i_hi, shift, hi & !blk, hi, v);
            b -= 1;
        }
        if a <= b {
            self.full(t, base + a, base + b, v);
        }
    }

    /// `[lo, hi]` covers part of the block of entry `t[idx]` (which covers
    /// `2^shift > 1` addresses): descend into (or create) its group.
    fn partial(&mut self, t: Tab, idx: usize, shift: u32, lo: u128, hi: u128, v: u32) {
        let e = self.get(t, idx);
        if e == v {
            return; // the whole block already resolves to v
        }
        let g = if e & EXT == 0 {
            let g = self.alloc_group(e);
            self.set(t, idx, EXT | g as u32);
            g
        } else {
            match Child::of(e) {
                Child::Group(g) => g,
                Child::Pair(p, k) if Self::within(lo, hi, shift - 8, k) => {
                    // All of the write is below the pair's own entry: it
                    // stays a pair, unless its entry becomes its fill.
                    let sub = (1u128 << (shift - 8)) - 1;
                    if lo & sub == 0 && hi & sub == sub {
                        self.full(Tab::Pool, 2 * p + 1, 2 * p + 1, v);
                    } else {
                        self.partial(Tab::Pool, 2 * p + 1, shift - 8, lo, hi, v);
                    }
                    let (fill, x) = self.pair(p);
                    if x == fill {
                        self.set(t, idx, fill);
                        self.free_pair(p);
                    } else if x & EXT == 0 {
                        // Its one exception now ends lookups: a group
                        // again, as `group_shape` would leave it.
                        self.unpair(t, idx, p, k);
                    }
                    return;
                }
                // Written beside its own entry: a whole group again first.
                Child::Pair(p, k) => self.unpair(t, idx, p, k),
            }
        };
        self.fill_in(Tab::Pool, g * GROUP, 8, shift - 8, lo, hi, v);
        self.settle(t, idx, g);
    }

    /// Pair `p` (its own byte `k`), under entry `t[idx]`, made a whole
    /// group again; returns the group.
    fn unpair(&mut self, t: Tab, idx: usize, p: usize, k: usize) -> usize {
        let (fill, x) = self.pair(p);
        let g = self.alloc_group(fill);
        self.set(Tab::Pool, g * GROUP + k, x);
        self.free_pair(p);
        self.set(t, idx, EXT | g as u32);
        g
    }

    /// Whether `[lo, hi]` (inside one entry's block) lies in the part of
    /// it that its byte `k` below resolves, each byte resolving `2^shift`
    /// addresses.
    #[inline]
    fn within(lo: u128, hi: u128, shift: u32, k: usize) -> bool {
        let byte = |a: u128| (a >> shift) as usize & 0xff;
        byte(lo) == k && byte(hi) == k
    }

    /// Group `g`, under entry `t[idx]`, after a write: a group of one value
    /// collapses into the entry; one of one value but at one byte that
    /// leads further down becomes a pair, where a pair can be had (see
    /// [`PAIR_GROUPS`]).
    fn settle(&mut self, t: Tab, idx: usize, g: usize) {
        match self.group_shape(g) {
            Shape::Uniform(u) => {
                self.set(t, idx, u);
                self.free_group(g);
            }
            Shape::Pair { fill, k, x } => {
                if let Some(p) = self.alloc_pair() {
                    self.set(Tab::Pool, 2 * p, fill);
                    self.set(Tab::Pool, 2 * p + 1, x);
                    self.set(t, idx, Child::Pair(p, k).entry());
                    self.free_group(g);
                }
            }
            Shape::Other => {}
        }
    }

    /// Entries `t[a..=b]` are entirely covered: write `v`, freeing any groups below.
    /// Whole first-level pages are not written but pointed at a shared uniform page,
    /// so a short prefix (down to a default route) costs pointers, not 64 MiB.
    #[inline(always)]
    fn full(&mut self, t: Tab, a: usize, b: usize, v: u32) {
        if a == b {
            // One entry (a /24, or one entry of a group): no page scans.
            let old = self.get(t, a);
            if old != v {
                self.set(t, a, v);
                if old & EXT != 0 {
                    self.free_child(old);
                }
            }
            return;
        }
        self.full_range(t, a, b, v);
    }

    /// [`Fib::full`] of more than one entry.
    fn full_range(&mut self, t: Tab, a: usize, b: usize, v: u32) {
        let mut nested = Vec::new();
        let mut i = a;
        while i <= b {
            let p = i / PAGE;
            let end = b.min(p * PAGE + PAGE - 1);
            let (s, e) = (i % PAGE, end % PAGE);
            if t == Tab::T24 && s == 0 && e == PAGE - 1 {
                if !self.tbl24.is_uniform(p, &v) {
                    let old = self.tbl24.page(p);
                    if !self.tbl24.is_canonical(p) && has_ext(&old[..]) {
                        nested.extend(old.iter().filter(|&&x| x & EXT != 0));
                    }
                    self.tbl24.set_uniform(p, v);
                }
                i = end + 1;
                continue;
            }
            let arr = self.tab_mut(t);
            let cur = &arr.page(p)[s..=e];
            if !all_eq(cur, v) {
                if has_ext(cur) {
                    nested.extend(cur.iter().filter(|&&x| x & EXT != 0));
                }
                arr.page_mut(p)[s..=e].fill(v);
                if v == 0 && t == Tab::T24 {
                    self.zeroed_page(p);
                }
            }
            i = end + 1;
        }
        for e in nested {
            self.free_child(e);
        }
    }

    fn group(&self, g: usize) -> &[u32] {
        let off = (g * GROUP) % PAGE;
        &self.pool.tbl.page(g * GROUP / PAGE)[off..off + GROUP]
    }

    /// What group `g` could become (see [`Fib::settle`]): a pair only
    /// where its one exception is an [`EXT`] entry (see the module doc).
    fn group_shape(&self, g: usize) -> Shape {
        let s = self.group(g);
        // Two of the first three entries hold the value of all but one,
        // if any does.
        let fill = if s[0] == s[1] { s[0] } else { s[2] };
        if fill & EXT != 0 {
            return Shape::Other;
        }
        // Entries other than `fill`, a chunk at a time, until two.
        let mut odd = 0;
        for c in s.chunks(32) {
            odd += c.iter().fold(0, |n, &x| n + usize::from(x != fill));
            if odd > 1 {
                return Shape::Other;
            }
        }
        match s.iter().position(|&x| x != fill) {
            None => Shape::Uniform(fill),
            Some(k) if s[k] & EXT != 0 => Shape::Pair { fill, k, x: s[k] },
            Some(_) => Shape::Other,
        }
    }

    /// Pair `p`'s two entries: every byte but its own, and its own.
    fn pair(&self, p: usize) -> (u32, u32) {
        (self.get(Tab::Pool, 2 * p), self.get(Tab::Pool, 2 * p + 1))
    }

    /// A free pair (its entries to be written by the caller), taking a
    /// group for 128 more when none is free; `None` when that group would
    /// be past [`PAIR_GROUPS`].
    fn alloc_pair(&mut self) -> Option<usize> {
        let hint = self.pool.block_hint;
        let at = match self.pool.blocks[hint..].iter().position(|b| b.1 != [0; 2]) {
            Some(i) => hint + i,
            None => {
                // No block has a free pair: the next call need not look
                // again, whether or not a group for more is left.
                make_mut(&mut self.pool).block_hint = self.pool.blocks.len();
                let g = self.take_group(0, PAIR_GROUPS, 0)?;
                let pool = make_mut(&mut self.pool);
                let at = pool.blocks.partition_point(|b| (b.0 as usize) < g);
                pool.blocks.insert(at, (g as u32, [u64::MAX; 2]));
                at
            }
        };
        let pool = make_mut(&mut self.pool);
        // No block before `at` has a free pair (a new block's place may be
        // before the old hint, whose blocks up to it are full).
        pool.block_hint = at;
        let (g, free) = &mut pool.blocks[at];
        let w = usize::from(free[0] == 0);
        let j = free[w].trailing_zeros() as usize;
        free[w] &= !(1 << j);
        pool.pairs += 1;
        Some(*g as usize * PAIRS_PER_GROUP + w * 64 + j)
    }

    /// Frees pair `p` (not what its entries point to); the last pair of a
    /// group frees the group.
    fn free_pair(&mut self, p: usize) {
        let (g, j) = (p / PAIRS_PER_GROUP, p % PAIRS_PER_GROUP);
        let pool = make_mut(&mut self.pool);
        let Ok(at) = pool.blocks.binary_search_by_key(&(g as u32), |b| b.0) else {
            debug_assert!(false, "pair {p} of no block");
            return;
        };
        let free = &mut pool.blocks[at].1;
        free[j / 64] |= 1 << (j % 64);
        let empty = *free == [u64::MAX; 2];
        pool.pairs -= 1;
        pool.block_hint = pool.block_hint.min(at);
        if empty {
            pool.blocks.remove(at);
            self.free_group(g);
        }
    }

    /// Frees what [`EXT`] entry `e` points to, and all below it.
    fn free_child(&mut self, e: u32) {
        match Child::of(e) {
            Child::Group(g) => self.free_group_rec(g),
            Child::Pair(p, _) => {
                let (_, x) = self.pair(p);
                self.free_pair(p);
                if x & EXT != 0 {
                    self.free_child(x);
                }
            }
        }
    }

    /// A whole group, its entries `fill`.
    fn alloc_group(&mut self, fill: u32) -> usize {
        match self.take_group(Self::DENSE_FLOOR, usize::MAX, fill) {
            Some(g) => g,
            None => unreachable!("the pool grows"),
        }
    }

    /// The lowest free group in `lo..hi` (multiples of 64, `hi` possibly
    /// unbounded), its entries `fill`, growing the pool as far as `hi` lets
    /// it; `None` when the range is full.
    fn take_group(&mut self, lo: usize, hi: usize, fill: u32) -> Option<usize> {
        debug_assert!(lo.is_multiple_of(64) && (hi.is_multiple_of(64) || hi == usize::MAX));
        let dense = hi == usize::MAX;
        let pool = make_mut(&mut self.pool);
        let g = loop {
            let hint = if dense {
                pool.free_hint
            } else {
                pool.pair_hint
            };
            let start = (lo / 64).max(hint);
            let end = pool.free.len().min(hi.div_ceil(64));
            if let Some(i) = pool
                .free
                .get(start..end)
                .and_then(|f| f.iter().position(|&w| w != 0))
            {
                let w = start + i;
                if dense {
                    pool.free_hint = w;
                } else {
                    pool.pair_hint = w;
                }
                let bit = pool.free[w].trailing_zeros() as usize;
                pool.free[w] &= !(1u64 << bit);
                break w * 64 + bit;
            }
            // Nothing free below `end` (nor below `start`): the next call
            // need not look again.
            if dense {
                pool.free_hint = end;
            } else {
                pool.pair_hint = end;
            }
            if pool.free.len() * 64 >= hi {
                return None;
            }
            // Grow by one dir of groups, all free (the hints stay: nothing
            // below the new dir was free).
            let old = pool.tbl.capacity() / GROUP;
            pool.tbl.grow_to(pool.tbl.capacity() + Tbl::PER_DIR);
            pool.free.resize((old + GROUPS_PER_DIR) / 64, u64::MAX);
        };
        pool.used += 1;
        let off = (g * GROUP) % PAGE;
        let page = pool.tbl.page_mut(g * GROUP / PAGE);
        page[off..off + GROUP].fill(fill);
        Some(g)
    }

    /// Frees `g` (its entries are plain values).
    fn free_group(&mut self, g: usize) {
        let off = (g * GROUP) % PAGE;
        let p = g * GROUP / PAGE;
        let pool = make_mut(&mut self.pool);
        if !all_eq(&pool.tbl.page(p)[off..off + GROUP], 0) {
            pool.tbl.page_mut(p)[off..off + GROUP].fill(0);
        }
        pool.tbl.canonicalize(p);
        pool.free[g / 64] |= 1u64 << (g % 64);
        if g >= Self::DENSE_FLOOR {
            pool.free_hint = pool.free_hint.min(g / 64);
        }
        if g < PAIR_GROUPS {
            pool.pair_hint = pool.pair_hint.min(g / 64);
        }
        pool.used -= 1;
    }

    fn free_group_rec(&mut self, g: usize) {
        let nested: Vec<u32> = self
            .group(g)
            .iter()
            .copied()
            .filter(|&x| x & EXT != 0)
            .collect();
        for e in nested {
            self.free_child(e);
        }
        self.free_group(g);
    }

    /// End of batch: first-level pages left all zero go back to the shared
    /// zero page, and whole trailing dirs of free groups are dropped.
    pub(crate) fn trim(&mut self) {
        self.tbl24.end_batch();
        let mut zeroed = std::mem::take(&mut self.zeroed);
        zeroed.sort_unstable();
        zeroed.dedup();
        for p in zeroed {
            self.tbl24.canonicalize(p as usize);
        }
        // Read-only checks first: a batch that wrote no group must not
        // copy the pool here.
        let trailing_free = |p: &Pool| {
            let Some(d) = p.tbl.dirs().checked_sub(1) else {
                return false;
            };
            let words = d * GROUPS_PER_DIR / 64..(d + 1) * GROUPS_PER_DIR / 64;
            let free = p.free[words].iter().all(|&w| w == u64::MAX);
            // Freed groups are zeroed (`free_group`).
            debug_assert!(!free || p.tbl.dir_is_zero(d));
            free && p.tbl.dir_is_zero(d)
        };
        let untidy = |p: &Pool| {
            p.free.capacity() != p.free.len()
                || p.free_hint > p.free.len()
                || p.pair_hint > p.free.len()
                || p.blocks.capacity() != p.blocks.len()
        };
        if !trailing_free(&self.pool) && !untidy(&self.pool) {
            return;
        }
        let pool = make_mut(&mut self.pool);
        while trailing_free(pool) {
            let d = pool.tbl.dirs() - 1;
            pool.tbl.pop_dir();
            pool.free.truncate(d * GROUPS_PER_DIR / 64);
        }
        // Exact capacity, as a copy of this version has, whether the bitmap
        // grew (`resize` rounds up) or lost dirs in this batch: its accounted
        // bytes must not depend on its history. Reallocates only then.
        pool.free.shrink_to_fit();
        pool.free_hint = pool.free_hint.min(pool.free.len());
        pool.pair_hint = pool.pair_hint.min(pool.free.len());
        pool.blocks.shrink_to_fit();
    }
}

/// A FIB's burst lookup, so [`Routing`](super::Routing) writes its burst
/// body (resolving entries, ECMP) once for both families.
pub(crate) trait BurstFib {
    /// The address type (`u32` or `u128`).
    type Addr: Copy;
    /// Entries for `dsts` (at most [`BURST_MAX`]); `out` is at least as long.
    fn lookup_burst(&self, dsts: &[Self::Addr], out: &mut [u32]);
}

impl BurstFib for Fib<32> {
    type Addr = u32;
    #[inline(always)]
    fn lookup_burst(&self, dsts: &[u32], out: &mut [u32]) {
        Fib::<32>::lookup_burst(self, dsts, out);
    }
}

impl BurstFib for Fib<128> {
    type Addr = u128;
    #[inline(always)]
    fn lookup_burst(&self, dsts: &[u128], out: &mut [u32]) {
        Fib::<128>::lookup_burst(self, dsts, out);
    }
}

impl Fib<32> {
    /// Entry for `addr` (at most two dependent loads).
    #[inline(always)]
    pub(crate) fn lookup(&self, addr: u32) -> u32 {
        let e = *self.tbl24.get((addr >> 8) as usize);
        if e & EXT == 0 {
            e
        } else {
            *self.pool.tbl.get(next_index(e, (addr & 0xff) as usize))
        }
    }

    /// Entries for a burst of at most [`BURST_MAX`] addresses (see
    /// [`Fib::first_level`]); `out` must be at least as long as `dsts`.
    #[inline]
    pub(crate) fn lookup_burst(&self, dsts: &[u32], out: &mut [u32]) {
        let mut at = [&0u32; BURST_MAX];
        let out = &mut out[..dsts.len()];
        // Lane 0's first-level page is every lane's (see `first_level`).
        let one_page = dsts
            .first()
            .is_some_and(|&d0| dsts.iter().fold(0, |a, &d| a | (d ^ d0)) >> 8 < PAGE as u32);
        self.first_level(dsts.len(), |k| (dsts[k] >> 8) as usize, one_page, &mut at);
        // Each lane's entry loaded, and a group's second level taken, in one
        // pass (`bench-results/fib.md`, 2026-12-04).
        for ((o, &d), a) in out.iter_mut().zip(dsts).zip(at.iter()) {
            let e = **a;
            *o = if e & EXT == 0 {
                e
            } else {
                *self.pool.tbl.get(next_index(e, (d & 0xff) as usize))
            };
        }
    }
}

impl Fib<128> {
    /// Entry for `addr`.
    #[inline]
    pub(crate) fn lookup(&self, addr: u128) -> u32 {
        self.lookup_wide(addr)
    }

    /// Entries for a burst of at most [`BURST_MAX`] addresses, level by
    /// level: each level prefetches every lane's entry, then loads them, so
    /// a level costs about one miss for the whole burst (48.7 vs 81.9 ns
    /// per lookup on table addresses before the prefetch,
    /// `bench-results/fib.md`). The address bytes come from two `u64`
    /// words, and a burst through a few groups walks the pool's directory
    /// once a page (the IPv6 fast path x1.17 in-process, 1000 /64 routes,
    /// `bench-results/throughput_v6.md`). The levels that read only bits
    /// every lane shares are walked once for the burst (the IPv6 fast path
    /// -20% instructions a packet, 1000 /64 routes in one /48; random table
    /// addresses +5 instructions a lookup, `bench-results/fib.md`). `out`
    /// must be at least as long as `dsts`.
    #[inline]
    pub(crate) fn lookup_burst(&self, dsts: &[u128], out: &mut [u32]) {
        let mut at = [&0u32; BURST_MAX];
        let out = &mut out[..dsts.len()];
        // Lane 0's first-level page is every lane's (see `first_level`): the
        // first level reads the top 24 bits, in the high word.
        let one_page = dsts.first().is_some_and(|&d0| {
            let h0 = (d0 >> 64) as u64;
            dsts.iter().fold(0, |a, &d| a | ((d >> 64) as u64 ^ h0)) >> 40 < PAGE as u64
        });
        self.first_level(dsts.len(), |k| (dsts[k] >> 104) as usize, one_page, &mut at);
        // Every lane's entry ORed: EXT, some lane descends; PAIR, some
        // lane's next level is a pair (a plain entry never sets it).
        let mut any = 0;
        for (o, a) in out.iter_mut().zip(at.iter()) {
            let v = **a;
            *o = v;
            any |= v;
        }
        // No lane descends (always so without groups).
        if any & EXT == 0 {
            return;
        }
        let pool = &self.pool.tbl;
        let n = out.len();
        assert!(n <= BURST_MAX);
        // The address bits below the first level as two words: the levels
        // at shifts 96..64 read the high one (a byte of a `u128` shifted by
        // a variable amount is a dozen instructions; of a `u64`, two).
        let (mut hi, mut lo) = ([0u64; BURST_MAX], [0u64; BURST_MAX]);
        for (k, &d) in dsts.iter().enumerate().take(n) {
            (hi[k], lo[k]) = ((d >> 64) as u64, d as u64);
        }
        // Every level's entry indexes, overwritten for the burst's lanes
        // each level (made once: a fresh array a level was a 512-byte
        // memset each time).
        let mut idx = [0usize; BURST_MAX];
        let mut shift = 104u32;
        // The levels that read only address bits every lane shares (a burst
        // into one /48 or /56: a site's or a data centre's traffic, or
        // flows to the /64s of one network) are the same walk for every
        // lane: lane 0 walks them alone, one load a level instead of a pass
        // over the burst. From the first level down to such a level, every
        // lane's entry is the same (a shared level needs the top 32 bits
        // shared, so the first level's 24 are), so either all lanes go on
        // below it or none does; a lane's kept entry address (`at`) is
        // needed only once it has stopped in the passes below. Looked for
        // only when the burst's first and last lanes share those 32 bits,
        // so lanes from all over the table pay one compare, not a pass
        // (`bench-results/fib.md`, 2026-12-04).
        if (dsts[0] ^ dsts[n - 1]) >> 96 == 0 {
            let differ = hi[..n].iter().fold(0, |a, &h| a | (h ^ hi[0]));
            let shared_to = 136 - differ.leading_zeros();
            while any & EXT != 0 && shift >= shared_to {
                shift -= 8;
                let byte = (hi[0] >> (shift - 64)) as usize & 0xff;
                let v = *pool.get(next_index(out[0], byte));
                out.fill(v);
                any = v;
            }
        }
        while any & EXT != 0 && shift >= 8 {
            shift -= 8;
            let pairs = any & PAIR != 0;
            any = 0;
            let (words, sh) = if shift >= 64 {
                (&hi, shift - 64)
            } else {
                (&lo, shift)
            };
            // This level's entry of every lane, branch-free: which lanes
            // still descend is data-dependent and unpredictable, and a
            // mispredicted branch would squash the loads in flight. A lane
            // that has finished walks to pool entry 0 (a hot line) and keeps
            // the address of its own entry (a select, not a branch).
            // The same pass counts the lanes in the previous lane's page.
            // Without a pair among the lanes' entries (one branch a level),
            // the groups' index alone: a pair's select in every lane cost
            // the IPv6 fast path ~10% in-process (`bench-results/route.md`).
            let same = if pairs {
                level_indexes_paired(&out[..n], words, sh, &mut idx)
            } else {
                level_indexes(&out[..n], words, sh, &mut idx, |e, b| {
                    ((e & GROUP_MASK) as usize) << 8 | b
                })
            };
            // Every lane's miss in flight at once, before any lane waits.
            // When most lanes are in the previous lane's page (a burst
            // through a few groups: few routes, or flows in trains), a lane
            // there reuses its page instead of walking the pool's directory
            // again; otherwise every lane walks it, without a branch a lane.
            if 2 * same >= n {
                let mut memo = (idx[0] / PAGE, pool.page(idx[0] / PAGE));
                for k in 0..n {
                    let i = idx[k];
                    if i / PAGE != memo.0 {
                        memo = (i / PAGE, pool.page(i / PAGE));
                    }
                    let next = &memo.1[i % PAGE];
                    at[k] = std::hint::select_unpredictable(out[k] & EXT != 0, next, at[k]);
                    arch::prefetch(at[k]);
                }
            } else {
                for k in 0..n {
                    let next = pool.get(idx[k]);
                    at[k] = std::hint::select_unpredictable(out[k] & EXT != 0, next, at[k]);
                    arch::prefetch(at[k]);
                }
            }
            // A lane that has finished kept its entry's address above, so
            // its load gives its value again.
            for k in 0..n {
                let v = *at[k];
                out[k] = v;
                any |= v;
            }
        }
    }
}

impl<const W: u32> Fib<W> {
    /// The first level of a burst lookup: `at[k]` is the first-level
    /// entry at the k-th index of `idx`, asked for (prefetched). Every
    /// lane's entry is asked for before the caller loads any (`**at[k]`,
    /// in the same pass as its first use of them), so the whole burst's
    /// cache misses are in flight together (plain loads alone overlap only
    /// as many as the core's reorder window holds: 16.6 vs 27.5 ns per
    /// lookup on random IPv4 addresses, `bench-results/fib.md`). Each lane's
    /// entry address is kept in `at` from its prefetch to its load, so the
    /// directory is walked once (walking it again measured 5-10% slower at
    /// bursts of 64 once it had three levels, `bench-results/route.md`). At
    /// most [`BURST_MAX`] lanes.
    ///
    /// `idx(k)` is lane `k`'s first-level index, for `k < n`; `one_page`
    /// says that there is a lane 0 and every lane is in its page. When
    /// every lane of the burst falls in one page of the first level (local
    /// traffic: a site's, a data centre's; the flows to a few thousand
    /// routes), the directory is walked once for the burst instead of once
    /// a lane (three dependent loads and their index arithmetic): the
    /// plain IPv4 recipe x1.011 and x1.063, its IPv6 one x1.066 and x1.013
    /// in interleaved A/Bs on a noisy host (`bench-results/throughput.md`,
    /// 2026-12-05). Which case holds is one branch a burst, after a
    /// branch-free pass of the caller's over its addresses (vector XORs and
    /// ORs); a burst with any lane elsewhere walks as before, so lanes from
    /// all over the table pay that pass only, and no lane pays a
    /// mispredicted branch. A wrong `one_page` gives wrong entries (never
    /// undefined behaviour): the callers' checks are in the tests.
    #[inline(always)]
    fn first_level<'a>(
        &'a self,
        n: usize,
        idx: impl Fn(usize) -> usize,
        one_page: bool,
        at: &mut [&'a u32; BURST_MAX],
    ) {
        assert!(n <= BURST_MAX);
        if one_page {
            let page = self.tbl24.page(idx(0) / PAGE);
            for (k, a) in at.iter_mut().enumerate().take(n) {
                *a = &page[idx(k) % PAGE];
                arch::prefetch(*a);
            }
        } else {
            for (k, a) in at.iter_mut().enumerate().take(n) {
                *a = self.tbl24.get(idx(k));
                arch::prefetch(*a);
            }
        }
    }
}

/// A burst lookup's entry indexes of a level (see `Fib::<128>::lookup_burst`):
/// `idx[k]` is where lane `k` goes from its entry `out[k]` (0 for a lane
/// that has finished), its address byte read from `words[k] >> sh`, by
/// `next` ([`next_index`], or a group's index alone when no entry is a
/// pair). Returns how many lanes are in the previous lane's page.
#[inline(always)]
fn level_indexes(
    out: &[u32],
    words: &[u64; BURST_MAX],
    sh: u32,
    idx: &mut [usize; BURST_MAX],
    next: impl Fn(u32, usize) -> usize,
) -> usize {
    let (mut same, mut prev) = (0, usize::MAX);
    for (k, &e) in out.iter().enumerate() {
        // All ones while the lane descends (EXT is the sign bit).
        let live = ((e as i32) >> 31) as usize;
        let byte = (words[k] >> sh) as usize & 0xff;
        let i = next(e, byte) & live;
        idx[k] = i;
        same += usize::from(i / PAGE == prev);
        prev = i / PAGE;
    }
    same
}

/// [`level_indexes`] by [`next_index`], out of line: the loop where no
/// entry is a pair stays the groups' alone.
#[inline(never)]
fn level_indexes_paired(
    out: &[u32],
    words: &[u64; BURST_MAX],
    sh: u32,
    idx: &mut [usize; BURST_MAX],
) -> usize {
    level_indexes(out, words, sh, idx, next_index)
}

/// Whether any entry points to a group (branch-free so it vectorises).
fn has_ext(s: &[u32]) -> bool {
    s.iter().fold(0, |acc, &x| acc | x) & EXT != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pool grown to three dirs, then back to one: each time it
    /// accounts exactly what a copy of it does.
    #[test]
    fn a_pool_grown_or_shrunk_counts_what_its_copy_does() {
        let mut f = Fib::<32>::new();
        // One group per /25, each under its own /24.
        let n = 2 * GROUPS_PER_DIR + 10;
        for i in 0..n as u128 {
            f.apply_prefix(i << 8, 25, 7, &[]);
        }
        f.trim();
        assert_eq!(
            (f.groups_used(), f.groups_capacity()),
            (n, 3 * GROUPS_PER_DIR)
        );
        let copy = f.clone();
        assert_eq!(f.mem(&mut HashSet::new()), copy.mem(&mut HashSet::new()));
        drop(copy);
        for i in GROUPS_PER_DIR as u128..n as u128 {
            f.apply_prefix(i << 8, 25, 0, &[]);
        }
        f.trim();
        assert_eq!(f.groups_capacity(), GROUPS_PER_DIR);
        let copy = f.clone();
        assert_eq!(f.mem(&mut HashSet::new()), copy.mem(&mut HashSet::new()));
    }

    /// The page prefetch takes any address of the family, at both ends,
    /// on an empty and on a written table, and changes nothing.
    #[test]
    fn prefetch_page_takes_every_address() {
        let mut f4 = Fib::<32>::new();
        let mut f6 = Fib::<128>::new();
        for _ in 0..2 {
            for a in [0, 0x0a00_0000, u128::from(u32::MAX)] {
                f4.prefetch_page(a);
            }
            for a in [0, 0x2001_0db8 << 96, u128::MAX] {
                f6.prefetch_page(a);
            }
            f4.apply_prefix(0x0a00_0000, 24, 5, &[]);
            f6.apply_prefix(0x2001_0db8 << 96, 48, 5, &[]);
        }
        assert_eq!((f4.lookup(0x0a00_0001), f4.lookup(0x0b00_0000)), (5, 0));
        assert_eq!(f6.lookup((0x2001_0db8 << 96) | 1), 5);
    }

    #[test]
    fn fill_and_collapse_v4() {
        let base = Fib::<32>::new();
        let base_mem = base.mem(&mut HashSet::new());
        let mut f = base.clone();
        // 10.0.0.0/8 -> 5, 10.1.2.3/32 -> 6
        f.apply_prefix(0x0a00_0000, 8, 5, &[(0x0a01_0203, 32)]);
        f.apply_prefix(0x0a01_0203, 32, 6, &[]);
        assert_eq!(f.lookup(0x0a01_0203), 6);
        assert_eq!(f.lookup(0x0a01_0202), 5);
        assert_eq!(f.lookup(0x0aff_ffff), 5);
        assert_eq!(f.lookup(0x0b00_0000), 0);
        assert_eq!(f.groups_used(), 1);
        // delete the /32: falls back to the /8, group collapses
        f.apply_prefix(0x0a01_0203, 32, 5, &[]);
        assert_eq!(f.groups_used(), 0);
        assert_eq!(f.lookup(0x0a01_0203), 5);
        f.apply_prefix(0x0a00_0000, 8, 0, &[]);
        f.trim();
        assert_eq!(f.tbl24_pages(), 0);
        assert_eq!(f.groups_capacity(), 0);
        assert_eq!(f.mem(&mut HashSet::new()), base_mem);
    }

    /// `base` (64 lanes) with lane `at` replaced by `other`.
    fn one_lane_elsewhere<A: Copy>(base: &[A], at: usize, other: A) -> Vec<A> {
        let mut b = base.to_vec();
        b[at] = other;
        b
    }

    /// Every burst, at lengths 1 to 64, gives each lane what the one-address
    /// lookup gives it.
    fn assert_bursts_as_single<A: Copy + std::fmt::LowerHex>(
        bursts: &[Vec<A>],
        burst: impl Fn(&[A], &mut [u32]),
        single: impl Fn(A) -> u32,
    ) {
        for b in bursts {
            for len in [1, 2, 17, 31, 32, 64] {
                let mut out = [0u32; BURST_MAX];
                burst(&b[..len], &mut out[..len]);
                for (k, &a) in b[..len].iter().enumerate() {
                    assert_eq!(out[k], single(a), "len {len} lane {k} {a:#x}");
                }
            }
        }
    }

    /// IPv4 burst lookups whose lanes all fall in one page of the first
    /// level (its directory walked once for the burst), and bursts where
    /// one lane (first, inside, last) is in the next page or far away:
    /// every lane gets what the one-address lookup gives, /24s and the
    /// longer routes below them alike.
    #[test]
    fn v4_burst_lookups_in_one_first_level_page_and_across() {
        let mut f = Fib::<32>::new();
        // A page of the first level is 1024 /24s, a /14: 10.0.0.0/14 is
        // one, 10.4.0.0/14 the next.
        f.apply_prefix(0x0a00_0000, 8, 1, &[]);
        for k in (0..2048u128).step_by(3) {
            // Every third /24 of 10.0/13 a route of its own.
            f.apply_prefix(0x0a00_0000 | (k << 8), 24, 100 + k as u32, &[]);
        }
        // Longer routes (a group below their /24) in both pages.
        for k in [5u128, 700, 1030, 2000] {
            f.apply_prefix(0x0a00_0000 | (k << 8) | 0x80, 25, 10_000 + k as u32, &[]);
        }
        f.trim();
        // Every lane in the first page, some below a /25.
        let page: Vec<u32> = (0..64)
            .map(|k| 0x0a00_0000 + (((k * 37) % 1024) << 8) + (k * 61) % 256)
            .collect();
        let bursts = [
            page.clone(),
            (0..64).map(|k| 0x0a00_0580 + k).collect(),
            // One lane in the next page: the first, one inside, the last.
            one_lane_elsewhere(&page, 0, 0x0a04_0000),
            one_lane_elsewhere(&page, 17, 0x0a04_0681),
            one_lane_elsewhere(&page, 63, 0x0a07_d0ff),
            // One lane far away (no route) and one in the lowest page.
            one_lane_elsewhere(&page, 9, 0xc000_0201),
            one_lane_elsewhere(&page, 40, 7),
        ];
        assert_bursts_as_single(&bursts, |b, o| f.lookup_burst(b, o), |a| f.lookup(a));
        // The routes are there (not all lanes 0 or all the /8).
        assert_eq!(f.lookup(0x0a00_0001), 100);
        assert_eq!(f.lookup(0x0a00_0581), 10_005);
        assert_eq!(f.lookup(0x0a04_0681), 10_000 + 1030);
        assert_eq!(f.lookup(0x0a00_0101), 1);
        assert_eq!(f.lookup(0xc000_0201), 0);
    }

    /// [`v4_burst_lookups_in_one_first_level_page_and_across`]'s IPv6
    /// counterpart: a first-level page is 1024 /24s (a /14).
    #[test]
    fn v6_burst_lookups_in_one_first_level_page_and_across() {
        let mut f = Fib::<128>::new();
        let p24 = |k: u128| (0x20_0000 + k) << 104;
        let p48 = |k: u128| p24(k) | (0x42u128 << 80);
        f.apply_prefix(0x2000u128 << 112, 16, 1, &[]);
        for k in (0..2048u128).step_by(3) {
            f.apply_prefix(p24(k), 24, 100 + k as u32, &[]);
        }
        // /48s (groups below their /24) in both pages.
        for k in [6u128, 700, 1029, 2001] {
            f.apply_prefix(p48(k), 48, 10_000 + k as u32, &[]);
        }
        f.trim();
        let page: Vec<u128> = (0..64u128)
            .map(|k| {
                if k % 2 == 0 {
                    p24((k * 37) % 1024) | k
                } else {
                    p48((k * 37) % 1024) | k
                }
            })
            .collect();
        let bursts = [
            page.clone(),
            one_lane_elsewhere(&page, 0, p24(1024) | 1),
            one_lane_elsewhere(&page, 17, p48(1029)),
            one_lane_elsewhere(&page, 63, p48(2001)),
            one_lane_elsewhere(&page, 9, 0x2001u128 << 112),
        ];
        assert_bursts_as_single(&bursts, |b, o| f.lookup_burst(b, o), |a| f.lookup(a));
        assert_eq!(f.lookup(p24(3)), 103);
        assert_eq!(f.lookup(p48(1029)), 10_000 + 1029);
        assert_eq!(f.lookup(p24(1)), 1);
    }

    /// IPv6 burst lookups through a pool of more than one dir, with each
    /// level walked both ways (most lanes in their neighbour's page, and
    /// lanes scattered over the pool) and lanes that finish at different
    /// levels: every lane gets its route.
    #[test]
    fn v6_burst_lookups_clustered_and_scattered() {
        let mut f = Fib::<128>::new();
        // /48 `i` (value i + 1) under a /40 of its own, and the /48 at
        // byte 0x80 of that /40 with the same value (the lanes look up
        // byte 0): a group each at the 40-48 level (one /48 alone would
        // make it a pair), more than one dir's worth.
        let n = GROUPS_PER_DIR as u128 + 500;
        let p48 = |i: u128| (0x2001u128 << 112) | (i << 88);
        for i in 0..n {
            f.apply_prefix(p48(i), 48, i as u32 + 1, &[]);
            f.apply_prefix(p48(i) | 0x80 << 80, 48, i as u32 + 1, &[]);
        }
        // /64 `j` under /48 0 (value 100_000 + j).
        let p64 = |j: u128| p48(0) | (j << 64);
        for j in 0..300 {
            f.apply_prefix(p64(j), 64, 100_000 + j as u32, &[]);
        }
        f.trim();
        assert!(f.groups_used() > GROUPS_PER_DIR);
        let want = |a: u128| -> u32 {
            if a >> 112 != 0x2001 || (a >> 104) & 0xff != 0 {
                0
            } else if a >> 80 == p48(0) >> 80 && (a >> 64) & 0xffff < 300 {
                100_000 + ((a >> 64) & 0xffff) as u32
            } else if (a >> 88) & 0xffff < n {
                ((a >> 88) & 0xffff) as u32 + 1
            } else {
                0
            }
        };
        let bursts: [Vec<u128>; 3] = [
            // Clustered: the /64s of /48 0, neighbours in one page.
            (0..64).map(|k| p64(k * 3) | 5).collect(),
            // Scattered over the whole pool.
            (0..64).map(|k| p48((k * 977) % n) | 1).collect(),
            // Both, and lanes that stop at the first level (outside the
            // /24) or on the way down (no /48 there).
            (0..64u128)
                .map(|k| match k % 4 {
                    0 => p64(k) | 9,
                    1 => p48((k * 601) % n),
                    2 => 0x2002u128 << 112,
                    _ => p48(n + k),
                })
                .collect(),
        ];
        for b in &bursts {
            for len in [1, 31, 32, 64] {
                let mut out = [0u32; BURST_MAX];
                f.lookup_burst(&b[..len], &mut out[..len]);
                for (k, &a) in b[..len].iter().enumerate() {
                    assert_eq!((out[k], f.lookup(a)), (want(a), want(a)), "lane {k} {a:#x}");
                }
            }
        }
    }

    /// IPv6 burst lookups whose lanes share their top `c` address bits,
    /// for every kind of `c` around the levels' byte boundaries (the levels
    /// that read only shared bits are walked once for the burst), over
    /// routes that end inside and below the shared part: every lane gets
    /// what the one-address lookup gives.
    #[test]
    fn v6_burst_lookups_with_a_shared_prefix() {
        let b: u128 = 0x2001_0db8_0a01_0203_0405_0607_0809_0a0b;
        let lens = [24u32, 32, 40, 48, 56, 64, 72, 100, 128];
        // Every length here is at least 24.
        let net = |a: u128, l: u32| a & (u128::MAX << (128 - l));
        let mut f = Fib::<128>::new();
        // Shortest first, so each more specific route overwrites its range.
        for &l in &lens {
            f.apply_prefix(net(b, l), l as u8, l, &[]);
            let sibling = b ^ (1 << (128 - l));
            f.apply_prefix(net(sibling, l), l as u8, 1000 + l, &[]);
        }
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (u128::from(x) << 64) | u128::from(x.rotate_left(29))
        };
        let bases = [
            b,
            b ^ (1 << 60),
            b ^ (1 << 70),
            b ^ (1 << 90),
            b ^ (1 << 100),
            0x2002 << 112,
        ];
        let mut finished_shared = 0;
        for &base in &bases {
            for c in [
                0u32, 1, 8, 23, 24, 25, 31, 32, 33, 40, 47, 48, 55, 56, 63, 64, 65, 72, 100, 127,
                128,
            ] {
                let low = if c == 0 {
                    u128::MAX
                } else {
                    (1u128 << (128 - c)).wrapping_sub(1)
                };
                for len in [1, 2, 31, 64] {
                    let burst: Vec<u128> = (0..len)
                        .map(|k| match (k, c) {
                            (0, _) | (_, 128) => base,
                            // Lane 1 differs at the first unshared bit.
                            (1, _) => base ^ (1 << (127 - c)),
                            _ => base ^ (rnd() & low),
                        })
                        .collect();
                    let mut out = [0u32; BURST_MAX];
                    f.lookup_burst(&burst, &mut out[..len]);
                    for (k, &a) in burst.iter().enumerate() {
                        assert_eq!(out[k], f.lookup(a), "c {c} len {len} lane {k} {a:#x}");
                    }
                    let stop = |e: u32| (24..=64).contains(&e) && c >= e;
                    finished_shared += usize::from(len > 1 && out[..len].iter().all(|&e| stop(e)));
                }
            }
        }
        // Bursts that ended inside the shared levels were among them.
        assert!(finished_shared > 0);
    }

    /// An IPv6 host route alone in its /24 is a chain of pairs, not of
    /// groups; a second one that shares its path down to byte 10 makes
    /// that level a group (two exceptions) and leaves pairs above and
    /// below; deleting it brings back the one chain, and deleting both the
    /// empty table's memory. Single and burst lookups agree throughout.
    #[test]
    fn host_routes_are_chains_of_pairs() {
        let base = Fib::<128>::new();
        let base_mem = base.mem(&mut HashSet::new());
        let mut f = base.clone();
        let a: u128 = 0x2001_0db8_0a01_0203_0405_0607_0809_0a0b;
        // Differs from `a` first in byte 10 (bits 40..48).
        let b: u128 = a ^ 0x80 << 40;
        let check = |f: &Fib<128>, want: &[(u128, u32)]| {
            let addrs: Vec<u128> = want.iter().map(|w| w.0).collect();
            let mut out = vec![0u32; addrs.len()];
            f.lookup_burst(&addrs, &mut out);
            for (&(x, v), &o) in want.iter().zip(&out) {
                assert_eq!((f.lookup(x), o), (v, v), "{x:#x}");
            }
        };
        f.apply_prefix(a, 128, 7, &[]);
        f.trim();
        // Bytes 3..=14 a pair each (in one group), byte 15 a group: the
        // last level's one exception is the route itself, and its level
        // stays a group (see `group_shape`).
        assert_eq!((f.groups_used(), f.pairs_used()), (2, 12));
        check(&f, &[(a, 7), (a ^ 1, 0), (a ^ 1 << 100, 0), (b, 0)]);
        f.apply_prefix(b, 128, 8, &[]);
        f.trim();
        // Byte 10's level a group; 7 pairs above it, 4 below each route,
        // then each route's last level.
        assert_eq!((f.groups_used(), f.pairs_used()), (4, 7 + 2 * 4));
        check(&f, &[(a, 7), (b, 8), (a ^ 1, 0), (b ^ 1 << 30, 0)]);
        // A /64 over both: the levels down to byte 7 take its value as
        // the pairs' other entry.
        let p64 = a & !((1u128 << 64) - 1);
        f.apply_prefix(p64, 64, 9, &[(a, 128), (b, 128)]);
        f.trim();
        check(&f, &[(a, 7), (b, 8), (a ^ 1, 9), (p64, 9), (p64 - 1, 0)]);
        f.apply_prefix(p64, 64, 0, &[(a, 128), (b, 128)]);
        f.apply_prefix(b, 128, 0, &[]);
        f.trim();
        assert_eq!((f.groups_used(), f.pairs_used()), (2, 12));
        check(&f, &[(a, 7), (b, 0), (p64, 0)]);
        f.apply_prefix(a, 128, 0, &[]);
        f.trim();
        assert_eq!((f.groups_used(), f.pairs_used()), (0, 0));
        assert_eq!(f.mem(&mut HashSet::new()), base_mem);
    }

    /// Pairs are only where their index fits the entry (the groups below
    /// [`PAIR_GROUPS`], which an IPv6 FIB's whole groups leave to them):
    /// once those hold all the pairs they can, a path stays groups; freed
    /// pairs make room again. (The unit tests' bound: 64 groups, 8,192
    /// pairs.)
    #[test]
    fn pairs_past_their_groups_stay_groups() {
        let mut f = Fib::<128>::new();
        let cap = PAIR_GROUPS * PAIRS_PER_GROUP;
        assert_eq!(cap, 8192);
        // Host routes in /24s of their own: 12 pairs of path each (bytes
        // 3..=14) and their last level's group, while pairs last.
        let host = |i: u128| (0x2000u128 + i) << 112 | 1;
        let n = cap / 12 + 17;
        for i in 0..n as u128 {
            f.apply_prefix(host(i), 128, i as u32 + 1, &[]);
        }
        f.trim();
        let over = n * 12 - cap;
        assert_eq!(
            (f.pairs_used(), f.groups_used()),
            (cap, n + PAIR_GROUPS + over)
        );
        // The room's being full is remembered, so the writes after do not
        // look through every block and group of it again (each did, and a
        // batch of scattered /128s past the room went 4x slower a route).
        assert_eq!(f.pool.block_hint, f.pool.blocks.len());
        assert_eq!(f.pool.pair_hint, PAIR_GROUPS / 64);
        let check = |f: &Fib<128>| {
            let addrs: Vec<u128> = (0..n as u128).step_by(7).map(host).collect();
            let mut out = vec![0u32; addrs.len()];
            for (c, o) in addrs.chunks(BURST_MAX).zip(out.chunks_mut(BURST_MAX)) {
                f.lookup_burst(c, o);
            }
            for (&a, &o) in addrs.iter().zip(&out) {
                let want = ((a >> 112) - 0x2000) as u32 + 1;
                assert_eq!((f.lookup(a), o, f.lookup(a ^ 2)), (want, want, 0), "{a:#x}");
            }
        };
        check(&f);
        // Ten routes' pairs freed: the next route's path is pairs again.
        for i in 0..10u128 {
            f.apply_prefix(host(i), 128, 0, &[]);
        }
        let late = host(n as u128 + 100);
        f.apply_prefix(late, 128, 9, &[]);
        f.trim();
        assert_eq!(f.pairs_used(), cap - 10 * 12 + 12);
        assert_eq!((f.lookup(late), f.lookup(host(3))), (9, 0));
        for i in 0..10u128 {
            f.apply_prefix(host(i), 128, i as u32 + 1, &[]);
        }
        check(&f);
    }

    /// A pair whose one exception comes to end lookups (the route below
    /// it deleted, a covering route's value left there) is a group again,
    /// as a group of that shape stays one.
    #[test]
    fn a_pair_whose_exception_ends_lookups_is_a_group_again() {
        let mut f = Fib::<128>::new();
        let a: u128 = 0x2001_0db8_0a01_0203_0405_0607_0809_0a0b;
        let c = a & !0xff;
        f.apply_prefix(c, 120, 5, &[]);
        // Bytes 3..=13 pairs; byte 14's level a group (its exception is
        // the /120's value).
        assert_eq!((f.groups_used(), f.pairs_used()), (2, 11));
        f.apply_prefix(a, 128, 7, &[]);
        // Byte 14's level now leads to the /128's group: a pair.
        assert_eq!((f.groups_used(), f.pairs_used()), (2, 12));
        assert_eq!((f.lookup(a), f.lookup(a ^ 1), f.lookup(c - 1)), (7, 5, 0));
        f.apply_prefix(a, 128, 5, &[]);
        assert_eq!((f.groups_used(), f.pairs_used()), (2, 11));
        assert_eq!((f.lookup(a), f.lookup(a ^ 1), f.lookup(c - 1)), (5, 5, 0));
        let mut out = [0u32; 3];
        f.lookup_burst(&[a, c, c - 1], &mut out);
        assert_eq!(out, [5, 5, 0]);
    }

    #[test]
    fn top_of_space_v6() {
        let mut f = Fib::<128>::new();
        f.apply_prefix(u128::MAX, 128, 7, &[]);
        f.apply_prefix(u128::MAX - 1, 127, 8, &[(u128::MAX, 128)]);
        f.apply_prefix(0, 0, 9, &[(u128::MAX - 1, 127)]);
        assert_eq!(f.lookup(u128::MAX), 7);
        assert_eq!(f.lookup(u128::MAX - 1), 8);
        assert_eq!(f.lookup(u128::MAX - 2), 9);
        assert_eq!(f.lookup(0), 9);
        let mut out = [0u32; 4];
        f.lookup_burst(&[0, u128::MAX, u128::MAX - 1, u128::MAX - 2], &mut out);
        assert_eq!(out, [9, 7, 8, 9]);
        // The last level's group holds two routes; the 12 above it one
        // exception each: 12 pairs, in one group.
        assert_eq!((f.groups_used(), f.pairs_used()), (2, 12));
    }
}
