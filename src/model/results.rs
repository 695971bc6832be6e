//! Samples, run results and the result set — the data every exporter and renderer reads.
//!
//! Owns the seed-compatible `timing.json` sample shape, run statuses and the `ResultSet`
//! (all runs of one run dir plus provenance). Writers of `results.json` / `results.csv` /
//! `samples.csv` are `store::results_json` and `store::results_csv`, pure functions of a `ResultSet`; this file
//! holds the types only and must not do I/O.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::model::case::Case;
use crate::model::nodes::NodeHardware;

/// One round's measurements, in the seed's `timing.json` shape (floats rounded to 6 significant digits
/// when written).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Sample {
    /// 1-based round index over all rounds of the run (warmup first).
    pub round: u32,
    /// `warmup`, `warmup-<n>` or `timed-<n>`.
    pub phase: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execute_s: Option<f64>,
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bw_execute_mb_s: Option<f64>,
    /// Setup time (first warmup round only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup_s: Option<f64>,
    /// Named phases in seconds (startup, compile, init, execute, …).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub phases: BTreeMap<String, f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_rank_execute_s: Vec<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_wall_s: Option<f64>,
    /// Compile profile parts in seconds (total, passes, codegen), when a stack reports them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub compile_profile: BTreeMap<String, f64>,
    /// Bytes this round really moved when the stack's tests have fixed shapes of their own
    /// (`fixed_shapes`, pto-isa): bandwidth uses these instead of the case's `n_bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n_bytes: Option<u64>,
}

impl Sample {
    /// Timed rounds are the only ones statistics use.
    pub fn is_timed(&self) -> bool {
        self.phase.starts_with("timed")
    }

    /// The label for the n-th (1-based) round of a kind, as the seed wrote them.
    pub fn label(timed: bool, n: u32) -> String {
        if timed {
            format!("timed-{n}")
        } else {
            format!("warmup-{n}")
        }
    }
}

/// What a stack's headline number measures: a sample field, named as in `timing.json`.
/// Metrics of different names differ in kind (a Python-level interval is not a device-side
/// time) and are never paired silently.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// The stack's timed window around the collective (the seed's `execute_s`).
    #[default]
    ExecuteS,
    /// The runtime's device-side wall time (`device_wall_s`, e.g. STRACE spans).
    DeviceWallS,
    /// The whole round as the engine or the stack saw it (`wall_s`).
    WallS,
}

impl Metric {
    pub(crate) const ALL: &'static [Metric] =
        &[Metric::ExecuteS, Metric::DeviceWallS, Metric::WallS];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Metric::ExecuteS => "execute_s",
            Metric::DeviceWallS => "device_wall_s",
            Metric::WallS => "wall_s",
        }
    }

    /// The metric named `name` (`execute_s`, `device_wall_s`, `wall_s`).
    pub(crate) fn parse(name: &str) -> Option<Metric> {
        Metric::ALL.iter().copied().find(|m| m.as_str() == name)
    }

    /// This metric's value in one sample.
    pub(crate) fn of(self, s: &Sample) -> Option<f64> {
        match self {
            Metric::ExecuteS => s.execute_s,
            Metric::DeviceWallS => s.device_wall_s,
            Metric::WallS => s.wall_s,
        }
    }
}

impl std::fmt::Display for Metric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a run ended. Only `Pass` runs feed statistics; every other status is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// Every round completed and the golden matched.
    Pass,
    /// Non-zero exit, crash, golden mismatch, or unparseable output.
    Fail,
    /// Killed at its wall-clock or no-output timeout.
    Timeout,
    /// The stack does not support this case (variant, dtype, count limits).
    Skipped,
    /// The stack cannot run here (missing root, binary, build failure).
    Unavailable,
    /// Stopped by Ctrl-C / SIGTERM; resume re-runs it.
    Interrupted,
    /// No healthy devices left for it (quarantine).
    Blocked,
    /// Not run because it was not needed: an optional repeat of a point whose rows were
    /// already decided (sequential repeats), or a run left when the device-time budget was
    /// spent. The reason says which.
    Spared,
}

