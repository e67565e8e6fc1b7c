//! f32 products against a constant weight packed once (issue 18, session 27).
//!
//! `c = a @ w` where `w` ([k, n]) is a constant the plan knows at compile: it is packed once
//! into micro-panels of `NR` columns ([`PackedWeight`]: `[n / NR][k][NR]`, the last panel
//! zero-padded), kept with the plan, and each run multiplies the activations `a` ([m, k], any
//! strides) by it with an own blocked kernel. The `gemm` crate, given a row-major `c`, computes
//! `cᵀ = wᵀ aᵀ` with the weight as its packed operand and packs it again on every call (above
//! 48 output rows): 2.2 ms of GPT's 17.4 ms run, 1.4 ms of ViT's (docs/perf-runtime.md,
//! "Weights packed once, session 27").
//!
//! The loops (BLIS's, with the roles of the operands as a Linear layer has them): per block of
//! `KC` depth steps, per panel of `w`, per strip of `MR` rows of `a`, one micro-kernel computes
//! an `MR` × `NR` tile of `c`: `MR` values of `a` broadcast against the panel's vectors,
//! `MR · NR / lanes` accumulators. `a` is read in place (rows with unit column stride; other
//! views are copied first): packing it into strips cost more than it saved (13% of a
//! 128 × 256 × 256 product). The last strip has fewer rows and its own kernel (the tile's rows
//! are a const parameter), so a product of 12 rows pays for 12, not 16. A tile's accumulators
//! start from zero in the first block and from `c`'s stored partial sums in the later ones, so
//! every output element is the same chain of fused multiply-adds in depth order, whatever the
//! blocking, the tile it falls in, and the split across threads (by panels, or by strips where
//! there are fewer panels than threads): 1, 2 or 3 threads give bit-identical results.
//!
//! Two micro-kernels, picked by runtime detection: AVX-512F (8 rows × 32 columns, 16 zmm
//! accumulators) and AVX2 + FMA (6 rows × 16 columns, 12 ymm accumulators). Elsewhere there is
//! no packed weight and products take the `gemm` crate's path.

use crate::error::{Error, Result};
use crate::par;
use ndarray::{ArrayView2, ArrayViewMut2, Axis};

/// Depth steps per block (the Linear layers of the transformers measured have k <= 1024: one
/// block; 256 was within noise of it, 1024 slightly ahead).
const KC: usize = 1024;

/// A micro-kernel family: which instructions, and the tile it computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Isa {
    /// AVX-512F: 8 rows × 32 columns (two zmm per row).
    Avx512,
    /// AVX2 and FMA: 6 rows × 16 columns (two ymm per row).
    Avx2,
}

impl Isa {
    /// The best family this CPU runs, if any.
    pub(crate) fn detect() -> Option<Isa> {
        Isa::all().into_iter().find(|i| i.available())
    }

    /// Every family, best first.
    pub(crate) fn all() -> [Isa; 2] {
        [Isa::Avx512, Isa::Avx2]
    }

    /// Whether this CPU runs it.
    pub(crate) fn available(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            match self {
                Isa::Avx512 => std::arch::is_x86_feature_detected!("avx512f"),
                Isa::Avx2 => {
                    std::arch::is_x86_feature_detected!("avx2")
                        && std::arch::is_x86_feature_detected!("fma")
                }
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = self;
            false
        }
    }

    /// Rows of a tile (values of `a` broadcast per depth step).
    fn mr(self) -> usize {
        match self {
            Isa::Avx512 => 8,
            Isa::Avx2 => 6,
        }
    }

    /// Columns of a tile: the width of the weight's panels.
    fn nr(self) -> usize {
        match self {
            Isa::Avx512 => 32,
            Isa::Avx2 => 16,
        }
    }
}

/// A `[k, n]` f32 weight packed for one micro-kernel family: `[n / NR][k][NR]`, the last
/// panel's missing columns zero.
#[derive(Debug)]
pub(crate) struct PackedWeight {
    k: usize,
    n: usize,
    isa: Isa,
    data: Vec<f32>,
}

