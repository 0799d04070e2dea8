//! A VRF's tables: the RIB and FIB of each family, and the writes that
//! keep the two in step.

use triomphe::Arc;

use super::cow::{self, make_mut};
use super::entry::encode;
use super::fib::Fib;
use super::rib::Rib;
use super::Entry;

/// RIB and FIB of one family. Behind its own `Arc` so that a batch touching only
/// IPv4 does not copy IPv6's directories, and vice versa.
#[derive(Clone, Default)]
pub(super) struct Family<const W: u32> {
    pub(super) rib: Rib<W, Entry>,
    pub(super) fib: Fib<W>,
}

/// A VRF's two families, held by value in the version's VRF map: a batch
/// that writes one copies the map and the family it writes, not a third
/// level between them.
#[derive(Clone, Default)]
pub(super) struct VrfTables {
    pub(super) v4: Arc<Family<32>>,
    pub(super) v6: Arc<Family<128>>,
}

impl VrfTables {
    /// The memory it is charged (`limits`).
    pub(super) fn charge(&self) -> usize {
        std::mem::size_of::<VrfTables>()
            + 2 * cow::ARC_HEADER
            + std::mem::size_of::<Family<32>>()
            + std::mem::size_of::<Family<128>>()
            + self.v4.charge()
            + self.v6.charge()
    }
}

impl<const W: u32> Family<W> {
    /// The memory it is charged (`limits`). O(1).
    pub(super) fn charge(&self) -> usize {
        self.rib.charge() + self.fib.charge()
    }

    /// `op` on the family `f` (made private), with its charge before and
    /// after: the writes of a [`Txn`](super::Txn) keep the version's charge with them.
    pub(super) fn charged<R>(
        f: &mut Arc<Self>,
        op: impl FnOnce(&mut Self) -> R,
    ) -> (R, usize, usize) {
        let f = make_mut(f);
        let before = f.charge();
        let r = op(f);
        (r, before, f.charge())
    }

    /// `addr/len -> entry` (its target encoded `v`) into RIB and FIB;
    /// returns the old entry. The FIB is written only when the target changed.
    pub(super) fn set(
        &mut self,
        a: u128,
        l: u8,
        entry: Entry,
        v: u32,
        kids: &mut Vec<(u128, u8)>,
    ) -> Option<Entry> {
        self.fib.prefetch_page(a);
        let old = self.rib.insert_children(a, l, entry, kids);
        if old.map(|e| e.target) != Some(entry.target) {
            self.fib.apply_prefix(a, l, v, kids);
        }
        old
    }

    /// Removes `addr/len` if it is present and `pred` accepts its entry;
    /// its addresses fall back to the covering route.
    pub(super) fn remove_if(
        &mut self,
        a: u128,
        l: u8,
        kids: &mut Vec<(u128, u8)>,
        pred: impl FnOnce(&Entry) -> bool,
    ) -> Option<Entry> {
        // One read-only walk finds the entry, the route its addresses fall
        // back to and its holes (none of which its removal changes), so the
        // removal walk is the only other one, and an absent or refused
        // prefix copies nothing.
        self.fib.prefetch_page(a);
        let (old, cover) = self.rib.area_of_present(a, l, kids)?;
        if !pred(&old) {
            return None;
        }
        self.rib.remove_present(a, l);
        let v = cover.map_or(0, |e| encode(e.target));
        self.fib.apply_prefix(a, l, v, kids);
        Some(old)
    }
}
