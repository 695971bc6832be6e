//! The results files while a campaign runs: `results.json`, `results.csv` and `samples.csv`
//! rewritten by a thread of their own, so serializing and syncing them never holds up the
//! scheduler's dispatch of the next run.
//!
//! The dispatcher hands over each finished run's result ([`ResultsFiles::add`]: into an inbox the
//! thread empties when it wakes for a rewrite — a run's end wakes no thread) and returns at once.
//! The thread keeps every result in its planned position and rewrites the three files (through
//! `store::atomic`, synced) when new results wait and the pause since the *end* of the last write
//! has passed: at least [`REWRITE_INTERVAL`], and at least [`PAUSE_PER_WRITE`] times as long as
//! that write took, so however large the files grow, rewriting them takes a bounded share of one
//! core. `collect` asks for a write of everything and waits for it ([`ResultsFiles::flush`]).
//! Every run's bundle is on disk before its result arrives here, so a crash between two rewrites
//! loses nothing that `report` or `resume` cannot rebuild. It must not decide anything about the
//! results: the rows are `store::{json,csv}`'s.

use std::collections::HashMap;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::model::results::{Provenance, ResultSet, RunResult};
use crate::store::layout::RunDir;

/// Shortest pause between the end of one rewrite and the start of the next: the files are a
/// view of a campaign in progress (the journal and bundles are the record), so a second's lag
/// costs nothing, while every rewrite takes CPU the runs could use.
pub(crate) const REWRITE_INTERVAL: Duration = Duration::from_secs(1);

/// The pause after a rewrite is at least this many times the rewrite's own duration: the
/// rewrites take at most a tenth of one core however large the campaign.
pub(crate) const PAUSE_PER_WRITE: u32 = 10;

/// What the results files say besides the runs.
#[derive(Debug, Clone)]
pub(crate) struct Header {
    pub(crate) campaign: String,
    pub(crate) timestamp: String,
    pub(crate) provenance: Provenance,
    /// Each stack's headline metric, when not `execute_s`.
    pub(crate) metrics: std::collections::BTreeMap<String, crate::model::results::Metric>,
}

/// Write the three results files of `set`, each atomically (temp file, sync, rename).
pub(crate) fn write(run_dir: &RunDir, set: &ResultSet) -> Result<()> {
    crate::store::rebuild::write_results(&run_dir.path, set)
}

/// Give the memory a rewrite freed back to the system. glibc keeps a heap (arena) per thread and
/// reuses freed memory only within it: without this, the writer thread's serialization peak
/// stays resident beside the main thread's (the report's), adding both.
fn release_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free heap pages to the kernel; no pointer is touched.
    unsafe {
        libc::malloc_trim(0);
    }
}

enum Message {
    /// Write everything now and answer when it is on disk.
    Flush(mpsc::Sender<Result<()>>),
    /// Write this set (the end of the campaign) and hand it back.
    Write(Box<ResultSet>, mpsc::Sender<(Box<ResultSet>, Result<()>)>),
}

/// The writer thread's handle.
pub(crate) struct ResultsFiles {
    tx: Option<mpsc::Sender<Message>>,
    /// Results handed over since the thread last looked.
    inbox: Arc<Mutex<Vec<RunResult>>>,
    thread: Option<JoinHandle<()>>,
    /// The first failed background rewrite (the dispatcher stops the campaign on it).
    failed: Arc<Mutex<Option<Error>>>,
}

impl ResultsFiles {
    /// Start the writer of `run_dir`'s results files; `planned` are the `(case_id, stack)` of
    /// every planned run in plan order (the order of the rows).
    pub(crate) fn start(
        run_dir: Arc<RunDir>,
        header: Header,
        planned: Vec<(String, String)>,
    ) -> Result<ResultsFiles> {
        let (tx, rx) = mpsc::channel();
        let failed = Arc::new(Mutex::new(None));
        let inbox = Arc::new(Mutex::new(Vec::new()));
        let state = Writer {
            inbox: inbox.clone(),
            run_dir,
            header,
            order: planned
                .into_iter()
                .enumerate()
                .map(|(i, key)| (key, i))
                .collect(),
            slots: Vec::new(),
            unplanned: Vec::new(),
            failed: failed.clone(),
            written: None,
        };
        let thread = std::thread::Builder::new()
            .name("results-files".into())
            .spawn(move || state.serve(rx))
            .map_err(|e| Error::Environment(format!("cannot start the results writer: {e}")))?;
        Ok(ResultsFiles {
            tx: Some(tx),
            inbox,
            thread: Some(thread),
            failed,
        })
    }

