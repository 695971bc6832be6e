//! The one integration test binary: real `campaign` processes, real files.

mod bench;
mod executor;
mod plan;
mod report;
mod resume;
mod run;
mod slurm;
mod slurm_host;
mod stacks;
mod util;
