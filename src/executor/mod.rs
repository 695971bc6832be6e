//! Backends: where a run's processes actually execute — this machine (`local`, each process
//! contained in a `unit`) or a Slurm cluster (`slurm`).
//!
//! The engine picks one backend per session ([`backend_for`], the one place a backend is chosen
//! by kind and name) and hands every run's processes to it through the [`Backend`] contract
//! (`backend`); the scheduler owns run state and backends only run what they are given and report
//! back. `process` is the contract of one process (`ProcessSpec` in, `ProcessOutcome` out); every
//! output line reaches the caller's `on_line`. Nothing backend-specific lives outside this room.

pub(crate) mod backend;
pub mod local;
pub(crate) mod process;
pub mod slurm;
pub(crate) mod spawn;
pub mod unit;

use std::sync::Arc;

use crate::error::Result;
use crate::model::plan::{ExecutorKind, Plan};
pub(crate) use backend::{
    AskCancel, Backend, Earlier, ExecFailure, InterruptPolicy, JobRef, OnSubmit, ProcessRequest,
    Ran,
};
pub use process::{KillReason, ProcessOutcome, ProcessSpec, GRACE};

/// How one run lays its ranks over nodes (from the case): what a backend that spans nodes asks
/// its cluster for and checks afterwards. One node (the default) is every local run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeLayout {
    pub nodes: u32,
    pub ranks_per_node: u32,
    /// Ranks round-robin over the nodes (rank r on node r mod N) instead of in blocks.
    pub spread: bool,
}

impl Default for NodeLayout {
    fn default() -> Self {
        NodeLayout {
            nodes: 1,
            ranks_per_node: 1,
            spread: false,
        }
    }
}

impl NodeLayout {
    /// The layout `case` asks for.
    pub(crate) fn of(case: &crate::model::case::Case) -> NodeLayout {
        NodeLayout {
            nodes: case.nodes.max(1),
            ranks_per_node: case.ranks_per_node(),
            spread: case.placement == crate::model::case::RankPlacement::Spread,
        }
    }
}

/// The name of a backend kind (the journal header's `executor`, each backend's `name`): the
/// names are `ExecutorKind::ALL`'s, the one list of kinds.
pub(crate) fn kind_name(kind: ExecutorKind) -> &'static str {
    kind.name()
}

/// The templates of `plan` a backend renders for a submission (`[slurm] devices_arg`), each
/// rendered as a submission would — whichever executor the plan names, since `--executor`
/// can choose another later — as `(field, why)` for what does not render.
pub(crate) fn template_problems(plan: &Plan) -> Vec<(String, String)> {
    let Some(template) = &plan.slurm.devices_arg else {
        return Vec::new();
    };
    match slurm::script::validate_devices_arg(template) {
        Ok(()) => Vec::new(),
        Err(why) => vec![(
            "slurm.devices_arg".to_string(),
            format!("template `{template}`: {why}"),
        )],
    }
}

/// The backend kind a journal header names (None: unknown or absent).
pub(crate) fn kind_named(name: &str) -> Option<ExecutorKind> {
    ExecutorKind::named(name)
}

/// The backend of `kind` for a session of `plan`, its preflight passed (one clear environment
/// error before a run dir exists or anything is submitted).
pub(crate) fn backend_for(
    kind: ExecutorKind,
    plan: &Plan,
    on_interrupt: InterruptPolicy,
) -> Result<Arc<dyn Backend>> {
    Ok(match kind {
        ExecutorKind::Local => Arc::new(local::backend::Local::new(plan)),
        ExecutorKind::Slurm => Arc::new(slurm::backend::Slurm::new(plan, on_interrupt)?),
    })
}
