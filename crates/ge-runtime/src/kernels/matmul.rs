//! Matrix products: MatMul, MatMulV2, BatchMatMul, BatchMatMulV2 (batch dims broadcast) and
//! GEMM. f32 and f64 go through [`gemm_into`]: the `gemm` crate for thin products (a few rows,
//! where it does not pack the right operand: a Linear layer at batch 1 is 5-10× faster than
//! through matrixmultiply) and, on CPUs with AVX-512, for every product (its AVX-512 kernels
//! are 1.1-2× faster than matrixmultiply's AVX2 ones on convolution-sized products);
//! `matrixmultiply` (via ndarray) for the rest, split across the run's threads when large. f16
//! and bf16 compute in f32 and round once; integers accumulate in their own type, wrapping.

use super::common::{alloc_array, broadcast_shape, numel, with_capacity, zip2};
use super::{input, Kernel, Kernels, NodeInfo};
use crate::arena::Dest;
use crate::arena::ElemArray;
use crate::error::{Error, Result};
use crate::par;
use crate::value::Value;
use es_core::DataType;
use half::{bf16, f16};
use ndarray::LinalgScalar;
use ndarray::{ArrayD, ArrayView2, ArrayViewMut2, Axis, Ix3, IxDyn};
use std::ops::Range;

mod determinant;
mod einsum;
mod packed;

/// Products with at most this many rows go through the `gemm` crate (f32, f64).
const THIN_ROWS: usize = 16;

/// `c = a @ b` (c's previous contents are overwritten).
pub(crate) fn gemm_into<T: LinalgScalar + Send + Sync>(
    a: ArrayView2<'_, T>,
    b: ArrayView2<'_, T>,
    mut c: ArrayViewMut2<'_, T>,
) {
    let (m, k) = a.dim();
    let n = b.ncols();
    let work = m.saturating_mul(n).saturating_mul(k) / par::MACS_PER_UNIT;
    if m > THIN_ROWS && avx512() && n >= 2 * SPLIT_COLS && gemm_dtype::<T>() {
        // Wide products (convolutions: n = output pixels) split by columns across the run's
        // threads, one single-threaded gemm call each: the gemm crate's own threading gained
        // less on these at 2 threads (BENCHMARKS.md, real models).
        let parts = par::chunks_for(work).min(n / SPLIT_COLS);
        if parts > 1 {
            // `thin` takes every block: f32/f64, no empty dim (parts > 1 needs work, so k > 0),
            // the views' dims consistent.
            by_columns(&a, &b, &mut c, parts, |a, b, mut c| {
                thin(a, &b, &mut c, 0);
            });
            return;
        }
    }
    if (m <= THIN_ROWS || avx512()) && thin(&a, &b, &mut c, work) {
        return;
    }
    blocked(a, b, c, work);
}

/// `f(a, b_j, c_j)` on `parts` column blocks of `b` and `c`, in parallel.
fn by_columns<T: Send + Sync>(
    a: &ArrayView2<'_, T>,
    b: &ArrayView2<'_, T>,
    c: &mut ArrayViewMut2<'_, T>,
    parts: usize,
    f: impl Fn(&ArrayView2<'_, T>, ArrayView2<'_, T>, ArrayViewMut2<'_, T>) + Sync,
) {
    use rayon::prelude::*;
    let cols = b.ncols().div_ceil(parts.max(1)).max(1);
    let blocks: Vec<_> = b
        .axis_chunks_iter(Axis(1), cols)
        .zip(c.axis_chunks_iter_mut(Axis(1), cols))
        .collect();
    par::install(|| blocks.into_par_iter().for_each(|(b, c)| f(a, b, c)));
}

/// The fewest columns a thread's share of a product split by columns gets.
const SPLIT_COLS: usize = 64;

/// `c = a @ b` through matrixmultiply (via ndarray), split by rows or columns across the run's
/// threads when `work` is large.
fn blocked<T: LinalgScalar + Send + Sync>(
    a: ArrayView2<'_, T>,
    b: ArrayView2<'_, T>,
    mut c: ArrayViewMut2<'_, T>,
    work: usize,
) {
    let (m, n) = (a.nrows(), b.ncols());
    let parts = par::chunks_for(work);
    if parts > 1 && m >= parts * 8 {
        use rayon::prelude::*;
        let rows = m.div_ceil(parts);
        let blocks: Vec<_> = a
            .axis_chunks_iter(Axis(0), rows)
            .zip(c.axis_chunks_iter_mut(Axis(0), rows))
            .collect();
        par::install(|| {
            blocks.into_par_iter().for_each(|(a, mut c)| {
                ndarray::linalg::general_mat_mul(T::one(), &a, &b, T::zero(), &mut c)
            })
        });
    } else if parts > 1 && n >= parts * 8 {
        by_columns(&a, &b, &mut c, parts, |a, b, mut c| {
            ndarray::linalg::general_mat_mul(T::one(), a, &b, T::zero(), &mut c)
        });
    } else {
        ndarray::linalg::general_mat_mul(T::one(), &a, &b, T::zero(), &mut c);
    }
}

/// Whether this CPU has AVX-512 (F), which the `gemm` crate's fastest kernels use.
fn avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether the `gemm` crate computes products of `T` (f32, f64).
fn gemm_dtype<T: 'static>() -> bool {
    use std::any::TypeId;
    let t = TypeId::of::<T>();
    t == TypeId::of::<f32>() || t == TypeId::of::<f64>()
}

