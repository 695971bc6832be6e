//! Questions asked at the terminal. Only the command line talks to a person; the engine is
//! handed these functions and calls them only when stdin is a terminal.

use std::io::{BufRead, Write};

/// "cancel N Slurm jobs? [y/N]" on stderr; anything but y/yes (or end of input) keeps them.
pub(crate) fn ask_cancel(n: usize) -> bool {
    let mut err = std::io::stderr();
    let _ = write!(
        err,
        "\ncancel {n} Slurm job{}? [y/N] ",
        if n == 1 { "" } else { "s" }
    );
    let _ = err.flush();
    let mut answer = String::new();
    let _ = std::io::stdin().lock().read_line(&mut answer);
    answer_is_yes(&answer)
}

/// "start N runs? [y/N]" on stderr, for campaigns above the size `run` starts without asking.
pub(crate) fn ask_start(runs: usize) -> bool {
    let mut err = std::io::stderr();
    let _ = write!(err, "this campaign has {runs} runs; start them? [y/N] ");
    let _ = err.flush();
    let mut answer = String::new();
    let _ = std::io::stdin().lock().read_line(&mut answer);
    answer_is_yes(&answer)
}

fn answer_is_yes(answer: &str) -> bool {
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_explicit_yes_cancels() {
        for yes in ["y\n", "Y\n", " yes \n", "YES"] {
            assert!(answer_is_yes(yes), "{yes:?}");
        }
        for no in ["", "\n", "n\n", "no", "yep", "maybe\n"] {
            assert!(!answer_is_yes(no), "{no:?}");
        }
    }
}
