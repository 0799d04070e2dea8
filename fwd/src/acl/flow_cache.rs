//! A worker's exact-match flow cache in front of the classifier (Open
//! vSwitch's EMC in spirit): the first match of a key that this worker
//! classified recently, taken back with one hash and one or two key
//! compares instead of a lookup through the trees.
//!
//! An entry holds a whole [`Key`] (every field any rule can look at), the
//! [`Classifier::uid`] of the version that classified it, and that
//! version's code for the match ([`Classifier::classify_burst_coded`]: a
//! base rule's index, or no match). It answers only for that same version:
//! a new version (any batch, a rebuild, a writer made anew) has a new uid,
//! so every older entry stops answering at once, without a flush, and a
//! hit is by construction what the version it is asked under would say.
//! Matches of the overlay (rules changed since the last rebuild, folded
//! into the base by the background rebuild) are not kept.
//!
//! Two tables, each set two cache lines, newest entry first: IPv4 keys in
//! 32-byte entries (the 20 bytes of such a key packed: [`Flow4`], the form
//! the fast path hands over; [`Flow6`] the other table's), four ways a set;
//! every other key in 64-byte ones, two ways a set. Against 64-byte
//! entries, two ways, for every key: 4,096 flows that take turns hit 99.2%
//! of a default cache (97.2%) at 7.2 ns a lookup (8.1-8.2), 16,384 hit
//! 83.6% (72.5%), and the loaded forwarding recipe ran faster
//! (`bench-results/acl_flow_cache.md`). The default, 32,768 entries a
//! family, takes 1 MiB + 2 MiB a worker, of which only the entries of live
//! flows are ever in the CPU's caches. Nothing is shared: each worker owns
//! its cache, and lookups stay free of locks and atomics.
//!
//! A miss costs the classifier's lookup plus the hash, the probe and the
//! insert (+11 ns a lookup in the benchmark). When fewer than one lookup in
//! [`POOR`] hit over a window of [`WINDOW`], as with many short flows or a
//! scan, the cache stands aside for [`ASIDE`] calls (a burst makes one a
//! family: IPv4 keys, then the others, in the fast path) and then tries
//! again: such traffic pays about a tenth of that. Keys that hash alike
//! (chosen by an attacker, or just many flows) only evict each other, and
//! then the cache stands aside the same way.

use super::classifier::{Classifier, CODE_NONE, CODE_OVERLAY};
use super::rule::Key;
use super::RuleEntry;
use crate::arch;

/// Keys looked up together: the hashes of a group are computed and their
/// sets prefetched before the first probe (the worker's burst).
const GROUP: usize = 32;

/// Lookups over which the hit rate is judged.
const WINDOW: u32 = 4096;

/// Below one hit in this many lookups over a window, the cache stands
/// aside ...
const POOR: u32 = 8;

/// ... for this many calls (a burst's, one a family), then tries again
/// for a window.
const ASIDE: u32 = 2048;

/// A key in the form a family's table keeps it: every field of it,
/// exactly (equal words, equal keys), and their hash.
trait Words: Copy + Eq + Default {
    fn of(k: &Key) -> Self;
    /// The key it packs: [`Words::of`]'s inverse.
    fn key(&self) -> Key;
    fn hash(&self) -> u64;
}

/// The hashes' multiplier (2^64 over the golden ratio, odd).
const M: u64 = 0x9E37_79B9_7F4A_7C15;

/// A wide key (IPv6, or IPv4 with bits above the address) as three words.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
struct Wide {
    src: u128,
    dst: u128,
    /// Ports, protocol, DSCP and family; ingress port, VLAN and TCP flags.
    rest: u128,
}

impl Words for Wide {
    #[inline(always)]
    fn of(k: &Key) -> Wide {
        let lo = u64::from(k.sport)
            | u64::from(k.dport) << 16
            | u64::from(k.proto) << 32
            | u64::from(k.dscp) << 40
            | u64::from(k.is_v6) << 48;
        let hi = u64::from(k.in_port) | u64::from(k.vlan) << 16 | u64::from(k.tcp_flags) << 32;
        Wide {
            src: k.src,
            dst: k.dst,
            rest: u128::from(lo) | u128::from(hi) << 64,
        }
    }

