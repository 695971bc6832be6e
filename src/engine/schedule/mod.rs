//! Scheduling a campaign: the step graph (`dag`), the device and CPU pool (`pool`), retry and
//! quarantine rules (`faults`), and the `scheduler`, the single owner of run state, with the
//! types executors report through (`types`). No I/O: the engine's dispatcher does that.

pub(crate) mod dag;
pub(crate) mod faults;
pub(crate) mod pool;
pub(crate) mod scheduler;
pub(crate) mod types;
