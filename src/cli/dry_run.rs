//! `campaign dry-run PLAN`: every case of a plan and the stacks it runs on, without running.
//!
//! Streams: cases come from `sweep::cases` one at a time and go straight to a buffered stdout,
//! so a million-case plan prints in constant memory. `json`/`csv` put nothing else on stdout;
//! warnings go to stderr. Glue only: the plan, sweep and stack modules do the work.

use std::collections::BTreeMap;
use std::io::{self, BufWriter, Write};

use crate::cli::args::{DryRunArgs, ExecutorArg, ListFormat};
use crate::error::{Error, Result};
use crate::model::case::fast::{push_u64, Hasher};
use crate::model::stack::StackDef;
use crate::plan;

/// Rows buffered before the table's column widths are fixed.
const TABLE_SIZING_ROWS: usize = 1000;

pub(crate) fn run(args: &DryRunArgs) -> Result<i32> {
    let plan = plan::load_with(&args.plan, args.executor.map(super::run::executor_kind))?;
    for w in &plan.warnings {
        eprintln!("warning: {w}");
    }
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    list(&plan, args, &mut out)?;
    Ok(0)
}

/// The listing of a loaded plan into `out` (what `run` prints; the fuzz test lists into memory).
pub(crate) fn list(
    plan: &crate::model::plan::Plan,
    args: &DryRunArgs,
    out: &mut impl Write,
) -> Result<()> {
    let stacks = plan::select_stacks(plan, &args.stacks)?;
    // Shipped definitions with the plan's `[stacks.NAME]` overlaid, as a run would use them.
    let defs = crate::stack::registry::resolve(&plan.stack_defs, &plan.source)?;
    crate::engine::stack_check::check_stacks(plan, &stacks)?;
    crate::plan::sweep::require_some(plan, args.filter.as_deref())?;
    let rows = Rows {
        cases: crate::plan::sweep::cases(plan, args.filter.as_deref())?,
        stacks: &stacks,
        defs: &defs,
        hasher: Hasher::default(),
    };
    let slurm = args.executor == Some(ExecutorArg::Slurm)
        || (args.executor.is_none()
            && plan.run.executor == crate::model::plan::ExecutorKind::Slurm);
    let result = match args.format {
        _ if slurm => write_sbatch(out, rows, plan),
        ListFormat::Table => write_table(out, rows),
        ListFormat::Json => write_json(out, rows),
        ListFormat::Csv => write_csv(out, rows),
    };
    match result.and_then(|()| out.flush().map_err(Failure::Io)) {
        Ok(()) => Ok(()),
        // `dry-run … | head` closes the pipe early: that is not a failure.
        Err(Failure::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        Err(Failure::Io(e)) => Err(Error::io("<stdout>", e)),
        Err(Failure::Plan(e)) => Err(e),
    }
}

enum Failure {
    Io(io::Error),
    Plan(Error),
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Self {
        Failure::Io(e)
    }
}

/// `--executor slurm`: the sbatch command of every run that would be submitted, one per line
/// (run dir shown as `run_<timestamp>`; the batch script is written into the bundle at submit).
fn write_sbatch(
    out: &mut impl Write,
    mut rows: Rows<'_>,
    plan: &crate::model::plan::Plan,
) -> std::result::Result<(), Failure> {
    use crate::executor::slurm::{sbatch_command, shell_line, BatchJob};
    let run_dir = std::path::Path::new(crate::store::layout::DEFAULT_RESULTS_DIR)
        .join(&plan.campaign.name)
        .join("run_<timestamp>");
    while let Some(row) = rows.next_row()? {
        for stack in rows.stacks {
            if row.skipped.contains(&stack.as_str()) {
                continue;
            }
            let timeout = rows
                .defs
                .get(stack)
                .and_then(|d| d.timeout)
                .unwrap_or(plan.run.timeout);
            let bundle = run_dir.join("cases").join(&row.case_id).join(stack);
            let job = BatchJob {
                campaign: plan.campaign.name.clone(),
                case_id: row.case_id.clone(),
                stack: stack.clone(),
                devices: row.p,
                kind: plan.devices.kind,
                process: crate::executor::ProcessSpec {
                    argv: Vec::new(),
                    env: Vec::new(),
                    cwd: bundle.clone(),
                    timeout: Some(timeout),
                    no_output_timeout: None,
                    grace: std::time::Duration::ZERO,
                    log_path: bundle.join("run.log"),
                    unit: None,
                },
                bundle_dir: bundle,
            };
            let argv = sbatch_command(&plan.slurm, &job).map_err(Failure::Plan)?;
            writeln!(out, "{}", shell_line(&argv))?;
        }
    }
    Ok(())
}

/// One listed case: the columns every format shows.
struct Row<'p> {
    case_id: String,
    variant: &'static str,
    p: u32,
    count: u64,
    dtype: &'static str,
    bytes: u64,
    warmup: u32,
    timed: u32,
    hash: String,
    /// Selected stacks that do not support this case (they would be `skipped` runs).
    skipped: Vec<&'p str>,
    /// Why, one per `skipped` stack (the limit or constraint it fails).
    reasons: Vec<String>,
}

