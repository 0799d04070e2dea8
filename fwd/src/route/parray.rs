//! A persistent paged array: the storage under the FIB tables and the next-hop table.
//!
//! `top -> dir (D mid pointers) -> mid (M page pointers) -> page (N values)`,
//! every node behind a counted [`LArc`] whose counts change only under the
//! [`Lineage`] lock the array shares with its copies (see [`super::larc`]).
//! A write copies the dir, the mid and the page the first time a version
//! touches them and writes in place afterwards (within one batch the working
//! copy is the only owner: one count load per level says so). Untouched
//! pages stay shared with every older version. A read is four dependent
//! loads (`top`, the dirs and the mids are small and cache-hot; the page is
//! the one cache miss).
//!
//! Copying a node counts one more reference to each of its children (and
//! the drop of the old version one fewer), so a version's cost is the sum of
//! the fan-outs on its path, while a lookup's is the depth. Three levels of
//! 16, 32 and 32 count 80 for the FIB's first level (16,384 pages); as plain
//! loads and stores under the lock rather than locked instructions
//! (`bench-results/route.md`).
//!
//! Pages whose values are all `fill` are replaced by one shared canonical page
//! ([`PArray::canonicalize`]) so an empty table costs a few KiB and a table whose
//! routes were all deleted returns to exactly the memory of an empty one.
//! [`PArray::set_uniform`] points a page at a shared page of one value (the
//! FIB's short prefixes), made once per batch.

use std::collections::HashSet;
use std::mem::size_of;
use triomphe::Arc;

use super::larc::{cow, Held, Kids, LArc, Lazy, Lineage, HEADER};

/// `M` pages.
pub(crate) struct Mid<T, const N: usize, const M: usize> {
    pages: [LArc<[T; N]>; M],
    /// Bit `s` set: page `s` was written in place ([`PArray::page_mut`]),
    /// an allocation of its own, neither the canonical page nor a shared
    /// uniform one (counted in [`PArray::written_pages`]).
    written: u64,
}

impl<T, const N: usize, const M: usize> Mid<T, N, M> {
    /// A copy sharing the pages.
    fn share(m: &LArc<Self>, h: &Held<'_>) -> LArc<Self> {
        LArc::new(Mid {
            pages: std::array::from_fn(|i| m.pages[i].share(h)),
            written: m.written,
        })
    }
}

impl<T, const N: usize, const M: usize> Kids for Mid<T, N, M> {
    fn release_kids(self, h: &Held<'_>) {
        for p in self.pages {
            p.release(h);
        }
    }
}

/// `D` mids: the level between the top and the mids (see the module doc).
pub(crate) struct Dir<T, const N: usize, const M: usize, const D: usize> {
    mids: [LArc<Mid<T, N, M>>; D],
}

impl<T, const N: usize, const M: usize, const D: usize> Dir<T, N, M, D> {
    /// A copy sharing the mids.
    fn share(d: &LArc<Self>, h: &Held<'_>) -> LArc<Self> {
        LArc::new(Dir {
            mids: std::array::from_fn(|i| d.mids[i].share(h)),
        })
    }
}

impl<T, const N: usize, const M: usize, const D: usize> Kids for Dir<T, N, M, D> {
    fn release_kids(self, h: &Held<'_>) {
        for m in self.mids {
            m.release(h);
        }
    }
}

/// The shared all-`fill` nodes.
struct Zeros<T, const N: usize, const M: usize, const D: usize> {
    dir: LArc<Dir<T, N, M, D>>,
    mid: LArc<Mid<T, N, M>>,
    page: LArc<[T; N]>,
}

/// The shared all-`fill` nodes of an array's `zeros` field (a function of
/// the field, so that a caller can borrow it while it writes `top`).
#[inline(always)]
fn zeros<T, const N: usize, const M: usize, const D: usize>(
    z: &Option<Zeros<T, N, M, D>>,
) -> &Zeros<T, N, M, D> {
    match z {
        Some(z) => z,
        None => unreachable!("taken only by drop"),
    }
}

/// See the module doc. `N` (values per page), `M` (pages per mid) and `D`
/// (mids per dir) are powers of two.
pub(crate) struct PArray<T: Send + Sync + 'static, const N: usize, const M: usize, const D: usize> {
    top: Vec<LArc<Dir<T, N, M, D>>>,
    /// Taken only by `drop`.
    zeros: Option<Zeros<T, N, M, D>>,
    /// The last page [`PArray::set_uniform`] made (reused until
    /// [`PArray::end_batch`]).
    uniform: Option<LArc<[T; N]>>,
    fill: T,
    /// Pages written in place (the `written` bits of the mids): the pages
    /// this version holds as allocations of their own.
    written: usize,
    lin: Arc<Lineage>,
}

