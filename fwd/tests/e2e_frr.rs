//! The appliance as a BGP router: FRR runs beside `fwd`, peers through
//! the appliance's own ports over the host path, and feeds the FIB over
//! FPM.
//!
//! ```text
//!  peer ns                       app ns                              host ns
//!  bgpd AS 65002 (--no_zebra) ── [wan] fwd [lan] ─────────────────── pings
//!  10.77.1.2, 10k prefixes       zebra -M dplane_fpm_nl + bgpd       10.78.1.2
//!  lo 10.129.5.1 (in one)        AS 65001 on representors wan, lan
//! ```
//!
//! `fwd` runs inside `app`: its ports are `net_tap`s moved into `peer` and
//! `host`, and its host interfaces (`wan`, `lan`, same MACs and addresses
//! as the ports) are what zebra and bgpd see. BGP's TCP segments, and the
//! kernel's ARP, cross the data path's punt queue and the host thread in
//! both directions; zebra's routes come back over FPM as `proto bgp`.
//!
//! Skipped, with a message, when not root or FRR is missing (setup.sh
//! installs it). Addresses are private to the namespaces (10.77.0.0/16,
//! 10.78.0.0/16, 10.128.0.0/9). Assertions are on what the daemons report;
//! waits poll with a deadline.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::Duration;

use common::frr::*;
use common::netns::{pings, Netns};
use common::*;

const APP_AS: u32 = 65001;
const PEER_AS: u32 = 65002;
const N: usize = 10_000;
const FPM_PORT: u16 = 2620;

struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .arg(self.0.id().to_string())
            .status();
        let _ = self.0.wait();
    }
}

/// Everything of one test; dropped in reverse order of declaration... so
/// the FRR daemons go before fwd, and the namespaces last.
struct Lab {
    peer: Frr,
    app: Frr,
    _fwd: Daemon,
    sock: PathBuf,
    host: Netns,
    peer_ns: Netns,
    app_ns: Netns,
    _dir: TempDir,
}

fn fpm(sock: &Path) -> serde_json::Value {
    fwdctl_json(sock, &["fpm", "show"])["fpm"].clone()
}

/// The prefixes of `fwd`'s routes with protocol `proto`.
fn routes_of(sock: &Path, proto: &str) -> BTreeSet<String> {
    fwdctl_json(sock, &["route", "show", "proto", proto])
        .as_array()
        .expect("a route dump is an array")
        .iter()
        .map(|r| r["route"]["prefix"].as_str().unwrap().to_string())
        .collect()
}

fn stat(sock: &Path, kind: &str, name: &str) -> u64 {
    let s = fwdctl_json(sock, &["stats"])["stats"].clone();
    let (list, key, val) = match kind {
        "drop" => ("drops", "reason", "packets"),
        _ => ("events", "event", "count"),
    };
    s[list]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e[key] == name)
        .and_then(|e| e[val].as_u64())
        .unwrap_or_else(|| panic!("no {kind} {name} in stats: {s}"))
}

fn port_tx(sock: &Path, port: &str) -> u64 {
    let s = fwdctl_json(sock, &["port", "stats", port]);
    s["port_stats"][0]["tx_packets"]
        .as_u64()
        .unwrap_or_else(|| panic!("{s}"))
}

