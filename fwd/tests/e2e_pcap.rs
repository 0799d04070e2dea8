//! End to end on `net_pcap` ports: a crafted input pcap goes through the real
//! `fwd` binary; the output pcaps must be exactly the expected frames (right
//! port, MACs rewritten, TTL / hop limit decremented, checksums valid) and
//! the drop counters must match what the input provoked.

mod common;

use std::net::{Ipv4Addr, Ipv6Addr};
use std::process::Output;

use common::*;
use fwd::pkt::build::{self, FrameSpec, VlanTag};
use fwd::pkt::pcap;

const NEIGH1: [u8; 6] = [0x02, 0, 0, 0, 1, 2];
const NEIGH2: [u8; 6] = [0x02, 0, 0, 0, 2, 2];
const NEIGH2V6: [u8; 6] = [0x02, 0, 0, 0, 2, 6];
const SENDER: [u8; 6] = [0x02, 0, 0, 0, 0, 0x99];

fn config(tag: &str, dir: &TempDir) -> String {
    let p = |n: &str| dir.path(n).display().to_string();
    format!(
        "{eal}ports:
  - name: p0
    device: net_pcap_in{tag},rx_pcap={inp},tx_pcap={o0}
    addresses: [10.0.0.1/24]
  - name: p1
    device: net_pcap_a{tag},rx_pcap={empty},tx_pcap={o1}
    addresses: [10.0.1.1/24]
  - name: p2
    device: net_pcap_b{tag},rx_pcap={empty},tx_pcap={o2}
    addresses: [10.0.2.1/24, 'fd00:2::1/64']
workers:
  - lcore: 1
    rx: [{{port: p0}}, {{port: p1}}, {{port: p2}}]
control:
  socket: {sock}
neighbours:
  - {{ip: 10.0.1.2, mac: '02:00:00:00:01:02', port: p1}}
  - {{ip: 10.0.2.2, mac: '02:00:00:00:02:02', port: p2}}
  - {{ip: 'fd00:2::2', mac: '02:00:00:00:02:06', port: p2}}
routes:
  - {{prefix: 10.1.0.0/16, via: 10.0.1.2, dev: p1}}
  - {{prefix: 10.2.0.0/16, via: 10.0.2.2, dev: p2}}
  - {{prefix: 10.2.7.0/24, via: 10.0.1.2, dev: p1}}
  - {{prefix: 10.3.0.0/16, via: 10.0.2.99, dev: p2}}
  - {{prefix: 192.0.2.0/24, kind: blackhole}}
  - {{prefix: 'fd02::/64', via: 'fd00:2::2', dev: p2}}
",
        eal = eal_yaml(tag),
        inp = p("in.pcap"),
        empty = p("empty.pcap"),
        o0 = p("out0.pcap"),
        o1 = p("out1.pcap"),
        o2 = p("out2.pcap"),
        sock = p("fwd.sock"),
    )
}

fn spec(ttl: u8) -> FrameSpec {
    FrameSpec {
        src_mac: SENDER,
        dst_mac: [0x02, 0, 0, 0, 0, 0x01],
        ttl,
        ..Default::default()
    }
}

fn out_spec(src: [u8; 6], dst: [u8; 6], ttl: u8) -> FrameSpec {
    FrameSpec {
        src_mac: src,
        dst_mac: dst,
        ttl,
        ..Default::default()
    }
}

fn v4(s: &str) -> Ipv4Addr {
    s.parse().unwrap()
}
fn v6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

