//! Plans: TOML → validated [`Plan`], with diagnostics that point at file:line:col.
//!
//! `model` holds the validated types; `raw` reads toml's spanned document, `diag` turns spans
//! into positions and snippets, `load` reads the sweep sections, `config` the run-time ones,
//! `stacks` the stack tables and `validate` the checks over the whole product. The sweep itself
//! (cases from a plan) is `crate::plan::sweep`.

mod census_plan;
mod config;
pub(crate) mod diag;
mod load;
mod profile_section;
mod raw;
mod sections;
mod stacks;
pub(crate) mod sweep;
#[cfg(test)]
mod tests;
mod validate;
pub(crate) mod variants;

pub(crate) use census_plan::census_only;
pub(crate) use config::{parse_id_ranges, MAX_REPEATS};
pub(crate) use load::{load, load_observing, load_with, locate, parse_with, read_text, Overrides};
pub(crate) use stacks::select_stacks;
