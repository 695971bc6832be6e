//! Phase summary of a `swimlane` profile: simpler's `chip_swimlane_records.json` (the raw,
//! cycle-domain file `ChipSwimlaneCollector::export` writes at simpler 6ebaf77; format in its
//! docs/dfx/chip-swimlane-profiling.md) read into where the time went: per AICPU scheduler
//! phase, its time summed over the scheduler threads as a share of their windows (each thread's
//! first phase start to last phase end), with the gaps between outer phases as `idle` — the way
//! upstream's tools reconstruct idle spans; the AICore tasks' busy share per core type over the
//! tasks' span; and the orchestrator's submits.
//!
//! Pure: text in, summary out. Cycles become µs by the file's own `metadata.clock_freq_hz`
//! (a2a3 50 MHz, a5 1 GHz), never by a guessed clock. A file of another shape is an error that
//! names what is missing, not a summary of nothing.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The outer scheduler phases: mutually exclusive in time within a thread's loop iteration
/// (docs/dfx/chip-swimlane-profiling.md §3.2), so their sum and the gaps between them make up
/// the thread's window. Any other kind (`resolve`, `drain_prepare`, `drain_publish` nest
/// inside an outer one; `dummy_task`, `predicated_skip` are markers) is shown but not summed.
const OUTER: &[&str] = &[
    "complete",
    "async_poll",
    "dispatch",
    "release",
    "dummy",
    "early_dispatch",
    "drain",
];

/// The on-disk file, the fields this summary reads (others are ignored).
#[derive(Deserialize)]
struct Records {
    chip_swimlane_level: u32,
    metadata: Metadata,
    /// `[core_id, task_token_raw, reg_task_id, start_cycles, end_cycles, receive_to_start_cycles]`
    /// (five columns in older files: the last is absent).
    #[serde(default)]
    aicore_tasks: Vec<Vec<u64>>,
    #[serde(default)]
    aicpu_scheduler_phases: Vec<Vec<SchedRecord>>,
    #[serde(default)]
    aicpu_orchestrator_phases: Vec<Vec<Span>>,
}

#[derive(Deserialize)]
struct Metadata {
    clock_freq_hz: u64,
    #[serde(default)]
    core_types: Vec<String>,
}

#[derive(Deserialize)]
struct SchedRecord {
    kind: String,
    start_cycles: u64,
    end_cycles: u64,
    #[serde(default)]
    tasks_processed: u64,
}

#[derive(Deserialize)]
struct Span {
    start_cycles: u64,
    end_cycles: u64,
}

/// Where one swimlane's time went.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct SwimlaneSummary {
    /// `chip_swimlane_level` (1–4): scheduler phases need 3, orchestrator phases 4.
    pub(crate) level: u32,
    /// Scheduler threads with phase records, and their windows summed, µs.
    pub(crate) threads: usize,
    pub(crate) window_us: f64,
    /// Each phase, outer ones first in `OUTER` order, then `idle`, then the nested ones.
    pub(crate) phases: Vec<PhaseRow>,
    /// AICore tasks per core type (`aic`, `aiv`).
    pub(crate) cores: Vec<CoreRow>,
    /// Orchestrator submits and their time summed, µs (level 4).
    pub(crate) submits: usize,
    pub(crate) submit_us: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct PhaseRow {
    pub(crate) phase: String,
    /// Outer phases and `idle` add up to the windows; a nested one lies inside an outer one.
    pub(crate) nested: bool,
    pub(crate) records: usize,
    pub(crate) tasks: u64,
    pub(crate) total_us: f64,
    /// Of the threads' summed windows, percent, one decimal.
    pub(crate) share_pct: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct CoreRow {
    pub(crate) core_type: String,
    pub(crate) cores: usize,
    pub(crate) tasks: usize,
    pub(crate) busy_us: f64,
    /// Busy time over (cores of this type × the tasks' span), percent, one decimal.
    pub(crate) busy_pct: f64,
}

fn pct(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        (part / whole * 1000.0).round() / 10.0
    } else {
        0.0
    }
}

