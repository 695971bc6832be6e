//! `campaign man`: a full page per (sub)command — NAME, SYNOPSIS, OPTIONS, EXIT STATUS with
//! every documented code, FILES, EXAMPLES — that `man` renders without a warning (issue 44,
//! item 7).

use crate::util::{run_in, stderr, stdout, tempdir};

/// Every (sub)command path `--help` shows, as `campaign-<path>.1` page names.
fn page_names() -> Vec<String> {
    let dir = tempdir();
    let mut names = vec!["campaign.1".to_string()];
    let top = stdout(&run_in(dir.path(), &["--help"]));
    for sub in crate::readme::subcommands(&top) {
        names.push(format!("campaign-{sub}.1"));
        let help = stdout(&run_in(dir.path(), &[&sub, "--help"]));
        for nested in crate::readme::subcommands(&help) {
            names.push(format!("campaign-{sub}-{nested}.1"));
        }
    }
    names.sort();
    names
}

/// The codes of the README's "Exit codes" table.
fn readme_codes() -> Vec<String> {
    let readme = std::fs::read_to_string(crate::util::root().join("README.md")).unwrap();
    let table = readme
        .split("## Exit codes")
        .nth(1)
        .expect("README has Exit codes");
    table
        .lines()
        .filter_map(|l| l.strip_prefix("| "))
        .filter_map(|l| l.split(" |").next())
        .filter(|c| c.chars().all(|ch| ch.is_ascii_digit()) && !c.is_empty())
        .map(str::to_string)
        .collect()
}

/// The text of section `name` of a roff page (up to the next `.SH`).
fn section<'a>(page: &'a str, name: &str) -> Option<&'a str> {
    let quoted = format!(".SH \"{name}\"\n");
    let plain = format!(".SH {name}\n");
    let start = page
        .find(&quoted)
        .map(|i| i + quoted.len())
        .or_else(|| page.find(&plain).map(|i| i + plain.len()))?;
    let rest = &page[start..];
    Some(&rest[..rest.find("\n.SH ").map_or(rest.len(), |i| i + 1)])
}

#[test]
fn every_subcommand_has_a_full_page_with_exit_status_and_files() {
    let dir = tempdir();
    let pages = dir.path().join("man1");
    let out = run_in(dir.path(), &["man", "--dir", pages.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let mut written: Vec<String> = std::fs::read_dir(&pages)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    written.sort();
    let want = page_names();
    assert!(want.len() > 15, "{want:?}");
    assert_eq!(written, want, "one page per (sub)command, no other file");
    let codes = readme_codes();
    assert_eq!(
        codes,
        ["0", "1", "2", "3", "4", "5", "6", "7"],
        "README's table"
    );
    for name in &written {
        let page = std::fs::read_to_string(pages.join(name)).unwrap();
        for s in [
            "NAME",
            "SYNOPSIS",
            "OPTIONS",
            "EXIT STATUS",
            "FILES",
            "EXAMPLES",
        ] {
            assert!(
                section(&page, s).is_some(),
                "{name} has no {s} section:\n{page}"
            );
        }
        let exit = section(&page, "EXIT STATUS").unwrap();
        let listed: Vec<&str> = exit
            .lines()
            .filter_map(|l| l.strip_prefix("\\fB")?.strip_suffix("\\fR"))
            .collect();
        assert_eq!(
            listed, codes,
            "{name}: every documented code, in order:\n{exit}"
        );
        let examples = section(&page, "EXAMPLES").unwrap();
        let command = name.trim_end_matches(".1").replace('-', " ");
        let command = command.replace("dry run", "dry-run");
        assert!(
            examples.contains(&format!("\\fB{}", command.replace('-', "\\-"))),
            "{name}'s examples run its own command:\n{examples}"
        );
    }
    // `campaign man run` prints the same page `--dir` wrote.
    let out = run_in(dir.path(), &["man", "run"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let run_page = std::fs::read_to_string(pages.join("campaign-run.1")).unwrap();
    assert_eq!(stdout(&out), run_page);
    let files = section(&run_page, "FILES").unwrap();
    for f in [
        "journal.jsonl",
        "results.json",
        "history.sqlite",
        "summary.md",
    ] {
        assert!(
            files.contains(f),
            "campaign-run(1) FILES names {f}:\n{files}"
        );
    }
}

#[test]
fn man_renders_every_page_without_a_warning() {
    let have_man = std::process::Command::new("sh")
        .args(["-c", "command -v man"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !have_man {
        eprintln!("skipping: man is not installed");
        return;
    }
    let dir = tempdir();
    let pages = dir.path().join("man1");
    let out = run_in(dir.path(), &["man", "--dir", pages.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for name in page_names() {
        let out = std::process::Command::new("man")
            .args(["--warnings", "-l"])
            .arg(pages.join(&name))
            .env("MANPAGER", "cat")
            .env("PAGER", "cat")
            .env("MANWIDTH", "80")
            .output()
            .unwrap();
        assert!(out.status.success(), "man -l {name}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "man warns about {name}");
        let text = stdout(&out);
        assert!(
            text.contains("EXIT STATUS") && text.contains("FILES"),
            "{name}:\n{text}"
        );
    }
}
