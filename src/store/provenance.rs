//! Provenance of a campaign's numbers: tool version, plan hash, host, kernel, CPU model, stack
//! roots with their git commit, and the relevant environment (`ASCEND_*`, `HCCL_*`, `NCCL_*`).
//!
//! Gathered once at campaign start from /proc, uname and the roots' `.git`; read-only and never
//! fails — unknown facts stay empty. Commits are read from `.git` without spawning git; whether
//! a root's tree is dirty (modified or untracked files) is `git status --porcelain`, run only
//! for a root that is a checkout, with a 10 s limit (a root on a slow filesystem gives nothing).
//! Per stack ([`add_stack_facts`]): git commits of checkouts nested under its root
//! (`build/pto-isa`), the program its command runs resolved on PATH with the first line of its
//! `--version` (with a time limit), and its `env` table; per variant run, what the definition
//! sets for it by name (`add_variant_settings`: hccl's `HCCL_OP_EXPANSION_MODE` and `--algo`,
//! which the helper turns into `HCCL_ALGO`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::model::results::{Provenance, StackRoot};

/// Prefixes of environment variables recorded with results.
pub(crate) const ENV_PREFIXES: &[&str] = &[
    "ASCEND_",
    "HCCL_",
    "NCCL_",
    "CAMPAIGN_",
    "SIMPLER_",
    "PYPTO_",
    "PTO_ISA_",
    "PYTHON",
    "CUDA_VISIBLE_DEVICES",
    "LD_LIBRARY_PATH",
];

use crate::model::results::BUILT_IN_STACK as BUILT_IN;

/// The git commit this campaign binary was built from (`build.rs`), when it was built in a
/// checkout.
pub(crate) const BUILD_COMMIT: Option<&str> = option_env!("CAMPAIGN_GIT_COMMIT");

/// Collect provenance. `roots` maps stack name → root folder (resolved by the caller).
pub(crate) fn collect(
    plan_hash: Option<&str>,
    plan_file: Option<&Path>,
    roots: &BTreeMap<String, Option<PathBuf>>,
    seed: Option<u64>,
) -> Provenance {
    Provenance {
        campaign_version: env!("CARGO_PKG_VERSION").to_string(),
        plan_hash: plan_hash.map(String::from),
        // Absolute, as the journal header's `plan_file`: `run plans/x.toml` and a later
        // `resume` (which knows the plan by the header's absolute path) must name it alike.
        plan_file: plan_file.map(|p| {
            std::path::absolute(p)
                .unwrap_or_else(|_| p.to_path_buf())
                .display()
                .to_string()
        }),
        host: crate::store::host::hostname(),
        kernel: kernel(),
        cpu: cpu_model(),
        stack_roots: roots
            .iter()
            .map(|(stack, root)| {
                let root = root.as_ref();
                // The built-in `host` stack is campaign's own code: its commit is the build's.
                let built_in = (stack == BUILT_IN && root.is_none())
                    .then(|| BUILD_COMMIT.map(String::from))
                    .flatten();
                (
                    stack.clone(),
                    StackRoot {
                        path: root.map(|r| r.display().to_string()),
                        git_commit: root.and_then(|r| git_commit(r)).or(built_in),
                        nested_git: root.map(|r| nested_git(r)).unwrap_or_default(),
                        dirty: root.map(|r| dirty_files(r)).unwrap_or_default(),
                        ..StackRoot::default()
                    },
                )
            })
            .collect(),
        env: std::env::vars()
            .filter(|(k, _)| ENV_PREFIXES.iter().any(|p| k.starts_with(p)))
            .collect(),
        seed,
        executor: Some("local".into()),
        exclusive: None,
        placement: None,
        nodes: Vec::new(),
        node_hardware: Vec::new(),
    }
}

/// Add what a stack runs to its entry: `program` (argv[0] as written, when it is a literal) and
/// the `env` table of its definition.
pub(crate) fn add_stack_facts(
    provenance: &mut Provenance,
    stack: &str,
    program: Option<&str>,
    env: &BTreeMap<String, String>,
) {
    let entry = provenance.stack_roots.entry(stack.to_string()).or_default();
    entry.env = env.clone();
    // The built-in stack has no root (so `collect` never saw it): its commit is the build's.
    if stack == BUILT_IN && entry.path.is_none() && entry.git_commit.is_none() {
        entry.git_commit = BUILD_COMMIT.map(String::from);
    }
    if let Some(path) = program.and_then(resolve_program) {
        // Only interpreters and launchers are asked for their version: any other program
        // might take `--version` for work to do.
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        if name.as_deref().is_some_and(asks_version) {
            entry.program_version = program_version(&path);
        }
        entry.program = Some(path.display().to_string());
    }
}

