//! Parser `gtest`: GoogleTest output (pto-isa's TREDUCE test), possibly from several MPI ranks
//! interleaved.
//!
//! Markers: `[----------]` (a test suite begins), `[       OK ] Name (12 ms)`, `[  PASSED  ]`,
//! `[  FAILED  ]`. One process gives one sample: `execute_s` = the slowest rank's test time
//! when gtest prints durations (`(N ms)`), else the time from the first `[----------]` to the
//! last `[       OK ]` line's arrival; phases `init` (start → first `[----------]`) and
//! `execute`. Any `[  FAILED  ]` is a declared failure; `[  PASSED  ]` from every rank (p of
//! them) is success — fewer is a warning and, without a failure, still success.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::model::output::OutputLine;
use crate::model::results::Sample;
use crate::model::stack::StackDef;
use crate::stack::parsers::hccl::bandwidth;
use crate::stack::parsers::{ParseContext, Parsed, Parser};

pub fn parser(_def: &StackDef, ctx: &ParseContext) -> Box<dyn Parser> {
    Box::new(GtestParser {
        ctx: ctx.clone(),
        out: Parsed::default(),
        suite_start: None,
        last_ok: None,
        ok_ms: Vec::new(),
        passed: 0,
    })
}

struct GtestParser {
    ctx: ParseContext,
    out: Parsed,
    suite_start: Option<Duration>,
    last_ok: Option<Duration>,
    ok_ms: Vec<f64>,
    passed: u32,
}

/// `Name (123 ms)` → 123.
fn duration_ms(rest: &str) -> Option<f64> {
    let open = rest.rfind('(')?;
    let inner = rest[open + 1..].strip_suffix(')')?;
    inner.strip_suffix(" ms")?.trim().parse().ok()
}

impl Parser for GtestParser {
    fn feed(&mut self, line: &OutputLine) {
        let text = line.text.trim();
        if text.starts_with("[----------]") {
            self.suite_start.get_or_insert(line.at);
        } else if let Some(rest) = text.strip_prefix("[       OK ]") {
            self.last_ok = Some(line.at);
            if let Some(ms) = duration_ms(rest.trim()) {
                self.ok_ms.push(ms);
            }
        } else if text.starts_with("[  PASSED  ]") {
            self.passed += 1;
            self.last_ok.get_or_insert(line.at);
        } else if text.starts_with("[  FAILED  ]") {
            self.out.correctness = Some(false);
            self.out.error.get_or_insert_with(|| text.to_string());
        }
    }

    fn finish(mut self: Box<Self>) -> Parsed {
        if self.out.correctness.is_none() {
            if self.passed > 0 {
                self.out.correctness = Some(true);
                if self.ctx.p > 0 && self.passed < self.ctx.p {
                    self.out.warnings.push(format!(
                        "[  PASSED  ] from {} of {} ranks",
                        self.passed, self.ctx.p
                    ));
                }
            } else {
                self.out
                    .warnings
                    .push("output ended before [  PASSED  ]".to_string());
            }
        }
        let mut phases = BTreeMap::new();
        if let Some(start) = self.suite_start {
            phases.insert("init".to_string(), start.as_secs_f64());
            if let Some(end) = self.last_ok {
                phases.insert(
                    "execute".to_string(),
                    end.saturating_sub(start).as_secs_f64(),
                );
            }
        }
        let execute = if self.ok_ms.is_empty() {
            phases.get("execute").copied()
        } else {
            Some(self.ok_ms.iter().cloned().fold(0.0, f64::max) / 1e3)
        };
        if self.suite_start.is_some() || execute.is_some() {
            self.out.samples.push(Sample {
                execute_s: execute,
                ok: self.out.correctness == Some(true),
                bw_execute_mb_s: execute.and_then(|e| bandwidth(self.ctx.n_bytes, e)),
                phases,
                ..Sample::default()
            });
        }
        self.out
    }
}
