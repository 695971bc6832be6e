//! Where an axis is ticked and how a tick reads.
//!
//! Log axes are linear axes over log values (see `common`), so plotters would tick them at
//! round *log* values ("25.1 µs", "39.8 µs"). Here ticks are chosen as benchmark readers expect
//! them: times at 1-2-5 per decade (1 µs, 2 µs, 5 µs, 10 µs …, as hyperfine and most plotting
//! tools print them), message sizes at powers of two in binary units (1 KiB, 4 KiB, 16 KiB …,
//! the sizes nccl-tests and OSU sweep). When the data span too many decades for that, ticks thin
//! out (only 1×10^k, then every other decade …), never to more than [`MAX_TICKS`] labels. Pure
//! functions; nothing here draws.

use crate::model::units::round_sig;

/// The most labelled ticks on one axis (a 760 px panel fits about ten labels side by side).
pub(crate) const MAX_TICKS: usize = 10;

/// Relative slack when deciding whether a tick lies inside a range (log/exp round-trips).
const SLACK: f64 = 1e-9;

/// 1-2-5 values per decade in `[lo, hi]` (values, not logs; both > 0), thinned until at most
/// `max` remain: first {1, 2, 5}×10^k, then 10^k only, then every 2nd, 5th, 10th … decade.
pub(crate) fn decades_125(lo: f64, hi: f64, max: usize) -> Vec<f64> {
    if !(lo > 0.0 && hi >= lo && hi.is_finite()) {
        return Vec::new();
    }
    let inside = |v: f64| v >= lo * (1.0 - SLACK) && v <= hi * (1.0 + SLACK);
    let k0 = lo.log10().floor() as i32;
    let k1 = hi.log10().ceil() as i32;
    let dense: Vec<f64> = (k0..=k1)
        .flat_map(|k| [1.0, 2.0, 5.0].map(|m| m * 10f64.powi(k)))
        .filter(|v| inside(*v))
        .collect();
    if dense.len() <= max {
        return dense;
    }
    for step in one_two_five() {
        let thin: Vec<f64> = (k0..=k1)
            .filter(|k| k.rem_euclid(step) == 0)
            .map(|k| 10f64.powi(k))
            .filter(|v| inside(*v))
            .collect();
        if thin.len() <= max {
            return thin;
        }
    }
    Vec::new()
}

/// 10^k with k the decade of `v` (> 0), robust to log10 rounding at exact powers of ten.
fn decade_base(v: f64) -> f64 {
    let mut k = v.log10().floor() as i32;
    if 10f64.powi(k + 1) <= v * (1.0 + SLACK) {
        k += 1;
    } else if 10f64.powi(k) > v * (1.0 + SLACK) {
        k -= 1;
    }
    10f64.powi(k)
}

/// The 1-2-5 value at or below `v` (> 0).
pub(crate) fn floor_125(v: f64) -> f64 {
    let base = decade_base(v);
    [5.0, 2.0, 1.0]
        .iter()
        .map(|m| m * base)
        .find(|t| *t <= v * (1.0 + SLACK))
        .unwrap_or(base)
}

/// The 1-2-5 value at or above `v` (> 0).
pub(crate) fn ceil_125(v: f64) -> f64 {
    let base = decade_base(v);
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * base)
        .find(|t| *t >= v * (1.0 - SLACK))
        .unwrap_or(10.0 * base)
}

/// Whole exponents `e` of 2 in `[lo, hi]` (log2 values), thinned until at most `max` remain:
/// every power, then every 2nd, 5th, 10th … exponent counted from 2^0, so 1 KiB and 1 MiB stay
/// ticks whenever any tick of their stride falls near them.
pub(crate) fn powers_of_two(lo: f64, hi: f64, max: usize) -> Vec<i32> {
    if !(lo.is_finite() && hi.is_finite() && hi >= lo) {
        return Vec::new();
    }
    let e0 = (lo - SLACK).ceil() as i32;
    let e1 = (hi + SLACK).floor() as i32;
    for step in one_two_five() {
        let ticks: Vec<i32> = (e0..=e1).filter(|e| e.rem_euclid(step) == 0).collect();
        if ticks.len() <= max {
            return ticks;
        }
    }
    Vec::new()
}

/// Strides 1, 2, 5, 10, 20, 50 … (bounded: an f64 spans about 2100 powers of two).
fn one_two_five() -> impl Iterator<Item = i32> {
    [1, 10, 100, 1000]
        .into_iter()
        .flat_map(|d| [d, 2 * d, 5 * d])
}

/// Every `step`-th of `n` category indices, with `step` from 1, 2, 5, 10 … so that at most
/// `max` remain (index 0, the first item, is always ticked).
pub(crate) fn every_nth(n: usize, max: usize) -> Vec<usize> {
    let step = one_two_five()
        .map(|s| s as usize)
        .find(|s| n.div_ceil(*s) <= max.max(1))
        .unwrap_or(n.max(1));
    (0..n).step_by(step).collect()
}

