//! Standard output that never panics: `say!` is `println!` for every line campaign prints.
//!
//! `println!` panics when stdout is gone — `campaign run … | head -1` closes the pipe after one
//! line, a full disk fails the write — and a panic in the middle of a campaign would skip its
//! clean-up. Here the first failed write switches stdout to `/dev/null` for the rest of the
//! process, so the command goes on and ends with the exit code its work earns (the results are
//! on disk, not on stdout); nothing else changes. It is the lowest room: it imports nothing.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once stdout failed: later lines are not even formatted.
static GONE: AtomicBool = AtomicBool::new(false);

/// `println!` that survives a closed or full stdout.
#[macro_export]
macro_rules! say {
    () => {
        $crate::console::line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::console::line(format_args!($($arg)*))
    };
}

/// Write one line (the `say!` macro's body).
pub fn line(args: std::fmt::Arguments<'_>) {
    write(|out| out.write_fmt(args).and_then(|()| out.write_all(b"\n")));
}

/// Write `text` as it is (a block that ends with its own newline), like `print!`.
pub fn text(text: &str) {
    write(|out| out.write_all(text.as_bytes()));
}

/// Run `put` on locked stdout and flush; the first failure silences stdout for good.
fn write(put: impl FnOnce(&mut std::io::StdoutLock<'static>) -> std::io::Result<()>) {
    if GONE.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    if put(&mut out).and_then(|()| out.flush()).is_err() {
        GONE.store(true, Ordering::Relaxed);
        silence();
    }
}

/// Point fd 1 at `/dev/null`: a later write anywhere in the process (a library's, a child
/// inheriting it) cannot fail or raise SIGPIPE either.
fn silence() {
    if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        use std::os::fd::AsRawFd;
        // SAFETY: dup2 onto fd 1 with a descriptor we own; no memory is involved.
        unsafe { libc::dup2(null.as_raw_fd(), 1) };
    }
}
