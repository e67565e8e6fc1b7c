//! Vectorised f32 math for the transformer kernels: exp, the logistic function, erf, tanh and
//! GE's tanh-Gelu over slices, and the row kernels of softmax and layer normalisation.
//!
//! Each function is branch-free scalar code that LLVM vectorises; [`multiversion!`] compiles
//! its loop three times (AVX-512, AVX2 + FMA, the baseline) and picks one at run time. The
//! arithmetic is the same in all three (no fused multiply-add, fixed accumulation lanes), so
//! results are bit for bit the same on every CPU.
//!
//! Accuracy (against f64 references, by the dense sweeps in the tests below, which assert
//! these bounds; an ulp is the spacing of f32 at the exact result):
//!
//! | function | method | max error |
//! |---|---|---|
//! | [`exp`] | Cody–Waite reduction by ln 2, Cephes' degree-7 polynomial, 2^n in two factors | 1.5 ulp where the result is normal; below, gradual underflow (absolute error under 2^-149) |
//! | [`sigmoid`] | e = exp(-\|x\|) in f32, 1 / (1 + e) (or e / (1 + e) for x < 0) in f64 | 2 ulp |
//! | [`erf`] | Eigen's rational approximation x·P(x²)/Q(x²) on \|x\| ≤ 4 evaluated in f64, ±1 beyond | 2 ulp |
//! | [`erf_f32`] | the same rational function evaluated in f32 (coefficients rounded to f32, no FMA) | 8 ulp (largest near \|x\| = 3.2, where an ulp of the result is 6e-8) |
//! | [`gelu_erf`] | (1 + erf_f32(x·√½))·(0.5x), GE's GeluV2 order | 3 ulp of the result + \|x\|·2^-22 (the absolute part from 1 + erf: for x < -3 the result, under 4e-3·\|x\|, has an absolute error, as in onnxruntime's and GE's f32 kernels) |
//! | [`tanh`] | \|x\| < 0.625: Cephes' odd polynomial x + x³·P(x²) in f64; beyond: 1 - 2 / (e^2\|x\| + 1) with e in f32 (exp above), the rest in f64, the sign copied; ±1 from \|x\| = 10 | 2 ulp |
//! | [`softmax_rows`] | x - max exactly (two-sum), exp in f32, the sum and the product by its reciprocal in f64 | 2.5 ulp |
//!
//! NaN gives NaN; exp(+inf) = inf, exp(-inf) = 0; sigmoid and erf saturate at ±inf. The
//! kernels' own tests (tests/kernels) hold every f32 function to 3 ulp of numpy's float64.

/// The instruction set level this CPU has: 2 AVX-512 (F, VL, DQ), 1 AVX2 with FMA, 0 neither.
#[inline]
pub(crate) fn level() -> u8 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512vl")
            && std::arch::is_x86_feature_detected!("avx512dq")
        {
            return 2;
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return 1;
        }
    }
    0
}

