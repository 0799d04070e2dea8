//! The stages on frames from `pkt::build`, against tables built by the
//! control side's own `apply`: no DPDK.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ctl::wire::{self, Change, RouteTarget};

use super::*;
use crate::acl;
use crate::control;
use crate::pkt::build::{self, FrameSpec};
use crate::tables::PortInfo;

pub(in crate::worker) const MAC_A: [u8; 6] = [2, 0, 0, 0, 0xa, 1];
pub(in crate::worker) const MAC_B: [u8; 6] = [2, 0, 0, 0, 0xb, 1];
pub(in crate::worker) const GW_MAC: [u8; 6] = [2, 0, 0, 0, 0xb, 0xfe];
pub(in crate::worker) const HOST_MAC: [u8; 6] = [2, 0, 0, 0, 0xa, 2];

/// A burst of plain frames.
#[derive(Clone, Default)]
pub(in crate::worker) struct Frames {
    pub(in crate::worker) f: Vec<Vec<u8>>,
    pub(in crate::worker) segs: Vec<u16>,
    /// The NIC's checksum verdict per frame (None: not offloaded).
    pub(in crate::worker) nic_csum: Vec<Option<bool>>,
    mirrored: Vec<(usize, u16)>,
}

impl Frames {
    pub(in crate::worker) fn new(f: Vec<Vec<u8>>) -> Frames {
        let segs = vec![1; f.len()];
        let nic_csum = vec![None; f.len()];
        Frames {
            f,
            segs,
            nic_csum,
            mirrored: Vec::new(),
        }
    }
}

impl Packets for Frames {
    fn count(&self) -> usize {
        self.f.len()
    }
    fn frame(&mut self, i: usize) -> Option<&mut [u8]> {
        self.f.get_mut(i).map(Vec::as_mut_slice)
    }
    fn wire_len(&self, i: usize) -> u32 {
        self.f[i].len() as u32
    }
    fn segments(&self, i: usize) -> u16 {
        self.segs[i]
    }
    fn trim_to(&mut self, i: usize, len: usize) {
        self.f[i].truncate(len);
    }
    fn ip_csum(&self, i: usize) -> crate::pkt::NicCsum {
        self.nic_csum[i].into()
    }
    fn mirror(&mut self, i: usize, port: u16) -> bool {
        self.mirrored.push((i, port));
        true
    }
}

/// Port `a` (10.1.0.1/24, fd01::1/64) and port `b` (10.2.0.1/24, fd02::1/64,
/// MTU 1280); gateway 10.2.0.254 on b resolved; 198.51.100.0/24 via it,
/// 203.0.113.0/24 reject, 192.0.2.0/24 blackhole, 2001:db8::/32 via fd02::fe
/// (unresolved).
pub(in crate::worker) fn tables(extra: Vec<Change>) -> Tables {
    let mut acl_w = acl::ClassifierWriter::new(acl::Config::default());
    let ports = vec![
        PortInfo::new("a", MAC_A, 0),
        PortInfo {
            mtu: 1280,
            ..PortInfo::new("b", MAC_B, 0)
        },
    ];
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
    let route = |p: &str, target: RouteTarget| {
        Change::RouteAdd(wire::Route {
            linkdown: false,
            proto: None,
            prefix: p.parse().unwrap(),
            table: 0,
            target,
        })
    };
    let mut changes = vec![
        addr("10.1.0.1/24", "a"),
        addr("fd01::1/64", "a"),
        addr("10.2.0.1/24", "b"),
        addr("fd02::1/64", "b"),
        neigh("10.2.0.254", GW_MAC, "b"),
        route_via("198.51.100.0/24", "10.2.0.254", "b"),
        route("203.0.113.0/24", RouteTarget::Reject),
        route("192.0.2.0/24", RouteTarget::Blackhole),
        route_via("2001:db8::/32", "fd02::fe", "b"),
    ];
    changes.extend(extra);
    control::apply_changes(&base, &mut acl_w, &changes, None)
        .map_err(|e| e.to_string())
        .unwrap()
        .tables
}

