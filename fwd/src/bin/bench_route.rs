//! Benchmark of the routing tables (`fwd::route`): load, delete, lookup, updates
//! under a concurrent reader, on the real full IPv4 (901,899) and IPv6 (160,147)
//! tables of `$FWD_DATA/routing` (see `fwd::corpus`), or `--data DIR`.
//!
//! ```text
//! bench_route [--data DIR] [--dpdk-files DIR] [--quick]
//! ```
//! `--dpdk-files DIR` also writes the same routes and lookup addresses in
//! `dpdk-test-fib`'s formats (`-f` "PREFIX NH" lines, `-t` one address per line).
//! Results go to stdout as Markdown tables.
//!
//! For the update workloads (`--only churn`): `BENCH_CHURN=<text>` runs only
//! those whose name contains it, `BENCH_SINGLE=<n>` publishes n one-change
//! versions (default 6000), `BENCH_ALONE_ONLY=1` skips the runs with a reader.
//!
//! `--only load1` loads each full view as one version `BENCH_LOAD_ROUNDS`
//! times (default 15), dropping each, and gives every round's time with the
//! minimum and the median: the least noisy wall-clock view of the load on a
//! shared host, and, under `valgrind --tool=callgrind
//! --toggle-collect='*Routing::apply*'` with `BENCH_LOAD_ROUNDS=2`, its
//! instructions a route (`deploy/bench/counts.sh`). `BENCH_LOAD_FAMILY=4`
//! or `6`: that view only.

use std::hint::black_box;
use std::io::Write;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fwd::qsbr::{self, QsbrConfig};
use fwd::route::{loader, NextHop, NhId, Prefix, Resolved, RouteChange, Routing, Target, HIGH_IDS};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// Deterministic next hop among 16 (same function as the module's tests).
fn nh_of(a: u128, l: u8) -> NhId {
    let h = (a ^ (a >> 64) ^ u128::from(l)).wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835);
    ((h >> 100) % 16) as NhId
}

/// The id of the bench's first next hop: where the control plane numbers the
/// next hops of routes given by gateway (`fwdctl route add ... via`, FPM).
const NH0: NhId = HIGH_IDS;

fn base() -> Routing {
    let b: Vec<RouteChange> = (0..16u32)
        .map(|i| RouteChange::NhAdd {
            id: NH0 + i,
            nh: NextHop {
                gateway: Some(Ipv4Addr::new(192, 0, 2, i as u8 + 1).into()),
                port: (i % 4) as u16,
                mac: Some([2, 0, 0, 0, 0, i as u8]),
            },
        })
        .collect();
    Routing::new().apply(&b).expect("base")
}

