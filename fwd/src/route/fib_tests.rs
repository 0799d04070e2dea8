//! The FIB's tests: its pool's accounting, fill and collapse, the burst
//! lookups against the single ones, the pairs and their room (`fib.rs`).

use super::*;

/// The pool grown to three dirs, then back to one: each time it
/// accounts exactly what a copy of it does.
#[test]
fn a_pool_grown_or_shrunk_counts_what_its_copy_does() {
    let mut f = Fib::<32>::new();
    // One group per /25, each under its own /24.
    let n = 2 * GROUPS_PER_DIR + 10;
    for i in 0..n as u128 {
        f.apply_prefix(i << 8, 25, 7, &[]);
    }
    f.trim();
    assert_eq!(
        (f.groups_used(), f.groups_capacity()),
        (n, 3 * GROUPS_PER_DIR)
    );
    let copy = f.clone();
    assert_eq!(f.mem(&mut HashSet::new()), copy.mem(&mut HashSet::new()));
    drop(copy);
    for i in GROUPS_PER_DIR as u128..n as u128 {
        f.apply_prefix(i << 8, 25, 0, &[]);
    }
    f.trim();
    assert_eq!(f.groups_capacity(), GROUPS_PER_DIR);
    let copy = f.clone();
    assert_eq!(f.mem(&mut HashSet::new()), copy.mem(&mut HashSet::new()));
}

/// The page prefetch takes any address of the family, at both ends,
/// on an empty and on a written table, and changes nothing.
#[test]
fn prefetch_page_takes_every_address() {
    let mut f4 = Fib::<32>::new();
    let mut f6 = Fib::<128>::new();
    for _ in 0..2 {
        for a in [0, 0x0a00_0000, u128::from(u32::MAX)] {
            f4.prefetch_page(a);
        }
        for a in [0, 0x2001_0db8 << 96, u128::MAX] {
            f6.prefetch_page(a);
        }
        f4.apply_prefix(0x0a00_0000, 24, 5, &[]);
        f6.apply_prefix(0x2001_0db8 << 96, 48, 5, &[]);
    }
    assert_eq!((f4.lookup(0x0a00_0001), f4.lookup(0x0b00_0000)), (5, 0));
    assert_eq!(f6.lookup((0x2001_0db8 << 96) | 1), 5);
}

#[test]
fn fill_and_collapse_v4() {
    let base = Fib::<32>::new();
    let base_mem = base.mem(&mut HashSet::new());
    let mut f = base.clone();
    // 10.0.0.0/8 -> 5, 10.1.2.3/32 -> 6
    f.apply_prefix(0x0a00_0000, 8, 5, &[(0x0a01_0203, 32)]);
    f.apply_prefix(0x0a01_0203, 32, 6, &[]);
    assert_eq!(f.lookup(0x0a01_0203), 6);
    assert_eq!(f.lookup(0x0a01_0202), 5);
    assert_eq!(f.lookup(0x0aff_ffff), 5);
    assert_eq!(f.lookup(0x0b00_0000), 0);
    assert_eq!(f.groups_used(), 1);
    // delete the /32: falls back to the /8, group collapses
    f.apply_prefix(0x0a01_0203, 32, 5, &[]);
    assert_eq!(f.groups_used(), 0);
    assert_eq!(f.lookup(0x0a01_0203), 5);
    f.apply_prefix(0x0a00_0000, 8, 0, &[]);
    f.trim();
    assert_eq!(f.tbl24_pages(), 0);
    assert_eq!(f.groups_capacity(), 0);
    assert_eq!(f.mem(&mut HashSet::new()), base_mem);
}

/// `base` (64 lanes) with lane `at` replaced by `other`.
fn one_lane_elsewhere<A: Copy>(base: &[A], at: usize, other: A) -> Vec<A> {
    let mut b = base.to_vec();
    b[at] = other;
    b
}

/// Every burst, at lengths 1 to 64, gives each lane what the one-address
/// lookup gives it.
fn assert_bursts_as_single<A: Copy + std::fmt::LowerHex>(
    bursts: &[Vec<A>],
    burst: impl Fn(&[A], &mut [u32]),
    single: impl Fn(A) -> u32,
) {
    for b in bursts {
        for len in [1, 2, 17, 31, 32, 64] {
            let mut out = [0u32; BURST_MAX];
            burst(&b[..len], &mut out[..len]);
            for (k, &a) in b[..len].iter().enumerate() {
                assert_eq!(out[k], single(a), "len {len} lane {k} {a:#x}");
            }
        }
    }
}

