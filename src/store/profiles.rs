//! `profiles.json`: the run dir's list of profiled runs (`model::profile::ProfilesFile`), and the
//! `manifest.json` of a profiled run marked as one.
//!
//! Written whole through `store::layout::write_json` (temp file + rename) after each profiled
//! run, so a crash leaves the last complete list. It must not hold timed results: those are the
//! results files', which never list a profiled run.

use std::path::Path;

use serde_json::Value;

use crate::error::Result;
use crate::model::profile::{ProfileEntry, ProfilesFile, PROFILES_FILE};

/// Most bytes of a `profiles.json` read back (a list of profiled runs, never data).
const MAX_BYTES: u64 = 64 << 20;

/// The list in `run_dir`, if it has a readable one (a damaged file reads as none: the profiled
/// runs it listed are made again).
pub(crate) fn read(run_dir: &Path) -> Option<ProfilesFile> {
    let bytes = crate::model::file::read_regular(&run_dir.join(PROFILES_FILE), MAX_BYTES).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Write the list into `run_dir`.
pub(crate) fn write(run_dir: &Path, file: &ProfilesFile) -> Result<()> {
    let value = serde_json::to_value(file).unwrap_or(Value::Null);
    crate::store::layout::write_json(&run_dir.join(PROFILES_FILE), &value)
}

/// Mark the `manifest.json` a profiled run's bundle got like any run's: `profiled: true`, its
/// kind, and `profiling` naming its files (the seed's key, empty in a timed run's manifest).
pub(crate) fn mark_manifest(bundle: &Path, entry: &ProfileEntry) -> Result<()> {
    let path = bundle.join("manifest.json");
    let mut manifest = crate::model::file::read_regular(&path, MAX_BYTES)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .unwrap_or_else(|| Value::Object(Default::default()));
    if let Value::Object(map) = &mut manifest {
        map.insert("profiled".into(), Value::Bool(true));
        map.insert("profile_kind".into(), Value::from(entry.kind.name()));
        map.insert(
            "profiling".into(),
            serde_json::to_value(&entry.files).unwrap_or(Value::Null),
        );
        if entry.reason.is_some() {
            map.insert("profile_reason".into(), Value::from(entry.reason.clone()));
        }
    }
    crate::store::layout::write_json(&path, &manifest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::profile::{ProfileConfig, ProfileKind};
    use crate::model::results::RunStatus;

    #[test]
    fn the_list_reads_back_and_a_damaged_one_reads_as_none() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read(dir.path()).is_none());
        let mut file = ProfilesFile::new(&ProfileConfig {
            kinds: vec![ProfileKind::Cpu],
            runs: 1,
        });
        file.put(ProfileEntry {
            case_id: "c".into(),
            stack: "host".into(),
            kind: ProfileKind::Cpu,
            run: 1,
            status: RunStatus::Pass,
            reason: None,
            bundle: "cases/c/host/profiling/cpu".into(),
            files: [("flamegraph".to_string(), "flamegraph.svg".to_string())].into(),
            wall_s: Some(0.5),
        });
        write(dir.path(), &file).unwrap();
        let back = read(dir.path()).unwrap();
        assert_eq!(back, file);
        assert!(back
            .find("c", "host", ProfileKind::Cpu, 1)
            .unwrap()
            .settled());
        std::fs::write(dir.path().join(PROFILES_FILE), "{").unwrap();
        assert!(read(dir.path()).is_none());
    }
}
