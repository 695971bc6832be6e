//! A process's output as the executors hand it on: one line at a time, with the stream it came
//! from and its arrival time since the process started. Parsers read these; executors make them.

use std::time::Duration;

/// Which stream a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stream {
    Stdout,
    Stderr,
}

/// One output line with its arrival time since the process started.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputLine {
    pub stream: Stream,
    pub at: Duration,
    pub text: String,
}
