//! The RIB's tests: a set model, the shape path compression keeps, the
//! questions the FIB update asks (`rib.rs`).

use super::*;
use crate::route::Target;

fn p4(s: &str) -> (u128, u8) {
    let p: super::super::Prefix4 = s.parse().unwrap();
    (p.addr() as u128, p.len())
}

#[test]
fn insert_get_remove_iter() {
    let mut r = Rib::<32, Target>::new();
    let items = [
        "0.0.0.0/0",
        "10.0.0.0/8",
        "10.0.0.0/16",
        "10.1.0.0/16",
        "10.1.2.0/24",
        "10.1.2.128/25",
        "10.1.2.129/32",
        "255.255.255.254/31",
        "255.255.255.255/32",
        "128.0.0.0/1",
    ];
    for (i, s) in items.iter().enumerate() {
        let (a, l) = p4(s);
        assert_eq!(r.insert(a, l, Target::NextHop(i as u32)), None);
    }
    assert_eq!(r.len(), items.len());
    let mut sorted: Vec<(u128, u8)> = items.iter().map(|s| p4(s)).collect();
    sorted.sort();
    let got: Vec<(u128, u8)> = r.iter().map(|(a, l, _)| (a, l)).collect();
    assert_eq!(got, sorted);

    let (a, l) = p4("10.1.2.0/24");
    assert_eq!(r.get(a, l), Some(Target::NextHop(4)));
    assert_eq!(r.lpm(p4("10.1.2.5/32").0, 32).map(|x| x.1), Some(24));
    assert_eq!(r.lpm(p4("10.1.2.129/32").0, 32).map(|x| x.1), Some(32));
    assert_eq!(r.lpm(p4("10.1.2.129/32").0, 31).map(|x| x.1), Some(25));
    assert_eq!(r.lpm(p4("11.0.0.0/32").0, 32).map(|x| x.1), Some(0));
    assert_eq!(r.lpm(p4("200.0.0.0/32").0, 32).map(|x| x.1), Some(1));

    let mut kids = Vec::new();
    r.maximal_children(p4("10.0.0.0/8").0, 8, &mut kids);
    assert_eq!(kids, vec![p4("10.0.0.0/16"), p4("10.1.0.0/16")]);
    r.maximal_children(0, 0, &mut kids);
    assert_eq!(kids, vec![p4("10.0.0.0/8"), p4("128.0.0.0/1")]);
    r.maximal_children(p4("10.1.2.0/24").0, 24, &mut kids);
    assert_eq!(kids, vec![p4("10.1.2.128/25")]);
    r.maximal_children(p4("255.255.255.254/31").0, 31, &mut kids);
    assert_eq!(kids, vec![p4("255.255.255.255/32")]);

    let before = r.clone();
    for s in items {
        let (a, l) = p4(s);
        assert!(r.remove(a, l).is_some(), "{s}");
        assert_eq!(r.remove(a, l), None);
    }
    assert_eq!(r.len(), 0);
    assert_eq!(r.nodes(), 1);
    assert_eq!(r.iter().count(), 0);
    // the old version is untouched
    assert_eq!(before.iter().count(), items.len());
    assert_eq!(
        r.mem(&mut HashSet::new()),
        Rib::<32, Target>::new().mem(&mut HashSet::new())
    );
}

#[test]
fn v6_extremes() {
    let mut r = Rib::<128, Target>::new();
    r.insert(0, 0, Target::Blackhole);
    r.insert(u128::MAX, 128, Target::Local);
    r.insert(u128::MAX - 1, 127, Target::Reject);
    let v: Vec<_> = r.iter().collect();
    assert_eq!(
        v,
        vec![
            (0, 0, Target::Blackhole),
            (u128::MAX - 1, 127, Target::Reject),
            (u128::MAX, 128, Target::Local)
        ]
    );
    assert_eq!(r.lpm(u128::MAX, 128).unwrap().1, 128);
    assert_eq!(r.lpm(u128::MAX, 127).unwrap().1, 127);
    assert_eq!(r.lpm(u128::MAX - 1, 128).unwrap().1, 127);
    assert_eq!(r.lpm(5, 128).unwrap().1, 0);
    let mut kids = Vec::new();
    r.maximal_children(0, 0, &mut kids);
    assert_eq!(kids, vec![(u128::MAX - 1, 127)]);
}

