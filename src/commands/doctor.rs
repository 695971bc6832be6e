//! `campaign doctor`.

use crate::cli::DoctorArgs;
use crate::error::{Error, Result};

pub fn run(_args: &DoctorArgs) -> Result<i32> {
    Err(Error::Usage(
        "`campaign doctor` is not available in this build yet".into(),
    ))
}
