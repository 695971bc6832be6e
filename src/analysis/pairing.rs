//! Paired comparisons of each stack against the baseline stack at the same point of the sweep
//! (the baseline's run of the same variant, else of its own default variant): the
//! ratio of hierarchical medians, its bootstrap interval, and the verdict of
//! `analysis::verdict` (the rule `compare` uses), judged over every pair at once so the
//! family-wise level holds. Also which baseline is chosen, how many pairs are judged together,
//! and why a stack is not paired. Pure: no files, no formatting beyond a verdict's label.

use crate::analysis::run_stats::{metric_draws, Estimate, RunStats, View};
use crate::analysis::stats::bootstrap::{Bootstrap, Interval, LEVEL};
use crate::analysis::stats::memo::{Memo, Resampling};
use crate::analysis::verdict::{self, Change, Conditions, Evidence};
use crate::model::results::{Metric, ResultSet};

/// One paired comparison: `ratio = median(stack) / median(baseline)` of execute time.
#[derive(Debug, Clone)]
pub struct Paired {
    pub(crate) case_id: String,
    /// The baseline's case it is paired with: the same point of the sweep, the baseline's
    /// variant (the same as `case_id` when both stacks ran that variant).
    pub(crate) baseline_case_id: String,
    /// The baseline's variant, when it is not the stack's (shown with the baseline's name).
    pub(crate) baseline_variant: Option<crate::model::case::Variant>,
    pub(crate) stack: String,
    pub(crate) baseline: String,
    pub(crate) ratio: f64,
    /// 95 % hierarchical bootstrap interval of the ratio; None when a side is a single repeat
    /// of fewer than `verdict::MIN_ROUNDS` timed rounds (too few for an interval).
    pub(crate) ci: Option<Interval>,
    /// `analysis::verdict`'s rule with the baseline as A and the stack as B: the same evidence
    /// `compare` asks for (repeats, a family-wise interval beyond the noise band, separation).
    pub(crate) verdict: Change,
    /// Why the verdict is not faster/slower when the ratio alone might suggest one.
    pub(crate) why: Option<String>,
    /// The two medians the ratio is of (on `compare_metric` when set, else the shared metric).
    pub(crate) stack_median: f64,
    pub(crate) baseline_median: f64,
    pub(crate) metric: Metric,
    /// The pair's evidence until every pair's is known (`judge_pairs`).
    pending: Option<Evidence>,
}

/// Judge every pair with an interval together over the `judged` pairs (`verdict::judge_all`,
/// the rule `compare` uses); returns the level of the verdict intervals of pairs with repeats.
pub(crate) fn judge_pairs(paired: &mut [Paired], judged: usize, margins: verdict::Margins) -> f64 {
    let (rows, evidence): (Vec<usize>, Vec<Evidence>) = paired
        .iter_mut()
        .enumerate()
        .filter_map(|(i, p)| p.pending.take().map(|e| (i, e)))
        .unzip();
    let (level, verdicts) = verdict::judge_all_with(&evidence, judged, margins);
    for (i, (v, why, _)) in rows.into_iter().zip(verdicts) {
        (paired[i].verdict, paired[i].why) = (v, why);
    }
    level
}

impl Paired {
    /// Judge this row with its own margins (`analysis::calibration`: its size class's band).
    pub(crate) fn calibrate(&mut self, margins: crate::analysis::verdict::Margins) {
        self.pending = self.pending.take().map(|e| e.margins(margins));
    }

    /// The baseline as the pair compares with it: `mpi`, or `mpi default` when the baseline ran
    /// another variant than the stack (variants belong to stacks).
    pub(crate) fn baseline_name(&self) -> String {
        match self.baseline_variant {
            Some(v) => format!("{} {v}", self.baseline),
            None => self.baseline.clone(),
        }
    }

    /// "1.80× faster than mpi", "2.10× slower than mpi", "equivalent to mpi (within ±5.0 %)",
    /// "undecided against mpi (…why…)" or "not judged: contended (…)"; `equivalence` is the
    /// margin ±δ the pair was judged with (`Analysis::equivalence`).
    pub(crate) fn label(&self, equivalence: f64) -> String {
        let why = |text: String| match &self.why {
            Some(w) => format!("{text} ({w})"),
            None => text,
        };
        let baseline = self.baseline_name();
        match self.verdict {
            Change::Faster => format!("{:.2}× faster than {baseline}", 1.0 / self.ratio),
            Change::Slower => format!("{:.2}× slower than {baseline}", self.ratio),
            Change::NoChange => format!(
                "equivalent to {baseline} (within ±{:.1} %)",
                equivalence * 100.0
            ),
            Change::NoClearDifference => why(format!("undecided against {baseline}")),
            Change::NotJudged | Change::NotComparable => self.verdict.words(self.why.as_deref()),
        }
    }
}

