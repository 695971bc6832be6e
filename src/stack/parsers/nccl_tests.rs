//! Parser `nccl-tests`: NVIDIA nccl-tests `all_reduce_perf` output.
//!
//! Three layouts, all read:
//! - current text table: `size count type redop root | time algbw busbw #wrong | (in-place)`;
//! - legacy text table (before the `root` column): `size count type redop | time algbw busbw
//!   error | …`, where `error` is the max deviation rather than a count of wrong elements;
//! - `-J FILE` JSON (printed into the output, e.g. by `cat` after the run):
//!   `{"results": [{"size", "count", "out_of_place": {"time", "nwrong"}, "in_place": …}]}`.
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
        let (time_i, wrong_i, width) = match layout {
            Layout::Current => (5, 8, 13),
            Layout::Legacy => (4, 7, 12),
            Layout::Unknown => (5, 8, 13),
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
            wrong_value(toks[wrong_i + 4], layout),
        );
        Some(TableRow {
            bytes: toks[0].parse().ok()?,
            count: toks[1].parse().ok(),
            time_s: time_us / 1e6,
            ok,
        })
    }
}

fn json_rows(doc: &Value, warnings: &mut Vec<String>) -> Vec<TableRow> {
    let Some(results) = doc.get("results").and_then(Value::as_array) else {
        warnings.push("nccl-tests JSON without a `results` list".to_string());
        return Vec::new();
    };
    results
        .iter()
        .filter_map(|r| {
            let bytes = r.get("size")?.as_u64()?;
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
            Some(TableRow {
                bytes,
                count: r.get("count").and_then(Value::as_u64),
                time_s: oop_time.or(ip_time)? / 1e6,
                ok: and_ok(oop_ok, ip_ok),
            })
        })
        .collect()
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
            if header.contains("#wrong") {
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
                    if let Some(okay) = doc
                        .get("out_of_bounds")
                        .and_then(|o| o.get("okay"))
                        .and_then(Value::as_bool)
                    {
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
