//! Trace and capture on frames from `pkt::build`, against tables built by
//! the control side's own `apply`: no DPDK.

use std::net::{IpAddr, Ipv4Addr};

use ctl::wire::{self, Change};

use super::super::pipeline::tests::{neigh, pipe, route_via};
use super::*;
use crate::acl::{IpPrefix, Masked8};
use crate::control;
use crate::pkt::build::{self, FrameSpec};
use crate::stats::DropReason;
use crate::tables::PortInfo;

const MAC_A: [u8; 6] = [2, 0, 0, 0, 0xa, 1];
const MAC_B: [u8; 6] = [2, 0, 0, 0, 0xb, 1];
const GW_MAC: [u8; 6] = [2, 0, 0, 0, 0xb, 0xfe];

struct Frames(Vec<Vec<u8>>);

impl Packets for Frames {
    fn count(&self) -> usize {
        self.0.len()
    }
    fn frame(&mut self, i: usize) -> Option<&mut [u8]> {
        self.0.get_mut(i).map(Vec::as_mut_slice)
    }
    fn wire_len(&self, i: usize) -> u32 {
        self.0[i].len() as u32
    }
    fn segments(&self, _: usize) -> u16 {
        1
    }
    fn trim_to(&mut self, i: usize, len: usize) {
        self.0[i].truncate(len);
    }
    fn mirror(&mut self, _: usize, _: u16) -> bool {
        false
    }
}

/// Ports `a` (10.1.0.1/24) and `b` (10.2.0.1/24); 198.51.100.0/24 via
/// 10.2.0.254 (resolved) on b; rule 7 drops UDP to 198.51.100.66.
fn tables() -> Tables {
    let mut acl_w = acl::ClassifierWriter::new(acl::Config::default());
    let ports = vec![PortInfo::new("a", MAC_A, 0), PortInfo::new("b", MAC_B, 0)];
    let base = Tables::empty(
        ports,
        acl_w.current().clone(),
        crate::tables::Limits::default(),
    );
    let addr = |a: &str, dev: &str| {
        Change::AddressAdd(wire::Address {
            addr: a.parse().unwrap(),
            dev: dev.into(),
        })
    };
    let changes = vec![
        addr("10.1.0.1/24", "a"),
        addr("10.2.0.1/24", "b"),
        neigh("10.2.0.254", GW_MAC, "b"),
        route_via("198.51.100.0/24", "10.2.0.254", "b"),
        Change::RuleAdd(Box::new(wire::Rule {
            id: Some(7),
            priority: 10,
            matches: wire::RuleMatch {
                dst: Some("198.51.100.66/32".parse().unwrap()),
                proto: Some(wire::Masked {
                    value: 17,
                    mask: 0xff,
                }),
                ..wire::RuleMatch::default()
            },
            actions: vec![wire::Action::Drop],
        })),
    ];
    control::apply_changes(&base, &mut acl_w, &changes, None)
        .map_err(|e| e.to_string())
        .unwrap()
        .tables
}

fn udp(dst: [u8; 4], dport: u16) -> Vec<u8> {
    let spec = FrameSpec {
        dst_mac: MAC_A,
        ..FrameSpec::default()
    };
    build::udp4(
        &spec,
        Ipv4Addr::new(10, 1, 0, 2),
        Ipv4Addr::from(dst),
        1000,
        dport,
        &[0xab; 30],
    )
}

fn arp() -> Vec<u8> {
    let mut f = vec![0xff; 6];
    f.extend_from_slice(&[2, 0, 0, 0, 0, 9, 0x08, 0x06]);
    f.extend_from_slice(&[0; 28]);
    f
}

/// Runs `frames` through the tapped stages; the scratch and the frames after.
fn tapped(t: &Tables, armed: &Armed, frames: Vec<Vec<u8>>) -> (Scratch, Frames) {
    let mut s = Scratch::default();
    let mut tally = Tally::default();
    let (_, mut rc) = acl::CounterSet::new(1, 1024);
    let mut f = Frames(frames);
    let clock = Clock {
        tick_ms: 1,
        now_ns: 5_000_000_000,
    };
    run_tapped(
        armed,
        &pipe(t),
        &mut f,
        &mut s,
        &mut tally,
        &mut rc[0],
        clock,
        0,
    );
    (s, f)
}

fn any() -> Filter {
    Filter::new(acl::RuleMatch::default())
}

