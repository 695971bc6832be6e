//! The stacks a campaign runs: their resolved definitions, roots and effective timeouts.
//!
//! Owns the engine's view of a stack — definition after overlaying the plan on the shipped one,
//! its root folder and the effective timeouts (what a run leases is `engine::prepare::need`). It
//! must not render commands (stack::render) or check availability (stack::availability).

use itertools::Itertools;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::model::plan::Plan;
use crate::model::stack::StackDef;
use crate::stack::registry;

/// One stack as the engine uses it.
#[derive(Debug, Clone)]
pub(crate) struct EngineStack {
    pub(crate) name: String,
    pub(crate) def: StackDef,
    /// Resolved root folder, or why it could not be resolved.
    pub(crate) root: std::result::Result<Option<PathBuf>, String>,
    pub(crate) timeout: Duration,
    pub(crate) no_output_timeout: Option<Duration>,
}

/// The root named by `def.root` (an environment variable such as `PYPTO_ROOT`).
fn resolve_root(def: &StackDef) -> std::result::Result<Option<PathBuf>, String> {
    let Some(var) = &def.root else {
        return Ok(None);
    };
    let resolved = crate::stack::roots::Resolver::from_process().resolve(var)?;
    Ok(Some(resolved.path))
}

/// Resolve `names` against the shipped definitions and the plan's `[stacks.NAME]`.
pub(crate) fn resolve(plan: &Plan, names: &[String]) -> Result<Vec<EngineStack>> {
    let defs = registry::resolve(&plan.stack_defs, &plan.source)?;
    let mut out = Vec::new();
    for name in names {
        let def = defs.get(name).cloned().ok_or_else(|| {
            Error::invalid(
                &plan.source,
                format!(
                    "axes.stacks: unknown stack `{name}` (known: {})",
                    defs.keys().join(", ")
                ),
            )
        })?;
        let timeout = def.timeout.unwrap_or(plan.run.timeout);
        let no_output_timeout = def.no_output_timeout.or(plan.run.no_output_timeout);
        out.push(EngineStack {
            name: name.clone(),
            root: resolve_root(&def),
            def,
            timeout,
            no_output_timeout,
        });
    }
    Ok(out)
}

/// The root of every stack that names one, as provenance records it (a stack without a root,
/// such as `host`, has nothing to record).
pub(crate) fn roots(stacks: &[EngineStack]) -> BTreeMap<String, Option<PathBuf>> {
    stacks
        .iter()
        .filter(|s| s.def.root.is_some())
        .map(|s| (s.name.clone(), s.root.clone().ok().flatten()))
        .collect()
}
