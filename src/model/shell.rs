//! The one shell quoter: how any value becomes one `sh` word.
//!
//! Rendered `{{ … }}` output in a stack's shell strings, the Slurm batch script and the command
//! lines `dry-run` prints are all quoted here, so a value that is safe in one is safe in all.
//! A word is single-quoted, with each `'` inside written `'\''` — inside single quotes `sh`
//! expands nothing, so `$(…)`, backquotes, `;` and newlines stay text. (The `shlex` crate
//! quotes in another style — mixed double and single quotes — which would change every script
//! and rendered command already written and tested, so it is not used.)

/// Bytes besides ASCII letters and digits that no shell treats specially in a bare word.
const BARE: &[u8] = b"_@%+=:,./-";

/// `text` single-quoted for `sh`, always: `it's` → `'it'\''s'`, `` → `''`.
pub(crate) fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// `text` as one `sh` word: unchanged when it is not empty and holds only letters, digits and
/// [`BARE`] bytes, else [`quote`]d.
pub(crate) fn quote_word(text: &str) -> String {
    let bare = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || BARE.contains(&b));
    if bare {
        text.to_string()
    } else {
        quote(text)
    }
}

/// `argv` as one line a user can paste into a shell: each word [`quote_word`]ed.
pub(crate) fn line(argv: &[String]) -> String {
    argv.iter()
        .map(|a| quote_word(a))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whatever the value, `sh` reads back exactly one word equal to it.
    #[test]
    fn sh_reads_back_each_value_as_one_word() {
        let values = [
            "plain",
            "",
            "a b",
            "it's",
            "'",
            "''\\'",
            "$(touch pwned)",
            "`id`",
            "a;b|c&d",
            "line\nbreak",
            "tab\there",
            "*?[x]",
            "~root",
            "é ü",
        ];
        for quoter in [quote, quote_word] {
            let words: Vec<String> = values.iter().map(|v| quoter(v)).collect();
            let script = format!(
                "for w in {}; do printf '%s\\0' \"$w\"; done",
                words.join(" ")
            );
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(&script)
                .output()
                .unwrap();
            assert!(out.status.success(), "{script}");
            let back: Vec<&str> = std::str::from_utf8(&out.stdout)
                .unwrap()
                .split_terminator('\0')
                .collect();
            assert_eq!(back, values, "{script}");
        }
    }

    #[test]
    fn bare_words_stay_bare_and_the_rest_is_single_quoted() {
        assert_eq!(quote_word("/runs/r1/x.json"), "/runs/r1/x.json");
        assert_eq!(quote_word("--gres=gpu:2"), "--gres=gpu:2");
        assert_eq!(quote_word("a b"), "'a b'");
        assert_eq!(quote_word("é"), "'é'");
        assert_eq!(quote("plain"), "'plain'");
        assert_eq!(
            line(&["echo".into(), "it's".into(), String::new()]),
            r"echo 'it'\''s' ''"
        );
    }
}
