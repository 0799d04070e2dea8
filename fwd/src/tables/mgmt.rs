//! Control-plane facts published with every version of the tables: the
//! management side reads them for dumps and the saved configuration, the
//! control lcore derives the next version's from them; the data path never
//! reads them. Pure data: the rules that maintain them live in
//! `control::state`.

use std::net::IpAddr;

use imbl::{HashMap, OrdMap};

use super::RuleRefs;
use crate::route::{GroupId, NhId};

/// Control-plane facts shared by every version that has them.
///
/// Every batch starts from a clone of the version before it, and the
/// neighbour maps grow with the LAN (and the unnamed next hops with them:
/// each attached neighbour's host route has one), so the maps are
/// persistent (`imbl`): a clone costs a few reference counts and a change
/// copies a path, where `std` maps made every batch, a route change or one
/// neighbour's new MAC, copy them whole (200 us per batch with 10,000
/// learned neighbours, 2-3.5 ms with 100,000; `bench-results/batch.md`).
#[derive(Clone, Debug)]
pub struct Mgmt {
    /// Static neighbours.
    pub neighbours: OrdMap<(u16, IpAddr), [u8; 6]>,
    /// Neighbours learned by ARP / ND that are usable now (reachable, stale
    /// or being probed); a static entry for the same key wins.
    pub learned: OrdMap<(u16, IpAddr), [u8; 6]>,
    /// Unnamed next hops by (gateway, port), and the reverse.
    pub auto_nh: HashMap<(Option<IpAddr>, u16), NhId>,
    pub auto_by_id: HashMap<NhId, (Option<IpAddr>, u16)>,
    /// Unnamed ECMP groups by their members (next hop, weight), sorted by
    /// next hop, and the reverse.
    pub auto_group: HashMap<Vec<(NhId, u32)>, GroupId>,
    pub auto_group_by_id: HashMap<GroupId, Vec<(NhId, u32)>>,
    /// The next hops classifier rules steer to (`action nexthop N`).
    pub rule_nexthops: RuleRefs,
    /// The most static neighbours there may be (`super::Limits`).
    pub max_neighbours: usize,
    /// The most addresses a port may have (`super::Limits`).
    pub max_addresses: usize,
}

impl Default for Mgmt {
    fn default() -> Self {
        Mgmt {
            neighbours: OrdMap::new(),
            learned: OrdMap::new(),
            auto_nh: HashMap::new(),
            auto_by_id: HashMap::new(),
            auto_group: HashMap::new(),
            auto_group_by_id: HashMap::new(),
            rule_nexthops: RuleRefs::default(),
            max_neighbours: super::Limits::DEFAULT_NEIGHBOURS,
            max_addresses: super::Limits::DEFAULT_ADDRESSES,
        }
    }
}

impl Mgmt {
    /// The MAC of neighbour `ip` on `port`: static, else learned.
    pub fn mac_of(&self, port: u16, ip: IpAddr) -> Option<[u8; 6]> {
        self.neighbours
            .get(&(port, ip))
            .or_else(|| self.learned.get(&(port, ip)))
            .copied()
    }
}
