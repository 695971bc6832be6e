//! Diagnostics for plan files: byte spans → `file:line:col` plus a caret snippet, the collector
//! that gathers every problem of a plan before failing, and did-you-mean suggestions.
//!
//! It knows nothing about what a plan means; callers say what is wrong. It must not print.

use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::error::{Diagnostic, Error};

/// A plan's text with a line index, so spans can be turned into positions.
#[derive(Debug)]
pub(crate) struct Source<'a> {
    pub(crate) file: &'a Path,
    pub(crate) text: &'a str,
    line_starts: Vec<usize>,
}

impl<'a> Source<'a> {
    pub(crate) fn new(file: &'a Path, text: &'a str) -> Source<'a> {
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Source {
            file,
            text,
            line_starts,
        }
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub(crate) fn position(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let line = match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let start = self.line_starts[line];
        let col = self
            .text
            .get(start..offset)
            .map_or(offset - start, |s| s.chars().count());
        (line + 1, col + 1)
    }

    /// The source line of `span` with carets under the spanned part (first line only).
    pub(crate) fn snippet(&self, span: &Range<usize>) -> String {
        let (line, col) = self.position(span.start);
        let start = self.line_starts[line - 1];
        let end = self
            .line_starts
            .get(line)
            .map_or(self.text.len(), |e| e - 1);
        let text = self
            .text
            .get(start..end)
            .unwrap_or("")
            .trim_end_matches('\r');
        let width = self
            .text
            .get(span.start.min(end)..span.end.min(end).max(span.start.min(end)))
            .map_or(1, |s| s.chars().count())
            .max(1);
        let (text, col, width) = clip_line(text, col, width);
        let gutter = line.to_string();
        let pad = " ".repeat(gutter.len());
        format!(
            "{pad} |\n{gutter} | {text}\n{pad} | {}{}",
            " ".repeat(col - 1),
            "^".repeat(width)
        )
    }

    /// A diagnostic located at `span`.
    pub(crate) fn at(
        &self,
        span: &Range<usize>,
        field: Option<&str>,
        message: String,
    ) -> Diagnostic {
        let (line, col) = self.position(span.start);
        Diagnostic {
            file: self.file.to_path_buf(),
            line: Some(line),
            column: Some(col),
            field: field.map(str::to_string),
            message,
            snippet: Some(self.snippet(span)),
        }
    }

    /// A diagnostic about the whole file (no position).
    pub(crate) fn whole(&self, field: Option<&str>, message: String) -> Diagnostic {
        Diagnostic {
            file: self.file.to_path_buf(),
            line: None,
            column: None,
            field: field.map(str::to_string),
            message,
            snippet: None,
        }
    }
}

/// Longest source line a snippet shows; a 100k-value axis on one line must not print megabytes.
const SNIPPET_CHARS: usize = 120;

/// Cut a long line to [`SNIPPET_CHARS`] around the 1-based column `col`, marking cuts with `…`;
/// returns the shown text and the column and caret width within it.
fn clip_line(text: &str, col: usize, width: usize) -> (String, usize, usize) {
    let chars = text.chars().count();
    if chars <= SNIPPET_CHARS {
        return (text.to_string(), col, width);
    }
    let start = col.saturating_sub(1).saturating_sub(20);
    let end = (start + SNIPPET_CHARS).min(chars);
    let mut shown = String::new();
    if start > 0 {
        shown.push('…');
    }
    shown.extend(text.chars().skip(start).take(end - start));
    if end < chars {
        shown.push('…');
    }
    let caret = col - 1; // 0-based, in the whole line
    let width = width.min(end.saturating_sub(caret)).max(1);
    (shown, caret - start + usize::from(start > 0) + 1, width)
}

/// Collects problems (errors and warnings) so a plan reports all of them at once.
#[derive(Debug, Default)]
pub(crate) struct Diags {
    pub(crate) errors: Vec<Diagnostic>,
    pub(crate) warnings: Vec<Diagnostic>,
}

impl Diags {
    pub(crate) fn error(&mut self, d: Diagnostic) {
        self.errors.push(d);
    }

    pub(crate) fn warn(&mut self, d: Diagnostic) {
        self.warnings.push(d);
    }

    pub(crate) fn has_errors(&self) -> bool {
        !self.errors.is_empty()
    }

    /// `Err(Error::Invalid)` with every error so far, or `Ok(())`.
    pub(crate) fn check(&mut self) -> Result<(), Error> {
        if self.errors.is_empty() {
            Ok(())
        } else {
            Err(Error::Invalid(std::mem::take(&mut self.errors)))
        }
    }
}

/// ` (did you mean `x`?)` when a candidate is close to `word`, else an empty string.
pub(crate) fn did_you_mean<'c>(
    word: &str,
    candidates: impl IntoIterator<Item = &'c str>,
) -> String {
    let best = candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(word, c), c))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0));
    match best {
        Some((_, c)) => format!(" (did you mean `{c}`?)"),
        None => String::new(),
    }
}

/// Path of a plan-relative file: relative paths are taken from the plan's folder.
pub(crate) fn relative_to(plan_file: &Path, path: &str) -> PathBuf {
    let p = Path::new(path);
    if p.is_absolute() {
        return p.to_path_buf();
    }
    match plan_file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.join(p),
        _ => p.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_and_carets() {
        let text = "a = 1\nbb = [1, 2]\n";
        let src = Source::new(Path::new("x.toml"), text);
        let off = text.find("[1").unwrap();
        assert_eq!(src.position(off), (2, 6));
        let d = src.at(&(off..off + 6), Some("bb"), "bad".into());
        assert_eq!(d.line, Some(2));
        assert_eq!(d.column, Some(6));
        assert_eq!(d.snippet.unwrap(), "  |\n2 | bb = [1, 2]\n  |      ^^^^^^");
    }

    #[test]
    fn long_lines_are_clipped_around_the_caret() {
        let text = format!("count = [{}-5]\n", "1, ".repeat(2000));
        let src = Source::new(Path::new("x.toml"), &text);
        let off = text.find("-5").unwrap();
        let snippet = src.at(&(off..off + 2), None, "bad".into()).snippet.unwrap();
        let lines: Vec<&str> = snippet.lines().collect();
        assert!(lines[1].len() < 200, "{snippet}");
        assert!(
            lines[1].starts_with("1 | …") && lines[1].ends_with("1, -5]"),
            "{snippet}"
        );
        // The caret still sits under `-5`.
        let at = lines[2].find('^').unwrap();
        let under: String = lines[1].chars().skip(at).take(2).collect();
        assert_eq!(under, "-5", "{snippet}");
    }

    #[test]
    fn suggestions() {
        assert_eq!(
            did_you_mean("varient", ["variant", "count"]),
            " (did you mean `variant`?)"
        );
        assert_eq!(did_you_mean("zzz", ["variant", "count"]), "");
    }
}

/// Where each case field got its value in the file (an axis array or a `[case]` entry), so
/// per-case problems can point at the line that caused them.
#[derive(Debug, Default)]
pub(crate) struct Spans {
    pub(crate) fields: HashMap<String, Range<usize>>,
    pub(crate) stacks: Option<Range<usize>>,
    pub(crate) filter: Option<Range<usize>>,
    pub(crate) excludes: Vec<Range<usize>>,
    pub(crate) devices: Option<Range<usize>>,
    pub(crate) baseline: Option<Range<usize>>,
}
