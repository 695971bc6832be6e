//! Claiming the run dir a campaign writes into: a new one for `run`, the existing one for
//! `resume` — with its lock, its journal, and (resume) the decision of which runs are done.
//!
//! Owns the journal header's contents (campaign, plan hash, seed, planned steps, and the
//! command-line selection so a resume prepares the same runs), the frozen `plan.toml` written
//! before the journal exists, and turning `resume::plan` into engine terms: kept runs become
//! presets whose results come from their bundles, attempts continue from the journal. It must
//! not run anything or decide the resume rules themselves (`store::resume`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::engine::{work, Options, Prepared};
use crate::error::Result;
use crate::executor::JobRef;
use crate::model::results::RunResult;
use crate::model::results::RunStatus;
use crate::store::atomic::write_atomic;
use crate::store::fingerprint::HashWriter;
use crate::store::journal;
use crate::store::journal::{Journal, Replay, StepState};
use crate::store::layout::RunDir;
use crate::store::lock::RunDirLock;

/// Most planned runs the journal header names one by one (`steps`); above, only `planned_runs`.
const HEADER_STEPS_MAX: usize = 10_000;

/// Journal field (header, and each resume's `session` line) holding [`fingerprint_context`].
const CONTEXT_FIELD: &str = "fingerprint_context";

/// A hash of everything a run's fingerprint (`work::fingerprint`) is computed from, for every
/// planned run at once: each run's case id, stack and case; each stack's definition and resolved
/// root; the run dir's path; and the campaign binary (it renders the commands). Two sessions with
/// the same context compute the same fingerprint for every run, so a resume whose context equals
/// the one every earlier session recorded takes each journaled run's fingerprint from the
/// journal instead of rendering its command again — the costliest part of deciding a large
/// resume. Serialized straight into the hash: no per-run allocation.
fn fingerprint_context(prep: &Prepared, run_dir: &Path) -> String {
    use sha2::Digest;
    fn put<T: serde::Serialize + ?Sized>(w: &mut HashWriter, v: &T) {
        // Writing into a hash cannot fail; a value that cannot serialize adds nothing, the same
        // in every session.
        let _ = serde_json::to_writer(&mut *w, v);
        w.0.update(b"\n");
    }
    let mut w = HashWriter(sha2::Sha256::new());
    put(&mut w, &run_dir.display().to_string());
    let exe = std::env::current_exe().map(|p| p.display().to_string());
    put(&mut w, &exe.unwrap_or_default());
    for stack in &prep.stacks {
        put(&mut w, &stack.name);
        put(&mut w, &stack.def);
        put(&mut w, &format!("{:?}", stack.root));
    }
    for run in &prep.runs {
        put(&mut w, &run.case_id);
        put(&mut w, &run.stack);
        put(&mut w, &prep.cases[run.case_index]);
    }
    crate::model::digest::hex_prefix(&w.0.finalize(), 16)
}

/// The context the journal's run fingerprints were all computed in: the latest resume's
/// `session` line's (a resume records its context only when every journaled fingerprint agrees
/// with it), else the header's when no resume came yet. A session line without one (the
/// journal disagreed, or an older campaign wrote it) means none.
fn recorded_context(replay: &Replay) -> Option<&str> {
    match replay.events.get("session") {
        None => replay.header.get(CONTEXT_FIELD)?.as_str(),
        Some(session) => session.get(CONTEXT_FIELD)?.as_str(),
    }
}

