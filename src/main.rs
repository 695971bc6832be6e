//! The `campaign` binary: parse arguments, run, exit with the code the library chose.

fn main() {
    std::process::exit(campaign::cli::main_with_args(std::env::args_os()));
}
