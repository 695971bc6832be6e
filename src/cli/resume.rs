//! `campaign resume RUN_DIR | PLAN`: find the run dir, take its lock, reopen its journal
//! (repairing a torn last line), load the frozen plan with the selection the journal header
//! recorded, and hand the rest to the engine (`engine::resume`), which prints what will run. Glue: the rules are in
//! `store::resume`, the journal in `store::journal`, the running in `engine`.

use std::path::{Path, PathBuf};

use crate::cli::args::ResumeArgs;
use crate::engine;
use crate::error::{Error, Result};
use crate::store::journal;
use crate::store::journal::Journal;
use crate::store::lock::RunDirLock;

pub(crate) fn run(args: &ResumeArgs) -> Result<i32> {
    if args.exec.jobs == Some(0) {
        return Err(Error::Usage("--jobs must be at least 1".into()));
    }
    crate::engine::interrupt::listen_during_preparation();
    let run_dir = locate(&args.target, args.exec.results_dir.as_deref())?;
    let lock = RunDirLock::acquire(&run_dir)?;
    let plan_path = run_dir.join("plan.toml");
    if !plan_path.is_file() {
        return Err(Error::invalid(
            &plan_path,
            "the run dir has no frozen plan.toml, so it cannot be resumed (was it written by `campaign run`?)",
        ));
    }
    // Reading results.csv (is the run dir already up to date?) goes on while the journal is
    // replayed and the plan prepared, on another core.
    let results_check =
        (args.exec.template.is_none()).then(|| crate::store::results_check::start(&run_dir));
    // Reopening cuts off a torn last line (a crash mid-write) so new lines start clean.
    let journal = Journal::open(&run_dir)?;
    if let Some(torn) = journal.repaired() {
        crate::tell!("journal: {torn}; removed it before continuing");
    }
    // The journal is replayed on a thread of its own while the frozen plan is loaded and
    // prepared here: those need only the header.
    let mut replaying = Some({
        let path = journal.path().to_path_buf();
        std::thread::spawn(move || journal::replay(&path))
    });
    let mut joined = || {
        (replaying.take())
            .expect("the replay is joined once")
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    };
    let (header, replayed) = match journal::header(journal.path()) {
        Some(header) => (header, None),
        // No header on the first line: whatever the replay makes of that (usually the error
        // naming the line).
        None => {
            let replay = joined()?;
            (replay.header.clone(), Some(replay))
        }
    };
    let prepared = prepare_from_header(args, &plan_path, &header);
    // The journal's problems first (as when it was replayed before the plan was read).
    let replay = match replayed {
        Some(replay) => replay,
        None => joined()?,
    };
    let (prepared, opts, after) = prepared?;
    let state = engine::session::Resume {
        run_dir,
        lock,
        journal,
        replay,
        retry_failed: args.retry_failed,
        rerender_report: args.exec.template.is_some(),
        verify: args.verify,
        results_check,
        plan_edited: args.plan_edited,
    };
    let done = engine::resume(prepared, &opts, after, state)?;
    super::run::conclude(&done, opts.quiet)
}

/// A prepared resume: the runs, the session's options and the steps after `collect`.
type Session = (
    engine::Prepared,
    engine::Options,
    Vec<(String, engine::AfterStep)>,
);

/// The frozen plan loaded with what the journal `header` recorded (executor, seed, selection)
/// and prepared; the options and after-steps of the session.
fn prepare_from_header(
    args: &ResumeArgs,
    plan_path: &Path,
    header: &serde_json::Map<String, serde_json::Value>,
) -> Result<Session> {
    // The executor the campaign ran with (the command line's wins): under Slurm the local
    // device pool does not bound the cases.
    let executor = args.exec.executor.or_else(|| {
        (header.get("executor").and_then(|e| e.as_str())).and_then(crate::executor::kind_named)
    });
    let mut plan = load_frozen_plan(plan_path, header, executor)?;
    // Same seed, same stack order as the first session.
    if plan.run.seed.is_none() {
        plan.run.seed = header.get("seed").and_then(serde_json::Value::as_u64);
    }
    let journal = plan_path.with_file_name("journal.jsonl");
    let opts =
        engine::session::with_selection(super::run::exec_options(&args.exec), header, &journal)?;
    let after = engine::report_step::report_step(
        &plan,
        args.exec.template.clone(),
        args.exec.results_dir.clone(),
    );
    let prepared = engine::prepare(plan, &opts)?;
    Ok((prepared, opts, after))
}

/// The frozen `plan.toml`, read as if it still lived where it was written (the journal header's
/// `plan_file`), so relative `[cases] files` globs and templates mean what they meant for `run`.
/// Problems are reported against the frozen copy, the file the user would edit. The first
/// session's `--repeats` (the header's selection) counts, as it did for `run`'s run limit; a
/// value out of range is left to `engine::session::with_selection`, which names it.
pub(crate) fn load_frozen_plan(
    frozen: &Path,
    header: &serde_json::Map<String, serde_json::Value>,
    executor: Option<crate::model::plan::ExecutorKind>,
) -> Result<crate::model::plan::Plan> {
    let repeats = (header.get("selection"))
        .and_then(|sel| sel.get("repeats"))
        .and_then(serde_json::Value::as_u64)
        .filter(|n| (1..=crate::plan::MAX_REPEATS).contains(n))
        .map(|n| n as u32);
    // The first session's `--budget`, in seconds (absent in older headers).
    let budget = (header.get("selection"))
        .and_then(|sel| sel.get("budget_s"))
        .and_then(serde_json::Value::as_f64)
        .filter(|s| s.is_finite() && *s > 0.0 && *s < 1e9)
        .map(std::time::Duration::from_secs_f64);
    let cli = crate::plan::Overrides {
        executor,
        repeats,
        budget,
    };
    let Some(origin) = header.get("plan_file").and_then(serde_json::Value::as_str) else {
        return crate::plan::load_with(frozen, cli);
    };
    let text = crate::plan::read_text(frozen)?;
    crate::plan::parse_with(&text, Path::new(origin), cli).map_err(|e| match e {
        Error::Invalid(diags) => Error::Invalid(
            diags
                .into_iter()
                .map(|mut d| {
                    if d.file == Path::new(origin) {
                        d.file = frozen.to_path_buf();
                    }
                    d
                })
                .collect(),
        ),
        other => other,
    })
}