/// What `campaign resume` found and hands to the engine.
pub(crate) struct Resume {
    pub(crate) run_dir: PathBuf,
    /// Held for the whole session.
    pub(crate) lock: RunDirLock,
    pub(crate) journal: Journal,
    pub(crate) replay: Replay,
    pub(crate) retry_failed: bool,
    /// The report is rendered again even when it is up to date (`resume --template`: a
    /// template the report was not made with).
    pub(crate) rerender_report: bool,
    /// `resume --verify`: every done run's bundle is read back even when the journal and the
    /// results files agree; one that does not read back as its `finished` line says runs again.
    pub(crate) verify: bool,
    /// The check of the results files against the bundles, started before the journal was
    /// replayed (`store::results_check`); none with `rerender_report`.
    pub(crate) results_check: Option<crate::store::results_check::Check>,
    /// `resume --plan-edited`: the frozen plan's hash may differ from the journal's.
    pub(crate) plan_edited: bool,
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
    /// Decisions of sequential repeats earlier sessions journaled (replayed, not retaken).
    pub(crate) decisions: Vec<(String, u32, Option<String>)>,
    /// The latest `census` line an earlier session journaled (replayed, not judged again).
    pub(crate) census_line: Option<serde_json::Map<String, Value>>,
    /// Runs this session executes or settles.
    pub(crate) pending: usize,
    /// Open runs whose journaled job this session re-attaches to (run → job).
    pub(crate) reattach: BTreeMap<usize, JobRef>,
    /// Journaled jobs of open runs that run again instead (changed fingerprint, or a backend
    /// that cannot re-attach them): the backend stops them before anything starts, so two jobs
    /// never write one bundle.
    pub(crate) stale_jobs: Vec<JobRef>,
    /// Resume found every planned run done and the results files and report already showing
    /// exactly them: how the campaign ended, tallied from the journal; nothing is executed,
    /// rewritten or rendered.
    pub(crate) settled: Option<crate::engine::finished::Finished>,
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
    let budget = opts.budget.map(|b| b.as_secs_f64());
    json!({"stacks": opts.stacks, "filter": opts.filter, "cases": cases, "repeats": opts.repeats, "budget_s": budget})
}

/// `opts` with the selection a journal header recorded (`stacks`, `filter`, `cases`).
pub(crate) fn with_selection(
    mut opts: Options,
    header: &Map<String, Value>,
    journal: &Path,
) -> Result<Options> {
    let Some(sel) = header.get("selection") else {
        return Ok(opts);
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
    // A hostile or damaged header must not shrink what is planned (a `repeats` of 0 or 2^32
    // would drop every repeat but one from the results files).
    opts.repeats = match sel.get("repeats") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_u64().filter(|n| (1..=crate::plan::MAX_REPEATS).contains(n)) {
            Some(n) => Some(n as u32),
            None => {
                return Err(crate::error::Error::invalid(
                    journal,
                    format!(
                        "line 1 (the header): selection.repeats = {v}, expected null or an integer between 1 and {}",
                        crate::plan::MAX_REPEATS
                    ),
                ))
            }
        },
    };
    // A campaign resumes through the backend it started with (its jobs are there) unless the
    // command line says otherwise.
    if opts.executor.is_none() {
        opts.executor =
            (header.get("executor").and_then(Value::as_str)).and_then(crate::executor::kind_named);
    }
    Ok(opts)
}

/// A new run dir `<results>/<campaign>/run_<stamp>`, locked, with its frozen plan and a fresh
/// journal.
pub(crate) fn claim_new(prep: &Prepared, opts: &Options) -> Result<Claimed> {
    let results_dir = crate::store::layout::results_dir(opts.results_dir.as_deref());
    let campaign = &prep.plan.campaign.name;
    let stamp = chrono::Local::now().format("%Y%m%d_%H%M%S").to_string();
    let run_dir = Arc::new(RunDir::create(&results_dir, campaign, &stamp)?);
    crate::say!("run dir: {}", run_dir.path.display());
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
            "executor": prep.backend.name(),
            "steps": steps,
            "planned_runs": prep.runs.len(),
            // The device-time budget in force (`[run] budget` or `--budget`): `status` shows it.
            "budget_s": prep.plan.run.budget.map(|b| b.as_secs_f64()),
            CONTEXT_FIELD: fingerprint_context(prep, &run_dir.path),
        }),
    )?;
    Ok(Claimed {
        run_dir,
        lock,
        journal,
        fingerprints: BTreeMap::new(),
        kept: BTreeMap::new(),
        earlier_quarantine: BTreeMap::new(),
        decisions: Vec::new(),
        census_line: None,
        pending: prep.runs.len(),
        reattach: BTreeMap::new(),
        stale_jobs: Vec::new(),
        settled: None,
    })
}

