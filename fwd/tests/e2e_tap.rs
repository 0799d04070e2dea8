//! End to end with real kernel peers: two `net_tap` ports, each moved into a
//! network namespace this test creates; `ping` from one namespace to the
//! other goes through the appliance and back.
//!
//! Addresses are private to the namespaces (10.77.1.0/24, 10.77.2.0/24); no
//! traffic leaves them.

mod common;

use std::process::Command;

use common::netns::*;
use common::*;

/// Two namespaces on two tap ports of a running daemon, addressed and
/// pointed at the appliance; returns them with the daemon.
struct Bed {
    daemon: Daemon,
    a: Netns,
    b: Netns,
    sock: std::path::PathBuf,
    /// The tap interface names in namespaces a and b.
    ifaces: (String, String),
    _dir: TempDir,
}

fn bed(tag: &str, extra_stats: Option<&std::path::Path>) -> Bed {
    let pid = std::process::id();
    let (ta, tb) = (
        format!("f{tag}a{}", pid % 10000),
        format!("f{tag}b{}", pid % 10000),
    );
    let dir = TempDir::new(tag);
    let sock = dir.path("fwd.sock");
    let cfg = format!(
        "{eal}ports:
  - name: a
    device: net_tap_a{tag}{pid},iface={ta},mac=02:00:00:77:01:01
    addresses: [10.77.1.1/24]
  - name: b
    device: net_tap_b{tag}{pid},iface={tb},mac=02:00:00:77:02:01
    addresses: [10.77.2.1/24, 'fd77:2::1/64']
workers:
  - lcore: 1
    rx: [{{port: a}}, {{port: b}}]
neighbours:
  - {{ip: 10.77.1.2, mac: '02:00:00:77:01:02', port: a}}
  - {{ip: 10.77.2.2, mac: '02:00:00:77:02:02', port: b}}
control:
  socket: {sock}
",
        eal = eal_yaml(tag),
        sock = sock.display(),
    );
    let mut args = Vec::new();
    if let Some(p) = extra_stats {
        args.push("--stats-json".to_string());
        args.push(p.display().to_string());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut daemon = Daemon(spawn_fwd(&dir, &cfg, &args));
    wait_ready(&mut daemon.0);
    let a = Netns::new(format!("fwd{tag}-a-{pid}"));
    let b = Netns::new(format!("fwd{tag}-b-{pid}"));
    for (ns, iface, mac, addr, gw, gwmac) in [
        (
            &a,
            &ta,
            "02:00:00:77:01:02",
            "10.77.1.2/24",
            "10.77.1.1",
            "02:00:00:77:01:01",
        ),
        (
            &b,
            &tb,
            "02:00:00:77:02:02",
            "10.77.2.2/24",
            "10.77.2.1",
            "02:00:00:77:02:01",
        ),
    ] {
        sh(&["ip", "link", "set", iface, "netns", &ns.0]).expect("move tap into namespace");
        ns.exec(&["ip", "link", "set", iface, "address", mac])
            .unwrap();
        ns.exec(&["ip", "addr", "add", addr, "dev", iface]).unwrap();
        ns.exec(&["ip", "link", "set", iface, "up"]).unwrap();
        ns.exec(&["ip", "link", "set", "lo", "up"]).unwrap();
        ns.exec(&["ip", "route", "add", "default", "via", gw])
            .unwrap();
        ns.exec(&[
            "ip",
            "neigh",
            "replace",
            gw,
            "lladdr",
            gwmac,
            "dev",
            iface,
            "nud",
            "permanent",
        ])
        .unwrap();
    }
    Bed {
        daemon,
        a,
        b,
        sock,
        ifaces: (ta, tb),
        _dir: dir,
    }
}

/// Packets the daemon sent out of `port`.
fn port_tx(sock: &std::path::Path, port: &str) -> u64 {
    let o = Command::new(fwdctl_bin())
        .arg("-s")
        .arg(sock)
        .args(["--json", "port", "stats", port])
        .output()
        .expect("run fwdctl");
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    v["port_stats"][0]["tx_packets"]
        .as_u64()
        .unwrap_or_else(|| panic!("tx_packets in {v}"))
}

#[test]
fn fwdctl_changes_steer_live_traffic() {
    assert!(
        is_root(),
        "the end-to-end tests need root (DPDK, namespaces)"
    );
    let bed = bed("steer", None);
    assert_eq!(pings(&bed.a, 2, "10.77.2.2"), 2, "baseline");

    // A drop rule for ICMP to b: no replies; deleting it restores them.
    fwdctl(
        &bed.sock,
        &[
            "rule",
            "add",
            "id",
            "7",
            "prio",
            "10",
            "dst",
            "10.77.2.2/32",
            "proto",
            "icmp",
            "action",
            "drop",
        ],
    );
    assert_eq!(
        pings(&bed.a, 2, "10.77.2.2"),
        0,
        "the drop rule stops the pings"
    );
    fwdctl(&bed.sock, &["rule", "del", "7"]);
    assert_eq!(
        pings(&bed.a, 2, "10.77.2.2"),
        2,
        "deleting the rule restores them"
    );

    // A prefix behind b: unreachable until a route via b's host is added.
    bed.b
        .exec(&["ip", "addr", "add", "10.88.0.1/32", "dev", "lo"])
        .unwrap();
    assert_eq!(pings(&bed.a, 1, "10.88.0.1"), 0, "no route yet");
    fwdctl(
        &bed.sock,
        &[
            "route",
            "add",
            "10.88.0.0/16",
            "via",
            "10.77.2.2",
            "dev",
            "b",
        ],
    );
    assert_eq!(
        pings(&bed.a, 2, "10.88.0.1"),
        2,
        "the new route carries the traffic"
    );
    // Moving the route to port a moves the traffic there: a's TX counter
    // grows by the echo requests, and b sees none of them.
    let tx_a = port_tx(&bed.sock, "a");
    fwdctl(
        &bed.sock,
        &[
            "route",
            "replace",
            "10.88.0.0/16",
            "via",
            "10.77.1.2",
            "dev",
            "a",
        ],
    );
    assert_eq!(
        pings(&bed.a, 2, "10.88.0.1"),
        0,
        "ns a does not answer for 10.88.0.1"
    );
    assert!(
        port_tx(&bed.sock, "a") >= tx_a + 2,
        "the requests left through port a"
    );
    fwdctl(&bed.sock, &["route", "del", "10.88.0.0/16"]);
    assert_eq!(
        pings(&bed.a, 1, "10.88.0.1"),
        0,
        "and its deletion stops it"
    );
    drop(bed.daemon);
}

#[test]
fn ping_between_namespaces_through_the_appliance() {
    assert!(
        is_root(),
        "the end-to-end tests need root (DPDK, namespaces)"
    );
    let stats_dir = TempDir::new("tapstats");
    let stats_path = stats_dir.path("stats.json");
    let bed = bed("ping", Some(&stats_path));
    // -c 5 with a generous per-reply wait: the assertion is on replies, not time.
    assert_eq!(
        pings(&bed.a, 5, "10.77.2.2"),
        5,
        "ping a -> b through the appliance"
    );
    assert_eq!(pings(&bed.b, 3, "10.77.1.2"), 3, "ping b -> a");
    // Without its static entry, b learns the appliance's MAC by ARP, and the
    // appliance answers pings of its own address.
    bed.b
        .exec(&["ip", "neigh", "del", "10.77.2.1", "dev", &bed.ifaces.1])
        .unwrap();
    assert_eq!(
        pings(&bed.b, 2, "10.77.2.1"),
        2,
        "ping the appliance itself"
    );
    let neigh = bed.b.exec(&["ip", "neigh", "show", "10.77.2.1"]).unwrap();
    assert!(neigh.contains("02:00:00:77:02:01"), "ARP-learned: {neigh}");
    // IPv6: b resolves the appliance by neighbour discovery and pings it.
    bed.b
        .exec(&[
            "ip",
            "-6",
            "addr",
            "add",
            "fd77:2::2/64",
            "dev",
            &bed.ifaces.1,
            "nodad",
        ])
        .unwrap();
    assert_eq!(
        pings(&bed.b, 2, "fd77:2::1"),
        2,
        "ping6 the appliance itself"
    );
    let neigh = bed
        .b
        .exec(&["ip", "-6", "neigh", "show", "fd77:2::1"])
        .unwrap();
    assert!(neigh.contains("02:00:00:77:02:01"), "ND-learned: {neigh}");
    drop(bed.daemon);
    let stats = read_stats(&stats_path);
    // 8 echo requests and 8 replies crossed the appliance, each forwarded once.
    let a_tx = stats["ports"][0]["counters"]["tx_packets"]
        .as_u64()
        .unwrap();
    let b_tx = stats["ports"][1]["counters"]["tx_packets"]
        .as_u64()
        .unwrap();
    assert!(
        a_tx >= 8 && b_tx >= 8,
        "forwarded a={a_tx} b={b_tx}: {stats}"
    );
    // Between the pings (a second apart) the worker found its queues empty
    // and slept (`datapath.idle_sleep_us`, on by default), yet every ping
    // above was answered: a packet ends a sleep.
    let sleeps = stats["lcores"][0]["idle_sleeps"].as_u64().unwrap();
    let slept_ns = stats["lcores"][0]["idle_sleep_ns"].as_u64().unwrap();
    assert!(sleeps > 0 && slept_ns > 0, "{stats}");
}
