//! One row of the results files: the single `Serialize` shape behind `results.json`'s `runs`
//! and every `results.csv` line, so the two can never disagree.
//!
//! Owns the row statistics (timed rounds of passing runs only; sample stdev n−1; `null`, never
//! 0.0, when a run did not pass or a value is absent; bandwidth from the median, like the
//! report) and the field order: the seed's fields in the seed's order (seed-formats.md), then
//! `status` and `reason`, then campaign's own. Pure: no I/O.

use std::collections::BTreeMap;

use itertools::{Itertools, MinMaxResult};
use serde::Serialize;

use crate::analysis::stats;
use crate::model::results::{RunResult, RunStatus, Sample};

/// A run as the results files show it. Field order is the file order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Row {
    pub(crate) case_id: String,
    pub(crate) stack: String,
    pub(crate) equivalence_hash: String,
    pub(crate) variant: String,
    pub(crate) p: u32,
    pub(crate) count: u64,
    pub(crate) dtype: String,
    pub(crate) platform: String,
    /// `pass`, `fail` (a golden check ran and did not match) or `not_checked`.
    pub(crate) correctness: &'static str,
    pub(crate) execute_s_mean: Option<f64>,
    pub(crate) execute_s_stdev: Option<f64>,
    pub(crate) execute_s_median: Option<f64>,
    pub(crate) device_wall_s_mean: Option<f64>,
    pub(crate) device_wall_s_median: Option<f64>,
    pub(crate) setup_s: Option<f64>,
    /// `n_bytes / execute_s_median / 1e6`.
    pub(crate) bw_execute_mb_s: Option<f64>,
    pub(crate) wall_s_mean: Option<f64>,
    pub(crate) wall_s_stdev: Option<f64>,
    pub(crate) phase_means: BTreeMap<String, f64>,
    pub(crate) compile_profile_means: BTreeMap<String, f64>,
    pub(crate) n_warmup: usize,
    pub(crate) n_timed: usize,
    pub(crate) artifact_bundle: String,
    pub(crate) execute_spread_ratio: Option<f64>,
    pub(crate) status: RunStatus,
    pub(crate) reason: Option<String>,
    /// What the run received: devices, or the CPUs of a CPU run.
    pub(crate) devices: Vec<u32>,
    /// How many CPUs a CPU run received (`null` for device runs).
    pub(crate) cpus: Option<usize>,
    /// More ranks than CPUs received (always present).
    pub(crate) oversubscribed: bool,
    pub(crate) n_bytes: u64,
    /// Which repeat of its (case, stack) this run is, 1-based (`[run] repeats`).
    pub(crate) repeat: u32,
    pub(crate) attempt: u32,
    pub(crate) timing_source: Option<String>,
    /// Share of the run's time it was stalled for a CPU held by others (`null`: not measured).
    pub(crate) cpu_contention: Option<f64>,
    /// Nodes the run spanned (1: intra-node) and ranks on each: a multi-node case is its own
    /// case (`_n<nodes>` in its id), never pooled with a single-node one.
    pub(crate) nodes: u32,
    pub(crate) ranks_per_node: u32,
    /// The collective (`allreduce` for every seed case).
    pub(crate) op: &'static str,
    /// What the bandwidth columns count: `n_bytes`, described for this op.
    pub(crate) bytes_counted: &'static str,
    /// `n_bytes / execute_s_median` in GB/s (1e9), and × the op's nccl-tests factor.
    pub(crate) algbw_gb_s: Option<f64>,
    pub(crate) busbw_gb_s: Option<f64>,
    /// The nodes the run ran on, in rank order of first appearance (from its ranks' records on
    /// several nodes, else from the nodes whose hardware the job recorded); empty for a local
    /// run. `results.csv` joins them with `,`.
    pub(crate) node_list: Vec<String>,
    /// Each node's hardware fingerprint (`model::nodes::NodeHardware::fingerprint`), in
    /// `node_list`'s order; empty where a node's hardware was not recorded.
    pub(crate) node_fingerprints: Vec<String>,
    /// What the run's own output said ran (`[stacks.NAME.ran]`): the algorithm, protocol and
    /// channels (`null` where the stack does not say), and the pin it was asked for.
    pub(crate) algo_ran: Option<String>,
    pub(crate) proto: Option<String>,
    pub(crate) channels: Option<String>,
    pub(crate) algo_pinned: Option<String>,
    /// The component that served the op, where the stack's library logs it (`ran.component`:
    /// Open MPI's coll component, e.g. `tuned`).
    pub(crate) component: Option<String>,
    /// Whether the run's pin took effect: `false` for a run that ran another algorithm (or
    /// under another component) than it was pinned to — "pin not honoured", a failed run kept
    /// apart from ordinary failures; `true` when it did; `null` where nothing was pinned.
    pub(crate) pin_honoured: Option<bool>,
}

