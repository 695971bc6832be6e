//! Window memory: one heap allocation of `len` elements, aligned to 2 MiB and advised to use
//! transparent huge pages once it spans a huge page.
//!
//! Owns allocation, first touch and release of the buffers the ranks share. Why: a 4 MiB window
//! in 4 KiB pages takes a TLB miss (and a hardware-prefetcher restart) every 4 KiB, and the
//! working set of a P = 2 round (four 4 MiB buffers) is more pages than the core's L2 TLB holds.
//! With THP in `madvise` mode (Debian's default) a plain `Vec` gets no huge pages at all; the
//! 2 MiB alignment lets every byte of the buffer be covered by them, not only its aligned
//! interior. The advice is only advice: where THP is off or the call fails, the buffer works the
//! same in small pages. It must not know about ranks, windows or algorithms.

use std::alloc::{self, Layout};
use std::ptr::NonNull;

/// Transparent huge pages are 2 MiB on x86-64 and the common arm64 configuration.
const HUGE_PAGE: usize = 2 << 20;

/// An owned, initialised buffer of `len` elements of `T`.
pub struct Region<T> {
    ptr: NonNull<T>,
    len: usize,
}

// SAFETY: a Region owns its elements exclusively, like a Box<[T]>.
unsafe impl<T: Send> Send for Region<T> {}
unsafe impl<T: Sync> Sync for Region<T> {}

/// The layout of a `len`-element region, or None when nothing is allocated (empty or zero-sized
/// elements). A pure function of `len`, so `from_raw` can rebuild it for deallocation.
fn layout<T>(len: usize) -> Option<Layout> {
    let bytes = len.checked_mul(std::mem::size_of::<T>())?;
    if bytes == 0 {
        return None;
    }
    let align = if bytes >= HUGE_PAGE {
        HUGE_PAGE
    } else {
        std::mem::align_of::<T>()
    };
    Layout::from_size_align(bytes, align).ok()
}

impl<T: Copy> Region<T> {
    /// A new region with `fill(i)` at index `i`, first touched by the calling thread (so a rank's
    /// window lands in memory near the core it is bound to). Aborts like `Vec` when the
    /// allocation fails or its size overflows.
    pub fn filled(len: usize, mut fill: impl FnMut(usize) -> T) -> Region<T> {
        let ptr = match layout::<T>(len) {
            None if std::mem::size_of::<T>() != 0 && len != 0 => {
                panic!("a window of {len} elements does not fit in memory")
            }
            None => NonNull::dangling(),
            Some(layout) => {
                // SAFETY: layout has a non-zero size.
                let raw = unsafe { alloc::alloc(layout) };
                let Some(ptr) = NonNull::new(raw.cast::<T>()) else {
                    alloc::handle_alloc_error(layout)
                };
                if layout.align() == HUGE_PAGE {
                    advise_huge_pages(raw, layout.size());
                }
                ptr
            }
        };
        for i in 0..len {
            // SAFETY: in bounds of the allocation; writing (not assigning) initialises it.
            unsafe { ptr.as_ptr().add(i).write(fill(i)) };
        }
        Region { ptr, len }
    }
}

impl<T> Region<T> {
    /// An empty region (no allocation).
    pub(crate) fn empty() -> Region<T> {
        Region {
            ptr: NonNull::dangling(),
            len: 0,
        }
    }

    /// Give up ownership: the raw parts, for `from_raw`.
    pub(crate) fn into_raw(self) -> (*mut T, usize) {
        let parts = (self.ptr.as_ptr(), self.len);
        std::mem::forget(self);
        parts
    }

    /// Take ownership back.
    ///
    /// # Safety
    /// `ptr` and `len` come from `into_raw` of a region not already rebuilt.
    pub(crate) unsafe fn from_raw(ptr: *mut T, len: usize) -> Region<T> {
        Region {
            // SAFETY: into_raw never yields null (allocated or dangling).
            ptr: unsafe { NonNull::new_unchecked(ptr) },
            len,
        }
    }

    pub fn as_slice(&self) -> &[T] {
        // SAFETY: `len` initialised elements (or dangling and empty).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as in `as_slice`, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T> Drop for Region<T> {
    fn drop(&mut self) {
        if let Some(layout) = layout::<T>(self.len) {
            // SAFETY: allocated in `filled` with this same layout (a function of len).
            unsafe { alloc::dealloc(self.ptr.as_ptr().cast(), layout) };
        }
    }
}

/// Ask for transparent huge pages on `[start, start + bytes)`, before its first touch.
fn advise_huge_pages(start: *mut u8, bytes: usize) {
    #[cfg(target_os = "linux")]
    // SAFETY: the range is a live allocation we own, 2 MiB aligned; MADV_HUGEPAGE changes no
    // contents. Failure (THP disabled) only changes speed, so the result is ignored.
    unsafe {
        libc::madvise(start.cast(), bytes, libc::MADV_HUGEPAGE);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (start, bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_every_element_and_round_trips_through_raw_parts() {
        let r = Region::filled(5, |i| i as u32 * 3);
        assert_eq!(r.as_slice(), &[0, 3, 6, 9, 12]);
        let (ptr, len) = r.into_raw();
        // SAFETY: parts from into_raw, rebuilt once.
        let back = unsafe { Region::from_raw(ptr, len) };
        assert_eq!(back.as_slice()[4], 12);
        assert!(Region::<f32>::empty().as_slice().is_empty());
        assert!(Region::filled(0, |_| 1u8).as_slice().is_empty());
    }

    #[test]
    fn windows_of_a_huge_page_or_more_are_huge_page_aligned() {
        let n = HUGE_PAGE / 4 + 3;
        let r = Region::filled(n, |i| i as f32);
        assert_eq!(r.as_slice().as_ptr() as usize % HUGE_PAGE, 0);
        assert_eq!(r.as_slice()[n - 1], (n - 1) as f32);
        assert_eq!(layout::<u8>(100).map(|l| l.align()), Some(1));
    }
}
