//! `fwd`: the forwarding appliance daemon.
//!
//! ```text
//! fwd CONFIG.yaml [--check] [--stats-interval SECS] [--stats-json PATH]
//!                 [--exit-after-rx N] [--exit-on-idle MS]
//! fwd preflight CONFIG.yaml [--json]
//! ```
//! Brings up the EAL, the mempool and the ports named in the config, builds
//! the initial tables (interface addresses, static routes, neighbours),
//! starts the control lcore and one worker per configured lcore, and runs
//! until SIGINT/SIGTERM: then workers stop, TX buffers are flushed, ports
//! are stopped and closed (their mbufs go back to the pool) and the final
//! counters are printed. Under systemd it reports readiness and feeds the
//! watchdog ([`fwd::systemd`]).
//!
//! `fwd preflight` checks the machine for what the config needs
//! ([`fwd::preflight`]) and starts nothing.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use fwd::config::Config;
use fwd::control::{ControlLcore, ControlState};
use fwd::dpdk::{self, eal::Eal, lcore, mempool::Mempool, port};
use fwd::qsbr::{self, QsbrConfig};
use fwd::stats::Stats;
use fwd::worker::{Worker, WorkerSetup};

struct Args {
    config: PathBuf,
    check: bool,
    stats_interval: Option<f64>,
    stats_json: Option<PathBuf>,
    exit_after_rx: Option<u64>,
    exit_on_idle: Option<Duration>,
}

const USAGE: &str = "usage: fwd CONFIG.yaml [--check] [--stats-interval SECS] \
[--stats-json PATH] [--exit-after-rx N] [--exit-on-idle MS]\n       fwd preflight CONFIG.yaml [--json]";

