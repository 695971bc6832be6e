//! Profiled runs: for each (case, stack) whose timed runs passed, `runs` extra runs of each
//! profile kind the campaign asks for (`[profile]`, `run --profile`), made after every timed run
//! of the session ended and before the results files are written.
//!
//! After, not between: perf's sampling and unwinding cost CPU, and a profiled run beside a
//! timed one would slow the timed one down. A profiled run has its own folder under the timed
//! run's bundle (`profiling/<kind>[-<n>]/`: `run.log`, `timing.json`, a `manifest.json` marked
//! `profiled`, the profile's files) and its own line in the run dir's `profiles.json`; it never
//! enters the results files, so no statistic, fit, verdict, decision or history point sees it.
//! A kind the stack cannot make, or a perf that is missing or refused, is a planned skip that
//! says why. Owns that phase; how a run executes stays `work`'s.

mod files;
mod flame;
mod perf;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use crate::engine::progress::Progress;
use crate::engine::schedule::pool::Lease;
use crate::engine::work::{self, Profiled, RunJob};
use crate::model::case::Case;
use crate::model::profile::{folder, ProfileConfig, ProfileEntry, ProfileKind, ProfilesFile};
use crate::model::results::{RunResult, RunStatus};
use crate::stack::resolve::EngineStack;
use crate::store::layout::RunDir;

/// What the session knows of its profiled runs before they start: what to make, and which
/// (case, stack) pairs earned a profile (a timed run of it passed).
#[derive(Debug, Default)]
pub(crate) struct Profiling {
    config: ProfileConfig,
    /// (case index, stack index) → the case id without its repeat mark.
    passed: BTreeMap<(usize, usize), String>,
}

impl Profiling {
    pub(crate) fn new(config: ProfileConfig) -> Profiling {
        Profiling {
            config,
            passed: BTreeMap::new(),
        }
    }

    /// A timed run ended (kept ones from an earlier session too): a passing one earns its
    /// (case, stack) a profile. A run that failed is not profiled: its profile would show a
    /// failure, not why the stack is slow.
    /// `run_id` is the run's case id with its repeat mark; `stack` the stack's index.
    pub(crate) fn ended(
        &mut self,
        case_index: usize,
        stack: usize,
        run_id: &str,
        result: &RunResult,
    ) {
        if result.status == RunStatus::Pass {
            let (case_id, _) = crate::model::results::split_run_id(run_id);
            (self.passed)
                .entry((case_index, stack))
                .or_insert_with(|| case_id.to_string());
        }
    }
}

/// Make every profiled run not yet settled in `profiles.json`, one at a time. A resume takes
/// the kinds the run dir's `profiles.json` recorded (what `run --profile` asked for) over the
/// plan's. `Err` when the run dir cannot be written: the campaign stops as for a timed run.
pub(crate) async fn run(
    profiling: &mut Profiling,
    cx: Shared,
    stacks: &[Arc<EngineStack>],
    progress: &mut Progress,
) -> crate::error::Result<()> {
    let recorded = crate::store::profiles::read(&cx.run_dir.path);
    let config = match &recorded {
        Some(file) if !profiling.config.any() => file.config(),
        _ => profiling.config.clone(),
    };
    if !config.any() {
        return Ok(());
    }
    let mut file = match recorded {
        Some(f) if f.kinds == config.kinds && f.runs == config.runs => f,
        _ => ProfilesFile::new(&config),
    };
    let mut perf: BTreeMap<ProfileKind, Result<(), String>> = BTreeMap::new();
    for ((ci, si), case_id) in std::mem::take(&mut profiling.passed) {
        for &kind in &config.kinds {
            for n in 1..=config.runs {
                if *cx.cancel.borrow() {
                    return Ok(());
                }
                let stack = &stacks[si];
                if (file.find(&case_id, &stack.name, kind, n)).is_some_and(ProfileEntry::settled) {
                    continue;
                }
                let at = Target {
                    case: &cx.cases[ci],
                    case_id: &case_id,
                    stack,
                    kind,
                    n,
                };
                let entry = match skip_reason(&cx, &at, &mut perf) {
                    Some(why) => entry(&at, RunStatus::Skipped, Some(why)),
                    None => one(&cx, &at).await,
                };
                let why = (entry.reason.as_deref()).map_or(String::new(), |r| format!(": {r}"));
                let said = format!(
                    "profile {} {case_id}/{}: {}{why}",
                    folder(kind, n),
                    stack.name,
                    entry.status
                );
                progress.println(&crate::model::text::visible(&said));
                file.put(entry);
                crate::store::profiles::write(&cx.run_dir.path, &file)?;
            }
        }
    }
    Ok(())
}

