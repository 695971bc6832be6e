//! The device pool: which devices and CPU slots a campaign may use, who holds them, placement.
//!
//! Owns the free/busy state of every device and CPU slot, the placement rule (`auto`: P free
//! devices, contiguous and inside one topology group when possible, else any free ones;
//! `pinned`: exactly the case's `device_ids`), exclusive leases and quarantine. It must not know
//! about stacks, processes or timing: the scheduler asks for a [`Need`] and gets a [`Lease`].

use std::collections::{BTreeMap, BTreeSet};

#[cfg(test)]
use crate::model::plan::DeviceKind;
use crate::model::plan::{DevicesConfig, Placement};

/// What one run needs from the pool.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Need {
    /// `p` devices; `pinned` = exactly these ids.
    Devices { p: usize, pinned: Option<Vec<u32>> },
    /// `p` devices with consecutive ascending ids (a stack whose program takes only a range
    /// `lo-hi`, `contiguous_devices = true`): only contiguous windows are offered.
    Contiguous { p: usize },
    /// CPU slots (the `host` stack and `resource = "cpu"`): never shared with another run.
    Cpu { slots: usize },
    /// Nothing (`resource = "none"`).
    Nothing,
}

/// What a run holds while it runs. Released by [`Pool::release`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Lease {
    pub(crate) devices: Vec<u32>,
    pub(crate) cpus: Vec<u32>,
}

impl Lease {
    /// The ids a stack sees in `CAMPAIGN_DEVICES`: devices, or CPU slots for CPU runs.
    pub(crate) fn visible_ids(&self) -> &[u32] {
        if self.devices.is_empty() {
            &self.cpus
        } else {
            &self.devices
        }
    }
}

/// One set of exclusive slots (devices, or CPU slots) with optional topology groups.
#[derive(Debug, Clone)]
struct Slots {
    ids: Vec<u32>,
    groups: Vec<Vec<u32>>,
    busy: BTreeSet<u32>,
    quarantined: BTreeMap<u32, String>,
}

impl Slots {
    fn new(ids: Vec<u32>, groups: Vec<Vec<u32>>) -> Slots {
        // No groups = one island holding the whole pool, so placement has one code path.
        let groups = if groups.is_empty() {
            vec![ids.clone()]
        } else {
            groups
        };
        Slots {
            ids,
            groups,
            busy: BTreeSet::new(),
            quarantined: BTreeMap::new(),
        }
    }

    fn is_free(&self, id: u32) -> bool {
        self.ids.contains(&id) && !self.busy.contains(&id) && !self.quarantined.contains_key(&id)
    }

    fn healthy(&self) -> usize {
        self.ids.len() - self.quarantined.len()
    }

    /// The placement rule. Candidates are ranked by tier — 0: a contiguous window aligned to a
    /// multiple of `p` inside a group (keeps the pool defragmented for later large runs),
    /// 1: any contiguous window inside a group, 2: any free ids inside one group, 3: any free
    /// ids — then by the group's free count (best fit leaves big holes for big runs).
    fn place(&self, p: usize) -> Option<Vec<u32>> {
        if p == 0 {
            return Some(Vec::new());
        }
        let mut best: Option<((u8, usize, usize), Vec<u32>)> = None;
        let mut offer = |key: (u8, usize, usize), ids: Vec<u32>| {
            if best.as_ref().is_none_or(|(k, _)| key < *k) {
                best = Some((key, ids));
            }
        };
        for group in &self.groups {
            let free: Vec<u32> = group.iter().copied().filter(|d| self.is_free(*d)).collect();
            if free.len() < p {
                continue;
            }
            for start in 0..=group.len() - p {
                let window = &group[start..start + p];
                let contiguous = window.windows(2).all(|w| w[1] == w[0] + 1);
                if contiguous && window.iter().all(|d| self.is_free(*d)) {
                    let aligned = (window[0] as usize).is_multiple_of(p);
                    offer((u8::from(!aligned), free.len(), start), window.to_vec());
                }
            }
            offer((2, free.len(), 0), free[..p].to_vec());
        }
        let all: Vec<u32> = self
            .ids
            .iter()
            .copied()
            .filter(|d| self.is_free(*d))
            .collect();
        if all.len() >= p {
            offer((3, all.len(), 0), all[..p].to_vec());
        }
        best.map(|(_, ids)| ids)
    }