fn parse_args() -> Result<Args> {
    let mut it = std::env::args().skip(1);
    let mut a = Args {
        config: PathBuf::new(),
        check: false,
        stats_interval: None,
        stats_json: None,
        exit_after_rx: None,
        exit_on_idle: None,
    };
    let mut config = None;
    while let Some(arg) = it.next() {
        let mut val = |name: &str| {
            it.next()
                .ok_or_else(|| anyhow!("{name} needs a value\n{USAGE}"))
        };
        match arg.as_str() {
            "--check" => a.check = true,
            "--stats-interval" => {
                let v: f64 = val("--stats-interval")?
                    .parse()
                    .context("--stats-interval")?;
                if v <= 0.0 {
                    bail!("--stats-interval must be positive");
                }
                a.stats_interval = Some(v);
            }
            "--stats-json" => a.stats_json = Some(val("--stats-json")?.into()),
            "--exit-after-rx" => {
                a.exit_after_rx = Some(val("--exit-after-rx")?.parse().context("--exit-after-rx")?)
            }
            "--exit-on-idle" => {
                let ms: u64 = val("--exit-on-idle")?.parse().context("--exit-on-idle")?;
                a.exit_on_idle = Some(Duration::from_millis(ms));
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            s if s.starts_with('-') => bail!("unknown option {s}\n{USAGE}"),
            s => {
                if config.replace(PathBuf::from(s)).is_some() {
                    bail!("only one config file may be given\n{USAGE}");
                }
            }
        }
    }
    a.config = config.ok_or_else(|| anyhow!("no config file given\n{USAGE}"))?;
    Ok(a)
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.first().map(String::as_str) == Some("preflight") {
        std::process::exit(fwd::preflight::main(&argv[1..]));
    }
    if let Err(e) = run() {
        eprintln!("fwd: {e:#}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let args = parse_args()?;
    let cfg = Config::load(&args.config)?;
    cfg.check_machine()?;
    if args.check {
        fwd::control::check_tables(&cfg).map_err(|e| anyhow!("{}: {e}", args.config.display()))?;
        println!("{}: ok", args.config.display());
        return Ok(());
    }
    // Before any thread exists: it reads the environment.
    let mut service = fwd::systemd::Service::from_env();
    service.status("starting: control socket, EAL, ports");
    // The control socket first: a bad path fails before any port starts.
    let bound = fwd::control::server::bind(fwd::control::server::ServerConfig {
        path: cfg.control.socket.clone(),
        mode: cfg.control.mode()?,
        group: cfg.control.socket_group.clone(),
        max_clients: cfg.control.max_clients,
        max_request_bytes: cfg.control.max_request_bytes,
        idle_timeout: Duration::from_secs(cfg.control.idle_timeout_s),
        request_timeout: Duration::from_secs(cfg.control.request_timeout_s),
        save_dir: cfg.control.save_dir.clone(),
        max_saved_files: cfg.control.max_saved_files,
    })
    .with_context(|| format!("control socket {}", cfg.control.socket.display()))?;

    // The EAL's runtime directory: private to this process unless the
    // operator (or systemd's RuntimeDirectory=) chose one.
    let pid = std::process::id();
    // Declared before the EAL, so removed after it has stopped (on every
    // way out of this function).
    let _runtime_dir = if std::env::var_os("RUNTIME_DIRECTORY").is_none() {
        let dir = std::env::temp_dir().join(format!("fwd-{pid}"));
        let guard = private_dir(&dir).with_context(|| format!("creating {}", dir.display()))?;
        std::env::set_var("RUNTIME_DIRECTORY", &dir);
        Some(guard)
    } else {
        None
    };
    let eal_args = cfg.eal_args("fwd", &format!("fwd-{pid}"));
    // The CPUs this process may use, before the EAL pins this thread to the
    // main lcore's.
    let start_cpus = fwd::cpus::current().context("reading the CPU affinity")?;
    let eal = Eal::init(&eal_args)?;
    // Every thread made from here on inherits this thread's CPUs (fwd::cpus).
    let worker_cpus = cfg.worker_cpus();
    let management = fwd::cpus::management(&start_cpus, &worker_cpus, cfg.control.cpu);
    fwd::cpus::confine_current(&management)
        .with_context(|| format!("confining the management threads to CPUs {management:?}"))?;
    eprintln!(
        "fwd: management threads on CPUs {}",
        fwd::cpus::format_cpulist(&management)
    );
    eprintln!(
        "fwd: {} (bindings built against {})",
        dpdk::version(),
        dpdk_sys::BUILD_VERSION
    );
    // The classifier's vector width follows DPDK's policy for its own.
    let simd = eal.max_simd_bitwidth();
    fwd::arch::allow_simd_bits(u32::from(simd));
    eprintln!(
        "fwd: classifier lookups compiled for {} (DPDK max SIMD bitwidth {simd}; \
         --force-max-simd-bitwidth=512 in eal.extra_args allows AVX-512)",
        fwd::arch::dispatched()
    );

    let pool = Arc::new(Mempool::create(
        &eal,
        "fwd_pool",
        cfg.mempool.mbufs,
        cfg.mempool.cache,
        cfg.mempool.data_room,
        None,
    )?);

    // Every worker gets its own TX queue on every port: no TX locks.
    let n_workers = u16::try_from(cfg.workers.len()).context("too many workers")?;
    let mut ports = Vec::with_capacity(cfg.ports.len());
    for p in &cfg.ports {
        let setup = port::PortSetup {
            name: p.name.clone(),
            dev_name: p.dev_name().to_string(),
            rx_queues: p.rx_queues,
            tx_queues: n_workers,
            rx_desc: p.rx_desc,
            tx_desc: p.tx_desc,
            mtu: p.mtu,
            promiscuous: p.promiscuous,
            rx_offloads: p.rx_offloads.clone(),
            tx_offloads: p.tx_offloads.clone(),
        };
        let port = port::Port::start(&eal, &setup, &pool)?;
        eprintln!(
            "fwd: port {} ({}) id {} mac {} rxq {} txq {}{} link {}",
            p.name,
            p.dev_name(),
            port.id(),
            fwd::stats::format_mac(port.mac()),
            port.rx_queue_count(),
            port.tx_queue_count(),
            if port.rss() { " rss" } else { "" },
            if port.link().up { "up" } else { "down" },
        );
        ports.push(port);
    }
    let macs: Vec<[u8; 6]> = ports.iter().map(|p| p.mac()).collect();
    // The host path: a kernel interface per port, with its MAC and MTU
    // (addresses and carrier follow from the tables once running).
    let taps = match &cfg.host {
        None => Vec::new(),
        Some(_) => cfg
            .ports
            .iter()
            .zip(&macs)
            .map(|(p, mac)| {
                let tap =
                    fwd::hostif::tap::Tap::create(p.host_ifname(), *mac, p.mtu.unwrap_or(1500))
                        .with_context(|| {
                            format!(
                                "creating the kernel interface {:?} of port {}",
                                p.host_ifname(),
                                p.name
                            )
                        })?;
                eprintln!(
                    "fwd: port {} host interface {} (ifindex {})",
                    p.name,
                    tap.name(),
                    tap.ifindex()
                );
                Ok(tap)
            })
            .collect::<Result<Vec<_>>>()?,
    };
    let mut acl_writer = fwd::acl::ClassifierWriter::new(fwd::acl::Config::default());
    let (rule_counter_set, mut rule_counter_writers) =
        fwd::acl::CounterSet::new(cfg.workers.len(), acl_writer.config().slots() as usize);
    // A saved running state supersedes the config's tables once it exists.
    // An unreadable, empty or truncated one stops the start.
    let startup = match &cfg.control.load {
        None => fwd::control::Startup::Config,
        Some(p) => match fwd::control::read_saved(p).map_err(|e| anyhow!("{e}"))? {
            Some(saved) => {
                eprintln!(
                    "fwd: control.load: starting from saved state {} (generation {}, {} \
                     changes); the config's addresses/neighbours/routes are not applied",
                    p.display(),
                    saved.generation,
                    saved.changes.len()
                );
                fwd::control::Startup::Saved(saved)
            }
            None => {
                eprintln!(
                    "fwd: control.load: no saved state at {} yet; starting from the config's \
                     addresses/neighbours/routes (fwdctl config save {} writes it)",
                    p.display(),
                    p.display()
                );
                fwd::control::Startup::Config
            }
        },
    };
    let tables = fwd::control::initial_tables(&cfg, &macs, &mut acl_writer, startup)
        .map_err(|e| anyhow!("{e}"))?;

    let qcfg = QsbrConfig {
        max_pending_bytes: cfg.control.max_pending_bytes,
        stall_threshold: Duration::from_millis(cfg.control.stall_ms),
        ..QsbrConfig::default()
    };
    let mut writer = qsbr::domain(tables, qcfg);
    let lcores: Vec<u32> = cfg.workers.iter().map(|w| w.lcore).collect();
    let stats = Arc::new(Stats::new(&lcores, ports.len()));
    let stop = Arc::new(AtomicBool::new(false));
    let drain_cycles = dpdk::tsc_hz() / 1_000_000 * cfg.datapath.drain_us;
    let channels: Vec<Arc<fwd::punt::Channel>> = cfg
        .workers
        .iter()
        .map(|_| {
            Arc::new(fwd::punt::Channel::new(
                1024,
                1024,
                cfg.host.as_ref().map_or(1, |h| h.queue),
            ))
        })
        .collect();
    let icmp = fwd::worker::IcmpSettings {
        rate: cfg.icmp.rate,
        burst: cfg.icmp.burst,
        reject: cfg.icmp.reject.error(),
    };
    let events = fwd::control::link::EventLog::new();
    let fpm_settings = cfg.fpm.as_ref().map(|f| fwd::control::fpm::FpmSettings {
        listen: f.listen.parse().expect("validated"),
        stale: Duration::from_millis(f.stale_ms),
        tables: f.tables.iter().map(|(&k, &v)| (k, v)).collect(),
        allowed_uids: f.allowed_uids(),
    });
    let fpm_status: fwd::control::fpm::SharedStatus = Arc::default();

    let mut jobs = Vec::new();
    // Declared after `jobs`, so dropped before it on every early return:
    // workers are told to stop before anything waits for them.
    let _stop_guard = StopOnDrop(Arc::clone(&stop));
    let trace_taps = Arc::new(fwd::worker::trace::Taps::default());
    for (wi, w) in cfg.workers.iter().enumerate() {
        let mut rx = Vec::new();
        for q in &w.rx {
            let pi = cfg.port_index(&q.port).context("validated port")?;
            let rxq = ports[pi]
                .rx_queue(q.queue)
                .ok_or_else(|| anyhow!("rx queue {} of {} given twice", q.queue, q.port))?;
            rx.push((pi, rxq));
        }
        let tx = ports
            .iter_mut()
            .map(|p| {
                p.tx_queue(wi as u16)
                    .ok_or_else(|| anyhow!("tx queue {wi} of {}", p.name()))
            })
            .collect::<Result<Vec<_>>>()?;
        let setup = WorkerSetup {
            index: wi,
            rx,
            tx,
            drain_cycles,
            flow_cache: cfg.datapath.acl_flow_cache,
            idle_sleep: Duration::from_micros(cfg.datapath.idle_sleep_us),
            rule_counters: rule_counter_writers.remove(0),
            pool: Arc::clone(&pool),
            channel: Arc::clone(&channels[wi]),
            icmp,
            punt: cfg.host.as_ref().map(|h| {
                // Each port's rate, shared out among the workers polling it.
                let rates = (0..cfg.ports.len())
                    .map(|pi| {
                        let pollers = cfg
                            .workers
                            .iter()
                            .filter(|w| w.rx.iter().any(|q| cfg.port_index(&q.port) == Some(pi)))
                            .count()
                            .max(1) as u32;
                        h.punt_rate.div_ceil(pollers)
                    })
                    .collect();
                (rates, h.punt_burst)
            }),
            taps: Arc::clone(&trace_taps),
        };
        let worker = Worker::new(setup, Arc::clone(&stats));
        let reader = writer.register_reader(&worker_name(wi, w.lcore));
        let stop = Arc::clone(&stop);
        jobs.push(lcore::launch(&eal, w.lcore, move || {
            worker.run(reader, stop)
        })?);
    }
    let control = ControlLcore::start(
        ControlState {
            writer,
            acl: acl_writer,
            counters: Arc::clone(&rule_counter_set),
            neigh: Some(fwd::control::neigh::NeighDriver::new(
                cfg.neigh.clone(),
                channels.clone(),
                Arc::clone(&pool),
                fwd::control::ra::Advertiser::new(ra_settings(&cfg)),
            )),
            links: Some(fwd::control::link::LinkMonitor::new(
                cfg.ports
                    .iter()
                    .zip(&ports)
                    .map(|(c, p)| fwd::control::link::LinkSource {
                        dpdk_id: p.id(),
                        tap_iface: c.tap_iface().map(str::to_string),
                    })
                    .collect(),
                Box::new(|s| port::carrier(s.dpdk_id, s.tap_iface.as_deref())),
            )),
            events: Arc::clone(&events),
            fpm: fpm_settings
                .as_ref()
                .map(|f| fwd::control::fpm::FpmControl::new(f, Arc::clone(&fpm_status))),
        },
        cfg.control.cpu,
    )?;

    let handle = control.handle();
    let host_counters = Arc::new(fwd::hostif::path::HostCounters::default());
    let (host_thread, ifindexes) = if cfg.host.is_some() {
        let h = handle.clone();
        let path = fwd::hostif::path::HostPath {
            taps,
            channels: channels.clone(),
            pool: Arc::clone(&pool),
            counters: Arc::clone(&host_counters),
            snapshot: Box::new(move || {
                let (_, t) = h.snapshot().ok()?;
                Some(Box::new(t) as fwd::hostif::path::TablesCopy)
            }),
        };
        let ifindexes = path.ifindexes();
        (
            Some(path.start().context("starting the host thread")?),
            ifindexes,
        )
    } else {
        (None, std::collections::HashMap::new())
    };
    let fpm_server = match &fpm_settings {
        Some(f) => {
            let s = fwd::control::fpm::start(f, handle.clone(), ifindexes, Arc::clone(&fpm_status))
                .with_context(|| format!("fpm: listening on {}", f.listen))?;
            eprintln!("fwd: fpm: listening on {} for zebra", f.listen);
            Some(s)
        }
        None => None,
    };
    let port_meta: Vec<fwd::control::ports::PortMeta> = cfg
        .ports
        .iter()
        .zip(&ports)
        .map(|(c, p)| fwd::control::ports::PortMeta {
            name: c.name.clone(),
            dpdk_id: p.id(),
            driver: c.dev_name().to_string(),
            rx_queues: p.rx_queue_count(),
            tx_queues: p.tx_queue_count(),
            mtu: c.mtu.unwrap_or(1500),
        })
        .collect();
    // The metrics endpoint: its own thread, reading what `fwdctl` reads.
    let metrics = match &cfg.metrics {
        Some(m) => {
            let listen = m.listen_addr()?;
            let sources = fwd::metrics::Sources {
                control: handle.clone(),
                stats: Arc::clone(&stats),
                rule_counters: Arc::clone(&rule_counter_set),
                ports: port_meta.clone(),
                pool: Some(Arc::clone(&pool)),
                host: cfg.host.as_ref().map(|_| Arc::clone(&host_counters)),
                fpm: cfg.fpm.as_ref().map(|_| Arc::clone(&fpm_status)),
                max_rule_series: m.max_rule_series,
                version: format!("fwd {}", env!("CARGO_PKG_VERSION")),
            };
            let timeout = Duration::from_millis(m.timeout_ms);
            let s = fwd::metrics::start(listen, m.max_connections, timeout, sources)
                .with_context(|| format!("metrics: listening on {listen}"))?;
            eprintln!("fwd: metrics: serving http://{}/metrics", s.local_addr());
            Some(s)
        }
        None => None,
    };
    let tsc_ms = (dpdk::tsc_hz() / 1000).max(1);
    let server = fwd::control::server::start(
        bound,
        fwd::control::server::ServerContext {
            control: handle,
            stats: Arc::clone(&stats),
            rule_counters: Arc::clone(&rule_counter_set),
            ports: port_meta.clone(),
            started: Instant::now(),
            version: format!("fwd {}", env!("CARGO_PKG_VERSION")),
            events: Arc::clone(&events),
            tick_ms: Box::new(move || dpdk::rdtsc() / tsc_ms),
            host: cfg.host.as_ref().map(|_| Arc::clone(&host_counters)),
            fpm: Arc::clone(&fpm_status),
            taps: trace_taps,
            workers: cfg.workers.len(),
            dump_cpu: fwd::cpus::dump_cpu(&worker_cpus, cfg.control.cpu),
        },
    )
    .with_context(|| format!("control socket {}", cfg.control.socket.display()))?;
    eprintln!("fwd: control socket {}", cfg.control.socket.display());

    let term = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&term))
            .context("installing signal handlers")?;
    }
    eprintln!(
        "fwd: forwarding with {} worker(s) on {} port(s); SIGINT/SIGTERM to stop",
        jobs.len(),
        ports.len()
    );

    // READY=1 (and the watchdog) once every worker has polled.
    service.started(fwd::systemd::Watched {
        stats: Arc::clone(&stats),
        workers: cfg
            .workers
            .iter()
            .enumerate()
            .map(|(wi, w)| worker_name(wi, w.lcore))
            .collect(),
        control: control.handle(),
    });
    let names: Vec<String> = cfg.ports.iter().map(|p| p.name.clone()).collect();
    let mut display = StatsDisplay::new(&stats);
    let mut last_print = Instant::now();
    let mut last_rx = (0u64, Instant::now());
    // Relaxed: a flag set by the signal handler; nothing else is published through it.
    while !term.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(10));
        service.tick().context("starting the watchdog thread")?;
        let snap = stats.snapshot();
        if let Some(n) = args.exit_after_rx {
            if snap.rx_packets >= n {
                break;
            }
        }
        if snap.rx_packets != last_rx.0 {
            last_rx = (snap.rx_packets, Instant::now());
        } else if let Some(idle) = args.exit_on_idle {
            if last_rx.1.elapsed() >= idle {
                break;
            }
        }
        if let Some(iv) = args.stats_interval {
            if last_print.elapsed().as_secs_f64() >= iv {
                display.print(&stats, &names);
                last_print = Instant::now();
            }
        }
    }

    eprintln!("fwd: stopping");
    service.stopping();
    drop(metrics);
    drop(server);
    drop(fpm_server);
    drop(host_thread);
    // Relaxed: workers poll it; joining them below is the synchronisation.
    stop.store(true, Ordering::Relaxed);
    for j in jobs {
        let rc = j.join();
        if rc != 0 {
            eprintln!("fwd: a worker exited with {rc}");
        }
    }
    let mut state = control.stop();
    state.writer.reclaim();
    let qstats = state.writer.stats();
    let final_stats = stats.snapshot();
    let hw: Vec<port::PortHwStats> = ports.iter().map(|p| p.hw_stats()).collect();
    for p in &mut ports {
        p.stop();
    }
    drop(ports);
    print_final(&final_stats, &names, &hw, qstats.generation);
    if let Some(path) = &args.stats_json {
        let json = fwd::stats::final_json(&final_stats, &names, &macs, &hw);
        std::fs::write(path, json).with_context(|| format!("writing {}", path.display()))?;
    }
    // Held packets and frames still queued between the sides go back to
    // the pool with the neighbour table and the channels.
    drop(state);
    drop(channels);
    let in_use = pool.in_use();
    if in_use != 0 {
        eprintln!("fwd: warning: {in_use} mbufs still in use at exit");
    }
    drop(pool);
    drop(eal);
    Ok(())
}

