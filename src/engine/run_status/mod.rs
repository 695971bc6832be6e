//! The status of a run from how its process ended and what its parser found.
//!
//! Owns the rules: `timeout` (killed at the wall-clock or no-output limit — the reason says which
//! and after how long), `fail` (non-zero exit, killed by a signal, declared golden mismatch, a
//! round with ok=false, fewer rounds than asked, a protocol error: a sample value that is not
//! finite, not positive or longer than the run's timeout — the reason says which),
//! `interrupted`, else `pass`. Also fills what the engine knows about samples (labels,
//! engine-measured times, bandwidth recomputed from bytes and time). A failure's reason ends with
//! its cause: the most telling output line (`verdict::cause`). Pure: no I/O, no clocks.

mod cause;

pub(crate) use cause::Cause;

use std::time::Duration;

use crate::executor::{KillReason, ProcessOutcome, ProcessSpec};
use crate::model::results::{Metric, RunStatus, Sample, GOLDEN_MISMATCH};
use crate::stack::parsers::Parsed;

fn secs(d: Duration) -> String {
    crate::model::units::format_seconds(d.as_secs_f64())
}

/// Why a process did not end well, if it did not.
pub(crate) fn process_problem(
    o: &ProcessOutcome,
    limits: &ProcessSpec,
) -> Option<(RunStatus, String)> {
    match o.killed {
        Some(KillReason::Timeout) => {
            let limit = limits.timeout.map(secs).unwrap_or_else(|| "?".into());
            return Some((
                RunStatus::Timeout,
                format!(
                    "wall-clock timeout ({limit}) reached after {}; killed",
                    secs(o.elapsed)
                ),
            ));
        }
        Some(KillReason::NoOutput) => {
            let limit = limits
                .no_output_timeout
                .map(secs)
                .unwrap_or_else(|| "?".into());
            return Some((
                RunStatus::Timeout,
                format!(
                    "no output for {limit} (no_output_timeout), killed after {}",
                    secs(o.elapsed)
                ),
            ));
        }
        Some(KillReason::Interrupted) => {
            return Some((RunStatus::Interrupted, "interrupted".into()));
        }
        None => {}
    }
    if let Some(sig) = o.signal {
        return Some((RunStatus::Fail, format!("killed by signal {sig}")));
    }
    match o.exit_code {
        Some(0) => None,
        Some(c) => Some((RunStatus::Fail, format!("exit code {c}"))),
        None => Some((RunStatus::Fail, "ended without an exit code".into())),
    }
}

/// Number the rounds (1-based, warmup first) and label them where the parser did not.
pub(crate) fn label(samples: &mut [Sample], warmup: u32) {
    for (i, s) in samples.iter_mut().enumerate() {
        let i = i as u32;
        if s.round == 0 {
            s.round = i + 1;
        }
        if s.phase.is_empty() {
            s.phase = if i < warmup {
                Sample::label(false, i + 1)
            } else {
                Sample::label(true, i + 1 - warmup)
            };
        }
    }
}

/// Fill engine-known values: `wall_s` (when `elapsed` is one round's process time) and
/// `execute_s` when the stack gave none (timing source `engine`), and recompute bandwidth.
/// A round that did not complete (`ok` false) observed no timed window: it gets no `execute_s`
/// from the engine and no bandwidth. Returns true when any `execute_s` came from the engine.
pub(crate) fn complete(samples: &mut [Sample], elapsed: Option<Duration>, n_bytes: u64) -> bool {
    let mut engine = false;
    for s in samples.iter_mut() {
        if let Some(e) = elapsed {
            s.wall_s.get_or_insert(e.as_secs_f64());
        }
        if s.execute_s.is_none() && s.ok {
            if let Some(w) = s.wall_s {
                s.execute_s = Some(w);
                engine = true;
            }
        }
        s.bw_execute_mb_s = s
            .execute_s
            .filter(|t| s.ok && *t > 0.0 && t.is_finite() && s.n_bytes != Some(0))
            .map(|t| s.n_bytes.unwrap_or(n_bytes) as f64 / t / 1e6);
    }
    engine
}

