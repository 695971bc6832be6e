//! The rows of a listing, made in blocks on two threads and printed in order.
//!
//! A million-case `dry-run` spends its time making rows (expanding each case, its `case_id`,
//! the SHA-256 behind its `equivalence_hash`) and formatting them; printing is cheap. The
//! sweep is cut into blocks of [`BLOCK_POINTS`] consecutive point numbers
//! (`sweep::Cases::window`): a worker thread formats the odd blocks, the calling thread the
//! even ones, and the calling thread hands every block to the sink in sweep order, so the
//! output is byte for byte that of one thread. At most a few blocks exist at a time (the
//! channel holds one), so memory stays flat at any plan size. A failing case (a filter that
//! fails on it) ends its block: the rows before it are printed, then the error, as before.

use std::collections::BTreeMap;
use std::sync::mpsc;

use super::Failure;
use crate::error::Result;
use crate::model::case::fast::Hasher;
use crate::model::plan::Plan;
use crate::model::profile::{ProfileConfig, ProfileKind};
use crate::model::stack::{Resource, StackDef};

/// Points per block: ~200 KiB of CSV, enough that handing a block over costs nothing next to
/// making it.
const BLOCK_POINTS: u64 = 2048;

/// One listed case: the columns every format shows.
pub(super) struct Row<'p> {
    pub(super) case_id: String,
    pub(super) variant: &'static str,
    /// The collective and its root (broadcast, reduce).
    pub(super) op: &'static str,
    pub(super) root: Option<u32>,
    pub(super) p: u32,
    /// Nodes and ranks per node (what `--executor slurm` asks the cluster for).
    pub(super) layout: crate::executor::NodeLayout,
    pub(super) count: u64,
    pub(super) dtype: &'static str,
    pub(super) bytes: u64,
    pub(super) warmup: u32,
    pub(super) timed: u32,
    pub(super) hash: String,
    /// Selected stacks that run this case: those whose algorithm its variant is
    /// (`plan::variants`), in the plan's order.
    pub(super) on: Vec<&'p str>,
    /// Of `on`, the stacks that do not support this case (they would be `skipped` runs).
    pub(super) skipped: Vec<&'p str>,
    /// Runs of this case (one repeat) that are CPU runs with P above the machine's CPUs.
    pub(super) oversubscribed: u64,
    /// Why, one per `skipped` stack (the limit or constraint it fails).
    pub(super) reasons: Vec<String>,
    /// The profiled runs the plan asks of each stack that runs the case (`[profile]`,
    /// `--profile`): one per (stack, kind), each `runs` times, or a planned skip.
    pub(super) profiles: Vec<Profiled<'p>>,
}

/// One (stack, kind) a case would be profiled with, as `run` plans it.
#[derive(serde::Serialize)]
pub(super) struct Profiled<'p> {
    pub(super) stack: &'p str,
    pub(super) kind: ProfileKind,
    /// Profiled runs of this kind (`[profile] runs`).
    pub(super) runs: u32,
    /// Why it would be a planned skip; none when it would run (once the timed run passes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) skip: Option<String>,
}

/// What the listing knows of the profiled runs: the plan's (or `--profile`'s) kinds and runs,
/// and, per perf kind, why perf cannot make it on this machine (asked once, by `list`).
pub(super) struct ProfilePlan {
    pub(super) config: ProfileConfig,
    pub(super) perf: BTreeMap<ProfileKind, Option<String>>,
}

/// What a listing lists: shared, read-only, by both threads.
#[derive(Clone, Copy)]
pub(super) struct Source<'p> {
    pub(super) plan: &'p Plan,
    pub(super) filter: Option<&'p str>,
    pub(super) stacks: &'p [String],
    pub(super) defs: &'p BTreeMap<String, StackDef>,
    /// Every run stays on this machine (the local executor): a multi-node case is a planned
    /// skip, with the reason `run` gives it.
    pub(super) one_machine: bool,
    pub(super) profile: &'p ProfilePlan,
}

impl<'p> Source<'p> {
    /// A fresh walk of the sweep with its own buffers (one per thread).
    pub(super) fn rows(&self) -> Result<Rows<'p>> {
        let cases = crate::plan::sweep::cases_on(self.plan, self.stacks, self.filter)?;
        Ok(Rows {
            claims: cases.claims().clone(),
            cases,
            stacks: self.stacks,
            defs: self.defs,
            devices: &self.plan.devices,
            one_machine: self.one_machine,
            hasher: Hasher::default(),
            cpus: crate::engine::prepare::machine_cpus(),
            profile: self.profile,
        })
    }
}

/// The cases of a listing and what each row needs.
pub(super) struct Rows<'p> {
    cases: crate::plan::sweep::Cases<'p>,
    /// Which stack runs which case (the sweep's own, held apart from the lent case).
    claims: crate::plan::variants::Claims,
    pub(super) stacks: &'p [String],
    pub(super) defs: &'p BTreeMap<String, StackDef>,
    devices: &'p crate::model::plan::DevicesConfig,
    one_machine: bool,
    hasher: Hasher,
    /// The machine's CPUs (as `run` sizes its pool).
    cpus: usize,
    profile: &'p ProfilePlan,
}

