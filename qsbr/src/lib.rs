#![doc = include_str!("QSBR.md")]
// One of the few places where `unsafe` is allowed (the root Cargo.toml lists
// them): the published root is a raw pointer that readers dereference without
// touching a refcount. Every block says why it holds; the argument as a whole
// is in QSBR.md.
#![allow(unsafe_code)]

mod sync;

#[cfg(all(test, loom))]
mod loom;
#[cfg(all(test, not(loom)))]
mod tests;

use std::cell::Cell;
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::PoisonError;
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;
use hdrhistogram::Histogram;
use serde::Serialize;

use self::sync::{fence, yield_now, Arc, AtomicPtr, AtomicU64, Mutex, Ordering};

/// Slot value of a reader that is offline: it holds nothing and never holds
/// reclamation back. Larger than any generation, so "min over all slots" needs
/// no special case.
const OFFLINE: u64 = u64::MAX;
/// Slot value of a dropped [`Reader`]: offline for good; the writer forgets it.
const DETACHED: u64 = u64::MAX - 1;
/// The generation of the initial root. 0 is never a generation.
const FIRST_GENERATION: u64 = 1;
/// Spins before the backpressure wait starts yielding the CPU.
const BACKPRESSURE_SPINS: u32 = 64;

/// Limits of a QSBR domain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QsbrConfig {
    /// Bound on the memory retired but not yet freed (the sum of the byte
    /// estimates given to [`Writer::publish`] and [`Writer::retire`]). Past it
    /// the writer waits, at most `backpressure_timeout`, for readers to catch up.
    pub max_pending_bytes: usize,
    /// An online reader that holds back a pending object and made no progress
    /// for at least this long is reported stalled. `Duration::ZERO` flags any
    /// lag at the writer's next scan (useful in tests).
    pub stall_threshold: Duration,
    /// The longest a single [`Writer::publish`]/[`Writer::retire`] waits for
    /// pending memory to fall under the bound before going on anyway.
    pub backpressure_timeout: Duration,
}

impl Default for QsbrConfig {
    fn default() -> Self {
        Self {
            max_pending_bytes: 256 << 20,
            stall_threshold: Duration::from_millis(500),
            backpressure_timeout: Duration::from_millis(10),
        }
    }
}

/// One published version: the root and the generation it was published as.
/// Readers reach both with the single Acquire load of [`Published::root`].
struct Version<T> {
    generation: u64,
    value: T,
}

/// The pair every reader reads; on its own cache line(s), written only by
/// `publish`.
struct Published<T> {
    /// The current version. Written only by the writer (Release), read by
    /// readers (Acquire) and by the writer itself.
    root: AtomicPtr<Version<T>>,
    /// The current generation, stored after `root`. Read only by a reader
    /// coming online, which must not dereference `root` before it is online.
    generation: AtomicU64,
}

/// What the writer and all readers share.
struct Shared<T> {
    published: CachePadded<Published<T>>,
    /// Retired objects the writer could not free before it was dropped; they
    /// are freed when the last handle (reader) goes away. Touched only when the
    /// writer drops, never on a reader's path.
    orphans: Mutex<Vec<Pending<T>>>,
    /// `Shared` owns the current version: Send iff `T: Send`, Sync iff `T: Sync`
    /// (so `Reader<T>` is Send iff `T: Send + Sync`).
    _owns: PhantomData<Box<Version<T>>>,
}

impl<T> Drop for Shared<T> {
    fn drop(&mut self) {
        // Relaxed: `&mut self` means every other handle is gone, and the Arc
        // that owned `self` synchronised with their drops.
        let root = self.published.root.load(Ordering::Relaxed);
        // SAFETY: `root` came from `Box::leak` in `domain`/`publish` and is
        // owned by `Shared` until replaced; no reader is left to use it.
        drop(unsafe { Box::from_raw(root) });
    }
}

