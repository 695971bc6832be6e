//! The `summarize` step: everything the report and figures say, computed once from a ResultSet.
//!
//! Owns which runs feed statistics (timed, ok rounds of passing runs only) and the failure list
//! (every run that did not pass, or passed with no timed time), and gathers per case, over the
//! available cores, the statistics of `analysis::run_stats`, the paired comparisons of
//! `analysis::pairing` and the α–β fits and B* of `analysis::scaling`; over the whole set, what
//! each default loses (`analysis::regret`) and the stragglers (`analysis::straggler`). Pure: no files, no
//! formatting for people.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::analysis::pairing::{
    choose_baseline, judge_pairs, pair_case, paired_rows, pairing_notes, Paired,
};
use crate::analysis::regret::Regret;
use crate::analysis::run_stats::{run_stats, RunStats};
pub(crate) use crate::analysis::scaling::ModelFit;
use crate::analysis::scaling::{b_stars, fits, BStar};
use crate::analysis::stats::bootstrap::Bootstrap;
use crate::analysis::stats::memo::Memo;
use crate::analysis::verdict;
use crate::model::results::{Metric, ResultSet, RunResult, RunStatus};

/// A run that contributes no statistics, and why.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Failure {
    pub(crate) index: usize,
    pub(crate) case_id: String,
    pub(crate) stack: String,
    pub(crate) status: RunStatus,
    pub(crate) reason: String,
    pub(crate) bundle: String,
    /// The run was pinned to an algorithm and something else ran ("pin not honoured"): listed
    /// under its own heading, apart from ordinary failures.
    pub(crate) pin_not_honoured: bool,
}

/// The summarize step's output.
#[derive(Debug, Clone)]
pub struct Analysis {
    pub(crate) bootstrap: Bootstrap,
    /// Stacks in order of first appearance.
    pub(crate) stacks: Vec<String>,
    /// Planned case ids in order of first appearance.
    pub(crate) cases: Vec<String>,
    /// Statistics of passing runs, by run index.
    pub(crate) stats: BTreeMap<usize, RunStats>,
    pub(crate) failures: Vec<Failure>,
    pub(crate) baseline: Option<String>,
    /// Why there are no paired comparisons, when there are none.
    pub(crate) baseline_note: Option<String>,
    pub paired: Vec<Paired>,
    /// What each stack's default loses at each point to its best other variant.
    pub(crate) regret: Vec<crate::analysis::regret::Regret>,
    /// Each pair's outcome per size along each line of the sweep, and where the winner changes.
    pub(crate) crossover_map: Vec<crate::analysis::crossover::MapRow>,
    pub(crate) crossovers: Vec<crate::analysis::crossover::Crossover>,
    /// Which device or node arrives last, and whether the hardware or a stack is to blame.
    pub(crate) stragglers: crate::analysis::straggler::Stragglers,
    /// Confidence level of the paired verdict intervals of pairs with repeats: 1 − R · 0.05 /
    /// (pairs judged at once) for the R pairs Benjamini–Hochberg selects (R ≥ 1).
    pub(crate) paired_level: f64,
    /// Pairs with the baseline judged at once (what `paired_level` is widened for).
    pub(crate) paired_judged: usize,
    /// The noise band of the paired verdicts, a fraction.
    pub(crate) noise_band: f64,
    /// Which calibration set the rows' bands (each its size class's), or that none did.
    pub(crate) calibration: String,
    /// A calibration set the bands (the equivalence margins too, unless `equivalence_set`).
    pub(crate) calibrated: bool,
    /// `[report] equivalence` set the equivalence margin.
    pub(crate) equivalence_set: bool,
    /// The equivalence margin ±δ of the paired verdicts (a fraction).
    pub(crate) equivalence: f64,
    /// `[report] compare_metric`: the one metric paired comparisons use, when set.
    pub(crate) compare_metric: Option<Metric>,
    /// Stacks not paired with the baseline because their metrics differ in kind, and why.
    pub(crate) pairing_notes: Vec<String>,
    pub fits: Vec<ModelFit>,
    pub(crate) b_star: Vec<BStar>,
    /// Every (stack, variant) of the result set, sorted: its position is its colour in every
    /// figure, so one implementation looks the same in every panel.
    pub(crate) colors: Vec<(String, String)>,
}

