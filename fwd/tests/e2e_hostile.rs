//! The control socket against a hostile peer: the real `fwd` daemon and
//! `fwdctl`. Each test is a finding of the hostile review (issue 11) that
//! failed before its fix: where files are written, who is admitted, how a
//! peer can hold sessions or memory, and that a stop is bounded whatever
//! the clients do.
// pre_exec to drop to the unprivileged peer's ids (see fwdctl_as).
#![allow(unsafe_code)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// The unprivileged peer: nobody, in the socket's group `nogroup`.
const NOBODY: u32 = 65534;

fn config(tag: &str, dir: &TempDir, extra: &str) -> String {
    format!(
        "{eal}ports:
  - {{name: p0, device: net_null_a{tag}, addresses: [10.0.0.1/24]}}
workers:
  - {{lcore: 1, rx: [{{port: p0}}]}}
control:
  socket: {sock}
  socket_mode: '0660'
  socket_group: nogroup
  save_dir: {save}
{extra}",
        eal = eal_yaml(tag),
        sock = dir.path("fwd.sock").display(),
        save = dir.path("saved").display(),
    )
}

fn start(tag: &str, extra: &str) -> (TempDir, Daemon) {
    assert!(is_root(), "the end-to-end tests need root (DPDK)");
    let dir = TempDir::new(tag);
    // Searchable by the unprivileged peer, writable by root alone.
    std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut d = Daemon(spawn_fwd(&dir, &config(tag, &dir, extra), &[]));
    wait_ready(&mut d.0);
    (dir, d)
}

