//! The FPM server: FRR's zebra (`zebra -M dplane_fpm_nl`) connects over TCP
//! and streams the routes it selected as netlink messages; they become
//! table generations.
//!
//! Two halves:
//! - a thread of its own ([`start`]) accepts zebra, reads, decodes
//!   ([`crate::fpm::codec`]) and translates: zebra's table to ours
//!   (`fpm.tables`), interface index to port (the host interfaces), and
//!   netlink route types to targets. Whatever one read returned becomes
//!   *one* request to the control lcore, so a burst of 10,000 routes is one
//!   generation, never 10,000. At most one batch is in flight: the thread
//!   reads and decodes the next while the control lcore applies one, then
//!   waits for it before handing over the next. The socket buffer absorbs
//!   zebra meanwhile, and the next read is a larger batch (the batching
//!   adapts to the load).
//! - [`FpmControl`], owned by the control lcore, keeps what zebra holds
//!   ([`FpmRib`]) and applies batches through [`super::state::apply_fpm`].
//!
//! Precedence: zebra's routes give way to every other route at the same
//! prefix (the operator's, from the config or `fwdctl`, and the connected
//! and local routes of the appliance's addresses). Zebra's route waits
//! beneath and comes back when the other goes. An operator can override
//! a route zebra installed with `route add`/`route replace`, but cannot
//! delete it (zebra owns it; withdraw it in FRR).
//!
//! Who may connect: FPM has no authentication, and anyone who can open a
//! TCP connection to the listener could install routes. The server looks
//! up the connecting socket's owner in the kernel's socket table
//! (`/proc/self/net/tcp[6]`, the daemon's own network namespace) and
//! accepts only `fpm.allowed_users` (default: root and `frr`, the user
//! Debian's FRR runs as); others are refused and logged. The listener
//! should stay on loopback.
//!
//! Restarts (mark and sweep): FPM has no end-of-replay marker, and a
//! restarted zebra first connects with an empty table and receives the
//! daemons' routes over the following seconds. So when zebra (re)connects,
//! every route it held becomes *stale* but stays installed; each route it
//! sends again is fresh. `fpm.stale_ms` after the connection (default 60 s,
//! like BGP graceful restart's restart time), the routes still stale are
//! withdrawn in one generation. Traffic keeps flowing over the old routes
//! in between; zebra going away without coming back changes nothing.

use std::collections::HashMap;
use std::io::{self, Read};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rustc_hash::FxHashMap;

use ctl::wire::FpmStatus;

use super::state::{self, FpmOp};
use super::ControlHandle;
use crate::acl;
use crate::fpm::codec::{Decoder, FpmMsg, RouteKind, RouteOp, RouteUpdate};
use crate::fpm::rib::{FpmPath, FpmRib, FpmTarget};
use crate::qsbr::Writer;
use crate::route::{Prefix, Prefix4, Prefix6, Vrf};
use crate::tables::Tables;

/// `fpm:` in the config, resolved.
#[derive(Clone, Debug)]
pub struct FpmSettings {
    pub listen: SocketAddr,
    /// How long after zebra (re)connects the routes it did not send again
    /// are withdrawn.
    pub stale: Duration,
    /// zebra's table ids to ours.
    pub tables: HashMap<u32, Vrf>,
    /// Users whose sockets may connect; `None`: anyone.
    pub allowed_uids: Option<Vec<u32>>,
}

/// The status `fpm show` reports, written by both halves.
pub type SharedStatus = Arc<Mutex<FpmStatus>>;

fn status(s: &SharedStatus) -> std::sync::MutexGuard<'_, FpmStatus> {
    s.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What the FPM thread asks of the control lcore.
pub enum FpmEvent {
    /// zebra connected: a new session (epoch) begins.
    Connected,
    /// One read's worth of route changes.
    Batch(Vec<FpmOp>),
}

/// The control lcore's half.
pub struct FpmControl {
    rib: FpmRib,
    stale: Duration,
    sweep_at: Option<Instant>,
    shared: SharedStatus,
}

impl FpmControl {
    pub fn new(settings: &FpmSettings, shared: SharedStatus) -> FpmControl {
        FpmControl {
            rib: FpmRib::new(),
            stale: settings.stale,
            sweep_at: None,
            shared,
        }
    }

    /// zebra's routes, for batches of other origins (see the module doc).
    pub fn rib(&self) -> &FpmRib {
        &self.rib
    }

