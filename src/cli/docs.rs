//! `campaign completions SHELL` and `campaign man`: shell completion scripts (clap_complete) and
//! the roff man page (clap_mangen), both generated from the clap definitions in `args`, so they
//! can never disagree with `--help`. Glue only; they print to stdout.

use std::io::Write;

use clap::CommandFactory;

use crate::cli::args::Cli;
use crate::error::{Error, Result};

pub(crate) fn completions(shell: clap_complete::Shell) -> Result<i32> {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "campaign", &mut out);
    emit(&out)
}

pub(crate) fn man() -> Result<i32> {
    let mut out = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut out)
        .map_err(|e| Error::io("<man page>", e))?;
    emit(&out)
}

fn emit(bytes: &[u8]) -> Result<i32> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(0),
        // `campaign man | head` is not a failure.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(0),
        Err(e) => Err(Error::io("<stdout>", e)),
    }
}
