//! The scheduler: the single owner of run state. Walks the step graph, matches ready runs with
//! free devices, and hears back from executors by message.
//!
//! Owns: which steps wait, probe, run, cool down or are done; leases (through the [`Pool`]); the
//! dispatch order (highest remaining expected time first — a run's own estimate plus the runs
//! chained after it in its case — with backfill: a run that does not fit now lets smaller ready
//! runs start); the `--jobs` cap; "no run while a build is running" (builds would disturb
//! timings); acting on the fault policy (`faults.rs`: retries, the cooldown during which a failed
//! attempt's devices rest, failure streaks); health probes before the first run on a device and
//! before each retry; quarantine; which runs end without executing (`skipped`, `unavailable`
//! after a failed build or probe, `blocked`, and runs a resume keeps). It must not spawn
//! processes, write files or draw progress: a [`Driver`] does that and reports each finished step
//! on the channel.

use petgraph::graph::NodeIndex;
use std::collections::{BTreeMap, BTreeSet};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use crate::engine::schedule::dag::{Dag, Step};
use crate::engine::schedule::faults::Streaks;
use crate::engine::schedule::pool::{Lease, Pool};
use crate::model::results::{RunResult, RunStatus};

pub(crate) use super::types::{Driver, Limits, Outcome, ProbeReport, Report, RunPlan, Summary};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Waiting,
    /// Holding its lease while a health probe checks the devices.
    Probing,
    Running,
    /// A failed attempt's devices rest (its lease is held) until the retry may start.
    Cooling(Instant),
    Done,
}

impl State {
    fn active(self) -> bool {
        matches!(self, State::Probing | State::Running | State::Cooling(_))
    }
}

pub(crate) struct Scheduler {
    dag: Dag,
    pool: Pool,
    runs: Vec<RunPlan>,
    limits: Limits,
    state: BTreeMap<NodeIndex, State>,
    /// Sum of estimates of a run and the runs chained after it (dispatch priority).
    priority: Vec<f64>,
    /// Attempts started per run in this session.
    attempts: Vec<u32>,
    leases: BTreeMap<NodeIndex, Lease>,
    unavailable: BTreeMap<String, String>,
    results: Vec<RunResult>,
    /// The failed attempt of a run waiting for its retry: its result if the retry never comes.
    last: BTreeMap<usize, RunResult>,
    streaks: Streaks,
    /// `(probe key, device)` pairs that passed a health probe in this session.
    probed: BTreeSet<(String, u32)>,
    running_runs: usize,
    running_builds: usize,
    interrupted: bool,
}

