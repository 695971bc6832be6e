//! Expected duration of each run, for the scheduler's longest-first order, and the stack order
//! within a case.
//!
//! Estimates come from the newest earlier run dir of the same campaign (`results.json` rows:
//! wall or execute mean × rounds + setup), else from bytes × rounds. The shuffled stack order is
//! drawn from ChaCha8 with a seed recorded in provenance, so a campaign can be re-run in the same
//! order. Only reads files; never writes.

use std::collections::BTreeMap;
use std::path::Path;

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

use crate::model::case::Case;
use crate::model::plan::StackOrder;

/// Per-round overhead and throughput of the fallback model (only the order matters).
const ROUND_OVERHEAD_S: f64 = 1e-3;
const BYTES_PER_S: f64 = 1e9;

/// `(case_id, stack)` → seconds, from earlier run dirs of this campaign.
#[derive(Debug, Clone, Default)]
pub(crate) struct History {
    pub(crate) by_run: BTreeMap<(String, String), f64>,
}

impl History {
    /// Read the newest `run_*` folder under `campaign_dir` (other than `exclude`) that has a
    /// `results.json`. Unreadable files give an empty history, never an error.
    pub(crate) fn load(campaign_dir: &Path, exclude: &Path) -> History {
        let mut dirs: Vec<_> = std::fs::read_dir(campaign_dir)
            .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        dirs.retain(|d| {
            d != exclude
                && d.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("run_"))
                && d.join("results.json").is_file()
        });
        dirs.sort();
        let Some(newest) = dirs.last() else {
            return History::default();
        };
        let doc: Value = std::fs::read_to_string(newest.join("results.json"))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(Value::Null);
        let mut by_run = BTreeMap::new();
        for row in doc
            .get("runs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let s = |k: &str| row.get(k).and_then(Value::as_str).map(String::from);
            let f = |k: &str| row.get(k).and_then(Value::as_f64);
            let (Some(case_id), Some(stack)) = (s("case_id"), s("stack")) else {
                continue;
            };
            let Some(per_round) = f("wall_s_mean").or_else(|| f("execute_s_mean")) else {
                continue;
            };
            let rounds = f("n_warmup").unwrap_or(0.0) + f("n_timed").unwrap_or(1.0);
            by_run.insert(
                (case_id, stack),
                per_round * rounds + f("setup_s").unwrap_or(0.0),
            );
        }
        History { by_run }
    }

    /// Seconds a run is expected to take.
    pub(crate) fn estimate(&self, case_id: &str, stack: &str, case: &Case) -> f64 {
        if let Some(s) = self.by_run.get(&(case_id.to_string(), stack.to_string())) {
            return *s;
        }
        let rounds = f64::from(case.warmup_rounds + case.timed_rounds);
        rounds * (ROUND_OVERHEAD_S + case.n_bytes() as f64 * f64::from(case.p) / BYTES_PER_S)
    }
}

/// The order of `n_stacks` stacks (as indices) for each of `n_cases` cases: as given, or
/// shuffled per case from `seed`. Made one case at a time, so a huge plan holds no table of
/// orders.
pub(crate) fn stack_orders(
    n_stacks: usize,
    n_cases: usize,
    order: StackOrder,
    seed: u64,
) -> impl Iterator<Item = Vec<usize>> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n_cases).map(move |_| {
        let mut s: Vec<usize> = (0..n_stacks).collect();
        if order == StackOrder::Shuffled {
            s.shuffle(&mut rng);
        }
        s
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::case::Variant;

    #[test]
    fn history_wins_over_the_model() {
        let tmp = tempfile::tempdir().unwrap();
        let old = tmp.path().join("run_20260101_000000");
        std::fs::create_dir_all(&old).unwrap();
        std::fs::write(
            old.join("results.json"),
            r#"{"runs":[{"case_id":"c","stack":"s","wall_s_mean":2.0,"n_warmup":1,"n_timed":4,"setup_s":0.5},
                        {"case_id":"f","stack":"s","wall_s_mean":null}]}"#,
        )
        .unwrap();
        let h = History::load(tmp.path(), &tmp.path().join("run_now"));
        let case = Case::new(Variant::Mesh, 2, 1_000_000);
        assert_eq!(h.estimate("c", "s", &case), 10.5);
        // fp32 1e6 × 2 ranks = 8e6 bytes/round → 8 ms + 1 ms, × 23 rounds
        assert!((h.estimate("f", "s", &case) - 23.0 * 0.009).abs() < 1e-12);
    }

    #[test]
    fn shuffled_order_is_reproducible_from_its_seed() {
        let stacks: Vec<usize> = vec![0, 1, 2, 3];
        let a: Vec<Vec<usize>> = stack_orders(4, 20, StackOrder::Shuffled, 42).collect();
        let b: Vec<Vec<usize>> = stack_orders(4, 20, StackOrder::Shuffled, 42).collect();
        assert_eq!(a, b);
        assert!(a.iter().any(|o| *o != stacks), "some case is reordered");
        assert!(a.iter().all(|o| {
            let mut s = o.clone();
            s.sort();
            s == stacks
        }));
        assert!(stack_orders(4, 3, StackOrder::Given, 42).all(|o| o == stacks));
    }
}
