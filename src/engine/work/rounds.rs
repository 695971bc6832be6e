//! The processes of one run and what they add up to: the `campaign` shape runs one process for
//! every round, the `subprocess` shape one per round (warmup first; each process's first sample
//! is that round, and the first round that does not end well ends the run). Each process is
//! rendered, handed to the backend, parsed as its lines arrive, and marked in `run.log` where
//! campaign writes it; the run is judged from the last process's end, the merged parse and the
//! backend's own verdict when it stopped a process itself.
//!
//! Owns the per-run tally (samples, correctness, CPU stall, the backend's verdict). It writes
//! only `run.log` markers and a placed run's case file; the bundle is `work::execute`'s.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::engine::run_status::{self, Cause};
use crate::engine::work::{run_unit, visible_ids, RunJob, Stop};
use crate::executor::{ExecFailure, ProcessOutcome, ProcessRequest, ProcessSpec, Ran, GRACE};
use crate::model::case::Case;
use crate::model::output::OutputLine;
use crate::model::results::{RunResult, RunStatus, Sample};
use crate::model::stack::Shape;
use crate::stack::parsers::{self, ParseContext, Parsed};
use crate::stack::render::{render, RenderContext};
use crate::store::layout::{round_sample, ProcessFacts, RunDir};

/// Run every process of the run and judge it. `Err` is a failure before a process could be
/// judged (the command does not render, the run dir cannot be written, its job was left
/// running).
pub(super) async fn run_rounds(
    job: &RunJob,
    case: &Case,
    bundle: &Path,
    facts: &mut ProcessFacts,
) -> Result<RunResult, Stop> {
    let stack = &job.stack;
    let case_file = case_file(job, case, bundle)?;
    let limits = limits(job, bundle);
    let subprocess = stack.def.shape() == Shape::Subprocess;
    let processes = processes(stack.def.shape(), case.warmup_rounds, case.timed_rounds);
    let labels = labels(&processes, subprocess);
    // One process per round append to one run.log: mark where each starts and ends (locally,
    // where campaign writes run.log itself; a backend that grants devices has its job write it).
    // A single-process run keeps its run.log exactly as the process printed it.
    let mark = subprocess && !job.backend.grants_devices();
    let mut tally = Tally::default();
    let mut cause = Cause::default();
    let mut reattach = job.reattach;
    // What the run's output says ran (`[stacks.NAME.ran]`), over all its processes.
    let mut watcher = (stack.def.ran.as_ref())
        .map(|spec| crate::stack::ran::Watcher::new(spec, case.op))
        .transpose()?;
    let mut pinned = (None, None);
    for ((w, t), what) in processes.into_iter().zip(&labels) {
        // Only the last process's output can explain how the run ended.
        cause.reset();
        let ctx = render_context(job, case, &case_file, bundle, w, t);
        let rendered = render(&stack.name, &stack.def, &ctx).map_err(|e| e.to_string())?;
        pinned = crate::stack::render::render_ran_expect(&stack.name, &stack.def, &ctx)
            .map_err(|e| e.to_string())?;
        let (argv, env) = profiled(job, rendered.argv, rendered.env);
        (facts.argv, facts.env) = (argv.clone(), env.clone());
        let spec = ProcessSpec {
            argv,
            env,
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
            layout: crate::executor::NodeLayout::of(case),
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
        let mut cap = SampleCap::new(w, t);
        let ran = (job.backend)
            .run(request, &mut |line: OutputLine| {
                cause.feed(&line);
                if let Some(w) = watcher.as_mut() {
                    w.feed(&line);
                }
                if cap.admits(&line) {
                    parser.feed(&line)
                }
            })
            .await
            .map_err(|e| match e {
                ExecFailure::RunDir(e) => Stop::Write(e),
                ExecFailure::Run(reason) => Stop::Fail(reason),
            })?;
        let (outcome, parsed) = match ran {
            Ran::Ended { outcome, end } => {
                if let Some(end) = end {
                    let cpu = job.stack.def.resource() == crate::model::stack::Resource::Cpu;
                    take_backend_end(*end, cpu, facts, &mut tally);
                }
                (outcome, parser.finish())
            }
            Ran::NotStarted(reason) => {
                tally.backend_verdict = Some((RunStatus::Interrupted, reason));
                (ProcessOutcome::not_started(), Parsed::default())
            }
            Ran::Detached(note) => return Err(Stop::Detached(note)),
        };
        if mark {
            append_marker(&limits.log_path, &end_marker(what, &outcome)).map_err(Stop::Write)?;
        }
        facts.signal = outcome.signal;
        if let Some(verdict) = cap.verdict() {
            tally.backend_verdict = Some(verdict);
        }
        if tally.add(outcome, parsed, subprocess, &limits, case) {
            break;
        }
    }
    let ran = watcher.map(|w| w.finish(pinned.0, pinned.1));
    tally.judge(job, case, &limits, subprocess, &cause, ran)
}

/// How many native sample lines one process may print: each becomes a sample held in memory,
/// and a stack printing them without end would grow campaign without bound. Twice its rounds
/// (a stack may report phases as samples of their own) and some slack; the rest are not parsed.
struct SampleCap {
    rounds: u32,
    cap: usize,
    seen: usize,
}

impl SampleCap {
    fn new(warmup: u32, timed: u32) -> SampleCap {
        SampleCap {
            rounds: warmup + timed,
            cap: 2 * (warmup as usize + timed as usize) + 64,
            seen: 0,
        }
    }

    /// Should `line` reach the parser?
    fn admits(&mut self, line: &OutputLine) -> bool {
        if !line
            .text
            .starts_with(crate::stack::parsers::native::SAMPLE_KEYWORD)
        {
            return true;
        }
        self.seen += 1;
        self.seen <= self.cap
    }

    /// The run's verdict when the process printed past the cap.
    fn verdict(&self) -> Option<(RunStatus, String)> {
        (self.seen > self.cap).then(|| {
            (
                RunStatus::Fail,
                format!(
                    "the stack printed {} CAMPAIGN_SAMPLE lines where this process runs {} round(s); only the first {} were read (the rest are in run.log)",
                    self.seen, self.rounds, self.cap
                ),
            )
        })
    }
}

/// The case file the stack reads: the planned one, or (placed on other devices than planned)
/// the case as it runs, beside the bundle.
fn case_file(job: &RunJob, case: &Case, bundle: &Path) -> Result<PathBuf, Stop> {
    if case == &job.case {
        return Ok(job.run_dir.case_file(&job.case_id));
    }
    let f = bundle.join("case.json");
    // Not synced: only this attempt's process reads it (see store::atomic::replace_all).
    crate::store::atomic::replace_all(&[(&f, case.to_pretty_json().as_bytes())])
        .map_err(Stop::Write)?;
    Ok(f)
}

/// The limits every process of the run gets (and that the verdict words a timeout with).
fn limits(job: &RunJob, bundle: &Path) -> ProcessSpec {
    let stack = &job.stack;
    // Every round of the attempt runs in the unit the journal's `started` line names; a
    // profiled run in one of its own.
    let unit = match &job.profile {
        Some(p) => crate::executor::unit::id_for(&job.run_dir.path, &p.unit_step, job.attempt),
        None => run_unit(&job.run_dir, &job.case_id, &stack.name, job.attempt),
    };
    ProcessSpec {
        timeout: Some(stack.timeout),
        no_output_timeout: stack.no_output_timeout,
        grace: GRACE,
        log_path: bundle.join("run.log"),
        unit: Some(unit),
        ..ProcessSpec::default()
    }
}

/// The rendered command as it runs: unchanged, or as a profiled run's kind changes it.
fn profiled(
    job: &RunJob,
    argv: Vec<String>,
    env: Vec<(String, String)>,
) -> (Vec<String>, Vec<(String, String)>) {
    match &job.profile {
        Some(p) => {
            let shell = matches!(
                job.stack.def.command,
                Some(crate::model::stack::CommandSpec::Shell(_))
            );
            p.apply(shell, argv, env)
        }
        None => (argv, env),
    }
}

/// (warmup, timed) rounds of each process of the run.
fn processes(shape: Shape, warmup: u32, timed: u32) -> Vec<(u32, u32)> {
    match shape {
        Shape::Campaign => vec![(warmup, timed)],
        Shape::Subprocess => (0..warmup)
            .map(|_| (1, 0))
            .chain((0..timed).map(|_| (0, 1)))
            .collect(),
    }
}

/// How the `run.log` markers name each process: `round 3/7 (timed-1)` (none for one process).
fn labels(processes: &[(u32, u32)], subprocess: bool) -> Vec<String> {
    let n = processes.len();
    let (mut n_warm, mut n_timed) = (0u32, 0u32);
    (processes.iter().enumerate())
        .map(|(index, &(w, _))| {
            if !subprocess {
                return String::new();
            }
            let label = if w > 0 {
                n_warm += 1;
                format!("warmup-{n_warm}")
            } else {
                n_timed += 1;
                format!("timed-{n_timed}")
            };
            format!("round {}/{n} ({label})", index + 1)
        })
        .collect()
}

fn render_context(
    job: &RunJob,
    case: &Case,
    case_file: &Path,
    bundle: &Path,
    warmup: u32,
    timed: u32,
) -> RenderContext {
    RenderContext {
        case: case.clone(),
        devices: visible_ids(job, case),
        warmup,
        timed,
        case_file: case_file.to_path_buf(),
        bundle_dir: bundle.to_path_buf(),
        run_dir: job.run_dir.path.clone(),
        root: job.stack.root.clone().ok().flatten(),
        campaign_exe: crate::stack::render::campaign_exe(),
    }
}

/// The marker after a process: how it ended and after how long.
fn end_marker(what: &str, outcome: &ProcessOutcome) -> String {
    let how = match (outcome.killed, outcome.exit_code, outcome.signal) {
        (Some(k), _, _) => format!("killed ({k:?})"),
        (None, Some(c), _) => format!("exit code {c}"),
        (None, None, Some(sig)) => format!("signal {sig}"),
        _ => "ended".to_string(),
    };
    let secs = outcome.elapsed.as_secs_f64();
    format!("<== campaign: {what} end: {how} after {secs:.3} s")
}

/// What the backend recorded of a process's end, into the run's facts and tally.
fn take_backend_end(
    end: crate::executor::backend::BackendEnd,
    cpu_run: bool,
    facts: &mut ProcessFacts,
    tally: &mut Tally,
) {
    if let Some(ids) = end.devices {
        facts.devices = ids;
    }
    facts.backend = Some(end.manifest);
    facts.rank_nodes = end.rank_nodes;
    facts.node_hardware = end.node_hardware;
    // The CPUs the backend's job was allowed (its cpuset): a CPU run is judged against them.
    if cpu_run {
        tally.cpus = end.cpus.or(tally.cpus.take());
    }
    // The backend stopped the job (time limit, node failure, …): its verdict is the run's
    // status, whatever the partial output says.
    if end.verdict.is_some() {
        tally.backend_verdict = end.verdict;
    }
}

/// What the run's processes add up to so far.
struct Tally {
    samples: Vec<Sample>,
    /// The engine timed a round itself (the stack did not say).
    engine_timed: bool,
    /// The last process's end (it is the run's).
    last: Option<ProcessOutcome>,
    /// The backend's own verdict (it stopped the process itself), which beats the output's.
    backend_verdict: Option<(RunStatus, String)>,
    merged: Parsed,
    /// (time the run was stalled for a CPU, wall time) over its processes; None once a process
    /// was not measured.
    waited: Option<(Duration, Duration)>,
    /// The CPUs a backend's job was allowed (its cpuset), for a CPU run.
    cpus: Option<Vec<u32>>,
}

impl Default for Tally {
    fn default() -> Tally {
        Tally {
            samples: Vec::new(),
            engine_timed: false,
            last: None,
            backend_verdict: None,
            merged: Parsed::default(),
            waited: Some((Duration::ZERO, Duration::ZERO)),
            cpus: None,
        }
    }
}

impl Tally {
    /// Add one process's end and parse; `true` when the run ends here.
    fn add(
        &mut self,
        outcome: ProcessOutcome,
        parsed: Parsed,
        subprocess: bool,
        limits: &ProcessSpec,
        case: &Case,
    ) -> bool {
        self.waited = (self.waited.zip(outcome.cpu_wait))
            .map(|((wait, wall), w)| (wait + w, wall + outcome.elapsed));
        let failed = run_status::process_problem(&outcome, limits).is_some()
            || parsed.correctness == Some(false);
        let mut got = parsed.samples.clone();
        if subprocess {
            // One process = one round: its first sample is the round (labelled by the engine).
            got.truncate(1);
            for s in &mut got {
                s.round = 0;
                s.phase.clear();
            }
            // A round whose process failed observed no timed window: no time, no bandwidth.
            if failed {
                got.iter_mut().for_each(|s| s.ok = false);
            }
            let elapsed = Some(outcome.elapsed);
            self.engine_timed |= run_status::complete(&mut got, elapsed, case.n_bytes());
        }
        self.samples.extend(got);
        self.merged.correctness = match (self.merged.correctness, parsed.correctness) {
            (Some(false), _) | (_, Some(false)) => Some(false),
            (a, b) => b.or(a),
        };
        self.merged.error = self.merged.error.take().or(parsed.error.clone());
        self.merged.warnings.extend(parsed.warnings.clone());
        self.last = Some(outcome);
        failed || self.backend_verdict.is_some()
    }

    /// The run's result: samples labelled and rounded, status and reason judged.
    fn judge(
        mut self,
        job: &RunJob,
        case: &Case,
        limits: &ProcessSpec,
        subprocess: bool,
        cause: &Cause,
        ran: Option<crate::model::results::Ran>,
    ) -> Result<RunResult, Stop> {
        let (warmup, timed) = (case.warmup_rounds, case.timed_rounds);
        run_status::label(&mut self.samples, warmup);
        if !subprocess {
            self.engine_timed = run_status::complete(&mut self.samples, None, case.n_bytes());
        }
        self.samples.iter_mut().for_each(round_sample);
        // The result is held until the campaign ends: without the growth slack of the rounds'
        // vector (a one-round run's held room for four samples).
        self.samples.shrink_to_fit();
        let outcome = self.last.ok_or("no process was run")?;
        let (mut status, mut reason) = match self.backend_verdict {
            Some((status, reason)) => (status, Some(reason)),
            None => {
                let cause = cause.text();
                let (merged, samples) = (&self.merged, &self.samples);
                run_status::judge(
                    &outcome,
                    merged,
                    samples,
                    warmup,
                    timed,
                    limits,
                    cause.as_deref(),
                    job.stack.def.metric.unwrap_or_default(),
                )
            }
        };
        // A run that measured another algorithm than it was pinned to measured the wrong thing:
        // failed, with what ran, so no comparison of variants includes it.
        if let Some(why) = ran.as_ref().and_then(|r| r.not_honoured()) {
            if status == RunStatus::Pass {
                (status, reason) = (RunStatus::Fail, Some(why));
            }
        }
        let stack = &job.stack;
        Ok(RunResult {
            case: case.clone(),
            case_id: job.case_id.clone(),
            stack: stack.name.clone(),
            status,
            error: reason,
            samples: self.samples,
            bundle: RunDir::bundle_rel(&job.case_id, &stack.name),
            attempt: job.attempt,
            exit_code: outcome.exit_code,
            started: None,
            ended: None,
            timing_source: Some(if self.engine_timed { "engine" } else { "stack" }.into()),
            // What the machine gave a CPU run (oversubscription is judged against it).
            cpus: (!job.lease.cpus.is_empty())
                .then(|| job.lease.cpus.clone())
                .or(self.cpus),
            cpu_contention: contention(self.waited),
            rank_nodes: None,
            node_hardware: Vec::new(),
            ran,
        })
    }
}

/// The share of its wall time a run was stalled for a CPU, to 4 decimals (the stall clock runs
/// until the output is drained, a little past the exit, hence the cap at 1).
fn contention(waited: Option<(Duration, Duration)>) -> Option<f64> {
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
