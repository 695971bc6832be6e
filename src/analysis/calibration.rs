//! Calibration: this machine's noise, measured by judging each stack against itself (issue 45,
//! item 2; docs/statistics.md, "Calibration").
//!
//! `campaign calibrate PLAN` runs the plan with an even number of repeats, interleaved as every
//! campaign's are; here each (case, stack)'s repeats are split into two sides by turn — A the
//! 1st, 3rd, 5th …, B the 2nd, 4th, 6th … — and B is judged against A with the very verdict
//! rule of the report and `compare` (`analysis::verdict`, repeat by repeat: B's k-th repeat ran
//! right after A's). Both sides are the same implementation, so every "faster" or "slower" is a
//! false alarm, and the size of |B/A − 1| is the noise a real difference must clear. Per size
//! class (the message size per rank, in ×16 steps) that gives the rows judged, the false alarms
//! and the noise floor: the 95th percentile of |B/A − 1| over the class's rows. The floor,
//! clamped to [`MIN_BAND`, `MAX_BAND`], is the class's noise band — what report, `compare` and
//! `history regressions` use in place of the constant ±5 % when a calibration of the machine is
//! in the history store (`store::history_db`), and say so.
//!
//! Owns the size classes, the A/A split, the floor and the machine key a calibration is stored
//! under. Pure: no files.

use serde::{Deserialize, Serialize};

use crate::analysis::stats::bootstrap::Interval;
use crate::analysis::verdict::{self, Change, Conditions, Evidence};
use crate::model::results::{Provenance, ResultSet, RunResult, RunStatus};

/// The narrowest noise band a calibration sets: below it a verdict would rest on differences
/// too small to matter to anyone, however quiet the machine.
pub(crate) const MIN_BAND: f64 = 0.01;

/// The widest noise band a calibration sets: beyond it the machine is too noisy to judge
/// anything, and the calibration says so rather than widening the band further.
pub(crate) const MAX_BAND: f64 = 0.5;

/// Upper bounds (bytes per rank per round, exclusive) of the size classes; the last class is
/// open. ×16 steps: the noise of a collective changes with the regime (latency-bound, cache,
/// bandwidth-bound), which a factor of 16 in size crosses roughly once.
const CLASS_BOUNDS: [u64; 5] = [4 << 10, 64 << 10, 1 << 20, 16 << 20, 256 << 20];

/// The fewest repeats a calibration runs per (case, stack): three per side, the verdict rule's
/// minimum.
pub(crate) const MIN_REPEATS: u32 = 6;

/// The noise of one size class.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassNoise {
    /// "≤ 4 KiB", "4 KiB – 64 KiB", …, "> 256 MiB".
    pub(crate) class: String,
    pub(crate) lo_bytes: u64,
    /// Exclusive; none for the last class.
    pub(crate) hi_bytes: Option<u64>,
    /// A/A rows of the class (a (case, stack) with at least three repeats a side).
    pub(crate) rows: usize,
    /// Rows the rule judged faster or slower: false alarms, since both sides are one stack.
    pub(crate) false_alarms: usize,
    /// The 95th percentile of |B/A − 1| over the rows, in percent.
    pub(crate) noise_pct: f64,
    /// The noise band the class gets: `noise_pct` within [`MIN_BAND`, `MAX_BAND`], in percent.
    pub(crate) band_pct: f64,
}

/// A machine's calibration, as stored in the history store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// [`machine_of`] the provenance of the runs it measured.
    pub(crate) machine: String,
    /// The host and CPU it names, for people.
    pub(crate) machine_text: String,
    /// When it was measured (RFC 3339).
    pub(crate) created: String,
    /// The plan it ran and its run dir.
    pub(crate) plan: String,
    pub(crate) run_dir: String,
    /// Repeats per (case, stack): half on each side.
    pub(crate) repeats: u32,
    pub(crate) classes: Vec<ClassNoise>,
}

