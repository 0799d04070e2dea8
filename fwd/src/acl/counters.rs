//! Per-rule, per-worker hit counters and policer state.
//!
//! Each worker owns one [`CounterWriter`] (not `Clone`, methods take
//! `&mut self`): it is the only writer of its cells, so an increment is a
//! relaxed load + relaxed store on a line no other core writes -- no locked
//! instruction, no shared-cache-line write. Readers ([`CounterSet::read`])
//! sum the workers' cells with relaxed loads. Each cell is one 64-byte line,
//! and each worker's array is a separate allocation of whole lines, so two
//! workers never write the same line.
//!
//! `last_used` is stored only when the worker's coarse tick differs from the
//! stored one, i.e. at most once per tick per rule (the tc lesson: a per-packet
//! `lastuse` store halved throughput).
//!
//! Slots are the dense indices the classifier assigns ([`super::Slot`]).
//! A slot is reused only after [`super::ClassifierWriter::release_slots`], which the
//! control side calls once the version that retired the slot is reclaimed;
//! that call also zeroes the slot here, at a time no worker can reach it.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use super::rule::PoliceRate;
use super::Slot;

#[derive(Debug, Default)]
#[repr(C, align(64))]
struct Cell {
    packets: AtomicU64,
    bytes: AtomicU64,
    last_used: AtomicU64,
    /// Policer: tokens (bytes or packets, scaled by 2^16) and last refill
    /// time in ns.
    tokens: AtomicU64,
    stamp: AtomicU64,
}

/// Summed counters of one rule.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RuleStats {
    pub packets: u64,
    pub bytes: u64,
    /// Largest tick any worker reported (0 = never hit).
    pub last_used: u64,
}

/// All workers' counters, shared by the workers and the control side.
#[derive(Debug)]
pub struct CounterSet {
    workers: Vec<Box<[Cell]>>,
    capacity: usize,
}

/// One worker's write handle.
#[derive(Debug)]
pub struct CounterWriter {
    set: Arc<CounterSet>,
    worker: usize,
    n_workers: u64,
}

