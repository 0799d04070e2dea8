//! CPU-specific code for the lookups: software prefetch and SIMD compares.
//!
//! The one place outside `dpdk`, `qsbr` and the socket / tap wrappers where
//! `unsafe` is allowed, fenced like them: every function here is safe to
//! call. On a target without the instructions, a hint does nothing and a
//! computation runs its scalar form, which the tests hold the SIMD form to.
//! SSE2, which every x86_64 CPU has, is the baseline. A burst's work can
//! also run compiled for a wider instruction set, chosen at run time:
//! [`dispatch`] runs it in a copy compiled for AVX-512F when the CPU has it
//! and the process allows 512-bit vectors, in one compiled for AVX2 and its
//! generation's scalar instructions (BMI1/2, LZCNT, POPCNT: the x86-64-v3
//! level) when the CPU has those and the process allows 256-bit vectors,
//! and for SSE2 otherwise. A token ([`Avx512`], [`Avx2`], [`Sse2`]) proves
//! the choice, and the [`Simd`] trait is what that work calls. The daemon
//! allows what DPDK allows its own vector paths ([`allow_simd_bits`]).

#![allow(unsafe_code)]

/// Starts loading the cache line that holds `*r` into every cache level and
/// returns at once (PREFETCHT0). For a burst of independent lookups:
/// prefetch every lane's next entry, then load them, so that all the lanes'
/// cache misses are in flight together instead of as many as the core's
/// reorder window happens to hold.
#[inline(always)]
pub fn prefetch<T>(r: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 belongs to SSE, which every x86_64 CPU has. It is a
    // hint: it never faults, whatever the address, and changes no
    // architectural state. `r` is a live reference anyway.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
            (r as *const T).cast::<i8>(),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
}

/// Bit `i` set iff `words[i] < v`, the words read as `i32`: the mask of a
/// decision-tree node's thresholds below a key (the ACL descent's inner
/// step). As four SSE2 compares and one byte mask, where LLVM's own
/// vectorisation of [`lt_mask_scalar`] took ~40 instructions (a compare at
/// each end, three vectors in between, the bits OR-ed lane by lane).
#[inline(always)]
pub fn lt_mask16(words: &[u32; 16], v: i32) -> u32 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE2 is part of x86_64, so every intrinsic here is available.
    // The four unaligned 16-byte loads read `words[0..4]`, `[4..8]`,
    // `[8..12]`, `[12..16]`: inside the 64-byte array `words` borrows.
    unsafe {
        use core::arch::x86_64::*;
        let p = words.as_ptr().cast::<__m128i>();
        let vv = _mm_set1_epi32(v);
        let a = _mm_cmplt_epi32(_mm_loadu_si128(p), vv);
        let b = _mm_cmplt_epi32(_mm_loadu_si128(p.add(1)), vv);
        let c = _mm_cmplt_epi32(_mm_loadu_si128(p.add(2)), vv);
        let d = _mm_cmplt_epi32(_mm_loadu_si128(p.add(3)), vv);
        // Each lane is 0 or -1: saturating packs keep that, 32 -> 16 -> 8
        // bits, in order; the byte mask is then one bit per word.
        let bytes = _mm_packs_epi16(_mm_packs_epi32(a, b), _mm_packs_epi32(c, d));
        _mm_movemask_epi8(bytes) as u32
    }
    #[cfg(not(target_arch = "x86_64"))]
    lt_mask_scalar(words, v)
}

/// The instructions a burst's lookups use (see the module doc).
pub trait Simd: Copy {
    /// [`lt_mask16`]'s mask.
    fn lt_mask16(self, words: &[u32; 16], v: i32) -> u32;
    /// [`above32`]'s mask.
    fn above32(self, v: &[u32; 32], x: u32) -> u32;
}

/// The baseline: [`lt_mask16`] as four SSE2 compares.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sse2;

