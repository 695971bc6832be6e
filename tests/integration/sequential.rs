//! Sequential repeats and the budget (issue 47, items 1, 2 and 4), end to end with real
//! processes: a point whose rows are decided after the first look spares its other repeats, a
//! point still undecided goes on to the most; every decision is a journal line; a budget ends
//! the campaign cleanly; a campaign SIGKILLed at random moments and resumed ends with the same
//! runs as one never killed, each run and each decision once.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use rand::{Rng, SeedableRng};
use serde_json::Value;

use crate::honest::{json, run_plan_with};
use crate::util;

/// Two stacks reporting fixed times (contention cannot touch them): `fast` 1 ms; `slow` 2 ms at
/// count 1024 (decided "slower" after 3 repeats), and at 4096 around 1 ms with a wander from
/// repeat to repeat wide enough that no look decides it. Each run first sleeps `sleep` seconds.
fn plan(name: &str, sleep: &str, run: &str) -> String {
    let round = |level: &str| {
        format!(
            r#"sleep {sleep}
awk -v w="$CAMPAIGN_WARMUP" -v t="$CAMPAIGN_TIMED" -v l="{level}" 'BEGIN {{
  for (i = 0; i < w; i++) printf "CAMPAIGN_SAMPLE {{\"phase\":\"warmup\",\"execute_s\":0.001}}\n";
  for (i = 0; i < t; i++) printf "CAMPAIGN_SAMPLE {{\"phase\":\"timed\",\"execute_s\":%.6f}}\n", 0.001 * l * (1 + 0.01 * (i * 7 % 5 - 2));
  print "CAMPAIGN_DONE {{\"correctness\":\"pass\"}}" }}'"#
        )
    };
    format!(
        r#"[campaign]
name = "{name}"

[axes]
p = [2]
count = [1024, 4096]
stacks = ["fast", "slow"]

[rounds]
warmup = 2
timed = 20

[run]
repeats = {{ min = 3, max = 6 }}
{run}

[report]
baseline = "fast"

[stacks.fast]
resource = "none"
command = ["sh", "-c", '''
{fast}
''']

[stacks.slow]
resource = "none"
command = ["sh", "-c", '''
case "$CAMPAIGN_BUNDLE_DIR" in
  *count4096*~r2/*) l=0.75 ;; *count4096*~r3/*) l=1.1 ;; *count4096*~r4/*) l=0.8 ;;
  *count4096*~r5/*) l=1.25 ;; *count4096*~r6/*) l=0.9 ;; *count4096*) l=1.3 ;;
  *) l=2.0 ;;
esac
{slow}
''']
"#,
        fast = round("1"),
        slow = round("$l"),
    )
}

const UNMEASURED: &[(&str, &str)] = &[("CAMPAIGN_CONTAINMENT", "cookie")];

