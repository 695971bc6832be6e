//! `results.json` in the seed's schema: `{campaign, timestamp, cases, runs, provenance}`.
//!
//! Owns the row statistics (timed rounds of passing runs only; sample stdev n−1; `null`, never
//! 0.0, when a run did not pass or a value is absent). Pure functions of a `ResultSet`: no I/O.

use std::collections::{BTreeMap, BTreeSet};

use itertools::{Itertools, MinMaxResult};
use serde_json::{json, Map, Value};

use crate::analysis::stats;
use crate::model::case::Case;
use crate::model::results::{ResultSet, RunResult, RunStatus, Sample};

/// Statistics of one run over its timed rounds (all `None` unless the run passed).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct RowStats {
    pub(crate) execute_s_mean: Option<f64>,
    pub(crate) execute_s_stdev: Option<f64>,
    pub(crate) execute_s_median: Option<f64>,
    pub(crate) device_wall_s_mean: Option<f64>,
    pub(crate) device_wall_s_median: Option<f64>,
    pub(crate) setup_s: Option<f64>,
    pub(crate) bw_execute_mb_s: Option<f64>,
    pub(crate) wall_s_mean: Option<f64>,
    pub(crate) wall_s_stdev: Option<f64>,
    pub(crate) execute_spread_ratio: Option<f64>,
    pub(crate) phase_means: BTreeMap<String, f64>,
    pub(crate) compile_profile_means: BTreeMap<String, f64>,
    pub(crate) n_warmup: usize,
    pub(crate) n_timed: usize,
}

fn means(
    samples: &[&Sample],
    get: impl Fn(&Sample) -> &BTreeMap<String, f64>,
) -> BTreeMap<String, f64> {
    let names: BTreeSet<&String> = samples.iter().flat_map(|s| get(s).keys()).collect();
    names
        .into_iter()
        .filter_map(|n| {
            let xs: Vec<f64> = samples
                .iter()
                .filter_map(|s| get(s).get(n).copied())
                .collect();
            stats::mean(&xs).map(|m| (n.clone(), m))
        })
        .collect()
}

/// The statistics of a row.
pub(crate) fn row_stats(r: &RunResult) -> RowStats {
    let n_timed = r.samples.iter().filter(|s| s.is_timed()).count();
    let n_warmup = r.samples.len() - n_timed;
    let mut out = RowStats {
        n_warmup,
        n_timed,
        ..RowStats::default()
    };
    if r.status != RunStatus::Pass {
        return out;
    }
    let timed: Vec<&Sample> = r.timed_ok().collect();
    let exec: Vec<f64> = timed.iter().filter_map(|s| s.execute_s).collect();
    let dev: Vec<f64> = timed.iter().filter_map(|s| s.device_wall_s).collect();
    let wall: Vec<f64> = timed.iter().filter_map(|s| s.wall_s).collect();
    out.execute_s_mean = stats::mean(&exec);
    out.execute_s_stdev = stats::stdev(&exec);
    out.execute_s_median = stats::median(&exec);
    out.device_wall_s_mean = stats::mean(&dev);
    out.device_wall_s_median = stats::median(&dev);
    out.wall_s_mean = stats::mean(&wall);
    out.wall_s_stdev = stats::stdev(&wall);
    out.setup_s = r.samples.iter().find_map(|s| s.setup_s);
    out.bw_execute_mb_s = out
        .execute_s_mean
        .filter(|t| *t > 0.0)
        .map(|t| r.case.n_bytes() as f64 / t / 1e6);
    out.execute_spread_ratio = match exec.iter().copied().minmax_by(f64::total_cmp) {
        MinMaxResult::OneElement(x) => (x > 0.0).then_some(1.0),
        MinMaxResult::MinMax(lo, hi) => (lo > 0.0).then(|| hi / lo),
        MinMaxResult::NoElements => None,
    };
    out.phase_means = means(&timed, |s| &s.phases);
    out.compile_profile_means = means(&timed, |s| &s.compile_profile);
    out
}

