//! `campaign status`.

use crate::cli::StatusArgs;
use crate::error::{Error, Result};

pub fn run(_args: &StatusArgs) -> Result<i32> {
    Err(Error::Usage(
        "`campaign status` is not available in this build yet".into(),
    ))
}