/// A reader's quiescence slot: the generation it last reported, or
/// [`OFFLINE`]/[`DETACHED`]. Padded so that no other data shares its line: the
/// reader is its only writer.
type Slot = CachePadded<AtomicU64>;

/// A replaced root, freed by dropping this. Kept as a raw pointer, never as a
/// `Box`, while readers may still hold shared references into it.
struct RetiredRoot<T>(NonNull<Version<T>>);

// SAFETY: a `RetiredRoot` is the unique owner of its version (readers only
// borrow it until the writer decides they are done), so moving it to another
// thread moves a `Box<Version<T>>`, which is Send when `T` is.
unsafe impl<T: Send> Send for RetiredRoot<T> {}

impl<T> Drop for RetiredRoot<T> {
    fn drop(&mut self) {
        // SAFETY: the pointer came from `Box::leak` and this is its only
        // owner. A `RetiredRoot` is dropped only by `Writer::reclaim` once every
        // online reader reported a later generation (or is offline), or with
        // `Shared` once no reader exists: no reference into it remains.
        drop(unsafe { Box::from_raw(self.0.as_ptr()) });
    }
}

/// What a pending entry owns; never read, only dropped (which frees it).
#[allow(dead_code)]
enum Retired<T> {
    Root(RetiredRoot<T>),
    Object(Box<dyn Send>),
}

/// A retired object waiting for its grace period.
struct Pending<T> {
    /// The generation that was current when it was retired. Freed once every
    /// online reader reported `>= tag + 1`.
    tag: u64,
    bytes: usize,
    /// For a replaced root: when its successor (`tag + 1`) was published, for
    /// the publish-to-quiescent histogram.
    published_at: Option<Instant>,
    /// Dropped (that is, freed) with the `Pending`.
    _what: Retired<T>,
}

/// The writer's view of one reader.
struct ReaderRecord {
    name: String,
    slot: Arc<Slot>,
    /// The slot's value at the last scan.
    seen: u64,
    /// When the writer last saw this reader make progress or be caught up.
    last_progress: Instant,
    /// The previous scan found it holding back a pending object, and it made
    /// no progress since.
    held_back_at_last_scan: bool,
    stalled: bool,
}

/// Create a QSBR domain publishing `initial` as generation 1.
///
/// The returned [`Writer`] is the only handle that can publish; readers are
/// created from it with [`Writer::register_reader`].
pub fn domain<T: Send + Sync + 'static>(initial: T, cfg: QsbrConfig) -> Writer<T> {
    let version = NonNull::from(Box::leak(Box::new(Version {
        generation: FIRST_GENERATION,
        value: initial,
    })));
    let shared = Arc::new(Shared {
        published: CachePadded::new(Published {
            root: AtomicPtr::new(version.as_ptr()),
            generation: AtomicU64::new(FIRST_GENERATION),
        }),
        orphans: Mutex::new(Vec::new()),
        _owns: PhantomData,
    });
    Writer {
        shared,
        generation: FIRST_GENERATION,
        cfg,
        readers: Vec::new(),
        pending: VecDeque::new(),
        pending_bytes: 0,
        backpressure_events: 0,
        backpressure_overruns: 0,
        stalls_detected: 0,
        reclaimed_objects_total: 0,
        reclaimed_bytes_total: 0,
        // 1 ns .. 1 h at 3 significant digits; the bounds are constants that
        // hdrhistogram accepts, so this cannot fail.
        latency: Histogram::new_with_bounds(1, 3_600_000_000_000, 3)
            .expect("constant histogram bounds are valid"),
        latency_buckets: [0; LATENCY_BUCKETS],
        latency_sum_ns: 0,
    }
}

