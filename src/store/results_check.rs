//! Whether a run dir's results files already show exactly the runs its journal records, so a
//! resume with nothing to run can skip reading every bundle back (docs/journal.md, "Resume
//! rules", "Nothing to run").
//!
//! The journal is trusted: a run it records as finished is taken as its `finished` line says,
//! and no bundle is looked at — not even stat'ed (a cold stat per bundle in a 100,000-entry
//! `cases/` costs half a minute). A bundle damaged after its run finished is noticed where it
//! is read: `campaign resume --verify`, a resume that rebuilds, and `campaign report`.
//!
//! The check is split in two so its I/O overlaps the resume's own work: [`start`] reads
//! `results.csv` (one sequential read) on a thread of its own while the journal is replayed
//! and the plan prepared, and [`Check::matches`] then compares the rows with the journal's
//! runs. Reading never writes, and anything unexpected — a missing or empty results file, an
//! unreadable row — answers false: the caller then reads the bundles as always.

use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustix::fs::{statat, AtFlags, FileType};

use crate::model::results::RunStatus;

/// How much earlier than the journal's latest `finished` line the results files may seem
/// written: file times come from the kernel's coarse clock (up to a tick behind the clock the
/// journal reads). A run that ran again in a later session finished far more than this after
/// the results files the earlier session wrote.
const CLOCK_SLACK: Duration = Duration::from_millis(50);

/// One finished run as the journal recorded it, for [`Check::matches`].
pub(crate) struct Recorded<'a> {
    pub(crate) case_id: &'a str,
    pub(crate) stack: &'a str,
    pub(crate) status: RunStatus,
    /// The sample count of the run's `finished` line.
    pub(crate) samples: u64,
}

/// The rows of `results.csv` that matter: the text of
/// each row's case id, stack and status back to back in one string (a row is three ends in it),
/// so 100,000 rows cost two allocations, not 300,000.
struct Rows {
    /// When the oldest of the three results files was last written, or later proven current
    /// (the results stamp's time).
    written_at: SystemTime,
    text: String,
    rows: Vec<Row>,
}

struct Row {
    case_end: usize,
    stack_end: usize,
    status_end: usize,
    samples: u64,
}

/// A check under way ([`start`]).
pub(crate) struct Check {
    stop: Arc<AtomicBool>,
    rows: Option<JoinHandle<Option<Rows>>>,
}

/// Start reading `dir`'s `results.csv` on a thread.
pub(crate) fn start(dir: &Path) -> Check {
    let stop = Arc::new(AtomicBool::new(false));
    let dir = dir.to_path_buf();
    let flag = Arc::clone(&stop);
    let rows = std::thread::Builder::new()
        .name("results-check".into())
        .spawn(move || read_rows(&dir, &flag))
        // No thread (resource limits): no shortcut, the resume reads the bundles.
        .ok();
    Check { stop, rows }
}

impl Check {
    /// True when `results.json`, `results.csv` and `samples.csv` are there (one write makes all
    /// three), `results.csv` lists exactly the runs of `recorded` in that order, each with the
    /// journal's status and sample count (a `pass` with timed samples), and the results files
    /// were written after `last_finished` (the time of the journal's latest `finished` line: a
    /// run that ran again with the same status and sample count, its session killed before the
    /// results files were rewritten, shows here). The bundles are not looked at: the journal
    /// vouches for them.
    pub(crate) fn matches(mut self, recorded: &[Recorded], last_finished: SystemTime) -> bool {
        let Some(Ok(Some(rows))) = self.rows.take().map(JoinHandle::join) else {
            return false;
        };
        if rows.rows.len() != recorded.len() || rows.written_at + CLOCK_SLACK < last_finished {
            return false;
        }
        // Mostly in the journal's planned order; a campaign too large for its header to list
        // the steps (above 10,000 runs) has its results files in bundle order, so the rows are
        // then matched by run instead.
        rows.in_order(recorded) || rows.by_run(recorded)
    }
}

impl Rows {
    /// Row `i`'s case id, stack and status.
    fn row(&self, i: usize) -> (&str, &str, &str) {
        let start = i.checked_sub(1).map_or(0, |p| self.rows[p].status_end);
        let r = &self.rows[i];
        (
            &self.text[start..r.case_end],
            &self.text[r.case_end..r.stack_end],
            &self.text[r.stack_end..r.status_end],
        )
    }

    /// Row `i` shows the run `rec` as the journal recorded it.
    fn shows(&self, i: usize, rec: &Recorded<'_>) -> bool {
        let (case_id, stack, status) = self.row(i);
        case_id == rec.case_id
            && stack == rec.stack
            && status == rec.status.as_str()
            && self.rows[i].samples == rec.samples
    }

