//! Stack definitions checked before anything runs: what `run` would otherwise find only after
//! it made a run dir. Each stack of the plan is given to the same code a run uses —
//! `stack::parsers::make` (parser known, regexes compiled, marker names) and
//! `stack::render` (command non-empty, string command needs `shell`, reserved `CAMPAIGN_*`
//! env keys, every template parsed and rendered in strict mode against the plan's first case,
//! as are `probe`, `build`, `ready`, `ready_on`, contract commands, `ran.expect`, templated
//! `requires` paths and `where` constraints, each in the scope a run gives it) — so the rules
//! cannot drift. The plan's own run-time templates (`[devices] probe`, a backend's submission
//! templates) are rendered here too. `validate`, `dry-run` and `prepare` call it; it runs nothing and
//! prints nothing.

use std::path::PathBuf;

use crate::error::{Diagnostic, Error, Result};
use crate::model::case::{Case, Variant};
use crate::model::plan::Plan;
use crate::model::stack::{CommandSpec, StackDef};
use crate::stack::availability::is_path_entry;
use crate::stack::parsers::{self, ParseContext};
use crate::stack::render::{
    render, render_build, render_probe, render_ran_expect, render_ready, render_ready_on,
    render_ready_probe, render_requirement, RenderContext,
};

/// Placeholder paths for the sample render: a run renders real ones of the same shape.
const SAMPLE_RUN_DIR: &str = "/campaign-check/run";
const SAMPLE_ROOT: &str = "/campaign-check/root";

/// Check the definitions of `names` (the plan's stacks, after any `--stacks`) as the plan
/// resolves them, and the plan's own templates a run renders (`[devices] probe`, a backend's
/// submission templates). All problems of all stacks are reported together (exit 2).
pub(crate) fn check_stacks(plan: &Plan, names: &[String]) -> Result<()> {
    let defs = crate::stack::registry::resolve(&plan.stack_defs, &plan.source)?;
    let cases = sample_cases(plan);
    let mut problems = Vec::new();
    let mut pool_probe_checked = false;
    for name in names {
        let Some(def) = defs.get(name) else {
            continue; // an unknown name is the plan's own error, reported by validation
        };
        // The cases this stack runs (a template need not render for a case it skips); the
        // first case when it runs none of them, as before any case could be told apart.
        let mut runs: Vec<&Case> = (cases.iter())
            .filter(|c| def.unsupported_reason(c).is_none())
            .collect();
        if runs.is_empty() {
            runs.push(&cases[0]);
        }
        // One case's problems are the stack's: the next case would repeat them.
        for case in &runs {
            let found = definition_problems(plan, name, def, case);
            if !found.is_empty() {
                problems.extend(found);
                break;
            }
        }
        let mut constraint_keys = Vec::new();
        for case in &cases {
            for (key, why) in def.constraint_problems(case) {
                if constraint_keys.contains(&key) {
                    continue;
                }
                let field = format!("stacks.{name}.{key}");
                problems.push(crate::plan::locate(
                    plan,
                    &field,
                    format!("stack `{name}`: {why}"),
                ));
                constraint_keys.push(key);
            }
        }
        // The pool's probe runs with the definition of a stack that has none of its own, in
        // the same scope for all: rendered once, with the first stack's definition (also when
        // every stack has its own probe: a plan's template is checked whether it runs or not).
        if let (Some(argv), false) = (&plan.devices.probe, pool_probe_checked) {
            pool_probe_checked = true;
            let mut with_pool = def.clone();
            with_pool.probe = Some(CommandSpec::Argv(argv.clone()));
            // Only the probe's own arguments: the stack's env and cwd are the stack's to report.
            with_pool.env.clear();
            with_pool.cwd = None;
            for case in &runs {
                let ctx = sample_context(case, name, &with_pool);
                if let Err(e) = render_probe(name, &with_pool, &ctx) {
                    problems.extend(relocate_to(plan, "devices", "", e));
                    break;
                }
            }
        }
    }
    // The backends' own templates, rendered as a submission would.
    let backend = crate::executor::template_problems(plan);
    problems
        .extend((backend.into_iter()).map(|(field, why)| crate::plan::locate(plan, &field, why)));
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Error::Invalid(problems))
    }
}

/// Everything of `def` a run of `case` would parse or render, given the same code a run uses.
fn definition_problems(plan: &Plan, name: &str, def: &StackDef, case: &Case) -> Vec<Diagnostic> {
    let ctx = sample_context(case, name, def);
    let pctx = ParseContext {
        n_bytes: case.n_bytes(),
        p: case.p,
        warmup: case.warmup_rounds,
        timed: case.timed_rounds,
        argv: Vec::new(),
    };
    let mut results = vec![
        parsers::make(def, &pctx).map(|_| ()),
        render(name, def, &ctx).map(|_| ()),
        render_probe(name, def, &ctx).map(|_| ()),
        render_build(name, def, &ctx.run_dir, ctx.root.as_deref()).map(|_| ()),
        render_ran_expect(name, def, &ctx).map(|_| ()),
    ];
    results.extend(readiness(name, def, &ctx));
    (results.into_iter())
        .filter_map(|r| r.err())
        .flat_map(|e| relocate(plan, name, e))
        .collect()
}

