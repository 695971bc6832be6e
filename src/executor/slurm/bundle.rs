//! The files a batch job leaves in its run's bundle, and reading them back: the script itself,
//! the devices Slurm granted (`slurm.devices`) and the stack's exit code and times
//! (`slurm.result`).
//!
//! Owns the file names and their `key=value` line format. It only reads (the batch script
//! writes them, see `script`) and never decides a run's status (that is `state`).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::executor::ProcessOutcome;

/// The batch script, kept in the bundle so a run can be re-submitted or read by hand.
pub(crate) const SCRIPT_FILE: &str = "slurm.sh";
/// Written when the job starts: the visible-device variables Slurm set and the chosen list.
pub(crate) const DEVICES_FILE: &str = "slurm.devices";
/// Written when the stack exits: `exit_code`, `started_ns`, `ended_ns`.
pub(crate) const RESULT_FILE: &str = "slurm.result";

/// The devices Slurm granted the job, as the batch script saw them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct GrantedDevices {
    /// The list the script exported as `CAMPAIGN_DEVICES` (first non-empty of
    /// NPU_VISIBLE_DEVICES, CUDA_VISIBLE_DEVICES, SLURM_JOB_GPUS, SLURM_STEP_GPUS), verbatim.
    pub granted: String,
    /// `granted` as numbers, when every entry is one (GPU UUIDs are not).
    pub ids: Option<Vec<u32>>,
    /// Node the job ran on.
    pub(crate) node: Option<String>,
    /// Every variable the script recorded (empty ones left out).
    pub variables: BTreeMap<String, String>,
}

/// Read `slurm.devices`; `None` when the job never started (or the file is unreadable).
pub(crate) fn read_devices(bundle_dir: &Path) -> Option<GrantedDevices> {
    let text = std::fs::read_to_string(bundle_dir.join(DEVICES_FILE)).ok()?;
    Some(parse_devices(&text))
}

pub(crate) fn parse_devices(text: &str) -> GrantedDevices {
    let mut out = GrantedDevices::default();
    for (key, value) in key_values(text) {
        match key {
            "granted" => out.granted = value.to_string(),
            "SLURMD_NODENAME" if !value.is_empty() => out.node = Some(value.to_string()),
            _ if !value.is_empty() => {
                out.variables.insert(key.to_string(), value.to_string());
            }
            _ => {}
        }
    }
    out.ids = parse_ids(&out.granted);
    out
}

/// `0,1,2` → `[0, 1, 2]`; `None` for an empty list or any non-number.
fn parse_ids(list: &str) -> Option<Vec<u32>> {
    if list.trim().is_empty() {
        return None;
    }
    list.split(',').map(|p| p.trim().parse().ok()).collect()
}

/// Read `slurm.result` as the outcome of the stack process; `None` when the stack did not
/// reach its end (the script was killed, or never started) or the file is malformed.
///
/// The shell reports a process killed by signal N as status 128+N, so such a status becomes
/// `signal = N` (as the local executor reports it).
pub(crate) fn read_result(bundle_dir: &Path) -> Option<ProcessOutcome> {
    let text = std::fs::read_to_string(bundle_dir.join(RESULT_FILE)).ok()?;
    parse_result(&text)
}

pub(crate) fn parse_result(text: &str) -> Option<ProcessOutcome> {
    let mut code = None;
    let mut started = None;
    let mut ended = None;
    for (key, value) in key_values(text) {
        match key {
            "exit_code" => code = value.parse::<i32>().ok(),
            "started_ns" => started = value.parse::<u128>().ok(),
            "ended_ns" => ended = value.parse::<u128>().ok(),
            _ => {}
        }
    }
    let code = code?;
    let elapsed = match (started, ended) {
        (Some(s), Some(e)) if e >= s => {
            Duration::from_nanos(u64::try_from(e - s).unwrap_or(u64::MAX))
        }
        _ => Duration::ZERO,
    };
    let (exit_code, signal) = if (129..=192).contains(&code) {
        (None, Some(code - 128))
    } else {
        (Some(code), None)
    };
    Some(ProcessOutcome {
        exit_code,
        signal,
        killed: None,
        elapsed,
        cpu_wait: None,
    })
}

/// Remove what an earlier attempt left, so a stale result never describes a new job.
pub(crate) fn clear(bundle_dir: &Path) {
    for name in [DEVICES_FILE, RESULT_FILE] {
        let _ = std::fs::remove_file(bundle_dir.join(name));
    }
}

fn key_values(text: &str) -> impl Iterator<Item = (&str, &str)> {
    text.lines()
        .filter_map(|line| line.split_once('='))
        .map(|(k, v)| (k.trim(), v.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_prefer_the_first_nonempty_variable_and_parse_ids() {
        let text = "SLURM_JOB_ID=12\nSLURMD_NODENAME=vm\nNPU_VISIBLE_DEVICES=\n\
                    CUDA_VISIBLE_DEVICES=2,3\nSLURM_JOB_GPUS=2,3\nSLURM_STEP_GPUS=\ngranted=2,3\n";
        let d = parse_devices(text);
        assert_eq!(d.granted, "2,3");
        assert_eq!(d.ids, Some(vec![2, 3]));
        assert_eq!(d.node.as_deref(), Some("vm"));
        assert_eq!(
            d.variables.get("CUDA_VISIBLE_DEVICES").map(String::as_str),
            Some("2,3")
        );
        assert!(!d.variables.contains_key("NPU_VISIBLE_DEVICES"));
    }

    #[test]
    fn non_numeric_or_empty_grants_have_no_ids() {
        assert_eq!(parse_devices("granted=GPU-1a2b,GPU-3c4d\n").ids, None);
        assert_eq!(parse_devices("granted=\n").ids, None);
    }

    #[test]
    fn result_gives_exit_code_and_elapsed() {
        let o = parse_result("exit_code=3\nstarted_ns=1000000000\nended_ns=3500000000\n").unwrap();
        assert_eq!(o.exit_code, Some(3));
        assert_eq!(o.signal, None);
        assert_eq!(o.elapsed, Duration::from_millis(2500));
        assert!(!o.success());
    }

    #[test]
    fn shell_status_above_128_is_a_signal() {
        let o = parse_result("exit_code=137\n").unwrap();
        assert_eq!((o.exit_code, o.signal), (None, Some(9)));
        assert_eq!(o.elapsed, Duration::ZERO);
    }

    #[test]
    fn truncated_result_is_no_result() {
        assert_eq!(parse_result("started_ns=1\n"), None);
        assert_eq!(parse_result("exit_code=\n"), None);
    }

    #[test]
    fn clear_removes_stale_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(RESULT_FILE), "exit_code=0\n").unwrap();
        std::fs::write(dir.path().join(DEVICES_FILE), "granted=0\n").unwrap();
        clear(dir.path());
        assert!(read_result(dir.path()).is_none());
        assert!(read_devices(dir.path()).is_none());
    }
}