/// Neighbour `addr` on `dev`, resolved to `mac`.
pub(in crate::worker) fn neigh(addr: &str, mac: [u8; 6], dev: &str) -> Change {
    Change::NeighAdd(wire::Neigh {
        addr: addr.parse().unwrap(),
        lladdr: wire::Mac(mac),
        dev: dev.into(),
    })
}

/// `prefix` via gateway `gw` on `dev`.
pub(in crate::worker) fn route_via(prefix: &str, gw: &str, dev: &str) -> Change {
    Change::RouteAdd(wire::Route {
        linkdown: false,
        proto: None,
        prefix: prefix.parse().unwrap(),
        table: 0,
        target: RouteTarget::Gateway {
            via: Some(gw.parse().unwrap()),
            dev: Some(dev.into()),
        },
    })
}

/// The stages for a burst received on port `a`, host path off.
pub(in crate::worker) fn pipe(t: &Tables) -> Pipeline<'_> {
    Pipeline {
        tables: t,
        in_port: 0,
        reject: IcmpError::AdminProhibited,
        host: false,
    }
}

fn run(t: &Tables, frames: &mut Frames) -> (Scratch, Tally) {
    run_with(t, frames, false)
}

/// `pipe.run` with the verdicts of a burst it forwards whole (left
/// unwritten) written as the poll loop reads them, `Tx` of that port:
/// every verdict final. Checks that such a burst's bytes are its frames'
/// lengths as they go out (the port's transmitted bytes).
pub(in crate::worker) fn run_settled(
    pipe: &Pipeline,
    frames: &mut Frames,
    s: &mut Scratch,
    tally: &mut Tally,
    rc: &mut acl::CounterWriter,
) -> Option<u16> {
    let whole = pipe.run(frames, s, tally, rc, Clock::default)?;
    s.verdict[..frames.f.len()].fill(Verdict::Tx(whole.port));
    let out: usize = frames.f.iter().map(Vec::len).sum();
    assert_eq!(whole.bytes, out as u64, "a whole burst's bytes");
    Some(whole.port)
}

/// With the host path on or off.
fn run_with(t: &Tables, frames: &mut Frames, host: bool) -> (Scratch, Tally) {
    let mut s = Scratch::default();
    let mut tally = Tally::default();
    let (_, mut writers) = acl::CounterSet::new(1, 1024);
    let pipe = Pipeline {
        tables: t,
        in_port: 0,
        reject: IcmpError::AdminProhibited,
        host,
    };
    run_settled(&pipe, frames, &mut s, &mut tally, &mut writers[0]);
    (s, tally)
}

pub(in crate::worker) fn from_host() -> FrameSpec {
    FrameSpec {
        dst_mac: MAC_A,
        src_mac: HOST_MAC,
        ..FrameSpec::default()
    }
}

fn udp4_to(dst: [u8; 4], spec: &FrameSpec, len: usize) -> Vec<u8> {
    build::udp4(
        spec,
        Ipv4Addr::new(10, 1, 0, 2),
        Ipv4Addr::from(dst),
        1000,
        53,
        &vec![0xab; len],
    )
}

#[test]
fn forwarded_packets_are_rewritten_for_their_resolved_next_hop() {
    let t = tables(vec![]);
    let mut f = Frames::new(vec![udp4_to([198, 51, 100, 7], &from_host(), 100)]);
    let before = f.f[0].clone();
    let (s, _) = run(&t, &mut f);
    assert_eq!(s.verdict[0], Verdict::Tx(1));
    let out = &f.f[0];
    assert_eq!(out[..6], GW_MAC);
    assert_eq!(out[6..12], MAC_B);
    assert_eq!(out[22], before[22] - 1, "TTL decremented");
    assert!(pkt::csum::verify_ipv4_header(&out[14..34]));
}

