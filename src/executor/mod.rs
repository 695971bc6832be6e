//! Executors: where a run's processes actually execute — this machine (`local`, each process
//! contained in a `unit`) or a Slurm cluster (`slurm`).
//!
//! The engine decides the executor once, when it prepares a campaign, and hands every run's
//! processes to it through the [`Executor`] trait; the scheduler owns run state and executors
//! only run what they are given and report back. `process` is the contract of one process
//! (`ProcessSpec` in, `ProcessOutcome` out); every output line reaches the caller's `on_line`.

pub mod local;
pub mod process;
pub mod slurm;
pub(crate) mod spawn;
pub mod unit;

use std::future::Future;
use std::path::Path;
use std::pin::Pin;

use tokio::sync::watch;

use crate::error::Error;
use crate::model::output::OutputLine;
pub use process::{KillReason, ProcessOutcome, ProcessSpec, GRACE};
use slurm::job::OnSubmit;
use slurm::{JobEnd, JobId};

/// One process of a run, as handed to an executor.
pub(crate) struct ProcessRequest<'a> {
    pub(crate) spec: &'a ProcessSpec,
    pub(crate) case_id: &'a str,
    pub(crate) stack: &'a str,
    /// Devices the process needs (a cluster grants them; locally they are already leased).
    pub(crate) devices: u32,
    /// The run's bundle folder (a batch job leaves its result files there).
    pub(crate) bundle: &'a Path,
    /// A job an earlier session started for this attempt: watch it instead of starting anew.
    pub(crate) reattach: Option<JobId>,
    /// Told the job id as soon as the executor has one (the driver journals it).
    pub(crate) on_submit: &'a OnSubmit,
    pub(crate) cancel: watch::Receiver<bool>,
}

/// How one process of a run ended.
#[derive(Debug)]
pub(crate) enum Ran {
    /// It ran to its end (or was killed): the outcome, and the batch job that ran it, if any.
    Ended {
        outcome: ProcessOutcome,
        job: Option<(JobId, Box<JobEnd>)>,
    },
    /// Interrupted before the process was started (a job not yet submitted).
    NotStarted,
    /// Interrupted, with the process left running for `campaign resume` to re-attach.
    Detached(JobId),
}

/// Why an executor could not run a process.
#[derive(Debug)]
pub(crate) enum ExecFailure {
    /// The run dir cannot be written (the raw log could not be opened): the campaign stops.
    RunDir(Error),
    /// The process could not be run; this is the run's reason.
    Run(String),
}

/// Every line of the process's output, as it arrives (locally) or replayed from its `run.log`
/// once its job ended (Slurm).
pub(crate) type OnLine<'a> = &'a mut (dyn FnMut(OutputLine) + Send);

/// A boxed future, so executors can be used as `dyn Executor`.
pub(crate) type Running<'a> = Pin<Box<dyn Future<Output = Result<Ran, ExecFailure>> + Send + 'a>>;

/// Where a campaign's run processes execute.
pub(crate) trait Executor: Send + Sync {
    /// True when the executor grants devices itself (nothing is leased on this machine).
    fn grants_devices(&self) -> bool;
    /// Run one process to its end.
    fn run<'a>(&'a self, req: ProcessRequest<'a>, on_line: OnLine<'a>) -> Running<'a>;
}

/// Processes on this machine, in their own process groups (`local::run_process`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Local;

impl Executor for Local {
    fn grants_devices(&self) -> bool {
        false
    }

    fn run<'a>(&'a self, req: ProcessRequest<'a>, on_line: OnLine<'a>) -> Running<'a> {
        Box::pin(async move {
            match local::run_process(req.spec, on_line, req.cancel).await {
                Ok(outcome) => Ok(Ran::Ended { outcome, job: None }),
                // The raw log could not be opened: the run dir is not writable.
                Err(e @ Error::Io { .. }) => Err(ExecFailure::RunDir(e)),
                Err(e) => Err(ExecFailure::Run(format!(
                    "cannot start the stack process: {e}"
                ))),
            }
        })
    }
}
