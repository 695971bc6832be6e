//! The backend of `--executor local` (the default): every process runs on this machine, leased
//! devices and CPUs, contained in its unit (`executor::local::run_process`). Nothing outlives a
//! run, so there is nothing to re-attach to, nothing to stop on Ctrl-C beyond the runs'
//! own processes (the engine's cancel does that) and nothing to record about an interrupt.
//!
//! Owns only the answers of that contract; a resume of a campaign an earlier session ran
//! elsewhere (Slurm) cannot stop that session's jobs from here, so it says how to.

use std::path::Path;

use crate::error::Error;
use crate::executor::backend::{
    Backend, Earlier, ExecFailure, InterruptNote, JobRef, OnLine, Pending, ProcessRequest, Ran,
    Running,
};
use crate::model::plan::{ExecutorKind, Plan};
use crate::model::stack::StackDef;

/// Processes on this machine, in their own process groups and units.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Local {
    /// Runs in flight at once: `[run] jobs`, else the machine's default
    /// (`in_flight::default_jobs`: CPUs or devices, within the open-file limit).
    jobs: usize,
}

impl Local {
    pub(crate) fn new(plan: &Plan) -> Local {
        let jobs = plan.run.jobs.unwrap_or_else(|| {
            super::in_flight::default_jobs(
                std::thread::available_parallelism().map_or(1, |n| n.get()),
                plan.devices.ids.len(),
                super::in_flight::open_file_limit(),
            )
        });
        Local { jobs }
    }
}

impl Backend for Local {
    fn name(&self) -> &'static str {
        crate::executor::kind_name(ExecutorKind::Local)
    }

    fn grants_devices(&self) -> bool {
        false
    }

    fn max_in_flight(&self) -> Option<usize> {
        Some(self.jobs)
    }

    fn can_reattach(&self, _stack: &StackDef) -> bool {
        false
    }

    fn resume_notes(&self, _reattached: usize, stale: &[JobRef]) -> Vec<String> {
        if stale.is_empty() {
            return Vec::new();
        }
        // Only a Slurm session journals jobs; their runs run here now.
        let ids: Vec<String> = stale.iter().map(JobRef::to_string).collect();
        vec![format!(
            "resume: runs of Slurm jobs {} run again locally; if those jobs are still queued or running, `scancel {}` stops them",
            ids.join(", "),
            ids.join(" ")
        )]
    }

    fn start(&self, _earlier: Earlier) -> Pending<'_> {
        Box::pin(async {})
    }

    fn run<'a>(&'a self, req: ProcessRequest<'a>, on_line: OnLine<'a>) -> Running<'a> {
        Box::pin(async move {
            match super::run_process(req.spec, on_line, req.cancel).await {
                Ok(outcome) => Ok(Ran::Ended { outcome, end: None }),
                // The raw log could not be opened: the run dir is not writable.
                Err(e @ Error::Io { .. }) => Err(ExecFailure::RunDir(e)),
                Err(e) => Err(ExecFailure::Run(format!(
                    "cannot start the stack process: {e}"
                ))),
            }
        })
    }

    fn interrupted(&self) -> Pending<'_> {
        Box::pin(async {})
    }

    fn failed(&self) {}

    fn interrupt_note(&self, _detached: &[JobRef], _run_dir: &Path) -> Option<InterruptNote> {
        None
    }
}