impl Analysis {
    /// Summarize `results`. `baseline` None picks the first stack seen (and says so).
    pub fn new(results: &ResultSet, baseline: Option<&str>, bootstrap: Bootstrap) -> Analysis {
        Analysis::with_compare_metric(results, baseline, bootstrap, None)
    }

    /// Summarize with paired comparisons on `compare_metric` (None: each stack's declared
    /// metric, and stacks whose metrics differ from the baseline's are not paired).
    pub(crate) fn with_compare_metric(
        results: &ResultSet,
        baseline: Option<&str>,
        bootstrap: Bootstrap,
        compare_metric: Option<Metric>,
    ) -> Analysis {
        let judging = Judging {
            compare_metric,
            ..Judging::default()
        };
        Analysis::remembering(results, baseline, bootstrap, judging, &Memo::default())
    }

    /// [`Analysis::with_compare_metric`] taking every bootstrap interval `memo` holds from it
    /// (bit for bit what resampling gives) and adding the ones it draws, judged as `judging`
    /// says.
    pub(crate) fn remembering(
        results: &ResultSet,
        baseline: Option<&str>,
        bootstrap: Bootstrap,
        judging: Judging<'_>,
        memo: &Memo,
    ) -> Analysis {
        let Judging {
            compare_metric,
            equivalence,
            ..
        } = judging;
        let mut stacks: Vec<String> = Vec::new();
        let mut cases: Vec<String> = Vec::new();
        let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
        // Runs grouped by the point of the sweep (the case with its variant blanked): each
        // stack runs its own variants, and a stack's run of a point is paired with the
        // baseline's run of the same point.
        let mut points: Vec<String> = Vec::new();
        let mut by_point: HashMap<String, Vec<usize>> = HashMap::new();
        for (index, run) in results.runs.iter().enumerate() {
            if !stacks.contains(&run.stack) {
                stacks.push(run.stack.clone());
            }
            if seen.insert(run.base_case_id()) {
                cases.push(run.base_case_id().to_string());
            }
            by_point
                .entry(run.point_id())
                .or_insert_with_key(|k| {
                    points.push(k.clone());
                    Vec::new()
                })
                .push(index);
        }
        let (baseline, baseline_note) = choose_baseline(&stacks, baseline);
        let groups: Vec<&[usize]> = points
            .iter()
            .map(|c| by_point[c.as_str()].as_slice())
            .collect();
        let judged = paired_rows(results, &groups, baseline.as_deref(), compare_metric);
        let looks = judging.looks.max(1);
        let (paired_family, regret_family) = judging.family.unwrap_or((0, 0));
        let paired_family = judged.max(paired_family) * looks;
        let per_case = summarize_cases(
            results,
            &groups,
            Pairing {
                baseline: baseline.as_deref(),
                compare_metric,
                level: verdict::family_level(paired_family),
            },
            &bootstrap,
            memo,
        );
        let mut stats = BTreeMap::new();
        let mut failures = Vec::new();
        let mut paired = Vec::new();
        let mut regret = Vec::new();
        let mut duels = Vec::new();
        for (case_stats, case_failures, case_paired, case_regret, case_duels) in per_case {
            stats.extend(case_stats.into_iter().map(|s| (s.index, s)));
            failures.extend(case_failures);
            paired.extend(case_paired);
            regret.extend(case_regret);
            duels.extend(case_duels);
        }
        failures.sort_by_key(|f| f.index);
        let margins = verdict::Margins {
            band: verdict::DEFAULT_THRESHOLD,
            equivalence: equivalence.unwrap_or(verdict::DEFAULT_THRESHOLD),
        };
        if let Some(cal) = judging.calibration {
            calibrate_rows(
                results,
                cal,
                equivalence,
                (&mut paired, &mut regret, &mut duels),
            );
        }
        let paired_level = judge_pairs(&mut paired, paired_family, margins);
        crate::analysis::regret::judge(&mut regret, margins, (regret_family, looks));
        let (crossover_map, crossovers) = crossover_map(results, &paired, duels, (margins, looks));
        let pairing_notes = pairing_notes(results, &stacks, baseline.as_deref(), compare_metric);
        let fits = fits(results, &stats);
        let b_star = b_stars(&fits);
        Analysis {
            bootstrap,
            stacks,
            cases,
            stats,
            failures,
            baseline,
            baseline_note,
            paired,
            paired_level,
            paired_judged: judged,
            regret,
            crossover_map,
            crossovers,
            stragglers: crate::analysis::straggler::attribute(results),
            noise_band: margins.band,
            calibrated: judging.calibration.is_some(),
            equivalence_set: equivalence.is_some(),
            calibration: judging.calibration.map_or_else(
                || crate::analysis::calibration::none_label(margins.band),
                |c| c.label(),
            ),
            equivalence: margins.equivalence,
            compare_metric,
            pairing_notes,
            fits,
            b_star,
            colors: colors(results),
        }
    }

