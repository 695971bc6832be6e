//! Command-line types (clap derive). No logic here: the subcommand files of `cli/` do the work.

use std::path::PathBuf;

use crate::model::plan::ExecutorKind;
use clap::{Args, Parser, Subcommand, ValueEnum};

/// Declarative, crash-proof benchmark campaigns for collective communication.
#[derive(Debug, Parser)]
#[command(name = "campaign", version, about, propagate_version = true)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run a campaign: every case × stack, then results and report.
    Run(RunArgs),
    /// Continue an interrupted campaign (a run dir, or a plan: its newest run dir).
    Resume(ResumeArgs),
    /// Show what a plan would run, without running anything.
    DryRun(DryRunArgs),
    /// Check plans and seed case files.
    Validate(ValidateArgs),
    /// Write seed-format case files for a plan.
    Cases(CasesArgs),
    /// Counts by status, failures, quarantined devices and what is left of a run dir.
    Status(StatusArgs),
    /// Re-render results, figures and the report of a run dir from its bundles.
    Report(ReportArgs),
    /// Compare two run dirs: change in median per (case, stack).
    ///
    /// A row is called faster or slower only with >= 3 repeats per side ([run] repeats),
    /// Welch's t interval over the repeats' log medians beyond the noise band at the level
    /// Benjamini–Hochberg leaves over all rows, and every repeat of B beyond every repeat of A
    /// by the band; otherwise "equivalent" (the interval inside ±--equivalence, a two
    /// one-sided test), "undecided" (with the smallest change it could have detected) or "not
    /// judged", with the reason. Exit 1 when any row is slower.
    Compare(CompareArgs),
    /// Measure this machine's noise: each stack of a plan judged against itself (its odd
    /// repeats against its even ones, interleaved), per size class, kept in the history store.
    ///
    /// `report`, `compare` and `history regressions` then use the newest calibration of the
    /// machine their runs ran on — its noise band per size class in place of the constant ±5 %
    /// — and say which calibration (or none) they used.
    Calibrate(CalibrateArgs),
    /// Which stacks can run here, their roots, devices and environment.
    Doctor(DoctorArgs),
    /// Measure every pair of devices once (a link census) and name a slow link or device.
    ///
    /// The pairs run in the rounds of a round-robin one-factorisation (P − 1 rounds for even P,
    /// each device in one pair a round, a round's pairs together); each pair's busbw is scored
    /// by median/MAD within its link class (same node, across nodes). Writes a run dir like
    /// `run` (results, report with the census section, heatmaps `census_busbw` and
    /// `census_latency`); the same as a plan with a `[census]` section. Exit 0 when every pair
    /// ran (a finding is reported, not an error), 1 when some pair failed.
    Census(CensusArgs),
    /// Built-in benchmarks (the `host` stack).
    Bench(BenchArgs),
    /// Performance history across campaigns: list, show, trend, regressions, ingest.
    History(HistoryArgs),
    /// Print a shell completion script: `mkdir -p ~/.local/share/bash-completion/completions && campaign completions bash > ~/.local/share/bash-completion/completions/campaign`.
    Completions(CompletionsArgs),
    /// Print the man page (roff): `mkdir -p ~/.local/share/man/man1 && campaign man > ~/.local/share/man/man1/campaign.1 && man -l ~/.local/share/man/man1/campaign.1`; `campaign man run` prints campaign-run(1); `--dir DIR` writes every page.
    Man(ManArgs),
}

#[derive(Debug, Args)]
pub(crate) struct ManArgs {
    /// The subcommand whose page to print (`run`, `history regressions`); none: campaign(1).
    pub(crate) subcommand: Vec<String>,
    /// Write campaign.1 and a page per subcommand (campaign-run.1, campaign-history-regressions.1,
    /// …) into DIR instead of printing one.
    #[arg(long, value_name = "DIR", conflicts_with = "subcommand")]
    pub(crate) dir: Option<std::path::PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub(crate) shell: clap_complete::Shell,
}

