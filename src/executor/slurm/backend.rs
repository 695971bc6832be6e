//! The backend of `--executor slurm`: every run's process is a batch job (`job::SlurmRun`) that
//! one shared service (`SlurmService`) submits and polls in batches for the whole session.
//!
//! Owns the session's Slurm side: the preflight (is Slurm reachable, before a run dir exists),
//! starting the service inside the session's runtime, cancelling the stale jobs of runs that run
//! again, the in-flight cap (nothing is leased locally, so it is all that bounds the queue), the
//! Ctrl-C decision (cancel, ask, or leave the jobs for `campaign resume`) and the journal event
//! recording it (`slurm_interrupt`). It does not journal itself: the engine writes what it
//! returns.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::OnceLock;

use serde_json::Map;
use tokio::sync::watch;

use crate::error::Result;
use crate::executor::backend::{
    Backend, Earlier, ExecFailure, InterruptNote, InterruptPolicy, JobRef, OnLine, Pending,
    ProcessRequest, Running,
};
use crate::executor::slurm::job::{self, Decision, OnInterrupt, SlurmRun};
use crate::executor::slurm::{JobId, SlurmExecutor, SlurmService, DEFAULT_MAX_JOBS};
use crate::model::plan::{DeviceKind, ExecutorKind, Plan, SlurmConfig};
use crate::model::stack::{Shape, StackDef};

/// One campaign session's Slurm backend.
pub(crate) struct Slurm {
    config: SlurmConfig,
    campaign: String,
    kind: DeviceKind,
    on_interrupt: InterruptPolicy,
    /// Nodes of the partition the jobs go to (`sinfo`), when Slurm said.
    nodes: Option<u32>,
    /// `None` until the campaign is interrupted (or fails) and has decided about its jobs;
    /// every run waiting on a job watches it.
    decision: watch::Sender<Option<Decision>>,
    /// Set by `start`, inside the session's runtime (the service is a task of it).
    started: OnceLock<SlurmRun>,
}

impl Slurm {
    /// The backend of `plan`, once Slurm answered (`preflight`).
    pub(crate) fn new(plan: &Plan, on_interrupt: InterruptPolicy) -> Result<Slurm> {
        super::preflight::check_reachable()?;
        Ok(Slurm {
            nodes: super::preflight::node_count(plan.slurm.partition.as_deref()),
            config: plan.slurm.clone(),
            campaign: plan.campaign.name.clone(),
            kind: plan.devices.kind,
            on_interrupt,
            decision: watch::channel(None).0,
            started: OnceLock::new(),
        })
    }
}

/// The journaled jobs that are not this run dir's (`SlurmExecutor::foreign`), said on stderr:
/// they are never cancelled or re-attached to, and their runs run again. When Slurm cannot be
/// asked, every journaled job counts as foreign: leaving someone's job alone is the safe side.
async fn foreign_jobs(executor: &SlurmExecutor, earlier: &Earlier) -> BTreeSet<JobId> {
    let journaled: Vec<JobId> = (earlier.stale.iter().chain(&earlier.reattach))
        .map(|job| JobId(job.0))
        .collect();
    if journaled.is_empty() {
        return BTreeSet::new();
    }
    let foreign = match executor.foreign(&journaled, &earlier.run_dir).await {
        Ok(foreign) => foreign,
        Err(e) => {
            crate::tell!("warning: cannot check the earlier session's Slurm jobs ({e}); none is cancelled or re-attached to");
            journaled.iter().copied().collect()
        }
    };
    if !foreign.is_empty() {
        let ids: Vec<String> = foreign.iter().map(|id| id.to_string()).collect();
        crate::tell!("warning: resume: Slurm job(s) {} named by the journal do not run this run dir's scripts; left alone, their runs run again", ids.join(" "));
    }
    foreign
}

