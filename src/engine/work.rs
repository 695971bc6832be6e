//! One run, start to end: render the stack's command, run its process(es), parse, judge, and
//! write the bundle (`run.log` grows as output arrives; `timing.json` and `manifest.json` at the
//! end). Also the `build` and `probe` steps of a stack.
//!
//! `campaign` shape: one process for every round. `subprocess` shape: one process per round
//! (warmup first), each process's parsed sample becomes that round, and the first round that
//! does not end well ends the run. It must not touch scheduler state: it returns results.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::watch;

use crate::engine::schedule::pool::Lease;
use crate::engine::verdict;
use crate::executor::local::run_process;
use crate::executor::{
    ExecFailure, Executor, ProcessOutcome, ProcessRequest, ProcessSpec, Ran, GRACE,
};
use crate::model::case::Case;
use crate::model::output::OutputLine;
use crate::model::results::{RunResult, RunStatus, Sample};
use crate::model::stack::Shape;
use crate::stack::parsers;
use crate::stack::parsers::{ParseContext, Parsed};
use crate::stack::render::{render, render_build, RenderContext};
use crate::stack::resolve::EngineStack;
use crate::store::layout::{round_sample, write_bundle, write_json, ProcessFacts, RunDir};

/// Everything one run needs.
pub(crate) struct RunJob {
    pub(crate) run_dir: Arc<RunDir>,
    pub(crate) case_id: String,
    pub(crate) stack: Arc<EngineStack>,
    /// The case as planned.
    pub(crate) case: Case,
    pub(crate) lease: Lease,
    /// Write the leased devices into the case (`placement = "auto"` on a device stack).
    pub(crate) place: bool,
    pub(crate) attempt: u32,
    pub(crate) cancel: watch::Receiver<bool>,
    /// Where the processes run (decided once for the campaign).
    pub(crate) executor: Arc<dyn Executor>,
    /// Writes the run's case file and bundle folder if the thread writing ahead has not yet.
    pub(crate) case_files: Arc<crate::engine::case_files::CaseFiles>,
    /// A Slurm job an earlier session submitted for this attempt (resume re-attaches to it).
    pub(crate) reattach: Option<crate::executor::slurm::JobId>,
    /// Told each Slurm job id as soon as it is known (the driver journals it).
    pub(crate) on_submit: OnSubmit,
}

use crate::executor::slurm::job::OnSubmit;

fn now() -> String {
    chrono::Local::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, false)
}

/// A run's result with no samples (skipped, unavailable, blocked, or failed before starting).
pub(crate) fn unrun(
    case: &Case,
    case_id: &str,
    stack: &str,
    status: RunStatus,
    reason: &str,
    attempt: u32,
) -> RunResult {
    RunResult {
        case: case.clone(),
        case_id: case_id.to_string(),
        stack: stack.to_string(),
        status,
        error: Some(reason.to_string()),
        samples: Vec::new(),
        bundle: RunDir::bundle_rel(case_id, stack),
        attempt,
        exit_code: None,
        started: None,
        ended: None,
        timing_source: None,
        cpus: None,
        cpu_contention: None,
    }
}

/// Before attempt `attempt` (> 1) writes `run.log`: the previous attempt's `run.log` becomes
/// `run.attempt<N-1>.log` (unless that attempt already has its own file).
fn keep_previous_log(bundle: &Path, attempt: u32) {
    if attempt > 1 {
        let old = bundle.join(format!("run.attempt{}.log", attempt - 1));
        if !old.exists() {
            let _ = std::fs::rename(bundle.join("run.log"), old);
        }
        let _ = std::fs::remove_file(bundle.join("run.log"));
    }
}

/// After attempt `attempt` (> 1): its log is also `run.attempt<N>.log` (a hard link; `run.log`
/// stays the latest), so every attempt of a retried run has its own file. Returns the attempt
/// logs present in the bundle, oldest first.
fn attempt_logs(bundle: &Path, attempt: u32) -> Vec<String> {
    if attempt > 1 {
        let own = bundle.join(format!("run.attempt{attempt}.log"));
        let _ = std::fs::remove_file(&own);
        let _ = std::fs::hard_link(bundle.join("run.log"), own);
    }
    (1..=attempt)
        .map(|n| format!("run.attempt{n}.log"))
        .filter(|name| bundle.join(name).is_file())
        .collect()
}

