//! Hugepages: reserved, free and mounted, when the config uses them
//! (`eal.hugepages: true` runs the EAL `--in-memory -m memory_mb`; false
//! runs it `--no-huge` and needs none).

use super::{Finding, SysView};
use crate::config::Config;

const CHECK: &str = "hugepages";
const MIB: u64 = 1 << 20;

/// One hugepage size's pool.
#[derive(Debug, PartialEq, Eq)]
struct Pool {
    size_kb: u64,
    total: u64,
    free: u64,
}

/// Every size under `/sys/kernel/mm/hugepages`, else the default size from
/// `/proc/meminfo`.
fn pools(sys: &SysView) -> Vec<Pool> {
    let mut v = Vec::new();
    for d in sys.list("/sys/kernel/mm/hugepages") {
        let Some(kb) = d
            .strip_prefix("hugepages-")
            .and_then(|s| s.strip_suffix("kB"))
            .and_then(|s| s.parse().ok())
        else {
            continue;
        };
        let num = |f: &str| {
            sys.read_trim(format!("/sys/kernel/mm/hugepages/{d}/{f}"))
                .and_then(|s| s.parse().ok())
                .unwrap_or(0)
        };
        v.push(Pool {
            size_kb: kb,
            total: num("nr_hugepages"),
            free: num("free_hugepages"),
        });
    }
    if v.is_empty() {
        if let Ok(m) = sys.read("/proc/meminfo") {
            let field = |name: &str| {
                m.lines()
                    .find_map(|l| l.strip_prefix(name))
                    .and_then(|r| r.trim_start_matches(':').split_whitespace().next())
                    .and_then(|n| n.parse::<u64>().ok())
            };
            if let (Some(total), Some(free), Some(kb)) = (
                field("HugePages_Total"),
                field("HugePages_Free"),
                field("Hugepagesize"),
            ) {
                v.push(Pool {
                    size_kb: kb,
                    total,
                    free,
                });
            }
        }
    }
    v
}

pub(super) fn check(cfg: &Config, sys: &SysView) -> Vec<Finding> {
    let need_mb = u64::from(cfg.eal.memory_mb);
    if !cfg.eal.hugepages {
        return vec![Finding::ok(
            CHECK,
            format!(
                "not used: eal.hugepages is false (the EAL runs --no-huge with {need_mb} MiB; \
                 fine for tests, about half the throughput of hugepages)"
            ),
        )];
    }
    let pools = pools(sys);
    let need = need_mb * MIB;
    // 2 MiB pages, with an eighth more than asked: the EAL's own
    // structures and the mempool's rounding need some.
    let pages_2m = (need_mb / 2) + (need_mb / 16).max(8);
    let reserve = format!(
        "echo {pages_2m} > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages\n\
         at every boot: deploy/setup.sh --hugepages {pages_2m}, or \
         `echo vm.nr_hugepages={pages_2m} > /etc/sysctl.d/80-fwd-hugepages.conf`"
    );
    let mut v = Vec::new();
    let total: u64 = pools.iter().map(|p| p.total * p.size_kb * 1024).sum();
    let free: u64 = pools.iter().map(|p| p.free * p.size_kb * 1024).sum();
    let desc = pools
        .iter()
        .filter(|p| p.total > 0)
        .map(|p| format!("{} x {} kB ({} free)", p.total, p.size_kb, p.free))
        .collect::<Vec<_>>()
        .join(", ");
    if total == 0 {
        v.push(Finding::fail(
            CHECK,
            format!("no hugepages reserved; eal.hugepages is true and eal.memory_mb needs {need_mb} MiB"),
            reserve,
        ));
    } else if free < need {
        v.push(Finding::fail(
            CHECK,
            format!(
                "{} MiB of hugepages free ({desc}); eal.memory_mb needs {need_mb} MiB \
                 (another DPDK process may hold them)",
                free / MIB
            ),
            format!("{reserve}\nor lower eal.memory_mb"),
        ));
    } else {
        v.push(Finding::ok(
            CHECK,
            format!(
                "{} MiB free of {} MiB reserved ({desc}); eal.memory_mb needs {need_mb} MiB",
                free / MIB,
                total / MIB
            ),
        ));
    }
    let mounted = sys
        .read("/proc/mounts")
        .map(|m| {
            m.lines()
                .any(|l| l.split_whitespace().nth(2) == Some("hugetlbfs"))
        })
        .unwrap_or(false);
    if mounted {
        v.push(Finding::ok(CHECK, "a hugetlbfs is mounted"));
    } else {
        v.push(Finding::warn(
            CHECK,
            "no hugetlbfs mounted: fwd runs --in-memory and maps hugepages without one, \
             but dpdk-testpmd, dpdk-proc-info and the like need it",
            "mount -t hugetlbfs nodev /dev/hugepages (systemd mounts it by default: \
             systemctl start dev-hugepages.mount)",
        ));
    }
    v
}