fn lab(tag: &str, stale_ms: u64) -> Option<Lab> {
    if skip(tag) {
        return None;
    }
    let pid = std::process::id();
    let app_ns = netns(format!("fwdfrr-{tag}-a-{pid}"));
    let peer_ns = netns(format!("fwdfrr-{tag}-p-{pid}"));
    let host = netns(format!("fwdfrr-{tag}-h-{pid}"));
    let dir = TempDir::new(&format!("frr-{tag}"));
    let sock = dir.path("fwd.sock");
    let (tw, tl) = (
        format!("fw{tag}{}", pid % 1000),
        format!("fl{tag}{}", pid % 1000),
    );
    let cfg = format!(
        "{eal}ports:
  - name: wan
    device: net_tap_w{tag}{pid},iface={tw},mac=02:00:00:77:01:01
    addresses: [10.77.1.1/24]
  - name: lan
    device: net_tap_l{tag}{pid},iface={tl},mac=02:00:00:78:01:01
    addresses: [10.78.1.1/24]
workers:
  - lcore: 1
    rx: [{{port: wan}}, {{port: lan}}]
control:
  socket: {sock}
host:
  punt_rate: 2000
  punt_burst: 500
fpm:
  listen: 127.0.0.1:{FPM_PORT}
  stale_ms: {stale_ms}
",
        eal = eal_yaml(&format!("frr-{tag}")),
        sock = sock.display(),
    );
    let mut child = spawn_fwd_in(&app_ns, &dir, &cfg, &[]);
    wait_ready(&mut child);
    let fwd = Daemon(child);
    for (ns, iface, addr, route) in [
        (&peer_ns, &tw, "10.77.1.2/24", "10.78.0.0/16 via 10.77.1.1"),
        (&host, &tl, "10.78.1.2/24", "default via 10.78.1.1"),
    ] {
        app_ns
            .exec(&["ip", "link", "set", iface, "netns", &ns.0])
            .expect("move the port's tap");
        ns.exec(&["ip", "addr", "add", addr, "dev", iface]).unwrap();
        ns.exec(&["ip", "link", "set", iface, "up"]).unwrap();
        let mut r = vec!["ip", "route", "add"];
        r.extend(route.split(' '));
        ns.exec(&r).unwrap();
    }
    // The address the host pings, inside one of the announced prefixes.
    peer_ns
        .exec(&["ip", "addr", "add", "10.129.5.1/32", "dev", "lo"])
        .unwrap();
    // The representors carry the ports' addresses.
    let shown = app_ns.exec(&["ip", "-br", "addr", "show", "wan"]).unwrap();
    assert!(shown.contains("10.77.1.1/24"), "representor wan: {shown}");

    let mut app = Frr::new(&app_ns, &format!("{tag}-app"));
    app.start_zebra(FPM_PORT, "");
    let mut cfg = bgpd_config(APP_AS, "10.77.1.1", &[("10.77.1.2", "ipv4", PEER_AS)], 1);
    // Short timers: a session starved by the flood below would drop.
    cfg = cfg.replace(
        " no bgp default ipv4-unicast\n",
        " no bgp default ipv4-unicast\n timers bgp 1 3\n",
    );
    app.start("bgpd", &cfg, &[]);
    let mut peer = Frr::new(&peer_ns, &format!("{tag}-peer"));
    let pcfg = peer_bgpd_config(
        PEER_AS,
        "10.77.1.2",
        APP_AS,
        "10.77.1.1",
        None,
        &v4_prefixes(N),
        &[],
    )
    .replace(
        " no bgp network import-check\n",
        " no bgp network import-check\n timers bgp 1 3\n",
    );
    peer.start("bgpd", &pcfg, &["--no_zebra"]);
    Some(Lab {
        peer,
        app,
        _fwd: fwd,
        sock,
        host,
        peer_ns,
        app_ns,
        _dir: dir,
    })
}

/// Waits until `fwd`'s FIB holds exactly `want` BGP routes from zebra
/// (zebra also sends its connected routes, as `kernel`: those of the
/// ports' subnets stay beneath the appliance's own).
fn wait_bgp_routes(l: &Lab, want: usize) {
    wait_for(
        &format!("fwd to hold {want} BGP routes from zebra"),
        DEADLINE,
        || (routes_of(&l.sock, "bgp").len() == want).then_some(()),
        || format!("fpm: {}\n{}", fpm(&l.sock), l.app.logs()),
    );
}

fn established_count(app: &Frr) -> u64 {
    app.bgp_peer("ipv4", "10.77.1.2")["connectionsEstablished"]
        .as_u64()
        .unwrap_or_else(|| panic!("{}", app.bgp_peer("ipv4", "10.77.1.2")))
}

