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
/// (control characters but tab and newlines) become U+FFFD.
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
            c if (c as u32) < 0x20 => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
