//! `campaign compare`.

use crate::cli::CompareArgs;
use crate::error::{Error, Result};

pub fn run(_args: &CompareArgs) -> Result<i32> {
    Err(Error::Usage(
        "`campaign compare` is not available in this build yet".into(),
    ))
}
