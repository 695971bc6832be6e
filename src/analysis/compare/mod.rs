//! Comparing two result sets (`campaign compare RUN_A RUN_B`): change in median per
//! (case, stack), with a hierarchical bootstrap CI (repeats, then rounds) and a verdict.
//!
//! Owns the matching of runs across result sets (the repeats of a (case, stack) together), the
//! family-wise level of the verdict intervals for the rows judged at once, and the
//! Markdown/CSV/JSON renderings (JUnit and the CI job summary in `ci`); the verdict itself is `analysis::verdict`'s rule, the same one
//! the report's paired comparisons use. Pure: loading run dirs
//! and exit codes belong to `cli::compare`.

use std::collections::BTreeMap;

use serde::Serialize;

mod ci;
pub(crate) use ci::{to_junit, to_summary};

use crate::analysis::between::Between;
use crate::analysis::stats::bootstrap::{ratio_interval, ratio_interval_at, Bootstrap, Interval};
use crate::analysis::stats::hierarchical::estimate;
pub use crate::analysis::verdict::Change;
use crate::analysis::verdict::{self, Conditions, Evidence, MIN_REPEATS, MIN_ROUNDS};
use crate::model::results::{Metric, ResultSet, RunResult, RunStatus};
use crate::model::units::format_seconds;

/// Resamples per side for a comparison of `m` rows: enough that the verdict interval's tails
/// hold about ten draws each, within [1 000, 20 000].
fn resamples_for(m: usize) -> u32 {
    ((400 * m.max(1)) as u32).clamp(1000, 20_000)
}

/// What one result set has for a (case, stack): its repeats' timed rounds.
#[derive(Debug, Clone, Serialize)]
pub struct Side {
    /// `pass` when every repeat passed, else the first other status.
    pub(crate) status: RunStatus,
    /// Passing repeats (runs) the numbers rest on.
    pub(crate) repeats: usize,
    /// Timed rounds of the smallest passing repeat.
    pub(crate) rounds: usize,
    /// Mean over repeats of each repeat's median, seconds (the median with one repeat).
    pub(crate) median_s: Option<f64>,
    /// Oversubscription and CPU contention of its repeats (`oversubscribed`, `cpu_contention`).
    #[serde(flatten)]
    pub(crate) conditions: Conditions,
    /// A repeat was pinned to an algorithm and another ran (`RunResult::pin_honoured`): the
    /// side measured something else, shown as "pin not honoured" and never compared.
    pub(crate) pin_not_honoured: bool,
    #[serde(skip)]
    sorted: Vec<Vec<f64>>,
}

impl Side {
    fn of(runs: &[&RunResult], metric: Metric) -> Side {
        let status = runs
            .iter()
            .map(|r| r.status)
            .find(|s| *s != RunStatus::Pass)
            .unwrap_or(RunStatus::Pass);
        let sorted: Vec<Vec<f64>> = runs
            .iter()
            .map(|r| {
                let mut v = r.timed(metric);
                v.sort_by(f64::total_cmp);
                v
            })
            .filter(|v| !v.is_empty())
            .collect();
        Side {
            status,
            repeats: sorted.len(),
            rounds: sorted.iter().map(Vec::len).min().unwrap_or(0),
            median_s: estimate(&sorted),
            conditions: Conditions::of(runs.iter().copied()),
            pin_not_honoured: runs.iter().any(|r| r.pin_honoured() == Some(false)),
            sorted,
        }
    }

    /// Why this side cannot carry an interval, if it cannot.
    fn too_few(&self) -> Option<String> {
        verdict::too_few(&self.sorted)
    }
}

/// One (case, stack) present in both result sets.
#[derive(Debug, Clone, Serialize)]
pub struct CompareRow {
    pub(crate) case_id: String,
    pub(crate) stack: String,
    /// The stack's headline metric the medians are of.
    pub(crate) metric: Metric,
    pub(crate) a: Side,
    pub(crate) b: Side,
    /// median_b / median_a − 1 (positive = B is slower).
    pub change: Option<f64>,
    /// 95 % hierarchical bootstrap interval of the change (repeats, then rounds).
    pub(crate) ci: Option<Interval>,
    /// The wider interval the verdict is taken on (level `Comparison::verdict_level`).
    pub(crate) verdict_ci: Option<Interval>,
    pub verdict: Change,
    /// Why the verdict is not faster/slower when the numbers alone might suggest one.
    pub(crate) why: Option<String>,
    /// The series' campaign-to-campaign spread from earlier campaigns (the history store),
    /// added to the verdict interval's error; null when none was known.
    pub(crate) between: Option<Between>,
}

