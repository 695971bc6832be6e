//! The one integration test binary: real `campaign` processes, real files.

mod executor;
mod slurm;
mod util;
