//! `[census] quarantine` (`campaign census --quarantine`): once a census's runs are recorded,
//! the devices it names as slow are quarantined — a `quarantined` line each in the journal, and
//! the results files rewritten with them — so `campaign status` lists them, the report marks
//! them and a `campaign resume` of the run dir keeps them out of every run it still starts.
//!
//! Only devices are quarantined: a slow link is a property of two devices together, and taking
//! either out would punish the healthy one. It runs as a step after `collect`, before the report,
//! on the run dir's files; it decides nothing the analysis did not name.

use crate::analysis::census::census;
use crate::engine::dispatch::AfterStep;
use crate::model::plan::CensusConfig;

/// The after-`collect` step quarantining what `c`'s census names, when `c.quarantine`.
pub(crate) fn quarantine_step(c: &CensusConfig) -> Option<(String, AfterStep)> {
    if !c.quarantine {
        return None;
    }
    let (devices, stack) = (c.devices.clone(), c.stack.clone());
    let step: AfterStep = Box::new(move |run_dir| {
        let path = &run_dir.path;
        let mut set = crate::store::load::load_any_run_dir(path)?;
        // In planned order, as the report reads it (what it disagrees on, the report says).
        let _ = crate::store::rebuild::planned_order(path, &set)?.apply(&mut set);
        let named = census(&set, &devices, &stack).findings;
        let mut journal = None;
        for f in named.iter().filter(|f| f.kind == "device") {
            let device = f.devices[0];
            if set.quarantined.contains_key(&device.to_string()) {
                continue;
            }
            let reason = format!("link census: {}", f.label);
            let j = match journal.as_mut() {
                Some(j) => j,
                None => journal.insert(crate::store::journal::Journal::open(path)?),
            };
            j.quarantined(device, &reason)?;
            crate::say!("device {device} quarantined: {reason}");
            set.quarantined.insert(device.to_string(), reason);
        }
        if let Some(j) = journal {
            j.durable()?;
            crate::store::rebuild::write_results(path, &set)?;
        }
        Ok(())
    });
    Some(("census".to_string(), step))
}
