//! Benchmark of the QSBR domain (`fwd::qsbr`): reader cost per burst, publish
//! rates with busy readers, publish-to-quiescent latency.
//!
//! Run (release; results are recorded in bench-results/qsbr.md):
//!
//! ```text
//! cargo run --release --bin bench_qsbr [seconds-per-run [attempts]]
//! ```
//!
//! The machine is shared: each row is repeated (up to `attempts`, default 8)
//! until the writer and the reader core were on-CPU >= 97% of the run, and the
//! best-served attempt is printed with its on-CPU shares.
//!
//! The writer runs on the first core, readers on the second (both readers on
//! the same one when there are two, since the reference machine has 2 cores).
//! Prints Markdown tables.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use fwd::qsbr::{domain, QsbrConfig, QsbrStats, Reader, Writer};

/// The benchmark's root: one Arc'd table, copied on write.
struct Root {
    table: Arc<Vec<u64>>,
}

/// Table for the single-change scenarios (a 512-byte copy per change).
const SMALL: usize = 64;
/// Table for the batch scenarios (512 KiB, copied once per batch).
const LARGE: usize = 65_536;
const BATCH: usize = 1000;

fn pin(core: Option<core_affinity::CoreId>) {
    if let Some(core) = core {
        // Best effort: an unpinned run is still a run; the report says so.
        if !core_affinity::set_for_current(core) {
            eprintln!("bench_qsbr: could not pin to core {}", core.id);
        }
    }
}

fn new_domain(len: usize) -> Writer<Root> {
    domain(
        Root {
            table: Arc::new((0..len as u64).collect()),
        },
        QsbrConfig::default(),
    )
}

/// (on-CPU ns, runqueue-wait ns) of the calling thread so far, from
/// `/proc/thread-self/schedstat`: shows whether a thread really had its CPU
/// (the machine is shared). Zeros where unavailable.
fn schedstat() -> (u64, u64) {
    let Ok(text) = std::fs::read_to_string("/proc/thread-self/schedstat") else {
        return (0, 0);
    };
    let mut fields = text
        .split_whitespace()
        .map(|f| f.parse::<u64>().unwrap_or(0));
    (fields.next().unwrap_or(0), fields.next().unwrap_or(0))
}

struct ReaderResult {
    snapshots: u64,
    changes: u64,
    cpu_ns: u64,
    wait_ns: u64,
}

/// Busy-loop snapshot / one lookup / drop until `stop`.
fn reader_loop(mut r: Reader<Root>, stop: &AtomicBool, started: &AtomicUsize) -> ReaderResult {
    let mut iters = 0u64;
    let mut changes = 0u64;
    let mut last = 0u64;
    drop(r.snapshot());
    let (cpu0, wait0) = schedstat();
    started.fetch_add(1, Ordering::Release);
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..64 {
            let s = r.snapshot();
            let g = s.generation();
            black_box(s.table[iters as usize % s.table.len()]);
            changes += u64::from(g != last);
            last = g;
            drop(s);
            iters += 1;
        }
    }
    r.offline();
    let (cpu1, wait1) = schedstat();
    ReaderResult {
        snapshots: iters,
        changes,
        cpu_ns: cpu1 - cpu0,
        wait_ns: wait1 - wait0,
    }
}

#[derive(Clone, Copy)]
enum Change {
    /// New root sharing the table: the protocol's own cost.
    PublishOnly,
    /// One entry changed in a copy of the small table.
    Single,
    /// 1000 entries changed in a copy of the large table.
    Batch,
}

struct Run {
    readers: usize,
    publishes: u64,
    changes_per_publish: usize,
    elapsed: Duration,
    max_pending: usize,
    stats: QsbrStats,
    reader_snapshots: u64,
    reader_changes: u64,
    reader_cpu_ns: u64,
    reader_wait_ns: u64,
    writer_cpu_ns: u64,
    writer_wait_ns: u64,
}

