//! Where a multi-node job really ran, and whether that is what its case asked.
//!
//! Owns the batch script's allocation lines (the hostfile, node list and master address written
//! into the bundle from `SLURM_JOB_NODELIST`, the job's node count checked before the stack
//! starts), the per-rank wrapper `rank.sh` (each rank records its rank, node, `SLURM_NODEID` and
//! local rank under `ranks/`), the record of each node's hardware under `nodes/` (by the batch
//! script for its own node, and by the first local rank of every node through `rank.sh`), the
//! check of the rank records after the stack ends (ranks per node, distinct nodes, rank order),
//! and reading the verdict and the node records back (`slurm.placement`, `nodes/`). A
//! placement problem turns a job that otherwise would be parsed into a failed run with the
//! reason.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::executor::slurm::state::Verdict;
use crate::executor::NodeLayout;

/// Written by the batch script: `nodes=`, `master_addr=`, then `problem=` or one `rank=` line
/// per rank (`rank=R node=NAME nodeid=I localid=L`).
pub(crate) const PLACEMENT_FILE: &str = "slurm.placement";
use crate::model::nodes::NodeHardware;
pub(crate) use crate::model::nodes::{
    HCCN_DIR, HOSTFILE, MASTER_ADDR_TOKEN, NODES_DIR, NODE_LIST_TOKEN, RANK_TABLE, RANK_WRAPPER,
};
/// The folder of the per-rank records.
pub(crate) const RANKS_DIR: &str = "ranks";
/// Exit code of the batch script when the job's shape is not the case's (the stack never ran).
pub(crate) const PLACEMENT_EXIT: i32 = 98;

/// The first placeholder (the batch script expands exactly these, see
/// `script::quote_allocation`) in `text`: its byte offset and the token.
pub(crate) fn next_token(text: &str) -> Option<(usize, &'static str)> {
    [NODE_LIST_TOKEN, MASTER_ADDR_TOKEN]
        .into_iter()
        .filter_map(|t| text.find(t).map(|at| (at, t)))
        .min_by_key(|(at, _)| *at)
}

/// One rank's record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankNode {
    pub rank: u32,
    pub node: String,
    /// `SLURM_NODEID` as the rank saw it.
    pub node_id: Option<u32>,
    pub local_rank: Option<u32>,
}

/// What `slurm.placement` says.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Placement {
    /// The job's nodes, in Slurm's order.
    pub nodes: Vec<String>,
    pub master_addr: Option<String>,
    /// Every rank that reported (empty when the stack does not run its ranks through
    /// `rank.sh`: then only the job's node count was checked).
    pub ranks: Vec<RankNode>,
    /// Why the placement is not the case's.
    pub problem: Option<String>,
    /// The hardware of every node that recorded it (`nodes/<node>`), by node name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hardware: Vec<NodeHardware>,
}

/// Most node records read from one job's `nodes/` (a job spans at most this many nodes that
/// campaign keeps the hardware of).
const MAX_NODE_RECORDS: usize = 4096;

/// Read `slurm.placement` and the node records; `None` when the job never got that far.
pub(crate) fn read(bundle_dir: &Path) -> Option<Placement> {
    let text = std::fs::read_to_string(bundle_dir.join(PLACEMENT_FILE)).ok()?;
    let mut placement = parse(&text);
    placement.hardware = read_hardware(&bundle_dir.join(NODES_DIR));
    Some(placement)
}

