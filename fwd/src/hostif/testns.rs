//! Test support: every test that creates an interface or an address runs in
//! a network namespace of its own, never in the machine's.

use std::path::Path;
use std::process::Command;

use nix::sched::{unshare, CloneFlags};
use nix::unistd::Uid;

/// Runs `body` on a new thread that first moves into a new network
/// namespace. `unshare(CLONE_NEWNET)` moves only the calling thread, so the
/// interfaces, addresses and sockets the body creates live in a namespace
/// that nothing else sees and that disappears with the thread. Skips (says
/// why and returns) when the process may not make one: not root, or a
/// container without `CAP_SYS_ADMIN`.
pub(crate) fn in_private_netns(test: &str, body: impl FnOnce() + Send + 'static) {
    if !Uid::effective().is_root() {
        println!("skipping {test}: needs root (a private network namespace and CAP_NET_ADMIN)");
        return;
    }
    let owned = test.to_string();
    let thread = std::thread::Builder::new()
        .name(test.chars().take(15).collect())
        .spawn(move || match unshare(CloneFlags::CLONE_NEWNET) {
            Ok(()) => body(),
            Err(errno) => println!("skipping {owned}: unshare(CLONE_NEWNET): {errno}"),
        })
        .expect("spawn the test thread");
    if let Err(panic) = thread.join() {
        std::panic::resume_unwind(panic);
    }
}

/// A sysctl of the calling thread's namespace (`/proc/sys` follows the
/// thread), e.g. `sysctl("net/ipv6/conf/fwd0/autoconf")`.
pub(crate) fn sysctl(key: &str) -> Option<String> {
    let path = Path::new("/proc/sys").join(key);
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// Sets a sysctl of the calling thread's namespace.
pub(crate) fn set_sysctl(key: &str, value: &str) {
    std::fs::write(Path::new("/proc/sys").join(key), value)
        .unwrap_or_else(|e| panic!("setting {key}: {e}"));
}

/// `ip -json ARGS`, run from the calling thread (the child inherits the
/// thread's namespace), parsed; `None`, said once per call, when iproute2
/// is not installed, so the cross-check is skipped rather than failed.
pub(crate) fn ip_json(args: &[&str]) -> Option<serde_json::Value> {
    let output = match Command::new("ip").arg("-json").args(args).output() {
        Ok(output) => output,
        Err(e) => {
            println!("iproute2 cross-check skipped: running ip: {e}");
            return None;
        }
    };
    assert!(
        output.status.success(),
        "ip -json {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    Some(serde_json::from_slice(&output.stdout).expect("ip -json prints JSON"))
}
