//! Rebuild a `ResultSet` from a run dir's bundles (campaign's or the old harness's).
//!
//! Reads every `cases/<case_id>/<stack>/manifest.json` with its `timing.json`; the case comes
//! from the manifest's `case`, else `cases/<case_id>/case.json`, else the matching row of
//! `results.json` (old harness). Campaign, timestamp and provenance come from `results.json`
//! when present; [`load_any_run_dir`] also takes an old harness dir. Used by report, compare,
//! history, resume and status; it must not write anything.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::model::case::{set_field, Case, Variant};
use crate::model::results::{Metric, Provenance, ResultSet, RunResult, RunStatus, Sample};

fn read_json(path: &Path) -> Result<Value> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    parse_json(path, &text)
}

fn parse_json(path: &Path, text: &str) -> Result<Value> {
    serde_json::from_str(text).map_err(|e| {
        Error::invalid(
            path,
            format!("not valid JSON at line {}:{}: {e}", e.line(), e.column()),
        )
    })
}

/// What `results.json` says besides its rows. Its `runs` are skipped while parsing (serde
/// ignores unknown fields without building them): a 20,000-run file held as a `Value` tree
/// costs ~170 MB, and the rows are needed only for an old bundle without a case.
#[derive(Deserialize, Default)]
struct ResultsHead {
    // Values, not strings: a field of another type is ignored as before, not an error.
    campaign: Option<Value>,
    timestamp: Option<Value>,
    provenance: Option<Value>,
    quarantined: Option<Value>,
}

/// `results.json`'s rows by case id, parsed on first need.
struct Rows {
    path: PathBuf,
    by_case: Option<HashMap<String, Value>>,
}

impl Rows {
    fn row(&mut self, case_id: &str) -> Result<Option<&Value>> {
        if self.by_case.is_none() {
            #[derive(Deserialize, Default)]
            struct OnlyRuns {
                #[serde(default)]
                runs: Vec<Value>,
            }
            let runs = if self.path.is_file() {
                let text =
                    std::fs::read_to_string(&self.path).map_err(|e| Error::io(&self.path, e))?;
                serde_json::from_str::<OnlyRuns>(&text)
                    .map(|d| d.runs)
                    .unwrap_or_default()
            } else {
                Vec::new()
            };
            let mut by_case = HashMap::with_capacity(runs.len());
            for row in runs {
                if let Some(id) = row.get("case_id").and_then(Value::as_str) {
                    // The first row of a case wins, as the linear search it replaces did.
                    by_case.entry(id.to_string()).or_insert(row);
                }
            }
            self.by_case = Some(by_case);
        }
        Ok(self.by_case.as_ref().and_then(|m| m.get(case_id)))
    }
}

/// A bundle's `timing.json`, parsed straight into samples (no `Value` tree per sample: a
/// 10,000-run report reads 510,000 of them); a file that does not parse so is read again the
/// general way, for the error that names what is wrong.
fn read_samples(path: &Path, text: &str) -> Result<Vec<Sample>> {
    if let Ok(mut samples) = serde_json::from_str::<Vec<Sample>>(text) {
        // Every run's samples stay in memory while the set is used: without the growth slack
        // of the parser's vector (51 rounds held room for 64).
        samples.shrink_to_fit();
        return Ok(samples);
    }
    serde_json::from_value(parse_json(path, text)?)
        .map_err(|e| Error::invalid(path, format!("expected a list of samples: {e}")))
}

/// The text of `path` when it is a regular file (following links, as `Path::is_file`), `None`
/// when it is not one or not there — what `is_file` and then `read_to_string` found, with one
/// path lookup and one `fstat` instead of two each (a 10,000-run dir has 20,000 bundle files).
/// Opened non-blocking, so a FIFO under the name is skipped instead of waited on; a file that
/// cannot be opened for another reason is an error only when `is_file` would have said it is
/// one, as before.
fn read_if_file(path: &Path) -> Result<Option<String>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let io = |e| Error::io(path, e);
    let mut file = match std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() != std::io::ErrorKind::NotFound && path.is_file() => return Err(io(e)),
        Err(_) => return Ok(None),
    };
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Ok(None);
    }
    // Read through `take`, which asks for no size hint: `File::read_to_string` would stat the
    // file again and seek to learn its position (40,000 more calls for 10,000 runs).
    let mut text = String::with_capacity(usize::try_from(meta.len()).unwrap_or(0) + 1);
    Read::take(&mut file, u64::MAX)
        .read_to_string(&mut text)
        .map_err(io)?;
    Ok(Some(text))
}

