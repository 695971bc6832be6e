//! `execute` and `resume`: claim a run dir (new, or the existing one with its journal), build
//! the step graph, start the executor, and drive the scheduler to the end; then write the
//! results files. Also what a Ctrl-C did to work the backend runs outside campaign.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::watch;

use crate::engine::driver::{AfterStep, EngineDriver, Jobs};
use crate::engine::finished::Finished;
use crate::engine::prepare::{Options, Prepared};
use crate::engine::schedule::dag::{Dag, RunNode};
use crate::engine::schedule::scheduler::{Limits, Scheduler};
use crate::engine::{driver, estimate, session};
use crate::error::{Error, Result};
use crate::model::plan::Placement;

/// Claim a new run dir and run every step. `after` are steps after `collect`, in order.
pub(crate) fn execute(
    prep: Prepared,
    opts: &Options,
    after: Vec<(String, AfterStep)>,
) -> Result<Finished> {
    let claimed = session::claim_new(&prep, opts)?;
    drive(prep, opts, after, claimed)
}

/// Journal what an interrupt did to work the backend runs outside campaign, and say how to go
/// on (the backend's words).
fn record_interrupt(driver: &mut EngineDriver, run_dir: &std::path::Path) {
    let Some(note) = (driver.backend).interrupt_note(&driver.jobs.detached, run_dir) else {
        return;
    };
    if let Err(e) = driver.journal.event(note.event, note.fields) {
        eprintln!("warning: cannot journal the interrupt: {e}");
    }
    if let Some(message) = note.message {
        eprintln!("{message}");
    }
}

