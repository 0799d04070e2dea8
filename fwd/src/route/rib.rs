//! The RIB: a persistent stride-8 prefix trie (one per VRF and family).
//!
//! A node covers 8 address bits. It stores the prefixes whose length ends inside
//! its stride (local lengths 1..=8, plus `/0` at the root) in a complete binary
//! tree indexed `1..512` (`idx = 1 << l | bits`), popcount-compressed, and up
//! to 256 children. Nodes are counted [`LArc`]s whose counts change only
//! under the RIB's [`Lineage`] lock (see `larc`); an update copies only the
//! nodes on the path to the prefix (path copying), so a version shares
//! everything else with its predecessor.
//!
//! The children are grouped in [`Chunk`]s of 16 slots, each behind its own
//! counted pointer: copying a node copies (and counts a reference to) at most 16 chunks,
//! and the one chunk on the path at most 16 children, instead of up to 256
//! children. Near the root, where a full IPv4 view fills ~220 of 256 slots,
//! those counts were most of the cost of a one-change version. Both levels
//! are fixed arrays indexed by slot, so a step down is two dependent loads
//! (chunk, child) and no popcount.
//!
//! Paths are compressed: a node holds its depth and the address bits above
//! it, so a child may sit several levels below its parent, and the levels
//! between, which would hold no prefix and one child each, are not made.
//! An insert makes at most two nodes (the prefix's own, and one where its
//! path parts from another); a removal takes back a node left with no
//! prefix and one child. A lone IPv6 /128 is one node below the root
//! instead of fifteen (~5 KB of a scattered host route's cost before,
//! `bench-results/memory.md`), and a full view's nodes nearly all hold
//! prefixes anyway.
//!
//! Besides exact get/insert/remove it answers the two questions the FIB update
//! needs: the longest strictly-covering prefix (what a deleted prefix falls back
//! to) and the maximal more-specific prefixes inside a prefix (the holes that an
//! update of the prefix must not overwrite). The iterator walks in prefix order
//! (address, then length), which is the binary trie's pre-order.
//!
//! Addresses are `u128` right-aligned in `W` bits (`W` = 32 or 128).

use std::collections::HashSet;
use std::mem::size_of;
use triomphe::Arc;

use super::larc::{cow, Held, Kids, LArc, Lazy, Lineage, HEADER};

/// Child slots per [`Chunk`].
const CHUNK: usize = 16;

struct Node<V> {
    /// The `8 depth` leading address bits of this node's prefixes (the
    /// address bits above its stride), right-aligned as addresses are;
    /// low word first, as two words so that the node keeps the alignment
    /// of 8 (a `u128` would align it to 16 and pad its allocation).
    key: [u64; 2],
    /// Which stride it covers: its prefixes are `8 depth + 1 ..= 8 depth
    /// + 8` long (the root, depth 0, also holds `/0`). A child is not
    /// necessarily one deeper than its parent: the levels between them,
    /// which would hold no prefix and one child each, are left out (path
    /// compression), and `key` says which address bits they stand for.
    depth: u8,
    pbits: [u64; 8],
    pfx: Vec<V>,
    /// One bit per child slot (256): set iff that child is present.
    cbits: [u64; 4],
    /// Chunk `c` holds the children of slots `16 c .. 16 c + 16`; present
    /// iff any of them is. Fixed slots in the node itself, not a
    /// compressed `Vec`: a step down the trie is two dependent loads (the
    /// chunk, then the child) where a compressed list behind a `Vec` in the
    /// node and another in the chunk made it four.
    chunks: [Option<LArc<Chunk<V>>>; SLOTS / CHUNK],
}

/// The children of `CHUNK` consecutive slots, each at its slot.
struct Chunk<V> {
    kids: [Option<LArc<Node<V>>>; CHUNK],
}

/// Child slots of a node (one per value of the next address byte).
const SLOTS: usize = 256;

impl<V> Default for Node<V> {
    fn default() -> Self {
        Node::at(0, 0)
    }
}

