//! The control lcore: the single writer of every table.
//!
//! A thread pinned (core_affinity) to a CPU that polls no queue owns the
//! [`Writer`] and the classifier's writer. The management side (the
//! fwdctl socket server, the startup config) sends it [`Request`]s over a
//! channel; it applies each batch of changes to the current version
//! ([`state::apply`]: all or nothing), publishes the result as one new
//! generation, and reclaims what older versions held once every worker has
//! reported quiescence -- after each publish and on a timer, never blocking
//! per change. After each publish it posts the new root (a clone: a few
//! `Arc` increments), its versioning state and the neighbour table on a
//! [`Board`] readers take them from: a dump or a status runs on the
//! reader's thread from the last published version, and never waits behind
//! a long batch.

pub mod convert;
pub mod fpm;
#[cfg(test)]
mod fpm_tests;
mod heap;
pub mod link;
pub mod neigh;
pub mod ports;
pub mod ra;
pub mod saved;
#[cfg(test)]
mod saved_tests;
pub mod server;
mod setup;
mod state;

pub use convert::routes::{route_to_wire, target_to_wire, RouteSelector};
pub use convert::rules::{rule_from_wire, rule_to_wire};
pub use convert::{host_prefix, ifaddr_of, net_of, net_of_ifaddr, prefix_of};
pub use setup::{
    check_tables, config_changes, initial_tables, load, parse_saved, read_saved, Saved, Startup,
};
pub use state::{apply as apply_changes, apply_learned, USER_MAX_ID};

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use ctl::wire::{Change, Done, ErrorBody, ErrorKind};

use crate::acl;
use crate::qsbr::{QsbrStats, Writer};
use crate::tables::Tables;

/// What the management side can ask of the control lcore.
pub enum Request {
    /// Apply changes as one generation; the reply is what was published or
    /// the error of the first failing change (tables untouched).
    Apply(Vec<Change>, Sender<Result<Done, ErrorBody>>),
    /// Stop: the loop ends and hands its state back.
    Stop,
    /// Forget learned neighbours (of one port); published as a generation.
    NeighFlush(Option<u16>, Sender<Result<Done, ErrorBody>>),
    /// From the FPM thread; answered once applied.
    Fpm(fpm::FpmEvent, Sender<()>),
    /// A reader's [`Snapshot`], given back to be dropped here (see there).
    Release(Tables),
}

/// A reader's copy of the last published tables. Dropped, it goes back to
/// the control lcore, which drops it between its own turns.
///
/// A reader's copy may be the last to hold a version the writer has moved
/// on from (a dump of the full view that outlives a batch), and dropping
/// that frees what only it held, under the lock of the tables' lineage
/// (`route::larc`) that the writer takes for its next copy. Dropped on a
/// dump's thread, which runs under SCHED_IDLE (`server::low_priority`),
/// the free would hold that lock at the lowest priority there is: any other
/// thread ready on that CPU (the FPM thread, a session, a process of the
/// box) would keep the lock holder off the CPU while the writer waits for
/// it. Given back, the free is the writer's own, at its priority, as it
/// would have been had no reader held the version; a reader's copy never
/// takes that lock.
pub struct Snapshot {
    tables: Option<Tables>,
    to_writer: Sender<Request>,
}

impl std::ops::Deref for Snapshot {
    type Target = Tables;

    fn deref(&self) -> &Tables {
        match &self.tables {
            Some(t) => t,
            None => unreachable!("taken only by drop"),
        }
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        if let Some(t) = self.tables.take() {
            // The control lcore has stopped: no writer to wait, so it goes
            // here (with the failed send).
            let _ = self.to_writer.send(Request::Release(t));
        }
    }
}

/// The neighbour table as `neigh show` reports it.
#[derive(Clone, Debug, Default)]
pub struct NeighReport {
    pub entries: Vec<crate::neigh::EntryView>,
    pub held: usize,
    pub counters: neigh::NeighCounters,
}

/// What the control lcore last published, posted for readers.
struct Board {
    tables: Mutex<(u64, Tables)>,
    status: Mutex<QsbrStats>,
    neigh: Mutex<NeighReport>,
}

/// How often the versioning state and the neighbour table are posted when
/// nothing is published (reclamation and neighbour state move on their
/// own).
const POST_INTERVAL: Duration = Duration::from_millis(50);