fn run(change: Change, readers: usize, secs: f64, cores: &[core_affinity::CoreId]) -> Run {
    let len = match change {
        Change::Batch => LARGE,
        _ => SMALL,
    };
    let mut w = new_domain(len);
    let stop = Arc::new(AtomicBool::new(false));
    let started = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..readers)
        .map(|i| {
            let r = w.register_reader(&format!("reader{i}"));
            let (stop, started) = (stop.clone(), started.clone());
            let core = cores.get(1).or(cores.first()).copied();
            thread::spawn(move || {
                pin(core);
                reader_loop(r, &stop, &started)
            })
        })
        .collect();
    while started.load(Ordering::Acquire) < readers {
        thread::yield_now();
    }
    let bytes = len * 8;
    let limit = Duration::from_secs_f64(secs);
    let mut publishes = 0u64;
    let mut max_pending = 0usize;
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let (cpu0, wait0) = schedstat();
    let start = Instant::now();
    let elapsed = loop {
        for _ in 0..64 {
            let mut table = w.current().table.clone();
            let changes = match change {
                Change::PublishOnly => 0,
                Change::Single => 1,
                Change::Batch => BATCH,
            };
            if changes > 0 {
                let t = Arc::make_mut(&mut table);
                for _ in 0..changes {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    t[x as usize % len] = x;
                }
            }
            let retired = if changes > 0 { bytes } else { 0 };
            w.publish(Root { table }, retired);
            max_pending = max_pending.max(w.pending_objects());
            publishes += 1;
        }
        let e = start.elapsed();
        if e >= limit {
            break e;
        }
    };
    let (cpu1, wait1) = schedstat();
    stop.store(true, Ordering::Relaxed);
    let (mut reader_snapshots, mut reader_changes) = (0, 0);
    let (mut reader_cpu_ns, mut reader_wait_ns) = (0, 0);
    for h in handles {
        let r = h.join().expect("reader thread");
        reader_snapshots += r.snapshots;
        reader_changes += r.changes;
        reader_cpu_ns += r.cpu_ns;
        reader_wait_ns += r.wait_ns;
    }
    let stats = w.stats();
    Run {
        readers,
        publishes,
        changes_per_publish: match change {
            Change::PublishOnly => 0,
            Change::Single => 1,
            Change::Batch => BATCH,
        },
        elapsed,
        max_pending,
        stats,
        reader_snapshots,
        reader_changes,
        reader_cpu_ns,
        reader_wait_ns,
        writer_cpu_ns: cpu1 - cpu0,
        writer_wait_ns: wait1 - wait0,
    }
}

impl Run {
    /// The smaller on-CPU share of the writer and of the reader core (two
    /// readers share one core, so their sum is that core's share).
    fn cpu_share(&self) -> f64 {
        let s = self.elapsed.as_nanos() as f64;
        let writer = self.writer_cpu_ns as f64 / s;
        if self.readers == 0 {
            writer
        } else {
            writer.min(self.reader_cpu_ns as f64 / s)
        }
    }
}

/// ns per snapshot + lookup + drop when no publish happens.
fn reader_cost_unchanged(iters: u64) -> f64 {
    let mut w = new_domain(SMALL);
    let mut r = w.register_reader("r");
    drop(r.snapshot());
    let start = Instant::now();
    for i in 0..iters {
        let s = r.snapshot();
        black_box(s.table[i as usize % SMALL]);
    }
    let ns = start.elapsed().as_nanos() as f64 / iters as f64;
    drop(r);
    w.reclaim();
    ns
}

/// Reader cost measured on the reader core while the writer publishes flat
/// out (publish only) on the other: each snapshot + lookup + drop is timed on
/// its own (Instant pairs; their own cost, calibrated, is subtracted), split by
/// whether it saw a new generation (root line and new version missed in cache,
/// slot store) or not.
fn reader_cost_cross_core(secs: f64, cores: &[core_affinity::CoreId]) -> CrossCore {
    let mut w = new_domain(SMALL);
    let mut r = w.register_reader("r");
    let stop = Arc::new(AtomicBool::new(false));
    let core = cores.get(1).or(cores.first()).copied();
    let stop2 = stop.clone();
    let reader = thread::spawn(move || {
        pin(core);
        let timer = {
            let n = 1_000_000u32;
            let start = Instant::now();
            for _ in 0..n {
                let a = Instant::now();
                black_box(Instant::now() - a);
            }
            start.elapsed().as_nanos() as f64 / f64::from(n)
        };
        let (mut changed, mut unchanged) = ((0u128, 0u64), (0u128, 0u64));
        let mut last = 0;
        let mut i = 0usize;
        let start = Instant::now();
        let (cpu0, _) = schedstat();
        while !stop2.load(Ordering::Relaxed) {
            let t0 = Instant::now();
            let s = r.snapshot();
            let g = s.generation();
            black_box(s.table[i % SMALL]);
            drop(s);
            let ns = t0.elapsed().as_nanos();
            let acc = if g != last {
                &mut changed
            } else {
                &mut unchanged
            };
            acc.0 += ns;
            acc.1 += 1;
            last = g;
            i += 1;
        }
        let reader_cpu = (schedstat().0 - cpu0) as f64 / start.elapsed().as_nanos() as f64;
        let mean = |(sum, n): (u128, u64)| sum as f64 / n.max(1) as f64 - timer;
        let share = changed.1 as f64 / (changed.1 + unchanged.1).max(1) as f64;
        (mean(changed), mean(unchanged), share, timer, reader_cpu)
    });
    let (cpu0, _) = schedstat();
    let start = Instant::now();
    while start.elapsed().as_secs_f64() < secs {
        for _ in 0..64 {
            let table = w.current().table.clone();
            w.publish(Root { table }, 0);
        }
    }
    let writer_cpu = (schedstat().0 - cpu0) as f64 / start.elapsed().as_nanos() as f64;
    stop.store(true, Ordering::Relaxed);
    let (changed_ns, unchanged_ns, changed_share, timer_ns, reader_cpu) =
        reader.join().expect("reader cost thread");
    CrossCore {
        changed_ns,
        unchanged_ns,
        changed_share,
        timer_ns,
        cpu_share: writer_cpu.min(reader_cpu),
    }
}

