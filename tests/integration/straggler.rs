//! Straggler attribution end to end (issue 48, items 1, 2 and 4): two shell stacks report
//! per-rank times in which rank 1 — on device 1 — is always 20 % late; the report and
//! results.json name device 1, late under both stacks: the hardware.

use serde_json::Value;

use crate::honest::{json, run_plan_with};
use crate::util;

/// A stack printing `timed` rounds whose rank 1 is `late` × rank 0's time, with ±1 % noise.
fn stack(late: &str, base: &str) -> String {
    format!(
        r#"resource = "none"
command = ["sh", "-c", '''
awk -v w="$CAMPAIGN_WARMUP" -v t="$CAMPAIGN_TIMED" 'BEGIN {{
  srand(); b = {base}
  for (i = 0; i < w; i++) printf "CAMPAIGN_SAMPLE {{\"phase\":\"warmup\",\"execute_s\":%.6f}}\n", b;
  for (i = 0; i < t; i++) {{
    r0 = b * (1 + 0.02 * (rand() - 0.5)); r1 = b * {late} * (1 + 0.02 * (rand() - 0.5));
    printf "CAMPAIGN_SAMPLE {{\"phase\":\"timed\",\"execute_s\":%.6f,\"per_rank_execute_s\":[%.6f,%.6f]}}\n", (r0 > r1 ? r0 : r1), r0, r1
  }}
  print "CAMPAIGN_DONE {{\"correctness\":\"pass\"}}" }}'
''']"#
    )
}

fn plan() -> String {
    format!(
        r#"[campaign]
name = "late"

[axes]
p = [2]
count = [1024, 4096]
stacks = ["a", "b", "plain"]

[rounds]
warmup = 1
timed = 20

[run]
repeats = 3

[report]
baseline = "a"

[stacks.a]
{a}

[stacks.b]
{b}

[stacks.plain]
resource = "none"
command = ["sh", "-c", '''
for i in $(seq 1 "$CAMPAIGN_WARMUP"); do echo 'CAMPAIGN_SAMPLE {{"phase":"warmup","execute_s":0.001}}'; done
for i in $(seq 1 "$CAMPAIGN_TIMED"); do echo 'CAMPAIGN_SAMPLE {{"phase":"timed","execute_s":0.001}}'; done
echo 'CAMPAIGN_DONE {{"correctness":"pass"}}'
''']
"#,
        a = stack("1.2", "0.001"),
        b = stack("1.2", "0.002"),
    )
}

#[test]
fn a_rank_late_under_both_stacks_names_its_device_as_hardware() {
    let tmp = util::tempdir();
    let env = [("CAMPAIGN_CONTAINMENT", "cookie")];
    let (out, dir) = run_plan_with(tmp.path(), "late", &plan(), &[], &env);
    let results = std::fs::read_to_string(dir.join("results.csv")).unwrap_or_default();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{results}",
        util::stderr(&out)
    );

    let s: Value = json(&dir.join("results.json"))["stragglers"].clone();
    let findings = s["findings"].as_array().expect("stragglers.findings");
    assert_eq!(findings.len(), 1, "{s:#}");
    assert_eq!(findings[0]["unit"], "device 1");
    assert_eq!(findings[0]["attribution"], "hardware");
    assert_eq!(findings[0]["stacks"], serde_json::json!(["a", "b"]));
    assert_eq!(s["stacks"], serde_json::json!(["a", "b"]));
    assert_eq!(s["left_out"][0]["stack"], "plain");
    assert_eq!(s["left_out"][0]["why"], "no per-rank times");
    let evidence = &findings[0]["evidence"];
    assert_eq!(evidence["rounds"], 240, "{evidence:#}");
    assert_eq!(evidence["last"], 240.0);
    assert!(
        evidence["ci_lo_pct"].as_f64().unwrap() > 5.0,
        "{evidence:#}"
    );

    let md = std::fs::read_to_string(dir.join("reports/summary.md")).unwrap();
    assert!(md.contains("## Stragglers"), "{md}");
    assert!(
        md.contains("**device 1: hardware.** device 1 is late under every stack (a, b): hardware"),
        "{md}"
    );
    assert!(
        md.contains("Left out for lack of per-rank times: plain (no per-rank times)."),
        "{md}"
    );
    let html = std::fs::read_to_string(dir.join("reports/index.html")).unwrap();
    assert!(html.contains(r#"<section id="stragglers">"#));
    assert!(
        html.contains("<strong>device 1: hardware.</strong>"),
        "stragglers section"
    );

    let status = util::campaign()
        .args(["status", &dir.display().to_string()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(text.contains("stragglers: see "), "{text}");
}

/// The same campaign run twice on this machine into one results dir: the second report pools
/// the first's straggler cells from the history store — twice the rounds behind the finding,
/// and the report says how many campaigns it pooled; results.json's `stragglers` stays this
/// campaign's own.
#[test]
fn a_second_campaign_on_the_machine_pools_the_first_ones_rounds() {
    let tmp = util::tempdir();
    let env = [("CAMPAIGN_CONTAINMENT", "cookie")];
    let (first, _) = run_plan_with(tmp.path(), "late", &plan(), &[], &env);
    assert_eq!(first.status.code(), Some(0), "{}", util::stderr(&first));
    let (second, dir) = run_plan_with(tmp.path(), "late", &plan(), &[], &env);
    assert_eq!(second.status.code(), Some(0), "{}", util::stderr(&second));

    let ctx = json(&dir.join("reports/context.json"))["stragglers"].clone();
    assert_eq!(ctx["pooled_campaigns"], 1, "{ctx:#}");
    assert_eq!(ctx["findings"][0]["unit"], "device 1");
    assert_eq!(ctx["findings"][0]["rounds"], 480, "{ctx:#}");
    let md = std::fs::read_to_string(dir.join("reports/summary.md")).unwrap();
    assert!(
        md.contains(
            "Pooled with the rounds of 1 earlier campaign recorded on this machine (the history \
             store, same host fingerprint)."
        ),
        "{md}"
    );
    let own = json(&dir.join("results.json"))["stragglers"].clone();
    assert_eq!(own["findings"][0]["evidence"]["rounds"], 240, "{own:#}");
    assert_eq!(own["pooled_campaigns"], 0);
}