    /// The best free window of `p` consecutive ids (tiers 0 and 1 of [`Slots::place`] only).
    fn place_contiguous(&self, p: usize) -> Option<Vec<u32>> {
        self.place_window(p, |d| self.is_free(d))
    }

    /// Best window of `p` consecutive ids whose every id passes `usable`: inside one group
    /// first (aligned to a multiple of `p`, then the fullest group, then the lowest start),
    /// else across groups (consecutive ids of the whole pool), as plain placement falls back.
    fn place_window(&self, p: usize, usable: impl Fn(u32) -> bool) -> Option<Vec<u32>> {
        let mut best: Option<(WindowKey, Vec<u32>)> = None;
        let whole = [self.ids.clone()];
        let lists = self
            .groups
            .iter()
            .map(|g| (false, g))
            .chain(whole.iter().map(|g| (true, g)));
        for (across, group) in lists {
            let free = group.iter().filter(|d| usable(**d)).count();
            if p == 0 || free < p {
                continue;
            }
            let mut sorted = group.clone();
            sorted.sort_unstable();
            sorted.dedup();
            for start in 0..=sorted.len() - p {
                let window = &sorted[start..start + p];
                if window.windows(2).all(|w| w[1] == w[0] + 1) && window.iter().all(|d| usable(*d))
                {
                    let key = (across, !(window[0] as usize).is_multiple_of(p), free, start);
                    if best.as_ref().is_none_or(|(k, _)| key < *k) {
                        best = Some((key, window.to_vec()));
                    }
                }
            }
        }
        best.map(|(_, ids)| ids)
    }
}

/// Rank of a contiguous window: (across groups, not aligned, group's free count, start).
type WindowKey = (bool, bool, usize, usize);

/// Devices and CPU slots of one campaign.
#[derive(Debug, Clone)]
pub(crate) struct Pool {
    placement: Placement,
    devices: Slots,
    /// The machine's real CPUs. Kept apart from the devices even for `kind = "cpu"`, whose ids
    /// may be logical slots (more than the cores): a CPU run owns real cores.
    cpus: Slots,
}

impl Pool {
    /// A pool from `[devices]`, with `cpu_count` CPU slots for CPU runs.
    pub(crate) fn new(cfg: &DevicesConfig, cpu_count: usize) -> Pool {
        let cpu_ids: Vec<u32> = (0..cpu_count.max(1) as u32).collect();
        let ids = if cfg.ids.is_empty() {
            cpu_ids.clone()
        } else {
            cfg.ids.clone()
        };
        Pool {
            placement: cfg.placement,
            devices: Slots::new(ids, cfg.groups.clone()),
            cpus: Slots::new(cpu_ids, Vec::new()),
        }
    }

    /// The machine's CPUs that CPU runs lease.
    pub(crate) fn cpu_count(&self) -> usize {
        self.cpus.ids.len()
    }

    pub(crate) fn placement(&self) -> Placement {
        self.placement
    }

    /// CPU slots a CPU run of `p` ranks leases: one per rank, at most the whole CPU set
    /// (threads as ranks may oversubscribe; the run still owns every core it is given).
    pub(crate) fn cpu_need(&self, p: usize) -> usize {
        p.clamp(1, self.cpus.ids.len().max(1))
    }