impl<V> Node<V> {
    /// An empty node at `depth` with `key`.
    fn at(depth: u32, key: u128) -> Self {
        Node {
            key: [key as u64, (key >> 64) as u64],
            depth: depth as u8,
            pbits: [0; 8],
            pfx: Vec::new(),
            cbits: [0; 4],
            chunks: Default::default(),
        }
    }

    /// Its depth.
    #[inline(always)]
    fn d(&self) -> u32 {
        u32::from(self.depth)
    }

    /// Its key.
    #[inline(always)]
    fn key(&self) -> u128 {
        u128::from(self.key[1]) << 64 | u128::from(self.key[0])
    }
}

impl<V> Default for Chunk<V> {
    fn default() -> Self {
        Chunk {
            kids: Default::default(),
        }
    }
}

impl<V: Clone> Node<V> {
    /// A copy sharing the chunks.
    fn share(n: &LArc<Self>, h: &Held<'_>) -> LArc<Self> {
        LArc::new(Node {
            key: n.key,
            depth: n.depth,
            pbits: n.pbits,
            pfx: n.pfx.clone(),
            cbits: n.cbits,
            chunks: std::array::from_fn(|i| n.chunks[i].as_ref().map(|c| c.share(h))),
        })
    }
}

impl<V> Chunk<V> {
    /// A copy sharing the children.
    fn share(c: &LArc<Self>, h: &Held<'_>) -> LArc<Self> {
        LArc::new(Chunk {
            kids: std::array::from_fn(|i| c.kids[i].as_ref().map(|k| k.share(h))),
        })
    }
}

impl<V> Kids for Node<V> {
    fn release_kids(self, h: &Held<'_>) {
        for c in self.chunks.into_iter().flatten() {
            c.release(h);
        }
    }
}

impl<V> Kids for Chunk<V> {
    fn release_kids(self, h: &Held<'_>) {
        for k in self.kids.into_iter().flatten() {
            k.release(h);
        }
    }
}

/// A node, writable (see [`cow`]).
#[inline(always)]
fn mm<'a, V: Clone>(a: &'a mut LArc<Node<V>>, lk: &mut Lazy<'_>) -> &'a mut Node<V> {
    cow(a, lk, Node::share)
}

/// A chunk, writable (see [`cow`]).
#[inline(always)]
fn mm_chunk<'a, V>(a: &'a mut LArc<Chunk<V>>, lk: &mut Lazy<'_>) -> &'a mut Chunk<V> {
    cow(a, lk, Chunk::share)
}

#[inline]
fn test(bits: &[u64], i: usize) -> bool {
    (bits[i >> 6] >> (i & 63)) & 1 != 0
}

#[inline]
fn rank(bits: &[u64], i: usize) -> usize {
    let w = i >> 6;
    let below: usize = bits[..w].iter().map(|b| b.count_ones() as usize).sum();
    below + (bits[w] & ((1u64 << (i & 63)) - 1)).count_ones() as usize
}

/// Any bit set in `[lo, hi)`.
#[cfg(test)]
fn any_in(bits: &[u64], lo: usize, hi: usize) -> bool {
    if lo >= hi {
        return false;
    }
    let (wl, wh) = (lo >> 6, (hi - 1) >> 6);
    let ml = !0u64 << (lo & 63);
    let mh = !0u64 >> (63 - ((hi - 1) & 63));
    if wl == wh {
        return bits[wl] & ml & mh != 0;
    }
    (bits[wl] & ml) | (bits[wh] & mh) != 0 || bits[wl + 1..wh].iter().any(|&w| w != 0)
}

/// For each tree index (1..512), the tree indexes of its subtree (itself
/// and every index below it, down to local length 8) as a 512-bit mask:
/// "is anything at or below this index" is then eight ANDs, where walking
/// the subtree's levels cost a range test per level (a tenth of the
/// instructions of a full-view load went there). 32 KiB, built at compile
/// time.
static SUBTREE: [[u64; 8]; 512] = subtree_masks();