/// The run dir `target` names: a run dir (has `journal.jsonl`), a campaign folder (its newest
/// run dir), or a plan file (the newest run dir of its campaign under the results dir).
pub(crate) fn locate(target: &Path, results_dir: Option<&Path>) -> Result<PathBuf> {
    if target.is_dir() {
        // Anything named journal.jsonl makes it a run dir: a journal that is a link, a FIFO or
        // a device is then refused with what it is (`store::lock`, `model::file`).
        if std::fs::symlink_metadata(target.join(journal::FILE_NAME)).is_ok() {
            return Ok(target.to_path_buf());
        }
        return newest_run_dir(target).ok_or_else(|| {
            Error::Usage(format!(
                "{} is neither a run dir (no {}) nor a campaign folder with run_* dirs",
                target.display(),
                journal::FILE_NAME
            ))
        });
    }
    if !target.is_file() {
        return Err(Error::Usage(format!(
            "{}: no such run dir or plan",
            target.display()
        )));
    }
    let name = campaign_name(target)?;
    let root = crate::store::layout::results_dir(results_dir);
    let folder = root.join(&name);
    newest_run_dir(&folder).ok_or_else(|| {
        Error::Usage(format!(
            "campaign `{name}` has no run dir under {} to resume; start one with `campaign run {}`",
            folder.display(),
            target.display()
        ))
    })
}

/// `run_<YYYYmmdd_HHMMSS>` names sort by time; the newest with a journal wins.
fn newest_run_dir(folder: &Path) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(folder)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("run_"))
                && p.join(journal::FILE_NAME).is_file()
        })
        .collect();
    dirs.sort();
    dirs.pop()
}

/// `[campaign] name` of a plan file, read without validating the rest (resume validates the
/// frozen copy).
fn campaign_name(plan: &Path) -> Result<String> {
    let text = crate::plan::read_text(plan)?;
    let table: toml::Table = toml::from_str(&text)
        .map_err(|e| Error::invalid(plan, format!("not a TOML plan: {}", e.message())))?;
    table
        .get("campaign")
        .and_then(|c| c.get("name"))
        .and_then(|n| n.as_str())
        .map(str::to_string)
        .ok_or_else(|| {
            Error::Invalid(vec![crate::error::Diagnostic {
                file: plan.to_path_buf(),
                line: None,
                column: None,
                field: Some("campaign.name".into()),
                message: "missing; resume finds run dirs by campaign name".into(),
                snippet: None,
            }])
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_dir(root: &Path, campaign: &str, stamp: &str) -> PathBuf {
        let d = root.join(campaign).join(format!("run_{stamp}"));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join(journal::FILE_NAME),
            "{\"journal\":\"campaign\",\"version\":1}\n",
        )
        .unwrap();
        d
    }

    #[test]
    fn a_plan_resolves_to_the_newest_run_dir_of_its_campaign() {
        let tmp = tempfile::tempdir().unwrap();
        let results = tmp.path().join("results");
        run_dir(&results, "scaling", "20260101_090000");
        let newest = run_dir(&results, "scaling", "20260102_080000");
        run_dir(&results, "other", "20270101_000000");
        // A newer folder without a journal is not a run dir.
        std::fs::create_dir_all(results.join("scaling/run_20260103_000000")).unwrap();
        let plan = tmp.path().join("plan.toml");
        std::fs::write(&plan, "[campaign]\nname = \"scaling\"\n").unwrap();
        assert_eq!(locate(&plan, Some(&results)).unwrap(), newest);
        assert_eq!(locate(&newest, None).unwrap(), newest);
        assert_eq!(locate(&results.join("scaling"), None).unwrap(), newest);
    }

    #[test]
    fn missing_targets_say_what_to_do() {
        let tmp = tempfile::tempdir().unwrap();
        let plan = tmp.path().join("plan.toml");
        std::fs::write(&plan, "[campaign]\nname = \"fresh\"\n").unwrap();
        let err = locate(&plan, Some(tmp.path())).unwrap_err().to_string();
        assert!(err.contains("campaign `fresh` has no run dir"), "{err}");
        assert!(err.contains("campaign run"), "{err}");
        let err = locate(&tmp.path().join("nope"), None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("no such run dir or plan"), "{err}");
        std::fs::write(&plan, "[campaign]\ndescription = \"x\"\n").unwrap();
        let err = locate(&plan, None).unwrap_err().to_string();
        assert!(err.contains("campaign.name: missing"), "{err}");
        let err = locate(tmp.path(), None).unwrap_err().to_string();
        assert!(err.contains("neither a run dir"), "{err}");
    }
}
