//! Tuple-space overlay (TupleMerge-style relaxed tuples) holding the rules
//! changed since the base tree was built.
//!
//! A tuple is `(family, src len, dst len, sport exact?, dport exact?, proto
//! exact?)` with prefix lengths rounded *down* to a multiple of 8 (IPv4) or
//! 16 (IPv6) -- TupleMerge's relaxation, which keeps the number of tuples
//! small at the price of a few more rules per bucket. Every candidate is
//! verified with its full match, so the relaxation never changes results.
//! Tuples are probed in order of their best rule; the probe stops as soon as
//! the best match so far beats the next tuple's best (priority-sorted tuple
//! pruning).
//!
//! Persistence: the overlay is a `Vec<Arc<Tuple>>`; a batch clones the vector
//! of pointers and copies only the tuples it touches, once per batch.

use std::sync::Arc;

use super::compiled::Compiled;
use super::rule::{prefix_mask, Family, Key, RuleId};
use super::RuleEntry;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Sig {
    fam: u8,
    slen: u8,
    dlen: u8,
    /// bit 0 sport exact, bit 1 dport exact, bit 2 proto exact.
    exact: u8,
}

impl Sig {
    pub fn of(c: &Compiled) -> Sig {
        let (fam, step) = match c.fam {
            Family::Any => (0, 8),
            Family::V4 => (4, 8),
            Family::V6 => (6, 16),
        };
        let mut exact = 0;
        if c.sport.lo == c.sport.hi {
            exact |= 1;
        }
        if c.dport.lo == c.dport.hi {
            exact |= 2;
        }
        if c.proto.mask == 0xFF {
            exact |= 4;
        }
        Sig {
            fam,
            slen: c.slen / step * step,
            dlen: c.dlen / step * step,
            exact,
        }
    }

