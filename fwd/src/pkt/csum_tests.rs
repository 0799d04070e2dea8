//! Checksum tests: published vectors, the RFC 1624 corner case, and property tests of
//! the fast sums and the incremental update against naive full recomputation.

use super::*;
use proptest::prelude::*;

/// Textbook one's-complement sum over 16-bit words, one word at a time.
fn naive_sum16(data: &[u8]) -> u16 {
    let mut s: u32 = 0;
    for c in data.chunks(2) {
        let w = u32::from(c[0]) << 8 | u32::from(*c.get(1).unwrap_or(&0));
        s += w;
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// The classic example header (checksum field 0xb861).
const HDR: [u8; 20] = [
    0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8, 0x00, 0x01,
    0xc0, 0xa8, 0x00, 0xc7,
];

#[test]
fn ipv4_header_known_vector() {
    assert_eq!(ipv4_header_checksum(&HDR), 0xb861);
    let mut zeroed = HDR;
    zeroed[10..12].fill(0);
    assert_eq!(ipv4_header_checksum(&zeroed), 0xb861);
    assert!(verify_ipv4_header(&HDR));
    for bit in 0..160 {
        let mut h = HDR;
        h[bit / 8] ^= 1 << (bit % 8);
        assert!(!verify_ipv4_header(&h), "bit {bit} flipped still verifies");
    }
    assert!(!verify_ipv4_header(&HDR[..19]));
    assert!(!verify_ipv4_header(&[]));
}

/// RFC 1071 §3 worked example: 00 01 f2 03 f4 f5 f6 f7 sums to 0xddf2.
#[test]
fn rfc1071_example_and_odd_length() {
    let d = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
    assert_eq!(fold(sum(&d, 0)), 0xddf2);
    assert_eq!(checksum(&d), !0xddf2);
    // An odd final byte is the high half of a zero-padded word.
    assert_eq!(fold(sum(&[0xab], 0)), 0xab00);
    assert_eq!(fold(sum(&[0x12, 0x34, 0x56], 0)), 0x1234 + 0x5600);
    assert_eq!(fold(sum(&[], 0)), 0);
    // All-ones data sums to 0xffff (negative zero), never to 0.
    assert_eq!(fold(sum(&[0xff; 64], 0)), 0xffff);
}

/// The fold's edges: zero stays zero, every all-ones width is negative
/// zero (0xFFFF), carries out of each half wrap around.
#[test]
fn fold_edges() {
    assert_eq!(fold(0), 0);
    assert_eq!(fold(0xffff), 0xffff);
    assert_eq!(fold(0x1_0000), 1);
    assert_eq!(fold(u64::from(u32::MAX)), 0xffff);
    assert_eq!(fold(u64::MAX), 0xffff);
    assert_eq!(fold(1 << 63), 0x8000);
    assert_eq!(fold(0xffff_ffff_0000_0001), 1);
}

/// RFC 1624 §4: m = 0x5555 -> 0x3285 with the other words summing to 0xCD7A. A full
/// recomputation gives 0x0000; eqn. 3 must too (RFC 1141's eqn. 2 gives 0xFFFF).
#[test]
fn rfc1624_corner_case() {
    assert_eq!(incremental_update(0xdd2f, 0x5555, 0x3285), 0x0000);

    // The same situation in a real header: word 2 (identification) is m, and the
    // destination's low word is solved so that the other words sum to 0xCD7A.
    let mut h = [0u8; 20];
    h[0] = 0x45;
    h[3] = 20;
    h[4..6].copy_from_slice(&0x5555u16.to_be_bytes());
    h[8] = 64;
    h[9] = 17;
    h[12..16].copy_from_slice(&[10, 0, 0, 1]);
    h[16..18].copy_from_slice(&[10, 0]);
    let mut rest = h;
    rest[4..6].fill(0);
    let partial = naive_sum16(&rest);
    // adj such that partial + adj == 0xCD7A in one's complement.
    let adj = {
        let s = u32::from(0xcd7au16) + u32::from(!partial);
        let s = (s & 0xffff) + (s >> 16);
        s as u16
    };
    h[18..20].copy_from_slice(&adj.to_be_bytes());
    let hc = ipv4_header_checksum(&h);
    assert_eq!(hc, 0xdd2f);
    h[10..12].copy_from_slice(&hc.to_be_bytes());
    let mut after = h;
    after[4..6].copy_from_slice(&0x3285u16.to_be_bytes());
    let full = ipv4_header_checksum(&after);
    assert_eq!(full, 0x0000);
    let inc = incremental_update(hc, 0x5555, 0x3285);
    assert_eq!(inc, full);
    after[10..12].copy_from_slice(&inc.to_be_bytes());
    assert!(verify_ipv4_header(&after));
    // RFC 1141 / eqn. 2 (HC - ~m - m') for contrast: the "wrong" zero.
    let eqn2 = {
        let mut s = u32::from(hc) + u32::from(0x5555u16) + u32::from(!0x3285u16);
        s = (s & 0xffff) + (s >> 16);
        s = (s & 0xffff) + (s >> 16);
        s as u16
    };
    assert_eq!(eqn2, 0xffff);
}

fn pseudo_v4(src: [u8; 4], dst: [u8; 4], proto: u8, seg: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&src);
    v.extend_from_slice(&dst);
    v.extend_from_slice(&[0, proto]);
    v.extend_from_slice(&(seg.len() as u16).to_be_bytes());
    v.extend_from_slice(seg);
    v
}

fn pseudo_v6(src: [u8; 16], dst: [u8; 16], nh: u8, seg: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&src);
    v.extend_from_slice(&dst);
    v.extend_from_slice(&(seg.len() as u32).to_be_bytes());
    v.extend_from_slice(&[0, 0, 0, nh]);
    v.extend_from_slice(seg);
    v
}

