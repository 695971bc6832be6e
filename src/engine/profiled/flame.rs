//! A `cpu` profile's flame graph: `perf script` of the profiled run's `perf.data` → folded stacks
//! (inferno's perf collapser) → an SVG flame graph (inferno's plotter), both beside the data.
//!
//! `perf script --no-inline`: resolving inlined frames runs `addr2line` per address, 33 s
//! instead of 0.5 s for a 0.2 s host run here; the frames a reader looks for (the collective's
//! own functions) are real calls either way. Blocking: call it off the async workers.

use std::collections::BTreeMap;
use std::io::{BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use inferno::collapse::Collapse;

use super::perf::PERF_DATA;

pub(crate) const FOLDED: &str = "stacks.folded";
pub(crate) const FLAMEGRAPH: &str = "flamegraph.svg";
/// What `perf script` said on stderr (kept: it names missing symbols and unwinding trouble).
const SCRIPT_LOG: &str = "perf-script.log";

/// Make `stacks.folded` and `flamegraph.svg` from `bundle/perf.data`; returns the files by role.
pub(crate) fn make(bundle: &Path, title: &str) -> Result<BTreeMap<String, String>, String> {
    let folded = fold(&bundle.join(PERF_DATA), &bundle.join(SCRIPT_LOG))?;
    if folded.iter().all(|b| b.is_ascii_whitespace()) {
        return Err("perf recorded no call stacks (the run was too short to be sampled?)".into());
    }
    let text = String::from_utf8_lossy(&folded);
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = title.to_string();
    opts.subtitle = Some("perf record --call-graph dwarf; width = share of samples".into());
    opts.count_name = "samples".into();
    // Colours from the function names, so the same profile draws the same picture.
    opts.hash = true;
    opts.deterministic = true;
    let mut svg = Vec::new();
    inferno::flamegraph::from_lines(&mut opts, text.lines(), &mut svg)
        .map_err(|e| format!("the flame graph could not be drawn: {e}"))?;
    write(&bundle.join(FOLDED), &folded)?;
    write(&bundle.join(FLAMEGRAPH), &svg)?;
    // The folded stacks are everything the flame graph draws; perf.data holds each sample's
    // copied stack (about 30 MB a second per busy thread) and goes once they are made. A
    // profile that could not be made keeps it, to be looked at.
    let _ = std::fs::remove_file(bundle.join(PERF_DATA));
    Ok(BTreeMap::from([
        ("flamegraph".to_string(), FLAMEGRAPH.to_string()),
        ("folded".to_string(), FOLDED.to_string()),
        ("perf_script_log".to_string(), SCRIPT_LOG.to_string()),
    ]))
}

/// `perf script` of `data`, folded as it streams out; its stderr goes to `log` (a file, so a
/// chatty perf never blocks on a pipe nobody reads).
fn fold(data: &Path, log: &Path) -> Result<Vec<u8>, String> {
    let err = std::fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let mut child = Command::new("perf")
        .args(["script", "--no-inline", "--input"])
        .arg(data)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(err))
        .spawn()
        .map_err(|e| format!("perf script cannot be started: {e}"))?;
    let mut folded = Vec::new();
    let stdout = child
        .stdout
        .take()
        .ok_or("perf script has no output pipe")?;
    let mut folder =
        inferno::collapse::perf::Folder::from(inferno::collapse::perf::Options::default());
    let collapsed = folder.collapse(BufReader::new(stdout), &mut folded);
    let out = child
        .wait_with_output()
        .map_err(|e| format!("perf script: {e}"))?;
    collapsed.map_err(|e| format!("perf script's output could not be folded: {e}"))?;
    if !out.status.success() {
        let said = std::fs::read_to_string(log).unwrap_or_default();
        return Err(format!(
            "perf script failed ({}): {}",
            out.status,
            crate::model::text::visible(said.trim())
        ));
    }
    Ok(folded)
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let mut f = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    f.write_all(bytes)
        .map_err(|e| format!("{}: {e}", path.display()))
}