/// Output format of listings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub(crate) enum ListFormat {
    #[default]
    Table,
    Json,
    Csv,
}

/// `--executor NAME`: one of `ExecutorKind::ALL`'s names (the one list of executor kinds).
fn executor_parser() -> impl clap::builder::TypedValueParser<Value = ExecutorKind> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(ExecutorKind::names())
        .map(|name| ExecutorKind::named(&name).unwrap_or_default())
}

/// Options shared by `run` and `resume`.
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct ExecOptions {
    /// Max runs at the same time (default: the CPUs or the devices, whichever is more, within
    /// the open-file limit; Slurm: `[slurm] max_jobs`).
    #[arg(long, short = 'j')]
    pub(crate) jobs: Option<usize>,
    /// One run at a time, for the quietest timings.
    #[arg(long)]
    pub(crate) exclusive: bool,
    /// No progress output, only the final summary.
    #[arg(long, short = 'q')]
    pub(crate) quiet: bool,
    /// Where run dirs go (replaces `results/campaigns`).
    #[arg(long, value_name = "DIR")]
    pub(crate) results_dir: Option<PathBuf>,
    /// Where processes run.
    #[arg(long, value_parser = executor_parser())]
    pub(crate) executor: Option<ExecutorKind>,
    /// On Ctrl-C, cancel Slurm jobs without asking.
    #[arg(long)]
    pub(crate) cancel_on_interrupt: bool,
    /// Report template replacing the default.
    #[arg(long, value_name = "FILE")]
    pub(crate) template: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// The plan (TOML). Default: the built-in smoke plan.
    pub(crate) plan: Option<PathBuf>,
    /// Run these seed case files (glob) instead of the plan's axes.
    #[arg(long, value_name = "GLOB")]
    pub(crate) cases: Option<String>,
    /// Only these stacks (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub(crate) stacks: Vec<String>,
    /// Extra filter expression over case fields.
    #[arg(long, value_name = "EXPR")]
    pub(crate) filter: Option<String>,
    /// Start a campaign of more than 100,000 runs without asking.
    #[arg(long, short = 'y')]
    pub(crate) yes: bool,
    /// Run each (case, stack) N times as separate runs (replaces `[run] repeats`, default 3;
    /// `--repeats 1` for a quick look that will not be compared).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) repeats: Option<u32>,
    /// Cap the run time the campaign's runs may hold their devices ("45m", "2h"; replaces
    /// `[run] budget`): once spent, no run starts and the campaign ends with what it has.
    #[arg(long, value_name = "DURATION", value_parser = parse_budget)]
    pub(crate) budget: Option<std::time::Duration>,
    /// Also make profiled runs of these kinds (cpu, counters, swimlane, pmu, dep; replaces
    /// `[profile] kinds`): extra runs after the timed ones, kept under each run's `profiling/`
    /// and never part of the timed statistics.
    #[arg(long, value_name = "KIND,...", value_parser = parse_profile)]
    pub(crate) profile: Option<ProfileKinds>,
    #[command(flatten)]
    pub(crate) exec: ExecOptions,
}

/// `--profile cpu,counters`: the kinds, each once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProfileKinds(pub(crate) Vec<crate::model::profile::ProfileKind>);

fn parse_profile(text: &str) -> std::result::Result<ProfileKinds, String> {
    crate::model::profile::parse_kinds(text).map(ProfileKinds)
}

/// `--budget`: a duration longer than zero.
fn parse_budget(text: &str) -> std::result::Result<std::time::Duration, String> {
    match crate::model::units::parse_duration(text)? {
        d if d.is_zero() => Err("a budget must be longer than zero".into()),
        d => Ok(d),
    }
}

#[derive(Debug, Args)]
pub(crate) struct CalibrateArgs {
    /// The plan whose stacks and sizes to calibrate (TOML).
    pub(crate) plan: PathBuf,
    /// Repeats per (case, stack), half on each side (at least 6: three a side).
    #[arg(long, value_name = "N", default_value_t = 10,
          value_parser = clap::value_parser!(u32).range(6..=1000))]
    pub(crate) repeats: u32,
    /// Only these stacks (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub(crate) stacks: Vec<String>,
    #[command(flatten)]
    pub(crate) exec: ExecOptions,
}

