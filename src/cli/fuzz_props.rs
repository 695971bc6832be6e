//! Property-based fuzzing (proptest) of every reader of hostile input: the plan loader, the
//! filter and constraint expressions, stack definitions, journal replay and the old harness's
//! run dirs. Inputs are grown from a corpus kept in the repo (`tests/fuzz-corpus/`: real plans,
//! journals and results files, plus every input that once broke something) by proptest's
//! mutations; the property is always the same — no panic, no stack overflow, no hang: an input
//! is accepted or refused with an error. Work is bounded by the case counts below and the
//! limits of `model::limits`, not by a clock. Failures proptest finds are persisted in
//! `tests/fuzz-corpus/regressions/` and replayed first on every later run.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence};

/// Cases per property: enough to reach every reader's corners each CI run, bounded in time.
const CASES: u32 = 256;

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-corpus")
}

/// The corpus files whose name ends with `suffix`, as text.
fn corpus(suffix: &str) -> Vec<String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.sort();
    let texts: Vec<String> = files
        .iter()
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .collect();
    assert!(
        !texts.is_empty(),
        "no `*{suffix}` in {}",
        corpus_dir().display()
    );
    texts
}

fn config(name: &str) -> Config {
    Config {
        cases: CASES,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(Box::leak(
            format!("tests/fuzz-corpus/regressions/{name}.txt").into_boxed_str(),
        )))),
        ..Config::default()
    }
}

/// One edit of a text: insert a fragment, delete a span, or duplicate a span.
#[derive(Debug, Clone)]
enum Edit {
    Insert(usize, String),
    Delete(usize, usize),
    Repeat(usize, usize, usize),
}

/// Fragments that reach the readers' corners: quotes, brackets, operators, huge and negative
/// numbers, NUL, non-UTF-8-looking escapes, template and expression syntax, JSON punctuation.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("\"".to_string()),
        Just("[".to_string()),
        Just("]".to_string()),
        Just("{".to_string()),
        Just("}".to_string()),
        Just("=".to_string()),
        Just("\n".to_string()),
        Just(",".to_string()),
        Just(" or ".to_string()),
        Just(" not ".to_string()),
        Just("{{ p }}".to_string()),
        Just("{% for x in range(99999) %}".to_string()),
        Just("\\u0000".to_string()),
        Just("-1".to_string()),
        Just("18446744073709551616".to_string()),
        Just("1e308".to_string()),
        Just("NaN".to_string()),
        Just("null".to_string()),
        Just("\"started\"".to_string()),
        Just("\"finished\"".to_string()),
        "[a-z_]{1,12}",
        "[0-9]{1,20}",
        any::<char>().prop_map(|c| c.to_string()),
    ]
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), fragment()).prop_map(|(at, s)| Edit::Insert(at, s)),
        (any::<usize>(), 1usize..64).prop_map(|(at, n)| Edit::Delete(at, n)),
        (any::<usize>(), 1usize..32, 2usize..50).prop_map(|(at, n, k)| Edit::Repeat(at, n, k)),
    ]
}

/// Apply `edits` to `text` at character boundaries (positions wrap around the length).
fn mutate(text: &str, edits: &[Edit]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for e in edits {
        let at = |i: usize, len: usize| if len == 0 { 0 } else { i % (len + 1) };
        match e {
            Edit::Insert(i, s) => {
                let i = at(*i, chars.len());
                chars.splice(i..i, s.chars());
            }
            Edit::Delete(i, n) => {
                let i = at(*i, chars.len());
                let end = (i + n).min(chars.len());
                chars.drain(i..end);
            }
            Edit::Repeat(i, n, k) => {
                let i = at(*i, chars.len());
                let end = (i + n).min(chars.len());
                let span: Vec<char> = chars[i..end].to_vec();
                for _ in 1..*k {
                    chars.splice(end..end, span.iter().copied());
                }
            }
        }
    }
    chars.into_iter().collect()
}

/// A corpus entry and a few edits of it.
fn mutated(seeds: Vec<String>) -> impl Strategy<Value = String> {
    (0..seeds.len(), prop::collection::vec(edit(), 0..6))
        .prop_map(move |(i, edits)| mutate(&seeds[i], &edits))
}

proptest! {
    #![proptest_config(config("plans"))]
    /// Plans (the shipped ones and the corpus), mutated: loaded and validated, or refused.
    #[test]
    fn plans_never_panic(text in mutated(corpus(".toml"))) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fuzz.toml");
        let _ = crate::plan::parse_with(&text, &path, Default::default());
    }
}

proptest! {
    #![proptest_config(config("expressions"))]
    /// Filter expressions built from the expression language's own tokens, up to thousands of
    /// them: compiled and evaluated on a case, or refused with a message.
    #[test]
    fn expressions_never_panic(tokens in prop::collection::vec(prop_oneof![
        Just("p"), Just("count"), Just("variant"), Just("=="), Just("!="), Just("<"),
        Just("or"), Just("and"), Just("not"), Just("("), Just(")"), Just("["), Just("]"),
        Just("2"), Just("'mesh'"), Just("+"), Just("*"), Just("in"), Just(","), Just("|"),
        Just("length"), Just("~"), Just("if"), Just("else"),
    ], 0..600)) {
        let text = tokens.join(" ");
        if let Ok(filter) = crate::plan::sweep::Filter::compile(&text) {
            let case = crate::model::case::Case::new(crate::model::case::Variant::Mesh, 2, 256);
            let _ = filter.matches(&case);
        }
        let def: crate::model::stack::StackDef = toml::from_str(&format!(
            "command = [\"true\"]\nwhere = [{}]\n",
            toml::Value::String(text.clone())
        )).unwrap();
        let _ = def.check_constraints();
    }
}

proptest! {
    #![proptest_config(config("stacks"))]
    /// Stack definitions (the shipped files and the corpus), mutated, as a plan's table.
    #[test]
    fn stack_definitions_never_panic(text in mutated(corpus(".stack.toml"))) {
        if let Ok(def) = toml::from_str::<crate::model::stack::StackDef>(&text) {
            let _ = def.domain_problems();
            let _ = def.check_constraints();
        }
    }
}

proptest! {
    #![proptest_config(config("journals"))]
    /// Journals (real ones and the corpus), mutated: replayed, or refused naming the line.
    #[test]
    fn journal_replay_never_panics(text in mutated(corpus(".jsonl"))) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.jsonl");
        std::fs::write(&path, &text).unwrap();
        let _ = crate::store::journal::replay(&path);
        let _ = crate::store::journal::header(&path);
    }
}

proptest! {
    #![proptest_config(config("harness"))]
    /// The old harness's results.json (the corpus), mutated: read as a run dir, or refused.
    #[test]
    fn old_harness_reader_never_panics(text in mutated(corpus(".results.json"))) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("results.json"), &text).unwrap();
        if crate::store::seed_dir::is_seed_run_dir(dir.path()) {
            let _ = crate::store::seed_dir::load_seed_run_dir(dir.path());
        }
    }
}

#[test]
fn mutation_edits_stay_within_the_text() {
    assert_eq!(mutate("abc", &[Edit::Insert(10, "X".into())]), "abXc");
    assert_eq!(mutate("abc", &[Edit::Delete(1, 5)]), "a");
    assert_eq!(mutate("ab", &[Edit::Repeat(0, 1, 3)]), "aaab");
    assert_eq!(mutate("", &[Edit::Delete(3, 2), Edit::Repeat(1, 1, 2)]), "");
}