impl RunStatus {
    pub(crate) const ALL: &'static [RunStatus] = &[
        RunStatus::Pass,
        RunStatus::Fail,
        RunStatus::Timeout,
        RunStatus::Skipped,
        RunStatus::Unavailable,
        RunStatus::Interrupted,
        RunStatus::Blocked,
        RunStatus::Spared,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            RunStatus::Pass => "pass",
            RunStatus::Fail => "fail",
            RunStatus::Timeout => "timeout",
            RunStatus::Skipped => "skipped",
            RunStatus::Unavailable => "unavailable",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Blocked => "blocked",
            RunStatus::Spared => "spared",
        }
    }

    /// Does this status make the campaign exit 1?
    pub(crate) fn is_failure(self) -> bool {
        matches!(self, RunStatus::Fail | RunStatus::Timeout)
    }
}

/// How a `spared` run's reason begins when the device-time budget was spent (`engine::decide`
/// writes it, the report counts by it).
pub(crate) const SPARED_BUDGET: &str = "the budget of ";

/// How a `spared` run's reason begins when its added size was not needed (`[adapt]`).
pub(crate) const SPARED_SIZE: &str = "not needed: no pair's winner changes";

/// Between a case id and its repeat number in a run id: repeat 1 of a case is the case id
/// itself (`mesh_p2_…_d0-1`, as before repeats existed), repeat 2 is `mesh_p2_…_d0-1~r2`. The run
/// id names the run's bundle folder (`cases/<run id>/<stack>`) and its journal step.
pub(crate) const REPEAT_MARK: &str = "~r";

/// The built-in stack (campaign's own CPU collectives): no root folder, its commit the build's.
pub(crate) const BUILT_IN_STACK: &str = "host";

/// The run id of repeat `repeat` (1-based) of `case_id`.
pub(crate) fn run_id(case_id: &str, repeat: u32) -> String {
    if repeat <= 1 {
        case_id.to_string()
    } else {
        format!("{case_id}{REPEAT_MARK}{repeat}")
    }
}

/// A run id split into the case id and the repeat number (1 when it has none).
pub(crate) fn split_run_id(id: &str) -> (&str, u32) {
    match id.rsplit_once(REPEAT_MARK) {
        Some((case, n)) if !case.is_empty() => match n.parse::<u32>() {
            Ok(r) if r >= 2 && !n.starts_with('0') => (case, r),
            _ => (id, 1),
        },
        _ => (id, 1),
    }
}

/// Words the engine puts in a run's reason when a golden check ran and did not match; the
/// `correctness` of a failed run is `fail` only when its reason says so.
pub(crate) const GOLDEN_MISMATCH: &str = "golden mismatch";

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One (case, stack) run as recorded in its bundle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// The case as run (device_ids are the devices actually leased).
    pub case: Case,
    /// The planned case id: the bundle folder name, stable across placements and resumes.
    pub case_id: String,
    pub stack: String,
    pub status: RunStatus,
    /// Why a run did not pass (status reason, golden mismatch detail, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Every round, warmup and timed.
    pub samples: Vec<Sample>,
    /// Bundle folder relative to the run dir: `cases/<case_id>/<stack>`.
    pub bundle: PathBuf,
    /// 1-based attempt number that produced this result.
    #[serde(default = "one")]
    pub attempt: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// RFC 3339 timestamps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<String>,
    /// Where `execute_s` came from: `stack` (reported by the stack) or `engine` (wall clock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing_source: Option<String>,
    /// The CPUs a CPU run (the `host` stack, `resource = "cpu"`) actually received; `None` for
    /// device runs and for runs recorded before campaign kept it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<Vec<u32>>,
    /// Share of the run's wall time during which it was ready but had no CPU — every runnable
    /// process of it waited, because processes outside it held the CPUs (its cgroup's "full"
    /// CPU pressure stall time over its wall time). `None` where it was not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_contention: Option<f64>,
    /// Each rank's node, in rank order, where the backend recorded it (a run that spans
    /// several Slurm nodes, from its ranks' own records); `None` on one node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank_nodes: Option<Vec<String>>,
    /// The hardware of each node the run's job ran on, as the job recorded it there (Slurm
    /// runs, one node or several); empty where nothing recorded it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_hardware: Vec<NodeHardware>,
    /// What the run's own output said ran (`[stacks.NAME.ran]`); `None` where the stack declares
    /// no way to learn it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ran: Option<Ran>,
}

