//! The neighbour table: entries, their timers and their hold queues. The
//! state machine and the bounds are described in the [module doc](super).

use std::collections::{btree_map, BTreeMap, BTreeSet, VecDeque};
use std::mem;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A DPDK port id.
pub type Port = u16;

type Mac = [u8; 6];

/// An entry's key: the next hop as the route names it.
type Key = (Port, IpAddr);

/// Timers and bounds of a [`NeighTable`]. The defaults are Linux's. Also
/// the `neigh:` section of the daemon's config (unknown fields rejected,
/// every field optional).
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct NeighConfig {
    /// How long REACHABLE lasts after a confirmation (Linux `base_reachable_time_ms`).
    pub reachable_ms: u64,
    /// How long an entry stays STALE before its first unicast probe
    /// (Linux `delay_first_probe_time`).
    pub delay_ms: u64,
    /// Time between two probes of an entry (Linux `retrans_time_ms`).
    pub retrans_ms: u64,
    /// Broadcast/multicast probes of an INCOMPLETE entry before it FAILS.
    pub mcast_probes: u32,
    /// Unicast probes of a PROBE entry before it FAILS.
    pub ucast_probes: u32,
    /// A FAILED entry drops new packets this long after the failure, so that a
    /// stream to a dead host does not restart resolution on every packet.
    pub failed_hold_ms: u64,
    /// A FAILED entry is forgotten this long after the failure.
    pub gc_ms: u64,
    /// Packets held per INCOMPLETE entry (Linux `unres_qlen`); the oldest is
    /// dropped first.
    pub queue_len: usize,
    /// Packets held across all entries.
    pub max_held: usize,
    /// Learned entries (every state but PERMANENT). Past it the oldest FAILED
    /// entry is evicted; if there is none, the new entry is refused.
    pub max_entries: usize,
}

impl Default for NeighConfig {
    fn default() -> Self {
        Self {
            reachable_ms: 30_000,
            delay_ms: 5_000,
            retrans_ms: 1_000,
            mcast_probes: 3,
            ucast_probes: 3,
            failed_hold_ms: 3_000,
            gc_ms: 60_000,
            queue_len: 3,
            max_held: 256,
            max_entries: 4096,
        }
    }
}

/// The state of an entry, as `ip neigh` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum State {
    /// Resolution in progress: broadcast/multicast probes, packets held.
    Incomplete,
    /// Confirmed less than `reachable_ms` ago.
    Reachable,
    /// Usable but unconfirmed; re-probed after `delay_ms`.
    Stale,
    /// Usable, being re-confirmed with unicast probes.
    Probe,
    /// Resolution or re-confirmation failed: no MAC.
    Failed,
    /// Configured by the operator: never probed, aged or learned over.
    Permanent,
}

/// How a (IP, MAC) fact was seen on the wire; decides what it may create or change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Learn {
    /// An answer to our probe (ARP reply, NA with the S flag): confirms
    /// reachability. Updates an existing entry to REACHABLE; creates nothing.
    Solicited,
    /// The host spoke to us first (ARP request for our address, NS with a
    /// source link-layer option): creates a STALE entry or updates one.
    Unsolicited,
    /// A gratuitous ARP, or an NA without S but with O: updates an existing
    /// entry, never creates one.
    Gratuitous,
}

