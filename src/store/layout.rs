//! The run dir and bundle layout on disk, and atomic writes.
//!
//! Owns every path under `results/campaigns/<campaign>/run_<YYYYmmdd_HHMMSS>/` (see COMMON
//! layout: plan.toml, stacks.json, journal.jsonl, results files, `cases/<case_id>/case.json`,
//! `cases/<case_id>/<stack>/{run.log, run.attempt<N>.log, timing.json, manifest.json}`), the
//! manifest's keys, the 6-significant-digit rounding of timing floats, and temp-file + rename writes so a
//! crash never leaves half a file. It must not compute statistics or decide statuses.

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::model::results::{RunResult, Sample};
use crate::store::atomic::{replace_all_prepared, write_atomic};

/// Where run dirs go when `--results-dir` is not given (the one spelling of the default; read
/// it through [`results_dir`]).
pub(crate) const DEFAULT_RESULTS_DIR: &str = "results/campaigns";

/// The results dir a command works in: `given` (`--results-dir`), else the default.
pub(crate) fn results_dir(given: Option<&Path>) -> PathBuf {
    given.map_or_else(|| PathBuf::from(DEFAULT_RESULTS_DIR), Path::to_path_buf)
}

/// One campaign run's folder.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunDir {
    pub(crate) path: PathBuf,
    /// `YYYYmmdd_HHMMSS` of the start (without any collision suffix).
    pub(crate) timestamp: String,
}

impl RunDir {
    /// Claim a new run dir `<results_dir>/<campaign>/run_<timestamp>`; when two runs start in the
    /// same second the later one gets `run_<timestamp>_2`, `_3`, … (`create_dir` is the claim, so
    /// two processes can never share one).
    pub(crate) fn create(results_dir: &Path, campaign: &str, timestamp: &str) -> Result<RunDir> {
        // Absolute, because stacks run with their bundle dir as working directory and are handed
        // paths inside the run dir.
        let results_dir =
            std::path::absolute(results_dir).map_err(|e| Error::io(results_dir, e))?;
        let base = results_dir.join(campaign);
        std::fs::create_dir_all(&base).map_err(|e| Error::io(&base, e))?;
        for n in 1..1000 {
            let name = if n == 1 {
                format!("run_{timestamp}")
            } else {
                format!("run_{timestamp}_{n}")
            };
            let path = base.join(name);
            match std::fs::create_dir(&path) {
                Ok(()) => {
                    return Ok(RunDir {
                        path,
                        timestamp: timestamp.to_string(),
                    })
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(Error::io(&path, e)),
            }
        }
        Err(Error::Environment(format!(
            "{}: could not find a free run dir name for {timestamp}",
            base.display()
        )))
    }

    /// An existing run dir (resume, report).
    pub(crate) fn open(path: &Path) -> RunDir {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let ts = name.strip_prefix("run_").unwrap_or(name);
        RunDir {
            path: std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()),
            timestamp: ts.get(..15).unwrap_or(ts).to_string(),
        }
    }

    pub(crate) fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// `cases/<case_id>/case.json`.
    pub(crate) fn case_file(&self, case_id: &str) -> PathBuf {
        self.path.join("cases").join(case_id).join("case.json")
    }

    /// `cases/<case_id>/<stack>` relative to the run dir (the `artifact_bundle` value).
    pub(crate) fn bundle_rel(case_id: &str, stack: &str) -> PathBuf {
        Path::new("cases").join(case_id).join(stack)
    }

    pub(crate) fn bundle(&self, case_id: &str, stack: &str) -> PathBuf {
        self.path.join(Self::bundle_rel(case_id, stack))
    }
}

/// Make a run's bundle folder. Something else at its path — a file, a link (a damaged or tampered
/// run dir) — is moved aside to `<name>.damaged[-N]` first, so the run gets a real folder inside
/// the run dir and only this run's own bundle is affected (never the campaign).
pub(crate) fn make_bundle_dir(path: &Path) -> Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => return Ok(()),
        Ok(_) => {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default();
            let aside = (1..1000)
                .map(|n| {
                    let suffix = if n == 1 {
                        String::new()
                    } else {
                        format!("-{n}")
                    };
                    path.with_file_name(format!("{name}.damaged{suffix}"))
                })
                .find(|p| std::fs::symlink_metadata(p).is_err())
                .ok_or_else(|| {
                    Error::io(path, std::io::Error::other("no free name to move it aside"))
                })?;
            std::fs::rename(path, &aside).map_err(|e| Error::io(path, e))?;
        }
        Err(_) => {}
    }
    std::fs::create_dir_all(path).map_err(|e| Error::io(path, e))
}

