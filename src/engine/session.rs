//! Claiming the run dir a campaign writes into: a new one for `run`, the existing one for
//! `resume` — with its lock, its journal, and (resume) the decision of which runs are done.
//!
//! Owns the journal header's contents (campaign, plan hash, seed, planned steps, and the
//! command-line selection so a resume prepares the same runs), the frozen `plan.toml` written
//! before the journal exists, and turning `resume::plan` into engine terms: kept runs become
//! presets whose results come from their bundles, attempts continue from the journal. It must
//! not run anything or decide the resume rules themselves (`store::resume`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::engine::{work, Options, Prepared};
use crate::error::Result;
use crate::model::plan::ExecutorKind;
use crate::model::results::RunResult;
use crate::store::atomic::write_atomic;
use crate::store::journal;
use crate::store::journal::{Journal, Replay};
use crate::store::layout::RunDir;
use crate::store::lock::RunDirLock;

/// Most planned runs the journal header names one by one (`steps`); above, only `planned_runs`.
const HEADER_STEPS_MAX: usize = 10_000;

/// What `campaign resume` found and hands to the engine.
pub(crate) struct Resume {
    pub(crate) run_dir: PathBuf,
    /// Held for the whole session.
    pub(crate) lock: RunDirLock,
    pub(crate) journal: Journal,
    pub(crate) replay: Replay,
    pub(crate) retry_failed: bool,
}

/// A run dir ready to be written.
pub(crate) struct Claimed {
    pub(crate) run_dir: Arc<RunDir>,
    pub(crate) lock: RunDirLock,
    pub(crate) journal: Journal,
    /// Precomputed fingerprints (resume computes them all to decide).
    pub(crate) fingerprints: BTreeMap<usize, String>,
    /// Runs a resume keeps, with their results read back from their bundles.
    pub(crate) kept: BTreeMap<usize, RunResult>,
    /// Quarantines recorded by earlier sessions of this run dir.
    pub(crate) earlier_quarantine: BTreeMap<u32, String>,
    /// Runs this session executes or settles.
    pub(crate) pending: usize,
    /// Slurm: open runs whose journaled job this session re-attaches to (run → job id).
    pub(crate) reattach: BTreeMap<usize, u64>,
    /// Slurm: journaled jobs of open runs that run again instead (changed fingerprint, or a
    /// stack with one process per round): cancelled before anything starts, so two jobs never
    /// write one bundle.
    pub(crate) stale_jobs: Vec<u64>,
}

/// The command-line selection as the journal header keeps it. A relative `--cases` glob is
/// made absolute, so a resume from another folder finds the same files.
pub(crate) fn selection(opts: &Options) -> Value {
    let cases = opts.case_glob.as_ref().map(|g| {
        if Path::new(g).is_absolute() {
            g.clone()
        } else {
            std::env::current_dir()
                .map(|d| d.join(g).display().to_string())
                .unwrap_or_else(|_| g.clone())
        }
    });
    json!({"stacks": opts.stacks, "filter": opts.filter, "cases": cases, "repeats": opts.repeats})
}

fn executor_name(kind: ExecutorKind) -> &'static str {
    match kind {
        ExecutorKind::Local => "local",
        ExecutorKind::Slurm => "slurm",
    }
}

/// `opts` with the selection a journal header recorded (`stacks`, `filter`, `cases`).
pub(crate) fn with_selection(mut opts: Options, header: &Map<String, Value>) -> Options {
    let Some(sel) = header.get("selection") else {
        return opts;
    };
    if let Some(stacks) = sel.get("stacks").and_then(Value::as_array) {
        opts.stacks = stacks
            .iter()
            .filter_map(|s| s.as_str().map(str::to_string))
            .collect();
    }
    opts.filter = sel
        .get("filter")
        .and_then(Value::as_str)
        .map(str::to_string);
    opts.case_glob = sel.get("cases").and_then(Value::as_str).map(str::to_string);
    opts.repeats = sel.get("repeats").and_then(Value::as_u64).map(|n| n as u32);
    // A campaign started with `--executor slurm` resumes through Slurm (its jobs are there)
    // unless the command line says otherwise.
    if opts.executor.is_none() {
        opts.executor = match header.get("executor").and_then(Value::as_str) {
            Some("slurm") => Some(ExecutorKind::Slurm),
            Some("local") => Some(ExecutorKind::Local),
            _ => None,
        };
    }
    opts
}

