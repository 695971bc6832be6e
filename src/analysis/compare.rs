//! Comparing two result sets (`campaign compare RUN_A RUN_B`): change in median per
//! (case, stack), with a bootstrap CI and a verdict against a noise band.
//!
//! Owns the matching of runs across result sets, the verdict rule (faster / slower only when
//! the whole CI lies beyond ±threshold, else no change) and the Markdown/CSV renderings. Pure:
//! loading run dirs and exit codes belong to `commands::compare`.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::analysis::stats::bootstrap::{Bootstrap, Interval};
use crate::model::results::{ResultSet, RunStatus};
use crate::model::units::format_seconds;

/// The verdict on one (case, stack).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    Faster,
    Slower,
    NoChange,
    /// One side did not pass (or has no timed samples).
    NotComparable,
}

impl Change {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Change::Faster => "faster",
            Change::Slower => "slower",
            Change::NoChange => "no change",
            Change::NotComparable => "not comparable",
        }
    }
}

/// One (case, stack) present in both result sets.
#[derive(Debug, Clone, Serialize)]
pub struct CompareRow {
    pub(crate) case_id: String,
    pub(crate) stack: String,
    pub(crate) status_a: RunStatus,
    pub(crate) status_b: RunStatus,
    pub(crate) median_a: Option<f64>,
    pub(crate) median_b: Option<f64>,
    /// median_b / median_a − 1 (positive = B is slower).
    pub change: Option<f64>,
    pub(crate) ci: Option<Interval>,
    pub verdict: Change,
}

/// The whole comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub(crate) threshold: f64,
    pub rows: Vec<CompareRow>,
    /// (case, stack) present in only one of the two.
    pub(crate) only_a: Vec<(String, String)>,
    pub(crate) only_b: Vec<(String, String)>,
}

impl Comparison {
    /// Did any (case, stack) get slower beyond the threshold?
    pub fn regressed(&self) -> bool {
        self.rows.iter().any(|r| r.verdict == Change::Slower)
    }
}

/// Parse a threshold such as `5%` or `0.05` into a fraction.
pub(crate) fn parse_threshold(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let value = match t.strip_suffix('%') {
        Some(pct) => pct.trim().parse::<f64>().map(|v| v / 100.0),
        None => t.parse::<f64>(),
    };
    match value {
        Ok(v) if v.is_finite() && (0.0..1.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "--threshold `{text}`: expected a percentage such as `5%` or a fraction below 1 such as `0.05`"
        )),
    }
}

/// Compare `b` against `a` (a = before, b = after).
pub fn compare(a: &ResultSet, b: &ResultSet, threshold: f64, boot: &Bootstrap) -> Comparison {
    let index = |rs: &ResultSet| -> BTreeMap<(String, String), usize> {
        rs.runs
            .iter()
            .enumerate()
            .map(|(i, r)| ((r.case_id.clone(), r.stack.clone()), i))
            .collect()
    };
    let (ia, ib) = (index(a), index(b));
    let mut rows = Vec::new();
    for (key, &i) in &ia {
        let Some(&j) = ib.get(key) else { continue };
        let (ra, rb) = (&a.runs[i], &b.runs[j]);
        let sorted = |v: Vec<f64>| {
            let mut v = v;
            v.sort_by(|x, y| x.total_cmp(y));
            v
        };
        let (xa, xb) = (sorted(ra.timed_execute_s()), sorted(rb.timed_execute_s()));
        let med =
            |v: &[f64]| (!v.is_empty()).then(|| crate::analysis::stats::quantile_sorted(v, 0.5));
        let (ma, mb) = (med(&xa), med(&xb));
        let (change, ci, verdict) = match (ma, mb) {
            (Some(ma), Some(mb)) if ma > 0.0 => {
                let k = format!("{}/{}/compare", key.0, key.1);
                let r = boot.ratio_ci(&xb, &xa, &k);
                let ci = Interval {
                    lo: r.lo - 1.0,
                    hi: r.hi - 1.0,
                };
                let verdict = if ci.lo > threshold {
                    Change::Slower
                } else if ci.hi < -threshold {
                    Change::Faster
                } else {
                    Change::NoChange
                };
                (Some(mb / ma - 1.0), Some(ci), verdict)
            }
            _ => (None, None, Change::NotComparable),
        };
        rows.push(CompareRow {
            case_id: key.0.clone(),
            stack: key.1.clone(),
            status_a: ra.status,
            status_b: rb.status,
            median_a: ma,
            median_b: mb,
            change,
            ci,
            verdict,
        });
    }
    let only = |x: &BTreeMap<(String, String), usize>, y: &BTreeMap<(String, String), usize>| {
        x.keys().filter(|k| !y.contains_key(*k)).cloned().collect()
    };
    Comparison {
        threshold,
        rows,
        only_a: only(&ia, &ib),
        only_b: only(&ib, &ia),
    }
}

