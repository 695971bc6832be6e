//! Unit tests of the scheduler with a dispatcher that "runs" steps instantly and records events.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use super::*;
use crate::engine::schedule::dag::RunNode;
use crate::engine::schedule::pool::Need;
use crate::model::case::{Case, Variant};
use crate::model::plan::{DeviceKind, DevicesConfig, Placement};

#[derive(Default)]
struct Fake {
    runs: Vec<RunNode>,
    /// Stack → status its runs end with (default pass).
    status: BTreeMap<String, RunStatus>,
    /// Build/probe step keys that fail.
    broken: BTreeSet<String>,
    /// ("start"|"end"|"probe", step key, devices, attempt).
    events: Vec<(String, String, Vec<u32>, u32)>,
    /// Devices whose health probe fails.
    sick: BTreeSet<u32>,
    /// Devices reported quarantined.
    quarantined: Vec<(u32, String)>,
    /// Run step key → statuses of its attempts in order (then `status`).
    script: BTreeMap<String, Vec<RunStatus>>,
    /// Interrupt the campaign as a run starts, just before it reports (the race of batch-job runs
    /// detaching the moment Ctrl-C is decided).
    interrupt_on_start: Option<watch::Sender<bool>>,
    /// Report `stopped` (a failed write) once this many runs have started.
    stop_after_runs: Option<usize>,
    /// Every result handed over by `ended`, in the order they came (run, result).
    ended: Vec<(usize, RunResult)>,
    /// Optional runs `decide` spares; the runs it was asked about, in order.
    spare: BTreeSet<usize>,
    asked: Vec<usize>,
    /// `exhausted` once this many runs have started (the budget).
    budget_runs: Option<usize>,
    /// What `census` names, and the runs started before it was asked (`None`: never asked).
    census_names: Vec<(u32, String)>,
    census_after: Option<usize>,
}

