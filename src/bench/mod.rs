//! The built-in `host` stack: a real collective among P ranks on CPU threads.
//!
//! Owns the algorithms of every op over shared windows (allreduce: mesh, ring, twophase;
//! allgather and reduce_scatter: ring, direct; broadcast: tree, scatter_allgather; reduce: tree,
//! direct; alltoall: pairwise, direct — `Op::host_variants`), their timing, the golden check
//! (after the first round and the last timed round by default, after every round with
//! [`CheckMode::Every`]), and the native protocol lines they are reported in. The command
//! (`campaign bench collective`, which runs whatever op its case file names) is glue around
//! [`run`]. This module must not read files,
//! parse arguments or print: rounds are handed to a caller-supplied sink as they end.
//!
//! Submodules: `affinity` (binding ranks to cores), `chunks` (uneven split), `element` (dtype
//! arithmetic, kernels), `region` (huge-page aligned window memory), `window` (shared buffers,
//! the unsafe contract), `barrier` (spin-then-yield sync), `mesh`/`ring`/`twophase` (one rank's
//! part of one allreduce round), `gather`/`scatter`/`broadcast`/`reduce`/`alltoall` (the other
//! ops' algorithms), `check` (golden, fault injection), `runner` (rank threads, rounds,
//! timing), `protocol` (the `CAMPAIGN_SAMPLE`/`CAMPAIGN_DONE` lines), `summary` (the human
//! summary the command prints at a terminal).

pub(crate) mod affinity;
mod alltoall;
pub(crate) mod barrier;
mod broadcast;
pub(crate) mod check;
pub(crate) mod chunks;
pub(crate) mod element;
mod gather;
pub(crate) mod mesh;
pub(crate) mod protocol;
mod reduce;
pub mod region;
pub(crate) mod ring;
mod runner;
mod scatter;
pub(crate) mod terminal;
pub(crate) mod twophase;
pub(crate) mod window;

use half::{bf16, f16};

use crate::model::case::{Case, Dtype};
pub(crate) use check::Wrong;

/// How to run a case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    pub warmup: u32,
    pub timed: u32,
    /// Allocate windows once (true) or every round.
    pub persistent: bool,
    /// Which rounds' outputs are compared with the golden.
    pub check: CheckMode,
    pub fault: Option<Fault>,
}

impl Options {
    /// The case's own round counts, persistent windows, the default check, no fault.
    pub(crate) fn for_case(case: &Case) -> Options {
        Options {
            warmup: case.warmup_rounds,
            timed: case.timed_rounds,
            persistent: true,
            check: CheckMode::default(),
            fault: None,
        }
    }
}

/// Which rounds the golden check (and the poison fill it needs) runs around.
///
/// Why not every round by default: a check of a large output is a CPU burst, and the timed
/// round after it absorbs the preemption it provokes (issue 29, docs/performance.md). With
/// `Ends` nothing runs between timed rounds but storing each rank's time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CheckMode {
    /// After the first round of the run (a warmup round when warmup >= 1) and after the last
    /// timed round, which writes into a second output window poisoned at setup; samples are
    /// printed after the last round.
    #[default]
    Ends,
    /// After every round (warmup too), outside the timed region, the output poisoned again
    /// before each; samples are printed as each round ends.
    Every,
}

impl CheckMode {
    /// `ends` or `every` (the `--check` / `HOST_BENCH_CHECK` values).
    pub fn parse(text: &str) -> Option<CheckMode> {
        match text.trim() {
            "ends" => Some(CheckMode::Ends),
            "every" => Some(CheckMode::Every),
            _ => None,
        }
    }

    /// Is round `round` (1-based over the run, of `total`) checked?
    pub(crate) fn checks(self, round: u32, total: u32) -> bool {
        self == CheckMode::Every || round == 1 || round == total
    }
}

/// Test-only corruption of one element of `rank`'s output after the collective and before the
/// check: in timed round `timed_round` (1-based), or in every timed round when `None`. Rounds
/// that are not checked are corrupted too (a real fault does not know which rounds are looked
/// at), which is how the tests prove what each `CheckMode` catches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fault {
    pub(crate) rank: u32,
    pub(crate) timed_round: Option<u32>,
}

impl Fault {
    /// Does this fault spoil `rank`'s output in timed round `timed_round`?
    pub(crate) fn hits(&self, rank: usize, timed_round: Option<u32>) -> bool {
        self.rank as usize == rank
            && timed_round.is_some()
            && (self.timed_round.is_none() || self.timed_round == timed_round)
    }
}

/// A golden mismatch found after a timed round.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Mismatch {
    /// The lowest rank with a wrong element, and its first wrong element.
    pub(crate) rank: u32,
    pub(crate) first: Wrong,
    /// Wrong elements on that rank.
    pub(crate) wrong_on_rank: u64,
    /// Wrong elements over all ranks, and how many ranks had any.
    pub(crate) wrong_total: u64,
    pub(crate) ranks_wrong: u32,
}

