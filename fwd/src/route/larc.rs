//! Counted pointers whose counts change only under a lock: the nodes of the
//! persistent paged arrays ([`super::parray`], under the FIB and the
//! next-hop tables) and of the RIB ([`super::rib`]), copied without a locked
//! instruction per child.
//!
//! A copy-on-write version copies the nodes on its path and counts one more
//! reference to every child of each; dropping the old version uncounts them.
//! With `Arc` each of those is a locked read-modify-write (~10 ns for an
//! increment and its decrement on this project's hosts, against ~2 ns for a
//! plain load and store), and they were about half the time of a one-change
//! version (`bench-results/route.md`). Here a count is a plain load and store,
//! which is only correct if no two threads change counts of the same nodes at
//! once: every count change happens under the [`Lineage`] lock that the
//! original table and all its copies share (a [`Held`] proves it is taken).
//! The lock is taken per copied node, per table clone and per table drop, not
//! per write: a write to a node this version already copied checks its count
//! (one load, [`LArc::is_unique`]) and writes in place, as before.
//!
//! Nothing here is visible to a lookup: readers follow the pointers and never
//! read or change a count.
//!
//! Check a change here, or in how `parray` and `rib` share and release,
//! under Miri as well as with the tests (which count live nodes): `PROPTEST_CASES=3
//! MIRIFLAGS=-Zmiri-disable-isolation cargo +nightly miri test -p fwd --lib --
//! route::larc route::parray route::rib::tests::chunked route::nexthop
//! versions_dropped_on_other_threads` (a few minutes; `deploy/test.sh` does
//! not run it, the crate's Miri build alone costs minutes).

// The one place in `route` where `unsafe` is allowed: a counted pointer with
// externally synchronised counts. Every block says why it holds.
#![allow(unsafe_code)]

use std::marker::PhantomData;
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Size of a node's header (one count).
pub(crate) const HEADER: usize = std::mem::size_of::<AtomicUsize>();

/// The lock shared by a table and every copy of it: the counts of their
/// nodes change only while it is held.
#[derive(Default)]
pub(crate) struct Lineage {
    lock: Mutex<()>,
}

/// Proof that a [`Lineage`]'s lock is held.
pub(crate) struct Held<'a> {
    _guard: MutexGuard<'a, ()>,
}

impl Lineage {
    /// Takes the lock. It is held for one node copy, one table clone or one
    /// table release, never for a batch; a thread that drops a copy (a dump's
    /// snapshot) while the writer copies a node waits for that copy.
    pub(crate) fn hold(&self) -> Held<'_> {
        // A panic while holding (a failed test) leaves counts that are at
        // worst too high (leaks, never a premature free): go on.
        Held {
            _guard: self.lock.lock().unwrap_or_else(PoisonError::into_inner),
        }
    }
}

/// The lock of a lineage, taken the first time it is needed (a walk down a
/// table takes it at the first node it must copy, and keeps it to the end of
/// the walk: below a copied node every node is shared).
pub(crate) struct Lazy<'l> {
    lin: &'l Lineage,
    held: Option<Held<'l>>,
}

impl<'l> Lazy<'l> {
    pub(crate) fn new(lin: &'l Lineage) -> Self {
        Lazy { lin, held: None }
    }

    /// The lock, taken now if it was not yet.
    pub(crate) fn held(&mut self) -> &Held<'l> {
        self.held.get_or_insert_with(|| self.lin.hold())
    }
}

/// `a`, writable: copied first (by `copy`, which shares the children) if
/// another version holds it. A node this batch already copied is written in
/// place, with no lock.
#[inline(always)]
pub(crate) fn cow<'a, U: Kids>(
    a: &'a mut LArc<U>,
    lock: &mut Lazy<'_>,
    copy: impl FnOnce(&LArc<U>, &Held<'_>) -> LArc<U>,
) -> &'a mut U {
    if !a.is_unique() {
        unshare(a, lock.held(), copy);
    }
    match a.get_mut() {
        Some(v) => v,
        None => unreachable!("a new node is unique"),
    }
}