impl Fake {
    fn result(&self, run: usize, status: RunStatus, reason: Option<String>) -> RunResult {
        let r = &self.runs[run];
        RunResult {
            case: Case::new(Variant::Mesh, 2, 256),
            case_id: r.case_id.clone(),
            stack: r.stack.clone(),
            status,
            error: reason,
            samples: Vec::new(),
            bundle: PathBuf::from(format!("cases/{}/{}", r.case_id, r.stack)),
            attempt: 1,
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
}

impl Dispatch for Fake {
    fn start(
        &mut self,
        node: NodeIndex,
        step: &Step,
        lease: &Lease,
        attempt: u32,
        tx: mpsc::UnboundedSender<Report>,
    ) {
        self.events.push((
            "start".into(),
            step.key(),
            lease.visible_ids().to_vec(),
            attempt,
        ));
        let outcome = match step {
            Step::Run { run, stack, .. } => {
                let scripted = self.script.get_mut(&step.key()).filter(|s| !s.is_empty());
                let status = match scripted {
                    Some(s) => s.remove(0),
                    None => self.status.get(stack).copied().unwrap_or(RunStatus::Pass),
                };
                Outcome::Run(Box::new(self.result(*run, status, None)))
            }
            s if self.broken.contains(&s.key()) => {
                Outcome::StackUnavailable(format!("{} failed", s.key()))
            }
            _ => Outcome::Done,
        };
        if let Some(cancel) = &self.interrupt_on_start {
            cancel.send(true).unwrap();
        }
        tx.send(Report { node, outcome }).unwrap();
    }

    fn probe(
        &mut self,
        node: NodeIndex,
        run: usize,
        _lease: &Lease,
        devices: &[u32],
        tx: mpsc::UnboundedSender<Report>,
    ) {
        let key = crate::store::journal::run_step(&self.runs[run].case_id, &self.runs[run].stack);
        self.events.push(("probe".into(), key, devices.to_vec(), 0));
        let mut found = ProbeReport::default();
        for d in devices {
            if self.sick.contains(d) {
                found.failed.push((*d, "exit code 1".into()));
            } else {
                found.passed.push(*d);
            }
        }
        tx.send(Report {
            node,
            outcome: Outcome::Probed(found),
        })
        .unwrap();
    }

    fn quarantined(&mut self, device: u32, reason: &str) {
        self.quarantined.push((device, reason.to_string()));
    }

    fn settle(&mut self, run: usize, status: RunStatus, reason: &str) -> RunResult {
        self.result(run, status, Some(reason.to_string()))
    }

    fn finished(&mut self, step: &Step, _outcome: &Outcome) {
        self.events.push(("end".into(), step.key(), Vec::new(), 0));
    }

    fn ended(&mut self, run: usize, result: RunResult) {
        self.ended.push((run, result));
    }

    fn stopped(&self) -> bool {
        self.stop_after_runs
            .is_some_and(|n| starts(self).len() >= n)
    }

    fn decide(&mut self, run: usize) -> Option<String> {
        self.asked.push(run);
        self.spare.contains(&run).then(|| "decided".to_string())
    }

    fn census(&mut self) -> Vec<(u32, String)> {
        assert!(self.census_after.is_none(), "the census judged twice");
        self.census_after = Some(starts(self).len());
        self.census_names.clone()
    }

    fn exhausted(&self) -> Option<String> {
        (self.budget_runs)
            .filter(|n| starts(self).len() >= *n)
            .map(|_| "the budget was spent".to_string())
    }
}

#[test]
fn optional_repeats_are_asked_once_ready_and_placed_after_required_runs() {
    // Two points (chains a, b), each: a required run then two optional repeats.
    let spec = [
        ("a", "s"),
        ("a~r2", "s"),
        ("a~r3", "s"),
        ("b", "s"),
        ("b~r2", "s"),
        ("b~r3", "s"),
    ];
    let mut nodes = runs(&spec);
    for n in &mut nodes {
        n.chain = u32::from(n.case_id.starts_with('b'));
    }
    let mut fake = Fake {
        runs: nodes,
        // Point a is decided after its first repeat; point b goes on.
        spare: BTreeSet::from([1, 2]),
        ..Fake::default()
    };
    let plans = (0..6)
        .map(|i| {
            let mut p = plan(1, 0.0);
            p.optional = i % 3 != 0;
            p
        })
        .collect();
    let limits = Limits {
        jobs: Some(1),
        ..Limits::default()
    };
    let seen = go(&mut fake, &[("s", false)], plans, pool(1), limits);
    // Both points' required runs first, then b's optional repeats; a's are never started.
    assert_eq!(
        starts(&fake),
        vec!["run:a:s", "run:b:s", "run:b~r2:s", "run:b~r3:s"]
    );
    // Each optional run asked exactly once, when its chain reached it.
    let mut asked = fake.asked.clone();
    asked.sort();
    assert_eq!(asked, vec![1, 2, 4, 5]);
    let spared: Vec<&str> = (seen.results.iter())
        .filter(|r| r.status == RunStatus::Spared)
        .map(|r| r.case_id.as_str())
        .collect();
    assert_eq!(spared, vec!["a~r2", "a~r3"]);
    assert_eq!(seen.results.len(), 6);
}

#[test]
fn a_spent_budget_spares_every_run_not_started() {
    let mut fake = Fake {
        runs: runs(&[("a", "s"), ("b", "s"), ("c", "s"), ("d", "s")]),
        budget_runs: Some(2),
        ..Fake::default()
    };
    let plans = (0..4).map(|_| plan(1, 1.0)).collect();
    let limits = Limits {
        jobs: Some(1),
        ..Limits::default()
    };
    let seen = go(&mut fake, &[("s", false)], plans, pool(4), limits);
    assert_eq!(starts(&fake).len(), 2);
    let spared = (seen.results.iter())
        .filter(|r| r.status == RunStatus::Spared)
        .inspect(|r| assert_eq!(r.error.as_deref(), Some("the budget was spent")))
        .count();
    assert_eq!((spared, seen.results.len()), (2, 4));
}

#[test]
fn the_census_is_judged_once_before_any_other_run_and_its_devices_stay_out() {
    // Two census rounds on 4 devices, then a sweep: one run pinned to 2-3, one auto-placed.
    let mut fake = Fake {
        runs: runs(&[
            ("c01", "c"),
            ("c23", "c"),
            ("c02", "c"),
            ("c13", "c"),
            ("w23", "w"),
            ("wauto", "w"),
        ]),
        census_names: vec![(3, "link census: 3 of its 3 links are slow".into())],
        ..Fake::default()
    };
    let pinned = |ids: [u32; 2]| Need::Devices {
        p: 2,
        pinned: Some(ids.to_vec()),
    };
    let mut plans: Vec<RunPlan> = [[0, 1], [2, 3], [0, 2], [1, 3], [2, 3]]
        .into_iter()
        .map(|ids| RunPlan::new(pinned(ids), 1.0, None))
        .collect();
    plans.push(RunPlan::new(
        Need::Devices { p: 3, pinned: None },
        9.0,
        None,
    ));
    for p in &mut plans[..4] {
        p.census = true;
    }
    let stacks: Vec<(String, bool)> = vec![("c".into(), false), ("w".into(), false)];
    let mut dag = Dag::new(&stacks, &fake.runs);
    let round = [Some(0), Some(0), Some(1), Some(1), None, None];
    dag.wait_for_rounds(&round);
    dag.after_census(&fake.runs, &round, &[true, true, true, true, false, false]);
    let sched = Scheduler::new(dag, pool(4), plans, Limits::default());
    let (_tx, rx) = watch::channel(false);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let summary = rt.block_on(sched.run(&mut fake, rx));
    // Asked once every census run had started (and ended), before any sweep run.
    assert_eq!(fake.census_after, Some(4));
    let mut started = starts(&fake);
    // Round by round (a round's pairs in either order), then the sweep's one placed run.
    started[..2].sort();
    started[2..4].sort();
    assert_eq!(
        started,
        [
            "run:c01:c",
            "run:c23:c",
            "run:c02:c",
            "run:c13:c",
            "run:wauto:w"
        ]
    );
    let wauto = fake.events.iter().find(|e| e.1 == "run:wauto:w").unwrap();
    assert_eq!(wauto.2, vec![0, 1, 2], "device 3 is out of the pool");
    assert_eq!(summary.quarantined.keys().copied().collect::<Vec<_>>(), [3]);
    assert_eq!(fake.quarantined.len(), 1);
    let skipped = (fake.ended.iter())
        .find(|(_, r)| r.case_id == "w23")
        .map(|(_, r)| r.clone())
        .unwrap();
    assert_eq!(skipped.status, RunStatus::Skipped);
    assert_eq!(
        skipped.error.as_deref(),
        Some("pinned device 3 is quarantined: link census: 3 of its 3 links are slow")
    );
}

fn pool(n: u32) -> Pool {
    Pool::new(
        &DevicesConfig {
            kind: DeviceKind::Npu,
            ids: (0..n).collect(),
            groups: Vec::new(),
            placement: Placement::Auto,
            probe: None,
        },
        2,
    )
}

fn plan(p: usize, estimate_s: f64) -> RunPlan {
    RunPlan::new(Need::Devices { p, pinned: None }, estimate_s, None)
}

fn go(
    fake: &mut Fake,
    stacks: &[(&str, bool)],
    plans: Vec<RunPlan>,
    pool: Pool,
    limits: Limits,
) -> Seen {
    let stacks: Vec<(String, bool)> = stacks.iter().map(|(s, b)| (s.to_string(), *b)).collect();
    let dag = Dag::new(&stacks, &fake.runs);
    let sched = Scheduler::new(dag, pool, plans, limits);
    let (_tx, rx) = watch::channel(false);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let summary = rt.block_on(sched.run(fake, rx));
    Seen::of(fake, summary)
}

/// What a campaign of the fake dispatcher ended with: the scheduler's summary and the results
/// it handed over.
struct Seen {
    results: Vec<RunResult>,
    interrupted: bool,
    quarantined: BTreeMap<u32, String>,
}

impl Seen {
    fn of(fake: &Fake, summary: Summary) -> Seen {
        // Each ended run is handed over exactly once.
        let runs: BTreeSet<usize> = fake.ended.iter().map(|(run, _)| *run).collect();
        assert_eq!(runs.len(), fake.ended.len(), "a run ended twice");
        Seen {
            results: fake.ended.iter().map(|(_, r)| r.clone()).collect(),
            interrupted: summary.interrupted,
            quarantined: summary.quarantined,
        }
    }
}

fn runs(spec: &[(&str, &str)]) -> Vec<RunNode> {
    spec.iter()
        .map(|(c, s)| RunNode {
            case_id: c.to_string(),
            stack: s.to_string(),
            chain: crate::engine::schedule::dag::chain_of(c),
        })
        .collect()
}

fn starts(fake: &Fake) -> Vec<String> {
    fake.events
        .iter()
        .filter(|e| e.0 == "start" && e.1.starts_with("run:"))
        .map(|e| e.1.clone())
        .collect()
}

#[test]
fn nothing_more_starts_once_the_dispatcher_stopped_even_within_one_dispatch() {
    // Four P=1 runs on four devices would all start in one round of dispatching.
    let mut fake = Fake {
        runs: runs(&[("a", "s"), ("b", "s"), ("c", "s"), ("d", "s")]),
        stop_after_runs: Some(1),
        ..Fake::default()
    };
    let plans = (0..4).map(|_| plan(1, 1.0)).collect();
    go(
        &mut fake,
        &[("s", false)],
        plans,
        pool(4),
        Limits::default(),
    );
    assert_eq!(starts(&fake).len(), 1, "{:?}", starts(&fake));
}

#[test]
fn longest_first_and_exclusive_devices() {
    let mut fake = Fake {
        runs: runs(&[("short", "s"), ("long", "s"), ("mid", "s")]),
        ..Fake::default()
    };
    let plans = vec![plan(2, 1.0), plan(2, 9.0), plan(2, 5.0)];
    let summary = go(
        &mut fake,
        &[("s", false)],
        plans,
        pool(2),
        Limits::default(),
    );
    assert_eq!(
        starts(&fake),
        vec!["run:long:s", "run:mid:s", "run:short:s"]
    );
    assert_eq!(summary.results.len(), 3);
    assert!(!summary.interrupted);
    // Each run started only after the previous one ended (the pool holds one P=2 run).
    let keys: Vec<&str> = fake.events.iter().map(|e| e.0.as_str()).collect();
    let run_events: Vec<&str> = keys
        .iter()
        .zip(&fake.events)
        .filter(|(_, e)| e.1.starts_with("run:"))
        .map(|(k, _)| *k)
        .collect();
    assert_eq!(
        run_events,
        vec!["start", "end", "start", "end", "start", "end"]
    );
}

#[test]
fn backfill_and_jobs_cap() {
    // 4 devices: the P=4 run waits while a P=2 runs; another P=2 backfills beside it.
    let mut fake = Fake {
        runs: runs(&[("a", "s"), ("big", "s"), ("b", "s")]),
        ..Fake::default()
    };
    let plans = vec![plan(2, 3.0), plan(4, 2.0), plan(2, 1.0)];
    go(
        &mut fake,
        &[("s", false)],
        plans,
        pool(4),
        Limits::default(),
    );
    let seq: Vec<String> = fake
        .events
        .iter()
        .filter(|e| e.1.starts_with("run:"))
        .map(|e| format!("{} {}", e.0, e.1))
        .collect();
    assert_eq!(
        seq[..3],
        ["start run:a:s", "start run:b:s", "end run:a:s"],
        "b backfills beside a while big waits for 4 free devices"
    );
    assert!(seq[4..].contains(&"start run:big:s".to_string()));

    let mut fake = Fake {
        runs: runs(&[("a", "s"), ("b", "s")]),
        ..Fake::default()
    };
    let limits = Limits {
        jobs: Some(1),
        ..Limits::default()
    };
    go(
        &mut fake,
        &[("s", false)],
        vec![plan(2, 1.0), plan(2, 1.0)],
        pool(8),
        limits,
    );
    let seq: Vec<&str> = fake
        .events
        .iter()
        .filter(|e| e.1.starts_with("run:"))
        .map(|e| e.0.as_str())
        .collect();
    assert_eq!(
        seq,
        vec!["start", "end", "start", "end"],
        "--jobs 1 runs one at a time"
    );
}

#[test]
fn failed_build_makes_only_its_stack_unavailable() {
    let mut fake = Fake {
        runs: runs(&[("c1", "good"), ("c1", "bad"), ("c2", "bad")]),
        broken: ["build:bad".to_string()].into_iter().collect(),
        ..Fake::default()
    };
    let plans = vec![plan(2, 1.0), plan(2, 1.0), plan(2, 1.0)];
    let summary = go(
        &mut fake,
        &[("good", false), ("bad", true)],
        plans,
        pool(2),
        Limits::default(),
    );
    let by: BTreeMap<String, (RunStatus, Option<String>)> = summary
        .results
        .iter()
        .map(|r| {
            (
                format!("{}:{}", r.case_id, r.stack),
                (r.status, r.error.clone()),
            )
        })
        .collect();
    assert_eq!(by["c1:good"].0, RunStatus::Pass);
    assert_eq!(by["c1:bad"].0, RunStatus::Unavailable);
    assert_eq!(by["c2:bad"].1.as_deref(), Some("build:bad failed"));
    assert!(
        !fake.events.iter().any(|e| e.1 == "probe:bad"),
        "no probe after a failed build"
    );
    assert!(fake.events.iter().any(|e| e.1 == "collect"));
}

#[test]
fn skipped_runs_and_case_order_and_retries() {
    let mut fake = Fake {
        runs: runs(&[("c", "x"), ("c", "y"), ("c", "z")]),
        status: [("z".to_string(), RunStatus::Timeout)]
            .into_iter()
            .collect(),
        ..Fake::default()
    };
    let mut plans = vec![plan(2, 1.0), plan(2, 1.0), plan(2, 1.0)];
    plans[1].preset = Some((RunStatus::Skipped, "dtype fp16 not supported".into()));
    let limits = Limits {
        jobs: None,
        faults: crate::engine::schedule::faults::Policy {
            retries: 1,
            retry_on: vec![RunStatus::Timeout],
            ..Default::default()
        },
    };
    let summary = go(
        &mut fake,
        &[("x", false), ("y", false), ("z", false)],
        plans,
        pool(8),
        limits,
    );
    // Chained in the given order; z retried once (attempts 1 and 2), one final result each.
    let z: Vec<u32> = fake
        .events
        .iter()
        .filter(|e| e.0 == "start" && e.1 == "run:c:z")
        .map(|e| e.3)
        .collect();
    assert_eq!(z, vec![1, 2]);
    assert_eq!(starts(&fake)[0], "run:c:x");
    let statuses: Vec<RunStatus> = summary.results.iter().map(|r| r.status).collect();
    assert_eq!(
        statuses,
        vec![RunStatus::Pass, RunStatus::Skipped, RunStatus::Timeout]
    );
}

#[test]
fn cancelled_before_start_runs_nothing() {
    let mut fake = Fake {
        runs: runs(&[("c", "x")]),
        ..Fake::default()
    };
    let dag = Dag::new(&[("x".to_string(), false)], &fake.runs);
    let sched = Scheduler::new(dag, pool(2), vec![plan(2, 1.0)], Limits::default());
    let (_tx, rx) = watch::channel(true);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let summary = rt.block_on(sched.run(&mut fake, rx));
    let summary = Seen::of(&fake, summary);
    assert!(summary.interrupted);
    assert!(summary.results.is_empty());
    assert!(fake.events.is_empty());
}

#[test]
fn an_interrupt_is_reported_even_when_the_last_run_reports_first() {
    // Whichever of "run reported" and "cancel changed" the scheduler sees first, the campaign
    // was interrupted; repeat so both orders of tokio::select! are exercised.
    for _ in 0..20 {
        let (cancel_tx, cancel_rx) = watch::channel(false);
        let mut fake = Fake {
            runs: runs(&[("c", "x")]),
            status: [("x".to_string(), RunStatus::Interrupted)].into(),
            interrupt_on_start: Some(cancel_tx),
            ..Fake::default()
        };
        let dag = Dag::new(&[("x".to_string(), false)], &fake.runs);
        let sched = Scheduler::new(dag, pool(2), vec![plan(2, 1.0)], Limits::default());
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let summary = rt.block_on(sched.run(&mut fake, cancel_rx));
        assert!(summary.interrupted);
    }
}

fn probed(p: usize) -> RunPlan {
    let mut plan = plan(p, 1.0);
    plan.health_probe = Some("pool".into());
    plan
}

#[test]
fn failed_probe_quarantines_the_device_and_runs_move_or_block() {
    let mut fake = Fake {
        runs: runs(&[("a", "s"), ("b", "s"), ("c", "s"), ("big", "s")]),
        sick: [1].into_iter().collect(),
        ..Fake::default()
    };
    let plans = vec![probed(1), probed(1), probed(1), probed(4)];
    let summary = go(
        &mut fake,
        &[("s", false)],
        plans,
        pool(4),
        Limits::default(),
    );
    assert_eq!(
        fake.quarantined,
        vec![(1, "health probe failed: exit code 1".to_string())]
    );
    assert_eq!(summary.quarantined.len(), 1);
    let by: BTreeMap<String, (RunStatus, Option<String>)> = summary
        .results
        .iter()
        .map(|r| (r.case_id.clone(), (r.status, r.error.clone())))
        .collect();
    for c in ["a", "b", "c"] {
        assert_eq!(by[c].0, RunStatus::Pass, "{c}");
    }
    assert_eq!(by["big"].0, RunStatus::Blocked);
    assert_eq!(
        by["big"].1.as_deref(),
        Some("needs 4 devices but only 3 healthy device(s) remain")
    );
    // No run ever started on the sick device; each healthy device was probed once.
    assert!(fake
        .events
        .iter()
        .filter(|e| e.0 == "start")
        .all(|e| !e.2.contains(&1)));
    let mut probes: Vec<u32> = fake
        .events
        .iter()
        .filter(|e| e.0 == "probe")
        .flat_map(|e| e.2.clone())
        .collect();
    probes.sort();
    assert_eq!(probes, vec![0, 1, 2, 3]);
}

#[test]
fn retry_probes_again_rests_its_devices_and_continues_attempt_numbers() {
    let mut fake = Fake {
        runs: runs(&[("flaky", "s"), ("other", "s")]),
        script: [("run:flaky:s".to_string(), vec![RunStatus::Fail])]
            .into_iter()
            .collect(),
        ..Fake::default()
    };
    let mut plans = vec![probed(2), probed(2)];
    plans[0].first_attempt = 3;
    plans[0].estimate_s = 10.0;
    let limits = Limits {
        jobs: None,
        faults: crate::engine::schedule::faults::Policy {
            retries: 1,
            retry_on: vec![RunStatus::Fail],
            cooldown: std::time::Duration::from_millis(50),
            quarantine_after: 0,
        },
    };
    let summary = go(&mut fake, &[("s", false)], plans, pool(2), limits);
    let flaky: Vec<(String, Vec<u32>, u32)> = fake
        .events
        .iter()
        .filter(|e| e.1 == "run:flaky:s" && e.0 != "end")
        .map(|e| (e.0.clone(), e.2.clone(), e.3))
        .collect();
    assert_eq!(
        flaky,
        vec![
            ("probe".to_string(), vec![0, 1], 0),
            ("start".to_string(), vec![0, 1], 3),
            ("probe".to_string(), vec![0, 1], 0),
            ("start".to_string(), vec![0, 1], 4),
        ],
        "probed before the first run and again before the retry; attempts 3 and 4"
    );
    // The failed attempt's devices rested: `other` (one P=2 run fits) waited for the cooldown
    // instead of taking them, and needed no probe (devices already passed one).
    let seq: Vec<String> = fake
        .events
        .iter()
        .filter(|e| e.0 != "end" && e.1.starts_with("run:"))
        .map(|e| format!("{} {}", e.0, e.1))
        .collect();
    assert_eq!(
        seq,
        [
            "probe run:flaky:s",
            "start run:flaky:s",
            "probe run:flaky:s",
            "start run:flaky:s",
            "start run:other:s"
        ]
    );
    assert!(summary.results.iter().all(|r| r.status == RunStatus::Pass));
}

#[test]
fn failures_in_a_row_quarantine_and_pinned_runs_block() {
    let mut fake = Fake {
        runs: runs(&[("a", "bad"), ("b", "bad"), ("c", "good")]),
        status: [("bad".to_string(), RunStatus::Fail)].into_iter().collect(),
        ..Fake::default()
    };
    let pinned = |ids: Vec<u32>| {
        RunPlan::new(
            Need::Devices {
                p: ids.len(),
                pinned: Some(ids),
            },
            1.0,
            None,
        )
    };
    let mut plans = vec![pinned(vec![0]), pinned(vec![0]), pinned(vec![0])];
    plans[0].estimate_s = 3.0;
    plans[1].estimate_s = 2.0;
    let limits = Limits {
        jobs: None,
        faults: crate::engine::schedule::faults::Policy {
            quarantine_after: 2,
            ..Default::default()
        },
    };
    let summary = go(
        &mut fake,
        &[("bad", false), ("good", false)],
        plans,
        pool(2),
        limits,
    );
    assert_eq!(
        fake.quarantined,
        vec![(0, "2 runs in a row failed on it (last: fail)".to_string())]
    );
    let c = summary.results.iter().find(|r| r.case_id == "c").unwrap();
    assert_eq!(c.status, RunStatus::Blocked);
    assert!(c
        .error
        .as_deref()
        .unwrap()
        .starts_with("pinned device 0 is quarantined"));
}
