//! Which classifier rules use which next hop (`action nexthop N`), so a next
//! hop a rule steers traffic to cannot be deleted under it (routes hold
//! reference counts in the routing tables; rules live in the classifier,
//! so their references are kept here, beside it).

use imbl::{OrdMap, OrdSet};

use crate::route::NhId;

/// Rule ids by next hop, and the reverse. Persistent maps, as the other
/// parts of [`Mgmt`](super::Mgmt): a batch's copy is cheap.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuleRefs {
    by_nh: OrdMap<NhId, OrdSet<u32>>,
    by_rule: OrdMap<u32, Vec<NhId>>,
}

impl RuleRefs {
    /// Rule `rule` now uses exactly `nhs` (none: it uses no next hop).
    pub fn set(&mut self, rule: u32, nhs: Vec<NhId>) {
        self.remove(rule);
        if nhs.is_empty() {
            return;
        }
        for &nh in &nhs {
            self.by_nh.entry(nh).or_default().insert(rule);
        }
        self.by_rule.insert(rule, nhs);
    }

    /// Rule `rule` is gone.
    pub fn remove(&mut self, rule: u32) {
        for nh in self.by_rule.remove(&rule).unwrap_or_default() {
            if let Some(users) = self.by_nh.get_mut(&nh) {
                users.remove(&rule);
                if users.is_empty() {
                    self.by_nh.remove(&nh);
                }
            }
        }
    }

    /// Every rule is gone.
    pub fn clear(&mut self) {
        *self = RuleRefs::default();
    }

    /// The rules using next hop `nh`, by id.
    pub fn users(&self, nh: NhId) -> impl Iterator<Item = u32> + '_ {
        self.by_nh.get(&nh).into_iter().flatten().copied()
    }

    /// How many rules use next hop `nh`.
    pub fn count(&self, nh: NhId) -> usize {
        self.by_nh.get(&nh).map_or(0, OrdSet::len)
    }
}