/// Every node record under `dir` (temp files of a writer that died are skipped), by node name.
pub(crate) fn read_hardware(dir: &Path) -> Vec<NodeHardware> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<NodeHardware> = entries
        .flatten()
        .take(MAX_NODE_RECORDS)
        .filter(|e| !e.file_name().to_string_lossy().contains(".tmp."))
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .filter_map(|text| NodeHardware::parse(&text))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Shell lines that record the hardware of the node they run on into
/// `$CAMPAIGN_NODES_DIR/<node>` (one `key=value` line per fact, read by
/// [`NodeHardware::parse`]): the same facts provenance takes of campaign's own machine, read
/// from `/proc` and `uname`, plus the accelerators `/dev` shows. A subshell, so its names and a
/// failure stay inside; written to a temp file and renamed, so a reader never sees half.
pub(crate) const NODE_RECORD: &str = r#"(
  cn_node=${SLURMD_NODENAME:-$(uname -n)}
  cn_file="$CAMPAIGN_NODES_DIR/$cn_node"
  {
    printf 'node=%s\n' "$cn_node"
    printf 'host=%s\n' "$(uname -n)"
    printf 'kernel=%s %s\n' "$(cat /proc/sys/kernel/ostype)" "$(cat /proc/sys/kernel/osrelease)"
    printf 'cpu_model=%s\n' "$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -n 1)"
    printf 'cpu_implementer=%s\n' "$(sed -n 's/^CPU implementer[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -n 1)"
    printf 'cpu_part=%s\n' "$(sed -n 's/^CPU part[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -n 1)"
    printf 'cpus=%s\n' "$(grep -c '^processor' /proc/cpuinfo)"
    printf 'memory_kb=%s\n' "$(sed -n 's/^MemTotal:[[:space:]]*\([0-9]*\).*/\1/p' /proc/meminfo)"
    printf 'npus=%s\n' "$(ls /dev | grep -c '^davinci[0-9][0-9]*$')"
    printf 'gpus=%s\n' "$(ls /dev | grep -c '^nvidia[0-9][0-9]*$')"
    printf 'tools='
    for cn_tool in npu-smi nvidia-smi; do
      if command -v "$cn_tool" >/dev/null 2>&1; then printf '%s ' "$cn_tool"; fi
    done
    printf '\n'
  } > "$cn_file.tmp.$$" && mv -f "$cn_file.tmp.$$" "$cn_file"
) 2>/dev/null
"#;

pub(crate) fn parse(text: &str) -> Placement {
    let mut out = Placement::default();
    for line in text.lines() {
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        match key {
            "nodes" => {
                out.nodes = value
                    .split(',')
                    .filter(|n| !n.is_empty())
                    .map(String::from)
                    .collect()
            }
            "master_addr" if !value.is_empty() => out.master_addr = Some(value.to_string()),
            "problem" if !value.is_empty() => out.problem = Some(value.to_string()),
            "rank" => out.ranks.extend(parse_rank(line)),
            _ => {}
        }
    }
    out.ranks.sort_by_key(|r| r.rank);
    out
}

fn parse_rank(line: &str) -> Option<RankNode> {
    let mut rank = None;
    let (mut node, mut node_id, mut local_rank) = (String::new(), None, None);
    for word in line.split_whitespace() {
        match word.split_once('=')? {
            ("rank", v) => rank = v.parse().ok(),
            ("node", v) => node = v.to_string(),
            ("nodeid", v) => node_id = v.parse().ok(),
            ("localid", v) => local_rank = v.parse().ok(),
            _ => {}
        }
    }
    Some(RankNode {
        rank: rank?,
        node,
        node_id,
        local_rank,
    })
}

/// A placement problem fails a job that ran (or that the script stopped for its shape); a
/// timeout or an interruption keeps its own verdict.
pub(crate) fn judge(verdict: Verdict, placement: Option<&Placement>) -> Verdict {
    match (verdict, placement.and_then(|p| p.problem.as_ref())) {
        (Verdict::Parse | Verdict::Fail(_), Some(problem)) => {
            Verdict::Fail(format!("placement: {problem}"))
        }
        (verdict, _) => verdict,
    }
}

