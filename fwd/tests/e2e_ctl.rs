//! End to end through the control socket: the real `fwd` daemon and the real
//! `fwdctl` binary (built beside `fwd` by `cargo test --workspace`, as the
//! test command runs it). Changes are visible in the tables at once; bad
//! input of every kind changes nothing.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

use common::fwdctl_output as fwdctl;
use common::*;
use ctl::wire::{Request, Response, RouteFilter};

fn config(tag: &str, sock: &Path, extra: &str) -> String {
    format!(
        "{eal}ports:
  - {{name: p0, device: net_null_a{tag}, addresses: [10.0.0.1/24]}}
  - {{name: p1, device: net_null_b{tag}, addresses: [10.0.1.1/24, 'fd00:1::1/64']}}
workers:
  - {{lcore: 1, rx: [{{port: p0}}, {{port: p1}}]}}
neighbours:
  - {{ip: 10.0.1.2, mac: '02:00:00:00:01:02', port: p1}}
control:
  socket: {sock}
  socket_mode: '0666'
  max_request_bytes: 100000
{extra}",
        eal = eal_yaml(tag),
        sock = sock.display(),
    )
}

/// Starts a daemon with one silent net_null port and one worker (lcore 1);
/// `eal` and `control` are more lines for those sections (each indented two
/// spaces, newline-terminated). Returns it and its control socket.
fn start_one_port(
    dir: &TempDir,
    tag: &str,
    eal: &str,
    control: &str,
) -> (Daemon, std::path::PathBuf) {
    std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o755)).unwrap();
    let sock = dir.path("fwd.sock");
    let cfg = format!(
        "{base}{eal}ports:
  - {{name: p0, device: 'net_null_a{tag},no-rx=1', addresses: [10.0.0.1/24]}}
workers:
  - {{lcore: 1, rx: [{{port: p0}}]}}
control:
  socket: {sock}
{control}",
        base = eal_yaml(tag),
        sock = sock.display(),
    );
    let mut d = Daemon(spawn_fwd(dir, &cfg, &[]));
    wait_ready(&mut d.0);
    (d, sock)
}

fn generation(sock: &Path) -> u64 {
    let mut c = ctl::Client::connect(sock).expect("connect");
    match c.call(&Request::Status {}).expect("status") {
        Response::Status(s) => s.generation,
        other => panic!("unexpected {other:?}"),
    }
}

fn routes(sock: &Path) -> String {
    ok(fwdctl(sock, &["route", "show"]))
}

fn start(dir: &TempDir, tag: &str, extra: &str) -> (Daemon, std::path::PathBuf) {
    // The socket's directory must be searchable by the unprivileged peer.
    std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o755)).unwrap();
    let sock = dir.path("fwd.sock");
    let mut d = Daemon(spawn_fwd(dir, &config(tag, &sock, extra), &[]));
    wait_ready(&mut d.0);
    (d, sock)
}

