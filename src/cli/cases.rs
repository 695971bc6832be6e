//! `campaign cases PLAN --out DIR [--dry-run]`: the plan's cases as seed-format case files.
//!
//! Writes `<case_id>.json` (pretty, 2-space indent, as the seed did). Reruns rewrite only the
//! files whose content changed and say how many; files in DIR that the plan no longer makes are
//! kept (they may be someone's) and listed as stale. Glue only.

use std::collections::HashSet;
use std::path::Path;

use crate::cli::args::CasesArgs;
use crate::error::{Error, Result};
use crate::store::atomic::write_atomic;

/// Stale files named in the summary before it says "and N more".
const STALE_SHOWN: usize = 10;

pub(crate) fn run(args: &CasesArgs) -> Result<i32> {
    let plan = crate::plan::load(&args.plan)?;
    for w in &plan.warnings {
        crate::tell!("warning: {w}");
    }
    if !args.dry_run {
        std::fs::create_dir_all(&args.out).map_err(|e| Error::io(&args.out, e))?;
    }
    let (mut wrote, mut unchanged) = (0u64, 0u64);
    let mut names: HashSet<String> = HashSet::new();
    for case in crate::plan::sweep::cases(&plan, None)? {
        let case = case?;
        let name = format!("{}.json", case.case_id());
        if !names.insert(name.clone()) {
            return Err(Error::invalid(
                &plan.source,
                format!(
                    "two cases share case_id {}; their files would overwrite each other",
                    case.case_id()
                ),
            ));
        }
        let path = args.out.join(&name);
        let text = case.to_pretty_json();
        if read_if_exists(&path)?.as_deref() == Some(text.as_str()) {
            unchanged += 1;
            continue;
        }
        wrote += 1;
        if !args.dry_run {
            write_atomic(&path, text.as_bytes())?;
        }
    }
    let stale = stale_files(&args.out, &names)?;
    let verb = if args.dry_run { "would write" } else { "wrote" };
    let mut summary = format!(
        "{verb} {wrote}, unchanged {unchanged}, stale {}",
        stale.len()
    );
    if !stale.is_empty() {
        let shown: Vec<&str> = stale.iter().take(STALE_SHOWN).map(String::as_str).collect();
        summary.push_str(&format!(
            " (kept, not made by this plan: {}{})",
            shown.join(", "),
            if stale.len() > STALE_SHOWN {
                format!(" and {} more", stale.len() - STALE_SHOWN)
            } else {
                String::new()
            }
        ));
    }
    crate::say!("{summary} in {}", args.out.display());
    Ok(0)
}

fn read_if_exists(path: &Path) -> Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        // Unreadable or not UTF-8: rewrite it.
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => Ok(None),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// `*.json` files in `dir` that this plan did not make, sorted.
fn stale_files(dir: &Path, made: &HashSet<String>) -> Result<Vec<String>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(dir, e)),
    };
    let mut out: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.ends_with(".json") && !made.contains(n))
        .collect();
    out.sort();
    Ok(out)
}
