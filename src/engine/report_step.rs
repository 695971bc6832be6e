//! The end of a campaign after `collect`: the report step (summarize → plot → report, which
//! `run` and `resume` run once every run ended and the engine's per-run state is freed) and
//! recording a run dir into its results dir's
//! performance history, which gives the report its History section (`run`, `resume` and
//! `report` record their run dir).
//!
//! Owns where a run dir is recorded (`--results-dir`'s store, else the one of the results dir
//! the run dir sits in) and the report's history rows (previous median, change, the step
//! `analysis::changepoint` finds at this run). History is a side record: a failure is a warning,
//! never the campaign's. It must not print anything else or decide statuses.

use std::path::{Path, PathBuf};

use crate::analysis::changepoint::{self, Params};
use crate::analysis::stats::memo::Memo;
use crate::engine::dispatch::AfterStep;
use crate::error::{Error, Result};
use crate::model::plan::Plan;
use crate::model::results::ResultSet;
use crate::model::series::{ReportHistory, ReportHistoryRow};
use crate::store::history_db::query::SeriesFilter;
use crate::store::history_db::{self as store, History};

/// summarize → plot → report, one step after `collect` (the report module does all three),
/// of the run dir as its bundles hold it — read exactly as `campaign report` reads it, so the
/// report `run` renders is the one `campaign report` would, and is stamped as such: a
/// `campaign report` of the finished run dir renders nothing (`render_unless_unchanged`).
/// It runs after the engine freed its own copy of the results, so one result set is held.
/// The run dir is recorded in the history store of `results_dir` (`--results-dir`, else the
/// run dir's own) first, so the report can show the earlier runs of its series.
pub(crate) fn report_step(
    plan: &Plan,
    template: Option<PathBuf>,
    results_dir: Option<PathBuf>,
) -> Vec<(String, AfterStep)> {
    let report_cfg = plan.report.clone();
    let report: AfterStep = Box::new(move |run_dir| {
        let path = &run_dir.path;
        let mut set = crate::store::load::load_any_run_dir(path)?;
        let mut opts = crate::report::ReportOptions::from_config(&report_cfg, &set);
        opts.calibration = results_dir_for(path, &set, results_dir.as_deref())
            .and_then(|dir| calibration_in(Some(&dir), &set.provenance));
        if let Some(t) = &template {
            opts.template = Some(t.clone());
        }
        // One memo of intervals for the history ingest and the report (each drawn once).
        let memo = crate::report::run_memo(path);
        // Recorded as loaded (the order the history hashes a run dir's results in).
        let history = results_dir_for(path, &set, results_dir.as_deref()).and_then(|dir| {
            let warm = || crate::report::warm_memo(&set, &opts, &memo);
            record_in(path, &set, &dir, (&memo, &warm))
        });
        let found = crate::store::rebuild::planned_order(path, &set)?.apply(&mut set);
        warn_disagreements(&found, path);
        opts.history = history;
        let digest = crate::store::set_digest::digest(&set);
        let out = render_unless_unchanged(&set, &digest, &opts, path, &memo)
            .and_then(|out| write_answers(path, &set, &digest, &out));
        crate::engine::session::drop_aside(set);
        out.map(drop)
    });
    vec![("report".to_string(), report)]
}

/// Write the results files of `set` (of digest `digest`) with the answers of the report `out`
/// rendered from it (the files written while a campaign ran carry none), unless they already
/// hold them. results.json is then newer than the report it came from: the report's stamp is
/// marked now, so `resume` still finds the report as current as results.json.
pub(crate) fn write_answers(
    run_dir: &Path,
    set: &ResultSet,
    digest: &[u8; 32],
    out: &crate::report::ReportOutput,
) -> Result<()> {
    use crate::store::{rebuild, results_stamp};
    if rebuild::write_results_answering(run_dir, set, digest, &out.answers)?
        == rebuild::Rewrite::Written
    {
        results_stamp::touch_stamp(run_dir, results_stamp::REPORT_STAMP);
    }
    Ok(())
}

