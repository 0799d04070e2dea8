//! [`Txn`]: a batch being applied to a private copy of a version, one
//! change at a time, each all or nothing, within the [`Limits`].

use smallvec::SmallVec;
use triomphe::Arc;

use super::cow::make_mut;
use super::entry::encode;
use super::vrf::{Family, VrfTables};
use super::*;

/// A batch being built: a private working copy of a version. Each method either
/// applies its change completely or, on error, changes nothing, so a caller may
/// report the error and go on. [`Txn::commit`] yields the new version.
pub struct Txn {
    r: Routing,
    scratch: Vec<(u128, u8)>,
    /// The VRFs this batch wrote (sorted and deduplicated by `commit`);
    /// inline, as a batch mostly writes one and a one-change version is
    /// ~18 allocations (`bench-results/route.md`).
    touched: SmallVec<[Vrf; 4]>,
    /// Prefixes deleted by this batch, when recording (see
    /// [`Txn::record_removals`]).
    removed: Option<Vec<(Vrf, Prefix)>>,
    /// Next hops and groups this batch found present, at their id modulo
    /// [`PRESENT`] (a direct-mapped cache): a full view names a few
    /// targets over and over, and looking each up again in its paged table
    /// was ~35 instructions of a route's ~1,020 (`bench-results/route.md`).
    /// Emptied by every write of a next hop or group.
    present: [Option<Target>; PRESENT],
}

/// Slots of [`Txn::present`].
const PRESENT: usize = 16;

impl Txn {
    /// A batch on top of `r`, which it owns.
    pub(super) fn new(r: Routing) -> Txn {
        Txn {
            r,
            scratch: Vec::new(),
            touched: SmallVec::new(),
            removed: None,
            present: [None; PRESENT],
        }
    }

    /// The working copy as it stands (for queries during a batch).
    pub fn current(&self) -> &Routing {
        &self.r
    }

    /// Finishes the batch: drops what became empty and returns the new version.
    pub fn commit(mut self) -> Routing {
        self.trim();
        self.r.version += 1;
        self.r
    }

    /// Trims the families this batch wrote (first-level pages left all
    /// zero go back to the shared zero page, the group pool's free tail
    /// goes) and keeps the charge: at the end of a batch, and before a
    /// change is refused at the memory limit, so that what the batch's
    /// deletes freed is credited first.
    fn trim(&mut self) {
        self.touched.sort_unstable();
        self.touched.dedup();
        if !self.touched.is_empty() {
            let map = make_mut(&mut self.r.vrfs);
            for vrf in &self.touched {
                if let Some(t) = map.get_mut(vrf) {
                    // Only a family this batch wrote is unshared; the others
                    // have nothing to trim. Trimming gives pages back: the
                    // charge follows.
                    if let Some(f) = Arc::get_mut(&mut t.v4) {
                        let before = f.charge();
                        f.fib.trim();
                        self.r.charge = self.r.charge - before + f.charge();
                    }
                    if let Some(f) = Arc::get_mut(&mut t.v6) {
                        let before = f.charge();
                        f.fib.trim();
                        self.r.charge = self.r.charge - before + f.charge();
                    }
                }
            }
        }
    }

    /// Whether a change that raised the charge from `before` took it past
    /// the memory limit, once what this batch freed is credited ([`Txn::trim`]).
    fn over_limit(&mut self, before: usize) -> bool {
        if self.r.charge <= before || self.r.charge <= self.r.limits.bytes {
            return false;
        }
        self.trim();
        self.r.charge > self.r.limits.bytes
    }

