//! `campaign history …`: ingest run dirs into the performance history and read it back (list,
//! show, trend, regressions). Glue: the store is `store::history_db`, the change points
//! `analysis::changepoint`, the figure `report::figures::trend`; recording the run dir of `run`,
//! `resume` and `report` (and the report's history section) is `engine::report_step`'s.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::analysis::changepoint::{self, Params};
use crate::analysis::stats::memo::Memo;
use crate::cli::args::{
    HistoryCommand, HistoryFormat, HistoryIngestArgs, HistoryListArgs, HistoryRegressionsArgs,
    HistoryShowArgs, HistoryStore, HistoryTrendArgs, RegressionsFormat,
};
use crate::error::{exit, Error, Result};
use crate::model::series::{Direction, Series, Step};
use crate::model::units::format_seconds;
use crate::store::history_db::query::SeriesFilter;
use crate::store::history_db::{self as store, History};

pub(crate) fn dispatch(command: HistoryCommand) -> Result<i32> {
    match command {
        HistoryCommand::Ingest(a) => ingest(&a),
        HistoryCommand::List(a) => list(&a),
        HistoryCommand::Show(a) => show(&a),
        HistoryCommand::Trend(a) => trend(&a),
        HistoryCommand::Regressions(a) => regressions(&a),
    }
}

fn store_file(s: &HistoryStore) -> PathBuf {
    store::store_path(s.results_dir.as_deref())
}

fn ingest(args: &HistoryIngestArgs) -> Result<i32> {
    let path = store_file(&args.store);
    // Load every run dir first: a bad one fails before anything is written.
    let mut loaded = Vec::with_capacity(args.run_dirs.len());
    for dir in &args.run_dirs {
        loaded.push((dir, crate::store::load::load_any_run_dir(dir)?));
    }
    let mut h = History::open(&path)?;
    for (i, (dir, results)) in loaded.iter().enumerate() {
        let hold = if i == 0 {
            args.hold_before_commit.as_deref()
        } else {
            None
        };
        let outcome = h.ingest_holding(dir, results, (&Memo::default(), &|| ()), hold)?;
        crate::say!(
            "{}: {outcome} ({} runs, campaign {})",
            dir.display(),
            results.runs.len(),
            results.campaign
        );
    }
    crate::say!("history: {}", path.display());
    Ok(exit::OK)
}

fn print_json<T: Serialize>(value: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| Error::Environment(format!("writing JSON: {e}")))?;
    emit(&format!("{text}\n"))
}

/// Write a listing to stdout at once; a reader that stopped early (`| head`) is not an error.
fn emit(text: &str) -> Result<()> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    // Case ids, campaign and host names come from the store: shown, never acted on.
    let text = crate::console::escape_controls(text, crate::console::LAYOUT);
    match stdout
        .write_all(text.as_bytes())
        .and_then(|_| stdout.flush())
    {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Error::Environment(format!("writing to stdout: {e}")))
        }
        _ => Ok(()),
    }
}

/// A date for tables: `2026-01-31 14:05:09` from the stored UTC time.
fn short_date(t: &str) -> String {
    let t = t.replacen('T', " ", 1);
    t.get(..19).unwrap_or(&t).to_string()
}

fn short_commit(c: Option<&str>) -> String {
    c.map(|c| c.get(..10).unwrap_or(c).to_string())
        .unwrap_or_else(|| "–".into())
}

fn run_name(path: &str) -> String {
    Path::new(path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_string())
}

fn list(args: &HistoryListArgs) -> Result<i32> {
    let h = History::open_existing(&store_file(&args.store))?;
    let dirs = h.run_dirs()?;
    if args.format == HistoryFormat::Json {
        print_json(&dirs)?;
        return Ok(exit::OK);
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<19}  {:<20}  {:<12}  {:>9}  {:<12}  run dir",
        "date (UTC)", "campaign", "origin", "pass/runs", "host"
    );
    for d in &dirs {
        let _ = writeln!(
            out,
            "{:<19}  {:<20}  {:<12}  {:>9}  {:<12}  {}",
            short_date(&d.sort_time),
            d.campaign,
            d.origin,
            format!("{}/{}", d.passed, d.runs),
            if d.host.is_empty() {
                "unknown"
            } else {
                &d.host
            },
            d.path
        );
    }
    let _ = writeln!(out, "{} run dirs", dirs.len());
    emit(&out)?;
    Ok(exit::OK)
}