/// Say which finished runs a report leaves out or shows otherwise than the journal recorded:
/// their bundle is gone, or holds another number of samples (`store::rebuild::planned_order`).
pub(crate) fn warn_disagreements(found: &crate::store::rebuild::Disagreements, run_dir: &Path) {
    for m in &found.missing {
        crate::tell!(
            "warning: run {} {} finished ({}) in the journal but its bundle \
             (cases/{}/{}/manifest.json) is missing: it is not in the results files or the report",
            m.case_id,
            m.stack,
            m.status,
            m.case_id,
            m.stack
        );
    }
    for r in &found.recounted {
        crate::tell!(
            "warning: run {} {} finished with {} samples in the journal but its bundle \
             (cases/{}/{}) holds {}: the report shows what the bundle holds; \
             `campaign resume --verify {}` runs it again",
            r.case_id,
            r.stack,
            r.journal,
            r.case_id,
            r.stack,
            r.bundle,
            run_dir.display()
        );
    }
}

/// `campaign report`'s summarize → plot → report of `results` into `run_dir`, unless the
/// report's stamp (`store::results_stamp::REPORT_STAMP`) proves the files on disk are already
/// what it would render: the same result set and inputs (`report::Inputs`), the same build, and
/// every file hashing as it was written. Then nothing is rendered and what the last render
/// wrote is returned; otherwise the report is rendered and stamped.
/// `set_digest` is `store::set_digest::digest(results)`; `memo` the run dir's
/// (`report::run_memo`), as the history ingest before it left it.
pub(crate) fn render_unless_unchanged(
    results: &ResultSet,
    set_digest: &[u8; 32],
    opts: &crate::report::ReportOptions,
    run_dir: &Path,
    memo: &Memo,
) -> Result<crate::report::ReportOutput> {
    use crate::store::results_stamp::{self, REPORT_STAMP};
    let mut inputs = crate::report::inputs(results, opts, run_dir)?;
    let input = crate::store::set_digest::digest(&(set_digest, &inputs));
    let proven = results_stamp::proven(run_dir, REPORT_STAMP, &input, None)
        .and_then(|extra| serde_json::from_value::<crate::report::ReportOutput>(extra).ok());
    if let Some(out) = proven {
        // The report holds already: its stamp's time says it is as current as the results
        // files (`resume`'s up-to-date check), since its files keep their older times.
        results_stamp::touch_stamp(run_dir, REPORT_STAMP);
        // Stamped relative to the run dir, which may be named another way now.
        return Ok(out.rebased(Path::new(""), run_dir));
    }
    let profiles = inputs.take_profiles();
    let files = (inputs.bundle_files(), profiles);
    let out = crate::report::render_from(results, opts, run_dir, files, memo)?;
    let files = (out.files(run_dir).iter())
        .map(|name| results_stamp::sum_file(run_dir, name))
        .collect::<Result<Vec<_>>>()?;
    let extra =
        serde_json::to_value(out.clone().rebased(run_dir, Path::new(""))).unwrap_or_default();
    results_stamp::record_as(run_dir, REPORT_STAMP, &input, files, extra)?;
    Ok(out)
}

/// Record a run dir in its results dir's store and return the report's history section, of a
/// result set just loaded from `run_dir`'s files (`store::load::load_any_run_dir`, in the order
/// it reads them). History is a side record: a failure is printed as a warning and never fails
/// the campaign. `results_dir` is `--results-dir`; without it the run dir's own results dir is
/// used, and a run dir outside campaign's layout is not recorded.
/// The series points' intervals are taken from `memo`, the one the report reads next, which
/// `warm` fills with the report's own draws when the store lacks the run dir
/// (`History::ingest_remembering`).
pub(crate) fn record_loaded(
    run_dir: &Path,
    on_disk: &ResultSet,
    results_dir: Option<&Path>,
    drawing: (&Memo, &dyn Fn()),
) -> Option<ReportHistory> {
    let results_dir = results_dir_for(run_dir, on_disk, results_dir)?;
    record_in(run_dir, on_disk, &results_dir, drawing)
}