/// The devices Slurm granted on this node, as a shell word: the first of the variables a gres
/// plugin sets. The rank table (`rank_table_lines`) and each rank's device variable (`rank.sh`,
/// `CAMPAIGN_VISIBLE_DEVICES_VAR`) read the same one, so the two name the same devices.
const NODE_GRANT: &str =
    r#""${NPU_VISIBLE_DEVICES:-${CUDA_VISIBLE_DEVICES:-${SLURM_STEP_GPUS:-${SLURM_JOB_GPUS:-}}}}""#;

/// Batch script lines run before the stack: the allocation's node list, hostfile and master
/// address (exported as `CAMPAIGN_NODE_LIST`, `CAMPAIGN_MASTER_ADDR`, `CAMPAIGN_HOSTFILE`), the
/// per-rank wrapper, and the check that the job got the nodes the case asked for.
pub(crate) fn allocation_lines(layout: NodeLayout, p: u32) -> String {
    let n = layout.nodes.max(1);
    let k = if n > 1 { layout.ranks_per_node } else { p };
    format!(
        r#"# The allocation: where the job runs, as Slurm says (the case asked for {n} node(s) x {k} rank(s)).
rm -rf "$bundle/{RANKS_DIR}" "$bundle/{NODES_DIR}" "$bundle/{PLACEMENT_FILE}"
hosts=$(scontrol show hostnames "${{SLURM_JOB_NODELIST:-}}" 2>/dev/null)
[ -n "$hosts" ] || hosts=${{SLURMD_NODENAME:-$(hostname)}}
printf '%s\n' $hosts | sed 's/$/ slots={k}/' > "$bundle/{HOSTFILE}"
first=$(printf '%s\n' $hosts | head -n 1)
addr=$(scontrol show node "$first" 2>/dev/null | tr ' ' '\n' | sed -n 's/^NodeAddr=//p' | head -n 1)
export CAMPAIGN_NODE_LIST="$(printf '%s\n' $hosts | paste -sd, -)"
export CAMPAIGN_MASTER_ADDR="${{addr:-$first}}"
export CAMPAIGN_HOSTFILE="$bundle/{HOSTFILE}"
export CAMPAIGN_RANKS_DIR="$bundle/{RANKS_DIR}"
export CAMPAIGN_NODES_DIR="$bundle/{NODES_DIR}"
mkdir -p "$CAMPAIGN_RANKS_DIR" "$CAMPAIGN_NODES_DIR"
# This node's hardware (the other nodes' come from their first rank, through rank.sh).
{NODE_RECORD}cat > "$bundle/{RANK_WRAPPER}" <<'CAMPAIGN_RANK'
#!/bin/sh
# Records where this rank runs (and, for a node's first rank, the node's hardware), then
# becomes the rank's program.
r=${{OMPI_COMM_WORLD_RANK:-${{PMI_RANK:-${{PMIX_RANK:-${{SLURM_PROCID:-0}}}}}}}}
l=${{OMPI_COMM_WORLD_LOCAL_RANK:-${{MPI_LOCALRANKID:-${{SLURM_LOCALID:-}}}}}}
printf 'rank=%s node=%s nodeid=%s localid=%s\n' "$r" "${{SLURMD_NODENAME:-$(hostname)}}" "${{SLURM_NODEID:-}}" "$l" > "$CAMPAIGN_RANKS_DIR/$r"
if [ "${{l:-0}}" = 0 ] && [ -n "${{CAMPAIGN_NODES_DIR:-}}" ]; then
{NODE_RECORD}fi
# A stack that names its runtime's device variable (CAMPAIGN_VISIBLE_DEVICES_VAR, e.g. HCCL's
# ASCEND_RT_VISIBLE_DEVICES) sees this node's grant in it, the devices the rank table names.
if [ -n "${{CAMPAIGN_VISIBLE_DEVICES_VAR:-}}" ]; then
  g={NODE_GRANT}
  if [ -n "$g" ]; then export "$CAMPAIGN_VISIBLE_DEVICES_VAR=$g"; fi
fi
exec "$@"
CAMPAIGN_RANK
chmod +x "$bundle/{RANK_WRAPPER}"
{{
  printf 'nodes=%s\n' "$CAMPAIGN_NODE_LIST"
  printf 'master_addr=%s\n' "$CAMPAIGN_MASTER_ADDR"
}} > "$bundle/{PLACEMENT_FILE}"
got=${{SLURM_JOB_NUM_NODES:-1}}
if [ "$got" != "{n}" ]; then
  echo "problem=the job got $got node(s) ($CAMPAIGN_NODE_LIST), the case asked for {n}" >> "$bundle/{PLACEMENT_FILE}"
  echo "campaign: placement: the job got $got node(s), the case asked for {n}" >&2
  exit {PLACEMENT_EXIT}
fi
"#
    )
}

