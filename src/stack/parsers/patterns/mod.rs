//! The `regex` parser: a stack definition's `patterns` table turns arbitrary output into
//! samples, for stacks that cannot be taught the native protocol.
//!
//! Owns the pattern keys and their rules (documented in docs/stack-definitions.md): a round
//! ends at every line matching `sample` or `execute_s`; `setup_s`, `wall_s` and
//! `device_wall_s` matched before that line attach to the round it ends; `done` and `fail` set
//! the verdict. Values are seconds, or milliseconds/microseconds/nanoseconds when the capture is
//! named with `_ms`/`_us`/`_ns`. Configuration problems are errors when the parser is made; odd
//! output is a warning, never a crash.

use std::collections::BTreeMap;

use ::regex::{Captures, Regex};

use crate::model::output::OutputLine;
use crate::model::results::Sample;
use crate::stack::parsers::native::bandwidth_mb_s;
use crate::stack::parsers::{config_error, ParseContext, Parsed, Parser};

/// Sample fields a pattern may fill, in `patterns` key spelling.
pub(crate) const FIELDS: &[&str] = &["execute_s", "setup_s", "wall_s", "device_wall_s"];
/// Every key `patterns` accepts.
pub(crate) const KEYS: &[&str] = &[
    "execute_s",
    "setup_s",
    "wall_s",
    "device_wall_s",
    "sample",
    "done",
    "fail",
];

/// Capture-name suffixes and the factor that turns them into seconds.
const UNITS: &[(&str, f64)] = &[("", 1.0), ("_ms", 1e-3), ("_us", 1e-6), ("_ns", 1e-9)];

pub(crate) struct RegexParser {
    ctx: ParseContext,
    /// (field index in FIELDS, pattern) for `setup_s`, `wall_s`, `device_wall_s`.
    attach: Vec<(usize, Regex)>,
    execute: Option<Regex>,
    sample: Option<Regex>,
    done: Option<Regex>,
    fail: Option<Regex>,
    /// Values waiting for the next round to end, with the line they came from.
    pending: [Option<(f64, usize)>; 4],
    line_no: usize,
    warmup_seen: u32,
    timed_seen: u32,
    out: Parsed,
}

impl RegexParser {
    pub(crate) fn new(
        patterns: &BTreeMap<String, String>,
        ctx: ParseContext,
    ) -> crate::error::Result<Self> {
        let mut compiled = BTreeMap::new();
        for (key, source) in patterns {
            if !KEYS.contains(&key.as_str()) {
                return Err(config_error(
                    &format!("patterns.{key}"),
                    format!("unknown pattern key `{key}` (known: {})", KEYS.join(", ")),
                ));
            }
            let re = Regex::new(source).map_err(|e| {
                config_error(&format!("patterns.{key}"), format!("invalid regex: {e}"))
            })?;
            check_captures(key, &re)?;
            compiled.insert(key.as_str(), re);
        }
        if !compiled.contains_key("execute_s") && !compiled.contains_key("sample") {
            return Err(config_error(
                "patterns",
                "the regex parser needs patterns.execute_s or patterns.sample (a round ends at each match)".into(),
            ));
        }
        let attach = FIELDS
            .iter()
            .enumerate()
            .skip(1)
            .filter_map(|(i, f)| compiled.get(f).map(|re| (i, re.clone())))
            .collect();
        Ok(RegexParser {
            ctx,
            attach,
            execute: compiled.remove("execute_s"),
            sample: compiled.remove("sample"),
            done: compiled.remove("done"),
            fail: compiled.remove("fail"),
            pending: [None; 4],
            line_no: 0,
            warmup_seen: 0,
            timed_seen: 0,
            out: Parsed::default(),
        })
    }

    fn warn(&mut self, message: String) {
        self.out
            .warnings
            .push(format!("line {}: {message}", self.line_no));
    }

    /// The value of `field` in `caps` (field-named captures, plus `value*` when `any_value`):
    /// `Ok(None)` when no such capture took part in the match, `Err(())` (warned) when its text
    /// is not a number of seconds.
    fn value(
        &mut self,
        key: &str,
        caps: &Captures,
        field: &str,
        any_value: bool,
    ) -> Result<Option<f64>, ()> {
        let base = field.trim_end_matches("_s");
        for (suffix, scale) in UNITS {
            let named = if suffix.is_empty() {
                field.to_string()
            } else {
                format!("{base}{suffix}")
            };
            let found = caps.name(&named).or_else(|| {
                any_value
                    .then(|| caps.name(&format!("value{suffix}")))
                    .flatten()
            });
            if let Some(m) = found {
                let parsed = m.as_str().trim().parse::<f64>().ok();
                return match parsed.filter(|x| x.is_finite() && *x >= 0.0) {
                    Some(x) => Ok(Some(x * scale)),
                    None => {
                        self.warn(format!(
                            "patterns.{key} matched but `{}` is not a number of seconds >= 0",
                            m.as_str()
                        ));
                        Err(())
                    }
                };
            }
        }
        Ok(None)
    }

