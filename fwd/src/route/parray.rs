//! A persistent paged array: the storage under the FIB tables and the next-hop table.
//!
//! `top -> mid (M page pointers) -> page (N values)`, every level behind an `Arc`.
//! The `Arc` is `triomphe`'s, as everywhere in the routing tables: it has no
//! weak count, so `Arc::make_mut` checks uniqueness with a plain load where
//! `std`'s does a locked compare-exchange, a full barrier at every level of
//! every write of a batch (see `bench-results/route.md`).
//! A write goes through [`make_mut`] on the mid and the page, so it copies the
//! 1 KiB mid and the page the first time a version touches them and writes in place
//! afterwards (within one batch the working copy is the only owner). Untouched pages
//! stay shared with every older version. A read is three dependent loads (`top` and
//! the mids are small and cache-hot; the page is the one cache miss).
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

/// See the module doc. `N` (values per page) and `M` (pages per mid) are powers of two.
pub(crate) struct PArray<T, const N: usize, const M: usize> {
    top: Vec<Arc<Mid<T, N, M>>>,
    zero_mid: Arc<Mid<T, N, M>>,
    zero_page: Arc<[T; N]>,
    fill: T,
}

impl<T: Clone, const N: usize, const M: usize> Clone for PArray<T, N, M> {
    fn clone(&self) -> Self {
        touch(&self.top);
        PArray {
            top: self.top.clone(),
            zero_mid: self.zero_mid.clone(),
            zero_page: self.zero_page.clone(),
            fill: self.fill.clone(),
        }
    }
}

impl<T, const N: usize, const M: usize> Drop for PArray<T, N, M> {
    fn drop(&mut self) {
        touch(&self.top);
    }
}

impl<T: Clone + PartialEq, const N: usize, const M: usize> PArray<T, N, M> {
    const PB: u32 = N.trailing_zeros();
    const MB: u32 = M.trailing_zeros();
    /// Values per mid.
    pub(crate) const PER_MID: usize = N * M;
    const POW2: () = assert!(N.is_power_of_two() && M.is_power_of_two());

    /// An array of at least `len` values, all `fill` (rounded up to whole mids).
    pub(crate) fn new(len: usize, fill: T) -> Self {
        let () = Self::POW2;
        let zero_page: Arc<[T; N]> = Arc::new(std::array::from_fn(|_| fill.clone()));
        let zero_mid = Arc::new(Mid {
            pages: std::array::from_fn(|_| zero_page.clone()),
        });
        let mids = len.div_ceil(Self::PER_MID);
        PArray {
            top: vec![zero_mid.clone(); mids],
            zero_mid,
            zero_page,
            fill,
        }
    }

    /// Number of addressable values (a multiple of `N * M`).
    #[inline]
    pub(crate) fn capacity(&self) -> usize {
        self.top.len() * Self::PER_MID
    }

    /// Value `i`. Panics if `i >= capacity()`.
    #[inline(always)]
    pub(crate) fn get(&self, i: usize) -> &T {
        let mid = &self.top[i >> (Self::PB + Self::MB)];
        &mid.pages[(i >> Self::PB) & (M - 1)][i & (N - 1)]
    }

    /// Value `i`, or `None` beyond the capacity.
    #[inline(always)]
    pub(crate) fn try_get(&self, i: usize) -> Option<&T> {
        let mid = self.top.get(i >> (Self::PB + Self::MB))?;
        Some(&mid.pages[(i >> Self::PB) & (M - 1)][i & (N - 1)])
    }

    /// Page `p` (values `p*N .. p*N+N`).
    #[inline]
    pub(crate) fn page(&self, p: usize) -> &[T; N] {
        &self.top[p >> Self::MB].pages[p & (M - 1)]
    }

    /// Page `p`, unshared (copied if any other version still holds it).
    #[inline(always)]
    pub(crate) fn page_mut(&mut self, p: usize) -> &mut [T; N] {
        let mid = make_mut_with(&mut self.top[p >> Self::MB], |m| touch(&m.pages));
        make_mut(&mut mid.pages[p & (M - 1)])
    }

