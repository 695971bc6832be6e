//! `campaign run`.

use crate::cli::RunArgs;
use crate::error::{Error, Result};

pub fn run(_args: &RunArgs) -> Result<i32> {
    Err(Error::Usage(
        "`campaign run` is not available in this build yet".into(),
    ))
}
