//! Broadcast: every rank's output becomes the root's input.
//!
//! Two algorithms, one rank's part of one round each (they must not time, check or allocate):
//! - `tree`: a binomial tree over ranks relative to the root (v = r − root): v's parent is v
//!   with its lowest set bit cleared; a rank waits for its parent's progress counter, copies the
//!   parent's whole output and posts — ⌈log2 P⌉ hops of the whole message.
//! - `scatter_allgather` (van de Geijn): rank r copies chunk r of the root's input, a barrier,
//!   then copies every other chunk q from rank q's output — two hops of 1/P of the message each
//!   per rank, better for large messages.

use super::chunks::{chunk_range, ring_sub};
use super::element::Element;
use super::window::Side;
use super::RankCtx;

/// Rank `ctx.rank`'s part of a binomial-tree broadcast.
pub(crate) fn tree<T: Element>(ctx: &mut RankCtx<'_, T>) {
    let (r, p, n) = (ctx.rank, ctx.p, ctx.count);
    let base = ctx.ring_steps;
    let v = ring_sub(r, ctx.root, p);
    // SAFETY (race freedom): the source is the root's input (never written during a round) or
    // the parent's output, finished before the parent's post we acquire and not written again
    // this round; this rank's output is written only here, and children read it only after
    // our post below.
    let src = if v == 0 {
        unsafe { ctx.windows.read(r, Side::Input, 0..n) }
    } else {
        let parent = (v & (v - 1)) + ctx.root;
        let parent = parent % p;
        ctx.sync.wait_for(parent, base + 1);
        unsafe { ctx.windows.read(parent, Side::Output, 0..n) }
    };
    let dst = unsafe { ctx.windows.write(r, Side::Output, 0..n) };
    dst.copy_from_slice(src);
    ctx.sync.post(r, base + 1);
    ctx.ring_steps = base + 1;
}

/// Rank `ctx.rank`'s part of a scatter + allgather broadcast.
pub(crate) fn scatter_allgather<T: Element>(ctx: &mut RankCtx<'_, T>) {
    let (r, p, n) = (ctx.rank, ctx.p, ctx.count);
    let mine = chunk_range(n, p, r);
    // Scatter. SAFETY (race freedom): the root's input is never written during a round; chunk
    // r of this rank's output is written only by this rank and read by peers after the barrier.
    let src = unsafe { ctx.windows.read(ctx.root, Side::Input, mine.clone()) };
    let dst = unsafe { ctx.windows.write(r, Side::Output, mine) };
    dst.copy_from_slice(src);
    ctx.sync.wait();
    // Allgather. SAFETY (race freedom): chunk q of rank q's output was finished before the
    // barrier and is not written again this round; this rank writes chunks q != r of its own
    // output, which no peer reads in this phase.
    for k in 1..p {
        let q = (r + k) % p;
        let range = chunk_range(n, p, q);
        let src = unsafe { ctx.windows.read(q, Side::Output, range.clone()) };
        let dst = unsafe { ctx.windows.write(r, Side::Output, range) };
        dst.copy_from_slice(src);
    }
}
