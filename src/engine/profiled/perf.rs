//! `perf` around a CPU stack's processes: the command put in front of a profiled run
//! (`perf record` for `cpu`, `perf stat` for `counters`) and whether perf works on this machine
//! at all (installed, and not refused by `kernel.perf_event_paranoid`), asked once per kind.
//!
//! Why DWARF call stacks: the collective's own functions (the host stack's `ring::allreduce`,
//! Open MPI's `ompi_coll_*`) are frames in the middle of the stack; without frame pointers
//! (Rust's and Debian's default builds) `--call-graph fp` loses them, DWARF unwinding keeps them
//! (docs/profiles.md has the measurement).

use std::path::Path;
use std::process::Command;

use crate::model::profile::ProfileKind;

/// Samples per second of `perf record`: an odd rate, so sampling does not lock step with a
/// periodic loop; about a thousand a second keeps a seconds-long run's stacks well sampled and
/// its `perf.data` a few MB.
const FREQUENCY: &str = "997";

/// DWARF unwinding with 32 KiB of each sampled thread's stack copied: perf's default 8 KiB
/// truncates the host stack's mesh allreduce (its `reduce_sources` frame is large), leaving
/// `[unknown]` where `mesh::allreduce` belongs (215 truncated stacks of ~220 at 8 KiB, 1 at 32 KiB).
const STACK_COPY: &str = "dwarf,32768";

/// The data file of a `cpu` profile and the CSV of a `counters` profile, in the profiled run's
/// folder.
pub(crate) const PERF_DATA: &str = "perf.data";
pub(crate) const COUNTERS_CSV: &str = "counters.csv";

/// What runs in front of the stack's command for `kind` (`None` for upstream kinds).
pub(crate) fn prefix(kind: ProfileKind, bundle: &Path) -> Vec<String> {
    let out = |name: &str| bundle.join(name).to_string_lossy().into_owned();
    match kind {
        ProfileKind::Cpu => [
            "perf",
            "record",
            "--quiet",
            "--freq",
            FREQUENCY,
            "--call-graph",
            STACK_COPY,
            "--output",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([out(PERF_DATA), "--".to_string()])
        .collect(),
        ProfileKind::Counters => ["perf", "stat", "--field-separator", ",", "--output"]
            .iter()
            .map(|s| s.to_string())
            .chain([out(COUNTERS_CSV), "--".to_string()])
            .collect(),
        _ => Vec::new(),
    }
}

/// Does perf make `kind` here? `Err` is the reason a profiled run of it is a planned skip:
/// perf missing, or refused (with the kernel's `perf_event_paranoid`). Tried on `true` with
/// the same options a profiled run gets, writing into `scratch` (removed after).
pub(crate) fn check(kind: ProfileKind, scratch: &Path) -> Result<(), String> {
    let _ = std::fs::create_dir_all(scratch);
    let argv = prefix(kind, scratch);
    let tried = Command::new(&argv[0]).args(&argv[1..]).arg("true").output();
    let _ = std::fs::remove_dir_all(scratch);
    match tried {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(
            "perf is not installed (no `perf` on PATH; Debian: apt-get install linux-perf)".into(),
        ),
        Err(e) => Err(format!("perf cannot be started: {e}")),
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => {
            let said = String::from_utf8_lossy(&out.stderr);
            let first = (said.lines())
                .map(str::trim)
                .find(|l| !l.is_empty())
                .unwrap_or("no message");
            let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
                .map(|s| format!(" (kernel.perf_event_paranoid = {})", s.trim()))
                .unwrap_or_default();
            Err(format!(
                "perf refused to profile on this machine{paranoid}: {}",
                crate::model::text::visible(first)
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_records_dwarf_call_stacks_and_counters_write_csv() {
        let p = prefix(ProfileKind::Cpu, Path::new("/b"));
        assert_eq!(p[0], "perf");
        assert!(p.windows(2).any(|w| w == ["--call-graph", "dwarf,32768"]));
        assert_eq!(&p[p.len() - 2..], ["/b/perf.data", "--"]);
        let c = prefix(ProfileKind::Counters, Path::new("/b"));
        assert!(c.windows(2).any(|w| w == ["--field-separator", ","]));
        assert_eq!(&c[c.len() - 2..], ["/b/counters.csv", "--"]);
        assert!(prefix(ProfileKind::Pmu, Path::new("/b")).is_empty());
    }
}
