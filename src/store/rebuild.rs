//! `campaign report`'s rebuild of a campaign run dir: the runs read back from their bundles put
//! in the order `run` wrote them (the journal header's planned steps), the runs the journal
//! finished but whose bundle is gone named, and the results files rewritten from the bundles.
//!
//! Reads the journal and writes `results.json`, `results.csv`, `samples.csv` (atomically, as
//! the engine does); computes nothing itself.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::Result;
use crate::model::results::{ResultSet, RunResult, RunStatus};
use crate::store::atomic::Staged;
use crate::store::journal::{parse_run_step, replay, FILE_NAME};
use crate::store::{results_csv, results_json};

/// A run the journal says finished whose bundle (manifest) is missing.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MissingRun {
    pub(crate) case_id: String,
    pub(crate) stack: String,
    /// The status the journal recorded.
    pub(crate) status: RunStatus,
}

/// Where the runs of a loaded set go in planned order, and the finished runs that have no
/// bundle: worked out from the journal while the set is still read in loaded order (the
/// history records it so), applied after.
#[derive(Debug)]
pub(crate) struct PlannedOrder {
    /// Each run's rank in the plan, by index in the loaded set; None: keep the loaded order.
    ranks: Option<Vec<usize>>,
    missing: Vec<MissingRun>,
}

impl PlannedOrder {
    /// Sort `set.runs` (the set this order was worked out for) in planned order — runs the plan
    /// did not list go last, in bundle order — and return the finished runs with no bundle.
    pub(crate) fn apply(self, set: &mut ResultSet) -> Vec<MissingRun> {
        if let Some(ranks) = self.ranks {
            let mut runs: Vec<(usize, RunResult)> = set.runs.drain(..).enumerate().collect();
            // Stable, like sorting the runs themselves by their rank.
            runs.sort_by_key(|(i, _)| ranks.get(*i).copied().unwrap_or(usize::MAX));
            set.runs = runs.into_iter().map(|(_, r)| r).collect();
        }
        self.missing
    }
}

/// The planned order of `set.runs` (the journal header's `steps`) and the finished runs that
/// have no bundle. A run dir without a journal keeps its bundle order and reports nothing
/// missing.
pub(crate) fn planned_order(dir: &Path, set: &ResultSet) -> Result<PlannedOrder> {
    let path = dir.join(FILE_NAME);
    if !path.is_file() {
        return Ok(PlannedOrder {
            ranks: None,
            missing: Vec::new(),
        });
    }
    let journal = replay(&path)?;
    let planned: Vec<String> = journal
        .header
        .get("steps")
        .and_then(|s| s.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let rank: BTreeMap<(&str, &str), usize> = planned
        .iter()
        .filter_map(|s| parse_run_step(s))
        .enumerate()
        .map(|(i, k)| (k, i))
        .collect();
    let ranks = set
        .runs
        .iter()
        .map(|r| {
            rank.get(&(r.case_id.as_str(), r.stack.as_str()))
                .copied()
                .unwrap_or(usize::MAX)
        })
        .collect();
    let present: std::collections::BTreeSet<(&str, &str)> = set
        .runs
        .iter()
        .map(|r| (r.case_id.as_str(), r.stack.as_str()))
        .collect();
    let mut missing: Vec<(usize, MissingRun)> = journal
        .steps_in_key_order()
        .into_iter()
        .filter_map(|(step, state)| {
            let (case_id, stack) = parse_run_step(step)?;
            let status = state.status()?;
            (!present.contains(&(case_id, stack))).then(|| {
                let at = rank.get(&(case_id, stack)).copied().unwrap_or(usize::MAX);
                let run = MissingRun {
                    case_id: case_id.to_string(),
                    stack: stack.to_string(),
                    status,
                };
                (at, run)
            })
        })
        .collect();
    missing.sort_by_key(|(at, _)| *at);
    Ok(PlannedOrder {
        ranks: Some(ranks),
        missing: missing.into_iter().map(|(_, m)| m).collect(),
    })
}

/// Rewrite `results.json`, `results.csv` and `samples.csv` of `dir` from `set`, each written
/// straight into its temp file (never held in memory whole), all three replaced together.
pub(crate) fn write_results(dir: &Path, set: &ResultSet) -> Result<()> {
    let mut staged = Staged::new();
    staged.write(&dir.join("results.json"), |w| {
        results_json::write_document(set, w)
    })?;
    staged.write(&dir.join("results.csv"), |w| {
        results_csv::write_results_csv(set, w)
    })?;
    staged.write(&dir.join("samples.csv"), |w| {
        results_csv::write_samples_csv(set, w)
    })?;
    staged.commit()
}
