//! The human summary of a `campaign bench collective` run, for a person at a terminal.
//!
//! The protocol lines on stdout are for the engine; someone who runs the command by hand wants
//! the answer in one glance: median execute time of the timed rounds, its spread, and the bus
//! bandwidth at the median (nccl-tests' convention, recomputed from bytes and time). It only
//! formats; the command decides whether to print it (stdout a terminal).

use crate::analysis::stats::bandwidth::{algbw, busbw};
use crate::analysis::stats::median;
use crate::model::case::Case;
use crate::model::units::{format_bandwidth, format_bytes, format_seconds};

use super::Outcome;

/// Two or three lines: the case and verdict, the timed rounds' execute times, the bandwidth.
/// `timed_execute_s` are the slowest rank's execute times of the timed rounds, in order.
pub(crate) fn human(case: &Case, timed_execute_s: &[f64], outcome: &Outcome) -> String {
    // Say how many rounds were looked at: by default only the first and the last are.
    let checked = outcome.checked_rounds;
    let verdict = if outcome.passed() {
        format!("all correct ({checked} rounds checked)")
    } else {
        format!(
            "{} FAILED the golden check ({checked} rounds checked)",
            outcome.failed_rounds
        )
    };
    let mut out = format!(
        "{}: {} timed round{}, {verdict}\n",
        case.case_id(),
        timed_execute_s.len(),
        if timed_execute_s.len() == 1 { "" } else { "s" }
    );
    let Some(mid) = median(timed_execute_s) else {
        return out;
    };
    let min = timed_execute_s
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min);
    let max = timed_execute_s
        .iter()
        .copied()
        .fold(f64::NEG_INFINITY, f64::max);
    out.push_str(&format!(
        "  execute  median {}  (min {}, max {})\n",
        format_seconds(mid),
        format_seconds(min),
        format_seconds(max)
    ));
    let bytes = case.n_bytes();
    if let (Some(bus), Some(alg)) = (busbw(case.op, case.p, bytes, mid), algbw(bytes, mid)) {
        out.push_str(&format!(
            "  busbw    {} at the median  (algbw {}, {} over p = {})\n",
            format_bandwidth(bus),
            format_bandwidth(alg),
            format_bytes(bytes),
            case.p
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::case::Variant;

    fn outcome(failed: u32) -> Outcome {
        Outcome {
            timed_rounds: 3,
            rounds: 3,
            checked_rounds: 2,
            failed_rounds: failed,
            wrong_total: u64::from(failed),
            first_failure: (failed > 0).then(|| "rank 1 element 0".to_string()),
        }
    }

    #[test]
    fn shows_the_median_its_spread_and_the_bus_bandwidth() {
        // 1 MiB fp32 over 4 ranks; median 1 ms → algbw 1.05 GB/s, busbw × 2·3/4 = 1.57 GB/s.
        let case = Case::new(Variant::Ring, 4, 262_144);
        let text = human(&case, &[0.002, 0.001, 0.0005], &outcome(0));
        assert!(text.starts_with(&format!(
            "{}: 3 timed rounds, all correct (2 rounds checked)\n",
            case.case_id()
        )));
        assert!(
            text.contains("median 1.00 ms  (min 500 µs, max 2.00 ms)"),
            "{text}"
        );
        assert!(text.contains("busbw    1.57 GB/s at the median"), "{text}");
        assert!(text.contains("algbw 1.05 GB/s, 1 MiB over p = 4"), "{text}");
    }

    #[test]
    fn says_when_rounds_failed_the_check() {
        let case = Case::new(Variant::Mesh, 2, 16);
        let text = human(&case, &[1e-6, 1e-6, 1e-6], &outcome(2));
        assert!(
            text.contains("3 timed rounds, 2 FAILED the golden check (2 rounds checked)"),
            "{text}"
        );
    }
}
