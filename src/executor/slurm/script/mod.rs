//! Batch jobs: turning one rendered run into a batch script and the `sbatch` command that
//! submits it (also what `campaign dry-run --executor slurm` prints).
//!
//! Owns the job name, the `--time` derived from the run's timeout, the devices request from
//! the `[slurm] devices_arg` template, and the script text: record the devices Slurm granted,
//! set `CAMPAIGN_DEVICES` from them, run the stack in its working directory and record its exit
//! code. It renders text only: it does not run `sbatch` (that is `submit`) nor read what the
//! script leaves behind (that is `bundle`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use minijinja::{context, Environment, UndefinedBehavior};

use crate::error::{Error, Result};
use crate::executor::slurm::bundle::{DEVICES_FILE, RESULT_FILE, SCRIPT_FILE};
use crate::executor::{NodeLayout, ProcessSpec};
use crate::model::plan::{DeviceKind, SlurmConfig};
// Single-quote for sh: `it's` → `'it'\''s'` (the one quoter).
use crate::model::shell::quote;

/// Devices request when `[slurm] devices_arg` is not set: a `gpu`-type GRES, the kind for which
/// Slurm sets visible-device variables (CUDA_VISIBLE_DEVICES, SLURM_JOB_GPUS) for the job.
pub(crate) const DEFAULT_DEVICES_ARG: &str = "--gres=gpu:{{ p }}";

/// Devices request for CPU-device campaigns (the `host` stack): one CPU per rank.
pub(crate) const DEFAULT_CPU_DEVICES_ARG: &str = "--cpus-per-task={{ p }}";

/// Exit code of the batch script when it cannot enter the run's working directory (the stack
/// never started, so no result is recorded).
pub(crate) const NO_CWD_EXIT: i32 = 97;

/// One run to submit: the rendered process plus what Slurm needs to place it.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchJob {
    pub campaign: String,
    pub case_id: String,
    pub stack: String,
    /// Devices the run needs (the case's P).
    pub devices: u32,
    /// Nodes and ranks per node (`--nodes`, `--ntasks-per-node`, checked after start).
    pub layout: NodeLayout,
    pub kind: DeviceKind,
    /// argv, env, cwd, timeout and `log_path` (the job's stdout and stderr). The no-output
    /// timeout and grace do not apply under Slurm (Slurm's KillWait is the grace).
    pub process: ProcessSpec,
    /// The run's bundle dir on the shared filesystem (script, devices and result files).
    pub bundle_dir: PathBuf,
}

impl BatchJob {
    /// `campaign:<campaign>:<case_id>:<stack>`: findable with `squeue -n` after a crash.
    pub fn name(&self) -> String {
        format!("campaign:{}:{}:{}", self.campaign, self.case_id, self.stack)
    }

    pub(crate) fn script_path(&self) -> PathBuf {
        self.bundle_dir.join(SCRIPT_FILE)
    }

    /// The same job with bundle, working directory and log as absolute paths.
    pub(crate) fn absolute(&self) -> BatchJob {
        let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
        let mut job = self.clone();
        job.bundle_dir = abs(&self.bundle_dir);
        job.process.cwd = abs(&self.process.cwd);
        job.process.log_path = abs(&self.process.log_path);
        job
    }
}