const fn subtree_masks() -> [[u64; 8]; 512] {
    let mut t = [[0u64; 8]; 512];
    let mut idx = 1;
    while idx < 512 {
        let l = level(idx);
        let mut m = l;
        while m <= 8 {
            // Level m of the subtree: [idx << (m - l), (idx + 1) << (m - l)).
            let (lo, hi) = (idx << (m - l), (idx + 1) << (m - l));
            let mut i = lo;
            while i < hi {
                // Whole words where the range covers them (levels 6..8).
                if i % 64 == 0 && hi - i >= 64 {
                    t[idx][i / 64] = u64::MAX;
                    i += 64;
                } else {
                    t[idx][i / 64] |= 1 << (i % 64);
                    i += 1;
                }
            }
            m += 1;
        }
        idx += 1;
    }
    t
}

/// Local length of tree index `idx` (1..512).
#[inline]
const fn level(idx: usize) -> u32 {
    usize::BITS - 1 - idx.leading_zeros()
}

impl<V: Copy + PartialEq> Node<V> {
    #[inline]
    fn has_pfx(&self, idx: usize) -> bool {
        test(&self.pbits, idx)
    }

    #[inline]
    fn pfx_get(&self, idx: usize) -> Option<V> {
        test(&self.pbits, idx).then(|| self.pfx[rank(&self.pbits, idx)])
    }

    fn pfx_set(&mut self, idx: usize, t: V) -> Option<V> {
        let r = rank(&self.pbits, idx);
        if test(&self.pbits, idx) {
            Some(std::mem::replace(&mut self.pfx[r], t))
        } else {
            self.pbits[idx >> 6] |= 1 << (idx & 63);
            self.pfx.insert(r, t);
            None
        }
    }

    fn pfx_del(&mut self, idx: usize) -> Option<V> {
        if !test(&self.pbits, idx) {
            return None;
        }
        let r = rank(&self.pbits, idx);
        self.pbits[idx >> 6] &= !(1 << (idx & 63));
        let t = self.pfx.remove(r);
        if self.pfx.is_empty() {
            self.pfx = Vec::new();
        }
        Some(t)
    }

    /// The slot bits of chunk `c`.
    #[inline]
    fn chunk_slots(&self, c: usize) -> u64 {
        (self.cbits[c / 4] >> (c % 4 * CHUNK)) & 0xffff
    }

    #[inline]
    fn kid(&self, b: usize) -> Option<&LArc<Node<V>>> {
        self.chunks[b / CHUNK].as_ref()?.kids[b % CHUNK].as_ref()
    }

    /// The slot of child `b`, in its chunk (created if absent) made
    /// writable; the caller keeps `cbits` when it fills an empty slot.
    #[inline(always)]
    fn slot_mut(&mut self, b: usize, lk: &mut Lazy<'_>) -> &mut Option<LArc<Node<V>>> {
        let chunk = self.chunks[b / CHUNK].get_or_insert_with(|| LArc::new(Chunk::default()));
        &mut mm_chunk(chunk, lk).kids[b % CHUNK]
    }

    /// Number of children.
    fn kids(&self) -> u32 {
        self.cbits.iter().map(|w| w.count_ones()).sum()
    }

    /// The one child of a node that has exactly one.
    fn only_kid(&self) -> &LArc<Node<V>> {
        let b = (0..4)
            .find(|&w| self.cbits[w] != 0)
            .map(|w| 64 * w + self.cbits[w].trailing_zeros() as usize)
            .expect("a child");
        self.kid(b).expect("a child")
    }

    fn kid_arc_mut(&mut self, b: usize, lk: &mut Lazy<'_>) -> Option<&mut LArc<Node<V>>> {
        mm_chunk(self.chunks[b / CHUNK].as_mut()?, lk).kids[b % CHUNK].as_mut()
    }