impl Simd for Sse2 {
    #[inline(always)]
    fn lt_mask16(self, words: &[u32; 16], v: i32) -> u32 {
        lt_mask16(words, v)
    }

    #[inline(always)]
    fn above32(self, v: &[u32; 32], x: u32) -> u32 {
        above32(v, x)
    }
}

/// The widest vectors, in bits, the process allows [`dispatch`] (512 unless
/// said otherwise, see [`allow_simd_bits`]).
static SIMD_BITS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(512);

/// Allows vectors up to `bits` wide for the whole process: 512 allows
/// [`Avx512`] and [`Avx2`], 256 [`Avx2`], less only [`Sse2`]. The daemon
/// follows DPDK's max SIMD bitwidth (256 on x86 unless the EAL's
/// `--force-max-simd-bitwidth=512`): on some Intel CPUs 512-bit
/// instructions lower the core's clock for everything else the worker
/// runs, which is why DPDK keeps its own AVX-512 paths off by default.
pub fn allow_simd_bits(bits: u32) {
    SIMD_BITS.store(bits, std::sync::atomic::Ordering::Relaxed);
}

/// Whether the process allows `bits`-wide vectors.
#[inline(always)]
fn allowed(bits: u32) -> bool {
    SIMD_BITS.load(std::sync::atomic::Ordering::Relaxed) >= bits
}

/// Whether the CPU has the x86-64-v3 instructions the [`Avx2`] copy is
/// compiled for (std caches the CPUID answer).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn has_v3() -> bool {
    std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("bmi1")
        && std::arch::is_x86_feature_detected!("bmi2")
        && std::arch::is_x86_feature_detected!("lzcnt")
        && std::arch::is_x86_feature_detected!("popcnt")
}

/// Proof that the CPU has AVX-512F (and the x86-64-v3 instructions) and
/// the process allows 512-bit vectors: made only by [`Avx512::detect`].
/// With it a node's 16 thresholds are one 64-byte load and one compare
/// into a mask register.
#[derive(Clone, Copy, Debug)]
pub struct Avx512(());

impl Avx512 {
    /// The token, if this CPU has AVX-512F and the x86-64-v3 instructions
    /// and [`allow_simd_bits`] allows 512 bits.
    #[inline(always)]
    pub fn detect() -> Option<Avx512> {
        #[cfg(target_arch = "x86_64")]
        if allowed(512) && std::arch::is_x86_feature_detected!("avx512f") && has_v3() {
            return Some(Avx512(()));
        }
        None
    }
}

impl Simd for Avx512 {
    #[inline(always)]
    fn lt_mask16(self, words: &[u32; 16], v: i32) -> u32 {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: an `Avx512` exists only where `detect` saw AVX-512F.
        unsafe {
            lt_mask16_avx512(words, v)
        }
        #[cfg(not(target_arch = "x86_64"))]
        lt_mask_scalar(words, v)
    }

    #[inline(always)]
    fn above32(self, v: &[u32; 32], x: u32) -> u32 {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: an `Avx512` exists only where `detect` saw AVX-512F.
        unsafe {
            above32_avx512(v, x)
        }
        #[cfg(not(target_arch = "x86_64"))]
        above32_scalar(v, x)
    }
}

/// Proof that the CPU has AVX2 with BMI1, BMI2, LZCNT and POPCNT (the
/// x86-64-v3 level) and the process allows 256-bit vectors: made only by
/// [`Avx2::detect`]. With it a node's 16 thresholds are two 32-byte loads
/// and compares, and the code around them has three-operand shifts
/// (`shrx`) instead of shifts through `cl`.
#[derive(Clone, Copy, Debug)]
pub struct Avx2(());

impl Avx2 {
    /// The token, if this CPU has the x86-64-v3 instructions and
    /// [`allow_simd_bits`] allows 256 bits.
    #[inline(always)]
    pub fn detect() -> Option<Avx2> {
        #[cfg(target_arch = "x86_64")]
        if allowed(256) && has_v3() {
            return Some(Avx2(()));
        }
        None
    }
}

