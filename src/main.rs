//! The `campaign` binary: parse arguments, run, exit with the code the library chose. The same
//! binary serves as containment's helpers (`executor::unit::{shepherd, warden}`), recognised by
//! a hidden first argument before any parsing.

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(code) = campaign::executor::unit::helper_main(&args) {
        std::process::exit(code);
    }
    campaign::executor::unit::shepherd::enable();
    std::process::exit(campaign::cli::main_with_args(args));
}