fn neigh_report(st: &ControlState) -> NeighReport {
    st.neigh
        .as_ref()
        .map_or_else(NeighReport::default, |d| NeighReport {
            entries: d.entries(),
            held: d.held(),
            counters: d.counters,
        })
}

impl Board {
    fn new(st: &ControlState) -> Board {
        Board {
            tables: Mutex::new((st.writer.generation(), st.writer.current().clone())),
            status: Mutex::new(st.writer.stats()),
            neigh: Mutex::new(neigh_report(st)),
        }
    }

    /// Posts the current version and its versioning state when it is newer
    /// than the posted one, and the rest too when `all`.
    fn post(&self, st: &ControlState, all: bool) {
        let g = st.writer.generation();
        let newer = {
            let mut t = self.tables.lock().unwrap_or_else(PoisonError::into_inner);
            let newer = t.0 != g;
            if newer {
                *t = (g, st.writer.current().clone());
            }
            newer
        };
        if newer && !all {
            *self.status.lock().unwrap_or_else(PoisonError::into_inner) = st.writer.stats();
        }
        if all {
            *self.status.lock().unwrap_or_else(PoisonError::into_inner) = st.writer.stats();
            *self.neigh.lock().unwrap_or_else(PoisonError::into_inner) = neigh_report(st);
        }
    }
}

/// The management side's handle on the control lcore.
#[derive(Clone)]
pub struct ControlHandle {
    tx: Sender<Request>,
    board: Arc<Board>,
}

fn stopped() -> ErrorBody {
    ErrorBody::new(ErrorKind::Internal, "the control lcore has stopped")
}

impl ControlHandle {
    /// Applies `changes` as one generation.
    ///
    /// # Errors
    /// The first failing change (1-based `index`), nothing applied.
    pub fn apply(&self, changes: Vec<Change>) -> Result<Done, ErrorBody> {
        let (tx, rx) = mpsc::channel();
        self.tx
            .send(Request::Apply(changes, tx))
            .map_err(|_| stopped())?;
        rx.recv().map_err(|_| stopped())?
    }

    /// The last published tables and their generation (never waits for
    /// the writer). Dropped, the copy goes back to the control lcore (see
    /// [`Snapshot`]).
    ///
    /// # Errors
    /// None today; kept so callers need not change if reads ever can fail.
    pub fn snapshot(&self) -> Result<(u64, Snapshot), ErrorBody> {
        let (generation, tables) = self
            .board
            .tables
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        Ok((
            generation,
            Snapshot {
                tables: Some(tables),
                to_writer: self.tx.clone(),
            },
        ))
    }

    /// Versioning state, as last posted (at most [`POST_INTERVAL`] old, and
    /// current after every change this handle applied).
    ///
    /// # Errors
    /// See [`ControlHandle::snapshot`].
    pub fn status(&self) -> Result<QsbrStats, ErrorBody> {
        Ok(self
            .board
            .status
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone())
    }

    /// The neighbour table, as last posted (at most [`POST_INTERVAL`] old).
    ///
    /// # Errors
    /// See [`ControlHandle::snapshot`].
    pub fn neighbours(&self) -> Result<NeighReport, ErrorBody> {
        Ok(self
            .board
            .neigh
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone())
    }

    /// Hands an FPM event over and waits until it is applied.
    ///
    /// # Errors
    /// When the control lcore has stopped.
    pub fn fpm(&self, ev: fpm::FpmEvent) -> Result<(), ErrorBody> {
        self.fpm_start(ev)?.recv().map_err(|_| stopped())
    }

    /// Hands an FPM event over; the receiver answers once it is applied.
    ///
    /// # Errors
    /// When the control lcore has stopped.
    pub fn fpm_start(&self, ev: fpm::FpmEvent) -> Result<Receiver<()>, ErrorBody> {
        let (tx, rx) = mpsc::channel();
        self.tx.send(Request::Fpm(ev, tx)).map_err(|_| stopped())?;
        Ok(rx)
    }

    /// Forgets learned neighbours, of port `port` or all.
    ///
    /// # Errors
    /// When the control lcore has stopped.
    pub fn neigh_flush(&self, port: Option<u16>) -> Result<Done, ErrorBody> {
        let (tx, rx) = mpsc::channel();
        self.tx
            .send(Request::NeighFlush(port, tx))
            .map_err(|_| stopped())?;
        rx.recv().map_err(|_| stopped())?
    }
}