impl<T: Send + Sync + 'static + Clone, const N: usize, const M: usize, const D: usize> Clone
    for PArray<T, N, M, D>
{
    fn clone(&self) -> Self {
        let h = self.lin.hold();
        let z = self.zeros();
        let top = self.top.iter().map(|d| d.share(&h)).collect();
        let zeros = Some(Zeros {
            dir: z.dir.share(&h),
            mid: z.mid.share(&h),
            page: z.page.share(&h),
        });
        drop(h);
        PArray {
            top,
            zeros,
            uniform: None,
            fill: self.fill.clone(),
            written: self.written,
            lin: self.lin.clone(),
        }
    }
}

impl<T: Send + Sync + 'static, const N: usize, const M: usize, const D: usize> Drop
    for PArray<T, N, M, D>
{
    fn drop(&mut self) {
        let top = std::mem::take(&mut self.top);
        let (zeros, uniform) = (self.zeros.take(), self.uniform.take());
        let h = &self.lin.hold();
        for d in top {
            d.release(h);
        }
        if let Some(z) = zeros {
            z.dir.release(h);
            z.mid.release(h);
            z.page.release(h);
        }
        if let Some(u) = uniform {
            u.release(h);
        }
    }
}

impl<T: Send + Sync + 'static, const N: usize, const M: usize, const D: usize> PArray<T, N, M, D> {
    #[inline(always)]
    fn zeros(&self) -> &Zeros<T, N, M, D> {
        zeros(&self.zeros)
    }
}