/// The status of a run from its last process outcome and everything parsed. `cause` is the
/// most telling line of the last process's output ([`Cause::text`]): a failure or timeout the
/// stack did not explain itself (no `error` of its own) carries it.
#[allow(clippy::too_many_arguments)]
pub(crate) fn judge(
    outcome: &ProcessOutcome,
    parsed: &Parsed,
    samples: &[Sample],
    warmup: u32,
    timed: u32,
    limits: &ProcessSpec,
    cause: Option<&str>,
    metric: Metric,
) -> (RunStatus, Option<String>) {
    // The reason quotes the stack's own words: shown, never acted on, wherever it is printed
    // (`model::text::visible`; run.log keeps the raw bytes).
    let (status, reason) = judge_raw(
        outcome, parsed, samples, warmup, timed, limits, cause, metric,
    );
    (
        status,
        reason.map(|r| crate::model::text::visible(&r).into_owned()),
    )
}

#[allow(clippy::too_many_arguments)]
fn judge_raw(
    outcome: &ProcessOutcome,
    parsed: &Parsed,
    samples: &[Sample],
    warmup: u32,
    timed: u32,
    limits: &ProcessSpec,
    cause: Option<&str>,
    metric: Metric,
) -> (RunStatus, Option<String>) {
    let said = |base: String| match (&parsed.error, cause) {
        (Some(e), _) => format!("{base}: {e}"),
        (None, Some(c)) => format!("{base}: {c}"),
        (None, None) => base,
    };
    let problem = process_problem(outcome, limits);
    // A golden mismatch the stack printed is the verdict even when it then exits non-zero (as
    // simpler does right after `golden check FAILED`): the check ran and did not match. Killed
    // runs (timeout, signal, interrupt) stay what the machine did to them.
    let exited = outcome.killed.is_none() && outcome.signal.is_none();
    if parsed.correctness == Some(false) && exited {
        let how = match &problem {
            Some((_, why)) => format!(" ({why})"),
            None => String::new(),
        };
        return (
            RunStatus::Fail,
            Some(said(format!("the stack reported a {GOLDEN_MISMATCH}{how}"))),
        );
    }
    if let Some((status, reason)) = problem {
        if status == RunStatus::Interrupted {
            return (status, Some(reason));
        }
        return (status, Some(said(reason)));
    }
    if let Some(bad) = samples.iter().find(|s| !s.ok) {
        // Only timed rounds are checked against the golden; a warmup's ok=false means the
        // round did not complete.
        let what = if bad.is_timed() {
            GOLDEN_MISMATCH
        } else {
            "did not complete"
        };
        return (
            RunStatus::Fail,
            Some(said(format!(
                "round {} ({}) reported ok=false ({what})",
                bad.round, bad.phase
            ))),
        );
    }
    let mut errors = protocol_errors(samples, limits.timeout);
    errors.extend(missing_metric(samples, metric));
    if !errors.is_empty() {
        return (
            RunStatus::Fail,
            Some(format!("protocol error: {}", errors.join("; "))),
        );
    }
    let n_timed = samples.iter().filter(|s| s.is_timed()).count() as u32;
    let n_warmup = samples.len() as u32 - n_timed;
    if n_timed < timed || n_warmup < warmup {
        let mut reason = format!(
            "missing output: found {n_warmup} of {warmup} warmup and {n_timed} of {timed} timed rounds"
        );
        if let Some(w) = parsed.warnings.first() {
            reason.push_str(&format!(" (garbage output: {w})"));
        }
        if let Some(e) = &parsed.error {
            reason.push_str(&format!(": {e}"));
        } else if let Some(c) = cause {
            reason.push_str(&format!(": {c}"));
        }
        return (RunStatus::Fail, Some(reason));
    }
    (RunStatus::Pass, None)
}

