//! α–β models over message size and B*: for each (stack, op, variant, P, dtype, core_num,
//! nodes, and the algorithm the runs said ran where they said it) the latency–bandwidth fit of median time against bytes, and over a swept core_num
//! the core count past which bandwidth stops growing. Pure: no files, no formatting.

use std::collections::BTreeMap;

use crate::analysis::run_stats::RunStats;
use crate::analysis::stats::fit::{self, AlphaBeta};
use crate::model::case::{Dtype, Variant};
use crate::model::results::ResultSet;

/// Identity of an α–β fit: one (stack, variant, P) with dtype and core_num kept apart.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct FitKey {
    pub(crate) stack: String,
    /// Fits are per op: one op's sizes never feed another's model.
    pub(crate) op: crate::model::case::Op,
    pub(crate) variant: Variant,
    pub(crate) p: u32,
    pub(crate) dtype: Dtype,
    pub(crate) core_num: u32,
    /// Nodes the ranks spanned (1: intra-node): inter-node sizes never feed a one-node model.
    pub(crate) nodes: u32,
    /// The algorithm the runs' own output said ran (`[stacks.NAME.ran]`), where it is known:
    /// a library that switches algorithm with size (NCCL's tree below, ring above) gets one
    /// model per algorithm, never one line through both.
    pub(crate) algo: Option<String>,
}

impl FitKey {
    /// The series label of the fit's runs (op, variant and, over several nodes, the layout).
    pub(crate) fn series_label(&self) -> String {
        let mut case = crate::model::case::Case::new(self.variant, self.p, 1).with_op(self.op);
        case.nodes = self.nodes;
        let label = case.series_label();
        match &self.algo {
            Some(algo) if !algo.eq_ignore_ascii_case(self.variant.as_str()) => {
                format!("{label} (ran {algo})")
            }
            _ => label,
        }
    }
}

/// One fitted model with the points it was fitted on.
#[derive(Debug, Clone)]
pub struct ModelFit {
    pub(crate) key: FitKey,
    pub(crate) fit: AlphaBeta,
    /// (bytes, median seconds), ascending by bytes.
    pub(crate) points: Vec<(f64, f64)>,
}

/// B* of one (stack, variant, P, dtype) whose core_num was swept.
#[derive(Debug, Clone)]
pub(crate) struct BStar {
    pub(crate) stack: String,
    pub(crate) op: crate::model::case::Op,
    pub(crate) variant: Variant,
    pub(crate) p: u32,
    pub(crate) dtype: Dtype,
    pub(crate) core_num: u32,
    pub(crate) best_bandwidth: f64,
}

pub(crate) fn fits(results: &ResultSet, stats: &BTreeMap<usize, RunStats>) -> Vec<ModelFit> {
    let mut groups: BTreeMap<FitKey, Vec<(f64, f64)>> = BTreeMap::new();
    for s in stats.values() {
        let r = &results.runs[s.index];
        let key = FitKey {
            stack: r.stack.clone(),
            op: r.case.op,
            variant: r.case.variant,
            p: r.case.p,
            dtype: r.case.dtype,
            core_num: r.case.core_num,
            nodes: r.case.nodes.max(1),
            algo: r.ran.as_ref().and_then(|x| x.algo.clone()),
        };
        groups
            .entry(key)
            .or_default()
            .push((s.n_bytes as f64, s.summary.median));
    }
    groups
        .into_iter()
        .filter_map(|(key, mut points)| {
            points.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
            let fit = fit::fit_alpha_beta(&points)?;
            Some(ModelFit { key, fit, points })
        })
        .collect()
}

pub(crate) fn b_stars(fits: &[ModelFit]) -> Vec<BStar> {
    type Group = (String, crate::model::case::Op, Variant, u32, Dtype);
    let mut groups: BTreeMap<Group, Vec<(u32, f64)>> = BTreeMap::new();
    for f in fits {
        if let Some(b) = f.fit.bandwidth_bytes_per_s {
            let k = &f.key;
            groups
                .entry((k.stack.clone(), k.op, k.variant, k.p, k.dtype))
                .or_default()
                .push((k.core_num, b));
        }
    }
    groups
        .into_iter()
        .filter_map(|((stack, op, variant, p, dtype), pts)| {
            let core_num = fit::b_star(&pts)?;
            let best = pts.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
            Some(BStar {
                stack,
                op,
                variant,
                p,
                dtype,
                core_num,
                best_bandwidth: best,
            })
        })
        .collect()
}
