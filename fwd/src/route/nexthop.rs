//! Next hops and ECMP groups, with reference counts.
//!
//! Routes store ids, never copies, so changing a next hop (its MAC when a
//! neighbour is resolved again, its port) changes every route using it in the
//! same version. Both tables are persistent paged arrays indexed by id, so the
//! data path's `nexthop(id)` is two array indexings.

use std::collections::HashSet;
use std::mem::size_of;
use std::net::IpAddr;
use triomphe::Arc;

use super::cow::{make_mut, ARC_HEADER};
use super::parray::PArray;
use super::{GroupId, NhId, RouteError};

/// Largest next-hop or group id.
pub const MAX_ID: u32 = (1 << 24) - 1;
/// Largest number of members of an ECMP group.
pub const MAX_GROUP_MEMBERS: usize = 1024;
/// Slots of a group's hash table are at least this many...
const MIN_SLOTS: usize = 64;
/// ...and at most this many.
const MAX_SLOTS: usize = 4096;

/// Where to send a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NextHop {
    /// Gateway address; `None` for a directly connected destination (the packet's
    /// own destination address is the neighbour).
    pub gateway: Option<IpAddr>,
    /// Output port (validated by the caller).
    pub port: u16,
    /// Resolved destination MAC of the neighbour, `None` while unresolved.
    pub mac: Option<[u8; 6]>,
}

/// An ECMP group: weighted members expanded into a power-of-two slot table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    members: Vec<(NhId, u32)>,
    slots: Box<[NhId]>,
    shift: u32,
}

impl Group {
    /// Builds the slot table: each member gets a share of the slots proportional
    /// to its weight (largest-remainder rounding, at least one slot each).
    #[cfg(test)]
    pub(crate) fn new(id: GroupId, members: &[(NhId, u32)]) -> Result<Group, RouteError> {
        Group::with_live(id, members, |_| true)
    }

    /// Like the tests' `Group::new`, but only members for which `live`
    /// holds get slots (their port is up); `members()` still lists every
    /// member. When none is live, all keep their slots (the traffic then
    /// meets the down port and is counted there, rather than vanishing).
    pub(crate) fn with_live(
        id: GroupId,
        members: &[(NhId, u32)],
        live: impl Fn(NhId) -> bool,
    ) -> Result<Group, RouteError> {
        let mut g = Group::build(id, members)?;
        let up: Vec<(NhId, u32)> = members
            .iter()
            .copied()
            .filter(|&(nh, _)| live(nh))
            .collect();
        if !up.is_empty() && up.len() < members.len() {
            g.slots = Group::build(id, &up)?.slots;
        }
        Ok(g)
    }

    /// Whether every member has slots.
    pub fn all_live(&self) -> bool {
        self.members.iter().all(|(nh, _)| self.slots.contains(nh))
    }

    fn build(id: GroupId, members: &[(NhId, u32)]) -> Result<Group, RouteError> {
        if members.is_empty() {
            return Err(RouteError::EmptyGroup(id));
        }
        if members.len() > MAX_GROUP_MEMBERS {
            return Err(RouteError::TooManyMembers {
                id,
                count: members.len(),
                max: MAX_GROUP_MEMBERS,
            });
        }
        let mut seen = HashSet::new();
        for &(nh, w) in members {
            if w == 0 {
                return Err(RouteError::ZeroWeight { id, nh });
            }
            if !seen.insert(nh) {
                return Err(RouteError::DuplicateMember { id, nh });
            }
        }
        let total: u64 = members.iter().map(|&(_, w)| w as u64).sum();
        let n = members.len();
        let want = (total.min(MAX_SLOTS as u64) as usize)
            .max(32 * n)
            .clamp(MIN_SLOTS, MAX_SLOTS);
        let s = want.next_power_of_two().min(MAX_SLOTS);
        let mut share: Vec<usize> = members
            .iter()
            .map(|&(_, w)| (w as u64 * s as u64 / total) as usize)
            .collect();
        let mut left = s - share.iter().sum::<usize>();
        let mut order: Vec<usize> = (0..n).collect();
        // Largest remainder first; ties by member order (deterministic).
        order.sort_by_key(|&i| std::cmp::Reverse(members[i].1 as u64 * s as u64 % total));
        for &i in order.iter().cycle().take(left) {
            share[i] += 1;
        }
        left = 0;
        // Every member gets at least one slot, taken from the largest share.
        for i in 0..n {
            if share[i] == 0 {
                let j = (0..n).max_by_key(|&j| share[j]).unwrap_or(0);
                share[j] -= 1;
                share[i] += 1;
            }
        }
        debug_assert_eq!(left, 0);
        let mut slots = Vec::with_capacity(s);
        for (i, &(nh, _)) in members.iter().enumerate() {
            slots.extend(std::iter::repeat_n(nh, share[i]));
        }
        debug_assert_eq!(slots.len(), s);
        Ok(Group {
            members: members.to_vec(),
            slots: slots.into_boxed_slice(),
            shift: 32 - s.trailing_zeros(),
        })
    }

