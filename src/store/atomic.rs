//! One way to write a file that a crash never leaves half-written: a temp file in the same
//! folder, its data synced, then a rename. Every file campaign writes into a run dir (bundles,
//! results files, the frozen plan, reports, case files, helper sources) goes through here.
//!
//! [`replace_all`] is the same without the sync, for files whose durability something else
//! vouches for: a run's bundle (its journal `finished` line, the one durability point of a run,
//! records what resume checks the bundle against) and case files (resume compares them with
//! the planned case and rewrites any that differ).
//!
//! [`Staged`] is [`write_atomic_all`] for files written as their bytes are produced (the
//! results files and the report's context of a large campaign, tens of MB each), so they
//! are never held in memory whole.
//!
//! [`replace_all_prepared`] is [`replace_all`] through temp files of a fixed name that can be
//! created ahead ([`prepare`]): a run's bundle files, whose temp files `engine::case_files`
//! creates before the run, so writing the bundle creates no inode between two runs (on a
//! journal-less ext4, inode creation was most of the engine's cost per run).

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Write `bytes` to `path` through a temp file in the same folder and a rename.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_all(&[(path, bytes)])
}

/// Write several files (distinct paths), each through a temp file in its folder and a rename,
/// after the data of every temp file is on disk.
///
/// Why the data is synced before the rename, although temp + rename alone already keeps a
/// crash of campaign from leaving half a file (the page cache survives the process): after a
/// power loss or kernel crash the rename can reach the disk before the data (ext4 allocates
/// blocks late; without a journal it orders nothing), leaving an empty or short file under the
/// final name. The journal's fsynced `finished` line follows the bundle, and resume trusts a
/// finished run's `manifest.json` and `timing.json`, so those must be durable first — an empty
/// `timing.json` beside a readable manifest would be a passed run with no samples.
///
/// The syncs run side by side (one thread per file beyond the first, at most
/// [`SYNC_THREADS`]): each `fdatasync` waits for a device cache flush, and concurrent flushes
/// are merged by the block layer, so two files cost about one wait instead of two.
pub(crate) fn write_atomic_all(files: &[(&Path, &[u8])]) -> Result<()> {
    let temps = write_temps(files, temp_path, Open::Truncate)?;
    if let Err(e) = sync_data_all(&temps) {
        discard(&temps);
        return Err(e);
    }
    rename_all(files.iter().map(|(p, _)| *p), temps)
}

/// Files written through temp files as their bytes are produced, then — every temp file's
/// data synced — renamed over their final names in order, by [`Staged::commit`]: the
/// guarantees of [`write_atomic_all`]. Temp files of a `Staged` dropped without a commit are
/// removed.
#[derive(Default)]
pub(crate) struct Staged {
    /// (final path, temp path, temp file), in the order written.
    temps: Vec<(PathBuf, PathBuf, std::fs::File)>,
}

impl Staged {
    pub(crate) fn new() -> Staged {
        Staged::default()
    }

    /// Write `path`'s temp file (distinct from every other path staged) with what `fill`
    /// writes into it, buffered.
    pub(crate) fn write(
        &mut self,
        path: &Path,
        fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> Result<()> {
        let (tmp, file) = write_temp(path, &temp_path(path), b"", Open::Truncate)?;
        let mut w = std::io::BufWriter::with_capacity(1 << 16, file);
        let filled = fill(&mut w)
            .and_then(|()| w.flush())
            .and_then(|()| w.into_inner().map_err(|e| e.into_error()));
        match filled {
            Ok(file) => {
                self.temps.push((path.to_path_buf(), tmp, file));
                Ok(())
            }
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                Err(Error::io(&tmp, e))
            }
        }
    }

    /// Stage `other`'s files after this one's (their temp files move over, nothing is written).
    pub(crate) fn append(&mut self, mut other: Staged) {
        self.temps.append(&mut other.temps);
    }

