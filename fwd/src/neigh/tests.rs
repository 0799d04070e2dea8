//! The state machine transition by transition, the bounds, and a property
//! test that replays random operations against a model of what the caller
//! sees (packets in and out, published MACs).

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use proptest::prelude::*;

use super::*;

type Out = Vec<Action<u32>>;

const P: Port = 0;
const M1: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
const M2: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];

fn v4(n: u32) -> IpAddr {
    IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + n))
}

fn v6(n: u16) -> IpAddr {
    IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, n))
}

fn table() -> NeighTable<u32> {
    NeighTable::new(NeighConfig::default())
}

/// The actions of one call.
fn act(f: impl FnOnce(&mut Out)) -> Out {
    let mut out = Vec::new();
    f(&mut out);
    out
}

fn view(t: &NeighTable<u32>, now: u64, port: Port, ip: IpAddr) -> Option<EntryView> {
    t.entries(now)
        .into_iter()
        .find(|v| v.port == port && v.ip == ip)
}

fn state(t: &NeighTable<u32>, ip: IpAddr) -> Option<State> {
    view(t, 0, P, ip).map(|v| v.state)
}

fn bcast(ip: IpAddr) -> Action<u32> {
    Action::Probe {
        port: P,
        ip,
        unicast: None,
    }
}

fn ucast(ip: IpAddr, mac: [u8; 6]) -> Action<u32> {
    Action::Probe {
        port: P,
        ip,
        unicast: Some(mac),
    }
}

fn resolved(ip: IpAddr, mac: [u8; 6]) -> Action<u32> {
    Action::Resolved { port: P, ip, mac }
}

fn release(ip: IpAddr, mac: [u8; 6], pkts: Vec<u32>) -> Action<u32> {
    Action::Release {
        port: P,
        ip,
        mac,
        pkts,
    }
}

/// `ip` REACHABLE with `mac`, confirmed at `at`.
fn reachable(t: &mut NeighTable<u32>, at: u64, ip: IpAddr, mac: [u8; 6]) {
    let mut out = Vec::new();
    t.hold(at, P, ip, 0, &mut out);
    t.learn(at, P, ip, mac, Learn::Solicited, &mut out);
    assert_eq!(state(t, ip), Some(State::Reachable));
}

/// `ip` FAILED at 3_000 after an unanswered resolution started at 0.
fn failed(t: &mut NeighTable<u32>, ip: IpAddr) {
    let mut out = Vec::new();
    t.hold(0, P, ip, 0, &mut out);
    for now in [1_000, 2_000, 3_000] {
        t.tick(now, &mut out);
    }
    assert_eq!(state(t, ip), Some(State::Failed));
}

// ---------------------------------------------------------------------------
// INCOMPLETE.

#[test]
fn new_key_is_probed_at_once_and_holds_its_packets() {
    let mut t = table();
    let a = v4(1);
    assert_eq!(act(|o| t.hold(0, P, a, 1, o)), [bcast(a)]);
    assert_eq!(act(|o| t.hold(10, P, a, 2, o)), []);
    let v = view(&t, 10, P, a).unwrap();
    assert_eq!(
        (v.state, v.mac, v.probes, v.held, v.age_ms),
        (State::Incomplete, None, 1, 2, Some(10))
    );
    assert_eq!((t.held(), t.len()), (2, 1));
}

#[test]
fn incomplete_probes_every_retrans_then_fails_with_its_packets() {
    let mut t = table();
    let a = v6(1);
    t.hold(0, P, a, 1, &mut Vec::new());
    t.hold(0, P, a, 2, &mut Vec::new());
    assert_eq!(act(|o| t.tick(999, o)), []);
    assert_eq!(act(|o| t.tick(1_000, o)), [bcast(a)]);
    assert_eq!(act(|o| t.tick(2_000, o)), [bcast(a)]);
    assert_eq!(view(&t, 2_000, P, a).unwrap().probes, 3);
    assert_eq!(act(|o| t.tick(2_999, o)), []);
    assert_eq!(
        act(|o| t.tick(3_000, o)),
        [Action::Unreachable {
            port: P,
            ip: a,
            pkts: vec![1, 2]
        }]
    );
    let v = view(&t, 3_000, P, a).unwrap();
    assert_eq!(
        (v.state, v.mac, v.held, v.age_ms),
        (State::Failed, None, 0, Some(0))
    );
    assert_eq!(t.held(), 0);
}

