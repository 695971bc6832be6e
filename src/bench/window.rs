//! Shared windows: every rank's input and output buffer, readable by every other rank.
//!
//! Owns the memory the ranks communicate through and the one `unsafe` contract that makes it
//! sound. Each rank owns a slot (its input and its output buffer); only the owner allocates,
//! fills or writes its slot, and any rank may read any slot. The algorithms separate every write
//! from every read of the same elements by a barrier or a release/acquire progress counter
//! (see `barrier.rs`), so no element is ever written while another thread accesses it: that is
//! the whole proof of data-race freedom, and each algorithm states which synchronisation orders
//! which access. This module must not know about algorithms, timing or the golden.
//!
//! Buffers are `Region`s (see `region.rs`: huge-page aligned) kept as raw pointer + length
//! (never as a `Vec` or `Region` behind a shared reference) so a
//! rank handing out `&mut` to its own chunk never aliases a `&` another rank holds on a
//! different chunk of the same buffer: references are only ever made to the exact element
//! range being accessed.

use std::marker::PhantomData;
use std::ops::Range;
use std::ptr;

use super::region::Region;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

/// One heap buffer published by raw parts.
struct Buffer<T> {
    ptr: AtomicPtr<T>,
    len: AtomicUsize,
}

impl<T> Buffer<T> {
    fn empty() -> Buffer<T> {
        Buffer {
            ptr: AtomicPtr::new(ptr::null_mut()),
            len: AtomicUsize::new(0),
        }
    }

    /// Replace the buffer, handing back the old one (None when there was none).
    ///
    /// # Safety
    /// No other thread may access this buffer until a barrier after this call.
    unsafe fn swap(&self, new: Region<T>) -> Option<Region<T>> {
        let (new_ptr, len) = new.into_raw();
        let old_ptr = self.ptr.swap(new_ptr, Ordering::Relaxed);
        let old_len = self.len.swap(len, Ordering::Relaxed);
        // SAFETY: `old_ptr`/`old_len` came from `Region::into_raw` in an earlier `swap`, and
        // the caller guarantees nobody else is using it.
        (!old_ptr.is_null()).then(|| unsafe { Region::from_raw(old_ptr, old_len) })
    }

    /// Replace the buffer, freeing the old one.
    ///
    /// # Safety
    /// As for [`Buffer::swap`].
    unsafe fn replace(&self, new: Region<T>) {
        // SAFETY: forwarded contract.
        drop(unsafe { self.swap(new) });
    }

    fn raw(&self, range: &Range<usize>) -> *mut T {
        let len = self.len.load(Ordering::Relaxed);
        assert!(
            range.start <= range.end && range.end <= len,
            "window range {range:?} outside buffer of {len} elements"
        );
        // SAFETY: in bounds of the live allocation (checked above); a zero-length range on an
        // empty buffer uses a dangling-but-aligned pointer below instead of null.
        let base = self.ptr.load(Ordering::Relaxed);
        if base.is_null() {
            ptr::NonNull::dangling().as_ptr()
        } else {
            unsafe { base.add(range.start) }
        }
    }
}

impl<T> Drop for Buffer<T> {
    fn drop(&mut self) {
        let p = *self.ptr.get_mut();
        if !p.is_null() {
            // SAFETY: `&mut self` means no rank is alive to use it; raw parts came from a Region.
            drop(unsafe { Region::from_raw(p, *self.len.get_mut()) });
        }
    }
}

/// Which of a rank's two buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// What the rank contributes; never written during a round.
    Input,
    /// Where the rank's result (and, for ring, partial sums peers read) goes.
    Output,
}

/// The windows of `p` ranks.
pub(crate) struct Windows<T> {
    input: Vec<Buffer<T>>,
    output: Vec<Buffer<T>>,
    _owns: PhantomData<Region<T>>,
}

// SAFETY: the buffers are plain heap memory of `T: Send + Sync`; concurrent access is governed
// by the contract of the `unsafe` accessors below (writes and reads of the same elements are
// separated by barriers or release/acquire counters).
unsafe impl<T: Send + Sync> Sync for Windows<T> {}
unsafe impl<T: Send> Send for Windows<T> {}