/// Creates `dir` (mode 0700) for this process alone. Its name is
/// predictable and its parent (`/tmp`) writable by all, so one that exists
/// already is used only when it is a real directory of ours that no one
/// else can enter (left by an earlier process with this pid); a link or
/// someone else's directory is refused, never followed.
fn private_dir(dir: &std::path::Path) -> std::io::Result<PrivateDir> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let m = std::fs::symlink_metadata(dir)?;
            let ours =
                m.is_dir() && m.uid() == nix::unistd::geteuid().as_raw() && m.mode() & 0o077 == 0;
            if !ours {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::AlreadyExists,
                    "exists and is not a private directory of this user (refusing to use it)",
                ));
            }
        }
        Err(e) => return Err(e),
        Ok(()) => {}
    }
    Ok(PrivateDir(dir.to_path_buf()))
}

/// The daemon's own runtime directory, removed with what the EAL left in
/// it when the daemon exits.
struct PrivateDir(PathBuf);

impl Drop for PrivateDir {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.0) {
            eprintln!("fwd: removing {}: {e}", self.0.display());
        }
    }
}

/// A worker's name, as its QSBR reader and the watchdog report it.
fn worker_name(index: usize, lcore: u32) -> String {
    format!("worker{index}@lcore{lcore}")
}

struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        // Relaxed: see the stop flag's other uses; joins synchronise.
        self.0.store(true, Ordering::Relaxed);
    }
}

struct StatsDisplay {
    prev: fwd::stats::StatsSnapshot,
    at: Instant,
}

impl StatsDisplay {
    fn new(stats: &Stats) -> Self {
        StatsDisplay {
            prev: stats.snapshot(),
            at: Instant::now(),
        }
    }

    fn print(&mut self, stats: &Stats, names: &[String]) {
        let now = stats.snapshot();
        let dt = self.at.elapsed().as_secs_f64().max(1e-9);
        let mut line = String::new();
        for (i, n) in names.iter().enumerate() {
            let rx = now.ports[i].rx_packets - self.prev.ports[i].rx_packets;
            let tx = now.ports[i].tx_packets - self.prev.ports[i].tx_packets;
            line.push_str(&format!(
                "{n}: rx {:>8.3} Mpps tx {:>8.3} Mpps  ",
                rx as f64 / dt / 1e6,
                tx as f64 / dt / 1e6
            ));
        }
        let drops: u64 = now.drops.iter().sum::<u64>() - self.prev.drops.iter().sum::<u64>();
        line.push_str(&format!("drops {:.3} Mpps", drops as f64 / dt / 1e6));
        println!("{line}");
        self.prev = now;
        self.at = Instant::now();
    }
}

