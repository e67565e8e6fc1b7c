//! Depthwise convolution (one input channel per group), direct and vectorised.
//!
//! Each input plane is copied once into a zero-padded buffer split by phase of the W stride
//! (column `c` of a padded row goes to phase `c % sw`, index `c / sw`), so every kernel tap of
//! an output row reads one contiguous run, whatever the stride and dilation. An output row is
//! then computed in blocks of [`BLOCK`] pixels held in registers, the taps in the filter's
//! order: `acc = acc + w * x` (fused multiply-adds on CPUs with FMA). The padding is explicit
//! zeros, so a NaN or infinite weight meets padding as the unfolded engine does (0 * NaN =
//! NaN). f32 and f64 run a copy compiled for AVX-512 or AVX2+FMA when the CPU has them (picked
//! at run time), else portable code; i64 (int8 convolutions) runs the portable code. Planes
//! split across the run's threads when the work is large.

use super::{Chans, Vol};
use crate::error::{Error, Result};
use crate::kernels::common::{sub, sub_mut};
use crate::kernels::index::{alloc, numel};
use crate::par;
use ndarray::LinalgScalar;
use std::any::TypeId;

/// Output pixels computed together (in registers): one AVX-512 register of f32.
const BLOCK: usize = 16;

/// An element type of the direct kernel.
trait Lane: LinalgScalar + Send + Sync {
    /// `acc + w * x`, fused (one rounding) when `FMA`.
    fn madd<const FMA: bool>(acc: Self, w: Self, x: Self) -> Self;
    /// Whether the vectorised copies serve this type.
    const FLOAT: bool;
}

macro_rules! float_lane {
    ($($t:ty),*) => {$(
        impl Lane for $t {
            #[inline(always)]
            fn madd<const FMA: bool>(acc: $t, w: $t, x: $t) -> $t {
                if FMA {
                    w.mul_add(x, acc)
                } else {
                    acc + w * x
                }
            }
            const FLOAT: bool = true;
        }
    )*};
}

float_lane!(f32, f64);

impl Lane for i64 {
    #[inline(always)]
    fn madd<const FMA: bool>(acc: i64, w: i64, x: i64) -> i64 {
        acc.wrapping_add(w.wrapping_mul(x))
    }
    const FLOAT: bool = false;
}

/// `s` as a slice of `U` when `T` is `U`.
fn same<T: 'static, U: 'static>(s: &[T]) -> Option<&[U]> {
    // SAFETY: T and U are the same type (equal TypeIds), so the pointer, length and lifetime
    // describe valid `U`s.
    (TypeId::of::<T>() == TypeId::of::<U>())
        .then(|| unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<U>(), s.len()) })
}

/// `s` as a mutable slice of `U` when `T` is `U`.
fn same_mut<T: 'static, U: 'static>(s: &mut [T]) -> Option<&mut [U]> {
    // SAFETY: as `same`; the borrow is moved into the result, so it stays unique.
    (TypeId::of::<T>() == TypeId::of::<U>())
        .then(|| unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<U>(), s.len()) })
}

/// The padded, phase-split buffer of one input volume and where each tap reads it.
struct Geo {
    /// Padded depth and height.
    dp: usize,
    hp: usize,
    /// W stride (the number of phases) and the length of one phase row.
    sw: usize,
    ws: usize,
    /// Offset of each tap (filter order) from its output row's base.
    taps: Vec<usize>,
}

impl Geo {
    fn new(v: &Vol) -> Result<Geo> {
        let need = |a: usize| -> Result<usize> {
            // The padded extent every window of the floor-mode output reaches, and at least the
            // input behind its leading pad.
            let reach = (v.o[a].max(1) - 1)
                .checked_mul(v.s[a])
                .and_then(|r| r.checked_add((v.k[a] - 1).checked_mul(v.d[a])?))
                .and_then(|r| r.checked_add(1));
            let inner = v.p[a].checked_add(v.i[a]);
            match (reach, inner) {
                (Some(r), Some(i)) => Ok(r.max(i)),
                _ => Err(Error::kernel("convolution geometry overflows")),
            }
        };
        let (dp, hp, wp) = (need(0)?, need(1)?, need(2)?);
        let sw = v.s[2];
        let max_start = (v.k[2] - 1) * v.d[2] / sw;
        let ws = wp
            .div_ceil(sw)
            .max(max_start + v.o[2].div_ceil(BLOCK) * BLOCK);
        numel(&[dp, hp, sw, ws])?;
        let mut taps = Vec::with_capacity(v.k_len);
        for kd in 0..v.k[0] {
            for kh in 0..v.k[1] {
                for kw in 0..v.k[2] {
                    let c0 = kw * v.d[2];
                    let row = kd * v.d[0] * hp + kh * v.d[1];
                    taps.push((row * sw + c0 % sw) * ws + c0 / sw);
                }
            }
        }
        Ok(Geo {
            dp,
            hp,
            sw,
            ws,
            taps,
        })
    }