#[test]
fn changes_apply_atomically_and_bad_input_changes_nothing() {
    assert!(is_root(), "the end-to-end tests need root (DPDK)");
    let dir = TempDir::new("ctl");
    let (_d, sock) = start(&dir, "ctl", "");

    // Config-derived state is visible.
    let r = routes(&sock);
    assert!(r.contains("10.0.1.0/24") && r.contains("10.0.1.2"), "{r}");

    // A route, and its lookup.
    let g0 = generation(&sock);
    ok(fwdctl(
        &sock,
        &[
            "route",
            "add",
            "10.5.0.0/16",
            "via",
            "10.0.1.2",
            "dev",
            "p1",
        ],
    ));
    assert_eq!(generation(&sock), g0 + 1);
    let got = ok(fwdctl(&sock, &["--json", "route", "get", "10.5.7.7"]));
    assert!(
        got.contains("10.5.0.0/16") && got.contains("02:00:00:00:01:02"),
        "{got}"
    );

    // A batch whose last line does not parse: nothing is sent.
    let b1 = dir.path("bad-syntax.batch");
    std::fs::write(&b1, "route add 10.6.0.0/16 via 10.0.1.2 dev p1\nroute add 10.7.0.0/16 blackhole\nroute frobnicate\n").unwrap();
    let o = fwdctl(&sock, &["-b", b1.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("line 3"),
        "{}",
        text(&o)
    );

    // A batch the daemon refuses on its last line: nothing is applied.
    let b2 = dir.path("bad-state.batch");
    std::fs::write(&b2, "route add 10.6.0.0/16 via 10.0.1.2 dev p1\nroute add 10.7.0.0/16 blackhole\nroute del 10.99.0.0/16\n").unwrap();
    let o = fwdctl(&sock, &["-b", b2.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("line 3"),
        "{}",
        text(&o)
    );
    let g1 = generation(&sock);
    assert_eq!(g1, g0 + 1, "refused batches publish nothing");
    let r = routes(&sock);
    assert!(
        !r.contains("10.6.0.0/16") && !r.contains("10.7.0.0/16"),
        "{r}"
    );

    // A good batch is one generation.
    std::fs::write(
        &b2,
        "route add 10.6.0.0/16 via 10.0.1.2 dev p1\nroute add 10.7.0.0/16 blackhole\n",
    )
    .unwrap();
    ok(fwdctl(&sock, &["-b", b2.to_str().unwrap()]));
    assert_eq!(generation(&sock), g1 + 1);

    // A client killed in the middle of a batch line changes nothing.
    {
        let mut s = UnixStream::connect(&sock).unwrap();
        writeln!(s, r#"{{"hello":{{"protocol":1,"client":"test"}}}}"#).unwrap();
        let mut hello = String::new();
        BufReader::new(s.try_clone().unwrap())
            .read_line(&mut hello)
            .unwrap();
        assert!(hello.contains("\"hello\""), "{hello}");
        s.write_all(br#"{"id":1,"request":{"batch":{"changes":[{"route_add":{"prefix":"10.8.0.0/16","target":"blackhole"}},{"route_add":{"pre"#).unwrap();
        // dropped here: the connection closes mid-line
    }
    // A request over the size bound is refused, the connection survives.
    {
        let mut c = ctl::Client::connect(&sock).unwrap();
        let many: Vec<ctl::wire::Change> = (0..5000)
            .map(|i| {
                ctl::wire::Change::RouteAdd(ctl::wire::Route {
                    linkdown: false,
                    proto: None,
                    prefix: format!("10.{}.{}.0/24", 100 + i / 256, i % 256)
                        .parse()
                        .unwrap(),
                    table: 0,
                    target: ctl::wire::RouteTarget::Blackhole,
                })
            })
            .collect();
        let e = c
            .call(&Request::Batch { changes: many })
            .unwrap_err()
            .to_string();
        assert!(e.contains("too_large"), "{e}");
        assert!(matches!(
            c.call(&Request::Status {}),
            Ok(Response::Status(_))
        ));
    }
    assert_eq!(
        generation(&sock),
        g1 + 1,
        "nothing was applied by the broken clients"
    );
    assert!(!routes(&sock).contains("10.8.0.0/16"));

    // Rules: add, show, counters, delete.
    let out = ok(fwdctl(
        &sock,
        &[
            "--json",
            "rule",
            "add",
            "prio",
            "10",
            "dst",
            "10.5.0.0/16",
            "proto",
            "udp",
            "dport",
            "53",
            "action",
            "drop",
        ],
    ));
    assert!(
        out.contains("rule_ids") || out.contains("generation"),
        "{out}"
    );
    let shown = ok(fwdctl(&sock, &["rule", "show"]));
    assert!(shown.contains("10.5.0.0/16"), "{shown}");
    ok(fwdctl(&sock, &["rule", "counters"]));
    ok(fwdctl(&sock, &["rule", "flush"]));
    assert!(!ok(fwdctl(&sock, &["rule", "show"])).contains("10.5.0.0/16"));

    // Invalid input: typed errors, nothing changes.
    let g2 = generation(&sock);
    for bad in [
        vec!["route", "add", "10.9.0.1/16", "blackhole"], // host bits
        vec![
            "route",
            "add",
            "10.9.0.0/16",
            "via",
            "10.0.1.2",
            "dev",
            "nope",
        ], // unknown port
        vec!["route", "add", "10.5.0.0/16", "blackhole"], // exists
        vec!["route", "del", "10.9.0.0/16"],              // not found
        vec!["neigh", "del", "10.0.1.99", "dev", "p1"],   // not found
    ] {
        // 2: refused by fwdctl before sending; 1: refused by the daemon.
        let o = fwdctl(&sock, &bad);
        assert!(
            matches!(o.status.code(), Some(1 | 2)),
            "{bad:?}: {}",
            text(&o)
        );
    }
    assert_eq!(generation(&sock), g2);

    // Neighbour change: every route via it follows at once.
    ok(fwdctl(
        &sock,
        &[
            "neigh",
            "replace",
            "10.0.1.2",
            "lladdr",
            "02:00:00:00:01:99",
            "dev",
            "p1",
        ],
    ));
    let got = ok(fwdctl(&sock, &["--json", "route", "get", "10.6.1.1"]));
    assert!(got.contains("02:00:00:00:01:99"), "{got}");

    // Reads and status.
    let w = ok(fwdctl(
        &sock,
        &["--json", "watch", "interval", "100ms", "count", "2"],
    ));
    assert_eq!(w.lines().filter(|l| l.contains("rx_pps")).count(), 2, "{w}");
    ok(fwdctl(&sock, &["stats"]));
    ok(fwdctl(&sock, &["port", "show"]));
    let st = ok(fwdctl(&sock, &["--json", "status"]));
    assert!(st.contains("\"workers\"") && st.contains("worker0"), "{st}");

    // A peer that is neither root, the daemon's user nor in its group is refused.
    let o = output_of(
        Command::new(fwdctl_for_anyone(&dir.0))
            .arg("-s")
            .arg(&sock)
            .arg("status")
            .uid(65534)
            .gid(65534),
    )
    .expect("run fwdctl as nobody");
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("permission_denied"),
        "{}",
        text(&o)
    );

    // config save, then a new daemon loads it.
    let saved = dir.path("running.batch");
    ok(fwdctl(&sock, &["config", "save", saved.to_str().unwrap()]));
    let text_saved = std::fs::read_to_string(&saved).unwrap();
    assert!(text_saved.contains("10.6.0.0/16"), "{text_saved}");
    drop(_d);
    let dir2 = TempDir::new("ctl2");
    let (_d2, sock2) = start(&dir2, "ctl2", &format!("  load: {}\n", saved.display()));
    let r = routes(&sock2);
    assert!(
        r.contains("10.6.0.0/16") && r.contains("10.7.0.0/16") && r.contains("10.5.0.0/16"),
        "{r}"
    );
    let got = ok(fwdctl(&sock2, &["--json", "route", "get", "10.6.1.1"]));
    assert!(
        got.contains("02:00:00:00:01:99"),
        "the replaced neighbour survives: {got}"
    );
}

/// A worker that receives nothing holds no replaced version back, or every
/// one would wait for traffic to be reclaimed. One that always polls
/// (`datapath.idle_sleep_us: 0`) still reports quiescence: after changes
/// published while its port is silent, it reports the current generation.
/// One that sleeps while idle (the default) goes offline while it sleeps
/// and reports when it polls between sleeps: the versions are reclaimed
/// all the same, and its stats show the sleeps (none for the other).
#[test]
fn an_idle_worker_holds_no_version_back() {
    for (tag, datapath, sleeps) in [
        ("idlep", "datapath: {idle_sleep_us: 0}\n", false),
        ("idles", "", true),
    ] {
        let dir = TempDir::new(tag);
        let (d, sock) = start_one_port(&dir, tag, "", datapath);
        for i in 0..5 {
            ok(fwdctl(
                &sock,
                &["route", "add", &format!("10.9.{i}.0/24"), "via", "10.0.0.2"],
            ));
        }
        let want = generation(&sock);
        let start = std::time::Instant::now();
        loop {
            let mut c = ctl::Client::connect(&sock).expect("connect");
            let s = match c.call(&Request::Status {}).expect("status") {
                Response::Status(s) => s,
                other => panic!("unexpected {other:?}"),
            };
            let slept = match c.call(&Request::Stats {}).expect("stats") {
                Response::Stats(st) => st.lcores[0].idle_sleep_ms,
                other => panic!("unexpected {other:?}"),
            };
            let w = &s.workers[0];
            let reported = w.online && w.reported_generation == Some(want);
            let done = if sleeps {
                (reported || !w.online)
                    && s.pending_objects == 0
                    && s.reclaimed_objects >= 5
                    && slept > 0
            } else {
                reported && slept == 0
            };
            if done {
                break;
            }
            // Generous: the condition is what is tested, not the time.
            assert!(
                start.elapsed() < std::time::Duration::from_secs(60),
                "{tag}: the idle worker held generation {want} back \
                 (or its sleeps, {slept} ms, are not as configured): {s:?}"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        drop(d);
    }
}

/// The management threads (the main thread, the control lcore when it is not
/// pinned, the control socket's accept thread and every thread these make)
/// never run on a worker's CPU, even when the EAL pins the main lcore to one
/// (`eal.main_cpu` on the worker's CPU here): they run on the CPUs the
/// process started with minus the workers' (fwd::cpus).
#[test]
fn management_threads_stay_off_the_workers_cpus() {
    let dir = TempDir::new("cpus");
    let (d, sock) = start_one_port(&dir, "cpus", "  main_cpu: 1\n", "");
    // A session thread exists while a client is connected.
    let _client = ctl::Client::connect(&sock).expect("connect");
    let start = fwd::cpus::current().unwrap();
    let want = fwd::cpus::format_cpulist(&fwd::cpus::management(&start, &[1], None));
    let seen = wait_for(
        "the session thread",
        std::time::Duration::from_secs(30),
        || {
            let t = threads(d.0.id());
            t.iter().any(|t| t.name == "fwd-ctl-conn").then_some(t)
        },
        || format!("threads: {:?}", threads(d.0.id())),
    );
    for name in ["fwd", "fwd-control", "fwd-ctl-accept", "fwd-ctl-conn"] {
        let t = seen
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("no thread {name} in {seen:?}"));
        assert_eq!(t.cpus, want, "{name}: {seen:?}");
    }
    let worker = seen
        .iter()
        .find(|t| t.name == "rte-worker-1")
        .unwrap_or_else(|| panic!("no worker thread in {seen:?}"));
    assert_eq!(worker.cpus, "1", "{seen:?}");
    assert!(!want.split(',').any(|c| c == "1"), "{want}");
}

/// One thread of a process, as /proc shows it.
#[derive(Debug)]
struct ThreadInfo {
    name: String,
    /// The CPUs it may run on, as the kernel lists them (`0,2-5`).
    cpus: String,
    /// Its scheduling policy (`SCHED_*`).
    policy: i32,
}

/// The threads of process `pid` (those that end while being read are left out).
fn threads(pid: u32) -> Vec<ThreadInfo> {
    let mut v = Vec::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let t = t.unwrap().path();
        let read = |f: &str| std::fs::read_to_string(t.join(f)).ok();
        let (Some(comm), Some(status), Some(stat)) = (read("comm"), read("status"), read("stat"))
        else {
            continue;
        };
        let cpus = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .unwrap_or("")
            .trim()
            .to_string();
        // After the name's closing parenthesis the fields start at the
        // third (the state); the policy is the 41st.
        let policy = stat
            .rsplit_once(") ")
            .and_then(|(_, f)| f.split(' ').nth(38))
            .and_then(|p| p.parse().ok())
            .unwrap_or(-1);
        v.push(ThreadInfo {
            name: comm.trim().to_string(),
            cpus,
            policy,
        });
    }
    v
}

/// A dump runs on a thread of its own on the control lcore's CPU
/// (`control.cpu`), under SCHED_IDLE: seen in /proc while a client holds a
/// dump of 20,000 routes open (the dump thread waits on the full socket).
/// `fwdctl route show` runs under SCHED_IDLE as well.
#[test]
fn dumps_run_on_the_control_cpu_under_sched_idle() {
    let dir = TempDir::new("dumpcpu");
    let (d, sock) = start_one_port(&dir, "dumpcpu", "", "  cpu: 0\n");
    let batch = dir.path("routes.batch");
    let lines: String = (0..20_000u32)
        .map(|i| {
            format!(
                "route add 10.{}.{}.0/24 via 10.0.0.2\n",
                100 + i / 256,
                i % 256
            )
        })
        .collect();
    std::fs::write(&batch, lines).unwrap();
    ok(fwdctl(&sock, &["-b", batch.to_str().unwrap()]));
    let pid = d.0.id();
    let mut c = ctl::Client::connect(&sock).expect("connect");
    let mut dump = None;
    c.call_stream(&Request::RouteShow(RouteFilter::default()), |_| {
        dump = Some(wait_for(
            "the dump thread",
            std::time::Duration::from_secs(30),
            || threads(pid).into_iter().find(|t| t.name == "fwd-ctl-dump"),
            || format!("threads: {:?}", threads(pid)),
        ));
        std::ops::ControlFlow::Break(())
    })
    .expect("route show");
    let dump = dump.expect("an item came");
    assert_eq!(dump.cpus, "0", "{dump:?}");
    assert_eq!(dump.policy, libc::SCHED_IDLE, "{dump:?}");
    // The session that asked for it stays where the management threads are.
    let conn = threads(pid)
        .into_iter()
        .find(|t| t.name == "fwd-ctl-conn")
        .expect("the session thread");
    assert_ne!(conn.policy, libc::SCHED_IDLE, "{conn:?}");
    // fwdctl, the dump's client, gives way too: seen while it waits on a
    // pipe nobody reads (20,000 routes are more than a pipe holds).
    let mut client = std::process::Command::new(fwdctl_bin())
        .args(["-s", sock.to_str().unwrap(), "route", "show"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn fwdctl");
    let cpid = client.id();
    let policy = wait_for(
        "fwdctl under SCHED_IDLE",
        std::time::Duration::from_secs(30),
        || {
            threads(cpid)
                .into_iter()
                .find(|t| t.policy == libc::SCHED_IDLE)
        },
        || format!("fwdctl's threads: {:?}", threads(cpid)),
    );
    assert_eq!(policy.name, "fwdctl");
    client.kill().unwrap();
    client.wait().unwrap();
}