impl<T: Copy> Windows<T> {
    /// `p` empty slots; each rank installs its own buffers.
    pub(crate) fn new(p: usize) -> Windows<T> {
        Windows {
            input: (0..p).map(|_| Buffer::empty()).collect(),
            output: (0..p).map(|_| Buffer::empty()).collect(),
            _owns: PhantomData,
        }
    }

    fn buffer(&self, rank: usize, side: Side) -> &Buffer<T> {
        match side {
            Side::Input => &self.input[rank],
            Side::Output => &self.output[rank],
        }
    }

    /// Install `rank`'s buffers (allocating a window), freeing any previous ones.
    ///
    /// # Safety
    /// Called by `rank` only, and no thread may access `rank`'s buffers until every rank has
    /// passed a barrier after this call.
    pub(crate) unsafe fn install(&self, rank: usize, input: Region<T>, output: Region<T>) {
        // SAFETY: forwarded contract.
        unsafe {
            self.input[rank].replace(input);
            self.output[rank].replace(output);
        }
    }

    /// Free `rank`'s buffers.
    ///
    /// # Safety
    /// As for [`Windows::install`].
    pub(crate) unsafe fn release(&self, rank: usize) {
        // SAFETY: forwarded contract.
        unsafe { self.install(rank, Region::empty(), Region::empty()) }
    }

    /// Read `range` of `rank`'s buffer.
    ///
    /// # Safety
    /// No thread writes any element of `range` while the returned slice is alive: every write
    /// to it happened before a barrier or progress post the caller has since waited on, and the
    /// next write comes after a barrier the caller has not yet passed. The buffer is not
    /// replaced meanwhile.
    pub(crate) unsafe fn read(&self, rank: usize, side: Side, range: Range<usize>) -> &[T] {
        let p = self.buffer(rank, side).raw(&range);
        // SAFETY: in bounds (checked by `raw`), initialised (boxed slice of Copy), not written
        // concurrently (caller's contract).
        unsafe { std::slice::from_raw_parts(p, range.len()) }
    }

    /// Write access to `range` of `rank`'s own buffer.
    ///
    /// # Safety
    /// Called by `rank` only (or with `rank`'s consent established by a barrier), and no other
    /// thread reads or writes any element of `range` while the returned slice is alive.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn write(&self, rank: usize, side: Side, range: Range<usize>) -> &mut [T] {
        let p = self.buffer(rank, side).raw(&range);
        // SAFETY: in bounds, initialised, exclusive for the slice's lifetime (caller's contract).
        unsafe { std::slice::from_raw_parts_mut(p, range.len()) }
    }

    /// Length of `rank`'s buffers (0 when none is installed).
    #[cfg(test)]
    pub(crate) fn len(&self, rank: usize) -> usize {
        self.buffer(rank, Side::Input).len.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn region(values: &[u32]) -> Region<u32> {
        Region::filled(values.len(), |i| values[i])
    }

    #[test]
    fn install_read_write_and_replace() {
        let w: Windows<u32> = Windows::new(2);
        assert_eq!(w.len(0), 0);
        // SAFETY: single-threaded test; no concurrent access.
        unsafe {
            w.install(0, region(&[1, 2, 3]), region(&[0; 3]));
            w.install(1, region(&[4, 5, 6]), region(&[0; 3]));
            assert_eq!(w.read(1, Side::Input, 1..3), &[5, 6]);
            w.write(0, Side::Output, 0..2).copy_from_slice(&[7, 8]);
            assert_eq!(w.read(0, Side::Output, 0..3), &[7, 8, 0]);
            assert!(w.read(0, Side::Input, 3..3).is_empty());
            w.release(1);
            assert!(w.read(1, Side::Output, 0..0).is_empty());
        }
        assert_eq!(w.len(0), 3);
        assert_eq!(w.len(1), 0);
    }

    #[test]
    #[should_panic(expected = "outside buffer")]
    fn out_of_range_reads_are_refused() {
        let w: Windows<u32> = Windows::new(1);
        // SAFETY: single-threaded test.
        unsafe {
            w.install(0, region(&[1]), region(&[0]));
            let _ = w.read(0, Side::Input, 0..2);
        }
    }
}
