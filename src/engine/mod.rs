//! The pipeline shared by `run`, `resume` and `dry-run`: plan → cases → DAG → scheduler →
//! executor → bundles → results.
//!
//! [`prepare`] does everything that can fail on bad input before anything runs (cases, stacks,
//! the stack order, what each run leases, runs whose P exceeds the pool refused); [`execute`]
//! claims a run dir and drives the scheduler to the end. `dry-run` stops after `prepare`. It must
//! not parse CLI arguments or print anything but the run dir lines and the final summary.

pub mod driver;
pub mod estimate;
pub mod health;
pub mod session;
pub mod slurm;
pub mod stacks;
pub mod verdict;
pub mod work;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::watch;

use crate::case::Case;
use crate::dag::{Dag, RunNode};
use crate::error::{Diagnostic, Error, Result};
use crate::plan::{Placement, Plan};
use crate::pool::Pool;
use crate::results::{ResultSet, RunStatus};
use crate::scheduler::{Limits, RunPlan, Scheduler};

pub use driver::{AfterStep, PlannedRun};
pub use stacks::EngineStack;

/// What the command line adds to a plan.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--stacks a,b` (empty = the plan's).
    pub stacks: Vec<String>,
    /// `--filter EXPR`.
    pub filter: Option<String>,
    /// `--cases GLOB`: seed case files instead of the plan's axes.
    pub case_glob: Option<String>,
    pub jobs: Option<usize>,
    pub exclusive: bool,
    pub quiet: bool,
    /// Replaces `results/campaigns`.
    pub results_dir: Option<PathBuf>,
    /// `--executor` (None = the plan's `[run] executor`).
    pub executor: Option<crate::plan::model::ExecutorKind>,
    /// `--cancel-on-interrupt`: on Ctrl-C, scancel the campaign's Slurm jobs without asking.
    pub cancel_on_interrupt: bool,
}

/// A campaign ready to run.
pub struct Prepared {
    pub plan: Plan,
    pub cases: Vec<Case>,
    pub stacks: Vec<Arc<EngineStack>>,
    pub runs: Vec<PlannedRun>,
    pub plans: Vec<RunPlan>,
    pub pool: Pool,
    /// Seed of the shuffled stack order (recorded in provenance).
    pub seed: u64,
}

fn glob_cases(pattern: &str) -> Result<Vec<Case>> {
    let paths = glob::glob(pattern).map_err(|e| Error::Usage(format!("--cases {pattern}: {e}")))?;
    let mut out = Vec::new();
    for p in paths {
        let p = p.map_err(|e| Error::Usage(format!("--cases {pattern}: {e}")))?;
        out.push(Case::load(&p)?);
    }
    if out.is_empty() {
        return Err(Error::Usage(format!("--cases {pattern}: no file matches")));
    }
    Ok(out)
}