fn sorted_dirs(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(Error::io(dir, e)),
    };
    for e in entries {
        let e = e.map_err(|e| Error::io(dir, e))?;
        // The entry's type comes with the listing (no stat per folder, 12,500 of them in a
        // 10,000-run dir). A link is never followed: campaign makes none in a run dir, and
        // following one would read results from outside it.
        let is_dir = match e.file_type() {
            Ok(t) if t.is_symlink() => {
                return Err(Error::invalid(
                    e.path(),
                    "is a symbolic link; a run dir's case and bundle folders must be its own (campaign never makes links there), so it is not read",
                ))
            }
            Ok(t) => t.is_dir(),
            Err(_) => e.path().is_dir(),
        };
        if is_dir {
            out.push(e.path());
        }
    }
    out.sort();
    Ok(out)
}

/// The old harness's rows carry the case's axes; devices come from the `_d<ids>` of the id.
fn case_from_row(row: &Value, case_id: &str, file: &Path) -> Result<Case> {
    let mut case = Case::new(Variant::Mesh, 2, 1);
    for field in ["variant", "p", "count", "dtype", "platform"] {
        if let Some(v) = row.get(field) {
            set_field(&mut case, field, v)
                .map_err(|m| Error::invalid(file, format!("{field}: {m}")))?;
        }
    }
    let ids: Vec<u32> = case_id
        .rsplit("_d")
        .next()
        .map(|s| s.split('_').next().unwrap_or(""))
        .unwrap_or("")
        .split('-')
        .filter_map(|d| d.parse().ok())
        .collect();
    case.device_ids = if ids.len() == case.p as usize {
        ids
    } else {
        (0..case.p).collect()
    };
    Ok(case)
}

fn status_of(manifest: &Value) -> RunStatus {
    manifest
        .get("status")
        .and_then(|s| serde_json::from_value(s.clone()).ok())
        .unwrap_or_else(
            || match manifest.get("correctness").and_then(Value::as_str) {
                Some("pass") => RunStatus::Pass,
                _ => RunStatus::Fail,
            },
        )
}

/// The run of `bundle`; `None` when it has no `manifest.json` (not a bundle).
fn load_bundle(
    run_dir: &Path,
    case_dir: &Path,
    bundle: &Path,
    rows: &mut Rows,
) -> Result<Option<RunResult>> {
    let mpath = bundle.join("manifest.json");
    let Some(text) = read_if_file(&mpath)? else {
        return Ok(None);
    };
    let m = parse_json(&mpath, &text)?;
    drop(text);
    let dir_name = |p: &Path| {
        p.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_string()
    };
    let case_id = m
        .get("case_id")
        .and_then(Value::as_str)
        .map(String::from)
        .unwrap_or_else(|| dir_name(case_dir));
    let stack = m
        .get("stack")
        .and_then(Value::as_str)
        .map(String::from)
        .unwrap_or_else(|| dir_name(bundle));
    let case = if let Some(c) = m.get("case").filter(|c| c.is_object()) {
        Case::from_json_value(c, &mpath)?
    } else if case_dir.join("case.json").is_file() {
        Case::load(&case_dir.join("case.json"))?
    } else if let Some(row) = rows.row(&case_id)? {
        case_from_row(row, &case_id, &run_dir.join("results.json"))?
    } else {
        return Err(Error::invalid(
            &mpath,
            "no case found: expected a `case` key, cases/<case_id>/case.json, or a results.json row",
        ));
    };
    let timing = bundle.join(
        m.get("timing")
            .and_then(Value::as_str)
            .unwrap_or("timing.json"),
    );
    let samples: Vec<Sample> = match read_if_file(&timing)? {
        Some(text) => read_samples(&timing, &text)?,
        None => Vec::new(),
    };
    let text = |k: &str| m.get(k).and_then(Value::as_str).map(String::from);
    let (status, error) = checked_values(
        status_of(&m),
        text("reason").or_else(|| text("error")),
        &samples,
        &timing,
        run_dir,
    );
    Ok(Some(RunResult {
        case,
        case_id,
        stack,
        status,
        error,
        samples,
        bundle: bundle.strip_prefix(run_dir).unwrap_or(bundle).to_path_buf(),
        attempt: m
            .get("attempt")
            .and_then(Value::as_u64)
            .map_or(1, |a| a as u32),
        exit_code: m.get("exit_code").and_then(Value::as_i64).map(|c| c as i32),
        started: text("started"),
        ended: text("ended"),
        timing_source: text("timing_source"),
        cpus: m
            .get("cpus")
            .and_then(|c| serde_json::from_value(c.clone()).ok()),
        cpu_contention: m
            .get("cpu_contention")
            .and_then(Value::as_f64)
            .filter(|c| c.is_finite() && *c >= 0.0),
        rank_nodes: m
            .get("rank_nodes")
            .and_then(|n| serde_json::from_value(n.clone()).ok()),
        node_hardware: m
            .get("node_hardware")
            .and_then(|n| serde_json::from_value(n.clone()).ok())
            .unwrap_or_default(),
        ran: m
            .get("ran")
            .and_then(|n| serde_json::from_value(n.clone()).ok()),
    }))
}

