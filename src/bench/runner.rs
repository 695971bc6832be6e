//! Rank threads and rounds: setup, per-round start barrier, per-rank monotonic timing, the golden
//! check, and the aggregation rank 0 hands to the sink.
//!
//! Owns the round structure every variant shares:
//! `[alloc (non-persistent) | poison (check every)] → 2 barriers → timed: (inputs-ready barrier →
//! collective → done barrier) → [fault] [check] [release] → store the times`, and, with
//! `CheckMode::Every`, an end barrier after which rank 0 reports the round. With
//! `CheckMode::Ends` (the default) only the first round and the last timed round are checked,
//! only the last round's output is poisoned again (in place, before its start barriers, like
//! every round of `CheckMode::Every`), there is no end barrier, and rank 0 reports every round
//! after the last one: between two timed rounds a rank only stores its time. The done barrier
//! guarantees no peer still reads a rank's output when it is corrupted, checked or poisoned
//! (a rank writes only its own output); the end barrier (per round, or once after the last)
//! guarantees every rank's record is written before rank 0 reads it.
//!
//! The last round once wrote into a spare output window poisoned at setup: cold in the caches
//! and the TLB after every earlier round had used the other window, so the host stack's last
//! timed round was 1.2–2× the others (issue 44, item 1). Poisoning the window in use leaves
//! the last round the same memory, as warm as every round before it.
//! round. It must not print or know the protocol's text.

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::affinity;
use super::barrier::Barrier;
use super::check::{self, RankCheck, POISON};
use super::element::Element;
use super::region::Region;
use super::window::{Side, Windows};
use super::{mesh, CheckMode, Mismatch, Options, Outcome, RankCtx, RoundReport};
use crate::model::case::golden::{self, Golden};
use crate::model::case::{Case, Op};

/// What one rank measured in one round, read by rank 0 after an end barrier.
#[derive(Debug, Clone, Copy, Default)]
struct RankRound {
    execute: Duration,
    alloc: Duration,
    release: Duration,
    /// The golden check's time; None when this round was not checked.
    check: Option<Duration>,
    result: RankCheck,
    /// From the round's start to the end of this rank's own work in it.
    wall: Duration,
}

struct Shared<'a, T> {
    case: &'a Case,
    opts: &'a Options,
    p: usize,
    count: usize,
    windows: Windows<T>,
    sync: Barrier,
    /// Every round's record of each rank, in round order (reserved up front, so storing one
    /// between timed rounds never allocates).
    slots: Vec<Mutex<Vec<RankRound>>>,
    /// CPUs the process may use, and where in that list the run started; rank r is bound to
    /// `cpus[(first_cpu + r) mod n]` when P <= n (see `affinity.rs`).
    cpus: Vec<usize>,
    first_cpu: usize,
    algorithm: fn(&mut RankCtx<'_, T>),
    golden: Golden,
}

fn lock(slot: &Mutex<Vec<RankRound>>) -> MutexGuard<'_, Vec<RankRound>> {
    // A poisoned slot only means a peer panicked; the barrier propagates that panic anyway.
    slot.lock().unwrap_or_else(|e| e.into_inner())
}

pub(super) fn run<T: Element>(
    case: &Case,
    opts: &Options,
    sink: &mut dyn FnMut(&RoundReport),
) -> Outcome {
    // `bench::implements` is checked when the case is loaded; a stray one runs mesh (and
    // fails the golden of any op but allreduce).
    let algorithm = super::algorithm::<T>(case.op, case.variant).unwrap_or(mesh::allreduce::<T>);
    run_algorithm(case, opts, algorithm, sink)
}