    /// Serves one event; publishes what changed.
    pub fn event(
        &mut self,
        ev: FpmEvent,
        writer: &mut Writer<Tables>,
        acl_w: &acl::ClassifierWriter,
        now: Instant,
    ) {
        match ev {
            FpmEvent::Connected => {
                let stale = self.rib.new_session();
                self.sweep_at = (stale > 0).then(|| now + self.stale);
                if stale > 0 {
                    eprintln!(
                        "fwd: fpm: zebra connected; {stale} routes of the previous session \
                         stay until replayed or swept in {} ms",
                        self.stale.as_millis()
                    );
                }
            }
            FpmEvent::Batch(ops) => self.apply(ops, writer, acl_w),
        }
        self.report(writer.current());
    }

    /// Sweeps the routes zebra did not send again, when due.
    pub fn poll(&mut self, writer: &mut Writer<Tables>, acl_w: &acl::ClassifierWriter) {
        if self.sweep_at.is_none_or(|t| Instant::now() < t) {
            return;
        }
        self.sweep_at = None;
        let ops: Vec<FpmOp> = self
            .rib
            .stale()
            .map(|(vrf, prefix)| FpmOp::Del { vrf, prefix })
            .collect();
        let n = ops.len() as u64;
        if n > 0 {
            eprintln!("fwd: fpm: sweeping {n} routes zebra did not replay");
            self.apply(ops, writer, acl_w);
            status(&self.shared).swept += n;
        }
        self.report(writer.current());
    }

    fn apply(
        &mut self,
        ops: Vec<FpmOp>,
        writer: &mut Writer<Tables>,
        acl_w: &acl::ClassifierWriter,
    ) {
        let n = ops.len();
        let (tables, done) = state::apply_fpm(writer.current(), acl_w, &mut self.rib, ops);
        if let Some(t) = tables {
            writer.publish(t, n * 64);
        }
        let mut s = status(&self.shared);
        s.batches += 1;
        s.routes_added += done.added;
        s.routes_deleted += done.deleted;
        s.refused += done.refused;
        if done.last_error.is_some() {
            s.last_error = done.last_error;
        }
    }

    /// Brings `fpm show` up to date with `t` (after any change: an
    /// operator's route can move one of zebra's in or out of the FIB).
    pub fn report(&self, t: &Tables) {
        let installed = t.routing.fpm_route_count() as u64;
        let stale = if self.sweep_at.is_some() {
            self.rib.stale_count() as u64
        } else {
            0
        };
        let mut s = status(&self.shared);
        s.routes = self.rib.len() as u64;
        s.installed = installed;
        s.stale = stale;
        s.sweep_in_ms = self
            .sweep_at
            .map(|t| t.saturating_duration_since(Instant::now()).as_millis() as u64);
    }
}

/// The running FPM thread (stopped and joined when dropped).
pub type FpmServer = crate::thread::StoppableThread;

/// How often the thread looks at its stop flag while idle.
const TICK: Duration = Duration::from_millis(100);

/// The shortest route message: FPM's header (4 bytes), netlink's (16), the
/// `rtmsg` (12) and an IPv4 destination (8), a delete.
const MIN_ROUTE_MSG: usize = 40;

/// Bytes taken per read: one batch at most.
const READ_CHUNK: usize = 1 << 20;

/// Binds `settings.listen` and starts the FPM thread. `ifindex` maps the
/// host interfaces' indexes to ports.
///
/// # Errors
/// When the address cannot be bound or the thread not spawned.
pub fn start(
    settings: &FpmSettings,
    control: ControlHandle,
    ifindex: HashMap<u32, u16>,
    shared: SharedStatus,
) -> io::Result<FpmServer> {
    let listener = TcpListener::bind(settings.listen)?;
    listener.set_nonblocking(true)?;
    status(&shared).listen = Some(listener.local_addr()?.to_string());
    let tr = Translate::new(settings.tables.clone(), ifindex);
    let allowed = settings.allowed_uids.clone();
    FpmServer::spawn("fwd-fpm", move |stop| {
        Server {
            listener: &listener,
            allowed: allowed.as_deref(),
            control: &control,
            tr: &tr,
            shared: &shared,
            stop,
        }
        .serve()
    })
}

/// What the FPM thread works with.
struct Server<'a> {
    listener: &'a TcpListener,
    /// Users whose sockets may connect (`None`: anyone).
    allowed: Option<&'a [u32]>,
    control: &'a ControlHandle,
    tr: &'a Translate,
    shared: &'a SharedStatus,
    stop: &'a AtomicBool,
}

