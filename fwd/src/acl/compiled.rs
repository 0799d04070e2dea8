//! Rules lowered to the forms the lookup structures use.
//!
//! * [`Compiled`]: masks precomputed, one function [`Compiled::matches`]
//!   equivalent to [`RuleMatch::matches`] (checked by the proptests).
//! * [`BoxRule`]: the rule as a box in `D` `u32` dimensions for the decision
//!   tree, plus the two fields a box cannot express exactly (`proto` and
//!   `tcp_flags` under arbitrary masks), which the leaf checks separately.

use crate::arch;

use super::rule::{prefix_mask, Family, Key, Masked16, Masked8, PortRange, RuleMatch};

/// A match with precomputed masks.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Compiled {
    pub src: u128,
    pub smask: u128,
    pub dst: u128,
    pub dmask: u128,
    pub fam: Family,
    pub proto: Masked8,
    pub flags: Masked16,
    pub sport: PortRange,
    pub dport: PortRange,
    /// `in_port`, `vlan`, `dscp` as (value, care) pairs.
    pub in_port: (u16, bool),
    pub vlan: (u16, bool),
    pub dscp: (u8, bool),
    pub slen: u8,
    pub dlen: u8,
}

impl Compiled {
    pub fn new(m: &RuleMatch) -> Self {
        let pfx = |p: Option<super::rule::IpPrefix>| match p {
            None => (0u128, 0u128, 0u8),
            Some(p) => {
                let (bits, len) = p.to_bits();
                (bits, prefix_mask(p.width(), len), len)
            }
        };
        let (src, smask, slen) = pfx(m.src);
        let (dst, dmask, dlen) = pfx(m.dst);
        Compiled {
            src,
            smask,
            dst,
            dmask,
            fam: m.family(),
            proto: m.proto,
            flags: m.tcp_flags,
            sport: m.sport,
            dport: m.dport,
            in_port: (m.in_port.unwrap_or(0), m.in_port.is_some()),
            vlan: (m.vlan.unwrap_or(0), m.vlan.is_some()),
            dscp: (m.dscp.unwrap_or(0), m.dscp.is_some()),
            slen,
            dlen,
        }
    }

    #[inline]
    pub fn matches(&self, k: &Key) -> bool {
        let fam_ok = match self.fam {
            Family::Any => true,
            Family::V4 => !k.is_v6,
            Family::V6 => k.is_v6,
        };
        fam_ok
            & (k.src & self.smask == self.src)
            & (k.dst & self.dmask == self.dst)
            & (k.proto & self.proto.mask == self.proto.value)
            & (k.tcp_flags & self.flags.mask == self.flags.value)
            & (k.sport >= self.sport.lo)
            & (k.sport <= self.sport.hi)
            & (k.dport >= self.dport.lo)
            & (k.dport <= self.dport.hi)
            & (!self.in_port.1 | (self.in_port.0 == k.in_port))
            & (!self.vlan.1 | (self.vlan.0 == k.vlan))
            & (!self.dscp.1 | (self.dscp.0 == k.dscp))
    }
}

/// Number of tree dimensions for IPv4 keys.
pub(crate) const D4: usize = 8;
/// Number of tree dimensions for IPv6 keys.
pub(crate) const D6: usize = 14;

/// A rule as a box in `D` dimensions (inclusive bounds) plus the exact
/// checks a box cannot express.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub(crate) struct BoxRule<const D: usize> {
    pub lo: [u32; D],
    pub hi: [u32; D],
    pub proto: Masked8,
    pub flags: Masked16,
    /// Index of the rule in the base's entry list (for the dead bitmap).
    pub idx: u32,
}

/// Range of a `width`-bit prefix restricted to the 32-bit word `word`
/// (word 0 = most significant).
fn word_range(bits: u128, len: u8, width: u8, word: usize) -> (u32, u32) {
    let shift = width as i32 - 32 * (word as i32 + 1);
    let w = (bits >> shift) as u32;
    let nbits = (len as i32 - 32 * word as i32).clamp(0, 32) as u32;
    let mask = if nbits == 0 {
        0
    } else {
        u32::MAX << (32 - nbits)
    };
    (w & mask, (w & mask) | !mask)
}

