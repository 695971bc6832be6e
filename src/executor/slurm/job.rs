//! A run's process as a Slurm batch job — what `--executor slurm` runs each process as: submit or
//! re-attach, await its end, replay the `run.log` it left in the bundle line by line — and what
//! happens to the campaign's jobs on Ctrl-C (cancel them, after asking once through the
//! caller's prompt, or leave them running for `campaign resume`).
//!
//! Owns the interrupt decision and the per-run job lifecycle. It does not journal (the run
//! reports each job id to the dispatcher, which does), does not judge or parse runs (the engine
//! does) and does not talk to Slurm itself (the shared `SlurmService` does).

use tokio::sync::watch;

use crate::executor::backend::{
    AskCancel, BackendEnd, ExecFailure, JobRef, OnLine, OnSubmit, ProcessRequest, Ran, Running,
};
use crate::executor::slurm::{
    process_outcome, replay_log, Attached, BatchJob, JobEnd, JobId, JobState, SlurmService, Verdict,
};
use crate::executor::ProcessOutcome;

/// What a run needs to go through Slurm: the shared executor service, the job's naming and
/// device request (see docs/slurm.md), and the campaign's decision on an interrupt.
#[derive(Debug, Clone)]
pub(crate) struct SlurmRun {
    pub(crate) service: SlurmService,
    pub(crate) campaign: String,
    pub(crate) kind: crate::model::plan::DeviceKind,
    /// `None` until the campaign is interrupted and has decided what to do with its jobs.
    pub(crate) decision: watch::Receiver<Option<Decision>>,
    /// Jobs the journal names that this run dir did not submit: never re-attached to.
    pub(crate) foreign: std::collections::BTreeSet<JobId>,
}

/// What an interrupted campaign does with its Slurm jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OnInterrupt {
    /// scancel them; their runs end `interrupted`.
    Cancel,
    /// Leave them queued or running; their runs stay open in the journal for resume.
    LeaveRunning,
}

/// The decision and the jobs in flight when it was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decision {
    pub(crate) action: OnInterrupt,
    pub(crate) jobs: Vec<JobId>,
}

/// Decide on Ctrl-C: cancel at once with `--cancel-on-interrupt`; ask once when the caller
/// gave a prompt (stdin is a terminal); otherwise (a script, CI, nohup) leave the jobs running
/// — cancelling hours of queued work is not something to do without being asked. A `Cancel`
/// is carried out here with one scancel for every job in flight.
pub(crate) async fn decide(
    service: &SlurmService,
    cancel_at_once: bool,
    ask: Option<AskCancel>,
) -> Decision {
    let jobs = service.watching().await.unwrap_or_default();
    let action = if jobs.is_empty() || cancel_at_once {
        OnInterrupt::Cancel
    } else if let Some(ask) = ask {
        let n = jobs.len();
        match tokio::task::spawn_blocking(move || ask(n)).await {
            Ok(true) => OnInterrupt::Cancel,
            _ => OnInterrupt::LeaveRunning,
        }
    } else {
        OnInterrupt::LeaveRunning
    };
    if action == OnInterrupt::Cancel && !jobs.is_empty() {
        if let Err(e) = service.cancel_all().await {
            crate::tell!("warning: {e}; the jobs may still be queued or running");
        }
    }
    Decision { action, jobs }
}

/// How one process of a run ended under Slurm.
pub(crate) enum JobOutcome {
    /// The job ended: its exit as the local executor would report it, and Slurm's account of
    /// the end (its `run.log` is in the bundle).
    Ended(ProcessOutcome, Box<JobEnd>, JobId),
    /// The campaign was interrupted before the job was submitted.
    NotSubmitted,
    /// Interrupted, and the jobs are left running.
    Detached(JobId),
}

