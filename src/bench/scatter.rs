//! Reduce_scatter: every rank contributes `count` elements and ends with its own block
//! `r·c..(r+1)·c` (`c = count / p`) of the element-wise sum.
//!
//! The result lands in that block of the rank's `count`-element output window (the other blocks
//! are the ring's scratch: the partial sums a neighbour reads). Two algorithms, one rank's part
//! of one round each (they must not time, check or allocate):
//! - `ring`: P−1 steps; at step s rank r adds its input block r−2−s to the partial sum of that
//!   block its left neighbour made at its step s−1 (its input at s = 0), so the last step
//!   finishes block r — bandwidth-optimal, P−1 hops.
//! - `direct`: rank r sums block r of every rank's input itself (one hop, P sources).

use super::chunks::ring_sub;
use super::element::{reduce_sources, Element};
use super::window::Side;
use super::RankCtx;

/// Rank `ctx.rank`'s part of a ring reduce_scatter.
pub(crate) fn ring<T: Element>(ctx: &mut RankCtx<'_, T>) {
    let (r, p) = (ctx.rank, ctx.p);
    let c = ctx.count / p;
    let left = ring_sub(r, 1, p);
    let base = ctx.ring_steps;
    for s in 0..p - 1 {
        let k = ring_sub(r, 2 + s, p);
        let range = k * c..(k + 1) * c;
        let step = base + s as u64;
        ctx.sync.wait_for(left, step);
        let from = if s == 0 { Side::Input } else { Side::Output };
        // SAFETY (race freedom): left wrote block k of its output at its step s − 1, before the
        // post we just acquired, and writes each block at most once per round; inputs are never
        // written during a round; block k of this rank's output is written only here, and the
        // right neighbour reads it only after our post below (the last block, r, nobody reads).
        let incoming = unsafe { ctx.windows.read(left, from, range.clone()) };
        let own = unsafe { ctx.windows.read(r, Side::Input, range.clone()) };
        let dst = unsafe { ctx.windows.write(r, Side::Output, range) };
        reduce_sources(dst, 2, |i| if i == 0 { incoming } else { own });
        ctx.sync.post(r, step + 1);
    }
    ctx.ring_steps = base + p as u64 - 1;
}

/// Rank `ctx.rank`'s part of a direct reduce_scatter.
pub(crate) fn direct<T: Element>(ctx: &mut RankCtx<'_, T>) {
    let (r, p) = (ctx.rank, ctx.p);
    let c = ctx.count / p;
    let range = r * c..(r + 1) * c;
    // SAFETY (race freedom): inputs are never written during a round; block r of this rank's
    // output is written by this rank only and read by no peer.
    let dst = unsafe { ctx.windows.write(r, Side::Output, range.clone()) };
    reduce_sources(dst, p, |q| unsafe {
        ctx.windows.read(q, Side::Input, range.clone())
    });
}
