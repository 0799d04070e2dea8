//! [`Routing`]: one immutable version of every routing table, and its
//! lookups, queries and figures. [`Txn`] makes the next one.

use std::collections::{BTreeMap, HashSet};
use triomphe::Arc;

use super::cow;
use super::entry::{decode, ID_MASK, KIND_SHIFT, K_BLACKHOLE, K_GROUP, K_LOCAL, K_NH, K_REJECT};
use super::fib::{self, BurstFib};
use super::nexthop::{IdTable, RefTable};
use super::vrf::{Family, VrfTables};
use super::*;

/// One immutable version of all routing tables (see the module doc).
#[derive(Clone)]
pub struct Routing {
    pub(super) vrfs: Arc<BTreeMap<Vrf, VrfTables>>,
    pub(super) nhs: Arc<IdTable<NextHop>>,
    pub(super) nh_refs: Arc<RefTable>,
    pub(super) groups: Arc<IdTable<Arc<Group>>>,
    pub(super) group_refs: Arc<RefTable>,
    /// Ports that are down: their next hops get no ECMP slots.
    pub(super) down_ports: Arc<std::collections::BTreeSet<u16>>,
    pub(super) version: u64,
    /// Routes whose origin is FPM (kept by every write, so status reports
    /// need no walk).
    pub(super) fpm_routes: usize,
    /// What the tables may hold.
    pub(super) limits: Limits,
    /// The memory this version is charged (`limits`), kept by every write.
    pub(super) charge: usize,
}

static_assertions::assert_impl_all!(Routing: Send, Sync);

impl std::fmt::Debug for Routing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Routing")
            .field("version", &self.version)
            .field("vrfs", &self.vrfs.len())
            .field("nexthops", &self.nhs.len())
            .field("groups", &self.groups.len())
            .finish_non_exhaustive()
    }
}

impl Default for Routing {
    fn default() -> Self {
        Self::new()
    }
}

/// Per-table figures of a version.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VrfStats {
    /// Table id.
    pub vrf: Vrf,
    /// IPv4 routes.
    pub routes4: usize,
    /// IPv6 routes.
    pub routes6: usize,
    /// IPv4 RIB trie nodes.
    pub rib_nodes4: usize,
    /// IPv6 RIB trie nodes.
    pub rib_nodes6: usize,
    /// IPv4 first-level pages that are private (not the shared zero page).
    pub tbl24_pages4: usize,
    /// IPv6 first-level private pages.
    pub tbl24_pages6: usize,
    /// IPv4 8-bit groups in use (those holding pairs too).
    pub tbl8_used4: usize,
    /// IPv4 pairs in use: groups of one value but at one byte, as two
    /// entries (`fib.rs`).
    pub pairs4: usize,
    /// IPv4 8-bit groups allocated (used + free).
    pub tbl8_capacity4: usize,
    /// IPv6 8-bit groups in use (those holding pairs too).
    pub tbl8_used6: usize,
    /// IPv6 pairs in use.
    pub pairs6: usize,
    /// IPv6 8-bit groups allocated.
    pub tbl8_capacity6: usize,
    /// Bytes of the IPv4 RIB.
    pub rib4_bytes: usize,
    /// Bytes of the IPv6 RIB.
    pub rib6_bytes: usize,
    /// Bytes of the IPv4 FIB.
    pub fib4_bytes: usize,
    /// Bytes of the IPv6 FIB.
    pub fib6_bytes: usize,
}

/// Figures of a version ([`Routing::stats`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RoutingStats {
    /// Version number (0 for `Routing::new()`, +1 per applied batch).
    pub version: u64,
    /// Per VRF.
    pub vrfs: Vec<VrfStats>,
    /// Next hops.
    pub nexthops: usize,
    /// ECMP groups.
    pub groups: usize,
    /// Bytes of next-hop and group tables.
    pub nh_bytes: usize,
    /// Bytes of everything reachable from this version, shared memory counted once.
    pub total_bytes: usize,
    /// The memory the version is charged against [`Limits::bytes`].
    pub charged_bytes: usize,
    /// Its limits.
    pub limits: Limits,
}

