//! Decisions a campaign takes while it runs: whether an optional repeat is needed (sequential
//! repeats, `[run] repeats = { min, max }`) and whether the device-time budget (`[run]
//! budget`) still lets runs start.
//!
//! A point's optional repeats are decided at the looks of `analysis::sequential`: when the
//! first run past a look is ready (the step graph chains a point's runs, so every earlier
//! repeat of the point has ended), its rows — each stack against the baseline, each stack's
//! default against its best other variant — are judged exactly as the report judges them
//! (`report::summary::Analysis`, with the whole campaign's family and the looks counted), and
//! repeats continue while any row is unsettled. A decision is journaled before anything it
//! lets run starts (`store::journal`, `decision` lines) and a resumed campaign replays it
//! instead of deciding again, so it ends with the same runs, each once.
//!
//! The budget is the run time the campaign's runs may hold their devices, summed over runs
//! (each attempt from its start to its end; a resume counts the kept runs too). Once spent,
//! no run starts and the ones left are spared. It must not start, order or record runs: the
//! scheduler asks, the dispatcher journals.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use crate::analysis::sequential;
use crate::analysis::stats::Bootstrap;
use crate::model::case::Case;
use crate::model::results::{Metric, Provenance, ResultSet, RunResult};
use crate::report::summary::{Analysis, Judging};

/// What decides a point: the rule's settings, fixed for the campaign.
pub(crate) struct Rule {
    /// Looks of the sequential repeats (one look: a fixed count, nothing to decide).
    pub(crate) looks: Vec<u32>,
    /// The stack others are paired with (`[report] baseline`, else the first stack run).
    pub(crate) baseline: Option<String>,
    pub(crate) judging: Judging<'static>,
    /// This machine's calibration (`campaign calibrate`), as the report will judge with it.
    pub(crate) calibration: Option<crate::analysis::calibration::Calibration>,
    pub(crate) bootstrap: Bootstrap,
    /// What the report's result set would carry: provenance (each stack's default variant)
    /// and the stacks' metrics.
    pub(crate) provenance: Provenance,
    pub(crate) metrics: BTreeMap<String, Metric>,
    /// `[adapt] resolution`: an added size is needed while a crossover's bracket is wider.
    pub(crate) resolution: f64,
}

/// One decision on a point: `None` runs its next repeats, `Some(reason)` spares them.
pub(crate) type Verdict = Option<String>;

/// The campaign's decisions and the results they rest on.
pub(crate) struct Decider {
    rule: Rule,
    /// Per run: its point and its repeat.
    at: Vec<(u32, u32)>,
    /// Per point: its id, as the journal names it.
    point_ids: Vec<String>,
    /// Results of each point's ended runs, kept while the point has runs to come.
    held: HashMap<u32, Vec<RunResult>>,
    /// Runs of each point not ended yet.
    left: HashMap<u32, usize>,
    /// Decisions taken or replayed, by (point, look).
    taken: HashMap<(u32, u32), Verdict>,
    /// Decisions an earlier session journaled, by (point id, look).
    replayed: HashMap<(String, u32), Verdict>,
    /// Points whose repeats were stopped, with why.
    stopped: HashMap<u32, String>,
    /// Points of sizes `[adapt]` may add, with the points they wait for; per point its line
    /// and its bytes; how many added sizes were run.
    adaptive: BTreeMap<u32, (u32, u32)>,
    line_ids: Vec<String>,
    bytes: Vec<u64>,
    sizes_added: usize,
    sizes_refused: usize,
    /// The budget and the run time spent so far.
    budget: Option<Duration>,
    used: Duration,
}

/// A new decision to journal: the point's id, the look, what was decided.
pub(crate) struct Journaled {
    pub(crate) point: String,
    pub(crate) look: u32,
    pub(crate) verdict: Verdict,
    /// Why the point goes on (its unsettled rows), when it does.
    pub(crate) why_on: String,
}

