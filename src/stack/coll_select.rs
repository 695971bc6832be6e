//! Which component serves a run's op, read from the library's own selection log
//! (`[stacks.NAME.ran] component = "open-mpi"`).
//!
//! Open MPI has no API that says which `coll` component serves a communicator; with
//! `OMPI_MCA_coll_base_verbose` ≥ 9 every process logs its selection at `MPI_Init`
//! (`ompi/mca/coll/base/coll_base_comm_select.c`):
//!
//! - per communicator, `coll:base:comm_select: new communicator: MPI_COMM_WORLD (cid 0)`, then one
//!   `coll:base:comm_select: selecting  %10s, priority %3d, Enabled|Disabled` per component,
//!   lowest priority first; each enabled component overrides the functions it provides, so the
//!   last enabled one that provides the op is in charge of it (4.1 and HEAD);
//! - from Open MPI 5 at level ≥ 10, for `MPI_COMM_WORLD`, the answer itself:
//!   `coll:base:comm_select: communicator MPI_COMM_WORLD rank 0 allreduce -> tuned`.
//!
//! The direct line wins where it is printed. Without it (4.1), the component in charge is the
//! highest-priority enabled one on `MPI_COMM_WORLD` that provides blocking collectives at all
//! (`libnbc` provides only non-blocking ones), the later of equal priorities. Lines carry each
//! process's `[host:pid]` prefix and interleave between ranks, so each process is read apart;
//! the distinct answers of all processes are the run's. This module reads lines only; whether
//! the answer honours a pin is `model::results::Ran`'s rule.

use std::collections::HashMap;
use std::sync::OnceLock;

use regex::Regex;

use crate::model::case::Op;
// The named readers a stack definition may ask for (`ran.component`; the model checks the name
// at validate).
use crate::model::stack::COMPONENT_READERS as READERS;

/// Components that provide no blocking collective (Open MPI's `libnbc`: the non-blocking
/// ones only): never in charge of the ops campaign times.
const NON_BLOCKING_ONLY: &[&str] = &["libnbc"];

/// Distinct answers kept (every process normally gives the same one).
const MAX_VALUES: usize = 8;

/// Open MPI's name of the blocking function the mpi benchmark times for `op`
/// (`examples/mpi/allreduce_bench.c`: `MPI_Reduce_scatter_block`, `MPI_Bcast`).
pub(crate) fn ompi_function(op: Op) -> &'static str {
    match op {
        Op::Allreduce => "allreduce",
        Op::Allgather => "allgather",
        Op::ReduceScatter => "reduce_scatter_block",
        Op::Broadcast => "bcast",
        Op::Reduce => "reduce",
        Op::Alltoall => "alltoall",
    }
}

fn new_comm() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"^(?:\[(?P<proc>[^\]]*)\] )?coll:base:comm_select: new communicator: (?P<comm>\S+)",
        )
        .expect("static regex")
    })
}

fn selecting() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(concat!(
            r"^(?:\[(?P<proc>[^\]]*)\] )?coll:base:comm_select: selecting\s+(?P<comp>\S+), ",
            r"priority\s+(?P<prio>-?\d+), (?P<state>Enabled|Disabled)"
        ))
        .expect("static regex")
    })
}

fn assigned() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(concat!(
            r"coll:base:comm_select: communicator MPI_COMM_WORLD rank \d+ ",
            r"(?P<func>\w+) -> (?P<comp>\S+)"
        ))
        .expect("static regex")
    })
}

/// Whether `text` is a line of the verbose coll log this reader asks for (the forms above, the
/// framework's `mca: base: components_register|components_open|close:` chatter and the
/// components' own `coll:` lines at the same level): such lines say nothing about why a run
/// failed. Open MPI's real complaints (`mca: base: component_find: …`) are not among them.
pub(crate) fn is_log_line(text: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(concat!(
            r"^\[[^\]]*\] (?:mca: base: (?:components_register|components_open|close): ",
            r"|coll:|\(\d+/MPI_COMM_\w+\): )"
        ))
        .expect("static regex")
    })
    .is_match(text)
}

/// One process's view so far.
#[derive(Debug, Default)]
struct Process {
    in_world: bool,
    /// (priority, component) of the enabled component in charge on `MPI_COMM_WORLD` so far.
    best: Option<(i64, String)>,
}

/// Reads one run's output for the component that serves its op.
#[derive(Debug)]
pub(crate) struct CollSelect {
    function: &'static str,
    procs: HashMap<String, Process>,
    /// Open MPI 5's own per-op answers, distinct, in order.
    direct: Vec<String>,
}

impl CollSelect {
    /// A reader named `reader` (one of [`READERS`]) for a run of `op`; `Err` names the readers
    /// there are (validate refuses such a definition first).
    pub(crate) fn new(reader: &str, op: Op) -> Result<CollSelect, String> {
        if !READERS.contains(&reader) {
            return Err(format!(
                "ran.component: unknown reader `{reader}` (known: {})",
                READERS.join(", ")
            ));
        }
        Ok(CollSelect {
            function: ompi_function(op),
            procs: HashMap::new(),
            direct: Vec::new(),
        })
    }

