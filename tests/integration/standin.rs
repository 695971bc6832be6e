//! The simpler stand-in (`fixtures/standin/simpler.py`) driven end to end: failing runs name
//! their cause in results, `status` and the report; readiness probes in `doctor` and the
//! engine's pre-flight; free variants and rank constraints planned, skipped and run as declared;
//! shell-quoted template values.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use crate::containment::standin;
use crate::util;

/// Write a plan `name` (P axis `ps`, devices `0-(ids-1)`) with `defs` appended and run it.
fn run(
    dir: &Path,
    name: &str,
    axes: &str,
    ids: u32,
    defs: &str,
    env: &[(&str, &str)],
) -> (Output, PathBuf) {
    let text = format!(
        r#"[campaign]
name = "{name}"

[case]
platform = "host"

[axes]
{axes}
count = [256]

[rounds]
warmup = 0
timed = 1

[run]
timeout = "2m"
order = "given"

[devices]
kind = "npu"
ids = "0-{last}"
{defs}"#,
        last = ids - 1
    );
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(&file, text).unwrap();
    let results = dir.join("results");
    let mut c = std::process::Command::new(util::exe());
    c.current_dir(dir).args([
        "run",
        file.to_str().unwrap(),
        "--results-dir",
        results.to_str().unwrap(),
        "-q",
    ]);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    let run_dir = std::fs::read_dir(results.join(name))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    (out, run_dir)
}

fn rows(dir: &Path) -> Vec<Value> {
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    v["runs"].as_array().unwrap().clone()
}

fn standin_def(extra: &str) -> String {
    format!(
        r#"
[stacks.standin]
command = ["python3", "{script}", "-p", "{{{{ platform }}}}", "-d", "{{{{ devices_range }}}}"]
shape = "subprocess"
parser = "markers"
markers = {{ builtin = "simpler" }}
env = {{ PYTHONUNBUFFERED = "1" }}
{extra}
"#,
        script = standin()
    )
}

