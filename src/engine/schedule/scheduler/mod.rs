//! The scheduler: the single owner of run state. Walks the step graph, matches ready runs with
//! free devices, and hears back from executors by message.
//!
//! Owns: which steps wait, probe, run, cool down or are done; leases (through the [`Pool`]); the
//! dispatch order (highest remaining expected time first — a run's own estimate plus the runs
//! chained after it in its case — with backfill: a run that does not fit now lets smaller ready
//! runs start); the `--jobs` cap; "no run while a build is running" (builds would disturb
//! timings); acting on the fault policy (`faults.rs`: retries, the cooldown during which a failed
//! attempt's devices rest, failure streaks); health probes before the first run on a device and
//! before each retry; quarantine; a census judged once its runs are done and before any other
//! run is placed ([`Dispatch::census`]: what it names quarantined, runs pinned there skipped);
//! which runs end without executing (`skipped`, `unavailable` after a failed build or probe,
//! `blocked`, and runs a resume keeps). It must not spawn
//! processes, write files or draw progress: a [`Dispatch`] does that and reports each finished step
//! on the channel.
//!
//! Every event costs O(log N) in the number of runs, whatever N: each step counts the
//! predecessors it still waits for, ready runs sit in a set ordered by dispatch priority, and the
//! active steps and cooldowns are counted as states change ([`Scheduler::set`]), so a campaign
//! of 100,000 runs never rescans the graph (but once, when a census is judged).

use petgraph::graph::NodeIndex;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use crate::engine::schedule::dag::{Dag, Step};
use crate::engine::schedule::faults::Streaks;
use crate::engine::schedule::pool::{Lease, Need, Pool};
use crate::model::results::{RunResult, RunStatus};

pub(crate) use super::types::{Dispatch, Limits, Outcome, ProbeReport, Report, RunPlan, Summary};

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
    /// The failed attempt of a run waiting for its retry: its result if the retry never comes.
    last: BTreeMap<usize, RunResult>,
    streaks: Streaks,
    /// `(probe key, device)` pairs that passed a health probe in this session.
    probed: BTreeSet<(String, u32)>,
    running_runs: usize,
    running_builds: usize,
    interrupted: bool,
    /// Per node (by index): predecessors not done yet.
    waiting_on: Vec<usize>,
    /// Ready steps other than runs.
    ready_steps: BTreeSet<NodeIndex>,
    /// Ready runs that end without executing (a preset, or their stack is unavailable).
    ready_settle: BTreeSet<NodeIndex>,
    /// Ready optional runs whose need is not decided yet ([`Dispatch::decide`]).
    ready_gated: BTreeSet<NodeIndex>,
    /// Optional runs decided to run (placed after the required ones).
    decided: Vec<bool>,
    /// Ready runs to place, in dispatch order: highest priority first, then plan order.
    ready_runs: BTreeSet<ReadyRun>,
    /// How many runs of `ready_runs` have each need (dispatch stops once every need failed).
    ready_needs: HashMap<Need, usize>,
    /// Steps probing, running or cooling down.
    active: usize,
    /// Cooling runs by the end of their cooldown.
    cooling: BTreeSet<(Instant, NodeIndex)>,
    /// Census runs not done yet, and whether the census was judged ([`Dispatch::census`]).
    census_left: usize,
    census_judged: bool,
}

/// A ready run's place in the dispatch order: required runs before optional repeats, then by
/// priority, then plan order.
type ReadyRun = (bool, Reverse<i64>, usize, NodeIndex);