#[test]
fn a_filter_is_a_rule_match_and_takes_non_ip_only_when_it_asks_nothing_else() {
    let k = |dst: u32, proto: u8, in_port: u16| Key {
        dst: u128::from(dst),
        proto,
        in_port,
        ..Key::default()
    };
    let udp_to_net = Filter::new(acl::RuleMatch {
        dst: Some(IpPrefix::V4 {
            addr: Ipv4Addr::new(198, 51, 100, 0),
            len: 24,
        }),
        proto: Masked8::exact(17),
        ..acl::RuleMatch::default()
    });
    assert!(udp_to_net.matches(Some(&k(0xc633_6407, 17, 0)), 0));
    assert!(!udp_to_net.matches(Some(&k(0xc633_6407, 6, 0)), 0));
    assert!(!udp_to_net.matches(Some(&k(0xc633_6507, 17, 0)), 0));
    assert!(
        !udp_to_net.matches(None, 0),
        "ARP has no destination prefix"
    );
    let on_port_1 = Filter::new(acl::RuleMatch {
        in_port: Some(1),
        ..acl::RuleMatch::default()
    });
    assert!(on_port_1.matches(None, 1));
    assert!(!on_port_1.matches(None, 0));
    assert!(!on_port_1.matches(Some(&k(1, 17, 0)), 0));
    assert!(any().matches(None, 3));
}

#[test]
fn a_trace_claims_at_most_its_count_and_counts_what_its_ring_cannot_hold() {
    let tap = TraceTap::new(any(), 5, 2, 2);
    let rec = |w: u16| TraceRecord {
        worker: w,
        port: 0,
        len: 60,
        seen: Seen::NotIp,
        rules: [0; MAX_RULES],
        n_rules: 0,
        route: None,
        nexthop: None,
        verdict: Verdict::Consumed,
    };
    assert_eq!((0..8).filter(|_| tap.claim()).count(), 5);
    for _ in 0..3 {
        tap.push(0, rec(0));
    }
    tap.push(1, rec(1));
    tap.push(9, rec(9));
    // Worker 0's ring holds 2, worker 9 does not exist.
    assert_eq!(tap.lost(), 2);
    let mut got: Vec<u16> = std::iter::from_fn(|| tap.pop()).map(|r| r.worker).collect();
    got.sort_unstable();
    assert_eq!(got, vec![0, 0, 1]);
}

#[test]
fn a_capture_is_cut_to_its_snaplen_and_bounded_by_count_rate_and_ring() {
    let c = CaptureTap::new(0, false, any(), 4, 8, 3, 2);
    let frame: Vec<u8> = (0..60).collect();
    let t0 = 10_000_000_000;
    for _ in 0..5 {
        c.copy(&frame, 64, t0);
    }
    // Two buffers: two copied, the third over the ring, two over the rate.
    assert_eq!(c.losses(), (1, 2));
    let b = c.pop().unwrap();
    assert_eq!((b.len, b.orig_len, b.ts_ns), (8, 64, t0));
    assert_eq!(&b.data[..b.len], &frame[..8]);
    c.recycle(b);
    let b = c.pop().unwrap();
    c.recycle(b);
    assert!(c.pop().is_none());
    // A new second: the rate window opens again; the count (4) ends it.
    for k in 1..=3 {
        c.copy(&frame, 64, t0 + k * 1_000_000_000);
        let b = c.pop();
        assert_eq!(b.is_some(), k <= 2, "copy {k}");
        if let Some(b) = b {
            c.recycle(b);
        }
    }
}

#[test]
fn taps_arm_one_trace_at_a_time_and_are_off_after_disarming() {
    let taps = Taps::default();
    assert_eq!(taps.generation(), 0);
    let a = Arc::new(TraceTap::new(any(), 1, 1, 1));
    let b = Arc::new(TraceTap::new(any(), 1, 1, 1));
    taps.arm_trace(&a).unwrap();
    assert_eq!(taps.arm_trace(&b), Err(Busy));
    let g = taps.generation();
    assert_ne!(g, 0);
    let (tg, armed) = taps.take().unwrap();
    assert_eq!(tg, g);
    assert!(Arc::ptr_eq(armed.unwrap().trace.as_ref().unwrap(), &a));
    // Disarming another session's tap changes nothing.
    taps.disarm_trace(&b);
    assert!(taps.take().unwrap().1.is_some());
    taps.disarm_trace(&a);
    assert_eq!(taps.generation(), 0);
    assert!(taps.take().unwrap().1.is_none());
    taps.arm_trace(&b).unwrap();
}