/// The publishing side of a domain: owned by the single writer thread (the
/// control lcore). `Send`, not `Sync`, not `Clone`.
pub struct Writer<T> {
    shared: Arc<Shared<T>>,
    generation: u64,
    cfg: QsbrConfig,
    readers: Vec<ReaderRecord>,
    /// Ordered by `tag` (tags never decrease), so reclamation pops a prefix.
    pending: VecDeque<Pending<T>>,
    pending_bytes: usize,
    backpressure_events: u64,
    backpressure_overruns: u64,
    stalls_detected: u64,
    reclaimed_objects_total: u64,
    reclaimed_bytes_total: u64,
    latency: Histogram<u64>,
    /// The same samples in [`LATENCY_BUCKETS_NS`] (the last slot: above
    /// every bound), and their sum: a fixed-bucket view for the metrics
    /// endpoint that costs a copy to report, not a walk of the histogram.
    latency_buckets: [u64; LATENCY_BUCKETS],
    latency_sum_ns: u64,
}

impl<T> Writer<T> {
    /// A new reader handle for a worker, named for stats and stall reports.
    ///
    /// The reader starts **offline**: a worker that has not started yet holds
    /// nothing back and cannot be reported stalled. Its first
    /// [`Reader::snapshot`] (or [`Reader::online`]) brings it online.
    pub fn register_reader(&mut self, name: &str) -> Reader<T> {
        let slot = Arc::new(CachePadded::new(AtomicU64::new(OFFLINE)));
        self.readers.push(ReaderRecord {
            name: name.to_owned(),
            slot: slot.clone(),
            seen: OFFLINE,
            last_progress: Instant::now(),
            held_back_at_last_scan: false,
            stalled: false,
        });
        Reader {
            shared: self.shared.clone(),
            slot,
            reported: OFFLINE,
            _not_sync: PhantomData,
        }
    }

    /// The published root, as the writer sees it (the base for the next batch).
    pub fn current(&self) -> &T {
        // Relaxed: the writer is the only thread that stores `root`, and a
        // thread always reads its own latest store.
        let root = self.shared.published.root.load(Ordering::Relaxed);
        // SAFETY: the current version is freed only after `publish` (which
        // takes `&mut self`) replaced it and a grace period passed, so it
        // outlives this `&self` borrow.
        unsafe { &(*root).value }
    }

    /// The generation of the published root (1 for the initial one).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Publish a whole new root as generation `generation() + 1` and return it.
    ///
    /// Sub-tables are normally `Arc`-shared with the old root, so a new root is
    /// cheap. The old root is retired, tagged with the generation it was
    /// current in, and dropped later on this (the writer's) thread by
    /// [`reclaim`](Self::reclaim), which `publish` also runs. `retired_bytes` is
    /// the caller's estimate of what dropping the old root frees, for the
    /// pending-memory bound.
    ///
    /// Never waits for readers unless pending memory exceeds
    /// `max_pending_bytes` afterwards; then it waits at most
    /// `backpressure_timeout` (less if every reader holding memory back is
    /// already flagged stalled) and counts a backpressure event.
    pub fn publish(&mut self, new_root: T, retired_bytes: usize) -> u64 {
        let next = self.generation + 1;
        let new = Box::leak(Box::new(Version {
            generation: next,
            value: new_root,
        }));
        // Relaxed: only this thread stores `root`; it reads its own last store.
        let old = self.shared.published.root.load(Ordering::Relaxed);
        // Release: a reader's Acquire load of `root` that sees `new` also sees
        // everything written while building it.
        self.shared.published.root.store(new, Ordering::Release);
        // Release: pairs with the Acquire load in `Reader::online`; a reader
        // that reads `next` here then sees `new` (or later) in `root`.
        self.shared
            .published
            .generation
            .store(next, Ordering::Release);
        let now = Instant::now();
        let old = NonNull::new(old).expect("the published root is never null");
        self.pending.push_back(Pending {
            tag: self.generation,
            bytes: retired_bytes,
            published_at: Some(now),
            _what: Retired::Root(RetiredRoot(old)),
        });
        self.pending_bytes += retired_bytes;
        self.generation = next;
        self.reclaim_at(now, next - 1);
        self.backpressure();
        next
    }

