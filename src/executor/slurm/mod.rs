//! The Slurm executor: runs become batch jobs; campaign submits them, watches them with one
//! batched query per interval, cancels them, and re-attaches to them after a crash.
//!
//! Owns the set of watched jobs and turning what Slurm and the bundle say into a [`JobEnd`] per
//! finished job. It does not own run state (the scheduler does: it journals each job id under
//! step `run:<case_id>:<stack>`, field `slurm_job_id`, and calls [`SlurmExecutor::reattach`]
//! on resume), does not parse stack output (the engine parses the bundle's `run.log` when a
//! job's verdict is [`Verdict::Parse`]) and never resubmits on its own. The session's backend
//! (`backend`: preflight, start, stale-job cancel, the Ctrl-C decision) is built on it.

pub(crate) mod backend;
pub(crate) mod bundle;
pub(crate) mod job;
pub(crate) mod placement;
pub(crate) mod poll;
pub(crate) mod preflight;
pub mod rank_table;
pub(crate) mod script;
pub(crate) mod service;
pub(crate) mod state;
pub(crate) mod submit;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::time::Instant;

pub(crate) use bundle::GrantedDevices;
pub(crate) use poll::{Backoff, JobRecord};
pub use script::{render_script, sbatch_command, shell_line, BatchJob};
pub use service::{process_outcome, replay_log, SlurmService, Submitted};
pub use state::{JobState, Verdict};
pub use submit::{Cluster, JobId};

use crate::error::{Error, Result};
use crate::executor::ProcessOutcome;
use crate::model::plan::SlurmConfig;

/// Polling interval when `[slurm] poll_interval` is not set.
pub(crate) const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(2);
/// Jobs in flight at once when neither `--jobs` nor `[slurm] max_jobs` says: enough to keep a
/// partition busy, few enough that one campaign does not flood the queue (many sites cap jobs
/// per user near a few hundred).
pub(crate) const DEFAULT_MAX_JOBS: usize = 64;
/// The interval never grows beyond this while nothing changes.
pub(crate) const MAX_POLL_INTERVAL: Duration = Duration::from_secs(30);
/// squeue failing this many polls in a row (slurmctld gone) becomes an error.
const MAX_QUERY_FAILURES: u32 = 5;

/// How a job ended, everything the engine needs to record the run.
#[derive(Debug, Clone, PartialEq)]
pub struct JobEnd {
    pub state: JobState,
    /// Slurm's reason, when it gave one.
    pub(crate) reason: Option<String>,
    /// Slurm's `ExitCode=code:signal`, when known.
    pub(crate) slurm_exit: Option<String>,
    /// What the run's status is (or that the bundle must be parsed).
    pub verdict: Verdict,
    /// The stack process's exit as the batch script recorded it (present for `Parse`).
    pub outcome: Option<ProcessOutcome>,
    /// What Slurm granted (record in the manifest's `devices`).
    pub devices: Option<GrantedDevices>,
    /// Where the job ran: its nodes and each rank's node, when the job got that far.
    pub placement: Option<placement::Placement>,
    /// Where the final state came from: `squeue`, `scontrol`, `jobcomp` or `bundle`.
    pub source: &'static str,
}

/// A job to watch again after a restart (from the journal).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attached {
    pub job_id: JobId,
    pub bundle_dir: PathBuf,
}

/// Counts of Slurm commands run, for tests and `--verbose` output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueryStats {
    pub polls: u32,
    pub squeue: u32,
    pub(crate) scontrol: u32,
    pub(crate) jobcomp_reads: u32,
}

#[derive(Debug, Clone)]
struct Watched {
    bundle_dir: PathBuf,
    last: Option<JobState>,
}

/// The executor. One per campaign process; not shared between tasks (`&mut self`).
#[derive(Debug)]
pub struct SlurmExecutor {
    config: SlurmConfig,
    cluster: Cluster,
    watched: BTreeMap<JobId, Watched>,
    cancelled: BTreeSet<JobId>,
    backoff: Backoff,
    next_poll: Instant,
    jobcomp: Option<Option<PathBuf>>,
    failures: u32,
    stats: QueryStats,
}

/// Is `script` the batch script of a bundle inside `run_dir`?
fn runs_a_bundle_script(script: &Path, run_dir: &Path) -> bool {
    script.starts_with(run_dir)
        && script.file_name() == Some(std::ffi::OsStr::new(bundle::SCRIPT_FILE))
        && (script.components()).all(|c| !matches!(c, std::path::Component::ParentDir))
}

impl SlurmExecutor {
    pub fn new(config: SlurmConfig) -> SlurmExecutor {
        let base = config.poll_interval.unwrap_or(DEFAULT_POLL_INTERVAL);
        SlurmExecutor {
            config,
            cluster: Cluster::default(),
            watched: BTreeMap::new(),
            cancelled: BTreeSet::new(),
            backoff: Backoff::new(base, MAX_POLL_INTERVAL),
            next_poll: Instant::now(),
            jobcomp: None,
            failures: 0,
            stats: QueryStats::default(),
        }
    }