/// What really ran, in the stack's own words: the algorithm (and protocol and channels where
/// the stack prints them), each the distinct values seen in order, joined with `,`; the
/// component that served the op where the library's log says (Open MPI's coll component); and
/// the algorithm and component the run was pinned to, when it was.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Ran {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub algo: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proto: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channels: Option<String>,
    /// The pin (`ran.expect` rendered for the run); `None`: nothing pinned, nothing checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    /// The component that served the op (`ran.component`), distinct values joined with `,`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component: Option<String>,
    /// The component the pin needs in charge (`ran.component_expect` rendered); `None`: not
    /// checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component_expected: Option<String>,
}

/// How the reason of a run whose pin was not honoured begins (`Ran::not_honoured`).
pub const PIN_NOT_HONOURED: &str = "pin not honoured";

impl Ran {
    /// The output named another algorithm (or several), or another component, than the pin:
    /// evidence that something else ran, not merely silence.
    pub fn contradicted(&self) -> bool {
        let norm = |s: &str| s.trim().to_ascii_lowercase().replace('-', "_");
        let other = |got: Option<&str>, want: Option<&str>| match (got, want) {
            (Some(g), Some(w)) => g.contains(',') || norm(g) != norm(w),
            _ => false,
        };
        other(self.algo.as_deref(), self.expected.as_deref())
            || other(
                self.component.as_deref(),
                self.component_expected.as_deref(),
            )
    }

    /// Was the pin honoured? `None` when nothing was pinned; `Some(false)` when the output named
    /// another algorithm, several, or none at all, or another component than the pin needs in
    /// charge of the op (or none).
    pub fn honoured(&self) -> Option<bool> {
        let norm = |s: &str| s.trim().to_ascii_lowercase().replace('-', "_");
        let same = |got: Option<&str>, want: &str| {
            got.is_some_and(|a| !a.contains(',') && norm(a) == norm(want))
        };
        let algo = (self.expected.as_deref()).map(|e| same(self.algo.as_deref(), e));
        let component =
            (self.component_expected.as_deref()).map(|e| same(self.component.as_deref(), e));
        match (algo, component) {
            (None, None) => None,
            (a, c) => Some(a.unwrap_or(true) && c.unwrap_or(true)),
        }
    }

    /// Why the pin was not honoured, for a run's reason: "pin not honoured: asked ring, ran
    /// tree", or "pin not honoured: asked ring of tuned, but basic serves the op".
    pub fn not_honoured(&self) -> Option<String> {
        if self.honoured()? {
            return None;
        }
        let asked = self.expected.as_deref().unwrap_or("a pin");
        let norm = |s: &str| s.trim().to_ascii_lowercase().replace('-', "_");
        if let Some(want) = self.component_expected.as_deref() {
            let served = self.component.as_deref();
            if !served.is_some_and(|c| !c.contains(',') && norm(c) == norm(want)) {
                return Some(match served {
                    Some(c) => format!(
                        "pin not honoured: asked {asked} of {want}, but {c} serves the op \
                         ({want} is not the component in charge)"
                    ),
                    None => format!(
                        "pin not honoured: asked {asked} of {want}, and the output never said \
                         which component serves the op"
                    ),
                });
            }
        }
        Some(match &self.algo {
            Some(algo) => format!("pin not honoured: asked {asked}, ran {algo}"),
            None => format!(
                "pin not honoured: asked {asked}, and the output never said which algorithm ran"
            ),
        })
    }
}

fn one() -> u32 {
    1
}

impl RunResult {
    /// The planned case this run measured (its run id without the repeat mark).
    pub(crate) fn base_case_id(&self) -> &str {
        split_run_id(&self.case_id).0
    }

    /// The case id with its variant blanked (`*`): the point of the sweep the run answers for,
    /// the same for every stack whatever its variant, so each stack's run of a point is paired
    /// with the baseline's (variants belong to stacks: `plan::variants`).
    pub(crate) fn point_id(&self) -> String {
        self.case.point_id(self.base_case_id())
    }

