//! Self-tests of the FRR test kit (`common::frr`), without `fwd` in the
//! path: two namespaces joined by a veth, a `bgpd --no_zebra` peer
//! announcing prefixes, and on the other side zebra (`-M dplane_fpm_nl`,
//! pointed at deploy/frr/fpm-capture.py) with bgpd and staticd. They prove
//! the helpers the FRR end-to-end tests of the appliance are built on, and
//! check the example setup in deploy/frr/.
//!
//! Skipped, with a message, when not root or when FRR is not installed
//! (deploy/setup.sh installs it, so CI runs them). Addresses are private to
//! the namespaces (10.77.0.0/16, fd77::/16, and the documentation ranges of
//! deploy/frr/frr.conf); nothing is configured in the host's namespace.

mod common;

use std::time::Instant;

use common::frr::*;
use common::netns::Netns;
use common::{wait_for, TempDir};

const DUT_AS: u32 = 65001;
const PEER_AS: u32 = 65002;

/// `dut` (10.77.1.1/24, fd77:1::1/64 on eth1) and `peer` (.2 on eth0).
fn pair(tag: &str) -> (Netns, Netns) {
    let pid = std::process::id();
    let dut = netns(format!("frrkit-{tag}-d-{pid}"));
    let peer = netns(format!("frrkit-{tag}-p-{pid}"));
    veth(
        &dut,
        "eth1",
        &["10.77.1.1/24", "fd77:1::1/64"],
        &peer,
        "eth0",
        &["10.77.1.2/24", "fd77:1::2/64"],
    );
    (dut, peer)
}

/// Waits until zebra's FPM output is all in the capture (connection `n`)
/// and at least `min` bytes long; returns the byte count.
fn wait_fpm_flushed(dut: &Frr, cap: &FpmCapture, n: usize, min: u64) -> u64 {
    wait_for(
        &format!("zebra's FPM stream (connection {n}, >= {min} bytes) received"),
        DEADLINE,
        || {
            let c = dut.fpm_counters();
            let sent = c["bytes-sent"].as_u64()?;
            let got = cap.bytes(n);
            (c["obuf-bytes"] == 0 && got >= min && (n > 1 || sent == got)).then_some(got)
        },
        || format!("{}\n{}", dut.fpm_counters(), cap.log_text()),
    )
}

#[test]
fn bgp_10k_prefixes_announce_withdraw_reannounce() {
    if skip("bgp_10k_prefixes_announce_withdraw_reannounce") {
        return;
    }
    let (dut_ns, peer_ns) = pair("bgp");
    let tmp = TempDir::new("frrkit-bgp");
    let cap = FpmCapture::start(&dut_ns, 2620, &tmp.path("fpm.bin"));
    let mut dut = Frr::new(&dut_ns, "bgp-dut");
    dut.start_zebra(2620, "");
    dut.start(
        "bgpd",
        &bgpd_config(DUT_AS, "10.77.1.1", &[("10.77.1.2", "ipv4", PEER_AS)], 1),
        &[],
    );
    let connected = wait_fpm_flushed(&dut, &cap, 1, 1);

    let mut peer = Frr::new(&peer_ns, "bgp-peer");
    let v4 = v4_prefixes(10_000);
    let t0 = Instant::now();
    peer.start(
        "bgpd",
        &peer_bgpd_config(PEER_AS, "10.77.1.2", DUT_AS, "10.77.1.1", None, &v4, &[]),
        &["--no_zebra"],
    );
    dut.wait_established("ipv4", "10.77.1.2");
    let t_est = t0.elapsed();
    dut.wait_prefixes("ipv4", "10.77.1.2", "ebgp", 10_000);
    let t_inst = t0.elapsed();
    // ~64 bytes per IPv4 route (FPM header, nlmsghdr, rtmsg, 4 attributes).
    let bytes = wait_fpm_flushed(&dut, &cap, 1, connected + 10_000 * 60);
    let t_fpm = t0.elapsed();
    let kernel = dut_ns
        .exec(&["ip", "route", "show", "proto", "bgp"])
        .unwrap();
    assert_eq!(kernel.lines().count(), 10_000, "zebra's kernel FIB");

    let t1 = Instant::now();
    withdraw_all(&peer, PEER_AS, "ipv4", "10.77.1.1");
    dut.wait_prefixes("ipv4", "10.77.1.2", "ebgp", 0);
    let t_wd = t1.elapsed();
    // 10,000 RTM_DELROUTE (~44 bytes each) follow.
    wait_fpm_flushed(&dut, &cap, 1, bytes + 10_000 * 40);

    let t2 = Instant::now();
    announce_all(&peer, PEER_AS, "ipv4", "10.77.1.1");
    dut.wait_prefixes("ipv4", "10.77.1.2", "ebgp", 10_000);
    let t_re = t2.elapsed();
    assert_eq!(
        cap.connections(),
        1,
        "one FPM connection: {}",
        cap.log_text()
    );
    eprintln!(
        "frr_kit: 10,000 prefixes: Established {t_est:?}, received+installed {t_inst:?}, \
         FPM stream flushed {t_fpm:?} ({bytes} bytes); withdraw all {t_wd:?}; re-announce {t_re:?}"
    );
    // The peer's daemons are stopped first, then the DUT's (each Frr stops
    // only its own); nothing is left running.
    let pids: Vec<u32> = ["zebra", "bgpd"]
        .iter()
        .filter_map(|d| dut.pid(d))
        .collect();
    drop(peer);
    drop(dut);
    for p in pids {
        assert!(
            !std::path::Path::new(&format!("/proc/{p}")).exists(),
            "daemon {p} still running after drop"
        );
    }
}