    /// Sync every staged temp file's data, then rename each over its final path, in order.
    pub(crate) fn commit(mut self) -> Result<()> {
        let (finals, temps): (Vec<PathBuf>, Vec<(PathBuf, std::fs::File)>) = self
            .temps
            .drain(..)
            .map(|(path, tmp, file)| (path, (tmp, file)))
            .unzip();
        if let Err(e) = sync_data_all(&temps) {
            discard(&temps);
            return Err(e);
        }
        rename_all(finals.iter().map(PathBuf::as_path), temps)
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        for (_, tmp, _) in &self.temps {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// Write several files (distinct paths), each through a temp file in its folder and a rename,
/// without syncing: a crash of campaign never leaves half a file (the page cache survives the
/// process), but after a power loss a file may be empty or short under its final name. Only for
/// files a reader checks before trusting them (see the module comment).
pub(crate) fn replace_all(files: &[(&Path, &[u8])]) -> Result<()> {
    let temps = write_temps(files, temp_path, Open::Truncate)?;
    rename_all(files.iter().map(|(p, _)| *p), temps)
}

/// Write `path`, folder included, where there is none yet — in place, no temp file and rename:
/// only for files nothing reads before this returns and whose damage by a crash the next
/// reader detects (a case file differing from its planned text is replaced). False when the
/// file exists.
pub(crate) fn create_new(path: &Path, bytes: &[u8]) -> Result<bool> {
    match write_temp(path, path, bytes, Open::New) {
        Ok(_) => Ok(true),
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::AlreadyExists => {
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

/// The temp file of `path` for this process (write_atomic, replace_all).
fn temp_path(path: &Path) -> PathBuf {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    dir.join(format!(".{name}.tmp{}", std::process::id()))
}

/// Remove the temp files ([`temp_path`]) a killed writer left in `dir`: `.<name>.tmp<pid>` whose
/// process is gone. Returns how many. A writer that is alive keeps its own; nothing else is
/// touched.
pub(crate) fn sweep_stale_temps(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(pid) = stale_temp_pid(name) else {
            continue;
        };
        let is_file = entry.file_type().is_ok_and(|t| t.is_file());
        // SAFETY: kill with signal 0 only asks whether the pid exists.
        let alive = pid == std::process::id() as i32 || unsafe { libc::kill(pid, 0) } == 0;
        if is_file && !alive && std::fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// The writer's pid of a temp file name `.<name>.tmp<pid>`.
fn stale_temp_pid(name: &str) -> Option<i32> {
    let rest = name.strip_prefix('.')?;
    let (_, pid) = rest.rsplit_once(".tmp")?;
    (!pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
        .then(|| pid.parse().ok())
        .flatten()
}

/// The temp file [`replace_all_prepared`] writes `path` through: `.<name>.next` beside it. A
/// fixed name, so it can be created ahead; only for files that one process writes at a time
/// (a run's bundle, under the run dir's lock).
pub(crate) fn prepared_temp(path: &Path) -> PathBuf {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    dir.join(format!(".{name}.next"))
}

/// Create `path`'s [`prepared_temp`] file, empty, unless it exists (one left by a session that
/// died is reused as it is: [`replace_all_prepared`] truncates it before writing). The folder
/// must exist.
pub(crate) fn prepare(path: &Path) -> Result<()> {
    let tmp = prepared_temp(path);
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&tmp)
        .map(drop)
        .map_err(|e| Error::io(&tmp, e))
}

/// [`replace_all`] through each file's [`prepared_temp`] (truncated, or created when nobody
/// prepared it): the same guarantees — a crash of campaign never leaves half a file under a
/// final name — and no new inode when the temp files were prepared.
pub(crate) fn replace_all_prepared(files: &[(&Path, &[u8])]) -> Result<()> {
    let temps = write_temps(files, prepared_temp, Open::Prepared)?;
    rename_all(files.iter().map(|(p, _)| *p), temps)
}

/// Every file's temp file (named by `temp`), written; on a failure the ones written so far are
/// removed.
fn write_temps(
    files: &[(&Path, &[u8])],
    temp: fn(&Path) -> PathBuf,
    open: Open,
) -> Result<Vec<(PathBuf, std::fs::File)>> {
    let mut temps: Vec<(PathBuf, std::fs::File)> = Vec::with_capacity(files.len());
    for (path, bytes) in files {
        match write_temp(path, &temp(path), bytes, open) {
            Ok(t) => temps.push(t),
            Err(e) => {
                discard(&temps);
                return Err(e);
            }
        }
    }
    Ok(temps)
}

/// Each temp file renamed over its final name (`paths`, in the same order), in order.
fn rename_all<'p>(
    paths: impl IntoIterator<Item = &'p Path>,
    temps: Vec<(PathBuf, std::fs::File)>,
) -> Result<()> {
    for (path, (tmp, file)) in paths.into_iter().zip(temps) {
        drop(file);
        std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))?;
    }
    Ok(())
}

/// Most `fdatasync` calls [`write_atomic_all`] keeps in flight at once.
pub(crate) const SYNC_THREADS: usize = 8;

/// Create (or truncate) `path`'s temp file `tmp` and write `bytes` into it. The folder is
/// created only when the first attempt finds it missing: a `create_dir_all` before every write
/// costs two syscalls per file for folders that nearly always exist.
fn write_temp(
    path: &Path,
    tmp: &Path,
    bytes: &[u8],
    how: Open,
) -> Result<(PathBuf, std::fs::File)> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = tmp.to_path_buf();
    let mut f = match how.open(&tmp) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
            how.open(&tmp).map_err(|e| Error::io(&tmp, e))?
        }
        Err(e) => return Err(Error::io(&tmp, e)),
    };
    if let Err(e) = f.write_all(bytes) {
        let _ = std::fs::remove_file(&tmp);
        return Err(Error::io(&tmp, e));
    }
    Ok((tmp, f))
}

/// How a temp file is opened for writing.
#[derive(Clone, Copy)]
enum Open {
    /// Created or truncated (`O_TRUNC`).
    Truncate,
    /// Created; an existing file is an error (`AlreadyExists`).
    New,
    /// A prepared temp file, normally empty: truncated only when it holds something (one left by
    /// a session that died). ext4 treats truncating a file and closing it after a write as the
    /// "replace by truncate" pattern and starts writing it back at `close` — block allocation
    /// and I/O submission on the thread that closes it, a run's bundle write.
    Prepared,
}

impl Open {
    fn open(self, tmp: &Path) -> std::io::Result<std::fs::File> {
        match self {
            Open::Truncate => std::fs::File::create(tmp),
            Open::New => std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(tmp),
            Open::Prepared => {
                let f = std::fs::OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(false)
                    .open(tmp)?;
                if f.metadata()?.len() > 0 {
                    f.set_len(0)?;
                }
                Ok(f)
            }
        }
    }
}

/// `fdatasync` every file, concurrently; the first failure is returned.
fn sync_data_all(temps: &[(PathBuf, std::fs::File)]) -> Result<()> {
    let sync = |chunk: &[(PathBuf, std::fs::File)]| -> Result<()> {
        for (tmp, f) in chunk {
            f.sync_data().map_err(|e| Error::io(tmp, e))?;
        }
        Ok(())
    };
    if temps.len() <= 1 {
        return sync(temps);
    }
    let per_thread = temps.len().div_ceil(SYNC_THREADS);
    std::thread::scope(|scope| {
        let mut chunks = temps.chunks(per_thread);
        let own = chunks.next().unwrap_or(&[]);
        let mut result = Ok(());
        let mut others = Vec::new();
        for chunk in chunks {
            // A small stack: the thread only calls fdatasync, and a default 8 MiB stack costs
            // page faults on every bundle.
            let spawned = std::thread::Builder::new()
                .stack_size(64 * 1024)
                .spawn_scoped(scope, move || sync(chunk));
            match spawned {
                Ok(handle) => others.push(handle),
                Err(_) => result = result.and(sync(chunk)),
            }
        }
        result = result.and(sync(own));
        for handle in others {
            let r = handle.join().unwrap_or_else(|_| {
                Err(Error::Environment("a thread syncing files panicked".into()))
            });
            result = result.and(r);
        }
        result
    })
}

/// Remove temp files of a write that did not complete.
fn discard(temps: &[(PathBuf, std::fs::File)]) {
    for (tmp, _) in temps {
        let _ = std::fs::remove_file(tmp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temps_of_dead_writers_are_swept_and_a_live_ones_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let dead = tmp.path().join(".summary.md.tmp999999999");
        let live = tmp
            .path()
            .join(format!(".summary.md.tmp{}", std::process::id()));
        let other = tmp.path().join(".summary.md.tmpx");
        for f in [&dead, &live, &other] {
            std::fs::write(f, "half").unwrap();
        }
        assert_eq!(sweep_stale_temps(tmp.path()), 1);
        assert!(!dead.exists() && live.exists() && other.exists());
        assert_eq!(stale_temp_pid(".a.b.tmp12"), Some(12));
        assert_eq!(stale_temp_pid("a.tmp12"), None);
    }

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("x/results.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "two");
        let names: Vec<_> = std::fs::read_dir(p.parent().unwrap()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn staged_files_appear_together_on_commit_and_vanish_when_dropped() {
        let tmp = tempfile::tempdir().unwrap();
        let a = tmp.path().join("new/a.csv");
        let b = tmp.path().join("b.json");
        std::fs::write(&b, "old").unwrap();
        let mut staged = Staged::new();
        staged.write(&a, |w| w.write_all(b"x,y\n1,2\n")).unwrap();
        staged.write(&b, |w| write!(w, "{{\"n\": {}}}", 3)).unwrap();
        // Nothing replaced before the commit.
        assert!(!a.exists());
        assert_eq!(std::fs::read_to_string(&b).unwrap(), "old");
        staged.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "x,y\n1,2\n");
        assert_eq!(std::fs::read_to_string(&b).unwrap(), "{\"n\": 3}");
        // A failed fill, and a Staged dropped uncommitted, leave the old files and no temps.
        let mut staged = Staged::new();
        staged.write(&b, |w| w.write_all(b"half")).unwrap();
        let err = staged
            .write(&a, |_| Err(std::io::Error::other("disk full")))
            .unwrap_err();
        assert!(err.to_string().contains("disk full"), "{err}");
        drop(staged);
        assert_eq!(std::fs::read_to_string(&b).unwrap(), "{\"n\": 3}");
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "x,y\n1,2\n");
        let mut names: Vec<String> = std::fs::read_dir(tmp.path())
            .unwrap()
            .chain(std::fs::read_dir(tmp.path().join("new")).unwrap())
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["a.csv", "b.json", "new"]);
    }

    #[test]
    fn several_files_are_written_together_into_new_folders() {
        let tmp = tempfile::tempdir().unwrap();
        let files: Vec<(PathBuf, String)> = (0..20)
            .map(|i| {
                (
                    tmp.path().join(format!("d{}/f{i}.json", i % 3)),
                    format!("v{i}"),
                )
            })
            .collect();
        let refs: Vec<(&Path, &[u8])> = files
            .iter()
            .map(|(p, t)| (p.as_path(), t.as_bytes()))
            .collect();
        write_atomic_all(&refs).unwrap();
        for (p, t) in &files {
            assert_eq!(&std::fs::read_to_string(p).unwrap(), t);
        }
        for d in 0..3 {
            let names: Vec<String> = std::fs::read_dir(tmp.path().join(format!("d{d}")))
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            assert!(names.iter().all(|n| !n.contains(".tmp")), "{names:?}");
        }
    }

    #[test]
    fn an_unsynced_replace_writes_every_file_and_leaves_no_temp() {
        let tmp = tempfile::tempdir().unwrap();
        let a = tmp.path().join("new/a.json");
        let b = tmp.path().join("new/b.json");
        std::fs::create_dir_all(a.parent().unwrap()).unwrap();
        std::fs::write(&b, "old").unwrap();
        replace_all(&[(&a, b"1"), (&b, b"2")]).unwrap();
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "1");
        assert_eq!(std::fs::read_to_string(&b).unwrap(), "2");
        let names: Vec<_> = std::fs::read_dir(a.parent().unwrap()).unwrap().collect();
        assert_eq!(names.len(), 2);
    }

