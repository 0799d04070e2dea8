//! Conversions between the wire (`ctl::wire`) and the tables: prefixes and
//! addresses here, rules in [`rules`], routes and their targets in
//! [`routes`]. Pure functions of a version of the tables; what a change
//! *does* is `control::state`'s.

use std::net::IpAddr;

use ctl::wire::{ErrorBody, ErrorKind, IpNet};

use crate::route::{Prefix, Prefix4, Prefix6};
use crate::tables::IfAddr;

pub mod routes;
pub mod rules;

fn err(kind: ErrorKind, msg: impl Into<String>) -> ErrorBody {
    ErrorBody::new(kind, msg)
}

/// The routing prefix of a wire prefix; host bits must be clear.
pub fn prefix_of(net: IpNet) -> Result<Prefix, ErrorBody> {
    if !net.is_network() {
        return Err(err(
            ErrorKind::Invalid,
            format!("{net} has host bits set (did you mean {}?)", net.network()),
        ));
    }
    let p = match net.addr() {
        IpAddr::V4(a) => Prefix4::new(u32::from(a), net.prefix_len()).map(Prefix::V4),
        IpAddr::V6(a) => Prefix6::new(u128::from(a), net.prefix_len()).map(Prefix::V6),
    };
    p.map_err(|e| err(ErrorKind::Invalid, format!("{net}: {e}")))
}

/// The wire form of a routing prefix.
pub fn net_of(p: Prefix) -> IpNet {
    let (addr, len) = match p {
        Prefix::V4(p) => (IpAddr::V4(p.addr().into()), p.len()),
        Prefix::V6(p) => (IpAddr::V6(p.addr().into()), p.len()),
    };
    IpNet::new(addr, len).expect("a routing prefix is a valid IpNet")
}

/// An interface address from the wire (any host bits are the address).
pub fn ifaddr_of(net: IpNet) -> IfAddr {
    IfAddr::new(net.addr(), net.prefix_len()).expect("an IpNet's length fits its family")
}

/// The wire form of an interface address.
pub fn net_of_ifaddr(a: IfAddr) -> IpNet {
    IpNet::new(a.addr(), a.prefix_len()).expect("an IfAddr's length fits its family")
}

/// The host prefix (/32, /128) of an address.
pub fn host_prefix(a: IpAddr) -> Prefix {
    prefix_of(IpNet::host(a)).expect("a host prefix is a network")
}
