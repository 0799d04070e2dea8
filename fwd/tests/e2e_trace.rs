//! `fwdctl trace` and `fwdctl capture` against the real daemon: net_pcap
//! replays two known packets endlessly into p0 (one routed out of p1, one
//! dropped by rule 7); the records and the pcap files must show exactly
//! those packets. One trace at a time, bounded, and disarmed when its
//! client hangs up.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::Ipv4Addr;
use std::ops::ControlFlow;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::fwdctl_output as fwdctl;
use common::*;
use ctl::wire::{ErrorKind, Item, Request, TracePacket, TraceRecord};
use fwd::pkt::build::{self, FrameSpec};
use fwd::pkt::pcap;

const NEIGH_MAC: [u8; 6] = [2, 0, 0, 0, 1, 2];

fn udp(dst: [u8; 4]) -> Vec<u8> {
    build::udp4(
        &FrameSpec::default(),
        Ipv4Addr::new(10, 0, 0, 2),
        Ipv4Addr::from(dst),
        1000,
        53,
        &[0x5a; 40],
    )
}

fn routed() -> Vec<u8> {
    udp([10, 1, 0, 5])
}

fn dropped() -> Vec<u8> {
    udp([10, 1, 9, 9])
}

fn config(tag: &str, dir: &TempDir) -> String {
    let inp = dir.path("in.pcap");
    pcap::write(&inp, &[routed(), dropped()]).unwrap();
    format!(
        "{eal}ports:
  - name: p0
    device: net_pcap_tr{tag},rx_pcap={inp},infinite_rx=1
    addresses: [10.0.0.1/24]
  - name: p1
    device: net_null_tr{tag},no-rx=1
    addresses: [10.0.1.1/24]
workers:
  - lcore: 1
    rx: [{{port: p0}}, {{port: p1}}]
control:
  socket: {sock}
neighbours:
  - {{ip: 10.0.1.2, mac: '02:00:00:00:01:02', port: p1}}
routes:
  - {{prefix: 10.1.0.0/16, via: 10.0.1.2, dev: p1}}
",
        eal = eal_yaml(tag),
        inp = inp.display(),
        sock = dir.path("fwd.sock").display(),
    )
}

/// `fwdctl --json trace ARGS`: the records.
fn trace(sock: &Path, args: &[&str]) -> Vec<TraceRecord> {
    let mut a = vec!["--json", "trace"];
    a.extend_from_slice(args);
    ok(fwdctl(sock, &a))
        .lines()
        .map(|l| match serde_json::from_str::<Item>(l) {
            Ok(Item::Trace(r)) => r,
            other => panic!("{l}: {other:?}"),
        })
        .collect()
}

fn dst_of(r: &TraceRecord) -> Ipv4Addr {
    match &r.packet {
        TracePacket::Ip {
            dst: std::net::IpAddr::V4(d),
            proto: 17,
            sport: 1000,
            dport: 53,
            ..
        } => *d,
        other => panic!("not one of the test packets: {other:?}"),
    }
}

/// A routed packet shows its route and next hop; a dropped one its rule.
fn check_record(r: &TraceRecord) {
    assert_eq!((r.worker, r.port.as_str()), (0, "p0"), "{r}");
    assert_eq!(r.len as usize, routed().len(), "{r}");
    if dst_of(r) == Ipv4Addr::new(10, 1, 0, 5) {
        assert_eq!(r.rules, Vec::<u32>::new(), "{r}");
        let route = r.route.as_ref().expect("a route");
        assert_eq!(route.table, 0);
        assert_eq!(route.prefix, Some("10.1.0.0/16".parse().unwrap()), "{r}");
        let nh = r.nexthop.as_ref().expect("a next hop");
        assert_eq!(nh.via, Some("10.0.1.2".parse().unwrap()), "{r}");
        assert_eq!(nh.dev, "p1");
        assert_eq!(
            (r.verdict.as_str(), r.out.as_deref()),
            ("forward", Some("p1"))
        );
        assert_eq!(r.reason, None);
    } else {
        assert_eq!(dst_of(r), Ipv4Addr::new(10, 1, 9, 9), "{r}");
        assert_eq!(r.rules, vec![7], "{r}");
        assert_eq!((&r.route, &r.nexthop), (&None, &None), "{r}");
        assert_eq!(r.verdict, "drop", "{r}");
        assert_eq!(r.reason.as_deref(), Some("acl_drop"), "{r}");
    }
}

/// Sends a request on a raw connection and leaves it unanswered.
fn raw_request(sock: &Path, req: &str) -> UnixStream {
    let mut s = UnixStream::connect(sock).unwrap();
    writeln!(s, r#"{{"hello":{{"protocol":1,"client":"test"}}}}"#).unwrap();
    let mut hello = String::new();
    BufReader::new(s.try_clone().unwrap())
        .read_line(&mut hello)
        .unwrap();
    assert!(hello.contains("\"hello\""), "{hello}");
    writeln!(s, "{{\"id\":1,\"request\":{req}}}").unwrap();
    s
}

/// Runs `f` until it returns `Some`, for up to a minute.
fn eventually<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn capture(sock: &Path, file: &Path, args: &[&str]) -> Vec<pcap::Record> {
    let mut a = vec!["capture"];
    a.extend_from_slice(args);
    a.extend_from_slice(&["-w", file.to_str().unwrap()]);
    let o = fwdctl(sock, &a);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("packets captured"),
        "{}",
        text(&o)
    );
    let f = std::fs::File::open(file).unwrap();
    pcap::Reader::new(f)
        .unwrap()
        .collect::<std::io::Result<Vec<_>>>()
        .unwrap()
}

