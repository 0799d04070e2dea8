//! Probing the build host for the system DPDK and libclang.
//!
//! Shared by the root preflight (`build.rs`, via `#[path]`) and by
//! `dpdk-sys/build.rs` (via this crate's library), so there is one place that
//! knows how DPDK is found and what "too old" means.

use std::path::PathBuf;
use std::process::Command;

/// The oldest DPDK release whose API the bindings are written against.
pub const MIN_DPDK: (u32, u32) = (22, 11);

/// The command that installs everything the build needs.
pub const SETUP_HINT: &str = "run `sudo deploy/setup.sh` (installs dpdk, libdpdk-dev, clang, \
libclang-dev, pkg-config and the test tools), then build again";

/// What pkg-config reports for `libdpdk`.
#[derive(Debug, Clone)]
pub struct Dpdk {
    pub version: String,
    /// Raw `--cflags` words: they carry `-include rte_config.h` and `-march`.
    pub cflags: Vec<String>,
    /// Include directories (`-I` words without the flag).
    pub include_dirs: Vec<PathBuf>,
    /// Raw `--libs` words.
    pub libs: Vec<String>,
}

fn pkg_config(args: &[&str]) -> Result<String, String> {
    let out = Command::new("pkg-config")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run pkg-config ({e}); {SETUP_HINT}"))?;
    if !out.status.success() {
        return Err(format!(
            "pkg-config {} failed: {}; {SETUP_HINT}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Parses "22.11.4" into (22, 11).
pub fn parse_version(v: &str) -> Option<(u32, u32)> {
    let mut it = v.split('.');
    let major = it.next()?.trim().parse().ok()?;
    let minor = it.next()?.trim().parse().ok()?;
    Some((major, minor))
}

/// Finds the system DPDK through pkg-config and checks its version.
///
/// # Errors
/// A message naming the setup command when pkg-config or libdpdk is missing,
/// or when the installed DPDK is older than [`MIN_DPDK`].
pub fn dpdk() -> Result<Dpdk, String> {
    let version = pkg_config(&["--modversion", "libdpdk"])?;
    let parsed = parse_version(&version)
        .ok_or_else(|| format!("pkg-config reports an unreadable libdpdk version {version:?}"))?;
    if parsed < MIN_DPDK {
        return Err(format!(
            "libdpdk {version} is too old: {}.{} or newer is required; {SETUP_HINT}",
            MIN_DPDK.0, MIN_DPDK.1
        ));
    }
    let cflags: Vec<String> = pkg_config(&["--cflags", "libdpdk"])?
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let include_dirs = cflags
        .iter()
        .filter_map(|w| w.strip_prefix("-I").map(PathBuf::from))
        .collect();
    let libs = pkg_config(&["--libs", "libdpdk"])?
        .split_whitespace()
        .map(str::to_string)
        .collect();
    Ok(Dpdk {
        version,
        cflags,
        include_dirs,
        libs,
    })
}

/// Checks that a libclang shared library is present for bindgen.
///
/// # Errors
/// A message naming the setup command when none is found.
pub fn libclang() -> Result<PathBuf, String> {
    if let Ok(p) = std::env::var("LIBCLANG_PATH") {
        return Ok(PathBuf::from(p));
    }
    let roots = [
        "/usr/lib",
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
    ];
    for root in roots {
        let Ok(entries) = std::fs::read_dir(root) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            if name.starts_with("libclang") && name.contains(".so") && !name.contains("cpp") {
                return Ok(e.path());
            }
            if name.starts_with("llvm-") {
                let lib = e.path().join("lib");
                if let Ok(inner) = std::fs::read_dir(&lib) {
                    for f in inner.flatten() {
                        let n = f.file_name();
                        let n = n.to_string_lossy();
                        if n.starts_with("libclang") && n.contains(".so") && !n.contains("cpp") {
                            return Ok(f.path());
                        }
                    }
                }
            }
        }
    }
    Err(format!(
        "libclang (needed by bindgen) was not found; {SETUP_HINT}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_and_compare() {
        assert_eq!(parse_version("22.11.4"), Some((22, 11)));
        assert_eq!(parse_version("23.03"), Some((23, 3)));
        assert_eq!(parse_version("x"), None);
        assert!(parse_version("21.11.2").unwrap() < MIN_DPDK);
        assert!(parse_version("24.11").unwrap() >= MIN_DPDK);
    }
}
