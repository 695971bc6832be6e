//! The command line: clap types (`args`), one file per subcommand (glue between the CLI and the
//! library, printing), and [`main_with_args`], the one place where errors become exit codes.

use crate::cli::args::{BenchCommand, Command};
use crate::error::Result;

pub(crate) mod args;
pub(crate) mod bench;
pub(crate) mod calibrate;
pub(crate) mod cases;
pub(crate) mod census;
pub(crate) mod compare;
pub(crate) mod docs;
pub(crate) mod doctor;
pub(crate) mod dry_run;
#[cfg(test)]
mod fuzz_props;
#[cfg(test)]
mod fuzz_tests;
pub(crate) mod history;
mod man_page;
mod man_sections;
pub(crate) mod prompt;
pub(crate) mod report;
pub(crate) mod resume;
pub(crate) mod run;
pub(crate) mod status;
pub(crate) mod validate;

use clap::Parser;

use crate::error::{self, Error};

/// Parse `args`, run the command, print any error, and return the process exit code.
/// This is the single place where errors become exit codes.
pub fn main_with_args<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = match args::Cli::try_parse_from(args) {
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
    match dispatch(cli.command) {
        Ok(code) => code,
        Err(e) => {
            // An error quotes what it read (a plan's value, a file's line): shown, not acted on.
            crate::tell!("{}", render_error(&e));
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

/// Run one subcommand.
pub(crate) fn dispatch(command: Command) -> Result<i32> {
    match command {
        Command::Run(a) => run::run(&a),
        Command::Resume(a) => resume::run(&a),
        Command::DryRun(a) => dry_run::run(&a),
        Command::Validate(a) => validate::run(&a),
        Command::Cases(a) => cases::run(&a),
        Command::Status(a) => status::run(&a),
        Command::Report(a) => report::run_stoppable(&a),
        Command::Compare(a) => compare::run(&a),
        Command::Calibrate(a) => calibrate::run(&a),
        Command::Doctor(a) => doctor::run(&a),
        Command::Census(a) => census::run(&a),
        Command::Bench(b) => match b.command {
            BenchCommand::Collective(a) => bench::collective(&a),
        },
        Command::History(h) => history::dispatch(h.command),
        Command::Completions(a) => docs::completions(a.shell),
        Command::Man(a) => docs::man(&a),
    }
}
