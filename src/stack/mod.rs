//! Stacks: the implementations under test — their definitions, rendering, availability and
//! output parsers.
//!
//! `def` is the TOML shape, `parsers` turn output lines into samples. This module must not
//! spawn processes (that is `executor`).

pub mod assets;
pub mod availability;
pub mod def;
pub mod parsers;
pub mod registry;
pub mod render;
pub mod roots;

pub use def::{CommandSpec, Counts, Resource, Shape, StackDef};
