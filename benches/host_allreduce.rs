//! Benchmark of the built-in `host` allreduce: busbw of mesh, ring and twophase at 4 MiB
//! (fp32, 1 Mi elements) for P = 2 and 4, against this machine's memcpy bandwidth measured in the
//! same run. Prints a Markdown table for docs/performance.md ("## Host allreduce").
//!
//! busbw follows nccl-tests: algbw = bytes / time (GB = 1e9), busbw = algbw × 2(P−1)/P, with time
//! the median over timed rounds of `execute_s` (the slowest rank). memcpy bandwidth is bytes
//! copied / time for one thread copying 4 MiB buffer to buffer (median of many copies; buffers
//! allocated like the windows, huge-page aligned), and the
//! same with P threads copying at once (aggregate), which bounds what P ranks can move together.
//! Both the median and the best round are shown: on a shared machine the median carries other
//! processes' load, the best round is the algorithm with the machine to itself.
//!
//! Run: `cargo bench --bench host_allreduce` (optional args: timed rounds, default 200; `p2` or
//! `p4` to run only that P).
//!
//! `cargo bench --bench host_allreduce -- check [REPS] [TIMED] [mesh|ring|twophase]` instead
//! compares the two placements of the golden check (`CheckMode::Ends`, the default, against
//! `CheckMode::Every`, what every run did before issue 29) at P = 2, fp32, 1 Mi and 16 Mi
//! elements: REPS repetitions (default 5), the two modes alternating with the order swapped
//! every repetition, 20 warmup and TIMED timed rounds (default 200; 16 Mi runs max(TIMED/10,
//! 20)), like benches/mpi_fairness.sh. Prints per count the median over repetitions of each
//! mode's median execute time and the ratio every / ends.

use std::hint::black_box;
use std::time::Instant;

use campaign::bench::region::Region;
use campaign::bench::{self, CheckMode, Options};
use campaign::model::case::{Case, Dtype, Platform, Variant};

