//! `campaign calibrate PLAN [--repeats 10]`: measure this machine's noise (issue 45, item 2).
//!
//! Runs the plan as its own campaign (`<name>-calibration`, so its runs never join the plan's
//! history series) with a fixed, even number of interleaved repeats and no adaptive sizes, then
//! judges each (case, stack) against itself — its odd repeats against its even ones
//! (`analysis::calibration`) — and keeps the result, per size class, in the history store under
//! the machine's key. `report`, `compare` and `history regressions` use the newest calibration
//! of the machine their runs ran on, and say which. Prints the classes; `calibration.json` in
//! the run dir holds the same. Exit 0, or the run's code when runs failed (a calibration is
//! still kept from what passed), or 7 when no (case, stack) had three passing repeats a side.

use std::path::Path;

use crate::analysis::calibration::{self, Calibration};
use crate::cli::args::CalibrateArgs;
use crate::engine;
use crate::error::{exit, Result};

pub(crate) fn run(args: &CalibrateArgs) -> Result<i32> {
    let cli = crate::cli::run::begin(&args.exec, Some(args.repeats), None)?;
    let mut plan = crate::plan::load_with(&args.plan, cli)?;
    plan.campaign.name = format!("{}-calibration", plan.campaign.name);
    // Sizes added while running would give rows of one repeat: the grid as written.
    plan.adapt.crossover = false;
    for w in &plan.warnings {
        crate::tell!("warning: {w}");
    }
    let opts = engine::Options {
        stacks: args.stacks.clone(),
        ..crate::cli::run::exec_options(&args.exec)
    };
    let prepared = engine::prepare(plan, &opts)?;
    crate::engine::interrupt::check_preparation()?;
    // No report step: the calibration is what this campaign is for, and its runs stay out of
    // the history's series.
    let done = engine::execute(prepared, &opts, Vec::new())?;
    let ran = crate::cli::run::conclude(&done, opts.quiet);
    if done.interrupted {
        return ran;
    }
    let cal = measure(&done.run_dir, &args.plan, args.repeats)?;
    let measured: usize = cal.classes.iter().map(|c| c.rows).sum();
    if measured == 0 {
        crate::say!(
            "calibration: nothing measured (no (case, stack) passed {} repeats a side); nothing kept",
            calibration::MIN_REPEATS / 2
        );
        return Ok(exit::NOTHING_JUDGED);
    }
    keep(&done.run_dir, &cal, args.exec.results_dir.as_deref())?;
    print(&cal);
    ran
}

/// The calibration of a finished calibration run dir.
fn measure(run_dir: &Path, plan: &Path, repeats: u32) -> Result<Calibration> {
    let mut set = crate::store::load::load_any_run_dir(run_dir)?;
    crate::store::rebuild::planned_order(run_dir, &set)?.apply(&mut set);
    Ok(Calibration {
        machine: calibration::machine_of(&set.provenance),
        machine_text: calibration::machine_text(&set.provenance),
        created: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        plan: plan.display().to_string(),
        run_dir: std::path::absolute(run_dir)
            .unwrap_or_else(|_| run_dir.to_path_buf())
            .display()
            .to_string(),
        repeats,
        classes: calibration::measure(&set),
    })
}

/// Write `calibration.json` into the run dir and keep the calibration in the history store of
/// `results_dir` (else of the results dir the run dir sits in).
fn keep(run_dir: &Path, cal: &Calibration, results_dir: Option<&Path>) -> Result<()> {
    let text = serde_json::to_string_pretty(cal).unwrap_or_default() + "\n";
    crate::store::atomic::write_atomic(&run_dir.join("calibration.json"), text.as_bytes())?;
    use crate::store::history_db;
    let campaign = run_dir
        .parent()
        .and_then(Path::file_name)
        .unwrap_or_default();
    let results_dir = results_dir
        .map(Path::to_path_buf)
        .or_else(|| history_db::results_dir_of(run_dir, &campaign.to_string_lossy()));
    let store = history_db::store_path(results_dir.as_deref());
    let mut h = history_db::History::open(&store)?;
    h.save_calibration(cal)?;
    crate::say!("calibration kept in {}", store.display());
    Ok(())
}

fn print(cal: &Calibration) {
    crate::say!("{}", cal.machine_text);
    crate::say!(
        "{:<22} {:>5} {:>13} {:>9} {:>8}",
        "size class",
        "rows",
        "false alarms",
        "noise",
        "band"
    );
    for c in cal.classes.iter().filter(|c| c.rows > 0) {
        crate::say!(
            "{:<22} {:>5} {:>13} {:>8.1}% {:>7.1}%",
            c.class,
            c.rows,
            c.false_alarms,
            c.noise_pct,
            c.band_pct
        );
    }
}
