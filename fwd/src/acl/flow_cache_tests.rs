//! The flow cache answers exactly as the classifier does: random rule sets
//! and batches (overlay states, rebuilds, writers made anew), bursts drawn
//! from a small pool of keys so that flows repeat.

use std::sync::Arc;

use proptest::prelude::*;

use super::super::tests::{key, mk_rule, rule_body, small_cfg, Body};
use super::*;
use crate::acl::{ClassifierWriter, Rule, RuleId, RuleMatch, Update};

/// Same rule (the same entry of the same version) or both none.
fn same(a: Option<&RuleEntry>, b: Option<&RuleEntry>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => std::ptr::eq(a, b),
        (None, None) => true,
        _ => false,
    }
}

/// `keys` through `cache` and straight through `c`; every answer the same.
/// With `packed`, then the IPv4 keys among them as [`Flow4`]s through
/// [`Classifier::classify_burst_cached4`] and the others as [`Flow6`]s
/// through [`Classifier::classify_burst_cached6`], the same cache (which
/// the first pass filled): the same answers again.
fn check_burst(
    c: &Classifier,
    cache: &mut FlowCache,
    keys: &[Key],
    packed: bool,
) -> Result<(), TestCaseError> {
    let mut direct = vec![None; keys.len()];
    c.classify_burst(keys, &mut direct);
    let mut cached = vec![None; keys.len()];
    c.classify_burst_cached(keys, &mut cached, cache);
    for (i, (a, b)) in cached.iter().zip(&direct).enumerate() {
        prop_assert!(
            same(*a, *b),
            "key {:?}: cached {:?}, classifier {:?}",
            keys[i],
            a.map(|e| e.id()),
            b.map(|e| e.id())
        );
    }
    if !packed {
        return Ok(());
    }
    let (flows, at): (Vec<Flow4>, Vec<usize>) = keys
        .iter()
        .enumerate()
        .filter_map(|(i, k)| Flow4::of(k).map(|f| (f, i)))
        .unzip();
    let mut cached = vec![None; flows.len()];
    c.classify_burst_cached4(&flows, &mut cached, cache);
    let (flows6, at6): (Vec<Flow6>, Vec<usize>) = keys
        .iter()
        .enumerate()
        .filter_map(|(i, k)| Flow6::of(k).map(|f| (f, i)))
        .unzip();
    prop_assert_eq!(flows.len() + flows6.len(), keys.len());
    let mut cached6 = vec![None; flows6.len()];
    c.classify_burst_cached6(&flows6, &mut cached6, cache);
    for (a, &i) in cached.iter().zip(&at).chain(cached6.iter().zip(&at6)) {
        prop_assert!(
            same(*a, direct[i]),
            "key {:?} packed: cached {:?}, classifier {:?}",
            keys[i],
            a.map(|e| e.id()),
            direct[i].map(|e| e.id())
        );
    }
    Ok(())
}

/// The bursts of `bursts` (indexes into `pool`) through `cache`, then the
/// pool's first key twice: found the second time when the cache is on,
/// unless an overlay rule matched it (not kept) or the cache stands aside.
fn check_all(
    c: &Classifier,
    cache: &mut FlowCache,
    pool: &[Key],
    bursts: &[Vec<usize>],
    entries: usize,
) -> Result<(), TestCaseError> {
    for b in bursts {
        let keys: Vec<Key> = b.iter().map(|&i| pool[i % pool.len()]).collect();
        check_burst(c, cache, &keys, true)?;
    }
    let (mut found, mut code) = ([None], [0u32]);
    c.classify_burst_coded(&pool[..1], &mut found, &mut code);
    // (Not while it stands aside for traffic it kept missing.)
    let aside = cache.aside > 0;
    check_burst(c, cache, &pool[..1], false)?;
    let hits = cache.hits;
    check_burst(c, cache, &pool[..1], false)?;
    let kept = entries != 0 && code[0] != CODE_OVERLAY && !aside;
    prop_assert_eq!(cache.hits, hits + u64::from(kept));
    Ok(())
}

