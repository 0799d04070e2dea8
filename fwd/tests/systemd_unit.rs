//! `deploy/fwd.service` passes `systemd-analyze verify` with no complaint,
//! and says what the daemon relies on (Type=notify, a watchdog, preflight
//! first, the control socket inside its RuntimeDirectory).
//!
//! Verify runs without systemd as PID 1 (`--man=no`; a container is fine);
//! it insists that the ExecStart binaries exist, so a copy of the unit with
//! the built `fwd` substituted for `/usr/local/bin/fwd` is checked.
//! `deploy/setup.sh` installs `systemd` (which ships systemd-analyze); the
//! test skips, saying so, only where the tool is absent.

use std::path::{Path, PathBuf};
use std::process::Command;

fn unit_text() -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/fwd.service");
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn systemd_analyze() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/bin".into(), "/bin".into()])
        .map(|d| d.join("systemd-analyze"))
        .find(|p| p.is_file())
}

struct Dir(PathBuf);
impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Verifies `text` as `fwd.service`: `Err` with everything verify said
/// when it failed or printed anything at all (it only warns, with status
/// 0, about unknown keys and bad values).
fn verify(tool: &Path, text: &str, tag: &str) -> Result<(), String> {
    let dir = Dir(std::env::temp_dir().join(format!("fwd-unit-{tag}-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&dir.0);
    std::fs::create_dir_all(&dir.0).unwrap();
    let unit = dir.0.join("fwd.service");
    std::fs::write(
        &unit,
        text.replace("/usr/local/bin/fwd", env!("CARGO_BIN_EXE_fwd")),
    )
    .unwrap();
    let out = Command::new(tool)
        .args(["verify", "--man=no"])
        .arg(&unit)
        .env("SYSTEMD_LOG_COLOR", "0")
        .output()
        .expect("run systemd-analyze");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() && said.trim().is_empty() {
        Ok(())
    } else {
        Err(format!("status {:?}:\n{said}", out.status))
    }
}

#[test]
fn the_unit_passes_systemd_analyze_verify() {
    let Some(tool) = systemd_analyze() else {
        eprintln!(
            "SKIPPED: systemd-analyze not found (apt-get install systemd; deploy/setup.sh does)"
        );
        return;
    };
    let text = unit_text();
    if let Err(e) = verify(&tool, &text, "ok") {
        panic!("deploy/fwd.service: {e}");
    }
    // The check can fail: an unknown key and a bad value are caught.
    let broken = text.replace(
        "ProtectSystem=strict",
        "ProtectSystem=sometimes\nNoSuchKey=1",
    );
    let e = verify(&tool, &broken, "broken").expect_err("a broken unit must not verify");
    assert!(e.contains("NoSuchKey"), "{e}");
}

fn service_values<'a>(text: &'a str, key: &str) -> Vec<&'a str> {
    text.lines()
        .filter_map(|l| l.strip_prefix(key)?.strip_prefix('='))
        .collect()
}

#[test]
fn the_unit_says_what_the_daemon_relies_on() {
    let text = unit_text();
    assert_eq!(service_values(&text, "Type"), ["notify"]);
    assert_eq!(service_values(&text, "NotifyAccess"), ["main"]);
    assert_eq!(service_values(&text, "WatchdogSec").len(), 1);
    assert!(
        service_values(&text, "ExecStartPre")
            .iter()
            .any(|c| c.contains("fwd preflight ")),
        "preflight runs first"
    );
    // The tables' heap on transparent huge pages (preflight's `heap`).
    assert_eq!(
        service_values(&text, "Environment"),
        ["GLIBC_TUNABLES=glibc.malloc.hugetlb=1"]
    );
    // The default control socket lives in the RuntimeDirectory.
    let rt = service_values(&text, "RuntimeDirectory");
    assert_eq!(rt, ["fwd"]);
    let sock = fwd::config::ControlConfig::default().socket;
    assert!(
        sock.starts_with(format!("/run/{}", rt[0])),
        "{}",
        sock.display()
    );
    // control.save_dir is the StateDirectory.
    let state = service_values(&text, "StateDirectory");
    assert_eq!(state, ["fwd"]);
    assert_eq!(
        fwd::config::ControlConfig::default().save_dir,
        Path::new("/var/lib").join(state[0])
    );
    let families = service_values(&text, "RestrictAddressFamilies").join(" ");
    for f in ["AF_UNIX", "AF_NETLINK", "AF_INET", "AF_INET6", "AF_PACKET"] {
        assert!(families.split(' ').any(|x| x == f), "{f} allowed");
    }
}
