//! The proof that a run dir's results files already say what a result set would write:
//! `.results-stamp` beside them records the digest of the set they were written from
//! (`store::set_digest`), the build that wrote them, and each file's length and SHA-256 as
//! written.
//!
//! The files are skipped only when all of it holds: the same writer build, the same set digest,
//! and every file on disk hashing to what was recorded. The files are a deterministic function
//! of the set and the writer, so equal inputs and untouched files mean equal bytes; a file edited
//! by hand (or truncated, replaced, removed) hashes differently and everything is rewritten. A
//! missing, damaged or foreign stamp proves nothing and costs one rewrite. Checking reads the
//! files once (≈ 70 MB for 10,000 runs × 51 rounds, tens of milliseconds), where writing them
//! formats every number as text and syncs it — unless the stat fast path (`store::stamp_stat`)
//! vouches for a file: the stamp also records each file's length, inode, mtime and ctime, and a
//! file whose stat is unchanged and whose recorded ctime is strictly earlier than the stamp's
//! own mtime is trusted without being read (any edit changes the ctime, which no user can set
//! back). Other files, and every file of an older stamp without stats, are hashed.
//!
//! Written after the files are renamed into place: a crash between the two leaves a stamp of
//! older files, which their hashes no longer match.
//!
//! The same proof keeps a repeated `campaign report` from rendering again
//! (`reports/.report-stamp`, [`REPORT_STAMP`]): its input is the result set with everything else
//! the report reads, its files the report's, and it carries what the command prints.

use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::Result;
use crate::store::stamp_stat::{self, FileStat};

/// The results files' stamp, in the run dir.
pub(crate) const FILE_NAME: &str = ".results-stamp";

/// The report's stamp, in the run dir.
pub(crate) const REPORT_STAMP: &str = "reports/.report-stamp";

/// Bumped when the stamp's meaning changes; a stamp of another format proves nothing.
const FORMAT: u32 = 1;

/// One results file as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FileSum {
    pub(crate) name: String,
    pub(crate) bytes: u64,
    pub(crate) sha256: String,
    /// The file's stat when stamped (none in stamps written before the fast path, and until
    /// `record_as` takes it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) stat: Option<FileStat>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Stamp {
    format: u32,
    writer: String,
    input: String,
    files: Vec<FileSum>,
    /// What the writer wants back when the files are unchanged.
    #[serde(default)]
    extra: serde_json::Value,
}

/// The build writing the files: the version, the commit, and the executable's length and
/// modification time, so a rebuilt binary (whose writers may format differently, even at the
/// same commit) never trusts files an older one wrote.
fn writer() -> &'static str {
    static WRITER: OnceLock<String> = OnceLock::new();
    WRITER.get_or_init(|| {
        let exe = std::env::current_exe()
            .and_then(std::fs::metadata)
            .map(|m| {
                let t = m.modified().ok().and_then(|t| {
                    t.duration_since(std::time::UNIX_EPOCH)
                        .ok()
                        .map(|d| d.as_nanos())
                });
                format!("{}:{}", m.len(), t.unwrap_or(0))
            })
            .unwrap_or_default();
        format!(
            "{} {} {exe}",
            env!("CARGO_PKG_VERSION"),
            crate::store::provenance::BUILD_COMMIT.unwrap_or("unknown")
        )
    })
}

/// Mark `dir`'s results stamp as proven now (its modification time), after [`proven`]
/// proved it. Best effort: a stamp left with its old time only makes the next resume take its
/// full path.
///
/// Why moving the stamp's mtime forward keeps the stat fast path safe: it is set to the
/// kernel's now (`stamp_stat::mark_now`), after a proof in which every file was either trusted
/// (its recorded ctime already earlier than the old mtime: nothing changes for it) or hashed
/// and found as recorded. A hashed file whose stat equals the recorded one becomes trusted
/// from now on; any change after this mark gets a ctime at least the new mtime, so it is seen.
/// Left unseen is only a change racing with this very check (between its hash and the mark,
/// in the tick of the file's last change) — the same window as between a stamp's stats and its
/// write.
pub(crate) fn touch(dir: &Path) {
    touch_stamp(dir, FILE_NAME);
}

