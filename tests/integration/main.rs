//! The one integration test binary: real `campaign` processes, real files.

mod architecture;
mod bench;
mod browser;
mod collectives;
mod containment;
mod executor;
mod exit_codes;
mod history;
mod honest;
mod huge;
mod mpi;
mod newcomer;
mod plan;
mod readme;
mod report;
mod resume;
mod run;
mod slurm;
mod slurm_campaign;
mod slurm_host;
mod slurm_nodes;
mod slurm_preflight;
mod stacks;
mod standin;
mod synthetic;
mod util;
