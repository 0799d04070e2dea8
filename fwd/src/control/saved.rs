//! The running state as text: what `fwdctl config save` writes and
//! `control.load` reads back (the same change language `fwdctl` speaks, one
//! change per line).
//!
//! # Contract
//!
//! Replaying the text on the ports alone (no address, route or rule) gives
//! the running tables again: the same routes (prefix, table, target), named
//! next hops and groups, rules, static neighbours, addresses and port
//! states. Not saved: what the appliance learns (ARP/ND neighbours and their
//! host routes) and zebra's routes, which come back with zebra; unnamed
//! next-hop and group ids, which nothing saved names (they are written as
//! `via`/`nexthop via`).
//!
//! Routes: addresses and neighbours come first and derive their connected,
//! local and host routes on replay, so the routes section is the difference
//! between the running routes and those derived ones ([`state::derive`]):
//! the operator's routes (`route add`, or `route replace` where replay will
//! have derived a route at that prefix), and `route del` of a derived route
//! the running state no longer has.
//!
//! The text is framed so that a truncated copy is detected: a header
//! `# fwd running configuration, generation G, N changes` and a last line
//! `# end, N changes` (see `control::setup` for the checks).

use std::collections::BTreeSet;
use std::sync::Arc;

use ctl::wire::{self, Address, GroupMember, Neigh};

use super::route_to_wire;
use super::{convert, state};
use crate::acl;
use crate::route;
use crate::tables::Tables;

/// The first words of a saved state's first line.
pub const HEADER: &str = "# fwd running configuration";
/// The first words of its last line.
pub const TRAILER: &str = "# end,";

fn port_name(t: &Tables, p: u16) -> String {
    t.ports
        .get(usize::from(p))
        .map_or_else(|| format!("#{p}"), |x| x.name.clone())
}

/// The running tables as changes, in an order that replays: named next
/// hops, addresses, neighbours, groups, routes, rules. Named next hops come
/// first because addresses and neighbours allocate unnamed ones from the
/// same id space: replayed after them, a named id can be taken already;
/// groups come after addresses and neighbours because a group may name an
/// unnamed next hop they create.
pub fn running_changes(t: &Tables) -> Vec<wire::Change> {
    use wire::Change as C;
    let mut out = Vec::new();
    for (id, nh) in t.routing.nexthops() {
        if state::is_user_id(id) && !t.mgmt.auto_by_id.contains_key(&id) {
            out.push(C::NexthopAdd(wire::Nexthop {
                id,
                via: nh.gateway,
                dev: port_name(t, nh.port),
            }));
        }
    }
    for p in t.ports.iter() {
        for a in &p.addresses {
            out.push(C::AddressAdd(Address {
                addr: convert::net_of_ifaddr(*a),
                dev: p.name.clone(),
            }));
        }
    }
    for (&(p, addr), &mac) in &t.mgmt.neighbours {
        out.push(C::NeighAdd(Neigh {
            addr,
            lladdr: wire::Mac(mac),
            dev: port_name(t, p),
        }));
    }
    // What replaying the addresses and neighbours derives (see the module
    // doc). It cannot fail on changes `t` holds; if it did, the routes
    // are written as if nothing were derived.
    let derived = state::derive(t, &out).ok();
    for (id, g) in t.routing.groups() {
        if !state::is_user_id(id) || t.mgmt.auto_group_by_id.contains_key(&id) {
            continue;
        }
        out.push(C::GroupAdd(wire::Group {
            id,
            members: g
                .members()
                .iter()
                .map(|&(id, weight)| GroupMember { id, weight })
                .collect(),
        }));
    }
    let mut vrfs: BTreeSet<u32> = t.routing.vrfs().collect();
    vrfs.extend(derived.iter().flat_map(|d| d.routing.vrfs()));
    for vrf in vrfs {
        let derived_at = |p| derived.as_ref().and_then(|d| d.routing.entry(vrf, p));
        for (p, e) in t.routing.entries(vrf) {
            // The routes the daemon derives come back with their addresses
            // and neighbours; zebra's come back when it reconnects.
            if e.origin != route::Origin::STATIC {
                continue;
            }
            let mut r = route_to_wire(t, vrf, p, e);
            r.proto = None;
            out.push(match derived_at(p) {
                Some(_) => C::RouteReplace(r),
                None => C::RouteAdd(r),
            });
        }
        for (p, _) in derived.iter().flat_map(|d| d.routing.entries(vrf)) {
            if t.routing.entry(vrf, p).is_none_or(|e| e.origin.fpm) {
                out.push(C::RouteDel(wire::RouteDel {
                    prefix: convert::net_of(p),
                    table: vrf,
                    target: None,
                }));
            }
        }
    }
    let mut rules: Vec<&Arc<acl::RuleEntry>> = t.acl.entries().collect();
    rules.sort_by_key(|e| e.rule().order());
    for e in rules {
        out.push(C::RuleAdd(Box::new(super::rule_to_wire(t, e.rule()))));
    }
    for p in t.ports.iter().filter(|p| !p.admin_up) {
        out.push(C::PortSet {
            dev: p.name.clone(),
            up: false,
        });
    }
    out
}

