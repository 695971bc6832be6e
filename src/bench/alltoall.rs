//! Alltoall: block b (`c = count / p` elements) of rank r's input goes to rank b, where it
//! lands as block r (`out_b[r·c..] = in_r[b·c..]`).
//!
//! Two algorithms, one rank's part of one round each (they must not time, check or allocate);
//! both pull a peer's block straight from its input (one hop each):
//! - `pairwise`: P−1 steps; at step s rank r takes its block from rank r−s, so at every step
//!   each rank's input is read by exactly one peer (the pairwise exchange of MPI libraries).
//! - `direct`: rank r takes its blocks from ranks 0, 1, …, P−1 in that order, so every rank
//!   reads rank 0 first — the naive schedule, with P readers contending on one buffer.

use super::chunks::ring_sub;
use super::element::Element;
use super::window::Side;
use super::RankCtx;

/// Copy block `r` of rank `q`'s input into block `q` of this rank's output.
fn take<T: Element>(ctx: &RankCtx<'_, T>, q: usize, c: usize) {
    let r = ctx.rank;
    // SAFETY (race freedom): inputs are never written during a round; block q of this rank's
    // output is written by this rank only and read by no peer.
    let src = unsafe { ctx.windows.read(q, Side::Input, r * c..(r + 1) * c) };
    let dst = unsafe { ctx.windows.write(r, Side::Output, q * c..(q + 1) * c) };
    dst.copy_from_slice(src);
}

/// Rank `ctx.rank`'s part of a pairwise-exchange alltoall.
pub(crate) fn pairwise<T: Element>(ctx: &mut RankCtx<'_, T>) {
    let c = ctx.count / ctx.p;
    for s in 0..ctx.p {
        take(ctx, ring_sub(ctx.rank, s, ctx.p), c);
    }
}

/// Rank `ctx.rank`'s part of a direct alltoall.
pub(crate) fn direct<T: Element>(ctx: &mut RankCtx<'_, T>) {
    let c = ctx.count / ctx.p;
    for q in 0..ctx.p {
        take(ctx, q, c);
    }
}
