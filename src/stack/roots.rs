//! Where the stacks live: one resolver for `PYPTO_ROOT`, `SIMPLER_ROOT`, `PTO_ISA_ROOT`,
//! `PYPTO_NOTES_ROOT` and the CANN toolkit (`ASCEND_HOME_PATH`), plus the CANN version and the
//! git commit of a root.
//!
//! Order for every root: the env var (always wins, even when it points nowhere — that is an
//! error, not a fallback) → a sibling directory of the current dir (`../pypto`) → the
//! Docker-standard path (`/opt/pypto`). This module only looks at the file system and the
//! environment it is given; it never spawns a process and never decides whether a stack runs
//! (that is `stack::availability`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One kind of root and where to look for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RootKind {
    /// The env var naming it (also the name stack definitions use in `root = "…"`).
    pub(crate) var: &'static str,
    /// What it is, for messages (`CANN`, `pypto`, …).
    pub(crate) label: &'static str,
    /// Directory name next to the current dir (`../<sibling>`), when the convention has one.
    pub(crate) sibling: Option<&'static str>,
    /// Standard install paths, tried in order.
    pub(crate) standard: &'static [&'static str],
}

/// The CANN toolkit's env var (set by CANN's `set_env.sh`).
pub(crate) const CANN: &str = "ASCEND_HOME_PATH";

/// Every root campaign knows, in the order `doctor` shows them.
pub(crate) const KINDS: &[RootKind] = &[
    RootKind {
        var: CANN,
        label: "CANN",
        sibling: None,
        standard: &[
            "/usr/local/Ascend/ascend-toolkit/latest",
            "/usr/local/Ascend/latest",
            "/usr/local/Ascend/cann",
            "/opt/Ascend/ascend-toolkit/latest",
        ],
    },
    RootKind {
        var: "PYPTO_ROOT",
        label: "pypto",
        sibling: Some("pypto"),
        standard: &["/opt/pypto"],
    },
    RootKind {
        var: "SIMPLER_ROOT",
        label: "simpler",
        sibling: Some("simpler"),
        standard: &["/opt/pypto/runtime"],
    },
    RootKind {
        var: "PTO_ISA_ROOT",
        label: "pto-isa",
        sibling: Some("pto-isa"),
        standard: &["/opt/pto-isa"],
    },
    RootKind {
        var: "PYPTO_NOTES_ROOT",
        label: "pypto-3.0-notes",
        sibling: Some("pypto-3.0-notes"),
        standard: &[],
    },
];

/// Look a root kind up by its env var name.
pub(crate) fn kind(var: &str) -> Option<&'static RootKind> {
    KINDS.iter().find(|k| k.var == var)
}

/// How a root was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    Env,
    Sibling,
    Standard,
}

impl Source {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Source::Env => "env",
            Source::Sibling => "sibling dir",
            Source::Standard => "standard path",
        }
    }
}

/// A root that exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Resolved {
    pub(crate) var: String,
    pub(crate) path: PathBuf,
    pub(crate) source: Source,
}

/// The environment a resolution sees: env vars and the current dir (injectable for tests).
#[derive(Debug, Clone)]
pub(crate) struct Resolver {
    env: BTreeMap<String, String>,
    cwd: PathBuf,
}

impl Resolver {
    /// The real process environment and current dir.
    pub(crate) fn from_process() -> Resolver {
        Resolver {
            env: std::env::vars().collect(),
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
        }
    }

    /// A given environment and current dir.
    #[cfg(test)]
    pub(crate) fn new(env: BTreeMap<String, String>, cwd: impl Into<PathBuf>) -> Resolver {
        Resolver {
            env,
            cwd: cwd.into(),
        }
    }

