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

/// Write the three results files of `set`, each atomically (temp file, sync, rename), unless
/// they already hold exactly this set (a resume that added nothing leaves them untouched).
pub(crate) fn write(run_dir: &RunDir, set: &ResultSet) -> Result<()> {
    crate::store::rebuild::write_results(&run_dir.path, set).map(drop)
}

/// Give the memory a rewrite freed back to the system. glibc keeps a heap (arena) per thread and
/// reuses freed memory only within it: without this, the writer thread's serialization peak
/// stays resident beside the main thread's (the report's), adding both.
pub(crate) fn release_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free heap pages to the kernel; no pointer is touched.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Devices taken out of service, as the results files name them.
type Quarantined = std::collections::BTreeMap<String, String>;

enum Message {
    /// Write everything now and answer when it is on disk.
    Flush(mpsc::Sender<Result<()>>),
    /// The end of the campaign: write every result with these quarantined devices (unless the
    /// files already say exactly that), hand the results back as one set, and stop.
    Finish(Quarantined, mpsc::Sender<(Box<ResultSet>, Result<()>)>),
}

/// The writer thread's handle.
pub(crate) struct ResultsFiles {
    tx: Option<mpsc::Sender<Message>>,
    /// Results handed over since the thread last looked.
    inbox: Arc<Mutex<Vec<(usize, RunResult)>>>,
    thread: Option<JoinHandle<()>>,
    /// The first failed background rewrite (the dispatcher stops the campaign on it).
    failed: Arc<Mutex<Option<Error>>>,
}

impl ResultsFiles {
    /// Start the writer of `run_dir`'s results files for `planned` runs; each result comes
    /// with its run's index in plan order (the order of the rows), so the writer holds no copy
    /// of the runs' ids.
    pub(crate) fn start(
        run_dir: Arc<RunDir>,
        header: Header,
        planned: usize,
    ) -> Result<ResultsFiles> {
        let (tx, rx) = mpsc::channel();
        let failed = Arc::new(Mutex::new(None));
        let inbox = Arc::new(Mutex::new(Vec::new()));
        let state = Writer {
            inbox: inbox.clone(),
            run_dir,
            header,
            planned,
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

    /// Hand over the result of run `run` (its index in plan order); the files catch up within
    /// the rewrite interval.
    pub(crate) fn add(&self, run: usize, result: RunResult) {
        if self.tx.is_some() {
            self.inbox
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((run, result));
        }
    }

    /// Rewrite the files with every result handed over so far and wait until they are on disk.
    pub(crate) fn flush(&self) -> Result<()> {
        let (reply, answer) = mpsc::channel();
        let tx = self.tx.as_ref().ok_or_else(stopped)?;
        tx.send(Message::Flush(reply)).map_err(|_| stopped())?;
        answer.recv().map_err(|_| stopped())?
    }

    /// The end of the campaign: every result handed over, in plan order, as the result set
    /// with `quarantined` — written first on the writer thread unless the files already say
    /// exactly this (the final write on the same thread as every rewrite, so the memory its
    /// serialization takes is the memory the rewrites already took, not a second heap's worth)
    /// — and the thread stops. The results move out of the writer: they are held once.
    pub(crate) fn finish(&mut self, quarantined: Quarantined) -> (ResultSet, Result<()>) {
        let (reply, answer) = mpsc::channel();
        let sent = (self.tx.as_ref()).map(|tx| tx.send(Message::Finish(quarantined, reply)));
        let answer = match sent {
            Some(Ok(())) => answer.recv().ok(),
            _ => None,
        };
        self.stop();
        match answer {
            Some((set, result)) => (*set, result),
            None => (ResultSet::default(), Err(stopped())),
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
    inbox: Arc<Mutex<Vec<(usize, RunResult)>>>,
    run_dir: Arc<RunDir>,
    header: Header,
    /// How many runs are planned (a result of a larger index is unplanned).
    planned: usize,
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
                Some(Message::Finish(quarantined, reply)) => {
                    // When the files already hold every result and there is no quarantine to
                    // add, they already say exactly this.
                    let same = !dirty && self.written.is_some() && quarantined.is_empty();
                    let mut set = self.take_set();
                    set.quarantined = quarantined;
                    let result = if same {
                        Ok(())
                    } else {
                        write(&self.run_dir, &set)
                    };
                    release_memory();
                    let _ = reply.send((Box::new(set), result));
                    return;
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
        for (run, result) in taken {
            self.insert(run, result);
        }
        any
    }

    fn insert(&mut self, run: usize, result: RunResult) {
        self.written = None;
        if run < self.planned {
            if self.slots.len() <= run {
                self.slots.resize_with(run + 1, || None);
            }
            self.slots[run] = Some(result);
        } else {
            self.unplanned.push(result);
        }
    }

    /// Every result so far, moved out of the writer into a set in plan order.
    fn take_set(&mut self) -> ResultSet {
        let mut runs: Vec<RunResult> = Vec::with_capacity(self.slots.len() + self.unplanned.len());
        runs.extend(self.slots.drain(..).flatten());
        runs.append(&mut self.unplanned);
        ResultSet {
            campaign: self.header.campaign.clone(),
            timestamp: self.header.timestamp.clone(),
            provenance: self.header.provenance.clone(),
            runs,
            quarantined: Default::default(),
            metrics: self.header.metrics.clone(),
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
        let files = ResultsFiles::start(rd.clone(), header(), 2).unwrap();
        files.add(1, run("b", "host"));
        files.add(0, run("a", "host"));
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
        files.add(1, run("b", "host"));
        files.flush().unwrap();
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(rd.file("results.json")).unwrap())
                .unwrap();
        assert_eq!(doc["runs"].as_array().unwrap().len(), 2);
    }

    /// The end of a campaign takes the one copy of the results back, in plan order: written
    /// again only for what the files do not say yet (here, the quarantine).
    #[test]
    fn finish_hands_the_results_back_in_plan_order_and_writes_the_quarantine() {
        let tmp = tempfile::tempdir().unwrap();
        let rd = Arc::new(RunDir::open(tmp.path()));
        let mut files = ResultsFiles::start(rd.clone(), header(), 3).unwrap();
        files.add(2, run("c", "host"));
        files.add(0, run("a", "host"));
        files.flush().unwrap();
        files.add(1, run("b", "host"));
        let quarantined = [("3".to_string(), "probe failed".to_string())].into();
        let (set, written) = files.finish(quarantined);
        written.unwrap();
        let ids: Vec<&str> = set.runs.iter().map(|r| r.case_id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "c"]);
        assert_eq!(set.campaign, "smoke");
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(rd.file("results.json")).unwrap())
                .unwrap();
        assert_eq!(doc["runs"].as_array().unwrap().len(), 3);
        assert_eq!(doc["quarantined"]["3"], "probe failed", "{doc}");
        // The thread is gone: a second finish has nothing to hand back.
        assert!(files.finish(Default::default()).1.is_err());
    }

    #[test]
    fn results_added_without_a_flush_reach_the_files_by_themselves() {
        let tmp = tempfile::tempdir().unwrap();
        let rd = Arc::new(RunDir::open(tmp.path()));
        let files = ResultsFiles::start(rd.clone(), header(), 1).unwrap();
        files.add(0, run("a", "host"));
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
        let files = ResultsFiles::start(rd, header(), 1).unwrap();
        assert!(files.flush().is_err());
        files.add(0, run("a", "host"));
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