impl<
        T: Send + Sync + 'static + Clone + PartialEq,
        const N: usize,
        const M: usize,
        const D: usize,
    > PArray<T, N, M, D>
{
    const PB: u32 = N.trailing_zeros();
    const MB: u32 = M.trailing_zeros();
    const DB: u32 = D.trailing_zeros();
    /// Values per dir: the unit in which the array grows and shrinks.
    pub(crate) const PER_DIR: usize = N * M * D;
    const POW2: () =
        assert!(N.is_power_of_two() && M.is_power_of_two() && D.is_power_of_two() && M <= 64);

    /// An array of at least `len` values, all `fill` (rounded up to whole dirs).
    pub(crate) fn new(len: usize, fill: T) -> Self {
        let () = Self::POW2;
        let lin = Arc::new(Lineage::default());
        let h = lin.hold();
        let page: LArc<[T; N]> = LArc::new(std::array::from_fn(|_| fill.clone()));
        let mid = LArc::new(Mid {
            pages: std::array::from_fn(|_| page.share(&h)),
            written: 0,
        });
        let dir = LArc::new(Dir {
            mids: std::array::from_fn(|_| mid.share(&h)),
        });
        let dirs = len.div_ceil(Self::PER_DIR);
        let top = (0..dirs).map(|_| dir.share(&h)).collect();
        drop(h);
        PArray {
            top,
            zeros: Some(Zeros { dir, mid, page }),
            uniform: None,
            fill,
            written: 0,
            lin,
        }
    }

    /// Dir, mid and slot of page `p`.
    #[inline(always)]
    fn split(p: usize) -> (usize, usize, usize) {
        (
            p >> (Self::MB + Self::DB),
            (p >> Self::MB) & (D - 1),
            p & (M - 1),
        )
    }

    /// Number of addressable values (a multiple of `N * M * D`).
    #[inline]
    pub(crate) fn capacity(&self) -> usize {
        self.top.len() * Self::PER_DIR
    }

    /// Value `i`. Panics if `i >= capacity()`.
    #[inline(always)]
    pub(crate) fn get(&self, i: usize) -> &T {
        &self.page(i >> Self::PB)[i & (N - 1)]
    }

    /// Value `i`, or `None` beyond the capacity.
    #[inline(always)]
    pub(crate) fn try_get(&self, i: usize) -> Option<&T> {
        (i < self.capacity()).then(|| self.get(i))
    }

    /// Page `p` (values `p*N .. p*N+N`).
    #[inline(always)]
    pub(crate) fn page(&self, p: usize) -> &[T; N] {
        self.page_arc(p)
    }

    /// Whether page `p` and its path are this version's own, so that a
    /// write there copies nothing (counts read, none changed).
    #[inline(always)]
    pub(crate) fn page_is_private(&self, p: usize) -> bool {
        let (d, m, s) = Self::split(p);
        let dir = &self.top[d];
        dir.is_unique() && dir.mids[m].is_unique() && dir.mids[m].pages[s].is_unique()
    }

    /// The pointer to page `p` (for identity checks).
    #[inline(always)]
    fn page_arc(&self, p: usize) -> &LArc<[T; N]> {
        let (d, m, s) = Self::split(p);
        &self.top[d].mids[m].pages[s]
    }

    /// Page `p`, unshared (copied if any other version still holds it).
    #[inline(always)]
    pub(crate) fn page_mut(&mut self, p: usize) -> &mut [T; N] {
        if !self.page_is_private(p) {
            self.unshare_page(p);
        }
        let (d, m, s) = Self::split(p);
        let Some(mid) = self.top[d].get_mut().and_then(|d| d.mids[m].get_mut()) else {
            unreachable!("a path made private is private")
        };
        if mid.written & (1 << s) == 0 {
            mid.written |= 1 << s;
            self.written += 1;
        }
        match mid.pages[s].get_mut() {
            Some(pg) => pg,
            None => unreachable!("a path made private is private"),
        }
    }

    /// Pages this version holds as allocations of its own (written in
    /// place; not the canonical page nor a shared uniform one). Kept as
    /// pages are written and replaced: O(1).
    #[inline]
    pub(crate) fn written_pages(&self) -> usize {
        self.written
    }

    /// The memory this array is charged (`route::limits`): its shared
    /// all-`fill` nodes and its pages written in place. O(1).
    #[inline]
    pub(crate) fn charge(&self) -> usize {
        3 * HEADER
            + size_of::<Dir<T, N, M, D>>()
            + size_of::<Mid<T, N, M>>()
            + (1 + self.written) * size_of::<[T; N]>()
            + self.written * HEADER
    }

    /// Copies what other versions share of page `p`'s path, under one lock.
    #[cold]
    #[inline(never)]
    fn unshare_page(&mut self, p: usize) {
        let (d, m, s) = Self::split(p);
        let lk = &mut Lazy::new(&self.lin);
        let dir = cow(&mut self.top[d], lk, Dir::share);
        let mid = cow(&mut dir.mids[m], lk, Mid::share);
        cow(&mut mid.pages[s], lk, |pg, _| LArc::new((**pg).clone()));
    }

    /// Element `i`, writable (its page, mid and dir made private).
    #[inline(always)]
    pub(crate) fn get_mut(&mut self, i: usize) -> &mut T {
        &mut self.page_mut(i >> Self::PB)[i & (N - 1)]
    }

    /// Points page `p` at `page` (a shared page), and turns its mid and dir
    /// back into the canonical ones if that made them all canonical.
    fn replace_page(&mut self, p: usize, lk: &mut Lazy<'_>, page: LArc<[T; N]>) {
        let (d, m, s) = Self::split(p);
        let z = zeros(&self.zeros);
        let dir = cow(&mut self.top[d], lk, Dir::share);
        let mid = cow(&mut dir.mids[m], lk, Mid::share);
        let h = lk.held();
        std::mem::replace(&mut mid.pages[s], page).release(h);
        if mid.written & (1 << s) != 0 {
            mid.written &= !(1 << s);
            self.written -= 1;
        }
        if mid.pages.iter().all(|pg| LArc::ptr_eq(pg, &z.page)) {
            std::mem::replace(&mut dir.mids[m], z.mid.share(h)).release(h);
            if dir.mids.iter().all(|md| LArc::ptr_eq(md, &z.mid)) {
                std::mem::replace(&mut self.top[d], z.dir.share(h)).release(h);
            }
        }
    }

    /// Whether page `p` is the shared all-`fill` page (no value of it was
    /// ever written, or it was canonicalised).
    #[inline]
    pub(crate) fn is_canonical(&self, p: usize) -> bool {
        LArc::ptr_eq(self.page_arc(p), &self.zeros().page)
    }

    /// Whether page `p` is the shared page of `v`s that [`PArray::set_uniform`]
    /// would point it at.
    pub(crate) fn is_uniform(&self, p: usize, v: &T) -> bool {
        if *v == self.fill {
            return self.is_canonical(p);
        }
        self.uniform
            .as_ref()
            .is_some_and(|u| u[0] == *v && LArc::ptr_eq(u, self.page_arc(p)))
    }

    /// Points page `p` at a page of `v`s shared with every other page set so
    /// in this batch (the canonical page for `fill`).
    pub(crate) fn set_uniform(&mut self, p: usize, v: T) {
        let lin = self.lin.clone();
        let mut lk = Lazy::new(&lin);
        let h = lk.held();
        let page = if v == self.fill {
            self.zeros().page.share(h)
        } else {
            match &self.uniform {
                Some(u) if u[0] == v => u.share(h),
                _ => {
                    let u = LArc::new(std::array::from_fn(|_| v.clone()));
                    let page = u.share(h);
                    if let Some(old) = self.uniform.replace(u) {
                        old.release(h);
                    }
                    page
                }
            }
        };
        self.replace_page(p, &mut lk, page);
    }

    /// End of a batch: forget the last uniform page (so that a version does
    /// not keep a page none of its pages point at).
    pub(crate) fn end_batch(&mut self) {
        if let Some(u) = self.uniform.take() {
            u.release(&self.lin.hold());
        }
    }

    /// Sets value `i` (copy-on-write of its page).
    #[inline]
    pub(crate) fn set(&mut self, i: usize, v: T) {
        *self.get_mut(i) = v;
    }

    /// Grows (with `fill`) until `capacity() >= len`.
    pub(crate) fn grow_to(&mut self, len: usize) {
        if self.capacity() >= len {
            return;
        }
        let h = self.lin.hold();
        while self.top.len() * Self::PER_DIR < len {
            // Exact capacity, as a clone has: memory accounting must not depend on
            // whether this version was grown or copied.
            self.top.reserve_exact(1);
            self.top.push(zeros(&self.zeros).dir.share(&h));
        }
    }

    /// Number of dirs.
    pub(crate) fn dirs(&self) -> usize {
        self.top.len()
    }

    /// Whether dir `d` is the shared all-`fill` dir.
    pub(crate) fn dir_is_zero(&self, d: usize) -> bool {
        LArc::ptr_eq(&self.top[d], &self.zeros().dir)
    }

    /// Drops the last dir (the caller checked it holds only `fill`).
    pub(crate) fn pop_dir(&mut self) {
        debug_assert!(
            self.top
                .last()
                .is_none_or(|d| LArc::ptr_eq(d, &self.zeros().dir)),
            "only a canonical dir (no page written) is dropped"
        );
        if let Some(d) = self.top.pop() {
            d.release(&self.lin.hold());
        }
        // Exact capacity, as a clone has (see `grow_to`).
        self.top.shrink_to_fit();
    }

    /// If page `p` holds only `fill`, replace it by the shared canonical page (and
    /// its mid and dir by the shared canonical ones when they became all canonical).
    pub(crate) fn canonicalize(&mut self, p: usize)
    where
        T: Copy,
    {
        if !self.is_canonical(p) && all_eq(&self.page(p)[..], self.fill) {
            self.set_uniform(p, self.fill);
        }
    }

    /// [`PArray::canonicalize`] for values that are not `Copy`.
    pub(crate) fn canonicalize_opt(&mut self, p: usize) {
        if !self.is_canonical(p) && self.page(p).iter().all(|x| *x == self.fill) {
            self.set_uniform(p, self.fill.clone());
        }
    }

    /// Every page pointer, dir by dir and mid by mid.
    fn page_arcs(&self) -> impl Iterator<Item = &LArc<[T; N]>> {
        self.top
            .iter()
            .flat_map(|d| d.mids.iter())
            .flat_map(|m| m.pages.iter())
    }

    /// Number of distinct non-canonical pages (for statistics).
    pub(crate) fn private_pages(&self) -> usize {
        let mut seen = HashSet::new();
        for pg in self.page_arcs() {
            if !LArc::ptr_eq(pg, &self.zeros().page) {
                seen.insert(pg.as_ptr() as usize);
            }
        }
        seen.len()
    }

    /// Bytes of every allocation reachable from this array that is not yet in
    /// `seen` (so memory shared between tables or versions is counted once).
    pub(crate) fn mem(&self, seen: &mut HashSet<usize>) -> usize {
        let mut b = self.top.capacity() * size_of::<LArc<Dir<T, N, M, D>>>();
        let dirs = self.top.iter().chain(std::iter::once(&self.zeros().dir));
        for dir in dirs {
            if !seen.insert(dir.as_ptr() as usize) {
                continue;
            }
            b += HEADER + size_of::<Dir<T, N, M, D>>();
            for mid in &dir.mids {
                if !seen.insert(mid.as_ptr() as usize) {
                    continue;
                }
                b += HEADER + size_of::<Mid<T, N, M>>();
                for pg in &mid.pages {
                    if seen.insert(pg.as_ptr() as usize) {
                        b += HEADER + size_of::<[T; N]>();
                    }
                }
            }
        }
        b
    }
}

