//! The one integration test binary: real `campaign` processes, real files.

mod util;
mod bench;
