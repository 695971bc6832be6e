//! Names shared by the stack templates and an executor whose runs span nodes: the bundle files
//! the running job writes from its allocation and the placeholders a template renders for
//! values only the running job knows. Only names: writing and expanding them is the executor's.

/// The allocation's nodes, one `NAME slots=K` line each (`{{ hostfile }}` in templates).
pub(crate) const HOSTFILE: &str = "hostfile";
/// The per-rank wrapper (`{{ rank_wrap }}` on several nodes): records the rank's node under
/// `ranks/`, then runs the rank's program.
pub(crate) const RANK_WRAPPER: &str = "rank.sh";
/// `{{ node_list }}` on several nodes: the job's nodes, comma-separated.
pub(crate) const NODE_LIST_TOKEN: &str = "${CAMPAIGN_NODE_LIST}";
/// `{{ master_addr }}` on several nodes: the first node's address.
pub(crate) const MASTER_ADDR_TOKEN: &str = "${CAMPAIGN_MASTER_ADDR}";
