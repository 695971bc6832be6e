//! The `campaign` binary: parse arguments, run, exit with the code the library chose. The same
//! binary serves as containment's helpers (`executor::unit::{shepherd, warden}`) and, inside a
//! Slurm job, as the rank-table maker (`executor::slurm::rank_table`), recognised by a hidden
//! first argument before any parsing.

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(code) = campaign::executor::unit::helper_main(&args) {
        std::process::exit(code);
    }
    // Inside a Slurm job: HCCL's rank table from the allocation (executor::slurm::rank_table).
    if let Some(code) = campaign::executor::slurm::rank_table::helper_main(&args) {
        std::process::exit(code);
    }
    campaign::executor::unit::shepherd::enable();
    std::process::exit(campaign::cli::main_with_args(args));
}
