//! Element types of the host allreduce and the reduction kernels over them.
//!
//! Owns dtype arithmetic only: conversion from and to the golden's `f64` values, and the two
//! kernels every algorithm uses (`reduce_sources`: sum of N equal-length slices into one;
//! `copy`). Accumulation rule, documented in docs/stack-protocol.md: fp32 adds in f32; int32 adds
//! with wrapping; fp16 and bf16 widen to f32, add in f32, and round to 16 bits once per kernel
//! call — so a mesh or twophase reduction rounds once per element, while ring rounds at every
//! hop (each hop is one kernel call whose result is stored as 16-bit and passed on). It must not
//! know about ranks, windows or timing.

use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};

use crate::model::case::Dtype;

/// Elements per block the kernels accumulate in a stack buffer (8 KiB of f32: stays in L1).
const BLOCK: usize = 2048;

/// One element type of the allreduce.
pub(crate) trait Element:
    Copy + Send + Sync + PartialEq + std::fmt::Debug + 'static
{
    /// The type sums are accumulated in.
    type Acc: Copy + Default + Send;
    /// The dtype this element implements.
    const DTYPE: Dtype;
    /// The element nearest to `v` (golden inputs are exact integers).
    fn from_f64(v: f64) -> Self;
    /// The element's value, exactly.
    fn to_f64(self) -> f64;
    /// `acc[i] = widen(src[i])`.
    fn widen(src: &[Self], acc: &mut [Self::Acc]);
    /// `dst[i] = round(acc[i])`.
    fn narrow(acc: &[Self::Acc], dst: &mut [Self]);
    /// `acc[i] += x[i]`.
    fn add(acc: &mut [Self::Acc], x: &[Self::Acc]);
    /// `acc[i] += widen(src[i])`; `tmp` is scratch of the same length for types that must
    /// convert first. Types whose `Acc` is `Self` override this to skip the copy.
    fn accumulate(src: &[Self], acc: &mut [Self::Acc], tmp: &mut [Self::Acc]) {
        Self::widen(src, tmp);
        Self::add(acc, tmp);
    }
    /// `dst = Σ_{k < n_src} src(k)` for one block (every `src(k)` is `dst.len()` long):
    /// widen the first source into `acc`, accumulate the others, round once into `dst`.
    /// 32-bit types override this to add straight into `dst`, saving two passes.
    fn reduce_block<'a>(
        dst: &mut [Self],
        n_src: usize,
        src: &dyn Fn(usize) -> &'a [Self],
        acc: &mut [Self::Acc],
        tmp: &mut [Self::Acc],
    ) {
        Self::widen(src(0), acc);
        for k in 1..n_src {
            Self::accumulate(src(k), acc, tmp);
        }
        Self::narrow(acc, dst);
    }
}

/// `reduce_block` for types that accumulate in themselves: `dst = s0 + s1` in one pass, then
/// `dst += s_k` while the block is still in L1.
fn reduce_block_direct<'a, T: Copy>(
    dst: &mut [T],
    n_src: usize,
    src: &dyn Fn(usize) -> &'a [T],
    add: impl Fn(T, T) -> T,
) {
    if n_src == 1 {
        dst.copy_from_slice(src(0));
        return;
    }
    for ((d, a), b) in dst.iter_mut().zip(src(0)).zip(src(1)) {
        *d = add(*a, *b);
    }
    for k in 2..n_src {
        for (d, x) in dst.iter_mut().zip(src(k)) {
            *d = add(*d, *x);
        }
    }
}

/// `Element` for a 32-bit type that accumulates in itself: widening and narrowing are copies,
/// and reductions add straight into the destination.
macro_rules! self_accumulating {
    ($t:ty, $dtype:expr, $add:expr) => {
        impl Element for $t {
            type Acc = $t;
            const DTYPE: Dtype = $dtype;
            fn from_f64(v: f64) -> Self {
                // Validation keeps golden values inside the type (golden::range_problem).
                v as $t
            }
            fn to_f64(self) -> f64 {
                f64::from(self)
            }
            fn widen(src: &[Self], acc: &mut [$t]) {
                acc.copy_from_slice(src);
            }
            fn narrow(acc: &[$t], dst: &mut [Self]) {
                dst.copy_from_slice(acc);
            }
            fn add(acc: &mut [$t], x: &[$t]) {
                let add = $add;
                for (a, b) in acc.iter_mut().zip(x) {
                    *a = add(*a, *b);
                }
            }
            fn accumulate(src: &[Self], acc: &mut [$t], _tmp: &mut [$t]) {
                Self::add(acc, src);
            }
            fn reduce_block<'a>(
                dst: &mut [Self],
                n_src: usize,
                src: &dyn Fn(usize) -> &'a [Self],
                _acc: &mut [$t],
                _tmp: &mut [$t],
            ) {
                reduce_block_direct(dst, n_src, src, $add);
            }
        }
    };
}

self_accumulating!(f32, Dtype::Fp32, |a: f32, b: f32| a + b);
self_accumulating!(i32, Dtype::Int32, i32::wrapping_add);

