//! Micro-benchmark of the packet fast path (`fwd::pkt`): nanoseconds per packet for
//! parse + forward_rewrite over bursts of 32 IPv4/UDP frames of 60 bytes (64 on the
//! wire with the FCS), plus variants (parse only, + flow hash, + software IPv4
//! checksum check, a mixed v4/v6/VLAN/TCP burst, stage-wise over a `[Parsed; 32]`),
//! the common-case recognisers (`parse_plain_v4`, `parse_plain_v6`), and the worker's whole fast path
//! (`Pipeline::fast`: recognise, one batched lookup in a 1000-route table, rewrite;
//! IPv4 and IPv6; bursts to consecutive destinations, as the daemon's
//! throughput recipe sends them, and to 32 routes across the table; the
//! routes via one next hop, via 16 in turn, and ECMP;
//! and IPv4 and IPv6 with 10,000 rules loaded, answered by the worker's
//! flow cache; UDP, TCP, ESP and ICMP echo through the whole pipeline)
//! over plain byte frames.
//!
//! Usage: `bench_pkt [BLOCKS]` (default 2000); `BENCH_PKT_ONLY=<text>` runs
//! only the cases whose name contains it (e.g. `fast path`, for a profiler).
//! Each case runs BLOCKS timed blocks of 200 bursts; between blocks the frames
//! are refreshed from a template (untimed) so the TTL (255) never expires. Reports the minimum and median block, per packet and
//! per burst. No DPDK, no EAL: pure CPU cost of the code over cache-hot frames.

use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Instant;

use fwd::pkt::build::{self, Ext6, FrameSpec, VlanTag};
use fwd::pkt::{self, Parsed};
use fwd::worker::pipeline::{Clock, Pipeline, Scratch, Tally, Verdict};

const BURST: usize = 32;
const BURSTS_PER_BLOCK: usize = 200;
const DMAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0d];
const SMAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x05];

fn udp_burst() -> Vec<Vec<u8>> {
    let spec = FrameSpec {
        ttl: 255,
        ..FrameSpec::default()
    };
    (0..BURST as u32)
        .map(|i| {
            let f = build::udp4(
                &spec,
                Ipv4Addr::from(0x0a00_0000 + i),
                Ipv4Addr::from(0xc0a8_0000 + i * 7),
                1024 + i as u16,
                80,
                &[0; 18],
            );
            assert_eq!(f.len(), 60);
            f
        })
        .collect()
}

fn udp6_burst() -> Vec<Vec<u8>> {
    let spec = FrameSpec {
        ttl: 255,
        ..FrameSpec::default()
    };
    (0..BURST as u128)
        .map(|i| {
            build::udp6(
                &spec,
                Ipv6Addr::from(0x2001_0db8_0000_0000_0000_0000_0000_0001 + i),
                Ipv6Addr::from(0x2001_0db8_0001_0000_0000_0000_0000_0000 + (i << 64)),
                1024 + i as u16,
                80,
                &[0; 18],
            )
        })
        .collect()
}

fn mixed_burst() -> Vec<Vec<u8>> {
    let s4 = Ipv4Addr::new(10, 0, 0, 1);
    let d4 = Ipv4Addr::new(192, 168, 1, 1);
    let s6: Ipv6Addr = "2001:db8::1".parse().unwrap_or(Ipv6Addr::LOCALHOST);
    let d6: Ipv6Addr = "2001:db8:1::1".parse().unwrap_or(Ipv6Addr::LOCALHOST);
    let plain = FrameSpec {
        ttl: 255,
        ..FrameSpec::default()
    };
    let vlan = FrameSpec {
        vlans: vec![VlanTag::dot1q(10)],
        ..plain.clone()
    };
    let qinq = FrameSpec {
        vlans: vec![VlanTag::dot1ad(10), VlanTag::dot1q(20)],
        ..plain.clone()
    };
    let ext = FrameSpec {
        ipv6_ext: vec![Ext6::HopByHop { len8: 0 }],
        ..plain.clone()
    };
    (0..BURST as u16)
        .map(|i| match i % 8 {
            0 => build::udp4(&plain, s4, d4, i, 53, &[0; 18]),
            1 => build::tcp4(&plain, s4, d4, i, 443, 0x10, &[0; 6]),
            2 => build::udp4(&vlan, s4, d4, i, 53, &[0; 14]),
            3 => build::udp6(&plain, s6, d6, i, 53, &[0; 10]),
            4 => build::tcp6(&qinq, s6, d6, i, 80, 0x02, &[]),
            5 => build::icmp4_echo(&plain, s4, d4, i, 1, &[0; 10]),
            6 => build::udp6(&ext, s6, d6, i, 53, &[]),
            _ => build::tcp4(&qinq, s4, d4, i, 22, 0x18, &[0; 2]),
        })
        .collect()
}

