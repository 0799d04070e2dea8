//! Classifier benchmark: lookups, builds, updates and memory, side by side
//! with DPDK's `dpdk-test-acl` on the same rules and traces.
//!
//! Run (release, pinned to one CPU):
//! `taskset -c 1 target/release/bench_acl [DATA_DIR] > report.md`;
//! `DATA_DIR` defaults to `$FWD_DATA/classbench` (see `fwd::corpus`). Tuning aids:
//! `BENCH_ACL_SWEEP=1` (tree parameters), `BENCH_ACL_LARGE=1` (50k and 100k
//! sets beside dpdk-test-acl), `BENCH_ACL_SETS="FILE..."` (the same for
//! ClassBench rule files given by path; with `BENCH_ACL_V6=1`, those sets
//! written as IPv6 against IPv4), `BENCH_ACL_OVERLAY=1` (cost of a
//! 64-rule overlay). DPDK is run as
//! `dpdk-test-acl -l 1 --no-pci --no-huge -m 1024 --no-shconf --no-telemetry`
//! if it is on PATH; its build time comes from the LD_PRELOAD shim
//! deploy/bench/acl_build_timer.c (compiled with `cc` into a temp dir), its
//! memory from the ACL library's debug log ("runtime memory footprint").
//!
//! `BENCH_ACL_PASSES=<n>` (with `BENCH_ACL_SET=acl1_10k` or `acl2_10k`,
//! lyxocs', default acl1_10k): builds the set and looks up its 100,000
//! keys inside random rules `n` times in bursts, untimed, for
//! `deploy/bench/counts.sh` to count instructions a lookup under callgrind
//! (2 passes less 0).

use std::fmt::Write as _;
use std::hint::black_box;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fwd::acl::{
    parse_rules, parse_trace, Classifier, ClassifierWriter, Config, FlowCache, IpPrefix, Key,
    Linear, Rule, RuleMatch, TraceTag, Update, TCP_FLAGS_MAX,
};

const BURST: usize = 32;

/// xorshift64*: deterministic, dependency-free.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn v4_bits(p: Option<IpPrefix>) -> (u32, u8) {
    match p {
        Some(IpPrefix::V4 { addr, len }) => (u32::from(addr), len),
        _ => (0, 0),
    }
}

/// A header inside rule `r`'s box, ClassBench trace_generator style.
fn point_in(r: &RuleMatch, rng: &mut Rng) -> Key {
    let pick = |p: Option<IpPrefix>, rng: &mut Rng| {
        let (a, l) = v4_bits(p);
        let host = if l == 32 { 0 } else { u32::MAX >> l };
        (a | (rng.next() as u32 & host)) as u128
    };
    let port = |lo: u16, hi: u16, rng: &mut Rng| lo + rng.below(hi as u64 - lo as u64 + 1) as u16;
    let proto = if r.proto.mask == 0xFF {
        r.proto.value
    } else {
        [6u8, 17, 1, 47][rng.below(4) as usize]
    };
    Key {
        src: pick(r.src, rng),
        dst: pick(r.dst, rng),
        sport: port(r.sport.lo, r.sport.hi, rng),
        dport: port(r.dport.lo, r.dport.hi, rng),
        proto,
        tcp_flags: r.tcp_flags.value | (rng.next() as u16 & !r.tcp_flags.mask & TCP_FLAGS_MAX),
        ..Key::default()
    }
}

/// `n` headers, each a random point of a random rule of `rules` (seeded,
/// reproducible): the trace for a set that ships without one.
fn keys_inside(rules: &[Rule], rng: &mut Rng, n: usize) -> Vec<Key> {
    (0..n)
        .map(|_| point_in(&rules[rng.below(rules.len() as u64) as usize].matches, rng))
        .collect()
}

/// The large-set modes' headers for `rules`: 100,000 of [`keys_inside`],
/// from one seed.
fn large_keys(rules: &[Rule]) -> Vec<Key> {
    keys_inside(rules, &mut Rng(0x5EED_1A26), 100_000)
}

/// The headers of a ClassBench trace file's text.
fn trace_keys(text: &str) -> Vec<Key> {
    parse_trace(text)
        .expect("trace")
        .iter()
        .map(|t| t.key)
        .collect()
}

/// Keys (1 in `step`) whose burst answer differs from a linear scan's.
fn mismatches(c: &Classifier, rules: &[Rule], keys: &[Key], step: usize) -> usize {
    let lin = Linear::new(rules);
    let mut out = vec![None; keys.len()];
    c.classify_burst(keys, &mut out);
    keys.iter()
        .zip(&out)
        .step_by(step)
        .filter(|(k, m)| lin.classify(k).map(|i| rules[i].id) != m.map(|e| e.id()))
        .count()
}

/// Trees searched, nodes visited and leaf rules checked per lookup, mean
/// over `keys` ([`Classifier::lookup_cost`]).
fn mean_cost(c: &Classifier, keys: &[Key]) -> (f64, f64, f64) {
    let (mut t, mut n, mut k) = (0, 0, 0);
    for key in keys {
        let (a, b, c) = c.lookup_cost(key);
        t += a;
        n += b;
        k += c;
    }
    let len = keys.len() as f64;
    (t as f64 / len, n as f64 / len, k as f64 / len)
}

fn rule_line(r: &Rule) -> String {
    let m = &r.matches;
    let (s, sl) = v4_bits(m.src);
    let (d, dl) = v4_bits(m.dst);
    format!(
        "@{}/{}\t{}/{}\t{} : {}\t{} : {}\t0x{:02X}/0x{:02X}\t0x{:04X}/0x{:04X}\t",
        Ipv4Addr::from(s),
        sl,
        Ipv4Addr::from(d),
        dl,
        m.sport.lo,
        m.sport.hi,
        m.dport.lo,
        m.dport.hi,
        m.proto.value,
        m.proto.mask,
        m.tcp_flags.value,
        m.tcp_flags.mask
    )
}

fn trace_line(k: &Key) -> String {
    format!(
        "{}\t{}\t{}\t{}\t{}\t{}\t0",
        k.src as u32,
        k.dst as u32,
        k.sport,
        k.dport,
        k.proto,
        (k.tcp_flags as u64) << 16
    )
}

fn write_lines(path: &Path, lines: impl Iterator<Item = String>) {
    let mut s = String::new();
    for l in lines {
        s.push_str(&l);
        s.push('\n');
    }
    std::fs::write(path, s).expect("write temp file");
}

fn build(rules: &[Rule], cfg: Config) -> (ClassifierWriter, Arc<Classifier>, Duration) {
    let mut w = ClassifierWriter::new(cfg);
    let batch: Vec<Update> = rules.iter().cloned().map(Update::Insert).collect();
    let t = Instant::now();
    let v = w.apply(&batch).expect("valid rules").version;
    let d = t.elapsed();
    (w, v, d)
}