impl Server<'_> {
    fn serve(&self) {
        let (control, shared, stop) = (self.control, self.shared, self.stop);
        let mut next = None;
        // Relaxed: see `StoppableThread::drop`.
        while !stop.load(Ordering::Relaxed) {
            let Some((conn, peer)) = next.take().or_else(|| self.accept()) else {
                std::thread::sleep(TICK);
                continue;
            };
            {
                let mut s = status(shared);
                s.connects += 1;
                s.peer = Some(peer.to_string());
            }
            eprintln!("fwd: fpm: zebra connected from {peer}");
            if control.fpm(FpmEvent::Connected).is_err() {
                return;
            }
            let (why, newer) = self.session(conn);
            eprintln!("fwd: fpm: zebra {peer} gone: {why}");
            status(shared).peer = None;
            next = newer;
        }
    }

    /// A pending connection from an allowed user, if any (never blocks).
    /// Others are closed at once, logged and reported in `last_error`.
    fn accept(&self) -> Option<(TcpStream, SocketAddr)> {
        let (listener, allowed, shared) = (self.listener, self.allowed, self.shared);
        loop {
            let (conn, peer) = match listener.accept() {
                Ok(c) => c,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return None,
                Err(e) => {
                    eprintln!("fwd: fpm: accept: {e}");
                    return None;
                }
            };
            let Some(uids) = allowed else {
                return Some((conn, peer));
            };
            let uid = conn.local_addr().ok().and_then(|l| peer_uid(l, peer));
            if uid.is_some_and(|u| uids.contains(&u)) {
                return Some((conn, peer));
            }
            let who = uid.map_or_else(|| "an unknown user".into(), |u| format!("uid {u}"));
            eprintln!("fwd: fpm: refused {peer}, owned by {who} (fpm.allowed_users)");
            status(shared).last_error = Some(format!("refused a connection from {peer} ({who})"));
        }
    }

    /// Serves one connection until it ends; returns why, and the connection
    /// that replaced it, if one did: a zebra that restarted before its old
    /// connection was seen closing connects anew, and the newest one wins.
    fn session(&self, mut conn: TcpStream) -> (String, Option<(TcpStream, SocketAddr)>) {
        let (control, tr, shared, stop) = (self.control, self.tr, self.shared, self.stop);
        if let Err(e) = conn
            .set_nonblocking(false)
            .and_then(|()| conn.set_read_timeout(Some(TICK)))
        {
            return (e.to_string(), None);
        }
        let mut ingest = Ingest::new(tr);
        let mut pending: Option<std::sync::mpsc::Receiver<()>> = None;
        let mut buf = vec![0u8; READ_CHUNK];
        // Relaxed: see `StoppableThread::drop`.
        while !stop.load(Ordering::Relaxed) {
            if let Some(newer) = self.accept() {
                return ("replaced by a new connection".into(), Some(newer));
            }
            let n = match conn.read(&mut buf) {
                Ok(0) => return ("connection closed".into(), None),
                Ok(n) => n,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    continue
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return (e.to_string(), None),
            };
            let b = ingest.feed(&buf[..n]);
            {
                let mut s = status(shared);
                s.messages += b.messages;
                s.ignored += b.ignored;
                s.refused += b.refused;
                if let Some(e) = b.last_error.clone() {
                    s.last_error = Some(e);
                }
            }
            if let Some(e) = b.broken {
                return (format!("undecodable stream: {e}"), None);
            }
            if !b.ops.is_empty() {
                // One batch in flight: this thread reads and decodes the next
                // while the control lcore applies this one, and waits for it
                // before handing over another (order kept, backpressure kept).
                let waited = pending.take().is_none_or(|p| p.recv().is_ok());
                match control.fpm_start(FpmEvent::Batch(b.ops)) {
                    Ok(p) if waited => pending = Some(p),
                    _ => return ("the control lcore has stopped".into(), None),
                }
            }
        }
        ("stopping".into(), None)
    }
}

/// What one read of the stream gave.
#[derive(Default)]
pub struct Chunk {
    /// The route changes, in order: one table generation.
    pub ops: Vec<FpmOp>,
    pub messages: u64,
    pub ignored: u64,
    pub refused: u64,
    pub last_error: Option<String>,
    /// The stream cannot be decoded further (the connection must close).
    pub broken: Option<String>,
}

