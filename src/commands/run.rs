//! `campaign run`: load the plan (or the built-in smoke plan), run it, print the summary and map
//! the outcome to the exit code (0 all passed, 1 any fail/timeout, 3 interrupted).

use std::path::Path;

use crate::cli::RunArgs;
use crate::engine::{self, Options};
use crate::error::{exit, Error, Result};
use crate::results::RunStatus;

/// The built-in smoke plan (`campaign run` with no plan).
pub const SMOKE_PLAN: &str = include_str!("../../plans/smoke.toml");

pub fn options(args: &RunArgs) -> Options {
    Options {
        stacks: args.stacks.clone(),
        filter: args.filter.clone(),
        case_glob: args.cases.clone(),
        jobs: args.exec.jobs,
        exclusive: args.exec.exclusive,
        quiet: args.exec.quiet,
        results_dir: args.exec.results_dir.clone(),
        executor: args.exec.executor.map(|e| match e {
            crate::cli::ExecutorArg::Local => crate::plan::model::ExecutorKind::Local,
            crate::cli::ExecutorArg::Slurm => crate::plan::model::ExecutorKind::Slurm,
        }),
    }
}

pub fn run(args: &RunArgs) -> Result<i32> {
    if args.exec.jobs == Some(0) {
        return Err(Error::Usage("--jobs must be at least 1".into()));
    }
    let plan = match &args.plan {
        Some(p) => crate::plan::load(p)?,
        None => crate::plan::parse(SMOKE_PLAN, Path::new("plans/smoke.toml"))?,
    };
    let opts = options(args);
    let report_cfg = plan.report.clone();
    let template = args.exec.template.clone();
    // summarize → plot → report, one step after `collect` (the report module does all three).
    let report: engine::AfterStep = Box::new(move |run_dir, results| {
        crate::report::finish_run(results, &report_cfg, template.as_deref(), &run_dir.path)
            .map(|_| ())
    });
    let prepared = engine::prepare(plan, &opts)?;
    let done = engine::execute(prepared, &opts, vec![("report".to_string(), report)])?;
    let counts = done.results.status_counts();
    let summary: Vec<String> = counts
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(s, n)| format!("{n} {s}"))
        .collect();
    println!(
        "{} runs: {}",
        done.results.runs.len(),
        if summary.is_empty() {
            "none".to_string()
        } else {
            summary.join(", ")
        }
    );
    for r in done.results.runs.iter().filter(|r| r.status.is_failure()) {
        println!(
            "  {} {}/{}: {}",
            r.status,
            r.case_id,
            r.stack,
            r.error.as_deref().unwrap_or("")
        );
    }
    println!("run dir: {}", done.run_dir.display());
    if done.interrupted {
        return Err(Error::Interrupted(format!(
            "interrupted; `campaign resume {}` continues",
            done.run_dir.display()
        )));
    }
    let failed = counts
        .iter()
        .any(|(s, n)| *n > 0 && (s.is_failure() || *s == RunStatus::Blocked));
    Ok(if failed { exit::RUNS_FAILED } else { exit::OK })
}