impl Routing {
    /// No VRF, no next hop, no group; the default [`Limits`].
    pub fn new() -> Self {
        Self::with_limits(Limits::default())
    }

    /// No VRF, no next hop, no group; every version made from it is held
    /// to `limits`.
    pub fn with_limits(limits: Limits) -> Self {
        let mut r = Routing {
            vrfs: Arc::new(BTreeMap::new()),
            nhs: Arc::new(IdTable::new()),
            nh_refs: Arc::new(RefTable::new()),
            groups: Arc::new(IdTable::new()),
            group_refs: Arc::new(RefTable::new()),
            down_ports: Arc::default(),
            version: 0,
            fpm_routes: 0,
            limits,
            charge: 0,
        };
        r.charge = r.recharge();
        r
    }

    /// The limits this version is held to.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The memory this version is charged against [`Limits::bytes`]
    /// (see `limits`). O(1).
    pub fn charged_bytes(&self) -> usize {
        self.charge
    }

    /// The charge computed from scratch, table by table and group by group
    /// (what the running one must equal).
    pub(super) fn recharge(&self) -> usize {
        self.vrfs.values().map(VrfTables::charge).sum::<usize>()
            + self.nhs.charge()
            + self.groups.charge()
            + self.groups.iter().map(|(_, g)| g.charge()).sum::<usize>()
    }

    /// Version number: 0 for `new()`, +1 per applied batch.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Applies `batch` to a copy of this version and returns the new version.
    ///
    /// # Errors
    /// The first failing change, with its index; `self` is unchanged either way.
    pub fn apply(&self, batch: &[RouteChange]) -> Result<Routing, BatchError> {
        self.clone().apply_owned(batch)
    }

    /// Like [`Routing::apply`] but consumes `self`, so nothing is copied that only
    /// this handle holds. On error the partially applied value is dropped (keep a
    /// clone if the old version is still needed).
    ///
    /// # Errors
    /// The first failing change, with its index.
    pub fn apply_owned(self, batch: &[RouteChange]) -> Result<Routing, BatchError> {
        let mut t = self.into_txn();
        for (index, c) in batch.iter().enumerate() {
            t.change(c).map_err(|error| BatchError { index, error })?;
        }
        Ok(t.commit())
    }

    /// A transaction on top of a clone of this version.
    pub fn txn(&self) -> Txn {
        self.clone().into_txn()
    }

    /// A transaction that consumes this handle.
    pub fn into_txn(self) -> Txn {
        Txn::new(self)
    }

    // ---- data path ----------------------------------------------------------

    /// The result of FIB entry `e`; `hash` is called only when `e` is an
    /// ECMP group (the flow hash selects the member).
    #[inline(always)]
    fn resolve(&self, e: u32, hash: impl FnOnce() -> u32) -> Resolved {
        match e >> KIND_SHIFT {
            K_NH => Resolved::Forward(e & ID_MASK),
            K_GROUP => via_group(self.groups.get(e & ID_MASK), hash),
            K_BLACKHOLE => Resolved::Blackhole,
            K_REJECT => Resolved::Reject,
            K_LOCAL => Resolved::Local,
            _ => Resolved::NoRoute,
        }
    }

    /// IPv4 lookup; `flow_hash` is called only when the route is an ECMP
    /// group (the hash selects the member).
    #[inline]
    pub fn lookup4(&self, vrf: Vrf, dst: u32, flow_hash: impl FnOnce() -> u32) -> Resolved {
        match self.vrfs.get(&vrf) {
            Some(t) => self.resolve(t.v4.fib.lookup(dst), flow_hash),
            None => Resolved::NoRoute,
        }
    }