/// The whole comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// The noise band, a fraction (0.05 = ±5 %).
    pub(crate) threshold: f64,
    /// The equivalence margin ±δ, a fraction (the band unless `--equivalence` said otherwise).
    pub(crate) equivalence: f64,
    pub(crate) min_rounds: usize,
    pub(crate) min_repeats: usize,
    /// Confidence level of the verdict intervals of rows with repeats: 1 − R · 0.05 / m for
    /// the R rows Benjamini–Hochberg selects among the m with an interval (1 − 0.05 / m when
    /// none); single-repeat rows use 1 − 0.05 / m.
    pub(crate) verdict_level: f64,
    pub rows: Vec<CompareRow>,
    /// (case, stack) present in only one of the two.
    pub(crate) only_a: Vec<(String, String)>,
    pub(crate) only_b: Vec<(String, String)>,
    /// Stacks whose rows moved together beyond the band: a shift of the whole campaign.
    pub(crate) shifts: Vec<Shift>,
    /// Where the campaign-to-campaign spreads came from (the history store), when one was read.
    pub(crate) history: Option<String>,
    /// Rows whose evidence was weighed (faster, slower, equivalent, undecided) out of
    /// `rows`: a comparison that judged none checked nothing (`exit::NOTHING_JUDGED`).
    pub(crate) judged: usize,
    /// Which calibration set the rows' noise bands, or why none did.
    pub(crate) calibration: String,
}

/// Each (case id, stack)'s campaign-to-campaign spread, from earlier campaigns.
pub type Spreads = BTreeMap<(String, String), Between>;

/// Most rows of one stack moved the same way beyond the noise band. Two whole campaigns that
/// differ — a busier machine, another build, another configuration — look like this, and no
/// statistic over the rows of the two can say which; the note says so instead of staying quiet.
#[derive(Debug, Clone, Serialize)]
pub struct Shift {
    pub(crate) stack: String,
    /// Rows of the stack with a change.
    pub(crate) rows: usize,
    /// Of them, rows beyond the band in the direction of `median_change`.
    pub(crate) moved: usize,
    /// Median over the stack's rows of the change (positive = B slower).
    pub(crate) median_change: f64,
}

/// Rows a shift needs: at least this many, and `SHIFT_SHARE` of the stack's rows.
const SHIFT_ROWS: usize = 3;
const SHIFT_SHARE: f64 = 0.75;

/// The stacks of `rows` whose rows moved together beyond ±`threshold`.
fn shifts(rows: &[CompareRow], threshold: f64) -> Vec<Shift> {
    let mut by_stack: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for r in rows {
        if let Some(c) = r.change {
            by_stack.entry(r.stack.as_str()).or_default().push(c);
        }
    }
    by_stack
        .into_iter()
        .filter_map(|(stack, changes)| {
            let median_change = crate::analysis::stats::median(&changes)?;
            let moved = changes
                .iter()
                .filter(|c| {
                    if median_change > 0.0 {
                        **c > threshold
                    } else {
                        **c < -threshold
                    }
                })
                .count();
            let together =
                moved >= SHIFT_ROWS && moved as f64 >= SHIFT_SHARE * changes.len() as f64;
            together.then(|| Shift {
                stack: stack.to_string(),
                rows: changes.len(),
                moved,
                median_change,
            })
        })
        .collect()
}

impl Comparison {
    /// Did any (case, stack) get slower beyond the threshold?
    pub fn regressed(&self) -> bool {
        self.rows.iter().any(|r| r.verdict == Change::Slower)
    }

    /// How many rows have each verdict.
    pub(crate) fn count(&self, v: Change) -> usize {
        self.rows.iter().filter(|r| r.verdict == v).count()
    }

    /// Rows whose evidence was weighed: every verdict but "not judged" and "not comparable".
    pub(crate) fn weighed(rows: &[CompareRow]) -> usize {
        (rows.iter())
            .filter(|r| !matches!(r.verdict, Change::NotJudged | Change::NotComparable))
            .count()
    }

    /// Nothing was judged: no row, or every row not judged or not comparable.
    pub(crate) fn nothing_judged(&self) -> bool {
        self.judged == 0
    }

    /// "judged 3 of 18 rows", the count every format states.
    pub(crate) fn judged_text(&self) -> String {
        format!("judged {} of {} rows", self.judged, self.rows.len())
    }
}

