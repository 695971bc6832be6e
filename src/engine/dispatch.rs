//! The engine's [`Dispatch`]: starts each step the scheduler hands over (generate, build, probe,
//! run, collect), records runs that do not execute, hands every ended run's result to the
//! results files and tells progress; once the scheduler returns, [`Dispatcher::conclude`] ends
//! the session and runs the steps after `collect` (the report).
//!
//! The results files are rewritten off the dispatch path by `engine::results_files`, whose
//! thread holds the one copy of every result: a finished run's result moves there and the
//! scheduler goes on at once. The report renders from that set after the scheduler, its graph
//! and the session's per-run records are freed, so its memory is not added to theirs.
//!
//! It is the journal's writer: `started` when a build, probe or run step starts, `finished`
//! (fsynced) when it ends — step keys are `Step::key()`, runs carry their fingerprint — and
//! `quarantined` when the scheduler takes a device out. Runs a resume keeps (`kept`) come back
//! from their bundles untouched: no bundle write, no journal line. It must not decide statuses
//! (verdict) or order (scheduler).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use petgraph::graph::NodeIndex;
use tokio::sync::{mpsc, watch};

use crate::engine::case_files::CaseFiles;
use crate::engine::finished::Finished;
use crate::engine::health::{self, ProbeJob};
use crate::engine::progress::Progress;
use crate::engine::results_files::ResultsFiles;
use crate::engine::schedule::dag::Step;
use crate::engine::schedule::pool::Lease;
use crate::engine::schedule::scheduler::{Dispatch, Outcome, Report, Summary};
use crate::engine::session;
use crate::engine::work::{self, RunJob};
use crate::error::Result;
use crate::executor::{Backend, JobRef};
use crate::model::case::Case;
use crate::model::results::{RunResult, RunStatus};
use crate::stack::resolve::EngineStack;
use crate::store::atomic::write_atomic;
use crate::store::journal::Journal;
use crate::store::layout::{write_bundle, write_json, ProcessFacts, RunDir};

/// A step after `collect` (summarize, plot, report): a pure function of the run dir's files,
/// which hold every result by then (the engine's own copy is freed before it runs).
pub(crate) type AfterStep = Box<dyn FnMut(&RunDir) -> Result<()> + Send>;

/// What a run's bundle holds, as its `finished` line records it.
struct Held {
    /// Samples in its `timing.json`.
    samples: usize,
    /// `store::set_digest::bundle_digest` of it.
    content: String,
}

/// One planned run.
#[derive(Debug, Clone)]
pub(crate) struct PlannedRun {
    pub(crate) case_index: usize,
    pub(crate) case_id: String,
    pub(crate) stack: usize,
}

/// The engine's side of the scheduler's [`Dispatch`]: what the campaign runs, what the session
/// knows and journals of each run, what it writes besides the journal, where runs execute, and
/// how it stops.
pub(crate) struct Dispatcher {
    pub(crate) plan: CampaignPlan,
    pub(crate) state: RunState,
    pub(crate) out: Outputs,
    /// Where runs execute (decided once, in prepare).
    pub(crate) backend: Arc<dyn Backend>,
    pub(crate) stop: Stopping,
    /// Sequential repeats and the budget: whether an optional run is needed, whether runs may
    /// still start.
    pub(crate) decider: crate::engine::decide::Decider,
    /// The profiled runs made after the timed ones (`engine::profiled`).
    pub(crate) profiling: crate::engine::profiled::Profiling,
    /// A `[census]`'s runs, judged once they all ended (`engine::census_step`).
    pub(crate) census: Option<crate::engine::census_step::Gate>,
}

/// What the campaign runs, fixed for the session.
pub(crate) struct CampaignPlan {
    pub(crate) run_dir: Arc<RunDir>,
    pub(crate) plan_text: String,
    pub(crate) cases: Arc<Vec<Case>>,
    pub(crate) stacks: Vec<Arc<EngineStack>>,
    pub(crate) runs: Vec<PlannedRun>,
    /// Write leased devices into the case (`placement = "auto"`).
    pub(crate) place: bool,
    /// `[devices] probe`, the health probe of stacks without their own.
    pub(crate) pool_probe: Option<Vec<String>>,
}