/// `area_of_present` answers what `get`, `lpm` and `maximal_children`
/// answer, for prefixes present and absent, and `insert_children` what
/// `maximal_children` answers after the insert, in both widths (nested prefixes crowded
/// into a small space so that every node depth and both ends are
/// exercised).
fn area_matches<const W: u32>(prefixes: &[(u128, u8)], queries: &[(u128, u8)]) {
    let mut r = Rib::<W, u32>::new();
    let (mut got, mut want) = (Vec::new(), Vec::new());
    for (i, &(a, l)) in prefixes.iter().enumerate() {
        let a = mask::<W>(a, l);
        r.insert_children(a, l, i as u32, &mut got);
        r.maximal_children(a, l, &mut want);
        assert_eq!(got, want, "insert {a:#x}/{l}");
    }
    for &(a, l) in queries {
        let a = mask::<W>(a, l);
        r.maximal_children(a, l, &mut want);
        // Before a removal: the prefix's own value, the strictly
        // shorter covering prefix's, its holes; nothing (and `out`
        // untouched) for an absent prefix.
        got.clear();
        got.push((1, 1));
        match r.area_of_present(a, l, &mut got) {
            Some((own, cover)) => {
                assert_eq!(Some(own), r.get(a, l), "{a:#x}/{l}");
                let shorter = l.checked_sub(1).and_then(|s| r.lpm(a, s)).map(|x| x.2);
                assert_eq!(cover, shorter, "{a:#x}/{l}");
                assert_eq!(got, want, "{a:#x}/{l}");
            }
            None => {
                assert_eq!(r.get(a, l), None, "{a:#x}/{l}");
                assert_eq!(got, [(1, 1)], "{a:#x}/{l}");
            }
        }
    }
}

/// The shape path compression keeps: every child deeper than its
/// parent, at the slot of its key's byte, its key the parent's below
/// it and nothing below its own depth; no node but the root without a
/// prefix and with fewer than two children; `nodes` counts them all.
fn check_shape<const W: u32, V: Copy + PartialEq>(r: &Rib<W, V>) {
    fn walk<const W: u32, V: Copy + PartialEq>(n: &Node<V>, root: bool) -> usize {
        if !root {
            assert!(!n.pfx.is_empty() || n.kids() >= 2, "a level to leave out");
        }
        assert_eq!(
            n.key(),
            Rib::<W, V>::base(n.key(), n.d()),
            "bits below the key"
        );
        let mut count = 1;
        for b in 0..SLOTS {
            if let Some(c) = n.kid(b) {
                assert!(c.d() > n.d());
                assert_eq!(Rib::<W, V>::base(c.key(), n.d()), n.key());
                assert_eq!(Rib::<W, V>::byte(c.key(), n.d()), b);
                count += walk::<W, V>(c, false);
            }
        }
        count
    }
    assert_eq!(walk::<W, V>(r.root(), true), r.nodes());
}

#[test]
fn long_prefixes_skip_the_levels_between() {
    let mut r = Rib::<128, u32>::new();
    let a = 0x2001_0db8_0000_0000_0000_0000_0000_0001u128;
    r.insert(a, 128, 1);
    // The root and the /128's node at depth 15: no node between.
    assert_eq!(r.nodes(), 2);
    check_shape(&r);
    // Another /128 parting from it at byte 10: one node where they
    // part, one for the new /128.
    let b = a ^ 1 << (8 * 5);
    r.insert(b, 128, 2);
    assert_eq!(r.nodes(), 4);
    check_shape(&r);
    // A /64 above both: a node at depth 7 between the root and byte 10's.
    r.insert(a & !((1 << 64) - 1), 64, 3);
    assert_eq!(r.nodes(), 5);
    check_shape(&r);
    assert_eq!(r.lpm(a, 128).map(|x| x.2), Some(1));
    assert_eq!(r.lpm(b, 128).map(|x| x.2), Some(2));
    assert_eq!(r.lpm(a ^ 1 << 8, 128).map(|x| (x.1, x.2)), Some((64, 3)));
    assert_eq!(r.get(a ^ 1 << 8, 128), None);
    let mut kids = Vec::new();
    r.maximal_children(a & !((1 << 64) - 1), 64, &mut kids);
    assert_eq!(kids, vec![(a, 128), (b, 128)]);
    // Each removal gives back what its insert took.
    r.remove(a & !((1 << 64) - 1), 64);
    assert_eq!(r.nodes(), 4);
    check_shape(&r);
    r.remove(b, 128);
    assert_eq!(r.nodes(), 2);
    check_shape(&r);
    assert_eq!(r.iter().collect::<Vec<_>>(), vec![(a, 128, 1)]);
    r.remove(a, 128);
    assert_eq!(r.nodes(), 1);
    assert_eq!(
        r.mem(&mut HashSet::new()),
        Rib::<128, u32>::new().mem(&mut HashSet::new())
    );
}

