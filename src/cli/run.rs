//! `campaign run`: load the plan (or the built-in smoke plan), run it, print the summary and map
//! the outcome to the exit code (0 all passed, 1 any fail/timeout/blocked, 3 interrupted, 5
//! nothing ran: every run unavailable or skipped).
//! `resume` shares the summary; the report step is `engine::report_step`'s.

use std::path::Path;

use crate::cli::args::RunArgs;
use crate::engine::{self, Options};
use crate::error::{exit, Error, Result};
use crate::model::results::RunStatus;

/// The built-in smoke plan (`campaign run` with no plan).
pub(crate) const SMOKE_PLAN: &str = include_str!("../../plans/smoke.toml");

pub(crate) fn options(args: &RunArgs) -> Options {
    Options {
        stacks: args.stacks.clone(),
        filter: args.filter.clone(),
        case_glob: args.cases.clone(),
        repeats: args.repeats,
        budget: args.budget,
        ..exec_options(&args.exec)
    }
}

/// What `run` and `resume` share: `--jobs`, `--exclusive`, `-q`, `--results-dir`, `--executor`.
pub(crate) fn exec_options(exec: &crate::cli::args::ExecOptions) -> Options {
    Options {
        jobs: exec.jobs,
        exclusive: exec.exclusive,
        quiet: exec.quiet,
        results_dir: exec.results_dir.clone(),
        executor: exec.executor,
        cancel_on_interrupt: exec.cancel_on_interrupt,
        ask_cancel: std::io::IsTerminal::is_terminal(&std::io::stdin())
            .then_some(crate::cli::prompt::ask_cancel as crate::executor::AskCancel),
        ..Options::default()
    }
}

/// What every command that starts a campaign (`run`, `census`, `calibrate`) does first: refuse
/// `--jobs 0`, honour a Ctrl-C from here on (a big plan takes a while to read and prepare), and
/// give the command line's overrides of the plan.
pub(crate) fn begin(
    exec: &crate::cli::args::ExecOptions,
    repeats: Option<u32>,
    budget: Option<std::time::Duration>,
) -> Result<crate::plan::Overrides> {
    if exec.jobs == Some(0) {
        return Err(Error::Usage("--jobs must be at least 1".into()));
    }
    crate::engine::interrupt::listen_during_preparation();
    Ok(crate::plan::Overrides {
        executor: exec.executor,
        repeats,
        budget,
    })
}

pub(crate) fn run(args: &RunArgs) -> Result<i32> {
    let cli = begin(&args.exec, args.repeats, args.budget)?;
    let mut plan = match &args.plan {
        Some(p) => crate::plan::load_with(p, cli)?,
        None => crate::plan::parse_with(SMOKE_PLAN, Path::new("plans/smoke.toml"), cli)?,
    };
    if let Some(kinds) = &args.profile {
        // The run dir's profiles.json records them, so a resume makes the same profiles.
        plan.profile.kinds = kinds.0.clone();
    }
    run_plan(plan, &args.exec, options(args), args.yes)
}

/// Run a loaded plan (`run`'s plan file, `census`'s generated plan): the report template
/// checked first, the plan's warnings said, the campaign run, its summary printed.
pub(crate) fn run_plan(
    plan: crate::model::plan::Plan,
    exec: &crate::cli::args::ExecOptions,
    opts: Options,
    yes: bool,
) -> Result<i32> {
    // A report template that cannot render fails now, not after every run has been paid for.
    crate::report::preview::check_plan(&plan, exec.template.as_deref())?;
    // The same warnings `validate` and `dry-run` print: a run must not hide what they show.
    for w in &plan.warnings {
        crate::tell!("warning: {w}");
    }
    let after =
        engine::report_step::report_step(&plan, exec.template.clone(), exec.results_dir.clone());
    let prepared = engine::prepare(plan, &opts)?;
    if let Some(w) = prepared.oversubscription() {
        crate::tell!("warning: {w}");
    }
    confirm_size(prepared.runs.len(), yes)?;
    // A Ctrl-C between preparing and the campaign's own listener still stops cleanly.
    crate::engine::interrupt::check_preparation()?;
    let done = engine::execute(prepared, &opts, after)?;
    conclude(&done, opts.quiet)
}

/// Above [`engine::prepare::CONFIRM_RUNS`] runs, ask at a terminal; elsewhere refuse unless
/// `--yes` (a typo in an axis must not start days of work in a script).
fn confirm_size(runs: usize, yes: bool) -> Result<()> {
    let limit = crate::engine::prepare::CONFIRM_RUNS;
    if runs <= limit || yes {
        return Ok(());
    }
    if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        if crate::cli::prompt::ask_start(runs) {
            return Ok(());
        }
        return Err(Error::Usage(format!(
            "not started: {runs} runs were declined"
        )));
    }
    Err(Error::Usage(format!(
        "this campaign has {runs} runs, more than {limit}; pass --yes to start it (or narrow it with --filter/--stacks)"
    )))
}

/// Print the summary of a finished (or interrupted) campaign and map it to the exit code:
/// 0 all passed, 1 any fail/timeout/blocked, 3 interrupted (with the resume hint).
///
/// The session printed `run dir:` when it began; a progress view scrolls that away, so it is
/// repeated under the summary — but not under `-q`, whose whole output is that line and the
/// summary.
pub(crate) fn conclude(done: &engine::Finished, quiet: bool) -> Result<i32> {
    let counts = &done.counts;
    let summary: Vec<String> = counts
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(s, n)| format!("{n} {s}"))
        .collect();
    crate::say!(
        "{} runs: {}",
        done.runs,
        if summary.is_empty() {
            "none".to_string()
        } else {
            summary.join(", ")
        }
    );
    for (status, case_id, stack, error) in &done.failures {
        use crate::model::text::visible;
        crate::say!(
            "  {status} {}/{}: {}",
            visible(case_id),
            visible(stack),
            visible(error.as_deref().unwrap_or(""))
        );
    }
    for (device, why) in &done.quarantined {
        crate::say!("  device {device} quarantined: {why}");
    }
    if !quiet {
        crate::say!("run dir: {}", done.run_dir.display());
    }
    if done.interrupted {
        return Err(crate::engine::interrupt::interrupted(&done.run_dir));
    }
    let failed = counts
        .iter()
        .any(|(s, n)| *n > 0 && (s.is_failure() || *s == RunStatus::Blocked));
    let not_run = |s: &RunStatus| {
        matches!(
            s,
            RunStatus::Unavailable | RunStatus::Skipped | RunStatus::Spared
        )
    };
    let ran_nothing = done.runs > 0 && counts.iter().all(|(s, n)| *n == 0 || not_run(s));
    if ran_nothing && !failed {
        crate::tell!(
            "nothing was run: every planned run is unavailable or skipped (see the reasons in results.csv; `campaign doctor` says why a stack cannot run here)"
        );
        return Ok(exit::NOTHING_RAN);
    }
    if failed {
        return Ok(exit::RUNS_FAILED);
    }
    if !done.after_failed.is_empty() {
        crate::tell!(
            "the runs are recorded, but the report was not written; once the problem is fixed, `campaign report {}` renders it",
            done.run_dir.display()
        );
        return Ok(exit::REPORT_FAILED);
    }
    Ok(exit::OK)
}