/// An f32 or f64 product through the `gemm` crate; false (nothing done) for other dtypes.
fn thin<T: LinalgScalar + Send + Sync>(
    a: &ArrayView2<'_, T>,
    b: &ArrayView2<'_, T>,
    c: &mut ArrayViewMut2<'_, T>,
    work: usize,
) -> bool {
    if !gemm_dtype::<T>() {
        return false;
    }
    let (m, k) = a.dim();
    let n = b.ncols();
    if m == 0 || n == 0 || k == 0 || c.dim() != (m, n) || b.nrows() != k {
        return false;
    }
    let threads = par::threads();
    let parallelism = if threads > 1 && work >= par::min_parallel_work() {
        gemm::Parallelism::Rayon(threads)
    } else {
        gemm::Parallelism::None
    };
    let call = |c: &mut ArrayViewMut2<'_, T>| {
        let (cs, rs) = (c.strides()[1], c.strides()[0]);
        // SAFETY: each pointer with its row and column strides describes exactly the elements
        // of its view (ndarray's invariant: element (i, j) is at ptr + i*rs + j*cs inside the
        // view's allocation), and the dims passed are the views' dims (checked above); `c` is
        // borrowed mutably, so it overlaps neither `a` nor `b`; T is f32 or f64 (checked
        // above), which the gemm crate implements; with read_dst false `c`'s old contents are
        // not read (alpha unused) and dst = 1 * a @ b.
        unsafe {
            gemm::gemm(
                m,
                n,
                k,
                c.as_mut_ptr(),
                cs,
                rs,
                false,
                a.as_ptr(),
                a.strides()[1],
                a.strides()[0],
                b.as_ptr(),
                b.strides()[1],
                b.strides()[0],
                T::zero(),
                T::one(),
                false,
                false,
                false,
                parallelism,
            );
        }
    };
    if matches!(parallelism, gemm::Parallelism::None) {
        call(c);
    } else {
        par::install(|| call(c));
    }
    true
}

/// `x` with its last two dims swapped where `tr`.
fn transposed<T>(x: &ArrayD<T>, tr: bool) -> ndarray::ArrayViewD<'_, T> {
    let mut v = x.view();
    if tr {
        let r = v.ndim();
        v.swap_axes(r - 2, r - 1);
    }
    v
}

/// The operands of `a @ b` (`ta`/`tb`: transposed) as two matrices where `b` has no batch
/// dims (a Linear layer, a 2-D product): a's batch dims fold into its rows, so one product
/// runs on views without copying either operand (b may be a transposed view: the GEMM takes
/// strides). None otherwise. Ranks must be at least 2 and the inner dims agree.
fn as_2d<'a, T>(
    a: &'a ArrayD<T>,
    b: &'a ArrayD<T>,
    ta: bool,
    tb: bool,
) -> Result<Option<(ArrayView2<'a, T>, ArrayView2<'a, T>)>> {
    let (ra, rb) = (a.ndim(), b.ndim());
    if rb != 2 || !(ra == 2 || (!ta && a.is_standard_layout())) {
        return Ok(None);
    }
    let (av, bv) = (transposed(a, ta), transposed(b, tb));
    let k = av.shape()[ra - 1];
    let rows: usize = av.shape()[..ra - 1].iter().product();
    let bad = |e: ndarray::ShapeError| Error::kernel(e.to_string());
    let a2 = if ra == 2 {
        av.into_dimensionality::<ndarray::Ix2>().map_err(bad)?
    } else {
        av.into_shape_with_order((rows, k)).map_err(bad)?
    };
    Ok(Some((
        a2,
        bv.into_dimensionality::<ndarray::Ix2>().map_err(bad)?,
    )))
}

