//! `results.csv` (one tidy row per run) and `samples.csv` (one row per round).
//!
//! Pure functions of a `ResultSet` writing the file text to any `Write`, a row at a time (the
//! samples of a 10,000-run campaign are ~50 MB of text). `results.csv` is the same
//! `store::row::Row` as `results.json`'s `runs`: empty cells where the JSON has `null`, lists
//! joined with `,`, phase means as `phase_<name>_s` columns (the union over all runs, sorted).

use std::collections::BTreeSet;
use std::io::Write;

use serde_json::Value;

use crate::model::results::ResultSet;
use crate::store::row::Row;

fn cell(x: Option<f64>) -> String {
    x.map(|v| v.to_string()).unwrap_or_default()
}

/// The text one of the writers below writes (writing into memory cannot fail).
#[cfg(test)]
fn text(write: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> String {
    let mut out = Vec::new();
    let _ = write(&mut out);
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
pub(crate) fn results_csv(set: &ResultSet) -> String {
    text(|w| write_results_csv(set, w))
}

#[cfg(test)]
pub(crate) fn samples_csv(set: &ResultSet) -> String {
    text(|w| write_samples_csv(set, w))
}

/// A scalar of a serialized row as a CSV cell: `null` empty, lists joined with `,`.
fn scalar(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => crate::model::text::csv_cell(s).into_owned(),
        Value::Number(n) => match n.as_u64() {
            Some(u) => u.to_string(),
            None => cell(n.as_f64()),
        },
        Value::Array(xs) => xs.iter().map(scalar).collect::<Vec<_>>().join(","),
        other => other.to_string(),
    }
}

/// Nested maps of a row become one column per key: `phase_means.init` → `phase_init_s`.
type Means = fn(&Row) -> &std::collections::BTreeMap<String, f64>;
const FLATTENED: &[(&str, &str, Means)] = &[
    ("phase_means", "phase_", |r| &r.phase_means),
    ("compile_profile_means", "compile_", |r| {
        &r.compile_profile_means
    }),
];

/// One row per run: the fields of `store::row::Row` in its order, maps flattened into
/// `phase_<name>_s` / `compile_<name>_s` columns (the union over all runs, sorted).
///
/// Two passes over the runs, one row in memory at a time: the first finds the columns (the
/// first row's fields, the union of the map keys), the second writes the rows.
pub(crate) fn write_results_csv(set: &ResultSet, out: impl Write) -> std::io::Result<()> {
    let as_map = |r| match serde_json::to_value(Row::of(r)) {
        Ok(Value::Object(m)) => Some(m),
        _ => None,
    };
    let is_nested = |k: &str| FLATTENED.iter().any(|(f, _, _)| *f == k);
    // The first row's fields, in the row's order (as serialized).
    let plain: Vec<String> = (set.runs.iter().find_map(as_map))
        .map(|m| m.keys().filter(|k| !is_nested(k)).cloned().collect())
        .unwrap_or_default();
    // The union of each map's keys, read from the rows themselves (no JSON value per row).
    let mut nested: Vec<(&str, &str, BTreeSet<String>)> = FLATTENED
        .iter()
        .map(|(field, prefix, _)| (*field, *prefix, BTreeSet::new()))
        .collect();
    for row in set.runs.iter().map(Row::of) {
        for ((_, _, names), (_, _, means)) in nested.iter_mut().zip(FLATTENED) {
            names.extend(means(&row).keys().cloned());
        }
    }
    let mut w = csv::Writer::from_writer(out);
    let mut header = plain.clone();
    for (_, prefix, names) in &nested {
        header.extend(names.iter().map(|n| format!("{prefix}{n}_s")));
    }
    w.write_record(&header)?;
    for m in set.runs.iter().filter_map(as_map) {
        let mut rec: Vec<String> = plain
            .iter()
            .map(|k| m.get(k).map(scalar).unwrap_or_default())
            .collect();
        for (field, _, names) in &nested {
            let map = m.get(*field).and_then(Value::as_object);
            rec.extend(
                names
                    .iter()
                    .map(|n| map.and_then(|m| m.get(n)).map(scalar).unwrap_or_default()),
            );
        }
        w.write_record(&rec)?;
    }
    w.flush()
}

/// One row per round of every run (warmup and timed, any status: the raw data). `node` is the
/// ranks' nodes in rank order (`;`-joined like `per_rank_execute_s`, so the two line up) for a
/// run over several nodes whose ranks recorded where they ran; empty on one node.
pub(crate) fn write_samples_csv(set: &ResultSet, out: impl Write) -> std::io::Result<()> {
    let phases: BTreeSet<String> = set
        .runs
        .iter()
        .flat_map(|r| r.samples.iter().flat_map(|s| s.phases.keys().cloned()))
        .collect();
    let mut w = csv::Writer::from_writer(out);
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
        "node",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    header.extend(phases.iter().map(|p| format!("phase_{p}_s")));
    w.write_record(&header)?;
    for r in &set.runs {
        let nodes = match &r.rank_nodes {
            Some(nodes) if r.case.nodes > 1 => nodes.join(";"),
            _ => String::new(),
        };
        for s in &r.samples {
            let per_rank: Vec<String> =
                s.per_rank_execute_s.iter().map(|x| x.to_string()).collect();
            let text = |t: &str| crate::model::text::csv_cell(t).into_owned();
            let mut rec = vec![
                text(&r.case_id),
                text(&r.stack),
                r.status.to_string(),
                s.round.to_string(),
                text(&s.phase),
                s.is_timed().to_string(),
                s.ok.to_string(),
                cell(s.execute_s),
                cell(s.wall_s),
                cell(s.device_wall_s),
                cell(s.setup_s),
                cell(s.bw_execute_mb_s),
                per_rank.join(";"),
                nodes.clone(),
            ];
            rec.extend(phases.iter().map(|p| cell(s.phases.get(p).copied())));
            w.write_record(&rec)?;
        }
    }
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::results::RunStatus;
    use crate::store::results_json::tests::result;

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
        assert_eq!(&rows[1][col("oversubscribed")], "false");
        assert_eq!(&rows[0][col("devices")], "0,1");
        // The same fields as results.json, minus the two maps, in the same order.
        let json_keys: Vec<String> = crate::store::results_json::row(&set.runs[0])
            .as_object()
            .unwrap()
            .keys()
            .filter(|k| !k.ends_with("_means"))
            .cloned()
            .collect();
        assert_eq!(h.iter().collect::<Vec<_>>(), json_keys);
        let samples = samples_csv(&set);
        assert_eq!(samples.lines().count(), 1 + 8);
        assert!(samples
            .lines()
            .nth(1)
            .unwrap()
            .contains(",1,warmup-1,false,true,9,18,"));
    }

    #[test]
    fn samples_name_each_ranks_node_on_several_nodes_only() {
        let mut multi = result(RunStatus::Pass);
        multi.case.p = 4;
        multi.case.nodes = 2;
        multi.case.ranks_per_node = 2;
        multi.rank_nodes = Some(vec!["n1".into(), "n1".into(), "n2".into(), "n2".into()]);
        let single = result(RunStatus::Pass);
        let set = ResultSet {
            runs: vec![multi, single],
            ..ResultSet::default()
        };
        let text = samples_csv(&set);
        let mut rd = csv::Reader::from_reader(text.as_bytes());
        let col = rd.headers().unwrap().iter().position(|x| x == "node");
        let col = col.expect("a node column");
        let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
        assert_eq!(rows.len(), 8);
        assert!(rows[..4].iter().all(|r| &r[col] == "n1;n1;n2;n2"));
        assert!(rows[4..].iter().all(|r| r[col].is_empty()));
    }
}