impl Decider {
    /// `runs`: each planned run's (case index, run id); `points`: each case's point index.
    pub(crate) fn new(
        rule: Rule,
        cases: &[Case],
        points: &[u32],
        runs: impl Iterator<Item = (usize, String)>,
        (budget, adaptive): (Option<Duration>, BTreeMap<u32, (u32, u32)>),
    ) -> Decider {
        let mut at = Vec::new();
        let mut point_ids: Vec<String> = Vec::new();
        let (mut line_ids, mut bytes) = (Vec::new(), Vec::new());
        let mut left: HashMap<u32, usize> = HashMap::new();
        for (ci, run_id) in runs {
            let (case_id, repeat) = crate::model::results::split_run_id(&run_id);
            let point = points[ci];
            let p = point as usize;
            if point_ids.len() <= p {
                point_ids.resize(p + 1, String::new());
                line_ids.resize(p + 1, String::new());
                bytes.resize(p + 1, 0);
            }
            if point_ids[p].is_empty() {
                point_ids[p] = cases[ci].point_id(case_id);
                if !adaptive.is_empty() {
                    line_ids[p] = crate::engine::adapt::line_id(&cases[ci]);
                }
                bytes[p] = cases[ci].n_bytes();
            }
            *left.entry(point).or_default() += 1;
            at.push((point, repeat));
        }
        Decider {
            rule,
            at,
            point_ids,
            held: HashMap::new(),
            left,
            taken: HashMap::new(),
            replayed: HashMap::new(),
            stopped: HashMap::new(),
            adaptive,
            line_ids,
            bytes,
            sizes_added: 0,
            sizes_refused: 0,
            budget,
            used: Duration::ZERO,
        }
    }

    /// Whether any optional repeat may be decided (more than one look).
    pub(crate) fn sequential(&self) -> bool {
        self.rule.looks.len() > 1
    }

    /// Decisions an earlier session of this run dir journaled.
    pub(crate) fn replay(&mut self, decisions: impl IntoIterator<Item = (String, u32, Verdict)>) {
        self.replayed = decisions.into_iter().map(|(p, l, v)| ((p, l), v)).collect();
        // A point an earlier session stopped stays stopped even when none of the runs that
        // decision spared is asked about again (they are kept from their bundles): its runs
        // left are spared for the same reason, not judged at a later look.
        let index: HashMap<&str, u32> = (self.point_ids.iter().enumerate())
            .map(|(i, id)| (id.as_str(), i as u32))
            .collect();
        for ((id, _), v) in &self.replayed {
            if let (Some(why), Some(&p)) = (v, index.get(id.as_str())) {
                self.stopped.insert(p, why.clone());
            }
        }
    }

    /// Run `run` ended (this session, or kept from an earlier one) with `result`.
    pub(crate) fn ended(&mut self, run: usize, result: &RunResult) {
        let Some(&(point, _)) = self.at.get(run) else {
            return;
        };
        let left = self.left.entry(point).or_default();
        *left = left.saturating_sub(1);
        if !self.adaptive.is_empty() {
            // Added sizes are judged on everything their line measured: every result is kept.
            self.held.entry(point).or_default().push(result.clone());
        } else if *left == 0 {
            self.held.remove(&point);
        } else if self.sequential() {
            self.held.entry(point).or_default().push(result.clone());
        }
    }

    /// An attempt that executed took `spent` of run time.
    pub(crate) fn spent(&mut self, result: &RunResult) {
        // Only a budget needs the run time (two timestamps parsed per attempt).
        if self.budget.is_some() {
            self.used += run_time(result);
        }
    }

    /// Whether anything is decided while the campaign runs (a note is worth showing).
    pub(crate) fn active(&self) -> bool {
        self.budget.is_some() || self.sequential() || !self.adaptive.is_empty()
    }

    /// Why no run may start any more, once the budget is spent.
    pub(crate) fn exhausted(&self) -> Option<String> {
        let budget = self.budget?;
        (self.used >= budget).then(|| {
            format!(
                "{}{} was spent ({} of run time used)",
                crate::model::results::SPARED_BUDGET,
                humantime::format_duration(budget),
                humantime::format_duration(Duration::from_secs(self.used.as_secs()))
            )
        })
    }