/// Everything the control lcore owns.
pub struct ControlState {
    pub writer: Writer<Tables>,
    pub acl: acl::ClassifierWriter,
    /// Rule counters: slots are zeroed before reuse.
    pub counters: Arc<acl::CounterSet>,
    /// Neighbour resolution, when the data path hands packets over.
    pub neigh: Option<neigh::NeighDriver>,
    /// Port carriers, when there are real ports to read.
    pub links: Option<link::LinkMonitor>,
    /// Link and admin events, for the log and `fwdctl watch`.
    pub events: Arc<link::EventLog>,
    /// zebra's routes, when FPM is on.
    pub fpm: Option<fpm::FpmControl>,
}

/// Classifier slots whose last referencing version was reclaimed. Filled by
/// the drop of a retired token (on the writer's thread, inside `reclaim`),
/// drained right after by the control loop.
type Released = Arc<Mutex<Vec<acl::Slot>>>;

struct SlotToken {
    slots: Vec<acl::Slot>,
    released: Released,
}

impl Drop for SlotToken {
    fn drop(&mut self) {
        self.released
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .append(&mut self.slots);
    }
}

/// The running control lcore. Dropped without [`ControlLcore::stop`] (an
/// early error return), it still stops and joins the thread, so nothing
/// it drives (link polling, neighbour probes) outlives the ports.
pub struct ControlLcore {
    handle: ControlHandle,
    thread: Option<JoinHandle<ControlState>>,
}

impl Drop for ControlLcore {
    fn drop(&mut self) {
        if let Some(t) = self.thread.take() {
            let _ = self.handle.tx.send(Request::Stop);
            let _ = t.join();
        }
    }
}

/// How often the control lcore reclaims when no request arrives.
pub const RECLAIM_INTERVAL: Duration = Duration::from_millis(5);
/// How often it serves the neighbour side (the workers' queues, timers):
/// the added latency of a first packet to an unresolved neighbour.
pub const NEIGH_INTERVAL: Duration = Duration::from_millis(1);

/// One turn of neighbour resolution: drain, publish what changed, then
/// send what waited for that publish.
fn neigh_turn(st: &mut ControlState) {
    let Some(d) = st.neigh.as_mut() else {
        return;
    };
    d.sync_statics(st.writer.current());
    let updates = d.poll(st.writer.current());
    let beneath = st.fpm.as_ref().map(fpm::FpmControl::rib);
    publish_learned(&mut st.writer, &st.acl, &updates, beneath);
    d.after_publish(st.writer.current());
}

/// Reads carriers when due and publishes a change of any.
fn link_turn(st: &mut ControlState) {
    let Some(carriers) = st
        .links
        .as_mut()
        .and_then(|m| m.poll(std::time::Instant::now()))
    else {
        return;
    };
    for (i, up) in carriers.into_iter().enumerate() {
        let Some(t) = state::apply_carrier(st.writer.current(), i, up) else {
            continue;
        };
        let name = t.ports[i].name.clone();
        st.writer.publish(t, 256);
        st.events.push(format!(
            "port {name}: carrier {}",
            if up { "up" } else { "down" }
        ));
        if !up {
            if let Some(d) = st.neigh.as_mut() {
                let updates = d.flush(Some(i as u16));
                let beneath = st.fpm.as_ref().map(fpm::FpmControl::rib);
                publish_learned(&mut st.writer, &st.acl, &updates, beneath);
                d.after_publish(st.writer.current());
            }
        }
    }
}

/// Logs the admin state changes between two versions.
fn log_admin(events: &link::EventLog, before: &Tables, after: &Tables) {
    for (b, a) in before.ports.iter().zip(after.ports.iter()) {
        if b.admin_up != a.admin_up {
            events.push(format!(
                "port {}: admin {}",
                a.name,
                if a.admin_up { "up" } else { "down" }
            ));
        }
    }
}

fn publish_learned(
    writer: &mut Writer<Tables>,
    acl_w: &acl::ClassifierWriter,
    updates: &[neigh::Update],
    beneath: Option<&crate::fpm::rib::FpmRib>,
) -> Option<u64> {
    if updates.is_empty() {
        return None;
    }
    match state::apply_learned(writer.current(), acl_w, updates, beneath) {
        Ok(t) => Some(writer.publish(t, updates.len() * 256)),
        Err(e) => {
            eprintln!("fwd: neighbour update not published: {e}");
            None
        }
    }
}

