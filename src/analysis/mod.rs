//! Numbers from result sets: descriptive statistics, bootstrap intervals, bandwidth and model
//! fits (`stats`), the comparison of two result sets (`compare`) and change-point detection over
//! a performance history (`changepoint`), and JUnit XML for CI (`junit`). Pure functions: no
//! I/O.

pub(crate) mod between;
pub(crate) mod changepoint;
pub mod compare;
pub(crate) mod junit;
pub mod stats;
pub(crate) mod verdict;