#[derive(Clone, Debug)]
enum Step {
    /// A batch: inserts of these bodies and deletes (by position).
    Batch(Vec<Body>, Vec<usize>),
    /// The tree rebuilt (the overlay folded in).
    Compact,
    /// A writer made anew with the same rules: its versions count from
    /// the start again.
    NewWriter,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (prop::collection::vec(rule_body(), 0..6), prop::collection::vec(any::<usize>(), 0..4))
            .prop_map(|(b, d)| Step::Batch(b, d)),
        1 => Just(Step::Compact),
        1 => Just(Step::NewWriter),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn answers_as_the_classifier_through_every_change(
        initial in prop::collection::vec(rule_body(), 0..40),
        steps in prop::collection::vec(step(), 1..10),
        pool in prop::collection::vec(key(), 1..24),
        bursts in prop::collection::vec(prop::collection::vec(any::<usize>(), 1..80), 2..5),
        entries in prop::sample::select(vec![0usize, 2, 4, 16, 8192]),
    ) {
        let mut cache = FlowCache::new(entries);
        let mut w = ClassifierWriter::new(small_cfg());
        let mut ids: Vec<RuleId> = Vec::new();
        let mut next = 0u32;
        let mut insert = |b: Body, ids: &mut Vec<RuleId>| {
            let r = mk_rule(next, b);
            ids.push(next);
            next += 1;
            Update::Insert(r)
        };
        let batch: Vec<Update> = initial.into_iter().map(|b| insert(b, &mut ids)).collect();
        let mut c = w.apply(&batch).unwrap().version;
        check_all(&c, &mut cache, &pool, &bursts, entries)?;
        for s in steps {
            match s {
                Step::Batch(adds, dels) => {
                    let mut batch: Vec<Update> = Vec::new();
                    for d in dels {
                        if !ids.is_empty() {
                            batch.push(Update::Delete(ids.swap_remove(d % ids.len())));
                        }
                    }
                    batch.extend(adds.into_iter().map(|b| insert(b, &mut ids)));
                    c = w.apply(&batch).unwrap().version;
                }
                Step::Compact => c = w.compact(),
                Step::NewWriter => {
                    let rules: Vec<Update> =
                        w.rules().map(|e| Update::Insert(e.rule().clone())).collect();
                    w = ClassifierWriter::new(small_cfg());
                    c = w.apply(&rules).unwrap().version;
                }
            }
            check_all(&c, &mut cache, &pool, &bursts, entries)?;
        }
        // Off, nothing is counted.
        prop_assert_eq!(entries == 0, cache.hits == 0 && cache.misses == 0);
    }
}

fn drop_all(id: RuleId, priority: u32, drop: bool) -> Rule {
    Rule {
        id,
        priority,
        matches: RuleMatch::default(),
        actions: if drop {
            vec![crate::acl::Action::Drop]
        } else {
            vec![]
        },
    }
}

#[test]
fn a_new_writer_whose_versions_count_again_is_never_answered_from_the_old_one() {
    let k = Key::default();
    let mut cache = FlowCache::new(16);
    // Every batch rebuilds the tree: base rules, which the cache keeps.
    let cfg = crate::acl::Config {
        sync_rebuild_batch: 0,
        ..small_cfg()
    };
    let mut a = ClassifierWriter::new(cfg);
    let va = a
        .apply(&[Update::Insert(drop_all(1, 1, true))])
        .unwrap()
        .version;
    let mut out = [None];
    va.classify_burst_cached(&[k], &mut out, &mut cache);
    va.classify_burst_cached(&[k], &mut out, &mut cache);
    assert_eq!((cache.hits, cache.misses), (1, 1));
    assert!(out[0].is_some_and(|e| !e.only_permits()));
    // Another writer, the same version number, other rules.
    let mut b = ClassifierWriter::new(cfg);
    let vb = b
        .apply(&[Update::Insert(drop_all(1, 1, false))])
        .unwrap()
        .version;
    assert_eq!(va.version(), vb.version());
    vb.classify_burst_cached(&[k], &mut out, &mut cache);
    assert_eq!((cache.hits, cache.misses), (1, 2));
    assert!(out[0].is_some_and(RuleEntry::only_permits));
    // The older version, still held, is still answered for itself.
    va.classify_burst_cached(&[k], &mut out, &mut cache);
    assert!(out[0].is_some_and(|e| !e.only_permits()));
}

