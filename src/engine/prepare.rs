//! `prepare`: everything about a campaign that can fail on bad input, before anything runs —
//! the cases (plan axes or `--cases` files), the stacks (registry + plan overlays), the seeded
//! stack order, what each run leases, runs whose P exceeds the pool refused, and the session's
//! backend (`executor::backend_for`, its preflight included).
//! `dry-run` stops here; `run` and `resume` hand the result to `drive`.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

use crate::engine::dispatch::PlannedRun;
use crate::engine::schedule::pool::{Need, Pool};
use crate::engine::schedule::scheduler::RunPlan;
use crate::engine::{estimate, health, interrupt};

/// Cases handled between two looks at the Ctrl-C flag while preparing.
const POLL_EVERY: usize = 4096;

/// Above this many runs, `campaign run` asks before starting (or wants `--yes`); documented in
/// docs/plan-format.md ("Limits").
pub(crate) const CONFIRM_RUNS: usize = 100_000;

use crate::error::{Diagnostic, Error, Result};
use crate::executor::{Backend, InterruptPolicy};
use crate::model::case::Case;
pub(crate) use crate::model::plan::MAX_RUNS;
use crate::model::plan::{Placement, Plan};
use crate::model::results::RunStatus;
use crate::model::stack::Resource;
use crate::plan::variants::{Asked, Claims};
use crate::stack::resolve::EngineStack;

/// What the command line adds to a plan.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--stacks a,b` (empty = the plan's).
    pub(crate) stacks: Vec<String>,
    /// `--filter EXPR`.
    pub(crate) filter: Option<String>,
    /// `--cases GLOB`: seed case files instead of the plan's axes.
    pub(crate) case_glob: Option<String>,
    pub(crate) jobs: Option<usize>,
    /// `--repeats N` (None = the plan's `[run] repeats`).
    pub(crate) repeats: Option<u32>,
    /// `--budget` (kept in the journal header's selection, so a resume keeps it).
    pub(crate) budget: Option<std::time::Duration>,
    pub(crate) exclusive: bool,
    pub(crate) quiet: bool,
    /// Replaces `results/campaigns`.
    pub(crate) results_dir: Option<PathBuf>,
    /// `--executor` (None = the plan's `[run] executor`).
    pub(crate) executor: Option<crate::model::plan::ExecutorKind>,
    /// `--cancel-on-interrupt`: on Ctrl-C, stop the campaign's batch jobs without asking.
    pub(crate) cancel_on_interrupt: bool,
    /// How to ask whether to stop the batch jobs on Ctrl-C (None: never ask, leave them).
    pub(crate) ask_cancel: Option<crate::executor::AskCancel>,
}

/// A campaign ready to run.
pub(crate) struct Prepared {
    pub(crate) plan: Plan,
    pub(crate) cases: Vec<Case>,
    /// Each case's point of the sweep (an index, `by_point`): the runs of one point are chained
    /// together, repeat by repeat, in the step graph.
    pub(crate) points: Vec<u32>,
    /// Points of sizes `[adapt] crossover` may add, each with the points it waits for.
    pub(crate) adaptive: std::collections::BTreeMap<u32, (u32, u32)>,
    pub(crate) stacks: Vec<Arc<EngineStack>>,
    pub(crate) runs: Vec<PlannedRun>,
    pub(crate) plans: Vec<RunPlan>,
    pub(crate) pool: Pool,
    /// Seed of the shuffled stack order (recorded in provenance).
    pub(crate) seed: u64,
    /// Where the runs execute: `--executor`, else the plan's `[run] executor` — decided here,
    /// once, for the whole session.
    pub(crate) backend: Arc<dyn Backend>,
    /// How many of `cases`, the first, are a `[census]`'s pairs (all of a census-only plan's;
    /// ahead of a sweep, its census's cases, which run on the census's stack alone and are
    /// judged before any sweep run is placed: `engine::census_step`).
    pub(crate) census_cases: usize,
}