/// Everything before running: may fail with bad input (exit 2), runs nothing.
pub fn prepare(plan: Plan, opts: &Options) -> Result<Prepared> {
    let names = crate::plan::select_stacks(&plan, &opts.stacks)?;
    let cases: Vec<Case> = match &opts.case_glob {
        Some(g) => glob_cases(g)?,
        None => crate::sweep::cases(&plan, opts.filter.as_deref())?.collect::<Result<Vec<_>>>()?,
    };
    let mut seen = BTreeSet::new();
    if let Some(dup) = cases
        .iter()
        .map(Case::case_id)
        .find(|id| !seen.insert(id.clone()))
    {
        return Err(Error::invalid(
            &plan.source,
            format!("two cases share the case_id {dup} (their bundles would collide); make the axes differ in a field of the case_id"),
        ));
    }
    let stacks: Vec<Arc<EngineStack>> = stacks::resolve(&plan, &names)?
        .into_iter()
        .map(Arc::new)
        .collect();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let pool = Pool::new(&plan.devices, cpus);
    // Under Slurm the cluster places runs and grants devices: nothing is leased or probed
    // locally, and a run bigger than this machine's pool is fine (docs/slurm.md).
    let on_slurm = session::executor(opts, &plan) == crate::plan::model::ExecutorKind::Slurm;
    let seed = plan.run.seed.unwrap_or_else(rand::random);
    let orders = estimate::stack_orders(&names, cases.len(), plan.run.order, seed);
    let mut runs = Vec::new();
    let mut plans = Vec::new();
    let mut refused = Vec::new();
    for (ci, case) in cases.iter().enumerate() {
        let case_id = case.case_id();
        for name in &orders[ci] {
            let si = names.iter().position(|n| n == name).unwrap_or(0);
            let stack = &stacks[si];
            let need = if on_slurm {
                crate::pool::Need::Nothing
            } else {
                stacks::need(stack, case, &pool)
            };
            let preset = stack
                .def
                .unsupported_reason(case)
                .map(|r| (RunStatus::Skipped, r));
            if preset.is_none() {
                if let Err(why) = pool.check(&need) {
                    refused.push(Diagnostic {
                        file: plan.source.clone(),
                        line: None,
                        column: None,
                        field: Some("devices".into()),
                        message: format!("case {case_id} on stack {name} {why}"),
                        snippet: None,
                    });
                }
            }
            runs.push(PlannedRun {
                case_index: ci,
                case_id: case_id.clone(),
                stack: si,
            });
            let mut run_plan = RunPlan::new(need, 0.0, preset);
            if matches!(run_plan.need, crate::pool::Need::Devices { .. }) {
                run_plan.health_probe = health::probe_key(stack, plan.devices.probe.as_ref());
            }
            plans.push(run_plan);
        }
    }
    if !refused.is_empty() {
        return Err(Error::Invalid(refused));
    }
    Ok(Prepared {
        plan,
        cases,
        stacks,
        runs,
        plans,
        pool,
        seed,
    })
}

/// How a campaign ended.
pub struct Finished {
    pub run_dir: PathBuf,
    pub results: ResultSet,
    pub interrupted: bool,
}

/// Claim a new run dir and run every step. `after` are steps after `collect`, in order.
pub fn execute(
    prep: Prepared,
    opts: &Options,
    after: Vec<(String, AfterStep)>,
) -> Result<Finished> {
    let claimed = session::claim_new(&prep, opts)?;
    drive(prep, opts, after, claimed)
}

/// Journal what an interrupt did to the campaign's Slurm jobs (event `slurm_interrupt`,
/// `action` `cancelled` or `left_running`, `jobs`) and say how to go on.
fn record_interrupt(
    driver: &mut driver::EngineDriver,
    decision: &watch::Receiver<Option<slurm::Decision>>,
    run_dir: &std::path::Path,
) {
    let Some(decision) = decision.borrow().clone() else {
        return;
    };
    let (action, mut jobs): (&str, Vec<u64>) = match decision.action {
        slurm::OnInterrupt::Cancel => ("cancelled", decision.jobs.iter().map(|j| j.0).collect()),
        slurm::OnInterrupt::LeaveRunning => ("left_running", driver.detached.clone()),
    };
    jobs.sort_unstable();
    let mut fields = serde_json::Map::new();
    fields.insert("action".into(), action.into());
    fields.insert("jobs".into(), jobs.clone().into());
    if let Err(e) = driver.journal.event("slurm_interrupt", fields) {
        eprintln!("warning: cannot journal the interrupt: {e}");
    }
    let ids: Vec<String> = jobs.iter().map(u64::to_string).collect();
    if jobs.is_empty() {
        return;
    }
    match decision.action {
        slurm::OnInterrupt::Cancel => {
            eprintln!("cancelled {} Slurm job(s): {}", jobs.len(), ids.join(" "))
        }
        slurm::OnInterrupt::LeaveRunning => eprintln!(
            "left {} Slurm job(s) queued or running: {}
  `campaign resume {}` re-attaches to them and records their results
  `scancel {}` cancels them",
            jobs.len(),
            ids.join(" "),
            run_dir.display(),
            ids.join(" ")
        ),
    }
}

