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
pub(crate) struct Plan {
    /// The file it came from.
    pub(crate) source: PathBuf,
    /// First 16 hex digits of SHA-256 of the file's bytes (provenance, resume).
    pub(crate) hash: String,
    /// The file's text, kept for the frozen copy in the run dir.
    pub(crate) text: String,
    pub(crate) campaign: CampaignMeta,
    /// `[case]`: default values of case fields (seed names), already type-checked.
    pub(crate) case_defaults: BTreeMap<String, Value>,
    /// `[axes]` without `stacks`, in file order (the first varies slowest).
    pub(crate) axes: Vec<Axis>,
    /// `variant = "*"` in `[case]` or `[axes]`: every stack runs each of its algorithms for
    /// the op (`plan::variants`).
    pub(crate) every_variant: bool,
    /// `axes.stacks` (default `["host"]`).
    pub(crate) stacks: Vec<String>,
    /// `[[exclude]]`: drop a point matching every key of one rule.
    pub(crate) excludes: Vec<BTreeMap<String, Value>>,
    /// `[filter] where`: a minijinja expression over case fields.
    pub(crate) filter: Option<String>,
    pub(crate) rounds: Rounds,
    pub(crate) run: RunConfig,
    pub(crate) devices: DevicesConfig,
    /// `[stacks.NAME]` as written in the plan (overlaid on shipped definitions when resolved).
    pub(crate) stack_defs: BTreeMap<String, StackDef>,
    pub(crate) report: ReportConfig,
    pub(crate) slurm: SlurmConfig,
    /// `[adapt]`: sizes added while the campaign runs.
    pub(crate) adapt: AdaptConfig,
    /// `[census]`: the plan is a link census (its cases are every pair of its devices).
    pub(crate) census: Option<CensusConfig>,
    /// `[profile]` (or `run --profile`): the profiled runs, extra to the timed ones.
    pub(crate) profile: crate::model::profile::ProfileConfig,
    /// `[cases] files = [...]`: seed case files run as they are instead of the axes product.
    pub(crate) case_files: Vec<PathBuf>,
    /// Cases the plan makes (after `[[exclude]]` and `[filter]`), counted when it was loaded.
    pub(crate) case_count: u64,
    /// Problems that do not stop the plan (uneven chunks, overridden `[rounds]`, …).
    pub(crate) warnings: Vec<crate::error::Diagnostic>,
}

/// The figure registry, written once: each row makes a `FigureKind` variant, its entry in
/// `FigureKind::ALL` (report order) and its name in `KNOWN_FIGURES`, so the three cannot drift.
/// `report::figures::build` matches every variant without a catch-all: a figure named here
/// without a builder there does not compile.
macro_rules! figures {
    ($($variant:ident => $name:literal,)*) => {
        /// A figure the report draws.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) enum FigureKind {
            $($variant,)*
        }

        impl FigureKind {
            /// Every figure, in report order.
            pub(crate) const ALL: &'static [FigureKind] = &[$(FigureKind::$variant,)*];

            /// Its name in `[report] figures` and in `figures/<name>.png`.
            pub(crate) const fn name(self) -> &'static str {
                match self {
                    $(FigureKind::$variant => $name,)*
                }
            }
        }

        /// Figures `[report] figures` may name: exactly the ones the report draws.
        pub(crate) const KNOWN_FIGURES: &[&str] = &[$($name,)*];
    };
}

figures! {
    StrongScalingTTotal => "strong_scaling_t_total",
    StrongScalingEfficiency => "strong_scaling_efficiency",
    MessageSizeBw => "message_size_bw",
    PairedStackRatio => "paired_stack_ratio",
    PhaseBreakdown => "phase_breakdown",
    CompileBreakdown => "compile_breakdown",
    WallVsDevice => "wall_vs_device",
    BwModelFit => "bw_model_fit",
}

impl FigureKind {
    /// The figure called `name`, if there is one.
    pub(crate) fn parse(name: &str) -> Option<FigureKind> {
        FigureKind::ALL.iter().copied().find(|f| f.name() == name)
    }
}

/// Plan warnings `[campaign] allow` may silence, for plans that mean what would otherwise be
/// a slip: `uneven-chunks` (a ring/twophase count not divisible by p).
pub(crate) const ALLOWABLE_WARNINGS: &[&str] = &[UNEVEN_CHUNKS];

/// The warning name of a ring/twophase case whose count is not divisible by p.
pub(crate) const UNEVEN_CHUNKS: &str = "uneven-chunks";

/// Run statuses `[run] retry_on` may name.
pub(crate) const RETRY_STATUSES: &[&str] = &["timeout", "fail"];

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CampaignMeta {
    /// `[a-z0-9_-]+`; becomes a folder name.
    pub(crate) name: String,
    pub(crate) description: String,
    /// Warnings the plan says are deliberate (names from [`ALLOWABLE_WARNINGS`]).
    pub(crate) allow: Vec<String>,
}

impl CampaignMeta {
    /// Whether the plan silenced warning `name` with `[campaign] allow`.
    pub(crate) fn allows(&self, name: &str) -> bool {
        self.allow.iter().any(|a| a == name)
    }
}