    /// The palette index of (stack, variant), the same in every figure.
    pub(crate) fn color_of(&self, stack: &str, variant: &str) -> usize {
        self.colors
            .iter()
            .position(|(s, v)| s == stack && v == variant)
            .unwrap_or(0)
    }
}

/// Every (stack, variant) of the runs, sorted: the palette order of every figure.
fn colors(results: &ResultSet) -> Vec<(String, String)> {
    let mut c: Vec<(String, String)> = (results.runs.iter())
        .map(|r| (r.stack.clone(), r.case.series_label()))
        .collect();
    c.sort();
    c.dedup();
    c
}

fn failure(index: usize, run: &RunResult) -> Failure {
    let reason = match (&run.error, run.status) {
        (Some(e), _) if !e.trim().is_empty() => e.clone(),
        (_, RunStatus::Pass) => "passed but recorded no timed value of its metric".into(),
        (_, status) => format!("{status} (no reason recorded)"),
    };
    Failure {
        index,
        case_id: run.case_id.clone(),
        stack: run.stack.clone(),
        status: run.status,
        reason,
        bundle: run.bundle.display().to_string(),
        pin_not_honoured: run.pin_honoured() == Some(false),
    }
}

/// The crossover map of a result set: the variant pairs of each stack judged in one family
/// (each row once per look), with the judged paired rows beside them.
fn crossover_map(
    results: &ResultSet,
    paired: &[Paired],
    mut duels: Vec<crate::analysis::crossover::Duel>,
    (margins, looks): (verdict::Margins, usize),
) -> (
    Vec<crate::analysis::crossover::MapRow>,
    Vec<crate::analysis::crossover::Crossover>,
) {
    use crate::analysis::crossover;
    crossover::judge(&mut duels, margins, (0, looks));
    duels.extend(crossover::paired_duels(results, paired));
    crossover::map(&duels)
}

/// Give every pending row its size class's margins from `cal` (the equivalence margin the
/// band too, unless the plan set one).
fn calibrate_rows(
    results: &ResultSet,
    cal: &crate::analysis::calibration::Calibration,
    equivalence: Option<f64>,
    (paired, regret, duels): (
        &mut [Paired],
        &mut [Regret],
        &mut [crate::analysis::crossover::Duel],
    ),
) {
    let bytes: HashMap<&str, u64> = (results.runs.iter())
        .map(|r| (r.base_case_id(), r.case.n_bytes()))
        .collect();
    let margins = |b: Option<u64>| {
        let band = b.and_then(|b| cal.band_for(b));
        band.map(|band| verdict::Margins {
            band,
            equivalence: equivalence.unwrap_or(band),
        })
    };
    let of = |id: &str| {
        bytes
            .get(crate::model::results::split_run_id(id).0)
            .copied()
    };
    for p in paired {
        if let Some(m) = margins(of(&p.case_id)) {
            p.calibrate(m);
        }
    }
    for r in regret {
        if let Some(m) = margins(of(&r.case_id)) {
            r.calibrate(m);
        }
    }
    for d in duels {
        if let Some(m) = margins(Some(d.bytes)) {
            d.calibrate(m);
        }
    }
}

