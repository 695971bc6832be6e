//! What really ran (issue 46): a stack's `ran` pattern records the algorithm a run's output
//! names, and a run whose pin was not honoured is failed with what ran, never compared.

use serde_json::Value;

use crate::util;

/// A decoy: host's benchmark behind a shell that takes the variant as `ALGO` and always says it
/// ran mesh — asked ring, it "runs" mesh.
const PLAN: &str = r#"
[campaign]
name = "decoy"
[case]
platform = "host"
p = 2
count = 64
variant = "*"
[axes]
stacks = ["decoy"]
[rounds]
warmup = 0
timed = 2
[run]
repeats = 1
[devices]
kind = "cpu"
ids = "0-1"
[stacks.decoy]
command = ["sh", "-c", "echo \"decoy: ALGO=$ALGO, algo=mesh\" >&2; exec \"$0\" bench allreduce --case-file \"$1\"", "{{ campaign_exe }}", "{{ case_file }}"]
parser = "native"
resource = "cpu"
variants = ["mesh", "ring"]
env = { ALGO = "{{ variant }}" }
ran = { pattern = 'algo=(?P<algo>\w+)', expect = "{{ variant }}" }
"#;

#[test]
fn a_decoy_that_runs_another_algorithm_than_its_pin_is_flagged() {
    let tmp = util::tempdir();
    let plan = tmp.path().join("decoy.toml");
    std::fs::write(&plan, PLAN).unwrap();
    let o = util::run_in(tmp.path(), &["validate", plan.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", util::stderr(&o));
    let o = util::run_in(tmp.path(), &["run", plan.to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "a failed run: {}",
        util::stderr(&o)
    );
    let run = std::fs::read_dir(tmp.path().join("results/campaigns/decoy"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("results.json")).unwrap()).unwrap();
    let row = |variant: &str| -> Value {
        (results["runs"].as_array().unwrap().iter())
            .find(|r| r["variant"] == variant)
            .unwrap_or_else(|| panic!("no {variant} run: {results}"))
            .clone()
    };
    let mesh = row("mesh");
    assert_eq!(mesh["status"], "pass", "{mesh}");
    assert_eq!(mesh["algo_ran"], "mesh", "{mesh}");
    assert_eq!(mesh["algo_pinned"], "mesh", "{mesh}");
    let ring = row("ring");
    assert_eq!(ring["status"], "fail", "{ring}");
    assert_eq!(ring["algo_ran"], "mesh", "{ring}");
    assert_eq!(ring["algo_pinned"], "ring", "{ring}");
    assert_eq!(ring["reason"], "pin not honoured: asked ring, ran mesh");
    assert!(
        ring["execute_s_median"].is_null(),
        "never in a statistic: {ring}"
    );
    // The bundle's manifest keeps what ran; the report lists the run under Failures.
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(
            run.join(ring["artifact_bundle"].as_str().unwrap())
                .join("manifest.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["ran"]["algo"], "mesh", "{manifest}");
    let summary = std::fs::read_to_string(run.join("reports/summary.md")).unwrap();
    assert!(
        summary.contains("pin not honoured: asked ring, ran mesh"),
        "{summary}"
    );
    // results.csv has the columns too.
    let csv = std::fs::read_to_string(run.join("results.csv")).unwrap();
    let header = csv.lines().next().unwrap();
    assert!(
        header.contains(",algo_ran,proto,channels,algo_pinned"),
        "{header}"
    );
}

#[test]
fn a_ran_pattern_without_an_algo_group_is_refused_at_its_line() {
    let tmp = util::tempdir();
    let plan = tmp.path().join("decoy.toml");
    std::fs::write(&plan, PLAN.replace("algo=(?P<algo>\\w+)", "algo=(\\w+)")).unwrap();
    let o = util::run_in(tmp.path(), &["validate", plan.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", util::stderr(&o));
    assert!(
        util::stderr(&o).contains("ran.pattern")
            && util::stderr(&o).contains("no group named `algo`"),
        "{}",
        util::stderr(&o)
    );
}