#[test]
fn failing_runs_name_their_cause_in_results_status_and_report() {
    let tmp = util::tempdir();
    let (out, dir) = run(
        tmp.path(),
        "cause",
        "variant = [\"mesh\"]\np = [2, 17]\nstacks = [\"standin\"]",
        17,
        &standin_def(""),
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", util::stderr(&out));
    let rows = rows(&dir);
    let by_p = |p: u64| rows.iter().find(|r| r["p"] == p).unwrap().clone();
    assert_eq!(by_p(2)["status"], "pass", "{:?}", by_p(2));
    let failed = by_p(17);
    assert_eq!(failed["status"], "fail");
    let expected =
        "exit code 1: ValueError: allreduce needs between 2 and 16 devices, got 17 (see run.log)";
    assert_eq!(failed["reason"], expected);
    let status = util::run(&["status", dir.to_str().unwrap()]);
    assert!(
        util::stdout(&status).contains(expected),
        "{}",
        util::stdout(&status)
    );
    let report = std::fs::read_to_string(dir.join("reports/summary.md")).unwrap();
    assert!(
        report.contains("ValueError: allreduce needs between 2 and 16 devices, got 17"),
        "{report}"
    );
}

#[test]
fn a_wrong_interpreter_is_named_not_just_exit_code_1() {
    let tmp = util::tempdir();
    let (out, dir) = run(
        tmp.path(),
        "torchless",
        "variant = [\"mesh\"]\np = [2]\nstacks = [\"standin\"]",
        2,
        &standin_def(""),
        &[("STANDIN_NO_TORCH", "1")],
    );
    assert_eq!(out.status.code(), Some(1), "{}", util::stderr(&out));
    assert_eq!(
        rows(&dir)[0]["reason"],
        "exit code 1: ModuleNotFoundError: No module named 'torch' (see run.log)"
    );
}

#[test]
fn a_failing_readiness_probe_makes_the_stack_unavailable_in_doctor_and_run() {
    let tmp = util::tempdir();
    let defs = standin_def(&format!(
        "ready = [\"python3\", \"{}\", \"--check\"]\nhint = \"install torch into that python\"",
        standin()
    ));
    let axes = "variant = [\"mesh\"]\np = [2]\nstacks = [\"standin\"]";
    // Ready: doctor says so and the run passes.
    let (out, dir) = run(tmp.path(), "probe_ok", axes, 2, &defs, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    assert_eq!(rows(&dir)[0]["status"], "pass");
    let plan = tmp.path().join("probe_ok.toml");
    let doctor = util::run(&["doctor", plan.to_str().unwrap(), "--require", "standin"]);
    let text = util::stdout(&doctor);
    assert_eq!(doctor.status.code(), Some(0), "{text}");
    assert!(
        text.lines().any(|l| l.trim() == "standin          ready"),
        "{text}"
    );
    assert!(text.contains("Containment"), "{text}");
    // Not ready: the probe's output is the reason, in doctor and for every run.
    let (out, dir) = run(
        tmp.path(),
        "probe_bad",
        axes,
        2,
        &defs,
        &[("STANDIN_NO_TORCH", "1")],
    );
    // Every run unavailable: nothing was measured, which is not a success.
    assert_eq!(out.status.code(), Some(5), "{}", util::stderr(&out));
    assert!(
        util::stderr(&out).contains("nothing was run"),
        "{}",
        util::stderr(&out)
    );
    let row = &rows(&dir)[0];
    assert_eq!(row["status"], "unavailable", "{row}");
    let reason = row["reason"].as_str().unwrap();
    assert!(
        reason.contains("readiness probe `python3 ")
            && reason
                .contains("failed (exit code 1): ModuleNotFoundError: No module named 'torch'")
            && reason.ends_with("(install torch into that python)"),
        "{reason}"
    );
    assert!(dir.join("builds/standin/ready.log").is_file());
    let plan = tmp.path().join("probe_bad.toml");
    let doctor = util::campaign()
        .args(["doctor", plan.to_str().unwrap(), "--require", "standin"])
        .env("STANDIN_NO_TORCH", "1")
        .output()
        .unwrap();
    let text = util::stdout(&doctor);
    assert_eq!(doctor.status.code(), Some(1), "{text}");
    assert!(
        text.contains("standin          unavailable: readiness probe `python3 ")
            && text.contains("ModuleNotFoundError: No module named 'torch'"),
        "{text}"
    );
}

#[test]
fn shell_stacks_quote_values_so_odd_results_paths_cannot_inject() {
    let tmp = util::tempdir();
    let plan = r#"[campaign]
name = "quoted"

[case]
platform = "host"

[axes]
variant = ["mesh"]
p = [2]
count = [256]
stacks = ["sh"]

[rounds]
warmup = 0
timed = 1

[devices]
kind = "npu"
ids = "0-1"

[stacks.sh]
shell = true
resource = "none"
command = "echo 'CAMPAIGN_SAMPLE {\"execute_s\":0.001}' > {{ bundle_dir }}/out.txt && cat {{ bundle_dir }}/out.txt"
"#;
    let file = tmp.path().join("quoted.toml");
    std::fs::write(&file, plan).unwrap();
    let results = tmp.path().join("res dir").join("it's;touch pwned");
    let out = util::run_in(
        tmp.path(),
        &[
            "run",
            file.to_str().unwrap(),
            "--results-dir",
            results.to_str().unwrap(),
            "-q",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        util::stdout(&out),
        util::stderr(&out)
    );
    let run_dir = std::fs::read_dir(results.join("quoted"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    assert_eq!(rows(&run_dir)[0]["status"], "pass");
    assert!(run_dir
        .join("cases")
        .read_dir()
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
        .join("sh/out.txt")
        .is_file());
    // Nothing after the `;` ran as a command, anywhere.
    for dir in [tmp.path().to_path_buf(), run_dir.clone()] {
        assert!(!dir.join("pwned").exists(), "{}", dir.display());
    }
}

/// A fake SIMPLER_ROOT whose older example is the stand-in.
fn fake_simpler_root(dir: &Path) -> PathBuf {
    let root = dir.join("simpler");
    let example = root.join("examples/workers/l3/allreduce_distributed");
    std::fs::create_dir_all(&example).unwrap();
    std::fs::copy(standin(), example.join("main.py")).unwrap();
    // A checkout nested under the root, as simpler's build/pto-isa is.
    let nested = root.join("build/pto-isa/.git");
    std::fs::create_dir_all(&nested).unwrap();
    std::fs::write(nested.join("HEAD"), format!("{NESTED_COMMIT}\n")).unwrap();
    root
}

const NESTED_COMMIT: &str = "89abcdef0123456789abcdef0123456789abcdef";

#[test]
fn simpler_distributed_plans_skips_and_runs_its_five_modes_as_declared() {
    let tmp = util::tempdir();
    let root = fake_simpler_root(tmp.path());
    // The shipped definition, unchanged but for its readiness probe (no torch here).
    let defs = "\n[stacks.simpler-distributed]\nready = [\"python3\", \"-c\", \"pass\"]\n";
    let axes = "variant = [\"mesh\", \"twophase\", \"ring\", \"bidirectional_ring\", \"ibing\"]\np = [2, 3, 17]\nstacks = [\"simpler-distributed\"]";
    let env = [("SIMPLER_ROOT", root.to_str().unwrap())];
    // dry-run names every limit and constraint that skips runs.
    let text = format!(
        "[campaign]\nname = \"modes\"\n\n[case]\nplatform = \"a2a3sim\"\n\n[axes]\n{axes}\ncount = [256]\n\n[rounds]\nwarmup = 0\ntimed = 1\n\n[devices]\nkind = \"npu\"\nids = \"0-16\"\n{defs}"
    );
    let plan = tmp.path().join("modes_dry.toml");
    std::fs::write(&plan, &text).unwrap();
    let dry = util::campaign()
        .args(["dry-run", plan.to_str().unwrap()])
        .env("SIMPLER_ROOT", &root)
        .output()
        .unwrap();
    let listing = util::stdout(&dry);
    assert_eq!(
        dry.status.code(),
        Some(0),
        "{listing}{}",
        util::stderr(&dry)
    );
    assert!(
        listing.contains("15 runs (8 skipped: not supported by their stack)"),
        "{listing}"
    );
    assert!(
        listing
            .contains("skipped simpler-distributed: p = 17 above this stack's max_p = 16 (5 runs)"),
        "{listing}"
    );
    assert!(
        listing.contains("this stack's constraint `variant != 'ibing' or p == 2` does not hold (variant ibing, p = 3"),
        "{listing}"
    );
    assert!(
        listing.contains("this stack's constraint `variant not in ['twophase', 'ring'] or 256 % p == 0` does not hold (variant ring, p = 3"),
        "{listing}"
    );
    // The run: supported pairs run the stand-in with the mapped --mode; the rest are skipped.
    let (out, dir) = run(tmp.path(), "modes", axes, 17, defs, &env);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        util::stdout(&out),
        util::stderr(&out)
    );
    let rows = rows(&dir);
    let status = |v: &str, p: u64| {
        let r = rows
            .iter()
            .find(|r| r["variant"] == v && r["p"] == p)
            .unwrap_or_else(|| panic!("no row {v} p={p}"));
        (
            r["status"].as_str().unwrap().to_string(),
            r["reason"].as_str().unwrap_or("").to_string(),
        )
    };
    for v in ["mesh", "twophase", "ring", "bidirectional_ring", "ibing"] {
        assert_eq!(status(v, 2).0, "pass", "{v} p=2: {:?}", status(v, 2));
        let (st, why) = status(v, 17);
        assert_eq!(st, "skipped");
        assert!(why.contains("max_p = 16"), "{why}");
    }
    for v in ["mesh", "bidirectional_ring"] {
        assert_eq!(status(v, 3).0, "pass", "{v} p=3");
    }
    for v in ["twophase", "ring", "ibing"] {
        let (st, why) = status(v, 3);
        assert_eq!(st, "skipped", "{v} p=3");
        assert!(why.contains("constraint `variant"), "{why}");
    }
    // mesh ran as `--mode onephase`; the others under their own names.
    let log = |v: &str| {
        std::fs::read_to_string(dir.join(format!(
            "cases/{v}_p2_count256_fp32_host_d0-1/simpler-distributed/run.log"
        )))
        .unwrap()
    };
    assert!(
        log("mesh").contains("compiling onephase kernel"),
        "{}",
        log("mesh")
    );
    assert!(log("bidirectional_ring").contains("compiling bidirectional_ring kernel"));
    // run.log marks where each round's process starts and ends.
    let mesh = log("mesh");
    let lines: Vec<&str> = mesh.lines().collect();
    assert!(
        lines[0].starts_with("==> campaign: round 1/1 (timed-1) start: python3 examples/workers/l3/allreduce_distributed/main.py -p host -d ")
            && lines[0].ends_with(" --mode onephase"),
        "{mesh}"
    );
    assert!(
        lines
            .last()
            .unwrap()
            .starts_with("<== campaign: round 1/1 (timed-1) end: exit code 0 after "),
        "{mesh}"
    );
    // Provenance: which python ran, the nested checkout, the env the stack adds, the root var.
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    let prov = &results["provenance"];
    // A local campaign names its backend too.
    assert_eq!(prov["executor"], "local", "{prov}");
    let stack = &prov["stack_roots"]["simpler-distributed"];
    assert_eq!(
        stack["nested_git"]["build/pto-isa"], NESTED_COMMIT,
        "{stack}"
    );
    assert!(
        stack["program"].as_str().unwrap().ends_with("python3"),
        "{stack}"
    );
    assert!(
        stack["program_version"]
            .as_str()
            .unwrap()
            .starts_with("Python 3."),
        "{stack}"
    );
    assert_eq!(stack["env"]["PYTHONUNBUFFERED"], "1", "{stack}");
    assert_eq!(
        prov["env"]["SIMPLER_ROOT"],
        root.to_str().unwrap(),
        "{prov}"
    );
    // The report names the skip reasons too.
    let report = std::fs::read_to_string(dir.join("reports/summary.md")).unwrap();
    assert!(report.contains("max_p = 16"), "{report}");
}