impl Prepared {
    /// `warning: …` when some runs to be executed are CPU runs with more ranks than this
    /// machine has CPUs (they share cores: results rows say `oversubscribed`). `None` when none.
    pub(crate) fn oversubscription(&self) -> Option<String> {
        let cpus = self.pool.cpu_count();
        let (mut over, mut max_p) = (0u64, 0u32);
        for (run, plan) in self.runs.iter().zip(&self.plans) {
            let p = self.cases[run.case_index].p;
            if plan.preset.is_none() && matches!(plan.need, Need::Cpu { .. }) && p as usize > cpus {
                over += 1;
                max_p = max_p.max(p);
            }
        }
        oversubscription_warning(over, self.runs.len() as u64, cpus, max_p)
    }
}

/// The CPUs CPU runs are placed on (as `prepare` sizes the pool).
pub(crate) fn machine_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The one wording `run`, `resume`, `dry-run` and `validate` use for `over` of `runs` runs
/// whose P (up to `max_p`) exceeds the machine's `cpus` CPUs.
pub(crate) fn oversubscription_warning(
    over: u64,
    runs: u64,
    cpus: usize,
    max_p: u32,
) -> Option<String> {
    (over > 0).then(|| {
        format!(
            "{over} of {runs} runs oversubscribe this machine: their P (up to {max_p}) exceeds its \
             {cpus} {}, so their ranks share cores and their timings measure the machine more \
             than the algorithm (results rows say `oversubscribed: true`)",
            if cpus == 1 { "CPU" } else { "CPUs" }
        )
    })
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
pub(crate) fn prepare(plan: Plan, opts: &Options) -> Result<Prepared> {
    crate::engine::interrupt::listen_during_preparation();
    let mut names = crate::plan::select_stacks(&plan, &opts.stacks)?;
    let (cases, claims, added, census_cases) = load_cases(&plan, opts, &names)?;
    // A census ahead of a sweep runs on its own stack, which the sweep may not name: it is in
    // the session's stacks, but the sweep's claims (made above) never give it a sweep case.
    let census_stack = (plan.census.as_ref()).map(|c| c.stack.clone());
    let census_si = census_stack.map(|name| match names.iter().position(|n| *n == name) {
        Some(i) => i,
        None => {
            names.push(name);
            names.len() - 1
        }
    });
    crate::engine::stack_check::check_stacks(&plan, &names)?;
    if cases.is_empty() {
        // The plan's own filter leaving nothing is refused by validation; this is `--filter`.
        let expr = opts.filter.as_deref().unwrap_or("");
        return Err(crate::plan::sweep::no_case_left(expr, plan.case_count));
    }
    // Each case id is made once, for this check and for the runs' ids below.
    let case_ids: Vec<String> = cases.iter().map(Case::case_id).collect();
    let mut seen = HashSet::with_capacity(case_ids.len());
    if let Some(dup) = case_ids.iter().find(|id| !seen.insert(id.as_str())) {
        return Err(Error::invalid(
            &plan.source,
            format!("two cases share the case_id {dup} (their bundles would collide); make the axes differ in a field of the case_id"),
        ));
    }
    let stacks: Vec<Arc<EngineStack>> = crate::stack::resolve::resolve(&plan, &names)?
        .into_iter()
        .map(Arc::new)
        .collect();
    let pool = Pool::new(&plan.devices, machine_cpus());
    // A backend that grants devices places the runs itself: nothing is leased or probed
    // locally, and a run bigger than this machine's pool is fine. Its preflight is one clear
    // environment error before anything is submitted or a run dir exists.
    let on_interrupt = InterruptPolicy {
        cancel_at_once: opts.cancel_on_interrupt,
        ask: opts.ask_cancel,
    };
    let kind = opts.executor.unwrap_or(plan.run.executor);
    let backend = crate::executor::backend_for(kind, &plan, on_interrupt)?;
    let granted = backend.grants_devices();
    // A planned variant the installed library lacks is refused before anything runs.
    crate::engine::variant_check::before_run(&plan, &names, !granted)?;
    let seed = plan.run.seed.unwrap_or_else(rand::random);
    // Repeat r of every stack of a case runs before repeat r + 1 of any, each repeat in its own
    // seeded stack order: a slow machine phase hits every stack alike.
    // With sequential repeats every run up to the most repeats is planned; those past the
    // fewest are optional, and run only while their point's rows are undecided.
    let (min_repeats, repeats) = match opts.repeats {
        Some(n) => (n.max(1), n.max(1)),
        None => (plan.run.repeats.max(1), plan.run.repeats_max.max(1)),
    };
    let pairs = census_cases
        + (cases[census_cases..].iter())
            .map(|c| claims.count(names.len(), c) as usize)
            .sum::<usize>();
    let n_runs = pairs * repeats as usize;
    if n_runs > MAX_RUNS {
        // Memory grows by about 1.7 KB per planned run (docs/performance.md "Huge plans"):
        // refusing here, before any per-run record exists, keeps a campaign within ~2 GB.
        return Err(Error::invalid(
            &plan.source,
            format!(
                "the plan makes {n_runs} runs ({}), more than the maximum of {MAX_RUNS}; split \
                 it into several plans, or narrow it with --filter/--stacks/--repeats",
                crate::plan::variants::breakdown(
                    cases.len() as u64,
                    names.len() as u64,
                    pairs as u64,
                    u64::from(repeats)
                ),
            ),
        ));
    }
    let nodes = backend.nodes();
    check_nodes(&plan, &cases, &case_ids, nodes)?;
    let groups = by_point(&cases, &case_ids);
    let optional_cases: HashSet<usize> = added.iter().map(|a| a.0).collect();
    let (runs, plans) = plan_runs(
        &plan,
        &claims,
        (&cases, &case_ids, &groups),
        &names,
        &stacks,
        &pool,
        (granted, nodes),
        (min_repeats, repeats, seed, n_runs),
        (&optional_cases, census_cases, census_si),
    )?;
    interrupt::check_preparation()?;
    let mut points = vec![0u32; cases.len()];
    for (g, group) in groups.iter().enumerate() {
        for &ci in group {
            points[ci] = g as u32;
        }
    }
    // Each added size's point waits for the points of the two sizes around it.
    let adaptive = (added.iter())
        .map(|&(ci, lo, hi)| (points[ci], (points[lo], points[hi])))
        .collect();
    Ok(Prepared {
        plan,
        cases,
        points,
        adaptive,
        stacks,
        runs,
        plans,
        pool,
        seed,
        backend,
        census_cases,
    })
}

/// The campaign's cases and which stack runs which: a census's pairs ahead of a sweep (their
/// count is the last value), the plan's sweep (or `--cases` files), and the sizes `[adapt]
/// crossover` may add, each with the two cases it waits for.
#[allow(clippy::type_complexity)]
fn load_cases(
    plan: &Plan,
    opts: &Options,
    names: &[String],
) -> Result<(Vec<Case>, Claims, Vec<(usize, usize, usize)>, usize)> {
    let mut census = Vec::new();
    if let Some(sub) = crate::plan::census_only(plan) {
        for case in crate::plan::sweep::cases(&sub, None)? {
            census.push(case?);
        }
    }
    // Which stack runs which case: its variant is the stack's algorithm (`plan::variants`, the
    // sweep's own table); seed case files (`--cases`) offer every case to every stack.
    let (sweep, claims): (Vec<Case>, Claims) = match &opts.case_glob {
        Some(g) => (glob_cases(g)?, Claims::new(Asked::Files, &[], &[])),
        None => {
            // Exactly the plan's count (fewer under `--filter`): a growing Vec would hold twice
            // its final size while it is copied to the next capacity.
            let bound = usize::try_from(plan.case_count).unwrap_or(0);
            let mut out = Vec::with_capacity(bound);
            let sweep = crate::plan::sweep::cases_on(plan, names, opts.filter.as_deref())?;
            let claims = sweep.claims().clone();
            for (i, case) in sweep.enumerate() {
                if i % POLL_EVERY == 0 {
                    interrupt::check_preparation()?;
                }
                out.push(case?);
            }
            out.shrink_to_fit();
            (out, claims)
        }
    };
    // A census-only plan's cases are all the census's.
    let census_cases = match census.len() {
        0 if plan.census.is_some() => sweep.len(),
        n => n,
    };
    let mut cases = census;
    cases.extend(sweep);
    // `[adapt] crossover`: the sizes bisection may add, planned ahead as optional points.
    let added = match (&opts.case_glob, plan.adapt.crossover) {
        (None, true) => {
            crate::engine::adapt::expand(&mut cases, &plan.rounds, plan.adapt.resolution)
        }
        _ => Vec::new(),
    };
    Ok((cases, claims, added, census_cases))
}

/// Case indices grouped by point of the sweep (`Case::point_id`), points in order of first
/// appearance, cases in sweep order within a point.
fn by_point(cases: &[Case], case_ids: &[String]) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut at: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for (ci, case) in cases.iter().enumerate() {
        let point = case.point_id(&case_ids[ci]);
        let g = *at.entry(point).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[g].push(ci);
    }
    groups
}