fn journal(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("journal.jsonl"))
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn decisions(lines: &[Value]) -> Vec<(String, u64, String)> {
    lines
        .iter()
        .filter(|l| l["event"] == "decision")
        .map(|l| {
            (
                l["point"].as_str().unwrap().to_string(),
                l["look"].as_u64().unwrap(),
                l["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// (run id, stack) → status of every results row.
fn statuses(dir: &Path) -> BTreeMap<(String, String), String> {
    json(&dir.join("results.json"))["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let repeat = r["repeat"].as_u64().unwrap_or(1);
            (
                (
                    format!("{}~r{repeat}", r["case_id"].as_str().unwrap()),
                    r["stack"].as_str().unwrap().to_string(),
                ),
                r["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_decided_point_spares_its_repeats_and_an_undecided_one_goes_on() {
    let tmp = util::tempdir();
    let (out, dir) = run_plan_with(tmp.path(), "seq", &plan("seq", "0", ""), &[], UNMEASURED);
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    let st = statuses(&dir);
    assert_eq!(st.len(), 24, "{st:?}");
    let spared: BTreeSet<&(String, String)> = (st.iter())
        .filter(|(_, s)| *s == "spared")
        .map(|(k, _)| k)
        .collect();
    // count 1024: decided (2× slower) after 3 repeats, repeats 4–6 of both stacks spared.
    assert_eq!(spared.len(), 6, "{st:?}");
    for (id, _) in &spared {
        assert!(id.contains("count1024"), "{id}");
        assert!(
            ["~r4", "~r5", "~r6"].iter().any(|r| id.ends_with(r)),
            "{id}"
        );
    }
    // count 4096: undecided at 3 and 5, all 6 repeats of both stacks ran.
    let ran_4096 = (st.iter())
        .filter(|((id, _), s)| id.contains("count4096") && *s == "pass")
        .count();
    assert_eq!(ran_4096, 12, "{st:?}");
    let d = decisions(&journal(&dir));
    let expect = vec![
        (
            "*_p2_count1024_fp32_a2a3_d0-1".to_string(),
            3,
            "stop".to_string(),
        ),
        (
            "*_p2_count4096_fp32_a2a3_d0-1".to_string(),
            3,
            "go".to_string(),
        ),
        (
            "*_p2_count4096_fp32_a2a3_d0-1".to_string(),
            5,
            "go".to_string(),
        ),
    ];
    let mut sorted = d.clone();
    sorted.sort();
    assert_eq!(sorted, expect, "{d:?}");
    let summary = std::fs::read_to_string(dir.join("reports/summary.md")).unwrap();
    assert!(summary.contains("## Decided while running"), "{summary}");
    assert!(
        summary.contains("judged after 3, 5, 6 repeats"),
        "{summary}"
    );
    assert!(
        summary.contains("1 of 2 points stopped early; 6 run(s) were spared"),
        "{summary}"
    );
    assert!(
        summary.contains("Every run that ran passed; 6 were spared"),
        "{summary}"
    );
    assert!(summary.contains("2.00× slower than fast"), "{summary}");
    assert!(
        summary.contains("each pair counted at its 3 looks"),
        "{summary}"
    );
    let status = util::run(&["status", dir.to_str().unwrap()]);
    let text = util::stdout(&status);
    assert!(text.contains("24 (18 pass, 6 spared)"), "{text}");
    assert!(
        text.contains("decisions: 1 point(s) stopped their repeats (every row decided), 2 went on"),
        "{text}"
    );
    assert!(!text.contains("not passed"), "{text}");
    // dry-run says what the policy may add.
    let file = tmp.path().join("seq.toml");
    let dry = util::run(&["dry-run", file.to_str().unwrap()]);
    assert!(
        util::stdout(&dry).contains(
            "sequential repeats: 3 to 6 per (case, stack), each point judged after 3, 5, 6 repeats: 12 runs at first, at most 12 more"
        ),
        "{}",
        util::stdout(&dry)
    );
}

#[test]
fn a_spent_budget_ends_the_campaign_cleanly_with_what_it_has() {
    let tmp = util::tempdir();
    let (out, dir) = run_plan_with(
        tmp.path(),
        "budget",
        &plan("budget", "0.2", "jobs = 1\nbudget = \"1s\""),
        &[],
        UNMEASURED,
    );
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    let st = statuses(&dir);
    let passed = st.values().filter(|s| *s == "pass").count();
    let spared = st.values().filter(|s| *s == "spared").count();
    // Each run sleeps 0.2 s: the budget of 1 s is spent after 5 runs (a sixth may be in flight).
    assert!((5..=7).contains(&passed), "{st:?}");
    assert_eq!(passed + spared, 24, "{st:?}");
    let results = json(&dir.join("results.json"));
    let reason = (results["runs"].as_array().unwrap().iter())
        .find(|r| r["status"] == "spared")
        .and_then(|r| r["reason"].as_str().or(r["error"].as_str()))
        .map(str::to_string)
        .unwrap_or_default();
    assert!(reason.starts_with("the budget of 1s was spent"), "{reason}");
    let summary = std::fs::read_to_string(dir.join("reports/summary.md")).unwrap();
    assert!(
        summary.contains(&format!(
            "{spared} run(s) were not started: the budget of 1s was spent"
        )),
        "{summary}"
    );
    let status = util::stdout(&util::run(&["status", dir.to_str().unwrap()]));
    assert!(
        status.contains("budget: ") && status.contains("of 1.0s run time used"),
        "{status}"
    );
}

fn campaign(tmp: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(util::exe());
    c.current_dir(tmp)
        .args(args)
        .args(["--results-dir", tmp.join("results").to_str().unwrap(), "-q"])
        .envs(UNMEASURED.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

fn run_dir(tmp: &Path, name: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(tmp.join("results").join(name))
        .ok()?
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("journal.jsonl").is_file())
        .collect();
    dirs.sort();
    dirs.pop()
}

/// Lines of the journal (in `tmp`'s run dir of `name`) with `event` on a run step or a
/// decision.
fn count_events(tmp: &Path, name: &str, event: &str) -> usize {
    run_dir(tmp, name).map_or(0, |d| {
        journal(&d).iter().filter(|l| l["event"] == event).count()
    })
}

#[test]
fn sigkill_at_random_moments_then_resume_ends_with_the_runs_of_an_unbroken_campaign() {
    // The campaign never killed.
    let reference = util::tempdir();
    let (out, whole) = run_plan_with(
        reference.path(),
        "unbroken",
        &plan("unbroken", "0.03", "jobs = 1"),
        &[],
        UNMEASURED,
    );
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    let expected = statuses(&whole);
    let seed: u64 = std::env::var("CAMPAIGN_KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    println!("kill seed: {seed} (CAMPAIGN_KILL_SEED={seed} repeats it)");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let tmp = util::tempdir();
    let file = tmp.path().join("killed.toml");
    std::fs::write(&file, plan("killed", "0.03", "jobs = 1")).unwrap();
    for kill in 0..12 {
        let mut child = match run_dir(tmp.path(), "killed") {
            None => campaign(tmp.path(), &["run", file.to_str().unwrap()]),
            Some(d) => campaign(tmp.path(), &["resume", d.to_str().unwrap()]),
        }
        .spawn()
        .unwrap();
        // Kill at an event of this session (a decision, a run's start or end), never after a
        // guessed delay; then after a jitter shorter than a run.
        let event = ["decision", "started", "finished"][kill % 3];
        let before = count_events(tmp.path(), "killed", event);
        let cap = std::time::Instant::now() + Duration::from_secs(120);
        while count_events(tmp.path(), "killed", event) <= before {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            assert!(
                std::time::Instant::now() < cap,
                "no `{event}` line in 120 s"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(rng.random_range(0..20)));
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
        child.wait().unwrap();
    }
    let dir = run_dir(tmp.path(), "killed").expect("a run dir");
    let out = campaign(tmp.path(), &["resume", dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "seed {seed}: {}",
        util::stderr(&out)
    );
    assert_eq!(statuses(&dir), expected, "seed {seed}");
    let lines = journal(&dir);
    // Each decision once, as the unbroken campaign took them.
    let mut taken = decisions(&lines);
    let before = taken.len();
    taken.sort();
    taken.dedup();
    assert_eq!(taken.len(), before, "seed {seed}: a decision taken twice");
    let mut unbroken = decisions(&journal(&whole));
    unbroken.sort();
    assert_eq!(taken, unbroken, "seed {seed}");
    // Each run ended once: one `finished` line per run step.
    let mut ends: BTreeMap<&str, usize> = BTreeMap::new();
    for l in &lines {
        if l["event"] == "finished" {
            if let Some(s) = l["step"].as_str().filter(|s| s.starts_with("run:")) {
                *ends.entry(s).or_default() += 1;
            }
        }
    }
    assert_eq!(ends.len(), 24, "seed {seed}");
    assert!(ends.values().all(|n| *n == 1), "seed {seed}: {ends:?}");
}