/// [`touch`] of the stamp `stamp` (relative to `dir`), right after it was proven: the report's
/// stamp so marked tells `resume` that the report is as current as results files written
/// before the mark, though the report was not rewritten (the render it proved unneeded).
pub(crate) fn touch_stamp(dir: &Path, stamp: &str) {
    stamp_stat::mark_now(&dir.join(stamp));
}

/// The stamp `stamp` (relative to `dir`) when it proves its files (relative to `dir`; exactly
/// `names` when given) hold what this build writes for input `input`: its `extra`. A proof that
/// had to hash a file whose stat was as recorded (its ctime in the stamp's tick) marks the
/// stamp's time now, as [`touch`] does (and is as safe): the next check trusts that file.
pub(crate) fn proven(
    dir: &Path,
    stamp: &str,
    input: &[u8; 32],
    names: Option<&[&str]>,
) -> Option<serde_json::Value> {
    proven_files(dir, stamp, input, names).map(|(extra, _)| extra)
}

/// [`proven`], with the files as the stamp records them (a writer that rewrites only some of
/// them keeps the others' records).
pub(crate) fn proven_files(
    dir: &Path,
    stamp: &str,
    input: &[u8; 32],
    names: Option<&[&str]>,
) -> Option<(serde_json::Value, Vec<FileSum>)> {
    let proof = prove(dir, stamp, input, names)?;
    if proof.racy {
        stamp_stat::mark_now(&dir.join(stamp));
    }
    Some((proof.extra, proof.files))
}

/// What a stamp that holds says.
struct Proof {
    extra: serde_json::Value,
    files: Vec<FileSum>,
    /// Some file was hashed only because its ctime was not earlier than the stamp.
    racy: bool,
}

fn prove(dir: &Path, stamp: &str, input: &[u8; 32], names: Option<&[&str]>) -> Option<Proof> {
    let mut file = std::fs::File::open(dir.join(stamp)).ok()?;
    let meta = file.metadata().ok()?;
    let stamp_mtime_ns = stamp_stat::nanos(meta.mtime(), meta.mtime_nsec());
    let mut text = Vec::new();
    file.read_to_end(&mut text).ok()?;
    let stamp = serde_json::from_slice::<Stamp>(&text).ok()?;
    let listed: Vec<&str> = stamp.files.iter().map(|f| f.name.as_str()).collect();
    let holds = stamp.format == FORMAT
        && stamp.writer == writer()
        && stamp.input == hex::encode(input)
        && names.is_none_or(|n| listed == n);
    if !holds {
        return None;
    }
    let mut racy = false;
    for f in &stamp.files {
        match on_disk(dir, f, stamp_mtime_ns) {
            Check::Trusted => {}
            Check::Hashed { stat_as_recorded } => racy |= stat_as_recorded,
            Check::Differs => return None,
        }
    }
    Some(Proof {
        extra: stamp.extra,
        files: stamp.files,
        racy,
    })
}

/// The length, SHA-256 and stat of the file `name` (relative to `dir`) as it is on disk. The
/// stat is taken before the file is read, so a change while it is read shows in its ctime.
pub(crate) fn sum_file(dir: &Path, name: &str) -> Result<FileSum> {
    let path = dir.join(name);
    let io = |e| crate::error::Error::io(&path, e);
    let mut file = std::fs::File::open(&path).map_err(io)?;
    let stat = FileStat::of(&file.metadata().map_err(io)?);
    let mut sums = Summing::new(std::io::sink());
    std::io::copy(&mut file, &mut sums).map_err(io)?;
    let (bytes, sha256) = sums.finish();
    Ok(FileSum {
        name: name.to_string(),
        bytes,
        sha256,
        stat: Some(stat),
    })
}