    /// Applies one change.
    ///
    /// # Errors
    /// See [`RouteError`]; on error nothing was changed.
    pub fn change(&mut self, c: &RouteChange) -> Result<(), RouteError> {
        match c {
            RouteChange::Add {
                vrf,
                prefix,
                target,
            } => self.add(*vrf, *prefix, *target),
            RouteChange::Replace {
                vrf,
                prefix,
                target,
            } => self.replace(*vrf, *prefix, *target).map(|_| ()),
            RouteChange::Upsert {
                vrf,
                prefix,
                target,
            } => self.upsert(*vrf, *prefix, *target).map(|_| ()),
            RouteChange::Del { vrf, prefix } => self.del(*vrf, *prefix).map(|_| ()),
            RouteChange::NhAdd { id, nh } => self.nh_add(*id, *nh),
            RouteChange::NhUpdate { id, nh } => self.nh_update(*id, *nh).map(|_| ()),
            RouteChange::NhDel { id } => self.nh_del(*id).map(|_| ()),
            RouteChange::GroupAdd { id, members } => self.group_add(*id, members),
            RouteChange::GroupUpdate { id, members } => self.group_update(*id, members),
            RouteChange::GroupDel { id } => self.group_del(*id),
            RouteChange::VrfAdd { vrf } => self.vrf_add(*vrf),
            RouteChange::VrfDel { vrf } => self.vrf_del(*vrf),
        }
    }

    /// Whether `t` exists; a target found present is remembered
    /// ([`Txn::present`]), inline, the lookup out of line.
    #[inline(always)]
    fn check_target(&mut self, t: Target) -> Result<(), RouteError> {
        let (Target::NextHop(id) | Target::Group(id)) = t else {
            return Ok(());
        };
        let slot = id as usize % PRESENT;
        if self.present[slot] == Some(t) {
            return Ok(());
        }
        self.look_up_target(t, slot)
    }

    /// [`Txn::check_target`] of a target not remembered at `slot`.
    #[inline(never)]
    fn look_up_target(&mut self, t: Target, slot: usize) -> Result<(), RouteError> {
        match t {
            Target::NextHop(id) if self.r.nhs.get(id).is_none() => {
                return Err(RouteError::UnknownNextHop(id));
            }
            Target::Group(id) if self.r.groups.get(id).is_none() => {
                return Err(RouteError::UnknownGroup(id));
            }
            _ => {}
        }
        self.present[slot] = Some(t);
        Ok(())
    }

    #[inline(always)]
    fn add_ref(&mut self, t: Target, delta: i32) {
        match t {
            Target::NextHop(id) => make_mut(&mut self.r.nh_refs).add(id, delta),
            Target::Group(id) => make_mut(&mut self.r.group_refs).add(id, delta),
            _ => {}
        }
    }

    /// VRF `vrf`, created (and charged) if it does not exist, and the
    /// batch's scratch list of a prefix's children (for the write).
    #[inline(always)]
    fn vrf_mut(&mut self, vrf: Vrf) -> (&mut VrfTables, &mut Vec<(u128, u8)>) {
        if self.touched.last() != Some(&vrf) {
            self.touched.push(vrf);
        }
        let Txn { r, scratch, .. } = self;
        let t = match make_mut(&mut r.vrfs).entry(vrf) {
            std::collections::btree_map::Entry::Occupied(t) => t.into_mut(),
            std::collections::btree_map::Entry::Vacant(v) => {
                let t = v.insert(VrfTables::default());
                r.charge += t.charge();
                t
            }
        };
        (t, scratch)
    }

    /// Whether a write to VRF `vrf` would create it; refused past
    /// [`Limits::tables`].
    fn new_table(&self, vrf: Vrf) -> Result<bool, RouteError> {
        // Every VRF this batch wrote exists (`drop_table` forgets it): the
        // last one is the common case of a batch's writes, without a
        // search of the map.
        if self.touched.last() == Some(&vrf) || self.r.vrfs.contains_key(&vrf) {
            return Ok(false);
        }
        if self.r.vrfs.len() >= self.r.limits.tables {
            return Err(RouteError::Full {
                capacity: Capacity::Tables,
                limit: self.r.limits.tables,
            });
        }
        Ok(true)
    }