/// Why `def` would not run `case` (a planned skip), as `run` plans it; `None` when it runs.
pub(super) fn skip_reason(
    def: &StackDef,
    case: &crate::model::case::Case,
    devices: &crate::model::plan::DevicesConfig,
    one_machine: bool,
) -> Option<String> {
    // As `run` plans it: the local backend knows no nodes (`Backend::nodes` is `None`).
    let nodes = (!one_machine).then_some(u32::MAX);
    (def.unsupported_reason(case))
        .or_else(|| crate::engine::prepare::one_machine_reason(case, nodes))
        .or_else(|| {
            def.placement_reason(
                case,
                &devices.ids,
                devices.placement == crate::model::plan::Placement::Pinned,
            )
        })
}

impl<'p> Rows<'p> {
    /// Every selected stack runs `row` and none skips it: the stacks column is the plan's list.
    pub(super) fn all_run(&self, row: &Row<'_>) -> bool {
        row.skipped.is_empty() && row.on.len() == self.stacks.len()
    }

    pub(super) fn next_row(&mut self) -> std::result::Result<Option<Row<'p>>, Failure> {
        let case = match self.cases.next_ref() {
            None => return Ok(None),
            Some(Ok(case)) => case,
            Some(Err(e)) => return Err(Failure::Plan(e)),
        };
        let (defs, devices) = (self.defs, self.devices);
        let one_machine = self.one_machine;
        let on: Vec<&'p str> = (self.stacks.iter().enumerate())
            .filter(|(i, _)| self.claims.runs(*i, case))
            .map(|(_, s)| s.as_str())
            .collect();
        let (skipped, reasons): (Vec<&str>, Vec<String>) = on
            .iter()
            .filter_map(|s| {
                let why = skip_reason(defs.get(*s)?, case, devices, one_machine)?;
                Some((*s, why))
            })
            .unzip();
        let oversubscribed = if case.p as usize > self.cpus {
            on.iter()
                .filter(|s| {
                    !skipped.contains(*s)
                        && defs.get(**s).is_some_and(|d| d.resource() == Resource::Cpu)
                })
                .count() as u64
        } else {
            0
        };
        let profiles = profiled(self.profile, (defs, one_machine), case, (&on, &skipped));
        Ok(Some(Row {
            profiles,
            case_id: self.hasher.case_id(case).to_string(),
            variant: case.variant.as_str(),
            op: case.op.as_str(),
            root: case.root,
            p: case.p,
            layout: crate::executor::NodeLayout::of(case),
            count: case.count,
            dtype: case.dtype.as_str(),
            bytes: case.n_bytes(),
            warmup: case.warmup_rounds,
            timed: case.timed_rounds,
            hash: self.hasher.equivalence_hash(case),
            on,
            skipped,
            oversubscribed,
            reasons,
        }))
    }

    /// The stacks column: every stack that runs the case, `name(skip)` for one that does not
    /// support it.
    pub(super) fn stacks_text(&self, row: &Row<'_>, sep: &str) -> String {
        row.on
            .iter()
            .map(|s| {
                if row.skipped.contains(s) {
                    format!("{s}(skip)")
                } else {
                    s.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join(sep)
    }
}

/// The profiled runs of `case`: each kind asked for, on each stack of `on` that runs it
/// (not `skipped`: a profile needs a passed timed run), with its planned skip.
fn profiled<'p>(
    profile: &ProfilePlan,
    (defs, one_machine): (&BTreeMap<String, StackDef>, bool),
    case: &crate::model::case::Case,
    (on, skipped): (&[&'p str], &[&'p str]),
) -> Vec<Profiled<'p>> {
    if !profile.config.any() {
        return Vec::new();
    }
    let elsewhere =
        (!one_machine).then(|| crate::executor::kind_name(crate::model::plan::ExecutorKind::Slurm));
    let mut out = Vec::new();
    for &stack in on.iter().filter(|s| !skipped.contains(s)) {
        let Some(def) = defs.get(stack) else {
            continue;
        };
        for &kind in &profile.config.kinds {
            let skip = crate::engine::profiled::planned_skip(def, kind, case, elsewhere)
                .or_else(|| profile.perf.get(&kind).cloned().flatten());
            out.push(Profiled {
                stack,
                kind,
                runs: profile.config.runs,
                skip,
            });
        }
    }
    out
}