/// The first `l` bits of `a` (`W` = 128 or, right-aligned, 32).
fn mask<const W: u32>(a: u128, l: u8) -> u128 {
    if l == 0 {
        0
    } else {
        a & !((1u128 << (W - u32::from(l))) - 1) & (u128::MAX >> (128 - W))
    }
}

/// Inserts `adds` (prefixes, masked here), then removes the present
/// prefixes `dels` pick; checks at each step that the trie equals a set
/// model and keeps the shape of `check_shape`, that `lpm` of each query
/// at several lengths is the model's longest match, that the version taken
/// before the removals is untouched, that a trie emptied again costs what
/// a new one does, and that every node is freed once the versions are
/// gone.
fn follows_a_set_model<const W: u32>(
    adds: &[(u128, u8)],
    dels: &[usize],
    queries: &[u128],
) -> Result<(), proptest::test_runner::TestCaseError> {
    let live = super::super::larc::live_nodes();
    let mut r = Rib::<W, u32>::new();
    let mut model = std::collections::BTreeMap::new();
    for (i, &(a, l)) in adds.iter().enumerate() {
        let a = mask::<W>(a, l);
        let old = r.insert(a, l, i as u32);
        proptest::prop_assert_eq!(old, model.insert((a, l), i as u32));
        check_shape(&r);
    }
    let full = r.clone();
    let full_model = model.clone();
    for &d in dels {
        let keys: Vec<(u128, u8)> = model.keys().copied().collect();
        if keys.is_empty() {
            break;
        }
        let (a, l) = keys[d % keys.len()];
        proptest::prop_assert_eq!(r.remove(a, l), model.remove(&(a, l)));
        proptest::prop_assert_eq!(r.get(a, l), None);
        check_shape(&r);
    }
    let got: Vec<_> = r.iter().map(|(a, l, v)| ((a, l), v)).collect();
    let want: Vec<_> = model.iter().map(|(&k, &v)| (k, v)).collect();
    proptest::prop_assert_eq!(got, want);
    let got: Vec<_> = full.iter().map(|(a, l, v)| ((a, l), v)).collect();
    let want: Vec<_> = full_model.iter().map(|(&k, &v)| (k, v)).collect();
    proptest::prop_assert_eq!(got, want);
    for (&(a, l), &v) in &model {
        proptest::prop_assert_eq!(r.get(a, l), Some(v));
    }
    let w = W as u8;
    for &q in queries {
        for max in [w, w - 1, w / 2 + 3, w / 2, w / 2 - 1, 8, 0] {
            let want = model
                .iter()
                .filter(|(&(a, l), _)| l <= max && mask::<W>(q, l) == a)
                .max_by_key(|(&(_, l), _)| l)
                .map(|(&(a, l), &v)| (a, l, v));
            proptest::prop_assert_eq!(r.lpm(q, max), want);
        }
    }
    let keys: Vec<(u128, u8)> = model.keys().copied().collect();
    for (a, l) in keys {
        proptest::prop_assert!(r.remove(a, l).is_some());
        check_shape(&r);
    }
    proptest::prop_assert_eq!(r.nodes(), 1);
    proptest::prop_assert_eq!(
        r.mem(&mut HashSet::new()),
        Rib::<W, u32>::new().mem(&mut HashSet::new())
    );
    drop((r, full));
    proptest::prop_assert_eq!(super::super::larc::live_nodes(), live);
    Ok(())
}