/// IPv4 burst lookups whose lanes all fall in one page of the first
/// level (its directory walked once for the burst), and bursts where
/// one lane (first, inside, last) is in the next page or far away, and
/// bursts in one /24 (its entry read once): every lane gets what the
/// one-address lookup gives, /24s and the longer routes below them alike.
#[test]
fn v4_burst_lookups_in_one_first_level_page_and_across() {
    let mut f = Fib::<32>::new();
    // A page of the first level is 1024 /24s, a /14: 10.0.0.0/14 is
    // one, 10.4.0.0/14 the next.
    f.apply_prefix(0x0a00_0000, 8, 1, &[]);
    for k in (0..2048u128).step_by(3) {
        // Every third /24 of 10.0/13 a route of its own.
        f.apply_prefix(0x0a00_0000 | (k << 8), 24, 100 + k as u32, &[]);
    }
    // Longer routes (a group below their /24) in both pages.
    for k in [5u128, 700, 1030, 2000] {
        f.apply_prefix(0x0a00_0000 | (k << 8) | 0x80, 25, 10_000 + k as u32, &[]);
    }
    f.trim();
    // Every lane in the first page, some below a /25.
    let page: Vec<u32> = (0..64)
        .map(|k| 0x0a00_0000 + (((k * 37) % 1024) << 8) + (k * 61) % 256)
        .collect();
    let bursts = [
        page.clone(),
        // In one /24: below a /25 (a group), across its start, and of a
        // /24 route alone.
        (0..64).map(|k| 0x0a00_0580 + k).collect(),
        (0..64).map(|k| 0x0a00_0560 + k).collect(),
        (0..64).map(|k| 0x0a00_0300 + 3 * k).collect(),
        // One lane in the next page: the first, one inside, the last.
        one_lane_elsewhere(&page, 0, 0x0a04_0000),
        one_lane_elsewhere(&page, 17, 0x0a04_0681),
        one_lane_elsewhere(&page, 63, 0x0a07_d0ff),
        // One lane far away (no route) and one in the lowest page.
        one_lane_elsewhere(&page, 9, 0xc000_0201),
        one_lane_elsewhere(&page, 40, 7),
    ];
    assert_bursts_as_single(&bursts, |b, o| f.lookup_burst(b, o), |a| f.lookup(a));
    // The routes are there (not all lanes 0 or all the /8).
    assert_eq!(f.lookup(0x0a00_0001), 100);
    assert_eq!(f.lookup(0x0a00_0581), 10_005);
    assert_eq!(f.lookup(0x0a04_0681), 10_000 + 1030);
    assert_eq!(f.lookup(0x0a00_0101), 1);
    assert_eq!(f.lookup(0xc000_0201), 0);
}

/// [`v4_burst_lookups_in_one_first_level_page_and_across`]'s IPv6
/// counterpart: a first-level page is 1024 /24s (a /14).
#[test]
fn v6_burst_lookups_in_one_first_level_page_and_across() {
    let mut f = Fib::<128>::new();
    let p24 = |k: u128| (0x20_0000 + k) << 104;
    let p48 = |k: u128| p24(k) | (0x42u128 << 80);
    f.apply_prefix(0x2000u128 << 112, 16, 1, &[]);
    for k in (0..2048u128).step_by(3) {
        f.apply_prefix(p24(k), 24, 100 + k as u32, &[]);
    }
    // /48s (groups below their /24) in both pages.
    for k in [6u128, 700, 1029, 2001] {
        f.apply_prefix(p48(k), 48, 10_000 + k as u32, &[]);
    }
    f.trim();
    let page: Vec<u128> = (0..64u128)
        .map(|k| {
            if k % 2 == 0 {
                p24((k * 37) % 1024) | k
            } else {
                p48((k * 37) % 1024) | k
            }
        })
        .collect();
    let bursts = [
        page.clone(),
        one_lane_elsewhere(&page, 0, p24(1024) | 1),
        one_lane_elsewhere(&page, 17, p48(1029)),
        one_lane_elsewhere(&page, 63, p48(2001)),
        one_lane_elsewhere(&page, 9, 0x2001u128 << 112),
    ];
    assert_bursts_as_single(&bursts, |b, o| f.lookup_burst(b, o), |a| f.lookup(a));
    assert_eq!(f.lookup(p24(3)), 103);
    assert_eq!(f.lookup(p48(1029)), 10_000 + 1029);
    assert_eq!(f.lookup(p24(1)), 1);
}

