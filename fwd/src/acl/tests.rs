//! Classifier tests: random rule sets and update sequences against the
//! linear reference (proptest), ClassBench sets with their traces, batch
//! errors.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use proptest::prelude::*;

use super::reference::{effective, first_match};
use super::*;

// ---------- generators ----------

fn v4_prefix() -> impl Strategy<Value = IpPrefix> {
    (
        0u8..4,
        0u8..4,
        0u8..4,
        prop::sample::select(vec![0u8, 4, 8, 16, 23, 24, 30, 32]),
    )
        .prop_map(|(a, b, c, len)| {
            let bits = u32::from_be_bytes([10, a, b, c * 64]);
            let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
            IpPrefix::V4 {
                addr: Ipv4Addr::from(bits & mask),
                len,
            }
        })
}

fn v6_prefix() -> impl Strategy<Value = IpPrefix> {
    (
        0u16..3,
        0u16..3,
        0u16..3,
        prop::sample::select(vec![0u8, 16, 32, 33, 48, 64, 100, 128]),
    )
        .prop_map(|(a, b, c, len)| {
            let bits = u128::from(Ipv6Addr::new(0x2001, a, b, 0, 0, 0, c, 1));
            let mask = if len == 0 {
                0
            } else {
                u128::MAX << (128 - len)
            };
            IpPrefix::V6 {
                addr: Ipv6Addr::from(bits & mask),
                len,
            }
        })
}

fn ports() -> impl Strategy<Value = PortRange> {
    prop_oneof![
        3 => Just(PortRange::ANY),
        2 => prop::sample::select(vec![0u16, 53, 80, 443]).prop_map(PortRange::exact),
        2 => (0u16..100, 0u16..100).prop_map(|(a, b)| PortRange { lo: a.min(b), hi: a.max(b) }),
        1 => (0u16..2000).prop_map(|a| PortRange { lo: a, hi: u16::MAX }),
    ]
}

fn masked(vals: Vec<u8>) -> impl Strategy<Value = Masked8> {
    prop_oneof![
        3 => Just(Masked8::ANY),
        2 => prop::sample::select(vals).prop_map(Masked8::exact),
        1 => (any::<u8>(), any::<u8>()).prop_map(|(v, m)| Masked8 { value: v & m, mask: m }),
    ]
}

/// TCP flags matches over the 12-bit field: exact values with and without
/// AE/NS and reserved bits, masks over the high bits, arbitrary masks.
fn flags_masked() -> impl Strategy<Value = Masked16> {
    prop_oneof![
        3 => Just(Masked16::ANY),
        2 => prop::sample::select(vec![0x002u16, 0x012, 0x010, 0x102, 0x100, 0x800])
            .prop_map(|v| Masked16 { value: v, mask: TCP_FLAGS_MAX }),
        1 => prop::sample::select(vec![0x100u16, 0x000, 0xF00])
            .prop_map(|v| Masked16 { value: v, mask: 0xF00 }),
        1 => (0..=TCP_FLAGS_MAX, 0..=TCP_FLAGS_MAX)
            .prop_map(|(v, m)| Masked16 { value: v & m, mask: m }),
    ]
}

fn rule_match() -> impl Strategy<Value = RuleMatch> {
    let addrs = prop_oneof![
        6 => (prop::option::of(v4_prefix()), prop::option::of(v4_prefix())),
        2 => (prop::option::of(v6_prefix()), prop::option::of(v6_prefix())),
        1 => Just((None, None)),
    ];
    (
        addrs,
        masked(vec![6, 17, 1]),
        ports(),
        ports(),
        prop::option::of(0u16..3),
        prop::option::of(prop::sample::select(vec![0u16, 1, 4095])),
        prop::option::of(0u8..3),
        flags_masked(),
    )
        .prop_map(
            |((src, dst), proto, sport, dport, in_port, vlan, dscp, tcp_flags)| {
                // Both-None on the v4/v6 branches is fine: family-agnostic.
                RuleMatch {
                    src,
                    dst,
                    proto,
                    sport,
                    dport,
                    in_port,
                    vlan,
                    dscp,
                    tcp_flags,
                }
            },
        )
}

/// Priority, match, and which action list ([`actions_of`]).
pub(super) type Body = (u32, RuleMatch, u8);

pub(super) fn rule_body() -> impl Strategy<Value = Body> {
    (0u32..12, rule_match(), 0u8..6)
}

/// Half without a verdict (evaluation goes on past them), half with one.
fn actions_of(id: RuleId, kind: u8) -> Vec<Action> {
    match kind {
        0 => vec![Action::Mark { mark: id }],
        1 => vec![Action::Count, Action::Mirror { port: id as u16 }],
        2 => vec![Action::SetDscp { dscp: 1 }, Action::Mark { mark: id }],
        3 => vec![Action::Mark { mark: id }, Action::Permit],
        4 => vec![Action::Count, Action::Drop],
        _ => vec![Action::Police {
            rate: PoliceRate::Pps(10),
            burst: 1,
        }],
    }
}

pub(super) fn mk_rule(id: RuleId, (priority, matches, kind): Body) -> Rule {
    Rule {
        id,
        priority,
        matches,
        actions: actions_of(id, kind),
    }
}

