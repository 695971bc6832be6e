//! `campaign bench collective` end to end: the real binary, real case files, every stdout line
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
    c.args(["bench", "collective"]).args(args);
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
        "--check",
        "every",
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
    assert!(
        error.contains("1 of 4 checked rounds failed, 1 wrong elements in all; 4 rounds run"),
        "{error}"
    );
    assert!(util::stderr(&o).contains(want), "{}", util::stderr(&o));
}

/// (checked, ok) of every sample.
fn checked_ok(samples: &[Value]) -> Vec<(bool, bool)> {
    samples
        .iter()
        .map(|s| (s["checked"].as_bool().unwrap(), s["ok"].as_bool().unwrap()))
        .collect()
}

/// By default only the first round and the last timed round are checked: a rank spoiled in
/// every timed round fails the last one, the middle rounds say they were not looked at. With
/// `--check every` (or `HOST_BENCH_CHECK=every`) each spoiled round fails. Every host op, both
/// modes.
#[test]
fn each_check_mode_catches_a_rank_spoiled_in_every_timed_round() {
    let dir = util::tempdir();
    let (t, f) = (true, false);
    for (op, variant) in [
        ("allreduce", "ring"),
        ("allgather", "direct"),
        ("reduce_scatter", "ring"),
        ("broadcast", "tree"),
        ("reduce", "direct"),
        ("alltoall", "pairwise"),
    ] {
        let file = case_file(
            dir.path(),
            &format!("{op}.json"),
            serde_json::json!({"op": op, "variant": variant, "p": 2, "count": 64,
                "dtype": "fp32", "warmup_rounds": 2, "timed_rounds": 3}),
        );
        let file = file.to_str().unwrap();
        // Reduce checks only its root (0); the other ops check every rank.
        let rank = if op == "reduce" { "0" } else { "1" };

        let o = bench(&["--case-file", file]).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{op}: {}", util::stderr(&o));
        let (samples, done) = samples_and_done(&o);
        assert_eq!(
            checked_ok(&samples),
            vec![(t, t), (f, t), (f, t), (f, t), (t, t)],
            "{op}"
        );
        assert_eq!(done["checked_rounds"], 2, "{op}");

        let o = bench(&["--case-file", file, "--inject-fault", rank])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{op}: {}", util::stderr(&o));
        let (samples, done) = samples_and_done(&o);
        assert_eq!(
            checked_ok(&samples),
            vec![(t, t), (f, t), (f, t), (f, t), (t, f)],
            "{op}"
        );
        let error = done["error"].as_str().unwrap();
        assert!(
            error.starts_with(&format!(
                "golden mismatch in timed round 3 (round 5): rank {rank}"
            )),
            "{op}: {error}"
        );
        assert!(
            error.contains("1 of 2 checked rounds failed"),
            "{op}: {error}"
        );

        for every in [
            bench(&[
                "--case-file",
                file,
                "--inject-fault",
                rank,
                "--check",
                "every",
            ]),
            {
                let mut c = bench(&["--case-file", file, "--inject-fault", rank]);
                c.env("HOST_BENCH_CHECK", "every");
                c
            },
        ] {
            let o = { every }.output().unwrap();
            assert_eq!(o.status.code(), Some(1), "{op}: {}", util::stderr(&o));
            let (samples, done) = samples_and_done(&o);
            assert_eq!(
                checked_ok(&samples),
                vec![(t, t), (t, t), (t, f), (t, f), (t, f)],
                "{op}"
            );
            assert_eq!(done["checked_rounds"], 5, "{op}");
            let error = done["error"].as_str().unwrap();
            assert!(error.contains("timed round 1 (round 3)"), "{op}: {error}");
            assert!(
                error.contains("3 of 5 checked rounds failed"),
                "{op}: {error}"
            );
        }
    }
}

/// A fault in a middle timed round is not seen by default, and the samples say so honestly.
#[test]
fn a_fault_in_an_unchecked_round_passes_and_says_it_was_not_checked() {
    let dir = util::tempdir();
    let file = case_file(
        dir.path(),
        "mesh.json",
        serde_json::json!({"variant": "mesh", "p": 2, "count": 100, "dtype": "fp32",
            "warmup_rounds": 0, "timed_rounds": 3}),
    );
    let o = bench(&[
        "--case-file",
        file.to_str().unwrap(),
        "--inject-fault",
        "1:2",
    ])
    .output()
    .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", util::stderr(&o));
    let (samples, done) = samples_and_done(&o);
    let (t, f) = (true, false);
    // warmup 0: the first timed round is the first round, checked.
    assert_eq!(checked_ok(&samples), vec![(t, t), (f, t), (t, t)]);
    assert_eq!(done["correctness"], "pass");
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
        (vec!["--check", "some"], "expected `ends` or `every`"),
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

/// A plan chooses the host stack's check through the stack's `env`, as for the `mpi` stack:
/// `[stacks.host] env = { HOST_BENCH_CHECK = "every" }` checks every round; without it only the
/// first and the last are. What the run's `run.log` holds says which.
#[test]
fn a_plan_sets_the_host_check_through_the_stack_env() {
    let tmp = util::tempdir();
    for (campaign, extra, want) in [
        ("ends", "", vec![true, false, false, true]),
        (
            "every",
            "[stacks.host]\nenv = { HOST_BENCH_CHECK = \"every\" }\n",
            vec![true; 4],
        ),
    ] {
        let plan = format!(
            "[campaign]\nname = \"{campaign}\"\n[case]\nplatform = \"host\"\n[axes]\n\
             variant = [\"ring\"]\np = [2]\ncount = [64]\n[rounds]\nwarmup = 1\ntimed = 3\n\
             [run]\nrepeats = 1\n{extra}"
        );
        let (out, dir) = crate::honest::run_plan(tmp.path(), campaign, &plan, &[]);
        assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
        let results: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap())
                .unwrap();
        let row = &results["runs"][0];
        assert_eq!(row["correctness"], "pass", "{row}");
        let log = std::fs::read_to_string(
            dir.join(row["artifact_bundle"].as_str().unwrap())
                .join("run.log"),
        )
        .unwrap();
        let checked: Vec<bool> = log
            .lines()
            .filter_map(|l| l.split_once("CAMPAIGN_SAMPLE ").map(|(_, json)| json))
            .map(|json| serde_json::from_str::<Value>(json).unwrap()["checked"] == true)
            .collect();
        assert_eq!(checked, want, "{campaign}: {log}");
    }
}
