//! The files an upstream profile kind leaves (simpler's `outputs/<case>_<ts>/…`, a swimlane
//! JSON, a PMU CSV): found by the stack definition's `files` patterns, kept only when written
//! during the profiled run (older runs' outputs stay where they are), moved into its folder
//! under the same relative path (pypto writes one `pmu.csv` per rank and card: the folders
//! tell them apart).
//!
//! Patterns are relative to the stack's root when it has one (the upstream program writes
//! there), else to the profiled run's folder; an absolute pattern stands as written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Move every file matching `patterns` and modified at or after `since` into `bundle`; returns
/// the files by their path relative to `bundle`. `Err` when the run left none (the profile was
/// not made).
pub(crate) fn collect(
    patterns: &[String],
    root: Option<&Path>,
    bundle: &Path,
    since: SystemTime,
) -> Result<BTreeMap<String, String>, String> {
    let base: PathBuf = root.map_or_else(|| bundle.to_path_buf(), Path::to_path_buf);
    let mut out = BTreeMap::new();
    for pattern in patterns {
        // An absolute pattern (a program writing to a fixed folder, as hccl_test's
        // HCCL_TEST_PROFILING_PATH) keeps each file's path below its own literal folder, so a
        // tree of same-named files (one per device) is not flattened onto one name.
        let (full, below) = if Path::new(pattern).is_absolute() {
            (PathBuf::from(pattern), literal_prefix(pattern))
        } else {
            (base.join(pattern), base.clone())
        };
        let paths = glob::glob(&full.to_string_lossy())
            .map_err(|e| format!("profile file pattern `{pattern}`: {e}"))?;
        for path in paths.flatten() {
            let fresh =
                (std::fs::metadata(&path).and_then(|m| m.modified())).is_ok_and(|t| t >= since);
            if !fresh || !path.is_file() || path.starts_with(bundle) {
                continue;
            }
            // Below the base (or the absolute pattern's folder); else it keeps its name.
            let rel = match path.strip_prefix(&below) {
                Ok(rel) => rel.to_path_buf(),
                Err(_) => PathBuf::from(path.file_name().unwrap_or_default()),
            };
            let to = bundle.join(&rel);
            if let Some(dir) = to.parent() {
                std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            }
            if std::fs::rename(&path, &to).is_err() {
                std::fs::copy(&path, &to).map_err(|e| format!("{}: {e}", path.display()))?;
                let _ = std::fs::remove_file(&path);
            }
            let name = rel.to_string_lossy().into_owned();
            out.insert(name.clone(), name);
        }
    }
    if out.is_empty() {
        return Err(format!(
            "the run wrote no profile file matching {} under {}",
            patterns.join(", "),
            base.display()
        ));
    }
    Ok(out)
}

/// The folder an absolute glob pattern names before its first wildcard component:
/// `/var/log/npu/profiling/**/*` → `/var/log/npu/profiling`.
fn literal_prefix(pattern: &str) -> PathBuf {
    Path::new(pattern)
        .components()
        .take_while(|c| !c.as_os_str().to_string_lossy().contains(['*', '?', '[']))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_files_written_during_the_run_are_moved() {
        let root = tempfile::tempdir().unwrap();
        let bundle = tempfile::tempdir().unwrap();
        let out = root.path().join("outputs/case_1");
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(out.join("old.json"), "{}").unwrap();
        let old = SystemTime::now() - std::time::Duration::from_secs(3600);
        std::fs::File::options()
            .write(true)
            .open(out.join("old.json"))
            .unwrap()
            .set_modified(old)
            .unwrap();
        let since = SystemTime::now() - std::time::Duration::from_secs(1);
        std::fs::write(out.join("chip_swimlane_records.json"), "[]").unwrap();
        let pats = vec!["outputs/*/*.json".to_string()];
        let got = collect(&pats, Some(root.path()), bundle.path(), since).unwrap();
        let name = "outputs/case_1/chip_swimlane_records.json";
        assert_eq!(got.keys().collect::<Vec<_>>(), [name]);
        assert!(bundle.path().join(name).is_file());
        assert!(out.join("old.json").is_file());
        let none = collect(&pats, Some(root.path()), bundle.path(), SystemTime::now());
        assert!(none.unwrap_err().contains("no profile file"));
    }

    #[test]
    fn an_absolute_pattern_keeps_the_tree_below_its_folder() {
        let fixed = tempfile::tempdir().unwrap();
        let bundle = tempfile::tempdir().unwrap();
        let since = SystemTime::now() - std::time::Duration::from_secs(1);
        for device in ["device_0", "device_1"] {
            let data = fixed.path().join("PROF_000001").join(device).join("data");
            std::fs::create_dir_all(&data).unwrap();
            std::fs::write(data.join("task_time.data.0.slice_0"), device).unwrap();
        }
        let pats = vec![format!("{}/**/*", fixed.path().display())];
        let got = collect(&pats, None, bundle.path(), since).unwrap();
        let names: Vec<&String> = got.keys().collect();
        assert_eq!(
            names,
            [
                "PROF_000001/device_0/data/task_time.data.0.slice_0",
                "PROF_000001/device_1/data/task_time.data.0.slice_0"
            ]
        );
        let one = bundle.path().join(names[1]);
        assert_eq!(std::fs::read_to_string(one).unwrap(), "device_1");
        assert_eq!(
            literal_prefix("/var/log/npu/profiling/**/*"),
            Path::new("/var/log/npu/profiling")
        );
    }
}
