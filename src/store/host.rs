//! The one hostname: what `uname(2)` calls the node (rustix's `uname().nodename()`).
//!
//! The run-dir lock records it (`host=`, so a second machine on a shared filesystem never
//! takes a live lock for stale) and provenance reports it (`host`, part of the history store's
//! host fingerprint); both must read the same name. It is what `gethostname(2)` and
//! `/proc/sys/kernel/hostname` return, the two readings it replaces.

/// This machine's host name.
pub(crate) fn hostname() -> String {
    rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The name the kernel reports through its other door, `/proc/sys/kernel/hostname`.
    #[test]
    fn is_the_kernels_host_name() {
        let name = hostname();
        assert!(!name.is_empty());
        if let Ok(proc_name) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
            assert_eq!(name, proc_name.trim());
        }
    }
}