fn tm_only() -> Config {
    Config {
        overlay_hard_limit: usize::MAX,
        sync_rebuild_batch: usize::MAX,
        ..Config::default()
    }
}

/// ns/packet over the whole trace in bursts of `BURST`, two ways:
/// (minimum over 40 single passes, best-of-3 of the mean over 20 passes).
/// The second is how dpdk-test-acl measures (mean over `--iter=20` passes,
/// and we keep its best of 5 runs); the first is robust against other load
/// on a shared machine.
fn lookup_ns2(c: &Classifier, keys: &[Key]) -> (f64, f64) {
    lookup_ns_through(c, keys, &mut FlowCache::new(0))
}

/// [`lookup_ns2`] through the flow cache `cache` (the worker's lookup).
fn lookup_ns_through(c: &Classifier, keys: &[Key], cache: &mut FlowCache) -> (f64, f64) {
    let mut out = [None; BURST];
    let mut pass = || {
        let mut acc = 0u64;
        for chunk in keys.chunks(BURST) {
            c.classify_burst_cached(chunk, &mut out[..chunk.len()], cache);
            for m in &out[..chunk.len()] {
                acc += m.map_or(0, |e| e.slot() as u64);
            }
        }
        black_box(acc);
    };
    pass();
    let mut best = f64::MAX;
    for _ in 0..40 {
        let t = Instant::now();
        pass();
        best = best.min(t.elapsed().as_nanos() as f64 / keys.len() as f64);
    }
    let mut mean = f64::MAX;
    for _ in 0..3 {
        let t = Instant::now();
        for _ in 0..20 {
            pass();
        }
        mean = mean.min(t.elapsed().as_nanos() as f64 / (20 * keys.len()) as f64);
    }
    (best, mean)
}

/// Minimum ns/packet of one pass of the worker's evaluation: the burst
/// lookup, then, for each match without a verdict, the continued chain
/// (`Classifier::chain`), touching every applied rule.
fn eval_ns(c: &Classifier, keys: &[Key]) -> f64 {
    let mut out = [None; BURST];
    let mut pass = || {
        let mut acc = 0u64;
        for chunk in keys.chunks(BURST) {
            c.classify_burst(chunk, &mut out[..chunk.len()]);
            for (k, m) in chunk.iter().zip(&out[..chunk.len()]) {
                let Some(e) = *m else { continue };
                if e.has_verdict() {
                    acc += e.slot() as u64;
                    continue;
                }
                for r in c.chain(k, Some(e)).rules() {
                    acc += r.slot() as u64;
                }
            }
        }
        black_box(acc);
    };
    pass();
    let mut best = f64::MAX;
    for _ in 0..40 {
        let t = Instant::now();
        pass();
        best = best.min(t.elapsed().as_nanos() as f64 / keys.len() as f64);
    }
    best
}

/// A 1,024-rule batch (the overlay's hard limit: the largest batch that
/// is not rebuilt synchronously): lookups with that overlay, then how long
/// the background rebuild the control lcore starts takes until installed,
/// and lookups after. The control lcore polls for the finished rebuild
/// between requests, so its idle wait adds to the time in the daemon.
fn big_batch(acl1: &[Rule], acl2: &[Rule], acl1_keys: &[Key]) -> String {
    let cfg = Config::default();
    let n = cfg.overlay_hard_limit;
    let (mut w, v0, _) = build(acl1, cfg);
    let batch: Vec<Update> = acl2[..n]
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut r = r.clone();
            r.id = 3_000_000 + i as u32;
            r.priority = (i * 9) as u32;
            Update::Insert(r)
        })
        .collect();
    let t = Instant::now();
    let v1 = w.apply(&batch).expect("batch").version;
    let applied = t.elapsed();
    let built = lookup_ns(&v0, acl1_keys);
    let with_overlay = lookup_ns(&v1, acl1_keys);
    assert!(w.needs_rebuild(), "a {n}-rule overlay asks for a rebuild");
    let t = Instant::now();
    let job = w.rebuild_job();
    let done = std::thread::spawn(move || job.run())
        .join()
        .expect("rebuild");
    let v2 = w.install(done).expect("a fresh rebuild is installed");
    let rebuilt_in = t.elapsed();
    let after = lookup_ns(&v2, acl1_keys);
    format!(
        "\n{n}-rule batch into acl1_10k: applied in {:.1} ms; lookup {with_overlay:.1} ns/pkt with \
         the overlay ({} tuples), {:.1}x the built tree ({built:.1}); background rebuild \
         run and installed in {:.1} ms; then {after:.1} ns/pkt ({:.2}x).",
        applied.as_secs_f64() * 1e3,
        v1.stats().overlay_tuples,
        with_overlay / built,
        rebuilt_in.as_secs_f64() * 1e3,
        after / built
    )
}

/// acl1_10k and acl2_10k of the lyxocs sets, and 100,000 keys inside acl1's
/// rules (the quick modes' inputs).
fn lyxocs_10k(data: &std::path::Path) -> (Vec<Rule>, Vec<Rule>, Vec<Key>) {
    let read = |p: &str| std::fs::read_to_string(data.join(p)).expect("data file");
    let acl1 = parse_rules(&read("lyxocs/acl1_10k")).expect("acl1");
    let acl2 = parse_rules(&read("lyxocs/acl2_10k")).expect("acl2");
    let keys = keys_inside(&acl1, &mut Rng(0x5EED_AC11), 100_000);
    (acl1, acl2, keys)
}

/// `BENCH_ACL_PASSES`: `n` untimed passes of lyxocs' `set`'s lookups.
fn passes(data: &Path, set: &str, n: usize) {
    let text = std::fs::read_to_string(data.join("lyxocs").join(set)).expect("the set's file");
    let rules = parse_rules(&text).expect("rules");
    let keys = keys_inside(&rules, &mut Rng(0x5EED_AC11), 100_000);
    let (_w, c, _) = build(&rules, Config::default());
    let mut out = [None; BURST];
    let mut acc = 0u64;
    for _ in 0..n {
        for chunk in keys.chunks(BURST) {
            c.classify_burst(chunk, &mut out[..chunk.len()]);
            for m in &out[..chunk.len()] {
                acc += m.map_or(0, |e| e.slot() as u64);
            }
        }
    }
    println!(
        "passes {n} of {} keys of {set}: checksum {}",
        keys.len(),
        black_box(acc)
    );
}

fn lookup_ns(c: &Classifier, keys: &[Key]) -> f64 {
    lookup_ns2(c, keys).0
}

/// Three runs of dpdk-test-acl with `alg` on the rule and trace files (none
/// without DPDK).
fn rte_acl_runs(
    dpdk: Option<&DpdkEnv>,
    rules: &Path,
    trace: &Path,
    n: usize,
    alg: &str,
) -> Vec<Dpdk> {
    (0..3)
        .filter_map(|_| dpdk.map(|d| d.run(rules, trace, n, alg, 20)))
        .collect()
}