/// How the verdicts of an analysis are taken.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Judging<'a> {
    /// `[report] compare_metric`: the one metric paired comparisons use, when set.
    pub(crate) compare_metric: Option<Metric>,
    /// The paired verdicts' equivalence margin (`[report] equivalence`; None: the noise band).
    pub(crate) equivalence: Option<f64>,
    /// Looks of sequential repeats (`analysis::sequential::looks`; 0 or 1: a fixed count):
    /// every row counts this many times in its family, so stopping at any look keeps the
    /// false-alarm rate (docs/statistics.md, "Sequential repeats").
    pub(crate) looks: usize,
    /// The sizes of the paired and the regret families when these results are part of a
    /// campaign (one point, judged while the campaign runs): the verdicts are then as wide
    /// as the whole campaign's report will take them.
    pub(crate) family: Option<(usize, usize)>,
    /// This machine's calibration: each row's noise band is its size class's
    /// (`analysis::calibration`), the equivalence margin too unless `equivalence` is set.
    pub(crate) calibration: Option<&'a crate::analysis::calibration::Calibration>,
}

type CaseOutcome = (
    Vec<RunStats>,
    Vec<Failure>,
    Vec<Paired>,
    Vec<Regret>,
    Vec<crate::analysis::crossover::Duel>,
);

/// How the stacks of a case are paired: with which baseline, on which metric, at which level.
#[derive(Debug, Clone, Copy)]
struct Pairing<'a> {
    baseline: Option<&'a str>,
    compare_metric: Option<Metric>,
    level: f64,
}

/// Summarize every case (groups of run indices), spreading cases over the available cores.
/// Each estimate has its own keyed random stream, so the result does not depend on the split.
fn summarize_cases(
    results: &ResultSet,
    groups: &[&[usize]],
    pairing: Pairing<'_>,
    boot: &Bootstrap,
    memo: &Memo,
) -> Vec<CaseOutcome> {
    let threads = crate::analysis::on_cores::threads();
    summarize_cases_on(threads, results, groups, pairing, boot, memo)
}

/// [`summarize_cases`] on `threads` threads, each a contiguous share of the cases.
fn summarize_cases_on(
    threads: usize,
    results: &ResultSet,
    groups: &[&[usize]],
    pairing: Pairing<'_>,
    boot: &Bootstrap,
    memo: &Memo,
) -> Vec<CaseOutcome> {
    crate::analysis::on_cores::map_in_order(groups, threads, |g| {
        summarize_case(results, g, pairing, boot, memo)
    })
}

