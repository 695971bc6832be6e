//! The report's Profiles section: every profiled run the run dir's `profiles.json` lists, by
//! case and stack, with its status (a planned skip's reason too) and its files linked from the
//! report (paths relative to `reports/`); for the HTML page, each flame graph inline as an
//! image — an `<img>` of the SVG, so the flame graph's own scripts never run in the page.
//!
//! Profiled runs are never in the result set: this reads their list beside it and must not
//! feed any statistic.

use std::path::Path;

use serde::Serialize;

use crate::model::profile::{ProfilesFile, PROFILES_FILE};

/// Largest `profiles.json` read (a list, never data).
const MAX_LIST_BYTES: u64 = 64 << 20;
/// Largest flame graph put inline in the page; a bigger one is linked only.
const MAX_INLINE_BYTES: u64 = 4 << 20;

/// One profiled run as the report shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ProfileRow {
    pub(crate) case_id: String,
    pub(crate) stack: String,
    /// `cpu`, `cpu-2`, …: the kind and, past the first, the run.
    pub(crate) kind: String,
    pub(crate) status: String,
    pub(crate) reason: Option<String>,
    /// Its files by role, each linked relative to `reports/`.
    pub(crate) files: Vec<ProfileFile>,
    /// The flame graph's path relative to the run dir, when it has one.
    pub(crate) flamegraph: Option<String>,
    /// Each `pmu.csv` of the profile, read into its utilization (`report::pmu`).
    pub(crate) pmu: Vec<PmuTable>,
}

/// One `pmu.csv`'s utilization, or why it could not be read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct PmuTable {
    /// Relative to the profiled run's folder.
    pub(crate) file: String,
    pub(crate) rows: Vec<super::pmu::PmuUtilization>,
    pub(crate) error: Option<String>,
}

/// The utilization of every `pmu.csv` among a profile's files.
fn pmu_tables(
    run_dir: &Path,
    bundle: &str,
    files: &std::collections::BTreeMap<String, String>,
) -> Vec<PmuTable> {
    (files.values())
        .filter(|f| f.ends_with("pmu.csv"))
        .map(|f| {
            let path = run_dir.join(bundle).join(f);
            let read = crate::model::file::read_regular_text(&path, MAX_LIST_BYTES)
                .map_err(|e| format!("{f}: {e}"))
                .and_then(|text| super::pmu::utilization(&text));
            let (rows, error) = match read {
                Ok(rows) => (rows, None),
                Err(e) => (Vec::new(), Some(e)),
            };
            PmuTable {
                file: f.clone(),
                rows,
                error,
            }
        })
        .collect()
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ProfileFile {
    pub(crate) role: String,
    pub(crate) href: String,
}

/// The rows of `run_dir`'s `profiles.json`, in its order; none without one (a damaged list
/// reads as none: the report never fails for a profile).
pub(crate) fn rows(run_dir: &Path) -> Vec<ProfileRow> {
    let Some(file) = crate::model::file::read_regular(&run_dir.join(PROFILES_FILE), MAX_LIST_BYTES)
        .ok()
        .and_then(|b| serde_json::from_slice::<ProfilesFile>(&b).ok())
    else {
        return Vec::new();
    };
    (file.profiles.into_iter())
        .map(|p| {
            let at = |name: &str| format!("{}/{name}", p.bundle);
            ProfileRow {
                pmu: pmu_tables(run_dir, &p.bundle, &p.files),
                kind: crate::model::profile::folder(p.kind, p.run),
                status: p.status.to_string(),
                flamegraph: p.files.get("flamegraph").map(|f| at(f)),
                files: (p.files.iter())
                    .map(|(role, f)| ProfileFile {
                        role: role.clone(),
                        href: format!("../{}", at(f)),
                    })
                    .chain(std::iter::once(ProfileFile {
                        role: "run.log".into(),
                        href: format!("../{}", at("run.log")),
                    }))
                    .filter(|_| p.status != crate::model::results::RunStatus::Skipped)
                    .collect(),
                case_id: p.case_id,
                stack: p.stack,
                reason: p.reason,
            }
        })
        .collect()
}

/// The flame graph of `row` as a `data:` URI for an `<img>` (the page may load nothing else),
/// if it exists and is small enough to carry.
pub(crate) fn inline_flamegraph(run_dir: &Path, row: &ProfileRow) -> Option<String> {
    let path = run_dir.join(row.flamegraph.as_deref()?);
    let svg = crate::model::file::read_regular(&path, MAX_INLINE_BYTES).ok()?;
    let mut uri = String::from("data:image/svg+xml,");
    for &b in &svg {
        // Percent-encode all but plain ASCII that a URI keeps as it is.
        if b.is_ascii_alphanumeric() || b"-_.~/:;=,()'!*@$+".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    Some(uri)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::profile::{ProfileConfig, ProfileEntry, ProfileKind};
    use crate::model::results::RunStatus;

    #[test]
    fn rows_link_files_from_reports_and_skips_link_nothing() {
        let dir = tempfile::tempdir().unwrap();
        assert!(rows(dir.path()).is_empty());
        let mut file = ProfilesFile::new(&ProfileConfig {
            kinds: vec![ProfileKind::Cpu, ProfileKind::Pmu],
            runs: 1,
        });
        let entry = |kind, status, files: &[(&str, &str)]| ProfileEntry {
            case_id: "c".into(),
            stack: "host".into(),
            kind,
            run: 1,
            status,
            reason: None,
            bundle: format!(
                "cases/c/host/profiling/{}",
                crate::model::profile::folder(kind, 1)
            ),
            files: (files.iter())
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
            wall_s: None,
        };
        file.put(entry(
            ProfileKind::Cpu,
            RunStatus::Pass,
            &[("flamegraph", "flamegraph.svg")],
        ));
        file.put(entry(ProfileKind::Pmu, RunStatus::Skipped, &[]));
        let text = serde_json::to_string(&file).unwrap();
        std::fs::write(dir.path().join(PROFILES_FILE), text).unwrap();
        let got = rows(dir.path());
        assert_eq!(got.len(), 2);
        assert_eq!(
            got[0].files[0].href,
            "../cases/c/host/profiling/cpu/flamegraph.svg"
        );
        assert_eq!(
            got[0].flamegraph.as_deref(),
            Some("cases/c/host/profiling/cpu/flamegraph.svg")
        );
        assert!(got[1].files.is_empty() && got[1].status == "skipped");
        let svg_dir = dir.path().join("cases/c/host/profiling/cpu");
        std::fs::create_dir_all(&svg_dir).unwrap();
        std::fs::write(svg_dir.join("flamegraph.svg"), "<svg>a#b</svg>").unwrap();
        let uri = inline_flamegraph(dir.path(), &got[0]).unwrap();
        assert_eq!(uri, "data:image/svg+xml,%3Csvg%3Ea%23b%3C/svg%3E");
    }
}