/// Record what the stack's definition set for runs of `variant` (`settings`: names → values,
/// e.g. `HCCL_OP_EXPANSION_MODE = AIV`, `--algo = level0:NA;level1:ring`); nothing when empty.
pub(crate) fn add_variant_settings(
    provenance: &mut Provenance,
    stack: &str,
    variant: &str,
    settings: BTreeMap<String, String>,
) {
    if settings.is_empty() {
        return;
    }
    let entry = provenance.stack_roots.entry(stack.to_string()).or_default();
    entry.variants.insert(variant.to_string(), settings);
}

/// Record `stack`'s default variant of `op` (its first algorithm of the op).
pub(crate) fn add_default_variant(
    provenance: &mut Provenance,
    stack: &str,
    op: &str,
    variant: &str,
) {
    let entry = provenance.stack_roots.entry(stack.to_string()).or_default();
    entry.defaults.insert(op.to_string(), variant.to_string());
}

/// Record the fingerprint of `stack`'s definition as this campaign runs it.
pub(crate) fn add_definition(provenance: &mut Provenance, stack: &str, fingerprint: String) {
    let entry = provenance.stack_roots.entry(stack.to_string()).or_default();
    entry.definition = Some(fingerprint);
}

/// Programs whose `--version` is known to only print a version.
fn asks_version(name: &str) -> bool {
    name.starts_with("python") || ["mpirun", "mpiexec", "torchrun", "pytest"].contains(&name)
}

/// `program` on PATH (or as given when it holds a `/`), symlinks followed.
fn resolve_program(program: &str) -> Option<PathBuf> {
    let found = if program.contains('/') {
        Some(PathBuf::from(program)).filter(|p| p.is_file())
    } else {
        std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|d| d.join(program))
                .find(|p| p.is_file())
        })
    }?;
    Some(std::fs::canonicalize(&found).unwrap_or(found))
}

/// First non-empty line of `<program> --version` (stdout, else stderr: Python 2 printed it
/// there), within 10 s; `None` when it does not answer.
fn program_version(program: &Path) -> Option<String> {
    use std::process::{Command, Stdio};
    let python = program
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("python"));
    let mut command = Command::new(program);
    if python {
        // A pyenv or venv shim is not the interpreter: ask Python which one actually runs.
        command.args([
            "-c",
            "import sys; print('Python', sys.version.split()[0], sys.executable)",
        ]);
    } else {
        command.arg("--version");
    }
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if std::time::Instant::now() < until => {
                std::thread::sleep(std::time::Duration::from_millis(5))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let out = child.wait_with_output().ok()?;
    if !out.status.success() {
        return None;
    }
    [out.stdout, out.stderr].iter().find_map(|bytes| {
        String::from_utf8_lossy(bytes)
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(str::to_string)
    })
}

/// Most dirty-tree lines recorded per root.
const DIRTY_MAX: usize = 50;

/// `git status --porcelain` of a root that is a checkout: its modified and untracked files
/// (empty for a clean tree, a root that is no checkout, or git not answering within 10 s).
pub(crate) fn dirty_files(root: &Path) -> Vec<String> {
    use std::io::Read;
    use std::process::{Command, Stdio};
    if git_commit(root).is_none() {
        return Vec::new();
    }
    let Ok(mut child) = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["status", "--porcelain=v1", "--untracked-files=normal"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
    else {
        return Vec::new();
    };
    // Read in a thread: a long listing must not fill the pipe while we wait.
    let mut stdout = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let ok = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status.success(),
            Ok(None) if std::time::Instant::now() < until => {
                std::thread::sleep(std::time::Duration::from_millis(5))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break false;
            }
        }
    };
    let text = reader.join().unwrap_or_default();
    if !ok {
        return Vec::new();
    }
    let lines: Vec<String> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect();
    let mut out: Vec<String> = lines.iter().take(DIRTY_MAX).cloned().collect();
    if lines.len() > DIRTY_MAX {
        out.push(format!("… and {} more", lines.len() - DIRTY_MAX));
    }
    out
}

