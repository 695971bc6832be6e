//! What really ran: a run's own words about the algorithm it used (`[stacks.NAME.ran]`).
//!
//! A pin can be ignored — a library falls back silently, an environment variable is overridden
//! — so a comparison of algorithms needs each run to say which one ran. The stack's `ran.pattern`
//! is matched against every output line (stdout and stderr); its named groups `algo`, `proto`
//! and `channels` are collected, distinct values in order of first appearance. `ran.expect`,
//! rendered for the run, is the pin: a run whose output names another algorithm, several, or
//! none is "pin not honoured" (`model::results::Ran::not_honoured`), which the engine records as
//! a failed run so no comparison of variants includes it. Where the stack names a reader of its
//! library's own log (`ran.component`, `stack::coll_select`), the component that served the op is
//! read from the same lines, and `ran.component_expect` is the component the pin needs in charge.

use regex::Regex;

use crate::model::case::Op;
use crate::model::output::OutputLine;
use crate::model::results::Ran;
use crate::model::stack::RanSpec;

/// Lines longer than this are not matched (a stack's algorithm line is short; a megabyte of
/// one-line JSON is not where it is).
const MAX_LINE: usize = 64 * 1024;

/// Distinct values of one group, at most this many (a run that names a different algorithm on
/// every line says enough after a few).
const MAX_VALUES: usize = 8;

/// Watches one run's output for what ran.
#[derive(Debug)]
pub(crate) struct Watcher {
    re: Regex,
    algo: Vec<String>,
    proto: Vec<String>,
    channels: Vec<String>,
    component: Option<super::coll_select::CollSelect>,
}

impl Watcher {
    /// A watcher for `spec` over a run of `op`; `Err` names why its pattern or reader cannot be
    /// used (validate refuses such a definition first, at its line).
    pub(crate) fn new(spec: &RanSpec, op: Op) -> Result<Watcher, String> {
        let re = crate::model::stack::ran_regex(&spec.pattern)
            .map_err(|why| format!("ran.pattern {why}"))?;
        let component = (spec.component.as_deref())
            .map(|reader| super::coll_select::CollSelect::new(reader, op))
            .transpose()?;
        Ok(Watcher {
            re,
            algo: Vec::new(),
            proto: Vec::new(),
            channels: Vec::new(),
            component,
        })
    }

    /// Look at one output line.
    pub(crate) fn feed(&mut self, line: &OutputLine) {
        if line.text.len() > MAX_LINE {
            return;
        }
        if let Some(c) = self.component.as_mut() {
            c.feed(&line.text);
        }
        let Some(caps) = self.re.captures(&line.text) else {
            return;
        };
        for (name, into) in [
            ("algo", &mut self.algo),
            ("proto", &mut self.proto),
            ("channels", &mut self.channels),
        ] {
            if let Some(m) = caps.name(name) {
                let value = m.as_str().trim();
                if !value.is_empty() && into.len() < MAX_VALUES && !into.iter().any(|v| v == value)
                {
                    into.push(value.to_string());
                }
            }
        }
    }