    /// Close a round at a `sample` line (`any_value` false: every field by its own capture) or
    /// an `execute_s` line (`any_value` true: `value*` is execute_s). Values on the closing line
    /// win over pending ones; an unreadable value makes the round not ok.
    fn end_round(&mut self, key: &str, caps: &Captures, any_value: bool) {
        let mut values: [Option<f64>; 4] = [None; 4];
        let mut ok = true;
        for (i, field) in FIELDS.iter().enumerate() {
            let from_line = if any_value && i > 0 {
                Ok(None)
            } else {
                self.value(key, caps, field, any_value)
            };
            let from_line = from_line.unwrap_or_else(|()| {
                ok = false;
                None
            });
            let pending = self.pending[i].take().map(|(v, _)| v);
            values[i] = from_line.or(pending);
        }
        if let Some(flag) = caps.name("ok") {
            ok &= matches!(
                flag.as_str().trim().to_ascii_lowercase().as_str(),
                "ok" | "true" | "pass" | "passed" | "1" | "yes"
            );
        }
        let timed = match caps.name("phase").map(|m| m.as_str().to_ascii_lowercase()) {
            Some(p) if p.contains("warm") => false,
            Some(p) if p.contains("timed") => true,
            _ => self.warmup_seen + self.timed_seen >= self.ctx.warmup,
        };
        let n = if timed {
            self.timed_seen += 1;
            self.timed_seen
        } else {
            self.warmup_seen += 1;
            self.warmup_seen
        };
        self.out.samples.push(Sample {
            round: self.warmup_seen + self.timed_seen,
            phase: Sample::label(timed, n),
            execute_s: values[0],
            setup_s: values[1],
            wall_s: values[2],
            device_wall_s: values[3],
            ok,
            bw_execute_mb_s: bandwidth_mb_s(self.ctx.n_bytes, values[0]),
            ..Sample::default()
        });
    }
}

/// A field pattern needs a value capture; `sample` needs at least one field capture.
fn check_captures(key: &str, re: &Regex) -> crate::error::Result<()> {
    let names: Vec<&str> = re.capture_names().flatten().collect();
    let has = |field: &str, any_value: bool| {
        let base = field.trim_end_matches("_s");
        UNITS.iter().any(|(suffix, _)| {
            let named = if suffix.is_empty() {
                field.to_string()
            } else {
                format!("{base}{suffix}")
            };
            names.contains(&named.as_str())
                || (any_value && names.contains(&format!("value{suffix}").as_str()))
        })
    };
    let ok = match key {
        "sample" => FIELDS.iter().any(|f| has(f, false)),
        "done" | "fail" => true,
        field => has(field, true),
    };
    if ok {
        return Ok(());
    }
    let expected = if key == "sample" {
        "named captures for the sample's fields, e.g. (?P<execute_s>…) or (?P<execute_us>…)"
            .to_string()
    } else {
        let base = key.trim_end_matches("_s");
        format!("a named capture `value` (or value_ms, value_us, value_ns, {key}, {base}_ms, …)")
    };
    Err(config_error(
        &format!("patterns.{key}"),
        format!("the pattern has no capture to read: expected {expected}"),
    ))
}

impl Parser for RegexParser {
    fn feed(&mut self, line: &OutputLine) {
        self.line_no += 1;
        let text = line.text.as_str();
        if let Some(caps) = self.fail.as_ref().and_then(|re| re.captures(text)) {
            self.out.correctness = Some(false);
            if self.out.error.is_none() {
                let why = caps.name("error").map_or(text.trim(), |m| m.as_str());
                self.out.error = Some(why.to_string());
            }
        } else if self.done.as_ref().is_some_and(|re| re.is_match(text))
            && self.out.correctness.is_none()
        {
            self.out.correctness = Some(true);
        }
        for i in 0..self.attach.len() {
            let field = self.attach[i].0;
            if let Some(caps) = self.attach[i].1.captures(text) {
                let key = FIELDS[field];
                if let Ok(Some(v)) = self.value(key, &caps, key, true) {
                    self.pending[field] = Some((v, self.line_no));
                }
            }
        }
        if let Some(caps) = self.sample.as_ref().and_then(|re| re.captures(text)) {
            self.end_round("sample", &caps, false);
        } else if let Some(caps) = self.execute.as_ref().and_then(|re| re.captures(text)) {
            self.end_round("execute_s", &caps, true);
        }
    }

    fn finish(mut self: Box<Self>) -> Parsed {
        for (i, slot) in self.pending.iter().enumerate() {
            if let Some((_, line)) = slot {
                self.out.warnings.push(format!(
                    "line {line}: {} matched after the last round ended; ignored",
                    FIELDS[i]
                ));
            }
        }
        self.out
    }
}

#[cfg(test)]
mod tests;
