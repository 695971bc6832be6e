//! The run dir's case files (`cases/<case_id>/case.json`), bundle folders, (empty) `run.log`
//! files and (thread only) the temp files the bundle will be written through, written ahead of the runs by a thread of their own, so a campaign of 100,000 cases
//! neither waits for 200,000 new inodes before its first run nor pays for them between two runs.
//!
//! `generate` starts the thread, which goes through the cases in plan order; a run (or a health
//! probe) that gets ahead of it writes its own case first ([`CaseFiles::ensure`]) — each case is
//! written exactly once, by whichever comes first, and the other waits for it. The thread stays
//! at most [`AHEAD`] cases beyond the furthest case a run has asked for: enough to keep inode
//! creation off the path between two runs, while an interrupted campaign of 600,000 cases leaves
//! a run dir the size of what it ran, not gigabytes of empty folders. A case file that
//! exists with the planned text is left alone (resume); one that differs (a power loss left it
//! empty or short: case files are not synced, see `store::atomic::replace_all`) is replaced
//! through a temp file; a missing one is written in place.
//! It must not write anything but case files, bundle folders, empty logs and empty temp files.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread::JoinHandle;

use crate::error::{Error, Result};
use crate::model::case::Case;
use crate::store::atomic::replace_all;
use crate::store::layout::RunDir;

/// How many cases the thread writes beyond the furthest one a run (or probe) asked for.
pub(crate) const AHEAD: usize = 1024;

/// One distinct case of the plan.
struct Entry {
    case_id: String,
    case_index: usize,
    /// Stacks with a run of this case (their bundle folders are made with the case).
    stacks: Vec<String>,
    /// Written (or the reason it could not be).
    done: OnceLock<std::result::Result<(), String>>,
}

/// The case files of one campaign.
pub(crate) struct CaseFiles {
    run_dir: Arc<RunDir>,
    cases: Arc<Vec<Case>>,
    entries: Vec<Entry>,
    by_id: HashMap<String, usize>,
    stop: AtomicBool,
    /// The furthest entry asked for by [`CaseFiles::ensure`] (plus one; 0 = none yet).
    reached: Mutex<usize>,
    /// Wakes the thread when `reached` moves or `stop` is set.
    moved: Condvar,
}

impl CaseFiles {
    /// `runs`: `(case_id, case index, stack)` of every planned run, in plan order.
    pub(crate) fn new(
        run_dir: Arc<RunDir>,
        cases: Arc<Vec<Case>>,
        runs: impl IntoIterator<Item = (String, usize, String)>,
    ) -> CaseFiles {
        let mut entries: Vec<Entry> = Vec::new();
        let mut by_id: HashMap<String, usize> = HashMap::new();
        for (case_id, case_index, stack) in runs {
            match by_id.get(&case_id) {
                Some(&i) => entries[i].stacks.push(stack),
                None => {
                    by_id.insert(case_id.clone(), entries.len());
                    entries.push(Entry {
                        case_id,
                        case_index,
                        stacks: vec![stack],
                        done: OnceLock::new(),
                    });
                }
            }
        }
        CaseFiles {
            run_dir,
            cases,
            entries,
            by_id,
            stop: AtomicBool::new(false),
            reached: Mutex::new(0),
            moved: Condvar::new(),
        }
    }

    /// No case files: what a session holds once every run ended (its index freed).
    pub(crate) fn none(run_dir: Arc<RunDir>) -> CaseFiles {
        CaseFiles::new(run_dir, Arc::new(Vec::new()), std::iter::empty())
    }

    /// Write every case in plan order on a thread of its own; [`CaseFiles::finish`] stops it.
    pub(crate) fn start(self: &Arc<Self>) -> Result<JoinHandle<()>> {
        let me = self.clone();
        std::thread::Builder::new()
            .name("case-files".into())
            .spawn(move || {
                for i in 0..me.entries.len() {
                    if !me.wait_for_room(i) {
                        return;
                    }
                    // A failure is kept with the case: the run that needs it reports it.
                    if me.ensure_entry(i).is_ok() {
                        me.prepare_bundles(&me.entries[i]);
                    }
                }
            })
            .map_err(|e| Error::Environment(format!("cannot start the case file writer: {e}")))
    }

    /// Wait until entry `i` is within [`AHEAD`] of the furthest entry asked for; false once
    /// the writer is to stop.
    fn wait_for_room(&self, i: usize) -> bool {
        let mut reached = self.reached.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return false;
            }
            if i < *reached + AHEAD {
                return true;
            }
            reached = (self.moved.wait(reached)).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Stop writing ahead (a write in progress completes).
    pub(crate) fn finish(&self, thread: JoinHandle<()>) {
        {
            // Under the lock, so the thread cannot miss the wake-up between its check and wait.
            let _reached = self.reached.lock().unwrap_or_else(|p| p.into_inner());
            self.stop.store(true, Ordering::Relaxed);
        }
        self.moved.notify_all();
        let _ = thread.join();
    }

