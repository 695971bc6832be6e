//! The journal: `journal.jsonl`, the append-only record of step transitions that `resume` reads.
//!
//! Owns the on-disk format (a versioned header line, then one JSON object per line), the writer
//! (whole lines through one `O_APPEND` write each; `finished` lines made durable by group commit
//! in `journal/commit.rs`, `quarantined`, `submitted` and other events fsynced before returning)
//! and, in `journal/replay.rs`, reading a journal back into the latest state of every step.
//! It never decides what to run (that is `resume.rs`) and never touches bundles or results files.
//! Nothing ever rewrites a recorded line: the only mutation besides appending is cutting off a
//! torn last line (a crash mid-write) when a journal is reopened for appending.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::model::results::RunStatus;

mod commit;
mod line;
mod replay;

#[cfg(test)]
pub(crate) use replay::SlurmJob;
pub(crate) use replay::{header, replay, Finished, Replay, StepState, TornLine, MAX_JOURNAL_BYTES};

/// File name of the journal inside a run dir.
pub(crate) const FILE_NAME: &str = "journal.jsonl";
/// Value of the header's `journal` key.
pub(crate) const KIND: &str = "campaign";
/// The format version this build writes, and the newest it reads.
pub(crate) const VERSION: u64 = 1;

/// The field of `submitted` and `finished` lines naming the batch job of the attempt (its
/// backend's opaque job reference; only Slurm has any).
pub(crate) const JOB_ID_FIELD: &str = "slurm_job_id";

/// Step key of a run: `run:<case_id>:<stack>`.
pub(crate) fn run_step(case_id: &str, stack: &str) -> String {
    format!("run:{case_id}:{stack}")
}

/// Step key of a stack's build: `build:<stack>`.
#[cfg(test)]
pub(crate) fn build_step(stack: &str) -> String {
    format!("build:{stack}")
}

/// Step key of a stack's availability/health probe: `probe:<stack>`.
#[cfg(test)]
pub(crate) fn probe_step(stack: &str) -> String {
    format!("probe:{stack}")
}

/// `(case_id, stack)` of a run step key, `None` for other steps.
pub(crate) fn parse_run_step(step: &str) -> Option<(&str, &str)> {
    // Stack names never contain ':' (they are `[A-Za-z0-9_-]`), case ids neither; splitting at the
    // last ':' stays right even if a future case id gains one.
    step.strip_prefix("run:")?.rsplit_once(':')
}

/// Current time as RFC 3339 with milliseconds (what every journal line's `t` holds).
pub(crate) fn now() -> String {
    chrono::Local::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, false)
}

/// An open journal, appending. The scheduler is its single owner (`&mut self` everywhere).
#[derive(Debug)]
pub(crate) struct Journal {
    path: PathBuf,
    file: File,
    /// Number of fsyncs issued here (the group commit counts its own), so tests can see that
    /// durable lines really were synced.
    syncs: u64,
    /// Makes `finished` lines durable in the background (group commit).
    commit: commit::Committer,
    /// Bytes of a torn last line cut off by [`Journal::open`], if any.
    repaired: Option<TornLine>,
}