    /// IPv6 lookup (`dst` is `u128::from_be_bytes(octets)`); `flow_hash`
    /// as for [`Routing::lookup4`].
    #[inline]
    pub fn lookup6(&self, vrf: Vrf, dst: u128, flow_hash: impl FnOnce() -> u32) -> Resolved {
        match self.vrfs.get(&vrf) {
            Some(t) => self.resolve(t.v6.fib.lookup(dst), flow_hash),
            None => Resolved::NoRoute,
        }
    }

    /// IPv4 lookups for a burst: `out[i]` for `dsts[i]`. The first-level
    /// entries of up to 64 destinations are loaded before any is used so that
    /// their cache misses overlap.
    ///
    /// `hash(i)` is the flow hash of packet `i`; it is called only for the
    /// packets whose route is an ECMP group, so a table without groups (or
    /// a burst that hits none) costs no hashing at all.
    ///
    /// Returns the next hop when every destination found the same plain
    /// one (`out` is then all `Forward` of it): the common burst, which
    /// the caller need not read lane by lane (the worker's fast path
    /// forwards it in a loop without next-hop changes).
    ///
    /// # Panics
    /// If `dsts` and `out` differ in length.
    #[inline(always)]
    pub fn lookup4_burst(
        &self,
        vrf: Vrf,
        dsts: &[u32],
        hash: impl FnMut(usize) -> u32,
        out: &mut [Resolved],
    ) -> Option<NhId> {
        let t = self.vrfs.get(&vrf);
        self.lookup_burst(t.map(|t| &t.v4.fib), dsts, hash, out)
    }

    /// IPv6 lookups for a burst (level by level across the burst); `hash`
    /// and the next hop returned as for [`Routing::lookup4_burst`].
    ///
    /// # Panics
    /// If `dsts` and `out` differ in length.
    #[inline]
    pub fn lookup6_burst(
        &self,
        vrf: Vrf,
        dsts: &[u128],
        hash: impl FnMut(usize) -> u32,
        out: &mut [Resolved],
    ) -> Option<NhId> {
        let t = self.vrfs.get(&vrf);
        self.lookup_burst(t.map(|t| &t.v6.fib), dsts, hash, out)
    }

    /// The body of both burst lookups.
    #[inline(always)]
    fn lookup_burst<F: BurstFib>(
        &self,
        fib: Option<&F>,
        dsts: &[F::Addr],
        mut hash: impl FnMut(usize) -> u32,
        out: &mut [Resolved],
    ) -> Option<NhId> {
        assert!(dsts.len() == out.len());
        let Some(fib) = fib else {
            out.fill(Resolved::NoRoute);
            return None;
        };
        let mut ent = [0u32; BURST];
        let mut one = None;
        // By index, not `chunks().zip()`: that zip was not inlined, and
        // took its lengths with two divisions a call.
        let mut c = 0;
        while c < dsts.len() {
            let end = dsts.len().min(c + BURST);
            let (d, o) = (&dsts[c..end], &mut out[c..end]);
            let e = &mut ent[..d.len()];
            fib.lookup_burst(d, e);
            // The common burst, every entry the same plain next hop, in
            // one fill; a burst of plain next hops without the per-entry
            // dispatch (-0.8 ns a packet on the worker's fast path,
            // `bench-results/throughput.md`); the others out of line, so
            // that the fast path's loop around this one keeps its code.
            let e0 = e[0];
            let same = (e0 >> KIND_SHIFT == K_NH) && e.iter().fold(0, |a, &x| a | (x ^ e0)) == 0;
            let nh = e0 & ID_MASK;
            if same {
                o.fill(Resolved::Forward(nh));
            } else if e.iter().fold(0, |a, &x| a | ((x >> KIND_SHIFT) ^ K_NH)) == 0 {
                for (o, &e) in o.iter_mut().zip(e.iter()) {
                    *o = Resolved::Forward(e & ID_MASK);
                }
            } else {
                self.resolve_burst(e, o, |j| hash(c + j));
            }
            // Every chunk so far the same next hop.
            one = match (c, same) {
                (0, true) => Some(nh),
                (_, true) => one.filter(|&x| x == nh),
                _ => None,
            };
            c = end;
        }
        one
    }

