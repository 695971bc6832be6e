//! Parser `nccl-tests`: NVIDIA nccl-tests `all_reduce_perf` output.
//!
//! Three layouts, all read:
//! - current text table: `size count type redop root | time algbw busbw #wrong | (in-place)`;
//! - legacy text table (before the `root` column): `size count type redop | time algbw busbw
//!   error | …`, where `error` is the max deviation rather than a count of wrong elements;
//! - `-J FILE` JSON (printed into the output, e.g. by `cat` after the run):
//!   `{"results": [{"size", "count", "out_of_place": {"time", "nwrong"}, "in_place": …}]}`;
//!   with `-I 1` each result also has `out_of_place_per_iter` (`times_us`: every timed
//!   iteration; `per_process_max_times_us`: each process's), read as one sample per iteration
//!   with its per-rank times.
//!
//! The out-of-place time (µs) is the sample; a row is wrong when either half reports wrong
//! elements (`#wrong` > 0, or a legacy `error` above the dtype tolerance). `# Out of bounds
//! values : N FAILED` fails the run. Bandwidth is recomputed (see `table`).

use serde_json::Value;

use crate::model::stack::StackDef;
use crate::stack::parsers::table::{collect_rows, number, RowSource, TableParser, TableRow};
use crate::stack::parsers::{ParseContext, Parser};

pub fn parser(_def: &StackDef, ctx: &ParseContext) -> Box<dyn Parser> {
    TableParser::boxed(Box::new(NcclTests::default()), ctx)
}

/// Legacy `error` values above this (fp16 tolerance; fp32 errors are far smaller) are wrong.
const LEGACY_ERROR_LIMIT: f64 = 2e-2;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Layout {
    #[default]
    Unknown,
    Current,
    /// The current table with `-I 1`: each half adds `i_min i_max i_p99 i_cv%`.
    PerIter,
    Legacy,
}

#[derive(Default)]
pub(crate) struct NcclTests {
    layout: Layout,
    json: Option<String>,
    verdict: Option<bool>,
}

/// Every row of a whole nccl-tests log (text or JSON), for runs that cover several sizes.
pub fn rows(text: &str) -> (Vec<TableRow>, Vec<String>) {
    collect_rows(NcclTests::default(), text)
}

fn wrong_value(tok: &str, layout: Layout) -> Option<bool> {
    if tok == "N/A" {
        return None;
    }
    let v = number(tok)?;
    Some(match layout {
        Layout::Legacy => v <= LEGACY_ERROR_LIMIT,
        _ => v == 0.0,
    })
}

fn and_ok(a: Option<bool>, b: Option<bool>) -> Option<bool> {
    match (a, b) {
        (Some(false), _) | (_, Some(false)) => Some(false),
        (None, None) => None,
        _ => Some(true),
    }
}

impl NcclTests {
    fn data_row(&self, toks: &[&str], warnings: &mut Vec<String>, text: &str) -> Option<TableRow> {
        let layout = match (self.layout, toks.len()) {
            (Layout::Unknown, n) if n >= 13 => Layout::Current,
            (Layout::Unknown, 12) => Layout::Legacy,
            (l, _) => l,
        };
        // (time column, out-of-place #wrong, distance to the in-place #wrong, columns needed)
        let (time_i, wrong_i, half, width) = match layout {
            Layout::Current | Layout::Unknown => (5, 8, 4, 13),
            Layout::PerIter => (5, 8, 8, 21),
            Layout::Legacy => (4, 7, 4, 12),
        };
        if toks.len() < width {
            warnings.push(format!(
                "short nccl-tests row (truncated?): {}",
                text.trim()
            ));
            return None;
        }
        let Some(time_us) = number(toks[time_i]) else {
            warnings.push(format!(
                "unreadable time in nccl-tests row: {}",
                text.trim()
            ));
            return None;
        };
        let ok = and_ok(
            wrong_value(toks[wrong_i], layout),
            wrong_value(toks[wrong_i + half], layout),
        );
        Some(TableRow {
            bytes: toks[0].parse().ok()?,
            count: toks[1].parse().ok(),
            time_s: time_us / 1e6,
            ok,
            per_rank_s: Vec::new(),
        })
    }
}

