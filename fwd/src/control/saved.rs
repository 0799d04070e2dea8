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
use super::state;
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

/// The running tables as changes, in an order that replays: addresses,
/// neighbours, named next hops, groups, routes, rules.
pub fn running_changes(t: &Tables) -> Vec<wire::Change> {
    use wire::Change as C;
    let mut out = Vec::new();
    for p in t.ports.iter() {
        for a in &p.addresses {
            out.push(C::AddressAdd(Address {
                addr: *a,
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
    for (id, nh) in t.routing.nexthops() {
        if state::is_user_id(id) && !t.mgmt.auto_by_id.contains_key(&id) {
            out.push(C::NexthopAdd(wire::Nexthop {
                id,
                via: nh.gateway,
                dev: port_name(t, nh.port),
            }));
        }
    }
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
                    prefix: state::net_of(p),
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
