//! Unit, stress and atomicity tests of the QSBR domain (the loom models are in
//! `loom.rs`). None depends on timing: thread interleavings only change how
//! much gets exercised, never the verdict.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use super::{domain, QsbrConfig, Writer};

const MAGIC: u64 = 0x5AFE_C0DE_5AFE_C0DE;
const POISON: u64 = 0xDEAD_DEAD_DEAD_DEAD;
const UNUSED: u8 = 0;
const LIVE: u8 = 1;
const FREED: u8 = 2;

/// The state of every tracked object by id, kept outside the objects so that
/// it can be read after they are freed.
struct Registry {
    state: Vec<AtomicU8>,
    next: AtomicUsize,
}

impl Registry {
    fn new(capacity: usize) -> Arc<Self> {
        Arc::new(Self {
            state: (0..capacity).map(|_| AtomicU8::new(UNUSED)).collect(),
            next: AtomicUsize::new(0),
        })
    }

    fn live(&self) -> usize {
        self.state
            .iter()
            .filter(|s| s.load(Ordering::Relaxed) == LIVE)
            .count()
    }

    fn is_live(&self, id: usize) -> bool {
        self.state[id].load(Ordering::Relaxed) == LIVE
    }
}

/// An object whose drop poisons it and marks its id freed (and catches a
/// double free).
struct Tracked {
    id: usize,
    magic: AtomicU64,
    value: u64,
    registry: Arc<Registry>,
}

impl Tracked {
    fn new(registry: &Arc<Registry>, value: u64) -> Self {
        let id = registry.next.fetch_add(1, Ordering::Relaxed);
        let previous = registry.state[id].swap(LIVE, Ordering::Relaxed);
        assert_eq!(previous, UNUSED, "registry too small");
        Self {
            id,
            magic: AtomicU64::new(MAGIC),
            value,
            registry: registry.clone(),
        }
    }

    /// Whether this object is alive; a reader calls it on every object it
    /// touches, so a use after free shows up here.
    fn check(&self) -> bool {
        self.magic.load(Ordering::Relaxed) == MAGIC && self.registry.is_live(self.id)
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        // An atomic store: the compiler may not drop it as a dead store
        // before the free.
        self.magic.store(POISON, Ordering::Relaxed);
        let previous = self.registry.state[self.id].swap(FREED, Ordering::Relaxed);
        assert_eq!(previous, LIVE, "double free of object {}", self.id);
    }
}

fn cfg() -> QsbrConfig {
    QsbrConfig::default()
}

#[test]
fn publish_bumps_generation_and_snapshot_sees_it() {
    let mut w = domain(10u64, cfg());
    assert_eq!(w.generation(), 1);
    assert_eq!(*w.current(), 10);
    let mut r = w.register_reader("w0");
    assert!(!r.is_online(), "readers start offline");
    {
        let s = r.snapshot();
        assert_eq!((*s, s.generation()), (10, 1));
    }
    assert!(r.is_online(), "snapshot brings a reader online");
    assert_eq!(w.publish(11, 0), 2);
    assert_eq!(*w.current(), 11);
    let s = r.snapshot();
    assert_eq!((*s, s.generation()), (11, 2));
}

#[test]
fn old_root_lives_until_reader_reports_a_later_generation() {
    let reg = Registry::new(8);
    let mut w = domain(Tracked::new(&reg, 1), cfg());
    let mut r = w.register_reader("w0");
    let first = r.snapshot();
    let first_id = first.id;
    w.publish(Tracked::new(&reg, 2), 100);
    assert_eq!(w.reclaim(), 0);
    assert!(first.check(), "freed under a live snapshot");
    drop(first); // reports generation 1: still not past the retired root
    assert_eq!(w.reclaim(), 0);
    assert!(reg.is_live(first_id));
    drop(r.snapshot()); // reports generation 2
    assert_eq!(w.reclaim(), 1);
    assert!(!reg.is_live(first_id));
    let st = w.stats();
    assert_eq!((st.pending_objects, st.pending_bytes), (0, 0));
    assert_eq!(
        (st.reclaimed_objects_total, st.reclaimed_bytes_total),
        (1, 100)
    );
    assert_eq!(st.publish_to_quiescent.count, 1);
    // The fixed buckets hold the same sample.
    assert_eq!(st.publish_to_quiescent.buckets.iter().sum::<u64>(), 1);
}

