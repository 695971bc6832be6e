//! Crash-proofing end to end: `campaign status` on a recorded run dir, `campaign resume`
//! refusals, and real campaigns of fast shell stacks that are killed (SIGKILL at random moments,
//! Ctrl-C once and twice), hang, fail transiently, fail their health probe, or cannot write their
//! bundle — and are resumed. Fixtures: tests/integration/fixtures/resume/ (and ../run/).

#[path = "resume_campaigns.rs"]
mod campaigns;

use crate::util;

fn fixture(name: &str) -> std::path::PathBuf {
    util::root()
        .join("tests/integration/fixtures/resume")
        .join(name)
}

#[test]
fn status_shows_counts_failures_quarantine_torn_line_and_eta() {
    let dir = fixture("status_run");
    let out = util::run(&["status", dir.to_str().unwrap()]);
    let text = util::stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", util::stderr(&out));
    assert!(text.contains("campaign: status_fixture"), "{text}");
    assert!(
        text.contains("runs: 6 (2 pass, 1 fail, 1 timeout, 1 interrupted, 1 not started)"),
        "{text}"
    );
    // The reason comes from the journal when it has one, else from the bundle's manifest.
    assert!(
        text.contains("fail        ring_p2_count256_fp32_host_d0-1 / host: golden mismatch at rank 1 element 0: got 2.0, expected 3.0  [cases/ring_p2_count256_fp32_host_d0-1/host]"),
        "{text}"
    );
    assert!(
        text.contains("timeout     ring_p2_count1024_fp32_host_d0-1 / host: killed at its 30s timeout  [cases/ring_p2_count1024_fp32_host_d0-1/host]"),
        "{text}"
    );
    assert!(
        text.contains("interrupted twophase_p2_count256_fp32_host_d0-1 / host: started 2026-03-01T12:00:30.000+00:00, never finished"),
        "{text}"
    );
    assert!(
        !text.contains("twophase_p2_count1024_fp32_host_d0-1 / host"),
        "{text}"
    );
    assert!(
        text.contains("device 3: health probe failed: exit code 7"),
        "{text}"
    );
    assert!(
        text.contains("journal: line 12 was torn by a crash"),
        "{text}"
    );
    // 4 executed runs of 10 + 20 + 20 + 30 s, one at a time (the 2-hour gap between sessions
    // does not count), 2 left.
    assert!(
        text.contains("left: 2 runs, ETA ~40s (20s per run over 4 runs, 1.0 at a time)"),
        "{text}"
    );
    assert!(text.contains("continue with: campaign resume"), "{text}");
}

