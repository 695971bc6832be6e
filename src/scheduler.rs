//! The scheduler: the single owner of run state. Walks the step graph, matches ready runs with
//! free devices, and hears back from executors by message.
//!
//! Owns: which steps wait, run or are done; leases (through the [`Pool`]); the dispatch order
//! (highest remaining expected time first — a run's own estimate plus the runs chained after it
//! in its case — with backfill: a run that does not fit now lets smaller ready runs start); the
//! `--jobs` cap; "no run while a build is running" (builds would disturb timings); retries;
//! which runs end without executing (`skipped`, `unavailable` after a failed build or probe,
//! `blocked`). It must not spawn processes, write files or draw progress: a [`Driver`] does that
//! and reports each finished step on the channel.

use std::collections::BTreeMap;

use petgraph::graph::NodeIndex;
use tokio::sync::{mpsc, watch};

use crate::dag::{Dag, Step};
use crate::pool::{Lease, Need, Pool};
use crate::results::{RunResult, RunStatus};

/// What the scheduler knows about one planned run before it starts.
#[derive(Debug, Clone)]
pub struct RunPlan {
    pub need: Need,
    /// Expected duration in seconds (only the order matters).
    pub estimate_s: f64,
    /// Decided without executing (a `skipped` run and its reason).
    pub preset: Option<(RunStatus, String)>,
}

/// How a step ended, as its executor reports it.
#[derive(Debug)]
pub enum Outcome {
    /// A non-run step did its job.
    Done,
    /// A build or probe failed: the stack's runs become `unavailable` with this reason.
    StackUnavailable(String),
    /// A non-run step failed in a way that does not touch runs (e.g. a report step).
    Failed(String),
    /// A run finished (any status).
    Run(Box<RunResult>),
}

/// A message from an executor task.
#[derive(Debug)]
pub struct Report {
    pub node: NodeIndex,
    pub outcome: Outcome,
}

/// What the scheduler asks of the engine.
pub trait Driver {
    /// Start `step` (with `lease` for runs; `attempt` counts from 1) and send exactly one
    /// [`Report`] for `node` on `tx` when it ends. Must not block.
    fn start(
        &mut self,
        node: NodeIndex,
        step: &Step,
        lease: &Lease,
        attempt: u32,
        tx: mpsc::UnboundedSender<Report>,
    );
    /// Record run `run` that ends without executing; returns its result (bundle written).
    fn settle(&mut self, run: usize, status: RunStatus, reason: &str) -> RunResult;
    /// A step ended. `results` holds every finished run so far, in finishing order.
    fn finished(&mut self, step: &Step, outcome: &Outcome, results: &[RunResult]);
}

/// Limits from the command line and `[run]`.
#[derive(Debug, Clone, Default)]
pub struct Limits {
    /// Max runs at once (None = as many as leases allow).
    pub jobs: Option<usize>,
    /// Re-run a run this many extra times when its status is in `retry_on`.
    pub retries: u32,
    pub retry_on: Vec<RunStatus>,
}

/// The end of a campaign as the scheduler saw it.
#[derive(Debug, Default)]
pub struct Summary {
    /// Final result of every run that ended, in finishing order.
    pub results: Vec<RunResult>,
    pub interrupted: bool,
    /// Devices taken out of service, with the reason.
    pub quarantined: BTreeMap<u32, String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Waiting,
    Running,
    Done,
}

pub struct Scheduler {
    dag: Dag,
    pool: Pool,
    runs: Vec<RunPlan>,
    limits: Limits,
    state: BTreeMap<NodeIndex, State>,
    /// Sum of estimates of a run and the runs chained after it (dispatch priority).
    priority: Vec<f64>,
    attempts: Vec<u32>,
    leases: BTreeMap<NodeIndex, Lease>,
    unavailable: BTreeMap<String, String>,
    results: Vec<RunResult>,
    running_runs: usize,
    running_builds: usize,
}

impl Scheduler {
    pub fn new(dag: Dag, pool: Pool, runs: Vec<RunPlan>, limits: Limits) -> Scheduler {
        let state = dag.nodes().map(|n| (n, State::Waiting)).collect();
        let mut priority: Vec<f64> = runs.iter().map(|r| r.estimate_s).collect();
        // Walk runs in reverse topological order so each run adds its successors' totals.
        for node in dag.topological().into_iter().rev() {
            if let Step::Run { run, .. } = dag.step(node) {
                let after: f64 = dag
                    .successors(node)
                    .filter_map(|s| match dag.step(s) {
                        Step::Run { run, .. } => Some(priority[*run]),
                        _ => None,
                    })
                    .fold(0.0, f64::max);
                priority[*run] += after;
            }
        }
        let attempts = vec![0; runs.len()];
        Scheduler {
            dag,
            pool,
            runs,
            limits,
            state,
            priority,
            attempts,
            leases: BTreeMap::new(),
            unavailable: BTreeMap::new(),
            results: Vec::new(),
            running_runs: 0,
            running_builds: 0,
        }
    }

    fn ready(&self, node: NodeIndex) -> bool {
        self.state[&node] == State::Waiting
            && self
                .dag
                .predecessors(node)
                .all(|p| self.state[&p] == State::Done)
    }

