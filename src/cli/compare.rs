//! `campaign compare RUN_A RUN_B [--threshold 5%] [--format md|csv|json]`: exit 1 when any
//! (case, stack) got slower beyond the threshold, so it can gate CI. Glue only.

use crate::analysis::compare::{compare, parse_threshold, to_csv, to_json, to_markdown};
use crate::cli::args::{CompareArgs, CompareFormat};
use crate::error::{exit, Error, Result};

pub(crate) fn run(args: &CompareArgs) -> Result<i32> {
    let threshold = parse_threshold(&args.threshold).map_err(Error::Usage)?;
    let a = super::report::load_run_dir(&args.run_a)?;
    let b = super::report::load_run_dir(&args.run_b)?;
    let c = compare(&a, &b, threshold, &crate::report::bootstrap_for(&a));
    let text = match args.format {
        CompareFormat::Md => to_markdown(
            &c,
            &args.run_a.display().to_string(),
            &args.run_b.display().to_string(),
        ),
        CompareFormat::Csv => {
            to_csv(&c).map_err(|e| Error::Environment(format!("writing CSV: {e}")))?
        }
        CompareFormat::Json => to_json(&c),
    };
    print!("{text}");
    if c.regressed() {
        eprintln!(
            "error: slower beyond the ±{:.1} % noise band in at least one (case, stack)",
            threshold * 100.0
        );
        Ok(exit::RUNS_FAILED)
    } else {
        Ok(exit::OK)
    }
}