/// `a @ b` over the last two dims, batch dims broadcast; `ta`/`tb` transpose the operands'
/// last two dims first.
pub(super) fn batched<T: LinalgScalar + Send + Sync>(
    a: &ArrayD<T>,
    b: &ArrayD<T>,
    ta: bool,
    tb: bool,
) -> Result<ArrayD<T>> {
    if a.ndim() < 2 || b.ndim() < 2 {
        return Err(Error::kernel(format!(
            "matrix product of shapes {:?} and {:?}: both need rank >= 2",
            a.shape(),
            b.shape()
        )));
    }
    let (av, bv) = (transposed(a, ta), transposed(b, tb));
    let (ra, rb) = (av.ndim(), bv.ndim());
    let (m, k) = (av.shape()[ra - 2], av.shape()[ra - 1]);
    let (k2, n) = (bv.shape()[rb - 2], bv.shape()[rb - 1]);
    if k != k2 {
        return Err(Error::kernel(format!(
            "matrix product of shapes {:?} and {:?} (transposed: {ta}, {tb}): inner dims {k} and {k2} differ",
            a.shape(),
            b.shape()
        )));
    }
    if let Some((a2, b2)) = as_2d(a, b, ta, tb)? {
        let mut out = alloc_array(&[a2.nrows(), n], T::zero())?
            .into_dimensionality::<ndarray::Ix2>()
            .map_err(|e| Error::kernel(e.to_string()))?;
        gemm_into(a2, b2, out.view_mut());
        let mut dims = a.shape()[..ra - 2].to_vec();
        dims.extend([m, n]);
        return out
            .into_shape_with_order(IxDyn(&dims))
            .map_err(|e| Error::kernel(e.to_string()));
    }
    let batch = broadcast_shape(&av.shape()[..ra - 2], &bv.shape()[..rb - 2])?;
    let nb = numel(&batch)?;
    let mut out = alloc_array(&[nb, m, n], T::zero())?
        .into_dimensionality::<Ix3>()
        .map_err(|e| Error::kernel(e.to_string()))?;
    let mut dims = batch.clone();
    dims.extend([m, n]);
    if out.is_empty() || k == 0 {
        // Nothing to multiply: the output is empty or all zeros.
        return out
            .into_shape_with_order(IxDyn(&dims))
            .map_err(|e| Error::kernel(e.to_string()));
    }
    // Each batch's operands are 2-D views into a and b (a broadcast batch dim has stride 0, a
    // transposed operand swapped strides): the GEMM takes strides, so no operand is copied.
    let a3 = batch_matrices(&av, &batch, m, k)?;
    let b3 = batch_matrices(&bv, &batch, k, n)?;
    let items: Vec<_> = a3
        .into_iter()
        .zip(b3)
        .zip(out.axis_iter_mut(Axis(0)))
        .collect();
    let work = nb.saturating_mul(m).saturating_mul(n).saturating_mul(k) / par::MACS_PER_UNIT;
    if nb > 1 && par::chunks_for(work) > 1 {
        use rayon::prelude::*;
        par::install(|| {
            items
                .into_par_iter()
                .for_each(|((x, y), o)| gemm_into(x, y, o))
        });
    } else {
        for ((x, y), o) in items {
            gemm_into(x, y, o);
        }
    }
    out.into_shape_with_order(IxDyn(&dims))
        .map_err(|e| Error::kernel(e.to_string()))
}

/// The `r`×`c` matrices of `v` broadcast to the batch dims `batch`, as views, in standard
/// order of the batch.
fn batch_matrices<'v, T>(
    v: &'v ndarray::ArrayViewD<'_, T>,
    batch: &[usize],
    r: usize,
    c: usize,
) -> Result<Vec<ArrayView2<'v, T>>> {
    let mut dims = batch.to_vec();
    dims.extend([r, c]);
    numel(&dims)?;
    let bc = v
        .broadcast(IxDyn(&dims))
        .ok_or_else(|| Error::kernel("broadcast failed"))?;
    let mut out = with_capacity(numel(batch)?)?;
    matrices(bc, &mut out);
    Ok(out)
}

