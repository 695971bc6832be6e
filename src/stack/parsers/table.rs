//! Shared machinery of the table parsers (`nccl-tests`, `osu`, `hccl_test`): benchmark tools
//! that print one row per message size with an average time over their own iterations.
//!
//! A row becomes a sample of the case whose `count` follows from the row's size
//! ([`rows_to_samples`]); the streaming parser keeps the rows of the case it runs for (size ==
//! the case's `n_bytes`). Bandwidth is always recomputed from bytes and time: the tools' own
//! GB/s columns are never read. Pure functions and a line-fed state machine, no I/O.

use crate::model::output::{OutputLine, Stream};
use crate::model::results::Sample;
use crate::stack::parsers::hccl::bandwidth;
use crate::stack::parsers::{ParseContext, Parsed, Parser};

/// One table row: one message size.
#[derive(Debug, Clone, PartialEq)]
pub struct TableRow {
    /// Bytes per rank.
    pub(crate) bytes: u64,
    /// Elements, when the tool prints them.
    pub count: Option<u64>,
    /// The tool's time for one collective, in seconds.
    pub(crate) time_s: f64,
    /// `Some(false)` when the tool's own check failed, `None` when it did not check.
    pub(crate) ok: Option<bool>,
    /// Each rank's (process's) time for this collective, where the tool reports them
    /// (nccl-tests `-I 1`: `per_process_max_times_us`); empty otherwise.
    pub(crate) per_rank_s: Vec<f64>,
}

/// Something that turns lines into rows (one per tool).
pub(crate) trait RowSource: Send {
    /// A row, if this line is one; problems go to `warnings`.
    fn line(&mut self, text: &str, warnings: &mut Vec<String>) -> Option<TableRow>;
    /// Rows only known at the end (a JSON document), and the tool's overall verdict if it
    /// printed one (`Some(false)` = failed).
    fn end(&mut self, warnings: &mut Vec<String>) -> (Vec<TableRow>, Option<bool>);
}

/// Rows → (count, sample), the count being the row's element count or bytes / element size.
/// Each size's rows are numbered `timed-1`, `timed-2`, … in order.
pub fn rows_to_samples(rows: &[TableRow], elem_bytes: u64) -> Vec<(u64, Sample)> {
    let mut seen: std::collections::BTreeMap<u64, u32> = Default::default();
    rows.iter()
        .map(|r| {
            let count = r.count.unwrap_or(r.bytes / elem_bytes.max(1));
            let n = seen.entry(r.bytes).or_default();
            *n += 1;
            (count, row_sample(r, *n))
        })
        .collect()
}

fn row_sample(r: &TableRow, n: u32) -> Sample {
    Sample {
        round: n,
        phase: Sample::label(true, n),
        execute_s: Some(r.time_s),
        ok: r.ok != Some(false),
        bw_execute_mb_s: bandwidth(r.bytes, r.time_s),
        per_rank_execute_s: r.per_rank_s.clone(),
        ..Sample::default()
    }
}

/// The streaming parser over a [`RowSource`].
pub(crate) struct TableParser {
    ctx: ParseContext,
    /// The size the tool prints in the case's row (`n_bytes` unless the tool counts a block).
    row_bytes: u64,
    source: Box<dyn RowSource>,
    rows: Vec<TableRow>,
    warnings: Vec<String>,
}

impl TableParser {
    pub(crate) fn boxed(source: Box<dyn RowSource>, ctx: &ParseContext) -> Box<dyn Parser> {
        TableParser::boxed_rows(source, ctx, ctx.n_bytes)
    }

    /// A table parser whose tool prints the case's row as `row_bytes` (samples still count the
    /// case's `n_bytes`).
    pub(crate) fn boxed_rows(
        source: Box<dyn RowSource>,
        ctx: &ParseContext,
        row_bytes: u64,
    ) -> Box<dyn Parser> {
        Box::new(TableParser {
            row_bytes,
            ctx: ctx.clone(),
            source,
            rows: Vec::new(),
            warnings: Vec::new(),
        })
    }
}

/// A whitespace-separated token as a positive finite float.
pub(crate) fn number(tok: &str) -> Option<f64> {
    tok.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
}

impl Parser for TableParser {
    fn feed(&mut self, line: &OutputLine) {
        // Tables are printed on stdout; stderr lines are logs interleaved at arbitrary points.
        if line.stream != Stream::Stdout {
            return;
        }
        if let Some(row) = self.source.line(&line.text, &mut self.warnings) {
            self.rows.push(row);
        }
    }

    fn finish(self: Box<Self>) -> Parsed {
        let TableParser {
            ctx,
            row_bytes,
            mut source,
            mut rows,
            mut warnings,
        } = *self;
        let (late, verdict) = source.end(&mut warnings);
        // A JSON document repeats the text table's rows: prefer it when both exist.
        if !late.is_empty() {
            rows = late;
        }
        let mine: Vec<TableRow> = rows
            .iter()
            .filter(|r| row_bytes == 0 || r.bytes == row_bytes)
            .cloned()
            .collect();
        let mut out = Parsed {
            warnings,
            ..Parsed::default()
        };
        if mine.is_empty() {
            out.warnings.push(if rows.is_empty() {
                "no result rows in the output".to_string()
            } else {
                format!(
                    "no row for {} bytes (sizes seen: {})",
                    row_bytes,
                    rows.iter()
                        .map(|r| r.bytes.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            });
        }
        if let Some(bad) = mine.iter().find(|r| r.ok == Some(false)) {
            out.correctness = Some(false);
            out.error = Some(format!(
                "the tool's own check failed at {} bytes",
                bad.bytes
            ));
        } else if verdict == Some(false) {
            out.correctness = Some(false);
            out.error = Some("the tool reported a failed check".to_string());
        } else if !mine.is_empty() {
            out.correctness = Some(true);
        }
        out.samples = mine
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let mut s = row_sample(r, i as u32 + 1);
                if row_bytes != ctx.n_bytes && ctx.n_bytes > 0 {
                    s.bw_execute_mb_s = bandwidth(ctx.n_bytes, r.time_s);
                }
                s
            })
            .collect();
        out
    }
}

/// Every row of a whole log (for callers that hold the full text, e.g. one tool run covering
/// several sizes, each size feeding the case with the matching count).
pub(crate) fn collect_rows(mut source: impl RowSource, text: &str) -> (Vec<TableRow>, Vec<String>) {
    let mut warnings = Vec::new();
    let mut rows: Vec<TableRow> = text
        .lines()
        .filter_map(|l| source.line(l, &mut warnings))
        .collect();
    let (late, _) = source.end(&mut warnings);
    if !late.is_empty() {
        rows = late;
    }
    (rows, warnings)
}
