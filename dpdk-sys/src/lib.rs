//! Raw FFI bindings to the system DPDK (>= 22.11), generated at build time.
//!
//! Only what the appliance uses is bound (see the allowlist in `build.rs`).
//! `static inline` fast-path functions (`rte_eth_rx_burst`, `rte_pktmbuf_free`,
//! ...) are reached through generated out-of-line wrappers with the same
//! names; thread-local and macro-only values through the `fwd_*` shim.
//! All use is `unsafe`; the safe layer lives in `fwd::dpdk`.

// An FFI crate: declaring and calling C is its purpose.
#![allow(unsafe_code)]
#![allow(
    non_upper_case_globals,
    non_camel_case_types,
    non_snake_case,
    dead_code
)]
#![allow(clippy::all, clippy::undocumented_unsafe_blocks)]

include!(concat!(env!("OUT_DIR"), "/bindings.rs"));

/// The DPDK version the bindings were generated against (pkg-config).
pub const BUILD_VERSION: &str = env!("DPDK_SYS_VERSION");
