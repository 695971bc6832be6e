//! The README's promises: `campaign run` with no plan runs the built-in smoke campaign from any
//! working directory, and the documented exit codes hold for the basic CLI paths.

use crate::util::{run_in, stderr, stdout, tempdir};

#[test]
fn run_without_a_plan_runs_the_smoke_campaign_with_a_relative_results_dir() {
    let dir = tempdir();
    // No --results-dir: the default `results/campaigns` is relative to the working directory,
    // and stacks (which run inside their bundle dirs) must still find their case files.
    let out = run_in(dir.path(), &["run", "-q"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    let base = dir.path().join("results/campaigns/smoke");
    let runs: Vec<_> = std::fs::read_dir(&base).unwrap().flatten().collect();
    assert_eq!(runs.len(), 1);
    let run_dir = runs[0].path();
    assert!(
        stdout(&out).contains(run_dir.to_str().unwrap()),
        "run dir not printed: {}",
        stdout(&out)
    );
    let results: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("results.json")).unwrap()).unwrap();
    let rows = results["runs"].as_array().unwrap();
    // The smoke plan's 18 cases, each run 3 times by default ([run] repeats = 3).
    assert_eq!(rows.len(), 54);
    for r in 1..=3 {
        assert_eq!(
            rows.iter().filter(|row| row["repeat"] == r).count(),
            18,
            "{rows:?}"
        );
    }
    assert!(rows.iter().all(|r| r["correctness"] == "pass"), "{rows:?}");
    assert!(run_dir.join("reports/summary.md").is_file());
}

#[test]
fn help_exits_zero_and_unknown_subcommand_exits_two() {
    let dir = tempdir();
    let out = run_in(dir.path(), &["--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).contains("resume"));
    let out = run_in(dir.path(), &["frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("frobnicate"));
}

#[test]
fn the_plan_shown_in_the_readme_is_valid() {
    let readme = std::fs::read_to_string(crate::util::root().join("README.md")).unwrap();
    let start = readme.find("```toml\n").expect("README has a TOML plan") + "```toml\n".len();
    let len = readme[start..].find("```").unwrap();
    let dir = tempdir();
    let plan = dir.path().join("readme_plan.toml");
    std::fs::write(&plan, &readme[start..start + len]).unwrap();
    let out = run_in(dir.path(), &["validate", plan.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("ok: 20 cases"), "{}", stdout(&out));
}

#[test]
fn completions_for_each_shell_and_the_man_page_come_from_the_clap_definitions() {
    let dir = tempdir();
    for (shell, marker) in [
        ("bash", "complete -F _campaign"),
        ("zsh", "#compdef campaign"),
        ("fish", "complete -c campaign"),
    ] {
        let out = run_in(dir.path(), &["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}: {}", stderr(&out));
        let text = stdout(&out);
        assert!(text.contains(marker), "{shell}: {text}");
        for sub in ["dry-run", "resume", "validate", "completions"] {
            assert!(text.contains(sub), "{shell} completes {sub}");
        }
    }
    let out = run_in(dir.path(), &["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
    let out = run_in(dir.path(), &["man"]);
    assert_eq!(out.status.code(), Some(0));
    let page = stdout(&out);
    assert!(page.contains(".TH campaign 1"), "{page}");
    assert!(page.contains("dry\\-run"), "{page}");
}

#[test]
fn the_readme_install_step_is_the_one_the_test_script_checks() {
    let readme = std::fs::read_to_string(crate::util::root().join("README.md")).unwrap();
    let script = std::fs::read_to_string(crate::util::root().join("scripts/test.sh")).unwrap();
    assert!(
        readme.contains("cargo install --path ."),
        "README says how to get campaign on PATH"
    );
    assert!(
        script.contains("cargo install --path . ") && script.contains("campaign --version"),
        "scripts/test.sh exercises the install step"
    );
    for promise in [
        "SLURM_CONF",
        "scripts/slurm-down.sh",
        "7 minutes",
        "campaign completions",
    ] {
        assert!(readme.contains(promise), "README mentions {promise}");
    }
}