    /// The memory this group is charged (`route::limits`), beside its
    /// table's pages: what [`IdTable::mem_groups`] counts for it.
    pub(crate) fn charge(&self) -> usize {
        ARC_HEADER
            + size_of::<Group>()
            + self.members.len() * size_of::<(NhId, u32)>()
            + self.slots.len() * size_of::<NhId>()
    }

    /// Members and weights as configured.
    pub fn members(&self) -> &[(NhId, u32)] {
        &self.members
    }

    /// The slot table (length a power of two).
    pub fn slots(&self) -> &[NhId] {
        &self.slots
    }

    /// The member for a flow hash. Multiplicative (Fibonacci) hashing takes the
    /// slot from the product's high bits, so hashes whose low bits are constant
    /// on one queue (NIC RSS indirection uses them) still spread over all slots.
    #[inline(always)]
    pub fn select(&self, hash: u32) -> NhId {
        self.slots[(hash.wrapping_mul(0x9E37_79B1) >> self.shift) as usize]
    }
}

/// Ids from here up are stored apart from the ids below (see [`IdTable`]):
/// the control plane names its own next hops and groups from this id up and
/// leaves the ids below to the operator.
pub const HIGH_IDS: u32 = 1 << 23;

/// A table of `T` by id (the counts of references to each are a
/// [`RefTable`] of their own: a route change writes a count and must not
/// copy anything of the items, which the data path reads).
///
/// Ids below [`HIGH_IDS`] and from it up are two separate paged arrays, each
/// indexed from its own first id. Tables in use hold a few ids at the bottom
/// of each range, so each array is one dir long. With one array from id 0,
/// the control plane's ids (from 2^23) made it 512 mids of items and 128 of
/// reference counts, and every route change, which writes a count, copied
/// those 640 pointers (and counted a reference to each) into its version:
/// +4.6 us per one-change version.
#[derive(Clone)]
pub(crate) struct IdTable<T: Clone + PartialEq + Send + Sync + 'static> {
    low: Half<T>,
    high: Half<T>,
    count: usize,
}

/// Items per page of [`Half::items`].
const ITEMS_PAGE: usize = 256;

/// Reference counts of one range of ids.
type Refs = PArray<u32, REFS_PAGE, 16, 16>;

/// Counts per page of [`Refs`].
const REFS_PAGE: usize = 1024;

/// The ids of one range, from its first id (index 0) up.
#[derive(Clone)]
struct Half<T: Clone + PartialEq + Send + Sync + 'static> {
    items: PArray<Option<T>, ITEMS_PAGE, 16, 16>,
}

impl<T: Clone + PartialEq + Send + Sync + 'static> Half<T> {
    fn new() -> Self {
        Half {
            items: PArray::new(0, None),
        }
    }

    /// Trims trailing empty dirs so that deleting everything returns to baseline.
    fn trim(&mut self) {
        while self.items.dirs() > 0 && self.items.dir_is_zero(self.items.dirs() - 1) {
            self.items.pop_dir();
        }
    }

    /// Its largest id (`first` is the id of index 0): empty pages are the
    /// shared canonical page and are skipped by pointer, so this reads one
    /// pointer per page and scans one page.
    fn last(&self, first: u32) -> Option<u32> {
        (0..self.items.capacity() / ITEMS_PAGE)
            .rev()
            .filter(|&p| !self.items.is_canonical(p))
            .find_map(|p| {
                let i = self.items.page(p).iter().rposition(Option::is_some)?;
                Some(first + (p * ITEMS_PAGE + i) as u32)
            })
    }

    /// Its items, by id (`first` is the id of index 0); empty pages are
    /// skipped by pointer, as in [`Half::last`].
    fn iter(&self, first: u32) -> impl Iterator<Item = (u32, &T)> + '_ {
        (0..self.items.capacity() / ITEMS_PAGE)
            .filter(|&p| !self.items.is_canonical(p))
            .flat_map(move |p| {
                self.items
                    .page(p)
                    .iter()
                    .enumerate()
                    .filter_map(move |(i, v)| {
                        Some((first + (p * ITEMS_PAGE + i) as u32, v.as_ref()?))
                    })
            })
    }
}