/// The nodes of a run in rank order of first appearance, and each one's hardware fingerprint.
fn nodes_of(r: &RunResult) -> (Vec<String>, Vec<String>) {
    let mut nodes: Vec<String> = Vec::new();
    let named = (r.rank_nodes.iter().flatten()).chain(r.node_hardware.iter().map(|h| &h.node));
    for n in named {
        if !nodes.contains(n) {
            nodes.push(n.clone());
        }
    }
    let fingerprints = (nodes.iter())
        .map(|n| {
            (r.node_hardware.iter())
                .find(|h| &h.node == n)
                .map(|h| h.fingerprint.clone())
                .unwrap_or_default()
        })
        .collect();
    (nodes, fingerprints)
}

fn means(
    samples: &[&Sample],
    get: impl Fn(&Sample) -> &BTreeMap<String, f64>,
) -> BTreeMap<String, f64> {
    // One pass over the samples, each name's values kept in sample order (the mean of the same
    // values in the same order as before): linear in the entries, where a look-up of every
    // name in every sample took samples × names (160,000 phase names took minutes).
    let mut values: BTreeMap<&String, Vec<f64>> = BTreeMap::new();
    for s in samples {
        for (n, v) in get(s) {
            values.entry(n).or_default().push(*v);
        }
    }
    values
        .into_iter()
        .filter_map(|(n, xs)| stats::mean(&xs).map(|m| (n.clone(), m)))
        .collect()
}

fn spread(exec: &[f64]) -> Option<f64> {
    match exec.iter().copied().minmax_by(f64::total_cmp) {
        MinMaxResult::OneElement(x) => (x > 0.0).then_some(1.0),
        MinMaxResult::MinMax(lo, hi) => (lo > 0.0).then(|| hi / lo),
        MinMaxResult::NoElements => None,
    }
}

