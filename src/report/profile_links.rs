//! The report's Profiles section: every profiled run the run dir's `profiles.json` lists, by
//! case and stack, with its status (a planned skip's reason too) and its files linked from the
//! report (paths relative to `reports/`); for the HTML page, each flame graph inline as an
//! image — an `<img>` of the SVG, so the flame graph's own scripts never run in the page.
//!
//! Each (case, stack) row of the results tables links its own profiles too (`attach`), so a
//! reader goes from a number to why it is what it is without searching the section.
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
    /// Each `chip_swimlane_records.json` of the profile, read into its phase summary
    /// (`report::swimlane`).
    pub(crate) swimlane: Vec<SwimlaneTable>,
}

/// One `chip_swimlane_records.json`'s phase summary, or why it could not be read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct SwimlaneTable {
    /// Relative to the profiled run's folder.
    pub(crate) file: String,
    pub(crate) summary: Option<super::swimlane::SwimlaneSummary>,
    pub(crate) error: Option<String>,
}

/// Largest swimlane file read (a real trace has ~100,000 records, a few MB).
const MAX_SWIMLANE_BYTES: u64 = 512 << 20;

/// The phase summary of every `chip_swimlane_records.json` among a profile's files.
fn swimlane_tables(
    run_dir: &Path,
    bundle: &str,
    files: &std::collections::BTreeMap<String, String>,
) -> Vec<SwimlaneTable> {
    (files.values())
        .filter(|f| f.ends_with("chip_swimlane_records.json"))
        .map(|f| {
            let path = run_dir.join(bundle).join(f);
            let read = crate::model::file::read_regular_text(&path, MAX_SWIMLANE_BYTES)
                .map_err(|e| format!("{f}: {e}"))
                .and_then(|text| super::swimlane::summary(&text));
            let (summary, error) = match read {
                Ok(s) => (Some(s), None),
                Err(e) => (None, Some(e)),
            };
            SwimlaneTable {
                file: f.clone(),
                summary,
                error,
            }
        })
        .collect()
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
                swimlane: swimlane_tables(run_dir, &p.bundle, &p.files),
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

/// One profile as its (case, stack) row links it: the kind and its main file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct RowProfile {
    /// `cpu`, `cpu-2`, … as in the Profiles section.
    pub(crate) kind: String,
    /// `pass`, `fail`, … (a planned skip left no file and is not linked from the row).
    pub(crate) status: String,
    /// Which file it is (`flamegraph`, `counters`, an upstream file's role, or `run.log`).
    pub(crate) role: String,
    /// Relative to `reports/`, as every link of the report.
    pub(crate) href: String,
}

/// The file a row links for a profile: its flame graph, else its counters, else its first
/// other file, else its `run.log` (a failed profiled run's reason is there).
fn main_file(p: &ProfileRow) -> Option<&ProfileFile> {
    let by_role = |role: &str| p.files.iter().find(|f| f.role == role);
    (by_role("flamegraph").or_else(|| by_role("counters")))
        .or_else(|| p.files.iter().find(|f| f.role != "run.log"))
        .or_else(|| p.files.first())
}

/// The profiles of `profiles` that left a file, as their (case, stack) rows link them, in
/// `profiles`' order (`context::Context::link_profiles` gives each row its own).
pub(crate) fn by_row(
    profiles: &[ProfileRow],
) -> std::collections::HashMap<(&str, &str), Vec<RowProfile>> {
    let mut out: std::collections::HashMap<(&str, &str), Vec<RowProfile>> =
        std::collections::HashMap::new();
    for p in profiles {
        if let Some(f) = main_file(p) {
            (out.entry((p.case_id.as_str(), p.stack.as_str()))
                .or_default())
            .push(RowProfile {
                kind: p.kind.clone(),
                status: p.status.clone(),
                role: f.role.clone(),
                href: f.href.clone(),
            });
        }
    }
    out
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