/// The best ns per packet of `runs` (dpdk-test-acl's), if any measured.
fn best_ns(runs: &[Dpdk]) -> Option<f64> {
    let best = runs
        .iter()
        .filter_map(|r| r.pkt_per_sec)
        .fold(0.0f64, f64::max);
    (best > 0.0).then(|| 1e9 / best)
}

/// rte_acl's widest method here at DPDK's default max SIMD bitwidth (256:
/// `avx512x16` keeps to 256-bit registers).
fn best_alg() -> &'static str {
    if std::arch::is_x86_feature_detected!("avx512f") {
        "avx512x16"
    } else {
        "avx2"
    }
}

fn pct(v: &mut [u64], p: f64) -> u64 {
    v.sort_unstable();
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

#[derive(Default, Debug, Clone)]
struct Dpdk {
    pkt_per_sec: Option<f64>,
    cycles_per_pkt: Option<f64>,
    build_ns: Option<u64>,
    mem_bytes: Option<u64>,
}

struct DpdkEnv {
    shim: Option<PathBuf>,
    tmp: PathBuf,
    /// At least 1 GB of free 2 MB hugepages: run with `--in-memory` instead
    /// of `--no-huge` (rte_acl's tens of MB then sit on huge TLB entries).
    hugepages: bool,
}

fn free_hugepages() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("HugePages_Free:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

impl DpdkEnv {
    fn new(tmp: &Path) -> Option<DpdkEnv> {
        let ok = Command::new("dpdk-test-acl")
            .arg("--version")
            .output()
            .is_ok();
        if !ok {
            return None;
        }
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/bench/acl_build_timer.c");
        let so = tmp.join("libacl_build_timer.so");
        let shim = Command::new("cc")
            .args(["-O2", "-shared", "-fPIC", "-o"])
            .arg(&so)
            .arg(&src)
            .arg("-ldl")
            .status()
            .ok()
            .filter(|s| s.success())
            .map(|_| so);
        Some(DpdkEnv {
            shim,
            tmp: tmp.to_path_buf(),
            hugepages: free_hugepages() >= 512,
        })
    }

    fn run(&self, rules: &Path, trace: &Path, ntrace: usize, alg: &str, iter: usize) -> Dpdk {
        let mut cmd = Command::new("dpdk-test-acl");
        if let Some(s) = &self.shim {
            cmd.env("LD_PRELOAD", s);
        }
        cmd.env("RUNTIME_DIRECTORY", &self.tmp);
        cmd.args([
            "-l",
            "1",
            "--no-pci",
            "--no-telemetry",
            "--log-level=lib.acl:debug",
        ]);
        if self.hugepages {
            cmd.arg("--in-memory");
        } else {
            cmd.args(["--no-huge", "-m", "1024", "--no-shconf"]);
        }
        cmd.arg(format!("--file-prefix=acl{}", std::process::id()));
        cmd.arg("--");
        cmd.arg(format!("--rulesf={}", rules.display()));
        // dpdk-test-acl's context holds 65,536 rules unless told more.
        let n = std::fs::read_to_string(rules).map_or(0, |t| t.lines().count());
        if n > 1 << 16 {
            cmd.arg(format!("--rulenum={n}"));
        }
        cmd.arg(format!("--tracef={}", trace.display()));
        cmd.arg(format!("--tracenum={ntrace}"));
        cmd.arg(format!("--tracestep={BURST}"));
        cmd.arg(format!("--iter={iter}"));
        cmd.arg(format!("--alg={alg}"));
        cmd.arg("--verbose=0");
        let mut r = Dpdk::default();
        let Ok(out) = cmd.output() else {
            return r;
        };
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("acl_build_timer: rte_acl_build ") {
                r.build_ns = rest.split_whitespace().next().and_then(|x| x.parse().ok());
            } else if let Some(rest) = line.strip_prefix("total: ") {
                r.mem_bytes = rest.split_whitespace().next().and_then(|x| x.parse().ok());
            } else if line.starts_with("search_ip5tuples  @lcore") {
                // "... 87.52 cycles/pkt, 29706715.10 pkt/sec"
                let f: Vec<&str> = line.split_whitespace().collect();
                for w in f.windows(2) {
                    if w[1].starts_with("cycles/pkt") {
                        r.cycles_per_pkt = w[0].parse().ok();
                    }
                    if w[1].starts_with("pkt/sec") {
                        r.pkt_per_sec = w[0].parse().ok();
                    }
                }
            }
        }
        r
    }
}

struct BenchSet<'a> {
    name: &'static str,
    rules: &'a [Rule],
    keys: Vec<Key>,
    rpath: PathBuf,
    tpath: PathBuf,
}

fn cmd_out(c: &str, args: &[&str]) -> String {
    Command::new(c)
        .args(args)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|_| "?".into())
}

fn mb(b: u64) -> String {
    format!("{:.1} MB", b as f64 / 1e6)
}

