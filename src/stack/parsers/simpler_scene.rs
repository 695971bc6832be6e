//! Parser `simpler-scene`: simpler's scene tests run through pytest, one L3 class per process
//! (`python -m pytest <file>::<Class> --runtime … --level 3 --platform … --device … --manual
//! include --rounds N -s -v -rA`, the form upstream's conftest.py dispatcher gives its children).
//!
//! One process runs every round on one Worker; each rank's chip process prints one STRACE
//! `…runner_run.device_wall` span per round. Rounds are the spans grouped by (pid, inv), as
//! upstream's `strace_timing --rounds-table` groups them: each pid's spans in `inv` order, round
//! k = the k-th span of every pid, its `device_wall_s` = the slowest rank's `dur`. The first
//! `warmup` rounds are warmups (the engine labels them). The outcome is pytest's own, read by
//! the `pytest` parser (PASSED, FAILED with its `E   ` line, ERROR, skipped, exit 5 "no tests
//! ran" naming the node id); a golden mismatch (an `AssertionError`) marks every round not ok.
//! Ranks that printed a different number of rounds are a warning (the shortest count is kept).

use std::collections::BTreeMap;

use crate::model::output::OutputLine;
use crate::model::results::Sample;
use crate::model::stack::StackDef;
use crate::stack::parsers::strace::device_wall_span;
use crate::stack::parsers::{ParseContext, Parsed, Parser};

pub fn parser(def: &StackDef, ctx: &ParseContext) -> Box<dyn Parser> {
    Box::new(SceneParser {
        spans: BTreeMap::new(),
        outcome: crate::stack::parsers::pytest::parser(def, ctx),
        warnings: Vec::new(),
    })
}

struct SceneParser {
    /// pid → (inv, dur ns) in arrival order.
    spans: BTreeMap<u64, Vec<(u64, u64)>>,
    /// pytest's verdict on the class's test, from every line that is not a span.
    outcome: Box<dyn Parser>,
    warnings: Vec<String>,
}

impl Parser for SceneParser {
    fn feed(&mut self, line: &OutputLine) {
        match device_wall_span(&line.text) {
            Some(Ok(span)) => {
                let pid = span.pid.unwrap_or(0);
                let list = self.spans.entry(pid).or_default();
                let inv = span.inv.unwrap_or(list.len() as u64 + 1);
                list.push((inv, span.dur_ns));
            }
            Some(Err(w)) => self.warnings.push(w),
            None => self.outcome.feed(line),
        }
    }