/// Defines `fn $name(args)` whose body is compiled for AVX-512, for AVX2 + FMA and for the
/// baseline, the version run chosen by [`level`]. The body must be plain safe code.
macro_rules! multiversion {
    ($(#[$m:meta])* $vis:vis fn $name:ident($($a:ident: $t:ty),* $(,)?) $(-> $r:ty)? $body:block) => {
        $(#[$m])*
        $vis fn $name($($a: $t),*) $(-> $r)? {
            #[inline(always)]
            fn imp($($a: $t),*) $(-> $r)? $body
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,fma")]
                fn v4($($a: $t),*) $(-> $r)? {
                    imp($($a),*)
                }
                #[target_feature(enable = "avx2,fma")]
                fn v3($($a: $t),*) $(-> $r)? {
                    imp($($a),*)
                }
                match $crate::kernels::vmath::level() {
                    // SAFETY: level() 2 means this CPU has every feature v4 enables.
                    2 => return unsafe { v4($($a),*) },
                    // SAFETY: level() 1 means this CPU has AVX2 and FMA, which v3 enables.
                    1 => return unsafe { v3($($a),*) },
                    _ => {}
                }
            }
            imp($($a),*)
        }
    };
}

/// `a` if `c`, else `b` (a select LLVM vectorises).
#[inline(always)]
fn pick(c: bool, a: f32, b: f32) -> f32 {
    if c {
        a
    } else {
        b
    }
}

/// Polynomial `cs[0] x^(n-1) + ... + cs[n-1]` by Horner's rule.
#[inline(always)]
fn horner(x: f32, cs: &[f32]) -> f32 {
    let mut p = cs[0];
    for &c in &cs[1..] {
        p = p * x + c;
    }
    p
}

/// [`horner`] in f64.
#[inline(always)]
fn horner64(x: f64, cs: &[f64]) -> f64 {
    let mut p = cs[0];
    for &c in &cs[1..] {
        p = p * x + c;
    }
    p
}

/// e^x (2 ulp; see the module table).
#[inline(always)]
pub(crate) fn exp(x: f32) -> f32 {
    // Below LO the result is under half the smallest subnormal; above HI it overflows.
    const LO: f32 = -104.0;
    const HI: f32 = 88.722_84;
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    // ln 2 in two parts: C1 has few bits, so n * C1 is exact for |n| < 2^9.
    const C1: f32 = 0.693_359_4;
    const C2: f32 = -2.121_944_4e-4;
    // 1.5 * 2^23: adding it rounds to an integer (to nearest) in the low mantissa bits.
    const ROUND: f32 = 12_582_912.0;
    const P: [f32; 6] = [
        1.987_569_1e-4,
        1.398_199_9e-3,
        8.333_452e-3,
        4.166_579_6e-2,
        0.166_666_65,
        0.5,
    ];
    // Comparisons are false for NaN, which passes through unclamped.
    let t = pick(x < LO, LO, x);
    let t = pick(t > HI, HI, t);
    let k = t * LOG2E + ROUND;
    let n = k - ROUND;
    let ni = (k.to_bits() as i32).wrapping_sub(0x4B40_0000);
    let r = t - n * C1 - n * C2;
    let y = horner(r, &P) * r * r + r + 1.0;
    // 2^n as two factors, so that n = 128 (near the top) and n < -126 (subnormal results)
    // are both reached exactly.
    let n1 = ni >> 1;
    let n2 = ni.wrapping_sub(n1);
    let s1 = f32::from_bits((n1.wrapping_add(127) as u32).wrapping_shl(23));
    let s2 = f32::from_bits((n2.wrapping_add(127) as u32).wrapping_shl(23));
    let y = y * s1 * s2;
    let y = pick(x > HI, f32::INFINITY, y);
    pick(x < LO, 0.0, y)
}

/// The logistic function 1 / (1 + e^-x): e^-|x| only, so no overflow and no loss of a small
/// result to 1 / inf.
#[inline(always)]
pub(crate) fn sigmoid(x: f32) -> f32 {
    let e = f64::from(exp(-x.abs()));
    let r = 1.0 / (1.0 + e);
    (if x >= 0.0 { r } else { e * r }) as f32
}

/// The numerator of Eigen's `generic_fast_erf_float`: erf(x) = x P(x^2) / Q(x^2) on |x| <= 4.
const ERF_P: [f64; 7] = [
    -2.726_142_258_013_06e-10,
    2.770_681_424_959_02e-8,
    -2.101_024_020_825_08e-6,
    -5.692_506_394_623_46e-5,
    -7.349_906_303_268_55e-4,
    -2.954_599_808_540_25e-3,
    -1.609_603_332_624_15e-2,
];
/// The denominator of Eigen's `generic_fast_erf_float`.
const ERF_Q: [f64; 5] = [
    -1.456_607_184_649_96e-5,
    -2.133_740_552_789_05e-4,
    -1.682_826_974_382_03e-3,
    -7.373_329_167_204_68e-3,
    -1.426_473_905_141_89e-2,
];

/// `a` rounded to f32, element by element.
const fn to_f32<const N: usize>(a: [f64; N]) -> [f32; N] {
    let mut out = [0.0f32; N];
    let mut i = 0;
    while i < N {
        out[i] = a[i] as f32;
        i += 1;
    }
    out
}
const ERF_P32: [f32; 7] = to_f32(ERF_P);
const ERF_Q32: [f32; 5] = to_f32(ERF_Q);

/// erf(x): Eigen's `generic_fast_erf_float` rational function, evaluated in f64.
#[inline(always)]
pub(crate) fn erf(x: f32) -> f32 {
    let c = pick(x > 4.0, 4.0, x);
    let c = f64::from(pick(c < -4.0, -4.0, c));
    let x2 = c * c;
    (c * horner64(x2, &ERF_P) / horner64(x2, &ERF_Q)) as f32
}

/// erf(x) all in f32: the rational function of [`erf`] with its coefficients rounded to f32
/// (8 ulp, 4.5e-7 absolute; see the module table). Twice [`erf`]'s vector lanes and an f32
/// division instead of an f64 one.
#[inline(always)]
pub(crate) fn erf_f32(x: f32) -> f32 {
    let c = pick(x > 4.0, 4.0, x);
    let c = pick(c < -4.0, -4.0, c);
    let x2 = c * c;
    c * horner(x2, &ERF_P32) / horner(x2, &ERF_Q32)
}

/// tanh(x) (2 ulp; see the module table). -0 stays -0; NaN gives NaN.
#[inline(always)]
pub(crate) fn tanh(x: f32) -> f32 {
    const P: [f64; 5] = [
        -5.704_988_727_45e-3,
        2.063_908_879_54e-2,
        -5.373_971_555_31e-2,
        1.333_144_220_36e-1,
        -3.333_328_194_22e-1,
    ];
    let a = x.abs();
    // Small |x|: the polynomial (1 - 2 / (e + 1) would cancel).
    let xd = f64::from(x);
    let z = xd * xd;
    let small = xd * (1.0 + z * horner64(z, &P));
    // Beyond 10, tanh rounds to 1 (and e stays finite).
    let e = f64::from(exp(2.0 * pick(a > 10.0, 10.0, a)));
    let big = f32::copysign((1.0 - 2.0 / (e + 1.0)) as f32, x);
    // NaN fails the comparison and takes `big`, which is NaN (exp passes NaN through).
    pick(a < 0.625, small as f32, big)
}

/// GE's Gelu: the tanh approximation 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3),
/// as x * sigmoid(2u) (no cancellation for negative x).
#[inline(always)]
pub(crate) fn gelu_tanh(x: f32) -> f32 {
    x * sigmoid(1.595_769_2 * (x + 0.044_715 * x * x * x))
}

/// GeluV2 with `approximate` "none", the erf form x Phi(x) = 0.5 x (1 + erf(x / sqrt(2))),
/// as GE's kernel computes it: (1 + erf(x * 0.70710678)) * (0.5 x), erf by [`erf_f32`]. Within
/// 3 ulp of the result plus |x| 2^-22 (see the module table): as in any f32 evaluation of
/// 1 + erf, the result for x below about -3 keeps an absolute error, not a relative one.
#[inline(always)]
pub(crate) fn gelu_erf(x: f32) -> f32 {
    (1.0 + erf_f32(x * std::f32::consts::FRAC_1_SQRT_2)) * (0.5 * x)
}

/// A function of this module applied over slices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum VFn {
    Exp,
    Sigmoid,
    Erf,
    Tanh,
    GeluTanh,
    GeluErf,
}

