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

/// `campaign man`: campaign(1), a subcommand's page (`campaign man history regressions`:
/// campaign-history-regressions(1), the page campaign(1) points at), or with `--dir` every page
/// written as files, named as `man` looks them up.
pub(crate) fn man(args: &crate::cli::args::ManArgs) -> Result<i32> {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    if let Some(dir) = &args.dir {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        clap_mangen::generate_to(cmd, dir).map_err(|e| Error::io(dir, e))?;
        let mut pages: Vec<String> = std::fs::read_dir(dir)
            .map_err(|e| Error::io(dir, e))?
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.starts_with("campaign") && n.ends_with(".1"))
            .collect();
        pages.sort();
        crate::say!(
            "{} pages in {}: {}",
            pages.len(),
            dir.display(),
            pages.join(" ")
        );
        return Ok(0);
    }
    for name in &args.subcommand {
        let found = cmd.find_subcommand(name).cloned();
        cmd = found.ok_or_else(|| {
            Error::Usage(format!(
                "`campaign man {}`: no subcommand `{name}` there (`campaign --help` lists them)",
                args.subcommand.join(" ")
            ))
        })?;
    }
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd)
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
