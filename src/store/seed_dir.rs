//! Loading a run dir of the old Python harness into a `ResultSet`.
//!
//! Owns the old layout: `results.json` (`campaign`, `timestamp`, `case` or `cases`, `runs`
//! rows with `execute_s_mean`, `correctness`, `artifact_bundle` …) and bundles
//! `cases/<case_id>/<stack>/{timing.json, manifest.json}`. Samples come from `timing.json`,
//! never from the row means (the old harness wrote failed rows as zeros). Read-only.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::error::{Diagnostic, Error, Result};
use crate::model::case::Case;
use crate::model::results::{Provenance, ResultSet, RunResult, RunStatus, Sample};

/// Is `dir` a run dir of the old harness? It has a `results.json` whose rows carry
/// `execute_s_mean`, no `journal.jsonl`, and bundle manifests without campaign's `status`.
pub(crate) fn is_seed_run_dir(dir: &Path) -> bool {
    if dir.join("journal.jsonl").exists() {
        return false;
    }
    let Ok(doc) = read_json(&dir.join("results.json")) else {
        return false;
    };
    let Some(rows) = doc.get("runs").and_then(Value::as_array) else {
        return false;
    };
    let seed_rows = rows.iter().any(|r| r.get("execute_s_mean").is_some());
    let campaign_manifest = rows.iter().any(|r| {
        let (Some(case_id), Some(stack)) = (str_field(r, "case_id"), str_field(r, "stack")) else {
            return false;
        };
        if !is_folder_name(case_id) || !is_folder_name(stack) {
            return false;
        }
        read_json(
            &dir.join("cases")
                .join(case_id)
                .join(stack)
                .join("manifest.json"),
        )
        .is_ok_and(|m| m.get("status").is_some())
    });
    seed_rows && !campaign_manifest
}

/// A single path component that stays inside its folder.
fn is_folder_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\0'])
}

/// Load an old-harness run dir.
pub(crate) fn load_seed_run_dir(dir: &Path) -> Result<ResultSet> {
    let results_path = dir.join("results.json");
    let doc = read_json(&results_path)?;
    let rows = doc
        .get("runs")
        .and_then(Value::as_array)
        .ok_or_else(|| field_error(&results_path, "runs", "expected a list of result rows"))?;
    let mut known_cases: Vec<Case> = Vec::new();
    if let Some(c) = doc.get("case").filter(|c| c.is_object()) {
        known_cases.push(Case::from_json_value(c, &results_path)?);
    }
    if let Some(cs) = doc.get("cases").and_then(Value::as_array) {
        for c in cs {
            known_cases.push(Case::from_json_value(c, &results_path)?);
        }
    }
    let mut runs = Vec::with_capacity(rows.len());
    for (i, row) in rows.iter().enumerate() {
        runs.push(load_row(dir, &results_path, i, row, &known_cases)?);
    }
    Ok(ResultSet {
        campaign: str_field(&doc, "campaign").unwrap_or("seed").to_string(),
        timestamp: str_field(&doc, "timestamp").unwrap_or_default().to_string(),
        // The old harness recorded no provenance; an empty version says so in the report.
        provenance: Provenance::default(),
        runs,
        quarantined: Default::default(),
        metrics: Default::default(),
    })
}

fn load_row(
    dir: &Path,
    results_path: &Path,
    i: usize,
    row: &Value,
    known: &[Case],
) -> Result<RunResult> {
    let need = |key: &str| {
        str_field(row, key).ok_or_else(|| {
            field_error(
                results_path,
                &format!("runs[{i}].{key}"),
                "expected a string",
            )
        })
    };
    let case_id = need("case_id")?.to_string();
    let stack = need("stack")?.to_string();
    // Both name folders inside the run dir: an absolute path or `..` would read elsewhere.
    for (key, value) in [("case_id", &case_id), ("stack", &stack)] {
        if !is_folder_name(value) {
            return Err(field_error(
                results_path,
                &format!("runs[{i}].{key}"),
                &format!(
                    "`{value}` is not a folder name inside the run dir (no `/`, not `.` or `..`)"
                ),
            ));
        }
    }
    let case = match known.iter().find(|c| c.case_id() == case_id) {
        Some(c) => c.clone(),
        None => case_from_row(row, &case_id, results_path, i)?,
    };
    let bundle = PathBuf::from("cases").join(&case_id).join(&stack);
    let bundle_dir = dir.join(&bundle);
    let timing_path = bundle_dir.join("timing.json");
    let samples: Vec<Sample> = if timing_path.is_file() {
        let text = std::fs::read_to_string(&timing_path).map_err(|e| Error::io(&timing_path, e))?;
        serde_json::from_str(&text).map_err(|e| json_error(&timing_path, &e))?
    } else {
        Vec::new()
    };
    let manifest = read_json(&bundle_dir.join("manifest.json")).ok();
    let correctness = manifest
        .as_ref()
        .and_then(|m| str_field(m, "correctness"))
        .or_else(|| str_field(row, "correctness"))
        .unwrap_or("fail");
    let status = if correctness == "pass" {
        RunStatus::Pass
    } else {
        RunStatus::Fail
    };
    let error = manifest
        .as_ref()
        .and_then(|m| str_field(m, "error"))
        .or_else(|| str_field(row, "error"))
        .map(str::to_string)
        .or_else(|| (status == RunStatus::Fail).then(|| "correctness: fail".to_string()));
    Ok(RunResult {
        case,
        case_id,
        stack,
        status,
        error,
        samples,
        bundle,
        attempt: 1,
        exit_code: None,
        started: None,
        ended: None,
        timing_source: Some("stack".into()),
        cpus: None,
        cpu_contention: None,
        rank_nodes: None,
        node_hardware: Vec::new(),
        ran: None,
    })
}