/// What the session knows of each run, and the journal it writes that into.
pub(crate) struct RunState {
    pub(crate) journal: Journal,
    /// Fingerprint of each run (from the planned case), computed when it first starts.
    pub(crate) fingerprints: BTreeMap<usize, String>,
    /// Results of runs a resume keeps, read from their bundles (handed out by `settle`).
    pub(crate) kept: BTreeMap<usize, RunResult>,
    /// Runs whose result was kept (their `finished` writes nothing).
    pub(crate) kept_runs: BTreeSet<usize>,
    /// Attempt of each running run (the journal's `submitted` line carries it).
    pub(crate) attempts: BTreeMap<usize, u32>,
    /// Unit id of each running run that claimed a kept cgroup (`executor::unit::slots`).
    pub(crate) claims: BTreeMap<usize, String>,
    /// What the dispatcher keeps about jobs left outside campaign; empty for local runs.
    pub(crate) jobs: Jobs,
    /// Quarantines recorded by earlier sessions of this run dir (the results files name them).
    pub(crate) earlier_quarantine: BTreeMap<u32, String>,
    /// Decisions of sequential repeats earlier sessions journaled (handed to the decider).
    pub(crate) decisions: Vec<(String, u32, Option<String>)>,
    /// The `census` line an earlier session journaled (handed to the census's gate).
    pub(crate) census_line: Option<serde_json::Map<String, serde_json::Value>>,
}

impl RunState {
    /// A session's run state: the claimed journal, the fingerprints and kept results a resume
    /// decided with, and the earlier session's jobs to re-attach to.
    pub(crate) fn new(
        journal: Journal,
        fingerprints: BTreeMap<usize, String>,
        kept: BTreeMap<usize, RunResult>,
        reattach: BTreeMap<usize, JobRef>,
    ) -> RunState {
        RunState {
            journal,
            fingerprints,
            kept,
            kept_runs: BTreeSet::new(),
            attempts: BTreeMap::new(),
            claims: BTreeMap::new(),
            jobs: Jobs {
                reattach,
                ..Jobs::default()
            },
            earlier_quarantine: BTreeMap::new(),
            decisions: Vec::new(),
            census_line: None,
        }
    }
}

/// What the session writes besides the journal, off the dispatch path where it can.
pub(crate) struct Outputs {
    /// The results files' writer thread: it holds every run's result (the one copy) until the
    /// campaign ends and [`Dispatcher::conclude`] takes them back as the result set.
    pub(crate) results_files: ResultsFiles,
    /// The case files and bundle folders, written ahead of the runs.
    pub(crate) case_files: Arc<CaseFiles>,
    pub(crate) case_thread: Option<std::thread::JoinHandle<()>>,
    pub(crate) progress: Progress,
    /// Steps after `collect` (the report), in order: they run once the scheduler is done and
    /// its state freed ([`Dispatcher::conclude`]).
    pub(crate) after: Vec<(String, AfterStep)>,
    /// Steps after `collect` that failed, with why (the campaign's exit code says so).
    pub(crate) after_failed: Vec<(String, String)>,
    /// How the session ended, once [`Dispatcher::conclude`] ran: the tally, and whether the
    /// results files and the journal were made durable.
    pub(crate) concluded: Option<(Finished, Result<()>)>,
}

/// How the campaign stops: the cancel flag every run watches, and the failure that ended it.
pub(crate) struct Stopping {
    pub(crate) cancel: watch::Receiver<bool>,
    pub(crate) cancel_tx: Arc<watch::Sender<bool>>,
    /// A failure that must end the campaign (the run dir cannot be written).
    pub(crate) fatal: Option<crate::error::Error>,
}

/// Jobs of the campaign's runs that their backend runs outside campaign (batch jobs), as the
/// dispatcher journals them.
#[derive(Default)]
pub(crate) struct Jobs {
    /// The jobs of runs an earlier session left running, by run (resume re-attaches).
    pub(crate) reattach: BTreeMap<usize, JobRef>,
    /// The job of each run's running attempt, by run, with the attempt.
    pub(crate) running: BTreeMap<usize, (u32, u64)>,
    /// Jobs left running on an interrupt (their runs stay open in the journal).
    pub(crate) detached: Vec<JobRef>,
}

