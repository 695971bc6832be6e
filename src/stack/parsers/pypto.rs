//! Parser `pypto-harness`: the OLD Python harness's own pypto runner output — round lines,
//! `PYPTO_ALLREDUCE_OK`, `PYPTO_COMPILE_PROFILE` and the older markers. pypto itself never
//! prints these (its tests give pytest's result and the runtime's STRACE spans: parser
//! `pytest`); this stays only to read results of the old harness's runner.
//!
//! ```text
//! round 1: ok=True execute=0.000412s device_wall=0.000198 phases={'compile': 1.9, 'init': 0.4, 'execute': 0.000412}
//! PYPTO_COMPILE_PROFILE total=2.314 passes=1.802 codegen=0.377
//! PYPTO_ALLREDUCE_OK
//! ```
//! One sample per round line. Labels: when exactly warmup + timed rounds printed, the first
//! `warmup` are warmups; otherwise every round is timed (pypto chose its own round count) and a
//! warning says so. `device_wall=None` leaves `device_wall_s` empty (the STRACE wrapper may
//! fill it). The compile profile goes on the first sample. Output without round lines falls back
//! to the older markers (`PYPTO_COMPILE_BEGIN` … `PYPTO_ALLREDUCE_OK`): one sample with phases.
//! pytest's own `FAILED` / `ERROR` summary lines are declared failures.

use std::collections::BTreeMap;

use regex::Regex;

use crate::model::output::{OutputLine, Stream};
use crate::model::results::Sample;
use crate::model::stack::StackDef;
use crate::stack::parsers::hccl::{bandwidth, field};
use crate::stack::parsers::markers::{MarkerSet, MarkersParser, PYPTO};
use crate::stack::parsers::{ParseContext, Parsed, Parser};

pub fn parser(_def: &StackDef, ctx: &ParseContext) -> Box<dyn Parser> {
    Box::new(PyptoParser {
        ctx: ctx.clone(),
        markers: MarkersParser::new(MarkerSet::builtin(PYPTO), ctx),
        rounds: Vec::new(),
        compile_profile: BTreeMap::new(),
        out: Parsed::default(),
        round_re: Regex::new(
            r"^round (\d+): ok=(\w+) execute=(\S+?)s? device_wall=(\S+) phases=(\{[^}]*\})?(.*)$",
        )
        .expect("static regex"),
        phase_re: Regex::new(r"'([^']+)':\s*([-+0-9.eE]+)").expect("static regex"),
    })
}

struct PyptoParser {
    ctx: ParseContext,
    markers: MarkersParser,
    rounds: Vec<Sample>,
    compile_profile: BTreeMap<String, f64>,
    out: Parsed,
    round_re: Regex,
    phase_re: Regex,
}

fn seconds(text: &str) -> Option<f64> {
    text.trim_end_matches('s')
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
}

impl PyptoParser {
    fn round_line(&mut self, text: &str) {
        let Some(c) = self.round_re.captures(text) else {
            self.out
                .warnings
                .push(format!("unreadable pypto round line (truncated?): {text}"));
            return;
        };
        let ok = &c[2] == "True";
        let Some(execute) = seconds(&c[3]) else {
            self.out
                .warnings
                .push(format!("unreadable execute time: {text}"));
            return;
        };
        let device_wall = seconds(&c[4]);
        let phases: BTreeMap<String, f64> = c
            .get(5)
            .map(|m| {
                self.phase_re
                    .captures_iter(m.as_str())
                    .filter_map(|p| Some((p[1].to_string(), p[2].parse::<f64>().ok()?)))
                    .collect()
            })
            .unwrap_or_default();
        if !ok {
            self.out.correctness = Some(false);
            let err = c.get(6).map_or("", |m| m.as_str().trim());
            self.out.error.get_or_insert_with(|| {
                if err.is_empty() {
                    format!("round {} failed", &c[1])
                } else {
                    err.to_string()
                }
            });
        }
        self.rounds.push(Sample {
            execute_s: Some(execute),
            ok,
            bw_execute_mb_s: bandwidth(self.ctx.n_bytes, execute),
            phases,
            device_wall_s: device_wall,
            ..Sample::default()
        });
    }
}

impl Parser for PyptoParser {
    fn feed(&mut self, line: &OutputLine) {
        self.markers.feed_line(line);
        if line.stream != Stream::Stdout {
            return;
        }
        let text = line.text.trim();
        if text.starts_with("round ") && text.contains(": ok=") {
            self.round_line(text);
        } else if text.starts_with("PYPTO_COMPILE_PROFILE") {
            for key in ["total", "passes", "codegen"] {
                if let Some(v) = field(text, key).and_then(seconds) {
                    self.compile_profile.insert(key.to_string(), v);
                }
            }
        } else if text.starts_with("PYPTO_ALLREDUCE_OK") {
            if self.out.correctness.is_none() {
                self.out.correctness = Some(true);
            }
        } else if text.starts_with("FAILED ") || text.starts_with("ERROR ") {
            self.out.correctness = Some(false);
            self.out.error.get_or_insert_with(|| text.to_string());
        }
    }

    fn finish(self: Box<Self>) -> Parsed {
        let PyptoParser {
            ctx,
            markers,
            mut rounds,
            compile_profile,
            mut out,
            ..
        } = *self;
        if rounds.is_empty() {
            // The older pytest form: markers only.
            let fallback = markers.into_parsed();
            out.warnings.extend(fallback.warnings);
            if out.correctness.is_none() {
                out.correctness = fallback.correctness;
            }
            if out.error.is_none() {
                out.error = fallback.error;
            }
            rounds = fallback.samples;
            if let Some(s) = rounds.first_mut() {
                s.ok = out.correctness == Some(true);
            }
        } else {
            let n = rounds.len() as u32;
            let warmup = if ctx.warmup > 0 && n == ctx.warmup + ctx.timed {
                ctx.warmup
            } else {
                if ctx.timed > 0 && n != ctx.timed {
                    out.warnings.push(format!(
                        "{n} rounds printed, expected {} (+{} warmup): all counted as timed",
                        ctx.timed, ctx.warmup
                    ));
                }
                0
            };
            for (i, s) in rounds.iter_mut().enumerate() {
                let i = i as u32 + 1;
                s.round = i;
                s.phase = if i <= warmup {
                    Sample::label(false, i)
                } else {
                    Sample::label(true, i - warmup)
                };
            }
            if out.correctness.is_none() {
                out.warnings
                    .push("output ended before PYPTO_ALLREDUCE_OK".to_string());
            }
        }
        if let Some(first) = rounds.first_mut() {
            first.compile_profile = compile_profile;
        }
        out.samples = rounds;
        out
    }
}
