//! Applying operator changes (`ctl::wire::Change`) to the tables.
//!
//! A batch is applied to private working copies (the routing [`Txn`], the
//! port list, the management maps); the first error aborts it and nothing
//! of it is ever published. Classifier updates go last, through the
//! stateful [`acl::ClassifierWriter`], which is itself all-or-nothing, so
//! by the time it runs every other part of the batch has succeeded.
//!
//! What lives here and not in the data-path tables:
//! - static neighbours `(port, ip) -> MAC`; adding one resolves every next
//!   hop whose gateway it is (one `NhUpdate` each, so every route using it
//!   follows in the same generation) and, when the address sits in a
//!   connected subnet of the port, installs a host route to it;
//! - interface addresses: each gives a connected route (on-link next hop
//!   of the port) and a local route;
//! - unnamed next hops (`route add P via GW dev PORT`): one per
//!   `(gateway, port)`, created on first use, deleted when no route uses it;
//!   unnamed ECMP groups (multipath routes, from `fwdctl` or zebra) the
//!   same way, one per set of (next hop, weight).
//!
//! Routes carry their [`Origin`]. zebra's (FPM) give way to every other
//! route at the same prefix: an operator's `route add` over one replaces
//! it in the FIB, and when a non-FPM route goes, the FPM route kept
//! beneath it ([`FpmRib`]) is put back in the same batch.

use std::net::IpAddr;
use std::sync::Arc;

use ctl::wire::{self, Change, ErrorBody, ErrorKind, RouteTarget};

use super::convert::routes::RouteSelector;
use super::convert::{self, host_prefix, ifaddr_of, net_of, prefix_of};
use crate::acl;
use crate::fpm::rib::{FpmRib, FpmTarget};
use crate::route::{self, GroupId, NhId, Origin, Prefix, RouteError, Target, Txn};
use crate::tables::{Mgmt, PortInfo, Tables};

/// What a successful batch produced.
pub struct Outcome {
    pub tables: Tables,
    /// Ids assigned to `rule_add`s without one, in order.
    pub rule_ids: Vec<u32>,
    /// Classifier slots retired by this batch: reusable once its
    /// generation is reclaimed.
    pub retired_slots: Vec<acl::Slot>,
    /// Estimate of the memory the replaced version holds alone.
    pub retired_bytes: usize,
}

fn err(kind: ErrorKind, msg: impl Into<String>) -> ErrorBody {
    ErrorBody::new(kind, msg)
}

/// Maps a routing error to the protocol's kinds.
pub fn route_error(e: &RouteError) -> ErrorBody {
    let kind = match e {
        RouteError::RouteExists { .. }
        | RouteError::NextHopExists(_)
        | RouteError::GroupExists(_)
        | RouteError::VrfExists(_) => ErrorKind::Exists,
        RouteError::RouteNotFound { .. }
        | RouteError::UnknownNextHop(_)
        | RouteError::UnknownGroup(_) => ErrorKind::NotFound,
        RouteError::NextHopInUse { .. } | RouteError::GroupInUse { .. } => ErrorKind::Conflict,
        RouteError::Full { capacity, .. } => {
            let key = match capacity {
                route::Capacity::Tables => "tables",
                route::Capacity::Memory => "routing_mb",
            };
            return err(
                ErrorKind::TooLarge,
                format!("{e} (the config's limits.{key})"),
            );
        }
        _ => ErrorKind::Invalid,
    };
    err(kind, e.to_string())
}

/// A batch being applied.
struct Edit<'a> {
    base: &'a Tables,
    routing: Txn,
    ports: Option<Vec<PortInfo>>,
    mgmt: Mgmt,
    /// Classifier updates with the index of the change they came from.
    acl: Vec<(acl::Update, usize)>,
    /// Index of the change being applied.
    at: usize,
    rule_ids: Vec<u32>,
    /// The classifier before this batch, whose rules a flush deletes and
    /// above whose ids unnamed rules are numbered (`None`: no rules).
    rules_before: Option<Arc<acl::Classifier>>,
    /// Ids of `rules_before`'s rules, listed on first use: most batches need
    /// neither, and listing 100k rules per batch would cost more than the
    /// batch.
    acl_ids: Option<Vec<u32>>,
    /// The id for the next unnamed rule (on first use: above `acl_ids`).
    next_rule_id: Option<u32>,
    /// Unnamed next hops whose last user may have gone.
    gc: Vec<NhId>,
    /// Unnamed groups whose last route may have gone.
    gc_groups: Vec<GroupId>,
    /// zebra's routes, kept beneath the others (see the module doc).
    beneath: Option<&'a FpmRib>,
    /// zebra's targets resolved in this batch, by (interned target,
    /// IPv4 prefix).
    fpm_memo: rustc_hash::FxHashMap<(usize, bool), (Arc<FpmTarget>, Target)>,
    /// Next hops created by this batch (for id allocation).
    next_nh: NhId,
}