const BYTES: usize = 4 << 20;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Median seconds for each of `threads` threads to copy 4 MiB, all copying at once; returns the
/// aggregate bandwidth in GB/s (bytes copied by all threads / slowest thread's time).
fn memcpy_gbps(threads: usize, reps: usize) -> f64 {
    let barrier = std::sync::Barrier::new(threads);
    let times: Vec<Vec<f64>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let barrier = &barrier;
                s.spawn(move || {
                    // Allocated like the allreduce's windows (2 MiB aligned, huge pages where
                    // THP allows), so the ratio compares like with like.
                    let src = Region::filled(BYTES, |_| 1u8);
                    let mut dst = Region::filled(BYTES, |_| 0u8);
                    let mut times = Vec::with_capacity(reps);
                    for _ in 0..reps {
                        barrier.wait();
                        let t = Instant::now();
                        dst.as_mut_slice()
                            .copy_from_slice(black_box(src.as_slice()));
                        black_box(&mut dst);
                        times.push(t.elapsed().as_secs_f64());
                    }
                    times
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let slowest: Vec<f64> = (0..reps)
        .map(|i| times.iter().map(|t| t[i]).fold(0.0, f64::max))
        .collect();
    (threads * BYTES) as f64 / median(slowest) / 1e9
}

struct Row {
    variant: Variant,
    p: u32,
    median_s: f64,
    best_s: f64,
}

impl Row {
    fn busbw(&self, seconds: f64) -> f64 {
        let factor = 2.0 * f64::from(self.p - 1) / f64::from(self.p);
        BYTES as f64 / seconds / 1e9 * factor
    }
}

/// The timed rounds' execute times of one fp32 run of `variant` at P = `p`.
fn timed_execute_s(
    variant: Variant,
    p: u32,
    count: u64,
    (warmup, timed): (u32, u32),
    check: CheckMode,
) -> Vec<f64> {
    let mut case = Case::new(variant, p, count);
    case.dtype = Dtype::Fp32;
    case.platform = Platform::Host;
    let opts = Options {
        warmup,
        timed,
        persistent: true,
        check,
        fault: None,
    };
    let mut times = Vec::new();
    let outcome = bench::run(&case, &opts, &mut |r| {
        if r.timed {
            times.push(r.execute_s);
        }
    });
    assert!(outcome.passed(), "{:?}", outcome.error());
    times
}

fn allreduce(variant: Variant, p: u32, timed: u32) -> Row {
    let times = timed_execute_s(variant, p, (BYTES / 4) as u64, (5, timed), CheckMode::Ends);
    let best_s = times.iter().copied().fold(f64::INFINITY, f64::min);
    Row {
        variant,
        p,
        median_s: median(times),
        best_s,
    }
}

/// `check [REPS] [TIMED] [VARIANT]`: ends against every, interleaved (see the module doc).
fn compare_check_modes(args: &[String]) {
    let numbers: Vec<u32> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let reps = numbers.first().copied().unwrap_or(5);
    let timed = numbers.get(1).copied().unwrap_or(200);
    let variant = [Variant::Mesh, Variant::Ring, Variant::Twophase]
        .into_iter()
        .find(|v| args.iter().any(|a| *a == v.to_string()))
        .unwrap_or(Variant::Ring);
    let load = || std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "host {variant} allreduce, fp32, P = 2: check ends vs every, {reps} repetitions, load before: {}",
        load().trim()
    );
    println!("| count | ends (median) | every (median) | every / ends |");
    println!("|---:|---:|---:|---:|");
    for count in [1u64 << 20, 1 << 24] {
        let rounds = (
            20,
            if count >= 1 << 24 {
                (timed / 10).max(20)
            } else {
                timed
            },
        );
        let (mut ends, mut every) = (Vec::new(), Vec::new());
        for rep in 0..reps {
            let order = if rep % 2 == 0 {
                [CheckMode::Ends, CheckMode::Every]
            } else {
                [CheckMode::Every, CheckMode::Ends]
            };
            for mode in order {
                let m = median(timed_execute_s(variant, 2, count, rounds, mode));
                match mode {
                    CheckMode::Ends => ends.push(m),
                    CheckMode::Every => every.push(m),
                }
            }
        }
        let (e, v) = (median(ends), median(every));
        println!(
            "| {count} | {:.1} µs | {:.1} µs | {:.2} |",
            e * 1e6,
            v * 1e6,
            v / e
        );
    }
    println!("load after: {}", load().trim());
}

fn main() {
    // `cargo bench` passes `--bench`; a bare number sets the timed rounds.
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "check") {
        compare_check_modes(&args);
        return;
    }
    let timed = args
        .iter()
        .find_map(|a| a.parse::<u32>().ok())
        .unwrap_or(200);
    let only_p = args
        .iter()
        .find_map(|a| a.strip_prefix('p').and_then(|n| n.parse::<u32>().ok()));
    let memcpy1 = memcpy_gbps(1, 200);
    let mut rows = Vec::new();
    for p in [2u32, 4]
        .into_iter()
        .filter(|p| only_p.is_none_or(|o| o == *p))
    {
        for variant in [Variant::Mesh, Variant::Ring, Variant::Twophase] {
            rows.push(allreduce(variant, p, timed));
        }
    }
    let memcpy2 = memcpy_gbps(2, 200);
    let memcpy4 = memcpy_gbps(4, 200);
    let memcpy1_after = memcpy_gbps(1, 200);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("host allreduce, fp32, 4 MiB, {timed} timed rounds, {cores} cores");
    println!(
        "memcpy 4 MiB: 1 thread {memcpy1:.2} GB/s (again after the allreduces: {memcpy1_after:.2}), \
         2 threads {memcpy2:.2} GB/s aggregate, 4 threads {memcpy4:.2} GB/s aggregate"
    );
    println!();
    println!(
        "| variant | P | median execute | busbw (median) | ratio to memcpy | best execute | busbw (best) | ratio |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for r in &rows {
        let (median_bw, best_bw) = (r.busbw(r.median_s), r.busbw(r.best_s));
        println!(
            "| {} | {} | {:.0} µs | {:.2} GB/s | {:.0} % | {:.0} µs | {:.2} GB/s | {:.0} % |",
            r.variant,
            r.p,
            r.median_s * 1e6,
            median_bw,
            100.0 * median_bw / memcpy1,
            r.best_s * 1e6,
            best_bw,
            100.0 * best_bw / memcpy1
        );
    }
}