impl VFn {
    /// The vectorised function that computes the unary operator `op` on f32 with attribute
    /// values `params` (in `unary_params`' order), if there is one: Exp only with base e,
    /// scale 1 and shift 0.
    pub(crate) fn of_op(op: &str, params: &[f64]) -> Option<VFn> {
        Some(match op {
            "Exp" if params == [-1.0, 1.0, 0.0] => VFn::Exp,
            "Sigmoid" => VFn::Sigmoid,
            "Erf" => VFn::Erf,
            "Tanh" => VFn::Tanh,
            "Gelu" => VFn::GeluTanh,
            // GeluV2's `approximate`: 0 "none" (erf), 1 "tanh".
            "GeluV2" if params == [0.0] => VFn::GeluErf,
            "GeluV2" if params == [1.0] => VFn::GeluTanh,
            _ => return None,
        })
    }

    /// The function at one point (the same arithmetic as over a slice).
    #[cfg(test)]
    pub(crate) fn at(self, x: f32) -> f32 {
        match self {
            VFn::Exp => exp(x),
            VFn::Sigmoid => sigmoid(x),
            VFn::Erf => erf(x),
            VFn::Tanh => tanh(x),
            VFn::GeluTanh => gelu_tanh(x),
            VFn::GeluErf => gelu_erf(x),
        }
    }
}

