//! Build script: records the git commit campaign is built from (`CAMPAIGN_GIT_COMMIT`), so the
//! provenance of the built-in `host` stack — whose code is campaign's own — names the commit of
//! the build that ran it (`history show`, the report's stack roots). Outside a git checkout (a
//! crates.io tarball) nothing is set and the commit stays unknown.

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let Some(commit) = git(&["rev-parse", "HEAD"]) else {
        return;
    };
    println!("cargo:rustc-env=CAMPAIGN_GIT_COMMIT={commit}");
    // Run again when HEAD moves: HEAD itself (a checkout) and the branch it names (a commit).
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        println!(
            "cargo:rerun-if-changed={}",
            Path::new(&dir).join("HEAD").display()
        );
    }
    if let (Some(common), Some(branch)) = (
        git(&["rev-parse", "--git-common-dir"]),
        git(&["symbolic-ref", "-q", "HEAD"]),
    ) {
        let common = Path::new(&common);
        println!("cargo:rerun-if-changed={}", common.join(&branch).display());
        println!(
            "cargo:rerun-if-changed={}",
            common.join("packed-refs").display()
        );
    }
}