/// One row of `runs`, seed fields in seed order, then `status` and `reason`.
pub(crate) fn row(r: &RunResult) -> Value {
    let st = row_stats(r);
    let c = &r.case;
    let mut m = Map::new();
    m.insert("case_id".into(), json!(r.case_id));
    m.insert("stack".into(), json!(r.stack));
    m.insert("equivalence_hash".into(), json!(c.equivalence_hash()));
    m.insert("variant".into(), json!(c.variant));
    m.insert("p".into(), json!(c.p));
    m.insert("count".into(), json!(c.count));
    m.insert("dtype".into(), json!(c.dtype));
    m.insert("platform".into(), json!(c.platform));
    m.insert("correctness".into(), json!(r.status.correctness()));
    m.insert("execute_s_mean".into(), json!(st.execute_s_mean));
    m.insert("execute_s_stdev".into(), json!(st.execute_s_stdev));
    m.insert("execute_s_median".into(), json!(st.execute_s_median));
    m.insert("device_wall_s_mean".into(), json!(st.device_wall_s_mean));
    m.insert(
        "device_wall_s_median".into(),
        json!(st.device_wall_s_median),
    );
    m.insert("setup_s".into(), json!(st.setup_s));
    m.insert("bw_execute_mb_s".into(), json!(st.bw_execute_mb_s));
    m.insert("wall_s_mean".into(), json!(st.wall_s_mean));
    m.insert("wall_s_stdev".into(), json!(st.wall_s_stdev));
    m.insert("phase_means".into(), json!(st.phase_means));
    m.insert(
        "compile_profile_means".into(),
        json!(st.compile_profile_means),
    );
    m.insert("n_warmup".into(), json!(st.n_warmup));
    m.insert("n_timed".into(), json!(st.n_timed));
    m.insert("artifact_bundle".into(), json!(r.bundle.to_string_lossy()));
    m.insert(
        "execute_spread_ratio".into(),
        json!(st.execute_spread_ratio),
    );
    m.insert("status".into(), json!(r.status));
    m.insert("reason".into(), json!(r.error));
    Value::Object(m)
}

/// The cases of a result set, one per `case_id` in first-seen order (the case as first run).
pub(crate) fn cases(set: &ResultSet) -> Vec<(&str, &Case)> {
    let mut seen = BTreeSet::new();
    set.runs
        .iter()
        .filter(|r| seen.insert(r.case_id.as_str()))
        .map(|r| (r.case_id.as_str(), &r.case))
        .collect()
}