/// A percentage (`5%`) or a fraction (`0.05`), if `text` is one.
fn parse_fraction(text: &str) -> Option<f64> {
    let t = text.trim();
    let value = match t.strip_suffix('%') {
        Some(pct) => pct.trim().parse::<f64>().map(|v| v / 100.0),
        None => t.parse::<f64>(),
    };
    value.ok().filter(|v| v.is_finite())
}

/// Parse a threshold such as `5%` or `0.05` into a fraction.
pub(crate) fn parse_threshold(text: &str) -> Result<f64, String> {
    match parse_fraction(text) {
        Some(v) if (0.0..1.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "--threshold `{text}`: expected a percentage such as `5%` or a fraction below 1 such as `0.05`"
        )),
    }
}

/// Parse `--max-contention` (`10%`, `0.1`; `100%` judges every row) into a fraction.
pub(crate) fn parse_max_contention(text: &str) -> Result<f64, String> {
    match parse_fraction(text) {
        Some(v) if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "--max-contention `{text}`: expected a share of a run's time from `0%` to `100%`, such as `10%`"
        )),
    }
}

type Groups<'a> = BTreeMap<(String, String), Vec<&'a RunResult>>;

/// Runs of a result set grouped by (case, stack): the repeats of each.
fn groups(rs: &ResultSet) -> Groups<'_> {
    let mut g: Groups = BTreeMap::new();
    for r in &rs.runs {
        g.entry((r.base_case_id().to_string(), r.stack.clone()))
            .or_default()
            .push(r);
    }
    g
}

/// How rows are judged beyond their own numbers.
#[derive(Debug, Clone)]
pub struct Judging {
    /// The noise band, a fraction.
    pub threshold: f64,
    /// The equivalence margin ±δ, a fraction (None: the noise band).
    pub equivalence: Option<f64>,
    /// Rows with a run stalled for a CPU more than this share of its time get no verdict.
    pub max_contention: f64,
    /// Each row's campaign-to-campaign spread from earlier campaigns.
    pub spreads: Spreads,
    /// Where the spreads were read (named in the output).
    pub history: Option<String>,
    /// This machine's calibration (`analysis::calibration`): each row's noise band is its size
    /// class's instead of `threshold` (the equivalence margin too, unless given).
    pub(crate) calibration: Option<crate::analysis::calibration::Calibration>,
}

impl Judging {
    /// The defaults: band `threshold`, `verdict::DEFAULT_VERDICT_MAX_CONTENTION`, no history.
    pub fn new(threshold: f64) -> Judging {
        Judging {
            threshold,
            equivalence: None,
            max_contention: verdict::DEFAULT_VERDICT_MAX_CONTENTION,
            spreads: Spreads::new(),
            history: None,
            calibration: None,
        }
    }
}

/// Compare `b` against `a` (a = before, b = after) on their own evidence alone.
pub fn compare(a: &ResultSet, b: &ResultSet, threshold: f64, boot: &Bootstrap) -> Comparison {
    compare_with(a, b, boot, Judging::new(threshold))
}

