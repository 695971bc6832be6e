//! Tukey-fence outliers: flagged for the reader, never dropped from any statistic.
//!
//! Pure function of a slice; the fences use the same type-7 quartiles as the rest of `stats`.

/// Fence multiplier of the inter-quartile range (Tukey's 1.5).
pub(crate) const TUKEY_K: f64 = 1.5;

/// Lower and upper fences `Q1 − 1.5·IQR`, `Q3 + 1.5·IQR`; None for an empty slice.
pub(crate) fn tukey_fences(xs: &[f64]) -> Option<(f64, f64)> {
    let q1 = super::quantile(xs, 0.25)?;
    let q3 = super::quantile(xs, 0.75)?;
    let iqr = q3 - q1;
    Some((q1 - TUKEY_K * iqr, q3 + TUKEY_K * iqr))
}

/// Indices (into `xs`, ascending) of values outside the Tukey fences.
pub(crate) fn tukey_outliers(xs: &[f64]) -> Vec<usize> {
    let Some((lo, hi)) = tukey_fences(xs) else {
        return Vec::new();
    };
    xs.iter()
        .enumerate()
        .filter(|(_, x)| **x < lo || **x > hi)
        .map(|(i, _)| i)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed_fences() {
        // Sorted 1..=8 and 30: Q1 = 3, Q3 = 7 (type 7), IQR 4, fences −3 and 13.
        let xs = [5.0, 1.0, 2.0, 3.0, 4.0, 30.0, 6.0, 7.0, 8.0];
        assert_eq!(tukey_fences(&xs), Some((-3.0, 13.0)));
        assert_eq!(tukey_outliers(&xs), vec![5]);
        assert!(tukey_outliers(&[1.0, 1.0, 1.0]).is_empty());
        assert!(tukey_outliers(&[]).is_empty());
    }
}