#[test]
fn ipv6_session_and_static_routes() {
    if skip("ipv6_session_and_static_routes") {
        return;
    }
    let (dut_ns, peer_ns) = pair("v6");
    let mut dut = Frr::new(&dut_ns, "v6-dut");
    // FPM pointed at nothing: zebra retries every 3 s, harmless.
    dut.start_zebra(2620, "");
    dut.start(
        "bgpd",
        &bgpd_config(DUT_AS, "10.77.1.1", &[("fd77:1::2", "ipv6", PEER_AS)], 1),
        &[],
    );
    dut.start("staticd", "hostname staticd\n", &[]);
    dut.config(&[
        "ip route 192.0.2.0/24 blackhole",
        "ipv6 route 2001:db8:dead::/48 reject",
        "ip route 203.0.113.0/24 10.77.1.2",
    ]);
    let mut peer = Frr::new(&peer_ns, "v6-peer");
    peer.start(
        "bgpd",
        &peer_bgpd_config(
            PEER_AS,
            "10.77.1.2",
            DUT_AS,
            "10.77.1.1",
            Some("fd77:1::1"),
            &[],
            &v6_prefixes(200),
        ),
        &["--no_zebra"],
    );
    dut.wait_established("ipv6", "fd77:1::2");
    dut.wait_prefixes("ipv6", "fd77:1::2", "ebgp", 200);
    wait_for(
        "3 static routes installed",
        DEADLINE,
        || {
            (dut.installed("ip", "static") == 2 && dut.installed("ipv6", "static") == 1)
                .then_some(())
        },
        || dut.vtysh_on("zebra", "show ip route"),
    );
    let r = dut.json("zebra", "show ipv6 route fd00:100:7::/48 json");
    let nh = &r["fd00:100:7::/48"][0]["nexthops"][0];
    assert_eq!(nh["ip"], "fd77:1::2", "{r}");
    withdraw_all(&peer, PEER_AS, "ipv6", "fd77:1::1");
    dut.wait_prefixes("ipv6", "fd77:1::2", "ebgp", 0);
}

