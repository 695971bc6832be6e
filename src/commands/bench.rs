//! `campaign bench allreduce`.

use crate::cli::AllreduceArgs;
use crate::error::{Error, Result};

pub fn allreduce(_args: &AllreduceArgs) -> Result<i32> {
    Err(Error::Usage(
        "`campaign bench allreduce` is not available in this build yet".into(),
    ))
}
