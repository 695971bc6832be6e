//! Scheduling a campaign: the step graph (`dag`), the device and CPU pool (`pool`), retry and
//! quarantine rules (`faults`), and the `scheduler`, the single owner of run state, with the
//! types executors report through (`types`). No I/O: the engine's driver does that.

pub mod dag;
pub mod faults;
pub mod pool;
pub mod scheduler;
pub mod types;