fn read_series(store: &HistoryStore, s: &crate::cli::args::HistorySeries) -> Result<Vec<Series>> {
    let h = History::open_existing(&store_file(store))?;
    let filter = SeriesFilter::new(s.case_glob.as_deref(), s.stack.as_deref())?;
    h.series(&filter)
}

fn series_title(s: &Series) -> String {
    format!(
        "{} · {} · campaign {} · host {} ({})",
        s.case_id,
        s.key.stack,
        s.campaign,
        if s.host.is_empty() {
            "unknown"
        } else {
            &s.host
        },
        s.key.host_fingerprint
    )
}

fn show(args: &HistoryShowArgs) -> Result<i32> {
    let series = read_series(&args.store, &args.series)?;
    if args.format == HistoryFormat::Json {
        print_json(&series)?;
        return Ok(exit::OK);
    }
    let mut out = String::new();
    if series.is_empty() {
        let _ = writeln!(out, "no series match");
    }
    for s in &series {
        let _ = writeln!(out, "{}", series_title(s));
        let _ = writeln!(
            out,
            "  {:>3}  {:<19}  {:<24}  {:<10}  {:>10}  {:<23}  {:>4}  machine",
            "#", "date (UTC)", "run", "commit", "median", "95% CI", "n"
        );
        for (i, p) in s.points.iter().enumerate() {
            // What the machine did to the point: `regressions` leaves oversubscribed points out
            // and weighs contention as evidence (docs/statistics.md).
            let machine = match (p.oversubscribed, p.clean()) {
                (true, _) => "oversubscribed (left out)".to_string(),
                (false, false) => format!(
                    "contended {:.0} % (weighed)",
                    p.cpu_contention.unwrap_or(0.0) * 100.0
                ),
                (false, true) => "ok".to_string(),
            };
            let _ = writeln!(
                out,
                "  {:>3}  {:<19}  {:<24}  {:<10}  {:>10}  {:<23}  {:>4}  {}",
                i + 1,
                short_date(&p.date),
                run_name(&p.run_dir),
                short_commit(p.commit.as_deref()),
                format_seconds(p.median_s),
                format!(
                    "[{}, {}]",
                    format_seconds(p.ci_lo_s),
                    format_seconds(p.ci_hi_s)
                ),
                p.n,
                machine
            );
        }
        let _ = writeln!(out);
    }
    emit(&out)?;
    Ok(exit::OK)
}

fn trend(args: &HistoryTrendArgs) -> Result<i32> {
    let series = read_series(&args.store, &args.series)?;
    if series.is_empty() {
        return Err(Error::Usage(
            "no series match --case/--stack in the history store; nothing to draw".into(),
        ));
    }
    let steps: Vec<Vec<Step>> = series
        .iter()
        .map(|s| changepoint::series_steps(s, &Params::default()))
        .collect();
    let files = crate::report::draw_trend(&series, &steps, &args.out)?;
    // More series than one figure holds: a page of them a file (`trend-2.png`, …).
    let pages = crate::report::figures::trend_pages(series.len());
    for (file, range) in files.iter().zip(pages) {
        let shown = if files.len() == 1 {
            format!("{} series", series.len())
        } else {
            format!(
                "series {}–{} of {}",
                range.start + 1,
                range.end,
                series.len()
            )
        };
        crate::say!("figure: {} ({shown})", file.display());
    }
    Ok(exit::OK)
}

/// One step found in one series, as `regressions` prints it.
#[derive(Debug, Clone, Serialize)]
struct Finding {
    case_id: String,
    stack: String,
    host: String,
    host_fingerprint: String,
    case_key: String,
    /// The first run at the new level.
    run_dir: String,
    date: String,
    commit: Option<String>,
    /// The last run at the old level and its commit.
    previous_run_dir: String,
    previous_commit: Option<String>,
    ratio: f64,
    ratio_lo: f64,
    ratio_hi: f64,
    direction: Direction,
    /// The new level lasts to the series' newest point.
    current: bool,
    /// A current slower step: the newest point is a regression.
    regression: bool,
    /// The stack's definition changed between the two runs (old and new fingerprint): the
    /// step may be the definition's doing, not the code's.
    #[serde(skip_serializing_if = "Option::is_none")]
    definition_changed: Option<DefinitionChange>,
}

/// A stack definition's fingerprint before and at a step.
#[derive(Debug, Clone, Serialize)]
struct DefinitionChange {
    from: String,
    to: String,
}

