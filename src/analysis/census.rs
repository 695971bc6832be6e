//! The link census: every pair of a set of devices measured once, to find a slow link or device.
//!
//! Owns the round-robin one-factorisation that schedules the pairs (the circle method: P − 1
//! rounds for even P, each device in exactly one pair a round; an odd P gets a bye, so P rounds
//! each leaving one device out), the P × P matrices of median busbw and latency read back from a
//! census's runs, the link class of each pair (same node, or across nodes as its ranks' recorded
//! nodes say), the robust score of each pair within its class and what the outliers name: a
//! device when most of its pairs are outliers, else the pair itself. Pure: no I/O; the plan's
//! `[census]` expands into cases with [`rounds`], the report draws what [`census`] returns.
//!
//! Scoring: within a class of at least [`MIN_CLASS`] pairs, a pair's score is how far its busbw
//! lies below the class median in robust spreads, `(median − busbw) / max(1.4826 × MAD, 2 % of
//! the median)` (the floor keeps a census of near-identical links from calling 1 % a fault); an
//! outlier has a score of at least [`MIN_SCORE`] *and* is at least [`MIN_SHORTFALL`] below the
//! median, so a finding is both unusual and large enough to matter. A pair's busbw and latency
//! are the medians of the timed rounds of its passing runs (every repeat pooled): bytes are
//! fixed by the census, so its busbw ranks pairs exactly as its latency does.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::analysis::stats::{bandwidth, median};
use crate::model::results::{ResultSet, RunResult, RunStatus};

/// A pair is an outlier at this many robust spreads below its class's median busbw.
pub(crate) const MIN_SCORE: f64 = 3.5;
/// … and at least this fraction below it.
pub(crate) const MIN_SHORTFALL: f64 = 0.10;
/// The least robust spread, as a fraction of the class median.
pub(crate) const SPREAD_FLOOR: f64 = 0.02;
/// A class with fewer measured pairs is not scored (a median of two says nothing).
pub(crate) const MIN_CLASS: usize = 5;

/// The census's rounds: each a list of disjoint pairs `(a, b)`, `a < b`; together every pair of `devices` exactly once. Even P: P − 1 rounds of P/2 pairs; odd
/// P: P rounds of (P − 1)/2 pairs, a different device sitting out each round. Fewer than two
/// devices: no rounds.
pub(crate) fn rounds(devices: &[u32]) -> Vec<Vec<(u32, u32)>> {
    let p = devices.len();
    if p < 2 {
        return Vec::new();
    }
    // The circle method: slot 0 stays, the others turn one step a round; the bye is a slot
    // past the end, and the device paired with it sits the round out.
    let n = p + p % 2;
    let mut ring: Vec<usize> = (0..n).collect();
    let mut out = Vec::with_capacity(n - 1);
    for _ in 0..n - 1 {
        let mut round = Vec::with_capacity(n / 2);
        for i in 0..n / 2 {
            let (x, y) = (ring[i], ring[n - 1 - i]);
            if x < p && y < p {
                let (dx, dy) = (devices[x], devices[y]);
                round.push((dx.min(dy), dx.max(dy)));
            }
        }
        round.sort_unstable();
        out.push(round);
        ring[1..].rotate_right(1);
    }
    out
}

/// Whether a pair's two ranks ran on one node or on two.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum LinkClass {
    SameNode,
    CrossNode,
}

impl LinkClass {
    pub(crate) fn label(self) -> &'static str {
        match self {
            LinkClass::SameNode => "same node",
            LinkClass::CrossNode => "across nodes",
        }
    }
}

/// One measured pair.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct PairCell {
    pub(crate) a: u32,
    pub(crate) b: u32,
    pub(crate) class: LinkClass,
    /// Where the two ranks ran, when the run spanned nodes (`rank_nodes`).
    pub(crate) nodes: Option<(String, String)>,
    /// Median timed-round time, seconds.
    pub(crate) latency_s: f64,
    /// Bus bandwidth at that time, bytes per second.
    pub(crate) busbw: f64,
    /// Timed rounds the medians rest on.
    pub(crate) rounds: usize,
    /// Robust spreads below the class median (None: the class was too small to score).
    pub(crate) score: Option<f64>,
    /// busbw over the class median.
    pub(crate) ratio: Option<f64>,
    pub(crate) outlier: bool,
}