/// How [`execute`] ended.
#[derive(Debug)]
pub(crate) enum Executed {
    /// The run has a result (any status); its bundle is written.
    Run(Box<RunResult>),
    /// Interrupted with its Slurm job left running: nothing recorded, resume re-attaches.
    Detached(crate::executor::slurm::JobId),
}

/// Execute one run and write its bundle. Problems of the run become its status; `Err` only
/// when the run dir cannot be written (disk full, a path that is not a folder): then nothing
/// about this attempt is recorded and the campaign must stop.
pub(crate) async fn execute(job: RunJob) -> crate::error::Result<Executed> {
    let stack = &job.stack;
    let bundle = job.run_dir.bundle(&job.case_id, &stack.name);
    job.case_files.ensure(&job.case_id)?;
    if !bundle.is_dir() {
        std::fs::create_dir_all(&bundle).map_err(|e| crate::error::Error::io(&bundle, e))?;
    }
    if job.reattach.is_none() {
        // A re-attached job is still writing this attempt's run.log.
        keep_previous_log(&bundle, job.attempt);
    }
    let mut case = job.case.clone();
    if job.place {
        case.device_ids = job.lease.devices.clone();
    }
    let mut facts = ProcessFacts {
        devices: visible_ids(&job, &case),
        ..ProcessFacts::default()
    };
    let started = now();
    let mut result = match run_rounds(&job, &case, &bundle, &mut facts).await {
        Ok(r) => r,
        Err(Stop::Write(e)) => return Err(e),
        Err(Stop::Detached(id)) => return Ok(Executed::Detached(id)),
        Err(Stop::Fail(reason)) => unrun(
            &case,
            &job.case_id,
            &stack.name,
            RunStatus::Fail,
            &reason,
            job.attempt,
        ),
    };
    result.started = Some(started);
    result.ended = Some(now());
    facts.attempt_logs = attempt_logs(&bundle, job.attempt);
    write_bundle(&job.run_dir, &result, &facts)?;
    Ok(Executed::Run(Box::new(result)))
}

/// The ids the stack is told (`CAMPAIGN_DEVICES`, `{{ devices }}`): the lease; under Slurm,
/// where nothing is leased locally, the logical ids 0..P-1 (the job's batch script replaces
/// them with the granted devices when Slurm grants any).
fn visible_ids(job: &RunJob, case: &Case) -> Vec<u32> {
    let leased = job.lease.visible_ids();
    if job.executor.grants_devices() && leased.is_empty() {
        (0..case.p).collect()
    } else {
        leased.to_vec()
    }
}

/// Why a run ended early: a failure of the run, or of the run dir, or its Slurm job was left
/// running on an interrupt.
enum Stop {
    Fail(String),
    Write(crate::error::Error),
    Detached(crate::executor::slurm::JobId),
}

impl From<String> for Stop {
    fn from(reason: String) -> Stop {
        Stop::Fail(reason)
    }
}

impl From<&str> for Stop {
    fn from(reason: &str) -> Stop {
        Stop::Fail(reason.to_string())
    }
}

