//! Copy-on-write helpers for the routing tables' `Arc`s (the RIB, the VRF
//! and family levels, the next-hop tables' roots).
//!
//! The `Arc` is `triomphe`'s: it has no weak count, so `Arc::make_mut`
//! checks uniqueness with a plain load where `std`'s does a locked
//! compare-exchange, a full barrier at every level of every write of a batch
//! (see `bench-results/route.md`). The paged arrays under the FIB and the
//! next-hop tables count their nodes with [`super::larc`] instead.

use std::mem::size_of;
use triomphe::Arc;

/// Size of an `Arc`'s header (`triomphe`'s: one count, no weak count).
pub(crate) const ARC_HEADER: usize = size_of::<usize>();

/// `Arc::make_mut`, inline when `a` is already private (one load: a
/// write to what this batch already copied); the copy itself is out of
/// line. (`triomphe`'s own `make_mut` carries the copy inline and is
/// called, not inlined, on every write.)
#[inline(always)]
pub(crate) fn make_mut<T: Clone>(a: &mut Arc<T>) -> &mut T {
    if !a.is_unique() {
        unshare(a);
    }
    match Arc::get_mut(a) {
        Some(v) => v,
        None => unreachable!("an Arc made unique is unique"),
    }
}

#[cold]
#[inline(never)]
fn unshare<T: Clone>(a: &mut Arc<T>) {
    *a = Arc::new(T::clone(a));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn make_mut_copies_only_what_is_shared() {
        let mut a = Arc::new(vec![1, 2]);
        let p = Arc::as_ptr(&a);
        make_mut(&mut a).push(3);
        // Private: written in place.
        assert_eq!(Arc::as_ptr(&a), p);
        let old = a.clone();
        make_mut(&mut a).push(4);
        // Shared: copied, and the other holder unchanged.
        assert_ne!(Arc::as_ptr(&a), Arc::as_ptr(&old));
        assert_eq!((&a[..], &old[..]), (&[1, 2, 3, 4][..], &[1, 2, 3][..]));
        assert!(a.is_unique() && old.is_unique());
    }
}