    pub(crate) fn var(&self, name: &str) -> Option<&str> {
        self.env
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// Resolve the root named `var` (`PYPTO_ROOT`, `ASCEND_HOME_PATH`, …). A name campaign does
    /// not know is still honoured through its env var (a plan may name its own root).
    /// The error says what was looked at, e.g. `CANN not found: ASCEND_HOME_PATH is not set and
    /// none of /usr/local/Ascend/ascend-toolkit/latest, … exist`.
    pub(crate) fn resolve(&self, var: &str) -> Result<Resolved, String> {
        let spec = kind(var);
        let label = spec.map_or(var, |k| k.label);
        if let Some(value) = self.var(var) {
            let path = PathBuf::from(value);
            let path = if path.is_relative() {
                self.cwd.join(path)
            } else {
                path
            };
            return if path.is_dir() {
                Ok(Resolved {
                    var: var.to_string(),
                    path,
                    source: Source::Env,
                })
            } else {
                Err(format!(
                    "{label} not found: {var}={value} is not a directory"
                ))
            };
        }
        let mut looked = Vec::new();
        if let Some(k) = spec {
            if let Some(sibling) = k.sibling {
                let path = self.cwd.join("..").join(sibling);
                if path.is_dir() {
                    return Ok(Resolved {
                        var: var.to_string(),
                        path: normalize(&path),
                        source: Source::Sibling,
                    });
                }
                looked.push(format!("../{sibling}"));
            }
            for standard in k.standard {
                let path = PathBuf::from(standard);
                if path.is_dir() {
                    return Ok(Resolved {
                        var: var.to_string(),
                        path,
                        source: Source::Standard,
                    });
                }
                looked.push((*standard).to_string());
            }
        }
        if looked.is_empty() {
            Err(format!("{label} not found: {var} is not set"))
        } else {
            Err(format!(
                "{label} not found: {var} is not set and none of {} exist",
                looked.join(", ")
            ))
        }
    }
}

/// `a/b/../c` → `a/c`, lexically (the sibling dir is shown to users; no symlink resolution).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The CANN version of a toolkit root, from its version files (first one that says).
pub(crate) fn cann_version(root: &Path) -> Option<String> {
    let mut candidates = vec![
        root.join("version.cfg"),
        root.join("compiler/version.info"),
        root.join("runtime/version.info"),
        root.join("version.info"),
    ];
    if let Ok(entries) = std::fs::read_dir(root) {
        for e in entries.flatten() {
            let info = e.path().join("ascend_toolkit_install.info");
            if info.is_file() {
                candidates.insert(0, info);
            }
        }
    }
    candidates
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .find_map(|text| version_from_text(&text))
}

/// The value of the first `version=…` / `Version=…` key (the key may carry a prefix such as
/// `runtime_running_version`), with brackets and quotes stripped.
fn version_from_text(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let (key, value) = line.split_once('=')?;
        if !key.trim().to_ascii_lowercase().ends_with("version") {
            return None;
        }
        let v = value
            .trim()
            .trim_matches(|c| c == '[' || c == ']' || c == '"');
        // `[7.0.0.5.242:7.0.0]` names the running version after the colon.
        let v = v.rsplit(':').next().unwrap_or(v).trim();
        (!v.is_empty()).then(|| v.to_string())
    })
}

/// The commit checked out in `root` (a git work tree or linked worktree), read from `.git`
/// without spawning git. `None` when `root` is not a git checkout or the ref cannot be read.
pub(crate) fn git_commit(root: &Path) -> Option<String> {
    let dot_git = root.join(".git");
    let git_dir = if dot_git.is_file() {
        let text = std::fs::read_to_string(&dot_git).ok()?;
        let target = text.trim().strip_prefix("gitdir:")?.trim();
        let p = PathBuf::from(target);
        if p.is_relative() {
            root.join(p)
        } else {
            p
        }
    } else if dot_git.is_dir() {
        dot_git
    } else {
        return None;
    };
    let head = std::fs::read_to_string(git_dir.join("HEAD")).ok()?;
    let head = head.trim();
    let Some(reference) = head.strip_prefix("ref:") else {
        return is_hash(head).then(|| head.to_string());
    };
    let reference = reference.trim();
    // Linked worktrees keep branch refs in the common dir.
    let common = std::fs::read_to_string(git_dir.join("commondir"))
        .ok()
        .map(|c| {
            let p = PathBuf::from(c.trim());
            if p.is_relative() {
                git_dir.join(p)
            } else {
                p
            }
        })
        .unwrap_or_else(|| git_dir.clone());
    for dir in [&git_dir, &common] {
        if let Ok(hash) = std::fs::read_to_string(dir.join(reference)) {
            let hash = hash.trim();
            if is_hash(hash) {
                return Some(hash.to_string());
            }
        }
    }
    let packed = std::fs::read_to_string(common.join("packed-refs")).ok()?;
    packed.lines().find_map(|line| {
        let (hash, name) = line.split_once(' ')?;
        (name.trim() == reference && is_hash(hash)).then(|| hash.to_string())
    })
}

