//! Text from outside (a stack's failure reason, a case id from a case file, a node's hardware
//! line) made safe for what shows it: the one place control characters are made visible and
//! text is neutralised for CSV cells and Markdown table cells.
//!
//! A stack's output is anyone's bytes: written raw to a terminal, `ESC [ 2K` erased a line to
//! read "all good" and OSC 52 wrote the clipboard; written raw to results.csv, a reason starting
//! with `=` ran as a formula in a spreadsheet; in summary.md, a pipe or newline broke the table
//! and raw HTML rendered (issue 43, item 5). `run.log` keeps the raw bytes; everything derived
//! goes through here. Pure functions.

use std::borrow::Cow;

/// `text` on one line with every control character shown as an escape (`\n`, `\t`, `\r`,
/// `\u{1b}`), so nothing in it acts on a terminal or breaks a line.
pub fn visible(text: &str) -> Cow<'_, str> {
    crate::console::escape_controls(text, &[])
}

/// A CSV text cell: [`visible`], and a leading `=`, `+`, `-` or `@` (which spreadsheets run as a
/// formula) neutralised by a leading `'`, as OWASP's CSV-injection advice has it.
pub fn csv_cell(text: &str) -> Cow<'_, str> {
    let shown = visible(text);
    if shown.starts_with(['=', '+', '-', '@']) {
        return Cow::Owned(format!("'{shown}"));
    }
    shown
}

/// A Markdown table cell: line breaks as spaces (no newline can end the row), other control
/// characters [`visible`], `|` escaped, and `&` and `<` as entities, so no raw HTML renders
/// (no tag can open without `<`; `>` stays readable in "≥"-style text such as `>= 10`).
pub fn md_cell(text: &str) -> String {
    let one_line = text.replace(['\r', '\n'], " ");
    let shown = visible(&one_line);
    let mut out = String::with_capacity(shown.len());
    for c in shown.chars() {
        match c {
            '|' => out.push_str("\\|"),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_shown_not_acted_on() {
        assert!(matches!(visible("plain µs"), Cow::Borrowed(_)));
        assert_eq!(
            visible("bad\u{1b}[2K\rall good\n\u{1b}]52;c;aGk=\u{7}\u{9b}"),
            "bad\\u{1b}[2K\\rall good\\n\\u{1b}]52;c;aGk=\\u{7}\\u{9b}"
        );
        for c in (0..=0x10FFFFu32).filter_map(char::from_u32) {
            let s = c.to_string();
            assert!(!visible(&s).chars().any(char::is_control), "{:x}", c as u32);
        }
    }

    #[test]
    fn csv_cells_never_start_a_formula() {
        for bad in ["=1+1", "+1", "-2+3", "@SUM(A1)", "=HYPERLINK(\"x\")"] {
            assert!(csv_cell(bad).starts_with('\''), "{bad}");
        }
        assert_eq!(csv_cell("exit code 2: boom"), "exit code 2: boom");
        assert_eq!(csv_cell("\t=1"), "\\t=1");
    }

    #[test]
    fn markdown_cells_hold_one_row_and_no_html() {
        assert_eq!(
            md_cell("a|b\n<script>x</script> & `c`"),
            "a\\|b &lt;script>x&lt;/script> &amp; `c`"
        );
    }
}