#[test]
fn an_unresolved_next_hop_holds_the_packet_for_its_address() {
    let t = tables(vec![]);
    let v6 = build::udp6(
        &from_host(),
        "fd01::2".parse().unwrap(),
        "2001:db8::9".parse().unwrap(),
        1,
        2,
        &[0; 8],
    );
    let mut f = Frames::new(vec![udp4_to([10, 2, 0, 9], &from_host(), 10), v6]);
    let (s, _) = run(&t, &mut f);
    // A connected destination: the neighbour is the destination itself.
    assert_eq!(s.verdict[0], Verdict::Hold { port: 1 });
    assert_eq!(s.hold_addr[0], IpAddr::V4(Ipv4Addr::new(10, 2, 0, 9)));
    // Via a gateway: the gateway.
    assert_eq!(s.verdict[1], Verdict::Hold { port: 1 });
    assert_eq!(s.hold_addr[1], "fd02::fe".parse::<IpAddr>().unwrap());
}

#[test]
fn errors_for_ttl_no_route_and_reject_routes() {
    let t = tables(vec![]);
    let ttl1 = FrameSpec {
        ttl: 1,
        ..from_host()
    };
    let mut f = Frames::new(vec![
        udp4_to([198, 51, 100, 7], &ttl1, 10),
        udp4_to([100, 64, 0, 1], &from_host(), 10),
        udp4_to([203, 0, 113, 1], &from_host(), 10),
        udp4_to([192, 0, 2, 1], &from_host(), 10),
    ]);
    let (s, _) = run(&t, &mut f);
    assert_eq!(
        s.verdict[0],
        Verdict::Error(DropReason::TtlExpired, IcmpError::TimeExceeded)
    );
    assert_eq!(
        s.verdict[1],
        Verdict::Error(DropReason::NoRoute, IcmpError::NetUnreachable)
    );
    assert_eq!(
        s.verdict[2],
        Verdict::Error(DropReason::Reject, IcmpError::AdminProhibited)
    );
    assert_eq!(s.verdict[3], Verdict::Drop(DropReason::Blackhole));
}

#[test]
fn the_output_mtu_decides_between_fragmenting_and_refusing() {
    let t = tables(vec![]);
    let df = FrameSpec {
        dont_fragment: true,
        ..from_host()
    };
    let v6 = build::udp6(
        &from_host(),
        "fd01::2".parse().unwrap(),
        "fd02::fe".parse().unwrap(),
        1,
        2,
        &[0; 1400],
    );
    let mut f = Frames::new(vec![
        udp4_to([198, 51, 100, 7], &df, 1400),
        udp4_to([198, 51, 100, 7], &from_host(), 1400),
        udp4_to([198, 51, 100, 7], &df, 1252),
        v6,
    ]);
    let (s, _) = run(&t, &mut f);
    assert_eq!(
        s.verdict[0],
        Verdict::Error(DropReason::MtuExceeded, IcmpError::FragNeeded { mtu: 1280 })
    );
    assert_eq!(s.verdict[1], Verdict::Fragment { port: 1, mtu: 1280 });
    assert_eq!(s.verdict[2], Verdict::Tx(1), "exactly 1280 bytes fits");
    assert_eq!(
        s.verdict[3],
        Verdict::Error(
            DropReason::MtuExceeded,
            IcmpError::PacketTooBig { mtu: 1280 }
        )
    );
}

#[test]
fn input_checks_of_rfc_1812() {
    let t = tables(vec![]);
    let mut bad = udp4_to([198, 51, 100, 7], &from_host(), 10);
    bad[24] ^= 0xff; // header checksum
    let padded = FrameSpec {
        min_len: 200,
        ..from_host()
    };
    let mut f = Frames::new(vec![
        bad,
        udp4_to([198, 51, 100, 7], &padded, 10),
        udp4_to([198, 51, 100, 7], &from_host(), 10),
    ]);
    f.segs[2] = 2;
    let (s, _) = run(&t, &mut f);
    assert_eq!(s.verdict[0], Verdict::Drop(DropReason::BadChecksum));
    // With RX checksum offload the NIC's verdict is taken as it is.
    let good = udp4_to([198, 51, 100, 7], &from_host(), 10);
    let mut f2 = Frames::new(vec![good.clone(), good]);
    f2.nic_csum = vec![Some(false), Some(true)];
    let (s2, _) = run(&t, &mut f2);
    assert_eq!(s2.verdict[0], Verdict::Drop(DropReason::BadChecksum));
    assert_eq!(s2.verdict[1], Verdict::Tx(1));
    assert_eq!(s.verdict[1], Verdict::Tx(1));
    assert_eq!(f.f[1].len(), 14 + 20 + 8 + 10, "padding trimmed");
    assert_eq!(s.verdict[2], Verdict::Drop(DropReason::MultiSegment));
}