/// The cases of the listing and what each row needs.
struct Rows<'p> {
    cases: crate::plan::sweep::Cases<'p>,
    stacks: &'p [String],
    defs: &'p BTreeMap<String, StackDef>,
    hasher: Hasher,
}

impl<'p> Rows<'p> {
    fn next_row(&mut self) -> std::result::Result<Option<Row<'p>>, Failure> {
        let case = match self.cases.next_ref() {
            None => return Ok(None),
            Some(Ok(case)) => case,
            Some(Err(e)) => return Err(Failure::Plan(e)),
        };
        let defs = self.defs;
        let (skipped, reasons) = self
            .stacks
            .iter()
            .filter_map(|s| {
                let why = defs.get(s)?.unsupported_reason(case)?;
                Some((s.as_str(), why))
            })
            .unzip();
        Ok(Some(Row {
            case_id: self.hasher.case_id(case).to_string(),
            variant: case.variant.as_str(),
            p: case.p,
            count: case.count,
            dtype: case.dtype.as_str(),
            bytes: case.n_bytes(),
            warmup: case.warmup_rounds,
            timed: case.timed_rounds,
            hash: self.hasher.equivalence_hash(case),
            skipped,
            reasons,
        }))
    }

    /// The stacks column: every selected stack, `name(skip)` for one that does not support it.
    fn stacks_text(&self, row: &Row<'_>, sep: &str) -> String {
        self.stacks
            .iter()
            .map(|s| {
                if row.skipped.contains(&s.as_str()) {
                    format!("{s}(skip)")
                } else {
                    s.clone()
                }
            })
            .collect::<Vec<_>>()
            .join(sep)
    }
}

const HEADERS: [&str; 10] = [
    "case_id",
    "variant",
    "p",
    "count",
    "dtype",
    "bytes",
    "warmup",
    "timed",
    "equivalence_hash",
    "stacks",
];

fn write_table(out: &mut impl Write, mut rows: Rows<'_>) -> std::result::Result<(), Failure> {
    let mut first = Vec::new();
    while first.len() < TABLE_SIZING_ROWS {
        match rows.next_row()? {
            Some(r) => first.push(r),
            None => break,
        }
    }
    let id_w = first
        .iter()
        .map(|r| r.case_id.len())
        .max()
        .unwrap_or(0)
        .max(HEADERS[0].len());
    let count_w = first
        .iter()
        .map(|r| digits(r.count))
        .max()
        .unwrap_or(0)
        .max(5);
    let bytes_w = first
        .iter()
        .map(|r| digits(r.bytes))
        .max()
        .unwrap_or(0)
        .max(5);
    writeln!(
        out,
        "{:<id_w$}  {:<8}  {:>3}  {:>count_w$}  {:<5}  {:>bytes_w$}  {:>6}  {:>5}  {:<16}  {}",
        HEADERS[0],
        HEADERS[1],
        HEADERS[2],
        HEADERS[3],
        HEADERS[4],
        HEADERS[5],
        HEADERS[6],
        HEADERS[7],
        HEADERS[8],
        HEADERS[9]
    )?;
    let mut n_cases = 0u64;
    let mut skipped = 0u64;
    // (stack, reason) → runs, so the summary names every limit or constraint that skips runs.
    let mut why: BTreeMap<(String, String), u64> = BTreeMap::new();
    let all = rows.stacks.join(",");
    let mut emit = |out: &mut dyn Write, rows: &Rows<'_>, r: &Row<'_>| -> io::Result<()> {
        n_cases += 1;
        skipped += r.skipped.len() as u64;
        for (stack, reason) in r.skipped.iter().zip(&r.reasons) {
            *why.entry((stack.to_string(), reason.clone())).or_default() += 1;
        }
        let stacks = if r.skipped.is_empty() {
            all.clone()
        } else {
            rows.stacks_text(r, ",")
        };
        writeln!(
            out,
            "{:<id_w$}  {:<8}  {:>3}  {:>count_w$}  {:<5}  {:>bytes_w$}  {:>6}  {:>5}  {:<16}  {}",
            r.case_id, r.variant, r.p, r.count, r.dtype, r.bytes, r.warmup, r.timed, r.hash, stacks
        )
    };
    for r in &first {
        emit(out, &rows, r)?;
    }
    while let Some(r) = rows.next_row()? {
        emit(out, &rows, &r)?;
    }
    let n_stacks = rows.stacks.len() as u64;
    let runs = n_cases * n_stacks;
    write!(
        out,
        "{n_cases} {} × {n_stacks} {} = {runs} {}",
        plural(n_cases, "case", "cases"),
        plural(n_stacks, "stack", "stacks"),
        plural(runs, "run", "runs")
    )?;
    if skipped > 0 {
        write!(out, " ({skipped} skipped: not supported by their stack)")?;
    }
    writeln!(out)?;
    const SHOWN: usize = 20;
    for ((stack, reason), n) in why.iter().take(SHOWN) {
        writeln!(
            out,
            "  skipped {stack}: {reason} ({n} {})",
            plural(*n, "run", "runs")
        )?;
    }
    if why.len() > SHOWN {
        writeln!(out, "  … and {} more skip reasons", why.len() - SHOWN)?;
    }
    Ok(())
}