impl PackedWeight {
    /// `w` (any strides) packed for `isa`; an error where `isa` does not run on this CPU or
    /// the packed copy cannot be allocated.
    pub(crate) fn pack(w: ArrayView2<'_, f32>, isa: Isa) -> Result<PackedWeight> {
        if !isa.available() {
            return Err(Error::unsupported(format!(
                "packed products with {isa:?} kernels on this CPU"
            )));
        }
        let (k, n) = w.dim();
        let nr = isa.nr();
        let len = n
            .div_ceil(nr)
            .checked_mul(k)
            .and_then(|x| x.checked_mul(nr))
            .ok_or_else(|| Error::kernel(format!("a packed weight of {k} x {n}: too large")))?;
        let mut data = super::super::common::with_capacity(len)?;
        data.resize(len, 0.0f32);
        for (pj, panel) in data.chunks_exact_mut((k * nr).max(1)).enumerate() {
            let j0 = pj * nr;
            let cols = w.slice(ndarray::s![.., j0..(j0 + nr).min(n)]);
            for (dst, row) in panel.chunks_exact_mut(nr).zip(cols.rows()) {
                for (d, &x) in dst.iter_mut().zip(row) {
                    *d = x;
                }
            }
        }
        Ok(PackedWeight { k, n, isa, data })
    }

    /// Rows of the weight (the product's depth).
    pub(crate) fn k(&self) -> usize {
        self.k
    }

    /// Columns of the weight (of the product).
    pub(crate) fn n(&self) -> usize {
        self.n
    }

    /// Bytes the packed copy holds.
    pub(crate) fn bytes(&self) -> usize {
        self.data.len() * std::mem::size_of::<f32>()
    }

    /// `c = a @ w` (`c`'s previous contents are not read), split across the run's threads
    /// when large. `a`: [m, k], any strides; `c`: [m, n] with contiguous rows (unit column
    /// stride). An error where the dims or `c`'s layout do not fit.
    pub(crate) fn matmul_into(
        &self,
        a: ArrayView2<'_, f32>,
        mut c: ArrayViewMut2<'_, f32>,
    ) -> Result<()> {
        let (m, k) = a.dim();
        if k != self.k || c.dim() != (m, self.n) {
            return Err(Error::kernel(format!(
                "a packed product of {:?} by [{}, {}] into {:?}",
                a.dim(),
                self.k,
                self.n,
                c.dim()
            )));
        }
        if m == 0 || self.n == 0 {
            return Ok(());
        }
        if self.n > 1 && c.strides()[1] != 1 {
            return Err(Error::kernel(
                "a packed product's output rows must be contiguous",
            ));
        }
        if k == 0 {
            c.fill(0.0);
            return Ok(());
        }
        let (mr, nr) = (self.isa.mr(), self.isa.nr());
        SCRATCH.with(|s| {
            let mut scratch = s.take();
            let result = Lhs::new(&a, mr, &mut scratch).map(|lhs| {
                let work = m.saturating_mul(self.n).saturating_mul(k) / par::MACS_PER_UNIT;
                let parts = par::chunks_for(work);
                let (panels, strips) = (self.n.div_ceil(nr), m.div_ceil(mr));
                if parts > 1 && panels >= parts {
                    let cols = panels.div_ceil(parts) * nr;
                    self.split(&lhs, &mut c, Axis(1), cols);
                } else if parts > 1 && strips >= parts {
                    let rows = strips.div_ceil(parts) * mr;
                    self.split(&lhs, &mut c, Axis(0), rows);
                } else {
                    self.block(&lhs, m, 0, 0, &mut c);
                }
            });
            s.set(scratch);
            result
        })
    }

    /// [`Self::block`] on blocks of `len` columns or rows (`axis`) of `c`, in parallel.
    fn split(&self, lhs: &Lhs, c: &mut ArrayViewMut2<'_, f32>, axis: Axis, len: usize) {
        use rayon::prelude::*;
        let m = c.nrows();
        let blocks: Vec<_> = c.axis_chunks_iter_mut(axis, len).enumerate().collect();
        par::install(|| {
            blocks.into_par_iter().for_each(|(b, mut cb)| {
                if axis == Axis(1) {
                    self.block(lhs, m, 0, b * len, &mut cb);
                } else {
                    self.block(lhs, cb.nrows(), b * len, 0, &mut cb);
                }
            })
        });
    }