    /// Drops VRF `vrf` and its charge.
    fn drop_table(&mut self, vrf: Vrf) {
        if let Some(t) = make_mut(&mut self.r.vrfs).remove(&vrf) {
            self.r.charge -= t.charge();
        }
        self.touched.retain(|v| *v != vrf);
    }

    /// The error for a change that took the charge past the limit.
    fn memory_full(&self) -> RouteError {
        RouteError::Full {
            capacity: Capacity::Memory,
            limit: self.r.limits.bytes,
        }
    }

    /// [`Txn::write_route`] held to the [`Limits`]: a new VRF past the
    /// table limit is refused before anything is written, and a write that
    /// raised the charge past the memory limit is undone and refused.
    #[inline(always)]
    fn set_route(
        &mut self,
        vrf: Vrf,
        prefix: Prefix,
        entry: Entry,
    ) -> Result<Option<Entry>, RouteError> {
        let created = self.new_table(vrf)?;
        let before = self.r.charge;
        let old = self.write_route(vrf, prefix, entry);
        if self.over_limit(before) {
            self.restore(vrf, prefix, old);
            if created {
                self.drop_table(vrf);
            }
            return Err(self.memory_full());
        }
        Ok(old)
    }

    /// Puts back the entry a write replaced (`old`; none: the prefix is
    /// erased): for a refused write, or the add of a prefix already
    /// present. Out of line, as those errors are.
    #[cold]
    #[inline(never)]
    fn restore(&mut self, vrf: Vrf, prefix: Prefix, old: Option<Entry>) {
        match old {
            Some(o) => {
                self.write_route(vrf, prefix, o);
            }
            None => {
                self.erase_route(vrf, prefix, |_| true);
            }
        }
    }

    /// Writes `prefix -> entry` into RIB and FIB and keeps the charge (no
    /// validation, no limit, no refcounts).
    fn write_route(&mut self, vrf: Vrf, prefix: Prefix, entry: Entry) -> Option<Entry> {
        let v = encode(entry.target);
        let (t, kids) = self.vrf_mut(vrf);
        let (old, before, after) = match prefix {
            Prefix::V4(p) => Family::charged(&mut t.v4, |f| {
                f.set(p.addr() as u128, p.len(), entry, v, kids)
            }),
            Prefix::V6(p) => {
                Family::charged(&mut t.v6, |f| f.set(p.addr(), p.len(), entry, v, kids))
            }
        };
        self.r.charge = self.r.charge - before + after;
        if old.is_some_and(|o| o.origin.fpm) {
            self.r.fpm_routes -= 1;
        }
        if entry.origin.fpm {
            self.r.fpm_routes += 1;
        }
        old
    }

    /// Removes `prefix` from RIB and FIB if present and `pred` accepts its
    /// entry, and keeps the charge (no refcounts).
    fn erase_route(
        &mut self,
        vrf: Vrf,
        prefix: Prefix,
        pred: impl FnOnce(&Entry) -> bool,
    ) -> Option<Entry> {
        // Only an existing VRF: `vrf_mut` would create one.
        if !self.r.vrfs.contains_key(&vrf) {
            return None;
        }
        let (t, kids) = self.vrf_mut(vrf);
        let (old, before, after) = match prefix {
            Prefix::V4(p) => Family::charged(&mut t.v4, |f| {
                f.remove_if(p.addr() as u128, p.len(), kids, pred)
            }),
            Prefix::V6(p) => {
                Family::charged(&mut t.v6, |f| f.remove_if(p.addr(), p.len(), kids, pred))
            }
        };
        self.r.charge = self.r.charge - before + after;
        let old = old?;
        if old.origin.fpm {
            self.r.fpm_routes -= 1;
        }
        Some(old)
    }

    /// From now on, remember every prefix this batch deletes
    /// ([`Txn::take_removed`]): a caller that keeps routes of its own
    /// beneath the table's (FPM's, under the operator's) puts them back.
    pub fn record_removals(&mut self) {
        self.removed.get_or_insert_with(Vec::new);
    }

