//! `campaign report`'s rebuild of a campaign run dir: the runs read back from their bundles put
//! in the order `run` wrote them (the journal header's planned steps), the runs the journal
//! finished but whose bundle is gone named, and the results files rewritten from the bundles.
//!
//! Reads the journal and writes `results.json`, `results.csv`, `samples.csv` (atomically, as
//! the engine does); computes nothing itself.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::Result;
use crate::model::results::{ResultSet, RunStatus};
use crate::store::atomic::write_atomic_all;
use crate::store::journal::{parse_run_step, replay, FILE_NAME};
use crate::store::{csv, json};

/// A run the journal says finished whose bundle (manifest) is missing.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MissingRun {
    pub(crate) case_id: String,
    pub(crate) stack: String,
    /// The status the journal recorded.
    pub(crate) status: RunStatus,
}

/// Sort `set.runs` in planned order (the journal header's `steps`; runs the plan did not list
/// go last, in bundle order) and return the finished runs that have no bundle. A run dir
/// without a journal keeps its bundle order and reports nothing missing.
pub(crate) fn order_as_planned(dir: &Path, set: &mut ResultSet) -> Result<Vec<MissingRun>> {
    let path = dir.join(FILE_NAME);
    if !path.is_file() {
        return Ok(Vec::new());
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
    set.runs.sort_by_key(|r| {
        rank.get(&(r.case_id.as_str(), r.stack.as_str()))
            .copied()
            .unwrap_or(usize::MAX)
    });
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
    Ok(missing.into_iter().map(|(_, m)| m).collect())
}

/// Rewrite `results.json`, `results.csv` and `samples.csv` of `dir` from `set`.
pub(crate) fn write_results(dir: &Path, set: &ResultSet) -> Result<()> {
    let (doc, runs, samples) = (
        json::document_text(set),
        csv::results_csv(set),
        csv::samples_csv(set),
    );
    write_atomic_all(&[
        (&dir.join("results.json"), doc.as_bytes()),
        (&dir.join("results.csv"), runs.as_bytes()),
        (&dir.join("samples.csv"), samples.as_bytes()),
    ])
}