/// The index of `id` in its half, and whether that is the high one.
#[inline(always)]
fn split_id(id: u32) -> (bool, usize) {
    if id < HIGH_IDS {
        (false, id as usize)
    } else {
        (true, (id - HIGH_IDS) as usize)
    }
}

impl<T: Clone + PartialEq + Send + Sync + 'static> IdTable<T> {
    pub(crate) fn new() -> Self {
        IdTable {
            low: Half::new(),
            high: Half::new(),
            count: 0,
        }
    }

    /// The half that holds `id`, and `id`'s index in it.
    #[inline(always)]
    fn half(&self, id: u32) -> (&Half<T>, usize) {
        match split_id(id) {
            (false, i) => (&self.low, i),
            (true, i) => (&self.high, i),
        }
    }

    #[inline(always)]
    fn half_mut(&mut self, id: u32) -> (&mut Half<T>, usize) {
        match split_id(id) {
            (false, i) => (&mut self.low, i),
            (true, i) => (&mut self.high, i),
        }
    }

    #[inline(always)]
    pub(crate) fn get(&self, id: u32) -> Option<&T> {
        let (h, i) = self.half(id);
        h.items.try_get(i)?.as_ref()
    }

    pub(crate) fn len(&self) -> usize {
        self.count
    }

    /// The memory this table is charged (`route::limits`): its paged
    /// arrays, and for each page of ids written the reference counts of
    /// those ids (a [`RefTable`] of the same ids has no more pages). O(1).
    pub(crate) fn charge(&self) -> usize {
        let pages = self.low.items.written_pages() + self.high.items.written_pages();
        self.low.items.charge() + self.high.items.charge() + pages * ITEMS_PAGE * size_of::<u32>()
    }

    /// Stores `v` at `id` (which must be <= MAX_ID); returns whether it was new.
    pub(crate) fn put(&mut self, id: u32, v: T) -> bool {
        let (h, i) = self.half_mut(id);
        h.items.grow_to(i + 1);
        let new = h.items.get(i).is_none();
        h.items.set(i, Some(v));
        self.count += usize::from(new);
        new
    }

    pub(crate) fn remove(&mut self, id: u32) -> Option<T> {
        let (h, i) = self.half_mut(id);
        h.items.try_get(i)?.as_ref()?;
        let old = h.items.page_mut(i / ITEMS_PAGE)[i % ITEMS_PAGE].take();
        h.items.canonicalize_opt(i / ITEMS_PAGE);
        h.trim();
        self.count -= 1;
        old
    }

    /// Stores `v` at `id` (`None`: removes it); returns what was there.
    pub(crate) fn replace(&mut self, id: u32, v: Option<T>) -> Option<T> {
        match v {
            Some(v) => {
                let old = self.get(id).cloned();
                self.put(id, v);
                old
            }
            None => self.remove(id),
        }
    }

    /// The largest id present.
    pub(crate) fn last_id(&self) -> Option<u32> {
        self.high.last(HIGH_IDS).or_else(|| self.low.last(0))
    }

    /// Every item, by id.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u32, &T)> + '_ {
        self.low.iter(0).chain(self.high.iter(HIGH_IDS))
    }

    pub(crate) fn mem(&self, seen: &mut HashSet<usize>) -> usize {
        self.low.items.mem(seen) + self.high.items.mem(seen)
    }
}