/// Statistics, failures and paired comparisons of the runs of one planned case.
fn summarize_case(
    results: &ResultSet,
    runs: &[usize],
    pairing: Pairing<'_>,
    boot: &Bootstrap,
    memo: &Memo,
) -> CaseOutcome {
    let mut stats = Vec::new();
    let mut sides = Vec::new();
    let mut failures = Vec::new();
    // The repeats of each (stack, case) together, in order of first appearance.
    let mut by_stack: Vec<((&str, &str), Vec<usize>)> = Vec::new();
    for &i in runs {
        let run = &results.runs[i];
        // A spared run was not needed (its point decided, or the budget spent) and a planned
        // skip is a case its stack does not support: neither is a failure, and the report says
        // what was spared and skipped on its own.
        if matches!(run.status, RunStatus::Spared | RunStatus::Skipped) {
            continue;
        }
        if run.timed(results.metric(&run.stack)).is_empty() {
            failures.push(failure(i, run));
            continue;
        }
        let key = (run.stack.as_str(), run.base_case_id());
        match by_stack.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(i),
            None => by_stack.push((key, vec![i])),
        }
    }
    for (_, indices) in &by_stack {
        if let Some((s, side)) = run_stats(indices, results, boot, memo) {
            stats.push(s);
            sides.push(side);
        }
    }
    let paired = pair_case(
        results,
        &stats,
        &sides,
        pairing.baseline,
        pairing.compare_metric,
        pairing.level,
        boot,
        memo,
    );
    let regret = crate::analysis::regret::of_point(results, &stats, &sides, memo);
    let duels = crate::analysis::crossover::variant_duels(results, &stats, &sides, memo);
    (stats, failures, paired, regret, duels)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::case::{Case, Variant};
    use crate::model::results::{Sample, REPEAT_MARK};

    /// A passing (or failed) run of `rounds` timed rounds around `level` seconds, its noise
    /// from a small LCG so every run differs.
    fn run(
        case: &Case,
        stack: &str,
        repeat: u32,
        rounds: u32,
        level: f64,
        seed: &mut u64,
    ) -> RunResult {
        let mut samples = vec![Sample {
            round: 1,
            phase: Sample::label(false, 1),
            execute_s: Some(level * 3.0),
            ok: true,
            ..Sample::default()
        }];
        for i in 0..rounds {
            *seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let noise = (*seed >> 40) as f64 / (1u64 << 24) as f64;
            samples.push(Sample {
                round: i + 2,
                phase: Sample::label(true, i + 1),
                execute_s: Some(level * (1.0 + 0.2 * noise)),
                ok: true,
                ..Sample::default()
            });
        }
        let base = case.case_id();
        RunResult {
            case_id: if repeat > 1 {
                format!("{base}{REPEAT_MARK}{repeat}")
            } else {
                base
            },
            case: case.clone(),
            stack: stack.into(),
            status: if rounds == 0 {
                RunStatus::Fail
            } else {
                RunStatus::Pass
            },
            error: (rounds == 0).then(|| "exit code 1".to_string()),
            samples: if rounds == 0 { Vec::new() } else { samples },
            bundle: "cases/x/y".into(),
            attempt: 1,
            exit_code: Some(if rounds == 0 { 1 } else { 0 }),
            started: None,
            ended: None,
            timing_source: Some("stack".into()),
            cpus: None,
            cpu_contention: None,
            rank_nodes: None,
            node_hardware: Vec::new(),
            ran: None,
        }
    }

    /// 80 cases × 4 stacks, some with 3 repeats, some with 1, 4 or 50 rounds, some failed.
    fn synthetic() -> ResultSet {
        let mut seed = 7u64;
        let mut runs = Vec::new();
        for c in 0..80u64 {
            let variant = if c % 2 == 0 {
                Variant::Mesh
            } else {
                Variant::Ring
            };
            let case = Case::new(variant, 2 + 2 * (c % 2) as u32, 1024 * (c / 2 + 1));
            for (k, stack) in ["s1", "s2", "s3", "s4"].iter().enumerate() {
                let level = 1e-4 * (1.0 + c as f64) * (1.0 + 0.1 * k as f64);
                let rounds = match (c + k as u64) % 7 {
                    0 => 0,
                    1 => 1,
                    2 => 4,
                    _ => 50,
                };
                let repeats = if c % 5 == 0 { 3 } else { 1 };
                for r in 1..=repeats {
                    runs.push(run(&case, stack, r, rounds, level, &mut seed));
                }
            }
        }
        ResultSet {
            campaign: "synthetic".into(),
            runs,
            ..ResultSet::default()
        }
    }

    #[test]
    fn cases_summarized_on_several_threads_equal_the_sequential_summaries() {
        let results = synthetic();
        assert!(results.runs.len() > 300, "{}", results.runs.len());
        let mut cases: Vec<&str> = Vec::new();
        let mut by_case: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, r) in results.runs.iter().enumerate() {
            let c = r.base_case_id();
            if !by_case.contains_key(c) {
                cases.push(c);
            }
            by_case.entry(c).or_default().push(i);
        }
        let groups: Vec<&[usize]> = cases.iter().map(|c| by_case[c].as_slice()).collect();
        let boot = Bootstrap {
            resamples: 200,
            ..Bootstrap::default()
        };
        let level = verdict::family_level(paired_rows(&results, &groups, Some("s1"), None));
        let pairing = Pairing {
            baseline: Some("s1"),
            compare_metric: None,
            level,
        };
        let summarize = |threads| {
            summarize_cases_on(threads, &results, &groups, pairing, &boot, &Memo::default())
        };
        // `{:?}` prints every f64 exactly (shortest round-trip form), so equal text is equal bits.
        let sequential = format!("{:?}", summarize(1));
        assert!(sequential.contains("median_ci"), "{sequential:.200}");
        for threads in [2, 3, 8] {
            assert_eq!(
                format!("{:?}", summarize(threads)),
                sequential,
                "{threads} threads"
            );
        }
        // And the whole summarize step (on this machine's cores) gives the same statistics.
        let analysis = Analysis::new(&results, Some("s1"), boot);
        let per_case: Vec<CaseOutcome> = summarize(1);
        // Failures and paired comparisons are part of what is compared.
        assert!(per_case.iter().any(|c| !c.1.is_empty()));
        assert!(per_case.iter().any(|c| !c.2.is_empty()));
        let stats: Vec<&RunStats> = per_case.iter().flat_map(|c| &c.0).collect();
        assert_eq!(
            format!("{:?}", analysis.stats.values().collect::<Vec<_>>()),
            format!("{stats:?}")
        );
    }

    /// A repeated report takes every interval from the memo of the first: the same bits, and no
    /// resampling; a damaged memo is ignored and everything is drawn again, to the same bits.
    #[test]
    fn intervals_from_the_memo_are_bit_identical_to_resampled_ones() {
        let results = synthetic();
        let boot = Bootstrap {
            resamples: 200,
            ..Bootstrap::default()
        };
        let analyse = |memo: &Memo| {
            let a = Analysis::remembering(&results, Some("s1"), boot, Judging::default(), memo);
            // `{:?}` prints every f64 exactly, so equal text is equal bits.
            format!("{a:?}")
        };
        let first = Memo::default();
        let want = analyse(&first);
        assert!(
            want.contains("median_ci") && want.contains("ci: Some"),
            "{want:.300}"
        );
        assert!(first.drawn() > 300, "{}", first.drawn());
        assert_eq!(want, analyse(&Memo::default()));
        let bytes = first.encode();
        let again = Memo::decode(&bytes);
        assert_eq!(analyse(&again), want);
        assert_eq!(again.drawn(), 0, "a repeated report resampled");
        assert!(!again.changed());
        // One flipped bit anywhere: the memo is ignored, not half-trusted.
        for at in [0, bytes.len() / 2, bytes.len() - 1] {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x10;
            let memo = Memo::decode(&damaged);
            assert_eq!(analyse(&memo), want);
            assert_eq!(memo.drawn(), first.drawn(), "byte {at}");
        }
        // Other data: a changed round misses its own intervals and keeps the others.
        let mut changed = results.clone();
        let run = changed
            .runs
            .iter_mut()
            .find(|r| r.samples.len() > 10)
            .unwrap();
        run.samples[3].execute_s = run.samples[3].execute_s.map(|x| x * 1.5);
        let memo = Memo::decode(&bytes);
        let a = Analysis::remembering(&changed, Some("s1"), boot, Judging::default(), &memo);
        assert!(memo.drawn() > 0 && memo.drawn() < first.drawn());
        assert_eq!(
            format!("{a:?}"),
            format!("{:?}", Analysis::new(&changed, Some("s1"), boot))
        );
    }
    /// Variants belong to stacks: each stack's run of a point is paired with the baseline's run
    /// of the same point — its same variant where the baseline ran it, else the baseline's
    /// `default` — and never with another point.
    #[test]
    fn each_stack_is_paired_with_the_baselines_run_of_the_same_point() {
        let mut seed = 11u64;
        let mut runs = Vec::new();
        let v = |name: &str| -> Variant { name.parse().unwrap() };
        // Point 1 (count 1024): host mesh and ring, mpi only its default.
        // Point 2 (count 2048): host ring, mpi ring and default.
        let plan = [
            (1024, "host", "mesh", 1e-4),
            (1024, "host", "ring", 2e-4),
            (1024, "mpi", "default", 4e-4),
            (2048, "host", "ring", 3e-4),
            (2048, "mpi", "ring", 6e-4),
            (2048, "mpi", "default", 9e-4),
        ];
        for (count, stack, variant, level) in plan {
            let case = Case::new(v(variant), 2, count);
            for r in 1..=3 {
                runs.push(run(&case, stack, r, 20, level, &mut seed));
            }
        }
        let results = ResultSet {
            campaign: "points".into(),
            runs,
            ..ResultSet::default()
        };
        let boot = Bootstrap {
            resamples: 200,
            ..Bootstrap::default()
        };
        let a = Analysis::new(&results, Some("mpi"), boot);
        let pairs: Vec<(String, String, String)> = (a.paired.iter())
            .map(|p| {
                (
                    p.case_id.clone(),
                    p.baseline_case_id.clone(),
                    p.baseline_name(),
                )
            })
            .collect();
        assert_eq!(
            pairs,
            [
                (
                    "mesh_p2_count1024_fp32_a2a3_d0-1".to_string(),
                    "default_p2_count1024_fp32_a2a3_d0-1".to_string(),
                    "mpi default".to_string()
                ),
                (
                    "ring_p2_count1024_fp32_a2a3_d0-1".to_string(),
                    "default_p2_count1024_fp32_a2a3_d0-1".to_string(),
                    "mpi default".to_string()
                ),
                (
                    "ring_p2_count2048_fp32_a2a3_d0-1".to_string(),
                    "ring_p2_count2048_fp32_a2a3_d0-1".to_string(),
                    "mpi".to_string()
                ),
            ]
        );
        // The ratios are of the paired runs: 1/4, 2/4 and 3/6 (noise up to +20 % per round).
        for (p, want) in a.paired.iter().zip([0.25, 0.5, 0.5]) {
            assert!(
                (p.ratio / want - 1.0).abs() < 0.15,
                "{} {}",
                p.case_id,
                p.ratio
            );
            let label = p.label(a.equivalence);
            assert!(label.contains("faster than mpi"), "{label}");
        }
        assert!(a.paired[0]
            .label(a.equivalence)
            .contains("faster than mpi default"));
    }
    /// A library that switches algorithm with size gets one α–β model per algorithm it said
    /// ran, never one line through both.
    #[test]
    fn fits_split_where_the_recorded_algorithm_changes_with_size() {
        let mut seed = 5u64;
        let mut runs = Vec::new();
        for (i, count) in [256u64, 1024, 4096, 65536, 262144, 1048576]
            .into_iter()
            .enumerate()
        {
            let case = Case::new("default".parse().unwrap(), 2, count);
            let algo = if i < 3 { "TREE" } else { "RING" };
            let level = 2e-6 + count as f64 * 4.0 / 5e9;
            let mut r = run(&case, "nccl", 1, 20, level, &mut seed);
            r.ran = Some(crate::model::results::Ran {
                algo: Some(algo.into()),
                ..Default::default()
            });
            runs.push(r);
        }
        let results = ResultSet {
            campaign: "switch".into(),
            runs,
            ..ResultSet::default()
        };
        let boot = Bootstrap {
            resamples: 50,
            ..Bootstrap::default()
        };
        let a = Analysis::new(&results, None, boot);
        let labels: Vec<String> = a.fits.iter().map(|f| f.key.series_label()).collect();
        assert_eq!(labels.len(), 2, "{labels:?}");
        assert!(
            labels.iter().any(|l| l.ends_with("(ran TREE)")),
            "{labels:?}"
        );
        assert!(
            labels.iter().any(|l| l.ends_with("(ran RING)")),
            "{labels:?}"
        );
        assert!(a.fits.iter().all(|f| f.points.len() == 3));
    }
    /// `[report] equivalence`: the same pair is equivalent within ±5 %, undecided within
    /// ±0.1 %, and its label names the margin.
    #[test]
    fn the_paired_equivalence_margin_is_the_reports() {
        let mut seed = 3u64;
        let mut runs = Vec::new();
        let case = Case::new(Variant::Mesh, 2, 1024);
        for stack in ["mpi", "host"] {
            for r in 1..=5 {
                runs.push(run(&case, stack, r, 40, 1e-4, &mut seed));
            }
        }
        let results = ResultSet {
            campaign: "eq".into(),
            runs,
            ..ResultSet::default()
        };
        let boot = Bootstrap {
            resamples: 100,
            ..Bootstrap::default()
        };
        let with = |delta| {
            let a = Analysis::remembering(
                &results,
                Some("mpi"),
                boot,
                Judging {
                    equivalence: delta,
                    ..Judging::default()
                },
                &Memo::default(),
            );
            a.paired[0].label(a.equivalence)
        };
        assert_eq!(with(None), "equivalent to mpi (within ±5.0 %)");
        assert!(
            with(Some(0.001)).starts_with("undecided against mpi ("),
            "{}",
            with(Some(0.001))
        );
    }
    /// What the default loses: host's default allreduce (mesh) twice as slow as its ring at
    /// one point, five interleaved repeats each: "default mesh loses 99 % to ring"; mpi's
    /// `default` 3× faster than its other algorithm: "the default is 3.0…× faster"; a stack whose
    /// default only the provenance names (`lib`: tree) has its row too; a stack with one
    /// variant at the point has no row.
    #[test]
    fn the_default_variants_loss_to_the_best_other() {
        let mut seed = 9u64;
        let mut runs = Vec::new();
        let v = |n: &str| -> Variant { n.parse().unwrap() };
        for r in 1..=5 {
            for (stack, variant, level) in [
                ("host", "mesh", 2e-4),
                ("host", "ring", 1e-4),
                ("host", "twophase", 1.5e-4),
                ("mpi", "default", 1e-4),
                ("mpi", "ring", 3e-4),
                ("solo", "mesh", 1e-4),
                ("lib", "tree", 1e-4),
                ("lib", "ring", 1e-4),
            ] {
                let case = Case::new(v(variant), 2, 4096);
                runs.push(run(&case, stack, r, 30, level, &mut seed));
            }
        }
        let mut results = ResultSet {
            campaign: "regret".into(),
            runs,
            ..ResultSet::default()
        };
        // `lib`'s default is what the run dir's provenance records (no name says it).
        results
            .provenance
            .stack_roots
            .entry("lib".into())
            .or_default()
            .defaults
            .insert("allreduce".into(), "tree".into());
        let boot = Bootstrap {
            resamples: 100,
            ..Bootstrap::default()
        };
        let a = Analysis::new(&results, Some("mpi"), boot);
        let rows: Vec<(String, String)> = (a.regret.iter())
            .map(|r| (r.stack.clone(), r.label(0.05)))
            .collect();
        assert_eq!(rows.len(), 3, "{rows:?}");
        assert_eq!(rows[2].0, "lib");
        assert!(rows[2].1.contains("default tree"), "{rows:?}");
        assert_eq!(rows[0].0, "host");
        let loss: f64 = (rows[0].1.strip_prefix("default mesh loses "))
            .and_then(|t| t.strip_suffix(" % to ring"))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{rows:?}"));
        assert!((90.0..=110.0).contains(&loss), "{rows:?}");
        assert_eq!(rows[1].0, "mpi");
        let times: f64 = (rows[1].1.strip_prefix("the default is "))
            .and_then(|t| t.strip_suffix("× faster than ring"))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{rows:?}"));
        assert!((2.5..=3.5).contains(&times), "{rows:?}");
    }
}