/// What the caller must do after a call; appended to the caller's `out` in
/// the order they must be done.
#[derive(Debug, PartialEq, Eq)]
pub enum Action<T> {
    /// Send an ARP request (IPv4) or a neighbour solicitation (IPv6) for `ip`
    /// out of `port`: to `unicast` when it is set (re-confirming a known MAC),
    /// else broadcast / to the solicited-node multicast address.
    Probe {
        port: Port,
        ip: IpAddr,
        unicast: Option<[u8; 6]>,
    },
    /// Publish: `(port, ip)` now has this MAC. Emitted when the entry first
    /// gets a MAC and when the MAC changes, never when nothing changed.
    Resolved {
        port: Port,
        ip: IpAddr,
        mac: [u8; 6],
    },
    /// Publish: `(port, ip)` has no usable MAC any more. Emitted only for a
    /// key whose last publication was a [`Action::Resolved`].
    Withdrawn { port: Port, ip: IpAddr },
    /// Send these held packets to `mac` now, oldest first. When they were
    /// waiting for resolution, the [`Action::Resolved`] that made them
    /// sendable comes earlier in the same batch; a packet handed to
    /// [`NeighTable::hold`] for an already resolved key comes back alone.
    Release {
        port: Port,
        ip: IpAddr,
        mac: [u8; 6],
        pkts: Vec<T>,
    },
    /// Resolution failed: answer these held packets with an ICMP host
    /// unreachable, then free them. Never empty.
    Unreachable {
        port: Port,
        ip: IpAddr,
        pkts: Vec<T>,
    },
    /// A packet the table would not hold (queue or table full, FAILED
    /// hold-down, entry flushed): free it and count it.
    Drop(T),
}

/// One entry, as [`NeighTable::entries`] shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryView {
    pub port: Port,
    pub ip: IpAddr,
    pub state: State,
    /// The MAC packets are sent to: set in REACHABLE, STALE, PROBE, PERMANENT.
    pub mac: Option<[u8; 6]>,
    /// Time since the entry was created, confirmed, changed MAC or failed;
    /// `None` for PERMANENT.
    pub age_ms: Option<u64>,
    /// Probes sent in the current state (INCOMPLETE, PROBE), else 0.
    pub probes: u32,
    /// Packets held (INCOMPLETE only).
    pub held: usize,
}

/// An entry's state with what only that state has. The deadline `due` is the
/// entry's element of the active [`Wheel`]; a FAILED entry's `forget_at` its
/// element of the gc wheel. [`Timers::enter`] keeps the two in step.
#[derive(Debug)]
enum Phase<T> {
    Incomplete {
        probes: u32,
        due: u64,
        held: VecDeque<T>,
    },
    Reachable {
        mac: Mac,
        due: u64,
    },
    Stale {
        mac: Mac,
        due: u64,
    },
    Probe {
        mac: Mac,
        probes: u32,
        due: u64,
    },
    Failed {
        hold_until: u64,
        forget_at: u64,
    },
    Permanent {
        mac: Mac,
    },
}

impl<T> Phase<T> {
    fn state(&self) -> State {
        match self {
            Phase::Incomplete { .. } => State::Incomplete,
            Phase::Reachable { .. } => State::Reachable,
            Phase::Stale { .. } => State::Stale,
            Phase::Probe { .. } => State::Probe,
            Phase::Failed { .. } => State::Failed,
            Phase::Permanent { .. } => State::Permanent,
        }
    }

    /// The MAC packets may be sent to: exactly the published one.
    fn mac(&self) -> Option<Mac> {
        match self {
            Phase::Reachable { mac, .. }
            | Phase::Stale { mac, .. }
            | Phase::Probe { mac, .. }
            | Phase::Permanent { mac } => Some(*mac),
            Phase::Incomplete { .. } | Phase::Failed { .. } => None,
        }
    }

    fn due(&self) -> Option<u64> {
        match self {
            Phase::Incomplete { due, .. }
            | Phase::Reachable { due, .. }
            | Phase::Stale { due, .. }
            | Phase::Probe { due, .. } => Some(*due),
            Phase::Failed { .. } | Phase::Permanent { .. } => None,
        }
    }

    fn forget_at(&self) -> Option<u64> {
        match self {
            Phase::Failed { forget_at, .. } => Some(*forget_at),
            _ => None,
        }
    }
}

struct Entry<T> {
    phase: Phase<T>,
    /// Last creation, confirmation, MAC change or failure: what `age_ms` counts from.
    since: u64,
}

/// Deadlines in order, with a cached lower bound on the earliest so that a
/// tick with nothing due costs one comparison.
#[derive(Default)]
struct Wheel {
    set: BTreeSet<(u64, Key)>,
    /// `<=` the earliest deadline in `set` (`u64::MAX` when empty at the last
    /// look). Removals leave it early, never late: an early bound costs one
    /// look into `set` at the tick that reaches it, which refreshes it.
    next: u64,
    /// Looks into `set` by `pop_due`, for the test of the cheap tick.
    looks: u64,
}