/// The summary of `json`; `Err` says what does not read as simpler's format.
pub(crate) fn summary(json: &str) -> Result<SwimlaneSummary, String> {
    let r: Records = serde_json::from_str(json)
        .map_err(|e| format!("not a chip_swimlane_records.json of simpler's format: {e}"))?;
    if r.metadata.clock_freq_hz == 0 {
        return Err("metadata.clock_freq_hz is 0: cycles cannot become time".into());
    }
    let us = |cycles: u64| cycles as f64 * 1e6 / r.metadata.clock_freq_hz as f64;
    let (phases, threads, window_us) = phase_rows(&r.aicpu_scheduler_phases, &us);
    let cores = core_rows(&r, &us)?;
    let submits = r.aicpu_orchestrator_phases.iter().map(Vec::len).sum();
    let submit_cycles: u64 = (r.aicpu_orchestrator_phases.iter().flatten())
        .map(|s| s.end_cycles.saturating_sub(s.start_cycles))
        .sum();
    Ok(SwimlaneSummary {
        level: r.chip_swimlane_level,
        threads,
        window_us,
        phases,
        cores,
        submits,
        submit_us: us(submit_cycles),
    })
}

/// Per phase over every scheduler thread, the threads that have records, and their windows.
fn phase_rows(
    threads: &[Vec<SchedRecord>],
    us: &dyn Fn(u64) -> f64,
) -> (Vec<PhaseRow>, usize, f64) {
    // phase → (records, tasks, cycles)
    let mut sums: BTreeMap<&str, (usize, u64, u64)> = BTreeMap::new();
    let (mut window, mut outer, mut used) = (0u64, 0u64, 0usize);
    for thread in threads.iter().filter(|t| !t.is_empty()) {
        used += 1;
        let start = thread.iter().map(|p| p.start_cycles).min().unwrap_or(0);
        let end = thread.iter().map(|p| p.end_cycles).max().unwrap_or(0);
        window += end.saturating_sub(start);
        for p in thread {
            let cycles = p.end_cycles.saturating_sub(p.start_cycles);
            let s = sums.entry(p.kind.as_str()).or_default();
            s.0 += 1;
            s.1 += p.tasks_processed;
            s.2 += cycles;
            if OUTER.contains(&p.kind.as_str()) {
                outer += cycles;
            }
        }
    }
    let window_us = us(window);
    let row = |phase: &str, nested: bool, (records, tasks, cycles): (usize, u64, u64)| PhaseRow {
        phase: phase.to_string(),
        nested,
        records,
        tasks,
        total_us: us(cycles),
        share_pct: pct(us(cycles), window_us),
    };
    let mut rows: Vec<PhaseRow> = (OUTER.iter())
        .filter_map(|k| sums.get(k).map(|s| row(k, false, *s)))
        .collect();
    if used > 0 {
        rows.push(row("idle", false, (0, 0, window.saturating_sub(outer))));
    }
    rows.extend(
        (sums.iter())
            .filter(|(k, _)| !OUTER.contains(k))
            .map(|(k, s)| row(k, true, *s)),
    );
    (rows, used, window_us)
}