#[test]
fn overlay_matches_are_not_kept_and_clones_share_entries() {
    let k = Key::default();
    let mut cache = FlowCache::new(16);
    // Everything in the overlay: never rebuilt.
    let cfg = crate::acl::Config {
        overlay_hard_limit: usize::MAX,
        sync_rebuild_batch: usize::MAX,
        ..small_cfg()
    };
    let mut w = ClassifierWriter::new(cfg);
    let v = w
        .apply(&[Update::Insert(drop_all(1, 1, true))])
        .unwrap()
        .version;
    let mut out = [None];
    for _ in 0..3 {
        v.classify_burst_cached(&[k], &mut out, &mut cache);
        assert!(out[0].is_some());
    }
    assert_eq!((cache.hits, cache.misses), (0, 3));
    // Rebuilt: a base rule now, kept; a clone of the version is the same
    // version for the cache.
    let v = w.compact();
    let twin: Arc<Classifier> = Arc::new((*v).clone());
    v.classify_burst_cached(&[k], &mut out, &mut cache);
    twin.classify_burst_cached(&[k], &mut out, &mut cache);
    assert_eq!((cache.hits, cache.misses), (1, 4));
    assert!(out[0].is_some_and(|e| e.id() == 1));
}

#[test]
fn traffic_it_keeps_missing_goes_straight_to_the_classifier_for_a_while() {
    let mut w = ClassifierWriter::new(crate::acl::Config {
        sync_rebuild_batch: 0,
        ..small_cfg()
    });
    let c = w
        .apply(&[Update::Insert(drop_all(1, 1, true))])
        .unwrap()
        .version;
    let mut cache = FlowCache::new(1 << 16);
    let mut out = [None; GROUP];
    let new_keys = |n: u32| -> Vec<Key> {
        (0..GROUP as u32)
            .map(|i| Key {
                src: u128::from(n * GROUP as u32 + i),
                ..Key::default()
            })
            .collect()
    };
    // A window of keys never seen again: no hit.
    let calls = WINDOW as usize / GROUP;
    for n in 0..calls {
        c.classify_burst_cached(&new_keys(n as u32), &mut out, &mut cache);
    }
    assert_eq!(cache.take_counts(), (0, u64::from(WINDOW)));
    // Now it stands aside: a key asked twice is not found the second time.
    let again = new_keys(u32::MAX / GROUP as u32 - 1);
    c.classify_burst_cached(&again, &mut out, &mut cache);
    c.classify_burst_cached(&again, &mut out, &mut cache);
    assert_eq!(cache.take_counts(), (0, 2 * GROUP as u64));
    assert!(out.iter().all(|m| m.is_some_and(|e| e.id() == 1)));
    // The same keys packed, and as the other table's: straight to the
    // classifier too, and answered.
    let packed: Vec<Flow4> = again.iter().filter_map(Flow4::of).collect();
    out = [None; GROUP];
    c.classify_burst_cached4(&packed, &mut out, &mut cache);
    assert_eq!(cache.take_counts(), (0, GROUP as u64));
    assert!(out.iter().all(|m| m.is_some_and(|e| e.id() == 1)));
    let wide: Vec<Flow6> = again
        .iter()
        .filter_map(|k| Flow6::of(&Key { is_v6: true, ..*k }))
        .collect();
    out = [None; GROUP];
    c.classify_burst_cached6(&wide, &mut out, &mut cache);
    assert_eq!(cache.take_counts(), (0, GROUP as u64));
    assert!(out.iter().all(|m| m.is_some_and(|e| e.id() == 1)));
    // Until its turn is over: then a repeated key is kept and found again.
    for _ in 4..ASIDE {
        c.classify_burst_cached(&again, &mut out, &mut cache);
    }
    let _ = cache.take_counts();
    c.classify_burst_cached(&again, &mut out, &mut cache);
    c.classify_burst_cached(&again, &mut out, &mut cache);
    assert_eq!(cache.take_counts(), (GROUP as u64, GROUP as u64));
}

