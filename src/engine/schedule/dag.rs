//! The campaign's step graph (petgraph): generate → build → probe → run → collect.
//!
//! Owns which steps exist and what each waits for: `generate` (case files) first; one `build`
//! per stack that declares a build command; one `probe` per stack (availability); one `run` per
//! case × stack, the runs of one point of the sweep (its cases: each stack's variants) chained
//! repeat by repeat in their (shuffled or given) stack order; `collect`
//! (results files) after every run. The report is no step of the graph: it renders once the
//! scheduler and this graph are done and freed (`engine::dispatch::Dispatcher::conclude`). It
//! must not run anything or hold run state: the scheduler walks it.

use std::collections::BTreeMap;

use petgraph::algo::toposort;
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::Direction;

/// One node of the graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    Generate,
    Build {
        stack: String,
    },
    Probe {
        stack: String,
    },
    /// `run` is the index of the run in the engine's run list.
    Run {
        run: usize,
        case_id: String,
        stack: String,
    },
    Collect,
}

impl Step {
    /// The journal's step key: `generate`, `build:<stack>`, `probe:<stack>`,
    /// `run:<case_id>:<stack>` or `collect`.
    pub(crate) fn key(&self) -> String {
        match self {
            Step::Generate => "generate".into(),
            Step::Build { stack } => format!("build:{stack}"),
            Step::Probe { stack } => format!("probe:{stack}"),
            Step::Run { case_id, stack, .. } => format!("run:{case_id}:{stack}"),
            Step::Collect => "collect".into(),
        }
    }

    /// The stack a build, probe or run step belongs to.
    pub(crate) fn stack(&self) -> Option<&str> {
        match self {
            Step::Build { stack } | Step::Probe { stack } | Step::Run { stack, .. } => Some(stack),
            _ => None,
        }
    }
}

/// One planned run as the graph needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RunNode {
    pub(crate) case_id: String,
    pub(crate) stack: String,
    /// The runs chained together, in run-list order: the point of the sweep its case answers
    /// for (`engine::prepare`'s index of it), so the repeats of a point's cases interleave.
    pub(crate) chain: u32,
}

/// The step graph of one campaign.
#[derive(Debug, Clone)]
pub(crate) struct Dag {
    graph: DiGraph<Step, ()>,
    // Read by the tests' accessors only; the scheduler walks the graph.
    #[cfg_attr(not(test), allow(dead_code))]
    generate: NodeIndex,
    #[cfg_attr(not(test), allow(dead_code))]
    collect: NodeIndex,
    runs: Vec<NodeIndex>,
}

impl Dag {
    /// Build the graph. `stacks` is every stack in use with whether it has a build command;
    /// `runs` lists every run, the runs of one case in the order they must execute (index in this
    /// slice = `Step::Run::run`).
    pub(crate) fn new(stacks: &[(String, bool)], runs: &[RunNode]) -> Dag {
        let mut graph = DiGraph::new();
        let generate = graph.add_node(Step::Generate);
        let mut probes = BTreeMap::new();
        for (stack, has_build) in stacks {
            let probe = graph.add_node(Step::Probe {
                stack: stack.clone(),
            });
            if *has_build {
                let build = graph.add_node(Step::Build {
                    stack: stack.clone(),
                });
                graph.add_edge(generate, build, ());
                graph.add_edge(build, probe, ());
            } else {
                graph.add_edge(generate, probe, ());
            }
            probes.insert(stack.clone(), probe);
        }
        let collect = graph.add_node(Step::Collect);
        let mut last_of_point: BTreeMap<u32, NodeIndex> = BTreeMap::new();
        let mut run_nodes = Vec::with_capacity(runs.len());
        for (i, r) in runs.iter().enumerate() {
            let node = graph.add_node(Step::Run {
                run: i,
                case_id: r.case_id.clone(),
                stack: r.stack.clone(),
            });
            // A run whose stack was not declared still waits for `generate`.
            let before = probes.get(&r.stack).copied().unwrap_or(generate);
            graph.add_edge(before, node, ());
            // The runs of a point chain with it, repeat by repeat (the run list's order).
            if let Some(prev) = last_of_point.insert(r.chain, node) {
                graph.add_edge(prev, node, ());
            }
            graph.add_edge(node, collect, ());
            run_nodes.push(node);
        }
        if runs.is_empty() {
            for probe in probes.values() {
                graph.add_edge(*probe, collect, ());
            }
            graph.add_edge(generate, collect, ());
        }
        Dag {
            graph,
            generate,
            collect,
            runs: run_nodes,
        }
    }

