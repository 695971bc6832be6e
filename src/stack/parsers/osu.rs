//! Parser `osu`: OSU micro-benchmarks `osu_allreduce` latency table.
//!
//! ```text
//! # OSU MPI Allreduce Latency Test v7.3
//! # Datatype: MPI_FLOAT.
//! # Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations
//! 1024                    3.91              3.55              4.27        1000
//! ```
//! Columns are found by the header (two or more spaces apart), so the short form (`Size  Avg
//! Latency(us)`) and the `-f` form both work, as does a `Validation` column (`Pass`/`Fail`).
//! The sample time is `Max Latency` when printed (the slowest rank, as every other stack
//! reports), else `Avg Latency`. Counts follow from the size and the `# Datatype:` line.

use regex::Regex;

use crate::model::stack::StackDef;
use crate::stack::parsers::table::{collect_rows, number, RowSource, TableParser, TableRow};
use crate::stack::parsers::{ParseContext, Parser};

/// Every row of a whole log, for runs that cover several sizes.
pub fn rows(text: &str) -> (Vec<TableRow>, Vec<String>) {
    collect_rows(Osu::new(), text)
}

/// The size OSU prints for a case of `n_bytes` (campaign's `count` is the whole buffer), by
/// the benchmark the argv runs: osu_allgather and osu_alltoall count the block each rank sends
/// to each rank (`n_bytes / p`), every other benchmark the whole message.
pub(crate) fn row_bytes(argv: &[String], n_bytes: u64, p: u32) -> u64 {
    let per_block = argv.iter().any(|a| {
        let name = a.rsplit('/').next().unwrap_or(a);
        name == "osu_allgather" || name == "osu_alltoall"
    });
    if per_block {
        n_bytes / u64::from(p.max(1))
    } else {
        n_bytes
    }
}

pub fn parser(_def: &StackDef, ctx: &ParseContext) -> Box<dyn Parser> {
    let rows = row_bytes(&ctx.argv, ctx.n_bytes, ctx.p);
    TableParser::boxed_rows(Box::new(Osu::new()), ctx, rows)
}

pub(crate) struct Osu {
    columns: Vec<String>,
    elem_bytes: Option<u64>,
    split: Regex,
}

impl Default for Osu {
    fn default() -> Self {
        Osu::new()
    }
}

impl Osu {
    pub(crate) fn new() -> Osu {
        Osu {
            columns: Vec::new(),
            elem_bytes: None,
            split: Regex::new(r"\s{2,}").expect("static regex"),
        }
    }

    fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.starts_with(name))
    }
}

fn mpi_type_bytes(name: &str) -> Option<u64> {
    Some(match name.trim_end_matches('.') {
        "MPI_CHAR" | "MPI_SIGNED_CHAR" | "MPI_UNSIGNED_CHAR" | "MPI_BYTE" => 1,
        "MPI_SHORT" | "MPI_UNSIGNED_SHORT" => 2,
        "MPI_INT" | "MPI_UNSIGNED" | "MPI_FLOAT" => 4,
        "MPI_LONG" | "MPI_UNSIGNED_LONG" | "MPI_DOUBLE" | "MPI_LONG_LONG" => 8,
        _ => return None,
    })
}

impl RowSource for Osu {
    fn line(&mut self, text: &str, warnings: &mut Vec<String>) -> Option<TableRow> {
        let trimmed = text.trim();
        if let Some(header) = trimmed.strip_prefix('#') {
            let header = header.trim();
            if let Some(dt) = header.strip_prefix("Datatype:") {
                self.elem_bytes = mpi_type_bytes(dt.trim());
            } else if header.starts_with("Size") {
                self.columns = self.split.split(header).map(str::to_string).collect();
            }
            return None;
        }
        let toks: Vec<&str> = trimmed.split_whitespace().collect();
        let bytes: u64 = toks.first()?.parse().ok()?;
        if toks.len() < 2 {
            warnings.push(format!("short osu row (truncated?): {trimmed}"));
            return None;
        }
        let time_col = self
            .column("Max Latency")
            .or_else(|| self.column("Avg Latency"))
            .unwrap_or(1);
        let Some(time_us) = toks.get(time_col).and_then(|t| number(t)) else {
            warnings.push(format!("unreadable osu row (truncated?): {trimmed}"));
            return None;
        };
        let ok = self
            .column("Validation")
            .and_then(|i| toks.get(i))
            .map(|v| v.eq_ignore_ascii_case("pass"));
        Some(TableRow {
            bytes,
            count: self.elem_bytes.map(|e| bytes / e),
            time_s: time_us / 1e6,
            ok,
            per_rank_s: Vec::new(),
        })
    }

    fn end(&mut self, _warnings: &mut Vec<String>) -> (Vec<TableRow>, Option<bool>) {
        (Vec::new(), None)
    }
}
