//! Rendering the report template with minijinja, undefined variables being errors.
//!
//! Owns the template environment (strict undefined, no auto-escaping: the output is Markdown)
//! and the translation of template errors into diagnostics naming the template and line. It
//! knows nothing about what the context holds.

use std::path::Path;

use minijinja::syntax::SyntaxConfig;
use minijinja::{AutoEscape, Environment, UndefinedBehavior};
use serde::Serialize;

use crate::error::{Diagnostic, Error, Result};

/// The default template, embedded so the binary needs no files beside it.
pub(crate) const DEFAULT_TEMPLATE: &str = include_str!("../../templates/report.md.j2");

/// Name under which the default template reports errors.
pub(crate) const DEFAULT_NAME: &str = "templates/report.md.j2";

/// Render `source` (named `name` in errors, read from `file`) with `ctx` into `out`, as the
/// template produces it (a report of 100,000 runs is never one string in memory).
pub(crate) fn render<C: Serialize>(
    source: &str,
    name: &str,
    file: &Path,
    ctx: &C,
    out: &mut dyn std::io::Write,
) -> Result<()> {
    // A template that loops without end fails with an error instead of hanging the campaign.
    render_fuelled(
        source,
        name,
        file,
        ctx,
        out,
        crate::model::limits::FUEL_REPORT,
    )
}

/// [`render`] with `fuel` instructions at most (the validate-time preview renders a handful of
/// runs and so gives far less: a template that does a campaign's worth of work on them is
/// runaway, refused before it can fill memory).
pub(crate) fn render_fuelled<C: Serialize>(
    source: &str,
    name: &str,
    file: &Path,
    ctx: &C,
    out: &mut dyn std::io::Write,
    fuel: u64,
) -> Result<()> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.set_fuel(Some(fuel));
    // Block tags on their own lines leave no blank lines behind, so tables stay contiguous.
    let syntax = SyntaxConfig::builder()
        .trim_blocks(true)
        .lstrip_blocks(true)
        .keep_trailing_newline(true)
        .build()
        .map_err(|e| Error::Environment(format!("template syntax configuration: {e}")))?;
    env.set_syntax(syntax);
    // `cell`: make any text safe inside a Markdown table cell (reasons carry pipes, newlines,
    // control bytes and HTML): `model::text::md_cell`, the one escaping filter.
    env.add_filter("cell", |s: String| crate::model::text::md_cell(&s));
    env.add_template_owned(name.to_string(), source.to_string())
        .map_err(|e| diagnostic(&e, file))?;
    let tmpl = env.get_template(name).map_err(|e| diagnostic(&e, file))?;
    tmpl.render_captured_to(minijinja::value::Serde(ctx), out)
        .map(drop)
        .map_err(|e| diagnostic(&e, file))
}

fn diagnostic(e: &minijinja::Error, file: &Path) -> Error {
    let what = match e.kind() {
        minijinja::ErrorKind::UndefinedError => "undefined variable or attribute".to_string(),
        minijinja::ErrorKind::OutOfFuel => {
            "does more work than a report may (a loop too long, or loops nested)".to_string()
        }
        kind => kind.to_string(),
    };
    let detail = e.detail().map(|d| format!(": {d}")).unwrap_or_default();
    let snippet = match (e.template_source(), e.line()) {
        (Some(src), Some(line)) => src
            .lines()
            .nth(line.saturating_sub(1))
            .map(|l| format!("  {line} | {l}")),
        _ => None,
    };
    Error::Invalid(vec![Diagnostic {
        file: file.to_path_buf(),
        line: e.line(),
        column: None,
        field: None,
        message: format!(
            "report template `{}`: {what}{detail} (see docs/report-context.md for the variables)",
            e.name().unwrap_or("?")
        ),
        snippet,
    }])
}

#[cfg(test)]
mod tests {
    use super::{Path, Result};

    fn render(source: &str, name: &str, file: &Path, ctx: &serde_json::Value) -> Result<String> {
        let mut out = Vec::new();
        super::render(source, name, file, ctx, &mut out)?;
        Ok(String::from_utf8(out).unwrap())
    }

    #[test]
    fn renders_into_the_writer() {
        let text = render(
            "{% for r in rows %}| {{ r | cell }} |\n{% endfor %}",
            "t",
            Path::new("t.j2"),
            &serde_json::json!({"rows": ["a|b", "c\nd"]}),
        )
        .unwrap();
        assert_eq!(text, "| a\\|b |\n| c d |\n");
    }

    #[test]
    fn undefined_variable_names_template_and_line() {
        let err = render(
            "ok {{ a }}\nthen {{ nope }}\n",
            "custom.md.j2",
            Path::new("custom.md.j2"),
            &serde_json::json!({"a": 1}),
        )
        .unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("custom.md.j2:2"), "{msg}");
        assert!(msg.contains("undefined"), "{msg}");
        assert_eq!(err.exit_code(), crate::error::exit::BAD_INPUT);
    }

    #[test]
    fn syntax_error_is_reported_with_line() {
        let err = render(
            "a\n{% if %}\n",
            "t",
            Path::new("t.j2"),
            &serde_json::json!({}),
        )
        .unwrap_err();
        assert!(err.to_string().contains("t.j2:2"), "{err}");
    }
}
