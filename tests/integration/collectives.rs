//! Every collective, not only allreduce (issue 27): each op end to end on the `host` and `mpi`
//! stacks (real runs), golden failures of every op caught, planned skips of unsupported
//! (stack, op) and (op, variant) pairs, and the recorded outputs of the other ops' tools.

use std::path::Path;
use std::time::Duration;

use campaign::model::case::{Case, Op, Variant};
use campaign::model::output::{OutputLine, Stream};
use campaign::stack::parsers::{hccl_test, nccl_tests, osu, ParseContext, Parsed, Parser};
use serde_json::Value;

use crate::util;

/// Every op with two of the host stack's algorithms of it, P = 2, two sizes, one repeat. No
/// filter: variants belong to stacks, so host runs the named ones it has per op and mpi the one
/// Open MPI algorithm of the op among the names (ring, scatter_allgather, pairwise), else its
/// own choice (`default`).
const PLAN: &str = r#"
[campaign]
name = "ops"
[case]
platform = "host"
dtype = "fp32"
p = 2
[axes]
op = ["allreduce", "allgather", "reduce_scatter", "broadcast", "reduce", "alltoall"]
variant = ["ring", "twophase", "direct", "tree", "scatter_allgather", "pairwise"]
count = [64, 4096]
stacks = ["host", "mpi"]
[rounds]
warmup = 1
timed = 3
[run]
exclusive = true
repeats = 1
[devices]
kind = "cpu"
ids = "0-1"
"#;

