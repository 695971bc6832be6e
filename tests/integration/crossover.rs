//! The crossover map (issue 47, item 5), end to end: two synthetic stacks following α + n/β
//! laws whose winner changes at 8,000 bytes (alpha: 10 µs + n / 1 GB/s; beta: 2 µs + n / 0.5
//! GB/s): the report's map says beta below, alpha above, and the crossover's bracket holds the
//! true size.

use serde_json::Value;

use crate::honest::{json, run_plan_with};
use crate::util;

const PLAN: &str = r#"[campaign]
name = "syn"

[axes]
p = [2]
count = [256, 1024, 4096, 16384]
stacks = ["alpha", "beta"]

[rounds]
warmup = 2
timed = 20

[run]
repeats = 3

[report]
baseline = "alpha"

[stacks.alpha]
resource = "none"
command = ["sh", "-c", '''
n=$(echo "$CAMPAIGN_BUNDLE_DIR" | sed 's/.*count\([0-9]*\).*/\1/')
awk -v w="$CAMPAIGN_WARMUP" -v t="$CAMPAIGN_TIMED" -v n="$n" 'BEGIN {
  s = 10e-6 + 4 * n / 1e9;
  for (i = 0; i < w; i++) printf "CAMPAIGN_SAMPLE {\"phase\":\"warmup\",\"execute_s\":%.9f}\n", s;
  for (i = 0; i < t; i++) printf "CAMPAIGN_SAMPLE {\"phase\":\"timed\",\"execute_s\":%.9f}\n", s * (1 + 0.01 * (i * 7 % 5 - 2));
  print "CAMPAIGN_DONE {\"correctness\":\"pass\"}" }'
''']

[stacks.beta]
resource = "none"
command = ["sh", "-c", '''
n=$(echo "$CAMPAIGN_BUNDLE_DIR" | sed 's/.*count\([0-9]*\).*/\1/')
awk -v w="$CAMPAIGN_WARMUP" -v t="$CAMPAIGN_TIMED" -v n="$n" 'BEGIN {
  s = 2e-6 + 4 * n / 5e8;
  for (i = 0; i < w; i++) printf "CAMPAIGN_SAMPLE {\"phase\":\"warmup\",\"execute_s\":%.9f}\n", s;
  for (i = 0; i < t; i++) printf "CAMPAIGN_SAMPLE {\"phase\":\"timed\",\"execute_s\":%.9f}\n", s * (1 + 0.01 * (i * 3 % 5 - 2));
  print "CAMPAIGN_DONE {\"correctness\":\"pass\"}" }'
''']
"#;

#[test]
fn the_map_brackets_the_size_where_the_winner_changes() {
    let tmp = util::tempdir();
    let (out, dir) = run_plan_with(
        tmp.path(),
        "syn",
        PLAN,
        &[],
        &[("CAMPAIGN_CONTAINMENT", "cookie")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    let summary = std::fs::read_to_string(dir.join("reports/summary.md")).unwrap();
    assert!(summary.contains("## Where the winner changes"), "{summary}");
    assert!(
        summary.contains("| alpha default | beta default | **B** | **B** | **A** | **A** |"),
        "{summary}"
    );
    assert!(
        summary
            .contains("beta default faster below, alpha default above — between 4 KiB and 16 KiB"),
        "{summary}"
    );
    let ctx = json(&dir.join("reports/context.json"));
    let c = &ctx["crossovers"][0];
    let (lo, hi, est) = (
        c["lo_bytes"].as_u64().unwrap(),
        c["hi_bytes"].as_u64().unwrap(),
        c["estimate_bytes"].as_u64().unwrap(),
    );
    assert_eq!((lo, hi), (4096, 16384), "{c}");
    // The true crossover (8,000 bytes) lies in the bracket, and the estimate near it.
    assert!(lo <= 8000 && 8000 <= hi);
    assert!((7000..=10000).contains(&est), "{est}");
    let html = std::fs::read_to_string(dir.join("reports/index.html")).unwrap();
    assert!(
        html.contains(r#"class="xo x-a_faster""#),
        "the map is in the page"
    );
    assert!(html.contains(r#"class="xo x-b_faster""#));
}

/// `[adapt] crossover = true`: sizes are added between 4 and 16 KiB, where the winner changes,
/// and nowhere else; the bracket narrows from ×4 and still holds the true crossover; every
/// added or refused size is a decision line of the journal.
#[test]
fn adaptive_sizes_narrow_the_bracket_where_the_winner_changes() {
    let tmp = util::tempdir();
    let plan = PLAN.replace("[report]", "[adapt]\ncrossover = true\n\n[report]");
    let (out, dir) = run_plan_with(
        tmp.path(),
        "syn",
        &plan,
        &[],
        &[("CAMPAIGN_CONTAINMENT", "cookie")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    let ctx = json(&dir.join("reports/context.json"));
    let c = &ctx["crossovers"][0];
    let (lo, hi) = (
        c["lo_bytes"].as_u64().unwrap(),
        c["hi_bytes"].as_u64().unwrap(),
    );
    assert!(lo <= 8000 && 8000 <= hi, "{c}");
    assert!(
        hi as f64 / lo as f64 <= 1.5,
        "the bracket narrowed from ×4: {c}"
    );
    let journal = std::fs::read_to_string(dir.join("journal.jsonl")).unwrap();
    let sizes: Vec<Value> = journal
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["event"] == "decision" && l["look"] == 0)
        .collect();
    // 21 sizes planned between the 4 given; every one decided once, before it ran.
    assert_eq!(sizes.len(), 21, "{sizes:?}");
    let added: Vec<&Value> = sizes.iter().filter(|l| l["status"] == "go").collect();
    assert!((2..=6).contains(&added.len()), "{added:?}");
    for l in &added {
        // Only between 4 KiB and 16 KiB (counts 1024 and 4096).
        let point = l["point"].as_str().unwrap();
        let count: u64 = point
            .split("count")
            .nth(1)
            .and_then(|s| s.split('_').next())
            .and_then(|s| s.parse().ok())
            .unwrap();
        assert!(1024 < count && count < 4096, "{point}");
    }
    let results = json(&dir.join("results.json"));
    // results.json carries the report's answers, exactly as the report judged them.
    assert_eq!(results["crossovers"], ctx["crossovers"]);
    assert_eq!(results["crossover_map"], ctx["crossover_lines"]);
    assert_eq!(results["regret"], ctx["regret"]);
    let ran = (results["runs"].as_array().unwrap().iter())
        .filter(|r| r["status"] == "pass")
        .count();
    // The dense grid at the same resolution: 25 sizes × 2 stacks × 3 repeats.
    assert!(ran < 150, "{ran} runs");
    let summary = std::fs::read_to_string(dir.join("reports/summary.md")).unwrap();
    assert!(
        summary.contains(&format!("{} size(s) were added", added.len())),
        "{summary}"
    );
}