    fn len(&self) -> usize {
        self.dp * self.hp * self.sw * self.ws
    }

    /// Copies `plane` ([i...]) inside the padding of `buf` (whose padding stays zero).
    fn fill<T: Copy>(&self, v: &Vol, plane: &[T], buf: &mut [T]) -> Result<()> {
        let [id, ih, iw] = v.i;
        let [pd, ph, pw] = v.p;
        for z in 0..id {
            for y in 0..ih {
                let src = sub(plane, (z * ih + y) * iw, iw)?;
                let row = ((z + pd) * self.hp + y + ph) * self.sw;
                if self.sw == 1 {
                    sub_mut(buf, row * self.ws + pw, iw)?.copy_from_slice(src);
                } else {
                    // Phase q holds the input columns c with (c + pw) % sw == q, from c0 on.
                    for q in 0..self.sw {
                        let c0 = (q + self.sw - pw % self.sw) % self.sw;
                        if c0 >= iw {
                            continue;
                        }
                        let count = (iw - c0).div_ceil(self.sw);
                        let at = (row + q) * self.ws + (c0 + pw) / self.sw;
                        let dst = sub_mut(buf, at, count)?;
                        super::gather_strided(dst, &src[c0..], self.sw);
                    }
                }
            }
        }
        Ok(())
    }
}

/// One padded input plane with its geometry.
struct Src<'a, L> {
    buf: &'a [L],
    g: &'a Geo,
    v: &'a Vol,
}

/// One output channel (`out`: [o...]) of kernel `k` over the padded plane `src`.
#[inline(always)]
fn plane_impl<L: Lane, const FMA: bool>(src: &Src<'_, L>, k: &[L], out: &mut [L]) -> Result<()> {
    let Src { buf, g, v } = *src;
    let [od, oh, ow] = v.o;
    let oob = || Error::kernel("internal error: depthwise tap out of bounds");
    if k.len() != g.taps.len() || out.len() != od * oh * ow {
        return Err(oob());
    }
    for z in 0..od {
        for y in 0..oh {
            let base = ((z * v.s[0] * g.hp + y * v.s[1]) * g.sw) * g.ws;
            let orow = sub_mut(out, (z * oh + y) * ow, ow)?;
            let mut x = 0;
            while x < ow {
                let mut acc = [L::zero(); BLOCK];
                for (&w, &t) in k.iter().zip(&g.taps) {
                    let at = base + t + x;
                    let src: &[L; BLOCK] = buf
                        .get(at..at + BLOCK)
                        .and_then(|s| s.try_into().ok())
                        .ok_or_else(oob)?;
                    for j in 0..BLOCK {
                        acc[j] = L::madd::<FMA>(acc[j], w, src[j]);
                    }
                }
                let n = BLOCK.min(ow - x);
                orow[x..x + n].copy_from_slice(&acc[..n]);
                x += BLOCK;
            }
        }
    }
    Ok(())
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::*;

    /// [`plane_impl`] with fused multiply-adds, compiled for the named target features.
    macro_rules! compiled_for {
        ($($name:ident: $features:literal),*) => {$(
            #[target_feature(enable = $features)]
            pub(super) unsafe fn $name<L: Lane>(src: &Src<'_, L>, k: &[L], out: &mut [L]) -> Result<()> {
                plane_impl::<L, true>(src, k, out)
            }
        )*};
    }

    compiled_for!(plane_avx512: "avx512f,fma", plane_avx2: "avx2,fma");
}

/// The vector extensions the direct kernel (and the max pool's planes) use.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(in crate::kernels) enum Simd {
    Avx512,
    Avx2,
    Portable,
}

