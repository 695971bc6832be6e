//! Kept cgroups for runs: a campaign makes one cgroup per run slot (as many as runs in flight),
//! not one per run, and hands each run a free one.
//!
//! Making a cgroup and removing it cost about as much as everything else campaign does between
//! two runs (≈ 55 µs together here; the first process in a new cgroup costs more again), so the
//! cgroups of a campaign's runs are made once and reused: `campaign-<tag>-s<k>`, where the tag
//! is derived from the run dir. The dispatcher claims one when it journals a run's start (the
//! journal names the cgroup, so a resume after a SIGKILL reaps what it holds, `unit::reap`) and
//! releases it when the run has reported. A slot goes back to the pool only proven empty —
//! nothing of the last run left in it — and a slot something outlived is retired, never used
//! again. Its `cpu.pressure` total after a run is the next run's starting point, so each run's
//! CPU stall is its own. [`remove_all`] removes the slots when the campaign ends; a campaign
//! resumed after a crash gets the same names back (same run dir), so slots are not left behind
//! once it completes.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One kept cgroup.
#[derive(Debug)]
struct Slot {
    /// The run dir's tag ([`tag`]): slots serve the runs of one run dir (tests run several
    /// campaigns in one process).
    tag: String,
    path: PathBuf,
    /// The cgroup's directory, kept open: processes are created straight into it.
    dir: Arc<File>,
    /// Its `cgroup.procs` and `cpu.pressure` (none without pressure totals), kept open.
    files: Arc<super::Files>,
    /// Its `cpu.pressure` "full" total when its last process had ended (`None`: not known; the
    /// next run reads it before starting).
    total: Option<Duration>,
    /// The unit id holding it.
    holder: Option<String>,
    /// Something may still be in it: never handed out again.
    retired: bool,
}

#[derive(Debug, Default)]
struct Pool {
    slots: Vec<Slot>,
    /// Unit id → index in `slots`.
    held: BTreeMap<String, usize>,
}

fn pool() -> &'static Mutex<Pool> {
    static POOL: Mutex<Pool> = Mutex::new(Pool {
        slots: Vec::new(),
        held: BTreeMap::new(),
    });
    &POOL
}

fn lock() -> std::sync::MutexGuard<'static, Pool> {
    pool().lock().unwrap_or_else(|e| e.into_inner())
}

/// What a unit opening a claimed slot needs.
pub(crate) struct Claimed {
    pub(crate) path: PathBuf,
    pub(crate) dir: Arc<File>,
    pub(crate) files: Arc<super::Files>,
    pub(crate) total: Option<Duration>,
}

/// Claim a free slot (made now if none is free) for the unit `id` of a run of `run_dir`, under
/// the cgroup `base`; its path, to journal. The same id claiming again gets the same slot.
pub(crate) fn claim(base: &Path, run_dir: &Path, id: &str) -> std::io::Result<PathBuf> {
    let mut pool = lock();
    if let Some(&i) = pool.held.get(id) {
        return Ok(pool.slots[i].path.clone());
    }
    let tag = tag(run_dir);
    let free = (pool.slots.iter()).rposition(|s| s.tag == tag && s.holder.is_none() && !s.retired);
    let i = match free {
        Some(i) => i,
        None => {
            let k = pool.slots.iter().filter(|s| s.tag == tag).count();
            let path = base.join(format!("{}{tag}-s{k}", super::cgroup::PREFIX));
            let made = super::cgroup::create(&path)?;
            let dir = super::cgroup::open_dir(&path)?;
            let files = Arc::new(super::Files::open(&dir));
            let dir = Arc::new(dir);
            // A slot left by a crashed session of this run dir (reaped by the resume) carries
            // its old total: read it before the first run.
            let total = made.then_some(Duration::ZERO);
            pool.slots.push(Slot {
                tag,
                path,
                dir,
                files,
                total,
                holder: None,
                retired: false,
            });
            pool.slots.len() - 1
        }
    };
    pool.slots[i].holder = Some(id.to_string());
    pool.held.insert(id.to_string(), i);
    Ok(pool.slots[i].path.clone())
}