impl Dispatcher {
    fn stack_by_name(&self, name: &str) -> Option<Arc<EngineStack>> {
        self.plan.stacks.iter().find(|s| s.name == name).cloned()
    }

    /// The platforms this campaign runs `stack` on (whose `ready_on` probes its pre-flight runs).
    fn platforms_of(&self, stack: &str) -> Vec<crate::model::case::Platform> {
        let set: std::collections::BTreeSet<_> = self
            .plan
            .runs
            .iter()
            .filter(|r| self.plan.stacks[r.stack].name == stack)
            .map(|r| self.plan.cases[r.case_index].platform)
            .collect();
        set.into_iter().collect()
    }

    /// The end of the session once the scheduler returned (its graph and run states freed):
    /// progress and case writer stopped, the interrupt journaled, the results files written
    /// with every result and quarantine, every `finished` line durable; then — unless the
    /// campaign was interrupted or cannot record — the engine's per-run state is freed and the
    /// steps after `collect` (the report) run on the run dir's files, the engine's copy of the
    /// results freed. The outcome is left in
    /// `out.concluded` for `drive::finish`.
    pub(crate) fn conclude(&mut self, summary: &mut Summary) {
        self.out.progress.finish();
        self.stop_case_files();
        self.record_interrupt();
        let quarantined = (self.state.earlier_quarantine.iter())
            .chain(&summary.quarantined)
            .map(|(d, why)| (d.to_string(), why.clone()))
            .collect();
        let (set, written) = self.out.results_files.finish(quarantined);
        let recorded = written.and_then(|()| self.state.journal.durable());
        let proceed = recorded.is_ok() && !summary.interrupted && self.stop.fatal.is_none();
        let mut finished = Finished::of(self.plan.run_dir.path.clone(), &set, summary.interrupted);
        if proceed {
            // The results are in their files now and the steps after `collect` read them from
            // there: this copy and the engine's per-run state are freed first, and the freed
            // pages given back, so the report's own copy does not come on top of them.
            drop(set);
            self.free_run_state();
            crate::engine::results_files::release_memory();
            // Every run is recorded: a Ctrl-C from here on ends campaign at once (exit 3)
            // instead of waiting for a long render to finish (`engine::derived_stop`).
            let _at_once = crate::engine::derived_stop::enter(&format!(
                "every run is recorded; the report was not finished: campaign report {} renders it",
                self.plan.run_dir.path.display()
            ));
            for (name, f) in &mut self.out.after {
                // A signal heard just before the guard was in place: nothing more to do.
                if *self.stop.cancel.borrow() {
                    break;
                }
                // Said before it starts: a report of many runs or phases takes a while.
                crate::say!("{name}: every run is recorded; rendering (Ctrl-C stops it at once)");
                // Never at the cost of what is recorded: the results files are written before;
                // the failure is said on stderr, whatever `-q` says, and ends in the exit code.
                if let Err(e) = f(&self.plan.run_dir) {
                    crate::tell!("error: the {name} step failed: {e}");
                    self.out.after_failed.push((name.clone(), e.to_string()));
                }
            }
            // A Ctrl-C while the report rendered still counts (the campaign says so).
            summary.interrupted |= *self.stop.cancel.borrow();
            finished.interrupted = summary.interrupted;
        } else {
            session::drop_aside(set);
        }
        self.out.concluded = Some((finished, recorded));
    }

    /// The profiled runs, once every timed run ended (`engine::profiled`); a run dir that
    /// cannot be written stops the campaign as it would for a timed run.
    pub(crate) async fn profile(&mut self) {
        let shared = crate::engine::profiled::Shared {
            run_dir: self.plan.run_dir.clone(),
            cases: self.plan.cases.clone(),
            cancel: self.stop.cancel.clone(),
            backend: self.backend.clone(),
            case_files: self.out.case_files.clone(),
        };
        let stacks = &self.plan.stacks;
        let progress = &mut self.out.progress;
        let made = crate::engine::profiled::run(&mut self.profiling, shared, stacks, progress);
        if let Err(e) = made.await {
            self.fail(e);
        }
    }

