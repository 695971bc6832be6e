//! One run, start to end: render the stack's command, run its process(es), parse, judge, and
//! write the bundle (`run.log` grows as output arrives; `timing.json` and `manifest.json` at the
//! end). Also the `build` and `probe` steps of a stack.
//!
//! The processes of a run and its judging are `rounds` (the `campaign` shape: one process for
//! every round; `subprocess`: one per round). It must not touch scheduler state: it returns
//! results.

mod rounds;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::watch;

use crate::engine::run_status;
use crate::engine::schedule::pool::Lease;
use crate::executor::local::run_process;
use crate::executor::{Backend, JobRef, OnSubmit, ProcessSpec, GRACE};
use crate::model::case::Case;
use crate::model::output::OutputLine;
use crate::model::results::{RunResult, RunStatus};
use crate::stack::render::{render, render_build, RenderContext};
use crate::stack::resolve::EngineStack;
use crate::store::layout::{write_bundle, write_json, ProcessFacts, RunDir};

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
    pub(crate) backend: Arc<dyn Backend>,
    /// Writes the run's case file and bundle folder if the thread writing ahead has not yet.
    pub(crate) case_files: Arc<crate::engine::case_files::CaseFiles>,
    /// A job an earlier session started for this attempt (resume re-attaches to it).
    pub(crate) reattach: Option<JobRef>,
    /// Told each job as soon as the backend has one (the dispatcher journals it).
    pub(crate) on_submit: OnSubmit,
    /// Set on a profiled run (`engine::profiled`): its own folder and how its command changes.
    pub(crate) profile: Option<Arc<Profiled>>,
}

/// What makes a run a profiled run: a bundle of its own under the timed run's `profiling/`, its
/// own containment unit, and its command changed by the profile kind — a program put in front
/// (`perf record … --`), arguments after it, environment beside it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Profiled {
    /// The run's folder (absolute) and the same relative to the run dir.
    pub(crate) bundle: PathBuf,
    pub(crate) bundle_rel: PathBuf,
    /// Names its containment unit (a timed run's unit is never reused).
    pub(crate) unit_step: String,
    pub(crate) prefix: Vec<String>,
    pub(crate) args: Vec<String>,
    pub(crate) env: Vec<(String, String)>,
}

impl Profiled {
    /// The rendered command as the profile kind runs it. A shell stack (`sh -c CMD`) gets its
    /// arguments quoted onto `CMD`, where `sh` reads them, not after it as `$0`.
    pub(crate) fn apply(
        &self,
        shell: bool,
        mut argv: Vec<String>,
        mut env: Vec<(String, String)>,
    ) -> (Vec<String>, Vec<(String, String)>) {
        match argv.last_mut() {
            Some(cmd) if shell => {
                for a in &self.args {
                    cmd.push(' ');
                    cmd.push_str(&crate::model::shell::quote(a));
                }
            }
            _ => argv.extend(self.args.iter().cloned()),
        }
        let mut full = self.prefix.clone();
        full.extend(argv);
        env.retain(|(k, _)| !self.env.iter().any(|(k2, _)| k2 == k));
        env.extend(self.env.iter().cloned());
        (full, env)
    }
}

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
        rank_nodes: None,
        node_hardware: Vec::new(),
        ran: None,
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
    /// Interrupted with its job left running outside campaign: nothing recorded, resume
    /// re-attaches. The backend's note says so.
    Detached(String),
}