fn before_devices() -> &'static regex::Regex {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        regex::Regex::new(concat!(
            // Python exceptions of argument checks, imports and the program's own code.
            r"\b(?:ValueError|TypeError|KeyError|ImportError|ModuleNotFoundError|SyntaxError",
            r"|IndentationError|NameError|AttributeError|FileNotFoundError|PermissionError",
            r"|ArgumentError):",
            // argparse usage errors, a compiler's `file:line: error:`.
            r"|: error: (?:argument|unrecognized arguments|the following arguments)",
            r"|^[^ ]+:\d+(?::\d+)?: (?:fatal )?error:|[^ ]+\.(?:c|cc|cpp|cxx|h|hpp):\d+(?::\d+)?: (?:fatal )?error:",
            // Test selections that ran nothing.
            r"|pytest ran no test|pytest skipped the selected test|no test executed",
        ))
        .expect("static regex")
    })
}

/// Does this failed run say anything about its devices' health (for `quarantine_after`)? Not
/// when it failed before any device was touched: its cause is a Python exception of an argument
/// check, an import or a name (`ValueError`, `ModuleNotFoundError`, …), an argparse usage error,
/// a compiler `error:`, or a test selection that ran nothing. Timeouts, signals, golden
/// mismatches and every other failure implicate the devices.
pub(crate) fn implicates_devices(status: RunStatus, reason: Option<&str>) -> bool {
    match status {
        RunStatus::Fail => {
            let reason = reason.unwrap_or("");
            reason.contains(GOLDEN_MISMATCH)
                || reason.starts_with("killed by signal")
                || !before_devices().is_match(reason)
        }
        _ => true,
    }
}

/// A completed round without the stack's declared headline metric. Only `device_wall_s` can be
/// missing (the engine fills `execute_s` and `wall_s` itself): it comes from the runtime's
/// STRACE `…runner_run.device_wall` spans, and is never silently replaced by another metric.
pub(crate) fn missing_metric(samples: &[Sample], metric: Metric) -> Vec<String> {
    if metric != Metric::DeviceWallS {
        return Vec::new();
    }
    let missing: Vec<String> = samples
        .iter()
        .filter(|s| s.ok && s.device_wall_s.is_none())
        .map(|s| format!("{} ({})", s.round, s.phase))
        .collect();
    if missing.is_empty() {
        return Vec::new();
    }
    vec![format!(
        "round {} has no device_wall_s, this stack's declared metric: the output holds no STRACE `…runner_run.device_wall` span for it — likely the runtime's log threshold is above TIMING (simpler's logger level, `--log-level`) or SIMPLER_DEVICE_STRACE_ENABLE=0",
        missing.join(", round ")
    )]
}

pub(crate) use crate::model::sample_values::protocol_errors;

#[cfg(test)]
mod tests {
    use super::*;

    fn ok_outcome() -> ProcessOutcome {
        ProcessOutcome {
            exit_code: Some(0),
            signal: None,
            killed: None,
            elapsed: Duration::from_millis(1500),
            cpu_wait: None,
        }
    }

    fn samples(n: usize) -> Vec<Sample> {
        let mut v: Vec<Sample> = (0..n)
            .map(|_| Sample {
                ok: true,
                execute_s: Some(0.5),
                ..Sample::default()
            })
            .collect();
        label(&mut v, 1);
        v
    }

    #[test]
    fn pass_needs_every_round() {
        let p = Parsed::default();
        let l = ProcessSpec::default();
        assert_eq!(
            judge(
                &ok_outcome(),
                &p,
                &samples(3),
                1,
                2,
                &l,
                None,
                Metric::ExecuteS
            )
            .0,
            RunStatus::Pass
        );
        let (st, why) = judge(
            &ok_outcome(),
            &p,
            &samples(2),
            1,
            2,
            &l,
            None,
            Metric::ExecuteS,
        );
        assert_eq!(st, RunStatus::Fail);
        assert_eq!(
            why.unwrap(),
            "missing output: found 1 of 1 warmup and 1 of 2 timed rounds"
        );
        let garbage = Parsed {
            warnings: vec!["line 1: not a sample".into()],
            ..Parsed::default()
        };
        let why = judge(
            &ok_outcome(),
            &garbage,
            &[],
            1,
            2,
            &l,
            None,
            Metric::ExecuteS,
        )
        .1
        .unwrap();
        assert!(why.contains("garbage output: line 1"), "{why}");
    }

