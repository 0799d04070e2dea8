//! Drives the neighbour table ([`crate::neigh`]) from the control lcore.
//!
//! Each turn of the control loop:
//! 1. [`NeighDriver::poll`] drains every worker's up queue (packets waiting
//!    for a MAC, ARP / ND messages), runs the table's timers, sends the
//!    probes it asks for, and returns the MAC changes to publish;
//! 2. the control loop publishes them as one table generation
//!    ([`super::state::apply_learned`]);
//! 3. [`NeighDriver::after_publish`] sends the held packets that became
//!    sendable, rewritten for their next hop, and answers those whose
//!    resolution failed with ICMP "host unreachable".
//!
//! Every frame goes out through a worker's down queue ([`crate::punt`]).
//! Only neighbours inside one of the receiving port's connected subnets,
//! or IPv6 link-local ones, are learned: a host on one LAN cannot fill the
//! table with addresses that belong elsewhere.

use std::net::{IpAddr, Ipv6Addr};
use std::sync::Arc;
use std::time::Instant;

use crate::dpdk::mbuf::Mbuf;
use crate::dpdk::mempool::Mempool;
use crate::neigh::{Action, EntryView, Learn, NeighConfig, NeighTable};
use crate::pkt::{self, IcmpError, NeighMsg};
use crate::punt::{Channel, ToControl, ToPort};
use crate::tables::{PortInfo, Tables};
use crate::worker::local::{self, TokenBucket};

use super::ra::Advertiser;

/// A packet held while its neighbour resolves.
pub struct Held {
    /// The worker it came from (its queue takes it back).
    worker: usize,
    in_port: u16,
    mbuf: Mbuf,
}

/// What the neighbour side did, for `fwdctl stats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NeighCounters {
    pub probes: u64,
    pub released: u64,
    /// Held packets dropped: queue or table full, failed hold-down, or the
    /// worker's queue full on release.
    pub dropped: u64,
    pub unreachable_sent: u64,
    pub learned: u64,
    pub router_advertisements: u64,
}

/// A MAC change to publish: `(port, ip, mac)`, `None` withdraws.
pub type Update = (u16, IpAddr, Option<[u8; 6]>);

/// The control side of neighbour resolution.
pub struct NeighDriver {
    table: NeighTable<Held>,
    channels: Vec<Arc<Channel>>,
    pool: Arc<Mempool>,
    actions: Vec<Action<Held>>,
    /// Releases and failures waiting for the publish of their MAC change.
    after: Vec<Action<Held>>,
    statics: imbl::OrdMap<(u16, IpAddr), [u8; 6]>,
    limiter: TokenBucket,
    started: Instant,
    next_worker: usize,
    ra: Advertiser,
    pub counters: NeighCounters,
}

impl NeighDriver {
    pub fn new(
        cfg: NeighConfig,
        channels: Vec<Arc<Channel>>,
        pool: Arc<Mempool>,
        ra: Advertiser,
    ) -> NeighDriver {
        NeighDriver {
            table: NeighTable::new(cfg),
            channels,
            pool,
            actions: Vec::new(),
            after: Vec::new(),
            statics: imbl::OrdMap::new(),
            limiter: TokenBucket::new(1000, 50),
            started: Instant::now(),
            next_worker: 0,
            ra,
            counters: NeighCounters::default(),
        }
    }

    fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// Mirrors the static neighbours of `t` into the table (they are
    /// permanent entries there and override learned ones).
    pub fn sync_statics(&mut self, t: &Tables) {
        // The same map as last turn unless a batch changed a static entry
        // (the maps are persistent: a batch that did not copies a pointer);
        // otherwise the walk below does only what changed.
        if self.statics.ptr_eq(&t.mgmt.neighbours) {
            return;
        }
        let old = std::mem::replace(&mut self.statics, t.mgmt.neighbours.clone());
        for (&(port, ip), _) in old.iter().filter(|(k, _)| !self.statics.contains_key(*k)) {
            self.table.set_static(port, ip, None, &mut self.actions);
        }
        for (&(port, ip), &mac) in &self.statics {
            if old.get(&(port, ip)) != Some(&mac) {
                self.table
                    .set_static(port, ip, Some(mac), &mut self.actions);
            }
        }
    }

