//! One man page in roff: clap_mangen's title, NAME, SYNOPSIS, DESCRIPTION, OPTIONS and
//! SUBCOMMANDS from the clap definitions (so the page never disagrees with `--help`), then the
//! sections clap cannot know — EXIT STATUS from the one table of exit codes
//! (`error::exit::CODES`), FILES and EXAMPLES from `cli::man_sections` — and SEE ALSO and
//! VERSION. Renders only; `cli::docs` decides where pages go.

use std::io::Write;

use roff::{bold, italic, roman, Roff};

use crate::cli::man_sections;
use crate::error::exit;

/// The page of `cmd`, the command at `path` under campaign (`[]`: campaign(1) itself). `cmd` must
/// come from a built `Cli::command()`, so its display name is the page's name
/// (`campaign-history-regressions`).
pub(crate) fn render(cmd: clap::Command, path: &[&str], w: &mut dyn Write) -> std::io::Result<()> {
    let mut page = Vec::new();
    sections(cmd, path, &mut page)?;
    w.write_all(&once_preamble(&page))
}

/// Each of clap_mangen's section writers starts with the roff apostrophe preamble (two lines
/// defining `\*(Aq`); the page needs it once, at its top.
fn once_preamble(page: &[u8]) -> Vec<u8> {
    const PREAMBLE: &[u8] = b".ie \\n(.g .ds Aq \\(aq\n.el .ds Aq '\n";
    let mut out = Vec::with_capacity(page.len());
    let mut rest = page;
    let mut seen = false;
    while !rest.is_empty() {
        if rest.starts_with(PREAMBLE) {
            if !seen {
                out.extend_from_slice(PREAMBLE);
                seen = true;
            }
            rest = &rest[PREAMBLE.len()..];
            continue;
        }
        let line = rest
            .iter()
            .position(|&b| b == b'\n')
            .map_or(rest.len(), |i| i + 1);
        out.extend_from_slice(&rest[..line]);
        rest = &rest[line..];
    }
    out
}

fn sections(cmd: clap::Command, path: &[&str], w: &mut dyn Write) -> std::io::Result<()> {
    let has_subcommands = cmd.get_subcommands().any(|s| !s.is_hide_set());
    let see_also = see_also(&cmd, path);
    let man = clap_mangen::Man::new(cmd);
    man.render_title(w)?;
    man.render_name_section(w)?;
    man.render_synopsis_section(w)?;
    man.render_description_section(w)?;
    man.render_options_section(w)?;
    if has_subcommands {
        man.render_subcommands_section(w)?;
    }
    let mut roff = Roff::new();
    exit_status(&mut roff);
    if let Some(extras) = man_sections::extras(path) {
        files(&mut roff, extras.files);
        examples(&mut roff, extras.examples);
    }
    roff.control("SH", ["SEE ALSO"]);
    roff.text(see_also);
    roff.to_writer(w)?;
    man.render_version_section(w)
}

/// The man page's file name of the command at `path`: `campaign.1`, `campaign-history-trend.1`.
pub(crate) fn file_name(path: &[&str]) -> String {
    let mut name = String::from("campaign");
    for p in path {
        name.push('-');
        name.push_str(p);
    }
    name + ".1"
}

/// Every documented code, in order; a command that cannot end with one simply never does.
fn exit_status(roff: &mut Roff) {
    roff.control("SH", ["EXIT STATUS"]);
    for (code, meaning) in exit::CODES {
        roff.control("TP", []);
        roff.text([bold(code.to_string())]);
        roff.text([roman(*meaning)]);
    }
}

fn files(roff: &mut Roff, entries: &[man_sections::FileEntry]) {
    roff.control("SH", ["FILES"]);
    for (file, what) in entries {
        roff.control("TP", []);
        roff.text([italic(*file)]);
        roff.text([roman(*what)]);
    }
}

fn examples(roff: &mut Roff, lines: &[(&str, &str)]) {
    roff.control("SH", ["EXAMPLES"]);
    for (line, what) in lines {
        roff.control("TP", []);
        roff.text([bold(*line)]);
        roff.text([roman(*what)]);
    }
}

/// The parent's page, each subcommand's page, and the documents in the source tree.
fn see_also(cmd: &clap::Command, path: &[&str]) -> Vec<roff::Inline> {
    let mut refs: Vec<String> = Vec::new();
    if !path.is_empty() {
        refs.push(file_name(&path[..path.len() - 1]));
    }
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let mut p = path.to_vec();
        p.push(sub.get_name());
        refs.push(file_name(&p));
    }
    let mut out = Vec::new();
    for r in refs {
        let page = r.trim_end_matches(".1");
        out.push(bold(page));
        out.push(roman("(1), "));
    }
    out.push(roman(
        "and in the source tree README.md, docs/plan-format.md, docs/architecture.md, \
         docs/history.md.",
    ));
    out
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;
    use crate::cli::args::Cli;

    /// A nested subcommand's page: its own title, the roff preamble once, and every section in
    /// man-pages(7) order.
    #[test]
    fn a_page_has_one_preamble_its_title_and_the_sections_in_order() {
        let mut cmd = Cli::command().disable_help_subcommand(true);
        cmd.build();
        let history = cmd.find_subcommand("history").unwrap();
        let trend = history.find_subcommand("trend").unwrap().clone();
        let mut out = Vec::new();
        render(trend, &["history", "trend"], &mut out).unwrap();
        let page = String::from_utf8(out).unwrap();
        assert_eq!(page.matches(".ds Aq").count(), 2, "{page}");
        assert!(page
            .lines()
            .nth(2)
            .unwrap()
            .starts_with(".TH campaign-history-trend 1"));
        let order = [
            ".SH NAME",
            ".SH SYNOPSIS",
            ".SH OPTIONS",
            ".SH \"EXIT STATUS\"",
            ".SH FILES",
            ".SH EXAMPLES",
            ".SH \"SEE ALSO\"",
        ];
        let at: Vec<usize> = order
            .iter()
            .map(|s| page.find(s).unwrap_or_else(|| panic!("no {s}:\n{page}")))
            .collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{at:?}");
        assert!(page.contains("\\fBcampaign\\-history\\fR(1)"), "{page}");
        assert_eq!(file_name(&["history", "trend"]), "campaign-history-trend.1");
        assert_eq!(file_name(&[]), "campaign.1");
    }
}
