//! Group commit of the journal: `finished` lines are appended at once by the scheduler's
//! thread and made durable by a thread of their own, one `fdatasync` for every line appended
//! since the last one. A run's end costs the scheduler one `write`, not a wait for the disk's
//! cache flush; while one sync is in flight, the runs finishing meanwhile share the next.
//!
//! What a crash can do is unchanged: a line that reached the page cache survives a crash of
//! campaign (SIGKILL included); only a power loss or kernel crash can lose the lines of the last
//! sync in flight, and those runs then read as never finished and run again — the same as runs
//! in flight. [`Committer::wait`] makes everything appended so far durable (the end of a
//! session), and a failed sync is reported by the next append (exit 4, like a failed write).

use std::fs::File;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use crate::error::{Error, Result};

#[derive(Default)]
struct State {
    /// Lines appended that must become durable (a sequence number).
    appended: u64,
    /// Lines known durable.
    synced: u64,
    /// Number of `fdatasync` calls issued.
    syncs: u64,
    failed: Option<String>,
    stop: bool,
}

struct Shared {
    state: Mutex<State>,
    /// Wakes the sync thread (new lines, stop) and waiters (a sync ended).
    changed: Condvar,
}

/// The sync thread of one open journal.
pub(super) struct Committer {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    path: PathBuf,
}

impl std::fmt::Debug for Committer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Committer")
            .field("path", &self.path)
            .finish()
    }
}

impl Committer {
    /// Start syncing `file` (a handle on the journal's open file) in the background.
    pub(super) fn start(file: File, path: PathBuf) -> Result<Committer> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        });
        let theirs = shared.clone();
        let thread = std::thread::Builder::new()
            .name("journal-commit".into())
            .stack_size(64 * 1024)
            .spawn(move || serve(&theirs, &file))
            .map_err(|e| Error::io(&path, e))?;
        Ok(Committer {
            shared,
            thread: Some(thread),
            path,
        })
    }

    /// A line was appended that must become durable. Fails with an earlier sync's error.
    pub(super) fn appended(&self) -> Result<()> {
        let mut state = self.lock();
        if let Some(why) = &state.failed {
            return Err(self.error(why));
        }
        state.appended += 1;
        self.shared.changed.notify_all();
        Ok(())
    }

    /// Wait until every line appended so far is durable.
    pub(super) fn wait(&self) -> Result<()> {
        let mut state = self.lock();
        let target = state.appended;
        while state.synced < target && state.failed.is_none() && !state.stop {
            state = self
                .shared
                .changed
                .wait(state)
                .unwrap_or_else(|e| e.into_inner());
        }
        match &state.failed {
            Some(why) => Err(self.error(why)),
            None => Ok(()),
        }
    }

    /// `fdatasync` calls issued so far.
    #[cfg(test)]
    pub(super) fn syncs(&self) -> u64 {
        self.lock().syncs
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn error(&self, why: &str) -> Error {
        Error::io(&self.path, std::io::Error::other(why.to_string()))
    }
}

impl Drop for Committer {
    /// Make what was appended durable, then stop the thread.
    fn drop(&mut self) {
        let _ = self.wait();
        self.lock().stop = true;
        self.shared.changed.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(shared: &Shared, file: &File) {
    let mut state = shared.state.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        while state.synced == state.appended && !state.stop {
            state = shared
                .changed
                .wait(state)
                .unwrap_or_else(|e| e.into_inner());
        }
        if state.synced == state.appended && state.stop {
            return;
        }
        let target = state.appended;
        drop(state);
        // Every line counted in `target` was written before it was counted.
        let result = file.sync_data();
        state = shared.state.lock().unwrap_or_else(|e| e.into_inner());
        state.syncs += 1;
        match result {
            Ok(()) => state.synced = target,
            Err(e) => {
                state.failed.get_or_insert(e.to_string());
                state.stop = true;
            }
        }
        shared.changed.notify_all();
        if state.stop && state.failed.is_some() {
            return;
        }
    }
}