/// Writes `input` as p0's pcap (the other ports receive nothing), runs fwd
/// (`config(tag, ..)`) until it has received all of it, and returns its
/// output and final stats.
fn forward(dir: &TempDir, tag: &str, input: &[Vec<u8>]) -> (Output, serde_json::Value) {
    pcap::write(dir.path("in.pcap"), input).unwrap();
    pcap::write(dir.path("empty.pcap"), &[]).unwrap();
    let stats_path = dir.path("stats.json");
    let out = run_fwd(
        dir,
        &config(tag, dir),
        &[
            "--exit-after-rx",
            &input.len().to_string(),
            "--stats-json",
            stats_path.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let stats = read_stats(&stats_path);
    (out, stats)
}

#[test]
#[allow(clippy::vec_init_then_push)] // one commented push per case reads best
fn pcap_in_exact_pcaps_out() {
    assert!(
        is_root(),
        "the end-to-end tests need root (DPDK); run deploy/test.sh as root"
    );
    let dir = TempDir::new("pcap");
    let src = v4("10.0.0.10");
    let payload = b"appliance e2e payload";

    // (input frame, fate) in input order.
    let mut input: Vec<Vec<u8>> = Vec::new();
    // 1. UDP to 10.1.0.5: via 10.0.1.2 out of p1.
    input.push(build::udp4(
        &spec(64),
        src,
        v4("10.1.0.5"),
        1000,
        53,
        payload,
    ));
    // 2. TCP to 10.2.3.4: via 10.0.2.2 out of p2.
    input.push(build::tcp4(
        &spec(64),
        src,
        v4("10.2.3.4"),
        40000,
        80,
        0x02,
        payload,
    ));
    // 3. more specific 10.2.7.0/24 wins over 10.2.0.0/16: out of p1.
    input.push(build::udp4(&spec(17), src, v4("10.2.7.7"), 5, 6, payload));
    // 4. IPv6 to fd02::5: out of p2, hop limit decremented.
    input.push(build::udp6(
        &spec(64),
        v6("fd00::10"),
        v6("fd02::5"),
        7,
        8,
        payload,
    ));
    // 5. TTL 1: dropped, ttl_expired.
    input.push(build::udp4(&spec(1), src, v4("10.1.0.5"), 1, 2, payload));
    // 6. no route.
    input.push(build::udp4(&spec(64), src, v4("172.16.0.1"), 1, 2, payload));
    // 7. blackhole.
    input.push(build::udp4(&spec(64), src, v4("192.0.2.9"), 1, 2, payload));
    // 8. truncated IPv4 header: malformed.
    let mut trunc = build::udp4(&spec(64), src, v4("10.1.0.5"), 1, 2, payload);
    trunc.truncate(14 + 12);
    input.push(trunc);
    // 9. ARP for the appliance's address on p0: answered out of p0.
    input.push(build::arp_request(&spec(64), src, v4("10.0.0.1")));
    // 9b. ARP for someone else: consumed (not ours to answer), not a drop.
    input.push(build::arp_request(&spec(64), src, v4("10.0.0.99")));
    // 10. gateway without a neighbour entry: held for the control side,
    // which asks for it by ARP out of p2 (how many requests leave before
    // the daemon exits depends on timing: they are checked apart).
    input.push(build::udp4(&spec(64), src, v4("10.3.0.1"), 1, 2, payload));
    // 11. VLAN-tagged UDP to 10.1.2.3: forwarded with its tag.
    let mut vspec = spec(64);
    vspec.vlans = vec![VlanTag::dot1q(100)];
    input.push(build::udp4(&vspec, src, v4("10.1.2.3"), 9, 9, payload));
    // 12. IPv4 with options: forwarded, checksum still valid.
    let mut ospec = spec(30);
    ospec.ipv4_options = vec![1, 1, 1, 1, 7, 7, 4, 0];
    input.push(build::udp4(&ospec, src, v4("10.1.9.9"), 3, 4, payload));
    // 13. ping of the appliance's own address: answered out of p0.
    input.push(build::icmp4_echo(
        &spec(64),
        src,
        v4("10.0.0.1"),
        1,
        1,
        payload,
    ));
    // 13b. other traffic to the appliance: local (no host stack on the data path).
    input.push(build::udp4(&spec(64), src, v4("10.0.0.1"), 1, 2, payload));
    // 14. bad IHL: malformed.
    let mut bad = build::udp4(&spec(64), src, v4("10.1.0.5"), 1, 2, payload);
    bad[14] = 0x43;
    input.push(bad);
    // 15. IPv6 hop limit 1: ttl_expired.
    input.push(build::udp6(
        &spec(1),
        v6("fd00::10"),
        v6("fd02::5"),
        7,
        8,
        payload,
    ));
    // 16. Directly attached neighbour on p2 (connected 10.0.2.0/24 + neighbour).
    input.push(build::udp4(&spec(64), src, v4("10.0.2.2"), 11, 12, payload));

    let (out, stats) = forward(&dir, "p", &input);
    let mac1 = mac_of(&stats, 1);
    let mac2 = mac_of(&stats, 2);

    let mut vout = out_spec(mac1, NEIGH1, 63);
    vout.vlans = vec![VlanTag::dot1q(100)];
    let mut oout = out_spec(mac1, NEIGH1, 29);
    oout.ipv4_options = vec![1, 1, 1, 1, 7, 7, 4, 0];
    let want1 = vec![
        build::udp4(
            &out_spec(mac1, NEIGH1, 63),
            src,
            v4("10.1.0.5"),
            1000,
            53,
            payload,
        ),
        build::udp4(
            &out_spec(mac1, NEIGH1, 16),
            src,
            v4("10.2.7.7"),
            5,
            6,
            payload,
        ),
        build::udp4(&vout, src, v4("10.1.2.3"), 9, 9, payload),
        build::udp4(&oout, src, v4("10.1.9.9"), 3, 4, payload),
    ];
    let want2 = vec![
        build::tcp4(
            &out_spec(mac2, NEIGH2, 63),
            src,
            v4("10.2.3.4"),
            40000,
            80,
            0x02,
            payload,
        ),
        build::udp6(
            &out_spec(mac2, NEIGH2V6, 63),
            v6("fd00::10"),
            v6("fd02::5"),
            7,
            8,
            payload,
        ),
        build::udp4(
            &out_spec(mac2, NEIGH2, 63),
            src,
            v4("10.0.2.2"),
            11,
            12,
            payload,
        ),
    ];
    // The answers out of p0, built independently of the code under test.
    let mac0 = mac_of(&stats, 0);
    let mut arp_reply = vec![];
    arp_reply.extend_from_slice(&SENDER);
    arp_reply.extend_from_slice(&mac0);
    arp_reply.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 2]);
    arp_reply.extend_from_slice(&mac0);
    arp_reply.extend_from_slice(&[10, 0, 0, 1]);
    arp_reply.extend_from_slice(&SENDER);
    arp_reply.extend_from_slice(&[10, 0, 0, 10]);
    arp_reply.resize(60, 0);
    let mut echo_reply = build::icmp4_echo(
        &out_spec(mac0, SENDER, 64),
        v4("10.0.0.1"),
        src,
        1,
        1,
        payload,
    );
    echo_reply[34] = 0; // type: echo reply
    echo_reply[36..38].copy_from_slice(&[0, 0]);
    let c = fwd::pkt::csum::checksum(&echo_reply[34..14 + 20 + 8 + payload.len()]);
    echo_reply[36..38].copy_from_slice(&c.to_be_bytes());

    let got0 = pcap::read(dir.path("out0.pcap")).unwrap();
    let got1 = pcap::read(dir.path("out1.pcap")).unwrap();
    let got2 = pcap::read(dir.path("out2.pcap")).unwrap();
    // p0: the answers, and the ICMP errors about cases 5 (time exceeded), 6
    // (net unreachable) and 15 (ICMPv6 time exceeded), each quoting the
    // packet it is about; from p0's addresses (10.0.0.1, link-local).
    let (errors, answers): (Vec<Vec<u8>>, Vec<Vec<u8>>) = got0.into_iter().partition(|f| {
        fwd::pkt::parse(f)
            .is_ok_and(|p| (p.proto == 1 && p.sport != 0) || (p.proto == 58 && p.sport < 128))
    });
    assert_eq!(
        answers,
        vec![arp_reply, echo_reply],
        "p0 answers the appliance's own ARP and ping"
    );
    let about = |f: &[u8]| {
        let p = fwd::pkt::parse(f).unwrap();
        let quoted = &f[usize::from(p.l4_off) + 8..];
        (
            p.proto,
            p.sport,
            p.dport,
            p.src_addr(),
            p.dst_addr(),
            quoted.to_vec(),
        )
    };
    let quotes = |i: usize| input[i][14..].to_vec();
    let mut want_errors = vec![
        (1, 11, 0, "10.0.0.1".parse().unwrap(), src.into(), quotes(4)),
        (1, 3, 0, "10.0.0.1".parse().unwrap(), src.into(), quotes(5)),
    ];
    let ll = std::net::IpAddr::V6(fwd::pkt::link_local(mac0));
    want_errors.push((58, 3, 0, ll, v6("fd00::10").into(), quotes(16)));
    let got_errors: Vec<_> = errors.iter().map(|f| about(f)).collect();
    assert_eq!(got_errors, want_errors, "ICMP errors out of p0");
    assert_eq!(got1, want1, "p1 output differs");
    // p2: the forwarded packets, and ARP requests for the unresolved gateway.
    let (arp, fwd2): (Vec<Vec<u8>>, Vec<Vec<u8>>) = got2
        .iter()
        .cloned()
        .partition(|f| f[12..14] == [0x08, 0x06]);
    assert_eq!(fwd2, want2, "p2 output differs");
    for a in &arp {
        assert_eq!(
            fwd::pkt::parse_arp(a),
            Some(fwd::pkt::NeighMsg::ArpRequest {
                sender_ip: v4("10.0.2.1"),
                sender_mac: mac2,
                target_ip: v4("10.0.2.99"),
            }),
            "who-has 10.0.2.99 tell 10.0.2.1"
        );
        assert_eq!(a[..6], [0xff; 6], "broadcast");
    }

    let d = &stats["drops"];
    let expect = [
        ("ttl_expired", 2),
        ("no_route", 1),
        ("blackhole", 1),
        ("malformed", 2),
        ("not_ip", 0),
        ("no_neighbour", 0),
        ("local", 1),
        ("tx_full", 0),
    ];
    for (k, v) in expect {
        assert_eq!(d[k].as_u64(), Some(v), "drop counter {k}: {}", text(&out));
    }
    let ev = &stats["events"];
    assert_eq!(ev["held"].as_u64(), Some(1), "{ev}");
    assert_eq!(ev["icmp_errors"].as_u64(), Some(3), "{ev}");
    assert_eq!(
        ev["neigh_messages"].as_u64(),
        Some(1),
        "ARP for someone else: {ev}"
    );
    assert_eq!(stats["rx_packets"].as_u64(), Some(input.len() as u64));
    let sent = 2 + 3 + want1.len() + want2.len() + arp.len();
    assert_eq!(stats["tx_packets"].as_u64(), Some(sent as u64));
    assert_eq!(stats["lcores"][0]["replies"].as_u64(), Some(2));
    assert_eq!(
        stats["ports"][0]["counters"]["rx_packets"].as_u64(),
        Some(input.len() as u64)
    );
    assert_eq!(
        stats["ports"][1]["counters"]["tx_packets"].as_u64(),
        Some(4)
    );
    assert_eq!(
        stats["ports"][2]["counters"]["tx_packets"].as_u64(),
        Some(3 + arp.len() as u64)
    );
}

