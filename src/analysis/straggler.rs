//! Straggler attribution: which device (or node) arrives last, and whether that is the hardware
//! (late under every stack that ran on it) or one stack's implementation (late only under it).
//!
//! Reads the per-rank, per-round times (`Sample::per_rank_execute_s`, rank `i` on
//! `case.device_ids[i]`, on `rank_nodes[i]` where the run spanned nodes) of every passing run,
//! pooled over every stack and case. In each timed round the rank with the largest time is the
//! one that arrived last (ties share the credit); with no straggler every rank of a round is
//! equally likely to be last, `1/P`. Per (device, stack) cell it counts rounds, how often the
//! device was last against that chance, in how many runs it was last more often than chance, and
//! how far behind its round's median it was: relative (`t / median − 1`) and as a score, that
//! lateness over the run's robust noise (1.4826 × MAD of each rank's lateness around its own
//! median). A cell is *late* when the device was last at least 1.5× as often as chance, its
//! median score is at least 1, it was last more often than chance in most of its runs (at least
//! 2), and Bernstein's inequality bounds the chance of so many lasts under no straggler within 5 %
//! divided over every cell tested (Bonferroni). Runs on CPUs (`RunResult::cpus`: threads whose
//! core per rank is not recorded) are kept apart as "CPU slots". Runs whose per-rank lists do not
//! match their devices, single-rank runs and rounds with a non-finite or non-positive time are
//! skipped and counted; stacks with no usable per-rank time are named. Pure: no I/O.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::model::results::{ResultSet, RunResult, RunStatus};
use crate::model::series::{EarlierStragglers, StragglerCell};

/// The family-wise chance of any false finding, split over the cells tested.
pub(crate) const ALPHA: f64 = 0.05;
/// A late cell's device was last at least this many times as often as chance.
pub(crate) const MIN_RATIO: f64 = 1.5;
/// A cell with fewer rounds is not tested (and says nothing either way).
pub(crate) const MIN_ROUNDS: usize = 10;
/// A late cell's device was last more often than chance in at least this many of its runs.
pub(crate) const MIN_RUNS: usize = 2;
/// A late cell's device was, at the median of its rounds, at least this many robust spreads
/// (1.4826 × MAD of a rank's round-to-round lateness) behind its round's median.
pub(crate) const MIN_SCORE: f64 = 1.0;

/// Where ranks ran: a device (on a node, where the run spanned nodes), a CPU slot of a CPU run,
/// or a node.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Unit {
    Device { node: Option<String>, id: u32 },
    Cpu { id: u32 },
    Node(String),
}

impl Unit {
    /// "device 3", "device 3 on n1", "CPU slot 3", "node n1".
    pub(crate) fn name(&self) -> String {
        match self {
            Unit::Device { node: None, id } => format!("device {id}"),
            Unit::Device { node: Some(n), id } => format!("device {id} on {n}"),
            Unit::Cpu { id } => format!("CPU slot {id}"),
            Unit::Node(n) => format!("node {n}"),
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Unit::Device { .. } => "device",
            Unit::Cpu { .. } => "cpu",
            Unit::Node(_) => "node",
        }
    }
}

/// What a late device is blamed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Attribution {
    /// Late under every stack with evidence on it (at least two).
    Hardware,
    /// Late under some stacks, clearly not late under the others.
    Implementation,
    /// Late under the only stack with evidence on it, or late under some and unclear under
    /// others: the two cannot be told apart.
    Undetermined,
}

/// How one stack's rounds on one unit read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum CellState {
    Late,
    /// Last less than `MIN_RATIO` times as often as chance, or less than `MIN_SCORE` robust
    /// spreads behind its rounds' median.
    NotLate,
    /// Last often, but the evidence does not carry it.
    Unclear,
    /// Fewer than `MIN_ROUNDS` rounds: not tested.
    TooFew,
    /// Every stack's rounds together: a score, not a test.
    Pooled,
}

/// One (unit, stack) cell, or a unit pooled over its stacks (`stack` "*").
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Cell {
    pub(crate) stack: String,
    pub(crate) rounds: usize,
    pub(crate) runs: usize,
    /// Runs in which the unit was last more often than chance.
    pub(crate) late_runs: usize,
    /// Rounds in which it was last (ties share a round), and the count chance gives.
    pub(crate) last: f64,
    pub(crate) chance: f64,
    /// `last / chance`.
    pub(crate) late_ratio: Option<f64>,
    /// Bernstein's bound on the chance of `last` or more under no straggler.
    pub(crate) bound: f64,
    /// Median of `t / median of its round − 1`, in percent, with its 95 % interval.
    pub(crate) lateness_pct: Option<f64>,
    pub(crate) ci_lo_pct: Option<f64>,
    pub(crate) ci_hi_pct: Option<f64>,
    /// Median lateness in its run's robust spread (1.4826 × MAD of a rank's lateness from round
    /// to round).
    pub(crate) score: Option<f64>,
    pub(crate) state: CellState,
}

/// One unit's scores: pooled over every stack, and per stack.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct UnitScore {
    pub(crate) unit: String,
    pub(crate) kind: &'static str,
    pub(crate) pooled: Cell,
    pub(crate) stacks: Vec<Cell>,
}