/// The reference counts of the ids of an [`IdTable`] (the routes and groups
/// that use each): a paged base shared between versions, and the changes
/// made since it was last written, by id.
///
/// A route change moves two counts (the new target's up, the old one's
/// down). Written into the paged arrays, each of those copied a dir, a mid
/// and a 4 KiB page, and the old version's drop released them: ~2,800
/// instructions of a one-change version's ~12,400 (callgrind,
/// `bench-results/route.md`). A version now copies the short table of
/// recent changes instead, and only every [`FULL`] distinct ids does a
/// batch write them into a copy of the base.
///
/// In the base, pages of zero counts are the shared zero page and trailing
/// empty dirs are dropped; a count that reaches zero is written through at
/// once, so counts that all went back to zero cost what a new table does.
#[derive(Clone)]
pub(crate) struct RefTable {
    base: Arc<Base>,
    /// Changes not yet in `base`, none zero: `(id, change)`, open
    /// addressing with linear probing from the id's hash ([`home`]),
    /// [`FREE`] where no id is. A fixed array: copying it is one copy of
    /// 256 bytes, no allocation, and its memory does not depend on the
    /// history of the version. A lookup is a hash and, mostly, one compare:
    /// a sorted list searched by halves took ~37 instructions of a route's
    /// ~1,060 in a full view's load (`bench-results/route.md`).
    recent: [(u32, i32); RECENT],
    /// Ids in `recent`: at most [`FULL`], so that a probe always ends at a
    /// free slot within a few steps.
    n: usize,
}

/// Slots of a [`RefTable`]'s recent changes (a power of two).
const RECENT: usize = 32;

/// Distinct ids a [`RefTable`] keeps apart from its base (3/4 of the
/// slots).
const FULL: usize = RECENT * 3 / 4;

/// A free slot of the recent changes (ids are at most [`MAX_ID`]).
const FREE: u32 = u32::MAX;

/// The slot where the probe for `id` starts (the top bits of a
/// multiplicative hash: consecutive ids, and ids on both sides of
/// [`HIGH_IDS`], spread over the slots).
#[inline(always)]
fn home(id: u32) -> usize {
    (id.wrapping_mul(0x9E37_79B1) >> (32 - RECENT.trailing_zeros())) as usize
}

/// The counts of both ranges of ids.
#[derive(Clone)]
struct Base {
    low: Refs,
    high: Refs,
}

impl Base {
    /// Adds `delta` to the count of `id` (modulo 2^32: the sum of a count's
    /// changes is what matters, not the order they arrive in).
    fn add(&mut self, id: u32, delta: i32) {
        let (h, i) = match split_id(id) {
            (false, i) => (&mut self.low, i),
            (true, i) => (&mut self.high, i),
        };
        if i >= h.capacity() {
            h.grow_to(i + 1);
        }
        let c = h.get_mut(i);
        *c = c.wrapping_add_signed(delta);
        if *c == 0 {
            h.canonicalize(i / REFS_PAGE);
            while h.dirs() > 0 && h.dir_is_zero(h.dirs() - 1) {
                h.pop_dir();
            }
        }
    }

    fn get(&self, id: u32) -> u32 {
        let (h, i) = match split_id(id) {
            (false, i) => (&self.low, i),
            (true, i) => (&self.high, i),
        };
        h.try_get(i).copied().unwrap_or(0)
    }
}

impl RefTable {
    pub(crate) fn new() -> Self {
        RefTable {
            base: Arc::new(Base {
                low: PArray::new(0, 0),
                high: PArray::new(0, 0),
            }),
            recent: [(FREE, 0); RECENT],
            n: 0,
        }
    }

    /// The slot of `id` among the recent changes (`Err`: the free slot
    /// where it would go).
    #[inline]
    fn find(&self, id: u32) -> Result<usize, usize> {
        debug_assert!(id <= MAX_ID, "id {id} would collide with FREE");
        let mut k = home(id);
        loop {
            match self.recent[k].0 {
                i if i == id => return Ok(k),
                FREE => return Err(k),
                _ => k = (k + 1) % RECENT,
            }
        }
    }

    /// Frees slot `k`, moving back the ids after it whose probe passes
    /// through it (so that every id stays reachable from its home).
    fn vacate(&mut self, mut k: usize) {
        self.n -= 1;
        let mut j = k;
        loop {
            self.recent[k] = (FREE, 0);
            loop {
                j = (j + 1) % RECENT;
                let id = self.recent[j].0;
                if id == FREE {
                    return;
                }
                // The id at `j` stays if its home lies cyclically in
                // `(k, j]`: its probe does not pass through `k`.
                let h = home(id);
                let stays = if k < j {
                    k < h && h <= j
                } else {
                    k < h || h <= j
                };
                if !stays {
                    self.recent[k] = self.recent[j];
                    k = j;
                    break;
                }
            }
        }
    }

    /// The count of `id`.
    pub(crate) fn get(&self, id: u32) -> u32 {
        let d = self.find(id).map_or(0, |k| self.recent[k].1);
        self.base.get(id).wrapping_add_signed(d)
    }