/// IPv6 burst lookups through a pool of more than one dir, with each
/// level walked both ways (most lanes in their neighbour's page, and
/// lanes scattered over the pool) and lanes that finish at different
/// levels: every lane gets its route.
#[test]
fn v6_burst_lookups_clustered_and_scattered() {
    let mut f = Fib::<128>::new();
    // /48 `i` (value i + 1) under a /40 of its own, and the /48 at
    // byte 0x80 of that /40 with the same value (the lanes look up
    // byte 0): a group each at the 40-48 level (one /48 alone would
    // make it a pair), more than one dir's worth.
    let n = GROUPS_PER_DIR as u128 + 500;
    let p48 = |i: u128| (0x2001u128 << 112) | (i << 88);
    for i in 0..n {
        f.apply_prefix(p48(i), 48, i as u32 + 1, &[]);
        f.apply_prefix(p48(i) | 0x80 << 80, 48, i as u32 + 1, &[]);
    }
    // /64 `j` under /48 0 (value 100_000 + j).
    let p64 = |j: u128| p48(0) | (j << 64);
    for j in 0..300 {
        f.apply_prefix(p64(j), 64, 100_000 + j as u32, &[]);
    }
    f.trim();
    assert!(f.groups_used() > GROUPS_PER_DIR);
    let want = |a: u128| -> u32 {
        if a >> 112 != 0x2001 || (a >> 104) & 0xff != 0 {
            0
        } else if a >> 80 == p48(0) >> 80 && (a >> 64) & 0xffff < 300 {
            100_000 + ((a >> 64) & 0xffff) as u32
        } else if (a >> 88) & 0xffff < n {
            ((a >> 88) & 0xffff) as u32 + 1
        } else {
            0
        }
    };
    let bursts: [Vec<u128>; 3] = [
        // Clustered: the /64s of /48 0, neighbours in one page.
        (0..64).map(|k| p64(k * 3) | 5).collect(),
        // Scattered over the whole pool.
        (0..64).map(|k| p48((k * 977) % n) | 1).collect(),
        // Both, and lanes that stop at the first level (outside the
        // /24) or on the way down (no /48 there).
        (0..64u128)
            .map(|k| match k % 4 {
                0 => p64(k) | 9,
                1 => p48((k * 601) % n),
                2 => 0x2002u128 << 112,
                _ => p48(n + k),
            })
            .collect(),
    ];
    for b in &bursts {
        for len in [1, 31, 32, 64] {
            let mut out = [0u32; BURST_MAX];
            f.lookup_burst(&b[..len], &mut out[..len]);
            for (k, &a) in b[..len].iter().enumerate() {
                assert_eq!((out[k], f.lookup(a)), (want(a), want(a)), "lane {k} {a:#x}");
            }
        }
    }
}

/// IPv6 burst lookups whose lanes share their top `c` address bits,
/// for every kind of `c` around the levels' byte boundaries (the levels
/// that read only shared bits are walked once for the burst), over
/// routes that end inside and below the shared part: every lane gets
/// what the one-address lookup gives.
#[test]
fn v6_burst_lookups_with_a_shared_prefix() {
    let b: u128 = 0x2001_0db8_0a01_0203_0405_0607_0809_0a0b;
    let lens = [24u32, 32, 40, 48, 56, 64, 72, 100, 128];
    // Every length here is at least 24.
    let net = |a: u128, l: u32| a & (u128::MAX << (128 - l));
    let mut f = Fib::<128>::new();
    // Shortest first, so each more specific route overwrites its range.
    for &l in &lens {
        f.apply_prefix(net(b, l), l as u8, l, &[]);
        let sibling = b ^ (1 << (128 - l));
        f.apply_prefix(net(sibling, l), l as u8, 1000 + l, &[]);
    }
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (u128::from(x) << 64) | u128::from(x.rotate_left(29))
    };
    let bases = [
        b,
        b ^ (1 << 60),
        b ^ (1 << 70),
        b ^ (1 << 90),
        b ^ (1 << 100),
        0x2002 << 112,
    ];
    let mut finished_shared = 0;
    for &base in &bases {
        for c in [
            0u32, 1, 8, 23, 24, 25, 31, 32, 33, 40, 47, 48, 55, 56, 63, 64, 65, 72, 100, 127, 128,
        ] {
            let low = if c == 0 {
                u128::MAX
            } else {
                (1u128 << (128 - c)).wrapping_sub(1)
            };
            for len in [1, 2, 31, 64] {
                let burst: Vec<u128> = (0..len)
                    .map(|k| match (k, c) {
                        (0, _) | (_, 128) => base,
                        // Lane 1 differs at the first unshared bit.
                        (1, _) => base ^ (1 << (127 - c)),
                        _ => base ^ (rnd() & low),
                    })
                    .collect();
                let mut out = [0u32; BURST_MAX];
                f.lookup_burst(&burst, &mut out[..len]);
                for (k, &a) in burst.iter().enumerate() {
                    assert_eq!(out[k], f.lookup(a), "c {c} len {len} lane {k} {a:#x}");
                }
                let stop = |e: u32| (24..=64).contains(&e) && c >= e;
                finished_shared += usize::from(len > 1 && out[..len].iter().all(|&e| stop(e)));
            }
        }
    }
    // Bursts that ended inside the shared levels were among them.
    assert!(finished_shared > 0);
}

