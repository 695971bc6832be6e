//! The `native` parser: campaign's own stack protocol, `CAMPAIGN_SAMPLE {json}` per round and
//! `CAMPAIGN_DONE {json}` at the end.
//!
//! Owns the protocol's reading rules: the keyword starts the line (leading whitespace allowed,
//! either stream), one JSON object follows on the same line, other lines are ignored, a bad
//! protocol line is a warning naming its line number, never a crash. Rounds are numbered and
//! labelled here (`warmup-<n>`, `timed-<n>`, round 1-based over all rounds); bandwidth is always
//! recomputed from the case's bytes, never read from the stack.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::model::output::OutputLine;
use crate::model::results::Sample;
use crate::stack::parsers::{ParseContext, Parsed, Parser};

pub(crate) const SAMPLE_KEYWORD: &str = "CAMPAIGN_SAMPLE";
pub(crate) const DONE_KEYWORD: &str = "CAMPAIGN_DONE";

/// Streaming state of one process's output.
pub struct NativeParser {
    ctx: ParseContext,
    line_no: usize,
    warmup_seen: u32,
    timed_seen: u32,
    out: Parsed,
}

impl NativeParser {
    pub fn new(ctx: ParseContext) -> Self {
        NativeParser {
            ctx,
            line_no: 0,
            warmup_seen: 0,
            timed_seen: 0,
            out: Parsed::default(),
        }
    }

    fn warn(&mut self, message: String) {
        self.out
            .warnings
            .push(format!("line {}: {message}", self.line_no));
    }

    fn sample(&mut self, obj: &Map<String, Value>) {
        let timed = match obj.get("phase") {
            None | Some(Value::Null) => self.warmup_seen + self.timed_seen >= self.ctx.warmup,
            Some(Value::String(p)) if is_kind(p, "warmup") => false,
            Some(Value::String(p)) if is_kind(p, "timed") => true,
            Some(other) => {
                return self.warn(format!(
                    "{SAMPLE_KEYWORD}: phase {other} is not \"warmup\" or \"timed\"; sample ignored"
                ))
            }
        };
        let n = if timed {
            self.timed_seen += 1;
            self.timed_seen
        } else {
            self.warmup_seen += 1;
            self.warmup_seen
        };
        let mut sample = Sample {
            round: self.warmup_seen + self.timed_seen,
            phase: Sample::label(timed, n),
            ok: true,
            ..Sample::default()
        };
        sample.execute_s = self.seconds(obj, "execute_s");
        sample.setup_s = self.seconds(obj, "setup_s");
        sample.wall_s = self.seconds(obj, "wall_s");
        sample.device_wall_s = self.seconds(obj, "device_wall_s");
        sample.per_rank_execute_s = self.seconds_list(obj, "per_rank_execute_s");
        sample.phases = self.seconds_map(obj, "phases");
        sample.compile_profile = self.seconds_map(obj, "compile_profile");
        match obj.get("ok") {
            None | Some(Value::Bool(true)) => {}
            Some(Value::Bool(false)) => sample.ok = false,
            Some(other) => {
                self.warn(format!("{SAMPLE_KEYWORD}: ok is {other}, expected true or false; round counted as not ok"));
                sample.ok = false;
            }
        }
        // The slowest rank completes the collective.
        if sample.execute_s.is_none() && !sample.per_rank_execute_s.is_empty() {
            sample.execute_s = sample.per_rank_execute_s.iter().copied().reduce(f64::max);
        }
        sample.bw_execute_mb_s = bandwidth_mb_s(self.ctx.n_bytes, sample.execute_s);
        self.out.samples.push(sample);
    }

    fn done(&mut self, obj: &Map<String, Value>) {
        match obj.get("correctness") {
            Some(Value::String(c)) if c == "pass" => {
                // A failure already declared stays a failure.
                if self.out.correctness.is_none() {
                    self.out.correctness = Some(true);
                }
            }
            Some(Value::String(c)) if c == "fail" => self.out.correctness = Some(false),
            other => self.warn(format!(
                "{DONE_KEYWORD}: correctness is {}, expected \"pass\" or \"fail\"",
                other.map_or("missing".to_string(), |v| v.to_string())
            )),
        }
        match obj.get("error") {
            Some(Value::String(e)) if !e.is_empty() => self.out.error = Some(e.clone()),
            Some(Value::Null) | None => {}
            Some(other) => self.out.error = Some(other.to_string()),
        }
    }