/// A unit found late, and what it is blamed on.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Finding {
    pub(crate) unit: String,
    pub(crate) kind: &'static str,
    pub(crate) attribution: Attribution,
    /// The stacks under which it is late.
    pub(crate) stacks: Vec<String>,
    /// Evidence over those stacks' rounds.
    pub(crate) evidence: Cell,
    pub(crate) label: String,
}

/// A stack that gave no per-rank time the attribution could use, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct LeftOut {
    pub(crate) stack: String,
    pub(crate) why: String,
}

/// Runs and rounds set aside, by cause.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct Skipped {
    /// Runs whose per-rank lists (or rank nodes) do not match their devices.
    pub(crate) ranks_not_devices: usize,
    /// Runs of one rank: nobody to arrive before.
    pub(crate) one_rank: usize,
    /// Timed rounds with a non-finite or non-positive per-rank time.
    pub(crate) rounds: usize,
}

/// Everything the attribution says about a result set.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Stragglers {
    pub(crate) findings: Vec<Finding>,
    pub(crate) units: Vec<UnitScore>,
    /// Stacks whose per-rank times were used, sorted.
    pub(crate) stacks: Vec<String>,
    pub(crate) left_out: Vec<LeftOut>,
    pub(crate) skipped: Skipped,
    /// Cells tested (the Bonferroni family) and the bound each late cell's must be within.
    pub(crate) family: usize,
    pub(crate) threshold: f64,
    /// Earlier campaigns on this machine whose cells were pooled in ([`attribute_pooled`]).
    pub(crate) pooled_campaigns: usize,
}

/// Counts of one (unit, stack) cell as rounds are added.
#[derive(Debug, Clone, Default)]
struct Tally {
    rounds: usize,
    runs: usize,
    late_runs: usize,
    last: f64,
    chance: f64,
    var: f64,
    rel: Vec<f32>,
    z: Vec<f32>,
}

impl Tally {
    fn merge(&mut self, o: &Tally) {
        self.rounds += o.rounds;
        self.runs += o.runs;
        self.late_runs += o.late_runs;
        self.last += o.last;
        self.chance += o.chance;
        self.var += o.var;
        self.rel.extend_from_slice(&o.rel);
        self.z.extend_from_slice(&o.z);
    }
}

/// Why a run gives no rounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RunSkip {
    NoPerRank,
    /// Every round had a non-finite or non-positive time.
    NoUsable,
    RanksNotDevices,
    OneRank,
}

/// One usable timed round: each rank's time.
type Round<'a> = &'a [f64];

/// What the passing runs of a result set give: each (unit, stack) cell's tally, the runs and
/// rounds set aside, the stacks whose per-rank times were used and each passing run's outcome.
struct Gathered {
    cells: BTreeMap<(Unit, String), Tally>,
    skipped: Skipped,
    used: Vec<String>,
    passing: Vec<(String, Option<RunSkip>)>,
}

fn gather(results: &ResultSet) -> Gathered {
    let mut g = Gathered {
        cells: BTreeMap::new(),
        skipped: Skipped::default(),
        used: Vec::new(),
        passing: Vec::new(),
    };
    for run in results.runs.iter().filter(|r| r.status == RunStatus::Pass) {
        let outcome = add_run(run, &mut g.cells, &mut g.skipped.rounds);
        match outcome {
            Ok(()) => {
                if !g.used.contains(&run.stack) {
                    g.used.push(run.stack.clone());
                }
            }
            Err(RunSkip::RanksNotDevices) => g.skipped.ranks_not_devices += 1,
            Err(RunSkip::OneRank) => g.skipped.one_rank += 1,
            Err(RunSkip::NoPerRank | RunSkip::NoUsable) => {}
        }
        g.passing.push((run.stack.clone(), outcome.err()));
    }
    g
}

/// The evidence of `results` as the history store keeps it: one cell per (unit, stack).
pub(crate) fn cells(results: &ResultSet) -> Vec<StragglerCell> {
    (gather(results).cells.into_iter())
        .map(|((unit, stack), t)| {
            let (kind, node, id) = match unit {
                Unit::Device { node, id } => ("device", node.unwrap_or_default(), id),
                Unit::Cpu { id } => ("cpu", String::new(), id),
                Unit::Node(n) => ("node", n, 0),
            };
            StragglerCell {
                kind: kind.to_string(),
                node,
                id,
                stack,
                rounds: t.rounds,
                runs: t.runs,
                late_runs: t.late_runs,
                last: t.last,
                chance: t.chance,
                var: t.var,
                rel: t.rel,
                z: t.z,
            }
        })
        .collect()
}

