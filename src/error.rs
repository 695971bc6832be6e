//! Typed errors of the library and the one mapping from errors to process exit codes.
//!
//! Every fallible library function returns [`Error`]; the binary turns it into a message and an
//! exit code in exactly one place ([`Error::exit_code`]). Nothing here prints.

use std::path::PathBuf;

/// Process exit codes, documented in README.md and docs/architecture.md.
pub(crate) mod exit {
    /// Every run passed (or the command did what was asked).
    pub(crate) const OK: i32 = 0;
    /// Some run failed, timed out or was wrong; `compare` found a regression; `doctor --require`
    /// found the stack not ready.
    pub(crate) const RUNS_FAILED: i32 = 1;
    /// Bad input: plan, case file, arguments. Nothing was run.
    pub(crate) const BAD_INPUT: i32 = 2;
    /// Interrupted (Ctrl-C / SIGTERM); `campaign resume` continues.
    pub(crate) const INTERRUPTED: i32 = 3;
    /// Environment or I/O failure (disk full, lock held, cannot spawn).
    pub(crate) const ENVIRONMENT: i32 = 4;
    /// A campaign ran nothing: every planned run was `unavailable` or `skipped` (no stack could
    /// run here, or every case was outside what its stacks support). Not a success: no number
    /// was measured.
    pub(crate) const NOTHING_RAN: i32 = 5;
    /// Every run is recorded (results files written) but the report step failed — a template
    /// that does not render, a full disk while rendering; `campaign report RUN_DIR` renders it
    /// again once fixed.
    pub(crate) const REPORT_FAILED: i32 = 6;
    /// `compare` or `history regressions` judged nothing: every row was not judged or not
    /// comparable, or no series had the points a step needs. Not a pass: nothing was checked,
    /// so a CI gate must not read it as one.
    pub(crate) const NOTHING_JUDGED: i32 = 7;

    /// Every code with what it means to a user, in order: the one list the man pages' EXIT
    /// STATUS sections are written from (and the README's and docs/architecture.md's tables
    /// are checked against).
    pub(crate) const CODES: &[(i32, &str)] = &[
        (OK, "every run passed, or the command did what was asked"),
        (
            RUNS_FAILED,
            "some run failed, timed out or was wrong; compare or history regressions found a \
             regression; doctor --require found the stack not ready, or doctor --contract a \
             contract item broken",
        ),
        (
            BAD_INPUT,
            "bad input (plan, case file, template, arguments): nothing was run",
        ),
        (
            INTERRUPTED,
            "interrupted (Ctrl-C, SIGTERM, SIGHUP): campaign resume RUN_DIR continues",
        ),
        (
            ENVIRONMENT,
            "environment or I/O failure (disk full, run dir locked by another process, cannot \
             spawn, no reachable Slurm)",
        ),
        (
            NOTHING_RAN,
            "run or resume ran nothing: every planned run was unavailable or skipped, so no \
             number was measured",
        ),
        (
            REPORT_FAILED,
            "run or resume recorded every run, but the report failed (said on stderr; campaign \
             report RUN_DIR renders it again)",
        ),
        (
            NOTHING_JUDGED,
            "compare or history regressions judged nothing (every row not judged or not \
             comparable, or no series with the 3 points a step needs): not a pass",
        ),
    ];
}

/// One problem found in an input file, located as precisely as the input allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// File the problem is in.
    pub(crate) file: PathBuf,
    /// 1-based line and column, when known.
    pub(crate) line: Option<usize>,
    pub(crate) column: Option<usize>,
    /// Dotted path of the offending field, e.g. `axes.p[2]`, when known.
    pub(crate) field: Option<String>,
    /// What is wrong and what was expected.
    pub(crate) message: String,
    /// The source line and a caret under the column, when known.
    pub(crate) snippet: Option<String>,
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(col) = self.column {
                write!(f, ":{col}")?;
            }
        }
        write!(f, ": ")?;
        if let Some(field) = &self.field {
            write!(f, "{field}: ")?;
        }
        write!(f, "{}", self.message)?;
        if let Some(snippet) = &self.snippet {
            write!(f, "\n{snippet}")?;
        }
        Ok(())
    }
}

/// The library's error type.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// One or more problems in an input file (plan, case JSON, stack definitions).
    #[error("{}", render_diagnostics(.0))]
    Invalid(Vec<Diagnostic>),
    /// A bad command-line argument or combination.
    #[error("{0}")]
    Usage(String),
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The run dir is used by another campaign process.
    #[error("{0}")]
    Locked(String),
    /// Something in the environment prevents work (cannot spawn, missing tool).
    #[error("{0}")]
    Environment(String),
    /// The campaign was interrupted; the message carries the resume hint.
    #[error("{0}")]
    Interrupted(String),
    /// Runs finished but not all passed; the message summarises.
    #[error("{0}")]
    RunsFailed(String),
}

fn render_diagnostics(diags: &[Diagnostic]) -> String {
    let mut out = String::new();
    for (i, d) in diags.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&format!("error: {d}"));
    }
    if diags.len() > 1 {
        out.push_str(&format!("\n{} problems found", diags.len()));
    }
    out
}

impl Error {
    /// The process exit code for this error (the single mapping the binary uses).
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Invalid(_) | Error::Usage(_) => exit::BAD_INPUT,
            Error::Io { .. } | Error::Locked(_) | Error::Environment(_) => exit::ENVIRONMENT,
            Error::Interrupted(_) => exit::INTERRUPTED,
            Error::RunsFailed(_) => exit::RUNS_FAILED,
        }
    }

    /// A single diagnostic about a file, without position.
    pub(crate) fn invalid(file: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        Error::Invalid(vec![Diagnostic {
            file: file.into(),
            line: None,
            column: None,
            field: None,
            message: message.into(),
            snippet: None,
        }])
    }

    /// Wrap an I/O error with the path it concerns.
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

pub(crate) type Result<T, E = Error> = std::result::Result<T, E>;