impl Wheel {
    fn new() -> Self {
        Wheel {
            next: u64::MAX,
            ..Wheel::default()
        }
    }

    fn insert(&mut self, at: u64, key: Key) {
        self.set.insert((at, key));
        self.next = self.next.min(at);
    }

    fn remove(&mut self, at: u64, key: Key) {
        self.set.remove(&(at, key));
    }

    /// The key of the earliest deadline `<= now`, removed.
    fn pop_due(&mut self, now: u64) -> Option<Key> {
        if now < self.next {
            return None;
        }
        self.looks += 1;
        match self.set.first() {
            Some(&(at, key)) if at <= now => {
                self.set.pop_first();
                Some(key)
            }
            first => {
                self.next = first.map_or(u64::MAX, |&(at, _)| at);
                None
            }
        }
    }
}

struct Timers {
    /// INCOMPLETE, REACHABLE, STALE and PROBE deadlines.
    active: Wheel,
    /// FAILED entries by the time they are forgotten, which is also their
    /// failure order: the first one is the one to evict under pressure.
    gc: Wheel,
}

impl Timers {
    /// Puts `new` in place of `e`'s phase and moves the entry's timers with it.
    /// Returns the old phase: the caller disposes of any packets it held.
    #[must_use]
    fn enter<T>(&mut self, key: Key, e: &mut Entry<T>, new: Phase<T>) -> Phase<T> {
        self.disarm(key, &e.phase);
        self.arm(key, &new);
        mem::replace(&mut e.phase, new)
    }

    fn arm<T>(&mut self, key: Key, p: &Phase<T>) {
        if let Some(at) = p.due() {
            self.active.insert(at, key);
        }
        if let Some(at) = p.forget_at() {
            self.gc.insert(at, key);
        }
    }

    fn disarm<T>(&mut self, key: Key, p: &Phase<T>) {
        if let Some(at) = p.due() {
            self.active.remove(at, key);
        }
        if let Some(at) = p.forget_at() {
            self.gc.remove(at, key);
        }
    }
}

/// The neighbour table of every port, for both families: a pure state
/// machine driven by [`hold`](Self::hold), [`learn`](Self::learn),
/// [`tick`](Self::tick) and the operator's calls, answering with
/// [`Action`]s.
///
/// Every packet handed in comes back in exactly one [`Action`] or stays held
/// ([`held`](Self::held)); dropping the table drops the held packets.
pub struct NeighTable<T> {
    cfg: NeighConfig,
    entries: BTreeMap<Key, Entry<T>>,
    timers: Timers,
    /// PERMANENT entries, which `max_entries` does not count.
    statics: usize,
    /// Packets in all hold queues.
    held: usize,
}

impl<T> NeighTable<T> {
    pub fn new(cfg: NeighConfig) -> Self {
        NeighTable {
            cfg,
            entries: BTreeMap::new(),
            timers: Timers {
                active: Wheel::new(),
                gc: Wheel::new(),
            },
            statics: 0,
            held: 0,
        }
    }

    /// Configures (`Some`) or removes (`None`) a PERMANENT entry.
    ///
    /// `Some` replaces whatever was learned for the key: held packets are
    /// released, after the [`Action::Resolved`] if the MAC is new. `None`
    /// removes a static entry ([`Action::Withdrawn`]) and leaves a learned one
    /// alone.
    pub fn set_static(
        &mut self,
        port: Port,
        ip: IpAddr,
        mac: Option<[u8; 6]>,
        out: &mut Vec<Action<T>>,
    ) {
        let key = (port, ip);
        let Some(mac) = mac else {
            if let Some(e) = self.entries.get(&key) {
                if let Phase::Permanent { .. } = e.phase {
                    self.entries.remove(&key);
                    self.statics -= 1;
                    out.push(Action::Withdrawn { port, ip });
                }
            }
            return;
        };
        let new = Phase::Permanent { mac };
        let Some(e) = self.entries.get_mut(&key) else {
            self.entries.insert(
                key,
                Entry {
                    phase: new,
                    since: 0,
                },
            );
            self.statics += 1;
            out.push(Action::Resolved { port, ip, mac });
            return;
        };
        let old = self.timers.enter(key, e, new);
        if !matches!(old, Phase::Permanent { .. }) {
            self.statics += 1;
        }
        if old.mac() != Some(mac) {
            out.push(Action::Resolved { port, ip, mac });
        }
        self.release(key, mac, old, out);
    }