impl ControlLcore {
    /// Starts the control thread, pinned to `cpu` when given.
    ///
    /// # Errors
    /// The OS error when the thread cannot be spawned.
    pub fn start(state: ControlState, cpu: Option<usize>) -> std::io::Result<ControlLcore> {
        let (tx, rx) = mpsc::channel();
        let board = Arc::new(Board::new(&state));
        let b = Arc::clone(&board);
        let thread = std::thread::Builder::new()
            .name("fwd-control".into())
            .spawn(move || {
                if let Some(cpu) = cpu {
                    if !core_affinity::set_for_current(core_affinity::CoreId { id: cpu }) {
                        eprintln!("fwd: control lcore: cannot pin to cpu {cpu}; running unpinned");
                    }
                }
                serve(state, &rx, &b)
            })?;
        Ok(ControlLcore {
            handle: ControlHandle { tx, board },
            thread: Some(thread),
        })
    }

    pub fn handle(&self) -> ControlHandle {
        self.handle.clone()
    }

    /// Stops the thread and returns its state (the daemon drops it after the
    /// workers are joined). Handles still held elsewhere get `stopped`
    /// errors from then on.
    pub fn stop(mut self) -> ControlState {
        let _ = self.handle.tx.send(Request::Stop);
        let thread = self.thread.take().expect("joined only here and in drop");
        match thread.join() {
            Ok(s) => s,
            Err(e) => std::panic::resume_unwind(e),
        }
    }
}

fn reclaim(st: &mut ControlState, released: &Released) {
    st.writer.reclaim();
    let slots: Vec<acl::Slot> =
        std::mem::take(&mut *released.lock().unwrap_or_else(PoisonError::into_inner));
    if !slots.is_empty() {
        st.acl.release_slots(&slots, Some(&st.counters));
    }
}

/// A classifier rebuild running off the control lcore.
type Rebuilding = Option<Receiver<acl::Rebuilt>>;

/// Starts a background rebuild of the classifier's base when its overlay of
/// recent changes has grown (lookups get slower with it); the control lcore
/// stays responsive and installs the result when it is ready.
fn maybe_rebuild(st: &ControlState, rebuilding: &mut Rebuilding) {
    if rebuilding.is_some() || !st.acl.needs_rebuild() {
        return;
    }
    let job = st.acl.rebuild_job();
    let (tx, rx) = mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("fwd-acl-rebuild".into())
        .spawn(move || {
            let _ = tx.send(job.run());
        });
    if spawned.is_ok() {
        *rebuilding = Some(rx);
    }
}

/// Installs a finished rebuild (carrying over changes made meanwhile) and
/// publishes it as a new generation.
fn finish_rebuild(st: &mut ControlState, rebuilding: &mut Rebuilding) {
    let Some(rx) = rebuilding else {
        return;
    };
    match rx.try_recv() {
        Ok(rebuilt) => {
            *rebuilding = None;
            // Stale (a synchronous rebuild ran meanwhile): nothing to do.
            let Some(acl) = st.acl.install(rebuilt) else {
                return;
            };
            let bytes = st.writer.current().acl.stats().mem_bytes;
            let cur = st.writer.current();
            let next = Tables::new(
                cur.routing.clone(),
                acl,
                Arc::clone(&cur.ports),
                Arc::clone(&cur.mgmt),
            );
            st.writer.publish(next, bytes);
        }
        Err(mpsc::TryRecvError::Empty) => {}
        Err(mpsc::TryRecvError::Disconnected) => *rebuilding = None,
    }
}

