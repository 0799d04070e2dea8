//! The classifier in the data path, end to end on `net_pcap` ports: rules
//! loaded at start (`control.load`) drop, redirect, mirror, police and count
//! exactly the packets they match; counters read back through fwdctl.

mod common;

use std::net::Ipv4Addr;
use std::path::Path;
use std::time::{Duration, Instant};

use common::*;
use fwd::pkt::build::{self, FrameSpec};
use fwd::pkt::pcap;

const NEIGH1: [u8; 6] = [0x02, 0, 0, 0, 1, 2];

fn json(sock: &Path, args: &[&str]) -> serde_json::Value {
    untag(fwdctl_json(sock, args))
}

/// `{"stats": {...}}` -> `{...}`; arrays element-wise (stream items).
fn untag(v: serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::Object(m) if m.len() == 1 => m.into_iter().next().unwrap().1,
        serde_json::Value::Array(a) => a.into_iter().map(untag).collect(),
        other => other,
    }
}

fn spec(ttl: u8, src: [u8; 6], dst: [u8; 6]) -> FrameSpec {
    FrameSpec {
        src_mac: src,
        dst_mac: dst,
        ttl,
        ..Default::default()
    }
}

#[test]
fn drop_redirect_mirror_police_count() {
    assert!(is_root(), "the end-to-end tests need root (DPDK)");
    let dir = TempDir::new("acl");
    let p = |n: &str| dir.path(n).display().to_string();
    let sock = dir.path("fwd.sock");
    std::fs::write(
        dir.path("state.batch"),
        // A saved state is framed (control::saved): header and trailer
        // carry the change count.
        "# fwd running configuration, generation 0, 10 changes
address add 10.0.0.1/24 dev p0
address add 10.0.1.1/24 dev p1
address add 10.0.2.1/24 dev p2
neigh add 10.0.1.2 lladdr 02:00:00:00:01:02 dev p1
route add 10.1.0.0/16 via 10.0.1.2 dev p1
rule add id 1 prio 10 dst 10.1.0.0/16 proto udp dport 53 action drop
rule add id 2 prio 20 proto udp dport 80 action redirect p2
rule add id 3 prio 30 proto udp dport 443 action mirror p2 permit
rule add id 4 prio 40 proto udp dport 5000 action police rate 1pps burst 2
rule add id 5 prio 50 src 10.0.0.0/24 dst 10.1.0.0/16 action count
# end, 10 changes
",
    )
    .unwrap();
    let cfg = format!(
        "{eal}ports:
  - {{name: p0, device: 'net_pcap_in_acl,rx_pcap={inp},tx_pcap={o0}'}}
  - {{name: p1, device: 'net_pcap_a_acl,rx_pcap={empty},tx_pcap={o1}'}}
  - {{name: p2, device: 'net_pcap_b_acl,rx_pcap={empty},tx_pcap={o2}'}}
workers:
  - {{lcore: 1, rx: [{{port: p0}}, {{port: p1}}, {{port: p2}}]}}
control:
  socket: {sock}
  load: {state}
",
        eal = eal_yaml("acl"),
        inp = p("in.pcap"),
        empty = p("empty.pcap"),
        o0 = p("out0.pcap"),
        o1 = p("out1.pcap"),
        o2 = p("out2.pcap"),
        sock = sock.display(),
        state = p("state.batch"),
    );
    let sender = [0x02, 0, 0, 0, 0, 0x99];
    let ingress = [0x02, 0, 0, 0, 0, 0x01];
    let src = Ipv4Addr::new(10, 0, 0, 10);
    let dst = |d| Ipv4Addr::new(10, 1, 0, d);
    let pl = b"acl e2e";
    let mut input = vec![
        build::udp4(&spec(64, sender, ingress), src, dst(5), 1000, 53, pl), // rule 1: drop
        build::udp4(&spec(64, sender, ingress), src, dst(6), 1000, 80, pl), // rule 2: redirect
        build::udp4(&spec(64, sender, ingress), src, dst(7), 1000, 443, pl), // rule 3: mirror
    ];
    for _ in 0..10 {
        // rule 4: 2 conform (burst), 8 policed (1 token per second)
        input.push(build::udp4(
            &spec(64, sender, ingress),
            src,
            dst(8),
            1000,
            5000,
            pl,
        ));
    }
    input.push(build::udp4(
        &spec(64, sender, ingress),
        src,
        dst(9),
        1000,
        9,
        pl,
    )); // rule 5: count
    input.push(build::udp4(
        &spec(64, sender, ingress),
        src,
        dst(9),
        1000,
        9,
        pl,
    )); // rule 5 again
    pcap::write(dir.path("in.pcap"), &input).unwrap();
    pcap::write(dir.path("empty.pcap"), &[]).unwrap();

    let mut daemon = Daemon(spawn_fwd(&dir, &cfg, &[]));
    wait_ready(&mut daemon.0);
    // The pcap is read at start; wait (bounded) until every frame was received.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let s = json(&sock, &["stats"]);
        if s["rx_packets"].as_u64() == Some(input.len() as u64) {
            break;
        }
        assert!(Instant::now() < deadline, "frames not all received: {s}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let counters = json(&sock, &["rule", "counters"]);
    let stats = json(&sock, &["stats"]);
    let port_show = json(&sock, &["port", "show"]);
    drop(daemon); // SIGTERM: TX buffers flushed, pcaps closed

    let hits = |id: u64| {
        counters
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"].as_u64() == Some(id))
            .map(|c| c["packets"].as_u64().unwrap())
            .unwrap_or_else(|| panic!("rule {id} in {counters}"))
    };
    assert_eq!(
        [hits(1), hits(2), hits(3), hits(4), hits(5)],
        [1, 1, 1, 10, 2],
        "{counters}"
    );
    let drop_of = |reason: &str| {
        stats["drops"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["reason"] == reason)
            .and_then(|d| d["packets"].as_u64())
            .unwrap()
    };
    assert_eq!(drop_of("acl_drop"), 1, "{stats}");
    assert_eq!(drop_of("policed"), 8, "{stats}");

    let mac = |i: usize| fwd::config::parse_mac(port_show[i]["mac"].as_str().unwrap()).unwrap();
    let (mac1, _mac2) = (mac(1), mac(2));
    // Ethernet padding past the IP packet is trimmed on input (RFC 1812
    // 5.2.2): what goes out ends with the IP packet (the NIC pads on the wire).
    let unpadded = |mut f: Vec<u8>| {
        let ip_len = usize::from(u16::from_be_bytes([f[16], f[17]]));
        f.truncate(14 + ip_len);
        f
    };
    let routed = |d: u8, dport: u16| {
        unpadded(build::udp4(
            &spec(63, mac1, NEIGH1),
            src,
            dst(d),
            1000,
            dport,
            pl,
        ))
    };
    let got1 = pcap::read(dir.path("out1.pcap")).unwrap();
    let got2 = pcap::read(dir.path("out2.pcap")).unwrap();
    // p1: the mirrored packet routed, 2 conforming policed packets, 2 counted.
    let want1 = vec![
        routed(7, 443),
        routed(8, 5000),
        routed(8, 5000),
        routed(9, 9),
        routed(9, 9),
    ];
    assert_eq!(got1, want1, "p1 output");
    // p2: the mirror copy (before rewrite) and the redirected packet, both unchanged.
    let mut want2 = vec![unpadded(input[2].clone()), unpadded(input[1].clone())];
    want2.sort();
    let mut got2s = got2.clone();
    got2s.sort();
    assert_eq!(got2s, want2, "p2 output: {got2:?}");
}