/// The journal's header names the campaign of the run dir's frozen `plan.toml`: a header of
/// another campaign (a journal copied between run dirs, a hand edit) would make `resume` decide
/// runs against another campaign's lines while `status` showed that other campaign, so it is
/// refused, naming both (issue 43, item 7). So is a plan hash other than the one the journal
/// last recorded (the header's, or a later `plan` line's) — unless the resume says the plan
/// was edited on purpose (`--plan-edited`: editing the frozen plan is how a stack is changed
/// before a resume, its runs rerun by their fingerprints). Returns the recorded hash when the
/// plan was accepted as edited.
fn same_campaign(
    prep: &Prepared,
    run_dir: &Path,
    replay: &Replay,
    plan_edited: bool,
) -> Result<Option<String>> {
    let field = |k: &str| replay.header.get(k).and_then(Value::as_str).unwrap_or("");
    let campaign = field("campaign");
    let journal = run_dir.join(journal::FILE_NAME);
    if campaign != prep.plan.campaign.name {
        return Err(crate::error::Error::invalid(
            journal,
            format!(
                "line 1 (the header) names campaign `{campaign}` (plan hash `{}`), but this run \
                 dir's plan.toml is campaign `{}` (plan hash `{}`): the journal belongs to \
                 another campaign, so it is not resumed",
                field("plan_hash"),
                prep.plan.campaign.name,
                prep.plan.hash
            ),
        ));
    }
    let recorded = (replay.events.get(PLAN_EVENT))
        .and_then(|e| e.get("plan_hash"))
        .and_then(Value::as_str)
        .unwrap_or(field("plan_hash"));
    if recorded.is_empty() || recorded == prep.plan.hash {
        return Ok(None);
    }
    if plan_edited {
        return Ok(Some(recorded.to_string()));
    }
    Err(crate::error::Error::invalid(
        journal,
        format!(
            "the journal recorded plan hash `{recorded}`, but this run dir's plan.toml now has \
             plan hash `{}`: the plan changed since the campaign began (edited, or the journal \
             is another plan's), so it is not resumed. If you edited plan.toml on purpose, \
             resume with --plan-edited: runs whose definition changed run again",
            prep.plan.hash
        ),
    ))
}

/// [`same_campaign`], and a plan accepted as edited journaled (`plan` event) and said.
fn accept_plan(
    prep: &Prepared,
    run_dir: &Path,
    replay: &Replay,
    plan_edited: bool,
    journal: &mut Journal,
) -> Result<()> {
    if let Some(previous) = same_campaign(prep, run_dir, replay, plan_edited)? {
        let mut fields = serde_json::Map::new();
        fields.insert("plan_hash".into(), Value::from(prep.plan.hash.clone()));
        fields.insert("previous".into(), Value::from(previous.clone()));
        journal.event(PLAN_EVENT, fields)?;
        crate::say!(
            "resume: plan.toml was edited (plan hash {previous} → {}); runs whose definition \
             changed run again",
            prep.plan.hash
        );
    }
    Ok(())
}

/// The journal event that records a plan accepted as edited (`resume --plan-edited`): its
/// `plan_hash` is the one later resumes compare with.
const PLAN_EVENT: &str = "plan";

