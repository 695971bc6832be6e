//! The performance history as data: a series key, its points, and what change-point detection
//! found. No I/O: `store::history_db` fills these from `history.sqlite`, `analysis::changepoint`
//! reads their numbers, `report` draws and summarises them, `cli::history` prints them.
//!
//! A series is one (case key, stack, host fingerprint): the same case on the same stack on the
//! same machine. Its points are passing runs in time order, each labelled with the stack's git
//! commit where the run recorded one.

use serde::Serialize;

/// What identifies a series.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct SeriesKey {
    /// What makes runs comparable (`store::history_db::ingest::series_key`: the case, the
    /// campaign, the rounds, one run at a time or not, the executor): runs of one case by two
    /// campaigns, or with other settings, are two series.
    pub series: String,
    /// `Case::case_key` (every case field but the round counts).
    pub case_key: String,
    pub stack: String,
    /// Short hash of host name and CPU model (`store::history_db::host_fingerprint`).
    pub host_fingerprint: String,
}

/// One run of a series: its median with a confidence interval and where it came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Point {
    /// Row id of the run dir in the store (ties in time are broken by it).
    pub run_dir_id: i64,
    /// The run dir as ingested (absolute path).
    pub run_dir: String,
    /// `YYYYmmdd_HHMMSS` of the run dir (or the old harness's timestamp).
    pub stamp: String,
    /// When the run dir's first run started, UTC RFC 3339 (else its stamp): the time order.
    pub date: String,
    /// The stack root's git commit where known.
    pub commit: Option<String>,
    /// Median timed `execute_s` in seconds.
    pub median_s: f64,
    /// 95 % bootstrap interval of the median (equal to the median with one sample).
    pub ci_lo_s: f64,
    pub ci_hi_s: f64,
    /// Timed samples behind the median.
    pub n: usize,
    /// The largest share of its time any repeat of the point waited for a CPU (null: not
    /// measured, or stored by a campaign that did not record it).
    pub cpu_contention: Option<f64>,
    /// Some repeat had more ranks than the CPUs it received.
    pub oversubscribed: bool,
    /// Fingerprint of the stack definition the run ran under (None: stored before it was
    /// recorded).
    pub definition: Option<String>,
}

impl Point {
    /// The definitions of `before` and `self` when both are known and differ: the stack was
    /// redefined between the two runs, so a step between them may be the definition's doing.
    pub fn definition_change_from<'a>(&'a self, before: &'a Point) -> Option<(&'a str, &'a str)> {
        match (before.definition.as_deref(), self.definition.as_deref()) {
            (Some(old), Some(new)) if old != new => Some((old, new)),
            _ => None,
        }
    }
}

/// A run that waited for a CPU more than this share of its time is contended (its cgroup's
/// "full" CPU pressure): `analysis::verdict::DEFAULT_MAX_CONTENTION` is this value, so the
/// report, `compare` and the history draw the line in one place.
pub const MAX_CONTENTION: f64 = 0.10;

impl Point {
    /// Neither contended nor oversubscribed: its median is the stack's, not the machine's.
    pub fn clean(&self) -> bool {
        self.clean_at(MAX_CONTENTION)
    }

    /// Neither oversubscribed nor stalled for a CPU more than `max_contention` of its time.
    pub fn clean_at(&self, max_contention: f64) -> bool {
        !self.oversubscribed && !self.cpu_contention.is_some_and(|c| c > max_contention)
    }
}

/// A series with its points, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Series {
    pub key: SeriesKey,
    /// The planned case id (readable name of the case key).
    pub case_id: String,
    /// The collective, from the stored case (`allreduce` when the case has no `op`: every
    /// series stored before the op axis). The case key already tells ops apart.
    pub op: String,
    /// The host name behind the fingerprint (empty when unknown, e.g. old harness dirs).
    pub host: String,
    /// The campaign whose runs these are (the newest name, as `case_id`).
    pub campaign: String,
    /// The message size of the stored case (count × element size; 0 when it does not say):
    /// which calibration class the series' noise floor is (`analysis::calibration`).
    pub bytes: u64,
    pub points: Vec<Point>,
}

/// Whether a step made the series slower or faster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    Slower,
    Faster,
}

impl std::fmt::Display for Direction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Direction::Slower => "slower",
            Direction::Faster => "faster",
        })
    }
}

/// A step found in a series: the level changed at point `at` (the first point of the new level).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    /// Index into the series' points of the first point after the step.
    pub at: usize,
    /// Level after / level before (a ratio of medians; 2.0 = twice as slow).
    pub ratio: f64,
    /// 95 % interval of the ratio.
    pub ratio_lo: f64,
    pub ratio_hi: f64,
    pub direction: Direction,
    /// True when the step's level lasts to the newest point of the series.
    pub current: bool,
}

/// The history section of a run's report: per series of the run that has earlier points.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReportHistory {
    pub rows: Vec<ReportHistoryRow>,
    /// The straggler evidence of the earlier campaigns on this run's machine, pooled into the
    /// report's Stragglers section (empty: none recorded).
    pub stragglers: EarlierStragglers,
}

/// One series in the report's history section.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReportHistoryRow {
    pub case_id: String,
    pub stack: String,
    /// How many earlier points the store holds.
    pub earlier: usize,
    /// Median of the newest earlier point, seconds.
    pub previous_median_s: f64,
    /// Median of this run, seconds.
    pub median_s: f64,
    /// This run / previous − 1 (0.10 = 10 % slower).
    pub change: f64,
    /// The step ending at this run, when detection found one.
    pub step: Option<Step>,
    /// The stack's definition changed between the previous run and this one (both known).
    pub definition_changed: bool,
    /// What the machine did to the previous point and this one, with the tables' marks
    /// ("this run ⚠ contended 62 %"); empty when both were clean.
    pub machine: String,
}

/// One (unit, stack) cell of an earlier campaign's straggler evidence as the history store keeps
/// it (`store::history_db`, table `straggler_cells`): the counts `analysis::straggler` tallies
/// per cell and each round's lateness, so the cells of several campaigns on one machine pool
/// into one attribution. `kind` is `device`, `cpu` or `node`; `node` the device's node (empty
/// when the run stayed on one) or the node's name; `id` the device or CPU slot (0 for a node).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StragglerCell {
    pub kind: String,
    pub node: String,
    pub id: u32,
    pub stack: String,
    pub rounds: usize,
    pub runs: usize,
    pub late_runs: usize,
    pub last: f64,
    pub chance: f64,
    pub var: f64,
    /// Each round's lateness (`t / median of its round − 1`) and its score, in round order.
    pub rel: Vec<f32>,
    pub z: Vec<f32>,
}

/// Straggler evidence of the earlier campaigns recorded on this run's machine (same host
/// fingerprint), pooled into the report's attribution.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct EarlierStragglers {
    /// How many earlier campaigns (run dirs) the cells come from.
    pub campaigns: usize,
    pub cells: Vec<StragglerCell>,
}