/// `run` with `algorithm` as every rank's part of a round (the tests pass broken ones).
pub(super) fn run_algorithm<T: Element>(
    case: &Case,
    opts: &Options,
    algorithm: fn(&mut RankCtx<'_, T>),
    sink: &mut dyn FnMut(&RoundReport),
) -> Outcome {
    let started = Instant::now();
    let p = case.p as usize;
    let cpus = affinity::allowed_cpus();
    let total = (opts.warmup + opts.timed) as usize;
    let shared = Shared {
        case,
        opts,
        p,
        count: usize::try_from(case.count).unwrap_or(usize::MAX),
        windows: Windows::new(p),
        sync: Barrier::new(p),
        slots: (0..p)
            .map(|_| Mutex::new(Vec::with_capacity(total)))
            .collect(),
        first_cpu: affinity::current_index(&cpus),
        cpus,
        algorithm,
        golden: Golden::of(case),
    };
    std::thread::scope(|s| {
        for rank in 1..p {
            let shared = &shared;
            s.spawn(move || {
                rank_main(shared, rank, started, None);
            });
        }
        rank_main(&shared, 0, started, Some(sink))
    })
}

/// `rank`'s input window (the op's input length), filled from the case's formula.
fn fresh_input<T: Element>(case: &Case, rank: usize, count: usize) -> Region<T> {
    let in_len = usize::try_from(case.op.input_len(case.count, case.p)).unwrap_or(count);
    Region::filled(in_len, |i| {
        T::from_f64(golden::input_value(
            &case.input_formula,
            rank as u32,
            i as u64,
        ))
    })
}

/// An output window of `count` elements (reduce_scatter keeps its ring's partial sums beside
/// its block), poisoned.
fn poisoned_output<T: Element>(count: usize) -> Region<T> {
    let poison = T::from_f64(POISON);
    Region::filled(count, |_| poison)
}

/// Where `rank`'s result lies in its output window: its own block for reduce_scatter, the
/// whole window for every other op.
fn result_range(case: &Case, rank: usize, count: usize) -> std::ops::Range<usize> {
    match case.op {
        Op::ReduceScatter => {
            let c = usize::try_from(case.op.output_len(case.count, case.p)).unwrap_or(0);
            rank * c..(rank + 1) * c
        }
        _ => 0..count,
    }
}

/// What round `round` does besides the collective.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RoundPlan {
    /// 1-based within the timed rounds; None for a warmup round.
    timed_round: Option<u32>,
    /// Compare the output with the golden after the round.
    check: bool,
    /// Poison the (persistent) output before the round.
    poison: bool,
}

impl RoundPlan {
    fn of(opts: &Options, round: u32) -> RoundPlan {
        let total = opts.warmup + opts.timed;
        let every = opts.check == CheckMode::Every;
        RoundPlan {
            timed_round: round.checked_sub(opts.warmup).filter(|n| *n > 0),
            check: opts.check.checks(round, total),
            // Setup poisoned the output for round 1; non-persistent windows are fresh. With
            // `Ends`, the last round is poisoned so that it must write what its check reads.
            poison: opts.persistent && round > 1 && (every || round == total),
        }
    }
}

/// One rank's whole run. Rank 0 also aggregates and reports; it returns the outcome.
fn rank_main<T: Element>(
    sh: &Shared<'_, T>,
    rank: usize,
    started: Instant,
    mut sink: Option<&mut dyn FnMut(&RoundReport)>,
) -> Outcome {
    let _guard = sh.sync.poison_on_panic();
    // Bound before allocating, so first-touch puts the rank's windows near its core.
    let _binding =
        affinity::bind_current_thread(affinity::cpu_for(rank, sh.p, &sh.cpus, sh.first_cpu));
    let mut ctx = RankCtx {
        rank,
        p: sh.p,
        count: sh.count,
        root: sh.case.root.unwrap_or(0) as usize,
        windows: &sh.windows,
        sync: &sh.sync,
        ring_steps: 0,
    };
    if sh.opts.persistent {
        let input = fresh_input::<T>(sh.case, rank, sh.count);
        // SAFETY: only this rank touches its slot before the setup barrier just below.
        unsafe { sh.windows.install(rank, input, poisoned_output(sh.count)) };
    }
    sh.sync.wait();
    let setup = started.elapsed();

    let mut reporter = Reporter::new(sh, setup);
    let total = sh.opts.warmup + sh.opts.timed;
    let streaming = sh.opts.check == CheckMode::Every;
    for round in 1..=total {
        let plan = RoundPlan::of(sh.opts, round);
        let mine = one_round(sh, &mut ctx, plan);
        lock(&sh.slots[rank]).push(mine);
        if streaming {
            sh.sync.wait();
            if let Some(sink) = sink.as_deref_mut() {
                reporter.report(round, sink);
            }
        }
    }
    if !streaming {
        sh.sync.wait();
        if let Some(sink) = sink {
            for round in 1..=total {
                reporter.report(round, sink);
            }
        }
    }
    reporter.outcome
}