/// Commits of git checkouts nested under `root`, up to two levels deep (`build/pto-isa`,
/// `third_party/x`), by path relative to the root. Hidden folders are not entered.
pub(crate) fn nested_git(root: &Path) -> BTreeMap<String, String> {
    const MAX_ENTRIES: usize = 256;
    let mut out = BTreeMap::new();
    let subdirs = |dir: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .flatten()
                    .take(MAX_ENTRIES)
                    .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| e.path())
                    .collect()
            })
            .unwrap_or_default()
    };
    for first in subdirs(root) {
        for dir in std::iter::once(first.clone()).chain(subdirs(&first)) {
            if dir.join(".git").exists() {
                if let (Some(commit), Ok(rel)) = (git_commit(&dir), dir.strip_prefix(root)) {
                    out.insert(rel.display().to_string(), commit);
                }
            }
        }
    }
    out
}

fn read_trim(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

fn kernel() -> String {
    let release = read_trim("/proc/sys/kernel/osrelease");
    let os = read_trim("/proc/sys/kernel/ostype");
    format!("{os} {release}").trim().to_string()
}

fn cpu_model() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = crate::model::nodes::cpu_model_of(&info);
    let n = std::thread::available_parallelism().map_or(0, |n| n.get());
    // The spelling a Slurm job's node records share (`model::nodes::NodeHardware::cpu`).
    crate::model::nodes::cpu_text(&model, u32::try_from(n).unwrap_or(u32::MAX))
}

/// The commit `HEAD` points at in the repository containing `root`, read from `.git` files.
pub(crate) fn git_commit(root: &Path) -> Option<String> {
    let mut dir = Some(root);
    while let Some(d) = dir {
        let dot = d.join(".git");
        let git_dir = if dot.is_dir() {
            dot
        } else if dot.is_file() {
            // Worktrees and submodules: `.git` is a file `gitdir: <path>`.
            let text = std::fs::read_to_string(&dot).ok()?;
            let p = PathBuf::from(text.strip_prefix("gitdir:")?.trim());
            if p.is_absolute() {
                p
            } else {
                d.join(p)
            }
        } else {
            dir = d.parent();
            continue;
        };
        return resolve_head(&git_dir);
    }
    None
}