impl Row {
    /// The row of one run.
    pub(crate) fn of(r: &RunResult) -> Row {
        let c = &r.case;
        let n_timed = r.samples.iter().filter(|s| s.is_timed()).count();
        let (node_list, node_fingerprints) = nodes_of(r);
        let mut row = Row {
            case_id: r.base_case_id().to_string(),
            stack: r.stack.clone(),
            equivalence_hash: c.equivalence_hash(),
            variant: c.variant.to_string(),
            p: c.p,
            count: c.count,
            dtype: c.dtype.to_string(),
            platform: c.platform.to_string(),
            correctness: r.correctness(),
            execute_s_mean: None,
            execute_s_stdev: None,
            execute_s_median: None,
            device_wall_s_mean: None,
            device_wall_s_median: None,
            setup_s: None,
            bw_execute_mb_s: None,
            wall_s_mean: None,
            wall_s_stdev: None,
            phase_means: BTreeMap::new(),
            compile_profile_means: BTreeMap::new(),
            n_warmup: r.samples.len() - n_timed,
            n_timed,
            artifact_bundle: r.bundle.to_string_lossy().into_owned(),
            execute_spread_ratio: None,
            status: r.status,
            reason: r.error.clone(),
            devices: r.granted().to_vec(),
            cpus: r.cpus.as_ref().map(Vec::len),
            oversubscribed: r.oversubscribed(),
            n_bytes: c.n_bytes(),
            repeat: r.repeat(),
            attempt: r.attempt,
            timing_source: r.timing_source.clone(),
            cpu_contention: r.cpu_contention,
            nodes: c.nodes.max(1),
            ranks_per_node: c.ranks_per_node(),
            op: c.op.as_str(),
            bytes_counted: stats::bandwidth::bytes_counted(c.op),
            algbw_gb_s: None,
            busbw_gb_s: None,
            node_list,
            node_fingerprints,
            algo_ran: r.ran.as_ref().and_then(|x| x.algo.clone()),
            proto: r.ran.as_ref().and_then(|x| x.proto.clone()),
            channels: r.ran.as_ref().and_then(|x| x.channels.clone()),
            algo_pinned: r.ran.as_ref().and_then(|x| x.expected.clone()),
            component: r.ran.as_ref().and_then(|x| x.component.clone()),
            pin_honoured: r.pin_honoured(),
        };
        if r.status != RunStatus::Pass {
            return row;
        }
        let timed: Vec<&Sample> = r.timed_ok().collect();
        let exec: Vec<f64> = timed.iter().filter_map(|s| s.execute_s).collect();
        let dev: Vec<f64> = timed.iter().filter_map(|s| s.device_wall_s).collect();
        let wall: Vec<f64> = timed.iter().filter_map(|s| s.wall_s).collect();
        row.execute_s_mean = stats::mean(&exec);
        row.execute_s_stdev = stats::stdev(&exec);
        row.execute_s_median = stats::median(&exec);
        row.device_wall_s_mean = stats::mean(&dev);
        row.device_wall_s_median = stats::median(&dev);
        row.wall_s_mean = stats::mean(&wall);
        row.wall_s_stdev = stats::stdev(&wall);
        row.setup_s = r.samples.iter().find_map(|s| s.setup_s);
        row.bw_execute_mb_s = row
            .execute_s_median
            .filter(|t| *t > 0.0)
            .map(|t| c.n_bytes() as f64 / t / 1e6);
        row.execute_spread_ratio = spread(&exec);
        if let Some(t) = row.execute_s_median {
            row.algbw_gb_s = stats::bandwidth::algbw(c.n_bytes(), t).map(|b| b / 1e9);
            row.busbw_gb_s = stats::bandwidth::busbw(c.op, c.p, c.n_bytes(), t).map(|b| b / 1e9);
        }
        row.phase_means = means(&timed, |s| &s.phases);
        row.compile_profile_means = means(&timed, |s| &s.compile_profile);
        row
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::results_json::tests::result;

    #[test]
    fn bandwidth_comes_from_the_median() {
        let row = Row::of(&result(RunStatus::Pass));
        // timed 1, 2, 4 s: median 2 s; 256 fp32 = 1024 bytes
        assert_eq!(row.execute_s_median, Some(2.0));
        assert_eq!(row.bw_execute_mb_s, Some(1024.0 / 2.0 / 1e6));
    }

    #[test]
    fn a_cpu_run_with_fewer_cpus_than_ranks_is_oversubscribed() {
        let mut r = result(RunStatus::Pass);
        r.case.p = 4;
        r.cpus = Some(vec![0, 1]);
        let row = Row::of(&r);
        assert!(row.oversubscribed);
        assert_eq!(row.cpus, Some(2));
        assert_eq!(row.devices, vec![0, 1], "the CPUs it received");
        r.cpus = Some(vec![0, 1, 2, 3]);
        assert!(!Row::of(&r).oversubscribed);
        r.cpus = None;
        assert!(!Row::of(&r).oversubscribed, "device runs never are");
    }

    #[test]
    fn correctness_fails_only_on_a_golden_mismatch() {
        let mut r = result(RunStatus::Timeout);
        assert_eq!(Row::of(&r).correctness, "not_checked");
        r.status = RunStatus::Fail;
        r.error = Some("exit code 2".into());
        assert_eq!(Row::of(&r).correctness, "not_checked");
        r.error = Some("the stack reported a golden mismatch: rank 1".into());
        assert_eq!(Row::of(&r).correctness, "fail");
    }

    #[test]
    fn a_row_names_its_nodes_in_rank_order_with_their_fingerprints() {
        use crate::model::nodes::NodeHardware;
        let mut r = result(RunStatus::Pass);
        assert!(
            Row::of(&r).node_list.is_empty(),
            "a local run names no node"
        );
        let hw = |node: &str, fingerprint: &str| NodeHardware {
            node: node.into(),
            fingerprint: fingerprint.into(),
            ..NodeHardware::default()
        };
        // One Slurm node: only the job's hardware record names it.
        r.node_hardware = vec![hw("n1", "00aa")];
        let row = Row::of(&r);
        assert_eq!(row.node_list, ["n1"]);
        assert_eq!(row.node_fingerprints, ["00aa"]);
        // Two nodes: rank order wins over the records' order; a node without a record has an
        // empty fingerprint, not another node's.
        r.rank_nodes = Some(vec!["n2".into(), "n2".into(), "n3".into(), "n1".into()]);
        r.node_hardware = vec![hw("n1", "00aa"), hw("n2", "11bb")];
        let row = Row::of(&r);
        assert_eq!(row.node_list, ["n2", "n3", "n1"]);
        assert_eq!(row.node_fingerprints, ["11bb", "", "00aa"]);
        let csv = crate::store::results_csv::results_csv(&crate::model::results::ResultSet {
            runs: vec![r],
            ..Default::default()
        });
        let mut rd = csv::Reader::from_reader(csv.as_bytes());
        let head = rd.headers().unwrap().clone();
        let rec = rd.records().next().unwrap().unwrap();
        let at = |name: &str| rec[head.iter().position(|h| h == name).unwrap()].to_string();
        assert_eq!(at("node_list"), "n2,n3,n1");
        assert_eq!(at("node_fingerprints"), "11bb,,00aa");
    }
}