#[test]
fn solicited_answer_resolves_reachable_then_releases_in_order() {
    let mut t = table();
    let a = v6(1);
    for p in 1..=3 {
        t.hold(0, P, a, p, &mut Vec::new());
    }
    assert_eq!(
        act(|o| t.learn(500, P, a, M1, Learn::Solicited, o)),
        [resolved(a, M1), release(a, M1, vec![1, 2, 3])]
    );
    let v = view(&t, 500, P, a).unwrap();
    assert_eq!(
        (v.state, v.mac, v.held, v.probes),
        (State::Reachable, Some(M1), 0, 0)
    );
    assert_eq!(t.held(), 0);
    // The resolution's probe timer is gone.
    assert_eq!(act(|o| t.tick(1_000, o)), []);
    assert_eq!(act(|o| t.tick(4_000, o)), []);
}

#[test]
fn unsolicited_or_gratuitous_answer_resolves_incomplete_as_stale() {
    for how in [Learn::Unsolicited, Learn::Gratuitous] {
        let mut t = table();
        let a = v4(1);
        t.hold(0, P, a, 1, &mut Vec::new());
        assert_eq!(
            act(|o| t.learn(200, P, a, M1, how, o)),
            [resolved(a, M1), release(a, M1, vec![1])],
            "{how:?}"
        );
        assert_eq!(state(&t, a), Some(State::Stale), "{how:?}");
    }
}

#[test]
fn only_unsolicited_facts_create_entries() {
    let mut t = table();
    let a = v4(1);
    assert_eq!(act(|o| t.learn(0, P, a, M1, Learn::Solicited, o)), []);
    assert_eq!(act(|o| t.learn(0, P, a, M1, Learn::Gratuitous, o)), []);
    assert!(t.is_empty());
    assert_eq!(
        act(|o| t.learn(0, P, a, M1, Learn::Unsolicited, o)),
        [resolved(a, M1)]
    );
    assert_eq!(state(&t, a), Some(State::Stale));
}

#[test]
fn no_probes_configured_fails_after_one_retrans() {
    let mut t = NeighTable::new(NeighConfig {
        mcast_probes: 0,
        ..NeighConfig::default()
    });
    let a = v4(1);
    assert_eq!(act(|o| t.hold(0, P, a, 1, o)), []);
    assert_eq!(
        act(|o| t.tick(1_000, o)),
        [Action::Unreachable {
            port: P,
            ip: a,
            pkts: vec![1]
        }]
    );
}

// ---------------------------------------------------------------------------
// REACHABLE, STALE, PROBE.

#[test]
fn reachable_turns_stale_silently_and_stays_usable() {
    let mut t = table();
    let a = v4(1);
    reachable(&mut t, 100, a, M1);
    assert_eq!(act(|o| t.tick(30_099, o)), []);
    assert_eq!(state(&t, a), Some(State::Reachable));
    assert_eq!(act(|o| t.tick(30_100, o)), []);
    let v = view(&t, 30_100, P, a).unwrap();
    assert_eq!(
        (v.state, v.mac, v.age_ms),
        (State::Stale, Some(M1), Some(30_000))
    );
    assert_eq!(
        act(|o| t.hold(30_200, P, a, 9, o)),
        [release(a, M1, vec![9])]
    );
}

