//! Numbers from result sets: descriptive statistics, bootstrap intervals, bandwidth and model
//! fits (`stats`), and the comparison of two result sets (`compare`). Pure functions: no I/O.

pub mod compare;
pub mod stats;