/// Consecutive rows, formatted, with what the table's summary counts of them.
#[derive(Default)]
pub(super) struct Block {
    pub(super) bytes: Vec<u8>,
    pub(super) cases: u64,
    /// (case, stack) pairs: runs of one repeat.
    pub(super) runs: u64,
    /// Runs skipped (a stack that does not support a case).
    pub(super) skipped: u64,
    /// (stack, reason) → runs.
    pub(super) why: BTreeMap<(String, String), u64>,
    /// Profiled runs that would be made (once their timed run passes).
    pub(super) profiled: u64,
    /// (stack, kind, reason) → profiled runs that would be planned skips.
    pub(super) profile_why: BTreeMap<(String, ProfileKind, String), u64>,
    /// Runs (one repeat) that oversubscribe the machine, and their largest P.
    pub(super) oversubscribed: (u64, u32),
    /// The case that ended the block early; the rows before it are in `bytes`.
    pub(super) failure: Option<Failure>,
}

impl Block {
    /// Count a row into the summary (the table's last lines).
    pub(super) fn count(&mut self, row: &Row<'_>) {
        self.cases += 1;
        self.runs += row.on.len() as u64;
        self.skipped += row.skipped.len() as u64;
        if row.oversubscribed > 0 {
            self.oversubscribed.0 += row.oversubscribed;
            self.oversubscribed.1 = self.oversubscribed.1.max(row.p);
        }
        for (stack, reason) in row.skipped.iter().zip(&row.reasons) {
            *self
                .why
                .entry((stack.to_string(), reason.clone()))
                .or_default() += 1;
        }
        self.count_profiles(row);
    }

    /// Count a row's profiled runs: `runs` of each (stack, kind), made or skipped.
    pub(super) fn count_profiles(&mut self, row: &Row<'_>) {
        for p in &row.profiles {
            let runs = u64::from(p.runs);
            match &p.skip {
                None => self.profiled += runs,
                Some(why) => {
                    *(self.profile_why)
                        .entry((p.stack.to_string(), p.kind, why.clone()))
                        .or_default() += runs;
                }
            }
        }
    }
}

/// Make the block of points `range` with `format` (one row into the block).
fn make<'p, F>(rows: &mut Rows<'p>, range: std::ops::Range<u64>, format: &F) -> Block
where
    F: Fn(&Rows<'p>, &Row<'p>, &mut Block) -> std::io::Result<()>,
{
    let mut block = Block::default();
    rows.cases.window(range);
    loop {
        match rows.next_row() {
            Ok(Some(row)) => {
                if let Err(e) = format(rows, &row, &mut block) {
                    block.failure = Some(Failure::Io(e));
                    break;
                }
            }
            Ok(None) => break,
            Err(f) => {
                block.failure = Some(f);
                break;
            }
        }
    }
    block
}

/// Every row of `source`, formatted by `format` into blocks, handed to `sink` in sweep order;
/// stops at the first failure (a block's, or the sink's). Two threads when the sweep has more
/// than one block and the machine more than one CPU.
pub(super) fn each_block<'p, F>(
    source: Source<'p>,
    format: F,
    mut sink: impl FnMut(Block) -> std::result::Result<(), Failure>,
) -> std::result::Result<(), Failure>
where
    F: Fn(&Rows<'p>, &Row<'p>, &mut Block) -> std::io::Result<()> + Sync,
{
    let mut rows = source.rows().map_err(Failure::Plan)?;
    let blocks = rows.cases.points().div_ceil(BLOCK_POINTS);
    let range = |b: u64| b * BLOCK_POINTS..(b + 1) * BLOCK_POINTS;
    let mut hand_on = |mut block: Block| {
        let failed = block.failure.take();
        sink(block)?;
        failed.map_or(Ok(()), Err)
    };
    let two = blocks > 1 && std::thread::available_parallelism().map_or(1, |n| n.get()) > 1;
    if !two {
        for b in 0..blocks {
            hand_on(make(&mut rows, range(b), &format))?;
        }
        return Ok(());
    }
    std::thread::scope(|scope| {
        // One block waits in the channel while the worker makes the next: enough to keep both
        // threads busy, little enough to keep memory flat.
        let (tx, rx) = mpsc::sync_channel::<Block>(1);
        let format = &format;
        scope.spawn(move || {
            let mut rows = match source.rows() {
                Ok(r) => r,
                Err(e) => {
                    let _ = tx.send(Block {
                        failure: Some(Failure::Plan(e)),
                        ..Block::default()
                    });
                    return;
                }
            };
            for b in (1..blocks).step_by(2) {
                let block = make(&mut rows, range(b), format);
                let ended = block.failure.is_some();
                // The receiver is gone when the listing stopped (a failure, a closed pipe).
                if tx.send(block).is_err() || ended {
                    return;
                }
            }
        });
        // `rx` is dropped when this returns, which ends a worker waiting to send.
        let mut main = move || -> std::result::Result<(), Failure> {
            for b in 0..blocks {
                let block = if b % 2 == 0 {
                    make(&mut rows, range(b), &format)
                } else {
                    match rx.recv() {
                        Ok(block) => block,
                        // The worker ended early only after sending a failed block.
                        Err(_) => break,
                    }
                };
                hand_on(block)?;
            }
            Ok(())
        };
        main()
    })
}
