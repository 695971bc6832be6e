//! The Slurm executor as a shared service for an engine that runs each run as its own task:
//! one background task owns the [`SlurmExecutor`] (so polling stays one batched query for all
//! jobs) and each run awaits its own job's end; plus turning a finished job back into what the
//! local executor would have produced (a [`ProcessOutcome`] and the output lines of `run.log`).
//!
//! Owns the request channel and the per-job end notifications. It does not journal (the caller
//! records the job id from [`Submitted::id`] before awaiting) and does not judge runs.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::error::{Error, Result};
use crate::executor::slurm::{Attached, BatchJob, JobEnd, JobId, SlurmExecutor, Verdict};
use crate::executor::{KillReason, ProcessOutcome};
use crate::model::output::{OutputLine, Stream};

enum Request {
    Submit(Box<BatchJob>, oneshot::Sender<Result<Submitted>>),
    Reattach(Attached, oneshot::Sender<oneshot::Receiver<JobEnd>>),
    CancelAll(oneshot::Sender<Result<()>>),
    Cancel(Vec<JobId>, oneshot::Sender<Result<()>>),
    Watching(oneshot::Sender<Vec<JobId>>),
}

/// A submitted job: its id (journal it) and its end (await it).
#[derive(Debug)]
pub struct Submitted {
    pub id: JobId,
    pub end: oneshot::Receiver<JobEnd>,
}

/// Cheap to clone; every clone talks to the same executor task.
#[derive(Debug, Clone)]
pub struct SlurmService {
    tx: mpsc::Sender<Request>,
}

impl SlurmService {
    /// Start the task owning `executor`. It ends when every `SlurmService` clone is dropped
    /// and no job is watched any more, or with the error of a Slurm that stopped answering.
    pub fn start(executor: SlurmExecutor) -> (SlurmService, JoinHandle<Result<()>>) {
        let (tx, rx) = mpsc::channel(64);
        (SlurmService { tx }, tokio::spawn(serve(executor, rx)))
    }

    /// Submit `job`; the id is known as soon as sbatch answered.
    pub async fn submit(&self, job: BatchJob) -> Result<Submitted> {
        let (tx, rx) = oneshot::channel();
        self.send(Request::Submit(Box::new(job), tx)).await?;
        rx.await.map_err(|_| gone())?
    }

    /// Watch a job submitted before a restart; resolves when it ends.
    pub(crate) async fn reattach(&self, job: Attached) -> Result<oneshot::Receiver<JobEnd>> {
        let (tx, rx) = oneshot::channel();
        self.send(Request::Reattach(job, tx)).await?;
        rx.await.map_err(|_| gone())
    }

    /// scancel every watched job; their ends arrive as `Interrupted`.
    pub(crate) async fn cancel_all(&self) -> Result<()> {
        let (tx, rx) = oneshot::channel();
        self.send(Request::CancelAll(tx)).await?;
        rx.await.map_err(|_| gone())?
    }

    /// scancel these jobs (ids already cancelled by this executor are not sent again).
    pub(crate) async fn cancel(&self, ids: Vec<JobId>) -> Result<()> {
        let (tx, rx) = oneshot::channel();
        self.send(Request::Cancel(ids, tx)).await?;
        rx.await.map_err(|_| gone())?
    }

    /// The jobs being watched now (submitted or re-attached, not ended).
    pub(crate) async fn watching(&self) -> Result<Vec<JobId>> {
        let (tx, rx) = oneshot::channel();
        self.send(Request::Watching(tx)).await?;
        rx.await.map_err(|_| gone())
    }

    async fn send(&self, request: Request) -> Result<()> {
        self.tx.send(request).await.map_err(|_| gone())
    }
}

fn gone() -> Error {
    Error::Environment("the Slurm executor stopped (squeue kept failing?)".into())
}