    /// Row `i` shows `recorded[i]`, for every `i` (as many rows as runs: checked by the caller).
    fn in_order(&self, recorded: &[Recorded<'_>]) -> bool {
        (recorded.iter().enumerate()).all(|(i, rec)| self.shows(i, rec))
    }

    /// Every run of `recorded` has exactly one row showing it, in any order.
    fn by_run(&self, recorded: &[Recorded<'_>]) -> bool {
        let mut at: std::collections::HashMap<(&str, &str), usize> =
            std::collections::HashMap::with_capacity(self.rows.len());
        for i in 0..self.rows.len() {
            let (case_id, stack, _) = self.row(i);
            if at.insert((case_id, stack), i).is_some() {
                return false;
            }
        }
        (recorded.iter())
            .all(|rec| (at.get(&(rec.case_id, rec.stack))).is_some_and(|&i| self.shows(i, rec)))
    }
}

impl Drop for Check {
    /// Not needed after all (something runs): the thread stops at its next row.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// `name` relative to the open `dir`: a non-empty regular file's modification time.
fn written(dir: &File, name: &str) -> Option<SystemTime> {
    let st = statat(dir, name, AtFlags::empty()).ok()?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile || st.st_size == 0 {
        return None;
    }
    let (secs, nanos) = (u64::try_from(st.st_mtime).ok()?, st.st_mtime_nsec as u32);
    Some(UNIX_EPOCH + Duration::new(secs, nanos))
}

/// The rows of `dir`'s `results.csv`, or `None` as soon as anything disagrees with a current
/// set of results files (or `stop` is raised).
fn read_rows(dir: &Path, stop: &AtomicBool) -> Option<Rows> {
    let fd = File::open(dir).ok()?;
    // One write makes all three; a missing one is a rebuild cut short.
    let written_at = ["results.json", "results.csv", "samples.csv"]
        .iter()
        .map(|name| written(&fd, name))
        .collect::<Option<Vec<SystemTime>>>()?
        .into_iter()
        .min()?;
    // A rewrite that found the files already current leaves them as they are and marks the
    // stamp instead (`store::rebuild::write_results_of`): proven then counts as written then.
    let written_at = match written(&fd, crate::store::results_stamp::FILE_NAME) {
        Some(proven) => written_at.max(proven),
        None => written_at,
    };
    let mut csv = ::csv::Reader::from_path(dir.join("results.csv")).ok()?;
    let header = csv.byte_headers().ok()?;
    let column = |name: &str| header.iter().position(|h| h == name.as_bytes());
    let (case_id, stack, status, warmup, timed) = (
        column("case_id")?,
        column("stack")?,
        column("status")?,
        column("n_warmup")?,
        column("n_timed")?,
    );
    let number = |field: Option<&[u8]>| std::str::from_utf8(field?).ok()?.parse::<u64>().ok();
    fn text(field: Option<&[u8]>) -> Option<&str> {
        std::str::from_utf8(field?).ok()
    }
    let mut out = Rows {
        written_at,
        text: String::new(),
        rows: Vec::new(),
    };
    let mut row = ::csv::ByteRecord::new();
    while csv.read_byte_record(&mut row).ok()? {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        let (n_warmup, n_timed) = (number(row.get(warmup))?, number(row.get(timed))?);
        let samples = n_warmup + n_timed;
        let status_text = text(row.get(status))?;
        if status_text == RunStatus::Pass.as_str() && n_timed == 0 {
            return None;
        }
        out.text.push_str(text(row.get(case_id))?);
        let case_end = out.text.len();
        out.text.push_str(text(row.get(stack))?);
        let stack_end = out.text.len();
        out.text.push_str(status_text);
        out.rows.push(Row {
            case_end,
            stack_end,
            status_end: out.text.len(),
            samples,
        });
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set_mtime(path: &Path, at: SystemTime) {
        let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
        f.set_modified(at).unwrap();
    }

    /// A minute from now: when the results files of [`run_dir`] were written.
    fn results_written() -> SystemTime {
        SystemTime::now() + Duration::from_secs(60)
    }

    /// A run dir of two runs (a pass with 3 samples, a skipped one) whose results files were
    /// written a minute from now, after every `finished` line of [`journal`].
    fn run_dir() -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let bundles = [("c1", "s", true), ("c2", "s", false)];
        for (case, stack, timing) in bundles {
            let b = d.join("cases").join(case).join(stack);
            std::fs::create_dir_all(&b).unwrap();
            std::fs::write(b.join("manifest.json"), "{}").unwrap();
            if timing {
                std::fs::write(b.join("timing.json"), "[]").unwrap();
            }
        }
        std::fs::write(
            d.join("results.csv"),
            "case_id,stack,status,n_warmup,n_timed,artifact_bundle\n\
             c1,s,pass,1,2,cases/c1/s\n\
             c2,s,skipped,0,0,cases/c2/s\n",
        )
        .unwrap();
        std::fs::write(d.join("results.json"), "{}").unwrap();
        std::fs::write(d.join("samples.csv"), "x\n").unwrap();
        let later = results_written();
        for name in ["results.csv", "results.json", "samples.csv"] {
            set_mtime(&d.join(name), later);
        }
        tmp
    }

    fn journal() -> Vec<Recorded<'static>> {
        vec![
            Recorded {
                case_id: "c1",
                stack: "s",
                status: RunStatus::Pass,
                samples: 3,
            },
            Recorded {
                case_id: "c2",
                stack: "s",
                status: RunStatus::Skipped,
                samples: 0,
            },
        ]
    }

    #[test]
    fn results_files_showing_the_journals_runs_match() {
        let dir = run_dir();
        assert!(start(dir.path()).matches(&journal(), SystemTime::now()));
    }

    /// A campaign of more than 10,000 runs has no step list in its journal header, so its
    /// results files are in bundle order, not planned order: the same runs in another order
    /// still match (every such resume rebuilt everything before: 18 s for 100,000 runs), while
    /// a row listed twice, or one the journal does not record, does not.
    #[test]
    fn the_same_runs_in_bundle_order_match_and_a_run_listed_twice_does_not() {
        let dir = run_dir();
        let mut reversed = journal();
        reversed.reverse();
        assert!(start(dir.path()).matches(&reversed, SystemTime::now()));
        let mut other = journal();
        other.reverse();
        other[0].status = RunStatus::Fail;
        assert!(!start(dir.path()).matches(&other, SystemTime::now()));
        let csv = dir.path().join("results.csv");
        std::fs::write(
            &csv,
            "case_id,stack,status,n_warmup,n_timed,artifact_bundle\n\
             c1,s,pass,1,2,cases/c1/s\n\
             c1,s,pass,1,2,cases/c1/s\n",
        )
        .unwrap();
        set_mtime(&csv, results_written());
        assert!(!start(dir.path()).matches(&reversed, SystemTime::now()));
    }

    /// The journal is trusted: a bundle damaged after the results files were written (its
    /// timing file garbage, written later, or gone) is not looked at here.
    #[test]
    fn bundles_are_not_looked_at() {
        let dir = run_dir();
        let timing = dir.path().join("cases/c1/s/timing.json");
        std::fs::write(&timing, "not json").unwrap();
        set_mtime(&timing, results_written() + Duration::from_secs(60));
        std::fs::remove_file(dir.path().join("cases/c2/s/manifest.json")).unwrap();
        assert!(start(dir.path()).matches(&journal(), SystemTime::now()));
    }

    #[test]
    fn any_disagreement_with_the_journal_or_a_later_finished_line_does_not_match() {
        let dir = run_dir();
        let now = SystemTime::now();
        let mut other = journal();
        other[1].status = RunStatus::Fail;
        assert!(!start(dir.path()).matches(&other, now));
        let mut other = journal();
        other[0].samples = 4;
        assert!(!start(dir.path()).matches(&other, now));
        assert!(!start(dir.path()).matches(&journal()[..1], now));
        // A run finished again after the results files were written (its session killed
        // before it rewrote them): same status and sample count, other numbers.
        let later = results_written() + Duration::from_secs(1);
        assert!(!start(dir.path()).matches(&journal(), later));
        // ... unless a later rewrite proved them current and marked the stamp then.
        let stamp = dir.path().join(crate::store::results_stamp::FILE_NAME);
        std::fs::write(&stamp, "{}").unwrap();
        set_mtime(&stamp, later + Duration::from_secs(1));
        assert!(start(dir.path()).matches(&journal(), later));
        set_mtime(&stamp, later - Duration::from_secs(10));
        assert!(!start(dir.path()).matches(&journal(), later));
        // An empty results file (a power loss).
        std::fs::write(dir.path().join("results.json"), "").unwrap();
        assert!(!start(dir.path()).matches(&journal(), now));
        // No samples.csv.
        let dir = run_dir();
        std::fs::remove_file(dir.path().join("samples.csv")).unwrap();
        assert!(!start(dir.path()).matches(&journal(), now));
    }
}
