//! campaign — declarative, crash-proof benchmark campaigns for collective communication.
//!
//! A plan (TOML) expands into cases; every case runs through every stack; raw output, samples,
//! results, statistics, figures and a report land in a run dir. The modules are layered
//! (`cli → engine → {executor, stack, plan, store, report} → analysis → model → error`, with
//! `bench`, the built-in host allreduce, beside them): see `docs/architecture.md`.

pub mod analysis;
pub mod bench;
pub mod cli;
pub mod console;
pub mod engine;
pub mod error;
pub mod executor;
pub mod model;
pub mod plan;
pub mod report;
pub mod stack;
pub mod store;