/// Everything one batch job of a run needs.
pub(crate) struct JobRequest<'a> {
    pub(crate) slurm: &'a SlurmRun,
    pub(crate) job: BatchJob,
    /// A job an earlier session submitted for this attempt: watch it instead of submitting.
    pub(crate) reattach: Option<JobId>,
    pub(crate) on_submit: &'a OnSubmit,
    pub(crate) cancel: watch::Receiver<bool>,
}

/// Run one process as a batch job: submit (or re-attach), report the id, await the end while
/// honouring an interrupt's decision.
pub(crate) async fn run_job(req: JobRequest<'_>) -> Result<JobOutcome, String> {
    let JobRequest {
        slurm,
        job,
        mut reattach,
        on_submit,
        mut cancel,
    } = req;
    loop {
        let (id, mut end_rx, reattached) = match reattach.take() {
            Some(id) => {
                let attached = Attached {
                    job_id: id,
                    bundle_dir: job.bundle_dir.clone(),
                };
                let end = slurm
                    .service
                    .reattach(attached)
                    .await
                    .map_err(|e| format!("cannot watch Slurm job {id}: {e}"))?;
                (id, end, true)
            }
            None => {
                if *cancel.borrow() {
                    return Ok(JobOutcome::NotSubmitted);
                }
                let submitted = slurm
                    .service
                    .submit(job.clone())
                    .await
                    .map_err(|e| format!("cannot submit to Slurm: {e}"))?;
                (submitted.id, submitted.end, false)
            }
        };
        on_submit(JobRef(id.0), reattached);
        let mut watching_cancel = true;
        if *cancel.borrow() {
            watching_cancel = false;
            if let Some(out) = on_interrupt(slurm, id).await {
                return Ok(out);
            }
        }
        let end = loop {
            tokio::select! {
                end = &mut end_rx => break end,
                changed = cancel.changed(), if watching_cancel => {
                    watching_cancel = false;
                    if changed.is_ok() && *cancel.borrow() {
                        if let Some(out) = on_interrupt(slurm, id).await {
                            return Ok(out);
                        }
                    }
                }
            }
        }
        .map_err(|_| format!("the Slurm executor stopped before job {id} ended"))?;
        if reattached && lost(&end) && !*cancel.borrow() {
            // Slurm forgot the job and it left no result: it never ran to its end, so the run
            // is submitted again (its half-written log is replaced).
            crate::tell!(
                "{}: {}; submitting it again",
                job.name(),
                end.verdict.reason().unwrap_or_default()
            );
            continue;
        }
        return Ok(JobOutcome::Ended(process_outcome(&end), Box::new(end), id));
    }
}

/// A re-attached job Slurm no longer knows that left no result in its bundle.
fn lost(end: &JobEnd) -> bool {
    end.source == "bundle"
        && end.state == JobState::Other("UNKNOWN".into())
        && matches!(end.verdict, Verdict::Interrupted(_))
}

/// Wait for the campaign's decision; `Some` when the run must stop waiting for its job.
async fn on_interrupt(slurm: &SlurmRun, id: JobId) -> Option<JobOutcome> {
    let mut decision = slurm.decision.clone();
    let action = match decision.wait_for(Option::is_some).await {
        Ok(d) => d.as_ref().map_or(OnInterrupt::LeaveRunning, |d| d.action),
        Err(_) => OnInterrupt::LeaveRunning,
    };
    match action {
        OnInterrupt::LeaveRunning => Some(JobOutcome::Detached(id)),
        OnInterrupt::Cancel => {
            // A job submitted while the decision was made missed the campaign's scancel; ids
            // already cancelled are not sent again. The end arrives as `interrupted`.
            if let Err(e) = slurm.service.cancel(vec![id]).await {
                crate::tell!("warning: {e}");
            }
            None
        }
    }
}

