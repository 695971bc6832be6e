//! `results.json` in the seed's schema: `{campaign, timestamp, cases, runs, provenance}`, and
//! campaign's own `stragglers` (`analysis::straggler`: which device or node arrives last) and,
//! once the report has judged them, its answers: `regret` (what each default loses),
//! `crossovers` and `crossover_map` (where the winner of a pair changes with size), and for a
//! `[census]` plan `census` (pairs measured, link classes, the slow link or device named).
//!
//! Owns the document around the rows (`store::row::Row` owns the rows and their statistics).
//! Pure functions of a `ResultSet`; the file text is written to any `Write`, a row at a time.

use std::collections::BTreeSet;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;
#[cfg(test)]
use serde_json::{json, Map};

use crate::analysis::straggler::attribute;
use crate::model::case::Case;
use crate::model::results::ResultSet;
use crate::store::row::Row;

/// One row of `runs` (`store::row::Row`: seed fields in seed order, then `status`, `reason` and
/// campaign's own fields).
#[cfg(test)]
pub(crate) fn row(r: &crate::model::results::RunResult) -> Value {
    serde_json::to_value(Row::of(r)).unwrap_or(Value::Null)
}

/// The cases of a result set, one per `case_id` in first-seen order (the case as first run;
/// the repeats of a case are one case).
pub(crate) fn cases(set: &ResultSet) -> Vec<(&str, &Case)> {
    let mut seen = BTreeSet::new();
    set.runs
        .iter()
        .filter(|r| seen.insert(r.base_case_id()))
        .map(|r| (r.base_case_id(), &r.case))
        .collect()
}

/// The whole document, pretty-printed with a final newline: the text of `results.json`.
///
/// Written straight from the runs, one row at a time, never as a `Value` tree of every row (a
/// 20,000-run campaign's tree is ~70 MB beside the ~70 MB text); byte for byte the
/// pretty-printed [`document`].
///
/// `answers` (an object of `regret`, `crossovers` and `crossover_map`, as the report judged them
/// with the plan's bootstrap — `report::ReportOutput::answers`) is written after `stragglers`
/// when given: the files rewritten while a campaign runs carry none (judging every row once a
/// second would cost a report's bootstrap each time), the report step adds them.
pub(crate) fn write_document(
    set: &ResultSet,
    answers: Option<&Value>,
    out: impl std::io::Write,
) -> std::io::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(
        out,
        serde_json::ser::PrettyFormatter::with_indent(b"  "),
    );
    Document(set, answers).serialize(&mut ser)?;
    ser.into_inner().write_all(b"\n")
}

/// [`write_document`]'s text.
#[cfg(test)]
pub(crate) fn document_text(set: &ResultSet) -> String {
    let mut out = Vec::new();
    // Writing plain data into memory cannot fail.
    let _ = write_document(set, None, &mut out);
    String::from_utf8(out).unwrap_or_default()
}

/// [`document`] as a `Serialize` that writes its rows as it goes, with the report's answers.
struct Document<'a>(&'a ResultSet, Option<&'a Value>);

/// The keys of the report's answers, in the order results.json gives them.
pub(crate) const ANSWER_KEYS: [&str; 3] = ["regret", "crossovers", "crossover_map"];

/// The key of a census plan's answer (`analysis::census::Record`): written after the others,
/// and only by a census plan's report.
pub(crate) const CENSUS_KEY: &str = "census";

/// A list serialized item by item from an iterator made on demand.
struct Each<F>(F);

impl<F, I, T> Serialize for Each<F>
where
    F: Fn() -> I,
    I: Iterator<Item = T>,
    T: Serialize,
{
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_seq((self.0)())
    }
}