#[test]
fn stale_probes_unicast_after_delay_and_an_answer_confirms_it() {
    let mut t = table();
    let a = v4(1);
    t.learn(0, P, a, M1, Learn::Unsolicited, &mut Vec::new());
    assert_eq!(act(|o| t.tick(4_999, o)), []);
    assert_eq!(act(|o| t.tick(5_000, o)), [ucast(a, M1)]);
    let v = view(&t, 5_000, P, a).unwrap();
    assert_eq!((v.state, v.mac, v.probes), (State::Probe, Some(M1), 1));
    assert_eq!(act(|o| t.tick(6_000, o)), [ucast(a, M1)]);
    assert_eq!(view(&t, 6_000, P, a).unwrap().probes, 2);
    // Usable while probing.
    assert_eq!(
        act(|o| t.hold(6_100, P, a, 1, o)),
        [release(a, M1, vec![1])]
    );
    // Same MAC: confirmed, nothing to publish.
    assert_eq!(act(|o| t.learn(6_500, P, a, M1, Learn::Solicited, o)), []);
    let v = view(&t, 6_500, P, a).unwrap();
    assert_eq!(
        (v.state, v.age_ms, v.probes),
        (State::Reachable, Some(0), 0)
    );
    assert_eq!(act(|o| t.tick(7_000, o)), []);
    assert_eq!(act(|o| t.tick(36_499, o)), []);
    assert_eq!(act(|o| t.tick(36_500, o)), []);
    assert_eq!(state(&t, a), Some(State::Stale));
}

#[test]
fn unanswered_probes_fail_and_withdraw() {
    let mut t = table();
    let a = v4(1);
    t.learn(0, P, a, M1, Learn::Unsolicited, &mut Vec::new());
    for now in [5_000, 6_000, 7_000] {
        assert_eq!(act(|o| t.tick(now, o)), [ucast(a, M1)]);
    }
    assert_eq!(act(|o| t.tick(7_999, o)), []);
    assert_eq!(
        act(|o| t.tick(8_000, o)),
        [Action::Withdrawn { port: P, ip: a }]
    );
    let v = view(&t, 8_000, P, a).unwrap();
    assert_eq!((v.state, v.mac), (State::Failed, None));
}

#[test]
fn a_new_mac_is_republished_and_the_same_one_is_not() {
    let mut t = table();
    let a = v4(1);
    reachable(&mut t, 0, a, M1);
    // The host repeating itself is no news: no action, still REACHABLE.
    assert_eq!(act(|o| t.learn(10, P, a, M1, Learn::Unsolicited, o)), []);
    assert_eq!(act(|o| t.learn(10, P, a, M1, Learn::Gratuitous, o)), []);
    assert_eq!(state(&t, a), Some(State::Reachable));
    // A new MAC without confirmation: published, but STALE.
    assert_eq!(
        act(|o| t.learn(20, P, a, M2, Learn::Gratuitous, o)),
        [resolved(a, M2)]
    );
    assert_eq!(state(&t, a), Some(State::Stale));
    assert_eq!(
        act(|o| t.learn(30, P, a, M1, Learn::Unsolicited, o)),
        [resolved(a, M1)]
    );
    // A confirmed new MAC: published and REACHABLE.
    assert_eq!(
        act(|o| t.learn(40, P, a, M2, Learn::Solicited, o)),
        [resolved(a, M2)]
    );
    let v = view(&t, 40, P, a).unwrap();
    assert_eq!((v.state, v.mac), (State::Reachable, Some(M2)));
}

#[test]
fn a_packet_for_a_resolved_key_is_released_at_once() {
    // The data path raced a publication: the packet comes back alone, to the
    // MAC published earlier, in every usable state.
    let mut t = table();
    let a = v4(1);
    reachable(&mut t, 0, a, M1);
    assert_eq!(act(|o| t.hold(1, P, a, 7, o)), [release(a, M1, vec![7])]);
    t.tick(30_000, &mut Vec::new());
    t.tick(35_000, &mut Vec::new());
    assert_eq!(state(&t, a), Some(State::Probe));
    assert_eq!(
        act(|o| t.hold(35_001, P, a, 8, o)),
        [release(a, M1, vec![8])]
    );
    t.set_static(P, a, Some(M2), &mut Vec::new());
    assert_eq!(
        act(|o| t.hold(35_002, P, a, 9, o)),
        [release(a, M2, vec![9])]
    );
    assert_eq!(t.held(), 0);
}

