//! Input formulas, the expected allreduce output, per-dtype tolerances and range checks.
//!
//! Pure arithmetic shared by the `host` stack, the MPI helper's documentation and validation.
//! Formulas (seed names kept):
//! - `rank_linear_v1`: rank r, element i holds `i + 100*r` (the seed's formula).
//! - `rank_mod16_v1`: rank r, element i holds `(i mod 16) + r` — campaign's formula that stays
//!   inside fp16's range (and exact in fp16) for every shipped size and P ≤ 64.
//!
//! Golden `allreduce_sum_v1`: `out[i] = Σ_r input(r, i)`.

use crate::model::case::{Case, Dtype};

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

/// The largest expected output value of a case (the seed's `P*(count-1) + 50*P*(P-1)`).
pub(crate) fn max_expected(case: &Case) -> f64 {
    let last = case.count.saturating_sub(1);
    let i = match case.input_formula.as_str() {
        "rank_mod16_v1" => last.min(15),
        _ => last,
    };
    expected_value(&case.input_formula, case.p, i)
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

    #[test]
    fn tolerance_is_abs_plus_rel() {
        assert!(matches(1000.5, 1000.0, Dtype::Fp32));
        assert!(!matches(1002.5, 1000.0, Dtype::Fp32));
        assert!(!matches(1.0, 0.0, Dtype::Int32));
    }
}