/// Runs `op` over `template`-refreshed bursts; returns (min, median) ns per packet.
fn run(
    name: &str,
    template: &[Vec<u8>],
    blocks: usize,
    mut op: impl FnMut(&mut [Vec<u8>]) -> u64,
) -> (f64, f64) {
    if std::env::var("BENCH_PKT_ONLY").is_ok_and(|o| !name.contains(o.as_str())) {
        return (f64::NAN, f64::NAN);
    }
    let mut burst: Vec<Vec<u8>> = template.to_vec();
    let mut samples = Vec::with_capacity(blocks);
    let mut sink = 0u64;
    for b in 0..blocks + blocks / 10 {
        for (f, t) in burst.iter_mut().zip(template) {
            f.copy_from_slice(t);
        }
        let t0 = Instant::now();
        for _ in 0..BURSTS_PER_BLOCK {
            sink = sink.wrapping_add(op(black_box(&mut burst)));
        }
        let dt = t0.elapsed();
        // The first tenth warms caches and branch predictors.
        if b >= blocks / 10 {
            samples.push(dt.as_nanos() as f64 / (BURSTS_PER_BLOCK * BURST) as f64);
        }
    }
    black_box(sink);
    samples.sort_by(f64::total_cmp);
    let min = samples.first().copied().unwrap_or(f64::NAN);
    let med = samples.get(samples.len() / 2).copied().unwrap_or(f64::NAN);
    println!(
        "{name:<46} {min:>7.2} {med:>7.2} {:>9.1} {:>8.1}",
        min * BURST as f64,
        1e3 / med
    );
    (min, med)
}

fn parse_rewrite(burst: &mut [Vec<u8>]) -> u64 {
    let mut n = 0;
    for f in burst.iter_mut() {
        if let Ok(p) = pkt::parse(f) {
            n += u64::from(pkt::forward_rewrite(f, &p, DMAC, SMAC).is_ok());
        }
    }
    n
}