/// Range covered by a masked byte if the mask is a prefix mask (leading
/// ones), else the whole byte (the exact check is done at the leaf).
fn masked_range(m: Masked8) -> (u32, u32) {
    if m.mask.leading_ones() + m.mask.trailing_zeros() == 8 {
        (m.value as u32, (m.value | !m.mask) as u32)
    } else {
        (0, 255)
    }
}

/// Whether the box expresses `m` exactly (no leaf check needed).
pub(crate) fn masked_exact(m: Masked8) -> bool {
    m.mask.leading_ones() + m.mask.trailing_zeros() == 8
}

fn common_dims(m: &RuleMatch) -> [(u32, u32); 6] {
    let opt = |v: Option<u16>, max: u32| match v {
        Some(v) => (v as u32, v as u32),
        None => (0, max),
    };
    [
        (m.sport.lo as u32, m.sport.hi as u32),
        (m.dport.lo as u32, m.dport.hi as u32),
        masked_range(m.proto),
        opt(m.in_port, 0xFFFF),
        opt(m.vlan, 0xFFFF),
        opt(m.dscp.map(u16::from), 0xFF),
    ]
}

impl BoxRule<D4> {
    /// Box for the IPv4 tree (family V4 or Any).
    pub fn v4(m: &RuleMatch, idx: u32) -> Self {
        let mut lo = [0u32; D4];
        let mut hi = [u32::MAX; D4];
        for (d, p) in [m.src, m.dst].into_iter().enumerate() {
            if let Some(p) = p {
                let (bits, len) = p.to_bits();
                (lo[d], hi[d]) = word_range(bits, len, 32, 0);
            }
        }
        for (i, r) in common_dims(m).into_iter().enumerate() {
            (lo[2 + i], hi[2 + i]) = r;
        }
        BoxRule {
            lo,
            hi,
            proto: m.proto,
            flags: m.tcp_flags,
            idx,
        }
    }
}

impl BoxRule<D6> {
    /// Box for the IPv6 tree (family V6 or Any).
    pub fn v6(m: &RuleMatch, idx: u32) -> Self {
        let mut lo = [0u32; D6];
        let mut hi = [u32::MAX; D6];
        for (a, p) in [m.src, m.dst].into_iter().enumerate() {
            if let Some(p) = p {
                let (bits, len) = p.to_bits();
                for w in 0..4 {
                    (lo[4 * a + w], hi[4 * a + w]) = word_range(bits, len, 128, w);
                }
            }
        }
        for (i, r) in common_dims(m).into_iter().enumerate() {
            (lo[8 + i], hi[8 + i]) = r;
        }
        BoxRule {
            lo,
            hi,
            proto: m.proto,
            flags: m.tcp_flags,
            idx,
        }
    }
}

/// `x ^ 0x8000_0000` as `i32`: order-preserving map from `u32` to `i32`, so
/// the lookup can use SSE2's signed compares.
#[inline(always)]
pub(crate) fn flip(x: u32) -> i32 {
    (x ^ 0x8000_0000) as i32
}

/// How a tree's leaves store and check their candidate rules: records of
/// [`Leaf::LANES`] candidates checked at once, a leaf's records contiguous,
/// so a leaf scan streams through adjacent cache lines. [`Leaf4`] for the
/// IPv4 tree, [`Leaf6`] for the IPv6 one.
pub(crate) trait Leaf<const D: usize>: Copy + std::fmt::Debug {
    /// The key as the records compare it, made once per leaf scan.
    type Probe: Copy;
    /// An entry of the tree's side table: what a record does not hold.
    type Side: Copy + Default + std::fmt::Debug;
    /// Candidates per record.
    const LANES: usize;
    /// Appends the records of one leaf's candidates `boxes` (in precedence
    /// order); what does not fit goes to `long` (the tree's side table,
    /// passed back to [`Leaf::hits`]).
    fn push(boxes: &[&BoxRule<D>], out: &mut Vec<Self>, long: &mut Vec<Self::Side>);
    /// `ex` is the key's [`exact_word`].
    fn probe(p: &[i32; D], ex: u64) -> Self::Probe;
    /// Base index of candidate `j`; `u32::MAX` for an empty slot.
    fn idx(&self, j: usize) -> u32;
    /// Bit `j` set iff candidate `j` matches and `from <= idx(j) < bound`.
    fn hits(&self, q: &Self::Probe, long: &[Self::Side], from: u32, bound: u32) -> u32;
}