fn json_rows(doc: &Value, warnings: &mut Vec<String>) -> Vec<TableRow> {
    let Some(results) = doc.get("results").and_then(Value::as_array) else {
        warnings.push("nccl-tests JSON without a `results` list".to_string());
        return Vec::new();
    };
    let mut rows = Vec::new();
    for r in results {
        let Some(bytes) = r.get("size").and_then(Value::as_u64) else {
            continue;
        };
        let half = |key: &str| -> (Option<f64>, Option<bool>) {
            let Some(h) = r.get(key).filter(|h| h.is_object()) else {
                return (None, None);
            };
            let time = h
                .get("time")
                .or_else(|| h.get("cpu_time"))
                .and_then(Value::as_f64);
            let ok = h.get("nwrong").and_then(Value::as_f64).map(|w| w == 0.0);
            (time, ok)
        };
        let (oop_time, oop_ok) = half("out_of_place");
        let (ip_time, ip_ok) = half("in_place");
        let ok = and_ok(oop_ok, ip_ok);
        let count = r.get("count").and_then(Value::as_u64);
        // `-I 1`: each timed iteration's time (the slowest GPU's), and each process's — one
        // sample per iteration, not the tool's one average.
        let per_iter = (r.get("out_of_place_per_iter"))
            .or_else(|| r.get("in_place_per_iter"))
            .and_then(|p| per_iteration(p, warnings));
        match (per_iter, oop_time.or(ip_time)) {
            (Some(iterations), _) => {
                rows.extend(iterations.into_iter().map(|(t, ranks)| TableRow {
                    bytes,
                    count,
                    time_s: t,
                    ok,
                    per_rank_s: ranks,
                }))
            }
            (None, Some(time_us)) => rows.push(TableRow {
                bytes,
                count,
                time_s: time_us / 1e6,
                ok,
                per_rank_s: Vec::new(),
            }),
            (None, None) => {}
        }
    }
    rows
}

/// One `*_per_iter` object of nccl-tests' JSON (`writePerIterReport` at HEAD): each
/// iteration's time `times_us[i]` (the slowest process row) with each process row's
/// `per_process_max_times_us[r][i]`, in seconds. `None` (with a warning when malformed) when
/// there are no times.
fn per_iteration(p: &Value, warnings: &mut Vec<String>) -> Option<Vec<(f64, Vec<f64>)>> {
    let times: Vec<f64> = (p.get("times_us")?.as_array()?.iter())
        .map(|t| t.as_f64().map(|t| t / 1e6))
        .collect::<Option<_>>()
        .or_else(|| {
            warnings.push("nccl-tests JSON: a `times_us` entry is not a number".into());
            None
        })?;
    if times.is_empty() {
        return None;
    }
    let processes: Vec<Vec<f64>> = (p.get("per_process_max_times_us").and_then(Value::as_array))
        .map(|rows| {
            (rows.iter())
                .filter_map(|row| {
                    let row: Vec<f64> = (row.as_array()?.iter())
                        .map(|t| t.as_f64().map(|t| t / 1e6))
                        .collect::<Option<_>>()?;
                    (row.len() == times.len()).then_some(row)
                })
                .collect()
        })
        .unwrap_or_default();
    Some(
        (times.iter().enumerate())
            .map(|(i, t)| (*t, processes.iter().map(|row| row[i]).collect()))
            .collect(),
    )
}

impl RowSource for NcclTests {
    fn line(&mut self, text: &str, warnings: &mut Vec<String>) -> Option<TableRow> {
        if let Some(json) = &mut self.json {
            json.push_str(text);
            json.push('\n');
            return None;
        }
        let trimmed = text.trim();
        if trimmed.starts_with('{') {
            self.json = Some(format!("{trimmed}\n"));
            return None;
        }
        if let Some(header) = trimmed.strip_prefix('#') {
            if header.contains("#wrong") && header.contains("i_min") {
                self.layout = Layout::PerIter;
            } else if header.contains("#wrong") {
                self.layout = Layout::Current;
            } else if header.contains("redop") && header.contains("error") {
                self.layout = Layout::Legacy;
            } else if header.contains("Out of bounds values") {
                self.verdict = Some(!header.contains("FAILED"));
            }
            return None;
        }
        let toks: Vec<&str> = trimmed.split_whitespace().collect();
        // A data row starts with two integers and a type name; anything else (NCCL INFO lines,
        // stderr) is not ours.
        let is_row = toks.len() >= 3
            && toks[0].parse::<u64>().is_ok()
            && toks[1].parse::<u64>().is_ok()
            && toks[2]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !is_row {
            return None;
        }
        self.data_row(&toks, warnings, text)
    }

    fn end(&mut self, warnings: &mut Vec<String>) -> (Vec<TableRow>, Option<bool>) {
        let mut verdict = self.verdict;
        let rows = match self.json.take() {
            None => Vec::new(),
            Some(text) => match serde_json::from_str::<Value>(&text) {
                Ok(doc) => {
                    // nccl-tests writes booleans as the strings "true"/"false" (jsonBool).
                    let okay = doc.get("out_of_bounds").and_then(|o| o.get("okay"));
                    if let Some(okay) = okay.and_then(|v| {
                        v.as_bool().or_else(|| match v.as_str() {
                            Some("true") => Some(true),
                            Some("false") => Some(false),
                            _ => None,
                        })
                    }) {
                        verdict = Some(okay && verdict != Some(false));
                    }
                    json_rows(&doc, warnings)
                }
                Err(e) => {
                    warnings.push(format!("unreadable nccl-tests JSON (truncated?): {e}"));
                    Vec::new()
                }
            },
        };
        (rows, verdict)
    }
}