fn results_of(dir: &Path) -> Value {
    let campaigns = dir.join("results/campaigns");
    let run = std::fs::read_dir(campaigns.join("ops"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    serde_json::from_str(&std::fs::read_to_string(run.join("results.json")).unwrap()).unwrap()
}

fn run_dir_of(dir: &Path) -> std::path::PathBuf {
    std::fs::read_dir(dir.join("results/campaigns/ops"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
}

#[test]
fn every_op_runs_for_real_on_host_and_mpi_with_its_golden_and_bus_factor() {
    let tmp = util::tempdir();
    let plan = tmp.path().join("ops.toml");
    std::fs::write(&plan, PLAN).unwrap();
    let o = util::run_in(tmp.path(), &["run", plan.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", util::stderr(&o));
    let results = results_of(tmp.path());
    let rows = results["runs"].as_array().unwrap();
    assert_eq!(
        rows.len(),
        6 * 2 * 2 + 6 * 2,
        "host: ops × its two named variants × counts; mpi: ops × its default × counts"
    );
    // nccl-tests' factors at P = 2.
    let factor = |op: &str| match op {
        "allreduce" | "broadcast" | "reduce" => 1.0,
        _ => 0.5,
    };
    for op in Op::EVERY {
        for stack in ["host", "mpi"] {
            let mine: Vec<&Value> = rows
                .iter()
                .filter(|r| r["op"] == op.as_str() && r["stack"] == stack)
                .collect();
            assert_eq!(
                mine.len(),
                if stack == "host" { 4 } else { 2 },
                "{op} on {stack}"
            );
            for r in mine {
                if stack == "mpi" {
                    // Open MPI's tuned algorithm of the op by the plan's name, else its own
                    // choice: never a host algorithm it lacks.
                    let own = match op {
                        Op::Allreduce | Op::Allgather => "ring",
                        Op::Broadcast => "scatter_allgather",
                        Op::Alltoall => "pairwise",
                        _ => "default",
                    };
                    assert_eq!(r["variant"], own, "mpi runs only its own: {r}");
                }
                assert_eq!(r["status"], "pass", "{r}");
                assert_eq!(r["correctness"], "pass", "{r}");
                let (alg, bus) = (
                    r["algbw_gb_s"].as_f64().unwrap(),
                    r["busbw_gb_s"].as_f64().unwrap(),
                );
                assert!((bus / alg - factor(op.as_str())).abs() < 1e-9, "{r}");
                let median = r["execute_s_median"].as_f64().unwrap();
                let bytes = r["n_bytes"].as_f64().unwrap();
                assert!(
                    (alg - bytes / median / 1e9).abs() <= 1e-9 * alg.max(1.0),
                    "{r}"
                );
                assert!(r["bytes_counted"].as_str().unwrap().contains("n_bytes"));
            }
        }
    }
    // Case files: allreduce ones are the seed format (no op, no root); the others say theirs.
    let run = run_dir_of(tmp.path());
    let case = |id: &str| -> Value {
        serde_json::from_str(
            &std::fs::read_to_string(run.join("cases").join(id).join("case.json")).unwrap(),
        )
        .unwrap()
    };
    let ar = case("ring_p2_count64_fp32_host_d0-1");
    assert!(ar.get("op").is_none() && ar.get("root").is_none(), "{ar}");
    assert_eq!(ar["golden"], "allreduce_sum_v1");
    let bc = case("broadcast_tree_p2_count64_fp32_host_d0-1");
    assert_eq!(bc["op"], "broadcast");
    assert_eq!(bc["root"], 0);
    assert_eq!(bc["golden"], "broadcast_copy_v1");
    let ag = case("allgather_direct_p2_count4096_fp32_host_d0-1");
    assert!(ag.get("root").is_none(), "{ag}");
    // The report tells ops apart and says what busbw counts.
    let summary = std::fs::read_to_string(run.join("reports/summary.md")).unwrap();
    assert!(summary.contains("`alltoall_pairwise_p2_count4096_fp32_host_d0-1`"));
    assert!(summary.contains("allgather, reduce_scatter, alltoall (P−1)/P"));
    assert!(summary.contains("## Collectives"), "{summary}");
    assert!(
        summary.contains("| allgather | 4 | (P−1)/P | n_bytes = the whole gathered buffer"),
        "{summary}"
    );
    // A section and a bus bandwidth figure per op, captioned with that op's factor, no colour
    // twice in its legend (issue 44, item 5).
    for op in Op::EVERY {
        let formula = match op {
            Op::Allreduce => "2(P−1)/P",
            Op::Broadcast | Op::Reduce => "1",
            _ => "(P−1)/P",
        };
        assert!(
            summary.contains(&format!("\n### {op}\n")),
            "{op}: {summary}"
        );
        assert!(
            summary.contains(&format!("n / T · {formula}, {op}'s factor")),
            "{op}'s caption: {summary}"
        );
        let name = format!("message_size_bw_{op}");
        let svg = std::fs::read_to_string(run.join(format!("figures/{name}.svg"))).unwrap();
        let hover: Vec<Value> = serde_json::from_str(
            &std::fs::read_to_string(run.join(format!("figures/{name}.hover.json"))).unwrap(),
        )
        .unwrap();
        let mut series: Vec<&str> = hover
            .iter()
            .map(|h| h["series"].as_str().unwrap())
            .collect();
        series.sort();
        series.dedup();
        assert_eq!(
            series.len(),
            3,
            "{op}: host's two algorithms and mpi's: {series:?}"
        );
        let mut colours: Vec<String> = (series.iter())
            .map(|s| crate::report::legend_color(&svg, s))
            .collect();
        colours.sort();
        colours.dedup();
        assert_eq!(colours.len(), 3, "{op}: a colour twice in {series:?}");
    }
}

#[test]
fn the_shipped_collectives_plan_lists_every_op_on_host_and_mpi() {
    let plan = util::root().join("plans/collectives.toml");
    let o = util::run(&["validate", plan.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", util::stderr(&o));
    let o = util::run(&["dry-run", plan.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", util::stderr(&o));
    let out = util::stdout(&o);
    assert!(out.starts_with("op "), "an op column: {out}");
    for op in Op::EVERY {
        let n = out
            .lines()
            .filter(|l| l.starts_with(&format!("{} ", op.as_str())))
            .count();
        // host's algorithms of the op and mpi's default, at three sizes.
        let algorithms = if op == Op::Allreduce { 3 } else { 2 } + 1;
        assert_eq!(n, algorithms * 3, "{op}\n{out}");
    }
    assert!(
        out.contains("57 cases on 2 stacks (each runs its own variants: 57 (case, stack) pairs) × 10 repeats = 570 runs"),
        "{out}"
    );
    assert!(
        out.contains("sequential repeats: 5 to 10 per (case, stack), each point judged after 5, 8, 10 repeats: 285 runs at first, at most 285 more"),
        "{out}"
    );
    // Each case runs on the stack whose algorithm it is: mpi never under a host variant.
    for line in out.lines().filter(|l| l.contains("_p2_count")) {
        let mpi = line.contains(" default ");
        assert!(
            line.ends_with(if mpi { "  mpi" } else { "  host" }),
            "{line}"
        );
    }
    assert!(
        !out.contains("skip"),
        "no stack is offered what it lacks: {out}"
    );
}

/// An op a stack does not run is a planned skip naming the reason; an algorithm a stack does
/// not have is no run of it at all (variants belong to stacks), not a skip.
#[test]
fn unsupported_ops_and_algorithms_are_planned_skips_naming_the_reason() {
    let tmp = util::tempdir();
    let plan = tmp.path().join("ops.toml");
    std::fs::write(
        &plan,
        "[campaign]\nname = \"ops\"\n[case]\nplatform = \"host\"\np = 2\ncount = 64\n[axes]\nop = [\"allreduce\", \"broadcast\"]\nvariant = [\"ring\", \"tree\"]\nstacks = [\"host\", \"mine\"]\n[rounds]\nwarmup = 0\ntimed = 1\n[run]\nrepeats = 1\n[stacks.mine]\ncommand = [\"true\"]\nresource = \"cpu\"\n[devices]\nkind = \"cpu\"\nids = \"0-1\"\n",
    )
    .unwrap();
    let o = util::run_in(tmp.path(), &["dry-run", plan.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", util::stderr(&o));
    let out = util::stdout(&o);
    assert!(
        out.contains(
            "skipped mine: op broadcast not supported by this stack (it runs: allreduce) (2 runs)"
        ),
        "{out}"
    );
    assert!(!out.contains("skipped host"), "{out}");
    // host runs its own: allreduce ring, broadcast tree; `mine` lists no algorithms and so
    // takes both names.
    for (id, stacks) in [
        ("ring_p2_count64_fp32_host_d0-1", "host,mine"),
        ("tree_p2_count64_fp32_host_d0-1", "mine"),
        ("broadcast_ring_p2_count64_fp32_host_d0-1", "mine(skip)"),
        (
            "broadcast_tree_p2_count64_fp32_host_d0-1",
            "host,mine(skip)",
        ),
    ] {
        assert!(
            out.lines()
                .any(|l| l.contains(id) && l.ends_with(&format!("  {stacks}"))),
            "{id} on {stacks}\n{out}"
        );
    }
    let o = util::run_in(tmp.path(), &["run", plan.to_str().unwrap()]);
    let results = results_of(tmp.path());
    let skipped: Vec<&Value> = results["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["status"] == "skipped")
        .collect();
    assert_eq!(skipped.len(), 2, "{}", util::stderr(&o));
    let host: Vec<String> = (results["runs"].as_array().unwrap().iter())
        .filter(|r| r["stack"] == "host")
        .map(|r| {
            format!(
                "{} {}",
                r["op"].as_str().unwrap(),
                r["variant"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(host, ["allreduce ring", "broadcast tree"]);
    assert!(skipped.iter().any(|r| r["reason"]
        .as_str()
        .unwrap()
        .contains("op broadcast not supported")));
}

/// A case file of `op` for the host stack.
fn case_file(dir: &Path, op: Op, variant: Variant) -> std::path::PathBuf {
    let mut case = Case::new(variant, 3, 96).with_op(op);
    case.warmup_rounds = 0;
    case.timed_rounds = 2;
    let path = dir.join(format!("{}.json", case.case_id()));
    std::fs::write(&path, case.to_pretty_json()).unwrap();
    path
}

#[test]
fn host_golden_failures_of_every_op_are_caught() {
    let tmp = util::tempdir();
    for (op, variant) in [
        (Op::Allgather, Variant::Ring),
        (Op::ReduceScatter, Variant::Ring),
        (Op::Broadcast, Variant::Tree),
        (Op::Reduce, Variant::Tree),
        (Op::Alltoall, Variant::Pairwise),
    ] {
        let file = case_file(tmp.path(), op, variant);
        let f = file.to_str().unwrap();
        let o = util::run(&["bench", "collective", "--case-file", f]);
        assert_eq!(o.status.code(), Some(0), "{op}: {}", util::stderr(&o));
        // Reduce checks the root (0) only. (`bench allreduce`, the older name, runs any op too.)
        let o = util::run(&[
            "bench",
            "allreduce",
            "--case-file",
            f,
            "--inject-fault",
            "0:2",
        ]);
        assert_eq!(o.status.code(), Some(1), "{op}: a spoiled result must fail");
        assert!(
            util::stderr(&o).contains("golden mismatch in timed round 2"),
            "{op}: {}",
            util::stderr(&o)
        );
        // An algorithm of another op is refused up front, naming the op's own.
        let mut wrong = Case::new(Variant::Mesh, 3, 96).with_op(op);
        wrong.timed_rounds = 1;
        let path = tmp.path().join("wrong.json");
        std::fs::write(&path, wrong.to_pretty_json()).unwrap();
        let o = util::run(&["bench", "collective", "--case-file", path.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{op}");
        assert!(
            util::stderr(&o).contains(&format!("the host {op} implements")),
            "{}",
            util::stderr(&o)
        );
    }
}

#[test]
fn case_files_of_other_ops_are_checked_for_their_own_rules() {
    let tmp = util::tempdir();
    let good = tmp.path().join("good.json");
    std::fs::write(
        &good,
        r#"{"op": "reduce", "root": 1, "variant": "tree", "p": 4, "count": 8}"#,
    )
    .unwrap();
    let o = util::run(&["validate", good.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", util::stderr(&o));
    let out = util::stdout(&o);
    assert!(
        out.contains("case_id=reduce_tree_p4_count8_fp32_a2a3_d0-1-2-3_root1\n"),
        "{out}"
    );
    assert!(out.contains("op=reduce\nroot=1\n"), "{out}");
    for (json, needle) in [
        (
            r#"{"op": "allgather", "variant": "ring", "p": 2, "count": 7}"#,
            "allgather needs count divisible by p",
        ),
        (
            r#"{"op": "broadcast", "root": 2, "variant": "tree", "p": 2, "count": 8}"#,
            "root = 2 is not a rank of p = 2",
        ),
        (
            r#"{"op": "gather", "variant": "ring", "p": 2, "count": 8}"#,
            "unknown op `gather`",
        ),
        (
            r#"{"op": "alltoall", "golden": "broadcast_copy_v1", "variant": "direct", "p": 2, "count": 8}"#,
            "golden `broadcast_copy_v1` is not alltoall's",
        ),
    ] {
        let path = tmp.path().join("c.json");
        std::fs::write(&path, json).unwrap();
        let o = util::run(&["bench", "collective", "--case-file", path.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{json}");
        assert!(
            util::stderr(&o).contains(needle),
            "{needle}: {}",
            util::stderr(&o)
        );
    }
}

fn feed(mut parser: Box<dyn Parser>, text: &str) -> Parsed {
    for (i, line) in text.lines().enumerate() {
        parser.feed(&OutputLine {
            stream: Stream::Stdout,
            at: Duration::from_millis(10 * (i as u64 + 1)),
            text: line.to_string(),
        });
    }
    parser.finish()
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(
        util::root()
            .join("tests/integration/fixtures/stacks")
            .join(name),
    )
    .unwrap()
}

fn ctx(n_bytes: u64, argv: &[&str]) -> ParseContext {
    ParseContext {
        n_bytes,
        p: 2,
        warmup: 5,
        timed: 20,
        argv: argv.iter().map(|s| s.to_string()).collect(),
    }
}

#[test]
fn recorded_outputs_of_the_other_ops_tools_give_the_case_row() {
    let def = campaign::model::stack::StackDef::default();
    // nccl-tests prints the whole buffer as `size` for every op (allgather's count column is
    // per rank), and `none` / a root for the ops without a reduction or with a root.
    for (file, time) in [
        ("nccl_all_gather.txt", 11.84e-6),
        ("nccl_broadcast.txt", 13.07e-6),
    ] {
        let p = feed(nccl_tests::parser(&def, &ctx(16384, &[])), &fixture(file));
        assert_eq!(p.correctness, Some(true), "{file}: {:?}", p.warnings);
        assert_eq!(p.samples.len(), 1, "{file}");
        assert!(
            (p.samples[0].execute_s.unwrap() - time).abs() < 1e-12,
            "{file}"
        );
    }
    // osu_allgather counts the block each rank sends: a 8 KiB case (P = 2) is its 4096 row,
    // and the sample's bandwidth still counts the case's 8 KiB.
    let argv = ["mpirun", "-np", "2", "osu_allgather", "-f"];
    let p = feed(
        osu::parser(&def, &ctx(8192, &argv)),
        &fixture("osu_allgather.txt"),
    );
    assert_eq!(p.samples.len(), 1, "{:?}", p.warnings);
    let s = &p.samples[0];
    assert!(
        (s.execute_s.unwrap() - 2.97e-6).abs() < 1e-12,
        "Max Latency"
    );
    assert!((s.bw_execute_mb_s.unwrap() - 8192.0 / 2.97e-6 / 1e6).abs() < 1e-6);
    // The same text for a benchmark of whole messages (osu_bcast) reads the 8192 row.
    let p = feed(
        osu::parser(&def, &ctx(8192, &["osu_bcast"])),
        &fixture("osu_allgather.txt"),
    );
    assert!((p.samples[0].execute_s.unwrap() - 4.30e-6).abs() < 1e-12);
    let p = feed(
        hccl_test::parser(&def, &ctx(16384, &[])),
        &fixture("hccl_test_all_gather.txt"),
    );
    assert_eq!(p.correctness, Some(true));
    assert!((p.samples[0].execute_s.unwrap() - 41.26e-6).abs() < 1e-12);
}

/// The shipped nccl-tests command, run against stand-ins of mpirun and all_gather_perf: `-I 1`
/// only where the binary's `-h` names per_iter_timing, and an earlier attempt's JSON removed
/// first (nccl-tests opens it exclusively and would write `.json.0` beside it).
#[test]
fn nccl_tests_asks_for_per_iteration_times_where_the_binary_has_them() {
    use campaign::stack::render::{render, RenderContext};
    let defs = campaign::stack::registry::try_shipped().unwrap();
    for (usage, want_i) in [
        ("[-I,--per_iter_timing <0/1>]", true),
        ("[-J,--output_file]", false),
    ] {
        let tmp = util::tempdir();
        let bin = tmp.path().join("bin");
        let bundle = tmp.path().join("b");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(&bundle).unwrap();
        std::fs::write(bundle.join("nccl-tests.json"), "{\"stale\": true}").unwrap();
        let script = |name: &str, text: &str| {
            let path = bin.join(name);
            std::fs::write(&path, text).unwrap();
            let mut perm = std::fs::metadata(&path).unwrap().permissions();
            std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
            std::fs::set_permissions(&path, perm).unwrap();
        };
        script("mpirun", "#!/bin/sh\nshift 3\nexec \"$@\"\n");
        script(
            "all_gather_perf",
            &format!(
                "#!/bin/sh\nif [ \"$1\" = -h ]; then echo 'USAGE: x {usage}'; exit 0; fi\necho \"$@\" > {args}\nwhile [ $# -gt 1 ]; do [ \"$1\" = -J ] && out=$2; shift; done\nset -C\necho '{{\"fresh\": true}}' > \"$out\"\n",
                args = tmp.path().join("args").display()
            ),
        );
        let ctx = RenderContext {
            case: Case::new(Variant::Mesh, 2, 1024).with_op(Op::Allgather),
            devices: vec![0, 1],
            warmup: 1,
            timed: 2,
            case_file: "/r/case.json".into(),
            bundle_dir: bundle.clone(),
            run_dir: tmp.path().to_path_buf(),
            root: None,
            campaign_exe: "/usr/bin/campaign".into(),
        };
        let run = render("nccl-tests", &defs["nccl-tests"], &ctx).unwrap();
        let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
        let out = std::process::Command::new(&run.argv[0])
            .args(&run.argv[1..])
            .env("PATH", path)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", util::stderr(&out));
        let args = std::fs::read_to_string(tmp.path().join("args")).unwrap();
        assert_eq!(args.contains(" -I 1 "), want_i, "{usage}: {args}");
        assert!(args.contains("-n 2 "), "{args}");
        assert_eq!(
            util::stdout(&out).trim(),
            "{\"fresh\": true}",
            "the JSON of this attempt"
        );
    }
}

#[test]
fn ecosystem_stacks_run_the_tool_of_the_op_and_skip_what_it_cannot() {
    use campaign::stack::render::{render, RenderContext};
    let defs = campaign::stack::registry::try_shipped().unwrap();
    let argv_for = |stack: &str, op: Op, root: Option<u32>| {
        let mut case = Case::new(Variant::Mesh, 2, 1024).with_op(op);
        if root.is_some() {
            case.root = root;
        }
        let ctx = RenderContext {
            case,
            devices: vec![0, 1],
            warmup: 1,
            timed: 2,
            case_file: "/r/case.json".into(),
            bundle_dir: "/r/b".into(),
            run_dir: "/r".into(),
            root: Some("/opt/cann".into()),
            campaign_exe: "/usr/bin/campaign".into(),
        };
        render(stack, &defs[stack], &ctx).unwrap().argv.join(" ")
    };
    let nccl = argv_for("nccl-tests", Op::Allgather, None);
    assert!(
        nccl.contains("B=all_gather_perf;") && nccl.contains(" $B -g 1"),
        "{nccl}"
    );
    assert!(nccl.contains("-b 4096 -e 4096"), "the whole buffer: {nccl}");
    let nccl = argv_for("nccl-tests", Op::Broadcast, Some(1));
    assert!(
        nccl.contains("B=broadcast_perf;") && nccl.contains("-r 1"),
        "{nccl}"
    );
    let osu = argv_for("osu", Op::Allgather, None);
    assert!(
        osu.contains("osu_allgather -f -m 2048:2048"),
        "per block: {osu}"
    );
    let osu = argv_for("osu", Op::Broadcast, None);
    assert!(osu.contains("osu_bcast -f -m 4096:4096"), "{osu}");
    let hccl = argv_for("hccl_test", Op::Alltoall, None);
    assert!(hccl.contains("/bin/alltoall_test -p 2"), "{hccl}");
    // OSU's broadcast and reduce always use root 0: another root is a planned skip.
    let mut case = Case::new(Variant::Default, 2, 1024).with_op(Op::Reduce);
    assert_eq!(defs["osu"].unsupported_reason(&case), None);
    case.root = Some(1);
    let why = defs["osu"].unsupported_reason(&case).unwrap();
    assert!(why.contains("root == 0"), "{why}");
    // Every shipped peer declares its ops; the simpler/pypto/pto-isa stacks run allreduce only.
    let ag = Case::new(Variant::Mesh, 2, 1024).with_op(Op::Allgather);
    for stack in ["mpi", "nccl-tests", "osu", "hccl_test", "hccl"] {
        assert!(
            defs[stack]
                .unsupported_reason(&ag)
                .is_none_or(|w| !w.contains("op ")),
            "{stack}"
        );
    }
    let why = defs["pto-isa"].unsupported_reason(&ag).unwrap();
    assert!(why.contains("op allgather not supported"), "{why}");
}
