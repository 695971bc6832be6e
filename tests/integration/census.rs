//! The link census end to end (issue 48, items 3 and 4): a shell stack over 8 fake devices
//! whose time depends on the pair it is given (`CAMPAIGN_DEVICES`) — one slow link names exactly
//! that pair, one slow device names the device and, with `quarantine`, journals it; the pairs of
//! a round run together and each round after the one before; a census ahead of a sweep keeps
//! the device it quarantines out of every sweep run, across a kill and a resume; `campaign
//! census` on the built-in `host` stack writes the same run dir, which `campaign report`
//! renders again; bad flags exit 2.

use std::path::Path;

use serde_json::Value;

use crate::honest::{json, run_plan_with};
use crate::util;

/// A census plan of 8 fake devices whose pair takes 1 ms (±1 %) a round, × `slow` when the
/// shell test `when` holds for `$CAMPAIGN_DEVICES` (e.g. `[ "$CAMPAIGN_DEVICES" = 2,5 ]`).
fn plan(name: &str, when: &str, quarantine: bool) -> String {
    format!(
        r#"[campaign]
name = "{name}"

[census]
devices = "0-7"
stack = "fake"
count = 1024
quarantine = {quarantine}

[devices]
kind = "npu"

[rounds]
warmup = 1
timed = 10

[run]
repeats = 1

[stacks.fake]
resource = "npu"
command = ["sh", "-c", '''
f=1; if {when}; then f=1.5; fi
awk -v w="$CAMPAIGN_WARMUP" -v t="$CAMPAIGN_TIMED" -v f="$f" 'BEGIN {{
  srand(); b = 0.001 * f
  for (i = 0; i < w; i++) printf "CAMPAIGN_SAMPLE {{\"phase\":\"warmup\",\"execute_s\":%.6f}}\n", b;
  for (i = 0; i < t; i++) printf "CAMPAIGN_SAMPLE {{\"phase\":\"timed\",\"execute_s\":%.6f}}\n", b * (1 + 0.02 * (rand() - 0.5));
  print "CAMPAIGN_DONE {{\"correctness\":\"pass\"}}" }}'
''']
"#
    )
}

const ENV: [(&str, &str); 1] = [("CAMPAIGN_CONTAINMENT", "cookie")];

fn census_of(dir: &Path) -> Value {
    json(&dir.join("reports/context.json"))["census"].clone()
}

