//! Everything on disk in a run dir: its layout and bundles (`layout`), one atomic write
//! (`atomic`), the journal and its replay, the run-dir lock, run fingerprints, provenance, resume
//! decisions, `campaign status`, loading bundles and old harness dirs back (`load`, `seed_dir`)
//! and the results files (`row`, the one row shape behind `json` and `csv`); across run dirs,
//! the performance history (`history`, an embedded SQLite database beside the campaigns).
//!
//! It reads and writes files; it does not run stacks, schedule, or compute statistics beyond
//! what the results files carry.

pub(crate) mod atomic;
pub(crate) mod fingerprint;
pub(crate) mod history_db;
pub(crate) mod host;
pub(crate) mod journal;
pub(crate) mod layout;
pub(crate) mod load;
pub mod lock;
pub(crate) mod profiles;
pub(crate) mod provenance;
pub(crate) mod rebuild;
pub(crate) mod results_check;
pub(crate) mod results_csv;
pub(crate) mod results_json;
pub(crate) mod results_stamp;
pub(crate) mod resume;
pub(crate) mod row;
pub(crate) mod seed_dir;
pub(crate) mod set_digest;
pub(crate) mod stamp_stat;
pub(crate) mod status;
