//! Helpers for the end-to-end tests: they run the real `fwd` binary.
#![allow(dead_code)]

pub mod frr;
pub mod netns;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A scratch directory removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("fwd-test-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("create temp dir");
        TempDir(p)
    }
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::env::var_os("FWD_KEEP_TEST_DIRS").is_none() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

pub fn fwd_bin() -> &'static str {
    env!("CARGO_BIN_EXE_fwd")
}

/// `fwdctl`, built next to `fwd` (same target directory).
pub fn fwdctl_bin() -> PathBuf {
    Path::new(fwd_bin()).with_file_name("fwdctl")
}

/// Runs `fwdctl -s SOCK ARGS...` (the one built beside `fwd`); its output,
/// whatever its status. `netns::fwdctl` is the one that must succeed.
pub fn fwdctl_output(sock: &Path, args: &[&str]) -> Output {
    let bin = fwdctl_bin();
    assert!(
        bin.exists(),
        "{} missing: `cargo test --workspace` builds it (`-p fwd` alone does not)",
        bin.display()
    );
    Command::new(bin)
        .arg("-s")
        .arg(sock)
        .args(args)
        .output()
        .expect("run fwdctl")
}

/// `fwdctl -s SOCK --json ARGS...`, which must succeed, its reply parsed.
pub fn fwdctl_json(sock: &Path, args: &[&str]) -> serde_json::Value {
    let mut a = vec!["--json"];
    a.extend_from_slice(args);
    let out = ok(fwdctl_output(sock, &a));
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("fwdctl {args:?}: {e}: {out}"))
}

/// The stdout of a command that must have succeeded.
pub fn ok(o: Output) -> String {
    assert!(o.status.success(), "{}", text(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `fwdctl` as any user may run it: a copy in `dir`, which is made
/// searchable. The build tree may sit in a private directory (a clone in a
/// 0700 home or `mktemp -d`) that an unprivileged peer cannot enter.
pub fn fwdctl_for_anyone(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let to = dir.join("fwdctl-for-anyone");
    if !to.exists() {
        // Copied aside and renamed: concurrent callers never run a partial copy.
        let tmp = dir.join(format!(
            "fwdctl-for-anyone.{:?}",
            std::thread::current().id()
        ));
        std::fs::copy(fwdctl_bin(), &tmp).expect("copy fwdctl");
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::rename(&tmp, &to).expect("rename fwdctl");
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    to
}

/// Runs `c` to completion, like `Command::output`, but retries while the
/// kernel answers ETXTBSY. A binary copied by [`fwdctl_for_anyone`] was open
/// for writing for a moment; a child that another test thread forked in that
/// moment holds the descriptor until it execs, and exec of the copy fails
/// meanwhile. Not a timing assertion: the retries only outwait that window.
pub fn output_of(c: &mut Command) -> std::io::Result<Output> {
    let mut tries = 0;
    loop {
        match c.output() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 500 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            r => return r,
        }
    }
}

/// The EAL settings every test config uses: no hugepages, own prefix.
pub fn eal_yaml(tag: &str) -> String {
    format!(
        "eal:\n  main_lcore: 0\n  memory_mb: 256\n  file_prefix: fwdtest-{tag}-{}\n",
        std::process::id()
    )
}

/// The `fwd` command for `config` (written into `dir`) and extra args.
pub fn fwd_command(dir: &TempDir, config: &str, extra: &[&str]) -> Command {
    let cfg = dir.path("fwd.yaml");
    std::fs::write(&cfg, config).expect("write config");
    let mut c = Command::new(fwd_bin());
    c.arg(&cfg)
        .args(extra)
        .env("RUNTIME_DIRECTORY", &dir.0)
        .stdin(Stdio::null());
    c
}

/// Runs `fwd` to completion with extra args; returns its output.
pub fn run_fwd(dir: &TempDir, config: &str, extra: &[&str]) -> Output {
    fwd_command(dir, config, extra).output().expect("spawn fwd")
}

/// Starts `fwd` in the background.
pub fn spawn_fwd(dir: &TempDir, config: &str, extra: &[&str]) -> Child {
    fwd_command(dir, config, extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn fwd")
}

/// A background daemon stopped with SIGTERM (a clean stop) when dropped.
pub struct Daemon(pub Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let _ = self.0.wait();
    }
}

pub fn text(o: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Reads the `--stats-json` document.
pub fn read_stats(path: &Path) -> serde_json::Value {
    let s = std::fs::read_to_string(path).expect("stats json written");
    serde_json::from_str(&s).expect("stats json parses")
}

pub fn mac_of(stats: &serde_json::Value, port: usize) -> [u8; 6] {
    let s = stats["ports"][port]["mac"]
        .as_str()
        .expect("port mac in stats");
    fwd::config::parse_mac(s).expect("mac parses")
}

pub fn is_root() -> bool {
    // The e2e tests run DPDK and create namespaces: they need root. CI runs
    // as root; a developer without it gets a clear failure, not a skip.
    std::fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

/// Waits until a spawned `fwd` says it is forwarding (every port started),
/// or panics with what it printed if it exits first. Its stderr keeps being
/// drained in the background so the daemon never blocks on a full pipe.
pub fn wait_ready(child: &mut Child) {
    if let Err(text) = try_ready(child) {
        panic!("fwd exited before forwarding:\n{text}");
    }
}

/// [`wait_ready`], returning what `fwd` printed when it exits first (for a
/// caller that retries, e.g. when a port it picked was taken meanwhile).
pub fn try_ready(child: &mut Child) -> Result<(), String> {
    use std::io::BufRead;
    let stderr = child.stderr.take().expect("stderr piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut seen = String::new();
        let mut ready = false;
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            seen.push_str(&line);
            seen.push('\n');
            if !ready && line.contains("fwd: forwarding with") {
                ready = true;
                let _ = tx.send(Ok(()));
            }
        }
        if !ready {
            let _ = tx.send(Err(seen));
        }
    });
    match rx.recv() {
        Ok(r) => r,
        Err(_) => Err("fwd's stderr reader vanished".into()),
    }
}

/// Polls `f` until it returns `Some`, or panics after `deadline` with what
/// `what` and the last `describe()` say.
pub fn wait_for<T>(
    what: &str,
    deadline: Duration,
    mut f: impl FnMut() -> Option<T>,
    describe: impl Fn() -> String,
) -> T {
    let end = Instant::now() + deadline;
    loop {
        if let Some(v) = f() {
            return v;
        }
        if Instant::now() > end {
            panic!(
                "timed out after {:?} waiting for {what}\n{}",
                deadline,
                describe()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
