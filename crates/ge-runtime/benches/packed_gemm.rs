//! Issue 18, "filters packed once": a prototype f32 GEMM for the convolution case against the
//! `gemm` crate as `gemm_into` calls it (one thread). `c = a @ b` with `a` the filter (M x K,
//! packed once into micro-panels before timing), `b` an unfolded tile (K x N, row-major), `c`
//! row-major; AVX-512F micro-kernels (std::arch), cache blocking over K. Two orientations: the
//! normal one (8 rows of `a` broadcast x 32 columns of `b` in two vectors, `b` packed into
//! 32-column panels on every call) and the transposed one (32 rows of `a` in two vectors x 7
//! columns of `b` broadcast, `b` read in place, or from 7-column panels that an unfolding would
//! write directly). Shapes: ResNet-50's convolutions, N cut into the tiles the convolution
//! engine multiplies (`tile_rows`: about 512 KiB of columns, whole image rows, all of N for a
//! 1x1 kernel read in place); and whole 3x3 convolutions, unfolding included. The prototype
//! was not adopted: docs/perf-runtime.md, "Filters packed once, session 25", has the numbers.
//! Its normal orientation, with the weight of a MatMul/Gemm against a constant as the packed
//! operand and the activations read in place, became `src/kernels/matmul/packed.rs` in session
//! 27 (docs/perf-runtime.md, "Weights packed once, session 27").
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use std::time::Duration;

/// (M, K, N, image width, 1x1 read in place).
pub(crate) const SHAPES: &[(usize, usize, usize, usize, bool)] = &[
    (64, 576, 3136, 56, false),
    (128, 1152, 784, 28, false),
    (256, 2304, 196, 14, false),
    (512, 4608, 49, 7, false),
    (256, 64, 3136, 56, true),
    (64, 256, 3136, 56, true),
    (2048, 512, 49, 7, true),
];

/// Columns per tile as the convolution engine cuts them (nd.rs `tile_rows`, one thread).
pub(crate) fn tile_cols(k: usize, n: usize, ow: usize, direct: bool) -> usize {
    if direct {
        return n;
    }
    let cols = ((512 << 10) / (k * 4)).max(256);
    (cols.div_ceil(ow) * ow).min(n)
}