impl SlurmRun {
    /// Run one process of a run as a batch job; its `run.log` is replayed line by line once the
    /// job ended.
    pub(crate) fn run<'a>(&'a self, req: ProcessRequest<'a>, on_line: OnLine<'a>) -> Running<'a> {
        Box::pin(async move {
            let request = JobRequest {
                slurm: self,
                job: batch_job(self, &req),
                reattach: (req.reattach.map(|job| JobId(job.0)))
                    .filter(|id| !self.foreign.contains(id)),
                on_submit: req.on_submit,
                cancel: req.cancel.clone(),
            };
            match run_job(request).await.map_err(ExecFailure::Run)? {
                JobOutcome::Ended(outcome, end, id) => {
                    replay_log(&req.spec.log_path, &mut |line| on_line(line))
                        .map_err(|e| ExecFailure::Run(e.to_string()))?;
                    let mut end = Box::new(backend_end(id, &end));
                    end.cpus = super::bundle::read_cpus(req.bundle);
                    Ok(Ran::Ended {
                        outcome,
                        end: Some(end),
                    })
                }
                JobOutcome::NotSubmitted => Ok(Ran::NotStarted(
                    "interrupted before its Slurm job was submitted".into(),
                )),
                JobOutcome::Detached(id) => {
                    Ok(Ran::Detached(format!("Slurm job {id} left running")))
                }
            }
        })
    }
}

/// What the engine records of a finished job: the granted devices, the manifest's `slurm`
/// object, and Slurm's own verdict when Slurm stopped the job (time limit, node failure, …).
fn backend_end(id: JobId, end: &JobEnd) -> BackendEnd {
    BackendEnd {
        devices: end.devices.as_ref().and_then(|d| d.ids.clone()),
        manifest: ("slurm", manifest_entry(id, end)),
        verdict: (end.verdict.status()).zip(end.verdict.reason().map(str::to_string)),
        rank_nodes: end
            .placement
            .as_ref()
            .filter(|p| p.nodes.len() > 1 && !p.ranks.is_empty())
            .map(|p| p.ranks.iter().map(|r| r.node.clone()).collect()),
        node_hardware: (end.placement.as_ref())
            .map(|p| p.hardware.clone())
            .unwrap_or_default(),
        cpus: None,
    }
}

/// The batch job of one process of a run, writing into the run's bundle.
fn batch_job(slurm: &SlurmRun, req: &ProcessRequest<'_>) -> BatchJob {
    BatchJob {
        campaign: slurm.campaign.clone(),
        case_id: req.case_id.to_string(),
        stack: req.stack.to_string(),
        devices: req.devices,
        layout: req.layout,
        kind: slurm.kind,
        process: req.spec.clone(),
        bundle_dir: req.bundle.to_path_buf(),
    }
}

/// The manifest's `slurm` object: job id, final state and reason, node, granted devices.
fn manifest_entry(id: JobId, end: &JobEnd) -> serde_json::Value {
    let devices = end.devices.as_ref();
    serde_json::json!({
        "job_id": id.0,
        "state": end.state.to_string(),
        "reason": end.reason,
        "exit": end.slurm_exit,
        "node": devices.and_then(|d| d.node.clone()),
        "granted": devices.map(|d| d.granted.clone()),
        "variables": devices.map(|d| d.variables.clone()),
        "source": end.source,
        "nodes": end.placement.as_ref().map(|p| p.nodes.clone()),
        "ranks": end.placement.as_ref().map(|p| p.ranks.clone()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forgotten_job_without_result_is_lost_but_a_cancelled_one_is_not() {
        let end = |state: JobState, source: &'static str, verdict: Verdict| JobEnd {
            state,
            reason: None,
            slurm_exit: None,
            verdict,
            outcome: None,
            devices: None,
            placement: None,
            source,
        };
        assert!(lost(&end(
            JobState::Other("UNKNOWN".into()),
            "bundle",
            Verdict::Interrupted("unknown to Slurm".into())
        )));
        assert!(!lost(&end(
            JobState::Other("UNKNOWN".into()),
            "bundle",
            Verdict::Parse
        )));
        assert!(!lost(&end(
            JobState::Cancelled,
            "squeue",
            Verdict::Interrupted("cancelled".into())
        )));
    }
}
