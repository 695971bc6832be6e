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
    // The report's statistics: everything of its context but the profiles it links (the
    // Profiles section's list, and each case row's links to its own).
    let mut context = json(&run_dir.join("reports/context.json"));
    if let Value::Object(map) = &mut context {
        map.remove("profiles");
    }
    for case in context["cases"].as_array_mut().unwrap() {
        for cell in case["cells"].as_array_mut().unwrap() {
            cell.as_object_mut().unwrap().remove("profiles");
        }
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
    // No [profile] in the plan: `--profile cpu` asks for it. 2,000 timed rounds: the profiled
    // run lasts long enough (a few hundred ms) that 997 Hz sampling lands in the ring's own
    // frames every time (20 rounds left it to chance: one CI run's graph missed them).
    let text = plan(r#""mpi""#, r#""ring""#, "").replace("timed = 20", "timed = 2000");
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

/// Add a profile of `kind` holding `fixture` (a file of tests/integration/fixtures/profiles) to
/// `run_dir`'s `profiles.json`, as the simpler-scene stack leaves one (no NPU here to record
/// it: the simulator models no counters and refuses the swimlane for L3 tests).
fn add_upstream_profile(run_dir: &Path, case: &str, kind: &str, fixture: &str) {
    let bundle = format!("cases/{case}/host/profiling/{kind}");
    std::fs::create_dir_all(run_dir.join(&bundle)).unwrap();
    std::fs::copy(
        util::root()
            .join("tests/integration/fixtures/profiles")
            .join(fixture),
        run_dir.join(&bundle).join(fixture),
    )
    .unwrap();
    let mut file = json(&run_dir.join("profiles.json"));
    file["profiles"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({
            "case_id": case, "stack": "host", "kind": kind, "run": 1, "status": "pass",
            "reason": null, "bundle": bundle, "files": {fixture: fixture}, "wall_s": 1.0
        }));
    std::fs::write(run_dir.join("profiles.json"), file.to_string()).unwrap();
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
    // A pmu and a swimlane profile as the simpler-scene stack leaves them, in the formats
    // simpler writes (pmu.csv: PmuCollector; chip_swimlane_records.json: ChipSwimlaneCollector).
    let case = "ring_p2_count65536_fp32_host_d0-1";
    add_upstream_profile(&run_dir, case, "pmu", "pmu.csv");
    add_upstream_profile(&run_dir, case, "swimlane", "chip_swimlane_records.json");
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
    // The results row of (case, host) links each of its profiles, not only the section.
    let row = (md.lines())
        .find(|l| l.starts_with(&format!("| `{case}`")))
        .unwrap_or_else(|| panic!("no results row of {case}: {md}"));
    let dir = format!("../cases/{case}/host/profiling");
    for link in [
        format!("[counters]({dir}/counters/counters.csv)"),
        format!("[pmu]({dir}/pmu/pmu.csv)"),
        format!("[swimlane]({dir}/swimlane/chip_swimlane_records.json)"),
    ] {
        assert!(row.contains(&link), "{link} not in {row}");
    }
    // The swimlane's phase summary: where the scheduler threads' time went.
    assert!(
        md.contains("- scheduler (2 thread(s), 18.0 µs of windows): complete 27.8 % (5.0 µs), dispatch 16.7 % (3.0 µs), idle 55.6 % (10.0 µs); within them: resolve 5.6 %"),
        "{md}"
    );
    assert!(
        md.contains("AIV 2 task(s) on 2 core(s), busy 75.0 %"),
        "{md}"
    );
    assert!(md.contains("- orchestrator: 2 submit(s), 1.4 µs"), "{md}");
    // The seed's pmu_utilization figure, drawn from the pmu.csv, PNG and SVG.
    for ext in ["png", "svg"] {
        let f = run_dir.join(format!("figures/pmu_utilization.{ext}"));
        assert!(std::fs::metadata(&f).unwrap().len() > 0, "{}", f.display());
    }
    let svg = std::fs::read_to_string(run_dir.join("figures/pmu_utilization.svg")).unwrap();
    assert!(svg.contains("AIC cores") && svg.contains("cube"), "{svg}");
    assert!(md.contains("pmu_utilization.png"), "{md}");
    let html = std::fs::read_to_string(run_dir.join("reports/index.html")).unwrap();
    assert!(html.contains("id=\"profiles\"") && html.contains("cube 75.0 %"));
    // The page escapes `/` in attributes as `&#x2f;` (a browser reads it back as `/`).
    let unescaped = html.replace("&#x2f;", "/");
    let row_link = format!("<a class=\"profile\" href=\"{dir}/pmu/pmu.csv\"");
    assert!(
        unescaped.contains(&row_link),
        "the HTML results row does not link the pmu profile: {}",
        (unescaped.lines())
            .find(|l| l.contains("class=\"profile\""))
            .unwrap_or("no profile link at all")
    );
    assert!(html.contains("idle 55.6 % (10.0 µs)"));
}

#[test]
fn dry_run_lists_the_profiled_runs_and_their_planned_skips() {
    require("perf", "scripts/install-perf.sh");
    let tmp = util::tempdir();
    let path = tmp.path().join("prof.toml");
    let text = plan(
        r#""host""#,
        r#""ring", "mesh""#,
        "[profile]\nkinds = [\"cpu\"]\nruns = 2\n",
    );
    std::fs::write(&path, text).unwrap();
    let plan_path = path.to_str().unwrap();
    // The plan's [profile]: two cases × 2 cpu profiles each.
    let o = util::run_in(tmp.path(), &["dry-run", plan_path]);
    assert_eq!(o.status.code(), Some(0), "{}", util::stderr(&o));
    let out = util::stdout(&o);
    assert!(
        out.contains(
            "profiled runs: up to 4 more (cpu × 2 per (case, stack) whose timed run passes)"
        ),
        "{out}"
    );
    // --profile replaces the kinds: swimlane is a planned skip on host, with its reason.
    let o = util::run_in(
        tmp.path(),
        &["dry-run", plan_path, "--profile", "counters,swimlane"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", util::stderr(&o));
    let out = util::stdout(&o);
    assert!(
        out.contains("profiled runs: up to 4 more (counters, swimlane × 2"),
        "{out}"
    );
    assert!(
        out.contains(
            "profile skipped host swimlane: this stack does not say how to switch `swimlane` on"
        ) && out.contains("(4 profiled runs)"),
        "{out}"
    );
    let o = util::run_in(
        tmp.path(),
        &[
            "dry-run",
            plan_path,
            "--profile",
            "counters,swimlane",
            "--format",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", util::stderr(&o));
    let rows: Value = serde_json::from_str(&util::stdout(&o)).unwrap();
    let profiles = rows[0]["profiles"].as_array().unwrap();
    assert_eq!(profiles.len(), 2, "{profiles:?}");
    assert_eq!(profiles[0]["kind"], "counters");
    assert_eq!(profiles[0]["runs"], 2);
    assert!(profiles[0].get("skip").is_none(), "{profiles:?}");
    assert_eq!(profiles[1]["kind"], "swimlane");
    assert!(profiles[1]["skip"]
        .as_str()
        .unwrap()
        .contains("cpu, counters"));
    // Without [profile] the listing says nothing of profiles.
    let bare = tmp.path().join("bare.toml");
    std::fs::write(&bare, plan(r#""host""#, r#""ring""#, "")).unwrap();
    let o = util::run_in(
        tmp.path(),
        &["dry-run", bare.to_str().unwrap(), "--format", "json"],
    );
    assert!(!util::stdout(&o).contains("profiles"));
}
