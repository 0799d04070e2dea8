//! A dump's client gives way to the appliance. `fwdctl route show` formats a
//! full table for about as long as the daemon takes to send it, on the same
//! machine, and the daemon's own dump threads run under SCHED_IDLE (fwd's
//! `control::server::low_priority`). Clients dumping in a loop at the normal
//! priority took the control lcore's CPU from the writer where the machine
//! has few CPUs: a 902k-route delete batch x1.13-1.41 under them on 2 vCPUs
//! (`bench-results/dumps.md`).

#![allow(unsafe_code)]

/// Puts this process's (single) thread under SCHED_IDLE: it runs only when
/// a CPU has nothing else to run. Lowering needs no privilege; a refusal
/// changes nothing.
pub fn give_way() {
    let p = libc::sched_param { sched_priority: 0 };
    // SAFETY: p is a valid sched_param for the call's duration; pid 0 is the
    // calling thread.
    unsafe {
        libc::sched_setscheduler(0, libc::SCHED_IDLE, &p);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_thread_runs_under_sched_idle_after() {
        std::thread::spawn(|| {
            super::give_way();
            // SAFETY: takes a plain integer (0: the calling thread).
            assert_eq!(unsafe { libc::sched_getscheduler(0) }, libc::SCHED_IDLE);
        })
        .join()
        .unwrap();
    }
}
