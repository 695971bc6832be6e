//! Input formulas, the expected allreduce output, per-dtype tolerances and range checks.
//!
//! Pure arithmetic shared by the `host` stack, the MPI helper's documentation and validation.
//! Formulas (seed names kept):
//! - `rank_linear_v1`: rank r, element i holds `i + 100*r` (the seed's formula).
//! - `rank_mod16_v1`: rank r, element i holds `(i mod 16) + r` — campaign's formula that stays
//!   inside fp16's range (and exact in fp16) for every shipped size and P ≤ 64.
//!
//! Golden `allreduce_sum_v1`: `out[i] = Σ_r input(r, i)`.
//!
//! The other ops, with `c = count / p` (the block size; see `op.rs` for what `count` means) and
//! `x(r, i)` the input formula above at rank r, element i of r's input buffer:
//! - `allgather_concat_v1`: rank r's input is `x(r, 0..c)`; every rank's output is the
//!   concatenation, `out[k] = x(k div c, k mod c)`.
//! - `reduce_scatter_sum_v1`: rank r's output is its chunk of the sum,
//!   `out_r[j] = Σ_q x(q, r·c + j)`.
//! - `broadcast_copy_v1`: every rank's output is the root's input, `out[i] = x(root, i)`.
//! - `reduce_sum_v1`: the root's output is the sum `out[i] = Σ_q x(q, i)`; other ranks' outputs
//!   are not defined and not checked.
//! - `alltoall_transpose_v1`: block b of rank r's input goes to rank b;
//!   `out_r[k] = x(k div c, r·c + k mod c)`.
//!
//! Each differs from the allreduce golden wherever P ≥ 2 (rank_linear_v1), so a stack that ran an
//! allreduce (or any other op) where another was asked fails the check. Sums can exceed a
//! dtype; copies only reach the largest input, `x(P−1, input_len−1)`.

use crate::model::case::{Case, Dtype, Op};

/// Largest finite fp16 value.
pub(crate) const FP16_MAX: f64 = 65504.0;
/// Largest finite bf16 value.
pub(crate) const BF16_MAX: f64 = 3.389_531_389_251_535e38;

/// The value rank `rank` holds at element `i` under `formula`.
pub(crate) fn input_value(formula: &str, rank: u32, i: u64) -> f64 {
    match formula {
        "rank_mod16_v1" => (i % 16) as f64 + f64::from(rank),
        // rank_linear_v1 and anything unknown (validation rejects unknown names up front).
        _ => i as f64 + 100.0 * f64::from(rank),
    }
}

/// The expected allreduce-sum output at element `i` for `p` ranks.
pub(crate) fn expected_value(formula: &str, p: u32, i: u64) -> f64 {
    let pf = f64::from(p);
    let rank_sum = pf * (pf - 1.0) / 2.0;
    match formula {
        "rank_mod16_v1" => pf * (i % 16) as f64 + rank_sum,
        _ => pf * i as f64 + 100.0 * rank_sum,
    }
}

/// The golden name of `op` (the case's `golden` field).
pub(crate) fn golden_name(op: Op) -> &'static str {
    match op {
        Op::Allreduce => "allreduce_sum_v1",
        Op::Allgather => "allgather_concat_v1",
        Op::ReduceScatter => "reduce_scatter_sum_v1",
        Op::Broadcast => "broadcast_copy_v1",
        Op::Reduce => "reduce_sum_v1",
        Op::Alltoall => "alltoall_transpose_v1",
    }
}

/// What one rank's output must hold, for one case: `expected(rank, k)` for `k` in
/// `0..op.output_len(count, p)`. `None` when the op leaves that rank's output undefined (reduce
/// on a non-root rank).
#[derive(Debug, Clone)]
pub(crate) struct Golden {
    op: Op,
    formula: String,
    p: u32,
    root: u32,
    block: u64,
}

impl Golden {
    pub(crate) fn of(case: &Case) -> Golden {
        Golden {
            op: case.op,
            formula: case.input_formula.clone(),
            p: case.p,
            root: case.root.unwrap_or(0),
            block: case.count / u64::from(case.p.max(1)),
        }
    }