    /// The progress bar's note: the budget used and the points decided so far.
    pub(crate) fn note(&self) -> String {
        let mut parts = Vec::new();
        if let Some(b) = self.budget {
            parts.push(format!(
                "budget {} of {}",
                humantime::format_duration(Duration::from_secs(self.used.as_secs())),
                humantime::format_duration(b)
            ));
        }
        if self.sequential() {
            let early = self.stopped.len() - self.sizes_refused;
            parts.push(format!("{early} point(s) decided early"));
        }
        if !self.adaptive.is_empty() {
            parts.push(format!("{} size(s) added", self.sizes_added));
        }
        parts.join(", ")
    }

    /// Whether optional run `run` is needed, and the decision to journal when it was taken
    /// now (not memoised, not replayed).
    pub(crate) fn decide(&mut self, run: usize) -> (Verdict, Option<Journaled>) {
        let Some(&(point, repeat)) = self.at.get(run) else {
            return (None, None);
        };
        // A point stopped (not needed, or decided at an earlier look) stays stopped: its later
        // runs are spared for the same reason, with no new judgement.
        if let Some(why) = self.stopped.get(&point) {
            return (Some(why.clone()), None);
        }
        // Look 0: whether an added size is needed at all, before any of its runs.
        let look = match self.adaptive.contains_key(&point) && !self.taken.contains_key(&(point, 0))
        {
            true => 0,
            false => match sequential::look_before(&self.rule.looks, repeat) {
                Some(look) => look,
                None => return (None, None),
            },
        };
        if let Some(v) = self.taken.get(&(point, look)) {
            return (v.clone(), None);
        }
        let id = self.point_ids[point as usize].clone();
        if let Some(v) = self.replayed.get(&(id.clone(), look)).cloned() {
            self.record(point, look, &v);
            return (v, None);
        }
        let (verdict, why_on) = match look {
            0 => self.judge_size(point),
            _ => self.judge(point, look),
        };
        self.record(point, look, &verdict);
        let journaled = Journaled {
            point: id,
            look,
            verdict: verdict.clone(),
            why_on,
        };
        (verdict, Some(journaled))
    }

    /// Keep decision `v` of `point` at `look`.
    fn record(&mut self, point: u32, look: u32, v: &Verdict) {
        self.taken.insert((point, look), v.clone());
        match v {
            Some(why) => {
                self.stopped.insert(point, why.clone());
                self.sizes_refused += usize::from(look == 0);
            }
            None if look == 0 => self.sizes_added += 1,
            None => {}
        }
    }

    /// Whether added size `point` is needed: a pair's crossover bracket, from everything its
    /// line has measured so far, holds it and is wider than the resolution.
    fn judge_size(&self, point: u32) -> (Verdict, String) {
        let line = &self.line_ids[point as usize];
        let runs: Vec<RunResult> = (self.held.iter())
            .filter(|(p, _)| self.line_ids[**p as usize] == *line)
            .flat_map(|(_, rs)| rs.iter().cloned())
            .collect();
        let analysis = self.analyse(runs);
        let bytes = self.bytes[point as usize];
        let resolution = self.rule.resolution;
        match crate::analysis::crossover::holding(&analysis.crossovers, bytes, resolution) {
            Some(c) => (
                None,
                format!(
                    "size needed: {} against {} changes winner between {} and {} bytes (×{:.2} wide, resolution ×{resolution})",
                    c.a, c.b, c.lo_bytes, c.hi_bytes, c.resolution
                ),
            ),
            None => (
                Some(format!(
                    "{} around {bytes} bytes by more than the resolution ×{resolution}",
                    crate::model::results::SPARED_SIZE
                )),
                String::new(),
            ),
        }
    }

    /// The report's analysis of `runs` (part of the campaign), judged with the campaign's rule.
    fn analyse(&self, runs: Vec<RunResult>) -> Analysis {
        let set = ResultSet {
            campaign: String::new(),
            timestamp: String::new(),
            provenance: self.rule.provenance.clone(),
            runs,
            quarantined: BTreeMap::new(),
            metrics: self.rule.metrics.clone(),
        };
        Analysis::remembering(
            &set,
            self.rule.baseline.as_deref(),
            self.rule.bootstrap,
            Judging {
                calibration: self.rule.calibration.as_ref(),
                ..self.rule.judging
            },
            &crate::analysis::stats::memo::Memo::default(),
        )
    }