/// Appends the 2-D matrices (last two dims) of `v` to `out`, in standard order of its leading
/// dims.
fn matrices<'v, T>(v: ndarray::ArrayViewD<'v, T>, out: &mut Vec<ArrayView2<'v, T>>) {
    if v.ndim() <= 2 {
        if let Ok(m) = v.into_dimensionality::<ndarray::Ix2>() {
            out.push(m);
        }
        return;
    }
    for i in 0..v.len_of(Axis(0)) {
        matrices(v.clone().index_axis_move(Axis(0), i), out);
    }
}

/// The product for any supported dtype.
fn matmul(a: &Value, b: &Value, ta: bool, tb: bool) -> Result<Value> {
    use Value::*;
    Ok(match (a, b) {
        (F32(x), F32(y)) => F32(batched(x, y, ta, tb)?),
        (F64(x), F64(y)) => F64(batched(x, y, ta, tb)?),
        (F16(x), F16(y)) => {
            let r = batched(&x.mapv(f16::to_f32), &y.mapv(f16::to_f32), ta, tb)?;
            F16(r.mapv(f16::from_f32))
        }
        (BF16(x), BF16(y)) => {
            let r = batched(&x.mapv(bf16::to_f32), &y.mapv(bf16::to_f32), ta, tb)?;
            BF16(r.mapv(bf16::from_f32))
        }
        (I32(x), I32(y)) => {
            // Accumulate in i64, wrap to i32 (two's complement, like numpy's int32 overflow).
            let r = batched(&x.mapv(i64::from), &y.mapv(i64::from), ta, tb)?;
            I32(r.mapv(|v| v as i32))
        }
        (I64(x), I64(y)) => I64(batched(x, y, ta, tb)?),
        (I8(x), I8(y)) => {
            let r = batched(&x.mapv(i32::from), &y.mapv(i32::from), ta, tb)?;
            I32(r)
        }
        _ => {
            return Err(Error::kernel(format!(
                "matrix product of {} and {}: not supported on the CPU backend",
                a.dtype(),
                b.dtype()
            )))
        }
    })
}

fn add_bias(y: Value, bias: Option<&Value>) -> Result<Value> {
    let Some(bias) = bias else {
        return Ok(y);
    };
    use Value::*;
    Ok(match (&y, bias) {
        (F32(a), F32(b)) => F32(zip2(a, b, |p, q| p + q)?),
        (F64(a), F64(b)) => F64(zip2(a, b, |p, q| p + q)?),
        (F16(a), F16(b)) => F16(zip2(a, b, |p, q| f16::from_f32(p.to_f32() + q.to_f32()))?),
        (BF16(a), BF16(b)) => BF16(zip2(a, b, |p, q| bf16::from_f32(p.to_f32() + q.to_f32()))?),
        (I32(a), I32(b)) => I32(zip2(a, b, i32::wrapping_add)?),
        _ => {
            return Err(Error::kernel(format!(
                "bias of dtype {} for a product of dtype {}",
                bias.dtype(),
                y.dtype()
            )))
        }
    })
}

/// A MatMul node's (transpose a, transpose b, 2-D only).
fn matmul_attrs(info: &NodeInfo) -> Result<(bool, bool, bool)> {
    let batch = info.op().starts_with("Batch");
    let (ta, tb) = if batch {
        (info.bool("adj_x1", false)?, info.bool("adj_x2", false)?)
    } else {
        (
            info.bool("transpose_x1", false)?,
            info.bool("transpose_x2", false)?,
        )
    };
    Ok((ta, tb, !batch))
}

/// MatMul into a given output: f32 and f64 where b has no batch dims ([`as_2d`]), the product
/// written straight into the buffer (zeroed first, as the allocating kernel's output starts),
/// then the bias added in place, with the allocating kernel's arithmetic.
pub(crate) struct MatmulInto {
    ta: bool,
    tb: bool,
    two_d: bool,
    /// The f32 weight (input 1, a rank-2 constant) packed once for [`packed`]'s kernels,
    /// where this CPU has them and the product has enough rows ([`packs`]).
    packed: Option<packed::PackedWeight>,
    /// The plan gives this step an empty placeholder for input 1: `packed` is the weight.
    weight_dropped: bool,
}

impl MatmulInto {
    pub(crate) fn of(info: &NodeInfo) -> Result<Option<Self>> {
        const OPS: &[&str] = &["MatMul", "MatMulV2", "BatchMatMul", "BatchMatMulV2"];
        if !OPS.contains(&info.op()) {
            return Ok(None);
        }
        let (ta, tb, two_d) = matmul_attrs(info)?;
        let packed = packed_weight(info, tb)?;
        Ok(Some(MatmulInto {
            ta,
            tb,
            two_d,
            packed,
            weight_dropped: false,
        }))
    }

