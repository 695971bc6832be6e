//! Which variant each stack of a plan runs: variants belong to stacks.
//!
//! A case's variant is the algorithm of the stack that runs it, so a stack never appears under a
//! variant it does not have (no "mpi ring" that is one `MPI_Allreduce` paired with the host
//! stack's ring). What the plan asks for ([`Asked`]) is read per stack and per op:
//!
//! - nothing (no `variant` in `[case]` or `[axes]`): each stack's default — its
//!   `default_variant`, else the first algorithm it lists for the op (`variants_by_op`, else
//!   `variants`);
//! - `variant = "*"`: every algorithm each stack lists for the op;
//! - names: each stack runs the named ones it has for the op; a stack with none of them runs its
//!   default, so every stack still answers for every point of the sweep.
//!
//! A stack that lists no algorithms (a user's shell stack that reads `{{ variant }}`) takes
//! every named variant, and `default` ([`Variant::Default`]) when none is named. Which stacks run a case depends only
//! on its (op, variant), so the answers are a small table made once per plan. Seed case files
//! (`[cases] files`, `--cases`) carry their own variant: every stack is offered every file case,
//! and one without that variant is a planned skip, as before.

use crate::error::Result;
use crate::model::case::{Case, Op, Variant};
use crate::model::plan::Plan;
use crate::model::stack::StackDef;

/// What the plan asks for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Asked {
    /// No `variant` anywhere: each stack's default.
    Default,
    /// `variant = "*"`.
    Every,
    /// The named variants, in plan order.
    Named(Vec<Variant>),
    /// Seed case files: each case's own variant.
    Files,
}

impl Asked {
    /// What `plan` asks for.
    pub(crate) fn of(plan: &Plan) -> Asked {
        if !plan.case_files.is_empty() {
            return Asked::Files;
        }
        if plan.every_variant {
            return Asked::Every;
        }
        let named: Vec<Variant> = (plan.case_defaults.get("variant").into_iter())
            .chain(
                (plan.axes.iter())
                    .filter(|a| a.name == "variant")
                    .flat_map(|a| a.values.iter()),
            )
            .filter_map(|v| v.as_str()?.parse().ok())
            .collect();
        if named.is_empty() {
            Asked::Default
        } else {
            Asked::Named(named)
        }
    }
}

/// How a plan's run count is made, for messages: "C cases × S stacks × R repeats" when every
/// stack runs every case, else "P (case, stack) pairs from C cases on S stacks × R repeats".
pub(crate) fn breakdown(cases: u64, stacks: u64, pairs: u64, repeats: u64) -> String {
    if pairs == cases.saturating_mul(stacks) {
        format!("{cases} cases × {stacks} stacks × {repeats} repeats")
    } else {
        format!(
            "{pairs} (case, stack) pairs from {cases} cases on {stacks} stacks × {repeats} repeats"
        )
    }
}

/// The ops `plan`'s sweep can make: its `op` axis, else `[case] op`, else allreduce (names that
/// do not parse are left to validation, which refuses them at their line).
pub(crate) fn swept_ops(plan: &Plan) -> Vec<Op> {
    let names: Vec<&str> = match plan.axes.iter().find(|a| a.name == "op") {
        Some(axis) => axis.values.iter().filter_map(|v| v.as_str()).collect(),
        None => vec![(plan.case_defaults.get("op"))
            .and_then(|v| v.as_str())
            .unwrap_or("allreduce")],
    };
    let ops: Vec<Op> = names.iter().filter_map(|n| n.parse().ok()).collect();
    if ops.is_empty() {
        Op::EVERY.to_vec()
    } else {
        ops
    }
}

/// The variants each stack runs, per op: the answer to "does stack i run this case?".
#[derive(Debug, Clone)]
pub(crate) struct Claims {
    asked: Asked,
    /// (op, variant) → bit i set when stack i runs it (at most 64 stacks are told apart; a
    /// plan with more runs every stack on every variant it has, as before this rule). A short
    /// list searched in order, not a hash map: a plan has a few dozen pairs at most, and the
    /// sweep asks for every case of a million (SipHash of the variant's text was a quarter of
    /// `validate`; issue 50, item 4).
    table: Vec<((Op, Variant), u64)>,
    /// Every variant some stack runs for some op, in a stable order: the values the sweep's
    /// variant axis walks.
    candidates: Vec<Variant>,
}

impl Claims {
    /// The claims of `stacks` (definitions resolved as a run resolves them) under `plan`.
    pub(crate) fn resolve(plan: &Plan, stacks: &[String]) -> Result<Claims> {
        let defs = crate::stack::registry::resolve(&plan.stack_defs, &plan.source)?;
        let list: Vec<StackDef> = (stacks.iter())
            .map(|s| defs.get(s).cloned().unwrap_or_default())
            .collect();
        Ok(Claims::new(Asked::of(plan), &list, &swept_ops(plan)))
    }