#[derive(Debug, Args)]
pub(crate) struct CensusArgs {
    /// The devices whose pairs are measured: "0-7", "0,2,4-6" (at least two).
    #[arg(long, value_name = "IDS", value_parser = parse_devices)]
    pub(crate) devices: DeviceIds,
    /// The stack that runs every pair (a shipped stack; a stack of your own: a plan with
    /// `[census]` and `[stacks.NAME]`, run as any plan is run).
    #[arg(long, value_name = "NAME")]
    pub(crate) stack: String,
    /// The collective each pair runs.
    #[arg(long, default_value = "allreduce", value_parser = parse_op)]
    pub(crate) op: crate::model::case::Op,
    /// Elements per rank: 4096, 64Mi, 1G (default 64Mi: large enough that a pair's time is its
    /// link's bandwidth).
    #[arg(long, value_name = "COUNT", value_parser = crate::model::units::parse_count)]
    pub(crate) count: Option<u64>,
    /// Nodes the devices are spread over, in equal consecutive blocks (`--devices 0-15 --nodes
    /// 2`: 0-7 on one node, 8-15 on the other); a pair across blocks runs as a two-node case
    /// (Slurm: `--executor slurm`; locally such pairs are planned skips).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub(crate) nodes: u32,
    /// What the pool holds (`[devices] kind`).
    #[arg(long, default_value = "cpu", value_parser = ["cpu", "npu", "gpu"])]
    pub(crate) kind: String,
    /// Quarantine the devices the census names as slow: journaled, listed by the status of the
    /// run dir, kept out by a resume of it.
    #[arg(long)]
    pub(crate) quarantine: bool,
    /// Run each pair N times as separate runs (default 1: every timed round of a pair feeds its
    /// median).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) repeats: Option<u32>,
    /// Start a census of more than 100,000 runs without asking.
    #[arg(long, short = 'y')]
    pub(crate) yes: bool,
    #[command(flatten)]
    pub(crate) exec: ExecOptions,
}

/// One `--devices` value holding many ids (clap would read a `Vec` as a repeated flag).
pub(crate) type DeviceIds = Vec<u32>;

fn parse_devices(text: &str) -> std::result::Result<Vec<u32>, String> {
    crate::plan::parse_id_ranges(text)
}

fn parse_op(text: &str) -> std::result::Result<crate::model::case::Op, String> {
    text.parse()
}

#[derive(Debug, Args)]
pub(crate) struct ResumeArgs {
    /// A run dir, or a plan (its newest run dir).
    pub(crate) target: PathBuf,
    /// Also re-run failed and timed-out runs.
    #[arg(long)]
    pub(crate) retry_failed: bool,
    /// Read every done run's bundle back instead of trusting the journal: a bundle that does
    /// not read back, or holds another number of samples than the journal recorded, is named
    /// and its run runs again.
    #[arg(long)]
    pub(crate) verify: bool,
    /// The run dir's plan.toml was edited on purpose since the campaign began: resume it
    /// (runs whose definition changed run again) instead of refusing a plan hash other than
    /// the journal's.
    #[arg(long)]
    pub(crate) plan_edited: bool,
    #[command(flatten)]
    pub(crate) exec: ExecOptions,
}

#[derive(Debug, Args)]
pub(crate) struct DryRunArgs {
    /// The plan (TOML).
    pub(crate) plan: PathBuf,
    /// Output format: an aligned table, JSON or CSV.
    #[arg(long, value_enum, default_value_t = ListFormat::Table)]
    pub(crate) format: ListFormat,
    /// Extra filter expression over case fields.
    #[arg(long, value_name = "EXPR")]
    pub(crate) filter: Option<String>,
    /// Only these stacks (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub(crate) stacks: Vec<String>,
    /// Show the schedule for this executor (slurm: the sbatch commands).
    #[arg(long, value_parser = executor_parser())]
    pub(crate) executor: Option<ExecutorKind>,
    /// Count each (case, stack) N times, as `run --repeats N` would (replaces `[run] repeats`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) repeats: Option<u32>,
    /// List the profiled runs these kinds would add, as `run --profile KIND,...` would
    /// (replaces `[profile] kinds`).
    #[arg(long, value_name = "KIND,...", value_parser = parse_profile)]
    pub(crate) profile: Option<ProfileKinds>,
}

