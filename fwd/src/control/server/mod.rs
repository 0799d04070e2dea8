//! The fwdctl socket server: newline-delimited JSON over a unix socket
//! (protocol in `ctl/PROTOCOL.md`).
//!
//! - The socket is created with the configured mode and group in a
//!   directory only root can write ([`socket`]); peers are checked with
//!   `SO_PEERCRED` and `SO_PEERGROUPS`: root, the daemon's own user, or
//!   members of the socket's group.
//! - One thread per session, at most `max_clients` at once, the last slot
//!   kept for root; the next peer gets a `busy` error. Idle sessions, and
//!   request lines that do not arrive whole in time, are closed
//!   ([`session`]); each request line is bounded (`too_large`), and a large
//!   request's buffer is given back after it.
//! - Changes go to the control lcore (the single writer) and come back as a
//!   published generation or a typed error with nothing applied. Reads
//!   (dumps, stats, status) are served by the session's own thread from the
//!   last published version ([`reads`]): they never wait behind the writer.
//! - `trace` and `capture` arm the workers and stream what they record
//!   from the session's thread ([`taps`]).
//! - Stopping the server closes every session (streams end at once) and
//!   waits a bounded time for their threads.

mod low_priority;
mod reads;
mod save;
mod session;
pub mod socket;
mod taps;

use std::collections::HashMap;
use std::io::{self, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ctl::codec;
use ctl::wire::{ErrorBody, ErrorKind, HelloReply};

use super::ControlHandle;
use crate::acl;
use crate::stats::Stats;

pub use save::write_atomically;

/// How the socket is set up and bounded.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub path: PathBuf,
    pub mode: u32,
    pub group: Option<String>,
    /// Sessions at once; the last one is kept for root and the daemon's
    /// user.
    pub max_clients: usize,
    pub max_request_bytes: usize,
    /// A session with no request started for this long is closed.
    pub idle_timeout: Duration,
    /// A request (or hello) line must arrive whole within this long of its
    /// first byte; an answer must be taken within it too.
    pub request_timeout: Duration,
    /// Where `config save NAME` writes.
    pub save_dir: PathBuf,
    /// Files a peer that is not an admin may keep there.
    pub max_saved_files: usize,
}

pub use super::ports::PortMeta;

/// Shared by every connection.
pub struct ServerContext {
    pub control: ControlHandle,
    pub stats: Arc<Stats>,
    pub rule_counters: Arc<acl::CounterSet>,
    pub ports: Vec<PortMeta>,
    pub started: Instant,
    pub version: String,
    /// Link and admin events (streamed by `watch`).
    pub events: Arc<super::link::EventLog>,
    /// The TSC-derived millisecond tick the workers stamp rules with.
    pub tick_ms: Box<dyn Fn() -> u64 + Send + Sync>,
    /// The host thread's counters, when the host path is on.
    pub host: Option<Arc<crate::hostif::path::HostCounters>>,
    /// The FPM server's status (`listen` absent when FPM is off).
    pub fpm: super::fpm::SharedStatus,
    /// Where `trace` and `capture` arm the workers.
    pub taps: Arc<crate::worker::trace::Taps>,
    /// Workers (their trace rings).
    pub workers: usize,
    /// The CPU dumps run on (at the lowest priority): the control lcore's,
    /// where they get only the time the writer leaves idle
    /// ([`low_priority`], `crate::cpus::dump_cpu`). None: wherever the
    /// session runs.
    pub dump_cpu: Option<usize>,
}

/// How long stopping waits for sessions to end after closing them.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// The stop signal sessions sleep on (`watch`), so a stop wakes them.
#[derive(Default)]
pub(crate) struct Shutdown {
    stopped: Mutex<bool>,
    cv: Condvar,
}

impl Shutdown {
    pub(crate) fn set(&self) {
        *self.stopped.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.cv.notify_all();
    }

    pub(crate) fn is_set(&self) -> bool {
        *self.stopped.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sleeps `d` or until stopped; true when stopped.
    pub(crate) fn wait(&self, d: Duration) -> bool {
        let g = self.stopped.lock().unwrap_or_else(PoisonError::into_inner);
        let (g, _) = self
            .cv
            .wait_timeout_while(g, d, |stopped| !*stopped)
            .unwrap_or_else(PoisonError::into_inner);
        *g
    }
}

/// The open sessions, by number, with a handle on each stream to close it.
#[derive(Default)]
struct Sessions {
    next: u64,
    open: HashMap<u64, UnixStream>,
}

/// Everything the accept loop and the sessions share.
pub(crate) struct Shared {
    ctx: ServerContext,
    cfg: ServerConfig,
    policy: socket::Policy,
    sessions: Mutex<Sessions>,
    /// Signalled when a session ends.
    ended: Condvar,
    shutdown: Shutdown,
}

impl Shared {
    fn sessions(&self) -> std::sync::MutexGuard<'_, Sessions> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sessions open now.
    pub(crate) fn clients(&self) -> u32 {
        self.sessions().open.len() as u32
    }

