//! Reading a journal back: the latest state of every step, attempts, fingerprints and
//! quarantined devices. Pure reading; it never writes and never decides what to run.
//!
//! A torn last line (a crash mid-write, or a power loss that left garbage at the end) is ignored
//! and reported in [`Replay::torn`]; an unreadable line anywhere else means the file was damaged
//! or edited and is an error naming the line.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::error::{Diagnostic, Error, Result};
use crate::model::results::RunStatus;

use super::line::{self, Fields, Line, Scalar};
use super::{KIND, VERSION};

/// A line read by [`replay`]: the header whole, any other line as its typed fields.
// One value per line, on the stack: boxing the fields would bring back an allocation per line.
#[allow(clippy::large_enum_variant)]
enum Read<'a> {
    Header(Map<String, Value>),
    Line(Fields<'a>),
}

/// A last line that was cut off and ignored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TornLine {
    /// 1-based line number.
    pub(crate) line: usize,
    /// Byte offset where it starts (the journal's valid length).
    pub(crate) offset: u64,
    /// Its length in bytes.
    pub(crate) bytes: usize,
}

impl std::fmt::Display for TornLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "line {} was torn by a crash while it was written ({} bytes) and is ignored",
            self.line, self.bytes
        )
    }
}

/// A `finished` line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Finished {
    pub(crate) status: RunStatus,
    pub(crate) reason: Option<String>,
    pub(crate) attempt: u32,
    pub(crate) fingerprint: String,
    /// RFC 3339 time of the line.
    pub(crate) t: String,
    /// From the matching `started` line of the same attempt, when both times parse.
    pub(crate) duration: Option<Duration>,
    /// 1-based line number.
    pub(crate) line: usize,
    /// The line's `samples`: how many timed samples the run's bundle holds (older journals
    /// do not say). The line's other engine fields (bundle, devices, exit code, …) are not kept.
    pub(crate) samples: Option<u64>,
    /// The line's `content`: the digest of what the run's bundle holds (status, reason and
    /// every sample value: `store::bundle_digest`), which `resume --verify` checks; older
    /// journals do not say.
    pub(crate) content: Option<String>,
}

/// Everything the journal says about one step.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct StepState {
    /// Highest attempt number seen (started or finished).
    pub(crate) attempts: u32,
    /// Fingerprint on the step's latest line.
    pub(crate) fingerprint: String,
    /// `Some(t)` when the latest line is `started`: the attempt never finished (crash, kill) —
    /// or is running right now, if a campaign holds the run dir.
    pub(crate) open_since: Option<String>,
    /// The latest `finished` line, even if a later attempt started after it.
    pub(crate) last_finished: Option<Finished>,
    /// The Slurm job of the latest attempt (its latest `submitted` line); cleared when another
    /// attempt starts. Kept after `finished` so `status` can name the job.
    pub(crate) slurm_job: Option<SlurmJob>,
    /// The containment unit of the latest `started` attempt (`unit`, and `cgroup` when one was
    /// used): what a resume reaps when that attempt never finished.
    pub(crate) unit: Option<(String, Option<String>)>,
}

/// A `submitted` line: the Slurm job an attempt of a run step handed its work to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SlurmJob {
    pub(crate) id: u64,
    pub(crate) attempt: u32,
}

impl StepState {
    /// The batch job the latest attempt handed its work to, if it did (a job of an earlier
    /// attempt does not count).
    pub(crate) fn job_of_latest_attempt(&self) -> Option<SlurmJob> {
        self.slurm_job.filter(|j| j.attempt == self.attempts)
    }

    /// The attempt number the next run of a step gets, given what the journal says of it.
    pub(crate) fn next_attempt(state: Option<&StepState>) -> u32 {
        state.map_or(1, |s| s.attempts + 1)
    }

    /// Started without finished: resume runs it again.
    pub(crate) fn is_interrupted(&self) -> bool {
        self.open_since.is_some()
    }

    /// The step's final status, if its latest line is a `finished` one.
    pub(crate) fn status(&self) -> Option<RunStatus> {
        if self.is_interrupted() {
            return None;
        }
        self.last_finished.as_ref().map(|f| f.status)
    }
}