fn serve(mut st: ControlState, rx: &Receiver<Request>, board: &Board) -> ControlState {
    let released: Released = Arc::default();
    let mut rebuilding: Rebuilding = None;
    let mut last_reclaim = std::time::Instant::now();
    let mut last_post = std::time::Instant::now();
    loop {
        finish_rebuild(&mut st, &mut rebuilding);
        maybe_rebuild(&st, &mut rebuilding);
        neigh_turn(&mut st);
        link_turn(&mut st);
        if let Some(f) = st.fpm.as_mut() {
            f.poll(&mut st.writer, &st.acl);
        }
        let wait = if st.neigh.is_some() {
            NEIGH_INTERVAL
        } else {
            RECLAIM_INTERVAL
        };
        // Whatever this turn published is on the board before waiting.
        let all = last_post.elapsed() >= POST_INTERVAL;
        board.post(&st, all);
        if all {
            last_post = std::time::Instant::now();
        }
        match rx.recv_timeout(wait) {
            Ok(Request::Apply(changes, reply)) => {
                let n = changes.len() as u64;
                let before = st.writer.current().clone();
                let beneath = st.fpm.as_ref().map(fpm::FpmControl::rib);
                let result =
                    state::apply(st.writer.current(), &mut st.acl, &changes, beneath).map(|o| {
                        if !o.retired_slots.is_empty() {
                            // Unreachable from the version published next: freed
                            // once every worker has seen it (QSBR `retire` tags
                            // with the current generation).
                            let bytes = o.retired_slots.len() * 8;
                            let token = SlotToken {
                                slots: o.retired_slots,
                                released: Arc::clone(&released),
                            };
                            st.writer.retire(token, bytes);
                        }
                        let generation = st.writer.publish(o.tables, o.retired_bytes);
                        Done {
                            generation,
                            changes: n,
                            rule_ids: o.rule_ids,
                        }
                    });
                if result.is_ok() {
                    log_admin(&st.events, &before, st.writer.current());
                    if let Some(f) = &st.fpm {
                        f.report(st.writer.current());
                    }
                }
                drop(before);
                reclaim(&mut st, &released);
                board.post(&st, true);
                let _ = reply.send(result);
            }
            Ok(Request::Fpm(ev, reply)) => {
                if let Some(f) = st.fpm.as_mut() {
                    f.event(ev, &mut st.writer, &st.acl, std::time::Instant::now());
                }
                board.post(&st, false);
                let _ = reply.send(());
                reclaim(&mut st, &released);
            }
            Ok(Request::NeighFlush(port, reply)) => {
                let updates = st.neigh.as_mut().map(|d| d.flush(port)).unwrap_or_default();
                let beneath = st.fpm.as_ref().map(fpm::FpmControl::rib);
                let generation = publish_learned(&mut st.writer, &st.acl, &updates, beneath)
                    .unwrap_or_else(|| st.writer.generation());
                if let Some(d) = st.neigh.as_mut() {
                    d.after_publish(st.writer.current());
                }
                board.post(&st, true);
                let _ = reply.send(Ok(Done {
                    generation,
                    changes: updates.len() as u64,
                    rule_ids: Vec::new(),
                }));
            }
            Ok(Request::Release(t)) => drop(t),
            Err(RecvTimeoutError::Timeout) => {
                // Reclaim at the old pace even when woken more often.
                if last_reclaim.elapsed() >= RECLAIM_INTERVAL {
                    reclaim(&mut st, &released);
                    last_reclaim = std::time::Instant::now();
                }
            }
            Ok(Request::Stop) | Err(RecvTimeoutError::Disconnected) => {
                if let Some(rx) = rebuilding.take() {
                    // Let a running rebuild finish before the state goes.
                    let _ = rx.recv();
                }
                reclaim(&mut st, &released);
                return st;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use ctl::wire::{self, Change, RouteTarget};

    use super::*;
    use crate::qsbr::{self, QsbrConfig};
    use crate::route;
    use crate::tables::PortInfo;

    fn lcore() -> (ControlLcore, qsbr::Reader<Tables>) {
        let (st, reader) = state();
        (ControlLcore::start(st, None).expect("spawn"), reader)
    }

    fn state() -> (ControlState, qsbr::Reader<Tables>) {
        let acl = acl::ClassifierWriter::new(acl::Config::default());
        let cfg = acl::Config {
            capacity: 1024,
            ..acl::Config::default()
        };
        let (counters, _) = acl::CounterSet::new(1, cfg.slots() as usize);
        let ports = vec![PortInfo::new("p0", [2, 0, 0, 0, 0, 1], 0)];
        let mut writer = qsbr::domain(
            Tables::empty(
                ports,
                acl.current().clone(),
                crate::tables::Limits::default(),
            ),
            QsbrConfig::default(),
        );
        let reader = writer.register_reader("test-worker");
        let st = ControlState {
            writer,
            acl: acl::ClassifierWriter::new(cfg),
            counters,
            neigh: None,
            links: None,
            events: link::EventLog::new(),
            fpm: None,
        };
        (st, reader)
    }

    #[test]
    fn a_dropped_snapshot_goes_back_to_the_control_lcore() {
        let (st, _reader) = state();
        let (tx, rx) = mpsc::channel();
        let h = ControlHandle {
            tx,
            board: Arc::new(Board::new(&st)),
        };
        let (generation, snap) = h.snapshot().expect("snapshot");
        assert_eq!(generation, st.writer.generation());
        let uid = snap.uid();
        assert!(rx.try_recv().is_err(), "nothing sent while it is held");
        drop(snap);
        match rx.try_recv() {
            Ok(Request::Release(t)) => assert_eq!(t.uid(), uid, "that very copy"),
            Ok(_) => panic!("a release was expected"),
            Err(e) => panic!("the copy was dropped here: {e}"),
        }
        // With the control lcore gone, a copy is dropped where it is.
        drop(rx);
        let (_, snap) = h.snapshot().expect("snapshot");
        drop(snap);
    }

    #[test]
    fn the_control_lcore_drops_copies_given_back_and_goes_on() {
        let (c, mut reader) = lcore();
        let h = c.handle();
        let (_, held) = h.snapshot().expect("snapshot");
        // The writer moves on while a reader holds the old version.
        let done = h.apply(vec![rule(1, 1001)]).expect("rule add");
        drop(reader.snapshot());
        assert!(held.acl.is_empty(), "the copy is of the version before");
        drop(held);
        let next = h.apply(vec![rule(2, 1002)]).expect("rule add");
        assert_eq!(next.generation, done.generation + 1);
        let (_, t) = h.snapshot().expect("snapshot");
        assert_eq!(t.acl.len(), 2);
        drop(t);
        drop(h);
        drop(reader);
        c.stop();
    }

    fn rule(id: u32, dport: u16) -> Change {
        Change::RuleAdd(Box::new(wire::Rule {
            id: Some(id),
            priority: id,
            matches: wire::RuleMatch {
                dport: Some(wire::PortRange {
                    lo: dport,
                    hi: dport,
                }),
                ..Default::default()
            },
            actions: vec![wire::Action::Drop],
        }))
    }

    #[test]
    fn single_rule_changes_trigger_a_background_rebuild_that_loses_nothing() {
        let (c, mut reader) = lcore();
        let h = c.handle();
        for i in 1..=300u32 {
            h.apply(vec![rule(i, 1000 + i as u16)]).expect("rule add");
            // A worker that keeps reporting, so reclamation progresses.
            drop(reader.snapshot());
        }
        // The rebuild finishes on its own thread; wait (bounded) until the
        // published version has folded the overlay into the tree.
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            drop(reader.snapshot());
            let (_, t) = h.snapshot().unwrap();
            if t.acl.stats().overlay_rules < 64 {
                assert_eq!(t.acl.len(), 300);
                for i in 1..=300u32 {
                    let k = acl::Key {
                        dport: 1000 + i as u16,
                        ..acl::Key::default()
                    };
                    assert_eq!(t.acl.classify(&k).map(|e| e.id()), Some(i));
                }
                break;
            }
            assert!(Instant::now() < deadline, "no rebuild installed");
            std::thread::sleep(Duration::from_millis(5));
        }
        drop(h);
        drop(reader);
        c.stop();
    }

    #[test]
    fn a_port_in_a_vrf_gets_its_connected_and_local_routes_there() {
        let mut acl_w = acl::ClassifierWriter::new(acl::Config::default());
        let ports = vec![PortInfo::new("red", [2, 0, 0, 0, 0, 5], 5)];
        let base = Tables::empty(
            ports,
            acl_w.current().clone(),
            crate::tables::Limits::default(),
        );
        let changes = vec![
            Change::AddressAdd(wire::Address {
                addr: "10.5.0.1/24".parse().unwrap(),
                dev: "red".into(),
            }),
            Change::NeighAdd(wire::Neigh {
                addr: "10.5.0.2".parse().unwrap(),
                lladdr: "02:00:00:00:05:02".parse().unwrap(),
                dev: "red".into(),
            }),
        ];
        let t = state::apply(&base, &mut acl_w, &changes, None)
            .map_err(|e| e.to_string())
            .unwrap()
            .tables;
        let p = |s: &str| prefix_of(s.parse().unwrap()).unwrap();
        assert!(matches!(
            t.routing.get(5, p("10.5.0.0/24")),
            Some(route::Target::NextHop(_))
        ));
        assert_eq!(
            t.routing.get(5, p("10.5.0.1/32")),
            Some(route::Target::Local)
        );
        assert!(matches!(
            t.routing.get(5, p("10.5.0.2/32")),
            Some(route::Target::NextHop(_))
        ));
        assert_eq!(
            t.routing.route_count(0),
            (0, 0),
            "nothing leaks into table 0"
        );
        assert_eq!(t.port_vrf(0), 5);
    }

    /// Issue 11, finding 14: `rule flush` plus `capacity` adds in one batch
    /// (an atomic swap of a full rule set) works; a second one before the
    /// workers have moved on is refused as `busy` and goes through once
    /// they have.
    #[test]
    fn a_full_rule_set_swaps_in_one_batch() {
        let (c, mut reader) = lcore();
        let h = c.handle();
        let set = |from: u32| -> Vec<Change> {
            (from..from + 1024)
                .map(|id| rule(id, (id - from) as u16))
                .collect()
        };
        h.apply(set(1)).expect("fill to capacity");
        let e = h.apply(vec![rule(5000, 1)]).unwrap_err();
        assert_eq!(e.kind, wire::ErrorKind::TooLarge, "{e}");
        let swap = |from: u32| {
            let mut b = vec![Change::RuleFlush {}];
            b.extend(set(from));
            b
        };
        // The reader holds its snapshot: nothing can be reclaimed.
        let held = reader.snapshot();
        h.apply(swap(10_000)).expect("first swap");
        let e = h.apply(swap(20_000)).unwrap_err();
        assert_eq!(e.kind, wire::ErrorKind::Busy, "{e}");
        assert_eq!(e.index, Some(2), "the first add: {e}");
        drop(held);
        // Once the worker reports, the first swap's slots are released
        // (bounded wait: reclamation runs on the control thread).
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            drop(reader.snapshot());
            match h.apply(swap(20_000)) {
                Ok(_) => break,
                Err(e) if e.kind == wire::ErrorKind::Busy => {}
                Err(e) => panic!("{e}"),
            }
            assert!(Instant::now() < deadline, "slots never released");
            std::thread::sleep(Duration::from_millis(5));
        }
        let (_, t) = h.snapshot().unwrap();
        assert_eq!(t.acl.len(), 1024);
        let k = acl::Key {
            dport: 7,
            ..acl::Key::default()
        };
        assert_eq!(t.acl.classify(&k).map(|e| e.id()), Some(20_007));
        drop(h);
        drop(reader);
        c.stop();
    }

    #[test]
    fn reads_come_from_the_board_and_never_from_the_writer_thread() {
        let (c, reader) = lcore();
        let h = c.handle();
        let route = Change::RouteAdd(wire::Route {
            linkdown: false,
            proto: None,
            prefix: "10.9.0.0/16".parse().unwrap(),
            table: 0,
            target: RouteTarget::Blackhole,
        });
        let g = h.apply(vec![route]).unwrap().generation;
        // Stop the control lcore: a read that needed it would fail now.
        let state = c.stop();
        let (g2, t) = h.snapshot().expect("snapshot without the writer");
        assert_eq!(g2, g, "the last published version");
        assert_eq!(t.routing.route_count(0), (1, 0));
        assert_eq!(h.status().unwrap().generation, g);
        h.neighbours().unwrap();
        // Changes need the writer, and say it has stopped.
        let e = h.apply(Vec::new()).unwrap_err();
        assert_eq!(e.kind, wire::ErrorKind::Internal);
        drop((state, reader));
    }

    #[test]
    fn a_failing_batch_publishes_nothing() {
        let (c, mut reader) = lcore();
        let h = c.handle();
        let g = h.status().unwrap().generation;
        let route = |p: &str| {
            Change::RouteAdd(wire::Route {
                linkdown: false,
                proto: None,
                prefix: p.parse().unwrap(),
                table: 0,
                target: RouteTarget::Blackhole,
            })
        };
        let e = h
            .apply(vec![route("10.0.0.0/8"), rule(1, 80), route("10.0.0.0/8")])
            .unwrap_err();
        assert_eq!(e.index, Some(3), "{e}");
        assert_eq!(e.kind, wire::ErrorKind::Exists);
        drop(reader.snapshot());
        let (g2, t) = h.snapshot().unwrap();
        assert_eq!(g2, g);
        assert_eq!(t.routing.route_count(0), (0, 0));
        assert!(t.acl.is_empty());
        let done = h.apply(vec![route("10.0.0.0/8"), rule(1, 80)]).unwrap();
        assert_eq!(done.generation, g + 1);
        drop(h);
        drop(reader);
        c.stop();
    }
}
