//! `campaign report RUN_DIR [--template F]`: re-render statistics, figures and the report of
//! a run dir from its bundles, without running anything: a campaign run dir's results files are
//! rewritten from its bundles in the order `run` wrote them, runs whose bundle is missing are
//! named, and the run dir is recorded in its results dir's history store (a run dir outside
//! campaign's layout is not recorded). Glue only.

use std::path::Path;

use crate::cli::args::ReportArgs;
use crate::error::{Error, Result};
use crate::model::results::ResultSet;
use crate::report::{self, ReportOptions};
use crate::store::{rebuild, seed_dir};

pub(crate) fn run(args: &ReportArgs) -> Result<i32> {
    let mut results = load_run_dir(&args.run_dir)?;
    let campaign_dir = !seed_dir::is_seed_run_dir(&args.run_dir);
    // Recorded as loaded (the order the history hashes a run dir's results in), before the
    // runs are put in planned order: the history does not read the run dir a second time.
    // The planned order is read from the journal on a second core meanwhile.
    let (history, order) = std::thread::scope(|s| {
        let order =
            campaign_dir.then(|| s.spawn(|| rebuild::planned_order(&args.run_dir, &results)));
        let history = super::history::record_loaded(&args.run_dir, &results, None);
        let order = order.map(|o| {
            o.join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        });
        (history, order)
    });
    if let Some(order) = order {
        let missing = order?.apply(&mut results);
        for m in &missing {
            eprintln!(
                "warning: run {} {} finished ({}) in the journal but its bundle \
                 (cases/{}/{}/manifest.json) is missing: it is not in the results files or the report",
                m.case_id, m.stack, m.status, m.case_id, m.stack
            );
        }
    }
    let opts = ReportOptions {
        template: args.template.clone(),
        bootstrap: report::bootstrap_for(&results),
        history,
        ..ReportOptions::default()
    };
    // The results files are rewritten on a second core while the report is rendered (both
    // only read `results`); a failure to write them is reported first, as before.
    let (written, out) = std::thread::scope(|s| {
        let writing =
            campaign_dir.then(|| s.spawn(|| rebuild::write_results(&args.run_dir, &results)));
        let out = report::render_all(&results, &opts, &args.run_dir);
        let written = writing.map_or(Ok(()), |w| {
            w.join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        });
        (written, out)
    });
    written?;
    let out = out?;
    println!("report: {}", out.summary.display());
    println!("html: {}", out.html.display());
    println!("context: {}", out.context.display());
    for f in &out.figures {
        println!("figure: {}", f.png.display());
    }
    for s in &out.skipped_figures {
        println!("figure {} not drawn: {}", s.name, s.reason);
    }
    if out.failures > 0 {
        println!(
            "{} run(s) did not pass; see the Failures section",
            out.failures
        );
    }
    // 510,000 samples of a 10,000-run set are freed off the way out.
    crate::engine::session::drop_aside(results);
    Ok(crate::error::exit::OK)
}

/// Load a run dir: the old Python harness's layout or campaign's own.
pub(crate) fn load_run_dir(dir: &Path) -> Result<ResultSet> {
    if !dir.is_dir() {
        return Err(Error::Usage(format!(
            "{}: not a directory (expected a run dir such as results/campaigns/<name>/run_<stamp>)",
            dir.display()
        )));
    }
    if seed_dir::is_seed_run_dir(dir) {
        return seed_dir::load_seed_run_dir(dir);
    }
    if dir.join("cases").is_dir() {
        return crate::store::load::load_run_dir(dir);
    }
    Err(Error::Usage(format!(
        "{}: not a run dir: expected campaign's cases/ folder of bundles or the old harness's \
         results.json with execute_s_mean rows",
        dir.display()
    )))
}
