//! One rule for exit codes, checked for every subcommand that reads a plan: a plan that is
//! missing, a directory, unreadable or not UTF-8 is bad input (exit 2, one message naming the
//! file); a `[filter]` or `--filter` that leaves no case is exit 2 too, and no run dir is made.

use std::path::Path;

use crate::util::{run_in, stderr, tempdir};

const PLAN: &str = "[campaign]\nname = \"codes\"\n[case]\nplatform = \"host\"\n[axes]\nvariant = [\"mesh\"]\np = [2]\ncount = [64]\n[rounds]\nwarmup = 0\ntimed = 1\n";

/// Every subcommand that takes a plan, as argv with the plan path last-but-options.
fn commands(plan: &str, out: &str) -> Vec<Vec<String>> {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    vec![
        s(&["validate", plan]),
        s(&["dry-run", plan]),
        s(&["cases", plan, "--out", out]),
        s(&["doctor", plan]),
        s(&["run", plan, "-q", "--results-dir", out]),
        s(&["resume", plan, "--results-dir", out]),
    ]
}

fn assert_bad_input(cwd: &Path, plan: &str, why: &str) {
    let out_dir = cwd.join("out");
    for argv in commands(plan, out_dir.to_str().unwrap()) {
        let args: Vec<&str> = argv.iter().map(String::as_str).collect();
        let o = run_in(cwd, &args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{argv:?} on {why}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(
            err.contains(plan),
            "{argv:?}: the message names the plan: {err}"
        );
        assert!(
            !out_dir.exists() || std::fs::read_dir(&out_dir).unwrap().next().is_none(),
            "{argv:?} on {why} wrote something"
        );
    }
}

#[test]
fn a_missing_directory_or_non_utf8_plan_is_exit_2_for_every_subcommand() {
    let tmp = tempdir();
    assert_bad_input(tmp.path(), "nope.toml", "a missing plan");
    std::fs::create_dir(tmp.path().join("dir.toml")).unwrap();
    assert_bad_input(tmp.path(), "dir.toml", "a directory");
    std::fs::write(
        tmp.path().join("latin1.toml"),
        b"[campaign]\nname = \"caf\xe9\"\n",
    )
    .unwrap();
    assert_bad_input(tmp.path(), "latin1.toml", "a non-UTF-8 plan");
    let o = run_in(tmp.path(), &["validate", "latin1.toml"]);
    assert!(stderr(&o).contains("not UTF-8"), "{}", stderr(&o));
    let o = run_in(tmp.path(), &["dry-run", "dir.toml"]);
    assert!(stderr(&o).contains("is a directory"), "{}", stderr(&o));
}

#[test]
fn a_filter_that_leaves_nothing_is_exit_2_everywhere_and_makes_no_run_dir() {
    let tmp = tempdir();
    let results = tmp.path().join("results");
    let res = results.to_str().unwrap();
    std::fs::write(tmp.path().join("p.toml"), PLAN).unwrap();
    for args in [
        vec![
            "run",
            "p.toml",
            "-q",
            "--filter",
            "false",
            "--results-dir",
            res,
        ],
        vec!["dry-run", "p.toml", "--filter", "false"],
        vec!["dry-run", "p.toml", "--filter", "count > 1000"],
    ] {
        let o = run_in(tmp.path(), &args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("leaves no case of the plan"),
            "{args:?}: {err}"
        );
    }
    assert!(
        !results.exists(),
        "no run dir for a filter that leaves nothing"
    );

    // The same filter written in the plan: the same code from every subcommand.
    std::fs::write(
        tmp.path().join("f.toml"),
        format!("{PLAN}[filter]\nwhere = \"false\"\n"),
    )
    .unwrap();
    let out = tmp.path().join("cases");
    for args in [
        vec!["validate", "f.toml"],
        vec!["dry-run", "f.toml"],
        vec!["cases", "f.toml", "--out", out.to_str().unwrap()],
        vec!["run", "f.toml", "-q", "--results-dir", res],
    ] {
        let o = run_in(tmp.path(), &args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("the plan makes no cases"), "{args:?}: {err}");
    }
    assert!(
        !results.exists(),
        "no run dir for a plan that makes no case"
    );
}

/// `run PLAN -q --results-dir <cwd>/results` in `cwd`.
/// The one run dir of the `codes` campaign under `cwd/results`.
fn only_run_dir(cwd: &Path) -> std::path::PathBuf {
    std::fs::read_dir(cwd.join("results/codes"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
}

fn run_quiet(cwd: &Path, plan: &Path) -> std::process::Output {
    let results = cwd.join("results");
    run_in(
        cwd,
        &[
            "run",
            plan.to_str().unwrap(),
            "-q",
            "--results-dir",
            results.to_str().unwrap(),
        ],
    )
}

/// A campaign that measured nothing is not a success: every run skipped (a stack constraint
/// no case meets) or every run unavailable (a stack whose program does not exist) exits 5 and
/// says so; the results files still record every run with its reason.
#[test]
fn a_campaign_that_ran_nothing_exits_5() {
    let tmp = tempdir();
    let extra = [
        ("skipped", "stacks = [\"host\"]\n[stacks.host]\nwhere = [\"p == 99\"]\n"),
        (
            "unavailable",
            "stacks = [\"gone\"]\n[stacks.gone]\ncommand = [\"/nonexistent/campaign-stack\"]\nrequires = [\"/nonexistent/campaign-stack\"]\n",
        ),
    ];
    for (status, tail) in extra {
        let plan = tmp.path().join(format!("{status}.toml"));
        let (axis, tables) = tail.split_once('\n').unwrap();
        let text = PLAN.replace("count = [64]\n", &format!("count = [64]\n{axis}\n")) + tables;
        std::fs::write(&plan, text).unwrap();
        let o = run_quiet(tmp.path(), &plan);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(5), "{status}: {err}");
        assert!(err.contains("nothing was run"), "{err}");
        let stdout = crate::util::stdout(&o);
        assert!(
            stdout.contains(&format!("3 {status}")),
            "{status}: {stdout}"
        );
    }
}

/// `campaign … | head`, a closed stdout or a full disk for stdout never panic: the command does
/// its work and exits with the code that work earns (a campaign's results are on disk).
#[test]
fn a_closed_or_full_stdout_never_panics() {
    use std::process::{Command, Stdio};
    let tmp = tempdir();
    let plan = tmp.path().join("out.toml");
    std::fs::write(&plan, PLAN).unwrap();
    let plan = plan.to_str().unwrap().to_string();
    let results = tmp.path().join("results");
    let results = results.to_str().unwrap().to_string();
    // One finished run dir first, for the commands that read one.
    let first = run_quiet(tmp.path(), Path::new(&plan));
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let run_dir = only_run_dir(tmp.path());
    let run_dir = run_dir.to_str().unwrap().to_string();
    let runs: Vec<Vec<&str>> = vec![
        vec!["run", &plan, "--results-dir", &results],
        vec!["run", &plan, "-q", "--results-dir", &results],
        vec!["resume", &run_dir],
        vec!["status", &run_dir],
        vec!["report", &run_dir],
        vec!["compare", &run_dir, &run_dir],
        vec!["dry-run", &plan],
        vec!["validate", &plan],
        vec!["doctor", &plan],
        vec!["history", "list", "--results-dir", &results],
        vec!["man"],
        vec!["completions", "bash"],
        vec!["--help"],
    ];
    for sink in ["closed", "full"] {
        for args in &runs {
            let mut c = Command::new(crate::util::exe());
            c.current_dir(tmp.path()).args(args).stderr(Stdio::piped());
            let out = if sink == "closed" {
                c.stdout(Stdio::piped());
                let mut child = c.spawn().unwrap();
                // The reader is gone before the first line: every write fails with EPIPE.
                drop(child.stdout.take());
                child.wait_with_output().unwrap()
            } else {
                c.stdout(
                    std::fs::OpenOptions::new()
                        .write(true)
                        .open("/dev/full")
                        .unwrap(),
                );
                c.output().unwrap()
            };
            let err = stderr(&out);
            assert!(
                !err.contains("panicked"),
                "{args:?} on a {sink} stdout: {err}"
            );
            let code = out.status.code();
            // A listing that cannot be written is an I/O failure (4) that names stdout; a
            // campaign's own work is on disk and unaffected (0); a comparison of one repeat
            // judges nothing (7), whatever stdout is.
            let expected = code == Some(0)
                || (args[0] == "compare" && code == Some(7) && err.contains("nothing judged"))
                || (sink == "full"
                    && code == Some(4)
                    && err.contains("stdout")
                    && !matches!(args[0], "run" | "resume"));
            assert!(
                expected,
                "{args:?} on a {sink} stdout: exit {code:?}: {err}"
            );
        }
    }
}

/// A report that fails (a template that renders in `validate`'s preview but not on this
/// campaign's results) costs no recorded result: the results files hold every run, the failure
/// is said on stderr even under `-q`, and the exit code is 6.
#[test]
fn a_failed_report_is_said_and_exits_6_with_every_run_recorded() {
    let tmp = tempdir();
    std::fs::write(
        tmp.path().join("bad.md.j2"),
        "{% if totals.runs == 2 %}{{ nope.x }}{% endif %}\n",
    )
    .unwrap();
    let plan = tmp.path().join("badreport.toml");
    std::fs::write(
        &plan,
        format!("{PLAN}[run]\nrepeats = 2\n[report]\ntemplate = \"bad.md.j2\"\n"),
    )
    .unwrap();
    let o = run_quiet(tmp.path(), &plan);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(6), "{err}");
    assert!(
        err.contains("the report step failed") && err.contains("campaign report"),
        "{err}"
    );
    let run_dir = only_run_dir(tmp.path());
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("results.json")).unwrap())
            .unwrap();
    assert_eq!(doc["runs"].as_array().unwrap().len(), 2, "{doc}");
}