#[cold]
#[inline(never)]
fn unshare<U: Kids>(
    a: &mut LArc<U>,
    h: &Held<'_>,
    copy: impl FnOnce(&LArc<U>, &Held<'_>) -> LArc<U>,
) {
    let new = copy(a, h);
    std::mem::replace(a, new).release(h);
}

/// What a node releases when its last reference goes: its counted children.
pub(crate) trait Kids: Sized {
    /// No counted children: the node is dropped in place, not moved out.
    const LEAF: bool = false;
    fn release_kids(self, h: &Held<'_>);
}

/// A page of values: no counted children (its values drop as usual).
impl<T, const N: usize> Kids for [T; N] {
    const LEAF: bool = true;
    fn release_kids(self, _: &Held<'_>) {}
}

struct Inner<T> {
    count: AtomicUsize,
    data: T,
}

/// A counted pointer to an immutable node, shared between versions of one
/// lineage. Not `Clone` and no `Drop`: [`LArc::share`] and [`LArc::release`]
/// take the [`Held`] lock. One that is dropped instead of released leaks
/// (never frees early).
pub(crate) struct LArc<T> {
    ptr: NonNull<Inner<T>>,
    _owns: PhantomData<Inner<T>>,
}

// SAFETY: an `LArc` gives `&T` to any thread (so `T: Sync`) and the last
// release, on any thread, drops the `T` (so `T: Send`), as for `Arc`. The
// count is changed only under the lineage lock, which orders those changes
// between threads; the lock-free reader of a count, `is_unique`, is an
// acquire load paired with the release stores of `release`.
unsafe impl<T: Send + Sync> Send for LArc<T> {}
// SAFETY: as for `Send`.
unsafe impl<T: Send + Sync> Sync for LArc<T> {}

#[cfg(test)]
thread_local! {
    static LIVE: std::cell::Cell<isize> = const { std::cell::Cell::new(0) };
}

/// Nodes allocated and not yet freed by this thread (tests: leaks and
/// double frees).
#[cfg(test)]
pub(crate) fn live_nodes() -> isize {
    LIVE.with(|l| l.get())
}

impl<T> LArc<T> {
    pub(crate) fn new(data: T) -> Self {
        #[cfg(test)]
        LIVE.with(|l| l.set(l.get() + 1));
        let b = Box::new(Inner {
            count: AtomicUsize::new(1),
            data,
        });
        LArc {
            ptr: NonNull::from(Box::leak(b)),
            _owns: PhantomData,
        }
    }

    #[inline(always)]
    fn inner(&self) -> &Inner<T> {
        // SAFETY: the allocation lives while any `LArc` to it does: it is
        // freed only by the release of the last one.
        unsafe { self.ptr.as_ref() }
    }

    /// One more reference.
    #[inline]
    pub(crate) fn share(&self, _: &Held<'_>) -> Self {
        let c = &self.inner().count;
        // Relaxed: the lineage lock orders every count change.
        c.store(c.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        LArc {
            ptr: self.ptr,
            _owns: PhantomData,
        }
    }

    /// One reference fewer; the last one frees the node after releasing its
    /// children ([`LArc::free`], out of line). The common case, a shared
    /// node, is a load and a store inlined into the caller's loop over its
    /// children. As a call (`release` recursing through `release_kids`,
    /// so never inlined), the ~140 releases of a one-change version's drop
    /// cost 378 more instructions a version, 3.8% of it
    /// (`bench-results/route.md`, 2026-12-06 evening).
    #[inline(always)]
    pub(crate) fn release(self, h: &Held<'_>)
    where
        T: Kids,
    {
        let c = &self.inner().count;
        // Relaxed: the lineage lock orders every count change.
        let n = c.load(Ordering::Relaxed);
        if n > 1 {
            // Release: pairs with `is_unique`'s acquire, so a writer that
            // then sees itself alone sees this thread's reads of the node
            // done.
            c.store(n - 1, Ordering::Release);
            return;
        }
        self.free(h);
    }

    /// [`LArc::release`] of the last reference.
    #[inline(never)]
    fn free(self, h: &Held<'_>)
    where
        T: Kids,
    {
        // SAFETY: this was the last reference (the count cannot grow
        // meanwhile: sharing needs a reference and the lock), and it came
        // from `Box::leak` in `new`.
        let b = unsafe { Box::from_raw(self.ptr.as_ptr()) };
        #[cfg(test)]
        LIVE.with(|l| l.set(l.get() - 1));
        if !T::LEAF {
            let Inner { data, .. } = *b;
            data.release_kids(h);
        }
    }

    /// Whether this is the only reference. No lock needed: if it is, no
    /// other thread can reach the node to change the count.
    #[inline(always)]
    pub(crate) fn is_unique(&self) -> bool {
        self.inner().count.load(Ordering::Acquire) == 1
    }

    /// The node, writable, if this is the only reference.
    #[inline(always)]
    pub(crate) fn get_mut(&mut self) -> Option<&mut T> {
        if self.is_unique() {
            // SAFETY: the only reference is this one, borrowed mutably, and
            // no reader follows it: readers see published versions, and a
            // published version's reference would be counted.
            Some(unsafe { &mut self.ptr.as_mut().data })
        } else {
            None
        }
    }

    pub(crate) fn ptr_eq(a: &Self, b: &Self) -> bool {
        a.ptr == b.ptr
    }

    pub(crate) fn as_ptr(&self) -> *const T {
        &self.inner().data
    }

    /// The count (tests).
    #[cfg(test)]
    pub(crate) fn count(&self) -> usize {
        self.inner().count.load(Ordering::Acquire)
    }
}

impl<T> Deref for LArc<T> {
    type Target = T;

    #[inline(always)]
    fn deref(&self) -> &T {
        &self.inner().data
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Node {
        kids: Vec<LArc<[u32; 4]>>,
    }

    impl Kids for Node {
        fn release_kids(self, h: &Held<'_>) {
            for k in self.kids {
                k.release(h);
            }
        }
    }

    #[test]
    fn counts_follow_share_and_release() {
        let lin = Lineage::default();
        let h = lin.hold();
        let leaf = LArc::new([1u32; 4]);
        let n = LArc::new(Node {
            kids: vec![leaf.share(&h), leaf.share(&h)],
        });
        assert_eq!(leaf.count(), 3);
        let n2 = n.share(&h);
        assert!(!n.is_unique());
        n2.release(&h);
        assert!(n.is_unique());
        n.release(&h);
        assert_eq!(leaf.count(), 1);
        let mut leaf = leaf;
        leaf.get_mut().unwrap()[0] = 7;
        assert_eq!(leaf[0], 7);
        leaf.release(&h);
    }
}
