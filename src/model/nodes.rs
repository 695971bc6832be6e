//! Names shared by the stack templates and an executor whose runs span nodes: the bundle files
//! the running job writes from its allocation and the placeholders a template renders for
//! values only the running job knows; and what a job records of each node's hardware
//! ([`NodeHardware`], read from its `nodes/<node>` record). Names and text only: writing the
//! files and reading them from disk is the executor's.

use serde::{Deserialize, Serialize};

/// The allocation's nodes, one `NAME slots=K` line each (`{{ hostfile }}` in templates).
pub(crate) const HOSTFILE: &str = "hostfile";
/// The per-rank wrapper (`{{ rank_wrap }}` on several nodes): records the rank's node under
/// `ranks/`, then runs the rank's program.
pub(crate) const RANK_WRAPPER: &str = "rank.sh";
/// `{{ node_list }}` on several nodes: the job's nodes, comma-separated.
pub(crate) const NODE_LIST_TOKEN: &str = "${CAMPAIGN_NODE_LIST}";
/// `{{ master_addr }}` on several nodes: the first node's address.
pub(crate) const MASTER_ADDR_TOKEN: &str = "${CAMPAIGN_MASTER_ADDR}";
/// The folder of the per-node hardware records, one `key=value` file per node.
pub(crate) const NODES_DIR: &str = "nodes";
/// HCCL's rank table (`{{ rank_table }}`), made by the job from its allocation and each
/// node's hccn.conf when the stack's command or env names it.
pub(crate) const RANK_TABLE: &str = "rank_table.json";
/// Where the job gathers each node's hccn.conf and granted devices for the rank table.
pub(crate) const HCCN_DIR: &str = "hccn";

/// One node's hardware as a job saw it there: the facts the provenance takes of the machine
/// campaign runs on (`host`, `kernel`, `cpu` in the same spelling), plus memory and the
/// accelerators visible under `/dev`, and a fingerprint of the hardware alone.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, Default)]
pub struct NodeHardware {
    /// The node's name in the batch system (`SLURMD_NODENAME`).
    pub node: String,
    /// `uname -n` on the node.
    pub host: String,
    /// `<ostype> <osrelease>`, as provenance's `kernel`.
    pub kernel: String,
    /// `<model name> (<N> CPUs)`, as provenance's `cpu` (`N CPUs` when the CPU names no model).
    pub cpu: String,
    /// Online CPUs of the node (its `/proc/cpuinfo` processors, not the job's share).
    pub cpus: u32,
    /// `MemTotal` of `/proc/meminfo`, in KiB.
    pub memory_kb: u64,
    /// Ascend NPUs (`/dev/davinciN`) and NVIDIA GPUs (`/dev/nvidiaN`) present.
    pub npus: u32,
    pub gpus: u32,
    /// Device tools found on the node's PATH (`npu-smi`, `nvidia-smi`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// 16 hex digits over the hardware facts (CPU, CPUs, memory to the GiB, kernel, NPUs,
    /// GPUs) and not the names: nodes alike share it, a node unlike the others stands out.
    pub fingerprint: String,
}

impl NodeHardware {
    /// Read one node's record (`node=`, `host=`, `kernel=`, `cpu_model=`, `cpu_implementer=`,
    /// `cpu_part=`, `cpus=`,
    /// `memory_kb=`, `npus=`, `gpus=`, `tools=` lines, as the job's script writes them);
    /// `None` without a node name. Unknown keys are ignored, unreadable numbers are 0.
    pub(crate) fn parse(text: &str) -> Option<NodeHardware> {
        let mut out = NodeHardware::default();
        let (mut model, mut implementer, mut part) = (String::new(), String::new(), String::new());
        for (key, value) in text.lines().filter_map(|l| l.split_once('=')) {
            let value = value.trim();
            match key.trim() {
                "node" => out.node = value.to_string(),
                "host" => out.host = value.to_string(),
                "kernel" => out.kernel = value.to_string(),
                "cpu_model" => model = value.to_string(),
                "cpu_implementer" => implementer = value.to_string(),
                "cpu_part" => part = value.to_string(),
                "cpus" => out.cpus = value.parse().unwrap_or(0),
                "memory_kb" => out.memory_kb = value.parse().unwrap_or(0),
                "npus" => out.npus = value.parse().unwrap_or(0),
                "gpus" => out.gpus = value.parse().unwrap_or(0),
                "tools" => out.tools = value.split_whitespace().map(String::from).collect(),
                _ => {}
            }
        }
        if out.node.is_empty() {
            return None;
        }
        out.cpu = cpu_text(&cpu_name(&model, &implementer, &part), out.cpus);
        out.fingerprint = out.hardware_fingerprint();
        Some(out)
    }