async fn run_rounds(
    job: &RunJob,
    case: &Case,
    bundle: &Path,
    facts: &mut ProcessFacts,
) -> Result<RunResult, Stop> {
    let stack = &job.stack;
    let case_file = if case == &job.case {
        job.run_dir.case_file(&job.case_id)
    } else {
        // Placed on other devices than planned: the stack reads the case as it runs.
        let f = bundle.join("case.json");
        // Not synced: only this attempt's process reads it (see store::atomic::replace_all).
        crate::store::atomic::replace_all(&[(&f, case.to_pretty_json().as_bytes())])
            .map_err(Stop::Write)?;
        f
    };
    let (warmup, timed) = (case.warmup_rounds, case.timed_rounds);
    let ctx = |w: u32, t: u32| RenderContext {
        case: case.clone(),
        devices: visible_ids(job, case),
        warmup: w,
        timed: t,
        case_file: case_file.clone(),
        bundle_dir: bundle.to_path_buf(),
        run_dir: job.run_dir.path.clone(),
        root: stack.root.clone().ok().flatten(),
        campaign_exe: crate::stack::render::campaign_exe(),
    };
    // The limits every process of the run gets (and that the verdict words a timeout with).
    let limits = ProcessSpec {
        timeout: Some(stack.timeout),
        no_output_timeout: stack.no_output_timeout,
        grace: GRACE,
        log_path: bundle.join("run.log"),
        // Every round of the attempt runs in the unit the journal's `started` line names.
        unit: Some(run_unit(
            &job.run_dir,
            &job.case_id,
            &stack.name,
            job.attempt,
        )),
        ..ProcessSpec::default()
    };
    let plan_rounds: Vec<(u32, u32)> = match stack.def.shape() {
        Shape::Campaign => vec![(warmup, timed)],
        Shape::Subprocess => (0..warmup)
            .map(|_| (1, 0))
            .chain((0..timed).map(|_| (0, 1)))
            .collect(),
    };
    let subprocess = stack.def.shape() == Shape::Subprocess;
    let mut samples: Vec<Sample> = Vec::new();
    let mut engine_timed = false;
    let mut last: Option<(ProcessOutcome, Parsed)> = None;
    let mut slurm_verdict: Option<(RunStatus, String)> = None;
    let mut reattach = job.reattach;
    let mut merged = Parsed::default();
    let mut cause = verdict::Cause::default();
    let n_processes = plan_rounds.len();
    // One process per round append to one run.log: mark where each starts and ends (locally,
    // where campaign writes run.log itself; under Slurm the job writes it). A single-process run
    // keeps its run.log exactly as the process printed it.
    let mark = subprocess && !job.executor.grants_devices();
    let (mut n_warm, mut n_timed) = (0u32, 0u32);
    // (time the run was stalled for a CPU, wall time) over its processes; None once a process
    // was not measured.
    let mut waited = Some((std::time::Duration::ZERO, std::time::Duration::ZERO));
    for (index, (w, t)) in plan_rounds.into_iter().enumerate() {
        // Only the last process's output can explain how the run ended.
        cause.reset();
        let what = if subprocess {
            if w > 0 {
                n_warm += 1;
            } else {
                n_timed += 1;
            }
            let label = if w > 0 {
                format!("warmup-{n_warm}")
            } else {
                format!("timed-{n_timed}")
            };
            format!("round {}/{n_processes} ({label})", index + 1)
        } else {
            String::new()
        };
        let rendered = render(&stack.name, &stack.def, &ctx(w, t)).map_err(|e| e.to_string())?;
        facts.argv = rendered.argv.clone();
        facts.env = rendered.env.clone();
        let spec = ProcessSpec {
            argv: rendered.argv,
            env: rendered.env,
            cwd: rendered.cwd,
            ..limits.clone()
        };
        let pctx = ParseContext {
            n_bytes: case.n_bytes(),
            p: case.p,
            warmup: w,
            timed: t,
            argv: spec.argv.clone(),
        };
        let mut parser = parsers::make(&stack.def, &pctx).map_err(|e| e.to_string())?;
        let request = ProcessRequest {
            spec: &spec,
            case_id: &job.case_id,
            stack: &stack.name,
            devices: case.p,
            bundle,
            // Only the first process of a run can be the one an earlier session left.
            reattach: reattach.take(),
            on_submit: &job.on_submit,
            cancel: job.cancel.clone(),
        };
        if mark {
            let argv = spec.argv.join(" ");
            append_marker(
                &limits.log_path,
                &format!("==> campaign: {what} start: {argv}"),
            )
            .map_err(Stop::Write)?;
        }
        let ran = job
            .executor
            .run(request, &mut |line: OutputLine| {
                cause.feed(&line);
                parser.feed(&line)
            })
            .await
            .map_err(|e| match e {
                ExecFailure::RunDir(e) => Stop::Write(e),
                ExecFailure::Run(reason) => Stop::Fail(reason),
            })?;
        let (outcome, parsed) = match ran {
            Ran::Ended {
                outcome,
                job: batch,
            } => {
                if let Some((id, end)) = batch {
                    if let Some(ids) = end.devices.as_ref().and_then(|d| d.ids.clone()) {
                        facts.devices = ids;
                    }
                    facts.slurm = Some(crate::executor::slurm::job::manifest_entry(id, &end));
                    // Slurm stopped the job (time limit, node failure, …): its state and
                    // reason are the run's status, whatever the partial output says.
                    if let (Some(status), Some(reason)) =
                        (end.verdict.status(), end.verdict.reason())
                    {
                        slurm_verdict = Some((status, reason.to_string()));
                    }
                }
                (outcome, parser.finish())
            }
            Ran::NotStarted => {
                slurm_verdict = Some((
                    RunStatus::Interrupted,
                    "interrupted before its Slurm job was submitted".into(),
                ));
                (
                    crate::executor::slurm::job::not_submitted(),
                    Parsed::default(),
                )
            }
            Ran::Detached(id) => return Err(Stop::Detached(id)),
        };
        if mark {
            let how = match (outcome.killed, outcome.exit_code, outcome.signal) {
                (Some(k), _, _) => format!("killed ({k:?})"),
                (None, Some(c), _) => format!("exit code {c}"),
                (None, None, Some(sig)) => format!("signal {sig}"),
                _ => "ended".to_string(),
            };
            let secs = outcome.elapsed.as_secs_f64();
            append_marker(
                &limits.log_path,
                &format!("<== campaign: {what} end: {how} after {secs:.3} s"),
            )
            .map_err(Stop::Write)?;
        }
        facts.signal = outcome.signal;
        waited = waited
            .zip(outcome.cpu_wait)
            .map(|((wait, wall), w)| (wait + w, wall + outcome.elapsed));
        let mut got = parsed.samples.clone();
        if subprocess {
            // One process = one round: its first sample is the round (labelled by the engine).
            got.truncate(1);
            for s in &mut got {
                s.round = 0;
                s.phase.clear();
            }
            // A round whose process failed observed no timed window: no time, no bandwidth.
            if verdict::process_problem(&outcome, &limits).is_some()
                || parsed.correctness == Some(false)
            {
                got.iter_mut().for_each(|s| s.ok = false);
            }
            let elapsed = Some(outcome.elapsed);
            engine_timed |= verdict::complete(&mut got, elapsed, case.n_bytes());
        }
        samples.extend(got);
        merged.correctness = match (merged.correctness, parsed.correctness) {
            (Some(false), _) | (_, Some(false)) => Some(false),
            (a, b) => b.or(a),
        };
        merged.error = merged.error.or(parsed.error.clone());
        merged.warnings.extend(parsed.warnings.clone());
        let stop = verdict::process_problem(&outcome, &limits).is_some()
            || parsed.correctness == Some(false)
            || slurm_verdict.is_some();
        last = Some((outcome, parsed));
        if stop {
            break;
        }
    }
    verdict::label(&mut samples, warmup);
    if !subprocess {
        engine_timed = verdict::complete(&mut samples, None, case.n_bytes());
    }
    samples.iter_mut().for_each(round_sample);
    let (outcome, _) = last.ok_or("no process was run")?;
    let (status, reason) = match slurm_verdict {
        Some((status, reason)) => (status, Some(reason)),
        None => {
            let cause = cause.text();
            let limits = &limits;
            verdict::judge(
                &outcome,
                &merged,
                &samples,
                warmup,
                timed,
                limits,
                cause.as_deref(),
                stack.def.metric.unwrap_or_default(),
            )
        }
    };
    Ok(RunResult {
        case: case.clone(),
        case_id: job.case_id.clone(),
        stack: stack.name.clone(),
        status,
        error: reason,
        samples,
        bundle: RunDir::bundle_rel(&job.case_id, &stack.name),
        attempt: job.attempt,
        exit_code: outcome.exit_code,
        started: None,
        ended: None,
        timing_source: Some(if engine_timed { "engine" } else { "stack" }.into()),
        // What the machine gave a CPU run (oversubscription is judged against it).
        cpus: (!job.lease.cpus.is_empty()).then(|| job.lease.cpus.clone()),
        cpu_contention: contention(waited),
    })
}