/// One round of one rank: prepare the windows, the timed collective, then (outside the timed
/// region) the fault, the check and the release the plan asks for.
fn one_round<T: Element>(
    sh: &Shared<'_, T>,
    ctx: &mut RankCtx<'_, T>,
    plan: RoundPlan,
) -> RankRound {
    let rank = ctx.rank;
    let round_start = Instant::now();
    let mut mine = RankRound::default();
    if !sh.opts.persistent {
        let t = Instant::now();
        let (input, output) = (
            fresh_input::<T>(sh.case, rank, sh.count),
            poisoned_output::<T>(sh.count),
        );
        // SAFETY: only this rank touches its slot until the start barrier below.
        unsafe { sh.windows.install(rank, input, output) };
        mine.alloc = t.elapsed();
    } else if plan.poison {
        // SAFETY: peers read this rank's output only between the start and done barriers;
        // we are past the previous round's done barrier and before this round's start.
        unsafe { sh.windows.write(rank, Side::Output, 0..sh.count) }.fill(T::from_f64(POISON));
    }

    // Two barriers: the first absorbs ranks waking from a yield (slow when the machine is
    // busy); at the second every rank is awake and spinning, so all leave it within
    // nanoseconds of each other and no rank's execute_s includes a peer's wake-up.
    sh.sync.wait();
    sh.sync.wait();
    // The timed region is what a zero-copy shared-memory allreduce call costs a caller: it
    // must first learn that every peer's input is ready (the "inputs published" barrier —
    // the algorithms read peers' buffers in place), and it may return only once no peer
    // still reads its buffers (the done barrier), since the caller owns them again after
    // the call. Leaving both outside would time mesh as a local reduction with no
    // synchronisation at all, and make the host stack look faster than MPI_Allreduce
    // (whose per-rank time includes its own synchronisation) for the wrong reason.
    let t0 = Instant::now();
    sh.sync.wait();
    (sh.algorithm)(ctx);
    sh.sync.wait();
    mine.execute = t0.elapsed();

    let spoiled = sh
        .opts
        .fault
        .is_some_and(|f| f.hits(rank, plan.timed_round));
    if spoiled || plan.check {
        let t = Instant::now();
        // SAFETY: after the done-barrier no peer reads this rank's output until the next
        // round's start barrier, so this rank has it to itself.
        let result = result_range(sh.case, rank, sh.count);
        let out = unsafe { sh.windows.write(rank, Side::Output, result) };
        if spoiled {
            check::corrupt(out);
        }
        if plan.check {
            mine.result = check::check(out, &sh.golden, rank as u32);
            mine.check = Some(t.elapsed());
        }
    }
    if !sh.opts.persistent {
        let t = Instant::now();
        // SAFETY: no peer reads this rank's buffers after the done-barrier.
        unsafe { sh.windows.release(rank) };
        mine.release = t.elapsed();
    }
    mine.wall = round_start.elapsed();
    mine
}

/// Rank 0's aggregation of the ranks' records into round reports and the outcome.
struct Reporter<'s, 'a, T> {
    sh: &'s Shared<'a, T>,
    setup: Duration,
    report: RoundReport,
    outcome: Outcome,
}

impl<'s, 'a, T> Reporter<'s, 'a, T> {
    fn new(sh: &'s Shared<'a, T>, setup: Duration) -> Self {
        Reporter {
            sh,
            setup,
            report: RoundReport {
                p: sh.case.p,
                count: sh.case.count,
                per_rank_execute_s: Vec::with_capacity(sh.p),
                ..RoundReport::default()
            },
            outcome: Outcome {
                timed_rounds: sh.opts.timed,
                rounds: sh.opts.warmup + sh.opts.timed,
                ..Outcome::default()
            },
        }
    }

    /// Aggregate round `round` (every rank's record of it is stored) and hand it to `sink`.
    fn report(&mut self, round: u32, sink: &mut dyn FnMut(&RoundReport)) {
        let plan = RoundPlan::of(self.sh.opts, round);
        fill_report(self.sh, &mut self.report, round, plan.timed_round);
        self.report.setup_s = (round == 1).then_some(self.setup.as_secs_f64());
        let outcome = &mut self.outcome;
        if self.report.checked {
            outcome.checked_rounds += 1;
        }
        if let Some(m) = &self.report.mismatch {
            outcome.failed_rounds += 1;
            outcome.wrong_total += m.wrong_total;
            if outcome.first_failure.is_none() {
                outcome.first_failure = self.report.failure();
            }
        }
        sink(&self.report);
    }
}

