//! What the installed library says it has: the output of a stack's `variants_probe` command
//! read into algorithms per op (the probe's own op names), and a planned variant judged
//! against it.
//!
//! For mpi the command is `ompi_info --param coll tuned --level 9 --parsable`, whose enumerator
//! lines name each op's algorithms by number
//! (`mca:coll:tuned:param:coll_tuned_allreduce_algorithm:enumerator:value:4:ring`). Reading
//! only: running the command is `engine::variant_check`'s.

use std::collections::BTreeMap;

use crate::model::case::{Op, Variant};
use crate::model::stack::VariantsProbe;

/// Algorithms per op, in the order the probe printed them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Offered {
    by_op: BTreeMap<String, Vec<String>>,
}

/// Read `text` (the probe's output) with `probe.pattern`; `Err` names why the pattern cannot
/// be used (validate refuses such a definition first).
pub(crate) fn read(probe: &VariantsProbe, text: &str) -> Result<Offered, String> {
    let re = crate::model::stack::probe_regex(&probe.pattern)
        .map_err(|why| format!("variants_probe.pattern {why}"))?;
    let mut by_op: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in text.lines() {
        let Some(c) = re.captures(line.trim_end()) else {
            continue;
        };
        let (op, variant) = (c["op"].to_string(), c["variant"].trim().to_string());
        let list = by_op.entry(op).or_default();
        if !variant.is_empty() && !list.contains(&variant) {
            list.push(variant);
        }
    }
    Ok(Offered { by_op })
}

impl Offered {
    /// Whether the probe listed anything at all (an empty listing judges nothing).
    pub(crate) fn is_empty(&self) -> bool {
        self.by_op.is_empty()
    }

    /// The algorithms the probe lists for campaign's `op` (under its probe name), `None` when
    /// it lists none for that op (nothing to judge against).
    pub(crate) fn of(&self, probe: &VariantsProbe, op: Op) -> Option<&[String]> {
        let name = probe
            .ops
            .get(op.as_str())
            .map_or(op.as_str(), String::as_str);
        self.by_op.get(name).map(Vec::as_slice)
    }

    /// Whether `variant` of `op` is among what the library offers; `None` when the probe says
    /// nothing about the op. Names compare without case, `-` and `_` alike.
    pub(crate) fn has(&self, probe: &VariantsProbe, op: Op, variant: Variant) -> Option<bool> {
        let norm = |s: &str| s.trim().to_ascii_lowercase().replace('-', "_");
        let want = norm(&variant.to_string());
        Some(self.of(probe, op)?.iter().any(|v| norm(v) == want))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Recorded here: `ompi_info --param coll tuned --level 9 --parsable` of Open MPI 4.1.4.
    const OMPI_414: &str =
        include_str!("../../tests/integration/fixtures/ompi/ompi_info_coll_tuned_4.1.4.txt");

    fn mpi() -> VariantsProbe {
        let shipped = crate::stack::registry::try_shipped().unwrap();
        shipped["mpi"].variants_probe.clone().unwrap()
    }

    fn v(name: &str) -> Variant {
        name.parse().unwrap()
    }

    #[test]
    fn open_mpi_4_1_4_lists_its_tuned_algorithms_per_op() {
        let probe = mpi();
        let offered = read(&probe, OMPI_414).unwrap();
        assert_eq!(
            offered.of(&probe, Op::Allreduce).unwrap(),
            [
                "ignore",
                "basic_linear",
                "nonoverlapping",
                "recursive_doubling",
                "ring",
                "segmented_ring",
                "rabenseifner"
            ]
        );
        assert_eq!(
            offered.of(&probe, Op::Allgather).unwrap(),
            [
                "ignore",
                "linear",
                "bruck",
                "recursive_doubling",
                "ring",
                "neighbor",
                "two_proc"
            ]
        );
        // 4.1 has no sparbit (HEAD's allgather 8) and calls HEAD's bruck-k-fanout `bruck`.
        assert_eq!(
            offered.has(&probe, Op::Allgather, v("sparbit")),
            Some(false)
        );
        assert_eq!(
            offered.has(&probe, Op::Allgather, v("bruck-k-fanout")),
            Some(false)
        );
        assert_eq!(offered.has(&probe, Op::Allgather, v("ring")), Some(true));
        // campaign's broadcast is Open MPI's bcast; reduce_scatter is reduce_scatter_block.
        assert_eq!(offered.has(&probe, Op::Broadcast, v("knomial")), Some(true));
        assert_eq!(
            offered.has(&probe, Op::ReduceScatter, v("butterfly")),
            Some(true)
        );
        assert_eq!(
            offered.has(&probe, Op::Allreduce, v("allgather_reduce")),
            Some(false)
        );
    }

    #[test]
    fn an_op_the_probe_does_not_name_is_not_judged() {
        let probe = mpi();
        let offered = read(
            &probe,
            "mca:coll:tuned:param:coll_tuned_priority:value:30\n",
        )
        .unwrap();
        assert!(offered.is_empty());
        assert_eq!(offered.has(&probe, Op::Allreduce, v("ring")), None);
    }
}