    /// Free what the session kept per run once every run ended: fingerprints, the planned runs
    /// and cases, the case-file index. Only the result set is left for the report.
    fn free_run_state(&mut self) {
        let state = &mut self.state;
        let freed = (
            std::mem::take(&mut state.fingerprints),
            std::mem::take(&mut state.kept),
            std::mem::take(&mut state.kept_runs),
            std::mem::take(&mut self.plan.runs),
            std::mem::take(&mut self.plan.cases),
        );
        drop(freed);
        self.out.case_files = Arc::new(CaseFiles::none(self.plan.run_dir.clone()));
    }

    /// Journal what an interrupt did to work the backend runs outside campaign, and say how to
    /// go on (the backend's words).
    fn record_interrupt(&mut self) {
        let (detached, run_dir) = (&self.state.jobs.detached, &self.plan.run_dir.path);
        let Some(note) = self.backend.interrupt_note(detached, run_dir) else {
            return;
        };
        if let Err(e) = self.state.journal.event(note.event, note.fields) {
            crate::tell!("warning: cannot journal the interrupt: {e}");
        }
        if let Some(message) = note.message {
            crate::tell!("{message}");
        }
    }

    /// Stop the campaign if a background rewrite of the results files failed.
    fn check_results_files(&mut self) {
        if let Some(e) = self.out.results_files.take_failure() {
            self.fail(e);
        }
    }

    fn generate(&mut self) -> Result<()> {
        write_atomic(
            &self.plan.run_dir.file("plan.toml"),
            self.plan.plan_text.as_bytes(),
        )?;
        let defs: serde_json::Map<String, serde_json::Value> = self
            .plan
            .stacks
            .iter()
            .map(|s| {
                (
                    s.name.clone(),
                    serde_json::to_value(&s.def).unwrap_or_default(),
                )
            })
            .collect();
        write_json(
            &self.plan.run_dir.file("stacks.json"),
            &serde_json::Value::Object(defs),
        )?;
        // Case files and bundle folders are written ahead of the runs (engine::case_files).
        self.out.case_thread = Some(self.out.case_files.start()?);
        Ok(())
    }

    /// Stop writing case files ahead (the end of the campaign, or an interrupt).
    pub(crate) fn stop_case_files(&mut self) {
        if let Some(thread) = self.out.case_thread.take() {
            self.out.case_files.finish(thread);
        }
    }

    /// The fingerprint journal lines of a step carry.
    fn fingerprint(&mut self, step: &Step) -> String {
        match step {
            Step::Run { run, .. } => {
                let planned = &self.plan.runs[*run];
                let (stack, case) = (
                    &self.plan.stacks[planned.stack],
                    &self.plan.cases[planned.case_index],
                );
                self.state
                    .fingerprints
                    .entry(*run)
                    .or_insert_with(|| {
                        work::fingerprint(&self.plan.run_dir, &planned.case_id, stack, case)
                    })
                    .clone()
            }
            other => match other.stack().and_then(|n| self.stack_by_name(n)) {
                Some(s) => work::stack_fingerprint(&s),
                None => String::new(),
            },
        }
    }

    fn journal_started(&mut self, step: &Step, attempt: u32) {
        let fp = self.fingerprint(step);
        let mut extra = serde_json::Map::new();
        if let Step::Run { run, case_id, .. } = step {
            // The run's containment unit, recorded before its process starts: a resume after a
            // SIGKILL reaps what it left (`executor::unit::reap`).
            if let Some(stack) = step.stack() {
                let id = work::run_unit(&self.plan.run_dir, case_id, stack, attempt);
                if let Some(cg) =
                    crate::executor::unit::claim_run_cgroup(&self.plan.run_dir.path, &id)
                {
                    extra.insert("cgroup".into(), cg.display().to_string().into());
                    self.state.claims.insert(*run, id.clone());
                }
                extra.insert("unit".into(), id.into());
            }
        }
        if let Err(e) = self.state.journal.started(&step.key(), attempt, &fp, extra) {
            self.fail(e);
        }
    }

