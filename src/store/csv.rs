//! `results.csv` (one tidy row per run) and `samples.csv` (one row per round).
//!
//! Pure functions of a `ResultSet` returning the file text; empty cells where `results.json` has
//! `null`. Phase means become `phase_<name>_s` columns (the union over all runs, sorted).

use std::collections::BTreeSet;

use crate::model::results::ResultSet;
use crate::store::json::row_stats;

fn cell(x: Option<f64>) -> String {
    x.map(|v| v.to_string()).unwrap_or_default()
}

fn finish(w: csv::Writer<Vec<u8>>) -> String {
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// One row per run.
pub(crate) fn results_csv(set: &ResultSet) -> String {
    let stats: Vec<_> = set.runs.iter().map(row_stats).collect();
    let phases: BTreeSet<String> = stats
        .iter()
        .flat_map(|s| s.phase_means.keys().cloned())
        .collect();
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header: Vec<String> = [
        "case_id",
        "stack",
        "status",
        "reason",
        "variant",
        "p",
        "count",
        "dtype",
        "platform",
        "devices",
        "n_bytes",
        "equivalence_hash",
        "attempt",
        "n_warmup",
        "n_timed",
        "execute_s_mean",
        "execute_s_stdev",
        "execute_s_median",
        "device_wall_s_mean",
        "device_wall_s_median",
        "setup_s",
        "bw_execute_mb_s",
        "wall_s_mean",
        "wall_s_stdev",
        "execute_spread_ratio",
        "artifact_bundle",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    header.extend(phases.iter().map(|p| format!("phase_{p}_s")));
    let _ = w.write_record(&header);
    for (r, st) in set.runs.iter().zip(&stats) {
        let c = &r.case;
        let devices: Vec<String> = c.device_ids.iter().map(|d| d.to_string()).collect();
        let mut rec = vec![
            r.case_id.clone(),
            r.stack.clone(),
            r.status.to_string(),
            r.error.clone().unwrap_or_default(),
            c.variant.to_string(),
            c.p.to_string(),
            c.count.to_string(),
            c.dtype.to_string(),
            c.platform.to_string(),
            devices.join(","),
            c.n_bytes().to_string(),
            c.equivalence_hash(),
            r.attempt.to_string(),
            st.n_warmup.to_string(),
            st.n_timed.to_string(),
            cell(st.execute_s_mean),
            cell(st.execute_s_stdev),
            cell(st.execute_s_median),
            cell(st.device_wall_s_mean),
            cell(st.device_wall_s_median),
            cell(st.setup_s),
            cell(st.bw_execute_mb_s),
            cell(st.wall_s_mean),
            cell(st.wall_s_stdev),
            cell(st.execute_spread_ratio),
            r.bundle.to_string_lossy().into_owned(),
        ];
        rec.extend(phases.iter().map(|p| cell(st.phase_means.get(p).copied())));
        let _ = w.write_record(&rec);
    }
    finish(w)
}

/// One row per round of every run (warmup and timed, any status: the raw data).
pub(crate) fn samples_csv(set: &ResultSet) -> String {
    let phases: BTreeSet<String> = set
        .runs
        .iter()
        .flat_map(|r| r.samples.iter().flat_map(|s| s.phases.keys().cloned()))
        .collect();
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header: Vec<String> = [
        "case_id",
        "stack",
        "run_status",
        "round",
        "phase",
        "timed",
        "ok",
        "execute_s",
        "wall_s",
        "device_wall_s",
        "setup_s",
        "bw_execute_mb_s",
        "per_rank_execute_s",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    header.extend(phases.iter().map(|p| format!("phase_{p}_s")));
    let _ = w.write_record(&header);
    for r in &set.runs {
        for s in &r.samples {
            let per_rank: Vec<String> =
                s.per_rank_execute_s.iter().map(|x| x.to_string()).collect();
            let mut rec = vec![
                r.case_id.clone(),
                r.stack.clone(),
                r.status.to_string(),
                s.round.to_string(),
                s.phase.clone(),
                s.is_timed().to_string(),
                s.ok.to_string(),
                cell(s.execute_s),
                cell(s.wall_s),
                cell(s.device_wall_s),
                cell(s.setup_s),
                cell(s.bw_execute_mb_s),
                per_rank.join(";"),
            ];
            rec.extend(phases.iter().map(|p| cell(s.phases.get(p).copied())));
            let _ = w.write_record(&rec);
        }
    }
    finish(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::results::RunStatus;
    use crate::store::json::tests::result;

    #[test]
    fn failed_runs_have_empty_cells_and_samples_every_round() {
        let set = ResultSet {
            runs: vec![result(RunStatus::Pass), result(RunStatus::Fail)],
            ..ResultSet::default()
        };
        let text = results_csv(&set);
        let mut rd = csv::Reader::from_reader(text.as_bytes());
        let h = rd.headers().unwrap().clone();
        let col = |name: &str| h.iter().position(|x| x == name).unwrap();
        let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
        assert_eq!(rows.len(), 2);
        assert_eq!(&rows[0][col("execute_s_median")], "2");
        assert_eq!(&rows[1][col("execute_s_mean")], "");
        assert_eq!(&rows[1][col("status")], "fail");
        assert_eq!(&rows[1][col("reason")], "exit code 3");
        let samples = samples_csv(&set);
        assert_eq!(samples.lines().count(), 1 + 8);
        assert!(samples
            .lines()
            .nth(1)
            .unwrap()
            .contains(",1,warmup-1,false,true,9,18,"));
    }
}