    fn kid_del(&mut self, b: usize, lk: &mut Lazy<'_>) {
        if test(&self.cbits, b) {
            self.cbits[b >> 6] &= !(1 << (b & 63));
            let c = b / CHUNK;
            if self.chunk_slots(c) == 0 {
                if let Some(chunk) = self.chunks[c].take() {
                    chunk.release(lk.held());
                }
            } else if let Some(chunk) = self.chunks[c].as_mut() {
                if let Some(k) = mm_chunk(chunk, lk).kids[b % CHUNK].take() {
                    k.release(lk.held());
                }
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.pfx.is_empty() && self.cbits == [0; 4]
    }

    /// Whether anything (prefix at or below `idx`, or a child under it) exists.
    #[inline]
    fn subtree_nonempty(&self, idx: usize) -> bool {
        self.any_in_subtree(idx, 0)
    }

    /// Whether anything lies strictly below tree index `idx`: a prefix
    /// under it, or (at local length 8, `idx >= 256`) the child it covers.
    #[inline(always)]
    fn below_nonempty(&self, idx: usize) -> bool {
        if idx >= 256 {
            return test(&self.cbits, idx - 256);
        }
        self.any_in_subtree(idx, idx)
    }

    /// Whether `idx`'s subtree holds a prefix other than the one at tree
    /// index `skip` (0: none is skipped, no prefix has index 0), or a child.
    #[inline(always)]
    fn any_in_subtree(&self, idx: usize, skip: usize) -> bool {
        let m = &SUBTREE[idx];
        let mut any = 0;
        for (w, (b, m)) in self.pbits.iter().zip(m).enumerate() {
            let skipped = if w == skip >> 6 { 1 << (skip & 63) } else { 0 };
            any |= b & m & !skipped;
        }
        // A child slot is the tree index of a local length 8 less 256:
        // the subtree's last level, words 4..8 of its mask.
        for (b, m) in self.cbits.iter().zip(&m[4..]) {
            any |= b & m;
        }
        any != 0
    }

    /// [`Node::subtree_nonempty`] level by level (its tests' reference).
    #[cfg(test)]
    fn subtree_nonempty_by_level(&self, idx: usize) -> bool {
        let l = level(idx);
        for m in l..=8 {
            let sh = m - l;
            if any_in(&self.pbits, idx << sh, (idx + 1) << sh) {
                return true;
            }
        }
        let sh = 8 - l;
        any_in(&self.cbits, (idx << sh) - 256, ((idx + 1) << sh) - 256)
    }

    fn mem(&self, seen: &mut HashSet<usize>) -> usize {
        let mut b = self.pfx.capacity() * size_of::<V>();
        for c in self.chunks.iter().flatten() {
            if !seen.insert(c.as_ptr() as usize) {
                continue;
            }
            b += HEADER + size_of::<Chunk<V>>();
            for k in c.kids.iter().flatten() {
                if seen.insert(k.as_ptr() as usize) {
                    b += HEADER + size_of::<Node<V>>() + k.mem(seen);
                }
            }
        }
        b
    }
}

/// See the module doc.
pub(crate) struct Rib<const W: u32, V> {
    /// Taken only by `drop`.
    root: Option<LArc<Node<V>>>,
    len: usize,
    nodes: usize,
    lin: Arc<Lineage>,
}

impl<const W: u32, V: Clone> Clone for Rib<W, V> {
    fn clone(&self) -> Self {
        let root = self.root_arc().share(&self.lin.hold());
        Rib {
            root: Some(root),
            len: self.len,
            nodes: self.nodes,
            lin: self.lin.clone(),
        }
    }
}

impl<const W: u32, V> Drop for Rib<W, V> {
    fn drop(&mut self) {
        if let Some(r) = self.root.take() {
            r.release(&self.lin.hold());
        }
    }
}

impl<const W: u32, V> Rib<W, V> {
    #[inline(always)]
    fn root_arc(&self) -> &LArc<Node<V>> {
        match &self.root {
            Some(r) => r,
            None => unreachable!("taken only by drop"),
        }
    }

    #[inline(always)]
    fn root(&self) -> &Node<V> {
        self.root_arc()
    }
}

impl<const W: u32, V: Clone> Rib<W, V> {
    /// What a write needs, borrowed apart: the root (writable), the lock to
    /// copy with, the prefix count and the node count.
    #[inline(always)]
    fn write(&mut self) -> (&mut Node<V>, Lazy<'_>, &mut usize, &mut usize) {
        let Rib {
            root,
            lin,
            len,
            nodes,
        } = self;
        let mut lk = Lazy::new(lin);
        let root = match root {
            Some(r) => mm(r, &mut lk),
            None => unreachable!("taken only by drop"),
        };
        (root, lk, len, nodes)
    }
}

impl<const W: u32, V: Copy + PartialEq> Default for Rib<W, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const W: u32, V: Copy + PartialEq> Rib<W, V> {
    pub(crate) fn new() -> Self {
        Rib {
            root: Some(LArc::new(Node::default())),
            len: 0,
            nodes: 1,
            lin: Arc::new(Lineage::default()),
        }
    }

    /// Number of prefixes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The memory this RIB is charged (`route::limits`): each node as a
    /// node and a chunk (a non-root node is a child in exactly one chunk,
    /// so there are fewer chunks than nodes), and each route's entry. O(1).
    pub(crate) fn charge(&self) -> usize {
        self.nodes * (2 * HEADER + size_of::<Node<V>>() + size_of::<Chunk<V>>())
            + self.len * size_of::<V>()
    }

    /// Number of trie nodes (the root included).
    pub(crate) fn nodes(&self) -> usize {
        self.nodes
    }

    /// Node depth and tree index of `addr/len`.
    #[inline]
    fn locate(addr: u128, len: u8) -> (u32, usize) {
        if len == 0 {
            return (0, 1);
        }
        let len = len as u32;
        let d = (len - 1) / 8;
        let l = len - 8 * d;
        let bits = Self::shr(addr, W - len) as usize & ((1 << l) - 1);
        (d, (1usize << l) | bits)
    }

    /// `addr >> s` for `s < W`; in 64-bit arithmetic where `W` allows (a
    /// `u128` shift by a variable amount is several instructions).
    #[inline(always)]
    fn shr(addr: u128, s: u32) -> u128 {
        if W <= 64 {
            u128::from(addr as u64 >> s)
        } else {
            addr >> s
        }
    }

    /// The address byte that selects the child of a node at depth `d`.
    #[inline]
    fn byte(addr: u128, d: u32) -> usize {
        Self::shr(addr, W - 8 * d - 8) as usize & 0xff
    }

    /// The `8 d` leading bits of `addr` (the base address of a depth-`d` node).
    #[inline]
    fn base(addr: u128, d: u32) -> u128 {
        if d == 0 {
            0
        } else if W <= 64 {
            u128::from(addr as u64 & !((1u64 << (W - 8 * d)) - 1))
        } else {
            addr & !((1u128 << (W - 8 * d)) - 1)
        }
    }

    /// How many leading bytes `a` and `b` share (`W / 8` when equal).
    #[inline]
    fn common(a: u128, b: u128) -> u32 {
        ((a ^ b).leading_zeros() - (128 - W)) / 8
    }

    /// Whether child `c` lies on the path of a prefix whose node is at depth
    /// `d`: it is not below that node, and `addr` has the bits its key
    /// stands for.
    #[inline(always)]
    fn on_path(c: &Node<V>, addr: u128, d: u32) -> bool {
        c.d() <= d && Self::keyed(c, addr)
    }

    /// Whether `addr` has the address bits that node `c`'s key stands for.
    #[inline(always)]
    fn keyed(c: &Node<V>, addr: u128) -> bool {
        Self::base(addr, c.d()) == c.key()
    }

    #[inline]
    fn prefix_of(base: u128, d: u32, idx: usize) -> (u128, u8) {
        let l = level(idx);
        let len = 8 * d + l;
        if l == 0 {
            return (base, len as u8);
        }
        let bits = (idx - (1 << l)) as u128;
        (base | bits << (W - len), len as u8)
    }

    /// Exact match.
    pub(crate) fn get(&self, addr: u128, len: u8) -> Option<V> {
        let (d, idx) = Self::locate(addr, len);
        let mut n = self.root();
        while n.d() < d {
            n = n.kid(Self::byte(addr, n.d()))?;
            if !Self::on_path(n, addr, d) {
                return None;
            }
        }
        n.pfx_get(idx)
    }

    /// Inserts or replaces; returns the previous target.
    #[cfg(test)]
    pub(crate) fn insert(&mut self, addr: u128, len: u8, t: V) -> Option<V> {
        self.insert_at(addr, len, t).0
    }

    /// The tests' `insert`, and their `maximal_children` of `addr/len` into
    /// `out`, in one walk: read below the prefix at the node it was just
    /// written to, while that is in cache, rather than walking down again.
    pub(crate) fn insert_children(
        &mut self,
        addr: u128,
        len: u8,
        t: V,
        out: &mut Vec<(u128, u8)>,
    ) -> Option<V> {
        out.clear();
        let (old, n, idx) = self.insert_at(addr, len, t);
        // Most inserts of a table have nothing below them: no walk then.
        if n.below_nonempty(idx) {
            Self::below(n, idx, out);
        }
        old
    }

    /// Inserts or replaces; returns the previous target, and the node that
    /// holds the prefix and its tree index.
    fn insert_at(&mut self, addr: u128, len: u8, t: V) -> (Option<V>, &Node<V>, usize) {
        let (d, idx) = Self::locate(addr, len);
        let (mut n, mut lk, count, nodes) = self.write();
        while n.d() < d {
            n = Self::step(n, addr, d, &mut lk, nodes);
        }
        let old = n.pfx_set(idx, t);
        if old.is_none() {
            *count += 1;
        }
        (old, n, idx)
    }

    /// One step of an insert at depth `d`: from `n` (above it) to the next
    /// node on the path to `addr`, made writable. Where there is none, a
    /// node at depth `d` itself (the levels between left out). Where the
    /// child in the way stands for other address bits, or lies below depth
    /// `d`, a node where their paths part takes its place, with the child
    /// under it.
    #[inline(always)]
    fn step<'a>(
        n: &'a mut Node<V>,
        addr: u128,
        d: u32,
        lk: &mut Lazy<'_>,
        nodes: &mut usize,
    ) -> &'a mut Node<V> {
        let b = Self::byte(addr, n.d());
        if !test(&n.cbits, b) {
            n.cbits[b >> 6] |= 1 << (b & 63);
            *nodes += 1;
            let leaf = LArc::new(Node::at(d, Self::base(addr, d)));
            return mm(n.slot_mut(b, lk).insert(leaf), lk);
        }
        let slot = n.slot_mut(b, lk);
        let c = slot.as_ref().expect("a child where cbits has one");
        if !Self::on_path(c, addr, d) {
            // The paths part at depth s: n.d() < s <= d, and s < c.d().
            let s = Self::common(addr, c.key()).min(d).min(c.d());
            let cb = Self::byte(c.key(), s);
            let mut m = Node::at(s, Self::base(addr, s));
            m.cbits[cb >> 6] |= 1 << (cb & 63);
            let c = slot.take().expect("checked");
            *m.slot_mut(cb, lk) = Some(c);
            *nodes += 1;
            *slot = Some(LArc::new(m));
        }
        mm(slot.as_mut().expect("filled"), lk)
    }