/// Bytes to route changes: the decoder and the translation, as the FPM
/// thread runs them (public for the ingest benchmark).
pub struct Ingest<'a> {
    dec: Decoder,
    tr: &'a Translate,
}

impl<'a> Ingest<'a> {
    pub fn new(tr: &'a Translate) -> Ingest<'a> {
        Ingest {
            dec: Decoder::new(),
            tr,
        }
    }

    /// Takes the bytes of one read; returns every complete message's change.
    pub fn feed(&mut self, bytes: &[u8]) -> Chunk {
        self.dec.feed(bytes);
        // Room for as many changes as the read can hold, so that the list
        // is not grown by copies: each large reallocation made glibc sort
        // every block this thread's heap had freed since into its bins
        // first (in `bench_fpm`, one thread, the last generation's table
        // nodes). There that took this thread's share of a deleted route
        // from 0.44 to 0.23 us in random order (0.14 to 0.13 in table
        // order), though part of it moved to the apply on the same thread
        // (`bench-results/fpm.md`, 2026-12-07).
        let mut r = Chunk {
            ops: Vec::with_capacity(bytes.len() / MIN_ROUTE_MSG + 1),
            ..Chunk::default()
        };
        loop {
            match self.dec.next() {
                Ok(None) => break,
                Ok(Some(FpmMsg::Route(u))) => {
                    r.messages += 1;
                    match self.tr.op(&u) {
                        Ok(Some(op)) => r.ops.push(op),
                        Ok(None) => r.ignored += 1,
                        Err(e) => {
                            r.refused += 1;
                            r.last_error = Some(e);
                        }
                    }
                }
                Ok(Some(_)) => {
                    r.messages += 1;
                    r.ignored += 1;
                }
                Err(e) if e.is_fatal() => {
                    r.last_error = Some(format!("stream: {e}"));
                    r.broken = Some(e.to_string());
                    break;
                }
                Err(e) => {
                    r.messages += 1;
                    r.refused += 1;
                    r.last_error = Some(e.to_string());
                }
            }
        }
        r
    }
}

/// zebra's names to ours.
pub struct Translate {
    // Fx, not SipHash: looked up for every route (two SipHash lookups were
    // ~170 instructions a route, a twentieth of the ingest), and the keys
    // are the operator's table ids and the host's interface indexes.
    tables: FxHashMap<u32, Vrf>,
    ifindex: FxHashMap<u32, u16>,
}

impl Translate {
    /// `tables`: zebra's table ids to ours; `ifindex`: the host interfaces'
    /// indexes to ports.
    pub fn new(tables: HashMap<u32, Vrf>, ifindex: HashMap<u32, u16>) -> Translate {
        Translate {
            tables: tables.into_iter().collect(),
            ifindex: ifindex.into_iter().collect(),
        }
    }