/// The `sbatch` argv that submits `job` (its script at [`BatchJob::script_path`]).
///
/// Paths are made absolute: Slurm reads a relative `--output` from the job's working
/// directory, not from where sbatch ran.
pub fn sbatch_command(config: &SlurmConfig, job: &BatchJob) -> Result<Vec<String>> {
    let job = &job.absolute();
    let mut argv = vec![
        "sbatch".to_string(),
        "--parsable".to_string(),
        format!("--job-name={}", job.name()),
        format!("--output={}", job.process.log_path.display()),
        format!("--chdir={}", job.bundle_dir.display()),
        // A job Slurm re-queued on its own (after a node failure) would run the stack again
        // behind campaign's back; the run fails instead, and `resume --retry-failed` re-runs it.
        "--no-requeue".to_string(),
    ];
    if let Some(time) = time_limit(config, job.process.timeout) {
        argv.push(format!("--time={time}"));
    }
    for (flag, value) in [
        ("--partition", &config.partition),
        ("--account", &config.account),
        ("--qos", &config.qos),
    ] {
        if let Some(value) = value {
            argv.push(format!("{flag}={value}"));
        }
    }
    argv.extend(layout_args(job.layout));
    // Devices are asked per node (`--gres` counts per node): P on one node, K on each of many.
    let per_node = if job.layout.nodes > 1 {
        job.layout.ranks_per_node
    } else {
        job.devices
    };
    if job.layout.nodes <= 1 || job.kind != DeviceKind::Cpu || config.devices_arg.is_some() {
        argv.extend(devices_args(config, per_node, job.kind)?);
    }
    argv.extend(config.extra_args.iter().cloned());
    argv.push(job.script_path().display().to_string());
    Ok(argv)
}

/// Always `--nodes`, so Slurm cannot give a case another shape; on several nodes also one task
/// per rank on each node, in round-robin order for `spread`.
pub(crate) fn layout_args(layout: NodeLayout) -> Vec<String> {
    let mut argv = vec![format!("--nodes={}", layout.nodes.max(1))];
    if layout.nodes > 1 {
        argv.push(format!("--ntasks-per-node={}", layout.ranks_per_node));
        if layout.spread {
            argv.push("--distribution=cyclic".into());
        }
    }
    argv
}

/// `[slurm] time_limit` as written, else the run's timeout rounded up to whole minutes (Slurm's
/// granularity) as `H:MM:SS` or `D-HH:MM:SS`. `None` leaves the partition's default.
pub(crate) fn time_limit(config: &SlurmConfig, timeout: Option<Duration>) -> Option<String> {
    if let Some(limit) = &config.time_limit {
        return Some(limit.clone());
    }
    let secs = timeout?.as_secs_f64();
    let minutes = ((secs / 60.0).ceil() as u64).max(1);
    let (days, hours, mins) = (minutes / 1440, (minutes % 1440) / 60, minutes % 60);
    Some(if days > 0 {
        format!("{days}-{hours:02}:{mins:02}:00")
    } else {
        format!("{hours}:{mins:02}:00")
    })
}

/// The devices request: `devices_arg` (or the default for the device kind) rendered with `p`
/// and `kind`, split on whitespace so one template may give several arguments. P = 0 asks
/// for nothing.
pub(crate) fn devices_args(config: &SlurmConfig, p: u32, kind: DeviceKind) -> Result<Vec<String>> {
    if p == 0 {
        return Ok(Vec::new());
    }
    let template = match (&config.devices_arg, kind) {
        (Some(t), _) => t.as_str(),
        (None, DeviceKind::Cpu) => DEFAULT_CPU_DEVICES_ARG,
        (None, _) => DEFAULT_DEVICES_ARG,
    };
    let kind_name = match kind {
        DeviceKind::Npu => "npu",
        DeviceKind::Gpu => "gpu",
        DeviceKind::Cpu => "cpu",
    };
    let rendered = render_devices_arg(template, p, kind_name).map_err(|e| {
        Error::Usage(format!(
            "[slurm] devices_arg `{template}`: {e} (expected a template over `p` and `kind`, \
             e.g. `--gres=gpu:{{{{ p }}}}` or `--gpus={{{{ p }}}}`)"
        ))
    })?;
    Ok(rendered.split_whitespace().map(str::to_string).collect())
}

/// Check a `devices_arg` template without a run (for plan validation): `Err` says why.
pub(crate) fn validate_devices_arg(template: &str) -> std::result::Result<(), String> {
    render_devices_arg(template, 1, "npu").map(|_| ())
}

