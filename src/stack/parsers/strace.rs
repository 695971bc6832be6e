//! STRACE `device_wall` spans, read from any stack's output: a wrapper around another parser.
//!
//! simpler's runtime prints timing spans on stderr, one per rank process:
//! `… [STRACE] v=1 pid=17085 tid=17085 inv=1 hid=0 depth=2 name=chip.run.runner_run.device_wall ts=0 dur=204292089 clk=dev`.
//! Only spans whose `name` ends exactly in `runner_run.device_wall` count (current
//! `chip.run.…` and older `simpler_run.…` names); `….device_wall.sched`, `chip.run`,
//! `node.graph_build` do not. A round's `device_wall_s` = max `dur` (ns) over its ranks / 1e9.
//!
//! Matching spans to rounds: spans are grouped by invocation (`inv=`), groups ordered by inv;
//! without `inv=`, a new group starts when a pid repeats (each rank prints once per round).
//! Groups are matched to the inner parser's samples in order: equal counts zip; more groups
//! than samples (unreported warmups) match the LAST groups; fewer groups (spans lost at a crash)
//! match the FIRST samples. Any mismatch is a warning. A sample that already has a
//! `device_wall_s` from its own stack keeps it.
//!
//! Format checks (simpler's docs/dfx/host-trace.md): only `v=1` is read — another version is
//! a warning and the span is ignored; names are percent-decoded (`%2E` → `.`) before they are
//! matched; a name the emitter truncated ends in `~` and is refused with a warning (it cannot
//! be told apart from a longer name).

use std::collections::BTreeMap;

use crate::model::output::OutputLine;
use crate::stack::parsers::{Parsed, Parser};

/// The span name suffix that is device wall time.
pub(crate) const DEVICE_WALL_SUFFIX: &str = "runner_run.device_wall";

/// Wrap `inner` so its samples gain `device_wall_s` from STRACE lines.
pub fn wrap(inner: Box<dyn Parser>) -> Box<dyn Parser> {
    Box::new(StraceWrapper {
        inner,
        by_inv: BTreeMap::new(),
        by_order: Vec::new(),
        warnings: Vec::new(),
    })
}

struct StraceWrapper {
    inner: Box<dyn Parser>,
    /// inv → max dur (ns).
    by_inv: BTreeMap<u64, u64>,
    /// Without inv: groups of (pids seen, max dur).
    by_order: Vec<(Vec<u64>, u64)>,
    warnings: Vec<String>,
}

/// One device_wall span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) pid: Option<u64>,
    pub(crate) inv: Option<u64>,
    pub(crate) dur_ns: u64,
}

/// Parse a line if it is a device_wall STRACE span. `Err` for a STRACE device_wall line whose
/// `dur` is unreadable (truncated).
pub(crate) fn device_wall_span(text: &str) -> Option<Result<Span, String>> {
    let at = text.find("[STRACE]")?;
    let rest = &text[at + "[STRACE]".len()..];
    let mut version = None;
    let mut name = None;
    let mut pid = None;
    let mut inv = None;
    let mut dur = None;
    for tok in rest.split_whitespace() {
        let Some((k, v)) = tok.split_once('=') else {
            continue;
        };
        match k {
            "v" => version = Some(v),
            "name" => name = Some(v),
            "pid" => pid = v.parse().ok(),
            "inv" => inv = v.parse().ok(),
            "dur" => dur = Some(v),
            _ => {}
        }
    }
    let raw = name?;
    let name = percent_decode(raw);
    if name.ends_with('~') {
        // Any name may be the head of a device_wall name: never guess.
        return Some(Err(format!(
            "STRACE span name `{raw}` was truncated by the emitter (ends in `~`): cannot tell whether it is a `{DEVICE_WALL_SUFFIX}` span; ignored"
        )));
    }
    if !name.ends_with(DEVICE_WALL_SUFFIX) {
        return None;
    }
    // `xrunner_run.device_wall` is not a `runner_run` span: the suffix must start a segment.
    let head = &name[..name.len() - DEVICE_WALL_SUFFIX.len()];
    if !(head.is_empty() || head.ends_with('.')) {
        return None;
    }
    if version != Some("1") {
        return Some(Err(format!(
            "STRACE span format {} not understood (campaign reads v=1); span ignored: {}",
            version.map_or("without v=".to_string(), |v| format!("v={v}")),
            text.trim()
        )));
    }
    match dur.map(str::parse::<u64>) {
        Some(Ok(dur_ns)) => Some(Ok(Span { pid, inv, dur_ns })),
        _ => Some(Err(format!(
            "device_wall span without a readable dur (truncated?): {}",
            text.trim()
        ))),
    }
}