/// The existing run dir of `resume`: decide every planned run against the journal, print the
/// diff, and turn done runs into presets whose results come from their bundles. Open runs with
/// a journaled job continue that attempt by re-attaching to the job where the backend can.
pub(crate) fn claim_resume(
    prep: &mut Prepared,
    resume: Resume,
    results_dir: Option<&Path>,
) -> Result<Claimed> {
    let Resume {
        run_dir,
        lock,
        mut journal,
        replay,
        retry_failed,
        rerender_report,
        verify,
        results_check,
        plan_edited,
    } = resume;
    let run_dir = Arc::new(RunDir::open(&run_dir));
    accept_plan(prep, &run_dir.path, &replay, plan_edited, &mut journal)?;
    // Before any device is leased again: whatever a killed session's runs left running.
    let reaped = reap_leftovers(&run_dir.path, &replay);
    let context = fingerprint_context(prep, &run_dir.path);
    // Every line of the journal was written in this very context: its fingerprints are the ones
    // rendering would give.
    let same_context = recorded_context(&replay) == Some(context.as_str());
    // One step key and one journal look-up per planned run, shared by every decision below.
    let keys: Vec<String> = (prep.runs.iter())
        .map(|r| journal::run_step(&r.case_id, &prep.stacks[r.stack].name))
        .collect();
    let states: Vec<Option<&StepState>> = keys.iter().map(|k| replay.step(k)).collect();
    let fingerprints = run_fingerprints(prep, &run_dir, &states, same_context);
    let mut decided = crate::store::resume::plan(
        (states.iter().copied()).zip(fingerprints.iter().map(String::as_str)),
        retry_failed,
    );
    let nothing_to_run =
        decided.to_run.is_empty() && decided.changed.is_empty() && decided.to_retry.is_empty();
    // --verify: every done run's bundle is read back before anything is trusted.
    let verified = verify
        .then(|| keep_done(prep, &run_dir.path, &keys, &states, &decided.done, true))
        .transpose()?;
    let all_read_back = (verified.as_ref()).is_none_or(|(_, lost)| lost.is_empty());
    let settled = (nothing_to_run && !rerender_report && all_read_back)
        .then(|| settled_by_results(prep, &run_dir.path, &states, results_check, results_dir))
        .flatten()
        .map(|runs| {
            let quarantined = (replay.quarantined.iter())
                .map(|(d, why)| (d.to_string(), why.clone()))
                .collect();
            crate::engine::finished::Finished::tally(run_dir.path.clone(), runs, quarantined, false)
        });
    let (reattach, stale_jobs) = open_jobs(prep, &states, &fingerprints);
    let verify_note =
        (verified.as_ref()).map(|(kept, lost)| verify_summary(kept.len(), lost.len()));
    // Settled: nothing runs and nothing is rebuilt, so no run needs a preset.
    let (kept, lost) = match (&settled, verified) {
        (Some(_), verified) => {
            drop_aside(verified);
            Default::default()
        }
        (None, Some(verified)) => verified,
        (None, None) => keep_done(prep, &run_dir.path, &keys, &states, &decided.done, false)?,
    };
    if !lost.is_empty() {
        decided.done.retain(|i| !lost.contains(i));
        decided.to_run.extend(lost);
    }
    crate::say!("run dir: {}", run_dir.path.display());
    crate::say!("resume: {decided}");
    let backend_notes = prep.backend.resume_notes(reattach.len(), &stale_jobs);
    for note in verify_note.into_iter().chain(backend_notes) {
        crate::say!("{note}");
    }
    // The context is recorded when the journal agrees with it: every line was written in it,
    // or every journaled fingerprint of a planned run equals the one just rendered (a changed
    // run this session may not get to re-run would otherwise be taken as done next time).
    let agrees = same_context
        || (states.iter().zip(&fingerprints)).all(|(state, fingerprint)| {
            state.is_none_or(|s| s.fingerprint.is_empty() || s.fingerprint == *fingerprint)
        });
    let mut note = Map::new();
    note.insert("resume".into(), json!(true));
    note.insert("retry_failed".into(), json!(retry_failed));
    note.insert("diff".into(), json!(decided.to_string()));
    if agrees {
        note.insert(CONTEXT_FIELD.into(), json!(context));
    }
    if !reaped.is_empty() {
        note.insert("reaped".into(), Value::Object(reaped));
    }
    journal.event("session", note)?;
    let earlier_quarantine = replay.quarantined.clone();
    let decisions = replay.decisions.clone();
    let census_line = replay
        .events
        .get(crate::engine::census_step::EVENT)
        .cloned();
    // Settled: nothing runs, so no fingerprint is looked up again.
    let fingerprints = if settled.is_some() {
        drop_aside(fingerprints);
        BTreeMap::new()
    } else {
        fingerprints.into_iter().enumerate().collect()
    };
    drop_aside((replay, keys));
    Ok(Claimed {
        run_dir,
        lock,
        journal,
        fingerprints,
        pending: prep.runs.len() - kept.len(),
        kept,
        earlier_quarantine,
        decisions,
        census_line,
        reattach,
        stale_jobs,
        settled,
    })
}