/// Whether every element of `s` equals `v` (branch-free inner loop so it vectorises).
#[inline]
pub(crate) fn all_eq<T: Copy + PartialEq>(s: &[T], v: T) -> bool {
    s.chunks(32)
        .all(|c| c.iter().fold(true, |acc, x| acc & (*x == v)))
}

#[cfg(test)]
mod tests {
    use super::super::larc;
    use super::*;

    type A = PArray<u32, 16, 4, 2>;

    #[test]
    fn cow_shares_untouched_pages() {
        let mut a = A::new(200, 0);
        assert_eq!(a.capacity(), 256);
        a.set(5, 7);
        a.set(100, 9);
        let mut b = a.clone();
        b.set(5, 8);
        assert_eq!(*a.get(5), 7);
        assert_eq!(*b.get(5), 8);
        assert_eq!(*b.get(100), 9);
        // page of index 100 is shared, page of index 5 is not
        assert!(std::ptr::eq(a.page(100 / 16), b.page(100 / 16)));
        assert!(!std::ptr::eq(a.page(0), b.page(0)));
        assert_eq!(a.try_get(256), None);
    }

    #[test]
    fn a_write_copies_one_dir_one_mid_one_page() {
        let mut a = A::new(256, 0);
        // The shared zero page is no one's own.
        assert!(!a.page_is_private(0));
        for i in 0..256 {
            a.set(i, 1);
        }
        assert!((0..16).all(|p| a.page_is_private(p)));
        let mut b = a.clone();
        assert!((0..16).all(|p| !a.page_is_private(p) && !b.page_is_private(p)));
        b.set(70, 2);
        // What a write copied is its own, in both; a page under a copied
        // mid, or a copied page under a shared mid, is not.
        for p in 0..16 {
            assert_eq!(b.page_is_private(p), p == 4, "page {p}");
            assert_eq!(a.page_is_private(p), p == 4, "page {p}");
        }
        let ptr = |x: &A, d: usize| x.top[d].as_ptr();
        // Page 4 (values 64..80) is in dir 0, mid 1.
        assert_ne!(ptr(&a, 0), ptr(&b, 0));
        assert_eq!(ptr(&a, 1), ptr(&b, 1));
        let (da, db) = (&a.top[0], &b.top[0]);
        assert!(LArc::ptr_eq(&da.mids[0], &db.mids[0]));
        assert!(!LArc::ptr_eq(&da.mids[1], &db.mids[1]));
        for p in 0..16 {
            assert_eq!(
                LArc::ptr_eq(a.page_arc(p), b.page_arc(p)),
                p != 4,
                "page {p}"
            );
        }
        // A page under the copied mid is counted by both mids; one under a
        // shared mid, once.
        assert_eq!(a.page_arc(5).count(), 2);
        assert_eq!(a.page_arc(3).count(), 1);
        assert_eq!((*a.get(70), *b.get(70)), (1, 2));
    }

