//! `campaign dry-run PLAN`: every case of a plan and the stacks it runs on, without running.
//!
//! Streams: cases come from `sweep::cases` in blocks made on two threads (`blocks`) and go
//! in order to a buffered stdout, so a million-case plan prints in constant memory. `json`/`csv`
//! put nothing else on stdout; warnings go to stderr. Glue only: the plan, sweep and stack
//! modules do the work.

mod blocks;
mod planned;

pub(crate) use planned::{planned_runs, PlannedRuns, RunCounter};

use std::collections::BTreeMap;
use std::io::{self, BufWriter, Write};

use crate::cli::args::{DryRunArgs, ListFormat};
use crate::error::{Error, Result};
use crate::model::case::fast::push_u64;
use crate::plan;
use blocks::{each_block, Block, ProfilePlan, Profiled, Row, Rows, Source};

/// Rows buffered before the table's column widths are fixed.
const TABLE_SIZING_ROWS: usize = 1000;

pub(crate) fn run(args: &DryRunArgs) -> Result<i32> {
    let cli = plan::Overrides {
        executor: args.executor,
        repeats: args.repeats,
        budget: None,
    };
    let plan = plan::load_with(&args.plan, cli)?;
    for w in &plan.warnings {
        crate::tell!("warning: {w}");
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
    let slurm = args.executor == Some(crate::model::plan::ExecutorKind::Slurm)
        || (args.executor.is_none()
            && plan.run.executor == crate::model::plan::ExecutorKind::Slurm);
    let profile = profile_plan(plan, args, &stacks, &defs);
    let rows = Source {
        plan,
        filter: args.filter.as_deref(),
        stacks: &stacks,
        defs: &defs,
        one_machine: !slurm,
        profile: &profile,
    };
    let result = match args.format {
        _ if slurm => write_sbatch(out, rows, plan),
        ListFormat::Table => write_table(
            out,
            rows,
            u64::from(args.repeats.unwrap_or(plan.run.repeats_max).max(1)),
        ),
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

/// The profiled runs the listing shows: `--profile`'s kinds over the plan's, and, when a perf
/// kind is asked of a CPU stack, whether perf works here (tried once per kind, as `run` does).
fn profile_plan(
    plan: &crate::model::plan::Plan,
    args: &DryRunArgs,
    stacks: &[String],
    defs: &BTreeMap<String, crate::model::stack::StackDef>,
) -> ProfilePlan {
    let mut config = plan.profile.clone();
    if let Some(kinds) = &args.profile {
        config.kinds = kinds.0.clone();
    }
    let cpu = (stacks.iter().filter_map(|s| defs.get(s)))
        .any(|d| d.resource() == crate::model::stack::Resource::Cpu);
    let scratch = std::env::temp_dir().join(format!("campaign-perf-check-{}", std::process::id()));
    let perf = (config.kinds.iter())
        .filter(|k| cpu && config.any() && k.by_perf())
        .map(|&k| (k, crate::engine::profiled::perf_refusal(k, &scratch)))
        .collect();
    ProfilePlan { config, perf }
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
    source: Source<'_>,
    plan: &crate::model::plan::Plan,
) -> std::result::Result<(), Failure> {
    let mut rows = source.rows().map_err(Failure::Plan)?;
    use crate::executor::slurm::{sbatch_command, shell_line, BatchJob};
    let run_dir = crate::store::layout::results_dir(None)
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
                layout: row.layout,
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

/// The table, then the summary counting runs as `run` makes them: cases × stacks × repeats.
fn write_table(
    out: &mut impl Write,
    source: Source<'_>,
    repeats: u64,
) -> std::result::Result<(), Failure> {
    // Column widths from the first rows (made once more by the blocks below: a few thousand
    // rows at most, against holding them).
    let mut sizing = source.rows().map_err(Failure::Plan)?;
    let (mut id_w, mut count_w, mut bytes_w) = (HEADERS[0].len(), 5, 5);
    let mut variant_w = 8;
    // An `op` column only for plans that name the op (allreduce listings stay as they were).
    let show_op = names_op(source.plan);
    let mut op_w = 2;
    for _ in 0..TABLE_SIZING_ROWS {
        let Some(r) = sizing.next_row()? else { break };
        id_w = id_w.max(r.case_id.len());
        variant_w = variant_w.max(r.variant.len());
        op_w = op_w.max(op_text(&r).len());
        count_w = count_w.max(digits(r.count));
        bytes_w = bytes_w.max(digits(r.bytes));
    }
    drop(sizing);
    if show_op {
        write!(out, "{:<op_w$}  ", "op")?;
    }
    writeln!(
        out,
        "{:<id_w$}  {:<variant_w$}  {:>3}  {:>count_w$}  {:<5}  {:>bytes_w$}  {:>6}  {:>5}  {:<16}  {}",
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
    let mut n_pairs = 0u64;
    let mut skipped = 0u64;
    let mut over = (0u64, 0u32);
    // (stack, reason) → runs, so the summary names every limit or constraint that skips runs.
    let mut why: BTreeMap<(String, String), u64> = BTreeMap::new();
    let mut profiled = 0u64;
    let mut profile_why = BTreeMap::new();
    let all = source.stacks.join(",");
    let line = |rows: &Rows<'_>, r: &Row<'_>, block: &mut Block| -> io::Result<()> {
        block.count(r);
        let stacks = if rows.all_run(r) {
            all.clone()
        } else {
            rows.stacks_text(r, ",")
        };
        if show_op {
            write!(block.bytes, "{:<op_w$}  ", op_text(r))?;
        }
        writeln!(
            block.bytes,
            "{:<id_w$}  {:<variant_w$}  {:>3}  {:>count_w$}  {:<5}  {:>bytes_w$}  {:>6}  {:>5}  {:<16}  {}",
            r.case_id, r.variant, r.p, r.count, r.dtype, r.bytes, r.warmup, r.timed, r.hash, stacks
        )
    };
    each_block(source, line, |block| {
        out.write_all(&block.bytes)?;
        n_cases += block.cases;
        n_pairs += block.runs;
        skipped += block.skipped;
        over.0 += block.oversubscribed.0;
        over.1 = over.1.max(block.oversubscribed.1);
        for (k, n) in block.why {
            *why.entry(k).or_default() += n;
        }
        profiled += block.profiled;
        for (k, n) in block.profile_why {
            *profile_why.entry(k).or_default() += n;
        }
        Ok(())
    })?;
    let n_stacks = source.stacks.len() as u64;
    let runs = n_pairs * repeats;
    let skipped = skipped * repeats;
    write_summary(out, (n_cases, n_stacks, n_pairs), repeats, skipped)?;
    writeln!(out)?;
    write_policy(out, source.plan, n_pairs)?;
    const SHOWN: usize = 20;
    for ((stack, reason), n) in why.iter().take(SHOWN) {
        let n = &(n * repeats);
        writeln!(
            out,
            "  skipped {stack}: {reason} ({n} {})",
            plural(*n, "run", "runs")
        )?;
    }
    if why.len() > SHOWN {
        writeln!(out, "  … and {} more skip reasons", why.len() - SHOWN)?;
    }
    write_profiles(out, &source.profile.config, profiled, &profile_why)?;
    let cpus = crate::engine::prepare::machine_cpus();
    if let Some(w) =
        crate::engine::prepare::oversubscription_warning(over.0 * repeats, runs, cpus, over.1)
    {
        out.flush()?;
        crate::tell!("warning: {w}");
    }
    Ok(())
}

/// What the campaign may decide while it runs: the sequential repeats' looks and how many runs
/// they may add to the first grid, and the budget.
fn write_policy(
    out: &mut impl Write,
    plan: &crate::model::plan::Plan,
    n_pairs: u64,
) -> io::Result<()> {
    let run = &plan.run;
    // The plan's own sizes, as loading the plan read them for the report.
    if let Some((_, given)) = &plan.report.adapt {
        let mut counts = given.clone();
        counts.sort_unstable();
        counts.dedup();
        let added: u64 = (counts.windows(2))
            .map(|w| {
                crate::engine::adapt::bisect(w[0], w[1], 1, plan.adapt.resolution).len() as u64
            })
            .sum();
        let per_size = n_pairs / (counts.len() as u64).max(1);
        writeln!(
            out,
            "  adaptive sizes: up to {added} between the {} given, bisecting where a pair's winner changes until its bracket is within ×{}: at most {} more runs",
            counts.len(),
            plan.adapt.resolution,
            added * per_size * u64::from(run.repeats_max.max(1))
        )?;
    }
    if run.sequential() {
        let looks = crate::analysis::sequential::looks(run.repeats, run.repeats_max);
        let looks: Vec<String> = looks.iter().map(u32::to_string).collect();
        let first = n_pairs * u64::from(run.repeats);
        let more = n_pairs * u64::from(run.repeats_max - run.repeats);
        writeln!(
            out,
            "  sequential repeats: {} to {} per (case, stack), each point judged after {} repeats: {first} {} at first, at most {more} more while a point's rows are undecided",
            run.repeats,
            run.repeats_max,
            looks.join(", "),
            plural(first, "run", "runs"),
        )?;
    }
    if let Some(b) = run.budget {
        writeln!(
            out,
            "  budget: {} of run time (once spent, no run starts and the campaign ends with what it has)",
            humantime::format_duration(b)
        )?;
    }
    Ok(())
}

/// The profiled runs a `[profile]` (or `--profile`) adds, and each planned skip with its
/// reason; nothing when the plan asks for none.
fn write_profiles(
    out: &mut impl Write,
    config: &crate::model::profile::ProfileConfig,
    profiled: u64,
    why: &BTreeMap<(String, crate::model::profile::ProfileKind, String), u64>,
) -> io::Result<()> {
    if !config.any() {
        return Ok(());
    }
    let kinds: Vec<&str> = config.kinds.iter().map(|k| k.name()).collect();
    writeln!(
        out,
        "  profiled runs: up to {profiled} more ({} × {} per (case, stack) whose timed run passes), made after the timed runs and never in any statistic",
        kinds.join(", "),
        config.runs
    )?;
    const SHOWN: usize = 20;
    for ((stack, kind, reason), n) in why.iter().take(SHOWN) {
        writeln!(
            out,
            "  profile skipped {stack} {}: {reason} ({n} profiled {})",
            kind.name(),
            plural(*n, "run", "runs")
        )?;
    }
    if why.len() > SHOWN {
        writeln!(
            out,
            "  … and {} more profile skip reasons",
            why.len() - SHOWN
        )?;
    }
    Ok(())
}

/// The summary line's count: "C cases × S stacks × R repeats = N runs", or, where each stack runs
/// only its own variants, how many (case, stack) pairs that leaves.
fn write_summary(
    out: &mut impl Write,
    (n_cases, n_stacks, n_pairs): (u64, u64, u64),
    repeats: u64,
    skipped: u64,
) -> io::Result<()> {
    let runs = n_pairs * repeats;
    let cases = plural(n_cases, "case", "cases");
    let stacks = plural(n_stacks, "stack", "stacks");
    let shape = if n_pairs == n_cases * n_stacks {
        format!("{n_cases} {cases} × {n_stacks} {stacks}")
    } else {
        // Each stack runs only its own variants: not every case runs on every stack.
        let pairs = plural(n_pairs, "pair", "pairs");
        format!(
            "{n_cases} {cases} on {n_stacks} {stacks} (each runs its own variants: {n_pairs} (case, stack) {pairs})"
        )
    };
    write!(
        out,
        "{shape} × {repeats} {} = {runs} {}",
        plural(repeats, "repeat", "repeats"),
        plural(runs, "run", "runs")
    )?;
    if skipped > 0 {
        write!(out, " ({skipped} skipped: not supported by their stack)")?;
    }
    Ok(())
}

/// Does the plan name the op (an `op` axis or `[case] op`)?
fn names_op(plan: &crate::model::plan::Plan) -> bool {
    plan.case_defaults.contains_key("op") || plan.axes.iter().any(|a| a.name == "op")
}

/// The op column: `broadcast`, or `broadcast@1` for root 1.
fn op_text(r: &Row<'_>) -> String {
    match r.root.filter(|x| *x != 0) {
        Some(root) => format!("{}@{root}", r.op),
        None => r.op.to_string(),
    }
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
    /// Always present, allreduce too: a reader filtering on `op` sees every row (case files
    /// leave it out for allreduce, the seed's format; a listing is campaign's own).
    op: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    root: Option<u32>,
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
    /// The profiled runs `[profile]`/`--profile` would add (each with its planned skip's
    /// reason); absent when the plan asks for none.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    profiles: &'a [Profiled<'a>],
}

fn write_json(out: &mut impl Write, source: Source<'_>) -> std::result::Result<(), Failure> {
    out.write_all(b"[")?;
    let all: Vec<&str> = source.stacks.iter().map(String::as_str).collect();
    // Every row is written after a `,`; the sink drops the first row's.
    let row = |rows: &Rows<'_>, r: &Row<'_>, block: &mut Block| -> io::Result<()> {
        block.bytes.extend_from_slice(b",\n  ");
        block.cases += 1;
        let runs: Vec<&str>;
        let stacks = if rows.all_run(r) {
            all.as_slice()
        } else {
            runs = (r.on.iter())
                .copied()
                .filter(|s| !r.skipped.contains(s))
                .collect();
            runs.as_slice()
        };
        let row = JsonRow {
            case_id: &r.case_id,
            op: r.op,
            root: r.root,
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
            profiles: &r.profiles,
        };
        serde_json::to_writer(&mut block.bytes, &row).map_err(io::Error::from)
    };
    let mut first = true;
    each_block(source, row, |block| {
        match block.bytes.split_first() {
            Some((_, rest)) if first => {
                out.write_all(rest)?;
                first = false;
            }
            _ => out.write_all(&block.bytes)?,
        }
        Ok(())
    })?;
    out.write_all(if first { b"]\n" } else { b"\n]\n" })?;
    Ok(())
}

/// CSV without quoting: every field is a number, an enum spelling, a case_id or stack names,
/// all from `[a-z0-9_-]` (names are validated), so none needs quotes.
fn write_csv(out: &mut impl Write, source: Source<'_>) -> std::result::Result<(), Failure> {
    let show_op = names_op(source.plan);
    if show_op {
        out.write_all(b"op,")?;
    }
    writeln!(out, "{}", HEADERS.join(","))?;
    let all = source.stacks.join(";");
    let row = |rows: &Rows<'_>, r: &Row<'_>, block: &mut Block| -> io::Result<()> {
        let line = &mut block.bytes;
        if show_op {
            line.extend_from_slice(op_text(r).as_bytes());
            line.push(b',');
        }
        for (i, field) in [r.case_id.as_str(), r.variant].into_iter().enumerate() {
            if i > 0 {
                line.push(b',');
            }
            line.extend_from_slice(field.as_bytes());
        }
        for n in [u64::from(r.p), r.count] {
            line.push(b',');
            push_u64(line, n);
        }
        line.push(b',');
        line.extend_from_slice(r.dtype.as_bytes());
        for n in [r.bytes, u64::from(r.warmup), u64::from(r.timed)] {
            line.push(b',');
            push_u64(line, n);
        }
        line.push(b',');
        line.extend_from_slice(r.hash.as_bytes());
        line.push(b',');
        if rows.all_run(r) {
            line.extend_from_slice(all.as_bytes());
        } else {
            line.extend_from_slice(rows.stacks_text(r, ";").as_bytes());
        }
        line.push(b'\n');
        Ok(())
    };
    each_block(source, row, |block| Ok(out.write_all(&block.bytes)?))
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
            op: "allreduce",
            root: None,
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
            profiles: &[],
        };
        let value = serde_json::json!({
            "case_id": "ring_p32_count64_fp16_a2a3_d0-31",
            "op": "allreduce",
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

    /// A listing of several blocks (made on two threads) holds every case once, in sweep
    /// order, with its own hash, in every format; a filter failing on a case past the first
    /// block prints the rows before it and stops with the error.
    #[test]
    fn blocks_list_every_case_once_in_sweep_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("blocks.toml");
        let counts: Vec<String> = (1..=1500).map(|c| c.to_string()).collect();
        std::fs::write(
            &path,
            format!(
                "[campaign]\nname = \"blocks\"\nallow = [\"uneven-chunks\"]\n\n[axes]\nvariant = [\"mesh\", \"ring\", \"twophase\"]\np = [2, 4]\ncount = [{}]\n\n[[exclude]]\nvariant = \"ring\"\np = 4\n",
                counts.join(", ")
            ),
        )
        .unwrap();
        let plan = plan::load(&path).unwrap();
        let expected: Vec<(String, String)> = crate::plan::sweep::cases(&plan, None)
            .unwrap()
            .map(|c| {
                let c = c.unwrap();
                (c.case_id(), c.equivalence_hash())
            })
            .collect();
        assert_eq!(expected.len(), 7500);
        let listing = |format, filter: Option<&str>| {
            let args = DryRunArgs {
                plan: path.clone(),
                format,
                filter: filter.map(str::to_string),
                stacks: Vec::new(),
                executor: None,
                repeats: None,
                profile: None,
            };
            let mut out = Vec::new();
            let result = list(&plan, &args, &mut out);
            (result, String::from_utf8(out).unwrap())
        };

        let (result, csv) = listing(ListFormat::Csv, None);
        result.unwrap();
        let rows: Vec<(String, String)> = csv
            .lines()
            .skip(1)
            .map(|l| {
                let f: Vec<&str> = l.split(',').collect();
                (f[0].to_string(), f[8].to_string())
            })
            .collect();
        assert_eq!(rows, expected);

        let (result, json) = listing(ListFormat::Json, None);
        result.unwrap();
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        let rows: Vec<(String, String)> = value
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let text = |k: &str| r[k].as_str().unwrap().to_string();
                (text("case_id"), text("equivalence_hash"))
            })
            .collect();
        assert_eq!(rows, expected);

        let (result, table) = listing(ListFormat::Table, None);
        result.unwrap();
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 1 + 7500 + 1);
        assert!(
            lines[7500].starts_with(&expected[7499].0),
            "{}",
            lines[7500]
        );
        assert_eq!(lines[7501], "7500 cases × 1 stack × 3 repeats = 22500 runs");

        // The case at sweep position 1500 + 1199 (mesh, p = 4, count 1200; block 1) fails the filter.
        let (result, csv) = listing(
            ListFormat::Csv,
            Some("count // (count - 1200 + (4 - p) * 10000) != 5"),
        );
        let err = result.unwrap_err().to_string();
        assert!(err.contains("failed on mesh_p4_count1200"), "{err}");
        let ids: Vec<&str> = csv
            .lines()
            .skip(1)
            .map(|l| &l[..l.find(',').unwrap()])
            .collect();
        let before: Vec<&str> = expected[..2699].iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(ids, before);
    }
}
