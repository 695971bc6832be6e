//! Building the campaign a claimed run dir runs: expected durations, the step graph (only
//! stacks with something to execute are built), the scheduler's limits, the provenance every
//! results file records, the results-file and case-file writers, and the [`Dispatcher`] that
//! holds them for the session.
//!
//! Owns turning a `Prepared` campaign and a `Claimed` run dir into the scheduler and its dispatcher.
//! It must not run anything: `runtime` does, `drive` tells the story.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::watch;

use crate::engine::case_files::CaseFiles;
use crate::engine::dispatch::{AfterStep, CampaignPlan, Dispatcher, Outputs, RunState, Stopping};
use crate::engine::estimate;
use crate::engine::prepare::{Options, Prepared};
use crate::engine::progress::Progress;
use crate::engine::results_files::{Header, ResultsFiles};
use crate::engine::schedule::dag::{Dag, RunNode};
use crate::engine::schedule::faults;
use crate::engine::schedule::scheduler::{Limits, Scheduler};
use crate::error::Result;
use crate::model::case::Case;
use crate::model::plan::Placement;
use crate::model::results::{Provenance, RunResult};
use crate::model::stack::CommandSpec;
use crate::store::layout::RunDir;

/// A campaign ready to run: the scheduler and the dispatcher it drives.
pub(crate) struct Campaign {
    pub(crate) scheduler: Scheduler,
    pub(crate) dispatcher: Dispatcher,
}

/// Build the campaign of `prep` in `run_dir`; `state` is what the claim found, `pending` the
/// runs this session executes or settles, `after` the steps after `collect`, in order.
pub(crate) fn build(
    mut prep: Prepared,
    opts: &Options,
    after: Vec<(String, AfterStep)>,
    run_dir: Arc<RunDir>,
    mut state: RunState,
    pending: usize,
) -> Result<Campaign> {
    estimate_runs(&mut prep, &run_dir);
    let dag = step_graph(&prep, &state.kept);
    let limits = limits(&prep, opts);
    let mut provenance = provenance(&prep);
    // One run at a time or several: a setting that changes timing (history series keep them
    // apart, `store::history_db::ingest::series_key`).
    provenance.exclusive = Some(limits.jobs == Some(1));
    // Pinned devices or the engine's choice: another setting a history series keeps apart.
    if prep.plan.devices.placement == crate::model::plan::Placement::Pinned {
        provenance.placement = Some("pinned".into());
    }
    let (cancel_tx, cancel) = watch::channel(false);
    let mut decider = decider(&prep, &provenance, opts.results_dir.as_deref());
    decider.replay(std::mem::take(&mut state.decisions));
    // Shared, not copied: a huge plan's cases are held once.
    let cases = Arc::new(std::mem::take(&mut prep.cases));
    let out = outputs(
        &prep,
        &run_dir,
        &provenance,
        &cases,
        after,
        pending,
        opts.quiet,
    )?;
    let profiling = crate::engine::profiled::Profiling::new(prep.plan.profile.clone());
    let census = (prep.plan.census.clone()).map(|c| {
        let line = state.census_line.take();
        crate::engine::census_step::Gate::new(c, prep.census_cases, line)
    });
    let plan = CampaignPlan {
        run_dir,
        plan_text: prep.plan.text.clone(),
        cases,
        stacks: prep.stacks,
        runs: prep.runs,
        place: prep.plan.devices.placement == Placement::Auto,
        pool_probe: prep.plan.devices.probe.clone(),
    };
    let dispatcher = Dispatcher {
        plan,
        state,
        out,
        backend: prep.backend,
        stop: Stopping {
            cancel,
            cancel_tx: Arc::new(cancel_tx),
            fatal: None,
        },
        decider,
        profiling,
        census,
    };
    let scheduler = Scheduler::new(dag, prep.pool, prep.plans, limits);
    Ok(Campaign {
        scheduler,
        dispatcher,
    })
}

/// Bootstrap resamples of a decision's analysis (the report draws 1,000).
const DECISION_RESAMPLES: u32 = 100;