    /// Judge the rows of `point` on its repeats up to `look`: spare the rest when every row is
    /// settled (with the reason), else go on (with the unsettled rows named).
    fn judge(&self, point: u32, look: u32) -> (Verdict, String) {
        let runs: Vec<RunResult> = (self.held.get(&point).into_iter().flatten())
            .filter(|r| r.repeat() <= look)
            .cloned()
            .collect();
        let analysis = self.analyse(runs);
        let rows: Vec<(String, crate::analysis::verdict::Change, Option<String>)> =
            (analysis.paired.iter())
                .map(|p| {
                    let name = format!("{} against {}", p.stack, p.baseline_name());
                    (name, p.verdict, p.why.clone())
                })
                .chain(analysis.regret.iter().map(|r| {
                    let name = format!("{} default against {}", r.stack, r.best);
                    (name, r.verdict, r.why.clone())
                }))
                .collect();
        let open: Vec<&str> = (rows.iter())
            .filter(|(_, v, why)| !sequential::settled(*v, why.as_deref()))
            .map(|(name, _, _)| name.as_str())
            .collect();
        if rows.is_empty() {
            return (
                Some(format!(
                    "not needed: nothing is compared at this point (decided after {look} repeats)"
                )),
                String::new(),
            );
        }
        if open.is_empty() {
            let words = verdict_counts(rows.iter().map(|(_, v, _)| *v));
            return (
                Some(format!(
                    "not needed: every row at this point was decided after {look} repeats ({words})"
                )),
                String::new(),
            );
        }
        (
            None,
            format!("undecided after {look} repeats: {}", open.join("; ")),
        )
    }
}

/// How many paired rows (a stack's variant against the baseline at a point the baseline runs)
/// and regret rows (a stack with two or more variants at a point) the whole campaign plans:
/// the families a point's verdicts are judged in, as the report will judge them. `runs`:
/// each planned run's case index and stack.
pub(crate) fn planned_families<'a>(
    cases: &[Case],
    points: &[u32],
    runs: impl Iterator<Item = (usize, &'a str)>,
    baseline: Option<&str>,
) -> (usize, usize) {
    use std::collections::BTreeSet;
    let mut sides: BTreeMap<u32, BTreeSet<(&'a str, crate::model::case::Variant)>> =
        BTreeMap::new();
    for (ci, stack) in runs {
        sides
            .entry(points[ci])
            .or_default()
            .insert((stack, cases[ci].variant));
    }
    let (mut paired, mut regret) = (0, 0);
    for at in sides.values() {
        if let Some(b) = baseline.filter(|b| at.iter().any(|(s, _)| s == b)) {
            paired += at.iter().filter(|(s, _)| *s != b).count();
        }
        let stacks: BTreeSet<&str> = at.iter().map(|(s, _)| *s).collect();
        regret += (stacks.iter())
            .filter(|s| at.iter().filter(|(x, _)| x == *s).count() >= 2)
            .count();
    }
    (paired, regret)
}

/// "2 slower, 1 equivalent": how many rows got each verdict word.
fn verdict_counts(verdicts: impl Iterator<Item = crate::analysis::verdict::Change>) -> String {
    let mut counts: Vec<(&'static str, usize)> = Vec::new();
    for v in verdicts {
        let word = v.as_str();
        match counts.iter_mut().find(|(w, _)| *w == word) {
            Some((_, n)) => *n += 1,
            None => counts.push((word, 1)),
        }
    }
    let parts: Vec<String> = counts.iter().map(|(w, n)| format!("{n} {w}")).collect();
    parts.join(", ")
}

/// The run time of an attempt, from its recorded start and end.
pub(crate) fn run_time(result: &RunResult) -> Duration {
    let parse = |t: &Option<String>| {
        t.as_deref()
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
    };
    match (parse(&result.started), parse(&result.ended)) {
        (Some(a), Some(b)) => (b - a).to_std().unwrap_or_default(),
        _ => Duration::ZERO,
    }
}
