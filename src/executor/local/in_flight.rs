//! How many runs the local backend keeps in flight when neither `--jobs` nor `[run] jobs` says.
//!
//! Runs that lease a device or CPUs are bounded by the pool, but a stack with `resource =
//! "none"` leases nothing: before this bound every run of such a campaign started at once —
//! 1,000 runs held 4,364 open files, and under the usual `ulimit -n 1024` a 1,000-run campaign
//! ended with `Too many open files` (issue 43, item 2). The default is the machine's CPUs or the
//! pool's devices, whichever is more (as nextest runs one test per CPU), and never more than the
//! open-file limit leaves room for. The limit is read, not raised: stacks inherit campaign's
//! limits, and programs that close every descriptor up to the limit (old Python `subprocess`,
//! some MPI launchers) slow down by orders of magnitude under a hard limit of a million.

/// Open files one run in flight holds at most: both pipes, `run.log`, the child's pidfd, its
/// kept cgroup's directory, `cgroup.procs` and `cpu.pressure`, and the bundle file being
/// written (≈ 4.4 were measured per run at 1,000 runs; the rest is margin).
pub(crate) const FILES_PER_RUN: u64 = 8;

/// Open files kept for campaign itself: the journal, results and case-file writers, the
/// history store, the runtime's own descriptors, stdio.
pub(crate) const FILES_RESERVED: u64 = 128;

/// The default cap on runs in flight for a machine with `cpus` CPUs, a pool of `devices`
/// devices and a soft open-file limit of `nofile` (`None`: unlimited or unknown).
pub(crate) fn default_jobs(cpus: usize, devices: usize, nofile: Option<u64>) -> usize {
    let wanted = cpus.max(devices).max(1);
    match nofile {
        Some(limit) => {
            let room = limit.saturating_sub(FILES_RESERVED) / FILES_PER_RUN;
            wanted
                .min(usize::try_from(room).unwrap_or(usize::MAX))
                .max(1)
        }
        None => wanted,
    }
}

/// This process's soft `RLIMIT_NOFILE`; `None` when unlimited or unreadable.
pub(crate) fn open_file_limit() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
    (rc == 0 && lim.rlim_cur != libc::RLIM_INFINITY).then_some(lim.rlim_cur)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_cpus_or_devices_within_the_open_file_limit() {
        assert_eq!(default_jobs(2, 0, Some(1024)), 2);
        assert_eq!(default_jobs(2, 8, Some(1024)), 8);
        assert_eq!(default_jobs(192, 16, None), 192);
        // 1,024 files leave room for (1024 − 128) / 8 = 112 runs.
        assert_eq!(default_jobs(4096, 0, Some(1024)), 112);
        // A limit below the reserve still runs one at a time.
        assert_eq!(default_jobs(16, 0, Some(64)), 1);
        assert_eq!(default_jobs(0, 0, Some(1 << 20)), 1);
    }
}
