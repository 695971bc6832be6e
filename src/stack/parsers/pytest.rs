//! Parser `pytest`: pytest's own result for the test a stack selects by node id (pypto's
//! distributed system tests), read from `pytest -s -v -rA` output.
//!
//! pytest decides, not campaign: the final summary line (`=== 1 passed in 12.3s ===`,
//! `=== 1 failed …`, `=== 1 skipped …`, `=== no tests ran …`, `=== 8 deselected …`), the
//! short summary (`PASSED <id>`, `FAILED <id>`, `ERROR <id>`, `SKIPPED [1] file:line: reason`)
//! and `ERROR: not found: <id>` (a node id that names no test, exit 4). One process gives one
//! sample (the timings come from the runtime's STRACE spans, added by `strace::wrap`):
//!
//! - passed, nothing failed, errored or skipped → `ok`, declared success;
//! - failed with an `AssertionError` (pypto's tests assert only the golden comparison) →
//!   declared golden mismatch, the `E   AssertionError: …` line as the error;
//! - failed with another exception, or ERROR (set-up) → no sample, the first `E   ` line as
//!   the error;
//! - skipped (a test that found too few devices skips itself) → no sample, the skip reason as
//!   the error: a run in which nothing executed never passes;
//! - no test ran (exit 5 "no tests collected"/all deselected, exit 4 "not found") → no sample,
//!   an error naming the selection (the node ids or `-k` expression of the argv).

use std::sync::OnceLock;

use regex::Regex;

use crate::model::output::OutputLine;
use crate::model::results::Sample;
use crate::model::stack::StackDef;
use crate::stack::parsers::{ParseContext, Parsed, Parser};

pub fn parser(_def: &StackDef, ctx: &ParseContext) -> Box<dyn Parser> {
    Box::new(PytestParser {
        selection: selection(&ctx.argv),
        ..PytestParser::default()
    })
}

/// What the argv selects: its node ids (`file::Class::test[id]`), or its `-k` expression.
pub(crate) fn selection(argv: &[String]) -> String {
    let ids: Vec<&str> = argv
        .iter()
        .map(String::as_str)
        .filter(|a| a.contains("::"))
        .collect();
    if !ids.is_empty() {
        return ids.join(" ");
    }
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        if a == "-k" {
            if let Some(k) = it.next() {
                return format!("-k {k:?}");
            }
        } else if let Some(k) = a.strip_prefix("-k") {
            return format!("-k {k:?}");
        }
    }
    "(no node id or -k in the command)".to_string()
}

#[derive(Default)]
struct PytestParser {
    selection: String,
    /// Counts from the final summary line, once seen.
    summary: Option<Counts>,
    /// Outcomes named in the short summary / verbose lines.
    passed: Vec<String>,
    failed: Vec<String>,
    errors: Vec<String>,
    skip_reasons: Vec<String>,
    /// First `E   …` line (pytest's failure representation).
    first_e: Option<String>,
    not_found: Option<String>,
    collected: Option<String>,
    warnings: Vec<String>,
}

#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Counts {
    passed: u32,
    failed: u32,
    errors: u32,
    skipped: u32,
    deselected: u32,
    no_tests: bool,
}

fn summary_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^=+ (.+?) in [0-9.]+s(?: \([^)]*\))? =+$").expect("static regex")
    })
}

fn short_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (.+)$").expect("static regex")
    })
}

/// `1 passed, 2 warnings` → counts; `None` when the text is not a pytest summary.
fn counts(text: &str) -> Option<Counts> {
    let mut c = Counts::default();
    let mut any = false;
    for part in text.split(", ") {
        let part = part.trim();
        if part == "no tests ran" {
            c.no_tests = true;
            any = true;
            continue;
        }
        let (n, what) = part.split_once(' ')?;
        let n: u32 = n.parse().ok()?;
        match what {
            "passed" | "xpassed" => c.passed += n,
            "failed" => c.failed += n,
            "error" | "errors" => c.errors += n,
            "skipped" | "xfailed" => c.skipped += n,
            "deselected" => c.deselected += n,
            "warning" | "warnings" | "rerun" | "reruns" => {}
            _ => return None,
        }
        any = true;
    }
    any.then_some(c)
}

