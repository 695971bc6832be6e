//! Tests of the `native` parser on realistic, garbled and interleaved output.

use std::time::Duration;

use super::*;
use crate::model::output::Stream;

fn ctx() -> ParseContext {
    ParseContext {
        n_bytes: 4_000_000,
        p: 2,
        warmup: 2,
        timed: 3,
        argv: Vec::new(),
    }
}

fn parse(ctx: ParseContext, text: &[(Stream, &str)]) -> Parsed {
    let mut parser: Box<dyn Parser> = Box::new(NativeParser::new(ctx));
    for (i, (stream, line)) in text.iter().enumerate() {
        parser.feed(&OutputLine {
            stream: *stream,
            at: Duration::from_millis(i as u64),
            text: line.to_string(),
        });
    }
    parser.finish()
}

const OUT: Stream = Stream::Stdout;
const ERR: Stream = Stream::Stderr;

#[test]
fn realistic_run_with_interleaved_stderr() {
    let parsed = parse(
        ctx(),
        &[
            (OUT, "[host] mesh p=2 count=1000000 fp32"),
            (ERR, "[STRACE] v=1 pid=17085 name=chip.run ts=0 dur=12"),
            (
                OUT,
                r#"CAMPAIGN_SAMPLE {"phase":"warmup","round":1,"execute_s":0.004,"setup_s":0.12,"ok":true,"wall_s":0.005}"#,
            ),
            (ERR, "warning: something on stderr"),
            (
                OUT,
                r#"CAMPAIGN_SAMPLE {"phase":"warmup","round":2,"execute_s":0.002,"ok":true}"#,
            ),
            (
                OUT,
                r#"CAMPAIGN_SAMPLE {"phase":"timed","round":1,"execute_s":0.002,"per_rank_execute_s":[0.0019,0.002],"ok":true,"phases":{"execute":0.002},"bw_execute_mb_s":999999}"#,
            ),
            (
                ERR,
                r#"  CAMPAIGN_SAMPLE {"phase":"timed","round":2,"execute_s":0.001,"ok":true,"device_wall_s":0.0009}"#,
            ),
            (
                OUT,
                r#"CAMPAIGN_SAMPLE {"phase":"timed","round":3,"execute_s":0.004,"ok":false}"#,
            ),
            (OUT, r#"CAMPAIGN_DONE {"correctness":"pass"}"#),
        ],
    );
    assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
    assert_eq!(parsed.correctness, Some(true));
    let s = &parsed.samples;
    let labels: Vec<(&str, u32)> = s.iter().map(|s| (s.phase.as_str(), s.round)).collect();
    assert_eq!(
        labels,
        vec![
            ("warmup-1", 1),
            ("warmup-2", 2),
            ("timed-1", 3),
            ("timed-2", 4),
            ("timed-3", 5)
        ]
    );
    assert_eq!(s[0].setup_s, Some(0.12));
    assert_eq!(s[0].wall_s, Some(0.005));
    // 4 MB in 2 ms = 2000 MB/s: recomputed, the stack's 999999 ignored.
    assert_eq!(s[2].bw_execute_mb_s, Some(2000.0));
    assert_eq!(s[2].per_rank_execute_s, vec![0.0019, 0.002]);
    assert_eq!(s[2].phases.get("execute"), Some(&0.002));
    assert_eq!(s[3].device_wall_s, Some(0.0009));
    assert!(!s[4].ok);
}

#[test]
fn garbage_and_truncated_json_are_warnings_with_line_numbers() {
    let parsed = parse(
        ctx(),
        &[
            (OUT, "\u{1b}[31mgarbage \u{fffd}\u{fffd} {{{"),
            (OUT, r#"CAMPAIGN_SAMPLE {"phase":"warmup","execute_s":0.0"#),
            (OUT, "CAMPAIGN_SAMPLE not json at all"),
            (OUT, "CAMPAIGN_SAMPLE"),
            (OUT, "CAMPAIGN_SAMPLE [1,2]"),
            (OUT, r#"CAMPAIGN_SAMPLE {"phase":"cooldown","execute_s":1}"#),
            (
                OUT,
                r#"CAMPAIGN_SAMPLE {"phase":"warmup","execute_s":-1,"ok":"yes"}"#,
            ),
            (OUT, r#"CAMPAIGN_DONE {"correctness":"maybe"}"#),
        ],
    );
    let w = &parsed.warnings;
    assert_eq!(w.len(), 8, "{w:#?}");
    assert!(
        w[0].starts_with("line 2: CAMPAIGN_SAMPLE: truncated JSON"),
        "{}",
        w[0]
    );
    assert!(
        w[1].starts_with("line 3: CAMPAIGN_SAMPLE: invalid JSON"),
        "{}",
        w[1]
    );
    assert!(
        w[2].starts_with("line 4: CAMPAIGN_SAMPLE without JSON"),
        "{}",
        w[2]
    );
    assert!(
        w[3].starts_with("line 5: CAMPAIGN_SAMPLE: expected a JSON object"),
        "{}",
        w[3]
    );
    assert!(
        w[4].contains("line 6: CAMPAIGN_SAMPLE: phase \"cooldown\""),
        "{}",
        w[4]
    );
    assert!(
        w[5].contains("line 7: CAMPAIGN_SAMPLE: execute_s is -1"),
        "{}",
        w[5]
    );
    assert!(
        w[6].contains("line 7: CAMPAIGN_SAMPLE: ok is \"yes\""),
        "{}",
        w[6]
    );
    assert!(
        w[7].contains("line 8: CAMPAIGN_DONE: correctness is \"maybe\""),
        "{}",
        w[7]
    );
    // Only the line-7 sample survives, with no time and not ok.
    assert_eq!(parsed.samples.len(), 1);
    assert_eq!(parsed.samples[0].execute_s, None);
    assert!(!parsed.samples[0].ok);
    assert_eq!(parsed.correctness, None);
}

#[test]
fn keyword_must_start_the_line() {
    let parsed = parse(
        ctx(),
        &[
            (
                OUT,
                r#"log: CAMPAIGN_SAMPLE {"phase":"timed","execute_s":1}"#,
            ),
            (OUT, r#"CAMPAIGN_SAMPLES {"phase":"timed","execute_s":1}"#),
            (OUT, "CAMPAIGN_CASE_FILE=/tmp/case.json"),
            (
                OUT,
                "\t CAMPAIGN_SAMPLE\t{\"phase\":\"timed\",\"execute_s\":1}  ",
            ),
        ],
    );
    assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
    assert_eq!(parsed.samples.len(), 1);
    assert_eq!(parsed.samples[0].phase, "timed-1");
}

#[test]
fn missing_phase_follows_the_planned_warmup_count_and_labels_are_renumbered() {
    let parsed = parse(
        ctx(),
        &[
            (OUT, r#"CAMPAIGN_SAMPLE {"execute_s":0.1}"#),
            (OUT, r#"CAMPAIGN_SAMPLE {"execute_s":0.1}"#),
            (OUT, r#"CAMPAIGN_SAMPLE {"execute_s":0.1}"#),
            (
                OUT,
                r#"CAMPAIGN_SAMPLE {"phase":"timed-7","per_rank_execute_s":[0.1,0.3,0.2]}"#,
            ),
        ],
    );
    let labels: Vec<&str> = parsed.samples.iter().map(|s| s.phase.as_str()).collect();
    assert_eq!(labels, vec!["warmup-1", "warmup-2", "timed-1", "timed-2"]);
    // No execute_s: the slowest rank's time.
    assert_eq!(parsed.samples[3].execute_s, Some(0.3));
}

#[test]
fn done_fail_is_sticky_and_carries_the_error() {
    let parsed = parse(
        ctx(),
        &[
            (
                OUT,
                r#"CAMPAIGN_DONE {"correctness":"fail","error":"rank 1: out[3] = 7, expected 8"}"#,
            ),
            (OUT, r#"CAMPAIGN_DONE {"correctness":"pass"}"#),
        ],
    );
    assert_eq!(parsed.correctness, Some(false));
    assert_eq!(
        parsed.error.as_deref(),
        Some("rank 1: out[3] = 7, expected 8")
    );
    assert_eq!(parse(ctx(), &[(OUT, "no protocol")]).correctness, None);
}

#[test]
fn bandwidth_needs_bytes_and_a_positive_time() {
    assert_eq!(bandwidth_mb_s(1_000_000, Some(0.5)), Some(2.0));
    assert_eq!(bandwidth_mb_s(1_000_000, Some(0.0)), None);
    assert_eq!(bandwidth_mb_s(0, Some(0.5)), None);
    assert_eq!(bandwidth_mb_s(1, None), None);
}
