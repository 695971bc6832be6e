//! Where a multi-node job really ran, and whether that is what its case asked.
//!
//! Owns the batch script's allocation lines (the hostfile, node list and master address written
//! into the bundle from `SLURM_JOB_NODELIST`, the job's node count checked before the stack
//! starts), the per-rank wrapper `rank.sh` (each rank records its rank, node, `SLURM_NODEID` and
//! local rank under `ranks/`), the check of those records after the stack ends (ranks per node,
//! distinct nodes, rank order), and reading the verdict back (`slurm.placement`). A placement
//! problem turns a job that otherwise would be parsed into a failed run with the reason.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::executor::slurm::state::Verdict;
use crate::executor::NodeLayout;

/// Written by the batch script: `nodes=`, `master_addr=`, then `problem=` or one `rank=` line
/// per rank (`rank=R node=NAME nodeid=I localid=L`).
pub(crate) const PLACEMENT_FILE: &str = "slurm.placement";
pub(crate) use crate::model::nodes::{HOSTFILE, MASTER_ADDR_TOKEN, NODE_LIST_TOKEN, RANK_WRAPPER};
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
}

/// Read `slurm.placement`; `None` when the job never got that far.
pub(crate) fn read(bundle_dir: &Path) -> Option<Placement> {
    let text = std::fs::read_to_string(bundle_dir.join(PLACEMENT_FILE)).ok()?;
    Some(parse(&text))
}

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

/// Batch script lines run before the stack: the allocation's node list, hostfile and master
/// address (exported as `CAMPAIGN_NODE_LIST`, `CAMPAIGN_MASTER_ADDR`, `CAMPAIGN_HOSTFILE`), the
/// per-rank wrapper, and the check that the job got the nodes the case asked for.
pub(crate) fn allocation_lines(layout: NodeLayout, p: u32) -> String {
    let n = layout.nodes.max(1);
    let k = if n > 1 { layout.ranks_per_node } else { p };
    format!(
        r#"# The allocation: where the job runs, as Slurm says (the case asked for {n} node(s) x {k} rank(s)).
rm -rf "$bundle/{RANKS_DIR}" "$bundle/{PLACEMENT_FILE}"
hosts=$(scontrol show hostnames "${{SLURM_JOB_NODELIST:-}}" 2>/dev/null)
[ -n "$hosts" ] || hosts=${{SLURMD_NODENAME:-$(hostname)}}
printf '%s\n' $hosts | sed 's/$/ slots={k}/' > "$bundle/{HOSTFILE}"
first=$(printf '%s\n' $hosts | head -n 1)
addr=$(scontrol show node "$first" 2>/dev/null | tr ' ' '\n' | sed -n 's/^NodeAddr=//p' | head -n 1)
export CAMPAIGN_NODE_LIST="$(printf '%s\n' $hosts | paste -sd, -)"
export CAMPAIGN_MASTER_ADDR="${{addr:-$first}}"
export CAMPAIGN_HOSTFILE="$bundle/{HOSTFILE}"
export CAMPAIGN_RANKS_DIR="$bundle/{RANKS_DIR}"
mkdir -p "$CAMPAIGN_RANKS_DIR"
cat > "$bundle/{RANK_WRAPPER}" <<'CAMPAIGN_RANK'
#!/bin/sh
# Records where this rank runs, then becomes the rank's program.
r=${{OMPI_COMM_WORLD_RANK:-${{PMI_RANK:-${{PMIX_RANK:-${{SLURM_PROCID:-0}}}}}}}}
l=${{OMPI_COMM_WORLD_LOCAL_RANK:-${{MPI_LOCALRANKID:-${{SLURM_LOCALID:-}}}}}}
printf 'rank=%s node=%s nodeid=%s localid=%s\n' "$r" "${{SLURMD_NODENAME:-$(hostname)}}" "${{SLURM_NODEID:-}}" "$l" > "$CAMPAIGN_RANKS_DIR/$r"
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

    #[test]
    fn tokens_are_found_in_order() {
        assert_eq!(
            next_token("a${CAMPAIGN_MASTER_ADDR}:${CAMPAIGN_NODE_LIST}"),
            Some((1, MASTER_ADDR_TOKEN))
        );
        assert_eq!(next_token("plain"), None);
    }
}