    #[test]
    fn absurd_samples_are_protocol_errors() {
        let l = ProcessSpec {
            timeout: Some(Duration::from_secs(60)),
            ..ProcessSpec::default()
        };
        let p = Parsed::default();
        let mut v = samples(4);
        v[1].execute_s = Some(1.7e308);
        v[2].execute_s = Some(0.0);
        v[3].phases.insert("init".into(), -0.5);
        let (st, why) = judge(&ok_outcome(), &p, &v, 1, 3, &l, None, Metric::ExecuteS);
        assert_eq!(st, RunStatus::Fail);
        let why = why.unwrap();
        assert!(why.starts_with("protocol error: "), "{why}");
        assert!(
            why.contains("round 2 (timed-1) execute_s = 170000000000000000000000"),
            "{why}"
        );
        assert!(
            why.contains("longer than the run's timeout (60 s)"),
            "{why}"
        );
        assert!(
            why.contains("round 3 (timed-2) execute_s = 0 (must be > 0)"),
            "{why}"
        );
        assert!(
            why.contains("round 4 (timed-3) phases.init = -0.5 (must be >= 0)"),
            "{why}"
        );
        v[1].execute_s = Some(f64::NAN);
        assert!(protocol_errors(&v, None)[0].contains("execute_s is not a finite number"));
    }

    #[test]
    fn a_failed_round_gets_no_engine_time_and_no_bandwidth() {
        let mut v = samples(2);
        v[1].execute_s = None;
        v[1].ok = false;
        complete(&mut v, Some(Duration::from_secs(15)), 4_000_000);
        assert_eq!(v[1].execute_s, None);
        assert_eq!(v[1].bw_execute_mb_s, None);
        assert_eq!(
            v[1].wall_s,
            Some(15.0),
            "the process time is still its wall time"
        );
    }

    #[test]
    fn labels_and_bandwidth() {
        let mut v = samples(3);
        assert_eq!(v[0].phase, "warmup-1");
        assert_eq!(v[2].phase, "timed-2");
        assert_eq!(v[2].round, 3);
        v[0].execute_s = None;
        assert!(complete(&mut v, Some(Duration::from_secs(2)), 4_000_000));
        assert_eq!(v[0].execute_s, Some(2.0));
        assert_eq!(v[1].bw_execute_mb_s, Some(8.0));
    }

    #[test]
    fn failures_before_any_device_do_not_implicate_devices() {
        let r = |status: RunStatus, error: &'static str| (status, Some(error));
        for before in [
            "exit code 1: ValueError: allreduce needs between 2 and 16 devices, got 17 (see run.log)",
            "exit code 1: ModuleNotFoundError: No module named 'torch' (see run.log)",
            "exit code 2: main.py: error: argument -d/--device: expected one argument (see run.log)",
            "exit code 1: kernel.cpp:12:5: error: unknown type name 'Tile' (see run.log)",
            "missing output: found 0 of 0 warmup and 0 of 1 timed rounds: pytest ran no test: the selection x matched nothing",
        ] {
            assert!({ let (s, e) = r(RunStatus::Fail, before); !implicates_devices(s, e) }, "{before}");
        }
        for device in [
            "exit code 1: aclrtSetDevice failed: 507033 (see run.log)",
            "the stack reported a golden mismatch (exit code 1): [allreduce] golden check FAILED",
            "killed by signal 9",
        ] {
            assert!(
                {
                    let (s, e) = r(RunStatus::Fail, device);
                    implicates_devices(s, e)
                },
                "{device}"
            );
        }
        assert!(implicates_devices(
            RunStatus::Timeout,
            Some("ValueError: x")
        ));
    }