#[test]
fn latency_buckets_take_each_sample_at_its_first_bound_at_or_above() {
    use super::{latency_bucket, LATENCY_BUCKETS, LATENCY_BUCKETS_NS};
    assert_eq!(latency_bucket(0), 0);
    assert_eq!(latency_bucket(10_000), 0, "bounds are inclusive (le)");
    assert_eq!(latency_bucket(10_001), 1);
    assert_eq!(latency_bucket(1_000_000), 6);
    assert_eq!(latency_bucket(10_000_000_000), LATENCY_BUCKETS - 2);
    assert_eq!(latency_bucket(u64::MAX), LATENCY_BUCKETS - 1, "above all");
    assert!(LATENCY_BUCKETS_NS.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn offline_reader_holds_nothing_back() {
    let reg = Registry::new(8);
    let mut w = domain(Tracked::new(&reg, 1), cfg());
    let mut r = w.register_reader("w0");
    drop(r.snapshot());
    r.offline();
    assert!(!r.is_online());
    w.publish(Tracked::new(&reg, 2), 0);
    assert_eq!(
        w.pending_objects(),
        0,
        "publish reclaims when nobody is online"
    );
    assert_eq!(reg.live(), 1);
    r.online();
    w.publish(Tracked::new(&reg, 3), 0);
    assert_eq!(
        w.pending_objects(),
        1,
        "online reader at generation 2 holds 2 back"
    );
    let s = r.snapshot();
    assert_eq!((s.value, s.generation()), (3, 3));
}

#[test]
fn retired_object_waits_for_the_next_publish_even_without_readers() {
    let reg = Registry::new(8);
    let mut w = domain(0u32, cfg());
    let obj = Tracked::new(&reg, 7);
    let id = obj.id;
    w.retire(obj, 64);
    // It may still be reachable from the published root: a reader coming
    // online now could reach it.
    assert_eq!(w.reclaim(), 0);
    assert!(reg.is_live(id));
    w.publish(1, 0);
    assert!(!reg.is_live(id));
    assert_eq!(w.pending_bytes(), 0);
}

#[test]
fn dropping_a_reader_unregisters_it() {
    let reg = Registry::new(8);
    let mut w = domain(Tracked::new(&reg, 1), cfg());
    let mut r = w.register_reader("w0");
    drop(r.snapshot());
    w.publish(Tracked::new(&reg, 2), 0);
    assert_eq!(w.pending_objects(), 1);
    assert_eq!(w.stats().readers.len(), 1);
    drop(r);
    assert_eq!(w.reclaim(), 1);
    assert!(w.stats().readers.is_empty());
    assert_eq!(reg.live(), 1);
}

#[test]
fn writer_dropped_first_leaves_pending_to_the_last_reader() {
    let reg = Registry::new(8);
    let mut w = domain(Tracked::new(&reg, 1), cfg());
    let mut r = w.register_reader("w0");
    let s = r.snapshot();
    w.publish(Tracked::new(&reg, 2), 0);
    drop(w);
    assert!(s.check(), "writer drop freed a root a reader holds");
    drop(s);
    assert_eq!(r.snapshot().value, 2);
    assert_eq!(reg.live(), 2);
    drop(r);
    assert_eq!(reg.live(), 0, "last handle frees the orphans and the root");
}

#[test]
fn stalled_reader_is_flagged_bounded_and_released_by_going_offline() {
    let reg = Registry::new(16);
    let mut w = domain(
        Tracked::new(&reg, 0),
        QsbrConfig {
            max_pending_bytes: 1000,
            stall_threshold: Duration::ZERO,
            // Long enough that the test would visibly hang if the writer waited
            // on a reader it already knows to be stalled.
            backpressure_timeout: Duration::from_secs(600),
        },
    );
    let mut busy = w.register_reader("busy");
    let mut stuck = w.register_reader("stuck");
    stuck.online(); // online, and never reports again
    drop(busy.snapshot());

    w.publish(Tracked::new(&reg, 1), 400);
    drop(busy.snapshot());
    w.reclaim();
    let st = w.stats();
    let by_name = |name: &str| st.readers.iter().find(|r| r.name == name).cloned();
    let stuck_st = by_name("stuck").expect("stuck is registered");
    assert!(stuck_st.stalled && stuck_st.online);
    assert_eq!(stuck_st.reported_generation, Some(1));
    assert!(!by_name("busy").expect("busy is registered").stalled);
    assert_eq!(st.stalls_detected, 1);
    assert_eq!((st.backpressure_events, st.pending_bytes), (0, 400));
    // From here on only `stuck` is online (in one thread, `busy` could not
    // report while the writer waits).
    busy.offline();

    // Publishing still works; past the bound the writer waits only as long as
    // waiting can help (not at all: the only blocker is known stalled), and
    // counts it.
    for value in 2..=5 {
        w.publish(Tracked::new(&reg, value), 400);
    }
    let st = w.stats();
    assert_eq!(st.generation, 6);
    assert_eq!(st.stalls_detected, 1, "one stall is counted once");
    assert_eq!(st.pending_bytes, 2000);
    assert_eq!(
        st.backpressure_events, 3,
        "publishes 4, 5 and 6 found > 1000 bytes"
    );
    assert_eq!(st.backpressure_overruns, 3);

    stuck.offline();
    assert_eq!(w.reclaim(), 5);
    let st = w.stats();
    assert_eq!((st.pending_objects, st.pending_bytes), (0, 0));
    assert!(st.readers.iter().all(|r| !r.stalled));
    assert_eq!(reg.live(), 1);
}

#[test]
fn backpressure_times_out_when_the_blocker_is_not_yet_known_stalled() {
    let mut w = domain(
        0u64,
        QsbrConfig {
            max_pending_bytes: 10,
            stall_threshold: Duration::from_secs(3600),
            backpressure_timeout: Duration::ZERO,
        },
    );
    let mut r = w.register_reader("slow");
    r.online();
    w.publish(1, 8);
    w.publish(2, 8);
    let st = w.stats();
    assert_eq!((st.backpressure_events, st.backpressure_overruns), (1, 1));
    assert_eq!(st.stalls_detected, 0);
    drop(r.snapshot());
    w.reclaim();
    assert_eq!(w.pending_bytes(), 0);
}

#[test]
fn backpressure_keeps_pending_memory_within_the_bound_with_a_live_reader() {
    const BOUND: usize = 300;
    let mut w = domain(
        0u64,
        QsbrConfig {
            max_pending_bytes: BOUND,
            stall_threshold: Duration::from_secs(3600),
            // A safety net only: the reader below always makes progress.
            backpressure_timeout: Duration::from_secs(60),
        },
    );
    let mut r = w.register_reader("w0");
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let stop = stop.clone();
        thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let s = r.snapshot();
                assert_eq!(*s + 1, s.generation());
            }
        })
    };
    for i in 1..=if cfg!(miri) { 50 } else { 2000 } {
        w.publish(i, 100);
        assert!(w.pending_bytes() <= BOUND);
    }
    stop.store(true, Ordering::Relaxed);
    reader.join().expect("reader panicked");
    assert_eq!(w.stats().backpressure_overruns, 0);
    w.reclaim();
    assert_eq!(w.pending_objects(), 0);
}

