//! The one integration test binary: real `campaign` processes, real files.

mod architecture;
mod bench;
mod executor;
mod honest;
mod mpi;
mod plan;
mod readme;
mod report;
mod resume;
mod run;
mod slurm;
mod slurm_campaign;
mod slurm_host;
mod stacks;
mod synthetic;
mod util;