/// How a stamped file was found on disk.
enum Check {
    /// Its stat vouches for it (`stamp_stat::trusted`): not read.
    Trusted,
    /// Read, and it hashes as recorded; `stat_as_recorded`: its stat too (it was hashed only
    /// because its ctime falls in the stamp's tick).
    Hashed { stat_as_recorded: bool },
    /// Missing, unreadable, or not what was recorded.
    Differs,
}

/// Is the file on disk as recorded: trusted by its stat, or of the recorded length and SHA-256?
fn on_disk(dir: &Path, want: &FileSum, stamp_mtime_ns: i64) -> Check {
    let Ok(mut file) = std::fs::File::open(dir.join(&want.name)) else {
        return Check::Differs;
    };
    let Ok(now) = file.metadata().map(|m| FileStat::of(&m)) else {
        return Check::Differs;
    };
    if stamp_stat::trusted(want.stat.as_ref(), &now, stamp_mtime_ns) {
        return Check::Trusted;
    }
    if now.bytes != want.bytes {
        return Check::Differs;
    }
    let mut sums = Summing::new(std::io::sink());
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let _ = sums.write_all(&buf[..n]);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return Check::Differs,
        }
    }
    let (bytes, sha256) = sums.finish();
    if bytes == want.bytes && sha256 == want.sha256 {
        Check::Hashed {
            stat_as_recorded: want.stat == Some(now),
        }
    } else {
        Check::Differs
    }
}

/// Record the stamp `stamp` (relative to `dir`) of `files` written for input `input`, carrying
/// `extra`. Written atomically, after the files. A file summed as it was written (no stat yet)
/// is stat-ed here, in place: a change by someone else between its write and this stat would
/// go unseen, as in any stamp of files another process writes at the same moment.
pub(crate) fn record_as(
    dir: &Path,
    stamp: &str,
    input: &[u8; 32],
    mut files: Vec<FileSum>,
    extra: serde_json::Value,
) -> Result<()> {
    for f in files.iter_mut().filter(|f| f.stat.is_none()) {
        f.stat = std::fs::metadata(dir.join(&f.name))
            .ok()
            .map(|m| FileStat::of(&m))
            // Not the file that was summed: no fast path for it.
            .filter(|stat| stat.bytes == f.bytes);
    }
    let stamp_doc = Stamp {
        format: FORMAT,
        writer: writer().to_string(),
        input: hex::encode(input),
        files,
        extra,
    };
    let mut text = serde_json::to_vec_pretty(&stamp_doc).unwrap_or_default();
    text.push(b'\n');
    crate::store::atomic::write_atomic(&dir.join(stamp), &text)
}

/// A writer that passes its bytes on and sums them (length and SHA-256) on the way.
pub(crate) struct Summing<W> {
    inner: W,
    sha: Sha256,
    bytes: u64,
}

impl<W: Write> Summing<W> {
    pub(crate) fn new(inner: W) -> Summing<W> {
        Summing {
            inner,
            sha: Sha256::new(),
            bytes: 0,
        }
    }

    /// The length and lower-case hex SHA-256 of everything written.
    pub(crate) fn finish(self) -> (u64, String) {
        (self.bytes, hex::encode(self.sha.finalize()))
    }
}