impl Finding {
    /// " — the stack definition changed here (a1b2c3d4 → e5f6a7b8)", or nothing.
    fn definition_note(&self) -> String {
        match &self.definition_changed {
            Some(c) => format!(
                " — the stack definition changed here ({} → {}): the step may be the \
                 definition's, not the code's",
                short_commit(Some(&c.from)),
                short_commit(Some(&c.to))
            ),
            None => String::new(),
        }
    }
}

fn parse_noise(text: &str) -> Result<f64> {
    crate::analysis::compare::parse_threshold(text)
        .map_err(|m| Error::Usage(m.replace("--threshold", "--noise")))
}

/// The UTC time `--since` means: a date, an RFC 3339 time, or a run dir in the store.
fn since_time(since: &str, h: &History) -> Result<String> {
    if let Ok(d) = chrono::NaiveDate::parse_from_str(since, "%Y-%m-%d") {
        return Ok(format!("{d}T00:00:00.000Z"));
    }
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(since) {
        return Ok(t
            .with_timezone(&chrono::Utc)
            .format("%Y-%m-%dT%H:%M:%S%.3fZ")
            .to_string());
    }
    let abs = std::path::absolute(since)
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let dirs = h.run_dirs()?;
    let hit = dirs
        .iter()
        .find(|d| d.path == abs)
        .or_else(|| dirs.iter().find(|d| run_name(&d.path) == since));
    hit.map(|d| d.sort_time.clone()).ok_or_else(|| {
        Error::Usage(format!(
            "--since `{since}`: expected a date (YYYY-MM-DD), an RFC 3339 time, or a run dir \
             in the history store (see `campaign history list`)"
        ))
    })
}

fn regressions(args: &HistoryRegressionsArgs) -> Result<i32> {
    let given = args.noise.as_deref().map(parse_noise).transpose()?;
    let params = Params {
        noise: given.unwrap_or(changepoint::DEFAULT_NOISE),
        penalty: args.penalty,
        max_contention: crate::analysis::compare::parse_max_contention(&args.max_contention)
            .map_err(Error::Usage)?,
    };
    if let Some(p) = params.penalty {
        if !(p.is_finite() && p > 0.0) {
            return Err(Error::Usage(format!(
                "--penalty {p}: expected a positive number"
            )));
        }
    }
    let h = History::open_existing(&store_file(&args.store))?;
    let since = args
        .since
        .as_deref()
        .map(|s| since_time(s, &h))
        .transpose()?;
    let filter = SeriesFilter::new(
        args.series.case_glob.as_deref(),
        args.series.stack.as_deref(),
    )?;
    let series = h.series(&filter)?;
    let (floors, calibration) = noise_floors(&h, &series, given);
    let params_of = |i: usize| Params {
        noise: floors[i],
        ..params
    };
    let mut findings = Vec::new();
    for (i, s) in series.iter().enumerate() {
        for step in changepoint::series_steps(s, &params_of(i)) {
            let at = &s.points[step.at];
            if since.as_deref().is_some_and(|t| at.date.as_str() < t) {
                continue;
            }
            let before = &s.points[step.at - 1];
            findings.push(Finding {
                case_id: s.case_id.clone(),
                stack: s.key.stack.clone(),
                host: s.host.clone(),
                host_fingerprint: s.key.host_fingerprint.clone(),
                case_key: s.key.case_key.clone(),
                run_dir: at.run_dir.clone(),
                date: at.date.clone(),
                commit: at.commit.clone(),
                previous_run_dir: before.run_dir.clone(),
                previous_commit: before.commit.clone(),
                ratio: step.ratio,
                ratio_lo: step.ratio_lo,
                ratio_hi: step.ratio_hi,
                direction: step.direction,
                current: step.current,
                regression: step.current && step.direction == Direction::Slower,
                definition_changed: at.definition_change_from(before).map(|(from, to)| {
                    DefinitionChange {
                        from: from.to_string(),
                        to: to.to_string(),
                    }
                }),
            });
        }
    }
    let regressed = findings.iter().filter(|f| f.regression).count();
    // How many series could be judged at all: never a pass over nothing checked.
    let judged = Judged {
        series: series.len(),
        judged: (series.iter().enumerate())
            .filter(|(i, s)| changepoint::judgeable(s, &params_of(*i)))
            .count(),
    };
    match args.format {
        RegressionsFormat::Json => print_json(&serde_json::json!({
            "series": series.len(),
            "judged": judged.judged,
            "noise": params.noise,
            "calibration": calibration,
            "findings": findings,
            "regressions": regressed,
        }))?,
        RegressionsFormat::Table => {
            emit(&(findings_text(&findings, judged) + &calibration_note(&calibration)))?
        }
        RegressionsFormat::Junit => emit(&findings_junit(&series, &findings, &params))?,
        RegressionsFormat::Summary => {
            emit(&(findings_summary(&findings, judged) + &calibration_note(&calibration)))?
        }
    }
    if regressed > 0 {
        crate::tell!(
            "error: {regressed} series' newest point is a regression (a slower step that lasts \
             to the newest run)"
        );
        Ok(exit::RUNS_FAILED)
    } else if judged.judged == 0 {
        crate::tell!(
            "error: nothing judged: {} (exit {})",
            judged.text(),
            exit::NOTHING_JUDGED
        );
        Ok(exit::NOTHING_JUDGED)
    } else {
        Ok(exit::OK)
    }
}