    /// Could this need ever be met by the pool as configured? `Err` says why not (plan time).
    pub(crate) fn check(&self, need: &Need) -> Result<(), String> {
        match need {
            Need::Nothing | Need::Cpu { .. } => Ok(()),
            Need::Contiguous { p } => {
                self.check(&Need::Devices {
                    p: *p,
                    pinned: None,
                })?;
                Ok(())
            }
            Need::Devices { p, pinned: None } => {
                if *p > self.devices.ids.len() {
                    Err(format!(
                        "needs {p} devices but the pool has {} ({})",
                        self.devices.ids.len(),
                        join(&self.devices.ids)
                    ))
                } else {
                    Ok(())
                }
            }
            Need::Devices {
                pinned: Some(ids), ..
            } => {
                let missing: Vec<u32> = ids
                    .iter()
                    .copied()
                    .filter(|d| !self.devices.ids.contains(d))
                    .collect();
                if missing.is_empty() {
                    Ok(())
                } else {
                    Err(format!(
                        "pinned to device(s) {} which are not in the pool ({})",
                        join(&missing),
                        join(&self.devices.ids)
                    ))
                }
            }
        }
    }

    /// Can this need still be met once running leases end (quarantine may shrink the pool)?
    /// `Err` is the reason of a `blocked` run.
    pub(crate) fn still_possible(&self, need: &Need) -> Result<(), String> {
        match need {
            Need::Devices { p, pinned: None } if *p > self.devices.healthy() => Err(format!(
                "needs {p} devices but only {} healthy device(s) remain",
                self.devices.healthy()
            )),
            Need::Devices {
                pinned: Some(ids), ..
            } => match ids
                .iter()
                .find(|d| self.devices.quarantined.contains_key(d))
            {
                Some(d) => Err(format!(
                    "pinned device {d} is quarantined: {}",
                    self.devices.quarantined[d]
                )),
                None => Ok(()),
            },
            Need::Contiguous { p } => {
                let healthy = |d: u32| !self.devices.quarantined.contains_key(&d);
                match self.devices.place_window(*p, healthy) {
                    Some(_) => Ok(()),
                    None => Err(format!(
                        "needs {p} devices with consecutive ids (this stack takes only a range) but no such window of healthy devices remains"
                    )),
                }
            }
            Need::Cpu { .. } if self.cpus.healthy() == 0 => {
                Err("no healthy CPU slot remains".into())
            }
            _ => Ok(()),
        }
    }

    /// Lease what `need` asks for, if it is free now.
    pub(crate) fn try_lease(&mut self, need: &Need) -> Option<Lease> {
        match need {
            Need::Nothing => Some(Lease::default()),
            Need::Contiguous { p } => {
                let ids = self.devices.place_contiguous(*p)?;
                self.devices.busy.extend(ids.iter().copied());
                Some(Lease {
                    devices: ids,
                    cpus: Vec::new(),
                })
            }
            Need::Devices { p, pinned } => {
                let ids = match pinned {
                    Some(ids) => {
                        if ids.iter().all(|d| self.devices.is_free(*d)) {
                            ids.clone()
                        } else {
                            return None;
                        }
                    }
                    None => self.devices.place(*p)?,
                };
                self.devices.busy.extend(ids.iter().copied());
                Some(Lease {
                    devices: ids,
                    cpus: Vec::new(),
                })
            }
            Need::Cpu { slots } => {
                let slots = (*slots).min(self.cpus.healthy()).max(1);
                let ids = self.cpus.place(slots)?;
                self.cpus.busy.extend(ids.iter().copied());
                Some(Lease {
                    devices: Vec::new(),
                    cpus: ids,
                })
            }
        }
    }

    /// Give a lease back.
    pub(crate) fn release(&mut self, lease: &Lease) {
        for d in &lease.devices {
            self.devices.busy.remove(d);
        }
        for c in &lease.cpus {
            self.cpus.busy.remove(c);
        }
    }

    /// Take a device out of service for the rest of the campaign.
    pub(crate) fn quarantine(&mut self, device: u32, reason: impl Into<String>) {
        if self.devices.ids.contains(&device) {
            self.devices.quarantined.insert(device, reason.into());
        }
    }

    /// Quarantined devices and why.
    pub(crate) fn quarantined(&self) -> &BTreeMap<u32, String> {
        &self.devices.quarantined
    }
}

