//! Ctrl-C while campaign only writes what can be made again: the report step at the end of
//! `run`/`resume`, and all of `campaign report`.
//!
//! By then every run is recorded (the journal is durable, the results files written or
//! rebuildable from the bundles) and what is left — statistics, figures, the report, the
//! answers in the results files, the history ingest — is derived: each file is replaced
//! atomically (`store::atomic`, stale temps swept by the next report) and the history store
//! is one SQLite transaction. So the two-stage contract of `engine::interrupt` has nothing to
//! save on the first signal, and waiting for a long render to look at a flag would break the
//! promise that Ctrl-C stops campaign at once. While a [`Guard`] lives, SIGINT, SIGTERM and
//! SIGHUP end the process at once with exit 3 and a line saying how to render the report again.
//! The handler only writes a prepared message and calls `_exit` (both async-signal-safe); the
//! handlers that were there (tokio's listener) are restored when the guard drops.

use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

use crate::error::exit;

/// The message the handler writes (leaked once per guard: a few bytes per command).
static MESSAGE: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static MESSAGE_LEN: AtomicUsize = AtomicUsize::new(0);

const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

extern "C" fn stop_now(_: libc::c_int) {
    let ptr = MESSAGE.load(Ordering::SeqCst);
    let len = MESSAGE_LEN.load(Ordering::SeqCst);
    // SAFETY: write(2) and _exit(2) are async-signal-safe; `ptr` points at a leaked, never
    // freed buffer of `len` bytes (or is null, then nothing is written).
    unsafe {
        if !ptr.is_null() {
            libc::write(libc::STDERR_FILENO, ptr as *const libc::c_void, len);
        }
        libc::_exit(exit::INTERRUPTED);
    }
}

/// While alive, the three stop signals end the process at once with exit 3 (see the module).
pub(crate) struct Guard {
    previous: Vec<(libc::c_int, libc::sigaction)>,
}

/// Enter the derived-only part of a command: `hint` is what the user runs to finish it (said on
/// stderr after the signal).
pub(crate) fn enter(hint: &str) -> Guard {
    let text = format!("\ninterrupted: {hint}\n")
        .into_bytes()
        .into_boxed_slice();
    let len = text.len();
    let ptr = Box::leak(text).as_mut_ptr();
    MESSAGE_LEN.store(len, Ordering::SeqCst);
    MESSAGE.store(ptr, Ordering::SeqCst);
    let mut previous = Vec::new();
    for sig in SIGNALS {
        // SAFETY: a zeroed sigaction is a valid value to fill; sigaction(2) with a handler that
        // only does async-signal-safe calls, the old action kept to put back.
        unsafe {
            let mut new: libc::sigaction = std::mem::zeroed();
            new.sa_sigaction = stop_now as extern "C" fn(libc::c_int) as libc::sighandler_t;
            libc::sigemptyset(&mut new.sa_mask);
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, &new, &mut old) == 0 {
                previous.push((sig, old));
            }
        }
    }
    Guard { previous }
}

impl Drop for Guard {
    fn drop(&mut self) {
        for (sig, old) in &self.previous {
            // SAFETY: puts back the action sigaction(2) returned for this signal.
            unsafe {
                libc::sigaction(*sig, old, std::ptr::null_mut());
            }
        }
    }
}