    /// `c` = rows `i0..i0 + m` by columns `j0..j0 + c.ncols()` of the product. `i0` is a
    /// multiple of MR and `j0` of NR.
    fn block(&self, lhs: &Lhs, m: usize, i0: usize, j0: usize, c: &mut ArrayViewMut2<'_, f32>) {
        let (k, isa) = (self.k, self.isa);
        let (mr, nr) = (isa.mr(), isa.nr());
        let n = c.ncols();
        let ldc = if c.nrows() > 1 { c.strides()[0] } else { 0 };
        let cp = c.as_mut_ptr();
        let mut pc = 0;
        while pc < k {
            let kc = KC.min(k - pc);
            for jb in (0..n).step_by(nr) {
                let pj = (j0 + jb) / nr;
                let wp = &self.data[(pj * k + pc) * nr..][..kc * nr];
                let cols = nr.min(n - jb);
                for ib in (0..m).step_by(mr) {
                    let (a, lda, rows) = lhs.strip((i0 + ib) / mr, pc);
                    // SAFETY: the tile's `rows` rows and `cols` columns start at row ib and
                    // column jb of `c` (ib < m = c's rows, jb + cols <= n = c's columns), row
                    // `r` of the tile at `ldc * r` elements from its start (c's row stride,
                    // unit column stride checked by `matmul_into`); the strip's `rows` rows
                    // (rows i0 + ib.. of `a`: the same rows of `c`, as c's block starts at row
                    // i0 of the product) hold kc values from `a` at `lda` apart
                    // ([`Lhs::strip`]), `wp` kc steps of NR values (sliced above); `isa` runs
                    // on this CPU (checked when the weight was packed).
                    unsafe {
                        let tile = Tile {
                            c: cp.offset(ib as isize * ldc + jb as isize),
                            ldc,
                            rows,
                            cols,
                            acc: pc > 0,
                        };
                        micro(isa, kc, a, lda, wp.as_ptr(), tile);
                    }
                }
            }
            pc += kc;
        }
    }
}

thread_local! {
    /// The copy [`Lhs`] makes of an operand whose rows are not contiguous, reused from call
    /// to call on each thread.
    static SCRATCH: std::cell::Cell<Vec<f32>> = const { std::cell::Cell::new(Vec::new()) };
}

/// `a` ([m, k]) as the micro-kernels read it: in place where its rows are contiguous (unit
/// column stride, row stride `lda`), else from a row-major copy.
struct Lhs {
    /// The first element of row 0 (rows `lda` apart).
    a: *const f32,
    lda: usize,
    m: usize,
    k: usize,
    mr: usize,
}

// SAFETY: `a` points into an array borrowed (shared) for as long as the Lhs is used (the
// call of `matmul_into` that made it); it is only read.
unsafe impl Sync for Lhs {}

impl Lhs {
    fn new(a: &ArrayView2<'_, f32>, mr: usize, scratch: &mut Vec<f32>) -> Result<Lhs> {
        let (m, k) = a.dim();
        let in_place = (k <= 1 || a.strides()[1] == 1) && (m <= 1 || a.strides()[0] >= 0);
        if in_place {
            let lda = if m > 1 { a.strides()[0] as usize } else { k };
            return Ok(Lhs {
                a: a.as_ptr(),
                lda,
                m,
                k,
                mr,
            });
        }
        let len = m * k;
        scratch.clear();
        if scratch.capacity() < len {
            scratch.try_reserve_exact(len).map_err(|_| {
                Error::Resource(format!("cannot allocate {len} f32 for a product's operand"))
            })?;
        }
        scratch.extend(a.iter());
        Ok(Lhs {
            a: scratch.as_ptr(),
            lda: k,
            m,
            k,
            mr,
        })
    }

    /// Strip `s`'s first element at depth `pc`, its row stride and its rows (MR, fewer in the
    /// last strip), each with at least `k - pc` values.
    fn strip(&self, s: usize, pc: usize) -> (*const f32, usize, usize) {
        let i = s * self.mr;
        let rows = self.mr.min(self.m.saturating_sub(i));
        debug_assert!(rows > 0 && pc < self.k);
        (self.a.wrapping_add(i * self.lda + pc), self.lda, rows)
    }
}

/// Where a micro-kernel stores its tile: `rows` × `cols` elements from `c`, rows `ldc` apart
/// (column stride 1); `acc`: the stored values are partial sums to continue from.
#[derive(Clone, Copy)]
struct Tile {
    c: *mut f32,
    ldc: isize,
    rows: usize,
    cols: usize,
    acc: bool,
}