/// Execute one run and write its bundle. Problems of the run become its status; `Err` only
/// when the run dir cannot be written (disk full, a path that is not a folder): then nothing
/// about this attempt is recorded and the campaign must stop.
pub(crate) async fn execute(job: RunJob) -> crate::error::Result<Executed> {
    let stack = &job.stack;
    let bundle = match &job.profile {
        Some(p) => p.bundle.clone(),
        None => job.run_dir.bundle(&job.case_id, &stack.name),
    };
    job.case_files.ensure(&job.case_id)?;
    crate::store::layout::make_bundle_dir(&bundle)?;
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
    let mut result = match rounds::run_rounds(&job, &case, &bundle, &mut facts).await {
        Ok(r) => r,
        Err(Stop::Write(e)) => return Err(e),
        Err(Stop::Detached(note)) => return Ok(Executed::Detached(note)),
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
    result.rank_nodes = facts.rank_nodes.clone();
    result.node_hardware = facts.node_hardware.clone();
    result.ended = Some(now());
    if let Some(p) = &job.profile {
        result.bundle = p.bundle_rel.clone();
    }
    facts.attempt_logs = attempt_logs(&bundle, job.attempt);
    write_bundle(&job.run_dir, &result, &facts)?;
    Ok(Executed::Run(Box::new(result)))
}

/// The ids the stack is told (`CAMPAIGN_DEVICES`, `{{ devices }}`): the lease; under a backend
/// that grants devices, where nothing is leased locally, the logical ids 0..P-1 (the backend
/// replaces them with the granted devices when it grants any).
fn visible_ids(job: &RunJob, case: &Case) -> Vec<u32> {
    let leased = job.lease.visible_ids();
    if job.backend.grants_devices() && leased.is_empty() {
        (0..case.p).collect()
    } else {
        leased.to_vec()
    }
}

/// Why a run ended early: a failure of the run, or of the run dir, or its job was left running
/// outside campaign on an interrupt (the backend's note).
enum Stop {
    Fail(String),
    Write(crate::error::Error),
    Detached(String),
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

/// The containment unit of attempt `attempt` of a run (`executor::unit::id_for`): the dispatcher
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
    let mut cause = run_status::Cause::default();
    let outcome = run_process(&spec, &mut |line: OutputLine| cause.feed(&line), cancel)
        .await
        .map_err(|e| format!("build failed to start: {e}"))?;
    match run_status::process_problem(&outcome, &spec) {
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
/// `platform`: run its `ready_on.<platform>` probe instead of `ready`.
pub(crate) async fn ready(
    name: &str,
    def: &crate::model::stack::StackDef,
    platform: Option<crate::model::case::Platform>,
    root: Option<&Path>,
    log: &Path,
    cancel: watch::Receiver<bool>,
) -> Result<(), String> {
    let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let rendered = match platform {
        None => crate::stack::render::render_ready(name, def, root, &here),
        Some(p) => crate::stack::render::render_ready_on(name, def, p, root, &here),
    }
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
    let mut cause = run_status::Cause::default();
    let outcome = run_process(&spec, &mut |line: OutputLine| cause.feed(&line), cancel)
        .await
        .map_err(|e| format!("readiness probe `{shown}` could not start: {e}"))?;
    match run_status::process_problem(&outcome, &spec) {
        None => Ok(()),
        Some((_, why)) => {
            let said = cause.line().map(|c| format!(": {c}")).unwrap_or_default();
            Err(format!("readiness probe `{shown}` failed ({why}){said}"))
        }
    }
}

/// The pre-flight of a stack (the `probe:<stack>` step): availability (root, `requires`,
/// program), then the readiness probe with its log in `builds/<stack>/ready.log`, then the
/// probe of each of `platforms` (those the campaign runs it on) that declares one in
/// `ready_on`, its log in `builds/<stack>/ready-<platform>.log`.
pub(crate) async fn preflight(
    run_dir: Arc<RunDir>,
    stack: Arc<EngineStack>,
    platforms: Vec<crate::model::case::Platform>,
    cancel: watch::Receiver<bool>,
) -> Result<(), String> {
    probe(&stack)?;
    let root = stack.root.clone()?;
    let logs = run_dir.path.join("builds").join(&stack.name);
    let hinted = |why: String| match &stack.def.hint {
        Some(hint) => format!("{why} ({hint})"),
        None => why,
    };
    let log = logs.join("ready.log");
    ready(
        &stack.name,
        &stack.def,
        None,
        root.as_deref(),
        &log,
        cancel.clone(),
    )
    .await
    .map_err(hinted)?;
    for platform in platforms {
        if !stack.def.ready_on.contains_key(&platform) {
            continue;
        }
        let log = logs.join(format!("ready-{platform}.log"));
        let def = &stack.def;
        ready(
            &stack.name,
            def,
            Some(platform),
            root.as_deref(),
            &log,
            cancel.clone(),
        )
        .await
        // The stack's hint is about its root, not this platform's needs: the probe says.
        .map_err(|why| format!("on {platform}: {why}"))?;
    }
    Ok(())
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
    let text = serde_json::to_string(&stack.def).unwrap_or_default();
    crate::model::digest::sha256_hex(text.as_bytes(), 8)
}

#[cfg(test)]
mod profiled_tests {
    use super::Profiled;

    #[test]
    fn a_profiled_command_gets_its_prefix_arguments_and_environment() {
        let p = Profiled {
            prefix: vec!["perf".into(), "stat".into(), "--".into()],
            args: vec!["--enable-pmu".into(), "a b".into()],
            env: vec![("X".into(), "2".into())],
            ..Profiled::default()
        };
        let env = vec![("X".to_string(), "1".to_string()), ("Y".into(), "y".into())];
        let (argv, env) = p.apply(false, vec!["prog".into(), "-v".into()], env);
        assert_eq!(
            argv,
            ["perf", "stat", "--", "prog", "-v", "--enable-pmu", "a b"]
        );
        assert_eq!(env, [("Y".into(), "y".into()), ("X".into(), "2".into())]);
        // A shell stack's arguments go onto its command line, quoted.
        let (argv, _) = p.apply(true, vec!["sh".into(), "-c".into(), "prog".into()], vec![]);
        assert_eq!(
            argv,
            [
                "perf",
                "stat",
                "--",
                "sh",
                "-c",
                "prog '--enable-pmu' 'a b'"
            ]
        );
    }
}
