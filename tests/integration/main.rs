//! The one integration test binary: real `campaign` processes, real files.

mod mpi;
mod util;