fn mib(b: usize) -> f64 {
    b as f64 / (1 << 20) as f64
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn add_changes(p: &[Prefix]) -> Vec<RouteChange> {
    p.iter()
        .map(|&prefix| {
            let (a, l) = match prefix {
                Prefix::V4(p) => (p.addr() as u128, p.len()),
                Prefix::V6(p) => (p.addr(), p.len()),
            };
            RouteChange::Add {
                vrf: 0,
                prefix,
                target: Target::NextHop(NH0 + nh_of(a, l)),
            }
        })
        .collect()
}

fn del_changes(p: &[Prefix]) -> Vec<RouteChange> {
    p.iter()
        .map(|&prefix| RouteChange::Del { vrf: 0, prefix })
        .collect()
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// Fastest of `runs` timings of `f` (seconds). The machine is shared, and
/// other load only ever adds time, so the minimum is the least noisy estimate.
fn best(runs: usize, mut f: impl FnMut() -> Duration) -> f64 {
    (0..runs).map(|_| secs(f())).fold(f64::MAX, f64::min)
}

struct LoadResult {
    one_batch_s: f64,
    batched_s: f64,
    del_one_s: f64,
    del_batched_s: f64,
    loaded: Routing,
}

/// Load and delete-all, as one version and in batches of 1000.
fn load_delete(base: &Routing, changes: &[RouteChange], dels: &[RouteChange]) -> LoadResult {
    let mut r = LoadResult {
        one_batch_s: f64::MAX,
        batched_s: f64::MAX,
        del_one_s: f64::MAX,
        del_batched_s: f64::MAX,
        loaded: base.clone(),
    };
    for _ in 0..3 {
        let t = Instant::now();
        let loaded = base.apply(changes).expect("load");
        r.one_batch_s = r.one_batch_s.min(secs(t.elapsed()));

        let t = Instant::now();
        let mut cur = base.clone();
        for c in changes.chunks(1000) {
            // `apply(&self)` while `cur` is alive: the copy-on-write path a
            // published version takes (the previous one is dropped right after).
            cur = cur.apply(c).expect("batch");
        }
        r.batched_s = r.batched_s.min(secs(t.elapsed()));

        let t = Instant::now();
        let e = loaded.apply(dels).expect("delete");
        r.del_one_s = r.del_one_s.min(secs(t.elapsed()));
        drop(e);

        let t = Instant::now();
        for c in dels.chunks(1000) {
            cur = cur.apply(c).expect("del batch");
        }
        r.del_batched_s = r.del_batched_s.min(secs(t.elapsed()));
        r.loaded = loaded;
    }
    r
}

/// `--only load1`: each view loaded as one version, round after round.
fn load_rounds(base: &Routing, views: &[(&str, &Vec<RouteChange>)]) {
    let rounds: usize = std::env::var("BENCH_LOAD_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(15)
        .max(1);
    println!("## Full view in one version, {rounds} rounds (single core, writer only)\n");
    println!("| view | min | median | every round, ms |");
    println!("|---|---|---|---|");
    let family = std::env::var("BENCH_LOAD_FAMILY").ok();
    for (name, changes) in views {
        if family.as_deref().is_some_and(|f| !name.ends_with(f)) {
            continue;
        }
        let mut t: Vec<f64> = (0..rounds)
            .map(|_| {
                let s = Instant::now();
                let loaded = base.apply(changes).expect("load");
                let el = secs(s.elapsed());
                drop(black_box(loaded));
                el
            })
            .collect();
        let each: Vec<String> = t.iter().map(|x| format!("{:.0}", x * 1e3)).collect();
        t.sort_by(f64::total_cmp);
        println!(
            "| {name} {} | {:.3} s | {:.3} s | {} |",
            changes.len(),
            t[0],
            t[t.len() / 2],
            each.join(" ")
        );
    }
}

fn lookup4_ns(r: &Routing, d: &[u32], burst: usize) -> f64 {
    let h: Vec<u32> = (0..d.len() as u32)
        .map(|i| i.wrapping_mul(0x9E37_79B1))
        .collect();
    let mut out = vec![Resolved::NoRoute; burst];
    let s = best(5, || {
        let t = Instant::now();
        let mut acc = 0u64;
        if burst == 1 {
            for (&a, &hh) in d.iter().zip(&h) {
                if let Resolved::Forward(n) = r.lookup4(0, a, || hh) {
                    acc += u64::from(n);
                }
            }
        } else {
            for (dc, hc) in d.chunks_exact(burst).zip(h.chunks_exact(burst)) {
                r.lookup4_burst(0, dc, |i| hc[i], &mut out);
                if let Resolved::Forward(n) = out[burst - 1] {
                    acc += u64::from(n);
                }
            }
        }
        black_box(acc);
        t.elapsed()
    });
    s * 1e9 / d.len() as f64
}

/// Headers for the worker-like case: UDP from a fixed source to `dsts`.
fn headers4(dsts: &[u32]) -> Vec<fwd::pkt::Parsed> {
    dsts.iter()
        .enumerate()
        .map(|(i, &d)| {
            let mut p = fwd::pkt::Parsed {
                kind: fwd::pkt::L3Kind::V4,
                proto: 17,
                sport: i as u16,
                dport: 53,
                ..Default::default()
            };
            p.src[..4].copy_from_slice(&[10, 0, 0, 1]);
            p.dst[..4].copy_from_slice(&d.to_be_bytes());
            p
        })
        .collect()
}

/// Bursts of 32 as the worker routes them: the flow hash comes from the
/// parsed header and is computed only when the lookup asks for it (a route
/// that is an ECMP group). ns per packet, best of 5.
fn hashed4_ns(r: &Routing, hdrs: &[fwd::pkt::Parsed], d: &[u32]) -> f64 {
    let mut out = [Resolved::NoRoute; 32];
    let s = best(5, || {
        let t = Instant::now();
        let mut acc = 0u64;
        for (dc, hc) in d.chunks_exact(32).zip(hdrs.chunks_exact(32)) {
            r.lookup4_burst(0, dc, |i| fwd::pkt::flow_hash(&hc[i]), &mut out);
            if let Resolved::Forward(n) = out[31] {
                acc += u64::from(n);
            }
        }
        black_box(acc);
        t.elapsed()
    });
    s * 1e9 / d.len() as f64
}

fn lookup6_ns(r: &Routing, d: &[u128], burst: usize) -> f64 {
    let h: Vec<u32> = (0..d.len() as u32)
        .map(|i| i.wrapping_mul(0x9E37_79B1))
        .collect();
    let mut out = vec![Resolved::NoRoute; burst];
    let s = best(5, || {
        let t = Instant::now();
        let mut acc = 0u64;
        if burst == 1 {
            for (&a, &hh) in d.iter().zip(&h) {
                if let Resolved::Forward(n) = r.lookup6(0, a, || hh) {
                    acc += u64::from(n);
                }
            }
        } else {
            for (dc, hc) in d.chunks_exact(burst).zip(h.chunks_exact(burst)) {
                r.lookup6_burst(0, dc, |i| hc[i], &mut out);
                if let Resolved::Forward(n) = out[burst - 1] {
                    acc += u64::from(n);
                }
            }
        }
        black_box(acc);
        t.elapsed()
    });
    s * 1e9 / d.len() as f64
}

/// The writer alone: changes/s.
fn churn_alone(start: &Routing, batches: &[Vec<RouteChange>]) -> f64 {
    let t = Instant::now();
    let mut cur = start.clone();
    let mut total = 0;
    for b in batches {
        cur = cur.apply(b).expect("churn batch");
        total += b.len();
    }
    black_box(&cur);
    total as f64 / secs(t.elapsed())
}

/// Writer applies `batches` (each a Vec of changes) and publishes each version
/// through a QSBR domain, as the control lcore does, while a reader thread
/// looks up bursts continuously, taking one snapshot per burst of 32 as a
/// worker does. Replaced versions are freed on the writer's thread once the
/// reader has passed a quiescent point. Returns (changes/s, reader
/// Mlookups/s during the run, versions published).
fn churn(start: &Routing, batches: &[Vec<RouteChange>], dsts: &[u32]) -> (f64, f64, usize) {
    let mut w = qsbr::domain(start.clone(), QsbrConfig::default());
    let mut rd = w.register_reader("bench");
    let stop = Arc::new(AtomicBool::new(false));
    let looked = Arc::new(AtomicU64::new(0));
    let reader = {
        let (stop, looked) = (stop.clone(), looked.clone());
        let d = dsts.to_vec();
        std::thread::spawn(move || {
            let h = [7u32; 32];
            let mut out = [Resolved::NoRoute; 32];
            let mut off = 0;
            // Relaxed: a plain stop flag, no data is published through it.
            while !stop.load(Ordering::Relaxed) {
                for c in d[off..off + 64 * 32].chunks_exact(32) {
                    let snap = rd.snapshot();
                    snap.lookup4_burst(0, c, |i| h[i], &mut out);
                    black_box(&out);
                }
                off = (off + 64 * 32) % (d.len() - 64 * 32);
                // Relaxed: a statistic sampled by the writer, orders nothing.
                looked.fetch_add(64 * 32, Ordering::Relaxed);
            }
            rd.offline();
        })
    };
    std::thread::sleep(Duration::from_millis(50));
    // Relaxed: statistic.
    let n0 = looked.load(Ordering::Relaxed);
    let t = Instant::now();
    let mut total = 0usize;
    for b in batches {
        let next = w.current().apply(b).expect("churn batch");
        w.publish(next, b.len() * 256);
        total += b.len();
    }
    let el = secs(t.elapsed());
    // Relaxed: statistic.
    let n = looked.load(Ordering::Relaxed) - n0;
    // Relaxed: see above.
    stop.store(true, Ordering::Relaxed);
    reader.join().expect("reader");
    (total as f64 / el, n as f64 / el / 1e6, batches.len())
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut data: Option<PathBuf> = None;
    let mut dpdk: Option<PathBuf> = None;
    let mut quick = false;
    let mut only: Option<String> = None;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--only" => only = args.next(),
            "--data" => data = args.next().map(PathBuf::from),
            "--dpdk-files" => dpdk = args.next().map(PathBuf::from),
            "--quick" => quick = true,
            _ => {
                eprintln!(
                    "usage: bench_route [--data DIR] [--dpdk-files DIR] [--quick] \
                     [--only load|load1|lookup|hash|churn]"
                );
                std::process::exit(2);
            }
        }
    }
    let data = data.unwrap_or_else(|| {
        fwd::corpus::dir("routing").unwrap_or_else(|e| {
            eprintln!("bench_route: {e} (or pass --data DIR)");
            std::process::exit(2)
        })
    });

    println!("# bench_route\n");
    let t = Instant::now();
    let v4 = loader::read_prefixes(&data.join("ipv4_fulltable_gaissmai.txt.gz")).expect("v4");
    let p4_s = secs(t.elapsed());
    let t = Instant::now();
    let v6 = loader::read_prefixes(&data.join("ipv6_fulltable_gaissmai.txt")).expect("v6");
    let p6_s = secs(t.elapsed());
    println!(
        "Parsed {} IPv4 prefixes in {:.3} s (gunzip + parse), {} IPv6 in {:.3} s.\n",
        v4.len(),
        p4_s,
        v6.len(),
        p6_s
    );

    let base = base();
    let a4 = add_changes(&v4);
    let d4 = del_changes(&v4);
    let a6 = add_changes(&v6);
    let d6 = del_changes(&v6);

    if only.as_deref() == Some("load1") {
        return load_rounds(&base, &[("IPv4", &a4), ("IPv6", &a6)]);
    }
    let run = |s: &str| only.as_deref().is_none_or(|o| o == s);
    if !run("load") {
        let both = base.apply(&a4).and_then(|r| r.apply(&a6)).expect("load");
        return rest(&both, &v4, &v6, quick, dpdk, &run);
    }
    let rss0 = rss_kib();
    let r4 = load_delete(&base, &a4, &d4);
    let r6 = load_delete(&base, &a6, &d6);
    let both = r4.loaded.apply(&a6).expect("both");
    let rss1 = rss_kib();

    println!("## Load and delete (single core, writer only; best of 3)\n");
    println!("| table | load, 1 version | load, batches of 1000 | delete all, 1 version | delete all, batches of 1000 |");
    println!("|---|---|---|---|---|");
    for (name, r, n) in [
        ("IPv4 901,899", &r4, v4.len()),
        ("IPv6 160,147", &r6, v6.len()),
    ] {
        println!(
            "| {name} | {:.3} s ({:.2} M routes/s) | {:.3} s ({:.2} M/s) | {:.3} s | {:.3} s |",
            r.one_batch_s,
            n as f64 / r.one_batch_s / 1e6,
            r.batched_s,
            n as f64 / r.batched_s / 1e6,
            r.del_one_s,
            r.del_batched_s
        );
    }

    let s4 = r4.loaded.stats();
    let s6 = r6.loaded.stats();
    let sb = both.stats();
    println!("\n## Memory (own accounting: every allocation reachable from the version)\n");
    println!("| version | RIB v4 | FIB v4 | RIB v6 | FIB v6 | total | tbl24 private pages v4/v6 | tbl8 groups v4/v6 | pairs v4/v6 | RIB nodes v4/v6 |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for (name, s) in [("IPv4 only", &s4), ("IPv6 only", &s6), ("both", &sb)] {
        let v = &s.vrfs[0];
        println!(
            "| {name} | {:.1} MiB | {:.1} MiB | {:.1} MiB | {:.1} MiB | {:.1} MiB | {}/{} | {}/{} | {}/{} | {}/{} |",
            mib(v.rib4_bytes),
            mib(v.fib4_bytes),
            mib(v.rib6_bytes),
            mib(v.fib6_bytes),
            mib(s.total_bytes),
            v.tbl24_pages4,
            v.tbl24_pages6,
            v.tbl8_used4,
            v.tbl8_used6,
            v.pairs4,
            v.pairs6,
            v.rib_nodes4,
            v.rib_nodes6
        );
    }
    println!(
        "\nEmpty table (16 next hops, no VRF): {} bytes. Process RSS grew {:.1} MiB over the load phase \
         (includes the change vectors and dropped versions' freed-but-cached heap).",
        base.memory_bytes(),
        (rss1.saturating_sub(rss0)) as f64 / 1024.0
    );
    rest(&both, &v4, &v6, quick, dpdk, &run);
}

fn rest(
    both: &Routing,
    v4: &[Prefix],
    v6: &[Prefix],
    quick: bool,
    dpdk: Option<PathBuf>,
    run: &dyn Fn(&str) -> bool,
) {
    // ---- lookups ----
    let n = 1 << 20; // as many as dpdk-test-fib -t files hold
    let mut rng = Rng(0x0123_4567_89ab_cdef);
    let rand4: Vec<u32> = (0..n).map(|_| rng.next() as u32).collect();
    let tab4: Vec<u32> = (0..n)
        .map(|_| {
            let Prefix::V4(p) = v4[(rng.next() % v4.len() as u64) as usize] else {
                unreachable!()
            };
            p.addr() | (rng.next() as u32 & !fwd::route::mask4(p.len()))
        })
        .collect();
    let rand6: Vec<u128> = (0..n)
        .map(|_| (u128::from(rng.next()) << 64) | u128::from(rng.next()))
        .collect();
    let tab6: Vec<u128> = (0..n)
        .map(|_| {
            let Prefix::V6(p) = v6[(rng.next() % v6.len() as u64) as usize] else {
                unreachable!()
            };
            let r = (u128::from(rng.next()) << 64) | u128::from(rng.next());
            p.addr() | (r & !fwd::route::mask6(p.len()))
        })
        .collect();

    if run("hash") {
        // One ECMP group anywhere made the old worker hash every packet.
        let grouped = both
            .apply(&[
                RouteChange::GroupAdd {
                    id: 1,
                    members: vec![(NH0, 1), (NH0 + 1, 1)],
                },
                RouteChange::Upsert {
                    vrf: 0,
                    prefix: "0.0.0.0/0".parse().expect("default"),
                    target: Target::Group(1),
                },
            ])
            .expect("group");
        let (h_rand, h_tab) = (headers4(&rand4), headers4(&tab4));
        println!("\n## IPv4 bursts of 32 with the worker's flow hash (ns per packet, best of 5 passes over {n} addresses)\n");
        println!("| addresses | no group | an ECMP default route (group) |");
        println!("|---|---|---|");
        for (name, d, h) in [
            ("uniform random", &rand4, &h_rand),
            ("drawn from the table", &tab4, &h_tab),
        ] {
            println!(
                "| {name} | {:.2} | {:.2} |",
                hashed4_ns(both, h, d),
                hashed4_ns(&grouped, h, d)
            );
        }
    }

    if run("lookup") {
        println!("\n## Lookup, full IPv4 + IPv6 tables loaded, single core (ns per lookup, best of 5 passes over {n} addresses)\n");
        println!("| addresses | single `lookup4/6` | `*_burst` of 32 | `*_burst` of 64 |");
        println!("|---|---|---|---|");
        for (name, d) in [
            ("IPv4 uniform random", &rand4),
            ("IPv4 drawn from the table", &tab4),
        ] {
            println!(
                "| {name} | {:.1} | {:.1} | {:.1} |",
                lookup4_ns(both, d, 1),
                lookup4_ns(both, d, 32),
                lookup4_ns(both, d, 64)
            );
        }
        for (name, d) in [
            ("IPv6 uniform random", &rand6),
            ("IPv6 drawn from the table", &tab6),
        ] {
            println!(
                "| {name} | {:.1} | {:.1} | {:.1} |",
                lookup6_ns(both, d, 1),
                lookup6_ns(both, d, 32),
                lookup6_ns(both, d, 64)
            );
        }
    }

    // ---- updates with a concurrent reader ----
    if run("churn") {
        let k = if quick { 50 } else { 300 };
        let mut batches = Vec::new();
        let mut single = Vec::new();
        for i in 0..k {
            // Replace 1000 random routes' next hops.
            let b: Vec<RouteChange> = (0..1000)
                .map(|j| {
                    let p = v4[(rng.next() % v4.len() as u64) as usize];
                    RouteChange::Upsert {
                        vrf: 0,
                        prefix: p,
                        target: Target::NextHop(NH0 + ((i + j) % 16) as NhId),
                    }
                })
                .collect();
            batches.push(b);
        }
        // BENCH_SINGLE=<n>: n one-change versions (default 20 per batch).
        let n_single = std::env::var("BENCH_SINGLE")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(k * 20);
        for i in 0..n_single {
            let p = v4[(rng.next() % v4.len() as u64) as usize];
            single.push(vec![RouteChange::Upsert {
                vrf: 0,
                prefix: p,
                target: Target::NextHop(NH0 + (i % 16) as NhId),
            }]);
        }
        // Delete then re-add 1000 random routes per batch pair (structural churn).
        let mut ad = Vec::new();
        for _ in 0..k / 2 {
            let ps: Vec<Prefix> = (0..1000)
                .map(|_| v4[(rng.next() % v4.len() as u64) as usize])
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            ad.push(del_changes(&ps));
            ad.push(add_changes(&ps));
        }
        let reader_alone = {
            let h = [7u32; 32];
            let mut out = [Resolved::NoRoute; 32];
            let t = Instant::now();
            for c in tab4.chunks_exact(32) {
                both.lookup4_burst(0, c, |i| h[i], &mut out);
                black_box(&out);
            }
            tab4.len() as f64 / secs(t.elapsed()) / 1e6
        };
        println!("\n## Updates while another thread looks up bursts of 32 (IPv4 full table; 2 cores shared)\n");
        println!("Reader alone: {reader_alone:.1} M lookups/s.\n");
        println!("| workload | versions published | writer alone: changes/s | with reader: changes/s | reader M lookups/s meanwhile |");
        println!("|---|---|---|---|---|");
        for (name, bs) in [
            ("replace next hop, batches of 1000", &batches),
            ("delete 1000 / re-add 1000, alternating batches", &ad),
            ("replace next hop, 1 change per version", &single),
        ] {
            // BENCH_CHURN=<text>: only the workloads whose name contains it.
            if std::env::var("BENCH_CHURN").is_ok_and(|w| !name.contains(w.as_str())) {
                continue;
            }
            let alone = churn_alone(both, bs);
            if std::env::var_os("BENCH_ALONE_ONLY").is_some() {
                println!("| {name} | {:.3} M/s |", alone / 1e6);
                continue;
            }
            let (rate, rd, nv) = churn(both, bs, &tab4);
            println!(
                "| {name} | {nv} | {:.3} M/s | {:.3} M/s | {rd:.1} |",
                alone / 1e6,
                rate / 1e6
            );
        }
    }

    if let Some(dir) = dpdk {
        std::fs::create_dir_all(&dir).expect("mkdir");
        let w = |name: &str, f: &dyn Fn(&mut dyn Write)| {
            let mut out =
                std::io::BufWriter::new(std::fs::File::create(dir.join(name)).expect("create"));
            f(&mut out);
        };
        w("v4_routes.txt", &|o| {
            for p in v4 {
                let Prefix::V4(p) = p else { unreachable!() };
                writeln!(o, "{p} {}", nh_of(p.addr() as u128, p.len()) + 1).expect("write");
            }
        });
        w("v6_routes.txt", &|o| {
            for p in v6 {
                let Prefix::V6(p) = p else { unreachable!() };
                writeln!(o, "{p} {}", nh_of(p.addr(), p.len()) + 1).expect("write");
            }
        });
        let m = 1 << 20;
        w("v4_lookup_rand.txt", &|o| {
            for a in &rand4[..m] {
                writeln!(o, "{}", Ipv4Addr::from(*a)).expect("write");
            }
        });
        w("v4_lookup_table.txt", &|o| {
            for a in &tab4[..m] {
                writeln!(o, "{}", Ipv4Addr::from(*a)).expect("write");
            }
        });
        w("v6_lookup_rand.txt", &|o| {
            for a in &rand6[..m] {
                writeln!(o, "{}", Ipv6Addr::from(*a)).expect("write");
            }
        });
        w("v6_lookup_table.txt", &|o| {
            for a in &tab6[..m] {
                writeln!(o, "{}", Ipv6Addr::from(*a)).expect("write");
            }
        });
        println!("\nWrote dpdk-test-fib inputs to {}", dir.display());
    }
}
