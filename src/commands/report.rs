//! `campaign report`.

use crate::cli::ReportArgs;
use crate::error::{Error, Result};

pub fn run(_args: &ReportArgs) -> Result<i32> {
    Err(Error::Usage(
        "`campaign report` is not available in this build yet".into(),
    ))
}
