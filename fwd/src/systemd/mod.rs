//! systemd integration: readiness, status and the watchdog, spoken over the
//! `sd_notify(3)` datagram protocol (no libsystemd: one datagram per
//! message on the socket named by `NOTIFY_SOCKET`).
//!
//! - `READY=1` is sent once the ports are started, the first tables are
//!   published and every worker has completed a poll loop with them, and
//!   the control socket is listening. With `Type=notify` systemd starts
//!   units ordered after `fwd` only then.
//! - `WATCHDOG=1` is sent every quarter of `WATCHDOG_USEC` while every
//!   worker keeps reporting quiescence ([`health`]); a wedged worker stops
//!   the pings and systemd (`WatchdogSec=`) kills and restarts the daemon.
//! - `STOPPING=1` when a stop begins; `STATUS=` lines on the way.
//!
//! Without `NOTIFY_SOCKET` everything here is a no-op.

pub mod health;
mod watchdog;

use std::ffi::OsStr;
use std::io;
use std::os::unix::net::UnixDatagram;
use std::sync::Arc;
use std::time::Duration;

use crate::control::ControlHandle;
use crate::stats::Stats;

pub use watchdog::WatchdogThread;

/// A connection to the service manager's notification socket.
#[derive(Debug)]
pub struct Notifier {
    sock: Option<UnixDatagram>,
}

impl Notifier {
    /// Notifications off.
    pub fn disabled() -> Notifier {
        Notifier { sock: None }
    }

    /// Connects to `path`: a filesystem path, or `@name` for a socket in
    /// the abstract namespace (as `sd_notify(3)` reads `NOTIFY_SOCKET`).
    ///
    /// # Errors
    /// When the socket cannot be created or connected.
    pub fn connect(path: &OsStr) -> io::Result<Notifier> {
        use std::os::unix::ffi::OsStrExt;
        let sock = UnixDatagram::unbound()?;
        match path.as_bytes().strip_prefix(b"@") {
            Some(name) => {
                use std::os::linux::net::SocketAddrExt;
                let addr = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
                sock.connect_addr(&addr)?;
            }
            None => sock.connect(path)?,
        }
        Ok(Notifier { sock: Some(sock) })
    }

