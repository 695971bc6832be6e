//! `campaign doctor`: which stacks can run here and why not, their roots and git commits, the
//! CANN version, the devices seen, and the env vars that matter.
//!
//! Glue only: availability is `stack::availability`, roots are `stack::roots`, readiness probes
//! run through `engine::work::ready` (each in its containment unit, `executor::unit`, whose kind
//! is printed too). Exits 0 even when stacks are unavailable; `--require STACK` exits 1 when that
//! stack is not ready and 2 for a name that is no stack. Besides readiness probes, the one
//! process it may spawn is `npu-smi info -l` (with a timeout).

use itertools::Itertools;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::cli::args::DoctorArgs;
use crate::error::{exit, Error, Result};
use crate::model::case::Platform;
use crate::model::stack::StackDef;
use crate::stack::availability::{self, find_program};
use crate::stack::registry;
use crate::stack::roots::{self, Resolver};

/// Env var names (or prefixes ending in `_`) shown by doctor and worth recording.
const ENV_PREFIXES: &[&str] = &[
    "ASCEND_",
    "HCCL_",
    "NCCL_",
    "CUDA_VISIBLE_DEVICES",
    "PYPTO_",
    "SIMPLER_ROOT",
    "PTO_ISA_ROOT",
    "OMPI_",
    "LD_LIBRARY_PATH",
];

pub(crate) fn run(args: &DoctorArgs) -> Result<i32> {
    let defs = match &args.plan {
        // A plan's doctor is about the stacks it runs (`axes.stacks`), not every shipped one.
        Some(plan) => {
            let plan = crate::plan::load(plan)?;
            let mut all = registry::resolve(&plan.stack_defs, &plan.source)?;
            all.retain(|name, _| plan.stacks.contains(name));
            all
        }
        None => registry::try_shipped()?,
    };
    for name in &args.require {
        if !defs.contains_key(name) {
            return Err(Error::Usage(format!(
                "--require {name}: no such stack (known: {})",
                defs.keys().join(", ")
            )));
        }
    }
    let resolver = Resolver::from_process();
    if args.contract {
        return Ok(contract(&defs, &resolver));
    }
    let assessed = assess(&defs, &resolver);
    crate::console::text(&report(&defs, &assessed, &resolver));

    let mut code = exit::OK;
    for name in &args.require {
        let a = &assessed[name];
        if !a.ready() {
            crate::tell!("error: stack `{name}` is not ready — {}", a.summary());
            code = exit::RUNS_FAILED;
        }
    }
    Ok(code)
}

/// The whole doctor text for these definitions in this environment.
/// Every stack's availability, its readiness probe included (run only when the rest is there).
fn assess(
    defs: &BTreeMap<String, StackDef>,
    resolver: &Resolver,
) -> BTreeMap<String, availability::Availability> {
    defs.iter()
        .map(|(name, def)| {
            let mut a = availability::check(name, def, resolver);
            let root = a.root.as_ref().map(|r| r.path.clone());
            if a.ready() && def.ready.is_some() {
                if let Err(why) = readiness(name, def, None, root.as_deref()) {
                    a.problems.push(why);
                    a.hint = def.hint.clone();
                }
            }
            // One platform's own probe (`ready_on`), e.g. g++-15 for the sim platforms.
            if a.ready() {
                for platform in def.ready_on.keys() {
                    if let Err(why) = readiness(name, def, Some(*platform), root.as_deref()) {
                        a.on.entry(*platform).or_default().push(why);
                    }
                }
            }
            (name.clone(), a)
        })
        .collect()
}