/// Defines a slice map (`y[i] = f(x[i])`) and an in-place one (`y[i] = f(y[i])`) for `f`.
macro_rules! slice_fns {
    ($map:ident, $inplace:ident, $f:ident) => {
        multiversion! {
            fn $map(x: &[f32], y: &mut [f32]) {
                for (y, &x) in y.iter_mut().zip(x) {
                    *y = $f(x);
                }
            }
        }
        multiversion! {
            fn $inplace(y: &mut [f32]) {
                for y in y.iter_mut() {
                    *y = $f(*y);
                }
            }
        }
    };
}
slice_fns!(exp_map, exp_inplace, exp);
slice_fns!(sigmoid_map, sigmoid_inplace, sigmoid);
slice_fns!(erf_map, erf_inplace, erf);
slice_fns!(tanh_map, tanh_inplace, tanh);
slice_fns!(gelu_map, gelu_inplace, gelu_tanh);
slice_fns!(gelu_erf_map, gelu_erf_inplace, gelu_erf);

/// `y[i] = f(x[i])` over the shorter of the two slices.
pub(crate) fn map(f: VFn, x: &[f32], y: &mut [f32]) {
    match f {
        VFn::Exp => exp_map(x, y),
        VFn::Sigmoid => sigmoid_map(x, y),
        VFn::Erf => erf_map(x, y),
        VFn::Tanh => tanh_map(x, y),
        VFn::GeluTanh => gelu_map(x, y),
        VFn::GeluErf => gelu_erf_map(x, y),
    }
}

/// `y[i] = f(y[i])`.
pub(crate) fn map_in_place(f: VFn, y: &mut [f32]) {
    match f {
        VFn::Exp => exp_inplace(y),
        VFn::Sigmoid => sigmoid_inplace(y),
        VFn::Erf => erf_inplace(y),
        VFn::Tanh => tanh_inplace(y),
        VFn::GeluTanh => gelu_inplace(y),
        VFn::GeluErf => gelu_erf_inplace(y),
    }
}

/// `y[i] = f(x[i])` (`x` None: `y[i] = f(y[i])`), split across the run's threads when long.
pub(crate) fn map_par(f: VFn, x: Option<&[f32]>, y: &mut [f32]) {
    // About four element-wise operations' worth of work per element.
    let work = y.len().saturating_mul(4);
    let _ = crate::par::for_chunks_mut(y, 1, work, |start, part| {
        match x {
            Some(x) => map(f, &x[start..start + part.len()], part),
            None => map_in_place(f, part),
        }
        Ok(())
    });
}

/// Accumulation lanes of the row sums (a fixed order: the same result at every vector width).
const LANES: usize = 8;

/// The sum of `f(x[i])` in f64, over [`LANES`] interleaved partial sums added in order.
#[inline(always)]
fn sum64(x: &[f32], f: impl Fn(f64) -> f64) -> f64 {
    let mut acc = [0.0f64; LANES];
    let mut chunks = x.chunks_exact(LANES);
    for c in &mut chunks {
        for (a, &v) in acc.iter_mut().zip(c) {
            *a += f(f64::from(v));
        }
    }
    for (a, &v) in acc.iter_mut().zip(chunks.remainder()) {
        *a += f(f64::from(v));
    }
    acc.iter().sum()
}

/// The largest element (NaN ignored, as `f32::max` does; -inf for an empty row).
#[inline(always)]
fn row_max(x: &[f32]) -> f32 {
    let mut acc = [f32::NEG_INFINITY; 16];
    let mut chunks = x.chunks_exact(16);
    for c in &mut chunks {
        for (a, &v) in acc.iter_mut().zip(c) {
            *a = a.max(v);
        }
    }
    let mut m = chunks
        .remainder()
        .iter()
        .fold(f32::NEG_INFINITY, |m, &v| m.max(v));
    for a in acc {
        m = m.max(a);
    }
    m
}