    /// Is `rank`'s output checked at all?
    pub(crate) fn checks(&self, rank: u32) -> bool {
        self.op != Op::Reduce || rank == self.root
    }

    /// The expected value of element `k` of `rank`'s output (see the module text).
    pub(crate) fn expected(&self, rank: u32, k: u64) -> f64 {
        let f = self.formula.as_str();
        let c = self.block.max(1);
        match self.op {
            Op::Allreduce | Op::Reduce => expected_value(f, self.p, k),
            Op::ReduceScatter => expected_value(f, self.p, u64::from(rank) * c + k),
            Op::Broadcast => input_value(f, self.root, k),
            Op::Allgather => input_value(f, (k / c) as u32, k % c),
            Op::Alltoall => input_value(f, (k / c) as u32, u64::from(rank) * c + k % c),
        }
    }
}

/// The largest expected output value of a case (for allreduce the seed's
/// `P*(count-1) + 50*P*(P-1)`; for the copying ops the largest input).
pub(crate) fn max_expected(case: &Case) -> f64 {
    let last = case.count.saturating_sub(1);
    let i = match case.input_formula.as_str() {
        "rank_mod16_v1" => last.min(15),
        _ => last,
    };
    if case.op.reduces() {
        return expected_value(&case.input_formula, case.p, i);
    }
    let last_in = case.op.input_len(case.count, case.p).saturating_sub(1);
    let j = match case.input_formula.as_str() {
        "rank_mod16_v1" => last_in.min(15),
        _ => last_in,
    };
    input_value(&case.input_formula, case.p.saturating_sub(1), j)
}

/// Absolute and relative tolerance per dtype: pass when `|a - e| <= atol + rtol * |e|`.
pub(crate) fn tolerance(dtype: Dtype) -> (f64, f64) {
    match dtype {
        Dtype::Fp32 => (1e-3, 1e-3),
        Dtype::Fp16 => (2e-2, 2e-2),
        // bf16 keeps 8 significant bits: each stored partial sum may round by 2^-9 relative.
        Dtype::Bf16 => (5e-2, 5e-2),
        Dtype::Int32 => (0.0, 0.0),
    }
}

/// Does `actual` match `expected` within the dtype's tolerance?
pub(crate) fn matches(actual: f64, expected: f64, dtype: Dtype) -> bool {
    let (atol, rtol) = tolerance(dtype);
    (actual - expected).abs() <= atol + rtol * expected.abs()
}

