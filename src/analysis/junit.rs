//! JUnit XML, the test-report format CI systems read (GitHub Actions reporters, GitLab's
//! `artifacts:reports:junit`, Jenkins): one suite of test cases, each passed, failed (with a
//! message and the numbers) or skipped (with why). Owns the document's shape and XML escaping;
//! what a case means is its caller's (`compare`'s rows, `history regressions`' series). Pure.

/// How a test case ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Outcome {
    Passed,
    /// `message` is the one line a CI view shows; `detail` the numbers behind it.
    Failed {
        message: String,
        detail: String,
    },
    Skipped {
        message: String,
    },
}

/// One test case: `classname` groups cases (a stack), `name` names one (a case id).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TestCase {
    pub(crate) classname: String,
    pub(crate) name: String,
    pub(crate) outcome: Outcome,
    /// Printed as the case's `<system-out>` (what was measured), when not empty.
    pub(crate) output: String,
}

/// A JUnit document of one suite named `suite`, with `properties` (name, value) on it.
pub(crate) fn document(suite: &str, properties: &[(&str, String)], cases: &[TestCase]) -> String {
    let failures = cases
        .iter()
        .filter(|c| matches!(c.outcome, Outcome::Failed { .. }))
        .count();
    let skipped = cases
        .iter()
        .filter(|c| matches!(c.outcome, Outcome::Skipped { .. }))
        .count();
    let counts = format!(
        "tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\"",
        cases.len()
    );
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    out.push_str(&format!(
        "<testsuites name=\"{}\" {counts}>\n",
        escape(suite)
    ));
    out.push_str(&format!(
        "  <testsuite name=\"{}\" {counts}>\n",
        escape(suite)
    ));
    if !properties.is_empty() {
        out.push_str("    <properties>\n");
        for (name, value) in properties {
            out.push_str(&format!(
                "      <property name=\"{}\" value=\"{}\"/>\n",
                escape(name),
                escape(value)
            ));
        }
        out.push_str("    </properties>\n");
    }
    for c in cases {
        out.push_str(&format!(
            "    <testcase classname=\"{}\" name=\"{}\"",
            escape(&c.classname),
            escape(&c.name)
        ));
        if c.outcome == Outcome::Passed && c.output.is_empty() {
            out.push_str("/>\n");
            continue;
        }
        out.push_str(">\n");
        match &c.outcome {
            Outcome::Passed => {}
            Outcome::Failed { message, detail } => out.push_str(&format!(
                "      <failure type=\"slower\" message=\"{}\">{}</failure>\n",
                escape(message),
                escape(detail)
            )),
            Outcome::Skipped { message } => out.push_str(&format!(
                "      <skipped message=\"{}\"/>\n",
                escape(message)
            )),
        }
        if !c.output.is_empty() {
            out.push_str(&format!(
                "      <system-out>{}</system-out>\n",
                escape(&c.output)
            ));
        }
        out.push_str("    </testcase>\n");
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

/// Text safe in XML content and attribute values; characters XML 1.0 cannot hold at all
/// (control characters but tab and newlines, U+FFFE and U+FFFF: outside its `Char`
/// production) become U+FFFD, so the document is well-formed whatever a stack printed.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(ch),
            c if !xml_char(c) => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// XML 1.0's `Char`: #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]
/// (a Rust `char` is never a surrogate).
fn xml_char(c: char) -> bool {
    matches!(c as u32, 0x9 | 0xA | 0xD | 0x20..=0xD7FF | 0xE000..=0xFFFD | 0x10000..=0x10FFFF)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every code point class, escaped, is XML 1.0 `Char`s only, and `<` and `&` appear only
    /// as the markup and entity references escaping makes (issue 43, item 5).
    #[test]
    fn every_code_point_escapes_to_well_formed_text() {
        let all: String = (0..=0x10FFFFu32).filter_map(char::from_u32).collect();
        let text = escape(&all);
        assert!(text.chars().all(xml_char));
        let stripped = ["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"]
            .iter()
            .fold(text.clone(), |t, e| t.replace(e, ""));
        assert!(!stripped.contains(['&', '<', '>', '"', '\'']));
        for bad in ['\u{0}', '\u{1b}', '\u{FFFE}', '\u{FFFF}'] {
            assert_eq!(escape(&bad.to_string()), "\u{FFFD}", "{:x}", bad as u32);
        }
        for kept in [
            '\t',
            '\n',
            '\u{D7FF}',
            '\u{E000}',
            '\u{FFFD}',
            '\u{10000}',
            '\u{10FFFF}',
        ] {
            assert_eq!(
                escape(&kept.to_string()),
                kept.to_string(),
                "{:x}",
                kept as u32
            );
        }
        let doc = document("s\u{FFFF}", &[("k", "\u{FFFE}".into())], &[]);
        assert!(doc.chars().all(xml_char), "{doc}");
    }

    #[test]
    fn counts_outcomes_and_escapes_what_xml_cannot_hold() {
        let cases = vec![
            TestCase {
                classname: "mpi".into(),
                name: "a<b>&\"c\"".into(),
                outcome: Outcome::Failed {
                    message: "slower +12.0 %".into(),
                    detail: "median 1 µs\u{1} → 2 µs".into(),
                },
                output: String::new(),
            },
            TestCase {
                classname: "mpi".into(),
                name: "b".into(),
                outcome: Outcome::Skipped {
                    message: "too few samples".into(),
                },
                output: "1 × 3".into(),
            },
            TestCase {
                classname: "host".into(),
                name: "c".into(),
                outcome: Outcome::Passed,
                output: String::new(),
            },
        ];
        let xml = document("campaign compare", &[("run_a", "x&y".into())], &cases);
        assert!(
            xml.contains(r#"tests="3" failures="1" errors="0" skipped="1""#),
            "{xml}"
        );
        assert!(
            xml.contains(r#"name="a&lt;b&gt;&amp;&quot;c&quot;""#),
            "{xml}"
        );
        assert!(
            xml.contains("median 1 µs\u{FFFD} → 2 µs</failure>"),
            "{xml}"
        );
        assert!(
            xml.contains(r#"<property name="run_a" value="x&amp;y"/>"#),
            "{xml}"
        );
        assert!(
            xml.contains(r#"<testcase classname="host" name="c"/>"#),
            "{xml}"
        );
        assert!(
            xml.contains("<skipped message=\"too few samples\"/>"),
            "{xml}"
        );
    }
}