#[test]
fn sizes_round_up_to_a_power_of_two_and_are_bounded() {
    for (asked, got) in [
        (0, 0),
        (1, 4),
        (1000, 1024),
        (32768, 32768),
        (FlowCache::MAX_ENTRIES * 4, FlowCache::MAX_ENTRIES),
    ] {
        let mut c = FlowCache::new(asked);
        assert_eq!(c.capacity(), got, "{asked}");
        c.prepare();
        assert_eq!(c.narrow.len(), got, "{asked}");
        assert_eq!(c.wide.len(), got, "{asked}");
    }
}

/// Two keys that differ in one field only (or in the family alone), and a
/// rule that tells them apart: through the cache, each keeps its own
/// answer however they take turns, in both tables (IPv4 keys packed in the
/// narrow entries, IPv6 ones in the wide). A field an entry dropped or
/// packed over another would answer one key with the other's rule.
#[test]
fn every_field_of_a_key_tells_entries_apart() {
    use crate::acl::{IpPrefix, Masked16, Masked8, PortRange};
    use std::net::{Ipv4Addr, Ipv6Addr};
    let v4 = Key {
        src: u128::from(u32::from(Ipv4Addr::new(10, 0, 0, 1))),
        dst: u128::from(u32::from(Ipv4Addr::new(10, 0, 0, 2))),
        is_v6: false,
        proto: 6,
        sport: 1000,
        dport: 80,
        in_port: 1,
        vlan: 5,
        dscp: 3,
        tcp_flags: 0x002,
    };
    let v6 = Key {
        src: u128::from(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1)),
        dst: u128::from(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2)),
        is_v6: true,
        ..v4
    };
    let prefix = |k: &Key, a: u128| {
        if k.is_v6 {
            IpPrefix::V6 {
                addr: Ipv6Addr::from(a),
                len: 128,
            }
        } else {
            IpPrefix::V4 {
                addr: Ipv4Addr::from(a as u32),
                len: 32,
            }
        }
    };
    // (what differs, the other key, a match that takes `k` and not it)
    type Case = (&'static str, Key, RuleMatch);
    let cases = |k: Key| -> Vec<Case> {
        let any = RuleMatch::default();
        vec![
            (
                "src",
                Key {
                    src: k.src ^ 4,
                    ..k
                },
                RuleMatch {
                    src: Some(prefix(&k, k.src)),
                    ..any
                },
            ),
            (
                "dst",
                Key {
                    dst: k.dst ^ 4,
                    ..k
                },
                RuleMatch {
                    dst: Some(prefix(&k, k.dst)),
                    ..any
                },
            ),
            (
                "proto",
                Key { proto: 17, ..k },
                RuleMatch {
                    proto: Masked8::exact(6),
                    ..any
                },
            ),
            (
                "sport",
                Key { sport: 1001, ..k },
                RuleMatch {
                    sport: PortRange::exact(1000),
                    ..any
                },
            ),
            (
                "dport",
                Key { dport: 81, ..k },
                RuleMatch {
                    dport: PortRange::exact(80),
                    ..any
                },
            ),
            (
                "in_port",
                Key { in_port: 2, ..k },
                RuleMatch {
                    in_port: Some(1),
                    ..any
                },
            ),
            (
                "vlan",
                Key { vlan: 6, ..k },
                RuleMatch {
                    vlan: Some(5),
                    ..any
                },
            ),
            (
                "dscp",
                Key { dscp: 4, ..k },
                RuleMatch {
                    dscp: Some(3),
                    ..any
                },
            ),
            (
                "tcp_flags",
                Key {
                    tcp_flags: 0x012,
                    ..k
                },
                RuleMatch {
                    tcp_flags: Masked16 {
                        value: 0x002,
                        mask: 0xfff,
                    },
                    ..any
                },
            ),
        ]
    };
    let mut all: Vec<Case> = cases(v4).into_iter().chain(cases(v6)).collect();
    // The family alone: the same low address bits, IPv4 and IPv6.
    let low6 = Key { is_v6: true, ..v4 };
    all.push((
        "family",
        low6,
        RuleMatch {
            src: Some(prefix(&v4, v4.src)),
            ..RuleMatch::default()
        },
    ));
    for (field, other, m) in all {
        let k = if other.is_v6 && field != "family" {
            v6
        } else {
            v4
        };
        let mut w = ClassifierWriter::new(crate::acl::Config {
            sync_rebuild_batch: 0,
            ..small_cfg()
        });
        let rules = [
            Update::Insert(Rule {
                matches: m,
                ..drop_all(1, 1, true)
            }),
            Update::Insert(drop_all(2, 2, false)),
        ];
        w.apply(&rules).unwrap();
        let c = w.compact();
        let mut cache = FlowCache::new(1 << 10);
        let mut out = [None];
        for (key, want) in [(k, 1), (other, 2), (k, 1), (other, 2), (other, 2), (k, 1)] {
            c.classify_burst_cached(&[key], &mut out, &mut cache);
            assert_eq!(out[0].map(|e| e.id()), Some(want), "{field}: {key:?}");
        }
        // Both found in the cache after their first lookups.
        assert_eq!(cache.take_counts(), (4, 2), "{field}");
    }
}

