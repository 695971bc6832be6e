//! The twophase allreduce: a mesh reduce-scatter (rank r reduces chunk r from every peer's
//! input), a barrier, then a mesh allgather (rank r copies chunk q from rank q's output).
//!
//! Owns one rank's part of one round. It must not time, check or allocate anything.

use super::chunks::chunk_range;
use super::element::{reduce_sources, Element};
use super::window::Side;
use super::RankCtx;

/// Rank `ctx.rank`'s part of a twophase allreduce.
pub(crate) fn allreduce<T: Element>(ctx: &mut RankCtx<'_, T>) {
    let (r, p, n) = (ctx.rank, ctx.p, ctx.count);
    let windows = ctx.windows;

    // Phase 1, reduce-scatter. SAFETY (race freedom): inputs are never written during a round;
    // chunk r of this rank's output is written only by this rank, and no peer reads it until
    // after the barrier below.
    let mine = chunk_range(n, p, r);
    let dst = unsafe { windows.write(r, Side::Output, mine.clone()) };
    reduce_sources(dst, p, |q| unsafe {
        windows.read(q, Side::Input, mine.clone())
    });

    ctx.sync.wait();

    // Phase 2, allgather, starting at the next rank so ranks do not all read the same peer at
    // once. SAFETY (race freedom): chunk q of rank q's output was completed before the barrier
    // above and is not written again until after the round's done-barrier; this rank writes only
    // chunks q != r of its own output, which no peer reads in this phase.
    for k in 1..p {
        let q = (r + k) % p;
        let range = chunk_range(n, p, q);
        let src = unsafe { windows.read(q, Side::Output, range.clone()) };
        let dst = unsafe { windows.write(r, Side::Output, range) };
        dst.copy_from_slice(src);
    }
}