    /// `out[j]` for FIB entry `e[j]`, of a burst not all plain next hops;
    /// `hash(j)` as for [`Routing::lookup4_burst`]. A burst of plain next
    /// hops and unrouted entries (kind 0: the empty entry, 0) is written
    /// with a select a lane, not a branch, so that a burst mixing routed
    /// and unrouted destinations pays no mispredicted branch a lane: 28.7%
    /// of the IPv4 space has no route in the full view, so a burst of 32
    /// uniformly random addresses is all routed once in ~50,000, and the
    /// per-entry dispatch made such lookups 1.2-1.4x rte_fib's
    /// (`bench-results/fib.md`, 2026-12-06). Out of line: inlined into the
    /// worker's fast path, its code cost the all-routed burst 1-4
    /// instructions a packet there, by the layout it gave the loop
    /// (`bench-results/counts.md`).
    #[inline(never)]
    fn resolve_burst(&self, e: &[u32], out: &mut [Resolved], mut hash: impl FnMut(usize) -> u32) {
        if e.iter().fold(0, |a, &x| a | x >> (KIND_SHIFT + 1)) == 0 {
            for (o, &e) in out.iter_mut().zip(e) {
                *o = if e >> KIND_SHIFT == K_NH {
                    Resolved::Forward(e & ID_MASK)
                } else {
                    Resolved::NoRoute
                };
            }
        } else {
            // The last group entry and its group: the lanes of a burst to
            // an ECMP route mostly share it, and finding a group is a
            // walk of the group table (0: no entry is, a group's kind is
            // not 0).
            let mut memo = (0, None);
            for (j, (o, &e)) in out.iter_mut().zip(e).enumerate() {
                *o = if e >> KIND_SHIFT == K_GROUP {
                    if e != memo.0 {
                        memo = (e, self.groups.get(e & ID_MASK));
                    }
                    via_group(memo.1, || hash(j))
                } else {
                    // Not a group: `resolve` asks for no hash. (One call
                    // of `hash` in the loop, so that it is inlined.)
                    self.resolve(e, || 0)
                };
            }
        }
    }

    /// Whether port `port` is down (its next hops get no ECMP slots).
    pub fn port_down(&self, port: u16) -> bool {
        self.down_ports.contains(&port)
    }

    /// Whether every path of `target` leads to a down port (`linkdown` in
    /// `route show`).
    pub fn linkdown(&self, target: Target) -> bool {
        let down = |nh: NhId| self.nhs.get(nh).is_some_and(|n| self.port_down(n.port));
        match target {
            Target::NextHop(nh) => down(nh),
            Target::Group(g) => self
                .groups
                .get(g)
                .is_some_and(|g| g.members().iter().all(|&(nh, _)| down(nh))),
            _ => false,
        }
    }

    /// The next hop `id` (two array indexings).
    #[inline(always)]
    pub fn nexthop(&self, id: NhId) -> Option<&NextHop> {
        self.nhs.get(id)
    }

    /// The ECMP group `id`.
    #[inline]
    pub fn group(&self, id: GroupId) -> Option<&Group> {
        self.groups.get(id).map(|g| &**g)
    }

    // ---- control side queries ------------------------------------------------

    /// The FIB's unresolved answer for `dst` (what the data path matched).
    pub fn target4(&self, vrf: Vrf, dst: u32) -> Option<Target> {
        decode(self.vrfs.get(&vrf)?.v4.fib.lookup(dst))
    }

    /// The FIB's unresolved answer for `dst`.
    pub fn target6(&self, vrf: Vrf, dst: u128) -> Option<Target> {
        decode(self.vrfs.get(&vrf)?.v6.fib.lookup(dst))
    }