fn main() {
    // Rule files by path: no corpus needed.
    if let Ok(paths) = std::env::var("BENCH_ACL_SETS") {
        let sets = file_sets(&paths);
        if std::env::var_os("BENCH_ACL_V6").is_some() {
            let with_keys: Vec<_> = (sets.into_iter())
                .map(|(name, rules)| {
                    let keys = large_keys(&rules);
                    (name, rules, keys)
                })
                .collect();
            println!("{}", v6_rows(&with_keys).trim());
        } else {
            println!("{}", large_rows(&sets).trim());
        }
        return;
    }
    let data = match std::env::args().nth(1) {
        Some(d) => PathBuf::from(d),
        None => fwd::corpus::dir("classbench").unwrap_or_else(|e| {
            eprintln!("bench_acl: {e} (or give the ClassBench directory as the argument)");
            std::process::exit(2)
        }),
    };
    if let Some(n) = std::env::var("BENCH_ACL_PASSES")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        let set = std::env::var("BENCH_ACL_SET").unwrap_or_else(|_| "acl1_10k".into());
        passes(&data, &set, n);
        return;
    }
    if std::env::var_os("BENCH_ACL_OVERLAY").is_some() {
        let (acl1, acl2, keys) = lyxocs_10k(&data);
        let (mut w, v0, _) = build(&acl1, Config::default());
        let batch: Vec<Update> = acl2[..64]
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let mut r = r.clone();
                r.id = 2_000_000 + i as u32;
                r.priority = (i * 150) as u32;
                Update::Insert(r)
            })
            .collect();
        let v1 = w.apply(&batch).expect("batch").version;
        println!("{:?}", v1.stats());
        for _ in 0..20 {
            println!("{:.1} {:.1}", lookup_ns(&v0, &keys), lookup_ns(&v1, &keys));
        }
        return;
    }
    if std::env::var_os("BENCH_ACL_BATCH").is_some() {
        let (acl1, acl2, keys) = lyxocs_10k(&data);
        println!("{}", big_batch(&acl1, &acl2, &keys).trim());
        return;
    }
    if std::env::var_os("BENCH_ACL_SWEEP").is_some() {
        sweep(&data);
        return;
    }
    if std::env::var_os("BENCH_ACL_CACHE").is_some() {
        println!("{}", cache_rows(&data).trim());
        return;
    }
    if std::env::var_os("BENCH_ACL_LATE").is_some() {
        println!("{}", late_match(&data).trim());
        return;
    }
    if std::env::var_os("BENCH_ACL_LARGE").is_some() {
        println!("{}", large_rows(&synth_sets(&data)).trim());
        return;
    }
    if std::env::var_os("BENCH_ACL_V6").is_some() {
        println!("{}", v6_rows(&corpus_v6_sets(&data)).trim());
        return;
    }
    let tmp = std::env::temp_dir().join(format!("bench_acl.{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("temp dir");
    let dpdk = DpdkEnv::new(&tmp);
    let mut md = String::new();
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_default();
    let _ = writeln!(md, "## Run\n");
    let _ = writeln!(
        md,
        "- date: {}",
        cmd_out("date", &["-u", "+%Y-%m-%dT%H:%M:%SZ"])
    );
    let _ = writeln!(
        md,
        "- cpu: {model}, {} CPUs online",
        std::fs::read_to_string("/proc/cpuinfo").map_or(0, |s| s
            .lines()
            .filter(|l| l.starts_with("processor"))
            .count())
    );
    let _ = writeln!(
        md,
        "- DPDK: {}",
        cmd_out("pkg-config", &["--modversion", "libdpdk"])
    );
    let _ = writeln!(md, "- burst {BURST}, single core, 1 category");
    let _ = writeln!(
        md,
        "- dpdk-test-acl EAL memory: {}\n",
        match &dpdk {
            Some(d) if d.hugepages => "--in-memory (2 MB hugepages)",
            Some(_) => "--no-huge -m 1024 (4 KB pages: no hugepages configured)",
            None => "dpdk-test-acl not found",
        }
    );

    let read = |p: &str| std::fs::read_to_string(data.join(p)).expect("data file");
    let acl1 = parse_rules(&read("lyxocs/acl1_10k")).expect("acl1");
    let acl2 = parse_rules(&read("lyxocs/acl2_10k")).expect("acl2");
    let hs = parse_rules(&read("hypersplit/acl1_10K")).expect("hs");
    let acl2_trace = parse_trace(&read("lyxocs/acl2_10k_trace")).expect("trace");
    let hs_trace = parse_trace(&read("hypersplit/acl1_10K_trace")).expect("trace");
    // acl1_10k ships without a trace: 100k headers, each a random point of
    // a random rule (seeded, reproducible; the same keys as `lyxocs_10k`).
    let mut rng = Rng(0x5EED_AC11);
    let acl1_keys = keys_inside(&acl1, &mut rng, 100_000);
    let acl1_trace_path = tmp.join("acl1_10k_trace");
    write_lines(&acl1_trace_path, acl1_keys.iter().map(trace_line));

    // ---------------- lookups ----------------
    let _ = writeln!(
        md,
        "## Lookup, ns/packet (cycles/packet at the TSC rate DPDK reports)\n"
    );
    let _ = writeln!(
        md,
        "| set | trace | ours: tree+overlay, min pass / mean of 20 | ours: tuple space only, min / mean | dpdk avx512x16 | dpdk avx2 | dpdk sse | dpdk scalar | check |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|");
    let sets = [
        BenchSet {
            name: "lyxocs acl1_10k",
            rules: &acl1,
            keys: acl1_keys.clone(),
            rpath: data.join("lyxocs/acl1_10k"),
            tpath: acl1_trace_path.clone(),
        },
        BenchSet {
            name: "lyxocs acl2_10k",
            rules: &acl2,
            keys: acl2_trace.iter().map(|t| t.key).collect(),
            rpath: data.join("lyxocs/acl2_10k"),
            tpath: data.join("lyxocs/acl2_10k_trace"),
        },
        BenchSet {
            name: "hypersplit acl1_10K",
            rules: &hs,
            keys: hs_trace.iter().map(|t| t.key).collect(),
            rpath: data.join("hypersplit/acl1_10K"),
            tpath: data.join("hypersplit/acl1_10K_trace"),
        },
    ];
    let mut mem_rows = Vec::new();
    let mut tsc_ghz = None;
    for BenchSet {
        name,
        rules,
        keys,
        rpath,
        tpath,
    } in &sets
    {
        let (_w, tree, _) = build(rules, Config::default());
        let (_w2, tm, _) = build(rules, tm_only());
        // Correctness on the benchmark's own input.
        let check = if *name == "hypersplit acl1_10K" {
            let mut out = vec![None; keys.len()];
            tree.classify_burst(keys, &mut out);
            let bad = hs_trace
                .iter()
                .zip(&out)
                .filter(|(t, m)| {
                    let want = match t.tag {
                        TraceTag::FirstMatch(id) => Some(id),
                        _ => None,
                    };
                    m.map(|e| e.id()) != want
                })
                .count();
            format!("{bad} mismatches vs trace column")
        } else {
            let bad = mismatches(&tree, rules, keys, 10);
            format!("{bad} mismatches vs linear (1/10 sample)")
        };
        let (ns_tree, ns_tree_mean) = lookup_ns2(&tree, keys);
        let (ns_tm, ns_tm_mean) = lookup_ns2(&tm, keys);
        let mut cells = Vec::new();
        let mut dpdk_mem = None;
        for alg in ["avx512x16", "avx2", "sse", "scalar"] {
            // Best of 5 runs.
            let r = (0..5)
                .filter_map(|_| {
                    dpdk.as_ref()
                        .map(|d| d.run(rpath, tpath, keys.len(), alg, 20))
                })
                .max_by(|a, b| {
                    a.pkt_per_sec
                        .unwrap_or(0.0)
                        .total_cmp(&b.pkt_per_sec.unwrap_or(0.0))
                })
                .unwrap_or_default();
            if let (Some(c), Some(p)) = (r.cycles_per_pkt, r.pkt_per_sec) {
                tsc_ghz.get_or_insert(c * p / 1e9);
                cells.push(format!("{:.1} ({:.0} cyc)", 1e9 / p, c));
            } else {
                cells.push("n/a".into());
            }
            dpdk_mem = dpdk_mem.or(r.mem_bytes);
        }
        let cyc = |ns: f64| tsc_ghz.map_or(String::new(), |g| format!(" ({:.0} cyc)", ns * g));
        let _ = writeln!(
            md,
            "| {name} | {} hdrs | {ns_tree:.1}{} / {ns_tree_mean:.1} | {ns_tm:.1}{} / {ns_tm_mean:.1} | {} | {check} |",
            keys.len(),
            cyc(ns_tree),
            cyc(ns_tm),
            cells.join(" | ")
        );
        let s = tree.stats();
        mem_rows.push(format!(
            "| {name} | {} ({} trees, {} nodes, depth {}) | {} | {} | {} |",
            mb(s.mem_bytes as u64),
            s.trees,
            s.tree_nodes,
            s.max_depth,
            mb(tm.stats().mem_bytes as u64),
            mb(s.rule_bytes as u64),
            dpdk_mem.map_or("n/a".into(), mb)
        ));
    }

    // ---------------- memory ----------------
    let _ = writeln!(md, "\n## Memory of the lookup structures\n");
    let _ = writeln!(
        md,
        "| set | ours: tree+overlay lookup structures | ours: tuple space only | ours: rule records | dpdk rte_acl runtime |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|");
    for r in &mem_rows {
        let _ = writeln!(md, "{r}");
    }

    // ---------------- builds ----------------
    let set50k = synth_set(&[&acl1, &acl2, &hs], 50_000);
    let build_sets: Vec<(String, Vec<Rule>)> = vec![
        ("acl1 first 1k".into(), acl1[..1000].to_vec()),
        ("acl2 first 1k".into(), acl2[..1000].to_vec()),
        ("lyxocs acl1_10k".into(), acl1.clone()),
        ("lyxocs acl2_10k".into(), acl2.clone()),
        ("hypersplit acl1_10K".into(), hs.clone()),
        ("50k (generated)".into(), set50k.clone()),
    ];
    let _ = writeln!(
        md,
        "\n## Build time (whole rule set, one batch; median of 3)\n"
    );
    let _ = writeln!(
        md,
        "| rules | n | ours | dpdk rte_acl_build | ours mem | dpdk mem |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|");
    let tiny_trace = tmp.join("tiny_trace");
    write_lines(&tiny_trace, acl1_keys[..64].iter().map(trace_line));
    for (name, rules) in &build_sets {
        let mut ts: Vec<u64> = Vec::new();
        let mut mem = 0;
        for _ in 0..3 {
            let (_w, v, d) = build(rules, Config::default());
            ts.push(d.as_micros() as u64);
            mem = v.stats().mem_bytes;
        }
        let ours = pct(&mut ts, 0.5);
        let rp = tmp.join("rules");
        write_lines(&rp, rules.iter().map(rule_line));
        let r = dpdk
            .as_ref()
            .map(|d| d.run(&rp, &tiny_trace, 64, "avx512x16", 1))
            .unwrap_or_default();
        let _ = writeln!(
            md,
            "| {name} | {} | {:.1} ms | {} | {} | {} |",
            rules.len(),
            ours as f64 / 1e3,
            r.build_ns
                .map_or("n/a".into(), |n| format!("{:.1} ms", n as f64 / 1e6)),
            mb(mem as u64),
            r.mem_bytes.map_or("n/a".into(), mb)
        );
    }

    // ---------------- single-rule updates ----------------
    let _ = writeln!(
        md,
        "\n## Single-rule updates on acl1_10k (time to produce the new version)\n"
    );
    let (mut w, _, _) = build(&acl1, Config::default());
    let mut ins = Vec::new();
    let mut del_ov = Vec::new();
    let mut del_base = Vec::new();
    let mut rebuild_run = Vec::new();
    let mut install = Vec::new();
    let mut maybe_rebuild = |w: &mut ClassifierWriter| {
        if w.needs_rebuild() {
            let t = Instant::now();
            let job = w.rebuild_job();
            let built = job.run();
            rebuild_run.push(t.elapsed().as_micros() as u64);
            let t = Instant::now();
            let _v = w.install(built);
            install.push(t.elapsed().as_micros() as u64);
        }
    };
    let n_upd = 2000;
    for i in 0..n_upd {
        let mut r = acl2[i % acl2.len()].clone();
        r.id = 1_000_000 + i as u32;
        r.priority = rng.below(10_000) as u32;
        let t = Instant::now();
        let a = w.apply(&[Update::Insert(r)]).expect("insert");
        ins.push(t.elapsed().as_nanos() as u64);
        drop(a);
        maybe_rebuild(&mut w);
    }
    for i in 0..n_upd {
        let t = Instant::now();
        let a = w
            .apply(&[Update::Delete(1_000_000 + i as u32)])
            .expect("delete");
        del_ov.push(t.elapsed().as_nanos() as u64);
        w.release_slots(&a.retired_slots, None);
        maybe_rebuild(&mut w);
    }
    for i in 0..n_upd {
        let t = Instant::now();
        let a = w.apply(&[Update::Delete(acl1[i * 3].id)]).expect("delete");
        del_base.push(t.elapsed().as_nanos() as u64);
        w.release_slots(&a.retired_slots, None);
        maybe_rebuild(&mut w);
    }
    let us = |v: &mut Vec<u64>, p| format!("{:.1} µs", pct(v, p) as f64 / 1e3);
    let _ = writeln!(md, "| operation | count | p50 | p99 | max |");
    let _ = writeln!(md, "|---|---|---|---|---|");
    for (name, v) in [
        ("insert (overlay)", &mut ins),
        (
            "delete of a rule inserted earlier (mostly in the rebuilt base by then)",
            &mut del_ov,
        ),
        ("delete of an original base rule", &mut del_base),
    ] {
        let _ = writeln!(
            md,
            "| {name} | {} | {} | {} | {} |",
            v.len(),
            us(v, 0.5),
            us(v, 0.99),
            us(v, 1.0)
        );
    }
    let ms = |v: &mut Vec<u64>, p| format!("{:.1} ms", pct(v, p) as f64 / 1e3);
    if !rebuild_run.is_empty() {
        let _ = writeln!(
            md,
            "| background rebuild (RebuildJob::run, off the update path) | {} | {} | {} | {} |",
            rebuild_run.len(),
            ms(&mut rebuild_run, 0.5),
            ms(&mut rebuild_run, 0.99),
            ms(&mut rebuild_run, 1.0)
        );
        let _ = writeln!(
            md,
            "| install of a rebuild (writer thread, O(rules)) | {} | {} | {} | {} |",
            install.len(),
            ms(&mut install, 0.5),
            ms(&mut install, 0.99),
            ms(&mut install, 1.0)
        );
    }
    // Lookups with a populated overlay (worst case before a rebuild).
    {
        let (mut w, v0, _) = build(&acl1, Config::default());
        let batch: Vec<Update> = acl2[..64]
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let mut r = r.clone();
                r.id = 2_000_000 + i as u32;
                r.priority = (i * 150) as u32;
                Update::Insert(r)
            })
            .collect();
        let v1 = w.apply(&batch).expect("batch").version;
        let _ = writeln!(
            md,
            "\nLookup on acl1_10k with a 64-rule overlay (the soft limit; {} tuples): {:.1} ns/pkt (empty overlay: {:.1})",
            v1.stats().overlay_tuples,
            lookup_ns(&v1, &acl1_keys),
            lookup_ns(&v0, &acl1_keys)
        );
    }
    let _ = write!(md, "{}", big_batch(&acl1, &acl2, &acl1_keys));

    // Evaluation past rules without a verdict (count-only rules).
    {
        let _ = writeln!(
            md,
            "\n## Rules without a verdict (lookup + chain, the worker's evaluation; min pass, ns/packet)\n"
        );
        let _ = writeln!(
            md,
            "| set | burst lookup only | lookup + chain | applied rules / packet |"
        );
        let _ = writeln!(md, "|---|---|---|---|");
        let count_every = |n: usize| -> Vec<Rule> {
            acl1.iter()
                .enumerate()
                .map(|(i, r)| {
                    let mut r = r.clone();
                    if n > 0 && i % n == 0 {
                        r.actions = vec![fwd::acl::Action::Count];
                    }
                    r
                })
                .collect()
        };
        for (name, every) in [
            ("acl1_10k as is (every rule has a verdict)", 0),
            ("acl1_10k, every 10th rule count-only", 10),
            ("acl1_10k, every 2nd rule count-only", 2),
            ("acl1_10k, every rule count-only (worst case)", 1),
        ] {
            let rules = count_every(every);
            let (_w, v, _) = build(&rules, Config::default());
            let applied: usize = acl1_keys.iter().map(|k| v.evaluate(k).len()).sum();
            let _ = writeln!(
                md,
                "| {name} | {:.1} | {:.1} | {:.2} |",
                lookup_ns(&v, &acl1_keys),
                eval_ns(&v, &acl1_keys),
                applied as f64 / acl1_keys.len() as f64
            );
        }
    }

    // ---------------- big batch ----------------
    let _ = writeln!(md, "\n## 100k changes in one batch\n");
    let (mut w, _, d50) = build(&set50k, Config::default());
    let mut batch: Vec<Update> = set50k.iter().map(|r| Update::Delete(r.id)).collect();
    batch.extend(set50k.iter().map(|r| {
        let mut r = r.clone();
        r.id += 10_000_000;
        Update::Insert(r)
    }));
    let t = Instant::now();
    let a = w.apply(&batch).expect("batch");
    let d = t.elapsed();
    let _ = writeln!(
        md,
        "On the 50k set (built in {:.1} ms): delete all 50,000 + insert 50,000 new ids = {} updates: {:.1} ms to the new version ({} rules).",
        d50.as_secs_f64() * 1e3,
        batch.len(),
        d.as_secs_f64() * 1e3,
        a.version.len()
    );
    let _ = std::fs::remove_dir_all(&tmp);
    print!("{md}");
}

