//! The pipeline shared by `run`, `resume` and `dry-run`: plan → cases → DAG → scheduler →
//! backend → bundles → results.
//!
//! [`prepare`] does everything that can fail on bad input before anything runs (the backend
//! included); [`execute`] claims a new run dir and [`resume`] an existing one (`session`), and
//! `drive` tells the rest: `campaign` builds it, `runtime` runs it, `drive::finish` ends it;
//! `report_step` is the report and history step after `collect`. `dry-run` stops after
//! `prepare`. The engine sees one backend contract (`executor::Backend`) and names none; it must
//! not parse CLI arguments or print anything but the run dir lines and the final summary.

pub mod campaign;
pub mod case_files;
pub mod drive;
pub mod driver;
pub mod estimate;
pub mod finished;
pub mod health;
pub mod interrupt;
pub mod prepare;
pub mod progress;
pub mod report_step;
pub mod results_files;
pub mod runtime;
pub mod schedule;
pub mod session;
pub mod stack_check;
pub mod verdict;
pub mod work;

pub(crate) use drive::{execute, resume};
pub(crate) use driver::AfterStep;
pub(crate) use finished::Finished;
pub(crate) use prepare::{prepare, Options, Prepared};