fn render_devices_arg(template: &str, p: u32, kind: &str) -> std::result::Result<String, String> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    // Like every template a plan hands in: a loop stops with an error, it cannot hang a submit.
    env.set_fuel(Some(crate::model::limits::FUEL_TEMPLATE));
    env.render_str(template, context! { p => p, kind => kind })
        .map_err(|e| e.to_string())
}

/// `cgpsi`: the `cpu.pressure` of the job's own cgroup (v2, mounted alone or beside v1 as
/// `unified`); empty in the root cgroup (a cluster without Slurm's cgroup plugin), whose "full"
/// CPU total is always 0 — not measured, rather than a clean 0.
const CGROUP_PSI: &str = r#"cg=$(sed -n 's/^0:://p' /proc/self/cgroup 2>/dev/null)
cgpsi=
if [ -n "$cg" ] && [ "$cg" != "/" ]; then
  for d in /sys/fs/cgroup /sys/fs/cgroup/unified; do
    if [ -r "$d$cg/cpu.pressure" ]; then cgpsi="$d$cg/cpu.pressure"; break; fi
  done
fi
"#;

/// The `total=` of the `full` line of the job's cgroup's `cpu.pressure` (µs), before and after
/// the stack; empty where the file is not there (no PSI, cgroup v1).
const PSI_FULL_BEFORE: &str =
    "psi_before=$(sed -n 's/^full .*total=\\([0-9]*\\).*/\\1/p' \"$cgpsi\" 2>/dev/null)\n";
const PSI_FULL_AFTER: &str =
    "psi_after=$(sed -n 's/^full .*total=\\([0-9]*\\).*/\\1/p' \"$cgpsi\" 2>/dev/null)\n";

/// The batch script for `job`. POSIX sh; every value single-quoted.
///
/// The stack runs as a child (not `exec`) so the script can record its exit code afterwards;
/// when Slurm kills the job (time limit, scancel) the script dies with it and records nothing,
/// which is how a missing result tells "Slurm stopped it" from "the stack exited".
pub fn render_script(job: &BatchJob) -> String {
    let job = &job.absolute();
    let bundle = quote_path(&job.bundle_dir);
    let mut s = String::new();
    s.push_str("#!/bin/sh\n");
    s.push_str(&format!(
        "# Written by campaign for case {}, stack {} (job {}).\n",
        job.case_id,
        job.stack,
        job.name()
    ));
    s.push_str("# Records the devices Slurm granted, runs the stack, records its exit code.\n");
    s.push_str(&format!("bundle={bundle}\n"));
    s.push_str(&format!("rm -f \"$bundle/{RESULT_FILE}\"\n"));
    s.push_str(
        "granted=${NPU_VISIBLE_DEVICES:-${CUDA_VISIBLE_DEVICES:-${SLURM_JOB_GPUS:-${SLURM_STEP_GPUS:-}}}}\n",
    );
    s.push_str("{\n");
    for var in [
        "SLURM_JOB_ID",
        "SLURMD_NODENAME",
        "NPU_VISIBLE_DEVICES",
        "CUDA_VISIBLE_DEVICES",
        "SLURM_JOB_GPUS",
        "SLURM_STEP_GPUS",
    ] {
        s.push_str(&format!("  printf '{var}=%s\\n' \"${{{var}:-}}\"\n"));
    }
    s.push_str("  printf 'granted=%s\\n' \"$granted\"\n");
    s.push_str(&format!(
        "}} > \"$bundle/{DEVICES_FILE}.tmp\" && mv -f \"$bundle/{DEVICES_FILE}.tmp\" \"$bundle/{DEVICES_FILE}\"\n"
    ));
    s.push_str(&crate::executor::slurm::placement::allocation_lines(
        job.layout,
        job.devices,
    ));
    // `KEY=value` quoted as one word: whatever a key holds (plans refuse keys that are not
    // POSIX names, `model::stack::is_env_name`), it can only ever be an assignment.
    for (key, value) in &job.process.env {
        s.push_str(&format!(
            "export {}\n",
            quote_allocation(&format!("{key}={value}"))
        ));
    }
    // After the stack's env: it may say where each node's hccn.conf is (CAMPAIGN_HCCN_CONF).
    if names_rank_table(job) {
        let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("campaign"));
        s.push_str(&crate::executor::slurm::placement::rank_table_lines(
            job.layout,
            job.devices,
            &quote_path(&exe),
        ));
    }
    s.push_str("# The devices Slurm granted replace the ones campaign rendered.\n");
    s.push_str("if [ -n \"$granted\" ]; then export CAMPAIGN_DEVICES=\"$granted\"; fi\n");
    let cwd = quote_path(&job.process.cwd);
    s.push_str(&format!(
        "cd {cwd} || {{ echo \"campaign: cannot enter \"{cwd} >&2; exit {NO_CWD_EXIT}; }}\n"
    ));
    // What the job really has, as a local run measures it (issue 44): the CPUs its cpuset
    // allows (a cluster may advertise more than the node holds: oversubscription is judged
    // against these), and its cgroup's CPU pressure "full" total before and after the stack
    // (the time every runnable process of it waited for a CPU), read where the job runs.
    s.push_str(
        "cpus_allowed=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status 2>/dev/null)\n",
    );
    s.push_str(CGROUP_PSI);
    s.push_str(PSI_FULL_BEFORE);
    s.push_str("started=$(date +%s%N)\n");
    let argv: Vec<String> = job
        .process
        .argv
        .iter()
        .map(|a| quote_allocation(a))
        .collect();
    s.push_str(&argv.join(" "));
    s.push('\n');
    s.push_str("code=$?\n");
    s.push_str(PSI_FULL_AFTER);
    s.push_str(&crate::executor::slurm::placement::rank_check_lines(
        job.layout,
        job.devices,
    ));
    s.push_str("ended=$(date +%s%N)\n");
    s.push_str(&format!(
        "printf 'exit_code=%s\\nstarted_ns=%s\\nended_ns=%s\\ncpus_allowed=%s\\npsi_full_before_us=%s\\npsi_full_after_us=%s\\n' \
         \"$code\" \"$started\" \"$ended\" \"$cpus_allowed\" \"$psi_before\" \"$psi_after\" \
         > \"$bundle/{RESULT_FILE}.tmp\" && mv -f \"$bundle/{RESULT_FILE}.tmp\" \"$bundle/{RESULT_FILE}\"\n"
    ));
    s.push_str("exit \"$code\"\n");
    s
}

