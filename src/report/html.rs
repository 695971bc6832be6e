//! The self-contained HTML report (`reports/index.html`) and the history trend page.
//!
//! Owns what the HTML templates get beyond the Markdown's context: the results table made
//! generic over the case fields the context has (one row per (case, stack), sortable and
//! filterable in the page), every figure's SVG inline with its hover values beside it, and the
//! tail of each failed run's `run.log` (the one thing of a bundle this room reads). The page
//! is rendered with minijinja from `templates/` (HTML auto-escaping on) and fetches nothing:
//! its CSS and JavaScript are included from `templates/report.css` and `report.js`.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use minijinja::syntax::SyntaxConfig;
use minijinja::{AutoEscape, Environment, UndefinedBehavior};
use serde::Serialize;

use super::context::{Cell, Context};
use super::figures::{Drawn, HoverPoint};
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
    /// The SVG markup, as plotters wrote it.
    pub(crate) svg: String,
    /// Its width in pixels: the page never draws it wider (small figures stay their size).
    pub(crate) width: u32,
    /// The figure's hover values as JSON (`<` escaped, safe inside a script element).
    pub(crate) hover_json: String,
}

#[derive(Debug, Serialize)]
struct Column {
    key: String,
    label: String,
    numeric: bool,
}

#[derive(Debug, Serialize)]
struct TableCell {
    text: String,
    /// What the column sorts by (raw number or text).
    sort: String,
}

#[derive(Debug, Serialize)]
struct Link {
    /// Short text of the link (`log`); `file` its file name (`run.log`).
    name: String,
    file: String,
    href: String,
}

#[derive(Debug, Serialize)]
struct TableRow {
    cells: Vec<TableCell>,
    status: String,
    /// Oversubscribed or starved of CPU: its number is partly the machine's.
    caveat: bool,
    links: Vec<Link>,
}

#[derive(Debug, Serialize)]
struct Table {
    columns: Vec<Column>,
    rows: Rows<TableRow>,
    /// Columns with the same value in every row, left out of the table and said once above it
    /// (`{label, text}`), so the table fits a laptop screen.
    same: Vec<SameValue>,
}

#[derive(Debug, Serialize)]
struct SameValue {
    label: String,
    text: String,
}

