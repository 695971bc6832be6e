//! Health probes: the optional `probe` command of a stack (`[stacks.NAME] probe`) or of the pool
//! (`[devices] probe`) run on each device a run is about to use — before the first run on it and
//! before each retry — the old harness's "box-health probe".
//!
//! Each device is probed on its own (`devices` = that one id, `CAMPAIGN_DEVICES` likewise) so a
//! failure names the device to quarantine. Output is appended to `probes/dev<N>.log` in the run
//! dir. It only runs probes and reports what they found: the scheduler quarantines.

use std::sync::Arc;

use tokio::sync::watch;

use crate::engine::run_status;
use crate::engine::schedule::scheduler::ProbeReport;
use crate::executor::local::run_process;
use crate::executor::{KillReason, ProcessSpec, GRACE};
use crate::model::case::Case;
use crate::model::output::OutputLine;
use crate::model::stack::{CommandSpec, StackDef};
use crate::stack::render::{render_probe, RenderContext};
use crate::stack::resolve::EngineStack;
use crate::store::layout::RunDir;

/// Which probe checks the devices of `stack`'s runs: the stack's own, else the pool's. The key
/// names it for "already probed" bookkeeping (a device that passed the pool probe need not be
/// probed again for another stack).
pub(crate) fn probe_key(stack: &EngineStack, pool_probe: Option<&Vec<String>>) -> Option<String> {
    if stack.def.probe.is_some() {
        Some(format!("stack:{}", stack.name))
    } else {
        pool_probe.map(|_| "pool".to_string())
    }
}

/// One health check request.
pub(crate) struct ProbeJob {
    pub(crate) run_dir: Arc<RunDir>,
    pub(crate) stack: Arc<EngineStack>,
    pub(crate) pool_probe: Option<Vec<String>>,
    pub(crate) case: Case,
    pub(crate) case_id: String,
    pub(crate) devices: Vec<u32>,
    pub(crate) cancel: watch::Receiver<bool>,
}

/// The definition whose `probe` runs: the stack's, or the stack's with the pool's probe (so the
/// probe gets the stack's env and working directory like a run).
fn probe_def(stack: &EngineStack, pool_probe: Option<&Vec<String>>) -> Option<StackDef> {
    if stack.def.probe.is_some() {
        return Some(stack.def.clone());
    }
    let mut def = stack.def.clone();
    def.probe = Some(CommandSpec::Argv(pool_probe?.clone()));
    Some(def)
}

/// Probe every device of the job, one after the other.
pub(crate) async fn run(job: ProbeJob) -> ProbeReport {
    let mut report = ProbeReport::default();
    let Some(def) = probe_def(&job.stack, job.pool_probe.as_ref()) else {
        report.passed = job.devices.clone();
        return report;
    };
    for &device in &job.devices {
        if *job.cancel.borrow() {
            report.cancelled = true;
            break;
        }
        match probe_one(&job, &def, device).await {
            Ok(()) => report.passed.push(device),
            Err(None) => {
                report.cancelled = true;
                break;
            }
            Err(Some(detail)) => report.failed.push((device, detail)),
        }
    }
    report
}

/// `Err(None)`: interrupted; `Err(Some(why))`: the device failed its probe.
async fn probe_one(job: &ProbeJob, def: &StackDef, device: u32) -> Result<(), Option<String>> {
    let mut case = job.case.clone();
    case.device_ids = vec![device];
    let bundle = job.run_dir.bundle(&job.case_id, &job.stack.name);
    let ctx = RenderContext {
        case: case.clone(),
        devices: vec![device],
        warmup: case.warmup_rounds,
        timed: case.timed_rounds,
        case_file: job.run_dir.case_file(&job.case_id),
        bundle_dir: bundle.clone(),
        run_dir: job.run_dir.path.clone(),
        root: job.stack.root.clone().ok().flatten(),
        campaign_exe: crate::stack::render::campaign_exe(),
    };
    let rendered = match render_probe(&job.stack.name, def, &ctx) {
        Ok(Some(r)) => r,
        Ok(None) => return Ok(()),
        Err(e) => return Err(Some(format!("probe command: {e}"))),
    };
    // The probe's working directory is the run's bundle, which may not exist yet.
    let _ = std::fs::create_dir_all(&rendered.cwd);
    let spec = ProcessSpec {
        argv: rendered.argv,
        env: rendered.env,
        cwd: rendered.cwd,
        timeout: Some(job.stack.timeout),
        no_output_timeout: job.stack.no_output_timeout,
        grace: GRACE,
        log_path: job
            .run_dir
            .path
            .join("probes")
            .join(format!("dev{device}.log")),
        unit: None,
    };
    let outcome = run_process(&spec, &mut |_line: OutputLine| {}, job.cancel.clone())
        .await
        .map_err(|e| Some(format!("probe could not start: {e}")))?;
    if outcome.killed == Some(KillReason::Interrupted) {
        return Err(None);
    }
    match run_status::process_problem(&outcome, &spec) {
        None => Ok(()),
        Some((_, why)) => Err(Some(why)),
    }
}
