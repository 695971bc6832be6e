//! Allgather: every rank contributes a block of `c = count / p` elements and ends with all `p`
//! blocks in rank order (`out[q·c..(q+1)·c] = in_q`).
//!
//! Two algorithms, one rank's part of one round each (they must not time, check or allocate):
//! - `ring`: P−1 steps; at step s rank r copies block r−1−s from its left neighbour's output
//!   (which the neighbour finished at its step s−1, or is its own block at s = 0) after waiting
//!   for that neighbour's progress counter — bandwidth-optimal, latency P−1 hops.
//! - `direct`: rank r copies every peer's input block straight into its output (one hop,
//!   P−1 concurrent readers per buffer), starting at the next rank so ranks spread their reads.

use super::chunks::ring_sub;
use super::element::Element;
use super::window::Side;
use super::RankCtx;

/// Copy this rank's own input block into its place in its output.
fn own_block<T: Element>(ctx: &RankCtx<'_, T>, c: usize) {
    let r = ctx.rank;
    // SAFETY (race freedom): inputs are never written during a round; block r of this rank's
    // output is written by this rank only, and read by peers only after the post that follows.
    let src = unsafe { ctx.windows.read(r, Side::Input, 0..c) };
    let dst = unsafe { ctx.windows.write(r, Side::Output, r * c..(r + 1) * c) };
    dst.copy_from_slice(src);
}

/// Rank `ctx.rank`'s part of a ring allgather.
pub(crate) fn ring<T: Element>(ctx: &mut RankCtx<'_, T>) {
    let (r, p) = (ctx.rank, ctx.p);
    let c = ctx.count / p;
    let left = ring_sub(r, 1, p);
    let base = ctx.ring_steps;
    own_block(ctx, c);
    ctx.sync.post(r, base + 1);
    for s in 0..p - 1 {
        let k = ring_sub(r, 1 + s, p);
        let step = base + s as u64 + 1;
        ctx.sync.wait_for(left, step);
        // SAFETY (race freedom): left wrote block k of its output before posting `step` and
        // never writes it again this round; this rank writes block k of its own output once,
        // and the right neighbour reads it only after our post below.
        let src = unsafe { ctx.windows.read(left, Side::Output, k * c..(k + 1) * c) };
        let dst = unsafe { ctx.windows.write(r, Side::Output, k * c..(k + 1) * c) };
        dst.copy_from_slice(src);
        ctx.sync.post(r, step + 1);
    }
    ctx.ring_steps = base + p as u64;
}

/// Rank `ctx.rank`'s part of a direct allgather.
pub(crate) fn direct<T: Element>(ctx: &mut RankCtx<'_, T>) {
    let (r, p) = (ctx.rank, ctx.p);
    let c = ctx.count / p;
    own_block(ctx, c);
    for k in 1..p {
        let q = (r + k) % p;
        // SAFETY (race freedom): peers' inputs are never written during a round; block q of
        // this rank's output is written by this rank only and read by no peer in `direct`.
        let src = unsafe { ctx.windows.read(q, Side::Input, 0..c) };
        let dst = unsafe { ctx.windows.write(r, Side::Output, q * c..(q + 1) * c) };
        dst.copy_from_slice(src);
    }
}