impl Simd for Avx2 {
    #[inline(always)]
    fn lt_mask16(self, words: &[u32; 16], v: i32) -> u32 {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: an `Avx2` exists only where `detect` saw AVX2.
        unsafe {
            lt_mask16_avx2(words, v)
        }
        #[cfg(not(target_arch = "x86_64"))]
        lt_mask_scalar(words, v)
    }

    #[inline(always)]
    fn above32(self, v: &[u32; 32], x: u32) -> u32 {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: an `Avx2` exists only where `detect` saw AVX2.
        unsafe {
            above32_avx2(v, x)
        }
        #[cfg(not(target_arch = "x86_64"))]
        above32_scalar(v, x)
    }
}

/// [`lt_mask16`] in AVX2: two 8-word compares, a sign-bit mask of each.
/// Inlined only into code compiled for AVX2, which [`dispatch`] makes:
/// elsewhere it is a call.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn lt_mask16_avx2(words: &[u32; 16], v: i32) -> u32 {
    use core::arch::x86_64::*;
    // SAFETY: the two unaligned 32-byte loads read `words[0..8]` and
    // `[8..16]`: inside the 64-byte array `words` borrows. AVX2 is enabled
    // for this function.
    unsafe {
        let p = words.as_ptr().cast::<__m256i>();
        let vv = _mm256_set1_epi32(v);
        let a = _mm256_cmpgt_epi32(vv, _mm256_loadu_si256(p));
        let b = _mm256_cmpgt_epi32(vv, _mm256_loadu_si256(p.add(1)));
        let lo = _mm256_movemask_ps(_mm256_castsi256_ps(a)) as u32;
        let hi = _mm256_movemask_ps(_mm256_castsi256_ps(b)) as u32;
        lo | hi << 8
    }
}

/// [`lt_mask16`] in AVX-512F. Inlined only into code compiled for
/// AVX-512F, which [`dispatch`] makes: elsewhere it is a call.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
fn lt_mask16_avx512(words: &[u32; 16], v: i32) -> u32 {
    use core::arch::x86_64::*;
    // SAFETY: the unaligned 64-byte load reads exactly the array `words`
    // borrows; AVX-512F is enabled for this function.
    unsafe {
        u32::from(_mm512_cmplt_epi32_mask(
            _mm512_loadu_si512(words.as_ptr().cast()),
            _mm512_set1_epi32(v),
        ))
    }
}

/// Bit `i` set iff `v[i] > x`, unsigned: of a burst chunk's 32 lanes,
/// those whose value (the classifier's best match so far) is above `x`
/// (a tree's first rule), without a branch a lane. As eight SSE2 compares
/// of sign-flipped words and two byte masks; LLVM's own vectorisation of
/// [`above32_scalar`] mixed three vector compares with a scalar compare,
/// set and shift for each of the other lanes.
#[inline(always)]
pub fn above32(v: &[u32; 32], x: u32) -> u32 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE2 is part of x86_64, so every intrinsic here is available.
    // The eight unaligned 16-byte loads read `v[4k..4k + 4]` for k < 8:
    // inside the 128-byte array `v` borrows.
    unsafe {
        use core::arch::x86_64::*;
        let p = v.as_ptr().cast::<__m128i>();
        let min = _mm_set1_epi32(i32::MIN);
        let xx = _mm_set1_epi32((x ^ 0x8000_0000) as i32);
        let gt = |k: usize| _mm_cmpgt_epi32(_mm_xor_si128(_mm_loadu_si128(p.add(k)), min), xx);
        // Lanes of 0 or -1: saturating packs keep them, in order.
        let half = |k: usize| {
            let bytes = _mm_packs_epi16(
                _mm_packs_epi32(gt(k), gt(k + 1)),
                _mm_packs_epi32(gt(k + 2), gt(k + 3)),
            );
            _mm_movemask_epi8(bytes) as u32
        };
        half(0) | half(4) << 16
    }
    #[cfg(not(target_arch = "x86_64"))]
    above32_scalar(v, x)
}

