//! Profiles for real (issue 49): `[profile] kinds = ["cpu", "counters"]` on the `host` stack at
//! P = 2 makes one profiled run per (case, stack, kind) whose flame graph names campaign's own
//! ring, mesh and twophase functions; on the `mpi` stack one naming Open MPI's. Profiled runs
//! are marked and kept apart: the results files never list them, and removing every one of
//! them from the run dir changes no byte of the results files or the report's statistics.
//!
//! perf and Open MPI must be installed (`scripts/install-perf.sh`, `scripts/install-mpi.sh`;
//! `scripts/test.sh` runs both): without them these tests fail and say so, they never skip.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::util;

fn require(tool: &str, script: &str) {
    let found = Command::new(tool).arg("--version").output().is_ok();
    assert!(
        found,
        "{tool} not found on PATH: the profile tests need it — run {script}"
    );
}

fn plan(stacks: &str, variants: &str, profile: &str) -> String {
    format!(
        r#"
[campaign]
name = "prof"
[case]
platform = "host"
dtype = "fp32"
p = 2
[axes]
variant = [{variants}]
count = [65536]
stacks = [{stacks}]
[rounds]
warmup = 2
timed = 20
[run]
repeats = 2
[devices]
kind = "cpu"
{profile}
"#
    )
}