proptest::proptest! {
    /// IPv6 prefixes of every length at addresses that share leading
    /// bytes to random depths, so that paths part, meet and are cut at
    /// every level (`follows_a_set_model`).
    #[test]
    fn compressed_paths_follow_a_set_model(
        adds in proptest::collection::vec((0u32..4, 0u32..16, proptest::prelude::any::<u128>(), 0u8..=128), 1..80),
        dels in proptest::collection::vec(0usize..1000, 0..80),
    ) {
        // The stem's first `shared` bytes, then one of four bytes, then
        // random bits.
        let stem = 0x2001_0db8_aaaa_bbbb_cccc_dddd_eeee_ffffu128;
        let addr = |x: u32, shared: u32, tail: u128| {
            let s = 8 * shared;
            mask::<128>(stem, s as u8) | ((u128::from(x) << 120 | tail >> 8) >> s)
        };
        let prefixes: Vec<_> = adds.iter().map(|&(x, sh, t, l)| (addr(x, sh, t), l)).collect();
        let queries: Vec<_> = adds.iter().map(|&(x, sh, t, _)| addr(x, sh, t)).collect();
        follows_a_set_model::<128>(&prefixes, &dels, &queries)?;
    }
}

proptest::proptest! {
    /// The subtree masks answer what a walk of the subtree's levels
    /// answers, for every tree index, on nodes with a few random
    /// prefixes and children (sparse, so that both answers occur); so does
    /// the test for what lies strictly below an index.
    #[test]
    fn subtree_masks_match_the_walk_by_level(
        pfx in proptest::collection::vec(1usize..512, 0..6),
        kids in proptest::collection::vec(0usize..256, 0..4),
    ) {
        let mut n = Node::<u32>::default();
        for &i in &pfx {
            n.pbits[i >> 6] |= 1 << (i & 63);
        }
        for &b in &kids {
            n.cbits[b >> 6] |= 1 << (b & 63);
        }
        for idx in 1..512 {
            proptest::prop_assert_eq!(
                n.subtree_nonempty(idx),
                n.subtree_nonempty_by_level(idx),
                "idx {}", idx
            );
            let below = if idx < 256 {
                n.subtree_nonempty_by_level(2 * idx) || n.subtree_nonempty_by_level(2 * idx + 1)
            } else {
                n.cbits[(idx - 256) >> 6] & 1 << (idx & 63) != 0
            };
            proptest::prop_assert_eq!(n.below_nonempty(idx), below, "below idx {}", idx);
        }
    }
}

proptest::proptest! {
    /// Children spread over every chunk of the root and of the nodes
    /// below it (empty chunks are dropped: a trie emptied again costs
    /// exactly what a new one does; `follows_a_set_model`).
    #[test]
    fn chunked_children_follow_a_set_model(
        adds in proptest::collection::vec((0u32..=255, 0u32..=255, 9u8..=24), 1..120),
        dels in proptest::collection::vec(0usize..1000, 0..120),
    ) {
        let prefixes: Vec<_> = adds.iter().map(|&(a, b, l)| (u128::from(a << 24 | b << 16), l)).collect();
        let queries: Vec<_> = prefixes.iter().map(|&(a, _)| a | 0x0101).collect();
        follows_a_set_model::<32>(&prefixes, &dels, &queries)?;
    }

    #[test]
    fn area_is_lpm_and_maximal_children(
        p4 in proptest::collection::vec((0u128..16, 0u8..=32), 0..60),
        q4 in proptest::collection::vec((0u128..16, 0u8..=32), 1..40),
        p6 in proptest::collection::vec((0u128..16, 0u8..=128), 0..60),
        q6 in proptest::collection::vec((0u128..16, 0u8..=128), 1..40),
    ) {
        // Spread 4 random bits over the address so that prefixes share
        // leading bits at every depth (top, middle bytes, last bits).
        let spread = |w: u32, x: u128| {
            let top = w - 1;
            (x & 1) << top | (x >> 1 & 1) << (top / 2) | (x >> 2 & 1) << 3 | (x >> 3 & 1)
                | if x & 0x8 != 0 { (1u128 << (w - 1)) - 1 } else { 0 }
        };
        let m4 = |v: &Vec<(u128, u8)>| v.iter().map(|&(x, l)| (spread(32, x) & 0xffff_ffff, l)).collect::<Vec<_>>();
        let m6 = |v: &Vec<(u128, u8)>| v.iter().map(|&(x, l)| (spread(128, x), l)).collect::<Vec<_>>();
        area_matches::<32>(&m4(&p4), &m4(&q4));
        area_matches::<128>(&m6(&p6), &m6(&q6));
        // Every present prefix as a query too.
        area_matches::<32>(&m4(&p4), &m4(&p4));
        area_matches::<128>(&m6(&p6), &m6(&p6));
    }
}