    /// Which repeat of its (case, stack) this run is, 1-based.
    pub(crate) fn repeat(&self) -> u32 {
        split_run_id(&self.case_id).1
    }

    /// The seed's `correctness`: `pass` for a passing run, `fail` only when a golden check ran
    /// and did not match, `not_checked` otherwise (timeout, crash, argument error, …).
    pub(crate) fn correctness(&self) -> &'static str {
        match self.status {
            RunStatus::Pass => "pass",
            RunStatus::Fail
                if self
                    .error
                    .as_deref()
                    .is_some_and(|e| e.contains(GOLDEN_MISMATCH)) =>
            {
                "fail"
            }
            _ => "not_checked",
        }
    }

    /// Whether the run's pin took effect (results' `pin_honoured`): `Some(false)` for a run
    /// that was failed "pin not honoured", or whose output named another algorithm or component
    /// than its pin; `Some(true)` when what ran matched the pin; `None` where nothing was pinned
    /// or the run ended (crashed, timed out) before its output said what ran — an ordinary
    /// failure, not a pin that was ignored.
    pub(crate) fn pin_honoured(&self) -> Option<bool> {
        let ran = self.ran.as_ref()?;
        match ran.honoured()? {
            true => Some(true),
            false => {
                let flagged =
                    (self.error.as_deref()).is_some_and(|e| e.starts_with(PIN_NOT_HONOURED));
                (flagged || ran.contradicted()).then_some(false)
            }
        }
    }

    /// More ranks than CPUs received: the ranks of a CPU run shared cores.
    pub(crate) fn oversubscribed(&self) -> bool {
        // Per node: the CPUs recorded are those of one node (a local run's lease, a Slurm
        // job's cpuset where its script ran), and each node runs `ranks_per_node` ranks.
        self.cpus
            .as_ref()
            .is_some_and(|c| (self.case.ranks_per_node() as usize) > c.len())
    }

    /// Waited for a CPU more than `limit` of its time (an unmeasured run never did).
    pub(crate) fn contended(&self, limit: f64) -> bool {
        self.cpu_contention.is_some_and(|c| c > limit)
    }

    /// The devices (or, for a CPU run, the CPUs) the run actually received.
    pub(crate) fn granted(&self) -> &[u32] {
        self.cpus.as_deref().unwrap_or(&self.case.device_ids)
    }

    /// Timed samples that completed (the statistics population).
    pub(crate) fn timed_ok(&self) -> impl Iterator<Item = &Sample> {
        self.samples.iter().filter(|s| s.is_timed() && s.ok)
    }

    /// Timed values of `metric` of a passing run; empty for any other status.
    pub(crate) fn timed(&self, metric: Metric) -> Vec<f64> {
        if self.status != RunStatus::Pass {
            return Vec::new();
        }
        self.timed_ok().filter_map(|s| metric.of(s)).collect()
    }
}

