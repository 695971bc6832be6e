//! `campaign compare --format junit | summary`: the comparison as CI systems read it — one
//! JUnit test case per (case, stack) row (slower is a failure carrying the numbers; a row that
//! cannot be judged is skipped with why) and a GitHub-style job summary in Markdown (the
//! verdict first, the rows that moved, the whole table folded). Pure text.

use super::{evidence, opt_time, pct, Change, CompareRow, Comparison};
use crate::analysis::junit::{self, Outcome, TestCase};

/// The numbers of a row in one line: both medians, evidence, the change and its intervals.
fn numbers(r: &CompareRow) -> String {
    let mut text = format!(
        "median A {} ({}), median B {} ({})",
        opt_time(&r.a),
        evidence(&r.a),
        opt_time(&r.b),
        evidence(&r.b)
    );
    if let Some(ch) = r.change {
        text.push_str(&format!(", change {}", pct(ch)));
        if let Some(ci) = r.ci {
            text.push_str(&format!(" [95 % CI {}, {}]", pct(ci.lo), pct(ci.hi)));
        }
        if let Some(v) = r.verdict_ci {
            text.push_str(&format!(" (verdict interval {}, {})", pct(v.lo), pct(v.hi)));
        }
    }
    text.push_str(&format!(" on {}", r.metric));
    text
}

/// JUnit XML: suite `campaign compare`, one case per row (classname the stack, name the case).
pub(crate) fn to_junit(c: &Comparison, name_a: &str, name_b: &str) -> String {
    let cases: Vec<TestCase> = c
        .rows
        .iter()
        .map(|r| {
            let nums = numbers(r);
            let outcome = match r.verdict {
                Change::Slower => Outcome::Failed {
                    message: format!(
                        "slower: {} beyond the ±{:.1} % noise band",
                        r.change.map(pct).unwrap_or_else(|| "–".into()),
                        c.threshold * 100.0
                    ),
                    detail: format!("{}: {nums}", r.case_id),
                },
                Change::NotJudged | Change::NotComparable => Outcome::Skipped {
                    message: match &r.why {
                        Some(why) => format!("{}: {why}", r.verdict.as_str()),
                        None => r.verdict.as_str().to_string(),
                    },
                },
                _ => Outcome::Passed,
            };
            let output = match &r.why {
                Some(why) => format!("{}: {nums} ({why})", r.verdict.as_str()),
                None => format!("{}: {nums}", r.verdict.as_str()),
            };
            TestCase {
                classname: format!("campaign.compare.{}", r.stack),
                name: r.case_id.clone(),
                outcome,
                output,
            }
        })
        .collect();
    junit::document(
        "campaign compare",
        &[
            ("run_a", name_a.to_string()),
            ("run_b", name_b.to_string()),
            ("noise_band", format!("{:.1} %", c.threshold * 100.0)),
            ("equivalence", format!("{:.1} %", c.equivalence * 100.0)),
            ("verdict_level", format!("{:.4} %", c.verdict_level * 100.0)),
            ("judged", format!("{} of {} rows", c.judged, c.rows.len())),
        ],
        &cases,
    )
}

/// A Markdown job summary (`>> $GITHUB_STEP_SUMMARY`): the outcome in its heading, the counts,
/// the slower and faster rows with their numbers, then the whole comparison folded away.
pub(crate) fn to_summary(c: &Comparison, name_a: &str, name_b: &str) -> String {
    let slower = c.count(Change::Slower);
    // Never a green tick over nothing checked: a comparison that judged no row says so.
    let mut out = if slower > 0 {
        format!("## ❌ campaign compare: {slower} (case, stack) slower\n\n")
    } else if c.nothing_judged() {
        format!(
            "## ⚠️ campaign compare: nothing judged ({}; not a pass)\n\n",
            c.judged_text()
        )
    } else {
        format!(
            "## ✅ campaign compare: nothing slower ({})\n\n",
            c.judged_text()
        )
    };
    out.push_str(&format!(
        "A = `{name_a}` → B = `{name_b}`; noise band ±{:.1} %, {} rows, {}.\n\n",
        c.threshold * 100.0,
        c.rows.len(),
        c.judged_text()
    ));
    out.push_str("| verdict | rows |\n|---|---:|\n");
    for v in [
        Change::Slower,
        Change::Faster,
        Change::NoChange,
        Change::NoClearDifference,
        Change::NotJudged,
        Change::NotComparable,
    ] {
        out.push_str(&format!("| {} | {} |\n", v.as_str(), c.count(v)));
    }
    for (title, v) in [("Slower", Change::Slower), ("Faster", Change::Faster)] {
        let rows: Vec<&CompareRow> = c.rows.iter().filter(|r| r.verdict == v).collect();
        if rows.is_empty() {
            continue;
        }
        out.push_str(&format!(
            "\n### {title} ({})\n\n| case | stack | median A | median B | change [95 % CI] |\n|---|---|---:|---:|---:|\n",
            rows.len()
        ));
        for r in rows {
            out.push_str(&format!(
                "| `{}` | {} | {} | {} | {} |\n",
                crate::model::text::md_cell(&r.case_id),
                crate::model::text::md_cell(&r.stack),
                opt_time(&r.a),
                opt_time(&r.b),
                match (r.change, r.ci) {
                    (Some(ch), Some(ci)) => format!("{} [{}, {}]", pct(ch), pct(ci.lo), pct(ci.hi)),
                    _ => "–".into(),
                }
            ));
        }
    }
    out.push_str("\n<details><summary>Every row and how verdicts are reached</summary>\n\n");
    out.push_str(&super::to_markdown(c, name_a, name_b));
    out.push_str("\n</details>\n");
    out
}