impl<'a> Edit<'a> {
    fn new(
        base: &'a Tables,
        acl_w: &acl::ClassifierWriter,
        beneath: Option<&'a FpmRib>,
    ) -> Edit<'a> {
        Edit::with_rules(base, Some(Arc::clone(acl_w.current())), beneath)
    }

    /// An edit of `base`, whose rules are those of `rules_before`.
    fn with_rules(
        base: &'a Tables,
        rules_before: Option<Arc<acl::Classifier>>,
        beneath: Option<&'a FpmRib>,
    ) -> Edit<'a> {
        Edit {
            base,
            routing: base.routing.txn(),
            ports: None,
            mgmt: (*base.mgmt).clone(),
            acl: Vec::new(),
            at: 0,
            rule_ids: Vec::new(),
            rules_before,
            acl_ids: None,
            next_rule_id: None,
            gc: Vec::new(),
            gc_groups: Vec::new(),
            beneath: beneath.filter(|f| !f.is_empty()),
            fpm_memo: Default::default(),
            next_nh: base.routing.next_free_nh_id().max(AUTO_MIN_ID),
        }
        .recording()
    }

    /// The ids of the rules before this batch (listed on first use).
    fn acl_ids(&mut self) -> &[u32] {
        let before = &self.rules_before;
        self.acl_ids.get_or_insert_with(|| {
            before
                .as_ref()
                .map_or_else(Vec::new, |c| c.entries().map(|e| e.id()).collect())
        })
    }

    /// Deleted prefixes are recorded when FPM routes may wait beneath them.
    fn recording(mut self) -> Self {
        if self.beneath.is_some() {
            self.routing.record_removals();
        }
        self
    }

    fn ports(&self) -> &[PortInfo] {
        self.ports.as_deref().unwrap_or(&self.base.ports)
    }

    /// The ports, writable: copied from the base once a batch (a copy per
    /// change made a batch of address changes quadratic).
    fn ports_mut(&mut self) -> &mut [PortInfo] {
        let base = &self.base.ports;
        self.ports.get_or_insert_with(|| base.to_vec())
    }

    fn port(&self, name: &str) -> Result<u16, ErrorBody> {
        self.ports()
            .iter()
            .position(|p| p.name == name)
            .map(|i| i as u16)
            .ok_or_else(|| err(ErrorKind::Invalid, format!("no port named {name:?}")))
    }

    /// The output port of `via GW [dev PORT]`: the named one, else the one
    /// whose address covers the gateway.
    fn gateway_port(&self, via: Option<IpAddr>, dev: Option<&str>) -> Result<u16, ErrorBody> {
        match (dev, via) {
            (Some(d), _) => self.port(d),
            (None, Some(v)) => self.port_for_gateway(v),
            (None, None) => Err(err(ErrorKind::Invalid, "a route needs via and/or dev")),
        }
    }

    /// The port whose address covers `gw` (for `via GW` without `dev`).
    fn port_for_gateway(&self, gw: IpAddr) -> Result<u16, ErrorBody> {
        self.ports()
            .iter()
            .position(|p| p.addresses.iter().any(|a| a.contains(gw)))
            .map(|i| i as u16)
            .ok_or_else(|| {
                err(
                    ErrorKind::Invalid,
                    format!("no port has an address covering gateway {gw}; name one with dev"),
                )
            })
    }

    /// The target of paths `(gateway, port, weight)`: an unnamed next hop
    /// for one, an unnamed group for several.
    fn paths_target(
        &mut self,
        paths: &[(Option<IpAddr>, u16, u32)],
        prefix: Prefix,
    ) -> Result<Target, ErrorBody> {
        for (via, _, _) in paths {
            check_family(*via, prefix)?;
        }
        let mut members = Vec::with_capacity(paths.len());
        for &(via, port, weight) in paths {
            members.push((self.auto_nh(via, port)?, weight));
        }
        members.sort_unstable();
        // The same next hop twice (zebra can send that) is one member with
        // both weights.
        members.dedup_by(|b, a| {
            let same = a.0 == b.0;
            if same {
                a.1 += b.1;
            }
            same
        });
        match members.as_slice() {
            [] => Err(err(ErrorKind::Invalid, "a multipath route needs paths")),
            [(id, _)] => Ok(Target::NextHop(*id)),
            _ => Ok(Target::Group(self.auto_group(members)?)),
        }
    }

    /// The ports of multipath specs, by name or by gateway.
    fn spec_paths(
        &self,
        specs: &[wire::NextHopSpec],
    ) -> Result<Vec<(Option<IpAddr>, u16, u32)>, ErrorBody> {
        specs
            .iter()
            .map(|s| {
                if !(1..=255).contains(&s.weight) {
                    return Err(err(
                        ErrorKind::Invalid,
                        format!("weight {} out of range (1 to 255)", s.weight),
                    ));
                }
                Ok((s.via, self.gateway_port(s.via, s.dev.as_deref())?, s.weight))
            })
            .collect()
    }

    fn target(&mut self, t: &RouteTarget, prefix: Prefix) -> Result<Target, ErrorBody> {
        Ok(match t {
            RouteTarget::Gateway { via, dev } => {
                check_family(*via, prefix)?;
                let port = self.gateway_port(*via, dev.as_deref())?;
                Target::NextHop(self.auto_nh(*via, port)?)
            }
            RouteTarget::Multipath(specs) => {
                let paths = self.spec_paths(specs)?;
                self.paths_target(&paths, prefix)?
            }
            RouteTarget::Nhid(id) => self.nhid_target(*id, prefix)?,
            RouteTarget::Group(id) => self.group_target(*id, prefix)?,
            RouteTarget::Blackhole => Target::Blackhole,
            RouteTarget::Reject => Target::Reject,
            RouteTarget::Local => Target::Local,
        })
    }

    fn retarget_neighbour(
        &mut self,
        port: u16,
        ip: IpAddr,
        mac: Option<[u8; 6]>,
    ) -> Result<(), ErrorBody> {
        // The named next hops through `ip` (the operator's, below
        // AUTO_MIN_ID, listed first), and the one unnamed next hop for it:
        // not a walk of every next hop, which on a LAN is one per attached
        // neighbour (its host route's).
        let cur = self.routing.current();
        let ids: Vec<NhId> = cur
            .nexthops()
            .take_while(|&(id, _)| id < AUTO_MIN_ID)
            .filter(|(_, nh)| nh.port == port && nh.gateway == Some(ip))
            .map(|(id, _)| id)
            .chain(self.mgmt.auto_nh.get(&(Some(ip), port)).copied())
            .collect();
        for id in ids {
            let mut nh = *self.routing.current().nexthop(id).expect("listed above");
            nh.mac = mac;
            self.routing
                .nh_update(id, nh)
                .map_err(|e| route_error(&e))?;
        }
        Ok(())
    }

    fn connected(&self, port: u16, ip: IpAddr) -> bool {
        self.ports()
            .get(usize::from(port))
            .is_some_and(|p| p.addresses.iter().any(|a| a.has_peers() && a.contains(ip)))
    }

    /// The routing table of `port`: where its connected, local and attached
    /// host routes live.
    fn vrf(&self, port: u16) -> u32 {
        self.ports().get(usize::from(port)).map_or(0, |p| p.vrf)
    }

    /// Host route to an attached neighbour, unless the operator has a route
    /// of their own at that exact prefix.
    fn neighbour_host_route(&mut self, port: u16, ip: IpAddr) -> Result<(), ErrorBody> {
        if !self.connected(port, ip) {
            return Ok(());
        }
        let (vrf, host) = (self.vrf(port), host_prefix(ip));
        if self.routing.current().get(vrf, host).is_some() {
            return Ok(());
        }
        let id = self.auto_nh(Some(ip), port)?;
        self.routing
            .set(vrf, host, Target::NextHop(id), Origin::KERNEL)
            .map(|_| ())
            .map_err(|e| route_error(&e))
    }

    /// An old target's unnamed next hop or group may have lost its last
    /// user.
    fn retire(&mut self, old: Option<Target>) {
        match old {
            Some(Target::NextHop(id)) => self.gc.push(id),
            Some(Target::Group(id)) => self.gc_groups.push(id),
            _ => {}
        }
    }

    fn drop_neighbour_host_route(&mut self, port: u16, ip: IpAddr) -> Result<(), ErrorBody> {
        let (vrf, host) = (self.vrf(port), host_prefix(ip));
        if let Some(&id) = self.mgmt.auto_nh.get(&(Some(ip), port)) {
            // Only the derived route: the operator's `route add IP/32 via
            // IP` has the same target and stays.
            self.remove_derived(vrf, host, Target::NextHop(id))?;
        }
        Ok(())
    }

    fn change(&mut self, c: &Change) -> Result<(), ErrorBody> {
        match c {
            Change::RouteAdd(r) | Change::RouteReplace(r) => {
                if r.proto.as_deref().is_some_and(|p| p != "static") {
                    return Err(err(
                        ErrorKind::Invalid,
                        "only zebra (over FPM) installs routes of other protocols than static",
                    ));
                }
                let prefix = prefix_of(r.prefix)?;
                let target = self.target(&r.target, prefix)?;
                // Over an FPM route, an add is an override: zebra's waits
                // beneath (see the module doc).
                let over_fpm = self
                    .routing
                    .current()
                    .entry(r.table, prefix)
                    .is_some_and(|e| e.origin.fpm);
                let old = if matches!(c, Change::RouteAdd(_)) && !over_fpm {
                    self.routing.add(r.table, prefix, target).map(|()| None)
                } else {
                    self.routing.upsert(r.table, prefix, target)
                }
                .map_err(|e| route_error(&e))?;
                self.retire(old);
            }
            Change::RouteDel(d) => {
                let prefix = prefix_of(d.prefix)?;
                if let Some(e) = self.routing.current().entry(d.table, prefix) {
                    if e.origin.fpm {
                        return Err(err(
                            ErrorKind::Conflict,
                            format!(
                                "{} in table {} is zebra's (proto {}): withdraw it in FRR, \
                                 or override it with route replace",
                                d.prefix,
                                d.table,
                                route::proto_name(e.origin.proto)
                            ),
                        ));
                    }
                }
                if let Some(want) = &d.target {
                    let have = self.routing.current().get(d.table, prefix);
                    let want = self.resolve_existing(want, prefix);
                    if have.is_none() || have != want {
                        return Err(err(
                            ErrorKind::NotFound,
                            format!(
                                "no route {} with that target in table {}",
                                d.prefix, d.table
                            ),
                        ));
                    }
                }
                let old = self
                    .routing
                    .del(d.table, prefix)
                    .map_err(|e| route_error(&e))?;
                self.retire(Some(old));
            }
            Change::RouteFlush(f) => {
                let sel = RouteSelector::new(f)?;
                match sel.proto {
                    None => {}
                    Some(p) if p == Origin::STATIC.proto => {}
                    Some(p) if p == Origin::KERNEL.proto => {
                        return Err(err(
                            ErrorKind::Invalid,
                            "kernel routes follow addresses and neighbours: delete those instead",
                        ))
                    }
                    Some(p) => {
                        return Err(err(
                            ErrorKind::Conflict,
                            format!(
                                "{} routes are zebra's: withdraw them in FRR, or stop it",
                                route::proto_name(p)
                            ),
                        ))
                    }
                }
                let doomed: Vec<(u32, Prefix)> = sel
                    .routes(self.routing.current())
                    .filter(|&(_, _, e)| e.origin == Origin::STATIC)
                    .map(|(vrf, p, _)| (vrf, p))
                    .collect();
                for (vrf, p) in doomed {
                    let old = self.routing.del(vrf, p).map_err(|e| route_error(&e))?;
                    self.retire(Some(old));
                }
            }
            Change::NexthopAdd(_)
            | Change::NexthopReplace(_)
            | Change::NexthopDel { .. }
            | Change::GroupAdd(_)
            | Change::GroupReplace(_)
            | Change::GroupDel { .. } => self.nexthop_change(c)?,
            Change::NeighAdd(n) | Change::NeighReplace(n) => {
                let port = self.port(&n.dev)?;
                let max = self.mgmt.max_neighbours;
                if self.mgmt.neighbours.len() >= max
                    && !self.mgmt.neighbours.contains_key(&(port, n.addr))
                {
                    return Err(err(
                        ErrorKind::TooLarge,
                        format!("static neighbours full: {max} (the config's limits.neighbours)"),
                    ));
                }
                let prev = self.mgmt.neighbours.insert((port, n.addr), n.lladdr.0);
                self.mgmt.learned.remove(&(port, n.addr));
                if prev.is_some() && matches!(c, Change::NeighAdd(_)) {
                    return Err(err(
                        ErrorKind::Exists,
                        format!("neighbour {} on {} exists (use replace)", n.addr, n.dev),
                    ));
                }
                self.retarget_neighbour(port, n.addr, Some(n.lladdr.0))?;
                self.neighbour_host_route(port, n.addr)?;
            }
            Change::NeighDel { addr, dev } => {
                let port = self.port(dev)?;
                if self.mgmt.neighbours.remove(&(port, *addr)).is_none() {
                    return Err(err(
                        ErrorKind::NotFound,
                        format!("no neighbour {addr} on {dev}"),
                    ));
                }
                self.mgmt.learned.remove(&(port, *addr));
                self.retarget_neighbour(port, *addr, None)?;
                self.drop_neighbour_host_route(port, *addr)?;
            }
            Change::AddressAdd(_) | Change::AddressDel(_) => self.address_change(c)?,
            Change::PortSet { dev, up } => {
                let port = self.port(dev)?;
                self.ports_mut()[usize::from(port)].admin_up = *up;
            }
            Change::RuleAdd(r) | Change::RuleReplace(r) => {
                let id = match (r.id, c) {
                    (Some(id), _) => id,
                    (None, Change::RuleAdd(_)) => {
                        let id = match self.next_rule_id {
                            Some(id) => id,
                            None => self
                                .acl_ids()
                                .iter()
                                .max()
                                .map_or(1, |m| m.saturating_add(1)),
                        };
                        self.next_rule_id = Some(id.saturating_add(1));
                        self.rule_ids.push(id);
                        id
                    }
                    (None, _) => return Err(err(ErrorKind::Invalid, "rule replace needs an id")),
                };
                let rule = convert::rules::rule_from_wire(id, r, |name| self.port(name))?;
                let nhs = self.rule_nexthops(r)?;
                self.mgmt.rule_nexthops.set(id, nhs);
                let u = if matches!(c, Change::RuleAdd(_)) {
                    acl::Update::Insert(rule)
                } else {
                    acl::Update::Replace(rule)
                };
                self.acl.push((u, self.at));
            }
            Change::RuleDel { id } => {
                self.mgmt.rule_nexthops.remove(*id);
                self.acl.push((acl::Update::Delete(*id), self.at));
            }
            Change::RuleFlush {} => {
                // Everything before the flush in this batch is moot; every
                // rule of the current version goes.
                self.acl.clear();
                self.mgmt.rule_nexthops.clear();
                let at = self.at;
                let dels: Vec<_> = self
                    .acl_ids()
                    .iter()
                    .map(|&id| (acl::Update::Delete(id), at))
                    .collect();
                self.acl.extend(dels);
            }
        }
        Ok(())
    }

    /// The target an existing route would have for `t`, without creating
    /// anything (for `route del ... via ...`).
    fn resolve_existing(&self, t: &RouteTarget, prefix: Prefix) -> Option<Target> {
        let _ = prefix;
        Some(match t {
            RouteTarget::Gateway { via, dev } => {
                let port = self.gateway_port(*via, dev.as_deref()).ok()?;
                Target::NextHop(*self.mgmt.auto_nh.get(&(*via, port))?)
            }
            RouteTarget::Multipath(specs) => {
                let mut members = Vec::new();
                for (via, port, w) in self.spec_paths(specs).ok()? {
                    members.push((*self.mgmt.auto_nh.get(&(via, port))?, w));
                }
                members.sort_unstable();
                Target::Group(*self.mgmt.auto_group.get(&members)?)
            }
            RouteTarget::Nhid(id) => Target::NextHop(*id),
            RouteTarget::Group(id) => Target::Group(*id),
            RouteTarget::Blackhole => Target::Blackhole,
            RouteTarget::Reject => Target::Reject,
            RouteTarget::Local => Target::Local,
        })
    }

    /// Deletes unnamed groups, then unnamed next hops, nothing uses any
    /// more.
    fn collect_garbage(&mut self) -> Result<(), ErrorBody> {
        let mut groups = std::mem::take(&mut self.gc_groups);
        groups.sort_unstable();
        groups.dedup();
        for id in groups {
            if self.routing.current().group_refs(id) != 0 {
                continue;
            }
            if let Some(members) = self.mgmt.auto_group_by_id.remove(&id) {
                self.routing.group_del(id).map_err(|e| route_error(&e))?;
                self.gc.extend(members.iter().map(|m| m.0));
                self.mgmt.auto_group.remove(&members);
            }
        }
        let mut gc = std::mem::take(&mut self.gc);
        gc.sort_unstable();
        gc.dedup();
        for id in gc {
            if let Some(&key) = self.mgmt.auto_by_id.get(&id) {
                if self.routing.current().nexthop_refs(id) == 0 {
                    self.routing.nh_del(id).map_err(|e| route_error(&e))?;
                    self.mgmt.auto_nh.remove(&key);
                    self.mgmt.auto_by_id.remove(&id);
                }
            }
        }
        Ok(())
    }
}