    fn settle(
        &mut self,
        driver: &mut dyn Driver,
        node: NodeIndex,
        status: RunStatus,
        reason: &str,
    ) {
        if let Step::Run { run, .. } = self.dag.step(node).clone() {
            let result = driver.settle(run, status, reason);
            self.state.insert(node, State::Done);
            let outcome = Outcome::Run(Box::new(result.clone()));
            self.results.push(result);
            driver.finished(self.dag.step(node), &outcome, &self.results);
        }
    }

    /// Start everything that can start; settle runs that end without executing.
    fn dispatch(&mut self, driver: &mut dyn Driver, tx: &mpsc::UnboundedSender<Report>) {
        loop {
            let mut progressed = false;
            let ready: Vec<NodeIndex> = self.dag.nodes().filter(|n| self.ready(*n)).collect();
            let mut runs = Vec::new();
            for node in ready {
                match self.dag.step(node).clone() {
                    Step::Run { run, stack, .. } => {
                        if let Some((status, reason)) = self.runs[run].preset.clone() {
                            self.settle(driver, node, status, &reason);
                            progressed = true;
                        } else if let Some(reason) = self.unavailable.get(&stack).cloned() {
                            self.settle(driver, node, RunStatus::Unavailable, &reason);
                            progressed = true;
                        } else {
                            runs.push((node, run));
                        }
                    }
                    Step::Probe { stack } if self.unavailable.contains_key(&stack) => {
                        // The build failed: probing a stack that has no binary says nothing new.
                        self.state.insert(node, State::Done);
                        progressed = true;
                    }
                    step => {
                        if matches!(step, Step::Build { .. }) {
                            self.running_builds += 1;
                        }
                        self.state.insert(node, State::Running);
                        driver.start(node, &step, &Lease::default(), 1, tx.clone());
                    }
                }
            }
            if self.running_builds == 0 {
                runs.sort_by(|a, b| {
                    self.priority[b.1]
                        .total_cmp(&self.priority[a.1])
                        .then(a.1.cmp(&b.1))
                });
                for (node, run) in runs {
                    if self.limits.jobs.is_some_and(|j| self.running_runs >= j) {
                        break;
                    }
                    let need = self.runs[run].need.clone();
                    if let Some(lease) = self.pool.try_lease(&need) {
                        self.attempts[run] += 1;
                        self.running_runs += 1;
                        self.state.insert(node, State::Running);
                        let step = self.dag.step(node).clone();
                        driver.start(node, &step, &lease, self.attempts[run], tx.clone());
                        self.leases.insert(node, lease);
                    } else if let Err(reason) = self.pool.still_possible(&need) {
                        self.settle(driver, node, RunStatus::Blocked, &reason);
                        progressed = true;
                    }
                }
            }
            if !progressed {
                return;
            }
        }
    }

    fn handle(&mut self, driver: &mut dyn Driver, report: Report) {
        let node = report.node;
        let step = self.dag.step(node).clone();
        if let Some(lease) = self.leases.remove(&node) {
            self.pool.release(&lease);
        }
        match (&step, &report.outcome) {
            (Step::Build { stack }, _) => {
                self.running_builds -= 1;
                if let Outcome::StackUnavailable(reason) = &report.outcome {
                    self.unavailable.insert(stack.clone(), reason.clone());
                }
            }
            (Step::Probe { stack }, Outcome::StackUnavailable(reason)) => {
                self.unavailable.insert(stack.clone(), reason.clone());
            }
            (Step::Run { run, .. }, Outcome::Run(result)) => {
                self.running_runs -= 1;
                let retry = self.limits.retry_on.contains(&result.status)
                    && self.attempts[*run] <= self.limits.retries;
                if retry {
                    // The attempt's bundle files stay; the run goes back to the ready set.
                    driver.finished(&step, &report.outcome, &self.results);
                    self.state.insert(node, State::Waiting);
                    return;
                }
                self.results.push((**result).clone());
            }
            (Step::Run { .. }, _) => self.running_runs -= 1,
            _ => {}
        }
        self.state.insert(node, State::Done);
        driver.finished(&step, &report.outcome, &self.results);
    }

    /// Run the campaign to the end, or until `cancel` turns true (then: start nothing more,
    /// wait for running steps to report — their executors see the same signal).
    pub async fn run(
        mut self,
        driver: &mut dyn Driver,
        mut cancel: watch::Receiver<bool>,
    ) -> Summary {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut interrupted = *cancel.borrow();
        let mut cancel_open = true;
        loop {
            if !interrupted {
                self.dispatch(driver, &tx);
            }
            let running = self.state.values().any(|s| *s == State::Running);
            if !running {
                break;
            }
            tokio::select! {
                Some(report) = rx.recv() => self.handle(driver, report),
                changed = cancel.changed(), if cancel_open && !interrupted => {
                    // A dropped sender means nobody can interrupt any more, not an interrupt.
                    cancel_open = changed.is_ok();
                    interrupted = cancel_open && *cancel.borrow();
                }
            }
        }
        Summary {
            results: self.results,
            interrupted,
            quarantined: self.pool.quarantined().clone(),
        }
    }
}

#[cfg(test)]
#[path = "scheduler_tests.rs"]
mod tests;
