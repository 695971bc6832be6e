//! campaign — declarative, crash-proof benchmark campaigns for collective communication.
//!
//! A plan (TOML) expands into cases; every case runs through every stack; raw output, samples,
//! results, statistics, figures and a report land in a run dir. See `docs/architecture.md`.

pub mod artifacts;
pub mod bench;
pub mod case;
pub mod case_fast;
pub mod cli;
pub mod commands;
pub mod compare;
pub mod dag;
pub mod engine;
pub mod error;
pub mod executor;
pub mod faults;
pub mod fingerprint;
pub mod golden;
pub mod interrupt;
pub mod journal;
pub mod lock;
pub mod plan;
pub mod pool;
pub mod progress;
pub mod provenance;
pub mod report;
pub mod results;
pub mod resume;
pub mod scheduler;
pub mod stack;
pub mod stats;
pub mod status;
pub mod sweep;
pub mod units;

use clap::Parser;

pub use error::{Error, Result};

/// Parse `args`, run the command, print any error, and return the process exit code.
/// This is the single place where errors become exit codes.
pub fn main_with_args<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = match cli::Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                error::exit::BAD_INPUT
            } else {
                error::exit::OK
            };
            let _ = e.print();
            return code;
        }
    };
    match commands::dispatch(cli.command) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("{}", render_error(&e));
            e.exit_code()
        }
    }
}

fn render_error(e: &Error) -> String {
    match e {
        // Diagnostics already start with "error:".
        Error::Invalid(_) => e.to_string(),
        other => format!("error: {other}"),
    }
}