    /// Defer dropping `obj` until every online reader has passed the current
    /// generation, i.e. has seen the *next* published root.
    ///
    /// Retire an object once it is unreachable from the root you will publish
    /// next (or already have): it is freed after the next `publish` has been
    /// observed by every online reader. `bytes` counts toward the bound, with
    /// the same backpressure as [`publish`](Self::publish).
    pub fn retire<R: Send + 'static>(&mut self, obj: R, bytes: usize) {
        self.pending.push_back(Pending {
            tag: self.generation,
            bytes,
            published_at: None,
            _what: Retired::Object(Box::new(obj)),
        });
        self.pending_bytes += bytes;
        self.backpressure();
    }

    /// Free every pending object whose grace period is over; never blocks.
    /// Also updates stall detection and the latency histogram. Returns the
    /// number of objects freed (their destructors ran on this thread).
    pub fn reclaim(&mut self) -> usize {
        self.reclaim_at(Instant::now(), self.generation)
    }

    /// Number of objects retired and not yet freed.
    pub fn pending_objects(&self) -> usize {
        self.pending.len()
    }

    /// Sum of the byte estimates of the objects retired and not yet freed.
    pub fn pending_bytes(&self) -> usize {
        self.pending_bytes
    }

    /// A snapshot of the domain's state for `fwdctl status`. Allocates (names);
    /// reader state is as of the writer's last scan (publish or reclaim).
    pub fn stats(&self) -> QsbrStats {
        let now = Instant::now();
        let q = |q: f64| self.latency.value_at_quantile(q);
        QsbrStats {
            generation: self.generation,
            readers: self
                .readers
                .iter()
                .map(|r| ReaderStats {
                    name: r.name.clone(),
                    online: r.seen != OFFLINE,
                    reported_generation: (r.seen != OFFLINE).then_some(r.seen),
                    stalled: r.stalled,
                    last_progress_age: now.saturating_duration_since(r.last_progress),
                })
                .collect(),
            pending_objects: self.pending.len(),
            pending_bytes: self.pending_bytes,
            backpressure_events: self.backpressure_events,
            backpressure_overruns: self.backpressure_overruns,
            stalls_detected: self.stalls_detected,
            publish_to_quiescent: LatencyStats {
                count: self.latency.len(),
                p50_ns: q(0.5),
                p99_ns: q(0.99),
                p999_ns: q(0.999),
                max_ns: self.latency.max(),
                buckets: self.latency_buckets,
                sum_ns: self.latency_sum_ns,
            },
            reclaimed_objects_total: self.reclaimed_objects_total,
            reclaimed_bytes_total: self.reclaimed_bytes_total,
        }
    }

    /// Scan the readers, free what every online reader has passed, update the
    /// stall flags. `caught_up` is the generation a reader must have reported
    /// to count as not lagging before this scan (the previous generation when
    /// called from `publish`, so a reader is lagging only from the publish on).
    fn reclaim_at(&mut self, now: Instant, caught_up: u64) -> usize {
        // SeqCst fence: the writer's half of the Dekker pair with
        // `Reader::online`. Either the reader's online store is before this
        // fence (so the loads below see it) or the reader's fence comes after
        // ours (so its first `root` load sees the root we published).
        fence(Ordering::SeqCst);
        let mut min = u64::MAX;
        self.readers.retain_mut(|r| {
            // Acquire: pairs with the reader's Release stores (report,
            // offline, detach): everything it did with versions older than the
            // value read happens-before the frees below.
            let v = r.slot.load(Ordering::Acquire);
            if v == DETACHED {
                return false;
            }
            if v != r.seen || v >= caught_up {
                r.seen = v;
                r.last_progress = now;
                r.held_back_at_last_scan = false;
            }
            min = min.min(v);
            true
        });

        // Objects retired in the current generation may still be reachable
        // from the published root (the contract of `retire`): a reader coming
        // online later could reach them, so they wait for the next publish
        // even when no reader is online.
        let min = min.min(self.generation);
        let mut freed = 0;
        while self.pending.front().is_some_and(|p| p.tag < min) {
            let Some(p) = self.pending.pop_front() else {
                break;
            };
            self.pending_bytes -= p.bytes;
            self.reclaimed_bytes_total += p.bytes as u64;
            if let Some(at) = p.published_at {
                let ns = now.saturating_duration_since(at).as_nanos();
                let ns = u64::try_from(ns).unwrap_or(u64::MAX);
                self.latency.saturating_record(ns);
                self.latency_buckets[latency_bucket(ns)] += 1;
                self.latency_sum_ns = self.latency_sum_ns.saturating_add(ns);
            }
            drop(p);
            freed += 1;
        }
        self.reclaimed_objects_total += freed as u64;
        self.update_stalls(now);
        freed
    }

    /// A reader is stalled when two consecutive scans found it online,
    /// lagging the current generation and holding back a pending object, with
    /// no progress in between and none for at least `stall_threshold`. (Two
    /// scans, so that even a zero threshold never flags the ordinary lag of a
    /// reader that has not had the chance to see a publish yet.) Counted and
    /// logged once per stall.
    fn update_stalls(&mut self, now: Instant) {
        let newest_tag = self.pending.back().map(|p| p.tag);
        for r in &mut self.readers {
            let holding = holds_back(r.seen, self.generation, newest_tag);
            let stalled = holding
                && r.held_back_at_last_scan
                && now.saturating_duration_since(r.last_progress) >= self.cfg.stall_threshold;
            r.held_back_at_last_scan = holding;
            if stalled && !r.stalled {
                self.stalls_detected += 1;
                eprintln!(
                    "qsbr: reader '{}' stalled: reported generation {} of {}, no progress for {:?}, \
                     {} objects ({} bytes) pending",
                    r.name,
                    r.seen,
                    self.generation,
                    now.saturating_duration_since(r.last_progress),
                    self.pending.len(),
                    self.pending_bytes,
                );
            } else if !stalled && r.stalled {
                eprintln!("qsbr: reader '{}' recovered", r.name);
            }
            r.stalled = stalled;
        }
    }

    /// Wait (bounded) for pending memory to fall under the bound.
    fn backpressure(&mut self) {
        if self.pending_bytes <= self.cfg.max_pending_bytes {
            return;
        }
        self.backpressure_events += 1;
        let start = Instant::now();
        let mut spins = 0u32;
        loop {
            self.reclaim();
            if self.pending_bytes <= self.cfg.max_pending_bytes {
                return;
            }
            // Give up early when waiting cannot help: the oldest pending object
            // was retired in the current generation (only a publish can free
            // it), or everyone holding memory back is already known stalled.
            let hopeless = self
                .pending
                .front()
                .is_some_and(|p| p.tag >= self.generation)
                || self.blockers_all_stalled();
            if hopeless || start.elapsed() >= self.cfg.backpressure_timeout {
                self.backpressure_overruns += 1;
                return;
            }
            if spins < BACKPRESSURE_SPINS {
                spins += 1;
                std::hint::spin_loop();
            } else {
                yield_now();
            }
        }
    }

    /// Whether every reader that holds back a pending object is flagged
    /// stalled (and at least one does).
    fn blockers_all_stalled(&self) -> bool {
        let newest_tag = self.pending.back().map(|p| p.tag);
        let mut blockers = self
            .readers
            .iter()
            .filter(|r| holds_back(r.seen, self.generation, newest_tag))
            .peekable();
        blockers.peek().is_some() && blockers.all(|r| r.stalled)
    }
}