impl Journal {
    /// Start the journal of a new run dir: a header line `{"journal":"campaign","version":1,
    /// ...meta}`. The header is written to a temp file, fsynced and renamed into place, so a
    /// journal either does not exist or starts with a whole header. Fails if one already exists.
    pub(crate) fn create(run_dir: &Path, meta: Value) -> Result<Journal> {
        let path = run_dir.join(FILE_NAME);
        if path.exists() {
            return Err(Error::io(
                &path,
                std::io::Error::new(
                    std::io::ErrorKind::AlreadyExists,
                    "a journal already exists in this run dir (use `campaign resume` to continue it)",
                ),
            ));
        }
        let mut header = Map::new();
        header.insert("journal".into(), Value::from(KIND));
        header.insert("version".into(), Value::from(VERSION));
        header.insert("created".into(), Value::from(now()));
        if let Value::Object(extra) = meta {
            for (k, v) in extra {
                if k != "journal" && k != "version" {
                    header.insert(k, v);
                }
            }
        }
        let mut line = serde_json::to_string(&Value::Object(header))
            .map_err(|e| Error::Environment(format!("cannot encode journal header: {e}")))?;
        line.push('\n');
        let tmp = run_dir.join(format!(".{FILE_NAME}.tmp"));
        let write_tmp = || -> std::io::Result<()> {
            let mut f = File::create(&tmp)?;
            f.write_all(line.as_bytes())?;
            f.sync_all()
        };
        write_tmp().map_err(|e| Error::io(&tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| Error::io(&path, e))?;
        sync_dir(run_dir);
        let file = open_append(&path)?;
        let commit = committer(&file, &path)?;
        Ok(Journal {
            path,
            file,
            syncs: 1,
            commit,
            repaired: None,
        })
    }

    /// Reopen the journal of an existing run dir for appending. Checks the header (a journal
    /// from a newer campaign is refused with a clear message) and cuts off a torn last line so
    /// new lines start on a line boundary; [`Journal::repaired`] says whether it did.
    pub(crate) fn open(run_dir: &Path) -> Result<Journal> {
        let path = run_dir.join(FILE_NAME);
        let torn = replay::torn_tail(&path)?;
        if let Some(torn) = &torn {
            let f = OpenOptions::new()
                .write(true)
                .open(&path)
                .map_err(|e| Error::io(&path, e))?;
            f.set_len(torn.offset)
                .and_then(|_| f.sync_all())
                .map_err(|e| Error::io(&path, e))?;
        }
        let file = open_append(&path)?;
        let commit = committer(&file, &path)?;
        Ok(Journal {
            path,
            file,
            syncs: 0,
            commit,
            repaired: torn,
        })
    }

    /// A journal appending to an already-open file (tests point it at `/dev/full`).
    #[cfg(test)]
    fn from_file(path: PathBuf, file: File) -> Journal {
        let commit = committer(&file, &path).expect("start the group commit");
        Journal {
            path,
            file,
            syncs: 0,
            commit,
            repaired: None,
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The torn last line [`Journal::open`] removed, if there was one (to report it).
    pub(crate) fn repaired(&self) -> Option<&TornLine> {
        self.repaired.as_ref()
    }

    /// How many fsyncs this handle issued (the group commit's included).
    #[cfg(test)]
    pub(crate) fn syncs(&self) -> u64 {
        self.syncs + self.commit.syncs()
    }

    /// Wait until every line appended so far is on disk (the end of a session; dropping the
    /// journal does the same). A failed background sync is returned here.
    pub(crate) fn durable(&self) -> Result<()> {
        self.commit.wait()
    }

    /// A step began (attempt is 1-based and keeps counting across resumes). Not fsynced: losing
    /// it in a crash only makes the step look never started, which resume treats the same way.
    pub(crate) fn started(
        &mut self,
        step: &str,
        attempt: u32,
        fingerprint: &str,
        extra: Map<String, Value>,
    ) -> Result<()> {
        let line = step_line("started", step, attempt, fingerprint, None, None, extra);
        self.append(line, Durability::None)
    }

    /// A step ended with `status`. Made durable by group commit: once the line's sync is done
    /// (at the latest when [`Journal::durable`] returns), resume never runs a passed step again;
    /// until then only a power loss can undo it. Returns the error of an earlier failed sync.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn finished(
        &mut self,
        step: &str,
        attempt: u32,
        fingerprint: &str,
        status: RunStatus,
        reason: Option<&str>,
        extra: Map<String, Value>,
    ) -> Result<()> {
        let line = step_line(
            "finished",
            step,
            attempt,
            fingerprint,
            Some(status),
            reason,
            extra,
        );
        self.append(line, Durability::Group)
    }

    /// The running attempt `attempt` of `step` handed its work to Slurm job `slurm_job_id`
    /// (`reattached`: a resume took over a job an earlier session submitted). Fsynced: once
    /// this returns, a resume re-attaches to the job instead of submitting the run again.
    pub(crate) fn submitted(
        &mut self,
        step: &str,
        attempt: u32,
        slurm_job_id: u64,
        reattached: bool,
    ) -> Result<()> {
        let mut line = Map::new();
        line.insert("t".into(), Value::from(now()));
        line.insert("event".into(), Value::from("submitted"));
        line.insert("step".into(), Value::from(step));
        line.insert("attempt".into(), Value::from(attempt));
        line.insert(JOB_ID_FIELD.into(), Value::from(slurm_job_id));
        if reattached {
            line.insert("reattached".into(), Value::from(true));
        }
        self.append(line, Durability::Now)
    }

    /// A device was taken out of the pool for the rest of the session. Fsynced.
    pub(crate) fn quarantined(&mut self, device: u32, reason: &str) -> Result<()> {
        let mut line = Map::new();
        line.insert("t".into(), Value::from(now()));
        line.insert("event".into(), Value::from("quarantined"));
        line.insert("device".into(), Value::from(device));
        line.insert("reason".into(), Value::from(reason));
        self.append(line, Durability::Now)
    }

    /// A decision of sequential repeats at `point` (its id) after `look` repeats: `spare`
    /// (with why) ends the point's repeats, `None` runs the next ones (`why` names the rows
    /// still undecided). Fsynced before anything it lets run starts, so a resume replays it.
    pub(crate) fn decision(
        &mut self,
        point: &str,
        look: u32,
        spare: Option<&str>,
        why: &str,
    ) -> Result<()> {
        let mut line = Map::new();
        line.insert("t".into(), Value::from(now()));
        line.insert("event".into(), Value::from("decision"));
        line.insert("point".into(), Value::from(point));
        line.insert("look".into(), Value::from(look));
        line.insert(
            "status".into(),
            Value::from(if spare.is_some() { "stop" } else { "go" }),
        );
        line.insert("reason".into(), Value::from(spare.unwrap_or(why)));
        self.append(line, Durability::Now)
    }

    /// Any other campaign-level event (`session`, `interrupted`, …): `{"t","event",...fields}`.
    /// Replay keeps the last of each kind and otherwise ignores them. Fsynced.
    pub(crate) fn event(&mut self, event: &str, fields: Map<String, Value>) -> Result<()> {
        let mut line = Map::new();
        line.insert("t".into(), Value::from(now()));
        line.insert("event".into(), Value::from(event));
        for (k, v) in fields {
            line.entry(k).or_insert(v);
        }
        self.append(line, Durability::Now)
    }

    /// Encode `line` and append it with a single write so that a crash leaves at most one torn
    /// line, at the end. A failed write (disk full) is an `Error::Io` naming the journal; what
    /// was recorded before stays intact because nothing is ever rewritten.
    fn append(&mut self, line: Map<String, Value>, durability: Durability) -> Result<()> {
        let mut text = serde_json::to_string(&Value::Object(line))
            .map_err(|e| Error::Environment(format!("cannot encode journal line: {e}")))?;
        text.push('\n');
        self.file
            .write_all(text.as_bytes())
            .map_err(|e| Error::io(&self.path, e))?;
        match durability {
            Durability::None => Ok(()),
            Durability::Group => self.commit.appended(),
            Durability::Now => {
                self.file
                    .sync_data()
                    .map_err(|e| Error::io(&self.path, e))?;
                self.syncs += 1;
                Ok(())
            }
        }
    }
}

/// When an appended line must be on disk.
#[derive(Debug, Clone, Copy)]
enum Durability {
    /// Never forced (`started`).
    None,
    /// By the group commit (`finished`).
    Group,
    /// Before `append` returns.
    Now,
}

/// The group commit of the journal open as `file`.
fn committer(file: &File, path: &Path) -> Result<commit::Committer> {
    let handle = file.try_clone().map_err(|e| Error::io(path, e))?;
    commit::Committer::start(handle, path.to_path_buf())
}

fn step_line(
    event: &str,
    step: &str,
    attempt: u32,
    fingerprint: &str,
    status: Option<RunStatus>,
    reason: Option<&str>,
    extra: Map<String, Value>,
) -> Map<String, Value> {
    let mut line = Map::new();
    line.insert("t".into(), Value::from(now()));
    line.insert("event".into(), Value::from(event));
    line.insert("step".into(), Value::from(step));
    line.insert("attempt".into(), Value::from(attempt));
    line.insert("fingerprint".into(), Value::from(fingerprint));
    if let Some(status) = status {
        line.insert("status".into(), Value::from(status.as_str()));
    }
    if let Some(reason) = reason {
        line.insert("reason".into(), Value::from(reason));
    }
    // Extra fields never override the pinned keys a reader relies on.
    for (k, v) in extra {
        line.entry(k).or_insert(v);
    }
    line
}

fn open_append(path: &Path) -> Result<File> {
    OpenOptions::new()
        .append(true)
        .open(path)
        .map_err(|e| Error::io(path, e))
}

/// Make a rename durable. Best effort: some filesystems refuse fsync on directories, and the
/// file's own data is already synced.
fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

#[cfg(test)]
mod tests;