    /// The claims of `defs` (in the plan's stack order) for what was `asked`, over the sweep's
    /// `ops` (so the variant axis walks only algorithms of ops the plan has).
    pub(crate) fn new(asked: Asked, defs: &[StackDef], ops: &[Op]) -> Claims {
        let mut table: Vec<((Op, Variant), u64)> = Vec::new();
        let mut candidates: Vec<Variant> = Vec::new();
        let default = Variant::Default;
        for (i, def) in defs.iter().enumerate().take(64) {
            for op in ops.iter().copied() {
                let own = def.algorithms(op);
                let runs: Vec<Variant> = match (&asked, own) {
                    (Asked::Files, _) => continue,
                    (Asked::Named(named), None) => named.clone(),
                    (Asked::Default | Asked::Every, None) => vec![default],
                    (Asked::Default, Some(_)) => def.default_variant(op).into_iter().collect(),
                    (Asked::Every, Some(own)) => own.to_vec(),
                    (Asked::Named(named), Some(own)) => {
                        let mine: Vec<Variant> = (named.iter())
                            .filter(|v| own.contains(v))
                            .copied()
                            .collect();
                        if mine.is_empty() {
                            def.default_variant(op).into_iter().collect()
                        } else {
                            mine
                        }
                    }
                };
                for v in runs {
                    match table.iter_mut().find(|(key, _)| *key == (op, v)) {
                        Some((_, mask)) => *mask |= 1 << i,
                        None => table.push(((op, v), 1 << i)),
                    }
                    if !candidates.contains(&v) {
                        candidates.push(v);
                    }
                }
            }
        }
        // The plan's own names first, in its order, so named sweeps keep their case order.
        if let Asked::Named(named) = &asked {
            let mut ordered: Vec<Variant> = Vec::new();
            for v in named.iter().chain(candidates.iter()) {
                if !ordered.contains(v) {
                    ordered.push(*v);
                }
            }
            candidates = ordered;
        }
        Claims {
            asked,
            table,
            candidates,
        }
    }

    /// The values the sweep's variant axis walks (empty for seed case files).
    pub(crate) fn candidates(&self) -> &[Variant] {
        &self.candidates
    }

    /// Whether the sweep takes `case` at all: some stack runs its (op, variant).
    pub(crate) fn claimed(&self, case: &Case) -> bool {
        self.asked == Asked::Files || self.lookup(case).is_some()
    }

    /// The stacks that run `case`, one bit per stack in plan order (bit i: stack i; a stack
    /// past the 64th runs every case). One table lookup, for callers that ask of every stack.
    pub(crate) fn mask(&self, case: &Case) -> u64 {
        if self.asked == Asked::Files {
            return u64::MAX;
        }
        self.lookup(case).unwrap_or(0)
    }

    /// The mask of `case`'s (op, variant), if some stack runs it.
    fn lookup(&self, case: &Case) -> Option<u64> {
        (self.table.iter())
            .find(|((op, v), _)| *op == case.op && v.same(case.variant))
            .map(|(_, mask)| *mask)
    }

    /// Whether stack number `stack` is in `mask` ([`Claims::mask`]).
    pub(crate) fn holds(mask: u64, stack: usize) -> bool {
        stack >= 64 || mask & (1 << stack) != 0
    }

    /// How many of the first `stacks` stacks run `case` (its runs per repeat).
    pub(crate) fn count(&self, stacks: usize, case: &Case) -> u64 {
        Claims::count_in(self.mask(case), stacks)
    }

    /// How many of the first `stacks` stacks are in `mask` ([`Claims::mask`]).
    pub(crate) fn count_in(mask: u64, stacks: usize) -> u64 {
        let low = if stacks >= 64 {
            mask
        } else {
            mask & ((1u64 << stacks) - 1)
        };
        u64::from(low.count_ones()) + stacks.saturating_sub(64) as u64
    }

    /// Every (op, variant) stack number `stack` (plan order) runs, sorted (empty for seed case
    /// files, whose variants are their own): what a probe of the installed library judges.
    pub(crate) fn runs_of(&self, stack: usize) -> Vec<(Op, Variant)> {
        let mut out: Vec<(Op, Variant)> = (self.table.iter())
            .filter(|(_, mask)| Claims::holds(*mask, stack))
            .map(|(key, _)| *key)
            .collect();
        out.sort_by_key(|(op, v)| (op.as_str(), v.to_string()));
        out
    }

