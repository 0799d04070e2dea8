//! A persistent paged array: the storage under the FIB tables and the next-hop table.
//!
//! `top -> dir (D mid pointers) -> mid (M page pointers) -> page (N values)`,
//! every level behind an `Arc`.
//! The `Arc` is `triomphe`'s, as everywhere in the routing tables: it has no
//! weak count, so `Arc::make_mut` checks uniqueness with a plain load where
//! `std`'s does a locked compare-exchange, a full barrier at every level of
//! every write of a batch (see `bench-results/route.md`).
//! A write goes through [`make_mut`] on the dir, the mid and the page, so it
//! copies them the first time a version touches them and writes in place
//! afterwards (within one batch the working copy is the only owner). Untouched
//! pages stay shared with every older version. A read is four dependent loads
//! (`top`, the dirs and the mids are small and cache-hot; the page is the one
//! cache miss).
//!
//! Copying a node counts one more reference to each of its children (a locked
//! increment, and a decrement when the old version goes), so a version's cost
//! is the sum of the fan-outs on its path, while a lookup's is the depth. With
//! two levels above the pages the FIB's first level (16,384 pages) needed 128
//! mids of 128: 256 counted references per one-change version, half of its
//! time. Three levels of 16, 32 and 32 count 80 (`bench-results/route.md`).
//!
//! Pages whose values are all `fill` are replaced by one shared canonical page
//! ([`PArray::canonicalize`]) so an empty table costs a few KiB and a table whose
//! routes were all deleted returns to exactly the memory of an empty one.

use std::collections::HashSet;
use std::mem::size_of;
use triomphe::Arc;

/// Size of an `Arc`'s header (`triomphe`'s: one count, no weak count).
pub(crate) const ARC_HEADER: usize = size_of::<usize>();

#[derive(Clone)]
pub(crate) struct Mid<T, const N: usize, const M: usize> {
    pages: [Arc<[T; N]>; M],
}

impl<T, const N: usize, const M: usize> Drop for Mid<T, N, M> {
    fn drop(&mut self) {
        // The page decrements that follow are locked instructions on cold lines,
        // each a full memory round trip; load the counts first (plain loads,
        // overlapped) so that the decrements hit the cache.
        touch(&self.pages);
    }
}

/// `D` mids: the level between the top and the mids (see the module doc).
#[derive(Clone)]
pub(crate) struct Dir<T, const N: usize, const M: usize, const D: usize> {
    mids: [Arc<Mid<T, N, M>>; D],
}

impl<T, const N: usize, const M: usize, const D: usize> Drop for Dir<T, N, M, D> {
    fn drop(&mut self) {
        // As for a mid's pages.
        touch(&self.mids);
    }
}

/// `Arc::make_mut`, inline when `a` is already private (one load: a
/// write to what this batch already copied); the copy itself is out of
/// line. (`triomphe`'s own `make_mut` carries the copy inline and is
/// called, not inlined, on every write.)
#[inline(always)]
pub(crate) fn make_mut<T: Clone>(a: &mut Arc<T>) -> &mut T {
    make_mut_with(a, |_| ())
}

/// [`make_mut`], calling `prefetch` on a shared value before copying it
/// (to load the counts that the copy increments, see [`touch`]).
#[inline(always)]
pub(crate) fn make_mut_with<T: Clone>(a: &mut Arc<T>, prefetch: impl FnOnce(&T)) -> &mut T {
    if !a.is_unique() {
        unshare(a, prefetch);
    }
    match Arc::get_mut(a) {
        Some(v) => v,
        None => unreachable!("an Arc made unique is unique"),
    }
}

#[cold]
#[inline(never)]
fn unshare<T: Clone>(a: &mut Arc<T>, prefetch: impl FnOnce(&T)) {
    prefetch(a);
    *a = Arc::new(T::clone(a));
}

/// Loads the reference counts of `arcs` so that the atomic increments or
/// decrements that follow hit the cache. A locked read-modify-write does not
/// overlap with other memory accesses the way plain loads do, so cloning or
/// dropping a node with many cold children is otherwise one serial cache miss
/// per child.
#[inline]
pub(crate) fn touch<'a, A: 'a>(arcs: impl IntoIterator<Item = &'a Arc<A>>) {
    let mut s = 0usize;
    for a in arcs {
        s = s.wrapping_add(Arc::count(a));
    }
    std::hint::black_box(s);
}