#[derive(Debug, Args)]
pub(crate) struct ValidateArgs {
    /// Plans (.toml) and seed case files (.json).
    #[arg(required = true)]
    pub(crate) files: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct CasesArgs {
    /// The plan (TOML).
    pub(crate) plan: PathBuf,
    /// Folder for `<case_id>.json` files.
    #[arg(long, value_name = "DIR")]
    pub(crate) out: PathBuf,
    /// Say what would change without writing.
    #[arg(long)]
    pub(crate) dry_run: bool,
}

#[derive(Debug, Args)]
pub(crate) struct StatusArgs {
    /// A campaign run dir (`results/campaigns/<campaign>/run_<timestamp>`), finished or not.
    pub(crate) run_dir: PathBuf,
}

#[derive(Debug, Args)]
pub(crate) struct ReportArgs {
    /// A campaign run dir (campaign's or the old harness's).
    pub(crate) run_dir: PathBuf,
    /// Report template (minijinja, docs/report-context.md) replacing the default.
    #[arg(long, value_name = "FILE")]
    pub(crate) template: Option<PathBuf>,
}

/// Output format of `compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub(crate) enum CompareFormat {
    #[default]
    Md,
    Csv,
    Json,
    /// JUnit XML: one test case per (case, stack); slower is a failure with the numbers.
    Junit,
    /// A GitHub-style job summary in Markdown (for `$GITHUB_STEP_SUMMARY`).
    Summary,
}

#[derive(Debug, Args)]
pub(crate) struct CompareArgs {
    /// The baseline run dir ("before").
    pub(crate) run_a: PathBuf,
    /// The run dir compared against the baseline ("after").
    pub(crate) run_b: PathBuf,
    /// Noise band: a faster/slower change must clear it (e.g. `5%`). Default: the band of
    /// this machine's calibration for each row's size class (see the calibrate command), else 5 %.
    #[arg(long)]
    pub(crate) threshold: Option<String>,
    /// Equivalence margin ±δ: a row whose verdict interval lies inside it is "equivalent" (a
    /// two one-sided test; default: the noise band).
    #[arg(long, value_name = "PCT")]
    pub(crate) equivalence: Option<String>,
    /// Output format: a Markdown table, CSV, JSON, JUnit XML or a CI job summary (Markdown).
    #[arg(long, value_enum, default_value_t = CompareFormat::Md)]
    pub(crate) format: CompareFormat,
    /// History store whose earlier campaigns give each row its campaign-to-campaign spread
    /// (default: the store of A's results dir, when there is one).
    #[arg(long, value_name = "FILE", conflicts_with = "no_history")]
    pub(crate) history: Option<PathBuf>,
    /// Judge on A and B alone, without earlier campaigns' spread.
    #[arg(long)]
    pub(crate) no_history: bool,
    /// No faster/slower at all for rows with a run that had no CPU for more than this share of
    /// its time (results rows' `cpu_contention`). Below it, contention is weighed as evidence:
    /// a verdict is withheld only when the difference in contention between the sides could
    /// explain it (docs/statistics.md). Default `100%`: no blanket veto.
    #[arg(long, value_name = "SHARE", default_value = "100%")]
    pub(crate) max_contention: String,
}

#[derive(Debug, Args)]
pub(crate) struct DoctorArgs {
    /// A plan whose stacks to check (default: the shipped stacks).
    pub(crate) plan: Option<PathBuf>,
    /// Exit 1 unless this stack is ready.
    #[arg(long, value_name = "STACK")]
    pub(crate) require: Vec<String>,
    /// Check each present stack's contract with its upstream program (test ids, flags, tools)
    /// without collective work; exit 1 when any item is broken.
    #[arg(long)]
    pub(crate) contract: bool,
}

