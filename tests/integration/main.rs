//! The one integration test binary: real `campaign` processes, real files.

mod bench;
mod executor;
mod report;
mod slurm;
mod slurm_host;
mod stacks;
mod util;
