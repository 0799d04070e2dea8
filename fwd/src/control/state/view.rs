//! The operator's view of routes and targets, for dumps and `config save`.

use ctl::wire::{self, RouteTarget};

use super::net_of;
use crate::route::{self, Prefix, Target};
use crate::tables::Tables;

/// The wire view of a routing target, for dumps.
pub fn target_to_wire(t: &Tables, target: Target) -> RouteTarget {
    match target {
        Target::NextHop(id) => match t.mgmt.auto_by_id.get(&id) {
            Some((via, port)) => RouteTarget::Gateway {
                via: *via,
                dev: t.ports.get(usize::from(*port)).map(|p| p.name.clone()),
            },
            None => RouteTarget::Nhid(id),
        },
        Target::Group(id) => match t.mgmt.auto_group_by_id.get(&id) {
            Some(members) => RouteTarget::Multipath(
                members
                    .iter()
                    .map(|&(nh, weight)| {
                        let (via, port) = t.mgmt.auto_by_id.get(&nh).copied().unwrap_or_default();
                        wire::NextHopSpec {
                            via,
                            dev: t.ports.get(usize::from(port)).map(|p| p.name.clone()),
                            weight,
                        }
                    })
                    .collect(),
            ),
            None => RouteTarget::Group(id),
        },
        Target::Blackhole => RouteTarget::Blackhole,
        Target::Reject => RouteTarget::Reject,
        Target::Local => RouteTarget::Local,
    }
}

/// One wire route.
pub fn route_to_wire(t: &Tables, table: u32, p: Prefix, e: route::Entry) -> wire::Route {
    let target = e.target;
    wire::Route {
        proto: Some(route::proto_name(e.origin.proto).into()),
        linkdown: t.routing.linkdown(target),
        prefix: net_of(p),
        table,
        target: target_to_wire(t, target),
    }
}
