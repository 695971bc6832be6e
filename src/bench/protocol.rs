//! The native stack protocol's output lines, as the `host` stack writes them.
//!
//! Owns the exact text of `CAMPAIGN_SAMPLE {json}` (one per round, as it ends) and
//! `CAMPAIGN_DONE {json}` (once, last), specified in docs/stack-protocol.md. Lines are
//! serialised straight into the writer (no intermediate JSON tree), one line per call, and the
//! caller flushes. It must not decide pass/fail or parse anything.

use std::io::{self, Write};

use serde::Serialize;

use super::{Outcome, RoundReport};

/// Prefix of a per-round line (a space separates it from the JSON object).
pub(crate) const SAMPLE_PREFIX: &str = "CAMPAIGN_SAMPLE";
/// Prefix of the final verdict line.
pub(crate) const DONE_PREFIX: &str = "CAMPAIGN_DONE";

#[derive(Serialize)]
struct SampleLine<'a> {
    phase: &'static str,
    round: u32,
    execute_s: f64,
    per_rank_execute_s: &'a [f64],
    #[serde(skip_serializing_if = "Option::is_none")]
    setup_s: Option<f64>,
    wall_s: f64,
    #[serde(skip_serializing_if = "Phases::is_empty")]
    phases: Phases,
    ok: bool,
    /// False when the output of this round was not compared with the golden.
    checked: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// Named phases in seconds, outside `execute_s`.
#[derive(Serialize)]
struct Phases {
    #[serde(skip_serializing_if = "Option::is_none")]
    alloc: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    check: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    release: Option<f64>,
}

impl Phases {
    fn is_empty(&self) -> bool {
        self.alloc.is_none() && self.check.is_none() && self.release.is_none()
    }
}

#[derive(Serialize)]
struct DoneLine<'a> {
    correctness: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timed_rounds: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    checked_rounds: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    failed_rounds: Option<u32>,
}

fn line<W: Write, S: Serialize>(w: &mut W, prefix: &str, body: &S) -> io::Result<()> {
    w.write_all(prefix.as_bytes())?;
    w.write_all(b" ")?;
    serde_json::to_writer(&mut *w, body).map_err(io::Error::other)?;
    w.write_all(b"\n")
}

/// Write one round's `CAMPAIGN_SAMPLE` line.
pub(crate) fn write_sample<W: Write>(w: &mut W, r: &RoundReport) -> io::Result<()> {
    let body = SampleLine {
        phase: if r.timed { "timed" } else { "warmup" },
        round: r.round,
        execute_s: r.execute_s,
        per_rank_execute_s: &r.per_rank_execute_s,
        setup_s: r.setup_s,
        wall_s: r.wall_s,
        phases: Phases {
            alloc: r.alloc_s,
            check: r.check_s,
            release: r.release_s,
        },
        ok: r.ok,
        checked: r.checked,
        error: r.failure(),
    };
    line(w, SAMPLE_PREFIX, &body)
}

/// Write the `CAMPAIGN_DONE` line of a run that completed its rounds.
pub(crate) fn write_done<W: Write>(w: &mut W, outcome: &Outcome) -> io::Result<()> {
    let error = outcome.error();
    let body = DoneLine {
        correctness: if outcome.passed() { "pass" } else { "fail" },
        error: error.as_deref(),
        timed_rounds: Some(outcome.timed_rounds),
        checked_rounds: Some(outcome.checked_rounds),
        failed_rounds: Some(outcome.failed_rounds),
    };
    line(w, DONE_PREFIX, &body)
}

/// Write the `CAMPAIGN_DONE` line of a run that could not start (bad case file, bad option).
pub(crate) fn write_done_error<W: Write>(w: &mut W, error: &str) -> io::Result<()> {
    let body = DoneLine {
        correctness: "fail",
        error: Some(error),
        timed_rounds: None,
        checked_rounds: None,
        failed_rounds: None,
    };
    line(w, DONE_PREFIX, &body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{Mismatch, Wrong};
    use serde_json::Value;

    fn parse(text: &str, prefix: &str) -> Value {
        let body = text
            .strip_suffix('\n')
            .and_then(|t| t.strip_prefix(prefix))
            .and_then(|t| t.strip_prefix(' '))
            .unwrap_or_else(|| panic!("not a {prefix} line: {text:?}"));
        serde_json::from_str(body).unwrap()
    }

    #[test]
    fn sample_line_has_the_documented_fields() {
        let r = RoundReport {
            round: 1,
            timed: false,
            phase_round: 1,
            execute_s: 0.25,
            per_rank_execute_s: vec![0.125, 0.25],
            setup_s: Some(0.5),
            wall_s: 1.0,
            ok: true,
            p: 2,
            count: 4,
            ..RoundReport::default()
        };
        let mut out = Vec::new();
        write_sample(&mut out, &r).unwrap();
        let v = parse(std::str::from_utf8(&out).unwrap(), SAMPLE_PREFIX);
        assert_eq!(
            v,
            serde_json::json!({"phase": "warmup", "round": 1, "execute_s": 0.25,
                "per_rank_execute_s": [0.125, 0.25], "setup_s": 0.5, "wall_s": 1.0, "ok": true,
                "checked": false})
        );
    }

    #[test]
    fn failed_sample_and_done_carry_the_mismatch() {
        let r = RoundReport {
            round: 5,
            timed: true,
            checked: true,
            phase_round: 2,
            ok: false,
            check_s: Some(0.001),
            mismatch: Some(Mismatch {
                rank: 1,
                first: Wrong {
                    index: 3,
                    value: -1003.0,
                    expected: 106.0,
                },
                wrong_on_rank: 1,
                wrong_total: 1,
                ranks_wrong: 1,
            }),
            p: 2,
            count: 8,
            ..RoundReport::default()
        };
        let mut out = Vec::new();
        write_sample(&mut out, &r).unwrap();
        let v = parse(std::str::from_utf8(&out).unwrap(), SAMPLE_PREFIX);
        assert_eq!(v["ok"], Value::Bool(false));
        assert_eq!(v["phase"], "timed");
        assert_eq!(v["checked"], true);
        assert_eq!(v["phases"]["check"], 0.001);
        let err = v["error"].as_str().unwrap();
        assert!(
            err.contains("rank 1 index 3: got -1003, expected 106"),
            "{err}"
        );
        assert!(err.contains("#wrong 1 of 8"), "{err}");

        let outcome = Outcome {
            timed_rounds: 4,
            rounds: 5,
            checked_rounds: 2,
            failed_rounds: 1,
            wrong_total: 1,
            first_failure: r.failure(),
        };
        let mut out = Vec::new();
        write_done(&mut out, &outcome).unwrap();
        let v = parse(std::str::from_utf8(&out).unwrap(), DONE_PREFIX);
        assert_eq!(v["correctness"], "fail");
        assert!(v["error"]
            .as_str()
            .unwrap()
            .ends_with("1 of 2 checked rounds failed, 1 wrong elements in all; 5 rounds run"));
        assert_eq!(v["checked_rounds"], 2);
    }

    #[test]
    fn passing_done_has_no_error() {
        let mut out = Vec::new();
        let outcome = Outcome {
            timed_rounds: 3,
            checked_rounds: 2,
            ..Outcome::default()
        };
        write_done(&mut out, &outcome).unwrap();
        let v = parse(std::str::from_utf8(&out).unwrap(), DONE_PREFIX);
        assert_eq!(
            v,
            serde_json::json!({"correctness": "pass", "timed_rounds": 3, "checked_rounds": 2,
                "failed_rounds": 0})
        );
    }
}
