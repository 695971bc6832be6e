//! Reduce: the root's output becomes the element-wise sum of every rank's input (other ranks'
//! outputs are scratch, not checked).
//!
//! Two algorithms, one rank's part of one round each (they must not time, check or allocate):
//! - `tree`: a binomial tree over ranks relative to the root (v = r − root): v's children are
//!   v + m for each power of two m below v's lowest set bit. A rank waits for its children,
//!   sums its input with their partial sums (a leaf's partial sum is its input, read in place)
//!   into its output and posts — ⌈log2 P⌉ hops.
//! - `direct`: the root sums every rank's input itself (one hop, P sources); the others only
//!   publish their inputs.

use super::chunks::ring_sub;
use super::element::{reduce_sources, Element};
use super::window::Side;
use super::RankCtx;

/// Relative ranks of v's children in a binomial tree of `p`.
fn children(v: usize, p: usize) -> impl Iterator<Item = usize> {
    let limit = if v == 0 { p } else { v & v.wrapping_neg() };
    (0..usize::BITS)
        .map(|b| 1usize << b)
        .take_while(move |m| *m < limit && v + m < p)
        .map(move |m| v + m)
}

/// Rank `ctx.rank`'s part of a binomial-tree reduce.
pub(crate) fn tree<T: Element>(ctx: &mut RankCtx<'_, T>) {
    let (r, p, n, root) = (ctx.rank, ctx.p, ctx.count, ctx.root);
    let base = ctx.ring_steps;
    let v = ring_sub(r, root, p);
    let kids: Vec<(usize, bool)> = children(v, p)
        .map(|c| ((c + root) % p, children(c, p).next().is_none()))
        .collect();
    if !kids.is_empty() {
        for (kid, _) in &kids {
            ctx.sync.wait_for(*kid, base + 1);
        }
        // SAFETY (race freedom): a child's partial sum (its output, or a leaf's input) was
        // finished before the post we acquired and is not written again this round; inputs are
        // never written during a round; this rank's output is written only here and read by
        // its parent only after our post below.
        let own = unsafe { ctx.windows.read(r, Side::Input, 0..n) };
        let parts: Vec<&[T]> = kids
            .iter()
            .map(|(kid, leaf)| {
                let side = if *leaf { Side::Input } else { Side::Output };
                unsafe { ctx.windows.read(*kid, side, 0..n) }
            })
            .collect();
        let dst = unsafe { ctx.windows.write(r, Side::Output, 0..n) };
        reduce_sources(dst, 1 + parts.len(), |i| {
            if i == 0 {
                own
            } else {
                parts[i - 1]
            }
        });
    } else if v == 0 {
        // P = 1 cannot happen (p ≥ 2), but a lone root's result is its input.
        let own = unsafe { ctx.windows.read(r, Side::Input, 0..n) };
        unsafe { ctx.windows.write(r, Side::Output, 0..n) }.copy_from_slice(own);
    }
    ctx.sync.post(r, base + 1);
    ctx.ring_steps = base + 1;
}

/// Rank `ctx.rank`'s part of a direct reduce.
pub(crate) fn direct<T: Element>(ctx: &mut RankCtx<'_, T>) {
    if ctx.rank != ctx.root {
        return;
    }
    let n = ctx.count;
    // SAFETY (race freedom): inputs are never written during a round; the root's output is
    // written by the root only and read by no peer.
    let dst = unsafe { ctx.windows.write(ctx.rank, Side::Output, 0..n) };
    reduce_sources(dst, ctx.p, |q| unsafe {
        ctx.windows.read(q, Side::Input, 0..n)
    });
}

#[cfg(test)]
mod tests {
    use super::children;

    #[test]
    fn binomial_children_cover_every_rank_once() {
        for p in 2..=17 {
            let mut seen = vec![0u32; p];
            for v in 0..p {
                for c in children(v, p) {
                    seen[c] += 1;
                }
            }
            assert_eq!(seen[0], 0, "p {p}");
            assert!(seen[1..].iter().all(|s| *s == 1), "p {p}: {seen:?}");
        }
        assert_eq!(children(0, 8).collect::<Vec<_>>(), vec![1, 2, 4]);
        assert_eq!(children(4, 8).collect::<Vec<_>>(), vec![5, 6]);
        assert_eq!(children(6, 8).collect::<Vec<_>>(), vec![7]);
    }
}
