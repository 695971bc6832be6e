//! `campaign resume`.

use crate::cli::ResumeArgs;
use crate::error::{Error, Result};

pub fn run(_args: &ResumeArgs) -> Result<i32> {
    Err(Error::Usage(
        "`campaign resume` is not available in this build yet".into(),
    ))
}