/// The TTL's constant-form update equals the general RFC 1624 update for
/// every old checksum, whatever the TTL (2..=255) and protocol: the
/// general update of `m -> m - 0x0100` depends on neither.
#[test]
fn ttl_decrement_equals_general_update_exhaustively() {
    for m in [0x0200u16, 0x0211, 0x4006, 0x8011, 0xff06, 0xffff] {
        for c in 0..=u16::MAX {
            assert_eq!(
                u16::from_be_bytes(ttl_decrement_update(c.to_be_bytes())),
                incremental_update(c, m, m - 0x0100),
                "checksum {c:#06x}, word {m:#06x}"
            );
        }
    }
}

/// `verifies` is the fold's verdict (`fold(acc) == 0xFFFF`) at the edges:
/// zero, multiples of `0xFFFF` and their neighbours, the widest sums.
#[test]
fn verifies_is_the_fold_at_the_edges() {
    let mut cases = vec![0u64, 1, u64::MAX, u64::MAX - 1, 1 << 63, (1 << 48) - 1];
    for k in [
        1u64,
        2,
        0xffff,
        0x1_0000,
        0x1_0001,
        0xffff_ffff,
        0x1_0001_0001,
    ] {
        let m = 0xffff * k;
        cases.extend([m - 1, m, m + 1]);
    }
    for acc in cases {
        assert_eq!(verifies(acc), fold(acc) == 0xffff, "{acc:#x}");
    }
}