/// `0,1,2` — the `CAMPAIGN_DEVICES` spelling.
pub(crate) fn join(ids: &[u32]) -> String {
    ids.iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(ids: std::ops::Range<u32>, groups: Vec<Vec<u32>>, kind: DeviceKind) -> Pool {
        let cfg = DevicesConfig {
            kind,
            ids: ids.collect(),
            groups,
            placement: Placement::Auto,
            probe: None,
        };
        Pool::new(&cfg, 2)
    }

    fn auto(p: usize) -> Need {
        Need::Devices { p, pinned: None }
    }

    #[test]
    fn auto_placement_is_contiguous_aligned_and_exclusive() {
        let mut pool = pool(0..8, vec![], DeviceKind::Npu);
        let a = pool.try_lease(&auto(2)).unwrap();
        assert_eq!(a.devices, vec![0, 1]);
        let b = pool.try_lease(&auto(4)).unwrap();
        assert_eq!(b.devices, vec![4, 5, 6, 7], "aligned window, not 2-5");
        let c = pool.try_lease(&auto(2)).unwrap();
        assert_eq!(c.devices, vec![2, 3]);
        assert!(pool.try_lease(&auto(2)).is_none(), "pool is full");
        pool.release(&b);
        assert_eq!(pool.try_lease(&auto(4)).unwrap().devices, vec![4, 5, 6, 7]);
    }

    #[test]
    fn stays_inside_one_group_when_possible() {
        let mut pool = pool(
            0..8,
            vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]],
            DeviceKind::Npu,
        );
        let one = pool.try_lease(&auto(1)).unwrap();
        assert_eq!(one.devices, vec![0]);
        // Group 0 has 1,2,3 free: a P=4 run must go to group 1, not straddle.
        assert_eq!(pool.try_lease(&auto(4)).unwrap().devices, vec![4, 5, 6, 7]);
        // A P=2 run best-fits in group 0 (aligned 2-3).
        assert_eq!(pool.try_lease(&auto(2)).unwrap().devices, vec![2, 3]);
    }

    #[test]
    fn falls_back_to_any_free_devices() {
        let mut pool = pool(0..4, vec![vec![0, 1], vec![2, 3]], DeviceKind::Npu);
        let a = pool.try_lease(&auto(1)).unwrap();
        let _b = pool.try_lease(&auto(1)).unwrap();
        assert_eq!(a.devices, vec![0]);
        // 0 and 2 (or 0 and 1) busy: a P=2 run takes what is left across groups.
        let c = pool.try_lease(&auto(2)).unwrap();
        assert_eq!(c.devices.len(), 2);
        assert!(!c.devices.contains(&0));
    }

    #[test]
    fn pinned_waits_for_its_devices() {
        let mut pool = pool(0..4, vec![], DeviceKind::Npu);
        let pin = Need::Devices {
            p: 2,
            pinned: Some(vec![1, 2]),
        };
        let a = pool.try_lease(&auto(2)).unwrap();
        assert_eq!(a.devices, vec![0, 1]);
        assert!(pool.try_lease(&pin).is_none());
        pool.release(&a);
        assert_eq!(pool.try_lease(&pin).unwrap().devices, vec![1, 2]);
    }

    #[test]
    fn plan_time_check_names_the_pool() {
        let pool = pool(0..4, vec![], DeviceKind::Npu);
        let err = pool.check(&auto(8)).unwrap_err();
        assert!(
            err.contains("needs 8 devices but the pool has 4 (0,1,2,3)"),
            "{err}"
        );
        let err = pool
            .check(&Need::Devices {
                p: 2,
                pinned: Some(vec![3, 9]),
            })
            .unwrap_err();
        assert!(err.contains("device(s) 9"), "{err}");
    }

    #[test]
    fn cpu_runs_own_their_slots() {
        let mut pool = pool(0..8, vec![], DeviceKind::Npu);
        assert_eq!(pool.cpu_need(8), 2, "clamped to the 2 CPU slots");
        let a = pool.try_lease(&Need::Cpu { slots: 2 }).unwrap();
        assert_eq!(a.cpus, vec![0, 1]);
        assert!(pool.try_lease(&Need::Cpu { slots: 1 }).is_none());
        // Devices are a separate set.
        assert!(pool.try_lease(&auto(8)).is_some());
        pool.release(&a);
        assert!(pool.try_lease(&Need::Cpu { slots: 1 }).is_some());
    }

    #[test]
    fn cpu_runs_lease_real_cores_even_when_cpu_ids_are_logical() {
        // kind = "cpu" with 8 logical ids on a 2-core machine: two P=2 host runs never overlap.
        let mut pool = pool(0..8, vec![], DeviceKind::Cpu);
        let a = pool
            .try_lease(&Need::Cpu {
                slots: pool.cpu_need(2),
            })
            .unwrap();
        assert_eq!(a.cpus, vec![0, 1]);
        assert!(pool
            .try_lease(&Need::Cpu {
                slots: pool.cpu_need(2)
            })
            .is_none());
    }

    #[test]
    fn contiguous_needs_get_only_consecutive_windows() {
        let mut pool = pool(0..8, vec![], DeviceKind::Npu);
        // 1 busy: a plain need would take 0,2 (tier 2); a contiguous one never does.
        let one = pool.try_lease(&auto(1)).unwrap();
        assert_eq!(one.devices, vec![0]);
        let busy = pool
            .try_lease(&Need::Devices {
                p: 1,
                pinned: Some(vec![3]),
            })
            .unwrap();
        assert_eq!(busy.devices, vec![3]);
        let c = pool.try_lease(&Need::Contiguous { p: 3 }).unwrap();
        assert_eq!(c.devices, vec![4, 5, 6], "the lowest window of 3 free ids");
        let c = pool.try_lease(&Need::Contiguous { p: 2 }).unwrap();
        assert_eq!(c.devices, vec![1, 2]);
        // Only 7 is free now: no window of 2, although a plain need would find none either.
        assert_eq!(pool.try_lease(&Need::Contiguous { p: 2 }), None);
        pool.release(&one);
        // 0 and 7 are free but not consecutive: a plain need takes them, a contiguous one waits.
        assert_eq!(pool.try_lease(&Need::Contiguous { p: 2 }), None);
        assert_eq!(pool.try_lease(&auto(2)).unwrap().devices, vec![0, 7]);
    }

    #[test]
    fn contiguous_windows_stay_in_a_group_first_then_cross_groups() {
        let mut pool = pool(
            0..8,
            vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]],
            DeviceKind::Npu,
        );
        let two = pool.try_lease(&Need::Contiguous { p: 2 }).unwrap();
        assert_eq!(two.devices, vec![0, 1]);
        pool.release(&two);
        assert_eq!(
            pool.try_lease(&Need::Contiguous { p: 8 }).unwrap().devices,
            (0..8).collect::<Vec<_>>()
        );
    }

    #[test]
    fn contiguous_needs_a_window_after_quarantine() {
        let mut pool = Pool::new(
            &DevicesConfig {
                ids: vec![0, 1, 2],
                ..DevicesConfig::default()
            },
            4,
        );
        assert!(pool.still_possible(&Need::Contiguous { p: 2 }).is_ok());
        pool.quarantine(1, "bad");
        let why = pool.still_possible(&Need::Contiguous { p: 2 }).unwrap_err();
        assert!(why.contains("consecutive ids"), "{why}");
        assert!(pool.still_possible(&auto(2)).is_ok());
    }

    #[test]
    fn quarantine_blocks_what_can_no_longer_fit() {
        let mut pool = pool(0..4, vec![], DeviceKind::Npu);
        pool.quarantine(3, "3 failed runs in a row");
        assert!(pool
            .still_possible(&auto(4))
            .unwrap_err()
            .contains("3 healthy"));
        assert!(pool.still_possible(&auto(3)).is_ok());
        assert_eq!(pool.try_lease(&auto(3)).unwrap().devices, vec![0, 1, 2]);
        let pin = Need::Devices {
            p: 2,
            pinned: Some(vec![2, 3]),
        };
        assert!(pool
            .still_possible(&pin)
            .unwrap_err()
            .contains("quarantined"));
    }
}