/// A bundle read back goes through the value checks of a live run
/// (`model::sample_values::protocol_errors`, with the longest timeout a plan may give): a
/// passing run whose `timing.json` holds a time no measurement can produce (negative, zero,
/// not finite, longer than 7 days — an edited or damaged file) is read as failed, naming the
/// file, so no report, comparison or history shows it as a passing result.
fn checked_values(
    status: RunStatus,
    error: Option<String>,
    samples: &[Sample],
    timing: &Path,
    run_dir: &Path,
) -> (RunStatus, Option<String>) {
    // A reason read back is anyone's text: shown, never acted on (`model::text::visible`).
    let error = error.map(|e| crate::model::text::visible(&e).into_owned());
    if status != RunStatus::Pass {
        return (status, error);
    }
    let problems = crate::model::sample_values::protocol_errors(
        samples,
        Some(crate::model::units::MAX_DURATION),
    );
    if problems.is_empty() {
        return (status, error);
    }
    let file = timing.strip_prefix(run_dir).unwrap_or(timing);
    (
        RunStatus::Fail,
        Some(format!(
            "read back from {}: protocol error: {}",
            file.display(),
            problems.join("; ")
        )),
    )
}

/// The runs of a share of the case folders, and its bundles that do not read back.
type Share = (Vec<RunResult>, Vec<(PathBuf, Error)>);

/// Every run recorded in `dir`'s bundles.
pub(crate) fn load_run_dir(dir: &Path) -> Result<ResultSet> {
    load(dir, None)
}

/// A run dir of either layout — the old Python harness's (`store::seed_dir`) or campaign's own
/// (its bundles) — as `report`, `compare` and `history ingest` read one.
pub(crate) fn load_any_run_dir(dir: &Path) -> Result<ResultSet> {
    use crate::store::seed_dir;
    if !dir.is_dir() {
        return Err(Error::Usage(format!(
            "{}: not a directory (expected a run dir such as results/campaigns/<name>/run_<stamp>)",
            dir.display()
        )));
    }
    if seed_dir::is_seed_run_dir(dir) {
        return seed_dir::load_seed_run_dir(dir);
    }
    if dir.join("cases").is_dir() {
        return load_run_dir(dir);
    }
    Err(Error::Usage(format!(
        "{}: not a run dir: expected campaign's cases/ folder of bundles or the old harness's \
         results.json with execute_s_mean rows",
        dir.display()
    )))
}

/// The head of `results.json` (campaign, timestamp, provenance, quarantine) without its rows;
/// empty when the file is missing, of another shape, or — in campaign's own run dirs, where it
/// is derived — damaged (with a warning).
fn read_head(dir: &Path, results_path: &Path) -> Result<ResultsHead> {
    Ok(if results_path.is_file() {
        let text = crate::model::file::read_regular_text(
            results_path,
            crate::store::journal::MAX_JOURNAL_BYTES,
        )
        .map_err(|e| Error::io(results_path, e))?;
        match serde_json::from_str(&text) {
            Ok(head) => head,
            // Valid JSON of another shape (a list, say) says nothing about the run dir.
            Err(e) if e.classify() == serde_json::error::Category::Data => ResultsHead::default(),
            // In campaign's own run dirs results.json is derived — rebuilt from the journal
            // and the bundles — so a damaged or truncated one costs nothing but its head
            // (campaign and timestamp come from the folders; a resume collects provenance anew).
            Err(e) if dir.join("journal.jsonl").is_file() => {
                crate::tell!(
                "warning: {}: not valid JSON ({e}); rebuilt from the journal and the bundles (the provenance it held is not recovered)",
                results_path.display()
            );
                ResultsHead::default()
            }
            Err(e) => {
                return Err(Error::invalid(
                    results_path,
                    format!("not valid JSON at line {}:{}: {e}", e.line(), e.column()),
                ))
            }
        }
    } else {
        ResultsHead::default()
    })
}