/// Record `on_disk` in `results_dir`'s history store; the report's history section.
fn record_in(
    run_dir: &Path,
    on_disk: &ResultSet,
    results_dir: &Path,
    (memo, warm): (&Memo, &dyn Fn()),
) -> Option<ReportHistory> {
    let path = store::store_path(Some(results_dir));
    let attempt = || -> Result<ReportHistory> {
        let mut h = History::open(&path)?;
        h.ingest_remembering(run_dir, on_disk, memo, warm)?;
        report_history(&h, run_dir)
    };
    match attempt() {
        Ok(section) => Some(section).filter(|s| !s.rows.is_empty() || s.stragglers.campaigns > 0),
        Err(e) => {
            crate::tell!("warning: history not recorded in {}: {e}", path.display());
            None
        }
    }
}

/// The newest calibration (`campaign calibrate`) of the machine `provenance` names, from the
/// history store of `results_dir` (`--results-dir`, else the default results dir's). None when
/// there is no store or no calibration of the machine; a store that cannot be read is said and
/// is no calibration (calibrations refine verdicts, they never stop a campaign or a report).
pub(crate) fn calibration_in(
    results_dir: Option<&Path>,
    provenance: &crate::model::results::Provenance,
) -> Option<crate::analysis::calibration::Calibration> {
    calibration_in_store(&store::store_path(results_dir), provenance)
}

/// [`calibration_in`] the history store file `path` (`compare --history FILE`).
pub(crate) fn calibration_in_store(
    path: &Path,
    provenance: &crate::model::results::Provenance,
) -> Option<crate::analysis::calibration::Calibration> {
    if !path.is_file() {
        return None;
    }
    let machine = crate::analysis::calibration::machine_of(provenance);
    match History::open(path).and_then(|h| h.calibration_of(&machine)) {
        Ok(c) => c,
        Err(e) => {
            crate::tell!("warning: calibration not read from {}: {e}", path.display());
            None
        }
    }
}

/// The results dir whose history store records `run_dir`: `results_dir`, else the one the run
/// dir sits in (none for a run dir outside campaign's layout).
fn results_dir_for(
    run_dir: &Path,
    results: &ResultSet,
    results_dir: Option<&Path>,
) -> Option<PathBuf> {
    match results_dir {
        Some(d) => Some(d.to_path_buf()),
        None => store::results_dir_of(run_dir, &results.campaign),
    }
}

/// What the machine did to a history point, with the marks of the results tables: "⚠
/// oversubscribed", "⚠ contended 62 %"; none for a clean point.
fn machine_mark(p: &crate::model::series::Point) -> Option<String> {
    if p.oversubscribed {
        return Some("⚠ oversubscribed".into());
    }
    (!p.clean()).then(|| {
        format!(
            "⚠ contended {:.0} %",
            p.cpu_contention.unwrap_or(0.0) * 100.0
        )
    })
}