#[test]
fn stats_serialize_to_json() {
    let mut w = domain(0u8, cfg());
    let _r = w.register_reader("w0");
    w.publish(1, 3);
    let json = serde_json::to_value(w.stats()).expect("stats serialize");
    assert_eq!(json["generation"], 2);
    assert_eq!(json["readers"][0]["name"], "w0");
    assert_eq!(json["readers"][0]["online"], false);
    assert_eq!(json["publish_to_quiescent"]["count"], 1);
}

/// Tables for the stress test: the root shares unchanged sub-tables (and
/// unchanged items) with its predecessor.
#[derive(Clone)]
struct Table {
    items: Vec<Arc<Tracked>>,
}

struct Root {
    tables: Vec<Arc<Table>>,
}

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 as usize
    }
}

/// Run `readers` threads doing `read` on snapshots until the writer closure
/// returns; returns how many snapshots the readers took.
fn with_readers<T: Send + Sync + 'static>(
    w: &mut Writer<T>,
    readers: usize,
    read: fn(&T, &mut XorShift),
    write: impl FnOnce(&mut Writer<T>),
) -> u64 {
    let stop = Arc::new(AtomicBool::new(false));
    let handles: Vec<_> = (0..readers)
        .map(|i| {
            let mut r = w.register_reader(&format!("w{i}"));
            let stop = stop.clone();
            thread::spawn(move || {
                let mut rng = XorShift(0x9E37_79B9_7F4A_7C15 ^ (i as u64 + 1));
                let mut snapshots = 0u64;
                // At least one snapshot per reader whatever the scheduler
                // does, so the checks below never depend on timing.
                loop {
                    let s = r.snapshot();
                    read(&s, &mut rng);
                    drop(s);
                    snapshots += 1;
                    // Exercise the online/offline race now and then.
                    if snapshots.is_multiple_of(97) {
                        r.offline();
                        thread::yield_now();
                    }
                    // Relaxed: a stop flag; the join below synchronises.
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                }
                snapshots
            })
        })
        .collect();
    write(w);
    stop.store(true, Ordering::Relaxed);
    handles
        .into_iter()
        .map(|h| h.join().expect("reader thread panicked"))
        .sum()
}