    /// Hand over a finished run's result; the files catch up within the rewrite interval.
    pub(crate) fn add(&self, result: RunResult) {
        if self.tx.is_some() {
            self.inbox
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(result);
        }
    }

    /// Rewrite the files with every result handed over so far and wait until they are on disk.
    pub(crate) fn flush(&self) -> Result<()> {
        let (reply, answer) = mpsc::channel();
        let tx = self.tx.as_ref().ok_or_else(stopped)?;
        tx.send(Message::Flush(reply)).map_err(|_| stopped())?;
        answer.recv().map_err(|_| stopped())?
    }

    /// Write `set` on the writer thread and hand it back with the outcome (the final write: on
    /// the same thread as every rewrite, so the memory its serialization takes is the memory the
    /// rewrites already took, not a second heap's worth). Without the thread, written here.
    pub(crate) fn write_set(&self, run_dir: &RunDir, set: ResultSet) -> (ResultSet, Result<()>) {
        let Some(tx) = &self.tx else {
            let result = write(run_dir, &set);
            return (set, result);
        };
        let (reply, answer) = mpsc::channel();
        let sent = tx.send(Message::Write(Box::new(set), reply));
        match sent {
            Ok(()) => match answer.recv() {
                Ok((set, result)) => (*set, result),
                Err(_) => (ResultSet::default(), Err(stopped())),
            },
            Err(mpsc::SendError(Message::Write(set, _))) => {
                let result = write(run_dir, &set);
                (*set, result)
            }
            Err(_) => (ResultSet::default(), Err(stopped())),
        }
    }

    /// The first background rewrite that failed, once.
    pub(crate) fn take_failure(&self) -> Option<Error> {
        self.failed.lock().ok().and_then(|mut f| f.take())
    }