/// What the profiled runs need of the session (the dispatcher's, shared).
pub(crate) struct Shared {
    pub(crate) run_dir: Arc<RunDir>,
    pub(crate) cases: Arc<Vec<Case>>,
    pub(crate) cancel: tokio::sync::watch::Receiver<bool>,
    pub(crate) backend: Arc<dyn crate::executor::Backend>,
    pub(crate) case_files: Arc<crate::engine::case_files::CaseFiles>,
}

/// One profiled run to make.
struct Target<'a> {
    case: &'a Case,
    case_id: &'a str,
    stack: &'a Arc<EngineStack>,
    kind: ProfileKind,
    n: u32,
}

impl Target<'_> {
    fn bundle_rel(&self) -> std::path::PathBuf {
        RunDir::bundle_rel(self.case_id, &self.stack.name)
            .join("profiling")
            .join(folder(self.kind, self.n))
    }
}

fn entry(at: &Target<'_>, status: RunStatus, reason: Option<String>) -> ProfileEntry {
    ProfileEntry {
        case_id: at.case_id.to_string(),
        stack: at.stack.name.clone(),
        kind: at.kind,
        run: at.n,
        status,
        reason,
        bundle: at.bundle_rel().to_string_lossy().into_owned(),
        files: BTreeMap::new(),
        wall_s: None,
    }
}

/// Why the profiled run is a planned skip, if it is: the stack cannot make the kind for this
/// case, or (a perf kind) the processes run elsewhere or perf does not work here (asked once
/// per kind).
fn skip_reason(
    d: &Shared,
    at: &Target<'_>,
    perf: &mut BTreeMap<ProfileKind, Result<(), String>>,
) -> Option<String> {
    let elsewhere = d.backend.grants_devices().then(|| d.backend.name());
    if let Some(why) = planned_skip(&at.stack.def, at.kind, at.case, elsewhere) {
        return Some(why);
    }
    if !at.kind.by_perf() {
        return None;
    }
    let scratch = d.run_dir.path.join(".perf-check");
    (perf
        .entry(at.kind)
        .or_insert_with(|| perf::check(at.kind, &scratch)))
    .clone()
    .err()
}

/// Why a profiled run of `kind` of `case` on `def` is a planned skip, as far as the plan alone
/// says (what `dry-run` lists, and the first thing a run asks): the stack cannot make the kind
/// for this case, or, a perf kind, the executor named `elsewhere` runs the processes on other
/// machines. Whether perf works here is `perf_refusal`'s question.
pub(crate) fn planned_skip(
    def: &crate::model::stack::StackDef,
    kind: ProfileKind,
    case: &Case,
    elsewhere: Option<&str>,
) -> Option<String> {
    if let Some(why) = def.profile_reason(kind, case) {
        return Some(why);
    }
    match elsewhere {
        Some(executor) if kind.by_perf() => Some(format!(
            "`{}` profiles run perf around the run's processes on this machine; the {executor} executor runs them elsewhere",
            kind.name()
        )),
        _ => None,
    }
}

/// Why perf cannot make `kind` on this machine (missing, or refused), tried once on `true` in
/// `scratch` (removed after); `None` when it can or `kind` is not a perf kind.
pub(crate) fn perf_refusal(kind: ProfileKind, scratch: &std::path::Path) -> Option<String> {
    kind.by_perf().then(|| perf::check(kind, scratch).err())?
}

