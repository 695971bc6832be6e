//! `campaign calibrate`: a plan's stacks judged against themselves on this machine, kept in the
//! history store, and `compare` using it (and saying so) unless `--threshold` is given.

use std::path::{Path, PathBuf};

use crate::util;

const PLAN: &str = r#"
[campaign]
name = "cal"
[axes]
count = [64, 4096]
stacks = ["host"]
[case]
p = 2
[rounds]
warmup = 1
timed = 5
"#;

/// The newest run dir of campaign `name` under `dir`'s results.
fn newest(dir: &Path, name: &str) -> PathBuf {
    let mut runs: Vec<PathBuf> = std::fs::read_dir(dir.join("results/campaigns").join(name))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    runs.sort();
    runs.pop().unwrap()
}

#[test]
fn calibrate_keeps_the_machines_noise_and_compare_uses_it_and_says_so() {
    let tmp = util::tempdir();
    let dir = tmp.path();
    std::fs::write(dir.join("p.toml"), PLAN).unwrap();
    let out = util::run_in(dir, &["calibrate", "p.toml", "--repeats", "6", "-q"]);
    let text = util::stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", util::stderr(&out));
    assert!(
        text.contains("size class") && text.contains("false alarms"),
        "{text}"
    );
    let cal_dir = newest(dir, "cal-calibration");
    let cal: serde_json::Value =
        serde_json::from_slice(&std::fs::read(cal_dir.join("calibration.json")).unwrap()).unwrap();
    let rows: u64 = (cal["classes"].as_array().unwrap().iter())
        .map(|c| c["rows"].as_u64().unwrap())
        .sum();
    assert_eq!(rows, 2, "{cal}");
    assert!(dir.join("results/history.sqlite").is_file());
    // The calibration run is its own campaign: the plan's own has no run dir yet.
    assert!(!dir.join("results/campaigns/cal").exists());

    for _ in 0..2 {
        let out = util::run_in(dir, &["run", "p.toml", "--repeats", "3", "-q"]);
        assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    }
    let mut runs: Vec<PathBuf> = std::fs::read_dir(dir.join("results/campaigns/cal"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    runs.sort();
    let (a, b) = (runs[0].to_str().unwrap(), runs[1].to_str().unwrap());
    let out = util::run_in(dir, &["compare", a, b]);
    let text = util::stdout(&out);
    assert!(
        text.contains("Noise band: calibration of host"),
        "{text}{}",
        util::stderr(&out)
    );
    // The report of each run names the calibration its verdicts' bands came from.
    let summary = std::fs::read_to_string(runs[1].join("reports/summary.md")).unwrap();
    assert!(
        summary.contains("| noise band | calibration of host"),
        "{summary}"
    );
    // history regressions takes its noise floors from it too, and says so.
    let out = util::run_in(dir, &["history", "regressions"]);
    let text = util::stdout(&out);
    assert!(
        text.contains("Noise floor: calibration of host"),
        "{text}{}",
        util::stderr(&out)
    );
    let out = util::run_in(dir, &["history", "regressions", "--format", "json"]);
    let json: serde_json::Value = serde_json::from_str(&util::stdout(&out)).unwrap();
    assert!(
        json["calibration"][0]
            .as_str()
            .unwrap()
            .starts_with("calibration of host"),
        "{json}"
    );
    let out = util::run_in(dir, &["compare", a, b, "--threshold", "7%"]);
    let text = util::stdout(&out);
    assert!(
        text.contains("Noise band: no calibration") && text.contains("±7.0 %"),
        "{text}"
    );
}

#[test]
fn calibrate_refuses_fewer_than_three_repeats_a_side() {
    let tmp = util::tempdir();
    std::fs::write(tmp.path().join("p.toml"), PLAN).unwrap();
    let out = util::run_in(tmp.path(), &["calibrate", "p.toml", "--repeats", "4"]);
    assert_eq!(out.status.code(), Some(2), "{}", util::stderr(&out));
    assert!(
        util::stderr(&out).contains("--repeats"),
        "{}",
        util::stderr(&out)
    );
}
