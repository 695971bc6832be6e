//! The one integration test binary: real `campaign` processes, real files.

mod bench;
mod executor;
mod report;
mod slurm;
mod stacks;
mod util;