    /// Adds `delta` to the count of `id`. A count goes into the base at
    /// once when it reaches zero (so that its page can go back to the
    /// shared zero page) or when its change grows too large to keep here;
    /// a new id that finds the table full takes the table along.
    ///
    /// Inline, the common case of a batch: a count that grows, kept here.
    /// The rest out of line ([`RefTable::add_general`]).
    #[inline(always)]
    pub(crate) fn add(&mut self, id: u32, delta: i32) {
        const SMALL: i32 = 1 << 30;
        let found = self.find(id);
        match found {
            Ok(k) => {
                let d = self.recent[k].1.wrapping_add(delta);
                if (1..=SMALL).contains(&d) {
                    self.recent[k].1 = d;
                    return;
                }
            }
            Err(k) if (1..=SMALL).contains(&delta) && self.n < FULL => {
                self.recent[k] = (id, delta);
                self.n += 1;
                return;
            }
            Err(_) => {}
        }
        self.add_general(id, delta, found);
    }

    /// [`RefTable::add`], every case; `found` is [`RefTable::find`]'s
    /// answer for `id` (the inline part changed nothing after it).
    #[inline(never)]
    fn add_general(&mut self, id: u32, delta: i32, found: Result<usize, usize>) {
        let d = match found {
            Ok(k) => self.recent[k].1.wrapping_add(delta),
            Err(_) => delta,
        };
        let to_base =
            d.unsigned_abs() > 1 << 30 || (d < 0 && self.base.get(id).wrapping_add_signed(d) == 0);
        match found {
            Ok(k) if d != 0 && !to_base => self.recent[k].1 = d,
            Ok(k) => {
                self.vacate(k);
                if d != 0 {
                    make_mut(&mut self.base).add(id, d);
                }
            }
            Err(_) if to_base => make_mut(&mut self.base).add(id, d),
            Err(_) if self.n == FULL => {
                let b = make_mut(&mut self.base);
                for e in &mut self.recent {
                    if e.0 != FREE {
                        b.add(e.0, e.1);
                        *e = (FREE, 0);
                    }
                }
                self.n = 0;
                b.add(id, d);
            }
            Err(k) => {
                self.recent[k] = (id, d);
                self.n += 1;
            }
        }
    }

    pub(crate) fn mem(&self, seen: &mut HashSet<usize>) -> usize {
        let mut b = 0;
        if seen.insert(Arc::as_ptr(&self.base) as usize) {
            b +=
                ARC_HEADER + size_of::<Base>() + self.base.low.mem(seen) + self.base.high.mem(seen);
        }
        b
    }
}

