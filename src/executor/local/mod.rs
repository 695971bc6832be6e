//! The local executor: run one stack process on this machine and report how it ended.
//!
//! Owns spawning (`executor::spawn`: own process group, inside its containment unit —
//! `executor::unit` — without copying campaign's memory), reading
//! stdout and stderr concurrently to the end, the raw `run.log` (bytes exactly as produced,
//! interleaved by line in arrival order), the wall-clock, no-output and cancel stops (SIGTERM to
//! the whole unit, SIGKILL after the grace period) and making sure nothing of the unit is left
//! running when it returns — setsid, setpgid and double-forked descendants included. It does not
//! parse output (every line goes to the caller's `on_line`) and does not decide run status (the
//! caller reads `ProcessOutcome`). The session's backend for this machine is `backend`.

pub(crate) mod backend;
pub(crate) mod in_flight;

use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::sync::{mpsc, watch};
use tokio::time::{sleep_until, Instant};

use crate::error::{Error, Result};
use crate::executor::unit::Unit;
use crate::executor::{KillReason, ProcessOutcome, ProcessSpec};
use crate::model::output::{OutputLine, Stream};

/// A line longer than this is handed to `on_line` in pieces (the log still gets every byte),
/// so a stack printing megabytes without a newline cannot exhaust memory.
pub(crate) const MAX_LINE_BYTES: usize = 1 << 20;

/// How long to keep reading, once the unit is gone, when something outside it still holds the
/// pipes open (a process campaign could not contain: it cleared its environment and escaped
/// the process tree on a machine without cgroups).
const DRAIN_AFTER_KILL: Duration = Duration::from_secs(2);

/// One piece of output as read: a whole line (with its newline), a final line without one, or
/// a piece of an over-long line.
struct Chunk {
    stream: Stream,
    at: Duration,
    bytes: Vec<u8>,
}

/// Run `spec` to the end. Every output line goes to `on_line` (and, byte-exact, to
/// `spec.log_path`); `cancel` turning `true` stops the process as an interruption.
///
/// Errors only when the process could not be started (program not found, missing working
/// directory) or the log could not be written; a process that fails, crashes or is killed is an
/// `Ok` outcome describing that.
pub async fn run_process(
    spec: &ProcessSpec,
    on_line: &mut (dyn FnMut(OutputLine) + Send),
    mut cancel: watch::Receiver<bool>,
) -> Result<ProcessOutcome> {
    let program = runnable(spec)?;
    let log_file = open_log(&spec.log_path)?;
    let mut log = std::io::BufWriter::new(log_file);
    if *cancel.borrow_and_update() {
        return Ok(ProcessOutcome::not_started());
    }

    let Started {
        mut unit,
        mut child,
        waited_before,
        start,
    } = start_in_unit(spec, program)?;

    let (mut rx, activity, readers) = readers(&mut child, start);
    let mut readers = Box::pin(readers);
    let mut reading = true;

    let far = start + Duration::from_secs(100 * 365 * 86400);
    let deadline = spec.timeout.map(|t| start + t);
    let mut exit: Option<ExitStatus> = None;
    let mut elapsed = None;
    let mut streams_open = true;
    let mut killed: Option<KillReason> = None;
    let mut kill_at: Option<Instant> = None;
    let mut give_up_at: Option<Instant> = None;
    let mut cancel_live = true;

    while exit.is_none() || streams_open {
        let quiet_deadline = spec
            .no_output_timeout
            .map(|limit| start + Duration::from_nanos(activity.load(Ordering::Relaxed)) + limit);
        tokio::select! {
            () = &mut readers, if reading => reading = false,
            chunk = rx.recv(), if streams_open => match chunk {
                Some(chunk) => {
                    log.write_all(&chunk.bytes).map_err(|e| Error::io(&spec.log_path, e))?;
                    if rx.is_empty() {
                        log.flush().map_err(|e| Error::io(&spec.log_path, e))?;
                    }
                    on_line(to_line(chunk));
                }
                None => streams_open = false,
            },
            status = child.wait(), if exit.is_none() => {
                elapsed = Some(start.elapsed());
                exit = Some(status.map_err(|e| Error::Environment(format!(
                    "waiting for `{program}` failed: {e}"
                )))?);
                // The leader is done; whatever it left behind (background children holding
                // the pipes, in its group or not) is stopped now rather than waited for. Pipes
                // held from outside the unit cannot be stopped: read a little, then leave.
                if streams_open && kill_at.is_none() {
                    if unit.alive() {
                        unit.signal(libc::SIGTERM);
                        kill_at = Some(Instant::now() + spec.grace);
                    } else if give_up_at.is_none() {
                        give_up_at = Some(Instant::now() + DRAIN_AFTER_KILL);
                    }
                }
            },
            _ = sleep_until(deadline.unwrap_or(far)), if deadline.is_some() && killed.is_none() && exit.is_none() => {
                killed = Some(KillReason::Timeout);
                stop(&mut unit, &mut kill_at, spec.grace);
            },
            _ = sleep_until(quiet_deadline.unwrap_or(far)), if quiet_deadline.is_some() && killed.is_none() && exit.is_none() => {
                // Output may have arrived while we slept; only a real silence counts.
                let last = Duration::from_nanos(activity.load(Ordering::Relaxed));
                if let Some(limit) = spec.no_output_timeout {
                    if start.elapsed() >= last + limit {
                        killed = Some(KillReason::NoOutput);
                        stop(&mut unit, &mut kill_at, spec.grace);
                    }
                }
            },
            changed = cancel.changed(), if cancel_live && killed.is_none() => match changed {
                Ok(()) => if *cancel.borrow_and_update() {
                    killed = Some(KillReason::Interrupted);
                    stop(&mut unit, &mut kill_at, spec.grace);
                },
                // The sender is gone: nobody can cancel any more.
                Err(_) => cancel_live = false,
            },
            _ = sleep_until(kill_at.unwrap_or(far)), if kill_at.is_some() && give_up_at.is_none() => {
                unit.kill();
                give_up_at = Some(Instant::now() + DRAIN_AFTER_KILL);
            },
            _ = sleep_until(give_up_at.unwrap_or(far)), if give_up_at.is_some() => break,
        }
    }
    log.flush().map_err(|e| Error::io(&spec.log_path, e))?;
    let cpu_wait = unit
        .cpu_wait()
        .zip(waited_before)
        .map(|(now, before)| now.saturating_sub(before));
    // Streams held open from outside the unit are not read any further.
    drop(readers);
    // Nothing the process started outlives it: members still alive after the leader and the
    // pipes are done get SIGTERM, then SIGKILL after the grace.
    let _ = unit.finish(kill_at, spec.grace).await;

    Ok(ProcessOutcome {
        exit_code: exit.and_then(|s| s.code()),
        signal: exit.and_then(|s| s.signal()),
        killed,
        elapsed: elapsed.unwrap_or_else(|| start.elapsed()),
        cpu_wait,
    })
}

