//! The pipeline shared by `run`, `resume` and `dry-run`: plan → cases → DAG → scheduler →
//! backend → bundles → results.
//!
//! [`prepare`] does everything that can fail on bad input before anything runs (the backend
//! included); [`execute`] claims a new run dir and [`resume`] an existing one (`session`), and
//! `drive` tells the rest: `campaign` builds it, `runtime` runs it, `drive::finish` ends it;
//! `report_step` is the report and history step after `collect`. `dry-run` stops after
//! `prepare`. The engine sees one backend contract (`executor::Backend`) and names none; it must
//! not parse CLI arguments or print anything but the run dir lines and the final summary.

pub(crate) mod adapt;
pub(crate) mod campaign;
pub(crate) mod case_files;
pub(crate) mod census_step;
pub(crate) mod decide;
pub(crate) mod derived_stop;
pub(crate) mod dispatch;
pub(crate) mod drive;
pub(crate) mod estimate;
pub(crate) mod finished;
pub(crate) mod health;
pub(crate) mod interrupt;
pub(crate) mod prepare;
pub(crate) mod profiled;
pub(crate) mod progress;
pub(crate) mod report_step;
pub(crate) mod results_files;
pub(crate) mod run_status;
pub(crate) mod runtime;
pub(crate) mod schedule;
pub(crate) mod session;
pub(crate) mod stack_check;
pub(crate) mod variant_check;
pub(crate) mod work;

pub(crate) use dispatch::AfterStep;
pub(crate) use drive::{execute, resume};
pub(crate) use finished::Finished;
pub(crate) use prepare::{prepare, Options, Prepared};
