//! Asking Slurm how jobs are doing: one batched `squeue` for all watched jobs, `scontrol show
//! job` for a job squeue no longer lists, the jobcomp file as the last resort, and the backoff
//! of the polling interval.
//!
//! Owns the argv of those queries and the parsing of their output (recorded samples live in
//! tests/integration/fixtures/slurm/). It does not decide what an ended job means for its run
//! (that is `state`) and keeps no per-job bookkeeping (that is the executor in `mod.rs`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::executor::slurm::state::JobState;
use crate::executor::slurm::submit::{tool_message, Cluster, JobId};

/// squeue's answer for a job id it does not know (any more).
const INVALID_JOB_ID: &str = "Invalid job id";

/// One job as squeue or scontrol or the jobcomp file describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JobRecord {
    pub(crate) id: JobId,
    pub(crate) state: JobState,
    /// Slurm's reason (`None` when Slurm printed `None`; the jobcomp file has none).
    pub(crate) reason: Option<String>,
    /// `code:signal`, when the source gives it (scontrol, jobcomp).
    pub(crate) exit_code: Option<String>,
}

/// `squeue -h -t all -j id1,id2,… -o '%i|%T|%r'`: every watched job in one call.
pub(crate) fn squeue_argv(ids: &[JobId]) -> Vec<String> {
    let list = ids
        .iter()
        .map(JobId::to_string)
        .collect::<Vec<_>>()
        .join(",");
    ["squeue", "-h", "-t", "all", "-j", &list, "-o", "%i|%T|%r"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// Parse squeue's `%i|%T|%r` lines. A line that does not have that shape is an error naming it
/// (an unexpected squeue must not be silently read as "no jobs").
pub(crate) fn parse_squeue(text: &str) -> Result<Vec<JobRecord>> {
    let mut rows = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let mut parts = line.splitn(3, '|');
        let (Some(id), Some(state), reason) = (parts.next(), parts.next(), parts.next()) else {
            return Err(bad_line("squeue", n, line, "`jobid|STATE|reason`"));
        };
        let id = id
            .parse::<JobId>()
            .map_err(|_| bad_line("squeue", n, line, "a numeric job id first"))?;
        rows.push(JobRecord {
            id,
            state: JobState::parse(state),
            reason: reason.and_then(slurm_reason),
            exit_code: None,
        });
    }
    Ok(rows)
}

/// Split Slurm's `Key=Value Key=Value …` text (scontrol, the jobcomp file) into pairs. A word
/// without `=` continues the previous value (values such as paths may contain spaces).
pub(crate) fn parse_key_values(text: &str) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for word in text.split_whitespace() {
        match word.split_once('=') {
            Some((key, value)) if !key.is_empty() => pairs.push((key.into(), value.into())),
            _ => {
                if let Some((_, value)) = pairs.last_mut() {
                    value.push(' ');
                    value.push_str(word);
                }
            }
        }
    }
    pairs
}

/// Read one job from `scontrol show job ID` output (or one jobcomp line).
pub(crate) fn parse_job_record(text: &str) -> Option<JobRecord> {
    let pairs: BTreeMap<String, String> = parse_key_values(text).into_iter().collect();
    Some(JobRecord {
        id: pairs.get("JobId")?.parse().ok()?,
        state: JobState::parse(pairs.get("JobState")?),
        reason: pairs.get("Reason").and_then(|r| slurm_reason(r)),
        exit_code: pairs.get("ExitCode").cloned(),
    })
}

/// The last line of a jobcomp file (`JobCompType=jobcomp/filetxt`) about job `id`.
pub(crate) fn find_in_jobcomp(text: &str, id: JobId) -> Option<JobRecord> {
    let needle = format!("JobId={id} ");
    text.lines()
        .rev()
        .find(|line| line.starts_with(&needle))
        .and_then(parse_job_record)
}

/// `JobCompLoc` from `scontrol show config`, when the jobcomp plugin writes a file.
pub(crate) fn jobcomp_location(config_text: &str) -> Option<PathBuf> {
    let mut kind = None;
    let mut location = None;
    for line in config_text.lines() {
        if let Some((key, value)) = line.split_once('=') {
            match key.trim() {
                "JobCompType" => kind = Some(value.trim().to_string()),
                "JobCompLoc" => location = Some(value.trim().to_string()),
                _ => {}
            }
        }
    }
    match (kind.as_deref(), location) {
        (Some("jobcomp/filetxt"), Some(loc)) if loc.starts_with('/') => Some(PathBuf::from(loc)),
        _ => None,
    }
}

/// Slurm prints `None` (or `(null)`) when there is no reason.
fn slurm_reason(text: &str) -> Option<String> {
    let text = text.trim();
    (!text.is_empty() && text != "None" && text != "(null)").then(|| text.to_string())
}

