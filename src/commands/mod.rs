//! One file per subcommand: glue between the CLI and the library. Each returns the process
//! exit code on success; errors go back to `lib.rs`, which maps them to codes.

use crate::cli::{BenchCommand, Command};
use crate::error::Result;

pub mod bench;
pub mod cases;
pub mod compare;
pub mod doctor;
pub mod dry_run;
pub mod report;
pub mod resume;
pub mod run;
pub mod status;
pub mod validate;

/// Run one subcommand.
pub fn dispatch(command: Command) -> Result<i32> {
    match command {
        Command::Run(a) => run::run(&a),
        Command::Resume(a) => resume::run(&a),
        Command::DryRun(a) => dry_run::run(&a),
        Command::Validate(a) => validate::run(&a),
        Command::Cases(a) => cases::run(&a),
        Command::Status(a) => status::run(&a),
        Command::Report(a) => report::run(&a),
        Command::Compare(a) => compare::run(&a),
        Command::Doctor(a) => doctor::run(&a),
        Command::Bench(b) => match b.command {
            BenchCommand::Allreduce(a) => bench::allreduce(&a),
        },
    }
}
