//! Core binding of the rank threads: with no more ranks than usable cores, rank r runs pinned to
//! its own CPU of the process's allowed set, like `mpirun --bind-to core`. The ranks take
//! consecutive CPUs starting at the one the run started on, so several runs started at once on a
//! big machine spread out instead of all piling onto the first P CPUs.
//!
//! Owns the placement decision and the `sched_getaffinity`/`sched_setaffinity` calls. Why it
//! exists: left to the scheduler on a busy machine, both threads of a P = 2 run were often placed
//! on the same core for the whole process (the other core being busy with other work), and every
//! hand-off then cost a waiter's full spin budget before it yielded — ring and twophase took
//! ~106 µs a round instead of ~0.2 µs, decided per process by placement luck. Binding is best
//! effort: where the calls fail (another OS, a seccomp filter) the ranks run unbound and the
//! barrier's waiting policy (`barrier.rs`) still keeps them correct. It must not know about
//! buffers, algorithms or timing.

/// CPUs this process may run on, in ascending order (empty when unknown).
pub(crate) fn allowed_cpus() -> Vec<usize> {
    imp::allowed_cpus()
}

/// The CPU rank `rank` of `p` is bound to: `cpus[(first + rank) mod n]` when every rank gets a
/// core of its own, none when ranks must share cores (then the scheduler balances them).
pub(crate) fn cpu_for(rank: usize, p: usize, cpus: &[usize], first: usize) -> Option<usize> {
    (p <= cpus.len()).then(|| cpus[(first + rank) % cpus.len()])
}

/// Index in `cpus` of the CPU the calling thread runs on now (0 when unknown).
pub(crate) fn current_index(cpus: &[usize]) -> usize {
    imp::current_cpu()
        .and_then(|c| cpus.iter().position(|&x| x == c))
        .unwrap_or(0)
}

/// Restores the calling thread's previous CPU set when dropped, so a caller's thread that ran
/// rank 0 is not left bound after the run.
pub(crate) struct Binding {
    previous: Option<imp::CpuSet>,
}

impl Binding {
    /// True when the calling thread is now bound.
    #[cfg(test)]
    pub(crate) fn bound(&self) -> bool {
        self.previous.is_some()
    }
}

/// Bind the calling thread to `cpu` (no-op for `None`).
pub(crate) fn bind_current_thread(cpu: Option<usize>) -> Binding {
    Binding {
        previous: cpu.and_then(imp::bind),
    }
}

impl Drop for Binding {
    fn drop(&mut self) {
        if let Some(set) = self.previous.take() {
            imp::restore(&set);
        }
    }
}

#[cfg(target_os = "linux")]
mod imp {
    pub(crate) type CpuSet = libc::cpu_set_t;

    fn current() -> Option<CpuSet> {
        // SAFETY: cpu_set_t is a plain bit array for which all-zero is valid; pid 0 = this
        // thread; the size passed is the set's own size.
        unsafe {
            let mut set: CpuSet = std::mem::zeroed();
            (libc::sched_getaffinity(0, std::mem::size_of::<CpuSet>(), &mut set) == 0)
                .then_some(set)
        }
    }

    pub(crate) fn allowed_cpus() -> Vec<usize> {
        let Some(set) = current() else {
            return Vec::new();
        };
        (0..libc::CPU_SETSIZE as usize)
            // SAFETY: `cpu` is below CPU_SETSIZE, the set's capacity.
            .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
            .collect()
    }

    /// Bind this thread to `cpu`; the previous set when it worked.
    pub(crate) fn bind(cpu: usize) -> Option<CpuSet> {
        if cpu >= libc::CPU_SETSIZE as usize {
            return None;
        }
        let previous = current()?;
        // SAFETY: as in `current`; `cpu` is below CPU_SETSIZE.
        let ok = unsafe {
            let mut set: CpuSet = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<CpuSet>(), &set) == 0
        };
        ok.then_some(previous)
    }

    pub(crate) fn current_cpu() -> Option<usize> {
        // SAFETY: plain libc call with no arguments; -1 on failure.
        usize::try_from(unsafe { libc::sched_getcpu() }).ok()
    }

    pub(crate) fn restore(set: &CpuSet) {
        // SAFETY: `set` came from sched_getaffinity for this thread. A failure leaves the thread
        // bound, which only costs the caller placement freedom, so it is not reported.
        unsafe {
            libc::sched_setaffinity(0, std::mem::size_of::<CpuSet>(), set);
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    pub(crate) type CpuSet = ();

    pub(crate) fn allowed_cpus() -> Vec<usize> {
        Vec::new()
    }

    pub(crate) fn bind(_cpu: usize) -> Option<CpuSet> {
        None
    }

    pub(crate) fn current_cpu() -> Option<usize> {
        None
    }

    pub(crate) fn restore(_set: &CpuSet) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_get_distinct_cpus_only_when_there_are_enough() {
        let cpus = [0, 2, 5];
        assert_eq!(cpu_for(0, 3, &cpus, 0), Some(0));
        assert_eq!(cpu_for(2, 3, &cpus, 0), Some(5));
        assert_eq!(cpu_for(1, 2, &cpus, 0), Some(2));
        // Starting at the run's CPU and wrapping keeps the ranks on distinct CPUs.
        let from_last: Vec<_> = (0..3).map(|r| cpu_for(r, 3, &cpus, 2)).collect();
        assert_eq!(from_last, vec![Some(5), Some(0), Some(2)]);
        assert_eq!(cpu_for(0, 4, &cpus, 0), None);
        assert_eq!(cpu_for(0, 1, &[], 0), None);
        assert!(current_index(&cpus) < cpus.len());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn binding_pins_the_thread_and_dropping_restores_its_set() {
        std::thread::spawn(|| {
            let before = allowed_cpus();
            assert!(!before.is_empty(), "sched_getaffinity must work on Linux");
            let last = *before.last().unwrap();
            {
                let b = bind_current_thread(Some(last));
                assert!(b.bound());
                assert_eq!(allowed_cpus(), vec![last]);
                // SAFETY: plain libc call with no arguments.
                assert_eq!(unsafe { libc::sched_getcpu() }, last as i32);
            }
            assert_eq!(allowed_cpus(), before);
            assert!(!bind_current_thread(None).bound());
        })
        .join()
        .unwrap();
    }
}
