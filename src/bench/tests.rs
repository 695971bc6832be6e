//! Unit tests of the whole host allreduce: every variant × dtype × P × awkward count passes the
//! golden, round reports are complete, and a corrupted rank is caught.

use super::*;
use crate::model::case::Variant;

const VARIANTS: [Variant; 3] = [Variant::Mesh, Variant::Ring, Variant::Twophase];
const DTYPES: [Dtype; 4] = [Dtype::Fp32, Dtype::Fp16, Dtype::Bf16, Dtype::Int32];

fn case(variant: Variant, p: u32, count: u64, dtype: Dtype) -> Case {
    let mut c = Case::new(variant, p, count);
    c.dtype = dtype;
    c.platform = crate::model::case::Platform::Host;
    if crate::model::case::golden::range_problem(&c).is_some() {
        c.input_formula = "rank_mod16_v1".into();
    }
    assert!(c.problems().is_empty(), "{:?}", c.problems());
    c
}

fn opts(warmup: u32, timed: u32) -> Options {
    Options {
        warmup,
        timed,
        persistent: true,
        check: CheckMode::Ends,
        fault: None,
    }
}

/// `opts` checking every round.
fn every(warmup: u32, timed: u32) -> Options {
    Options {
        check: CheckMode::Every,
        ..opts(warmup, timed)
    }
}

/// Run and collect every round report.
fn run_case(c: &Case, o: &Options) -> (Outcome, Vec<RoundReport>) {
    let mut rounds = Vec::new();
    let outcome = run(c, o, &mut |r| rounds.push(r.clone()));
    (outcome, rounds)
}

/// `c` passes with `o` and with `o` checking the other way (both modes run every algorithm).
fn assert_passes(c: &Case, o: &Options) {
    assert_passes_with(c, o);
    let other = match o.check {
        CheckMode::Ends => CheckMode::Every,
        CheckMode::Every => CheckMode::Ends,
    };
    assert_passes_with(c, &Options { check: other, ..*o });
}

fn assert_passes_with(c: &Case, o: &Options) {
    let (outcome, rounds) = run_case(c, o);
    assert!(
        outcome.passed(),
        "{}: {:?}",
        c.case_id(),
        outcome.first_failure
    );
    assert_eq!(rounds.len() as u32, o.warmup + o.timed, "{}", c.case_id());
    assert!(rounds.iter().all(|r| r.ok), "{}", c.case_id());
}

#[test]
fn every_variant_dtype_p_and_awkward_count_passes_the_golden() {
    for p in [2u32, 3, 4, 8] {
        let counts = [1, u64::from(p) - 1, 37 * u64::from(p) + 3, 4099];
        for variant in VARIANTS {
            for dtype in DTYPES {
                for count in counts.into_iter().filter(|c| *c >= 1) {
                    assert_passes(&case(variant, p, count, dtype), &opts(1, 2));
                }
            }
        }
    }
}

#[test]
fn one_mebi_elements_pass_for_every_variant_and_p() {
    for p in [2u32, 3, 4, 8] {
        for variant in VARIANTS {
            assert_passes(&case(variant, p, 1 << 20, Dtype::Fp32), &opts(0, 1));
        }
    }
}

#[test]
fn non_persistent_windows_pass_and_report_allocation() {
    for variant in VARIANTS {
        let c = case(variant, 3, 1000, Dtype::Bf16);
        let o = Options {
            persistent: false,
            ..opts(1, 2)
        };
        assert_passes(&c, &o);
        let (_, rounds) = run_case(&c, &o);
        assert!(rounds
            .iter()
            .all(|r| r.alloc_s.is_some() && r.release_s.is_some()));
    }
}

#[test]
fn round_reports_carry_timing_for_every_rank() {
    let c = case(Variant::Ring, 4, 4096, Dtype::Fp32);
    let (_, rounds) = run_case(&c, &opts(2, 3));
    let rounds_seen: Vec<(u32, bool, u32)> = rounds
        .iter()
        .map(|r| (r.round, r.timed, r.phase_round))
        .collect();
    assert_eq!(
        rounds_seen,
        vec![
            (1, false, 1),
            (2, false, 2),
            (3, true, 1),
            (4, true, 2),
            (5, true, 3)
        ]
    );
    assert!(rounds[0].setup_s.is_some());
    assert!(rounds[1..].iter().all(|r| r.setup_s.is_none()));
    for r in &rounds {
        assert_eq!(r.per_rank_execute_s.len(), 4);
        let max = r.per_rank_execute_s.iter().copied().fold(0.0, f64::max);
        assert_eq!(r.execute_s, max, "execute_s is the slowest rank");
        assert!(r.execute_s > 0.0);
        let first_or_last = r.round == 1 || r.round == 5;
        assert_eq!(r.checked, first_or_last, "round {}", r.round);
        assert_eq!(r.check_s.is_some(), r.checked, "round {}", r.round);
        assert_eq!((r.alloc_s, r.release_s), (None, None), "persistent");
    }
}

