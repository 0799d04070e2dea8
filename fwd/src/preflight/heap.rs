//! The tables' heap: the routing and rule tables live in the process heap,
//! not in DPDK's hugepages, so a lookup over a full table takes a TLB miss
//! a level on 4 KiB pages. glibc backs its heap with transparent huge pages
//! when started with `GLIBC_TUNABLES=glibc.malloc.hugetlb=1` (glibc 2.35+;
//! `deploy/fwd.service` sets it) and the kernel's THP mode allows it
//! (`madvise` or `always`): full-table FIB lookups ran 12-16% faster so
//! (`bench-results/fib.md`, 2026-12-04). A WARN: fwd runs either way.

use super::{Finding, SysView};

const CHECK: &str = "heap";
const THP: &str = "/sys/kernel/mm/transparent_hugepage/enabled";
const TUNABLE: &str = "glibc.malloc.hugetlb";

/// The kernel's THP mode: the bracketed word of `enabled`
/// (`always [madvise] never`).
fn thp_mode(sys: &SysView) -> Option<String> {
    let s = sys.read_trim(THP)?;
    let (_, rest) = s.split_once('[')?;
    let (mode, _) = rest.split_once(']')?;
    Some(mode.to_string())
}

/// The value `GLIBC_TUNABLES` gives the malloc hugetlb tunable (a list of
/// `name=value` separated by `:`; the last one counts, as in glibc).
fn hugetlb(tunables: Option<&str>) -> Option<&str> {
    tunables?
        .rsplit(':')
        .filter_map(|t| t.split_once('='))
        .find(|(k, _)| *k == TUNABLE)
        .map(|(_, v)| v)
}

pub(super) fn check(sys: &SysView) -> Vec<Finding> {
    let slower = "the routing and rule tables' heap uses 4 KiB pages: \
                  full-table route lookups run ~12-16% slower";
    let start_with = format!(
        "start fwd with GLIBC_TUNABLES={TUNABLE}=1 in its environment \
         (deploy/fwd.service sets it)"
    );
    let mode = thp_mode(sys);
    let finding = match (mode.as_deref(), hugetlb(sys.glibc_tunables.as_deref())) {
        (None, _) => Finding::warn(
            CHECK,
            format!("{slower} (no transparent huge pages: {THP} unreadable)"),
            "a kernel built with CONFIG_TRANSPARENT_HUGEPAGE",
        ),
        (Some("never"), _) => Finding::warn(
            CHECK,
            format!("{slower} (transparent huge pages are off: {THP} is never)"),
            format!(
                "echo madvise > {THP} (at boot: transparent_hugepage=madvise on the \
                 kernel command line)"
            ),
        ),
        (Some("always"), _) => Finding::ok(
            CHECK,
            "transparent huge pages for all memory (always): the tables' heap uses them",
        ),
        (Some(m), Some("1")) => Finding::ok(
            CHECK,
            format!("the tables' heap asks for transparent huge pages ({TUNABLE}=1, THP {m})"),
        ),
        (Some(m), Some(v)) => Finding::warn(
            CHECK,
            format!(
                "{slower} ({TUNABLE}={v}, THP {m}; 2 takes hugetlbfs pages from the pool \
                 DPDK needs)"
            ),
            start_with,
        ),
        (Some(m), None) => Finding::warn(
            CHECK,
            format!("{slower} (THP {m}, and {TUNABLE} not set)"),
            start_with,
        ),
    };
    vec![finding]
}