    /// A packet whose next hop `(port, ip)` has no MAC in the published
    /// tables. A new key becomes INCOMPLETE and is probed at once. If the
    /// key has a MAC (the data path raced a publication), the packet is
    /// released at once.
    pub fn hold(&mut self, now_ms: u64, port: Port, ip: IpAddr, pkt: T, out: &mut Vec<Action<T>>) {
        let key = (port, ip);
        let now = now_ms;
        if !self.entries.contains_key(&key) && !self.make_room() {
            out.push(Action::Drop(pkt));
            return;
        }
        let e = match self.entries.entry(key) {
            btree_map::Entry::Occupied(o) => o.into_mut(),
            btree_map::Entry::Vacant(v) => {
                let phase = start_resolution(&self.cfg, now, key, out);
                self.timers.arm(key, &phase);
                v.insert(Entry { phase, since: now })
            }
        };
        if let Phase::Failed { hold_until, .. } = e.phase {
            if now < hold_until {
                out.push(Action::Drop(pkt));
                return;
            }
            let phase = start_resolution(&self.cfg, now, key, out);
            // FAILED holds no packet: there is nothing to dispose of.
            let _failed = self.timers.enter(key, e, phase);
            e.since = now;
        }
        if let Phase::Incomplete { held, .. } = &mut e.phase {
            enqueue(&self.cfg, &mut self.held, held, pkt, out);
            return;
        }
        match e.phase.mac() {
            Some(mac) => out.push(Action::Release {
                port,
                ip,
                mac,
                pkts: vec![pkt],
            }),
            // Not reached: every phase but INCOMPLETE and FAILED has a MAC,
            // and FAILED became INCOMPLETE above.
            None => out.push(Action::Drop(pkt)),
        }
    }

    /// A (IP, MAC) fact seen on `port`; what it may change depends on `how`
    /// (see [`Learn`]). PERMANENT entries ignore it.
    pub fn learn(
        &mut self,
        now_ms: u64,
        port: Port,
        ip: IpAddr,
        mac: [u8; 6],
        how: Learn,
        out: &mut Vec<Action<T>>,
    ) {
        let key = (port, ip);
        let now = now_ms;
        let c = &self.cfg;
        let reachable = Phase::Reachable {
            mac,
            due: now.saturating_add(c.reachable_ms),
        };
        let stale = Phase::Stale {
            mac,
            due: now.saturating_add(c.delay_ms),
        };
        let Some(e) = self.entries.get_mut(&key) else {
            if how == Learn::Unsolicited && self.make_room() {
                self.timers.arm(key, &stale);
                self.entries.insert(
                    key,
                    Entry {
                        phase: stale,
                        since: now,
                    },
                );
                out.push(Action::Resolved { port, ip, mac });
            }
            return;
        };
        let known = match e.phase {
            Phase::Permanent { .. } => return,
            ref p => p.mac(),
        };
        // Without a confirmation, the same MAC again is no news: Linux keeps
        // the state (and its timer) as it is.
        if how != Learn::Solicited && known == Some(mac) {
            return;
        }
        let new = if how == Learn::Solicited {
            reachable
        } else {
            stale
        };
        let old = self.timers.enter(key, e, new);
        e.since = now;
        if known != Some(mac) {
            out.push(Action::Resolved { port, ip, mac });
        }
        self.release(key, mac, old, out);
    }

    /// Runs every timer due at `now_ms`. One comparison when none is.
    ///
    /// Each expiry acts at `now_ms` and schedules the entry's next deadline
    /// from it: a late tick moves an entry one step (when the intervals are
    /// not zero), and never sends a burst of probes.
    pub fn tick(&mut self, now_ms: u64, out: &mut Vec<Action<T>>) {
        while let Some(key) = self.timers.active.pop_due(now_ms) {
            self.expire(now_ms, key, out);
        }
        while let Some(key) = self.timers.gc.pop_due(now_ms) {
            self.forget_failed(key);
        }
    }

