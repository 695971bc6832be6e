//! Before anything is submitted: is Slurm reachable? `scontrol ping` must say the controller is
//! UP, or the campaign stops with one environment error (exit 4) naming `SLURM_CONF`, instead of
//! one sbatch failure per run.
//!
//! Owns only that question; submitting and polling are `submit` and `poll`. Called once by
//! `engine::prepare` for a campaign that runs through Slurm, before any run dir exists.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::executor::slurm::submit::TOOL_TIMEOUT;

/// Ask `scontrol ping` (bounded by the Slurm tool timeout); `Ok` when a controller answers UP.
pub(crate) fn check_reachable() -> Result<()> {
    // scontrol retries a missing configuration file for a minute; say so at once instead.
    let conf_missing = std::env::var_os("SLURM_CONF")
        .map(std::path::PathBuf::from)
        .filter(|p| !p.is_file());
    let answer = match conf_missing {
        Some(p) => Err(format!("{} does not exist", p.display())),
        None => ping(TOOL_TIMEOUT),
    };
    match answer {
        Ok(()) => Ok(()),
        Err(why) => Err(Error::Environment(format!(
            "Slurm is not reachable, so nothing was submitted: {why}\n\
             campaign talks to the cluster that SLURM_CONF names ({}); point it at the cluster's slurm.conf \
             (for the test cluster of this repo: eval \"$(bash scripts/slurm-up.sh)\") and check that slurmctld is up",
            match std::env::var_os("SLURM_CONF") {
                Some(v) => format!("now SLURM_CONF={}", v.to_string_lossy()),
                None => "SLURM_CONF is not set".to_string(),
            }
        ))),
    }
}

/// How many nodes the partition has (`sinfo -h -o %D`, the default partition when none is
/// named), so a run asking for more is refused before anything is submitted. `None` when
/// sinfo does not answer with a number.
pub(crate) fn node_count(partition: Option<&str>) -> Option<u32> {
    let mut cmd = Command::new("timeout");
    cmd.arg(TOOL_TIMEOUT.as_secs().max(1).to_string());
    cmd.args(["sinfo", "-h", "-o", "%P %D"]);
    if let Some(p) = partition {
        cmd.arg(format!("--partition={p}"));
    }
    let out = cmd.stdin(Stdio::null()).output().ok()?;
    if !out.status.success() {
        return None;
    }
    parse_node_count(&String::from_utf8_lossy(&out.stdout), partition.is_some())
}

/// `campaign* 2` lines: the named partition's nodes, else the default one's (marked `*`).
fn parse_node_count(text: &str, named: bool) -> Option<u32> {
    let mut lines = text.lines().filter_map(|l| l.split_once(' '));
    let (_, count) = if named {
        lines.next()?
    } else {
        lines.find(|(p, _)| p.ends_with('*'))?
    };
    count.trim().parse().ok()
}

fn ping(limit: Duration) -> std::result::Result<(), String> {
    let mut child = Command::new("scontrol")
        .arg("ping")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            format!("cannot run `scontrol` ({e}); is Slurm's client installed and on PATH?")
        })?;
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "`scontrol ping` did not answer within {} s",
                    limit.as_secs()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(format!("`scontrol ping` failed: {e}")),
        }
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("`scontrol ping` failed: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if out.status.success() && stdout.contains("is UP") {
        return Ok(());
    }
    // The last two lines say why (scontrol's "fatal: …" comes last).
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr
        .lines()
        .chain(stdout.lines())
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let said = lines[lines.len().saturating_sub(2)..].to_vec();
    Err(format!(
        "`scontrol ping` {}: {}",
        out.status,
        if said.is_empty() {
            "no output".to_string()
        } else {
            said.join(" / ")
        }
    ))
}