    #[test]
    fn canonicalize_returns_to_baseline() {
        let base = A::new(256, 0);
        let base_mem = base.mem(&mut HashSet::new());
        let mut a = base.clone();
        for i in 0..256 {
            a.set(i, i as u32 + 1);
        }
        assert_eq!(a.private_pages(), 16);
        for i in 0..256 {
            a.set(i, 0);
            a.canonicalize(i / 16);
        }
        assert_eq!(a.private_pages(), 0);
        assert_eq!(a.mem(&mut HashSet::new()), base_mem);
        assert!((0..a.dirs()).all(|d| a.dir_is_zero(d)));
    }

    /// One step of [`paged_array_follows_a_vec_model`].
    #[derive(Clone, Debug)]
    enum Op {
        Set(usize, u32),
        /// Zero page `p` value by value, then canonicalise it.
        Clear(usize),
        /// Point page `p` at a shared page of `v`s (as the FIB's uniform pages).
        Uniform(usize, u32),
        /// Grow by one dir, or drop the last dir if it is all canonical.
        Resize(bool),
        /// Keep a copy of the array as it is now.
        Snapshot,
        /// Forget the batch's uniform page.
        EndBatch,
        /// Drop the oldest copy kept.
        DropSnapshot,
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        prop_oneof![
            4 => (0usize..512, 0u32..4).prop_map(|(i, v)| Op::Set(i, v)),
            1 => (0usize..32).prop_map(Op::Clear),
            1 => (0usize..32, 0u32..3).prop_map(|(p, v)| Op::Uniform(p, v)),
            1 => proptest::bool::ANY.prop_map(Op::Resize),
            1 => Just(Op::Snapshot),
            1 => Just(Op::EndBatch),
            1 => Just(Op::DropSnapshot),
        ]
    }