impl Calibration {
    /// The noise band for a row of `bytes` per rank per round: its class's, else the nearest
    /// measured class's (a size the calibration did not cover takes its neighbour's noise
    /// rather than none); none when no class was measured.
    pub(crate) fn band_for(&self, bytes: u64) -> Option<f64> {
        let want = class_of(bytes);
        self.classes
            .iter()
            .filter(|c| c.rows > 0)
            .min_by_key(|c| class_of(c.lo_bytes).abs_diff(want))
            .map(|c| c.band_pct / 100.0)
    }

    /// "calibration of host n1 (Intel Xeon …) from 2026-12-06T23:10:00Z (plans/x.toml, 10
    /// repeats): ≤ 4 KiB ±3.1 %, …": which calibration a command used.
    pub(crate) fn label(&self) -> String {
        let classes: Vec<String> = (self.classes.iter())
            .filter(|c| c.rows > 0)
            .map(|c| format!("{} ±{:.1} %", c.class, c.band_pct))
            .collect();
        format!(
            "calibration of {} from {} ({}, {} repeats): {}",
            self.machine_text,
            self.created,
            self.plan,
            self.repeats,
            classes.join(", ")
        )
    }
}

/// What a command says when no calibration set its bands: the one `band` every row had.
pub(crate) fn none_label(band: f64) -> String {
    format!(
        "no calibration of this machine (the constant ±{:.1} % band; `campaign calibrate PLAN` measures this machine's)",
        band * 100.0
    )
}

/// The key a calibration is stored under: the machine whose noise it measured, as the history
/// store names machines (`model::digest::host_fingerprint`: the host and its CPU), so a
/// history series finds its machine's calibration by its own key.
pub(crate) fn machine_of(p: &Provenance) -> String {
    crate::model::digest::host_fingerprint(&p.host, &p.cpu)
}

/// "host n1 (Intel Xeon …)".
pub(crate) fn machine_text(p: &Provenance) -> String {
    format!("host {} ({})", p.host, p.cpu)
}

/// The index of the size class of `bytes`.
fn class_of(bytes: u64) -> usize {
    CLASS_BOUNDS
        .iter()
        .position(|&hi| bytes < hi)
        .unwrap_or(CLASS_BOUNDS.len())
}

/// Every size class, empty.
fn classes() -> Vec<ClassNoise> {
    let human = |b: u64| crate::model::units::format_bytes(b);
    (0..=CLASS_BOUNDS.len())
        .map(|i| {
            let lo = if i == 0 { 0 } else { CLASS_BOUNDS[i - 1] };
            let hi = CLASS_BOUNDS.get(i).copied();
            let class = match (i, hi) {
                (0, Some(h)) => format!("< {}", human(h)),
                (_, Some(h)) => format!("{} – {}", human(lo), human(h)),
                (_, None) => format!("≥ {}", human(lo)),
            };
            ClassNoise {
                class,
                lo_bytes: lo,
                hi_bytes: hi,
                rows: 0,
                false_alarms: 0,
                noise_pct: 0.0,
                band_pct: 0.0,
            }
        })
        .collect()
}

/// One A/A row: its size class, its evidence and |B/A − 1| of the sides' mean log medians.
struct AaRow {
    class: usize,
    evidence: Evidence,
    change: f64,
}