/// [`above32`] in AVX2: four 8-word compares of sign-flipped words.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn above32_avx2(v: &[u32; 32], x: u32) -> u32 {
    use core::arch::x86_64::*;
    // SAFETY: the four unaligned 32-byte loads read `v[8k..8k + 8]` for
    // k < 4: inside the 128-byte array `v` borrows. AVX2 is enabled for
    // this function.
    unsafe {
        let p = v.as_ptr().cast::<__m256i>();
        let min = _mm256_set1_epi32(i32::MIN);
        let xx = _mm256_set1_epi32((x ^ 0x8000_0000) as i32);
        let mut mask = 0u32;
        for k in 0..4 {
            let gt = _mm256_cmpgt_epi32(_mm256_xor_si256(_mm256_loadu_si256(p.add(k)), min), xx);
            mask |= (_mm256_movemask_ps(_mm256_castsi256_ps(gt)) as u32) << (8 * k);
        }
        mask
    }
}

/// [`above32`] in AVX-512F: two unsigned compares into mask registers.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
fn above32_avx512(v: &[u32; 32], x: u32) -> u32 {
    use core::arch::x86_64::*;
    // SAFETY: the two unaligned 64-byte loads read `v[0..16]` and
    // `v[16..32]`: inside the 128-byte array `v` borrows. AVX-512F is
    // enabled for this function.
    unsafe {
        let p = v.as_ptr().cast::<__m512i>();
        let xx = _mm512_set1_epi32(x as i32);
        let lo = _mm512_cmpgt_epu32_mask(_mm512_loadu_si512(p), xx);
        let hi = _mm512_cmpgt_epu32_mask(_mm512_loadu_si512(p.add(1)), xx);
        u32::from(lo) | u32::from(hi) << 16
    }
}

/// The reference for [`above32`].
#[inline(always)]
pub fn above32_scalar(v: &[u32; 32], x: u32) -> u32 {
    let mut mask = 0u32;
    for (i, &w) in v.iter().enumerate() {
        mask |= u32::from(w > x) << i;
    }
    mask
}

/// Work to run with the best [`Simd`] the CPU has ([`dispatch`]).
pub trait WithSimd {
    type Out;
    /// Should be `#[inline(always)]`, so that it and what it inlines are
    /// compiled into [`dispatch`]'s AVX-512 copy.
    fn run<S: Simd>(self, s: S) -> Self::Out;
}

/// Runs `w` with the widest token the CPU has and the process allows,
/// inside a function compiled for its instructions (so that `w`'s
/// compares inline as single instructions, and the rest of `w` is compiled
/// for them too): [`Avx512`], [`Avx2`], else [`Sse2`].
#[inline(always)]
pub fn dispatch<W: WithSimd>(w: W) -> W::Out {
    #[cfg(target_arch = "x86_64")]
    {
        if let Some(s) = Avx512::detect() {
            #[target_feature(enable = "avx512f,avx2,bmi1,bmi2,lzcnt,popcnt")]
            fn on_avx512<W: WithSimd>(w: W, s: Avx512) -> W::Out {
                w.run(s)
            }
            // SAFETY: `s` proves the CPU has AVX-512F and the x86-64-v3
            // instructions, the one precondition of a function compiled
            // for them.
            return unsafe { on_avx512(w, s) };
        }
        if let Some(s) = Avx2::detect() {
            #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
            fn on_avx2<W: WithSimd>(w: W, s: Avx2) -> W::Out {
                w.run(s)
            }
            // SAFETY: `s` proves the CPU has the x86-64-v3 instructions,
            // the one precondition of a function compiled for them.
            return unsafe { on_avx2(w, s) };
        }
    }
    w.run(Sse2)
}