    /// Removes; returns the removed target. Empty nodes are pruned. (The
    /// tables find the prefix with [`Rib::area_of_present`] and then call
    /// [`Rib::remove_present`].)
    #[cfg(test)]
    pub(crate) fn remove(&mut self, addr: u128, len: u8) -> Option<V> {
        // Check first so that removing an absent prefix copies nothing.
        self.get(addr, len)?;
        Some(self.remove_present(addr, len))
    }

    /// Removes `addr/len`, which the caller found present (it panics
    /// otherwise); returns its target. Empty nodes are pruned.
    pub(crate) fn remove_present(&mut self, addr: u128, len: u8) -> V {
        let (d, idx) = Self::locate(addr, len);
        let (root, mut lk, count, nodes) = self.write();
        let (t, freed) = Self::rm(root, addr, d, idx, &mut lk).expect("present");
        *nodes -= freed;
        *count -= 1;
        t
    }

    /// Removes `addr/len` (at depth `d`, index `idx`) from below `n`;
    /// returns its target and the number of nodes freed. A child left
    /// empty goes; a child left with no prefix and one child of its own
    /// gives way to that child, so that no node but the root is ever a
    /// level that path compression would leave out.
    fn rm(
        n: &mut Node<V>,
        addr: u128,
        d: u32,
        idx: usize,
        lk: &mut Lazy<'_>,
    ) -> Option<(V, usize)> {
        if n.d() == d {
            return n.pfx_del(idx).map(|t| (t, 0));
        }
        let b = Self::byte(addr, n.d());
        let child = n.kid_arc_mut(b, lk)?;
        let (t, mut freed) = Self::rm(mm(child, lk), addr, d, idx, lk)?;
        if child.is_empty() {
            n.kid_del(b, lk);
            freed += 1;
        } else if child.pfx.is_empty() && child.kids() == 1 {
            let only = child.only_kid().share(lk.held());
            std::mem::replace(child, only).release(lk.held());
            freed += 1;
        }
        Some((t, freed))
    }