    /// Element `i`, writable (its page and mid made private).
    #[inline(always)]
    pub(crate) fn get_mut(&mut self, i: usize) -> &mut T {
        &mut self.page_mut(i >> Self::PB)[i & (N - 1)]
    }

    /// The `Arc` of page `p` (for identity checks).
    #[inline]
    pub(crate) fn page_arc(&self, p: usize) -> &Arc<[T; N]> {
        &self.top[p >> Self::MB].pages[p & (M - 1)]
    }

    /// Points page `p` at `page` (a shared page, e.g. a uniform one), and turns the
    /// mid back into the canonical one if that made it all canonical.
    pub(crate) fn replace_page(&mut self, p: usize, page: Arc<[T; N]>) {
        let (m, slot) = (p >> Self::MB, p & (M - 1));
        let mid = make_mut(&mut self.top[m]);
        mid.pages[slot] = page;
        if mid.pages.iter().all(|pg| Arc::ptr_eq(pg, &self.zero_page)) {
            self.top[m] = self.zero_mid.clone();
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
            self.top.push(self.zero_mid.clone());
        }
    }

    /// Number of mids.
    pub(crate) fn mids(&self) -> usize {
        self.top.len()
    }

    /// Whether mid `m` is the shared all-`fill` mid.
    pub(crate) fn mid_is_zero(&self, m: usize) -> bool {
        Arc::ptr_eq(&self.top[m], &self.zero_mid)
    }

    /// Drops the last mid (the caller checked it holds only `fill`).
    pub(crate) fn pop_mid(&mut self) {
        self.top.pop();
        if self.top.is_empty() {
            self.top = Vec::new();
        }
    }

    /// If page `p` holds only `fill`, replace it by the shared canonical page (and
    /// its mid by the shared canonical mid when that mid became all canonical).
    pub(crate) fn canonicalize(&mut self, p: usize)
    where
        T: Copy,
    {
        let page = &self.top[p >> Self::MB].pages[p & (M - 1)];
        if !Arc::ptr_eq(page, &self.zero_page) && all_eq(&page[..], self.fill) {
            self.make_canonical(p);
        }
    }

    /// [`PArray::canonicalize`] for values that are not `Copy`.
    pub(crate) fn canonicalize_opt(&mut self, p: usize) {
        let page = &self.top[p >> Self::MB].pages[p & (M - 1)];
        if !Arc::ptr_eq(page, &self.zero_page) && page.iter().all(|x| *x == self.fill) {
            self.make_canonical(p);
        }
    }

    fn make_canonical(&mut self, p: usize) {
        let (m, slot) = (p >> Self::MB, p & (M - 1));
        let mid = make_mut(&mut self.top[m]);
        mid.pages[slot] = self.zero_page.clone();
        if mid.pages.iter().all(|pg| Arc::ptr_eq(pg, &self.zero_page)) {
            self.top[m] = self.zero_mid.clone();
        }
    }

    /// Number of distinct non-canonical pages (for statistics).
    pub(crate) fn private_pages(&self) -> usize {
        let mut seen = HashSet::new();
        for mid in &self.top {
            for pg in &mid.pages {
                if !Arc::ptr_eq(pg, &self.zero_page) {
                    seen.insert(Arc::as_ptr(pg) as usize);
                }
            }
        }
        seen.len()
    }

    /// Bytes of every allocation reachable from this array that is not yet in
    /// `seen` (so memory shared between tables or versions is counted once).
    pub(crate) fn mem(&self, seen: &mut HashSet<usize>) -> usize {
        let mut b = self.top.capacity() * size_of::<Arc<Mid<T, N, M>>>();
        let mids = self.top.iter().chain(std::iter::once(&self.zero_mid));
        for mid in mids {
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

    type A = PArray<u32, 16, 4>;

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
        assert!((0..a.mids()).all(|m| a.mid_is_zero(m)));
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