#[test]
fn one_slow_link_of_eight_fake_devices_is_named_and_rounds_follow_each_other() {
    let tmp = util::tempdir();
    let slow_link = r#"[ "$CAMPAIGN_DEVICES" = 2,5 ]"#;
    let (out, dir) = run_plan_with(
        tmp.path(),
        "link",
        &plan("link", slow_link, false),
        &[],
        &ENV,
    );
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));

    let c = census_of(&dir);
    assert_eq!(c["planned_pairs"], 28, "{c:#}");
    assert_eq!(c["rounds"], 7);
    assert_eq!(c["pairs"].as_array().unwrap().len(), 28);
    let findings = c["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{c:#}");
    assert_eq!(findings[0]["kind"], "link");
    assert_eq!(findings[0]["devices"], serde_json::json!([2, 5]));
    assert_eq!(c["classes"][0]["class"], "same node");

    // results.json carries the census in numbers: every pair, the class, the link named.
    let r = json(&dir.join("results.json"))["census"].clone();
    assert_eq!(
        (r["planned_pairs"].as_u64(), r["measured"].as_u64()),
        (Some(28), Some(28)),
        "{r:#}"
    );
    assert_eq!(r["pairs"].as_array().unwrap().len(), 28);
    assert_eq!(
        r["findings"][0]["devices"],
        serde_json::json!([2, 5]),
        "{r:#}"
    );
    assert_eq!(r["findings"].as_array().unwrap().len(), 1);
    assert_eq!(r["classes"][0]["class"], "same_node");
    let slow = (r["pairs"].as_array().unwrap().iter())
        .find(|p| p["a"] == 2 && p["b"] == 5)
        .unwrap();
    assert_eq!(slow["outlier"], true);
    let ratio = slow["ratio"].as_f64().unwrap();
    assert!((0.6..0.72).contains(&ratio), "{slow}");
    assert!(r["quarantined"].as_array().unwrap().is_empty());
    let status = util::stdout(&util::run(&["status", &dir.display().to_string()]));
    assert!(
        status.contains("census: 28 of 28 pairs measured on fake, 28 scored (same node: 28 pairs")
            && status.contains("  slow link 2–5: same node: busbw 6"),
        "{status}"
    );

    let md = std::fs::read_to_string(dir.join("reports/summary.md")).unwrap();
    assert!(md.contains("## Link census"), "{md}");
    // 1 / 1.5 of its class's median, give or take the fake stack's ±1 % jitter (awk's srand
    // seeds from the clock): 66 or 67 %.
    assert!(
        md.contains("- **link 2–5.** same node: busbw 66 %")
            || md.contains("- **link 2–5.** same node: busbw 67 %"),
        "{md}"
    );
    let html = std::fs::read_to_string(dir.join("reports/index.html")).unwrap();
    assert!(html.contains(r#"<section id="census">"#));
    assert!(
        html.contains(r#"id="figure-census_busbw""#)
            && html.contains(r#"id="figure-census_latency""#)
    );
    for f in ["census_busbw", "census_latency"] {
        for ext in ["png", "svg", "hover.json"] {
            assert!(
                dir.join(format!("figures/{f}.{ext}")).is_file(),
                "{f}.{ext}"
            );
        }
    }

    // The planned order is the rounds' (4 pairs each): every run of a round starts after every
    // run of the round before has ended, and no two runs at once share a device.
    let rows = json(&dir.join("results.json"))["runs"]
        .as_array()
        .unwrap()
        .clone();
    let spans: Vec<(String, String, Vec<u64>)> = (rows.iter())
        .map(|r| {
            let bundle = dir.join(r["artifact_bundle"].as_str().unwrap_or_default());
            let m = json(&bundle.join("manifest.json"));
            let ids = (r["devices"].as_array().unwrap().iter())
                .map(|d| d.as_u64().unwrap())
                .collect();
            (
                m["started"].as_str().unwrap().to_string(),
                m["ended"].as_str().unwrap().to_string(),
                ids,
            )
        })
        .collect();
    assert_eq!(spans.len(), 28);
    for (i, (started, _, ids)) in spans.iter().enumerate().skip(4) {
        let round = i / 4;
        for (_, ended, _) in &spans[4 * (round - 1)..4 * round] {
            assert!(
                started >= ended,
                "run {i} ({ids:?}) started {started} before {ended}"
            );
        }
        let mut busy: Vec<u64> = spans[4 * round..4 * round + 4]
            .iter()
            .flat_map(|s| s.2.clone())
            .collect();
        busy.sort_unstable();
        assert_eq!(busy, (0..8).collect::<Vec<u64>>(), "round {round}");
    }
}

#[test]
fn a_slow_device_is_named_and_quarantined_in_the_journal() {
    let tmp = util::tempdir();
    let slow_device = r#"echo ",$CAMPAIGN_DEVICES," | grep -q ',6,'"#;
    let (out, dir) = run_plan_with(
        tmp.path(),
        "dev",
        &plan("dev", slow_device, true),
        &[],
        &ENV,
    );
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));

    let c = census_of(&dir);
    let findings = c["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{c:#}");
    assert_eq!(
        (findings[0]["kind"].as_str(), &findings[0]["devices"]),
        (Some("device"), &serde_json::json!([6]))
    );

    let journal = std::fs::read_to_string(dir.join("journal.jsonl")).unwrap();
    let lines: Vec<Value> = journal
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let q: Vec<&Value> = lines
        .iter()
        .filter(|l| l["event"] == "quarantined")
        .collect();
    assert_eq!(q.len(), 1, "{journal}");
    assert_eq!(q[0]["device"], 6);
    assert!(json(&dir.join("results.json"))["quarantined"]["6"]
        .as_str()
        .unwrap()
        .starts_with("link census"));
    let md = std::fs::read_to_string(dir.join("reports/summary.md")).unwrap();
    assert!(
        md.contains("- **device 6.** 7 of its 7 links are slow Quarantined (journaled)."),
        "{md}"
    );

    let status = util::run(&["status", &dir.display().to_string()]);
    let text = util::stdout(&status);
    assert!(
        text.contains("quarantined devices:") && text.contains("6"),
        "{text}"
    );
    assert!(
        text.contains("  slow device 6: 7 of its 7 links are slow — quarantined"),
        "{text}"
    );
    let r = json(&dir.join("results.json"))["census"].clone();
    assert_eq!(r["quarantined"], serde_json::json!([6]), "{r:#}");
    assert_eq!(r["findings"][0]["kind"], "device");
    assert_eq!(
        journal.matches(r#""event":"census""#).count(),
        1,
        "{journal}"
    );
}

/// A census of 8 fake devices (device 6 slow, quarantined) ahead of a sweep on stack `work`:
/// `sweep` is the plan's `[axes]` and `[case]`, `placement` the pool's, `work` the shell line
/// run before the work stack prints its samples.
fn census_then_sweep(name: &str, sweep: &str, placement: &str, work: &str) -> String {
    let census = plan(name, r#"echo ",$CAMPAIGN_DEVICES," | grep -q ',6,'"#, true);
    let census = census.replace(
        "[devices]\nkind = \"npu\"\n",
        &format!("[devices]\nkind = \"npu\"\nplacement = \"{placement}\"\n"),
    );
    let quotes = "'''";
    format!(
        r#"{census}
{sweep}

[stacks.work]
resource = "npu"
command = ["sh", "-c", {quotes}
{work}
for i in $(seq 1 "$CAMPAIGN_WARMUP"); do echo 'CAMPAIGN_SAMPLE {{"phase":"warmup","execute_s":0.001}}'; done
for i in $(seq 1 "$CAMPAIGN_TIMED"); do echo 'CAMPAIGN_SAMPLE {{"phase":"timed","execute_s":0.001}}'; done
echo 'CAMPAIGN_DONE {{"correctness":"pass"}}'
{quotes}]
"#
    )
}

/// The journal's lines, parsed.
fn journal_lines(dir: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join("journal.jsonl")).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Whether journal line `l` is event `event` of a run of stack `stack`.
fn step_of(l: &Value, event: &str, stack: &str) -> bool {
    l["event"] == event
        && l["step"]
            .as_str()
            .is_some_and(|s| s.starts_with("run:") && s.ends_with(&format!(":{stack}")))
}

/// The results rows of stack `work`: (case id, devices, status, reason).
fn work_rows(dir: &Path) -> Vec<(String, Vec<u64>, String, String)> {
    let rows = json(&dir.join("results.json"))["runs"]
        .as_array()
        .unwrap()
        .clone();
    (rows.iter())
        .filter(|r| r["stack"] == "work")
        .map(|r| {
            let devices = (r["devices"].as_array().unwrap().iter())
                .filter_map(Value::as_u64)
                .collect();
            let text = |k: &str| r[k].as_str().unwrap_or("").to_string();
            (text("case_id"), devices, text("status"), text("reason"))
        })
        .collect()
}

#[test]
fn a_census_ahead_of_a_sweep_quarantines_its_slow_device_before_any_sweep_run() {
    let tmp = util::tempdir();
    let sweep = "[axes]\ndevice_ids = [[0, 1], [5, 6], [2, 3]]\nstacks = [\"work\"]\n\n\
                 [case]\np = 2\ncount = 256\n";
    let text = census_then_sweep("ahead", sweep, "pinned", "true");
    let (out, dir) = run_plan_with(tmp.path(), "ahead", &text, &[], &ENV);
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));

    // The census's runs, its line, the quarantine, then the first sweep run: in that order.
    let lines = journal_lines(&dir);
    let at = |what: &dyn Fn(&Value) -> bool| lines.iter().position(what);
    let census = at(&|l| l["event"] == "census").expect("a census line");
    let quarantined = at(&|l| l["event"] == "quarantined").expect("a quarantine");
    let first_work = at(&|l| step_of(l, "started", "work")).expect("a sweep run started");
    let last_fake = (lines.iter())
        .rposition(|l| step_of(l, "finished", "fake"))
        .unwrap();
    assert!(
        last_fake < census && census < quarantined && quarantined < first_work,
        "{lines:#?}"
    );
    assert_eq!(lines[census]["quarantined"], serde_json::json!([6]));
    assert_eq!(lines[quarantined]["device"], 6);

    // The sweep's run pinned to device 6 is a planned skip naming why; the others ran.
    let rows = work_rows(&dir);
    assert_eq!(rows.len(), 3, "{rows:?}");
    for (id, devices, status, reason) in &rows {
        if devices.contains(&6) {
            assert_eq!(status, "skipped", "{id}");
            assert_eq!(
                reason,
                "pinned device 6 is quarantined: link census: 7 of its 7 links are slow"
            );
        } else {
            assert_eq!(status, "pass", "{id}: {reason}");
        }
    }
    // The census covers its own 28 pairs only, not the sweep's pairs.
    let r = json(&dir.join("results.json"))["census"].clone();
    assert_eq!(r["measured"], 28, "{r:#}");
    assert_eq!(r["pairs"].as_array().unwrap().len(), 28);
    let status = util::stdout(&util::run(&["status", &dir.display().to_string()]));
    assert!(
        status.contains("slow device 6: 7 of its 7 links are slow — quarantined"),
        "{status}"
    );
}

/// The same with an auto-placed sweep, killed (SIGKILL) once a sweep run started after the
/// census quarantined device 6, then resumed: no sweep run of either session used device 6, and
/// the resume replays the census's line — no second judgement, no second quarantine line.
#[test]
fn a_resume_after_a_kill_keeps_the_census_quarantine_out_of_the_sweep() {
    let tmp = util::tempdir();
    let sweep = "[axes]\ncount = [16, 32, 64, 128, 256, 512]\nstacks = [\"work\"]\n\n\
                 [case]\np = 2\n";
    let text = census_then_sweep("killed", sweep, "auto", "sleep 0.5");
    let file = tmp.path().join("killed.toml");
    std::fs::write(&file, &text).unwrap();
    let results = tmp.path().join("results");
    let mut child = util::campaign()
        .current_dir(tmp.path())
        .args(["run", file.to_str().unwrap(), "-q", "--jobs", "1"])
        .arg("--results-dir")
        .arg(&results)
        .envs(ENV)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait (generously) for a sweep run to start after the census line.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    let dir = loop {
        assert!(std::time::Instant::now() < deadline, "no sweep run started");
        let found = std::fs::read_dir(results.join("killed"))
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| e.ok())
            .map(|e| e.path());
        if let Some(dir) = found {
            let lines = journal_lines(&dir);
            let started = lines.iter().any(|l| step_of(l, "started", "work"));
            if started && lines.iter().any(|l| l["event"] == "census") {
                break dir;
            }
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the campaign ended before it was killed"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = child.wait();

    let out = util::campaign()
        .args(["resume", dir.to_str().unwrap(), "-q"])
        .envs(ENV)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    let rows = work_rows(&dir);
    assert_eq!(rows.len(), 6, "{rows:?}");
    for (id, devices, status, reason) in &rows {
        assert_eq!(status, "pass", "{id}: {reason}");
        assert!(!devices.contains(&6), "{id} ran on {devices:?}");
    }
    let lines = journal_lines(&dir);
    let count = |event: &str| lines.iter().filter(|l| l["event"] == event).count();
    assert_eq!(
        (count("census"), count("quarantined")),
        (1, 1),
        "{lines:#?}"
    );
    assert!(lines.iter().any(|l| l["event"] == "session"), "a resume");
    assert!(json(&dir.join("results.json"))["quarantined"]["6"]
        .as_str()
        .unwrap()
        .starts_with("link census"));
}

#[test]
fn campaign_census_runs_the_host_stack_and_report_renders_it_again() {
    let tmp = util::tempdir();
    let results = tmp.path().join("results");
    let out = util::campaign()
        .args([
            "census",
            "--devices",
            "0-3",
            "--stack",
            "host",
            "--count",
            "1Ki",
            "-q",
        ])
        .arg("--results-dir")
        .arg(&results)
        .envs(ENV)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    let dir = std::fs::read_dir(results.join("census"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let frozen = std::fs::read_to_string(dir.join("plan.toml")).unwrap();
    assert!(
        frozen.contains("[census]") && frozen.contains("count = 1024"),
        "{frozen}"
    );
    assert_eq!(census_of(&dir)["pairs"].as_array().unwrap().len(), 6);

    std::fs::remove_file(dir.join("reports/summary.md")).unwrap();
    let again = util::run(&["report", &dir.display().to_string()]);
    assert_eq!(again.status.code(), Some(0), "{}", util::stderr(&again));
    let md = std::fs::read_to_string(dir.join("reports/summary.md")).unwrap();
    assert!(
        md.contains("## Link census") && md.contains("6 pairs in 3 rounds"),
        "{md}"
    );
}

#[test]
fn bad_census_flags_exit_2_naming_what_is_wrong() {
    for (args, says) in [
        (
            &["--devices", "3", "--stack", "host"][..],
            "at least two devices",
        ),
        (
            &["--devices", "0-3", "--stack", "host", "--count", "64MB"],
            "not an element count",
        ),
        (
            &["--devices", "0-x", "--stack", "host"],
            "not a device list",
        ),
        (
            &["--devices", "0-3", "--stack", "nosuch"],
            "unknown stack `nosuch`",
        ),
        (
            &["--devices", "0-3", "--stack", "host", "--op", "allsum"],
            "unknown op",
        ),
    ] {
        let out = util::campaign().arg("census").args(args).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            util::stderr(&out)
        );
        assert!(
            util::stderr(&out).contains(says),
            "{args:?}: {}",
            util::stderr(&out)
        );
    }
}

/// A census of devices 0-3 over the two-node test cluster (scripts/slurm-up.sh): 0-1 on one
/// node, 2-3 on the other. The pairs inside a node run as one-node jobs and are labelled same
/// node; the four across run as two-node jobs, one rank on each node, and are labelled across
/// nodes with the nodes the ranks recorded. (A one-node pair runs on the node Slurm picks: the
/// census's blocks say which pairs cross nodes, the records say where each ran.)
#[test]
fn a_census_on_two_slurm_nodes_labels_same_node_and_cross_node_links() {
    let Some(conf) = crate::slurm::cluster() else {
        return;
    };
    let tmp = util::tempdir();
    let text = r#"[campaign]
name = "links"

[census]
devices = "0-3"
nodes = 2
stack = "fake"
count = 256

[devices]
kind = "cpu"

[rounds]
warmup = 1
timed = 5

[run]
timeout = "5m"
repeats = 1

[slurm]
poll_interval = "200ms"

[stacks.fake]
resource = "cpu"
max_nodes = 2
# Each rank goes through rank.sh, which records the node it ran on (docs/slurm.md).
command = ["sh", "-c", '''
srun --kill-on-bad-exit=1 {{ rank_wrap }} true || exit 1
for i in $(seq 1 "$CAMPAIGN_WARMUP"); do echo 'CAMPAIGN_SAMPLE {"phase":"warmup","execute_s":0.001}'; done
for i in $(seq 1 "$CAMPAIGN_TIMED"); do echo 'CAMPAIGN_SAMPLE {"phase":"timed","execute_s":0.001}'; done
echo 'CAMPAIGN_DONE {"correctness":"pass"}'
''']
"#;
    let file = tmp.path().join("links.toml");
    std::fs::write(&file, text).unwrap();
    let results = tmp.path().join("results");
    let out = util::campaign()
        .current_dir(tmp.path())
        .args(["run", file.to_str().unwrap(), "--executor", "slurm", "-q"])
        .arg("--results-dir")
        .arg(&results)
        .env("SLURM_CONF", &conf)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        util::stdout(&out),
        util::stderr(&out)
    );
    let dir = std::fs::read_dir(results.join("links"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let c = census_of(&dir);
    let pairs = c["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 6, "{c:#}");
    for p in pairs {
        let pair = p["pair"].as_str().unwrap();
        let same = pair == "0–1" || pair == "2–3";
        let want = if same { "same node" } else { "across nodes" };
        assert_eq!(p["class"], want, "{p}");
        if !same {
            let nodes = p["nodes"].as_str().unwrap();
            assert!(nodes == "n1–n2" || nodes == "n2–n1", "{p}");
        }
    }
    let classes: Vec<(String, u64)> = (c["classes"].as_array().unwrap().iter())
        .map(|k| {
            (
                k["class"].as_str().unwrap().to_string(),
                k["pairs"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        classes,
        [
            ("same node".to_string(), 2),
            ("across nodes".to_string(), 4)
        ]
    );
    assert!(c["findings"].as_array().unwrap().is_empty(), "{c:#}");
    // Classes of 2 and 4 pairs are too small to score: the report says nothing was judged.
    assert_eq!(c["scored"], 0);
    let md = std::fs::read_to_string(dir.join("reports/summary.md")).unwrap();
    assert!(md.contains("**Nothing judged**: 6 pairs measured"), "{md}");
}