fn print_final(
    s: &fwd::stats::StatsSnapshot,
    names: &[String],
    hw: &[port::PortHwStats],
    gen: u64,
) {
    println!("final counters (table generation {gen}):");
    println!(
        "  {:<12} {:>14} {:>14} {:>14} {:>14} {:>10}",
        "port", "rx_packets", "rx_bytes", "tx_packets", "tx_bytes", "tx_full"
    );
    for (i, n) in names.iter().enumerate() {
        let p = &s.ports[i];
        println!(
            "  {:<12} {:>14} {:>14} {:>14} {:>14} {:>10}   (driver: ipackets {} opackets {} imissed {})",
            n, p.rx_packets, p.rx_bytes, p.tx_packets, p.tx_bytes, p.tx_dropped,
            hw[i].ipackets, hw[i].opackets, hw[i].imissed
        );
    }
    let drops: Vec<_> = s
        .drops_by_name()
        .into_iter()
        .filter(|&(_, v)| v != 0)
        .collect();
    if drops.is_empty() {
        println!("  drops: none");
    } else {
        println!("  drops:");
        for (name, v) in drops {
            println!("    {name:<14} {v}");
        }
    }
}

/// Router-advertisement settings by port index (prefixes validated by
/// `Config::validate`).
fn ra_settings(cfg: &Config) -> Vec<Option<fwd::control::ra::RaSettings>> {
    cfg.ports
        .iter()
        .map(|p| {
            p.ra.as_ref().map(|ra| fwd::control::ra::RaSettings {
                prefixes: ra
                    .prefixes
                    .iter()
                    .filter_map(|s| s.parse::<ctl::wire::IpNet>().ok())
                    .filter_map(|n| match n.addr() {
                        std::net::IpAddr::V6(a) => Some((a, n.prefix_len())),
                        std::net::IpAddr::V4(_) => None,
                    })
                    .collect(),
                interval_ms: u64::from(ra.interval_s) * 1000,
                lifetime_s: ra.lifetime_s,
                mtu: ra.mtu,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::private_dir;

    #[test]
    fn the_runtime_dir_is_never_a_planted_link_or_someone_elses() {
        use std::os::unix::fs::PermissionsExt;
        let base = std::env::temp_dir().join(format!("fwd-priv-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir(&base).unwrap();
        let d = base.join("rt");
        let first = private_dir(&d).unwrap();
        let mode = std::fs::metadata(&d).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        std::fs::write(d.join("left-by-the-eal"), "x").unwrap();
        let again = private_dir(&d).expect("ours from an earlier run: reused");
        std::mem::forget(first);
        drop(again);
        assert!(!d.exists(), "removed, with its contents, when dropped");
        // A link planted at the name is refused, not followed.
        let target = base.join("elsewhere");
        std::fs::create_dir(&target).unwrap();
        let link = base.join("planted");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(private_dir(&link).is_err());
        // So is a directory others can enter.
        let open = base.join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(private_dir(&open).is_err());
        std::fs::remove_dir_all(&base).unwrap();
    }
}