/// The A/A row of one (case, stack)'s passing repeats (in repeat order), split by turn.
fn aa_row(set: &ResultSet, runs: &[&RunResult]) -> Option<AaRow> {
    let metric = set.metric(&runs.first()?.stack);
    let sorted = |r: &RunResult| {
        let mut xs = r.timed(metric);
        xs.sort_by(f64::total_cmp);
        xs
    };
    let (a, b): (Vec<&RunResult>, Vec<&RunResult>) = {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for (i, r) in runs.iter().enumerate() {
            if i % 2 == 0 {
                a.push(*r)
            } else {
                b.push(*r)
            }
        }
        (a, b)
    };
    let n = a.len().min(b.len());
    if n < 3 {
        return None;
    }
    let (a, b) = (&a[..n], &b[..n]);
    let a_rep: Vec<Vec<f64>> = a.iter().map(|r| sorted(r)).collect();
    let b_rep: Vec<Vec<f64>> = b.iter().map(|r| sorted(r)).collect();
    let mean_log = |reps: &[Vec<f64>]| -> Option<f64> {
        let logs: Vec<f64> = (reps.iter())
            .map(|x| crate::analysis::stats::quantile_sorted(x, 0.5).ln())
            .collect();
        logs.iter()
            .all(|l| l.is_finite())
            .then(|| logs.iter().sum::<f64>() / logs.len() as f64)
    };
    let change = (mean_log(&b_rep)? - mean_log(&a_rep)?).exp() - 1.0;
    // B's k-th repeat ran right after A's k-th: they pair by k.
    let keys: Vec<u32> = (0..n as u32).collect();
    let whole = || Interval {
        lo: f64::NEG_INFINITY,
        hi: f64::INFINITY,
    };
    let (ca, cb) = (
        Conditions::of(a.iter().copied()),
        Conditions::of(b.iter().copied()),
    );
    let evidence = Evidence::new(&a_rep, &b_rep, None, whole)
        .caveat(verdict::caveat(
            ca,
            cb,
            verdict::DEFAULT_VERDICT_MAX_CONTENTION,
        ))
        .contention(ca, cb)
        .paired(&keys, &keys);
    Some(AaRow {
        class: class_of(a[0].case.n_bytes()),
        evidence,
        change: change.abs(),
    })
}

