//! Which CPUs the management threads run on: the control socket's accept,
//! session and dump threads, the FPM server, the host thread, the metrics
//! endpoint, and the control lcore when it is not pinned.
//!
//! `rte_eal_init` pins the thread that calls it, fwd's main thread, to the
//! main lcore's CPU, and a thread inherits the affinity of the thread that
//! made it. Left so, every management thread would share that one CPU,
//! whatever the machine has to spare: with the control lcore, when it is
//! pinned there (the usual layout: main lcore and control on CPU 0), so that
//! five clients dumping the full view slowed a 902k-route batch 2-2.5 times
//! on a 16-CPU machine; and with a worker, when the main lcore shares a
//! worker's CPU.
//!
//! DPDK runs its own control threads (`rte_ctrl_thread_create`) on the CPUs
//! the process started with, minus the lcores'. fwd does the same for its
//! management threads, once, right after the EAL is up: its main thread is
//! confined to the CPUs it started with minus the workers' and the control
//! lcore's, and every thread made after inherits that. When nothing is left
//! (two CPUs: one worker, one control), the control lcore's CPU is shared;
//! a worker's never is, unless the process may run on workers' CPUs only.

#![allow(unsafe_code)]

use std::io;

/// The CPUs for the management threads, in increasing order: `start` (the
/// CPUs the process started with) minus `workers` and `control`; else
/// `start` minus `workers`; else (every CPU is a worker's) `start`.
pub fn management(start: &[usize], workers: &[usize], control: Option<usize>) -> Vec<usize> {
    let mut start = start.to_vec();
    start.sort_unstable();
    start.dedup();
    let spare: Vec<usize> = start
        .iter()
        .copied()
        .filter(|c| !workers.contains(c))
        .collect();
    let quiet: Vec<usize> = spare
        .iter()
        .copied()
        .filter(|&c| Some(c) != control)
        .collect();
    if !quiet.is_empty() {
        quiet
    } else if !spare.is_empty() {
        spare
    } else {
        start
    }
}

/// The CPUs the calling thread may run on, in increasing order.
///
/// # Errors
/// The OS error of `sched_getaffinity`.
pub fn current() -> io::Result<Vec<usize>> {
    // SAFETY: cpu_set_t is plain data, valid when zeroed; sched_getaffinity
    // writes at most size_of::<cpu_set_t>() bytes into it, and CPU_ISSET
    // reads it within bounds (every index is below CPU_SETSIZE).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok((0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect())
    }
}

/// Confines the calling thread (and so every thread it makes from now on)
/// to `cpus`.
///
/// # Errors
/// `InvalidInput` for an empty set or a CPU at or past `CPU_SETSIZE`; else
/// the OS error of `sched_setaffinity`.
pub fn confine_current(cpus: &[usize]) -> io::Result<()> {
    let max = libc::CPU_SETSIZE as usize;
    if cpus.is_empty() || cpus.iter().any(|&c| c >= max) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("no CPUs, or a CPU past {max}: {cpus:?}"),
        ));
    }
    // SAFETY: as in `current`; every index given to CPU_SET is below
    // CPU_SETSIZE (checked above), and sched_setaffinity only reads the set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// `cpus` as the kernel writes a CPU list (`0,2-5,8`), sorted.
pub fn list(cpus: &[usize]) -> String {
    let mut v = cpus.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            v[i].to_string()
        } else {
            format!("{}-{}", v[i], v[j])
        });
        i = j + 1;
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn management_cpus_leave_out_the_workers_then_the_control_lcore() {
        let all: Vec<usize> = (0..16).collect();
        // 16 CPUs, worker on 1, control on 0: the 14 others.
        assert_eq!(management(&all, &[1], Some(0)), (2..16).collect::<Vec<_>>());
        // Unpinned control: everything but the workers.
        assert_eq!(
            management(&all, &[1, 2, 3], None),
            [0].into_iter().chain(4..16).collect::<Vec<_>>()
        );
        // Two CPUs, one worker, one control: the control's CPU is shared.
        assert_eq!(management(&[0, 1], &[1], Some(0)), vec![0]);
        // The main lcore on a worker's CPU does not matter: only workers
        // and control are left out.
        assert_eq!(management(&[0, 1], &[1], None), vec![0]);
        // Started on workers' CPUs only: nothing better than where it started.
        assert_eq!(management(&[1, 2], &[1, 2], Some(0)), vec![1, 2]);
        // A control CPU outside the start set changes nothing; order and
        // repeats of the start set do not matter.
        assert_eq!(management(&[3, 2, 2, 5], &[5], Some(7)), vec![2, 3]);
    }

    #[test]
    fn cpu_lists_are_written_as_the_kernel_writes_them() {
        assert_eq!(list(&[]), "");
        assert_eq!(list(&[3]), "3");
        assert_eq!(list(&[0, 1, 2, 3]), "0-3");
        assert_eq!(list(&[8, 0, 2, 3, 4, 6, 2]), "0,2-4,6,8");
    }

    #[test]
    fn a_confined_thread_and_its_children_run_where_they_were_told() {
        // On a thread of its own, so the test harness's threads keep their
        // affinity.
        std::thread::spawn(|| {
            let start = current().expect("getaffinity");
            assert!(!start.is_empty());
            let one = [*start.last().unwrap()];
            confine_current(&one).expect("setaffinity");
            assert_eq!(current().unwrap(), one);
            let child = std::thread::spawn(|| current().unwrap()).join().unwrap();
            assert_eq!(child, one, "a new thread inherits the mask");
            confine_current(&start).expect("setaffinity back");
            assert_eq!(current().unwrap(), start);
            let e = confine_current(&[]).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
            let e = confine_current(&[libc::CPU_SETSIZE as usize]).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
            assert_eq!(current().unwrap(), start, "a refused set changes nothing");
        })
        .join()
        .unwrap();
    }
}