/// `fwdctl` as `uid` with primary group `gid` and supplementary `groups`.
fn fwdctl_as(uid: u32, gid: u32, groups: &[u32], sock: &Path, args: &[&str]) -> Command {
    // A copy beside the socket: the build tree may be private.
    let mut c = Command::new(fwdctl_for_anyone(sock.parent().unwrap()));
    c.arg("-s").arg(sock).args(args);
    let groups: Vec<libc::gid_t> = groups.to_vec();
    // SAFETY: between fork and exec only async-signal-safe calls are made
    // (setgroups, setgid, setuid) on memory allocated before the fork.
    unsafe {
        c.pre_exec(move || {
            if libc::setgroups(groups.len(), groups.as_ptr()) != 0
                || libc::setgid(gid) != 0
                || libc::setuid(uid) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    c
}

fn run(mut c: Command) -> Output {
    output_of(&mut c).expect("run fwdctl")
}

fn failed_with(o: &Output, kind: &str) {
    assert!(!o.status.success(), "{}", text(o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(kind),
        "want {kind}: {}",
        text(o)
    );
}

/// A raw session: connected and past the hello.
fn session(sock: &Path) -> (UnixStream, BufReader<UnixStream>) {
    let s = UnixStream::connect(sock).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    (&s).write_all(b"{\"hello\":{\"protocol\":1,\"client\":\"test\"}}\n")
        .unwrap();
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    assert!(line.contains("\"hello\""), "{line}");
    (s, r)
}

/// Everything the daemon sends until it closes the session.
fn rest(r: &mut BufReader<UnixStream>) -> String {
    let mut out = String::new();
    let _ = r.read_to_string(&mut out);
    out
}

#[test]
fn a_group_peer_saves_only_into_the_save_dir_and_never_through_a_link() {
    let (dir, _d) = start("hsave", "");
    let sock = dir.path("fwd.sock");
    let victim = dir.path("victim");
    std::fs::write(&victim, "root's file\n").unwrap();
    // Finding 1: an absolute path outside save_dir is for root only.
    let o = run(fwdctl_as(
        NOBODY,
        NOBODY,
        &[],
        &sock,
        &["config", "save", victim.to_str().unwrap()],
    ));
    failed_with(&o, "permission_denied");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root's file\n");
    // A file name goes into save_dir.
    ok(run(fwdctl_as(
        NOBODY,
        NOBODY,
        &[],
        &sock,
        &["config", "save", "running.conf"],
    )));
    let saved = std::fs::read_to_string(dir.path("saved").join("running.conf")).unwrap();
    assert!(saved.contains("10.0.0.1/24"), "{saved}");
    // Finding 2: root saving to a path whose old temp name is a planted
    // link does not write through it.
    let target = dir.path("root.conf");
    std::os::unix::fs::symlink(&victim, dir.path("root.tmp")).unwrap();
    ok(run(fwdctl_as(
        0,
        0,
        &[],
        &sock,
        &["config", "save", target.to_str().unwrap()],
    )));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root's file\n");
    assert!(std::fs::read_to_string(&target)
        .unwrap()
        .contains("10.0.0.1/24"));
}

#[test]
fn a_peer_in_the_socket_group_through_a_supplementary_group_is_admitted() {
    let (dir, _d) = start("hgroups", "");
    let sock = dir.path("fwd.sock");
    // Finding 4: primary group `users` (100), `nogroup` as a supplementary one.
    ok(run(fwdctl_as(NOBODY, 100, &[NOBODY], &sock, &["status"])));
    // Without it: refused (by the socket's mode before the daemon asks).
    let o = run(fwdctl_as(NOBODY, 100, &[], &sock, &["status"]));
    assert!(!o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("ermission denied") || text(&o).contains("permission_denied"));
    // With the socket open to all, the daemon's own check refuses it.
    drop(_d);
    let dir2 = TempDir::new("hgroups2");
    std::fs::set_permissions(&dir2.0, std::fs::Permissions::from_mode(0o755)).unwrap();
    let cfg = config("hgroups2", &dir2, "").replace("'0660'", "'0666'");
    let mut d2 = Daemon(spawn_fwd(&dir2, &cfg, &[]));
    wait_ready(&mut d2.0);
    let sock2 = dir2.path("fwd.sock");
    ok(run(fwdctl_as(NOBODY, 100, &[NOBODY], &sock2, &["status"])));
    let o = run(fwdctl_as(NOBODY, 100, &[], &sock2, &["status"]));
    failed_with(&o, "permission_denied");
}

#[test]
fn the_socket_path_holds_only_a_socket_and_nothing_else_is_deleted() {
    assert!(is_root(), "the end-to-end tests need root (DPDK)");
    let dir = TempDir::new("hsock");
    let sock = dir.path("fwd.sock");
    // Finding 3: a regular file at the path is kept, and fwd says why.
    std::fs::write(&sock, "precious\n").unwrap();
    let o = run_fwd(&dir, &config("hsock", &dir, ""), &["--exit-on-idle", "1"]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("not a socket"), "{}", text(&o));
    assert_eq!(std::fs::read_to_string(&sock).unwrap(), "precious\n");
    // A dangling link is named as one.
    std::fs::remove_file(&sock).unwrap();
    std::os::unix::fs::symlink(dir.path("nowhere"), &sock).unwrap();
    let o = run_fwd(&dir, &config("hsock", &dir, ""), &["--exit-on-idle", "1"]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("symbolic link"), "{}", text(&o));
}

/// Waits for `child` to exit, at most `limit` (a hang detector: a clean
/// stop takes a fraction of it).
fn exits_within(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return Some(s);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether root's status counts `n` sessions (its own included).
fn clients_at_least(sock: &Path, n: u32) -> bool {
    let Ok(mut c) = ctl::Client::connect(sock) else {
        return false;
    };
    matches!(
        c.call(&ctl::wire::Request::Status {}),
        Ok(ctl::wire::Response::Status(s)) if s.clients >= n
    )
}

/// Waits until root's status counts `n` sessions (its own included).
fn wait_for_clients(sock: &Path, n: u32) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !clients_at_least(sock, n) {
        assert!(Instant::now() < deadline, "never {n} sessions");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A `watch` of the unprivileged peer holding a session, started again
/// while it is refused, until root's status counts `n` sessions.
fn hold_session(sock: &Path, n: u32) -> Child {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut w = fwdctl_as(NOBODY, NOBODY, &[], sock, &["watch", "interval", "3600s"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        while w.try_wait().unwrap().is_none() {
            if clients_at_least(sock, n) {
                return w;
            }
            assert!(Instant::now() < deadline, "never {n} sessions");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[test]
fn sigterm_stops_the_daemon_while_sessions_are_open_and_watched() {
    let (dir, mut d) = start("hterm", "");
    let sock = dir.path("fwd.sock");
    // Finding 10: an idle session, a session in the middle of a line and a
    // watch with a long interval.
    let (idle, _r1) = session(&sock);
    let (partial, _r2) = session(&sock);
    (&partial).write_all(b"{\"id\":1,").unwrap();
    let mut watch = Command::new(fwdctl_bin())
        .arg("-s")
        .arg(&sock)
        .args(["watch", "interval", "3600s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The watch has a session once status counts three clients (and ours).
    wait_for_clients(&sock, 4);
    let pid = d.0.id().to_string();
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    let st = exits_within(&mut d.0, Duration::from_secs(60));
    assert!(
        st.is_some_and(|s| s.success()),
        "fwd did not stop cleanly with sessions open: {st:?}"
    );
    // The watch saw its stream end.
    assert!(exits_within(&mut watch, Duration::from_secs(30)).is_some());
    drop((idle, partial));
}

#[test]
fn sessions_are_bounded_in_time_and_the_last_slot_is_roots() {
    let (dir, _d) = start(
        "hslots",
        "  max_clients: 3\n  idle_timeout_s: 2\n  request_timeout_s: 1\n",
    );
    let sock = dir.path("fwd.sock");
    // Finding 11: two long sessions of the unprivileged peer take every
    // slot it may use...
    // (A session ends a moment after its client goes, so a peer may briefly
    // find the slots of our own probes still taken: retry until in.)
    let mut watchers = Vec::new();
    for n in 1..=2 {
        watchers.push(hold_session(&sock, n + 1));
    }
    let o = run(fwdctl_as(NOBODY, NOBODY, &[], &sock, &["status"]));
    failed_with(&o, "busy");
    // ...and root still gets in.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !run(fwdctl_as(0, 0, &[], &sock, &["status"]))
        .status
        .success()
    {
        assert!(Instant::now() < deadline, "root was locked out");
        std::thread::sleep(Duration::from_millis(20));
    }
    for w in &mut watchers {
        let _ = w.kill();
        let _ = w.wait();
    }
    // A dead watcher's session ends with it, not an hour later.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !run(fwdctl_as(NOBODY, NOBODY, &[], &sock, &["status"]))
        .status
        .success()
    {
        assert!(Instant::now() < deadline, "dead watchers still hold slots");
        std::thread::sleep(Duration::from_millis(50));
    }
    // A slowloris line is cut off with a reason, then the session closes.
    let (s, mut r) = session(&sock);
    (&s).write_all(b"{\"id\":7,\"request\":").unwrap();
    let got = rest(&mut r);
    assert!(got.contains("did not arrive whole"), "{got:?}");
    // So is a session that says nothing, and one that never says hello.
    let (_s, mut r) = session(&sock);
    let got = rest(&mut r);
    assert!(got.contains("no request for"), "{got:?}");
    let mut silent = UnixStream::connect(&sock).unwrap();
    silent
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut got = String::new();
    let _ = silent.read_to_string(&mut got);
    assert!(got.contains("did not arrive whole"), "{got:?}");
}

fn rss_kib(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmRSS")
}

#[test]
fn memory_taken_by_large_invalid_requests_is_given_back() {
    let (dir, d) = start("hmem", "  max_request_bytes: 67108864\n");
    let sock = dir.path("fwd.sock");
    let before = rss_kib(d.0.id());
    // Finding 12: sessions that each sent a 48 MB line that is not a
    // request, then stay open.
    let junk = vec![b'x'; 48 << 20];
    let mut open = Vec::new();
    for _ in 0..4 {
        let (s, mut r) = session(&sock);
        (&s).write_all(&junk).unwrap();
        (&s).write_all(b"\n").unwrap();
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        assert!(line.contains("bad_request"), "{line}");
        open.push((s, r));
    }
    let after = rss_kib(d.0.id());
    // Kept buffers would hold 4 x 64 MB; allow for one line's worth of
    // allocator slack.
    assert!(
        after < before + 64 * 1024,
        "RSS grew from {before} KiB to {after} KiB with the sessions idle"
    );
    drop(open);
}
