//! Safe wrappers over the system DPDK: the EAL, mempools, mbufs, ports and
//! lcores. This module (with `qsbr`) is the only place in `fwd` allowed to use
//! `unsafe`; every block states why it holds.
//!
//! Contract: nothing here is called per packet except [`mbuf`] accessors and
//! the RX/TX burst calls of [`port`], which are thin and inline. Errors are
//! typed per operation and carry the errno DPDK reported.
#![allow(unsafe_code)]

pub mod eal;
pub mod lcore;
pub mod mbuf;
pub mod mempool;
pub mod port;

use std::ffi::CStr;

/// Human-readable text for a DPDK error number (positive errno or `RTE_*`).
pub fn strerror(errnum: i32) -> String {
    // SAFETY: rte_strerror returns a pointer to a static or thread-local
    // NUL-terminated string for any value; we copy it out at once.
    unsafe {
        let p = dpdk_sys::rte_strerror(errnum.abs());
        if p.is_null() {
            return format!("error {errnum}");
        }
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

/// The calling thread's `rte_errno`.
pub fn errno() -> i32 {
    // SAFETY: reads a thread-local integer through the shim; no preconditions.
    unsafe { dpdk_sys::fwd_rte_errno() }
}

/// The DPDK runtime version string (e.g. "DPDK 22.11.4").
pub fn version() -> String {
    // SAFETY: rte_version returns a pointer to a static string; no EAL needed.
    unsafe {
        CStr::from_ptr(dpdk_sys::rte_version())
            .to_string_lossy()
            .into_owned()
    }
}

/// TSC cycles (the time base of the poll loop: drain timer, ticks).
///
/// On x86-64 the instruction itself, inlined: `rte_rdtsc` is a `static
/// inline` function that bindgen can only reach through its C wrapper, a
/// call per read, twice per poll (~1% of a worker's cycles in the
/// forwarding profile). It is the same unfenced `rdtsc` DPDK's x86 header
/// issues.
#[inline(always)]
pub fn rdtsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: reads the CPU's time-stamp counter; no memory is touched.
    #[allow(unused_unsafe)]
    unsafe {
        core::arch::x86_64::_rdtsc()
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: as above, through DPDK's wrapper.
    unsafe {
        dpdk_sys::rte_rdtsc()
    }
}

/// TSC frequency in Hz as measured by the EAL (valid after EAL init).
pub fn tsc_hz() -> u64 {
    // SAFETY: reads a value the EAL computed at init; no preconditions.
    unsafe { dpdk_sys::rte_get_tsc_hz() }
}
