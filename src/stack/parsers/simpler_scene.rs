//! Parser `simpler-scene`: simpler's scene tests run standalone (`python <test file> -p … -d …
//! --case <Class>:: --manual include --rounds N`, simpler_setup/scene_test.py `run_module`).
//!
//! One process runs every round on one Worker; each rank's chip process prints one STRACE
//! `…runner_run.device_wall` span per round. Rounds are the spans grouped by (pid, inv), as
//! upstream's `strace_timing --rounds-table` groups them: each pid's spans in `inv` order, round
//! k = the k-th span of every pid, its `device_wall_s` = the slowest rank's `dur`. The first
//! `warmup` rounds are warmups (the engine labels them). Outcome: `  Class::case PASSED` is
//! success, `  Class::case FAILED: <why>` a failure with that reason (judged with the exit code
//! 1 upstream gives it, not as one round's golden mismatch); ranks that printed a
//! different number of rounds are a warning (the shortest count is kept).

use std::collections::BTreeMap;

use crate::model::output::OutputLine;
use crate::model::results::Sample;
use crate::model::stack::StackDef;
use crate::stack::parsers::strace::device_wall_span;
use crate::stack::parsers::{ParseContext, Parsed, Parser};

pub fn parser(_def: &StackDef, _ctx: &ParseContext) -> Box<dyn Parser> {
    Box::new(SceneParser::default())
}

#[derive(Default)]
struct SceneParser {
    /// pid → (inv, dur ns) in arrival order.
    spans: BTreeMap<u64, Vec<(u64, u64)>>,
    passed: u32,
    failed: Option<String>,
    warnings: Vec<String>,
}

impl Parser for SceneParser {
    fn feed(&mut self, line: &OutputLine) {
        let text = line.text.trim();
        match device_wall_span(&line.text) {
            Some(Ok(span)) => {
                let pid = span.pid.unwrap_or(0);
                let list = self.spans.entry(pid).or_default();
                let inv = span.inv.unwrap_or(list.len() as u64 + 1);
                list.push((inv, span.dur_ns));
                return;
            }
            Some(Err(w)) => {
                self.warnings.push(w);
                return;
            }
            None => {}
        }
        if text.contains("::") && !text.contains(' ') {
            return;
        }
        if let Some((label, why)) = text.split_once(" FAILED: ") {
            if label.contains("::") {
                self.failed
                    .get_or_insert_with(|| format!("scene test {label} FAILED: {why}"));
            }
        } else if text.ends_with(" PASSED") && text.contains("::") {
            self.passed += 1;
        }
    }

    fn finish(self: Box<Self>) -> Parsed {
        let SceneParser {
            spans,
            passed,
            failed,
            warnings,
        } = *self;
        let mut out = Parsed {
            warnings,
            ..Parsed::default()
        };
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
        // A FAILED case is judged by its reason and exit code (1), not as a golden mismatch of
        // one round: upstream says only that the case raised.
        for k in 0..rounds {
            let dur = per_pid.iter().map(|v| v[k]).max().unwrap_or(0);
            out.samples.push(Sample {
                ok: true,
                device_wall_s: Some(dur as f64 / 1e9),
                ..Sample::default()
            });
        }
        match failed {
            Some(e) => out.error = Some(e),
            None if passed > 0 => out.correctness = Some(true),
            None => out
                .warnings
                .push("output ended before the scene test's `… PASSED` line".into()),
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

    #[test]
    fn rounds_are_spans_grouped_by_pid_and_inv() {
        // Two ranks, three rounds; rank 2's invs start elsewhere and arrive out of order.
        let mut lines = vec!["  TestAllreduceOnephaseP2::onephase ...".to_string()];
        lines.extend([
            span(10, 1, 100),
            span(11, 7, 150),
            span(10, 2, 300),
            span(11, 9, 90),
            span(11, 8, 200),
            span(10, 3, 80),
        ]);
        lines.push("  TestAllreduceOnephaseP2::onephase PASSED".into());
        let p = parse(&lines);
        assert_eq!(p.correctness, Some(true));
        let dw: Vec<_> = p.samples.iter().map(|s| s.device_wall_s).collect();
        assert_eq!(dw, [Some(150e-9), Some(300e-9), Some(90e-9)]);
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);

        let mut lines = vec![span(10, 1, 100), span(11, 1, 100), span(10, 2, 100)];
        lines.push("  TestAllreduceRingP2::ring FAILED: golden mismatch on rank 1".into());
        let p = parse(&lines);
        assert_eq!(p.samples.len(), 1);
        assert_eq!(p.correctness, None);
        assert_eq!(
            p.error.as_deref(),
            Some("scene test TestAllreduceRingP2::ring FAILED: golden mismatch on rank 1")
        );
        assert!(p.warnings[0].contains("different numbers of device_wall rounds (2, 1)"));
    }
}
