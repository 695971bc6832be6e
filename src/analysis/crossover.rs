//! Where the winner changes: the crossover map. Along each line of the sweep (the points that
//! differ only in message size: one op, P, dtype, layout) every pair that is judged at each
//! size — a stack against the baseline (the report's paired rows), and two variants of one
//! stack (judged here, repeat by repeat, as the regret rows are) — gets one outcome per size:
//! A faster, B faster, equivalent, undecided or not judged. Where the decided winner flips
//! between two sizes, the crossover lies between the last size one side won and the first size
//! the other won: that bracket is its interval (its width, hi/lo, the resolution a finer sweep
//! would improve), with a point estimate where the log ratio, interpolated in log size between
//! the two, crosses zero. Nothing is claimed where no side was decided. Pure: no files.

use crate::analysis::pairing::Paired;
use crate::analysis::run_stats::RunStats;
use crate::analysis::stats::bootstrap::Interval;
use crate::analysis::stats::memo::{Memo, Resampling};
use crate::analysis::verdict::{self, Change, Evidence};
use crate::model::case::Case;
use crate::model::results::ResultSet;

/// One pair at one size: B against A (`ratio = median(B) / median(A)`).
#[derive(Debug, Clone)]
pub(crate) struct Duel {
    /// The line of the sweep: the point with its size blanked ("allreduce P=2 fp32").
    pub(crate) line: String,
    pub(crate) a: String,
    pub(crate) b: String,
    pub(crate) count: u64,
    pub(crate) bytes: u64,
    pub(crate) ratio: f64,
    pub(crate) verdict: Change,
    pub(crate) why: Option<String>,
    pending: Option<Evidence>,
}

impl Duel {
    /// Judge this row with its own margins (`analysis::calibration`: its size class's band).
    pub(crate) fn calibrate(&mut self, margins: crate::analysis::verdict::Margins) {
        self.pending = self.pending.take().map(|e| e.margins(margins));
    }
}

/// What one size says of a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Outcome {
    AFaster,
    BFaster,
    Equivalent,
    Undecided,
    NotJudged,
}

impl Outcome {
    pub(crate) fn of(v: Change) -> Outcome {
        match v {
            Change::Faster => Outcome::BFaster,
            Change::Slower => Outcome::AFaster,
            Change::NoChange => Outcome::Equivalent,
            Change::NoClearDifference => Outcome::Undecided,
            Change::NotJudged | Change::NotComparable => Outcome::NotJudged,
        }
    }
}

/// One pair along one line: its outcome at each size, smallest first.
#[derive(Debug, Clone)]
pub(crate) struct MapRow {
    pub(crate) line: String,
    pub(crate) a: String,
    pub(crate) b: String,
    /// (count, bytes, outcome, ratio B/A).
    pub(crate) cells: Vec<(u64, u64, Outcome, f64)>,
}

/// A size where the winner of a pair changes.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Crossover {
    pub(crate) line: String,
    pub(crate) a: String,
    pub(crate) b: String,
    /// Who wins below and above it (`a` or `b`, the names).
    pub(crate) below: String,
    pub(crate) above: String,
    /// The bracket: the last size the first winner was decided, the first size the other was.
    pub(crate) lo_bytes: u64,
    pub(crate) hi_bytes: u64,
    /// Where the interpolated log ratio crosses zero.
    pub(crate) estimate_bytes: u64,
    /// `hi_bytes / lo_bytes`: how finely the sweep has placed it.
    pub(crate) resolution: f64,
}

/// The line of a case: its point with the size blanked, named for people.
fn line_of(case: &Case) -> String {
    let mut out = format!("{} P={} {}", case.op, case.p, case.dtype);
    if case.nodes > 1 {
        out.push_str(&format!(" {}×{}", case.nodes, case.ranks_per_node));
    }
    out
}

/// A side's name: the stack, with its variant where the stack ran several.
fn side_name(results: &ResultSet, st: &RunStats) -> String {
    let run = &results.runs[st.index];
    format!("{} {}", run.stack, run.case.variant)
}

/// Every pair of one stack's variants at one point (`stats`, `sides`: the point's statistics),
/// each left pending for [`judge`]: the first of the pair in the order the stack's variants
/// first appear is A.
pub(crate) fn variant_duels(
    results: &ResultSet,
    stats: &[RunStats],
    sides: &[Resampling],
    memo: &Memo,
) -> Vec<Duel> {
    let mut out = Vec::new();
    for (i, si) in stats.iter().enumerate() {
        for (j, sj) in stats.iter().enumerate().skip(i + 1) {
            let (ri, rj) = (&results.runs[si.index], &results.runs[sj.index]);
            if ri.stack != rj.stack || si.summary.median <= 0.0 || sj.summary.median <= 0.0 {
                continue;
            }
            out.push(duel(results, (si, sj), (&sides[i], &sides[j]), memo));
        }
    }
    out
}