/// Whether a reader whose slot reads `seen` keeps a pending object alive that
/// only its progress can free: it lags the current generation and the newest
/// pending object was retired at or after what it reported.
fn holds_back(seen: u64, generation: u64, newest_tag: Option<u64>) -> bool {
    seen < generation && newest_tag.is_some_and(|t| seen <= t)
}

impl<T> Drop for Writer<T> {
    fn drop(&mut self) {
        self.reclaim();
        if !self.pending.is_empty() {
            // Readers may still hold these: hand them to the last handle.
            let rest = std::mem::take(&mut self.pending);
            self.shared
                .orphans
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .extend(rest);
        }
    }
}

/// A worker's handle: takes snapshots and reports quiescence. `Send`, not
/// `Sync`: it lives on one worker thread at a time. Dropping it unregisters
/// the reader (it goes offline for good).
pub struct Reader<T> {
    shared: Arc<Shared<T>>,
    slot: Arc<Slot>,
    /// The value this reader last stored into its slot: `OFFLINE` or the
    /// generation it last reported. Lets it skip redundant stores.
    reported: u64,
    _not_sync: PhantomData<Cell<()>>,
}

impl<T> Reader<T> {
    /// The snapshot for this burst: one Acquire load of the published root.
    ///
    /// While the snapshot lives, `&mut self` is borrowed, so this reader cannot
    /// report quiescence or go offline; dropping it (end of burst) reports the
    /// generation seen. An offline reader is brought online first.
    #[inline]
    pub fn snapshot(&mut self) -> Snapshot<'_, T> {
        if self.reported == OFFLINE {
            self.online();
        }
        // Acquire: pairs with the Release swap in `Writer::publish`; the
        // version's contents, written before it was published, are visible.
        let root = self.shared.published.root.load(Ordering::Acquire);
        debug_assert!(!root.is_null());
        // SAFETY: `root` is never null (it always holds a `Box::leak`ed
        // version).
        let version = unsafe { NonNull::new_unchecked(root) };
        Snapshot {
            version,
            reader: self,
        }
    }

    /// Go offline (idle or stopping): this reader holds nothing back until its
    /// next `online`/`snapshot`. Cheap; call it whenever the worker idles.
    pub fn offline(&mut self) {
        if self.reported != OFFLINE {
            // Release: everything this reader did with any version
            // happens-before the writer's Acquire load that sees OFFLINE (and
            // the frees that follow it).
            self.slot.store(OFFLINE, Ordering::Release);
            self.reported = OFFLINE;
        }
    }

    /// Come online: from now on the writer waits for this reader's reports.
    #[cold]
    pub fn online(&mut self) {
        if self.reported != OFFLINE {
            return;
        }
        // Acquire: pairs with the Release store in `publish`; having read
        // generation g, every later `root` load sees version g or newer, so
        // announcing g below never claims more than this reader will hold.
        let g = self.shared.published.generation.load(Ordering::Acquire);
        // Release: the slot's previous value was OFFLINE, a Release store; a
        // plain store would not carry that release on (C++20 release
        // sequences), so the writer reading `g` must synchronise here too.
        self.slot.store(g, Ordering::Release);
        // SeqCst fence: the reader's half of the Dekker pair with the fence in
        // `Writer::reclaim_at`. Without it the store above could be delayed
        // past the first `root` load: the writer could see OFFLINE, free the
        // root this reader is about to load, and the reader use it.
        fence(Ordering::SeqCst);
        self.reported = g;
    }

    /// Whether this reader is online (the writer waits for its reports).
    pub fn is_online(&self) -> bool {
        self.reported != OFFLINE
    }
}