/// A journal read back.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Replay {
    pub(crate) path: PathBuf,
    pub(crate) version: u64,
    /// The header line's fields (campaign name, plan hash, planned steps, …).
    pub(crate) header: Map<String, Value>,
    /// Latest state per step key (hashed: a 100,000-run journal looks every key up several
    /// times; [`Replay::steps_in_key_order`] lists them sorted).
    pub(crate) steps: HashMap<String, StepState>,
    /// Step keys in the order they first appeared.
    pub(crate) order: Vec<String>,
    /// Quarantined device → reason (the latest reason when quarantined more than once).
    pub(crate) quarantined: BTreeMap<u32, String>,
    /// Decisions of sequential repeats, in order: (point id, look, why the rest was spared —
    /// `None`: the point went on).
    pub(crate) decisions: Vec<(String, u32, Option<String>)>,
    /// The latest line of every other event kind (`session`, `interrupted`, …).
    pub(crate) events: BTreeMap<String, Map<String, Value>>,
    /// A torn last line that was ignored.
    pub(crate) torn: Option<TornLine>,
    /// Number of lines read (header included, torn line excluded).
    pub(crate) lines: usize,
}

impl Replay {
    /// The attempt number the next run of `step` gets (attempts count across resumes, so every
    /// attempt keeps its own raw log).
    #[cfg(test)]
    pub(crate) fn next_attempt(&self, step: &str) -> u32 {
        StepState::next_attempt(self.steps.get(step))
    }

    pub(crate) fn step(&self, step: &str) -> Option<&StepState> {
        self.steps.get(step)
    }

    /// Every step with its state, sorted by step key.
    pub(crate) fn steps_in_key_order(&self) -> Vec<(&String, &StepState)> {
        let mut steps: Vec<(&String, &StepState)> = self.steps.iter().collect();
        steps.sort_unstable_by(|a, b| a.0.cmp(b.0));
        steps
    }
}

/// Largest journal read (a regular file only): a 1,000,000-run campaign writes ~0.6 GB.
pub(crate) const MAX_JOURNAL_BYTES: u64 = 8 << 30;

/// Longest journal line read; campaign's own lines are far shorter (the header of a large
/// campaign counts its runs instead of naming them).
pub(crate) const MAX_LINE_BYTES: usize = 16 << 20;

/// Read `path` (a `journal.jsonl`).
pub(crate) fn replay(path: &Path) -> Result<Replay> {
    let bytes = crate::model::file::read_regular(path, MAX_JOURNAL_BYTES)
        .map_err(|e| Error::io(path, e))?;
    let mut out = Replay {
        path: path.to_path_buf(),
        ..Replay::default()
    };
    let lines = split_lines(&bytes);
    let last_index = lines.len().saturating_sub(1);
    let mut started_at: HashMap<Cow<'_, str>, (u32, Cow<'_, str>)> = HashMap::new();
    for (i, (offset, raw, terminated)) in lines.iter().enumerate() {
        let number = i + 1;
        let is_last = i == last_index;
        if raw.iter().all(u8::is_ascii_whitespace) && *terminated {
            continue;
        }
        // The header is kept whole; every other line is read into the few typed fields the
        // replay needs, borrowed from `bytes` (no map per line: a 100,000-run journal is
        // 200,000 lines).
        let parsed = if raw.len() > MAX_LINE_BYTES {
            // Campaign never writes such a line: refused before any parser sees it.
            Err((
                1,
                format!(
                    "the line is {} bytes; campaign writes journal lines of at most {MAX_LINE_BYTES}",
                    raw.len()
                ),
            ))
        } else if !*terminated {
            // An unterminated line was cut mid-write even if its prefix happens to parse.
            Err((raw.len(), "line has no terminating newline".to_string()))
        } else if number == 1 {
            serde_json::from_slice::<Value>(raw)
                .map(|v| match v {
                    Value::Object(map) => Some(Read::Header(map)),
                    _ => None,
                })
                .map_err(|e| (e.column(), e.to_string()))
        } else {
            line::parse(raw)
                .map(|l| match l {
                    Line::Object(fields) => Some(Read::Line(fields)),
                    Line::NotObject => None,
                })
                .map_err(|e| (e.column(), e.to_string()))
        };
        let read = match parsed {
            Ok(Some(read)) => read,
            Ok(None) => {
                if is_last && number > 1 {
                    out.torn = Some(torn(number, *offset, raw.len()));
                    break;
                }
                return Err(line_error(
                    path,
                    number,
                    None,
                    "expected one JSON object per line",
                ));
            }
            Err((column, msg)) => {
                if is_last && number > 1 {
                    out.torn = Some(torn(number, *offset, raw.len()));
                    break;
                }
                let what = if number == 1 {
                    format!("the header line is unreadable ({msg}); expected {{\"journal\":\"campaign\",\"version\":{VERSION},…}}")
                } else {
                    format!("unreadable line ({msg}) before the end of the journal: the file was damaged or edited; expected one JSON object per line")
                };
                return Err(line_error(path, number, Some(column), &what));
            }
        };
        out.lines += 1;
        match read {
            Read::Header(map) => read_header(path, map, &mut out)?,
            Read::Line(fields) => apply(path, number, raw, fields, &mut out, &mut started_at)?,
        }
    }
    if out.lines == 0 {
        return Err(line_error(
            path,
            1,
            None,
            &format!("empty journal; expected a header {{\"journal\":\"{KIND}\",\"version\":{VERSION},…}}"),
        ));
    }
    Ok(out)
}