/// The context a run of `case` on stack `name` would render against, with placeholder paths
/// of the same shape as a run's.
fn sample_context(case: &Case, name: &str, def: &StackDef) -> RenderContext {
    let run_dir = PathBuf::from(SAMPLE_RUN_DIR);
    let bundle_dir = run_dir.join("cases").join(case.case_id()).join(name);
    RenderContext {
        case: case.clone(),
        devices: case.device_ids.clone(),
        warmup: case.warmup_rounds,
        timed: case.timed_rounds,
        case_file: run_dir.join("cases").join(case.case_id()).join("case.json"),
        bundle_dir,
        run_dir,
        root: def.root.as_ref().map(|_| PathBuf::from(SAMPLE_ROOT)),
        campaign_exe: PathBuf::from("campaign"),
    }
}

/// What runs before any run, in the scopes a run gives it: `ready`, each `ready_on.<platform>`,
/// each `contract[i].command` (`doctor --contract` runs them as readiness probes) and each
/// templated `requires` / `requires_on` path entry.
fn readiness(name: &str, def: &StackDef, ctx: &RenderContext) -> Vec<Result<()>> {
    let root = ctx.root.as_deref();
    let cwd = ctx.run_dir.as_path();
    let mut out = vec![render_ready(name, def, root, cwd).map(|_| ())];
    for platform in def.ready_on.keys() {
        out.push(render_ready_on(name, def, *platform, root, cwd).map(|_| ()));
    }
    for (i, item) in def.contract.iter().enumerate() {
        let key = format!("contract[{i}].command");
        out.push(render_ready_probe(name, &key, &item.command, None, def, root, cwd).map(|_| ()));
    }
    let lists = std::iter::once(("requires".to_string(), &def.requires)).chain(
        (def.requires_on.iter()).map(|(platform, list)| (format!("requires_on.{platform}"), list)),
    );
    for (key, list) in lists {
        for (i, req) in list.iter().enumerate() {
            if is_path_entry(req) {
                let field = format!("{key}[{i}]");
                out.push(render_requirement(name, &field, req, root).map(|_| ()));
            }
        }
    }
    out
}

/// Most cases the templates are rendered against, and most cases looked at to find them.
const SAMPLE_CASES: usize = 16;
const SAMPLE_SCAN: usize = 4096;

/// The cases the templates are rendered against: the plan's first case, then its first cases
/// of other shapes (op, variant, dtype, platform, p, count, layout) — so a template that
/// breaks only on some cases (`{% if p > 2 %}…`) is found — at most [`SAMPLE_CASES`] of the
/// first [`SAMPLE_SCAN`]. Never empty: a stand-in when the plan makes none (validation reports
/// that itself).
fn sample_cases(plan: &Plan) -> Vec<Case> {
    let mut out: Vec<Case> = Vec::new();
    let mut shapes = std::collections::HashSet::new();
    if let Ok(iter) = crate::plan::sweep::cases(plan, None) {
        for case in iter.take(SAMPLE_SCAN).filter_map(|c| c.ok()) {
            let shape = (
                case.op,
                case.variant,
                case.dtype,
                case.platform,
                case.p,
                case.count,
                case.nodes,
                case.ranks_per_node,
            );
            if shapes.insert(shape) {
                out.push(case);
                if out.len() == SAMPLE_CASES {
                    break;
                }
            }
        }
    }
    if out.is_empty() {
        out.push(Case::new(Variant::Mesh, 2, 1));
    }
    out
}

/// Stack errors name the definition's key (`command[0]`, `env.FOO`); point them at the plan's
/// `[stacks.NAME]` line for that key when the plan writes it.
fn relocate(plan: &Plan, name: &str, e: Error) -> Vec<Diagnostic> {
    relocate_to(
        plan,
        &format!("stacks.{name}"),
        &format!("stack `{name}`: "),
        e,
    )
}