    /// Look at one output line.
    pub(crate) fn feed(&mut self, text: &str) {
        if !text.contains("coll:base:comm_select: ") {
            return;
        }
        if let Some(c) = assigned().captures(text) {
            let comp = &c["comp"];
            if &c["func"] == self.function
                && self.direct.len() < MAX_VALUES
                && !self.direct.iter().any(|d| d == comp)
            {
                self.direct.push(comp.to_string());
            }
        } else if let Some(c) = new_comm().captures(text) {
            let proc = c.name("proc").map_or("", |m| m.as_str());
            let p = self.procs.entry(proc.to_string()).or_default();
            p.in_world = &c["comm"] == "MPI_COMM_WORLD";
        } else if let Some(c) = selecting().captures(text) {
            let proc = c.name("proc").map_or("", |m| m.as_str());
            let Some(p) = self.procs.get_mut(proc) else {
                return;
            };
            let comp = &c["comp"];
            let enabled = &c["state"] == "Enabled";
            if !p.in_world || !enabled || NON_BLOCKING_ONLY.contains(&comp) {
                return;
            }
            let Ok(prio) = c["prio"].parse::<i64>() else {
                return;
            };
            // Lowest priority first: a later one of equal priority overrides the earlier.
            if p.best.as_ref().is_none_or(|(best, _)| prio >= *best) {
                p.best = Some((prio, comp.to_string()));
            }
        }
    }

    /// The component(s) serving the op, joined with `,`; `None` when the output never said.
    pub(crate) fn finish(self) -> Option<String> {
        let mut values = self.direct;
        if values.is_empty() {
            let mut procs: Vec<(String, Process)> = self.procs.into_iter().collect();
            procs.sort_by(|a, b| a.0.cmp(&b.0));
            for (_, p) in procs {
                if let Some((_, comp)) = p.best {
                    if values.len() < MAX_VALUES && !values.contains(&comp) {
                        values.push(comp);
                    }
                }
            }
        }
        (!values.is_empty()).then(|| values.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(op: Op, text: &str) -> Option<String> {
        let mut r = CollSelect::new("open-mpi", op).unwrap();
        text.lines().for_each(|l| r.feed(l));
        r.finish()
    }

    /// Recorded here: Open MPI 4.1.4, `OMPI_MCA_coll_base_verbose=10`, `mpirun -np 2` on one
    /// node (two processes' logs interleaved, as mpirun forwards them).
    const OMPI_414: &str =
        include_str!("../../tests/integration/fixtures/ompi/coll_select_4.1.4.txt");

    #[test]
    fn open_mpi_4_1_on_one_node_serves_every_op_with_tuned() {
        for op in Op::EVERY {
            assert_eq!(read(op, OMPI_414).as_deref(), Some("tuned"), "{op}");
        }
        for line in OMPI_414.lines().filter(|l| !l.trim().is_empty()) {
            assert!(is_log_line(line), "not recognised as the log: {line}");
        }
    }

    #[test]
    fn without_tuned_basic_is_in_charge_and_libnbc_never_is() {
        let log = "\
[n:1] coll:base:comm_select: new communicator: MPI_COMM_WORLD (cid 0)
[n:2] coll:base:comm_select: new communicator: MPI_COMM_WORLD (cid 0)
[n:1] coll:base:comm_select: selecting       basic, priority  10, Enabled
[n:2] coll:base:comm_select: selecting       basic, priority  10, Enabled
[n:1] coll:base:comm_select: selecting      libnbc, priority  10, Enabled
[n:2] coll:base:comm_select: selecting      libnbc, priority  10, Enabled
[n:1] coll:base:comm_select: selecting         han, priority  35, Disabled
[n:1] coll:base:comm_select: new communicator: MPI_COMM_SELF (cid 1)
[n:1] coll:base:comm_select: selecting        self, priority  75, Enabled
";
        assert_eq!(read(Op::Allreduce, log).as_deref(), Some("basic"));
    }

    /// Open MPI HEAD (`coll_base_comm_select.c`, `PRINT_NAME`) names the component per function
    /// for MPI_COMM_WORLD: han at 35 on several nodes serves allreduce; broadcast is read as
    /// `bcast`, reduce_scatter as `reduce_scatter_block`.
    #[test]
    fn open_mpi_head_per_function_lines_are_the_answer() {
        let log = "\
[a:7] coll:base:comm_select: new communicator: MPI_COMM_WORLD (cid 0)
[a:7] coll:base:comm_select: selecting       tuned, priority  30, Enabled
[a:7] coll:base:comm_select: selecting         han, priority  35, Enabled
[a:7] coll:base:comm_select: communicator MPI_COMM_WORLD rank 0 allreduce -> han
[a:7] coll:base:comm_select: communicator MPI_COMM_WORLD rank 0 bcast -> han
[a:7] coll:base:comm_select: communicator MPI_COMM_WORLD rank 0 reduce_scatter_block -> tuned
[a:7] coll:base:comm_select: communicator MPI_COMM_WORLD rank 0 ireduce_scatter_block -> libnbc
";
        assert_eq!(read(Op::Allreduce, log).as_deref(), Some("han"));
        assert_eq!(read(Op::Broadcast, log).as_deref(), Some("han"));
        assert_eq!(read(Op::ReduceScatter, log).as_deref(), Some("tuned"));
    }

    #[test]
    fn silence_is_none_and_unknown_readers_are_refused() {
        assert_eq!(read(Op::Allreduce, "allreduce_bench: done\n"), None);
        assert!(CollSelect::new("mpich", Op::Allreduce)
            .unwrap_err()
            .contains("open-mpi"));
        assert!(!is_log_line("allreduce_bench: MPI_Init failed"));
    }
}