/// The exact-or-masked fields of a key in one word, for the leaf check:
/// proto | dscp << 8 | in_port << 16 | vlan << 32 | tcp_flags << 48 (the
/// 12-bit flags field takes bits 48..60).
#[inline(always)]
pub(crate) fn exact_word(k: &Key) -> u64 {
    exact_word_of(k.proto, k.dscp, k.in_port, k.vlan, k.tcp_flags)
}

/// [`exact_word`] of the fields themselves.
#[inline(always)]
pub(crate) fn exact_word_of(proto: u8, dscp: u8, in_port: u16, vlan: u16, tcp_flags: u16) -> u64 {
    proto as u64
        | (dscp as u64) << 8
        | (in_port as u64) << 16
        | (vlan as u64) << 32
        | (tcp_flags as u64) << 48
}

/// `value/mask` of the exact-or-masked fields of a box whose dimensions
/// `at..` are proto, in_port, vlan, dscp (see `common_dims`), in
/// [`exact_word`]'s layout.
fn exact_of<const D: usize>(b: &BoxRule<D>, at: usize) -> (u64, u64) {
    // Exact (lo == hi) or full range.
    let ex = |d: usize, shift: u32, width: u64| -> (u64, u64) {
        if b.lo[d] == b.hi[d] {
            ((b.lo[d] as u64) << shift, width << shift)
        } else {
            (0, 0)
        }
    };
    let (ip, ipm) = ex(at + 1, 16, 0xFFFF);
    let (vl, vlm) = ex(at + 2, 32, 0xFFFF);
    let (ds, dsm) = ex(at + 3, 8, 0xFF);
    (
        b.proto.value as u64 | (b.flags.value as u64) << 48 | ip | vl | ds,
        b.proto.mask as u64 | (b.flags.mask as u64) << 48 | ipm | vlm | dsm,
    )
}

/// Four IPv4 candidates in three cache lines, checked together
/// ([`arch::quad_hits`]: SSE2, no branch per candidate): src, dst, sport,
/// dport as sign-flipped ranges by dimension; proto, dscp and tcp_flags as
/// one 32-bit `value/mask` ([`compact_word`]). `in_port` and `vlan`, which
/// few rules constrain, are checked in the tree's side table (at the
/// rule's base index) only for a candidate that matched the rest; [`RARE`]
/// in its mask says it has them. Empty slots never match. As one 64-byte
/// record per candidate, checked one by one, a leaf scan took a third of a
/// lookup (`bench-results/acl_large.md`).
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
pub(crate) struct Leaf4(arch::Quad<4>);

/// Four IPv6 candidates in four cache lines, checked as [`Leaf4`]'s are:
/// the high 64 bits of each address as two 32-bit words (a prefix of a
/// word is a range), the ports as ranges, the same 32-bit word. The low 64
/// bits, which only prefixes longer than /64 constrain, and `in_port` /
/// `vlan` are in the side table ([`RARE`]). As one 64-byte record per
/// candidate checked one by one, IPv6 lookups were 1.6-1.7x the IPv4 ones,
/// and ~2x once the IPv4 leaves were checked four at a time.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
pub(crate) struct Leaf6(arch::Quad<6>);

// Three cache lines per four IPv4 candidates, four per four IPv6 ones.
const _: () = assert!(std::mem::size_of::<Leaf4>() == 192 && std::mem::size_of::<Leaf6>() == 256);

/// A bit of the records' masks that no key's word sets: the candidate has
/// a constraint in the side table ([`arch::quad_hits`] returns these bits).
const RARE: u32 = 1 << 31;

/// [`exact_word`]'s proto, dscp and tcp_flags in 32 bits: proto | dscp << 8
/// | tcp_flags << 16.
#[inline(always)]
fn compact_word(ex: u64) -> u32 {
    (ex & 0xFFFF) as u32 | ((ex >> 48) as u32) << 16
}

/// [`exact_word`]'s `in_port` and `vlan` bits.
const IN_PORT_VLAN: u64 = 0xFFFF_FFFF << 16;

