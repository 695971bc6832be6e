//! A report template rendered before anything runs: `validate` and `run` render the plan's
//! template (or `--template`) against a small representative result set, so an undefined
//! variable, a wrong attribute or a filter applied to the wrong type fails in seconds with the
//! template's line, not after the whole campaign has run.
//!
//! The representative set has what a real one has: the plan's first stacks (two when it has
//! one, so comparisons exist), two P and two counts, repeats, timed and warm-up rounds, and a
//! failed, a timed-out and a skipped run, so loops over failures and skips are entered too.
//! Nothing is written; figures are not drawn (the context lists none).

use std::path::Path;

use crate::error::Result;
use crate::model::case::{Case, Variant};
use crate::model::plan::ReportConfig;
use crate::model::results::{ResultSet, RunResult, RunStatus, Sample, REPEAT_MARK};
use crate::report::{context, markdown, Analysis, ReportOptions};

/// Render the template `plan`'s report will use (`chosen`, from `--template`, wins over the
/// plan's `[report] template`); nothing to do for the built-in template.
pub(crate) fn check_plan(plan: &crate::model::plan::Plan, chosen: Option<&Path>) -> Result<()> {
    match chosen.or(plan.report.template.as_deref()) {
        Some(template) => check(template, &plan.report, &plan.stacks),
        None => Ok(()),
    }
}

/// Render `template` with a context like the one `stacks` (the plan's stacks) would give.
pub(crate) fn check(template: &Path, cfg: &ReportConfig, stacks: &[String]) -> Result<()> {
    check_fuelled(
        template,
        cfg,
        stacks,
        crate::model::limits::FUEL_REPORT_PREVIEW,
    )
}

/// [`check`] with `fuel` instructions at most.
fn check_fuelled(template: &Path, cfg: &ReportConfig, stacks: &[String], fuel: u64) -> Result<()> {
    let text = crate::model::file::read_regular_text(
        template,
        crate::model::limits::MAX_REPORT_TEMPLATE_BYTES as u64,
    )
    .map_err(|e| crate::error::Error::io(template, e))?;
    let name = template
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| template.display().to_string());
    let results = representative(stacks);
    let mut opts = ReportOptions::from_config(cfg, &results);
    // A preview needs intervals of the right shape, not precise ones.
    opts.bootstrap.resamples = 200;
    if opts
        .baseline
        .as_ref()
        .is_some_and(|b| !results.runs.iter().any(|r| &r.stack == b))
    {
        opts.baseline = None;
    }
    let analysis = Analysis::with_compare_metric(
        &results,
        opts.baseline.as_deref(),
        opts.bootstrap,
        opts.compare_metric,
    );
    let ctx = context::build(&results, &analysis, opts.title.as_deref());
    markdown::render_fuelled(&text, &name, template, &ctx, &mut std::io::sink(), fuel)
}

/// The result set [`check`] renders: every (case, stack) of 2 P × 2 counts, the first case with
/// three repeats, plus one failed, one timed-out and one skipped run.
fn representative(stacks: &[String]) -> ResultSet {
    let mut names: Vec<String> = stacks.iter().take(3).cloned().collect();
    for extra in ["host", "peer"] {
        if names.len() < 2 && !names.iter().any(|n| n == extra) {
            names.push(extra.to_string());
        }
    }
    let mut runs = Vec::new();
    for (c, (p, count)) in [(2u32, 1024u64), (2, 65536), (4, 1024), (4, 65536)]
        .into_iter()
        .enumerate()
    {
        let case = Case::new(Variant::Mesh, p, count);
        for (k, stack) in names.iter().enumerate() {
            let repeats = if c == 0 { 3 } else { 1 };
            for repeat in 1..=repeats {
                let level = 1e-5 * (1.0 + c as f64) * (1.0 + 0.2 * k as f64);
                runs.push(run(&case, stack, repeat, RunStatus::Pass, level));
            }
        }
    }
    let odd = Case::new(Variant::Ring, 2, 4096);
    for (stack, status) in
        names
            .iter()
            .cycle()
            .zip([RunStatus::Fail, RunStatus::Timeout, RunStatus::Skipped])
    {
        runs.push(run(&odd, stack, 1, status, 2e-5));
    }
    ResultSet {
        campaign: "preview".into(),
        timestamp: "20260101_000000".into(),
        runs,
        ..ResultSet::default()
    }
}

fn run(case: &Case, stack: &str, repeat: u32, status: RunStatus, level: f64) -> RunResult {
    let passed = status == RunStatus::Pass;
    let samples: Vec<Sample> = (1..=6u32)
        .filter(|_| passed)
        .map(|i| Sample {
            round: i,
            phase: Sample::label(i > 1, if i > 1 { i - 1 } else { 1 }),
            execute_s: Some(level * (1.0 + 0.01 * f64::from(i % 3))),
            ok: true,
            ..Sample::default()
        })
        .collect();
    let base = case.case_id();
    RunResult {
        case_id: if repeat > 1 {
            format!("{base}{REPEAT_MARK}{repeat}")
        } else {
            base.clone()
        },
        case: case.clone(),
        stack: stack.into(),
        status,
        error: (!passed).then(|| format!("{status} (preview of the report template)")),
        samples,
        bundle: format!("cases/{base}/{stack}").into(),
        attempt: 1,
        exit_code: Some(if passed { 0 } else { 1 }),
        started: None,
        ended: None,
        timing_source: Some("stack".into()),
        cpus: None,
        cpu_contention: None,
        rank_nodes: None,
        node_hardware: Vec::new(),
        ran: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(dir: &Path, text: &str) -> std::path::PathBuf {
        let file = dir.join("t.md.j2");
        std::fs::write(&file, text).unwrap();
        file
    }

    #[test]
    fn the_default_template_renders_against_the_preview() {
        let dir = tempfile::tempdir().unwrap();
        let file = template(dir.path(), markdown::DEFAULT_TEMPLATE);
        check(&file, &ReportConfig::default(), &["host".into()]).unwrap();
    }

    /// The preview's fuel is far above what the built-in template spends on it (so a real
    /// template is never refused for its work), and a template with nested loops is refused by
    /// fuel at validate, naming the line, not left to run into the memory limit.
    #[test]
    fn runaway_loops_are_refused_by_the_preview_fuel() {
        let dir = tempfile::tempdir().unwrap();
        let file = template(dir.path(), markdown::DEFAULT_TEMPLATE);
        let fuel = crate::model::limits::FUEL_REPORT_PREVIEW / 20;
        check_fuelled(&file, &ReportConfig::default(), &["host".into()], fuel)
            .unwrap_or_else(|e| panic!("the built-in template needs more than {fuel}: {e}"));
        let nested = "# t\n{% for i in range(100000) %}{% for j in range(100000) %}{{ i }}{% endfor %}{% endfor %}\n";
        let file = template(dir.path(), nested);
        let err = check(&file, &ReportConfig::default(), &["host".into()]).unwrap_err();
        let text = err.to_string();
        assert_eq!(err.exit_code(), crate::error::exit::BAD_INPUT);
        assert!(text.contains("more work than a report may"), "{text}");
        assert!(text.contains("t.md.j2:2"), "{text}");
    }

    #[test]
    fn an_undefined_variable_fails_with_the_template_line() {
        let dir = tempfile::tempdir().unwrap();
        let file = template(dir.path(), "# {{ title }}\n\n{{ no_such_thing.x }}\n");
        let err = check(&file, &ReportConfig::default(), &["host".into()]).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("undefined"), "{text}");
        assert!(text.contains(":3"), "{text}");
    }
}