/// A stack that floods sample lines is a failed run with the reason, not a campaign that grows
/// without bound: only the first samples are read; every line stays in run.log.
#[test]
fn a_stack_flooding_samples_fails_its_run_with_the_reason() {
    let tmp = tempdir();
    let stack = tmp.path().join("flood.sh");
    std::fs::write(
        &stack,
        "#!/bin/sh\ni=0\nwhile [ $i -lt 5000 ]; do echo 'CAMPAIGN_SAMPLE {\"phase\":\"timed\",\"execute_s\":0.001,\"ok\":true}'; i=$((i+1)); done\n\
         echo 'CAMPAIGN_DONE {\"correctness\":\"pass\"}'\n",
    )
    .unwrap();
    std::fs::set_permissions(&stack, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let plan = tmp.path().join("flood.toml");
    let text = PLAN.replace("count = [64]\n", "count = [64]\nstacks = [\"flood\"]\n")
        + &format!(
            "[run]\nrepeats = 1\n[stacks.flood]\ncommand = [\"{}\"]\nresource = \"none\"\n",
            stack.display()
        );
    std::fs::write(&plan, text).unwrap();
    let o = run_quiet(tmp.path(), &plan);
    let out = crate::util::stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{}", stderr(&o));
    assert!(
        out.contains("printed 5000 CAMPAIGN_SAMPLE lines where this process runs 1 round(s)"),
        "{out}"
    );
    let run_dir = only_run_dir(tmp.path());
    let log = std::fs::read_dir(run_dir.join("cases"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
        .join("flood/run.log");
    let lines = std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("CAMPAIGN_SAMPLE"))
        .count();
    assert_eq!(lines, 5000, "run.log keeps every line");
}

/// Nothing a plan says reaches a shell unquoted, on either backend: a case field full of shell
/// syntax, rendered into a shell-string command, an argv stack's arguments and env values and
/// (under Slurm) the job script, is only ever text — no marker file appears, and the stack sees
/// the value byte for byte.
#[test]
fn hostile_values_in_templates_never_run_on_any_backend() {
    let tmp = tempdir();
    let marker = tmp.path().join("PWNED");
    let hostile = format!(
        "$(touch {m})`touch {m}`;touch {m}|touch {m}&&touch {m} '\\\"",
        m = marker.display()
    );
    let seen = tmp.path().join("seen.txt");
    let record = tmp.path().join("record.sh");
    std::fs::write(
        &record,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$1\" \"$V\" >> {}\n\
             echo 'CAMPAIGN_SAMPLE {{\"phase\":\"timed\",\"execute_s\":0.001,\"ok\":true}}'\n\
             echo 'CAMPAIGN_DONE {{\"correctness\":\"pass\"}}'\n",
            seen.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&record, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let runtime = toml::Value::String(hostile.clone()).to_string();
    let plan = tmp.path().join("hostile.toml");
    let text = PLAN.replace("platform = \"host\"\n", &format!("platform = \"host\"\nruntime = {runtime}\n"))
        .replace("count = [64]\n", "count = [64]\nstacks = [\"shell\", \"argv\"]\n")
        + &format!(
            "[run]\nrepeats = 1\n[devices]\nkind = \"cpu\"\n\
             [stacks.shell]\nshell = true\ncommand = \"{r} {{{{ case.runtime }}}}\"\nenv = {{ V = \"{{{{ case.runtime }}}}\" }}\nresource = \"none\"\n\
             [stacks.argv]\ncommand = [\"{r}\", \"{{{{ case.runtime }}}}\"]\nenv = {{ V = \"{{{{ case.runtime }}}}\" }}\nresource = \"none\"\n",
            r = record.display()
        );
    std::fs::write(&plan, text).unwrap();
    let mut backends = vec![("local", Vec::<String>::new(), None)];
    if let Some(conf) = crate::slurm::cluster() {
        backends.push((
            "slurm",
            vec!["--executor".into(), "slurm".into()],
            Some(conf),
        ));
    }
    for (name, extra, conf) in backends {
        let _ = std::fs::remove_file(&seen);
        let results = tmp.path().join(format!("results-{name}"));
        let mut c = crate::util::campaign();
        c.current_dir(tmp.path())
            .args([
                "run",
                plan.to_str().unwrap(),
                "-q",
                "--results-dir",
                results.to_str().unwrap(),
            ])
            .args(&extra);
        if let Some(conf) = &conf {
            c.env("SLURM_CONF", conf);
        }
        let o = c.output().unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{name}: {}{}",
            crate::util::stdout(&o),
            stderr(&o)
        );
        assert!(
            !marker.exists(),
            "{name}: a templated value ran as a command"
        );
        let lines: Vec<String> = std::fs::read_to_string(&seen)
            .unwrap()
            .lines()
            .map(String::from)
            .collect();
        assert_eq!(lines.len(), 4, "{name}: {lines:?}");
        assert!(
            lines.iter().all(|l| *l == hostile),
            "{name}: the stack saw {lines:?}"
        );
    }
}

/// A report template that cannot render is refused before anything runs: `validate` and `run`
/// exit 2 naming the template and its line, and `run` makes no run dir (issue 31, item 4).
#[test]
fn a_report_template_that_cannot_render_is_refused_before_any_run() {
    let tmp = tempdir();
    std::fs::write(
        tmp.path().join("bad.md.j2"),
        "# {{ title }}\n{{ nope.x }}\n",
    )
    .unwrap();
    let plan = tmp.path().join("badreport.toml");
    std::fs::write(&plan, format!("{PLAN}[report]\ntemplate = \"bad.md.j2\"\n")).unwrap();
    let o = run_in(tmp.path(), &["validate", plan.to_str().unwrap()]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("bad.md.j2:2") && err.contains("undefined"),
        "{err}"
    );
    let o = run_quiet(tmp.path(), &plan);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("bad.md.j2:2"), "{err}");
    assert!(!tmp.path().join("results").exists(), "a run dir was made");
}
