//! Source files that shipped stacks build from, embedded in the binary and written into the
//! run dir before that stack's `build` step.
//!
//! Why embedded: a campaign is started from anywhere, with a binary that may have been copied
//! away from the source tree, so a shipped stack must not depend on where campaign was built.
//! The `mpi` stack compiles `examples/mpi/allreduce_bench.c` and `hccl` compiles
//! `examples/hccl/hccl_allreduce.cpp` with its `build.sh`; the binary carries that text and
//! the engine writes it to `<run_dir>/builds/<stack>/` (the stack's build dir) before rendering
//! and running the stack's `build` command, which then finds it as
//! `{{ run_dir }}/builds/<stack>/<file>`. The run dir then also records the exact source that
//! produced the numbers. This module only writes files; it never runs a build.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// One embedded file: which stack builds from it, its file name, its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Asset {
    pub(crate) stack: &'static str,
    pub(crate) name: &'static str,
    pub text: &'static str,
}

/// Every embedded file, by stack.
pub const ASSETS: &[Asset] = &[
    Asset {
        stack: "mpi",
        name: "allreduce_bench.c",
        text: include_str!("../../examples/mpi/allreduce_bench.c"),
    },
    Asset {
        stack: "hccl",
        name: "hccl_allreduce.cpp",
        text: include_str!("../../examples/hccl/hccl_allreduce.cpp"),
    },
    Asset {
        stack: "hccl",
        name: "build.sh",
        text: include_str!("../../examples/hccl/build.sh"),
    },
];

/// The files embedded for `stack` (empty for stacks that build from elsewhere or not at all).
pub(crate) fn for_stack(stack: &str) -> impl Iterator<Item = &'static Asset> + '_ {
    ASSETS.iter().filter(move |a| a.stack == stack)
}

/// `<run_dir>/builds/<stack>`: where a stack's embedded sources and its build outputs live.
pub fn build_dir(run_dir: &Path, stack: &str) -> PathBuf {
    run_dir.join("builds").join(stack)
}

/// Write `stack`'s embedded files into its build dir (created, along with the dir itself, even
/// when the stack has no files, so a build command can put outputs there). Rewrites files whose
/// content differs (a resumed campaign built by a newer binary) and leaves identical ones alone.
/// Returns the paths written or already current.
pub fn write_for(stack: &str, run_dir: &Path) -> Result<Vec<PathBuf>> {
    let dir = build_dir(run_dir, stack);
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    let mut out = Vec::new();
    for asset in for_stack(stack) {
        let path = dir.join(asset.name);
        let current = std::fs::read(&path).ok();
        if current.as_deref() != Some(asset.text.as_bytes()) {
            // a half-written source must never be compiled
            crate::store::atomic::write_atomic(&path, asset.text.as_bytes())?;
        }
        out.push(path);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mpi_source_is_embedded_whole() {
        let files: Vec<_> = for_stack("mpi").collect();
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].name, "allreduce_bench.c");
        assert!(files[0].text.contains("MPI_Allreduce"));
        assert!(files[0].text.contains("CAMPAIGN_DONE"));
        assert_eq!(for_stack("host").count(), 0);
    }

    #[test]
    fn writes_into_the_stack_build_dir_and_repairs_changed_files() {
        let dir = tempfile::tempdir().unwrap();
        let tmp = dir.path();
        let written = write_for("mpi", tmp).expect("write");
        let src = tmp.join("builds/mpi/allreduce_bench.c");
        assert_eq!(written, vec![src.clone()]);
        assert_eq!(std::fs::read_to_string(&src).unwrap(), ASSETS[0].text);
        std::fs::write(&src, "int main(void) { return 1; }").unwrap();
        write_for("mpi", tmp).expect("rewrite");
        assert_eq!(std::fs::read_to_string(&src).unwrap(), ASSETS[0].text);
        assert!(write_for("host", tmp).unwrap().is_empty());
        assert!(tmp.join("builds/host").is_dir());
    }
}