    #[inline(always)]
    fn key(&self) -> Key {
        let Wide { src, dst, rest } = *self;
        let (lo, hi) = (rest as u64, (rest >> 64) as u64);
        Key {
            src,
            dst,
            is_v6: (lo >> 48) & 1 != 0,
            proto: (lo >> 32) as u8,
            sport: lo as u16,
            dport: (lo >> 16) as u16,
            in_port: hi as u16,
            vlan: (hi >> 16) as u16,
            dscp: (lo >> 40) as u8,
            tcp_flags: (hi >> 32) as u16,
        }
    }

    /// Multiply-xorshift rounds over the words' halves.
    #[inline(always)]
    fn hash(&self) -> u64 {
        let fold = |x: u128, r: u32| (x as u64) ^ ((x >> 64) as u64).rotate_left(r);
        let mut h = (fold(self.src, 23) ^ fold(self.rest, 7)).wrapping_mul(M);
        h = (h ^ (h >> 31) ^ fold(self.dst, 41)).wrapping_mul(M);
        h ^ (h >> 32)
    }
}

/// An IPv4 key whose addresses fit their 32 bits ([`Narrow::fits`]),
/// packed in 20 bytes: both addresses; ports, protocol, DSCP and ingress
/// port; VLAN and TCP flags. (Packed to 4 bytes so that an entry's code
/// takes the last 4 of its 24.)
#[derive(Clone, Copy, PartialEq, Eq, Default)]
#[repr(C, packed(4))]
struct Narrow {
    addrs: u64,
    ports: u64,
    rest: u32,
}

impl Narrow {
    /// Whether `k` fits: IPv4, nothing above its addresses.
    #[inline(always)]
    fn fits(k: &Key) -> bool {
        !k.is_v6 && (k.src | k.dst) >> 32 == 0
    }
}

impl Words for Narrow {
    /// Only for a key that [`Narrow::fits`].
    #[inline(always)]
    fn of(k: &Key) -> Narrow {
        Narrow {
            addrs: k.src as u64 | (k.dst as u64) << 32,
            ports: u64::from(k.sport)
                | u64::from(k.dport) << 16
                | u64::from(k.proto) << 32
                | u64::from(k.dscp) << 40
                | u64::from(k.in_port) << 48,
            rest: u32::from(k.vlan) | u32::from(k.tcp_flags) << 16,
        }
    }

    #[inline(always)]
    fn key(&self) -> Key {
        let Narrow { addrs, ports, rest } = *self;
        Key {
            src: u128::from(addrs as u32),
            dst: u128::from((addrs >> 32) as u32),
            is_v6: false,
            proto: (ports >> 32) as u8,
            sport: ports as u16,
            dport: (ports >> 16) as u16,
            in_port: (ports >> 48) as u16,
            vlan: rest as u16,
            dscp: (ports >> 40) as u8,
            tcp_flags: (rest >> 16) as u16,
        }
    }

    #[inline(always)]
    fn hash(&self) -> u64 {
        let (addrs, ports, rest) = (self.addrs, self.ports, self.rest);
        let mut h = (addrs ^ ports.rotate_left(23)).wrapping_mul(M);
        h = (h ^ (h >> 31) ^ u64::from(rest)).wrapping_mul(M);
        h ^ (h >> 32)
    }
}

/// An entry: a key, the [`Classifier::uid`] of the version that classified
/// it (0: empty), and that version's code for its match (see the module
/// doc). 32 bytes with a narrow key, 64 with a wide one.
#[derive(Clone, Copy)]
#[repr(C)]
struct Entry<W> {
    key: W,
    code: u32,
    owner: u64,
}

static_assertions::const_assert_eq!(std::mem::size_of::<Entry<Narrow>>(), 32);
static_assertions::const_assert_eq!(std::mem::size_of::<Entry<Wide>>(), 64);

impl<W: Words> Entry<W> {
    fn empty() -> Self {
        Entry {
            key: W::default(),
            code: CODE_NONE,
            owner: 0,
        }
    }