    /// From `NOTIFY_SOCKET`; disabled (with a message) when it is unset or
    /// cannot be connected.
    pub fn from_env() -> Notifier {
        let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
            return Notifier::disabled();
        };
        Notifier::connect(&path).unwrap_or_else(|e| {
            eprintln!(
                "fwd: NOTIFY_SOCKET={}: {e}; not notifying systemd",
                path.to_string_lossy()
            );
            Notifier::disabled()
        })
    }

    pub fn enabled(&self) -> bool {
        self.sock.is_some()
    }

    /// Sends one message (newline-separated `KEY=VALUE` assignments).
    ///
    /// # Errors
    /// When the datagram cannot be sent whole.
    pub fn send(&self, msg: &str) -> io::Result<()> {
        let Some(s) = &self.sock else {
            return Ok(());
        };
        let n = s.send(msg.as_bytes())?;
        if n == msg.len() {
            Ok(())
        } else {
            Err(io::Error::new(
                io::ErrorKind::WriteZero,
                "truncated datagram",
            ))
        }
    }

    /// Sends a message; a failure is logged, never fatal.
    pub fn notify(&self, msg: &str) {
        if let Err(e) = self.send(msg) {
            eprintln!("fwd: notifying systemd ({}): {e}", first_line(msg));
        }
    }

    /// `STATUS=`: one line shown by `systemctl status`.
    pub fn status(&self, s: &str) {
        self.notify(&format!("STATUS={}", first_line(s)));
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// The watchdog period asked for, following `sd_watchdog_enabled(3)`:
/// `WATCHDOG_USEC` (positive) applies to this process unless
/// `WATCHDOG_PID` names another.
pub fn watchdog_period(usec: Option<&str>, pid: Option<&str>, me: u32) -> Option<Duration> {
    let usec: u64 = usec?.trim().parse().ok().filter(|&u| u > 0)?;
    if let Some(p) = pid {
        if p.trim().parse::<u32>().ok()? != me {
            return None;
        }
    }
    Some(Duration::from_micros(usec))
}

/// What the daemon hands over for readiness and the watchdog.
pub struct Watched {
    /// The workers' counters (their `polls` count loops).
    pub stats: Arc<Stats>,
    /// Worker names, indexed like the counters.
    pub workers: Vec<String>,
    /// Where the QSBR state (stalled readers, generation) is read.
    pub control: ControlHandle,
}

/// The daemon's side of the service manager: created first (before any
/// thread reads the environment), driven from the main loop.
pub struct Service {
    notifier: Arc<Notifier>,
    watchdog: Option<Duration>,
    watched: Option<Watched>,
    ready: bool,
    thread: Option<WatchdogThread>,
}

impl Service {
    /// From `NOTIFY_SOCKET`, `WATCHDOG_USEC` and `WATCHDOG_PID`.
    pub fn from_env() -> Service {
        let notifier = Notifier::from_env();
        let watchdog = if notifier.enabled() {
            watchdog_period(
                std::env::var("WATCHDOG_USEC").ok().as_deref(),
                std::env::var("WATCHDOG_PID").ok().as_deref(),
                std::process::id(),
            )
        } else {
            None
        };
        Service {
            notifier: Arc::new(notifier),
            watchdog,
            watched: None,
            ready: false,
            thread: None,
        }
    }

    /// `STATUS=` (a no-op without systemd).
    pub fn status(&self, s: &str) {
        self.notifier.status(s);
    }

    /// Everything is started: from now on [`Service::tick`] sends
    /// `READY=1` as soon as every worker has completed a poll loop.
    pub fn started(&mut self, w: Watched) {
        self.watched = Some(w);
    }

    /// Called from the main loop. Once every worker has polled: `READY=1`
    /// and, when systemd asked for one, the watchdog thread.
    ///
    /// # Errors
    /// When the watchdog thread cannot be spawned.
    pub fn tick(&mut self) -> io::Result<()> {
        if self.ready || !self.notifier.enabled() {
            return Ok(());
        }
        let Some(w) = &self.watched else {
            return Ok(());
        };
        if (0..w.workers.len()).any(|i| w.stats.lcore(i).polls.get() == 0) {
            return Ok(());
        }
        self.ready = true;
        let generation = w.control.status().map(|s| s.generation).unwrap_or(0);
        self.notifier.notify(&format!(
            "READY=1\nSTATUS=forwarding: {} worker(s), table generation {generation}",
            w.workers.len()
        ));
        if let (Some(period), Some(w)) = (self.watchdog, self.watched.take()) {
            self.thread = Some(WatchdogThread::start(
                Arc::clone(&self.notifier),
                period,
                w,
            )?);
        }
        Ok(())
    }

    /// A stop begins: `STOPPING=1`, and the watchdog thread is stopped
    /// and joined (the workers are about to stop on purpose).
    pub fn stopping(&mut self) {
        self.thread = None;
        self.notifier.notify("STOPPING=1\nSTATUS=stopping");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watchdog_period_follows_sd_watchdog_enabled() {
        let me = 4242;
        assert_eq!(
            watchdog_period(Some("30000000"), None, me),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            watchdog_period(Some("500000"), Some("4242"), me),
            Some(Duration::from_millis(500))
        );
        // Meant for another process, off, zero or garbage: no watchdog.
        assert_eq!(watchdog_period(Some("500000"), Some("1"), me), None);
        assert_eq!(watchdog_period(None, None, me), None);
        assert_eq!(watchdog_period(Some("0"), None, me), None);
        assert_eq!(watchdog_period(Some("-5"), None, me), None);
        assert_eq!(watchdog_period(Some("500000"), Some("x"), me), None);
    }

    #[test]
    fn notifier_sends_datagrams_to_path_and_abstract_sockets() {
        let dir = std::env::temp_dir().join(format!("fwd-sdnotify-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).unwrap();
        let path = dir.join("notify");
        let rx = UnixDatagram::bind(&path).unwrap();
        let n = Notifier::connect(path.as_os_str()).unwrap();
        n.notify("READY=1");
        n.status("one\nsecond line dropped");
        let mut buf = [0u8; 256];
        let len = rx.recv(&mut buf).unwrap();
        assert_eq!(&buf[..len], b"READY=1");
        let len = rx.recv(&mut buf).unwrap();
        assert_eq!(&buf[..len], b"STATUS=one");
        std::fs::remove_dir_all(&dir).unwrap();

        use std::os::linux::net::SocketAddrExt;
        let name = format!("fwd-sdnotify-test-{}", std::process::id());
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let rx = UnixDatagram::bind_addr(&addr).unwrap();
        let n = Notifier::connect(OsStr::new(&format!("@{name}"))).unwrap();
        n.notify("WATCHDOG=1");
        let len = rx.recv(&mut buf).unwrap();
        assert_eq!(&buf[..len], b"WATCHDOG=1");
    }

    #[test]
    fn disabled_notifier_is_silent() {
        let n = Notifier::disabled();
        assert!(!n.enabled());
        n.send("READY=1").unwrap();
    }
}
