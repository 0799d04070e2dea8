//! The running state as text: what `fwdctl config save` writes and
//! `control.load` reads back (the same change language `fwdctl` speaks, one
//! change per line).

use std::collections::BTreeSet;
use std::sync::Arc;

use ctl::wire::{self, Address, GroupMember, Neigh};

use super::route_to_wire;
use crate::acl;
use crate::route;
use crate::tables::Tables;

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
    for (id, nh) in t.routing.nexthops() {
        if !t.mgmt.auto_by_id.contains_key(&id) {
            out.push(C::NexthopAdd(wire::Nexthop {
                id,
                via: nh.gateway,
                dev: port_name(t, nh.port),
            }));
        }
    }
    for (id, g) in t.routing.groups() {
        if t.mgmt.auto_group_by_id.contains_key(&id) {
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
    let vrfs: BTreeSet<u32> = t.routing.vrfs().collect();
    for vrf in vrfs {
        for (p, e) in t.routing.entries(vrf) {
            // Routes the daemon derives from addresses and neighbours come
            // back with them; zebra's come back when it reconnects.
            if e.origin != route::Origin::STATIC {
                continue;
            }
            let mut r = route_to_wire(t, vrf, p, e);
            r.proto = None;
            out.push(C::RouteAdd(r));
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

/// The saved-state text of `t` at `generation`: a header line, then one
/// change per line.
pub fn running_text(t: &Tables, generation: u64) -> (String, usize) {
    let changes = running_changes(t);
    let mut text = format!("# fwd running configuration, generation {generation}\n");
    for c in &changes {
        text.push_str(&c.to_string());
        text.push('\n');
    }
    (text, changes.len())
}
