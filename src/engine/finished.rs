//! How a campaign ended, as a tally: what `campaign run`/`resume` print and their exit code come
//! from. Made at the end of `drive`, or from the journal alone by a resume that finds every run
//! done (`session`). It holds no result set and does no I/O.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::model::results::{ResultSet, RunStatus};

/// How a campaign ended: what `campaign run`/`resume` print and their exit code come from.
/// A tally, not the result set: a resume of a finished 100,000-run dir has no samples to show
/// and should not build a record per run just to count them.
pub(crate) struct Finished {
    pub(crate) run_dir: PathBuf,
    /// Planned runs, all statuses.
    pub(crate) runs: usize,
    /// Runs per status (every status present, zero or not).
    pub(crate) counts: BTreeMap<RunStatus, usize>,
    /// Failed and timed-out runs in planned order: status, case id, stack, error.
    pub(crate) failures: Vec<(RunStatus, String, String, Option<String>)>,
    /// Quarantined device → why.
    pub(crate) quarantined: BTreeMap<String, String>,
    pub(crate) interrupted: bool,
    /// Steps after the runs (the report) that failed, with why.
    pub(crate) after_failed: Vec<(String, String)>,
}

impl Finished {
    /// Tally `runs` (status, case id, stack, error of each).
    pub(crate) fn tally<'a>(
        run_dir: PathBuf,
        runs: impl Iterator<Item = (RunStatus, &'a str, &'a str, Option<&'a str>)>,
        quarantined: BTreeMap<String, String>,
        interrupted: bool,
    ) -> Finished {
        let mut counts: BTreeMap<RunStatus, usize> =
            RunStatus::ALL.iter().map(|s| (*s, 0)).collect();
        let mut failures = Vec::new();
        let mut total = 0;
        for (status, case_id, stack, error) in runs {
            total += 1;
            *counts.entry(status).or_default() += 1;
            if status.is_failure() {
                let error = error.map(str::to_string);
                failures.push((status, case_id.to_string(), stack.to_string(), error));
            }
        }
        Finished {
            run_dir,
            runs: total,
            counts,
            failures,
            quarantined,
            interrupted,
            after_failed: Vec::new(),
        }
    }

    pub(crate) fn of(run_dir: PathBuf, set: &ResultSet, interrupted: bool) -> Finished {
        let runs = (set.runs.iter()).map(|r| {
            (
                r.status,
                r.case_id.as_str(),
                r.stack.as_str(),
                r.error.as_deref(),
            )
        });
        Finished::tally(run_dir, runs, set.quarantined.clone(), interrupted)
    }
}
