//! Which rules go to which tree of a family.
//!
//! Groups (EffiCuts' lesson, and why rte_acl splits into several tries):
//! rules whose source prefix is short ("wild") would be replicated into
//! every child of a split on the source address, and likewise for the
//! destination. So rules with a specific source go to one tree, rules with
//! a wild source but a specific destination to a second, and rules wild in
//! both to a third.
//!
//! A group whose tree would exceed its budget
//! ([`TreeParams::max_replication`]) is split further by the fields its
//! rules leave wide ([`wide_part`]), each part its own tree, as EffiCuts
//! separates "small" from "large" rules; a part that no field separates and
//! that still exceeds the budget becomes one tree without splits, its
//! leaves scanned whole: slow lookups, but the memory stays linear in the
//! rules (`bench-results/acl_large.md`).

use std::sync::Arc;

use super::compiled::{BoxRule, Compiled, Leaf, Leaf4, Leaf6, D4, D6};
use super::rule::{Family, PortRange, RuleMatch};
use super::tree::{Tree, TreeParams};
use super::RuleEntry;

/// The trees of `entries` (in precedence order; a tree's rules are base
/// indexes into it), per family, in the order of [`group`] and its splits.
pub(crate) fn trees(
    entries: &[Arc<RuleEntry>],
    params: TreeParams,
) -> (Vec<Tree<D4, Leaf4>>, Vec<Tree<D6, Leaf6>>) {
    let mut r4: [Vec<u32>; GROUPS] = Default::default();
    let mut r6: [Vec<u32>; GROUPS] = Default::default();
    let shared4 = Shared::of(Family::V4, entries.iter().map(|e| &e.compiled));
    let shared6 = Shared::of(Family::V6, entries.iter().map(|e| &e.compiled));
    for (i, e) in entries.iter().enumerate() {
        let fam = e.compiled.fam;
        if fam != Family::V6 {
            r4[group(&e.compiled, shared4)].push(i as u32);
        }
        if fam != Family::V4 {
            r6[group(&e.compiled, shared6)].push(i as u32);
        }
    }
    let (mut v4, mut v6) = (Vec::new(), Vec::new());
    for g in r4.into_iter().filter(|g| !g.is_empty()) {
        trees_of(entries, g, BoxRule::v4, shared4, params, 0, &mut v4);
    }
    for g in r6.into_iter().filter(|g| !g.is_empty()) {
        trees_of(entries, g, BoxRule::v6, shared6, params, 0, &mut v6);
    }
    (v4, v6)
}

/// Groups per family ([`group`]): one tree each, unless one is split
/// ([`trees_of`]).
const GROUPS: usize = 3;

/// Group of a rule: 0 specific source, 1 wild source / specific
/// destination, 2 both wild. "Wild" = a prefix that fixes fewer than
/// [`SPECIFIC_BITS`] bits beyond what every rule of the family shares (see
/// [`Shared`]).
fn group(c: &Compiled, shared: Shared) -> usize {
    match (c.slen < shared.src_min, c.dlen < shared.dst_min) {
        (false, _) => 0,
        (true, false) => 1,
        (true, true) => 2,
    }
}

/// The steps of [`wide_part`].
const WIDE_STEPS: usize = 3;

/// Which part of a group's split rule `c` goes to at step `step`: the
/// fields it leaves wide, by which [`trees_of`] splits a group whose tree
/// is over its budget, one field after the other. Step 0 the ports (a range
/// of 1,024 or more), step 1 the addresses (fixing fewer than 8 bits past
/// the family's shared ones, half of [`SPECIFIC_BITS`]): up to four parts
/// each (a bit a field); step 2 the protocol (not exact): two.
fn wide_part(step: usize, c: &Compiled, shared: Shared) -> usize {
    let wide_port = |p: PortRange| p.hi - p.lo >= 1024;
    let wide_addr = |len: u8, min: u8| len + SPECIFIC_BITS / 2 < min;
    match step {
        0 => usize::from(wide_port(c.sport)) | usize::from(wide_port(c.dport)) << 1,
        1 => {
            usize::from(wide_addr(c.slen, shared.src_min))
                | usize::from(wide_addr(c.dlen, shared.dst_min)) << 1
        }
        _ => usize::from(c.proto.mask != 0xFF),
    }
}