/// What decides the campaign's optional repeats and keeps its budget: the report's own
/// baseline, margins and families (the whole campaign's rows, each counted once per look).
fn decider(
    prep: &Prepared,
    provenance: &Provenance,
    results_dir: Option<&std::path::Path>,
) -> crate::engine::decide::Decider {
    use crate::engine::decide::{Decider, Rule};
    let run_cfg = &prep.plan.run;
    let looks = crate::analysis::sequential::looks(run_cfg.repeats, run_cfg.repeats_max);
    let metrics: BTreeMap<String, crate::model::results::Metric> = (prep.stacks.iter())
        .filter_map(|s| s.def.metric.map(|m| (s.name.clone(), m)))
        .collect();
    // The report's baseline: the plan's, else the first stack run (the results files list
    // runs in planned order).
    let baseline = (prep.plan.report.baseline.clone())
        .or_else(|| prep.runs.first().map(|r| prep.stacks[r.stack].name.clone()));
    let judging = crate::report::summary::Judging {
        compare_metric: prep.plan.report.compare_metric,
        equivalence: prep.plan.report.equivalence,
        looks: looks.len(),
        family: Some(crate::engine::decide::planned_families(
            &prep.cases,
            &prep.points,
            (prep.runs.iter()).map(|r| (r.case_index, prep.stacks[r.stack].name.as_str())),
            baseline.as_deref(),
        )),
        calibration: None,
    };
    let deciding = looks.len() > 1 || !prep.adaptive.is_empty();
    let rule = Rule {
        looks,
        baseline,
        judging,
        // Decided as the report will judge: with the machine's calibration when there is one
        // (only when something is decided: the store is not opened for a fixed count).
        calibration: deciding
            .then(|| crate::engine::report_step::calibration_in(results_dir, provenance))
            .flatten(),
        // Verdicts rest on the repeats' statistics, not on the bootstrap (only the intervals
        // shown beside them do): a decision draws a tenth of the report's resamples.
        bootstrap: crate::analysis::stats::Bootstrap {
            resamples: DECISION_RESAMPLES,
            ..crate::analysis::stats::Bootstrap::default()
        },
        provenance: provenance.clone(),
        metrics,
        resolution: prep.plan.adapt.resolution,
    };
    let runs = (prep.runs.iter()).map(|r| (r.case_index, r.case_id.clone()));
    Decider::new(
        rule,
        &prep.cases,
        &prep.points,
        runs,
        (run_cfg.budget, prep.adaptive.clone()),
    )
}

/// Each run's expected duration, from earlier run dirs of the campaign (longest first).
fn estimate_runs(prep: &mut Prepared, run_dir: &RunDir) {
    let campaign_dir = run_dir.path.parent().map(PathBuf::from).unwrap_or_default();
    let history = estimate::History::load(&campaign_dir, &run_dir.path);
    for (plan, run) in prep.plans.iter_mut().zip(&prep.runs) {
        let stack = &prep.stacks[run.stack].name;
        plan.estimate_s = history.estimate(&run.case_id, stack, &prep.cases[run.case_index]);
    }
}

/// The step graph (the steps after `collect` run once it is done: `Dispatcher::conclude`).
fn step_graph(prep: &Prepared, kept: &BTreeMap<usize, RunResult>) -> Dag {
    // Only stacks with something to execute are built (a resume of finished stacks skips them).
    let busy: BTreeSet<usize> = (prep.runs.iter().enumerate())
        .filter(|(i, _)| !kept.contains_key(i))
        .map(|(_, r)| r.stack)
        .collect();
    let has_build: Vec<(String, bool)> = (prep.stacks.iter().enumerate())
        .map(|(i, s)| (s.name.clone(), s.def.build.is_some() && busy.contains(&i)))
        .collect();
    let nodes: Vec<RunNode> = (prep.runs.iter())
        .map(|r| RunNode {
            chain: prep.points[r.case_index],
            case_id: r.case_id.clone(),
            stack: prep.stacks[r.stack].name.clone(),
        })
        .collect();
    let mut dag = Dag::new(&has_build, &nodes);
    dag.wait_for_points(&nodes, &prep.adaptive);
    if let Some(census) = &prep.plan.census {
        let rounds = census_rounds(prep, &census.devices);
        dag.wait_for_rounds(&rounds);
        let is_census: Vec<bool> = (prep.runs.iter())
            .map(|r| r.case_index < prep.census_cases)
            .collect();
        dag.after_census(&nodes, &rounds, &is_census);
    }
    dag
}

/// Each run's round of the census (`analysis::census::rounds`), found by its case's pair.
fn census_rounds(prep: &Prepared, devices: &[u32]) -> Vec<Option<u32>> {
    let round_of: BTreeMap<(u32, u32), u32> = (crate::analysis::census::rounds(devices)
        .into_iter()
        .enumerate())
    .flat_map(|(i, pairs)| pairs.into_iter().map(move |p| (p, i as u32)))
    .collect();
    // Only the census's own cases: a sweep's two-rank case on a pair is no round of it.
    (prep.runs.iter())
        .map(|r| match prep.cases[r.case_index].device_ids.as_slice() {
            &[a, b] if r.case_index < prep.census_cases => {
                round_of.get(&(a.min(b), a.max(b))).copied()
            }
            _ => None,
        })
        .collect()
}

