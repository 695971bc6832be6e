//! Parser `simpler-own`: the in-process simpler session's round lines.
//!
//! ```text
//! [warmup 1/3] execute_s=0.000912
//! [timed 1/20] execute_s=0.000231
//! SIMPLER_EXECUTE_DONE
//! ```
//! One sample per `[warmup i/n]` / `[timed i/n]` line (labels from the line itself, so a round
//! lost to a crash shows as a gap, not a shift); `SIMPLER_EXECUTE_DONE` declares success, a line
//! containing `golden check FAILED` or `SIMPLER_EXECUTE_FAILED` a failure.

use crate::model::output::{OutputLine, Stream};
use crate::model::results::Sample;
use crate::model::stack::StackDef;
use crate::stack::parsers::hccl::{bandwidth, field};
use crate::stack::parsers::{ParseContext, Parsed, Parser};

pub fn parser(_def: &StackDef, ctx: &ParseContext) -> Box<dyn Parser> {
    Box::new(SimplerOwnParser {
        ctx: ctx.clone(),
        out: Parsed::default(),
        timed_seen: 0,
    })
}

struct SimplerOwnParser {
    ctx: ParseContext,
    out: Parsed,
    timed_seen: u32,
}

/// `[timed 3/20] …` → (timed, 3, 20).
fn round_tag(text: &str) -> Option<(bool, u32, u32)> {
    let rest = text.strip_prefix('[')?;
    let (tag, _) = rest.split_once(']')?;
    let (kind, frac) = tag.split_once(' ')?;
    let timed = match kind {
        "timed" => true,
        "warmup" => false,
        _ => return None,
    };
    let (i, n) = frac.split_once('/')?;
    Some((timed, i.trim().parse().ok()?, n.trim().parse().ok()?))
}

impl Parser for SimplerOwnParser {
    fn feed(&mut self, line: &OutputLine) {
        let text = line.text.trim();
        if text.contains("golden check FAILED") || text.contains("SIMPLER_EXECUTE_FAILED") {
            self.out.correctness = Some(false);
            self.out.error.get_or_insert_with(|| text.to_string());
            return;
        }
        if line.stream != Stream::Stdout {
            return;
        }
        if text.starts_with("SIMPLER_EXECUTE_DONE") {
            if self.out.correctness.is_none() {
                self.out.correctness = Some(true);
            }
            return;
        }
        let Some((timed, i, _n)) = round_tag(text) else {
            return;
        };
        let Some(execute) = field(text, "execute_s")
            .and_then(|v| v.trim_end_matches('s').parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v >= 0.0)
        else {
            self.out
                .warnings
                .push(format!("unreadable round line (truncated?): {text}"));
            return;
        };
        if timed {
            self.timed_seen += 1;
        }
        let round = if timed { self.ctx.warmup + i } else { i };
        self.out.samples.push(Sample {
            round,
            phase: Sample::label(timed, i),
            execute_s: Some(execute),
            ok: true,
            bw_execute_mb_s: bandwidth(self.ctx.n_bytes, execute),
            ..Sample::default()
        });
    }

    fn finish(mut self: Box<Self>) -> Parsed {
        if self.out.correctness.is_none() {
            self.out
                .warnings
                .push("output ended before SIMPLER_EXECUTE_DONE".to_string());
        }
        if self.ctx.timed > 0 && self.timed_seen < self.ctx.timed {
            self.out.warnings.push(format!(
                "{} of {} timed rounds reported",
                self.timed_seen, self.ctx.timed
            ));
        }
        self.out
    }
}