/// Applies `changes` to `base` as one batch.
///
/// # Errors
/// The first failing change's error with its 1-based index; nothing is
/// applied (the classifier writer is untouched unless every other part
/// succeeded, and it is all-or-nothing itself).
pub fn apply(
    base: &Tables,
    acl_w: &mut acl::ClassifierWriter,
    changes: &[Change],
    beneath: Option<&FpmRib>,
) -> Result<Outcome, ErrorBody> {
    let mut e = Edit::new(base, acl_w, beneath);
    for (i, c) in changes.iter().enumerate() {
        e.at = i;
        if let Err(er) = e.change(c) {
            let grown = e
                .routing
                .current()
                .charged_bytes()
                .saturating_sub(base.routing.charged_bytes());
            drop(e);
            if grown >= super::heap::TRIM_AFTER_BYTES {
                super::heap::give_back();
            }
            return Err(er.at(i as u64 + 1));
        }
    }
    e.restore_beneath();
    e.collect_garbage()
        .map_err(|er| er.at(changes.len() as u64))?;
    e.routing.set_ports_down(down_ports(e.ports()));
    let routing_changed = !changes.iter().all(|c| {
        matches!(
            c,
            Change::RuleAdd(_)
                | Change::RuleReplace(_)
                | Change::RuleDel { .. }
                | Change::RuleFlush {}
        )
    });
    let routing = if routing_changed {
        e.routing.commit()
    } else {
        base.routing.clone()
    };
    let (acl_version, retired_slots) = if e.acl.is_empty() {
        (Arc::clone(&base.acl), Vec::new())
    } else {
        let (updates, origin): (Vec<acl::Update>, Vec<usize>) = e.acl.into_iter().unzip();
        let applied = acl_w.apply(&updates).map_err(|be| {
            let idx = origin.get(be.index).copied().unwrap_or(0);
            convert::rules::update_error(&be.error).at(idx as u64 + 1)
        })?;
        (applied.version, applied.retired_slots)
    };
    let tables = Tables::new(
        routing,
        acl_version,
        match e.ports {
            Some(p) => Arc::from(p),
            None => Arc::clone(&base.ports),
        },
        Arc::new(e.mgmt),
    );
    Ok(Outcome {
        tables,
        rule_ids: e.rule_ids,
        retired_slots,
        retired_bytes: changes.len() * 256,
    })
}