/// Point the diagnostics of `e` (fields relative to `table`) at their lines in the plan.
fn relocate_to(plan: &Plan, table: &str, prefix: &str, e: Error) -> Vec<Diagnostic> {
    match e {
        Error::Invalid(diags) => diags
            .into_iter()
            .map(|d| {
                let field = format!("{table}.{}", d.field.as_deref().unwrap_or("command"));
                crate::plan::locate(plan, &field, format!("{prefix}{}", d.message))
            })
            .collect(),
        other => vec![crate::plan::locate(plan, table, format!("{prefix}{other}"))],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(stack: &str) -> String {
        let text = format!(
            "[campaign]\nname = \"t\"\n[case]\nvariant = \"mesh\"\np = 2\ncount = 64\n[axes]\nstacks = [\"mine\"]\n[stacks.mine]\n{stack}\n"
        );
        let plan =
            crate::plan::parse_with(&text, std::path::Path::new("t.toml"), Default::default())
                .unwrap_or_else(|e| panic!("{e}"));
        match check_stacks(&plan, &plan.stacks) {
            Ok(()) => String::new(),
            Err(e) => {
                assert_eq!(e.exit_code(), crate::error::exit::BAD_INPUT);
                e.to_string()
            }
        }
    }

    #[test]
    fn every_run_time_definition_error_is_found_before_running() {
        let cases = [
            (
                "command = [\"echo\"]\nparser = \"regex\"\npatterns = { execute_s = \"([\" }",
                "t.toml:12:26: stacks.mine.patterns.execute_s: stack `mine`: invalid regex",
            ),
            (
                "command = [\"echo\"]\nparser = \"nope\"",
                "t.toml:11:10: stacks.mine.parser: stack `mine`: unknown parser `nope`",
            ),
            (
                "command = \"echo hi\"",
                "t.toml:10:11: stacks.mine.command: stack `mine`: command is one string but shell is not true",
            ),
            (
                "command = []",
                "t.toml:10:11: stacks.mine.command: stack `mine`: empty array",
            ),
            (
                "command = [\"echo\"]\nenv = { CAMPAIGN_CASE_ID = \"x\" }",
                "t.toml:11:28: stacks.mine.env.CAMPAIGN_CASE_ID: stack `mine`: CAMPAIGN_CASE_ID is set by campaign",
            ),
            (
                "command = [\"echo\", \"{{ ranks }}\"]",
                "t.toml:10:20: stacks.mine.command[1]: stack `mine`: template `{{ ranks }}`: undefined variable `ranks`",
            ),
            (
                "command = [\"echo\", \"{% if %}\"]",
                "t.toml:10:20: stacks.mine.command[1]: stack `mine`: template `{% if %}`: syntax error",
            ),
            (
                "command = [\"echo\"]\ncwd = \"{{ nope }}\"",
                "t.toml:11:7: stacks.mine.cwd: stack `mine`: template `{{ nope }}`: undefined variable `nope`",
            ),
            (
                "command = [\"echo\"]\nprobe = [\"{{ zz }}\"]",
                "t.toml:11:10: stacks.mine.probe[0]: stack `mine`: template `{{ zz }}`: undefined variable `zz`",
            ),
            (
                "command = [\"echo\"]\nbuild = [\"{{ devices }}\"]",
                "t.toml:11:10: stacks.mine.build[0]: stack `mine`: template `{{ devices }}`: undefined variable `devices`",
            ),
        ];
        for (stack, want) in cases {
            let got = check(stack);
            assert!(got.contains(want), "{stack}\nwant: {want}\ngot: {got}");
        }
    }

    /// A template that breaks only on some cases is found on them; on a case the stack
    /// skips (it never renders there) it is not a problem.
    #[test]
    fn templates_are_rendered_for_each_shape_of_case_the_stack_runs() {
        let plan = |extra: &str| {
            let text = format!(
                "[campaign]\nname = \"t\"\n[case]\nvariant = \"mesh\"\ncount = 64\n[axes]\np = [2, 4]\nstacks = [\"mine\"]\n[stacks.mine]\ncommand = [\"echo\", \"{{% if p > 2 %}}{{{{ nope }}}}{{% endif %}}\"]\n{extra}"
            );
            crate::plan::parse_with(&text, std::path::Path::new("t.toml"), Default::default())
                .unwrap_or_else(|e| panic!("{e}"))
        };
        let broken = plan("");
        let err = check_stacks(&broken, &broken.stacks)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("t.toml:10:20: stacks.mine.command[1]") && err.contains("`nope`"),
            "{err}"
        );
        let skipped = plan("max_p = 2\n");
        check_stacks(&skipped, &skipped.stacks).unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn good_definitions_and_every_shipped_stack_pass() {
        assert_eq!(
            check("command = [\"echo\", \"{{ p }}\", \"{{ devices_csv }}\"]\nenv = { X = \"{{ case_id }}\" }"),
            ""
        );
        let plan = crate::plan::parse_with(
            "[campaign]\nname = \"t\"\n[case]\nvariant = \"mesh\"\np = 2\ncount = 64\n",
            std::path::Path::new("t.toml"),
            Default::default(),
        )
        .unwrap();
        let all: Vec<String> = crate::stack::registry::shipped().into_keys().collect();
        check_stacks(&plan, &all).unwrap_or_else(|e| panic!("{e}"));
    }
}
