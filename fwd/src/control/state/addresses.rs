//! Interface addresses and the routes they derive: a connected route (the
//! port's on-link next hop) for the subnet and a local route for the
//! address itself, in the port's table.
//!
//! A table has one route per prefix, so, unlike Linux (which keeps a
//! connected route per interface), two ports of one table may not hold
//! overlapping subnets (the same network, or one containing the other):
//! such an `address add` is refused with `conflict` naming the other port.
//! The same subnet in different tables is fine.
//!
//! The operator's own route at a derived prefix (`route add|replace` of
//! the subnet or the address's /32) wins: the address is added and the
//! route kept; the derived one is not installed. zebra's routes give way
//! as everywhere (kept beneath, back when the derived route goes).
//! Deleting an address removes only the routes it derived and that are
//! still installed as derived, and the connected route only when no other
//! address of the port is in the same subnet.

use std::net::IpAddr;

use ctl::wire::{Change, ErrorBody, ErrorKind, IpNet};

use super::{err, host_prefix, ifaddr_of, prefix_of, route_error, Edit};
use crate::route::{Origin, Prefix, Target, Vrf};
use crate::tables::IfAddr;

/// Whether two subnets share addresses (one contains the other).
fn overlaps(a: IfAddr, b: IfAddr) -> bool {
    a.contains(b.addr()) || b.contains(a.addr())
}

impl Edit<'_> {
    /// Whether a derived route may be installed at `prefix`: not over the
    /// operator's own route there.
    fn derived_may_go(&self, vrf: Vrf, prefix: Prefix) -> bool {
        self.routing
            .current()
            .entry(vrf, prefix)
            .is_none_or(|e| e.origin.fpm || e.origin == Origin::KERNEL)
    }

    fn install_derived(&mut self, vrf: Vrf, prefix: Prefix, t: Target) -> Result<(), ErrorBody> {
        let old = self
            .routing
            .set(vrf, prefix, t, Origin::KERNEL)
            .map_err(|e| route_error(&e))?;
        self.retire(old.map(|e| e.target));
        Ok(())
    }

    /// Deletes the route at `prefix` if it is the derived `t`.
    pub(super) fn remove_derived(
        &mut self,
        vrf: Vrf,
        prefix: Prefix,
        t: Target,
    ) -> Result<bool, ErrorBody> {
        let ours = self
            .routing
            .current()
            .entry(vrf, prefix)
            .is_some_and(|e| e.origin == Origin::KERNEL && e.target == t);
        if ours {
            let old = self.routing.del(vrf, prefix).map_err(|e| route_error(&e))?;
            self.retire(Some(old));
        }
        Ok(ours)
    }

    /// Refuses an address already held in the port's table, or a subnet
    /// overlapping another port's there.
    fn check_address(&self, port: u16, a: IpNet) -> Result<(), ErrorBody> {
        let vrf = self.vrf(port);
        for (i, p) in self.ports().iter().enumerate() {
            if p.vrf != vrf {
                continue;
            }
            for &x in &p.addresses {
                if i == usize::from(port) {
                    if x.addr() == a.addr() {
                        return Err(err(
                            ErrorKind::Exists,
                            format!("{} already has {}", p.name, a.addr()),
                        ));
                    }
                } else if x.addr() == a.addr() || overlaps(x, ifaddr_of(a)) {
                    return Err(err(
                        ErrorKind::Conflict,
                        format!(
                            "{a} overlaps {x} of port {} in table {vrf} (a table has one \
                             connected route per subnet)",
                            p.name
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// `address add|del`.
    pub(super) fn address_change(&mut self, c: &Change) -> Result<(), ErrorBody> {
        match c {
            Change::AddressAdd(a) => {
                let port = self.port(&a.dev)?;
                let max = self.mgmt.max_addresses;
                if self.ports()[usize::from(port)].addresses.len() >= max {
                    return Err(err(
                        ErrorKind::TooLarge,
                        format!(
                            "{} has {max} addresses (the config's limits.addresses)",
                            a.dev
                        ),
                    ));
                }
                self.check_address(port, a.addr)?;
                self.ports_mut()[usize::from(port)]
                    .addresses
                    .push(ifaddr_of(a.addr));
                let net = prefix_of(a.addr.network())?;
                let host = host_prefix(a.addr.addr());
                let vrf = self.vrf(port);
                if net != host && self.derived_may_go(vrf, net) {
                    let id = self.auto_nh(None, port)?;
                    self.install_derived(vrf, net, Target::NextHop(id))?;
                }
                if self.derived_may_go(vrf, host) {
                    self.install_derived(vrf, host, Target::Local)?;
                }
                let attached: Vec<IpAddr> = self
                    .mgmt
                    .neighbours
                    .keys()
                    .chain(self.mgmt.learned.keys())
                    .filter(|(p, ip)| *p == port && a.addr.contains(*ip))
                    .map(|&(_, ip)| ip)
                    .collect();
                for ip in attached {
                    self.neighbour_host_route(port, ip)?;
                }
            }
            Change::AddressDel(a) => {
                let port = self.port(&a.dev)?;
                if !self.ports()[usize::from(port)]
                    .addresses
                    .contains(&ifaddr_of(a.addr))
                {
                    return Err(err(
                        ErrorKind::NotFound,
                        format!("{} has no address {}", a.dev, a.addr),
                    ));
                }
                let pi = &mut self.ports_mut()[usize::from(port)];
                pi.addresses.retain(|x| *x != ifaddr_of(a.addr));
                let subnet = ifaddr_of(a.addr).subnet();
                let same_subnet = pi.addresses.iter().any(|x| x.subnet() == subnet);
                let attached: Vec<IpAddr> = self
                    .mgmt
                    .neighbours
                    .keys()
                    .chain(self.mgmt.learned.keys())
                    .filter(|(p, ip)| {
                        *p == port && a.addr.contains(*ip) && !self.connected(port, *ip)
                    })
                    .map(|&(_, ip)| ip)
                    .collect();
                for ip in attached {
                    self.drop_neighbour_host_route(port, ip)?;
                }
                let net = prefix_of(a.addr.network())?;
                let host = host_prefix(a.addr.addr());
                let vrf = self.vrf(port);
                if net != host && !same_subnet {
                    if let Some(&conn) = self.mgmt.auto_nh.get(&(None, port)) {
                        self.remove_derived(vrf, net, Target::NextHop(conn))?;
                    }
                }
                self.remove_derived(vrf, host, Target::Local)?;
            }
            _ => unreachable!("not an address change"),
        }
        Ok(())
    }
}