/// Compare `b` against `a` as `judging` says: each row's campaign-to-campaign spread is added
/// to its verdict interval's error, and contended or oversubscribed rows get no verdict.
pub fn compare_with(
    a: &ResultSet,
    b: &ResultSet,
    boot: &Bootstrap,
    judging: Judging,
) -> Comparison {
    let Judging {
        threshold,
        equivalence,
        max_contention,
        spreads,
        history,
        calibration,
    } = judging;
    let (ga, gb) = (groups(a), groups(b));
    // Pair the sides first: how many rows carry an interval sets the verdict level.
    let mut pairs = Vec::new();
    for (key, runs_a) in &ga {
        let Some(runs_b) = gb.get(key) else { continue };
        // The stack's declared headline metric (as run A declared it).
        let metric = a.metric(&key.1);
        let (sa, sb) = (Side::of(runs_a, metric), Side::of(runs_b, metric));
        let comparable = matches!((sa.median_s, sb.median_s), (Some(ma), Some(_)) if ma > 0.0)
            && sa.status == RunStatus::Pass
            && sb.status == RunStatus::Pass
            && !sa.pin_not_honoured
            && !sb.pin_not_honoured;
        let too_few = sa.too_few().or_else(|| sb.too_few());
        pairs.push((key, metric, sa, sb, comparable, too_few));
    }
    // Rows in the order a reader expects: count64 before count1000 (issue 44).
    pairs.sort_by(|x, y| natural_cmp(&x.0 .0, &y.0 .0).then_with(|| x.0 .1.cmp(&y.0 .1)));
    let m = pairs.iter().filter(|p| p.4 && p.5.is_none()).count();
    let boot = Bootstrap {
        resamples: boot.resamples.max(resamples_for(m)),
        ..*boot
    };
    let shift = |r: Interval| Interval {
        lo: r.lo - 1.0,
        hi: r.hi - 1.0,
    };
    let mut rows = Vec::new();
    // The rows with an interval, judged together once all are known (`verdict::judge_all`).
    let mut judged_rows = Vec::new();
    let mut evidence = Vec::new();
    for (key, metric, sa, sb, comparable, too_few) in pairs {
        let change = sa.median_s.zip(sb.median_s).map(|(ma, mb)| mb / ma - 1.0);
        // The history holds execute_s points: their spread applies to that metric only.
        let between = spreads
            .get(key)
            .copied()
            .filter(|_| metric == Metric::ExecuteS);
        let (change, ci, verdict, why) = match (comparable, too_few) {
            (false, _) => (None, None, Change::NotComparable, pin_note(&sa, &sb)),
            (true, Some(why)) => (change, None, Change::NotJudged, Some(why)),
            (true, None) => {
                let k = format!("{}/{}/compare", key.0, key.1);
                let da = boot.hierarchical_draws(&sa.sorted, &format!("{k}/a"));
                let db = boot.hierarchical_draws(&sb.sorted, &format!("{k}/b"));
                judged_rows.push(rows.len());
                let caveat = verdict::caveat(sa.conditions, sb.conditions, max_contention);
                evidence.push(
                    Evidence::new(&sa.sorted, &sb.sorted, between, || {
                        shift(ratio_interval_at(&db, &da, verdict::family_level(m)))
                    })
                    .caveat(caveat)
                    .contention(sa.conditions, sb.conditions)
                    .margins(row_margins(
                        calibration.as_ref(),
                        ga.get(key).map_or(&[][..], Vec::as_slice),
                        (threshold, equivalence),
                    )),
                );
                // An interval that spans more than ×10 either way says nothing: not printed.
                let ci = Some(shift(ratio_interval(&db, &da))).filter(|i| verdict::meaningful(*i));
                (change, ci, Change::NoClearDifference, None)
            }
        };
        rows.push(CompareRow {
            case_id: key.0.clone(),
            stack: key.1.clone(),
            metric,
            a: sa,
            b: sb,
            change,
            ci,
            verdict_ci: None,
            verdict,
            why,
            between,
        });
    }
    let margins = verdict::Margins {
        band: threshold,
        equivalence: equivalence.unwrap_or(threshold),
    };
    let (verdict_level, judged) = verdict::judge_all_with(&evidence, m, margins);
    for (i, (verdict, why, wide)) in judged_rows.into_iter().zip(judged) {
        let row = &mut rows[i];
        (row.verdict, row.why, row.verdict_ci) = (verdict, why, Some(wide));
    }
    let only = |x: &Groups, y: &Groups| x.keys().filter(|k| !y.contains_key(*k)).cloned().collect();
    Comparison {
        threshold,
        equivalence: margins.equivalence,
        min_rounds: MIN_ROUNDS,
        min_repeats: MIN_REPEATS,
        verdict_level,
        only_a: only(&ga, &gb),
        only_b: only(&gb, &ga),
        shifts: shifts(&rows, threshold),
        judged: Comparison::weighed(&rows),
        rows,
        history,
        calibration: calibration.as_ref().map_or_else(
            || crate::analysis::calibration::none_label(threshold),
            |c| c.label(),
        ),
    }
}

/// A row's margins: its size class's band from the calibration when there is one (the
/// equivalence margin with it, unless given), else the band every row has.
fn row_margins(
    calibration: Option<&crate::analysis::calibration::Calibration>,
    runs: &[&RunResult],
    (threshold, equivalence): (f64, Option<f64>),
) -> verdict::Margins {
    let band = (calibration.zip(runs.first()))
        .and_then(|(c, r)| c.band_for(r.case.n_bytes()))
        .unwrap_or(threshold);
    verdict::Margins {
        band,
        equivalence: equivalence.unwrap_or(band),
    }
}