/// The current path: the `gemm` crate on row-major views, as `matmul::thin` calls it.
#[allow(clippy::too_many_arguments)]
pub(crate) fn gemm_crate(
    m: usize,
    k: usize,
    n: usize,
    a: &[f32],
    b: &[f32],
    ldb: usize,
    c: &mut [f32],
    ldc: usize,
) {
    assert!(m > 0 && n > 0 && k > 0 && a.len() >= m * k);
    assert!(b.len() >= (k - 1) * ldb + n && c.len() >= (m - 1) * ldc + n);
    // SAFETY: a is m x k row-major, b k x n with row stride ldb, c m x n with row stride ldc,
    // all inside their slices (asserted above); c is borrowed mutably, so it overlaps neither.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c.as_mut_ptr(),
            1,
            ldc as isize,
            false,
            a.as_ptr(),
            1,
            k as isize,
            b.as_ptr(),
            1,
            ldb as isize,
            0.0f32,
            1.0f32,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod packed {
    use std::arch::x86_64::*;

    /// K steps per block: the B micro-panel (KC x NR) of the normal orientation stays in L1
    /// (KC = 128 and 512 measured within noise of 256); MC rows of A per block; KCT: K steps
    /// per block of the transposed orientation (its scalar transposed store is paid per block).
    const KC: usize = 256;
    const MC: usize = 128;
    const KCT: usize = 1024;

    /// `a` (m x k row-major) as MR-row panels: [m / MR][k][MR], zero-padded rows.
    pub fn pack_a<const MR: usize>(m: usize, k: usize, a: &[f32]) -> Vec<f32> {
        let panels = m.div_ceil(MR);
        let mut p = vec![0.0; panels * k * MR];
        for i in 0..m {
            let (pi, r) = (i / MR, i % MR);
            for j in 0..k {
                p[(pi * k + j) * MR + r] = a[i * k + j];
            }
        }
        p
    }

    /// `b` (k x n, row stride ldb) as NR-column panels: [n / NR][k][NR], zero-padded columns.
    pub fn pack_b<const NV: usize>(k: usize, n: usize, b: &[f32], ldb: usize, p: &mut Vec<f32>) {
        pack_b_nr(k, n, b, ldb, 16 * NV, p)
    }

    /// [`pack_b`] with panels of `nr` columns.
    pub fn pack_b_nr(k: usize, n: usize, b: &[f32], ldb: usize, nr: usize, p: &mut Vec<f32>) {
        let panels = n.div_ceil(nr);
        p.clear();
        p.resize(panels * k * nr, 0.0);
        for pj in 0..panels {
            let j0 = pj * nr;
            let w = nr.min(n - j0);
            let dst = &mut p[pj * k * nr..(pj + 1) * k * nr];
            for r in 0..k {
                dst[r * nr..r * nr + w].copy_from_slice(&b[r * ldb + j0..r * ldb + j0 + w]);
            }
        }
    }

    /// The transposed orientation (few columns): one (16 NV) x NP tile of c, vectors along
    /// c's rows (`a` packed with MR = 16 NV), `b`'s NP columns broadcast (panels of NP).
    #[target_feature(enable = "avx512f")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn tkernel<const NV: usize, const NP: usize>(
        kc: usize,
        a: *const f32,
        b: *const f32,
        bs: usize,
        c: *mut f32,
        ldc: usize,
        rows: usize,
        cols: usize,
        acc: bool,
    ) {
        let mut s = [[_mm512_setzero_ps(); NV]; NP];
        let (mut a, mut b) = (a, b);
        for _ in 0..kc {
            let mut av = [_mm512_setzero_ps(); NV];
            for (v, x) in av.iter_mut().enumerate() {
                *x = _mm512_loadu_ps(a.add(16 * v));
            }
            for (p, sp) in s.iter_mut().enumerate() {
                let bp = _mm512_set1_ps(*b.add(p));
                for v in 0..NV {
                    sp[v] = _mm512_fmadd_ps(av[v], bp, sp[v]);
                }
            }
            a = a.add(16 * NV);
            b = b.add(bs);
        }
        for (p, sp) in s.iter().enumerate().take(cols) {
            for (v, &x) in sp.iter().enumerate() {
                let mut t = [0.0f32; 16];
                _mm512_storeu_ps(t.as_mut_ptr(), x);
                for (l, &t) in t.iter().enumerate().take(rows.saturating_sub(16 * v)) {
                    let q = c.add((16 * v + l) * ldc + p);
                    *q = if acc { *q + t } else { t };
                }
            }
        }
    }

    /// `c = a @ b` in the transposed orientation: `ap` from `pack_a::<{16 * NV}>`, `bp` from
    /// `pack_b_nr(.., NP, ..)`.
    pub fn gemm_t<const NV: usize, const NP: usize>(
        m: usize,
        k: usize,
        n: usize,
        ap: &[f32],
        bp: &[f32],
        c: &mut [f32],
        ldc: usize,
    ) {
        assert!(bp.len() >= n.div_ceil(NP) * k * NP);
        // The panel of column j0 from step pc: kc steps of NP values each, NP apart.
        drive_t::<NV, NP>(m, k, n, ap, c, ldc, |j0, pc| {
            (bp[(j0 * k + pc * NP)..].as_ptr(), NP)
        });
    }

    /// [`gemm_t`] reading `b` (k x n, row stride ldb) in place: each step broadcasts NP
    /// consecutive values of one row; only a last panel of fewer than NP columns is copied
    /// (zero-padded) into `tail`.
    #[allow(clippy::too_many_arguments)]
    pub fn gemm_t_direct<const NV: usize, const NP: usize>(
        m: usize,
        k: usize,
        n: usize,
        ap: &[f32],
        b: &[f32],
        ldb: usize,
        c: &mut [f32],
        ldc: usize,
        tail: &mut Vec<f32>,
    ) {
        assert!(k == 0 || n == 0 || b.len() >= (k - 1) * ldb + n);
        let full = n / NP * NP;
        if full < n {
            pack_b_nr(k, n - full, &b[full..], ldb, NP, tail);
        }
        drive_t::<NV, NP>(m, k, n, ap, c, ldc, |j0, pc| {
            if j0 < full {
                (b[pc * ldb + j0..].as_ptr(), ldb)
            } else {
                (tail[pc * NP..].as_ptr(), NP)
            }
        });
    }

    /// The loops of the transposed orientation: K in blocks of KCT, then 32-row panels of `a`,
    /// then NP-column panels of `b`, whose start at (column j0, step pc) and step stride `panel`
    /// gives; each must hold kc steps of NP values (the caller's asserts).
    fn drive_t<const NV: usize, const NP: usize>(
        m: usize,
        k: usize,
        n: usize,
        ap: &[f32],
        c: &mut [f32],
        ldc: usize,
        panel: impl Fn(usize, usize) -> (*const f32, usize),
    ) {
        let mr = 16 * NV;
        assert!(is_x86_feature_detected!("avx512f"));
        assert!(ap.len() >= m.div_ceil(mr) * k * mr);
        assert!(m == 0 || n == 0 || c.len() >= (m - 1) * ldc + n);
        let cp = c.as_mut_ptr();
        let mut pc = 0;
        while pc < k {
            let kc = KCT.min(k - pc);
            for pi in 0..m.div_ceil(mr) {
                let i0 = pi * mr;
                let apan = ap[(pi * k + pc) * mr..].as_ptr();
                for j0 in (0..n).step_by(NP) {
                    let (bpan, bs) = panel(j0, pc);
                    // SAFETY: avx512f checked; the panels hold kc steps from pc (asserted by
                    // the callers); the tile's rows and columns are inside c (asserted above).
                    unsafe {
                        tkernel::<NV, NP>(
                            kc,
                            apan,
                            bpan,
                            bs,
                            cp.add(i0 * ldc + j0),
                            ldc,
                            mr.min(m - i0),
                            NP.min(n - j0),
                            pc > 0,
                        )
                    };
                }
            }
            pc += kc;
        }
    }

    /// One MR x NR tile of c (row stride ldc): `rows` rows and `cols` columns stored, added to
    /// c's values when `acc`.
    #[target_feature(enable = "avx512f")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn kernel<const MR: usize, const NV: usize>(
        kc: usize,
        a: *const f32,
        b: *const f32,
        bs: usize,
        c: *mut f32,
        ldc: usize,
        rows: usize,
        cols: usize,
        acc: bool,
    ) {
        let mut s = [[_mm512_setzero_ps(); NV]; MR];
        let (mut a, mut b) = (a, b);
        let bm: [u16; NV] = std::array::from_fn(|v| {
            let left = cols.saturating_sub(v * 16).min(16);
            ((1u32 << left) - 1) as u16
        });
        for _ in 0..kc {
            let mut bv = [_mm512_setzero_ps(); NV];
            for (v, x) in bv.iter_mut().enumerate() {
                *x = _mm512_maskz_loadu_ps(bm[v], b.add(16 * v));
            }
            for (i, si) in s.iter_mut().enumerate() {
                let ai = _mm512_set1_ps(*a.add(i));
                for v in 0..NV {
                    si[v] = _mm512_fmadd_ps(ai, bv[v], si[v]);
                }
            }
            a = a.add(MR);
            b = b.add(bs);
        }
        for (i, si) in s.iter().enumerate().take(rows) {
            let row = c.add(i * ldc);
            for (v, &x) in si.iter().enumerate() {
                let left = cols.saturating_sub(v * 16).min(16);
                if left == 0 {
                    break;
                }
                let mk = ((1u32 << left) - 1) as u16;
                let p = row.add(v * 16);
                let x = if acc {
                    _mm512_add_ps(x, _mm512_maskz_loadu_ps(mk, p))
                } else {
                    x
                };
                _mm512_mask_storeu_ps(p, mk, x);
            }
        }
    }

    /// `c = a @ b`: `ap` from [`pack_a`], `bp` from [`pack_b`].
    pub fn gemm<const MR: usize, const NV: usize>(
        m: usize,
        k: usize,
        n: usize,
        ap: &[f32],
        bp: &[f32],
        c: &mut [f32],
        ldc: usize,
    ) {
        let nr = 16 * NV;
        assert!(is_x86_feature_detected!("avx512f"));
        assert!(ap.len() >= m.div_ceil(MR) * k * MR && bp.len() >= n.div_ceil(nr) * k * nr);
        assert!(m == 0 || n == 0 || c.len() >= (m - 1) * ldc + n);
        let cp = c.as_mut_ptr();
        let mut pc = 0;
        while pc < k {
            let kc = KC.min(k - pc);
            let mut ic = 0;
            while ic < m {
                let mc = (MC / MR * MR).max(MR).min(m - ic);
                for pj in 0..n.div_ceil(nr) {
                    let j0 = pj * nr;
                    let cols = nr.min(n - j0);
                    let bpan = bp[(pj * k + pc) * nr..].as_ptr();
                    let mut ir = ic;
                    while ir < ic + mc {
                        let rows = MR.min(m - ir);
                        let apan = ap[((ir / MR) * k + pc) * MR..].as_ptr();
                        // SAFETY: avx512f checked; the panels hold kc steps from pc; the tile's
                        // rows and columns are inside c (asserted above).
                        let cij = cp.wrapping_add(ir * ldc + j0);
                        unsafe {
                            if cols <= 16 && NV > 1 {
                                kernel::<MR, 1>(kc, apan, bpan, nr, cij, ldc, rows, cols, pc > 0)
                            } else {
                                kernel::<MR, NV>(kc, apan, bpan, nr, cij, ldc, rows, cols, pc > 0)
                            }
                        };
                        ir += MR;
                    }
                }
                ic += mc;
            }
            pc += kc;
        }
    }
}

