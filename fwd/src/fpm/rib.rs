//! The routes zebra holds in the appliance: what it last said about each
//! prefix, whether or not the FIB carries it now.
//!
//! The FIB shows one route per prefix. When the operator (config, fwdctl)
//! or the appliance itself (connected, local) has a route at a prefix that
//! zebra also sends, theirs is installed and zebra's waits here; when
//! theirs goes, zebra's is put back from here. This table is also what
//! survives a zebra restart: each FPM session is an *epoch*, every route
//! zebra sends is stamped with the current one, and once the replay window
//! after a reconnect has passed, the routes still stamped with an older
//! epoch are the ones zebra no longer has (mark and sweep).
//!
//! Pure: no sockets, no tables; the control lcore owns it and turns its
//! answers into table changes. Targets are interned: a full BGP view has
//! ~900k routes but a few hundred distinct next-hop sets, so each route
//! costs a key and a pointer.

use std::collections::btree_map::{BTreeMap, Entry};
use std::net::IpAddr;
use std::sync::Arc;

use rustc_hash::FxHashSet;

use crate::route::{Prefix, Prefix4, Prefix6, Vrf};

/// One path of an FPM route.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FpmPath {
    /// Absent for a directly connected (on-link) path.
    pub gateway: Option<IpAddr>,
    /// The port of the interface zebra named; absent when zebra named none
    /// (or one that is not a port's): the port whose subnet covers the
    /// gateway is used.
    pub port: Option<u16>,
    /// 1..=256 (`rtnh_hops` + 1).
    pub weight: u32,
}

/// Where an FPM route sends packets.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum FpmTarget {
    /// One path, or several (ECMP), sorted.
    Paths(Vec<FpmPath>),
    /// `blackhole`: drop silently.
    Blackhole,
    /// `unreachable` / `prohibit`: drop and answer with ICMP.
    Reject,
}

/// A route as zebra last sent it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FpmRoute {
    pub target: Arc<FpmTarget>,
    /// `rtm_protocol` (186 bgp, 188 ospf, ...).
    pub proto: u8,
    /// The session that last sent it.
    pub epoch: u32,
}

/// A route's key, packed: 24 bytes where `(Vrf, Prefix)` takes 64 (its
/// `u128` aligns the whole entry to 16), ordered as `(Vrf, Prefix)` is
/// (table, then IPv4 before IPv6, then address, then length).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Key {
    /// The address, high half then low half (IPv4: in the low half).
    addr: [u64; 2],
    vrf: Vrf,
    len: u8,
    v6: bool,
}

impl Ord for Key {
    #[inline]
    fn cmp(&self, o: &Key) -> std::cmp::Ordering {
        // Field by field, most significant first, each an integer compare
        // that usually settles it (the address's low half for IPv4): the
        // same order as `order()`, without building it for both sides.
        self.vrf
            .cmp(&o.vrf)
            .then_with(|| self.v6.cmp(&o.v6))
            .then_with(|| self.addr[0].cmp(&o.addr[0]))
            .then_with(|| self.addr[1].cmp(&o.addr[1]))
            .then_with(|| self.len.cmp(&o.len))
    }
}

impl PartialOrd for Key {
    fn partial_cmp(&self, o: &Key) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

impl Key {
    fn new(vrf: Vrf, prefix: Prefix) -> Key {
        let (a, len, v6) = match prefix {
            Prefix::V4(p) => (u128::from(p.addr()), p.len(), false),
            Prefix::V6(p) => (p.addr(), p.len(), true),
        };
        Key {
            addr: [(a >> 64) as u64, a as u64],
            vrf,
            len,
            v6,
        }
    }

    /// The key's order as two integers: (table, family, high half of the
    /// address) and (low half, length); the batch sort's key
    /// ([`route_order`]). `cmp` compares the fields one by one instead:
    /// building these for both sides of every step of a map search cost
    /// more instructions than it saved (`bench-results/fpm.md`).
    #[inline]
    fn order(&self) -> (u128, u128) {
        (
            u128::from(self.vrf) << 65 | u128::from(self.v6) << 64 | u128::from(self.addr[0]),
            u128::from(self.addr[1]) << 8 | u128::from(self.len),
        )
    }

    fn route(self) -> (Vrf, Prefix) {
        let a = (u128::from(self.addr[0]) << 64) | u128::from(self.addr[1]);
        let p = if self.v6 {
            Prefix6::new(a, self.len).map(Prefix::V6)
        } else {
            Prefix4::new(a as u32, self.len).map(Prefix::V4)
        };
        (self.vrf, p.expect("a key is made from a valid prefix"))
    }
}

static_assertions::const_assert!(std::mem::size_of::<Key>() == 24);

/// A value that orders routes as `(Vrf, Prefix)` does, cheaply: what a
/// batch is sorted by (see the control side's `state::apply_fpm`).
#[inline]
pub fn route_order(vrf: Vrf, prefix: Prefix) -> impl Ord {
    Key::new(vrf, prefix).order()
}

/// zebra's routes, by table and prefix.
///
/// Ordered, not hashed: batches come in prefix order (see
/// the control side's `state::apply_fpm`), so consecutive inserts and
/// deletes land in the same or the next leaf, in cache, where a hash table
/// of a million routes costs two cache misses for each, and a full copy
/// each time it grows (`bench-results/fpm.md`).
#[derive(Debug, Default)]
pub struct FpmRib {
    routes: BTreeMap<Key, FpmRoute>,
    targets: FxHashSet<Arc<FpmTarget>>,
    epoch: u32,
}

impl FpmRib {
    pub fn new() -> FpmRib {
        FpmRib::default()
    }