#[test]
fn frr_peers_through_the_appliance_and_feeds_its_fib() {
    let Some(l) = lab("bgp", 60_000) else {
        return;
    };
    l.app.wait_established("ipv4", "10.77.1.2");
    l.app.wait_prefixes("ipv4", "10.77.1.2", "ebgp", N as u64);
    wait_bgp_routes(&l, N);
    let want: BTreeSet<String> = v4_prefixes(N).into_iter().collect();
    assert_eq!(routes_of(&l.sock, "bgp"), want, "exactly the announced set");
    let f = fpm(&l.sock);
    assert_eq!(f["connects"], 1, "{f}");
    assert!(
        f["batches"].as_u64().unwrap() < N as u64 / 10,
        "batched: {f}"
    );
    // The session and the kernel's ARP crossed the host path.
    assert!(stat(&l.sock, "event", "punted") > 0);
    assert!(stat(&l.sock, "event", "host_from_kernel") > 0);

    // A host pings an address inside an announced prefix: the data path
    // forwards it out of wan (fwd's own counters, not the kernel's).
    let tx0 = port_tx(&l.sock, "wan");
    assert_eq!(pings(&l.host, 5, "10.129.5.1"), 5);
    assert!(port_tx(&l.sock, "wan") >= tx0 + 5);

    // A SYN flood from the host to the appliance's BGP port: policed on
    // lan; the session (hold time 3 s) stays up and forwarding goes on.
    let est = established_count(&l.app);
    let policed0 = stat(&l.sock, "drop", "punt_policed");
    let flood = l
        .host
        .exec(&["python3", "-c", SYN_FLOOD, "10.78.1.1", "179", "200000"])
        .expect("syn flood");
    eprintln!("e2e_frr: {}", flood.trim());
    assert!(stat(&l.sock, "drop", "punt_policed") > policed0 + 1000);
    assert_eq!(pings(&l.host, 3, "10.129.5.1"), 3);
    l.app.wait_established("ipv4", "10.77.1.2");
    assert_eq!(established_count(&l.app), est, "the session never dropped");
    assert_eq!(routes_of(&l.sock, "bgp").len(), N);

    // FPM has no authentication: a connection by another user than root
    // or frr is refused before a byte is read.
    let nobody = l.app_ns.exec(&[
        "runuser",
        "-u",
        "nobody",
        "--",
        "python3",
        "-c",
        &format!(
            "import socket,time; s=socket.create_connection(('127.0.0.1',{FPM_PORT})); \
             time.sleep(0.5); print('connected')"
        ),
    ]);
    assert!(nobody.is_ok(), "{nobody:?}");
    wait_for(
        "the refusal of nobody's FPM connection",
        DEADLINE,
        || {
            let f = fpm(&l.sock);
            f["last_error"]
                .as_str()
                .is_some_and(|e| e.contains("refused"))
                .then_some(f)
        },
        || fpm(&l.sock).to_string(),
    );
    assert_eq!(fpm(&l.sock)["connects"], 1, "not counted as zebra");

    // Withdrawals reach fwd.
    withdraw_all(&l.peer, PEER_AS, "ipv4", "10.77.1.1");
    wait_bgp_routes(&l, 0);
    assert!(routes_of(&l.sock, "bgp").is_empty());
    assert_eq!(pings(&l.host, 1, "10.129.5.1"), 0, "no route any more");
    announce_all(&l.peer, PEER_AS, "ipv4", "10.77.1.1");
    wait_bgp_routes(&l, N);
    let _ = &l.peer_ns;
}

/// Sends `count` TCP SYNs to `dst`:`port` from random source ports, as
/// fast as Python can, over a raw socket; prints how many and how long.
const SYN_FLOOD: &str = r#"
import socket, struct, sys, time, random
dst, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP)
src = "10.78.1.2"
def csum(b):
    if len(b) % 2: b += b"\0"
    t = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    t = (t >> 16) + (t & 0xffff); t += t >> 16
    return ~t & 0xffff