fn bad_line(tool: &str, n: usize, line: &str, expected: &str) -> Error {
    Error::Environment(format!(
        "{tool} output line {}: expected {expected}, got `{line}`",
        n + 1
    ))
}

/// One `squeue` for all `ids`. Jobs squeue no longer knows are simply absent.
pub(crate) async fn query_squeue(cluster: &Cluster, ids: &[JobId]) -> Result<Vec<JobRecord>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let out = cluster.run(&squeue_argv(ids)).await?;
    let message = tool_message(&out);
    if !out.status.success() {
        // With a single unknown id squeue fails instead of printing nothing.
        if message.contains(INVALID_JOB_ID) {
            return Ok(Vec::new());
        }
        return Err(Error::Environment(format!(
            "squeue failed ({}): {message}",
            out.status
        )));
    }
    parse_squeue(&String::from_utf8_lossy(&out.stdout))
}

/// The batch script of each job in `ids` that squeue still knows (`%i|%o`: id and command),
/// so a journaled job can be checked to be one this run dir submitted before it is cancelled or
/// re-attached to. Jobs squeue no longer knows are absent.
pub(crate) async fn query_commands(
    cluster: &Cluster,
    ids: &[JobId],
) -> Result<BTreeMap<JobId, PathBuf>> {
    if ids.is_empty() {
        return Ok(BTreeMap::new());
    }
    let mut argv = squeue_argv(ids);
    if let Some(format) = argv.last_mut() {
        *format = "%i|%o".to_string();
    }
    let out = cluster.run(&argv).await?;
    if !out.status.success() {
        let message = tool_message(&out);
        if message.contains(INVALID_JOB_ID) {
            return Ok(BTreeMap::new());
        }
        return Err(Error::Environment(format!(
            "squeue failed ({}): {message}",
            out.status
        )));
    }
    parse_commands(&String::from_utf8_lossy(&out.stdout))
}

/// Parse squeue's `%i|%o` lines (id, then the command, which may itself hold `|`).
pub(crate) fn parse_commands(text: &str) -> Result<BTreeMap<JobId, PathBuf>> {
    let mut rows = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let Some((id, command)) = line.split_once('|') else {
            return Err(bad_line("squeue", n, line, "`jobid|command`"));
        };
        let id = id
            .parse::<JobId>()
            .map_err(|_| bad_line("squeue", n, line, "a numeric job id first"))?;
        rows.insert(id, PathBuf::from(command));
    }
    Ok(rows)
}

/// `scontrol show job ID`; `None` when Slurm no longer knows the job.
pub(crate) async fn query_scontrol(cluster: &Cluster, id: JobId) -> Result<Option<JobRecord>> {
    let argv = ["scontrol", "show", "job", &id.to_string()].map(String::from);
    let out = cluster.run(&argv).await?;
    if !out.status.success() {
        let message = tool_message(&out);
        if message.contains(INVALID_JOB_ID) {
            return Ok(None);
        }
        return Err(Error::Environment(format!(
            "scontrol show job {id} failed ({}): {message}",
            out.status
        )));
    }
    Ok(parse_job_record(&String::from_utf8_lossy(&out.stdout)))
}

/// Where the cluster's jobcomp file is, if it has one (asked once per executor).
pub(crate) async fn query_jobcomp_location(cluster: &Cluster) -> Option<PathBuf> {
    let argv = ["scontrol", "show", "config"].map(String::from);
    let out = cluster.run(&argv).await.ok()?;
    jobcomp_location(&String::from_utf8_lossy(&out.stdout))
}

/// Look job `id` up in the jobcomp file at `path` (unreadable file = not found).
pub(crate) fn read_jobcomp(path: &Path, id: JobId) -> Option<JobRecord> {
    let text = std::fs::read_to_string(path).ok()?;
    find_in_jobcomp(&text, id)
}

/// The polling interval: starts at `base`, grows ×`factor` after every poll that saw no
/// change, up to `max`; any change brings it back to `base`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Backoff {
    pub(crate) base: Duration,
    pub(crate) max: Duration,
    pub(crate) factor: f64,
    current: Duration,
}

impl Backoff {
    pub(crate) fn new(base: Duration, max: Duration) -> Backoff {
        let max = max.max(base);
        Backoff {
            base,
            max,
            factor: 1.5,
            current: base,
        }
    }

    /// The wait before the next poll.
    pub(crate) fn current(&self) -> Duration {
        self.current
    }

    /// Record one poll's outcome and return the wait before the next.
    pub(crate) fn observe(&mut self, changed: bool) -> Duration {
        self.current = if changed {
            self.base
        } else {
            self.current.mul_f64(self.factor).min(self.max)
        };
        self.current
    }

    pub(crate) fn reset(&mut self) {
        self.current = self.base;
    }
}

#[cfg(test)]
mod tests;
