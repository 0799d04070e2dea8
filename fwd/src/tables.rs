//! The root of every table the data path reads: one immutable version,
//! published as a whole through [`crate::qsbr`].
//!
//! A version is cheap to derive from the previous one: each table inside is
//! a persistent structure whose parts are `Arc`-shared between versions
//! (copy-on-write with structural sharing), so a batch of changes copies only
//! what it touches and becomes visible to the workers in one generation.
//! `Clone` is a handful of refcount increments; the management side clones
//! the current root to serve dumps from it without holding the writer.

use std::sync::Arc;

use crate::acl::Classifier;
use crate::control::Mgmt;
use crate::route::{Routing, Vrf};

/// What the data path knows about a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortInfo {
    pub name: String,
    /// The port's own MAC: the source MAC of frames it sends.
    pub mac: [u8; 6],
    /// The routing table its received packets are looked up in.
    pub vrf: Vrf,
    /// Interface addresses (host bits set: `10.0.1.1/24`).
    pub addresses: Vec<ctl::wire::IpNet>,
}

impl PortInfo {
    /// Whether `a` is one of this port's addresses.
    #[inline]
    pub fn owns(&self, a: std::net::IpAddr) -> bool {
        self.addresses.iter().any(|n| n.addr() == a)
    }
}

/// One published version of every table.
#[derive(Clone)]
pub struct Tables {
    pub routing: Routing,
    pub acl: Arc<Classifier>,
    pub ports: Arc<[PortInfo]>,
    /// Control-plane facts (neighbours, unnamed next hops); the data path
    /// never reads them.
    pub mgmt: Arc<Mgmt>,
}

impl Tables {
    /// The VRF of packets received on port `i`.
    #[inline(always)]
    pub fn port_vrf(&self, i: usize) -> Vrf {
        self.ports.get(i).map_or(0, |p| p.vrf)
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

impl Tables {
    /// Tables for `ports` with no routes and the classifier `acl`.
    pub fn empty(ports: Vec<PortInfo>, acl: Arc<Classifier>) -> Tables {
        Tables {
            routing: Routing::new(),
            acl,
            ports: Arc::from(ports),
            mgmt: Arc::new(Mgmt::default()),
        }
    }
}
