//! The real daemon under a stand-in service manager: a unix datagram
//! socket passed as NOTIFY_SOCKET, with WATCHDOG_USEC set. READY=1 must
//! come once the daemon serves its control socket (ports started, tables
//! published), WATCHDOG=1 pings must follow while the workers run, and a
//! SIGTERM must announce STOPPING=1.

mod common;

use std::os::unix::net::UnixDatagram;
use std::process::{ChildStderr, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use ctl::wire::{Request, Response};

#[test]
fn ready_after_the_control_socket_answers_then_watchdog_pings_then_stopping() {
    assert!(is_root(), "the end-to-end tests need root (DPDK)");
    let dir = TempDir::new("sdnotify");
    let tag = "sdn";
    let sock = dir.path("fwd.sock");
    let config = format!(
        "{eal}ports:
  - {{name: p0, device: net_null_a{tag}, addresses: [10.0.0.1/24]}}
  - {{name: p1, device: net_null_b{tag}, addresses: [10.0.1.1/24]}}
workers:
  - {{lcore: 1, rx: [{{port: p0}}, {{port: p1}}]}}
control:
  socket: {sock}
",
        eal = eal_yaml(tag),
        sock = sock.display(),
    );
    let cfg = dir.path("fwd.yaml");
    std::fs::write(&cfg, config).unwrap();
    let notify_path = dir.path("notify");
    let notify = UnixDatagram::bind(&notify_path).expect("bind the notify socket");
    notify
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();

    let mut child = Command::new(fwd_bin())
        .arg(&cfg)
        .env("RUNTIME_DIRECTORY", &dir.0)
        .env("NOTIFY_SOCKET", &notify_path)
        // 2 s: a ping every 0.5 s while workers loop at least every 1 s.
        .env("WATCHDOG_USEC", "2000000")
        .env_remove("WATCHDOG_PID")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn fwd");
    // stderr is read without blocking until READY=1: whatever the daemon
    // wrote before sending READY=1 is in the pipe when it arrives, so the
    // order of the two is checked, not guessed.
    let mut stderr = child.stderr.take().unwrap();
    set_nonblocking(&stderr, true);
    let log = Arc::new(Mutex::new(String::new()));
    let mut daemon = Daemon(child);
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut buf = [0u8; 4096];
    let mut recv = |what: &str, daemon: &mut Daemon, stderr: &mut dyn Available| -> String {
        loop {
            drain_available(stderr, &log);
            if let Ok(Some(st)) = daemon.0.try_wait() {
                panic!(
                    "fwd exited ({st}) waiting for {what}:\n{}",
                    log.lock().unwrap()
                );
            }
            assert!(
                Instant::now() < deadline,
                "no {what} in time:\n{}",
                log.lock().unwrap()
            );
            match notify.recv(&mut buf) {
                Ok(n) => return String::from_utf8_lossy(&buf[..n]).into_owned(),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(e) => panic!("notify socket: {e}"),
            }
        }
    };

    // Everything before READY=1: status lines only, no ping.
    let mut before = Vec::new();
    let ready = loop {
        let m = recv("READY=1", &mut daemon, &mut stderr);
        if m.lines().any(|l| l == "READY=1") {
            break m;
        }
        before.push(m);
    };
    drain_available(&mut stderr, &log);
    let started = log.lock().unwrap().clone();
    assert!(
        started.contains("fwd: forwarding with"),
        "READY=1 only after the ports are up and the workers launched:\n{started}"
    );
    // From here a thread keeps the pipe drained.
    set_nonblocking(&stderr, false);
    let l = Arc::clone(&log);
    let drain = std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let mut s = l.lock().unwrap();
            s.push_str(&line);
            s.push('\n');
        }
    });
    let mut none = NoStderr;
    // READY=1 means the control socket answers now, with the tables.
    let mut c = ctl::Client::connect(&sock).expect("control socket answers once READY=1 is sent");
    match c.call(&Request::Status {}).expect("status") {
        Response::Status(s) => assert!(s.generation >= 1),
        other => panic!("unexpected {other:?}"),
    }
    drop(c);
    assert!(
        before.iter().all(|m| !m.contains("WATCHDOG=1")),
        "no ping before READY: {before:?}"
    );
    assert!(
        before.iter().any(|m| m.starts_with("STATUS=")),
        "a status while starting: {before:?}"
    );
    assert!(ready.contains("STATUS=forwarding"), "{ready}");

    let mut pings = 0;
    while pings < 3 {
        let m = recv("WATCHDOG=1", &mut daemon, &mut none);
        if m.lines().any(|l| l == "WATCHDOG=1") {
            pings += 1;
        }
    }

    let _ = Command::new("kill")
        .args(["-TERM", &daemon.0.id().to_string()])
        .status();
    loop {
        let m = recv("STOPPING=1", &mut daemon, &mut none);
        if m.lines().any(|l| l == "STOPPING=1") {
            break;
        }
    }
    let st = daemon.0.wait().unwrap();
    drain.join().unwrap();
    assert!(st.success(), "clean stop:\n{}", log.lock().unwrap());
    // Reaped: nothing left for Daemon's drop to signal.
    std::mem::forget(daemon);
}

/// A stderr already handed to the drain thread.
struct NoStderr;

trait Available {
    fn read_available(&mut self, buf: &mut [u8]) -> std::io::Result<usize>;
}

impl Available for ChildStderr {
    fn read_available(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        std::io::Read::read(self, buf)
    }
}

impl Available for NoStderr {
    fn read_available(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
        Err(std::io::ErrorKind::WouldBlock.into())
    }
}

/// Appends what can be read without blocking to `log`.
fn drain_available(r: &mut dyn Available, log: &Mutex<String>) {
    let mut buf = [0u8; 8192];
    while let Ok(n) = r.read_available(&mut buf) {
        if n == 0 {
            break;
        }
        log.lock()
            .unwrap()
            .push_str(&String::from_utf8_lossy(&buf[..n]));
    }
}

fn set_nonblocking(f: &ChildStderr, on: bool) {
    use nix::fcntl::{fcntl, FcntlArg, OFlag};
    use std::os::fd::AsRawFd;
    let fd = f.as_raw_fd();
    let flags = OFlag::from_bits_truncate(fcntl(fd, FcntlArg::F_GETFL).unwrap());
    let flags = if on {
        flags | OFlag::O_NONBLOCK
    } else {
        flags & !OFlag::O_NONBLOCK
    };
    fcntl(fd, FcntlArg::F_SETFL(flags)).unwrap();
}