#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    #[command(subcommand)]
    pub(crate) command: BenchCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum BenchCommand {
    /// Run one case file's collective, whichever op it names (allreduce, allgather,
    /// reduce_scatter, broadcast, reduce, alltoall), with the built-in CPU implementation,
    /// speaking the native stack protocol (`bench allreduce` is its older name).
    #[command(alias = "allreduce")]
    Collective(CollectiveArgs),
}

#[derive(Debug, Args)]
pub(crate) struct CollectiveArgs {
    /// Seed-format case JSON (default: `$CAMPAIGN_CASE_FILE`).
    #[arg(long, value_name = "FILE", env = "CAMPAIGN_CASE_FILE")]
    pub(crate) case_file: PathBuf,
    /// Warmup rounds (default: the case's).
    #[arg(long)]
    pub(crate) warmup: Option<u32>,
    /// Timed rounds (default: the case's).
    #[arg(long)]
    pub(crate) timed: Option<u32>,
    /// Allocate windows once (default).
    #[arg(long, overrides_with = "no_persistent")]
    pub(crate) persistent: bool,
    /// Allocate windows every round.
    #[arg(long, overrides_with = "persistent")]
    pub(crate) no_persistent: bool,
    /// Which rounds to compare with the golden: `ends` (default: the first round and the last
    /// timed round, nothing between timed rounds) or `every` (every round, outside the timed
    /// region).
    #[arg(long, value_name = "ends|every", env = "HOST_BENCH_CHECK")]
    pub(crate) check: Option<String>,
    /// Test only: corrupt RANK's output in timed round ROUND (`RANK:ROUND`), or in every timed
    /// round (`RANK`), to prove the check.
    #[arg(long, hide = true, value_name = "RANK[:ROUND]")]
    pub(crate) inject_fault: Option<String>,
}

// ---- `campaign history` (docs/history.md) ----

#[derive(Debug, Args)]
pub(crate) struct HistoryArgs {
    #[command(subcommand)]
    pub(crate) command: HistoryCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum HistoryCommand {
    /// Record existing run dirs (campaign's or the old harness's) in the store.
    Ingest(HistoryIngestArgs),
    /// Campaigns and run dirs in the store, newest first.
    List(HistoryListArgs),
    /// Per series: every point with its median, CI, commit and date.
    Show(HistoryShowArgs),
    /// Draw the series over time with their CIs (PNG or SVG by the file's extension).
    Trend(HistoryTrendArgs),
    /// Change-point detection per series; exit 1 when a series' newest point is a regression.
    Regressions(HistoryRegressionsArgs),
}

/// Output format of the history listings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub(crate) enum HistoryFormat {
    #[default]
    Table,
    Json,
}

/// Which store: `<DIR>/history.sqlite` (default `results/history.sqlite`).
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct HistoryStore {
    /// The results dir whose store to use (as given to `run --results-dir`).
    #[arg(long, value_name = "DIR")]
    pub(crate) results_dir: Option<PathBuf>,
}