/// A message when the case's golden values do not fit its dtype, naming the largest value and
/// the in-range formula to use instead.
pub(crate) fn range_problem(case: &Case) -> Option<String> {
    let max = max_expected(case);
    let limit = match case.dtype {
        Dtype::Fp16 => FP16_MAX,
        Dtype::Bf16 => BF16_MAX,
        Dtype::Int32 => f64::from(i32::MAX),
        Dtype::Fp32 => f64::from(f32::MAX),
    };
    if max <= limit {
        return None;
    }
    Some(format!(
        "{}: the largest expected value {} exceeds {}'s maximum {}; use input_formula = \"rank_mod16_v1\" (stays in range for every size)",
        case.case_id(),
        max,
        case.dtype,
        limit
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::case::Variant;

    #[test]
    fn seed_formula_and_golden() {
        assert_eq!(input_value("rank_linear_v1", 3, 7), 307.0);
        // P=4: out[i] = 4*i + 100*4*3/2 = 4i + 600
        assert_eq!(expected_value("rank_linear_v1", 4, 10), 640.0);
        let sum: f64 = (0..4).map(|r| input_value("rank_linear_v1", r, 10)).sum();
        assert_eq!(sum, 640.0);
    }

    #[test]
    fn mod16_formula_sums_to_its_golden() {
        for p in [2u32, 3, 8] {
            for i in [0u64, 15, 16, 1_000_003] {
                let sum: f64 = (0..p).map(|r| input_value("rank_mod16_v1", r, i)).sum();
                assert_eq!(sum, expected_value("rank_mod16_v1", p, i));
            }
        }
    }

    #[test]
    fn fp16_overflow_is_flagged_with_largest_value() {
        let mut c = Case::new(Variant::Mesh, 8, 1_048_576);
        c.dtype = Dtype::Fp16;
        // 8 * 1048575 + 50*8*7 = 8391400
        let msg = range_problem(&c).expect("must overflow");
        assert!(msg.contains("8391400"), "{msg}");
        assert!(msg.contains("rank_mod16_v1"), "{msg}");
        c.input_formula = "rank_mod16_v1".into();
        assert_eq!(range_problem(&c), None);
        let mut small = Case::new(Variant::Mesh, 2, 256);
        small.dtype = Dtype::Fp16;
        assert_eq!(range_problem(&small), None);
    }

    /// Each op's golden, computed by hand for P = 2, count = 4 (block 2), rank_linear_v1:
    /// x(0, i) = i, x(1, i) = 100 + i.
    #[test]
    fn every_op_golden_by_hand() {
        let g = |op: Op, root: Option<u32>| {
            let mut c = Case::new(Variant::Ring, 2, 4).with_op(op);
            c.root = root.or(c.root);
            let g = Golden::of(&c);
            (0..2u32)
                .map(|r| (0..op.output_len(4, 2)).map(|k| g.expected(r, k)).collect())
                .collect::<Vec<Vec<f64>>>()
        };
        assert_eq!(
            g(Op::Allreduce, None),
            vec![vec![100.0, 102.0, 104.0, 106.0]; 2]
        );
        assert_eq!(
            g(Op::Allgather, None),
            vec![vec![0.0, 1.0, 100.0, 101.0]; 2]
        );
        assert_eq!(
            g(Op::ReduceScatter, None),
            vec![vec![100.0, 102.0], vec![104.0, 106.0]]
        );
        assert_eq!(
            g(Op::Broadcast, Some(1)),
            vec![vec![100.0, 101.0, 102.0, 103.0]; 2]
        );
        assert_eq!(
            g(Op::Alltoall, None),
            vec![vec![0.0, 1.0, 100.0, 101.0], vec![2.0, 3.0, 102.0, 103.0]]
        );
        let reduce = Golden::of(&Case::new(Variant::Ring, 2, 4).with_op(Op::Reduce));
        assert!(reduce.checks(0) && !reduce.checks(1));
    }

    /// A right allreduce output (in the op's result buffer) is a wrong output of every other op
    /// but reduce, whose root result *is* the allreduce result; and a reduce (or allreduce)
    /// output fails allgather, broadcast and alltoall.
    #[test]
    fn an_allreduce_output_fails_every_other_op() {
        let ar = Golden::of(&Case::new(Variant::Ring, 4, 64));
        for op in [
            Op::Allgather,
            Op::ReduceScatter,
            Op::Broadcast,
            Op::Alltoall,
        ] {
            let g = Golden::of(&Case::new(Variant::Ring, 4, 64).with_op(op));
            let rank = 3;
            let same = (0..op.output_len(64, 4))
                .all(|k| matches(ar.expected(rank, k), g.expected(rank, k), Dtype::Fp32));
            assert!(!same, "{op}: an allreduce output would pass");
        }
    }

    #[test]
    fn copies_overflow_only_past_their_largest_input() {
        // fp16 broadcast of 60000 elements: the largest value is 59999 + 100 < 65504, while the
        // allreduce of the same case (2 * 59999 + 100) overflows.
        let mut c = Case::new(Variant::Ring, 2, 60_000);
        c.dtype = Dtype::Fp16;
        assert!(range_problem(&c).is_some());
        assert_eq!(range_problem(&c.clone().with_op(Op::Broadcast)), None);
        assert!(range_problem(&c.clone().with_op(Op::Reduce)).is_some());
        assert!(range_problem(&c.with_op(Op::ReduceScatter)).is_some());
    }

    #[test]
    fn tolerance_is_abs_plus_rel() {
        assert!(matches(1000.5, 1000.0, Dtype::Fp32));
        assert!(!matches(1002.5, 1000.0, Dtype::Fp32));
        assert!(!matches(1.0, 0.0, Dtype::Int32));
    }
}