fn digits(n: u64) -> usize {
    n.to_string().len()
}

fn plural(n: u64, one: &'static str, many: &'static str) -> &'static str {
    if n == 1 {
        one
    } else {
        many
    }
}

/// One case as `--format json` prints it. Serialized straight to the output (no
/// `serde_json::Value` per row): field order is the declaration order.
#[derive(serde::Serialize)]
struct JsonRow<'a> {
    case_id: &'a str,
    variant: &'a str,
    p: u32,
    count: u64,
    dtype: &'a str,
    bytes: u64,
    warmup: u32,
    timed: u32,
    equivalence_hash: &'a str,
    stacks: &'a [&'a str],
    skipped_stacks: &'a [&'a str],
    skip_reasons: &'a [String],
}

fn write_json(out: &mut impl Write, mut rows: Rows<'_>) -> std::result::Result<(), Failure> {
    out.write_all(b"[")?;
    let mut first = true;
    let all: Vec<&str> = rows.stacks.iter().map(String::as_str).collect();
    let mut runs: Vec<&str> = Vec::with_capacity(all.len());
    while let Some(r) = rows.next_row()? {
        out.write_all(if first { b"\n  " } else { b",\n  " })?;
        first = false;
        let stacks = if r.skipped.is_empty() {
            all.as_slice()
        } else {
            runs.clear();
            runs.extend(all.iter().filter(|s| !r.skipped.contains(s)));
            runs.as_slice()
        };
        let row = JsonRow {
            case_id: &r.case_id,
            variant: r.variant,
            p: r.p,
            count: r.count,
            dtype: r.dtype,
            bytes: r.bytes,
            warmup: r.warmup,
            timed: r.timed,
            equivalence_hash: &r.hash,
            stacks,
            skipped_stacks: &r.skipped,
            skip_reasons: &r.reasons,
        };
        serde_json::to_writer(&mut *out, &row).map_err(|e| Failure::Io(e.into()))?;
    }
    out.write_all(if first { b"]\n" } else { b"\n]\n" })?;
    Ok(())
}

/// CSV without quoting: every field is a number, an enum spelling, a case_id or stack names,
/// all from `[a-z0-9_-]` (names are validated), so none needs quotes.
fn write_csv(out: &mut impl Write, mut rows: Rows<'_>) -> std::result::Result<(), Failure> {
    writeln!(out, "{}", HEADERS.join(","))?;
    let all = rows.stacks.join(";");
    let mut line: Vec<u8> = Vec::with_capacity(256);
    while let Some(r) = rows.next_row()? {
        line.clear();
        for (i, field) in [r.case_id.as_str(), r.variant].into_iter().enumerate() {
            if i > 0 {
                line.push(b',');
            }
            line.extend_from_slice(field.as_bytes());
        }
        for n in [u64::from(r.p), r.count] {
            line.push(b',');
            push_u64(&mut line, n);
        }
        line.push(b',');
        line.extend_from_slice(r.dtype.as_bytes());
        for n in [r.bytes, u64::from(r.warmup), u64::from(r.timed)] {
            line.push(b',');
            push_u64(&mut line, n);
        }
        line.push(b',');
        line.extend_from_slice(r.hash.as_bytes());
        line.push(b',');
        if r.skipped.is_empty() {
            line.extend_from_slice(all.as_bytes());
        } else {
            line.extend_from_slice(rows.stacks_text(&r, ";").as_bytes());
        }
        line.push(b'\n');
        out.write_all(&line)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The typed row prints exactly what the earlier `serde_json::json!` row printed: same keys,
    /// same order, same escaping.
    #[test]
    fn json_row_matches_the_value_it_replaced() {
        let reasons = vec!["p = 32 > max_p \"16\"\n(limit)".to_string()];
        let row = JsonRow {
            case_id: "ring_p32_count64_fp16_a2a3_d0-31",
            variant: "ring",
            p: 32,
            count: 64,
            dtype: "fp16",
            bytes: 128,
            warmup: 1,
            timed: 5,
            equivalence_hash: "0123456789abcdef",
            stacks: &["host"],
            skipped_stacks: &["mpi"],
            skip_reasons: &reasons,
        };
        let value = serde_json::json!({
            "case_id": "ring_p32_count64_fp16_a2a3_d0-31",
            "variant": "ring",
            "p": 32,
            "count": 64,
            "dtype": "fp16",
            "bytes": 128,
            "warmup": 1,
            "timed": 5,
            "equivalence_hash": "0123456789abcdef",
            "stacks": ["host"],
            "skipped_stacks": ["mpi"],
            "skip_reasons": reasons,
        });
        assert_eq!(serde_json::to_string(&row).unwrap(), value.to_string());
    }
}