/// Full bursts whose every packet goes out of one port leave whole (the
/// worker hands the received burst to the driver as it is); bursts with a
/// packet for another port go packet by packet. Either way every port gets
/// exactly its frames, in order, rewritten and trimmed of their Ethernet
/// padding, and the byte counters agree with what was written.
#[test]
fn whole_bursts_to_one_port_leave_in_order() {
    assert!(
        is_root(),
        "the end-to-end tests need root (DPDK); run deploy/test.sh as root"
    );
    let dir = TempDir::new("pcapw");
    let src = v4("10.0.0.10");
    // 100 frames: three full bursts and a tail (net_pcap hands out up to 32
    // a call); frames 40 and 70 (second and third bursts) go to p2.
    let to_p2 = |i: u16| i == 40 || i == 70;
    let dst = |i: u16| {
        let host = (i % 250) as u8 + 1;
        if to_p2(i) {
            Ipv4Addr::new(10, 2, 0, host)
        } else {
            Ipv4Addr::new(10, 1, (i / 250) as u8, host)
        }
    };
    // Payloads of 0..40 bytes: the short ones are padded to 60 on the wire.
    let payload = |i: u16| vec![i as u8; usize::from(i % 40)];
    let input: Vec<Vec<u8>> = (0..100u16)
        .map(|i| build::udp4(&spec(64), src, dst(i), 1000 + i, 53, &payload(i)))
        .collect();
    let (_, stats) = forward(&dir, "w", &input);
    let (mac1, mac2) = (mac_of(&stats, 1), mac_of(&stats, 2));
    let (mut want1, mut want2) = (vec![], vec![]);
    for i in 0..100u16 {
        let (mac, neigh, want) = if to_p2(i) {
            (mac2, NEIGH2, &mut want2)
        } else {
            (mac1, NEIGH1, &mut want1)
        };
        let trimmed = FrameSpec {
            min_len: 0,
            ..out_spec(mac, neigh, 63)
        };
        want.push(build::udp4(
            &trimmed,
            src,
            dst(i),
            1000 + i,
            53,
            &payload(i),
        ));
    }
    assert_eq!(pcap::read(dir.path("out1.pcap")).unwrap(), want1, "p1");
    assert_eq!(pcap::read(dir.path("out2.pcap")).unwrap(), want2, "p2");
    let bytes = |f: &[Vec<u8>]| f.iter().map(|f| f.len() as u64).sum::<u64>();
    let port = |p: usize, k: &str| stats["ports"][p]["counters"][k].as_u64();
    assert_eq!(port(0, "rx_packets"), Some(100));
    assert_eq!(port(0, "rx_bytes"), Some(bytes(&input)));
    assert_eq!(port(1, "tx_packets"), Some(98));
    assert_eq!(port(1, "tx_bytes"), Some(bytes(&want1)));
    assert_eq!(port(2, "tx_packets"), Some(2));
    assert_eq!(port(2, "tx_bytes"), Some(bytes(&want2)));
    assert_eq!(stats["tx_packets"].as_u64(), Some(100));
}

