//! Planned variants checked against the installed library before anything runs
//! (`[stacks.NAME.variants_probe]`): a variant the library lacks (Open MPI 4.1 has no `sparbit`)
//! is refused at `validate` and `run` (exit 2), naming the variant, the op and what the library
//! offers, instead of failing every run of it.
//!
//! Only stacks the plan runs are probed, and each probe is run afresh every time (nothing is
//! cached that could go stale when the library changes). A probe that cannot run (the tool is
//! not installed, it fails, it hangs) judges nothing: a warning says so and the benchmark's own
//! run-time check remains. A stack's default variant pins nothing and is never judged; neither
//! are seed case files (their runs are checked at run time). The listing is read by
//! `stack::variants_probe`.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::{Diagnostic, Error, Result};
use crate::model::case::{Op, Variant};
use crate::model::plan::Plan;
use crate::model::stack::VariantsProbe;
use crate::plan::variants::Claims;
use crate::stack::variants_probe::{self, Offered};

/// How long a probe may take: `ompi_info` answers in well under a second; one that hangs
/// must not hold `validate` up.
const PROBE_LIMIT: Duration = Duration::from_secs(60);

/// Check the variants the plan runs on `names` (its stacks, after any `--stacks`) against
/// each stack's probe. `Ok` carries warnings (a probe that could not run); `Err` lists every
/// variant the installed library lacks (exit 2).
pub(crate) fn check_variants(plan: &Plan, names: &[String]) -> Result<Vec<String>> {
    let defs = crate::stack::registry::resolve(&plan.stack_defs, &plan.source)?;
    let probed: Vec<(usize, &String)> = (names.iter().enumerate())
        .filter(|(_, n)| defs.get(*n).is_some_and(|d| d.variants_probe.is_some()))
        .collect();
    if probed.is_empty() || !plan.case_files.is_empty() {
        return Ok(Vec::new());
    }
    let claims = Claims::resolve(plan, names)?;
    let (mut warnings, mut problems) = (Vec::new(), Vec::new());
    for (i, name) in probed {
        let def = &defs[name];
        let Some(probe) = def.variants_probe.as_ref() else {
            continue;
        };
        let pinned: Vec<(Op, Variant)> = (claims.runs_of(i).into_iter())
            .filter(|(op, v)| def.default_variant(*op) != Some(*v))
            .collect();
        if pinned.is_empty() {
            continue;
        }
        let shown = probe.command.join(" ");
        let offered = match run_probe(probe) {
            Ok(text) => variants_probe::read(probe, &text)
                .map_err(|why| Error::invalid(&plan.source, format!("stack `{name}`: {why}")))?,
            Err(why) => {
                warnings.push(format!(
                    "stack `{name}`: its variants were not checked against the installed \
                     library (`{shown}`: {why}); a variant the library lacks fails at run time"
                ));
                continue;
            }
        };
        if offered.is_empty() {
            warnings.push(format!(
                "stack `{name}`: `{shown}` listed no algorithms; its variants were not checked \
                 (a variant the library lacks fails at run time)"
            ));
            continue;
        }
        problems.extend(lacking(plan, name, probe, &offered, &pinned));
    }
    if problems.is_empty() {
        Ok(warnings)
    } else {
        Err(Error::Invalid(problems))
    }
}

/// `run`'s check: refuse what the library lacks, print why a probe could not judge. A backend
/// that places runs on other machines (`!here`) is not probed: their library is not this one's.
pub(crate) fn before_run(plan: &Plan, names: &[String], here: bool) -> Result<()> {
    if here {
        for w in check_variants(plan, names)? {
            crate::tell!("warning: {w}");
        }
    }
    Ok(())
}

