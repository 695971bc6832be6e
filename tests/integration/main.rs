//! The one integration test binary: real `campaign` processes, real files.

mod executor;
mod run;
mod stacks;
mod util;
