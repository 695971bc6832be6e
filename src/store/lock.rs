//! The run-dir lock: one `campaign run`/`resume` per run dir at a time.
//!
//! Owns `run_dir/.lock`: an advisory exclusive lock (`File::try_lock`, flock on Linux) held for the
//! life of a [`RunDirLock`], plus the holder's pid, host and start time written into the file so
//! a refused second process can say who holds it. The operating system releases the lock when the
//! holder dies, however it dies, so a killed campaign never blocks a later resume. A session that
//! ends (finished, interrupted or failed, not killed) deletes the file, so a finished run dir
//! holds no stale `.lock`; a killed one leaves a file nobody holds, which the next `resume`
//! simply takes. It must not be used by read-only commands (`status` works while a campaign runs).

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::store::host::hostname;

/// File name of the lock inside a run dir.
pub(crate) const FILE_NAME: &str = ".lock";

/// Holds the run dir's lock until dropped.
#[derive(Debug)]
pub struct RunDirLock {
    // Deleted on drop.
    path: PathBuf,
    // Kept open: closing the file is what releases the lock.
    _file: File,
}

impl RunDirLock {
    /// Take the lock of `run_dir`, or fail with `Error::Locked` naming the holder.
    pub fn acquire(run_dir: &Path) -> Result<RunDirLock> {
        let path = run_dir.join(FILE_NAME);
        let open = || {
            use std::os::unix::fs::OpenOptionsExt;
            // Never truncate on open: the file may hold the current holder's identity. Never
            // through a link: a run dir from elsewhere must not make campaign write elsewhere.
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
                .open(&path)
                .map_err(|e| Error::io(&path, e))
        };
        let mut file = open()?;
        // File::try_lock is std since 1.89 (the toolchain here is newer); the crate's declared
        // rust-version stays older so that other modules' lints do not change under them.
        // A holder that died a moment ago may still have a child between fork and exec (the
        // child's pre-exec step moves it into its containment cgroup) holding a copy of the
        // lock descriptor; it lets go at exec. So a holder whose pid is gone from this host is
        // waited for briefly before the run dir is called in use.
        let until = std::time::Instant::now() + DEAD_HOLDER_WAIT;
        loop {
            match file.try_lock() {
                // The holder deletes the file as it lets go: a lock won on a file that is no
                // longer the one at `path` guards nothing (a third process would create and
                // lock a new one), so take the lock again on the file that is there now.
                Ok(()) if same_file(&file, &path) => break,
                Ok(()) => file = open()?,
                Err(TryLockError::WouldBlock) => {
                    let mut holder = String::new();
                    let _ = file.seek(SeekFrom::Start(0));
                    let _ = file.read_to_string(&mut holder);
                    if dead_here(&holder) && std::time::Instant::now() < until {
                        std::thread::sleep(std::time::Duration::from_millis(10));
                        continue;
                    }
                    return Err(Error::Locked(locked_message(run_dir, &holder)));
                }
                Err(TryLockError::Error(e)) => return Err(Error::io(&path, e)),
            }
        }
        let info = format!(
            "pid={}\nhost={}\nstarted={}\n",
            std::process::id(),
            hostname(),
            crate::store::journal::now()
        );
        let write = |f: &mut File| -> std::io::Result<()> {
            f.set_len(0)?;
            f.seek(SeekFrom::Start(0))?;
            f.write_all(info.as_bytes())?;
            f.flush()
        };
        write(&mut file).map_err(|e| Error::io(&path, e))?;
        let lock = RunDirLock { path, _file: file };
        // The run dir's own entries only: its case folders are checked before a session reads
        // or writes a bundle (`refuse_links`, from `engine::session`), and a resume that finds
        // nothing to do reads and writes none — listing 100,000 case folders with a cold cache
        // costs about a second.
        refuse_links_in(run_dir)?;
        // What killed writers of earlier sessions left (never a live writer's).
        for dir in ["", "reports", "figures"] {
            crate::store::atomic::sweep_stale_temps(&run_dir.join(dir));
        }
        Ok(lock)
    }