/// `argv` as one line a user can paste into a shell (what `dry-run` prints): words made only
/// of safe characters stay bare, others are single-quoted (`model::shell`).
pub fn shell_line(argv: &[String]) -> String {
    crate::model::shell::line(argv)
}

/// Like [`quote`], except that the allocation's words a template rendered as placeholders
/// (`${CAMPAIGN_NODE_LIST}`, `${CAMPAIGN_MASTER_ADDR}`, known only once the job runs) are left
/// for the shell to expand, each in double quotes. Nothing else is ever expanded.
fn quote_allocation(value: &str) -> String {
    let mut out = String::new();
    let mut rest = value;
    while let Some((at, token)) = crate::executor::slurm::placement::next_token(rest) {
        if at > 0 {
            out.push_str(&quote(&rest[..at]));
        }
        out.push('"');
        out.push_str(token);
        out.push('"');
        rest = &rest[at + token.len()..];
    }
    if !rest.is_empty() || out.is_empty() {
        out.push_str(&quote(rest));
    }
    out
}

/// Does the stack's command or env name the bundle's rank table (`{{ rank_table }}`)?
fn names_rank_table(job: &BatchJob) -> bool {
    let table = job
        .bundle_dir
        .join(crate::model::nodes::RANK_TABLE)
        .display()
        .to_string();
    (job.process.argv.iter())
        .chain(job.process.env.iter().map(|(_, v)| v))
        .any(|v| v.contains(&table))
}

fn quote_path(path: &Path) -> String {
    quote(&path.display().to_string())
}

#[cfg(test)]
mod tests;
