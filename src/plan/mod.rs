//! Plans: TOML → validated [`Plan`], with diagnostics that point at file:line:col.
//!
//! `model` holds the validated types. Parsing and validation live beside it; the sweep itself
//! (cases from a plan) is `crate::sweep`.

pub mod model;

pub use model::*;
