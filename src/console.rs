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

/// `eprintln!` with control characters shown as escapes: every warning and error line
/// campaign writes to standard error quotes something from outside (a plan's value, a stack's
/// reason, a path) and must not act on the terminal.
#[macro_export]
macro_rules! tell {
    ($($arg:tt)*) => {
        $crate::console::err_line(format_args!($($arg)*))
    };
}

/// Write one line to standard error (the `tell!` macro's body), control characters other than
/// line breaks and tabs shown as escapes. Standard error failing is ignored, as `eprintln!`
/// would panic on it.
pub fn err_line(args: std::fmt::Arguments<'_>) {
    let shown = shown(args);
    let mut err = std::io::stderr().lock();
    let _ = err
        .write_all(shown.as_bytes())
        .and_then(|()| err.write_all(b"\n"));
}

/// Write a block of text to standard error as [`err_line`] writes a line (no newline added).
pub fn err_text(text: &str) {
    let shown = escape_controls(text, LAYOUT);
    let _ = std::io::stderr().lock().write_all(shown.as_bytes());
}

/// Write one line (the `say!` macro's body), control characters shown as escapes.
pub fn line(args: std::fmt::Arguments<'_>) {
    if GONE.load(Ordering::Relaxed) {
        return;
    }
    let shown = shown(args);
    write(|out| {
        out.write_all(shown.as_bytes())?;
        out.write_all(b"\n")
    });
}

/// Write `text` (a block that ends with its own newline), like `print!`, control characters
/// other than line breaks and tabs shown as escapes.
pub fn text(text: &str) {
    let shown = escape_controls(text, LAYOUT);
    write(|out| out.write_all(shown.as_bytes()));
}

/// A line as it is shown: a literal line is campaign's own words (nothing to escape); a
/// formatted one has its control characters other than [`LAYOUT`] escaped.
fn shown(args: std::fmt::Arguments<'_>) -> std::borrow::Cow<'static, str> {
    use std::borrow::Cow;
    match args.as_str() {
        Some(literal) => Cow::Borrowed(literal),
        None => {
            let formatted = std::fmt::format(args);
            match escape_controls(&formatted, LAYOUT) {
                Cow::Borrowed(_) => Cow::Owned(formatted),
                Cow::Owned(escaped) => Cow::Owned(escaped),
            }
        }
    }
}

/// The control characters a block of text may keep: they lay it out, they cannot act on a
/// terminal.
pub const LAYOUT: &[char] = &['\n', '\t'];

/// `text` with every control character (C0, DEL, C1) except those in `keep` shown as an
/// escape (`\u{1b}`, `\r`): text from outside — a stack's failure reason, a case id, a plan's
/// name — printed raw could erase a line (`ESC [ 2K`) or write the clipboard (OSC 52). The
/// one place that decides what a control character is and how it is shown; `model::text`
/// builds its filters for files on it.
pub fn escape_controls<'a>(text: &'a str, keep: &[char]) -> std::borrow::Cow<'a, str> {
    let acts = |c: char| c.is_control() && !keep.contains(&c);
    if !text.chars().any(acts) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if acts(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_shown_and_layout_is_kept() {
        let hostile = "ok\u{1b}[2K\rall good\u{1b}]52;c;ZXZpbA==\u{7}\n\tnext\u{9b}";
        let shown = escape_controls(hostile, LAYOUT);
        assert_eq!(
            shown,
            "ok\\u{1b}[2K\\rall good\\u{1b}]52;c;ZXZpbA==\\u{7}\n\tnext\\u{9b}"
        );
        assert!(!shown
            .chars()
            .any(|c| c.is_control() && !LAYOUT.contains(&c)));
        assert_eq!(escape_controls("a\nb", &[]), "a\\nb");
        assert!(matches!(
            escape_controls("plain text", LAYOUT),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