/// What `changes` (addresses and static neighbours) derive on their own:
/// the tables of `t`'s ports, without addresses, no route, no rule, after
/// `changes`. The saved state compares the running routes with these, so
/// that its replay, which derives them again, ends where `t` is.
///
/// # Errors
/// The first refused change (a change list that `t` itself was built
/// from is not refused).
pub fn derive(t: &Tables, changes: &[Change]) -> Result<Tables, ErrorBody> {
    let ports: Vec<PortInfo> = t
        .ports
        .iter()
        .map(|p| PortInfo {
            addresses: Vec::new(),
            ..p.clone()
        })
        .collect();
    let base = Tables::empty(ports, Arc::clone(&t.acl), t.limits());
    let mut e = Edit::with_rules(&base, None, None);
    for (i, c) in changes.iter().enumerate() {
        e.change(c).map_err(|er| er.at(i as u64 + 1))?;
    }
    e.collect_garbage()?;
    Ok(Tables::new(
        e.routing.commit(),
        Arc::clone(&base.acl),
        e.ports.map_or_else(|| Arc::clone(&base.ports), Arc::from),
        Arc::new(e.mgmt),
    ))
}

/// The ports that are not up (admin or carrier).
fn down_ports(ports: &[PortInfo]) -> std::collections::BTreeSet<u16> {
    ports
        .iter()
        .enumerate()
        .filter(|(_, p)| !p.is_up())
        .map(|(i, _)| i as u16)
        .collect()
}

