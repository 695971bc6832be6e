//! `campaign completions SHELL` and `campaign man`: shell completion scripts (clap_complete) and
//! the roff man page (clap_mangen), both generated from the clap definitions in `args`, so they
//! can never disagree with `--help` (`cli::man_page` adds what clap cannot know). Glue only.

use std::io::Write;

use clap::CommandFactory;

use crate::cli::args::Cli;
use crate::cli::man_page;
use crate::error::{Error, Result};
use crate::store::atomic::write_atomic;

pub(crate) fn completions(shell: clap_complete::Shell) -> Result<i32> {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "campaign", &mut out);
    emit(&out)
}

/// `campaign man`: campaign(1), a subcommand's page (`campaign man history regressions`:
/// campaign-history-regressions(1), the page campaign(1) points at), or with `--dir` every page
/// written as files, named as `man` looks them up. Each page is `cli::man_page`'s: clap's
/// sections, then exit status, files and examples.
pub(crate) fn man(args: &crate::cli::args::ManArgs) -> Result<i32> {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    if let Some(dir) = &args.dir {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let mut pages = Vec::new();
        write_pages(&cmd, &mut Vec::new(), dir, &mut pages)?;
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
    let path: Vec<&str> = args.subcommand.iter().map(String::as_str).collect();
    let mut out = Vec::new();
    man_page::render(cmd, &path, &mut out).map_err(|e| Error::io("<man page>", e))?;
    emit(&out)
}

/// The page of `cmd` (at `path`) and, depth first, of every visible subcommand, each written
/// through `store::atomic` so an interrupted `--dir` leaves no half page for `man` to show.
fn write_pages<'a>(
    cmd: &'a clap::Command,
    path: &mut Vec<&'a str>,
    dir: &std::path::Path,
    written: &mut Vec<String>,
) -> Result<()> {
    let name = man_page::file_name(path);
    let mut page = Vec::new();
    man_page::render(cmd.clone(), path, &mut page).map_err(|e| Error::io(dir.join(&name), e))?;
    write_atomic(&dir.join(&name), &page)?;
    written.push(name);
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        path.push(sub.get_name());
        write_pages(sub, path, dir, written)?;
        path.pop();
    }
    Ok(())
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
