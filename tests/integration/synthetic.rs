//! Synthetic result sets with known structure, for tests, snapshots and the report benchmark
//! (`benches/report.rs` includes this file).
//!
//! Owns a deterministic generator (ChaCha8, fixed seed) of passing and failing runs whose
//! times follow an α–β model with known O and B per stack. Never used on real run dirs; it
//! exists so report code can be exercised without hardware.

use std::path::PathBuf;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use campaign::model::case::{Case, Dtype, Platform, Variant};
use campaign::model::results::{Provenance, ResultSet, RunResult, RunStatus, Sample};

/// One synthetic stack: its overhead O (seconds) and bandwidth B (bytes per second).
#[derive(Debug, Clone)]
pub struct StackModel {
    pub name: String,
    pub overhead_s: f64,
    pub bandwidth: f64,
}

/// What to generate: the Cartesian product of the axes, one run per (case, stack).
#[derive(Debug, Clone)]
pub struct Spec {
    pub stacks: Vec<StackModel>,
    pub variants: Vec<Variant>,
    pub ps: Vec<u32>,
    pub counts: Vec<u64>,
    pub dtypes: Vec<Dtype>,
    /// core_num values tried for `mesh` (other variants use 1).
    pub core_nums: Vec<u32>,
    pub warmup: u32,
    pub timed: u32,
    /// Relative uniform noise on each round.
    pub noise: f64,
    pub seed: u64,
    /// Every n-th run fails (0 = none).
    pub fail_every: usize,
    /// Record phases, device wall and a compile profile on every round.
    pub detail: bool,
}

impl Spec {
    /// A small two-stack spec: mesh and ring, P 2/4/8, four sizes, 9 timed rounds.
    pub fn small() -> Spec {
        Spec {
            stacks: vec![
                StackModel {
                    name: "mpi".into(),
                    overhead_s: 20e-6,
                    bandwidth: 2e9,
                },
                StackModel {
                    name: "host".into(),
                    overhead_s: 8e-6,
                    bandwidth: 4e9,
                },
            ],
            variants: vec![Variant::Mesh, Variant::Ring],
            ps: vec![2, 4, 8],
            counts: vec![256, 4096, 65536, 1_048_576],
            dtypes: vec![Dtype::Fp32],
            core_nums: vec![1],
            warmup: 2,
            timed: 9,
            noise: 0.05,
            seed: 42,
            fail_every: 0,
            detail: false,
        }
    }
}

/// Generate the result set of `spec`.
pub fn result_set(spec: &Spec) -> ResultSet {
    let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
    let mut runs = Vec::new();
    for &variant in &spec.variants {
        let cns: &[u32] = if variant == Variant::Mesh {
            &spec.core_nums
        } else {
            &[1]
        };
        for &p in &spec.ps {
            for &count in &spec.counts {
                for &dtype in &spec.dtypes {
                    for &cn in cns {
                        let mut case = Case::new(variant, p, count);
                        case.dtype = dtype;
                        case.core_num = cn;
                        case.platform = Platform::Host;
                        case.warmup_rounds = spec.warmup;
                        case.timed_rounds = spec.timed;
                        for stack in &spec.stacks {
                            let fail =
                                spec.fail_every > 0 && (runs.len() + 1) % spec.fail_every == 0;
                            runs.push(run(spec, stack, &case, fail, &mut rng));
                        }
                    }
                }
            }
        }
    }
    ResultSet {
        campaign: "synthetic".into(),
        timestamp: "20250101_000000".into(),
        provenance: Provenance {
            campaign_version: "0.1.0".into(),
            host: "synthetic-host".into(),
            seed: Some(spec.seed),
            ..Provenance::default()
        },
        runs,
        quarantined: Default::default(),
        metrics: Default::default(),
    }
}

/// `rs` run once per op of `ops`: every run copied with its case made that op (its case id,
/// bundle and bytes as that op's), as a campaign over several collectives would give.
pub fn with_ops(rs: &ResultSet, ops: &[campaign::model::case::Op]) -> ResultSet {
    let mut out = rs.clone();
    out.runs = ops
        .iter()
        .flat_map(|&op| {
            rs.runs.iter().map(move |r| {
                let mut r = r.clone();
                r.case = r.case.clone().with_op(op);
                r.case_id = r.case.case_id();
                r.bundle = PathBuf::from(format!("cases/{}/{}", r.case_id, r.stack));
                r
            })
        })
        .collect();
    out
}

fn run(
    spec: &Spec,
    stack: &StackModel,
    case: &Case,
    fail: bool,
    rng: &mut ChaCha8Rng,
) -> RunResult {
    let p = f64::from(case.p);
    // More cores help up to four (so B* is 4 when core_num is swept past it).
    let b = stack.bandwidth * f64::from(case.core_num.min(4));
    let ideal =
        stack.overhead_s * (1.0 + 0.1 * p.log2()) + case.n_bytes() as f64 * 2.0 * (p - 1.0) / p / b;
    let mut samples = Vec::new();
    let total = spec.warmup + spec.timed;
    for round in 1..=total {
        let timed = round > spec.warmup;
        let t = ideal * (1.0 + spec.noise * rng.random::<f64>());
        let n = if timed { round - spec.warmup } else { round };
        let mut s = Sample {
            round,
            phase: Sample::label(timed, n),
            wall_s: Some(t * 1.2),
            execute_s: Some(t),
            ok: !(fail && timed),
            bw_execute_mb_s: Some(case.n_bytes() as f64 / t / 1e6),
            setup_s: (round == 1).then_some(0.5),
            ..Sample::default()
        };
        if spec.detail {
            s.device_wall_s = Some(t * 0.9);
            s.phases = [
                ("startup", 0.2),
                ("compile", 1.5),
                ("init", 0.3),
                ("execute", t),
            ]
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect();
            s.compile_profile = [("total", 1.5), ("passes", 0.9), ("codegen", 0.4)]
                .iter()
                .map(|(k, v)| (k.to_string(), *v))
                .collect();
        }
        samples.push(s);
    }
    let case_id = case.case_id();
    RunResult {
        bundle: PathBuf::from(format!("cases/{case_id}/{}", stack.name)),
        case_id,
        stack: stack.name.clone(),
        status: if fail {
            RunStatus::Fail
        } else {
            RunStatus::Pass
        },
        error: fail.then(|| "golden mismatch: rank 1 element 3 expected 103, got 0".to_string()),
        case: case.clone(),
        samples,
        attempt: 1,
        exit_code: Some(if fail { 1 } else { 0 }),
        started: None,
        ended: None,
        timing_source: Some("stack".into()),
        cpus: None,
        cpu_contention: None,
        rank_nodes: None,
        node_hardware: Vec::new(),
        ran: None,
    }
}