/// Pretty JSON (2-space indent, trailing newline), atomically.
pub(crate) fn write_json(path: &Path, value: &Value) -> Result<()> {
    write_atomic(path, pretty(value).as_bytes())
}

/// The text [`write_json`] writes.
pub(crate) fn pretty(value: &Value) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}

/// Significant digits of every stored timing float. The seed's `timing.json` rounded to 6 decimals, which keeps
/// only 1 µs of resolution: a 8.4 µs host allreduce would be stored as 8 µs (a 5 % error).
/// Six significant digits keep relative precision at every scale and still read as plain floats
/// in the old scripts.
const TIMING_DIGITS: i32 = 6;

/// Round every float of a sample (so what is in memory equals what is on disk).
pub(crate) fn round_sample(s: &mut Sample) {
    let round_sig6 = |x: f64| crate::model::units::round_sig(x, TIMING_DIGITS);
    let r = |o: &mut Option<f64>| *o = o.map(round_sig6);
    r(&mut s.wall_s);
    r(&mut s.execute_s);
    r(&mut s.bw_execute_mb_s);
    r(&mut s.setup_s);
    r(&mut s.device_wall_s);
    s.phases.values_mut().for_each(|v| *v = round_sig6(*v));
    s.compile_profile
        .values_mut()
        .for_each(|v| *v = round_sig6(*v));
    s.per_rank_execute_s
        .iter_mut()
        .for_each(|v| *v = round_sig6(*v));
}

/// `timing.json`: the list of samples, floats rounded to 6 significant digits.
pub(crate) fn timing_json(samples: &[Sample]) -> Value {
    let rounded: Vec<Sample> = samples
        .iter()
        .cloned()
        .map(|mut s| {
            round_sample(&mut s);
            s
        })
        .collect();
    serde_json::to_value(rounded).unwrap_or(Value::Array(Vec::new()))
}