/// The report's history section for `run_dir`: per series of the run dir with earlier points,
/// the previous median, the change, and the step ending at this run if one is detected.
fn report_history(h: &History, run_dir: &Path) -> Result<ReportHistory> {
    let abs = std::path::absolute(run_dir)
        .map_err(|e| Error::io(run_dir, e))?
        .display()
        .to_string();
    let filter = SeriesFilter {
        run_dir: Some(abs.clone()),
        ..SeriesFilter::default()
    };
    let mut rows = Vec::new();
    // Each machine's calibration read once, not once a series.
    let mut calibrations = std::collections::HashMap::new();
    for mut s in h.series(&filter)? {
        let Some(idx) = s.points.iter().position(|p| p.run_dir == abs) else {
            continue;
        };
        if idx == 0 {
            continue;
        }
        // What was known when this run finished: later points (re-rendering an old run dir)
        // are left out.
        s.points.truncate(idx + 1);
        // The noise floor `history regressions` would take: the machine's calibration's band
        // for the series' size class, else the constant.
        let cal = calibrations
            .entry(s.key.host_fingerprint.clone())
            .or_insert_with_key(|fp| h.calibration_of(fp).ok().flatten());
        let noise = cal.as_ref().and_then(|c| c.band_for(s.bytes));
        let params = Params {
            noise: noise.unwrap_or(changepoint::DEFAULT_NOISE),
            ..Params::default()
        };
        let step = changepoint::series_steps(&s, &params)
            .into_iter()
            .find(|st| st.at == idx);
        let (prev, now) = (&s.points[idx - 1], &s.points[idx]);
        rows.push(ReportHistoryRow {
            case_id: s.case_id.clone(),
            stack: s.key.stack.clone(),
            earlier: idx,
            previous_median_s: prev.median_s,
            median_s: now.median_s,
            change: now.median_s / prev.median_s - 1.0,
            step,
            definition_changed: now.definition_change_from(prev).is_some(),
            machine: [("previous", prev), ("this run", now)]
                .iter()
                .filter_map(|(which, p)| machine_mark(p).map(|m| format!("{which} {m}")))
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    // The machine's earlier campaigns' straggler cells, pooled into this report's attribution.
    let stragglers = h.earlier_stragglers(&abs)?;
    Ok(ReportHistory { rows, stragglers })
}

#[cfg(test)]
mod tests {
    use crate::store::history_db::ingest::Ingested;
    use crate::store::history_db::tests::{run, set};
    use crate::store::history_db::History;

    /// The report's draws serve the history (issue 50, item 2): with the memo the report warmed
    /// first, recording a new run dir draws nothing more, stores the very intervals a cold ingest
    /// draws, and a report after it draws nothing either; a run dir the store already holds does
    /// not warm the memo at all.
    #[test]
    fn an_ingest_after_the_reports_draws_resamples_nothing_and_stores_the_same_bits() {
        use crate::analysis::stats::memo::Memo;
        use std::cell::Cell;
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("run_20260101_000000");
        let mut runs = Vec::new();
        for (i, stack) in ["host", "other", "third"].iter().enumerate() {
            let times: Vec<f64> = (0..40)
                .map(|k| 1.0 + (i * 7 + k * 13 % 17) as f64 / 100.0)
                .collect();
            runs.push(run(stack, &times, "2026-01-01T00:00:01+00:00"));
        }
        let rs = set("20260101_000000", runs);
        let opts = crate::report::ReportOptions {
            bootstrap: crate::report::bootstrap_for(&rs),
            ..Default::default()
        };
        let stored = |h: &History| -> Vec<(Option<f64>, Option<f64>)> {
            let mut st = h
                .conn
                .prepare("SELECT ci_lo_s, ci_hi_s FROM runs ORDER BY stack")
                .unwrap();
            st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap()
                .map(Result::unwrap)
                .collect()
        };
        // Cold: the ingest draws each (case, stack) itself.
        let mut cold = History::open(&tmp.path().join("cold.sqlite")).unwrap();
        cold.ingest(&dir, &rs).unwrap();
        let want = stored(&cold);
        assert_eq!(want.len(), 3);
        assert!(
            want.iter().all(|(lo, hi)| lo.is_some() && lo < hi),
            "{want:?}"
        );

        let memo = Memo::default();
        let warmed = Cell::new(0);
        let warm = || {
            warmed.set(warmed.get() + 1);
            crate::report::warm_memo(&rs, &opts, &memo);
        };
        let mut h = History::open(&tmp.path().join("history.sqlite")).unwrap();
        let outcome = h.ingest_remembering(&dir, &rs, &memo, &warm).unwrap();
        assert_eq!((outcome, warmed.get()), (Ingested::Added, 1));
        let drawn = memo.drawn();
        assert!(drawn >= 3, "the report drew {drawn}");
        assert_eq!(stored(&h), want, "the same bits as a cold ingest");
        // The ingest took all three intervals from the report's draws.
        let again = Memo::default();
        crate::report::warm_memo(&rs, &opts, &again);
        assert_eq!(memo.drawn(), again.drawn(), "the ingest drew");
        // The report after it: every interval remembered.
        crate::report::warm_memo(&rs, &opts, &memo);
        assert_eq!(memo.drawn(), drawn, "the report drew again");
        // Already recorded: nothing to draw for, so nothing is warmed.
        let outcome = h.ingest_remembering(&dir, &rs, &memo, &warm).unwrap();
        assert_eq!((outcome, warmed.get()), (Ingested::Unchanged, 1));
    }
}
