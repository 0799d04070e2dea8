//! The root of every table the data path reads: one immutable version,
//! published as a whole through [`crate::qsbr`].
//!
//! A version is cheap to derive from the previous one: each table inside is
//! a persistent structure whose parts are `Arc`-shared between versions
//! (copy-on-write with structural sharing), so a batch of changes copies only
//! what it touches and becomes visible to the workers in one generation.
//! `Clone` is a handful of refcount increments and a new [`Tables::uid`];
//! the management side clones the current root to serve dumps from it
//! without holding the writer.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::acl::Classifier;
use crate::route::{self, Routing, Vrf};

mod ifaddr;
mod mgmt;
mod rule_refs;

pub use ifaddr::IfAddr;
pub use mgmt::Mgmt;
pub use rule_refs::RuleRefs;

/// What the data path knows about a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortInfo {
    pub name: String,
    /// The port's own MAC: the source MAC of frames it sends.
    pub mac: [u8; 6],
    /// The routing table its received packets are looked up in.
    pub vrf: Vrf,
    /// Interface addresses (host bits set: `10.0.1.1/24`).
    pub addresses: Vec<IfAddr>,
    /// Largest IP packet it sends (the L3 MTU, as `ip link` shows it).
    pub mtu: u16,
    /// Its IPv6 link-local address (fe80::/64 + modified EUI-64 of `mac`),
    /// answered like the configured addresses; never routed.
    pub link_local: u128,
    /// Administrative state (`fwdctl port set NAME up|down`).
    pub admin_up: bool,
    /// Carrier as last read from the driver (true when it cannot be read).
    pub carrier: bool,
    /// Sends IPv6 router advertisements (and answers solicitations).
    pub ra: bool,
}

impl PortInfo {
    /// A port that is up, with the default MTU and no addresses.
    pub fn new(name: impl Into<String>, mac: [u8; 6], vrf: Vrf) -> PortInfo {
        PortInfo {
            name: name.into(),
            mac,
            vrf,
            addresses: Vec::new(),
            mtu: 1500,
            link_local: u128::from(crate::pkt::link_local(mac)),
            admin_up: true,
            carrier: true,
            ra: false,
        }
    }

    /// Whether `a` is one of this port's addresses (its link-local one
    /// included).
    #[inline]
    pub fn owns(&self, a: std::net::IpAddr) -> bool {
        match a {
            std::net::IpAddr::V6(v6) if u128::from(v6) == self.link_local => true,
            _ => self.addresses.iter().any(|n| n.addr() == a),
        }
    }

    /// Usable for forwarding: administratively up with carrier.
    #[inline(always)]
    pub fn is_up(&self) -> bool {
        self.admin_up && self.carrier
    }

    /// The address to source our own IPv4 packets about `peer` from: the
    /// one whose subnet covers `peer`, else the first IPv4 address.
    pub fn source_v4(&self, peer: std::net::Ipv4Addr) -> Option<std::net::Ipv4Addr> {
        let v4 = |n: &&IfAddr| match n.addr() {
            std::net::IpAddr::V4(a) => Some(a),
            std::net::IpAddr::V6(_) => None,
        };
        let all = || self.addresses.iter().filter(|n| v4(n).is_some());
        all()
            .find(|n| n.contains(std::net::IpAddr::V4(peer)))
            .or_else(|| all().next())
            .and_then(|n| v4(&n))
    }

    /// The address to source our own IPv6 packets about `peer` from: a
    /// global one covering `peer`, else the first global one, else the
    /// link-local address.
    pub fn source_v6(&self, peer: std::net::Ipv6Addr) -> std::net::Ipv6Addr {
        let v6 = |n: &IfAddr| match n.addr() {
            std::net::IpAddr::V6(a) => Some(a),
            std::net::IpAddr::V4(_) => None,
        };
        let all = || self.addresses.iter().filter(|n| v6(n).is_some());
        all()
            .find(|n| n.contains(std::net::IpAddr::V6(peer)))
            .or_else(|| all().next())
            .and_then(v6)
            .unwrap_or_else(|| self.link_local.into())
    }
}

