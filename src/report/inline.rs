//! Figure files that the HTML page carries inline, copied from disk into the page as it is
//! rendered instead of through memory.
//!
//! A figure of a 100,000-run campaign is tens of MB of SVG; read into a string, converted into
//! a template value, passed through `| safe` and formatted, it stood in memory four times
//! while the page was rendered. Here a figure's SVG (from its root element on) and its hover
//! values (`<name>.hover.json`, `<` escaped so it cannot end its script element) are template
//! values that only name their file; the page's formatter ([`write`]) streams the file into
//! the output. Owns nothing else: which figures a page shows is `html`'s business.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use minijinja::value::{Object, ObjectRepr, Value};
use minijinja::{Error as TemplateError, ErrorKind, Output, State};

use crate::error::{Error, Result};

/// How far into an SVG file its root element is looked for (plotters writes it first).
const HEAD: u64 = 64 * 1024;

/// A file of the run dir shown inline from byte `start` on; `escape_lt` writes each `<` as
/// `\u003c` (JSON inside a script element).
#[derive(Debug)]
struct Inline {
    path: PathBuf,
    start: u64,
    escape_lt: bool,
}

impl Object for Inline {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Plain
    }
}

/// A figure's SVG markup as a template value, and its width in pixels (0 when its root has
/// none). The XML prolog before the root element is left out, as the page always did.
pub(crate) fn svg(path: &Path) -> Result<(Value, u32)> {
    let mut head = Vec::new();
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    file.take(HEAD)
        .read_to_end(&mut head)
        .map_err(|e| Error::io(path, e))?;
    let text = String::from_utf8_lossy(&head);
    match text.find("<svg") {
        Some(start) => {
            let value = Value::from_object(Inline {
                path: path.to_path_buf(),
                start: start as u64,
                escape_lt: false,
            });
            Ok((value, svg_width(&text[start..])))
        }
        // No root element near the start: the whole text, as it is.
        None => {
            let whole = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
            let width = svg_width(&whole);
            Ok((Value::from_safe_string(whole), width))
        }
    }
}

/// A figure's hover values (its `.hover.json`, compact JSON) as a template value.
pub(crate) fn hover_json(path: &Path) -> Result<Value> {
    std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    Ok(Value::from_object(Inline {
        path: path.to_path_buf(),
        start: 0,
        escape_lt: true,
    }))
}

/// The `width` of an SVG's root element (plotters writes it in pixels); 0 when it has none.
pub(crate) fn svg_width(svg: &str) -> u32 {
    let Some(root) = svg.find("<svg").map(|i| &svg[i..]) else {
        return 0;
    };
    let root = &root[..root.find('>').unwrap_or(root.len())];
    root.split_once(" width=\"")
        .and_then(|(_, rest)| rest.split('"').next())
        .and_then(|w| w.trim_end_matches("px").parse().ok())
        .unwrap_or(0)
}

/// The page's formatter: an inline file is copied into the output, anything else is written
/// as minijinja would (HTML-escaped unless safe).
pub(crate) fn write(
    out: &mut Output,
    state: &mut State,
    value: &Value,
) -> Result<(), TemplateError> {
    match value.downcast_object_ref::<Inline>() {
        Some(inline) => copy(inline, out).map_err(|e| {
            TemplateError::new(
                ErrorKind::WriteFailure,
                format!("{}: {e}", inline.path.display()),
            )
        }),
        None => minijinja::escape_formatter(out, state, value),
    }
}

/// Copy the file into `out` in blocks, a character cut at a block's end carried to the next.
fn copy(inline: &Inline, out: &mut Output) -> std::io::Result<()> {
    let mut file = std::fs::File::open(&inline.path)?;
    file.seek(SeekFrom::Start(inline.start))?;
    let mut block = vec![0u8; 64 * 1024];
    let mut carried = 0;
    loop {
        let n = file.read(&mut block[carried..])?;
        let end = carried + n;
        let (text, rest) = match std::str::from_utf8(&block[..end]) {
            Ok(text) => (text, end),
            // A character cut at the block's end: keep its bytes for the next block.
            Err(e) if e.error_len().is_none() && n > 0 => {
                let valid = e.valid_up_to();
                (
                    std::str::from_utf8(&block[..valid]).unwrap_or_default(),
                    valid,
                )
            }
            Err(e) => return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, e)),
        };
        emit(out, text, inline.escape_lt)?;
        if n == 0 {
            return Ok(());
        }
        block.copy_within(rest..end, 0);
        carried = end - rest;
    }
}

fn emit(out: &mut Output, text: &str, escape_lt: bool) -> std::io::Result<()> {
    let failed = |_| std::io::Error::other("the page could not be written");
    if !escape_lt {
        return out.write_str(text).map_err(failed);
    }
    for (i, piece) in text.split('<').enumerate() {
        if i > 0 {
            out.write_str("\\u003c").map_err(failed)?;
        }
        out.write_str(piece).map_err(failed)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(svg: Value, hover: Value) -> String {
        let mut env = minijinja::Environment::new();
        env.set_auto_escape_callback(|_| minijinja::AutoEscape::Html);
        env.set_formatter(write);
        env.render_str(
            "{{ svg }}|{{ hover }}|{{ other }}",
            minijinja::context! { svg, hover, other => "<b>" },
        )
        .unwrap()
    }

    #[test]
    fn files_are_copied_whole_from_the_root_element_and_json_cannot_end_its_script() {
        let dir = tempfile::tempdir().unwrap();
        let svg_file = dir.path().join("f.svg");
        // Long enough to cross blocks, with characters of several bytes at every offset.
        let body: String = (0..40_000).map(|i| format!("<t>{i} µs × ✓</t>")).collect();
        let text =
            format!("<?xml version=\"1.0\"?>\n<svg width=\"760\" height=\"4\">{body}</svg>\n");
        std::fs::write(&svg_file, &text).unwrap();
        let hover_file = dir.path().join("f.hover.json");
        let json = serde_json::to_string(&vec!["</script> µ"; 5000]).unwrap();
        std::fs::write(&hover_file, &json).unwrap();
        let (svg, width) = svg(&svg_file).unwrap();
        assert_eq!(width, 760);
        let out = page(svg, hover_json(&hover_file).unwrap());
        let expected_svg = &text[text.find("<svg").unwrap()..];
        let expected_hover = json.replace('<', "\\u003c");
        assert_eq!(out, format!("{expected_svg}|{expected_hover}|&lt;b&gt;"));
    }

    #[test]
    fn the_width_of_a_plotters_svg_is_read_from_its_root() {
        let svg = r#"<svg width="760" height="468" viewBox="0 0 760 468"><rect width="9"/></svg>"#;
        assert_eq!(svg_width(svg), 760);
        assert_eq!(svg_width("<svg><rect width=\"9\"/></svg>"), 0);
    }
}