    /// Longest prefix of length `<= max_len` that covers `addr`.
    pub(crate) fn lpm(&self, addr: u128, max_len: u8) -> Option<(u128, u8, V)> {
        let max = max_len as u32;
        let mut best = None;
        let mut n = self.root();
        loop {
            let d = n.d();
            let top = (8 * d + 8).min(max);
            let bottom = if d == 0 { 0 } else { 8 * d + 1 };
            let mut len = top;
            while len >= bottom {
                let (_, idx) = Self::locate(addr, len as u8);
                if let Some(t) = n.pfx_get(idx) {
                    best = Some((Self::prefix_base(addr, len as u8), len as u8, t));
                    break;
                }
                if len == 0 {
                    break;
                }
                len -= 1;
            }
            if max <= 8 * d + 8 {
                break;
            }
            match n.kid(Self::byte(addr, d)) {
                // A child whose prefixes are all longer than `max` holds
                // none that counts.
                Some(k) if 8 * k.d() < max && Self::keyed(k, addr) => n = k,
                _ => break,
            }
        }
        best
    }

    /// The maximal strict sub-prefixes of `addr/len` (those not inside another
    /// strict sub-prefix), in address order, into `out` (cleared first).
    /// (The tables get them from [`Rib::insert_children`] and [`Rib::area_of_present`];
    /// this is their tests' reference.)
    #[cfg(test)]
    pub(crate) fn maximal_children(&self, addr: u128, len: u8, out: &mut Vec<(u128, u8)>) {
        out.clear();
        let (d, idx) = Self::locate(addr, len);
        let mut n = self.root();
        while n.d() < d {
            match n.kid(Self::byte(addr, n.d())) {
                Some(c) if Self::on_path(c, addr, d) => n = c,
                // A node below depth d that the prefix covers (the levels
                // between left out): its prefixes are all inside.
                Some(c) if c.d() > d && Self::prefix_base(c.key(), len) == addr => {
                    return Self::whole(c, out);
                }
                _ => return,
            }
        }
        Self::below(n, idx, out);
    }

