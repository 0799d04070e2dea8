//! Runs bulk reads (the dumps of `route show`, `rule show`...) at the lowest
//! CPU priority, so that they never take the CPU from the control lcore
//! applying a batch, nor from the session that sent it.
//!
//! A dump of the full view is about a second of CPU (iteration and JSON);
//! five clients dumping in a loop on a machine whose spare cores are few took
//! most of the control core from the writer: a 902k-route delete batch ran
//! 3.5 to 3.8 times slower, and the profile showed the control thread
//! runnable but descheduled, not waiting on a lock. Readers are cheap to make
//! wait; the writer is not.
//!
//! The dump runs on a scoped thread of its own that puts itself under
//! SCHED_IDLE, at nice [`DUMP_NICE`] should that fail (lowering needs no
//! privilege; raising it back would need CAP_SYS_NICE, hence a thread that
//! ends with the dump rather than the session's thread changing and restoring
//! its own). Where the thread cannot be made, the dump runs inline at normal
//! priority: slower for the writer, never refused.
//!
//! SCHED_IDLE rather than nice 19 alone: the scheduler shares a CPU by
//! weight, 1024 for the writer and 15 for each nice-19 thread, so ten dumps
//! took 13% of a busy control CPU; a SCHED_IDLE thread weighs 3. With ten
//! dumping clients (`DUMPER_CPUS=1 deploy/bench/dumps.sh`, 2-vCPU host), the
//! control thread's run-queue wait over a 902k-route delete batch was 0.066 s
//! (median of 7 rounds) at nice 19 and 0.037 s under SCHED_IDLE, 0.02 s with
//! no dumps.
//!
//! That thread also runs on the control lcore's CPU, when it has one, rather
//! than on the spare CPUs of the other management threads (`crate::cpus`):
//! there it gets only the time the writer leaves idle. On the spare CPUs of
//! a 16-CPU machine, dumps ran beside a 902k-route delete batch instead of
//! after it, and the batch took longer under 5 and 10 dumping clients than
//! with the dumps on the control lcore's CPU (`bench-results/dumps.md`):
//! the writer shares caches and memory with them even with a CPU of its own.
//!
//! A thread this low must never hold what the writer waits for. The one lock
//! they shared was the tables' lineage lock (`route::larc`), taken by the
//! drop of a dump's copy of the tables when that copy was the last holder of
//! a version the writer had moved on from: with any other thread ready on
//! that CPU, the writer's next copy waited for the dump thread's turn, up to
//! ~1.5 s for a free of ~10 ms (`bench-results/dumps.md`, 2026-12-07). The
//! copy now goes back to the control lcore, which frees it
//! ([`crate::control::Snapshot`]).

#![allow(unsafe_code)]

/// The nice value of dump threads where SCHED_IDLE is refused: the lowest
/// priority of SCHED_OTHER.
pub const DUMP_NICE: i32 = 19;

/// Runs `f` on a scoped thread named `fwd-ctl-dump` under SCHED_IDLE and at
/// nice [`DUMP_NICE`], on CPU `cpu` when given (else where the caller may
/// run), and returns its result; inline at the caller's priority and CPUs if
/// no thread can be made. A panic in `f` is resumed on the caller.
pub fn run<R: Send>(cpu: Option<usize>, f: impl FnOnce() -> R + Send) -> R {
    // The slot gives the work back when the thread cannot be made (the
    // builder drops the closure it was given).
    let slot = std::sync::Mutex::new(Some(f));
    let take = || {
        slot.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
            .expect("the work runs once")
    };
    std::thread::scope(|s| {
        let spawned = std::thread::Builder::new()
            .name("fwd-ctl-dump".into())
            .spawn_scoped(s, || {
                lower_own_priority(DUMP_NICE);
                idle_policy();
                if let Some(c) = cpu {
                    // Best effort, like the priority: a CPU the kernel
                    // refuses leaves the thread where it was made.
                    let _ = crate::cpus::confine_current(&[c]);
                }
                take()()
            });
        match spawned {
            Ok(h) => h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
            Err(_) => take()(),
        }
    })
}

/// Sets the calling thread's nice value to `nice` (only ever to a lower
/// priority than it has: the kernel refuses raising it without privilege, and
/// then nothing changes). Best effort: a failure leaves the priority as it was.
pub fn lower_own_priority(nice: i32) {
    // SAFETY: gettid and setpriority take plain integers and touch no memory
    // of ours; PRIO_PROCESS with a thread id addresses that one thread on Linux.
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice);
    }
}

/// Puts the calling thread under SCHED_IDLE: it runs only when its CPU has
/// nothing else to run (lowering needs no privilege). Best effort: on
/// failure it keeps its policy.
pub fn idle_policy() {
    let p = libc::sched_param { sched_priority: 0 };
    // SAFETY: p is a valid sched_param for the call's duration; pid 0 is the
    // calling thread.
    unsafe {
        libc::sched_setscheduler(0, libc::SCHED_IDLE, &p);
    }
}

/// The calling thread's scheduling policy.
#[cfg(test)]
fn own_policy() -> i32 {
    // SAFETY: takes a plain integer (0: the calling thread).
    unsafe { libc::sched_getscheduler(0) }
}

/// The calling thread's nice value.
#[cfg(test)]
fn own_nice() -> i32 {
    // SAFETY: as above; getpriority returns the nice value (-1 is ambiguous
    // with an error only for a nice of -1, which these threads never have).
    unsafe {
        let tid = libc::gettid();
        libc::getpriority(libc::PRIO_PROCESS, tid as libc::id_t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_work_runs_at_the_lowest_priority_and_the_caller_keeps_its_own() {
        let before = own_nice();
        let before_policy = own_policy();
        let (inside, policy, name) = run(None, || {
            (
                own_nice(),
                own_policy(),
                std::thread::current().name().map(str::to_owned),
            )
        });
        assert_eq!(inside, DUMP_NICE);
        assert_eq!(policy, libc::SCHED_IDLE);
        assert_eq!(
            own_policy(),
            before_policy,
            "the session's thread keeps its policy"
        );
        assert_eq!(name.as_deref(), Some("fwd-ctl-dump"));
        assert_eq!(
            own_nice(),
            before,
            "the session's thread keeps its priority"
        );
    }

    #[test]
    fn the_work_runs_on_the_cpu_it_is_given_and_the_caller_keeps_its_own() {
        let mine = crate::cpus::current().unwrap();
        let last = *mine.last().unwrap();
        assert_eq!(run(Some(last), || crate::cpus::current().unwrap()), [last]);
        assert_eq!(run(None, || crate::cpus::current().unwrap()), mine);
        assert_eq!(crate::cpus::current().unwrap(), mine);
    }

    #[test]
    fn the_work_may_borrow_from_the_caller_and_its_result_comes_back() {
        let mut out = Vec::new();
        let n = run(None, || {
            out.extend(0..5);
            out.len()
        });
        assert_eq!(n, 5);
        assert_eq!(out, [0, 1, 2, 3, 4]);
    }

    #[test]
    fn a_panic_in_the_work_reaches_the_caller() {
        let r = std::panic::catch_unwind(|| run(None, || panic!("dump failed")));
        assert!(r.is_err());
    }
}