/// Every run — each case `repeats` times, a point's cases together repeat by repeat, each
/// repeat in its own seeded stack order — with what it leases (nothing when the backend grants
/// devices) and its preset (`skipped` when the stack does not support the case). Runs whose P
/// exceeds the pool are refused, all named at once.
#[allow(clippy::too_many_arguments)]
fn plan_runs(
    plan: &Plan,
    claims: &Claims,
    (cases, case_ids, groups): (&[Case], &[String], &[Vec<usize>]),
    names: &[String],
    stacks: &[Arc<EngineStack>],
    pool: &Pool,
    (granted, nodes): (bool, Option<u32>),
    (min_repeats, repeats, seed, n_runs): (u32, u32, u64, usize),
    (added, census_cases, census_si): (&HashSet<usize>, usize, Option<usize>),
) -> Result<(Vec<PlannedRun>, Vec<RunPlan>)> {
    // One stack order per (case, repeat).
    let mut orders = estimate::stack_orders(
        names.len(),
        cases.len() * repeats as usize,
        plan.run.order,
        seed,
    );
    let mut runs = Vec::with_capacity(n_runs);
    let mut plans = Vec::with_capacity(n_runs);
    let mut refused = Vec::new();
    let mut platform_missing = std::collections::HashMap::new();
    // A point's cases (its variants: each stack runs its own) run together, repeat by repeat:
    // repeat k of every (case, stack) of one point side by side in time, so the report's
    // paired verdicts compare runs that shared the machine's phase (`analysis::verdict`,
    // interleaved repeats). Points keep the sweep's order.
    let rounds = groups
        .iter()
        .flat_map(|group| (1..=repeats).flat_map(move |r| group.iter().map(move |&ci| (ci, r))));
    for (k, (ci, repeat)) in rounds.enumerate() {
        if k % POLL_EVERY == 0 {
            interrupt::check_preparation()?;
        }
        let case = &cases[ci];
        let case_id = crate::model::results::run_id(&case_ids[ci], repeat);
        let on = claims.mask(case);
        let order = orders.next().unwrap_or_default();
        // A census's pair runs on the census's stack alone, pinned to its two devices.
        let census = ci < census_cases;
        let order = match census_si {
            Some(si) if census => vec![si],
            _ => order,
        };
        for si in order {
            if !census && !Claims::holds(on, si) {
                // Not this stack's variant: no run at all (never a row under a variant the
                // stack did not run).
                continue;
            }
            let name = &names[si];
            let stack = &stacks[si];
            let need = run_need(granted, census, stack, case, pool);
            let preset = stack
                .def
                .unsupported_reason(case)
                .or_else(|| one_machine_reason(case, nodes))
                .or_else(|| {
                    stack.def.placement_reason(
                        case,
                        &plan.devices.ids,
                        census || plan.devices.placement == crate::model::plan::Placement::Pinned,
                    )
                })
                .map(|r| (RunStatus::Skipped, r))
                .or_else(|| {
                    // `requires_on`: what this platform alone needs (looked up once per pair).
                    let missing = platform_missing
                        .entry((si, case.platform))
                        .or_insert_with(|| missing_on(stack, case.platform));
                    missing.clone().map(|r| (RunStatus::Unavailable, r))
                });
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
            // An added size runs only where a crossover needs it; a repeat past the fewest only
            // while its point is undecided.
            run_plan.optional = repeat > min_repeats || added.contains(&ci);
            run_plan.census = census;
            if matches!(
                run_plan.need,
                Need::Devices { .. } | Need::Contiguous { .. }
            ) {
                run_plan.health_probe = health::probe_key(stack, plan.devices.probe.as_ref());
            }
            plans.push(run_plan);
        }
    }
    if !refused.is_empty() {
        return Err(Error::Invalid(refused));
    }
    Ok((runs, plans))
}