#[test]
fn a_late_tick_takes_one_step_per_entry() {
    let mut t = table();
    let a = v4(1);
    reachable(&mut t, 0, a, M1);
    // Due at 30_000 (STALE) and, from then, 35_000 (PROBE): a tick at
    // 100_000 goes STALE only, and the delay counts from it.
    assert_eq!(act(|o| t.tick(100_000, o)), []);
    assert_eq!(state(&t, a), Some(State::Stale));
    assert_eq!(act(|o| t.tick(104_999, o)), []);
    assert_eq!(act(|o| t.tick(105_000, o)), [ucast(a, M1)]);
    // One probe per late tick, never a burst.
    assert_eq!(act(|o| t.tick(200_000, o)), [ucast(a, M1)]);
}

// ---------------------------------------------------------------------------
// FAILED.

#[test]
fn failed_drops_packets_during_hold_down_then_restarts_resolution() {
    let mut t = table();
    let a = v4(1);
    failed(&mut t, a);
    assert_eq!(act(|o| t.hold(3_000, P, a, 1, o)), [Action::Drop(1)]);
    assert_eq!(act(|o| t.hold(5_999, P, a, 2, o)), [Action::Drop(2)]);
    assert_eq!(act(|o| t.tick(5_999, o)), []);
    assert_eq!(act(|o| t.hold(6_000, P, a, 3, o)), [bcast(a)]);
    let v = view(&t, 6_000, P, a).unwrap();
    assert_eq!(
        (v.state, v.probes, v.held, v.age_ms),
        (State::Incomplete, 1, 1, Some(0))
    );
    // The probes start over.
    assert_eq!(act(|o| t.tick(7_000, o)), [bcast(a)]);
    assert_eq!(act(|o| t.tick(8_000, o)), [bcast(a)]);
    assert_eq!(
        act(|o| t.tick(9_000, o)),
        [Action::Unreachable {
            port: P,
            ip: a,
            pkts: vec![3]
        }]
    );
}

#[test]
fn failed_is_forgotten_after_gc() {
    let mut t = table();
    let a = v4(1);
    failed(&mut t, a);
    assert_eq!(act(|o| t.tick(62_999, o)), []);
    assert_eq!(t.len(), 1);
    assert_eq!(act(|o| t.tick(63_000, o)), []);
    assert!(t.is_empty());
}

#[test]
fn learning_revives_failed() {
    for (how, revived) in [
        (Learn::Unsolicited, State::Stale),
        (Learn::Gratuitous, State::Stale),
        (Learn::Solicited, State::Reachable),
    ] {
        let mut t = table();
        let a = v4(1);
        failed(&mut t, a);
        assert_eq!(
            act(|o| t.learn(3_500, P, a, M1, how, o)),
            [resolved(a, M1)],
            "{how:?}"
        );
        let v = view(&t, 3_500, P, a).unwrap();
        assert_eq!((v.state, v.mac), (revived, Some(M1)), "{how:?}");
        // The gc timer of FAILED went with it.
        t.tick(63_000, &mut Vec::new());
        assert_eq!(t.len(), 1, "{how:?}");
    }
}

// ---------------------------------------------------------------------------
// Bounds.

