//! The backend contract: where one campaign session's runs execute, as the engine sees it — one
//! trait, [`Backend`], that `Local` (`executor::local::backend`) and `Slurm`
//! (`executor::slurm::backend`) implement, chosen once per session by [`super::backend_for`].
//!
//! A backend owns everything about its place of execution for the whole session: its preflight
//! (before a run dir exists), its start (inside the session's runtime, before any run), running
//! one process of a run, re-attaching to work an earlier session left running, stopping the
//! stale work of runs that run again, and what the first Ctrl-C does to work outside campaign's
//! own process tree. The engine holds it as `Arc<dyn Backend>` and sees work left outside only
//! as an opaque [`JobRef`] that it journals and hands back on resume. It must not journal, judge
//! runs or parse output: it reports, the engine records.

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;

use tokio::sync::watch;

use crate::error::Error;
use crate::executor::ProcessOutcome;
use crate::executor::ProcessSpec;
use crate::model::output::OutputLine;
use crate::model::results::RunStatus;
use crate::model::stack::StackDef;

/// Work a backend started outside campaign's own process tree (a batch job), which may outlive
/// the session: the engine journals it and hands it back to the same backend on resume, never
/// looking inside.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct JobRef(pub(crate) u64);

impl std::fmt::Display for JobRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Called with each job as soon as the backend has one (`true`: re-attached, not started anew);
/// the engine journals it before the job can end.
pub(crate) type OnSubmit = Arc<dyn Fn(JobRef, bool) + Send + Sync>;

/// Asks the person at the terminal whether to stop N jobs left outside campaign on Ctrl-C
/// (`true`: stop them). The command line supplies it when stdin is a terminal.
pub(crate) type AskCancel = fn(usize) -> bool;

/// What the first Ctrl-C does to work a backend runs outside campaign (the command line's
/// `--cancel-on-interrupt` and its prompt).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct InterruptPolicy {
    /// Stop that work at once, without asking.
    pub(crate) cancel_at_once: bool,
    /// Ask first (None: never ask; the work is left for `campaign resume`).
    pub(crate) ask: Option<AskCancel>,
}

/// One process of a run, as handed to a backend.
pub(crate) struct ProcessRequest<'a> {
    pub(crate) spec: &'a ProcessSpec,
    pub(crate) case_id: &'a str,
    pub(crate) stack: &'a str,
    /// Devices the process needs (a backend that grants devices grants them; locally they are
    /// already leased).
    pub(crate) devices: u32,
    /// Nodes and ranks per node the run spans.
    pub(crate) layout: crate::executor::NodeLayout,
    /// The run's bundle folder (work outside campaign leaves its result files there).
    pub(crate) bundle: &'a Path,
    /// Work an earlier session started for this attempt: watch it instead of starting anew.
    pub(crate) reattach: Option<JobRef>,
    /// Told each job as soon as the backend has one.
    pub(crate) on_submit: &'a OnSubmit,
    pub(crate) cancel: watch::Receiver<bool>,
}

