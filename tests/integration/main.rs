//! The one integration test binary: real `campaign` processes, real files.

mod bench;
mod executor;
mod mpi;
mod report;
mod stacks;
mod util;
