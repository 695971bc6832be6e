//! The performance history: every campaign's runs in one embedded SQLite database,
//! `<results dir>/history.sqlite`, so series can be followed across days and commits.
//!
//! Owns opening the store (WAL, busy timeout, foreign keys, migrations by `user_version`),
//! `ingest` (a run dir's `ResultSet` and provenance, idempotently, in one transaction) and
//! `query` (series, run-dir listings). It computes no verdicts: change points are
//! `analysis::changepoint`'s, printing is `cli::history`'s. A SIGKILL at any moment leaves the
//! store as it was before or after a whole ingest — SQLite's journal guarantees it, provided
//! every write goes through one transaction as here.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::Connection;

use crate::error::{Error, Result};
use crate::store::layout::DEFAULT_RESULTS_DIR;

pub(crate) mod calibrations;
pub(crate) mod ingest;
pub(crate) mod query;
mod schema;
pub(crate) mod stragglers;

pub use ingest::host_fingerprint;

/// File name of the store inside a results dir.
pub const FILE_NAME: &str = "history.sqlite";

/// How long a writer waits for another writer before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(60);

/// An open history store.
pub struct History {
    pub(crate) conn: Connection,
    pub(crate) path: PathBuf,
}

/// The store of a results dir: `DIR/history.sqlite`; the default results dir
/// (`results/campaigns`, or any `…/results/campaigns`) keeps it one level up, at
/// `results/history.sqlite`, beside the campaigns rather than among them.
pub fn store_path(results_dir: Option<&Path>) -> PathBuf {
    let dir = crate::store::layout::results_dir(results_dir);
    if dir.ends_with(DEFAULT_RESULTS_DIR) {
        if let Some(parent) = dir.parent() {
            return parent.join(FILE_NAME);
        }
    }
    dir.join(FILE_NAME)
}

/// The results dir a run dir belongs to, when it sits where campaign puts run dirs:
/// `<results dir>/<campaign>/run_<stamp>` with `<campaign>` the result set's campaign name.
/// A run dir anywhere else (a copied old harness dir) has none.
pub fn results_dir_of(run_dir: &Path, campaign: &str) -> Option<PathBuf> {
    let abs = std::path::absolute(run_dir).ok()?;
    let name = abs.file_name()?.to_string_lossy().into_owned();
    let parent = abs.parent()?;
    if !name.starts_with("run_") || parent.file_name()?.to_string_lossy() != campaign {
        return None;
    }
    parent.parent().map(Path::to_path_buf)
}

/// Map a SQLite error to the library's error, naming the store.
pub(crate) fn db_error(path: &Path, e: rusqlite::Error) -> Error {
    Error::Environment(format!("{}: history store: {e}", path.display()))
}

impl History {
    /// Open (creating it and its folder if needed) and migrate the store at `path`.
    pub fn open(path: &Path) -> Result<History> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        }
        // SQLite follows links and opens devices, and puts its `-wal`/`-journal` files beside
        // whatever the path names (`history.sqlite -> /dev/zero` made it create
        // `/dev/zero-journal`): the store must be a regular file of its own, or not exist yet.
        if let Ok(meta) = std::fs::symlink_metadata(path) {
            if !meta.file_type().is_file() {
                return Err(Error::invalid(
                    path,
                    "the history store is not a regular file (a link, a device or a folder); remove it or choose another --results-dir",
                ));
            }
        }
        let conn = Connection::open(path).map_err(|e| db_error(path, e))?;
        let mut h = History {
            conn,
            path: path.to_path_buf(),
        };
        h.configure()?;
        h.migrate()?;
        Ok(h)
    }

    /// Open an existing store for reading; a missing store is a usage error naming the path.
    pub fn open_existing(path: &Path) -> Result<History> {
        // A link or a device there is refused by `open`, by name; only nothing is "no store".
        if std::fs::symlink_metadata(path).is_err() {
            return Err(Error::Usage(format!(
                "{}: no history store here (it is created by `campaign run`, `resume`, `report` \
                 or `campaign history ingest`; pass --results-dir for another results dir)",
                path.display()
            )));
        }
        History::open(path)
    }

    fn configure(&self) -> Result<()> {
        let e = |err| db_error(&self.path, err);
        self.conn.busy_timeout(BUSY_TIMEOUT).map_err(e)?;
        // WAL: readers never block the writer and a killed writer leaves only an uncommitted
        // tail that the next open discards.
        let mode: String = self
            .conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(e)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(Error::Environment(format!(
                "{}: history store: cannot switch to WAL journaling (got `{mode}`); is the \
                 filesystem a network mount?",
                self.path.display()
            )));
        }
        self.conn
            .execute_batch("PRAGMA foreign_keys = ON; PRAGMA synchronous = FULL;")
            .map_err(e)?;
        Ok(())
    }

    /// The schema version (`PRAGMA user_version`).
    pub fn version(&self) -> Result<u32> {
        self.conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| db_error(&self.path, e))
    }

    fn migrate(&mut self) -> Result<()> {
        let have = self.version()?;
        let latest = schema::latest();
        if have > latest {
            return Err(Error::Environment(format!(
                "{}: history store has schema version {have}, this campaign knows up to \
                 {latest}; use a newer campaign",
                self.path.display()
            )));
        }
        for (i, sql) in schema::MIGRATIONS.iter().enumerate().skip(have as usize) {
            let path = self.path.clone();
            let e = |err| db_error(&path, err);
            let tx = self
                .conn
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                .map_err(e)?;
            // Another process may have migrated while we waited for the write lock.
            let now: u32 = tx
                .query_row("PRAGMA user_version", [], |r| r.get(0))
                .map_err(e)?;
            if now > i as u32 {
                continue;
            }
            tx.execute_batch(sql).map_err(e)?;
            tx.pragma_update(None, "user_version", i as u32 + 1)
                .map_err(e)?;
            tx.commit().map_err(e)?;
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests;