    /// Whether it multiplies by a packed copy of its weight on every run, so that the plan may
    /// hand it an empty placeholder for input 1 instead ([`Self::drop_weight`]). Not with a
    /// transposed first operand that may be batched: that is left to the allocating kernel
    /// ([`Self::accepts`]), which reads the weight itself.
    pub(crate) fn has_packed_weight(&self) -> bool {
        self.packed.is_some() && (!self.ta || self.two_d)
    }

    /// From now on input 1 is an empty placeholder: the packed copy is the weight. Only with
    /// a packed weight ([`Self::has_packed_weight`]).
    pub(crate) fn drop_weight(&mut self) {
        self.weight_dropped = self.has_packed_weight();
    }

    /// The weight's (k, n): the packed copy's where the plan dropped input 1, else `b`'s
    /// (transposed where `tb`); None unless `b` is a matrix.
    fn weight_dims(&self, b: &[usize]) -> Option<(usize, usize)> {
        match (&self.packed, b) {
            (Some(p), _) if self.weight_dropped => Some((p.k(), p.n())),
            (_, &[r, c]) => Some(if self.tb { (c, r) } else { (r, c) }),
            _ => None,
        }
    }

    /// Bytes of the weight packed at compile (0 without one).
    pub(crate) fn packed_bytes(&self) -> usize {
        self.packed.as_ref().map_or(0, packed::PackedWeight::bytes)
    }

    pub(crate) fn accepts(&self, args: &[Option<&Value>], dtype: DataType, dims: &[usize]) -> bool {
        fn ok<T: ElemArray>(m: &MatmulInto, args: &[Option<&Value>], dims: &[usize]) -> bool {
            let (Some(Some(a)), Some(Some(b))) = (args.first(), args.get(1)) else {
                return false;
            };
            let (Some(a), Some(b)) = (T::array(a), T::array(b)) else {
                return false;
            };
            let ra = a.ndim();
            let Some((k2, n)) = m.weight_dims(b.shape()) else {
                return false;
            };
            if ra < 2 || (m.two_d && ra != 2) || args.get(3).is_some_and(Option::is_some) {
                return false;
            }
            let (k, m_rows) = if m.ta {
                (a.shape()[ra - 2], a.shape()[ra - 1])
            } else {
                (a.shape()[ra - 1], a.shape()[ra - 2])
            };
            let want = dims.len() == ra
                && dims[..ra - 2] == a.shape()[..ra - 2]
                && dims[ra - 2..] == [m_rows, n];
            // The operands [`as_2d`] takes (`a` made standard where the weight was dropped).
            let views = ra == 2 || (!m.ta && (a.is_standard_layout() || m.weight_dropped));
            let bias_ok = match args.get(2).copied().flatten() {
                None => true,
                Some(c) => {
                    T::array(c).is_some_and(|c| super::elementwise::broadcasts(c.shape(), dims))
                }
            };
            k == k2 && want && views && bias_ok
        }
        match dtype {
            DataType::FLOAT => ok::<f32>(self, args, dims),
            DataType::DOUBLE => ok::<f64>(self, args, dims),
            _ => false,
        }
    }

