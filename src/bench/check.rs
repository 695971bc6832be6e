//! The golden check of one rank's output after a checked round, and the fault injection that
//! proves the check works.
//!
//! Owns comparing every element against `golden::expected_value` with the dtype's tolerance and
//! counting mismatches (like nccl-tests' `#wrong`). It runs outside the timed region. It must not
//! know about rounds, threads or output lines.

use super::element::Element;
use crate::model::case::golden;

/// Poison written to outputs before a round: every op's golden is ≥ 0 for every input formula
/// (inputs are ≥ 0), and −1 is exact in every dtype, so an element the collective fails to
/// write is always caught.
pub(crate) const POISON: f64 = -1.0;

/// The first wrong element a rank found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Wrong {
    pub(crate) index: u64,
    pub(crate) value: f64,
    pub(crate) expected: f64,
}

/// What one rank's check found.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct RankCheck {
    /// How many elements are outside tolerance.
    pub(crate) wrong: u64,
    /// The lowest-index wrong element.
    pub(crate) first: Option<Wrong>,
}

/// Compare `out` (rank `rank`'s whole result) against the case's golden; a rank whose output
/// the op leaves undefined (reduce, not the root) passes unchecked.
pub(crate) fn check<T: Element>(out: &[T], golden: &golden::Golden, rank: u32) -> RankCheck {
    let mut result = RankCheck::default();
    if !golden.checks(rank) {
        return result;
    }
    for (i, x) in out.iter().enumerate() {
        let index = i as u64;
        let expected = golden.expected(rank, index);
        let value = x.to_f64();
        if !golden::matches(value, expected, T::DTYPE) {
            result.wrong += 1;
            if result.first.is_none() {
                result.first = Some(Wrong {
                    index,
                    value,
                    expected,
                });
            }
        }
    }
    result
}

/// The element fault injection corrupts: the middle one (deterministic, and inside the vector
/// for every count ≥ 1).
pub(crate) fn fault_index(count: usize) -> usize {
    count / 2
}

/// Corrupt `out[fault_index]` to a value that is wrong at any magnitude in every dtype: the
/// negated value minus 1000 (the golden is always positive).
pub(crate) fn corrupt<T: Element>(out: &mut [T]) {
    let i = fault_index(out.len());
    if let Some(x) = out.get_mut(i) {
        *x = T::from_f64(-(x.to_f64() + 1000.0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::case::{Case, Variant};
    use half::{bf16, f16};

    /// `check` against the allreduce golden of `p` ranks and `formula` (rank 0).
    fn check(out: &[impl Element], formula: &str, p: u32) -> RankCheck {
        let mut case = Case::new(Variant::Mesh, p, out.len().max(1) as u64);
        case.input_formula = formula.into();
        super::check(out, &golden::Golden::of(&case), 0)
    }

    fn golden_vec<T: Element>(formula: &str, p: u32, n: usize) -> Vec<T> {
        (0..n as u64)
            .map(|i| T::from_f64(golden::expected_value(formula, p, i)))
            .collect()
    }

    #[test]
    fn a_correct_vector_passes() {
        let out: Vec<f32> = golden_vec("rank_linear_v1", 4, 100);
        assert_eq!(check(&out, "rank_linear_v1", 4), RankCheck::default());
    }

    #[test]
    fn counts_every_wrong_element_and_reports_the_first() {
        let mut out: Vec<i32> = golden_vec("rank_linear_v1", 2, 10);
        out[3] = 7;
        out[8] = 9;
        let c = check(&out, "rank_linear_v1", 2);
        assert_eq!(c.wrong, 2);
        assert_eq!(
            c.first,
            Some(Wrong {
                index: 3,
                value: 7.0,
                expected: 106.0
            })
        );
    }

    #[test]
    fn poison_never_passes() {
        let out = vec![f16::from_f64(POISON); 32];
        assert_eq!(check(&out, "rank_mod16_v1", 2).wrong, 32);
    }

    #[test]
    fn corruption_is_caught_in_every_dtype_even_at_large_values() {
        fn caught<T: Element>(formula: &str, p: u32, n: usize) {
            let mut out: Vec<T> = golden_vec(formula, p, n);
            assert_eq!(check(&out, formula, p).wrong, 0, "{:?}", T::DTYPE);
            corrupt(&mut out);
            let c = check(&out, formula, p);
            assert_eq!(c.wrong, 1, "{:?}", T::DTYPE);
            assert_eq!(c.first.map(|w| w.index), Some(fault_index(n) as u64));
        }
        caught::<f32>("rank_linear_v1", 8, 1 << 20);
        caught::<bf16>("rank_linear_v1", 8, 1 << 20);
        caught::<f16>("rank_mod16_v1", 8, 33);
        caught::<i32>("rank_linear_v1", 3, 1);
    }
}
