//! `campaign bench allreduce` end to end: the real binary, real case files, every stdout line
//! parsed as the native protocol, and the exit codes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::util;

/// Write a seed case file with `fields` and return its path.
fn case_file(dir: &Path, name: &str, fields: Value) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string_pretty(&fields).unwrap()).unwrap();
    path
}

fn bench(args: &[&str]) -> Command {
    let mut c = util::campaign();
    c.args(["bench", "allreduce"]).args(args);
    c.env_remove("CAMPAIGN_CASE_FILE");
    c
}

/// Every stdout line, split into (prefix, JSON body); panics on any other line.
fn protocol_lines(o: &Output) -> Vec<(String, Value)> {
    util::stdout(o)
        .lines()
        .map(|line| {
            let (prefix, body) = line
                .split_once(' ')
                .unwrap_or_else(|| panic!("not a protocol line: {line:?}"));
            assert!(
                prefix == "CAMPAIGN_SAMPLE" || prefix == "CAMPAIGN_DONE",
                "unexpected prefix in {line:?}"
            );
            let json: Value = serde_json::from_str(body)
                .unwrap_or_else(|e| panic!("line is not JSON after its prefix ({e}): {line:?}"));
            (prefix.to_string(), json)
        })
        .collect()
}

/// Split into samples and the final DONE, checking DONE is last and unique.
fn samples_and_done(o: &Output) -> (Vec<Value>, Value) {
    let mut lines = protocol_lines(o);
    let (last, done) = lines.pop().expect("no output at all");
    assert_eq!(last, "CAMPAIGN_DONE", "the last line must be CAMPAIGN_DONE");
    assert!(
        lines.iter().all(|(p, _)| p == "CAMPAIGN_SAMPLE"),
        "CAMPAIGN_DONE before the end"
    );
    (lines.into_iter().map(|(_, v)| v).collect(), done)
}