impl CounterSet {
    /// Counters for `n_workers` workers and slots `0..capacity` (use the
    /// classifier's `Config::capacity`). Returns the shared set and one
    /// writer per worker.
    pub fn new(n_workers: usize, capacity: usize) -> (Arc<CounterSet>, Vec<CounterWriter>) {
        let set = Arc::new(CounterSet {
            workers: (0..n_workers)
                .map(|_| (0..capacity).map(|_| Cell::default()).collect())
                .collect(),
            capacity,
        });
        let writers = (0..n_workers)
            .map(|w| CounterWriter {
                set: set.clone(),
                worker: w,
                n_workers: n_workers as u64,
            })
            .collect();
        (set, writers)
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Sum over workers (relaxed: a statistic, not a synchronisation point;
    /// each value is individually coherent).
    pub fn read(&self, slot: Slot) -> RuleStats {
        let mut s = RuleStats::default();
        for w in &self.workers {
            let c = &w[slot as usize];
            s.packets += c.packets.load(Relaxed);
            s.bytes += c.bytes.load(Relaxed);
            s.last_used = s.last_used.max(c.last_used.load(Relaxed));
        }
        s
    }

    /// Zero a slot in every worker. Only for slots no published version
    /// references (after reclamation); relaxed suffices because the QSBR
    /// handshake orders the worker's last write before this, and this before
    /// the publication of the version that reuses the slot.
    pub(crate) fn reset(&self, slot: Slot) {
        for w in &self.workers {
            let c = &w[slot as usize];
            c.packets.store(0, Relaxed);
            c.bytes.store(0, Relaxed);
            c.last_used.store(0, Relaxed);
            c.tokens.store(0, Relaxed);
            c.stamp.store(0, Relaxed);
        }
    }
}

const TOKEN_SCALE: u64 = 1 << 16;

impl CounterWriter {
    pub fn worker(&self) -> usize {
        self.worker
    }

    /// Count one packet of `bytes` on `slot`; `tick` is the worker's coarse
    /// clock (e.g. ms), stored at most once per tick.
    #[inline]
    pub fn hit(&mut self, slot: Slot, bytes: u32, tick: u64) {
        self.hits(slot, 1, u64::from(bytes), tick);
    }

    /// Count `packets` packets of `bytes` bytes in all on `slot` (a run of
    /// packets of one burst that matched the same rule).
    #[inline]
    pub fn hits(&mut self, slot: Slot, packets: u64, bytes: u64, tick: u64) {
        let c = &self.set.workers[self.worker][slot as usize];
        // Relaxed load+store (not fetch_add): this worker is the only writer.
        c.packets.store(c.packets.load(Relaxed) + packets, Relaxed);
        c.bytes.store(c.bytes.load(Relaxed) + bytes, Relaxed);
        if c.last_used.load(Relaxed) != tick {
            c.last_used.store(tick, Relaxed);
        }
    }

    /// Token-bucket policer, this worker's share (`rate / n_workers`,
    /// `burst / n_workers`). Returns true if the packet conforms. `now_ns`
    /// is a monotonic clock.
    #[inline]
    pub fn police(
        &mut self,
        slot: Slot,
        rate: PoliceRate,
        burst: u32,
        bytes: u32,
        now_ns: u64,
    ) -> bool {
        let c = &self.set.workers[self.worker][slot as usize];
        let n = self.n_workers.max(1);
        let (per_sec, cost) = match rate {
            PoliceRate::Bps(r) => (r / 8 / n, bytes as u64),
            PoliceRate::Pps(r) => (r / n, 1),
        };
        let cap = (burst as u64 / n).max(1) * TOKEN_SCALE;
        // Relaxed: only this worker touches the policer state.
        let stamp = c.stamp.load(Relaxed);
        let mut tokens = c.tokens.load(Relaxed);
        if stamp == 0 {
            tokens = cap;
        } else {
            let dt = now_ns.saturating_sub(stamp);
            let add = (dt as u128 * per_sec as u128 * TOKEN_SCALE as u128 / 1_000_000_000) as u64;
            tokens = tokens.saturating_add(add).min(cap);
        }
        c.stamp.store(now_ns.max(1), Relaxed);
        let need = cost * TOKEN_SCALE;
        if tokens >= need {
            c.tokens.store(tokens - need, Relaxed);
            true
        } else {
            c.tokens.store(tokens, Relaxed);
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_and_last_used() {
        let (set, mut w) = CounterSet::new(2, 4);
        w[0].hit(1, 100, 5);
        w[0].hit(1, 50, 5);
        w[1].hit(1, 10, 7);
        assert_eq!(
            set.read(1),
            RuleStats {
                packets: 3,
                bytes: 160,
                last_used: 7
            }
        );
        assert_eq!(set.read(0), RuleStats::default());
        set.reset(1);
        assert_eq!(set.read(1), RuleStats::default());
    }

    #[test]
    fn cells_are_lines() {
        assert_eq!(std::mem::size_of::<Cell>(), 64);
        assert_eq!(std::mem::align_of::<Cell>(), 64);
    }

    #[test]
    fn policer_share() {
        // 2 workers, 1000 pps, burst 10: each worker gets 500 pps, burst 5.
        let (_set, mut w) = CounterSet::new(2, 1);
        let t0 = 1_000;
        let ok = (0..10)
            .filter(|_| w[0].police(0, PoliceRate::Pps(1000), 10, 64, t0))
            .count();
        assert_eq!(ok, 5);
        // 10 ms later: 5 more tokens.
        let t1 = t0 + 10_000_000;
        let ok = (0..10)
            .filter(|_| w[0].police(0, PoliceRate::Pps(1000), 10, 64, t1))
            .count();
        assert_eq!(ok, 5);
    }
}
