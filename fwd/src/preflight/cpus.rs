//! Worker CPUs: isolated from the scheduler (a shared CPU means latency
//! spikes and drops) and on the NUMA node of the NICs they poll (else every
//! packet crosses the interconnect). Both are warnings: fwd runs either way.

use super::pci::full_address;
use super::{Finding, SysView};
use crate::config::{Attach, Config};
use crate::cpus::{format_cpulist, parse_cpulist};

const ISOLATION: &str = "cpus";
const NUMA: &str = "numa";

/// CPUs taken from the scheduler: `/sys/devices/system/cpu/isolated`, and
/// `isolcpus=`/`nohz_full=` on the kernel command line (flags such as
/// `domain,managed_irq` skipped).
fn isolated(sys: &SysView) -> Vec<usize> {
    let mut v = sys
        .read("/sys/devices/system/cpu/isolated")
        .ok()
        .and_then(|s| parse_cpulist(&s))
        .unwrap_or_default();
    if let Ok(cmdline) = sys.read("/proc/cmdline") {
        for arg in cmdline.split_whitespace() {
            let Some(list) = arg
                .strip_prefix("isolcpus=")
                .or_else(|| arg.strip_prefix("nohz_full="))
            else {
                continue;
            };
            let cpus: String = list
                .split(',')
                .filter(|t| t.starts_with(|c: char| c.is_ascii_digit()))
                .collect::<Vec<_>>()
                .join(",");
            v.extend(parse_cpulist(&cpus).unwrap_or_default());
        }
    }
    v.sort_unstable();
    v.dedup();
    v
}

fn worker_cpu(w: &crate::config::WorkerConfig) -> usize {
    w.cpu.unwrap_or(w.lcore as usize)
}

pub(super) fn check(cfg: &Config, sys: &SysView) -> Vec<Finding> {
    let mut v = Vec::new();
    let iso = isolated(sys);
    let cpus: Vec<usize> = cfg.workers.iter().map(worker_cpu).collect();
    let shared: Vec<usize> = cpus.iter().copied().filter(|c| !iso.contains(c)).collect();
    if shared.is_empty() {
        v.push(Finding::ok(
            ISOLATION,
            format!("worker CPU(s) {} are isolated", format_cpulist(&cpus)),
        ));
    } else {
        let l = format_cpulist(&shared);
        v.push(Finding::warn(
            ISOLATION,
            format!(
                "worker CPU(s) {l} are not isolated: the kernel also schedules other tasks \
                 there (latency spikes, drops under load)"
            ),
            format!(
                "add `isolcpus={l} nohz_full={l} rcu_nocbs={l}` to GRUB_CMDLINE_LINUX in \
                 /etc/default/grub, then update-grub and reboot"
            ),
        ));
    }
    v.extend(sharing(cfg));
    for p in &cfg.ports {
        if p.attach() != Attach::Pci {
            continue;
        }
        let addr = full_address(p.dev_name());
        let Some(node) = sys
            .read_trim(format!("/sys/bus/pci/devices/{addr}/numa_node"))
            .and_then(|s| s.parse::<i64>().ok())
        else {
            continue; // no such device: the driver check says so
        };
        if node < 0 {
            v.push(Finding::ok(
                NUMA,
                format!(
                    "port {}: {addr} reports no NUMA node (one-node machine)",
                    p.name
                ),
            ));
            continue;
        }
        let Some(local) = sys
            .read(format!("/sys/devices/system/node/node{node}/cpulist"))
            .ok()
            .and_then(|s| parse_cpulist(&s))
        else {
            continue;
        };
        let remote: Vec<String> = cfg
            .workers
            .iter()
            .enumerate()
            .filter(|(_, w)| w.rx.iter().any(|q| q.port == p.name))
            .filter(|(_, w)| !local.contains(&worker_cpu(w)))
            .map(|(i, w)| format!("workers[{i}] (CPU {})", worker_cpu(w)))
            .collect();
        if remote.is_empty() {
            v.push(Finding::ok(
                NUMA,
                format!("port {}: its pollers run on its NUMA node {node}", p.name),
            ));
        } else {
            v.push(Finding::warn(
                NUMA,
                format!(
                    "port {}: {addr} is on NUMA node {node} (CPUs {}), polled from another \
                     node by {}: every packet crosses the interconnect",
                    p.name,
                    format_cpulist(&local),
                    remote.join(", ")
                ),
                format!(
                    "set those workers' cpu: to CPUs of node {node} ({})",
                    format_cpulist(&local)
                ),
            ));
        }
    }
    v
}

/// A worker's CPU shared with another worker, the EAL main lcore or the
/// control lcore: a busy poller there takes the CPU from the other.
fn sharing(cfg: &Config) -> Vec<Finding> {
    let mut users: Vec<(usize, String)> = vec![(
        cfg.eal.main_cpu.unwrap_or(cfg.eal.main_lcore as usize),
        "eal.main_lcore".to_string(),
    )];
    if let Some(c) = cfg.control.cpu {
        users.push((c, "control.cpu".to_string()));
    }
    for (i, w) in cfg.workers.iter().enumerate() {
        users.push((worker_cpu(w), format!("workers[{i}]")));
    }
    let mut v = Vec::new();
    for (i, w) in cfg.workers.iter().enumerate() {
        let cpu = worker_cpu(w);
        let me = format!("workers[{i}]");
        let others: Vec<&str> = users
            .iter()
            .filter(|(c, who)| *c == cpu && *who != me)
            .map(|(_, who)| who.as_str())
            .collect();
        // Each pair once: reported by its first worker.
        if others.iter().any(|o| {
            o.strip_prefix("workers[")
                .and_then(|r| r.strip_suffix(']'))
                .and_then(|n| n.parse::<usize>().ok())
                .is_some_and(|n| n < i)
        }) {
            continue;
        }
        if !others.is_empty() {
            v.push(Finding::warn(
                ISOLATION,
                format!(
                    "{me} shares CPU {cpu} with {}: a polling worker takes the CPU from \
                     the other (fine for tests, not for forwarding)",
                    others.join(", ")
                ),
                format!("give {me} a CPU of its own (workers[{i}].cpu)"),
            ));
        }
    }
    v
}
