//! The mesh (one-shot) allreduce: every rank reads every peer's whole input and reduces the
//! whole vector itself.
//!
//! Owns one rank's part of one round. Inputs were published in the shared windows when they
//! were installed, and the inputs-ready barrier (timed, in `runner.rs`) is the barrier between
//! publishing and reading. It must not time, check or allocate anything.

use super::element::{reduce_sources, Element};
use super::window::Side;
use super::RankCtx;

/// Rank `ctx.rank`'s part of a mesh allreduce: `out[0..n] = Σ_q in_q[0..n]`.
pub(crate) fn allreduce<T: Element>(ctx: &mut RankCtx<'_, T>) {
    let n = ctx.count;
    let windows = ctx.windows;
    // SAFETY (race freedom): inputs are written only when installed, before a barrier every rank
    // has passed, and never during a round; this rank's output is written by this rank only and
    // read by no peer in mesh (the check reads it after the round's done-barrier).
    let dst = unsafe { windows.write(ctx.rank, Side::Output, 0..n) };
    reduce_sources(dst, ctx.p, |q| unsafe {
        windows.read(q, Side::Input, 0..n)
    });
}