#[test]
fn arp_and_nd_are_answered_and_handed_over() {
    let t = tables(vec![]);
    let req = build::arp_request(
        &FrameSpec {
            dst_mac: [0xff; 6],
            src_mac: HOST_MAC,
            ..FrameSpec::default()
        },
        Ipv4Addr::new(10, 1, 0, 2),
        Ipv4Addr::new(10, 1, 0, 1),
    );
    let other = build::arp_request(
        &FrameSpec {
            dst_mac: [0xff; 6],
            src_mac: HOST_MAC,
            ..FrameSpec::default()
        },
        Ipv4Addr::new(10, 1, 0, 2),
        Ipv4Addr::new(10, 1, 0, 3),
    );
    let mut f = Frames::new(vec![req, other]);
    let (s, tally) = run(&t, &mut f);
    assert_eq!(s.verdict[0], Verdict::Reply);
    assert_eq!(f.f[0][..6], HOST_MAC, "the reply goes to the asker");
    assert_eq!(s.verdict[1], Verdict::Consumed, "someone else's question");
    assert_eq!(s.n_learned, 1);
    assert_eq!(
        s.learned[0],
        (
            0,
            NeighMsg::ArpRequest {
                sender_ip: Ipv4Addr::new(10, 1, 0, 2),
                sender_mac: HOST_MAC,
                target_ip: Ipv4Addr::new(10, 1, 0, 1),
            }
        )
    );
    assert_eq!(tally.drops.iter().sum::<u64>(), 0);
}

#[test]
fn pings_of_our_addresses_and_link_local_are_answered() {
    let t = tables(vec![]);
    let ll = Ipv6Addr::from(t.port(0).unwrap().link_local);
    let mut f = Frames::new(vec![
        build::icmp4_echo(
            &from_host(),
            Ipv4Addr::new(10, 1, 0, 2),
            Ipv4Addr::new(10, 2, 0, 1),
            1,
            1,
            b"hi",
        ),
        build::icmp6_echo(&from_host(), "fe80::2".parse().unwrap(), ll, 1, 1, b"hi"),
        build::icmp6_echo(
            &from_host(),
            "fe80::2".parse().unwrap(),
            "fe80::99".parse().unwrap(),
            1,
            1,
            b"hi",
        ),
    ]);
    let (s, _) = run(&t, &mut f);
    assert_eq!(s.verdict[0], Verdict::Reply);
    assert_eq!(s.verdict[1], Verdict::Reply);
    assert_eq!(
        s.verdict[2],
        Verdict::Drop(DropReason::NoRoute),
        "link-local destinations are never forwarded"
    );
    let mut f = Frames::new(vec![
        udp4_to([224, 0, 0, 5], &from_host(), 10),
        udp4_to([255, 255, 255, 255], &from_host(), 10),
        build::udp6(
            &from_host(),
            "fe80::2".parse().unwrap(),
            "ff02::16".parse().unwrap(),
            1,
            2,
            &[0; 8],
        ),
    ]);
    let (s, _) = run(&t, &mut f);
    for i in 0..3 {
        assert_eq!(
            s.verdict[i],
            Verdict::Drop(DropReason::Local),
            "multicast {i} is not routed"
        );
    }
}

/// `t` with `ports` (a new value, as the control side makes one).
pub(in crate::worker) fn with_ports(t: &Tables, ports: Vec<PortInfo>) -> Tables {
    Tables::new(
        t.routing.clone(),
        std::sync::Arc::clone(&t.acl),
        ports.into(),
        std::sync::Arc::clone(&t.mgmt),
    )
}