    /// The first `len` bits of `addr`.
    #[inline]
    fn prefix_base(addr: u128, len: u8) -> u128 {
        if len == 0 {
            0
        } else {
            addr & !((1u128 << (W - u32::from(len))) - 1)
        }
    }

    /// For a prefix that is present: its value, what its addresses fall
    /// back to once it is gone (the longest strictly shorter covering
    /// prefix, its [`Rib::lpm`] at `len - 1`) and its holes (its maximal
    /// children, what the tests' `maximal_children` lists) into `out`, in
    /// one read-only walk, so a removal needs no second walk to find them
    /// afterwards. `None` (and `out` left as it was) when `addr/len` is
    /// absent.
    pub(crate) fn area_of_present(
        &self,
        addr: u128,
        len: u8,
        out: &mut Vec<(u128, u8)>,
    ) -> Option<(V, Option<V>)> {
        let (d, idx) = Self::locate(addr, len);
        let mut n = self.root();
        let mut cover = None;
        loop {
            let k = n.d();
            // The prefixes of this node on the path to `addr/len`, longest
            // first: its tree indexes from the child's slot (or, at the last
            // node, from the parent of `idx`) up. Index 1 (local length 0)
            // is `/0` at the root; below the root, `/8k` belongs to the
            // parent.
            let mut i = if k == d {
                idx >> 1
            } else {
                256 | Self::byte(addr, k)
            };
            let stop = usize::from(k > 0);
            while i > stop {
                if let Some(v) = n.pfx_get(i) {
                    cover = Some(v);
                    break;
                }
                i >>= 1;
            }
            if k == d {
                break;
            }
            n = n.kid(Self::byte(addr, k))?;
            if !Self::on_path(n, addr, d) {
                return None;
            }
        }
        let own = n.pfx_get(idx)?;
        out.clear();
        Self::below(n, idx, out);
        Some((own, cover))
    }