/// Aggregate every rank's record of `round` into `report` (rank 0, after an end barrier).
fn fill_report<T>(
    sh: &Shared<'_, T>,
    report: &mut RoundReport,
    round: u32,
    timed_round: Option<u32>,
) {
    report.round = round;
    report.timed = timed_round.is_some();
    report.phase_round = timed_round.unwrap_or(round);
    report.per_rank_execute_s.clear();
    let mut alloc = Duration::ZERO;
    let mut release = Duration::ZERO;
    let mut checked: Option<Duration> = None;
    let mut wall = Duration::ZERO;
    let mut mismatch: Option<Mismatch> = None;
    for (rank, slot) in sh.slots.iter().enumerate() {
        let r = lock(slot)[round as usize - 1];
        report.per_rank_execute_s.push(r.execute.as_secs_f64());
        alloc = alloc.max(r.alloc);
        release = release.max(r.release);
        if let Some(c) = r.check {
            checked = Some(checked.unwrap_or_default().max(c));
        }
        // The slowest rank's whole round: each rank's wall holds its own execute, so the
        // round's wall_s is never below its execute_s (rank 0's alone can be, when a peer is
        // preempted between leaving the done barrier and reading its clock).
        wall = wall.max(r.wall);
        if r.result.wrong == 0 {
            continue;
        }
        match (&mut mismatch, r.result.first) {
            (Some(m), _) => {
                m.wrong_total += r.result.wrong;
                m.ranks_wrong += 1;
            }
            (None, Some(first)) => {
                mismatch = Some(Mismatch {
                    rank: rank as u32,
                    first,
                    wrong_on_rank: r.result.wrong,
                    wrong_total: r.result.wrong,
                    ranks_wrong: 1,
                })
            }
            (None, None) => {}
        }
    }
    report.execute_s = report
        .per_rank_execute_s
        .iter()
        .copied()
        .fold(0.0, f64::max);
    report.ok = mismatch.is_none();
    report.mismatch = mismatch;
    report.checked = checked.is_some();
    let non_persistent = !sh.opts.persistent;
    report.alloc_s = non_persistent.then_some(alloc.as_secs_f64());
    report.release_s = non_persistent.then_some(release.as_secs_f64());
    report.check_s = checked.map(|c| c.as_secs_f64());
    report.wall_s = wall.as_secs_f64();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(warmup: u32, timed: u32, check: CheckMode, persistent: bool) -> Options {
        Options {
            warmup,
            timed,
            persistent,
            check,
            fault: None,
        }
    }

    /// (checked, poisoned before) of every round.
    fn plans(o: &Options) -> Vec<(bool, bool)> {
        (1..=o.warmup + o.timed)
            .map(|r| RoundPlan::of(o, r))
            .map(|p| (p.check, p.poison))
            .collect()
    }

    #[test]
    fn ends_checks_the_first_and_last_round_and_does_nothing_between_timed_rounds() {
        let o = opts(2, 3, CheckMode::Ends, true);
        let f = false;
        assert_eq!(
            plans(&o),
            vec![(true, f), (f, f), (f, f), (f, f), (true, true)]
        );
        // One round in all: it is first and last, checked once, in the setup's poisoned window.
        let one = opts(0, 1, CheckMode::Ends, true);
        assert_eq!(plans(&one), vec![(true, f)]);
        // Fresh windows every round need no poison.
        let fresh = opts(1, 2, CheckMode::Ends, false);
        assert_eq!(plans(&fresh), vec![(true, f), (f, f), (true, f)]);
    }

    #[test]
    fn every_checks_and_repoisons_around_every_round() {
        let o = opts(1, 2, CheckMode::Every, true);
        assert_eq!(plans(&o), vec![(true, false), (true, true), (true, true)]);
        let timed: Vec<Option<u32>> = (1..=3).map(|r| RoundPlan::of(&o, r).timed_round).collect();
        assert_eq!(timed, vec![None, Some(1), Some(2)]);
    }
}
