//! Parser `hccl`: the `HCCL_*` lines of campaign's HCCL helper (and the old harness's).
//!
//! ```text
//! HCCL_COMM_SETUP_OK world_size=2 setup_s=1.28113
//! HCCL_WARMUP round=1 per_rank=[0.032622, 0.032635]
//! HCCL_TIMED round=1 per_rank=[0.000165, 0.000161]
//! HCCL_ALLREDUCE_OK setup_s=1.28113
//! ```
//! One sample per WARMUP/TIMED line: `execute_s` = max(per_rank) (the slowest rank completes
//! the collective), `per_rank_execute_s`, `setup_s` on the first round. `HCCL_ALLREDUCE_FAIL …`
//! (campaign's helper: golden mismatch, a rank that died, a barrier timeout) is a declared
//! failure. Any other line is ignored; a damaged HCCL_* line is a warning, never a panic.

use crate::model::output::OutputLine;
use crate::model::results::Sample;
use crate::model::stack::StackDef;
use crate::stack::parsers::{ParseContext, Parsed, Parser};

pub fn parser(_def: &StackDef, ctx: &ParseContext) -> Box<dyn Parser> {
    Box::new(HcclParser {
        ctx: ctx.clone(),
        out: Parsed::default(),
        setup_s: None,
        warmups: 0,
        timeds: 0,
    })
}

struct HcclParser {
    ctx: ParseContext,
    out: Parsed,
    setup_s: Option<f64>,
    warmups: u32,
    timeds: u32,
}

/// The value of `key=` in a line of `key=value` tokens.
pub(crate) fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|tok| tok.strip_prefix(key)?.strip_prefix('='))
}

/// `per_rank=[0.1, 0.2]` → the list; `None` when missing, truncated or not numbers.
pub(crate) fn per_rank(line: &str) -> Option<Vec<f64>> {
    let start = line.find("per_rank=[")? + "per_rank=[".len();
    let end = start + line[start..].find(']')?;
    let inner = line[start..end].trim();
    if inner.is_empty() {
        return None;
    }
    inner
        .split(',')
        .map(|v| {
            v.trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x >= 0.0)
        })
        .collect()
}

impl HcclParser {
    fn round(&mut self, line: &str, timed: bool) {
        let tag = if timed { "HCCL_TIMED" } else { "HCCL_WARMUP" };
        let Some(values) = per_rank(line) else {
            self.out
                .warnings
                .push(format!("unreadable {tag} line (truncated?): {line}"));
            return;
        };
        if self.ctx.p > 0 && values.len() != self.ctx.p as usize {
            self.out.warnings.push(format!(
                "{tag} has {} per-rank times, expected {}: {line}",
                values.len(),
                self.ctx.p
            ));
        }
        let execute = values.iter().cloned().fold(0.0_f64, f64::max);
        let n = if timed {
            self.timeds += 1;
            self.timeds
        } else {
            self.warmups += 1;
            self.warmups
        };
        let mut sample = Sample {
            round: self.warmups + self.timeds,
            phase: Sample::label(timed, n),
            execute_s: Some(execute),
            ok: true,
            bw_execute_mb_s: bandwidth(self.ctx.n_bytes, execute),
            per_rank_execute_s: values,
            ..Sample::default()
        };
        if self.out.samples.is_empty() {
            sample.setup_s = self.setup_s;
        }
        self.out.samples.push(sample);
    }
}

/// `n_bytes / execute_s / 1e6`, the seed's `bw_execute_mb_s` (None for a zero time).
pub(crate) fn bandwidth(n_bytes: u64, execute_s: f64) -> Option<f64> {
    (execute_s > 0.0 && n_bytes > 0).then(|| n_bytes as f64 / execute_s / 1e6)
}

impl Parser for HcclParser {
    fn feed(&mut self, line: &OutputLine) {
        let text = line.text.trim();
        let Some(tag) = text.split_whitespace().next() else {
            return;
        };
        match tag {
            "HCCL_COMM_SETUP_OK" => {
                match field(text, "setup_s").map(str::parse::<f64>) {
                    Some(Ok(v)) => self.setup_s = Some(v),
                    Some(Err(_)) => self
                        .out
                        .warnings
                        .push(format!("unreadable setup_s: {text}")),
                    None => {}
                }
                if let Some(Ok(w)) = field(text, "world_size").map(str::parse::<u32>) {
                    if self.ctx.p > 0 && w != self.ctx.p {
                        self.out.warnings.push(format!(
                            "HCCL world_size={w} but the case has p={}",
                            self.ctx.p
                        ));
                    }
                }
            }
            "HCCL_WARMUP" => self.round(text, false),
            "HCCL_TIMED" => self.round(text, true),
            "HCCL_ALLREDUCE_OK" => {
                if self.setup_s.is_none() {
                    self.setup_s = field(text, "setup_s").and_then(|v| v.parse().ok());
                    if let Some(first) = self.out.samples.first_mut() {
                        first.setup_s = self.setup_s;
                    }
                }
                if self.out.correctness.is_none() {
                    self.out.correctness = Some(true);
                }
            }
            "HCCL_ALLREDUCE_FAIL" => {
                self.out.correctness = Some(false);
                let reason = text["HCCL_ALLREDUCE_FAIL".len()..].trim();
                self.out.error.get_or_insert_with(|| reason.to_string());
                // A golden mismatch names its round: that sample is not ok.
                if let Some(Ok(r)) = field(text, "round").map(str::parse::<u32>) {
                    let label = Sample::label(true, r);
                    if let Some(s) = self.out.samples.iter_mut().find(|s| s.phase == label) {
                        s.ok = false;
                    }
                }
            }
            _ => {}
        }
    }

    fn finish(mut self: Box<Self>) -> Parsed {
        if self.out.correctness.is_none() {
            self.out
                .warnings
                .push("output ended before HCCL_ALLREDUCE_OK".to_string());
        }
        if self.ctx.timed > 0 && self.timeds < self.ctx.timed {
            self.out.warnings.push(format!(
                "{} of {} timed rounds reported",
                self.timeds, self.ctx.timed
            ));
        }
        self.out
    }
}
