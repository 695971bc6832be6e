//! Parser `gtest`: GoogleTest output (pto-isa's comm system tests), possibly from several MPI
//! ranks interleaved.
//!
//! Lines: `[ RUN      ] T.Name`, `[       OK ] T.Name (12 ms)`, `[  SKIPPED ] T.Name (0 ms)`
//! (`GTEST_SKIP`, pto-isa's `SKIP_IF_RANKS_LT`), `[  FAILED  ] T.Name (5 ms)`, `[  PASSED  ]`,
//! and pto-isa's own `[SKIP] Test requires N NPU(s) …` (its harness then returns true, so gtest
//! says `[       OK ]`: such a test is counted skipped, not passed). One process gives one
//! sample:
//!
//! - `execute_s` = the sum over the tests that executed of each test's slowest-rank `(N ms)`
//!   (gtest's time includes aclInit and communicator set-up), else the time from the first
//!   `[----------]` to the last `[       OK ]` line's arrival; phases `init` and `execute`;
//! - with `fixed_shapes` declared, the sample's `n_bytes` = the bytes of the tests that
//!   executed (count × element size per test), so bandwidth is computed from what ran; a test
//!   without a declared shape leaves the sample without bandwidth and a warning.
//!
//! Verdict: any `[  FAILED  ]` is a declared failure; a run in which no test executed (all
//! skipped, or none selected) is an error — never a pass; otherwise `[  PASSED  ]` is success
//! (from fewer than p ranks is a warning).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::model::output::OutputLine;
use crate::model::results::Sample;
use crate::model::stack::{FixedShape, StackDef};
use crate::stack::parsers::hccl::bandwidth;
use crate::stack::parsers::{ParseContext, Parsed, Parser};

pub fn parser(def: &StackDef, ctx: &ParseContext) -> Box<dyn Parser> {
    Box::new(GtestParser {
        ctx: ctx.clone(),
        shapes: def.fixed_shapes.clone(),
        out: Parsed::default(),
        suite_start: None,
        last_ok: None,
        running: None,
        ok_ms: BTreeMap::new(),
        skipped: BTreeSet::new(),
        skip_lines: Vec::new(),
        passed: 0,
    })
}

struct GtestParser {
    ctx: ParseContext,
    shapes: BTreeMap<String, FixedShape>,
    out: Parsed,
    suite_start: Option<Duration>,
    last_ok: Option<Duration>,
    /// The test last seen starting (`[ RUN      ]`): a `[SKIP]` line belongs to it.
    running: Option<String>,
    /// Test → slowest rank's time (ms), for tests gtest called OK.
    ok_ms: BTreeMap<String, f64>,
    skipped: BTreeSet<String>,
    skip_lines: Vec<String>,
    passed: u32,
}

/// `Name (123 ms)` → (`Name`, 123).
fn name_and_ms(rest: &str) -> (String, Option<f64>) {
    let rest = rest.trim();
    match rest.rfind(" (") {
        Some(open) => {
            let ms = rest[open + 2..]
                .strip_suffix(')')
                .and_then(|t| t.strip_suffix(" ms"))
                .and_then(|t| t.trim().parse().ok());
            (rest[..open].trim().to_string(), ms)
        }
        None => (rest.to_string(), None),
    }
}

/// A per-test line names one test (`Suite.Name`), not a summary count (`3 tests, listed …`).
fn is_test_name(name: &str) -> bool {
    !name.is_empty() && !name.contains(' ') && name.contains('.')
}

impl Parser for GtestParser {
    fn feed(&mut self, line: &OutputLine) {
        let text = line.text.trim();
        if text.starts_with("[----------]") {
            self.suite_start.get_or_insert(line.at);
        } else if let Some(rest) = text.strip_prefix("[ RUN      ]") {
            self.running = Some(rest.trim().to_string());
        } else if let Some(rest) = text.strip_prefix("[       OK ]") {
            self.last_ok = Some(line.at);
            let (name, ms) = name_and_ms(rest);
            let e = self.ok_ms.entry(name).or_insert(0.0);
            if let Some(ms) = ms {
                *e = e.max(ms);
            }
        } else if let Some(rest) = text.strip_prefix("[  SKIPPED ]") {
            let (name, _) = name_and_ms(rest);
            if is_test_name(&name) {
                self.skipped.insert(name);
            }
        } else if text.starts_with("[SKIP]") {
            if let Some(t) = &self.running {
                self.skipped.insert(t.clone());
            }
            self.skip_lines.push(text.to_string());
        } else if text.starts_with("[  PASSED  ]") {
            self.passed += 1;
            self.last_ok.get_or_insert(line.at);
        } else if text.starts_with("[  FAILED  ]") {
            self.out.correctness = Some(false);
            self.out.error.get_or_insert_with(|| text.to_string());
        }
    }

    fn finish(mut self: Box<Self>) -> Parsed {
        let executed: Vec<(&String, f64)> = self
            .ok_ms
            .iter()
            .filter(|(name, _)| !self.skipped.contains(*name))
            .map(|(n, ms)| (n, *ms))
            .collect();
        let nothing_ran = executed.is_empty() && self.out.correctness.is_none();
        if nothing_ran {
            let why = self
                .skip_lines
                .first()
                .cloned()
                .or_else(|| self.skipped.first().map(|t| format!("{t} skipped")))
                .unwrap_or_else(|| "no test selected".into());
            self.out.error = Some(format!(
                "no test executed ({} skipped): {why}",
                self.skipped.len()
            ));
        } else if self.out.correctness.is_none() {
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
        if !self.skipped.is_empty() && !nothing_ran {
            self.out.warnings.push(format!(
                "{} test(s) skipped, not counted: {}",
                self.skipped.len(),
                self.skipped.iter().cloned().collect::<Vec<_>>().join(", ")
            ));
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
        let timed: Vec<f64> = executed.iter().map(|(_, ms)| *ms).collect();
        let execute = if timed.iter().all(|ms| *ms > 0.0) && !timed.is_empty() {
            Some(timed.iter().sum::<f64>() / 1e3)
        } else {
            phases.get("execute").copied()
        };
        let n_bytes = if self.shapes.is_empty() {
            None
        } else {
            let mut total = 0u64;
            let mut missing = Vec::new();
            for (name, _) in &executed {
                match self.shapes.get(*name) {
                    Some(s) => total += s.count * s.dtype.elem_bytes(),
                    None => missing.push(name.as_str()),
                }
            }
            if !missing.is_empty() {
                self.out.warnings.push(format!(
                    "no fixed shape declared for {}: no bandwidth",
                    missing.join(", ")
                ));
                total = 0;
            }
            Some(total)
        };
        if nothing_ran {
            return self.out;
        }
        if self.suite_start.is_some() || execute.is_some() {
            let bytes = n_bytes.unwrap_or(self.ctx.n_bytes);
            self.out.samples.push(Sample {
                execute_s: execute,
                ok: self.out.correctness == Some(true),
                bw_execute_mb_s: execute
                    .filter(|_| bytes > 0)
                    .and_then(|e| bandwidth(bytes, e)),
                phases,
                n_bytes,
                ..Sample::default()
            });
        }
        self.out
    }
}
