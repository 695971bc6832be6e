//! Stacks: the implementations under test — which ones exist (`registry`, shipped definitions
//! and plan overlays), where they live (`roots`), what the engine runs of them (`resolve`),
//! whether they can run here (`availability`), their commands (`render`), the helper sources
//! they build (`assets`), their output parsers (`parsers`) and what a run's output says really
//! ran (`ran`).
//!
//! The definition's shape is `model::stack`. This room must not spawn processes (that is
//! `executor`).

pub mod assets;
pub(crate) mod availability;
pub(crate) mod coll_select;
pub mod parsers;
pub(crate) mod ran;
pub mod registry;
pub mod render;
pub(crate) mod resolve;
pub(crate) mod roots;
pub(crate) mod variants_probe;