    /// Drains the workers' queues and the timers; sends probes; returns
    /// the MAC changes to publish before [`Self::after_publish`].
    pub fn poll(&mut self, t: &Tables) -> Vec<Update> {
        let now = self.now_ms();
        for w in 0..self.channels.len() {
            // Bounded per turn so a flood cannot keep the control lcore here.
            for _ in 0..1024 {
                let Some(m) = self.channels[w].pop_up() else {
                    break;
                };
                match m {
                    ToControl::Hold {
                        in_port,
                        port,
                        addr,
                        mbuf,
                    } => {
                        let held = Held {
                            worker: w,
                            in_port,
                            mbuf,
                        };
                        self.table.hold(now, port, addr, held, &mut self.actions);
                    }
                    ToControl::Neigh { port, msg } => self.learn(t, now, port, msg),
                }
            }
        }
        self.table.tick(now, &mut self.actions);
        for port in self.ra.due(now) {
            self.advertise(t, port);
        }
        let mut updates = Vec::new();
        for a in std::mem::take(&mut self.actions) {
            match a {
                Action::Probe { port, ip, unicast } => self.probe(t, port, ip, unicast),
                Action::Resolved { port, ip, mac } => {
                    self.counters.learned += 1;
                    updates.push((port, ip, Some(mac)));
                }
                Action::Withdrawn { port, ip } => updates.push((port, ip, None)),
                Action::Drop(h) => {
                    self.counters.dropped += 1;
                    drop(h);
                }
                a @ (Action::Release { .. } | Action::Unreachable { .. }) => self.after.push(a),
            }
        }
        // Statics never reach the published `learned` map (state.rs skips
        // them), so their Resolved is harmless.
        updates
    }

    /// Sends what waited for the last publish.
    pub fn after_publish(&mut self, t: &Tables) {
        for a in std::mem::take(&mut self.after) {
            match a {
                Action::Release {
                    port, mac, pkts, ..
                } => {
                    for h in pkts {
                        self.release(t, port, mac, h);
                    }
                }
                Action::Unreachable { pkts, .. } => {
                    for h in pkts {
                        self.unreachable(t, h);
                    }
                }
                _ => {}
            }
        }
    }

    fn learn(&mut self, t: &Tables, now: u64, port: u16, msg: NeighMsg) {
        let (ip, mac, how) = match msg {
            NeighMsg::ArpRequest {
                sender_ip,
                sender_mac,
                target_ip,
            }
            | NeighMsg::ArpReply {
                sender_ip,
                sender_mac,
                target_ip,
            } => {
                // A request to us: the sender spoke first; a reply to us:
                // the answer to our probe; sender = target: an announcement.
                let how = match msg {
                    _ if sender_ip == target_ip => Learn::Gratuitous,
                    NeighMsg::ArpReply { .. } => Learn::Solicited,
                    _ => Learn::Unsolicited,
                };
                (IpAddr::V4(sender_ip), sender_mac, how)
            }
            NeighMsg::Solicitation {
                src, sll: Some(m), ..
            } => (IpAddr::V6(src), m, Learn::Unsolicited),
            NeighMsg::Advertisement {
                target,
                tll: Some(m),
                solicited,
                ..
            } => {
                let how = if solicited {
                    Learn::Solicited
                } else {
                    Learn::Gratuitous
                };
                (IpAddr::V6(target), m, how)
            }
            NeighMsg::RouterSolicitation { .. } => {
                self.ra.solicited(usize::from(port));
                return;
            }
            _ => return,
        };
        let Some(pi) = t.port(usize::from(port)) else {
            return;
        };
        if !on_link(pi, ip) || mac == [0; 6] || mac[0] & 1 != 0 {
            return;
        }
        self.table.learn(now, port, ip, mac, how, &mut self.actions);
    }

    /// Sends an ARP request or neighbour solicitation for `ip` out of `port`.
    fn probe(&mut self, t: &Tables, port: u16, ip: IpAddr, unicast: Option<[u8; 6]>) {
        let Some(pi) = t.port(usize::from(port)) else {
            return;
        };
        if !pi.is_up() {
            return;
        }
        let mut buf = [0u8; 128];
        let len = match ip {
            IpAddr::V4(target) => match pi.source_v4(target) {
                Some(src) => pkt::build_arp_request(&mut buf, pi.mac, src, target, unicast),
                None => None,
            },
            IpAddr::V6(target) => {
                let src = if is_link_local(target) {
                    Ipv6Addr::from(pi.link_local)
                } else {
                    pi.source_v6(target)
                };
                pkt::build_ns(&mut buf, pi.mac, src, target, unicast)
            }
        };
        let Some(len) = len else {
            return;
        };
        let w = self.next_worker;
        self.next_worker = (self.next_worker + 1) % self.channels.len().max(1);
        if self.send(w, port, &buf[..len]) {
            self.counters.probes += 1;
        }
    }