/// Tuning aid (BENCH_ACL_SWEEP=1): lookup and build time over tree
/// parameters, on the two sets with traces.
fn sweep(data: &Path) {
    let read = |p: &str| std::fs::read_to_string(data.join(p)).expect("data file");
    for (r, t) in [
        ("hypersplit/acl1_10K", "hypersplit/acl1_10K_trace"),
        ("lyxocs/acl2_10k", "lyxocs/acl2_10k_trace"),
    ] {
        let rules = parse_rules(&read(r)).expect("rules");
        let keys = trace_keys(&read(t));
        for fanout in [16] {
            for leaf_max in [4, 8] {
                let cfg = Config {
                    tree: fwd::acl::TreeParams {
                        leaf_max,
                        fanout,
                        ..Default::default()
                    },
                    ..Config::default()
                };
                let (_w, v, d) = build(&rules, cfg);
                let hot: Vec<Key> = keys[..512]
                    .iter()
                    .cycle()
                    .take(keys.len())
                    .copied()
                    .collect();
                let hot_ns = lookup_ns(&v, &hot);
                let s = v.stats();
                let (tr, no, ch) = mean_cost(&v, &keys);
                println!(
                    "{r} fanout {fanout} leaf {leaf_max}: {:.1} ns/pkt (cache-hot 512 headers: {hot_ns:.1}), \
                     per packet {:.2} trees {:.2} nodes {:.2} rule checks, build {:.1} ms, {} nodes, depth {}, {}",
                    lookup_ns(&v, &keys),
                    tr,
                    no,
                    ch,
                    d.as_secs_f64() * 1e3,
                    s.tree_nodes,
                    s.max_depth,
                    mb(s.mem_bytes as u64)
                );
            }
        }
    }
}

