//! The self-contained HTML report (`reports/index.html`) and the history trend page.
//!
//! Owns what the HTML templates get beyond the Markdown's context: the results table made
//! generic over the case fields the context has (one row per (case, stack), sortable and
//! filterable in the page), every figure's SVG inline with its hover values beside it, and the
//! tail of each failed run's `run.log` (the one thing of a bundle this room reads). The page
//! is rendered with minijinja from `templates/` (HTML auto-escaping on) and fetches nothing:
//! its CSS and JavaScript are included from `templates/report.css` and `report.js`.

use std::io::Write;
use std::path::Path;

use minijinja::syntax::SyntaxConfig;
use minijinja::{AutoEscape, Environment, UndefinedBehavior};
use serde::Serialize;

use super::bundle_files::BundleFiles;
use super::context::Context;
use super::figures::{Drawn, HoverPoint};
use super::inline;
use super::rows::Rows;
use crate::error::{Error, Result};
use crate::model::results::ResultSet;

const REPORT: &str = include_str!("../../templates/report.html.j2");
const TREND: &str = include_str!("../../templates/trend.html.j2");
const FIGURE: &str = include_str!("../../templates/figure.html.j2");
const CSS: &str = include_str!("../../templates/report.css");
const JS: &str = include_str!("../../templates/report.js");

/// At most this many failed runs carry the tail of their log (the rest link to it).
const MAX_TAILS: usize = 200;
/// The tail of a log: at most this many lines and bytes.
const TAIL_LINES: usize = 40;
const TAIL_BYTES: u64 = 6 * 1024;

/// A figure as the page shows it: its SVG inline and its hover values as JSON.
#[derive(Debug, Serialize)]
pub(crate) struct InlineFigure {
    pub(crate) name: String,
    pub(crate) title: String,
    pub(crate) caption: String,
    /// `../figures/<name>.svg` and `.png`, relative to `reports/`.
    pub(crate) svg_href: String,
    pub(crate) png_href: String,
    /// The SVG markup, as plotters wrote it: safe text, or its file copied into the page as
    /// it is rendered (`inline`).
    pub(crate) svg: minijinja::Value,
    /// Its width in pixels: the page never draws it wider (small figures stay their size).
    pub(crate) width: u32,
    /// The figure's hover values as JSON (`<` escaped, safe inside a script element), text or
    /// file like `svg`.
    pub(crate) hover_json: minijinja::Value,
}

#[derive(Debug, Serialize)]
struct FailureLog {
    /// `../<bundle>/run.log`, or none when the bundle has no log.
    log_href: Option<String>,
    /// The last lines of `run.log` (none past `MAX_TAILS` failures or without a log).
    tail: Option<String>,
    /// "last 40 lines of 1,234" and the like.
    tail_note: String,
}

#[derive(Debug, Serialize)]
struct Extras {
    table: super::results_table::Table,
    figures: Vec<InlineFigure>,
    /// One per `failures[]`, in its order.
    failure_logs: Rows<FailureLog>,
    /// One per `profiles[]`, in its order: its flame graph as a `data:` URI, or none.
    flamegraphs: Vec<Option<String>>,
    css: &'static str,
    js: &'static str,
}

#[derive(Serialize)]
struct Page<'a> {
    #[serde(flatten)]
    ctx: &'a Context,
    html: Extras,
}

/// The report page of `ctx` for the run dir `run_dir` (whose figures are drawn), written into
/// `out` as it is rendered.
/// The bundle files it links are `files` (stat-ed once for the report's inputs).
pub(crate) fn render_report(
    results: &ResultSet,
    ctx: &Context,
    drawn: &[Drawn],
    (run_dir, files): (&Path, &BundleFiles),
    out: &mut dyn Write,
) -> Result<()> {
    let figures = drawn
        .iter()
        .map(inline_figure)
        .collect::<Result<Vec<_>>>()?;
    let page = Page {
        ctx,
        html: Extras {
            table: super::results_table::table(results, ctx, files),
            figures,
            failure_logs: Rows::from(
                (ctx.failures.iter().enumerate())
                    .map(|(i, f)| {
                        let has_log = files.of(&f.bundle).has_log();
                        failure_log(run_dir, &f.bundle, has_log, i < MAX_TAILS)
                    })
                    .collect::<Vec<_>>(),
            ),
            flamegraphs: (ctx.profiles.iter())
                .map(|p| super::profile_links::inline_flamegraph(run_dir, p))
                .collect(),
            css: CSS,
            js: JS,
        },
    };
    render(REPORT, "templates/report.html.j2", &page, out)
}

