//! CPU sets: the kernel's list format (`0,2-5`), the calling thread's
//! affinity, and which CPUs the management threads run on (the control
//! socket's accept and session threads, the FPM server, the host thread, the
//! metrics endpoint, and the control lcore when it is not pinned; dumps go to
//! the control lcore's CPU, `control::server::low_priority`).
//!
//! `rte_eal_init` pins the thread that calls it, fwd's main thread, to the
//! main lcore's CPU, and a thread inherits the affinity of the thread that
//! made it. Left so, every management thread would share that one CPU,
//! whatever the machine has to spare: with the control lcore, when it is
//! pinned there (the usual layout: main lcore and control on CPU 0), so that
//! the session thread decoding a batch took CPU time from the writer applying
//! it, and every session and FPM thread did; and with a worker, when the main
//! lcore shares a worker's CPU.
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

/// The CPU dumps run on (`control::server::low_priority`): the control
/// lcore's, unless it is a worker's too (a layout preflight warns about),
/// where a busy-polling worker would leave a dump no time at all.
pub fn dump_cpu(workers: &[usize], control: Option<usize>) -> Option<usize> {
    control.filter(|c| !workers.contains(c))
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

/// Parses a kernel CPU list (`0-3,8,10-11`); `None` when malformed.
pub fn parse_cpulist(s: &str) -> Option<Vec<usize>> {
    let mut v = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.parse().ok()?, b.parse().ok()?);
                if b < a || b - a > 65536 {
                    return None;
                }
                v.extend(a..=b);
            }
            None => v.push(part.parse().ok()?),
        }
    }
    Some(v)
}

/// Formats CPUs as a kernel list (`1-3,8`).
pub fn format_cpulist(cpus: &[usize]) -> String {
    let mut c = cpus.to_vec();
    c.sort_unstable();
    c.dedup();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < c.len() {
        let mut j = i;
        while j + 1 < c.len() && c[j + 1] == c[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            c[i].to_string()
        } else {
            format!("{}-{}", c[i], c[j])
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
    fn dumps_go_to_the_control_cpu_unless_a_worker_polls_it() {
        assert_eq!(dump_cpu(&[1, 2], Some(0)), Some(0));
        assert_eq!(dump_cpu(&[1, 2], Some(2)), None);
        assert_eq!(dump_cpu(&[1, 2], None), None);
    }

    #[test]
    fn cpulists_parse_and_format() {
        assert_eq!(
            parse_cpulist("0-3,8,10-11\n"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpulist(""), Some(vec![]));
        assert_eq!(parse_cpulist("3-1"), None);
        assert_eq!(parse_cpulist("a"), None);
        assert_eq!(format_cpulist(&[]), "");
        assert_eq!(format_cpulist(&[3, 1, 2, 8, 10, 11, 2]), "1-3,8,10-11");
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