/// 2001:db8::/32 with the IPv4 prefix in the next 32 bits: an IPv4 /n
/// becomes an IPv6 /(32+n), so the sets keep their structure and every
/// IPv6 rule has a /32-/64 prefix (the "same sets as IPv6").
fn as_v6_prefix(p: Option<IpPrefix>) -> Option<IpPrefix> {
    let (a, l) = v4_bits(p);
    let bits = (0x2001_0db8u128 << 96) | ((a as u128) << 64);
    Some(IpPrefix::V6 {
        addr: std::net::Ipv6Addr::from(bits),
        len: 32 + l,
    })
}

fn as_v6_rule(r: &Rule) -> Rule {
    let mut r = r.clone();
    r.matches.src = as_v6_prefix(r.matches.src);
    r.matches.dst = as_v6_prefix(r.matches.dst);
    r
}

fn as_v6_key(k: &Key, rng: &mut Rng) -> Key {
    let hi = |a: u128| (0x2001_0db8u128 << 96) | ((a as u32 as u128) << 64);
    Key {
        src: hi(k.src) | rng.next() as u128,
        dst: hi(k.dst) | rng.next() as u128,
        is_v6: true,
        ..*k
    }
}

/// BENCH_ACL_V6=1: build time, memory and lookups of each set (with its
/// keys) and of the same set written as IPv6 (see `as_v6_prefix`), in one
/// run; the IPv6 answers are checked against the IPv4 ones.
fn v6_rows(sets: &[(String, Vec<Rule>, Vec<Key>)]) -> String {
    let mut md = String::from(
        "| set | v4 build ms | v6 build ms | v4 MB | v6 MB | v4 ns | v6 ns | v6/v4 build, mem, ns |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    for (name, rules, keys) in sets {
        let mut rng = Rng(0x0006_0006);
        let rules6: Vec<Rule> = rules.iter().map(as_v6_rule).collect();
        let keys6: Vec<Key> = keys.iter().map(|k| as_v6_key(k, &mut rng)).collect();
        let (_w4, c4, b4) = build(rules, Config::default());
        let (_w6, c6, b6) = build(&rules6, Config::default());
        let mut o4 = vec![None; keys.len()];
        let mut o6 = vec![None; keys.len()];
        c4.classify_burst(keys, &mut o4);
        c6.classify_burst(&keys6, &mut o6);
        let bad = o4
            .iter()
            .zip(&o6)
            .filter(|(a, b)| a.map(|e| e.id()) != b.map(|e| e.id()))
            .count();
        assert_eq!(
            bad, 0,
            "{name}: IPv6 answers differ from IPv4 on {bad} keys"
        );
        let (m4, m6) = (c4.stats().mem_bytes as f64, c6.stats().mem_bytes as f64);
        let (n4, n6) = (lookup_ns(&c4, keys), lookup_ns(&c6, &keys6));
        let (b4, b6) = (b4.as_secs_f64() * 1e3, b6.as_secs_f64() * 1e3);
        let _ = writeln!(
            md,
            "| {name} | {b4:.0} | {b6:.0} | {:.1} | {:.1} | {n4:.1} | {n6:.1} | {:.2}, {:.2}, {:.2} |",
            m4 / 1e6,
            m6 / 1e6,
            b6 / b4,
            m6 / m4,
            n6 / n4
        );
    }
    md
}