    fn leave(&self, id: u64) {
        self.sessions().open.remove(&id);
        self.ended.notify_all();
    }
}

/// The running server; dropping it stops accepting, closes every session
/// and removes the socket.
pub struct Server {
    path: PathBuf,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shared.shutdown.set();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let mut s = self.shared.sessions();
        for stream in s.open.values() {
            // Blocked reads see end of file, writes fail: every session ends.
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
        let deadline = Instant::now() + STOP_GRACE;
        while !s.open.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                eprintln!(
                    "fwd: {} control session(s) still busy after {STOP_GRACE:?}; not waiting",
                    s.open.len()
                );
                break;
            }
            s = self
                .shared
                .ended
                .wait_timeout(s, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        drop(s);
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The socket, created and listening, before the server starts: the
/// daemon binds it before it touches a port, so a bad path fails fast.
/// Dropped unstarted, it removes the socket.
pub struct Bound {
    listener: Option<UnixListener>,
    cfg: ServerConfig,
    gid: Option<u32>,
    own_uid: u32,
}

impl Drop for Bound {
    fn drop(&mut self) {
        if self.listener.take().is_some() {
            let _ = std::fs::remove_file(&self.cfg.path);
        }
    }
}

/// Creates the socket (see [`socket`]).
///
/// # Errors
/// Another daemon already listening on the path, something else at the
/// path, an insecure directory, an unknown group, or the OS error of
/// creating the socket.
pub fn bind(cfg: ServerConfig) -> io::Result<Bound> {
    let gid = match &cfg.group {
        None => None,
        Some(name) => Some(
            nix::unistd::Group::from_name(name)
                .map_err(io::Error::from)?
                .ok_or_else(|| {
                    io::Error::new(io::ErrorKind::NotFound, format!("no group named {name:?}"))
                })?
                .gid
                .as_raw(),
        ),
    };
    let own_uid = nix::unistd::geteuid().as_raw();
    let listener = socket::bind(&cfg.path, cfg.mode, gid, own_uid)?;
    listener.set_nonblocking(true)?;
    Ok(Bound {
        listener: Some(listener),
        cfg,
        gid,
        own_uid,
    })
}

/// Starts accepting on a bound socket.
///
/// # Errors
/// The OS error of spawning the accept thread.
pub fn start(mut b: Bound, ctx: ServerContext) -> io::Result<Server> {
    let listener = b.listener.take().expect("a bound socket has its listener");
    let shared = Arc::new(Shared {
        ctx,
        cfg: b.cfg.clone(),
        policy: socket::Policy {
            own_uid: b.own_uid,
            gid: b.gid,
        },
        sessions: Mutex::default(),
        ended: Condvar::new(),
        shutdown: Shutdown::default(),
    });
    let sh = Arc::clone(&shared);
    let thread = std::thread::Builder::new()
        .name("fwd-ctl-accept".into())
        .spawn(move || accept_loop(&sh, &listener));
    let thread = match thread {
        Ok(t) => t,
        Err(e) => {
            let _ = std::fs::remove_file(&b.cfg.path);
            return Err(e);
        }
    };
    Ok(Server {
        path: b.cfg.path.clone(),
        shared,
        thread: Some(thread),
    })
}

fn accept_loop(sh: &Arc<Shared>, listener: &UnixListener) {
    while !sh.shutdown.is_set() {
        match listener.accept() {
            Ok((stream, _)) => admit(sh, stream),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => {
                eprintln!("fwd: control socket accept: {e}");
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}

/// Answers a peer that may not have a session, and closes.
fn refuse(mut stream: &UnixStream, e: ErrorBody) {
    let mut line = Vec::new();
    if codec::write_line(&mut line, &HelloReply::Error(e)).is_ok() {
        let _ = stream.write_all(&line);
    }
}

/// Checks a new peer and gives it a session, or refuses it; never blocks
/// on the peer.
fn admit(sh: &Arc<Shared>, stream: UnixStream) {
    let setup = stream
        .set_nonblocking(false)
        .and_then(|()| stream.set_write_timeout(Some(sh.cfg.request_timeout)));
    let peer = match setup.and_then(|()| socket::peer(&stream)) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("fwd: control socket: cannot read the peer's credentials: {e}");
            return;
        }
    };
    if !sh.policy.allows(&peer) {
        let e = ErrorBody::new(
            ErrorKind::PermissionDenied,
            format!(
                "uid {} (gid {}, groups {:?}) may not use this daemon",
                peer.uid, peer.gid, peer.groups
            ),
        );
        return refuse(&stream, e);
    }
    let admin = sh.policy.is_admin(&peer);
    let max = sh.cfg.max_clients;
    let limit = if admin { max } else { max.saturating_sub(1) };
    let id = {
        let mut s = sh.sessions();
        if s.open.len() >= limit {
            drop(s);
            let e = ErrorBody::new(
                ErrorKind::Busy,
                format!("too many clients (at most {max}, the last one kept for root)"),
            );
            return refuse(&stream, e);
        }
        let Ok(handle) = stream.try_clone() else {
            return;
        };
        let id = s.next;
        s.next += 1;
        s.open.insert(id, handle);
        id
    };
    let sh2 = Arc::clone(sh);
    let spawned = std::thread::Builder::new()
        .name("fwd-ctl-conn".into())
        .spawn(move || {
            let _ = session::run(&sh2, stream, admin);
            sh2.leave(id);
        });
    if spawned.is_err() {
        sh.leave(id);
    }
}
