//! `fwd preflight CONFIG`: what usually breaks a first bare-metal start,
//! checked before DPDK is touched, each problem printed with its fix.
//!
//! - the config itself (as `fwd --check`);
//! - hugepages: reserved, free and mounted, when the config uses them;
//! - PCI ports: the device exists and is bound to the driver DPDK needs
//!   (`vfio-pci`; `mlx5_core` for NVIDIA/Mellanox), with that driver's
//!   prerequisites (IOMMU and the `vfio-pci` module; `rdma-core`);
//! - worker CPUs: isolated from the scheduler, on their NIC's NUMA node;
//! - no other process on the same EAL file prefix or control socket;
//! - the tables' heap on transparent huge pages.
//!
//! Every check reads the machine through a [`SysView`], so tests run them
//! against fixture trees. A FAIL makes the exit status non-zero; a WARN
//! (e.g. CPUs not isolated) does not.

mod cpus;
mod heap;
mod hugepages;
mod pci;
mod prefix;
mod sys;
#[cfg(test)]
mod tests;

use std::path::Path;

use serde::Serialize;

use crate::config::Config;

pub use sys::SysView;

/// How a check came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Status {
    Ok,
    Warn,
    Fail,
}

impl Status {
    fn label(self) -> &'static str {
        match self {
            Status::Ok => "OK",
            Status::Warn => "WARN",
            Status::Fail => "FAIL",
        }
    }
}

/// One result line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The check's name (`config`, `hugepages`, `pci`, `driver`, ...).
    pub check: &'static str,
    pub status: Status,
    pub message: String,
    /// What to run or change, for a WARN or a FAIL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Finding {
    pub fn ok(check: &'static str, message: impl Into<String>) -> Finding {
        Finding {
            check,
            status: Status::Ok,
            message: message.into(),
            fix: None,
        }
    }

    pub fn warn(
        check: &'static str,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) -> Finding {
        Finding {
            check,
            status: Status::Warn,
            message: message.into(),
            fix: Some(fix.into()),
        }
    }

    pub fn fail(
        check: &'static str,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) -> Finding {
        Finding {
            check,
            status: Status::Fail,
            message: message.into(),
            fix: Some(fix.into()),
        }
    }
}

/// Everything found for one config.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub config: String,
    pub findings: Vec<Finding>,
    pub failures: usize,
    pub warnings: usize,
}

impl Report {
    fn new(config: &Path, findings: Vec<Finding>) -> Report {
        let count = |s| findings.iter().filter(|f| f.status == s).count();
        Report {
            config: config.display().to_string(),
            failures: count(Status::Fail),
            warnings: count(Status::Warn),
            findings,
        }
    }

    /// The exit status: 1 when anything failed.
    pub fn exit_code(&self) -> i32 {
        i32::from(self.failures > 0)
    }

    /// The human-readable form.
    pub fn text(&self) -> String {
        let mut out = format!("fwd preflight {}\n", self.config);
        for f in &self.findings {
            out.push_str(&format!(
                "{:<5} {:<10} {}\n",
                f.status.label(),
                f.check,
                f.message
            ));
            if let Some(fix) = &f.fix {
                for (i, line) in fix.lines().enumerate() {
                    let head = if i == 0 { "fix:" } else { "" };
                    out.push_str(&format!("{:<16} {head:<4} {line}\n", ""));
                }
            }
        }
        out.push_str(&format!(
            "preflight: {} failure(s), {} warning(s){}\n",
            self.failures,
            self.warnings,
            if self.failures == 0 {
                "; ready to start"
            } else {
                "; fwd will not start until the failures are fixed"
            }
        ));
        out
    }
}

/// Runs every check of the config at `path` against `sys`.
pub fn run(path: &Path, sys: &SysView) -> Report {
    // What `fwd --check` checks: the file, the machine's CPUs, and the
    // tables the config's addresses, neighbours and routes make.
    let cfg = Config::load(path)
        .and_then(|c| c.check_machine().map(|()| c))
        .map_err(|e| e.to_string())
        .and_then(|c| crate::control::check_tables(&c).map(|()| c));
    let cfg = match cfg {
        Ok(c) => c,
        Err(e) => {
            let f = Finding::fail(
                "config",
                e,
                format!(
                    "correct the field named above in {} (`fwd --check {}` re-checks it)",
                    path.display(),
                    path.display()
                ),
            );
            return Report::new(path, vec![f]);
        }
    };
    Report::new(path, check_config(&cfg, path, sys))
}

/// The checks of a loaded (valid) config.
pub fn check_config(cfg: &Config, path: &Path, sys: &SysView) -> Vec<Finding> {
    let mut v = vec![Finding::ok(
        "config",
        format!(
            "{} is valid: {} port(s), {} worker(s)",
            path.display(),
            cfg.ports.len(),
            cfg.workers.len()
        ),
    )];
    v.extend(hugepages::check(cfg, sys));
    v.extend(pci::check(cfg, sys));
    v.extend(cpus::check(cfg, sys));
    v.extend(prefix::check(cfg, sys));
    v.extend(heap::check(sys));
    v
}

const USAGE: &str = "usage: fwd preflight CONFIG.yaml [--json]";

/// `fwd preflight` with its arguments (after the word `preflight`);
/// returns the exit status.
pub fn main(args: &[String]) -> i32 {
    let mut json = false;
    let mut config = None;
    for a in args {
        match a.as_str() {
            "--json" => json = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                return 0;
            }
            s if s.starts_with('-') => {
                eprintln!("fwd preflight: unknown option {s}\n{USAGE}");
                return 2;
            }
            s => {
                if config.replace(s).is_some() {
                    eprintln!("fwd preflight: only one config file may be given\n{USAGE}");
                    return 2;
                }
            }
        }
    }
    let Some(config) = config else {
        eprintln!("fwd preflight: no config file given\n{USAGE}");
        return 2;
    };
    let report = run(Path::new(config), &SysView::host());
    let out = if json {
        match serde_json::to_string_pretty(&report) {
            Ok(s) => s + "\n",
            Err(e) => {
                eprintln!("fwd preflight: {e}");
                return 2;
            }
        }
    } else {
        report.text()
    };
    // A closed pipe (`| head`) is no reason to panic; the status stands.
    let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), out.as_bytes());
    report.exit_code()
}