    /// What the output said ran, with the run's pin (`expect` and `component_expect` rendered;
    /// empty = none).
    pub(crate) fn finish(self, expect: Option<String>, component_expect: Option<String>) -> Ran {
        let joined = |v: Vec<String>| (!v.is_empty()).then(|| v.join(","));
        let given = |e: Option<String>| e.map(|e| e.trim().to_string()).filter(|e| !e.is_empty());
        Ran {
            algo: joined(self.algo),
            proto: joined(self.proto),
            channels: joined(self.channels),
            expected: given(expect),
            component: self.component.and_then(|c| c.finish()),
            component_expected: given(component_expect),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::output::Stream;
    use std::time::Duration;

    fn line(text: &str) -> OutputLine {
        OutputLine {
            stream: Stream::Stderr,
            at: Duration::ZERO,
            text: text.into(),
        }
    }

    fn watch(pattern: &str, lines: &[&str], expect: Option<&str>) -> Ran {
        let spec = RanSpec {
            pattern: pattern.into(),
            expect: None,
            component: None,
            component_expect: None,
        };
        let mut w = Watcher::new(&spec, Op::Allreduce).unwrap();
        for l in lines {
            w.feed(&line(l));
        }
        w.finish(expect.map(str::to_string), None)
    }

    /// NCCL's TUNING line as `src/enqueue.cc` prints it at HEAD (through `debug.cc`'s
    /// `host:pid:tid [dev] NCCL INFO ` prefix), from rank 0 once per launch.
    const NCCL: &str = r"NCCL INFO \w+: \d+ Bytes -> Algo (?P<algo>\S+) proto (?P<proto>\S+) channel\{Lo\.\.Hi\}=\{(?P<channels>\d+\.\.\d+)\}";

    #[test]
    fn nccl_tuning_lines_give_algorithm_protocol_and_channels() {
        let ran = watch(
            NCCL,
            &[
                "gpu-a:4242:4242 [0] NCCL INFO NCCL_DEBUG_SUBSYS set by environment to TUNING",
                "gpu-a:4242:4242 [0] NCCL INFO AllReduce: 1048576 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..31}",
                "gpu-a:4242:4242 [0] NCCL INFO AllReduce: 1048576 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..31}",
                "#       1048576        262144     float     sum      -1    45.12   23.24   40.67      0",
            ],
            Some("ring"),
        );
        assert_eq!(ran.algo.as_deref(), Some("RING"));
        assert_eq!(ran.proto.as_deref(), Some("SIMPLE"));
        assert_eq!(ran.channels.as_deref(), Some("0..31"));
        assert_eq!(ran.honoured(), Some(true), "names compare without case");
    }

    #[test]
    fn another_algorithm_several_or_none_is_a_pin_not_honoured() {
        let decoy = watch(r"algo=(?P<algo>\w+)", &["algo=tree"], Some("ring"));
        assert_eq!(decoy.honoured(), Some(false));
        assert_eq!(
            decoy.not_honoured().unwrap(),
            "pin not honoured: asked ring, ran tree"
        );
        let mixed = watch(
            r"algo=(?P<algo>\w+)",
            &["algo=ring", "algo=tree"],
            Some("ring"),
        );
        assert_eq!(mixed.algo.as_deref(), Some("ring,tree"));
        assert_eq!(mixed.honoured(), Some(false));
        let silent = watch(r"algo=(?P<algo>\w+)", &["nothing here"], Some("ring"));
        assert!(silent.not_honoured().unwrap().contains("never said"));
        // Nothing pinned: nothing to honour, but what ran is still recorded.
        let free = watch(r"algo=(?P<algo>\w+)", &["algo=tree"], Some("  "));
        assert_eq!(free.honoured(), None);
        assert_eq!(free.algo.as_deref(), Some("tree"));
        // Open MPI's names use `-` where a template may have `_`.
        let mpi = watch(
            r"\((?P<algo>[^)]+)\)",
            &["(bruck-k-fanout)"],
            Some("bruck_k_fanout"),
        );
        assert_eq!(mpi.honoured(), Some(true));
    }

    /// The shipped stacks' patterns against lines in their programs' exact formats (read at
    /// HEAD): NCCL's TUNING line, the mpi benchmark's MPI_T read-back, HCCL's selector line.
    #[test]
    fn shipped_patterns_read_their_programs_lines() {
        let shipped = crate::stack::registry::try_shipped().unwrap();
        let ran = |stack: &str, text: &str| {
            let mut w = Watcher::new(shipped[stack].ran.as_ref().unwrap(), Op::Allgather).unwrap();
            w.feed(&line(text));
            w.finish(None, None)
        };
        let nccl = ran(
            "nccl-tests",
            "gpu-a:4242:4242 [0] NCCL INFO ReduceScatter: 4194304 Bytes -> Algo PAT proto SIMPLE channel{Lo..Hi}={0..3}",
        );
        assert_eq!(
            (
                nccl.algo.as_deref(),
                nccl.proto.as_deref(),
                nccl.channels.as_deref()
            ),
            (Some("PAT"), Some("SIMPLE"), Some("0..3"))
        );
        let mpi = ran(
            "mpi",
            "allreduce_bench: pinned coll_tuned_allgather_algorithm = 5 (neighbor), read back through MPI_T",
        );
        assert_eq!(mpi.algo.as_deref(), Some("neighbor"));
        // dlog's prefix, then HCCL_LOG_PRINT's "[file:line] [tid]" and the selector's message.
        let hccl = ran(
            "hccl",
            "[INFO] HCCL(24817,hccl_allreduce):2026-12-06-18:30:11.123.456 [selector_engine.cc:239] [24821][SelectorEngine] The opExecuteConfig is AICPU, the selected algo type is AicpuAllReduceSoleMeshOneShot",
        );
        assert_eq!(hccl.algo.as_deref(), Some("AicpuAllReduceSoleMeshOneShot"));
        assert_eq!(hccl.proto.as_deref(), Some("AICPU"));
        // The mpi pin is the variant, none for Open MPI's own choice.
        let expect = shipped["mpi"].ran.as_ref().unwrap().expect.as_deref();
        assert_eq!(
            expect,
            Some("{{ '' if variant == 'default' else variant }}")
        );
    }

    #[test]
    fn a_pattern_without_an_algo_group_is_refused() {
        let spec = RanSpec {
            pattern: r"algo=(\w+)".into(),
            expect: None,
            component: None,
            component_expect: None,
        };
        assert!(Watcher::new(&spec, Op::Allreduce)
            .unwrap_err()
            .contains("no group named `algo`"));
    }

    /// The shipped mpi definition over a real run's stderr (Open MPI 4.1.4, coll_base_verbose=10,
    /// P = 2): tuned serves the op, so a tuned pin that MPI_T read back is honoured; the same run
    /// with basic in charge is a pin not honoured that names the component.
    #[test]
    fn the_mpi_stack_records_the_component_in_charge_and_needs_tuned_for_a_pin() {
        let shipped = crate::stack::registry::try_shipped().unwrap();
        let spec = shipped["mpi"].ran.as_ref().unwrap();
        assert_eq!(spec.component.as_deref(), Some("open-mpi"));
        let log = include_str!("../../tests/integration/fixtures/ompi/coll_select_4.1.4.txt");
        let read = |log: &str| {
            let mut w = Watcher::new(spec, Op::Allreduce).unwrap();
            for l in log.lines() {
                w.feed(&line(l));
            }
            w.feed(&line(
                "allreduce_bench: pinned coll_tuned_allreduce_algorithm = 4 (ring), read back through MPI_T",
            ));
            w.finish(Some("ring".into()), Some("tuned".into()))
        };
        let ran = read(log);
        assert_eq!(ran.component.as_deref(), Some("tuned"));
        assert_eq!(ran.algo.as_deref(), Some("ring"));
        assert_eq!(ran.honoured(), Some(true));
        let without_tuned = log.replace(
            "selecting       tuned, priority  30, Enabled",
            "selecting       tuned, priority  30, Disabled",
        );
        let ran = read(&without_tuned);
        assert_eq!(ran.component.as_deref(), Some("basic"));
        assert_eq!(ran.honoured(), Some(false));
        assert_eq!(
            ran.not_honoured().unwrap(),
            "pin not honoured: asked ring of tuned, but basic serves the op (tuned is not the component in charge)"
        );
        // No pin (`default`): the component is recorded, nothing is checked.
        let mut w = Watcher::new(spec, Op::Allreduce).unwrap();
        log.lines().for_each(|l| w.feed(&line(l)));
        let free = w.finish(Some(String::new()), Some(String::new()));
        assert_eq!(
            (free.component.as_deref(), free.honoured()),
            (Some("tuned"), None)
        );
    }
}