    /// Make each point of `after` wait for the two points it lies between (`[adapt]`: an added
    /// size is decided on what its neighbours measured): the first run of its chain follows the
    /// last run of each of theirs. `runs` are the runs `new` was given.
    pub(crate) fn wait_for_points(&mut self, runs: &[RunNode], after: &BTreeMap<u32, (u32, u32)>) {
        if after.is_empty() {
            return;
        }
        let mut first: BTreeMap<u32, NodeIndex> = BTreeMap::new();
        let mut last: BTreeMap<u32, NodeIndex> = BTreeMap::new();
        for (r, &node) in runs.iter().zip(&self.runs) {
            first.entry(r.chain).or_insert(node);
            last.insert(r.chain, node);
        }
        for (point, (lo, hi)) in after {
            let Some(&head) = first.get(point) else {
                continue;
            };
            for parent in [lo, hi] {
                if let Some(&tail) = last.get(parent) {
                    self.graph.add_edge(tail, head, ());
                }
            }
        }
    }

    /// Make the runs of each census round (`round[i]`: run `i`'s round, None for a run of no
    /// round) wait for every run of the round before, so a round's pairs run together and the
    /// next round starts on a quiet pool: a pair is measured beside the same load every round
    /// (`analysis::census::rounds`). `round` is in the run order `new` was given.
    pub(crate) fn wait_for_rounds(&mut self, round: &[Option<u32>]) {
        let mut by_round: BTreeMap<u32, Vec<NodeIndex>> = BTreeMap::new();
        for (r, &node) in round.iter().zip(&self.runs) {
            if let Some(r) = r {
                by_round.entry(*r).or_default().push(node);
            }
        }
        let rounds: Vec<&Vec<NodeIndex>> = by_round.values().collect();
        for w in rounds.windows(2) {
            for &before in w[0] {
                for &after in w[1] {
                    self.graph.add_edge(before, after, ());
                }
            }
        }
    }

    /// Hold every run that is not the census's behind the census's last round (`census[i]`: run
    /// `i` is a census run; `round` as [`Dag::wait_for_rounds`] takes it): the first run of each
    /// chain of the others follows every run of that round, which `wait_for_rounds` puts after
    /// all the census's other rounds — so the census is judged before any other run is placed.
    /// `runs` are the runs `new` was given.
    pub(crate) fn after_census(
        &mut self,
        runs: &[RunNode],
        round: &[Option<u32>],
        census: &[bool],
    ) {
        let Some(last) = round.iter().flatten().max() else {
            return;
        };
        let tails: Vec<NodeIndex> = (round.iter().zip(&self.runs))
            .filter(|(r, _)| *r == &Some(*last))
            .map(|(_, &n)| n)
            .collect();
        let mut heads: BTreeMap<u32, NodeIndex> = BTreeMap::new();
        for ((r, &node), &is_census) in runs.iter().zip(&self.runs).zip(census) {
            if !is_census {
                heads.entry(r.chain).or_insert(node);
            }
        }
        for head in heads.values() {
            for &tail in &tails {
                self.graph.add_edge(tail, *head, ());
            }
        }
    }

    pub(crate) fn step(&self, node: NodeIndex) -> &Step {
        &self.graph[node]
    }

    #[cfg(test)]
    pub(crate) fn generate(&self) -> NodeIndex {
        self.generate
    }

    #[cfg(test)]
    pub(crate) fn collect(&self) -> NodeIndex {
        self.collect
    }

    /// The node of run `i`.
    pub(crate) fn run_node(&self, i: usize) -> NodeIndex {
        self.runs[i]
    }

    #[cfg(test)]
    pub(crate) fn node_count(&self) -> usize {
        self.graph.node_count()
    }