    /// Stop the thread (after any write in progress); later writes are the caller's.
    pub(crate) fn stop(&mut self) {
        self.tx.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ResultsFiles {
    fn drop(&mut self) {
        self.stop();
    }
}

fn stopped() -> Error {
    Error::Environment("the results writer stopped".into())
}

/// The writer thread's state: every result so far, by planned position.
struct Writer {
    inbox: Arc<Mutex<Vec<RunResult>>>,
    run_dir: Arc<RunDir>,
    header: Header,
    order: HashMap<(String, String), usize>,
    slots: Vec<Option<RunResult>>,
    /// Results of runs that are not in the plan (none in practice), in arrival order.
    unplanned: Vec<RunResult>,
    failed: Arc<Mutex<Option<Error>>>,
    /// How many runs the files on disk hold, when they hold every result handed over.
    written: Option<usize>,
}

impl Writer {
    fn serve(mut self, rx: mpsc::Receiver<Message>) {
        let mut dirty = false;
        // The first rewrite waits an interval too: the first runs of a campaign (or every kept
        // run of a resume, settled at once) arrive together.
        let mut next_due = Instant::now() + REWRITE_INTERVAL;
        loop {
            let message = match rx.recv_timeout(next_due.saturating_duration_since(Instant::now()))
            {
                Ok(m) => Some(m),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => return,
            };
            // Everything handed over before a message was sent is in the inbox by now (one
            // sender: `add` returns before `flush` or `write_set` sends).
            dirty |= self.take_inbox();
            match message {
                Some(Message::Flush(reply)) => {
                    let (result, due) = self.write_timed();
                    next_due = due;
                    dirty = false;
                    let _ = reply.send(result);
                }
                Some(Message::Write(set, reply)) => {
                    // Same campaign, same planned order: when the files already hold every
                    // result and the set has nothing more (no extra run, no quarantine), they
                    // already say exactly this.
                    let same = !dirty
                        && self.written == Some(set.runs.len())
                        && set.quarantined.is_empty();
                    let result = if same {
                        Ok(())
                    } else {
                        write(&self.run_dir, &set)
                    };
                    release_memory();
                    let _ = reply.send((set, result));
                    // The given set is the final word: nothing is left to rewrite.
                    dirty = false;
                    next_due = Instant::now() + REWRITE_INTERVAL;
                }
                None if dirty => {
                    let (result, due) = self.write_timed();
                    next_due = due;
                    dirty = false;
                    if let Err(e) = result {
                        if let Ok(mut f) = self.failed.lock() {
                            f.get_or_insert(e);
                        }
                    }
                }
                // Nothing new: look again an interval later.
                None => next_due = Instant::now() + REWRITE_INTERVAL,
            }
        }
    }

    /// Move the results handed over into their planned places; true when there were any.
    fn take_inbox(&mut self) -> bool {
        let taken = std::mem::take(&mut *self.inbox.lock().unwrap_or_else(|e| e.into_inner()));
        let any = !taken.is_empty();
        for result in taken {
            self.insert(result);
        }
        any
    }

    fn insert(&mut self, result: RunResult) {
        self.written = None;
        let key = (result.case_id.clone(), result.stack.clone());
        match self.order.get(&key) {
            Some(&i) => {
                if self.slots.len() <= i {
                    self.slots.resize_with(i + 1, || None);
                }
                self.slots[i] = Some(result);
            }
            None => self.unplanned.push(result),
        }
    }

    /// Write every result so far; returns the outcome and when the next write may start.
    fn write_timed(&mut self) -> (Result<()>, Instant) {
        let began = Instant::now();
        // The results move into the set and back: no copy of every run per rewrite.
        let taken: Vec<usize> = (self.slots.iter().enumerate())
            .filter(|(_, s)| s.is_some())
            .map(|(i, _)| i)
            .collect();
        let mut runs: Vec<RunResult> = Vec::with_capacity(taken.len() + self.unplanned.len());
        runs.extend(self.slots.iter_mut().filter_map(Option::take));
        runs.append(&mut self.unplanned);
        let set = ResultSet {
            campaign: self.header.campaign.clone(),
            timestamp: self.header.timestamp.clone(),
            provenance: self.header.provenance.clone(),
            runs,
            quarantined: Default::default(),
            metrics: self.header.metrics.clone(),
        };
        let result = write(&self.run_dir, &set);
        release_memory();
        let count = set.runs.len();
        let mut runs = set.runs.into_iter();
        for (i, r) in taken.iter().zip(runs.by_ref()) {
            self.slots[*i] = Some(r);
        }
        self.unplanned.extend(runs);
        self.written = result.is_ok().then_some(count);
        let ended = Instant::now();
        let pause = REWRITE_INTERVAL.max((ended - began) * PAUSE_PER_WRITE);
        (result, ended + pause)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::results::RunStatus;
    use crate::store::results_json::tests::result;

    fn header() -> Header {
        Header {
            campaign: "smoke".into(),
            timestamp: "20261201_000000".into(),
            provenance: Provenance::default(),
            metrics: Default::default(),
        }
    }

    fn run(case_id: &str, stack: &str) -> RunResult {
        let mut r = result(RunStatus::Pass);
        r.case_id = case_id.into();
        r.stack = stack.into();
        r
    }

    #[test]
    fn a_flush_writes_every_result_handed_over_in_plan_order() {
        let tmp = tempfile::tempdir().unwrap();
        let rd = Arc::new(RunDir::open(tmp.path()));
        let planned = vec![("a".into(), "host".into()), ("b".into(), "host".into())];
        let files = ResultsFiles::start(rd.clone(), header(), planned).unwrap();
        files.add(run("b", "host"));
        files.add(run("a", "host"));
        files.flush().unwrap();
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(rd.file("results.json")).unwrap())
                .unwrap();
        let ids: Vec<&str> = doc["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["case_id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["a", "b"]);
        let csv = std::fs::read_to_string(rd.file("results.csv")).unwrap();
        assert_eq!(csv.lines().count(), 3, "{csv}");
        // Results stay with the writer after a write: a later flush still has both.
        files.add(run("b", "host"));
        files.flush().unwrap();
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(rd.file("results.json")).unwrap())
                .unwrap();
        assert_eq!(doc["runs"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn results_added_without_a_flush_reach_the_files_by_themselves() {
        let tmp = tempfile::tempdir().unwrap();
        let rd = Arc::new(RunDir::open(tmp.path()));
        let files =
            ResultsFiles::start(rd.clone(), header(), vec![("a".into(), "host".into())]).unwrap();
        files.add(run("a", "host"));
        // The background rewrite comes within an interval, unasked; wait on the file, capped.
        let path = rd.file("results.csv");
        let deadline = Instant::now() + Duration::from_secs(120);
        while !path.exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(path.exists(), "results.csv never appeared");
    }

    #[test]
    fn a_failed_background_write_is_reported_once() {
        let tmp = tempfile::tempdir().unwrap();
        // A run dir that is a file: nothing can be written under it.
        let blocker = tmp.path().join("blocker");
        std::fs::write(&blocker, "a file").unwrap();
        let rd = Arc::new(RunDir::open(&blocker));
        let files = ResultsFiles::start(rd, header(), vec![("a".into(), "host".into())]).unwrap();
        assert!(files.flush().is_err());
        files.add(run("a", "host"));
        let deadline = Instant::now() + Duration::from_secs(120);
        let mut failure = None;
        while failure.is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
            failure = files.take_failure();
        }
        assert!(failure.unwrap().to_string().contains("blocker"));
        assert!(files.take_failure().is_none());
    }
}
