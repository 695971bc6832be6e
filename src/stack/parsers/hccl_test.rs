//! Parser `hccl_test`: CANN's HCCL performance tester (`tools/hccl_test`, e.g.
//! `all_reduce_test`).
//!
//! ```text
//! data_size(Bytes): | aveg_time(us): | alg_bandwidth(GB/s): | check_result:
//! 1024                30.57            0.03350               success
//! ```
//! Rows are read only after the `aveg_time` header (other output, including MPI and CANN log
//! lines, is ignored); `|` separators are optional. `check_result` is `success`, `failed` or
//! `NULL` (check disabled or out of the checkable range → no verdict). Its `alg_bandwidth` is
//! never read: bandwidth is recomputed from bytes and time. The table has no element count;
//! counts follow from the size and the case's dtype.

use crate::model::stack::StackDef;
use crate::stack::parsers::table::{collect_rows, number, RowSource, TableParser, TableRow};
use crate::stack::parsers::{ParseContext, Parser};

/// Every row of a whole log, for runs that cover several sizes.
pub fn rows(text: &str) -> (Vec<TableRow>, Vec<String>) {
    collect_rows(HcclTest::default(), text)
}

pub fn parser(_def: &StackDef, ctx: &ParseContext) -> Box<dyn Parser> {
    TableParser::boxed(Box::new(HcclTest::default()), ctx)
}

#[derive(Default)]
pub(crate) struct HcclTest {
    in_table: bool,
}

impl RowSource for HcclTest {
    fn line(&mut self, text: &str, warnings: &mut Vec<String>) -> Option<TableRow> {
        if text.contains("aveg_time") {
            self.in_table = true;
            return None;
        }
        if !self.in_table {
            return None;
        }
        let toks: Vec<&str> = text.split_whitespace().filter(|t| *t != "|").collect();
        let bytes: u64 = toks.first()?.parse().ok()?;
        let Some(time_us) = toks.get(1).and_then(|t| number(t)) else {
            warnings.push(format!("short hccl_test row (truncated?): {}", text.trim()));
            return None;
        };
        let ok = match toks.get(3).map(|t| t.to_ascii_lowercase()) {
            Some(t) if t == "success" => Some(true),
            Some(t) if t == "failed" || t == "fail" => Some(false),
            _ => None,
        };
        Some(TableRow {
            bytes,
            count: None,
            time_s: time_us / 1e6,
            ok,
            per_rank_s: Vec::new(),
        })
    }

    fn end(&mut self, _warnings: &mut Vec<String>) -> (Vec<TableRow>, Option<bool>) {
        (Vec::new(), None)
    }
}