/// A process just started in its containment unit.
struct Started {
    /// Dropping the unit (an early return, a cancelled future) kills whatever it holds.
    unit: Unit,
    /// Dropping the child (an early return, a cancelled future) kills and reaps it.
    child: crate::executor::spawn::Child,
    /// The CPU stall the unit's cgroup already carried (an earlier round's): counted from here.
    waited_before: Option<Duration>,
    start: Instant,
}

/// Open the unit `spec` names (or a fresh one) and start the process in it.
fn start_in_unit(spec: &ProcessSpec, program: &str) -> Result<Started> {
    let unit_id = spec
        .unit
        .clone()
        .unwrap_or_else(crate::executor::unit::fresh_id);
    let mut unit = Unit::open(&unit_id).map_err(|e| {
        Error::Environment(format!(
            "cannot create the containment unit of `{program}`: {e}"
        ))
    })?;
    unit.bound(crate::executor::unit::shepherd::Bound {
        timeout: spec.timeout,
        grace: spec.grace,
    });
    let waited_before = unit.cpu_wait_before();
    let start = Instant::now();
    let child = crate::executor::spawn::spawn(&spec.argv, &spec.env, &spec.cwd, &unit)
        .map_err(|e| spawn_error(program, e))?;
    unit.set_leader(child.id());
    Ok(Started {
        unit,
        child,
        waited_before,
        start,
    })
}

/// The program of `spec`, once it can be started (argv not empty, working directory there).
fn runnable(spec: &ProcessSpec) -> Result<&str> {
    let program = spec
        .argv
        .first()
        .ok_or_else(|| Error::Usage("a stack process needs a program (argv is empty)".into()))?;
    if !spec.cwd.is_dir() {
        return Err(Error::Environment(format!(
            "cannot run `{program}`: working directory {} does not exist",
            spec.cwd.display()
        )));
    }
    Ok(program)
}

/// The child's output as chunks, the time of its latest output (nanoseconds since `start`),
/// and the future reading both pipes. Both streams are read inside the run's own future, not by
/// tasks of their own: a line, the end of a stream and the exit wake the one task, on one
/// worker, instead of handing each other across threads (a run's end costs no cross-thread
/// wake-ups).
fn readers(
    child: &mut crate::executor::spawn::Child,
    start: Instant,
) -> (
    mpsc::Receiver<Chunk>,
    Arc<AtomicU64>,
    impl std::future::Future<Output = ()> + Send,
) {
    let (tx, rx) = mpsc::channel::<Chunk>(256);
    let activity = Arc::new(AtomicU64::new(0));
    let streams = [
        (child.stdout.take(), Stream::Stdout),
        (child.stderr.take(), Stream::Stderr),
    ]
    .map(|(pipe, stream)| {
        let (tx, activity) = (tx.clone(), activity.clone());
        async move {
            if let Some(pipe) = pipe {
                read_stream(pipe, stream, tx, start, activity).await;
            }
        }
    });
    let [out, err] = streams;
    let reading = async move {
        tokio::join!(out, err);
    };
    (rx, activity, reading)
}