/// Each stack's declared headline metric, from the resolved definitions of the run
/// (`stacks.json`; none when the file is missing or not an object).
fn stack_metrics(dir: &Path) -> Result<BTreeMap<String, Metric>> {
    let stacks_json = dir.join("stacks.json");
    if !stacks_json.is_file() {
        return Ok(BTreeMap::new());
    }
    let Value::Object(defs) = read_json(&stacks_json)? else {
        return Ok(BTreeMap::new());
    };
    Ok(defs
        .iter()
        .filter_map(|(name, def)| {
            let m = def.get("metric")?;
            Some((name.clone(), serde_json::from_value(m.clone()).ok()?))
        })
        .collect())
}

fn load(dir: &Path, mut unreadable: Option<&mut Vec<(PathBuf, Error)>>) -> Result<ResultSet> {
    if !dir.is_dir() {
        return Err(Error::Usage(format!(
            "{}: not a run dir (no such folder)",
            dir.display()
        )));
    }
    // Nothing is read outside the run dir: a file or folder of it linked elsewhere is refused
    // here, a linked case or bundle folder where `sorted_dirs` lists it (one listing of `cases/`).
    crate::store::lock::refuse_links_in(dir)?;
    let results_path = dir.join("results.json");
    let head = read_head(dir, &results_path)?;
    let mut set = ResultSet {
        campaign: (head
            .campaign
            .as_ref()
            .and_then(Value::as_str)
            .map(String::from))
        .unwrap_or_else(|| {
            dir.parent()
                .and_then(|p| p.file_name())
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        }),
        timestamp: (head
            .timestamp
            .as_ref()
            .and_then(Value::as_str)
            .map(String::from))
        .unwrap_or_else(|| crate::store::layout::RunDir::open(dir).timestamp),
        provenance: head
            .provenance
            .and_then(|p| serde_json::from_value::<Provenance>(p).ok())
            .unwrap_or_default(),
        ..ResultSet::default()
    };
    if let Some(q) = head
        .quarantined
        .and_then(|q| serde_json::from_value(q).ok())
    {
        set.quarantined = q;
    }
    set.metrics = stack_metrics(dir)?;
    // The bundles are read on up to two threads, each a contiguous share of the case folders,
    // and put back together in folder order: the runs, the first error and the unreadable
    // bundles are those of one pass in that order.
    let case_dirs = sorted_dirs(&dir.join("cases"))?;
    let tolerant = unreadable.is_some();
    let threads = if case_dirs.len() < 64 { 1 } else { 2 };
    let share = case_dirs.len().div_ceil(threads).max(1);
    let read = |case_dirs: &[PathBuf]| -> Result<Share> {
        let mut rows = Rows {
            path: results_path.clone(),
            by_case: None,
        };
        let (mut runs, mut bad) = (Vec::new(), Vec::new());
        for case_dir in case_dirs {
            for bundle in sorted_dirs(case_dir)? {
                match load_bundle(dir, case_dir, &bundle, &mut rows) {
                    Ok(Some(run)) => runs.push(run),
                    Ok(None) => {}
                    Err(e) if tolerant => bad.push((bundle, e)),
                    Err(e) => return Err(e),
                }
            }
        }
        Ok((runs, bad))
    };
    let parts: Vec<Result<Share>> = std::thread::scope(|s| {
        let handles: Vec<_> = (case_dirs.chunks(share))
            .map(|part| s.spawn(move || read(part)))
            .collect();
        (handles.into_iter())
            .map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    });
    for part in parts {
        let (runs, bad) = part?;
        set.runs.extend(runs);
        if let Some(list) = unreadable.as_deref_mut() {
            list.extend(bad);
        }
    }
    Ok(set)
}