    /// `held`: for a run, what its bundle holds — resume reads the bundle back only when it
    /// has that many samples (the bundle is not synced on its own; this line is the run's
    /// durability point), and `resume --verify` only when its content digest is the same.
    fn journal_finished(
        &mut self,
        step: &Step,
        attempt: u32,
        status: RunStatus,
        reason: Option<&str>,
        held: Option<Held>,
    ) {
        let fp = self.fingerprint(step);
        let key = step.key();
        let mut extra = serde_json::Map::new();
        if let Some(held) = held {
            extra.insert("samples".into(), held.samples.into());
            extra.insert("content".into(), held.content.into());
        }
        if let Step::Run { run, .. } = step {
            // The job that produced this attempt's result, to find it in its backend's records.
            if let Some((a, id)) = self.state.jobs.running.remove(run) {
                if a == attempt {
                    extra.insert(crate::store::journal::JOB_ID_FIELD.into(), id.into());
                }
            }
        }
        if let Err(e) = self
            .state
            .journal
            .finished(&key, attempt, &fp, status, reason, extra)
        {
            self.fail(e);
        }
    }

    fn fail(&mut self, e: crate::error::Error) {
        self.out.progress.println(&format!("error: {e}"));
        self.stop.fatal.get_or_insert(e);
        // Jobs outside campaign are left running: resume collects them once this is fixed.
        self.backend.failed();
        let _ = self.stop.cancel_tx.send(true);
    }
}

impl Dispatch for Dispatcher {
    /// After the first failed write (ENOSPC, a read-only dir) no other run is launched.
    fn stopped(&self) -> bool {
        self.stop.fatal.is_some()
    }

    fn start(
        &mut self,
        node: NodeIndex,
        step: &Step,
        lease: &Lease,
        attempt: u32,
        tx: mpsc::UnboundedSender<Report>,
    ) {
        let key = step.key();
        let send = |outcome| {
            let _ = tx.send(Report { node, outcome });
        };
        match step {
            Step::Generate => {
                if let Err(e) = self.generate() {
                    self.fail(e);
                }
                send(Outcome::Done);
            }
            Step::Build { stack } => {
                self.journal_started(step, attempt);
                self.out.progress.started(&key, &[]);
                let Some(s) = self.stack_by_name(stack) else {
                    return send(Outcome::StackUnavailable(format!("unknown stack {stack}")));
                };
                let (rd, cancel) = (self.plan.run_dir.clone(), self.stop.cancel.clone());
                tokio::spawn(async move {
                    let outcome = match work::build(rd, s, cancel).await {
                        Ok(()) => Outcome::Done,
                        Err(why) => Outcome::StackUnavailable(why),
                    };
                    let _ = tx.send(Report { node, outcome });
                });
            }
            Step::Probe { stack } => {
                self.journal_started(step, attempt);
                let Some(s) = self.stack_by_name(stack) else {
                    return send(Outcome::StackUnavailable(format!("unknown stack {stack}")));
                };
                let platforms = self.platforms_of(stack);
                let probes_on = platforms.iter().any(|p| s.def.ready_on.contains_key(p));
                if s.def.ready.is_none() && !probes_on {
                    // Nothing to run: answer at once, as before readiness probes existed.
                    return send(match work::probe(&s) {
                        Ok(()) => Outcome::Done,
                        Err(why) => Outcome::StackUnavailable(why),
                    });
                }
                let (rd, cancel) = (self.plan.run_dir.clone(), self.stop.cancel.clone());
                tokio::spawn(async move {
                    let outcome = match work::preflight(rd, s, platforms, cancel).await {
                        Ok(()) => Outcome::Done,
                        Err(why) => Outcome::StackUnavailable(why),
                    };
                    let _ = tx.send(Report { node, outcome });
                });
            }
            Step::Run { run, case_id, .. } => {
                self.journal_started(step, attempt);
                self.state.attempts.insert(*run, attempt);
                self.out.progress.started(&key, lease.visible_ids());
                let planned = &self.plan.runs[*run];
                let stack = self.plan.stacks[planned.stack].clone();
                let place = self.plan.place && !lease.devices.is_empty();
                let job = RunJob {
                    run_dir: self.plan.run_dir.clone(),
                    case_id: case_id.clone(),
                    stack,
                    case: self.plan.cases[planned.case_index].clone(),
                    lease: lease.clone(),
                    place,
                    attempt,
                    cancel: self.stop.cancel.clone(),
                    backend: self.backend.clone(),
                    case_files: self.out.case_files.clone(),
                    reattach: self.state.jobs.reattach.remove(run),
                    profile: None,
                    on_submit: {
                        let tx = tx.clone();
                        Arc::new(move |id: JobRef, reattached| {
                            let outcome = Outcome::Submitted {
                                job_id: id.0,
                                reattached,
                            };
                            let _ = tx.send(Report { node, outcome });
                        })
                    },
                };
                tokio::spawn(async move {
                    let outcome = match work::execute(job).await {
                        Ok(work::Executed::Run(result)) => Outcome::Run(result),
                        Ok(work::Executed::Detached(note)) => Outcome::Detached(note),
                        Err(e) => Outcome::Failed(e.to_string()),
                    };
                    let _ = tx.send(Report { node, outcome });
                });
            }
            // Collect and later steps act on the finished results in `finished`.
            Step::Collect => send(Outcome::Done),
        }
    }