    /// Whether it holds `w` for version `uid`.
    #[inline(always)]
    fn holds(&self, w: &W, uid: u64) -> bool {
        self.owner == uid && self.key == *w
    }
}

/// Ways of a set of IPv4 entries (32 bytes each) ...
const NARROW_WAYS: usize = 4;
/// ... and of the others (64 bytes each).
const WIDE_WAYS: usize = 2;

/// A set of `N` ways, newest first: two cache lines, aligned so that it
/// never spans a third (4 narrow or 2 wide entries).
#[derive(Clone, Copy)]
#[repr(C, align(128))]
struct Set<W, const N: usize>([Entry<W>; N]);

static_assertions::const_assert_eq!(std::mem::size_of::<Set<Narrow, NARROW_WAYS>>(), 128);
static_assertions::const_assert_eq!(std::mem::size_of::<Set<Wide, WIDE_WAYS>>(), 128);

/// One family's sets.
struct Table<W, const N: usize> {
    sets: Vec<Set<W, N>>,
    /// Sets - 1; unused while `sets` is empty.
    set_mask: usize,
}

impl<W: Words, const N: usize> Table<W, N> {
    const fn new() -> Self {
        Table {
            sets: Vec::new(),
            set_mask: 0,
        }
    }

    /// `entries`: a power of two, at least `N`.
    fn allocate(&mut self, entries: usize) {
        self.sets = vec![Set([Entry::empty(); N]); entries / N];
        self.set_mask = entries / N - 1;
    }

    /// The set of `w`, both its lines asked for.
    #[inline(always)]
    fn find_set(&self, w: &W) -> usize {
        let set = (w.hash() as usize) & self.set_mask;
        let ways = &self.sets[set].0;
        arch::prefetch(&ways[0]);
        arch::prefetch(&ways[N / 2]);
        set
    }

    /// The code of `w` if version `uid` classified it here.
    #[inline(always)]
    fn probe(&self, set: usize, w: &W, uid: u64) -> Option<u32> {
        self.sets[set]
            .0
            .iter()
            .find(|e| e.holds(w, uid))
            .map(|e| e.code)
    }

    /// Keeps `code` for `w` under version `uid`, the newest of its set:
    /// the entries before the first that another version filled (or none
    /// did) move one way on over it; in a set this version filled whole,
    /// the oldest goes.
    #[inline(always)]
    fn insert(&mut self, set: usize, w: W, uid: u64, code: u32) {
        let ways = &mut self.sets[set].0;
        // The same key twice in one group: kept once.
        if ways.iter().any(|e| e.holds(&w, uid)) {
            return;
        }
        let last = ways.iter().position(|e| e.owner != uid).unwrap_or(N - 1);
        ways.copy_within(..last, 1);
        ways[0] = Entry {
            key: w,
            code,
            owner: uid,
        };
    }

    /// Entries it holds.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.sets.len() * N
    }
}

/// See the module doc.
pub struct FlowCache {
    /// IPv4 keys (those that [`Narrow::fits`]).
    narrow: Table<Narrow, NARROW_WAYS>,
    /// Every other key.
    wide: Table<Wide, WIDE_WAYS>,
    /// Entries of each table, asked for until the first lookup (the
    /// memory is taken then); 0: off.
    size: usize,
    /// The keys of a group that missed, for the classifier (kept to spare
    /// a fresh array a call).
    missed: Vec<Key>,
    /// Lookups of the current window, and its hits.
    window: u32,
    window_hits: u32,
    /// Calls left that go straight to the classifier.
    aside: u32,
    /// Lookups answered from the cache.
    pub hits: u64,
    /// Lookups that went to the classifier (missed, or the cache stood
    /// aside).
    pub misses: u64,
}

impl Default for FlowCache {
    fn default() -> Self {
        Self::new(Self::DEFAULT_ENTRIES)
    }
}

impl FlowCache {
    /// Entries of a cache made with [`FlowCache::default`].
    pub const DEFAULT_ENTRIES: usize = 32768;

    /// Most entries a cache may have.
    pub const MAX_ENTRIES: usize = 1 << 20;