/// What the engine knows about a run's process beyond its [`RunResult`].
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ProcessFacts {
    pub(crate) argv: Vec<String>,
    /// The variables the engine added (the stack's `env` and `CAMPAIGN_*`).
    pub(crate) env: Vec<(String, String)>,
    pub(crate) signal: Option<i32>,
    /// Leased ids given in `CAMPAIGN_DEVICES`.
    pub(crate) devices: Vec<u32>,
    /// Logs of earlier attempts, kept beside `run.log`.
    pub(crate) attempt_logs: Vec<String>,
    /// What the run's backend recorded about its job, as the manifest key and value it is
    /// written under (`slurm`: job id, final state, node, granted devices).
    pub(crate) backend: Option<(&'static str, Value)>,
    /// Each rank's node, in rank order, as the backend recorded it (several nodes only).
    pub(crate) rank_nodes: Option<Vec<String>>,
    /// The hardware of each node the backend's job ran on.
    pub(crate) node_hardware: Vec<crate::model::nodes::NodeHardware>,
}

/// `manifest.json`: the seed's keys first, then campaign's.
pub(crate) fn manifest(result: &RunResult, facts: &ProcessFacts) -> Value {
    let mut m = Map::new();
    m.insert("case_id".into(), json!(result.case_id));
    m.insert("stack".into(), json!(result.stack));
    m.insert("correctness".into(), json!(result.correctness()));
    let mut logs = Map::new();
    logs.insert("run".into(), json!("run.log"));
    for (i, name) in facts.attempt_logs.iter().enumerate() {
        logs.insert(format!("attempt{}", i + 1), json!(name));
    }
    m.insert("logs".into(), Value::Object(logs));
    m.insert("timing".into(), json!("timing.json"));
    m.insert("profiling".into(), json!({}));
    if let Some(e) = &result.error {
        m.insert("error".into(), json!(e));
    }
    m.insert("status".into(), json!(result.status));
    m.insert("reason".into(), json!(result.error));
    m.insert("argv".into(), json!(facts.argv));
    let env: Map<String, Value> = facts
        .env
        .iter()
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect();
    m.insert("env".into(), Value::Object(env));
    m.insert("exit_code".into(), json!(result.exit_code));
    m.insert("signal".into(), json!(facts.signal));
    m.insert("devices".into(), json!(facts.devices));
    if let Some(cpus) = &result.cpus {
        // The CPUs a CPU run received; fewer than its ranks = oversubscribed.
        m.insert("cpus".into(), json!(cpus));
        m.insert("oversubscribed".into(), json!(result.oversubscribed()));
    }
    if let Some(share) = result.cpu_contention {
        // Share of the run's time it had no CPU while others held them (cgroup cpu.pressure).
        m.insert("cpu_contention".into(), json!(share));
    }
    if let Some(nodes) = &result.rank_nodes {
        // Where each rank ran (a run over several nodes): what samples.csv's `node` says.
        m.insert("rank_nodes".into(), json!(nodes));
    }
    if !result.node_hardware.is_empty() {
        // Each node's hardware as the job saw it there, with its fingerprint.
        m.insert("node_hardware".into(), json!(result.node_hardware));
    }
    if let Some(ran) = &result.ran {
        // What the run's own output said ran, and the pin it was asked for.
        m.insert("ran".into(), json!(ran));
    }
    m.insert("started".into(), json!(result.started));
    m.insert("ended".into(), json!(result.ended));
    m.insert("attempt".into(), json!(result.attempt));
    m.insert("case".into(), result.case.to_json());
    m.insert(
        "equivalence_hash".into(),
        json!(result.case.equivalence_hash()),
    );
    m.insert("timing_source".into(), json!(result.timing_source));
    if let Some((key, value)) = &facts.backend {
        m.insert((*key).into(), value.clone());
    }
    Value::Object(m)
}

/// Write a run's `timing.json` and `manifest.json` into its bundle (run.log is written by the
/// executor as output arrives).
///
/// Both are renamed timing first: readers take a bundle into account once its `manifest.json`
/// exists, and by then its `timing.json` is in place. They go through the temp files
/// `engine::case_files` prepared ahead ([`BUNDLE_FILES`]; `store::atomic::replace_all_prepared`),
/// so the write creates no inode. They are not synced: the run's journal
/// `finished` line (fsynced, with the number of samples) is the run's one durability point, and
/// resume runs a finished run again when its bundle does not read back with that many samples
/// (what a power loss before the data reached the disk leaves).
pub(crate) fn write_bundle(
    run_dir: &RunDir,
    result: &RunResult,
    facts: &ProcessFacts,
) -> Result<()> {
    let dir = run_dir.path.join(&result.bundle);
    let timing = pretty(&timing_json(&result.samples));
    let manifest = pretty(&manifest(result, facts));
    replace_all_prepared(&[
        (&dir.join(BUNDLE_FILES[0]), timing.as_bytes()),
        (&dir.join(BUNDLE_FILES[1]), manifest.as_bytes()),
    ])
}

/// The files [`write_bundle`] writes, in the order it renames them.
pub(crate) const BUNDLE_FILES: [&str; 2] = ["timing.json", "manifest.json"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_dirs_never_collide() {
        let tmp = tempfile::tempdir().unwrap();
        let a = RunDir::create(tmp.path(), "smoke", "20261130_101500").unwrap();
        let b = RunDir::create(tmp.path(), "smoke", "20261130_101500").unwrap();
        assert!(a.path.ends_with("smoke/run_20261130_101500"));
        assert!(b.path.ends_with("smoke/run_20261130_101500_2"));
        assert_eq!(RunDir::open(&b.path).timestamp, "20261130_101500");
    }

    #[test]
    fn timing_floats_keep_six_significant_digits() {
        let s = Sample {
            round: 1,
            phase: "timed-1".into(),
            execute_s: Some(0.000_165_432_1),
            wall_s: Some(1.0 / 3.0),
            setup_s: Some(8.412_345_6e-6),
            ok: true,
            ..Sample::default()
        };
        let text = serde_json::to_string(&timing_json(&[s])).unwrap();
        assert!(text.contains("\"execute_s\":0.000165432"), "{text}");
        assert!(text.contains("\"wall_s\":0.333333"), "{text}");
        // A sub-10 µs time keeps its digits instead of collapsing to 0.000008.
        assert!(text.contains("\"setup_s\":8.41235e-6"), "{text}");
    }
}