/// A new run dir `<results>/<campaign>/run_<stamp>`, locked, with its frozen plan and a fresh
/// journal.
pub(crate) fn claim_new(prep: &Prepared, opts: &Options) -> Result<Claimed> {
    let results_dir = opts
        .results_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(crate::store::layout::DEFAULT_RESULTS_DIR));
    let campaign = &prep.plan.campaign.name;
    let stamp = chrono::Local::now().format("%Y%m%d_%H%M%S").to_string();
    let run_dir = Arc::new(RunDir::create(&results_dir, campaign, &stamp)?);
    println!("run dir: {}", run_dir.path.display());
    let lock = RunDirLock::acquire(&run_dir.path)?;
    // Frozen before the journal exists: a run dir with a journal can always be resumed.
    write_atomic(&run_dir.file("plan.toml"), prep.plan.text.as_bytes())?;
    // The header is one line: it names every planned run only for campaigns of a size a
    // person reads (`status` lists those not started); a larger one records the count, so a
    // million-run header does not hold every case in memory and on disk.
    let steps: Option<Vec<String>> = (prep.runs.len() <= HEADER_STEPS_MAX).then(|| {
        prep.runs
            .iter()
            .map(|r| journal::run_step(&r.case_id, &prep.stacks[r.stack].name))
            .collect()
    });
    let journal = Journal::create(
        &run_dir.path,
        json!({
            "campaign": campaign,
            "plan_hash": prep.plan.hash,
            // Where the plan was written: a resume reads the frozen copy but resolves its
            // relative paths (`[cases] files`, `[report] template`) from here.
            "plan_file": std::path::absolute(&prep.plan.source)
                .unwrap_or_else(|_| prep.plan.source.clone()),
            "seed": prep.seed,
            "campaign_version": env!("CARGO_PKG_VERSION"),
            "selection": selection(opts),
            "executor": executor_name(prep.executor),
            "steps": steps,
            "planned_runs": prep.runs.len(),
        }),
    )?;
    Ok(Claimed {
        run_dir,
        lock,
        journal,
        fingerprints: BTreeMap::new(),
        kept: BTreeMap::new(),
        earlier_quarantine: BTreeMap::new(),
        pending: prep.runs.len(),
        reattach: BTreeMap::new(),
        stale_jobs: Vec::new(),
    })
}