#[test]
fn zebra_restart_reconnects_fpm_and_bgp_resyncs() {
    if skip("zebra_restart_reconnects_fpm_and_bgp_resyncs") {
        return;
    }
    let (dut_ns, peer_ns) = pair("rst");
    let tmp = TempDir::new("frrkit-rst");
    let cap = FpmCapture::start(&dut_ns, 2620, &tmp.path("fpm.bin"));
    let mut dut = Frr::new(&dut_ns, "rst-dut");
    dut.start_zebra(2620, "");
    dut.start(
        "bgpd",
        &bgpd_config(DUT_AS, "10.77.1.1", &[("10.77.1.2", "ipv4", PEER_AS)], 1),
        &[],
    );
    dut.start(
        "staticd",
        "hostname staticd\nip route 192.0.2.0/24 blackhole\n",
        &[],
    );
    let mut peer = Frr::new(&peer_ns, "rst-peer");
    peer.start(
        "bgpd",
        &peer_bgpd_config(
            PEER_AS,
            "10.77.1.2",
            DUT_AS,
            "10.77.1.1",
            None,
            &v4_prefixes(1000),
            &[],
        ),
        &["--no_zebra"],
    );
    dut.wait_prefixes("ipv4", "10.77.1.2", "ebgp", 1000);
    let first = wait_fpm_flushed(&dut, &cap, 1, 1000 * 60);

    let t0 = Instant::now();
    dut.restart_zebra();
    // Zebra stopped cleanly: nothing more on connection 1 (no deletes).
    assert_eq!(cap.bytes(1), first, "zebra sent something while stopping");
    wait_for(
        "zebra's FPM client to reconnect",
        DEADLINE,
        || (cap.connections() == 2).then_some(()),
        || cap.log_text(),
    );
    let t_conn = t0.elapsed();
    wait_for(
        "staticd's route back in the restarted zebra",
        DEADLINE,
        || (dut.installed("ip", "static") == 1).then_some(()),
        || dut.logs(),
    );
    let t_static = t0.elapsed();
    // BGP is still Established with the peer; bgpd's routes return to
    // zebra only after a session reset (FRR 8.4).
    dut.wait_established("ipv4", "10.77.1.2");
    dut.resync_bgp();
    dut.wait_prefixes("ipv4", "10.77.1.2", "ebgp", 1000);
    let t_bgp = t0.elapsed();
    let second = wait_fpm_flushed(&dut, &cap, 2, 1000 * 60);
    eprintln!(
        "frr_kit: zebra restart: FPM reconnect {t_conn:?}, static back {t_static:?}, \
         BGP back (after clear bgp *) {t_bgp:?}; FPM bytes {first} then {second}"
    );
}

/// deploy/frr/daemons' `<daemon>_options`, split into arguments.
fn daemon_options(daemons: &str, daemon: &str) -> Vec<String> {
    let key = format!("{daemon}_options=");
    let line = daemons
        .lines()
        .find(|l| l.starts_with(&key))
        .unwrap_or_else(|| panic!("no {key} in deploy/frr/daemons"));
    line[key.len()..]
        .trim_matches('"')
        .split_whitespace()
        .map(String::from)
        .collect()
}

#[test]
fn deploy_example_config_runs() {
    if skip("deploy_example_config_runs") {
        return;
    }
    let deploy = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/frr");
    let frr_conf = std::fs::read_to_string(deploy.join("frr.conf")).expect("deploy/frr/frr.conf");
    let daemons = std::fs::read_to_string(deploy.join("daemons")).expect("deploy/frr/daemons");
    let tmp = TempDir::new("frrkit-deploy");
    std::fs::write(tmp.path("vtysh.conf"), "").unwrap();
    let o = std::process::Command::new("vtysh")
        .arg("--config_dir")
        .arg(&tmp.0)
        .arg("--dryrun")
        .arg("-f")
        .arg(deploy.join("frr.conf"))
        .output()
        .expect("vtysh --dryrun");
    assert!(o.status.success(), "vtysh --dryrun -f frr.conf: {o:?}");
    for d in ["bgpd=yes", "vtysh_enable=yes"] {
        assert!(daemons.lines().any(|l| l == d), "daemons: {d}");
    }

    // The appliance's namespace: representor `wan` as in
    // deploy/examples/two-nics.yaml, the upstream router on its other end.
    let pid = std::process::id();
    let fwd_ns = netns(format!("frrkit-dep-f-{pid}"));
    let up_ns = netns(format!("frrkit-dep-u-{pid}"));
    veth(
        &fwd_ns,
        "wan",
        &["198.51.100.1/24", "2001:db8::1/64"],
        &up_ns,
        "eth0",
        &["198.51.100.254/24", "2001:db8::fe/64"],
    );
    let cap = FpmCapture::start(&fwd_ns, 2620, &tmp.path("fpm.bin"));
    let mut frr = Frr::new(&fwd_ns, "deploy");
    for d in ["zebra", "bgpd", "staticd"] {
        let opts = daemon_options(&daemons, d);
        let opts: Vec<&str> = opts.iter().map(String::as_str).collect();
        frr.start(d, "", &opts);
    }
    frr.boot(&frr_conf);
    let mut up = Frr::new(&up_ns, "deploy-up");
    up.start(
        "bgpd",
        &peer_bgpd_config(
            64500,
            "198.51.100.254",
            64512,
            "198.51.100.1",
            Some("2001:db8::1"),
            &v4_prefixes(50),
            &v6_prefixes(10),
        ),
        &["--no_zebra"],
    );
    frr.wait_established("ipv4", "198.51.100.254");
    frr.wait_established("ipv6", "2001:db8::fe");
    frr.wait_prefixes("ipv4", "198.51.100.254", "ebgp", 50);
    frr.wait_prefixes("ipv6", "2001:db8::fe", "ebgp", 10);
    // zebra's FPM client reached 127.0.0.1:2620 and sent the routes.
    wait_fpm_flushed(&frr, &cap, 1, 60 * 60);
    // Upstream gets the LAN aggregate only.
    wait_for(
        "upstream receives 10.0.0.0/8 only",
        DEADLINE,
        || (up.received("ipv4", "198.51.100.1") == 1).then_some(()),
        || up.vtysh_on("bgpd", "show bgp ipv4 unicast"),
    );
    assert_eq!(up.received("ipv6", "2001:db8::1"), 0);
    let rc = frr.vtysh("show running-config");
    assert!(rc.contains("fpm address 127.0.0.1\n"), "{rc}");
    assert!(rc.contains("no fpm use-next-hop-groups"), "{rc}");
}

