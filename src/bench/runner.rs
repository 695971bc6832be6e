//! Rank threads and rounds: setup, per-round start barrier, per-rank monotonic timing, the golden
//! check of timed rounds, and the aggregation rank 0 hands to the sink.
//!
//! Owns the round structure every variant shares:
//! `[alloc (non-persistent) | poison] → 2 barriers → timed: (inputs-ready barrier → collective →
//! done barrier) → [fault] check [release] → barrier → rank 0 reports`. The done-barrier guarantees no peer still reads a
//! rank's output when it is corrupted, checked or freed; the end barrier guarantees every rank's
//! slot is written before rank 0 reads it and that no peer reads a rank's output while it
//! poisons it for the next round. It must not print or know the protocol's text.

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::affinity;
use super::barrier::Barrier;
use super::check::{self, RankCheck, POISON};
use super::element::Element;
use super::region::Region;
use super::window::{Side, Windows};
use super::{mesh, Mismatch, Options, Outcome, RankCtx, RoundReport};
use crate::model::case::golden::{self, Golden};
use crate::model::case::{Case, Op};

/// What one rank measured in one round, read by rank 0 after the end barrier.
#[derive(Debug, Clone, Copy, Default)]
struct RankRound {
    execute: Duration,
    alloc: Duration,
    release: Duration,
    check: Duration,
    result: RankCheck,
}

struct Shared<'a, T> {
    case: &'a Case,
    opts: &'a Options,
    p: usize,
    count: usize,
    windows: Windows<T>,
    sync: Barrier,
    slots: Vec<Mutex<RankRound>>,
    /// CPUs the process may use, and where in that list the run started; rank r is bound to
    /// `cpus[(first_cpu + r) mod n]` when P <= n (see `affinity.rs`).
    cpus: Vec<usize>,
    first_cpu: usize,
    algorithm: fn(&mut RankCtx<'_, T>),
    golden: Golden,
}

fn lock(slot: &Mutex<RankRound>) -> MutexGuard<'_, RankRound> {
    // A poisoned slot only means a peer panicked; the barrier propagates that panic anyway.
    slot.lock().unwrap_or_else(|e| e.into_inner())
}

pub(super) fn run<T: Element>(
    case: &Case,
    opts: &Options,
    sink: &mut dyn FnMut(&RoundReport),
) -> Outcome {
    let started = Instant::now();
    let p = case.p as usize;
    // `bench::implements` is checked when the case is loaded; a stray one runs mesh (and
    // fails the golden of any op but allreduce).
    let algorithm = super::algorithm::<T>(case.op, case.variant).unwrap_or(mesh::allreduce::<T>);
    let cpus = affinity::allowed_cpus();
    let shared = Shared {
        case,
        opts,
        p,
        count: usize::try_from(case.count).unwrap_or(usize::MAX),
        windows: Windows::new(p),
        sync: Barrier::new(p),
        slots: (0..p).map(|_| Mutex::new(RankRound::default())).collect(),
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

/// Allocate `rank`'s windows: its input (the op's input length) from the case's formula, its
/// output (`count`: reduce_scatter keeps its ring's partial sums beside its block) poisoned.
fn fresh_buffers<T: Element>(case: &Case, rank: usize, count: usize) -> (Region<T>, Region<T>) {
    let in_len = usize::try_from(case.op.input_len(case.count, case.p)).unwrap_or(count);
    let input = Region::filled(in_len, |i| {
        T::from_f64(golden::input_value(
            &case.input_formula,
            rank as u32,
            i as u64,
        ))
    });
    let poison = T::from_f64(POISON);
    let output = Region::filled(count, |_| poison);
    (input, output)
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
        let (input, output) = fresh_buffers::<T>(sh.case, rank, sh.count);
        // SAFETY: only this rank touches its slot before the setup barrier just below.
        unsafe { sh.windows.install(rank, input, output) };
    }
    sh.sync.wait();
    let setup = started.elapsed();

    let mut report = RoundReport {
        p: sh.case.p,
        count: sh.case.count,
        per_rank_execute_s: Vec::with_capacity(sh.p),
        ..RoundReport::default()
    };
    let mut outcome = Outcome {
        timed_rounds: sh.opts.timed,
        ..Outcome::default()
    };
    let total = sh.opts.warmup + sh.opts.timed;
    for round in 1..=total {
        let round_start = Instant::now();
        let timed_round = round.checked_sub(sh.opts.warmup).filter(|n| *n > 0);
        let mut mine = RankRound::default();

        if sh.opts.persistent {
            // SAFETY: peers read this rank's output only between the start and done barriers;
            // we are past the previous round's end barrier and before this round's start.
            unsafe { sh.windows.write(rank, Side::Output, 0..sh.count) }.fill(T::from_f64(POISON));
        } else {
            let t = Instant::now();
            let (input, output) = fresh_buffers::<T>(sh.case, rank, sh.count);
            // SAFETY: only this rank touches its slot until the start barrier below.
            unsafe { sh.windows.install(rank, input, output) };
            mine.alloc = t.elapsed();
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
        (sh.algorithm)(&mut ctx);
        sh.sync.wait();
        mine.execute = t0.elapsed();

        if let Some(n) = timed_round {
            let t = Instant::now();
            // SAFETY: after the done-barrier no peer reads this rank's output until the next
            // round's start barrier, so this rank has it to itself.
            let result = result_range(sh.case, rank, sh.count);
            let out = unsafe { sh.windows.write(rank, Side::Output, result) };
            if let Some(f) = sh.opts.fault {
                if f.rank as usize == rank && f.timed_round == n {
                    check::corrupt(out);
                }
            }
            mine.result = check::check(out, &sh.golden, rank as u32);
            mine.check = t.elapsed();
        }
        if !sh.opts.persistent {
            let t = Instant::now();
            // SAFETY: no peer reads this rank's buffers after the done-barrier.
            unsafe { sh.windows.release(rank) };
            mine.release = t.elapsed();
        }
        *lock(&sh.slots[rank]) = mine;
        sh.sync.wait();

        if let Some(sink) = sink.as_deref_mut() {
            fill_report(sh, &mut report, round, timed_round, round_start);
            report.setup_s = (round == 1).then_some(setup.as_secs_f64());
            if !report.ok {
                outcome.failed_rounds += 1;
                if outcome.first_failure.is_none() {
                    outcome.first_failure = report.failure();
                }
            }
            sink(&report);
        }
    }
    outcome
}

/// Aggregate every rank's slot into `report` (rank 0, after the end barrier).
fn fill_report<T>(
    sh: &Shared<'_, T>,
    report: &mut RoundReport,
    round: u32,
    timed_round: Option<u32>,
    round_start: Instant,
) {
    report.round = round;
    report.timed = timed_round.is_some();
    report.phase_round = timed_round.unwrap_or(round);
    report.per_rank_execute_s.clear();
    let mut alloc = Duration::ZERO;
    let mut release = Duration::ZERO;
    let mut checked = Duration::ZERO;
    let mut mismatch: Option<Mismatch> = None;
    for (rank, slot) in sh.slots.iter().enumerate() {
        let r = *lock(slot);
        report.per_rank_execute_s.push(r.execute.as_secs_f64());
        alloc = alloc.max(r.alloc);
        release = release.max(r.release);
        checked = checked.max(r.check);
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
    let non_persistent = !sh.opts.persistent;
    report.alloc_s = non_persistent.then_some(alloc.as_secs_f64());
    report.release_s = non_persistent.then_some(release.as_secs_f64());
    report.check_s = timed_round.map(|_| checked.as_secs_f64());
    report.wall_s = round_start.elapsed().as_secs_f64();
}
