//! The `mpi` stack for real: its benchmark compiled with `mpicc` exactly as `stacks/mpi.toml`'s
//! `build` says (from the source embedded in campaign), run under `mpirun` exactly as its
//! `command` says (both rendered by campaign's own renderer), on seed case files. OpenMPI must be installed (`scripts/install-mpi.sh`; CI
//! runs it): without it these tests fail and say so, they never skip.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use campaign::model::case::{Case, Dtype, Variant};
use campaign::model::stack::{CommandSpec, StackDef};
use campaign::stack::assets;
use campaign::stack::render::{render, render_build, RenderContext};
use serde_json::Value;

use crate::util;

/// The shipped `mpi` definition, parsed from `stacks/mpi.toml` with the crate's own types.
fn mpi_def() -> StackDef {
    #[derive(serde::Deserialize)]
    struct File {
        stacks: BTreeMap<String, StackDef>,
    }
    let text = std::fs::read_to_string(util::root().join("stacks/mpi.toml")).unwrap();
    let mut file: File = toml::from_str(&text).expect("stacks/mpi.toml parses as [stacks.NAME]");
    file.stacks
        .remove("mpi")
        .expect("stacks/mpi.toml defines [stacks.mpi]")
}

fn argv(spec: &CommandSpec) -> Vec<String> {
    match spec {
        CommandSpec::Argv(v) => v.clone(),
        CommandSpec::Shell(s) => panic!("mpi stack should use an argv, not a shell string: {s}"),
    }
}

fn require_mpi() {
    for tool in ["mpicc", "mpirun"] {
        let found = Command::new(tool).arg("--version").output().is_ok();
        assert!(
            found,
            "{tool} not found on PATH: the mpi stack's tests need OpenMPI — run scripts/install-mpi.sh"
        );
    }
}

/// A run dir with the benchmark built once per test process, as the engine's `build` step does.
fn run_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        require_mpi();
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("mpi-stack-run");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let written = assets::write_for("mpi", &dir).expect("write embedded source");
        assert_eq!(written.len(), 1);
        let build = render_build("mpi", &mpi_def(), &dir, None)
            .expect("render build")
            .expect("mpi has a build")
            .argv;
        let out = Command::new(&build[0]).args(&build[1..]).output().unwrap();
        assert!(
            out.status.success(),
            "build {build:?} failed:\n{}",
            util::stderr(&out)
        );
        assert_eq!(
            util::stderr(&out).trim(),
            "",
            "the benchmark must compile without warnings under -Wall -Wextra"
        );
        assert!(assets::build_dir(&dir, "mpi")
            .join("allreduce_bench")
            .is_file());
        dir
    })
}

/// Write `case` as a seed case file and run the stack's command on it (plus `extra` args).
fn run_case(case: &Case, extra: &[&str]) -> Output {
    let dir = run_dir();
    let bundle = dir.join("cases").join(case.case_id()).join("mpi");
    std::fs::create_dir_all(&bundle).unwrap();
    let case_file = dir.join("cases").join(case.case_id()).join("case.json");
    std::fs::write(&case_file, case.to_pretty_json()).unwrap();
    let ctx = RenderContext {
        case: case.clone(),
        devices: (0..case.p).collect(),
        warmup: case.warmup_rounds,
        timed: case.timed_rounds,
        case_file,
        bundle_dir: bundle,
        run_dir: dir.to_path_buf(),
        root: None,
        campaign_exe: util::exe(),
    };
    let run = render("mpi", &mpi_def(), &ctx).expect("render the mpi command");
    Command::new(&run.argv[0])
        .args(&run.argv[1..])
        .args(extra)
        .envs(run.env)
        .current_dir(&run.cwd)
        .output()
        .unwrap()
}

/// Every `CAMPAIGN_` line of stdout as (kind, JSON); any line that is not valid JSON fails.
fn protocol(out: &Output) -> Vec<(String, Value)> {
    util::stdout(out)
        .lines()
        .filter(|l| l.starts_with("CAMPAIGN_"))
        .map(|l| {
            let (kind, json) = l
                .split_once(' ')
                .expect("CAMPAIGN_ line has a JSON payload");
            let value = serde_json::from_str(json)
                .unwrap_or_else(|e| panic!("not JSON ({e}): {l}\nstdout:\n{}", util::stdout(out)));
            (kind.to_string(), value)
        })
        .collect()
}