    /// Removes every learned entry (statics stay): [`Action::Withdrawn`] for
    /// those that had a MAC, [`Action::Drop`] for held packets.
    pub fn flush(&mut self, out: &mut Vec<Action<T>>) {
        let keys = learned(self.entries.iter());
        self.remove_learned(keys, out);
    }

    /// Like [`flush`](Self::flush) for one port (link down, port gone).
    /// Statics stay: they are configuration, and apply again on link up.
    pub fn remove_port(&mut self, port: Port, out: &mut Vec<Action<T>>) {
        let ports = (port, IpAddr::V4(Ipv4Addr::UNSPECIFIED))
            ..=(port, IpAddr::V6(Ipv6Addr::from(u128::MAX)));
        let keys = learned(self.entries.range(ports));
        self.remove_learned(keys, out);
    }

    /// Every entry, sorted by `(port, ip)`.
    pub fn entries(&self, now_ms: u64) -> Vec<EntryView> {
        self.entries
            .iter()
            .map(|(&(port, ip), e)| {
                let (probes, held) = match &e.phase {
                    Phase::Incomplete { probes, held, .. } => (*probes, held.len()),
                    Phase::Probe { probes, .. } => (*probes, 0),
                    _ => (0, 0),
                };
                EntryView {
                    port,
                    ip,
                    state: e.phase.state(),
                    mac: e.phase.mac(),
                    age_ms: match e.phase {
                        Phase::Permanent { .. } => None,
                        _ => Some(now_ms.saturating_sub(e.since)),
                    },
                    probes,
                    held,
                }
            })
            .collect()
    }

    /// Packets held, all entries together.
    pub fn held(&self) -> usize {
        self.held
    }

    /// Entries, PERMANENT ones included.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Looks into the timer wheels by [`tick`](Self::tick) so far (each look
    /// is O(log n)); a tick with nothing due makes none.
    #[cfg(test)]
    pub(super) fn timer_looks(&self) -> u64 {
        self.timers.active.looks + self.timers.gc.looks
    }

    /// Whether one more learned entry fits, evicting the oldest FAILED entry
    /// if that is what it takes.
    fn make_room(&mut self) -> bool {
        if self.entries.len() - self.statics < self.cfg.max_entries {
            return true;
        }
        match self.timers.gc.set.pop_first() {
            Some((_, key)) => {
                self.forget_failed(key);
                true
            }
            None => false,
        }
    }

    /// Removes `key`, whose gc timer is gone, if it is FAILED (it always is:
    /// only FAILED entries are on the gc wheel). A FAILED entry has neither a
    /// MAC nor a packet: there is nothing to announce or give back.
    fn forget_failed(&mut self, key: Key) {
        if let Some(Entry {
            phase: Phase::Failed { .. },
            ..
        }) = self.entries.get(&key)
        {
            self.entries.remove(&key);
        }
    }

    /// Hands the packets `old` held to `mac`, if it held any.
    fn release(&mut self, key: Key, mac: Mac, old: Phase<T>, out: &mut Vec<Action<T>>) {
        if let Phase::Incomplete { held, .. } = old {
            if !held.is_empty() {
                self.held -= held.len();
                out.push(Action::Release {
                    port: key.0,
                    ip: key.1,
                    mac,
                    pkts: held.into(),
                });
            }
        }
    }

