//! The scheduler's vocabulary with the rest of the engine: what it knows about each planned run
//! ([`RunPlan`]), what executors report ([`Outcome`], [`Report`], [`ProbeReport`]), what it asks
//! of the engine ([`Dispatch`]) and what it returns ([`Summary`]). Types only: the logic is in
//! `scheduler.rs`.

use std::collections::BTreeMap;

use petgraph::graph::NodeIndex;
use tokio::sync::mpsc;

use crate::engine::schedule::dag::Step;
use crate::engine::schedule::faults::Policy;
use crate::engine::schedule::pool::{Lease, Need};
use crate::model::results::{RunResult, RunStatus};

/// What the scheduler knows about one planned run before it starts.
#[derive(Debug, Clone)]
pub(crate) struct RunPlan {
    pub(crate) need: Need,
    /// Expected duration in seconds (only the order matters).
    pub(crate) estimate_s: f64,
    /// Decided without executing (a `skipped` run, or a run a resume keeps) and its reason.
    pub(crate) preset: Option<(RunStatus, String)>,
    /// Which health probe checks this run's devices (`None` = no probe). Devices that passed a
    /// probe with the same key are not probed again before a first attempt.
    pub(crate) health_probe: Option<String>,
    /// Attempt number of the run's first attempt in this session (attempts count across
    /// resumes, so each keeps its own log).
    pub(crate) first_attempt: u32,
    /// An optional repeat (sequential repeats): when it is ready, [`Dispatch::decide`] says
    /// whether it runs; it is placed after every required run that is ready with it, so a
    /// budget is spent on every point's first repeats before any point's extra ones.
    pub(crate) optional: bool,
    /// A run of a `[census]`: once every census run ended, [`Dispatch::census`] judges them
    /// before any other run is placed.
    pub(crate) census: bool,
}

impl RunPlan {
    pub(crate) fn new(need: Need, estimate_s: f64, preset: Option<(RunStatus, String)>) -> RunPlan {
        RunPlan {
            need,
            estimate_s,
            preset,
            health_probe: None,
            first_attempt: 1,
            optional: false,
            census: false,
        }
    }
}

/// What a health probe found on the devices it checked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProbeReport {
    pub(crate) passed: Vec<u32>,
    /// Devices whose probe failed, with the detail (exit code, timeout, …).
    pub(crate) failed: Vec<(u32, String)>,
    /// The campaign was interrupted while probing: says nothing about the devices.
    pub(crate) cancelled: bool,
}

/// How a step ended, as its executor reports it.
#[derive(Debug)]
pub enum Outcome {
    /// A non-run step did its job.
    Done,
    /// A build or probe failed: the stack's runs become `unavailable` with this reason.
    StackUnavailable(String),
    /// A step failed in a way that does not touch other runs (a report step), or a run could
    /// not be recorded (its bundle could not be written: the dispatcher stops the campaign).
    Failed(String),
    /// A run finished (any status).
    Run(Box<RunResult>),
    /// The health probe before a run ended.
    Probed(ProbeReport),
    /// A running run handed its work to a batch system (a batch job): journal the id. The run
    /// goes on and reports its end later; this is not its end.
    Submitted { job_id: u64, reattached: bool },
    /// A run left running outside the engine (its batch job on an interrupt the user chose not
    /// to cancel): no result this session; the journal keeps it open so resume re-attaches.
    Detached(String),
}

/// A message from an executor task.
#[derive(Debug)]
pub(crate) struct Report {
    pub(crate) node: NodeIndex,
    pub(crate) outcome: Outcome,
}

/// What the scheduler asks of the engine.
pub(crate) trait Dispatch: Send {
    /// Start `step` (with `lease` for runs; `attempt` counts from the run's first attempt) and
    /// send exactly one [`Report`] for `node` on `tx` when it ends. Must not block.
    fn start(
        &mut self,
        node: NodeIndex,
        step: &Step,
        lease: &Lease,
        attempt: u32,
        tx: mpsc::UnboundedSender<Report>,
    );
    /// Health-probe `devices` (part of `lease`) before run `run` starts on the lease; send one
    /// [`Outcome::Probed`] report for `node`. Must not block.
    fn probe(
        &mut self,
        node: NodeIndex,
        run: usize,
        lease: &Lease,
        devices: &[u32],
        tx: mpsc::UnboundedSender<Report>,
    );
    /// Whether optional run `run` is needed, asked once when it is ready (its point's earlier
    /// repeats have ended): `None` runs it, `Some(reason)` spares it.
    fn decide(&mut self, _run: usize) -> Option<String> {
        None
    }
    /// Every census run ended: judge the census, once, and name the devices to quarantine
    /// before any other run is placed (with why). Asked once a session, after the census's last
    /// run ended (at once on a resume that kept them all).
    fn census(&mut self) -> Vec<(u32, String)> {
        Vec::new()
    }
    /// Why no run may start any more (the device-time budget is spent), if so: every run not
    /// started is then spared with this reason.
    fn exhausted(&self) -> Option<String> {
        None
    }
    /// Record run `run` that ends without executing; returns its result (bundle written).
    fn settle(&mut self, run: usize, status: RunStatus, reason: &str) -> RunResult;
    /// A step ended (for a run's final attempt, [`Dispatch::ended`] follows with its result).
    fn finished(&mut self, step: &Step, outcome: &Outcome);
    /// Run `run` ended for good with `result`: the dispatcher keeps it from here. The scheduler
    /// holds no results (one copy of each, the dispatcher's, however large the campaign).
    fn ended(&mut self, run: usize, result: RunResult);
    /// `device` left the pool for the rest of the campaign.
    fn quarantined(&mut self, device: u32, reason: &str);
    /// The running `step` submitted (or re-attached to) batch job `job_id`
    /// ([`Outcome::Submitted`]); the step has not ended.
    fn submitted(&mut self, _step: &Step, _job_id: u64, _reattached: bool) {}
    /// The engine can record nothing more (a write failed, e.g. the disk is full): start no
    /// other step, not even one already picked in this round of dispatching.
    fn stopped(&self) -> bool {
        false
    }
}

/// Limits from the command line and `[run]`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Limits {
    /// Max runs at once (None = as many as leases allow).
    pub(crate) jobs: Option<usize>,
    /// Retries, cooldown and quarantine rules.
    pub(crate) faults: Policy,
}

/// The end of a campaign as the scheduler saw it (the runs' results went to
/// [`Dispatch::ended`]).
#[derive(Debug, Default)]
pub(crate) struct Summary {
    pub(crate) interrupted: bool,
    /// Devices taken out of service, with the reason.
    pub(crate) quarantined: BTreeMap<u32, String>,
}