fn main() {
    let blocks: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2000);
    let udp = udp_burst();
    let mixed = mixed_burst();
    println!(
        "bench_pkt: {blocks} blocks x {BURSTS_PER_BLOCK} bursts x {BURST} frames (udp4: 60 B)"
    );
    println!(
        "{:<46} {:>7} {:>7} {:>9} {:>8}",
        "case", "min ns", "med ns", "ns/burst", "Mpps/core"
    );
    println!("{:-<82}", "");

    run("parse only (udp4)", &udp, blocks, |b| {
        b.iter()
            .map(|f| pkt::parse(f).map_or(0, |p| u64::from(p.dport)))
            .sum()
    });
    run(
        "parse + forward_rewrite (udp4)",
        &udp,
        blocks,
        parse_rewrite,
    );
    run(
        "parse + forward_rewrite + flow_hash (udp4)",
        &udp,
        blocks,
        |b| {
            let mut n = 0u64;
            for f in b.iter_mut() {
                if let Ok(p) = pkt::parse(f) {
                    n = n.wrapping_add(u64::from(pkt::flow_hash(&p)));
                    n += u64::from(pkt::forward_rewrite(f, &p, DMAC, SMAC).is_ok());
                }
            }
            n
        },
    );
    let parsed: Vec<Parsed> = udp.iter().filter_map(|f| pkt::parse(f).ok()).collect();
    run("flow_hash only (pre-parsed udp4)", &udp, blocks, |_| {
        black_box(&parsed)
            .iter()
            .fold(0u64, |n, p| n.wrapping_add(u64::from(pkt::flow_hash(p))))
    });
    run(
        "parse + sw csum check + rewrite (udp4)",
        &udp,
        blocks,
        |b| {
            let mut n = 0;
            for f in b.iter_mut() {
                if let Ok(p) = pkt::parse(f) {
                    if pkt::ipv4_checksum_ok(f, &p) {
                        n += u64::from(pkt::forward_rewrite(f, &p, DMAC, SMAC).is_ok());
                    }
                }
            }
            n
        },
    );
    run(
        "stage-wise: parse_into [Parsed;32], rewrite",
        &udp,
        blocks,
        |b| {
            let mut ps = [Parsed::default(); BURST];
            let mut ok = [false; BURST];
            for ((f, p), o) in b.iter().zip(ps.iter_mut()).zip(ok.iter_mut()) {
                *o = pkt::parse_into(f, p).is_ok();
            }
            let mut n = 0;
            for ((f, p), o) in b.iter_mut().zip(ps.iter()).zip(ok.iter()) {
                if *o {
                    n += u64::from(pkt::forward_rewrite(f, p, DMAC, SMAC).is_ok());
                }
            }
            n
        },
    );
    run(
        "parse + forward_rewrite (mixed v4/v6/vlan)",
        &mixed,
        blocks,
        parse_rewrite,
    );
    run(
        "parse_plain_v4 (sw csum) + rewrite (udp4)",
        &udp,
        blocks,
        |b| {
            let mut p = Parsed::default();
            let mut n = 0;
            for f in b.iter_mut() {
                if pkt::parse_plain_v4(f, pkt::NicCsum::UNCHECKED, &mut p) {
                    n += u64::from(pkt::forward_rewrite(f, &p, DMAC, SMAC).is_ok());
                }
            }
            n
        },
    );
    let udp6 = udp6_burst();
    run(
        "parse + forward_rewrite (udp6)",
        &udp6,
        blocks,
        parse_rewrite,
    );
    run("parse_plain_v6 + rewrite (udp6)", &udp6, blocks, |b| {
        let mut p = Parsed::default();
        let mut n = 0;
        for f in b.iter_mut() {
            if pkt::parse_plain_v6(f, &mut p) {
                n += u64::from(pkt::forward_rewrite(f, &p, DMAC, SMAC).is_ok());
            }
        }
        n
    });
    use fast_path::Via;
    // The last two: a firewall's case, 10,000 rules loaded (every one a
    // permit, as the loaded forwarding recipe's; IPv4 rules, so an IPv6
    // packet's first match is the final permit of everything), the keys
    // answered by the worker's flow cache (the same 32 flows each burst:
    // all hits once warm). The first two: bursts to consecutive
    // destinations, as the daemon's throughput recipe sends them (the
    // others go to 32 routes across the 1000).
    for (v6, via, rules, consecutive) in [
        (false, Via::Turns(1), 0, true),
        (true, Via::Turns(1), 0, true),
        (false, Via::Turns(1), 0, false),
        (true, Via::Turns(1), 0, false),
        (false, Via::Turns(16), 0, false),
        (true, Via::Turns(16), 0, false),
        (false, Via::Ecmp(4), 0, false),
        (true, Via::Ecmp(4), 0, false),
        (false, Via::Turns(1), 10_000, false),
        (true, Via::Turns(1), 10_000, false),
    ] {
        let tables = fast_path::tables(v6, via, rules);
        let routed = fast_path::burst_of(v6, "udp", consecutive);
        let mut scratch = Scratch::default();
        let slots = fwd::acl::Config::default().capacity as usize;
        let (_, mut writers) = fwd::acl::CounterSet::new(1, slots);
        let name = match (v6, via, rules) {
            _ if consecutive && v6 => {
                "worker fast path, consecutive destinations (udp6, 1000 /64 routes)"
            }
            _ if consecutive => "worker fast path, consecutive destinations (udp4, 1000 routes)",
            (true, _, 1..) => {
                "worker fast path, 10k rules via the flow cache (udp6, 1000 /64 routes)"
            }
            (false, _, 1..) => "worker fast path, 10k rules via the flow cache (udp4, 1000 routes)",
            (true, Via::Turns(1), _) => "worker fast path (udp6, 1000 /64 routes)",
            (false, Via::Turns(1), _) => "worker fast path (udp4, 1000 routes)",
            (true, Via::Turns(_), _) => "worker fast path, 16 next hops (udp6, 1000 /64 routes)",
            (false, Via::Turns(_), _) => "worker fast path, 16 next hops (udp4, 1000 routes)",
            (true, Via::Ecmp(_), _) => {
                "worker fast path, ECMP over 4 next hops (udp6, 1000 /64 routes)"
            }
            (false, Via::Ecmp(_), _) => {
                "worker fast path, ECMP over 4 next hops (udp4, 1000 routes)"
            }
        };
        run(name, &routed, blocks, |b| {
            let mut frames = fast_path::Frames(b);
            let mut tally = Tally::default();
            let left = fast_path::pipe(&tables).fast(
                &mut frames,
                &mut scratch,
                &mut tally,
                &mut writers[0],
                Clock::default(),
            );
            assert_eq!(left.rest, 0, "every packet takes the fast path");
            tally.rx_bytes
        });
    }
    // Transit traffic through the whole pipeline (`Pipeline::run`, the
    // worker's call): IPsec (ESP) and ICMP echo (the general stages took
    // them until e378291, the fast path since), and TCP (ACK segments) and
    // UDP beside them to the same routes.
    for (v6, proto) in [
        (false, "esp"),
        (true, "esp"),
        (false, "icmp"),
        (true, "icmp"),
        (false, "tcp"),
        (true, "tcp"),
        (false, "udp"),
        (true, "udp"),
    ] {
        let tables = fast_path::tables(v6, Via::Turns(1), 0);
        let frames = fast_path::burst_of(v6, proto, false);
        let mut scratch = Scratch::default();
        let (_, mut writers) = fwd::acl::CounterSet::new(1, 16);
        let name = format!(
            "worker pipeline, {proto} ({}, 1000 routes)",
            if v6 { "ip6" } else { "ip4" }
        );
        run(&name, &frames, blocks, |b| {
            let mut frames = fast_path::Frames(b);
            let mut tally = Tally::default();
            let whole = fast_path::pipe(&tables).run(
                &mut frames,
                &mut scratch,
                &mut tally,
                &mut writers[0],
                Clock::default,
            );
            assert!(
                whole.is_some_and(|w| w.port == 1)
                    || scratch.verdict[..BURST]
                        .iter()
                        .all(|v| matches!(v, Verdict::Tx(1))),
                "every packet is forwarded"
            );
            tally.rx_bytes
        });
    }
}