/// One round as it ended: what a `CAMPAIGN_SAMPLE` line carries.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RoundReport {
    /// 1-based over all rounds of the run, warmup first.
    pub(crate) round: u32,
    /// Timed or warmup.
    pub timed: bool,
    /// Was this round's output compared with the golden? (`ok` of an unchecked round means
    /// only that it completed.)
    pub(crate) checked: bool,
    /// 1-based within its phase.
    pub(crate) phase_round: u32,
    /// The slowest rank's execute time.
    pub execute_s: f64,
    pub(crate) per_rank_execute_s: Vec<f64>,
    /// Window allocation and thread start; first round only.
    pub(crate) setup_s: Option<f64>,
    /// Rank 0's whole round: allocation, collective, check, release.
    pub(crate) wall_s: f64,
    /// Slowest rank's window allocation + input fill (non-persistent only).
    pub(crate) alloc_s: Option<f64>,
    /// Slowest rank's window release (non-persistent only).
    pub(crate) release_s: Option<f64>,
    /// Slowest rank's golden check (checked rounds only).
    pub(crate) check_s: Option<f64>,
    /// False when the golden check failed.
    pub(crate) ok: bool,
    pub(crate) mismatch: Option<Mismatch>,
    /// P and count, for messages.
    pub(crate) p: u32,
    pub(crate) count: u64,
}

impl RoundReport {
    /// The failure message of a wrong round, naming rank, index, value, expected and #wrong.
    pub(crate) fn failure(&self) -> Option<String> {
        let m = self.mismatch.as_ref()?;
        Some(format!(
            "golden mismatch in {} round {} (round {}): rank {} index {}: got {}, expected {} \
             (#wrong {} of {} elements on rank {}; {} wrong on {} of {} ranks)",
            if self.timed { "timed" } else { "warmup" },
            self.phase_round,
            self.round,
            m.rank,
            m.first.index,
            m.first.value,
            m.first.expected,
            m.wrong_on_rank,
            self.count,
            m.rank,
            m.wrong_total,
            m.ranks_wrong,
            self.p
        ))
    }
}

/// How the run ended.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Outcome {
    pub(crate) timed_rounds: u32,
    /// Every round run, warmup included.
    pub(crate) rounds: u32,
    /// Rounds whose output was compared with the golden.
    pub(crate) checked_rounds: u32,
    /// Checked rounds whose golden check failed.
    pub(crate) failed_rounds: u32,
    /// Wrong elements over every failed round and rank.
    pub(crate) wrong_total: u64,
    /// The first failing round's message.
    pub(crate) first_failure: Option<String>,
}

impl Outcome {
    pub fn passed(&self) -> bool {
        self.failed_rounds == 0
    }

    /// The `CAMPAIGN_DONE` error text when failed.
    pub fn error(&self) -> Option<String> {
        let first = self.first_failure.as_ref()?;
        Some(format!(
            "{first}; {} of {} checked rounds failed, {} wrong elements in all; {} rounds run",
            self.failed_rounds, self.checked_rounds, self.wrong_total, self.rounds
        ))
    }
}

/// One rank's view of a round: who it is and what it shares.
pub(crate) struct RankCtx<'a, T> {
    pub(crate) rank: usize,
    pub(crate) p: usize,
    pub(crate) count: usize,
    /// Broadcast's and reduce's root (0 for the other ops).
    pub(crate) root: usize,
    pub(crate) windows: &'a window::Windows<T>,
    pub(crate) sync: &'a barrier::Barrier,
    /// Ring progress steps this rank completed in earlier rounds.
    pub(crate) ring_steps: u64,
}

/// Does the host stack implement `variant` for `op`? (`Op::host_variants`; other variant names
/// belong to other stacks.)
pub fn implements(op: crate::model::case::Op, variant: crate::model::case::Variant) -> bool {
    op.host_variants().contains(&variant)
}

/// One rank's part of one round of an algorithm.
type Algorithm<T> = fn(&mut RankCtx<'_, T>);

/// The algorithm of `(op, variant)`, when the host stack has it.
pub(crate) fn algorithm<T: element::Element>(
    op: crate::model::case::Op,
    variant: crate::model::case::Variant,
) -> Option<Algorithm<T>> {
    use crate::model::case::{Op, Variant as V};
    Some(match (op, variant) {
        (Op::Allreduce, V::Mesh) => mesh::allreduce::<T>,
        (Op::Allreduce, V::Ring) => ring::allreduce::<T>,
        (Op::Allreduce, V::Twophase) => twophase::allreduce::<T>,
        (Op::Allgather, V::Ring) => gather::ring::<T>,
        (Op::Allgather, V::Direct) => gather::direct::<T>,
        (Op::ReduceScatter, V::Ring) => scatter::ring::<T>,
        (Op::ReduceScatter, V::Direct) => scatter::direct::<T>,
        (Op::Broadcast, V::Tree) => broadcast::tree::<T>,
        (Op::Broadcast, V::ScatterAllgather) => broadcast::scatter_allgather::<T>,
        (Op::Reduce, V::Tree) => reduce::tree::<T>,
        (Op::Reduce, V::Direct) => reduce::direct::<T>,
        (Op::Alltoall, V::Pairwise) => alltoall::pairwise::<T>,
        (Op::Alltoall, V::Direct) => alltoall::direct::<T>,
        _ => return None,
    })
}

/// Run `case` with `opts`: P rank threads, warmup then timed rounds, checked as `opts.check`
/// says. `sink` receives every round in order on rank 0's thread, outside every timed region:
/// as each round ends with `CheckMode::Every`, after the last round with `CheckMode::Ends`.
/// The case must be valid (`Case::problems` empty) and `opts.timed >= 1`.
pub fn run(case: &Case, opts: &Options, sink: &mut dyn FnMut(&RoundReport)) -> Outcome {
    match case.dtype {
        Dtype::Fp32 => runner::run::<f32>(case, opts, sink),
        Dtype::Fp16 => runner::run::<f16>(case, opts, sink),
        Dtype::Bf16 => runner::run::<bf16>(case, opts, sink),
        Dtype::Int32 => runner::run::<i32>(case, opts, sink),
    }
}

#[cfg(test)]
mod tests;