/// The instructions [`dispatch`] runs a burst's work with, by name.
pub fn dispatched() -> &'static str {
    if Avx512::detect().is_some() {
        "AVX-512"
    } else if Avx2::detect().is_some() {
        "AVX2"
    } else {
        "SSE2"
    }
}

/// The reference for [`lt_mask16`].
#[inline(always)]
pub fn lt_mask_scalar(words: &[u32; 16], v: i32) -> u32 {
    let mut mask = 0u32;
    for (i, &t) in words.iter().enumerate() {
        mask |= u32::from((t as i32) < v) << i;
    }
    mask
}

/// Four ACL candidates laid out for one SIMD check each way
/// (`acl::compiled::Leaf4`, `Leaf6`): per dimension (`K` of them: the
/// 32-bit words of the addresses that the record holds, the ports), the
/// four candidates' sign-flipped inclusive bounds; one 32-bit `value/mask`
/// word each; their base indexes. A dimension's two bounds are side by
/// side, so that the first two dimensions, on which most records of a
/// scan fail, are the record's first cache line.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct Quad<const K: usize> {
    pub dim: [Span; K],
    pub val: [u32; 4],
    pub mask: [u32; 4],
    pub idx: [u32; 4],
}

/// One dimension of a [`Quad`]: the four candidates' lower and upper
/// bounds.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct Span {
    pub lo: [i32; 4],
    pub hi: [i32; 4],
}

/// Bit `j` of the first mask set iff candidate `j` of `c` holds for the
/// (sign-flipped) point `q` and word `w`, and `from <= c.idx[j] < bound`;
/// the second mask: those of them whose `c.mask` has its top bit set (a
/// flag a key's word never sets). Two SSE2 compares per dimension, one
/// masked equality and two index compares for the four candidates, no
/// branch per candidate; a record whose every candidate fails on the
/// first two dimensions stops there.
#[inline(always)]
pub fn quad_hits<const K: usize>(
    c: &Quad<K>,
    q: &[i32; K],
    w: u32,
    from: u32,
    bound: u32,
) -> (u32, u32) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE2 is part of x86_64. Every load is an unaligned 16-byte
    // load of one `[i32; 4]` / `[u32; 4]` field of the borrowed `c`.
    unsafe {
        use core::arch::x86_64::*;
        let ld = |a: &[i32; 4]| _mm_loadu_si128(a.as_ptr().cast::<__m128i>());
        let ldu = |a: &[u32; 4]| _mm_loadu_si128(a.as_ptr().cast::<__m128i>());
        let mut fail = _mm_setzero_si128();
        for (d, &x) in q.iter().enumerate() {
            let x = _mm_set1_epi32(x);
            fail = _mm_or_si128(fail, _mm_cmpgt_epi32(ld(&c.dim[d].lo), x));
            fail = _mm_or_si128(fail, _mm_cmpgt_epi32(x, ld(&c.dim[d].hi)));
            // Most records of a scan that finds nothing fail on their
            // first two dimensions (the addresses) in every lane.
            if d == 1 && _mm_movemask_ps(_mm_castsi128_ps(fail)) == 0xF {
                return (0, 0);
            }
        }
        let word = _mm_cmpeq_epi32(
            _mm_and_si128(_mm_set1_epi32(w as i32), ldu(&c.mask)),
            ldu(&c.val),
        );
        // Unsigned index compares as signed ones of the flipped values.
        let min = _mm_set1_epi32(i32::MIN);
        let ix = _mm_xor_si128(ldu(&c.idx), min);
        let below = _mm_cmpgt_epi32(_mm_set1_epi32((bound ^ 0x8000_0000) as i32), ix);
        let early = _mm_cmpgt_epi32(_mm_set1_epi32((from ^ 0x8000_0000) as i32), ix);
        let ok = _mm_andnot_si128(_mm_or_si128(fail, early), _mm_and_si128(word, below));
        let hits = _mm_movemask_ps(_mm_castsi128_ps(ok)) as u32;
        let flagged = _mm_movemask_ps(_mm_castsi128_ps(ldu(&c.mask))) as u32;
        (hits, hits & flagged)
    }
    #[cfg(not(target_arch = "x86_64"))]
    quad_hits_scalar(c, q, w, from, bound)
}