#[test]
fn status_of_a_folder_without_journal_is_bad_input() {
    let dir = util::tempdir();
    let out = util::run(&["status", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        util::stderr(&out).contains("no journal.jsonl"),
        "{}",
        util::stderr(&out)
    );
}

#[test]
fn status_refuses_a_journal_torn_in_the_middle_naming_the_line() {
    let dir = util::tempdir();
    std::fs::write(
        dir.path().join("journal.jsonl"),
        "{\"journal\":\"campaign\",\"version\":1}\n{\"event\":\"star\n{\"t\":\"x\",\"event\":\"session\"}\n",
    )
    .unwrap();
    let out = util::run(&["status", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        util::stderr(&out).contains("journal.jsonl:2:"),
        "{}",
        util::stderr(&out)
    );
}

#[test]
fn resume_is_refused_while_another_process_holds_the_run_dir() {
    let dir = util::tempdir();
    std::fs::write(
        dir.path().join("journal.jsonl"),
        "{\"journal\":\"campaign\",\"version\":1}\n",
    )
    .unwrap();
    let held = campaign::store::lock::RunDirLock::acquire(dir.path()).unwrap();
    let out = util::run(&["resume", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(4), "{}", util::stderr(&out));
    let err = util::stderr(&out);
    assert!(
        err.contains(&format!("is in use by campaign pid {}", std::process::id())),
        "{err}"
    );
    drop(held);
}

#[test]
fn resume_of_a_plan_without_run_dir_is_bad_input() {
    let dir = util::tempdir();
    let plan = dir.path().join("p.toml");
    std::fs::write(&plan, "[campaign]\nname = \"never_ran\"\n").unwrap();
    let out = util::run_in(dir.path(), &["resume", plan.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        util::stderr(&out)
            .contains("campaign `never_ran` has no run dir under results/campaigns/never_ran"),
        "{}",
        util::stderr(&out)
    );
}

/// Run a two-case campaign of seed case files listed by a relative glob in `root/plans`;
/// return its run dir.
fn seed_file_campaign(root: &std::path::Path) -> std::path::PathBuf {
    std::fs::create_dir_all(root.join("cases")).unwrap();
    std::fs::create_dir_all(root.join("plans")).unwrap();
    for count in [64, 100] {
        std::fs::write(
            root.join(format!("cases/mesh_{count}.json")),
            format!(
                r#"{{"variant":"mesh","p":2,"count":{count},"platform":"host","warmup_rounds":1,"timed_rounds":2}}"#
            ),
        )
        .unwrap();
    }
    std::fs::write(
        root.join("plans/seed.toml"),
        "[campaign]\nname = \"seed_files\"\n\n[cases]\nfiles = [\"../cases/*.json\"]\n\n[axes]\nstacks = [\"host\"]\n\n[run]\nrepeats = 1\n",
    )
    .unwrap();
    let results = root.join("results");
    let results_arg = results.to_str().unwrap();
    let out = util::run_in(
        root,
        &["run", "plans/seed.toml", "--results-dir", results_arg, "-q"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    std::fs::read_dir(results.join("seed_files"))
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path()
}

/// A plan that runs seed case files by a relative glob: its frozen copy lives in the run dir,
/// but resume (from any working directory) must resolve the glob where the plan was written.
#[test]
fn resume_resolves_plan_relative_case_files_from_the_original_plan() {
    let dir = util::tempdir();
    let run_dir = seed_file_campaign(dir.path());
    // From an unrelated working directory, by run dir.
    let elsewhere = util::tempdir();
    let out = util::run_in(
        elsewhere.path(),
        &["resume", run_dir.to_str().unwrap(), "-q"],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        util::stdout(&out),
        util::stderr(&out)
    );
    assert!(
        util::stdout(&out).contains("nothing to run"),
        "{}",
        util::stdout(&out)
    );
}

/// A resume of a finished run dir whose results files and report already show every run reads
/// no bundle and rebuilds nothing — but only while those files agree with the journal: rows
/// missing from results.csv, results files written before the journal's latest `finished`
/// line, or a missing report each bring back the full rebuild.
#[test]
fn resume_of_a_finished_dir_rebuilds_only_what_disagrees_with_the_journal() {
    let dir = util::tempdir();
    let run_dir = seed_file_campaign(dir.path());
    let resume = || {
        let out = util::run_in(dir.path(), &["resume", run_dir.to_str().unwrap(), "-q"]);
        let stdout = util::stdout(&out);
        assert_eq!(out.status.code(), Some(0), "{stdout}{}", util::stderr(&out));
        assert!(stdout.contains("2 runs: 2 pass"), "{stdout}");
        stdout
    };
    const UP_TO_DATE: &str = "results files and report are up to date";
    const REBUILT: &str = "rebuilding results and report";
    let csv = run_dir.join("results.csv");
    let full_csv = std::fs::read_to_string(&csv).unwrap();
    assert!(resume().contains(UP_TO_DATE));

    // results.csv lost its rows: rebuilt from the bundles.
    let header = full_csv.lines().next().unwrap();
    std::fs::write(&csv, format!("{header}\n")).unwrap();
    let text = resume();
    assert!(
        text.contains(REBUILT) && !text.contains(UP_TO_DATE),
        "{text}"
    );
    assert_eq!(std::fs::read_to_string(&csv).unwrap().lines().count(), 3);
    assert!(resume().contains(UP_TO_DATE));

    // Results files written before the journal's latest `finished` line (a run ran again, and
    // its session was killed before it rewrote them): they may not show it. Each damage is
    // undone (and the dir seen up to date again) before the next, so every step can fail on
    // its own.
    let set_mtime = |path: &std::path::Path, at: std::time::SystemTime| {
        let file = std::fs::File::options().write(true).open(path).unwrap();
        file.set_modified(at).unwrap();
    };
    let mtime = |path: &std::path::Path| std::fs::metadata(path).unwrap().modified().unwrap();
    let long_ago = std::time::UNIX_EPOCH + std::time::Duration::from_secs(86_400);
    set_mtime(&run_dir.join("samples.csv"), long_ago);
    // (the results stamp says when a rewrite last proved the files current: as old.)
    set_mtime(&run_dir.join(".results-stamp"), long_ago);
    let text = resume();
    assert!(
        text.contains(REBUILT) && !text.contains(UP_TO_DATE),
        "{text}"
    );
    assert!(resume().contains(UP_TO_DATE));

    // The frozen plan edited after the report (its `[report]` settings may differ): rendered
    // again.
    let plan = run_dir.join("plan.toml");
    let plan_at = mtime(&plan);
    set_mtime(
        &plan,
        mtime(&run_dir.join("reports/summary.md")) + std::time::Duration::from_secs(10),
    );
    let text = resume();
    assert!(
        text.contains(REBUILT) && !text.contains(UP_TO_DATE),
        "{text}"
    );
    set_mtime(&plan, plan_at);
    assert!(resume().contains(UP_TO_DATE));

    // No report: rendered again.
    let summary = run_dir.join("reports/summary.md");
    std::fs::remove_file(&summary).unwrap();
    let text = resume();
    assert!(
        text.contains(REBUILT) && !text.contains(UP_TO_DATE),
        "{text}"
    );
    assert!(summary.is_file());
}

/// A passed run whose timing.json did not survive (power loss between the manifest reaching
/// disk and its samples) is not "done" for `resume --verify`: it runs again and its samples
/// are restored.
#[test]
fn resume_verify_reruns_a_pass_whose_timing_json_is_gone() {
    let dir = util::tempdir();
    let run_dir = seed_file_campaign(dir.path());
    let bundle = run_dir.join("cases/mesh_p2_count64_fp32_host_d0-1/host");
    std::fs::remove_file(bundle.join("timing.json")).unwrap();
    let out = util::run_in(
        dir.path(),
        &["resume", run_dir.to_str().unwrap(), "--verify", "-q"],
    );
    let stdout = util::stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", util::stderr(&out));
    assert!(
        stdout.contains("finished in the journal with 3 samples but its bundle holds 0"),
        "{stdout}"
    );
    assert!(stdout.contains("1 done, 1 to run"), "{stdout}");
    let samples: serde_json::Value =
        serde_json::from_slice(&std::fs::read(bundle.join("timing.json")).unwrap()).unwrap();
    assert_eq!(samples.as_array().unwrap().len(), 3, "1 warmup + 2 timed");
}

/// Bundles are not synced on their own (the journal's fsynced `finished` line, with the sample
/// count, is a run's durability point): after a power loss a bundle file can be empty or short
/// under its final name. `resume --verify` must run such a run again, not stop and not keep it.
#[test]
fn resume_verify_reruns_runs_whose_bundle_files_a_power_loss_left_empty() {
    let dir = util::tempdir();
    let run_dir = seed_file_campaign(dir.path());
    let bundle = run_dir.join("cases/mesh_p2_count64_fp32_host_d0-1/host");
    std::fs::write(bundle.join("manifest.json"), "").unwrap();
    let other = std::fs::read_dir(run_dir.join("cases"))
        .unwrap()
        .map(|e| e.unwrap().path().join("host"))
        .find(|b| *b != bundle)
        .unwrap();
    // Half a file (the first half of its data reached the disk) reads back no better.
    let timing = std::fs::read(other.join("timing.json")).unwrap();
    std::fs::write(other.join("timing.json"), &timing[..timing.len() / 2]).unwrap();
    // Case files are not synced either: one a power loss emptied is written again.
    let case_file = bundle.parent().unwrap().join("case.json");
    std::fs::write(&case_file, "").unwrap();
    let out = util::run_in(
        dir.path(),
        &["resume", run_dir.to_str().unwrap(), "--verify", "-q"],
    );
    let stdout = util::stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", util::stderr(&out));
    assert_eq!(
        stdout.matches("its bundle does not read back").count(),
        2,
        "{stdout}"
    );
    assert!(stdout.contains("0 done, 2 to run"), "{stdout}");
    for b in [&bundle, &other] {
        let samples: serde_json::Value =
            serde_json::from_slice(&std::fs::read(b.join("timing.json")).unwrap()).unwrap();
        assert_eq!(samples.as_array().unwrap().len(), 3, "1 warmup + 2 timed");
        let manifest: serde_json::Value =
            serde_json::from_slice(&std::fs::read(b.join("manifest.json")).unwrap()).unwrap();
        assert_eq!(manifest["status"], "pass");
    }
    let case: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&case_file).unwrap()).unwrap();
    assert_eq!(case["count"], 64);
}

/// The run dir of a finished `run` of the plan `text` (campaign `name`) under `dir`:
/// (results dir, run dir).
fn run_plan(
    dir: &std::path::Path,
    name: &str,
    text: &str,
) -> (std::path::PathBuf, std::path::PathBuf) {
    let plan = dir.join(format!("{name}.toml"));
    std::fs::write(&plan, text).unwrap();
    let results = dir.join("results");
    let out = util::run(&[
        "run",
        plan.to_str().unwrap(),
        "-q",
        "--results-dir",
        results.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    let run_dir = std::fs::read_dir(results.join(name))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    (results, run_dir)
}

/// A finished run dir of the small host plan under `dir`: (results dir, run dir).
fn finished_run(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    run_plan(
        dir,
        "links",
        "[campaign]\nname = \"links\"\n[case]\nplatform = \"host\"\n[axes]\nvariant = [\"mesh\"]\n\
         p = [2]\ncount = [64, 128]\n[rounds]\nwarmup = 0\ntimed = 2\n[run]\nrepeats = 1\n",
    )
}

/// Nothing is written outside the run dir through links: a `cases` folder (or a case folder)
/// replaced by a link to elsewhere makes `resume` refuse the run dir before writing a byte
/// (a case folder: before reading or writing a bundle), and
/// a history store that is a link to a device is refused instead of handed to SQLite.
#[test]
fn links_in_a_run_dir_or_as_the_history_store_are_refused() {
    let tmp = util::tempdir();
    let (results, run_dir) = finished_run(tmp.path());
    let outside = tmp.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    // `cases -> outside` (its real content moved away), then a case folder linked instead.
    let cases = run_dir.join("cases");
    std::fs::rename(&cases, tmp.path().join("moved")).unwrap();
    std::os::unix::fs::symlink(&outside, &cases).unwrap();
    let out = util::run(&["resume", run_dir.to_str().unwrap()]);
    let err = util::stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("cases: is a symbolic link"), "{err}");
    assert_eq!(
        std::fs::read_dir(&outside).unwrap().count(),
        0,
        "written through the link"
    );
    std::fs::remove_file(&cases).unwrap();
    std::fs::rename(tmp.path().join("moved"), &cases).unwrap();
    let case = std::fs::read_dir(&cases)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::rename(&case, tmp.path().join("moved_case")).unwrap();
    std::os::unix::fs::symlink(&outside, &case).unwrap();
    // A finished run dir with nothing to do reads and writes no bundle, so it lists no case
    // folder (issue 29, item 2); a resume that reads or writes bundles refuses the link first.
    let out = util::run(&["resume", run_dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    assert!(
        util::stdout(&out).contains("results files and report are up to date"),
        "{}",
        util::stdout(&out)
    );
    let out = util::run(&["resume", run_dir.to_str().unwrap(), "--verify"]);
    assert_eq!(out.status.code(), Some(2), "{}", util::stderr(&out));
    assert!(
        util::stderr(&out).contains("is a symbolic link"),
        "{}",
        util::stderr(&out)
    );
    assert_eq!(
        std::fs::read_dir(&outside).unwrap().count(),
        0,
        "written through the link"
    );

    let store = results.join("history.sqlite");
    std::fs::remove_file(&store).unwrap();
    let _ = std::fs::remove_file(results.join("history.sqlite-wal"));
    let _ = std::fs::remove_file(results.join("history.sqlite-shm"));
    let target = tmp.path().join("device-stand-in");
    std::os::unix::fs::symlink("/dev/null", &target).unwrap();
    std::os::unix::fs::symlink(&target, &store).unwrap();
    let out = util::run(&[
        "history",
        "list",
        "--results-dir",
        results.to_str().unwrap(),
    ]);
    let err = util::stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("not a regular file"), "{err}");
    assert!(
        !tmp.path().join("device-stand-in-journal").exists()
            && !std::path::Path::new("/dev/null-journal").exists()
    );
}

/// The first case folder the run dir lists.
fn first_case(run_dir: &std::path::Path) -> std::path::PathBuf {
    std::fs::read_dir(run_dir.join("cases"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
}

/// One broken bundle costs only its own run: a bundle folder replaced by a file is moved aside
/// (`<stack>.damaged`) by `resume --verify`, the run runs again, and every other run's row — the case's intact
/// repeats included — stays in results.json.
#[test]
fn a_bundle_replaced_by_a_file_costs_only_its_own_run() {
    let tmp = util::tempdir();
    let (_, run_dir) = finished_run(tmp.path());
    let case = first_case(&run_dir);
    let bundle = case.join("host");
    std::fs::remove_dir_all(&bundle).unwrap();
    std::fs::write(&bundle, "not a folder").unwrap();
    let out = util::run(&["resume", run_dir.to_str().unwrap(), "--verify", "-q"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        util::stdout(&out),
        util::stderr(&out)
    );
    assert!(
        bundle.join("manifest.json").is_file(),
        "the run ran again into a real folder"
    );
    assert_eq!(
        std::fs::read_to_string(case.join("host.damaged")).unwrap(),
        "not a folder"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("results.json")).unwrap())
            .unwrap();
    let rows = doc["runs"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{doc}");
    assert!(rows.iter().all(|r| r["status"] == "pass"), "{doc}");
}

/// `campaign report` re-renders with the plan's own `[report]` (its template here), as the
/// campaign did, unless `--template` says otherwise.
#[test]
fn report_of_a_run_dir_honours_the_plans_template() {
    let tmp = util::tempdir();
    let template = tmp.path().join("mine.md.j2");
    std::fs::write(&template, "MINE {{ campaign }}\n").unwrap();
    let (_, run_dir) = run_plan(
        tmp.path(),
        "tpl",
        &format!(
            "[campaign]\nname = \"tpl\"\n[case]\nplatform = \"host\"\n[axes]\nvariant = [\"mesh\"]\n\
             p = [2]\ncount = [64]\n[rounds]\nwarmup = 0\ntimed = 2\n[run]\nrepeats = 1\n\
             [report]\ntemplate = \"{}\"\n",
            template.display()
        ),
    );
    let summary = run_dir.join("reports/summary.md");
    assert_eq!(std::fs::read_to_string(&summary).unwrap(), "MINE tpl\n");
    std::fs::remove_file(&summary).unwrap();
    let out = util::run(&["report", run_dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    assert_eq!(
        std::fs::read_to_string(&summary).unwrap(),
        "MINE tpl\n",
        "the plan's template"
    );
    let other = tmp.path().join("other.md.j2");
    std::fs::write(&other, "OTHER\n").unwrap();
    let out = util::run(&[
        "report",
        run_dir.to_str().unwrap(),
        "--template",
        other.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    assert_eq!(std::fs::read_to_string(&summary).unwrap(), "OTHER\n");
}

/// results.json is derived: a truncated one is rebuilt from the journal and the bundles by
/// `resume` (and `report`), with every row, instead of being an error.
#[test]
fn a_truncated_results_json_is_rebuilt() {
    let tmp = util::tempdir();
    let (_, run_dir) = finished_run(tmp.path());
    let path = run_dir.join("results.json");
    let rows = |path: &std::path::Path| {
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        doc["runs"].as_array().unwrap().len()
    };
    let text = std::fs::read_to_string(&path).unwrap();
    for cmd in ["resume", "report"] {
        std::fs::write(&path, &text[..text.len() / 3]).unwrap();
        let out = util::run(&[cmd, run_dir.to_str().unwrap()]);
        let err = util::stderr(&out);
        assert_eq!(out.status.code(), Some(0), "{cmd}: {err}");
        assert!(
            err.contains("not valid JSON") && err.contains("rebuilt"),
            "{cmd}: {err}"
        );
        assert_eq!(rows(&path), 2, "{cmd}");
    }
}

/// A journal header whose `selection.repeats` no campaign can have (0, 2^32) is refused by
/// `resume`, naming the line, instead of rewriting the results files with fewer rows.
#[test]
fn a_hostile_header_repeats_is_refused_and_costs_no_row() {
    let tmp = util::tempdir();
    let (_, run_dir) = finished_run(tmp.path());
    let journal = run_dir.join("journal.jsonl");
    let text = std::fs::read_to_string(&journal).unwrap();
    let (head, rest) = text.split_once('\n').unwrap();
    let before = std::fs::read(run_dir.join("results.json")).unwrap();
    for bad in ["0", "4294967296"] {
        let mut header: serde_json::Value = serde_json::from_str(head).unwrap();
        header["selection"]["repeats"] = serde_json::from_str(bad).unwrap();
        std::fs::write(&journal, format!("{header}\n{rest}")).unwrap();
        let out = util::run(&["resume", run_dir.to_str().unwrap()]);
        let err = util::stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{bad}: {err}");
        assert!(
            err.contains("journal.jsonl") && err.contains("selection.repeats"),
            "{err}"
        );
        assert_eq!(
            std::fs::read(run_dir.join("results.json")).unwrap(),
            before,
            "results untouched"
        );
    }
}

/// A journal whose header names another campaign is not resumed: exit 2 naming both, nothing
/// rewritten (issue 43, item 7). So is a header of another plan hash, unless the resume says
/// the frozen plan was edited on purpose (`--plan-edited`).
#[test]
fn a_header_of_another_campaign_is_refused_naming_both() {
    let tmp = util::tempdir();
    let (_, run_dir) = finished_run(tmp.path());
    let journal = run_dir.join("journal.jsonl");
    let text = std::fs::read_to_string(&journal).unwrap();
    let (head, rest) = text.split_once('\n').unwrap();
    let before = std::fs::read(run_dir.join("results.json")).unwrap();
    let original: serde_json::Value = serde_json::from_str(head).unwrap();
    let own_hash = original["plan_hash"].as_str().unwrap().to_string();
    let value = "smoke";
    let mut header = original.clone();
    header["campaign"] = value.into();
    std::fs::write(&journal, format!("{header}\n{rest}")).unwrap();
    let out = util::run(&["resume", run_dir.to_str().unwrap()]);
    let err = util::stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("journal.jsonl") && err.contains(value),
        "{err}"
    );
    assert!(err.contains("`links`") && err.contains(&own_hash), "{err}");
    assert_eq!(
        std::fs::read(run_dir.join("results.json")).unwrap(),
        before,
        "results untouched"
    );
    // Same campaign, another plan's hash.
    let mut header = original.clone();
    header["plan_hash"] = "0123456789abcdef".into();
    std::fs::write(&journal, format!("{header}\n{rest}")).unwrap();
    let out = util::run(&["resume", run_dir.to_str().unwrap()]);
    let err = util::stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("journal.jsonl")
            && err.contains("`0123456789abcdef`")
            && err.contains(&format!("`{own_hash}`"))
            && err.contains("--plan-edited"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(run_dir.join("results.json")).unwrap(),
        before,
        "results untouched"
    );
    // Said to be an edit: resumed, and the journal records the hash later resumes compare with.
    let out = util::run(&["resume", run_dir.to_str().unwrap(), "--plan-edited"]);
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    assert!(
        util::stdout(&out).contains("plan.toml was edited (plan hash 0123456789abcdef → "),
        "{}",
        util::stdout(&out)
    );
    let out = util::run(&["resume", run_dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    std::fs::write(&journal, &text).unwrap();
    let out = util::run(&["resume", run_dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
}

/// `campaign ARGS`, killed if it has not exited within a generous cap (a hang is the failure
/// this guards against, so it must not hang the suite): the output, or `None` on a hang.
fn run_capped(args: &[&str]) -> Option<std::process::Output> {
    let child = util::campaign()
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(std::time::Duration::from_secs(120)) {
        Ok(out) => Some(out.unwrap()),
        Err(_) => {
            // SAFETY: kill(2) on our own hung child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            None
        }
    }
}

/// A journal that is a FIFO, a link to `/dev/zero` or holds a 20 MB line makes `status` and
/// `resume` refuse the run dir with a message naming the journal — never a hang or a read
/// without end (issue 31, item 2).
#[test]
fn a_journal_that_is_not_a_file_or_holds_a_monster_line_is_refused_without_hanging() {
    let tmp = util::tempdir();
    let (_, run_dir) = finished_run(tmp.path());
    let journal = run_dir.join("journal.jsonl");
    let kept = std::fs::read_to_string(&journal).unwrap();
    let dir = run_dir.to_str().unwrap();
    let check = |what: &str, commands: &[&str], expect: &str| {
        for cmd in commands {
            let out = run_capped(&[cmd, dir]).unwrap_or_else(|| panic!("{cmd} hung on {what}"));
            let err = util::stderr(&out);
            assert_ne!(out.status.code(), Some(0), "{cmd} on {what}: {err}");
            assert!(err.contains(expect), "{cmd} on {what}: {err}");
        }
    };

    std::fs::remove_file(&journal).unwrap();
    let c = std::ffi::CString::new(journal.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo on a NUL-terminated path we own.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    check("a FIFO", &["status"], "is a FIFO, not a regular file");
    check("a FIFO", &["resume"], "journal.jsonl");

    std::fs::remove_file(&journal).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &journal).unwrap();
    check("/dev/zero", &["status"], "is a device, not a regular file");
    check("/dev/zero", &["resume"], "is a symbolic link");

    std::fs::remove_file(&journal).unwrap();
    let last = kept.lines().last().unwrap();
    let monster = format!("{{\"x\":\"{}\"}}\n", "a".repeat(20 << 20));
    std::fs::write(&journal, format!("{kept}{monster}{last}\n")).unwrap();
    check(
        "a 20 MB line",
        &["status", "resume"],
        "campaign writes journal lines of at most",
    );
}

/// `report` (and `compare`, `history ingest`, which read run dirs the same way) never reads
/// through a link: a case folder replaced by a link to a folder outside the run dir is refused,
/// naming it (issue 31, item 2).
#[test]
fn report_refuses_a_case_folder_linked_outside_the_run_dir() {
    let tmp = util::tempdir();
    let (_, run_dir) = finished_run(tmp.path());
    let cases = run_dir.join("cases");
    let case = std::fs::read_dir(&cases)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let outside = tmp.path().join("outside_case");
    std::fs::rename(&case, &outside).unwrap();
    std::os::unix::fs::symlink(&outside, &case).unwrap();
    let out = run_capped(&["report", run_dir.to_str().unwrap()]).expect("report hung");
    let err = util::stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("is a symbolic link"), "{err}");
    // One level down: a bundle folder inside a real case folder, linked elsewhere.
    std::fs::remove_file(&case).unwrap();
    std::fs::rename(&outside, &case).unwrap();
    let bundle = case.join("host");
    let elsewhere = tmp.path().join("outside_bundle");
    std::fs::rename(&bundle, &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &bundle).unwrap();
    let out = run_capped(&["report", run_dir.to_str().unwrap()]).expect("report hung");
    let err = util::stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("host: is a symbolic link"), "{err}");
}

/// How many journal lines of `event` name the step `step`.
fn journal_lines(run_dir: &std::path::Path, event: &str, step: &str) -> usize {
    let text = std::fs::read_to_string(run_dir.join("journal.jsonl")).unwrap();
    (text.lines())
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["event"] == event && v["step"] == step)
        .count()
}

/// Issue 29, item 2: a finished run dir resumes from the journal alone. A bundle damaged after
/// its run finished — one whose `timing.json` is gone (a stat would see that), one whose
/// `manifest.json` no longer parses (only a read sees that) — is not looked at by a plain
/// resume; `campaign report` names the one that does not read back; `resume --verify` reads
/// every bundle, names both, and runs exactly those two runs again, once.
#[test]
fn a_bundle_damaged_after_the_fact_is_trusted_by_resume_and_caught_by_verify() {
    let tmp = util::tempdir();
    let (_, run_dir) = finished_run(tmp.path());
    let cases: Vec<String> = {
        let mut c: Vec<String> = std::fs::read_dir(run_dir.join("cases"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        c.sort();
        c
    };
    let (gone, garbled) = (&cases[0], &cases[1]);
    let bundle = |case: &str| run_dir.join("cases").join(case).join("host");
    let step = |case: &str| format!("run:{case}:host");
    std::fs::remove_file(bundle(gone).join("timing.json")).unwrap();
    std::fs::write(bundle(garbled).join("manifest.json"), "{\"case_id\": tor").unwrap();
    let results_at = || {
        std::fs::metadata(run_dir.join("results.json"))
            .unwrap()
            .modified()
            .unwrap()
    };
    let before = results_at();
    let resume = |extra: &[&str]| {
        let mut args = vec!["resume", run_dir.to_str().unwrap()];
        args.extend_from_slice(extra);
        let out = util::run(&args);
        let text = format!("{}{}", util::stdout(&out), util::stderr(&out));
        assert_eq!(out.status.code(), Some(0), "{text}");
        text
    };

    // Plain resume: the journal says both are done; nothing runs, nothing is rewritten.
    let text = resume(&[]);
    assert!(text.contains("2 done, 0 to run"), "{text}");
    assert!(
        text.contains("results files and report are up to date"),
        "{text}"
    );
    assert!(!bundle(gone).join("timing.json").exists(), "{text}");
    assert_eq!(results_at(), before, "results files rewritten");
    for case in [gone, garbled] {
        assert_eq!(journal_lines(&run_dir, "started", &step(case)), 1, "{text}");
    }

    // The report reads every bundle: the one that does not read back is named, nothing is
    // rewritten from a partial set.
    let out = util::run(&["report", run_dir.to_str().unwrap()]);
    let err = util::stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("{garbled}/host/manifest.json")),
        "{err}"
    );
    assert_eq!(results_at(), before, "results files rewritten");

    // --verify: both named, both run again exactly once, the rest kept.
    let text = resume(&["--verify"]);
    assert!(
        text.contains(&format!(
            "{}: finished in the journal with 2 samples but its bundle holds 0; it runs again",
            step(gone)
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "{}: finished in the journal but its bundle does not read back",
            step(garbled)
        )),
        "{text}"
    );
    assert!(text.contains("0 done, 2 to run"), "{text}");
    assert!(
        text.contains("verify: 2 runs of 2 done had a bundle that does not match the journal"),
        "{text}"
    );
    assert!(text.contains("2 runs: 2 pass"), "{text}");
    for case in [gone, garbled] {
        assert_eq!(journal_lines(&run_dir, "started", &step(case)), 2, "{text}");
        assert_eq!(
            journal_lines(&run_dir, "finished", &step(case)),
            2,
            "{text}"
        );
    }
    let samples: serde_json::Value =
        serde_json::from_slice(&std::fs::read(bundle(gone).join("timing.json")).unwrap()).unwrap();
    assert_eq!(samples.as_array().unwrap().len(), 2);

    // Whole again: --verify reads them back, finds nothing, and rewrites nothing; no run runs.
    let settled = results_at();
    let text = resume(&["--verify"]);
    assert!(
        text.contains(
            "verify: the bundles of all 2 runs done read back as the journal recorded them"
        ),
        "{text}"
    );
    assert!(
        text.contains("results files and report are up to date"),
        "{text}"
    );
    assert_eq!(results_at(), settled, "results files rewritten");
    for case in [gone, garbled] {
        assert_eq!(journal_lines(&run_dir, "started", &step(case)), 2, "{text}");
    }
}

/// `campaign report` reads every bundle anyway: one that reads back with another number of
/// samples than its `finished` line recorded is named, with what runs it again.
#[test]
fn report_names_a_bundle_holding_another_sample_count_than_the_journal() {
    let tmp = util::tempdir();
    let (_, run_dir) = finished_run(tmp.path());
    let case = first_case(&run_dir)
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let timing = run_dir.join("cases").join(&case).join("host/timing.json");
    let mut samples: Vec<serde_json::Value> =
        serde_json::from_slice(&std::fs::read(&timing).unwrap()).unwrap();
    samples.pop();
    std::fs::write(&timing, serde_json::to_vec(&samples).unwrap()).unwrap();
    let out = util::run(&["report", run_dir.to_str().unwrap()]);
    let err = util::stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!(
            "run {case} host finished with 2 samples in the journal but its bundle (cases/{case}/host) holds 1"
        )),
        "{err}"
    );
    assert!(err.contains("campaign resume --verify"), "{err}");
}

/// Issue 43, item 3: `--verify` finds bundles whose values changed, not only their counts (an
/// `execute_s` ×1000, a status flipped), names them and runs them again; a bundle read back with
/// a time no run can produce is read as failed, naming its file, never reported as a pass.
#[test]
fn verify_finds_edited_values_and_absurd_times_are_read_back_as_failed() {
    let tmp = util::tempdir();
    let (_, run_dir) = finished_run(tmp.path());
    let mut cases: Vec<String> = std::fs::read_dir(run_dir.join("cases"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    cases.sort();
    let bundle = |case: &str| run_dir.join("cases").join(case).join("host");
    // Every finished line names what its bundle holds.
    let journal = std::fs::read_to_string(run_dir.join("journal.jsonl")).unwrap();
    let finished: Vec<&str> = (journal.lines())
        .filter(|l| l.contains(r#""event":"finished""#) && l.contains(r#""step":"run:"#))
        .collect();
    assert!(!finished.is_empty());
    assert!(
        finished.iter().all(|l| l.contains(r#""content":""#)),
        "{journal}"
    );
    // Scale every execute_s of the first case by 1000 (same count); flip the second's status.
    let timing = bundle(&cases[0]).join("timing.json");
    let mut samples: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&timing).unwrap()).unwrap();
    for s in samples.as_array_mut().unwrap() {
        let x = s["execute_s"].as_f64().unwrap();
        s["execute_s"] = (x * 1000.0).into();
    }
    std::fs::write(&timing, samples.to_string()).unwrap();
    let manifest = bundle(&cases[1]).join("manifest.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let flipped = text.replacen(r#""status": "pass""#, r#""status": "fail""#, 1);
    assert_ne!(text, flipped, "{text}");
    std::fs::write(&manifest, flipped).unwrap();
    let out = util::run(&["resume", run_dir.to_str().unwrap(), "--verify"]);
    let said = format!("{}{}", util::stdout(&out), util::stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{said}");
    for case in &cases[..2] {
        assert!(
            said.contains(&format!(
                "run:{case}:host: its bundle (cases/{case}/host) no longer holds what the journal recorded"
            )),
            "{said}"
        );
    }
    assert!(
        !said.contains("read back as the journal recorded them"),
        "{said}"
    );
    // Run again: the bundles hold what a run wrote, and a second --verify vouches for them.
    let out = util::run(&["resume", run_dir.to_str().unwrap(), "--verify"]);
    let again = util::stdout(&out);
    assert!(!again.contains("no longer holds"), "{again}");
    // A negative time written into a passing bundle is read back as a failure naming the file.
    let mut samples: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&timing).unwrap()).unwrap();
    samples[0]["execute_s"] = (-1.0).into();
    std::fs::write(&timing, samples.to_string()).unwrap();
    let out = util::run(&["report", run_dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    let csv = std::fs::read_to_string(run_dir.join("results.csv")).unwrap();
    let row = csv.lines().find(|l| l.starts_with(&cases[0])).unwrap();
    assert!(
        row.contains(",fail,")
            && row.contains(&format!(
                "read back from cases/{}/host/timing.json: protocol error: round",
                cases[0]
            )),
        "{row}"
    );
}

/// Issue 43, item 7: `status` counts the runs the header's plan has; a `finished` line for a
/// run it does not have is said, not counted.
#[test]
fn status_counts_only_planned_runs() {
    let tmp = util::tempdir();
    let (_, run_dir) = finished_run(tmp.path());
    let status = || util::stdout(&util::run(&["status", run_dir.to_str().unwrap()]));
    let before = status();
    assert!(before.contains("runs: 2 (2 pass)"), "{before}");
    let journal = run_dir.join("journal.jsonl");
    let mut text = std::fs::read_to_string(&journal).unwrap();
    text.push_str(r#"{"t":"2026-12-06T00:00:00.000+00:00","event":"finished","step":"run:not_planned_case:host","attempt":1,"fingerprint":"0000000000000000","status":"pass","samples":2}"#);
    text.push('\n');
    std::fs::write(&journal, text).unwrap();
    let after = status();
    assert!(after.contains("runs: 2 (2 pass)"), "{after}");
    assert!(
        after.contains("journal: 1 line(s) name runs the header's plan does not have"),
        "{after}"
    );
}