#[test]
fn down_ports_neither_receive_nor_send() {
    let mut t = tables(vec![]);
    let mut ports = t.ports.to_vec();
    ports[1].carrier = false;
    t = with_ports(&t, ports);
    let mut f = Frames::new(vec![udp4_to([198, 51, 100, 7], &from_host(), 10)]);
    let (s, _) = run(&t, &mut f);
    assert_eq!(s.verdict[0], Verdict::Drop(DropReason::LinkDown));
    let mut ports = t.ports.to_vec();
    ports[0].admin_up = false;
    t = with_ports(&t, ports);
    let mut f = Frames::new(vec![udp4_to([10, 1, 0, 1], &from_host(), 10)]);
    let (s, _) = run(&t, &mut f);
    assert_eq!(s.verdict[0], Verdict::Drop(DropReason::LinkDown));
}

#[test]
fn classifier_actions_take_effect_before_routing() {
    let rule = |id: u32, dport: u16, actions: Vec<wire::Action>| {
        Change::RuleAdd(Box::new(wire::Rule {
            id: Some(id),
            priority: id,
            matches: wire::RuleMatch {
                dport: Some(wire::PortRange {
                    lo: dport,
                    hi: dport,
                }),
                ..Default::default()
            },
            actions,
        }))
    };
    let t = tables(vec![
        rule(
            1,
            53,
            vec![wire::Action::Mirror("a".into()), wire::Action::Drop],
        ),
        rule(2, 54, vec![wire::Action::Redirect("b".into())]),
    ]);
    let mut other = udp4_to([198, 51, 100, 7], &from_host(), 10);
    other[14 + 20 + 3] = 54; // dport 54
    other[14 + 20 + 6] = 0; // no UDP checksum
    other[14 + 20 + 7] = 0;
    let mut f = Frames::new(vec![udp4_to([198, 51, 100, 7], &from_host(), 10), other]);
    let (s, _) = run(&t, &mut f);
    assert_eq!(s.verdict[0], Verdict::Drop(DropReason::AclDrop));
    assert_eq!(f.mirrored, vec![(0, 0)]);
    assert_eq!(s.verdict[1], Verdict::Tx(1));
}

#[test]
fn a_rule_on_the_ae_ns_flag_sees_it_through_the_pipeline() {
    // Drop TCP with AE/NS (bit 8, beyond the flags byte) set, whatever the
    // low flags; the same SYN without it is routed.
    let t = tables(vec![Change::RuleAdd(Box::new(wire::Rule {
        id: Some(1),
        priority: 1,
        matches: wire::RuleMatch {
            tcp_flags: Some(wire::Masked16 {
                value: 0x100,
                mask: 0x100,
            }),
            ..Default::default()
        },
        actions: vec![wire::Action::Drop],
    }))]);
    let tcp = |flags: u16| {
        build::tcp4(
            &from_host(),
            Ipv4Addr::new(10, 1, 0, 2),
            Ipv4Addr::new(198, 51, 100, 7),
            1000,
            80,
            flags,
            b"",
        )
    };
    let mut f = Frames::new(vec![
        tcp(pkt::tcp_flags::NS | pkt::tcp_flags::SYN),
        tcp(pkt::tcp_flags::SYN),
    ]);
    let (s, _) = run(&t, &mut f);
    assert_eq!(s.verdict[0], Verdict::Drop(DropReason::AclDrop));
    assert_eq!(s.verdict[1], Verdict::Tx(1));
}

/// A rule at `prio` (id = prio) matching UDP port `dport` (any packet
/// without one).
pub(in crate::worker) fn prio_rule(
    prio: u32,
    dport: Option<u16>,
    actions: Vec<wire::Action>,
) -> Change {
    Change::RuleAdd(Box::new(wire::Rule {
        id: Some(prio),
        priority: prio,
        matches: wire::RuleMatch {
            dport: dport.map(|p| wire::PortRange { lo: p, hi: p }),
            ..Default::default()
        },
        actions,
    }))
}

/// UDP from the host to 198.51.100.7 (routed out of b) with this
/// destination port.
fn udp4_dport(dport: u16) -> Vec<u8> {
    build::udp4(
        &from_host(),
        Ipv4Addr::new(10, 1, 0, 2),
        Ipv4Addr::new(198, 51, 100, 7),
        1000,
        dport,
        &[0xab; 10],
    )
}

