//! Is a stack available on this machine? Checks its root, its `requires` entries and its program.
//!
//! Owns the `requires` rules (upper-case NAME → environment variable set and non-empty; an
//! entry with `/` → path that exists, templates with `root` allowed; anything else → program on
//! PATH) and the wording of an `unavailable` reason (`<what> not found (<hint>)`). It only looks:
//! it never runs the stack (a stack's `probe` command is rendered by `render` and run by the
//! executor).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::stack::render::Renderer;
use crate::stack::{CommandSpec, StackDef};

/// `Ok(())` when `def` can run here, else the reason its runs are `unavailable`.
/// `root` is the stack's resolved root (`None` when it has none or it was not found).
pub fn availability(name: &str, def: &StackDef, root: Option<&Path>) -> Result<(), String> {
    let hint = |what: String| match &def.hint {
        Some(h) => format!("{what} ({h})"),
        None => what,
    };
    if let Some(var) = &def.root {
        match root {
            None => return Err(hint(format!("root {var} not found"))),
            Some(dir) if !dir.is_dir() => {
                return Err(hint(format!("root {} ({var}) not found", dir.display())))
            }
            Some(_) => {}
        }
    }
    let mut scope = Map::new();
    if let Some(root) = root {
        scope.insert(
            "root".into(),
            Value::String(root.to_string_lossy().into_owned()),
        );
    }
    let renderer = Renderer::new(name, Value::Object(scope));
    for (i, entry) in def.requires.iter().enumerate() {
        if is_env_name(entry) {
            if std::env::var_os(entry).is_none_or(|v| v.is_empty()) {
                return Err(hint(format!("environment variable {entry} not set")));
            }
        } else if entry.contains('/') {
            let path = renderer
                .render(&format!("requires[{i}]"), entry)
                .map_err(|e| {
                    let e = e.to_string();
                    hint(format!(
                        "{entry} cannot be checked: {}",
                        e.trim_start_matches("error: ")
                    ))
                })?;
            if !Path::new(&path).exists() {
                return Err(hint(format!("{path} not found")));
            }
        } else if find_program(entry).is_none() {
            return Err(hint(format!("{entry} not found")));
        }
    }
    if let Some(program) = literal_program(def) {
        let missing = if program.contains('/') {
            Path::new(&program).is_absolute() && !is_executable(Path::new(&program))
        } else {
            find_program(&program).is_none()
        };
        if missing {
            return Err(hint(format!("{program} not found")));
        }
    }
    Ok(())
}

/// `NAME`, `ASCEND_HOME_PATH`: upper-case letters, digits and `_`, not starting with a digit.
pub fn is_env_name(entry: &str) -> bool {
    let mut chars = entry.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_uppercase() || c == '_')
        && chars.all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// The first PATH entry holding an executable `program`.
pub fn find_program(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The command's program when it is written literally (no template, not a shell string, not a
/// relative path that only means something in the run's working directory).
fn literal_program(def: &StackDef) -> Option<String> {
    match def.command.as_ref()? {
        CommandSpec::Argv(args) => {
            let program = args.first()?;
            let relative_path = program.contains('/') && !program.starts_with('/');
            if program.contains("{{") || program.contains("{%") || relative_path {
                None
            } else {
                Some(program.clone())
            }
        }
        CommandSpec::Shell(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(requires: &[&str], command: &[&str]) -> StackDef {
        StackDef {
            command: Some(CommandSpec::Argv(
                command.iter().map(|s| s.to_string()).collect(),
            )),
            requires: requires.iter().map(|s| s.to_string()).collect(),
            ..StackDef::default()
        }
    }

    #[test]
    fn missing_program_reads_with_its_hint() {
        let mut d = def(&["sh", "campaign-no-such-mpicc"], &["sh"]);
        assert_eq!(
            availability("mpi", &d, None),
            Err("campaign-no-such-mpicc not found".into())
        );
        d.hint = Some("apt-get install openmpi-bin libopenmpi-dev".into());
        assert_eq!(
            availability("mpi", &d, None),
            Err(
                "campaign-no-such-mpicc not found (apt-get install openmpi-bin libopenmpi-dev)"
                    .into()
            )
        );
        assert_eq!(
            availability("mpi", &def(&["sh"], &["sh", "-c", "x"]), None),
            Ok(())
        );
    }

    #[test]
    fn env_vars_must_be_set_and_not_empty() {
        assert!(is_env_name("ASCEND_HOME_PATH") && is_env_name("_X1"));
        assert!(!is_env_name("mpicc") && !is_env_name("1ABC") && !is_env_name("A/B"));
        assert_eq!(availability("s", &def(&["PATH"], &["sh"]), None), Ok(()));
        assert_eq!(
            availability("s", &def(&["CAMPAIGN_SURELY_UNSET_VAR_42"], &["sh"]), None),
            Err("environment variable CAMPAIGN_SURELY_UNSET_VAR_42 not set".into())
        );
    }

    #[test]
    fn paths_may_use_root_and_must_exist() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("build")).unwrap();
        let mut d = def(&["{{ root }}/build"], &["sh"]);
        d.root = Some("PTO_ISA_ROOT".into());
        assert_eq!(availability("pto", &d, Some(dir.path())), Ok(()));
        d.requires = vec!["{{ root }}/build/treduce_test".into()];
        let err = availability("pto", &d, Some(dir.path())).unwrap_err();
        assert_eq!(
            err,
            format!("{}/build/treduce_test not found", dir.path().display())
        );
        assert_eq!(
            availability("pto", &d, None),
            Err("root PTO_ISA_ROOT not found".into())
        );
        let gone = dir.path().join("gone");
        assert_eq!(
            availability("pto", &d, Some(&gone)),
            Err(format!("root {} (PTO_ISA_ROOT) not found", gone.display()))
        );
    }

    #[test]
    fn literal_programs_are_checked_templates_are_not() {
        assert_eq!(
            availability("x", &def(&[], &["campaign-no-such-tool", "--x"]), None),
            Err("campaign-no-such-tool not found".into())
        );
        assert_eq!(
            availability("x", &def(&[], &["/nonexistent/bin/tool"]), None),
            Err("/nonexistent/bin/tool not found".into())
        );
        assert_eq!(
            availability("x", &def(&[], &["{{ campaign_exe }}", "bench"]), None),
            Ok(())
        );
        assert_eq!(
            availability("x", &def(&[], &["./relative/tool"]), None),
            Ok(())
        );
        assert_eq!(
            availability("host", &crate::stack::registry::host(), None),
            Ok(())
        );
    }
}