/// The share of its wall time a run was stalled for a CPU, to 4 decimals (the stall clock runs
/// until the output is drained, a little past the exit, hence the cap at 1).
fn contention(waited: Option<(std::time::Duration, std::time::Duration)>) -> Option<f64> {
    let (wait, wall) = waited?;
    let share = wait.as_secs_f64() / wall.as_secs_f64();
    share
        .is_finite()
        .then(|| (share.min(1.0) * 1e4).round() / 1e4)
}

/// Append one marker line to `run.log` (on a line of its own even after output that did not
/// end with a newline), so a reader sees where each of the run's processes starts and ends.
fn append_marker(log: &Path, text: &str) -> crate::error::Result<()> {
    use std::io::{Read, Seek, SeekFrom, Write};
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .open(log)
        .map_err(|e| crate::error::Error::io(log, e))?;
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let mut line = String::new();
    if len > 0 {
        let mut last = [0u8; 1];
        let ended = f.seek(SeekFrom::Start(len - 1)).is_ok()
            && f.read_exact(&mut last).is_ok()
            && last[0] == b'\n';
        if !ended {
            line.push('\n');
        }
    }
    line.push_str(text);
    line.push('\n');
    f.write_all(line.as_bytes())
        .map_err(|e| crate::error::Error::io(log, e))
}