fn is_hash(s: &str) -> bool {
    (s.len() == 40 || s.len() == 64) && s.chars().all(|c| c.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn env_var_wins_over_sibling() {
        let tmp = tempfile::tempdir().unwrap();
        let work = tmp.path().join("work");
        let sibling = tmp.path().join("pypto");
        let elsewhere = tmp.path().join("elsewhere");
        for d in [&work, &sibling, &elsewhere] {
            std::fs::create_dir_all(d).unwrap();
        }
        let r = Resolver::new(env(&[("PYPTO_ROOT", elsewhere.to_str().unwrap())]), &work);
        let got = r.resolve("PYPTO_ROOT").unwrap();
        assert_eq!(got.path, elsewhere);
        assert_eq!(got.source, Source::Env);

        let r = Resolver::new(BTreeMap::new(), &work);
        let got = r.resolve("PYPTO_ROOT").unwrap();
        assert_eq!(got.path, sibling);
        assert_eq!(got.source, Source::Sibling);
    }

    #[test]
    fn env_var_pointing_nowhere_is_an_error_not_a_fallback() {
        let tmp = tempfile::tempdir().unwrap();
        let work = tmp.path().join("work");
        std::fs::create_dir_all(tmp.path().join("simpler")).unwrap();
        std::fs::create_dir_all(&work).unwrap();
        let r = Resolver::new(env(&[("SIMPLER_ROOT", "/nonexistent/simpler")]), &work);
        let err = r.resolve("SIMPLER_ROOT").unwrap_err();
        assert_eq!(
            err,
            "simpler not found: SIMPLER_ROOT=/nonexistent/simpler is not a directory"
        );
    }

    #[test]
    fn missing_root_lists_where_it_looked() {
        let tmp = tempfile::tempdir().unwrap();
        let r = Resolver::new(BTreeMap::new(), tmp.path());
        let err = r.resolve("PTO_ISA_ROOT").unwrap_err();
        assert!(
            err.starts_with("pto-isa not found: PTO_ISA_ROOT is not set and none of ../pto-isa")
        );
        assert!(err.contains("/opt/pto-isa"), "{err}");
        let err = r.resolve("MY_OWN_ROOT").unwrap_err();
        assert_eq!(err, "MY_OWN_ROOT not found: MY_OWN_ROOT is not set");
    }

    #[test]
    fn cann_from_env_and_its_version() {
        let tmp = tempfile::tempdir().unwrap();
        let cann = tmp.path().join("cann");
        std::fs::create_dir_all(cann.join("x86_64-linux")).unwrap();
        std::fs::write(
            cann.join("x86_64-linux/ascend_toolkit_install.info"),
            "package_name=Ascend-cann-toolkit\nversion=8.0.RC3\narch=x86_64\n",
        )
        .unwrap();
        let r = Resolver::new(env(&[(CANN, cann.to_str().unwrap())]), tmp.path());
        let got = r.resolve(CANN).unwrap();
        assert_eq!(cann_version(&got.path).as_deref(), Some("8.0.RC3"));
        assert_eq!(
            version_from_text("runtime_running_version=[7.0.0.5.242:7.0.0]\n").as_deref(),
            Some("7.0.0")
        );
    }

    #[test]
    fn git_commit_from_branch_packed_and_detached() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let h = "0123456789abcdef0123456789abcdef01234567";
        std::fs::create_dir_all(root.join(".git/refs/heads")).unwrap();
        std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(root.join(".git/refs/heads/main"), format!("{h}\n")).unwrap();
        assert_eq!(git_commit(root).as_deref(), Some(h));

        std::fs::remove_file(root.join(".git/refs/heads/main")).unwrap();
        let h2 = "fedcba9876543210fedcba9876543210fedcba98";
        std::fs::write(
            root.join(".git/packed-refs"),
            format!("# pack-refs with: peeled\n{h2} refs/heads/main\n"),
        )
        .unwrap();
        assert_eq!(git_commit(root).as_deref(), Some(h2));

        std::fs::write(root.join(".git/HEAD"), format!("{h}\n")).unwrap();
        assert_eq!(git_commit(root).as_deref(), Some(h));
        assert_eq!(git_commit(&root.join("nope")), None);
    }

    #[test]
    fn git_commit_of_this_repository_matches_git() {
        let here = Path::new(env!("CARGO_MANIFEST_DIR"));
        let Ok(out) = std::process::Command::new("git")
            .args(["rev-parse", "HEAD"])
            .current_dir(here)
            .output()
        else {
            return;
        };
        if out.status.success() {
            let want = String::from_utf8_lossy(&out.stdout).trim().to_string();
            assert_eq!(git_commit(here).as_deref(), Some(want.as_str()));
        }
    }
}