/// The existing run dir of `resume`: decide every planned run against the journal, print the
/// diff, and turn done runs into presets whose results come from their bundles. With `slurm`,
/// open runs with a journaled job continue that attempt by re-attaching to the job.
pub(crate) fn claim_resume(prep: &mut Prepared, resume: Resume, slurm: bool) -> Result<Claimed> {
    let Resume {
        run_dir,
        lock,
        mut journal,
        replay,
        retry_failed,
    } = resume;
    let run_dir = Arc::new(RunDir::open(&run_dir));
    // Before any device is leased again: whatever a killed session's runs left running.
    let reaped = reap_leftovers(&replay);
    let fingerprints: BTreeMap<usize, String> = prep
        .runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let (stack, case) = (&prep.stacks[r.stack], &prep.cases[r.case_index]);
            (i, work::fingerprint(&run_dir, &r.case_id, stack, case))
        })
        .collect();
    let planned: Vec<(String, String)> = prep
        .runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            (
                journal::run_step(&r.case_id, &prep.stacks[r.stack].name),
                fingerprints[&i].clone(),
            )
        })
        .collect();
    let mut decided = crate::store::resume::plan(&replay, &planned, retry_failed);
    let (loaded, unreadable) = crate::store::load::load_run_dir_tolerant(&run_dir.path)?;
    let mut bundles: BTreeMap<(String, String), RunResult> = (loaded.runs.into_iter())
        .map(|r| ((r.case_id.clone(), r.stack.clone()), r))
        .collect();
    // Bundles that do not read back, by (case folder, stack folder) — the planned ids.
    let mut unreadable: BTreeMap<(String, String), crate::error::Error> = (unreadable.into_iter())
        .filter_map(|(bundle, e)| {
            let name = |p: &std::path::Path| Some(p.file_name()?.to_str()?.to_string());
            Some(((name(bundle.parent()?)?, name(&bundle)?), e))
        })
        .collect();
    let done: BTreeSet<String> = decided.done.iter().cloned().collect();
    let mut kept = BTreeMap::new();
    let mut lost = BTreeSet::new();
    let mut reattach = BTreeMap::new();
    let mut stale_jobs = Vec::new();
    for (i, (key, fingerprint)) in planned.iter().enumerate() {
        prep.plans[i].first_attempt = replay.next_attempt(key);
        if let Some((state, job)) = replay
            .step(key)
            .filter(|s| s.is_interrupted())
            .and_then(|s| s.slurm_job.map(|j| (s, j)))
            .filter(|(s, j)| j.attempt == s.attempts)
        {
            let stack = &prep.stacks[prep.runs[i].stack];
            let same = state.fingerprint == *fingerprint;
            if slurm && same && stack.def.shape() == crate::model::stack::Shape::Campaign {
                prep.plans[i].first_attempt = job.attempt;
                reattach.insert(i, job.id);
            } else {
                stale_jobs.push(job.id);
            }
        }
        if !done.contains(key) {
            continue;
        }
        let r = &prep.runs[i];
        let id = (r.case_id.clone(), prep.stacks[r.stack].name.clone());
        // How many samples the journal's `finished` line says the bundle holds (older journals
        // do not say).
        let recorded = replay
            .step(key)
            .and_then(|s| s.last_finished.as_ref())
            .and_then(|f| f.fields.get("samples"))
            .and_then(serde_json::Value::as_u64);
        if let Some(e) = unreadable.remove(&id) {
            println!("{key}: finished in the journal but its bundle does not read back ({e}); it runs again");
            lost.insert(key.clone());
            continue;
        }
        match bundles.remove(&id) {
            Some(result) if recorded.is_some_and(|n| n != result.samples.len() as u64) => {
                println!(
                    "{key}: finished in the journal with {} samples but its bundle holds {}; it runs again",
                    recorded.unwrap_or_default(),
                    result.samples.len()
                );
                lost.insert(key.clone());
            }
            // A pass always has timed samples; none means timing.json did not survive (e.g. a
            // power loss after the manifest's rename reached disk but before the data did).
            Some(result)
                if result.status == crate::model::results::RunStatus::Pass
                    && !result.samples.iter().any(|s| s.is_timed()) =>
            {
                println!("{key}: finished pass in the journal but its bundle has no timed samples (timing.json missing or empty); it runs again");
                lost.insert(key.clone());
            }
            Some(result) => {
                let reason = result.error.clone().unwrap_or_default();
                prep.plans[i].preset = Some((result.status, reason));
                kept.insert(i, result);
            }
            None => {
                println!("{key}: finished in the journal but its bundle has no manifest.json; it runs again");
                lost.insert(key.clone());
            }
        }
    }
    if !lost.is_empty() {
        decided.done.retain(|k| !lost.contains(k));
        decided.to_run.extend(lost);
    }
    println!("run dir: {}", run_dir.path.display());
    println!("resume: {decided}");
    if !reattach.is_empty() {
        println!(
            "resume: re-attaching to {} Slurm job{} of the earlier session",
            reattach.len(),
            if reattach.len() == 1 { "" } else { "s" }
        );
    }
    if !slurm && !stale_jobs.is_empty() {
        let ids: Vec<String> = stale_jobs.iter().map(u64::to_string).collect();
        println!(
            "resume: runs of Slurm jobs {} run again locally; if those jobs are still queued or running, `scancel {}` stops them",
            ids.join(", "),
            ids.join(" ")
        );
    }
    let mut note = Map::new();
    note.insert("resume".into(), json!(true));
    note.insert("retry_failed".into(), json!(retry_failed));
    note.insert("diff".into(), json!(decided.to_string()));
    if !reaped.is_empty() {
        note.insert("reaped".into(), Value::Object(reaped));
    }
    journal.event("session", note)?;
    Ok(Claimed {
        run_dir,
        lock,
        journal,
        fingerprints,
        pending: prep.runs.len() - kept.len(),
        kept,
        earlier_quarantine: replay.quarantined.clone(),
        reattach,
        stale_jobs,
    })
}

/// Kill what the runs a dead session left open (`started` without `finished`) still have
/// running: every process of their journaled containment unit (`executor::unit::reap`). A run
/// handed to a Slurm job is Slurm's to stop. Says what it killed; returns step → pids for the
/// journal's `session` line.
fn reap_leftovers(replay: &crate::store::journal::Replay) -> Map<String, Value> {
    let mut steps = Vec::new();
    let mut units = Vec::new();
    for (step, state) in &replay.steps {
        let Some((unit, cgroup)) = state.unit.as_ref().filter(|_| state.is_interrupted()) else {
            continue;
        };
        if state.slurm_job.is_some_and(|j| j.attempt == state.attempts) {
            continue;
        }
        steps.push(step);
        units.push((unit.clone(), cgroup.as_ref().map(PathBuf::from)));
    }
    let mut out = Map::new();
    if units.is_empty() {
        return out;
    }
    for (step, killed) in steps.into_iter().zip(crate::executor::unit::reap(&units)) {
        if killed.is_empty() {
            continue;
        }
        let names: Vec<String> = killed
            .iter()
            .map(|k| format!("{} ({})", k.pid, k.comm))
            .collect();
        println!(
            "resume: killed {} process{} left running by {step} of the earlier session: {}",
            killed.len(),
            if killed.len() == 1 { "" } else { "es" },
            names.join(", ")
        );
        out.insert(
            step.clone(),
            json!(killed.iter().map(|k| k.pid).collect::<Vec<_>>()),
        );
    }
    out
}
