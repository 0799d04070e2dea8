//! The order in which a lookup searches a family's trees.
//!
//! A lookup keeps the best match so far and skips a tree whose bound for
//! the point ([`Tree::bound`] of its [`Tree::entry`]: the smallest rule
//! index below the subtree it would descend) does not beat it. So the
//! first tree searched decides how much the others are spared, and which
//! tree that should be depends on the set. On acl1_10k the specific-source
//! tree holds most first matches, and searching it first spares the
//! wildcard tree; on the 50k set of `bench_acl` (acl1, acl2 and hypersplit
//! acl1 together, then shifted copies) the both-wild tree holds early rules
//! that beat most of what the specific trees find, and searched first it
//! spares them, where the precedence order of the trees' first rules left
//! 1.8 trees a lookup (`bench-results/acl_large.md`).
//!
//! The build tries every order (three trees, one a group: six) on sample
//! points, one inside each of up to [`SAMPLE`] rules taken evenly over the
//! family, and keeps the one that descends the fewest trees; ties keep the
//! order of the trees' first rules. A family whose groups were split into
//! more than [`MAX_PERMUTED`] trees keeps the order of their first rules.
//! Traffic that mostly matches rules is what the sample stands for; for
//! traffic that matches nothing, or only the catch-all, the order matters
//! less (every tree whose slice holds any rule is searched in every order).

use super::compiled::{exact_word_of, BoxRule, Leaf};
use super::tree::Tree;

/// Sample points per family.
const SAMPLE: usize = 1024;

/// The most trees whose orders are all tried (120 orders).
const MAX_PERMUTED: usize = 5;

/// A point inside box `b` (flipped, as lookups take it) and its exact-field
/// word, drawn with `seed`. `at` is the box's first dimension after the
/// addresses (source port).
pub(crate) fn sample_point<const D: usize>(
    b: &BoxRule<D>,
    at: usize,
    seed: u64,
) -> ([i32; D], u64) {
    let mut s = seed;
    let mut x = [0u32; D];
    for (d, x) in x.iter_mut().enumerate() {
        let span = u64::from(b.hi[d].saturating_sub(b.lo[d])) + 1;
        *x = b.lo[d] + (splitmix(&mut s) % span) as u32;
        if d == at + 2 {
            // The protocol under its mask (a range cannot say it).
            let m = u32::from(b.proto.mask);
            *x = (*x & !m) | (u32::from(b.proto.value) & m);
        }
    }
    let m = b.flags.mask;
    let flags = (splitmix(&mut s) as u16 & !m & 0x0FFF) | (b.flags.value & m);
    let ex = exact_word_of(
        x[at + 2] as u8,
        x[at + 5] as u8,
        x[at + 3] as u16,
        x[at + 4] as u16,
        flags,
    );
    (x.map(super::compiled::flip), ex)
}

/// Up to [`SAMPLE`] boxes' indexes out of `n`, evenly spaced.
pub(crate) fn sample_indexes(n: usize) -> impl Iterator<Item = usize> {
    let step = n.div_ceil(SAMPLE).max(1);
    (0..n).step_by(step)
}

/// SplitMix64: the next number of state `s`.
pub(crate) fn splitmix(s: &mut u64) -> u64 {
    *s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *s;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Trees a lookup of `p` descends when it searches `trees` in `order`
/// (the skips of `lookup_trees`).
fn descents<const D: usize, L: Leaf<D>>(
    trees: &[Tree<D, L>],
    order: &[usize],
    p: &[i32; D],
    ex: u64,
) -> usize {
    let mut best = u32::MAX;
    let mut n = 0;
    for &k in order {
        let t = &trees[k];
        let Some(at) = t.entry_under(p, best) else {
            continue;
        };
        n += 1;
        let leaf = t.descend_from(at, p);
        if let Some(i) = t.scan_leaf(leaf, p, ex, None, 0, best) {
            best = i;
        }
    }
    n
}

/// Puts `trees` in the order that descends the fewest of them over
/// `sample` (see the module doc).
pub(crate) fn order_trees<const D: usize, L: Leaf<D>>(
    trees: &mut Vec<Tree<D, L>>,
    sample: &[([i32; D], u64)],
) {
    trees.sort_by_key(|t| t.first_idx());
    if trees.len() > MAX_PERMUTED {
        return;
    }
    let mut order: Vec<usize> = (0..trees.len()).collect();
    let cost = |o: &[usize]| -> usize {
        sample
            .iter()
            .map(|(p, ex)| descents(trees, o, p, *ex))
            .sum()
    };
    let (mut best, mut best_cost) = (order.clone(), cost(&order));
    while next_permutation(&mut order) {
        let c = cost(&order);
        if c < best_cost {
            (best, best_cost) = (order.clone(), c);
        }
    }
    let mut taken: Vec<Option<Tree<D, L>>> = trees.drain(..).map(Some).collect();
    trees.extend(
        best.iter()
            .map(|&k| taken[k].take().expect("a permutation")),
    );
}

/// The next permutation of `v` in lexicographic order; false after the last.
fn next_permutation(v: &mut [usize]) -> bool {
    let Some(i) = (1..v.len()).rev().find(|&i| v[i - 1] < v[i]) else {
        return false;
    };
    let j = (i..v.len())
        .rev()
        .find(|&j| v[j] > v[i - 1])
        .expect("v[i] qualifies");
    v.swap(i - 1, j);
    v[i..].reverse();
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permutations_are_all_visited_once() {
        let mut v = vec![0, 1, 2];
        let mut seen = vec![v.clone()];
        while next_permutation(&mut v) {
            seen.push(v.clone());
        }
        assert_eq!(seen.len(), 6);
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 6);
        assert!(!next_permutation(&mut [7]));
        assert!(!next_permutation(&mut []));
    }
}