struct CrossCore {
    changed_ns: f64,
    unchanged_ns: f64,
    changed_share: f64,
    timer_ns: f64,
    /// The smaller on-CPU share of the two threads (1.0 = had its core).
    cpu_share: f64,
}

/// The machine is shared with other jobs: repeat a measurement up to
/// `attempts` times until every thread had its core for at least `CLEAN` of
/// the time, and keep the attempt where the least-served thread was served
/// best. Returns (result, that share, attempts made).
fn cleanest<R>(attempts: usize, mut measure: impl FnMut() -> (R, f64)) -> (R, f64, usize) {
    const CLEAN: f64 = 0.97;
    let (mut best, mut best_share) = measure();
    let mut tries = 1;
    while best_share < CLEAN && tries < attempts {
        let (r, share) = measure();
        tries += 1;
        if share > best_share {
            (best, best_share) = (r, share);
        }
    }
    (best, best_share, tries)
}

fn main() {
    let secs: f64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1.0);
    let attempts: usize = std::env::args()
        .nth(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(8);
    let cores = core_affinity::get_core_ids().unwrap_or_default();
    pin(cores.first().copied());
    println!(
        "cores seen: {}; writer on core 0, readers on core 1\n",
        cores.len()
    );

    // Reader cost on the reader core, away from the writer: best of 5.
    let unchanged = {
        let core = cores.get(1).or(cores.first()).copied();
        thread::spawn(move || {
            pin(core);
            (0..5)
                .map(|_| reader_cost_unchanged(50_000_000))
                .fold(f64::INFINITY, f64::min)
        })
        .join()
        .expect("reader cost thread")
    };
    let (x, x_cpu, x_tries) = cleanest(attempts, || {
        let x = reader_cost_cross_core(secs, &cores);
        let share = x.cpu_share;
        (x, share)
    });
    println!("## Reader cost (snapshot + 1 lookup + drop)\n");
    println!("| case | ns per burst |");
    println!("|---|---|");
    println!(
        "| no writer activity, tight loop (generation unchanged, no slot store; best of 5 x 50M) | {unchanged:.2} |"
    );
    let unchanged_x = if x.unchanged_ns < 1.0 {
        "< 1 (below the timer's resolution)".to_string()
    } else {
        format!("{:.1}", x.unchanged_ns)
    };
    println!(
        "| writer publishing flat out on the other core, generation unchanged (each burst timed, minus {:.1} ns timer cost) | {unchanged_x} |",
        x.timer_ns
    );
    println!(
        "| same run, generation changed ({:.1}% of bursts): root and version lines missed, slot store | {:.1} |",
        100.0 * x.changed_share,
        x.changed_ns
    );
    println!(
        "\n(cross-core run: least on-CPU share {:.0}% after {x_tries} attempt(s))\n",
        100.0 * x_cpu
    );

    println!("## Publish rates and publish->quiescent latency ({secs} s per row)\n");
    println!(
        "| scenario | readers | publishes/s | changes/s | max pending objects | backpressure (events/overruns) | latency p50 / p99 / p99.9 / max (us) | reader-core ns/snapshot | snapshots seeing a new gen | on-CPU % writer / readers (runqueue wait ms) | attempts |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for (name, change) in [
        ("publish only (root shares the table)", Change::PublishOnly),
        ("single change (64-entry table copied)", Change::Single),
        (
            "1000-change batch (65536-entry table copied)",
            Change::Batch,
        ),
    ] {
        for readers in 0..=2 {
            let (r, _, tries) = cleanest(attempts, || {
                let r = run(change, readers, secs, &cores);
                let share = r.cpu_share();
                (r, share)
            });
            let s = r.elapsed.as_secs_f64();
            let l = &r.stats.publish_to_quiescent;
            let us = |ns: u64| ns as f64 / 1000.0;
            // Reader-core time per snapshot (both readers share one core).
            let reader_ns = if r.reader_snapshots > 0 {
                format!("{:.1}", s * 1e9 / r.reader_snapshots as f64)
            } else {
                "-".into()
            };
            let seen = if r.reader_snapshots > 0 {
                format!(
                    "{:.2}%",
                    100.0 * r.reader_changes as f64 / r.reader_snapshots as f64
                )
            } else {
                "-".into()
            };
            let pct = |ns: u64| 100.0 * ns as f64 / (s * 1e9);
            let ms = |ns: u64| ns as f64 / 1e6;
            let cpu = format!(
                "{:.0} ({:.1}) / {:.0} ({:.1})",
                pct(r.writer_cpu_ns),
                ms(r.writer_wait_ns),
                pct(r.reader_cpu_ns),
                ms(r.reader_wait_ns)
            );
            println!(
                "| {name} | {readers} | {:.0} | {:.0} | {} | {}/{} | {:.2} / {:.2} / {:.2} / {:.2} | {reader_ns} | {seen} | {cpu} | {tries} |",
                r.publishes as f64 / s,
                (r.publishes * r.changes_per_publish as u64) as f64 / s,
                r.max_pending,
                r.stats.backpressure_events,
                r.stats.backpressure_overruns,
                us(l.p50_ns),
                us(l.p99_ns),
                us(l.p999_ns),
                us(l.max_ns),
            );
        }
    }
}