    /// A cache of `entries` entries a family (rounded up to a power of
    /// two, at most [`FlowCache::MAX_ENTRIES`]); 0 turns it off (every
    /// lookup goes to the classifier). The memory is taken at the first
    /// lookup, or by [`FlowCache::prepare`].
    pub fn new(entries: usize) -> Self {
        let entries = entries.min(Self::MAX_ENTRIES);
        FlowCache {
            narrow: Table::new(),
            wide: Table::new(),
            size: if entries == 0 {
                0
            } else {
                entries.next_power_of_two().max(NARROW_WAYS.max(WIDE_WAYS))
            },
            missed: Vec::new(),
            window: 0,
            window_hits: 0,
            aside: 0,
            hits: 0,
            misses: 0,
        }
    }

    /// The hits and misses counted since the last call.
    pub fn take_counts(&mut self) -> (u64, u64) {
        (
            std::mem::take(&mut self.hits),
            std::mem::take(&mut self.misses),
        )
    }

    /// Counts a call's `hits` of `n` lookups into the window; at the end of
    /// a window that hit less than one in [`POOR`], stands aside.
    #[inline(always)]
    fn judge(&mut self, n: usize, hits: usize) {
        self.hits += hits as u64;
        self.misses += (n - hits) as u64;
        self.window += n as u32;
        self.window_hits += hits as u32;
        if self.window >= WINDOW {
            if self.window_hits * POOR < self.window {
                self.aside = ASIDE;
            }
            self.window = 0;
            self.window_hits = 0;
        }
    }

    /// Entries it holds at most a family (0: off).
    pub fn capacity(&self) -> usize {
        self.size
    }

    /// Takes the memory now (a worker, before it polls: filling 3 MiB in
    /// the middle of forwarding would stall a burst), rather than at the
    /// first lookup.
    pub fn prepare(&mut self) {
        if self.size > 0 && self.narrow.sets.is_empty() {
            self.allocate();
        }
    }

    /// Whether the cache takes a call's `n` lookups: false when it is
    /// off or stands aside (the call goes straight to the classifier,
    /// counted as misses); true otherwise, its memory taken.
    #[inline(always)]
    fn answers(&mut self, n: usize) -> bool {
        if self.size == 0 {
            return false;
        }
        if self.aside > 0 {
            // Traffic the cache mostly missed (many short flows, a scan):
            // what a probe and an insert cost would be spent for little.
            self.aside -= 1;
            self.misses += n as u64;
            return false;
        }
        if self.narrow.sets.is_empty() {
            self.allocate();
        }
        true
    }

    #[cold]
    fn allocate(&mut self) {
        self.narrow.allocate(self.size);
        self.wide.allocate(self.size);
        self.missed = Vec::with_capacity(GROUP);
    }
}

/// An IPv4 key in the form the flow cache keeps it (20 bytes, packed):
/// what the fast path hands [`Classifier::classify_burst_cached4`] for a
/// plain IPv4 frame, instead of a whole 48-byte [`Key`] that the cache
/// would pack again (an IPv4 packet with rules loaded: 380.6 -> 343.9
/// instructions in `bench_pkt`, `bench-results/acl_flow_cache.md`).
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct Flow4(Narrow);

impl Flow4 {
    /// `k` packed, when it is an IPv4 key whose addresses fit their 32
    /// bits (any key the parser makes of an IPv4 packet); `None` otherwise.
    #[inline(always)]
    pub fn of(k: &Key) -> Option<Flow4> {
        Cached::narrow(k).map(Flow4)
    }

    /// The key it packs: [`Flow4::of`]'s inverse.
    #[inline(always)]
    pub fn key(&self) -> Key {
        self.0.key()
    }
}

impl std::fmt::Debug for Flow4 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Flow4").field(&self.key()).finish()
    }
}

/// Any other key (IPv6) in the form the flow cache keeps it (48 bytes):
/// what the fast path hands [`Classifier::classify_burst_cached6`] for a
/// plain IPv6 frame, its words made once, where a [`Key`] is tested and
/// made into them for the hash and again for the probe.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct Flow6(Wide);