/// A cache of four entries a family is one IPv4 set of four ways: four
/// flows that take turns all stay; a fifth pushes out the oldest, and the
/// other four are still found.
#[test]
fn an_ipv4_set_keeps_four_flows_and_drops_the_oldest() {
    let mut w = ClassifierWriter::new(crate::acl::Config {
        sync_rebuild_batch: 0,
        ..small_cfg()
    });
    w.apply(&[Update::Insert(drop_all(1, 1, false))]).unwrap();
    let c = w.compact();
    let mut cache = FlowCache::new(4);
    let k = |i: u32| Key {
        src: u128::from(0x0a00_0000 + i),
        ..Key::default()
    };
    let mut out = [None; 4];
    let mut ask = |keys: &[Key], cache: &mut FlowCache| {
        c.classify_burst_cached(keys, &mut out[..keys.len()], cache);
        assert!(out[..keys.len()]
            .iter()
            .all(|m| m.is_some_and(|e| e.id() == 1)));
        cache.take_counts()
    };
    let four = [k(0), k(1), k(2), k(3)];
    assert_eq!(ask(&four, &mut cache), (0, 4));
    assert_eq!(ask(&four, &mut cache), (4, 0));
    assert_eq!(ask(&[k(4)], &mut cache), (0, 1));
    assert_eq!(ask(&[k(1), k(2), k(3), k(4)], &mut cache), (4, 0));
    assert_eq!(ask(&[k(0)], &mut cache), (0, 1));
}

proptest! {
    /// A key packed as a [`Flow4`] is the key again, for every IPv4 key
    /// whose addresses fit; every other key is a [`Flow6`], the key again.
    #[test]
    fn a_key_in_the_cache_form_is_the_key_again(k in key()) {
        let fits = !k.is_v6 && (k.src | k.dst) >> 32 == 0;
        prop_assert_eq!(Flow4::of(&k).map(|f| f.key()), fits.then_some(k));
        prop_assert_eq!(Flow6::of(&k).map(|f| f.key()), (!fits).then_some(k));
    }
}

/// An IPv4 key with bits above either address (no parser makes one, but a
/// `Key` can hold it) does not pack: its words would lose them; it is kept
/// in the other table's form.
#[test]
fn an_ipv4_key_with_bits_above_its_addresses_does_not_pack() {
    let k = Key {
        src: 0x0a00_0001,
        dst: 0x0a00_0002,
        proto: 17,
        sport: 1,
        dport: 2,
        ..Key::default()
    };
    assert_eq!(Flow4::of(&k).map(|f| f.key()), Some(k));
    assert!(Flow6::of(&k).is_none());
    for (src, dst) in [(1u128 << 32 | 1, 2), (1, 1u128 << 100 | 2)] {
        let odd = Key { src, dst, ..k };
        assert!(Flow4::of(&odd).is_none());
        assert_eq!(Flow6::of(&odd).map(|f| f.key()), Some(odd));
    }
    assert!(Flow4::of(&Key { is_v6: true, ..k }).is_none());
}
