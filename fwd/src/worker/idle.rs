//! When an idle worker sleeps, and for how long (`datapath.idle_sleep_us`).
//!
//! A poll-mode worker that finds its queues empty spins at 100% of its
//! CPU. On a box whose cores are shared (a routing daemon beside the
//! appliance on a small machine, a VM), that spinning takes the CPU the
//! rest needs: on the 2-vCPU development VMs, FRR took 1.47x as long to
//! bring a full BGP view into the appliance as into the kernel with the
//! worker always polling, 1.25x with it sleeping up to 50 us, 1.11x up to
//! 1 ms, which is the cost of zebra's FPM output itself
//! (`bench-results/fpm.md`, `bench-results/idle.md`). So a worker
//! whose last [`Idle::EMPTY_POLLS`] polls found nothing (no packet
//! received, nothing from the control side) sleeps between polls: 1 us
//! first, each further sleep twice the last, up to the configured
//! longest; the first poll that finds work ends it, and the next idle
//! stretch starts from 1 us again. Each sleep is at most about as long as
//! the idle time before it, so the latency it adds to the packet that ends
//! it is bounded by the configured longest and small against the gap the
//! traffic left. Under load the worker never sleeps, and the loop does not
//! touch this state: only a poll that received nothing calls
//! [`Idle::empty_poll`], which sees from the worker's count of busy polls
//! whether one received since its last call.
//!
//! While it sleeps the worker is offline for the versioning
//! ([`crate::qsbr::Reader::offline`]): it holds no reclamation back, and
//! its next snapshot brings it online. Its TX buffers are flushed first,
//! so nothing waits out the sleep in them.
//!
//! grout's workers sleep when idle too, by default (their sleep grows by
//! 1 us at each check of 256 empty loops, up to a bound; `--poll-mode`
//! turns it off); VPP's workers poll unless an interface is set to
//! interrupt or adaptive mode; `0` here is that: always poll.

use std::time::Duration;

/// The sleep policy of one worker; pure, the loop does the sleeping.
#[derive(Debug, Clone)]
pub struct Idle {
    /// The longest sleep, in nanoseconds; 0: never sleep.
    max_ns: u64,
    /// Polls in a row that found no work (saturating).
    empty: u32,
    /// The worker's count of polls that received, at the last empty poll:
    /// one that received since ends the idle stretch.
    busy_seen: u64,
    /// The next sleep, in nanoseconds.
    next_ns: u64,
}

impl Idle {
    /// Empty polls in a row before the first sleep: a worker between two
    /// bursts of traffic (a few microseconds of empty polls) never sleeps.
    pub const EMPTY_POLLS: u32 = 256;
    /// The first sleep of an idle stretch.
    pub const FIRST_NS: u64 = 1_000;

    /// A worker that sleeps at most `max` at a time (zero: never).
    pub fn new(max: Duration) -> Idle {
        let max_ns = u64::try_from(max.as_nanos()).unwrap_or(u64::MAX);
        Idle {
            max_ns,
            empty: 0,
            busy_seen: 0,
            next_ns: Self::FIRST_NS.min(max_ns),
        }
    }

    /// [`Idle::new`] for the calling worker thread, whose timer slack it
    /// tightens when it will sleep (see [`tighten_timer_slack`]).
    #[cold]
    #[inline(never)]
    pub fn start(max: Duration) -> Idle {
        let idle = Idle::new(max);
        if idle.enabled() {
            tighten_timer_slack();
        }
        idle
    }

    /// Whether this worker ever sleeps.
    pub fn enabled(&self) -> bool {
        self.max_ns > 0
    }

    /// A turn of the poll loop that received nothing but sent what the
    /// control side queued: work all the same.
    #[inline(always)]
    pub fn worked(&mut self) {
        self.empty = 0;
    }

    /// A turn of the poll loop that found nothing to do, `busy_polls` being
    /// the worker's count of the polls that received (so that a poll that
    /// received needs no call here: under load the loop never touches
    /// this): how long to sleep now (`None`: poll again at once).
    #[inline(always)]
    pub fn empty_poll(&mut self, busy_polls: u64) -> Option<Duration> {
        if self.max_ns == 0 {
            return None;
        }
        if busy_polls != self.busy_seen {
            self.busy_seen = busy_polls;
            self.empty = 0;
        }
        self.empty = self.empty.saturating_add(1);
        if self.empty < Self::EMPTY_POLLS {
            return None;
        }
        if self.empty == Self::EMPTY_POLLS {
            // A new idle stretch.
            self.next_ns = Self::FIRST_NS.min(self.max_ns);
        }
        let d = self.next_ns;
        self.next_ns = d.saturating_mul(2).min(self.max_ns);
        Some(Duration::from_nanos(d))
    }
}

