//! The ring allreduce: a reduce-scatter in P−1 steps, each rank passing one chunk to its right
//! neighbour, then an allgather in P−1 steps passing the finished chunks around the ring.
//!
//! Owns one rank's part of one round. "Passing" is a pull through the shared windows: at each
//! step a rank reads the chunk its left neighbour produced in the previous step, after waiting
//! for that neighbour's progress counter — so a rank waits only for its neighbour, as in a real
//! ring, not for everybody. It must not time, check or allocate anything.
//!
//! Schedule for rank r (left = r−1, all indices mod P), with `base` the steps completed in
//! earlier rounds:
//! - reduce-scatter step s = 0..P−2: chunk c = r−1−s; `out_r[c] = x + in_r[c]` where x is
//!   `in_left[c]` at s = 0 and `out_left[c]` (written by left at its step s−1) after; then post
//!   `base + s + 1`. After the last step rank r holds the finished chunk r+1.
//! - one barrier: the allgather overwrites partial chunks that a slower right neighbour might
//!   still be reading in its reduce-scatter.
//! - allgather step s = 0..P−2: chunk c = r−s; `out_r[c] = out_left[c]` (left finished it in its
//!   reduce-scatter at s = 0, or copied it at its allgather step s−1); then post.

use super::chunks::{chunk_range, ring_sub};
use super::element::{reduce_sources, Element};
use super::window::Side;
use super::RankCtx;

/// Rank `ctx.rank`'s part of a ring allreduce.
pub(crate) fn allreduce<T: Element>(ctx: &mut RankCtx<'_, T>) {
    let (r, p, n) = (ctx.rank, ctx.p, ctx.count);
    let windows = ctx.windows;
    let left = ring_sub(r, 1, p);
    let base = ctx.ring_steps;
    let hops = (p - 1) as u64;

    for s in 0..p - 1 {
        let c = ring_sub(r, 1 + s, p);
        let range = chunk_range(n, p, c);
        let step = s as u64;
        // Left posts base + s after finishing its step s − 1 (at s = 0 this holds already).
        ctx.sync.wait_for(left, base + step);
        let from = if s == 0 { Side::Input } else { Side::Output };
        // SAFETY (race freedom): left wrote out_left[c] before posting the counter we just
        // acquired and never writes chunk c again this reduce-scatter (each chunk is written
        // once per phase); inputs are never written during a round; out_r[c] is written only by
        // this rank, and read by the right neighbour only after our post below.
        let incoming = unsafe { windows.read(left, from, range.clone()) };
        let own = unsafe { windows.read(r, Side::Input, range.clone()) };
        let dst = unsafe { windows.write(r, Side::Output, range) };
        reduce_sources(dst, 2, |k| if k == 0 { incoming } else { own });
        ctx.sync.post(r, base + step + 1);
    }

    ctx.sync.wait();

    for s in 0..p - 1 {
        let c = ring_sub(r, s, p);
        let range = chunk_range(n, p, c);
        let step = hops + s as u64;
        ctx.sync.wait_for(left, base + step);
        // SAFETY (race freedom): out_left[c] is final (finished in left's reduce-scatter, before
        // the barrier above, or copied at its previous allgather step, before the post we just
        // acquired) and left never writes chunk c again this round; this rank writes chunk c of
        // its own output once, and the right neighbour reads it only after our post below.
        let incoming = unsafe { windows.read(left, Side::Output, range.clone()) };
        let dst = unsafe { windows.write(r, Side::Output, range) };
        dst.copy_from_slice(incoming);
        ctx.sync.post(r, base + step + 1);
    }

    ctx.ring_steps = base + 2 * hops;
}
