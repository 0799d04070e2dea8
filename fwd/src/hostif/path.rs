//! The host thread: moves packets between the ports and their kernel
//! interfaces.
//!
//! - worker → kernel: each worker hands the packets it punts (already
//!   policed per port) over its own bounded queue ([`Channel::push_host`]);
//!   this thread writes each to its port's TAP and frees the mbuf.
//! - kernel → port: what the kernel sends on a TAP (BGP's segments, its
//!   ARP requests and neighbour solicitations, MLD reports) is copied into
//!   an mbuf and given to a worker through the same queue the control side
//!   uses to send ([`Channel::push_down`]); the worker sends it on its own
//!   TX queue of the port. No TX queue is shared, no worker makes a syscall.
//! - every [`SYNC_INTERVAL`] it compares the published ports with what the
//!   kernel interfaces carry, and makes the addresses, MTU and carrier
//!   match (the data path's addresses are the truth; an address added by
//!   hand on the kernel side is removed).
//!
//! It sleeps in `poll()` on the TAPs when nothing moved in a turn, at most
//! [`IDLE_WAIT`]: punted packets wait that long at worst (a worker's push
//! cannot wake it without a syscall). A busy turn loops at once.

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::rtnl::Rtnl;
use super::tap::{wait_readable, Tap};
use crate::dpdk::mempool::Mempool;
use crate::punt::{Channel, ToPort};
use crate::tables::{PortInfo, Tables};

/// Longest sleep of an idle turn.
pub const IDLE_WAIT: Duration = Duration::from_millis(1);
/// How often kernel interfaces are brought in line with the ports.
pub const SYNC_INTERVAL: Duration = Duration::from_millis(200);
/// Packets moved per queue or interface per turn.
const TURN: usize = 256;

/// What the host thread did, for `fwdctl stats`.
#[derive(Debug, Default)]
pub struct HostCounters {
    /// Frames written to kernel interfaces.
    pub to_kernel: AtomicU64,
    /// Frames the kernel sent, handed to a worker.
    pub from_kernel: AtomicU64,
    /// Punted frames the kernel would not take (its queue was full).
    pub kernel_busy: AtomicU64,
    /// Kernel frames dropped: no mbuf, or every worker's queue full.
    pub to_port_dropped: AtomicU64,
    /// Failed reads, writes or interface updates.
    pub errors: AtomicU64,
}

impl HostCounters {
    /// `(name, value)` pairs.
    pub fn named(&self) -> [(&'static str, u64); 5] {
        // Relaxed: independent monotonic counters.
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        [
            ("host_to_kernel", g(&self.to_kernel)),
            ("host_from_kernel", g(&self.from_kernel)),
            ("host_kernel_busy", g(&self.kernel_busy)),
            ("host_to_port_dropped", g(&self.to_port_dropped)),
            ("host_errors", g(&self.errors)),
        ]
    }
}

fn inc(c: &AtomicU64, n: u64) {
    // Relaxed: a statistic; one writer (this thread).
    c.fetch_add(n, Ordering::Relaxed);
}

/// Everything the host thread works with.
pub struct HostPath {
    /// One per port, indexed like the ports.
    pub taps: Vec<Tap>,
    pub channels: Vec<Arc<Channel>>,
    pub pool: Arc<Mempool>,
    pub counters: Arc<HostCounters>,
    /// The published tables (`None` once the control lcore has stopped).
    pub snapshot: Box<dyn Fn() -> Option<TablesCopy> + Send>,
}

/// A copy of the published tables, as the control side hands it out (its
/// drop may give it back there rather than free it here).
pub type TablesCopy = Box<dyn std::ops::Deref<Target = Tables> + Send>;

/// The running thread (stopped and joined when dropped).
pub type HostThread = crate::thread::StoppableThread;

impl HostPath {
    /// The kernel interfaces' indexes, to ports (for FPM).
    pub fn ifindexes(&self) -> std::collections::HashMap<u32, u16> {
        self.taps
            .iter()
            .enumerate()
            .map(|(i, t)| (t.ifindex(), i as u16))
            .collect()
    }

    /// Starts the thread (after a first sync of the interfaces).
    ///
    /// # Errors
    /// When the netlink socket cannot be opened or the thread spawned.
    pub fn start(self) -> std::io::Result<HostThread> {
        let rtnl = Rtnl::open().map_err(std::io::Error::other)?;
        HostThread::spawn("fwd-host", move |stop| self.run(rtnl, stop))
    }

