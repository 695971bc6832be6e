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

    // `status --help` shows the run-dir layout this run made, and `status` reads it.
    let help = stdout(&run_in(dir.path(), &["status", "--help"]));
    let shown = help
        .split('`')
        .find(|s| s.starts_with("results/campaigns/"))
        .unwrap_or_else(|| panic!("status --help shows the run-dir layout: {help}"));
    let made = run_dir.strip_prefix(dir.path()).unwrap().to_str().unwrap();
    let parts: Vec<&str> = shown.split('/').collect();
    let real: Vec<&str> = made.split('/').collect();
    assert_eq!(parts.len(), real.len(), "{shown} vs {made}");
    for (p, r) in parts.iter().zip(&real) {
        // `<campaign>` stands for any name; `run_<timestamp>` for `run_` and anything.
        let literal = &p[..p.find('<').unwrap_or(p.len())];
        assert!(
            r.starts_with(literal),
            "status --help shows {shown}; the run made {made}"
        );
    }
    let out = run_in(dir.path(), &["status", made]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
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
    // The pages campaign(1) points at exist (issue 44, item 7): one per subcommand.
    let out = run_in(dir.path(), &["man", "history", "regressions"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let page = stdout(&out);
    assert!(
        page.contains(".TH campaign-history-regressions 1"),
        "{page}"
    );
    assert!(page.contains("max\\-contention"), "{page}");
    let pages = dir.path().join("man1");
    let out = run_in(dir.path(), &["man", "--dir", pages.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for name in [
        "campaign.1",
        "campaign-run.1",
        "campaign-resume.1",
        "campaign-history-trend.1",
    ] {
        let text = std::fs::read_to_string(pages.join(name)).unwrap();
        assert!(
            text.contains(".SH OPTIONS") || name == "campaign.1",
            "{name}: {text}"
        );
    }
    let out = run_in(dir.path(), &["man", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no subcommand `nope`"),
        "{}",
        stderr(&out)
    );
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

/// The README's `sh` block that installs the completions and the man page.
fn readme_block_with(needle: &str) -> String {
    let readme = std::fs::read_to_string(crate::util::root().join("README.md")).unwrap();
    readme
        .split("```sh\n")
        .skip(1)
        .map(|b| &b[..b.find("```").unwrap()])
        .find(|b| b.contains(needle))
        .unwrap_or_else(|| panic!("README has an sh block with {needle}"))
        .to_string()
}

#[test]
fn the_readme_completion_and_man_page_commands_work_as_written_on_a_clean_home() {
    let home = tempdir();
    let block = readme_block_with("campaign completions bash");
    let (path, have_man) = path_and_man();
    // Without `man` the block's last line cannot run; everything before it still must.
    let script = if have_man {
        block.clone()
    } else {
        eprintln!("skipping the `man -l` line: man is not installed");
        block
            .lines()
            .filter(|l| !l.trim_start().starts_with("man "))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let out = std::process::Command::new("sh")
        .args(["-ec", &script])
        .env("HOME", home.path())
        .env("PATH", &path)
        .env("MANPAGER", "cat")
        .env("PAGER", "cat")
        .env_remove("MANPATH")
        .current_dir(home.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "README block failed on a clean HOME:\n{block}\n{}{}",
        stdout(&out),
        stderr(&out)
    );
    let completion = home
        .path()
        .join(".local/share/bash-completion/completions/campaign");
    let text = std::fs::read_to_string(&completion).expect("completion file written");
    assert!(text.contains("complete -F _campaign"), "{text}");
    let page = home.path().join(".local/share/man/man1/campaign.1");
    assert!(std::fs::metadata(&page).unwrap().len() > 0);
    if !have_man {
        return;
    }
    assert!(
        stdout(&out).contains("dry-run"),
        "man -l rendered the page: {}",
        stdout(&out)
    );
    // The documented MANPATH makes `man campaign` find the page too.
    let readme = std::fs::read_to_string(crate::util::root().join("README.md")).unwrap();
    let manpath = "export MANPATH=\"$HOME/.local/share/man:\"";
    assert!(readme.contains(manpath), "README documents MANPATH");
    let out = std::process::Command::new("sh")
        .args(["-ec", &format!("{manpath}; man campaign")])
        .env("HOME", home.path())
        .env("PATH", &path)
        .env("MANPAGER", "cat")
        .env("PAGER", "cat")
        .output()
        .unwrap();
    assert!(
        out.status.success() && stdout(&out).contains("dry-run"),
        "MANPATH=… man campaign: {}{}",
        stdout(&out),
        stderr(&out)
    );
}

#[test]
fn dry_run_counts_the_smoke_plans_runs_as_run_makes_them() {
    // `campaign run` makes 54 runs of the smoke plan (the first test): dry-run says the same.
    let out = crate::util::run(&["dry-run", "plans/smoke.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let last = text.lines().last().unwrap();
    assert_eq!(last, "18 cases × 1 stack × 3 repeats = 54 runs", "{text}");
    let out = crate::util::run(&["dry-run", "plans/smoke.toml", "--repeats", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.ends_with("18 cases × 1 stack × 1 repeat = 18 runs\n"),
        "{text}"
    );
}

/// The subcommands a `--help` lists under `Commands:` (without `help`).
pub(crate) fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

#[test]
fn every_command_a_help_text_shows_runs_as_written_on_a_clean_home() {
    let home = tempdir();
    let (path, have_man) = path_and_man();
    // Every (sub)command path, one level of nesting deep (`history trend`, `bench collective`).
    let mut paths: Vec<Vec<String>> = vec![vec![]];
    let top = stdout(&run_in(home.path(), &["--help"]));
    for sub in subcommands(&top) {
        let mut args = vec![sub.clone(), "--help".to_string()];
        let help = stdout(&crate::util::campaign().args(&args).output().unwrap());
        args.pop();
        for nested in subcommands(&help) {
            paths.push(vec![sub.clone(), nested]);
        }
        paths.push(args);
    }
    assert!(paths.len() > 15, "{paths:?}");
    let mut ran = 0;
    for cmd in &paths {
        let mut args: Vec<&str> = cmd.iter().map(String::as_str).collect();
        args.push("--help");
        let out = run_in(home.path(), &args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        // clap wraps long lines at spaces: one space for every run of whitespace undoes it.
        let text = stdout(&out)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        for (i, span) in text.split('`').enumerate() {
            let runnable = span.starts_with("campaign ") || span.starts_with("mkdir ");
            if i % 2 == 0 || !runnable {
                continue;
            }
            if span.contains("man -l") && !have_man {
                eprintln!("skipping `{span}`: man is not installed");
                continue;
            }
            let out = std::process::Command::new("sh")
                .args(["-ec", span])
                .env("HOME", home.path())
                .env("PATH", &path)
                .env("MANPAGER", "cat")
                .env("PAGER", "cat")
                .current_dir(home.path())
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{args:?} shows `{span}`, which fails on a clean HOME: {}",
                stderr(&out)
            );
            ran += 1;
        }
    }
    // The completions and man-page examples, at least.
    assert!(ran >= 2, "ran {ran} help examples");
    assert!(home
        .path()
        .join(".local/share/bash-completion/completions/campaign")
        .is_file());
}

/// PATH with `campaign` on it, as the README's install step puts it there, and whether `man` is
/// installed here.
fn path_and_man() -> (String, bool) {
    let bin = crate::util::exe().parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let have_man = std::process::Command::new("sh")
        .args(["-c", "command -v man"])
        .output()
        .is_ok_and(|o| o.status.success());
    (path, have_man)
}