impl Flow6 {
    /// `k` in the cache's form, when [`Flow4::of`] does not take it (an
    /// IPv6 key); `None` otherwise.
    #[inline(always)]
    pub fn of(k: &Key) -> Option<Flow6> {
        (!Narrow::fits(k)).then(|| Flow6(Wide::of(k)))
    }

    /// The key it holds: [`Flow6::of`]'s inverse.
    #[inline(always)]
    pub fn key(&self) -> Key {
        self.0.key()
    }
}

impl std::fmt::Debug for Flow6 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Flow6").field(&self.key()).finish()
    }
}

/// What the cache looks up: a [`Key`] (either table, by its family and
/// addresses), a [`Flow4`] (the IPv4 table) or a [`Flow6`] (the other).
trait Cached: Copy {
    /// The table every value of the type is in: `Some(true)` the IPv4
    /// one (its [`Cached::narrow`] is never `None`), `Some(false)` the
    /// other (always `None`), `None` by the value (a [`Key`]). A lookup of
    /// a type in one table tests nothing a key and keeps no copy of its
    /// words.
    const TABLE: Option<bool>;
    /// Its IPv4 words, if it is in the IPv4 table.
    fn narrow(&self) -> Option<Narrow>;
    /// Its words in the other table (only for one that is not).
    fn wide(&self) -> Wide;
    /// The key the classifier takes.
    fn key(&self) -> Key;
}

impl Cached for Key {
    const TABLE: Option<bool> = None;
    #[inline(always)]
    fn narrow(&self) -> Option<Narrow> {
        Narrow::fits(self).then(|| Narrow::of(self))
    }
    #[inline(always)]
    fn wide(&self) -> Wide {
        Wide::of(self)
    }
    #[inline(always)]
    fn key(&self) -> Key {
        *self
    }
}

impl Cached for Flow4 {
    const TABLE: Option<bool> = Some(true);
    #[inline(always)]
    fn narrow(&self) -> Option<Narrow> {
        Some(self.0)
    }
    #[inline(always)]
    fn wide(&self) -> Wide {
        Wide::of(&self.key())
    }
    #[inline(always)]
    fn key(&self) -> Key {
        Flow4::key(self)
    }
}

impl Cached for Flow6 {
    const TABLE: Option<bool> = Some(false);
    #[inline(always)]
    fn narrow(&self) -> Option<Narrow> {
        None
    }
    #[inline(always)]
    fn wide(&self) -> Wide {
        self.0
    }
    #[inline(always)]
    fn key(&self) -> Key {
        Flow6::key(self)
    }
}

// Bit `i` of a `u32` says whether a group's key `i` is in the IPv4 table.
static_assertions::const_assert!(GROUP <= 32);

impl Classifier {
    /// [`Classifier::classify_burst`] through a worker's flow cache: the
    /// same answers (see the module doc), from the cache where it has them.
    ///
    /// # Panics
    /// If `out.len() < keys.len()`.
    pub fn classify_burst_cached<'a>(
        &'a self,
        keys: &[Key],
        out: &mut [Option<&'a RuleEntry>],
        cache: &mut FlowCache,
    ) {
        if !cache.answers(keys.len()) {
            return self.classify_burst(keys, out);
        }
        self.cached(keys, out, cache);
    }

    /// [`Classifier::classify_burst_cached`] of the keys `flows` pack.
    ///
    /// # Panics
    /// If `out.len() < flows.len()`.
    pub fn classify_burst_cached4<'a>(
        &'a self,
        flows: &[Flow4],
        out: &mut [Option<&'a RuleEntry>],
        cache: &mut FlowCache,
    ) {
        self.packed(flows, out, cache);
    }

    /// [`Classifier::classify_burst_cached`] of the keys `flows` hold.
    ///
    /// # Panics
    /// If `out.len() < flows.len()`.
    pub fn classify_burst_cached6<'a>(
        &'a self,
        flows: &[Flow6],
        out: &mut [Option<&'a RuleEntry>],
        cache: &mut FlowCache,
    ) {
        self.packed(flows, out, cache);
    }