/// An IPv6 host route alone in its /24 is a chain of pairs, not of
/// groups; a second one that shares its path down to byte 10 makes
/// that level a group (two exceptions) and leaves pairs above and
/// below; deleting it brings back the one chain, and deleting both the
/// empty table's memory. Single and burst lookups agree throughout.
#[test]
fn host_routes_are_chains_of_pairs() {
    let base = Fib::<128>::new();
    let base_mem = base.mem(&mut HashSet::new());
    let mut f = base.clone();
    let a: u128 = 0x2001_0db8_0a01_0203_0405_0607_0809_0a0b;
    // Differs from `a` first in byte 10 (bits 40..48).
    let b: u128 = a ^ 0x80 << 40;
    let check = |f: &Fib<128>, want: &[(u128, u32)]| {
        let addrs: Vec<u128> = want.iter().map(|w| w.0).collect();
        let mut out = vec![0u32; addrs.len()];
        f.lookup_burst(&addrs, &mut out);
        for (&(x, v), &o) in want.iter().zip(&out) {
            assert_eq!((f.lookup(x), o), (v, v), "{x:#x}");
        }
    };
    f.apply_prefix(a, 128, 7, &[]);
    f.trim();
    // Bytes 3..=14 a pair each (in one group), byte 15 a group: the
    // last level's one exception is the route itself, and its level
    // stays a group (see `group_shape`).
    assert_eq!((f.groups_used(), f.pairs_used()), (2, 12));
    check(&f, &[(a, 7), (a ^ 1, 0), (a ^ 1 << 100, 0), (b, 0)]);
    f.apply_prefix(b, 128, 8, &[]);
    f.trim();
    // Byte 10's level a group; 7 pairs above it, 4 below each route,
    // then each route's last level.
    assert_eq!((f.groups_used(), f.pairs_used()), (4, 7 + 2 * 4));
    check(&f, &[(a, 7), (b, 8), (a ^ 1, 0), (b ^ 1 << 30, 0)]);
    // A /64 over both: the levels down to byte 7 take its value as
    // the pairs' other entry.
    let p64 = a & !((1u128 << 64) - 1);
    f.apply_prefix(p64, 64, 9, &[(a, 128), (b, 128)]);
    f.trim();
    check(&f, &[(a, 7), (b, 8), (a ^ 1, 9), (p64, 9), (p64 - 1, 0)]);
    f.apply_prefix(p64, 64, 0, &[(a, 128), (b, 128)]);
    f.apply_prefix(b, 128, 0, &[]);
    f.trim();
    assert_eq!((f.groups_used(), f.pairs_used()), (2, 12));
    check(&f, &[(a, 7), (b, 0), (p64, 0)]);
    f.apply_prefix(a, 128, 0, &[]);
    f.trim();
    assert_eq!((f.groups_used(), f.pairs_used()), (0, 0));
    assert_eq!(f.mem(&mut HashSet::new()), base_mem);
}