    /// Longest-prefix match in the RIB (`ip route get`): the matching route.
    pub fn route4(&self, vrf: Vrf, dst: u32) -> Option<(Prefix4, Target)> {
        let (a, l, e) = self.vrfs.get(&vrf)?.v4.rib.lpm(dst as u128, 32)?;
        Some((Prefix4::new(a as u32, l).ok()?, e.target))
    }

    /// Longest-prefix match in the IPv6 RIB.
    pub fn route6(&self, vrf: Vrf, dst: u128) -> Option<(Prefix6, Target)> {
        let (a, l, e) = self.vrfs.get(&vrf)?.v6.rib.lpm(dst, 128)?;
        Some((Prefix6::new(a, l).ok()?, e.target))
    }

    /// Exact route lookup.
    pub fn get(&self, vrf: Vrf, prefix: Prefix) -> Option<Target> {
        self.entry(vrf, prefix).map(|e| e.target)
    }

    /// Exact route lookup, with the route's origin.
    pub fn entry(&self, vrf: Vrf, prefix: Prefix) -> Option<Entry> {
        let t = self.vrfs.get(&vrf)?;
        match prefix {
            Prefix::V4(p) => t.v4.rib.get(p.addr() as u128, p.len()),
            Prefix::V6(p) => t.v6.rib.get(p.addr(), p.len()),
        }
    }

