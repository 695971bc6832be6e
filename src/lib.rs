//! campaign — declarative, crash-proof benchmark campaigns for collective communication.
//!
//! A plan (TOML) expands into cases; every case runs through every stack; raw output, samples,
//! results, statistics, figures and a report land in a run dir. The modules are layered
//! (`cli → engine → {executor, stack, plan, store, report} → analysis → model → error`, with
//! `bench`, the built-in host allreduce, beside them): see `docs/architecture.md`.
//!
//! ## The public API
//!
//! The binary needs two entry points: [`cli::main_with_args`] (the whole command line) and
//! [`executor::unit::helper_main`] with [`executor::unit::shepherd::enable`] (containment's
//! helpers, recognised before parsing), and `executor::slurm::rank_table::helper_main` (the
//! rank-table maker inside a Slurm job). Everything else public is what the integration tests
//! and benchmarks drive below the command line, so they test the real code rather than a copy:
//!
//! - [`model`]'s `case`, `output`, `plan`, `results` and `stack` types (a case, output lines, a
//!   stack definition, a result set);
//! - [`stack`]'s `registry` (shipped definitions), `render` (a stack's command for a case),
//!   `parsers` (every output parser behind [`stack::parsers::make`]) and `assets`;
//! - [`executor`]'s process contract (`ProcessSpec`, `ProcessOutcome`, `KillReason`), the local
//!   process runner and the Slurm backend's pieces (`executor::slurm`), and unit ids;
//! - [`report`]'s `render_all`, `ReportOptions`, the figure list and the summarize step's
//!   `Analysis`; [`analysis`]'s `compare` and the bootstrap settings;
//! - [`bench`] (the host stack's collectives) and [`store::lock`] (the run-dir lock);
//! - [`error`], the typed errors those return.
//!
//! The engine, plan loading, the console and every other module are `pub(crate)`: they change
//! freely behind the command line, which is the product's real interface.

pub mod analysis;
pub mod bench;
pub mod cli;
pub(crate) mod console;
pub(crate) mod engine;
pub mod error;
pub mod executor;
pub mod model;
pub(crate) mod plan;
pub mod report;
pub mod stack;
pub mod store;
