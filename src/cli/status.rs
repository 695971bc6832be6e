//! `campaign status RUN_DIR`: print what the journal and bundles say about a run dir. Glue only;
//! the reading and the text are `status.rs`.

use crate::cli::args::StatusArgs;
use crate::error::{exit, Result};
use crate::store::status::RunDirStatus;

pub(crate) fn run(args: &StatusArgs) -> Result<i32> {
    let status = RunDirStatus::load(&args.run_dir)?;
    crate::console::text(&status.render());
    Ok(exit::OK)
}