    /// Make sure `case_id`'s case file and bundle folders exist (written now if the thread has
    /// not reached them yet). An id that is not planned has nothing to write.
    pub(crate) fn ensure(&self, case_id: &str) -> Result<()> {
        match self.by_id.get(case_id) {
            Some(&i) => {
                let mut reached = self.reached.lock().unwrap_or_else(|p| p.into_inner());
                if i + 1 > *reached {
                    *reached = i + 1;
                    self.moved.notify_all();
                }
                drop(reached);
                self.ensure_entry(i)
            }
            None => Ok(()),
        }
    }

    fn ensure_entry(&self, i: usize) -> Result<()> {
        self.entries[i]
            .done
            .get_or_init(|| self.write(&self.entries[i]).map_err(|e| e.to_string()))
            .clone()
            .map_err(Error::Environment)
    }

    fn write(&self, entry: &Entry) -> Result<()> {
        let path = self.run_dir.case_file(&entry.case_id);
        let text = self.cases[entry.case_index].to_pretty_json();
        match std::fs::read(&path) {
            Ok(found) if found == text.as_bytes() => {}
            // None yet (the usual case): written in place, no temp file and rename — nothing
            // reads it before this returns, and a short file left by a crash differs from the
            // planned text, so the next session replaces it.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if !crate::store::atomic::create_new(&path, text.as_bytes())? {
                    replace_all(&[(&path, text.as_bytes())])?;
                }
            }
            // Damaged or unreadable: replaced whole.
            _ => replace_all(&[(&path, text.as_bytes())])?,
        }
        for stack in &entry.stacks {
            let bundle = self.run_dir.bundle(&entry.case_id, stack);
            crate::store::layout::make_bundle_dir(&bundle)?;
            // The executor appends to `run.log`; creating it here (empty, never truncating one
            // that exists) takes its inode off the path between two runs. A run's own
            // `ensure` comes before it moves an earlier attempt's log aside, so this never
            // recreates a log that was just moved.
            let log = bundle.join("run.log");
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&log)
                .map_err(|e| Error::io(&log, e))?;
        }
        Ok(())
    }

    /// Create the temp files `timing.json` and `manifest.json` will be written through
    /// (`store::atomic::replace_all_prepared`), empty, in every bundle of the entry that has no
    /// `manifest.json` yet: the bundle's last two inodes, off the path between two runs. Only
    /// the thread does this, after the entry's files: a run that got ahead of the thread waits
    /// for its case's files, never for these (its bundle write creates what is missing, as
    /// without them). A bundle that already holds a manifest (a done run on resume) gets
    /// none. Racing a run that is writing the same bundle is harmless: the run truncates, writes
    /// and renames; at worst an empty temp file is left for a later attempt to reuse.
    fn prepare_bundles(&self, entry: &Entry) {
        for stack in &entry.stacks {
            let bundle = self.run_dir.bundle(&entry.case_id, stack);
            if bundle.join(crate::store::layout::BUNDLE_FILES[1]).exists() {
                continue;
            }
            for name in crate::store::layout::BUNDLE_FILES {
                // Best effort: the run's own write reports any real problem with the folder.
                let _ = crate::store::atomic::prepare(&bundle.join(name));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::case::Variant;

    fn files(dir: &std::path::Path) -> (Arc<CaseFiles>, Arc<RunDir>) {
        let rd = Arc::new(RunDir::open(dir));
        let cases = Arc::new(vec![
            Case::new(Variant::Mesh, 2, 64),
            Case::new(Variant::Ring, 2, 64),
        ]);
        let ids: Vec<String> = cases.iter().map(|c| c.case_id()).collect();
        let runs = vec![
            (ids[0].clone(), 0, "host".to_string()),
            (ids[0].clone(), 0, "mpi".to_string()),
            (ids[1].clone(), 1, "host".to_string()),
        ];
        (Arc::new(CaseFiles::new(rd.clone(), cases, runs)), rd)
    }

    #[test]
    fn the_thread_writes_every_case_file_and_bundle_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let (cf, rd) = files(tmp.path());
        // A done run (resume): its bundle holds a manifest and gets no temp files.
        let other = Case::new(Variant::Ring, 2, 64).case_id();
        std::fs::create_dir_all(rd.bundle(&other, "host")).unwrap();
        std::fs::write(rd.bundle(&other, "host").join("manifest.json"), "{}").unwrap();
        let thread = cf.start().unwrap();
        thread.join().unwrap();
        let temp = |id: &str, name: &str| {
            crate::store::atomic::prepared_temp(&rd.bundle(id, "host").join(name))
        };
        for name in crate::store::layout::BUNDLE_FILES {
            assert!(!temp(&other, name).exists(), "{name}");
        }
        let id = Case::new(Variant::Mesh, 2, 64).case_id();
        let text = std::fs::read_to_string(rd.case_file(&id)).unwrap();
        assert_eq!(text, Case::new(Variant::Mesh, 2, 64).to_pretty_json());
        assert!(rd.bundle(&id, "mpi").is_dir());
        assert_eq!(
            std::fs::read(rd.bundle(&id, "mpi").join("run.log")).unwrap(),
            b""
        );
        // The bundle's temp files, empty, so writing the bundle creates no inode.
        for name in crate::store::layout::BUNDLE_FILES {
            let temp = crate::store::atomic::prepared_temp(&rd.bundle(&id, "mpi").join(name));
            assert_eq!(std::fs::read(&temp).unwrap(), b"", "{}", temp.display());
        }
        assert!(rd.bundle(&other, "host").is_dir());
    }

    #[test]
    fn the_thread_stays_within_its_window_of_the_runs() {
        let tmp = tempfile::tempdir().unwrap();
        let rd = Arc::new(RunDir::open(tmp.path()));
        let n = AHEAD + 50;
        let cases: Vec<Case> = (0..n)
            .map(|i| Case::new(Variant::Mesh, 2, 1 + i as u64))
            .collect();
        let ids: Vec<String> = cases.iter().map(Case::case_id).collect();
        let runs = (ids.iter().enumerate()).map(|(i, id)| (id.clone(), i, "host".to_string()));
        let cf = Arc::new(CaseFiles::new(rd.clone(), Arc::new(cases), runs));
        let thread = cf.start().unwrap();
        // The thread writes the first AHEAD cases, then waits for a run to ask for one.
        let last_in = rd.case_file(&ids[AHEAD - 1]);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while !last_in.exists() {
            assert!(
                std::time::Instant::now() < deadline,
                "the window was never written"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        // Asking for case 10 moves the window by 11: the thread may now write up to AHEAD + 10.
        cf.ensure(&ids[10]).unwrap();
        let moved = rd.case_file(&ids[AHEAD + 10]);
        while !moved.exists() {
            assert!(
                std::time::Instant::now() < deadline,
                "the window never moved"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        cf.finish(thread);
        assert!(
            !rd.case_file(&ids[AHEAD + 11]).exists(),
            "a case beyond the window was written"
        );
        // A run beyond the window writes its own case.
        cf.ensure(&ids[n - 1]).unwrap();
        assert!(rd.case_file(&ids[n - 1]).exists());
    }

    #[test]
    fn a_run_ahead_of_the_thread_writes_its_case_and_a_damaged_file_is_rewritten() {
        let tmp = tempfile::tempdir().unwrap();
        let (cf, rd) = files(tmp.path());
        let id = Case::new(Variant::Ring, 2, 64).case_id();
        std::fs::create_dir_all(rd.case_file(&id).parent().unwrap()).unwrap();
        std::fs::write(rd.case_file(&id), "").unwrap();
        // A log of an earlier session is kept whole.
        std::fs::create_dir_all(rd.bundle(&id, "host")).unwrap();
        std::fs::write(rd.bundle(&id, "host").join("run.log"), "earlier\n").unwrap();
        cf.ensure(&id).unwrap();
        // A run waits for its case's files only; the bundle's temp files are the thread's.
        let timing = rd.bundle(&id, "host").join("timing.json");
        assert!(!crate::store::atomic::prepared_temp(&timing).exists());
        let log = std::fs::read_to_string(rd.bundle(&id, "host").join("run.log")).unwrap();
        assert_eq!(log, "earlier\n");
        let text = std::fs::read_to_string(rd.case_file(&id)).unwrap();
        assert_eq!(text, Case::new(Variant::Ring, 2, 64).to_pretty_json());
        // Unplanned ids have nothing to write.
        cf.ensure("not_planned").unwrap();
    }

    #[test]
    fn a_case_that_cannot_be_written_fails_the_run_that_needs_it() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("cases"), "a file, not a folder").unwrap();
        let (cf, _) = files(tmp.path());
        let id = Case::new(Variant::Mesh, 2, 64).case_id();
        let err = cf.ensure(&id).unwrap_err();
        assert!(err.to_string().contains("cases"), "{err}");
        // The same answer again, without writing twice.
        assert_eq!(cf.ensure(&id).unwrap_err().to_string(), err.to_string());
    }
}
