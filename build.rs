//! Build script: records the git commit campaign is built from (`CAMPAIGN_GIT_COMMIT`), so the
//! provenance of the built-in `host` stack — whose code is campaign's own — names the commit of
//! the build that ran it (`history show`, the report's stack roots). Outside a git checkout (a
//! crates.io tarball) nothing is set and the commit stays unknown.
//!
//! Only paths that exist are declared with `rerun-if-changed`: cargo treats a missing one as
//! changed on every build, and since the script's output feeds the whole crate, one missing path
//! (`.git/packed-refs` in a checkout whose refs were never packed) recompiled everything on
//! every `cargo build` and `cargo test` (`scripts/check-fresh-build.sh` checks it stays so).

use std::path::{Path, PathBuf};
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
}

/// Declare `path` when it exists, else its nearest existing ancestor directory (cargo scans a
/// directory's files, so a ref file created later inside it is still seen).
fn watch(path: &Path) {
    let mut p: PathBuf = path.to_path_buf();
    while !p.exists() {
        if !p.pop() || p.as_os_str().is_empty() {
            return;
        }
    }
    println!("cargo:rerun-if-changed={}", p.display());
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let Some(commit) = git(&["rev-parse", "HEAD"]) else {
        return;
    };
    println!("cargo:rustc-env=CAMPAIGN_GIT_COMMIT={commit}");
    // Run again when HEAD moves: HEAD itself (a checkout) and the branch it names (a commit
    // writes its loose ref; refs packed by `git pack-refs` are in packed-refs).
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        let head = Path::new(&dir).join("HEAD");
        if head.exists() {
            watch(&head);
        }
    }
    if let Some(common) = git(&["rev-parse", "--git-common-dir"]) {
        let common = Path::new(&common);
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            watch(&common.join(branch));
        }
        let packed = common.join("packed-refs");
        if packed.exists() {
            watch(&packed);
        }
    }
}