    #[cfg(test)]
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for RunDirLock {
    /// Delete the file while still holding the lock (the file is closed after this, releasing
    /// it): a finished run dir keeps no `.lock`. A failure (read-only dir) leaves a file nobody
    /// holds, which blocks no one.
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A run dir whose own entries — its files and folders, and the case folders under `cases/` —
/// are symbolic links would make a session write where the links point (`cases -> /` would put
/// every case folder into `/`). A run dir campaign made has none, so any is refused before the
/// session writes a byte into `cases/` (bad input, naming the entry). One `readdir` of the run
/// dir and one of `cases/`; the file types come with the entries, so even 100,000 case folders
/// cost no `stat`. The lock checks the run dir's own entries ([`refuse_links_in`]); a session
/// calls this before it reads or writes a bundle.
pub(crate) fn refuse_links(run_dir: &Path) -> Result<()> {
    let link = |path: &Path| {
        Error::invalid(
            path,
            "is a symbolic link; a run dir's files and folders must be its own (campaign never makes links there), so it is not used",
        )
    };
    let entries = |dir: &Path| -> Result<Vec<(PathBuf, bool)>> {
        let read = match std::fs::read_dir(dir) {
            Ok(read) => read,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io(dir, e)),
        };
        let mut out = Vec::new();
        for entry in read {
            let entry = entry.map_err(|e| Error::io(dir, e))?;
            let is_link = entry.file_type().is_ok_and(|t| t.is_symlink());
            out.push((entry.path(), is_link));
        }
        Ok(out)
    };
    refuse_links_in(run_dir)?;
    for (path, is_link) in entries(&run_dir.join("cases"))? {
        if is_link {
            return Err(link(&path));
        }
    }
    Ok(())
}

/// [`refuse_links`] for the run dir's own entries only (one `readdir`): what reads `cases/`
/// itself checks its entries as it lists them (`store::load`).
pub(crate) fn refuse_links_in(run_dir: &Path) -> Result<()> {
    let read = match std::fs::read_dir(run_dir) {
        Ok(read) => read,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(run_dir, e)),
    };
    for entry in read {
        let entry = entry.map_err(|e| Error::io(run_dir, e))?;
        if entry.file_type().is_ok_and(|t| t.is_symlink()) {
            return Err(Error::invalid(
                entry.path(),
                "is a symbolic link; a run dir's files and folders must be its own (campaign never makes links there), so it is not used",
            ));
        }
    }
    Ok(())
}

/// Is the open `file` the file at `path` right now (same device and inode)?
fn same_file(file: &File, path: &Path) -> bool {
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Does a campaign process hold `run_dir`'s lock right now? For read-only commands: it never
/// creates the lock file and holds a shared lock only for the instant of the test.
pub(crate) fn is_held(run_dir: &Path) -> bool {
    let Ok(file) = File::open(run_dir.join(FILE_NAME)) else {
        return false;
    };
    let probe = file.try_lock_shared();
    matches!(probe, Err(TryLockError::WouldBlock))
}

/// How long a lock held after its recorded holder died is waited for (see `acquire`).
const DEAD_HOLDER_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Is the recorded holder a process of this host that no longer exists?
fn dead_here(holder: &str) -> bool {
    let Some(pid) = holder_pid(holder) else {
        return false;
    };
    if field(holder, "host") != Some(hostname().as_str()) {
        return false;
    }
    // SAFETY: kill(2) with signal 0 only checks for existence.
    let rc = unsafe { libc::kill(pid as i32, 0) };
    rc != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

/// `pid=…` of a lock file's text, if present.
pub(crate) fn holder_pid(text: &str) -> Option<u32> {
    field(text, "pid")?.parse().ok()
}

fn field<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix('='))
        .map(str::trim)
}