/// The tables with port `port`'s carrier set to `up`: the port's next hops
/// leave (or rejoin) every ECMP group in the same version. `None` when
/// nothing changes.
pub fn apply_carrier(base: &Tables, port: usize, up: bool) -> Option<Tables> {
    if base.ports.get(port)?.carrier == up {
        return None;
    }
    let mut ports = base.ports.to_vec();
    ports[port].carrier = up;
    let mut routing = base.routing.txn();
    routing.set_ports_down(down_ports(&ports));
    Some(Tables::new(
        routing.commit(),
        Arc::clone(&base.acl),
        Arc::from(ports),
        Arc::clone(&base.mgmt),
    ))
}

/// Publishes what the neighbour table learned: each `(port, ip, mac)`
/// sets (`Some`) or withdraws (`None`) a learned MAC. Next hops through
/// that neighbour follow, and an attached neighbour gets (or loses) its
/// host route, exactly as for a static entry, which always wins.
///
/// # Errors
/// Only on an internal inconsistency (the update is then not published).
pub fn apply_learned(
    base: &Tables,
    acl_w: &acl::ClassifierWriter,
    updates: &[(u16, IpAddr, Option<[u8; 6]>)],
    beneath: Option<&FpmRib>,
) -> Result<Tables, ErrorBody> {
    let mut e = Edit::new(base, acl_w, beneath);
    for &(port, ip, mac) in updates {
        if usize::from(port) >= e.ports().len() || e.mgmt.neighbours.contains_key(&(port, ip)) {
            continue;
        }
        match mac {
            Some(m) => {
                e.mgmt.learned.insert((port, ip), m);
                e.retarget_neighbour(port, ip, Some(m))?;
                // At the routing limits the host route is left out: the
                // MAC is still learned for the next hops through it, and
                // the neighbour's traffic takes the connected route.
                match e.neighbour_host_route(port, ip) {
                    Err(er) if er.kind != ErrorKind::TooLarge => return Err(er),
                    _ => {}
                }
            }
            None => {
                if e.mgmt.learned.remove(&(port, ip)).is_some() {
                    e.retarget_neighbour(port, ip, None)?;
                    e.drop_neighbour_host_route(port, ip)?;
                }
            }
        }
    }
    e.restore_beneath();
    e.collect_garbage()?;
    Ok(Tables::new(
        e.routing.commit(),
        Arc::clone(&base.acl),
        Arc::clone(&base.ports),
        Arc::new(e.mgmt),
    ))
}

fn check_family(via: Option<IpAddr>, prefix: Prefix) -> Result<(), ErrorBody> {
    match via {
        Some(v) if v.is_ipv4() != matches!(prefix, Prefix::V4(_)) => Err(err(
            ErrorKind::Invalid,
            format!(
                "gateway {v} and prefix {} are of different families",
                net_of(prefix)
            ),
        )),
        _ => Ok(()),
    }
}

mod addresses;
pub mod fpm;
mod nexthops;

pub use fpm::{apply_fpm, FpmOp};
pub use nexthops::{is_user_id, AUTO_MIN_ID, USER_MAX_ID};
#[cfg(test)]
pub(crate) mod tests;