    /// A non-negative finite number of seconds; anything else is a warning and no value.
    fn seconds(&mut self, obj: &Map<String, Value>, key: &str) -> Option<f64> {
        match obj.get(key)? {
            Value::Null => None,
            v => match v.as_f64().filter(|x| x.is_finite() && *x >= 0.0) {
                Some(x) => Some(x),
                None => {
                    self.warn(format!(
                        "{SAMPLE_KEYWORD}: {key} is {v}, expected seconds >= 0; ignored"
                    ));
                    None
                }
            },
        }
    }

    fn seconds_list(&mut self, obj: &Map<String, Value>, key: &str) -> Vec<f64> {
        match obj.get(key) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => {
                let values: Vec<f64> = items
                    .iter()
                    .filter_map(|v| v.as_f64().filter(|x| x.is_finite() && *x >= 0.0))
                    .collect();
                if values.len() != items.len() {
                    self.warn(format!(
                        "{SAMPLE_KEYWORD}: {key} holds non-numbers; ignored"
                    ));
                    return Vec::new();
                }
                values
            }
            Some(other) => {
                self.warn(format!(
                    "{SAMPLE_KEYWORD}: {key} is {other}, expected a list of seconds; ignored"
                ));
                Vec::new()
            }
        }
    }

    fn seconds_map(&mut self, obj: &Map<String, Value>, key: &str) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        match obj.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::Object(map)) => {
                for (name, v) in map {
                    match v.as_f64().filter(|x| x.is_finite()) {
                        Some(x) => {
                            out.insert(name.clone(), x);
                        }
                        None => self.warn(format!(
                            "{SAMPLE_KEYWORD}: {key}.{name} is {v}, expected seconds; ignored"
                        )),
                    }
                }
            }
            Some(other) => self.warn(format!(
                "{SAMPLE_KEYWORD}: {key} is {other}, expected an object of name → seconds; ignored"
            )),
        }
        out
    }
}

/// `warmup`, `warmup-3`, `timed`, `timed-12` (the stack's own numbering is not trusted).
fn is_kind(phase: &str, kind: &str) -> bool {
    match phase.strip_prefix(kind) {
        Some("") => true,
        Some(rest) => rest
            .strip_prefix('-')
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())),
        None => false,
    }
}

/// `n_bytes / execute_s / 1e6`, only for a positive time and a known size.
pub(crate) fn bandwidth_mb_s(n_bytes: u64, execute_s: Option<f64>) -> Option<f64> {
    let t = execute_s.filter(|t| *t > 0.0)?;
    (n_bytes > 0).then(|| n_bytes as f64 / t / 1e6)
}

/// Split `line` into (keyword, rest) when it is a protocol line.
fn protocol(line: &str) -> Option<(&'static str, &str)> {
    let text = line.trim_start();
    for keyword in [SAMPLE_KEYWORD, DONE_KEYWORD] {
        if let Some(rest) = text.strip_prefix(keyword) {
            if rest.is_empty() || rest.starts_with(char::is_whitespace) {
                return Some((keyword, rest.trim()));
            }
        }
    }
    None
}

impl Parser for NativeParser {
    fn feed(&mut self, line: &OutputLine) {
        self.line_no += 1;
        let Some((keyword, payload)) = protocol(&line.text) else {
            return;
        };
        let obj = match serde_json::from_str::<Value>(payload) {
            Ok(Value::Object(obj)) => obj,
            Ok(other) => {
                return self.warn(format!(
                    "{keyword}: expected a JSON object, got `{other}`; line ignored"
                ))
            }
            Err(e) if payload.is_empty() => {
                return self.warn(format!("{keyword} without JSON ({e}); line ignored"))
            }
            Err(e) => {
                let what = if e.is_eof() {
                    "truncated JSON"
                } else {
                    "invalid JSON"
                };
                return self.warn(format!("{keyword}: {what} ({e}); line ignored"));
            }
        };
        if keyword == SAMPLE_KEYWORD {
            self.sample(&obj);
        } else {
            self.done(&obj);
        }
    }

    fn finish(self: Box<Self>) -> Parsed {
        self.out
    }
}

#[cfg(test)]
mod tests;