/// The worker's fast path over plain frames: two ports, resolved gateways
/// on the second, 1000 routes via them ([`fast_path::Via`]; /24s for IPv4,
/// `deploy/bench/throughput.sh`'s FAMILY=6 /64s for IPv6). With one
/// gateway, the throughput recipe's routes. With 16 in turn, each packet
/// of the burst (to route 31·i) goes to another next hop than the packet
/// before it, as a router's traffic to several upstreams interleaves. With
/// ECMP, every route is one multipath route over the gateways (the daemon
/// makes them one group), and each packet's flow hash (its source port
/// differs) picks the member.
mod fast_path {
    use super::*;
    use ctl::wire::{self, Change, RouteTarget};
    use fwd::tables::{PortInfo, Tables};
    use fwd::worker::pipeline::Packets;

    pub struct Frames<'a>(pub &'a mut [Vec<u8>]);

    impl Packets for Frames<'_> {
        fn count(&self) -> usize {
            self.0.len()
        }
        fn frame(&mut self, i: usize) -> Option<&mut [u8]> {
            self.0.get_mut(i).map(Vec::as_mut_slice)
        }
        fn wire_len(&self, i: usize) -> u32 {
            self.0.get(i).map_or(0, |f| f.len() as u32)
        }
        fn segments(&self, _: usize) -> u16 {
            1
        }
        fn trim_to(&mut self, _: usize, _: usize) {}
        fn mirror(&mut self, _: usize, _: u16) -> bool {
            false
        }
    }

    /// The i-th IPv6 route of the recipe: what `fwd-flows --v6 --dst
    /// 10.1.0.1` draws its destinations from (`deploy/lib.sh`).
    fn net6(i: u32) -> u128 {
        0xfd01_0000_0000_0000_0000_0000_0000_0000 | u128::from(0x0a01_0001 + i) << 64
    }

    /// How the routes reach their gateways.
    #[derive(Clone, Copy)]
    pub enum Via {
        /// Route `i` via gateway `i % K`.
        Turns(u32),
        /// Every route over the K gateways, ECMP.
        Ecmp(u32),
    }

    pub fn tables(v6: bool, via: Via, n_rules: usize) -> Tables {
        let hops = match via {
            Via::Turns(k) | Via::Ecmp(k) => k,
        };
        let mut acl = fwd::acl::ClassifierWriter::new(fwd::acl::Config::default());
        let ports = vec![
            PortInfo::new("in", SMAC, 0),
            PortInfo::new("out", [2, 0, 0, 0, 9, 1], 0),
        ];
        let base = Tables::empty(ports, acl.current().clone(), fwd::tables::Limits::default());
        let (a_in, a_out) = if v6 {
            ("fd00::ffff:fffe/64", "fd09::1/64")
        } else {
            ("10.0.0.254/16", "10.9.0.1/24")
        };
        // Gateway `g`: 10.9.0.2 + g, fd09::2 + g, its MAC DMAC's last
        // byte + g.
        let gw = |g: u32| -> IpAddr {
            if v6 {
                IpAddr::V6(Ipv6Addr::from(0xfd09_u128 << 112 | u128::from(2 + g)))
            } else {
                IpAddr::V4(Ipv4Addr::from(0x0a09_0002 + g))
            }
        };
        let mut changes = vec![
            Change::AddressAdd(wire::Address {
                addr: a_in.parse().unwrap_or_else(|_| unreachable!()),
                dev: "in".into(),
            }),
            Change::AddressAdd(wire::Address {
                addr: a_out.parse().unwrap_or_else(|_| unreachable!()),
                dev: "out".into(),
            }),
        ];
        for g in 0..hops {
            let mut mac = DMAC;
            mac[5] += g as u8;
            changes.push(Change::NeighAdd(wire::Neigh {
                addr: gw(g),
                lladdr: wire::Mac(mac),
                dev: "out".into(),
            }));
        }
        for i in 0..1000u32 {
            let prefix = if v6 {
                format!("{}/64", Ipv6Addr::from(net6(i)))
            } else {
                format!("{}/24", Ipv4Addr::from(0x0a01_0000 + (i << 8)))
            };
            changes.push(Change::RouteAdd(wire::Route {
                linkdown: false,
                proto: None,
                prefix: prefix.parse().unwrap_or_else(|_| unreachable!()),
                table: 0,
                target: match via {
                    Via::Turns(_) => RouteTarget::Gateway {
                        via: Some(gw(i % hops)),
                        dev: Some("out".into()),
                    },
                    Via::Ecmp(_) => RouteTarget::Multipath(
                        (0..hops)
                            .map(|g| wire::NextHopSpec {
                                via: Some(gw(g)),
                                dev: Some("out".into()),
                                weight: 1,
                            })
                            .collect(),
                    ),
                },
            }));
        }
        changes.extend(rules(n_rules));
        match fwd::control::apply_changes(&base, &mut acl, &changes, None) {
            Ok(a) => a.tables,
            Err(e) => panic!("bench tables: {e}"),
        }
    }

    /// `n` rules, each a permit: source and destination prefixes (/8 to
    /// /32), a destination port range and TCP or UDP drawn from a fixed
    /// seed, in priority order, then a permit of everything (the shape of
    /// the loaded forwarding recipe's, `deploy/lib.sh`); none for 0.
    fn rules(n: usize) -> Vec<Change> {
        if n == 0 {
            return Vec::new();
        }
        let mut x = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut text = String::new();
        for k in 0..n {
            let (a, b, r) = (next(), next(), next());
            let (ls, ld) = (8 + a % 25, 8 + b % 25);
            let net = |x: u64, l: u64| Ipv4Addr::from((x >> 32) as u32 & (u32::MAX << (32 - l)));
            let (src, dst) = (net(a, ls), net(b, ld));
            let lo = (r >> 16) as u16 % 60_000;
            text += &format!(
                "rule add prio {} src {src}/{ls} dst {dst}/{ld} proto {} dport {lo}-{} action permit\n",
                k + 1,
                if r & 1 == 0 { 6 } else { 17 },
                lo + (r >> 40) as u16 % 1024
            );
        }
        text += "rule add prio 1000000 action permit\n";
        match ctl::text::parse_batch(&text) {
            Ok(b) => b.changes,
            Err(e) => panic!("bench rules: {e:?}"),
        }
    }

    /// 32 frames from the in port's subnet, each with a flow of its own:
    /// UDP (`"udp"`), TCP ACK segments (`"tcp"`), ESP (`"esp"`: protocol
    /// 50, 26 bytes of payload) or ICMP echo requests (`"icmp"`). To 32 of
    /// the routes across the table, or (`consecutive`) to consecutive
    /// destinations in the order of `deploy/bench/throughput.sh`'s pcap
    /// (`fwd-flows --dst 10.1.0.1`): IPv4 10.1.0.1 + i, all in the first
    /// route's /24; IPv6 one /64 route each.
    pub fn burst_of(v6: bool, proto: &str, consecutive: bool) -> Vec<Vec<u8>> {
        let spec = build::FrameSpec {
            ttl: 255,
            dst_mac: SMAC,
            ..build::FrameSpec::default()
        };
        let payload = &[0; 18];
        (0..BURST as u32)
            .map(|i| {
                let (sport, id) = (1024 + i as u16, i as u16);
                if v6 {
                    let src =
                        Ipv6Addr::from(0xfd00_0000_0000_0000_0000_0000_0000_0001 + u128::from(i));
                    let route = if consecutive { i } else { i * 31 };
                    let dst = Ipv6Addr::from(net6(route) | 1);
                    match proto {
                        "udp" => build::udp6(&spec, src, dst, sport, 80, payload),
                        "tcp" => build::tcp6(&spec, src, dst, sport, 80, 0x10, &payload[..6]),
                        "esp" => build::ipv6(&spec, src, dst, 50, &[i as u8; 26]),
                        _ => build::icmp6_echo(&spec, src, dst, 7, id, payload),
                    }
                } else {
                    let src = Ipv4Addr::new(10, 0, 0, 1 + i as u8);
                    // Consecutive addresses, or every 31st route's (a /24 each).
                    let step = if consecutive { i } else { (i * 31) << 8 };
                    let dst = Ipv4Addr::from(0x0a01_0001 + step);
                    match proto {
                        "udp" => build::udp4(&spec, src, dst, sport, 80, payload),
                        "tcp" => build::tcp4(&spec, src, dst, sport, 80, 0x10, &payload[..6]),
                        "esp" => build::ipv4(&spec, src, dst, 50, &[i as u8; 26]),
                        _ => build::icmp4_echo(&spec, src, dst, 7, id, payload),
                    }
                }
            })
            .collect()
    }

    /// The pipeline of the in port over `tables`.
    pub fn pipe(tables: &Tables) -> Pipeline<'_> {
        Pipeline {
            tables,
            in_port: 0,
            reject: pkt::IcmpError::NetUnreachable,
            host: false,
        }
    }
}
