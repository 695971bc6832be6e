//! `campaign report`'s rebuild of a campaign run dir: the runs read back from their bundles put
//! in the order `run` wrote them (the journal header's planned steps), the runs the journal
//! finished but whose bundle is gone named, and the results files rewritten from the bundles.
//!
//! Reads the journal and writes `results.json`, `results.csv`, `samples.csv` (atomically, as
//! the engine does); computes nothing itself.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{Error, Result};
use crate::model::results::{ResultSet, RunResult, RunStatus};
use crate::store::atomic::Staged;
use crate::store::journal::{parse_run_step, replay, FILE_NAME};
use crate::store::results_stamp::{self, FileSum, Summing};
use crate::store::{results_csv, results_json, set_digest};

/// A run the journal says finished whose bundle (manifest) is missing.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MissingRun {
    pub(crate) case_id: String,
    pub(crate) stack: String,
    /// The status the journal recorded.
    pub(crate) status: RunStatus,
}

/// A run whose bundle reads back with another number of samples than its journal `finished`
/// line recorded: the bundle was damaged or replaced after the run finished.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Recounted {
    pub(crate) case_id: String,
    pub(crate) stack: String,
    /// The `finished` line's sample count.
    pub(crate) journal: u64,
    /// The samples the bundle holds.
    pub(crate) bundle: usize,
}

/// What the journal says of the bundles that [`PlannedOrder::apply`] hands back: the finished
/// runs with no bundle, and those whose bundle holds another sample count.
#[derive(Debug, Default)]
pub(crate) struct Disagreements {
    pub(crate) missing: Vec<MissingRun>,
    pub(crate) recounted: Vec<Recounted>,
}

/// Where the runs of a loaded set go in planned order, and the finished runs whose bundle is
/// gone or disagrees with the journal: worked out from the journal while the set is still read
/// in loaded order (the history records it so), applied after.
#[derive(Debug)]
pub(crate) struct PlannedOrder {
    /// Each run's rank in the plan, by index in the loaded set; None: keep the loaded order.
    ranks: Option<Vec<usize>>,
    found: Disagreements,
}

impl PlannedOrder {
    /// Sort `set.runs` (the set this order was worked out for) in planned order — runs the plan
    /// did not list go last, in bundle order — and return what the journal disagrees with.
    pub(crate) fn apply(self, set: &mut ResultSet) -> Disagreements {
        if let Some(ranks) = self.ranks {
            let mut runs: Vec<(usize, RunResult)> = set.runs.drain(..).enumerate().collect();
            // Stable, like sorting the runs themselves by their rank.
            runs.sort_by_key(|(i, _)| ranks.get(*i).copied().unwrap_or(usize::MAX));
            set.runs = runs.into_iter().map(|(_, r)| r).collect();
        }
        self.found
    }
}