/// A diagnostic per op with planned variants the library does not offer, naming them all.
fn lacking(
    plan: &Plan,
    name: &str,
    probe: &VariantsProbe,
    offered: &Offered,
    pinned: &[(Op, Variant)],
) -> Vec<Diagnostic> {
    let field = if plan.axes.iter().any(|a| a.name == "variant") {
        "axes.variant".to_string()
    } else if plan.case_defaults.contains_key("variant") {
        "case.variant".to_string()
    } else {
        format!("stacks.{name}")
    };
    let shown = probe.command.join(" ");
    let mut out = Vec::new();
    for op in Op::EVERY {
        let missing: Vec<String> = (pinned.iter())
            .filter(|(o, v)| *o == op && offered.has(probe, op, *v) == Some(false))
            .map(|(_, v)| format!("`{v}`"))
            .collect();
        if missing.is_empty() {
            continue;
        }
        let has = offered.of(probe, op).unwrap_or_default().join(", ");
        let (noun, them) = if missing.len() == 1 {
            ("variant", "it")
        } else {
            ("variants", "them")
        };
        out.push(crate::plan::locate(
            plan,
            &field,
            format!(
                "stack `{name}`: {op} {noun} {} not in the installed library (`{shown}` offers \
                 for {op}: {has}); every run of {them} would fail: plan only what it has (e.g. \
                 `[stacks.{name}] variants = [...]`)",
                missing.join(", ")
            ),
        ));
    }
    out
}

/// The probe's stdout, or why there is none: not installed, failed, or past [`PROBE_LIMIT`].
fn run_probe(probe: &VariantsProbe) -> std::result::Result<String, String> {
    let (program, args) = probe.command.split_first().ok_or("no command")?;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => format!("`{program}` not found"),
            _ => format!("cannot start `{program}`: {e}"),
        })?;
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    // Read on a thread so a probe that hangs with its pipe open cannot hold this one.
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        stdout.read_to_string(&mut text).map(|_| text)
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > PROBE_LIMIT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("no answer within {} s", PROBE_LIMIT.as_secs()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(format!("cannot wait for `{program}`: {e}")),
        }
    };
    let text = (reader.join())
        .map_err(|_| "its output could not be read".to_string())?
        .map_err(|e| format!("its output could not be read: {e}"))?;
    if !status.success() {
        return Err(format!("`{program}` exited with {status}"));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(extra: &str) -> Plan {
        let text = format!(
            "[campaign]\nname = \"t\"\n[case]\np = 2\ncount = 64\n[axes]\nstacks = [\"mine\"]\n{extra}\n"
        );
        crate::plan::parse_with(&text, std::path::Path::new("t.toml"), Default::default())
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// A shell stack whose probe prints a fixed listing: `ring` is there, `tree` is not.
    const STACK: &str = "[stacks.mine]\ncommand = [\"true\"]\nvariants_by_op = { allreduce = [\"default\", \"ring\", \"tree\"] }\n[stacks.mine.variants_probe]\ncommand = [\"printf\", \"allreduce ring\\\\nallreduce default\\\\n\"]\npattern = '^(?P<op>\\w+) (?P<variant>\\w+)$'\n";

    #[test]
    fn a_variant_the_library_lacks_is_refused_naming_what_it_offers() {
        let p = plan(&format!("variant = [\"ring\", \"tree\"]\n{STACK}"));
        let err = check_variants(&p, &p.stacks).unwrap_err();
        assert_eq!(err.exit_code(), crate::error::exit::BAD_INPUT);
        let text = err.to_string();
        assert!(
            text.contains("allreduce variant `tree` not in the installed library")
                && text.contains("offers for allreduce: ring, default"),
            "{text}"
        );
        assert!(!text.contains("`ring`"), "{text}");
        let fine = plan(&format!("variant = [\"ring\"]\n{STACK}"));
        assert_eq!(
            check_variants(&fine, &fine.stacks).unwrap(),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_missing_probe_tool_warns_and_judges_nothing() {
        let stack = STACK.replace("\"printf\"", "\"campaign-no-such-probe-tool\"");
        let p = plan(&format!("variant = [\"tree\"]\n{stack}"));
        let warnings = check_variants(&p, &p.stacks).unwrap();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("`campaign-no-such-probe-tool` not found")
                && warnings[0].contains("fails at run time"),
            "{warnings:?}"
        );
    }
}
