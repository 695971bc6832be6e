//! The small things a newcomer meets in the first hour (issue 15's "smaller" items), each as the
//! user sees it: help text for every argument, `-q` saying where the run dir is once, `run`
//! showing the plan warnings `validate` shows (and the shipped plans showing none), no `.lock`
//! left in a finished run dir (and a stale one blocking nothing), `bench allreduce` answering a
//! person at a terminal, and the report naming its plan by one absolute path.

use std::path::{Path, PathBuf};

use crate::util::{exe, root, run, run_in, stderr, stdout, tempdir};

/// A ring case over 3 ranks: 64 is not divisible by 3, so chunks are uneven.
fn uneven_plan(name: &str, allow: &str) -> String {
    format!(
        "[campaign]\nname = \"{name}\"\n{allow}\n[case]\nplatform = \"host\"\n[axes]\nvariant = [\"ring\"]\np = [3]\ncount = [64]\n[rounds]\nwarmup = 0\ntimed = 1\n[run]\ntimeout = \"60s\"\nrepeats = 1\n"
    )
}

/// The one run dir under `results` (`<results>/<campaign>/run_*`).
fn only_run_dir(results: &Path) -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(results)
        .unwrap()
        .map(|c| c.unwrap().path())
        .filter(|c| c.is_dir())
        .flat_map(|c| std::fs::read_dir(c).unwrap())
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs.pop().unwrap()
}

fn warnings(text: &str) -> Vec<&str> {
    text.lines().filter(|l| l.starts_with("warning:")).collect()
}

/// The warnings about the plan itself, without the one about this machine's CPUs (whether a
/// plan oversubscribes depends on where it runs; `plan::a_plan_whose_p_exceeds…` tests it).
fn plan_warnings(text: &str) -> Vec<&str> {
    warnings(text)
        .into_iter()
        .filter(|l| !l.contains("runs oversubscribe this machine"))
        .collect()
}

#[test]
fn help_of_each_subcommand_explains_its_run_dirs_and_template() {
    for (args, needles) in [
        (
            &["status", "--help"][..],
            &["<RUN_DIR>", "A campaign run dir"][..],
        ),
        (
            &["report", "--help"],
            &["<RUN_DIR>", "--template <FILE>", "Report template"],
        ),
        (&["resume", "--help"], &["<TARGET>", "A run dir, or a plan"]),
        (
            &["compare", "--help"],
            &[
                "<RUN_A>",
                "The baseline run dir",
                "<RUN_B>",
                "compared against the baseline",
                "Output format",
            ],
        ),
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(0), "{args:?}");
        let text = stdout(&o);
        for n in needles {
            assert!(text.contains(n), "{args:?} lacks {n:?}:\n{text}");
        }
    }
}