/// The reference for [`quad_hits`].
#[inline(always)]
pub fn quad_hits_scalar<const K: usize>(
    c: &Quad<K>,
    q: &[i32; K],
    w: u32,
    from: u32,
    bound: u32,
) -> (u32, u32) {
    let (mut m, mut flagged) = (0, 0);
    for j in 0..4 {
        let inside = (0..K).all(|d| c.dim[d].lo[j] <= q[d] && q[d] <= c.dim[d].hi[j]);
        let ok = inside && w & c.mask[j] == c.val[j] && from <= c.idx[j] && c.idx[j] < bound;
        m |= u32::from(ok) << j;
        flagged |= (u32::from(ok) & c.mask[j] >> 31) << j;
    }
    (m, flagged)
}

/// Prefetches the first `lines` cache lines of `s` (fewer if `s` is
/// shorter): a leaf's candidates, ahead of its scan.
#[inline(always)]
pub fn prefetch_lines<T>(s: &[T], lines: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        let bytes = std::mem::size_of_val(s).min(64 * lines);
        let base = s.as_ptr().cast::<i8>();
        let mut off = 0;
        while off < bytes {
            // SAFETY: as in `prefetch`: a hint that never faults. The
            // address is inside `s` anyway (`off < size_of_val(s)`).
            unsafe {
                core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                    base.wrapping_add(off),
                );
            }
            off += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (s, lines);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Says so where the AVX-512 forms go untested.
    #[test]
    fn avx512_forms_are_tested_where_the_cpu_has_them() {
        if Avx512::detect().is_none() {
            eprintln!("arch: no AVX-512F here (or it is not allowed): its forms are not tested");
        }
        if Avx2::detect().is_none() {
            eprintln!("arch: no AVX2/BMI2 here (or it is not allowed): its forms are not tested");
        }
        // dispatch runs the work once, with some token.
        struct AllBelow;
        impl WithSimd for AllBelow {
            type Out = u32;
            fn run<S: Simd>(self, s: S) -> u32 {
                s.lt_mask16(&[0; 16], 1)
            }
        }
        assert_eq!(dispatch(AllBelow), 0xFFFF);
    }

    proptest! {
        #[test]
        fn lt_mask16_is_the_scalar_mask(
            words in proptest::array::uniform16(any::<u32>()),
            v in any::<i32>(),
            pick in 0usize..16,
        ) {
            let (avx, avx2) = (Avx512::detect(), Avx2::detect());
            // And at a word's own value and its neighbours (ties, edges).
            let w = words[pick] as i32;
            for v in [v, w, w.wrapping_add(1), w.wrapping_sub(1), i32::MIN, i32::MAX] {
                let want = lt_mask_scalar(&words, v);
                prop_assert_eq!(lt_mask16(&words, v), want);
                prop_assert_eq!(Sse2.lt_mask16(&words, v), want);
                if let Some(a) = avx {
                    prop_assert_eq!(a.lt_mask16(&words, v), want);
                }
                if let Some(a) = avx2 {
                    prop_assert_eq!(a.lt_mask16(&words, v), want);
                }
            }
        }

        #[test]
        fn above32_is_the_scalar_mask(
            v in proptest::array::uniform32(any::<u32>()),
            x in any::<u32>(),
            pick in 0usize..32,
        ) {
            let (avx, avx2) = (Avx512::detect(), Avx2::detect());
            // And at a value itself and its neighbours (ties, edges).
            let w = v[pick];
            for x in [x, w, w.wrapping_add(1), w.wrapping_sub(1), 0, u32::MAX, 1 << 31] {
                let want = above32_scalar(&v, x);
                prop_assert_eq!(above32(&v, x), want);
                prop_assert_eq!(Sse2.above32(&v, x), want);
                if let Some(a) = avx {
                    prop_assert_eq!(a.above32(&v, x), want);
                }
                if let Some(a) = avx2 {
                    prop_assert_eq!(a.above32(&v, x), want);
                }
            }
        }

        #[test]
        fn quad_hits_is_the_scalar_check(
            bounds in proptest::array::uniform16((any::<i32>(), any::<i32>())),
            words in proptest::array::uniform3(proptest::array::uniform4(any::<u32>())),
            q in proptest::array::uniform4(any::<i32>()),
            limits in proptest::array::uniform3(any::<u32>()),
            near in 0usize..16,
        ) {
            check_quad::<4>(&bounds, words, q, limits, near)?;
        }

        #[test]
        fn quad_hits_is_the_scalar_check_in_six_dimensions(
            bounds in proptest::array::uniform24((any::<i32>(), any::<i32>())),
            words in proptest::array::uniform3(proptest::array::uniform4(any::<u32>())),
            q in proptest::array::uniform6(any::<i32>()),
            limits in proptest::array::uniform3(any::<u32>()),
            near in 0usize..24,
        ) {
            check_quad::<6>(&bounds, words, q, limits, near)?;
        }
    }

    /// [`quad_hits`] against [`quad_hits_scalar`] on a record of `bounds`
    /// (made ordered) with `words` = val, mask, idx; `limits` = w, from,
    /// bound. Random keys rarely fall inside `4 * K` random ranges: also a
    /// key on candidate `near`'s bounds, its word made to match, and index
    /// windows at its own index.
    fn check_quad<const K: usize>(
        bounds: &[(i32, i32)],
        [val, mask, idx]: [[u32; 4]; 3],
        q: [i32; K],
        [w, from, bound]: [u32; 3],
        near: usize,
    ) -> Result<(), TestCaseError> {
        let mut c: Quad<K> = Quad {
            dim: [Span {
                lo: [0; 4],
                hi: [0; 4],
            }; K],
            val,
            mask,
            idx,
        };
        for (k, &(a, b)) in bounds.iter().enumerate() {
            let s = &mut c.dim[k / 4];
            (s.lo[k % 4], s.hi[k % 4]) = (a.min(b), a.max(b));
        }
        prop_assert_eq!(
            quad_hits(&c, &q, w, from, bound),
            quad_hits_scalar(&c, &q, w, from, bound)
        );
        let (d, j) = (near / 4, near % 4);
        let mut q2 = q;
        for (dd, x) in q2.iter_mut().enumerate() {
            *x = if dd == d {
                c.dim[dd].hi[j]
            } else {
                c.dim[dd].lo[j]
            };
        }
        let mut c2 = c;
        for k in 0..4 {
            c2.val[k] = c.val[k] & c.mask[k];
        }
        let w2 = c2.val[j];
        // The test is not vacuous: that key hits candidate `near`.
        if idx[j] != u32::MAX {
            prop_assert_eq!(quad_hits(&c2, &q2, w2, 0, u32::MAX).0 >> j & 1, 1);
        }
        for (f, b) in [
            (0, u32::MAX),
            (idx[j], idx[j]),
            (idx[j], idx[j].saturating_add(1)),
            (from, bound),
        ] {
            prop_assert_eq!(
                quad_hits(&c2, &q2, w2, f, b),
                quad_hits_scalar(&c2, &q2, w2, f, b)
            );
            prop_assert_eq!(
                quad_hits(&c, &q2, w2, f, b),
                quad_hits_scalar(&c, &q2, w2, f, b)
            );
        }
        Ok(())
    }
}