/// The cell key and tally of a stored cell (None for a kind this build does not know).
fn stored(c: &StragglerCell) -> Option<((Unit, String), Tally)> {
    let unit = match c.kind.as_str() {
        "device" => Unit::Device {
            node: (!c.node.is_empty()).then(|| c.node.clone()),
            id: c.id,
        },
        "cpu" => Unit::Cpu { id: c.id },
        "node" => Unit::Node(c.node.clone()),
        _ => return None,
    };
    let tally = Tally {
        rounds: c.rounds,
        runs: c.runs,
        late_runs: c.late_runs,
        last: c.last,
        chance: c.chance,
        var: c.var,
        rel: c.rel.clone(),
        z: c.z.clone(),
    };
    Some(((unit, c.stack.clone()), tally))
}

/// The attribution of `results`.
pub(crate) fn attribute(results: &ResultSet) -> Stragglers {
    attribute_pooled(results, &EarlierStragglers::default())
}

/// The attribution of `results` with the cells of earlier campaigns on the same machine pooled
/// in (`store::history_db`): a device's rounds of every campaign count together, so a device
/// slow by a little in each of several campaigns is found in their sum. The family (cells
/// tested) is the pooled cells'; a stack counts as used when any campaign used its per-rank
/// times.
pub(crate) fn attribute_pooled(results: &ResultSet, earlier: &EarlierStragglers) -> Stragglers {
    let Gathered {
        mut cells,
        skipped,
        mut used,
        passing,
    } = gather(results);
    for (key, tally) in earlier.cells.iter().filter_map(stored) {
        if !used.contains(&key.1) {
            used.push(key.1.clone());
        }
        cells.entry(key).or_default().merge(&tally);
    }
    used.sort();
    let mut left_out = left_out(&passing, &used);
    left_out.sort_by(|a, b| a.stack.cmp(&b.stack));
    let family = cells.values().filter(|t| t.rounds >= MIN_ROUNDS).count();
    let threshold = ALPHA / family.max(1) as f64;
    let units = scores(&cells, threshold);
    let findings = findings(&units);
    Stragglers {
        findings,
        units,
        stacks: used,
        left_out,
        skipped,
        family,
        threshold,
        pooled_campaigns: earlier.campaigns,
    }
}

/// Stacks with passing runs none of which gave a usable round, each with why.
fn left_out(passing: &[(String, Option<RunSkip>)], used: &[String]) -> Vec<LeftOut> {
    let mut out: Vec<LeftOut> = Vec::new();
    for (stack, _) in passing {
        if used.contains(stack) || out.iter().any(|l| &l.stack == stack) {
            continue;
        }
        let mine = || passing.iter().filter(|(s, _)| s == stack).map(|(_, k)| *k);
        let why = if mine().all(|k| k == Some(RunSkip::NoPerRank)) {
            "no per-rank times"
        } else if mine().all(|k| k == Some(RunSkip::OneRank)) {
            "one rank per run"
        } else if mine().any(|k| k == Some(RunSkip::RanksNotDevices)) {
            "per-rank times that do not match the run's devices"
        } else {
            "no usable per-rank times (none finite and positive)"
        };
        out.push(LeftOut {
            stack: stack.clone(),
            why: why.to_string(),
        });
    }
    out
}

/// The units each rank of `run` ran on (its device or CPU slot), and its node where the run
/// spanned several.
fn rank_units(run: &RunResult) -> Result<Vec<(Unit, Option<Unit>)>, RunSkip> {
    let p = run.case.device_ids.len();
    let nodes = match &run.rank_nodes {
        Some(n) if n.len() != p => return Err(RunSkip::RanksNotDevices),
        Some(n) if n.iter().any(|x| x != &n[0]) => Some(n),
        _ => None,
    };
    Ok((run.case.device_ids.iter().enumerate())
        .map(|(i, &id)| {
            let node = nodes.map(|n| n[i].clone());
            let unit = if run.cpus.is_some() {
                Unit::Cpu { id }
            } else {
                Unit::Device {
                    node: node.clone(),
                    id,
                }
            };
            (unit, node.map(Unit::Node))
        })
        .collect())
}

/// The timed rounds of `run` with a per-rank time each, checked against its devices.
fn usable_rounds<'a>(run: &'a RunResult, bad: &mut usize) -> Result<Vec<Round<'a>>, RunSkip> {
    let with: Vec<&[f64]> = (run.timed_ok())
        .map(|s| s.per_rank_execute_s.as_slice())
        .filter(|t| !t.is_empty())
        .collect();
    if with.is_empty() {
        return Err(RunSkip::NoPerRank);
    }
    let p = run.case.device_ids.len();
    if with.iter().any(|t| t.len() != p) {
        return Err(RunSkip::RanksNotDevices);
    }
    if p < 2 {
        return Err(RunSkip::OneRank);
    }
    let good = |t: &&[f64]| t.iter().all(|x| x.is_finite() && *x > 0.0);
    *bad += with.iter().filter(|t| !good(t)).count();
    Ok(with.into_iter().filter(|t| good(t)).collect())
}