    /// IPv4 routes of `vrf` in prefix order (address, then length).
    pub fn entries4(&self, vrf: Vrf) -> impl Iterator<Item = (Prefix4, Entry)> + '_ {
        self.vrfs
            .get(&vrf)
            .into_iter()
            .flat_map(|t| t.v4.rib.iter())
            .map(|(a, l, e)| {
                (
                    Prefix4::new_truncate(a as u32, l).unwrap_or(Prefix4::DEFAULT),
                    e,
                )
            })
    }

    /// IPv6 routes of `vrf` in prefix order.
    pub fn entries6(&self, vrf: Vrf) -> impl Iterator<Item = (Prefix6, Entry)> + '_ {
        self.vrfs
            .get(&vrf)
            .into_iter()
            .flat_map(|t| t.v6.rib.iter())
            .map(|(a, l, e)| (Prefix6::new_truncate(a, l).unwrap_or(Prefix6::DEFAULT), e))
    }

    /// All routes of `vrf` with their origins: IPv4 then IPv6, each in
    /// prefix order.
    pub fn entries(&self, vrf: Vrf) -> impl Iterator<Item = (Prefix, Entry)> + '_ {
        self.entries4(vrf)
            .map(|(p, e)| (Prefix::V4(p), e))
            .chain(self.entries6(vrf).map(|(p, e)| (Prefix::V6(p), e)))
    }

    /// IPv4 routes of `vrf` in prefix order (address, then length).
    pub fn routes4(&self, vrf: Vrf) -> impl Iterator<Item = (Prefix4, Target)> + '_ {
        self.entries4(vrf).map(|(p, e)| (p, e.target))
    }

    /// IPv6 routes of `vrf` in prefix order.
    pub fn routes6(&self, vrf: Vrf) -> impl Iterator<Item = (Prefix6, Target)> + '_ {
        self.entries6(vrf).map(|(p, e)| (p, e.target))
    }

    /// All routes of `vrf`: IPv4 then IPv6, each in prefix order.
    pub fn routes(&self, vrf: Vrf) -> impl Iterator<Item = (Prefix, Target)> + '_ {
        self.entries(vrf).map(|(p, e)| (p, e.target))
    }

    /// Routes installed by zebra over FPM, in every table.
    pub fn fpm_route_count(&self) -> usize {
        self.fpm_routes
    }

    /// Number of routes in `vrf` (IPv4, IPv6).
    pub fn route_count(&self, vrf: Vrf) -> (usize, usize) {
        self.vrfs
            .get(&vrf)
            .map_or((0, 0), |t| (t.v4.rib.len(), t.v6.rib.len()))
    }

    /// VRF ids, ascending.
    pub fn vrfs(&self) -> impl Iterator<Item = Vrf> + '_ {
        self.vrfs.keys().copied()
    }

    /// Next hops, ascending id.
    pub fn nexthops(&self) -> impl Iterator<Item = (NhId, &NextHop)> + '_ {
        self.nhs.iter()
    }

    /// ECMP groups, ascending id.
    pub fn groups(&self) -> impl Iterator<Item = (GroupId, &Group)> + '_ {
        self.groups.iter().map(|(i, g)| (i, &**g))
    }

    /// Routes and group memberships using next hop `id`.
    pub fn nexthop_refs(&self, id: NhId) -> u32 {
        self.nh_refs.get(id)
    }

    /// Routes using group `id`.
    pub fn group_refs(&self, id: GroupId) -> u32 {
        self.group_refs.get(id)
    }

    /// Lowest next-hop id above every id in use (for allocating new ids).
    pub fn next_free_nh_id(&self) -> NhId {
        self.nhs.last_id().map_or(0, |i| i + 1)
    }

    /// Bytes of everything reachable from this version (shared memory counted
    /// once). Walks the whole version: a control-side statistic, not for the data path.
    pub fn memory_bytes(&self) -> usize {
        self.stats().total_bytes
    }

    /// Counts and memory per table. Walks the whole version.
    pub fn stats(&self) -> RoutingStats {
        let mut seen = HashSet::new();
        let mut s = RoutingStats {
            version: self.version,
            nexthops: self.nhs.len(),
            groups: self.groups.len(),
            ..Default::default()
        };
        let mut total = std::mem::size_of::<Routing>();
        for (&vrf, t) in self.vrfs.iter() {
            let v = VrfStats {
                vrf,
                routes4: t.v4.rib.len(),
                routes6: t.v6.rib.len(),
                rib_nodes4: t.v4.rib.nodes(),
                rib_nodes6: t.v6.rib.nodes(),
                tbl24_pages4: t.v4.fib.tbl24_pages(),
                tbl24_pages6: t.v6.fib.tbl24_pages(),
                tbl8_used4: t.v4.fib.groups_used(),
                pairs4: t.v4.fib.pairs_used(),
                tbl8_capacity4: t.v4.fib.groups_capacity(),
                tbl8_used6: t.v6.fib.groups_used(),
                pairs6: t.v6.fib.pairs_used(),
                tbl8_capacity6: t.v6.fib.groups_capacity(),
                rib4_bytes: t.v4.rib.mem(&mut seen),
                rib6_bytes: t.v6.rib.mem(&mut seen),
                fib4_bytes: t.v4.fib.mem(&mut seen),
                fib6_bytes: t.v6.fib.mem(&mut seen),
            };
            total += std::mem::size_of::<VrfTables>()
                + 2 * cow::ARC_HEADER
                + std::mem::size_of::<Family<32>>()
                + std::mem::size_of::<Family<128>>()
                + v.rib4_bytes
                + v.rib6_bytes
                + v.fib4_bytes
                + v.fib6_bytes;
            s.vrfs.push(v);
        }
        s.nh_bytes = self.nhs.mem(&mut seen)
            + self.nh_refs.mem(&mut seen)
            + self.groups.mem_groups(&mut seen)
            + self.group_refs.mem(&mut seen);
        s.total_bytes = total + s.nh_bytes;
        s.charged_bytes = self.charge;
        s.limits = self.limits;
        debug_assert_eq!(self.charge, self.recharge(), "the running charge");
        s
    }
}

/// Destinations resolved together by the burst lookups.
const BURST: usize = fib::BURST_MAX;

/// What a route to group `g` resolves to (None: the group is gone): the
/// member the flow hash picks.
#[inline(always)]
fn via_group(g: Option<&Arc<Group>>, hash: impl FnOnce() -> u32) -> Resolved {
    g.map_or(Resolved::NoRoute, |g| Resolved::Forward(g.select(hash())))
}