    fn probe(
        &mut self,
        node: NodeIndex,
        run: usize,
        _lease: &Lease,
        devices: &[u32],
        tx: mpsc::UnboundedSender<Report>,
    ) {
        let planned = &self.plan.runs[run];
        // The probe is rendered like the run, with its case file.
        if let Err(e) = self.out.case_files.ensure(&planned.case_id) {
            self.fail(e);
        }
        let planned = &self.plan.runs[run];
        let job = ProbeJob {
            run_dir: self.plan.run_dir.clone(),
            stack: self.plan.stacks[planned.stack].clone(),
            pool_probe: self.plan.pool_probe.clone(),
            case: self.plan.cases[planned.case_index].clone(),
            case_id: planned.case_id.clone(),
            devices: devices.to_vec(),
            cancel: self.stop.cancel.clone(),
        };
        tokio::spawn(async move {
            let found = health::run(job).await;
            let _ = tx.send(Report {
                node,
                outcome: Outcome::Probed(found),
            });
        });
    }

    fn quarantined(&mut self, device: u32, reason: &str) {
        // A decision replayed on resume (a census's) quarantines again what an earlier session
        // journaled: its line is there already.
        if self
            .state
            .earlier_quarantine
            .get(&device)
            .map(String::as_str)
            == Some(reason)
        {
            return;
        }
        self.out
            .progress
            .println(&format!("device {device} quarantined: {reason}"));
        if let Err(e) = self.state.journal.quarantined(device, reason) {
            self.fail(e);
        }
    }

    fn submitted(&mut self, step: &Step, job_id: u64, reattached: bool) {
        let Step::Run { run, .. } = step else {
            return;
        };
        let attempt = self.state.attempts.get(run).copied().unwrap_or(1);
        self.state.jobs.running.insert(*run, (attempt, job_id));
        if let Err(e) = self
            .state
            .journal
            .submitted(&step.key(), attempt, job_id, reattached)
        {
            self.fail(e);
        }
    }

    fn settle(&mut self, run: usize, status: RunStatus, reason: &str) -> RunResult {
        if let Some(result) = self.state.kept.remove(&run) {
            self.state.kept_runs.insert(run);
            // Kept runs count against the budget as they did when they ran.
            self.decider.spent(&result);
            return result;
        }
        let planned = &self.plan.runs[run];
        // A run settled without executing still gets its case file beside its bundle (and moves
        // the case writer's window along).
        if let Err(e) = self.out.case_files.ensure(&planned.case_id) {
            self.fail(e);
        }
        let planned = &self.plan.runs[run];
        let stack = &self.plan.stacks[planned.stack].name;
        let result = work::unrun(
            &self.plan.cases[planned.case_index],
            &planned.case_id,
            stack,
            status,
            reason,
            1,
        );
        if let Err(e) = write_bundle(&self.plan.run_dir, &result, &ProcessFacts::default()) {
            self.fail(e);
        }
        // Its `finished` line is the scheduler's `finished` call that follows, as for a run
        // that executed (one line per run: a second here wrote every settled run twice).
        result
    }