impl Serialize for Document<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let set = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("campaign", &set.campaign)?;
        m.serialize_entry("timestamp", &set.timestamp)?;
        m.serialize_entry(
            "cases",
            &Each(|| cases(set).into_iter().map(|(_, c)| c.to_json())),
        )?;
        m.serialize_entry("runs", &Each(|| set.runs.iter().map(Row::of)))?;
        m.serialize_entry("provenance", &set.provenance_with_nodes())?;
        m.serialize_entry("stragglers", &attribute(set))?;
        if !set.quarantined.is_empty() {
            m.serialize_entry("quarantined", &set.quarantined)?;
        }
        if let Some(answers) = self.1 {
            for key in ANSWER_KEYS {
                m.serialize_entry(key, answers.get(key).unwrap_or(&Value::Null))?;
            }
            // A census plan's findings (`analysis::census::Record`), judged with the report.
            if let Some(census) = answers.get(CENSUS_KEY).filter(|c| !c.is_null()) {
                m.serialize_entry(CENSUS_KEY, census)?;
            }
        }
        m.end()
    }
}

/// The whole document as a value (tests and small sets; files use [`write_document`]).
#[cfg(test)]
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
        serde_json::to_value(set.provenance_with_nodes()).unwrap_or(Value::Null),
    );
    m.insert(
        "stragglers".into(),
        serde_json::to_value(attribute(set)).unwrap_or(Value::Null),
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
    use crate::model::results::{RunResult, RunStatus, Sample};
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
            cpus: None,
            cpu_contention: None,
            rank_nodes: None,
            node_hardware: Vec::new(),
            ran: None,
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
        // 256 fp32 = 1024 bytes / median 2 s / 1e6
        assert_eq!(v["bw_execute_mb_s"], json!(1024.0 / 2.0 / 1e6));
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
        assert_eq!(
            &keys[SEED_ROW.len()..],
            [
                "status",
                "reason",
                "devices",
                "cpus",
                "oversubscribed",
                "n_bytes",
                "repeat",
                "attempt",
                "timing_source",
                "cpu_contention",
                "nodes",
                "ranks_per_node",
                "op",
                "bytes_counted",
                "algbw_gb_s",
                "busbw_gb_s",
                "node_list",
                "node_fingerprints",
                "algo_ran",
                "proto",
                "channels",
                "algo_pinned",
                "component",
                "pin_honoured"
            ]
        );
        assert_eq!(
            (v["nodes"].as_u64(), v["ranks_per_node"].as_u64()),
            (Some(1), Some(2))
        );
        assert_eq!(v["op"], json!("allreduce"));
        assert_eq!(v["oversubscribed"], json!(false), "always present");
        assert_eq!(
            v["cpu_contention"],
            Value::Null,
            "present, null when not measured"
        );
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
        assert_eq!(
            v["correctness"],
            json!("not_checked"),
            "no golden check failed"
        );
    }

    #[test]
    fn provenance_names_the_nodes_of_runs_over_several_nodes() {
        let single = result(RunStatus::Pass);
        let mut set = ResultSet {
            runs: vec![single.clone()],
            ..ResultSet::default()
        };
        assert!(document(&set)["provenance"].get("nodes").is_none());
        let mut multi = single;
        multi.case.p = 2;
        multi.case.nodes = 2;
        multi.case.ranks_per_node = 1;
        multi.rank_nodes = Some(vec!["n2".into(), "n1".into()]);
        set.runs.push(multi);
        assert_eq!(document(&set)["provenance"]["nodes"], json!(["n1", "n2"]));
        let written: Value = serde_json::from_str(&document_text(&set)).unwrap();
        assert_eq!(written["provenance"]["nodes"], json!(["n1", "n2"]));
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
        // The file's text is the value, pretty-printed, byte for byte.
        let mut text = serde_json::to_string_pretty(&d).unwrap();
        text.push('\n');
        assert_eq!(document_text(&set), text);
        assert_eq!(d["cases"].as_array().unwrap().len(), 1);
        assert_eq!(d["runs"].as_array().unwrap().len(), 2);
        let keys: Vec<&String> = d.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "campaign",
                "timestamp",
                "cases",
                "runs",
                "provenance",
                "stragglers"
            ]
        );
        // The seed's keys, then campaign's straggler attribution (no per-rank times here).
        assert_eq!(d["stragglers"]["findings"], json!([]));
        assert_eq!(d["stragglers"]["left_out"][0]["stack"], "host");
    }
}