/// One sweep dimension.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Axis {
    /// A case field name (seed spelling).
    pub(crate) name: String,
    /// Its values, type-checked for that field.
    pub(crate) values: Vec<Value>,
}

/// Warmup/timed round rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum RoundRule {
    /// The old generator's rule by count.
    #[default]
    Auto,
    Fixed(u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Rounds {
    pub(crate) warmup: RoundRule,
    pub(crate) timed: RoundRule,
}

impl Rounds {
    /// Rounds for a count: the seed generator's table for `auto`.
    pub(crate) fn resolve(&self, count: u64) -> (u32, u32) {
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
pub(crate) enum StackOrder {
    #[default]
    Shuffled,
    Given,
}

/// Which executor runs the processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ExecutorKind {
    #[default]
    Local,
    Slurm,
}

impl ExecutorKind {
    /// Every executor kind with its name: the one list `[run] executor`, `--executor`, the
    /// journal header and `executor::kind_name` are made from (`executor::backend_for` picks each
    /// kind's backend).
    pub(crate) const ALL: &'static [(ExecutorKind, &'static str)] = &[
        (ExecutorKind::Local, "local"),
        (ExecutorKind::Slurm, "slurm"),
    ];

    /// Its name (`local`, `slurm`).
    pub(crate) fn name(self) -> &'static str {
        (Self::ALL.iter())
            .find(|(k, _)| *k == self)
            .map_or("local", |(_, n)| n)
    }

    /// The kind called `name`, if any.
    pub(crate) fn named(name: &str) -> Option<ExecutorKind> {
        Self::ALL.iter().find(|(_, n)| *n == name).map(|(k, _)| *k)
    }

    /// Every name, in order.
    pub(crate) fn names() -> Vec<&'static str> {
        Self::ALL.iter().map(|(_, n)| *n).collect()
    }
}

/// `[run]`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunConfig {
    /// Default wall-clock limit per stack process (a stack's own `timeout` wins).
    pub(crate) timeout: Duration,
    pub(crate) no_output_timeout: Option<Duration>,
    pub(crate) retries: u32,
    /// Statuses that trigger a retry (`timeout`, `fail`).
    pub(crate) retry_on: Vec<String>,
    pub(crate) cooldown: Duration,
    pub(crate) order: StackOrder,
    /// Max concurrent runs (None = the local default, `executor::local::in_flight`).
    pub(crate) jobs: Option<usize>,
    /// One run at a time.
    pub(crate) exclusive: bool,
    /// Seed of the shuffled order (None = drawn and recorded).
    pub(crate) seed: Option<u64>,
    pub(crate) executor: ExecutorKind,
    /// Quarantine a device after this many failed runs in a row (0 = never).
    pub(crate) quarantine_after: u32,
    /// Separate runs of each (case, stack), interleaved across stacks in a seeded order, so
    /// statistics and verdicts see the run-to-run variance (`[run] repeats`, `--repeats`).
    /// With sequential repeats, the fewest each (case, stack) gets.
    pub(crate) repeats: u32,
    /// The most repeats of each (case, stack): `repeats` for a fixed count; above it, repeats
    /// continue only at points whose rows are still undecided (`[run] repeats = { min, max }`
    /// or `"auto"`; `analysis::sequential`).
    pub(crate) repeats_max: u32,
    /// A cap on device time (`[run] budget`, `--budget`): once the campaign's runs have used
    /// it, no run starts and the campaign ends with what it has.
    pub(crate) budget: Option<Duration>,
}

/// `[run] repeats = "auto"`: sequential repeats from 3 up to this many.
pub(crate) const AUTO_REPEATS_MAX: u32 = 10;

impl RunConfig {
    /// Repeats continue only where rows are undecided (`repeats_max` above `repeats`).
    pub(crate) fn sequential(&self) -> bool {
        self.repeats_max > self.repeats
    }
}

/// Repeats of each (case, stack) unless the plan or `--repeats` says otherwise: the fewest a
/// faster/slower verdict can rest on (`analysis::verdict::MIN_REPEATS`), so a campaign run on
/// the defaults can be compared; `repeats = 1` for a quick look.
pub(crate) const DEFAULT_REPEATS: u32 = 3;

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
            repeats: DEFAULT_REPEATS,
            repeats_max: DEFAULT_REPEATS,
            budget: None,
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
pub(crate) enum Placement {
    #[default]
    Auto,
    Pinned,
}

/// `[devices]`.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct DevicesConfig {
    pub(crate) kind: DeviceKind,
    /// Device ids of the pool. Default for `cpu`: 0..number of CPUs.
    pub(crate) ids: Vec<u32>,
    /// Topology islands; placement keeps a run inside one group when it can.
    pub(crate) groups: Vec<Vec<u32>>,
    pub(crate) placement: Placement,
    /// Optional pool-wide health probe command (argv templates).
    pub(crate) probe: Option<Vec<String>>,
}

