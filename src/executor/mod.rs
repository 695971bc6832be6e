//! Executors: where a run's processes actually execute (local machine, or Slurm).
//!
//! The scheduler owns run state; executors only run what they are given and report back.
//! `ProcessSpec`/`ProcessOutcome` are the contract of one stack process: argv, env, cwd,
//! limits in; exit status, timing and every output line (to the parser and to `run.log`) out.

pub mod local;
pub mod pgroup;
pub mod slurm;

use std::path::PathBuf;
use std::time::Duration;

/// One process to run for a stack.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessSpec {
    /// Program and arguments (a shell stack has `["sh", "-c", cmd]`).
    pub argv: Vec<String>,
    /// Variables added to campaign's own environment.
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    /// Wall-clock limit.
    pub timeout: Option<Duration>,
    /// Kill when no line arrived on either stream for this long.
    pub no_output_timeout: Option<Duration>,
    /// Time between SIGTERM and SIGKILL to the process group.
    pub grace: Duration,
    /// Raw output, whole, appended here as it arrives (stdout and stderr interleaved by line).
    pub log_path: PathBuf,
}

/// Why a process was killed by the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillReason {
    Timeout,
    NoOutput,
    Interrupted,
}

/// How a process ended.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessOutcome {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub killed: Option<KillReason>,
    /// Monotonic wall time from spawn to exit.
    pub elapsed: Duration,
}

impl ProcessOutcome {
    pub fn success(&self) -> bool {
        self.exit_code == Some(0) && self.killed.is_none()
    }
}