async fn serve(mut exec: SlurmExecutor, mut rx: mpsc::Receiver<Request>) -> Result<()> {
    let mut waiting: BTreeMap<JobId, oneshot::Sender<JobEnd>> = BTreeMap::new();
    let mut open = true;
    loop {
        if !open && exec.watching().is_empty() {
            return Ok(());
        }
        let busy = !exec.watching().is_empty();
        tokio::select! {
            request = rx.recv(), if open => match request {
                None => open = false,
                Some(Request::Submit(job, reply)) => {
                    let result = exec.submit(&job).await.map(|id| {
                        let (tx, end) = oneshot::channel();
                        waiting.insert(id, tx);
                        Submitted { id, end }
                    });
                    let _ = reply.send(result);
                }
                Some(Request::Reattach(job, reply)) => {
                    let (tx, end) = oneshot::channel();
                    waiting.insert(job.job_id, tx);
                    exec.reattach(vec![job]);
                    let _ = reply.send(end);
                }
                Some(Request::CancelAll(reply)) => {
                    let _ = reply.send(exec.cancel_all().await);
                }
                Some(Request::Cancel(ids, reply)) => {
                    let _ = reply.send(exec.cancel(&ids).await);
                }
                Some(Request::Watching(reply)) => {
                    let _ = reply.send(exec.watching());
                }
            },
            ended = exec.poll(), if busy => {
                for (id, end) in ended? {
                    if let Some(tx) = waiting.remove(&id) {
                        let _ = tx.send(end);
                    }
                }
            }
        }
    }
}

/// The job's end as the local executor would describe the process: the recorded exit when the
/// stack ran to its end; a timeout or interruption kill when Slurm stopped it; otherwise no
/// exit code (the caller records `end.verdict.reason()`, which carries Slurm's state).
pub fn process_outcome(end: &JobEnd) -> ProcessOutcome {
    if let Some(outcome) = &end.outcome {
        if end.verdict == Verdict::Parse {
            return outcome.clone();
        }
    }
    let killed = match end.verdict {
        Verdict::Timeout(_) => Some(KillReason::Timeout),
        Verdict::Interrupted(_) => Some(KillReason::Interrupted),
        _ => None,
    };
    ProcessOutcome {
        exit_code: None,
        signal: None,
        killed,
        elapsed: end
            .outcome
            .as_ref()
            .map(|o| o.elapsed)
            .unwrap_or(Duration::ZERO),
        cpu_wait: None,
    }
}

/// Feed the job's `run.log` to `on_line` as output lines (stdout, line ending removed).
/// Slurm merges both streams into the file, and arrival times are not known afterwards, so
/// every line is `Stream::Stdout` with `at = 0`; parsers that time phases by arrival (markers)
/// get no phase times under Slurm. A missing log feeds nothing.
pub fn replay_log(log: &Path, on_line: &mut dyn FnMut(OutputLine)) -> Result<()> {
    let bytes = match std::fs::read(log) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(log, e)),
    };
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        let mut line = line.strip_suffix(b"\n").unwrap_or(line);
        line = line.strip_suffix(b"\r").unwrap_or(line);
        on_line(OutputLine {
            stream: Stream::Stdout,
            at: Duration::ZERO,
            text: String::from_utf8_lossy(line).into_owned(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::slurm::JobState;

    fn end(verdict: Verdict, outcome: Option<ProcessOutcome>) -> JobEnd {
        JobEnd {
            state: JobState::Completed,
            reason: None,
            slurm_exit: None,
            verdict,
            outcome,
            devices: None,
            placement: None,
            source: "squeue",
        }
    }

    fn exited(code: i32) -> ProcessOutcome {
        ProcessOutcome {
            exit_code: Some(code),
            signal: None,
            killed: None,
            elapsed: Duration::from_secs(2),
            cpu_wait: None,
        }
    }

    #[test]
    fn parse_keeps_the_recorded_exit() {
        assert_eq!(
            process_outcome(&end(Verdict::Parse, Some(exited(3)))),
            exited(3)
        );
    }

    #[test]
    fn slurm_stops_become_kills_and_failures_have_no_exit_code() {
        let t = process_outcome(&end(Verdict::Timeout("t".into()), Some(exited(143))));
        assert_eq!((t.killed, t.exit_code), (Some(KillReason::Timeout), None));
        let i = process_outcome(&end(Verdict::Interrupted("c".into()), None));
        assert_eq!(i.killed, Some(KillReason::Interrupted));
        let f = process_outcome(&end(Verdict::Fail("NODE_FAIL".into()), None));
        assert_eq!((f.killed, f.exit_code), (None, None));
        assert!(!f.success());
    }

    #[test]
    fn replay_gives_lines_without_endings_and_the_last_partial_line() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("run.log");
        std::fs::write(&log, b"CAMPAIGN_SAMPLE {}\r\nerr line\nno newline").unwrap();
        let mut lines = Vec::new();
        replay_log(&log, &mut |l| lines.push(l.text)).unwrap();
        assert_eq!(lines, vec!["CAMPAIGN_SAMPLE {}", "err line", "no newline"]);
        let mut none = 0;
        replay_log(&dir.path().join("missing.log"), &mut |_| none += 1).unwrap();
        assert_eq!(none, 0);
    }
}