/// One tile of the product over `kc` depth steps with `isa`'s kernel for its rows; a tile of
/// fewer columns than NR (the last panel's) is computed whole in a buffer and its part copied.
///
/// # Safety
/// `isa` runs on this CPU; `a` holds `t.rows` rows of `kc` values, `lda` apart, and `w` kc
/// steps of NR values; `t` describes elements of one live, exclusively borrowed allocation,
/// `1 <= t.rows <= MR`, `t.cols <= NR`.
unsafe fn micro(isa: Isa, kc: usize, a: *const f32, lda: usize, w: *const f32, t: Tile) {
    if t.cols == isa.nr() {
        // SAFETY: the caller's contract, the tile's columns whole.
        unsafe { kernel(isa, t.rows, kc, a, lda, w, t.c, t.ldc, t.acc) };
        return;
    }
    let mut buf = [0.0f32; EDGE_ROWS * EDGE_COLS];
    let ldc = t.ldc;
    let rows = |t: &Tile| (0..t.rows).map(move |r| (r * EDGE_COLS, r as isize * ldc));
    if t.acc {
        for (b, o) in rows(&t) {
            // SAFETY: row r < t.rows of the tile, its first t.cols elements (the contract).
            let row = unsafe { std::slice::from_raw_parts(t.c.offset(o), t.cols) };
            buf[b..b + t.cols].copy_from_slice(row);
        }
    }
    let c = buf.as_mut_ptr();
    // SAFETY: the buffer holds t.rows <= EDGE_ROWS rows of NR <= EDGE_COLS values.
    unsafe { kernel(isa, t.rows, kc, a, lda, w, c, EDGE_COLS as isize, t.acc) };
    for (b, o) in rows(&t) {
        // SAFETY: as above, the allocation exclusively borrowed.
        let row = unsafe { std::slice::from_raw_parts_mut(t.c.offset(o), t.cols) };
        row.copy_from_slice(&buf[b..b + t.cols]);
    }
}

/// Rows and columns of the buffer an edge tile is computed in (the largest MR and NR).
const EDGE_ROWS: usize = 8;
const EDGE_COLS: usize = 32;

