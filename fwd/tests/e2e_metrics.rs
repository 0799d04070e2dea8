//! The metrics endpoint end to end: the real daemon with `metrics.listen`
//! on loopback, scraped over HTTP while traffic flows (an endless replay
//! into a blackhole), and compared with `fwdctl --json stats`: each scrape
//! lies between two fwdctl reads around it, and once a finite pcap has been
//! consumed its counters equal fwdctl's exactly. A client that connects and
//! sends nothing does not hold up a scrape.

mod common;

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use fwd::metrics::exposition::{self, Exposition};
use fwd::pkt::build::{self, FrameSpec};
use fwd::pkt::pcap;

/// Frames in the finite pcap: routed, unrouted, and matching rule 1.
const ROUTED: usize = 300;
const UNROUTED: usize = 40;
const RULED: usize = 25;

/// The reply's one tag taken off (`{"stats": {...}}` -> `{...}`); a
/// stream's items keep theirs.
fn json(sock: &Path, args: &[&str]) -> serde_json::Value {
    match fwdctl_json(sock, args) {
        serde_json::Value::Object(m) if m.len() == 1 => m.into_iter().next().unwrap().1,
        other => other,
    }
}

fn port_stat(stats: &serde_json::Value, port: &str, field: &str) -> u64 {
    stats["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .find(|p| p["name"] == port)
        .unwrap_or_else(|| panic!("port {port} in {stats}"))[field]
        .as_u64()
        .expect("a count")
}

fn drop_stat(stats: &serde_json::Value, reason: &str) -> u64 {
    stats["drops"]
        .as_array()
        .expect("drops")
        .iter()
        .find(|d| d["reason"] == reason)
        .unwrap_or_else(|| panic!("reason {reason} in {stats}"))["packets"]
        .as_u64()
        .expect("a count")
}

/// One HTTP request; the status line, the headers and the body.
fn http(addr: SocketAddr, request: &str) -> (String, String, String) {
    let mut c = TcpStream::connect(addr).expect("connect to the metrics endpoint");
    c.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    c.write_all(request.as_bytes()).unwrap();
    let mut all = String::new();
    c.read_to_string(&mut all).expect("read the answer");
    let (head, body) = all.split_once("\r\n\r\n").expect("a head and a body");
    let (status, headers) = head.split_once("\r\n").unwrap_or((head, ""));
    (status.to_string(), headers.to_string(), body.to_string())
}

fn scrape(addr: SocketAddr) -> Exposition {
    let (status, headers, body) = http(addr, "GET /metrics HTTP/1.1\r\nHost: fwd\r\n\r\n");
    assert_eq!(status, "HTTP/1.1 200 OK", "{headers}\n{body}");
    assert!(
        headers
            .contains("Content-Type: application/openmetrics-text; version=1.0.0; charset=utf-8"),
        "{headers}"
    );
    exposition::parse(&body).unwrap_or_else(|e| panic!("{e}\n{body}"))
}

fn metric(ex: &Exposition, name: &str, labels: &[(&str, &str)]) -> u64 {
    ex.get(name, labels)
        .unwrap_or_else(|| panic!("{name}{labels:?} not scraped")) as u64
}

fn spec() -> FrameSpec {
    FrameSpec {
        src_mac: [0x02, 0, 0, 0, 0, 0x99],
        dst_mac: [0x02, 0, 0, 0, 0, 0x01],
        ttl: 64,
        ..Default::default()
    }
}

fn inputs(dir: &TempDir) {
    let src = Ipv4Addr::new(10, 0, 0, 10);
    let pl = b"metrics e2e";
    // Endless: into the blackhole.
    let endless: Vec<Vec<u8>> = (0..64)
        .map(|i| build::udp4(&spec(), src, Ipv4Addr::new(192, 0, 2, i), 1000, 9, pl))
        .collect();
    pcap::write(dir.path("endless.pcap"), &endless).unwrap();
    let mut finite = Vec::new();
    for i in 0..ROUTED {
        let d = Ipv4Addr::new(10, 1, 0, (i % 200) as u8 + 1);
        finite.push(build::udp4(&spec(), src, d, 1000, 9, pl));
    }
    for _ in 0..UNROUTED {
        finite.push(build::udp4(
            &spec(),
            src,
            Ipv4Addr::new(10, 99, 0, 1),
            1,
            9,
            pl,
        ));
    }
    for _ in 0..RULED {
        // Rule 1 drops UDP to port 53.
        finite.push(build::udp4(
            &spec(),
            src,
            Ipv4Addr::new(10, 1, 0, 7),
            1,
            53,
            pl,
        ));
    }
    pcap::write(dir.path("finite.pcap"), &finite).unwrap();
    pcap::write(dir.path("empty.pcap"), &[]).unwrap();
    std::fs::write(
        dir.path("state.batch"),
        "# fwd running configuration, generation 0, 7 changes
address add 10.0.0.1/24 dev inf
address add 10.0.1.1/24 dev fin
address add 10.0.2.1/24 dev out
neigh add 10.0.2.2 lladdr 02:00:00:00:02:02 dev out
route add 10.1.0.0/16 via 10.0.2.2 dev out
route add 192.0.2.0/24 blackhole
rule add id 1 prio 10 proto udp dport 53 action drop
# end, 7 changes
",
    )
    .unwrap();
}

fn config(dir: &TempDir, listen: SocketAddr) -> String {
    let p = |n: &str| dir.path(n).display().to_string();
    format!(
        "{eal}ports:
  - {{name: inf, device: 'net_pcap_inf_m,rx_pcap={endless},infinite_rx=1'}}
  - {{name: fin, device: 'net_pcap_fin_m,rx_pcap={finite},tx_pcap={o1}'}}
  - {{name: out, device: 'net_null_out_m,no-rx=1'}}
workers:
  - {{lcore: 1, rx: [{{port: inf}}, {{port: fin}}, {{port: out}}]}}
control:
  socket: {sock}
  load: {state}
metrics:
  listen: '{listen}'
  max_connections: 4
  timeout_ms: 600000
",
        eal = eal_yaml("metrics"),
        endless = p("endless.pcap"),
        finite = p("finite.pcap"),
        o1 = p("out1.pcap"),
        sock = p("fwd.sock"),
        state = p("state.batch"),
    )
}

/// Starts the daemon on a port that was free a moment ago; another
/// process may take it in between, so a start that fails for that is
/// retried on another.
fn start(dir: &TempDir) -> (Daemon, SocketAddr) {
    for _ in 0..10 {
        let listen = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port");
        let mut d = Daemon(spawn_fwd(dir, &config(dir, listen), &[]));
        match try_ready(&mut d.0) {
            Ok(()) => return (d, listen),
            Err(out) if out.contains("Address already in use") => continue,
            Err(out) => panic!("fwd exited before forwarding:\n{out}"),
        }
    }
    panic!("no free port in 10 tries");
}

#[test]
fn scrapes_agree_with_fwdctl_while_traffic_flows_and_after() {
    assert!(is_root(), "the end-to-end tests need root (DPDK)");
    let dir = TempDir::new("metrics");
    inputs(&dir);
    let (_d, addr) = start(&dir);
    let sock = dir.path("fwd.sock");

    // Other paths and methods.
    assert!(http(addr, "GET / HTTP/1.1\r\n\r\n")
        .0
        .starts_with("HTTP/1.1 404"));
    assert!(http(addr, "POST /metrics HTTP/1.1\r\n\r\n")
        .0
        .starts_with("HTTP/1.1 405"));

    // A client that connects and says nothing holds its slot (for up to
    // `timeout_ms`, 10 minutes here), but does not hold up the scrapes
    // below: they would time out (`http` waits 2 minutes) if it did.
    let mut silent = TcpStream::connect(addr).unwrap();

    // While the endless replay flows: each scrape lies between the fwdctl
    // reads around it, and the counters keep moving.
    let mut last = 0u64;
    let mut moved = 0;
    let deadline = Instant::now() + Duration::from_secs(120);
    while moved < 3 {
        assert!(
            Instant::now() < deadline,
            "traffic never moved the counters"
        );
        let before = json(&sock, &["stats"]);
        let m = scrape(addr);
        let after = json(&sock, &["stats"]);
        for (name, field) in [
            ("fwd_port_rx_packets_total", "rx_packets"),
            ("fwd_port_rx_bytes_total", "rx_bytes"),
        ] {
            let got = metric(&m, name, &[("port", "inf")]);
            let (lo, hi) = (
                port_stat(&before, "inf", field),
                port_stat(&after, "inf", field),
            );
            assert!(lo <= got && got <= hi, "{name}: {lo} <= {got} <= {hi}");
        }
        let bh = m.sum("fwd_dropped_packets_total", &[("reason", "blackhole")]) as u64;
        let (lo, hi) = (
            drop_stat(&before, "blackhole"),
            drop_stat(&after, "blackhole"),
        );
        assert!(
            lo <= bh && bh <= hi,
            "blackhole drops: {lo} <= {bh} <= {hi}"
        );
        let rx = metric(&m, "fwd_port_rx_packets_total", &[("port", "inf")]);
        assert!(rx >= last, "a counter went back: {last} -> {rx}");
        // Under load the worker never sleeps (`datapath.idle_sleep_us`):
        // every poll of the endless replay receives.
        assert_eq!(
            metric(&m, "fwd_lcore_idle_sleeps_total", &[("lcore", "1")]),
            0
        );
        if rx > last {
            moved += 1;
        }
        last = rx;
    }

    // The finite pcap is consumed in a bounded time; then its counters
    // are exact and equal fwdctl's.
    let total = (ROUTED + UNROUTED + RULED) as u64;
    let deadline = Instant::now() + Duration::from_secs(120);
    while port_stat(&json(&sock, &["stats"]), "fin", "rx_packets") < total {
        assert!(
            Instant::now() < deadline,
            "the finite pcap was not consumed"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let m = scrape(addr);
    let s = json(&sock, &["stats"]);
    for (name, field) in [
        ("fwd_port_rx_packets_total", "rx_packets"),
        ("fwd_port_rx_bytes_total", "rx_bytes"),
    ] {
        assert_eq!(
            metric(&m, name, &[("port", "fin")]),
            port_stat(&s, "fin", field),
            "{name}"
        );
    }
    assert_eq!(
        metric(&m, "fwd_port_rx_packets_total", &[("port", "fin")]),
        total
    );
    // Only the finite traffic reaches `out` (the endless one is blackholed).
    for (name, field) in [
        ("fwd_port_tx_packets_total", "tx_packets"),
        ("fwd_port_tx_bytes_total", "tx_bytes"),
    ] {
        assert_eq!(
            metric(&m, name, &[("port", "out")]),
            port_stat(&s, "out", field),
            "{name}"
        );
    }
    assert_eq!(
        metric(&m, "fwd_port_tx_packets_total", &[("port", "out")]),
        ROUTED as u64,
        "{s:#}"
    );
    for (reason, n) in [("no_route", UNROUTED), ("acl_drop", RULED)] {
        assert_eq!(
            metric(
                &m,
                "fwd_dropped_packets_total",
                &[("lcore", "1"), ("reason", reason)]
            ),
            n as u64,
            "{reason}"
        );
        assert_eq!(drop_stat(&s, reason), n as u64, "fwdctl {reason}");
    }
    // The rule's counters are fwdctl's.
    let rc = json(&sock, &["rule", "counters"]);
    let rc = rc.as_array().expect("rule counters");
    let r1 = rc
        .iter()
        .map(|r| r.as_object().unwrap().values().next().unwrap().clone())
        .find(|r| r["id"] == 1)
        .expect("rule 1 in fwdctl's counters");
    assert_eq!(
        metric(&m, "fwd_rule_packets_total", &[("rule", "1")]),
        RULED as u64
    );
    assert_eq!(r1["packets"].as_u64(), Some(RULED as u64));
    assert_eq!(
        metric(&m, "fwd_rule_bytes_total", &[("rule", "1")]),
        r1["bytes"].as_u64().unwrap()
    );
    assert_eq!(metric(&m, "fwd_rules", &[]), 1);
    // Tables: the generation and the routes fwdctl sees.
    let st = json(&sock, &["status"]);
    assert_eq!(
        metric(&m, "fwd_table_generation", &[]),
        st["generation"].as_u64().unwrap()
    );
    // The routes `route show` lists, by family (10.1/16, the blackhole,
    // a connected and a local route per address, the neighbour's host
    // route; link-local IPv6 ones).
    let routes = json(&sock, &["route", "show"]);
    let routes = routes.as_array().expect("a route list");
    let v4 = routes
        .iter()
        .filter(|r| {
            let p = r["route"]["prefix"].as_str().expect("a prefix");
            !p.contains(':')
        })
        .count() as u64;
    assert!(v4 >= 9, "{routes:?}");
    assert_eq!(
        metric(&m, "fwd_routes", &[("table", "0"), ("family", "ipv4")]),
        v4
    );
    assert_eq!(
        metric(&m, "fwd_routes", &[("table", "0"), ("family", "ipv6")]),
        routes.len() as u64 - v4
    );
    assert_eq!(
        metric(
            &m,
            "fwd_neighbours",
            &[("port", "out"), ("state", "permanent")]
        ),
        1
    );
    assert_eq!(metric(&m, "fwd_port_up", &[("port", "out")]), 1);
    assert!(metric(&m, "fwd_mempool_mbufs", &[]) > 0);
    assert!(m.select("fwd_port_xstat_total", &[("port", "fin")]).count() > 0);

    // The silent client is still waiting: it was never answered...
    silent.set_nonblocking(true).unwrap();
    let e = silent.read(&mut [0u8; 64]).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock, "{e}");
    // ... and does not keep the daemon from stopping cleanly.
    let mut d = _d;
    let pid = d.0.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let out = wait_output(&mut d.0);
    // Reaped: the guard must not signal its pid again.
    std::mem::forget(d);
    assert!(out.0.success(), "{}", out.1);
    assert!(out.1.contains("final counters"), "{}", out.1);
    // Closed by the daemon: end of file (or a reset), never a hang.
    silent.set_nonblocking(false).unwrap();
    silent
        .set_read_timeout(Some(Duration::from_secs(120)))
        .unwrap();
    let mut rest = Vec::new();
    match silent.read_to_end(&mut rest) {
        Ok(_) => assert!(rest.is_empty(), "{}", String::from_utf8_lossy(&rest)),
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}"),
    }
}

/// Waits for the daemon (its stdout; stderr is drained by `try_ready`).
fn wait_output(c: &mut std::process::Child) -> (std::process::ExitStatus, String) {
    let mut out = String::new();
    if let Some(mut o) = c.stdout.take() {
        let _ = o.read_to_string(&mut out);
    }
    (c.wait().expect("wait for fwd"), out)
}