/// The containment unit of attempt `attempt` of a run (`executor::unit::id_for`): the driver
/// journals it with `started`, so a resume after a crash can reap what the attempt left.
pub(crate) fn run_unit(run_dir: &RunDir, case_id: &str, stack: &str, attempt: u32) -> String {
    let step = crate::store::journal::run_step(case_id, stack);
    crate::executor::unit::id_for(&run_dir.path, &step, attempt)
}

/// Build a stack once: `Err` is the reason its runs are `unavailable` (the log stays in
/// `builds/<stack>/build.log`).
pub(crate) async fn build(
    run_dir: Arc<RunDir>,
    stack: Arc<EngineStack>,
    cancel: watch::Receiver<bool>,
) -> Result<(), String> {
    let root = stack.root.clone()?;
    // A stack missing its compiler must say so with its hint, not "build failed to start".
    probe(&stack)?;
    // Shipped stacks that build from embedded sources (stack::assets) find them in builds/<stack>/.
    crate::stack::assets::write_for(&stack.name, &run_dir.path).map_err(|e| e.to_string())?;
    let rendered = render_build(&stack.name, &stack.def, &run_dir.path, root.as_deref())
        .map_err(|e| format!("build command: {e}"))?;
    let Some(rendered) = rendered else {
        return Ok(());
    };
    let rel = Path::new("builds").join(&stack.name).join("build.log");
    let spec = ProcessSpec {
        argv: rendered.argv,
        env: rendered.env,
        cwd: rendered.cwd,
        timeout: Some(stack.timeout),
        no_output_timeout: stack.no_output_timeout,
        grace: GRACE,
        log_path: run_dir.path.join(&rel),
        unit: None,
    };
    let _ = write_json(
        &run_dir
            .path
            .join("builds")
            .join(&stack.name)
            .join("build.json"),
        &serde_json::json!({"argv": spec.argv, "cwd": spec.cwd}),
    );
    let mut cause = verdict::Cause::default();
    let outcome = run_process(&spec, &mut |line: OutputLine| cause.feed(&line), cancel)
        .await
        .map_err(|e| format!("build failed to start: {e}"))?;
    match verdict::process_problem(&outcome, &spec) {
        None => Ok(()),
        Some((_, why)) => {
            let said = cause.line().map(|c| format!(": {c}")).unwrap_or_default();
            Err(format!(
                "build failed ({why}){said}; log: {}",
                rel.display()
            ))
        }
    }
}