fn locked_message(run_dir: &Path, holder: &str) -> String {
    let who = match holder_pid(holder) {
        Some(pid) => {
            let mut s = format!("campaign pid {pid}");
            if let Some(host) = field(holder, "host") {
                s.push_str(&format!(" on {host}"));
            }
            if let Some(t) = field(holder, "started") {
                s.push_str(&format!(" (since {t})"));
            }
            s
        }
        None => "another campaign process".to_string(),
    };
    format!(
        "run dir {} is in use by {who}; wait for it to finish or stop it, then run `campaign resume {}` (a killed campaign releases the lock by itself)",
        run_dir.display(),
        run_dir.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader};
    use std::process::{Child, Command, Stdio};

    const CHILD_ENV: &str = "CAMPAIGN_TEST_LOCK_HOLDER_DIR";

    /// Not a test: the body of the child process the contention tests spawn (the test binary
    /// re-run with `--ignored --exact`). It holds the lock until killed.
    #[test]
    #[ignore = "helper process for the lock tests"]
    fn lock_holder_child() {
        let Some(dir) = std::env::var_os(CHILD_ENV) else {
            return;
        };
        let _lock = RunDirLock::acquire(Path::new(&dir)).expect("child acquires");
        crate::say!("LOCKED");
        std::thread::sleep(std::time::Duration::from_secs(120));
    }

    fn spawn_holder(dir: &Path) -> Child {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--ignored",
                "--exact",
                "store::lock::tests::lock_holder_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let mut lines = BufReader::new(out).lines();
        loop {
            match lines.next() {
                Some(Ok(line)) if line.contains("LOCKED") => break,
                Some(Ok(_)) => continue,
                _ => panic!("lock holder child exited before locking"),
            }
        }
        child
    }

    #[test]
    fn second_process_is_refused_and_sigkill_releases_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let mut child = spawn_holder(dir.path());
        let err = RunDirLock::acquire(dir.path()).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, Error::Locked(_)));
        assert!(
            msg.contains(&format!("campaign pid {}", child.id())),
            "{msg}"
        );
        assert!(msg.contains("campaign resume"), "{msg}");
        assert_eq!(err.exit_code(), crate::error::exit::ENVIRONMENT);

        // SIGKILL: no destructor runs; the kernel must release the flock.
        // SAFETY: plain kill(2) on our own child's pid.
        unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
        child.wait().unwrap();
        let lock = RunDirLock::acquire(dir.path()).expect("lock of a killed process is free");
        let text = std::fs::read_to_string(lock.path()).unwrap();
        assert_eq!(holder_pid(&text), Some(std::process::id()));
    }

    #[test]
    fn lock_is_released_on_drop_and_exclusive_within_a_process() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!is_held(dir.path()));
        let first = RunDirLock::acquire(dir.path()).unwrap();
        // A second open file description conflicts with flock even in the same process.
        assert!(matches!(
            RunDirLock::acquire(dir.path()),
            Err(Error::Locked(_))
        ));
        assert!(is_held(dir.path()));
        drop(first);
        assert!(!is_held(dir.path()));
        RunDirLock::acquire(dir.path()).unwrap();
    }

    #[test]
    fn a_session_that_ends_leaves_no_lock_file() {
        let dir = tempfile::tempdir().unwrap();
        let lock = RunDirLock::acquire(dir.path()).unwrap();
        assert!(dir.path().join(FILE_NAME).exists());
        drop(lock);
        assert!(!dir.path().join(FILE_NAME).exists());
    }

    #[test]
    fn a_stale_lock_file_of_a_dead_holder_is_taken_at_once() {
        let dir = tempfile::tempdir().unwrap();
        // What a SIGKILLed campaign leaves: its identity, no flock.
        let mut child = Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        std::fs::write(
            dir.path().join(FILE_NAME),
            format!("pid={dead}\nhost={}\nstarted=x\n", hostname()),
        )
        .unwrap();
        let lock = RunDirLock::acquire(dir.path()).expect("a stale lock blocks nothing");
        let text = std::fs::read_to_string(lock.path()).unwrap();
        assert_eq!(holder_pid(&text), Some(std::process::id()));
    }

    #[test]
    fn a_lock_on_a_deleted_file_is_told_from_the_current_one() {
        let dir = tempfile::tempdir().unwrap();
        let first = RunDirLock::acquire(dir.path()).unwrap();
        // A waiter opened the file before the holder deleted it and released the lock.
        let old = File::open(dir.path().join(FILE_NAME)).unwrap();
        drop(first);
        old.try_lock().unwrap();
        assert!(!same_file(&old, &dir.path().join(FILE_NAME)));
        // A newcomer creates and locks a new file; a second newcomer must be refused.
        let second = RunDirLock::acquire(dir.path()).unwrap();
        assert!(same_file(&second._file, &dir.path().join(FILE_NAME)));
        assert!(matches!(
            RunDirLock::acquire(dir.path()),
            Err(Error::Locked(_))
        ));
    }

    #[test]
    fn missing_run_dir_is_an_io_error_naming_the_lock_file() {
        let dir = tempfile::tempdir().unwrap();
        let err = RunDirLock::acquire(&dir.path().join("nope")).unwrap_err();
        assert!(err.to_string().contains("nope/.lock"), "{err}");
    }
}