/// Makes this thread's timed sleeps end within about a microsecond of
/// their time (Linux's default timer slack is 50 us, which would turn
/// every short sleep into one of 50 us). Best effort: a failure leaves
/// the default, which only makes the sleeps longer.
pub fn tighten_timer_slack() {
    let _ = nix::sys::prctl::set_timerslack(1_000);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(n: u64) -> Option<Duration> {
        Some(Duration::from_micros(n))
    }

    /// The sleeps of `polls` empty polls in a row (no poll received since
    /// the last call).
    fn sleeps(idle: &mut Idle, polls: usize) -> Vec<Option<Duration>> {
        let busy = idle.busy_seen;
        (0..polls).map(|_| idle.empty_poll(busy)).collect()
    }

    #[test]
    fn an_idle_worker_sleeps_after_its_empty_polls_growing_to_the_longest() {
        let mut idle = Idle::new(Duration::from_micros(50));
        assert!(idle.enabled());
        let first = sleeps(&mut idle, Idle::EMPTY_POLLS as usize - 1);
        assert!(first.iter().all(Option::is_none));
        let then = sleeps(&mut idle, 9);
        assert_eq!(
            then,
            [
                us(1),
                us(2),
                us(4),
                us(8),
                us(16),
                us(32),
                us(50),
                us(50),
                us(50)
            ]
        );
    }

    #[test]
    fn work_ends_the_sleeping_and_the_next_stretch_starts_over() {
        let mut idle = Idle::new(Duration::from_micros(50));
        sleeps(&mut idle, Idle::EMPTY_POLLS as usize + 20);
        assert_eq!(idle.empty_poll(idle.busy_seen), us(50));
        idle.worked();
        // Empty polls again: none sleeps before the count is full again.
        let again = sleeps(&mut idle, Idle::EMPTY_POLLS as usize);
        assert!(again[..Idle::EMPTY_POLLS as usize - 1]
            .iter()
            .all(Option::is_none));
        assert_eq!(again.last(), Some(&us(1)));
        // Work in the middle of a count starts it over.
        sleeps(&mut idle, 3);
        idle.worked();
        assert!(sleeps(&mut idle, Idle::EMPTY_POLLS as usize - 1)
            .iter()
            .all(Option::is_none));
    }

    #[test]
    fn a_poll_that_received_ends_the_stretch_without_a_call_of_its_own() {
        let mut idle = Idle::new(Duration::from_micros(50));
        assert_eq!(
            sleeps(&mut idle, Idle::EMPTY_POLLS as usize + 5).last(),
            Some(&us(32))
        );
        // The loop received once (its busy count moved), then polls empty.
        let busy = idle.busy_seen + 1;
        for _ in 0..Idle::EMPTY_POLLS - 1 {
            assert_eq!(idle.empty_poll(busy), None);
        }
        assert_eq!(idle.empty_poll(busy), us(1));
    }

    #[test]
    fn zero_never_sleeps_and_a_short_longest_caps_the_first() {
        let mut never = Idle::new(Duration::ZERO);
        assert!(!never.enabled());
        assert!(sleeps(&mut never, 10_000).iter().all(Option::is_none));
        let mut short = Idle::new(Duration::from_nanos(300));
        let s = sleeps(&mut short, Idle::EMPTY_POLLS as usize + 2);
        assert_eq!(
            s[Idle::EMPTY_POLLS as usize - 1..],
            [Some(Duration::from_nanos(300)); 3]
        );
    }

    #[test]
    fn the_count_saturates_instead_of_wrapping() {
        let mut idle = Idle::new(Duration::from_micros(10));
        idle.empty = u32::MAX - 1;
        assert_eq!(idle.empty_poll(idle.busy_seen), us(1));
        assert_eq!(idle.empty_poll(idle.busy_seen), us(2));
        assert_eq!(idle.empty, u32::MAX);
    }

    #[test]
    fn the_timer_slack_is_tightened() {
        tighten_timer_slack();
        assert_eq!(nix::sys::prctl::get_timerslack(), Ok(1_000));
    }
}
