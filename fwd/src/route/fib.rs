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
    /// memory, `bench-results/route.md`). A page this version already owns
    /// is written in place, not copied: nothing is asked for. (In a large
    /// batch most routes fall in a page an earlier one copied; their 64
    /// prefetches a route made the full IPv4 view's load 1.18x slower.)
    #[inline]
    pub(crate) fn prefetch_page(&self, addr: u128) {
        let i = (addr >> Self::SHIFT0) as usize;
        if i < self.tbl24.capacity() && !self.tbl24.page_is_private(i / PAGE) {
            arch::prefetch_lines(&self.tbl24.page(i / PAGE)[..], PAGE * size_of::<u32>() / 64);
        }
    }

    /// Sets the prefix `addr/len` to `v`, leaving the ranges of `children` (the
    /// maximal strict sub-prefixes of it present in the RIB, sorted) untouched.
    ///
    /// Whole first-level entries and no holes (most routes of a table) go
    /// straight to them, inline; the rest out of line
    /// ([`Fib::apply_with_holes`]): as one function, its entry and exit
    /// alone were ~27 of a route's ~900 instructions in a full view's load.
    #[inline(always)]
    pub(crate) fn apply_prefix(&mut self, addr: u128, len: u8, v: u32, children: &[(u128, u8)]) {
        debug_assert_eq!(v & EXT, 0);
        if children.is_empty() && u32::from(len) <= 24 {
            let hi = addr | Self::host_mask(len);
            let (a, b) = (
                (addr >> Self::SHIFT0) as usize,
                (hi >> Self::SHIFT0) as usize,
            );
            self.full(Tab::T24, a, b, v);
            return;
        }
        self.apply_with_holes(addr, len, v, children);
    }

    /// [`Fib::apply_prefix`] below the first level, or around holes.
    #[inline(never)]
    fn apply_with_holes(&mut self, addr: u128, len: u8, v: u32, children: &[(u128, u8)]) {
        let hi = addr | Self::host_mask(len);
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
            // The write inside one byte's block of the level below, and
            // only part of it: that byte's entry will lead further down
            // and the other 255 stay `e`, which is a pair. Made one at
            // once, where a group was taken, filled, written, scanned by
            // `settle` and freed for it (a long prefix alone in its part
            // of the space, a level at a time: most of an IPv6 view's
            // routes).
            let k = (lo >> (shift - 8)) as usize & 0xff;
            if Self::within(lo, hi, shift - 8, k) && !Self::whole(lo, hi, shift - 8) {
                if let Some(p) = self.new_pair(t, idx, k, e, e) {
                    self.write_in_pair(t, idx, shift, p, k, lo, hi, v);
                    return;
                }
            }
            let g = self.alloc_group(e);
            self.set(t, idx, EXT | g as u32);
            g
        } else {
            match Child::of(e) {
                Child::Group(g) => g,
                Child::Pair(p, k) if Self::within(lo, hi, shift - 8, k) => {
                    self.write_in_pair(t, idx, shift, p, k, lo, hi, v);
                    return;
                }
                // Written beside its own entry: a whole group again first.
                Child::Pair(p, k) => self.unpair(t, idx, p, k),
            }
        };
        self.fill_in(Tab::Pool, g * GROUP, 8, shift - 8, lo, hi, v);
        self.settle(t, idx, g);
    }

    /// Writes `[lo, hi]`, which lies below pair `p`'s own byte `k`, the
    /// pair under entry `t[idx]` (whose block covers `2^shift`
    /// addresses). It stays a pair, unless its own entry becomes its fill
    /// (the entry takes the fill) or ends lookups (a group again, as
    /// [`Fib::group_shape`] would leave it).
    #[allow(clippy::too_many_arguments)]
    fn write_in_pair(
        &mut self,
        t: Tab,
        idx: usize,
        shift: u32,
        p: usize,
        k: usize,
        lo: u128,
        hi: u128,
        v: u32,
    ) {
        if Self::whole(lo, hi, shift - 8) {
            self.full(Tab::Pool, 2 * p + 1, 2 * p + 1, v);
        } else {
            self.partial(Tab::Pool, 2 * p + 1, shift - 8, lo, hi, v);
        }
        let (fill, x) = self.pair(p);
        if x == fill {
            self.set(t, idx, fill);
            self.free_pair(p);
        } else if x & EXT == 0 {
            self.unpair(t, idx, p, k);
        }
    }

    /// Whether `[lo, hi]` (inside one block of `2^shift` addresses) is
    /// the whole block.
    #[inline]
    fn whole(lo: u128, hi: u128, shift: u32) -> bool {
        let sub = (1u128 << shift) - 1;
        lo & sub == 0 && hi & sub == sub
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
                if self.new_pair(t, idx, k, fill, x).is_some() {
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

    /// Group `g`'s entries (in one page of the pool: a page holds whole
    /// groups).
    #[inline(always)]
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

    /// Entry `t[idx]` made a new pair: `fill` everywhere but at its own
    /// byte `k`, which holds `x`. `None`, nothing changed, when no pair can
    /// be had ([`Fib::alloc_pair`]).
    #[inline]
    fn new_pair(&mut self, t: Tab, idx: usize, k: usize, fill: u32, x: u32) -> Option<usize> {
        let p = self.alloc_pair()?;
        self.set(Tab::Pool, 2 * p, fill);
        self.set(Tab::Pool, 2 * p + 1, x);
        self.set(t, idx, Child::Pair(p, k).entry());
        Some(p)
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
        let pool = make_mut(&mut self.pool);
        let Pool {
            tbl,
            free,
            free_hint,
            pair_hint,
            ..
        } = pool;
        // The hint of the range asked for: whole groups' or pairs'.
        let hint = if hi == usize::MAX {
            free_hint
        } else {
            pair_hint
        };
        let g = loop {
            let start = (lo / 64).max(*hint);
            let end = free.len().min(hi.div_ceil(64));
            if let Some(i) = free
                .get(start..end)
                .and_then(|f| f.iter().position(|&w| w != 0))
            {
                let w = start + i;
                *hint = w;
                let bit = free[w].trailing_zeros() as usize;
                free[w] &= !(1u64 << bit);
                break w * 64 + bit;
            }
            // Nothing free below `end` (nor below `start`): the next call
            // need not look again.
            *hint = end;
            if free.len() * 64 >= hi {
                return None;
            }
            // Grow by one dir of groups, all free (the hint, now the old
            // end, is where they start).
            let old = tbl.capacity() / GROUP;
            tbl.grow_to(tbl.capacity() + Tbl::PER_DIR);
            free.resize((old + GROUPS_PER_DIR) / 64, u64::MAX);
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
    /// A burst whose lanes are all in one /24 (flows to one subnet: most
    /// of the plain IPv4 recipe's bursts) reads its first-level entry
    /// once, and a group's page once.
    #[inline]
    pub(crate) fn lookup_burst(&self, dsts: &[u32], out: &mut [u32]) {
        let out = &mut out[..dsts.len()];
        let Some(&d0) = dsts.first() else {
            return;
        };
        // The address bits in which some lane differs from lane 0.
        let differ = dsts.iter().fold(0, |a, &d| a | (d ^ d0));
        if differ >> 8 == 0 {
            let e = *self.tbl24.get((d0 >> 8) as usize);
            if e & EXT == 0 {
                out.fill(e);
            } else {
                // A group: an IPv4 FIB has no pairs (see `PAIR_GROUPS`).
                debug_assert!(e & PAIR == 0, "a pair in an IPv4 FIB");
                let group = self.group((e & GROUP_MASK) as usize);
                for (o, &d) in out.iter_mut().zip(dsts) {
                    *o = group[(d & 0xff) as usize];
                }
            }
            return;
        }
        let mut at = [&0u32; BURST_MAX];
        // Lane 0's first-level page is every lane's (see `first_level`).
        let one_page = differ >> 8 < PAGE as u32;
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
    /// `bench-results/fib.md`). `out` must be at least as long as `dsts`.
    ///
    /// A burst whose lanes share their top 24 bits (a site's or a data
    /// centre's traffic, flows to the /64s of one network) has one
    /// first-level entry, and so has every level that reads only bits all
    /// its lanes share: lane 0 walks them alone, one load a level, and the
    /// level below them is one group (or pair) for every lane, each lane's
    /// entry loaded in the same pass as its address is made, as in the
    /// IPv4 lookup (until 2026-12-07 every lane took the first level and
    /// its load pass, and the address words were copied to two arrays
    /// first: the IPv6 replay recipe's lookups took 61 instructions a
    /// packet, now 22, `bench-results/counts.md`). A burst whose lanes
    /// share only a first-level page reads that page once (see
    /// [`Fib::first_level`]). Lanes from all over the table pay one pass
    /// over their addresses for these tests, and take the levels below
    /// one lane at a time ([`Fib::levels_below`]).
    #[inline]
    pub(crate) fn lookup_burst(&self, dsts: &[u128], out: &mut [u32]) {
        let out = &mut out[..dsts.len()];
        let Some(&d0) = dsts.first() else {
            return;
        };
        // The bits of the high word in which some lane differs from lane
        // 0: the first level reads its top 24, the levels down to a /64
        // the rest.
        let h0 = high(d0);
        let differ = dsts.iter().fold(0, |a, &d| a | (high(d) ^ h0));
        let mut shift = Self::SHIFT0;
        if differ >> 40 == 0 {
            // Lane 0 walks the shared levels: those above the highest bit
            // that differs (down to the /64 when none does).
            let shared_to = 136 - differ.leading_zeros();
            let mut e = *self.tbl24.get((d0 >> Self::SHIFT0) as usize);
            while e & EXT != 0 && shift >= shared_to {
                shift -= 8;
                e = *self
                    .pool
                    .tbl
                    .get(next_index(e, (h0 >> (shift - 64)) as usize & 0xff));
            }
            if e & EXT == 0 {
                out.fill(e);
                return;
            }
            // The level below reads a byte of the high word or, below the
            // /64, of the low one.
            shift -= 8;
            if shift >= 64 {
                self.below_shared(e, dsts, |d| high(d) >> (shift - 64), shift, out);
            } else {
                self.below_shared(e, dsts, |d| d as u64 >> shift, shift, out);
            }
            return;
        }
        let mut at = [&0u32; BURST_MAX];
        let one_page = differ >> 40 < PAGE as u64;
        self.first_level(
            dsts.len(),
            |k| (dsts[k] >> Self::SHIFT0) as usize,
            one_page,
            &mut at,
        );
        // Every lane's entry ORed: EXT, some lane descends; PAIR, some
        // lane's next level is a pair (a plain entry never sets it).
        let mut any = 0;
        for (o, a) in out.iter_mut().zip(at.iter()) {
            let v = **a;
            *o = v;
            any |= v;
        }
        // No lane descends (always so without groups).
        if any & EXT != 0 {
            self.levels_below(dsts, shift, any, out, &mut at);
        }
    }

    /// The level below a burst's shared ones (see [`Fib::lookup_burst`]),
    /// at `shift`, and the levels below it where some lane descends
    /// ([`Fib::levels_below`]); `byte(d)`'s low 8 bits are address `d`'s
    /// byte at `shift`. Every lane descends from entry `e`, into one group
    /// or one pair: its entry is its byte's place there (see
    /// [`Fib::one_entry_level`]). Without a lane going further (the
    /// common case), no lane's entry address is kept.
    #[inline(always)]
    fn below_shared(
        &self,
        e: u32,
        dsts: &[u128],
        byte: impl Fn(u128) -> u64,
        shift: u32,
        out: &mut [u32],
    ) {
        let any = self.one_entry_level(e, dsts, &byte, out, |_, _| {});
        if any & EXT != 0 {
            // The same level again, keeping each lane's entry address for
            // the levels below (a lane that stops there reads it again).
            let mut at = [&0u32; BURST_MAX];
            self.one_entry_level(e, dsts, &byte, out, |k, a| at[k] = a);
            self.levels_below(dsts, shift, any, out, &mut at);
        }
    }

    /// One level of a burst whose every lane descends from entry `e`,
    /// into one group or one pair: entries of one page of the pool (a
    /// group's 256 are in one page, a pair's two are side by side), found
    /// once for the burst; a lane's entry is its byte's place there
    /// (`byte(d)`'s low 8 bits, `d` its address), with no index pass, no
    /// page memo and no select for finished lanes (none has finished).
    /// Sets every lane's entry in `out`, tells `keep` each lane's entry
    /// address, and returns the entries ORed.
    #[inline(always)]
    fn one_entry_level<'a>(
        &'a self,
        e: u32,
        dsts: &[u128],
        byte: impl Fn(u128) -> u64,
        out: &mut [u32],
        mut keep: impl FnMut(usize, &'a u32),
    ) -> u32 {
        let mut any = 0;
        if e & PAIR != 0 {
            let page = self.pool.tbl.page(next_index(e, 0) / PAGE);
            for (k, (o, &d)) in out.iter_mut().zip(dsts).enumerate() {
                let a = &page[next_index(e, byte(d) as usize & 0xff) % PAGE];
                keep(k, a);
                *o = *a;
                any |= *a;
            }
        } else {
            let group = self.group((e & GROUP_MASK) as usize);
            for (k, (o, &d)) in out.iter_mut().zip(dsts).enumerate() {
                let a = &group[byte(d) as usize & 0xff];
                keep(k, a);
                *o = *a;
                any |= *a;
            }
        }
        any
    }

    /// The levels of a burst lookup below `shift` (see
    /// [`Fib::lookup_burst`]), one lane at a time: `out[k]` holds lane
    /// `k`'s entry at `shift` and `at[k]` its address, `any` the entries
    /// ORed. Out of line: the bursts that share their top bits (the common
    /// ones) take it only when their lanes part below the shared levels.
    #[inline(never)]
    fn levels_below<'a>(
        &'a self,
        dsts: &[u128],
        mut shift: u32,
        mut any: u32,
        out: &mut [u32],
        at: &mut [&'a u32; BURST_MAX],
    ) {
        let pool = &self.pool.tbl;
        let n = out.len();
        assert!(n <= BURST_MAX && dsts.len() == n);
        // The address bits as two words: the levels at shifts 96..64 read
        // the high one (a byte of a `u128` shifted by a variable amount is
        // a dozen instructions; of a `u64`, two).
        let (mut hi, mut lo) = ([0u64; BURST_MAX], [0u64; BURST_MAX]);
        for (k, &d) in dsts.iter().enumerate() {
            (hi[k], lo[k]) = (high(d), d as u64);
        }
        // Every level's entry indexes, overwritten for the burst's lanes
        // each level (made once: a fresh array a level was a 512-byte
        // memset each time).
        let mut idx = [0usize; BURST_MAX];
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

/// An IPv6 address's high 64 bits (in memory, the second word of a
/// `u128`: one load).
#[inline(always)]
fn high(a: u128) -> u64 {
    (a >> 64) as u64
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
#[path = "fib_tests.rs"]
mod tests;