#[test]
fn injected_fault_is_caught_with_rank_index_value_and_count() {
    for variant in VARIANTS {
        for dtype in DTYPES {
            let c = case(variant, 4, 10, dtype);
            let o = Options {
                fault: Some(Fault {
                    rank: 2,
                    timed_round: Some(2),
                }),
                ..every(1, 3)
            };
            let (outcome, rounds) = run_case(&c, &o);
            assert!(!outcome.passed(), "{}", c.case_id());
            assert_eq!(outcome.failed_rounds, 1);
            let oks: Vec<bool> = rounds.iter().map(|r| r.ok).collect();
            assert_eq!(oks, vec![true, true, false, true], "{}", c.case_id());
            let m = rounds[2].mismatch.as_ref().unwrap();
            assert_eq!((m.rank, m.first.index, m.wrong_on_rank), (2, 5, 1));
            let expected = crate::model::case::golden::expected_value(&c.input_formula, 4, 5);
            assert_eq!(m.first.expected, expected);
            let msg = outcome.error().unwrap();
            assert!(
                msg.contains(&format!(
                    "timed round 2 (round 3): rank 2 index 5: got {}, expected {expected}",
                    m.first.value
                )),
                "{msg}"
            );
            assert!(
                msg.contains("1 of 4 checked rounds failed, 1 wrong elements in all; 4 rounds run"),
                "{msg}"
            );
        }
    }
}

/// A rank spoiled in every timed round: by default only the last timed round is looked at and
/// fails (the first round, a warmup round, is checked and right); the middle rounds say they
/// were not checked. With `CheckMode::Every` each spoiled round fails.
#[test]
fn each_check_mode_catches_a_rank_spoiled_in_every_timed_round() {
    for variant in VARIANTS {
        for persistent in [true, false] {
            let c = case(variant, 3, 100, Dtype::Fp32);
            let fault = Some(Fault {
                rank: 1,
                timed_round: None,
            });
            let o = Options {
                fault,
                persistent,
                ..opts(2, 3)
            };
            let (outcome, rounds) = run_case(&c, &o);
            let seen: Vec<(bool, bool)> = rounds.iter().map(|r| (r.checked, r.ok)).collect();
            let t = true;
            let f = false;
            assert_eq!(
                seen,
                vec![(t, t), (f, t), (f, t), (f, t), (t, f)],
                "{}",
                c.case_id()
            );
            assert_eq!((outcome.checked_rounds, outcome.failed_rounds), (2, 1));
            let msg = outcome.error().unwrap();
            assert!(
                msg.starts_with("golden mismatch in timed round 3 (round 5): rank 1"),
                "{msg}"
            );
            assert!(msg.contains("1 of 2 checked rounds failed"), "{msg}");

            let o = Options {
                fault,
                persistent,
                ..every(2, 3)
            };
            let (outcome, rounds) = run_case(&c, &o);
            let seen: Vec<(bool, bool)> = rounds.iter().map(|r| (r.checked, r.ok)).collect();
            assert_eq!(
                seen,
                vec![(t, t), (t, t), (t, f), (t, f), (t, f)],
                "{}",
                c.case_id()
            );
            let msg = outcome.error().unwrap();
            assert!(msg.contains("timed round 1 (round 3): rank 1"), "{msg}");
            assert!(
                msg.contains("3 of 5 checked rounds failed, 3 wrong elements in all"),
                "{msg}"
            );
        }
    }
}

/// The last round's output is poisoned before it: an allreduce that leaves its
/// output alone after the first round is caught in the last round, not passed on the first
/// round's right values still lying there.
#[test]
fn the_last_round_is_checked_in_a_window_it_must_write() {
    /// Mesh in a rank's first round, nothing after (`ring_steps` counts this rank's rounds;
    /// mesh does not use it).
    fn first_round_only(ctx: &mut RankCtx<'_, f32>) {
        if ctx.ring_steps == 0 {
            mesh::allreduce(ctx);
        }
        ctx.ring_steps += 1;
    }
    let c = case(Variant::Mesh, 2, 64, Dtype::Fp32);
    for (mode, want) in [
        (CheckMode::Ends, vec![4]),
        (CheckMode::Every, vec![2, 3, 4]),
    ] {
        let o = Options {
            check: mode,
            ..opts(1, 3)
        };
        let (outcome, rounds) = run_with(&c, &o, first_round_only);
        let failed: Vec<u32> = rounds.iter().filter(|r| !r.ok).map(|r| r.round).collect();
        assert_eq!(failed, want, "{mode:?}");
        assert!(!outcome.passed());
    }
}

