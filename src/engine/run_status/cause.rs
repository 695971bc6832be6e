//! The cause of a failure, in one line: the most telling line of a process's output.
//!
//! A failing run's reason must say *why*, not only `exit code 1`: the FIRST telling line — a
//! Python exception line such as `ValueError: …` (a traceback's final line) or a compiler's
//! `error:`; else the first line with `FAILED` or `fatal`; else the last non-empty stderr line
//! that is not a warning (a `resource_tracker` UserWarning at exit says nothing about the
//! failure) — truncated, with "(see run.log)". Later errors are usually consequences of the
//! first. Pure: lines are fed in as they arrive; nothing is read from disk.

use std::sync::OnceLock;

use regex::Regex;

use crate::model::output::{OutputLine, Stream};

/// Longest cause kept in a reason (characters), before "…".
pub(crate) const MAX_CHARS: usize = 200;

fn error_like() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(concat!(
            // A Python exception line: `ValueError: …`, `torch.cuda.OutOfMemoryError: …`.
            r"^\s*(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Failure)(?::\s|$)",
            // Compiler/tool style.
            r"|(?i:\berror:)",
        ))
        .expect("the cause pattern compiles")
    })
}

/// Markers that say something failed, weaker than an exception or an `error:` line.
fn failed_like() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"\bFAILED\b|(?i:\bfatal\b)").expect("static regex"))
}

/// A warning line (`…: UserWarning: resource_tracker: …`, `WARNING: …`): never the cause.
fn warning_like() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"(?i)\bwarn(?:ing)?\b|Warning:").expect("static regex"))
}

/// Follows one process's output and remembers its most telling lines.
#[derive(Debug, Default, Clone)]
pub(crate) struct Cause {
    first_error: Option<String>,
    first_failed: Option<String>,
    last_stderr: Option<String>,
}

impl Cause {
    pub(crate) fn feed(&mut self, line: &OutputLine) {
        let text = line.text.trim();
        // Open MPI's verbose coll log (asked for to learn which component serves the op) runs
        // to the end of a run (`close:` at MPI_Finalize): never the reason a run failed.
        if text.is_empty() || crate::stack::coll_select::is_log_line(text) {
            return;
        }
        if error_like().is_match(text) {
            self.first_error.get_or_insert_with(|| text.to_string());
        } else if failed_like().is_match(text) {
            self.first_failed.get_or_insert_with(|| text.to_string());
        }
        if line.stream == Stream::Stderr && !warning_like().is_match(text) {
            self.last_stderr = Some(text.to_string());
        }
    }

    /// Forget what an earlier process of the run printed (a new round's process starts).
    pub(crate) fn reset(&mut self) {
        *self = Cause::default();
    }

    /// The most telling line, truncated to [`MAX_CHARS`]; `None` when nothing telling was
    /// printed.
    pub(crate) fn line(&self) -> Option<String> {
        let line = self
            .first_error
            .as_ref()
            .or(self.first_failed.as_ref())
            .or(self.last_stderr.as_ref())?;
        Some(if line.chars().count() > MAX_CHARS {
            let mut s: String = line.chars().take(MAX_CHARS).collect();
            s.push('…');
            s
        } else {
            line.clone()
        })
    }

