//! Nothing else on this instance's names: no DPDK primary process on the
//! same EAL file prefix, no daemon on the same control socket.
//!
//! A DPDK primary process keeps `<runtime>/dpdk/<prefix>/config` open with
//! a POSIX (fcntl) write lock on part of it for as long as it runs; a
//! second primary on the prefix fails in `rte_eal_init` ("Cannot create
//! lock on ..."). fwd itself runs `--in-memory`/`--no-shconf` and creates
//! no such file, so the clash is with another DPDK program (dpdk-testpmd,
//! a second appliance) told to use the prefix this config names.

use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::UnixStream;
use std::path::Path;

use super::{Finding, SysView};
use crate::config::Config;

const PREFIX: &str = "prefix";
const SOCKET: &str = "socket";

/// Who holds a lock conflicting with a write lock on the whole file:
/// `Some(pid)` (`None` inside when the holder is an open file description
/// lock, which has no owner), or nothing. Asked with `F_OFD_GETLK`, which
/// sees classic fcntl locks of other processes and OFD locks of anyone.
fn lock_holder(path: &Path) -> io::Result<Option<Option<i32>>> {
    use std::os::unix::fs::OpenOptionsExt;
    // Never follow a link or wait on a FIFO planted at the name (under
    // /tmp when not root): only a regular file is DPDK's.
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    if !f.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file (DPDK's is one)",
        ));
    }
    let mut fl = libc::flock {
        l_type: libc::F_WRLCK as libc::c_short,
        l_whence: libc::SEEK_SET as libc::c_short,
        l_start: 0,
        l_len: 0,
        l_pid: 0,
    };
    nix::fcntl::fcntl(f.as_raw_fd(), nix::fcntl::FcntlArg::F_OFD_GETLK(&mut fl))?;
    if fl.l_type == libc::F_UNLCK as libc::c_short {
        Ok(None)
    } else {
        Ok(Some((fl.l_pid > 0).then_some(fl.l_pid)))
    }
}

pub(super) fn check(cfg: &Config, sys: &SysView) -> Vec<Finding> {
    let mut v = Vec::new();
    match &cfg.eal.file_prefix {
        None => v.push(Finding::ok(
            PREFIX,
            "EAL file prefix fwd-<pid>: one of its own per process, no clash possible",
        )),
        Some(prefix) => {
            let rt = sys.dpdk_runtime_base().join("dpdk").join(prefix);
            let config = rt.join("config");
            match lock_holder(&sys.path(&config)) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => v.push(Finding::ok(
                    PREFIX,
                    format!("EAL file prefix {prefix}: no other DPDK process uses it"),
                )),
                Err(e) => v.push(Finding::warn(
                    PREFIX,
                    format!(
                        "EAL file prefix {prefix}: cannot tell whether {} is in use: {e}",
                        config.display()
                    ),
                    format!("run preflight as the user fwd runs as (root); or check `fuser -v {}`", config.display()),
                )),
                Ok(None) => v.push(Finding::ok(
                    PREFIX,
                    format!(
                        "EAL file prefix {prefix}: {} is left over but unlocked (no process uses it)",
                        config.display()
                    ),
                )),
                Ok(Some(pid)) => v.push(Finding::fail(
                    PREFIX,
                    format!(
                        "EAL file prefix {prefix} is in use by another DPDK process{} \
                         (it holds the lock on {})",
                        pid.map_or_else(String::new, |p| format!(" (pid {p})")),
                        config.display()
                    ),
                    format!(
                        "stop that process (`fuser -v {}` names it), or set eal.file_prefix \
                         to another name",
                        config.display()
                    ),
                )),
            }
        }
    }
    v.push(socket(&cfg.control.socket, sys));
    v
}

fn socket(path: &Path, sys: &SysView) -> Finding {
    let here = sys.path(path);
    let shown = path.display();
    let other = "or set control.socket to another path";
    match std::fs::symlink_metadata(&here) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Finding::ok(SOCKET, format!("control socket {shown} is free"));
        }
        Err(e) => {
            return Finding::warn(
                SOCKET,
                format!("control socket {shown}: {e}"),
                "run preflight as the user fwd runs as (root)",
            )
        }
        Ok(m) if m.file_type().is_symlink() || !m.file_type().is_socket() => {
            return Finding::fail(
                SOCKET,
                format!(
                    "{shown} exists and is not a socket (the daemon neither follows nor \
                     removes it)"
                ),
                format!("remove it (rm {shown}) {other}"),
            );
        }
        Ok(_) => {}
    }
    match UnixStream::connect(&here) {
        Ok(_) => Finding::fail(
            SOCKET,
            format!("a running daemon answers on the control socket {shown}"),
            format!("stop it (systemctl stop fwd; `fwdctl -s {shown} status` shows it) {other}"),
        ),
        Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => Finding::ok(
            SOCKET,
            format!("control socket {shown} is stale (no one listens; fwd replaces it)"),
        ),
        Err(e) => Finding::warn(
            SOCKET,
            format!("control socket {shown}: cannot tell whether it is in use: {e}"),
            "run preflight as the user fwd runs as (root)",
        ),
    }
}