/// [`run`], keeping the rule counters: (scratch, tally, packets per rule
/// id).
fn run_counted(t: &Tables, frames: &mut Frames) -> (Scratch, Tally, Vec<(u32, u64)>) {
    let mut s = Scratch::default();
    let mut tally = Tally::default();
    let (set, mut writers) = acl::CounterSet::new(1, 1024);
    run_settled(&pipe(t), frames, &mut s, &mut tally, &mut writers[0]);
    let mut hits: Vec<(u32, u64)> = t
        .acl
        .entries()
        .map(|e| (e.id(), set.read(e.slot()).packets))
        .collect();
    hits.sort_unstable();
    (s, tally, hits)
}

/// Issue 11, finding 5: a `count` rule that matches everything, above a
/// `drop` rule, used to end evaluation and let the packet through.
#[test]
fn a_count_rule_above_a_drop_rule_does_not_bypass_it() {
    let t = tables(vec![
        prio_rule(10, None, vec![wire::Action::Count]),
        prio_rule(20, Some(22), vec![wire::Action::Drop]),
    ]);
    let mut f = Frames::new(vec![udp4_dport(22), udp4_dport(53)]);
    let (s, _, hits) = run_counted(&t, &mut f);
    assert_eq!(s.verdict[0], Verdict::Drop(DropReason::AclDrop));
    assert_eq!(s.verdict[1], Verdict::Tx(1), "no verdict: routed");
    // Both rules count the dropped packet; the count rule the other too.
    assert_eq!(hits, vec![(10, 2), (20, 1)]);
}

/// Every matched rule without a verdict applies, in precedence order:
/// two mirrors give two copies, the later DSCP rewrite is the one the
/// packet leaves with, and the deciding rule's actions come last.
#[test]
fn rules_without_a_verdict_all_apply_in_order_before_the_decider() {
    let t = tables(vec![
        prio_rule(
            10,
            None,
            vec![wire::Action::Mirror("a".into()), wire::Action::SetDscp(10)],
        ),
        prio_rule(20, Some(53), vec![wire::Action::Mirror("b".into())]),
        prio_rule(
            30,
            None,
            vec![wire::Action::SetDscp(30), wire::Action::Mark(3)],
        ),
        prio_rule(40, Some(53), vec![wire::Action::Redirect("b".into())]),
        prio_rule(50, Some(53), vec![wire::Action::Drop]),
    ]);
    let mut f = Frames::new(vec![udp4_dport(53), udp4_dport(80)]);
    let (s, _, hits) = run_counted(&t, &mut f);
    assert_eq!(s.verdict[0], Verdict::Tx(1), "redirected by rule 40");
    assert_eq!(s.verdict[1], Verdict::Tx(1), "routed out of b");
    assert_eq!(f.mirrored, vec![(0, 0), (0, 1), (1, 0)]);
    for frame in &f.f {
        assert_eq!(frame[14 + 1] >> 2, 30, "the later rewrite wins");
    }
    // Rule 50 is below the decider: not reached, not counted.
    assert_eq!(hits, vec![(10, 2), (20, 1), (30, 2), (40, 1), (50, 0)]);
}

/// The chain is bounded: after `acl::MAX_CONTINUE` rules without a
/// verdict, one more matching ends evaluation and the packet is dropped
/// (fail closed: the drop rule below is never bypassed).
#[test]
fn a_chain_of_rules_without_a_verdict_is_bounded() {
    let n = acl::MAX_CONTINUE as u32;
    let mut rules: Vec<Change> = (1..=n + 1)
        .map(|p| prio_rule(p, None, vec![wire::Action::Count]))
        .collect();
    rules.push(prio_rule(100, None, vec![wire::Action::Drop]));
    let t = tables(rules);
    let mut f = Frames::new(vec![udp4_dport(53)]);
    let (s, _, hits) = run_counted(&t, &mut f);
    assert_eq!(s.verdict[0], Verdict::Drop(DropReason::AclChainCut));
    let counted: Vec<u32> = hits.iter().filter(|h| h.1 == 1).map(|h| h.0).collect();
    assert_eq!(counted, (1..=n).collect::<Vec<_>>());
}

