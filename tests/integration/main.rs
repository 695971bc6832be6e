//! The one integration test binary: real `campaign` processes, real files.

mod resume;
mod util;