/// What the census names.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Finding {
    /// `"device"` or `"link"`.
    pub(crate) kind: &'static str,
    /// The device (one entry) or the pair (two).
    pub(crate) devices: Vec<u32>,
    /// "6 of its 7 links are slow", "across nodes: busbw 61 % of its class's median, …".
    pub(crate) label: String,
}

/// What a census found, in numbers for scripts and `campaign status`: the `census` journal line
/// (written when the census is judged) and the head of results.json's `census`. Bandwidths in
/// GB/s (10⁹ bytes/s), as results.json's rows give `busbw_gb_s`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Summary {
    pub(crate) stack: String,
    pub(crate) devices: Vec<u32>,
    /// Pairs of the one-factorisation and its rounds.
    pub(crate) planned_pairs: usize,
    pub(crate) rounds: usize,
    /// Pairs with a passing run, and those of them scored within a class large enough to score
    /// (a clean bill covers only these).
    pub(crate) measured: usize,
    pub(crate) scored: usize,
    pub(crate) findings: Vec<Finding>,
    pub(crate) classes: Vec<ClassRecord>,
    /// Devices of `findings` quarantined for it (`[census] quarantine`).
    pub(crate) quarantined: Vec<u32>,
}

/// One link class as [`Summary`] gives it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ClassRecord {
    pub(crate) class: LinkClass,
    pub(crate) pairs: usize,
    pub(crate) median_busbw_gb_s: f64,
    /// The robust spread; None: the class has fewer than [`MIN_CLASS`] pairs, not scored.
    pub(crate) spread_gb_s: Option<f64>,
}

/// results.json's `census`: the [`Summary`], then every measured pair and the pairs missing.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Record {
    #[serde(flatten)]
    pub(crate) summary: Summary,
    pub(crate) pairs: Vec<PairRecord>,
    /// Pairs of the one-factorisation with no passing run.
    pub(crate) missing: Vec<(u32, u32)>,
}

/// One measured pair as results.json gives it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct PairRecord {
    pub(crate) a: u32,
    pub(crate) b: u32,
    pub(crate) class: LinkClass,
    pub(crate) nodes: Option<(String, String)>,
    pub(crate) latency_s: f64,
    pub(crate) busbw_gb_s: f64,
    pub(crate) rounds: usize,
    pub(crate) score: Option<f64>,
    pub(crate) ratio: Option<f64>,
    pub(crate) outlier: bool,
}

/// The census of one result set: its pairs, the pairs it lacks, its findings.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Census {
    pub(crate) devices: Vec<u32>,
    pub(crate) stack: String,
    pub(crate) pairs: Vec<PairCell>,
    /// Pairs of the one-factorisation with no passing run.
    pub(crate) missing: Vec<(u32, u32)>,
    /// Per class: measured pairs, median busbw, robust spread (bytes/s; None when not scored).
    pub(crate) classes: Vec<ClassSummary>,
    pub(crate) findings: Vec<Finding>,
}

/// One link class's centre and spread.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ClassSummary {
    pub(crate) class: LinkClass,
    pub(crate) pairs: usize,
    pub(crate) median_busbw: f64,
    pub(crate) spread: Option<f64>,
}

impl Census {
    /// The cell of pair (a, b) in either order.
    pub(crate) fn cell(&self, a: u32, b: u32) -> Option<&PairCell> {
        let (lo, hi) = (a.min(b), a.max(b));
        self.pairs
            .iter()
            .find(|c| (c.a.min(c.b), c.a.max(c.b)) == (lo, hi))
    }
}

