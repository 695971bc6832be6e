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
//! formats every number as text and syncs it.
//!
//! Written after the files are renamed into place: a crash between the two leaves a stamp of
//! older files, which their hashes no longer match.
//!
//! The same proof keeps a repeated `campaign report` from rendering again
//! (`reports/.report-stamp`, [`REPORT_STAMP`]): its input is the result set with everything else
//! the report reads, its files the report's, and it carries what the command prints.

use std::io::{Read, Write};
use std::path::Path;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::Result;

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

/// Do `dir`'s results files, as named in its stamp, hold exactly what this build writes for a
/// set of digest `input`? False whenever anything cannot be read or does not match.
pub(crate) fn unchanged(dir: &Path, input: &[u8; 32], names: &[&str]) -> bool {
    proven(dir, FILE_NAME, input, Some(names)).is_some()
}

/// Mark `dir`'s results stamp as proven now (its modification time). Best effort: a stamp left
/// with its old time only makes the next resume take its full path.
pub(crate) fn touch(dir: &Path) {
    if let Ok(file) = std::fs::File::options()
        .write(true)
        .open(dir.join(FILE_NAME))
    {
        let _ = file.set_modified(std::time::SystemTime::now());
    }
}

/// The stamp `stamp` (relative to `dir`) when it proves its files (relative to `dir`; exactly
/// `names` when given) hold what this build writes for input `input`: its `extra`.
pub(crate) fn proven(
    dir: &Path,
    stamp: &str,
    input: &[u8; 32],
    names: Option<&[&str]>,
) -> Option<serde_json::Value> {
    let text = std::fs::read(dir.join(stamp)).ok()?;
    let stamp = serde_json::from_slice::<Stamp>(&text).ok()?;
    let listed: Vec<&str> = stamp.files.iter().map(|f| f.name.as_str()).collect();
    let holds = stamp.format == FORMAT
        && stamp.writer == writer()
        && stamp.input == hex::encode(input)
        && names.is_none_or(|n| listed == n)
        && stamp.files.iter().all(|f| on_disk(dir, f));
    holds.then_some(stamp.extra)
}

/// The length and SHA-256 of the file `name` (relative to `dir`) as it is on disk.
pub(crate) fn sum_file(dir: &Path, name: &str) -> Result<FileSum> {
    let path = dir.join(name);
    let mut file = std::fs::File::open(&path).map_err(|e| crate::error::Error::io(&path, e))?;
    let mut sums = Summing::new(std::io::sink());
    std::io::copy(&mut file, &mut sums).map_err(|e| crate::error::Error::io(&path, e))?;
    let (bytes, sha256) = sums.finish();
    Ok(FileSum {
        name: name.to_string(),
        bytes,
        sha256,
    })
}

/// Does the file on disk have the recorded length and SHA-256?
fn on_disk(dir: &Path, want: &FileSum) -> bool {
    let Ok(mut file) = std::fs::File::open(dir.join(&want.name)) else {
        return false;
    };
    if file.metadata().map(|m| m.len()).ok() != Some(want.bytes) {
        return false;
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
            Err(_) => return false,
        }
    }
    let (bytes, sha256) = sums.finish();
    bytes == want.bytes && sha256 == want.sha256
}

/// Record that `dir`'s results files (`files`, as written) are this build's text of the set of
/// digest `input`. Written atomically, after the files.
pub(crate) fn record(dir: &Path, input: &[u8; 32], files: Vec<FileSum>) -> Result<()> {
    record_as(dir, FILE_NAME, input, files, serde_json::Value::Null)
}

/// Record the stamp `stamp` (relative to `dir`) of `files` written for input `input`, carrying
/// `extra`. Written atomically, after the files.
pub(crate) fn record_as(
    dir: &Path,
    stamp: &str,
    input: &[u8; 32],
    files: Vec<FileSum>,
    extra: serde_json::Value,
) -> Result<()> {
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
            });
        }
        record(dir, &input, sums).unwrap();
        input
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