    fn run(mut self, mut rtnl: Rtnl, stop: &AtomicBool) {
        let mut buf = vec![0u8; 65536];
        let mut seen: Option<Arc<[PortInfo]>> = None;
        let mut last_sync: Option<Instant> = None;
        let mut next_worker = 0usize;
        // Relaxed: see `StoppableThread::drop`.
        while !stop.load(Ordering::Relaxed) {
            if last_sync.is_none_or(|t| t.elapsed() >= SYNC_INTERVAL) {
                last_sync = Some(Instant::now());
                match (self.snapshot)() {
                    Some(t) => self.sync(&t, &mut seen, &mut rtnl),
                    None => return,
                }
            }
            let mut moved = self.deliver_punted();
            moved += self.forward_kernel_frames(&mut buf, &mut next_worker);
            if moved == 0 {
                let taps: Vec<&Tap> = self.taps.iter().collect();
                if wait_readable(&taps, IDLE_WAIT).is_err() {
                    std::thread::sleep(IDLE_WAIT);
                }
            }
        }
    }

    /// Writes punted packets to their kernel interfaces.
    fn deliver_punted(&mut self) -> usize {
        let mut moved = 0;
        for ch in &self.channels {
            for _ in 0..TURN {
                let Some(p) = ch.pop_host() else {
                    break;
                };
                moved += 1;
                let Some(tap) = self.taps.get(usize::from(p.port)) else {
                    inc(&self.counters.errors, 1);
                    continue;
                };
                match tap.send(p.mbuf.data()) {
                    Ok(true) => inc(&self.counters.to_kernel, 1),
                    Ok(false) => inc(&self.counters.kernel_busy, 1),
                    Err(_) => inc(&self.counters.errors, 1),
                }
            }
        }
        moved
    }

    /// Reads what the kernel sends and hands it to the workers.
    fn forward_kernel_frames(&mut self, buf: &mut [u8], next_worker: &mut usize) -> usize {
        let mut moved = 0;
        let n = self.channels.len().max(1);
        for (pi, tap) in self.taps.iter().enumerate() {
            for _ in 0..TURN {
                let len = match tap.recv(buf) {
                    Ok(Some(len)) => len,
                    Ok(None) => break,
                    Err(_) => {
                        inc(&self.counters.errors, 1);
                        break;
                    }
                };
                moved += 1;
                let Some(mut m) = self.pool.alloc() else {
                    inc(&self.counters.to_port_dropped, 1);
                    continue;
                };
                if !m.append(&buf[..len]) {
                    inc(&self.counters.to_port_dropped, 1);
                    continue;
                }
                let mut out = ToPort {
                    port: pi as u16,
                    mbuf: m,
                };
                // Round robin over the workers; a full queue passes the
                // frame to the next.
                let mut sent = false;
                for k in 0..n {
                    let w = (*next_worker + k) % n;
                    match self.channels[w].push_down(out) {
                        Ok(()) => {
                            sent = true;
                            *next_worker = (w + 1) % n;
                            break;
                        }
                        Err(back) => out = back,
                    }
                }
                if sent {
                    inc(&self.counters.from_kernel, 1);
                } else {
                    inc(&self.counters.to_port_dropped, 1);
                }
            }
        }
        moved
    }

    /// Brings the kernel interfaces in line with the published ports.
    fn sync(&mut self, t: &Tables, seen: &mut Option<Arc<[PortInfo]>>, rtnl: &mut Rtnl) {
        if seen.as_ref().is_some_and(|s| Arc::ptr_eq(s, &t.ports)) {
            return;
        }
        let before = seen.replace(Arc::clone(&t.ports));
        for (i, (tap, pi)) in self.taps.iter().zip(t.ports.iter()).enumerate() {
            let old = before.as_ref().and_then(|b| b.get(i));
            if old.is_some_and(|o| o.addresses == pi.addresses) {
                // Addresses unchanged.
            } else {
                let want: Vec<(IpAddr, u8)> = pi
                    .addresses
                    .iter()
                    .map(|a| (a.addr(), a.prefix_len()))
                    .collect();
                if let Err(e) = rtnl.sync_addresses(tap.ifindex(), &want) {
                    inc(&self.counters.errors, 1);
                    eprintln!("fwd: host interface {}: addresses: {e}", tap.name());
                }
            }
            if old.is_none_or(|o| o.mtu != pi.mtu) && tap.set_mtu(pi.mtu).is_err() {
                inc(&self.counters.errors, 1);
            }
            if old.is_none_or(|o| o.is_up() != pi.is_up()) && tap.set_carrier(pi.is_up()).is_err() {
                inc(&self.counters.errors, 1);
            }
        }
    }
}