/// Each series' noise floor and what set them: `--noise` for every series when given; else the
/// newest calibration of the series' machine (`campaign calibrate`), its size class's band;
/// else the constant 5 %. The labels of the calibrations used (none: the words for none).
fn noise_floors(
    h: &History,
    series: &[crate::model::series::Series],
    given: Option<f64>,
) -> (Vec<f64>, Vec<String>) {
    use crate::analysis::calibration::{none_label, Calibration};
    if let Some(noise) = given {
        return (vec![noise; series.len()], Vec::new());
    }
    let mut cals: std::collections::BTreeMap<&str, Option<Calibration>> = Default::default();
    let mut floors = Vec::with_capacity(series.len());
    let mut used = std::collections::BTreeSet::new();
    for s in series {
        let fp = s.key.host_fingerprint.as_str();
        let cal = cals
            .entry(fp)
            .or_insert_with(|| h.calibration_of(fp).ok().flatten());
        let band = cal.as_ref().and_then(|c| c.band_for(s.bytes));
        // A series of a machine without a calibration says so too.
        used.insert(match (cal.as_ref(), band) {
            (Some(c), Some(_)) => c.label(),
            _ => none_label(changepoint::DEFAULT_NOISE),
        });
        floors.push(band.unwrap_or(changepoint::DEFAULT_NOISE));
    }
    (floors, used.into_iter().collect())
}

/// "Noise floor: …" under the table: which calibrations set the series' floors.
fn calibration_note(labels: &[String]) -> String {
    match labels {
        [] => String::new(),
        [one] => format!("\nNoise floor: {one}.\n"),
        many => format!("\nNoise floors: {}.\n", many.join("; ")),
    }
}

/// How many series `regressions` could judge: those with the points a step needs.
#[derive(Debug, Clone, Copy)]
struct Judged {
    series: usize,
    judged: usize,
}

impl Judged {
    fn text(&self) -> String {
        format!(
            "judged {} of {}; a series needs {} usable points",
            self.judged,
            self.series,
            changepoint::POINTS_TO_JUDGE
        )
    }
}

fn percent(ratio: f64) -> String {
    format!("{:+.1} %", (ratio - 1.0) * 100.0)
}

fn findings_text(findings: &[Finding], judged: Judged) -> String {
    let mut out = String::new();
    for f in findings {
        let _ = writeln!(
            out,
            "{} {} / {} (host {}): {} [{}, {}] at run {} (commit {}; before: {}, commit {}){}{}",
            if f.regression { "REGRESSION" } else { "step" },
            f.case_id,
            f.stack,
            f.host_fingerprint,
            percent(f.ratio),
            percent(f.ratio_lo),
            percent(f.ratio_hi),
            f.run_dir,
            short_commit(f.commit.as_deref()),
            run_name(&f.previous_run_dir),
            short_commit(f.previous_commit.as_deref()),
            match (f.direction, f.current) {
                (Direction::Slower, true) => ", slower, still current",
                (Direction::Slower, false) => ", slower, later superseded",
                (Direction::Faster, true) => ", faster, still current",
                (Direction::Faster, false) => ", faster, later superseded",
            },
            f.definition_note()
        );
    }
    let regressed = findings.iter().filter(|f| f.regression).count();
    let _ = writeln!(
        out,
        "{} series ({}), {} steps, {regressed} current regressions",
        judged.series,
        judged.text(),
        findings.len()
    );
    out
}

