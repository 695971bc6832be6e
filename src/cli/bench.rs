//! `campaign bench collective` (older name `bench allreduce`): the built-in `host` stack's command,
//! which runs whatever op its case file names.
//!
//! Glue only: load and check the case file, turn arguments into `bench::Options`, run, and write
//! each round's `CAMPAIGN_SAMPLE` line to stdout as the runner hands it over (flushed, so the
//! engine sees it at once: as each round ends with `--check every`, after the last round by
//! default), then `CAMPAIGN_DONE`. When stdout is a terminal (a person, not the engine, is
//! reading) a human summary — median time, bus bandwidth — follows on stderr; off a terminal
//! the output is the protocol alone. Exit 0 when every checked round matched the golden, 1 when
//! one did not (the mismatch also goes to stderr), 2 for a bad case file or option (with a
//! `CAMPAIGN_DONE` line saying why), 4 when stdout cannot be written.

use std::io::Write;

use crate::bench::{self, protocol, CheckMode, Fault, Options};
use crate::cli::args::CollectiveArgs;
use crate::error::{exit, Error, Result};
use crate::model::case::Case;

pub(crate) fn collective(args: &CollectiveArgs) -> Result<i32> {
    let prepared = load_case(args).and_then(|case| {
        let opts = options(args, &case)?;
        Ok((case, opts))
    });
    let (case, opts) = match prepared {
        Ok(ok) => ok,
        Err(e) => {
            // Tell a parser why there are no samples; the error itself goes to stderr via lib.rs.
            let mut out = std::io::stdout().lock();
            let _ = protocol::write_done_error(&mut out, &e.to_string());
            let _ = out.flush();
            return Err(e);
        }
    };

    let stdout = std::io::stdout();
    let mut write_error: Option<std::io::Error> = None;
    let mut timed_execute_s = Vec::new();
    let outcome = bench::run(&case, &opts, &mut |round| {
        if round.timed {
            timed_execute_s.push(round.execute_s);
        }
        if write_error.is_some() {
            return;
        }
        let mut out = stdout.lock();
        let written = protocol::write_sample(&mut out, round).and_then(|()| out.flush());
        if let Err(e) = written {
            write_error = Some(e);
        }
    });
    let mut out = stdout.lock();
    let done = protocol::write_done(&mut out, &outcome).and_then(|()| out.flush());
    if let Some(e) = write_error.or(done.err()) {
        return Err(Error::Environment(format!(
            "cannot write the protocol lines to stdout: {e}"
        )));
    }
    if std::io::IsTerminal::is_terminal(&stdout) {
        crate::console::err_text(&bench::terminal::human(&case, &timed_execute_s, &outcome));
    }
    match outcome.error() {
        None => Ok(exit::OK),
        Some(error) => {
            crate::tell!("error: {}: {error}", case.case_id());
            Ok(exit::RUNS_FAILED)
        }
    }
}

/// Load the case; an unreadable file is bad input (exit 2), like an invalid one.
fn load_case(args: &CollectiveArgs) -> Result<Case> {
    let case = Case::load(&args.case_file).map_err(|e| match e {
        Error::Io { path, source } => {
            Error::invalid(path, format!("cannot read the case file: {source}"))
        }
        other => other,
    })?;
    if !crate::bench::implements(case.op, case.variant) {
        return Err(Error::invalid(
            &args.case_file,
            format!(
                "variant `{}`: the host {} implements {}",
                case.variant,
                case.op,
                case.op
                    .host_variants()
                    .iter()
                    .map(|v| v.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    Ok(case)
}

fn options(args: &CollectiveArgs, case: &Case) -> Result<Options> {
    let mut opts = Options::for_case(case);
    if let Some(w) = args.warmup {
        opts.warmup = w;
    }
    if let Some(t) = args.timed {
        opts.timed = t;
    }
    if opts.timed == 0 {
        return Err(Error::Usage(
            "--timed must be at least 1: a run with no timed round checks nothing".into(),
        ));
    }
    opts.persistent = !args.no_persistent;
    if let Some(text) = &args.check {
        opts.check = CheckMode::parse(text).ok_or_else(|| {
            Error::Usage(format!(
                "--check `{text}` (or $HOST_BENCH_CHECK): expected `ends` or `every`"
            ))
        })?;
    }
    if let Some(spec) = &args.inject_fault {
        opts.fault = Some(parse_fault(spec, case, opts.timed)?);
    }
    Ok(opts)
}

/// Parse `RANK:ROUND` (ROUND is a 1-based timed round) or `RANK` (every timed round) and check
/// both are in range.
fn parse_fault(spec: &str, case: &Case, timed: u32) -> Result<Fault> {
    let bad = |why: String| Error::Usage(format!("--inject-fault `{spec}`: {why}"));
    let (rank, round) = match spec.split_once(':') {
        Some((rank, round)) => (rank, Some(round)),
        None => (spec, None),
    };
    let rank: u32 = rank.trim().parse().map_err(|_| {
        bad(format!(
            "RANK `{rank}` is not a non-negative integer (RANK[:ROUND], e.g. 1:2)"
        ))
    })?;
    let round = round
        .map(|round| {
            round
                .trim()
                .parse::<u32>()
                .map_err(|_| bad(format!("ROUND `{round}` is not a positive integer")))
        })
        .transpose()?;
    if rank >= case.p {
        return Err(bad(format!(
            "RANK must be below p = {} (ranks are 0..{})",
            case.p,
            case.p - 1
        )));
    }
    if round.is_some_and(|r| r == 0 || r > timed) {
        return Err(bad(format!(
            "ROUND must be a timed round, 1..={timed} (counted within the timed rounds)"
        )));
    }
    Ok(Fault {
        rank,
        timed_round: round,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::case::Variant;

    #[test]
    fn fault_spec_is_parsed_and_range_checked() {
        let case = Case::new(Variant::Ring, 4, 16);
        assert_eq!(
            parse_fault("3:2", &case, 5).unwrap(),
            Fault {
                rank: 3,
                timed_round: Some(2)
            }
        );
        assert_eq!(
            parse_fault("1", &case, 5).unwrap(),
            Fault {
                rank: 1,
                timed_round: None
            },
            "RANK alone spoils every timed round"
        );
        for (spec, needle) in [
            ("", "RANK `` is not"),
            ("x:1", "RANK `x`"),
            ("1:y", "ROUND `y`"),
            ("4:1", "RANK must be below p = 4"),
            ("0:0", "ROUND must be a timed round, 1..=5"),
            ("0:6", "ROUND must be a timed round, 1..=5"),
        ] {
            let err = parse_fault(spec, &case, 5).unwrap_err();
            assert!(err.to_string().contains(needle), "{spec}: {err}");
            assert_eq!(err.exit_code(), exit::BAD_INPUT);
        }
    }
}