/// A case from a row's own fields, devices and core_num read back from the case id.
fn case_from_row(row: &Value, case_id: &str, file: &Path, i: usize) -> Result<Case> {
    let mut obj = Map::new();
    for key in ["variant", "p", "count", "dtype", "platform"] {
        if let Some(v) = row.get(key) {
            obj.insert(key.into(), v.clone());
        }
    }
    if let Some(devs) = case_id
        .rsplit("_d")
        .next()
        .filter(|_| case_id.contains("_d"))
    {
        let devs = devs.split("_cn").next().unwrap_or(devs);
        let ids: Vec<Value> = devs
            .split('-')
            .filter_map(|d| d.parse::<u64>().ok())
            .map(Value::from)
            .collect();
        if !ids.is_empty() {
            obj.insert("device_ids".into(), Value::Array(ids));
        }
    }
    if let Some(cn) = case_id
        .rsplit("_cn")
        .next()
        .filter(|_| case_id.contains("_cn"))
    {
        if let Ok(cn) = cn.parse::<u64>() {
            obj.insert("core_num".into(), Value::from(cn));
        }
    }
    for (from, to) in [("n_warmup", "warmup_rounds"), ("n_timed", "timed_rounds")] {
        if let Some(v) = row.get(from).filter(|v| v.as_u64().is_some_and(|n| n > 0)) {
            obj.insert(to.into(), v.clone());
        }
    }
    Case::from_json_value(&Value::Object(obj), file).map_err(|e| match e {
        Error::Invalid(mut diags) => {
            for d in &mut diags {
                d.field = Some(format!("runs[{i}].{}", d.field.clone().unwrap_or_default()));
            }
            Error::Invalid(diags)
        }
        other => other,
    })
}

fn str_field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn read_json(path: &Path) -> Result<Value> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    serde_json::from_str(&text).map_err(|e| json_error(path, &e))
}

fn json_error(path: &Path, e: &serde_json::Error) -> Error {
    Error::Invalid(vec![Diagnostic {
        file: path.to_path_buf(),
        line: Some(e.line()),
        column: Some(e.column()),
        field: None,
        message: format!("not a valid old-harness file: {e}"),
        snippet: None,
    }])
}

fn field_error(path: &Path, field: &str, message: &str) -> Error {
    Error::Invalid(vec![Diagnostic {
        file: path.to_path_buf(),
        line: None,
        column: None,
        field: Some(field.to_string()),
        message: message.to_string(),
        snippet: None,
    }])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_read_back_from_row_and_case_id() {
        let row = serde_json::json!({
            "case_id": "mesh_p4_count4096_fp16_a2a3_d4-5-6-7_cn2", "variant": "mesh", "p": 4,
            "count": 4096, "dtype": "fp16", "platform": "a2a3", "n_warmup": 3, "n_timed": 15
        });
        let id = "mesh_p4_count4096_fp16_a2a3_d4-5-6-7_cn2";
        let case = case_from_row(&row, id, Path::new("results.json"), 0).unwrap();
        assert_eq!(case.device_ids, vec![4, 5, 6, 7]);
        assert_eq!(case.core_num, 2);
        assert_eq!(case.timed_rounds, 15);
        assert_eq!(case.case_id(), id);
    }

    #[test]
    fn a_campaign_run_dir_is_not_taken_for_a_seed_one() {
        let dir = tempfile::tempdir().unwrap();
        let rows = r#"{"campaign":"c","timestamp":"t","runs":[{"case_id":"x","stack":"s","execute_s_mean":null}]}"#;
        std::fs::write(dir.path().join("results.json"), rows).unwrap();
        assert!(is_seed_run_dir(dir.path()));
        std::fs::write(dir.path().join("journal.jsonl"), "").unwrap();
        assert!(!is_seed_run_dir(dir.path()));
    }

    #[test]
    fn rows_naming_paths_outside_the_run_dir_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        for (case_id, stack) in [
            ("mesh_p2_count256_fp32_a2a3_d0-1", "/etc"),
            ("..", "hccl"),
            ("a/../../b", "hccl"),
        ] {
            let rows = serde_json::json!({"campaign": "c", "timestamp": "t", "runs": [{
                "case_id": case_id, "stack": stack, "variant": "mesh", "p": 2, "count": 256,
                "correctness": "pass", "execute_s_mean": 1.0}]});
            std::fs::write(dir.path().join("results.json"), rows.to_string()).unwrap();
            let err = load_seed_run_dir(dir.path()).unwrap_err().to_string();
            assert!(
                err.contains("is not a folder name inside the run dir"),
                "{err}"
            );
        }
    }

    #[test]
    fn broken_timing_json_names_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let rows = r#"{"campaign":"c","timestamp":"t","runs":[{"case_id":"mesh_p2_count256_fp32_a2a3_d0-1","stack":"hccl","variant":"mesh","p":2,"count":256,"correctness":"pass","execute_s_mean":1.0}]}"#;
        std::fs::write(dir.path().join("results.json"), rows).unwrap();
        let b = dir
            .path()
            .join("cases/mesh_p2_count256_fp32_a2a3_d0-1/hccl");
        std::fs::create_dir_all(&b).unwrap();
        std::fs::write(b.join("timing.json"), "[\n  {\"round\": oops}\n]").unwrap();
        let err = load_seed_run_dir(dir.path()).unwrap_err().to_string();
        assert!(err.contains("timing.json:2:"), "{err}");
    }
}