    /// Routes held.
    pub fn len(&self) -> usize {
        self.routes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }

    /// The current session's epoch.
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    /// zebra (re)connected: routes sent from now on belong to a new epoch;
    /// every route held becomes stale until it is sent again. Returns the
    /// number of stale routes.
    pub fn new_session(&mut self) -> usize {
        self.epoch = self.epoch.wrapping_add(1);
        self.routes.len()
    }

    /// Routes not sent since the current session began.
    pub fn stale(&self) -> impl Iterator<Item = (Vrf, Prefix)> + '_ {
        let e = self.epoch;
        self.routes
            .iter()
            .filter(move |(_, r)| r.epoch != e)
            .map(|(k, _)| k.route())
    }

    /// How many routes are stale.
    pub fn stale_count(&self) -> usize {
        self.stale().count()
    }

    /// What zebra said about `prefix` in `vrf`.
    pub fn get(&self, vrf: Vrf, prefix: Prefix) -> Option<&FpmRoute> {
        self.routes.get(&Key::new(vrf, prefix))
    }

    /// Records zebra's route; returns its (interned) target when it differs
    /// from what was held, `None` when it does not (a replayed, unchanged
    /// route only has its epoch refreshed).
    pub fn set(
        &mut self,
        vrf: Vrf,
        prefix: Prefix,
        target: FpmTarget,
        proto: u8,
    ) -> Option<Arc<FpmTarget>> {
        let epoch = self.epoch;
        let target = match self.routes.entry(Key::new(vrf, prefix)) {
            Entry::Occupied(mut o) => {
                let r = o.get_mut();
                r.epoch = epoch;
                if *r.target == target && r.proto == proto {
                    return None;
                }
                r.proto = proto;
                let new = intern(&mut self.targets, target);
                (std::mem::replace(&mut r.target, Arc::clone(&new)), new)
            }
            Entry::Vacant(v) => {
                let new = intern(&mut self.targets, target);
                v.insert(FpmRoute {
                    target: Arc::clone(&new),
                    proto,
                    epoch,
                });
                return Some(new);
            }
        };
        let (old, new) = target;
        self.release(&old);
        Some(new)
    }

    /// Forgets zebra's route; returns it.
    pub fn del(&mut self, vrf: Vrf, prefix: Prefix) -> Option<FpmRoute> {
        let r = self.routes.remove(&Key::new(vrf, prefix))?;
        self.release(&r.target);
        Some(r)
    }

    /// Forgets a target no route uses any more.
    fn release(&mut self, t: &Arc<FpmTarget>) {
        if Arc::strong_count(t) == 2 {
            // Only the interner and the caller's copy hold it.
            self.targets.remove(t);
        }
    }

    /// Every route, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = ((Vrf, Prefix), &FpmRoute)> + '_ {
        self.routes.iter().map(|(k, r)| (k.route(), r))
    }

    /// Forgets interned targets no route holds (ones a caller kept alive
    /// while their last route went).
    pub fn release_unused(&mut self) {
        self.targets.retain(|t| Arc::strong_count(t) > 1);
    }

    /// Distinct targets held (for statistics and tests).
    pub fn distinct_targets(&self) -> usize {
        self.targets.len()
    }
}

