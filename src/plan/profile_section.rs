//! `[profile]`: which profile kinds a campaign makes and how many profiled runs of each per
//! (case, stack) — `kinds = ["cpu", "counters"]`, `runs = 1` — into `model::profile::ProfileConfig`.
//!
//! Only the section's own keys are checked here; whether a stack can make a kind is decided per
//! profiled run (a planned skip that says why), never a plan error.

use super::diag::did_you_mean;
use super::raw::{Ctx, Item};
use crate::model::profile::{ProfileConfig, ProfileKind, MAX_PROFILE_RUNS};

/// Read `[profile]`.
pub(crate) fn read_profile(cx: &mut Ctx<'_>, item: &Item<'_>) -> ProfileConfig {
    let mut profile = ProfileConfig::default();
    let Some(table) = cx.table(item, "profile") else {
        return profile;
    };
    for e in cx.known_entries(table, "profile", &["kinds", "runs"]) {
        match e.key {
            "kinds" => {
                let Some(elems) = cx.array(e.item, "profile.kinds") else {
                    continue;
                };
                for (i, el) in elems.into_iter().enumerate() {
                    let field = format!("profile.kinds[{i}]");
                    let Some(name) = cx.string(el, &field) else {
                        continue;
                    };
                    match ProfileKind::parse(&name) {
                        Some(k) if profile.kinds.contains(&k) => {
                            cx.error(&el.span(), &field, format!("`{name}` is named twice"))
                        }
                        Some(k) => profile.kinds.push(k),
                        None => {
                            let hint = did_you_mean(&name, ProfileKind::names());
                            cx.error(
                                &el.span(),
                                &field,
                                format!(
                                    "unknown profile kind `{name}`{hint}; expected one of: {}",
                                    ProfileKind::names().join(", ")
                                ),
                            );
                        }
                    }
                }
            }
            _ => {
                if let Some(n) = cx.uint(e.item, "profile.runs", u64::from(MAX_PROFILE_RUNS)) {
                    if n == 0 {
                        cx.error(
                            &e.item.span(),
                            "profile.runs",
                            "expected at least 1 profiled run per (case, stack, kind); leave `kinds` out to profile nothing".into(),
                        );
                    } else {
                        profile.runs = n as u32;
                    }
                }
            }
        }
    }
    profile
}