/// BENCH_ACL_V6=1: the corpus's three 10k sets with their traces (acl1's
/// keys inside its rules: it ships without one).
fn corpus_v6_sets(data: &Path) -> Vec<(String, Vec<Rule>, Vec<Key>)> {
    let read = |p: &str| std::fs::read_to_string(data.join(p)).expect("data file");
    let trace = |p: &str| trace_keys(&read(p));
    let (acl1, acl2, acl1_keys) = lyxocs_10k(data);
    let hs = parse_rules(&read("hypersplit/acl1_10K")).expect("hs");
    vec![
        ("lyxocs acl1_10k".to_string(), acl1, acl1_keys),
        (
            "lyxocs acl2_10k".to_string(),
            acl2,
            trace("lyxocs/acl2_10k_trace"),
        ),
        (
            "hypersplit acl1_10K".to_string(),
            hs,
            trace("hypersplit/acl1_10K_trace"),
        ),
    ]
}

/// A large set from the corpus: the given sets concatenated (the three 10k
/// sets: 28,730 rules), then copies of all of them with the first source
/// octet xor 0x40, 0x80, 0xc0 in turn (the destination's if the source is
/// shorter than /8), truncated to `n`; id = priority = position. The 50k
/// set is the first copy's; 100k needs the third.
fn synth_set(sets: &[&[Rule]], n: usize) -> Vec<Rule> {
    let base: Vec<Rule> = sets.iter().flat_map(|s| s.iter().cloned()).collect();
    let mut all = base.clone();
    for x in [0x40u32, 0x80, 0xc0] {
        if all.len() >= n {
            break;
        }
        for r in &base {
            let mut r = r.clone();
            let flip = |p: &mut Option<IpPrefix>| match p {
                Some(IpPrefix::V4 { addr, len }) if *len >= 8 => {
                    *addr = Ipv4Addr::from(u32::from(*addr) ^ (x << 24));
                    true
                }
                _ => false,
            };
            if !flip(&mut r.matches.src) {
                flip(&mut r.matches.dst);
            }
            all.push(r);
        }
    }
    all.truncate(n);
    for (i, r) in all.iter_mut().enumerate() {
        r.id = i as u32;
        r.priority = i as u32;
    }
    all
}

/// BENCH_ACL_LARGE=1: the 50k and 100k sets of [`synth_set`], made from
/// the corpus's three 10k sets.
fn synth_sets(data: &Path) -> Vec<(String, Vec<Rule>)> {
    let read = |p: &str| std::fs::read_to_string(data.join(p)).expect("data file");
    let acl1 = parse_rules(&read("lyxocs/acl1_10k")).expect("acl1");
    let acl2 = parse_rules(&read("lyxocs/acl2_10k")).expect("acl2");
    let hs = parse_rules(&read("hypersplit/acl1_10K")).expect("hs");
    [("50k", 50_000), ("100k", 100_000)]
        .into_iter()
        .map(|(name, n)| (name.to_string(), synth_set(&[&acl1, &acl2, &hs], n)))
        .collect()
}

/// BENCH_ACL_SETS="FILE..." (separated by spaces): ClassBench rule files
/// given by path (large sets that are not in the corpus), each named by its
/// file name; ids and priorities are the lines' order.
fn file_sets(paths: &str) -> Vec<(String, Vec<Rule>)> {
    paths
        .split_whitespace()
        .map(|p| {
            let text = std::fs::read_to_string(p).unwrap_or_else(|e| {
                eprintln!("bench_acl: {p}: {e}");
                std::process::exit(2)
            });
            let rules = parse_rules(&text).unwrap_or_else(|e| {
                eprintln!("bench_acl: {p}: {e}");
                std::process::exit(2)
            });
            let name = Path::new(p)
                .file_name()
                .map_or_else(|| p.to_string(), |n| n.to_string_lossy().into_owned());
            (name, rules)
        })
        .collect()
}