/// Compare case ids as a reader does: runs of digits by their numbers (`count64` before
/// `count1000`, `p2` before `p16`), the rest as text.
fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    fn runs(s: &str) -> impl Iterator<Item = (bool, &str)> {
        let mut rest = s;
        std::iter::from_fn(move || {
            let first = rest.chars().next()?;
            let digit = first.is_ascii_digit();
            let end = rest
                .find(|c: char| c.is_ascii_digit() != digit)
                .unwrap_or(rest.len());
            let (run, tail) = rest.split_at(end);
            rest = tail;
            Some((digit, run))
        })
    }
    let (mut x, mut y) = (runs(a), runs(b));
    loop {
        let next = match (x.next(), y.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some((true, p)), Some((true, q))) => {
                let (p, q) = (p.trim_start_matches('0'), q.trim_start_matches('0'));
                p.len().cmp(&q.len()).then_with(|| p.cmp(q))
            }
            (Some((_, p)), Some((_, q))) => p.cmp(q),
        };
        if next != Ordering::Equal {
            return next;
        }
    }
}

fn pct(v: f64) -> String {
    format!("{:+.1} %", v * 100.0)
}

/// Which side's pin was not honoured, for a row's verdict: "pin not honoured in B".
fn pin_note(a: &Side, b: &Side) -> Option<String> {
    match (a.pin_not_honoured, b.pin_not_honoured) {
        (true, true) => Some("pin not honoured in A and B".into()),
        (true, false) => Some("pin not honoured in A".into()),
        (false, true) => Some("pin not honoured in B".into()),
        (false, false) => None,
    }
}

/// A side's median, or what it has instead: its status, or "PIN NOT HONOURED" for a side that
/// ran another algorithm than it was pinned to (not an ordinary failure).
fn opt_time(s: &Side) -> String {
    match s.median_s {
        Some(v) if !s.pin_not_honoured => format_seconds(v),
        _ if s.pin_not_honoured => "PIN NOT HONOURED".into(),
        _ => s.status.as_str().to_uppercase(),
    }
}

/// "3 × 30" (repeats × timed rounds of the smallest repeat) or "–".
fn evidence(s: &Side) -> String {
    if s.repeats == 0 {
        "–".into()
    } else {
        format!("{} × {}", s.repeats, s.rounds)
    }
}

/// A Markdown table (GitHub-flavoured) with a one-line summary.
pub fn to_markdown(c: &Comparison, name_a: &str, name_b: &str) -> String {
    let mut out = format!(
        "Change in the median of each stack's headline metric (execute_s unless the stack names \
         another) from A = `{name_a}` to B = `{name_b}` (95 % hierarchical \
         bootstrap CI over repeats, then rounds; noise band ±{:.1} %). A verdict needs >= {} \
         repeats per side; Welch's t interval over the repeats' log medians beyond the band, at \
         {:.2} % for the {} rows judged at once (Benjamini–Hochberg: a comparison of the same \
         thing shows no faster/slower row with 95 % confidence; the level relaxes as more rows \
         clearly changed); and every repeat of B beyond every repeat of A by the band (a repeat \
         2× off its side's median set aside). Equivalent: the interval inside ±{:.1} % (a two \
         one-sided test); undecided: weighed, no verdict, with the smallest change it could have \
         detected. A single repeat gives no verdict and needs >= {} timed rounds for a CI at \
         all. A change without an interval is not a finding and shows as –.\n\n**{}**{}.\n\n",
        c.threshold * 100.0,
        c.min_repeats,
        c.verdict_level * 100.0,
        c.rows.iter().filter(|r| r.verdict_ci.is_some()).count(),
        c.equivalence * 100.0,
        c.min_rounds,
        c.judged_text(),
        if c.nothing_judged() {
            ": nothing was checked (not a pass)"
        } else {
            ""
        }
    );
    out.push_str(
        "| case | stack | median A | median B | repeats × rounds A | B | change [95 % CI] | verdict |\n",
    );
    out.push_str("|---|---|---:|---:|---:|---:|---:|---|\n");
    for r in &c.rows {
        let change = match (r.change, r.ci) {
            (Some(ch), Some(ci)) => format!("{} [{}, {}]", pct(ch), pct(ci.lo), pct(ci.hi)),
            // A ratio without an interval is not a finding: not printed as one.
            _ => "–".into(),
        };
        let verdict = r.verdict.words(r.why.as_deref());
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} | {} | {} |\n",
            crate::model::text::md_cell(&r.case_id),
            crate::model::text::md_cell(&match r.metric {
                Metric::ExecuteS => r.stack.clone(),
                m => format!("{} ({m})", r.stack),
            }),
            opt_time(&r.a),
            opt_time(&r.b),
            evidence(&r.a),
            evidence(&r.b),
            change,
            verdict
        ));
    }
    for sh in &c.shifts {
        out.push_str(&format!(
            "\nWhole-campaign shift: {} of {} rows of `{}` moved {} beyond ±{:.1} % (median change {}). \
             Two campaigns that differ as a whole — a busier machine, another build, another \
             configuration — look like this, and these rows cannot say which; to A/B two builds, \
             run both as stacks of one campaign, so their runs interleave.\n",
            sh.moved,
            sh.rows,
            sh.stack,
            if sh.median_change > 0.0 { "slower" } else { "faster" },
            c.threshold * 100.0,
            pct(sh.median_change)
        ));
    }
    out.push_str(&history_note(c));
    out.push_str(&format!("\nNoise band: {}.\n", c.calibration));
    for (label, list) in [("only in A", &c.only_a), ("only in B", &c.only_b)] {
        if !list.is_empty() {
            out.push_str(&format!("\n{} ({}):\n", label, list.len()));
            for (case, stack) in list {
                out.push_str(&format!("- `{case}` {stack}\n"));
            }
        }
    }
    out.push_str(&format!(
        "\n{} slower, {} faster, {} equivalent, {} undecided, {} not judged, {} not comparable\n",
        c.count(Change::Slower),
        c.count(Change::Faster),
        c.count(Change::NoChange),
        c.count(Change::NoClearDifference),
        c.count(Change::NotJudged),
        c.count(Change::NotComparable)
    ));
    out
}

