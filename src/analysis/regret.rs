//! What the default loses: at each point of the sweep, a stack's default variant against its
//! fastest other variant there (PICO found library defaults up to 5× slower than the best
//! algorithm they ship).
//!
//! A stack's default is the variant it runs when none is named — its first algorithm of the op,
//! which the run dir's provenance records per (stack, op) (`stack_roots.<stack>.defaults`);
//! for run dirs from before that, `default` where the stack ran one (the library's own
//! choice) and the built-in `host` stack's first algorithm of the op. Each
//! (stack, point) with its default and at least one other variant gives one row: the change
//! `median(default) / median(best other) − 1` with its bootstrap interval, judged by
//! `analysis::verdict`'s rule — repeat by repeat, since a stack's variants at one point ran
//! their repeats side by side — so "default ring loses 34 % [28, 41] to twophase" is said only
//! when the evidence carries it. Pure: no files, no formatting beyond a row's words.

use crate::analysis::run_stats::RunStats;
use crate::analysis::stats::bootstrap::{Interval, LEVEL};
use crate::analysis::stats::memo::{Memo, Resampling};
use crate::analysis::verdict::{self, Change, Evidence};
use crate::model::case::Variant;
use crate::model::results::ResultSet;

/// One row: a stack's default at one point against its best other variant there.
#[derive(Debug, Clone)]
pub(crate) struct Regret {
    pub(crate) stack: String,
    /// The default's case id (the point with the default variant).
    pub(crate) case_id: String,
    pub(crate) default: Variant,
    pub(crate) best: Variant,
    pub(crate) default_median: f64,
    pub(crate) best_median: f64,
    /// `default_median / best_median − 1`: what the default loses (negative: it wins).
    pub(crate) loss: f64,
    /// 95 % hierarchical bootstrap interval of `loss`; None when it says nothing.
    pub(crate) ci: Option<Interval>,
    /// The default as B against the best other as A: `Slower` = the default loses.
    pub(crate) verdict: Change,
    pub(crate) why: Option<String>,
    pending: Option<Evidence>,
}

impl Regret {
    /// Judge this row with its own margins (`analysis::calibration`: its size class's band).
    pub(crate) fn calibrate(&mut self, margins: crate::analysis::verdict::Margins) {
        self.pending = self.pending.take().map(|e| e.margins(margins));
    }

    /// "default ring loses 34 % to twophase", "the default is 1.12× faster than ring", "default
    /// mesh is equivalent to ring (within ±5.0 %)", "undecided: … against ring (…)", "not
    /// judged: …".
    pub(crate) fn label(&self, equivalence: f64) -> String {
        let b = self.best;
        // "the default" for the library's own choice, "default ring" for a named one.
        let d = if self.default == Variant::Default {
            "the default".to_string()
        } else {
            format!("default {}", self.default)
        };
        match self.verdict {
            Change::Slower => format!("{d} loses {:.0} % to {b}", self.loss * 100.0),
            Change::Faster => format!("{d} is {:.2}× faster than {b}", 1.0 / (1.0 + self.loss)),
            Change::NoChange => format!(
                "{d} is equivalent to {b} (within ±{:.1} %)",
                equivalence * 100.0
            ),
            Change::NoClearDifference => match &self.why {
                Some(w) => format!("undecided: {d} against {b} ({w})"),
                None => format!("undecided: {d} against {b}"),
            },
            Change::NotJudged | Change::NotComparable => self.verdict.words(self.why.as_deref()),
        }
    }
}

/// The stack's default among the variants it ran at one point, if it has one: the default the
/// run dir's provenance records for the (stack, op), else `default`, else host's first
/// algorithm of the op (run dirs from before the provenance kept defaults).
fn default_of(
    results: &ResultSet,
    stack: &str,
    op: crate::model::case::Op,
    ran: &[Variant],
) -> Option<Variant> {
    let recorded = (results.provenance.stack_roots.get(stack))
        .and_then(|r| r.defaults.get(op.as_str()))
        .and_then(|v| v.parse::<Variant>().ok());
    let fallback = || {
        if ran.contains(&Variant::Default) {
            return Some(Variant::Default);
        }
        (stack == "host").then(|| op.host_variants().first().copied())?
    };
    recorded.or_else(fallback).filter(|d| ran.contains(d))
}