impl IdTable<Arc<Group>> {
    pub(crate) fn mem_groups(&self, seen: &mut HashSet<usize>) -> usize {
        let mut b = self.mem(seen);
        for (_, g) in self.iter() {
            if seen.insert(Arc::as_ptr(g) as usize) {
                b += ARC_HEADER
                    + size_of::<Group>()
                    + g.members.capacity() * size_of::<(NhId, u32)>()
                    + g.slots.len() * size_of::<NhId>();
            }
        }
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ids on both sides of `HIGH_IDS` and at both ends: stored, counted,
    /// listed in id order and removed (with their counts in a
    /// [`RefTable`]); an id just above `HIGH_IDS` costs
    /// what an id just above 0 does (its half is one dir long, not 2^23 ids
    /// of dirs), and a table emptied again costs what a new one does.
    #[test]
    fn id_table_halves() {
        let new_mem = IdTable::<u32>::new().mem(&mut HashSet::new());
        let new_refs = RefTable::new().mem(&mut HashSet::new());
        let ids = [0, 1, HIGH_IDS - 1, HIGH_IDS, HIGH_IDS + 1, MAX_ID];
        let mut t = IdTable::new();
        let mut r = RefTable::new();
        for &id in &ids {
            assert!(t.put(id, id ^ 0x55));
            assert!(!t.put(id, id ^ 0xaa));
            r.add(id, 2);
            r.add(id, -1);
        }
        assert_eq!(t.len(), ids.len());
        for &id in &ids {
            assert_eq!(t.get(id), Some(&(id ^ 0xaa)));
            assert_eq!(r.get(id), 1);
        }
        assert_eq!(t.get(2), None);
        assert_eq!(t.get(HIGH_IDS + 2), None);
        let listed: Vec<u32> = t.iter().map(|(id, _)| id).collect();
        assert_eq!(listed, ids);
        assert_eq!(t.last_id(), Some(MAX_ID));
        for (k, &id) in ids.iter().enumerate().rev() {
            assert_eq!(t.last_id(), Some(id));
            r.add(id, -1);
            assert_eq!(r.get(id), 0);
            assert_eq!(t.remove(id), Some(id ^ 0xaa));
            assert_eq!(t.remove(id), None);
            assert_eq!(t.last_id(), k.checked_sub(1).map(|j| ids[j]));
        }
        assert_eq!(t.len(), 0);
        assert_eq!(t.mem(&mut HashSet::new()), new_mem);
        assert_eq!(r.mem(&mut HashSet::new()), new_refs);

        let one = |id: u32| {
            let mut t = IdTable::new();
            t.put(id, 7u32);
            let mut r = RefTable::new();
            r.add(id, 1);
            t.mem(&mut HashSet::new()) + r.mem(&mut HashSet::new())
        };
        assert_eq!(one(HIGH_IDS + 5), one(5));
    }

    /// Counts kept in the recent table, written into the base when it is
    /// full, when they reach zero or when they grow large, stay what the
    /// changes add up to; a copy keeps its counts while the original
    /// changes; counts all back to zero cost what a new table does.
    #[test]
    fn ref_counts_through_the_recent_list() {
        let new_mem = RefTable::new().mem(&mut HashSet::new());
        let mut want = std::collections::HashMap::new();
        let mut t = RefTable::new();
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut snapshots = Vec::new();
        for step in 0..20_000u32 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            // 80 ids on both sides of HIGH_IDS: more than the table holds.
            let id = (rng % 40) as u32 + if rng & 64 == 0 { 0 } else { HIGH_IDS - 20 };
            let c: &mut i64 = want.entry(id).or_default();
            let delta = if *c > 0 && rng & 128 == 0 {
                -1
            } else {
                1 + (rng >> 60) as i32
            };
            *c += i64::from(delta);
            t.add(id, delta);
            assert_eq!(i64::from(t.get(id)), *c, "step {step}");
            let used = t.recent.iter().filter(|e| e.0 != FREE).count();
            assert!(
                used == t.n && t.n <= FULL,
                "step {step}: {used} ids, n {}",
                t.n
            );
            if step % 1000 == 0 {
                snapshots.push((t.clone(), want.clone()));
            }
        }
        // Large changes go through the base.
        t.add(3, 1 << 30);
        t.add(3, 1 << 30);
        assert_eq!(i64::from(t.get(3)), want[&3] + (1 << 31));
        t.add(3, -(1 << 30));
        t.add(3, -(1 << 30));
        for (s, w) in &snapshots {
            for (&id, &c) in w {
                assert_eq!(i64::from(s.get(id)), c);
            }
        }
        drop(snapshots);
        let mut ids: Vec<u32> = want.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            let c = want[&id];
            for _ in 0..c {
                t.add(id, -1);
            }
            assert_eq!(t.get(id), 0);
        }
        assert_eq!(t.n, 0);
        assert_eq!(t.mem(&mut HashSet::new()), new_mem);
    }

    #[test]
    fn group_slots_follow_weights() {
        let g = Group::new(1, &[(10, 1), (11, 3)]).unwrap();
        let s = g.slots();
        assert!(s.len().is_power_of_two());
        let a = s.iter().filter(|&&x| x == 10).count();
        assert_eq!(a * 4, s.len());
        let g = Group::new(2, &[(1, 1), (2, 1), (3, 1)]).unwrap();
        for nh in 1..=3 {
            let c = g.slots().iter().filter(|&&x| x == nh).count();
            assert!((c as f64 / g.slots().len() as f64 - 1.0 / 3.0).abs() < 0.01);
        }
        // tiny weight still gets a slot
        let g = Group::new(3, &[(1, 1_000_000), (2, 1)]).unwrap();
        assert!(g.slots().contains(&2));
        assert_eq!(Group::new(4, &[]), Err(RouteError::EmptyGroup(4)));
        assert_eq!(
            Group::new(4, &[(1, 0)]),
            Err(RouteError::ZeroWeight { id: 4, nh: 1 })
        );
        assert_eq!(
            Group::new(4, &[(1, 1), (1, 2)]),
            Err(RouteError::DuplicateMember { id: 4, nh: 1 })
        );
    }
}