    pub(crate) fn run(&self, args: &[Option<&Value>], d: Dest<'_>) -> Result<()> {
        let Dest {
            out, range, dims, ..
        } = d;
        fn go<T: ElemArray + LinalgScalar + Send + Sync>(
            m: &MatmulInto,
            args: &[Option<&Value>],
            out: &mut [T],
            dims: &[usize],
            product: impl FnOnce(
                ArrayView2<'_, T>,
                ArrayView2<'_, T>,
                ArrayViewMut2<'_, T>,
            ) -> Result<()>,
        ) -> Result<()> {
            let arr = |i: usize| {
                T::array(input(args, i)?)
                    .ok_or_else(|| Error::kernel(format!("input {i} has another dtype")))
            };
            let (mut a, b) = (arr(0)?, arr(1)?);
            let standard;
            if m.weight_dropped && a.ndim() > 2 && !a.is_standard_layout() {
                standard = a.as_standard_layout().into_owned();
                a = &standard;
            }
            let Some((a2, b2)) = as_2d(a, b, m.ta, m.tb)? else {
                return Err(Error::kernel("the product's operands are not matrices"));
            };
            let n = dims.last().copied().unwrap_or(0);
            let ov = ArrayViewMut2::from_shape((a2.nrows(), n), &mut *out)
                .map_err(|e| Error::kernel(e.to_string()))?;
            product(a2, b2, ov)?;
            if let Some(c) = args.get(2).copied().flatten() {
                let c = T::array(c).ok_or_else(|| Error::kernel("the bias has another dtype"))?;
                super::elementwise::zip_into(None, Some(c), out, dims, |p, q| p + q)?;
            }
            Ok(())
        }
        /// `c = a @ b` through [`gemm_into`] (c zeroed first, as the allocating kernel's
        /// output starts).
        fn plain<T: LinalgScalar + Send + Sync>(
            a: ArrayView2<'_, T>,
            b: ArrayView2<'_, T>,
            mut c: ArrayViewMut2<'_, T>,
        ) -> Result<()> {
            c.fill(T::zero());
            gemm_into(a, b, c);
            Ok(())
        }
        let dt = out.dtype();
        match dt {
            DataType::FLOAT => go::<f32>(self, args, out_slice_of(out, range)?, dims, |a, b, c| {
                // `b` is the weight as [k, n] (as_2d transposed it), or the placeholder where
                // the plan dropped it.
                let kn = (!self.weight_dropped).then(|| b.dim());
                let fits = |p: &&packed::PackedWeight| kn.is_none_or(|d| d == (p.k(), p.n()));
                match self.packed.as_ref().filter(fits) {
                    Some(p) => p.matmul_into(a, c),
                    None => plain(a, b, c),
                }
            }),
            DataType::DOUBLE => go::<f64>(self, args, out_slice_of(out, range)?, dims, plain),
            _ => Err(Error::unsupported(format!("a product into {dt}"))),
        }
    }
}

/// The weight of an f32 product packed once ([`packed::PackedWeight`]): input 1 a rank-2
/// constant (read transposed where `tb`), the output static with enough rows for [`packs`],
/// kernels for this CPU. None otherwise (the product runs through [`gemm_into`]).
fn packed_weight(info: &NodeInfo, tb: bool) -> Result<Option<packed::PackedWeight>> {
    let Some(Some(Value::F32(w))) = info.const_inputs.get(1) else {
        return Ok(None);
    };
    if std::env::var_os(NO_PACKING).is_some_and(|v| v == "0") {
        return Ok(None);
    }
    let Some(isa) = packed::Isa::detect() else {
        return Ok(None);
    };
    let out = match info.node.outputs.as_slice() {
        [o] if o.desc.dtype == DataType::FLOAT => &o.desc,
        _ => return Ok(None),
    };
    let rows = match crate::value::usize_dims(out.shape.dims()) {
        Some(d) if !out.shape.is_unknown_rank() && d.len() >= 2 => d[..d.len() - 1]
            .iter()
            .try_fold(1usize, |a, &x| a.checked_mul(x)),
        _ => None,
    };
    if w.ndim() != 2 || !rows.is_some_and(|m| packs(isa, m)) {
        return Ok(None);
    }
    let mut v = w
        .view()
        .into_dimensionality::<ndarray::Ix2>()
        .map_err(|e| Error::kernel(e.to_string()))?;
    if tb {
        v.swap_axes(0, 1);
    }
    packed::PackedWeight::pack(v, isa).map(Some)
}

/// The environment variable that, set to `0`, keeps constant weights unpacked (the `gemm`
/// crate's path for every product) in plans compiled from then on: for comparisons.
const NO_PACKING: &str = "GE_CPU_PACKED_WEIGHTS";

/// Whether a product of `rows` output rows takes the packed weight with `isa`'s kernels:
/// measured against the path it replaces (docs/perf-runtime.md, "Weights packed once,
/// session 27"). AVX-512: from one whole tile of rows (8); below, the `gemm` crate (its GEMV
/// for one row) is as fast. AVX2: above [`THIN_ROWS`], where the product would otherwise take
/// matrixmultiply (the `gemm` crate's AVX2 kernels, which take the thin products, were not
/// measured against: this VM has AVX-512).
fn packs(isa: packed::Isa, rows: usize) -> bool {
    match isa {
        packed::Isa::Avx512 => rows >= 8,
        packed::Isa::Avx2 => rows > THIN_ROWS,
    }
}

/// Elements `range` of a buffer, or an error naming its dtype.
fn out_slice_of<T: ElemArray>(out: &mut Value, range: Range<usize>) -> Result<&mut [T]> {
    let dt = out.dtype();
    crate::arena::out_slice(out, range)
        .ok_or_else(|| Error::kernel(format!("an output buffer of {dt} does not fit")))
}

