//! Flow hash of the 5-tuple for ECMP member selection and RSS-like spreading.
//!
//! Folded multiply (64x64 -> 128, high half XOR low half: one `mul` on x86-64), as in
//! foldhash/ahash: three multiplies for the whole tuple, no table, no loop, no branch
//! except a select. Addresses are hashed as 16 bytes whatever the family (IPv4 has
//! zero upper bytes), so both families share one straight-line path. For fragments
//! (first and non-first) the ports are left out so that all fragments of a datagram
//! pick the same ECMP member; otherwise the first would follow the 5-tuple and the
//! rest the 3-tuple, and reassembly at the far end would see reordering.
#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use super::parse::{Fragment, L3Kind, Parsed};

/// The seed [`flow_hash`] uses. Boxes in series should pick different seeds (via
/// [`flow_hash_with_seed`]) to avoid ECMP hash polarisation.
pub const FLOW_HASH_DEFAULT_SEED: u64 = 0x243f_6a88_85a3_08d3;

const K0: u64 = 0x1319_8a2e_0370_7344;
const K1: u64 = 0xa409_3822_299f_31d0;
const K2: u64 = 0x082e_fa98_ec4e_6c89;
const K3: u64 = 0x4528_21e6_38d0_1377;
const K4: u64 = 0xbe54_66cf_34e9_0c6c;

#[inline(always)]
fn fmul(a: u64, b: u64) -> u64 {
    let r = u128::from(a) * u128::from(b);
    (r as u64) ^ ((r >> 64) as u64)
}

/// An address as [`Parsed::src`] holds it, as its two little-endian words.
#[inline(always)]
pub(super) fn halves(a: &[u8; 16]) -> (u64, u64) {
    let v = u128::from_le_bytes(*a);
    (v as u64, (v >> 64) as u64)
}

/// Stable 32-bit hash of (src, dst, proto, sport, dport) with the default seed. Not
/// symmetric. Same input, same output, on every run and every machine.
#[inline]
pub fn flow_hash(p: &Parsed) -> u32 {
    flow_hash_with_seed(p, FLOW_HASH_DEFAULT_SEED)
}

/// [`flow_hash`] with an explicit seed.
#[inline]
pub fn flow_hash_with_seed(p: &Parsed, seed: u64) -> u32 {
    let ports = (u64::from(p.sport) << 16) | u64::from(p.dport);
    let ports = if p.frag == Fragment::None { ports } else { 0 };
    mix(
        halves(&p.src),
        halves(&p.dst),
        ports | (u64::from(p.proto) << 32) | ((p.kind as u64) << 40),
        seed,
    )
}

/// [`flow_hash`] of a tuple given as words: `src` and `dst` as the
/// little-endian halves of [`Parsed::src`] and `dst`, `ports` as `sport <<
/// 16 | dport` (0 for a fragment). For a view of the frame that has them at
/// hand ([`PlainV4::flow_hash`](super::PlainV4::flow_hash)).
#[inline(always)]
pub(super) fn flow_hash_words(
    src: (u64, u64),
    dst: (u64, u64),
    proto: u8,
    kind: L3Kind,
    ports: u32,
) -> u32 {
    let misc = u64::from(ports) | (u64::from(proto) << 32) | ((kind as u64) << 40);
    mix(src, dst, misc, FLOW_HASH_DEFAULT_SEED)
}

/// The hash of the tuple's words (`misc`: the ports, the protocol and the
/// family).
#[inline(always)]
fn mix((s0, s1): (u64, u64), (d0, d1): (u64, u64), misc: u64, seed: u64) -> u32 {
    let a = fmul(s0 ^ seed ^ K0, d0 ^ K1);
    let b = fmul(s1 ^ K2, d1 ^ K3);
    let h = fmul(a ^ misc ^ K4, b ^ seed);
    (h ^ (h >> 32)) as u32
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::pkt::parse::{ipproto, L3Kind};

    fn v4(src: u32, dst: u32, proto: u8, sport: u16, dport: u16) -> Parsed {
        let mut p = Parsed {
            kind: L3Kind::V4,
            proto,
            sport,
            dport,
            ..Parsed::default()
        };
        p.src[..4].copy_from_slice(&src.to_be_bytes());
        p.dst[..4].copy_from_slice(&dst.to_be_bytes());
        p
    }

    #[test]
    fn stable_and_sensitive_to_every_field() {
        let base = v4(0x0a00_0001, 0x0a00_0002, ipproto::UDP, 1000, 53);
        // Golden values pin the hash: ECMP member choice must not change across
        // restarts, builds or machines (flows would move between paths).
        let golden = flow_hash(&base);
        assert_eq!(golden, 0x2913_932a);
        assert_eq!(flow_hash_with_seed(&base, 1), 0xe774_bc0e);
        let variants = [
            v4(0x0a00_0003, 0x0a00_0002, ipproto::UDP, 1000, 53),
            v4(0x0a00_0001, 0x0a00_0003, ipproto::UDP, 1000, 53),
            v4(0x0a00_0001, 0x0a00_0002, ipproto::TCP, 1000, 53),
            v4(0x0a00_0001, 0x0a00_0002, ipproto::UDP, 1001, 53),
            v4(0x0a00_0001, 0x0a00_0002, ipproto::UDP, 1000, 54),
        ];
        for v in variants {
            assert_ne!(flow_hash(&v), golden, "{v:?}");
        }
        let mut v6 = base;
        v6.kind = L3Kind::V6;
        assert_ne!(flow_hash(&v6), golden);
    }

    #[test]
    fn fragments_ignore_ports() {
        let mut a = v4(1, 2, ipproto::UDP, 1000, 53);
        a.frag = Fragment::First;
        let mut b = v4(1, 2, ipproto::UDP, 0, 0);
        b.frag = Fragment::NonFirst;
        assert_eq!(flow_hash(&a), flow_hash(&b));
    }

    /// Low bits (what ECMP uses via `% n`) spread evenly over sequential flows: a
    /// chi-square test over 16 buckets for several deterministic flow families.
    #[test]
    fn low_bits_spread_evenly() {
        let families: [&dyn Fn(u32) -> Parsed; 4] = [
            &|i| v4(0x0a00_0000 + i, 0xc0a8_0001, 17, 1234, 80),
            &|i| v4(0x0a00_0001, 0xc0a8_0000 + i, 17, 1234, 80),
            &|i| v4(0x0a00_0001, 0xc0a8_0001, 6, 1024 + i as u16, 80),
            &|i| {
                let mut p = v4(0, 0, 6, 443, 50000);
                p.kind = L3Kind::V6;
                p.src = (0x2001_0db8_u128 << 96 | u128::from(i)).to_be_bytes();
                p.dst = (0x2001_0db8_u128 << 96 | 1).to_be_bytes();
                p
            },
        ];
        const N: u32 = 16_000;
        const B: usize = 16;
        for (f, fam) in families.iter().enumerate() {
            let mut buckets = [0u32; B];
            for i in 0..N {
                buckets[flow_hash(&fam(i)) as usize % B] += 1;
            }
            let e = f64::from(N) / B as f64;
            let chi2: f64 = buckets
                .iter()
                .map(|&o| (f64::from(o) - e).powi(2) / e)
                .sum();
            // 15 degrees of freedom: p = 0.001 at 37.7.
            assert!(chi2 < 37.7, "family {f}: chi2 {chi2} buckets {buckets:?}");
        }
    }
}