/// One published version of every table.
///
/// Each value has a [`Tables::uid`] of its own (a clone too), which a
/// worker keys what it keeps across bursts with (the next hops it resolved:
/// [`crate::worker::pipeline::Scratch`]). A value is never changed once a
/// worker may have read it: a change is a new value ([`Tables::new`]).
pub struct Tables {
    pub routing: Routing,
    pub acl: Arc<Classifier>,
    pub ports: Arc<[PortInfo]>,
    /// Control-plane facts (neighbours, unnamed next hops); the data path
    /// never reads them.
    pub mgmt: Arc<Mgmt>,
    /// See [`Tables::uid`]; private, so that every value is made by
    /// [`Tables::new`] or `clone`.
    uid: u64,
}

impl Clone for Tables {
    /// The same tables under a new [`Tables::uid`].
    fn clone(&self) -> Tables {
        Tables::new(
            self.routing.clone(),
            Arc::clone(&self.acl),
            Arc::clone(&self.ports),
            Arc::clone(&self.mgmt),
        )
    }
}

impl Tables {
    /// Tables of these parts, under a new [`Tables::uid`].
    pub fn new(
        routing: Routing,
        acl: Arc<Classifier>,
        ports: Arc<[PortInfo]>,
        mgmt: Arc<Mgmt>,
    ) -> Tables {
        /// The next uid: never 0 (a worker's empty cache entry), never
        /// repeated (2^64 values).
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Tables {
            routing,
            acl,
            ports,
            mgmt,
            uid: NEXT.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// This value's identity, unique in the process: two values with the
    /// same uid are the same value.
    #[inline(always)]
    pub fn uid(&self) -> u64 {
        self.uid
    }

    /// The VRF of packets received on port `i`.
    #[inline(always)]
    pub fn port_vrf(&self, i: usize) -> Vrf {
        self.ports.get(i).map_or(0, |p| p.vrf)
    }

    /// Port `i`.
    #[inline(always)]
    pub fn port(&self, i: usize) -> Option<&PortInfo> {
        self.ports.get(i)
    }

    /// The MAC of port `i`, `None` for an unknown port.
    #[inline(always)]
    pub fn port_mac(&self, i: usize) -> Option<[u8; 6]> {
        self.ports.get(i).map(|p| p.mac)
    }

    /// Index of the port named `name`.
    pub fn port_index(&self, name: &str) -> Option<usize> {
        self.ports.iter().position(|p| p.name == name)
    }
}

/// What the tables may hold (the config's `limits`): a change past one is
/// refused, so that no client can grow them until the kernel kills the
/// daemon.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The routing tables' (see [`route::Limits`]).
    pub routing: route::Limits,
    /// Static neighbours (`fwdctl neigh add`), every port: they need no
    /// connected subnet and take no route, so nothing else bounds them
    /// (the learned ones are bounded by `neigh.max_entries`).
    pub neighbours: usize,
    /// Addresses a port: the workers scan a port's addresses to answer
    /// ARP and neighbour solicitations, and a batch checks each new one
    /// against them.
    pub addresses: usize,
}

impl Limits {
    /// Default [`Limits::neighbours`]: ~7 MB of entries.
    pub const DEFAULT_NEIGHBOURS: usize = 65536;
    /// Default [`Limits::addresses`].
    pub const DEFAULT_ADDRESSES: usize = 1024;
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            routing: route::Limits::default(),
            neighbours: Self::DEFAULT_NEIGHBOURS,
            addresses: Self::DEFAULT_ADDRESSES,
        }
    }
}

impl Tables {
    /// Tables for `ports` with no routes and the classifier `acl`, held to
    /// `limits` (every version made from them).
    pub fn empty(ports: Vec<PortInfo>, acl: Arc<Classifier>, limits: Limits) -> Tables {
        Tables::new(
            Routing::with_limits(limits.routing),
            acl,
            Arc::from(ports),
            Arc::new(Mgmt {
                max_neighbours: limits.neighbours,
                max_addresses: limits.addresses,
                ..Mgmt::default()
            }),
        )
    }

    /// The limits these tables are held to.
    pub fn limits(&self) -> Limits {
        Limits {
            routing: self.routing.limits(),
            neighbours: self.mgmt.max_neighbours,
            addresses: self.mgmt.max_addresses,
        }
    }
}