impl Parser for PytestParser {
    fn feed(&mut self, line: &OutputLine) {
        let text = line.text.trim_end();
        if let Some(c) = summary_re().captures(text).and_then(|m| counts(&m[1])) {
            self.summary = Some(c);
            return;
        }
        if let Some(rest) = text.strip_prefix("ERROR: not found: ") {
            self.not_found
                .get_or_insert_with(|| rest.trim().to_string());
            return;
        }
        if let Some(rest) = text
            .strip_prefix("collecting ... ")
            .or_else(|| text.starts_with("collected ").then_some(text))
        {
            self.collected = Some(rest.trim().to_string());
            return;
        }
        if let Some(m) = short_re().captures(text) {
            let what = m[2].to_string();
            match &m[1] {
                "PASSED" | "XPASS" => self.passed.push(what),
                "FAILED" => self.failed.push(what),
                "ERROR" => self.errors.push(what),
                _ => self.skip_reasons.push(what),
            }
            return;
        }
        let t = text.trim_start();
        if let Some(e) = t.strip_prefix("E ") {
            let e = e.trim();
            if !e.is_empty() && self.first_e.is_none() {
                self.first_e = Some(e.to_string());
            }
        }
    }

    fn finish(self: Box<Self>) -> Parsed {
        let mut out = Parsed {
            warnings: self.warnings,
            ..Parsed::default()
        };
        let c = self.summary.unwrap_or(Counts {
            passed: self.passed.len() as u32,
            failed: self.failed.len() as u32,
            errors: self.errors.len() as u32,
            skipped: self.skip_reasons.len() as u32,
            ..Counts::default()
        });
        if self.summary.is_none() {
            out.warnings
                .push("output ended before pytest's summary line (`=== … in …s ===`)".into());
        }
        let ran = c.passed + c.failed + c.errors;
        let first_e = self.first_e.clone();
        if c.failed > 0 {
            let id = self.failed.first().cloned().unwrap_or_default();
            let e = first_e.unwrap_or_else(|| "no `E` line printed".into());
            let golden = e.starts_with("AssertionError");
            out.error = Some(format!("pytest FAILED {id}: {e}"));
            if golden {
                out.correctness = Some(false);
                out.samples.push(Sample {
                    ok: false,
                    ..Sample::default()
                });
            }
        } else if c.errors > 0 {
            let id = self.errors.first().cloned().unwrap_or_default();
            let e = first_e.unwrap_or_else(|| "no `E` line printed".into());
            out.error = Some(format!("pytest ERROR {id}: {e}"));
        } else if c.skipped > 0 && c.passed == 0 {
            let why = self
                .skip_reasons
                .first()
                .cloned()
                .unwrap_or_else(|| "no reason printed".into());
            out.error = Some(format!(
                "pytest skipped the selected test, nothing executed: {why}"
            ));
        } else if ran == 0 && (self.summary.is_some() || self.not_found.is_some()) {
            let how = match (&self.not_found, &self.collected) {
                (Some(nf), _) => format!("`ERROR: not found: {nf}`"),
                (None, Some(col)) => format!("`{col}`"),
                (None, None) => "`no tests ran`".into(),
            };
            out.error = Some(format!(
                "pytest ran no test: the selection {} matched nothing ({how}); the upstream test ids moved (`campaign doctor --contract` checks them)",
                self.selection
            ));
        } else if c.passed > 0 {
            if c.skipped > 0 {
                out.warnings
                    .push(format!("{} selected test(s) skipped", c.skipped));
            }
            out.correctness = Some(true);
            out.samples.push(Sample {
                ok: true,
                ..Sample::default()
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_counts() {
        assert_eq!(counts("1 passed, 2 warnings").map(|c| c.passed), Some(1));
        assert!(counts("no tests ran").unwrap().no_tests);
        assert_eq!(counts("8 deselected").unwrap().deselected, 8);
        assert_eq!(
            counts("1 failed, 1 error").map(|c| (c.failed, c.errors)),
            Some((1, 1))
        );
        assert_eq!(counts("test session starts"), None);
    }

    #[test]
    fn selection_names_node_ids_or_k() {
        let argv = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            selection(&argv(&["python3", "-m", "pytest", "t.py::C::f[2]", "-v"])),
            "t.py::C::f[2]"
        );
        assert_eq!(
            selection(&argv(&["pytest", "t.py", "-k", "host and n_ranks-2"])),
            "-k \"host and n_ranks-2\""
        );
    }
}