/// Run `c` with `algorithm` in place of the case's own (fp32 only).
fn run_with(
    c: &Case,
    o: &Options,
    algorithm: fn(&mut RankCtx<'_, f32>),
) -> (Outcome, Vec<RoundReport>) {
    let mut rounds = Vec::new();
    let outcome = runner::run_algorithm(c, o, algorithm, &mut |r| rounds.push(r.clone()));
    (outcome, rounds)
}

/// Every round writes into the same output window, the last one included (issue 44, item 1):
/// the last round once wrote into a spare window poisoned at setup, cold in the caches and the
/// TLB, and the host stack's last timed round was 1.2–2× the others. With `Ends` the last round
/// is still checked in a window it must write (`the_last_round_is_checked_in_a_window_it_must_write`).
#[test]
fn every_round_writes_the_same_output_window() {
    static SEEN: std::sync::Mutex<Vec<(usize, usize)>> = std::sync::Mutex::new(Vec::new());
    fn mesh_noting_the_window(ctx: &mut RankCtx<'_, f32>) {
        // SAFETY: a zero-length range of this rank's own output touches no element.
        let at =
            unsafe { ctx.windows.write(ctx.rank, window::Side::Output, 0..0) }.as_ptr() as usize;
        SEEN.lock().unwrap().push((ctx.rank, at));
        mesh::allreduce(ctx);
    }
    let c = case(Variant::Mesh, 2, 4096, Dtype::Fp32);
    let (outcome, rounds) = run_with(&c, &opts(2, 5), mesh_noting_the_window);
    assert!(outcome.passed());
    assert_eq!(rounds.len(), 7);
    let seen = SEEN.lock().unwrap().clone();
    for rank in 0..2 {
        let windows: Vec<usize> = seen
            .iter()
            .filter(|(r, _)| *r == rank)
            .map(|s| s.1)
            .collect();
        assert_eq!(windows.len(), 7, "rank {rank}");
        assert!(
            windows.iter().all(|w| *w == windows[0]),
            "rank {rank} wrote into other windows: {windows:x?}"
        );
    }
}

#[test]
fn the_calling_thread_is_not_left_bound_to_a_core_after_a_run() {
    // Rank 0 runs on the caller's thread and is bound to a core when P <= cores; the caller
    // (a test thread, or `campaign bench`'s main thread) must get its CPU set back.
    let before = affinity::allowed_cpus();
    let p = before.len().clamp(1, 2) as u32;
    assert_passes(&case(Variant::Ring, p, 64, Dtype::Fp32), &opts(1, 1));
    assert_eq!(affinity::allowed_cpus(), before);
}

/// A case of another op than allreduce (count a multiple of p, as the chunked ops need).
fn op_case(op: Op, variant: Variant, p: u32, count: u64, dtype: Dtype) -> Case {
    let mut c = case(variant, p, count, dtype).with_op(op);
    if crate::model::case::golden::range_problem(&c).is_some() {
        c.input_formula = "rank_mod16_v1".into();
    }
    assert!(c.problems().is_empty(), "{:?}", c.problems());
    c
}

use crate::model::case::Op;

#[test]
fn every_op_and_host_algorithm_passes_its_golden_in_every_dtype_and_p() {
    for op in &Op::EVERY[1..] {
        for &variant in op.host_variants() {
            for p in [2u32, 3, 4, 5, 8] {
                for dtype in DTYPES {
                    for count in [u64::from(p), 37 * u64::from(p), 4099 * u64::from(p)] {
                        assert_passes(&op_case(*op, variant, p, count, dtype), &opts(1, 2));
                    }
                }
            }
        }
    }
}

#[test]
fn every_root_of_broadcast_and_reduce_passes() {
    for op in [Op::Broadcast, Op::Reduce] {
        for &variant in op.host_variants() {
            for p in [2u32, 3, 6] {
                for root in 0..p {
                    let mut c = op_case(op, variant, p, 1000, Dtype::Fp32);
                    c.root = Some(root);
                    assert_passes(&c, &opts(1, 3));
                }
            }
        }
    }
}

/// A corrupted element of a checked rank's result fails the round, for every op and
/// algorithm; the message names the rank.
#[test]
fn a_corrupted_result_is_caught_for_every_op() {
    for op in &Op::EVERY[1..] {
        for &variant in op.host_variants() {
            let c = op_case(*op, variant, 4, 64, Dtype::Fp32);
            // Reduce checks only the root (0); every other op checks rank 2.
            let rank = if *op == Op::Reduce { 0 } else { 2 };
            let o = Options {
                fault: Some(Fault {
                    rank,
                    timed_round: Some(2),
                }),
                ..every(0, 3)
            };
            let (outcome, _) = run_case(&c, &o);
            assert_eq!(outcome.failed_rounds, 1, "{}", c.case_id());
            let msg = outcome.error().unwrap();
            assert!(msg.contains(&format!("rank {rank}")), "{msg}");
        }
    }
}

/// The allreduce algorithms run where another op is asked fail that op's golden: the check is
/// the op's, not allreduce's. (Reduce and the host's reduce_scatter, whose result is the rank's
/// own block of its output window, are right by definition when given an allreduce.)
#[test]
fn an_allreduce_where_another_op_is_asked_fails() {
    for op in [Op::Broadcast, Op::Alltoall] {
        let mut c = op_case(op, Variant::Ring, 2, 64, Dtype::Fp32);
        // No host algorithm for (op, mesh): the runner falls back to the mesh allreduce.
        c.variant = Variant::Mesh;
        let (outcome, _) = run_case(&c, &opts(0, 1));
        assert!(!outcome.passed(), "{}: an allreduce passed", c.case_id());
    }
}