fn matmul_factory(info: &NodeInfo) -> Result<Kernel> {
    let (ta, tb, two_d) = matmul_attrs(info)?;
    if info.inputs.get(3).is_some_and(Option::is_some) {
        return Err(Error::unsupported(format!(
            "{} with offset_w (quantized)",
            info.op()
        )));
    }
    if info.int("offset_x", 0)? != 0 {
        return Err(Error::unsupported(format!(
            "{} with offset_x != 0",
            info.op()
        )));
    }
    Ok(Box::new(move |inputs| {
        let (a, b) = (input(inputs, 0)?, input(inputs, 1)?);
        if two_d && (a.shape().len() != 2 || b.shape().len() != 2) {
            return Err(Error::kernel(format!(
                "MatMul needs 2-D operands, got {:?} and {:?}",
                a.shape(),
                b.shape()
            )));
        }
        let y = matmul(a, b, ta, tb)?;
        Ok(vec![add_bias(y, inputs.get(2).copied().flatten())?])
    }))
}

/// GEMM: alpha * op(a) @ op(b) + beta * c, computed in f64 (exact for integers below 2^53; no
/// rounding to a's dtype in between) and rounded once to the output dtype (c's, GE's T2).
fn gemm_factory(info: &NodeInfo) -> Result<Kernel> {
    let (ta, tb) = (
        info.bool("transpose_a", false)?,
        info.bool("transpose_b", false)?,
    );
    let out = info.out_dtype(0)?;
    Ok(Box::new(move |inputs| {
        let (a, b, c) = (input(inputs, 0)?, input(inputs, 1)?, input(inputs, 2)?);
        let alpha = input(inputs, 3)?
            .to_f64_vec()
            .first()
            .copied()
            .unwrap_or(1.0);
        let beta = input(inputs, 4)?
            .to_f64_vec()
            .first()
            .copied()
            .unwrap_or(1.0);
        let dt = if out == es_core::DataType::UNDEFINED {
            c.dtype()
        } else {
            out
        };
        let f64_of = |v: &Value| match v.cast(es_core::DataType::DOUBLE)? {
            Value::F64(a) => Ok(a),
            _ => Err(Error::kernel("GEMM: internal dtype error")),
        };
        let p = batched(&f64_of(a)?, &f64_of(b)?, ta, tb)?;
        let y = zip2(&p, &f64_of(c)?, |x, y| alpha * x + beta * y)?;
        Ok(vec![Value::F64(y).cast(dt)?])
    }))
}