/// The whole document.
pub(crate) fn document(set: &ResultSet) -> Value {
    let cases: Vec<Value> = cases(set).into_iter().map(|(_, c)| c.to_json()).collect();
    let runs: Vec<Value> = set.runs.iter().map(row).collect();
    let mut m = Map::new();
    m.insert("campaign".into(), json!(set.campaign));
    m.insert("timestamp".into(), json!(set.timestamp));
    m.insert("cases".into(), Value::Array(cases));
    m.insert("runs".into(), Value::Array(runs));
    m.insert(
        "provenance".into(),
        serde_json::to_value(&set.provenance).unwrap_or(Value::Null),
    );
    if !set.quarantined.is_empty() {
        m.insert("quarantined".into(), json!(set.quarantined));
    }
    Value::Object(m)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::case::Variant;
    use std::path::PathBuf;

    pub(crate) fn sample(round: u32, phase: &str, execute_s: f64) -> Sample {
        Sample {
            round,
            phase: phase.into(),
            execute_s: Some(execute_s),
            wall_s: Some(execute_s * 2.0),
            ok: true,
            ..Sample::default()
        }
    }

    pub(crate) fn result(status: RunStatus) -> RunResult {
        RunResult {
            case: Case::new(Variant::Mesh, 2, 256),
            case_id: "mesh_p2_count256_fp32_a2a3_d0-1".into(),
            stack: "host".into(),
            status,
            error: (status != RunStatus::Pass).then(|| "exit code 3".to_string()),
            samples: vec![
                sample(1, "warmup-1", 9.0),
                sample(2, "timed-1", 1.0),
                sample(3, "timed-2", 2.0),
                sample(4, "timed-3", 4.0),
            ],
            bundle: PathBuf::from("cases/mesh_p2_count256_fp32_a2a3_d0-1/host"),
            attempt: 1,
            exit_code: Some(0),
            started: None,
            ended: None,
            timing_source: Some("stack".into()),
        }
    }

    #[test]
    fn pass_row_uses_timed_rounds_only() {
        let v = row(&result(RunStatus::Pass));
        assert_eq!(v["execute_s_mean"], json!(7.0 / 3.0));
        assert_eq!(v["execute_s_median"], json!(2.0));
        // stdev n-1 of 1,2,4: mean 7/3, ss = 14/3, /2 = 7/3
        assert!((v["execute_s_stdev"].as_f64().unwrap() - (7.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert_eq!(v["execute_spread_ratio"], json!(4.0));
        assert_eq!(v["n_warmup"], json!(1));
        assert_eq!(v["n_timed"], json!(3));
        // 256 fp32 = 1024 bytes / (7/3 s) / 1e6
        assert!(
            (v["bw_execute_mb_s"].as_f64().unwrap() - 1024.0 / (7.0 / 3.0) / 1e6).abs() < 1e-15
        );
        assert_eq!(v["correctness"], json!("pass"));
        assert_eq!(v["equivalence_hash"].as_str().unwrap().len(), 16);
    }

    /// The row shape of the seed's results.json (seed-formats.md), field for field and in
    /// order, so the old summarize/plot scripts keep reading campaign's rows.
    #[test]
    fn row_has_the_seed_fields_in_seed_order_and_types() {
        const SEED_ROW: &[&str] = &[
            "case_id",
            "stack",
            "equivalence_hash",
            "variant",
            "p",
            "count",
            "dtype",
            "platform",
            "correctness",
            "execute_s_mean",
            "execute_s_stdev",
            "execute_s_median",
            "device_wall_s_mean",
            "device_wall_s_median",
            "setup_s",
            "bw_execute_mb_s",
            "wall_s_mean",
            "wall_s_stdev",
            "phase_means",
            "compile_profile_means",
            "n_warmup",
            "n_timed",
            "artifact_bundle",
            "execute_spread_ratio",
        ];
        let v = row(&result(RunStatus::Pass));
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(&keys[..SEED_ROW.len()], SEED_ROW);
        assert_eq!(&keys[SEED_ROW.len()..], ["status", "reason"]);
        for k in [
            "case_id",
            "stack",
            "equivalence_hash",
            "variant",
            "dtype",
            "platform",
        ] {
            assert!(v[k].is_string(), "{k}: {}", v[k]);
        }
        for k in ["p", "count", "n_warmup", "n_timed"] {
            assert!(v[k].is_u64(), "{k}: {}", v[k]);
        }
        for k in [
            "execute_s_mean",
            "execute_s_stdev",
            "execute_s_median",
            "bw_execute_mb_s",
        ] {
            assert!(v[k].is_f64(), "{k}: {}", v[k]);
        }
        assert!(v["phase_means"].is_object() && v["compile_profile_means"].is_object());
        assert_eq!(v["correctness"], json!("pass"));
    }

    #[test]
    fn failed_row_is_null_not_zero() {
        let v = row(&result(RunStatus::Fail));
        for k in [
            "execute_s_mean",
            "execute_s_stdev",
            "execute_s_median",
            "bw_execute_mb_s",
            "wall_s_mean",
        ] {
            assert_eq!(v[k], Value::Null, "{k}");
        }
        assert_eq!(v["status"], json!("fail"));
        assert_eq!(v["reason"], json!("exit code 3"));
        assert_eq!(v["correctness"], json!("fail"));
    }

    #[test]
    fn document_lists_each_case_once() {
        let mut b = result(RunStatus::Pass);
        b.stack = "other".into();
        let set = ResultSet {
            campaign: "smoke".into(),
            timestamp: "20261130_101500".into(),
            runs: vec![result(RunStatus::Pass), b],
            ..ResultSet::default()
        };
        let d = document(&set);
        assert_eq!(d["cases"].as_array().unwrap().len(), 1);
        assert_eq!(d["runs"].as_array().unwrap().len(), 2);
        let keys: Vec<&String> = d.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            ["campaign", "timestamp", "cases", "runs", "provenance"]
        );
    }
}