/// Pairs are only where their index fits the entry (the groups below
/// [`PAIR_GROUPS`], which an IPv6 FIB's whole groups leave to them):
/// once those hold all the pairs they can, a path stays groups; freed
/// pairs make room again. (The unit tests' bound: 64 groups, 8,192
/// pairs.)
#[test]
fn pairs_past_their_groups_stay_groups() {
    let mut f = Fib::<128>::new();
    let cap = PAIR_GROUPS * PAIRS_PER_GROUP;
    assert_eq!(cap, 8192);
    // Host routes in /24s of their own: 12 pairs of path each (bytes
    // 3..=14) and their last level's group, while pairs last.
    let host = |i: u128| (0x2000u128 + i) << 112 | 1;
    let n = cap / 12 + 17;
    for i in 0..n as u128 {
        f.apply_prefix(host(i), 128, i as u32 + 1, &[]);
    }
    f.trim();
    let over = n * 12 - cap;
    assert_eq!(
        (f.pairs_used(), f.groups_used()),
        (cap, n + PAIR_GROUPS + over)
    );
    // The room's being full is remembered, so the writes after do not
    // look through every block and group of it again (each did, and a
    // batch of scattered /128s past the room went 4x slower a route).
    assert_eq!(f.pool.block_hint, f.pool.blocks.len());
    assert_eq!(f.pool.pair_hint, PAIR_GROUPS / 64);
    let check = |f: &Fib<128>| {
        let addrs: Vec<u128> = (0..n as u128).step_by(7).map(host).collect();
        let mut out = vec![0u32; addrs.len()];
        for (c, o) in addrs.chunks(BURST_MAX).zip(out.chunks_mut(BURST_MAX)) {
            f.lookup_burst(c, o);
        }
        for (&a, &o) in addrs.iter().zip(&out) {
            let want = ((a >> 112) - 0x2000) as u32 + 1;
            assert_eq!((f.lookup(a), o, f.lookup(a ^ 2)), (want, want, 0), "{a:#x}");
        }
    };
    check(&f);
    // Ten routes' pairs freed: the next route's path is pairs again.
    for i in 0..10u128 {
        f.apply_prefix(host(i), 128, 0, &[]);
    }
    let late = host(n as u128 + 100);
    f.apply_prefix(late, 128, 9, &[]);
    f.trim();
    assert_eq!(f.pairs_used(), cap - 10 * 12 + 12);
    assert_eq!((f.lookup(late), f.lookup(host(3))), (9, 0));
    for i in 0..10u128 {
        f.apply_prefix(host(i), 128, i as u32 + 1, &[]);
    }
    check(&f);
}

/// A pair whose one exception comes to end lookups (the route below
/// it deleted, a covering route's value left there) is a group again,
/// as a group of that shape stays one.
#[test]
fn a_pair_whose_exception_ends_lookups_is_a_group_again() {
    let mut f = Fib::<128>::new();
    let a: u128 = 0x2001_0db8_0a01_0203_0405_0607_0809_0a0b;
    let c = a & !0xff;
    f.apply_prefix(c, 120, 5, &[]);
    // Bytes 3..=13 pairs; byte 14's level a group (its exception is
    // the /120's value).
    assert_eq!((f.groups_used(), f.pairs_used()), (2, 11));
    f.apply_prefix(a, 128, 7, &[]);
    // Byte 14's level now leads to the /128's group: a pair.
    assert_eq!((f.groups_used(), f.pairs_used()), (2, 12));
    assert_eq!((f.lookup(a), f.lookup(a ^ 1), f.lookup(c - 1)), (7, 5, 0));
    f.apply_prefix(a, 128, 5, &[]);
    assert_eq!((f.groups_used(), f.pairs_used()), (2, 11));
    assert_eq!((f.lookup(a), f.lookup(a ^ 1), f.lookup(c - 1)), (5, 5, 0));
    let mut out = [0u32; 3];
    f.lookup_burst(&[a, c, c - 1], &mut out);
    assert_eq!(out, [5, 5, 0]);
}

#[test]
fn top_of_space_v6() {
    let mut f = Fib::<128>::new();
    f.apply_prefix(u128::MAX, 128, 7, &[]);
    f.apply_prefix(u128::MAX - 1, 127, 8, &[(u128::MAX, 128)]);
    f.apply_prefix(0, 0, 9, &[(u128::MAX - 1, 127)]);
    assert_eq!(f.lookup(u128::MAX), 7);
    assert_eq!(f.lookup(u128::MAX - 1), 8);
    assert_eq!(f.lookup(u128::MAX - 2), 9);
    assert_eq!(f.lookup(0), 9);
    let mut out = [0u32; 4];
    f.lookup_burst(&[0, u128::MAX, u128::MAX - 1, u128::MAX - 2], &mut out);
    assert_eq!(out, [9, 7, 8, 9]);
    // The last level's group holds two routes; the 12 above it one
    // exception each: 12 pairs, in one group.
    assert_eq!((f.groups_used(), f.pairs_used()), (2, 12));
}