    /// The keys in the cache's form through the cache, or, when it does
    /// not take them, unpacked straight to the classifier.
    #[inline(always)]
    fn packed<'a, K: Cached>(
        &'a self,
        flows: &[K],
        out: &mut [Option<&'a RuleEntry>],
        cache: &mut FlowCache,
    ) {
        if cache.answers(flows.len()) {
            return self.cached(flows, out, cache);
        }
        assert!(out.len() >= flows.len(), "out shorter than keys");
        let mut keys = [Key::default(); GROUP];
        for (fc, oc) in flows.chunks(GROUP).zip(out.chunks_mut(GROUP)) {
            for (k, f) in keys.iter_mut().zip(fc) {
                *k = f.key();
            }
            self.classify_burst(&keys[..fc.len()], oc);
        }
    }

    /// The cache's lookups of `keys` (see the module doc), once
    /// [`FlowCache::answers`] said it takes them.
    #[inline(always)]
    fn cached<'a, K: Cached>(
        &'a self,
        keys: &[K],
        out: &mut [Option<&'a RuleEntry>],
        cache: &mut FlowCache,
    ) {
        assert!(out.len() >= keys.len(), "out shorter than keys");
        let uid = self.uid();
        for (kc, oc) in keys.chunks(GROUP).zip(out.chunks_mut(GROUP)) {
            // Each key's set in its family's table, asked for. A `Key`'s
            // IPv4 words (bit `i` of `fits`) are kept for its probe and
            // insert; a `Flow4` or `Flow6` holds its words, and a `Key`'s
            // wide ones (48 bytes) are made again where needed.
            let mut set = [0usize; GROUP];
            let mut narrow = [Narrow::default(); GROUP];
            let mut fits = 0u32;
            for (i, k) in kc.iter().enumerate() {
                debug_assert!(K::TABLE.is_none_or(|t| t == k.narrow().is_some()));
                set[i] = match (K::TABLE, k.narrow()) {
                    (Some(false), _) | (None, None) => cache.wide.find_set(&k.wide()),
                    (Some(true), None) => unreachable!("a type of the IPv4 table"),
                    (Some(true), Some(w)) => cache.narrow.find_set(&w),
                    (None, Some(w)) => {
                        narrow[i] = w;
                        fits |= 1 << i;
                        cache.narrow.find_set(&w)
                    }
                };
            }
            // Whether key `i` is in the IPv4 table, and its words there.
            let in_narrow = |i: usize| K::TABLE.unwrap_or(fits >> i & 1 != 0);
            let words = |i: usize, k: &K| match (K::TABLE, k.narrow()) {
                (Some(_), Some(w)) => w,
                (Some(_), None) => unreachable!("a type of the IPv4 table"),
                (None, _) => narrow[i],
            };
            let mut at = [0u8; GROUP];
            cache.missed.clear();
            for (i, (k, o)) in kc.iter().zip(oc.iter_mut()).enumerate() {
                let code = if in_narrow(i) {
                    cache.narrow.probe(set[i], &words(i, k), uid)
                } else {
                    cache.wide.probe(set[i], &k.wide(), uid)
                };
                match code {
                    Some(code) => *o = self.coded_entry(code),
                    None => {
                        at[cache.missed.len()] = i as u8;
                        cache.missed.push(k.key());
                    }
                }
            }
            let n = cache.missed.len();
            cache.judge(kc.len(), kc.len() - n);
            if n == 0 {
                continue;
            }
            let mut found = [None; GROUP];
            let mut codes = [CODE_NONE; GROUP];
            self.classify_burst_coded(&cache.missed, &mut found[..n], &mut codes[..n]);
            for j in 0..n {
                let i = usize::from(at[j]);
                oc[i] = found[j];
                if codes[j] == CODE_OVERLAY {
                    continue;
                }
                if in_narrow(i) {
                    cache.narrow.insert(set[i], words(i, &kc[i]), uid, codes[j]);
                } else {
                    cache.wide.insert(set[i], kc[i].wide(), uid, codes[j]);
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "flow_cache_tests.rs"]
mod tests;