/// The unfolding of a 3x3, stride 1, pad 1 convolution of x ([c][h][w]) for the output rows
/// `y0..y1`: `put(row, column, values)` per run of inputs inside the image (row of the columns:
/// `(ci * 3 + kh) * 3 + kw`; column: the run's first output pixel, counted from row y0); the
/// padding's columns are left as the buffer holds them (zeros).
pub(crate) fn runs3x3(
    x: &[f32],
    (c, h, w): (usize, usize, usize),
    (y0, y1): (usize, usize),
    mut put: impl FnMut(usize, usize, &[f32]),
) {
    for ci in 0..c {
        for kh in 0..3 {
            for kw in 0..3 {
                let r = (ci * 3 + kh) * 3 + kw;
                let (xs, xe) = (usize::from(kw == 0), if kw == 2 { w - 1 } else { w });
                for y in y0..y1 {
                    let Some(iy) = (y + kh).checked_sub(1).filter(|&iy| iy < h) else {
                        continue;
                    };
                    let src = &x[(ci * h + iy) * w + xs + kw - 1..][..xe - xs];
                    put(r, (y - y0) * w + xs, src);
                }
            }
        }
    }
}

/// A 3x3 convolution as the engine runs it today: each tile of output rows unfolded row-major
/// ([k][pixels]) and multiplied by the filter through the `gemm` crate.
pub(crate) fn conv3x3_crate(
    m: usize,
    x: &[f32],
    chw: (usize, usize, usize),
    a: &[f32],
    rows: usize,
    col: &mut Vec<f32>,
    y: &mut [f32],
) {
    let (c, h, w) = chw;
    let (k, n) = (c * 9, h * w);
    let mut y0 = 0;
    while y0 < h {
        let y1 = (y0 + rows).min(h);
        let tw = (y1 - y0) * w;
        col.clear();
        col.resize(k * tw, 0.0);
        runs3x3(x, chw, (y0, y1), |r, o, v| {
            col[r * tw + o..][..v.len()].copy_from_slice(v)
        });
        gemm_crate(m, k, tw, a, col, tw, &mut y[y0 * w..], n);
        y0 = y1;
    }
}