multiversion! {
    /// Softmax (or log-softmax with `log`) of each row of `n` elements of `x` into `y`: x - max
    /// exactly (the f32 difference and its rounding error), exp in f32, the sum and the
    /// scaling by its reciprocal in f64, each result rounded once.
    pub(crate) fn softmax_rows(x: &[f32], y: &mut [f32], n: usize, log: bool) {
        if n == 0 {
            return;
        }
        for (x, y) in x.chunks_exact(n).zip(y.chunks_exact_mut(n)) {
            let max = row_max(x);
            if log {
                let l = sum64(x, |v| f64::from(exp((v - f64::from(max)) as f32))).ln();
                for (y, &v) in y.iter_mut().zip(x) {
                    *y = ((f64::from(v) - f64::from(max)) - l) as f32;
                }
                continue;
            }
            for (y, &v) in y.iter_mut().zip(x) {
                // Two-sum: d + err = v - max exactly; e^(d + err) = e^d (1 + err) to first order.
                let d = v - max;
                let bv = d - v;
                let err = (v - (d - bv)) + (-max - bv);
                let e = exp(d);
                // A -inf element (a mask) has d = -inf, e = 0 and err NaN: its result is 0.
                *y = e + pick(err.is_finite(), e * err, 0.0);
            }
            // A product by the reciprocal (rounded in f64) is the quotient within 2^-52 relative
            // before the one f32 rounding: 12% faster than dividing on a 197-wide row.
            let r = 1.0 / sum64(y, |e| e);
            for y in y.iter_mut() {
                *y = (f64::from(*y) * r) as f32;
            }
        }
    }
}

