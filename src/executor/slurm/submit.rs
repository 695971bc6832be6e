//! Running Slurm's client tools: `sbatch` (submit, read the job id), `scancel`, and the one
//! bounded way every Slurm command is spawned (no stdin, a deadline, killed if dropped).
//!
//! Owns process invocation and `--parsable` output. It does not build the sbatch argv (that is
//! `script`) nor interpret job states (that is `poll` and `state`).

use std::fmt;
use std::path::PathBuf;
use std::process::{Output, Stdio};
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::process::Command;

use crate::error::{Error, Result};

/// How long one Slurm command may take before campaign gives up on it (a slurmctld that does
/// not answer must not hang the campaign).
pub(crate) const TOOL_TIMEOUT: Duration = Duration::from_secs(30);

/// A Slurm job id (campaign submits plain jobs: no arrays, no het jobs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct JobId(pub u64);

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl FromStr for JobId {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        s.trim()
            .parse::<u64>()
            .map(JobId)
            .map_err(|_| format!("`{s}` is not a Slurm job id (expected digits)"))
    }
}

/// How to reach the cluster: `SLURM_CONF` for every command (None = inherited environment).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Cluster {
    pub(crate) slurm_conf: Option<PathBuf>,
}

impl Cluster {
    /// Run one Slurm command to its end (bounded by [`TOOL_TIMEOUT`]).
    /// Errors when it cannot be spawned or does not finish; a non-zero exit is the caller's
    /// to judge (squeue's "Invalid job id" is an answer, not a failure).
    pub(crate) async fn run(&self, argv: &[String]) -> Result<Output> {
        let (program, args) = argv
            .split_first()
            .ok_or_else(|| Error::Usage("empty Slurm command".into()))?;
        let mut cmd = Command::new(program);
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(conf) = &self.slurm_conf {
            cmd.env("SLURM_CONF", conf);
        }
        let child = cmd.spawn().map_err(|e| {
            Error::Environment(format!(
                "cannot run `{program}` ({e}); is Slurm's client installed (slurm-client) and on PATH?"
            ))
        })?;
        match tokio::time::timeout(TOOL_TIMEOUT, child.wait_with_output()).await {
            Ok(Ok(out)) => Ok(out),
            Ok(Err(e)) => Err(Error::Environment(format!("`{program}` failed: {e}"))),
            Err(_) => Err(Error::Environment(format!(
                "`{}` did not answer within {} s (is slurmctld up?)",
                argv.join(" "),
                TOOL_TIMEOUT.as_secs()
            ))),
        }
    }

    /// Submit with an argv from `script::sbatch_command` and return the new job's id.
    pub(crate) async fn sbatch(&self, argv: &[String]) -> Result<JobId> {
        let out = self.run(argv).await?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            return Err(Error::Environment(format!(
                "sbatch refused the job ({}): {}",
                out.status,
                tool_message(&out)
            )));
        }
        parse_parsable(&stdout).map_err(|e| Error::Environment(format!("sbatch: {e}")))
    }

    /// `scancel` the given jobs (nothing to do for an empty list). Jobs that already ended are
    /// not an error: cancelling is about what still runs.
    pub(crate) async fn scancel(&self, ids: &[JobId]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut argv = vec!["scancel".to_string()];
        argv.extend(ids.iter().map(JobId::to_string));
        let out = self.run(&argv).await?;
        let message = tool_message(&out);
        let already_gone = message.contains("already completing or completed")
            || message.contains("Invalid job id");
        if out.status.success() || already_gone {
            return Ok(());
        }
        Err(Error::Environment(format!(
            "scancel {} failed ({}): {message}",
            ids.iter()
                .map(JobId::to_string)
                .collect::<Vec<_>>()
                .join(" "),
            out.status
        )))
    }
}

/// `sbatch --parsable` prints `jobid` or `jobid;cluster`.
pub(crate) fn parse_parsable(stdout: &str) -> std::result::Result<JobId, String> {
    let line = stdout
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .ok_or_else(|| "printed no job id".to_string())?;
    let id = line.split(';').next().unwrap_or(line);
    id.parse::<JobId>()
        .map_err(|e| format!("unexpected output `{line}`: {e}"))
}

/// A tool's stderr (else stdout), trimmed, for error messages.
pub(crate) fn tool_message(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
    if err.is_empty() {
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    } else {
        err
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsable_output_with_and_without_cluster() {
        assert_eq!(parse_parsable("42\n"), Ok(JobId(42)));
        assert_eq!(parse_parsable("1234;campaign\n"), Ok(JobId(1234)));
        assert_eq!(
            parse_parsable("sbatch: warning: something\n77\n"),
            Ok(JobId(77))
        );
    }

    #[test]
    fn parsable_output_without_an_id_is_an_error() {
        assert_eq!(parse_parsable(""), Err("printed no job id".to_string()));
        let e = parse_parsable("Submitted batch job 5\n").unwrap_err();
        assert!(e.contains("Submitted batch job 5"), "{e}");
    }

    #[test]
    fn job_id_round_trips_as_a_bare_number() {
        assert_eq!(serde_json::to_string(&JobId(9)).unwrap(), "9");
        assert_eq!(serde_json::from_str::<JobId>("9").unwrap(), JobId(9));
        assert!("12_3".parse::<JobId>().is_err());
    }

    #[tokio::test]
    async fn a_missing_tool_is_an_environment_error_naming_it() {
        let cluster = Cluster::default();
        let e = cluster
            .run(&["campaign-no-such-sbatch".to_string()])
            .await
            .unwrap_err();
        assert_eq!(e.exit_code(), crate::error::exit::ENVIRONMENT);
        assert!(e.to_string().contains("campaign-no-such-sbatch"), "{e}");
    }
}