    /// Use this `SLURM_CONF` for every Slurm command instead of the inherited one.
    pub fn with_slurm_conf(mut self, conf: impl Into<PathBuf>) -> SlurmExecutor {
        self.cluster.slurm_conf = Some(conf.into());
        self
    }

    /// Replace the backoff bounds (the base is `[slurm] poll_interval` otherwise).
    pub fn with_backoff(mut self, base: Duration, max: Duration) -> SlurmExecutor {
        self.backoff = Backoff::new(base, max);
        self
    }

    /// Jobs being watched (submitted or re-attached, not yet reported ended).
    pub fn watching(&self) -> Vec<JobId> {
        self.watched.keys().copied().collect()
    }

    pub fn stats(&self) -> QueryStats {
        self.stats
    }

    /// The argv `submit` would run for `job` (what `dry-run --executor slurm` prints).
    pub fn sbatch_command(&self, job: &BatchJob) -> Result<Vec<String>> {
        sbatch_command(&self.config, job)
    }

    /// Write `job`'s batch script into its bundle, submit it and start watching it.
    /// The caller journals the returned id before doing anything else.
    pub async fn submit(&mut self, job: &BatchJob) -> Result<JobId> {
        let argv = sbatch_command(&self.config, job)?;
        std::fs::create_dir_all(&job.bundle_dir).map_err(|e| Error::io(&job.bundle_dir, e))?;
        bundle::clear(&job.bundle_dir);
        let script = job.script_path();
        std::fs::write(&script, render_script(job)).map_err(|e| Error::io(&script, e))?;
        let id = self.cluster.sbatch(&argv).await?;
        self.watched.insert(
            id,
            Watched {
                bundle_dir: job.bundle_dir.clone(),
                last: None,
            },
        );
        self.poll_soon();
        Ok(id)
    }

    /// Of the jobs a journal names, those that are not this run dir's: squeue knows them and
    /// their batch script is not a bundle's `slurm.sh` inside `run_dir` (every job campaign
    /// submits runs its bundle's script). A job id in a run dir received from someone else may
    /// be anybody's job: these are never cancelled or re-attached to. A job squeue no longer
    /// knows has ended; re-attaching reads its result from the run's own bundle.
    pub async fn foreign(&self, ids: &[JobId], run_dir: &Path) -> Result<BTreeSet<JobId>> {
        let commands = poll::query_commands(&self.cluster, ids).await?;
        Ok(commands
            .into_iter()
            .filter(|(_, script)| !runs_a_bundle_script(script, run_dir))
            .map(|(id, _)| id)
            .collect())
    }

    /// Watch jobs submitted by an earlier campaign process; jobs that already ended are
    /// reported by the next poll like any other. Nothing is resubmitted here.
    pub fn reattach(&mut self, jobs: Vec<Attached>) {
        for job in jobs {
            self.watched.insert(
                job.job_id,
                Watched {
                    bundle_dir: job.bundle_dir,
                    last: None,
                },
            );
        }
        self.poll_soon();
    }

    /// scancel `ids` (watched or not). They are reported by a later poll, as `Interrupted`.
    /// Ids this executor already cancelled are not sent again.
    pub(crate) async fn cancel(&mut self, ids: &[JobId]) -> Result<()> {
        let ids: Vec<JobId> = ids
            .iter()
            .copied()
            .filter(|id| !self.cancelled.contains(id))
            .collect();
        if ids.is_empty() {
            return Ok(());
        }
        self.cluster.scancel(&ids).await?;
        self.cancelled.extend(ids.iter().copied());
        self.poll_soon();
        Ok(())
    }

    /// Cancel every watched job (Ctrl-C).
    pub async fn cancel_all(&mut self) -> Result<()> {
        let ids = self.watching();
        self.cancel(&ids).await
    }

    /// Wait until the next poll is due, then poll once. Cancel-safe: dropping the future
    /// loses no job (state is only updated once a query has answered).
    pub async fn poll(&mut self) -> Result<Vec<(JobId, JobEnd)>> {
        tokio::time::sleep_until(self.next_poll).await;
        self.poll_now().await
    }