pub(crate) fn report(
    defs: &BTreeMap<String, StackDef>,
    assessed: &BTreeMap<String, availability::Availability>,
    resolver: &Resolver,
) -> String {
    let mut out = String::new();
    out.push_str("Roots\n");
    for kind in roots::KINDS {
        let line = match resolver.resolve(kind.var) {
            Ok(r) => {
                let mut s = format!("{} ({})", r.path.display(), r.source.as_str());
                if kind.var == roots::CANN {
                    match roots::cann_version(&r.path) {
                        Some(v) => s.push_str(&format!(", CANN {v}")),
                        None => s.push_str(", version unknown"),
                    }
                } else if let Some(c) = roots::git_commit(&r.path) {
                    s.push_str(&format!(", git {c}"));
                }
                s
            }
            Err(e) => e,
        };
        out.push_str(&format!("  {:<18} {line}\n", kind.var));
    }

    out.push_str("\nDevices\n");
    out.push_str(&indent(&devices(resolver)));

    out.push_str("\nEnvironment\n");
    let env = relevant_env();
    if env.is_empty() {
        out.push_str("  (none of ASCEND_*, HCCL_*, NCCL_*, CUDA_VISIBLE_DEVICES, PYPTO_*, SIMPLER_ROOT, PTO_ISA_ROOT set)\n");
    }
    for (k, v) in env {
        out.push_str(&format!("  {k}={v}\n"));
    }

    out.push_str("\nContainment\n");
    out.push_str(&format!(
        "  {}\n",
        crate::executor::unit::containment().describe()
    ));

    out.push_str("\nStacks\n");
    let mut ready = 0;
    for name in defs.keys() {
        let a = &assessed[name];
        if a.ready() {
            ready += 1;
        }
        if a.ready() {
            out.push_str(&format!("  {name:<16} ready\n"));
        } else {
            out.push_str(&format!(
                "  {name:<16} unavailable: {}\n",
                a.problems.join("; ")
            ));
            if let Some(h) = &a.hint {
                out.push_str(&format!("  {:<16}   hint: {h}\n", ""));
            }
        }
        // What one platform alone needs (`requires_on`, `ready_on`), e.g. g++-15 for the sim
        // platforms.
        let def = &defs[name];
        let platforms: std::collections::BTreeSet<_> =
            def.requires_on.keys().chain(def.ready_on.keys()).collect();
        for platform in platforms {
            let root = a.root.as_ref().map(|r| r.path.as_path());
            let mut missing = availability::missing_on(def, *platform, root);
            missing.extend(a.on.get(platform).into_iter().flatten().cloned());
            let state = if !missing.is_empty() {
                format!("runs unavailable: {}", missing.join(", "))
            } else if !a.ready() && def.ready_on.contains_key(platform) {
                // Its probe runs only once the stack itself is ready.
                "not checked (the stack is not ready)".to_string()
            } else {
                "ok".to_string()
            };
            out.push_str(&format!("  {:<16}   on {platform}: {state}\n", ""));
        }
        if let Some(r) = &a.root {
            let commit = roots::git_commit(&r.path)
                .map(|c| format!(", git {c}"))
                .unwrap_or_default();
            out.push_str(&format!(
                "  {:<16}   root {}={}{commit}\n",
                "",
                r.var,
                r.path.display()
            ));
        }
    }
    out.push_str(&format!("\n{ready} of {} stacks ready\n", defs.len()));
    out
}

/// Run `def`'s readiness probe now (its output goes to a temporary log, removed afterwards).
/// `platform`: its `ready_on.<platform>` probe instead of `ready`.
fn readiness(
    name: &str,
    def: &StackDef,
    platform: Option<Platform>,
    root: Option<&Path>,
) -> std::result::Result<(), String> {
    let log =
        std::env::temp_dir().join(format!("campaign-ready-{}-{name}.log", std::process::id()));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("readiness probe: cannot start a runtime: {e}"))?;
    let (_tx, cancel) = tokio::sync::watch::channel(false);
    let result = runtime.block_on(crate::engine::work::ready(
        name, def, platform, root, &log, cancel,
    ));
    let _ = std::fs::remove_file(&log);
    result
}