fn case(p: u32, count: u64, dtype: Dtype, warmup: u32, timed: u32) -> Case {
    case_of(Variant::Ring, p, count, dtype, warmup, timed)
}

/// [`case`] of `variant` (an Open MPI algorithm of the op, or `default`).
fn case_of(variant: Variant, p: u32, count: u64, dtype: Dtype, warmup: u32, timed: u32) -> Case {
    let mut c = Case::new(variant, p, count);
    c.dtype = dtype;
    c.warmup_rounds = warmup;
    c.timed_rounds = timed;
    c
}

/// A passing run: warmup + timed samples in order, positive per-rank timings of length P,
/// execute_s the slowest rank, setup_s on the first sample only, then a passing DONE.
fn assert_passing_run(c: &Case) {
    let out = run_case(c, &[]);
    let lines = protocol(&out);
    assert!(
        out.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        util::stdout(&out),
        util::stderr(&out)
    );
    let (samples, done): (Vec<_>, Vec<_>) = lines.iter().partition(|(k, _)| k == "CAMPAIGN_SAMPLE");
    assert_eq!(samples.len() as u32, c.warmup_rounds + c.timed_rounds);
    assert_eq!(done.len(), 1, "exactly one CAMPAIGN_DONE");
    assert_eq!(done[0].1["correctness"], "pass");
    assert_eq!(lines.last().unwrap().0, "CAMPAIGN_DONE", "DONE comes last");
    for (n, (_, s)) in samples.iter().enumerate() {
        let n = n as u32;
        let (phase, round) = if n < c.warmup_rounds {
            ("warmup", n + 1)
        } else {
            ("timed", n - c.warmup_rounds + 1)
        };
        assert_eq!(s["phase"], phase, "{s}");
        assert_eq!(s["round"], round, "{s}");
        assert_eq!(s["ok"], true, "{s}");
        // By default only the first round and the last timed round are checked, and each
        // sample says whether its output was.
        let first_or_last = n == 0 || n as usize == samples.len() - 1;
        assert_eq!(s["checked"], first_or_last, "{s}");
        let per_rank: Vec<f64> = s["per_rank_execute_s"]
            .as_array()
            .expect("per_rank_execute_s is a list")
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        assert_eq!(per_rank.len(), c.p as usize, "{s}");
        assert!(per_rank.iter().all(|t| *t > 0.0), "{s}");
        let slowest = per_rank.iter().cloned().fold(0.0, f64::max);
        assert_eq!(s["execute_s"].as_f64().unwrap(), slowest, "{s}");
        if n == 0 {
            assert!(s["setup_s"].as_f64().unwrap() > 0.0, "{s}");
        } else {
            assert!(
                s.get("setup_s").is_none(),
                "setup_s only on the first sample: {s}"
            );
        }
    }
}

#[test]
fn mpi_fp32_runs_pass_the_golden_at_p2_and_p4() {
    // 1000 is not a multiple of 16 or of P: the tail of the buffer is checked too.
    assert_passing_run(&case(2, 1000, Dtype::Fp32, 2, 3));
    assert_passing_run(&case(4, 1000, Dtype::Fp32, 1, 3));
}

#[test]
fn mpi_fp16_with_a_user_op_and_int32_pass() {
    let mut half = case(4, 4096, Dtype::Fp16, 1, 2);
    half.input_formula = "rank_mod16_v1".into();
    assert_passing_run(&half);
    assert_passing_run(&case(2, 300, Dtype::Fp16, 0, 2));
    assert_passing_run(&case(4, 2048, Dtype::Int32, 1, 2));
}