    proptest::proptest! {
        /// Every write through the three levels matches a plain vector;
        /// copies taken along the way keep their values (persistence); the
        /// count of pages written in place is the set of pages written since
        /// they were last cleared or made uniform, in every copy; an
        /// array whose values all went back to `fill` costs what a new one
        /// of its length does.
        #[test]
        fn paged_array_follows_a_vec_model(ops in proptest::collection::vec(op(), 1..200)) {
            type B = PArray<u32, 16, 2, 4>;
            let live = larc::live_nodes();
            let mut a = B::new(256, 0);
            let mut model = vec![0u32; a.capacity()];
            let mut snaps: Vec<(B, Vec<u32>, usize)> = Vec::new();
            let mut written = std::collections::BTreeSet::new();
            for op in ops {
                match op {
                    Op::Set(i, v) if i < model.len() => {
                        a.set(i, v);
                        model[i] = v;
                        written.insert(i / 16);
                    }
                    Op::Clear(p) if p * 16 < model.len() => {
                        for i in p * 16..p * 16 + 16 {
                            a.set(i, 0);
                        }
                        model[p * 16..p * 16 + 16].fill(0);
                        a.canonicalize(p);
                        proptest::prop_assert!(a.is_canonical(p));
                        written.remove(&p);
                    }
                    Op::Uniform(p, v) if p * 16 < model.len() => {
                        a.set_uniform(p, v);
                        proptest::prop_assert!(a.is_uniform(p, &v));
                        model[p * 16..p * 16 + 16].fill(v);
                        written.remove(&p);
                    }
                    Op::EndBatch => a.end_batch(),
                    Op::Resize(true) => {
                        a.grow_to(a.capacity() + 1);
                        model.resize(a.capacity(), 0);
                    }
                    Op::Resize(false) => {
                        let d = a.dirs() - 1;
                        if d > 0 && a.dir_is_zero(d) {
                            a.pop_dir();
                            model.truncate(a.capacity());
                        }
                    }
                    Op::Snapshot => snaps.push((a.clone(), model.clone(), written.len())),
                    Op::DropSnapshot if !snaps.is_empty() => drop(snaps.remove(0)),
                    _ => {}
                }
                proptest::prop_assert_eq!(a.capacity(), model.len());
                proptest::prop_assert_eq!(a.written_pages(), written.len());
            }
            for (i, v) in model.iter().enumerate() {
                proptest::prop_assert_eq!(a.get(i), v);
            }
            for (s, m, w) in &snaps {
                for (i, v) in m.iter().enumerate() {
                    proptest::prop_assert_eq!(s.get(i), v);
                }
                proptest::prop_assert_eq!(s.written_pages(), *w);
            }
            // Back to all `fill`: the memory of a new array of this length.
            for p in 0..model.len() / 16 {
                for i in p * 16..p * 16 + 16 {
                    a.set(i, 0);
                }
                a.canonicalize(p);
            }
            proptest::prop_assert_eq!(a.written_pages(), 0);
            drop(snaps);
            let fresh = B::new(a.capacity(), 0);
            proptest::prop_assert_eq!(a.mem(&mut HashSet::new()), fresh.mem(&mut HashSet::new()));
            proptest::prop_assert!((0..a.dirs()).all(|d| a.dir_is_zero(d)));
            // Every node freed once: none leaked, none freed twice.
            drop((a, fresh));
            proptest::prop_assert_eq!(larc::live_nodes(), live);
        }
    }

    #[test]
    fn all_eq_works() {
        let v = vec![3u32; 100];
        assert!(all_eq(&v, 3));
        let mut w = v.clone();
        w[77] = 4;
        assert!(!all_eq(&w, 3));
        assert!(all_eq::<u32>(&[], 1));
    }
}
