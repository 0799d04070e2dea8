//! CPU-specific hints for the lookups: software prefetch.
//!
//! The one place outside `dpdk`, `qsbr` and the socket / tap wrappers where
//! `unsafe` is allowed, fenced like them: every function here is safe to
//! call, and on a target without the instruction it does nothing, so the
//! code that uses it stays the portable reference.

#![allow(unsafe_code)]

/// Starts loading the cache line that holds `*r` into every cache level and
/// returns at once (PREFETCHT0). For a burst of independent lookups:
/// prefetch every lane's next entry, then load them, so that all the lanes'
/// cache misses are in flight together instead of as many as the core's
/// reorder window happens to hold.
#[inline(always)]
pub fn prefetch<T>(r: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 belongs to SSE, which every x86_64 CPU has. It is a
    // hint: it never faults, whatever the address, and changes no
    // architectural state. `r` is a live reference anyway.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
            (r as *const T).cast::<i8>(),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
}