/// AICore tasks per core type: count, busy time, and busy share over the tasks' span.
fn core_rows(r: &Records, us: &dyn Fn(u64) -> f64) -> Result<Vec<CoreRow>, String> {
    let types = &r.metadata.core_types;
    // core type → (tasks, busy cycles)
    let mut sums: BTreeMap<&str, (usize, u64)> = BTreeMap::new();
    let (mut first, mut last) = (u64::MAX, 0u64);
    for (i, t) in r.aicore_tasks.iter().enumerate() {
        let [core, _, _, start, end, ..] = t.as_slice() else {
            return Err(format!(
                "aicore_tasks[{i}] has {} columns; simpler writes [core_id, task_token_raw, reg_task_id, start_cycles, end_cycles, receive_to_start_cycles]",
                t.len()
            ));
        };
        let kind = (types.get(*core as usize)).ok_or_else(|| {
            format!("aicore_tasks[{i}]: core {core} has no entry in metadata.core_types")
        })?;
        let s = sums.entry(kind.as_str()).or_default();
        s.0 += 1;
        s.1 += end.saturating_sub(*start);
        first = first.min(*start);
        last = last.max(*end);
    }
    let span = us(last.saturating_sub(first));
    Ok((sums.into_iter())
        .map(|(kind, (tasks, busy))| {
            let cores = types.iter().filter(|t| t.as_str() == kind).count();
            CoreRow {
                core_type: kind.to_uppercase(),
                cores,
                tasks,
                busy_us: us(busy),
                busy_pct: pct(us(busy), cores as f64 * span),
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Written as simpler 6ebaf77's `ChipSwimlaneCollector::export`
    /// (src/common/platform/shared/host/chip_swimlane_collector.cpp) writes a level-4 a2a3 file:
    /// its key order, tuple columns and whitespace; the numbers are made up (no NPU here).
    const JSON: &str =
        include_str!("../../tests/integration/fixtures/profiles/chip_swimlane_records.json");

    fn phase<'a>(s: &'a SwimlaneSummary, name: &str) -> &'a PhaseRow {
        s.phases.iter().find(|p| p.phase == name).unwrap()
    }

    #[test]
    fn scheduler_phases_and_idle_share_the_threads_windows() {
        let s = summary(JSON).unwrap();
        assert_eq!((s.level, s.threads), (4, 2));
        // Thread 0: 500 cycles, thread 1: 400 cycles, at 50 MHz: 10 + 8 µs.
        assert!((s.window_us - 18.0).abs() < 1e-9);
        let names: Vec<&str> = s.phases.iter().map(|p| p.phase.as_str()).collect();
        assert_eq!(names, ["complete", "dispatch", "idle", "resolve"]);
        let dispatch = phase(&s, "dispatch");
        assert_eq!((dispatch.records, dispatch.tasks), (2, 3));
        assert!((dispatch.total_us - 3.0).abs() < 1e-9);
        assert_eq!(dispatch.share_pct, 16.7);
        assert_eq!(phase(&s, "complete").share_pct, 27.8);
        // 18 µs of windows, 8 µs in outer phases: 10 µs idle.
        assert_eq!(phase(&s, "idle").share_pct, 55.6);
        assert!(phase(&s, "resolve").nested && !phase(&s, "idle").nested);
        assert_eq!((s.submits, (s.submit_us * 10.0).round()), (2, 14.0));
    }

    #[test]
    fn aicore_busy_share_is_per_core_type_over_the_tasks_span() {
        let s = summary(JSON).unwrap();
        let aic = &s.cores[0];
        assert_eq!(
            (aic.core_type.as_str(), aic.cores, aic.tasks),
            ("AIC", 1, 1)
        );
        assert_eq!(aic.busy_pct, 100.0);
        let aiv = &s.cores[1];
        assert_eq!(
            (aiv.core_type.as_str(), aiv.cores, aiv.tasks),
            ("AIV", 2, 2)
        );
        // 3 + 3 µs over 2 cores × 4 µs.
        assert_eq!(aiv.busy_pct, 75.0);
    }

    #[test]
    fn other_shapes_are_named_not_summarised() {
        assert!(summary("{}").unwrap_err().contains("simpler's format"));
        let no_clock = JSON.replace("\"clock_freq_hz\": 50000000", "\"clock_freq_hz\": 0");
        assert!(summary(&no_clock).unwrap_err().contains("clock_freq_hz"));
        let short = JSON.replace("[1, 4294967297, 1, 1000100, 1000250, 9]", "[1, 2]");
        assert!(summary(&short)
            .unwrap_err()
            .contains("aicore_tasks[1] has 2 columns"));
        let stray = JSON.replace("[2, 4294967298,", "[7, 4294967298,");
        assert!(summary(&stray).unwrap_err().contains("core 7"));
    }
}