impl<T> Drop for Reader<T> {
    fn drop(&mut self) {
        // Release: as in `offline`; the writer then forgets this slot.
        self.slot.store(DETACHED, Ordering::Release);
    }
}

/// A consistent view of the tables for one burst. Derefs to the root.
pub struct Snapshot<'r, T> {
    version: NonNull<Version<T>>,
    reader: &'r mut Reader<T>,
}

impl<T> Snapshot<'_, T> {
    /// The generation this snapshot belongs to.
    #[inline]
    pub fn generation(&self) -> u64 {
        // SAFETY: see `Deref`.
        unsafe { self.version.as_ref().generation }
    }
}

impl<T> Deref for Snapshot<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: the reader is online and has reported at most the
        // generation of this version (reports only happen in `drop`, which
        // needs the `&mut Reader` this snapshot holds), so the writer does not
        // free it; the returned borrow cannot outlive the snapshot.
        unsafe { &self.version.as_ref().value }
    }
}

impl<T> Drop for Snapshot<'_, T> {
    #[inline]
    fn drop(&mut self) {
        let g = self.generation();
        if g != self.reader.reported {
            // Release: every access this burst made to older versions
            // happens-before the writer's Acquire load that sees `g`, and so
            // before it frees them. From here on `self.version` is not touched.
            self.reader.slot.store(g, Ordering::Release);
            self.reader.reported = g;
        }
    }
}