/// The regret rows of one point: `stats` and `sides` (index for index) are its (stack, case)
/// statistics; each row is left pending for [`judge`].
pub(crate) fn of_point(
    results: &ResultSet,
    stats: &[RunStats],
    sides: &[Resampling],
    memo: &Memo,
) -> Vec<Regret> {
    let mut out = Vec::new();
    let mut stacks: Vec<&str> = Vec::new();
    for s in stats {
        let stack = results.runs[s.index].stack.as_str();
        if !stacks.contains(&stack) {
            stacks.push(stack);
        }
    }
    for stack in stacks {
        let mine: Vec<usize> = (0..stats.len())
            .filter(|&i| results.runs[stats[i].index].stack == stack)
            .filter(|&i| stats[i].summary.median > 0.0)
            .collect();
        if mine.len() < 2 {
            continue;
        }
        let variant = |i: usize| results.runs[stats[i].index].case.variant;
        let ran: Vec<Variant> = mine.iter().map(|&i| variant(i)).collect();
        let op = results.runs[stats[mine[0]].index].case.op;
        let Some(default) = default_of(results, stack, op, &ran) else {
            continue;
        };
        let Some(&d) = mine.iter().find(|&&i| variant(i) == default) else {
            continue;
        };
        let Some(&b) = (mine.iter())
            .filter(|&&i| i != d)
            .min_by(|&&x, &&y| stats[x].summary.median.total_cmp(&stats[y].summary.median))
        else {
            continue;
        };
        out.push(row(results, stats, sides, memo, (d, b)));
    }
    out
}

/// One row: the default `d` (B) against the best other `b` (A), both indices into `stats`.
fn row(
    results: &ResultSet,
    stats: &[RunStats],
    sides: &[Resampling],
    memo: &Memo,
    (d, b): (usize, usize),
) -> Regret {
    let (sd, sb) = (&stats[d], &stats[b]);
    let (rd, rb) = (&sides[d].repeats, &sides[b].repeats);
    let too_few = verdict::too_few(rd).or_else(|| verdict::too_few(rb));
    let level = verdict::family_level(1);
    let keys =
        |st: &RunStats| -> Vec<u32> { st.runs.iter().map(|&i| results.runs[i].repeat()).collect() };
    let pending = too_few.is_none().then(|| {
        let rounds = || {
            let wide = memo.ratio(&sides[d], &sides[b], level);
            Interval {
                lo: wide.lo - 1.0,
                hi: wide.hi - 1.0,
            }
        };
        crate::analysis::pairing::interleaved_evidence(
            results,
            (sb, sd),
            (rb, rd),
            (keys(sb), keys(sd)),
            rounds,
        )
    });
    let ci = pending
        .is_some()
        .then(|| memo.ratio(&sides[d], &sides[b], LEVEL))
        .map(|i| Interval {
            lo: i.lo - 1.0,
            hi: i.hi - 1.0,
        })
        .filter(|i| verdict::meaningful(*i));
    let (verdict, why) = match too_few {
        Some(why) => (Change::NotJudged, Some(why)),
        None => (Change::NoClearDifference, None),
    };
    let variant = |s: &RunStats| results.runs[s.index].case.variant;
    Regret {
        stack: results.runs[sd.index].stack.clone(),
        case_id: results.runs[sd.index].base_case_id().to_string(),
        default: variant(sd),
        best: variant(sb),
        default_median: sd.summary.median,
        best_median: sb.summary.median,
        loss: sd.summary.median / sb.summary.median - 1.0,
        ci,
        verdict,
        why,
        pending,
    }
}

/// Judge every pending row together (one family: `verdict::judge_all_with`) of at least
/// `fewest` rows (the whole campaign's, when `rows` are one point's), each counted `looks`
/// times (sequential repeats).
pub(crate) fn judge(
    rows: &mut [Regret],
    margins: verdict::Margins,
    (fewest, looks): (usize, usize),
) {
    let (at, evidence): (Vec<usize>, Vec<Evidence>) = (rows.iter_mut().enumerate())
        .filter_map(|(i, r)| r.pending.take().map(|e| (i, e)))
        .unzip();
    let m = evidence.len().max(fewest) * looks.max(1);
    let (_, verdicts) = verdict::judge_all_with(&evidence, m, margins);
    for (i, (v, why, _)) in at.into_iter().zip(verdicts) {
        (rows[i].verdict, rows[i].why) = (v, why);
    }
}