/// Runs in flight at once (`--exclusive`: one; else `--jobs`, else the backend's cap) and the
/// retry rules.
fn limits(prep: &Prepared, opts: &Options) -> Limits {
    let run_cfg = &prep.plan.run;
    Limits {
        jobs: if opts.exclusive || run_cfg.exclusive {
            Some(1)
        } else {
            opts.jobs.or(prep.backend.max_in_flight())
        },
        faults: faults::Policy::from_config(run_cfg),
    }
}

/// What every results file records: tool, plan, host, stack roots and facts, seed, backend.
fn provenance(prep: &Prepared) -> Provenance {
    let defs: Vec<_> = prep.stacks.iter().map(|s| (**s).clone()).collect();
    let mut provenance = crate::store::provenance::collect(
        Some(&prep.plan.hash),
        Some(&prep.plan.source),
        &crate::stack::resolve::roots(&defs),
        Some(prep.seed),
    );
    provenance.executor = Some(prep.backend.name().to_string());
    for stack in &prep.stacks {
        // argv[0] when it is written literally (a template such as `{{ run_dir }}/x` is built).
        let program = match &stack.def.command {
            Some(CommandSpec::Argv(argv)) => argv.first().filter(|p| !p.contains("{{")),
            _ => None,
        };
        crate::store::provenance::add_stack_facts(
            &mut provenance,
            &stack.name,
            program.map(String::as_str),
            &stack.def.env,
        );
        crate::store::provenance::add_definition(
            &mut provenance,
            &stack.name,
            crate::store::fingerprint::definition_fingerprint(&stack.def),
        );
    }
    // Per (stack, op) run: the stack's default variant of the op (its first algorithm), so a
    // report of this run dir knows each stack's default without its definition.
    let ops: std::collections::BTreeSet<(usize, crate::model::case::Op)> = (prep.runs.iter())
        .map(|r| (r.stack, prep.cases[r.case_index].op))
        .collect();
    for (si, op) in ops {
        let stack = &prep.stacks[si];
        if let Some(first) = stack.def.default_variant(op) {
            crate::store::provenance::add_default_variant(
                &mut provenance,
                &stack.name,
                op.as_str(),
                first.as_str(),
            );
        }
    }
    // Per (stack, variant) run: the variant's settings by name (hccl's expansion mode).
    let pairs: std::collections::BTreeSet<(usize, &str)> = prep
        .runs
        .iter()
        .map(|r| (r.stack, prep.cases[r.case_index].variant.as_str()))
        .collect();
    for (si, variant) in pairs {
        let stack = &prep.stacks[si];
        let settings = crate::stack::render::variant_settings(&stack.name, &stack.def, variant);
        crate::store::provenance::add_variant_settings(
            &mut provenance,
            &stack.name,
            variant,
            settings,
        );
    }
    provenance
}

/// The writers of the results files and case files (threads), the progress view and the steps
/// after `collect`.
fn outputs(
    prep: &Prepared,
    run_dir: &Arc<RunDir>,
    provenance: &Provenance,
    cases: &Arc<Vec<Case>>,
    after: Vec<(String, AfterStep)>,
    pending: usize,
    quiet: bool,
) -> Result<Outputs> {
    let stack_of = |r: &crate::engine::dispatch::PlannedRun| prep.stacks[r.stack].name.clone();
    let header = Header {
        campaign: prep.plan.campaign.name.clone(),
        timestamp: run_dir.timestamp.clone(),
        provenance: provenance.clone(),
        metrics: (prep.stacks.iter())
            .filter_map(|s| s.def.metric.map(|m| (s.name.clone(), m)))
            .collect(),
    };
    let results_files = ResultsFiles::start(run_dir.clone(), header, prep.runs.len())?;
    let case_files = CaseFiles::new(
        run_dir.clone(),
        cases.clone(),
        (prep.runs.iter()).map(|r| (r.case_id.clone(), r.case_index, stack_of(r))),
    );
    Ok(Outputs {
        results_files,
        case_files: Arc::new(case_files),
        case_thread: None,
        progress: Progress::new(pending, quiet || pending == 0),
        after,
        after_failed: Vec::new(),
        concluded: None,
    })
}