/// An integer ordered like `f64::total_cmp`.
fn total_order_key(x: f64) -> i64 {
    let bits = x.to_bits() as i64;
    bits ^ ((((bits >> 63) as u64) >> 1) as i64)
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
        let n_runs = runs.len();
        let census_left = runs.iter().filter(|r| r.census).count();
        let streaks = Streaks::new(limits.faults.quarantine_after);
        let mut waiting_on = vec![0; dag.nodes().map(|n| n.index() + 1).max().unwrap_or(0)];
        for node in dag.nodes() {
            waiting_on[node.index()] = dag.predecessors(node).count();
        }
        let mut scheduler = Scheduler {
            dag,
            pool,
            runs,
            limits,
            state,
            priority,
            attempts,
            leases: BTreeMap::new(),
            unavailable: BTreeMap::new(),
            last: BTreeMap::new(),
            streaks,
            probed: BTreeSet::new(),
            running_runs: 0,
            running_builds: 0,
            interrupted: false,
            waiting_on,
            ready_steps: BTreeSet::new(),
            ready_settle: BTreeSet::new(),
            ready_gated: BTreeSet::new(),
            decided: vec![false; n_runs],
            ready_runs: BTreeSet::new(),
            ready_needs: HashMap::new(),
            active: 0,
            cooling: BTreeSet::new(),
            census_left,
            // Nothing to judge without census runs.
            census_judged: census_left == 0,
        };
        let first: Vec<NodeIndex> = (scheduler.dag.nodes())
            .filter(|n| scheduler.waiting_on[n.index()] == 0)
            .collect();
        for node in first {
            scheduler.make_ready(node);
        }
        scheduler
    }

    /// Move `node` to `new`, keeping the ready sets, the active count and the cooldowns true.
    fn set(&mut self, node: NodeIndex, new: State) {
        let old = self.state.insert(node, new).unwrap_or(State::Waiting);
        if old.active() {
            self.active -= 1;
        }
        if new.active() {
            self.active += 1;
        }
        if let State::Cooling(t) = old {
            self.cooling.remove(&(t, node));
        }
        if let State::Cooling(t) = new {
            self.cooling.insert((t, node));
        }
        if old == State::Waiting {
            self.unready(node);
        }
        if new == State::Waiting && self.waiting_on[node.index()] == 0 {
            self.make_ready(node);
        }
        if new == State::Done && old != State::Done {
            if let Step::Run { run, .. } = self.dag.step(node) {
                if self.runs[*run].census {
                    self.census_left -= 1;
                }
            }
            let next: Vec<NodeIndex> = self.dag.successors(node).collect();
            for s in next {
                self.waiting_on[s.index()] -= 1;
                if self.waiting_on[s.index()] == 0 && self.state[&s] == State::Waiting {
                    self.make_ready(s);
                }
            }
        }
    }

    /// A waiting step whose predecessors are all done.
    fn make_ready(&mut self, node: NodeIndex) {
        match self.dag.step(node) {
            Step::Run { run, stack, .. } => {
                // Whether a run executes is settled by now: presets are planned, and a build or
                // probe that makes its stack unavailable ends before the run is ready.
                if self.runs[*run].preset.is_some() || self.unavailable.contains_key(stack) {
                    self.ready_settle.insert(node);
                } else if self.runs[*run].optional && !self.decided[*run] {
                    self.ready_gated.insert(node);
                } else {
                    let key = self.ready_key(*run, node);
                    self.ready_runs.insert(key);
                    *self
                        .ready_needs
                        .entry(self.runs[*run].need.clone())
                        .or_default() += 1;
                }
            }
            _ => {
                self.ready_steps.insert(node);
            }
        }
    }

    /// Where ready run `run` (at `node`) stands in the dispatch order.
    fn ready_key(&self, run: usize, node: NodeIndex) -> ReadyRun {
        (
            self.runs[run].optional,
            Reverse(total_order_key(self.priority[run])),
            run,
            node,
        )
    }

    /// Ask whether each ready optional run is needed: run it (it joins the ready runs) or
    /// spare it. Returns whether any was decided.
    fn decide_gated(&mut self, dispatcher: &mut dyn Dispatch) -> bool {
        let mut progressed = false;
        while let Some(node) = self.ready_gated.pop_first() {
            let Step::Run { run, .. } = *self.dag.step(node) else {
                continue;
            };
            progressed = true;
            match dispatcher.decide(run) {
                None => {
                    self.decided[run] = true;
                    self.make_ready(node);
                }
                Some(reason) => self.settle(dispatcher, node, RunStatus::Spared, &reason),
            }
        }
        progressed
    }

    /// The budget is spent: every ready run not started is spared (runs chained after them
    /// become ready and are spared in turn).
    fn spare_ready(&mut self, dispatcher: &mut dyn Dispatch, why: &str) -> bool {
        let nodes: Vec<NodeIndex> = (self.ready_runs.iter().map(|k| k.3))
            .chain(self.ready_gated.iter().copied())
            .collect();
        for &node in &nodes {
            let Step::Run { run, .. } = *self.dag.step(node) else {
                continue;
            };
            // A run waiting for its retry ends with its failed attempt, as when it is given up.
            match self.last.remove(&run) {
                Some(result) => {
                    self.set(node, State::Done);
                    self.end(dispatcher, run, result);
                }
                None => self.settle(dispatcher, node, RunStatus::Spared, why),
            }
        }
        !nodes.is_empty()
    }

    /// A ready step started or ended.
    fn unready(&mut self, node: NodeIndex) {
        match self.dag.step(node) {
            Step::Run { run, .. } => {
                self.ready_settle.remove(&node);
                self.ready_gated.remove(&node);
                let key = self.ready_key(*run, node);
                if self.ready_runs.remove(&key) {
                    let need = &self.runs[*run].need;
                    if let Some(n) = self.ready_needs.get_mut(need) {
                        *n -= 1;
                        if *n == 0 {
                            self.ready_needs.remove(need);
                        }
                    }
                }
            }
            _ => {
                self.ready_steps.remove(&node);
            }
        }
    }

    fn settle(
        &mut self,
        dispatcher: &mut dyn Dispatch,
        node: NodeIndex,
        status: RunStatus,
        reason: &str,
    ) {
        if let Step::Run { run, .. } = self.dag.step(node).clone() {
            let result = dispatcher.settle(run, status, reason);
            self.set(node, State::Done);
            let outcome = Outcome::Run(Box::new(result));
            dispatcher.finished(self.dag.step(node), &outcome);
            if let Outcome::Run(result) = outcome {
                self.end(dispatcher, run, *result);
            }
        }
    }

    /// Run `run` ended for good: its result goes to the dispatcher, which keeps it.
    fn end(&mut self, dispatcher: &mut dyn Dispatch, run: usize, result: RunResult) {
        dispatcher.ended(run, result);
    }

    /// A run that can no longer be placed: `blocked`, unless it already has a failed attempt
    /// (waiting for a retry), which then is its result.
    fn give_up(
        &mut self,
        dispatcher: &mut dyn Dispatch,
        node: NodeIndex,
        run: usize,
        reason: &str,
    ) {
        match self.last.remove(&run) {
            Some(result) => {
                self.set(node, State::Done);
                self.end(dispatcher, run, result);
            }
            None => self.settle(dispatcher, node, RunStatus::Blocked, reason),
        }
    }

    fn quarantine(&mut self, dispatcher: &mut dyn Dispatch, device: u32, reason: &str) {
        if !self.pool.quarantined().contains_key(&device) {
            self.pool.quarantine(device, reason);
            dispatcher.quarantined(device, reason);
        }
    }

    /// Once every census run is done (the step graph holds every other run behind them): the
    /// census judged, once, the devices it names quarantined, and each run not done that is
    /// pinned to one of them a planned skip naming why — all before any other run is placed.
    /// One pass over the runs, once a session.
    fn judge_census(&mut self, dispatcher: &mut dyn Dispatch) -> bool {
        if self.census_judged || self.census_left > 0 {
            return false;
        }
        self.census_judged = true;
        let named = dispatcher.census();
        for (d, why) in &named {
            self.quarantine(dispatcher, *d, why);
        }
        for run in 0..self.runs.len() {
            let node = self.dag.run_node(run);
            let plan = &self.runs[run];
            if plan.preset.is_some() || self.state[&node] == State::Done {
                continue;
            }
            let Need::Devices {
                pinned: Some(ids), ..
            } = &plan.need
            else {
                continue;
            };
            let Some((d, why)) = named.iter().find(|(d, _)| ids.contains(d)) else {
                continue;
            };
            let reason = format!("pinned device {d} is quarantined: {why}");
            self.runs[run].preset = Some((RunStatus::Skipped, reason));
            // Ready already: settled instead of placed.
            if self.state[&node] == State::Waiting && self.waiting_on[node.index()] == 0 {
                self.unready(node);
                self.make_ready(node);
            }
        }
        !named.is_empty()
    }

    /// A run got its lease: probe the devices that need it, else start.
    fn launch(
        &mut self,
        dispatcher: &mut dyn Dispatch,
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
            self.start_run(dispatcher, node, run, tx);
        } else {
            self.set(node, State::Probing);
            dispatcher.probe(node, run, &lease, &to_probe, tx.clone());
            self.leases.insert(node, lease);
        }
    }

    fn start_run(
        &mut self,
        dispatcher: &mut dyn Dispatch,
        node: NodeIndex,
        run: usize,
        tx: &mpsc::UnboundedSender<Report>,
    ) {
        self.attempts[run] += 1;
        let attempt = self.runs[run].first_attempt.max(1) + self.attempts[run] - 1;
        self.set(node, State::Running);
        let step = self.dag.step(node).clone();
        let lease = self.leases.get(&node).cloned().unwrap_or_default();
        dispatcher.start(node, &step, &lease, attempt, tx.clone());
    }

    /// Start everything that can start; settle runs that end without executing.
    fn dispatch(&mut self, dispatcher: &mut dyn Dispatch, tx: &mpsc::UnboundedSender<Report>) {
        loop {
            let mut progressed = false;
            let steps: Vec<NodeIndex> = self.ready_steps.iter().copied().collect();
            for node in steps {
                match self.dag.step(node).clone() {
                    Step::Probe { stack } if self.unavailable.contains_key(&stack) => {
                        // The build failed: probing a stack that has no binary says nothing new.
                        self.set(node, State::Done);
                        progressed = true;
                    }
                    step => {
                        if matches!(step, Step::Build { .. }) {
                            self.running_builds += 1;
                        }
                        self.set(node, State::Running);
                        dispatcher.start(node, &step, &Lease::default(), 1, tx.clone());
                    }
                }
            }
            while let Some(node) = self.ready_settle.pop_first() {
                let Step::Run { run, stack, .. } = self.dag.step(node).clone() else {
                    continue;
                };
                if let Some((status, reason)) = self.runs[run].preset.clone() {
                    self.settle(dispatcher, node, status, &reason);
                } else {
                    let reason = self.unavailable.get(&stack).cloned().unwrap_or_default();
                    self.settle(dispatcher, node, RunStatus::Unavailable, &reason);
                }
                progressed = true;
            }
            if let Some(why) = dispatcher.exhausted() {
                progressed |= self.spare_ready(dispatcher, &why);
            } else {
                progressed |= self.decide_gated(dispatcher);
            }
            // Runs settled just above (a resume's kept census runs) may have completed the
            // census: it is judged before anything is placed.
            progressed |= self.judge_census(dispatcher);
            if self.running_builds == 0 {
                progressed |= self.place_runs(dispatcher, tx);
            }
            if !progressed {
                return;
            }
        }
    }

    /// Lease and launch ready runs in priority order, with backfill: a run that does not fit
    /// now lets later (smaller) ready runs start. Once a need has failed in this pass, runs with
    /// the same need are skipped (the pool only fills up during a pass), and the pass ends when
    /// every need among the ready runs has failed. Returns whether a run was given up.
    fn place_runs(
        &mut self,
        dispatcher: &mut dyn Dispatch,
        tx: &mpsc::UnboundedSender<Report>,
    ) -> bool {
        let mut gave_up = false;
        let mut failed: Vec<Need> = Vec::new();
        let mut cursor: Option<ReadyRun> = None;
        loop {
            if self.limits.jobs.is_some_and(|j| self.running_runs >= j)
                || failed.len() >= self.ready_needs.len()
                || dispatcher.stopped()
            {
                break;
            }
            let next = match cursor {
                None => self.ready_runs.first().copied(),
                Some(k) => (self.ready_runs)
                    .range((Bound::Excluded(k), Bound::Unbounded))
                    .next()
                    .copied(),
            };
            let Some(key) = next else {
                break;
            };
            cursor = Some(key);
            let (_, _, run, node) = key;
            let need = &self.runs[run].need;
            if failed.contains(need) {
                continue;
            }
            let need = need.clone();
            if let Some(lease) = self.pool.try_lease(&need) {
                self.launch(dispatcher, node, run, lease, tx);
            } else if let Err(reason) = self.pool.still_possible(&need) {
                self.give_up(dispatcher, node, run, &reason);
                gave_up = true;
            } else {
                failed.push(need);
            }
        }
        gave_up
    }

    fn handle(
        &mut self,
        dispatcher: &mut dyn Dispatch,
        report: Report,
        tx: &mpsc::UnboundedSender<Report>,
    ) {
        let node = report.node;
        let step = self.dag.step(node).clone();
        let outcome = report.outcome;
        if let Outcome::Submitted { job_id, reattached } = outcome {
            // News from a step still running, not its end.
            dispatcher.submitted(&step, job_id, reattached);
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
                        dispatcher,
                        *d,
                        &crate::engine::schedule::faults::probe_failed(detail),
                    );
                }
                if found.failed.is_empty() && !found.cancelled && !self.interrupted {
                    self.start_run(dispatcher, node, *run, tx);
                } else {
                    // Back to the ready set: placement picks healthy devices, or the run is
                    // blocked when too few remain.
                    if let Some(lease) = self.leases.remove(&node) {
                        self.pool.release(&lease);
                    }
                    self.running_runs -= 1;
                    self.set(node, State::Waiting);
                }
                return;
            }
            (Step::Run { run, .. }, Outcome::Run(result)) => {
                self.running_runs -= 1;
                let lease = self.leases.remove(&node).unwrap_or_default();
                // A failure before any device was touched (argument check, import error,
                // compile error) says nothing about the devices' health.
                let status = if crate::engine::run_status::implicates_devices(
                    result.status,
                    result.error.as_deref(),
                ) {
                    result.status
                } else {
                    RunStatus::Unavailable
                };
                for (d, reason) in self.streaks.record_run(&lease.devices, status) {
                    self.quarantine(dispatcher, d, &reason);
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
                    dispatcher.finished(&step, &outcome);
                    if let Outcome::Run(result) = outcome {
                        self.last.insert(*run, *result);
                    }
                    if cooldown.is_zero() {
                        self.pool.release(&lease);
                        self.set(node, State::Waiting);
                    } else {
                        self.leases.insert(node, lease);
                        self.set(node, State::Cooling(Instant::now() + cooldown));
                    }
                    return;
                }
                self.pool.release(&lease);
                self.last.remove(run);
                let run = *run;
                self.set(node, State::Done);
                dispatcher.finished(&step, &outcome);
                if let Outcome::Run(result) = outcome {
                    self.end(dispatcher, run, *result);
                }
                return;
            }
            (Step::Run { .. }, _) => {
                self.running_runs -= 1;
                if let Some(lease) = self.leases.remove(&node) {
                    self.pool.release(&lease);
                }
            }
            _ => {}
        }
        self.set(node, State::Done);
        dispatcher.finished(&step, &outcome);
    }

    /// The earliest end of a cooldown.
    fn next_wake(&self) -> Option<Instant> {
        self.cooling.first().map(|(t, _)| *t)
    }

    /// Give back the leases of cooled-down runs (`all`: every cooling run, on interrupt) and
    /// make them ready for their retry.
    fn end_cooldowns(&mut self, all: bool) {
        let now = Instant::now();
        let done: Vec<NodeIndex> = (self.cooling.iter())
            .take_while(|(t, _)| all || *t <= now)
            .map(|(_, n)| *n)
            .collect();
        for node in done {
            if let Some(lease) = self.leases.remove(&node) {
                self.pool.release(&lease);
            }
            self.set(node, State::Waiting);
        }
    }

    /// Run the campaign to the end, or until `cancel` turns true (then: start nothing more,
    /// wait for running steps to report — their executors see the same signal).
    pub(crate) async fn run(
        mut self,
        dispatcher: &mut dyn Dispatch,
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
                self.dispatch(dispatcher, &tx);
            }
            if self.active == 0 {
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
                Some(report) = rx.recv() => self.handle(dispatcher, report, &tx),
                changed = cancel.changed(), if cancel_open && !self.interrupted => {
                    // A dropped sender means nobody can interrupt any more, not an interrupt.
                    cancel_open = changed.is_ok();
                    self.interrupted = cancel_open && *cancel.borrow();
                }
                _ = cooled => self.end_cooldowns(false),
            }
        }
        // The last steps may have reported (e.g. batch-job runs detached because of the interrupt)
        // before the select above saw the cancel: an interrupt that happened is one.
        self.interrupted |= *cancel.borrow();
        // Runs whose retry never came (interrupted) end with their last attempt.
        let waiting = std::mem::take(&mut self.last);
        for (run, result) in waiting {
            self.end(dispatcher, run, result);
        }
        Summary {
            interrupted: self.interrupted,
            quarantined: self.pool.quarantined().clone(),
        }
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod order_tests {
    use super::total_order_key;

    #[test]
    fn the_integer_key_orders_like_total_cmp() {
        let xs = [
            f64::NEG_INFINITY,
            -3.5,
            -0.0,
            0.0,
            1e-300,
            0.25,
            2.0,
            1e300,
            f64::INFINITY,
        ];
        for a in xs {
            for b in xs {
                assert_eq!(
                    total_order_key(a).cmp(&total_order_key(b)),
                    a.total_cmp(&b),
                    "{a} {b}"
                );
            }
        }
    }
}
