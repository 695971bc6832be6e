//! The contract of one stack process: what to run (argv, env, cwd, limits, where its raw output
//! goes) and how it ended. Every executor takes a [`ProcessSpec`] and gives back a
//! [`ProcessOutcome`]; the engine's verdict reads the outcome against the same limits.

use std::path::PathBuf;
use std::time::Duration;

/// Time between SIGTERM and SIGKILL to a stack's process group, unless a spec says otherwise.
pub const GRACE: Duration = Duration::from_secs(3);

/// One process to run for a stack. Its limits (`timeout`, `no_output_timeout`) are also what the
/// verdict words a timeout with.
#[derive(Debug, Clone, PartialEq, Default)]
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
    /// The containment unit (`executor::unit`) the process runs in; `None` gets a fresh one.
    /// Runs name theirs from the run dir, step and attempt so the journal can record it.
    pub unit: Option<String>,
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
    pub(crate) elapsed: Duration,
    /// How long the run's unit was ready but had no CPU (every runnable process of it waited:
    /// its cgroup's `cpu.pressure` "full" time), from spawn to the end of its output: processes
    /// outside it held the CPUs. None where it is not measured (no cgroup, Slurm).
    pub(crate) cpu_wait: Option<Duration>,
}

impl ProcessOutcome {
    /// The outcome recorded for a process interrupted before its backend started it.
    pub(crate) fn not_started() -> ProcessOutcome {
        ProcessOutcome {
            exit_code: None,
            signal: None,
            killed: Some(KillReason::Interrupted),
            elapsed: Duration::ZERO,
            cpu_wait: None,
        }
    }

    pub fn success(&self) -> bool {
        self.exit_code == Some(0) && self.killed.is_none()
    }
}