    fn decide(&mut self, run: usize) -> Option<String> {
        let (verdict, new) = self.decider.decide(run);
        if let Some(j) = new {
            let said = match &j.verdict {
                Some(why) => format!("decision: point {} stops: {why}", j.point),
                None => format!("decision: point {} goes on: {}", j.point, j.why_on),
            };
            self.out
                .progress
                .println(&crate::model::text::visible(&said));
            self.out.progress.set_note(self.decider.note());
            // Journaled (fsynced) before anything it lets run starts: a resume replays it.
            if let Err(e) =
                self.state
                    .journal
                    .decision(&j.point, j.look, j.verdict.as_deref(), &j.why_on)
            {
                self.fail(e);
            }
        }
        verdict
    }

    fn exhausted(&self) -> Option<String> {
        self.decider.exhausted()
    }

    fn census(&mut self) -> Vec<(u32, String)> {
        let Some(gate) = self.census.as_mut() else {
            return Vec::new();
        };
        let judged = gate.judge();
        if let Some(line) = &judged.line {
            let said = crate::engine::census_step::said(line);
            self.out
                .progress
                .println(&crate::model::text::visible(&said));
            // Journaled (fsynced) before the quarantines it makes and any run after it: a
            // resume replays it.
            if let Err(e) = crate::engine::census_step::record(&mut self.state.journal, line) {
                self.fail(e);
            }
        }
        judged.quarantine
    }

    fn ended(&mut self, run: usize, result: RunResult) {
        self.decider.ended(run, &result);
        let planned = &self.plan.runs[run];
        if let Some(gate) = self.census.as_mut() {
            gate.ended(planned.case_index, &result);
        }
        (self.profiling).ended(planned.case_index, planned.stack, &planned.case_id, &result);
        // Kept runs too: the results files show every planned run.
        self.out.results_files.add(run, result);
    }

    fn finished(&mut self, step: &Step, outcome: &Outcome) {
        let key = step.key();
        if let Step::Run { run, .. } = step {
            // The run's processes are over: its cgroup serves the next run.
            if let Some(id) = self.state.claims.remove(run) {
                crate::executor::unit::slots::release(&id);
            }
        }
        match (step, outcome) {
            (Step::Run { run, .. }, _) if self.state.kept_runs.contains(run) => {}
            (Step::Run { run, .. }, Outcome::Detached(why)) => {
                // No `finished` line: the run stays open with its job id for resume.
                if let Some((_, id)) = self.state.jobs.running.remove(run) {
                    self.state.jobs.detached.push(JobRef(id));
                }
                self.out.progress.finished(&key, None, why);
            }
            (Step::Run { .. }, Outcome::Failed(why)) => {
                // The attempt could not be recorded: leave it `started` in the journal (resume
                // runs it again) and stop the campaign.
                self.fail(crate::error::Error::Environment(why.clone()));
            }
            (Step::Run { .. }, Outcome::Run(r)) => {
                // Every attempt that ran counts against the budget, retried ones too.
                self.decider.spent(r);
                if self.decider.active() {
                    self.out.progress.set_note(self.decider.note());
                }
                let held = Held {
                    samples: r.samples.len(),
                    content: crate::store::set_digest::bundle_digest(r),
                };
                self.journal_finished(step, r.attempt, r.status, r.error.as_deref(), Some(held));
                self.out
                    .progress
                    .finished(&key, Some(r.status), r.error.as_deref().unwrap_or(""));
                self.check_results_files();
            }
            (Step::Collect, _) => {
                if let Err(e) = self.out.results_files.flush() {
                    self.fail(e);
                }
            }
            (Step::Build { .. } | Step::Probe { .. }, Outcome::StackUnavailable(why)) => {
                self.journal_finished(step, 1, RunStatus::Unavailable, Some(why), None);
                if matches!(step, Step::Build { .. }) {
                    self.out.progress.finished(&key, None, why);
                } else {
                    self.out
                        .progress
                        .println(&format!("{key}: unavailable: {why}"));
                }
            }
            (Step::Build { .. } | Step::Probe { .. }, _) => {
                self.journal_finished(step, 1, RunStatus::Pass, None, None);
                if matches!(step, Step::Build { .. }) {
                    self.out.progress.finished(&key, None, "");
                }
            }
            _ => {}
        }
    }
}
