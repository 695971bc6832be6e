//! Helpers shared by the integration tests: run the real binary, make temp dirs.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Path of the `campaign` binary under test.
pub fn exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_campaign"))
}

/// The project root (for `plans/`, `templates/`, fixtures).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A `campaign` command with the project root as working dir.
pub fn campaign() -> Command {
    let mut c = Command::new(exe());
    c.current_dir(root());
    c
}

/// Run `campaign args…` in `cwd` and return the output.
pub fn run_in(cwd: &Path, args: &[&str]) -> Output {
    Command::new(exe())
        .current_dir(cwd)
        .args(args)
        .output()
        .expect("spawn campaign")
}

/// Run `campaign args…` from the project root.
pub fn run(args: &[&str]) -> Output {
    run_in(&root(), args)
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A fresh temporary directory, removed when dropped.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}
