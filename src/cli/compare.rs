//! `campaign compare RUN_A RUN_B [--threshold 5%] [--format md|csv|json|junit|summary] [--history FILE |
//! --no-history]`: exit 1 when any (case, stack) got slower beyond the threshold, so it can
//! gate CI. Glue only: the verdict is `analysis::compare`'s, the campaign-to-campaign spread
//! comes from earlier campaigns in the history store (`store::history_db`, `analysis::between`).

use std::path::{Path, PathBuf};

use crate::analysis::between;
use crate::analysis::compare::{
    compare_with, parse_max_contention, parse_threshold, to_csv, to_json, to_junit, to_markdown,
    to_summary, Judging, Spreads,
};
use crate::cli::args::{CompareArgs, CompareFormat};
use crate::error::{exit, Error, Result};
use crate::model::results::ResultSet;
use crate::store::history_db::{self, History};

pub(crate) fn run(args: &CompareArgs) -> Result<i32> {
    let threshold =
        parse_threshold(args.threshold.as_deref().unwrap_or(DEFAULT_BAND)).map_err(Error::Usage)?;
    let a = crate::store::load::load_any_run_dir(&args.run_a)?;
    let b = crate::store::load::load_any_run_dir(&args.run_b)?;
    let max_contention = parse_max_contention(&args.max_contention).map_err(Error::Usage)?;
    let (spreads, store) = spreads(args, &a)?;
    let equivalence = (args.equivalence.as_deref())
        .map(|e| {
            parse_threshold(e).map_err(|m| Error::Usage(m.replace("--threshold", "--equivalence")))
        })
        .transpose()?;
    // A band given on the command line is the band; else this machine's calibration's, when
    // the history store holds one for the machine A ran on.
    let calibration = match &args.threshold {
        Some(_) => None,
        None => store
            .as_deref()
            .and_then(|s| crate::engine::report_step::calibration_in_store(s, &a.provenance)),
    };
    let judging = Judging {
        threshold,
        equivalence,
        max_contention,
        spreads,
        history: store.map(|p| p.display().to_string()),
        calibration,
    };
    let c = compare_with(&a, &b, &crate::report::bootstrap_for(&a), judging);
    let text = match args.format {
        CompareFormat::Md => to_markdown(
            &c,
            &args.run_a.display().to_string(),
            &args.run_b.display().to_string(),
        ),
        CompareFormat::Csv => {
            to_csv(&c).map_err(|e| Error::Environment(format!("writing CSV: {e}")))?
        }
        CompareFormat::Json => to_json(&c),
        CompareFormat::Junit => to_junit(
            &c,
            &args.run_a.display().to_string(),
            &args.run_b.display().to_string(),
        ),
        CompareFormat::Summary => to_summary(
            &c,
            &args.run_a.display().to_string(),
            &args.run_b.display().to_string(),
        ),
    };
    crate::console::text(&text);
    if c.regressed() {
        crate::tell!(
            "error: slower beyond the ±{:.1} % noise band in at least one (case, stack)",
            threshold * 100.0
        );
        Ok(exit::RUNS_FAILED)
    } else if c.nothing_judged() {
        crate::tell!(
            "error: nothing judged ({}): every row was not judged or not comparable, so nothing \
             was checked (exit {})",
            c.judged_text(),
            exit::NOTHING_JUDGED
        );
        Ok(exit::NOTHING_JUDGED)
    } else {
        Ok(exit::OK)
    }
}

/// The noise band when neither `--threshold` nor a calibration gives one.
const DEFAULT_BAND: &str = "5%";

/// The history store to read: `--history`, else the store of A's results dir when it exists;
/// none with `--no-history`.
fn store_for(args: &CompareArgs, a: &ResultSet) -> Option<PathBuf> {
    if args.no_history {
        return None;
    }
    if let Some(path) = &args.history {
        return Some(path.clone());
    }
    let dir = history_db::results_dir_of(&args.run_a, &a.campaign)?;
    Some(history_db::store_path(Some(&dir))).filter(|p| p.is_file())
}

/// Each row's campaign-to-campaign spread from the store's other campaigns on A's machine
/// (A and B left out; A need not be in the store), and the store they came from. An explicit `--history` that cannot be
/// read is an error; a store found on its own that cannot be read is a warning.
fn spreads(args: &CompareArgs, a: &ResultSet) -> Result<(Spreads, Option<PathBuf>)> {
    let Some(path) = store_for(args, a) else {
        return Ok((Spreads::new(), None));
    };
    let read = || -> Result<Spreads> {
        let store = History::open_existing(&path)?;
        let abs = |p: &Path| {
            std::path::absolute(p)
                .map(|p| p.display().to_string())
                .map_err(|e| Error::io(p, e))
        };
        let leave_out = [abs(&args.run_a)?, abs(&args.run_b)?];
        let machine = history_db::host_fingerprint(&a.provenance.host, &a.provenance.cpu);
        let points = store.earlier_points((&machine, &a.campaign), &leave_out)?;
        Ok(points
            .into_iter()
            .filter_map(|(key, pts)| between::between(&pts).map(|b| (key, b)))
            .collect())
    };
    match read() {
        Ok(s) => Ok((s, Some(path))),
        Err(e) if args.history.is_some() => Err(e),
        Err(e) => {
            crate::tell!("warning: {e}; comparing without earlier campaigns");
            Ok((Spreads::new(), None))
        }
    }
}
