//! `campaign cases`.

use crate::cli::CasesArgs;
use crate::error::{Error, Result};

pub fn run(_args: &CasesArgs) -> Result<i32> {
    Err(Error::Usage(
        "`campaign cases` is not available in this build yet".into(),
    ))
}
