//! Which of each run's bundle files exist, as the report links them (`run.log`,
//! `manifest.json`, `timing.json`): stat-ed once per report. `report::inputs` digests the
//! answer (a report is rendered again when a bundle file appears or goes) and the page links by
//! the same answer, instead of asking the file system again for every row it renders.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::model::results::ResultSet;

/// The files the report links from a bundle: short name and file name, in link order.
pub(crate) const FILES: [(&str, &str); 3] = [
    ("log", "run.log"),
    ("manifest", "manifest.json"),
    ("timing", "timing.json"),
];

/// The bundle files present, one bit per [`FILES`] entry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Present(u8);

impl Present {
    /// Stat the bundle `bundle` (relative to `run_dir`; none for an empty one): which of its
    /// files are regular files, following links (as `Path::is_file`). The bundle's path is
    /// looked up once and each name relative to it (one long path walk instead of three).
    fn stat(run_dir: &Path, bundle: &str) -> Present {
        use rustix::fs::{AtFlags, FileType, Mode, OFlags};
        if bundle.is_empty() {
            return Present::default();
        }
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let Ok(dir) = rustix::fs::open(run_dir.join(bundle), flags, Mode::empty()) else {
            // No such folder: none of its files.
            return Present::default();
        };
        let is_file = |name: &str| {
            rustix::fs::statat(&dir, name, AtFlags::empty())
                .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::RegularFile)
        };
        let bits = (FILES.iter().enumerate())
            .filter(|(_, (_, file))| is_file(file))
            .fold(0u8, |bits, (i, _)| bits | (1 << i));
        Present(bits)
    }

    /// The present files, as (short name, file name), in link order.
    pub(crate) fn files(self) -> impl Iterator<Item = (&'static str, &'static str)> {
        (FILES.into_iter().enumerate())
            .filter(move |(i, _)| self.0 & (1 << i) != 0)
            .map(|(_, f)| f)
    }

    pub(crate) fn has_log(self) -> bool {
        self.0 & 1 != 0
    }
}

/// The present files of every bundle of a result set.
#[derive(Debug, Default)]
pub(crate) struct BundleFiles {
    run_dir: PathBuf,
    by_bundle: HashMap<Box<str>, Present>,
}

impl BundleFiles {
    /// Stat the bundle files of every run of `results` in `run_dir`, once each.
    pub(crate) fn stat(results: &ResultSet, run_dir: &Path) -> BundleFiles {
        let mut by_bundle = HashMap::with_capacity(results.runs.len());
        for run in &results.runs {
            let bundle = run.bundle.display().to_string();
            if !by_bundle.contains_key(bundle.as_str()) {
                let present = Present::stat(run_dir, &bundle);
                by_bundle.insert(bundle.into_boxed_str(), present);
            }
        }
        BundleFiles {
            run_dir: run_dir.to_path_buf(),
            by_bundle,
        }
    }

    /// The present files of `bundle` (as a run names it); one that is not a run's of the set
    /// is stat-ed now.
    pub(crate) fn of(&self, bundle: &str) -> Present {
        (self.by_bundle.get(bundle).copied())
            .unwrap_or_else(|| Present::stat(&self.run_dir, bundle))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn present_files_are_named_in_link_order() {
        let tmp = tempfile::tempdir().unwrap();
        let bundle = tmp.path().join("cases/c/s");
        std::fs::create_dir_all(&bundle).unwrap();
        std::fs::write(bundle.join("run.log"), "").unwrap();
        // A directory of a linked name is no file to link; a link to a file is one.
        std::fs::create_dir(bundle.join("manifest.json")).unwrap();
        std::fs::write(tmp.path().join("t.json"), "[]").unwrap();
        std::os::unix::fs::symlink(tmp.path().join("t.json"), bundle.join("timing.json")).unwrap();
        let present = Present::stat(tmp.path(), "cases/c/s");
        let names: Vec<_> = present.files().map(|(_, f)| f).collect();
        assert_eq!(names, ["run.log", "timing.json"]);
        assert!(present.has_log());
        assert_eq!(Present::stat(tmp.path(), ""), Present::default());
        assert_eq!(Present::stat(tmp.path(), "cases/none"), Present::default());
    }
}