impl<W: Write> Write for Summing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.sha.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Do `dir`'s results files hold what this build writes for a set of digest `input`?
    fn unchanged(dir: &Path, input: &[u8; 32], names: &[&str]) -> bool {
        proven(dir, FILE_NAME, input, Some(names)).is_some()
    }

    const NAMES: &[&str] = &["a.csv", "b.json"];

    /// Two files written and stamped for the input `[7; 32]`.
    fn stamped(dir: &Path) -> [u8; 32] {
        let input = [7u8; 32];
        let mut sums = Vec::new();
        for (name, text) in [("a.csv", "x,y\n1,2\n"), ("b.json", "{}\n")] {
            std::fs::write(dir.join(name), text).unwrap();
            let mut s = Summing::new(std::io::sink());
            s.write_all(text.as_bytes()).unwrap();
            let (bytes, sha256) = s.finish();
            sums.push(FileSum {
                name: name.into(),
                bytes,
                sha256,
                stat: None,
            });
        }
        record_as(dir, FILE_NAME, &input, sums, serde_json::Value::Null).unwrap();
        input
    }

    fn stamp_of(dir: &Path) -> Stamp {
        serde_json::from_slice(&std::fs::read(dir.join(FILE_NAME)).unwrap()).unwrap()
    }

    fn mtime_ns(path: &Path) -> i64 {
        let m = std::fs::metadata(path).unwrap();
        stamp_stat::nanos(m.mtime(), m.mtime_nsec())
    }

    /// How each stamped file of `dir` is checked now.
    fn checks(dir: &Path) -> Vec<&'static str> {
        let stamp_mtime = mtime_ns(&dir.join(FILE_NAME));
        (stamp_of(dir).files.iter())
            .map(|f| match on_disk(dir, f, stamp_mtime) {
                Check::Trusted => "trusted",
                Check::Hashed { .. } => "hashed",
                Check::Differs => "differs",
            })
            .collect()
    }

    /// Mark the stamp with the kernel's time until that is past every file's recorded ctime
    /// (at most one clock tick after the files were written): the fast path's premise.
    fn settle(dir: &Path) {
        let newest = (stamp_of(dir).files.iter())
            .map(|f| f.stat.unwrap().ctime_ns)
            .max()
            .unwrap();
        while mtime_ns(&dir.join(FILE_NAME)) <= newest {
            std::thread::yield_now();
            stamp_stat::mark_now(&dir.join(FILE_NAME));
        }
    }

    #[test]
    fn the_extra_gives_back_every_float_bit_for_bit() {
        // A proven report hands its answers back from the stamp's extra; a float one ulp off
        // (serde_json's default parser) rewrote results.json with another last digit than
        // the render it stands for (93.56510504325676 for 93.56510504325675).
        let tmp = tempfile::tempdir().unwrap();
        let input = stamped(tmp.path());
        let floats: [f64; 4] = [
            93.56510504325675,
            0.9356510504325675,
            1e-308,
            2.2250738585072014e-308,
        ];
        let extra = serde_json::json!({ "x": floats });
        let files = stamp_of(tmp.path()).files;
        record_as(tmp.path(), FILE_NAME, &input, files, extra).unwrap();
        let back = proven(tmp.path(), FILE_NAME, &input, Some(NAMES)).unwrap();
        let back: Vec<f64> = serde_json::from_value(back["x"].clone()).unwrap();
        for (a, b) in floats.iter().zip(&back) {
            assert_eq!(a.to_bits(), b.to_bits(), "{a} came back as {b}");
        }
    }

    #[test]
    fn untouched_files_of_the_same_input_are_unchanged() {
        let tmp = tempfile::tempdir().unwrap();
        let input = stamped(tmp.path());
        assert!(unchanged(tmp.path(), &input, NAMES));
        // Another input, or other files asked for, prove nothing.
        assert!(!unchanged(tmp.path(), &[8u8; 32], NAMES));
        assert!(!unchanged(tmp.path(), &input, &["a.csv"]));
    }

    #[test]
    fn a_hand_edit_of_the_same_length_is_seen() {
        let tmp = tempfile::tempdir().unwrap();
        let input = stamped(tmp.path());
        // Same length, same inode, one digit changed.
        std::fs::write(tmp.path().join("a.csv"), "x,y\n1,3\n").unwrap();
        assert!(!unchanged(tmp.path(), &input, NAMES));
    }

    #[test]
    fn files_changed_before_the_stamp_are_trusted_by_their_stat() {
        let tmp = tempfile::tempdir().unwrap();
        let input = stamped(tmp.path());
        settle(tmp.path());
        assert_eq!(checks(tmp.path()), ["trusted", "trusted"]);
        assert!(unchanged(tmp.path(), &input, NAMES));
    }

    #[test]
    fn an_edit_of_the_same_length_with_its_mtime_put_back_is_seen() {
        let tmp = tempfile::tempdir().unwrap();
        let input = stamped(tmp.path());
        settle(tmp.path());
        let path = tmp.path().join("a.csv");
        let before = std::fs::metadata(&path).unwrap();
        std::fs::write(&path, "x,y\n1,3\n").unwrap();
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(before.modified().unwrap()).unwrap();
        drop(file);
        let after = std::fs::metadata(&path).unwrap();
        // Length, inode and mtime as stamped: only the ctime tells.
        assert_eq!(
            (after.len(), after.ino(), after.modified().unwrap()),
            (before.len(), before.ino(), before.modified().unwrap())
        );
        assert_eq!(checks(tmp.path()), ["differs", "trusted"]);
        assert!(!unchanged(tmp.path(), &input, NAMES));
    }

    #[test]
    fn files_changed_in_the_stamps_tick_are_hashed_until_a_proof_marks_it() {
        let tmp = tempfile::tempdir().unwrap();
        let input = stamped(tmp.path());
        // The kernel's clock past the files' tick, then the stamp's mtime put back into the
        // tick of the newest file's change: racy.
        settle(tmp.path());
        let newest = (stamp_of(tmp.path()).files.iter())
            .map(|f| f.stat.unwrap().ctime_ns)
            .max()
            .unwrap();
        let stamp = tmp.path().join(FILE_NAME);
        let file = std::fs::File::options().write(true).open(&stamp).unwrap();
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_nanos(newest as u64);
        file.set_modified(at).unwrap();
        drop(file);
        let racy: Vec<bool> = (stamp_of(tmp.path()).files.iter())
            .map(|f| f.stat.unwrap().ctime_ns >= newest)
            .collect();
        assert!(racy.contains(&true));
        let expected: Vec<_> = (racy.iter())
            .map(|&r| if r { "hashed" } else { "trusted" })
            .collect();
        assert_eq!(checks(tmp.path()), expected);
        // The proof marks the stamp with the kernel's now, past the files' tick: the next
        // check trusts them.
        assert!(proven(tmp.path(), FILE_NAME, &input, Some(NAMES)).is_some());
        assert!(mtime_ns(&stamp) > newest);
        assert_eq!(checks(tmp.path()), ["trusted", "trusted"]);
    }

    #[test]
    fn a_stamp_without_stats_is_checked_by_hashing() {
        let tmp = tempfile::tempdir().unwrap();
        let input = stamped(tmp.path());
        settle(tmp.path());
        // As written before the fast path: no `stat` in any file.
        let mut doc: serde_json::Value =
            serde_json::from_slice(&std::fs::read(tmp.path().join(FILE_NAME)).unwrap()).unwrap();
        for f in doc["files"].as_array_mut().unwrap() {
            f.as_object_mut().unwrap().remove("stat").unwrap();
        }
        std::fs::write(tmp.path().join(FILE_NAME), doc.to_string()).unwrap();
        assert_eq!(checks(tmp.path()), ["hashed", "hashed"]);
        assert!(unchanged(tmp.path(), &input, NAMES));
        std::fs::write(tmp.path().join("b.json"), "[]\n").unwrap();
        assert!(!unchanged(tmp.path(), &input, NAMES));
    }

    #[test]
    fn a_removed_file_or_a_damaged_stamp_proves_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let input = stamped(tmp.path());
        std::fs::remove_file(tmp.path().join("b.json")).unwrap();
        assert!(!unchanged(tmp.path(), &input, NAMES));
        let input = stamped(tmp.path());
        let stamp = tmp.path().join(FILE_NAME);
        let text = std::fs::read(&stamp).unwrap();
        std::fs::write(&stamp, &text[..text.len() / 2]).unwrap();
        assert!(!unchanged(tmp.path(), &input, NAMES));
        std::fs::write(&stamp, b"\x00\xff not a stamp").unwrap();
        assert!(!unchanged(tmp.path(), &input, NAMES));
    }
}
