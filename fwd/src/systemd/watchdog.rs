//! The thread that pings systemd's watchdog while [`Health`] says the data
//! path is alive.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::thread::StoppableThread;

use super::health::{Health, Verdict};
use super::{Notifier, Watched};

/// Shortest ping interval, however small `WATCHDOG_USEC` is.
const MIN_INTERVAL: Duration = Duration::from_millis(10);
/// The stop flag is looked at least this often.
const STOP_POLL: Duration = Duration::from_millis(20);

/// The running watchdog thread; dropping it stops and joins it.
pub struct WatchdogThread {
    _thread: StoppableThread,
}

impl WatchdogThread {
    /// Pings every `period / 4` while every worker completed a loop within
    /// `period / 2` and no reader is flagged stalled: a wedged worker is
    /// restarted at most about 1.75 periods after it stopped.
    ///
    /// # Errors
    /// When the thread cannot be spawned.
    pub fn start(
        notifier: Arc<Notifier>,
        period: Duration,
        watched: Watched,
    ) -> std::io::Result<WatchdogThread> {
        StoppableThread::spawn("fwd-watchdog", move |stop| {
            run(&notifier, period, &watched, stop)
        })
        .map(|t| WatchdogThread { _thread: t })
    }
}

fn run(notifier: &Notifier, period: Duration, w: &Watched, stop: &AtomicBool) {
    let interval = (period / 4).max(MIN_INTERVAL);
    let mut health = Health::new(period / 2);
    let mut withholding = false;
    let mut next = Instant::now();
    // Relaxed: see `WatchdogThread::drop`.
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now < next {
            std::thread::sleep((next - now).min(STOP_POLL));
            continue;
        }
        next = now + interval;
        let loops: Vec<u64> = (0..w.workers.len())
            .map(|i| w.stats.lcore(i).polls.get())
            .collect();
        let stalled: Vec<String> = w
            .control
            .status()
            .map(|s| {
                s.readers
                    .into_iter()
                    .filter(|r| r.stalled)
                    .map(|r| r.name)
                    .collect()
            })
            .unwrap_or_default();
        match health.observe(now, &w.workers, &loops, &stalled) {
            Verdict::Ping => {
                if withholding {
                    withholding = false;
                    eprintln!("fwd: watchdog: every worker is making progress again");
                    notifier.status("forwarding (workers recovered)");
                }
                notifier.notify("WATCHDOG=1");
            }
            Verdict::Withhold(reasons) => {
                if !withholding {
                    withholding = true;
                    for r in &reasons {
                        eprintln!(
                            "fwd: watchdog: {r}; pings withheld (systemd restarts fwd after \
                             WatchdogSec without one)"
                        );
                    }
                    notifier.status(&format!("data path wedged: {}", reasons.join("; ")));
                }
            }
        }
    }
}