/// Undo the emitter's `%XX` encoding of names (an invalid escape stays as written).
pub(crate) fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push(h << 4 | l);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Parser for StraceWrapper {
    fn feed(&mut self, line: &OutputLine) {
        self.inner.feed(line);
        match device_wall_span(&line.text) {
            None => {}
            Some(Err(w)) => self.warnings.push(w),
            Some(Ok(span)) => match span.inv {
                Some(inv) => {
                    let e = self.by_inv.entry(inv).or_default();
                    *e = (*e).max(span.dur_ns);
                }
                None => {
                    let pid = span.pid.unwrap_or(0);
                    let start_new = match self.by_order.last() {
                        None => true,
                        Some((pids, _)) => pids.contains(&pid),
                    };
                    if start_new {
                        self.by_order.push((Vec::new(), 0));
                    }
                    let last = self.by_order.last_mut().expect("just ensured");
                    last.0.push(pid);
                    last.1 = last.1.max(span.dur_ns);
                }
            },
        }
    }

    fn finish(self: Box<Self>) -> Parsed {
        let StraceWrapper {
            inner,
            by_inv,
            by_order,
            warnings,
        } = *self;
        let mut parsed = inner.finish();
        parsed.warnings.extend(warnings);
        let groups: Vec<u64> = by_inv
            .into_values()
            .chain(by_order.into_iter().map(|(_, d)| d))
            .collect();
        if groups.is_empty() {
            return parsed;
        }
        let (ns, ng) = (parsed.samples.len(), groups.len());
        if ns != ng {
            parsed.warnings.push(format!(
                "{ng} device_wall rounds for {ns} samples: matched the {}",
                if ng > ns {
                    "last spans"
                } else {
                    "first samples"
                }
            ));
        }
        let skip = ng.saturating_sub(ns);
        for (sample, dur) in parsed.samples.iter_mut().zip(groups.into_iter().skip(skip)) {
            if sample.device_wall_s.is_none() {
                sample.device_wall_s = Some(dur as f64 / 1e9);
            }
        }
        parsed
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::model::output::Stream;
    use crate::model::results::Sample;

    /// An inner parser that yields `n` empty samples.
    struct Fixed(usize);
    impl Parser for Fixed {
        fn feed(&mut self, _line: &OutputLine) {}
        fn finish(self: Box<Self>) -> Parsed {
            Parsed {
                samples: vec![Sample::default(); self.0],
                ..Parsed::default()
            }
        }
    }

    fn run(n: usize, lines: &[&str]) -> Parsed {
        let mut p = wrap(Box::new(Fixed(n)));
        for l in lines {
            p.feed(&OutputLine {
                stream: Stream::Stderr,
                at: Duration::ZERO,
                text: l.to_string(),
            });
        }
        p.finish()
    }

    fn span(pid: u32, inv: Option<u32>, name: &str, dur: u64) -> String {
        let inv = inv.map(|i| format!("inv={i} ")).unwrap_or_default();
        format!("[TIMING] emit_host_span: [STRACE] v=1 pid={pid} tid={pid} {inv}hid=0 depth=2 name={name} ts=0 dur={dur} clk=dev")
    }

    #[test]
    fn only_exact_device_wall_names_count_old_and_new() {
        assert!(
            device_wall_span(&span(1, Some(1), "chip.run.runner_run.device_wall", 5)).is_some()
        );
        assert!(
            device_wall_span(&span(1, Some(1), "simpler_run.runner_run.device_wall", 5)).is_some()
        );
        for other in [
            "chip.run.runner_run.device_wall.sched",
            "chip.run",
            "node.graph_build",
            "chip.run.xrunner_run.device_wall",
        ] {
            assert!(
                device_wall_span(&span(1, Some(1), other, 5)).is_none(),
                "{other}"
            );
        }
        let truncated = "[STRACE] v=1 pid=3 inv=1 name=chip.run.runner_run.device_wall ts=0 dur=12";
        assert!(device_wall_span(truncated).unwrap().is_ok());
        let cut = "[STRACE] v=1 pid=3 inv=1 name=chip.run.runner_run.device_wall ts=0 du";
        assert!(device_wall_span(cut).unwrap().is_err());
    }

    #[test]
    fn version_percent_encoding_and_truncation() {
        // `%2E` is an encoded `.`: the decoded name is a device_wall span.
        let enc = span(1, Some(1), "chip%2Erun.runner_run.device_wall", 7);
        assert_eq!(device_wall_span(&enc).unwrap().unwrap().dur_ns, 7);
        assert_eq!(percent_decode("a%20b%zz%4"), "a b%zz%4");
        // A truncated name is refused with a message saying so.
        let cut = span(1, Some(1), "chip.run.runner_run.devi~", 7);
        let err = device_wall_span(&cut).unwrap().unwrap_err();
        assert!(err.contains("truncated by the emitter"), "{err}");
        // Another format version is not read as v=1.
        let v2 = span(1, Some(1), "chip.run.runner_run.device_wall", 7).replace("v=1", "v=2");
        let err = device_wall_span(&v2).unwrap().unwrap_err();
        assert!(err.contains("v=2 not understood"), "{err}");
    }

    #[test]
    fn rounds_by_inv_max_over_ranks() {
        let name = "chip.run.runner_run.device_wall";
        let lines = [
            span(10, Some(2), name, 300),
            span(10, Some(1), name, 100),
            span(11, Some(1), name, 150),
            span(11, Some(2), name, 250),
        ];
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let p = run(2, &refs);
        let dw: Vec<_> = p.samples.iter().map(|s| s.device_wall_s).collect();
        assert_eq!(dw, [Some(150e-9), Some(300e-9)]);
        assert!(p.warnings.is_empty());

        // More rounds than samples (warmups not reported): the last ones match.
        let p = run(1, &refs);
        assert_eq!(p.samples[0].device_wall_s, Some(300e-9));
        assert!(p.warnings[0].contains("2 device_wall rounds for 1 samples"));
    }

    #[test]
    fn rounds_by_order_without_inv() {
        let name = "simpler_run.runner_run.device_wall";
        let lines = [
            span(10, None, name, 100),
            span(11, None, name, 120),
            span(10, None, name, 90),
            span(11, None, name, 80),
        ];
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let p = run(3, &refs);
        let dw: Vec<_> = p.samples.iter().map(|s| s.device_wall_s).collect();
        assert_eq!(dw, [Some(120e-9), Some(90e-9), None]);
        assert!(p.warnings[0].contains("matched the first samples"));
    }
}