#[test]
fn stress_no_use_after_free_under_churn() {
    const TABLES: usize = 4;
    const ITEMS: usize = 64;
    const BATCHES: usize = if cfg!(miri) { 40 } else { 50_000 };
    const CHANGES: usize = 4;
    let reg = Registry::new(TABLES * ITEMS + BATCHES * CHANGES);
    let tables = (0..TABLES)
        .map(|_| {
            Arc::new(Table {
                items: (0..ITEMS)
                    .map(|_| Arc::new(Tracked::new(&reg, 0)))
                    .collect(),
            })
        })
        .collect();
    let mut w = domain(
        Root { tables },
        QsbrConfig {
            // Around 16 batches' worth: the backpressure path runs too.
            max_pending_bytes: 16 * CHANGES * 64,
            stall_threshold: Duration::from_secs(3600),
            backpressure_timeout: Duration::from_micros(200),
        },
    );
    let readers = if cfg!(miri) { 2 } else { 3 };
    let reg2 = reg.clone();
    let snapshots = with_readers(
        &mut w,
        readers,
        |root: &Root, rng| {
            for _ in 0..8 {
                let item = &root.tables[rng.next() % TABLES].items[rng.next() % ITEMS];
                assert!(item.check(), "use after free of object {}", item.id);
            }
        },
        |w| {
            let mut rng = XorShift(42);
            for batch in 1..=BATCHES as u64 {
                let mut next = Root {
                    tables: w.current().tables.clone(),
                };
                for _ in 0..CHANGES {
                    let table = Arc::make_mut(&mut next.tables[rng.next() % TABLES]);
                    table.items[rng.next() % ITEMS] = Arc::new(Tracked::new(&reg2, batch));
                }
                w.publish(next, CHANGES * 64);
            }
        },
    );
    assert!(snapshots > 0);
    w.reclaim();
    let st = w.stats();
    assert_eq!(
        st.pending_objects, 0,
        "readers are gone: everything is free"
    );
    assert!(st.readers.is_empty());
    assert_eq!(st.reclaimed_objects_total, BATCHES as u64);
    assert_eq!(
        reg.live(),
        TABLES * ITEMS,
        "no leak: only the current items live"
    );
    drop(w);
    assert_eq!(reg.live(), 0);
}

/// Root for the atomicity test: value moves between two Arc'd sub-tables,
/// several entries per batch; a reader seeing half a batch would see a wrong
/// total or mismatched stamps.
struct Ledger {
    a: Arc<Vec<u64>>,
    b: Arc<Vec<u64>>,
    stamp_a: u64,
    stamp_b: u64,
}

const LEDGER_LEN: usize = 32;
const LEDGER_TOTAL: u64 = 2 * LEDGER_LEN as u64 * 1000;

#[test]
fn readers_never_see_half_a_batch() {
    const BATCHES: u64 = if cfg!(miri) { 30 } else { 20_000 };
    let mut w = domain(
        Ledger {
            a: Arc::new(vec![1000; LEDGER_LEN]),
            b: Arc::new(vec![1000; LEDGER_LEN]),
            stamp_a: 0,
            stamp_b: 0,
        },
        cfg(),
    );
    let snapshots = with_readers(
        &mut w,
        2,
        |l: &Ledger, _| {
            let total: u64 = l.a.iter().chain(l.b.iter()).sum();
            assert_eq!(total, LEDGER_TOTAL, "half a batch visible");
            assert_eq!(l.stamp_a, l.stamp_b, "half a batch visible");
        },
        |w| {
            let mut rng = XorShift(7);
            for batch in 1..=BATCHES {
                let cur = w.current();
                let mut a = cur.a.clone();
                let mut b = cur.b.clone();
                let mut stamp_a = cur.stamp_a;
                // Several changes, each on its own breaking the invariant.
                for _ in 0..4 {
                    let (from, to) = if rng.next().is_multiple_of(2) {
                        (&mut a, &mut b)
                    } else {
                        (&mut b, &mut a)
                    };
                    let i = rng.next() % LEDGER_LEN;
                    let amount = (rng.next() as u64 % 10).min(from[i]);
                    Arc::make_mut(from)[i] -= amount;
                    Arc::make_mut(to)[rng.next() % LEDGER_LEN] += amount;
                    stamp_a = batch;
                }
                w.publish(
                    Ledger {
                        a,
                        b,
                        stamp_a,
                        stamp_b: batch,
                    },
                    0,
                );
            }
        },
    );
    assert!(snapshots > 0);
    let l = w.current();
    assert_eq!(l.a.iter().chain(l.b.iter()).sum::<u64>(), LEDGER_TOTAL);
}