fn intern(targets: &mut FxHashSet<Arc<FpmTarget>>, t: FpmTarget) -> Arc<FpmTarget> {
    if let Some(a) = targets.get(&t) {
        return Arc::clone(a);
    }
    let a = Arc::new(t);
    targets.insert(Arc::clone(&a));
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route::Prefix4;

    fn p(a: u32, l: u8) -> Prefix {
        Prefix::V4(Prefix4::new(a, l).unwrap())
    }

    fn via(g: [u8; 4], port: u16) -> FpmTarget {
        FpmTarget::Paths(vec![FpmPath {
            gateway: Some(IpAddr::from(g)),
            port: Some(port),
            weight: 1,
        }])
    }

    #[test]
    fn set_reports_changes_and_interns_targets() {
        let mut r = FpmRib::new();
        assert!(r
            .set(0, p(0x0a00_0000, 8), via([192, 0, 2, 1], 0), 186)
            .is_some());
        assert!(r
            .set(0, p(0x0a00_0000, 8), via([192, 0, 2, 1], 0), 186)
            .is_none());
        assert!(r
            .set(0, p(0x0a00_0000, 8), via([192, 0, 2, 1], 0), 188)
            .is_some());
        assert!(r
            .set(0, p(0x0b00_0000, 8), via([192, 0, 2, 1], 0), 186)
            .is_some());
        assert!(r
            .set(1, p(0x0b00_0000, 8), FpmTarget::Blackhole, 196)
            .is_some());
        assert_eq!(r.len(), 3);
        assert_eq!(r.distinct_targets(), 2);
        assert_eq!(r.del(1, p(0x0b00_0000, 8)).unwrap().proto, 196);
        assert_eq!(
            r.distinct_targets(),
            1,
            "the last user of a target frees it"
        );
        r.del(0, p(0x0a00_0000, 8));
        assert_eq!(r.distinct_targets(), 1);
        r.del(0, p(0x0b00_0000, 8));
        assert_eq!(r.distinct_targets(), 0);
        assert!(r.is_empty());
        assert!(r.del(0, p(0x0b00_0000, 8)).is_none());
    }

    #[test]
    fn keys_give_back_the_route_they_were_made_of() {
        let six = |a: u128, l: u8| Prefix::V6(Prefix6::new(a, l).unwrap());
        let routes = [
            (0, p(0, 0)),
            (7, p(0xffff_ffff, 32)),
            (u32::MAX, p(0x0a00_0000, 8)),
            (0, six(0, 0)),
            (3, six(u128::MAX, 128)),
            (0, six(0x2001_0db8 << 96, 32)),
            // The same bits as an IPv4 route: a different key.
            (0, six(0x0a00_0000, 120)),
        ];
        for &(vrf, pfx) in &routes {
            assert_eq!(Key::new(vrf, pfx).route(), (vrf, pfx));
        }
        // Ordered as the routes are, which is how batches are sorted.
        for a in &routes {
            for b in &routes {
                assert_eq!(
                    Key::new(a.0, a.1).cmp(&Key::new(b.0, b.1)),
                    a.cmp(b),
                    "{a:?} {b:?}"
                );
            }
        }
        assert_ne!(
            Key::new(0, p(0x0a00_0000, 8)),
            Key::new(0, six(0x0a00_0000, 8 + 96))
        );
        assert_ne!(Key::new(0, six(1 << 64, 64)), Key::new(0, six(1, 128)));
    }

    proptest::proptest! {
        /// Keys (and the batch order) order routes as `(Vrf, Prefix)` does,
        /// over tables at both ends, both families and every length.
        #[test]
        fn keys_order_as_the_routes_do(
            a in (0usize..3, proptest::bool::ANY, proptest::num::u128::ANY, 0u8..=128),
            b in (0usize..3, proptest::bool::ANY, proptest::num::u128::ANY, 0u8..=128),
            same_addr in proptest::bool::ANY,
        ) {
            let route = |(v, six, _, len): (usize, bool, u128, u8), addr: u128| {
                let vrf = [0, 1, u32::MAX][v];
                let p = if six {
                    Prefix::V6(Prefix6::new(addr & crate::route::mask6(len), len).unwrap())
                } else {
                    let l = len % 33;
                    Prefix::V4(Prefix4::new(addr as u32 & crate::route::mask4(l), l).unwrap())
                };
                (vrf, p)
            };
            let ra = route(a, a.2);
            let rb = route(b, if same_addr { a.2 } else { b.2 });
            proptest::prop_assert_eq!(Key::new(ra.0, ra.1).cmp(&Key::new(rb.0, rb.1)), ra.cmp(&rb));
            proptest::prop_assert_eq!(
                route_order(ra.0, ra.1).cmp(&route_order(rb.0, rb.1)),
                ra.cmp(&rb)
            );
        }
    }

    #[test]
    fn a_new_session_makes_everything_stale_until_replayed() {
        let mut r = FpmRib::new();
        for i in 0..10u32 {
            r.set(
                0,
                p(0x0a00_0000 | (i << 8), 24),
                via([192, 0, 2, 1], 0),
                186,
            );
        }
        assert_eq!(r.stale_count(), 0);
        assert_eq!(r.new_session(), 10);
        assert_eq!(r.stale_count(), 10);
        // Replayed unchanged, replayed changed, and one new route.
        assert!(r
            .set(0, p(0x0a00_0000, 24), via([192, 0, 2, 1], 0), 186)
            .is_none());
        assert!(r
            .set(0, p(0x0a00_0100, 24), via([192, 0, 2, 2], 0), 186)
            .is_some());
        assert!(r
            .set(0, p(0x0c00_0000, 8), FpmTarget::Reject, 186)
            .is_some());
        let mut stale: Vec<_> = r.stale().collect();
        stale.sort_by_key(|(_, p)| format!("{p:?}"));
        assert_eq!(stale.len(), 8);
        assert!(!stale.contains(&(0, p(0x0a00_0000, 24))));
        assert!(!stale.contains(&(0, p(0x0a00_0100, 24))));
        assert!(!stale.contains(&(0, p(0x0c00_0000, 8))));
    }
}