/// The torn last line [`replay`] would ignore, found by reading only the first line (the
/// header) and the last one: opening a journal to append cuts it off, and the one replay that
/// follows (resume's) checks the rest — a large journal is read and parsed once, not twice.
pub(crate) fn torn_tail(path: &Path) -> Result<Option<TornLine>> {
    let (mut file, _) = crate::model::file::open_regular(path).map_err(|e| Error::io(path, e))?;
    // A journal of a newer format is refused before anything is cut; an unreadable header
    // cuts nothing and is reported by the replay.
    let head = first_line(&mut file).map_err(|e| Error::io(path, e))?;
    match serde_json::from_slice(&head) {
        Ok(Value::Object(header)) => read_header(path, header, &mut Replay::default())?,
        _ => return Ok(None),
    }
    let Some((offset, raw, terminated)) = last_line(&mut file).map_err(|e| Error::io(path, e))?
    else {
        return Ok(None);
    };
    // Offset 0: the header is the only line.
    if offset == 0 || (terminated && raw.iter().all(u8::is_ascii_whitespace)) {
        return Ok(None);
    }
    if terminated && matches!(serde_json::from_slice(&raw), Ok(Value::Object(_))) {
        return Ok(None);
    }
    // Torn (rare): its line number needs the lines before it counted.
    let bytes = crate::model::file::read_regular(path, MAX_JOURNAL_BYTES)
        .map_err(|e| Error::io(path, e))?;
    Ok(Some(torn(split_lines(&bytes).len(), offset, raw.len())))
}

/// The journal's header line as a JSON object, read alone (the replay reads it again and
/// reports what is wrong with it): `None` when the first line is not a JSON object.
pub(crate) fn header(path: &Path) -> Option<Map<String, Value>> {
    let (mut file, _) = crate::model::file::open_regular(path).ok()?;
    match serde_json::from_slice(&first_line(&mut file).ok()?) {
        Ok(Value::Object(header)) => Some(header),
        _ => None,
    }
}

/// The bytes of the first line, without its `\n`.
fn first_line(file: &mut std::fs::File) -> std::io::Result<Vec<u8>> {
    use std::io::{BufRead, Read};
    let mut line = Vec::new();
    // Never more than a line campaign could have written (and one byte to tell).
    std::io::BufReader::new(file.take(MAX_LINE_BYTES as u64 + 1)).read_until(b'\n', &mut line)?;
    if line.last() == Some(&b'\n') {
        line.pop();
    }
    Ok(line)
}

/// `(offset, bytes without '\n', terminated)` of the last line ([`split_lines`]'s last entry),
/// read backwards from the end of the file in blocks; `None` for an empty file.
fn last_line(file: &mut std::fs::File) -> std::io::Result<Option<(usize, Vec<u8>, bool)>> {
    use std::io::{Read, Seek, SeekFrom};
    const BLOCK: u64 = 64 * 1024;
    let len = file.seek(SeekFrom::End(0))?;
    let mut start = len;
    let mut tail: Vec<u8> = Vec::new();
    while start > 0 {
        let step = BLOCK.min(start);
        start -= step;
        let mut block = vec![0; step as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut block)?;
        tail.splice(0..0, block);
        let terminated = tail.last() == Some(&b'\n');
        let end = tail.len() - usize::from(terminated);
        if let Some(nl) = tail[..end].iter().rposition(|b| *b == b'\n') {
            let offset = start as usize + nl + 1;
            return Ok(Some((offset, tail[nl + 1..end].to_vec(), terminated)));
        }
        if start == 0 {
            return Ok(Some((0, tail[..end].to_vec(), terminated)));
        }
    }
    Ok(None)
}