pub(super) fn key() -> impl Strategy<Value = Key> {
    let v4 = (
        0u8..4,
        0u8..4,
        0u8..4,
        any::<u8>(),
        0u8..4,
        0u8..4,
        0u8..4,
        any::<u8>(),
    )
        .prop_map(|(a, b, c, d, e, f, g, h)| {
            (
                u32::from_be_bytes([10, a, b, c * 64 + d % 64]) as u128,
                u32::from_be_bytes([10, e, f, g * 64 + h % 64]) as u128,
                false,
            )
        });
    let v6 = (
        0u16..3,
        0u16..3,
        0u16..3,
        0u16..3,
        0u16..3,
        0u16..3,
        any::<u16>(),
    )
        .prop_map(|(a, b, c, d, e, f, x)| {
            (
                u128::from(Ipv6Addr::new(0x2001, a, b, 0, 0, 0, c, x % 3)),
                u128::from(Ipv6Addr::new(0x2001, d, e, 0, 0, 0, f, 1)),
                true,
            )
        });
    let port = prop_oneof![
        prop::sample::select(vec![0u16, 53, 80, 443, 2000, 65535]),
        0u16..120
    ];
    (
        prop_oneof![3 => v4, 1 => v6],
        prop::sample::select(vec![6u8, 17, 1, 0, 255]),
        port.clone(),
        port,
        0u16..3,
        prop::sample::select(vec![0u16, 1, 4095, VLAN_NONE]),
        0u8..3,
        prop_oneof![
            2 => prop::sample::select(vec![0u16, 0x002, 0x012, 0x010, 0x102, 0x100, 0x800]),
            1 => 0..=TCP_FLAGS_MAX,
        ],
    )
        .prop_map(
            |((src, dst, is_v6), proto, sport, dport, in_port, vlan, dscp, tcp_flags)| Key {
                src,
                dst,
                is_v6,
                proto,
                sport,
                dport,
                in_port,
                vlan,
                dscp,
                tcp_flags,
            },
        )
}

pub(super) fn small_cfg() -> Config {
    Config {
        capacity: 4096,
        tree: TreeParams {
            leaf_max: 2,
            fanout: 4,
            root_min_rules: 8,
            root_min_slices: 1,
            ..TreeParams::default()
        },
        overlay_soft_limit: 4,
        overlay_hard_limit: 12,
        sync_rebuild_batch: 10,
    }
}

/// Check a version against the rule set it should hold.
fn check_version(
    c: &Classifier,
    rules: &BTreeMap<RuleId, Rule>,
    keys: &[Key],
) -> Result<(), TestCaseError> {
    let mut out = vec![None; keys.len()];
    c.classify_burst(keys, &mut out);
    // The baseline instructions too, and AVX2 where the CPU has it (where
    // `classify_burst` took AVX-512, nothing else runs the AVX2 copy).
    let mut sse2 = vec![None; keys.len()];
    c.classify_burst_in(crate::arch::Sse2, keys, &mut sse2, &mut []);
    let avx2 = crate::arch::Avx2::detect().map(|a| {
        let mut v = vec![None; keys.len()];
        c.classify_burst_in(a, keys, &mut v, &mut []);
        v
    });
    for (i, ((k, got), got_sse2)) in keys.iter().zip(&out).zip(&sse2).enumerate() {
        let want = first_match(rules.values(), k).map(|r| r.id);
        let one = c.classify(k).map(|e| e.id());
        prop_assert_eq!(one, want, "classify {:?}", k);
        prop_assert_eq!(got.map(|e| e.id()), want, "classify_burst {:?}", k);
        prop_assert_eq!(
            got_sse2.map(|e| e.id()),
            want,
            "classify_burst_in(Sse2) {:?}",
            k
        );
        if let Some(avx2) = &avx2 {
            prop_assert_eq!(
                avx2[i].map(|e| e.id()),
                want,
                "classify_burst_in(Avx2) {:?}",
                k
            );
        }
        if let Some(e) = got {
            prop_assert_eq!(e.rule(), &rules[&e.id()]);
        }
        // The whole evaluation: rules without a verdict, then the decider.
        let (want, want_cut) = effective(rules.values(), k);
        let want: Vec<RuleId> = want.iter().map(|r| r.id).collect();
        let chain = c.chain(k, *got);
        let ids: Vec<RuleId> = chain.rules().map(|e| e.id()).collect();
        prop_assert_eq!(&ids, &want, "chain {:?}", k);
        prop_assert_eq!(chain.cut(), want_cut, "cut {:?}", k);
        let ids: Vec<RuleId> = c.evaluate(k).rules().map(|e| e.id()).collect();
        prop_assert_eq!(&ids, &want, "evaluate {:?}", k);
    }
    Ok(())
}

#[derive(Clone, Debug)]
enum OpSeed {
    Insert(Body),
    Delete(usize),
    Replace(usize, Body),
    /// Delete of an id that does not exist: the whole batch must fail.
    Bogus,
}