    /// Query Slurm now: one squeue for all watched jobs; scontrol, then the jobcomp file, then
    /// the bundle for jobs squeue no longer lists. Returns the jobs that ended (no longer
    /// watched afterwards) and schedules the next poll with the backoff.
    pub(crate) async fn poll_now(&mut self) -> Result<Vec<(JobId, JobEnd)>> {
        let ids = self.watching();
        if ids.is_empty() {
            self.next_poll = Instant::now() + self.backoff.current();
            return Ok(Vec::new());
        }
        self.stats.polls += 1;
        self.stats.squeue += 1;
        let rows = match poll::query_squeue(&self.cluster, &ids).await {
            Ok(rows) => {
                self.failures = 0;
                rows
            }
            Err(e) => {
                self.failures += 1;
                self.next_poll = Instant::now() + self.backoff.observe(false);
                if self.failures >= MAX_QUERY_FAILURES {
                    return Err(e);
                }
                return Ok(Vec::new());
            }
        };
        let by_id: BTreeMap<JobId, JobRecord> = rows.into_iter().map(|r| (r.id, r)).collect();
        let mut ended = Vec::new();
        let mut changed = false;
        for id in ids {
            let record = match by_id.get(&id) {
                Some(r) if !r.state.is_terminal() => {
                    if let Some(watched) = self.watched.get_mut(&id) {
                        if watched.last.as_ref() != Some(&r.state) {
                            watched.last = Some(r.state.clone());
                            changed = true;
                        }
                    }
                    continue;
                }
                Some(r) => Some((r.clone(), "squeue")),
                // scontrol failing is no verdict: the job is asked about again next poll.
                None => match self.look_up_gone(id).await {
                    Ok(found) => found,
                    Err(_) => continue,
                },
            };
            let end = self.finish(id, record).await;
            changed = true;
            ended.push((id, end));
        }
        for (id, _) in &ended {
            self.watched.remove(id);
            self.cancelled.remove(id);
        }
        self.next_poll = Instant::now() + self.backoff.observe(changed);
        Ok(ended)
    }

    /// A job squeue did not list: ask scontrol, then the jobcomp file.
    async fn look_up_gone(&mut self, id: JobId) -> Result<Option<(JobRecord, &'static str)>> {
        self.stats.scontrol += 1;
        if let Some(r) = poll::query_scontrol(&self.cluster, id).await? {
            return Ok(Some((r, "scontrol")));
        }
        if self.jobcomp.is_none() {
            self.jobcomp = Some(poll::query_jobcomp_location(&self.cluster).await);
        }
        if let Some(Some(path)) = &self.jobcomp {
            self.stats.jobcomp_reads += 1;
            if let Some(r) = poll::read_jobcomp(path, id) {
                return Ok(Some((r, "jobcomp")));
            }
        }
        Ok(None)
    }

    /// Build the end of job `id` from Slurm's final record (if any) and its bundle.
    async fn finish(&mut self, id: JobId, record: Option<(JobRecord, &'static str)>) -> JobEnd {
        let bundle_dir = self
            .watched
            .get(&id)
            .map(|w| w.bundle_dir.clone())
            .unwrap_or_default();
        let outcome = bundle::read_result(&bundle_dir);
        let devices = bundle::read_devices(&bundle_dir);
        let placement = placement::read(&bundle_dir);
        let cancelled_by_us = self.cancelled.contains(&id);
        let Some((mut record, source)) = record else {
            // Slurm forgot the job (purged after MinJobAge, no jobcomp file): the bundle is
            // all there is. A result means the stack ran to its end.
            let verdict = match outcome {
                Some(_) => Verdict::Parse,
                None => Verdict::Interrupted(format!(
                    "Slurm job {id} is unknown to Slurm and left no result in {}",
                    bundle_dir.display()
                )),
            };
            return JobEnd {
                state: JobState::Other("UNKNOWN".into()),
                reason: None,
                slurm_exit: None,
                verdict: placement::judge(verdict, placement.as_ref()),
                outcome,
                devices,
                placement,
                source: "bundle",
            };
        };
        // squeue has no exit code; fetch it where it helps explain a failure.
        if record.exit_code.is_none() && outcome.is_none() && source == "squeue" {
            self.stats.scontrol += 1;
            if let Ok(Some(full)) = poll::query_scontrol(&self.cluster, id).await {
                if full.state == record.state {
                    record.exit_code = full.exit_code;
                    record.reason = record.reason.or(full.reason);
                }
            }
        }
        let verdict = state::verdict(&state::Ending {
            job_id: id.0,
            state: &record.state,
            reason: record.reason.as_deref(),
            slurm_exit: record.exit_code.as_deref(),
            has_result: outcome.is_some(),
            cancelled_by_us,
        });
        JobEnd {
            state: record.state,
            reason: record.reason,
            slurm_exit: record.exit_code,
            verdict: placement::judge(verdict, placement.as_ref()),
            outcome,
            devices,
            placement,
            source,
        }
    }

    fn poll_soon(&mut self) {
        self.backoff.reset();
        self.next_poll = Instant::now() + self.backoff.current();
    }
}

#[cfg(test)]
mod ownership_tests {
    use super::*;

    #[test]
    fn only_bundle_scripts_inside_the_run_dir_are_the_run_dirs_jobs() {
        let run_dir = Path::new("/r/run_1");
        assert!(runs_a_bundle_script(
            Path::new("/r/run_1/cases/c/s/slurm.sh"),
            run_dir
        ));
        for other in [
            "/r/run_2/cases/c/s/slurm.sh",
            "/r/run_10/cases/c/s/slurm.sh",
            "/r/run_1/cases/c/s/other.sh",
            "/r/run_1/../run_2/cases/c/s/slurm.sh",
            "/bin/sleep",
        ] {
            assert!(!runs_a_bundle_script(Path::new(other), run_dir), "{other}");
        }
    }
}