/// What a backend saw of a process's end beyond its exit (a batch system's account of it).
#[derive(Debug, Clone)]
pub(crate) struct BackendEnd {
    /// The devices the backend granted, as ids (the manifest's `devices`).
    pub(crate) devices: Option<Vec<u32>>,
    /// The backend's own record of the process for the run's manifest: key and value.
    pub(crate) manifest: (&'static str, serde_json::Value),
    /// The backend stopped the process itself (a time limit, a node failure): this status and
    /// reason are the run's, whatever its partial output says.
    pub(crate) verdict: Option<(RunStatus, String)>,
    /// Each rank's node, in rank order, when the backend knows it (a run over several nodes).
    pub(crate) rank_nodes: Option<Vec<String>>,
    /// The hardware of each node the process ran on, when the backend's job recorded it.
    pub(crate) node_hardware: Vec<crate::model::nodes::NodeHardware>,
    /// The CPUs the job's cpuset allowed where it ran, when its backend recorded them (Slurm):
    /// what a CPU run's oversubscription is judged against there.
    pub(crate) cpus: Option<Vec<u32>>,
}

/// How one process of a run ended.
#[derive(Debug)]
pub(crate) enum Ran {
    /// It ran to its end (or was killed): the outcome, and the backend's account, if it keeps one.
    Ended {
        outcome: ProcessOutcome,
        end: Option<Box<BackendEnd>>,
    },
    /// Interrupted before the process was started; the reason is the run's.
    NotStarted(String),
    /// Interrupted, with the process left running for `campaign resume` to re-attach (its job
    /// was reported through `on_submit`); the note says so in the progress output.
    Detached(String),
}

/// Why a backend could not run a process.
#[derive(Debug)]
pub(crate) enum ExecFailure {
    /// The run dir cannot be written (the raw log could not be opened): the campaign stops.
    RunDir(Error),
    /// The process could not be run; this is the run's reason.
    Run(String),
}

/// Every line of the process's output, as it arrives (locally) or replayed from its `run.log`
/// once its job ended (a batch job).
pub(crate) type OnLine<'a> = &'a mut (dyn FnMut(OutputLine) + Send);

/// A boxed future, so backends can be used as `dyn Backend`.
pub(crate) type Running<'a> = Pin<Box<dyn Future<Output = Result<Ran, ExecFailure>> + Send + 'a>>;

/// A boxed future of a backend's session step.
pub(crate) type Pending<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// What an interrupt did to work left outside campaign: a journal event, and what to tell the
/// person (how to go on), if anything.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct InterruptNote {
    pub(crate) event: &'static str,
    pub(crate) fields: serde_json::Map<String, serde_json::Value>,
    pub(crate) message: Option<String>,
}

/// What a resume's journal says about jobs of the earlier session.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Earlier {
    /// Jobs of runs that run again.
    pub(crate) stale: Vec<JobRef>,
    /// Jobs of runs that watch their job again instead of starting anew.
    pub(crate) reattach: Vec<JobRef>,
    /// The run dir the journal belongs to.
    pub(crate) run_dir: std::path::PathBuf,
}

/// Where one campaign session's runs execute. One value per session, shared by every run.
pub(crate) trait Backend: Send + Sync {
    /// The name the journal header (`executor`, so a resume picks the same backend) and the
    /// results files' provenance (`executor`) record.
    fn name(&self) -> &'static str;

    /// True when the backend places runs and grants devices itself: nothing is leased or probed
    /// on this machine, and a run larger than its pool is fine.
    fn grants_devices(&self) -> bool;

    /// How many nodes one run may span here: `None` on one machine (a multi-node run is a
    /// planned skip), else the cluster's node count (a run asking for more is refused before
    /// anything is submitted).
    fn nodes(&self) -> Option<u32> {
        None
    }

    /// Runs in flight at once when `--jobs` does not say (None: as many as the pool allows).
    fn max_in_flight(&self) -> Option<usize>;

    /// Whether an open run's job from an earlier session, of a run whose fingerprint did not
    /// change, may be watched again instead of the run starting anew.
    fn can_reattach(&self, stack: &StackDef) -> bool;

    /// Lines a resume prints about the earlier session's jobs: `reattached` are watched again,
    /// `stale` belong to runs that run again.
    fn resume_notes(&self, reattached: usize, stale: &[JobRef]) -> Vec<String>;

    /// Start the session (inside its runtime, before any run): the earlier session's `stale`
    /// jobs of runs that run again are stopped first, so two jobs never write one bundle. Only
    /// jobs the backend can prove this run dir submitted are ever stopped or watched again (a
    /// journal can come from someone else).
    fn start(&self, earlier: Earlier) -> Pending<'_>;

    /// Run one process of a run to its end.
    fn run<'a>(&'a self, req: ProcessRequest<'a>, on_line: OnLine<'a>) -> Running<'a>;

    /// The first Ctrl-C (launching has already stopped): decide what becomes of work running
    /// outside campaign, and carry the decision out. Runs waiting on that work see it.
    fn interrupted(&self) -> Pending<'_>;

    /// A failure stopped the campaign (the run dir cannot be written): work outside campaign is
    /// left running, so `campaign resume` collects it once the problem is fixed.
    fn failed(&self);

    /// After the last run: what the interrupt did to work outside campaign (`detached`: the
    /// jobs left running, as the runs reported them). None when there was nothing to decide.
    fn interrupt_note(&self, detached: &[JobRef], run_dir: &Path) -> Option<InterruptNote>;
}