    /// The timer of `key` fired at `now`; its wheel entry is already gone.
    fn expire(&mut self, now: u64, key: Key, out: &mut Vec<Action<T>>) {
        let (port, ip) = key;
        let c = &self.cfg;
        let Some(e) = self.entries.get_mut(&key) else {
            return;
        };
        let failed = Phase::Failed {
            hold_until: now.saturating_add(c.failed_hold_ms),
            forget_at: now.saturating_add(c.gc_ms),
        };
        let retrans = now.saturating_add(c.retrans_ms);
        let new = match e.phase {
            Phase::Incomplete { probes, .. } if probes < c.mcast_probes => {
                out.push(Action::Probe {
                    port,
                    ip,
                    unicast: None,
                });
                if let Phase::Incomplete { probes, due, .. } = &mut e.phase {
                    *probes += 1;
                    *due = retrans;
                }
                self.timers.active.insert(retrans, key);
                return;
            }
            Phase::Incomplete { .. } => failed,
            Phase::Reachable { mac, .. } => Phase::Stale {
                mac,
                due: now.saturating_add(c.delay_ms),
            },
            Phase::Stale { mac, .. } => {
                let probes = u32::from(c.ucast_probes > 0);
                if probes > 0 {
                    out.push(Action::Probe {
                        port,
                        ip,
                        unicast: Some(mac),
                    });
                }
                Phase::Probe {
                    mac,
                    probes,
                    due: retrans,
                }
            }
            Phase::Probe { mac, probes, .. } if probes < c.ucast_probes => {
                out.push(Action::Probe {
                    port,
                    ip,
                    unicast: Some(mac),
                });
                Phase::Probe {
                    mac,
                    probes: probes + 1,
                    due: retrans,
                }
            }
            Phase::Probe { .. } => {
                out.push(Action::Withdrawn { port, ip });
                failed
            }
            Phase::Failed { .. } | Phase::Permanent { .. } => return,
        };
        if let Phase::Failed { .. } = new {
            e.since = now;
        }
        match self.timers.enter(key, e, new) {
            Phase::Incomplete { held, .. } if !held.is_empty() => {
                self.held -= held.len();
                out.push(Action::Unreachable {
                    port,
                    ip,
                    pkts: held.into(),
                });
            }
            _ => {}
        }
    }

    /// Removes the entries of `keys`, which are all learned ones.
    fn remove_learned(&mut self, keys: Vec<Key>, out: &mut Vec<Action<T>>) {
        for key in keys {
            let Some(e) = self.entries.remove(&key) else {
                continue;
            };
            self.timers.disarm(key, &e.phase);
            match e.phase {
                Phase::Incomplete { held, .. } => {
                    self.held -= held.len();
                    out.extend(held.into_iter().map(Action::Drop));
                }
                Phase::Reachable { .. } | Phase::Stale { .. } | Phase::Probe { .. } => {
                    out.push(Action::Withdrawn {
                        port: key.0,
                        ip: key.1,
                    });
                }
                Phase::Failed { .. } | Phase::Permanent { .. } => {}
            }
        }
    }
}

/// Adds `pkt` to an INCOMPLETE entry's queue within both bounds. When either
/// is reached, the entry's oldest packet makes room (fresher packets are the
/// ones worth sending); an entry with none to give drops `pkt` itself.
fn enqueue<T>(
    c: &NeighConfig,
    total: &mut usize,
    q: &mut VecDeque<T>,
    pkt: T,
    out: &mut Vec<Action<T>>,
) {
    if q.len() >= c.queue_len || *total >= c.max_held {
        match q.pop_front() {
            Some(oldest) => {
                out.push(Action::Drop(oldest));
                q.push_back(pkt);
            }
            None => out.push(Action::Drop(pkt)),
        }
    } else {
        q.push_back(pkt);
        *total += 1;
    }
}

/// The keys of the entries that are not PERMANENT.
fn learned<'a, T: 'a>(entries: impl Iterator<Item = (&'a Key, &'a Entry<T>)>) -> Vec<Key> {
    entries
        .filter(|(_, e)| !matches!(e.phase, Phase::Permanent { .. }))
        .map(|(k, _)| *k)
        .collect()
}

/// A new INCOMPLETE phase with its first probe sent; the caller arms it.
fn start_resolution<T>(
    c: &NeighConfig,
    now: u64,
    (port, ip): Key,
    out: &mut Vec<Action<T>>,
) -> Phase<T> {
    let probes = u32::from(c.mcast_probes > 0);
    if probes > 0 {
        out.push(Action::Probe {
            port,
            ip,
            unicast: None,
        });
    }
    Phase::Incomplete {
        probes,
        due: now.saturating_add(c.retrans_ms),
        held: VecDeque::new(),
    }
}
