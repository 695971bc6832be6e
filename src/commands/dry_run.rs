//! `campaign dry-run`.

use crate::cli::DryRunArgs;
use crate::error::{Error, Result};

pub fn run(_args: &DryRunArgs) -> Result<i32> {
    Err(Error::Usage(
        "`campaign dry-run` is not available in this build yet".into(),
    ))
}
