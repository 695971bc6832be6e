//! PMU utilization of a `pmu` profile: simpler's `pmu.csv` (one row per task; columns
//! `thread_id,core_id,task_id,func_id,core_type,pmu_total_cycles,<counters…>,event_type`, as
//! `PmuCollector` writes them at simpler 6ebaf77) read by its header, and each pipe's busy
//! counter summed as a share of the summed `pmu_total_cycles`, per core type (AIC, AIV) — the
//! numbers behind the seed harness's `pmu_utilization` figure. The busy counters are named per
//! architecture (src/*/platform/include/common/pmu_profiling.h, PIPE_UTILIZATION): a2a3
//! `vec_busy_cycles`, `cube_busy_cycles`, …; a5 `pmu_idc_aic_vec_busy_o`, `cube_instr_busy`, …,
//! `pmu_fix_instr_busy`.
//!
//! Pure: text in, rows out. An event group without busy counters (MEMORY, L2_CACHE, …) has no
//! utilization, and says so by giving no row.

use serde::Serialize;

/// One core type's utilization over the tasks of one `pmu.csv`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct PmuUtilization {
    /// `AIC` (core_type 0) or `AIV` (1).
    pub(crate) core_type: String,
    pub(crate) tasks: usize,
    /// (pipe, share of cycles busy in percent, one decimal), in the file's column order.
    pub(crate) pipes: Vec<(String, f64)>,
}

/// The pipe a busy counter column is of, in either architecture's naming; none for another
/// counter (`icache_req`, `ub_read_req`, …).
fn busy_pipe(column: &str) -> Option<&str> {
    if column == "pmu_idc_aic_vec_busy_o" {
        return Some("vec");
    }
    (column.strip_suffix("_busy_cycles"))
        .or_else(|| column.strip_suffix("_instr_busy"))
        .map(|pipe| pipe.strip_prefix("pmu_").unwrap_or(pipe))
}

/// The utilization rows of `csv`; `Err` names what does not read as simpler's format.
pub(crate) fn utilization(csv: &str) -> Result<Vec<PmuUtilization>, String> {
    let mut lines = csv.lines().filter(|l| !l.trim().is_empty());
    let header: Vec<&str> = lines.next().ok_or("empty pmu.csv")?.split(',').collect();
    let col = |name: &str| {
        (header.iter().position(|h| h.trim() == name))
            .ok_or_else(|| format!("pmu.csv has no `{name}` column"))
    };
    let (core_type, total) = (col("core_type")?, col("pmu_total_cycles")?);
    let busy: Vec<(usize, &str)> = (header.iter().enumerate())
        .filter_map(|(i, h)| busy_pipe(h.trim()).map(|pipe| (i, pipe)))
        .collect();
    // Per core type (0 AIC, 1 AIV): tasks, Σ total cycles, Σ busy cycles per pipe.
    let mut sums: [(usize, f64, Vec<f64>); 2] = [
        (0, 0.0, vec![0.0; busy.len()]),
        (0, 0.0, vec![0.0; busy.len()]),
    ];
    for (n, line) in lines.enumerate() {
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        let num = |i: usize| -> Result<f64, String> {
            (cells.get(i).and_then(|c| c.parse::<f64>().ok()))
                .ok_or_else(|| format!("pmu.csv row {}: column {} is not a number", n + 2, i + 1))
        };
        let slot = match cells.get(core_type).copied() {
            Some("0") => 0,
            Some("1") => 1,
            other => {
                return Err(format!(
                    "pmu.csv row {}: core_type {other:?} is neither 0 nor 1",
                    n + 2
                ))
            }
        };
        let s = &mut sums[slot];
        s.0 += 1;
        s.1 += num(total)?;
        for (k, (i, _)) in busy.iter().enumerate() {
            s.2[k] += num(*i)?;
        }
    }
    Ok((sums.iter().zip(["AIC", "AIV"]))
        .filter(|((tasks, total, _), _)| *tasks > 0 && *total > 0.0 && !busy.is_empty())
        .map(|((tasks, total, pipes), name)| PmuUtilization {
            core_type: name.to_string(),
            tasks: *tasks,
            pipes: (busy.iter().zip(pipes))
                .map(|((_, pipe), b)| (pipe.to_string(), (b / total * 1000.0).round() / 10.0))
                .collect(),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// simpler's own example row (docs/dfx/pmu-profiling.md) under the header its
    /// `PmuCollector` writes for PIPE_UTILIZATION on a2a3, and an AIC task.
    const CSV: &str = include_str!("../../tests/integration/fixtures/profiles/pmu.csv");

    #[test]
    fn busy_cycles_are_shares_of_total_cycles_per_core_type() {
        let rows = utilization(CSV).unwrap();
        assert_eq!(rows.len(), 2);
        let (aic, aiv) = (&rows[0], &rows[1]);
        assert_eq!((aic.core_type.as_str(), aic.tasks), ("AIC", 1));
        assert_eq!(aic.pipes[1], ("cube".to_string(), 75.0));
        assert_eq!((aiv.core_type.as_str(), aiv.tasks), ("AIV", 2));
        // (1024 + 3072) / (2 × 18432) = 11.1 %
        assert_eq!(aiv.pipes[0], ("vec".to_string(), 11.1));
        let names: Vec<&str> = aiv.pipes.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(names, ["vec", "cube", "scalar", "mte1", "mte2", "mte3"]);
    }

    /// An a5 file as the a5 `PmuCollector` writes it (same row format, the DAV_3510
    /// PIPE_UTILIZATION roster: its tenth slot is unnamed and left out).
    #[test]
    fn a5_busy_counters_are_read_by_their_own_names() {
        let csv = "thread_id,core_id,task_id,func_id,core_type,pmu_total_cycles,pmu_idc_aic_vec_busy_o,cube_instr_busy,scalar_instr_busy,mte1_instr_busy,mte2_instr_busy,mte3_instr_busy,icache_req,icache_miss,pmu_fix_instr_busy,event_type\n\
1,3,0x0000000100000002,0,1,20000,5000,0,1000,0,2000,500,300,2,0,2\n";
        let rows = utilization(csv).unwrap();
        assert_eq!(rows.len(), 1);
        let names: Vec<&str> = rows[0].pipes.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            names,
            ["vec", "cube", "scalar", "mte1", "mte2", "mte3", "fix"]
        );
        assert_eq!(rows[0].pipes[0].1, 25.0);
    }

    #[test]
    fn other_shapes_are_named_not_guessed() {
        assert!(utilization("").is_err());
        assert!(utilization("a,b\n1,2\n").unwrap_err().contains("core_type"));
        let memory = "thread_id,core_id,task_id,func_id,core_type,pmu_total_cycles,ub_read_req,event_type\n0,0,0x1,0,1,10,3,3\n";
        assert!(utilization(memory).unwrap().is_empty());
        let bad = CSV.replace(",1,18432,1024", ",7,18432,1024");
        assert!(utilization(&bad).unwrap_err().contains("core_type"));
    }
}