    fn finish(self: Box<Self>) -> Parsed {
        let SceneParser {
            spans,
            outcome,
            warnings,
        } = *self;
        let verdict = outcome.finish();
        let mut out = Parsed {
            warnings,
            correctness: verdict.correctness,
            error: verdict.error,
            ..Parsed::default()
        };
        out.warnings.extend(verdict.warnings);
        let mut per_pid: Vec<Vec<u64>> = spans
            .into_values()
            .map(|mut v| {
                v.sort_by_key(|(inv, _)| *inv);
                v.into_iter().map(|(_, d)| d).collect()
            })
            .collect();
        per_pid.retain(|v| !v.is_empty());
        let rounds = per_pid.iter().map(Vec::len).min().unwrap_or(0);
        if per_pid.iter().any(|v| v.len() != rounds) {
            let counts: Vec<String> = per_pid.iter().map(|v| v.len().to_string()).collect();
            out.warnings.push(format!(
                "ranks printed different numbers of device_wall rounds ({}): kept {rounds}",
                counts.join(", ")
            ));
        }
        // pytest says only that the class's test failed, not in which round: a golden
        // mismatch makes every round not ok.
        let ok = out.correctness != Some(false);
        for k in 0..rounds {
            let dur = per_pid.iter().map(|v| v[k]).max().unwrap_or(0);
            out.samples.push(Sample {
                ok,
                device_wall_s: Some(dur as f64 / 1e9),
                ..Sample::default()
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::output::Stream;
    use std::time::Duration;

    fn parse(lines: &[String]) -> Parsed {
        let mut p = parser(&StackDef::default(), &ParseContext::default());
        for l in lines {
            p.feed(&OutputLine {
                stream: Stream::Stderr,
                at: Duration::ZERO,
                text: l.clone(),
            });
        }
        p.finish()
    }

    fn span(pid: u32, inv: u32, dur: u64) -> String {
        format!("[mono_ns=1][T0x1][TIMING] emit_host_span: [STRACE] v=1 pid={pid} tid={pid} inv={inv} hid=ab depth=2 name=chip.run.runner_run.device_wall ts=0 dur={dur} clk=dev")
    }

    const ID: &str = "tests/st/worker/collectives/allreduce/test_allreduce.py::TestAllreduceOnephaseP2::test_run";

    fn parse_argv(lines: &[String]) -> Parsed {
        let ctx = ParseContext {
            argv: vec![
                "python3".into(),
                "-m".into(),
                "pytest".into(),
                ID.trim_end_matches("::test_run").into(),
            ],
            ..ParseContext::default()
        };
        let mut p = parser(&StackDef::default(), &ctx);
        for l in lines {
            p.feed(&OutputLine {
                stream: Stream::Stderr,
                at: Duration::ZERO,
                text: l.clone(),
            });
        }
        p.finish()
    }

    #[test]
    fn rounds_are_spans_grouped_by_pid_and_inv() {
        // Two ranks, three rounds; rank 2's invs start elsewhere and arrive out of order
        // (pytest -v -s output of a2a3sim, spans on stderr).
        let mut lines = vec!["collecting ... collected 1 item".to_string(), String::new()];
        lines.extend([
            span(10, 1, 100),
            span(11, 7, 150),
            span(10, 2, 300),
            span(11, 9, 90),
            span(11, 8, 200),
            span(10, 3, 80),
        ]);
        lines.push(format!("{ID} PASSED"));
        lines.push(
            "==================================== PASSES ===================================="
                .into(),
        );
        lines.push(
            "=========================== short test summary info ============================"
                .into(),
        );
        lines.push(format!("PASSED {ID}"));
        lines.push(
            "============================== 1 passed in 12.56s =============================="
                .into(),
        );
        let p = parse(&lines);
        assert_eq!(p.correctness, Some(true));
        let dw: Vec<_> = p.samples.iter().map(|s| s.device_wall_s).collect();
        assert_eq!(dw, [Some(150e-9), Some(300e-9), Some(90e-9)]);
        assert!(p.samples.iter().all(|s| s.ok));
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    }

    #[test]
    fn a_golden_mismatch_fails_every_round_and_uneven_ranks_warn() {
        let mut lines = vec![span(10, 1, 100), span(11, 1, 100), span(10, 2, 100)];
        lines.push(format!("{ID} FAILED"));
        lines.push("E   AssertionError: golden mismatch on rank 1".into());
        lines.push(format!(
            "FAILED {ID} - AssertionError: golden mismatch on rank 1"
        ));
        lines.push(
            "============================== 1 failed in 9.10s ==============================="
                .into(),
        );
        let p = parse(&lines);
        assert_eq!(p.samples.len(), 1);
        assert!(!p.samples[0].ok);
        assert_eq!(p.correctness, Some(false));
        assert!(
            p.error
                .as_deref()
                .unwrap()
                .contains("golden mismatch on rank 1"),
            "{:?}",
            p.error
        );
        assert!(p
            .warnings
            .iter()
            .any(|w| w.contains("different numbers of device_wall rounds (2, 1)")));
    }

    #[test]
    fn no_test_ran_names_the_selection() {
        let lines = vec![
            "collecting ... collected 0 items".to_string(),
            "============================ no tests ran in 1.80s ============================="
                .into(),
        ];
        let p = parse_argv(&lines);
        assert!(p.samples.is_empty());
        assert_ne!(p.correctness, Some(true));
        let e = p.error.unwrap_or_default();
        assert!(e.contains("TestAllreduceOnephaseP2"), "{e}");
    }
}