#[derive(Debug, Serialize)]
struct TrendPoint {
    date: String,
    run: String,
    commit: Option<String>,
    median: String,
    ci: String,
    n: usize,
    /// A change point starts here.
    step: bool,
}

#[derive(Debug, Serialize)]
struct TrendStep {
    text: String,
    /// A slower step lasting to the newest point.
    regression: bool,
}

#[derive(Debug, Serialize)]
struct TrendSeries {
    title: String,
    points: Vec<TrendPoint>,
    steps: Vec<TrendStep>,
    regression: bool,
    newest_median: String,
    newest_median_s: f64,
}

#[derive(Serialize)]
struct TrendPage<'a> {
    title: &'a str,
    series: Vec<TrendSeries>,
    figures: Vec<InlineFigure>,
    html: Assets,
}

#[derive(Serialize)]
struct Assets {
    css: &'static str,
    js: &'static str,
}

/// `campaign history trend --out FILE.html`: one self-contained page with every series' trend
/// (the same figure as `--out FILE.svg`, with hover values) and its change points.
pub(crate) fn write_trend_page(
    series: &[crate::model::series::Series],
    steps: &[Vec<crate::model::series::Step>],
    out: &Path,
) -> Result<()> {
    use crate::model::series::Direction;
    use crate::model::units::format_seconds;
    let rows: Vec<TrendSeries> = series
        .iter()
        .zip(steps)
        .map(|(s, st)| {
            let newest = s.points.last().map_or(f64::NAN, |p| p.median_s);
            let steps: Vec<TrendStep> = st
                .iter()
                .map(|step| TrendStep {
                    text: format!(
                        "{} ×{:.2} [{:.2}, {:.2}] at #{}{}",
                        step.direction,
                        step.ratio,
                        step.ratio_lo,
                        step.ratio_hi,
                        step.at + 1,
                        if step.current { ", still current" } else { "" }
                    ),
                    regression: step.current && step.direction == Direction::Slower,
                })
                .collect();
            TrendSeries {
                title: format!(
                    "{} · {} · host {} ({})",
                    s.case_id,
                    s.key.stack,
                    if s.host.is_empty() {
                        "unknown"
                    } else {
                        &s.host
                    },
                    s.key.host_fingerprint
                ),
                points: s
                    .points
                    .iter()
                    .enumerate()
                    .map(|(i, p)| TrendPoint {
                        date: p.date.get(..19).unwrap_or(&p.date).replacen('T', " ", 1),
                        run: Path::new(&p.run_dir)
                            .file_name()
                            .map(|n| n.to_string_lossy().into_owned())
                            .unwrap_or_else(|| p.run_dir.clone()),
                        commit: p
                            .commit
                            .as_deref()
                            .map(|c| c.get(..10).unwrap_or(c).to_string()),
                        median: format_seconds(p.median_s),
                        ci: format!(
                            "[{}, {}]",
                            format_seconds(p.ci_lo_s),
                            format_seconds(p.ci_hi_s)
                        ),
                        n: p.n,
                        step: st.iter().any(|step| step.at == i),
                    })
                    .collect(),
                regression: steps.iter().any(|t| t.regression),
                steps,
                newest_median: format_seconds(newest),
                newest_median_s: newest,
            }
        })
        .collect();
    let title = "Performance history";
    // Any number of series: a figure a page of them (`figures::trend_pages`).
    let pages = super::figures::trend_pages(series.len());
    let n_pages = pages.len();
    let figures = (pages.into_iter().enumerate())
        .map(|(k, range)| {
            let (svg, hover) =
                super::figures::trend_svg(&series[range.clone()], &steps[range.clone()])?;
            let title = if n_pages == 1 {
                "Median execute time per run with 95 % CI".to_string()
            } else {
                format!(
                    "Series {}–{} of {} (figure {} of {n_pages})",
                    range.start + 1,
                    range.end,
                    series.len(),
                    k + 1
                )
            };
            Ok(inline_svg(
                &format!("trend-{}", k + 1),
                &title,
                "One panel per series, runs in time order labelled by stack commit where it \
                 changes between runs, else by date; a series spanning more than a decade is on \
                 a log axis; change points are named in each panel's title. Point at a median \
                 for its run, commit and interval.",
                svg,
                &hover,
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    // A struct, not a `serde_json` value: the figure's markup is a safe minijinja value, which
    // a JSON value would turn into plain (escaped) text.
    let page = TrendPage {
        title,
        series: rows,
        figures,
        html: Assets { css: CSS, js: JS },
    };
    let mut text = Vec::new();
    render(TREND, "templates/trend.html.j2", &page, &mut text)?;
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    crate::store::atomic::write_atomic(out, &text)
}

/// An SVG (markup) and its hover values as the page shows them.
pub(crate) fn inline_svg(
    name: &str,
    title: &str,
    caption: &str,
    svg: String,
    hover: &[HoverPoint],
) -> InlineFigure {
    InlineFigure {
        name: name.to_string(),
        title: title.to_string(),
        caption: caption.to_string(),
        svg_href: String::new(),
        png_href: String::new(),
        width: inline::svg_width(&svg),
        svg: minijinja::Value::from_safe_string(strip_xml_prolog(svg)),
        hover_json: minijinja::Value::from_safe_string(script_json(&hover)),
    }
}

/// A drawn figure, its SVG and hover values copied from their files as the page is rendered.
fn inline_figure(d: &Drawn) -> Result<InlineFigure> {
    let file = |p: &Path| {
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
        format!("../figures/{}", name.unwrap_or_default())
    };
    let (svg, width) = inline::svg(&d.svg)?;
    Ok(InlineFigure {
        name: d.name.clone(),
        title: d.title.clone(),
        caption: d.caption.clone(),
        svg_href: file(&d.svg),
        png_href: file(&d.png),
        svg,
        width,
        hover_json: inline::hover_json(&d.hover)?,
    })
}

fn strip_xml_prolog(svg: String) -> String {
    match svg.find("<svg") {
        Some(0) | None => svg,
        Some(i) => svg[i..].to_string(),
    }
}

/// JSON that can sit inside `<script type="application/json">` (no `</script>` in it).
fn script_json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value)
        .unwrap_or_else(|_| "[]".into())
        .replace('<', "\\u003c")
}

/// What the page reads from the bundles of `results`' runs — which of each bundle's files
/// exist, and each failure's log tail as the page shows it — so a report is rendered again
/// whenever any of it changed (`report::Inputs`). Covers every run, a superset of the rows the
/// table links; failures are the runs with no timed value of their metric, as
/// `report::summary` finds them, in run order. Which files exist is `files`' answer.
pub(crate) fn bundle_reads(
    results: &ResultSet,
    run_dir: &Path,
    files: &BundleFiles,
) -> Vec<String> {
    let mut out = Vec::with_capacity(results.runs.len());
    let mut failures = 0;
    for run in &results.runs {
        let bundle = run.bundle.display().to_string();
        let present = files.of(&bundle);
        out.push(
            present
                .files()
                .map(|(_, f)| f)
                .collect::<Vec<_>>()
                .join(","),
        );
        if run.timed(results.metric(&run.stack)).is_empty() {
            let log = failure_log(run_dir, &bundle, present.has_log(), failures < MAX_TAILS);
            out.push(format!(
                "{:?} {:?} {}",
                log.log_href, log.tail, log.tail_note
            ));
            failures += 1;
        }
    }
    out
}

/// The page's entry for a failed run whose bundle is `bundle`: `has_log` says whether it has a
/// `run.log` (`bundle_files::Present::has_log`).
fn failure_log(run_dir: &Path, bundle: &str, has_log: bool, with_tail: bool) -> FailureLog {
    let log = run_dir.join(bundle).join("run.log");
    if bundle.is_empty() || !has_log {
        return FailureLog {
            log_href: None,
            tail: None,
            tail_note: "no run.log in the bundle".into(),
        };
    }
    let href = Some(format!("../{bundle}/run.log"));
    if !with_tail {
        return FailureLog {
            log_href: href,
            tail: None,
            tail_note: format!("only the first {MAX_TAILS} failures carry their log's tail"),
        };
    }
    match tail(&log) {
        Ok((text, note)) => FailureLog {
            log_href: href,
            tail: Some(text),
            tail_note: note,
        },
        Err(e) => FailureLog {
            log_href: href,
            tail: None,
            tail_note: format!("run.log could not be read: {e}"),
        },
    }
}

/// The last `TAIL_LINES` lines (at most `TAIL_BYTES`) of a log, lossily decoded, and a note
/// saying how much of it that is.
fn tail(path: &Path) -> std::io::Result<(String, String)> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path)?;
    let len = f.metadata()?.len();
    let start = len.saturating_sub(TAIL_BYTES);
    f.seek(SeekFrom::Start(start))?;
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes)?;
    let text = String::from_utf8_lossy(&bytes);
    let mut lines: Vec<&str> = text.lines().collect();
    if start > 0 && !lines.is_empty() {
        // The first line read is probably cut.
        lines.remove(0);
    }
    let keep = lines.len().saturating_sub(TAIL_LINES);
    let shown = &lines[keep..];
    let note = if len == 0 {
        "run.log is empty".to_string()
    } else if start == 0 && keep == 0 {
        format!("the whole run.log ({len} bytes)")
    } else {
        format!("the last {} lines of run.log ({len} bytes)", shown.len())
    };
    Ok((shown.join("\n"), note))
}