/// The saved-state text of `t` at `generation`: a header line, one change
/// per line, and a trailer line with the count (see the module doc).
pub fn running_text(t: &Tables, generation: u64) -> (String, usize) {
    let changes = running_changes(t);
    let n = changes.len();
    let mut text = format!("{HEADER}, generation {generation}, {n} changes\n");
    for c in &changes {
        text.push_str(&c.to_string());
        text.push('\n');
    }
    text.push_str(&format!("{TRAILER} {n} changes\n"));
    (text, n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::PortInfo;

    /// Applies `text` to empty tables with ports p0 and p1, saves, replays
    /// the saved text on fresh tables, and saves again: the same text.
    fn replays(text: &str) {
        let tables = || {
            let acl_w = acl::ClassifierWriter::new(acl::Config {
                capacity: 1024,
                ..acl::Config::default()
            });
            let ports = vec![
                PortInfo::new("p0", [2, 0, 0, 0, 0, 1], 0),
                PortInfo::new("p1", [2, 0, 0, 0, 0, 2], 0),
            ];
            (
                Tables::empty(
                    ports,
                    acl_w.current().clone(),
                    crate::tables::Limits::default(),
                ),
                acl_w,
            )
        };
        let batch = ctl::text::parse_batch(text).unwrap();
        let (base, mut acl_w) = tables();
        let out = super::super::apply_changes(&base, &mut acl_w, &batch.changes, None).unwrap();
        let (saved, n) = running_text(&out.tables, 1);
        let again = ctl::text::parse_batch(&saved).unwrap();
        assert_eq!(again.changes.len(), n);
        let (base, mut acl_w) = tables();
        let replayed = super::super::apply_changes(&base, &mut acl_w, &again.changes, None)
            .unwrap_or_else(|e| panic!("{e}\n{saved}"));
        assert_eq!(running_text(&replayed.tables, 1).0, saved);
    }

    /// Found by the saved_load fuzz target: a named next hop added before an
    /// address was saved after it, and the address's unnamed next hop took
    /// its id on replay, so the daemon refused its own saved state.
    #[test]
    fn fuzz_regression_saved_state_replays_named_next_hops_first() {
        replays(
            "address add 10.0.0.1/24 dev p0\n\
                    nexthop add 2 via 2001:db8:: dev p1\n\
                    address add 10.1.0.1/24 dev p1\n",
        );
    }

    /// Found by the saved_load fuzz target after the fix above: a group of
    /// the unnamed next hop an address creates was saved before the
    /// address. Unnamed ids are now the appliance's own: such a group is
    /// refused, so no saved state can hold one.
    #[test]
    fn fuzz_regression_saved_state_replays_groups_after_addresses() {
        replays("address add 10.0.0.1/24 dev p0\nnexthop add 3 dev p0\ngroup add 10 members 3:1\n");
        let acl_w = || {
            acl::ClassifierWriter::new(acl::Config {
                capacity: 16,
                ..acl::Config::default()
            })
        };
        let mut w = acl_w();
        let base = Tables::empty(
            vec![PortInfo::new("p0", [2, 0, 0, 0, 0, 1], 0)],
            w.current().clone(),
            crate::tables::Limits::default(),
        );
        let text = "address add 10.0.0.1/24 dev p0\n";
        let t = super::super::apply_changes(
            &base,
            &mut w,
            &ctl::text::parse_batch(text).unwrap().changes,
            None,
        )
        .unwrap()
        .tables;
        let unnamed = *t
            .mgmt
            .auto_by_id
            .keys()
            .next()
            .expect("the connected next hop");
        let group = format!("group add 10 members {unnamed}:1\n");
        let e = super::super::apply_changes(
            &t,
            &mut w,
            &ctl::text::parse_batch(&group).unwrap().changes,
            None,
        )
        .err()
        .expect("a group naming an unnamed next hop is refused");
        assert_eq!(e.kind, wire::ErrorKind::Invalid, "{e}");
    }
}