    #[test]
    fn a_declared_device_wall_metric_must_be_there() {
        let l = ProcessSpec::default();
        let p = Parsed::default();
        let mut v = samples(3);
        v[1].device_wall_s = Some(0.001);
        v[2].device_wall_s = Some(0.001);
        let (st, why) = judge(&ok_outcome(), &p, &v, 1, 2, &l, None, Metric::DeviceWallS);
        assert_eq!(st, RunStatus::Fail);
        let why = why.unwrap();
        assert!(
            why.starts_with("protocol error: round 1 (warmup-1) has no device_wall_s"),
            "{why}"
        );
        assert!(
            why.contains("above TIMING") && why.contains("SIMPLER_DEVICE_STRACE_ENABLE=0"),
            "{why}"
        );
        v[0].device_wall_s = Some(0.002);
        assert_eq!(
            judge(&ok_outcome(), &p, &v, 1, 2, &l, None, Metric::DeviceWallS).0,
            RunStatus::Pass
        );
        // Other metrics never need it.
        assert_eq!(
            judge(
                &ok_outcome(),
                &p,
                &samples(3),
                1,
                2,
                &l,
                None,
                Metric::ExecuteS
            )
            .0,
            RunStatus::Pass
        );
    }

    #[test]
    fn missing_rounds_say_the_parsers_error() {
        let l = ProcessSpec::default();
        let p = Parsed {
            error: Some("pytest ran no test: the selection t.py::C::f[2-3] matched nothing".into()),
            ..Parsed::default()
        };
        let why = judge(
            &ok_outcome(),
            &p,
            &[],
            0,
            1,
            &l,
            Some("x (see run.log)"),
            Metric::ExecuteS,
        )
        .1
        .unwrap();
        assert!(
            why.ends_with(": pytest ran no test: the selection t.py::C::f[2-3] matched nothing"),
            "{why}"
        );
    }

    #[test]
    fn reasons_name_the_cause() {
        let p = Parsed::default();
        let l = ProcessSpec {
            timeout: Some(Duration::from_secs(2)),
            no_output_timeout: Some(Duration::from_secs(1)),
            ..ProcessSpec::default()
        };
        let mut o = ok_outcome();
        o.exit_code = Some(3);
        assert_eq!(
            judge(&o, &p, &samples(3), 1, 2, &l, None, Metric::ExecuteS)
                .1
                .unwrap(),
            "exit code 3"
        );
        let cause = Some("ValueError: got 17 (see run.log)");
        assert_eq!(
            judge(&o, &p, &samples(3), 1, 2, &l, cause, Metric::ExecuteS)
                .1
                .unwrap(),
            "exit code 3: ValueError: got 17 (see run.log)"
        );
        o.exit_code = None;
        o.killed = Some(KillReason::Timeout);
        let (st, why) = judge(&o, &p, &[], 1, 2, &l, None, Metric::ExecuteS);
        assert_eq!(st, RunStatus::Timeout);
        assert!(
            why.unwrap().starts_with("wall-clock timeout (2"),
            "timeout reason"
        );
        o.killed = Some(KillReason::NoOutput);
        assert!(judge(&o, &p, &[], 1, 2, &l, None, Metric::ExecuteS)
            .1
            .unwrap()
            .contains("no_output_timeout"));
        let wrong = Parsed {
            correctness: Some(false),
            error: Some("rank 1 element 7: got 3, expected 4".into()),
            ..Parsed::default()
        };
        // The stack's own words win over the output's last error line.
        let why = judge(
            &ok_outcome(),
            &wrong,
            &samples(3),
            1,
            2,
            &l,
            cause,
            Metric::ExecuteS,
        )
        .1
        .unwrap();
        assert_eq!(
            why,
            "the stack reported a golden mismatch: rank 1 element 7: got 3, expected 4"
        );
        // A mismatch marker beats the exit code that follows it: correctness `fail`.
        let mut exited = ok_outcome();
        exited.exit_code = Some(1);
        let (st, why) = judge(
            &exited,
            &wrong,
            &samples(3),
            1,
            2,
            &l,
            cause,
            Metric::ExecuteS,
        );
        assert_eq!(st, RunStatus::Fail);
        assert_eq!(
            why.unwrap(),
            "the stack reported a golden mismatch (exit code 1): rank 1 element 7: got 3, expected 4"
        );
        o.killed = Some(KillReason::Interrupted);
        assert_eq!(
            judge(&o, &p, &[], 1, 2, &l, cause, Metric::ExecuteS)
                .1
                .unwrap(),
            "interrupted"
        );
    }
}