impl Backend for Slurm {
    fn name(&self) -> &'static str {
        crate::executor::kind_name(ExecutorKind::Slurm)
    }

    fn grants_devices(&self) -> bool {
        true
    }

    fn nodes(&self) -> Option<u32> {
        // Unknown (sinfo did not answer): the cluster refuses what it cannot place itself.
        Some(self.nodes.unwrap_or(u32::MAX))
    }

    fn max_in_flight(&self) -> Option<usize> {
        // Nothing is leased locally under Slurm: this cap is all that bounds the queue.
        Some(self.config.max_jobs.unwrap_or(DEFAULT_MAX_JOBS))
    }

    fn can_reattach(&self, stack: &StackDef) -> bool {
        // A stack with one process per round runs again whole: its rounds' jobs are not one.
        stack.shape() == Shape::Campaign
    }

    fn resume_notes(&self, reattached: usize, _stale: &[JobRef]) -> Vec<String> {
        if reattached == 0 {
            return Vec::new();
        }
        vec![format!(
            "resume: re-attaching to {reattached} Slurm job{} of the earlier session",
            if reattached == 1 { "" } else { "s" }
        )]
    }

    fn start(&self, earlier: Earlier) -> Pending<'_> {
        Box::pin(async move {
            let executor = SlurmExecutor::new(self.config.clone());
            let foreign = foreign_jobs(&executor, &earlier).await;
            // One task owns the Slurm executor so every run's job is polled in one batch.
            let service = SlurmService::start(executor).0;
            let stale: Vec<JobId> = (earlier.stale.iter())
                .map(|job| JobId(job.0))
                .filter(|id| !foreign.contains(id))
                .collect();
            if !stale.is_empty() {
                if let Err(e) = service.cancel(stale).await {
                    crate::tell!("warning: cannot cancel the earlier session's stale jobs: {e}");
                }
            }
            let _ = self.started.set(SlurmRun {
                service,
                campaign: self.campaign.clone(),
                kind: self.kind,
                decision: self.decision.subscribe(),
                foreign,
            });
        })
    }

    fn run<'a>(&'a self, req: ProcessRequest<'a>, on_line: OnLine<'a>) -> Running<'a> {
        match self.started.get() {
            Some(run) => run.run(req, on_line),
            None => Box::pin(async {
                Err(ExecFailure::Run("the Slurm backend was not started".into()))
            }),
        }
    }

    fn interrupted(&self) -> Pending<'_> {
        Box::pin(async move {
            let Some(run) = self.started.get() else {
                return;
            };
            let policy = self.on_interrupt;
            let decision = job::decide(&run.service, policy.cancel_at_once, policy.ask).await;
            self.decide_once(decision);
        })
    }

    fn failed(&self) {
        // The jobs' results are collected by resume once the problem is fixed.
        self.decide_once(Decision {
            action: OnInterrupt::LeaveRunning,
            jobs: Vec::new(),
        });
    }

    fn interrupt_note(&self, detached: &[JobRef], run_dir: &Path) -> Option<InterruptNote> {
        let decision = self.decision.borrow().clone()?;
        let (action, mut jobs): (&str, Vec<u64>) = match decision.action {
            OnInterrupt::Cancel => ("cancelled", decision.jobs.iter().map(|j| j.0).collect()),
            OnInterrupt::LeaveRunning => ("left_running", detached.iter().map(|j| j.0).collect()),
        };
        jobs.sort_unstable();
        let mut fields = Map::new();
        fields.insert("action".into(), action.into());
        fields.insert("jobs".into(), jobs.clone().into());
        let ids: Vec<String> = jobs.iter().map(u64::to_string).collect();
        let message = (!jobs.is_empty()).then(|| match decision.action {
            OnInterrupt::Cancel => {
                format!("cancelled {} Slurm job(s): {}", jobs.len(), ids.join(" "))
            }
            OnInterrupt::LeaveRunning => format!(
                "left {} Slurm job(s) queued or running: {}
  `campaign resume {}` re-attaches to them and records their results
  `scancel {}` cancels them",
                jobs.len(),
                ids.join(" "),
                run_dir.display(),
                ids.join(" ")
            ),
        });
        Some(InterruptNote {
            event: "slurm_interrupt",
            fields,
            message,
        })
    }
}

impl Slurm {
    /// The first decision stands (an interrupt after a failure, or the reverse, changes nothing).
    fn decide_once(&self, decision: Decision) {
        self.decision.send_if_modified(|d| {
            let unset = d.is_none();
            if unset {
                *d = Some(decision);
            }
            unset
        });
    }
}