/// What a record compares: the key's `K` range dimensions (flipped), its
/// [`compact_word`], and what the side table checks: the whole exact word
/// and, for IPv6, the low 64 bits of the addresses.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Probe<const K: usize> {
    q: [i32; K],
    word: u32,
    ex: u64,
    src_lo: u64,
    dst_lo: u64,
}

/// Fills slot `j` of `c` from box `b`: `dims` are the box dimensions the
/// record holds, in its order; the exact-or-masked fields start at box
/// dimension `at` (see `common_dims`). The slot is flagged [`RARE`] if the
/// rule constrains `in_port` or `vlan`, or if `side` (it has another
/// constraint the side table holds). Returns the `in_port` / `vlan` bits
/// of its exact word (`value`, `mask`) for the side table.
fn fill<const D: usize, const K: usize>(
    c: &mut arch::Quad<K>,
    j: usize,
    b: &BoxRule<D>,
    dims: [usize; K],
    at: usize,
    side: bool,
) -> (u64, u64) {
    for (k, &d) in dims.iter().enumerate() {
        c.dim[k].lo[j] = flip(b.lo[d]);
        c.dim[k].hi[j] = flip(b.hi[d]);
    }
    let (val, mask) = exact_of(b, at);
    let rare = side || mask & IN_PORT_VLAN != 0;
    c.val[j] = compact_word(val);
    c.mask[j] = compact_word(mask) | if rare { RARE } else { 0 };
    c.idx[j] = b.idx;
    (val & IN_PORT_VLAN, mask & IN_PORT_VLAN)
}

/// The records of `boxes`, four to a record in order, slot `j` of each
/// filled by `slot(record, j, box)`; empty slots have lo > hi in every
/// dimension and index MAX.
fn quads<'a, const D: usize, const K: usize>(
    boxes: &'a [&BoxRule<D>],
    mut slot: impl FnMut(&mut arch::Quad<K>, usize, &BoxRule<D>) + 'a,
) -> impl Iterator<Item = arch::Quad<K>> + 'a {
    boxes.chunks(4).map(move |four| {
        let mut c = arch::Quad {
            dim: [arch::Span {
                lo: [i32::MAX; 4],
                hi: [i32::MIN; 4],
            }; K],
            val: [0; 4],
            mask: [0; 4],
            idx: [u32::MAX; 4],
        };
        for (j, b) in four.iter().enumerate() {
            slot(&mut c, j, b);
        }
        c
    })
}

/// Entry `idx` of a side table indexed by base index.
fn side_at<T: Copy + Default>(long: &mut Vec<T>, idx: u32) -> &mut T {
    let i = idx as usize;
    if long.len() <= i {
        long.resize(i + 1, T::default());
    }
    &mut long[i]
}

/// The hits of record `c` for probe `q`, less the flagged ones whose side
/// table entry (`side(entry)`) fails.
#[inline(always)]
fn quad_hits_with_side<const K: usize, T>(
    c: &arch::Quad<K>,
    q: &Probe<K>,
    long: &[T],
    from: u32,
    bound: u32,
    side: impl Fn(&T) -> bool,
) -> u32 {
    let (mut m, mut rare) = arch::quad_hits(c, &q.q, q.word, from, bound);
    // The side table, for the few that matched everything else.
    while rare != 0 {
        let j = rare.trailing_zeros() as usize;
        rare &= rare - 1;
        if !side(&long[c.idx[j] as usize]) {
            m &= !(1 << j);
        }
    }
    m
}

impl Leaf<D4> for Leaf4 {
    type Probe = Probe<4>;
    /// `in_port` / `vlan`: value, mask in [`exact_word`]'s layout.
    type Side = [u64; 2];
    const LANES: usize = 4;

    fn push(boxes: &[&BoxRule<D4>], out: &mut Vec<Self>, long: &mut Vec<[u64; 2]>) {
        let slot = |c: &mut arch::Quad<4>, j, b: &BoxRule<D4>| {
            let (v, m) = fill(c, j, b, [0, 1, 2, 3], 4, false);
            if m != 0 {
                *side_at(long, b.idx) = [v, m];
            }
        };
        out.extend(quads(boxes, slot).map(Leaf4));
    }