/// `[report]`.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct ReportConfig {
    /// Stack every other stack is compared with.
    pub(crate) baseline: Option<String>,
    /// Template replacing `templates/report.md.j2`.
    pub(crate) template: Option<PathBuf>,
    /// Figures to draw (empty = all that have data).
    pub(crate) figures: Vec<String>,
    pub(crate) title: Option<String>,
    /// One metric every stack is paired on, when their declared metrics differ in kind.
    pub(crate) compare_metric: Option<crate::model::results::Metric>,
    /// The equivalence margin ±δ of the paired verdicts (`"5%"` → 0.05); None: the noise band.
    pub(crate) equivalence: Option<f64>,
    /// How many looks sequential repeats take at each row (`analysis::sequential::looks` of
    /// `[run] repeats`; 1 for a fixed count): the verdicts' families count each row that many
    /// times. Not a key: made from `[run]` when the plan is loaded.
    pub(crate) looks: Vec<u32>,
    /// `[adapt] crossover`: its resolution and the sizes the plan gives (counts), so the report
    /// can say which sizes were added. Not a key: made from `[adapt]` and `[axes]`.
    pub(crate) adapt: Option<(f64, Vec<u64>)>,
    /// `[census]`: which devices and stack the census section reads. Not a key: the plan's
    /// `[census]`.
    pub(crate) census: Option<CensusConfig>,
}

/// `[census]` (and `campaign census`): every pair of `devices` measured once on `stack`, the
/// pairs scheduled by `analysis::census::rounds` (issue 48, item 3).
#[derive(Debug, Clone, PartialEq)]
pub struct CensusConfig {
    /// The devices whose pairs are measured, ascending, at least 2.
    pub(crate) devices: Vec<u32>,
    pub(crate) stack: String,
    pub(crate) op: crate::model::case::Op,
    /// Elements per rank (the case's `count`).
    pub(crate) count: u64,
    /// Nodes the devices are spread over, in equal consecutive blocks (`nodes = 2` with devices
    /// 0-7: 0-3 on the first node, 4-7 on the second); a pair across two blocks is a two-node
    /// case (one rank per node), which only a multi-node executor (Slurm) runs.
    pub(crate) nodes: u32,
    /// Journal the devices the census names as quarantined, so the rest of the campaign (its
    /// sweep, a `resume` of the run dir) keeps them out and `campaign status` lists them.
    pub(crate) quarantine: bool,
    /// The plan sweeps too (`[axes]`, `[cases]`): the census's cases run first, gated ahead of
    /// the sweep, and are not the plan's own axes (`plan::census_only` makes them).
    pub(crate) then_sweep: bool,
}

/// `[census] count` when not given: 64 Mi elements, a size at which a pair's time is its link's
/// bandwidth rather than its latency.
pub(crate) const CENSUS_COUNT: u64 = 64 << 20;

/// `[adapt]`: sizes added where the winner of a pair changes (issue 47, item 3).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AdaptConfig {
    /// Bisect (geometrically) between neighbouring sizes whose decided winner differs.
    pub(crate) crossover: bool,
    /// Stop once a crossover's bracket has hi/lo at or below this.
    pub(crate) resolution: f64,
}

/// `[adapt] resolution` when not given: a crossover placed within ±12 %.
pub(crate) const DEFAULT_RESOLUTION: f64 = 1.25;

impl Default for AdaptConfig {
    fn default() -> Self {
        AdaptConfig {
            crossover: false,
            resolution: DEFAULT_RESOLUTION,
        }
    }
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

/// The longest campaign or stack name: it becomes a folder name (file systems allow 255 bytes),
/// and a report or a table should still be able to show it.
pub(crate) const MAX_NAME_LEN: usize = 100;

/// Most runs (cases × stacks × repeats) one campaign may plan: memory grows by about 1.7 KB
/// per planned run (docs/performance.md "Huge plans"), so this keeps a campaign within ~2 GB.
/// Checked by `validate` and again by `run` (after `--repeats`/`--filter`).
pub(crate) const MAX_RUNS: usize = 1_000_000;

/// `[a-z0-9_-]+`, at most [`MAX_NAME_LEN`] bytes: the name becomes a folder, so no separators,
/// dots or upper case.
pub(crate) fn check_campaign_name(name: &str) -> std::result::Result<(), String> {
    let ok = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    if !ok {
        Err(format!(
            "campaign name `{name}` must match [a-z0-9_-]+ (it becomes a folder name; no `/`, `..`, spaces or upper case)"
        ))
    } else if name.len() > MAX_NAME_LEN {
        Err(format!(
            "name is {} characters long; at most {MAX_NAME_LEN} are allowed (it becomes a folder name)",
            name.len()
        ))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::ExecutorKind;

    /// Every kind has exactly one name and the name leads back to it; the match fails to compile
    /// when a kind is added without deciding its name here too.
    #[test]
    fn every_executor_kind_has_one_name() {
        for (kind, name) in ExecutorKind::ALL {
            match kind {
                ExecutorKind::Local | ExecutorKind::Slurm => {}
            }
            assert_eq!(ExecutorKind::named(name), Some(*kind));
            assert_eq!(kind.name(), *name);
        }
        assert_eq!(ExecutorKind::names(), ["local", "slurm"]);
        assert_eq!(ExecutorKind::named("flux"), None);
    }
}