fn render<C: Serialize>(source: &str, name: &str, ctx: &C, out: &mut dyn Write) -> Result<()> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_auto_escape_callback(|_| AutoEscape::Html);
    let syntax = SyntaxConfig::builder()
        .trim_blocks(true)
        .lstrip_blocks(true)
        .build()
        .map_err(|e| Error::Environment(format!("template syntax configuration: {e}")))?;
    env.set_syntax(syntax);
    env.set_formatter(inline::write);
    // `clip(n)`: at most n characters, "…" when cut (a summary line of a long reason).
    env.add_filter("clip", |s: String, n: usize| {
        if s.chars().count() <= n {
            s
        } else {
            let mut cut: String = s.chars().take(n).collect();
            cut.push('…');
            cut
        }
    });
    let failed = |e: minijinja::Error| {
        Error::Environment(format!("rendering the built-in HTML template {name}: {e}"))
    };
    env.add_template("figure", FIGURE).map_err(failed)?;
    env.add_template(name, source).map_err(failed)?;
    let tmpl = env.get_template(name).map_err(failed)?;
    tmpl.render_captured_to(minijinja::value::Serde(ctx), out)
        .map(drop)
        .map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trend_page_shows_every_series_in_figures_of_at_most_24() {
        use crate::model::series::{Point, Series, SeriesKey};
        let point = |i: i64| Point {
            run_dir_id: i,
            run_dir: format!("/r/run_{i}"),
            stamp: format!("2026010{i}_000000"),
            date: format!("2026-01-0{i}T00:00:00Z"),
            commit: None,
            median_s: 1e-3,
            ci_lo_s: 0.9e-3,
            ci_hi_s: 1.1e-3,
            n: 30,
            cpu_contention: None,
            oversubscribed: false,
            definition: None,
        };
        let series: Vec<Series> = (0..30)
            .map(|k| Series {
                key: SeriesKey {
                    series: format!("s{k}"),
                    case_key: format!("s{k}"),
                    stack: "host".into(),
                    host_fingerprint: "h".into(),
                },
                case_id: format!("case{k}"),
                op: "allreduce".into(),
                host: "vm".into(),
                campaign: "c".into(),
                bytes: 1024,
                points: vec![point(1), point(2)],
            })
            .collect();
        let steps = vec![Vec::new(); series.len()];
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("trend.html");
        write_trend_page(&series, &steps, &out).unwrap();
        let page = std::fs::read_to_string(&out).unwrap();
        assert_eq!(page.matches("<svg").count(), 2, "two figures");
        assert!(page.contains("Series 1–24 of 30 (figure 1 of 2)"));
        assert!(page.contains("Series 25–30 of 30 (figure 2 of 2)"));
        assert!(page.contains("30 series, in 2 figures"));
    }

    #[test]
    fn a_long_log_keeps_its_last_lines_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("run.log");
        let text: String = (1..=500).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&log, text).unwrap();
        let (tail, note) = tail(&log).unwrap();
        assert!(tail.ends_with("line 500"), "{tail}");
        assert_eq!(tail.lines().count(), TAIL_LINES);
        assert!(tail.starts_with("line 461"), "{tail}");
        assert!(note.contains("last 40 lines"), "{note}");
    }

    #[test]
    fn hover_json_cannot_end_its_script_element() {
        let json = script_json(&vec!["</script><b>"]);
        assert!(!json.contains('<'), "{json}");
        let back: Vec<String> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, vec!["</script><b>"]);
    }
}