/// `doctor --contract`: every contract item of every stack whose root is present, as a table
/// `stack  item  ok|broken  why`. Exit 1 when any item is broken.
fn contract(defs: &BTreeMap<String, StackDef>, resolver: &Resolver) -> i32 {
    let mut rows: Vec<[String; 4]> = Vec::new();
    let mut broken = 0;
    for (name, def) in defs {
        if def.contract.is_empty() {
            continue;
        }
        let root = match &def.root {
            Some(var) => match resolver.resolve(var) {
                Ok(r) => Some(r.path),
                Err(e) => {
                    rows.push([name.clone(), "(all)".into(), "not checked".into(), e]);
                    continue;
                }
            },
            None => None,
        };
        for item in &def.contract {
            let (state, why) = match check_item(name, def, item, root.as_deref()) {
                Ok(()) => ("ok", String::new()),
                Err(why) => {
                    broken += 1;
                    ("broken", why)
                }
            };
            rows.push([name.clone(), item.item.clone(), state.into(), why]);
        }
    }
    let width = |i: usize| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0);
    let (w0, w1, w2) = (width(0).max(5), width(1).max(4), width(2).max(5));
    crate::say!("{:w0$}  {:w1$}  {:w2$}  why", "stack", "item", "state");
    for r in &rows {
        crate::say!("{:w0$}  {:w1$}  {:w2$}  {}", r[0], r[1], r[2], r[3]);
    }
    if rows.is_empty() {
        crate::say!("(no stack declares a contract)");
    }
    if broken > 0 {
        crate::tell!(
            "error: {broken} contract item(s) broken: upstream moved or the install is incomplete"
        );
        exit::RUNS_FAILED
    } else {
        exit::OK
    }
}

/// Run one contract item (in its containment unit, with the readiness probe's limit) and check
/// its exit code and the strings it must print.
fn check_item(
    name: &str,
    def: &StackDef,
    item: &crate::model::stack::ContractItem,
    root: Option<&Path>,
) -> std::result::Result<(), String> {
    let mut probe = def.clone();
    probe.ready = Some(item.command.clone());
    let log = std::env::temp_dir().join(format!(
        "campaign-contract-{}-{name}.log",
        std::process::id()
    ));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a runtime: {e}"))?;
    let (_tx, cancel) = tokio::sync::watch::channel(false);
    let ran = runtime.block_on(crate::engine::work::ready(
        name, &probe, None, root, &log, cancel,
    ));
    let output = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    // `readiness probe `argv` failed (exit code 4): ERROR: …` → `exit code 4: ERROR: …`.
    let ran = ran.map_err(|e| match e.split_once("` failed (") {
        Some((_, rest)) => rest
            .replacen("): ", ": ", 1)
            .trim_end_matches(')')
            .to_string(),
        None => e,
    });
    ran?;
    let missing: Vec<&str> = item
        .expect
        .iter()
        .map(String::as_str)
        .filter(|e| !output.contains(e))
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "output lacks {}",
            missing.iter().map(|m| format!("`{m}`")).join(", ")
        ))
    }
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}\n")).collect()
}

/// `ASCEND_*`, `HCCL_*`, … from the process environment, sorted.
pub(crate) fn relevant_env() -> BTreeMap<String, String> {
    std::env::vars()
        .filter(|(k, _)| {
            ENV_PREFIXES.iter().any(|p| {
                if p.ends_with('_') {
                    k.starts_with(p)
                } else {
                    k == p
                }
            })
        })
        .collect()
}

/// What `npu-smi info -l` says, or why it was not asked.
fn devices(resolver: &Resolver) -> String {
    let Some(npu_smi) = find_program("npu-smi", resolver.var("PATH")) else {
        return "npu-smi not found on PATH: no Ascend driver here, no NPUs seen".to_string();
    };
    match run_with_timeout(
        Command::new(&npu_smi).args(["info", "-l"]),
        Duration::from_secs(15),
    ) {
        Ok(text) if text.trim().is_empty() => "npu-smi info -l printed nothing".to_string(),
        Ok(text) => text,
        Err(e) => format!("npu-smi info -l failed: {e}"),
    }
}

/// Run a command, return its stdout; kill it after `limit` (a wedged driver must not hang
/// doctor).
fn run_with_timeout(cmd: &mut Command, limit: Duration) -> std::result::Result<String, String> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut stdout = child.stdout.take().expect("piped stdout");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    loop {
        match child.try_wait().map_err(|e| e.to_string())? {
            Some(status) => {
                let text = reader.join().unwrap_or_default();
                return if status.success() {
                    Ok(text)
                } else {
                    Err(format!("{status}: {}", text.trim()))
                };
            }
            None if start.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("no answer within {}s, killed", limit.as_secs()));
            }
            None => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}