#[test]
fn mpi_golden_mismatch_exits_1_naming_rank_index_and_values() {
    let c = case(2, 256, Dtype::Fp32, 1, 2);
    let out = run_case(&c, &["--inject-fault", "1"]);
    assert_eq!(out.status.code(), Some(1), "{}", util::stderr(&out));
    let lines = protocol(&out);
    let samples: Vec<_> = lines
        .iter()
        .filter(|(k, _)| k == "CAMPAIGN_SAMPLE")
        .collect();
    assert_eq!(samples.len(), 3);
    assert_eq!(samples[0].1["ok"], true, "the warmup round is not spoiled");
    // The middle round is not checked by default: it says so and does not claim a failure
    // nobody looked for; the last timed round is checked and fails.
    assert_eq!(samples[1].1["checked"], false);
    assert_eq!(samples[1].1["ok"], true);
    assert_eq!(
        (&samples[2].1["checked"], &samples[2].1["ok"]),
        (&true.into(), &false.into())
    );
    let (kind, done) = lines.last().unwrap();
    assert_eq!(kind, "CAMPAIGN_DONE");
    assert_eq!(done["correctness"], "fail");
    let error = done["error"].as_str().unwrap();
    // rank 1 spoils element 128; expected 2*128 + 100 = 356
    for part in [
        "timed round 2",
        "rank 1",
        "1 of 256 elements",
        "index 128",
        "expected 356",
        "1 of 2 checked rounds",
    ] {
        assert!(error.contains(part), "{part:?} missing from: {error}");
    }

    // --check every: every round is checked, both spoiled timed rounds fail.
    let out = run_case(&c, &["--inject-fault", "1", "--check", "every"]);
    assert_eq!(out.status.code(), Some(1), "{}", util::stderr(&out));
    let lines = protocol(&out);
    let samples: Vec<_> = lines
        .iter()
        .filter(|(k, _)| k == "CAMPAIGN_SAMPLE")
        .collect();
    assert!(
        samples.iter().all(|(_, s)| s["checked"] == true),
        "{samples:?}"
    );
    assert_eq!(samples[1].1["ok"], false);
    let error = lines.last().unwrap().1["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(error.contains("timed round 1"), "{error}");
    assert!(error.contains("2 of 3 checked rounds"), "{error}");
}

#[test]
fn mpi_bad_input_exits_2_with_a_message() {
    let dir = run_dir();
    let bad = dir.join("bad_case.json");
    std::fs::write(
        &bad,
        "{\n  \"variant\": \"mesh\",\n  \"p\": 2,\n  \"count\": twelve\n}\n",
    )
    .unwrap();
    let out = run_case(
        &case(2, 64, Dtype::Fp32, 0, 1),
        &["--case-file", bad.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        util::stderr(&out).contains("bad_case.json:4:"),
        "{}",
        util::stderr(&out)
    );
    let lines = protocol(&out);
    assert_eq!(lines.len(), 1, "no samples, one DONE");
    assert_eq!(lines[0].1["correctness"], "fail");

    // P of the case differs from mpirun's -np
    let out = run_case(&case(2, 64, Dtype::Fp32, 0, 1), &["--p", "4"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        util::stderr(&out).contains("mpirun -np must equal p"),
        "{}",
        util::stderr(&out)
    );

    // bf16 is not supported: said clearly, not silently miscomputed
    let out = run_case(&case(2, 64, Dtype::Bf16, 0, 1), &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        util::stderr(&out).contains("dtype \"bf16\" not supported"),
        "{}",
        util::stderr(&out)
    );

    // fp16 whose golden leaves fp16's range: 2*99999 + 100 = 200098 > 65504
    let out = run_case(&case(2, 100_000, Dtype::Fp16, 0, 1), &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = util::stderr(&out);
    assert!(
        err.contains("200098") && err.contains("rank_mod16_v1"),
        "{err}"
    );
}

#[test]
fn mpi_stack_definition_is_what_the_issue_pins() {
    let def = mpi_def();
    assert_eq!(
        def.requires,
        vec!["mpicc".to_string(), "mpirun".to_string()]
    );
    assert_eq!(
        def.hint.as_deref(),
        Some("apt-get install openmpi-bin libopenmpi-dev")
    );
    assert_eq!(def.resource, Some(campaign::model::stack::Resource::Cpu));
    assert_eq!(def.parser(), "native");
    let cmd = argv(def.command.as_ref().unwrap()).join(" ");
    assert!(
        cmd.starts_with("mpirun --allow-run-as-root --oversubscribe -np {{ p }} "),
        "{cmd}"
    );
    let build = argv(def.build.as_ref().unwrap()).join(" ");
    assert!(build.starts_with("mpicc -O2"), "{build}");
    assert_eq!(
        def.dtypes,
        Some(vec![Dtype::Fp32, Dtype::Fp16, Dtype::Int32]),
        "bf16 is refused by the benchmark, so the stack must skip it"
    );
    assert!(def
        .unsupported_reason(&case(2, 64, Dtype::Bf16, 0, 1))
        .is_some());
}

// ---------------------------------------------------------------------------------------------
// `campaign run` with the shipped `mpi` stack next to `host`.
// ---------------------------------------------------------------------------------------------

/// A small host-vs-mpi plan: two variants × P ∈ {2, 4} × two sizes, both stacks. The `mpi`
/// build is the shipped one wrapped in `sh` only to count how often it runs.
fn host_vs_mpi_plan(count_file: &Path) -> String {
    format!(
        r#"[campaign]
name = "hvm"

[case]
platform = "host"

[axes]
variant = ["mesh", "ring"]
p = [2, 4]
count = [256, 4096]
stacks = ["host", "mpi"]

[rounds]
warmup = 1
timed = 3

[run]
exclusive = true
timeout = "2m"
# One run per (case, stack): an mpirun costs seconds here, and the tests count runs.
repeats = 1

[devices]
kind = "cpu"
ids = "0-3"

[stacks.mpi]
build = ["sh", "-c", "echo build >> '{count}' && exec mpicc -O2 -Wall -Wextra -o \"$0/allreduce_bench\" \"$0/allreduce_bench.c\"", "{{{{ run_dir }}}}/builds/mpi"]
"#,
        count = count_file.display()
    )
}

/// Run `plan` from `dir` with `PATH` set to `path` when given; returns (output, the run dir).
fn run_campaign(dir: &Path, plan: &str, path: Option<&str>) -> (Output, PathBuf) {
    let file = dir.join("plan.toml");
    std::fs::write(&file, plan).unwrap();
    let results = dir.join("results");
    let mut cmd = Command::new(util::exe());
    cmd.current_dir(dir).args([
        "run",
        file.to_str().unwrap(),
        "--results-dir",
        results.to_str().unwrap(),
        "-q",
    ]);
    if let Some(p) = path {
        cmd.env("PATH", p);
    }
    let out = cmd.output().unwrap();
    let runs: Vec<PathBuf> = std::fs::read_dir(results.join("hvm"))
        .unwrap_or_else(|e| {
            panic!(
                "no run dir ({e}): {}{}",
                util::stdout(&out),
                util::stderr(&out)
            )
        })
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    (out, runs[0].clone())
}

fn result_rows(run: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(run.join("results.json")).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    doc["runs"].as_array().unwrap().clone()
}

#[test]
fn mpi_campaign_against_host_passes_builds_once_and_times_every_rank() {
    require_mpi();
    let tmp = util::tempdir();
    let count = tmp.path().join("builds.count");
    let (out, run) = run_campaign(tmp.path(), &host_vs_mpi_plan(&count), None);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        util::stdout(&out),
        util::stderr(&out)
    );
    assert_eq!(
        std::fs::read_to_string(&count).unwrap(),
        "build\n",
        "the mpi build step runs exactly once per campaign"
    );
    let src = run.join("builds/mpi/allreduce_bench.c");
    assert_eq!(
        std::fs::read_to_string(src).unwrap(),
        assets::ASSETS[0].text
    );

    let rows = result_rows(&run);
    // Variants belong to stacks: host runs mesh and ring, mpi only the one it has (Open MPI's
    // tuned ring), never a host algorithm.
    assert_eq!(rows.len(), 12, "host: 8 cases; mpi: its ring at 4 points");
    for r in &rows {
        assert_eq!(r["status"], "pass", "{r}");
        assert_eq!(r["correctness"], "pass", "{r}");
        assert!(r["execute_s_mean"].as_f64().unwrap() > 0.0, "{r}");
    }
    let mpi: Vec<&Value> = rows.iter().filter(|r| r["stack"] == "mpi").collect();
    assert_eq!(mpi.len(), 4);
    // Each stack's default per op, as the report's "What the default loses" reads it.
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("results.json")).unwrap()).unwrap();
    let roots = &results["provenance"]["stack_roots"];
    assert_eq!(roots["mpi"]["defaults"]["allreduce"], "default", "{roots}");
    assert_eq!(roots["host"]["defaults"]["allreduce"], "mesh", "{roots}");
    // What the default loses: host's mesh against its ring at each of the 4 points; one repeat
    // each judges nothing, and the report says so rather than implying a finding.
    let summary = std::fs::read_to_string(run.join("reports/summary.md")).unwrap();
    assert!(
        summary.contains("## What the default loses")
            && summary.contains("**Judged 0 of 4 rows**: nothing was checked"),
        "{summary}"
    );
    for r in mpi {
        assert_eq!(r["variant"], "ring", "{r}");
        // What ran, as the benchmark read it back ([stacks.mpi.ran]), against its pin.
        assert_eq!(r["algo_ran"], "ring", "{r}");
        assert_eq!(r["algo_pinned"], "ring", "{r}");
        let bundle = run.join(r["artifact_bundle"].as_str().unwrap());
        // The benchmark pinned Open MPI's ring (coll/tuned allreduce algorithm 4) and read it
        // back before timing anything.
        let log = std::fs::read_to_string(bundle.join("run.log")).unwrap();
        assert!(
            log.contains(
                "pinned coll_tuned_allreduce_algorithm = 4 (ring), read back through MPI_T"
            ),
            "{log}"
        );
        let timing: Value =
            serde_json::from_str(&std::fs::read_to_string(bundle.join("timing.json")).unwrap())
                .unwrap();
        let samples = timing.as_array().unwrap();
        assert_eq!(samples.len(), 4, "1 warmup + 3 timed: {timing}");
        let p = r["p"].as_u64().unwrap() as usize;
        // timing.json keeps the seed's 6 decimals, so a sub-µs rank time may read 0.0 there:
        // positivity is checked on the stack's own lines in run.log, at full precision.
        for s in samples {
            let per_rank = s["per_rank_execute_s"].as_array().unwrap();
            assert_eq!(per_rank.len(), p, "{s}");
            assert!(s["execute_s"].as_f64().unwrap() >= 0.0, "{s}");
        }
        let raw: Vec<Value> = log
            .lines()
            .filter_map(|l| l.strip_prefix("CAMPAIGN_SAMPLE "))
            .map(|j| serde_json::from_str(j).unwrap())
            .collect();
        assert_eq!(raw.len(), samples.len(), "{log}");
        for s in &raw {
            let per_rank = s["per_rank_execute_s"].as_array().unwrap();
            assert_eq!(per_rank.len(), p, "{s}");
            assert!(per_rank.iter().all(|t| t.as_f64().unwrap() > 0.0), "{s}");
            assert!(s["execute_s"].as_f64().unwrap() > 0.0, "{s}");
        }
        assert!(
            log.contains("CAMPAIGN_DONE {\"correctness\":\"pass\"}"),
            "{log}"
        );
    }
}

/// Variants of the `mpi` stack are Open MPI's tuned algorithms (issue 46): each pinned one runs
/// and passes the op's golden, and the benchmark says which number it pinned and that MPI_T
/// read it back; a name that is no algorithm of the op is refused before timing, naming them.
#[test]
fn mpi_pins_each_ops_tuned_algorithms_and_reads_them_back() {
    require_mpi();
    use campaign::model::case::Op;
    // (op, variant, Open MPI's parameter, its number): three per op at P = 3 (P = 2 for the
    // ones Open MPI keeps to two processes or powers of two).
    let pins = [
        (Op::Allreduce, "ring", "allreduce", 4, 3),
        (Op::Allreduce, "recursive_doubling", "allreduce", 3, 3),
        (Op::Allreduce, "basic_linear", "allreduce", 1, 3),
        (Op::Allgather, "ring", "allgather", 4, 3),
        (Op::Allgather, "recursive_doubling", "allgather", 3, 2),
        (Op::Allgather, "linear", "allgather", 1, 3),
        (
            Op::ReduceScatter,
            "recursive_halving",
            "reduce_scatter_block",
            3,
            3,
        ),
        (
            Op::ReduceScatter,
            "basic_linear",
            "reduce_scatter_block",
            1,
            3,
        ),
        (
            Op::ReduceScatter,
            "recursive_doubling",
            "reduce_scatter_block",
            2,
            3,
        ),
        (Op::Broadcast, "binomial", "bcast", 6, 3),
        (Op::Broadcast, "chain", "bcast", 2, 3),
        (Op::Broadcast, "basic_linear", "bcast", 1, 3),
        (Op::Reduce, "binomial", "reduce", 5, 3),
        (Op::Reduce, "linear", "reduce", 1, 3),
        (Op::Reduce, "chain", "reduce", 2, 3),
        (Op::Alltoall, "pairwise", "alltoall", 2, 3),
        (Op::Alltoall, "linear", "alltoall", 1, 3),
        (Op::Alltoall, "two_proc", "alltoall", 5, 2),
    ];
    for (op, variant, param, number, p) in pins {
        let c = case_of(variant.parse().unwrap(), p, 600, Dtype::Fp32, 1, 2).with_op(op);
        let out = run_case(&c, &[]);
        let err = util::stderr(&out);
        assert_eq!(out.status.code(), Some(0), "{op} {variant}: {err}");
        let line = format!(
            "allreduce_bench: pinned coll_tuned_{param}_algorithm = {number} ({variant}), read back through MPI_T"
        );
        assert!(err.contains(&line), "{op} {variant}: {err}");
        let lines = protocol(&out);
        assert_eq!(
            lines.last().unwrap().1["correctness"],
            "pass",
            "{op} {variant}"
        );
    }
    // Numbers are stable across versions, names not always: HEAD's allgather 2 is
    // `bruck-k-fanout`, which Open MPI 4.1 and 5.0 name `bruck`. Either this library has the
    // name (and says so), or the run is refused naming what the number is here.
    let c =
        case_of("bruck-k-fanout".parse().unwrap(), 2, 64, Dtype::Fp32, 0, 1).with_op(Op::Allgather);
    let out = run_case(&c, &[]);
    let err = util::stderr(&out);
    match out.status.code() {
        Some(0) => assert!(err.contains("= 2 (bruck-k-fanout), read back"), "{err}"),
        _ => {
            assert_eq!(out.status.code(), Some(2), "{err}");
            assert!(
                err.contains("coll_tuned_allgather_algorithm = 2 at Open MPI HEAD, which this Open MPI names \"bruck\""),
                "{err}"
            );
        }
    }
    // Open MPI's own choice pins nothing.
    let own = case_of(Variant::Default, 2, 64, Dtype::Fp32, 0, 1);
    let out = run_case(&own, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    assert!(
        !util::stderr(&out).contains("pinned"),
        "{}",
        util::stderr(&out)
    );
    // A host algorithm is no Open MPI algorithm: refused, naming the op's.
    let mesh = case_of(Variant::Mesh, 2, 64, Dtype::Fp32, 0, 1);
    let out = run_case(&mesh, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", util::stderr(&out));
    assert!(
        util::stderr(&out).contains(
            "variant \"mesh\" is not one of Open MPI's tuned allreduce algorithms (default, basic_linear,"
        ),
        "{}",
        util::stderr(&out)
    );
    assert!(util::stdout(&out).contains("CAMPAIGN_DONE {\"correctness\":\"fail\""));
}

#[test]
fn mpi_without_mpicc_is_unavailable_with_the_hint_while_host_passes() {
    let tmp = util::tempdir();
    let empty = tmp.path().join("empty-bin");
    std::fs::create_dir(&empty).unwrap();
    let count = tmp.path().join("builds.count");
    let (out, run) = run_campaign(
        tmp.path(),
        &host_vs_mpi_plan(&count),
        Some(empty.to_str().unwrap()),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "unavailable is not a failure: {}{}",
        util::stdout(&out),
        util::stderr(&out)
    );
    assert!(!count.exists(), "no build is attempted without mpicc");
    let rows = result_rows(&run);
    assert_eq!(rows.len(), 12, "host: 8 cases; mpi: its ring at 4 points");
    for r in &rows {
        if r["stack"] == "host" {
            assert_eq!(r["status"], "pass", "{r}");
        } else {
            assert_eq!(r["status"], "unavailable", "{r}");
            let reason = r["reason"].as_str().unwrap();
            assert!(reason.contains("mpicc not found"), "{reason}");
            assert!(
                reason.contains("apt-get install openmpi-bin libopenmpi-dev"),
                "{reason}"
            );
        }
    }
}

/// Every other op through the shipped command on its case file: passes its own golden (fp32,
/// fp16, int32; broadcast and reduce from root 1 too), and a spoiled element of a checked rank's
/// result fails it with exit 1 naming the rank (issue 27).
#[test]
fn mpi_runs_every_op_and_catches_its_golden_failures() {
    use campaign::model::case::Op;
    // Open MPI's own choice of algorithm (`default`): the op's golden, whatever it picks.
    let case =
        |p, count, dtype, warmup, timed| case_of(Variant::Default, p, count, dtype, warmup, timed);
    for op in &Op::EVERY[1..] {
        for dtype in [Dtype::Fp32, Dtype::Fp16, Dtype::Int32] {
            let mut c = case(3, 600, dtype, 1, 2).with_op(*op);
            c.input_formula = "rank_mod16_v1".into();
            assert_passing_run(&c);
        }
        if op.to_string() == "broadcast" || op.to_string() == "reduce" {
            let mut c = case(3, 600, Dtype::Fp32, 1, 2).with_op(*op);
            c.root = Some(1);
            assert_passing_run(&c);
        }
        let c = case(2, 64, Dtype::Fp32, 1, 2).with_op(*op);
        let out = run_case(&c, &["--inject-fault", "0"]);
        assert_eq!(out.status.code(), Some(1), "{op}: {}", util::stderr(&out));
        let lines = protocol(&out);
        let done = &lines.last().unwrap().1;
        assert_eq!(done["correctness"], "fail", "{op}");
        assert!(
            done["error"].as_str().unwrap().contains("rank 0 has 1 of"),
            "{op}: {done}"
        );
    }
}

/// A plan of mpi alone: `op`, `variants` (TOML list text) at P = 2, and extra `[stacks.mpi]`
/// lines.
fn mpi_only_plan(op: &str, variants: &str, stack_extra: &str) -> String {
    format!(
        r#"[campaign]
name = "hvm"

[case]
platform = "host"
op = "{op}"

[axes]
variant = {variants}
p = [2]
count = [256]
stacks = ["mpi"]

[rounds]
warmup = 1
timed = 3

[run]
exclusive = true
timeout = "2m"
repeats = 1

[devices]
kind = "cpu"
ids = "0-3"

[stacks.mpi]
{stack_extra}
"#
    )
}

/// Item 2 of issue 46: a variant the installed Open MPI lacks (4.1 has no `sparbit`; HEAD's
/// `bruck-k-fanout` is 4.1's `bruck`) is refused by `validate` and `run` (exit 2), naming the
/// variants, the op and what `ompi_info` lists — never run, never run as the default.
#[test]
fn mpi_a_variant_the_installed_open_mpi_lacks_is_refused_at_validate() {
    require_mpi();
    let tmp = util::tempdir();
    let plan = tmp.path().join("plan.toml");
    let text = mpi_only_plan("allgather", r#"["ring", "sparbit", "bruck-k-fanout"]"#, "");
    std::fs::write(&plan, &text).unwrap();
    let out = util::run_in(tmp.path(), &["validate", plan.to_str().unwrap()]);
    let err = util::stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{}{err}", util::stdout(&out));
    assert!(
        err.contains("stack `mpi`: allgather variants `bruck-k-fanout`, `sparbit` not in the installed library")
            && err.contains("offers for allgather: ignore, linear, bruck, recursive_doubling, ring, neighbor, two_proc"),
        "{err}"
    );
    assert!(
        err.contains("plan.toml:9:"),
        "points at the variant axis: {err}"
    );
    // `run` refuses it the same way before it makes a run dir.
    let results = tmp.path().join("results");
    let run = util::run_in(
        tmp.path(),
        &[
            "run",
            plan.to_str().unwrap(),
            "--results-dir",
            results.to_str().unwrap(),
            "-q",
        ],
    );
    assert_eq!(run.status.code(), Some(2), "{}", util::stderr(&run));
    assert!(!results.join("hvm").exists(), "nothing ran");
    // What it has passes.
    std::fs::write(
        &plan,
        mpi_only_plan("allgather", r#"["ring", "neighbor"]"#, ""),
    )
    .unwrap();
    let ok = util::run_in(tmp.path(), &["validate", plan.to_str().unwrap()]);
    assert_eq!(ok.status.code(), Some(0), "{}", util::stderr(&ok));
}

/// Items 3 and 4 of issue 46 for mpi's coll component: each run records which component
/// served its op on MPI_COMM_WORLD (tuned, on one node with Open MPI 4.1), with Open MPI's
/// selection log kept in run.log; a tuned algorithm pinned while another component is in
/// charge (basic raised above tuned) is "pin not honoured" — in results (`pin_honoured`),
/// under its own heading in the report, and in `campaign compare`.
#[test]
fn mpi_records_the_coll_component_and_flags_a_tuned_pin_it_does_not_serve() {
    require_mpi();
    let rows_of = |dir: &Path, extra: &str| {
        let plan = mpi_only_plan("allreduce", r#"["default", "ring"]"#, extra);
        let (out, run) = run_campaign(dir, &plan, None);
        (out, run.clone(), result_rows(&run))
    };
    let a_dir = util::tempdir();
    let (out, a_run, rows) = rows_of(a_dir.path(), "");
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    assert_eq!(rows.len(), 2);
    for r in &rows {
        assert_eq!(r["status"], "pass", "{r}");
        assert_eq!(r["component"], "tuned", "{r}");
        let log = std::fs::read_to_string(
            a_run
                .join(r["artifact_bundle"].as_str().unwrap())
                .join("run.log"),
        )
        .unwrap();
        assert!(
            log.contains("coll:base:comm_select: selecting       tuned, priority  30, Enabled"),
            "the selection log stays in run.log: {log}"
        );
        let pinned = r["variant"] == "ring";
        assert_eq!(
            r["pin_honoured"],
            if pinned {
                Value::Bool(true)
            } else {
                Value::Null
            },
            "{r}"
        );
    }

    let b_dir = util::tempdir();
    let (out, b_run, rows) = rows_of(
        b_dir.path(),
        r#"env = { OMPI_MCA_coll_basic_priority = "40" }"#,
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "a failed run: {}",
        util::stderr(&out)
    );
    let ring = rows.iter().find(|r| r["variant"] == "ring").unwrap();
    let default = rows.iter().find(|r| r["variant"] == "default").unwrap();
    assert_eq!(
        default["status"], "pass",
        "no pin, nothing to honour: {default}"
    );
    assert_eq!(default["component"], "basic", "{default}");
    assert_eq!(ring["status"], "fail", "{ring}");
    assert_eq!(ring["pin_honoured"], false, "{ring}");
    assert_eq!(ring["component"], "basic", "{ring}");
    assert_eq!(
        ring["algo_ran"], "ring",
        "the pin was taken, and never ran: {ring}"
    );
    assert_eq!(
        ring["reason"],
        "pin not honoured: asked ring of tuned, but basic serves the op (tuned is not the component in charge)"
    );
    let csv = std::fs::read_to_string(b_run.join("results.csv")).unwrap();
    assert!(
        csv.lines()
            .next()
            .unwrap()
            .ends_with(",component,pin_honoured"),
        "{csv}"
    );
    assert!(csv.contains(",basic,false"), "{csv}");
    let summary = std::fs::read_to_string(b_run.join("reports/summary.md")).unwrap();
    let heading = summary
        .find("### Pin not honoured")
        .expect("its own heading");
    assert!(
        summary[heading..].contains("1 run(s) were pinned to an algorithm and another ran"),
        "{summary}"
    );

    let out = util::run_in(
        b_dir.path(),
        &["compare", a_run.to_str().unwrap(), b_run.to_str().unwrap()],
    );
    let text = util::stdout(&out);
    let line = text
        .lines()
        .find(|l| l.contains("| mpi |") && l.contains("ring"))
        .unwrap_or_else(|| panic!("{text}{}", util::stderr(&out)));
    assert!(
        line.contains("PIN NOT HONOURED") && line.contains("pin not honoured in B"),
        "{line}"
    );
}
