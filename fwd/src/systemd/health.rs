//! The watchdog's decision, kept pure: given each worker's loop counter and
//! the readers the QSBR stall detector flags, is the data path alive?
//!
//! A worker reports quiescence once per poll-loop iteration (its snapshot
//! is dropped at the end of every iteration) and counts the iteration in
//! its `polls` counter right after, so "the counter moved" is "the worker
//! reported quiescence since the last look". A worker whose counter has not
//! moved for longer than the bound is wedged (a stuck lcore, an endless
//! loop in a stage, a thread descheduled for good); a reader the QSBR
//! writer flags stalled (it holds back reclamation, `control.stall_ms`) is
//! too. Either withholds the ping; both clearing brings it back.

use std::time::{Duration, Instant};

/// What the watchdog should do this round.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every worker made progress within the bound: send `WATCHDOG=1`.
    Ping,
    /// Send nothing; the reasons, one per worker at fault.
    Withhold(Vec<String>),
}

/// Tracks when each worker last made progress.
#[derive(Debug)]
pub struct Health {
    bound: Duration,
    /// Per worker: the last loop count seen and when it last changed.
    last: Vec<Option<(u64, Instant)>>,
}

impl Health {
    /// `bound`: how long a worker may go without completing a loop.
    pub fn new(bound: Duration) -> Health {
        Health {
            bound,
            last: Vec::new(),
        }
    }

    /// The bound this instance enforces.
    pub fn bound(&self) -> Duration {
        self.bound
    }

    /// One look at the workers. `loops[i]` is worker `i`'s loop counter
    /// (`names[i]` its name, for the reasons); `stalled` names the readers
    /// the QSBR writer currently flags stalled. A worker seen for the first
    /// time counts as having progressed now.
    pub fn observe(
        &mut self,
        now: Instant,
        names: &[String],
        loops: &[u64],
        stalled: &[String],
    ) -> Verdict {
        if self.last.len() != loops.len() {
            self.last.resize(loops.len(), None);
        }
        let mut faults = Vec::new();
        for (i, (&n, last)) in loops.iter().zip(self.last.iter_mut()).enumerate() {
            let at = match *last {
                Some((seen, at)) if seen == n => at,
                _ => {
                    *last = Some((n, now));
                    now
                }
            };
            let idle = now.saturating_duration_since(at);
            if idle > self.bound {
                let name = names.get(i).map_or("?", String::as_str);
                faults.push(format!(
                    "worker {name} has not completed a poll loop (reported quiescence) \
                     for {:.1}s (bound {:.1}s)",
                    idle.as_secs_f64(),
                    self.bound.as_secs_f64()
                ));
            }
        }
        for s in stalled {
            faults.push(format!("reader {s} is stalled (QSBR stall detector)"));
        }
        if faults.is_empty() {
            Verdict::Ping
        } else {
            Verdict::Withhold(faults)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Vec<String> {
        vec!["worker0@lcore1".into(), "worker1@lcore2".into()]
    }

    #[test]
    fn healthy_then_one_wedged_then_recovered() {
        let t0 = Instant::now();
        let s = |ms: u64| t0 + Duration::from_millis(ms);
        let mut h = Health::new(Duration::from_millis(1000));
        let n = names();
        assert_eq!(h.observe(s(0), &n, &[10, 20], &[]), Verdict::Ping);
        // Both move: healthy.
        assert_eq!(h.observe(s(500), &n, &[11, 25], &[]), Verdict::Ping);
        // Worker 1 stops at 25; within the bound it is still fine.
        assert_eq!(h.observe(s(1400), &n, &[30, 25], &[]), Verdict::Ping);
        assert_eq!(h.observe(s(1500), &n, &[31, 25], &[]), Verdict::Ping);
        // Past the bound (1000 ms since its last move at 500): withheld,
        // and the reason names worker 1 only.
        match h.observe(s(1501), &n, &[32, 25], &[]) {
            Verdict::Withhold(r) => {
                assert_eq!(r.len(), 1, "{r:?}");
                assert!(r[0].contains("worker1@lcore2"), "{r:?}");
            }
            Verdict::Ping => panic!("a wedged worker must withhold the ping"),
        }
        assert!(matches!(
            h.observe(s(5000), &n, &[40, 25], &[]),
            Verdict::Withhold(_)
        ));
        // It moves again: ping again.
        assert_eq!(h.observe(s(5100), &n, &[41, 26], &[]), Verdict::Ping);
    }

    #[test]
    fn a_stalled_reader_withholds_even_when_loops_move() {
        let t0 = Instant::now();
        let mut h = Health::new(Duration::from_secs(1));
        let n = names();
        assert_eq!(h.observe(t0, &n, &[1, 1], &[]), Verdict::Ping);
        let v = h.observe(
            t0 + Duration::from_millis(10),
            &n,
            &[2, 2],
            &["worker0@lcore1".into()],
        );
        assert!(matches!(&v, Verdict::Withhold(r) if r[0].contains("worker0@lcore1")));
        assert_eq!(
            h.observe(t0 + Duration::from_millis(20), &n, &[3, 3], &[]),
            Verdict::Ping
        );
    }

    #[test]
    fn all_workers_wedged_from_the_start() {
        let t0 = Instant::now();
        let mut h = Health::new(Duration::from_millis(100));
        let n = names();
        assert_eq!(h.observe(t0, &n, &[0, 0], &[]), Verdict::Ping);
        match h.observe(t0 + Duration::from_millis(101), &n, &[0, 0], &[]) {
            Verdict::Withhold(r) => assert_eq!(r.len(), 2),
            Verdict::Ping => panic!("two wedged workers"),
        }
    }
}