/// B (`b`) against A (`a`), two variants of one stack at one point.
fn duel(
    results: &ResultSet,
    (a, b): (&RunStats, &RunStats),
    (ra, rb): (&Resampling, &Resampling),
    memo: &Memo,
) -> Duel {
    let too_few = verdict::too_few(&ra.repeats).or_else(|| verdict::too_few(&rb.repeats));
    let keys =
        |st: &RunStats| -> Vec<u32> { st.runs.iter().map(|&i| results.runs[i].repeat()).collect() };
    let pending = too_few.is_none().then(|| {
        let rounds = || {
            let wide = memo.ratio(rb, ra, verdict::family_level(1));
            Interval {
                lo: wide.lo - 1.0,
                hi: wide.hi - 1.0,
            }
        };
        crate::analysis::pairing::interleaved_evidence(
            results,
            (a, b),
            (&ra.repeats, &rb.repeats),
            (keys(a), keys(b)),
            rounds,
        )
    });
    let case = &results.runs[a.index].case;
    let (verdict, why) = match too_few {
        Some(why) => (Change::NotJudged, Some(why)),
        None => (Change::NoClearDifference, None),
    };
    Duel {
        line: line_of(case),
        a: side_name(results, a),
        b: side_name(results, b),
        count: case.count,
        bytes: case.n_bytes(),
        ratio: b.summary.median / a.summary.median,
        verdict,
        why,
        pending,
    }
}

/// Judge every pending duel together (one family of at least `fewest` rows, each counted
/// `looks` times: as `regret::judge`).
pub(crate) fn judge(
    duels: &mut [Duel],
    margins: verdict::Margins,
    (fewest, looks): (usize, usize),
) {
    let (at, evidence): (Vec<usize>, Vec<Evidence>) = (duels.iter_mut().enumerate())
        .filter_map(|(i, d)| d.pending.take().map(|e| (i, e)))
        .unzip();
    let m = evidence.len().max(fewest) * looks.max(1);
    let (_, verdicts) = verdict::judge_all_with(&evidence, m, margins);
    for (i, (v, why, _)) in at.into_iter().zip(verdicts) {
        (duels[i].verdict, duels[i].why) = (v, why);
    }
}

/// The paired rows (each stack against the baseline, already judged) as duels: A the
/// baseline's run, B the stack's.
pub(crate) fn paired_duels(results: &ResultSet, paired: &[Paired]) -> Vec<Duel> {
    let cases: std::collections::HashMap<&str, &Case> = (results.runs.iter())
        .map(|r| (r.base_case_id(), &r.case))
        .collect();
    paired
        .iter()
        .filter_map(|p| {
            let case = cases.get(p.case_id.as_str())?;
            let base = cases.get(p.baseline_case_id.as_str())?;
            Some(Duel {
                line: line_of(case),
                a: format!("{} {}", p.baseline, base.variant),
                b: format!("{} {}", p.stack, case.variant),
                count: case.count,
                bytes: case.n_bytes(),
                ratio: p.ratio,
                verdict: p.verdict,
                why: p.why.clone(),
                pending: None,
            })
        })
        .collect()
}

/// The map (one row per (line, pair), sizes in order) and the crossovers along it, from
/// judged duels; pairs seen at fewer than two sizes have no row.
pub(crate) fn map(duels: &[Duel]) -> (Vec<MapRow>, Vec<Crossover>) {
    let mut rows: Vec<MapRow> = Vec::new();
    for d in duels {
        let cell = (d.count, d.bytes, Outcome::of(d.verdict), d.ratio);
        match (rows.iter_mut()).find(|r| r.line == d.line && r.a == d.a && r.b == d.b) {
            Some(r) => r.cells.push(cell),
            None => rows.push(MapRow {
                line: d.line.clone(),
                a: d.a.clone(),
                b: d.b.clone(),
                cells: vec![cell],
            }),
        }
    }
    rows.retain(|r| r.cells.len() >= 2);
    for r in &mut rows {
        r.cells.sort_by_key(|c| c.0);
    }
    let crossovers = rows.iter().flat_map(crossovers_of).collect();
    (rows, crossovers)
}