/// This family's kernels, which [`super::registry`] collects.
pub(super) const KERNELS: Kernels = &[
    (
        &["MatMul", "MatMulV2", "BatchMatMul", "BatchMatMulV2"],
        matmul_factory,
    ),
    (&["GEMM"], gemm_factory),
    (&["Einsum"], einsum::einsum_factory),
    (&["MatrixDeterminant"], determinant::determinant_factory),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn arr(dims: &[usize], v: Vec<f32>) -> ArrayD<f32> {
        ArrayD::from_shape_vec(IxDyn(dims), v).unwrap()
    }

    #[test]
    fn batched_broadcasts_and_transposes() {
        let a = arr(&[2, 1, 2], vec![1.0, 2.0, 3.0, 4.0]);
        let b = arr(&[2, 1], vec![10.0, 100.0]);
        let y = batched(&a, &b, false, false).unwrap();
        assert_eq!(y.shape(), &[2, 1, 1]);
        assert_eq!(y.iter().copied().collect::<Vec<_>>(), vec![210.0, 430.0]);
        let bt = arr(&[1, 2], vec![10.0, 100.0]);
        assert_eq!(batched(&a, &bt, false, true).unwrap(), y);
        assert!(batched(&a, &arr(&[3, 1], vec![0.0; 3]), false, false).is_err());
    }

    /// Batch dims broadcast both ways, operands transposed or not (strided views straight into
    /// the GEMM, no copies), against a naive f64 product; empty batches and k = 0 give zeros.
    #[test]
    fn batched_views_match_a_naive_product() {
        let (m, k, n) = (5, 7, 3);
        let fill = |dims: &[usize], s: usize| {
            let len: usize = dims.iter().product();
            arr(
                dims,
                (0..len).map(|i| ((i * s) % 17) as f32 - 8.0).collect(),
            )
        };
        for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
            let ad = if ta { [2, 1, k, m] } else { [2, 1, m, k] };
            let bd = if tb { [1, 3, n, k] } else { [1, 3, k, n] };
            let (a, b) = (fill(&ad, 5), fill(&bd, 3));
            let y = batched(&a, &b, ta, tb).unwrap();
            assert_eq!(y.shape(), &[2, 3, m, n]);
            for (i, j, r, c) in (0..2)
                .flat_map(|i| (0..3).map(move |j| (i, j)))
                .flat_map(|(i, j)| (0..m).flat_map(move |r| (0..n).map(move |c| (i, j, r, c))))
            {
                let want: f64 = (0..k)
                    .map(|q| {
                        let x = if ta { a[[i, 0, q, r]] } else { a[[i, 0, r, q]] };
                        let w = if tb { b[[0, j, c, q]] } else { b[[0, j, q, c]] };
                        f64::from(x) * f64::from(w)
                    })
                    .sum();
                assert!(
                    (f64::from(y[[i, j, r, c]]) - want).abs() < 1e-3,
                    "{ta} {tb}"
                );
            }
        }
        let y = batched(&fill(&[0, 2, 3], 1), &fill(&[1, 3, 4], 1), false, false).unwrap();
        assert_eq!(y.shape(), &[0, 2, 4]);
        let y = batched(&fill(&[2, 2, 0], 1), &fill(&[2, 0, 4], 1), false, false).unwrap();
        assert_eq!(y, ArrayD::<f32>::zeros(IxDyn(&[2, 2, 4])));
    }

    #[test]
    fn an_oversized_product_is_an_error_not_a_panic() {
        // Empty operands, an output of 2**62 elements (2**64 bytes): refused, not allocated.
        let a = arr(&[1 << 31, 0], vec![]);
        let b = arr(&[0, 1 << 31], vec![]);
        let e = batched(&a, &b, false, false).unwrap_err().to_string();
        assert!(e.contains("cannot allocate"), "{e}");
        let a = arr(&[1 << 31, 1 << 31, 1, 0], vec![]);
        let b = arr(&[1 << 31, 1, 0, 2], vec![]);
        let e = batched(&a, &b, false, false).unwrap_err().to_string();
        assert!(e.contains("more elements than can be stored"), "{e}");
    }

    /// Both product paths (the gemm crate's and matrixmultiply's) and whichever `gemm_into`
    /// picks on this CPU (a split by columns for wide products at 2 threads), on plain and
    /// transposed operands, at 1 and 2 threads, against a naive f64 product.
    #[test]
    fn both_product_paths_match_a_naive_product() {
        use ndarray::Array2;
        for &(m, k, n) in &[
            (1, 7, 5),
            (17, 33, 9),
            (64, 147, 200),
            (300, 40, 3),
            (0, 3, 4),
            (20, 0, 130),
            (40, 300, 256),
        ] {
            let a = Array2::from_shape_fn((m, k), |(i, j)| ((i * 7 + j * 3) % 11) as f32 - 5.0);
            let b = Array2::from_shape_fn((n, k), |(i, j)| ((i * 5 + j) % 13) as f32 * 0.5);
            let bt = b.t();
            let want = Array2::from_shape_fn((m, n), |(i, j)| {
                (0..k)
                    .map(|q| f64::from(a[[i, q]]) * f64::from(bt[[q, j]]))
                    .sum::<f64>()
            });
            for threads in [1, 2] {
                let work = (m * n * k) << 20;
                let mut via_gemm = Array2::<f32>::zeros((m, n));
                let mut via_mm = Array2::<f32>::from_elem((m, n), f32::NAN);
                let mut picked = Array2::<f32>::from_elem((m, n), f32::NAN);
                par::run_with(threads, || {
                    let done = thin(&a.view(), &bt, &mut via_gemm.view_mut(), work);
                    if done {
                        assert!(
                            m > 0 && k > 0,
                            "the gemm crate does not take empty products"
                        );
                    } else {
                        assert!(m == 0 || k == 0, "the gemm crate takes f32 products");
                        via_gemm.fill(0.0);
                    }
                    blocked(a.view(), bt, via_mm.view_mut(), work);
                    gemm_into(a.view(), bt, picked.view_mut());
                    Ok(())
                })
                .unwrap();
                for got in [&via_gemm, &via_mm, &picked] {
                    for (g, w) in got.iter().zip(want.iter()) {
                        assert!(
                            (f64::from(*g) - w).abs() <= 1e-4 * w.abs().max(1.0),
                            "{m}x{k}x{n}"
                        );
                    }
                }
            }
        }
    }
}