/// The slot `id` holds, if it claimed one.
pub(crate) fn claimed(id: &str) -> Option<Claimed> {
    let pool = lock();
    let slot = &pool.slots[*pool.held.get(id)?];
    Some(Claimed {
        path: slot.path.clone(),
        dir: slot.dir.clone(),
        files: slot.files.clone(),
        total: slot.total,
    })
}

/// A process of `id` ended and its slot was found empty: `total` is where the next one starts.
pub(crate) fn settle(id: &str, total: Option<Duration>) {
    let mut pool = lock();
    if let Some(&i) = pool.held.get(id) {
        pool.slots[i].total = total;
    }
}

/// Something of `id` may outlive it in its slot: the slot is never handed out again.
pub(crate) fn retire(id: &str) {
    let mut pool = lock();
    if let Some(&i) = pool.held.get(id) {
        pool.slots[i].retired = true;
    }
}

/// The run of unit `id` is over: its slot is free for the next run.
pub fn release(id: &str) {
    let mut pool = lock();
    if let Some(i) = pool.held.remove(id) {
        pool.slots[i].holder = None;
    }
}

/// Remove the slots of `run_dir` (its campaign is over); a slot still holding a process stays
/// on disk.
pub fn remove_all(run_dir: &Path) {
    let tag = tag(run_dir);
    let mut pool = lock();
    let (gone, kept): (Vec<Slot>, Vec<Slot>) = std::mem::take(&mut pool.slots)
        .into_iter()
        .partition(|s| s.tag == tag);
    for slot in &gone {
        super::cgroup::remove(&slot.path);
    }
    pool.slots = kept;
    // Indices moved: rebuild the holders' map from the slots that stay.
    pool.held = (pool.slots.iter().enumerate())
        .filter_map(|(i, s)| s.holder.clone().map(|h| (h, i)))
        .collect();
}

/// Remove every kept cgroup no run holds (the second Ctrl-C, on its way out): they are empty.
pub(crate) fn remove_free() {
    let pool = lock();
    for slot in pool.slots.iter().filter(|s| s.holder.is_none()) {
        super::cgroup::remove(&slot.path);
    }
}

/// Is `name` (after the cgroup prefix) the name of one of `run_dir`'s slots: `<tag>-s<k>`?
pub(crate) fn is_slot_name(run_dir: &Path, name: &str) -> bool {
    name.strip_prefix(tag(run_dir).as_str())
        .and_then(|rest| rest.strip_prefix("-s"))
        .is_some_and(|k| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()))
}

/// The run dir's part of its slots' names.
pub(crate) fn tag(run_dir: &Path) -> String {
    crate::model::digest::sha256_hex(run_dir.as_os_str().as_encoded_bytes(), 6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_reused_once_released_and_never_once_retired() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path();
        let run_dir = base.join("run_a");
        let a = claim(base, &run_dir, "ta-1").unwrap();
        let b = claim(base, &run_dir, "tb-1").unwrap();
        assert_ne!(a, b);
        assert_eq!(
            claim(base, &run_dir, "ta-1").unwrap(),
            a,
            "the same id, the same slot"
        );
        assert!(a.is_dir() && b.is_dir());
        assert_eq!(claimed("ta-1").unwrap().total, Some(Duration::ZERO));
        settle("ta-1", Some(Duration::from_micros(7)));
        release("ta-1");
        let c = claim(base, &run_dir, "tc-1").unwrap();
        assert_eq!(c, a, "a released slot is handed out again");
        assert_eq!(
            claimed("tc-1").unwrap().total,
            Some(Duration::from_micros(7))
        );
        retire("tc-1");
        release("tc-1");
        let d = claim(base, &run_dir, "td-1").unwrap();
        assert!(d != a && d != b, "a retired slot is never handed out");
        assert!(claimed("ta-1").is_none());
        remove_all(&run_dir);
        assert!(!a.exists() && !b.exists() && !d.exists());
        assert!(claimed("tb-1").is_none());
    }
}