/// The crossover whose bracket holds `bytes` strictly and is wider than `resolution`, if any:
/// where an added size can still place a crossover better (`[adapt] crossover`).
pub(crate) fn holding(crossovers: &[Crossover], bytes: u64, resolution: f64) -> Option<&Crossover> {
    (crossovers.iter())
        .find(|c| c.lo_bytes < bytes && bytes < c.hi_bytes && c.resolution > resolution)
}

/// The crossovers along one row: each flip of the decided winner.
pub(crate) fn crossovers_of(row: &MapRow) -> Vec<Crossover> {
    let mut out = Vec::new();
    let mut last: Option<(Outcome, u64, f64)> = None;
    for &(_, bytes, outcome, ratio) in &row.cells {
        if !matches!(outcome, Outcome::AFaster | Outcome::BFaster) {
            continue;
        }
        if let Some((was, lo, r_lo)) = last.filter(|(w, _, _)| *w != outcome) {
            let name = |o: Outcome| match o {
                Outcome::AFaster => row.a.clone(),
                _ => row.b.clone(),
            };
            out.push(Crossover {
                line: row.line.clone(),
                a: row.a.clone(),
                b: row.b.clone(),
                below: name(was),
                above: name(outcome),
                lo_bytes: lo,
                hi_bytes: bytes,
                estimate_bytes: interpolate((lo, r_lo), (bytes, ratio)),
                resolution: bytes as f64 / lo.max(1) as f64,
            });
        }
        last = Some((outcome, bytes, ratio));
    }
    out
}

/// Where `ln ratio`, linear in `ln bytes` between the two sizes, crosses zero (the midpoint in
/// log size when it does not between them).
fn interpolate((s1, r1): (u64, f64), (s2, r2): (u64, f64)) -> u64 {
    let (x1, x2) = ((s1.max(1) as f64).ln(), (s2.max(1) as f64).ln());
    let (y1, y2) = (r1.ln(), r2.ln());
    let t = if y1.is_finite() && y2.is_finite() && (y1 - y2).abs() > 0.0 {
        (y1 / (y1 - y2)).clamp(0.0, 1.0)
    } else {
        0.5
    };
    (x1 + t * (x2 - x1)).exp().round() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(cells: &[(u64, Outcome, f64)]) -> MapRow {
        MapRow {
            line: "allreduce P=2 fp32".into(),
            a: "host ring".into(),
            b: "mpi default".into(),
            cells: cells.iter().map(|&(b, o, r)| (b / 4, b, o, r)).collect(),
        }
    }

    /// B wins small sizes, A large ones, with an equivalent size between: one crossover,
    /// bracketed by the last size B was decided and the first size A was, its estimate where
    /// the interpolated ratio crosses 1.
    #[test]
    fn a_flip_of_the_decided_winner_is_one_crossover_in_its_bracket() {
        let r = row(&[
            (1024, Outcome::BFaster, 0.5),
            (4096, Outcome::BFaster, 0.8),
            (16384, Outcome::Equivalent, 1.0),
            (65536, Outcome::AFaster, 1.25),
        ]);
        let c = crossovers_of(&r);
        assert_eq!(c.len(), 1);
        let c = &c[0];
        assert_eq!((c.lo_bytes, c.hi_bytes), (4096, 65536));
        assert_eq!(
            (c.below.as_str(), c.above.as_str()),
            ("mpi default", "host ring")
        );
        assert!((c.resolution - 16.0).abs() < 1e-9);
        // ln 0.8 and ln 1.25 are opposite: the midpoint in log size, 16 KiB.
        assert_eq!(c.estimate_bytes, 16384);
    }

    /// Undecided and not-judged sizes never make a crossover; a winner that never changes has
    /// none; two flips are two crossovers.
    #[test]
    fn only_decided_flips_count() {
        let none = row(&[
            (1024, Outcome::AFaster, 1.3),
            (4096, Outcome::Undecided, 0.9),
            (16384, Outcome::NotJudged, 0.7),
            (65536, Outcome::AFaster, 1.2),
        ]);
        assert!(crossovers_of(&none).is_empty());
        let two = row(&[
            (1024, Outcome::AFaster, 1.3),
            (4096, Outcome::BFaster, 0.8),
            (16384, Outcome::AFaster, 1.1),
        ]);
        let c = crossovers_of(&two);
        assert_eq!(c.len(), 2);
        assert_eq!((c[1].lo_bytes, c[1].hi_bytes), (4096, 16384));
    }
}