    #[inline(always)]
    fn probe(p: &[i32; D4], ex: u64) -> Probe<4> {
        Probe {
            q: [p[0], p[1], p[2], p[3]],
            word: compact_word(ex),
            ex,
            src_lo: 0,
            dst_lo: 0,
        }
    }

    #[inline(always)]
    fn idx(&self, j: usize) -> u32 {
        self.0.idx[j]
    }

    #[inline(always)]
    fn hits(&self, q: &Probe<4>, long: &[[u64; 2]], from: u32, bound: u32) -> u32 {
        quad_hits_with_side(&self.0, q, long, from, bound, |l| q.ex & l[1] == l[0])
    }
}

/// A 64-bit `value/mask` from two consecutive address words of a box
/// (ranges made from a prefix by `word_range`: `lo = w & m`, `hi = w | !m`).
fn prefix64<const D: usize>(b: &BoxRule<D>, d: usize) -> [u64; 2] {
    let word = |d: usize| {
        let m = !(b.lo[d] ^ b.hi[d]);
        debug_assert!(m.leading_ones() + m.trailing_zeros() == 32 || m == 0);
        (b.lo[d] as u64, m as u64)
    };
    let ((v0, m0), (v1, m1)) = (word(d), word(d + 1));
    [v0 << 32 | v1, m0 << 32 | m1]
}

impl Leaf<D6> for Leaf6 {
    type Probe = Probe<6>;
    /// The low 64 bits of source and destination (value, mask each), then
    /// `in_port` / `vlan` as [`Leaf4`]'s.
    type Side = [u64; 6];
    const LANES: usize = 4;

    fn push(boxes: &[&BoxRule<D6>], out: &mut Vec<Self>, long: &mut Vec<[u64; 6]>) {
        let slot = |c: &mut arch::Quad<6>, j, b: &BoxRule<D6>| {
            let (s_lo, d_lo) = (prefix64(b, 2), prefix64(b, 6));
            let low = s_lo[1] | d_lo[1] != 0;
            let (v, m) = fill(c, j, b, [0, 1, 4, 5, 8, 9], 10, low);
            if low || m != 0 {
                *side_at(long, b.idx) = [s_lo[0], s_lo[1], d_lo[0], d_lo[1], v, m];
            }
        };
        out.extend(quads(boxes, slot).map(Leaf6));
    }

    #[inline(always)]
    fn probe(p: &[i32; D6], ex: u64) -> Probe<6> {
        let w = |i: usize| (p[i] as u32 ^ 0x8000_0000) as u64;
        Probe {
            q: [p[0], p[1], p[4], p[5], p[8], p[9]],
            word: compact_word(ex),
            ex,
            src_lo: w(2) << 32 | w(3),
            dst_lo: w(6) << 32 | w(7),
        }
    }

    #[inline(always)]
    fn idx(&self, j: usize) -> u32 {
        self.0.idx[j]
    }

    #[inline(always)]
    fn hits(&self, q: &Probe<6>, long: &[[u64; 6]], from: u32, bound: u32) -> u32 {
        quad_hits_with_side(&self.0, q, long, from, bound, |l| {
            (q.src_lo & l[1] == l[0]) & (q.dst_lo & l[3] == l[2]) & (q.ex & l[5] == l[4])
        })
    }
}

/// Point of an IPv4 key in the IPv4 tree's dimensions (flipped).
#[inline(always)]
pub(crate) fn point4(k: &Key) -> [i32; D4] {
    [
        k.src as u32,
        k.dst as u32,
        k.sport as u32,
        k.dport as u32,
        k.proto as u32,
        k.in_port as u32,
        k.vlan as u32,
        k.dscp as u32,
    ]
    .map(flip)
}

/// Point of an IPv6 key in the IPv6 tree's dimensions (flipped).
#[inline(always)]
pub(crate) fn point6(k: &Key) -> [i32; D6] {
    [
        (k.src >> 96) as u32,
        (k.src >> 64) as u32,
        (k.src >> 32) as u32,
        k.src as u32,
        (k.dst >> 96) as u32,
        (k.dst >> 64) as u32,
        (k.dst >> 32) as u32,
        k.dst as u32,
        k.sport as u32,
        k.dport as u32,
        k.proto as u32,
        k.in_port as u32,
        k.vlan as u32,
        k.dscp as u32,
    ]
    .map(flip)
}
