//! The system as the checks see it: every absolute path (`/proc`, `/sys`,
//! `/usr/lib`, the runtime directory, the control socket) is read under a
//! root, `/` on a host and a fixture tree in tests.

use std::io;
use std::path::{Path, PathBuf};

/// Where the checks read the machine.
#[derive(Clone, Debug)]
pub struct SysView {
    root: PathBuf,
    /// `RUNTIME_DIRECTORY` (systemd's `RuntimeDirectory=`, or the one the
    /// daemon picks), which DPDK prefers for its runtime files.
    pub runtime_directory: Option<PathBuf>,
    /// `XDG_RUNTIME_DIR`, DPDK's choice for a non-root user.
    pub xdg_runtime_dir: Option<PathBuf>,
    /// Whether the daemon would run as root (DPDK then uses `/var/run`).
    pub root_user: bool,
    /// `GLIBC_TUNABLES`: the daemon gets the preflight's environment
    /// (systemd gives `ExecStartPre=` and `ExecStart=` the same one).
    pub glibc_tunables: Option<String>,
}

impl SysView {
    /// This machine, with this process's environment.
    pub fn host() -> SysView {
        SysView {
            root: PathBuf::from("/"),
            runtime_directory: std::env::var_os("RUNTIME_DIRECTORY").map(PathBuf::from),
            xdg_runtime_dir: std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from),
            root_user: nix::unistd::getuid().is_root(),
            glibc_tunables: std::env::var("GLIBC_TUNABLES").ok(),
        }
    }

    /// A tree under `root` (tests), run as root with no runtime variables.
    pub fn at(root: &Path) -> SysView {
        SysView {
            root: root.to_path_buf(),
            runtime_directory: None,
            xdg_runtime_dir: None,
            root_user: true,
            glibc_tunables: None,
        }
    }

    /// Where `abs` (an absolute path on the viewed system) is here.
    pub fn path(&self, abs: impl AsRef<Path>) -> PathBuf {
        let abs = abs.as_ref();
        self.root.join(abs.strip_prefix("/").unwrap_or(abs))
    }

    /// The file's text.
    ///
    /// # Errors
    /// Whatever reading it gives.
    pub fn read(&self, abs: impl AsRef<Path>) -> io::Result<String> {
        std::fs::read_to_string(self.path(abs))
    }

    /// The file's text, trimmed; `None` when unreadable.
    pub fn read_trim(&self, abs: impl AsRef<Path>) -> Option<String> {
        self.read(abs).ok().map(|s| s.trim().to_string())
    }

    pub fn exists(&self, abs: impl AsRef<Path>) -> bool {
        self.path(abs).exists()
    }

    /// The last component of a symbolic link's target (a device's
    /// `driver` link names the driver so).
    pub fn link_name(&self, abs: impl AsRef<Path>) -> Option<String> {
        let t = std::fs::read_link(self.path(abs)).ok()?;
        t.file_name().map(|n| n.to_string_lossy().into_owned())
    }

    /// The names in a directory, sorted; empty when it cannot be read.
    pub fn list(&self, abs: impl AsRef<Path>) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.path(abs))
            .map(|d| {
                d.filter_map(Result::ok)
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    /// DPDK's runtime base (`eal_create_runtime_dir`): `RUNTIME_DIRECTORY`,
    /// else `/var/run` for root, else `XDG_RUNTIME_DIR` or `/tmp`. Its
    /// per-prefix directory is `<base>/dpdk/<prefix>`.
    pub fn dpdk_runtime_base(&self) -> PathBuf {
        if let Some(d) = &self.runtime_directory {
            return d.clone();
        }
        if self.root_user {
            return PathBuf::from("/var/run");
        }
        self.xdg_runtime_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from("/tmp"))
    }
}