    pub(crate) fn nodes(&self) -> impl Iterator<Item = NodeIndex> + '_ {
        self.graph.node_indices()
    }

    /// Steps this one waits for.
    pub(crate) fn predecessors(&self, node: NodeIndex) -> impl Iterator<Item = NodeIndex> + '_ {
        self.graph.neighbors_directed(node, Direction::Incoming)
    }

    /// Steps waiting for this one.
    pub(crate) fn successors(&self, node: NodeIndex) -> impl Iterator<Item = NodeIndex> + '_ {
        self.graph.neighbors_directed(node, Direction::Outgoing)
    }

    /// Every step in an order that respects the edges (the graph is acyclic by construction).
    pub(crate) fn topological(&self) -> Vec<NodeIndex> {
        toposort(&self.graph, None).unwrap_or_else(|_| self.graph.node_indices().collect())
    }
}

/// The tests' chain of a run id: its planned case (the repeats of one case chain together), as
/// a number.
#[cfg(test)]
pub(crate) fn chain_of(run_id: &str) -> u32 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    crate::model::results::split_run_id(run_id).0.hash(&mut h);
    h.finish() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(case: &str, stack: &str) -> RunNode {
        RunNode {
            chain: chain_of(case),
            case_id: case.into(),
            stack: stack.into(),
        }
    }

    fn keys(dag: &Dag, nodes: impl Iterator<Item = NodeIndex>) -> Vec<String> {
        let mut k: Vec<String> = nodes.map(|n| dag.step(n).key()).collect();
        k.sort();
        k
    }

    #[test]
    fn shape_of_a_two_stack_campaign() {
        let stacks = vec![("hccl".to_string(), true), ("host".to_string(), false)];
        let runs = vec![run("c1", "host"), run("c1", "hccl"), run("c2", "hccl")];
        let dag = Dag::new(&stacks, &runs);
        // generate, build:hccl, probe×2, 3 runs, collect
        assert_eq!(dag.node_count(), 8);
        assert_eq!(
            keys(&dag, dag.successors(dag.generate())),
            vec!["build:hccl", "probe:host"]
        );
        // c1's hccl run waits for its probe and for c1's host run (the case's stack order).
        assert_eq!(
            keys(&dag, dag.predecessors(dag.run_node(1))),
            vec!["probe:hccl", "run:c1:host"]
        );
        assert_eq!(
            keys(&dag, dag.predecessors(dag.run_node(2))),
            vec!["probe:hccl"]
        );
        assert_eq!(keys(&dag, dag.predecessors(dag.collect())).len(), 3);
        let order: Vec<String> = dag
            .topological()
            .iter()
            .map(|n| dag.step(*n).key())
            .collect();
        let pos = |k: &str| order.iter().position(|x| x == k).unwrap();
        assert!(pos("generate") < pos("build:hccl"));
        assert!(pos("build:hccl") < pos("probe:hccl"));
        assert!(pos("run:c1:host") < pos("run:c1:hccl"));
        assert!(pos("run:c2:hccl") < pos("collect"));
    }

    #[test]
    fn a_census_round_waits_for_the_round_before() {
        let runs = vec![run("a", "s"), run("b", "s"), run("c", "s"), run("d", "s")];
        let mut dag = Dag::new(&[("s".to_string(), false)], &runs);
        dag.wait_for_rounds(&[Some(0), Some(0), Some(1), None]);
        assert_eq!(
            keys(&dag, dag.predecessors(dag.run_node(2))),
            vec!["probe:s", "run:a:s", "run:b:s"]
        );
        assert_eq!(
            keys(&dag, dag.predecessors(dag.run_node(1))),
            vec!["probe:s"]
        );
        assert_eq!(
            keys(&dag, dag.predecessors(dag.run_node(3))),
            vec!["probe:s"]
        );
    }

    #[test]
    fn empty_campaign_still_collects() {
        let dag = Dag::new(&[("host".to_string(), false)], &[]);
        assert_eq!(
            keys(&dag, dag.predecessors(dag.collect())),
            vec!["generate", "probe:host"]
        );
    }
}