#[test]
fn quiet_run_names_the_run_dir_once_and_leaves_no_lock() {
    let tmp = tempdir();
    std::fs::write(tmp.path().join("p.toml"), uneven_plan("quiet", "")).unwrap();
    let o = run_in(tmp.path(), &["run", "p.toml", "-q", "--results-dir", "r"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(out.matches("run dir:").count(), 1, "{out}");
    assert!(out.contains("1 runs: 1 pass"), "{out}");
    let dir = only_run_dir(&tmp.path().join("r"));
    assert!(dir.join("journal.jsonl").is_file());
    assert!(
        !dir.join(".lock").exists(),
        "a finished run dir keeps no .lock"
    );
}

#[test]
fn run_prints_the_warnings_validate_prints() {
    let tmp = tempdir();
    std::fs::write(tmp.path().join("p.toml"), uneven_plan("warned", "")).unwrap();
    let v = run_in(tmp.path(), &["validate", "p.toml"]);
    assert_eq!(v.status.code(), Some(0), "{}", stderr(&v));
    let shown = stderr(&v);
    let expected = plan_warnings(&shown);
    assert_eq!(expected.len(), 1, "{shown}");
    assert!(expected[0].contains("not divisible by p 3"), "{shown}");
    assert!(
        expected[0].contains("[campaign] allow = [\"uneven-chunks\"]"),
        "{shown}"
    );
    let r = run_in(tmp.path(), &["run", "p.toml", "-q", "--results-dir", "r"]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    assert_eq!(plan_warnings(&stderr(&r)), expected, "run hides a warning");
    // The machine's warning, when there is one, is the same at validate and run.
    assert_eq!(warnings(&stderr(&r)), warnings(&shown), "{shown}");
}

#[test]
fn deliberate_uneven_counts_are_allowed_by_name_and_the_shipped_plans_warn_about_nothing() {
    let tmp = tempdir();
    let allowed = uneven_plan("allowed", "allow = [\"uneven-chunks\"]");
    std::fs::write(tmp.path().join("ok.toml"), allowed).unwrap();
    let o = run_in(tmp.path(), &["validate", "ok.toml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        plan_warnings(&stderr(&o)),
        Vec::<&str>::new(),
        "an allowed warning is not printed"
    );

    let typo = uneven_plan("typo", "allow = [\"uneven-chunk\"]");
    std::fs::write(tmp.path().join("typo.toml"), typo).unwrap();
    let o = run_in(tmp.path(), &["validate", "typo.toml"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("typo.toml:3:"), "{err}");
    assert!(err.contains("campaign.allow[0]"), "{err}");
    assert!(err.contains("expected one of: uneven-chunks"), "{err}");

    let mut plans: Vec<String> = std::fs::read_dir(root().join("plans"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| p.display().to_string())
        .collect();
    plans.sort();
    assert!(plans.len() >= 5, "{plans:?}");
    let mut args = vec!["validate"];
    args.extend(plans.iter().map(String::as_str));
    let o = run(&args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        plan_warnings(&stderr(&o)),
        Vec::<&str>::new(),
        "validate plans/*.toml warns"
    );
    // Nothing but warnings: a line that is not one would be a stray message.
    assert_eq!(stderr(&o).lines().count(), warnings(&stderr(&o)).len());
}

#[test]
fn a_stale_lock_of_a_killed_campaign_does_not_block_resume() {
    let tmp = tempdir();
    std::fs::write(tmp.path().join("p.toml"), uneven_plan("stale", "")).unwrap();
    let o = run_in(tmp.path(), &["run", "p.toml", "-q", "--results-dir", "r"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let dir = only_run_dir(&tmp.path().join("r"));
    // What a SIGKILLed session leaves behind: its identity in the file, and no flock.
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    std::fs::write(
        dir.join(".lock"),
        format!(
            "pid={dead}\nhost={}\nstarted=2026-01-01T00:00:00\n",
            host.trim()
        ),
    )
    .unwrap();
    let o = run_in(tmp.path(), &["resume", dir.to_str().unwrap(), "-q"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stderr(&o).contains("in use"), "{}", stderr(&o));
    assert!(!dir.join(".lock").exists(), "resume leaves no .lock");
}

#[test]
fn bench_prints_a_human_summary_at_a_terminal_and_only_the_protocol_elsewhere() {
    let tmp = tempdir();
    let case = tmp.path().join("case.json");
    std::fs::write(
        &case,
        r#"{"variant":"ring","p":2,"count":4096,"dtype":"fp32","warmup_rounds":1,"timed_rounds":3}"#,
    )
    .unwrap();
    let argv = |c: &mut std::process::Command| {
        c.args(["bench", "allreduce", "--case-file"])
            .arg(&case)
            .env_remove("CAMPAIGN_CASE_FILE");
    };
    // Off a terminal (the engine's pipe): the protocol lines and nothing else.
    let mut c = std::process::Command::new(exe());
    argv(&mut c);
    let o = c.output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
    assert!(stdout(&o)
        .lines()
        .all(|l| l.starts_with("CAMPAIGN_SAMPLE ") || l.starts_with("CAMPAIGN_DONE ")));
    // At a terminal: `script` gives the command a pseudo-terminal for stdout and stderr.
    let line = format!(
        "{} bench allreduce --case-file {}",
        exe().display(),
        case.display()
    );
    let o = std::process::Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .env_remove("CAMPAIGN_CASE_FILE")
        .output()
        .expect("script(1) from util-linux");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("CAMPAIGN_DONE "), "{text}");
    assert!(text.contains("3 timed rounds, all correct"), "{text}");
    assert!(text.contains("execute  median "), "{text}");
    assert!(text.contains(" at the median  (algbw "), "{text}");
    assert!(text.contains("16 KiB over p = 2"), "{text}");
}

#[test]
fn the_report_names_its_plan_by_its_file_name_after_run_and_report() {
    let tmp = tempdir();
    std::fs::create_dir(tmp.path().join("plans")).unwrap();
    std::fs::write(tmp.path().join("plans/p.toml"), uneven_plan("paths", "")).unwrap();
    let o = run_in(
        tmp.path(),
        &["run", "plans/p.toml", "-q", "--results-dir", "r"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let dir = only_run_dir(&tmp.path().join("r"));
    // Not where one person kept it (a home folder in a shared report): its name, and the run
    // dir's copy as it ran. results.json keeps the absolute path.
    let row = "| plan | `p.toml` (hash `";
    let summary = || std::fs::read_to_string(dir.join("reports/summary.md")).unwrap();
    assert!(summary().contains(row), "after run:\n{}", summary());
    assert!(summary().contains("as it ran: the run dir's `plan.toml`"));
    let absolute = std::fs::canonicalize(tmp.path().join("plans/p.toml")).unwrap();
    let results = std::fs::read_to_string(dir.join("results.json")).unwrap();
    assert!(results.contains(&format!("{:?}", absolute.display().to_string())));
    // Re-rendered from elsewhere: the same name.
    std::fs::remove_file(dir.join("reports/summary.md")).unwrap();
    let o = run_in(Path::new("/"), &["report", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(summary().contains(row), "after report:\n{}", summary());
}
