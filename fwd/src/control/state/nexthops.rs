//! Next hops and ECMP groups: the operator's (named, `nexthop add N`) and
//! the appliance's own (unnamed, created for `via`, connected routes,
//! multipath routes and zebra's routes).
//!
//! # Id space
//!
//! Next hops and groups share one id space, split in two so that neither
//! kind can take the other's ids: the operator's are `1..=USER_MAX_ID`
//! (`nexthop add`, `group add`, `nhid N`, `nexthop-group N`, `action
//! nexthop N`), the unnamed ones are allocated from `AUTO_MIN_ID` up to
//! [`route::MAX_ID`]. An id of the operator's range is therefore free until
//! the operator takes it, whatever routes were added, and unnamed ids, which
//! a restart renumbers, are never named anywhere an operator (or a saved
//! state) could write them: routes through them are shown and saved as
//! `via GW dev PORT` or `nexthop via ...`, and naming one is refused.
//!
//! # Families
//!
//! A next hop with a gateway has that gateway's family; an on-link one
//! (`dev PORT` alone) serves both. A group's members must agree, and a
//! route through a named next hop or group must be of their family, as for
//! `via`.

use std::net::IpAddr;

use ctl::wire::{self, Change, ErrorBody, ErrorKind};

use super::{check_family, err, net_of, route_error, Edit};
use crate::route::{self, GroupId, NextHop, NhId, Prefix, Target};

/// Largest id an operator may give a next hop or a group.
pub const USER_MAX_ID: u32 = (1 << 23) - 1;
/// First id of the unnamed next hops and groups.
pub const AUTO_MIN_ID: u32 = USER_MAX_ID + 1;

const _: () = assert!(AUTO_MIN_ID < route::MAX_ID);
// The routing tables store the ids from `HIGH_IDS` up apart, so that both
// ranges stay small arrays (see `route::HIGH_IDS`).
const _: () = assert!(AUTO_MIN_ID == route::HIGH_IDS);

/// Whether `id` is the operator's to name.
pub fn is_user_id(id: u32) -> bool {
    (1..=USER_MAX_ID).contains(&id)
}

fn check_user_id(id: u32, what: &str) -> Result<(), ErrorBody> {
    if is_user_id(id) {
        Ok(())
    } else {
        Err(err(
            ErrorKind::Invalid,
            format!(
                "{what} id {id} out of range: ids 1 to {USER_MAX_ID} are the operator's, \
                 those above are the appliance's unnamed next hops and groups"
            ),
        ))
    }
}

/// The family of a next hop: `Some(true)` IPv4, `Some(false)` IPv6, `None`
/// on-link (either).
fn family(nh: &NextHop) -> Option<bool> {
    nh.gateway.map(|g| g.is_ipv4())
}

fn family_name(v4: bool) -> &'static str {
    if v4 {
        "IPv4"
    } else {
        "IPv6"
    }
}