fn torn(line: usize, offset: usize, bytes: usize) -> TornLine {
    TornLine {
        line,
        offset: offset as u64,
        bytes,
    }
}

/// `(offset, bytes without '\n', terminated)` of every line; a final empty segment is dropped.
fn split_lines(bytes: &[u8]) -> Vec<(usize, &[u8], bool)> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'\n' {
            out.push((start, &bytes[start..i], true));
            start = i + 1;
        }
    }
    if start < bytes.len() {
        out.push((start, &bytes[start..], false));
    }
    out
}

fn line_error(path: &Path, line: usize, column: Option<usize>, message: &str) -> Error {
    Error::Invalid(vec![Diagnostic {
        file: path.to_path_buf(),
        line: Some(line),
        column,
        field: None,
        message: message.to_string(),
        snippet: None,
    }])
}

fn field_error(path: &Path, line: usize, field: &str, message: &str) -> Error {
    Error::Invalid(vec![Diagnostic {
        file: path.to_path_buf(),
        line: Some(line),
        column: None,
        field: Some(field.to_string()),
        message: message.to_string(),
        snippet: None,
    }])
}

fn read_header(path: &Path, header: Map<String, Value>, out: &mut Replay) -> Result<()> {
    if header.get("journal").and_then(Value::as_str) != Some(KIND) {
        return Err(field_error(
            path,
            1,
            "journal",
            &format!("not a campaign journal; expected a header {{\"journal\":\"{KIND}\",\"version\":{VERSION},…}}"),
        ));
    }
    let version = header
        .get("version")
        .and_then(Value::as_u64)
        .ok_or_else(|| field_error(path, 1, "version", "missing or not a positive integer"))?;
    if version > VERSION {
        return Err(field_error(
            path,
            1,
            "version",
            &format!(
                "journal format version {version} was written by a newer campaign; this build reads versions up to {VERSION}: upgrade campaign to resume this run dir"
            ),
        ));
    }
    if version == 0 {
        return Err(field_error(
            path,
            1,
            "version",
            "version 0 does not exist; expected 1",
        ));
    }
    out.version = version;
    out.header = header;
    Ok(())
}

fn apply<'a>(
    path: &Path,
    number: usize,
    raw: &[u8],
    line: Fields<'a>,
    out: &mut Replay,
    started_at: &mut HashMap<Cow<'a, str>, (u32, Cow<'a, str>)>,
) -> Result<()> {
    let event = text(&line.event)
        .ok_or_else(|| field_error(path, number, "event", "missing; expected a string"))?;
    let t = match line.t {
        Some(Scalar::Text(t)) => t,
        _ => Cow::Borrowed(""),
    };
    match event {
        "started" | "finished" => {
            let Some(Scalar::Text(step)) = line.step else {
                return Err(field_error(
                    path,
                    number,
                    "step",
                    "missing; expected a string",
                ));
            };
            let attempt = attempt_field(path, number, &line.attempt)?;
            let fingerprint = text(&line.fingerprint).unwrap_or("");
            let state = step_state(out, &step);
            state.attempts = state.attempts.max(attempt);
            if state.fingerprint != fingerprint {
                state.fingerprint = fingerprint.to_string();
            }
            if event == "started" {
                // The same attempt started again is a resume re-attaching to its job.
                if state.slurm_job.is_some_and(|j| j.attempt != attempt) {
                    state.slurm_job = None;
                }
                state.open_since = Some(t.to_string());
                state.unit = text(&line.unit)
                    .map(|id| (id.to_string(), text(&line.cgroup).map(str::to_string)));
                started_at.insert(step, (attempt, t));
                return Ok(());
            }
            let status_text = required_text(path, number, &line.status, "status")?;
            let status = parse_status(status_text).ok_or_else(|| {
                field_error(
                    path,
                    number,
                    "status",
                    &format!("unknown status `{status_text}` (expected one of: pass, fail, timeout, skipped, unavailable, interrupted, blocked, spared)"),
                )
            })?;
            let duration = match started_at.get(&step) {
                Some((a, start)) if *a == attempt => elapsed(start, &t),
                _ => None,
            };
            state.open_since = None;
            state.last_finished = Some(Finished {
                status,
                reason: text(&line.reason).map(str::to_string),
                attempt,
                fingerprint: fingerprint.to_string(),
                t: t.into_owned(),
                duration,
                line: number,
                samples: line.samples.as_ref().and_then(Scalar::as_u64),
                content: text(&line.content).map(str::to_string),
            });
        }
        "submitted" => {
            let step = required_text(path, number, &line.step, "step")?;
            let attempt = attempt_field(path, number, &line.attempt)?;
            let id = line
                .slurm_job_id
                .as_ref()
                .and_then(Scalar::as_u64)
                .ok_or_else(|| {
                    field_error(
                        path,
                        number,
                        "slurm_job_id",
                        "missing; expected the Slurm job id (a positive integer)",
                    )
                })?;
            let state = step_state(out, step);
            state.attempts = state.attempts.max(attempt);
            state.slurm_job = Some(SlurmJob { id, attempt });
        }
        "decision" => {
            let fields = (&line.point, &line.look, &line.status, &line.reason);
            out.decisions.push(decision(path, number, fields)?);
        }
        "quarantined" => {
            let device = line
                .device
                .as_ref()
                .and_then(Scalar::as_u64)
                .and_then(|d| u32::try_from(d).ok())
                .ok_or_else(|| {
                    field_error(path, number, "device", "missing; expected a device id")
                })?;
            let reason = text(&line.reason).unwrap_or("");
            out.quarantined.insert(device, reason.to_string());
        }
        _ => {
            // Campaign-level events are few (one `session` per resume, …) and callers read
            // arbitrary keys of them: only these lines are read again as a whole map.
            let map = serde_json::from_slice::<Map<String, Value>>(raw)
                .map_err(|e| line_error(path, number, Some(e.column()), &e.to_string()))?;
            out.events.insert(event.to_string(), map);
        }
    }
    Ok(())
}

