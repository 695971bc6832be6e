//! The layering rule of docs/architecture.md, checked on the source: every `crate::<room>` path
//! in `src/` points to a lower floor, or to a same-floor room the document lists as an exception.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Floors, highest first (docs/architecture.md, "Layering").
const FLOORS: &[(&str, u32)] = &[
    ("cli", 7),
    ("engine", 6),
    ("executor", 5),
    ("stack", 5),
    ("plan", 5),
    ("store", 5),
    ("report", 5),
    ("bench", 5),
    ("analysis", 4),
    ("model", 3),
    ("error", 2),
    ("console", 1),
];

/// Same-floor imports the document allows: (from room, path prefix).
const ALLOWED_LATERAL: &[(&str, &str)] = &[
    ("report", "store::atomic"),
    ("stack", "store::atomic"),
    ("plan", "stack::registry"),
];

fn floor(room: &str) -> Option<u32> {
    FLOORS.iter().find(|(r, _)| *r == room).map(|(_, f)| *f)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The `crate::a::b…` paths of a file, with `use crate::{…}` groups expanded one level.
fn crate_paths(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        let path: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
            .collect();
        if path.is_empty() && rest.starts_with('{') {
            let group = &rest[1..rest.find('}').unwrap_or(rest.len())];
            out.extend(group.split(',').map(|p| p.trim().to_string()));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn layers_have_no_back_edges() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut problems = BTreeSet::new();
    for file in &files {
        let rel = file.strip_prefix(&src).unwrap();
        let room = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        let Some(from) = floor(&room) else {
            assert!(
                room == "lib" || room == "main",
                "{}: room `{room}` is not in the layering",
                rel.display()
            );
            continue;
        };
        let text = std::fs::read_to_string(file).unwrap();
        for path in crate_paths(&text) {
            let target = path.split("::").next().unwrap_or("");
            let Some(to) = floor(target) else { continue };
            if target == room || to < from {
                continue;
            }
            let allowed = to == from
                && ALLOWED_LATERAL
                    .iter()
                    .any(|(r, prefix)| *r == room && path.starts_with(prefix));
            if !allowed {
                problems.insert(format!("{} → crate::{path}", rel.display()));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "imports against the layering of docs/architecture.md:\n{}",
        problems.into_iter().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn the_checker_sees_an_upward_import() {
    let paths = crate_paths("use crate::engine::work;\nuse crate::{model::case::Case, error};");
    assert_eq!(paths, ["engine::work", "model::case::Case", "error"]);
}

/// The module a file under `src/` is (`cli/history.rs` → `cli::history`, `engine/mod.rs` →
/// `engine`).
fn module_of(rel: &Path) -> String {
    let text = rel.with_extension("").display().to_string();
    let text = text.strip_suffix("/mod").unwrap_or(&text).to_string();
    text.replace('/', "::")
}

/// Is `a` `b` or one of its ancestors or descendants (a parent and its own child count as one)?
fn related(a: &str, b: &str) -> bool {
    let under = |x: &str, y: &str| x == y || x.starts_with(&format!("{y}::"));
    under(a, b) || under(b, a)
}

/// The known module a path names: its longest prefix that is a module.
fn named_module(path: &str, modules: &BTreeSet<String>) -> Option<String> {
    let parts: Vec<&str> = path.split("::").collect();
    (1..=parts.len())
        .rev()
        .map(|n| parts[..n].join("::"))
        .find(|m| modules.contains(m))
}

#[test]
fn modules_inside_a_room_form_no_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let modules: BTreeSet<String> = files
        .iter()
        .map(|f| module_of(f.strip_prefix(&src).unwrap()))
        .collect();
    // Edges between unrelated modules, from `crate::…` and `super::…` paths. Unit tests may
    // share fixtures across modules: a file's `mod tests` and test files are left out.
    let mut edges: BTreeSet<(String, String)> = BTreeSet::new();
    for file in &files {
        let from = module_of(file.strip_prefix(&src).unwrap());
        if from.ends_with("tests") {
            continue;
        }
        let whole = std::fs::read_to_string(file).unwrap();
        let text = whole
            .split("#[cfg(test)]\nmod tests {")
            .next()
            .unwrap_or_default();
        let parent = from.rsplit_once("::").map_or("", |(p, _)| p).to_string();
        let mut paths = crate_paths(text);
        let mut rest = text;
        while let Some(i) = rest.find("super::") {
            rest = &rest[i + "super::".len()..];
            let tail: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            if !parent.is_empty() && !tail.is_empty() {
                paths.push(format!("{parent}::{tail}"));
            }
        }
        for path in paths {
            if let Some(to) = named_module(&path, &modules) {
                if !related(&from, &to) {
                    edges.insert((from.clone(), to));
                }
            }
        }
    }
    // A circle of any length: a module that reaches itself.
    let mut circles = BTreeSet::new();
    for start in &modules {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<(String, Vec<String>)> = vec![(start.clone(), vec![start.clone()])];
        while let Some((at, trail)) = stack.pop() {
            for (_, to) in edges.iter().filter(|(f, _)| *f == at) {
                if to == start {
                    let mut circle = trail.clone();
                    // One spelling per circle: start at its smallest module.
                    let min = (0..circle.len()).min_by_key(|&i| &circle[i]).unwrap();
                    circle.rotate_left(min);
                    circles.insert(circle.join(" → "));
                } else if seen.insert(to.clone()) {
                    let mut next = trail.clone();
                    next.push(to.clone());
                    stack.push((to.clone(), next));
                }
            }
        }
    }
    assert!(
        circles.is_empty(),
        "modules that import each other (docs/architecture.md, \"Layering\"):\n{}",
        circles.into_iter().collect::<Vec<_>>().join("\n")
    );
}

/// The engine, its scheduler included, sees one backend contract (`executor::Backend`): no
/// file of it names a backend, so a new one is added inside `executor/` alone.
#[test]
fn the_engine_names_no_backend() {
    let engine = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/engine");
    let mut files = Vec::new();
    rust_files(&engine, &mut files);
    let mut problems = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (i, line) in text.lines().enumerate() {
            if line.to_lowercase().contains("slurm") {
                let rel = file.strip_prefix(&engine).unwrap().display();
                problems.push(format!("src/engine/{rel}:{}: {}", i + 1, line.trim()));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "the engine names a backend (move it behind executor::Backend):\n{}",
        problems.join("\n")
    );
}

/// Longest function any file of src/ may hold (docs/architecture.md, "Layering").
const MAX_FN_LINES: usize = 120;

/// `(name, first line, lines)` of every function with a body in `text`: from its `fn` line to
/// the closing brace at the same indentation.
fn functions(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        let words: Vec<&str> = trimmed.split_whitespace().collect();
        let Some(at) = words.iter().position(|w| *w == "fn") else {
            continue;
        };
        let qualifiers = [
            "pub",
            "pub(crate)",
            "pub(super)",
            "async",
            "unsafe",
            "const",
        ];
        if !words[..at].iter().all(|w| qualifiers.contains(w)) || at + 1 >= words.len() {
            continue;
        }
        let name: String = (words[at + 1].chars())
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let Some(open) = (i..lines.len()).find(|&j| {
            let l = lines[j].trim_end();
            l.ends_with('{') || l.ends_with(';')
        }) else {
            continue;
        };
        if lines[open].trim_end().ends_with(';') {
            continue;
        }
        let close = (open + 1..lines.len()).find(|&j| {
            let l = lines[j];
            l.len() > indent && l[..indent].trim().is_empty() && l[indent..].starts_with('}')
        });
        if let Some(close) = close {
            out.push((name, i + 1, close - i + 1));
        }
    }
    out
}

/// No function of src/ is longer than [`MAX_FN_LINES`]. Test-only files (`tests.rs`,
/// `*_tests.rs`) are exempt: a property test's generator reads best as one table.
#[test]
fn functions_stay_short() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut problems = Vec::new();
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy();
        if name.ends_with("tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        for (name, line, n) in functions(&text) {
            if n > MAX_FN_LINES {
                let rel = file.strip_prefix(&src).unwrap().display();
                problems.push(format!("src/{rel}:{line}: fn {name} has {n} lines"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "functions longer than {MAX_FN_LINES} lines:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_function_counter_sees_a_long_function() {
    let body = "    x();\n".repeat(3);
    let text = format!("pub(crate) async fn run(\n    a: u32,\n) {{\n{body}}}\n\nfn decl();\n");
    assert_eq!(functions(&text), [("run".to_string(), 1, 7)]);
}

/// `file:line` of every call of one of `macros` (a bare name: `print!(` is not `eprint!(`) in
/// src/; with `skip_tests`, test-only files and what follows a top-level `#[cfg(test)]` are
/// left out.
fn macro_calls(macros: &[&str], skip_tests: bool) -> Vec<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut found = Vec::new();
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy();
        if skip_tests && (name == "tests.rs" || name.starts_with("fuzz_") || name == "sim.rs") {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        for (n, line) in text.lines().enumerate() {
            if skip_tests && line.starts_with("#[cfg(test)]") {
                break;
            }
            let code = line.split("//").next().unwrap_or("");
            let bare = |m: &str| {
                code.match_indices(m)
                    .any(|(i, _)| !code[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_'))
            };
            if macros.iter().any(|m| bare(m)) {
                found.push(format!(
                    "{}:{}",
                    file.strip_prefix(&src).unwrap().display(),
                    n + 1
                ));
            }
        }
    }
    found
}

/// Standard output goes through `say!` (src/console.rs), which never panics on a closed pipe or
/// a full disk: no file of src/ uses `println!` or `print!`.
#[test]
fn stdout_is_written_only_through_say() {
    let found = macro_calls(&["println!(", "print!("], false);
    assert!(
        found.is_empty(),
        "println!/print! instead of crate::say!:\n{}",
        found.join("\n")
    );
}

/// Standard error goes through `tell!` (src/console.rs), which shows control characters as
/// escapes (issue 43 item 5): no file of src/ uses `eprintln!` or `eprint!` outside its unit
/// tests (what follows a top-level `#[cfg(test)]`, and test-only files).
#[test]
fn stderr_is_written_only_through_tell() {
    let found = macro_calls(&["eprintln!(", "eprint!("], true);
    assert!(
        found.is_empty(),
        "eprintln!/eprint! instead of crate::tell!:\n{}",
        found.join("\n")
    );
}

/// Helpers kept once (docs/architecture.md, "Registries"): the code that makes each lives in
/// one file; a copy anywhere else in src/ — outside unit tests — fails here.
const ONE_COPY: &[(&str, &str, &str)] = &[
    ("02x}", "model/digest.rs", "a hex loop (use model::digest)"),
    (
        "gethostname",
        "store/host.rs",
        "a hostname (use store::host)",
    ),
    (
        "kernel/hostname",
        "store/host.rs",
        "a hostname (use store::host)",
    ),
    (
        "replace('\\''",
        "model/shell.rs",
        "a shell quoter (use model::shell)",
    ),
    (
        "fn round_sig",
        "model/units.rs",
        "a significant-digit rounding (use model::units::round_sig)",
    ),
    (
        "\"results/campaigns\"",
        "store/layout.rs",
        "the default results dir (use store::layout::results_dir)",
    ),
];

/// The part of a source file that is not unit tests: a `tests.rs` has none, any other file
/// stops at its `#[cfg(test)]` module.
fn non_test_code(rel: &Path, text: &str) -> String {
    if rel.file_name().is_some_and(|f| f == "tests.rs") {
        return String::new();
    }
    let end = text.find("#[cfg(test)]\nmod ").unwrap_or(text.len());
    text[..end].to_string()
}

fn copies_outside_their_home(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut found = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(src).unwrap();
        let code = non_test_code(rel, &std::fs::read_to_string(file).unwrap());
        for (n, line) in code.lines().enumerate() {
            let line = line.split("//").next().unwrap_or("");
            for (needle, home, what) in ONE_COPY {
                if line.contains(needle) && rel != Path::new(home) {
                    found.push(format!("src/{}:{}: {what}", rel.display(), n + 1));
                }
            }
        }
    }
    found
}

#[test]
fn shared_helpers_have_one_copy() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = copies_outside_their_home(&src);
    assert!(
        found.is_empty(),
        "copies of one-copy helpers:\n{}",
        found.join("\n")
    );
    // Each home really holds its helper, so a renamed home cannot make the check vacuous.
    for (needle, home, _) in ONE_COPY {
        let text = std::fs::read_to_string(src.join(home)).unwrap();
        let home_code = non_test_code(Path::new(home), &text);
        let present = home_code.contains(needle)
            || (*needle == "02x}" && home_code.contains("hex::encode"))
            || (needle.contains("hostname") && home_code.contains("uname()"));
        assert!(present, "src/{home} no longer holds `{needle}`");
    }
}

#[test]
fn the_copy_checker_sees_a_copy() {
    let dir = crate::util::tempdir();
    let src = dir.path();
    std::fs::create_dir_all(src.join("engine")).unwrap();
    std::fs::write(
        src.join("engine/x.rs"),
        "fn h(d: &[u8]) -> String { d.iter().map(|b| format!(\"{b:02x}\")).collect() }\n\
         #[cfg(test)]\nmod tests { const R: &str = \"results/campaigns\"; }\n",
    )
    .unwrap();
    assert_eq!(
        copies_outside_their_home(src),
        ["src/engine/x.rs:1: a hex loop (use model::digest)"]
    );
}

/// Names of the crates Cargo.toml depends on, as code spells them (`-` becomes `_`).
fn dependency_names() -> BTreeSet<String> {
    let manifest =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")).unwrap();
    let mut names = BTreeSet::new();
    let mut in_deps = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_deps = line.ends_with("dependencies]");
        } else if in_deps {
            if let Some((name, _)) = line.split_once('=') {
                let name = name.trim();
                if !name.is_empty() && !name.starts_with('#') {
                    names.insert(name.replace('-', "_"));
                }
            }
        }
    }
    names
}

/// Every module of `src/` as (its name, its file relative to src/): `a/b.rs` and `a/b/mod.rs`
/// are both `b`; the crate roots and unit-test files are left out.
fn module_files(src: &Path) -> Vec<(String, String)> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files
        .iter()
        .filter_map(|f| {
            let rel = f.strip_prefix(src).unwrap();
            let stem = rel.file_stem()?.to_str()?;
            let name = if stem == "mod" {
                rel.parent()?.file_name()?.to_str()?
            } else {
                stem
            };
            let root = rel.parent() == Some(Path::new("")) && (stem == "lib" || stem == "main");
            (!root && name != "tests").then(|| (name.to_string(), rel.display().to_string()))
        })
        .collect()
}

/// A module named like a crate it depends on shadows it (`csv::Writer` inside `store` meant the
/// module, not the crate) — the reader has to look up which one a path means.
fn shadowing(modules: &[(String, String)], crates: &BTreeSet<String>) -> Vec<String> {
    modules
        .iter()
        .filter(|(name, _)| crates.contains(name))
        .map(|(name, file)| format!("src/{file}: module `{name}` shadows the crate `{name}`"))
        .collect()
}

#[test]
fn no_module_is_named_like_a_crate_it_depends_on() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let crates = dependency_names();
    assert!(
        crates.contains("csv") && crates.contains("regex"),
        "{crates:?}"
    );
    let problems = shadowing(&module_files(&src), &crates);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_shadow_checker_sees_a_shadowing_module() {
    let crates: BTreeSet<String> = ["csv".to_string(), "toml".to_string()].into();
    let modules = [
        ("csv".to_string(), "store/csv.rs".to_string()),
        (
            "results_csv".to_string(),
            "store/results_csv.rs".to_string(),
        ),
    ];
    assert_eq!(
        shadowing(&modules, &crates),
        ["src/store/csv.rs: module `csv` shadows the crate `csv`"]
    );
}

/// One convention for module files: a module with children is `name/mod.rs`, never `name.rs`
/// beside a `name/` folder, so every module with children is found the same way.
#[test]
fn modules_with_children_live_in_mod_rs() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let problems: Vec<String> = files
        .iter()
        .filter(|f| f.file_stem().is_some_and(|s| s != "mod") && f.with_extension("").is_dir())
        .map(|f| {
            let rel = f.strip_prefix(&src).unwrap().display().to_string();
            format!("src/{rel}: has a folder beside it; move it to its folder's mod.rs")
        })
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// One meaning per name outside `cli` (whose files are named after the subcommands): two
/// modules of one name must be the types and the logic of one concept (`model::plan` and
/// `plan`, `model::stack` and `stack`), the backend contract and its implementations
/// (`executor::backend`, `executor::{local,slurm}::backend`), or the two loaders (`plan::load`
/// reads a TOML file, `store::load` a run dir). Any other second use of a name is a new meaning.
#[test]
fn module_names_outside_cli_have_one_meaning() {
    const SHARED: &[&str] = &["plan", "stack", "backend", "load"];
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut seen: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for (name, file) in module_files(&src) {
        if !file.starts_with("cli/") {
            seen.entry(name).or_default().push(file);
        }
    }
    let problems: Vec<String> = seen
        .iter()
        .filter(|(name, files)| files.len() > 1 && !SHARED.contains(&name.as_str()))
        .map(|(name, files)| format!("`{name}` names {}", files.join(", ")))
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