/// One line of a step's numbers: ratio and interval, where, and the commits on either side.
fn finding_numbers(f: &Finding) -> String {
    format!(
        "{} [{}, {}] at run {} (commit {}; before: run {}, commit {}), {}{}{}",
        percent(f.ratio),
        percent(f.ratio_lo),
        percent(f.ratio_hi),
        run_name(&f.run_dir),
        short_commit(f.commit.as_deref()),
        run_name(&f.previous_run_dir),
        short_commit(f.previous_commit.as_deref()),
        f.direction,
        if f.current {
            ", still current"
        } else {
            ", later superseded"
        },
        f.definition_note()
    )
}

/// JUnit XML for CI: one test case per series (classname the stack, name case and host); a
/// series whose newest point is a regression fails with its numbers, its other steps are in
/// the case's output.
fn findings_junit(series: &[Series], findings: &[Finding], params: &Params) -> String {
    use crate::analysis::junit::{document, Outcome, TestCase};
    let cases: Vec<TestCase> = series
        .iter()
        .map(|s| {
            let mine: Vec<&Finding> = findings
                .iter()
                .filter(|f| {
                    f.case_key == s.key.case_key
                        && f.stack == s.key.stack
                        && f.host_fingerprint == s.key.host_fingerprint
                })
                .collect();
            let outcome = match mine.iter().find(|f| f.regression) {
                Some(f) => Outcome::Failed {
                    message: format!(
                        "regression: slower {} at run {}{}",
                        percent(f.ratio),
                        run_name(&f.run_dir),
                        if f.definition_changed.is_some() {
                            " (the stack definition changed here)"
                        } else {
                            ""
                        }
                    ),
                    detail: format!("{} / {}: {}", f.case_id, f.stack, finding_numbers(f)),
                },
                None if !changepoint::judgeable(s, params) => Outcome::Skipped {
                    message: format!(
                        "not judged: fewer than {} usable points",
                        changepoint::POINTS_TO_JUDGE
                    ),
                },
                None => Outcome::Passed,
            };
            let output = mine
                .iter()
                .map(|f| format!("step {}", finding_numbers(f)))
                .collect::<Vec<_>>()
                .join("\n");
            TestCase {
                classname: format!("campaign.history.{}", s.key.stack),
                name: format!("{} (host {})", s.case_id, s.key.host_fingerprint),
                outcome,
                output,
            }
        })
        .collect();
    document(
        "campaign history regressions",
        &[("noise", format!("{:.1} %", params.noise * 100.0))],
        &cases,
    )
}

/// A Markdown job summary (`>> $GITHUB_STEP_SUMMARY`): the outcome in its heading, then the
/// regressions and the other steps found, with their numbers.
fn findings_summary(findings: &[Finding], judged: Judged) -> String {
    use crate::model::text::md_cell;
    let regressions: Vec<&Finding> = findings.iter().filter(|f| f.regression).collect();
    let mut out = if regressions.is_empty() && judged.judged == 0 {
        format!(
            "## ⚠️ campaign history regressions: nothing judged ({}; not a pass)\n\n",
            judged.text()
        )
    } else if regressions.is_empty() {
        format!(
            "## ✅ campaign history regressions: no series' newest point is a regression ({})\n\n",
            judged.text()
        )
    } else {
        format!(
            "## ❌ campaign history regressions: {} series' newest point is a regression\n\n",
            regressions.len()
        )
    };
    let _ = writeln!(
        out,
        "{} series ({}), {} steps, {} current regressions.",
        judged.series,
        judged.text(),
        findings.len(),
        regressions.len()
    );
    let others: Vec<&Finding> = findings.iter().filter(|f| !f.regression).collect();
    for (title, list) in [("Regressions", &regressions), ("Other steps", &others)] {
        if list.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "\n### {title} ({})\n\n| case | stack | host | change [interval] | at run | commit | before | |\n|---|---|---|---:|---|---|---|---|",
            list.len()
        );
        for f in list.iter() {
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | {} [{}, {}] | `{}` | `{}` | `{}` (`{}`) | {}{}{} |",
                md_cell(&f.case_id),
                md_cell(&f.stack),
                f.host_fingerprint,
                percent(f.ratio),
                percent(f.ratio_lo),
                percent(f.ratio_hi),
                md_cell(&run_name(&f.run_dir)),
                short_commit(f.commit.as_deref()),
                md_cell(&run_name(&f.previous_run_dir)),
                short_commit(f.previous_commit.as_deref()),
                f.direction,
                if f.current {
                    ", current"
                } else {
                    ", superseded"
                },
                f.definition_note()
            );
        }
    }
    out
}
