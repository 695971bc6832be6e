//! Tests of the `regex` parser and the parser factory.

use std::time::Duration;

use super::*;
use crate::model::output::Stream;
use crate::model::stack::StackDef;
use crate::stack::parsers::make;

fn ctx(warmup: u32) -> ParseContext {
    ParseContext {
        n_bytes: 1_000_000,
        p: 4,
        warmup,
        timed: 3,
        argv: Vec::new(),
    }
}

fn patterns(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn parse(pats: &[(&str, &str)], warmup: u32, lines: &[(Stream, &str)]) -> Parsed {
    let mut parser: Box<dyn Parser> =
        Box::new(RegexParser::new(&patterns(pats), ctx(warmup)).unwrap());
    for (i, (stream, text)) in lines.iter().enumerate() {
        parser.feed(&OutputLine {
            stream: *stream,
            at: Duration::from_millis(i as u64),
            text: text.to_string(),
        });
    }
    parser.finish()
}

fn config_err(pats: &[(&str, &str)]) -> String {
    match RegexParser::new(&patterns(pats), ctx(0)) {
        Ok(_) => panic!("expected a configuration error"),
        Err(e) => e.to_string(),
    }
}

const OUT: Stream = Stream::Stdout;
const ERR: Stream = Stream::Stderr;

#[test]
fn one_line_per_round_with_phase_and_done() {
    let parsed = parse(
        &[
            (
                "sample",
                r"^\[(?P<phase>warmup|timed) \d+/\d+\] execute_s=(?P<execute_s>\S+)",
            ),
            ("done", r"SIMPLER_EXECUTE_DONE"),
        ],
        0,
        &[
            (OUT, "[session] opening worker"),
            (OUT, "[warmup 1/1] execute_s=0.004"),
            (
                ERR,
                "[mono_ns=1][T0x1][TIMING] emit_host_span: [STRACE] v=1 name=chip.run dur=5",
            ),
            (OUT, "[timed 1/2] execute_s=0.0005"),
            (OUT, "[timed 2/2] execute_s=0.00025"),
            (OUT, "SIMPLER_EXECUTE_DONE"),
        ],
    );
    assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
    assert_eq!(parsed.correctness, Some(true));
    let got: Vec<(u32, &str, Option<f64>)> = parsed
        .samples
        .iter()
        .map(|s| (s.round, s.phase.as_str(), s.execute_s))
        .collect();
    assert_eq!(
        got,
        vec![
            (1, "warmup-1", Some(0.004)),
            (2, "timed-1", Some(0.0005)),
            (3, "timed-2", Some(0.00025)),
        ]
    );
    // 1 MB in 0.5 ms: 2000 MB/s.
    assert_eq!(parsed.samples[1].bw_execute_mb_s, Some(2000.0));
}

#[test]
fn fields_before_the_closing_line_attach_to_its_round_and_units_scale() {
    let parsed = parse(
        &[
            ("execute_s", r"^round \d+: (?P<value_us>\S+) us"),
            ("setup_s", r"setup took (?P<value_ms>[0-9.]+) ms"),
            ("device_wall_s", r"device_wall dur=(?P<device_wall_ns>\d+)"),
            ("fail", r"FAILED: (?P<error>.*)"),
        ],
        1,
        &[
            (OUT, "setup took 1250 ms"),
            (ERR, "device_wall dur=2000000"),
            (OUT, "round 1: 2500 us"),
            (OUT, "round 2: 100 us"),
            (OUT, "round 3: garbage us"),
            (OUT, "round 4: 1e999 us"),
            (ERR, "FAILED: rank 2 mismatch at element 7"),
            (OUT, "setup took 3 ms"),
        ],
    );
    assert_eq!(parsed.correctness, Some(false));
    assert_eq!(
        parsed.error.as_deref(),
        Some("rank 2 mismatch at element 7")
    );
    let s = &parsed.samples;
    assert_eq!(s.len(), 4);
    assert_eq!(s[0].phase, "warmup-1");
    assert_eq!(s[0].setup_s, Some(1.25));
    assert_eq!(s[0].device_wall_s, Some(0.002));
    assert!((s[0].execute_s.unwrap() - 0.0025).abs() < 1e-12);
    assert_eq!(s[1].phase, "timed-1");
    assert_eq!(s[1].setup_s, None);
    assert!(s[1].ok);
    // Unreadable times close their round as not ok, with a warning each.
    assert_eq!((s[2].execute_s, s[2].ok), (None, false));
    assert_eq!((s[3].execute_s, s[3].ok), (None, false));
    assert_eq!(parsed.warnings.len(), 3, "{:?}", parsed.warnings);
    assert!(parsed.warnings[0].starts_with("line 5: patterns.execute_s matched but `garbage`"));
    assert!(parsed.warnings[1].starts_with("line 6: patterns.execute_s matched but `1e999`"));
    assert_eq!(
        parsed.warnings[2],
        "line 8: setup_s matched after the last round ended; ignored"
    );
}

#[test]
fn positional_phases_and_ok_capture() {
    let parsed = parse(
        &[("execute_s", r"execute=(?P<value>[0-9.]+) ok=(?P<ok>\w+)")],
        2,
        &[
            (OUT, "round 1: execute=0.1 ok=True"),
            (OUT, "round 2: execute=0.1 ok=True"),
            (OUT, "round 3: execute=0.2 ok=False"),
            (OUT, "\u{0}\u{7f}binary junk execute="),
        ],
    );
    let got: Vec<(&str, bool)> = parsed
        .samples
        .iter()
        .map(|s| (s.phase.as_str(), s.ok))
        .collect();
    assert_eq!(
        got,
        vec![("warmup-1", true), ("warmup-2", true), ("timed-1", false)]
    );
    assert_eq!(parsed.correctness, None);
}

#[test]
fn configuration_errors_say_what_is_expected() {
    let e = config_err(&[("exec", "x")]);
    assert!(
        e.contains("patterns.exec: unknown pattern key `exec` (known: execute_s, setup_s"),
        "{e}"
    );
    let e = config_err(&[("execute_s", "x(")]);
    assert!(e.contains("patterns.execute_s: invalid regex"), "{e}");
    let e = config_err(&[("execute_s", r"t=(\d+)")]);
    assert!(e.contains("patterns.execute_s: the pattern has no capture to read: expected a named capture `value`"), "{e}");
    let e = config_err(&[("sample", r"t=(?P<value>\d+)")]);
    assert!(
        e.contains("patterns.sample: the pattern has no capture"),
        "{e}"
    );
    let e = config_err(&[("done", "OK")]);
    assert!(
        e.contains("needs patterns.execute_s or patterns.sample"),
        "{e}"
    );
}

#[test]
fn factory_builds_known_parsers_and_lists_them_otherwise() {
    let mut def = StackDef::default();
    assert!(make(&def, &ctx(0)).is_ok());
    def.parser = Some("regex".into());
    assert!(make(&def, &ctx(0)).is_err());
    def.patterns = patterns(&[("execute_s", r"t=(?P<value>\S+)")]);
    assert!(make(&def, &ctx(0)).is_ok());
    def.parser = Some("nccl".into());
    let e = make(&def, &ctx(0)).err().unwrap().to_string();
    assert!(
        e.contains("parser: unknown parser `nccl` (known: native, regex"),
        "{e}"
    );
}