multiversion! {
    /// Layer normalisation of each row of `gamma.len()` elements of `x` into `y`:
    /// `(x - mean) / sqrt(var + eps) * gamma + beta` in f64, rounded once; each row's mean and
    /// (biased) variance into `stats`.
    pub(crate) fn layer_norm_rows(
        x: &[f32],
        y: &mut [f32],
        gamma: &[f64],
        beta: &[f64],
        eps: f64,
        stats: &mut [(f64, f64)],
    ) {
        let n = gamma.len();
        if n == 0 {
            return;
        }
        for ((x, y), st) in x.chunks_exact(n).zip(y.chunks_exact_mut(n)).zip(stats) {
            let mean = sum64(x, |v| v) / n as f64;
            let var = sum64(x, |v| (v - mean) * (v - mean)) / n as f64;
            let r = 1.0 / (var + eps).sqrt();
            for (((y, &v), &g), &b) in y.iter_mut().zip(x).zip(gamma).zip(beta) {
                *y = ((f64::from(v) - mean) * r * g + b) as f32;
            }
            *st = (mean, var);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `points + 1` evenly spaced values from `lo` to `hi`, and the magnitudes from 1e-30 up in
    /// steps of 1% (both signs) that lie in that range: a dense sweep.
    fn sweep(lo: f32, hi: f32, points: usize) -> Vec<f32> {
        let mut v: Vec<f32> = (0..=points)
            .map(|i| lo + (hi - lo) * (i as f32 / points as f32))
            .collect();
        let mut t = 1e-30f32;
        while t < hi.abs().max(lo.abs()) {
            v.extend([t, -t].into_iter().filter(|x| (lo..=hi).contains(x)));
            t *= 1.01;
        }
        v
    }

    /// The spacing of f32 at `x` (the next f32 up from |x| minus it), 2^-149 at least.
    fn ulp(x: f64) -> f64 {
        let f = x.abs() as f32;
        f64::from(f32::from_bits(f.to_bits() + 1)) - f64::from(f)
    }

    /// The largest error of `f` against `want` on `xs`, in ulps of the exact result.
    fn max_ulps(xs: &[f32], f: impl Fn(f32) -> f32, want: impl Fn(f64) -> f64) -> f64 {
        let mut worst = 0.0f64;
        for &x in xs {
            let (g, w) = (f64::from(f(x)), want(f64::from(x)));
            let e = (g - w).abs() / ulp(w);
            assert!(!e.is_nan(), "{x}: {g} vs {w}");
            worst = worst.max(e);
        }
        worst
    }

    #[test]
    fn exp_is_within_its_bound() {
        let e = max_ulps(&sweep(-87.3, 88.72, 2_000_000), exp, f64::exp);
        assert!(e <= 1.5, "exp: {e} ulp");
        // Subnormal results: within one subnormal step.
        let e = max_ulps(&sweep(-104.5, -87.3, 200_000), exp, f64::exp);
        assert!(e <= 1.0, "exp, subnormal results: {e}");
        assert_eq!(exp(f32::INFINITY), f32::INFINITY);
        assert_eq!(exp(88.73), f32::INFINITY);
        assert_eq!(exp(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp(-200.0), 0.0);
        assert_eq!(exp(0.0), 1.0);
        assert!(exp(f32::NAN).is_nan());
        assert!(exp(88.722_83).is_finite());
    }

    #[test]
    fn sigmoid_and_erf_are_within_two_ulp() {
        let xs = sweep(-30.0, 30.0, 2_000_000);
        let e = max_ulps(&xs, sigmoid, |x| 1.0 / (1.0 + (-x).exp()));
        assert!(e <= 2.0, "sigmoid: {e} ulp");
        let e = max_ulps(&xs, erf, libm::erf);
        assert!(e <= 2.0, "erf: {e} ulp");
        assert!(sigmoid(-100.0) > 0.0 && sigmoid(-100.0) < 1e-43);
        assert_eq!(sigmoid(f32::INFINITY), 1.0);
        assert_eq!(sigmoid(f32::NEG_INFINITY), 0.0);
        assert!(sigmoid(f32::NAN).is_nan());
        assert_eq!(erf(f32::INFINITY), 1.0);
        assert_eq!(erf(f32::NEG_INFINITY), -1.0);
        assert_eq!(erf(1e30), 1.0);
        assert!(erf(f32::NAN).is_nan());
        assert_eq!(erf(0.0), 0.0);
    }

    #[test]
    fn tanh_is_within_two_ulp() {
        let e = max_ulps(&sweep(-20.0, 20.0, 2_000_000), tanh, f64::tanh);
        assert!(e <= 2.0, "tanh: {e} ulp");
        // Around the switch between the polynomial and the exp form, densely.
        let e = max_ulps(&sweep(0.5, 0.75, 500_000), tanh, f64::tanh);
        assert!(e <= 2.0, "tanh near 0.625: {e} ulp");
        assert_eq!(tanh(f32::INFINITY), 1.0);
        assert_eq!(tanh(f32::NEG_INFINITY), -1.0);
        assert_eq!(tanh(1e30), 1.0);
        assert_eq!(tanh(-9.5), -1.0);
        assert!(tanh(f32::NAN).is_nan());
        assert_eq!(tanh(0.0).to_bits(), 0.0f32.to_bits());
        assert_eq!(tanh(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(tanh(1e-30), 1e-30);
        assert_eq!(tanh(f32::from_bits(1)), f32::from_bits(1));
    }

    /// erf_f32 within 8 ulp of erf over a dense sweep (the module table's bound), and the
    /// erf-Gelu within 3 ulp + |x| 2^-22 of x Phi(x) in f64 (0.5 x erfc(-x / sqrt 2): no
    /// cancellation in the reference).
    #[test]
    fn erf_f32_and_gelu_erf_are_within_their_bounds() {
        let xs = sweep(-8.0, 8.0, 2_000_000);
        let e = max_ulps(&xs, erf_f32, libm::erf);
        assert!(e <= 8.0, "erf_f32: {e} ulp");
        // Where the f64 evaluation is 2 ulp, the f32 one is more: the bound is not loose.
        assert!(e > 4.0, "erf_f32: {e} ulp");
        assert_eq!(erf_f32(f32::INFINITY), 1.0);
        assert_eq!(erf_f32(f32::NEG_INFINITY), -1.0);
        assert_eq!(erf_f32(1e30), 1.0);
        assert_eq!(erf_f32(0.0), 0.0);
        assert!(erf_f32(f32::NAN).is_nan());
        let mut worst = 0.0f64;
        for x in sweep(-14.0, 14.0, 2_000_000) {
            let xd = f64::from(x);
            let w = 0.5 * xd * libm::erfc(-xd * std::f64::consts::FRAC_1_SQRT_2);
            let g = f64::from(gelu_erf(x));
            let tol = 3.0 * ulp(w) + xd.abs() * 2f64.powi(-22);
            assert!(
                (g - w).abs() <= tol + 1e-44,
                "gelu_erf({x}) = {g}, want {w}"
            );
            worst = worst.max((g - w).abs() / tol);
        }
        assert!(worst > 0.5, "the bound is loose: {worst}");
        assert_eq!(gelu_erf(0.0), 0.0);
        assert_eq!(gelu_erf(f32::INFINITY), f32::INFINITY);
        assert!(gelu_erf(f32::NAN).is_nan());
        // Large positive x: exactly x (erf rounds to 1).
        assert_eq!(gelu_erf(6.0), 6.0);
        assert_eq!(VFn::of_op("GeluV2", &[0.0]), Some(VFn::GeluErf));
        assert_eq!(VFn::of_op("GeluV2", &[1.0]), Some(VFn::GeluTanh));
        assert_eq!(VFn::of_op("GeluV2", &[]), None);
    }

    /// Gelu within 3 ulp of its formula in f64 with u rounded in f32 (as the kernel tests
    /// check it): exp(-2u) multiplies u's rounding by |2u|.
    #[test]
    fn gelu_follows_its_formula() {
        for x in sweep(-12.0, 12.0, 500_000) {
            let u = 1.595_769_2_f32 * (x + 0.044_715 * x * x * x);
            let w = f64::from(x) / (1.0 + (-f64::from(u)).exp());
            let g = f64::from(gelu_tanh(x));
            let tol = 3.0 * f64::from(f32::EPSILON) * w.abs() * (1.0 + f64::from(u.abs()));
            assert!((g - w).abs() <= tol + 1e-44, "gelu({x}) = {g}, want {w}");
        }
    }

    /// Every dispatch level gives the same bits as the scalar function, on lengths that are
    /// and are not multiples of the vector widths, in place and not.
    #[test]
    fn slices_agree_with_the_scalar_functions() {
        for f in [
            VFn::Exp,
            VFn::Sigmoid,
            VFn::Erf,
            VFn::Tanh,
            VFn::GeluTanh,
            VFn::GeluErf,
        ] {
            for n in [0, 1, 7, 16, 33, 1000] {
                let x: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin() * 12.0).collect();
                let mut y = vec![0.0; n];
                map(f, &x, &mut y);
                let mut z = x.clone();
                map_in_place(f, &mut z);
                for i in 0..n {
                    let w = f.at(x[i]);
                    assert_eq!(y[i].to_bits(), w.to_bits(), "{f:?}({})", x[i]);
                    assert_eq!(z[i].to_bits(), w.to_bits(), "{f:?}({})", x[i]);
                }
            }
        }
        assert_eq!(VFn::of_op("Gelu", &[]), Some(VFn::GeluTanh));
        assert_eq!(VFn::of_op("Tanh", &[]), Some(VFn::Tanh));
        assert_eq!(VFn::of_op("Exp", &[-1.0, 1.0, 0.0]), Some(VFn::Exp));
        assert_eq!(VFn::of_op("Exp", &[2.0, 1.0, 0.0]), None);
        assert_eq!(VFn::of_op("Log", &[-1.0, 1.0, 0.0]), None);
        // Split across two threads: the same bits.
        let x: Vec<f32> = (0..300_000)
            .map(|i| (i as f32 * 0.001).sin() * 9.0)
            .collect();
        let (mut y1, mut y2) = (vec![0.0; x.len()], vec![0.0; x.len()]);
        map_par(VFn::Sigmoid, Some(&x), &mut y1);
        crate::par::run_with(2, || {
            map_par(VFn::Sigmoid, Some(&x), &mut y2);
            Ok(())
        })
        .unwrap();
        assert_eq!(y1, y2);
        let mut y3 = x.clone();
        map_par(VFn::Sigmoid, None, &mut y3);
        assert_eq!(y1, y3);
    }

    fn softmax64(x: &[f32], log: bool) -> Vec<f64> {
        let m = x
            .iter()
            .map(|&v| f64::from(v))
            .fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = x.iter().map(|&v| (f64::from(v) - m).exp()).sum();
        x.iter()
            .map(|&v| {
                let d = f64::from(v) - m;
                if log {
                    d - s.ln()
                } else {
                    d.exp() / s
                }
            })
            .collect()
    }

    /// Masked elements (-inf) get 0 (log: -inf), the others the softmax of the rest; a NaN
    /// makes its row NaN.
    #[test]
    fn softmax_rows_take_masks_and_nan() {
        let ninf = f32::NEG_INFINITY;
        let x = [1.0, ninf, 2.0, ninf, 0.5, f32::NAN];
        for log in [false, true] {
            let mut y = [0.0f32; 6];
            softmax_rows(&x, &mut y, 3, log);
            let want = softmax64(&[1.0, 2.0], log);
            assert!((f64::from(y[0]) - want[0]).abs() < 1e-6, "{y:?}");
            assert!((f64::from(y[2]) - want[1]).abs() < 1e-6, "{y:?}");
            assert_eq!(y[1], if log { ninf } else { 0.0 });
            assert!(y[3..].iter().all(|v| v.is_nan()), "{y:?}");
        }
    }

    /// Rows as wide as attention's (ViT's 197, a 1000-class head, 1027: remainders after the
    /// vector lanes), values over a 60-wide range: every result within 2.5 ulp of f64's.
    #[test]
    fn wide_softmax_rows_are_within_their_bound() {
        for n in [197usize, 1000, 1027] {
            let x: Vec<f32> = (0..3 * n)
                .map(|i| ((i * 7919) % 6007) as f32 / 100.0 - 30.0)
                .collect();
            let mut y = vec![0.0; 3 * n];
            softmax_rows(&x, &mut y, n, false);
            for (xr, yr) in x.chunks(n).zip(y.chunks(n)) {
                for (g, w) in yr.iter().zip(softmax64(xr, false)) {
                    assert!(
                        (f64::from(*g) - w).abs() <= 2.5 * ulp(w),
                        "n {n}: {g} vs {w}"
                    );
                }
            }
        }
    }

    proptest! {
        #[test]
        fn softmax_rows_match_f64(
            rows in 1usize..4,
            n in 1usize..70,
            seed in proptest::collection::vec(-30.0f32..30.0, 280),
            log in any::<bool>(),
        ) {
            let x: Vec<f32> = seed.iter().cycle().take(rows * n).copied().collect();
            let mut y = vec![0.0; rows * n];
            softmax_rows(&x, &mut y, n, log);
            for (xr, yr) in x.chunks(n).zip(y.chunks(n)) {
                let terms = xr.iter().map(|v| f64::from(*v).abs()).fold(0.0, f64::max) * 2.0 + 10.0;
                for (g, w) in yr.iter().zip(softmax64(xr, log)) {
                    // Log: the kernel tests' rtol * the terms' magnitudes; else 2.5 ulp.
                    let tol = if log { 3.6e-7 * terms } else { 2.5 * ulp(w) };
                    prop_assert!((f64::from(*g) - w).abs() <= tol, "{g} vs {w}");
                }
            }
        }

        #[test]
        fn layer_norm_rows_match_f64(
            rows in 1usize..4,
            n in 1usize..70,
            seed in proptest::collection::vec(-1000.0f32..1000.0, 280),
            eps in 1e-7f64..1e-2,
        ) {
            let x: Vec<f32> = seed.iter().cycle().take(rows * n).copied().collect();
            let gamma: Vec<f64> = (0..n).map(|i| 1.0 + i as f64 * 0.01).collect();
            let beta: Vec<f64> = (0..n).map(|i| i as f64 * -0.1).collect();
            let mut y = vec![0.0; rows * n];
            let mut st = vec![(0.0, 0.0); rows];
            layer_norm_rows(&x, &mut y, &gamma, &beta, eps, &mut st);
            for ((xr, yr), &(m, v)) in x.chunks(n).zip(y.chunks(n)).zip(&st) {
                let xf: Vec<f64> = xr.iter().map(|&v| f64::from(v)).collect();
                let mean = xf.iter().sum::<f64>() / n as f64;
                let var = xf.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n as f64;
                prop_assert!((m - mean).abs() <= 1e-9 * mean.abs().max(1.0));
                prop_assert!((v - var).abs() <= 1e-9 * var.max(1.0));
                for (i, (g, x)) in yr.iter().zip(&xf).enumerate() {
                    let w = (x - mean) / (var + eps).sqrt() * gamma[i] + beta[i];
                    prop_assert!((f64::from(*g) - w).abs() <= 1e-6 * w.abs().max(1.0));
                }
            }
        }
    }
}
