//! The pipeline shared by `run`, `resume` and `dry-run`: plan → cases → DAG → scheduler →
//! executor → bundles → results.

pub mod estimate;
pub mod verdict;