/// SIGTERM the unit once and arm the SIGKILL deadline.
fn stop(unit: &mut Unit, kill_at: &mut Option<Instant>, grace: Duration) {
    if kill_at.is_none() {
        unit.signal(libc::SIGTERM);
        *kill_at = Some(Instant::now() + grace);
    }
}

/// Read one stream to its end, in whole lines (pieces for over-long lines), timestamping each
/// on arrival and noting any byte as activity for the no-output timeout.
async fn read_stream<R: AsyncRead + Unpin>(
    reader: R,
    stream: Stream,
    tx: mpsc::Sender<Chunk>,
    start: Instant,
    activity: Arc<AtomicU64>,
) {
    let mut reader = BufReader::with_capacity(64 * 1024, reader);
    let mut line = Vec::new();
    loop {
        let buf = match reader.fill_buf().await {
            Ok(buf) if !buf.is_empty() => buf,
            _ => break,
        };
        let now = start.elapsed();
        activity.fetch_max(now.as_nanos() as u64, Ordering::Relaxed);
        let (take, complete) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        line.extend_from_slice(&buf[..take]);
        reader.consume(take);
        if complete || line.len() >= MAX_LINE_BYTES {
            let chunk = Chunk {
                stream,
                at: now,
                bytes: std::mem::take(&mut line),
            };
            if tx.send(chunk).await.is_err() {
                return;
            }
        }
    }
    if !line.is_empty() {
        let chunk = Chunk {
            stream,
            at: start.elapsed(),
            bytes: line,
        };
        let _ = tx.send(chunk).await;
    }
}

/// The text of a chunk without its line ending (`\n` or `\r\n`); invalid UTF-8 is replaced.
fn to_line(chunk: Chunk) -> OutputLine {
    let mut bytes: &[u8] = &chunk.bytes;
    if let Some(rest) = bytes.strip_suffix(b"\n") {
        bytes = rest.strip_suffix(b"\r").unwrap_or(rest);
    }
    OutputLine {
        stream: chunk.stream,
        at: chunk.at,
        text: String::from_utf8_lossy(bytes).into_owned(),
    }
}

/// Open `run.log` for appending; its folder is created only when missing (the engine has
/// usually made the bundle folder already, and a `create_dir_all` first costs two syscalls).
fn open_log(path: &std::path::Path) -> Result<std::fs::File> {
    let open = || {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
    };
    match open() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
            }
            open().map_err(|e| Error::io(path, e))
        }
        other => other.map_err(|e| Error::io(path, e)),
    }
}

pub(crate) fn spawn_error(program: &str, e: std::io::Error) -> Error {
    let what = match e.kind() {
        std::io::ErrorKind::NotFound if program.contains('/') => "no such file".to_string(),
        std::io::ErrorKind::NotFound => "program not found on PATH".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied (not executable?)".to_string(),
        _ => e.to_string(),
    };
    Error::Environment(format!("cannot run `{program}`: {what}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(bytes: &[u8]) -> Chunk {
        Chunk {
            stream: Stream::Stderr,
            at: Duration::from_millis(5),
            bytes: bytes.to_vec(),
        }
    }

    #[test]
    fn line_endings_are_stripped_for_the_parser_only() {
        assert_eq!(to_line(chunk(b"abc\r\n")).text, "abc");
        assert_eq!(to_line(chunk(b"abc\n")).text, "abc");
        assert_eq!(to_line(chunk(b"partial")).text, "partial");
        assert_eq!(to_line(chunk(b"a\rb\n")).text, "a\rb");
        let line = to_line(chunk(b"bad \xff byte\n"));
        assert_eq!(line.text, "bad \u{fffd} byte");
        assert_eq!(line.stream, Stream::Stderr);
        assert_eq!(line.at, Duration::from_millis(5));
    }

    #[test]
    fn spawn_errors_name_the_program() {
        let e = spawn_error("mpicc", std::io::Error::from(std::io::ErrorKind::NotFound));
        assert_eq!(
            e.to_string(),
            "cannot run `mpicc`: program not found on PATH"
        );
        assert_eq!(e.exit_code(), crate::error::exit::ENVIRONMENT);
        let e = spawn_error(
            "/opt/x/bin/t",
            std::io::Error::from(std::io::ErrorKind::NotFound),
        );
        assert!(e.to_string().contains("`/opt/x/bin/t`: no such file"));
    }
}