/// Lookups, build time and memory of each set beside dpdk-test-acl's best
/// method on this CPU, on the same rules and the same 100,000 headers (each
/// a random point of a random rule), alternating for 3 rounds: median
/// (min-max) ns/packet. Ours is the best of 40 passes, DPDK's the mean of
/// 20 passes, best of 3 runs per round; the build times and memory are the
/// first round's.
fn large_rows(sets: &[(String, Vec<Rule>)]) -> String {
    let tmp = std::env::temp_dir().join(format!("bench_acl.{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("temp dir");
    let dpdk = DpdkEnv::new(&tmp);
    let alg = best_alg();
    let stat = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        match v.len() {
            0 => "n/a".to_string(),
            n => format!("{:.1} ({:.1}-{:.1})", v[n / 2], v[0], v[n - 1]),
        }
    };
    let mut md = format!(
        "| set | rules | headers | ours: trees / nodes / memory / build | dpdk {alg}: memory / build | ours per lookup | ours ns/pkt | dpdk {alg} ns/pkt | ours / dpdk (medians) | check |\n|---|---|---|---|---|---|---|---|---|---|\n"
    );
    for (name, rules) in sets {
        let keys = large_keys(rules);
        let rp = tmp.join(format!("rules_{name}"));
        let tp = tmp.join(format!("trace_{name}"));
        write_lines(&rp, rules.iter().map(rule_line));
        write_lines(&tp, keys.iter().map(trace_line));
        let (_w, tree, built) = build(rules, Config::default());
        let bad = mismatches(&tree, rules, &keys, 20);
        let (t, nd, ck) = mean_cost(&tree, &keys);
        let cost = format!("{t:.2} trees, {nd:.1} nodes, {ck:.1} leaf checks");
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        let mut first: Option<Dpdk> = None;
        for _ in 0..3 {
            ours.push(lookup_ns(&tree, &keys));
            let runs = rte_acl_runs(dpdk.as_ref(), &rp, &tp, keys.len(), alg);
            theirs.extend(best_ns(&runs));
            if first.is_none() {
                first = runs.into_iter().next();
            }
        }
        let ratio = if theirs.is_empty() {
            "n/a".to_string()
        } else {
            let (mut a, mut b) = (ours.clone(), theirs.clone());
            a.sort_by(f64::total_cmp);
            b.sort_by(f64::total_cmp);
            format!("{:.2}x", a[a.len() / 2] / b[b.len() / 2])
        };
        let theirs_build = first.map_or_else(
            || "n/a".to_string(),
            |d| {
                format!(
                    "{} / {}",
                    d.mem_bytes.map_or_else(|| "?".to_string(), mb),
                    d.build_ns.map_or_else(
                        || "?".to_string(),
                        |ns| format!("{:.0} ms", ns as f64 / 1e6)
                    )
                )
            },
        );
        let st = tree.stats();
        md += &format!(
            "| {name} | {} | {} | {} / {} / {} / {:.0} ms | {theirs_build} | {cost} | {} | {} | {ratio} | {bad} mismatches vs linear (1/20 sample) |\n",
            rules.len(),
            keys.len(),
            st.trees,
            st.tree_nodes,
            mb(st.mem_bytes as u64),
            built.as_secs_f64() * 1e3,
            stat(&mut ours),
            stat(&mut theirs),
        );
    }
    let _ = std::fs::remove_dir_all(&tmp);
    md
}

/// `n` keys that only acl1_10k's catch-all rules match: the throughput
/// recipe's UDP from 10.0.0.0/16 to the /24s of 10.1.0.0/16.
fn late_keys(n: usize, seed: u64) -> Vec<Key> {
    let mut rng = Rng(seed);
    (0..n)
        .map(|_| Key {
            src: (0x0a00_0000 | rng.below(1 << 16)) as u128,
            dst: (0x0a01_0001 | (rng.below(1000) << 8)) as u128,
            sport: 1024 + rng.below(4096) as u16,
            dport: 1024 + rng.below(4096) as u16,
            proto: 17,
            ..Key::default()
        })
        .collect()
}

/// BENCH_ACL_CACHE=1: acl1_10k looked up straight and through a worker's
/// flow cache (the default entries, or those of BENCH_ACL_CACHE_SIZES):
/// the throughput recipe's traffic (4,096 flows that only the catch-all
/// rules match, over and over), four times as many flows (a fuller cache:
/// what its ways are for), the same keys with every one new (all misses:
/// what the cache adds), and keys inside random rules (100,000 keys, few
/// of them repeated).
fn cache_rows(data: &Path) -> String {
    let (acl1, _, inside) = lyxocs_10k(data);
    let (_w, c, _) = build(&acl1, Config::default());
    // 100,000 lookups over `n` late-match flows, each flow back every `n`
    // lookups (a prime stride over the pool).
    let taking_turns = |n: usize, seed: u64| -> Vec<Key> {
        let flows = late_keys(n, seed);
        (0..100_000).map(|i| flows[(i * 7919) % n]).collect()
    };
    let recipe = taking_turns(4096, 0xF10);
    let fuller = taking_turns(16384, 0xF11);
    let fresh = late_keys(100_000, 0x1A7E);
    let sizes: Vec<usize> = std::env::var("BENCH_ACL_CACHE_SIZES")
        .ok()
        .map(|v| v.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_else(|| vec![FlowCache::DEFAULT_ENTRIES]);
    let mut md = String::from("| keys | straight: ns/lookup |");
    for n in &sizes {
        let _ = write!(md, " cache of {n}: ns/lookup (hits) |");
    }
    md.push_str("\n|---|---|");
    md.push_str(&"---|".repeat(sizes.len()));
    md.push('\n');
    for (name, keys) in [
        (
            "4,096 late-match flows, repeated (the throughput recipe's)",
            &recipe,
        ),
        ("16,384 late-match flows, repeated", &fuller),
        ("100,000 late-match keys, each new", &fresh),
        ("100,000 keys inside random rules", &inside),
    ] {
        let (plain, _) = lookup_ns2(&c, keys);
        let _ = write!(md, "| {name} | {plain:.1} |");
        for &n in &sizes {
            // A cache per run, warmed by the timing's own first pass.
            let mut cache = FlowCache::new(n);
            let (cached, _) = lookup_ns_through(&c, keys, &mut cache);
            let rate = cache.hits as f64 * 100.0 / (cache.hits + cache.misses).max(1) as f64;
            let _ = write!(md, " {cached:.1} ({rate:.1}%) |");
        }
        md.push('\n');
    }
    md
}

/// BENCH_ACL_LATE=1: acl1_10k with traffic that only its catch-all rules
/// match (the throughput recipe's UDP 10.0.0.0/16 -> 10.1.0.0/16): the
/// lookup walks every tree to a leaf and scans each leaf to its end.
fn late_match(data: &Path) -> String {
    let (acl1, _, inside) = lyxocs_10k(data);
    let (_w, c, _) = build(&acl1, Config::default());
    let keys = late_keys(100_000, 0x1A7E);
    let mut out = vec![None; keys.len()];
    c.classify_burst(&keys, &mut out);
    let mut firsts: Vec<u32> = out.iter().map(|m| m.map_or(u32::MAX, |e| e.id())).collect();
    firsts.sort_unstable();
    firsts.dedup();
    let (t, n, k) = mean_cost(&c, &keys);
    let (ti, ni, ki) = mean_cost(&c, &inside);
    // rte_acl on the same rules and keys: its SSE method (like the daemon's
    // node compares at DPDK's default bitwidth) and its widest one there.
    let tmp = std::env::temp_dir().join(format!("bench_acl.{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("temp dir");
    let dpdk = DpdkEnv::new(&tmp);
    let (rp, tp) = (tmp.join("rules_late"), tmp.join("trace_late"));
    write_lines(&rp, acl1.iter().map(rule_line));
    write_lines(&tp, keys.iter().map(trace_line));
    let rte = [("sse", "sse"), (best_alg(), best_alg())]
        .iter()
        .map(|&(name, alg)| {
            best_ns(&rte_acl_runs(dpdk.as_ref(), &rp, &tp, keys.len(), alg))
                .map_or(format!("rte_acl {name}: did not run"), |v| {
                    format!("rte_acl {name}: {v:.1} ns/pkt")
                })
        })
        .collect::<Vec<_>>()
        .join(", ");
    let _ = std::fs::remove_dir_all(&tmp);
    format!(
        "late-match keys: first matches {:?}; per lookup {:.2} trees, {:.1} nodes, {:.1} leaf checks; \
         {:.1} ns/pkt ({}), {:.1} at the daemon's default (DPDK's max SIMD bitwidth 256: {}), {:.1} in SSE2 ({rte}; keys inside random rules: {:.1} ns/pkt; {:.2} trees, {:.1} nodes, {:.1} leaf checks); trees {:?}",
        &firsts[..firsts.len().min(8)],
        t,
        n,
        k,
        lookup_ns(&c, &keys),
        fwd::arch::dispatched(),
        {
            // What the daemon uses at DPDK's default SIMD bitwidth.
            fwd::arch::allow_simd_bits(256);
            lookup_ns(&c, &keys)
        },
        fwd::arch::dispatched(),
        {
            fwd::arch::allow_simd_bits(128);
            let ns = lookup_ns(&c, &keys);
            fwd::arch::allow_simd_bits(512);
            ns
        },
        lookup_ns(&c, &inside),
        ti,
        ni,
        ki,
        c.tree_stats()
    )
}