pub(crate) fn choose_baseline(
    stacks: &[String],
    wanted: Option<&str>,
) -> (Option<String>, Option<String>) {
    match wanted {
        Some(b) if stacks.iter().any(|s| s == b) => (Some(b.to_string()), None),
        Some(b) => (
            None,
            Some(format!(
                "baseline stack `{b}` has no runs in this result set (stacks: {})",
                stacks.join(", ")
            )),
        ),
        None if stacks.len() < 2 => (
            None,
            Some("only one stack ran: nothing to compare".to_string()),
        ),
        None => (
            Some(stacks[0].clone()),
            Some(format!(
                "no `[report] baseline` set: comparing with `{}`, the first stack run",
                stacks[0]
            )),
        ),
    }
}

/// How many (case, stack) pairs with the baseline the report judges at once — every other
/// stack's case at a point of the sweep the baseline ran, on a metric it may be paired on —
/// which sets the family-wise level of each paired verdict. Counted before the statistics,
/// from the plan's shape, so a failing run does not loosen the others' verdicts. `groups` are
/// the runs of each point (`RunResult::point_id`).
pub(crate) fn paired_rows(
    results: &ResultSet,
    groups: &[&[usize]],
    baseline: Option<&str>,
    compare_metric: Option<Metric>,
) -> usize {
    let Some(baseline) = baseline else { return 0 };
    let mb = results.metric(baseline);
    let mut sides: Vec<(&str, &str)> = Vec::new();
    groups
        .iter()
        .map(|g| {
            sides.clear();
            for &i in g.iter() {
                let run = &results.runs[i];
                let side = (run.stack.as_str(), run.base_case_id());
                if !sides.contains(&side) {
                    sides.push(side);
                }
            }
            if !sides.iter().any(|(s, _)| *s == baseline) {
                return 0;
            }
            sides
                .iter()
                .filter(|(s, _)| {
                    *s != baseline && (compare_metric.is_some() || results.metric(s) == mb)
                })
                .count()
        })
        .sum()
}

/// The baseline's statistics a stack's case is paired with, among `stats` of one point: the
/// baseline's run of the same variant when it ran it, else of its variant `default` (the
/// library's own choice), else its first.
fn baseline_for(
    results: &ResultSet,
    stats: &[RunStats],
    baseline: &str,
    own: &RunStats,
) -> Option<usize> {
    let variant = results.runs[own.index].case.variant;
    let candidates = || {
        (stats.iter().enumerate())
            .filter(|(_, s)| results.runs[s.index].stack == baseline && s.summary.median > 0.0)
    };
    let named = |name: &str| {
        candidates().find(|(_, s)| results.runs[s.index].case.variant.as_str() == name)
    };
    named(variant.as_str())
        .or_else(|| named(crate::model::case::Variant::Default.as_str()))
        .or_else(|| candidates().next())
        .map(|(i, _)| i)
}

/// The evidence of B against A, two (case, stack) statistics of one campaign (`stats`: A, B)
/// with their sorted repeats: no campaign-to-campaign term (both ran in this campaign); the
/// machine's conditions of each side (oversubscribed, contention); and, their repeats having
/// been interleaved, judged repeat by repeat where the repeat numbers (`keys`: A's, B's) pair
/// up, so the machine's phase during repeat k cancels out.
pub(crate) fn interleaved_evidence(
    results: &ResultSet,
    (a, b): (&RunStats, &RunStats),
    (a_repeats, b_repeats): (&[Vec<f64>], &[Vec<f64>]),
    (a_keys, b_keys): (Vec<u32>, Vec<u32>),
    rounds: impl FnOnce() -> Interval,
) -> Evidence {
    let conditions = |st: &RunStats| Conditions::of(st.runs.iter().map(|&i| &results.runs[i]));
    Evidence::new(a_repeats, b_repeats, None, rounds)
        .caveat(verdict::caveat(
            conditions(a),
            conditions(b),
            verdict::DEFAULT_VERDICT_MAX_CONTENTION,
        ))
        .contention(conditions(a), conditions(b))
        .paired(&a_keys, &b_keys)
}

/// The repeat numbers of `st`'s repeats, in the order its statistics hold them; empty when the
/// pairing is on another metric's draws (which may leave a repeat out), so nothing is paired.
fn repeat_keys(results: &ResultSet, st: &RunStats, on_metric: &Option<Estimate>) -> Vec<u32> {
    if on_metric.is_some() {
        return Vec::new();
    }
    st.runs.iter().map(|&i| results.runs[i].repeat()).collect()
}