/// Upper bounds (inclusive, ns) of the fixed latency buckets: 10 us to
/// 10 s, 1-2.5-5 per decade (Prometheus' usual spacing).
pub const LATENCY_BUCKETS_NS: [u64; 19] = [
    10_000,
    25_000,
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
    5_000_000_000,
    10_000_000_000,
];
/// Slots of [`LatencyStats::buckets`]: one per bound and one above all.
pub const LATENCY_BUCKETS: usize = LATENCY_BUCKETS_NS.len() + 1;

/// The slot of a sample of `ns`: the first bound at or above it.
fn latency_bucket(ns: u64) -> usize {
    LATENCY_BUCKETS_NS.partition_point(|&b| b < ns)
}

/// Publish-to-quiescent latency: for each published generation, the time from
/// `publish` until the writer saw every online reader report it (resolution:
/// the writer's scans, i.e. its `publish`/`reclaim` calls).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LatencyStats {
    pub count: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
    /// Samples per [`LATENCY_BUCKETS_NS`] bound (not cumulative), the last
    /// slot above every bound; they sum to `count`.
    pub buckets: [u64; LATENCY_BUCKETS],
    /// Sum of every sample (saturating).
    pub sum_ns: u64,
}

/// One reader as the writer last saw it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ReaderStats {
    pub name: String,
    pub online: bool,
    /// The last generation it reported, `None` when offline.
    pub reported_generation: Option<u64>,
    pub stalled: bool,
    /// Time since the writer last saw it report something new or be caught up.
    pub last_progress_age: Duration,
}

/// State of a QSBR domain, for `fwdctl status`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct QsbrStats {
    pub generation: u64,
    pub readers: Vec<ReaderStats>,
    pub pending_objects: usize,
    pub pending_bytes: usize,
    /// Publishes/retires that found pending memory over the bound and waited.
    pub backpressure_events: u64,
    /// Of those, the waits that ended with memory still over the bound
    /// (timeout, or every blocking reader stalled).
    pub backpressure_overruns: u64,
    /// Stalls detected (each stall counted once, when first detected).
    pub stalls_detected: u64,
    pub publish_to_quiescent: LatencyStats,
    pub reclaimed_objects_total: u64,
    pub reclaimed_bytes_total: u64,
}

static_assertions::assert_impl_all!(Writer<u64>: Send);
static_assertions::assert_not_impl_any!(Writer<u64>: Sync);
static_assertions::assert_impl_all!(Reader<u64>: Send);
static_assertions::assert_not_impl_any!(Reader<u64>: Sync);
static_assertions::assert_not_impl_any!(Reader<Cell<u64>>: Send);
static_assertions::assert_not_impl_any!(Reader<std::rc::Rc<u64>>: Send);
static_assertions::assert_not_impl_any!(Snapshot<'static, u64>: Send, Sync);