    /// `None` for what the FIB never uses: IPv6 link-local prefixes
    /// (zebra sends each interface's fe80::/64; link-local destinations
    /// are not forwarded).
    fn op(&self, u: &RouteUpdate) -> Result<Option<FpmOp>, String> {
        let prefix = prefix(u.dst, u.len)?;
        if let IpAddr::V6(a) = u.dst {
            if u.len >= 10 && a.segments()[0] & 0xffc0 == 0xfe80 {
                return Ok(None);
            }
        }
        let Some(&vrf) = self.tables.get(&u.table) else {
            return Err(format!(
                "{}/{}: zebra table {} is not in fpm.tables",
                u.dst, u.len, u.table
            ));
        };
        if u.op == RouteOp::Del {
            return Ok(Some(FpmOp::Del { vrf, prefix }));
        }
        let target = match u.kind {
            RouteKind::Blackhole => FpmTarget::Blackhole,
            RouteKind::Unreachable | RouteKind::Prohibit => FpmTarget::Reject,
            RouteKind::Unicast if u.nh_id.is_some() && u.paths.is_empty() => {
                return Err(format!(
                    "{}/{}: next-hop group objects are not supported; \
                     configure zebra with `no fpm use-next-hop-groups`",
                    u.dst, u.len
                ))
            }
            RouteKind::Unicast
                if u.paths
                    .iter()
                    .any(|p| p.onlink && p.gateway == Some(IpAddr::from([169, 254, 0, 1]))) =>
            {
                return Err(format!(
                    "{}/{}: IPv6 next hops for IPv4 routes (RFC 5549, BGP unnumbered) \
                     are not supported",
                    u.dst, u.len
                ))
            }
            RouteKind::Unicast if !u.paths.is_empty() => {
                let mut paths: Vec<FpmPath> = u
                    .paths
                    .iter()
                    .map(|p| FpmPath {
                        gateway: p.gateway,
                        port: p.ifindex.and_then(|i| self.ifindex.get(&i).copied()),
                        weight: p.weight.max(1),
                    })
                    .collect();
                paths.sort();
                FpmTarget::Paths(paths)
            }
            RouteKind::Unicast => {
                return Err(format!("{}/{}: a route without paths", u.dst, u.len))
            }
            RouteKind::Unspec => {
                return Err(format!("{}/{}: an add without a route type", u.dst, u.len))
            }
            RouteKind::Other(t) => {
                return Err(format!(
                    "{}/{}: route type {t} is not supported",
                    u.dst, u.len
                ))
            }
        };
        Ok(Some(FpmOp::Set {
            vrf,
            prefix,
            target,
            proto: u.proto,
        }))
    }
}

/// The owner of the TCP socket at `peer` connected to our `local`, from
/// the kernel's socket table of this namespace.
pub fn peer_uid(local: SocketAddr, peer: SocketAddr) -> Option<u32> {
    let file = if peer.is_ipv4() {
        "/proc/self/net/tcp"
    } else {
        "/proc/self/net/tcp6"
    };
    let table = std::fs::read_to_string(file).ok()?;
    // Seen from the peer's socket: its local address is `peer`, its
    // remote address is ours.
    let (want_local, want_remote) = (proc_addr(peer), proc_addr(local));
    table.lines().skip(1).find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.get(1) == Some(&want_local.as_str()) && f.get(2) == Some(&want_remote.as_str()))
            .then(|| f.get(7)?.parse().ok())
            .flatten()
    })
}

/// An address as `/proc/net/tcp[6]` prints it: each 32-bit word of the
/// address in host byte order, in hex, then `:PORT`.
fn proc_addr(a: SocketAddr) -> String {
    let words: Vec<[u8; 4]> = match a.ip() {
        IpAddr::V4(v) => vec![v.octets()],
        IpAddr::V6(v) => v
            .octets()
            .chunks(4)
            .map(|c| [c[0], c[1], c[2], c[3]])
            .collect(),
    };
    let mut s: String = words
        .iter()
        .map(|w| format!("{:08X}", u32::from_ne_bytes(*w)))
        .collect();
    s += &format!(":{:04X}", a.port());
    s
}

fn prefix(dst: IpAddr, len: u8) -> Result<Prefix, String> {
    match dst {
        IpAddr::V4(a) => Prefix4::new(u32::from(a), len).map(Prefix::V4),
        IpAddr::V6(a) => Prefix6::new(u128::from(a), len).map(Prefix::V6),
    }
    .map_err(|e| format!("{dst}/{len}: {e}"))
}

#[cfg(test)]
mod peer_tests {
    use super::*;

    #[test]
    fn the_owner_of_a_loopback_connection_is_found() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, peer) = l.accept().unwrap();
        assert_eq!(peer, c.local_addr().unwrap());
        let me = nix::unistd::geteuid().as_raw();
        assert_eq!(peer_uid(s.local_addr().unwrap(), peer), Some(me));
        // Not a connection of ours: nothing.
        let other: SocketAddr = "127.0.0.1:1".parse().unwrap();
        assert_eq!(peer_uid(s.local_addr().unwrap(), other), None);
        let l6 = match TcpListener::bind("[::1]:0") {
            Ok(l) => l,
            Err(_) => return, // no IPv6 loopback here
        };
        let c6 = TcpStream::connect(l6.local_addr().unwrap()).unwrap();
        let (s6, p6) = l6.accept().unwrap();
        assert_eq!(p6, c6.local_addr().unwrap());
        assert_eq!(peer_uid(s6.local_addr().unwrap(), p6), Some(me));
    }

    #[test]
    fn proc_addresses_are_written_as_the_kernel_does() {
        assert_eq!(
            proc_addr("127.0.0.1:2620".parse().unwrap()),
            "0100007F:0A3C"
        );
        assert_eq!(
            proc_addr("[::1]:179".parse().unwrap()),
            "00000000000000000000000001000000:00B3"
        );
    }
}