/// What one run leases: nothing when the backend grants devices; a census's pair exactly its
/// two devices, whatever the sweep's placement; else [`need`].
fn run_need(granted: bool, census: bool, stack: &EngineStack, case: &Case, pool: &Pool) -> Need {
    match (granted, need(stack, case, pool)) {
        (true, _) => Need::Nothing,
        (false, Need::Devices { p, .. } | Need::Contiguous { p }) if census => Need::Devices {
            p,
            pinned: Some(case.device_ids.clone()),
        },
        (false, need) => need,
    }
}

/// What `stack` lacks on `platform` (`requires_on`), with its hint; None when nothing.
fn missing_on(stack: &EngineStack, platform: crate::model::case::Platform) -> Option<String> {
    let root = stack.root.as_ref().ok().and_then(|r| r.as_deref());
    let m = crate::stack::availability::missing_on(&stack.def, platform, root);
    (!m.is_empty()).then(|| match &stack.def.hint {
        Some(hint) => format!("{} ({hint})", m.join(", ")),
        None => m.join(", "),
    })
}

/// Why a multi-node case cannot run where every run stays on this machine (a planned skip;
/// `dry-run` lists it alike).
pub(crate) fn one_machine_reason(case: &Case, nodes: Option<u32>) -> Option<String> {
    (nodes.is_none() && case.nodes > 1).then(|| {
        format!(
            "nodes = {}: this executor runs every run on this one machine (a multi-node case needs an executor whose runs span nodes)",
            case.nodes
        )
    })
}