    /// Whether stack number `stack` (plan order) runs `case`.
    pub(crate) fn runs(&self, stack: usize, case: &Case) -> bool {
        Claims::holds(self.mask(case), stack)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(name: &str) -> Variant {
        name.parse().unwrap()
    }

    /// host (its own algorithms per op) and a stack with algorithms `algos` for every op.
    fn defs(algos: Option<&[&str]>) -> Vec<StackDef> {
        let other = StackDef {
            variants: algos.map(|a| a.iter().map(|n| v(n)).collect()),
            ops: Some(Op::EVERY.to_vec()),
            ..StackDef::default()
        };
        vec![crate::stack::registry::host(), other]
    }

    fn case(op: Op, variant: &str) -> Case {
        Case::new(v(variant), 2, 256).with_op(op)
    }

    #[test]
    fn nothing_asked_runs_each_stacks_default_only() {
        let c = Claims::new(
            Asked::Default,
            &defs(Some(&["default", "ring"])),
            &Op::EVERY,
        );
        assert!(c.runs(0, &case(Op::Allreduce, "mesh")));
        assert!(!c.runs(0, &case(Op::Allreduce, "ring")));
        assert!(!c.runs(1, &case(Op::Allreduce, "mesh")));
        assert!(c.runs(1, &case(Op::Allreduce, "default")));
        assert!(c.runs(0, &case(Op::Broadcast, "tree")));
        assert!(!c.claimed(&case(Op::Allreduce, "twophase")));
        assert!(c.candidates().contains(&v("default")));
        assert!(!c.candidates().contains(&v("twophase")));
    }

    /// A stack's `default_variant` is what it runs when nothing is asked, and when none of the
    /// named variants is its own.
    #[test]
    fn the_named_default_variant_is_the_default() {
        let mut list = defs(Some(&["default", "ring"]));
        list[1].default_variant = Some(v("ring"));
        let c = Claims::new(Asked::Default, &list, &Op::EVERY);
        assert!(c.runs(1, &case(Op::Allreduce, "ring")));
        assert!(!c.runs(1, &case(Op::Allreduce, "default")));
        let named = Claims::new(Asked::Named(vec![v("mesh")]), &list, &Op::EVERY);
        assert!(named.runs(1, &case(Op::Allreduce, "ring")));
    }

    #[test]
    fn every_runs_each_stacks_algorithms_of_the_op() {
        let c = Claims::new(Asked::Every, &defs(Some(&["default", "ring"])), &Op::EVERY);
        for name in ["mesh", "ring", "twophase"] {
            assert!(c.runs(0, &case(Op::Allreduce, name)), "{name}");
        }
        assert!(!c.runs(0, &case(Op::Allreduce, "direct")));
        assert!(c.runs(0, &case(Op::Allgather, "direct")));
        assert!(c.runs(1, &case(Op::Allreduce, "default")));
        assert!(c.runs(1, &case(Op::Allreduce, "ring")));
        assert!(!c.runs(1, &case(Op::Allreduce, "mesh")));
    }

    #[test]
    fn named_variants_go_to_the_stacks_that_have_them_and_the_rest_run_their_default() {
        let asked = Asked::Named(vec![v("mesh"), v("twophase")]);
        let c = Claims::new(asked, &defs(Some(&["default", "ring"])), &Op::EVERY);
        assert!(c.runs(0, &case(Op::Allreduce, "mesh")));
        assert!(c.runs(0, &case(Op::Allreduce, "twophase")));
        assert!(
            !c.runs(1, &case(Op::Allreduce, "mesh")),
            "the other stack has no mesh"
        );
        assert!(
            c.runs(1, &case(Op::Allreduce, "default")),
            "so it runs its default"
        );
        // host has neither name for broadcast: its default there.
        assert!(c.runs(0, &case(Op::Broadcast, "tree")));
        assert!(!c.runs(0, &case(Op::Broadcast, "scatter_allgather")));
        assert_eq!(&c.candidates()[..2], &[v("mesh"), v("twophase")]);
        // A stack that has one of the names runs it, not its default.
        let c = Claims::new(
            Asked::Named(vec![v("ring")]),
            &defs(Some(&["default", "ring"])),
            &Op::EVERY,
        );
        assert!(c.runs(1, &case(Op::Allreduce, "ring")));
        assert!(!c.runs(1, &case(Op::Allreduce, "default")));
    }

    #[test]
    fn a_stack_without_algorithms_takes_every_name_or_default() {
        let named = Claims::new(
            Asked::Named(vec![v("mesh"), v("ring")]),
            &defs(None),
            &Op::EVERY,
        );
        assert!(named.runs(1, &case(Op::Allreduce, "mesh")));
        assert!(named.runs(1, &case(Op::Allreduce, "ring")));
        let default = Claims::new(Asked::Default, &defs(None), &Op::EVERY);
        assert!(default.runs(1, &case(Op::Allreduce, "default")));
        assert!(!default.runs(1, &case(Op::Allreduce, "mesh")));
    }

    #[test]
    fn seed_case_files_offer_every_case_to_every_stack() {
        let c = Claims::new(Asked::Files, &defs(Some(&["default"])), &Op::EVERY);
        assert!(c.claimed(&case(Op::Allreduce, "ring")));
        assert!(c.runs(1, &case(Op::Allreduce, "ring")));
        assert!(c.candidates().is_empty());
    }

    #[test]
    fn the_variant_axis_walks_only_algorithms_of_the_swept_ops() {
        let c = Claims::new(Asked::Every, &defs(Some(&["default"])), &[Op::Allreduce]);
        let names: Vec<String> = c.candidates().iter().map(|v| v.to_string()).collect();
        assert_eq!(names, ["mesh", "ring", "twophase", "default"]);
    }
}
