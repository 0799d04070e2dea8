//! A management-side background thread that stops when its handle is
//! dropped: the FPM server, the host thread and the metrics endpoint share
//! this shape.
//!
//! The thread's body gets a stop flag and polls it at a tick of its own
//! choosing (never blocking longer than that tick); dropping the handle
//! sets the flag and joins the thread, so the daemon's shutdown waits for
//! it like it waits for every other thread, and an early error return
//! stops it too.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// A running thread, stopped and joined on drop.
pub struct StoppableThread {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl StoppableThread {
    /// Spawns `body` on a thread named `name`; `body` returns once the flag
    /// it is given is set (or earlier, when it has nothing left to do).
    ///
    /// # Errors
    /// The OS error of spawning the thread.
    pub fn spawn<F>(name: &str, body: F) -> io::Result<StoppableThread>
    where
        F: FnOnce(&AtomicBool) + Send + 'static,
    {
        let stop = Arc::new(AtomicBool::new(false));
        let s = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || body(&s))?;
        Ok(StoppableThread {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for StoppableThread {
    fn drop(&mut self) {
        // Relaxed: a flag; the join below orders everything else.
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;
    use std::time::Duration;

    #[test]
    fn dropping_the_handle_stops_and_joins_the_thread() {
        let turns = Arc::new(AtomicU32::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let (t, d) = (Arc::clone(&turns), Arc::clone(&done));
        let h = StoppableThread::spawn("test-stoppable", move |stop| {
            while !stop.load(Ordering::Relaxed) {
                t.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(1));
            }
            d.store(true, Ordering::Relaxed);
        })
        .unwrap();
        while turns.load(Ordering::Relaxed) == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        drop(h);
        // Joined: the body has returned before drop did.
        assert!(done.load(Ordering::Relaxed));
    }
}
