//! The statistics' one way of spreading work over the cores: a list cut into contiguous
//! shares, one scoped thread each, results back in the list's order. Every estimate keys its
//! own random stream, so what a caller computes does not depend on the split; only the time
//! does. A panic on a share is the caller's panic, never a share of results silently missing.

/// The threads the statistics use: the cores, at most 8.
pub(crate) fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(8))
}

/// `f` of every item, in order, computed on `threads` threads over contiguous shares.
pub(crate) fn map_in_order<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let chunk = items.len().div_ceil(threads.max(1)).max(1);
    let f = &f;
    std::thread::scope(|scope| {
        let shares: Vec<_> = (items.chunks(chunk))
            .map(|share| scope.spawn(move || share.iter().map(f).collect::<Vec<R>>()))
            .collect();
        (shares.into_iter())
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_split_gives_the_items_in_order() {
        let items: Vec<u64> = (0..37).collect();
        for threads in [0, 1, 2, 3, 8, 64] {
            let got = map_in_order(&items, threads, |x| x * x);
            let want: Vec<u64> = items.iter().map(|x| x * x).collect();
            assert_eq!(got, want, "{threads} threads");
        }
        assert!(map_in_order(&[] as &[u64], 4, |x| *x).is_empty());
    }

    #[test]
    fn a_panic_on_one_share_is_the_callers_not_a_missing_share() {
        let items: Vec<u32> = (0..10).collect();
        let caught = std::panic::catch_unwind(|| {
            map_in_order(&items, 2, |&x| {
                assert!(x != 7, "item seven");
                x
            })
        });
        assert!(caught.is_err());
    }
}