/// What the campaign-to-campaign spreads rest on, under the table.
fn history_note(c: &Comparison) -> String {
    let judged = c.rows.iter().filter(|r| r.verdict_ci.is_some());
    let with: Vec<_> = judged.clone().filter_map(|r| r.between).collect();
    let without = judged.count() - with.len();
    match &c.history {
        None => "\nCampaign-to-campaign spread: not known (no history store read), so a machine \
                 phase that lasted a whole campaign counts as a change; earlier campaigns of the \
                 same plan in the history store give each row its spread.\n"
            .to_string(),
        Some(store) if with.is_empty() => format!(
            "\nCampaign-to-campaign spread: no row has >= 3 earlier campaigns of its build on \
             this machine in `{store}` (besides A and B), so a machine phase that lasted a \
             whole campaign counts as a change.\n"
        ),
        Some(store) => {
            let campaigns = with.iter().map(|b| b.campaigns);
            let sds: Vec<f64> = with.iter().map(|b| b.relative_sd()).collect();
            let median_sd = crate::analysis::stats::median(&sds).unwrap_or(0.0);
            format!(
                "\nCampaign-to-campaign spread: {} row(s) add their series' spread between \
                 earlier campaigns of the same build on this machine ({}–{} campaigns in `{store}`, \
                 A and B left out; median ±{:.1} %) to the verdict interval's error; {} row(s) \
                 had too few earlier campaigns.\n",
                with.len(),
                campaigns.clone().min().unwrap_or(0),
                campaigns.max().unwrap_or(0),
                median_sd * 100.0,
                without
            )
        }
    }
}

/// The comparison as JSON: every row with both sides' evidence (repeats, rounds, median), the
/// change, its CI and the verdict with its reason; `null` where a number does not exist.
pub(crate) fn to_json(c: &Comparison) -> String {
    let mut text = serde_json::to_string_pretty(c).unwrap_or_default();
    text.push('\n');
    text
}