    fn hardware_fingerprint(&self) -> String {
        // Memory to the nearest GiB: the same machine's MemTotal moves by a few MiB between
        // kernels and firmware settings.
        let gib = (self.memory_kb + (1 << 19)) >> 20;
        let facts = format!(
            "cpu={}\ncpus={}\nmemory_gib={gib}\nkernel={}\nnpus={}\ngpus={}\n",
            self.cpu, self.cpus, self.kernel, self.npus, self.gpus
        );
        crate::model::digest::sha256_hex(facts.as_bytes(), 8)
    }

    /// `CPU (2 CPUs), 7.7 GiB, Linux 6.8.0, 8 NPUs`: what the report shows of a node.
    pub(crate) fn summary(&self) -> String {
        let mut parts = vec![self.cpu.clone()];
        if self.memory_kb > 0 {
            parts.push(format!(
                "{:.1} GiB",
                self.memory_kb as f64 / (1 << 20) as f64
            ));
        }
        if !self.kernel.is_empty() {
            parts.push(self.kernel.clone());
        }
        for (n, one, many) in [(self.npus, "NPU", "NPUs"), (self.gpus, "GPU", "GPUs")] {
            if n > 0 {
                parts.push(format!("{n} {}", if n == 1 { one } else { many }));
            }
        }
        parts.join(", ")
    }
}

/// Provenance's spelling of a CPU: `<model> (<n> CPUs)`, or `<n> CPUs` without a model.
/// The CPU's name from `/proc/cpuinfo`: its `model name` (x86), else — arm64 names none, and
/// Ascend servers are arm64 (Kunpeng) — the core its `CPU implementer` and `CPU part` identify;
/// empty when the text says neither.
pub(crate) fn cpu_model_of(cpuinfo: &str) -> String {
    let field = |name: &str| {
        (cpuinfo.lines())
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim() == name)
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_default()
    };
    cpu_name(
        &field("model name"),
        &field("CPU implementer"),
        &field("CPU part"),
    )
}

/// `model` when there is one, else the arm64 core of (`implementer`, `part`) as Linux's
/// `cputype.h` names them, else `arm64 implementer 0x.. part 0x...` for a core not in the
/// table; empty without either.
pub(crate) fn cpu_name(model: &str, implementer: &str, part: &str) -> String {
    if !model.is_empty() || implementer.is_empty() || part.is_empty() {
        return model.to_string();
    }
    let hex = |s: &str| u32::from_str_radix(s.trim_start_matches("0x"), 16).ok();
    let known = match (hex(implementer), hex(part)) {
        (Some(0x48), Some(0xd01)) => Some("HiSilicon Kunpeng 920 (TaiShan v110)"),
        (Some(0x48), Some(0xd02)) => Some("HiSilicon HIP09"),
        (Some(0x41), Some(0xd0c)) => Some("Arm Neoverse-N1"),
        (Some(0x41), Some(0xd40)) => Some("Arm Neoverse-V1"),
        (Some(0x41), Some(0xd49)) => Some("Arm Neoverse-N2"),
        (Some(0x41), Some(0xd4f)) => Some("Arm Neoverse-V2"),
        (Some(0x41), Some(0xd08)) => Some("Arm Cortex-A72"),
        (Some(0x41), Some(0xd0b)) => Some("Arm Cortex-A76"),
        (Some(0x46), Some(0x001)) => Some("Fujitsu A64FX"),
        _ => None,
    };
    match known {
        Some(name) => name.to_string(),
        None => format!("arm64 implementer {implementer} part {part}"),
    }
}

