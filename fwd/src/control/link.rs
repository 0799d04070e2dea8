//! Port carrier, watched from the control lcore, and the event log that
//! `fwdctl watch` streams.
//!
//! The control lcore reads every port's carrier from its driver every
//! [`LINK_POLL`] (a non-blocking `rte_eth_link_get_nowait`; no interrupt
//! thread). A change is published as a new table version in which the
//! port's next hops leave (or rejoin) every ECMP group, so a dead member
//! loses its flows within one poll, well under a second. Where the driver
//! cannot know the carrier (a `net_tap` whose interface lives in another
//! network namespace, see [`crate::dpdk::port::carrier`]) the port counts
//! as up: a healthy port is never withdrawn on a guess.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How often carriers are read.
pub const LINK_POLL: Duration = Duration::from_millis(200);

/// What the control lcore needs to read one port's carrier.
#[derive(Clone, Debug)]
pub struct LinkSource {
    pub dpdk_id: u16,
    /// The kernel interface of a `net_tap` port.
    pub tap_iface: Option<String>,
}

/// Reads one port's carrier; `None` when it cannot be known.
pub type CarrierReader = Box<dyn Fn(&LinkSource) -> Option<bool> + Send>;

/// Reads carriers on a timer.
pub struct LinkMonitor {
    sources: Vec<LinkSource>,
    read: CarrierReader,
    last_poll: Option<Instant>,
}

impl LinkMonitor {
    /// `read` returns a port's carrier, `None` when it cannot be known.
    pub fn new(sources: Vec<LinkSource>, read: CarrierReader) -> LinkMonitor {
        LinkMonitor {
            sources,
            read,
            last_poll: None,
        }
    }

    /// When due, every port's carrier (unknown counts as up).
    pub fn poll(&mut self, now: Instant) -> Option<Vec<bool>> {
        if self
            .last_poll
            .is_some_and(|t| now.duration_since(t) < LINK_POLL)
        {
            return None;
        }
        self.last_poll = Some(now);
        Some(
            self.sources
                .iter()
                .map(|s| (self.read)(s).unwrap_or(true))
                .collect(),
        )
    }
}

/// One logged event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoggedEvent {
    pub seq: u64,
    pub uptime_ms: u64,
    pub message: String,
}

/// The last events (bounded), for `fwdctl watch`; also printed on stderr.
#[derive(Debug)]
pub struct EventLog {
    inner: Mutex<(u64, VecDeque<LoggedEvent>)>,
    started: Instant,
}

/// Events kept for late readers.
const KEEP: usize = 256;

impl EventLog {
    pub fn new() -> Arc<EventLog> {
        Arc::new(EventLog {
            inner: Mutex::new((0, VecDeque::new())),
            started: Instant::now(),
        })
    }

    /// Records (and prints) an event.
    pub fn push(&self, message: String) {
        eprintln!("fwd: {message}");
        let uptime_ms = self.started.elapsed().as_millis() as u64;
        let mut g = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        g.0 += 1;
        let seq = g.0;
        g.1.push_back(LoggedEvent {
            seq,
            uptime_ms,
            message,
        });
        while g.1.len() > KEEP {
            g.1.pop_front();
        }
    }

    /// Events after sequence number `after`, and the latest number.
    pub fn since(&self, after: u64) -> (Vec<LoggedEvent>, u64) {
        let g = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        (g.1.iter().filter(|e| e.seq > after).cloned().collect(), g.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU8, Ordering};

    #[test]
    fn polls_on_its_period_and_unknown_counts_as_up() {
        let state = Arc::new(AtomicU8::new(0));
        let s2 = Arc::clone(&state);
        let mut m = LinkMonitor::new(
            vec![
                LinkSource {
                    dpdk_id: 0,
                    tap_iface: None,
                },
                LinkSource {
                    dpdk_id: 1,
                    tap_iface: Some("x".into()),
                },
            ],
            Box::new(move |s| match (s.dpdk_id, s2.load(Ordering::Relaxed)) {
                (1, _) => None,
                (_, v) => Some(v == 1),
            }),
        );
        let t0 = Instant::now();
        assert_eq!(m.poll(t0), Some(vec![false, true]));
        state.store(1, Ordering::Relaxed);
        assert_eq!(m.poll(t0 + LINK_POLL / 2), None, "not due yet");
        assert_eq!(m.poll(t0 + LINK_POLL), Some(vec![true, true]));
    }

    #[test]
    fn the_log_is_bounded_and_resumable() {
        let log = EventLog::new();
        for i in 0..300 {
            log.push(format!("e{i}"));
        }
        let (all, last) = log.since(0);
        assert_eq!(last, 300);
        assert_eq!(all.len(), KEEP);
        assert_eq!(all.last().map(|e| e.message.as_str()), Some("e299"));
        let (none, _) = log.since(last);
        assert!(none.is_empty());
    }
}