impl Scheduler {
    pub(crate) fn new(dag: Dag, pool: Pool, runs: Vec<RunPlan>, limits: Limits) -> Scheduler {
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
        let streaks = Streaks::new(limits.faults.quarantine_after);
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
            last: BTreeMap::new(),
            streaks,
            probed: BTreeSet::new(),
            running_runs: 0,
            running_builds: 0,
            interrupted: false,
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

    /// A run that can no longer be placed: `blocked`, unless it already has a failed attempt
    /// (waiting for a retry), which then is its result.
    fn give_up(&mut self, driver: &mut dyn Driver, node: NodeIndex, run: usize, reason: &str) {
        match self.last.remove(&run) {
            Some(result) => {
                self.state.insert(node, State::Done);
                self.results.push(result);
            }
            None => self.settle(driver, node, RunStatus::Blocked, reason),
        }
    }

    fn quarantine(&mut self, driver: &mut dyn Driver, device: u32, reason: &str) {
        if !self.pool.quarantined().contains_key(&device) {
            self.pool.quarantine(device, reason);
            driver.quarantined(device, reason);
        }
    }

    /// A run got its lease: probe the devices that need it, else start.
    fn launch(
        &mut self,
        driver: &mut dyn Driver,
        node: NodeIndex,
        run: usize,
        lease: Lease,
        tx: &mpsc::UnboundedSender<Report>,
    ) {
        let retry = self.attempts[run] > 0;
        let to_probe: Vec<u32> = match &self.runs[run].health_probe {
            Some(key) => lease
                .devices
                .iter()
                .copied()
                .filter(|d| retry || !self.probed.contains(&(key.clone(), *d)))
                .collect(),
            None => Vec::new(),
        };
        self.running_runs += 1;
        if to_probe.is_empty() {
            self.leases.insert(node, lease);
            self.start_run(driver, node, run, tx);
        } else {
            self.state.insert(node, State::Probing);
            driver.probe(node, run, &lease, &to_probe, tx.clone());
            self.leases.insert(node, lease);
        }
    }

    fn start_run(
        &mut self,
        driver: &mut dyn Driver,
        node: NodeIndex,
        run: usize,
        tx: &mpsc::UnboundedSender<Report>,
    ) {
        self.attempts[run] += 1;
        let attempt = self.runs[run].first_attempt.max(1) + self.attempts[run] - 1;
        self.state.insert(node, State::Running);
        let step = self.dag.step(node).clone();
        let lease = self.leases.get(&node).cloned().unwrap_or_default();
        driver.start(node, &step, &lease, attempt, tx.clone());
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
                    if self.limits.jobs.is_some_and(|j| self.running_runs >= j) || driver.stopped()
                    {
                        break;
                    }
                    let need = self.runs[run].need.clone();
                    if let Some(lease) = self.pool.try_lease(&need) {
                        self.launch(driver, node, run, lease, tx);
                    } else if let Err(reason) = self.pool.still_possible(&need) {
                        self.give_up(driver, node, run, &reason);
                        progressed = true;
                    }
                }
            }
            if !progressed {
                return;
            }
        }
    }

    fn handle(
        &mut self,
        driver: &mut dyn Driver,
        report: Report,
        tx: &mpsc::UnboundedSender<Report>,
    ) {
        let node = report.node;
        let step = self.dag.step(node).clone();
        let outcome = report.outcome;
        if let Outcome::Submitted { job_id, reattached } = outcome {
            // News from a step still running, not its end.
            driver.submitted(&step, job_id, reattached);
            return;
        }
        match (&step, &outcome) {
            (Step::Build { stack }, _) => {
                self.running_builds -= 1;
                if let Outcome::StackUnavailable(reason) = &outcome {
                    self.unavailable.insert(stack.clone(), reason.clone());
                }
            }
            (Step::Probe { stack }, Outcome::StackUnavailable(reason)) => {
                self.unavailable.insert(stack.clone(), reason.clone());
            }
            (Step::Run { run, .. }, Outcome::Probed(found)) => {
                let key = self.runs[*run].health_probe.clone().unwrap_or_default();
                for d in &found.passed {
                    self.probed.insert((key.clone(), *d));
                }
                for (d, detail) in &found.failed {
                    self.quarantine(
                        driver,
                        *d,
                        &crate::engine::schedule::faults::probe_failed(detail),
                    );
                }
                if found.failed.is_empty() && !found.cancelled && !self.interrupted {
                    self.start_run(driver, node, *run, tx);
                } else {
                    // Back to the ready set: placement picks healthy devices, or the run is
                    // blocked when too few remain.
                    if let Some(lease) = self.leases.remove(&node) {
                        self.pool.release(&lease);
                    }
                    self.running_runs -= 1;
                    self.state.insert(node, State::Waiting);
                }
                return;
            }
            (Step::Run { run, .. }, Outcome::Run(result)) => {
                self.running_runs -= 1;
                let lease = self.leases.remove(&node).unwrap_or_default();
                for (d, reason) in self.streaks.record_run(&lease.devices, result.status) {
                    self.quarantine(driver, d, &reason);
                }
                let retry = if self.interrupted {
                    None
                } else {
                    self.limits
                        .faults
                        .retry_after(result.status, self.attempts[*run])
                };
                if let Some(cooldown) = retry {
                    // The attempt's bundle files stay; the run goes back to the ready set once
                    // its devices rested.
                    driver.finished(&step, &outcome, &self.results);
                    self.last.insert(*run, (**result).clone());
                    if cooldown.is_zero() {
                        self.pool.release(&lease);
                        self.state.insert(node, State::Waiting);
                    } else {
                        self.leases.insert(node, lease);
                        self.state
                            .insert(node, State::Cooling(Instant::now() + cooldown));
                    }
                    return;
                }
                self.pool.release(&lease);
                self.last.remove(run);
                self.results.push((**result).clone());
            }
            (Step::Run { .. }, _) => {
                self.running_runs -= 1;
                if let Some(lease) = self.leases.remove(&node) {
                    self.pool.release(&lease);
                }
            }
            _ => {}
        }
        self.state.insert(node, State::Done);
        driver.finished(&step, &outcome, &self.results);
    }

    /// The earliest end of a cooldown.
    fn next_wake(&self) -> Option<Instant> {
        self.state
            .values()
            .filter_map(|s| match s {
                State::Cooling(t) => Some(*t),
                _ => None,
            })
            .min()
    }

    /// Give back the leases of cooled-down runs (`all`: every cooling run, on interrupt) and
    /// make them ready for their retry.
    fn end_cooldowns(&mut self, all: bool) {
        let now = Instant::now();
        let done: Vec<NodeIndex> = self
            .state
            .iter()
            .filter(|(_, s)| matches!(s, State::Cooling(t) if all || *t <= now))
            .map(|(n, _)| *n)
            .collect();
        for node in done {
            if let Some(lease) = self.leases.remove(&node) {
                self.pool.release(&lease);
            }
            self.state.insert(node, State::Waiting);
        }
    }

    /// Run the campaign to the end, or until `cancel` turns true (then: start nothing more,
    /// wait for running steps to report — their executors see the same signal).
    pub(crate) async fn run(
        mut self,
        driver: &mut dyn Driver,
        mut cancel: watch::Receiver<bool>,
    ) -> Summary {
        let (tx, mut rx) = mpsc::unbounded_channel();
        self.interrupted = *cancel.borrow();
        let mut cancel_open = true;
        loop {
            // A step that just ended may have stopped the campaign (a failed write cancels):
            // look before dispatching, not only when the select below polls the channel.
            self.interrupted |= cancel_open && *cancel.borrow();
            if self.interrupted {
                self.end_cooldowns(true);
            } else {
                self.dispatch(driver, &tx);
            }
            if !self.state.values().any(|s| s.active()) {
                break;
            }
            let wake = self.next_wake();
            let cooled = async move {
                match wake {
                    Some(t) => tokio::time::sleep_until(t).await,
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                Some(report) = rx.recv() => self.handle(driver, report, &tx),
                changed = cancel.changed(), if cancel_open && !self.interrupted => {
                    // A dropped sender means nobody can interrupt any more, not an interrupt.
                    cancel_open = changed.is_ok();
                    self.interrupted = cancel_open && *cancel.borrow();
                }
                _ = cooled => self.end_cooldowns(false),
            }
        }
        // The last steps may have reported (e.g. Slurm runs detached because of the interrupt)
        // before the select above saw the cancel: an interrupt that happened is one.
        self.interrupted |= *cancel.borrow();
        // Runs whose retry never came (interrupted) end with their last attempt.
        let waiting = std::mem::take(&mut self.last);
        self.results.extend(waiting.into_values());
        Summary {
            results: self.results,
            interrupted: self.interrupted,
            quarantined: self.pool.quarantined().clone(),
        }
    }
}

#[cfg(test)]
mod tests;