/// `tcpdump -r` reads the file, when tcpdump is installed
/// (deploy/setup.sh installs it); the number of packets it printed.
fn tcpdump_count(file: &Path) -> Option<usize> {
    let o = Command::new("tcpdump")
        .args(["-nn", "-r"])
        .arg(file)
        .output()
        .ok()?;
    assert!(o.status.success(), "tcpdump -r: {}", text(&o));
    Some(String::from_utf8_lossy(&o.stdout).lines().count())
}

#[test]
fn trace_and_capture_show_the_packets_the_daemon_forwards_and_drops() {
    assert!(is_root(), "the end-to-end tests need root (DPDK)");
    let dir = TempDir::new("trace");
    let mut d = Daemon(spawn_fwd(&dir, &config("trace", &dir), &[]));
    wait_ready(&mut d.0);
    let sock: PathBuf = dir.path("fwd.sock");
    ok(fwdctl(
        &sock,
        &[
            "rule", "add", "id", "7", "prio", "10", "dst", "10.1.9.9", "proto", "udp", "action",
            "drop",
        ],
    ));

    // N records, each one of the two packets with its own story.
    let recs = trace(&sock, &["20", "port", "p0"]);
    assert_eq!(recs.len(), 20);
    recs.iter().for_each(check_record);
    let n_routed = recs
        .iter()
        .filter(|r| dst_of(r) == Ipv4Addr::new(10, 1, 0, 5))
        .count();
    assert!(n_routed > 0 && n_routed < 20, "both packets: {n_routed}");
    // A filter in the rules' words.
    let recs = trace(&sock, &["5", "dst", "10.1.9.9", "proto", "udp"]);
    assert_eq!(recs.len(), 5);
    for r in &recs {
        assert_eq!(dst_of(r), Ipv4Addr::new(10, 1, 9, 9));
        check_record(r);
    }
    // The text form: one line per packet.
    let out = ok(fwdctl(&sock, &["trace", "2", "dst", "10.1.0.5"]));
    assert_eq!(out.lines().count(), 2, "{out}");
    assert!(
        out.lines().all(|l| l.starts_with("worker 0 in p0")
            && l.contains("route table 0 10.1.0.0/16")
            && l.ends_with("forward p1")),
        "{out}"
    );

    // Capture as received: the input frames, whole.
    let inp = dir.path("cap-in.pcap");
    let recs = capture(
        &sock,
        &inp,
        &["port", "p0", "in", "-c", "6", "snaplen", "2048"],
    );
    assert_eq!(recs.len(), 6);
    for r in &recs {
        assert!(r.data == routed() || r.data == dropped(), "{:?}", r.data);
        assert_eq!(r.orig_len as usize, r.data.len());
    }
    if let Some(n) = tcpdump_count(&inp) {
        assert_eq!(n, 6);
    } else {
        eprintln!("tcpdump not installed: the pcap was checked with fwd's own reader only");
    }
    // Cut to a snaplen, the wire length kept.
    let cut = dir.path("cap-cut.pcap");
    let recs = capture(
        &sock,
        &cut,
        &["port", "p0", "dst", "10.1.9.9", "-c", "2", "snaplen", "20"],
    );
    assert_eq!(recs.len(), 2);
    for r in &recs {
        assert_eq!(r.data, dropped()[..20]);
        assert_eq!(r.orig_len as usize, dropped().len());
    }
    // Capture as sent out of p1: the routed packet, rewritten.
    let out = dir.path("cap-out.pcap");
    let recs = capture(&sock, &out, &["port", "p1", "out", "-c", "3"]);
    assert_eq!(recs.len(), 3);
    let inp = routed();
    for r in &recs {
        let f = &r.data;
        assert_eq!(f.len(), inp.len());
        assert_eq!(f[..6], NEIGH_MAC, "rewritten for the next hop");
        assert_eq!(f[12..22], inp[12..22]);
        assert_eq!(f[22], inp[22] - 1, "TTL decremented");
        assert_eq!(f[26..], inp[26..], "addresses and payload unchanged");
        assert!(fwd::pkt::csum::verify_ipv4_header(&f[14..34]));
    }
    if let Some(n) = tcpdump_count(&out) {
        assert_eq!(n, 3);
    }

    // Bounds: refused by fwdctl, and by the daemon for a raw client.
    let o = fwdctl(&sock, &["trace", "10001"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let mut c = ctl::Client::connect(&sock).unwrap();
    let e = c
        .call_stream(
            &Request::Trace {
                count: 10_001,
                port: None,
                filter: Default::default(),
            },
            |_| ControlFlow::Continue(()),
        )
        .unwrap_err();
    assert!(
        matches!(&e, ctl::ClientError::Server(b) if b.kind == ErrorKind::TooLarge),
        "{e}"
    );

    // One trace at a time: a peer's trace that matches nothing holds it...
    let hold = raw_request(
        &sock,
        r#"{"trace":{"count":1,"filter":{"dport":{"lo":9,"hi":9}}}}"#,
    );
    let msg = eventually("a second trace is refused as busy", || {
        let o = fwdctl(&sock, &["trace", "1"]);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        (!o.status.success()).then_some(err)
    });
    assert!(
        msg.contains("busy") && msg.contains("one at a time"),
        "{msg}"
    );
    // ... and hanging up disarms it.
    drop(hold);
    let recs = eventually("a trace runs again after the peer hung up", || {
        let o = fwdctl(&sock, &["--json", "trace", "1"]);
        o.status.success().then_some(o)
    });
    assert_eq!(String::from_utf8_lossy(&recs.stdout).lines().count(), 1);

    // A capture of a port that does not exist changes nothing.
    let o = fwdctl(
        &sock,
        &["capture", "port", "nope", "-c", "1", "-w", "/dev/null"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no port named"));
}