/// The paired comparisons of one planned case: every stack of `stats` (with its bootstrap,
/// `sides`, index for index) against the baseline, each left pending for [`judge_pairs`]; the
/// ratio intervals come from `memo` when it holds them. Empty when the baseline did not pass
/// on this case.
#[allow(clippy::too_many_arguments)]
pub(crate) fn pair_case(
    results: &ResultSet,
    stats: &[RunStats],
    sides: &[Resampling],
    baseline: Option<&str>,
    compare_metric: Option<Metric>,
    level: f64,
    boot: &Bootstrap,
    memo: &Memo,
) -> Vec<Paired> {
    let mut paired = Vec::new();
    if let Some(baseline) = baseline {
        // With `compare_metric`, both sides are re-estimated on it; else only stacks whose
        // declared metric is the baseline's are paired (the rest get a note).
        let on_metric = |s: &RunStats| -> Option<Estimate> {
            let m = compare_metric?;
            if m == s.metric {
                return None;
            }
            metric_draws(results, &s.runs, m, boot)
        };
        for (s, side) in stats.iter().zip(sides) {
            let run = &results.runs[s.index];
            if run.stack == baseline {
                continue;
            }
            let Some(bi) = baseline_for(results, stats, baseline, s) else {
                continue;
            };
            let b = &stats[bi];
            let base_on = on_metric(b);
            let metric = match compare_metric {
                Some(cm) => cm,
                None if s.metric != b.metric => continue,
                None => s.metric,
            };
            let own_on = on_metric(s);
            let own = match &own_on {
                Some(e) => e.view(),
                None => View {
                    median: s.summary.median,
                    sampled: side,
                },
            };
            let base = match &base_on {
                Some(e) => e.view(),
                None => View {
                    median: b.summary.median,
                    sampled: &sides[bi],
                },
            };
            if own.sampled.is_empty() || base.sampled.is_empty() || base.median <= 0.0 {
                continue;
            }
            let (own_repeats, base_repeats) = (&own.sampled.repeats, &base.sampled.repeats);
            let too_few = verdict::too_few(own_repeats).or_else(|| verdict::too_few(base_repeats));
            // A pair with an interval is judged with every other (`judge_pairs`).
            let pending = too_few.is_none().then(|| {
                // Only where the repeats are the runs' own, in order (not another metric's
                // draws) are they paired repeat by repeat.
                let keys = (
                    repeat_keys(results, b, &base_on),
                    repeat_keys(results, s, &own_on),
                );
                interleaved_evidence(results, (b, s), (base_repeats, own_repeats), keys, || {
                    let wide = memo.ratio(own.sampled, base.sampled, level);
                    Interval {
                        lo: wide.lo - 1.0,
                        hi: wide.hi - 1.0,
                    }
                })
            });
            // An interval wider than ×10 either way says nothing: not printed.
            let ci = pending
                .is_some()
                .then(|| memo.ratio(own.sampled, base.sampled, LEVEL))
                .filter(|i| {
                    verdict::meaningful(Interval {
                        lo: i.lo - 1.0,
                        hi: i.hi - 1.0,
                    })
                });
            let (verdict, why) = match too_few {
                Some(why) => (Change::NotJudged, Some(why)),
                None => (Change::NoClearDifference, None),
            };
            paired.push(Paired {
                case_id: run.base_case_id().to_string(),
                baseline_case_id: results.runs[b.index].base_case_id().to_string(),
                baseline_variant: Some(results.runs[b.index].case.variant)
                    .filter(|v| *v != run.case.variant),
                stack: run.stack.clone(),
                baseline: baseline.to_string(),
                ratio: own.median / base.median,
                ci,
                verdict,
                why,
                stack_median: own.median,
                baseline_median: base.median,
                metric,
                pending,
            });
        }
    }
    paired
}

/// Why a stack is not paired with the baseline: its declared metric differs in kind.
pub(crate) fn pairing_notes(
    results: &ResultSet,
    stacks: &[String],
    baseline: Option<&str>,
    compare_metric: Option<Metric>,
) -> Vec<String> {
    let Some(baseline) = baseline else {
        return Vec::new();
    };
    let mb = results.metric(baseline);
    match compare_metric {
        Some(m) => {
            let differ = stacks.iter().any(|s| results.metric(s) != mb);
            if differ {
                vec![format!(
                    "stacks declare different metrics; paired comparisons all use `{m}` ([report] compare_metric)"
                )]
            } else {
                Vec::new()
            }
        }
        None => stacks
            .iter()
            .filter(|s| s.as_str() != baseline && results.metric(s) != mb)
            .map(|s| {
                format!(
                    "`{s}` is not paired with `{baseline}`: `{s}` measures `{}`, `{baseline}` measures `{mb}`, which differ in kind (set [report] compare_metric to pair them on one metric)",
                    results.metric(s)
                )
            })
            .collect(),
    }
}