pseudo = socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack("!BBH", 0, 6, 20)
t0 = time.time()
for i in range(count):
    sport = 1024 + (i % 60000)
    hdr = struct.pack("!HHIIBBHHH", sport, port, random.getrandbits(32), 0, 5 << 4, 0x02, 65535, 0, 0)
    c = csum(pseudo + hdr)
    hdr = hdr[:16] + struct.pack("!H", c) + hdr[18:]
    s.sendto(hdr, (dst, 0))
print("sent %d SYNs in %.1f s" % (count, time.time() - t0))
"#;

#[test]
fn a_zebra_restart_keeps_traffic_flowing_and_ends_with_the_right_set() {
    // Routes zebra does not replay go 60 s after it reconnects: longer
    // than FRR 8.4 needs to bring BGP's routes back (zebra's FPM client
    // reconnects ~3 s after its start, bgpd ~10 s, then `clear bgp *`),
    // with room for a loaded machine: at 25 s the sweep came first once
    // (all 10,000 swept, then replayed) with two busy loops beside the test.
    let Some(mut l) = lab("rst", 60_000) else {
        return;
    };
    l.app.wait_established("ipv4", "10.77.1.2");
    wait_bgp_routes(&l, N);

    // zebra goes; fwd keeps forwarding on what it has.
    let (zcfg, _) = l.app.stop("zebra");
    assert_eq!(routes_of(&l.sock, "bgp").len(), N);
    assert_eq!(pings(&l.host, 2, "10.129.5.1"), 2);
    // Meanwhile the peer withdraws 100 prefixes: zebra will not replay
    // them, and only the sweep can tell fwd.
    let gone: Vec<String> = v4_prefixes(100);
    let mut lines = vec!["route-map PART permit 20".to_string()];
    for (i, p) in gone.iter().enumerate() {
        lines.push(format!("ip prefix-list GONE seq {} permit {p}", i + 1));
    }
    lines.push("route-map PART deny 10".into());
    lines.push("match ip address prefix-list GONE".into());
    lines.push("exit".into());
    lines.push(format!("router bgp {PEER_AS}"));
    lines.push("address-family ipv4 unicast".into());
    lines.push("neighbor 10.77.1.1 route-map PART out".into());
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    l.peer.config(&refs);

    assert!(zcfg.contains("fpm address"));
    l.app.start_zebra(FPM_PORT, "");
    wait_for(
        "zebra to reconnect to fwd",
        DEADLINE,
        || (fpm(&l.sock)["connects"] == 2).then_some(()),
        || format!("{}\n{}", fpm(&l.sock), l.app.logs()),
    );
    // Stale, still installed: traffic flows through the restart.
    let f = fpm(&l.sock);
    assert_eq!(routes_of(&l.sock, "bgp").len(), N, "{f}");
    assert!(f["sweep_in_ms"].as_u64().is_some(), "{f}");
    assert_eq!(pings(&l.host, 2, "10.129.5.1"), 2);
    l.app.resync_bgp();
    l.app
        .wait_prefixes("ipv4", "10.77.1.2", "ebgp", (N - gone.len()) as u64);
    wait_for(
        "the sweep after the replay",
        Duration::from_secs(180),
        || {
            let f = fpm(&l.sock);
            f["sweep_in_ms"].is_null().then_some(f)
        },
        || fpm(&l.sock).to_string(),
    );
    wait_bgp_routes(&l, N - gone.len());
    let f = fpm(&l.sock);
    assert_eq!(f["swept"], gone.len() as u64, "{f}");
    let want: BTreeSet<String> = v4_prefixes(N).into_iter().skip(gone.len()).collect();
    assert_eq!(routes_of(&l.sock, "bgp"), want, "exactly the peer's set");
    assert_eq!(pings(&l.host, 2, "10.129.5.1"), 2);
}