/// Appends to `out` the trees of the rules `idx` (base indexes into
/// `entries`, in precedence order): one tree if it stays within its budget,
/// else the trees of the parts of the first [`wide_part`] step from `step`
/// on that separates them, else one tree without splits (see the module doc).
fn trees_of<const D: usize, L: Leaf<D>>(
    entries: &[Arc<RuleEntry>],
    idx: Vec<u32>,
    boxed: fn(&RuleMatch, u32) -> BoxRule<D>,
    shared: Shared,
    params: TreeParams,
    step: usize,
    out: &mut Vec<Tree<D, L>>,
) {
    let boxes = |idx: &[u32]| -> Vec<BoxRule<D>> {
        idx.iter()
            .map(|&i| boxed(&entries[i as usize].rule.matches, i))
            .collect()
    };
    if let Ok(t) = Tree::build(boxes(&idx), params) {
        out.push(t);
        return;
    }
    for step in step..WIDE_STEPS {
        let mut parts: [Vec<u32>; 4] = Default::default();
        for &i in &idx {
            parts[wide_part(step, &entries[i as usize].compiled, shared)].push(i);
        }
        if parts.iter().filter(|p| !p.is_empty()).count() > 1 {
            for p in parts.into_iter().filter(|p| !p.is_empty()) {
                trees_of(entries, p, boxed, shared, params, step + 1, out);
            }
            return;
        }
    }
    // Nothing separates these rules: leaves as large as they come (every
    // rule once, or once per first-level slice), without a budget.
    let flat = TreeParams {
        leaf_max: usize::MAX,
        max_replication: usize::MAX,
        ..params
    };
    match Tree::build(boxes(&idx), flat) {
        Ok(t) => out.push(t),
        Err(_) => unreachable!("a build without a budget cannot exceed it"),
    }
}

/// A prefix is specific if it fixes this many bits past the family's
/// shared leading bits: 16 is the half of an IPv4 address that, with
/// the first-level table's 16-bit slices, keeps a tree free of
/// replication (EffiCuts' "small" rules).
const SPECIFIC_BITS: u8 = 16;

/// Minimum specific prefix lengths of one family's rules. Without a
/// shared part this is /16 for both families; an IPv6 rule set lives in
/// a few allocations (every rule inside 2001:db8::/32, say), where a /40
/// is as wild as an IPv4 /8. So the bits every present prefix of the
/// field agrees on (up to the shortest such prefix) are added first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Shared {
    src_min: u8,
    dst_min: u8,
}

impl Shared {
    fn of<'a>(family: Family, rules: impl Iterator<Item = &'a Compiled> + Clone) -> Shared {
        let width = if family == Family::V4 { 32 } else { 128 };
        let common = |f: fn(&Compiled) -> (u128, u8)| {
            let mut first: Option<(u128, u8)> = None;
            let mut n = 0u8;
            for c in rules.clone().filter(|c| c.fam == family) {
                let (bits, len) = f(c);
                if len == 0 {
                    continue;
                }
                match first {
                    None => {
                        first = Some((bits, len));
                        n = len;
                    }
                    Some((b0, _)) => {
                        let agree = ((b0 ^ bits) << (128 - width as u32)).leading_zeros();
                        n = n.min(len).min(agree.min(width as u32) as u8);
                    }
                }
            }
            n.saturating_add(SPECIFIC_BITS).min(width)
        };
        Shared {
            src_min: common(|c| (c.src, c.slen)),
            dst_min: common(|c| (c.dst, c.dlen)),
        }
    }
}