    #[test]
    fn a_failed_group_write_renames_nothing_and_leaves_no_temp() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("blocker"), "a file, not a folder").unwrap();
        let good = tmp.path().join("good.json");
        let bad = tmp.path().join("blocker/bad.json");
        let err = write_atomic_all(&[(&good, b"1"), (&bad, b"2")]).unwrap_err();
        assert!(err.to_string().contains("blocker"), "{err}");
        let names: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("blocker")]);
    }

    #[test]
    fn a_prepared_write_takes_the_prepared_inode_and_leaves_no_temp() {
        use std::os::unix::fs::MetadataExt;
        let tmp = tempfile::tempdir().unwrap();
        let a = tmp.path().join("b/timing.json");
        let b = tmp.path().join("b/manifest.json");
        std::fs::create_dir_all(a.parent().unwrap()).unwrap();
        prepare(&a).unwrap();
        // A temp file a killed session left half-written is reused and truncated.
        std::fs::write(prepared_temp(&b), "{\"half").unwrap();
        prepare(&b).unwrap();
        assert_eq!(std::fs::read(prepared_temp(&b)).unwrap(), b"{\"half");
        let inode = |p: &Path| std::fs::metadata(p).unwrap().ino();
        let (ia, ib) = (inode(&prepared_temp(&a)), inode(&prepared_temp(&b)));
        replace_all_prepared(&[(&a, b"[1]"), (&b, b"{}")]).unwrap();
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "[1]");
        assert_eq!(std::fs::read_to_string(&b).unwrap(), "{}");
        assert_eq!((inode(&a), inode(&b)), (ia, ib));
        let names: Vec<_> = std::fs::read_dir(a.parent().unwrap()).unwrap().collect();
        assert_eq!(names.len(), 2);
        // Unprepared (a second attempt): created, written, renamed over the first.
        replace_all_prepared(&[(&a, b"[2]")]).unwrap();
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "[2]");
        assert_ne!(inode(&a), ia);
        let names: Vec<_> = std::fs::read_dir(a.parent().unwrap()).unwrap().collect();
        assert_eq!(names.len(), 2);
    }

    #[test]
    fn create_new_writes_in_place_with_its_folder_and_never_over_a_file() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("cases/x/case.json");
        assert!(create_new(&path, b"{\"a\":1}").unwrap());
        assert_eq!(std::fs::read(&path).unwrap(), b"{\"a\":1}");
        assert!(!create_new(&path, b"other").unwrap());
        assert_eq!(std::fs::read(&path).unwrap(), b"{\"a\":1}");
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().collect();
        assert_eq!(names.len(), 1, "no temp file");
    }
}