    /// Sends port `port`'s router advertisement.
    fn advertise(&mut self, t: &Tables, port: usize) {
        let Some(pi) = t.port(port).filter(|p| p.is_up()) else {
            return;
        };
        let mut buf = [0u8; 1024];
        let Some(len) = self.ra.frame(port, pi, &mut buf) else {
            return;
        };
        let w = self.next_worker;
        self.next_worker = (self.next_worker + 1) % self.channels.len().max(1);
        if self.send(w, port as u16, &buf[..len]) {
            self.counters.router_advertisements += 1;
        }
    }

    /// A copy of `bytes` out of `port` through worker `w`.
    fn send(&self, w: usize, port: u16, bytes: &[u8]) -> bool {
        let (Some(ch), Some(mut m)) = (self.channels.get(w), self.pool.alloc()) else {
            return false;
        };
        if !m.append(bytes) {
            return false;
        }
        ch.push_down(ToPort { port, mbuf: m }).is_ok()
    }

    /// Rewrites a held packet for its now-known next hop and sends it.
    fn release(&mut self, t: &Tables, port: u16, mac: [u8; 6], mut h: Held) {
        let ok = t.port(usize::from(port)).is_some_and(|pi| {
            pkt::parse(h.mbuf.data()).is_ok_and(|p| {
                p.l3_len <= pi.mtu
                    && pkt::forward_rewrite(h.mbuf.data_mut(), &p, mac, pi.mac).is_ok()
            })
        });
        let sent = ok
            && self
                .channels
                .get(h.worker)
                .is_some_and(|ch| ch.push_down(ToPort { port, mbuf: h.mbuf }).is_ok());
        if sent {
            self.counters.released += 1;
        } else {
            self.counters.dropped += 1;
        }
    }

    /// Answers a packet whose neighbour never answered with ICMP "host
    /// unreachable" (RFC 1812 4.3.3.1) out of the port it came in on.
    fn unreachable(&mut self, t: &Tables, h: Held) {
        self.counters.dropped += 1;
        let Some(pi) = t.port(usize::from(h.in_port)) else {
            return;
        };
        let Ok(p) = pkt::parse(h.mbuf.data()) else {
            return;
        };
        let mut buf = [0u8; pkt::MAX_ERROR_FRAME];
        let now_ns = self.started.elapsed().as_nanos() as u64;
        let err = IcmpError::HostUnreachable;
        let built = local::error_frame(
            &mut buf,
            h.mbuf.data(),
            &p,
            err,
            pi,
            &mut self.limiter,
            now_ns,
        );
        if let Ok(len) = built {
            if self.send(h.worker, h.in_port, &buf[..len]) {
                self.counters.unreachable_sent += 1;
            }
        }
    }

    /// Forgets every learned entry (statics stay); returns the withdrawals
    /// to publish.
    pub fn flush(&mut self, port: Option<u16>) -> Vec<Update> {
        match port {
            Some(p) => self.table.remove_port(p, &mut self.actions),
            None => self.table.flush(&mut self.actions),
        }
        let mut updates = Vec::new();
        for a in std::mem::take(&mut self.actions) {
            match a {
                Action::Withdrawn { port, ip } => updates.push((port, ip, None)),
                Action::Drop(h) => {
                    self.counters.dropped += 1;
                    drop(h);
                }
                a @ (Action::Release { .. } | Action::Unreachable { .. }) => self.after.push(a),
                _ => {}
            }
        }
        updates
    }

    /// The table for `neigh show`.
    pub fn entries(&self) -> Vec<EntryView> {
        self.table.entries(self.now_ms())
    }

    /// Packets held now.
    pub fn held(&self) -> usize {
        self.table.held()
    }
}

fn is_link_local(a: Ipv6Addr) -> bool {
    a.segments()[0] & 0xffc0 == 0xfe80
}

/// Whether `ip` may be a neighbour on `port`: inside one of its connected
/// subnets, or IPv6 link-local.
fn on_link(port: &PortInfo, ip: IpAddr) -> bool {
    if let IpAddr::V6(a) = ip {
        if is_link_local(a) {
            return true;
        }
    }
    port.addresses
        .iter()
        .any(|n| n.has_peers() && n.contains(ip) && n.addr() != ip)
}