/// Continue the campaign of an existing run dir: runs the journal does not show as done run,
/// the others keep their bundles; results files and `after` steps are rebuilt from all of them.
pub(crate) fn resume(
    mut prep: Prepared,
    opts: &Options,
    after: Vec<(String, AfterStep)>,
    state: session::Resume,
) -> Result<Finished> {
    let claimed = session::claim_resume(&mut prep, state, opts.results_dir.as_deref())?;
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
        settled,
    } = claimed;
    if let Some(finished) = settled {
        // Nothing to run, and the results files and report already show every run: a resume
        // of a finished run dir of any size answers from the journal alone.
        println!(
            "nothing to run: every planned run is done; results files and report are up to date"
        );
        session::drop_aside((prep, fingerprints, kept));
        return Ok(finished);
    }
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
        } else {
            opts.jobs.or(prep.backend.max_in_flight())
        },
        faults: crate::engine::schedule::faults::Policy::from_config(run_cfg),
    };
    let mut provenance = crate::store::provenance::collect(
        Some(&prep.plan.hash),
        Some(&prep.plan.source),
        &crate::stack::resolve::roots(
            &prep
                .stacks
                .iter()
                .map(|s| (**s).clone())
                .collect::<Vec<_>>(),
        ),
        Some(prep.seed),
    );
    provenance.executor = prep.backend.provenance().map(str::to_string);
    for stack in &prep.stacks {
        // argv[0] when it is written literally (a template such as `{{ run_dir }}/x` is built).
        let program = match &stack.def.command {
            Some(crate::model::stack::CommandSpec::Argv(argv)) => {
                argv.first().filter(|p| !p.contains("{{"))
            }
            _ => None,
        };
        crate::store::provenance::add_stack_facts(
            &mut provenance,
            &stack.name,
            program.map(String::as_str),
            &stack.def.env,
        );
    }
    let (cancel_tx, cancel_rx) = watch::channel(false);
    let cancel_tx = Arc::new(cancel_tx);
    let results_files = crate::engine::results_files::ResultsFiles::start(
        run_dir.clone(),
        crate::engine::results_files::Header {
            campaign: campaign.clone(),
            timestamp: run_dir.timestamp.clone(),
            provenance: provenance.clone(),
            metrics: (prep.stacks.iter())
                .filter_map(|s| s.def.metric.map(|m| (s.name.clone(), m)))
                .collect(),
        },
        prep.runs
            .iter()
            .map(|r| (r.case_id.clone(), prep.stacks[r.stack].name.clone()))
            .collect(),
    )?;
    let cases = Arc::new(prep.cases);
    let mut driver = driver::EngineDriver {
        run_dir: run_dir.clone(),
        campaign,
        plan_text: prep.plan.text.clone(),
        case_files: Arc::new(crate::engine::case_files::CaseFiles::new(
            run_dir.clone(),
            cases.clone(),
            prep.runs.iter().map(|r| {
                let stack = prep.stacks[r.stack].name.clone();
                (r.case_id.clone(), r.case_index, stack)
            }),
        )),
        case_thread: None,
        cases,
        stacks: prep.stacks,
        runs: prep.runs,
        place: prep.plan.devices.placement == Placement::Auto,
        provenance,
        progress: crate::engine::progress::Progress::new(pending, opts.quiet || pending == 0),
        cancel: cancel_rx.clone(),
        after: after_map,
        fatal: None,
        cancel_tx: cancel_tx.clone(),
        results_files: Some(results_files),
        handed_over: 0,
        journal,
        fingerprints,
        kept,
        kept_runs: BTreeSet::new(),
        pool_probe: prep.plan.devices.probe.clone(),
        backend: prep.backend.clone(),
        jobs: Jobs {
            reattach,
            ..Jobs::default()
        },
        attempts: BTreeMap::new(),
        claims: BTreeMap::new(),
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
    let backend = prep.backend;
    let summary = rt.block_on(async move {
        // First Ctrl-C/SIGTERM: stop launching, stop running processes, record them
        // `interrupted`; a second one kills every child group and exits 3 (crate::engine::interrupt).
        backend.start(stale_jobs).await;
        let interrupt = crate::engine::interrupt::Interrupt::install()?;
        let mut signals = interrupt.subscribe();
        let tx = cancel_tx.clone();
        tokio::spawn(async move {
            while signals.changed().await.is_ok() {
                if *signals.borrow() {
                    // Stop launching first; then the backend decides about its jobs outside.
                    let _ = tx.send(true);
                    backend.interrupted().await;
                    break;
                }
            }
        });
        // The scheduler runs on a worker like the runs it starts, so a finished run's report
        // wakes it on the same thread instead of crossing to the main thread and back.
        let joined = tokio::spawn(async move {
            let summary = scheduler.run(&mut driver, cancel_rx).await;
            (summary, driver)
        })
        .await;
        joined.map_err(|e| Error::Environment(format!("the scheduler stopped: {e}")))
    });
    // Every run has reported: the runs' kept cgroups are empty and go.
    crate::executor::unit::slots::remove_all(&run_dir.path);
    let (summary, mut driver) = summary?;
    driver.progress.finish();
    driver.stop_case_files();
    record_interrupt(&mut driver, &run_dir.path);
    let mut set = driver.result_set(&summary.results);
    set.quarantined = earlier_quarantine
        .iter()
        .chain(&summary.quarantined)
        .map(|(d, why)| (d.to_string(), why.clone()))
        .collect();
    if let Some(e) = driver.fatal.take() {
        // Whatever can still be written helps `status`; the journal and bundles already hold
        // everything recorded, so a failure here changes nothing.
        let _ = driver.write_results(set);
        return Err(Error::Environment(format!(
            "{e}\nthe campaign stopped: everything recorded before is intact; once the problem is fixed, `campaign resume {}` continues",
            run_dir.path.display()
        )));
    }
    let (set, written) = driver.write_results(set);
    written?;
    // Every `finished` line of the session on disk before campaign says it is done.
    driver.journal.durable()?;
    Ok(Finished::of(
        run_dir.path.clone(),
        &set,
        summary.interrupted,
    ))
}