/// See the module doc. `N` (values per page), `M` (pages per mid) and `D`
/// (mids per dir) are powers of two.
pub(crate) struct PArray<T, const N: usize, const M: usize, const D: usize> {
    top: Vec<Arc<Dir<T, N, M, D>>>,
    zero_dir: Arc<Dir<T, N, M, D>>,
    zero_mid: Arc<Mid<T, N, M>>,
    zero_page: Arc<[T; N]>,
    fill: T,
}

impl<T: Clone, const N: usize, const M: usize, const D: usize> Clone for PArray<T, N, M, D> {
    fn clone(&self) -> Self {
        touch(&self.top);
        PArray {
            top: self.top.clone(),
            zero_dir: self.zero_dir.clone(),
            zero_mid: self.zero_mid.clone(),
            zero_page: self.zero_page.clone(),
            fill: self.fill.clone(),
        }
    }
}

impl<T, const N: usize, const M: usize, const D: usize> Drop for PArray<T, N, M, D> {
    fn drop(&mut self) {
        touch(&self.top);
    }
}

impl<T: Clone + PartialEq, const N: usize, const M: usize, const D: usize> PArray<T, N, M, D> {
    const PB: u32 = N.trailing_zeros();
    const MB: u32 = M.trailing_zeros();
    const DB: u32 = D.trailing_zeros();
    /// Values per dir: the unit in which the array grows and shrinks.
    pub(crate) const PER_DIR: usize = N * M * D;
    const POW2: () = assert!(N.is_power_of_two() && M.is_power_of_two() && D.is_power_of_two());

    /// An array of at least `len` values, all `fill` (rounded up to whole dirs).
    pub(crate) fn new(len: usize, fill: T) -> Self {
        let () = Self::POW2;
        let zero_page: Arc<[T; N]> = Arc::new(std::array::from_fn(|_| fill.clone()));
        let zero_mid = Arc::new(Mid {
            pages: std::array::from_fn(|_| zero_page.clone()),
        });
        let zero_dir = Arc::new(Dir {
            mids: std::array::from_fn(|_| zero_mid.clone()),
        });
        let dirs = len.div_ceil(Self::PER_DIR);
        PArray {
            top: vec![zero_dir.clone(); dirs],
            zero_dir,
            zero_mid,
            zero_page,
            fill,
        }
    }

    /// Number of addressable values (a multiple of `N * M * D`).
    #[inline]
    pub(crate) fn capacity(&self) -> usize {
        self.top.len() * Self::PER_DIR
    }