impl Census {
    /// What it found, with the devices of its findings that `quarantined` holds.
    pub(crate) fn summary(&self, quarantined: impl Fn(u32) -> bool) -> Summary {
        let planned = rounds(&self.devices);
        Summary {
            stack: self.stack.clone(),
            devices: self.devices.clone(),
            planned_pairs: planned.iter().map(Vec::len).sum(),
            rounds: planned.len(),
            measured: self.pairs.len(),
            scored: self.pairs.iter().filter(|p| p.score.is_some()).count(),
            findings: self.findings.clone(),
            classes: (self.classes.iter())
                .map(|k| ClassRecord {
                    class: k.class,
                    pairs: k.pairs,
                    median_busbw_gb_s: k.median_busbw / 1e9,
                    spread_gb_s: k.spread.map(|s| s / 1e9),
                })
                .collect(),
            quarantined: (self.findings.iter())
                .filter(|f| f.kind == "device")
                .map(|f| f.devices[0])
                .filter(|&d| quarantined(d))
                .collect(),
        }
    }

    /// results.json's `census` (see [`Record`]).
    pub(crate) fn record(&self, quarantined: impl Fn(u32) -> bool) -> Record {
        Record {
            summary: self.summary(quarantined),
            pairs: (self.pairs.iter())
                .map(|p| PairRecord {
                    a: p.a,
                    b: p.b,
                    class: p.class,
                    nodes: p.nodes.clone(),
                    latency_s: p.latency_s,
                    busbw_gb_s: p.busbw / 1e9,
                    rounds: p.rounds,
                    score: p.score,
                    ratio: p.ratio,
                    outlier: p.outlier,
                })
                .collect(),
            missing: self.missing.clone(),
        }
    }
}

/// The census over `devices` on `stack`, from the passing two-rank runs of `results` whose
/// devices are two of them. Every timed round of a pair's runs (all repeats) feeds its medians.
pub(crate) fn census(results: &ResultSet, devices: &[u32], stack: &str) -> Census {
    let wanted: BTreeSet<u32> = devices.iter().copied().collect();
    let mut gathered: BTreeMap<(u32, u32), Gathered<'_>> = BTreeMap::new();
    for r in &results.runs {
        let Some(key) = pair_of(r, &wanted, stack) else {
            continue;
        };
        let g = gathered.entry(key).or_insert_with(|| Gathered {
            times: Vec::new(),
            nodes: None,
            run: r,
        });
        if g.nodes.is_none() {
            g.nodes = r.rank_nodes.as_ref().and_then(|n| match n.as_slice() {
                [x, y] => Some((x.clone(), y.clone())),
                _ => None,
            });
        }
        let timed = r.samples.iter().filter(|s| s.is_timed() && s.ok);
        g.times.extend(
            timed
                .filter_map(|s| s.execute_s)
                .filter(|t| t.is_finite() && *t > 0.0),
        );
    }
    let mut pairs = Vec::new();
    for ((a, b), g) in gathered {
        let Some(latency_s) = median(&g.times) else {
            continue;
        };
        let case = &g.run.case;
        let Some(busbw) = bandwidth::busbw(case.op, case.p, case.n_bytes(), latency_s) else {
            continue;
        };
        let class = match &g.nodes {
            Some((x, y)) if x != y => LinkClass::CrossNode,
            _ => LinkClass::SameNode,
        };
        pairs.push(PairCell {
            a,
            b,
            class,
            nodes: g.nodes,
            latency_s,
            busbw,
            rounds: g.times.len(),
            score: None,
            ratio: None,
            outlier: false,
        });
    }
    let classes = score(&mut pairs);
    let measured: BTreeSet<(u32, u32)> = pairs.iter().map(|c| (c.a, c.b)).collect();
    let missing = rounds(devices)
        .into_iter()
        .flatten()
        .filter(|p| !measured.contains(p))
        .collect();
    let findings = name(devices, &pairs);
    Census {
        devices: devices.to_vec(),
        stack: stack.to_string(),
        pairs,
        missing,
        classes,
        findings,
    }
}

/// One pair's timed rounds over its runs, where its ranks ran, and a run of it (its case).
struct Gathered<'r> {
    times: Vec<f64>,
    nodes: Option<(String, String)>,
    run: &'r RunResult,
}

