//! The vocabulary as data: leaf types with no I/O that every other room shares.
//!
//! `case` (the seed's EquivalenceCase, its ids and hash, golden formulas, fast writers), `plan`
//! (a validated plan), `stack` (a stack definition's shape), `results` (samples, run results,
//! result sets), `history` (series and steps of the performance history), `output` (a process's output lines) and `units` (durations, human numbers).
//! `nodes` names the files and placeholders of runs that span nodes.
//! Nothing here reads files, spawns processes or knows about another room but `error`.

pub mod case;
pub(crate) mod digest;
pub(crate) mod file;
pub(crate) mod limits;
pub(crate) mod nodes;
pub mod output;
pub mod plan;
pub mod profile;
pub mod results;
pub(crate) mod sample_values;
pub(crate) mod series;
pub(crate) mod shell;
pub mod stack;
pub(crate) mod text;
pub(crate) mod units;
