//! Provenance of a campaign's numbers: tool version, plan hash, host, kernel, CPU model, stack
//! roots with their git commit, and the relevant environment (`ASCEND_*`, `HCCL_*`, `NCCL_*`).
//!
//! Gathered once at campaign start from /proc, uname and the roots' `.git`; read-only: it never
//! spawns `git` (a root may be on a slow or broken filesystem) and never fails — unknown facts
//! stay empty.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::model::results::{Provenance, StackRoot};

/// Prefixes of environment variables recorded with results.
pub(crate) const ENV_PREFIXES: &[&str] = &["ASCEND_", "HCCL_", "NCCL_", "CAMPAIGN_"];

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
        plan_file: plan_file.map(|p| p.display().to_string()),
        host: hostname(),
        kernel: kernel(),
        cpu: cpu_model(),
        stack_roots: roots
            .iter()
            .map(|(stack, root)| {
                let root = root.as_ref();
                (
                    stack.clone(),
                    StackRoot {
                        path: root.map(|r| r.display().to_string()),
                        git_commit: root.and_then(|r| git_commit(r)),
                    },
                )
            })
            .collect(),
        env: std::env::vars()
            .filter(|(k, _)| ENV_PREFIXES.iter().any(|p| k.starts_with(p)))
            .collect(),
        seed,
        executor: Some("local".into()),
    }
}

fn read_trim(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

fn hostname() -> String {
    let h = read_trim("/proc/sys/kernel/hostname");
    if h.is_empty() {
        std::env::var("HOSTNAME").unwrap_or_default()
    } else {
        h
    }
}

fn kernel() -> String {
    let release = read_trim("/proc/sys/kernel/osrelease");
    let os = read_trim("/proc/sys/kernel/ostype");
    format!("{os} {release}").trim().to_string()
}

fn cpu_model() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = info
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_default();
    let n = std::thread::available_parallelism().map_or(0, |n| n.get());
    if model.is_empty() {
        format!("{n} CPUs")
    } else {
        format!("{model} ({n} CPUs)")
    }
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
    use super::*;

    #[test]
    fn reads_commit_of_this_repository() {
        let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let c = git_commit(&here).expect("the crate is in a git checkout");
        assert_eq!(c.len(), 40, "{c}");
        assert!(c.chars().all(|ch| ch.is_ascii_hexdigit()));
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