/// A time tick in the unit its size calls for, at most three significant digits, no trailing
/// zeros: `1 µs`, `20 µs`, `500 µs`, `1 ms`, `1.2 s`, `0`.
pub(crate) fn seconds_label(s: f64) -> String {
    if !s.is_finite() {
        return String::new();
    }
    let a = round_sig(s.abs(), 3);
    if a == 0.0 {
        return "0".into();
    }
    let (scale, unit) = if a < 1e-6 {
        (1e9, "ns")
    } else if a < 1e-3 {
        (1e6, "µs")
    } else if a < 1.0 {
        (1e3, "ms")
    } else {
        (1.0, "s")
    };
    format!("{} {unit}", trimmed(round_sig(s * scale, 3)))
}

/// A byte tick at a power of two in binary units: `512 B`, `1 KiB`, `4 MiB`.
pub(crate) fn bytes_label(exponent: i32) -> String {
    if !(0..64).contains(&exponent) {
        return String::new();
    }
    crate::model::units::format_bytes(1u64 << exponent)
}

/// A number with at most two decimals and no trailing zeros (`2`, `2.5`, `0.25`).
fn trimmed(v: f64) -> String {
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(ticks: &[f64]) -> Vec<String> {
        ticks.iter().map(|t| seconds_label(*t)).collect()
    }

    #[test]
    fn times_are_ticked_at_one_two_five_across_decades() {
        let t = decades_125(8.9e-6, 2.8e-5, MAX_TICKS);
        assert_eq!(labels(&t), ["10 µs", "20 µs"]);
        let t = decades_125(0.9e-6, 1.2e-3, MAX_TICKS);
        assert_eq!(
            labels(&t),
            [
                "1 µs", "2 µs", "5 µs", "10 µs", "20 µs", "50 µs", "100 µs", "200 µs", "500 µs",
                "1 ms"
            ]
        );
        // One more decade would make 13 ticks: only the decades stay.
        let t = decades_125(0.9e-6, 12e-3, MAX_TICKS);
        assert_eq!(labels(&t), ["1 µs", "10 µs", "100 µs", "1 ms", "10 ms"]);
        // Fourteen decades: every other decade.
        let t = decades_125(1e-9, 1e4, MAX_TICKS);
        assert_eq!(
            labels(&t),
            ["10 ns", "1 µs", "100 µs", "10 ms", "1 s", "100 s", "10000 s"]
        );
        assert!(decades_125(0.0, 1.0, MAX_TICKS).is_empty());
        assert!(decades_125(3.1e-6, 3.9e-6, MAX_TICKS).is_empty());
    }

    #[test]
    fn a_range_between_ticks_snaps_out_to_the_nearest_ones() {
        assert_eq!(seconds_label(floor_125(3.1e-6)), "2 µs");
        assert_eq!(seconds_label(ceil_125(3.9e-6)), "5 µs");
        assert_eq!(seconds_label(ceil_125(6e-6)), "10 µs");
        assert_eq!(seconds_label(floor_125(1e-3)), "1 ms");
        assert_eq!(seconds_label(ceil_125(1e-3)), "1 ms");
        assert_eq!(seconds_label(floor_125(0.9e-3)), "500 µs");
    }

    #[test]
    fn time_labels_carry_units_and_no_trailing_zeros() {
        assert_eq!(seconds_label(1e-6), "1 µs");
        assert_eq!(seconds_label(2.0000000001e-5), "20 µs");
        assert_eq!(seconds_label(999.999e-6), "1 ms");
        assert_eq!(seconds_label(5e-10), "0.5 ns");
        assert_eq!(seconds_label(0.2), "200 ms");
        assert_eq!(seconds_label(1.2), "1.2 s");
        assert_eq!(seconds_label(0.0), "0");
        assert_eq!(seconds_label(2.5e-6), "2.5 µs");
        assert_eq!(seconds_label(f64::NAN), "");
    }

    #[test]
    fn sizes_are_ticked_at_powers_of_two_in_binary_units() {
        let show = |lo: f64, hi: f64| -> Vec<String> {
            powers_of_two(lo, hi, MAX_TICKS)
                .into_iter()
                .map(bytes_label)
                .collect()
        };
        // 1 KiB .. 4 MiB (2^10 .. 2^22, padded): every 2nd power, 1 KiB and 1 MiB among them.
        assert_eq!(
            show(9.3, 22.7),
            ["1 KiB", "4 KiB", "16 KiB", "64 KiB", "256 KiB", "1 MiB", "4 MiB"]
        );
        assert_eq!(
            show(7.9, 12.1),
            ["256 B", "512 B", "1 KiB", "2 KiB", "4 KiB"]
        );
        // 1 B .. 1 GiB: every 5th power.
        assert_eq!(
            show(0.0, 30.0),
            ["1 B", "32 B", "1 KiB", "32 KiB", "1 MiB", "32 MiB", "1 GiB"]
        );
        assert!(show(10.2, 10.8).is_empty());
        assert_eq!(bytes_label(-1), "");
    }

    #[test]
    fn categories_thin_out_to_at_most_the_maximum() {
        assert_eq!(every_nth(4, MAX_TICKS), [0, 1, 2, 3]);
        assert_eq!(every_nth(43, MAX_TICKS), [0, 5, 10, 15, 20, 25, 30, 35, 40]);
        assert_eq!(every_nth(11, MAX_TICKS), [0, 2, 4, 6, 8, 10]);
        assert!(every_nth(0, MAX_TICKS).is_empty());
    }
}
