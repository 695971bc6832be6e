//! `campaign validate`.

use crate::cli::ValidateArgs;
use crate::error::{Error, Result};

pub fn run(_args: &ValidateArgs) -> Result<i32> {
    Err(Error::Usage(
        "`campaign validate` is not available in this build yet".into(),
    ))
}