/// Cases asking for more nodes than the cluster has are refused in one message, before
/// anything is submitted (the cluster would otherwise hold them pending forever).
fn check_nodes(plan: &Plan, cases: &[Case], ids: &[String], nodes: Option<u32>) -> Result<()> {
    let Some(have) = nodes else { return Ok(()) };
    let over: Vec<(&String, u32)> = (cases.iter().zip(ids))
        .filter(|(c, _)| c.nodes > have)
        .map(|(c, id)| (id, c.nodes))
        .collect();
    let Some(&(first, most)) = over.iter().max_by_key(|(_, n)| *n) else {
        return Ok(());
    };
    Err(Error::invalid(
        &plan.source,
        format!(
            "{} case(s) ask for more nodes than the cluster has ({have}): e.g. case {first} asks for {most} nodes; nothing was submitted (lower `nodes`, or run where the partition has enough nodes)",
            over.len()
        ),
    ))
}

/// What one run of `stack` on `case` leases.
pub(crate) fn need(stack: &EngineStack, case: &Case, pool: &Pool) -> Need {
    match stack.def.resource() {
        Resource::None => Need::Nothing,
        Resource::Cpu => Need::Cpu {
            slots: pool.cpu_need(case.p as usize),
        },
        Resource::Npu | Resource::Gpu
            if stack.def.contiguous_devices == Some(true)
                && pool.placement() != Placement::Pinned =>
        {
            Need::Contiguous { p: case.p as usize }
        }
        Resource::Npu | Resource::Gpu => Need::Devices {
            p: case.p as usize,
            pinned: (pool.placement() == Placement::Pinned).then(|| case.device_ids.clone()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::case::{Op, Variant};

    /// Each stack's variants of one point are one group, points in sweep order: what puts
    /// repeat r of host's ring and of mpi's default at 256 side by side in time.
    #[test]
    fn cases_group_by_point_of_the_sweep() {
        let v = |n: &str| -> Variant { n.parse().unwrap() };
        let cases: Vec<Case> = [
            ("mesh", 256, Op::Allreduce),
            ("mesh", 4096, Op::Allreduce),
            ("ring", 256, Op::Allreduce),
            ("default", 256, Op::Allreduce),
            ("ring", 4096, Op::Allreduce),
            ("tree", 256, Op::Broadcast),
        ]
        .into_iter()
        .map(|(n, count, op)| Case::new(v(n), 2, count).with_op(op))
        .collect();
        let ids: Vec<String> = cases.iter().map(Case::case_id).collect();
        assert_eq!(by_point(&cases, &ids), [vec![0, 2, 3], vec![1, 4], vec![5]]);
    }
}