/// Which series.
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct HistorySeries {
    /// Only cases whose id matches this glob (e.g. `mesh_p2_*`).
    #[arg(long = "case", value_name = "GLOB")]
    pub(crate) case_glob: Option<String>,
    /// Only this stack.
    #[arg(long, value_name = "S")]
    pub(crate) stack: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct HistoryIngestArgs {
    /// Run dirs to record.
    #[arg(required = true)]
    pub(crate) run_dirs: Vec<PathBuf>,
    #[command(flatten)]
    pub(crate) store: HistoryStore,
    /// Test only: write FILE just before committing the first run dir, then wait for ever.
    #[arg(long, hide = true, value_name = "FILE")]
    pub(crate) hold_before_commit: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct HistoryListArgs {
    #[command(flatten)]
    pub(crate) store: HistoryStore,
    /// Output format: an aligned table or JSON.
    #[arg(long, value_enum, default_value_t = HistoryFormat::Table)]
    pub(crate) format: HistoryFormat,
}

#[derive(Debug, Args)]
pub(crate) struct HistoryShowArgs {
    #[command(flatten)]
    pub(crate) series: HistorySeries,
    #[command(flatten)]
    pub(crate) store: HistoryStore,
    /// Output format: an aligned table or JSON.
    #[arg(long, value_enum, default_value_t = HistoryFormat::Table)]
    pub(crate) format: HistoryFormat,
}

#[derive(Debug, Args)]
pub(crate) struct HistoryTrendArgs {
    #[command(flatten)]
    pub(crate) series: HistorySeries,
    #[command(flatten)]
    pub(crate) store: HistoryStore,
    /// The figure to write: FILE.png or FILE.svg, or FILE.html for one self-contained page of
    /// every series with its change points and hover values.
    #[arg(long, value_name = "FILE")]
    pub(crate) out: PathBuf,
}

#[derive(Debug, Args)]
pub(crate) struct HistoryRegressionsArgs {
    #[command(flatten)]
    pub(crate) series: HistorySeries,
    #[command(flatten)]
    pub(crate) store: HistoryStore,
    /// Only steps at or after this date (YYYY-MM-DD or RFC 3339) or run dir (path or name).
    #[arg(long, value_name = "DATE|RUN")]
    pub(crate) since: Option<String>,
    /// Between-run noise floor added to every point's uncertainty (e.g. `5%`). Default: the
    /// band of the series' machine's calibration for its size class (see the calibrate
    /// command), else 5 %.
    #[arg(long)]
    pub(crate) noise: Option<String>,
    /// Penalty per change point (default: max(2 ln n, 9)).
    #[arg(long)]
    pub(crate) penalty: Option<f64>,
    /// Leave out points with a run that had no CPU for more than this share of its time
    /// (oversubscribed points are always left out). Below it, contention is weighed as evidence:
    /// a step is kept only beyond what the difference in contention between its levels could
    /// explain (docs/statistics.md). Default `100%`: every point counts.
    #[arg(long, value_name = "SHARE", default_value = "100%")]
    pub(crate) max_contention: String,
    /// Output format: an aligned table, JSON, JUnit XML or a CI job summary (Markdown).
    #[arg(long, value_enum, default_value_t = RegressionsFormat::Table)]
    pub(crate) format: RegressionsFormat,
}

/// Output format of `history regressions`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub(crate) enum RegressionsFormat {
    #[default]
    Table,
    Json,
    /// JUnit XML: one test case per series; a current regression is a failure with the numbers.
    Junit,
    /// A GitHub-style job summary in Markdown (for `$GITHUB_STEP_SUMMARY`).
    Summary,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::Cli;

    /// Every visible argument of every (sub)command, as `path: --name`, that `--help` shows without text.
    fn args_without_help(cmd: &clap::Command, path: &str, out: &mut Vec<String>) {
        for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
            let text = arg
                .get_help()
                .or(arg.get_long_help())
                .map(|h| h.to_string());
            if text.is_none_or(|t| t.trim().is_empty()) {
                out.push(format!("{path}: {}", arg.get_id()));
            }
        }
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            args_without_help(sub, &format!("{path} {}", sub.get_name()), out);
        }
    }

    #[test]
    fn every_argument_of_every_subcommand_has_help_text() {
        let cmd = Cli::command();
        let mut missing = Vec::new();
        args_without_help(&cmd, "campaign", &mut missing);
        assert!(
            missing.is_empty(),
            "arguments without help text: {missing:#?}"
        );
    }

    #[test]
    fn every_subcommand_has_a_summary() {
        let cmd = Cli::command();
        for sub in cmd.get_subcommands() {
            assert!(
                sub.get_about().is_some(),
                "`campaign {}` has no summary",
                sub.get_name()
            );
        }
    }
}