#[test]
fn the_host_path_takes_what_is_for_the_appliance_and_not_answered_here() {
    let t = tables(vec![]);
    let ours = Ipv4Addr::new(10, 1, 0, 1);
    let host = Ipv4Addr::new(10, 1, 0, 2);
    let bgp_syn = build::tcp4(&from_host(), host, ours, 40000, 179, 0x02, &[]);
    let to_other_port_address = build::tcp4(
        &from_host(),
        host,
        Ipv4Addr::new(10, 2, 0, 1),
        40000,
        22,
        0x02,
        &[],
    );
    let ospf_hello = build::ipv4(
        &FrameSpec {
            dst_mac: [1, 0, 0x5e, 0, 0, 5],
            ..from_host()
        },
        host,
        Ipv4Addr::new(224, 0, 0, 5),
        89,
        &[0; 40],
    );
    let site_multicast = udp4_to([239, 1, 1, 1], &from_host(), 10);
    let ping = build::icmp4_echo(&from_host(), host, ours, 7, 1, &[0; 8]);
    let forwarded = udp4_to([198, 51, 100, 7], &from_host(), 10);
    let mut arp_reply = build::arp_request(&from_host(), host, ours);
    arp_reply[21] = 2; // opcode: reply
    arp_reply[32..38].copy_from_slice(&MAC_A);
    let mld_query = build::icmp6(
        &FrameSpec {
            dst_mac: [0x33, 0x33, 0, 0, 0, 1],
            ..from_host()
        },
        "fe80::2".parse().unwrap(),
        "ff02::1".parse().unwrap(),
        130,
        0,
        &[0; 20],
    );
    let frames = || {
        Frames::new(vec![
            bgp_syn.clone(),
            to_other_port_address.clone(),
            ospf_hello.clone(),
            site_multicast.clone(),
            ping.clone(),
            forwarded.clone(),
            arp_reply.clone(),
            mld_query.clone(),
        ])
    };
    let mut f = frames();
    let (s, _) = run_with(&t, &mut f, true);
    let v = &s.verdict;
    assert_eq!(v[0], Verdict::Punt, "BGP to our address");
    assert_eq!(v[1], Verdict::Punt, "SSH to another port's address");
    assert_eq!(v[2], Verdict::Punt, "OSPF hello to 224.0.0.5");
    assert_eq!(
        v[3],
        Verdict::Drop(DropReason::Local),
        "no multicast routing"
    );
    assert_eq!(v[4], Verdict::Reply, "pings stay on the data path");
    assert_eq!(v[5], Verdict::Tx(1), "forwarding is untouched");
    assert_eq!(v[6], Verdict::Punt, "ARP replies reach the kernel too");
    assert_eq!(v[7], Verdict::Punt, "MLD (ff02::1) to the host");
    assert_eq!(s.n_learned, 1, "and the neighbour table still learns");

    // Without the host path, the same traffic is dropped as local.
    let mut f = frames();
    let (s, _) = run_with(&t, &mut f, false);
    let v = &s.verdict;
    for i in [0, 1, 2, 3, 7] {
        assert_eq!(v[i], Verdict::Drop(DropReason::Local), "frame {i}");
    }
    assert_eq!(v[6], Verdict::Consumed);
    assert_eq!(s.n_learned, 1);
}

/// The fast path's one test of the top 10 bits is the two prefix tests,
/// for every value of those bits.
#[test]
fn multicast_or_link_local_is_the_two_tests() {
    for top in 0..1u128 << 10 {
        for low in [0u128, 1, u128::MAX >> 10] {
            let a = top << 118 | low;
            assert_eq!(
                is_multicast_or_link_local_v6(a),
                is_multicast_v6(a) || is_link_local_v6(a),
                "{a:#x}"
            );
        }
    }
    assert!(is_multicast_or_link_local_v6(0xfe80 << 112));
    assert!(is_multicast_or_link_local_v6(0xff02 << 112 | 1));
    assert!(!is_multicast_or_link_local_v6(0xfec0 << 112));
    assert!(!is_multicast_or_link_local_v6(0x2001 << 112));
}
