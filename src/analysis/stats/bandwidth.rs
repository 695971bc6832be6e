//! Collective bandwidth in the nccl-tests convention, and the seed's `bw_execute_mb_s`.
//!
//! algbw = bytes / time; busbw = algbw × a per-collective factor of the rank count, so that
//! busbw compares with the link's peak whatever the algorithm. Pure arithmetic; bandwidth is
//! always recomputed from bytes and time, never taken from a stack's output.

pub(crate) use crate::model::case::Op as Collective;

/// nccl-tests' busbw factor for `n` ranks: allreduce 2(n−1)/n; reduce_scatter, allgather,
/// alltoall (n−1)/n; broadcast and reduce 1. The bytes are always the case's `n_bytes`
/// (`count` × element size, the op's whole buffer per rank — nccl-tests' "size").
pub(crate) fn bus_factor(op: Collective, n: u32) -> f64 {
    let n = f64::from(n.max(1));
    match op {
        Collective::Allreduce => 2.0 * (n - 1.0) / n,
        Collective::ReduceScatter | Collective::Allgather | Collective::Alltoall => (n - 1.0) / n,
        Collective::Broadcast | Collective::Reduce => 1.0,
    }
}

/// [`bus_factor`] as a formula of P (the ranks), for captions and tables: the text and the
/// number come from one match each, and a test holds them to each other.
pub(crate) fn bus_factor_formula(op: Collective) -> &'static str {
    match op {
        Collective::Allreduce => "2(P−1)/P",
        Collective::ReduceScatter | Collective::Allgather | Collective::Alltoall => "(P−1)/P",
        Collective::Broadcast | Collective::Reduce => "1",
    }
}

/// What the bytes of a bandwidth figure are, for reports and results rows.
pub(crate) fn bytes_counted(op: Collective) -> &'static str {
    match op {
        Collective::Allreduce => "n_bytes = count × element size per rank (in = out)",
        Collective::Allgather => "n_bytes = the whole gathered buffer per rank (p blocks)",
        Collective::ReduceScatter => "n_bytes = each rank's whole input (p blocks)",
        Collective::Broadcast => "n_bytes = the broadcast message",
        Collective::Reduce => "n_bytes = the reduced message",
        Collective::Alltoall => "n_bytes = each rank's whole send buffer (p blocks)",
    }
}

/// Algorithm bandwidth in bytes per second; None for a non-positive time.
pub(crate) fn algbw(bytes: u64, seconds: f64) -> Option<f64> {
    (seconds > 0.0 && seconds.is_finite()).then(|| bytes as f64 / seconds)
}

/// Bus bandwidth in bytes per second.
pub(crate) fn busbw(op: Collective, ranks: u32, bytes: u64, seconds: f64) -> Option<f64> {
    algbw(bytes, seconds).map(|a| a * bus_factor(op, ranks))
}

/// The seed's `bw_execute_mb_s = n_bytes / execute_s / 1e6`.
pub(crate) fn bw_execute_mb_s(n_bytes: u64, execute_s: f64) -> Option<f64> {
    algbw(n_bytes, execute_s).map(|b| b / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nccl_tests_factors() {
        assert_eq!(bus_factor(Collective::Allreduce, 2), 1.0);
        assert_eq!(bus_factor(Collective::Allreduce, 8), 1.75);
        assert_eq!(bus_factor(Collective::Allgather, 4), 0.75);
        assert_eq!(bus_factor(Collective::ReduceScatter, 4), 0.75);
        assert_eq!(bus_factor(Collective::Alltoall, 8), 0.875);
        assert_eq!(bus_factor(Collective::Broadcast, 8), 1.0);
        assert_eq!(bus_factor(Collective::Reduce, 2), 1.0);
    }

    /// The formula each op's caption shows is the factor `busbw` multiplies by, at every P.
    #[test]
    fn the_formula_text_is_the_factor() {
        for op in Collective::EVERY {
            for p in 1..=64u32 {
                let n = f64::from(p);
                let by_text = match bus_factor_formula(op) {
                    "2(P−1)/P" => 2.0 * (n - 1.0) / n,
                    "(P−1)/P" => (n - 1.0) / n,
                    "1" => 1.0,
                    other => panic!("{op}: formula {other} not known to this test"),
                };
                assert_eq!(by_text, bus_factor(op, p), "{op} at P = {p}");
            }
        }
    }

    #[test]
    fn hand_computed_bandwidths() {
        // 1 MiB fp32 (4 MiB) in 2 ms on 4 ranks.
        let bytes = 4 * 1024 * 1024;
        assert_eq!(algbw(bytes, 0.002), Some(2_097_152_000.0));
        assert_eq!(
            busbw(Collective::Allreduce, 4, bytes, 0.002),
            Some(2_097_152_000.0 * 1.5)
        );
        assert_eq!(
            bw_execute_mb_s(1024, 0.000_165),
            Some(1024.0 / 0.000_165 / 1e6)
        );
        assert_eq!(algbw(1024, 0.0), None);
    }
}