/// Add every usable round of `run` to its (unit, stack) cells.
fn add_run(
    run: &RunResult,
    cells: &mut BTreeMap<(Unit, String), Tally>,
    bad: &mut usize,
) -> Result<(), RunSkip> {
    let rounds = usable_rounds(run, bad)?;
    let units = rank_units(run)?;
    if rounds.is_empty() {
        return Err(RunSkip::NoUsable);
    }
    let p = units.len();
    let rel = lateness(&rounds);
    let scale = spread(&rel, p);
    // This run's own tallies: one per unit, its ranks listed.
    let mut mine: Vec<(Unit, Vec<usize>, Tally)> = Vec::new();
    for (i, (device, node)) in units.iter().enumerate() {
        for u in std::iter::once(device).chain(node.as_ref()) {
            match mine.iter_mut().find(|(x, _, _)| x == u) {
                Some((_, ranks, _)) => ranks.push(i),
                None => mine.push((u.clone(), vec![i], Tally::default())),
            }
        }
    }
    for (t, rel) in rounds.iter().zip(&rel) {
        let top = t.iter().copied().fold(f64::MIN, f64::max);
        let ties = t.iter().filter(|x| **x == top).count().max(1) as f64;
        for (_, ranks, tally) in &mut mine {
            let share = ranks.len() as f64 / p as f64;
            let slowest = ranks.iter().map(|&i| rel[i]).fold(f64::MIN, f64::max);
            let credit = ranks.iter().filter(|&&i| t[i] == top).count() as f64 / ties;
            tally.rounds += 1;
            tally.last += credit;
            tally.chance += share;
            tally.var += share * (1.0 - share);
            tally.rel.push(slowest as f32);
            tally.z.push((slowest / scale) as f32);
        }
    }
    for (unit, _, mut tally) in mine {
        tally.runs = 1;
        tally.late_runs = usize::from(tally.last > tally.chance + 1e-9);
        (cells.entry((unit, run.stack.clone())).or_default()).merge(&tally);
    }
    Ok(())
}

/// Each rank's lateness in each round, `t / median of the round − 1`.
fn lateness(rounds: &[Round<'_>]) -> Vec<Vec<f64>> {
    (rounds.iter())
        .map(|t| {
            let med = median(t.to_vec()).unwrap_or(1.0);
            t.iter().map(|x| x / med - 1.0).collect()
        })
        .collect()
}

/// The run's round-to-round noise of a rank's lateness: 1.4826 × the median absolute distance
/// of each rank's lateness from that rank's own median, over every rank and round; never zero
/// (a run of identical times gives every rank score 0).
fn spread(rel: &[Vec<f64>], p: usize) -> f64 {
    let mut dist = Vec::with_capacity(rel.len() * p);
    for i in 0..p {
        let mine: Vec<f64> = rel.iter().map(|r| r[i]).collect();
        let m = median(mine.clone()).unwrap_or(0.0);
        dist.extend(mine.iter().map(|x| (x - m).abs()));
    }
    (1.4826 * median(dist).unwrap_or(0.0)).max(1e-6)
}

/// Median of `v` (None when empty).
fn median<T: Copy + Into<f64>>(mut v: Vec<T>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| (*a).into().total_cmp(&(*b).into()));
    let n = v.len();
    let (a, b) = (v[(n - 1) / 2].into(), v[n / 2].into());
    Some((a + b) / 2.0)
}

