//! Is a stack ready to run here? Its root resolves, its `requires` hold, it has a command.
//!
//! `requires` entries: an upper-case `NAME` is an env var that must be set; an entry containing
//! `/` or a template is a path (`root` in scope) that must exist; anything else is a program that
//! must be on PATH. Looks at the file system and environment only: it never spawns a process
//! and never runs a stack's `build` or `probe` (the DAG's steps do).

use std::path::{Path, PathBuf};

use crate::model::stack::{CommandSpec, StackDef};
use crate::stack::roots::{Resolved, Resolver};

/// The verdict on one stack.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Availability {
    /// The resolved root, when the stack names one and it was found.
    pub(crate) root: Option<Resolved>,
    /// Why it cannot run; empty = ready. The first one is the headline reason.
    pub(crate) problems: Vec<String>,
    /// The stack's hint, shown after the reason.
    pub(crate) hint: Option<String>,
    /// What failed for one platform only (its `ready_on` probe, filled in by whoever runs
    /// it): runs on the other platforms are not concerned.
    pub(crate) on: std::collections::BTreeMap<crate::model::case::Platform, Vec<String>>,
}

impl Availability {
    pub(crate) fn ready(&self) -> bool {
        self.problems.is_empty()
    }

    /// The reason its runs are `unavailable`: `mpicc not found (apt-get install …)`; None when
    /// ready.
    pub(crate) fn reason(&self) -> Option<String> {
        if self.ready() {
            return None;
        }
        let mut s = self.problems.join("; ");
        if let Some(h) = &self.hint {
            s.push_str(&format!(" ({h})"));
        }
        Some(s)
    }

    /// `unavailable: CANN not found (install the CANN toolkit …)`, or `ready`.
    pub(crate) fn summary(&self) -> String {
        match self.reason() {
            None => "ready".to_string(),
            Some(r) => format!("unavailable: {r}"),
        }
    }
}

/// Check `def` (named `name`) against the environment `resolver` sees.
pub(crate) fn check(name: &str, def: &StackDef, resolver: &Resolver) -> Availability {
    let mut problems = Vec::new();
    let mut root = None;
    if name != "host" && def.command.is_none() {
        problems.push("no command".to_string());
    }
    if let Some(var) = &def.root {
        match resolver.resolve(var) {
            Ok(r) => root = Some(r),
            Err(e) => problems.push(e),
        }
    }
    // Paths under a missing root would only repeat "root not found".
    let root_missing = def.root.is_some() && root.is_none();
    for req in &def.requires {
        if root_missing && req.contains('/') && req.contains("root") {
            continue;
        }
        problems.extend(missing(
            req,
            root.as_ref().map(|r| r.path.as_path()),
            resolver,
        ));
    }
    if let Some(program) = literal_program(def) {
        if find_program(&program, resolver.var("PATH")).is_none()
            && !problems
                .iter()
                .any(|p| p.starts_with(&format!("{program} ")))
        {
            problems.push(format!("{program} not found"));
        }
    }
    Availability {
        root,
        problems,
        hint: def.hint.clone(),
        on: Default::default(),
    }
}

/// Why one `requires` entry is not satisfied here, if it is not.
fn missing(req: &str, root: Option<&Path>, resolver: &Resolver) -> Option<String> {
    if is_env_name(req) {
        resolver
            .var(req)
            .is_none()
            .then(|| format!("{req} is not set"))
    } else if is_path_entry(req) {
        match render_path(req, root) {
            Ok(path) if path.exists() => None,
            Ok(path) => Some(format!("{} not found", path.display())),
            Err(e) => Some(format!("bad requires entry `{req}`: {e}")),
        }
    } else {
        find_program(req, resolver.var("PATH"))
            .is_none()
            .then(|| format!("{req} not found"))
    }
}

