//! The collective a case benchmarks (`op`), what `count` and `root` mean for it, and the
//! buffer shapes every stack and the golden agree on.
//!
//! One definition of `count` for every op, the nccl-tests one: `count` is the number of elements
//! of the op's *full* buffer per rank (`n_bytes = count × element size` is the message size and
//! the bytes algbw/busbw count). Allreduce, broadcast, reduce: each rank's input and output hold
//! `count`. Allgather: each rank contributes `count / p` and receives `count`. Reduce_scatter:
//! each rank contributes `count` and receives its `count / p` chunk. Alltoall: each rank sends
//! `count` (`count / p` to every rank, itself included) and receives `count`. The three chunked
//! ops need `count % p == 0` (MPI_Allgather, MPI_Reduce_scatter_block and MPI_Alltoall take one
//! equal block size). `root` (broadcast and reduce only, default 0) is the rank that holds the
//! data (broadcast) or the result (reduce). Allreduce is the seed's only op: it is never
//! written into a case file, so allreduce cases stay byte-identical to the seed format.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::Variant;

/// A collective operation.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    #[default]
    Allreduce,
    Allgather,
    ReduceScatter,
    Broadcast,
    Reduce,
    Alltoall,
}

impl Op {
    /// Every op, in documentation order (also the order of report sections).
    pub const EVERY: [Op; 6] = [
        Op::Allreduce,
        Op::Allgather,
        Op::ReduceScatter,
        Op::Broadcast,
        Op::Reduce,
        Op::Alltoall,
    ];
    /// Every accepted spelling, in documentation order.
    pub(crate) const ALL: &'static [&'static str] = &[
        "allreduce",
        "allgather",
        "reduce_scatter",
        "broadcast",
        "reduce",
        "alltoall",
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Op::Allreduce => "allreduce",
            Op::Allgather => "allgather",
            Op::ReduceScatter => "reduce_scatter",
            Op::Broadcast => "broadcast",
            Op::Reduce => "reduce",
            Op::Alltoall => "alltoall",
        }
    }

    /// Is this the seed's op (omitted from case files)?
    pub(crate) fn is_allreduce(&self) -> bool {
        *self == Op::Allreduce
    }

    /// Does the op have a root rank (broadcast, reduce)?
    pub(crate) fn has_root(self) -> bool {
        matches!(self, Op::Broadcast | Op::Reduce)
    }

    /// Does the op split `count` into `p` equal blocks (allgather, reduce_scatter, alltoall)?
    pub(crate) fn chunked(self) -> bool {
        matches!(self, Op::Allgather | Op::ReduceScatter | Op::Alltoall)
    }

    /// Does the op add values (the golden is a sum, so it can overflow a dtype)?
    pub(crate) fn reduces(self) -> bool {
        matches!(self, Op::Allreduce | Op::ReduceScatter | Op::Reduce)
    }

    /// Elements of one rank's input buffer for `count` and `p`.
    pub(crate) fn input_len(self, count: u64, p: u32) -> u64 {
        match self {
            Op::Allgather => count / u64::from(p.max(1)),
            _ => count,
        }
    }

    /// Elements of one rank's result (reduce_scatter: its own chunk; every other op: `count`).
    pub(crate) fn output_len(self, count: u64, p: u32) -> u64 {
        match self {
            Op::ReduceScatter => count / u64::from(p.max(1)),
            _ => count,
        }
    }
}

impl Op {
    /// The algorithms (variants) the built-in `host` stack implements for this op, first the
    /// one paired stacks are compared with by default. Any other (op, variant) on host is a
    /// planned skip naming these.
    pub(crate) fn host_variants(self) -> &'static [Variant] {
        match self {
            Op::Allreduce => &[Variant::Mesh, Variant::Ring, Variant::Twophase],
            Op::Allgather | Op::ReduceScatter => &[Variant::Ring, Variant::Direct],
            Op::Broadcast => &[Variant::Tree, Variant::ScatterAllgather],
            Op::Reduce => &[Variant::Tree, Variant::Direct],
            Op::Alltoall => &[Variant::Pairwise, Variant::Direct],
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Op {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        Op::EVERY
            .iter()
            .copied()
            .find(|o| o.as_str() == s)
            .ok_or_else(|| format!("unknown op `{s}` (expected one of: {})", Op::ALL.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_round_trip_through_text_and_serde() {
        for op in Op::EVERY {
            assert_eq!(op.as_str().parse::<Op>(), Ok(op));
            assert_eq!(
                serde_json::to_value(op).unwrap(),
                serde_json::json!(op.as_str())
            );
        }
        assert_eq!(Op::ALL.len(), Op::EVERY.len());
        let err = "all_gather".parse::<Op>().unwrap_err();
        assert!(err.contains("allgather, reduce_scatter"), "{err}");
    }

    #[test]
    fn buffer_lengths_follow_the_one_count_definition() {
        assert_eq!(Op::Allgather.input_len(1024, 4), 256);
        assert_eq!(Op::Allgather.output_len(1024, 4), 1024);
        assert_eq!(Op::ReduceScatter.input_len(1024, 4), 1024);
        assert_eq!(Op::ReduceScatter.output_len(1024, 4), 256);
        for op in [Op::Allreduce, Op::Broadcast, Op::Reduce, Op::Alltoall] {
            assert_eq!((op.input_len(10, 2), op.output_len(10, 2)), (10, 10));
        }
    }
}
