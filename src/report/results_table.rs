//! The results table of the HTML page: one row per (case, stack) cell of the context's
//! `cases[]`, its columns the case's scalar fields (whatever the context has), then stack,
//! metric, status, median, CI and repeats × rounds, with links to the run's bundle files.
//!
//! The rows are made when the template reads them, one at a time (`TableRows`, a lazy
//! minijinja sequence): a campaign of 100,000 runs never holds 100,000 rows of cell texts.
//! What is kept per row is where it comes from (case, cell, bundle). Owns the table's shape;
//! the page around it is `html`'s.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use minijinja::value::{Enumerator, Object, ObjectRepr, Value};
use serde::Serialize;

use super::bundle_files::{BundleFiles, Present};
use super::context::{CaseRow, Cell, Context};
use super::rows::Rows;
use crate::model::results::ResultSet;

#[derive(Debug, Serialize)]
pub(crate) struct Column {
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
    /// The (case, stack)'s profiles that left files (`profile_links::attach`).
    profiles: Vec<super::profile_links::RowProfile>,
}

/// The table as the template sees it (`html.table`).
#[derive(Debug, Serialize)]
pub(crate) struct Table {
    columns: Vec<Column>,
    /// A lazy sequence of rows (`TableRows`).
    rows: Value,
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

/// A case's fields as JSON, made where needed rather than held for every case.
fn case_values(c: &CaseRow) -> serde_json::Map<String, serde_json::Value> {
    match serde_json::to_value(c) {
        Ok(serde_json::Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    }
}

/// Where one row comes from: `cases[case].cells[cell]`, the bundle of its first run (and
/// which of its files exist), and whether any of its runs was starved of CPU.
#[derive(Debug)]
struct Entry {
    case: usize,
    cell: usize,
    bundle: Box<str>,
    files: Present,
    contended: bool,
}

/// Every row of the table, made on demand.
#[derive(Debug)]
struct TableRows {
    cases: Rows<CaseRow>,
    keys: Vec<String>,
    entries: Vec<Entry>,
    /// Column indices folded into "same in every row", ascending.
    folded: Vec<usize>,
}

impl TableRows {
    /// Every cell of entry `e`'s row, folded columns included.
    fn cells(&self, e: &Entry) -> (Vec<TableCell>, String, bool) {
        let case = &self.cases[e.case];
        let cell = &case.cells[e.cell];
        let values = case_values(case);
        let mut cells: Vec<TableCell> = Vec::with_capacity(self.keys.len() + 6);
        for k in &self.keys {
            let text = match values.get(k) {
                Some(serde_json::Value::String(s)) => s.clone(),
                None | Some(serde_json::Value::Null) => "–".into(),
                Some(other) => other.to_string(),
            };
            let sort = if k == "bytes" {
                case.n_bytes.to_string()
            } else {
                text.clone()
            };
            cells.push(TableCell { text, sort });
        }
        let mut status = cell.status.clone();
        if cell.oversubscribed {
            status.push_str(" ⚠ oversubscribed");
        }
        if e.contended {
            status.push_str(" ⚠ contended");
        }
        cells.extend(stack_cells(cell, &status));
        (
            cells,
            cell.status.clone(),
            cell.oversubscribed || e.contended,
        )
    }

    fn row(&self, e: &Entry) -> TableRow {
        let (mut cells, status, caveat) = self.cells(e);
        for &i in self.folded.iter().rev() {
            cells.remove(i);
        }
        TableRow {
            cells,
            status,
            caveat,
            links: bundle_links(&e.bundle, e.files),
            profiles: self.cases[e.case].cells[e.cell].profiles.clone(),
        }
    }
}

impl Object for TableRows {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Seq
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        let e = self.entries.get(key.as_usize()?)?;
        Some(Value::from(minijinja::value::Serde(self.row(e))))
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Seq(self.entries.len())
    }
}

/// The table of `ctx`'s cases, linking the bundle files `files` found.
pub(crate) fn table(results: &ResultSet, ctx: &Context, files: &BundleFiles) -> Table {
    let limit = crate::analysis::verdict::DEFAULT_MAX_CONTENTION;
    // (case, stack) → the bundle of its first run and whether any run was starved of CPU.
    let mut runs: HashMap<(&str, &str), (&Path, bool)> = HashMap::new();
    for r in &results.runs {
        let e = runs
            .entry((r.base_case_id(), r.stack.as_str()))
            .or_insert_with(|| (r.bundle.as_path(), false));
        e.1 |= r.contended(limit);
    }
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
    let mut entries = Vec::new();
    for (ci, case) in ctx.cases.iter().enumerate() {
        for (cell_index, cell) in case.cells.iter().enumerate() {
            if cell.status == "absent" {
                continue;
            }
            let (bundle, contended) = runs
                .get(&(case.case_id.as_str(), cell.stack.as_str()))
                .map(|(b, c)| (b.display().to_string(), *c))
                .unwrap_or_default();
            entries.push(Entry {
                case: ci,
                cell: cell_index,
                files: files.of(&bundle),
                bundle: bundle.into(),
                contended,
            });
        }
    }
    let rows = TableRows {
        cases: ctx.cases.clone(),
        keys,
        entries,
        folded: Vec::new(),
    };
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
fn stack_cells(cell: &Cell, status: &str) -> [TableCell; 6] {
    let num = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
    let seconds = |v: Option<f64>| {
        v.map(crate::model::units::format_seconds)
            .unwrap_or_else(|| "–".into())
    };
    [
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
/// The rows are made once here to compare them, then again when the template reads them.
fn fold_constant_columns(mut columns: Vec<Column>, mut rows: TableRows) -> Table {
    let mut same = Vec::new();
    if rows.entries.len() >= 2 {
        let (first, _, _) = rows.cells(&rows.entries[0]);
        let mut constant: Vec<bool> = (columns.iter())
            .map(|c| FOLDABLE.contains(&c.key.as_str()))
            .collect();
        for e in &rows.entries[1..] {
            if !constant.contains(&true) {
                break;
            }
            let (cells, _, _) = rows.cells(e);
            for (i, keep) in constant.iter_mut().enumerate() {
                *keep &= cells[i].text == first[i].text;
            }
        }
        for i in (0..columns.len()).rev().filter(|&i| constant[i]) {
            let col = columns.remove(i);
            same.insert(
                0,
                SameValue {
                    label: col.label,
                    text: first[i].text.clone(),
                },
            );
            rows.folded.insert(0, i);
        }
    }
    Table {
        columns,
        rows: Value::from_object(rows),
        same,
    }
}

/// Links from `reports/` to the bundle's files that exist (`files`).
fn bundle_links(bundle: &str, files: Present) -> Vec<Link> {
    files
        .files()
        .map(|(name, f)| Link {
            name: name.to_string(),
            file: f.to_string(),
            href: format!("../{bundle}/{f}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