/// What `requires_on` asks for `platform` that is missing here (empty: nothing). The reason of
/// an `unavailable` run on that platform.
pub(crate) fn missing_on(
    def: &StackDef,
    platform: crate::model::case::Platform,
    root: Option<&Path>,
) -> Vec<String> {
    let Some(list) = def.requires_on.get(&platform) else {
        return Vec::new();
    };
    let resolver = Resolver::from_process();
    list.iter()
        .filter_map(|req| missing(req, root, &resolver))
        .map(|m| format!("{m} (needed on {platform})"))
        .collect()
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

/// `NAME`, `ASCEND_HOME_PATH`: upper-case letters, digits and `_`, not starting with a digit.
pub(crate) fn is_env_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .next()
            .is_some_and(|c| c.is_ascii_uppercase() || c == '_')
        && s.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// Is `req` a path entry: it names a directory (`/`) or is a template (which can only make a
/// path: a template naming a program or variable would mean nothing)?
pub(crate) fn is_path_entry(req: &str) -> bool {
    req.contains('/') || req.contains("{{") || req.contains("{%")
}

/// Render a path entry the way every stack template is rendered (strict, fuelled): a
/// misspelt name is a reason, never an empty path that happens to exist.
fn render_path(template: &str, root: Option<&Path>) -> Result<PathBuf, String> {
    crate::stack::render::render_requirement("", "requires", template, root)
        .map(PathBuf::from)
        .map_err(|e| match e {
            crate::error::Error::Invalid(diags) => diags
                .into_iter()
                .map(|d| d.message)
                .collect::<Vec<_>>()
                .join("; "),
            other => other.to_string(),
        })
}

/// `program` on `path_var` (a PATH value), or as given when it contains a `/`.
pub(crate) fn find_program(program: &str, path_var: Option<&str>) -> Option<PathBuf> {
    if program.contains('/') {
        let p = Path::new(program);
        return is_executable(p).then(|| p.to_path_buf());
    }
    std::env::split_paths(path_var?)
        .map(|dir| dir.join(program))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::stack::registry;

    fn resolver(pairs: &[(&str, &str)], cwd: &Path) -> Resolver {
        let env: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Resolver::new(env, cwd)
    }

    #[test]
    fn hccl_without_cann_is_unavailable_with_the_hint() {
        let tmp = tempfile::tempdir().unwrap();
        let all = registry::try_shipped().unwrap();
        let a = check(
            "hccl",
            &all["hccl"],
            &resolver(&[("PATH", "/usr/bin:/bin")], tmp.path()),
        );
        if Path::new("/usr/local/Ascend").exists() {
            return;
        }
        assert!(!a.ready());
        assert!(
            a.summary().starts_with("unavailable: CANN not found"),
            "{}",
            a.summary()
        );
        assert!(a.summary().contains("ASCEND_HOME_PATH"), "{}", a.summary());
    }

    #[test]
    fn simpler_with_a_sibling_root_checks_its_script() {
        let tmp = tempfile::tempdir().unwrap();
        let work = tmp.path().join("work");
        let script = tmp.path().join("simpler/examples/workers/l3/allreduce");
        std::fs::create_dir_all(&work).unwrap();
        std::fs::create_dir_all(&script).unwrap();
        let bin = tmp.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let py = bin.join("python3");
        std::fs::write(&py, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&py, std::fs::Permissions::from_mode(0o755)).unwrap();

        let all = registry::try_shipped().unwrap();
        let r = resolver(&[("PATH", bin.to_str().unwrap())], &work);
        let a = check("simpler", &all["simpler"], &r);
        assert_eq!(a.root.as_ref().unwrap().path, tmp.path().join("simpler"));
        assert_eq!(a.problems.len(), 1, "{:?}", a.problems);
        assert!(a.problems[0].ends_with("examples/workers/l3/allreduce/main.py not found"));

        std::fs::write(script.join("main.py"), "").unwrap();
        assert!(check("simpler", &all["simpler"], &r).ready());

        let r = resolver(&[("PATH", "/nonexistent")], &work);
        let a = check("simpler", &all["simpler"], &r);
        assert_eq!(a.problems, vec!["python3 not found".to_string()]);
    }

    #[test]
    fn env_requirements_and_missing_command() {
        let tmp = tempfile::tempdir().unwrap();
        let def = StackDef {
            requires: vec!["MY_TOKEN".into()],
            ..StackDef::default()
        };
        let a = check("x", &def, &resolver(&[], tmp.path()));
        assert_eq!(a.problems, vec!["no command", "MY_TOKEN is not set"]);
        let a = check("host", &registry::host(), &resolver(&[], tmp.path()));
        assert!(a.ready());
    }

    fn argv_def(requires: &[&str], command: &[&str]) -> StackDef {
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
        let tmp = tempfile::tempdir().unwrap();
        let r = resolver(&[("PATH", "/usr/bin:/bin")], tmp.path());
        let mut d = argv_def(&["sh", "campaign-no-such-mpicc"], &["sh"]);
        assert_eq!(
            check("mpi", &d, &r).reason().as_deref(),
            Some("campaign-no-such-mpicc not found")
        );
        d.hint = Some("apt-get install openmpi-bin libopenmpi-dev".into());
        assert_eq!(
            check("mpi", &d, &r).summary(),
            "unavailable: campaign-no-such-mpicc not found (apt-get install openmpi-bin libopenmpi-dev)"
        );
    }

    #[test]
    fn literal_programs_are_checked_templates_are_not() {
        let tmp = tempfile::tempdir().unwrap();
        let r = resolver(&[("PATH", "/usr/bin:/bin")], tmp.path());
        let reason = |cmd: &[&str]| check("x", &argv_def(&[], cmd), &r).reason();
        assert_eq!(
            reason(&["campaign-no-such-tool", "--x"]).as_deref(),
            Some("campaign-no-such-tool not found")
        );
        assert_eq!(
            reason(&["/nonexistent/bin/tool"]).as_deref(),
            Some("/nonexistent/bin/tool not found")
        );
        assert_eq!(reason(&["{{ campaign_exe }}", "bench"]), None);
        assert_eq!(reason(&["./relative/tool"]), None);
        assert_eq!(reason(&["sh", "-c", "x"]), None);
        // A program named in `requires` too is reported once.
        let a = check("x", &argv_def(&["nope-tool"], &["nope-tool"]), &r);
        assert_eq!(a.problems, vec!["nope-tool not found"]);
    }
}