/// Make one profiled run and its profile files.
async fn one(d: &Shared, at: &Target<'_>) -> ProfileEntry {
    let rel = at.bundle_rel();
    let bundle = d.run_dir.path.join(&rel);
    // A profiled run an earlier session left half made starts over.
    let _ = std::fs::remove_dir_all(&bundle);
    if let Err(e) = crate::store::layout::make_bundle_dir(&bundle) {
        return entry(at, RunStatus::Fail, Some(e.to_string()));
    }
    let spec = at
        .stack
        .def
        .profile
        .get(&at.kind)
        .cloned()
        .unwrap_or_default();
    let mut case = at.case.clone();
    if let Some(rounds) = spec.rounds {
        (case.warmup_rounds, case.timed_rounds) = (0, rounds);
    }
    let profiled = Profiled {
        bundle: bundle.clone(),
        bundle_rel: rel,
        unit_step: format!(
            "profile:{}:{}:{}",
            at.case_id,
            at.stack.name,
            folder(at.kind, at.n)
        ),
        prefix: perf::prefix(at.kind, &bundle),
        args: spec.args.clone(),
        env: spec.env.clone().into_iter().collect(),
    };
    let job = RunJob {
        run_dir: d.run_dir.clone(),
        case_id: at.case_id.to_string(),
        stack: at.stack.clone(),
        lease: lease(&case, at.stack),
        case,
        place: false,
        attempt: 1,
        cancel: d.cancel.clone(),
        backend: d.backend.clone(),
        case_files: d.case_files.clone(),
        reattach: None,
        on_submit: Arc::new(|_, _| {}),
        profile: Some(Arc::new(profiled)),
    };
    let since = std::time::SystemTime::now();
    let clock = std::time::Instant::now();
    let mut made = match work::execute(job).await {
        Ok(work::Executed::Run(r)) => entry(at, r.status, r.error.clone()),
        Ok(work::Executed::Detached(note)) => entry(at, RunStatus::Interrupted, Some(note)),
        Err(e) => entry(at, RunStatus::Fail, Some(e.to_string())),
    };
    made.wall_s = Some(crate::model::units::round_sig(
        clock.elapsed().as_secs_f64(),
        6,
    ));
    if made.status == RunStatus::Pass {
        let title = format!("{} on {}", at.case_id, at.stack.name);
        let root = at.stack.root.as_ref().ok().and_then(|r| r.clone());
        let kind = at.kind;
        let files = tokio::task::spawn_blocking(move || {
            profile_files(kind, &spec.files, root.as_deref(), &bundle, since, &title)
        })
        .await
        .unwrap_or_else(|e| Err(format!("making the profile stopped: {e}")));
        match files {
            Ok(files) => made.files = files,
            Err(why) => {
                made.status = RunStatus::Fail;
                made.reason = Some(format!(
                    "the run passed but its profile was not made: {why}"
                ));
            }
        }
    }
    let bundle = d.run_dir.path.join(&made.bundle);
    if let Err(e) = crate::store::profiles::mark_manifest(&bundle, &made) {
        made.status = RunStatus::Fail;
        made.reason = Some(e.to_string());
    }
    made
}

/// The profile's files once its run passed: the flame graph (`cpu`), perf's CSV (`counters`),
/// or the upstream program's files moved in.
fn profile_files(
    kind: ProfileKind,
    patterns: &[String],
    root: Option<&Path>,
    bundle: &Path,
    since: std::time::SystemTime,
    title: &str,
) -> Result<BTreeMap<String, String>, String> {
    match kind {
        ProfileKind::Cpu => flame::make(bundle, title),
        ProfileKind::Counters => {
            let csv = bundle.join(perf::COUNTERS_CSV);
            match std::fs::metadata(&csv) {
                Ok(m) if m.len() > 0 => Ok(BTreeMap::from([(
                    "counters".to_string(),
                    perf::COUNTERS_CSV.to_string(),
                )])),
                _ => Err("perf stat wrote no counters".into()),
            }
        }
        _ => files::collect(patterns, root, bundle, since),
    }
}

/// What a profiled run holds: it runs alone after the timed runs, so every slot is free. A CPU
/// stack gets CPU slots 0..P (wrapping past the machine's CPUs, as an oversubscribed timed run
/// shares them); a device stack the case's pinned devices, else 0..P.
fn lease(case: &Case, stack: &EngineStack) -> Lease {
    use crate::model::stack::Resource;
    let ids = |n: usize| -> Vec<u32> { (0..case.p).map(|i| i % n.max(1) as u32).collect() };
    match stack.def.resource() {
        Resource::Cpu => Lease {
            devices: Vec::new(),
            cpus: ids(std::thread::available_parallelism().map_or(1, |n| n.get())),
        },
        Resource::None => Lease::default(),
        _ if !case.device_ids.is_empty() => Lease {
            devices: case.device_ids.clone(),
            cpus: Vec::new(),
        },
        _ => Lease {
            devices: ids(usize::MAX),
            cpus: Vec::new(),
        },
    }
}
