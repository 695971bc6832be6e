//! The stat fast path of a stamp's file check (`store::results_stamp`), racy-safe like git's
//! index: a stamp records each file's length, inode, modification and change time as it saw
//! them, and a check trusts a file without reading it when its `stat` is still exactly that —
//! but only when the recorded change time is strictly earlier than the stamp file's own
//! modification time.
//!
//! Why the change time (ctime): the kernel sets it on every write, truncation, rename or
//! metadata change, and no user can set it, so an edit that keeps the length and puts the
//! modification time back (`touch -d`, `File::set_modified`) still changes it. Why strictly
//! earlier than the stamp: timestamps advance in ticks, and a file written again in the same
//! tick as it was stat-ed keeps the same ctime; a stamp written later than that tick proves the
//! ctime was recorded after the last change anyone could make unseen — a change after the
//! stamp gets a ctime at least the stamp's. A file whose ctime is not earlier ("racy", as git
//! calls it) is hashed, as are files of an old stamp without recorded stats.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// A file's identity and times as a stamp saw them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FileStat {
    pub(crate) bytes: u64,
    pub(crate) ino: u64,
    /// Modification and change time, nanoseconds since the epoch.
    pub(crate) mtime_ns: i64,
    pub(crate) ctime_ns: i64,
}

impl FileStat {
    pub(crate) fn of(m: &std::fs::Metadata) -> FileStat {
        FileStat {
            bytes: m.len(),
            ino: m.ino(),
            mtime_ns: nanos(m.mtime(), m.mtime_nsec()),
            ctime_ns: nanos(m.ctime(), m.ctime_nsec()),
        }
    }
}

/// `secs` and `nsec` as nanoseconds since the epoch (saturating: past 2262 every time is the
/// same, which only makes files look racy, so hashed).
pub(crate) fn nanos(secs: i64, nsec: i64) -> i64 {
    secs.saturating_mul(1_000_000_000).saturating_add(nsec)
}

/// May a file be trusted without hashing it? Only when its stat `now` is the one `recorded`
/// when it was stamped and that recorded change time is strictly earlier than the stamp
/// file's modification time `stamp_mtime_ns` (not in the stamp's tick: see the module
/// comment). No recorded stat (an older stamp) means no.
pub(crate) fn trusted(recorded: Option<&FileStat>, now: &FileStat, stamp_mtime_ns: i64) -> bool {
    recorded.is_some_and(|r| r == now && r.ctime_ns < stamp_mtime_ns)
}

/// Set `path`'s modification time to the kernel's "now" (`UTIME_NOW`): the clock that stamps
/// the ctime of later changes, so any change after this call gets a ctime at least this
/// mtime. (`SystemTime::now()` is read from a finer clock, which can run ahead of the tick
/// the kernel gives a change made right after it: a file changed then would keep a ctime
/// earlier than the stamp, and be trusted.) Best effort.
pub(crate) fn mark_now(path: &Path) {
    use rustix::fs::{Timespec, Timestamps, UTIME_NOW, UTIME_OMIT};
    let Ok(file) = std::fs::File::options().write(true).open(path) else {
        return;
    };
    let times = Timestamps {
        last_access: Timespec {
            tv_sec: 0,
            tv_nsec: UTIME_OMIT,
        },
        last_modification: Timespec {
            tv_sec: 0,
            tv_nsec: UTIME_NOW,
        },
    };
    let _ = rustix::fs::futimens(&file, &times);
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: FileStat = FileStat {
        bytes: 10,
        ino: 42,
        mtime_ns: 1_000,
        ctime_ns: 2_000,
    };

    #[test]
    fn an_unchanged_file_changed_before_the_stamp_is_trusted() {
        assert!(trusted(Some(&STAT), &STAT, 2_001));
    }

    #[test]
    fn a_file_changed_in_the_stamps_tick_is_hashed() {
        // Same ctime as the stamp's mtime, or later: a write in that tick could keep it.
        assert!(!trusted(Some(&STAT), &STAT, 2_000));
        assert!(!trusted(Some(&STAT), &STAT, 1_999));
    }

    #[test]
    fn any_difference_in_the_stat_or_none_recorded_means_hashing() {
        for now in [
            FileStat { bytes: 11, ..STAT },
            FileStat { ino: 43, ..STAT },
            FileStat {
                mtime_ns: 1_001,
                ..STAT
            },
            FileStat {
                ctime_ns: 2_001,
                ..STAT
            },
        ] {
            assert!(!trusted(Some(&STAT), &now, 10_000), "{now:?}");
        }
        assert!(!trusted(None, &STAT, 10_000));
    }

    #[test]
    fn marking_now_moves_the_mtime_to_the_kernels_clock() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("stamp");
        std::fs::write(&path, "x").unwrap();
        let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(old)
            .unwrap();
        mark_now(&path);
        let m = std::fs::metadata(&path).unwrap();
        // Set by the kernel with the ctime of the same call.
        assert!(m.modified().unwrap() > old);
        assert_eq!(m.mtime(), m.ctime());
        assert_eq!(m.mtime_nsec(), m.ctime_nsec());
    }
}