    /// `<line> (see run.log)`: what a run's reason ends with.
    pub(crate) fn text(&self) -> Option<String> {
        Some(format!("{} (see run.log)", self.line()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn feed(lines: &[(Stream, &str)]) -> Option<String> {
        let mut c = Cause::default();
        for (stream, text) in lines {
            c.feed(&OutputLine {
                stream: *stream,
                at: Duration::ZERO,
                text: text.to_string(),
            });
        }
        c.text()
    }

    #[test]
    fn a_python_exception_line_wins_over_later_noise() {
        let got = feed(&[
            (Stream::Stdout, "[allreduce] platform=a2a3sim nranks=17"),
            (Stream::Stderr, "Traceback (most recent call last):"),
            (Stream::Stderr, "  File \"main.py\", line 40, in main"),
            (
                Stream::Stderr,
                "ValueError: allreduce needs between 2 and 16 devices, got 17",
            ),
            (Stream::Stderr, "[INFO] shutting down"),
        ]);
        assert_eq!(
            got.as_deref(),
            Some("ValueError: allreduce needs between 2 and 16 devices, got 17 (see run.log)")
        );
        let got = feed(&[(
            Stream::Stderr,
            "ModuleNotFoundError: No module named 'torch'",
        )]);
        assert_eq!(
            got.as_deref(),
            Some("ModuleNotFoundError: No module named 'torch' (see run.log)")
        );
    }

    #[test]
    fn tool_errors_and_failed_markers_count_on_either_stream() {
        assert_eq!(
            feed(&[
                (Stream::Stdout, "main.c:3: error: expected ';'"),
                (Stream::Stderr, "make: leaving directory"),
            ])
            .as_deref(),
            Some("main.c:3: error: expected ';' (see run.log)")
        );
        assert!(feed(&[(Stream::Stdout, "[  FAILED  ] TReduce.Sum")])
            .unwrap()
            .starts_with("[  FAILED  ]"));
        assert!(feed(&[(Stream::Stdout, "Fatal: device 3 lost")])
            .unwrap()
            .starts_with("Fatal"));
    }

    #[test]
    fn else_the_last_stderr_line_and_nothing_for_silence() {
        assert_eq!(
            feed(&[
                (Stream::Stderr, "segfault near rank 1"),
                (Stream::Stdout, "progress 50%"),
                (Stream::Stderr, "   "),
            ])
            .as_deref(),
            Some("segfault near rank 1 (see run.log)")
        );
        assert_eq!(feed(&[(Stream::Stdout, "all fine")]), None);
        assert_eq!(feed(&[]), None);
        // "errors: 0" and an identifier ending in Error without a colon are not causes.
        assert_eq!(feed(&[(Stream::Stdout, "errors: 0 ok")]), None);
    }

    #[test]
    fn the_first_telling_line_not_a_later_warning_or_consequence() {
        let got = feed(&[
            (Stream::Stderr, "Traceback (most recent call last):"),
            (Stream::Stderr, "ValueError: invalid literal for int() with base 10: '0,2'"),
            (Stream::Stderr, "/usr/lib/python3.11/multiprocessing/resource_tracker.py:254: UserWarning: resource_tracker: There appear to be 1 leaked semaphore objects to clean up at shutdown"),
        ]);
        assert_eq!(
            got.as_deref(),
            Some("ValueError: invalid literal for int() with base 10: '0,2' (see run.log)")
        );
        // A compiler's first error, not the cascade after it nor the FAILED summary.
        let got = feed(&[
            (Stream::Stdout, "[allreduce] golden check FAILED"),
            (
                Stream::Stderr,
                "kernel.cpp:12:5: error: unknown type name 'Tile'",
            ),
            (Stream::Stderr, "kernel.cpp:13:1: error: expected ';'"),
        ]);
        assert_eq!(
            got.as_deref(),
            Some("kernel.cpp:12:5: error: unknown type name 'Tile' (see run.log)")
        );
        // Only a warning on stderr: no cause from it.
        assert_eq!(
            feed(&[(Stream::Stderr, "UserWarning: resource_tracker: leaked")]),
            None
        );
    }

    #[test]
    fn long_lines_are_truncated() {
        let long = format!("RuntimeError: {}", "x".repeat(500));
        let got = feed(&[(Stream::Stderr, long.as_str())]).unwrap();
        assert_eq!(got.chars().count(), MAX_CHARS + 1 + " (see run.log)".len());
        assert!(got.ends_with("… (see run.log)"));
    }

    /// Open MPI's verbose coll log (the mpi stack asks for it) runs on to MPI_Finalize's
    /// `close:` lines: the benchmark's own last word stays the reason.
    #[test]
    fn open_mpis_coll_log_is_never_the_reason() {
        let why = feed(&[
            (
                Stream::Stderr,
                "[vm:7533] coll:base:comm_select: selecting       tuned, priority  30, Enabled",
            ),
            (Stream::Stderr, "allreduce_bench: count must be positive"),
            (
                Stream::Stderr,
                "[vm:7533] mca: base: close: component tuned closed",
            ),
            (
                Stream::Stderr,
                "[vm:7533] mca: base: close: unloading component han",
            ),
        ]);
        assert_eq!(
            why.as_deref(),
            Some("allreduce_bench: count must be positive (see run.log)")
        );
    }
}