/// The census pair of a run (ordered as in `devices`' sorted set), when it is one: a passing
/// run of `stack` on two distinct wanted devices.
fn pair_of(r: &RunResult, wanted: &BTreeSet<u32>, stack: &str) -> Option<(u32, u32)> {
    if r.stack != stack || r.status != RunStatus::Pass {
        return None;
    }
    match r.case.device_ids.as_slice() {
        &[x, y] if x != y && wanted.contains(&x) && wanted.contains(&y) => {
            Some((x.min(y), x.max(y)))
        }
        _ => None,
    }
}

/// Score every pair within its class; returns each class's centre and spread.
fn score(pairs: &mut [PairCell]) -> Vec<ClassSummary> {
    let mut out = Vec::new();
    for class in [LinkClass::SameNode, LinkClass::CrossNode] {
        let bws: Vec<f64> = (pairs.iter())
            .filter(|c| c.class == class)
            .map(|c| c.busbw)
            .collect();
        let Some(m) = median(&bws) else {
            continue;
        };
        let scored = bws.len() >= MIN_CLASS && m > 0.0;
        let spread = scored.then(|| {
            let dev: Vec<f64> = bws.iter().map(|x| (x - m).abs()).collect();
            let mad = median(&dev).unwrap_or(0.0);
            (1.4826 * mad).max(SPREAD_FLOOR * m)
        });
        for c in pairs.iter_mut().filter(|c| c.class == class) {
            if let Some(s) = spread {
                let z = (m - c.busbw) / s;
                c.score = Some(z);
                c.ratio = Some(c.busbw / m);
                c.outlier = z >= MIN_SCORE && c.busbw <= (1.0 - MIN_SHORTFALL) * m;
            }
        }
        out.push(ClassSummary {
            class,
            pairs: bws.len(),
            median_busbw: m,
            spread,
        });
    }
    out
}