/// The same convolution unfolded straight into panels of NP pixels ([pixels / NP][k][NP]) and
/// multiplied by the filter packed once, in the transposed orientation.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
pub(crate) fn conv3x3_panels<const NV: usize, const NP: usize>(
    m: usize,
    x: &[f32],
    chw: (usize, usize, usize),
    ap: &[f32],
    rows: usize,
    col: &mut Vec<f32>,
    y: &mut [f32],
) {
    let (c, h, w) = chw;
    let (k, n) = (c * 9, h * w);
    let mut y0 = 0;
    while y0 < h {
        let y1 = (y0 + rows).min(h);
        let tw = (y1 - y0) * w;
        col.clear();
        col.resize(tw.div_ceil(NP) * k * NP, 0.0);
        runs3x3(x, chw, (y0, y1), |r, mut o, mut v| {
            while !v.is_empty() {
                let (p, q) = (o / NP, o % NP);
                let l = (NP - q).min(v.len());
                col[(p * k + r) * NP + q..][..l].copy_from_slice(&v[..l]);
                o += l;
                v = &v[l..];
            }
        });
        packed::gemm_t::<NV, NP>(m, k, tw, ap, col, &mut y[y0 * w..], n);
        y0 = y1;
    }
}

pub(crate) fn data(len: usize, seed: u32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(2654435761).wrapping_add(12345);
    (0..len)
        .map(|_| {
            s = s.wrapping_mul(1664525).wrapping_add(1013904223);
            ((s >> 8) as f32 / (1u32 << 24) as f32) - 0.5
        })
        .collect()
}