#[test]
fn bad_config_is_a_clear_error_before_dpdk_starts() {
    let dir = TempDir::new("badcfg");
    let cfg = format!(
        "{}ports:\n  - name: p0\n    device: net_null0\n    rx_queus: 1\nworkers:\n  - lcore: 1\n    rx: [{{port: p0}}]\n",
        eal_yaml("bad")
    );
    let out = run_fwd(&dir, &cfg, &[]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("rx_queus"), "error names the field: {err}");
    let out = run_fwd(&dir, &cfg.replace("rx_queus", "rx_queues"), &["--check"]);
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn the_private_runtime_directory_is_removed_at_exit() {
    assert!(is_root(), "the end-to-end tests need root (DPDK)");
    let dir = TempDir::new("rtdir");
    let tmp = dir.path("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let cfg = format!(
        "{}ports:\n  - name: p0\n    device: net_null_rt0\nworkers:\n  - lcore: 1\n    rx: [{{port: p0}}]\ncontrol:\n  socket: {}\n",
        eal_yaml("rtdir"),
        dir.path("fwd.sock").display()
    );
    // Without RUNTIME_DIRECTORY the daemon makes its own, fwd-<pid>, in
    // TMPDIR; it must be gone after a clean exit.
    let out = fwd_command(&dir, &cfg, &["--exit-after-rx", "1000"])
        .env_remove("RUNTIME_DIRECTORY")
        .env("TMPDIR", &tmp)
        .output()
        .expect("run fwd");
    assert!(out.status.success(), "{}", text(&out));
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}\n{}", text(&out));
}