/// Columns that may be folded into "same in every row" (never the row's identity or numbers).
const FOLDABLE: &[&str] = &[
    "op", "variant", "p", "count", "dtype", "core_num", "bytes", "metric",
];

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
    table: Table,
    figures: Vec<InlineFigure>,
    /// One per `failures[]`, in its order.
    failure_logs: Rows<FailureLog>,
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
pub(crate) fn render_report(
    results: &ResultSet,
    ctx: &Context,
    drawn: &[Drawn],
    hovers: &[Vec<HoverPoint>],
    run_dir: &Path,
    out: &mut dyn Write,
) -> Result<()> {
    let figures = drawn
        .iter()
        .zip(hovers)
        .map(|(d, h)| inline_figure(d, h))
        .collect::<Result<Vec<_>>>()?;
    let page = Page {
        ctx,
        html: Extras {
            table: table(results, ctx, run_dir),
            figures,
            failure_logs: Rows::from(
                (ctx.failures.iter().enumerate())
                    .map(|(i, f)| failure_log(run_dir, &f.bundle, i < MAX_TAILS))
                    .collect::<Vec<_>>(),
            ),
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

/// `campaign history trend --out FILE.html`: one self-contained page with every series' trend
/// (the same figure as `--out FILE.svg`, with hover values) and its change points.
pub(crate) fn write_trend_page(
    series: &[crate::model::series::Series],
    steps: &[Vec<crate::model::series::Step>],
    out: &Path,
) -> Result<()> {
    use crate::model::series::Direction;
    use crate::model::units::format_seconds;
    let (svg, hover) = super::figures::trend_svg(series, steps)?;
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
    let figure = inline_svg(
        "trend",
        "Median execute time per run with 95 % CI",
        "One panel per series, runs in time order labelled by stack commit (or date); change \
         points are named in each panel's title. Point at a median for its run, commit and \
         interval.",
        svg,
        &hover,
    );
    let page = serde_json::json!({
        "title": title,
        "series": rows,
        "figure": figure,
        "html": {"css": CSS, "js": JS},
    });
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
        width: svg_width(&svg),
        svg: strip_xml_prolog(svg),
        hover_json: script_json(&hover),
    }
}

fn inline_figure(d: &Drawn, hover: &[HoverPoint]) -> Result<InlineFigure> {
    let svg = std::fs::read_to_string(&d.svg).map_err(|e| Error::io(&d.svg, e))?;
    let file = |p: &Path| {
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
        format!("../figures/{}", name.unwrap_or_default())
    };
    let mut f = inline_svg(&d.name, &d.title, &d.caption, svg, hover);
    f.svg_href = file(&d.svg);
    f.png_href = file(&d.png);
    Ok(f)
}

/// The `width` of an SVG's root element (plotters writes it in pixels); 0 when it has none.
fn svg_width(svg: &str) -> u32 {
    let Some(root) = svg.find("<svg").map(|i| &svg[i..]) else {
        return 0;
    };
    let root = &root[..root.find('>').unwrap_or(root.len())];
    root.split_once(" width=\"")
        .and_then(|(_, rest)| rest.split('"').next())
        .and_then(|w| w.trim_end_matches("px").parse().ok())
        .unwrap_or(0)
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

/// Case fields shown first, in this order; any other scalar field of `cases[]` (an `op`
/// column, say) follows, in the order the context has them.
const LEADING: &[&str] = &[
    "case_id", "op", "variant", "p", "count", "dtype", "core_num",
];
/// Case fields not shown as columns of their own.
const HIDDEN: &[&str] = &["cells", "n_bytes"];

fn label(key: &str) -> String {
    match key {
        "case_id" => "case".into(),
        "p" => "P".into(),
        k => k.to_string(),
    }
}

/// The columns a case row gives the table: `LEADING` first (those it has), then its other
/// scalar fields in order, never `HIDDEN` ones or lists (`cells`).
fn case_keys(first: &serde_json::Map<String, serde_json::Value>) -> Vec<String> {
    let mut keys: Vec<String> = LEADING
        .iter()
        .filter(|k| first.contains_key(**k))
        .map(|k| k.to_string())
        .collect();
    for (k, v) in first {
        let scalar = !(v.is_array() || v.is_object());
        if scalar && !keys.contains(k) && !HIDDEN.contains(&k.as_str()) {
            keys.push(k.clone());
        }
    }
    keys
}

/// One row per (case, stack) cell of `cases[]`, its columns the case's scalar fields (whatever
/// the context has), then stack, metric, status, median, CI, repeats × rounds.
fn table(results: &ResultSet, ctx: &Context, run_dir: &Path) -> Table {
    let limit = crate::analysis::verdict::DEFAULT_MAX_CONTENTION;
    // (case, stack) → the bundle of its first run and whether any run was starved of CPU.
    let mut runs: HashMap<(&str, &str), (String, bool)> = HashMap::new();
    for r in &results.runs {
        let e = runs
            .entry((r.base_case_id(), r.stack.as_str()))
            .or_insert_with(|| (r.bundle.display().to_string(), false));
        e.1 |= r.contended(limit);
    }
    // Each case's fields as JSON, made again where needed rather than held for every case.
    let case_values = |c: &super::context::CaseRow| match serde_json::to_value(c) {
        Ok(serde_json::Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    };
    // Every field any case has (an `op` or `nodes` that only some cases carry gets a column;
    // the others show –), in the order the cases first give them.
    let mut union = serde_json::Map::new();
    for m in ctx.cases.iter().map(case_values) {
        for (k, v) in m {
            if !union.contains_key(&k) {
                union.insert(k, v);
            }
        }
    }
    let keys = case_keys(&union);
    let columns = table_columns(&keys, &union);
    let mut rows = Vec::new();
    for case in ctx.cases.iter() {
        let values = case_values(case);
        let mut lead: Vec<TableCell> = Vec::new();
        for k in &keys {
            let v = values.get(k).cloned().unwrap_or(serde_json::Value::Null);
            let text = match &v {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Null => "–".into(),
                other => other.to_string(),
            };
            let sort = if k == "bytes" {
                case.n_bytes.to_string()
            } else {
                text.clone()
            };
            lead.push(TableCell { text, sort });
        }
        for cell in &case.cells {
            if cell.status == "absent" {
                continue;
            }
            let (bundle, contended) = runs
                .get(&(case.case_id.as_str(), cell.stack.as_str()))
                .cloned()
                .unwrap_or_default();
            let mut status = cell.status.clone();
            if cell.oversubscribed {
                status.push_str(" ⚠ oversubscribed");
            }
            if contended {
                status.push_str(" ⚠ contended");
            }
            let mut cells: Vec<TableCell> = lead
                .iter()
                .map(|c| TableCell {
                    text: c.text.clone(),
                    sort: c.sort.clone(),
                })
                .collect();
            cells.extend(stack_cells(cell, &status));
            rows.push(TableRow {
                cells,
                status: cell.status.clone(),
                caveat: cell.oversubscribed || contended,
                links: bundle_links(run_dir, &bundle),
            });
        }
    }
    fold_constant_columns(columns, rows)
}

/// The table's columns: the case keys (numeric when their value is), then the stack's.
fn table_columns(
    keys: &[String],
    union: &serde_json::Map<String, serde_json::Value>,
) -> Vec<Column> {
    let mut columns: Vec<Column> = keys
        .iter()
        .map(|k| Column {
            key: k.clone(),
            label: label(k),
            numeric: union.get(k).is_some_and(|v| v.is_number() || k == "bytes"),
        })
        .collect();
    for (key, numeric) in [
        ("stack", false),
        ("metric", false),
        ("status", false),
        ("median", true),
        ("ci", true),
        ("repeats × rounds", true),
    ] {
        columns.push(Column {
            key: key.into(),
            label: if key == "ci" {
                "95 % CI".into()
            } else {
                key.into()
            },
            numeric,
        });
    }
    columns
}

/// The cells of one stack in a row: stack, metric, status, median, CI, repeats × rounds.
fn stack_cells(cell: &Cell, status: &str) -> Vec<TableCell> {
    let num = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
    let seconds = |v: Option<f64>| {
        v.map(crate::model::units::format_seconds)
            .unwrap_or_else(|| "–".into())
    };
    vec![
        TableCell {
            text: cell.stack.clone(),
            sort: cell.stack.clone(),
        },
        TableCell {
            text: cell.metric.clone(),
            sort: cell.metric.clone(),
        },
        TableCell {
            text: status.to_string(),
            sort: status.to_string(),
        },
        TableCell {
            text: seconds(cell.median_s),
            sort: num(cell.median_s),
        },
        TableCell {
            text: match (cell.ci_lo_s, cell.ci_hi_s) {
                (Some(lo), Some(hi)) => format!(
                    "[{}, {}]",
                    crate::model::units::format_seconds(lo),
                    crate::model::units::format_seconds(hi)
                ),
                _ => "–".into(),
            },
            sort: num(cell.ci_hi_s.zip(cell.ci_lo_s).map(|(hi, lo)| hi - lo)),
        },
        TableCell {
            text: format!("{}×{}", cell.repeats, cell.rounds),
            sort: (cell.repeats * 1_000_000 + cell.rounds).to_string(),
        },
    ]
}

/// Leave out the foldable columns whose text is the same in every row (two rows or more).
fn fold_constant_columns(mut columns: Vec<Column>, mut rows: Vec<TableRow>) -> Table {
    let mut same = Vec::new();
    if rows.len() >= 2 {
        let constant: Vec<usize> = (0..columns.len())
            .filter(|&i| {
                FOLDABLE.contains(&columns[i].key.as_str())
                    && rows
                        .iter()
                        .all(|r| r.cells[i].text == rows[0].cells[i].text)
            })
            .collect();
        for &i in constant.iter().rev() {
            let col = columns.remove(i);
            let text = rows[0].cells[i].text.clone();
            for r in &mut rows {
                r.cells.remove(i);
            }
            same.insert(
                0,
                SameValue {
                    label: col.label,
                    text,
                },
            );
        }
    }
    Table {
        columns,
        rows: rows.into(),
        same,
    }
}

/// Links from `reports/` to the bundle's files that exist.
fn bundle_links(run_dir: &Path, bundle: &str) -> Vec<Link> {
    if bundle.is_empty() {
        return Vec::new();
    }
    [
        ("log", "run.log"),
        ("manifest", "manifest.json"),
        ("timing", "timing.json"),
    ]
    .iter()
    .filter(|(_, f)| run_dir.join(bundle).join(f).is_file())
    .map(|(name, f)| Link {
        name: name.to_string(),
        file: f.to_string(),
        href: format!("../{bundle}/{f}"),
    })
    .collect()
}

fn failure_log(run_dir: &Path, bundle: &str, with_tail: bool) -> FailureLog {
    let log = run_dir.join(bundle).join("run.log");
    if bundle.is_empty() || !log.is_file() {
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
    fn an_op_column_appears_where_the_cases_have_one() {
        let row = |v: serde_json::Value| match v {
            serde_json::Value::Object(m) => m,
            _ => unreachable!(),
        };
        let today = row(serde_json::json!({
            "case_id": "c", "variant": "mesh", "p": 2, "count": 64, "dtype": "fp32",
            "core_num": 1, "n_bytes": 256, "bytes": "256 B", "cells": []
        }));
        assert_eq!(
            case_keys(&today),
            ["case_id", "variant", "p", "count", "dtype", "core_num", "bytes"]
        );
        let with_op = row(serde_json::json!({
            "case_id": "c", "variant": "mesh", "p": 2, "count": 64, "dtype": "fp32",
            "core_num": 1, "n_bytes": 256, "bytes": "256 B", "nodes": 2, "op": "allgather",
            "cells": []
        }));
        assert_eq!(
            case_keys(&with_op),
            ["case_id", "op", "variant", "p", "count", "dtype", "core_num", "bytes", "nodes"]
        );
    }

    #[test]
    fn the_width_of_a_plotters_svg_is_read_from_its_root() {
        let svg = r#"<svg width="760" height="468" viewBox="0 0 760 468"><rect width="9"/></svg>"#;
        assert_eq!(svg_width(svg), 760);
        assert_eq!(svg_width("<svg><rect width=\"9\"/></svg>"), 0);
    }

    #[test]
    fn hover_json_cannot_end_its_script_element() {
        let json = script_json(&vec!["</script><b>"]);
        assert!(!json.contains('<'), "{json}");
        let back: Vec<String> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, vec!["</script><b>"]);
    }
}