    /// The maximal prefixes strictly below tree index `idx` of `n`, into
    /// `out`. Below a child slot (local length 8) is the whole child: its
    /// prefixes are all inside the slot's, however deep it lies.
    fn below(n: &Node<V>, idx: usize, out: &mut Vec<(u128, u8)>) {
        if idx >= 256 {
            if let Some(c) = n.kid(idx - 256) {
                Self::whole(c, out);
            }
        } else {
            Self::collect(n, 2 * idx, out);
            Self::collect(n, 2 * idx + 1, out);
        }
    }

    /// The maximal prefixes of node `c` (all of them lie inside whatever
    /// covers its key): those below its two local halves.
    #[inline(always)]
    fn whole(c: &Node<V>, out: &mut Vec<(u128, u8)>) {
        Self::collect(c, 2, out);
        Self::collect(c, 3, out);
    }

    fn collect(n: &Node<V>, idx: usize, out: &mut Vec<(u128, u8)>) {
        if n.has_pfx(idx) {
            out.push(Self::prefix_of(n.key(), n.d(), idx));
        } else if n.subtree_nonempty(idx) {
            Self::below(n, idx, out);
        }
    }

    /// All prefixes in prefix order (address, then length).
    pub(crate) fn iter(&self) -> RibIter<'_, W, V> {
        let mut stack = Vec::with_capacity(64);
        if !self.root().is_empty() {
            stack.push((self.root(), 1u16));
        }
        RibIter { stack }
    }

    /// Bytes reachable and not yet in `seen`.
    pub(crate) fn mem(&self, seen: &mut HashSet<usize>) -> usize {
        let root = self.root();
        if !seen.insert(root as *const Node<V> as usize) {
            return 0;
        }
        HEADER + size_of::<Node<V>>() + root.mem(seen)
    }
}

/// Pre-order iterator over a RIB: `(addr, len, target)`.
pub(crate) struct RibIter<'a, const W: u32, V> {
    stack: Vec<(&'a Node<V>, u16)>,
}

impl<const W: u32, V: Copy + PartialEq> Iterator for RibIter<'_, W, V> {
    type Item = (u128, u8, V);

    fn next(&mut self) -> Option<Self::Item> {
        while let Some((n, idx)) = self.stack.pop() {
            let idx = idx as usize;
            if idx >= 256 {
                if let Some(c) = n.kid(idx - 256) {
                    for s in [3u16, 2] {
                        if c.subtree_nonempty(s as usize) {
                            self.stack.push((c, s));
                        }
                    }
                }
            } else {
                for s in [2 * idx + 1, 2 * idx] {
                    if n.subtree_nonempty(s) {
                        self.stack.push((n, s as u16));
                    }
                }
            }
            if let Some(t) = n.pfx_get(idx) {
                let (a, l) = Rib::<W, V>::prefix_of(n.key(), n.d(), idx);
                return Some((a, l, t));
            }
        }
        None
    }
}

#[cfg(test)]
#[path = "rib_tests.rs"]
mod tests;
