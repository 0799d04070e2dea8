//! CPU-specific code for the lookups: software prefetch and a SIMD compare.
//!
//! The one place outside `dpdk`, `qsbr` and the socket / tap wrappers where
//! `unsafe` is allowed, fenced like them: every function here is safe to
//! call. On a target without the instructions, a hint does nothing and a
//! computation runs its scalar form, which the tests hold the SIMD form to.
//! Only SSE2 is used, which every x86_64 CPU has: no runtime dispatch.

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

/// The reference for [`lt_mask16`].
#[inline(always)]
pub fn lt_mask_scalar(words: &[u32; 16], v: i32) -> u32 {
    let mut mask = 0u32;
    for (i, &t) in words.iter().enumerate() {
        mask |= u32::from((t as i32) < v) << i;
    }
    mask
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn lt_mask16_is_the_scalar_mask(
            words in proptest::array::uniform16(any::<u32>()),
            v in any::<i32>(),
            pick in 0usize..16,
        ) {
            prop_assert_eq!(lt_mask16(&words, v), lt_mask_scalar(&words, v));
            // And at a word's own value and its neighbours (ties, edges).
            let w = words[pick] as i32;
            for v in [w, w.wrapping_add(1), w.wrapping_sub(1), i32::MIN, i32::MAX] {
                prop_assert_eq!(lt_mask16(&words, v), lt_mask_scalar(&words, v));
            }
        }
    }
}
