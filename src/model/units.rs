//! Human units in and out: durations such as `"10m"` in plans, and times/bandwidths in reports.
//!
//! Pure formatting and parsing; the one place that decides how a number looks to a person
//! (never `0.0000` for a sub-50 µs time).

use std::time::Duration;

/// The longest duration a plan or stack definition may give (7 days). Longer limits mean nothing
/// for a benchmark and would overflow the clock arithmetic of timeouts; documented in
/// docs/plan-format.md.
pub(crate) const MAX_DURATION: Duration = Duration::from_secs(7 * 24 * 3600);

/// Parse `"500ms"`, `"20s"`, `"10m"`, `"2h"`, `"1h30m"` (humantime's grammar), or a bare number
/// of seconds. A value above [`MAX_DURATION`] (or too large for a `Duration`) is an error, not a
/// panic.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    if t.is_empty() {
        return Err("expected a duration such as \"30s\", \"10m\" or \"1h\"".into());
    }
    let parsed = if let Ok(secs) = t.parse::<f64>() {
        Duration::try_from_secs_f64(secs).map_err(|_| {
            format!(
                "`{text}` is not a duration (expected a number of seconds ≥ 0 that fits, or e.g. \"30s\", \"10m\")"
            )
        })?
    } else {
        humantime::parse_duration(t).map_err(|e| {
            format!("`{text}` is not a duration ({e}; expected e.g. \"30s\", \"10m\", \"1h30m\", \"500ms\")")
        })?
    };
    if parsed > MAX_DURATION {
        return Err(format!(
            "`{text}` is longer than the maximum duration of 7 days (\"7d\")"
        ));
    }
    Ok(parsed)
}

/// `serde(with)` for optional durations in definitions: read from a duration string or a bare
/// number of seconds (parsed once, by [`parse_duration`]), written back as humantime text.
pub(crate) mod duration_opt {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Text {
        Secs(f64),
        Text(String),
    }

    pub(crate) fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_str(&humantime::format_duration(*d).to_string()),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        let text = match Option::<Text>::deserialize(d)? {
            None => return Ok(None),
            Some(Text::Secs(x)) => x.to_string(),
            Some(Text::Text(t)) => t,
        };
        super::parse_duration(&text)
            .map(Some)
            .map_err(serde::de::Error::custom)
    }
}

/// An element count as people write it: `4096`, `64Mi` (binary: Ki, Mi, Gi) or `1M` (decimal:
/// K, M, G). Zero and overflow are refused.
pub(crate) fn parse_count(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, suffix) = t.split_at(split);
    let scale: u64 = match suffix {
        "" => 1,
        "K" | "k" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        _ => 0,
    };
    let n: Option<u64> = digits.parse().ok();
    match n.and_then(|n| n.checked_mul(scale)) {
        Some(n) if n > 0 && scale > 0 => Ok(n),
        _ => Err(format!(
            "`{text}` is not an element count (expected a positive integer, optionally with K, M, G, Ki, Mi or Gi: 4096, 64Mi)"
        )),
    }
}

/// Seconds in the largest unit that keeps 3 significant digits: `812 ns`, `14.2 µs`, `3.05 ms`.
pub(crate) fn format_seconds(s: f64) -> String {
    if !s.is_finite() {
        return "–".into();
    }
    // Pick the unit from the value as it will be shown (3 significant digits), so 999.96 µs
    // becomes 1.00 ms rather than 1000 µs.
    let a = round_sig(s.abs(), 3);
    let (v, unit) = if a == 0.0 {
        (0.0, "s")
    } else if a < 1e-6 {
        (s * 1e9, "ns")
    } else if a < 1e-3 {
        (s * 1e6, "µs")
    } else if a < 1.0 {
        (s * 1e3, "ms")
    } else {
        (s, "s")
    };
    format!("{} {unit}", sig3(v))
}

/// Bytes per second as `MB/s` / `GB/s` (decimal, as nccl-tests).
pub(crate) fn format_bandwidth(bytes_per_s: f64) -> String {
    if !bytes_per_s.is_finite() {
        return "–".into();
    }
    if bytes_per_s >= 1e9 {
        format!("{} GB/s", sig3(bytes_per_s / 1e9))
    } else {
        format!("{} MB/s", sig3(bytes_per_s / 1e6))
    }
}