fn op_seed() -> impl Strategy<Value = OpSeed> {
    prop_oneof![
        5 => rule_body().prop_map(OpSeed::Insert),
        3 => any::<usize>().prop_map(OpSeed::Delete),
        2 => (any::<usize>(), rule_body()).prop_map(|(i, b)| OpSeed::Replace(i, b)),
        1 => Just(OpSeed::Bogus),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn static_sets_match_reference(
        bodies in prop::collection::vec(rule_body(), 0..120),
        keys in prop::collection::vec(key(), 1..200),
        fanout in 2usize..=16,
        leaf_max in 1usize..10,
        root in any::<bool>(),
        budget in prop::option::of(0usize..4),
    ) {
        // A small budget: groups split by their wide fields, and parts
        // without one built flat (see `Base`).
        let (max_replication, replication_slack) = budget.map_or((128, 1 << 16), |r| (r, 0));
        let tree_params = TreeParams {
            leaf_max,
            fanout,
            root_min_rules: if root { 1 } else { usize::MAX },
            root_min_slices: 1,
            max_replication,
            replication_slack,
        };
        let rules: BTreeMap<RuleId, Rule> =
            bodies.into_iter().enumerate().map(|(i, b)| (i as u32 * 7, mk_rule(i as u32 * 7, b))).collect();
        let batch: Vec<Update> = rules.values().cloned().map(Update::Insert).collect();
        // Tree only (synchronous build) ...
        let mut w = ClassifierWriter::new(Config { sync_rebuild_batch: 0, tree: tree_params, ..small_cfg() });
        let tree = w.apply(&batch).unwrap().version;
        prop_assert_eq!(tree.stats().overlay_rules, 0);
        check_version(&tree, &rules, &keys)?;
        // ... and overlay only.
        let mut w = ClassifierWriter::new(Config { overlay_hard_limit: usize::MAX, sync_rebuild_batch: usize::MAX, ..small_cfg() });
        let ov = w.apply(&batch).unwrap().version;
        prop_assert_eq!(ov.stats().overlay_rules, rules.len());
        check_version(&ov, &rules, &keys)?;
    }

    #[test]
    fn update_sequences_match_reference_and_persist(
        initial in prop::collection::vec(rule_body(), 0..40),
        batches in prop::collection::vec(prop::collection::vec(op_seed(), 1..14), 1..12),
        rebuild_at in prop::option::of(0usize..12),
        keys in prop::collection::vec(key(), 1..80),
    ) {
        let mut w = ClassifierWriter::new(small_cfg());
        let mut rules: BTreeMap<RuleId, Rule> = BTreeMap::new();
        let mut next_id = 0u32;
        let init: Vec<Update> = initial.into_iter().map(|b| {
            let r = mk_rule(next_id, b);
            next_id += 1;
            rules.insert(r.id, r.clone());
            Update::Insert(r)
        }).collect();
        let v = w.apply(&init).unwrap().version;
        let mut history: Vec<(Arc<Classifier>, BTreeMap<RuleId, Rule>)> = vec![(v, rules.clone())];
        let mut job = None;
        let mut retired_total = Vec::new();
        for (bi, seeds) in batches.into_iter().enumerate() {
            if rebuild_at == Some(bi) {
                job = Some(w.rebuild_job());
            }
            let mut staged = rules.clone();
            let mut batch = Vec::new();
            let mut bogus = false;
            for s in seeds {
                let ids: Vec<RuleId> = staged.keys().copied().collect();
                match s {
                    OpSeed::Insert(b) => {
                        let r = mk_rule(next_id, b);
                        next_id += 1;
                        staged.insert(r.id, r.clone());
                        batch.push(Update::Insert(r));
                    }
                    OpSeed::Delete(i) if !ids.is_empty() => {
                        let id = ids[i % ids.len()];
                        staged.remove(&id);
                        batch.push(Update::Delete(id));
                    }
                    OpSeed::Replace(i, b) if !ids.is_empty() => {
                        let r = mk_rule(ids[i % ids.len()], b);
                        staged.insert(r.id, r.clone());
                        batch.push(Update::Replace(r));
                    }
                    OpSeed::Bogus => {
                        bogus = true;
                        batch.push(Update::Delete(u32::MAX));
                    }
                    _ => {}
                }
            }
            let before = w.current().clone();
            match w.apply(&batch) {
                Ok(a) => {
                    prop_assert!(!bogus);
                    prop_assert_eq!(a.version.len(), staged.len());
                    retired_total.extend(a.retired_slots);
                    rules = staged;
                    history.push((a.version, rules.clone()));
                }
                Err(e) => {
                    prop_assert!(bogus, "unexpected error {}", e);
                    prop_assert_eq!(e.error, UpdateError::UnknownId(u32::MAX));
                    prop_assert!(Arc::ptr_eq(&before, w.current()));
                }
            }
            // Slots: live ones are distinct and never a retired-unreleased one.
            let mut live: Vec<Slot> = w.rules().map(|e| e.slot()).collect();
            live.sort_unstable();
            let n = live.len();
            live.dedup();
            prop_assert_eq!(live.len(), n);
            prop_assert!(retired_total.iter().all(|s| live.binary_search(s).is_err()));
            if bi % 3 == 2 {
                // Pretend every older version is reclaimed.
                let r = std::mem::take(&mut retired_total);
                w.release_slots(&r, None);
            }
        }
        if let Some(job) = job {
            // Install a rebuild made from an older snapshot: changes since
            // must survive.
            // (Unless a synchronous rebuild ran since: then it is stale and
            // refused.)
            if let Some(v) = w.install(job.run()) {
                history.push((v, rules.clone()));
            }
        }
        let v = w.compact();
        prop_assert_eq!(v.stats().overlay_rules, 0);
        history.push((v, rules.clone()));
        // Every version still answers for its own rule set.
        for (v, rs) in &history {
            check_version(v, rs, &keys)?;
        }
    }

    /// Many overlapping rules, most without a verdict, so chains are long
    /// and some are cut: a base built from part of the set, the rest (and
    /// replacements, deletions) in the overlay.
    #[test]
    fn chains_match_reference_across_base_and_overlay(
        bodies in prop::collection::vec((0u32..4, rule_match(), prop::sample::select(vec![0u8, 0, 1, 2, 2, 3, 4, 5])), 1..80),
        later in prop::collection::vec((0u32..4, rule_match(), 0u8..6), 0..30),
        deletes in prop::collection::vec(any::<usize>(), 0..10),
        keys in prop::collection::vec(key(), 1..120),
    ) {
        let mut w = ClassifierWriter::new(Config {
            overlay_hard_limit: usize::MAX,
            sync_rebuild_batch: usize::MAX,
            ..small_cfg()
        });
        let mut rules: BTreeMap<RuleId, Rule> = BTreeMap::new();
        for (i, b) in bodies.into_iter().enumerate() {
            rules.insert(i as u32, mk_rule(i as u32, b));
        }
        let batch: Vec<Update> = rules.values().cloned().map(Update::Insert).collect();
        w.apply(&batch).unwrap();
        let base = w.compact();
        prop_assert_eq!(base.stats().overlay_rules, 0);
        check_version(&base, &rules, &keys)?;
        // After the rebuild: inserts, replacements (of base rules) and
        // deletions, all in the overlay and the dead set.
        let mut batch = Vec::new();
        let n = rules.len() as u32;
        for (j, b) in later.into_iter().enumerate() {
            let id = if j % 2 == 0 { 1000 + j as u32 } else { j as u32 % n };
            let r = mk_rule(id, b);
            batch.push(if rules.contains_key(&id) { Update::Replace(r.clone()) } else { Update::Insert(r.clone()) });
            rules.insert(id, r);
        }
        for d in deletes {
            let ids: Vec<RuleId> = rules.keys().copied().collect();
            if let Some(&id) = ids.get(d % ids.len().max(1)) {
                rules.remove(&id);
                batch.push(Update::Delete(id));
            }
        }
        let v = w.apply(&batch).unwrap().version;
        check_version(&v, &rules, &keys)?;
        // The same rule set, fully rebuilt, answers the same.
        check_version(&w.compact(), &rules, &keys)?;
    }

    #[test]
    fn compiled_equals_definition(m in rule_match(), k in key()) {
        prop_assert_eq!(compiled::Compiled::new(&m).matches(&k), m.matches(&k));
    }
}

// ---------- batch errors ----------

fn r(id: RuleId, prio: u32) -> Rule {
    Rule {
        id,
        priority: prio,
        matches: RuleMatch::default(),
        actions: vec![],
    }
}

#[test]
fn a_rebuild_older_than_a_synchronous_one_is_never_installed() {
    let mut w = ClassifierWriter::new(small_cfg());
    w.apply(&(0..4).map(|i| Update::Insert(r(i, i))).collect::<Vec<_>>())
        .unwrap();
    let old_job = w.rebuild_job();
    // A batch of sync_rebuild_batch updates rebuilds the base now.
    let big: Vec<Update> = (100..110).map(|i| Update::Insert(r(i, i))).collect();
    let v = w.apply(&big).unwrap().version;
    assert_eq!(v.stats().overlay_rules, 0);
    // The older rebuild finishes afterwards: refused, nothing changes (it
    // would have swapped in the older tree and carried the 10 newer rules
    // in the overlay, past overlay_hard_limit 12 with two more).
    assert!(w.install(old_job.run()).is_none());
    assert!(Arc::ptr_eq(w.current(), &v));
    assert_eq!(w.current().stats().overlay_rules, 0);
    // A job taken after it still installs.
    let job = w.rebuild_job();
    w.apply(&[Update::Insert(r(200, 1))]).unwrap();
    let v2 = w.install(job.run()).expect("not stale");
    assert_eq!(v2.stats().overlay_rules, 1);
    assert_eq!(v2.len(), 15);
}

/// The tree searched first is the one whose matches spare the others
/// (`order.rs`): here a TCP wildcard rule near the top beats every specific
/// rule but one, so the both-wild tree goes first and the specific tree's
/// slices, whose rules all come later, are skipped; in the order of the
/// trees' first rules nearly every lookup searched both.
#[test]
fn the_tree_that_spares_the_others_is_searched_first() {
    let tcp = |src: Option<IpPrefix>| RuleMatch {
        src,
        proto: Masked8::exact(6),
        ..RuleMatch::default()
    };
    // 512 /24 sources in as many /16 slices (a root table), spread over
    // the address space so that they count as specific.
    let at = |k: u32| Ipv4Addr::new(10 + 7 * (k % 32) as u8, (k / 32 % 16) as u8, 0, 0);
    let v24 = |a: Ipv4Addr| Some(IpPrefix::V4 { addr: a, len: 24 });
    let mut rules = vec![
        Rule {
            matches: tcp(v24(at(0))),
            ..r(0, 0)
        },
        Rule {
            matches: tcp(None),
            ..r(1, 1)
        },
    ];
    for k in 0..512u32 {
        rules.push(Rule {
            matches: tcp(v24(at(k))),
            ..r(2 + k, 2 + k)
        });
    }
    let c = build(
        &rules,
        Config {
            sync_rebuild_batch: 0,
            ..Config::default()
        },
    );
    // IPv4: the specific tree and the both-wild one; IPv6: rule 1's.
    assert_eq!(c.stats().trees, 3);
    let keys: Vec<Key> = (0..1024u32)
        .map(|k| Key {
            src: u128::from(u32::from(at(k)) | 9),
            proto: 6,
            ..Key::default()
        })
        .collect();
    let trees: usize = keys.iter().map(|k| c.lookup_cost(k).0).sum();
    // One tree a lookup; two for the two keys in rule 0's slice.
    assert_eq!(trees, keys.len() + 2);
    let want: Vec<Option<RuleId>> = keys
        .iter()
        .map(|k| first_match(&rules, k).map(|r| r.id))
        .collect();
    assert_eq!(ids(&c, &keys), want);
    assert!(want.iter().all(|w| w.is_some_and(|id| id <= 1)));
}

#[test]
fn batch_errors_are_atomic_and_named() {
    let mut w = ClassifierWriter::new(Config {
        capacity: 3,
        ..Config::default()
    });
    w.apply(&[Update::Insert(r(1, 1))]).unwrap();
    let before = w.current().clone();
    let e = w
        .apply(&[Update::Insert(r(2, 1)), Update::Insert(r(1, 5))])
        .unwrap_err();
    assert_eq!(
        e,
        BatchError {
            index: 1,
            error: UpdateError::DuplicateId(1)
        }
    );
    assert!(Arc::ptr_eq(&before, w.current()));
    assert!(w.get(2).is_none());
    let e = w.apply(&[Update::Replace(r(9, 1))]).unwrap_err();
    assert_eq!(e.error, UpdateError::UnknownId(9));
    let mut bad = r(3, 1);
    bad.matches.dscp = Some(99);
    let e = w
        .apply(&[Update::Delete(1), Update::Insert(bad)])
        .unwrap_err();
    assert_eq!(e.index, 1);
    assert!(matches!(e.error, UpdateError::Invalid { id: 3, .. }));
    assert!(w.get(1).is_some());
    // Delete + re-insert of the same id in one batch is fine, new slot.
    let a = w
        .apply(&[Update::Delete(1), Update::Insert(r(1, 0))])
        .unwrap();
    assert_eq!(a.retired_slots, vec![0]);
    assert_eq!(w.get(1).unwrap().slot(), 1);
    // Capacity 3 rules (6 slots): slot 0 retired but not released.
    w.apply(&[Update::Insert(r(5, 1)), Update::Insert(r(6, 1))])
        .unwrap();
    let e = w.apply(&[Update::Insert(r(7, 1))]).unwrap_err();
    assert_eq!(e.error, UpdateError::Capacity(3));
    let (set, mut wr) = CounterSet::new(1, w.config().slots() as usize);
    wr[0].hit(0, 10, 1);
    w.release_slots(&a.retired_slots, Some(&set));
    assert_eq!(set.read(0), RuleStats::default());
    w.apply(&[Update::Delete(6), Update::Insert(r(7, 1))])
        .unwrap();
    assert_eq!(w.get(7).unwrap().slot(), 0);
}

/// Rule `id` matching destination port `port` only.
fn port_rule(id: RuleId, port: u16) -> Rule {
    Rule {
        matches: RuleMatch {
            dport: PortRange::exact(port),
            ..RuleMatch::default()
        },
        ..r(id, id)
    }
}

/// Finding 14: flush + `capacity` inserts in one batch needs fresh slots
/// while the old rules' slots are retired.
#[test]
fn a_full_capacity_rule_set_swaps_atomically() {
    const CAP: u32 = 2000;
    let mut w = ClassifierWriter::new(Config {
        capacity: CAP,
        ..Config::default()
    });
    let swap = |from: u32, to: u32| -> Vec<Update> {
        (from..from + CAP)
            .map(Update::Delete)
            .chain((to..to + CAP).map(|id| Update::Insert(port_rule(id, (id - to) as u16))))
            .collect()
    };
    let fill: Vec<Update> = (0..CAP)
        .map(|id| Update::Insert(port_rule(id, id as u16)))
        .collect();
    w.apply(&fill).unwrap();
    let e = w.apply(&[Update::Insert(port_rule(CAP, 1))]).unwrap_err();
    assert_eq!(e.error, UpdateError::Capacity(CAP));

    let first = w.apply(&swap(0, 10_000)).expect("a full swap in one batch");
    assert_eq!(first.retired_slots.len(), CAP as usize);
    let v = first.version.clone();
    assert_eq!(v.len(), CAP as usize);
    for p in [0u16, 1, 999, CAP as u16 - 1] {
        let k = Key {
            dport: p,
            ..Key::default()
        };
        assert_eq!(v.classify(&k).map(|e| e.id()), Some(10_000 + u32::from(p)));
    }
    assert!(w.rules().all(|e| e.slot() < w.config().slots()));

    // A second full swap before the first one's slots are released: a
    // clear, retryable refusal naming the first insert; nothing changes.
    let e = w.apply(&swap(10_000, 20_000)).unwrap_err();
    assert_eq!(
        e,
        BatchError {
            index: CAP as usize,
            error: UpdateError::SlotsPending { retired: CAP }
        }
    );
    assert!(Arc::ptr_eq(w.current(), &v));
    // Once reclaimed, it goes through.
    w.release_slots(&first.retired_slots, None);
    let second = w.apply(&swap(10_000, 20_000)).expect("after release");
    assert_eq!(second.version.len(), CAP as usize);
}

#[test]
fn replace_keeps_slot_and_precedence_ties_by_id() {
    let mut w = ClassifierWriter::new(Config::default());
    w.apply(&[Update::Insert(r(7, 5)), Update::Insert(r(3, 5))])
        .unwrap();
    let k = Key::default();
    assert_eq!(w.current().classify(&k).unwrap().id(), 3);
    let slot = w.get(3).unwrap().slot();
    let v = w.apply(&[Update::Replace(r(3, 6))]).unwrap().version;
    assert_eq!(v.classify(&k).unwrap().id(), 7);
    assert_eq!(w.get(3).unwrap().slot(), slot);
}

// ---------- ClassBench ----------
//
// The same checks run on two inputs: ClassBench text generated here (every
// run), and the published rule sets and traces (`corpus_*`, ignored unless the
// test command finds the corpora through `FWD_DATA`, see [`crate::corpus`]).

fn corpus(path: &str) -> String {
    let p = crate::corpus::require("classbench").join(path);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn build(rules: &[Rule], cfg: Config) -> Arc<Classifier> {
    let mut w = ClassifierWriter::new(cfg);
    let batch: Vec<Update> = rules.iter().cloned().map(Update::Insert).collect();
    w.apply(&batch).unwrap().version
}

/// `n` UDP rules with wild addresses, alternately exact on the source port
/// and wild on the destination port, and the other way round: no split of
/// a tree separates the two halves, so one tree over them replicates
/// quadratically (8,000 such rules built 944 MB before the budget).
fn crossed_port_rules(n: usize) -> Vec<Rule> {
    let mut seed = 0x9E37_79B9u64;
    let mut text = String::new();
    for i in 0..n {
        let p = order::splitmix(&mut seed) & 0xFFFF;
        let (sp, dp) = if i % 2 == 0 {
            (format!("{p} : {p}"), "0 : 65535".to_string())
        } else {
            ("0 : 65535".to_string(), format!("{p} : {p}"))
        };
        text += &format!("@0.0.0.0/0\t0.0.0.0/0\t{sp}\t{dp}\t0x11/0xFF\t0x0000/0x0000\t\n");
    }
    parse_rules(&text).unwrap()
}

/// Keys inside every third rule (the other port and the addresses random)
/// and as many with every field random: what [`crossed_port_rules`] tests
/// against the linear reference.
fn crossed_port_keys(rules: &[Rule]) -> Vec<Key> {
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || order::splitmix(&mut seed);
    let mut keys = Vec::new();
    for r in rules.iter().step_by(3) {
        let m = &r.matches;
        let mut k = Key {
            src: u128::from(next() as u32),
            dst: u128::from(next() as u32),
            sport: next() as u16,
            dport: next() as u16,
            proto: 17,
            ..Key::default()
        };
        if m.sport.lo == m.sport.hi {
            k.sport = m.sport.lo;
        } else {
            k.dport = m.dport.lo;
        }
        keys.push(k);
        keys.push(Key {
            src: u128::from(next() as u32),
            dst: u128::from(next() as u32),
            sport: next() as u16,
            dport: next() as u16,
            proto: [6, 17][next() as usize % 2],
            ..Key::default()
        });
    }
    keys
}

/// Asserts that `c` (built from `rules`) gives the linear reference's match
/// for every key of [`crossed_port_keys`]; returns (keys that matched a
/// rule, keys).
fn agrees_with_linear_on_crossed_keys(c: &Classifier, rules: &[Rule]) -> (usize, usize) {
    let keys = crossed_port_keys(rules);
    let lin = Linear::new(rules);
    let want: Vec<Option<RuleId>> = keys
        .iter()
        .map(|k| lin.classify(k).map(|i| i as u32))
        .collect();
    assert_eq!(ids(c, &keys), want);
    (want.iter().flatten().count(), keys.len())
}

#[test]
fn crossed_port_rules_are_split_within_the_budget() {
    let rules = crossed_port_rules(3000);
    let p = TreeParams::default();
    // One tree over them goes past its budget ...
    let boxes = (rules.iter().enumerate())
        .map(|(i, r)| compiled::BoxRule::v4(&r.matches, i as u32))
        .collect();
    assert!(tree::Tree::<{ compiled::D4 }, compiled::Leaf4>::build(boxes, p).is_err());
    // ... so the build makes one tree per half, each within it.
    let c = build(&rules, Config::default());
    let trees = c.tree_stats();
    assert_eq!(trees.len(), 2, "{trees:?}");
    for t in &trees {
        assert_eq!(t.rules, 1500, "{t:?}");
        assert!(t.nodes + t.leaf_rules <= p.max_replication * t.rules + p.replication_slack);
    }
    let (matched, keys) = agrees_with_linear_on_crossed_keys(&c, &rules);
    assert!(matched >= keys / 2, "{matched} of {keys}");
}

#[test]
fn rules_that_nothing_separates_go_past_the_budget_in_one_flat_tree() {
    let rules = crossed_port_rules(600);
    // A budget no split tree fits (one entry a rule, nothing for nodes).
    let cfg = Config {
        tree: TreeParams {
            max_replication: 1,
            replication_slack: 0,
            ..TreeParams::default()
        },
        sync_rebuild_batch: 0,
        ..Config::default()
    };
    let c = build(&rules, cfg);
    // The ports split the rules in two; then every part has the same wide
    // fields: each half is one leaf of all its rules.
    let trees = c.tree_stats();
    assert_eq!(trees.len(), 2, "{trees:?}");
    for t in &trees {
        assert_eq!((t.rules, t.leaves, t.leaf_rules), (300, 1, 300), "{t:?}");
    }
    agrees_with_linear_on_crossed_keys(&c, &rules);
}

fn tm_only() -> Config {
    Config {
        overlay_hard_limit: usize::MAX,
        sync_rebuild_batch: usize::MAX,
        ..Config::default()
    }
}

fn ids(c: &Classifier, keys: &[Key]) -> Vec<Option<RuleId>> {
    let mut out = vec![None; keys.len()];
    c.classify_burst(keys, &mut out);
    out.iter().map(|m| m.map(|e| e.id())).collect()
}

/// Every header of a first-match trace (6 fields) gets exactly its expected rule.
fn check_first_match_trace(rules: &[Rule], trace: &[TraceEntry]) {
    let c = build(rules, Config::default());
    let keys: Vec<Key> = trace.iter().map(|t| t.key).collect();
    let got = ids(&c, &keys);
    for (i, (t, g)) in trace.iter().zip(&got).enumerate() {
        let want = match t.tag {
            TraceTag::FirstMatch(id) => Some(id),
            TraceTag::NoMatch => None,
            TraceTag::Generator(_) => panic!("trace line {}: not a first-match trace", i + 1),
        };
        assert_eq!(*g, want, "trace line {}", i + 1);
    }
}

/// A generator trace (7 fields): a sample against the linear reference, the
/// generating rule matches its header and is never beaten by a later rule,
/// and an independently built tuple-space-only version agrees on all of it.
fn check_generator_trace(rules: &[Rule], trace: &[TraceEntry]) {
    let keys: Vec<Key> = trace.iter().map(|t| t.key).collect();
    let tree = build(rules, Config::default());
    let got = ids(&tree, &keys);
    let lin = Linear::new(rules);
    for (i, t) in trace.iter().enumerate().step_by(37) {
        assert_eq!(
            got[i],
            lin.classify(&t.key).map(|x| x as u32),
            "trace line {}",
            i + 1
        );
        if let TraceTag::Generator(g) = t.tag {
            assert!(rules[g as usize].matches.matches(&t.key));
            assert!(got[i].unwrap() <= g);
        }
    }
    let tm = build(rules, tm_only());
    assert_eq!(tm.stats().base_rules, 0);
    assert_eq!(ids(&tm, &keys), got);
}

/// Corners of every 7th rule's box, through a churn batch into the overlay
/// and a compaction, against the linear reference at each version.
fn check_churn(rules: &[Rule]) {
    // No trace ships for this set: headers are the low and high corners of
    // every 7th rule's box (plus the rule's exact proto).
    let keys: Vec<Key> = rules
        .iter()
        .step_by(7)
        .flat_map(|r| {
            let m = &r.matches;
            let (s, sl) = m.src.unwrap().to_bits();
            let (d, dl) = m.dst.unwrap().to_bits();
            let hs = if sl == 32 { 0 } else { u32::MAX >> sl } as u128;
            let hd = if dl == 32 { 0 } else { u32::MAX >> dl } as u128;
            [
                Key {
                    src: s,
                    dst: d,
                    sport: m.sport.lo,
                    dport: m.dport.lo,
                    proto: m.proto.value,
                    ..Key::default()
                },
                Key {
                    src: s | hs,
                    dst: d | hd,
                    sport: m.sport.hi,
                    dport: m.dport.hi,
                    proto: m.proto.value,
                    ..Key::default()
                },
            ]
        })
        .collect();
    let mut w = ClassifierWriter::new(Config::default());
    let batch: Vec<Update> = rules.iter().cloned().map(Update::Insert).collect();
    let v0 = w.apply(&batch).unwrap().version;
    let lin = Linear::new(rules);
    let want0: Vec<Option<RuleId>> = keys
        .iter()
        .map(|k| lin.classify(k).map(|x| x as u32))
        .collect();
    assert_eq!(ids(&v0, &keys), want0);
    // Churn through the overlay: delete every 6th rule, re-add a tenth of
    // them with better priority.
    let mut batch = Vec::new();
    let mut now: BTreeMap<RuleId, Rule> = rules.iter().map(|r| (r.id, r.clone())).collect();
    for r in rules.iter().step_by(6) {
        batch.push(Update::Delete(r.id));
        now.remove(&r.id);
    }
    for r in rules.iter().step_by(50) {
        let mut n = r.clone();
        n.id += 100_000;
        n.priority = r.priority / 2;
        batch.push(Update::Insert(n.clone()));
        now.insert(n.id, n);
    }
    let v1 = w.apply(&batch).unwrap().version;
    assert!(v1.stats().dead_base_rules > 0 && v1.stats().overlay_rules > 0);
    let now_rules: Vec<Rule> = now.values().cloned().collect();
    let lin1 = Linear::new(&now_rules);
    let want1: Vec<Option<RuleId>> = keys
        .iter()
        .map(|k| lin1.classify(k).map(|x| now_rules[x].id))
        .collect();
    assert_eq!(ids(&v1, &keys), want1);
    assert_eq!(ids(&w.compact(), &keys), want1);
    // The first version is untouched.
    assert_eq!(ids(&v0, &keys), want0);
}

#[test]
#[ignore = "needs the ClassBench corpora (FWD_DATA); deploy/test.sh runs it when present"]
fn corpus_hypersplit_acl1_full_trace_matches_expected() {
    let rules = parse_rules(&corpus("hypersplit/acl1_10K")).unwrap();
    let trace = parse_trace(&corpus("hypersplit/acl1_10K_trace")).unwrap();
    assert_eq!((rules.len(), trace.len()), (9603, 97000));
    check_first_match_trace(&rules, &trace);
}

#[test]
#[ignore = "needs the ClassBench corpora (FWD_DATA); deploy/test.sh runs it when present"]
fn corpus_lyxocs_acl2_trace_reference_sample_and_self_consistent() {
    let rules = parse_rules(&corpus("lyxocs/acl2_10k")).unwrap();
    let trace = parse_trace(&corpus("lyxocs/acl2_10k_trace")).unwrap();
    check_generator_trace(&rules, &trace);
}

#[test]
#[ignore = "needs the ClassBench corpora (FWD_DATA); deploy/test.sh runs it when present"]
fn corpus_lyxocs_acl1_with_churn() {
    check_churn(&parse_rules(&corpus("lyxocs/acl1_10k")).unwrap());
}

/// ClassBench-like text: rules clustered on a few address blocks (so boxes
/// nest and overlap), exact and ranged ports, TCP/UDP/any, in both file
/// variants, with traces of both kinds.
struct Generated {
    /// 5 space-separated fields (the hypersplit variant).
    plain: String,
    /// 6 TAB-separated fields with flags (the db_generator variant).
    tabbed: String,
}

fn generate_rules(n: usize, seed: u64) -> Generated {
    let mut rng = SplitMix(seed);
    let blocks: Vec<u32> = (0..12).map(|_| rng.next() as u32).collect();
    let mut plain = String::new();
    let mut tabbed = String::new();
    for _ in 0..n {
        // Sources may be wild; destinations are at least a /8, so that
        // random headers also miss every rule.
        let prefix = |rng: &mut SplitMix, min: u32| {
            let len = [0, 8, 16, 16, 24, 24, 24, 28, 32, 32][rng.below(10) as usize].max(min);
            let base = blocks[rng.below(blocks.len() as u64) as usize] ^ (rng.next() as u32 >> 12);
            let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
            format!("{}/{len}", Ipv4Addr::from(base & mask))
        };
        let (src, dst) = (prefix(&mut rng, 0), prefix(&mut rng, 8));
        let ports = |rng: &mut SplitMix| match rng.below(4) {
            0 => "0 : 65535".to_string(),
            1 => {
                let p = [22, 53, 80, 443, 8080][rng.below(5) as usize];
                format!("{p} : {p}")
            }
            2 => "1024 : 65535".to_string(),
            _ => {
                let lo = rng.below(60_000) as u16;
                format!("{lo} : {}", lo + rng.below(3000) as u16)
            }
        };
        let (sp, dp) = (ports(&mut rng), ports(&mut rng));
        let proto = ["0x06/0xFF", "0x11/0xFF", "0x00/0x00"][rng.below(3) as usize];
        let flags = ["0x0000/0x0000", "0x1000/0x1000", "0x0002/0x00FF"][rng.below(3) as usize];
        plain.push_str(&format!("@{src} {dst} {sp} {dp} {proto}\n"));
        tabbed.push_str(&format!("@{src}\t{dst}\t{sp}\t{dp}\t{proto}\t{flags}\t\n"));
    }
    Generated { plain, tabbed }
}

/// A header inside rule `r`'s box (random bits where it is wild).
fn point_in_rule(r: &Rule, rng: &mut SplitMix) -> Key {
    let m = &r.matches;
    let within = |p: Option<IpPrefix>, rng: &mut SplitMix| {
        let (a, l) = p.map_or((0, 0), |p| p.to_bits());
        let host = if l >= 32 { 0 } else { u32::MAX >> l };
        (a as u32 & !host) | (rng.next() as u32 & host)
    };
    let port =
        |p: PortRange, rng: &mut SplitMix| p.lo + rng.below(u64::from(p.hi - p.lo) + 1) as u16;
    Key {
        src: u128::from(within(m.src, rng)),
        dst: u128::from(within(m.dst, rng)),
        sport: port(m.sport, rng),
        dport: port(m.dport, rng),
        proto: if m.proto.mask == 0 {
            [6, 17, 1][rng.below(3) as usize]
        } else {
            m.proto.value
        },
        tcp_flags: (m.tcp_flags.value & m.tcp_flags.mask)
            | (rng.next() as u16 & !m.tcp_flags.mask & TCP_FLAGS_MAX),
        ..Key::default()
    }
}

/// A 6-field first-match trace (1-based, 0 for none) written with the
/// linear reference, mixing points inside rules with random headers.
fn first_match_trace(rules: &[Rule], n: usize, rng: &mut SplitMix) -> String {
    let lin = Linear::new(rules);
    let mut out = String::new();
    for i in 0..n {
        let k = if i % 5 == 4 {
            Key {
                src: u128::from(rng.next() as u32),
                dst: u128::from(rng.next() as u32),
                sport: rng.next() as u16,
                dport: rng.next() as u16,
                proto: [6, 17][rng.below(2) as usize],
                ..Key::default()
            }
        } else {
            point_in_rule(&rules[rng.below(rules.len() as u64) as usize], rng)
        };
        // This variant carries no flags column.
        let k = Key { tcp_flags: 0, ..k };
        let m = lin.classify(&k).map_or(0, |x| rules[x].id + 1);
        out.push_str(&format!(
            "{} {} {} {} {} {m}\n",
            k.src, k.dst, k.sport, k.dport, k.proto
        ));
    }
    out
}

/// A 7-field generator trace: each header's last column is its rule.
fn generator_trace(rules: &[Rule], n: usize, rng: &mut SplitMix) -> String {
    let mut out = String::new();
    for _ in 0..n {
        let g = rng.below(rules.len() as u64) as usize;
        let mut k = point_in_rule(&rules[g], rng);
        // The flags column carries the header's TCP flags in its high half.
        k.tcp_flags = rules[g].matches.tcp_flags.value & rules[g].matches.tcp_flags.mask;
        let flags = u32::from(k.tcp_flags) << 16;
        out.push_str(&format!(
            "{}\t{}\t{}\t{}\t{}\t{flags}\t{g}\n",
            k.src, k.dst, k.sport, k.dport, k.proto
        ));
    }
    out
}

struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        super::order::splitmix(&mut self.0)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[test]
fn generated_classbench_first_match_trace_matches_expected() {
    let mut rng = SplitMix(0xC1A5_5BE7);
    let rules = parse_rules(&generate_rules(3000, 1).plain).unwrap();
    assert_eq!(rules.len(), 3000);
    // The trace below goes through packed binary nodes too.
    let packed: usize = build(&rules, Config::default())
        .tree_stats()
        .iter()
        .map(|t| t.packed)
        .sum();
    assert!(packed > 0, "no packed node in the generated set");
    let trace = parse_trace(&first_match_trace(&rules, 20_000, &mut rng)).unwrap();
    assert!(trace.iter().any(|t| t.tag == TraceTag::NoMatch));
    assert!(trace
        .iter()
        .any(|t| matches!(t.tag, TraceTag::FirstMatch(_))));
    check_first_match_trace(&rules, &trace);
}

#[test]
fn generated_classbench_generator_trace_reference_sample_and_self_consistent() {
    let mut rng = SplitMix(0x7ACE);
    let rules = parse_rules(&generate_rules(3000, 2).tabbed).unwrap();
    let trace = parse_trace(&generator_trace(&rules, 20_000, &mut rng)).unwrap();
    assert!(trace
        .iter()
        .all(|t| matches!(t.tag, TraceTag::Generator(_))));
    check_generator_trace(&rules, &trace);
}

#[test]
fn generated_classbench_with_churn() {
    check_churn(&parse_rules(&generate_rules(3000, 3).plain).unwrap());
}

/// IPv4 prefix `p` as the IPv6 prefix 2001:db8:<p>::/(32 + len): the same
/// rule set inside one /32 allocation, as an IPv6 ACL usually is.
fn in_2001_db8(p: Option<IpPrefix>) -> Option<IpPrefix> {
    let (a, l) = p.map_or((0, 0), |p| p.to_bits());
    Some(IpPrefix::V6 {
        addr: Ipv6Addr::from((0x2001_0db8u128 << 96) | (a << 64)),
        len: 32 + l,
    })
}

#[test]
fn generated_classbench_as_ipv6_matches_and_keeps_its_groups() {
    let rules = parse_rules(&generate_rules(3000, 4).plain).unwrap();
    let rules6: Vec<Rule> = rules
        .iter()
        .map(|r| {
            let mut r = r.clone();
            r.matches.src = in_2001_db8(r.matches.src);
            r.matches.dst = in_2001_db8(r.matches.dst);
            r
        })
        .collect();
    let mut rng = SplitMix(0x6666);
    let keys: Vec<Key> = (0..20_000)
        .map(|_| point_in_rule(&rules[rng.below(rules.len() as u64) as usize], &mut rng))
        .collect();
    let hi = |a: u128| (0x2001_0db8u128 << 96) | (a << 64);
    let keys6: Vec<Key> = keys
        .iter()
        .map(|k| Key {
            src: hi(k.src) | u128::from(rng.next()),
            dst: hi(k.dst) | u128::from(rng.next()),
            is_v6: true,
            ..*k
        })
        .collect();
    let (c4, c6) = (
        build(&rules, Config::default()),
        build(&rules6, Config::default()),
    );
    assert_eq!(ids(&c6, &keys6), ids(&c4, &keys));
    // The rules all share 2001:db8::/32, so a /40 source is as wild as an
    // IPv4 /8: the same three groups as IPv4 (a fixed half-width threshold
    // of /64 put almost every rule into the "both wild" tree), and the
    // IPv6 trees stay within twice the IPv4 ones.
    let (s4, s6) = (c4.stats(), c6.stats());
    assert_eq!(s6.trees, s4.trees, "{s4:?} {s6:?}");
    assert!(s6.tree_nodes <= 2 * s4.tree_nodes, "{s4:?} {s6:?}");
    assert!(s6.mem_bytes <= 2 * s4.mem_bytes, "{s4:?} {s6:?}");
}