/// Distribution-free 95 % interval of the median of `v`: the order statistics the binomial
/// (normal approximation) puts around it; None under 6 values.
fn median_interval(mut v: Vec<f32>) -> Option<(f64, f64)> {
    let n = v.len();
    if n < 6 {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let half = 1.959964 * (n as f64).sqrt() / 2.0;
    let lo = ((n as f64 / 2.0 - half).floor() as usize).clamp(1, n);
    let hi = ((n as f64 / 2.0 + half).ceil() as usize + 1).clamp(1, n);
    Some((f64::from(v[lo - 1]), f64::from(v[hi - 1])))
}

/// Bernstein's bound on P(last ≥ observed) for a sum of independent rounds, each in [0, 1]
/// with mean its chance share: `exp(−t² / (2 (v + t/3)))`, `t` = last − chance.
pub(crate) fn bernstein(last: f64, chance: f64, var: f64) -> f64 {
    let t = last - chance;
    if t <= 0.0 || !t.is_finite() {
        return 1.0;
    }
    (-(t * t) / (2.0 * (var + t / 3.0))).exp().min(1.0)
}

/// One cell of `tally`, judged against `threshold`.
fn cell(stack: &str, tally: &Tally, threshold: f64) -> Cell {
    let ratio = (tally.chance > 0.0).then(|| tally.last / tally.chance);
    let bound = bernstein(tally.last, tally.chance, tally.var);
    let score = median(tally.z.clone());
    let state = if tally.rounds < MIN_ROUNDS {
        CellState::TooFew
    } else if ratio.is_none_or(|r| r < MIN_RATIO) || score.is_none_or(|z| z < MIN_SCORE) {
        CellState::NotLate
    } else if bound <= threshold && tally.late_runs >= MIN_RUNS && 2 * tally.late_runs > tally.runs
    {
        CellState::Late
    } else {
        CellState::Unclear
    };
    let ci = median_interval(tally.rel.clone());
    Cell {
        stack: stack.to_string(),
        rounds: tally.rounds,
        runs: tally.runs,
        late_runs: tally.late_runs,
        last: tally.last,
        chance: tally.chance,
        late_ratio: ratio,
        bound,
        lateness_pct: median(tally.rel.clone()).map(|m| m * 100.0),
        ci_lo_pct: ci.map(|c| c.0 * 100.0),
        ci_hi_pct: ci.map(|c| c.1 * 100.0),
        score,
        state,
    }
}

/// Every unit's cells, per stack and pooled, units in order (devices, CPU slots, nodes).
fn scores(cells: &BTreeMap<(Unit, String), Tally>, threshold: f64) -> Vec<UnitScore> {
    let mut out: Vec<UnitScore> = Vec::new();
    let mut it = cells.iter().peekable();
    while let Some(((unit, _), _)) = it.peek() {
        let unit = unit.clone();
        let mut pooled = Tally::default();
        let mut stacks = Vec::new();
        while let Some(((_, stack), tally)) = it.next_if(|((u, _), _)| *u == unit) {
            pooled.merge(tally);
            stacks.push(cell(stack, tally, threshold));
        }
        let mut pooled = cell("*", &pooled, threshold);
        pooled.state = CellState::Pooled;
        out.push(UnitScore {
            unit: unit.name(),
            kind: unit.kind(),
            pooled,
            stacks,
        });
    }
    out
}

/// The findings of every unit, node findings a device finding on that node explains dropped.
fn findings(units: &[UnitScore]) -> Vec<Finding> {
    let mut out: Vec<Finding> = units.iter().filter_map(finding).collect();
    let devices: Vec<(String, Attribution)> = (out.iter())
        .filter(|f| f.kind == "device")
        .map(|f| (f.unit.clone(), f.attribution))
        .collect();
    out.retain(|f| {
        let Some(node) = f.unit.strip_prefix("node ") else {
            return true;
        };
        let suffix = format!(" on {node}");
        !(devices.iter()).any(|(d, a)| d.ends_with(&suffix) && *a == f.attribution)
    });
    out
}

/// What `u`'s cells say: late under every stack, under some, or nothing.
fn finding(u: &UnitScore) -> Option<Finding> {
    let tested: Vec<&Cell> = (u.stacks.iter())
        .filter(|c| c.state != CellState::TooFew)
        .collect();
    let late: Vec<&Cell> = (tested.iter().copied())
        .filter(|c| c.state == CellState::Late)
        .collect();
    if late.is_empty() {
        return None;
    }
    let others: Vec<&Cell> = (tested.iter().copied())
        .filter(|c| c.state != CellState::Late)
        .collect();
    let attribution = if others.is_empty() && late.len() >= 2 {
        Attribution::Hardware
    } else if !others.is_empty() && others.iter().all(|c| c.state == CellState::NotLate) {
        Attribution::Implementation
    } else {
        Attribution::Undetermined
    };
    let stacks: Vec<String> = late.iter().map(|c| c.stack.clone()).collect();
    let evidence = pooled_evidence(&late);
    let label = words(u, attribution, &stacks, &evidence, &others);
    Some(Finding {
        unit: u.unit.clone(),
        kind: u.kind,
        attribution,
        stacks,
        evidence,
        label,
    })
}

/// The late cells' counts added up (their lateness: the median of theirs, the widest interval).
fn pooled_evidence(late: &[&Cell]) -> Cell {
    let mut e = late[0].clone();
    e.stack = (late.iter().map(|c| c.stack.as_str()))
        .collect::<Vec<_>>()
        .join(",");
    for c in &late[1..] {
        e.rounds += c.rounds;
        e.runs += c.runs;
        e.late_runs += c.late_runs;
        e.last += c.last;
        e.chance += c.chance;
        e.bound = e.bound.max(c.bound);
        e.ci_lo_pct = e.ci_lo_pct.zip(c.ci_lo_pct).map(|(a, b)| a.min(b));
        e.ci_hi_pct = e.ci_hi_pct.zip(c.ci_hi_pct).map(|(a, b)| a.max(b));
    }
    e.late_ratio = (e.chance > 0.0).then(|| e.last / e.chance);
    e.lateness_pct = median(
        late.iter()
            .filter_map(|c| c.lateness_pct)
            .collect::<Vec<_>>(),
    );
    e.score = median(late.iter().filter_map(|c| c.score).collect::<Vec<_>>());
    e
}

/// A finding in words.
fn words(
    u: &UnitScore,
    attribution: Attribution,
    stacks: &[String],
    e: &Cell,
    others: &[&Cell],
) -> String {
    let how = match (e.lateness_pct, e.ci_lo_pct, e.ci_hi_pct) {
        (Some(m), Some(lo), Some(hi)) => {
            format!(", {m:.1} % [{lo:.1}, {hi:.1}] behind its rounds' median")
        }
        (Some(m), _, _) => format!(", {m:.1} % behind its rounds' median (no interval)"),
        _ => String::new(),
    };
    let evidence = format!(
        "last in {:.0} of {} rounds (chance {:.0}) over {} runs, late in {} of them{how}",
        e.last, e.rounds, e.chance, e.runs, e.late_runs
    );
    let name = &u.unit;
    let list = stacks.join(", ");
    match attribution {
        Attribution::Hardware => {
            format!("{name} is late under every stack ({list}): hardware; {evidence}")
        }
        Attribution::Implementation => {
            let rest: Vec<String> = (others.iter())
                .map(|c| format!("{} last in {:.0} of {} (chance {:.0})", c.stack, c.last, c.rounds, c.chance))
                .collect();
            format!(
                "{name} is late only under {list}: implementation; {evidence}; not late under {}",
                rest.join(", ")
            )
        }
        Attribution::Undetermined if others.is_empty() => format!(
            "{name} is late under {list}, the only stack with per-rank times on it: hardware or implementation cannot be told apart; {evidence}"
        ),
        Attribution::Undetermined => {
            let rest: Vec<&str> = others.iter().map(|c| c.stack.as_str()).collect();
            format!(
                "{name} is late under {list}, unclear under {}: hardware or implementation cannot be told apart; {evidence}",
                rest.join(", ")
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::case::{Case, Variant};
    use crate::model::results::Sample;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// One passing run of `stack` on `devices`, one timed round per entry of `rounds`.
    fn run(stack: &str, devices: &[u32], repeat: u32, rounds: Vec<Vec<f64>>) -> RunResult {
        let mut case = Case::new(Variant::Mesh, devices.len() as u32, 1024);
        case.device_ids = devices.to_vec();
        let id = crate::model::results::run_id(&case.case_id(), repeat);
        RunResult {
            case,
            case_id: id,
            stack: stack.into(),
            status: RunStatus::Pass,
            error: None,
            samples: (rounds.into_iter().enumerate())
                .map(|(i, t)| Sample {
                    round: i as u32 + 1,
                    phase: Sample::label(true, i as u32 + 1),
                    execute_s: Some(t.iter().copied().fold(0.0, f64::max)),
                    ok: true,
                    per_rank_execute_s: t,
                    ..Sample::default()
                })
                .collect(),
            bundle: "cases/x".into(),
            attempt: 1,
            exit_code: Some(0),
            started: None,
            ended: None,
            timing_source: None,
            cpus: None,
            cpu_contention: None,
            rank_nodes: None,
            node_hardware: Vec::new(),
            ran: None,
        }
    }

    /// A seeded campaign over 8 devices: stacks A, B, C; cases of P = 4 on devices 0–3 and
    /// 4–7 and P = 8 on all; 3 repeats of 20 timed rounds; each rank's time ±3 % noise, and
    /// device `slow` (if any) 10 % slower under the stacks in `slow_under`.
    fn campaign(seed: u64, slow: Option<u32>, slow_under: &[&str]) -> ResultSet {
        campaign_slowed(seed, slow, slow_under, 1.10)
    }

    /// [`campaign`] with the slow device `factor` × slower.
    fn campaign_slowed(
        seed: u64,
        slow: Option<u32>,
        slow_under: &[&str],
        factor: f64,
    ) -> ResultSet {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let layouts: [&[u32]; 3] = [&[0, 1, 2, 3], &[4, 5, 6, 7], &[0, 1, 2, 3, 4, 5, 6, 7]];
        let mut runs = Vec::new();
        for (s, stack) in ["A", "B", "C"].iter().enumerate() {
            let base = 1e-3 * (1.0 + s as f64 * 0.3);
            for devices in layouts {
                for repeat in 1..=3 {
                    let rounds = (0..20)
                        .map(|_| {
                            let level = base * (1.0 + 0.05 * rng.random::<f64>());
                            (devices.iter())
                                .map(|d| {
                                    let noise = (0..3).map(|_| rng.random::<f64>()).sum::<f64>();
                                    let slowed = slow == Some(*d) && slow_under.contains(stack);
                                    let f = if slowed { factor } else { 1.0 };
                                    level * f * (1.0 + 0.03 * (noise - 1.5) * 2.0)
                                })
                                .collect()
                        })
                        .collect();
                    runs.push(run(stack, devices, repeat, rounds));
                }
            }
        }
        ResultSet {
            runs,
            ..ResultSet::default()
        }
    }

    #[test]
    fn a_device_slow_under_every_stack_is_hardware() {
        for seed in 0..40 {
            let s = attribute(&campaign(seed, Some(3), &["A", "B", "C"]));
            assert_eq!(s.findings.len(), 1, "seed {seed}: {:#?}", s.findings);
            let f = &s.findings[0];
            assert_eq!(f.unit, "device 3");
            assert_eq!(f.attribution, Attribution::Hardware, "{}", f.label);
            assert_eq!(f.stacks, ["A", "B", "C"]);
            assert!(f.label.contains("device 3 is late under every stack"));
            assert!(f.label.contains("hardware"));
            let (lo, hi) = (f.evidence.ci_lo_pct.unwrap(), f.evidence.ci_hi_pct.unwrap());
            assert!(lo > 0.0 && lo <= hi, "{}", f.label);
        }
    }

    #[test]
    fn a_device_slow_under_one_stack_is_that_stacks_implementation() {
        for seed in 0..40 {
            let s = attribute(&campaign(seed, Some(3), &["B"]));
            assert_eq!(s.findings.len(), 1, "seed {seed}: {:#?}", s.findings);
            let f = &s.findings[0];
            assert_eq!(f.unit, "device 3");
            assert_eq!(f.attribution, Attribution::Implementation, "{}", f.label);
            assert_eq!(f.stacks, ["B"]);
            assert!(f.label.contains("late only under B: implementation"));
        }
    }

    /// With no slow device, a finding is a false one: at most 1 seed in 20 may have any (the
    /// rule's bound is 5 %; the simulation shows how far inside it stays).
    #[test]
    fn no_slow_device_gives_no_finding_in_at_least_19_of_20_seeds() {
        let seeds = 400;
        let false_findings = (0..seeds)
            .filter(|&seed| {
                !attribute(&campaign(1000 + seed, None, &[]))
                    .findings
                    .is_empty()
            })
            .count();
        assert!(
            false_findings * 20 <= seeds as usize,
            "{false_findings} of {seeds} seeds found a straggler that is not there"
        );
        // Measured: 0 of 400 (docs/statistics.md).
        assert_eq!(false_findings, 0);
    }

    /// Power: 5 % slower (under 2 sd of a rank's own ±3 % noise) is named as hardware in at
    /// least 95 of 100 seeds.
    #[test]
    fn a_device_five_percent_slow_is_found() {
        let all = ["A", "B", "C"];
        let found = (0..100)
            .filter(|&seed| {
                let s = attribute(&campaign_slowed(seed, Some(3), &all, 1.05));
                (s.findings.iter())
                    .any(|f| f.unit == "device 3" && f.attribution == Attribution::Hardware)
            })
            .count();
        assert!(found >= 95, "found in {found} of 100 seeds");
    }

    /// The cells the history store keeps give back the attribution they came from, and the
    /// campaigns pooled count.
    #[test]
    fn stored_cells_give_back_their_attribution() {
        let set = campaign(7, Some(3), &["A", "B", "C"]);
        let own = attribute(&set);
        let earlier = EarlierStragglers {
            campaigns: 1,
            cells: cells(&set),
        };
        let back = attribute_pooled(&ResultSet::default(), &earlier);
        assert_eq!(back.pooled_campaigns, 1);
        assert_eq!(back.stacks, own.stacks);
        assert_eq!(back.family, own.family);
        let view = |s: &Stragglers| -> Vec<(String, Attribution, Vec<String>, usize)> {
            (s.findings.iter())
                .map(|f| {
                    (
                        f.unit.clone(),
                        f.attribution,
                        f.stacks.clone(),
                        f.evidence.rounds,
                    )
                })
                .collect()
        };
        assert_eq!(view(&back), view(&own));
        assert!(!own.findings.is_empty());
        // Pooled with itself: twice the rounds behind the same finding.
        let twice = attribute_pooled(&set, &earlier);
        assert_eq!(
            twice.findings[0].evidence.rounds,
            2 * own.findings[0].evidence.rounds
        );
    }

    /// A campaign that ran each stack once on the slow device (device 3, 10 % slow under every
    /// stack) is no evidence on its own — one run per cell is under the run floor —; pooled
    /// with three earlier such campaigns of the same machine (other seeds) it names device 3,
    /// hardware.
    #[test]
    fn pooling_earlier_campaigns_finds_a_device_one_campaign_cannot_name() {
        let all = ["A", "B", "C"];
        // Each stack's first run on devices 0-3 only.
        let one_run_each = |seed: u64| {
            let mut set = campaign_slowed(seed, Some(3), &all, 1.10);
            let mut seen = Vec::new();
            set.runs.retain(|r| {
                let keep = r.case.device_ids == [0, 1, 2, 3] && !seen.contains(&r.stack);
                if keep {
                    seen.push(r.stack.clone());
                }
                keep
            });
            set
        };
        let hit = |s: &Stragglers| {
            (s.findings.iter())
                .any(|f| f.unit == "device 3" && f.attribution == Attribution::Hardware)
        };
        let (mut alone, mut pooled) = (0, 0);
        for seed in 0..20u64 {
            let now = one_run_each(500 + seed);
            assert_eq!(now.runs.len(), 3);
            let earlier = EarlierStragglers {
                campaigns: 3,
                cells: (1..=3)
                    .flat_map(|k| cells(&one_run_each(500 + 100 * k + seed)))
                    .collect(),
            };
            alone += usize::from(hit(&attribute(&now)));
            let s = attribute_pooled(&now, &earlier);
            assert_eq!(s.pooled_campaigns, 3);
            pooled += usize::from(hit(&s));
        }
        // docs/statistics.md quotes these: 0 of 20 alone, 20 of 20 pooled.
        assert_eq!(alone, 0, "one run per cell is under the run floor");
        assert!(pooled >= 18, "pooled: named in {pooled} of 20 seeds");
    }

    #[test]
    fn a_straggler_scores_above_its_peers() {
        // 10 % slower on device 5: the per-device table shows it beside peers whose pooled
        // score stays near zero.
        let s = attribute(&campaign(7, Some(5), &["A", "B", "C"]));
        let five = s.units.iter().find(|u| u.unit == "device 5").unwrap();
        let two = s.units.iter().find(|u| u.unit == "device 2").unwrap();
        assert!(five.pooled.score.unwrap() > 2.0, "{five:#?}");
        assert!(two.pooled.score.unwrap() < 1.0, "{two:#?}");
        assert!(five.pooled.late_ratio.unwrap() > 3.0);
        assert_eq!(s.stacks, ["A", "B", "C"]);
        assert!(s.left_out.is_empty());
    }

    #[test]
    fn odd_runs_are_skipped_and_counted_never_a_panic() {
        let good = || vec![vec![1.0, 2.0]; 12];
        let mut set = ResultSet::default();
        set.runs.push(run("empty", &[0, 1], 1, vec![Vec::new(); 5]));
        set.runs
            .push(run("mismatch", &[0, 1], 1, vec![vec![1.0, 2.0, 3.0]; 5]));
        set.runs.push(run("one", &[0], 1, vec![vec![1.0]; 5]));
        let mut nan = good();
        nan[0] = vec![f64::NAN, 1.0];
        nan[1] = vec![0.0, 1.0];
        nan[2] = vec![f64::INFINITY, 1.0];
        set.runs.push(run("nan", &[0, 1], 1, nan));
        set.runs
            .push(run("allbad", &[0, 1], 1, vec![vec![-1.0, f64::NAN]; 3]));
        let mut nodes = run("nodes", &[0, 1], 1, good());
        nodes.rank_nodes = Some(vec!["n1".into()]);
        set.runs.push(nodes);
        let mut failed = run("failed", &[0, 1], 1, good());
        failed.status = RunStatus::Fail;
        set.runs.push(failed);
        let s = attribute(&set);
        assert_eq!(s.stacks, ["nan"]);
        assert_eq!(s.skipped.ranks_not_devices, 2);
        assert_eq!(s.skipped.one_rank, 1);
        assert_eq!(s.skipped.rounds, 3 + 3);
        let why: Vec<(&str, &str)> = (s.left_out.iter())
            .map(|l| (l.stack.as_str(), l.why.as_str()))
            .collect();
        assert_eq!(
            why,
            [
                (
                    "allbad",
                    "no usable per-rank times (none finite and positive)"
                ),
                ("empty", "no per-rank times"),
                (
                    "mismatch",
                    "per-rank times that do not match the run's devices"
                ),
                (
                    "nodes",
                    "per-rank times that do not match the run's devices"
                ),
                ("one", "one rank per run"),
            ]
        );
        // One run of one stack: device 1 last every round, but never in two runs.
        assert!(s.findings.is_empty(), "{:#?}", s.findings);
        assert!(attribute(&ResultSet::default()).units.is_empty());
    }

    #[test]
    fn ties_share_the_last_place_and_identical_times_say_nothing() {
        let mut set = ResultSet::default();
        for r in 1..=4 {
            set.runs
                .push(run("A", &[0, 1, 2], r, vec![vec![1.0, 1.0, 1.0]; 20]));
        }
        let s = attribute(&set);
        for u in &s.units {
            assert!((u.pooled.last - 80.0 / 3.0).abs() < 1e-9, "{u:#?}");
            assert_eq!(u.pooled.score, Some(0.0));
            assert_eq!(u.stacks[0].state, CellState::NotLate);
        }
        assert!(s.findings.is_empty());
    }

    #[test]
    fn nodes_are_scored_and_a_device_explains_its_node() {
        let mut set = ResultSet::default();
        for stack in ["A", "B"] {
            for r in 1..=3 {
                let rounds = (0..20)
                    .map(|i| {
                        let w = 1.0 + 0.01 * f64::from(i % 3);
                        vec![w, 1.01, 1.0, 1.3]
                    })
                    .collect();
                let mut x = run(stack, &[0, 1, 0, 1], r, rounds);
                x.case.device_ids = vec![0, 1, 0, 1];
                x.rank_nodes = Some(vec!["a".into(), "a".into(), "b".into(), "b".into()]);
                set.runs.push(x);
            }
        }
        let s = attribute(&set);
        let names: Vec<&str> = s.units.iter().map(|u| u.unit.as_str()).collect();
        assert_eq!(
            names,
            [
                "device 0 on a",
                "device 1 on a",
                "device 0 on b",
                "device 1 on b",
                "node a",
                "node b"
            ]
        );
        let f: Vec<(&str, Attribution)> = (s.findings.iter())
            .map(|f| (f.unit.as_str(), f.attribution))
            .collect();
        assert_eq!(f, [("device 1 on b", Attribution::Hardware)]);
    }

    #[test]
    fn the_bernstein_bound_is_a_tail_bound() {
        assert_eq!(bernstein(5.0, 5.0, 2.5), 1.0);
        assert_eq!(bernstein(f64::NAN, 5.0, 2.5), 1.0);
        // 20 of 20 rounds last at chance 1/2: the exact tail is 2^-20 ≈ 1e-6.
        let b = bernstein(20.0, 10.0, 5.0);
        assert!(b > 2f64.powi(-20) && b < 0.01, "{b}");
    }
}
