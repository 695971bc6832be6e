//! Everything on disk in a run dir: its layout and bundles (`layout`), one atomic write
//! (`atomic`), the journal and its replay, the run-dir lock, run fingerprints, provenance, resume
//! decisions, `campaign status`, loading bundles and old harness dirs back (`load`, `seed_dir`)
//! and the results files (`row`, the one row shape behind `json` and `csv`); across run dirs,
//! the performance history (`history`, an embedded SQLite database beside the campaigns).
//!
//! It reads and writes files; it does not run stacks, schedule, or compute statistics beyond
//! what the results files carry.

pub mod atomic;
pub mod csv;
pub mod fingerprint;
pub mod history;
pub(crate) mod host;
pub mod journal;
pub mod json;
pub mod layout;
pub mod load;
pub mod lock;
pub mod provenance;
pub mod rebuild;
pub mod results_check;
pub mod resume;
pub mod row;
pub mod seed_dir;
pub mod status;