/// Run `plan_text` in a fresh results dir; the run dir.
fn run(tmp: &Path, plan_text: &str, extra: &[&str]) -> PathBuf {
    let plan = tmp.join("prof.toml");
    std::fs::write(&plan, plan_text).unwrap();
    let results = tmp.join("results");
    let mut args = vec![
        "run",
        plan.to_str().unwrap(),
        "--results-dir",
        results.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = util::run_in(tmp, &args);
    assert_eq!(o.status.code(), Some(0), "{}", util::stderr(&o));
    std::fs::read_dir(results.join("prof"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Every profile of `profiles.json`, each checked passed, marked in its manifest, and its
/// folder under the timed run's bundle.
fn profiles(run_dir: &Path) -> Vec<Value> {
    let file = json(&run_dir.join("profiles.json"));
    let list = file["profiles"].as_array().unwrap().clone();
    for p in &list {
        assert_eq!(p["status"], "pass", "{p}");
        let bundle = run_dir.join(p["bundle"].as_str().unwrap());
        let expected = format!(
            "cases/{}/{}/profiling/{}",
            p["case_id"].as_str().unwrap(),
            p["stack"].as_str().unwrap(),
            p["kind"].as_str().unwrap()
        );
        assert_eq!(p["bundle"], expected.as_str());
        let manifest = json(&bundle.join("manifest.json"));
        assert_eq!(manifest["profiled"], true);
        assert_eq!(manifest["profile_kind"], p["kind"]);
        assert_eq!(manifest["profiling"], p["files"]);
    }
    list
}

/// The flame graph of `case`'s `cpu` profile on `stack`.
fn flame_graph(run_dir: &Path, case: &str, stack: &str) -> String {
    let svg = run_dir.join(format!("cases/{case}/{stack}/profiling/cpu/flamegraph.svg"));
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(
        text.starts_with("<?xml") && text.contains("<svg"),
        "{}",
        svg.display()
    );
    text
}

/// The results files and the report's statistics, with the run dir's own path taken out.
fn statistics(run_dir: &Path) -> Vec<(String, String)> {
    let o = util::run(&["report", run_dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", util::stderr(&o));
    let own = run_dir.to_str().unwrap();
    let mut out = Vec::new();
    for f in ["results.json", "results.csv", "samples.csv"] {
        let text = std::fs::read_to_string(run_dir.join(f)).unwrap();
        out.push((f.to_string(), text.replace(own, "RUN_DIR")));
    }
    // The report's statistics: everything of its context but the profiles it links.
    let mut context = json(&run_dir.join("reports/context.json"));
    if let Value::Object(map) = &mut context {
        map.remove("profiles");
    }
    out.push((
        "context".into(),
        context.to_string().replace(own, "RUN_DIR"),
    ));
    out
}

fn copy_dir(from: &Path, to: &Path) {
    let ok = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .unwrap();
    assert!(ok.success());
}

/// Every `profiling/` folder under `dir`, found by walking it.
fn remove_profiles(dir: &Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == "profiling") {
                std::fs::remove_dir_all(&path).unwrap();
            } else {
                remove_profiles(&path);
            }
        }
    }
}

#[test]
fn host_profiles_name_the_collectives_and_leave_the_timed_statistics_untouched() {
    require("perf", "scripts/install-perf.sh");
    let tmp = util::tempdir();
    let text = plan(
        r#""host""#,
        r#""ring", "mesh", "twophase""#,
        "[profile]\nkinds = [\"cpu\", \"counters\"]\n",
    );
    let run_dir = run(tmp.path(), &text, &[]);
    let results = json(&run_dir.join("results.json"));
    let rows = results["runs"].as_array().unwrap();
    assert_eq!(rows.len(), 3 * 2, "3 variants × 2 repeats; no profiled row");
    for row in rows {
        assert!(!row["artifact_bundle"]
            .as_str()
            .unwrap()
            .contains("profiling"));
    }
    let list = profiles(&run_dir);
    assert_eq!(
        list.len(),
        3 * 2,
        "one profiled run per (case, stack, kind)"
    );
    for variant in ["ring", "mesh", "twophase"] {
        let case = format!("{variant}_p2_count65536_fp32_host_d0-1");
        let svg = flame_graph(&run_dir, &case, "host");
        let own = format!("campaign::bench::{variant}::allreduce");
        assert!(
            svg.contains(&own),
            "{case}: the flame graph does not name {own}"
        );
        let csv = run_dir.join(format!("cases/{case}/host/profiling/counters/counters.csv"));
        let csv = std::fs::read_to_string(csv).unwrap();
        assert!(csv.contains(",task-clock,"), "{csv}");
    }

    // The same run dir without its profiled runs: the same bytes of statistics.
    let bare = tmp.path().join("bare");
    copy_dir(&run_dir, &bare);
    std::fs::remove_file(bare.join("profiles.json")).unwrap();
    remove_profiles(&bare.join("cases"));
    assert_eq!(statistics(&run_dir), statistics(&bare));

    // The plan without [profile] makes no profiled run and no profiles.json.
    let tmp2 = util::tempdir();
    let plain = run(tmp2.path(), &plan(r#""host""#, r#""ring""#, ""), &[]);
    assert!(!plain.join("profiles.json").exists());
    let rows = json(&plain.join("results.json"))["runs"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(rows, 2);
    // The report names the plan by its file name, never where one person kept it.
    // (The temp folder's own name stands for the path: HTML escapes its slashes.)
    let folder = tmp2.path().file_name().unwrap().to_str().unwrap();
    for page in ["reports/summary.md", "reports/index.html"] {
        let text = std::fs::read_to_string(plain.join(page)).unwrap();
        assert!(text.contains("prof.toml"), "{page}");
        let plan_lines = text.lines().filter(|l| l.contains("prof.toml"));
        assert!(plan_lines.clone().all(|l| !l.contains(folder)), "{page}");
    }
}

#[test]
fn mpi_profile_names_open_mpis_functions_and_run_profile_replaces_the_plans_kinds() {
    require("perf", "scripts/install-perf.sh");
    require("mpirun", "scripts/install-mpi.sh");
    let tmp = util::tempdir();
    // No [profile] in the plan: `--profile cpu` asks for it.
    let text = plan(r#""mpi""#, r#""ring""#, "");
    let run_dir = run(tmp.path(), &text, &["--profile", "cpu"]);
    let rows = json(&run_dir.join("results.json"))["runs"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(rows, 2, "2 repeats; no profiled row");
    let list = profiles(&run_dir);
    assert_eq!(list.len(), 1);
    let svg = flame_graph(&run_dir, "ring_p2_count65536_fp32_host_d0-1", "mpi");
    // Open MPI's ring allreduce, pinned by the variant, under the MPI call.
    for f in ["ompi_coll_base_allreduce_intra_ring", "MPI_Allreduce"] {
        assert!(svg.contains(f), "the flame graph does not name {f}");
    }
}

#[test]
fn a_stack_that_cannot_make_a_kind_is_a_planned_skip_that_says_why() {
    let tmp = util::tempdir();
    // The host stack has no swimlane: the timed runs pass, the profiled run is skipped.
    let text = plan(
        r#""host""#,
        r#""ring""#,
        "[profile]\nkinds = [\"swimlane\"]\n",
    );
    let run_dir = run(tmp.path(), &text, &[]);
    let file = json(&run_dir.join("profiles.json"));
    let p = &file["profiles"][0];
    assert_eq!(p["status"], "skipped");
    let why = p["reason"].as_str().unwrap();
    assert!(
        why.contains("swimlane") && why.contains("cpu, counters"),
        "{why}"
    );
}

#[test]
fn bad_profile_input_is_refused_naming_the_field() {
    let tmp = util::tempdir();
    let path = tmp.path().join("bad.toml");
    let text = plan(
        r#""host""#,
        r#""ring""#,
        "[profile]\nkinds = [\"flame\"]\nruns = 0\n",
    );
    std::fs::write(&path, text).unwrap();
    let o = util::run_in(tmp.path(), &["validate", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = util::stderr(&o);
    assert!(
        err.contains("profile.kinds[0]") && err.contains("`flame`"),
        "{err}"
    );
    assert!(err.contains("profile.runs"), "{err}");
    let o = util::run_in(
        tmp.path(),
        &["run", path.to_str().unwrap(), "--profile", "cpu,flame"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(util::stderr(&o).contains("unknown profile kind `flame`"));
}

#[test]
fn a_pmu_csv_in_simplers_format_is_summarised_in_the_report() {
    require("perf", "scripts/install-perf.sh");
    let tmp = util::tempdir();
    let text = plan(
        r#""host""#,
        r#""ring""#,
        "[profile]\nkinds = [\"counters\"]\n",
    );
    let run_dir = run(tmp.path(), &text, &[]);
    // A pmu profile as the simpler-scene stack leaves it (no PMU can be recorded here: the
    // simulator does not model the counters), its pmu.csv in the format simpler writes.
    let case = "ring_p2_count65536_fp32_host_d0-1";
    let bundle = format!("cases/{case}/host/profiling/pmu");
    std::fs::create_dir_all(run_dir.join(&bundle)).unwrap();
    std::fs::copy(
        util::root().join("tests/integration/fixtures/profiles/pmu.csv"),
        run_dir.join(&bundle).join("pmu.csv"),
    )
    .unwrap();
    let mut file = json(&run_dir.join("profiles.json"));
    file["profiles"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({
            "case_id": case, "stack": "host", "kind": "pmu", "run": 1, "status": "pass",
            "reason": null, "bundle": bundle, "files": {"pmu.csv": "pmu.csv"}, "wall_s": 1.0
        }));
    std::fs::write(run_dir.join("profiles.json"), file.to_string()).unwrap();
    let o = util::run(&["report", run_dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", util::stderr(&o));
    let md = std::fs::read_to_string(run_dir.join("reports/summary.md")).unwrap();
    assert!(md.contains("## Profiles"), "{md}");
    assert!(
        md.contains("- AIV (2 task(s)): vec 11.1 %, cube 0.0 %"),
        "{md}"
    );
    assert!(
        md.contains("- AIC (1 task(s)): vec 0.0 %, cube 75.0 %"),
        "{md}"
    );
    assert!(md.contains("[counters](../cases/"), "{md}");
    let html = std::fs::read_to_string(run_dir.join("reports/index.html")).unwrap();
    assert!(html.contains("id=\"profiles\"") && html.contains("cube 75.0 %"));
}