/// How long a readiness probe may take (an import of torch on a cold cache takes seconds).
pub(crate) const READY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// Run the stack's readiness probe (`ready`), if it declares one, in its own containment unit
/// with its output in `log`. `Err` is the reason the stack is `unavailable`: the probe's command,
/// how it ended and its most telling output line.
pub(crate) async fn ready(
    name: &str,
    def: &crate::model::stack::StackDef,
    root: Option<&Path>,
    log: &Path,
    cancel: watch::Receiver<bool>,
) -> Result<(), String> {
    let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let rendered = crate::stack::render::render_ready(name, def, root, &here)
        .map_err(|e| format!("readiness probe: {e}"))?;
    let Some(rendered) = rendered else {
        return Ok(());
    };
    let shown = rendered.argv.join(" ");
    let spec = ProcessSpec {
        argv: rendered.argv,
        env: rendered.env,
        cwd: rendered.cwd,
        timeout: Some(READY_TIMEOUT),
        no_output_timeout: None,
        grace: GRACE,
        log_path: log.to_path_buf(),
        unit: None,
    };
    let mut cause = verdict::Cause::default();
    let outcome = run_process(&spec, &mut |line: OutputLine| cause.feed(&line), cancel)
        .await
        .map_err(|e| format!("readiness probe `{shown}` could not start: {e}"))?;
    match verdict::process_problem(&outcome, &spec) {
        None => Ok(()),
        Some((_, why)) => {
            let said = cause.line().map(|c| format!(": {c}")).unwrap_or_default();
            Err(format!("readiness probe `{shown}` failed ({why}){said}"))
        }
    }
}

/// The pre-flight of a stack (the `probe:<stack>` step): availability (root, `requires`,
/// program), then the readiness probe with its log in `builds/<stack>/ready.log`.
pub(crate) async fn preflight(
    run_dir: Arc<RunDir>,
    stack: Arc<EngineStack>,
    cancel: watch::Receiver<bool>,
) -> Result<(), String> {
    probe(&stack)?;
    let root = stack.root.clone()?;
    let log = run_dir
        .path
        .join("builds")
        .join(&stack.name)
        .join("ready.log");
    ready(&stack.name, &stack.def, root.as_deref(), &log, cancel)
        .await
        .map_err(|why| match &stack.def.hint {
            Some(hint) => format!("{why} ({hint})"),
            None => why,
        })
}

/// Is the stack available here (root, `requires`, program)? `Err` is the reason.
pub(crate) fn probe(stack: &EngineStack) -> Result<(), String> {
    let resolver = crate::stack::roots::Resolver::from_process();
    match crate::stack::availability::check(&stack.name, &stack.def, &resolver).reason() {
        None => Ok(()),
        Some(reason) => Err(reason),
    }
}

/// The run's fingerprint (crate::store::fingerprint) from the planned case and its rendered command;
/// a command that does not render has the fingerprint of its definition alone.
pub(crate) fn fingerprint(
    run_dir: &RunDir,
    case_id: &str,
    stack: &EngineStack,
    case: &Case,
) -> String {
    let ctx = RenderContext {
        case: case.clone(),
        devices: case.device_ids.clone(),
        warmup: case.warmup_rounds,
        timed: case.timed_rounds,
        case_file: run_dir.case_file(case_id),
        bundle_dir: run_dir.bundle(case_id, &stack.name),
        run_dir: run_dir.path.clone(),
        root: stack.root.clone().ok().flatten(),
        campaign_exe: crate::stack::render::campaign_exe(),
    };
    let (argv, env) = render(&stack.name, &stack.def, &ctx)
        .map(|r| (r.argv, r.env))
        .unwrap_or_default();
    crate::store::fingerprint::run_fingerprint(case, &stack.def, &argv, &env)
}

/// Fingerprint of a build or probe step: the stack's definition.
pub(crate) fn stack_fingerprint(stack: &EngineStack) -> String {
    use sha2::{Digest, Sha256};
    let text = serde_json::to_string(&stack.def).unwrap_or_default();
    Sha256::digest(text.as_bytes())
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}
