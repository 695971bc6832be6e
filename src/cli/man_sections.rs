//! What the man pages say beyond clap's definitions: per (sub)command, the files it reads and
//! writes and a few example command lines — the FILES and EXAMPLES sections `cli::man_page`
//! renders. Written once here, per command path; a unit test holds every path clap knows to
//! an entry and parses every example with the real definitions, so a page cannot name an option
//! that does not exist.

/// A file or folder a command reads or writes, and what it is to that command.
pub(crate) type FileEntry = (&'static str, &'static str);

/// What one command's page adds: its files and examples (each example a command line that
/// parses, then what it does).
pub(crate) struct Extras {
    pub(crate) files: &'static [FileEntry],
    pub(crate) examples: &'static [(&'static str, &'static str)],
}

const RUN_DIR: FileEntry = (
    "results/campaigns/CAMPAIGN/run_YYYYmmdd_HHMMSS/",
    "the run dir (--results-dir DIR replaces results/campaigns); a second run in the same \
     second gets _2",
);
const PLAN_COPY: FileEntry = (
    "RUN_DIR/plan.toml, RUN_DIR/stacks.json",
    "the frozen plan and the resolved stack definitions",
);
const JOURNAL: FileEntry = (
    "RUN_DIR/journal.jsonl",
    "one header line, then a started and a finished line per step; what resume reads",
);
const LOCK: FileEntry = (
    "RUN_DIR/.lock",
    "held while a run or resume works on the dir; a second one exits 4",
);
const BUNDLES: FileEntry = (
    "RUN_DIR/cases/CASE_ID/STACK/",
    "one bundle per run: case.json (one level up), run.log (raw stdout and stderr, whole), \
     timing.json (the samples), manifest.json (status, reason, argv, env, exit code, devices)",
);
const BUILD_LOGS: FileEntry = (
    "RUN_DIR/builds/STACK/build.log",
    "each stack's build output",
);
const RESULTS: FileEntry = (
    "RUN_DIR/results.json, results.csv, samples.csv",
    "one row per run (seed schema) and one row per timed round",
);
const REPORTS: FileEntry = (
    "RUN_DIR/reports/summary.md, index.html, context.json",
    "the report in Markdown, as one self-contained HTML page, and the values its template saw",
);
const FIGURES: FileEntry = (
    "RUN_DIR/figures/FIGURE.png, .svg, .hover.json",
    "the report's figures and their hover values",
);
const HISTORY: FileEntry = (
    "results/history.sqlite",
    "the performance history of the results dir (DIR/history.sqlite with --results-dir DIR)",
);
const HISTORY_READ: FileEntry = (
    "results/history.sqlite",
    "the performance history read (DIR/history.sqlite with --results-dir DIR); never written",
);
const PLAN_READ: FileEntry = ("PLAN", "the plan (TOML, docs/plan-format.md)");
const STDOUT_ONLY: FileEntry = ("(none)", "writes only to standard output");

/// The files of a campaign that runs: `run`, `resume`, `census`.
const CAMPAIGN_FILES: &[FileEntry] = &[
    PLAN_READ, RUN_DIR, PLAN_COPY, JOURNAL, LOCK, BUNDLES, BUILD_LOGS, RESULTS, REPORTS, FIGURES,
    HISTORY,
];

/// The extras of the command at `path` (`[]`: campaign itself; `["history", "trend"]`).
pub(crate) fn extras(path: &[&str]) -> Option<&'static Extras> {
    PAGES.iter().find(|(p, _)| *p == path).map(|(_, e)| e)
}

