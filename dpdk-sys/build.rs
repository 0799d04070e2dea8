//! Generates the DPDK bindings against the headers pkg-config reports.
//!
//! The allowlist is explicit: `rte_.*` drags in types bindgen lays out wrongly
//! (packed/aligned unions in the crypto and flow headers). Fast-path
//! functions are `static inline` in C; bindgen's `wrap_static_fns` emits a C
//! file of out-of-line wrappers, compiled here with the same cflags.

use std::env;
use std::path::PathBuf;

const FUNCTIONS: &[&str] = &[
    // EAL, lcores, time
    "rte_eal_init",
    "rte_eal_cleanup",
    "rte_eal_remote_launch",
    "rte_eal_wait_lcore",
    "rte_eal_mp_wait_lcore",
    "rte_eal_process_type",
    "rte_lcore_count",
    "rte_lcore_is_enabled",
    "rte_get_main_lcore",
    "rte_get_next_lcore",
    "rte_lcore_to_socket_id",
    "rte_socket_id",
    "rte_strerror",
    "rte_version",
    "rte_get_tsc_hz",
    "rte_rdtsc",
    "rte_vect_get_max_simd_bitwidth",
    "rte_delay_us_block",
    "rte_pause",
    // mempools and mbufs
    "rte_pktmbuf_pool_create",
    "rte_mempool_free",
    "rte_mempool_avail_count",
    "rte_mempool_in_use_count",
    "rte_mempool_lookup",
    "rte_pktmbuf_alloc",
    "rte_pktmbuf_free",
    "rte_pktmbuf_free_bulk",
    "rte_pktmbuf_copy",
    "rte_pktmbuf_append",
    "rte_pktmbuf_prepend",
    "rte_pktmbuf_adj",
    "rte_pktmbuf_trim",
    "rte_mbuf_refcnt_read",
    // ethdev
    "rte_eth_dev_count_avail",
    "rte_eth_dev_get_port_by_name",
    "rte_eth_dev_get_name_by_port",
    "rte_eth_dev_is_valid_port",
    "rte_eth_dev_socket_id",
    "rte_eth_dev_info_get",
    "rte_eth_dev_configure",
    "rte_eth_dev_adjust_nb_rx_tx_desc",
    "rte_eth_rx_queue_setup",
    "rte_eth_tx_queue_setup",
    "rte_eth_dev_start",
    "rte_eth_dev_stop",
    "rte_eth_dev_close",
    "rte_eth_dev_set_mtu",
    "rte_eth_dev_get_mtu",
    "rte_eth_macaddr_get",
    "rte_eth_promiscuous_enable",
    "rte_eth_promiscuous_get",
    "rte_eth_link_get_nowait",
    "rte_eth_stats_get",
    "rte_eth_stats_reset",
    "rte_eth_xstats_get",
    "rte_eth_xstats_get_names",
    "rte_eth_rx_burst",
    "rte_eth_tx_burst",
    "rte_eth_find_next_owned_by",
    "rte_dev_probe",
];

const TYPES: &[&str] = &[
    "rte_mbuf",
    "rte_mempool",
    "rte_eth_conf",
    "rte_eth_dev_info",
    "rte_eth_rxconf",
    "rte_eth_txconf",
    "rte_eth_link",
    "rte_eth_stats",
    "rte_eth_xstat",
    "rte_eth_xstat_name",
    "rte_ether_addr",
    "rte_ether_hdr",
    "rte_vlan_hdr",
    "rte_ipv4_hdr",
    "rte_ipv6_hdr",
    "rte_lcore_state_t",
    "rte_proc_type_t",
];

const VARS: &[&str] = &[
    "RTE_ETH_.*",
    "RTE_MAX_ETHPORTS",
    "RTE_MAX_LCORE",
    "RTE_MBUF_DEFAULT_BUF_SIZE",
    "RTE_PKTMBUF_HEADROOM",
    "RTE_MBUF_F_.*",
    "RTE_ETHER_.*",
    "SOCKET_ID_ANY",
    "RTE_ETHDEV_QUEUE_STAT_CNTRS",
];

fn main() {
    let dpdk = appliance::probe::dpdk().unwrap_or_else(|e| panic!("dpdk-sys: {e}"));
    let libclang = appliance::probe::libclang();
    if let Err(e) = libclang {
        panic!("dpdk-sys: {e}");
    }
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    for f in ["wrapper.h", "shim.h", "shim.c"] {
        println!("cargo:rerun-if-changed={f}");
    }
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");

    let extern_c = out.join("extern");
    let mut builder = bindgen::Builder::default()
        .header(manifest.join("wrapper.h").to_string_lossy())
        .header(manifest.join("shim.h").to_string_lossy())
        .clang_args(&dpdk.cflags)
        .clang_macro_fallback()
        .wrap_static_fns(true)
        .wrap_static_fns_path(&extern_c)
        .blocklist_function("rte_mov.*|rte_memcpy.*")
        .blocklist_type("rte_mov.*")
        .derive_default(true)
        .derive_debug(false)
        .layout_tests(true)
        .generate_comments(false)
        .prepend_enum_name(false)
        .default_enum_style(bindgen::EnumVariation::Consts)
        .allowlist_function("fwd_.*");
    for f in FUNCTIONS {
        builder = builder.allowlist_function(f);
    }
    for t in TYPES {
        builder = builder.allowlist_type(t);
    }
    for v in VARS {
        builder = builder.allowlist_var(v);
    }
    let bindings = builder.generate().unwrap_or_else(|e| {
        panic!(
            "dpdk-sys: bindgen failed on the DPDK {} headers: {e}",
            dpdk.version
        )
    });
    bindings
        .write_to_file(out.join("bindings.rs"))
        .expect("write bindings.rs");

    // The wrappers for static inline functions include the headers through
    // wrapper.h; compile them and the shim with DPDK's own flags.
    let mut cc = cc::Build::new();
    cc.file(extern_c.with_extension("c"))
        .file(manifest.join("shim.c"))
        .include(&manifest)
        .opt_level(3)
        .warnings(false)
        .flag("-include")
        .flag(manifest.join("wrapper.h").to_string_lossy().as_ref());
    for f in &dpdk.cflags {
        if f.starts_with("-I") || f.starts_with("-march") {
            cc.flag(f);
        }
    }
    cc.flag("-include").flag("rte_config.h");
    // The per-lcore variables (lcore id, mempool caches) live in librte_eal,
    // loaded at start: the initial-exec model reads them without a
    // __tls_get_addr call per mbuf free.
    cc.flag("-ftls-model=initial-exec");
    cc.compile("dpdk_sys_glue");

    for w in &dpdk.libs {
        if let Some(dir) = w.strip_prefix("-L") {
            println!("cargo:rustc-link-search=native={dir}");
        } else if let Some(lib) = w.strip_prefix("-l") {
            println!("cargo:rustc-link-lib=dylib={lib}");
        }
    }
    println!("cargo:rustc-env=DPDK_SYS_VERSION={}", dpdk.version);
}
