//! Command-line types (clap derive). No logic here: the subcommand files of `cli/` do the work.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Declarative, crash-proof benchmark campaigns for collective communication.
#[derive(Debug, Parser)]
#[command(name = "campaign", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
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
    Compare(CompareArgs),
    /// Which stacks can run here, their roots, devices and environment.
    Doctor(DoctorArgs),
    /// Built-in benchmarks (the `host` stack).
    Bench(BenchArgs),
}

/// Output format of listings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum ListFormat {
    #[default]
    Table,
    Json,
    Csv,
}

/// Executor choice on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExecutorArg {
    Local,
    Slurm,
}

/// Options shared by `run` and `resume`.
#[derive(Debug, Args, Clone, Default)]
pub struct ExecOptions {
    /// Max runs at the same time (default: as many as the devices allow).
    #[arg(long, short = 'j')]
    pub jobs: Option<usize>,
    /// One run at a time, for the quietest timings.
    #[arg(long)]
    pub exclusive: bool,
    /// No progress output, only the final summary.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Where run dirs go (replaces `results/campaigns`).
    #[arg(long, value_name = "DIR")]
    pub results_dir: Option<PathBuf>,
    /// Where processes run.
    #[arg(long, value_enum)]
    pub executor: Option<ExecutorArg>,
    /// On Ctrl-C, cancel Slurm jobs without asking.
    #[arg(long)]
    pub cancel_on_interrupt: bool,
    /// Report template replacing the default.
    #[arg(long, value_name = "FILE")]
    pub template: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The plan (TOML). Default: the built-in smoke plan.
    pub plan: Option<PathBuf>,
    /// Run these seed case files (glob) instead of the plan's axes.
    #[arg(long, value_name = "GLOB")]
    pub cases: Option<String>,
    /// Only these stacks (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub stacks: Vec<String>,
    /// Extra filter expression over case fields.
    #[arg(long, value_name = "EXPR")]
    pub filter: Option<String>,
    #[command(flatten)]
    pub exec: ExecOptions,
}

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// A run dir, or a plan (its newest run dir).
    pub target: PathBuf,
    /// Also re-run failed and timed-out runs.
    #[arg(long)]
    pub retry_failed: bool,
    #[command(flatten)]
    pub exec: ExecOptions,
}

#[derive(Debug, Args)]
pub struct DryRunArgs {
    /// The plan (TOML).
    pub plan: PathBuf,
    #[arg(long, value_enum, default_value_t = ListFormat::Table)]
    pub format: ListFormat,
    /// Extra filter expression over case fields.
    #[arg(long, value_name = "EXPR")]
    pub filter: Option<String>,
    /// Only these stacks (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub stacks: Vec<String>,
    /// Show the schedule for this executor (slurm: the sbatch commands).
    #[arg(long, value_enum)]
    pub executor: Option<ExecutorArg>,
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Plans (.toml) and seed case files (.json).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CasesArgs {
    /// The plan (TOML).
    pub plan: PathBuf,
    /// Folder for `<case_id>.json` files.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Say what would change without writing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    pub run_dir: PathBuf,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A campaign run dir (campaign's or the old harness's).
    pub run_dir: PathBuf,
    #[arg(long, value_name = "FILE")]
    pub template: Option<PathBuf>,
}

/// Output format of `compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum CompareFormat {
    #[default]
    Md,
    Csv,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    pub run_a: PathBuf,
    pub run_b: PathBuf,
    /// Noise band: changes smaller than this are "no change" (e.g. `5%`).
    #[arg(long, default_value = "5%")]
    pub threshold: String,
    #[arg(long, value_enum, default_value_t = CompareFormat::Md)]
    pub format: CompareFormat,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// A plan whose stacks to check (default: the shipped stacks).
    pub plan: Option<PathBuf>,
    /// Exit 1 unless this stack is ready.
    #[arg(long, value_name = "STACK")]
    pub require: Vec<String>,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub command: BenchCommand,
}

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Run one case with the built-in CPU allreduce, speaking the native stack protocol.
    Allreduce(AllreduceArgs),
}

#[derive(Debug, Args)]
pub struct AllreduceArgs {
    /// Seed-format case JSON (default: `$CAMPAIGN_CASE_FILE`).
    #[arg(long, value_name = "FILE", env = "CAMPAIGN_CASE_FILE")]
    pub case_file: PathBuf,
    /// Warmup rounds (default: the case's).
    #[arg(long)]
    pub warmup: Option<u32>,
    /// Timed rounds (default: the case's).
    #[arg(long)]
    pub timed: Option<u32>,
    /// Allocate windows once (default).
    #[arg(long, overrides_with = "no_persistent")]
    pub persistent: bool,
    /// Allocate windows every round.
    #[arg(long, overrides_with = "persistent")]
    pub no_persistent: bool,
    /// Test only: corrupt RANK's output in timed round ROUND (`RANK:ROUND`) to prove the check.
    #[arg(long, hide = true, value_name = "RANK:ROUND")]
    pub inject_fault: Option<String>,
}