fn pct(v: f64) -> String {
    format!("{:+.1} %", v * 100.0)
}

fn opt_time(v: Option<f64>, status: RunStatus) -> String {
    match v {
        Some(v) => format_seconds(v),
        None => status.as_str().to_uppercase(),
    }
}

/// A Markdown table (GitHub-flavoured) with a one-line summary.
pub fn to_markdown(c: &Comparison, name_a: &str, name_b: &str) -> String {
    let mut out = format!(
        "Change in median execute time from A = `{name_a}` to B = `{name_b}` (95 % bootstrap CI; noise band ±{:.1} %)\n\n",
        c.threshold * 100.0
    );
    out.push_str("| case | stack | median A | median B | change [95 % CI] | verdict |\n");
    out.push_str("|---|---|---:|---:|---:|---|\n");
    for r in &c.rows {
        let change = match (r.change, r.ci) {
            (Some(ch), Some(ci)) => format!("{} [{}, {}]", pct(ch), pct(ci.lo), pct(ci.hi)),
            _ => "–".into(),
        };
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} |\n",
            r.case_id,
            r.stack,
            opt_time(r.median_a, r.status_a),
            opt_time(r.median_b, r.status_b),
            change,
            r.verdict.as_str()
        ));
    }
    for (label, list) in [("only in A", &c.only_a), ("only in B", &c.only_b)] {
        if !list.is_empty() {
            out.push_str(&format!("\n{} ({}):\n", label, list.len()));
            for (case, stack) in list {
                out.push_str(&format!("- `{case}` {stack}\n"));
            }
        }
    }
    let count = |v: Change| c.rows.iter().filter(|r| r.verdict == v).count();
    out.push_str(&format!(
        "\n{} slower, {} faster, {} no change, {} not comparable\n",
        count(Change::Slower),
        count(Change::Faster),
        count(Change::NoChange),
        count(Change::NotComparable)
    ));
    out
}

/// CSV with raw numbers (seconds and fractions).
pub(crate) fn to_csv(c: &Comparison) -> Result<String, csv::Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "case_id",
        "stack",
        "status_a",
        "status_b",
        "median_a_s",
        "median_b_s",
        "change",
        "ci_lo",
        "ci_hi",
        "verdict",
    ])?;
    let num = |v: Option<f64>| v.map(|x| format!("{x:.9}")).unwrap_or_default();
    for r in &c.rows {
        w.write_record([
            r.case_id.clone(),
            r.stack.clone(),
            r.status_a.to_string(),
            r.status_b.to_string(),
            num(r.median_a),
            num(r.median_b),
            num(r.change),
            num(r.ci.map(|c| c.lo)),
            num(r.ci.map(|c| c.hi)),
            r.verdict.as_str().to_string(),
        ])?;
    }
    let bytes = w.into_inner().map_err(|e| e.into_error())?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds() {
        assert_eq!(parse_threshold("5%"), Ok(0.05));
        assert_eq!(parse_threshold("0.1"), Ok(0.1));
        assert!(parse_threshold("five").is_err());
        assert!(parse_threshold("150%").is_err());
    }
}