/// Bytes as `256 B`, `16 KiB`, `4 MiB`.
pub(crate) fn format_bytes(b: u64) -> String {
    const K: u64 = 1024;
    if b >= K * K * K && b.is_multiple_of(K * K * K) {
        format!("{} GiB", b / (K * K * K))
    } else if b >= K * K && b.is_multiple_of(K * K) {
        format!("{} MiB", b / (K * K))
    } else if b >= K && b.is_multiple_of(K) {
        format!("{} KiB", b / K)
    } else {
        format!("{b} B")
    }
}

/// `x` rounded to `digits` significant digits; zero, infinities and NaN unchanged. The one
/// significant-digit rounding: stored timing floats (6 digits, `store::layout::round_sample`),
/// durations and bandwidths as shown (3) and figure ticks (3) all round here.
pub(crate) fn round_sig(x: f64, digits: i32) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let factor = 10f64.powi(digits - 1 - x.abs().log10().floor() as i32);
    (x * factor).round() / factor
}

/// Three significant digits, no trailing exponent. Rounds first so that 9.9996 prints as
/// `10.0`, not `10.00`.
fn sig3(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let r = round_sig(v, 3);
    let a = r.abs();
    if a >= 99.95 {
        format!("{r:.0}")
    } else if a >= 9.995 {
        format!("{r:.1}")
    } else {
        format!("{r:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_take_binary_and_decimal_suffixes_and_refuse_the_rest() {
        assert_eq!(parse_count("4096"), Ok(4096));
        assert_eq!(parse_count("64Mi"), Ok(64 << 20));
        assert_eq!(parse_count("2K"), Ok(2000));
        assert_eq!(parse_count(" 1Gi "), Ok(1 << 30));
        for bad in ["", "0", "Mi", "64MB", "-1", "1.5Mi", "99999999999Gi"] {
            assert!(parse_count(bad).is_err(), "{bad}");
        }
    }

    /// The one rounding gives what each of its three former copies gave: the stored 6-digit
    /// floats and the shown 3-digit ones (whose copy used `powf`) on values across 40 decades.
    #[test]
    fn round_sig_matches_the_copies_it_replaced() {
        let old_sig6 = |x: f64| {
            let factor = 10f64.powi(5 - x.abs().log10().floor() as i32);
            (x * factor).round() / factor
        };
        let old_sig3_powf = |v: f64| {
            let factor = 10f64.powf(2.0 - v.abs().log10().floor());
            (v * factor).round() / factor
        };
        let mut x = 1.234_567_891e-20_f64;
        while x < 1e20 {
            for v in [x, -x, x * 9.999_6, x * 1.000_5] {
                assert_eq!(round_sig(v, 6).to_bits(), old_sig6(v).to_bits(), "{v:e}");
                assert_eq!(
                    round_sig(v, 3).to_bits(),
                    old_sig3_powf(v).to_bits(),
                    "{v:e}"
                );
            }
            x *= 1.37;
        }
        assert_eq!(round_sig(8.4e-6, 6), 8.4e-6);
        assert_eq!(round_sig(9.9996, 3), 10.0);
        assert_eq!(round_sig(0.0, 3), 0.0);
        assert!(round_sig(f64::NAN, 3).is_nan());
        assert_eq!(round_sig(f64::INFINITY, 6), f64::INFINITY);
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10m").unwrap(), Duration::from_secs(600));
        assert_eq!(parse_duration("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2.5").unwrap(), Duration::from_millis(2500));
        assert!(parse_duration("10 parsecs").is_err());
        assert!(parse_duration("99999999999999999h").is_err());
        assert!(parse_duration("1e300").is_err());
        assert!(parse_duration("").is_err());
        assert_eq!(parse_duration("7d").unwrap(), MAX_DURATION);
        let long = parse_duration("3000000000000000h").unwrap_err();
        assert!(long.contains("maximum duration of 7 days"), "{long}");
        assert!(parse_duration("604801").is_err());
    }

    #[test]
    fn human_times_never_print_zero_for_small_values() {
        assert_eq!(format_seconds(0.000_014_2), "14.2 µs");
        assert_eq!(format_seconds(8.12e-7), "812 ns");
        assert_eq!(format_seconds(0.003_05), "3.05 ms");
        assert_eq!(format_seconds(12.0), "12.0 s");
        assert_eq!(format_bytes(4 * 1024 * 1024), "4 MiB");
        assert_eq!(format_bandwidth(2.5e9), "2.50 GB/s");
        assert_eq!(format_seconds(9.9999e-6), "10.0 µs");
        assert_eq!(format_seconds(0.0), "0 s");
        assert_eq!(format_seconds(999.96e-6), "1.00 ms");
    }
}