/// A tile of `rows` × NR (rows `ldc` apart) with `isa`'s kernel for that many rows.
///
/// # Safety
/// As [`micro`], the tile's columns whole (NR).
#[allow(clippy::too_many_arguments)]
unsafe fn kernel(
    isa: Isa,
    rows: usize,
    kc: usize,
    a: *const f32,
    lda: usize,
    w: *const f32,
    c: *mut f32,
    ldc: isize,
    acc: bool,
) {
    #[cfg(target_arch = "x86_64")]
    {
        use x86::{kernel_avx2 as k2, kernel_avx512 as k5};
        let args = (kc, a, lda, w, c, ldc, acc);
        // SAFETY: the caller's contract; each kernel reads and writes `rows` rows.
        unsafe {
            match (isa, rows) {
                (Isa::Avx512, 8) => k5::<8>(args),
                (Isa::Avx512, 7) => k5::<7>(args),
                (Isa::Avx512, 6) => k5::<6>(args),
                (Isa::Avx512, 5) => k5::<5>(args),
                (Isa::Avx512, 4) => k5::<4>(args),
                (Isa::Avx512, 3) => k5::<3>(args),
                (Isa::Avx512, 2) => k5::<2>(args),
                (Isa::Avx512, _) => k5::<1>(args),
                (Isa::Avx2, 6) => k2::<6>(args),
                (Isa::Avx2, 5) => k2::<5>(args),
                (Isa::Avx2, 4) => k2::<4>(args),
                (Isa::Avx2, 3) => k2::<3>(args),
                (Isa::Avx2, 2) => k2::<2>(args),
                (Isa::Avx2, _) => k2::<1>(args),
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (isa, rows, kc, a, lda, w, c, ldc, acc);
        unreachable!("no packed weights without x86-64 kernels");
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// A kernel's arguments: depth steps; `a`'s first row and row stride; the weight panel;
    /// the tile of `c` and its row stride; whether to continue from the stored values.
    pub(super) type Args = (usize, *const f32, usize, *const f32, *mut f32, isize, bool);

    /// Vectors of 16 columns in an AVX-512 tile.
    const NV: usize = 2;

    /// An `MR` × `16 NV` tile of `c` (rows `ldc` apart) with AVX-512F over `kc` depth steps:
    /// the weight panel's `NV` vectors per step, `MR` values of `a` broadcast; starting from
    /// the stored values where `acc`, else from zero.
    ///
    /// # Safety
    /// AVX-512F runs on this CPU; `a` holds `kc * MR` values, `w` `kc * 16 NV`; the tile's
    /// elements lie in one live, exclusively borrowed allocation.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn kernel_avx512<const MR: usize>((kc, a, lda, w, c, ldc, acc): Args) {
        let mut s = [[_mm512_setzero_ps(); NV]; MR];
        if acc {
            for (i, si) in s.iter_mut().enumerate() {
                for (v, x) in si.iter_mut().enumerate() {
                    // SAFETY: row i, columns 16 v.. of the tile (the contract).
                    *x = unsafe { _mm512_loadu_ps(c.offset(i as isize * ldc).add(16 * v)) };
                }
            }
        }
        let (mut a, mut w) = (a, w);
        for _ in 0..kc {
            let mut wv = [_mm512_setzero_ps(); NV];
            for (v, x) in wv.iter_mut().enumerate() {
                // SAFETY: this step's 16 NV values of the panel (the contract).
                *x = unsafe { _mm512_loadu_ps(w.add(16 * v)) };
            }
            for (i, si) in s.iter_mut().enumerate() {
                // SAFETY: this step's MR values of the strip (the contract).
                let ai = _mm512_set1_ps(unsafe { *a.add(i * lda) });
                for v in 0..NV {
                    si[v] = _mm512_fmadd_ps(ai, wv[v], si[v]);
                }
            }
            // SAFETY: one step on, at most one past the end (not read).
            unsafe {
                a = a.add(1);
                w = w.add(16 * NV);
            }
        }
        for (i, si) in s.iter().enumerate() {
            for (v, &x) in si.iter().enumerate() {
                // SAFETY: as for the loads above.
                unsafe { _mm512_storeu_ps(c.offset(i as isize * ldc).add(16 * v), x) };
            }
        }
    }

    /// An `MR` × 16 tile with AVX2 and FMA: [`kernel_avx512`] with two ymm vectors per row.
    ///
    /// # Safety
    /// AVX2 and FMA run on this CPU; `a` holds `kc * MR` values, `w` `kc * 16`; the tile's
    /// elements lie in one live, exclusively borrowed allocation.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn kernel_avx2<const MR: usize>((kc, a, lda, w, c, ldc, acc): Args) {
        let mut s = [[_mm256_setzero_ps(); 2]; MR];
        if acc {
            for (i, si) in s.iter_mut().enumerate() {
                for (v, x) in si.iter_mut().enumerate() {
                    // SAFETY: row i, columns 8 v.. of the tile (the contract).
                    *x = unsafe { _mm256_loadu_ps(c.offset(i as isize * ldc).add(8 * v)) };
                }
            }
        }
        let (mut a, mut w) = (a, w);
        for _ in 0..kc {
            // SAFETY: this step's 16 values of the panel (the contract).
            let wv = unsafe { [_mm256_loadu_ps(w), _mm256_loadu_ps(w.add(8))] };
            for (i, si) in s.iter_mut().enumerate() {
                // SAFETY: this step's MR values of the strip (the contract).
                let ai = _mm256_set1_ps(unsafe { *a.add(i * lda) });
                for v in 0..2 {
                    si[v] = _mm256_fmadd_ps(ai, wv[v], si[v]);
                }
            }
            // SAFETY: one step on, at most one past the end (not read).
            unsafe {
                a = a.add(1);
                w = w.add(16);
            }
        }
        for (i, si) in s.iter().enumerate() {
            for (v, &x) in si.iter().enumerate() {
                // SAFETY: as for the loads above.
                unsafe { _mm256_storeu_ps(c.offset(i as isize * ldc).add(8 * v), x) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;
    use proptest::prelude::*;

    fn data(len: usize, seed: u64) -> Vec<f32> {
        let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(1);
        (0..len)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 40) as f32 / (1u64 << 24) as f32) - 0.5
            })
            .collect()
    }

    /// `a @ w` accumulated in f64, and the sum of |a||w| per element (the error bound's scale).
    fn reference(a: &Array2<f32>, w: &Array2<f32>) -> (Array2<f64>, Array2<f64>) {
        let (m, k, n) = (a.nrows(), a.ncols(), w.ncols());
        let mut y = Array2::zeros((m, n));
        let mut s = Array2::zeros((m, n));
        for i in 0..m {
            for j in 0..n {
                for p in 0..k {
                    let (x, z) = (f64::from(a[[i, p]]), f64::from(w[[p, j]]));
                    y[[i, j]] += x * z;
                    s[[i, j]] += (x * z).abs();
                }
            }
        }
        (y, s)
    }

    /// The packed product at `threads` threads.
    fn packed(a: &ArrayView2<'_, f32>, pw: &PackedWeight, threads: usize) -> Array2<f32> {
        let mut c = Array2::from_elem((a.nrows(), pw.n()), f32::NAN);
        par::run_with(threads, || pw.matmul_into(a.view(), c.view_mut())).unwrap();
        c
    }

    /// Every family this CPU runs, on (m, k, n) with odd sizes, 1, tails of tiles and depths
    /// over a block: within k·2⁻²³·Σ|a||w| of the f64 product (the bound of a k-term f32
    /// dot product), and within the same bound of the `gemm` crate's; bit-identical at 1, 2
    /// and 3 threads; the weight read through a transposed view packs the same.
    fn check(m: usize, k: usize, n: usize, seed: u64) {
        let a = Array2::from_shape_vec((m, k), data(m * k, seed)).unwrap();
        let w = Array2::from_shape_vec((k, n), data(k * n, seed + 7)).unwrap();
        let (want, scale) = reference(&a, &w);
        let mut via_crate = Array2::<f32>::zeros((m, n));
        if m > 0 && k > 0 && n > 0 {
            assert!(super::super::thin(
                &a.view(),
                &w.view(),
                &mut via_crate.view_mut(),
                0
            ));
        }
        let wt = w.t().to_owned();
        for isa in Isa::all().into_iter().filter(|i| i.available()) {
            let pw = PackedWeight::pack(w.view(), isa).unwrap();
            let pt = PackedWeight::pack(wt.t(), isa).unwrap();
            assert_eq!(pw.data, pt.data, "{isa:?}: packing a transposed view");
            let one = packed(&a.view(), &pw, 1);
            let bound = |j: (usize, usize)| (k as f64 + 2.0) * f64::from(f32::EPSILON) * scale[j];
            for (j, &g) in one.indexed_iter() {
                let g = f64::from(g);
                assert!(
                    (g - want[j]).abs() <= bound(j),
                    "{isa:?} {m}x{k}x{n} at {j:?}: {g} against {}",
                    want[j]
                );
                let cr = f64::from(via_crate[j]);
                assert!(
                    (g - cr).abs() <= 2.0 * bound(j),
                    "{isa:?} {m}x{k}x{n}: crate {cr}"
                );
            }
            for threads in [2, 3] {
                let t = packed(&a.view(), &pw, threads);
                let same = one.iter().zip(&t).all(|(x, y)| x.to_bits() == y.to_bits());
                assert!(same, "{isa:?} {m}x{k}x{n}: {threads} threads differ");
            }
            // a read through strides (a transposed copy viewed back).
            let at = a.t().to_owned();
            let s = packed(&at.t(), &pw, 1);
            assert!(one.iter().zip(&s).all(|(x, y)| x.to_bits() == y.to_bits()));
        }
    }

    #[test]
    fn packed_products_match_the_reference() {
        for &(m, k, n) in &[
            (1, 1, 1),
            (1, 7, 33),
            (7, 15, 17),
            (15, 33, 1),
            (17, 1, 15),
            (33, 17, 7),
            (9, 257, 65),
            (128, 300, 96),
            (197, 192, 40),
            (64, 600, 130),
            (3, 0, 5),
            (0, 4, 5),
        ] {
            check(m, k, n, (m * 31 + k * 7 + n) as u64);
        }
    }

    /// Large enough to split across threads by panels (many columns) and by strips (few).
    #[test]
    fn large_products_split_across_threads_bit_identically() {
        check(200, 96, 1000, 3);
        check(300, 520, 20, 4);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn random_shapes_match_the_reference(
            m in 1usize..70, k in 1usize..300, n in 1usize..100, seed in 0u64..1000,
        ) {
            check(m, k, n, seed);
        }
    }

    #[test]
    fn mismatched_dims_are_errors() {
        let Some(isa) = Isa::detect() else { return };
        let w = Array2::<f32>::zeros((4, 5));
        let pw = PackedWeight::pack(w.view(), isa).unwrap();
        assert_eq!((pw.k(), pw.n()), (4, 5));
        assert_eq!(pw.bytes(), 4 * isa.nr() * 4);
        let a = Array2::<f32>::zeros((3, 3));
        let mut c = Array2::<f32>::zeros((3, 5));
        assert!(pw.matmul_into(a.view(), c.view_mut()).is_err());
        let a = Array2::<f32>::zeros((3, 4));
        let mut c = Array2::<f32>::zeros((5, 3));
        let mut ct = c.view_mut();
        ct.swap_axes(0, 1);
        assert!(pw.matmul_into(a.view(), ct).is_err());
    }
}