/// The noise of every size class from a calibration run's results: every (case, stack) with at
/// least three passing repeats a side is one A/A row, judged with the verdict rule at the
/// constant band over all rows at once (the report's family), its false alarms counted.
pub(crate) fn measure(set: &ResultSet) -> Vec<ClassNoise> {
    let mut groups: Vec<((&str, &str), Vec<&RunResult>)> = Vec::new();
    let mut at: std::collections::HashMap<(&str, &str), usize> = Default::default();
    for r in set.runs.iter().filter(|r| r.status == RunStatus::Pass) {
        let key = (r.base_case_id(), r.stack.as_str());
        let i = *at.entry(key).or_insert_with(|| {
            groups.push((key, Vec::new()));
            groups.len() - 1
        });
        groups[i].1.push(r);
    }
    let rows: Vec<AaRow> = groups
        .iter_mut()
        .filter_map(|(_, runs)| {
            runs.sort_by_key(|r| r.repeat());
            aa_row(set, runs)
        })
        .collect();
    let evidence: Vec<Evidence> = rows.iter().map(|r| r.evidence.clone()).collect();
    let margins = verdict::Margins {
        band: verdict::DEFAULT_THRESHOLD,
        equivalence: verdict::DEFAULT_THRESHOLD,
    };
    let (_, judged) = verdict::judge_all_with(&evidence, evidence.len(), margins);
    let mut out = classes();
    let mut changes: Vec<Vec<f64>> = vec![Vec::new(); out.len()];
    for (row, (v, _, _)) in rows.iter().zip(judged) {
        let c = &mut out[row.class];
        c.rows += 1;
        c.false_alarms += usize::from(matches!(v, Change::Faster | Change::Slower));
        changes[row.class].push(row.change);
    }
    for (c, mut xs) in out.iter_mut().zip(changes) {
        if xs.is_empty() {
            continue;
        }
        xs.sort_by(f64::total_cmp);
        let p95 = crate::analysis::stats::quantile_sorted(&xs, 0.95);
        c.noise_pct = p95 * 100.0;
        c.band_pct = p95.clamp(MIN_BAND, MAX_BAND) * 100.0;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::case::{Case, Variant};
    use crate::model::results::{Sample, REPEAT_MARK};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// A passing run of `case` on `stack`, repeat `repeat`, with these timed rounds.
    fn run(case: &Case, stack: &str, repeat: u32, rounds: &[f64]) -> RunResult {
        let base = case.case_id();
        RunResult {
            case_id: format!("{base}{REPEAT_MARK}{repeat}"),
            case: case.clone(),
            stack: stack.into(),
            status: RunStatus::Pass,
            error: None,
            samples: (rounds.iter().enumerate())
                .map(|(i, &t)| Sample {
                    round: i as u32 + 1,
                    phase: Sample::label(true, i as u32 + 1),
                    execute_s: Some(t),
                    ok: true,
                    ..Sample::default()
                })
                .collect(),
            bundle: "cases/x/y".into(),
            attempt: 1,
            exit_code: Some(0),
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

    /// An A/A calibration run on a noisy machine: 6 sizes, one stack, `repeats` repeats each;
    /// every repeat has its own run-to-run noise of ±`noise`, 20 rounds of 2 % jitter and, with
    /// `phases`, one time in three a phase 2.5–4× slow that the next repeat shares half the
    /// time (a `yes` loop coming and going).
    fn aa_campaign(seed: u64, noise: f64, phases: bool, repeats: u32) -> ResultSet {
        let sizes = 6;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut runs = Vec::new();
        for s in 0..sizes {
            let case = Case::new(Variant::Mesh, 2, 256 << (2 * s));
            let level = 1e-5 * f64::from(1u32 << s);
            let mut phase = 1.0;
            for r in 1..=repeats {
                if phases && (r % 2 == 1 || rng.random_range(0..2) == 0) {
                    phase = if rng.random_range(0..3) == 0 {
                        rng.random_range(2.5..4.0)
                    } else {
                        1.0
                    };
                }
                let own = 1.0 + rng.random_range(-noise..noise);
                let rounds: Vec<f64> = (0..20)
                    .map(|_| level * phase * own * (1.0 + rng.random_range(0.0..0.02)))
                    .collect();
                runs.push(run(&case, "host", r, &rounds));
            }
        }
        ResultSet {
            campaign: "aa".into(),
            runs,
            ..ResultSet::default()
        }
    }

    #[test]
    fn classes_step_by_sixteen_and_the_last_is_open() {
        assert_eq!(class_of(0), 0);
        assert_eq!(class_of((4 << 10) - 1), 0);
        assert_eq!(class_of(4 << 10), 1);
        assert_eq!(class_of(1 << 40), CLASS_BOUNDS.len());
        let all = classes();
        assert_eq!(all.len(), 6);
        assert!(all[0].class.starts_with("< 4"), "{}", all[0].class);
        assert!(all[5].hi_bytes.is_none());
    }

    #[test]
    fn a_size_the_calibration_did_not_cover_takes_the_nearest_measured_class() {
        let mut c = Calibration {
            machine: "m".into(),
            machine_text: "host h (cpu)".into(),
            created: "t".into(),
            plan: "p".into(),
            run_dir: "r".into(),
            repeats: 10,
            classes: classes(),
        };
        assert_eq!(c.band_for(100), None);
        c.classes[1].rows = 4;
        c.classes[1].band_pct = 3.0;
        c.classes[4].rows = 4;
        c.classes[4].band_pct = 9.0;
        assert_eq!(c.band_for(100), Some(0.03));
        assert_eq!(c.band_for(8 << 10), Some(0.03));
        assert_eq!(c.band_for(1 << 30), Some(0.09));
        assert!(c.label().contains("±3.0 %"), "{}", c.label());
    }

    /// Seeded A/A campaigns (200 of them): the rule's false alarms stay at or below α over the
    /// rows, and the measured floor grows with the machine's noise.
    #[test]
    fn seeded_aa_campaigns_keep_false_alarms_within_alpha_and_the_floor_follows_the_noise() {
        let (mut alarms, mut rows) = (0, 0);
        for seed in 0..200 {
            for c in measure(&aa_campaign(seed, 0.04, true, 10)) {
                alarms += c.false_alarms;
                rows += c.rows;
            }
        }
        assert_eq!(rows, 1_200);
        assert!(
            (alarms as f64) <= verdict::FAMILY_ERROR * rows as f64,
            "{alarms} false alarms in {rows} A/A rows"
        );
        let floor = |noise: f64| -> f64 {
            let all: Vec<f64> = (0..20)
                .flat_map(|seed| measure(&aa_campaign(seed, noise, false, 10)))
                .filter(|c| c.rows > 0)
                .map(|c| c.noise_pct)
                .collect();
            all.iter().sum::<f64>() / all.len() as f64
        };
        let (quiet, loud) = (floor(0.005), floor(0.10));
        assert!(loud > 2.0 * quiet, "quiet {quiet:.2} %, loud {loud:.2} %");
    }
}