pub(in crate::kernels) fn simd() -> Simd {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("fma")
        {
            return Simd::Avx512;
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return Simd::Avx2;
        }
    }
    Simd::Portable
}

fn plane<L: Lane>(level: Simd, src: &Src<'_, L>, k: &[L], out: &mut [L]) -> Result<()> {
    #[cfg(target_arch = "x86_64")]
    if L::FLOAT {
        match level {
            // SAFETY: the CPU has the features each copy is compiled for (`simd` checked them
            // at run time; a lower level is only ever asked for, never a higher one).
            Simd::Avx512 => return unsafe { x86::plane_avx512(src, k, out) },
            Simd::Avx2 => return unsafe { x86::plane_avx2(src, k, out) },
            Simd::Portable => {}
        }
    }
    let _ = level;
    plane_impl::<L, false>(src, k, out)
}

/// The depthwise convolution of `x` ([n, c, i...]) with `f` ([c * m, 1, k...]) into `y`
/// ([n, c * m, o...]), with the vector extensions `level` at most.
fn run<L: Lane>(x: &[L], f: &[L], ch: Chans, v: &Vol, y: &mut [L], level: Simd) -> Result<()> {
    let og = ch.o / ch.groups;
    let unit = numel(&[og, v.out_len])?;
    let g = Geo::new(v)?;
    let work = par::work(
        numel(&[ch.n, ch.o, v.out_len, v.k_len])?,
        par::cost::DEPTHWISE_TAP,
    );
    par::for_chunks_mut(y, unit, work, |start, ys| {
        let mut buf = alloc(g.len(), L::zero())?;
        for (i, yg) in ys.chunks_exact_mut(unit.max(1)).enumerate() {
            // Plane `p` of x (image p / c, channel p % c) gives output channels
            // (p % c) * og.. of the same image.
            let p = start / unit.max(1) + i;
            let gi = p % ch.groups.max(1);
            g.fill(v, sub(x, p * v.in_len, v.in_len)?, &mut buf)?;
            for (j, out) in yg.chunks_exact_mut(v.out_len.max(1)).enumerate() {
                let k = sub(f, (gi * og + j) * v.k_len, v.k_len)?;
                let src = Src {
                    buf: &buf,
                    g: &g,
                    v,
                };
                plane(level, &src, k, out)?;
            }
        }
        Ok(())
    })
}

/// The depthwise convolution (`ch.c == ch.groups`) of `x` with `f` into `y` (as
/// [`super::conv_fwd`]'s): false (nothing done) for compute types other than f32, f64 and i64.
pub(super) fn depthwise<T: LinalgScalar + Send + Sync>(
    x: &[T],
    f: &[T],
    ch: Chans,
    v: &Vol,
    y: &mut [T],
) -> Result<bool> {
    depthwise_at(x, f, ch, v, y, simd())
}

/// [`depthwise`] with the vector extensions `level` at most (tests compare the levels).
fn depthwise_at<T: LinalgScalar + Send + Sync>(
    x: &[T],
    f: &[T],
    ch: Chans,
    v: &Vol,
    y: &mut [T],
    level: Simd,
) -> Result<bool> {
    if ch.c != ch.groups {
        return Err(Error::kernel(
            "internal error: depthwise path for a grouped convolution",
        ));
    }
    macro_rules! as_lane {
        ($t:ty) => {
            if let (Some(x), Some(f), Some(y)) = (
                same::<T, $t>(x),
                same::<T, $t>(f),
                same_mut::<T, $t>(&mut *y),
            ) {
                run::<$t>(x, f, ch, v, y, level)?;
                return Ok(true);
            }
        };
    }
    as_lane!(f32);
    as_lane!(f64);
    as_lane!(i64);
    Ok(false)
}

/// Every level this CPU can run (tests run each kernel at all of them).
#[cfg(test)]
pub(in crate::kernels) fn levels() -> Vec<Simd> {
    let mut l = vec![Simd::Portable];
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            l.push(Simd::Avx2);
        }
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("fma")
        {
            l.push(Simd::Avx512);
        }
    }
    assert!(l.contains(&simd()));
    l
}

#[cfg(test)]
#[path = "depthwise_tests.rs"]
mod tests;