pub(crate) fn cpu_text(model: &str, n: u32) -> String {
    if model.is_empty() {
        format!("{n} CPUs")
    } else {
        format!("{model} ({n} CPUs)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const N1: &str = "node=n1\nhost=vm\nkernel=Linux 6.8.0-45-generic\n\
                      cpu_model=AMD EPYC 7B13\ncpus=2\nmemory_kb=8129500\nnpus=0\ngpus=0\n\
                      tools=\n";

    #[test]
    fn a_record_reads_back_in_provenance_spelling() {
        let hw = NodeHardware::parse(N1).unwrap();
        assert_eq!(hw.node, "n1");
        assert_eq!(hw.host, "vm");
        assert_eq!(hw.kernel, "Linux 6.8.0-45-generic");
        assert_eq!(hw.cpu, "AMD EPYC 7B13 (2 CPUs)");
        assert_eq!(
            (hw.cpus, hw.memory_kb, hw.npus, hw.gpus),
            (2, 8129500, 0, 0)
        );
        assert!(hw.tools.is_empty());
        assert_eq!(hw.fingerprint.len(), 16);
        assert_eq!(
            hw.summary(),
            "AMD EPYC 7B13 (2 CPUs), 7.8 GiB, Linux 6.8.0-45-generic"
        );
        // arm64 names its core, not a model: the core it is, or its ids when not in the table.
        let kunpeng = "node=k\ncpu_model=\ncpu_implementer=0x48\ncpu_part=0xd01\ncpus=192\n";
        let kunpeng = NodeHardware::parse(kunpeng).unwrap();
        assert_eq!(
            kunpeng.cpu,
            "HiSilicon Kunpeng 920 (TaiShan v110) (192 CPUs)"
        );
        assert_eq!(
            cpu_name("", "0x41", "0xfff"),
            "arm64 implementer 0x41 part 0xfff"
        );
        let info = "processor\t: 0\nBogoMIPS\t: 200.00\nCPU implementer\t: 0x48\n\
                    CPU architecture: 8\nCPU variant\t: 0x1\nCPU part\t: 0xd01\n";
        assert_eq!(cpu_model_of(info), "HiSilicon Kunpeng 920 (TaiShan v110)");
        assert_eq!(
            cpu_model_of("model name\t: AMD EPYC 7B13\nCPU part\t: 0xd01\n"),
            "AMD EPYC 7B13"
        );
        // Neither (an old record, or a CPU that names nothing): the count alone, as provenance
        // says it.
        let arm =
            NodeHardware::parse("node=a\ncpu_model=\ncpus=192\nnpus=8\ntools=npu-smi \n").unwrap();
        assert_eq!(arm.cpu, "192 CPUs");
        assert_eq!(arm.tools, ["npu-smi"]);
        assert!(arm.summary().ends_with("8 NPUs"), "{}", arm.summary());
        // A record without a node name is no record; junk numbers are 0, not a failure.
        assert_eq!(NodeHardware::parse("host=vm\ncpus=2\n"), None);
        assert_eq!(NodeHardware::parse("node=x\ncpus=lots\n").unwrap().cpus, 0);
    }

    #[test]
    fn the_fingerprint_is_the_hardware_not_the_names() {
        let n1 = NodeHardware::parse(N1).unwrap();
        let n2 = NodeHardware::parse(
            &N1.replace("node=n1", "node=n2")
                .replace("host=vm", "host=b"),
        )
        .unwrap();
        assert_eq!(n1.fingerprint, n2.fingerprint);
        // A few MiB of MemTotal is the same machine; another GiB, another CPU count or model,
        // a GPU are not.
        let same = N1.replace("memory_kb=8129500", "memory_kb=8131000");
        assert_eq!(
            NodeHardware::parse(&same).unwrap().fingerprint,
            n1.fingerprint
        );
        for change in [
            ("memory_kb=8129500", "memory_kb=16259000"),
            ("cpus=2", "cpus=4"),
            ("cpu_model=AMD EPYC 7B13", "cpu_model=Intel Xeon"),
            ("gpus=0", "gpus=1"),
            ("kernel=Linux 6.8.0-45-generic", "kernel=Linux 5.15.0"),
        ] {
            let other = NodeHardware::parse(&N1.replace(change.0, change.1)).unwrap();
            assert_ne!(other.fingerprint, n1.fingerprint, "{change:?}");
        }
    }
}