    /// The mid of page `p`.
    #[inline(always)]
    fn mid(&self, p: usize) -> &Mid<T, N, M> {
        &self.top[p >> (Self::MB + Self::DB)].mids[(p >> Self::MB) & (D - 1)]
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

    /// Page `p`, unshared (copied if any other version still holds it).
    #[inline(always)]
    pub(crate) fn page_mut(&mut self, p: usize) -> &mut [T; N] {
        let dir = make_mut_with(&mut self.top[p >> (Self::MB + Self::DB)], |d| {
            touch(&d.mids)
        });
        let mid = make_mut_with(&mut dir.mids[(p >> Self::MB) & (D - 1)], |m| {
            touch(&m.pages)
        });
        make_mut(&mut mid.pages[p & (M - 1)])
    }

    /// Element `i`, writable (its page, mid and dir made private).
    #[inline(always)]
    pub(crate) fn get_mut(&mut self, i: usize) -> &mut T {
        &mut self.page_mut(i >> Self::PB)[i & (N - 1)]
    }

    /// The `Arc` of page `p` (for identity checks).
    #[inline(always)]
    pub(crate) fn page_arc(&self, p: usize) -> &Arc<[T; N]> {
        &self.mid(p).pages[p & (M - 1)]
    }

    /// Points page `p` at `page` (a shared page, e.g. a uniform one), and turns
    /// its mid and dir back into the canonical ones if that made them all
    /// canonical.
    pub(crate) fn replace_page(&mut self, p: usize, page: Arc<[T; N]>) {
        let (d, m, slot) = (
            p >> (Self::MB + Self::DB),
            (p >> Self::MB) & (D - 1),
            p & (M - 1),
        );
        let dir = make_mut(&mut self.top[d]);
        let mid = make_mut(&mut dir.mids[m]);
        mid.pages[slot] = page;
        if mid.pages.iter().all(|pg| Arc::ptr_eq(pg, &self.zero_page)) {
            dir.mids[m] = self.zero_mid.clone();
            if dir.mids.iter().all(|md| Arc::ptr_eq(md, &self.zero_mid)) {
                self.top[d] = self.zero_dir.clone();
            }
        }
    }

    /// Whether page `p` is the shared all-`fill` page (no value of it was
    /// ever written, or it was canonicalised).
    #[inline]
    pub(crate) fn is_canonical(&self, p: usize) -> bool {
        Arc::ptr_eq(self.page_arc(p), &self.zero_page)
    }

    /// The shared all-`fill` page.
    pub(crate) fn zero_page(&self) -> &Arc<[T; N]> {
        &self.zero_page
    }

    /// Sets value `i` (copy-on-write of its page).
    #[inline]
    pub(crate) fn set(&mut self, i: usize, v: T) {
        *self.get_mut(i) = v;
    }

    /// Grows (with `fill`) until `capacity() >= len`.
    pub(crate) fn grow_to(&mut self, len: usize) {
        while self.capacity() < len {
            // Exact capacity, as a clone has: memory accounting must not depend on
            // whether this version was grown or copied.
            self.top.reserve_exact(1);
            self.top.push(self.zero_dir.clone());
        }
    }

    /// Number of dirs.
    pub(crate) fn dirs(&self) -> usize {
        self.top.len()
    }

    /// Whether dir `d` is the shared all-`fill` dir.
    pub(crate) fn dir_is_zero(&self, d: usize) -> bool {
        Arc::ptr_eq(&self.top[d], &self.zero_dir)
    }

    /// Drops the last dir (the caller checked it holds only `fill`).
    pub(crate) fn pop_dir(&mut self) {
        self.top.pop();
        // Exact capacity, as a clone has (see `grow_to`).
        self.top.shrink_to_fit();
    }

    /// If page `p` holds only `fill`, replace it by the shared canonical page (and
    /// its mid and dir by the shared canonical ones when they became all canonical).
    pub(crate) fn canonicalize(&mut self, p: usize)
    where
        T: Copy,
    {
        let page = self.page_arc(p);
        if !Arc::ptr_eq(page, &self.zero_page) && all_eq(&page[..], self.fill) {
            self.replace_page(p, self.zero_page.clone());
        }
    }

    /// [`PArray::canonicalize`] for values that are not `Copy`.
    pub(crate) fn canonicalize_opt(&mut self, p: usize) {
        let page = self.page_arc(p);
        if !Arc::ptr_eq(page, &self.zero_page) && page.iter().all(|x| *x == self.fill) {
            self.replace_page(p, self.zero_page.clone());
        }
    }

    /// Every page pointer, dir by dir and mid by mid.
    fn page_arcs(&self) -> impl Iterator<Item = &Arc<[T; N]>> {
        self.top
            .iter()
            .flat_map(|d| d.mids.iter())
            .flat_map(|m| m.pages.iter())
    }

    /// Number of distinct non-canonical pages (for statistics).
    pub(crate) fn private_pages(&self) -> usize {
        let mut seen = HashSet::new();
        for pg in self.page_arcs() {
            if !Arc::ptr_eq(pg, &self.zero_page) {
                seen.insert(Arc::as_ptr(pg) as usize);
            }
        }
        seen.len()
    }

    /// Bytes of every allocation reachable from this array that is not yet in
    /// `seen` (so memory shared between tables or versions is counted once).
    pub(crate) fn mem(&self, seen: &mut HashSet<usize>) -> usize {
        let mut b = self.top.capacity() * size_of::<Arc<Dir<T, N, M, D>>>();
        let dirs = self.top.iter().chain(std::iter::once(&self.zero_dir));
        for dir in dirs {
            if !seen.insert(Arc::as_ptr(dir) as usize) {
                continue;
            }
            b += ARC_HEADER + size_of::<Dir<T, N, M, D>>();
            for mid in &dir.mids {
                if !seen.insert(Arc::as_ptr(mid) as usize) {
                    continue;
                }
                b += ARC_HEADER + size_of::<Mid<T, N, M>>();
                for pg in &mid.pages {
                    if seen.insert(Arc::as_ptr(pg) as usize) {
                        b += ARC_HEADER + size_of::<[T; N]>();
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
    use super::*;

    type A = PArray<u32, 16, 4, 2>;

    #[test]
    fn make_mut_copies_only_what_is_shared() {
        let mut a = Arc::new(vec![1, 2]);
        let p = Arc::as_ptr(&a);
        let mut seen = 0;
        make_mut_with(&mut a, |_| seen += 1).push(3);
        // Private: written in place, nothing prefetched.
        assert_eq!((Arc::as_ptr(&a), seen), (p, 0));
        let old = a.clone();
        make_mut_with(&mut a, |v: &Vec<i32>| seen += v.len()).push(4);
        // Shared: prefetched once, copied, and the other holder unchanged.
        assert_ne!(Arc::as_ptr(&a), Arc::as_ptr(&old));
        assert_eq!(
            (&a[..], &old[..], seen),
            (&[1, 2, 3, 4][..], &[1, 2, 3][..], 3)
        );
        assert!(a.is_unique() && old.is_unique());
    }

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
        for i in 0..256 {
            a.set(i, 1);
        }
        let mut b = a.clone();
        b.set(70, 2);
        let ptr = |x: &A, d: usize| Arc::as_ptr(&x.top[d]);
        // Page 4 (values 64..80) is in dir 0, mid 1.
        assert_ne!(ptr(&a, 0), ptr(&b, 0));
        assert_eq!(ptr(&a, 1), ptr(&b, 1));
        let (da, db) = (&a.top[0], &b.top[0]);
        assert!(Arc::ptr_eq(&da.mids[0], &db.mids[0]));
        assert!(!Arc::ptr_eq(&da.mids[1], &db.mids[1]));
        for p in 0..16 {
            assert_eq!(
                Arc::ptr_eq(a.page_arc(p), b.page_arc(p)),
                p != 4,
                "page {p}"
            );
        }
        // A page under the copied mid is counted by both mids; one under a
        // shared mid, once.
        assert_eq!(Arc::count(a.page_arc(5)), 2);
        assert_eq!(Arc::count(a.page_arc(3)), 1);
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
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        prop_oneof![
            4 => (0usize..512, 0u32..4).prop_map(|(i, v)| Op::Set(i, v)),
            1 => (0usize..32).prop_map(Op::Clear),
            1 => (0usize..32, 0u32..3).prop_map(|(p, v)| Op::Uniform(p, v)),
            1 => proptest::bool::ANY.prop_map(Op::Resize),
            1 => Just(Op::Snapshot),
        ]
    }

    proptest::proptest! {
        /// Every write through the three levels matches a plain vector;
        /// copies taken along the way keep their values (persistence); an
        /// array whose values all went back to `fill` costs what a new one
        /// of its length does.
        #[test]
        fn paged_array_follows_a_vec_model(ops in proptest::collection::vec(op(), 1..200)) {
            type B = PArray<u32, 16, 2, 4>;
            let mut a = B::new(256, 0);
            let mut model = vec![0u32; a.capacity()];
            let mut snaps: Vec<(B, Vec<u32>)> = Vec::new();
            for op in ops {
                match op {
                    Op::Set(i, v) if i < model.len() => {
                        a.set(i, v);
                        model[i] = v;
                    }
                    Op::Clear(p) if p * 16 < model.len() => {
                        for i in p * 16..p * 16 + 16 {
                            a.set(i, 0);
                        }
                        model[p * 16..p * 16 + 16].fill(0);
                        a.canonicalize(p);
                        proptest::prop_assert!(a.is_canonical(p));
                    }
                    Op::Uniform(p, v) if p * 16 < model.len() => {
                        let page = if v == 0 { a.zero_page().clone() } else { Arc::new([v; 16]) };
                        a.replace_page(p, page);
                        model[p * 16..p * 16 + 16].fill(v);
                    }
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
                    Op::Snapshot => snaps.push((a.clone(), model.clone())),
                    _ => {}
                }
                proptest::prop_assert_eq!(a.capacity(), model.len());
            }
            for (i, v) in model.iter().enumerate() {
                proptest::prop_assert_eq!(a.get(i), v);
            }
            for (s, m) in &snaps {
                for (i, v) in m.iter().enumerate() {
                    proptest::prop_assert_eq!(s.get(i), v);
                }
            }
            // Back to all `fill`: the memory of a new array of this length.
            for p in 0..model.len() / 16 {
                for i in p * 16..p * 16 + 16 {
                    a.set(i, 0);
                }
                a.canonicalize(p);
            }
            drop(snaps);
            let fresh = B::new(a.capacity(), 0);
            proptest::prop_assert_eq!(a.mem(&mut HashSet::new()), fresh.mem(&mut HashSet::new()));
            proptest::prop_assert!((0..a.dirs()).all(|d| a.dir_is_zero(d)));
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