fn resolve_head(git_dir: &Path) -> Option<String> {
    let head = std::fs::read_to_string(git_dir.join("HEAD")).ok()?;
    let head = head.trim();
    let Some(reference) = head.strip_prefix("ref:").map(str::trim) else {
        return Some(head.to_string());
    };
    // A linked worktree keeps refs in the common dir.
    let common = std::fs::read_to_string(git_dir.join("commondir"))
        .ok()
        .map(|c| git_dir.join(c.trim()))
        .unwrap_or_else(|| git_dir.to_path_buf());
    for base in [git_dir, common.as_path()] {
        if let Ok(c) = std::fs::read_to_string(base.join(reference)) {
            return Some(c.trim().to_string());
        }
        if let Ok(packed) = std::fs::read_to_string(base.join("packed-refs")) {
            if let Some(line) = packed.lines().find(|l| l.ends_with(reference)) {
                return line.split_whitespace().next().map(String::from);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #[test]
    fn nested_checkouts_under_a_root_are_found_with_their_commits() {
        let root = tempfile::tempdir().unwrap();
        let nested = root.path().join("build/pto-isa/.git");
        std::fs::create_dir_all(&nested).unwrap();
        let commit = "0123456789abcdef0123456789abcdef01234567";
        std::fs::write(nested.join("HEAD"), format!("{commit}\n")).unwrap();
        std::fs::create_dir_all(root.path().join("src/deep/deeper/.git")).unwrap();
        let found = nested_git(root.path());
        assert_eq!(found.get("build/pto-isa").map(String::as_str), Some(commit));
        // Two levels at most: src/deep/deeper is not searched.
        assert_eq!(found.len(), 1, "{found:?}");
    }

    #[test]
    fn the_program_is_resolved_and_only_interpreters_are_asked_their_version() {
        let mut p = Provenance::default();
        let env = BTreeMap::from([("PYTHONUNBUFFERED".to_string(), "1".to_string())]);
        add_stack_facts(&mut p, "s", Some("sh"), &env);
        let s = &p.stack_roots["s"];
        assert!(
            s.program.as_deref().is_some_and(|p| p.starts_with('/')),
            "{s:?}"
        );
        assert_eq!(s.program_version, None);
        assert_eq!(s.env, env);
        add_stack_facts(&mut p, "py", Some("python3"), &BTreeMap::new());
        let py = &p.stack_roots["py"];
        if py.program.is_some() {
            let v = py.program_version.as_deref().unwrap_or("");
            assert!(v.starts_with("Python 3."), "{v}");
        }
        add_stack_facts(
            &mut p,
            "none",
            Some("no-such-program-here"),
            &BTreeMap::new(),
        );
        assert_eq!(p.stack_roots["none"].program, None);
    }

    use super::*;

    #[test]
    fn reads_commit_of_this_repository() {
        let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let c = git_commit(&here).expect("the crate is in a git checkout");
        assert_eq!(c.len(), 40, "{c}");
        assert!(c.chars().all(|ch| ch.is_ascii_hexdigit()));
    }

    /// `history show` gave `–` as the commit of the built-in stack from a git checkout.
    #[test]
    fn the_built_in_stack_carries_the_commit_of_the_build() {
        let mut roots = BTreeMap::new();
        roots.insert("host".to_string(), None);
        roots.insert("mpi".to_string(), None);
        let mut p = collect(None, None, &roots, None);
        let built = BUILD_COMMIT.expect("this crate is built in a git checkout");
        // As the engine records it: `host` is not among the roots, only its facts are added.
        let mut q = collect(None, None, &BTreeMap::new(), None);
        add_stack_facts(&mut q, "host", None, &BTreeMap::new());
        assert_eq!(q.stack_roots["host"].git_commit.as_deref(), Some(built));
        add_stack_facts(&mut p, "host", None, &BTreeMap::new());
        assert_eq!(built.len(), 40, "{built}");
        assert_eq!(p.stack_roots["host"].git_commit.as_deref(), Some(built));
        assert_eq!(p.stack_roots["host"].path, None);
        assert_eq!(p.stack_roots["mpi"].git_commit, None);
    }

    #[test]
    fn a_dirty_tree_names_its_modified_and_untracked_files() {
        let tmp = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            let ok = std::process::Command::new("git")
                .arg("-C")
                .arg(tmp.path())
                .args(args)
                .output()
                .map(|o| o.status.success())
                .unwrap_or(false);
            assert!(ok, "git {args:?}");
        };
        git(&["init", "-q"]);
        std::fs::write(tmp.path().join("a.txt"), "1").unwrap();
        git(&["add", "a.txt"]);
        git(&[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "x",
        ]);
        assert!(dirty_files(tmp.path()).is_empty(), "a clean tree");
        std::fs::write(tmp.path().join("a.txt"), "2").unwrap();
        std::fs::write(tmp.path().join("new.txt"), "n").unwrap();
        assert_eq!(dirty_files(tmp.path()), [" M a.txt", "?? new.txt"]);
        // Not a checkout: nothing, and nothing spawned.
        let plain = tempfile::tempdir().unwrap();
        assert!(dirty_files(plain.path()).is_empty());
    }

    #[test]
    fn loose_and_packed_refs() {
        let tmp = tempfile::tempdir().unwrap();
        let g = tmp.path().join(".git");
        std::fs::create_dir_all(g.join("refs/heads")).unwrap();
        std::fs::write(g.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(g.join("packed-refs"), "# pack\nabc123 refs/heads/main\n").unwrap();
        assert_eq!(git_commit(tmp.path()).as_deref(), Some("abc123"));
        std::fs::write(g.join("refs/heads/main"), "def456\n").unwrap();
        assert_eq!(git_commit(tmp.path()).as_deref(), Some("def456"));
        let p = collect(Some("h"), None, &BTreeMap::new(), Some(7));
        assert_eq!(p.campaign_version, env!("CARGO_PKG_VERSION"));
        assert!(!p.kernel.is_empty());
    }
}
