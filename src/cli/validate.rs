//! `campaign validate FILE…`: plans (`.toml`) and seed case files (`.json`).
//!
//! A plan prints `ok: N cases` (warnings on stderr); a case file prints `case_id=<id>` and
//! `equivalence_hash=<hash>` as the old `validate-case` did. Every file is checked before
//! failing, and all problems are reported together (exit 2). Glue only.

use std::path::Path;

use crate::cli::args::ValidateArgs;
use crate::error::{Diagnostic, Error, Result};
use crate::model::case::Case;

pub(crate) fn run(args: &ValidateArgs) -> Result<i32> {
    let many = args.files.len() > 1;
    let mut problems: Vec<Diagnostic> = Vec::new();
    for file in &args.files {
        match validate_one(file, many) {
            Ok(()) => {}
            Err(Error::Invalid(diags)) => problems.extend(diags),
            Err(Error::Io { path, source }) => problems.push(Diagnostic {
                file: path,
                line: None,
                column: None,
                field: None,
                message: format!("cannot read: {source}"),
                snippet: None,
            }),
            Err(other) => return Err(other),
        }
    }
    if problems.is_empty() {
        Ok(0)
    } else {
        Err(Error::Invalid(problems))
    }
}

fn validate_one(file: &Path, many: bool) -> Result<()> {
    match file.extension().and_then(|e| e.to_str()) {
        Some("json") => {
            let case = Case::load(file)?;
            for w in case.warnings() {
                crate::tell!("warning: {}: {w}", file.display());
            }
            if many {
                crate::say!("file={}", file.display());
            }
            crate::say!("case_id={}", case.case_id());
            crate::say!("equivalence_hash={}", case.equivalence_hash());
            // Allreduce case files print as before the op axis.
            if !case.op.is_allreduce() {
                crate::say!("op={}", case.op);
            }
            if let Some(root) = case.root {
                crate::say!("root={root}");
            }
            Ok(())
        }
        Some("toml") => {
            // The planned runs are counted during the load's own walk of the sweep.
            let mut counter: Option<Result<super::dry_run::RunCounter>> = None;
            let plan = crate::plan::load_observing(file, &mut |plan, case, mask| {
                let c = counter.get_or_insert_with(|| super::dry_run::RunCounter::new(plan));
                if let Ok(c) = c {
                    c.add(plan, case, mask);
                }
            })?;
            crate::engine::stack_check::check_stacks(&plan, &plan.stacks)?;
            crate::report::preview::check_plan(&plan, None)?;
            // Planned variants against the installed library (a probe that cannot run warns).
            let probed = crate::engine::variant_check::check_variants(&plan, &plan.stacks)?;
            for w in &plan.warnings {
                crate::tell!("warning: {w}");
            }
            for w in &probed {
                crate::tell!("warning: {w}");
            }
            let planned = match counter.transpose()? {
                Some(c) if !c.needs_final_pool() => c.finish(&plan),
                // A skip that depends on the pool is counted against the final one.
                _ => super::dry_run::planned_runs(&plan)?,
            };
            if let Some(w) = &planned.oversubscription {
                if many {
                    crate::tell!("warning: {}: {w}", file.display());
                } else {
                    crate::tell!("warning: {w}");
                }
            }
            let n = plan.case_count;
            let noun = if n == 1 { "case" } else { "cases" };
            if many {
                crate::say!("{}: ok: {n} {noun}", file.display());
            } else {
                crate::say!("ok: {n} {noun}");
            }
            say_skips(&planned);
            Ok(())
        }
        _ => Err(Error::invalid(
            file,
            "expected a plan (.toml) or a seed case file (.json)",
        )),
    }
}

/// The planned skips (runs a stack cannot make: its limits, constraints, placement), by stack
/// and reason, the way `dry-run` sums them: they are not failures, and a plan that is mostly
/// skips should say so before it runs.
fn say_skips(planned: &super::dry_run::PlannedRuns) {
    if planned.skipped == 0 {
        return;
    }
    crate::say!(
        "planned skips: {} of {} runs (not failures; `campaign dry-run` lists the cases)",
        planned.skipped,
        planned.runs
    );
    const SHOWN: usize = 10;
    for ((stack, reason), n) in planned.why.iter().take(SHOWN) {
        crate::say!(
            "  {stack}: {reason} ({n} {})",
            if *n == 1 { "run" } else { "runs" }
        );
    }
    if planned.why.len() > SHOWN {
        crate::say!("  … and {} more reasons", planned.why.len() - SHOWN);
    }
}
