//! The runs a plan makes, counted as `validate` reports them: how many, which are planned skips
//! and why, and how many oversubscribe this machine's CPUs.
//!
//! Counted from the sweep's cases without making any row (case id, JSON, hash). `validate`
//! counts during the plan's own check walk ([`RunCounter`] fed by `plan::load_observing`), so a
//! million-case plan is walked once, not twice (issue 50, item 4); [`planned_runs`] walks the
//! sweep itself for a plan already loaded.

use std::collections::BTreeMap;

use crate::error::Result;
use crate::model::case::Case;
use crate::model::plan::{ExecutorKind, Plan};
use crate::model::stack::{Resource, StackDef};
use crate::plan::variants::Claims;

/// What `validate` says of the runs a plan makes, as `run` would make them (the plan's stacks
/// and `[run] repeats`, this machine's CPUs): how many, how many are planned skips and why, and
/// the oversubscription warning.
pub(crate) struct PlannedRuns {
    pub(crate) runs: u64,
    pub(crate) skipped: u64,
    /// (stack, reason) → runs, as `dry-run`'s summary lists them.
    pub(crate) why: BTreeMap<(String, String), u64>,
    pub(crate) oversubscription: Option<String>,
}

/// Counts one repeat's runs case by case; [`RunCounter::finish`] multiplies by the repeats.
/// Skips are the ones `run` plans: a stack's limits and constraints, more nodes than one
/// machine, a placement the pool cannot give.
pub(crate) struct RunCounter {
    /// (plan index, name, definition, leases CPUs) of each stack: a stack runs only its own
    /// variants.
    stacks: Vec<(usize, String, StackDef, bool)>,
    stack_count: usize,
    one_machine: bool,
    cpus: usize,
    pairs: u64,
    skipped: u64,
    over: u64,
    max_p: u32,
    why: BTreeMap<(String, String), u64>,
}

impl RunCounter {
    /// A counter for `plan`'s stacks (definitions resolved as a run resolves them).
    pub(crate) fn new(plan: &Plan) -> Result<RunCounter> {
        let defs = crate::stack::registry::resolve(&plan.stack_defs, &plan.source)?;
        let stacks = (plan.stacks.iter().enumerate())
            .filter_map(|(i, s)| {
                let d = defs.get(s)?;
                let cpu = d.resource() == Resource::Cpu;
                Some((i, s.clone(), d.clone(), cpu))
            })
            .collect();
        Ok(RunCounter {
            stacks,
            stack_count: plan.stacks.len(),
            // Slurm grants its own devices: only a local campaign runs on this machine's CPUs.
            one_machine: plan.run.executor != ExecutorKind::Slurm,
            cpus: crate::engine::prepare::machine_cpus(),
            pairs: 0,
            skipped: 0,
            over: 0,
            max_p: 0,
            why: BTreeMap::new(),
        })
    }

    /// Whether a skip of some stack depends on the device pool (a stack that takes only
    /// consecutive ids): then the count needs the plan's final pool, which the check walk
    /// sets only after it (a defaulted pool is sized from the largest case).
    pub(crate) fn needs_final_pool(&self) -> bool {
        (self.stacks.iter()).any(|(_, _, d, _)| {
            d.contiguous_devices == Some(true)
                && matches!(d.resource(), Resource::Npu | Resource::Gpu)
        })
    }

    /// Count `case`, whose (op, variant) the stacks of `mask` ([`Claims::mask`]) run.
    pub(crate) fn add(&mut self, plan: &Plan, case: &Case, mask: u64) {
        self.pairs += Claims::count_in(mask, self.stack_count);
        let mut over_here = 0u64;
        for (i, name, def, cpu) in &self.stacks {
            if !Claims::holds(mask, *i) {
                continue;
            }
            match super::blocks::skip_reason(def, case, &plan.devices, self.one_machine) {
                Some(reason) => {
                    self.skipped += 1;
                    *self.why.entry((name.clone(), reason)).or_default() += 1;
                }
                // Only CPU stacks oversubscribe, and only cases with more ranks than CPUs.
                None if *cpu && self.one_machine && case.p as usize > self.cpus => over_here += 1,
                None => {}
            }
        }
        if over_here > 0 {
            self.over += over_here;
            self.max_p = self.max_p.max(case.p);
        }
    }

    /// The counts of every repeat `plan` makes.
    pub(crate) fn finish(self, plan: &Plan) -> PlannedRuns {
        let repeats = u64::from(plan.run.repeats_max.max(1));
        let mut why = self.why;
        for n in why.values_mut() {
            *n *= repeats;
        }
        let runs = self.pairs * repeats;
        PlannedRuns {
            runs,
            skipped: self.skipped * repeats,
            why,
            oversubscription: crate::engine::prepare::oversubscription_warning(
                self.over * repeats,
                runs,
                self.cpus,
                self.max_p,
            ),
        }
    }
}

/// [`PlannedRuns`] of a loaded `plan`, walking its sweep.
pub(crate) fn planned_runs(plan: &Plan) -> Result<PlannedRuns> {
    let mut counter = RunCounter::new(plan)?;
    let mut sweep = crate::plan::sweep::cases(plan, None)?;
    let claims = sweep.claims().clone();
    while let Some(case) = sweep.next_ref() {
        let case = case?;
        // One look-up of the case's (op, variant) for every stack.
        counter.add(plan, case, claims.mask(case));
    }
    Ok(counter.finish(plan))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `validate` counts during the load's walk: [`RunCounter`] fed by the observer.
    fn counted_in_the_load(path: &std::path::Path) -> (Plan, RunCounter) {
        let mut counter: Option<RunCounter> = None;
        let plan = crate::plan::load_observing(path, &mut |plan, case, mask| {
            (counter.get_or_insert_with(|| RunCounter::new(plan).expect("stacks resolve")))
                .add(plan, case, mask);
        })
        .expect("plan loads");
        (plan, counter.expect("the walk saw cases"))
    }

    #[test]
    fn the_load_walk_counts_what_a_walk_of_the_loaded_plan_counts() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut fast = 0;
        for name in [
            "smoke",
            "collectives",
            "cross_variant",
            "crossover",
            "full_sweep",
            "host_vs_mpi",
            "mpi_algorithms",
            "strong_scaling",
        ] {
            let (plan, counter) = counted_in_the_load(&root.join(format!("plans/{name}.toml")));
            // full_sweep's simpler takes only consecutive ids: its skips need the final pool,
            // and validate walks again for it.
            assert_eq!(counter.needs_final_pool(), name == "full_sweep", "{name}");
            fast += usize::from(!counter.needs_final_pool());
            let once = counter.finish(&plan);
            let again = planned_runs(&plan).expect("counts");
            assert!(once.runs > 0, "{name}");
            assert_eq!(
                (once.runs, once.skipped, &once.why, &once.oversubscription),
                (
                    again.runs,
                    again.skipped,
                    &again.why,
                    &again.oversubscription
                ),
                "{name}"
            );
        }
        assert_eq!(fast, 7);
    }
}