impl Edit<'_> {
    /// A free id of the unnamed range (next hops and groups share it).
    pub(super) fn alloc_nh(&mut self) -> Result<NhId, ErrorBody> {
        let taken = |e: &Self, id| {
            e.routing.current().nexthop(id).is_some() || e.routing.current().group(id).is_some()
        };
        let mut wrapped = false;
        loop {
            if self.next_nh > route::MAX_ID {
                if wrapped {
                    return Err(err(ErrorKind::TooLarge, "unnamed next-hop ids exhausted"));
                }
                wrapped = true;
                self.next_nh = AUTO_MIN_ID;
            }
            if !taken(self, self.next_nh) {
                break;
            }
            self.next_nh += 1;
        }
        let id = self.next_nh;
        self.next_nh += 1;
        Ok(id)
    }

    /// The unnamed next hop for (gateway, port), created if needed.
    pub(super) fn auto_nh(
        &mut self,
        gateway: Option<IpAddr>,
        port: u16,
    ) -> Result<NhId, ErrorBody> {
        if let Some(&id) = self.mgmt.auto_nh.get(&(gateway, port)) {
            return Ok(id);
        }
        let id = self.alloc_nh()?;
        let mac = gateway.and_then(|g| self.mgmt.mac_of(port, g));
        self.routing
            .nh_add(id, NextHop { gateway, port, mac })
            .map_err(|e| route_error(&e))?;
        self.mgmt.auto_nh.insert((gateway, port), id);
        self.mgmt.auto_by_id.insert(id, (gateway, port));
        self.gc.push(id);
        Ok(id)
    }

    /// The unnamed group of `members` (sorted, distinct next hops), created
    /// if needed.
    pub(super) fn auto_group(&mut self, members: Vec<(NhId, u32)>) -> Result<GroupId, ErrorBody> {
        if let Some(&id) = self.mgmt.auto_group.get(&members) {
            return Ok(id);
        }
        let id = self.alloc_nh()?;
        self.routing
            .group_add(id, &members)
            .map_err(|e| route_error(&e))?;
        self.mgmt.auto_group_by_id.insert(id, members.clone());
        self.mgmt.auto_group.insert(members, id);
        self.gc_groups.push(id);
        Ok(id)
    }

    /// The operator's next hop `id` (for `nhid`, group members and rules).
    fn named_nexthop(&self, id: NhId) -> Result<&NextHop, ErrorBody> {
        if self.mgmt.auto_by_id.contains_key(&id) || !is_user_id(id) {
            return Err(err(
                ErrorKind::Invalid,
                format!(
                    "next hop {id} is not one of the operator's (ids 1 to {USER_MAX_ID}); \
                     name a gateway with via GW dev PORT"
                ),
            ));
        }
        if self.routing.current().group(id).is_some() {
            return Err(err(
                ErrorKind::Invalid,
                format!("{id} is an ECMP group, not a next hop"),
            ));
        }
        self.routing
            .current()
            .nexthop(id)
            .ok_or_else(|| err(ErrorKind::NotFound, format!("no next hop {id}")))
    }

    /// The family the members of group `members` agree on (`None`: all
    /// on-link).
    fn members_family(
        &self,
        group: GroupId,
        members: &[(NhId, u32)],
    ) -> Result<Option<bool>, ErrorBody> {
        let mut fam: Option<(bool, NhId)> = None;
        for &(id, _) in members {
            let Some(f) = self.routing.current().nexthop(id).and_then(family) else {
                continue;
            };
            match fam {
                Some((g, first)) if g != f => {
                    return Err(err(
                        ErrorKind::Invalid,
                        format!(
                            "group {group}: members {first} ({}) and {id} ({}) are of \
                             different families",
                            family_name(g),
                            family_name(f)
                        ),
                    ))
                }
                Some(_) => {}
                None => fam = Some((f, id)),
            }
        }
        Ok(fam.map(|(f, _)| f))
    }

    fn check_route_family(
        &self,
        fam: Option<bool>,
        what: String,
        prefix: Prefix,
    ) -> Result<(), ErrorBody> {
        match fam {
            Some(v4) if v4 != matches!(prefix, Prefix::V4(_)) => Err(err(
                ErrorKind::Invalid,
                format!(
                    "{what} is {} and route {} is not",
                    family_name(v4),
                    net_of(prefix)
                ),
            )),
            _ => Ok(()),
        }
    }

    /// The target of `nhid N` for a route to `prefix`.
    pub(super) fn nhid_target(&self, id: NhId, prefix: Prefix) -> Result<route::Target, ErrorBody> {
        let nh = self.named_nexthop(id)?;
        if let Some(g) = nh.gateway {
            check_family(Some(g), prefix)?;
        }
        Ok(route::Target::NextHop(id))
    }

    /// The target of `nexthop-group N` for a route to `prefix`.
    pub(super) fn group_target(
        &self,
        id: GroupId,
        prefix: Prefix,
    ) -> Result<route::Target, ErrorBody> {
        if self.mgmt.auto_group_by_id.contains_key(&id) || !is_user_id(id) {
            return Err(err(
                ErrorKind::Invalid,
                format!(
                    "group {id} is not one of the operator's (ids 1 to {USER_MAX_ID}); \
                     name the paths with nexthop via ..."
                ),
            ));
        }
        let g = self
            .routing
            .current()
            .group(id)
            .ok_or_else(|| err(ErrorKind::NotFound, format!("no ECMP group {id}")))?;
        let fam = self.members_family(id, g.members())?;
        self.check_route_family(fam, format!("group {id}"), prefix)?;
        Ok(route::Target::Group(id))
    }

    /// The next hops a rule steers to, each one of the operator's.
    pub(super) fn rule_nexthops(&self, r: &wire::Rule) -> Result<Vec<NhId>, ErrorBody> {
        let mut out = Vec::new();
        for a in &r.actions {
            if let wire::Action::Nexthop(id) = a {
                self.named_nexthop(*id)
                    .map_err(|e| err(e.kind, format!("action nexthop {id}: {}", e.message)))?;
                out.push(*id);
            }
        }
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }

    /// `nexthop add|replace|del`, `group add|replace|del`.
    pub(super) fn nexthop_change(&mut self, c: &Change) -> Result<(), ErrorBody> {
        match c {
            Change::NexthopAdd(n) | Change::NexthopReplace(n) => {
                check_user_id(n.id, "next-hop")?;
                let port = self.port(&n.dev)?;
                let mac = n.via.and_then(|g| self.mgmt.mac_of(port, g));
                let nh = NextHop {
                    gateway: n.via,
                    port,
                    mac,
                };
                if self.routing.current().group(n.id).is_some() {
                    return Err(err(
                        ErrorKind::Exists,
                        format!("id {} is an ECMP group", n.id),
                    ));
                }
                if matches!(c, Change::NexthopAdd(_)) {
                    self.routing.nh_add(n.id, nh)
                } else {
                    self.check_replace_family(n.id, &nh)?;
                    self.routing.nh_update(n.id, nh).map(|_| ())
                }
                .map_err(|e| route_error(&e))?;
            }
            Change::NexthopDel { id } => {
                if self.mgmt.auto_by_id.contains_key(id) {
                    return Err(err(
                        ErrorKind::Conflict,
                        format!("next hop {id} is unnamed: it goes away with its last route"),
                    ));
                }
                let rules: Vec<String> = self
                    .mgmt
                    .rule_nexthops
                    .users(*id)
                    .map(|r| r.to_string())
                    .collect();
                if !rules.is_empty() {
                    return Err(err(
                        ErrorKind::Conflict,
                        format!(
                            "next hop {id} is used by rule {} (action nexthop {id})",
                            rules.join(", ")
                        ),
                    ));
                }
                self.routing.nh_del(*id).map_err(|e| route_error(&e))?;
            }
            Change::GroupAdd(g) | Change::GroupReplace(g) => {
                check_user_id(g.id, "group")?;
                let members: Vec<(NhId, u32)> =
                    g.members.iter().map(|m| (m.id, m.weight)).collect();
                for &(id, _) in &members {
                    self.named_nexthop(id)
                        .map_err(|e| err(e.kind, format!("group {}: {}", g.id, e.message)))?;
                }
                let fam = self.members_family(g.id, &members)?;
                if matches!(c, Change::GroupAdd(_)) {
                    if self.routing.current().nexthop(g.id).is_some() {
                        return Err(err(ErrorKind::Exists, format!("id {} is a next hop", g.id)));
                    }
                    self.routing.group_add(g.id, &members)
                } else {
                    if let Some(old) = self.routing.current().group(g.id) {
                        let was = self.members_family(g.id, old.members())?;
                        if self.routing.current().group_refs(g.id) != 0
                            && was.is_some()
                            && fam != was
                        {
                            return Err(err(
                                ErrorKind::Invalid,
                                format!(
                                    "group {} is used by {} routes of its family: its members \
                                     must stay {}",
                                    g.id,
                                    self.routing.current().group_refs(g.id),
                                    family_name(was == Some(true))
                                ),
                            ));
                        }
                    }
                    self.routing.group_update(g.id, &members)
                }
                .map_err(|e| route_error(&e))?;
            }
            Change::GroupDel { id } => {
                if self.mgmt.auto_group_by_id.contains_key(id) {
                    return Err(err(
                        ErrorKind::Conflict,
                        format!("group {id} is unnamed: it goes away with its last route"),
                    ));
                }
                self.routing.group_del(*id).map_err(|e| route_error(&e))?;
            }
            _ => unreachable!("not a next-hop change"),
        }
        Ok(())
    }

    /// A next hop in use keeps its family (its routes and groups are of it).
    fn check_replace_family(&self, id: NhId, new: &NextHop) -> Result<(), ErrorBody> {
        let cur = self.routing.current();
        let Some(old) = cur.nexthop(id) else {
            return Ok(());
        };
        let (Some(now), true) = (family(new), cur.nexthop_refs(id) != 0) else {
            return Ok(());
        };
        // The family its users have: the old gateway's, or, for an on-link
        // next hop (no family of its own), that of the other members of
        // its groups, or of the routes that use it directly or through a
        // group (scans, on this rare path only).
        let users = match family(old) {
            Some(was) => Some(was),
            None if self.in_group_of(id, !now) => Some(!now),
            None if self.used_by_routes_of(id, !now) => Some(!now),
            None => None,
        };
        match users {
            Some(was) if was != now => Err(err(
                ErrorKind::Invalid,
                format!(
                    "next hop {id} is used by {} routes or groups of {}: its gateway must stay \
                     of that family",
                    cur.nexthop_refs(id),
                    family_name(was)
                ),
            )),
            _ => Ok(()),
        }
    }

    /// Whether next hop `id` is a member of a group with another member
    /// of the family (`v4`): a group's members agree on one.
    fn in_group_of(&self, id: NhId, v4: bool) -> bool {
        let cur = self.routing.current();
        self.groups_with(id)
            .flat_map(|(_, g)| g.members())
            .filter_map(|&(m, _)| cur.nexthop(m).and_then(family))
            .any(|f| f == v4)
    }

    /// The groups next hop `id` is a member of.
    fn groups_with(&self, id: NhId) -> impl Iterator<Item = (GroupId, &route::Group)> + '_ {
        let cur = self.routing.current();
        cur.groups()
            .filter(move |(_, g)| g.members().iter().any(|&(m, _)| m == id))
    }

    /// Whether a route of the family (`v4`) sends to next hop `id`, itself
    /// or as a member of a group.
    fn used_by_routes_of(&self, id: NhId, v4: bool) -> bool {
        let cur = self.routing.current();
        let groups: Vec<GroupId> = self.groups_with(id).map(|(g, _)| g).collect();
        let hits = |t: Target| match t {
            Target::NextHop(n) => n == id,
            Target::Group(g) => groups.contains(&g),
            _ => false,
        };
        cur.vrfs().any(|vrf| {
            if v4 {
                cur.entries4(vrf).any(|(_, e)| hits(e.target))
            } else {
                cur.entries6(vrf).any(|(_, e)| hits(e.target))
            }
        })
    }
}