    fn width(self) -> u8 {
        if self.fam == 6 {
            128
        } else {
            32
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) struct OvRule {
    pub c: Compiled,
    pub order: u64,
    pub entry: Arc<RuleEntry>,
}

/// One tuple: its rules (sorted by precedence) and a hash index over the
/// rules' masked keys.
#[derive(Clone, Debug)]
pub(crate) struct Tuple {
    sig: Sig,
    smask: u128,
    dmask: u128,
    pmask: u64,
    rules: Vec<OvRule>,
    /// Bucket `h & (len-1)` covers `slots[heads[b]..heads[b+1]]`.
    heads: Vec<u32>,
    slots: Vec<u32>,
}

#[inline(always)]
fn mix(x: u64) -> u64 {
    let x = (x ^ (x >> 32)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x ^ (x >> 29)
}

impl Tuple {
    fn new(sig: Sig) -> Tuple {
        let w = sig.width();
        let mut pmask = 0u64;
        if sig.exact & 1 != 0 {
            pmask |= 0xFFFF;
        }
        if sig.exact & 2 != 0 {
            pmask |= 0xFFFF << 16;
        }
        if sig.exact & 4 != 0 {
            pmask |= 0xFF << 32;
        }
        Tuple {
            sig,
            smask: prefix_mask(w, sig.slen),
            dmask: prefix_mask(w, sig.dlen),
            pmask,
            rules: Vec::new(),
            heads: vec![0, 0],
            slots: Vec::new(),
        }
    }

    #[inline(always)]
    fn hash(&self, src: u128, dst: u128, ports: u64) -> u64 {
        let s = src & self.smask;
        let d = dst & self.dmask;
        let a = (s as u64) ^ ((s >> 64) as u64).rotate_left(17);
        let b = (d as u64) ^ ((d >> 64) as u64).rotate_left(41);
        mix(a.wrapping_mul(0xFF51_AFD7_ED55_8CCD) ^ b.rotate_left(23) ^ (ports & self.pmask))
    }

    fn rule_hash(&self, r: &OvRule) -> u64 {
        let ports =
            r.c.sport.lo as u64 | (r.c.dport.lo as u64) << 16 | (r.c.proto.value as u64) << 32;
        self.hash(r.c.src, r.c.dst, ports)
    }

    fn reindex(&mut self) {
        let nb = (self.rules.len() * 2).next_power_of_two().max(2);
        let mask = nb as u64 - 1;
        let hs: Vec<usize> = self
            .rules
            .iter()
            .map(|r| (self.rule_hash(r) & mask) as usize)
            .collect();
        let mut heads = vec![0u32; nb + 1];
        for &h in &hs {
            heads[h + 1] += 1;
        }
        for b in 0..nb {
            heads[b + 1] += heads[b];
        }
        let mut fill = heads.clone();
        let mut slots = vec![0u32; self.rules.len()];
        // Rules are in precedence order, so each bucket stays sorted.
        for (i, &h) in hs.iter().enumerate() {
            slots[fill[h] as usize] = i as u32;
            fill[h] += 1;
        }
        self.heads = heads;
        self.slots = slots;
    }

    fn best(&self) -> u64 {
        self.rules.first().map_or(u64::MAX, |r| r.order)
    }

    /// First rule of the key's bucket with order `< bound` that matches;
    /// with `after`, only rules with order `> after` (the continued lookup).
    /// Always inlined, so the first lookup's `None` folds away.
    #[inline(always)]
    fn lookup(&self, k: &Key, ports: u64, after: Option<u64>, bound: u64) -> Option<&OvRule> {
        let nb = self.heads.len() - 1;
        let b = (self.hash(k.src, k.dst, ports) & (nb as u64 - 1)) as usize;
        let (s, e) = (self.heads[b] as usize, self.heads[b + 1] as usize);
        for &i in &self.slots[s..e] {
            let r = &self.rules[i as usize];
            if r.order >= bound {
                return None;
            }
            if after.is_none_or(|a| r.order > a) && r.c.matches(k) {
                return Some(r);
            }
        }
        None
    }
}

/// The overlay of one version.
#[derive(Clone, Debug, Default)]
pub(crate) struct Overlay {
    /// Sorted by each tuple's best rule.
    tuples: Vec<Arc<Tuple>>,
    len: usize,
}

impl Overlay {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every rule in the overlay (dumps).
    pub fn rules(&self) -> impl Iterator<Item = &OvRule> + '_ {
        self.tuples.iter().flat_map(|t| t.rules.iter())
    }

    pub fn tuple_count(&self) -> usize {
        self.tuples.len()
    }

    pub fn mem_bytes(&self) -> usize {
        self.tuples
            .iter()
            .map(|t| {
                std::mem::size_of::<Tuple>()
                    + t.rules.capacity() * std::mem::size_of::<OvRule>()
                    + (t.heads.capacity() + t.slots.capacity()) * 4
            })
            .sum()
    }

    /// Best match with order `< bound`.
    #[inline]
    pub fn lookup(&self, k: &Key, bound: u64) -> Option<&OvRule> {
        self.best(k, None, bound)
    }

    /// Best match with order in `(after, bound)`: the continued lookup
    /// after a rule without a verdict. Tuples are still pruned by their
    /// best rule against `bound`; within a tuple, rules up to `after` are
    /// skipped.
    pub fn lookup_after(&self, k: &Key, after: u64, bound: u64) -> Option<&OvRule> {
        self.best(k, Some(after), bound)
    }

    /// Both lookups: with `after` absent (the first lookup, inlined) there
    /// is no lower bound to test.
    #[inline(always)]
    fn best(&self, k: &Key, after: Option<u64>, bound: u64) -> Option<&OvRule> {
        let ports = k.sport as u64 | (k.dport as u64) << 16 | (k.proto as u64) << 32;
        let mut best: Option<&OvRule> = None;
        let mut bound = bound;
        for t in &self.tuples {
            if t.best() >= bound {
                break;
            }
            let fam_ok = match t.sig.fam {
                0 => true,
                4 => !k.is_v6,
                _ => k.is_v6,
            };
            if !fam_ok {
                continue;
            }
            let found = match after {
                Some(a) if t.rules.last().is_none_or(|r| r.order <= a) => None,
                _ => t.lookup(k, ports, after, bound),
            };
            if let Some(r) = found {
                bound = r.order;
                best = Some(r);
            }
        }
        best
    }

    /// Burst form of [`Overlay::lookup`]: `bound[i]` is lowered to the
    /// order of each better match found, recorded in `hit[i]`. Tuple by
    /// tuple, so each tuple's masks and index stay hot across the burst.
    #[inline]
    pub fn lookup_burst<'a>(
        &'a self,
        keys: &[Key],
        bound: &mut [u64],
        hit: &mut [Option<&'a OvRule>],
    ) {
        for t in &self.tuples {
            let best = t.best();
            for ((k, b), h) in keys.iter().zip(bound.iter_mut()).zip(hit.iter_mut()) {
                let fam_ok = match t.sig.fam {
                    0 => true,
                    4 => !k.is_v6,
                    _ => k.is_v6,
                };
                if best >= *b || !fam_ok {
                    continue;
                }
                let ports = k.sport as u64 | (k.dport as u64) << 16 | (k.proto as u64) << 32;
                if let Some(r) = t.lookup(k, ports, None, *b) {
                    *b = r.order;
                    *h = Some(r);
                }
            }
        }
    }

    /// Start a batch of edits.
    pub fn edit(&self) -> OverlayEdit {
        OverlayEdit {
            tuples: self.tuples.clone(),
            touched: Vec::new(),
            len: self.len,
        }
    }
}

/// Edits of one batch: touched tuples are copied once (`Arc::make_mut`) and
/// re-indexed once at [`OverlayEdit::finish`].
pub(crate) struct OverlayEdit {
    tuples: Vec<Arc<Tuple>>,
    touched: Vec<Sig>,
    len: usize,
}

impl OverlayEdit {
    fn tuple_mut(&mut self, sig: Sig, create: bool) -> Option<&mut Tuple> {
        let pos = match self.tuples.iter().position(|t| t.sig == sig) {
            Some(p) => p,
            None if create => {
                self.tuples.push(Arc::new(Tuple::new(sig)));
                self.tuples.len() - 1
            }
            None => return None,
        };
        if !self.touched.contains(&sig) {
            self.touched.push(sig);
        }
        Some(Arc::make_mut(&mut self.tuples[pos]))
    }

    pub fn insert(&mut self, r: OvRule) {
        let sig = Sig::of(&r.c);
        let t = self.tuple_mut(sig, true).expect("created");
        let pos = t.rules.partition_point(|x| x.order < r.order);
        t.rules.insert(pos, r);
        self.len += 1;
    }

    /// Remove the rule `id` whose compiled match is `c`; true if found.
    pub fn remove(&mut self, c: &Compiled, id: RuleId) -> bool {
        let sig = Sig::of(c);
        let Some(t) = self.tuple_mut(sig, false) else {
            return false;
        };
        match t.rules.iter().position(|x| x.entry.rule.id == id) {
            Some(p) => {
                t.rules.remove(p);
                self.len -= 1;
                true
            }
            None => false,
        }
    }

    pub fn finish(mut self) -> Overlay {
        for sig in &self.touched {
            if let Some(t) = self.tuples.iter_mut().find(|t| t.sig == *sig) {
                Arc::make_mut(t).reindex();
            }
        }
        self.tuples.retain(|t| !t.rules.is_empty());
        self.tuples.sort_by_key(|t| t.best());
        Overlay {
            tuples: self.tuples,
            len: self.len,
        }
    }
}
