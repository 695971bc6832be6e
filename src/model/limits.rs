//! Size limits of what a plan or a stack definition hands to minijinja: expressions (`[filter]
//! where`, a stack's `where`) and templates (commands, env, `cwd`, `build`, `ready`, Slurm's
//! `devices_arg`, report templates).
//!
//! minijinja guards the nesting of statements but not a long chain of binary operators or of
//! `not`s: a few thousand `or`s build an expression tree whose compilation, evaluation or drop
//! overflows the stack (the process aborts), and a few thousand `not`s take seconds each. These
//! checks run before anything is compiled, on the text alone, so a hostile or mistaken plan is
//! refused at `validate` with a message instead. Evaluation itself is bounded by fuel (see
//! [`FUEL_EXPRESSION`]). Nothing here compiles or renders.

/// Longest expression (`where`) accepted, in bytes.
pub(crate) const MAX_EXPRESSION_BYTES: usize = 4096;

/// Longest template accepted in a stack definition or Slurm setting, in bytes.
pub(crate) const MAX_TEMPLATE_BYTES: usize = 64 * 1024;

/// Longest report template accepted, in bytes.
pub(crate) const MAX_REPORT_TEMPLATE_BYTES: usize = 1024 * 1024;

/// Most operators (`and`, `or`, `not`, `+`, `==`, `|`, …) in one expression or in one `{{ … }}`
/// / `{% … %}` block of a template: far more than any real condition, far fewer than what
/// overflows minijinja's recursion.
pub(crate) const MAX_OPERATORS: usize = 256;

/// Deepest nesting of brackets in one expression or block.
pub(crate) const MAX_DEPTH: usize = 32;

/// minijinja fuel (instructions) for one evaluation of an expression.
pub(crate) const FUEL_EXPRESSION: u64 = 100_000;

/// minijinja fuel for one rendering of a stack template: loops over ranges in a `command` stop
/// here instead of growing memory without bound.
pub(crate) const FUEL_TEMPLATE: u64 = 1_000_000;

/// minijinja fuel for rendering a report: hundreds of instructions per row of a million-run
/// campaign, yet a template looping without end stops instead of hanging the campaign (measured
/// here: 2·10⁹ instructions took 398 s and 518 MB in a debug build, so this is a quarter of that
/// there and several times less in a release build).
pub(crate) const FUEL_REPORT: u64 = 500_000_000;

/// minijinja fuel for the validate-time preview of a report template (a score of made-up runs,
/// `report::preview`): the built-in template spends a small fraction of this on them (see the
/// preview's tests), so a template that spends it all does a campaign's worth of work on a
/// score of rows — loops nested over ranges — and is refused at `validate` in seconds, instead
/// of being found at report time by the memory limit or the full report fuel.
pub(crate) const FUEL_REPORT_PREVIEW: u64 = 20_000_000;

/// Check an expression: length, operators and bracket depth.
pub(crate) fn check_expression(text: &str) -> Result<(), String> {
    // minijinja takes a NUL inside a string literal; nothing a case holds can contain one.
    if text.contains('\0') {
        return Err("contains a NUL byte".into());
    }
    if text.len() > MAX_EXPRESSION_BYTES {
        return Err(format!(
            "the expression is {} bytes long; at most {MAX_EXPRESSION_BYTES} are accepted",
            text.len()
        ));
    }
    check_block(text)
}

/// Check a template of at most `max_bytes`: its length, then each `{{ … }}` and `{% … %}`
/// block as an expression.
pub(crate) fn check_template(text: &str, max_bytes: usize) -> Result<(), String> {
    if text.contains('\0') {
        return Err("contains a NUL byte".into());
    }
    if text.len() > max_bytes {
        return Err(format!(
            "the template is {} bytes long; at most {max_bytes} are accepted",
            text.len()
        ));
    }
    let mut rest = text;
    while let Some(start) = rest.find(['{']) {
        let after = &rest[start + 1..];
        let close = match after.chars().next() {
            Some('{') => "}}",
            Some('%') => "%}",
            _ => {
                rest = after;
                continue;
            }
        };
        let body = &after[1..];
        let end = body.find(close).unwrap_or(body.len());
        check_block(&body[..end])?;
        rest = &body[(end + close.len()).min(body.len())..];
    }
    Ok(())
}

/// Count operators and bracket depth in one expression's text (string literals skipped).
fn check_block(text: &str) -> Result<(), String> {
    let bytes = text.as_bytes();
    let (mut operators, mut depth, mut deepest) = (0usize, 0usize, 0usize);
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'"' | b'\'' => {
                // Skip the literal (with its escapes); an unterminated one is minijinja's to report.
                i += 1;
                while i < bytes.len() && bytes[i] != b {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'(' | b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            b'+' | b'-' | b'*' | b'/' | b'%' | b'~' | b'|' | b'<' | b'>' | b'=' | b'!' => {
                operators += 1;
                // Two-character operators (`==`, `<=`, `//`, `**`) count once.
                if bytes
                    .get(i + 1)
                    .is_some_and(|n| matches!(n, b'=' | b'/' | b'*'))
                {
                    i += 1;
                }
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
                if matches!(&text[start..i], "and" | "or" | "not" | "in" | "is" | "if") {
                    operators += 1;
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    if operators > MAX_OPERATORS {
        return Err(format!(
            "the expression has {operators} operators; at most {MAX_OPERATORS} are accepted in one expression"
        ));
    }
    if deepest > MAX_DEPTH {
        return Err(format!(
            "the expression nests brackets {deepest} deep; at most {MAX_DEPTH} are accepted"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_expressions_and_templates_pass() {
        for ok in [
            "variant != 'ibing' or p == 2",
            "p in [2, 4, 8] and count >= 1024 and not (dtype == 'fp16')",
            "'or and not' == variant",
        ] {
            assert_eq!(check_expression(ok), Ok(()), "{ok}");
        }
        let t = "python3 {{ root }}/main.py -d {{ devices_range }} {% if p > 2 %}--big{% endif %}";
        assert_eq!(check_template(t, MAX_TEMPLATE_BYTES), Ok(()));
        assert_eq!(check_template("plain { text } here", 100), Ok(()));
    }

    #[test]
    fn chains_nesting_and_size_are_refused() {
        let ors = vec!["p == 2"; 5000].join(" or ");
        assert!(check_expression(&ors).unwrap_err().contains("bytes long"));
        let ors = vec!["p"; 300].join(" or ");
        assert!(check_expression(&ors).unwrap_err().contains("operators"));
        let nots = format!("{}p == 2", "not ".repeat(300));
        assert!(check_expression(&nots).unwrap_err().contains("operators"));
        let deep = format!("{}p{}", "(".repeat(40), ")".repeat(40));
        assert!(check_expression(&deep).unwrap_err().contains("deep"));
        let sum = format!("{{{{ {} }}}}", vec!["1"; 30_000].join("+"));
        assert!(check_template(&sum, MAX_REPORT_TEMPLATE_BYTES)
            .unwrap_err()
            .contains("operators"));
        assert!(check_template("a\0b", 100).unwrap_err().contains("NUL"));
        assert!(check_expression("variant != 'a\0b'")
            .unwrap_err()
            .contains("NUL"));
        assert!(check_template(&"x".repeat(101), 100)
            .unwrap_err()
            .contains("bytes long"));
        // Operators outside blocks are text, not expressions.
        assert_eq!(
            check_template(&"a + b ".repeat(1000), MAX_TEMPLATE_BYTES),
            Ok(())
        );
    }
}