/// Continue the campaign of an existing run dir: runs the journal does not show as done run,
/// the others keep their bundles; results files and `after` steps are rebuilt from all of them.
pub fn resume(
    mut prep: Prepared,
    opts: &Options,
    after: Vec<(String, AfterStep)>,
    state: session::Resume,
) -> Result<Finished> {
    let slurm = session::executor(opts, &prep.plan) == crate::plan::model::ExecutorKind::Slurm;
    let claimed = session::claim_resume(&mut prep, state, slurm)?;
    drive(prep, opts, after, claimed)
}

fn drive(
    mut prep: Prepared,
    opts: &Options,
    after: Vec<(String, AfterStep)>,
    claimed: session::Claimed,
) -> Result<Finished> {
    let session::Claimed {
        run_dir,
        lock: _lock,
        journal,
        fingerprints,
        kept,
        earlier_quarantine,
        pending,
        reattach,
        stale_jobs,
    } = claimed;
    let use_slurm = session::executor(opts, &prep.plan) == crate::plan::model::ExecutorKind::Slurm;
    let campaign = prep.plan.campaign.name.clone();
    let campaign_dir = run_dir.path.parent().map(PathBuf::from).unwrap_or_default();
    let history = estimate::History::load(&campaign_dir, &run_dir.path);
    for (plan, run) in prep.plans.iter_mut().zip(&prep.runs) {
        let stack = &prep.stacks[run.stack].name;
        plan.estimate_s = history.estimate(&run.case_id, stack, &prep.cases[run.case_index]);
    }
    // Only stacks with something to execute are built (a resume of finished stacks skips them).
    let busy: BTreeSet<usize> = prep
        .runs
        .iter()
        .enumerate()
        .filter(|(i, _)| !kept.contains_key(i))
        .map(|(_, r)| r.stack)
        .collect();
    let has_build: Vec<(String, bool)> = prep
        .stacks
        .iter()
        .enumerate()
        .map(|(i, s)| (s.name.clone(), s.def.build.is_some() && busy.contains(&i)))
        .collect();
    let nodes: Vec<RunNode> = prep
        .runs
        .iter()
        .map(|r| RunNode {
            case_id: r.case_id.clone(),
            stack: prep.stacks[r.stack].name.clone(),
        })
        .collect();
    let mut dag = Dag::new(&has_build, &nodes);
    let mut after_map = BTreeMap::new();
    for (name, f) in after {
        dag.append_after_collect(&name);
        after_map.insert(name, f);
    }
    let run_cfg = &prep.plan.run;
    let limits = Limits {
        jobs: if opts.exclusive || run_cfg.exclusive {
            Some(1)
        } else if use_slurm {
            // Nothing is leased locally under Slurm: this cap is all that bounds the queue.
            Some(
                opts.jobs
                    .or(prep.plan.slurm.max_jobs)
                    .unwrap_or(crate::executor::slurm::DEFAULT_MAX_JOBS),
            )
        } else {
            opts.jobs.or(run_cfg.jobs)
        },
        faults: crate::faults::Policy::from_config(run_cfg),
    };
    let mut provenance = crate::provenance::collect(
        Some(&prep.plan.hash),
        Some(&prep.plan.source),
        &stacks::roots(
            &prep
                .stacks
                .iter()
                .map(|s| (**s).clone())
                .collect::<Vec<_>>(),
        ),
        Some(prep.seed),
    );
    if use_slurm {
        provenance.executor = Some("slurm".into());
    }
    let (cancel_tx, cancel_rx) = watch::channel(false);
    let (decision_tx, decision_rx) = watch::channel(None);
    let decision_tx = Arc::new(decision_tx);
    let cancel_tx = Arc::new(cancel_tx);
    let mut driver = driver::EngineDriver {
        run_dir: run_dir.clone(),
        campaign,
        plan_text: prep.plan.text.clone(),
        cases: prep.cases,
        stacks: prep.stacks,
        runs: prep.runs,
        place: prep.plan.devices.placement == Placement::Auto,
        provenance,
        progress: crate::progress::Progress::new(pending, opts.quiet || pending == 0),
        cancel: cancel_rx.clone(),
        after: after_map,
        fatal: None,
        cancel_tx: cancel_tx.clone(),
        last_write: None,
        journal,
        fingerprints,
        kept,
        kept_runs: BTreeSet::new(),
        pool_probe: prep.plan.devices.probe.clone(),
        slurm: None,
        reattach,
        slurm_jobs: BTreeMap::new(),
        detached: Vec::new(),
        decision_tx: use_slurm.then(|| decision_tx.clone()),
        attempts: BTreeMap::new(),
    };
    if pending == 0 {
        println!("nothing to run: every planned run is done; rebuilding results and report");
    }
    let scheduler = Scheduler::new(dag, prep.pool, prep.plans, limits);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::Environment(format!("cannot start the async runtime: {e}")))?;
    let summary = rt.block_on(async {
        // First Ctrl-C/SIGTERM: stop launching, stop running processes, record them
        // `interrupted`; a second one kills every child group and exits 3 (crate::interrupt).
        let mut service = None;
        if use_slurm {
            // One task owns the Slurm executor so every run's job is polled in one batch.
            let executor = crate::executor::slurm::SlurmExecutor::new(prep.plan.slurm.clone());
            let svc = crate::executor::slurm::SlurmService::start(executor).0;
            if !stale_jobs.is_empty() {
                let ids = stale_jobs
                    .iter()
                    .copied()
                    .map(crate::executor::slurm::JobId);
                if let Err(e) = svc.cancel(ids.collect()).await {
                    eprintln!("warning: cannot cancel the earlier session's stale jobs: {e}");
                }
            }
            driver.slurm = Some(work::SlurmRun {
                service: svc.clone(),
                campaign: driver.campaign.clone(),
                kind: prep.plan.devices.kind,
                decision: decision_rx.clone(),
            });
            service = Some(svc);
        }
        let interrupt = crate::interrupt::Interrupt::install()?;
        let mut signals = interrupt.subscribe();
        let tx = cancel_tx.clone();
        let decision_tx = decision_tx.clone();
        let cancel_at_once = opts.cancel_on_interrupt;
        tokio::spawn(async move {
            while signals.changed().await.is_ok() {
                if *signals.borrow() {
                    // Stop launching first; then decide about the jobs already in Slurm.
                    let _ = tx.send(true);
                    if let Some(service) = &service {
                        let decision = slurm::decide(service, cancel_at_once).await;
                        decision_tx.send_if_modified(|d| {
                            let unset = d.is_none();
                            if unset {
                                *d = Some(decision);
                            }
                            unset
                        });
                    }
                    break;
                }
            }
        });
        Ok::<_, Error>(scheduler.run(&mut driver, cancel_rx).await)
    })?;
    driver.progress.finish();
    record_interrupt(&mut driver, &decision_rx, &run_dir.path);
    let mut set = driver.result_set(&summary.results);
    set.quarantined = earlier_quarantine
        .iter()
        .chain(&summary.quarantined)
        .map(|(d, why)| (d.to_string(), why.clone()))
        .collect();
    if let Some(e) = driver.fatal.take() {
        // Whatever can still be written helps `status`; the journal and bundles already hold
        // everything recorded, so a failure here changes nothing.
        let _ = driver.write_results(&set);
        return Err(Error::Environment(format!(
            "{e}\nthe campaign stopped: everything recorded before is intact; once the problem is fixed, `campaign resume {}` continues",
            run_dir.path.display()
        )));
    }
    driver.write_results(&set)?;
    Ok(Finished {
        run_dir: run_dir.path.clone(),
        results: set,
        interrupted: summary.interrupted,
    })
}
