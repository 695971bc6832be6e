//! `campaign report RUN_DIR [--template F]`: re-render statistics, figures and the report of
//! a run dir from its bundles, without running anything: a campaign run dir's results files are
//! rewritten from its bundles in the order `run` wrote them (left untouched when they already
//! say exactly that), runs whose bundle is missing are
//! named, and the run dir is recorded in its results dir's history store (a run dir outside
//! campaign's layout is not recorded). Glue only.

use crate::cli::args::ReportArgs;
use crate::error::Result;
use crate::report::{self, ReportOptions};
use crate::store::{rebuild, seed_dir};

/// The `[report]` of the run dir's frozen plan (read as `resume` reads it), so a re-rendered
/// report has the plan's template, baseline, figures and title; `None` (with a warning when the
/// plan does not load) gives the defaults.
fn frozen_report(run_dir: &std::path::Path) -> Option<crate::model::plan::ReportConfig> {
    let frozen = run_dir.join("plan.toml");
    if !frozen.is_file() {
        return None;
    }
    let header = crate::store::journal::header(&run_dir.join("journal.jsonl")).unwrap_or_default();
    match crate::cli::resume::load_frozen_plan(&frozen, &header, None) {
        Ok(plan) => Some(plan.report),
        Err(e) => {
            crate::tell!("warning: {}: the frozen plan does not load ({e}); the report uses the default template and settings", frozen.display());
            None
        }
    }
}

/// `campaign report` as the binary runs it: it only replaces derived files, each atomically, so
/// a Ctrl-C ends it at once with exit 3 (`engine::derived_stop`). [`run`] alone leaves the
/// process's signal handling as it is (the in-process tests call it).
pub(crate) fn run_stoppable(args: &ReportArgs) -> Result<i32> {
    let _at_once = crate::engine::derived_stop::enter(&format!(
        "the report was not finished: campaign report {} renders it",
        args.run_dir.display()
    ));
    run(args)
}

pub(crate) fn run(args: &ReportArgs) -> Result<i32> {
    // Temp files of killed reports (`report` takes no lock: it only replaces derived files).
    for dir in ["", "reports", "figures"] {
        crate::store::atomic::sweep_stale_temps(&args.run_dir.join(dir));
    }
    let mut results = crate::store::load::load_any_run_dir(&args.run_dir)?;
    let campaign_dir = !seed_dir::is_seed_run_dir(&args.run_dir);
    let mut opts = match campaign_dir.then(|| frozen_report(&args.run_dir)).flatten() {
        Some(cfg) => ReportOptions::from_config(&cfg, &results),
        None => ReportOptions {
            bootstrap: report::bootstrap_for(&results),
            ..ReportOptions::default()
        },
    };
    // `--template` wins over the plan's.
    if let Some(t) = &args.template {
        opts.template = Some(t.clone());
    }
    // The newest calibration of the machine the runs ran on, from the run dir's results dir.
    opts.calibration = crate::store::history_db::results_dir_of(&args.run_dir, &results.campaign)
        .and_then(|dir| {
            crate::engine::report_step::calibration_in(Some(&dir), &results.provenance)
        });
    // Recorded as loaded (the order the history hashes a run dir's results in), before the
    // runs are put in planned order: the history does not read the run dir a second time.
    // The planned order is read from the journal on a second core meanwhile.
    // One memo of intervals for the history ingest and the report (each drawn once: a store
    // that lacks the run dir has the report's statistics drawn first, `report::warm_memo`).
    let memo = report::run_memo(&args.run_dir);
    let (history, order) = std::thread::scope(|s| {
        let order =
            campaign_dir.then(|| s.spawn(|| rebuild::planned_order(&args.run_dir, &results)));
        let warm = || report::warm_memo(&results, &opts, &memo);
        let history = crate::engine::report_step::record_loaded(
            &args.run_dir,
            &results,
            None,
            (&memo, &warm),
        );
        let order = order.map(|o| {
            o.join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        });
        (history, order)
    });
    if let Some(order) = order {
        let found = order?.apply(&mut results);
        crate::engine::report_step::warn_disagreements(&found, &args.run_dir);
    }
    opts.history = history;
    // The report is rendered first (unless its stamp proves it current), then the results
    // files are written with its answers — what each default loses, where the winner changes —
    // unless they already hold exactly these results and answers (`store::results_stamp`).
    // What both the results files and the report are a function of, worked out once.
    let digest = crate::store::set_digest::digest(&results);
    let out = crate::engine::report_step::render_unless_unchanged(
        &results,
        &digest,
        &opts,
        &args.run_dir,
        &memo,
    );
    // A report that failed (a bad template) still leaves the results files current.
    match (campaign_dir, &out) {
        (false, _) => {}
        (true, Ok(out)) => {
            crate::engine::report_step::write_answers(&args.run_dir, &results, &digest, out)?;
        }
        (true, Err(_)) => {
            rebuild::write_results_of(&args.run_dir, &results, &digest)?;
        }
    }
    let out = out?;
    crate::say!("report: {}", out.summary.display());
    crate::say!("html: {}", out.html.display());
    crate::say!("context: {}", out.context.display());
    for f in &out.figures {
        crate::say!("figure: {}", f.png.display());
    }
    for s in &out.skipped_figures {
        crate::say!("figure {} not drawn: {}", s.name, s.reason);
    }
    if out.failures > 0 {
        crate::say!(
            "{} run(s) did not pass; see the Failures section",
            out.failures
        );
    }
    // 510,000 samples of a 10,000-run set are freed off the way out.
    crate::engine::session::drop_aside(results);
    Ok(crate::error::exit::OK)
}
