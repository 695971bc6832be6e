//! Synchronisation between the rank threads: a spin-then-yield barrier and a wait for a peer's
//! progress counter.
//!
//! Owns the waiting policy. Waiters spin briefly (a small message's barrier then costs well under
//! a microsecond instead of a futex round trip), then call `yield_now` so a waiter never holds a
//! core its peers need — with more ranks than cores (P = 8 on 2 cores) spinning alone would make
//! every wait last a scheduler quantum. When there are more ranks than cores the spin phase is
//! skipped entirely. A rank that panics poisons the barrier so its peers panic too instead of
//! waiting forever. It must not know about buffers or algorithms.
//!
//! Memory ordering: arriving is a release (the `AcqRel` increment, and the last arriver's
//! `Release` bump of the generation), leaving is an acquire of the generation, so every write a
//! rank made before `wait` happens-before every read any rank makes after it. The progress
//! counters follow the same release/acquire pairing.

use std::hint::spin_loop;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long a waiter spins before its first yield when every rank has a core of its own: long
/// enough to cover a peer finishing a medium chunk, short enough not to starve anyone. Time
/// based, because an iteration count means very different times in debug and release builds.
const SPIN_BUDGET: Duration = Duration::from_micros(50);
/// Spins between clock reads.
const SPINS_PER_CHECK: u32 = 64;

/// Waiting policy shared by the barrier and progress waits.
#[derive(Debug, Clone, Copy)]
struct Backoff {
    spin: bool,
}

impl Backoff {
    fn for_ranks(p: usize) -> Backoff {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Backoff { spin: p <= cores }
    }

    /// Wait until `done()`; panics if `poisoned` becomes set (a peer rank died).
    fn wait(self, poisoned: &AtomicBool, mut done: impl FnMut() -> bool) {
        if done() {
            return;
        }
        let mut spinning = self.spin;
        let started = spinning.then(Instant::now);
        let mut n = 0u32;
        while !done() {
            if poisoned.load(Ordering::Relaxed) {
                panic!("a peer rank panicked; abandoning the collective");
            }
            if spinning {
                spin_loop();
                n += 1;
                if n.is_multiple_of(SPINS_PER_CHECK) {
                    spinning = started.is_some_and(|t| t.elapsed() < SPIN_BUDGET);
                }
            } else {
                std::thread::yield_now();
            }
        }
    }
}

/// A reusable barrier for `p` rank threads, plus one progress counter per rank.
pub(crate) struct Barrier {
    p: usize,
    arrived: AtomicUsize,
    generation: AtomicUsize,
    poisoned: AtomicBool,
    progress: Vec<Padded>,
    backoff: Backoff,
}

/// A counter on its own cache line so ranks publishing progress do not slow each other down.
#[repr(align(128))]
struct Padded(AtomicU64);

impl Barrier {
    pub(crate) fn new(p: usize) -> Barrier {
        assert!(p > 0, "a barrier needs at least one rank");
        Barrier {
            p,
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
            poisoned: AtomicBool::new(false),
            progress: (0..p).map(|_| Padded(AtomicU64::new(0))).collect(),
            backoff: Backoff::for_ranks(p),
        }
    }

    /// Block until all `p` ranks have called `wait` for this generation.
    pub(crate) fn wait(&self) {
        let generation = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.p {
            // Reset before releasing: a rank can only arrive again after it sees the new
            // generation, which is published after this store.
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::Release);
            return;
        }
        self.backoff.wait(&self.poisoned, || {
            self.generation.load(Ordering::Acquire) != generation
        });
    }

    /// Publish that `rank` has completed `steps` steps (monotonic over the whole run).
    pub(crate) fn post(&self, rank: usize, steps: u64) {
        self.progress[rank].0.store(steps, Ordering::Release);
    }

    /// Block until `rank` has posted at least `steps`.
    pub(crate) fn wait_for(&self, rank: usize, steps: u64) {
        let counter = &self.progress[rank].0;
        self.backoff
            .wait(&self.poisoned, || counter.load(Ordering::Acquire) >= steps);
    }

    /// A guard that poisons the barrier if the owning thread unwinds.
    pub(crate) fn poison_on_panic(&self) -> PoisonGuard<'_> {
        PoisonGuard(self)
    }
}

/// Poisons its barrier when dropped during a panic, releasing every waiting peer.
pub(crate) struct PoisonGuard<'a>(&'a Barrier);

impl Drop for PoisonGuard<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.poisoned.store(true, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    #[test]
    fn no_rank_passes_before_all_arrive_over_many_generations() {
        // P = 8 on a 2-core box exercises the yield path; a broken barrier lets a fast rank see
        // a counter from the previous generation.
        let p = 8;
        let rounds = 200;
        let barrier = Barrier::new(p);
        let counter = AtomicU32::new(0);
        std::thread::scope(|s| {
            for _ in 0..p {
                s.spawn(|| {
                    for round in 0..rounds {
                        counter.fetch_add(1, Ordering::Relaxed);
                        barrier.wait();
                        assert_eq!(counter.load(Ordering::Relaxed), (round + 1) * p as u32);
                        barrier.wait();
                    }
                });
            }
        });
    }

    #[test]
    fn progress_wait_sees_the_posted_step() {
        let barrier = Barrier::new(2);
        let value = AtomicU32::new(0);
        std::thread::scope(|s| {
            s.spawn(|| {
                value.store(42, Ordering::Relaxed);
                barrier.post(0, 1);
            });
            barrier.wait_for(0, 1);
            assert_eq!(value.load(Ordering::Relaxed), 42);
        });
    }

    #[test]
    fn a_panicking_rank_releases_its_peers() {
        let barrier = Barrier::new(2);
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            std::thread::scope(|s| {
                s.spawn(|| {
                    let _guard = barrier.poison_on_panic();
                    panic!("rank 1 fails");
                });
                let _guard = barrier.poison_on_panic();
                barrier.wait();
            })
        }));
        assert!(result.is_err(), "the waiting rank must not hang or succeed");
    }
}
