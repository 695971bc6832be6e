//! The one integration test binary: real `campaign` processes, real files.

mod executor;
mod mpi;
mod stacks;
mod util;