/// A decision line's `point`, `look`, `status` and `reason`.
type DecisionFields<'f, 'a> = (
    &'f Option<Scalar<'a>>,
    &'f Option<Scalar<'a>>,
    &'f Option<Scalar<'a>>,
    &'f Option<Scalar<'a>>,
);

/// A `decision` line of sequential repeats: (point id, look, why the rest was spared — `None`
/// when the point went on).
fn decision(
    path: &Path,
    number: usize,
    (point, look, status, reason): DecisionFields<'_, '_>,
) -> Result<(String, u32, Option<String>)> {
    let point = required_text(path, number, point, "point")?;
    let look = (look.as_ref())
        .and_then(Scalar::as_u64)
        .and_then(|l| u32::try_from(l).ok())
        .ok_or_else(|| {
            field_error(
                path,
                number,
                "look",
                "missing; expected a number of repeats",
            )
        })?;
    let spared = match required_text(path, number, status, "status")? {
        "go" => None,
        "stop" => Some(text(reason).unwrap_or("").to_string()),
        other => {
            return Err(field_error(
                path,
                number,
                "status",
                &format!("unknown decision `{other}` (expected go or stop)"),
            ))
        }
    };
    Ok((point.to_string(), look, spared))
}

/// The state of `step`, created (and its first appearance recorded) if new.
fn step_state<'s>(out: &'s mut Replay, step: &str) -> &'s mut StepState {
    if !out.steps.contains_key(step) {
        out.order.push(step.to_string());
        out.steps.insert(step.to_string(), StepState::default());
    }
    out.steps.get_mut(step).expect("inserted above")
}

fn text<'s>(field: &'s Option<Scalar<'_>>) -> Option<&'s str> {
    field.as_ref().and_then(Scalar::as_str)
}

/// The `attempt` field of a step line: an integer >= 1.
fn attempt_field(path: &Path, number: usize, field: &Option<Scalar<'_>>) -> Result<u32> {
    field
        .as_ref()
        .and_then(Scalar::as_u64)
        .and_then(|a| u32::try_from(a).ok())
        .filter(|a| *a >= 1)
        .ok_or_else(|| field_error(path, number, "attempt", "missing; expected an integer >= 1"))
}

fn required_text<'s>(
    path: &Path,
    number: usize,
    field: &'s Option<Scalar<'_>>,
    name: &str,
) -> Result<&'s str> {
    text(field).ok_or_else(|| field_error(path, number, name, "missing; expected a string"))
}

fn parse_status(text: &str) -> Option<RunStatus> {
    RunStatus::ALL.iter().copied().find(|s| s.as_str() == text)
}

fn elapsed(start: &str, end: &str) -> Option<Duration> {
    let a = chrono::DateTime::parse_from_rfc3339(start).ok()?;
    let b = chrono::DateTime::parse_from_rfc3339(end).ok()?;
    (b - a).to_std().ok()
}