proptest! {
    #![proptest_config(crate::pkt::proptest_config(512))]

    /// The 32-bit-word sum equals the textbook 16-bit sum for any data and length.
    #[test]
    fn fast_sum_matches_naive(data in proptest::collection::vec(any::<u8>(), 0..300)) {
        prop_assert_eq!(fold(sum(&data, 0)), naive_sum16(&data));
    }

    /// `verifies` is the fold's verdict for any sum, and for sums at and
    /// around multiples of `0xFFFF` (where it says yes).
    #[test]
    fn verifies_matches_the_fold(
        acc in any::<u64>(),
        k in 0..=u64::MAX / 0xffff,
        d in 0u64..3,
    ) {
        prop_assert_eq!(verifies(acc), fold(acc) == 0xffff);
        let near = (k * 0xffff).wrapping_add(d).wrapping_sub(1);
        prop_assert_eq!(verifies(near), fold(near) == 0xffff, "{:#x}", near);
    }

    /// The fold equals the textbook one (add the halves and carry twice at
    /// each width) for every 64-bit sum, not only those short data reach.
    #[test]
    fn fold_matches_the_textbook_fold(acc in any::<u64>()) {
        let mut a = acc;
        a = (a & 0xffff_ffff) + (a >> 32);
        a = (a & 0xffff_ffff) + (a >> 32);
        a = (a & 0xffff) + (a >> 16);
        a = (a & 0xffff) + (a >> 16);
        prop_assert_eq!(fold(acc), a as u16);
    }

    /// The 20-byte verification (native-endian 64-bit words) says yes
    /// exactly when the textbook 16-bit sum is 0xFFFF: over any bytes, and
    /// over headers whose checksum field was filled in.
    #[test]
    fn header_verification_matches_naive(mut h in any::<[u8; 20]>(), fill in any::<bool>()) {
        if fill {
            let c = ipv4_header_checksum(&h);
            h[10..12].copy_from_slice(&c.to_be_bytes());
            prop_assert!(verify_ipv4_header(&h));
        }
        prop_assert_eq!(verify_ipv4_header(&h), naive_sum16(&h) == 0xffff);
    }

    /// L4 checksums equal the naive sum over an explicitly built pseudo-header.
    #[test]
    fn l4_checksums_match_naive_pseudo_header(
        src in any::<[u8; 16]>(), dst in any::<[u8; 16]>(), proto in any::<u8>(),
        seg in proptest::collection::vec(any::<u8>(), 0..200),
    ) {
        let s4 = [src[0], src[1], src[2], src[3]];
        let d4 = [dst[0], dst[1], dst[2], dst[3]];
        prop_assert_eq!(l4_checksum_v4(s4, d4, proto, &seg), !naive_sum16(&pseudo_v4(s4, d4, proto, &seg)));
        prop_assert_eq!(l4_checksum_v6(&src, &dst, proto, &seg), !naive_sum16(&pseudo_v6(src, dst, proto, &seg)));
    }

    /// Changing any one 16-bit word of a header (other than the checksum itself) and
    /// updating incrementally gives exactly the fully recomputed checksum, also
    /// across a chain of several updates.
    #[test]
    fn incremental_equals_full(
        mut words in proptest::collection::vec(any::<u16>(), 10..30),
        changes in proptest::collection::vec((0usize..30, any::<u16>()), 1..6),
    ) {
        words[0] = 0x4500 | (words[0] & 0x00ff) | 0x0100; // never an all-zero header
        let bytes = |w: &[u16]| w.iter().flat_map(|x| x.to_be_bytes()).collect::<Vec<u8>>();
        words[5] = 0;
        words[5] = ipv4_header_checksum(&bytes(&words));
        for (i, new) in changes {
            let i = i % words.len();
            if i == 5 {
                continue;
            }
            let old = words[i];
            words[i] = new;
            let inc = incremental_update(words[5], old, new);
            words[5] = 0;
            prop_assert_eq!(inc, ipv4_header_checksum(&bytes(&words)));
            words[5] = inc;
            prop_assert!(verify_ipv4_header(&bytes(&words)));
        }
    }
}

/// An mbuf's two checksum bits: GOOD or BAD alone are the NIC's word;
/// neither (UNKNOWN) and both (NONE) leave the check to the software; no
/// other bit of `ol_flags` counts.
#[test]
fn the_nic_verdict_reads_dpdks_two_bits() {
    const BAD: u64 = 1 << 4;
    const GOOD: u64 = 1 << 7;
    let other = !(BAD | GOOD);
    for noise in [0, other, 0x0123_4567_89ab_cd00 & other] {
        assert_eq!(NicCsum::from_ol_flags(noise | GOOD).checked(), Some(true));
        assert_eq!(NicCsum::from_ol_flags(noise | BAD).checked(), Some(false));
        assert_eq!(NicCsum::from_ol_flags(noise).checked(), None);
        assert_eq!(NicCsum::from_ol_flags(noise | BAD | GOOD).checked(), None);
    }
    for v in [None, Some(true), Some(false)] {
        assert_eq!(NicCsum::from(v).checked(), v);
    }
    assert_eq!(NicCsum::UNCHECKED.checked(), None);
}