/// Every command path with its extras, in `--help` order.
pub(crate) const PAGES: &[(&[&str], Extras)] = &[
    (
        &[],
        Extras {
            files: CAMPAIGN_FILES,
            examples: &[
                ("campaign run", "run the built-in smoke plan on this machine's CPUs"),
                ("campaign run plans/collectives.toml", "every op on the host and mpi stacks"),
                ("campaign man --dir man1", "write this page and one per subcommand"),
            ],
        },
    ),
    (
        &["run"],
        Extras {
            files: CAMPAIGN_FILES,
            examples: &[
                ("campaign run plans/strong_scaling.toml", "run a plan"),
                ("campaign run plans/host_vs_mpi.toml --stacks host --repeats 1", "one stack, a quick look"),
                ("campaign run plans/collectives.toml --exclusive", "one run at a time, for the quietest timings"),
                ("campaign run plans/smoke.toml --executor slurm", "submit every run to Slurm"),
            ],
        },
    ),
    (
        &["resume"],
        Extras {
            files: &[
                RUN_DIR, PLAN_COPY, JOURNAL, LOCK, BUNDLES, BUILD_LOGS, RESULTS, REPORTS, FIGURES,
                HISTORY,
            ],
            examples: &[
                ("campaign resume results/campaigns/smoke/run_20261207_021500", "continue that run dir"),
                ("campaign resume plans/smoke.toml --retry-failed", "the plan's newest run dir, its failed runs again"),
                ("campaign resume plans/smoke.toml --verify", "read every done bundle back first"),
            ],
        },
    ),
    (
        &["dry-run"],
        Extras {
            files: &[PLAN_READ, STDOUT_ONLY],
            examples: &[
                ("campaign dry-run plans/smoke.toml", "the schedule and the run count"),
                ("campaign dry-run plans/smoke.toml --format json", "one JSON record per run"),
                ("campaign dry-run plans/smoke.toml --executor slurm", "the sbatch commands"),
            ],
        },
    ),
    (
        &["validate"],
        Extras {
            files: &[
                ("FILE.toml, FILE.json", "the plans and seed case files checked; nothing is written"),
            ],
            examples: &[("campaign validate plans/smoke.toml plans/collectives.toml", "check two plans")],
        },
    ),
    (
        &["cases"],
        Extras {
            files: &[PLAN_READ, ("OUT/CASE_ID.json", "one seed-format case file per case; files whose content is unchanged are not rewritten")],
            examples: &[
                ("campaign cases plans/smoke.toml --out cases/smoke", "write the case files"),
                ("campaign cases plans/smoke.toml --out cases/smoke --dry-run", "say what would change"),
            ],
        },
    ),
    (
        &["status"],
        Extras {
            files: &[JOURNAL, BUNDLES, ("RUN_DIR/.lock", "read to say whether a campaign is working on the dir")],
            examples: &[("campaign status results/campaigns/smoke/run_20261207_021500", "counts, failures and what is left")],
        },
    ),
    (
        &["report"],
        Extras {
            files: &[
                BUNDLES, RESULTS, REPORTS, FIGURES,
                ("RUN_DIR/reports/.report-stamp, .bootstrap-memo", "proof of what was rendered, and remembered bootstrap intervals"),
                HISTORY,
            ],
            examples: &[
                ("campaign report results/campaigns/smoke/run_20261207_021500", "render the report again"),
                ("campaign report old_harness_results --template my_report.md.j2", "a report of the old harness's results in your own template"),
            ],
        },
    ),
    (
        &["compare"],
        Extras {
            files: &[
                ("A/, B/", "the two run dirs' results (campaign's or the old harness's)"),
                HISTORY_READ,
            ],
            examples: &[
                ("campaign compare results/campaigns/smoke/run_A results/campaigns/smoke/run_B", "a Markdown table of changes"),
                ("campaign compare before after --format junit", "JUnit XML for CI"),
                ("campaign compare before after --threshold 3%", "a narrower noise band"),
            ],
        },
    ),
    (
        &["calibrate"],
        Extras {
            files: &[
                PLAN_READ,
                ("results/campaigns/NAME-calibration/run_YYYYmmdd_HHMMSS/", "a run dir as run writes one, for the plan's campaign name with -calibration"),
                ("RUN_DIR/calibration.json", "the noise per size class"),
                ("results/history.sqlite", "where the calibration is kept, under this machine's key"),
            ],
            examples: &[("campaign calibrate plans/smoke.toml --repeats 10", "measure this machine's noise")],
        },
    ),
    (
        &["doctor"],
        Extras {
            files: &[
                ("PLAN", "the plan whose stacks are checked, when one is given (default: the shipped stack definitions)"),
                ("stack roots", "each stack's install tree, as its definition and environment name it; read, never written"),
                STDOUT_ONLY,
            ],
            examples: &[
                ("campaign doctor", "which stacks can run here"),
                ("campaign doctor --require mpi", "exit 1 unless the mpi stack is ready"),
                ("campaign doctor --contract", "check each present stack against its upstream program"),
            ],
        },
    ),
    (
        &["census"],
        Extras {
            files: &[
                RUN_DIR, JOURNAL, LOCK, BUNDLES, RESULTS, REPORTS,
                ("RUN_DIR/figures/census_busbw, census_latency", "the P × P bus bandwidth and latency heatmaps"),
                HISTORY,
            ],
            examples: &[("campaign census --devices 0-3 --stack host", "every pair of four CPU slots")],
        },
    ),
    (
        &["bench"],
        Extras {
            files: &[("$CAMPAIGN_CASE_FILE", "the seed case file a built-in benchmark runs"), STDOUT_ONLY],
            examples: &[("campaign bench collective --case-file cases/smoke/CASE_ID.json", "one case, native protocol lines")],
        },
    ),
    (
        &["bench", "collective"],
        Extras {
            files: &[("FILE (--case-file, default $CAMPAIGN_CASE_FILE)", "the seed case file run"), STDOUT_ONLY],
            examples: &[
                ("campaign bench collective --case-file cases/smoke/CASE_ID.json", "one case, native protocol lines"),
                ("campaign bench collective --case-file case.json --check every", "the golden check on every round"),
            ],
        },
    ),
    (
        &["history"],
        Extras {
            files: &[HISTORY],
            examples: &[
                ("campaign history list", "campaigns and run dirs in the store"),
                ("campaign history regressions --format junit", "change points, JUnit XML for CI"),
            ],
        },
    ),
    (
        &["history", "ingest"],
        Extras {
            files: &[("RUN_DIR...", "the run dirs recorded (campaign's or the old harness's)"), HISTORY],
            examples: &[("campaign history ingest results/campaigns/smoke/run_20261207_021500", "record one run dir")],
        },
    ),
    (
        &["history", "list"],
        Extras {
            files: &[HISTORY_READ],
            examples: &[("campaign history list --format json", "every campaign and run dir, as JSON")],
        },
    ),
    (
        &["history", "show"],
        Extras {
            files: &[HISTORY_READ],
            examples: &[("campaign history show --case mesh_p2_* --stack host", "every point of matching series")],
        },
    ),
    (
        &["history", "trend"],
        Extras {
            files: &[HISTORY_READ, ("FILE.png, FILE.svg, FILE.html", "the figure written (--out)")],
            examples: &[
                ("campaign history trend --stack host --out trend.svg", "the host series over time"),
                ("campaign history trend --out trend.html", "one page of every series"),
            ],
        },
    ),
    (
        &["history", "regressions"],
        Extras {
            files: &[HISTORY_READ],
            examples: &[
                ("campaign history regressions", "change points per series; exit 1 on a current regression"),
                ("campaign history regressions --since 2026-12-01 --format summary", "recent steps, a CI job summary"),
            ],
        },
    ),
    (
        &["completions"],
        Extras {
            files: &[STDOUT_ONLY],
            examples: &[("campaign completions bash", "the bash completion script (loaded by the bash-completion package)")],
        },
    ),
    (
        &["man"],
        Extras {
            files: &[("DIR/campaign.1, DIR/campaign-SUBCOMMAND.1", "with --dir: every page; without it, one page on standard output")],
            examples: &[
                ("campaign man run", "campaign-run(1) on standard output"),
                ("campaign man --dir man1", "every page into man1/"),
            ],
        },
    ),
];

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use clap::Parser;

    use super::*;
    use crate::cli::args::Cli;

    fn paths(cmd: &clap::Command, path: Vec<String>, out: &mut Vec<Vec<String>>) {
        out.push(path.clone());
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            let mut p = path.clone();
            p.push(sub.get_name().to_string());
            paths(sub, p, out);
        }
    }

    #[test]
    fn every_command_has_files_and_examples_and_every_entry_is_a_command() {
        let mut all = Vec::new();
        paths(
            &Cli::command().disable_help_subcommand(true),
            vec![],
            &mut all,
        );
        for path in &all {
            let p: Vec<&str> = path.iter().map(String::as_str).collect();
            let e = extras(&p).unwrap_or_else(|| panic!("no man extras for {p:?}"));
            assert!(!e.files.is_empty() && !e.examples.is_empty(), "{p:?}");
        }
        for (p, _) in PAGES {
            assert!(all.iter().any(|a| a == p), "extras for no command: {p:?}");
        }
    }

    #[test]
    fn every_example_parses_with_the_real_definitions_and_runs_its_own_command() {
        for (path, e) in PAGES {
            for (line, _) in e.examples {
                let words: Vec<&str> = line.split_whitespace().collect();
                assert_eq!(words[0], "campaign", "{line}");
                assert_eq!(
                    &words[1..=path.len()],
                    *path,
                    "{line} is on {path:?}'s page"
                );
                if let Err(err) = Cli::try_parse_from(&words) {
                    panic!("{line}: {err}");
                }
            }
        }
    }
}