/// What `resume --verify` found: how many done runs' bundles read back as their `finished`
/// lines say, and how many did not (each named above it) and run again.
fn verify_summary(read_back: usize, damaged: usize) -> String {
    let runs = |n: usize| format!("{n} run{}", if n == 1 { "" } else { "s" });
    if damaged == 0 {
        format!(
            "verify: the bundles of all {} done read back as the journal recorded them",
            runs(read_back)
        )
    } else {
        format!(
            "verify: {} of {} done had a bundle that does not match the journal; {} again",
            runs(damaged),
            read_back + damaged,
            if damaged == 1 { "it runs" } else { "they run" }
        )
    }
}

/// Each planned run's fingerprint: the journal's when it was written in this very context
/// (`same_context`), else rendered again.
fn run_fingerprints(
    prep: &Prepared,
    run_dir: &RunDir,
    states: &[Option<&StepState>],
    same_context: bool,
) -> Vec<String> {
    (prep.runs.iter().zip(states))
        .map(|(r, state)| {
            let journaled = same_context
                .then_some(*state)
                .flatten()
                .map(|s| s.fingerprint.clone())
                .filter(|f| !f.is_empty());
            journaled.unwrap_or_else(|| {
                let stack = &prep.stacks[r.stack];
                work::fingerprint(run_dir, &r.case_id, stack, &prep.cases[r.case_index])
            })
        })
        .collect()
}

/// Every run's first attempt this session, and the jobs an earlier session left open: those of
/// unchanged runs the backend can re-attach to (run → job; that attempt continues), and the
/// stale ones of runs that run again.
fn open_jobs(
    prep: &mut Prepared,
    states: &[Option<&StepState>],
    fingerprints: &[String],
) -> (BTreeMap<usize, JobRef>, Vec<JobRef>) {
    let mut reattach = BTreeMap::new();
    let mut stale = Vec::new();
    for (i, (state, fingerprint)) in states.iter().zip(fingerprints).enumerate() {
        prep.plans[i].first_attempt = StepState::next_attempt(*state);
        let Some((state, job)) = state
            .filter(|s| s.is_interrupted())
            .and_then(|s| s.job_of_latest_attempt().map(|j| (s, j)))
        else {
            continue;
        };
        let stack = &prep.stacks[prep.runs[i].stack];
        let same = state.fingerprint == *fingerprint;
        if same && prep.backend.can_reattach(&stack.def) {
            prep.plans[i].first_attempt = job.attempt;
            reattach.insert(i, JobRef(job.id));
        } else {
            stale.push(JobRef(job.id));
        }
    }
    (reattach, stale)
}