    /// The prefixes deleted since [`Txn::record_removals`].
    pub fn take_removed(&mut self) -> Vec<(Vrf, Prefix)> {
        self.removed
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Adds a route.
    ///
    /// # Errors
    /// `RouteExists`, `UnknownNextHop`, `UnknownGroup`.
    pub fn add(&mut self, vrf: Vrf, prefix: Prefix, target: Target) -> Result<(), RouteError> {
        self.check_target(target)?;
        let entry = Entry {
            target,
            origin: Origin::STATIC,
        };
        // One walk in the common case: insert, and on a duplicate put the
        // existing entry back (RIB and FIB then hold exactly what they held).
        if let Some(old) = self.set_route(vrf, prefix, entry)? {
            self.restore(vrf, prefix, Some(old));
            return Err(RouteError::RouteExists { vrf, prefix });
        }
        self.add_ref(target, 1);
        Ok(())
    }

    /// Replaces an existing route's target; returns the old one.
    ///
    /// # Errors
    /// `RouteNotFound`, `UnknownNextHop`, `UnknownGroup`.
    pub fn replace(
        &mut self,
        vrf: Vrf,
        prefix: Prefix,
        target: Target,
    ) -> Result<Target, RouteError> {
        self.check_target(target)?;
        if self.r.get(vrf, prefix).is_none() {
            return Err(RouteError::RouteNotFound { vrf, prefix });
        }
        self.upsert(vrf, prefix, target)
            .map(|o| o.unwrap_or(target))
    }

    /// Adds or replaces; returns the old target if there was one.
    ///
    /// # Errors
    /// `UnknownNextHop`, `UnknownGroup`.
    pub fn upsert(
        &mut self,
        vrf: Vrf,
        prefix: Prefix,
        target: Target,
    ) -> Result<Option<Target>, RouteError> {
        self.set(vrf, prefix, target, Origin::STATIC)
            .map(|o| o.map(|e| e.target))
    }

    /// Adds or replaces a route of `origin`; returns the old entry if there
    /// was one.
    ///
    /// # Errors
    /// `UnknownNextHop`, `UnknownGroup`.
    pub fn set(
        &mut self,
        vrf: Vrf,
        prefix: Prefix,
        target: Target,
        origin: Origin,
    ) -> Result<Option<Entry>, RouteError> {
        self.check_target(target)?;
        let old = self.set_route(vrf, prefix, Entry { target, origin })?;
        self.add_ref(target, 1);
        if let Some(o) = old {
            self.add_ref(o.target, -1);
        }
        Ok(old)
    }

    /// Deletes a route; returns its target. The covered addresses fall back to
    /// the longest remaining covering route.
    ///
    /// # Errors
    /// `RouteNotFound`.
    pub fn del(&mut self, vrf: Vrf, prefix: Prefix) -> Result<Target, RouteError> {
        self.del_if(vrf, prefix, |_| true)
            .ok_or(RouteError::RouteNotFound { vrf, prefix })
    }

    /// Deletes a route if `pred` accepts its entry (e.g. only zebra's);
    /// returns its target, or `None` when the prefix is absent or `pred`
    /// refused it (nothing changed then). One lookup less than reading the
    /// entry and then deleting it.
    pub fn del_if(
        &mut self,
        vrf: Vrf,
        prefix: Prefix,
        pred: impl FnOnce(&Entry) -> bool,
    ) -> Option<Target> {
        let old = self.erase_route(vrf, prefix, pred)?;
        self.add_ref(old.target, -1);
        if let Some(r) = self.removed.as_mut() {
            r.push((vrf, prefix));
        }
        Some(old.target)
    }

    fn check_id(id: u32) -> Result<(), RouteError> {
        if id > MAX_ID {
            Err(RouteError::IdOutOfRange { id, max: MAX_ID })
        } else {
            Ok(())
        }
    }

    /// Adds a next hop.
    ///
    /// # Errors
    /// `IdOutOfRange`, `NextHopExists`.
    pub fn nh_add(&mut self, id: NhId, nh: NextHop) -> Result<(), RouteError> {
        Self::check_id(id)?;
        if self.r.nhs.get(id).is_some() {
            return Err(RouteError::NextHopExists(id));
        }
        let before = self.r.charge;
        self.put_nh(id, Some(nh));
        if self.over_limit(before) {
            self.put_nh(id, None);
            return Err(self.memory_full());
        }
        Ok(())
    }

    /// Replaces a next hop's contents; returns the old contents.
    ///
    /// # Errors
    /// `UnknownNextHop`.
    pub fn nh_update(&mut self, id: NhId, nh: NextHop) -> Result<NextHop, RouteError> {
        let old = *self.r.nhs.get(id).ok_or(RouteError::UnknownNextHop(id))?;
        if old != nh {
            self.put_nh(id, Some(nh));
        }
        Ok(old)
    }

    /// Puts `nh` at `id` (`None`: removes it) and keeps the charge; returns
    /// the next hop that was there.
    fn put_nh(&mut self, id: NhId, nh: Option<NextHop>) -> Option<NextHop> {
        self.present = [None; PRESENT];
        let before = self.r.nhs.charge();
        let nhs = make_mut(&mut self.r.nhs);
        let old = nhs.replace(id, nh);
        self.r.charge = self.r.charge - before + nhs.charge();
        old
    }

    /// Deletes an unused next hop.
    ///
    /// # Errors
    /// `UnknownNextHop`, `NextHopInUse`.
    pub fn nh_del(&mut self, id: NhId) -> Result<NextHop, RouteError> {
        self.r.nhs.get(id).ok_or(RouteError::UnknownNextHop(id))?;
        let refs = self.r.nh_refs.get(id);
        if refs != 0 {
            return Err(RouteError::NextHopInUse { id, refs });
        }
        self.put_nh(id, None).ok_or(RouteError::UnknownNextHop(id))
    }

    fn build_group(&self, id: GroupId, members: &[(NhId, u32)]) -> Result<Group, RouteError> {
        for &(nh, _) in members {
            if self.r.nhs.get(nh).is_none() {
                return Err(RouteError::UnknownNextHop(nh));
            }
        }
        let (nhs, down) = (&self.r.nhs, &self.r.down_ports);
        Group::with_live(id, members, |nh| {
            nhs.get(nh).is_none_or(|n| !down.contains(&n.port))
        })
    }

    /// Records which ports are down and rebuilds the slot tables of the
    /// ECMP groups that have a member on a port whose state changed, so
    /// flows move off a down port in this batch (and back when it is up).
    pub fn set_ports_down(&mut self, down: std::collections::BTreeSet<u16>) {
        if *self.r.down_ports == down {
            return;
        }
        let changed: std::collections::BTreeSet<u16> = self
            .r
            .down_ports
            .symmetric_difference(&down)
            .copied()
            .collect();
        self.r.down_ports = Arc::new(down);
        let affected: Vec<(GroupId, Vec<(NhId, u32)>)> = self
            .r
            .groups
            .iter()
            .filter(|(_, g)| {
                g.members().iter().any(|&(nh, _)| {
                    self.r
                        .nhs
                        .get(nh)
                        .is_some_and(|n| changed.contains(&n.port))
                })
            })
            .map(|(id, g)| (id, g.members().to_vec()))
            .collect();
        for (id, members) in affected {
            if let Ok(g) = self.build_group(id, &members) {
                // Never refused: the same members, the same size.
                self.put_group(id, Some(Arc::new(g)));
            }
        }
    }

    /// Puts `g` at `id` (`None`: removes it) and keeps the charge; returns
    /// the group that was there.
    fn put_group(&mut self, id: GroupId, g: Option<Arc<Group>>) -> Option<Arc<Group>> {
        self.present = [None; PRESENT];
        let before = self.r.groups.charge();
        let added = g.as_ref().map_or(0, |g| g.charge());
        let groups = make_mut(&mut self.r.groups);
        let old = groups.replace(id, g);
        let removed = old.as_ref().map_or(0, |g| g.charge());
        self.r.charge = self.r.charge + groups.charge() + added - before - removed;
        old
    }

    /// [`Txn::put_group`] held to the memory limit: a put that raised the
    /// charge past it is undone and refused.
    fn put_group_checked(&mut self, id: GroupId, g: Group) -> Result<(), RouteError> {
        let before = self.r.charge;
        let old = self.put_group(id, Some(Arc::new(g)));
        if self.over_limit(before) {
            self.put_group(id, old);
            return Err(self.memory_full());
        }
        Ok(())
    }

    /// Adds an ECMP group.
    ///
    /// # Errors
    /// `IdOutOfRange`, `GroupExists`, `UnknownNextHop`, `EmptyGroup`, `ZeroWeight`,
    /// `DuplicateMember`, `TooManyMembers`.
    pub fn group_add(&mut self, id: GroupId, members: &[(NhId, u32)]) -> Result<(), RouteError> {
        Self::check_id(id)?;
        if self.r.groups.get(id).is_some() {
            return Err(RouteError::GroupExists(id));
        }
        let g = self.build_group(id, members)?;
        self.put_group_checked(id, g)?;
        let refs = make_mut(&mut self.r.nh_refs);
        for &(nh, _) in members {
            refs.add(nh, 1);
        }
        Ok(())
    }

    /// Replaces an ECMP group's members.
    ///
    /// # Errors
    /// `UnknownGroup` and the member errors of [`Txn::group_add`].
    pub fn group_update(&mut self, id: GroupId, members: &[(NhId, u32)]) -> Result<(), RouteError> {
        let old = self
            .r
            .groups
            .get(id)
            .cloned()
            .ok_or(RouteError::UnknownGroup(id))?;
        let g = self.build_group(id, members)?;
        self.put_group_checked(id, g)?;
        let refs = make_mut(&mut self.r.nh_refs);
        for &(nh, _) in members {
            refs.add(nh, 1);
        }
        for &(nh, _) in old.members() {
            refs.add(nh, -1);
        }
        Ok(())
    }

    /// Deletes an unused ECMP group.
    ///
    /// # Errors
    /// `UnknownGroup`, `GroupInUse`.
    pub fn group_del(&mut self, id: GroupId) -> Result<(), RouteError> {
        let g = self
            .r
            .groups
            .get(id)
            .cloned()
            .ok_or(RouteError::UnknownGroup(id))?;
        let refs = self.r.group_refs.get(id);
        if refs != 0 {
            return Err(RouteError::GroupInUse { id, refs });
        }
        self.put_group(id, None);
        let refs = make_mut(&mut self.r.nh_refs);
        for &(nh, _) in g.members() {
            refs.add(nh, -1);
        }
        Ok(())
    }

    /// Creates an empty VRF.
    ///
    /// # Errors
    /// `VrfExists`.
    pub fn vrf_add(&mut self, vrf: Vrf) -> Result<(), RouteError> {
        if self.r.vrfs.contains_key(&vrf) {
            return Err(RouteError::VrfExists(vrf));
        }
        self.new_table(vrf)?;
        let before = self.r.charge;
        self.vrf_mut(vrf);
        if self.over_limit(before) {
            self.drop_table(vrf);
            return Err(self.memory_full());
        }
        Ok(())
    }

    /// Deletes an empty VRF.
    ///
    /// # Errors
    /// `VrfNotFound`, `VrfNotEmpty`.
    pub fn vrf_del(&mut self, vrf: Vrf) -> Result<(), RouteError> {
        let t = self.r.vrfs.get(&vrf).ok_or(RouteError::VrfNotFound(vrf))?;
        let routes = t.v4.rib.len() + t.v6.rib.len();
        if routes != 0 {
            return Err(RouteError::VrfNotEmpty { vrf, routes });
        }
        self.drop_table(vrf);
        Ok(())
    }
}