/// Like [`load_run_dir`], but a bundle that does not read back (a power loss can leave a
/// bundle's files empty or short: they are not synced, see `store::atomic::replace_all`) is
/// listed with its error instead of failing the whole dir. Resume runs such runs again.
pub(crate) fn load_run_dir_tolerant(dir: &Path) -> Result<(ResultSet, Vec<(PathBuf, Error)>)> {
    let mut unreadable = Vec::new();
    let set = load(dir, Some(&mut unreadable))?;
    Ok((set, unreadable))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::layout::{write_bundle, write_json, ProcessFacts, RunDir};
    use crate::store::results_json::document;
    use crate::store::results_json::tests::result;

    #[test]
    fn only_a_regular_file_is_read_as_a_bundle_file() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("manifest.json");
        std::fs::write(&file, "{}").unwrap();
        assert_eq!(read_if_file(&file).unwrap().as_deref(), Some("{}"));
        // Missing, a folder, a FIFO (skipped, never waited on): not a bundle file.
        assert_eq!(read_if_file(&tmp.path().join("none.json")).unwrap(), None);
        std::fs::create_dir(tmp.path().join("dir.json")).unwrap();
        assert_eq!(read_if_file(&tmp.path().join("dir.json")).unwrap(), None);
        let fifo = tmp.path().join("fifo.json");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        assert_eq!(read_if_file(&fifo).unwrap(), None);
        // A link to a file is read, as `is_file` follows it.
        std::os::unix::fs::symlink(&file, tmp.path().join("link.json")).unwrap();
        assert!(read_if_file(&tmp.path().join("link.json"))
            .unwrap()
            .is_some());
    }

    #[test]
    fn round_trip_through_bundles() {
        let tmp = tempfile::tempdir().unwrap();
        let rd = RunDir::create(tmp.path(), "smoke", "20261130_101500").unwrap();
        let mut failed = result(RunStatus::Timeout);
        failed.stack = "slow".into();
        failed.bundle = RunDir::bundle_rel(&failed.case_id, "slow");
        let runs = vec![result(RunStatus::Pass), failed];
        for r in &runs {
            write_bundle(&rd, r, &ProcessFacts::default()).unwrap();
        }
        let set = ResultSet {
            campaign: "smoke".into(),
            timestamp: rd.timestamp.clone(),
            runs,
            ..ResultSet::default()
        };
        write_json(&rd.file("results.json"), &document(&set)).unwrap();
        let back = load_run_dir(&rd.path).unwrap();
        assert_eq!(back, set);
    }

    #[test]
    fn old_harness_bundle_without_case() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("run_20250101_000000");
        let id = "ring_p4_count4096_fp16_a2a3_d4-5-6-7";
        let b = dir.join("cases").join(id).join("hccl");
        std::fs::create_dir_all(&b).unwrap();
        std::fs::write(
            b.join("manifest.json"),
            format!(r#"{{"case_id":"{id}","stack":"hccl","correctness":"fail","logs":{{"run":"run.log"}},"timing":"timing.json","profiling":{{}},"error":"rc=1"}}"#),
        )
        .unwrap();
        std::fs::write(
            dir.join("results.json"),
            format!(r#"{{"campaign":"old","timestamp":"t","case":{{}},"runs":[{{"case_id":"{id}","stack":"hccl","variant":"ring","p":4,"count":4096,"dtype":"fp16","platform":"a2a3"}}]}}"#),
        )
        .unwrap();
        let set = load_run_dir(&dir).unwrap();
        let r = &set.runs[0];
        assert_eq!(r.status, RunStatus::Fail);
        assert_eq!(r.error.as_deref(), Some("rc=1"));
        assert_eq!(r.case.case_id(), id);
        assert!(r.samples.is_empty());
        assert_eq!(set.campaign, "old");
    }

    #[test]
    fn results_json_of_another_shape_is_ignored_and_broken_json_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        let rd = RunDir::create(tmp.path(), "smoke", "20261130_101500").unwrap();
        write_bundle(&rd, &result(RunStatus::Pass), &ProcessFacts::default()).unwrap();
        std::fs::write(rd.file("results.json"), "[1, 2]").unwrap();
        let set = load_run_dir(&rd.path).unwrap();
        assert_eq!(set.runs.len(), 1, "the bundles still load");
        assert_eq!(set.campaign, "smoke", "from the folder's name");
        std::fs::write(rd.file("results.json"), "{\"campaign\": ").unwrap();
        let err = load_run_dir(&rd.path).unwrap_err().to_string();
        assert!(
            err.contains("results.json") && err.contains("not valid JSON"),
            "{err}"
        );
    }
}
