//! Launching work on EAL worker lcores and joining it.

use std::ffi::c_void;

use super::eal::Eal;

/// Why a launch failed.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("lcore {0} is not enabled in the EAL (add it to eal lcores)")]
    NotEnabled(u32),
    #[error("lcore {0} is the main lcore; workers run on other lcores")]
    MainLcore(u32),
    #[error("lcore {0} is busy (already running a job)")]
    Busy(u32),
}

type Job = Box<dyn FnOnce() -> i32 + Send + 'static>;

unsafe extern "C" fn trampoline(arg: *mut c_void) -> i32 {
    // SAFETY: `arg` is the Box<Job> leaked by `launch` for this call only;
    // it is reclaimed exactly once here.
    let job: Box<Job> = unsafe { Box::from_raw(arg as *mut Job) };
    // A panic must not unwind into C; abort is the release profile's panic
    // strategy, and in debug builds we catch it and report failure.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(job)).unwrap_or(-1)
}

/// A job running on a worker lcore; `join` waits for it.
#[derive(Debug)]
#[must_use = "a launched lcore must be joined"]
pub struct LcoreJob {
    lcore: u32,
    joined: bool,
}

impl LcoreJob {
    pub fn lcore(&self) -> u32 {
        self.lcore
    }

    /// Waits for the job and returns its return code.
    pub fn join(mut self) -> i32 {
        self.joined = true;
        // SAFETY: the lcore was launched by us; waiting is always valid.
        unsafe { dpdk_sys::rte_eal_wait_lcore(self.lcore) }
    }
}

impl Drop for LcoreJob {
    fn drop(&mut self) {
        if !self.joined {
            // Never leave a running lcore behind a dropped handle.
            // SAFETY: as in join.
            unsafe {
                dpdk_sys::rte_eal_wait_lcore(self.lcore);
            }
        }
    }
}

/// Runs `f` on worker lcore `lcore`.
///
/// # Errors
/// [`LaunchError`] when the lcore is not a usable, idle worker lcore.
pub fn launch<F>(eal: &Eal, lcore: u32, f: F) -> Result<LcoreJob, LaunchError>
where
    F: FnOnce() -> i32 + Send + 'static,
{
    if !eal.lcore_enabled(lcore) {
        return Err(LaunchError::NotEnabled(lcore));
    }
    if lcore == eal.main_lcore() {
        return Err(LaunchError::MainLcore(lcore));
    }
    let job: Box<Job> = Box::new(Box::new(f));
    let arg = Box::into_raw(job) as *mut c_void;
    // SAFETY: the trampoline takes ownership of `arg` when it runs; if the
    // launch fails it never runs and we reclaim the box below.
    let rc = unsafe { dpdk_sys::rte_eal_remote_launch(Some(trampoline), arg, lcore) };
    if rc != 0 {
        // SAFETY: the launch failed, so the trampoline will not run; the box
        // is still ours and is freed exactly once.
        drop(unsafe { Box::from_raw(arg as *mut Job) });
        return Err(LaunchError::Busy(lcore));
    }
    Ok(LcoreJob {
        lcore,
        joined: false,
    })
}

/// The calling thread's lcore id (`u32::MAX` on a non-EAL thread).
pub fn current() -> u32 {
    // SAFETY: reads a thread-local through the shim.
    unsafe { dpdk_sys::fwd_rte_lcore_id() }
}