/// Where the numbers came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Provenance {
    pub campaign_version: String,
    #[serde(default)]
    pub plan_hash: Option<String>,
    #[serde(default)]
    pub plan_file: Option<String>,
    #[serde(default)]
    pub host: String,
    #[serde(default)]
    pub kernel: String,
    #[serde(default)]
    pub cpu: String,
    /// Stack name → resolved root and git commit where found.
    #[serde(default)]
    pub stack_roots: BTreeMap<String, StackRoot>,
    /// `ASCEND_*`, `HCCL_*`, `NCCL_*`, … at campaign start.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Seed of the shuffled stack order and the bootstrap.
    #[serde(default)]
    pub seed: Option<u64>,
    #[serde(default)]
    pub executor: Option<String>,
    /// Runs ran one at a time (`--exclusive`, `[run] exclusive`, `--jobs 1`): what a history
    /// series keeps apart from runs that shared the machine. None in run dirs from before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclusive: Option<bool>,
    /// `pinned` when the plan pinned each case to the devices it names (`[devices] placement`);
    /// absent for auto placement (the default) and in run dirs from before: a history series
    /// keeps pinned runs apart from runs whose devices the engine chose.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<String>,
    /// The nodes the runs that spanned several nodes ran on (their ranks' records), sorted;
    /// empty when every run stayed on one node. Filled in when results.json is written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<String>,
    /// Every node a run's job recorded its hardware on (Slurm runs), by node name, each with
    /// its hardware fingerprint; a node seen with two different fingerprints is listed twice.
    /// Filled in when results.json is written, like `nodes`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_hardware: Vec<NodeHardware>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct StackRoot {
    pub(crate) path: Option<String>,
    pub(crate) git_commit: Option<String>,
    /// Git commits of checkouts nested under the root (`build/pto-isa` → commit).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) nested_git: BTreeMap<String, String>,
    /// The program the stack's command runs (argv[0] resolved on PATH, symlinks followed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) program: Option<String>,
    /// First line of `<program> --version`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) program_version: Option<String>,
    /// The stack's `env` table as written: what is added to every process's environment.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) env: BTreeMap<String, String>,
    /// The root's tree is not its commit: modified or untracked files (`git status
    /// --porcelain` lines such as ` M src/a.cpp`, `?? build/`), at most 50 then a count.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) dirty: Vec<String>,
    /// Per variant run: what the definition set for it by name (`HCCL_OP_EXPANSION_MODE`,
    /// `--algo`), see `stack::render::variant_settings`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) variants: BTreeMap<String, BTreeMap<String, String>>,
    /// The stack's default variant per op (its first algorithm of the op: what it runs when a
    /// plan names none), for each op the campaign ran on it: what "What the default loses"
    /// compares with the stack's other variants.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) defaults: BTreeMap<String, String>,
    /// Fingerprint of the stack's definition as this campaign ran it
    /// (`store::fingerprint::definition_fingerprint`): history points carry it, so a step
    /// where the definition changed says so. Absent in run dirs from before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) definition: Option<String>,
}

impl ResultSet {
    /// The provenance with `nodes`: every node a run over several nodes had a rank on.
    pub(crate) fn provenance_with_nodes(&self) -> Provenance {
        let mut provenance = self.provenance.clone();
        let nodes: std::collections::BTreeSet<&String> = (self.runs.iter())
            .filter(|r| r.case.nodes > 1)
            .filter_map(|r| r.rank_nodes.as_ref())
            .flatten()
            .collect();
        if !nodes.is_empty() {
            provenance.nodes = nodes.into_iter().cloned().collect();
        }
        let hardware: std::collections::BTreeSet<&NodeHardware> =
            self.runs.iter().flat_map(|r| &r.node_hardware).collect();
        if !hardware.is_empty() {
            provenance.node_hardware = hardware.into_iter().cloned().collect();
        }
        provenance
    }
}

/// All runs of one run dir.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ResultSet {
    pub campaign: String,
    /// `YYYYmmdd_HHMMSS` of the run dir.
    pub timestamp: String,
    pub provenance: Provenance,
    pub runs: Vec<RunResult>,
    /// Devices quarantined during the campaign, with the reason.
    #[serde(default)]
    pub quarantined: BTreeMap<String, String>,
    /// Each stack's declared headline metric (absent: `execute_s`).
    #[serde(default)]
    pub metrics: BTreeMap<String, Metric>,
}

impl ResultSet {
    /// The headline metric `stack` declared.
    pub(crate) fn metric(&self, stack: &str) -> Metric {
        self.metrics.get(stack).copied().unwrap_or_default()
    }
}

impl ResultSet {
    /// Count of runs per status (every status present, zero included).
    pub(crate) fn status_counts(&self) -> BTreeMap<RunStatus, usize> {
        let mut counts: BTreeMap<RunStatus, usize> =
            RunStatus::ALL.iter().map(|s| (*s, 0)).collect();
        for r in &self.runs {
            *counts.entry(r.status).or_default() += 1;
        }
        counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_round_trip_and_repeat_one_is_the_case_id() {
        let id = "mesh_p2_count256_fp32_a2a3_d0-1";
        assert_eq!(run_id(id, 1), id);
        assert_eq!(run_id(id, 3), format!("{id}~r3"));
        assert_eq!(split_run_id(&run_id(id, 3)), (id, 3));
        assert_eq!(split_run_id(id), (id, 1));
        assert_eq!(split_run_id("odd~rx"), ("odd~rx", 1));
        assert_eq!(split_run_id("odd~r01"), ("odd~r01", 1));
    }
}
