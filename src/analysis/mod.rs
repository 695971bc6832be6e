//! Numbers from result sets: descriptive statistics, bootstrap intervals, bandwidth and model
//! fits (`stats`); the statistics of one (case, stack) (`run_stats`), its paired comparison
//! with the baseline stack (`pairing`) and the α–β models and B* over message size
//! (`scaling`), which the report's summarize step gathers; the comparison of two result sets
//! (`compare`), change-point detection over a performance history (`changepoint`), and JUnit
//! XML for CI (`junit`), when a point has seen enough repeats (`sequential`), and which device
//! or node arrives last, blamed on the hardware or one stack (`straggler`), and the link census
//! of every device pair: its rounds, its scores, the slow link or device (`census`). Pure
//! functions: no I/O; `on_cores` spreads a list of such work over the cores.

pub(crate) mod between;
pub mod calibration;
pub(crate) mod census;
pub(crate) mod changepoint;
pub mod compare;
pub(crate) mod crossover;
pub(crate) mod junit;
pub(crate) mod on_cores;
pub mod pairing;
pub(crate) mod regret;
pub(crate) mod run_stats;
pub mod scaling;
pub(crate) mod sequential;
#[cfg(test)]
pub(crate) mod sim;
pub mod stats;
pub(crate) mod straggler;
pub(crate) mod verdict;
