//! The validated plan: what every later stage reads. Produced only by `plan::load`.
//!
//! Types here carry no spans and need no further checking; anything that reaches them has been
//! validated (names, ranges, durations parsed). Raw TOML mirrors with spans live in `plan/raw.rs`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::stack::StackDef;

/// A whole plan file.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The file it came from.
    pub source: PathBuf,
    /// First 16 hex digits of SHA-256 of the file's bytes (provenance, resume).
    pub hash: String,
    /// The file's text, kept for the frozen copy in the run dir.
    pub text: String,
    pub campaign: CampaignMeta,
    /// `[case]`: default values of case fields (seed names), already type-checked.
    pub case_defaults: BTreeMap<String, Value>,
    /// `[axes]` without `stacks`, in file order (the first varies slowest).
    pub axes: Vec<Axis>,
    /// `axes.stacks` (default `["host"]`).
    pub stacks: Vec<String>,
    /// `[[exclude]]`: drop a point matching every key of one rule.
    pub excludes: Vec<BTreeMap<String, Value>>,
    /// `[filter] where`: a minijinja expression over case fields.
    pub filter: Option<String>,
    pub rounds: Rounds,
    pub run: RunConfig,
    pub devices: DevicesConfig,
    /// `[stacks.NAME]` as written in the plan (overlaid on shipped definitions when resolved).
    pub stack_defs: BTreeMap<String, StackDef>,
    pub report: ReportConfig,
    pub slurm: SlurmConfig,
    /// `[cases] files = [...]`: seed case files run as they are instead of the axes product.
    pub case_files: Vec<PathBuf>,
    /// Cases the plan makes (after `[[exclude]]` and `[filter]`), counted when it was loaded.
    pub case_count: u64,
    /// Problems that do not stop the plan (uneven chunks, overridden `[rounds]`, …).
    pub warnings: Vec<crate::error::Diagnostic>,
}

/// Figures `[report] figures` may name: exactly the ones the report draws.
pub const KNOWN_FIGURES: &[&str] = &[
    "strong_scaling_t_total",
    "strong_scaling_efficiency",
    "message_size_bw",
    "paired_stack_ratio",
    "phase_breakdown",
    "compile_breakdown",
    "wall_vs_device",
    "bw_model_fit",
];

/// Run statuses `[run] retry_on` may name.
pub const RETRY_STATUSES: &[&str] = &["timeout", "fail"];

#[derive(Debug, Clone, PartialEq)]
pub struct CampaignMeta {
    /// `[a-z0-9_-]+`; becomes a folder name.
    pub name: String,
    pub description: String,
}

/// One sweep dimension.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// A case field name (seed spelling).
    pub name: String,
    /// Its values, type-checked for that field.
    pub values: Vec<Value>,
}

/// Warmup/timed round rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RoundRule {
    /// The old generator's rule by count.
    #[default]
    Auto,
    Fixed(u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rounds {
    pub warmup: RoundRule,
    pub timed: RoundRule,
}

impl Rounds {
    /// Rounds for a count: the seed generator's table for `auto`.
    pub fn resolve(&self, count: u64) -> (u32, u32) {
        let warmup = match self.warmup {
            RoundRule::Fixed(n) => n,
            RoundRule::Auto => {
                if count <= 65536 {
                    3
                } else {
                    1
                }
            }
        };
        let timed = match self.timed {
            RoundRule::Fixed(n) => n,
            RoundRule::Auto => match count {
                c if c <= 256 => 50,
                c if c <= 4096 => 20,
                c if c <= 65536 => 15,
                c if c <= 262_144 => 10,
                _ => 5,
            },
        };
        (warmup, timed)
    }
}

/// Order of stacks within a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StackOrder {
    #[default]
    Shuffled,
    Given,
}

/// Which executor runs the processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExecutorKind {
    #[default]
    Local,
    Slurm,
}

/// `[run]`.
#[derive(Debug, Clone, PartialEq)]
pub struct RunConfig {
    /// Default wall-clock limit per stack process (a stack's own `timeout` wins).
    pub timeout: Duration,
    pub no_output_timeout: Option<Duration>,
    pub retries: u32,
    /// Statuses that trigger a retry (`timeout`, `fail`).
    pub retry_on: Vec<String>,
    pub cooldown: Duration,
    pub order: StackOrder,
    /// Max concurrent runs (None = as many as devices allow).
    pub jobs: Option<usize>,
    /// One run at a time.
    pub exclusive: bool,
    /// Seed of the shuffled order (None = drawn and recorded).
    pub seed: Option<u64>,
    pub executor: ExecutorKind,
    /// Quarantine a device after this many failed runs in a row (0 = never).
    pub quarantine_after: u32,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            timeout: Duration::from_secs(600),
            no_output_timeout: None,
            retries: 0,
            retry_on: vec!["timeout".into(), "fail".into()],
            cooldown: Duration::ZERO,
            order: StackOrder::Shuffled,
            jobs: None,
            exclusive: false,
            seed: None,
            executor: ExecutorKind::Local,
            quarantine_after: 3,
        }
    }
}

/// Device kind of the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceKind {
    Npu,
    Gpu,
    #[default]
    Cpu,
}

/// `auto` = scheduler picks devices; `pinned` = the case's `device_ids` as given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Placement {
    #[default]
    Auto,
    Pinned,
}

/// `[devices]`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DevicesConfig {
    pub kind: DeviceKind,
    /// Device ids of the pool. Default for `cpu`: 0..number of CPUs.
    pub ids: Vec<u32>,
    /// Topology islands; placement keeps a run inside one group when it can.
    pub groups: Vec<Vec<u32>>,
    pub placement: Placement,
    /// Optional pool-wide health probe command (argv templates).
    pub probe: Option<Vec<String>>,
}

/// `[report]`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReportConfig {
    /// Stack every other stack is compared with.
    pub baseline: Option<String>,
    /// Template replacing `templates/report.md.j2`.
    pub template: Option<PathBuf>,
    /// Figures to draw (empty = all that have data).
    pub figures: Vec<String>,
    pub title: Option<String>,
}

/// `[slurm]`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SlurmConfig {
    pub partition: Option<String>,
    pub account: Option<String>,
    pub qos: Option<String>,
    /// `--time`, e.g. `"00:10:00"`.
    pub time_limit: Option<String>,
    pub extra_args: Vec<String>,
    /// How devices are requested, a template such as `--gres=npu:{{ p }}` or `--gpus={{ p }}`.
    pub devices_arg: Option<String>,
    pub poll_interval: Option<Duration>,
    /// Jobs in the queue at once (`--jobs` wins; default `executor::slurm::DEFAULT_MAX_JOBS`).
    pub max_jobs: Option<usize>,
}

/// `[a-z0-9_-]+`: the name becomes a folder, so no separators, dots or upper case.
pub fn check_campaign_name(name: &str) -> std::result::Result<(), String> {
    let ok = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "campaign name `{name}` must match [a-z0-9_-]+ (it becomes a folder name; no `/`, `..`, spaces or upper case)"
        ))
    }
}