#[test]
fn traced_packets_show_their_rules_route_next_hop_and_verdict() {
    let t = tables();
    let trace = Arc::new(TraceTap::new(any(), 3, 1, 16));
    let armed = Armed {
        trace: Some(Arc::clone(&trace)),
        capture: None,
    };
    let frames = vec![
        udp([198, 51, 100, 7], 53),
        udp([198, 51, 100, 66], 53),
        arp(),
        udp([198, 51, 100, 8], 53),
    ];
    let (s, _) = tapped(&t, &armed, frames.clone());
    // The stages decided as the plain pipeline does.
    let mut plain = Scratch::default();
    let (_, mut rc) = acl::CounterSet::new(1, 1024);
    pipe(&t).run(
        &mut Frames(frames),
        &mut plain,
        &mut Tally::default(),
        &mut rc[0],
        Clock::default,
    );
    assert_eq!(s.verdict[..4], plain.verdict[..4]);

    let recs: Vec<TraceRecord> = std::iter::from_fn(|| trace.pop()).collect();
    assert_eq!(recs.len(), 3, "the count bounds the records");
    let routed = &recs[0];
    assert_eq!(routed.verdict, Verdict::Tx(1));
    assert_eq!(routed.rules(), &[] as &[u32]);
    let route = routed.route.unwrap();
    assert_eq!(route.table, 0);
    assert_eq!(
        route.prefix.map(control::net_of),
        Some("198.51.100.0/24".parse().unwrap())
    );
    let nh = routed.nexthop.unwrap();
    assert_eq!(nh.gateway, Some(IpAddr::V4(Ipv4Addr::new(10, 2, 0, 254))));
    assert_eq!(nh.port, 1);
    let Seen::Ip(k) = routed.seen else {
        panic!("{:?}", routed.seen)
    };
    assert_eq!((k.proto, k.sport, k.dport), (17, 1000, 53));

    let dropped = &recs[1];
    assert_eq!(dropped.rules(), &[7]);
    assert_eq!(dropped.verdict, Verdict::Drop(DropReason::AclDrop));
    assert_eq!((dropped.route, dropped.nexthop), (None, None));

    assert_eq!(recs[2].seen, Seen::NotIp);
    assert_eq!(recs[2].route, None);
}

#[test]
fn a_filtered_trace_records_only_matching_packets() {
    let t = tables();
    let f = Filter::new(acl::RuleMatch {
        dport: acl::PortRange::exact(99),
        ..acl::RuleMatch::default()
    });
    let trace = Arc::new(TraceTap::new(f, 10, 1, 16));
    let armed = Armed {
        trace: Some(Arc::clone(&trace)),
        capture: None,
    };
    tapped(
        &t,
        &armed,
        vec![
            udp([198, 51, 100, 7], 53),
            udp([198, 51, 100, 9], 99),
            arp(),
        ],
    );
    let recs: Vec<TraceRecord> = std::iter::from_fn(|| trace.pop()).collect();
    assert_eq!(recs.len(), 1);
    let Seen::Ip(k) = recs[0].seen else { panic!() };
    assert_eq!(k.dport, 99);
}

#[test]
fn a_capture_in_copies_frames_as_received_and_out_as_sent() {
    let t = tables();
    let frames = vec![udp([198, 51, 100, 7], 53), udp([198, 51, 100, 66], 53)];
    let cin = Arc::new(CaptureTap::new(0, false, any(), 10, 2048, 100, 8));
    let armed = Armed {
        trace: None,
        capture: Some(Arc::clone(&cin)),
    };
    let (_, after) = tapped(&t, &armed, frames.clone());
    let got: Vec<Vec<u8>> = std::iter::from_fn(|| cin.pop())
        .map(|b| b.data[..b.len].to_vec())
        .collect();
    assert_eq!(got, frames, "both, as received");

    let cout = Arc::new(CaptureTap::new(1, true, any(), 10, 2048, 100, 8));
    let armed = Armed {
        trace: None,
        capture: Some(Arc::clone(&cout)),
    };
    let (s, after2) = tapped(&t, &armed, frames.clone());
    assert_eq!(s.verdict[0], Verdict::Tx(1));
    let got: Vec<Vec<u8>> = std::iter::from_fn(|| cout.pop())
        .map(|b| b.data[..b.len].to_vec())
        .collect();
    // Only the forwarded one, rewritten (the dropped one never leaves).
    assert_eq!(got, vec![after2.0[0].clone()]);
    assert_eq!(got[0][..6], GW_MAC);
    assert_eq!(after.0[0], after2.0[0]);
    // A capture on the ingress port sees nothing out of it.
    let none = Arc::new(CaptureTap::new(0, true, any(), 10, 2048, 100, 8));
    let armed = Armed {
        trace: None,
        capture: Some(Arc::clone(&none)),
    };
    tapped(&t, &armed, frames);
    assert!(none.pop().is_none());
}