#[test]
fn fwd_runs_inside_a_namespace() {
    if skip("fwd_runs_inside_a_namespace") {
        return;
    }
    let pid = std::process::id();
    let ns = netns(format!("frrkit-fwd-{pid}"));
    let dir = TempDir::new("frrkit-fwd");
    let sock = dir.path("fwd.sock");
    let cfg = format!(
        "{eal}ports:
  - name: wan
    device: net_tap_fk{pid},iface=wan,mac=02:00:00:79:09:01
    addresses: [198.51.100.1/24]
workers:
  - lcore: 1
    rx: [{{port: wan}}]
control:
  socket: {sock}
",
        eal = common::eal_yaml("frrkit-fwd"),
        sock = sock.display(),
    );
    let mut child = spawn_fwd_in(&ns, &dir, &cfg, &[]);
    common::wait_ready(&mut child);
    let daemon = common::Daemon(child);
    // The tap port's kernel interface is in the namespace, not the host's.
    let link = ns.exec(&["ip", "link", "show", "wan"]).unwrap();
    assert!(link.contains("02:00:00:79:09:01"), "{link}");
    assert!(sock.exists(), "control socket {}", sock.display());
    drop(daemon);
    // Stopped: the tap (representor stand-in) is gone with it.
    assert!(ns.exec(&["ip", "link", "show", "wan"]).is_err());
}

/// The committed FPM captures still match their facts (sizes, frames,
/// message counts), by a framing walk of their own: no FRR needed.
#[test]
fn fpm_fixtures_match_their_facts() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fpm");
    let facts: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("facts.json")).unwrap()).unwrap();
    let files = facts.as_object().expect("facts by file");
    assert!(files.len() >= 4, "{files:?}");
    for (name, f) in files {
        let data = std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(data.len() < 300 * 1024, "{name} too big");
        assert_eq!(data.len() as u64, f["bytes"].as_u64().unwrap(), "{name}");
        let (mut frames, mut msgs, mut new, mut del) = (0u64, 0u64, 0u64, 0u64);
        let mut off = 0;
        while off < data.len() {
            assert_eq!(&data[off..off + 2], &[1, 1], "{name}: FPM header at {off}");
            let len = u16::from_be_bytes([data[off + 2], data[off + 3]]) as usize;
            let mut p = off + 4;
            while p < off + len {
                let nlen = u32::from_le_bytes(data[p..p + 4].try_into().unwrap()) as usize;
                match u16::from_le_bytes([data[p + 4], data[p + 5]]) {
                    24 => new += 1,
                    25 => del += 1,
                    t => panic!("{name}: netlink type {t} at {p}"),
                }
                msgs += 1;
                p += (nlen + 3) & !3;
            }
            assert_eq!(p, off + len, "{name}: frame at {off}");
            frames += 1;
            off += len;
        }
        assert_eq!(frames, f["fpm_frames"].as_u64().unwrap(), "{name}");
        assert_eq!(msgs, f["netlink_messages"].as_u64().unwrap(), "{name}");
        let m = &f["messages"];
        assert_eq!(new, m["RTM_NEWROUTE"].as_u64().unwrap_or(0), "{name}");
        assert_eq!(del, m["RTM_DELROUTE"].as_u64().unwrap_or(0), "{name}");
    }
}
