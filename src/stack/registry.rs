//! Shipped stack definitions and how a plan's `[stacks.NAME]` overlays them.
//!
//! `host` is built in (the campaign binary's own `bench allreduce`); other shipped definitions
//! are TOML files under `stacks/`, embedded at build time. Plans override them key by key.

use std::collections::BTreeMap;

use crate::stack::{CommandSpec, Resource, StackDef};

/// The built-in `host` stack: this binary's `bench allreduce`, leasing CPU cores.
pub fn host() -> StackDef {
    StackDef {
        description: Some("campaign's built-in CPU allreduce (threads as ranks)".into()),
        command: Some(CommandSpec::Argv(vec![
            "{{ campaign_exe }}".into(),
            "bench".into(),
            "allreduce".into(),
            "--case-file".into(),
            "{{ case_file }}".into(),
        ])),
        parser: Some("native".into()),
        resource: Some(Resource::Cpu),
        ..StackDef::default()
    }
}

/// Every shipped definition by name.
pub fn shipped() -> BTreeMap<String, StackDef> {
    let mut out = BTreeMap::new();
    out.insert("host".to_string(), host());
    out
}