/// Batch script lines that make HCCL's rank table (`rank_table.json`) for a stack that names
/// it: every node of the allocation with its address (`servers`), then each node's hccn.conf
/// (`CAMPAIGN_HCCN_CONF`, `%n` the node's name, else `/etc/hccn.conf`) and the devices Slurm
/// granted there, copied into `hccn/` by one task per node, then `campaign __rank-table`
/// (`exe`). A table that cannot be made leaves its reason in `rank_table.json.error` (and says
/// nothing in the run's log) and the stack runs anyway: it may form its communicator otherwise
/// (the hccl stack's default, HCCL_INIT=root_info), and a helper that needs the table reports
/// that reason.
pub(crate) fn rank_table_lines(layout: NodeLayout, p: u32, exe: &str) -> String {
    let n = layout.nodes.max(1);
    let k = if n > 1 { layout.ranks_per_node } else { p };
    let placement = if layout.spread { "spread" } else { "pack" };
    let arg = crate::executor::slurm::rank_table::ARG;
    format!(
        r#"# HCCL's rank table (the stack names it): each node's address, hccn.conf and granted devices.
rm -rf "$bundle/{HCCN_DIR}" "$bundle/{RANK_TABLE}" "$bundle/{RANK_TABLE}.error"
mkdir -p "$bundle/{HCCN_DIR}"
for h in $hosts; do
  a=$(scontrol show node "$h" 2>/dev/null | tr ' ' '
' | sed -n 's/^NodeAddr=//p' | head -n 1)
  printf '%s %s
' "$h" "${{a:-$h}}"
done > "$bundle/{HCCN_DIR}/servers"
hccn_copy='n=${{SLURMD_NODENAME:-$(uname -n)}}
f=$(printf "%s" "${{CAMPAIGN_HCCN_CONF:-/etc/hccn.conf}}" | sed "s/%n/$n/g")
if [ -r "$f" ]; then cp "$f" "$0/$n.conf"; fi
printf "%s
" {NODE_GRANT} > "$0/$n.devices"'
if [ {n} -gt 1 ]; then
  srun --nodes={n} --ntasks={n} --ntasks-per-node=1 sh -c "$hccn_copy" "$bundle/{HCCN_DIR}"
else
  sh -c "$hccn_copy" "$bundle/{HCCN_DIR}"
fi
{exe} {arg} "$bundle/{HCCN_DIR}" {k} {placement} "$bundle/{RANK_TABLE}" 2>/dev/null || :
"#
    )
}

/// Batch script lines run after the stack: when its ranks reported (through `rank.sh`), check
/// P ranks, K on each of N distinct nodes, in the case's order (blocks, or round-robin for
/// `spread`), and record every rank's node or the problem.
pub(crate) fn rank_check_lines(layout: NodeLayout, p: u32) -> String {
    let n = layout.nodes.max(1);
    let k = if n > 1 { layout.ranks_per_node } else { p };
    let spread = u8::from(layout.spread);
    format!(
        r#"# Where the ranks ran (each rank that went through rank.sh left a record).
if ls "$CAMPAIGN_RANKS_DIR" 2>/dev/null | grep -q .; then
  cat "$CAMPAIGN_RANKS_DIR"/* | sort -t= -k2 -n > "$bundle/{RANKS_DIR}.txt"
  problem=$(awk -v N={n} -v K={k} -v P={p} -v S={spread} '
    {{ split($1, a, "="); split($2, b, "="); split($3, c, "="); r = a[2]; node = b[2]; id = c[2]
       seen++; per[node]++; if (!(node in order)) {{ order[node] = nn++ }}
       want = S ? r % N : int(r / K)
       if (id != "" && id != want && bad == "") bad = "rank " r " ran on node " id " (" node "), expected node " want }}
    END {{
      if (seen != P) {{ print "ranks reported: " seen ", the case has " P; exit }}
      if (nn != N) {{ print "ranks ran on " nn " node(s), the case asked for " N; exit }}
      for (x in per) if (per[x] != K) {{ print "node " x " ran " per[x] " rank(s), the case asked for " K " per node"; exit }}
      if (bad != "") print bad
    }}' "$bundle/{RANKS_DIR}.txt")
  cat "$bundle/{RANKS_DIR}.txt" >> "$bundle/{PLACEMENT_FILE}"
  if [ -n "$problem" ]; then echo "problem=$problem" >> "$bundle/{PLACEMENT_FILE}"; fi
fi
"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_reads_nodes_ranks_and_problem() {
        let p = parse(
            "nodes=n1,n2\nmaster_addr=127.0.0.1\nrank=1 node=n1 nodeid=0 localid=1\n\
             rank=0 node=n1 nodeid=0 localid=0\nproblem=ranks ran on 1 node(s), the case asked for 2\n",
        );
        assert_eq!(p.nodes, vec!["n1", "n2"]);
        assert_eq!(p.master_addr.as_deref(), Some("127.0.0.1"));
        assert_eq!(p.ranks.len(), 2);
        assert_eq!(p.ranks[0].rank, 0);
        assert_eq!(p.ranks[1].local_rank, Some(1));
        let v = judge(Verdict::Parse, Some(&p));
        assert_eq!(
            v,
            Verdict::Fail("placement: ranks ran on 1 node(s), the case asked for 2".into())
        );
    }

    #[test]
    fn a_timeout_keeps_its_verdict_and_no_problem_keeps_parse() {
        let bad = Placement {
            problem: Some("x".into()),
            ..Placement::default()
        };
        assert_eq!(
            judge(Verdict::Timeout("t".into()), Some(&bad)),
            Verdict::Timeout("t".into())
        );
        assert_eq!(
            judge(Verdict::Parse, Some(&Placement::default())),
            Verdict::Parse
        );
        assert_eq!(judge(Verdict::Parse, None), Verdict::Parse);
    }

    /// The node record the job writes, run by a real `sh`, reads back as this machine's facts
    /// in provenance's spelling.
    #[test]
    fn the_node_record_reads_back_as_this_machines_hardware() {
        let dir = tempfile::tempdir().unwrap();
        let out = std::process::Command::new("sh")
            .args(["-c", NODE_RECORD])
            .env("CAMPAIGN_NODES_DIR", dir.path())
            .env("SLURMD_NODENAME", "n7")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let hw = read_hardware(dir.path());
        assert_eq!(hw.len(), 1, "{hw:?}");
        let hw = &hw[0];
        assert_eq!(hw.node, "n7");
        let read = |p: &str| std::fs::read_to_string(p).unwrap().trim().to_string();
        assert_eq!(hw.host, read("/proc/sys/kernel/hostname"));
        let kernel = format!(
            "{} {}",
            read("/proc/sys/kernel/ostype"),
            read("/proc/sys/kernel/osrelease")
        );
        assert_eq!(hw.kernel, kernel);
        let cpuinfo = read("/proc/cpuinfo");
        let cpus = cpuinfo
            .lines()
            .filter(|l| l.starts_with("processor"))
            .count();
        assert_eq!(hw.cpus as usize, cpus);
        let model = (cpuinfo.lines())
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map_or("", |(_, m)| m.trim());
        assert_eq!(hw.cpu, crate::model::nodes::cpu_text(model, cpus as u32));
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
        let total = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .unwrap();
        assert_eq!(
            hw.memory_kb.to_string(),
            total.trim().trim_end_matches(" kB").trim()
        );
        // A writer that died mid-record leaves a temp file, which is not a record.
        std::fs::write(dir.path().join("n8.tmp.99"), "node=n8\n").unwrap();
        assert_eq!(read_hardware(dir.path()).len(), 1);
    }

    #[test]
    fn tokens_are_found_in_order() {
        assert_eq!(
            next_token("a${CAMPAIGN_MASTER_ADDR}:${CAMPAIGN_NODE_LIST}"),
            Some((1, MASTER_ADDR_TOKEN))
        );
        assert_eq!(next_token("plain"), None);
    }

    /// `rank.sh` as the batch script writes it, run by `sh` with `env` as the rank's program.
    fn rank_env(vars: &[(&str, &str)]) -> String {
        let lines = allocation_lines(
            NodeLayout {
                nodes: 2,
                ranks_per_node: 2,
                spread: false,
            },
            4,
        );
        let start = lines.find("<<'CAMPAIGN_RANK'\n").unwrap() + "<<'CAMPAIGN_RANK'\n".len();
        let end = start + lines[start..].find("\nCAMPAIGN_RANK").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("rank.sh");
        std::fs::write(&script, &lines[start..end]).unwrap();
        let out = std::process::Command::new("sh")
            .arg(&script)
            .arg("env")
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("CAMPAIGN_RANKS_DIR", dir.path())
            .env("SLURM_PROCID", "3")
            .env("SLURM_LOCALID", "1")
            .envs(vars.iter().copied())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        assert!(dir.path().join("3").is_file(), "the rank's record");
        String::from_utf8(out.stdout).unwrap()
    }

    #[test]
    fn a_rank_sees_its_nodes_grant_in_the_variable_its_stack_names() {
        let var = ("CAMPAIGN_VISIBLE_DEVICES_VAR", "ASCEND_RT_VISIBLE_DEVICES");
        // The stack's fallback (0..K-1) gives way to the devices Slurm granted on this node.
        let env = rank_env(&[
            var,
            ("ASCEND_RT_VISIBLE_DEVICES", "0,1"),
            ("SLURM_JOB_GPUS", "4,5"),
        ]);
        assert!(
            env.lines().any(|l| l == "ASCEND_RT_VISIBLE_DEVICES=4,5"),
            "{env}"
        );
        // NPU_VISIBLE_DEVICES first, as in the rank table's grant.
        let env = rank_env(&[
            var,
            ("NPU_VISIBLE_DEVICES", "6,7"),
            ("SLURM_JOB_GPUS", "4,5"),
        ]);
        assert!(
            env.lines().any(|l| l == "ASCEND_RT_VISIBLE_DEVICES=6,7"),
            "{env}"
        );
        // No grant: the stack's own value stands.
        let env = rank_env(&[var, ("ASCEND_RT_VISIBLE_DEVICES", "0,1")]);
        assert!(
            env.lines().any(|l| l == "ASCEND_RT_VISIBLE_DEVICES=0,1"),
            "{env}"
        );
        // A stack that names no variable is left alone.
        let env = rank_env(&[
            ("ASCEND_RT_VISIBLE_DEVICES", "0,1"),
            ("SLURM_JOB_GPUS", "4,5"),
        ]);
        assert!(
            env.lines().any(|l| l == "ASCEND_RT_VISIBLE_DEVICES=0,1"),
            "{env}"
        );
    }
}