/// The done runs whose bundles read back as the journal recorded them: kept, their results
/// preset (run → result). The others are lost and run again; each says why. Every session that
/// reads or writes bundles comes through here first, so the case folders are checked for links
/// here.
fn keep_done(
    prep: &mut Prepared,
    run_dir: &Path,
    keys: &[String],
    states: &[Option<&StepState>],
    done: &[usize],
    verify: bool,
) -> Result<(BTreeMap<usize, RunResult>, Vec<usize>)> {
    // Before a bundle is read or written: no case folder may lead out of the run dir.
    crate::store::lock::refuse_links(run_dir)?;
    let (loaded, unreadable) = crate::store::load::load_run_dir_tolerant(run_dir)?;
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
    let mut is_done = vec![false; keys.len()];
    for &i in done {
        is_done[i] = true;
    }
    let mut kept = BTreeMap::new();
    let mut lost = Vec::new();
    for (i, key) in keys.iter().enumerate().filter(|(i, _)| is_done[*i]) {
        let r = &prep.runs[i];
        let id = (r.case_id.clone(), prep.stacks[r.stack].name.clone());
        // How many samples the journal's `finished` line says the bundle holds (older journals
        // do not say).
        let finished = states[i].and_then(|s| s.last_finished.as_ref());
        let recorded = finished.and_then(|f| f.samples);
        // `--verify`: the content digest its `finished` line recorded (older journals: none).
        let content = finished
            .and_then(|f| f.content.as_deref())
            .filter(|_| verify);
        if let Some(e) = unreadable.remove(&id) {
            crate::say!("{key}: finished in the journal but its bundle does not read back ({e}); it runs again");
            lost.push(i);
            continue;
        }
        match bundles.remove(&id) {
            Some(result) if recorded.is_some_and(|n| n != result.samples.len() as u64) => {
                crate::say!(
                    "{key}: finished in the journal with {} samples but its bundle holds {}; it runs again",
                    recorded.unwrap_or_default(),
                    result.samples.len()
                );
                lost.push(i);
            }
            Some(result)
                if content
                    .is_some_and(|c| c != crate::store::set_digest::bundle_digest(&result)) =>
            {
                crate::say!(
                    "{key}: its bundle ({}) no longer holds what the journal recorded (its status, reason or sample values changed); it runs again",
                    result.bundle.display()
                );
                lost.push(i);
            }
            // A pass always has timed samples; none means timing.json did not survive (e.g. a
            // power loss after the manifest's rename reached disk but before the data did).
            Some(result)
                if result.status == RunStatus::Pass
                    && !result.samples.iter().any(|s| s.is_timed()) =>
            {
                crate::say!("{key}: finished pass in the journal but its bundle has no timed samples (timing.json missing or empty); it runs again");
                lost.push(i);
            }
            Some(result) => {
                let reason = result.error.clone().unwrap_or_default();
                prep.plans[i].preset = Some((result.status, reason));
                kept.insert(i, result);
            }
            None => {
                crate::say!("{key}: finished in the journal but its bundle has no manifest.json; it runs again");
                lost.push(i);
            }
        }
    }
    Ok((kept, lost))
}

/// Free `value` on a thread of its own: a 100,000-run replay or list of step keys takes tens
/// of milliseconds to free string by string, which the session need not wait for (when the
/// process exits first, the exit frees it at once). Without a thread, freed here.
pub(crate) fn drop_aside<T: Send + 'static>(value: T) {
    let _ = std::thread::Builder::new()
        .name("drop".into())
        .spawn(move || drop(value));
}

/// When every planned run finished (per the journal) and the results files and report already
/// show exactly those runs: each run as the journal recorded it (status, case id, stack,
/// reason) — the resume then reads no bundle and rebuilds nothing. `None` (read every bundle
/// back, rebuild) when any run's `finished` line lacks its sample count (older journals), the
/// results check (`store::results_check`) finds the results files out of step with the journal
/// or written before its latest `finished` line, or the report is missing or older than
/// `results.json` or than the plan's report template. No bundle is looked at: a run the journal
/// records as finished is trusted (`resume --verify` reads them all back).
fn settled_by_results<'a>(
    prep: &'a Prepared,
    run_dir: &Path,
    states: &[Option<&'a StepState>],
    check: Option<crate::store::results_check::Check>,
    results_dir: Option<&Path>,
) -> Option<impl Iterator<Item = (RunStatus, &'a str, &'a str, Option<&'a str>)>> {
    let finished: Vec<&journal::Finished> = (states.iter())
        .map(|s| s.as_ref()?.last_finished.as_ref())
        .collect::<Option<_>>()?;
    let recorded: Vec<crate::store::results_check::Recorded> = (prep.runs.iter().zip(&finished))
        .map(|(r, f)| {
            Some(crate::store::results_check::Recorded {
                case_id: &r.case_id,
                stack: &prep.stacks[r.stack].name,
                status: f.status,
                samples: f.samples?,
            })
        })
        .collect::<Option<_>>()?;
    // The latest `finished` line (the highest line number) was written last.
    let last = finished.iter().max_by_key(|f| f.line)?;
    let last_at: std::time::SystemTime = chrono::DateTime::parse_from_rfc3339(&last.t).ok()?.into();
    let current = check.is_some_and(|c| c.matches(&recorded, last_at))
        && report_current(prep, run_dir)
        && history_current(prep, run_dir, results_dir);
    if !current {
        return None;
    }
    Some((prep.runs.iter().zip(finished)).map(|(r, f)| {
        let stack = prep.stacks[r.stack].name.as_str();
        (f.status, r.case_id.as_str(), stack, f.reason.as_deref())
    }))
}