#[test]
fn passing_run_prints_one_sample_per_round_then_done() {
    let dir = util::tempdir();
    let file = case_file(
        dir.path(),
        "ring.json",
        serde_json::json!({"variant": "ring", "p": 3, "count": 1001, "dtype": "fp16",
            "input_formula": "rank_mod16_v1", "warmup_rounds": 2, "timed_rounds": 3}),
    );
    let o = bench(&["--case-file", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "stderr: {}", util::stderr(&o));
    let (samples, done) = samples_and_done(&o);
    assert_eq!(samples.len(), 2 + 3, "warmup + timed SAMPLE lines");
    let phases: Vec<(&str, u64)> = samples
        .iter()
        .map(|s| (s["phase"].as_str().unwrap(), s["round"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        phases,
        vec![
            ("warmup", 1),
            ("warmup", 2),
            ("timed", 3),
            ("timed", 4),
            ("timed", 5)
        ]
    );
    for (i, s) in samples.iter().enumerate() {
        assert_eq!(s["ok"], Value::Bool(true));
        let per_rank: Vec<f64> = s["per_rank_execute_s"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        assert_eq!(per_rank.len(), 3);
        let execute = s["execute_s"].as_f64().unwrap();
        assert_eq!(execute, per_rank.iter().copied().fold(0.0, f64::max));
        assert!(s["wall_s"].as_f64().unwrap() >= execute);
        assert_eq!(
            s.get("setup_s").is_some(),
            i == 0,
            "setup_s on round 1 only"
        );
    }
    assert_eq!(done["correctness"], "pass");
    assert!(done.get("error").is_none());
}

#[test]
fn env_case_file_overrides_and_non_persistent_windows() {
    let dir = util::tempdir();
    let file = case_file(
        dir.path(),
        "mesh8.json",
        serde_json::json!({"variant": "mesh", "p": 8, "count": 5, "dtype": "int32",
            "warmup_rounds": 4, "timed_rounds": 9}),
    );
    // P = 8 threads on a small machine: the barrier must yield, not livelock.
    let o = bench(&["--warmup", "1", "--timed", "2", "--no-persistent"])
        .env("CAMPAIGN_CASE_FILE", &file)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "stderr: {}", util::stderr(&o));
    let (samples, done) = samples_and_done(&o);
    assert_eq!(samples.len(), 3);
    for s in &samples {
        assert!(s["phases"]["alloc"].as_f64().is_some(), "{s}");
        assert!(s["phases"]["release"].as_f64().is_some(), "{s}");
        assert_eq!(s["per_rank_execute_s"].as_array().unwrap().len(), 8);
    }
    assert_eq!(done["correctness"], "pass");
}

#[test]
fn injected_fault_fails_the_run_naming_rank_index_and_values() {
    let dir = util::tempdir();
    let file = case_file(
        dir.path(),
        "twophase.json",
        serde_json::json!({"variant": "twophase", "p": 4, "count": 10, "dtype": "fp32",
            "warmup_rounds": 1, "timed_rounds": 3}),
    );
    let o = bench(&[
        "--case-file",
        file.to_str().unwrap(),
        "--inject-fault",
        "1:2",
    ])
    .output()
    .unwrap();
    assert_eq!(o.status.code(), Some(1), "stderr: {}", util::stderr(&o));
    let (samples, done) = samples_and_done(&o);
    let oks: Vec<bool> = samples.iter().map(|s| s["ok"].as_bool().unwrap()).collect();
    assert_eq!(
        oks,
        vec![true, true, false, true],
        "timed round 2 is round 3"
    );
    assert_eq!(done["correctness"], "fail");
    // rank 1 holds the allreduce 4*i + 600 at i = 5 = 620; the fault writes -(620 + 1000).
    let want = "rank 1 index 5: got -1620, expected 620 (#wrong 1 of 10 elements on rank 1";
    let error = done["error"].as_str().unwrap();
    assert!(error.contains(want), "{error}");
    assert!(error.contains("1 of 3 timed rounds failed"), "{error}");
    assert!(util::stderr(&o).contains(want), "{}", util::stderr(&o));
}

#[test]
fn bad_case_files_and_options_exit_2_with_the_reason() {
    let dir = util::tempdir();
    let invalid = case_file(
        dir.path(),
        "bad.json",
        serde_json::json!({"variant": "ring", "p": 1, "count": 8}),
    );
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, "{\"variant\": \"ring\",\n  \"p\": }").unwrap();
    let missing = dir.path().join("missing.json");
    for (file, needle) in [
        (&invalid, "p must be >= 2"),
        (&broken, "broken.json:2:"),
        (&missing, "cannot read the case file"),
    ] {
        let o = bench(&["--case-file", file.to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{}", file.display());
        assert!(util::stderr(&o).contains(needle), "{}", util::stderr(&o));
        let (samples, done) = samples_and_done(&o);
        assert!(samples.is_empty());
        assert_eq!(done["correctness"], "fail");
        assert!(done["error"].as_str().unwrap().contains(needle));
    }

    let good = case_file(
        dir.path(),
        "good.json",
        serde_json::json!({"variant": "mesh", "p": 2, "count": 8}),
    );
    for (args, needle) in [
        (vec!["--inject-fault", "2:1"], "RANK must be below p = 2"),
        (vec!["--timed", "0"], "--timed must be at least 1"),
    ] {
        let o = bench(&["--case-file", good.to_str().unwrap()])
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(util::stderr(&o).contains(needle), "{}", util::stderr(&o));
    }
}

#[test]
fn the_documented_shell_stack_speaks_the_protocol() {
    let doc = std::fs::read_to_string(util::root().join("docs/stack-protocol.md")).unwrap();
    let script = doc
        .split("```sh\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("docs/stack-protocol.md has a ```sh example");
    let dir = util::tempdir();
    let path = dir.path().join("mystack.sh");
    std::fs::write(&path, script).unwrap();
    let o = Command::new("sh")
        .arg(&path)
        .env("CAMPAIGN_WARMUP", "1")
        .env("CAMPAIGN_TIMED", "2")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "stderr: {}", util::stderr(&o));
    let (samples, done) = samples_and_done(&o);
    let phases: Vec<&str> = samples
        .iter()
        .map(|s| s["phase"].as_str().unwrap())
        .collect();
    assert_eq!(phases, vec!["warmup", "timed", "timed"]);
    assert!(samples.iter().all(|s| s["execute_s"].as_f64().is_some()));
    assert_eq!(done["correctness"], "pass");
}

#[test]
fn the_native_parser_reads_host_output_as_labelled_samples() {
    use campaign::model::output::{OutputLine, Stream};
    use campaign::stack::parsers::native::NativeParser;
    use campaign::stack::parsers::{ParseContext, Parser};

    let dir = util::tempdir();
    let file = case_file(
        dir.path(),
        "twophase.json",
        serde_json::json!({"variant": "twophase", "p": 2, "count": 7, "dtype": "bf16",
            "warmup_rounds": 1, "timed_rounds": 2}),
    );
    let o = bench(&["--case-file", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "stderr: {}", util::stderr(&o));
    let mut parser: Box<dyn Parser> = Box::new(NativeParser::new(ParseContext {
        n_bytes: 14,
        p: 2,
        warmup: 1,
        timed: 2,
        argv: Vec::new(),
    }));
    for text in util::stdout(&o).lines() {
        parser.feed(&OutputLine {
            stream: Stream::Stdout,
            at: std::time::Duration::ZERO,
            text: text.to_string(),
        });
    }
    let parsed = parser.finish();
    assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
    assert_eq!(parsed.correctness, Some(true));
    let labels: Vec<(u32, &str)> = parsed
        .samples
        .iter()
        .map(|s| (s.round, s.phase.as_str()))
        .collect();
    assert_eq!(
        labels,
        vec![(1, "warmup-1"), (2, "timed-1"), (3, "timed-2")]
    );
    assert!(parsed.samples[0].setup_s.is_some());
    assert!(parsed
        .samples
        .iter()
        .all(|s| s.ok && s.per_rank_execute_s.len() == 2));
}