/// The planned order of `set.runs` (the journal header's `steps`), the finished runs that
/// have no bundle, and those whose bundle holds another number of samples than their latest
/// `finished` line. A run dir without a journal keeps its bundle order and reports nothing.
pub(crate) fn planned_order(dir: &Path, set: &ResultSet) -> Result<PlannedOrder> {
    let path = dir.join(FILE_NAME);
    if !path.is_file() {
        return Ok(PlannedOrder {
            ranks: None,
            found: Disagreements::default(),
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
    // In bundle order, as they were read.
    let recounted = (set.runs.iter())
        .filter_map(|r| {
            let step = crate::store::journal::run_step(&r.case_id, &r.stack);
            let recorded = journal.step(&step)?.last_finished.as_ref()?.samples?;
            (recorded != r.samples.len() as u64).then(|| Recounted {
                case_id: r.case_id.clone(),
                stack: r.stack.clone(),
                journal: recorded,
                bundle: r.samples.len(),
            })
        })
        .collect();
    Ok(PlannedOrder {
        ranks: Some(ranks),
        found: Disagreements {
            missing: missing.into_iter().map(|(_, m)| m).collect(),
            recounted,
        },
    })
}

/// What [`write_results`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rewrite {
    /// The files were written from the set.
    Written,
    /// The files already held exactly what the set gives (`store::results_stamp`): untouched.
    Unchanged,
}

/// The results files, in the order they are written, and their writers (results.json with the
/// report's answers when it has them).
type FileWriter =
    fn(&ResultSet, Option<&serde_json::Value>, &mut dyn std::io::Write) -> std::io::Result<()>;
const RESULTS_FILES: [(&str, FileWriter); 3] = [
    ("results.json", |set, answers, w| {
        results_json::write_document(set, answers, w)
    }),
    ("results.csv", |set, _, w| {
        results_csv::write_results_csv(set, w)
    }),
    ("samples.csv", |set, _, w| {
        results_csv::write_samples_csv(set, w)
    }),
];

/// Write `results.json`, `results.csv` and `samples.csv` of `dir` from `set`, each straight
/// into its temp file (never held in memory whole), all three replaced together — unless the
/// run dir's results stamp proves the files on disk are already this set's text, when nothing
/// is written (`store::results_stamp`). The stamp is recorded after every write.
pub(crate) fn write_results(dir: &Path, set: &ResultSet) -> Result<Rewrite> {
    write_results_of(dir, set, &set_digest::digest(set))
}

/// [`write_results`] of a set whose `store::set_digest` is `input` (worked out once by a caller
/// that needs it too). Files that already carry the report's answers for this very set are
/// current too: the answers are a function of the set and the report's options, and only the
/// report step writes them (`write_results_answering`).
pub(crate) fn write_results_of(dir: &Path, set: &ResultSet, input: &[u8; 32]) -> Result<Rewrite> {
    write_results_with(dir, set, input, None)
}

/// [`write_results_of`] with the report's `answers` in results.json (`store::results_json`):
/// rewritten unless the files already hold this set *and* these answers.
pub(crate) fn write_results_answering(
    dir: &Path,
    set: &ResultSet,
    input: &[u8; 32],
    answers: &serde_json::Value,
) -> Result<Rewrite> {
    write_results_with(dir, set, input, Some(answers))
}

/// The stamp's record of the answers results.json carries: their digest.
fn answers_mark(answers: Option<&serde_json::Value>) -> serde_json::Value {
    answers.map_or(
        serde_json::Value::Null,
        |a| serde_json::json!({ "answers": hex::encode(set_digest::digest(a)) }),
    )
}

fn write_results_with(
    dir: &Path,
    set: &ResultSet,
    input: &[u8; 32],
    answers: Option<&serde_json::Value>,
) -> Result<Rewrite> {
    let names = RESULTS_FILES.map(|(name, _)| name);
    let mark = answers_mark(answers);
    let proof = results_stamp::proven_files(dir, results_stamp::FILE_NAME, input, Some(&names));
    // Files of this very set that only lack (or carry other) answers: the CSVs, which hold no
    // answers, are kept as they are and only results.json is written again.
    let mut kept: Vec<FileSum> = Vec::new();
    if let Some((extra, files)) = proof {
        if answers.is_none() || extra == mark {
            // Proven current now: the stamp's time says so to resume's check (`results_check`),
            // which trusts results files only when written — or proven — after the journal's last
            // `finished` line. Synced first, as a write would be.
            sync_filesystem(dir)?;
            results_stamp::touch(dir);
            return Ok(Rewrite::Unchanged);
        }
        kept = files
            .into_iter()
            .filter(|f| f.name != "results.json")
            .collect();
    }
    let mut staged = Staged::new();
    let mut sums = Vec::with_capacity(RESULTS_FILES.len());
    for (name, write) in RESULTS_FILES {
        if let Some(k) = kept.iter().find(|k| k.name == name) {
            sums.push(k.clone());
            continue;
        }
        let mut sum = None;
        staged.write(&dir.join(name), |w| {
            // Summed in 64 KiB pieces, not the writers' many small ones.
            let mut out = std::io::BufWriter::with_capacity(1 << 16, Summing::new(w));
            write(set, answers, &mut out)?;
            let summing = out.into_inner().map_err(|e| e.into_error())?;
            sum = Some(summing.finish());
            Ok(())
        })?;
        let (bytes, sha256) = sum.unwrap_or_default();
        sums.push(FileSum {
            name: name.to_string(),
            bytes,
            sha256,
            // Taken by `results_stamp::record_as` once the files are renamed into place.
            stat: None,
        });
    }
    // Every bundle the set was read from reaches the disk before the files that list it: a
    // resume trusts results files newer than the journal's last `finished` line without
    // reading a bundle, so after a power loss those bundles must be whole (bundles are written
    // unsynced, one `syncfs` here covers all of them at once).
    sync_filesystem(dir)?;
    staged.commit()?;
    results_stamp::record_as(dir, results_stamp::FILE_NAME, input, sums, mark)?;
    Ok(Rewrite::Written)
}

/// Flush every dirty file of the file system holding `dir` (`syncfs`).
fn sync_filesystem(dir: &Path) -> Result<()> {
    let io = |e: std::io::Error| Error::Io {
        path: dir.to_path_buf(),
        source: e,
    };
    let fd = std::fs::File::open(dir).map_err(io)?;
    rustix::fs::syncfs(&fd).map_err(|e| io(e.into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::journal::Journal;
    use crate::store::results_json::tests::result;
    use serde_json::{json, Map};
    use std::os::unix::fs::MetadataExt;

    /// (inode, mtime in ns) of each results file.
    fn identity(dir: &Path) -> Vec<(u64, i64, i64)> {
        RESULTS_FILES
            .iter()
            .map(|(name, _)| {
                let m = std::fs::metadata(dir.join(name)).unwrap();
                (m.ino(), m.mtime(), m.mtime_nsec())
            })
            .collect()
    }

    #[test]
    fn the_reports_answers_are_written_once_and_kept_by_plain_rewrites_of_the_same_set() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let set = ResultSet {
            campaign: "c".into(),
            runs: vec![result(RunStatus::Pass)],
            ..ResultSet::default()
        };
        let input = set_digest::digest(&set);
        let answers = json!({"regret": [], "crossovers": [{"line": "l"}], "crossover_map": []});
        let read = || -> serde_json::Value {
            serde_json::from_slice(&std::fs::read(dir.join("results.json")).unwrap()).unwrap()
        };
        assert_eq!(write_results(dir, &set).unwrap(), Rewrite::Written);
        assert!(read().get("crossovers").is_none(), "none before the report");
        let before = identity(dir);
        let written = write_results_answering(dir, &set, &input, &answers).unwrap();
        assert_eq!(written, Rewrite::Written);
        // Only results.json was written again: the CSVs hold no answers.
        let after = identity(dir);
        assert_ne!(before[0], after[0]);
        assert_eq!(before[1..], after[1..]);
        assert_eq!(read()["crossovers"][0]["line"], "l");
        assert_eq!(read()["regret"], json!([]));
        let again = write_results_answering(dir, &set, &input, &answers).unwrap();
        assert_eq!(again, Rewrite::Unchanged);
        // The campaign's own rewrite of the same set keeps the answers.
        assert_eq!(write_results(dir, &set).unwrap(), Rewrite::Unchanged);
        assert_eq!(read()["crossovers"][0]["line"], "l");
        let other = json!({"regret": [1], "crossovers": [], "crossover_map": []});
        let changed = write_results_answering(dir, &set, &input, &other).unwrap();
        assert_eq!(changed, Rewrite::Written);
        assert_eq!(read()["regret"], json!([1]));
    }

    #[test]
    fn the_same_set_leaves_the_files_untouched_and_a_change_rewrites_them() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let mut set = ResultSet {
            campaign: "smoke".into(),
            runs: vec![result(RunStatus::Pass), result(RunStatus::Fail)],
            ..ResultSet::default()
        };
        assert_eq!(write_results(dir, &set).unwrap(), Rewrite::Written);
        let before = identity(dir);
        let text = std::fs::read(dir.join("samples.csv")).unwrap();
        assert_eq!(write_results(dir, &set).unwrap(), Rewrite::Unchanged);
        assert_eq!(identity(dir), before);
        // One sample's value changed: every file is written again, with the new value.
        set.runs[0].samples[1].execute_s = Some(1.5);
        assert_eq!(write_results(dir, &set).unwrap(), Rewrite::Written);
        assert_ne!(std::fs::read(dir.join("samples.csv")).unwrap(), text);
        assert_eq!(write_results(dir, &set).unwrap(), Rewrite::Unchanged);
    }

    #[test]
    fn a_hand_edited_or_removed_results_file_is_written_again() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let set = ResultSet {
            campaign: "smoke".into(),
            runs: vec![result(RunStatus::Pass)],
            ..ResultSet::default()
        };
        write_results(dir, &set).unwrap();
        let want = std::fs::read_to_string(dir.join("results.csv")).unwrap();
        // Same length: one letter swapped for another.
        let edited = want.replacen("host", "hoxt", 1);
        assert_eq!(edited.len(), want.len());
        std::fs::write(dir.join("results.csv"), &edited).unwrap();
        assert_eq!(write_results(dir, &set).unwrap(), Rewrite::Written);
        assert_eq!(
            std::fs::read_to_string(dir.join("results.csv")).unwrap(),
            want
        );
        std::fs::remove_file(dir.join("samples.csv")).unwrap();
        assert_eq!(write_results(dir, &set).unwrap(), Rewrite::Written);
        assert!(dir.join("samples.csv").is_file());
    }

    /// A bundle that reads back with another sample count than its latest `finished` line is
    /// named; one that agrees, or whose line does not say (older journals), is not.
    #[test]
    fn a_bundle_holding_another_sample_count_than_its_finished_line_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        let mut journal = Journal::create(tmp.path(), json!({"campaign": "c"})).unwrap();
        let mut runs = Vec::new();
        for (case, recorded) in [("a", Some(4)), ("b", Some(3)), ("c", None)] {
            let mut run = result(RunStatus::Pass);
            run.case_id = case.into();
            let step = crate::store::journal::run_step(case, "host");
            let mut extra = Map::new();
            if let Some(n) = recorded {
                extra.insert("samples".into(), json!(n));
            }
            journal
                .finished(&step, 1, "f", RunStatus::Pass, None, extra)
                .unwrap();
            runs.push(run);
        }
        journal.durable().unwrap();
        // Each run's bundle holds 4 samples (1 warmup + 3 timed).
        let mut set = ResultSet {
            runs,
            ..ResultSet::default()
        };
        let found = planned_order(tmp.path(), &set).unwrap().apply(&mut set);
        assert!(found.missing.is_empty(), "{:?}", found.missing);
        assert_eq!(
            found.recounted,
            vec![Recounted {
                case_id: "b".into(),
                stack: "host".into(),
                journal: 3,
                bundle: 4,
            }]
        );
    }
}