/// The history store the report step records into (`--results-dir`'s, else that of the results
/// dir the run dir sits in; none for a run dir elsewhere) already holds this run dir with every
/// planned run: a lost or older store makes the resume record it again.
fn history_current(prep: &Prepared, run_dir: &Path, results_dir: Option<&Path>) -> bool {
    use crate::store::history_db;
    let results_dir = match results_dir {
        Some(d) => d.to_path_buf(),
        None => match history_db::results_dir_of(run_dir, &prep.plan.campaign.name) {
            Some(d) => d,
            None => return true,
        },
    };
    let store = history_db::store_path(Some(&results_dir));
    let Ok(path) = std::path::absolute(run_dir) else {
        return false;
    };
    let path = path.display().to_string();
    store.is_file()
        && history_db::History::open_existing(&store)
            .and_then(|h| h.runs_of(&path))
            .is_ok_and(|runs| runs == Some(prep.runs.len() as i64))
}

/// The report (`reports/summary.md`, `reports/context.json`) was rendered after `results.json`
/// was last written, after the frozen `plan.toml` last changed (its `[report]` settings: an
/// edited baseline or figure list must show) and after the plan's report template last changed.
fn report_current(prep: &Prepared, run_dir: &Path) -> bool {
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let (Some(results_at), Some(plan_at)) = (
        modified(&run_dir.join("results.json")),
        modified(&run_dir.join("plan.toml")),
    ) else {
        return false;
    };
    let results = results_at.max(plan_at);
    let template_at = match &prep.plan.report.template {
        Some(t) => match modified(t) {
            Some(at) => Some(at),
            None => return false,
        },
        None => None,
    };
    let current = |at: Option<std::time::SystemTime>| {
        at.is_some_and(|at| at >= results && template_at.is_none_or(|t| at >= t))
    };
    // A report proven current by its stamp is not rewritten: the stamp's mark stands for it.
    let stamped = current(modified(
        &run_dir.join(crate::store::results_stamp::REPORT_STAMP),
    ));
    ["summary.md", "context.json"].iter().all(|name| {
        let at = modified(&run_dir.join("reports").join(name));
        current(at) || (stamped && at.is_some())
    })
}

/// Kill what the runs a dead session left open (`started` without `finished`) still have
/// running: every process of their journaled containment unit (`executor::unit::reap`). A run
/// handed to a batch job is its backend's to stop. Only what this run dir made is touched: a
/// unit or cgroup the journal names is reaped only when `executor::unit::vouch` recognises it as
/// one campaign gives this run dir, step and attempt (a run dir can come from someone else).
/// Says what it killed; returns step → pids for the journal's `session` line.
fn reap_leftovers(run_dir: &Path, replay: &crate::store::journal::Replay) -> Map<String, Value> {
    let mut open = Vec::new();
    for (step, state) in &replay.steps {
        let Some((unit, cgroup)) = state.unit.as_ref().filter(|_| state.is_interrupted()) else {
            continue;
        };
        if state.job_of_latest_attempt().is_some() {
            continue;
        }
        let cgroup = cgroup.as_ref().map(PathBuf::from);
        let vouched =
            crate::executor::unit::vouch(run_dir, step, state.attempts, unit, cgroup.as_deref());
        if let Some(why) = &vouched.refused {
            crate::tell!(
                "warning: resume: the journal's `started` line of {step} names what this run dir did not make ({why}); {}",
                if vouched.unit.is_some() { "only its unit's own processes are reaped" } else { "nothing of it is reaped" }
            );
        }
        if let Some(unit) = vouched.unit {
            open.push((step, unit));
        }
    }
    // In step key order, as they are reported.
    open.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let (steps, units): (Vec<&String>, Vec<_>) = open.into_iter().unzip();
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
        crate::say!(
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