/// A tile (first column, width, unfolded columns) as (first column, width, its K x width
/// values, their row stride): `b` itself for a 1x1 kernel read in place.
fn tile_of<'a>(
    t: &'a (usize, usize, Vec<f32>),
    b: &'a [f32],
    n: usize,
    direct: bool,
) -> (usize, usize, &'a [f32], usize) {
    if direct {
        (t.0, t.1, &b[t.0..], n)
    } else {
        (t.0, t.1, &t.2[..], t.1)
    }
}

/// Panics unless `c` is `want` within f32 rounding of k-term sums.
fn check(want: &[f32], c: &[f32], k: usize, what: &str) {
    let err = want
        .iter()
        .zip(c)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0f32, f32::max);
    assert!(err < 1e-3 * (k as f32).sqrt(), "{what}: max diff {err}");
}

#[cfg(target_arch = "x86_64")]
fn bench(cr: &mut Criterion) {
    if !std::arch::is_x86_feature_detected!("avx512f") {
        return;
    }
    let mut g = cr.benchmark_group("conv_gemm_1t");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    for &(m, k, n, ow, direct) in SHAPES {
        let id = format!("{m}x{k}x{n}");
        let a = data(m * k, 1);
        let b = data(k * n, 2);
        let tc = tile_cols(k, n, ow, direct);
        // The tiles as the engine has them: columns [j0, j0 + w) of x read in place (1x1), or
        // unfolded into a contiguous K x w buffer.
        let tiles: Vec<(usize, usize, Vec<f32>)> = (0..n)
            .step_by(tc)
            .map(|j0| {
                let w = tc.min(n - j0);
                let t = if direct {
                    Vec::new()
                } else {
                    (0..k)
                        .flat_map(|r| b[r * n + j0..r * n + j0 + w].to_vec())
                        .collect()
                };
                (j0, w, t)
            })
            .collect();
        let tile = |t| tile_of(t, &b, n, direct);
        let mut want = vec![0.0f32; m * n];
        let mut c = vec![0.0f32; m * n];
        let run_crate = |c: &mut [f32]| {
            for t in &tiles {
                let (j0, w, bt, ldb) = tile(t);
                gemm_crate(m, k, w, &a, bt, ldb, &mut c[j0..], n);
            }
        };
        run_crate(&mut want);
        g.bench_function(BenchmarkId::new("gemm_crate", &id), |bn| {
            bn.iter(|| run_crate(&mut c))
        });
        // The normal orientation: the filter packed once in 8-row panels, each tile packed in
        // 32-column panels by the product.
        let ap = packed::pack_a::<8>(m, k, &a);
        let mut bp = Vec::new();
        let mut run_packed = |c: &mut [f32]| {
            for t in &tiles {
                let (j0, w, bt, ldb) = tile(t);
                packed::pack_b::<2>(k, w, bt, ldb, &mut bp);
                packed::gemm::<8, 2>(m, k, w, &ap, &bp, &mut c[j0..], n);
            }
        };
        run_packed(&mut c);
        check(&want, &c, k, &format!("packed 8x2 {id}"));
        g.bench_function(BenchmarkId::new("packed_8x2", &id), |bn| {
            bn.iter(|| run_packed(&mut c))
        });
        // The transposed orientation: the filter packed once in 32-row panels, the tile read
        // in place 7 columns at a time.
        let at = packed::pack_a::<32>(m, k, &a);
        let mut tail = Vec::new();
        let mut run_t = |c: &mut [f32]| {
            for t in &tiles {
                let (j0, w, bt, ldb) = tile(t);
                packed::gemm_t_direct::<2, 7>(m, k, w, &at, bt, ldb, &mut c[j0..], n, &mut tail);
            }
        };
        run_t(&mut c);
        check(&want, &c, k, &format!("transposed 2x7 {id}"));
        g.bench_function(BenchmarkId::new("transposed_2x7", &id), |bn| {
            bn.iter(|| run_t(&mut c))
        });
        // The same with each tile already in 7-column panels (packed outside the timing): what
        // an unfolding written straight into panels would leave to the product.
        let pre: Vec<Vec<f32>> = tiles
            .iter()
            .map(|t| {
                let (_, w, bt, ldb) = tile(t);
                let mut v = Vec::new();
                packed::pack_b_nr(k, w, bt, ldb, 7, &mut v);
                v
            })
            .collect();
        let run_pre = |c: &mut [f32]| {
            for (t, bp) in tiles.iter().zip(&pre) {
                packed::gemm_t::<2, 7>(m, k, t.1, &at, bp, &mut c[t.0..], n);
            }
        };
        run_pre(&mut c);
        check(&want, &c, k, &format!("transposed 2x7 prepacked {id}"));
        g.bench_function(BenchmarkId::new("transposed_2x7_prepacked", &id), |bn| {
            bn.iter(|| run_pre(&mut c))
        });
    }
    g.finish();

    // Whole 3x3 convolutions (stride 1, pad 1): unfolding plus product, as today against the
    // unfolding written straight into 7-pixel panels for the transposed product.
    let mut g = cr.benchmark_group("conv3x3_1t");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    for &(m, c, hw) in &[
        (64usize, 64usize, 56usize),
        (128, 128, 28),
        (256, 256, 14),
        (512, 512, 7),
    ] {
        let (k, n) = (c * 9, hw * hw);
        let id = format!("{m}x{k}x{n}");
        let x = data(c * n, 3);
        let a = data(m * k, 1);
        let rows = tile_cols(k, n, hw, false) / hw;
        let at = packed::pack_a::<32>(m, k, &a);
        let mut col = Vec::new();
        let mut want = vec![0.0f32; m * n];
        let mut y = vec![0.0f32; m * n];
        conv3x3_crate(m, &x, (c, hw, hw), &a, rows, &mut col, &mut want);
        conv3x3_panels::<2, 7>(m, &x, (c, hw, hw), &at, rows, &mut col, &mut y);
        check(&want, &y, k, &format!("conv3x3 panels {id}"));
        g.bench_function(BenchmarkId::new("gemm_crate", &id), |bn| {
            bn.iter(|| conv3x3_crate(m, &x, (c, hw, hw), &a, rows, &mut col, &mut y))
        });
        g.bench_function(BenchmarkId::new("panels_2x7", &id), |bn| {
            bn.iter(|| conv3x3_panels::<2, 7>(m, &x, (c, hw, hw), &at, rows, &mut col, &mut y))
        });
    }
    g.finish();
}

#[cfg(not(target_arch = "x86_64"))]
fn bench(_: &mut Criterion) {}

criterion_group!(benches, bench);
criterion_main!(benches);
