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
    let head = root.join("examples/workers/l3/allreduce");
    std::fs::create_dir_all(&head).unwrap();
    std::fs::copy(standin(), head.join("main.py")).unwrap();
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
        listing.contains(
            "15 cases × 1 stack × 3 repeats = 45 runs (24 skipped: not supported by their stack)"
        ),
        "{listing}"
    );
    assert!(
        listing.contains(
            "skipped simpler-distributed: p = 17 above this stack's max_p = 16 (15 runs)"
        ),
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

/// A plan running the shipped `simpler` definition on the stand-in (`main.py` of HEAD).
fn simpler_plan(dir: &Path, name: &str, devices: &str, p: &str, extra: &str) -> PathBuf {
    let text = format!(
        "[campaign]\nname = \"{name}\"\n\n[case]\nplatform = \"a2a3sim\"\n\n[axes]\np = [{p}]\ncount = [256]\nvariant = [\"mesh\"]\ndtype = [\"fp32\"]\nstacks = [\"simpler\"]\n\n[rounds]\nwarmup = 0\ntimed = 1\n\n[run]\ntimeout = \"2m\"\nquarantine_after = 1\n\n[devices]\nkind = \"npu\"\n{devices}\n\n[stacks.simpler]\nready = [\"python3\", \"-c\", \"pass\"]\n{extra}\n"
    );
    let plan = dir.join(format!("{name}.toml"));
    std::fs::write(&plan, text).unwrap();
    plan
}

/// A PATH holding only `python3` and, when `gxx15`, a `g++-15` that says it is GCC 15 (the sim
/// platforms' compiler; the stand-ins compile nothing).
fn sim_path(dir: &Path, gxx15: bool) -> String {
    let bin = dir.join(if gxx15 { "bin-gxx15" } else { "bin-plain" });
    std::fs::create_dir_all(&bin).unwrap();
    let python = std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .map(|d| Path::new(d).join("python3"))
        .find(|p| p.is_file())
        .expect("python3 on PATH");
    let _ = std::os::unix::fs::symlink(python, bin.join("python3"));
    if gxx15 {
        let gxx = bin.join("g++-15");
        std::fs::write(&gxx, "#!/bin/sh\necho 15.1.0\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&gxx, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    format!("{}:/usr/bin:/bin", bin.display())
}

fn run_plan(dir: &Path, plan: &Path, root: &Path, env: &[(&str, &str)]) -> (Output, PathBuf) {
    let results = dir.join("results");
    let mut c = std::process::Command::new(util::exe());
    c.current_dir(dir)
        .args(["run", plan.to_str().unwrap(), "--results-dir"])
        .arg(&results)
        .arg("-q")
        .env("PATH", sim_path(dir, true))
        .env("SIMPLER_ROOT", root);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    let name = plan.file_stem().unwrap();
    let run_dir = std::fs::read_dir(results.join(name))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    (out, run_dir)
}

#[test]
fn simpler_gets_only_consecutive_devices_or_a_planned_skip() {
    let tmp = util::tempdir();
    let root = fake_simpler_root(tmp.path());
    // ids 0,2,3,5: two ranks fit 2-3; three ranks have no window and are skipped with the
    // reason; 17 ranks are above max_p.
    let plan = simpler_plan(tmp.path(), "windows", "ids = [0, 2, 3, 5]", "2, 3", "");
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
        listing.contains("this stack takes only consecutive device ids (a range lo-hi) and the pool (0,2,3,5) has no 3 consecutive ids"),
        "{listing}"
    );
    let (out, dir) = run_plan(tmp.path(), &plan, &root, &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        util::stdout(&out),
        util::stderr(&out)
    );
    let rows = rows(&dir);
    let p2 = rows.iter().find(|r| r["p"] == 2).unwrap();
    assert_eq!(p2["status"], "pass", "{p2}");
    assert_eq!(p2["devices"], serde_json::json!([2, 3]), "{p2}");
    let log = std::fs::read_to_string(
        dir.join("cases")
            .join(p2["case_id"].as_str().unwrap())
            .join("simpler/run.log"),
    )
    .unwrap();
    assert!(log.contains("-d 2-3"), "{log}");
    let p3 = rows.iter().find(|r| r["p"] == 3).unwrap();
    assert_eq!(p3["status"], "skipped", "{p3}");

    // Pinned to ids with a gap: a planned skip too, never `-d 0,2`.
    let plan = simpler_plan(
        tmp.path(),
        "pinned",
        "ids = [0, 1, 2]\nplacement = \"pinned\"",
        "2",
        "",
    );
    let text = std::fs::read_to_string(&plan)
        .unwrap()
        .replace("[case]\n", "[case]\ndevice_ids = [0, 2]\n");
    std::fs::write(&plan, text).unwrap();
    let dry = util::campaign()
        .args(["dry-run", plan.to_str().unwrap()])
        .env("SIMPLER_ROOT", &root)
        .output()
        .unwrap();
    let listing = util::stdout(&dry);
    assert!(
        listing.contains(
            "pinned device ids 0,2 are not consecutive and this stack takes only a range lo-hi"
        ),
        "{listing}{}",
        util::stderr(&dry)
    );
}

#[test]
fn simpler_failures_verdicts_causes_and_quarantine() {
    let tmp = util::tempdir();
    let root = fake_simpler_root(tmp.path());
    // A golden mismatch followed by exit 1 is correctness `fail`.
    let plan = simpler_plan(tmp.path(), "mismatch", "ids = [0, 1]", "2", "");
    let (_, dir) = run_plan(tmp.path(), &plan, &root, &[("STANDIN_MISMATCH", "1")]);
    let r = &rows(&dir)[0];
    assert_eq!(r["status"], "fail", "{r}");
    assert_eq!(r["correctness"], "fail", "{r}");
    assert!(
        r["reason"]
            .as_str()
            .unwrap()
            .starts_with("the stack reported a golden mismatch (exit code 1)"),
        "{r}"
    );

    // No STRACE span: the declared device_wall_s is missing — a protocol error naming the
    // likely causes, not a pass on another metric.
    let plan = simpler_plan(tmp.path(), "nospan", "ids = [0, 1]", "2", "");
    let (_, dir) = run_plan(tmp.path(), &plan, &root, &[("STANDIN_NO_STRACE", "1")]);
    let r = &rows(&dir)[0];
    assert_eq!(r["status"], "fail", "{r}");
    let e = r["reason"].as_str().unwrap();
    assert!(
        e.starts_with("protocol error: round 1 (timed-1) has no device_wall_s"),
        "{e}"
    );
    assert!(e.contains("SIMPLER_DEVICE_STRACE_ENABLE=0"), "{e}");

    // An argument error before any device is touched: its ValueError is the cause (not the
    // resource_tracker warning after it), and no device is quarantined although
    // quarantine_after = 1.
    let plan = simpler_plan(
        tmp.path(),
        "argerror",
        "ids = [0, 1]",
        "2",
        "command = [\"python3\", \"examples/workers/l3/allreduce/main.py\", \"-p\", \"{{ platform }}\", \"-d\", \"{{ devices_csv }}\"]",
    );
    let (_, dir) = run_plan(tmp.path(), &plan, &root, &[]);
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    let r = &results["runs"][0];
    assert_eq!(r["status"], "fail", "{r}");
    assert_eq!(
        r["reason"],
        "exit code 1: ValueError: invalid literal for int() with base 10: '0,1' (see run.log)",
        "{r}"
    );
    let quarantined = &results["quarantined"];
    assert!(
        quarantined.is_null()
            || quarantined.as_object().is_some_and(|q| q.is_empty())
            || quarantined.as_array().is_some_and(|q| q.is_empty()),
        "{quarantined}"
    );
}

/// A pypto checkout whose `python3 -m pytest` is the stand-in (`fixtures/standin/pypto_pytest.py`).
fn fake_pypto_root(dir: &Path) -> PathBuf {
    let root = dir.join("pypto");
    let stand_in = util::root().join("tests/integration/fixtures/standin/pypto_pytest.py");
    std::fs::create_dir_all(root.join("pytest")).unwrap();
    std::fs::copy(&stand_in, root.join("pytest/__main__.py")).unwrap();
    std::fs::write(root.join("pytest/__init__.py"), "").unwrap();
    for f in [
        "tests/st/distributed/collectives/test_l3_tensor_allreduce_intrinsic.py",
        "tests/st/distributed/collectives/test_l3_tensor_allreduce_ring_intrinsic.py",
        "tests/st/distributed/test_l3_host_tensor_allreduce.py",
        "tests/st/distributed/collectives/test_l3_tensor_allgather_intrinsic.py",
        "tests/st/distributed/test_l3_host_tensor_allgather.py",
    ] {
        std::fs::create_dir_all(root.join(f).parent().unwrap()).unwrap();
        std::fs::write(root.join(f), "").unwrap();
    }
    root
}

fn pypto_plan(dir: &Path, name: &str, axes: &str, extra: &str) -> PathBuf {
    let text = format!(
        "[campaign]\nname = \"{name}\"\n\n[case]\nplatform = \"a2a3sim\"\n\n[axes]\n{axes}\n\n[rounds]\nwarmup = 0\ntimed = 1\n\n[run]\ntimeout = \"2m\"\n\n[devices]\nkind = \"npu\"\nids = \"0-3\"\n\n[stacks.pypto-composite]\nready = [\"python3\", \"-c\", \"pass\"]\n{extra}\n"
    );
    let plan = dir.join(format!("{name}.toml"));
    std::fs::write(&plan, text).unwrap();
    plan
}

fn run_with(dir: &Path, plan: &Path, env: &[(&str, &str)]) -> (Output, PathBuf) {
    let results = dir.join("results");
    let mut c = std::process::Command::new(util::exe());
    c.current_dir(dir)
        .args(["run", plan.to_str().unwrap(), "--results-dir"])
        .arg(&results)
        .arg("-q");
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    let run_dir = std::fs::read_dir(results.join(plan.file_stem().unwrap()))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    (out, run_dir)
}

#[test]
fn pypto_runs_select_upstream_node_ids_and_read_pytests_outcome() {
    let tmp = util::tempdir();
    let root = fake_pypto_root(tmp.path());
    let env = [("PYPTO_ROOT", root.to_str().unwrap())];
    let axes = "variant = [\"mesh\", \"ring\"]\np = [2, 4]\ncount = [17, 256, 8193]\ndtype = [\"fp32\"]\nstacks = [\"pypto-composite\"]";
    let plan = pypto_plan(tmp.path(), "pypto", axes, "");
    let (out, dir) = run_with(tmp.path(), &plan, &env);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        util::stdout(&out),
        util::stderr(&out)
    );
    let all = rows(&dir);
    for r in &all {
        if r["count"] == 8193 {
            // An fp16 size only: the declared constraint skips it for fp32.
            assert_eq!(r["status"], "skipped", "{r}");
            assert!(
                r["reason"]
                    .as_str()
                    .unwrap()
                    .contains("dtype != 'fp32' or count in [1, 17, 4097, 65537]` does not hold"),
                "{r}"
            );
            continue;
        }
        if r["count"] == 256 {
            // Not one of the test's sizes: planned skip, never a run that collects nothing.
            assert_eq!(r["status"], "skipped", "{r}");
            let reason = r["reason"].as_str().unwrap();
            assert!(
                reason.contains("count in [1, 17, 4097, 65537]` does not hold"),
                "{r}"
            );
            continue;
        }
        assert_eq!(r["status"], "pass", "{r}");
        // One span per rank: the slowest rank's dur (P ms for P ranks).
        let p = r["p"].as_f64().unwrap();
        assert!(
            (r["device_wall_s_mean"].as_f64().unwrap() - p * 1e-3).abs() < 1e-12,
            "{r}"
        );
        let log = std::fs::read_to_string(
            dir.join(r["artifact_bundle"].as_str().unwrap())
                .join("run.log"),
        )
        .unwrap();
        let id = if r["variant"] == "ring" {
            format!("test_l3_tensor_allreduce_ring_intrinsic.py::TestL3TensorRingAllReduceIntrinsic::test_ring_allreduce_intrinsic[{p}-17]")
        } else {
            format!("test_l3_tensor_allreduce_intrinsic.py::TestL3TensorAllReduceIntrinsic::test_allreduce_intrinsic[{p}-17]")
        };
        assert!(log.contains(&id), "{log}");
    }

    // The old `-k` selection: pytest collects nothing; the failure names the selection.
    let extra = "command = [\"python3\", \"-m\", \"pytest\", \"tests/st/distributed/collectives/test_l3_allreduce.py::TestL3AllReduce::test_allreduce[{{ p }}-1]\", \"-s\", \"-v\", \"-rA\"]";
    let plan = pypto_plan(tmp.path(), "moved", "variant = [\"mesh\"]\np = [2]\ncount = [17]\ndtype = [\"fp32\"]\nstacks = [\"pypto-composite\"]", extra);
    let (_, dir) = run_with(tmp.path(), &plan, &env);
    let r = &rows(&dir)[0];
    assert_eq!(r["status"], "fail", "{r}");
    let why = r["reason"].as_str().unwrap();
    assert!(why.starts_with("exit code 4: pytest ran no test: the selection tests/st/distributed/collectives/test_l3_allreduce.py::TestL3AllReduce::test_allreduce[2-1] matched nothing"), "{why}");

    // The golden assertion failing is correctness `fail`.
    let plan = pypto_plan(tmp.path(), "wrong", "variant = [\"mesh\"]\np = [2]\ncount = [17]\ndtype = [\"fp32\"]\nstacks = [\"pypto-composite\"]", "");
    let (_, dir) = run_with(tmp.path(), &plan, &[env[0], ("STANDIN_MISMATCH", "1")]);
    let r = &rows(&dir)[0];
    assert_eq!(r["correctness"], "fail", "{r}");
    assert!(
        r["reason"]
            .as_str()
            .unwrap()
            .contains("AssertionError: allreduce P=2 mismatch"),
        "{r}"
    );
}

#[test]
fn doctor_contract_checks_test_ids_and_flags_and_says_when_upstream_moved() {
    let tmp = util::tempdir();
    let root = fake_pypto_root(tmp.path());
    let doctor = |env: &[(&str, &str)]| {
        let mut c = util::campaign();
        c.current_dir(tmp.path())
            .args(["doctor", "--contract"])
            .env("PYPTO_ROOT", &root)
            .env_remove("SIMPLER_ROOT")
            .env_remove("PTO_ISA_ROOT")
            .env_remove("ASCEND_HOME_PATH");
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().unwrap()
    };
    let out = doctor(&[]);
    let text = util::stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", util::stderr(&out));
    let row = |name: &str, item: &str| {
        text.lines()
            .find(|l| l.starts_with(name) && l.contains(item))
            .unwrap_or_else(|| panic!("no row {name} {item}:\n{text}"))
            .to_string()
    };
    assert!(
        row("pypto-composite", "node ids it selects exist").contains(" ok "),
        "{text}"
    );
    assert!(
        row("pypto-host", "conftest takes --platform and --device").contains(" ok"),
        "{text}"
    );
    assert!(row("pto-isa", "(all)").contains("not checked"), "{text}");

    // Upstream renamed one parametrization: that item is broken, exit 1.
    let out = doctor(&[("STANDIN_MOVED", "[4-65537]")]);
    let text = util::stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let broken = text
        .lines()
        .find(|l| l.starts_with("pypto-composite") && l.contains("node ids it selects"))
        .unwrap();
    assert!(broken.contains("broken"), "{broken}");
    assert!(broken.contains("output lacks `test_allreduce_intrinsic[4-65537]`, `test_ring_allreduce_intrinsic[4-65537]`"), "{broken}");
    assert!(util::stderr(&out).contains("contract item(s) broken"));
}

#[test]
fn simpler_scene_runs_all_rounds_in_one_process_with_strace_rounds() {
    let tmp = util::tempdir();
    let root = fake_simpler_root(tmp.path());
    let dir = root.join("tests/st/worker/collectives/allreduce");
    std::fs::create_dir_all(&dir).unwrap();
    // As upstream's, the test file cannot run as a script (its relative import): only pytest
    // (the stand-in, `python3 -m pytest` in the root) runs it.
    std::fs::write(
        dir.join("test_allreduce.py"),
        "from .._helpers import allreduce_orch_fn\n",
    )
    .unwrap();
    std::fs::create_dir_all(root.join("pytest")).unwrap();
    std::fs::copy(
        util::root().join("tests/integration/fixtures/standin/scene_pytest.py"),
        root.join("pytest/__main__.py"),
    )
    .unwrap();
    std::fs::write(root.join("pytest/__init__.py"), "").unwrap();
    let text = "[campaign]\nname = \"scene\"\n\n[case]\nplatform = \"a2a3sim\"\n\n[axes]\nvariant = [\"mesh\", \"ibing\", \"bidirectional_ring\"]\np = [2, 4]\ncount = [256]\ndtype = [\"fp32\"]\nstacks = [\"simpler-scene\"]\n\n[rounds]\nwarmup = 1\ntimed = 2\n\n[run]\ntimeout = \"2m\"\nrepeats = 1\n\n[devices]\nkind = \"npu\"\nids = \"0-3\"\n\n[stacks.simpler-scene]\nready = [\"python3\", \"-c\", \"pass\"]\n";
    let plan = tmp.path().join("scene.toml");
    std::fs::write(&plan, text).unwrap();
    let (out, run_dir) = run_plan(tmp.path(), &plan, &root, &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        util::stdout(&out),
        util::stderr(&out)
    );
    let all = rows(&run_dir);
    let stacks: Vec<_> = all
        .iter()
        .map(|r| format!("{} {} {}", r["stack"], r["variant"], r["p"]))
        .collect();
    assert_eq!(all.len(), 6, "{stacks:?}");
    for r in &all {
        if r["variant"] == "ibing" && r["p"] == 4 {
            assert_eq!(r["status"], "skipped", "{r}");
            assert!(
                r["reason"]
                    .as_str()
                    .unwrap()
                    .contains("`variant != 'ibing' or p == 2`"),
                "{r}"
            );
            continue;
        }
        assert_eq!(r["status"], "pass", "{r}");
        assert_eq!(r["n_warmup"], 1, "{r}");
        assert_eq!(r["n_timed"], 2, "{r}");
        // Timed rounds 2 and 3: slowest rank (P-1) of each, 2 ms and 3 ms plus its 1 µs steps.
        let p = r["p"].as_f64().unwrap();
        let want = (2e-3 + 3e-3) / 2.0 + (p - 1.0) * 1e-6;
        assert!(
            (r["device_wall_s_mean"].as_f64().unwrap() - want).abs() < 1e-12,
            "{r}"
        );
    }
    // One process ran every round (one `=== Runtime` header), with the class of the mode.
    let r = all
        .iter()
        .find(|r| r["variant"] == "bidirectional_ring" && r["p"] == 4)
        .unwrap();
    let log = std::fs::read_to_string(
        run_dir
            .join(r["artifact_bundle"].as_str().unwrap())
            .join("run.log"),
    )
    .unwrap();
    assert!(
        log.contains("test_allreduce.py::TestAllreduceBidirectionalRingP4::test_run PASSED"),
        "{log}"
    );
    assert_eq!(log.matches("test session starts").count(), 1, "{log}");

    // A failing class: pytest's AssertionError is the run's golden mismatch, with its line.
    let text = std::fs::read_to_string(&plan)
        .unwrap()
        .replace("name = \"scene\"", "name = \"scenefail\"")
        .replace(
            "[\"mesh\", \"ibing\", \"bidirectional_ring\"]",
            "[\"ring\"]",
        )
        .replace("p = [2, 4]", "p = [2]");
    let plan = tmp.path().join("scenefail.toml");
    std::fs::write(&plan, text).unwrap();
    let (out, run_dir) = run_plan(tmp.path(), &plan, &root, &[("STANDIN_SCENE_FAIL", "1")]);
    assert_ne!(out.status.code(), Some(0));
    let r = &rows(&run_dir)[0];
    assert_eq!(r["status"], "fail", "{r}");
    assert_eq!(r["correctness"], "fail", "{r}");
    assert!(
        r["reason"]
            .as_str()
            .unwrap()
            .contains("rank 1 output mismatch"),
        "{r}"
    );
}

/// A PATH whose `python3` runs the real interpreter with `inner` prepended to its PATH, the way
/// simpler-sim-setup.sh's shim runs python inside a chroot that has its own PATH: what that
/// python finds is what the stack's compiles find.
fn shim_path(dir: &Path, inner: &Path) -> String {
    let bin = dir.join("bin-shim");
    std::fs::create_dir_all(&bin).unwrap();
    let python = std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .map(|d| Path::new(d).join("python3"))
        .find(|p| p.is_file())
        .expect("python3 on PATH");
    let shim = bin.join("python3");
    std::fs::write(
        &shim,
        format!(
            "#!/bin/sh\nPATH={}:$PATH exec {} \"$@\"\n",
            inner.display(),
            python.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();
    format!("{}:/usr/bin:/bin", bin.display())
}

/// A folder holding a `g++-15` whose `-dumpversion` says `version`.
fn gxx15_dir(dir: &Path, version: &str) -> PathBuf {
    let bin = dir.join(format!("gxx-{version}"));
    std::fs::create_dir_all(&bin).unwrap();
    let gxx = bin.join("g++-15");
    std::fs::write(&gxx, format!("#!/bin/sh\necho {version}\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&gxx, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

#[test]
fn sim_runs_without_gxx15_are_unavailable_with_the_reason() {
    let tmp = util::tempdir();
    let root = fake_simpler_root(tmp.path());
    let plan = simpler_plan(tmp.path(), "nogxx", "ids = [0, 1]", "2", "");
    let reason_with = |path: &str, name: &str| {
        let text = std::fs::read_to_string(&plan)
            .unwrap()
            .replace("name = \"nogxx\"", &format!("name = \"{name}\""));
        let plan = tmp.path().join(format!("{name}.toml"));
        std::fs::write(&plan, text).unwrap();
        let (out, dir) = run_plan(tmp.path(), &plan, &root, &[("PATH", path)]);
        let r = rows(&dir)[0].clone();
        (out, r, dir)
    };
    // No g++-15 where the stack's python3 looks: every sim run is unavailable, naming it.
    let path = sim_path(tmp.path(), false);
    let (out, r, dir) = reason_with(&path, "none");
    assert_eq!(r["status"], "unavailable", "{r}");
    let reason = r["reason"].as_str().unwrap();
    assert!(reason.starts_with("on a2a3sim: readiness probe"), "{r}");
    assert!(
        reason.contains("g++-15 not found on the PATH of this python3"),
        "{r}"
    );
    assert!(reason.contains("GCC >= 13"), "{r}");
    assert!(
        dir.join("builds/simpler/ready-a2a3sim.log").is_file(),
        "the probe's output is kept"
    );
    assert_ne!(out.status.code(), Some(0), "{}", util::stderr(&out));
    // doctor (with the root's own simpler and a torch importable) says which platform's runs
    // it makes unavailable.
    let site = tmp.path().join("site");
    for m in [root.join("simpler"), site.join("torch")] {
        std::fs::create_dir_all(&m).unwrap();
        std::fs::write(m.join("__init__.py"), "").unwrap();
    }
    let doctor = util::campaign()
        .arg("doctor")
        .current_dir(tmp.path())
        .env("PATH", &path)
        .env("SIMPLER_ROOT", &root)
        .env(
            "PYTHONPATH",
            format!("{}:{}", root.display(), site.display()),
        )
        .output()
        .unwrap();
    let text = util::stdout(&doctor);
    assert!(text.contains("  simpler          ready"), "{text}");
    assert!(
        text.contains("on a2a3sim: runs unavailable: readiness probe")
            && text.contains("g++-15 not found on the PATH of this python3"),
        "{text}"
    );
    // A g++-15 that is an older GCC is refused with its version.
    let old = gxx15_dir(tmp.path(), "12.2.0");
    let path = format!("{}:{}", old.display(), sim_path(tmp.path(), false));
    let (_, r, _) = reason_with(&path, "old");
    assert_eq!(r["status"], "unavailable", "{r}");
    assert!(
        r["reason"]
            .as_str()
            .unwrap()
            .contains("is GCC 12.2.0: the sim platforms need GCC >= 13"),
        "{r}"
    );
    // g++-15 only on the PATH the stack's python3 gives its children (a chroot's): ready,
    // though this PATH has none.
    let inner = gxx15_dir(tmp.path(), "15.2.0");
    let path = shim_path(tmp.path(), &inner);
    let (_, r, _) = reason_with(&path, "shim");
    assert_eq!(r["status"], "pass", "{r}");
    // Hardware platforms never need it.
    let text = std::fs::read_to_string(&plan)
        .unwrap()
        .replace("a2a3sim", "a2a3");
    let plan = tmp.path().join("hw.toml");
    std::fs::write(&plan, text.replace("name = \"nogxx\"", "name = \"hw\"")).unwrap();
    let path = sim_path(tmp.path(), false);
    let (_, dir) = run_plan(tmp.path(), &plan, &root, &[("PATH", path.as_str())]);
    assert_eq!(rows(&dir)[0]["status"], "pass", "{}", rows(&dir)[0]);
}

#[test]
fn requires_on_makes_only_that_platforms_runs_unavailable() {
    let tmp = util::tempdir();
    let root = fake_simpler_root(tmp.path());
    let extra = "requires_on = { a2a3sim = [\"campaign-no-such-tool\"] }";
    let plan = simpler_plan(tmp.path(), "reqon", "ids = [0, 1]", "2", extra);
    let (_, dir) = run_plan(tmp.path(), &plan, &root, &[]);
    let r = &rows(&dir)[0];
    assert_eq!(r["status"], "unavailable", "{r}");
    assert!(
        r["reason"]
            .as_str()
            .unwrap()
            .starts_with("campaign-no-such-tool not found (needed on a2a3sim)"),
        "{r}"
    );
    let text = std::fs::read_to_string(&plan)
        .unwrap()
        .replace("a2a3sim", "a2a3")
        .replace("a2a3 = [", "a2a3sim = [")
        .replace("name = \"reqon\"", "name = \"reqonhw\"");
    let plan = tmp.path().join("reqonhw.toml");
    std::fs::write(&plan, text).unwrap();
    let (_, dir) = run_plan(tmp.path(), &plan, &root, &[]);
    assert_eq!(rows(&dir)[0]["status"], "pass", "{}", rows(&dir)[0]);
}

#[test]
fn the_readiness_probe_wants_simpler_from_the_stacks_own_root() {
    let tmp = util::tempdir();
    let root = fake_simpler_root(tmp.path());
    // An interpreter that imports another checkout's simpler (a HEAD install with an older
    // root): not ready, and the reason says where it came from.
    let other = tmp.path().join("site");
    for m in ["simpler", "torch"] {
        std::fs::create_dir_all(other.join(m)).unwrap();
        std::fs::write(other.join(m).join("__init__.py"), "").unwrap();
    }
    let doctor = |pythonpath: &Path| {
        let o = util::campaign()
            .arg("doctor")
            .current_dir(tmp.path())
            .env("SIMPLER_ROOT", &root)
            .env("PYTHONPATH", pythonpath)
            .env("PATH", sim_path(tmp.path(), true))
            .output()
            .unwrap();
        let text = util::stdout(&o);
        text.lines()
            .find(|l| l.starts_with("  simpler "))
            .unwrap_or_else(|| panic!("{text}"))
            .to_string()
    };
    let line = doctor(&other);
    let real_other = std::fs::canonicalize(other.join("simpler/__init__.py")).unwrap();
    assert!(line.contains("unavailable: readiness probe"), "{line}");
    assert!(
        line.contains(&format!(
            "simpler is imported from {}, not from the stack root",
            real_other.display()
        )),
        "{line}"
    );
    // The root's own package (and a torch): ready.
    std::fs::create_dir_all(root.join("simpler")).unwrap();
    std::fs::write(root.join("simpler/__init__.py"), "").unwrap();
    assert!(doctor(&other).ends_with(" ready"), "{}", doctor(&other));
}