#[test]
fn a_flood_to_one_address_holds_queue_len_newest_first() {
    let mut t = table();
    let a = v4(1);
    let mut out = Vec::new();
    for p in 0..10_000 {
        t.hold(0, P, a, p, &mut out);
    }
    assert_eq!(t.held(), 3);
    assert_eq!(out[0], bcast(a));
    let dropped: Vec<u32> = out[1..]
        .iter()
        .map(|x| match x {
            Action::Drop(p) => *p,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(dropped, (0..9_997).collect::<Vec<_>>());
    assert_eq!(
        act(|o| t.learn(1, P, a, M1, Learn::Solicited, o)),
        [resolved(a, M1), release(a, M1, vec![9_997, 9_998, 9_999])]
    );
}

#[test]
fn a_flood_to_many_addresses_is_bounded_by_max_held_and_max_entries() {
    let mut t = table();
    let mut out = Vec::new();
    for n in 0..10_000 {
        t.hold(0, P, v4(n), n, &mut out);
    }
    assert_eq!(t.len(), 4_096);
    assert_eq!(t.held(), 256);
    let probes = out
        .iter()
        .filter(|a| matches!(a, Action::Probe { .. }))
        .count();
    let drops = out.iter().filter(|a| matches!(a, Action::Drop(_))).count();
    assert_eq!(probes, 4_096);
    assert_eq!(drops, 10_000 - 256);
    assert_eq!(out.len(), probes + drops);
    // Every held packet comes back when the resolutions fail.
    out.clear();
    t.tick(1_000, &mut out);
    t.tick(2_000, &mut out);
    out.clear();
    t.tick(3_000, &mut out);
    let unreachable: usize = out
        .iter()
        .map(|a| match a {
            Action::Unreachable { pkts, .. } => pkts.len(),
            _ => 0,
        })
        .sum();
    assert_eq!((unreachable, t.held()), (256, 0));
}

#[test]
fn a_full_table_refuses_new_keys_until_one_fails_then_evicts_the_oldest_failed() {
    let mut t = NeighTable::new(NeighConfig {
        max_entries: 2,
        ..NeighConfig::default()
    });
    let (a, b, c) = (v4(1), v4(2), v4(3));
    t.hold(0, P, a, 1, &mut Vec::new());
    t.hold(500, P, b, 2, &mut Vec::new());
    assert_eq!(act(|o| t.hold(600, P, c, 3, o)), [Action::Drop(3)]);
    assert_eq!(act(|o| t.learn(600, P, c, M1, Learn::Unsolicited, o)), []);
    assert_eq!(t.len(), 2);
    // `a` fails at 3_000, `b` at 3_500.
    for now in [1_000, 1_500, 2_000, 2_500, 3_000, 3_500] {
        t.tick(now, &mut Vec::new());
    }
    assert_eq!(act(|o| t.hold(3_600, P, c, 4, o)), [bcast(c)]);
    let states: Vec<(IpAddr, State)> = t.entries(3_600).iter().map(|v| (v.ip, v.state)).collect();
    assert_eq!(states, [(b, State::Failed), (c, State::Incomplete)]);
}

#[test]
fn a_zero_queue_len_resolves_without_holding() {
    let mut t = NeighTable::new(NeighConfig {
        queue_len: 0,
        ..NeighConfig::default()
    });
    let a = v4(1);
    assert_eq!(act(|o| t.hold(0, P, a, 1, o)), [bcast(a), Action::Drop(1)]);
    assert_eq!(state(&t, a), Some(State::Incomplete));
    assert_eq!(
        act(|o| t.learn(1, P, a, M1, Learn::Solicited, o)),
        [resolved(a, M1)]
    );
}

// ---------------------------------------------------------------------------
// Statics.

#[test]
fn a_static_overrides_a_resolution_and_releases_its_packets() {
    let mut t = table();
    let a = v4(1);
    t.hold(0, P, a, 1, &mut Vec::new());
    t.hold(0, P, a, 2, &mut Vec::new());
    assert_eq!(
        act(|o| t.set_static(P, a, Some(M1), o)),
        [resolved(a, M1), release(a, M1, vec![1, 2])]
    );
    let v = view(&t, 0, P, a).unwrap();
    assert_eq!(
        (v.state, v.mac, v.age_ms),
        (State::Permanent, Some(M1), None)
    );
    assert_eq!((t.held(), t.len()), (0, 1));
    // The resolution's timers went with it.
    assert_eq!(act(|o| t.tick(10_000, o)), []);
}

#[test]
fn a_static_over_a_learned_entry_publishes_only_a_new_mac() {
    let mut t = table();
    let a = v4(1);
    reachable(&mut t, 0, a, M1);
    assert_eq!(act(|o| t.set_static(P, a, Some(M1), o)), []);
    assert_eq!(act(|o| t.set_static(P, a, Some(M2), o)), [resolved(a, M2)]);
    assert_eq!(act(|o| t.set_static(P, a, Some(M2), o)), []);
    assert_eq!(state(&t, a), Some(State::Permanent));
}

#[test]
fn statics_are_never_learned_over_probed_or_aged() {
    let mut t = table();
    let a = v6(1);
    assert_eq!(act(|o| t.set_static(P, a, Some(M1), o)), [resolved(a, M1)]);
    for how in [Learn::Solicited, Learn::Unsolicited, Learn::Gratuitous] {
        assert_eq!(act(|o| t.learn(0, P, a, M2, how, o)), []);
    }
    for now in [1_000, 100_000, 10_000_000] {
        assert_eq!(act(|o| t.tick(now, o)), []);
    }
    let v = view(&t, 10_000_000, P, a).unwrap();
    assert_eq!((v.state, v.mac), (State::Permanent, Some(M1)));
}

#[test]
fn removing_a_static_withdraws_it_and_leaves_learned_entries_alone() {
    let mut t = table();
    let (a, b) = (v4(1), v4(2));
    t.set_static(P, a, Some(M1), &mut Vec::new());
    reachable(&mut t, 0, b, M2);
    assert_eq!(
        act(|o| t.set_static(P, a, None, o)),
        [Action::Withdrawn { port: P, ip: a }]
    );
    assert_eq!(act(|o| t.set_static(P, a, None, o)), []);
    assert_eq!(act(|o| t.set_static(P, b, None, o)), []);
    assert_eq!(t.len(), 1);
    assert_eq!(state(&t, b), Some(State::Reachable));
    // Learning works again on the former static's key.
    assert_eq!(
        act(|o| t.learn(1, P, a, M2, Learn::Unsolicited, o)),
        [resolved(a, M2)]
    );
}

#[test]
fn statics_do_not_count_against_max_entries() {
    let mut t = NeighTable::new(NeighConfig {
        max_entries: 1,
        ..NeighConfig::default()
    });
    for n in 0..3 {
        t.set_static(P, v4(n), Some(M1), &mut Vec::new());
    }
    assert_eq!(act(|o| t.hold(0, P, v4(10), 1, o)), [bcast(v4(10))]);
    assert_eq!(act(|o| t.hold(0, P, v4(11), 2, o)), [Action::Drop(2)]);
    assert_eq!(t.len(), 4);
}

// ---------------------------------------------------------------------------
// Flush, remove_port.

#[test]
fn flush_withdraws_usable_entries_drops_held_packets_and_keeps_statics() {
    let mut t = table();
    let (a, b, c, d) = (v4(1), v4(2), v4(3), v4(4));
    failed(&mut t, c);
    reachable(&mut t, 3_000, a, M1);
    t.hold(3_000, P, b, 1, &mut Vec::new());
    t.hold(3_000, P, b, 2, &mut Vec::new());
    t.set_static(P, d, Some(M2), &mut Vec::new());
    assert_eq!(
        act(|o| t.flush(o)),
        [
            Action::Withdrawn { port: P, ip: a },
            Action::Drop(1),
            Action::Drop(2),
        ]
    );
    assert_eq!((t.len(), t.held()), (1, 0));
    assert_eq!(state(&t, d), Some(State::Permanent));
    // No timer of a flushed entry survives.
    for now in [1_000, 30_000, 100_000] {
        assert_eq!(act(|o| t.tick(now, o)), []);
    }
}

#[test]
fn remove_port_is_flush_for_one_port() {
    let mut t = table();
    let (a, b) = (v4(1), v6(1));
    let mut out = Vec::new();
    for port in [1, 2] {
        t.learn(0, port, a, M1, Learn::Unsolicited, &mut out);
        t.hold(0, port, b, u32::from(port), &mut out);
        t.set_static(port, v4(9), Some(M2), &mut out);
    }
    assert_eq!(
        act(|o| t.remove_port(1, o)),
        [Action::Withdrawn { port: 1, ip: a }, Action::Drop(1)]
    );
    let left: Vec<(Port, IpAddr, State)> = t
        .entries(0)
        .iter()
        .map(|v| (v.port, v.ip, v.state))
        .collect();
    assert_eq!(
        left,
        [
            (1, v4(9), State::Permanent),
            (2, a, State::Stale),
            (2, v4(9), State::Permanent),
            (2, b, State::Incomplete),
        ]
    );
    assert_eq!(t.held(), 1);
}

// ---------------------------------------------------------------------------
// Views and cost.

#[test]
fn entries_are_sorted_by_port_then_address() {
    let mut t = table();
    let mut out = Vec::new();
    t.hold(0, 3, v6(2), 1, &mut out);
    t.learn(0, 1, v6(1), M1, Learn::Unsolicited, &mut out);
    t.learn(0, 3, v4(7), M1, Learn::Unsolicited, &mut out);
    t.set_static(0, v4(9), Some(M2), &mut out);
    t.hold(0, 1, v4(1), 2, &mut out);
    let keys: Vec<(Port, IpAddr)> = t.entries(0).iter().map(|v| (v.port, v.ip)).collect();
    assert_eq!(
        keys,
        [(0, v4(9)), (1, v4(1)), (1, v6(1)), (3, v4(7)), (3, v6(2))]
    );
}

#[test]
fn a_tick_with_nothing_due_does_not_look_at_the_timers() {
    let mut t = table();
    for n in 0..4_096 {
        t.learn(0, P, v4(n), M1, Learn::Unsolicited, &mut Vec::new());
    }
    let mut out = Vec::new();
    for now in 0..5_000 {
        t.tick(now, &mut out);
    }
    assert_eq!((t.timer_looks(), out.len()), (0, 0));
    t.tick(5_000, &mut out);
    assert_eq!(out.len(), 4_096);
    let looks = t.timer_looks();
    // One look per expiry and one to find the next deadline.
    assert_eq!(looks, 4_097);
    for now in 5_001..6_000 {
        t.tick(now, &mut out);
    }
    assert_eq!((t.timer_looks(), out.len()), (looks, 4_096));
    // A confirmation moves the earliest deadline later: the next tick at the
    // old one looks once, finds nothing and learns the new earliest.
    for n in 0..4_096 {
        t.learn(5_500, P, v4(n), M1, Learn::Solicited, &mut Vec::new());
    }
    for now in 6_000..10_000 {
        t.tick(now, &mut out);
    }
    assert_eq!(t.timer_looks(), looks + 1);
}

// ---------------------------------------------------------------------------
// Random operations against a model of what the caller sees.

#[derive(Clone, Debug)]
enum Op {
    Hold(Port, usize),
    Learn(Port, usize, usize, Learn),
    Tick(u64),
    Static(Port, usize, Option<usize>),
    Flush,
    RemovePort(Port),
}

const IPS: usize = 6;
const MACS: [[u8; 6]; 3] = [M1, M2, [0x02, 0, 0, 0, 0, 0x03]];

fn ip_of(i: usize) -> IpAddr {
    if i.is_multiple_of(2) {
        v4(i as u32)
    } else {
        v6(i as u16)
    }
}

fn op() -> impl Strategy<Value = Op> {
    let port = 0..2u16;
    let ip = 0..IPS;
    let mac = 0..MACS.len();
    let how = prop_oneof![
        Just(Learn::Solicited),
        Just(Learn::Unsolicited),
        Just(Learn::Gratuitous)
    ];
    prop_oneof![
        8 => (port.clone(), ip.clone()).prop_map(|(p, i)| Op::Hold(p, i)),
        4 => (port.clone(), ip.clone(), mac.clone(), how).prop_map(|(p, i, m, h)| Op::Learn(p, i, m, h)),
        6 => (0..700u64).prop_map(Op::Tick),
        1 => (port.clone(), ip, prop::option::of(mac)).prop_map(|(p, i, m)| Op::Static(p, i, m)),
        1 => Just(Op::Flush),
        1 => port.prop_map(Op::RemovePort),
    ]
}

/// What the caller knows: the packets it handed in and did not get back, and
/// the MACs it published.
#[derive(Default)]
struct Model {
    outstanding: BTreeSet<u32>,
    published: BTreeMap<(Port, IpAddr), [u8; 6]>,
}

impl Model {
    /// Carries out one call's actions, checking each against what came before.
    fn apply(&mut self, out: Out, op: &Op) {
        let mut resolved_now = BTreeSet::new();
        for a in out {
            match a {
                Action::Probe { port, ip, unicast } => match unicast {
                    Some(mac) => assert_eq!(self.published.get(&(port, ip)), Some(&mac)),
                    None => assert!(!self.published.contains_key(&(port, ip))),
                },
                Action::Resolved { port, ip, mac } => {
                    let old = self.published.insert((port, ip), mac);
                    assert_ne!(old, Some(mac), "Resolved without a change");
                    resolved_now.insert((port, ip));
                }
                Action::Withdrawn { port, ip } => {
                    assert!(
                        self.published.remove(&(port, ip)).is_some(),
                        "Withdrawn unpublished"
                    );
                }
                Action::Release {
                    port,
                    ip,
                    mac,
                    pkts,
                } => {
                    assert_eq!(self.published.get(&(port, ip)), Some(&mac));
                    if !matches!(op, Op::Hold(..)) {
                        assert!(
                            resolved_now.contains(&(port, ip)),
                            "Release before its Resolved"
                        );
                    }
                    assert!(!pkts.is_empty());
                    self.back(pkts);
                }
                Action::Unreachable { port, ip, pkts } => {
                    assert!(!self.published.contains_key(&(port, ip)));
                    assert!(!pkts.is_empty());
                    self.back(pkts);
                }
                Action::Drop(p) => self.back([p]),
            }
        }
    }

    fn back(&mut self, pkts: impl IntoIterator<Item = u32>) {
        for p in pkts {
            assert!(
                self.outstanding.remove(&p),
                "packet {p} came back twice or was never in"
            );
        }
    }

    fn check(&self, t: &NeighTable<u32>, now: u64, cfg: &NeighConfig) {
        let views = t.entries(now);
        assert_eq!(self.outstanding.len(), t.held(), "packets in != out + held");
        assert_eq!(views.iter().map(|v| v.held).sum::<usize>(), t.held());
        assert!(t.held() <= cfg.max_held);
        let learned = views.iter().filter(|v| v.state != State::Permanent).count();
        assert!(learned <= cfg.max_entries);
        let mut published = BTreeMap::new();
        for v in &views {
            assert!(v.held <= cfg.queue_len);
            assert!(v.held == 0 || v.state == State::Incomplete);
            let usable = matches!(
                v.state,
                State::Reachable | State::Stale | State::Probe | State::Permanent
            );
            assert_eq!(usable, v.mac.is_some(), "{v:?}");
            if let Some(mac) = v.mac {
                published.insert((v.port, v.ip), mac);
            }
        }
        assert_eq!(
            published, self.published,
            "publications do not replay to the table"
        );
    }
}

fn run_ops(ops: Vec<Op>) {
    let cfg = NeighConfig {
        reachable_ms: 1_000,
        delay_ms: 300,
        retrans_ms: 100,
        mcast_probes: 2,
        ucast_probes: 2,
        failed_hold_ms: 250,
        gc_ms: 2_000,
        queue_len: 2,
        max_held: 5,
        max_entries: 4,
    };
    let mut t = NeighTable::new(cfg.clone());
    let mut m = Model::default();
    let mut now = 0;
    let mut next_pkt = 0;
    for op in &ops {
        let mut out = Vec::new();
        match *op {
            Op::Hold(port, i) => {
                m.outstanding.insert(next_pkt);
                t.hold(now, port, ip_of(i), next_pkt, &mut out);
                next_pkt += 1;
            }
            Op::Learn(port, i, mac, how) => t.learn(now, port, ip_of(i), MACS[mac], how, &mut out),
            Op::Tick(dt) => {
                now += dt;
                t.tick(now, &mut out);
            }
            Op::Static(port, i, mac) => {
                t.set_static(port, ip_of(i), mac.map(|j| MACS[j]), &mut out)
            }
            Op::Flush => t.flush(&mut out),
            Op::RemovePort(port) => t.remove_port(port, &mut out),
        }
        m.apply(out, op);
        m.check(&t, now, &cfg);
    }
    // Everything comes back, and everything published is withdrawn.
    let mut out = Vec::new();
    t.flush(&mut out);
    for v in t.entries(now) {
        t.set_static(v.port, v.ip, None, &mut out);
    }
    m.apply(out, &Op::Flush);
    assert!(m.outstanding.is_empty() && m.published.is_empty() && t.is_empty());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn every_packet_comes_back_once_and_publications_replay(ops in prop::collection::vec(op(), 1..120)) {
        run_ops(ops);
    }
}