/// What the outliers name: a device when more than half of its scored pairs (and at least two)
/// are outliers — one slow device slows every link it is on —, then each outlier pair not on
/// such a device, as a link.
fn name(devices: &[u32], pairs: &[PairCell]) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut slow = BTreeSet::new();
    for &d in devices {
        let on = |c: &&PairCell| c.a == d || c.b == d;
        let scored = pairs
            .iter()
            .filter(on)
            .filter(|c| c.score.is_some())
            .count();
        let bad = pairs.iter().filter(on).filter(|c| c.outlier).count();
        if bad >= 2 && 2 * bad > scored {
            slow.insert(d);
            findings.push(Finding {
                kind: "device",
                devices: vec![d],
                label: format!("{bad} of its {scored} links are slow"),
            });
        }
    }
    for c in pairs.iter().filter(|c| c.outlier) {
        if slow.contains(&c.a) || slow.contains(&c.b) {
            continue;
        }
        findings.push(Finding {
            kind: "link",
            devices: vec![c.a, c.b],
            label: format!(
                "{}: busbw {:.0} % of its class's median, {:.1} robust spreads below",
                c.class.label(),
                100.0 * c.ratio.unwrap_or(f64::NAN),
                c.score.unwrap_or(f64::NAN)
            ),
        });
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::case::{Case, Variant};
    use crate::model::results::Sample;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn every_pair_once_and_every_device_once_a_round() {
        for p in 2..=17u32 {
            let devices: Vec<u32> = (0..p).map(|d| d * 3 + 1).collect();
            let rs = rounds(&devices);
            let even = p % 2 == 0;
            assert_eq!(rs.len() as u32, if even { p - 1 } else { p }, "P = {p}");
            let mut seen = BTreeSet::new();
            for round in &rs {
                assert_eq!(round.len() as u32, p / 2, "P = {p}: {round:?}");
                let mut busy = BTreeSet::new();
                for &(a, b) in round {
                    assert!(a < b && devices.contains(&a) && devices.contains(&b));
                    assert!(busy.insert(a) && busy.insert(b), "P = {p}: {round:?}");
                    assert!(seen.insert((a, b)), "P = {p}: ({a}, {b}) twice");
                }
                // Even P: every device busy every round; odd P: exactly one sits out.
                assert_eq!(busy.len() as u32, if even { p } else { p - 1 });
            }
            assert_eq!(seen.len() as u32, p * (p - 1) / 2, "P = {p}");
        }
        assert!(rounds(&[]).is_empty() && rounds(&[4]).is_empty());
        assert_eq!(rounds(&[4, 9]), vec![vec![(4, 9)]]);
    }

    /// A passing census run of pair (a, b) with `times` as its timed rounds (4 KiB allreduce).
    fn run(a: u32, b: u32, times: &[f64], nodes: Option<(&str, &str)>) -> RunResult {
        let mut case = Case::new(Variant::Mesh, 2, 1024);
        case.device_ids = vec![a, b];
        RunResult {
            case_id: crate::model::results::run_id(&case.case_id(), 1),
            case,
            stack: "s".into(),
            status: RunStatus::Pass,
            error: None,
            samples: (times.iter().enumerate())
                .map(|(i, t)| Sample {
                    round: i as u32 + 1,
                    phase: Sample::label(true, i as u32 + 1),
                    execute_s: Some(*t),
                    ok: true,
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
            rank_nodes: nodes.map(|(x, y)| vec![x.to_string(), y.to_string()]),
            node_hardware: Vec::new(),
            ran: None,
        }
    }

    /// A seeded census of 8 devices: 10 timed rounds a pair, ±3 % noise round to round and a
    /// ±2 % level per pair (links are never identical); `slow` pairs take ×1.3 as long, and a
    /// `slow_device`'s every pair ×1.3.
    fn seeded(seed: u64, slow: &[(u32, u32)], slow_device: Option<u32>) -> ResultSet {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let devices: Vec<u32> = (0..8).collect();
        let mut set = ResultSet::default();
        for (a, b) in rounds(&devices).into_iter().flatten() {
            let level = 1e-3 * (1.0 + 0.04 * (rng.random::<f64>() - 0.5));
            let f = if slow.contains(&(a, b)) || slow_device.is_some_and(|d| d == a || d == b) {
                1.3
            } else {
                1.0
            };
            let times: Vec<f64> = (0..10)
                .map(|_| level * f * (1.0 + 0.06 * (rng.random::<f64>() - 0.5)))
                .collect();
            set.runs.push(run(a, b, &times, None));
        }
        set
    }

    #[test]
    fn one_slow_link_of_eight_devices_is_named_and_nothing_else() {
        for seed in 0..20 {
            let c = census(
                &seeded(seed, &[(2, 5)], None),
                &(0..8).collect::<Vec<_>>(),
                "s",
            );
            assert_eq!(c.pairs.len(), 28);
            assert!(c.missing.is_empty());
            assert_eq!(c.findings.len(), 1, "seed {seed}: {:#?}", c.findings);
            assert_eq!(c.findings[0].kind, "link");
            assert_eq!(c.findings[0].devices, vec![2, 5], "seed {seed}");
            assert!(c.findings[0].label.starts_with("same node: busbw "));
        }
    }

    #[test]
    fn no_slow_link_means_no_finding_in_at_least_19_of_20_seeds() {
        let clean = (100..120)
            .filter(|&seed| {
                let c = census(&seeded(seed, &[], None), &(0..8).collect::<Vec<_>>(), "s");
                c.findings.is_empty()
            })
            .count();
        assert!(clean >= 19, "{clean} of 20 seeds clean");
    }

    #[test]
    fn a_slow_device_is_named_as_the_device_not_as_its_seven_links() {
        for seed in 0..20 {
            let c = census(
                &seeded(seed, &[], Some(3)),
                &(0..8).collect::<Vec<_>>(),
                "s",
            );
            assert_eq!(c.findings.len(), 1, "seed {seed}: {:#?}", c.findings);
            assert_eq!(c.findings[0].kind, "device");
            assert_eq!(c.findings[0].devices, vec![3]);
        }
    }

    #[test]
    fn the_summary_and_record_say_what_was_measured_in_gb_s() {
        let devices: Vec<u32> = (0..8).collect();
        let c = census(&seeded(3, &[], Some(3)), &devices, "s");
        let s = c.summary(|d| d == 3);
        assert_eq!(
            (s.planned_pairs, s.rounds, s.measured, s.scored),
            (28, 7, 28, 28)
        );
        assert_eq!(s.quarantined, vec![3]);
        assert_eq!(s.findings, c.findings);
        // 4 KiB per rank in about 1 ms: a few GB/s at most, given in GB/s.
        let k = &s.classes[0];
        assert_eq!((k.class, k.pairs), (LinkClass::SameNode, 28));
        assert!((k.median_busbw_gb_s - c.classes[0].median_busbw / 1e9).abs() < 1e-12);
        assert!(k.spread_gb_s.is_some());
        // Only devices a finding names are listed as quarantined for it.
        assert!(c.summary(|d| d == 5).quarantined.is_empty());
        let r = serde_json::to_value(c.record(|_| false)).unwrap();
        assert_eq!(r["measured"], 28);
        assert_eq!(r["pairs"].as_array().unwrap().len(), 28);
        assert_eq!(r["classes"][0]["class"], "same_node");
        assert_eq!(r["findings"][0]["devices"], serde_json::json!([3]));
        let slow = (r["pairs"].as_array().unwrap().iter())
            .find(|p| p["a"] == 3 && p["b"] == 4)
            .unwrap();
        assert_eq!(slow["outlier"], true, "{slow}");
        assert!(slow["busbw_gb_s"].as_f64().unwrap() < k.median_busbw_gb_s);
        assert_eq!(r["missing"], serde_json::json!([]));
    }

    #[test]
    fn links_are_classed_by_their_ranks_nodes_and_scored_within_their_class() {
        // Devices 0-3 on n1, 4-7 on n2: cross-node links are 4× slower, which is no fault.
        let devices: Vec<u32> = (0..8).collect();
        let mut set = ResultSet::default();
        let node = |d: u32| if d < 4 { "n1" } else { "n2" };
        for (a, b) in rounds(&devices).into_iter().flatten() {
            let cross = node(a) != node(b);
            let t = if cross { 4e-3 } else { 1e-3 } * (1.0 + 0.001 * f64::from(a + b));
            set.runs.push(run(a, b, &[t; 5], Some((node(a), node(b)))));
        }
        let c = census(&set, &devices, "s");
        assert!(c.findings.is_empty(), "{:#?}", c.findings);
        let same = c
            .classes
            .iter()
            .find(|k| k.class == LinkClass::SameNode)
            .unwrap();
        let cross = c
            .classes
            .iter()
            .find(|k| k.class == LinkClass::CrossNode)
            .unwrap();
        assert_eq!((same.pairs, cross.pairs), (12, 16));
        assert_eq!(c.cell(1, 0).unwrap().class, LinkClass::SameNode);
        assert_eq!(c.cell(2, 6).unwrap().class, LinkClass::CrossNode);
        assert_eq!(
            c.cell(2, 6).unwrap().nodes,
            Some(("n1".to_string(), "n2".to_string()))
        );
    }

    #[test]
    fn failed_and_foreign_runs_are_left_out_and_missing_pairs_named() {
        let mut set = seeded(1, &[], None);
        set.runs[0].status = RunStatus::Fail;
        let first = (
            set.runs[0].case.device_ids[0],
            set.runs[0].case.device_ids[1],
        );
        set.runs[1].stack = "other".into();
        let c = census(&set, &(0..8).collect::<Vec<_>>(), "s");
        assert_eq!(c.pairs.len(), 26);
        assert_eq!(c.missing.len(), 2);
        assert!(c.missing.contains(&first));
        // A class of fewer than MIN_CLASS pairs is shown but not scored.
        let few = census(&seeded(1, &[], None), &[0, 1, 2], "s");
        assert_eq!(few.pairs.len(), 3);
        assert!(few.pairs.iter().all(|c| c.score.is_none() && !c.outlier));
    }
}
