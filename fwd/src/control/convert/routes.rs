//! Routes and their targets as the operator sees them (the wire), for dumps,
//! `config save`, and the selection of `route show` and `route flush`.

use ctl::wire::{self, ErrorBody, ErrorKind, IpNet, RouteTarget};

use super::net_of;
use crate::route::{self, Prefix, Routing, Target, Vrf};
use crate::tables::Tables;

/// The routes a `route show` or `route flush` selects, with the protocol
/// name resolved.
pub struct RouteSelector {
    table: Option<u32>,
    family: Option<wire::Family>,
    within: Option<IpNet>,
    /// Protocol number (`rtm_protocol`).
    pub proto: Option<u8>,
}

impl RouteSelector {
    pub fn new(f: &wire::RouteFilter) -> Result<RouteSelector, ErrorBody> {
        let proto = match f.proto.as_deref() {
            None => None,
            Some(n) => Some(route::proto_from_name(n).ok_or_else(|| {
                ErrorBody::new(
                    ErrorKind::Invalid,
                    format!("unknown protocol {n:?} (bgp, ospf, static, kernel, ...)"),
                )
            })?),
        };
        Ok(RouteSelector {
            table: f.table,
            family: f.family,
            within: f.within,
            proto,
        })
    }

    /// Every selected route of `r`: by table, then family, then prefix.
    pub fn routes<'r>(
        &'r self,
        r: &'r Routing,
    ) -> impl Iterator<Item = (Vrf, Prefix, route::Entry)> + 'r {
        let mut vrfs: Vec<Vrf> = r
            .vrfs()
            .filter(|&v| self.table.is_none_or(|t| t == v))
            .collect();
        vrfs.sort_unstable();
        vrfs.into_iter().flat_map(move |vrf| {
            r.entries(vrf)
                .filter(move |&(p, e)| self.selects(p, e))
                .map(move |(p, e)| (vrf, p, e))
        })
    }

    fn selects(&self, p: Prefix, e: route::Entry) -> bool {
        match self.family {
            Some(wire::Family::Ipv4) if !p.is_v4() => return false,
            Some(wire::Family::Ipv6) if p.is_v4() => return false,
            _ => {}
        }
        self.proto.is_none_or(|x| x == e.origin.proto)
            && self.within.is_none_or(|n| n.covers(net_of(p)))
    }
}

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
