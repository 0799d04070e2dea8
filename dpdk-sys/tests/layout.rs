//! The bindings link against the installed DPDK and agree with its ABI on
//! the structures the data path touches directly (bindgen's own layout
//! assertions are compile-time; these check what the fast path relies on).
// Calls into the C library under test.
#![allow(unsafe_code)]

use std::mem::{align_of, offset_of, size_of};

#[test]
fn mbuf_layout_matches_dpdk() {
    // Two cache lines, as DPDK 22.11 asserts in rte_mbuf_core.h.
    assert_eq!(size_of::<dpdk_sys::rte_mbuf>(), 128);
    assert_eq!(align_of::<dpdk_sys::rte_mbuf>(), 64);
    // mtod = buf_addr + data_off: both in the first cache line.
    assert_eq!(offset_of!(dpdk_sys::rte_mbuf, buf_addr), 0);
    assert!(offset_of!(dpdk_sys::rte_mbuf, data_off) < 64);
    assert!(offset_of!(dpdk_sys::rte_mbuf, pkt_len) < 64);
    assert!(offset_of!(dpdk_sys::rte_mbuf, data_len) < 64);
}

#[test]
fn runtime_library_is_the_one_the_bindings_were_built_for() {
    // SAFETY: rte_version returns a static string and needs no EAL.
    let v = unsafe { std::ffi::CStr::from_ptr(dpdk_sys::rte_version()) }
        .to_string_lossy()
        .into_owned();
    assert!(
        v.contains(dpdk_sys::BUILD_VERSION.split('.').next().unwrap()),
        "{v} vs {}",
        dpdk_sys::BUILD_VERSION
    );
}