/// CSV with raw numbers (seconds and fractions).
pub(crate) fn to_csv(c: &Comparison) -> Result<String, csv::Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "case_id",
        "stack",
        "status_a",
        "status_b",
        "repeats_a",
        "repeats_b",
        "rounds_a",
        "rounds_b",
        "median_a_s",
        "median_b_s",
        "change",
        "ci_lo",
        "ci_hi",
        "verdict",
        "why",
        "verdict_ci_lo",
        "verdict_ci_hi",
        "between_campaigns",
        "between_sd",
    ])?;
    let num = |v: Option<f64>| v.map(|x| format!("{x:.9}")).unwrap_or_default();
    for r in &c.rows {
        let text = |t: &str| crate::model::text::csv_cell(t).into_owned();
        w.write_record([
            text(&r.case_id),
            text(&r.stack),
            r.a.status.to_string(),
            r.b.status.to_string(),
            r.a.repeats.to_string(),
            r.b.repeats.to_string(),
            r.a.rounds.to_string(),
            r.b.rounds.to_string(),
            num(r.a.median_s),
            num(r.b.median_s),
            num(r.change),
            num(r.ci.map(|c| c.lo)),
            num(r.ci.map(|c| c.hi)),
            r.verdict.as_str().to_string(),
            text(r.why.as_deref().unwrap_or_default()),
            num(r.verdict_ci.map(|c| c.lo)),
            num(r.verdict_ci.map(|c| c.hi)),
            r.between
                .map(|b| b.campaigns.to_string())
                .unwrap_or_default(),
            num(r.between.map(|b| b.relative_sd())),
        ])?;
    }
    let bytes = w.into_inner().map_err(|e| e.into_error())?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_ids_sort_by_their_numbers() {
        let mut ids = vec![
            "mesh_p2_count1000_fp32",
            "mesh_p16_count64_fp32",
            "mesh_p2_count64_fp32",
            "mesh_p2_count256_fp32",
        ];
        ids.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(
            ids,
            [
                "mesh_p2_count64_fp32",
                "mesh_p2_count256_fp32",
                "mesh_p2_count1000_fp32",
                "mesh_p16_count64_fp32"
            ]
        );
        assert_eq!(natural_cmp("a007", "a7"), std::cmp::Ordering::Equal);
    }

    #[test]
    fn thresholds() {
        assert_eq!(parse_threshold("5%"), Ok(0.05));
        assert_eq!(parse_threshold("0.1"), Ok(0.1));
        assert!(parse_threshold("five").is_err());
        assert!(parse_threshold("150%").is_err());
        assert_eq!(parse_max_contention("100%"), Ok(1.0));
        assert_eq!(parse_max_contention("0.1"), Ok(0.1));
        assert!(parse_max_contention("101%")
            .unwrap_err()
            .starts_with("--max-contention `101%`: expected a share"));
    }

    fn set(levels: &[f64], rounds: usize) -> ResultSet {
        use crate::model::case::{Case, Variant};
        use crate::model::results::{run_id, Sample};
        let case = Case::new(Variant::Mesh, 2, 256);
        let runs = levels
            .iter()
            .enumerate()
            .map(|(i, level)| RunResult {
                case_id: run_id(&case.case_id(), i as u32 + 1),
                case: case.clone(),
                stack: "host".into(),
                status: RunStatus::Pass,
                error: None,
                samples: (0..rounds)
                    .map(|k| Sample {
                        round: k as u32 + 1,
                        phase: format!("timed-{}", k + 1),
                        execute_s: Some(level * (1.0 + 0.01 * ((k * 7 % 5) as f64 - 2.0))),
                        ok: true,
                        ..Sample::default()
                    })
                    .collect(),
                bundle: Default::default(),
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
            })
            .collect();
        ResultSet {
            runs,
            ..ResultSet::default()
        }
    }

    #[test]
    fn one_short_repeat_gives_no_interval_and_no_verdict() {
        let c = compare(
            &set(&[1.0], 3),
            &set(&[2.0], 3),
            0.05,
            &Bootstrap::default(),
        );
        let r = &c.rows[0];
        assert_eq!(r.verdict, Change::NotJudged);
        assert!(r.ci.is_none());
        assert!(r
            .why
            .as_deref()
            .unwrap()
            .starts_with("too few rounds (n=3 timed rounds in 1 repeat"));
        assert!(!c.regressed());
    }

    #[test]
    fn one_long_repeat_shows_an_interval_but_no_verdict() {
        let c = compare(
            &set(&[1.0], 20),
            &set(&[2.0], 20),
            0.05,
            &Bootstrap::default(),
        );
        let r = &c.rows[0];
        assert!(r.ci.unwrap().lo > 0.5);
        assert_eq!(r.verdict, Change::NotJudged);
        assert!(r.why.as_deref().unwrap().starts_with("one repeat"));
        assert!(r
            .why
            .as_deref()
            .unwrap()
            .contains("run-to-run variance is not measured"));
    }

    #[test]
    fn repeats_catch_a_doubling_and_call_their_own_noise_no_change() {
        let b = Bootstrap::default();
        let slow = compare(
            &set(&[1.0, 1.02, 0.98], 10),
            &set(&[2.0, 2.05, 1.97], 10),
            0.05,
            &b,
        );
        assert_eq!(slow.rows[0].verdict, Change::Slower);
        assert!(slow.regressed());
        let fast = compare(
            &set(&[2.0, 2.05, 1.97], 10),
            &set(&[1.0, 1.02, 0.98], 10),
            0.05,
            &b,
        );
        assert_eq!(fast.rows[0].verdict, Change::Faster);
        // Repeats that wander by ±15 % between runs: the same thing, not a change.
        let same = compare(
            &set(&[1.0, 1.15, 0.87], 10),
            &set(&[0.9, 1.1, 1.0], 10),
            0.05,
            &b,
        );
        assert_ne!(same.rows[0].verdict, Change::Slower);
        assert_ne!(same.rows[0].verdict, Change::Faster);
        assert_eq!(same.rows[0].a.repeats, 3);
        let json: serde_json::Value = serde_json::from_str(&to_json(&same)).unwrap();
        assert_eq!(json["rows"][0]["a"]["repeats"], 3);
        assert_eq!(json["rows"][0]["a"]["rounds"], 10);
        assert!(json["rows"][0]["verdict"].is_string());
    }

    #[test]
    fn oversubscribed_repeats_give_no_verdict_and_say_why() {
        let a = set(&[1.0, 1.02, 0.98], 20);
        let mut b = set(&[2.0, 2.04, 1.96], 20);
        assert_eq!(
            compare(&a, &b, 0.05, &Bootstrap::default()).rows[0].verdict,
            Change::Slower
        );
        // Two ranks on one CPU in B's second repeat.
        b.runs[1].cpus = Some(vec![0]);
        let c = compare(&a, &b, 0.05, &Bootstrap::default());
        let r = &c.rows[0];
        assert!(r.b.conditions.oversubscribed && !r.a.conditions.oversubscribed);
        assert_eq!(r.verdict, Change::NotJudged);
        assert!(
            r.why
                .as_deref()
                .unwrap()
                .starts_with("oversubscribed (B): more ranks than CPUs"),
            "{:?}",
            r.why
        );
        assert!(!c.regressed());
        // The interval still says what it says: "no change" is not withheld.
        let same = compare(&a, &a, 0.05, &Bootstrap::default());
        assert_ne!(same.rows[0].verdict, Change::Slower);
    }

    #[test]
    fn a_campaign_to_campaign_spread_widens_the_verdict_and_is_shown() {
        let (a, b) = (set(&[1.0, 1.02, 0.98], 20), set(&[1.3, 1.32, 1.28], 20));
        let plain = compare(&a, &b, 0.05, &Bootstrap::default());
        assert_eq!(plain.rows[0].verdict, Change::Slower);
        assert!(to_markdown(&plain, "a", "b").contains("Campaign-to-campaign spread: not known"));
        let key = (a.runs[0].base_case_id().to_string(), "host".to_string());
        // Earlier campaigns of this series moved ±30 % from one to the next.
        let wide = Between {
            var: 0.3f64.powi(2),
            df: 8.0,
            campaigns: 9,
        };
        let spreads: Spreads = [(key.clone(), wide)].into_iter().collect();
        let judging = |spreads: Spreads, history: &str| Judging {
            spreads,
            history: Some(history.into()),
            ..Judging::new(0.05)
        };
        let c = compare_with(&a, &b, &Bootstrap::default(), judging(spreads, "h.sqlite"));
        let r = &c.rows[0];
        assert_eq!(r.verdict, Change::NoClearDifference);
        assert!(r
            .why
            .as_deref()
            .unwrap()
            .contains("crosses the ±5.0 % noise band"));
        assert!(r.verdict_ci.unwrap().lo < plain.rows[0].verdict_ci.unwrap().lo);
        let md = to_markdown(&c, "a", "b");
        assert!(
            md.contains("1 row(s) add their series' spread between earlier campaigns of the same build on this machine (9–9 campaigns in `h.sqlite`, A and B left out; median ±35.0 %)"),
            "{md}"
        );
        assert!(to_csv(&c)
            .unwrap()
            .lines()
            .nth(1)
            .unwrap()
            .contains(",9,0.349858"));
        // A steady history (no spread beyond the campaigns' own errors) leaves the verdict.
        let steady: Spreads = [(key, Between { var: 0.0, ..wide })].into_iter().collect();
        let c = compare_with(&a, &b, &Bootstrap::default(), judging(steady, "h"));
        assert_eq!(c.rows[0].verdict, Change::Slower);
    }
}
