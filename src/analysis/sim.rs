//! The noisy machine the statistical simulations share (tests only): one interleaved repeat of
//! two sides on a shared 2-core machine — a phase both sides share (one time in three 2.5–4×
//! slow, as beside a `yes` loop), each side's own ±4 % run-to-run noise, and 20 timed rounds of
//! 2 % jitter — so the verdict, sequential-repeat and added-size simulations measure their rules
//! on the same model.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// One repeat of A at `a` seconds and B at `b`: each side's 20 rounds, sorted.
pub(crate) fn shared_phase_repeat(rng: &mut ChaCha8Rng, a: f64, b: f64) -> (Vec<f64>, Vec<f64>) {
    let phase = if rng.random_range(0..3) == 0 {
        rng.random_range(2.5..4.0)
    } else {
        1.0
    };
    let mut side = |scale: f64| -> Vec<f64> {
        let own = 1.0 + rng.random_range(-0.04..0.04);
        let mut r: Vec<f64> = (0..20)
            .map(|_| scale * phase * own * (1.0 + rng.random_range(0.0..0.02)))
            .collect();
        r.sort_by(f64::total_cmp);
        r
    };
    let a = side(a);
    (a, side(b))
}