impl Element for f16 {
    type Acc = f32;
    const DTYPE: Dtype = Dtype::Fp16;
    fn from_f64(v: f64) -> Self {
        f16::from_f64(v)
    }
    fn to_f64(self) -> f64 {
        f16::to_f64(self)
    }
    fn widen(src: &[Self], acc: &mut [f32]) {
        // Slice conversion uses F16C eight lanes at a time when the CPU has it.
        src.convert_to_f32_slice(acc);
    }
    fn narrow(acc: &[f32], dst: &mut [Self]) {
        dst.convert_from_f32_slice(acc);
    }
    fn add(acc: &mut [f32], x: &[f32]) {
        f32::add(acc, x);
    }
}

impl Element for bf16 {
    type Acc = f32;
    const DTYPE: Dtype = Dtype::Bf16;
    fn from_f64(v: f64) -> Self {
        bf16::from_f64(v)
    }
    fn to_f64(self) -> f64 {
        bf16::to_f64(self)
    }
    fn widen(src: &[Self], acc: &mut [f32]) {
        src.convert_to_f32_slice(acc);
    }
    fn narrow(acc: &[f32], dst: &mut [Self]) {
        dst.convert_from_f32_slice(acc);
    }
    fn add(acc: &mut [f32], x: &[f32]) {
        f32::add(acc, x);
    }
}

/// `dst = Σ_{k < n_src} src(k)`, summing in source order 0, 1, …, n_src-1 (every rank that
/// reduces the same element uses the same order, so their results are bitwise identical).
/// Every `src(k)` must be `dst.len()` long and `n_src >= 1`. Works block by block so the
/// accumulator stays in L1 and no heap memory is touched.
pub(crate) fn reduce_sources<'a, T: Element>(
    dst: &mut [T],
    n_src: usize,
    src: impl Fn(usize) -> &'a [T],
) {
    debug_assert!(n_src >= 1);
    let mut acc = [T::Acc::default(); BLOCK];
    let mut tmp = [T::Acc::default(); BLOCK];
    let n = dst.len();
    let mut start = 0;
    while start < n {
        let end = (start + BLOCK).min(n);
        let len = end - start;
        let block = |k: usize| &src(k)[start..end];
        T::reduce_block(
            &mut dst[start..end],
            n_src,
            &block,
            &mut acc[..len],
            &mut tmp[..len],
        );
        start = end;
    }
}

/// The dtype's element size in bytes, as laid out in memory.
#[cfg(test)]
pub(crate) fn elem_bytes<T: Element>() -> usize {
    std::mem::size_of::<T>()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sum_of<T: Element>(inputs: &[Vec<f64>]) -> Vec<f64> {
        let srcs: Vec<Vec<T>> = inputs
            .iter()
            .map(|v| v.iter().map(|x| T::from_f64(*x)).collect())
            .collect();
        let mut dst = vec![T::from_f64(-1.0); srcs[0].len()];
        reduce_sources(&mut dst, srcs.len(), |k| &srcs[k]);
        dst.into_iter().map(T::to_f64).collect()
    }

    #[test]
    fn sums_every_dtype_across_block_boundaries() {
        let n = BLOCK * 2 + 7;
        let inputs: Vec<Vec<f64>> = (0..3)
            .map(|r| (0..n).map(|i| (i % 16) as f64 + r as f64).collect())
            .collect();
        let want: Vec<f64> = (0..n).map(|i| 3.0 * (i % 16) as f64 + 3.0).collect();
        assert_eq!(sum_of::<f32>(&inputs), want);
        assert_eq!(sum_of::<i32>(&inputs), want);
        assert_eq!(sum_of::<f16>(&inputs), want);
        assert_eq!(sum_of::<bf16>(&inputs), want);
    }

    #[test]
    fn int32_wraps_instead_of_panicking() {
        let a = [i32::MAX];
        let b = [1i32];
        let mut dst = [0i32];
        reduce_sources(&mut dst, 2, |k| if k == 0 { &a[..] } else { &b[..] });
        assert_eq!(dst[0], i32::MIN);
    }

    #[test]
    fn half_types_accumulate_in_f32_and_round_once() {
        // 2048 + 1 + 1: fp16 has spacing 2 at 2048, so rounding after each add would stay at
        // 2048 (ties to even) while one rounding of the f32 sum 2050 is exact.
        let inputs = vec![vec![2048.0], vec![1.0], vec![1.0]];
        assert_eq!(sum_of::<f16>(&inputs), vec![2050.0]);
        // bf16 has spacing 2 at 256.
        let inputs = vec![vec![256.0], vec![1.0], vec![1.0]];
        assert_eq!(sum_of::<bf16>(&inputs), vec![258.0]);
    }

    #[test]
    fn conversions_are_exact_for_small_integers() {
        for v in [0.0, 1.0, 15.0, 255.0, 2047.0] {
            assert_eq!(f16::from_f64(v).to_f64(), v);
            assert_eq!(<i32 as Element>::from_f64(v).to_f64(), v);
        }
        // bf16 keeps 8 significant bits: 255 is exact, 2047 is not.
        assert_eq!(<bf16 as Element>::from_f64(255.0).to_f64(), 255.0);
        assert_eq!(<bf16 as Element>::from_f64(2047.0).to_f64(), 2048.0);
        assert_eq!(<f32 as Element>::DTYPE, Dtype::Fp32);
        assert_eq!(elem_bytes::<f16>(), 2);
    }
}
