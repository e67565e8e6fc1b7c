//! Indexing and data-movement kernels: GatherV2(D), GatherElements, GatherNd, Slice(D),
//! StridedSlice(D), Split(D/V), Unpack, Pad(D/V3), OneHot(D), Range, Cumsum(D), ArgMaxV2/ArgMaxD/
//! ArgMin, TopKV2, Tril/Triu/Trilu, ReverseV2, Where, NonZero, ScatterElements, ScatterNd and
//! ScatterNdUpdate.
//!
//! Every index read from a tensor is checked: an index out of range is a kernel error (never a
//! panic), and sizes that come from values (Range, Pad) are computed with checked arithmetic and
//! allocated fallibly.

use super::common::{
    axis_of, cast_like, first, is_nan, map_num, rank_cmp, resolve, same_as, scalar_int, strides_of,
    with_capacity, IntParam,
};
// The helpers conv/ imports from here (they now live in common.rs).
pub(super) use super::common::{
    alloc, array, bad_attr, cast_to, ints, numel, std_slice, str_attr, Pick,
};
use super::elementwise::Arith;
use super::{input, norm_axis, Kernel, Kernels, NodeInfo};
use crate::error::{Error, Result};
use crate::map_array;
use crate::value::{Elem, Value};
use es_core::DataType;
use ndarray::ArrayD;
use std::cmp::Ordering;

mod bag;
mod masked;
mod unique;

// ---------------------------------------------------------------------------------------------
// Gather
// ---------------------------------------------------------------------------------------------

/// x[..axis] + indices[bd..] + x[axis + 1..]: gathers along `axis`, the first `bd` dims of x
/// and indices being batch dims.
fn gather_axis<T: Clone>(
    x: &ArrayD<T>,
    idx: &[i64],
    idx_shape: &[usize],
    axis: usize,
    bd: usize,
    neg: bool,
) -> Result<ArrayD<T>> {
    let xs = x.shape();
    if axis >= xs.len() || bd > axis || bd > idx_shape.len() {
        return Err(Error::kernel(format!(
            "batch_dims {bd} must not exceed the axis {axis} (x {xs:?}) or the rank of indices \
             {idx_shape:?}"
        )));
    }
    if xs[..bd] != idx_shape[..bd] {
        return Err(Error::kernel(format!(
            "the batch dims of x {xs:?} and indices {idx_shape:?} differ"
        )));
    }
    let b: usize = xs[..bd].iter().product();
    let outer: usize = xs[bd..axis].iter().product();
    let a = xs[axis];
    let inner: usize = xs[axis + 1..].iter().product();
    let k: usize = idx_shape[bd..].iter().product();
    let mut dims = xs[..axis].to_vec();
    dims.extend_from_slice(&idx_shape[bd..]);
    dims.extend_from_slice(&xs[axis + 1..]);
    let total = numel(&dims)?;
    let src = std_slice(x);
    let mut out = with_capacity(total)?;
    for bi in 0..b {
        for oi in 0..outer {
            for ki in 0..k {
                let raw = *idx
                    .get(bi * k + ki)
                    .ok_or_else(|| Error::kernel("indices are shorter than their shape"))?;
                let i = resolve(raw, a, neg)?;
                let start = ((bi * outer + oi) * a + i) * inner;
                out.extend_from_slice(
                    src.get(start..start + inner)
                        .ok_or_else(|| Error::kernel("internal error: gather out of bounds"))?,
                );
            }
        }
    }
    array(&dims, out)
}

fn gather_v2_factory(info: &NodeInfo) -> Result<Kernel> {
    let attr_axis = if info.op() == "GatherV2D" {
        if info.attr("axis").is_none() {
            return Err(bad_attr(info, "attribute 'axis' is required"));
        }
        Some(info.int("axis", 0)?)
    } else {
        None
    };
    let batch_dims = info.int("batch_dims", 0)?;
    // GatherV2D takes no negative indices; GatherV2 when negative_index_support is set.
    let neg = info.bool("negative_index_support", false)?;
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let iv = input(inputs, 1)?;
        let axis = match attr_axis {
            Some(a) => a,
            None => scalar_int(input(inputs, 2)?, "axis")?,
        };
        let ax = axis_of("GatherV2", x.shape(), axis)?;
        let ri = iv.shape().len() as i64;
        let bd = if batch_dims < 0 {
            batch_dims + ri
        } else {
            batch_dims
        };
        if bd < 0 || bd > ri {
            return Err(Error::kernel(format!(
                "batch_dims {batch_dims} is out of range for indices of rank {ri}"
            )));
        }
        let idx = ints(iv);
        Ok(vec![
            crate::map_any!(x, a => gather_axis(a, &idx, iv.shape(), ax, bd as usize, neg)?),
        ])
    }))
}

/// y[p] = x[p with p[axis] = index[p]]; index dims other than `axis` may be smaller than x's.
fn gather_elements<T: Copy>(x: &ArrayD<T>, along: &Along) -> Result<ArrayD<T>> {
    let (xs, idx_shape) = (x.shape(), along.idx_shape);
    if xs.len() != idx_shape.len() || along.axis >= xs.len() {
        return Err(Error::kernel(format!(
            "x {xs:?} and index {idx_shape:?} must have the same rank"
        )));
    }
    if let Some(d) = along.larger_at(xs) {
        return Err(Error::kernel(format!(
            "index {idx_shape:?} is larger than x {xs:?} at dim {d}"
        )));
    }
    let src = std_slice(x);
    let mut out = with_capacity(along.idx.len())?;
    along.for_each(xs, |_, off| {
        out.push(
            *src.get(off)
                .ok_or_else(|| Error::kernel("internal error: gather out of bounds"))?,
        );
        Ok(())
    })?;
    array(idx_shape, out)
}

/// An index tensor along one axis of another tensor (GatherElements, ScatterElements).
struct Along<'a> {
    idx: &'a [i64],
    idx_shape: &'a [usize],
    axis: usize,
    /// Resolve the indices as a scatter does ([`resolve`]).
    scatter: bool,
}

impl<'a> Along<'a> {
    fn new(idx: &'a [i64], idx_shape: &'a [usize], axis: usize, scatter: bool) -> Self {
        Along {
            idx,
            idx_shape,
            axis,
            scatter,
        }
    }
    /// The first dim other than the axis where the index tensor is larger than `dims`.
    fn larger_at(&self, dims: &[usize]) -> Option<usize> {
        (0..dims.len()).find(|&d| d != self.axis && self.idx_shape[d] > dims[d])
    }
    /// Calls `f(flat, offset)` for every position of the index tensor: `offset` is the element
    /// of a tensor of shape `dims` at that position with its `axis` coordinate the index there.
    fn for_each(
        &self,
        dims: &[usize],
        mut f: impl FnMut(usize, usize) -> Result<()>,
    ) -> Result<()> {
        let st = strides_of(dims);
        for_each_index(self.idx_shape, |flat, pos| {
            let raw = *self.idx.get(flat).ok_or_else(|| {
                Error::kernel(if self.scatter {
                    "indices are shorter than their shape"
                } else {
                    "index is shorter than its shape"
                })
            })?;
            let i = resolve(raw, dims[self.axis], self.scatter)?;
            let mut off = 0usize;
            for (d, (&p, &s)) in pos.iter().zip(&st).enumerate() {
                off += if d == self.axis { i * s } else { p * s };
            }
            f(flat, off)
        })
    }
}

/// Calls `f(flat, multi_index)` for every position of `shape`, in row-major order.
fn for_each_index(shape: &[usize], mut f: impl FnMut(usize, &[usize]) -> Result<()>) -> Result<()> {
    let total = numel(shape)?;
    let mut pos = vec![0usize; shape.len()];
    for flat in 0..total {
        f(flat, &pos)?;
        for d in (0..shape.len()).rev() {
            pos[d] += 1;
            if pos[d] < shape[d] {
                break;
            }
            pos[d] = 0;
        }
    }
    Ok(())
}

fn gather_elements_factory(info: &NodeInfo) -> Result<Kernel> {
    let dim = info.int("dim", 0)?;
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let iv = input(inputs, 1)?;
        let ax = norm_axis(dim, x.shape().len())?;
        let idx = ints(iv);
        let along = Along::new(&idx, iv.shape(), ax, false);
        Ok(vec![map_array!(x, a => gather_elements(a, &along)?)])
    }))
}

/// The flat offsets (and the slice length) addressed by the rows of an [.., K] index tensor.
fn nd_offsets(
    xs: &[usize],
    idx: &[i64],
    idx_shape: &[usize],
    neg: bool,
) -> Result<(Vec<usize>, usize)> {
    let Some((&k, lead)) = idx_shape.split_last() else {
        return Err(Error::kernel("indices must have rank >= 1"));
    };
    if k > xs.len() {
        return Err(Error::kernel(format!(
            "the last dim of indices {idx_shape:?} is {k}, more than the rank of {xs:?}"
        )));
    }
    let rows: usize = lead.iter().product();
    let inner: usize = xs[k..].iter().product();
    let st = strides_of(xs);
    let mut offs = with_capacity(rows)?;
    for r in 0..rows {
        let mut off = 0usize;
        for j in 0..k {
            let raw = *idx
                .get(r * k + j)
                .ok_or_else(|| Error::kernel("indices are shorter than their shape"))?;
            off += resolve(raw, xs[j], neg)? * st[j];
        }
        offs.push(off);
    }
    Ok((offs, inner))
}

fn gather_nd<T: Copy>(
    x: &ArrayD<T>,
    idx: &[i64],
    idx_shape: &[usize],
    neg: bool,
) -> Result<ArrayD<T>> {
    let xs = x.shape();
    let (offs, inner) = nd_offsets(xs, idx, idx_shape, neg)?;
    let k = idx_shape.last().copied().unwrap_or(0);
    let mut dims = idx_shape[..idx_shape.len() - 1].to_vec();
    dims.extend_from_slice(&xs[k..]);
    let src = std_slice(x);
    let mut out = with_capacity(numel(&dims)?)?;
    for off in offs {
        out.extend_from_slice(
            src.get(off..off + inner)
                .ok_or_else(|| Error::kernel("internal error: gather out of bounds"))?,
        );
    }
    array(&dims, out)
}

fn gather_nd_factory(info: &NodeInfo) -> Result<Kernel> {
    let neg = info.bool("negative_index_support", false)?;
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let iv = input(inputs, 1)?;
        let idx = ints(iv);
        Ok(vec![
            map_array!(x, a => gather_nd(a, &idx, iv.shape(), neg)?),
        ])
    }))
}

// ---------------------------------------------------------------------------------------------
// Scatter
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq)]
enum Reduction {
    None,
    Add,
    Mul,
    Max,
    Min,
}

fn combine<T: Arith>(r: Reduction, old: T, new: T) -> T {
    match r {
        Reduction::None => new,
        Reduction::Add => Arith::add(old, new),
        Reduction::Mul => Arith::mul(old, new),
        Reduction::Max => {
            if is_nan(&old) || rank_cmp(&new, &old) != Ordering::Greater {
                old
            } else {
                new
            }
        }
        Reduction::Min => {
            if is_nan(&old) || (!is_nan(&new) && new >= old) {
                old
            } else {
                new
            }
        }
    }
}

fn scatter_elements<T: Arith>(
    data: &ArrayD<T>,
    upd: &ArrayD<T>,
    along: &Along,
    r: Reduction,
) -> Result<ArrayD<T>> {
    let (ds, idx_shape) = (data.shape(), along.idx_shape);
    if idx_shape.len() != ds.len() || upd.shape() != idx_shape || along.axis >= ds.len() {
        return Err(Error::kernel(format!(
            "data {ds:?}, indices {idx_shape:?} and updates {:?}: indices and updates must have \
             one shape and data's rank",
            upd.shape()
        )));
    }
    if let Some(d) = along.larger_at(ds) {
        return Err(Error::kernel(format!(
            "indices {idx_shape:?} are larger than data {ds:?} at dim {d}"
        )));
    }
    let mut out = std_slice(data).into_owned();
    let u = std_slice(upd);
    along.for_each(ds, |flat, off| {
        let nv = *u
            .get(flat)
            .ok_or_else(|| Error::kernel("updates are shorter than their shape"))?;
        let slot = out
            .get_mut(off)
            .ok_or_else(|| Error::kernel("internal error: scatter out of bounds"))?;
        *slot = combine(r, *slot, nv);
        Ok(())
    })?;
    array(ds, out)
}

fn scatter_elements_factory(info: &NodeInfo) -> Result<Kernel> {
    let axis = info.int("axis", 0)?;
    let r = match str_attr(info, "reduction", "none")?.as_str() {
        "none" => Reduction::None,
        "add" => Reduction::Add,
        "mul" => Reduction::Mul,
        "max" => Reduction::Max,
        "min" => Reduction::Min,
        other => {
            return Err(Error::unsupported(format!(
                "ScatterElements with reduction {other:?}"
            )))
        }
    };
    Ok(Box::new(move |inputs| {
        let data = input(inputs, 0)?;
        let iv = input(inputs, 1)?;
        let upd = input(inputs, 2)?;
        let ax = norm_axis(axis, data.shape().len())?;
        let idx = ints(iv);
        let along = Along::new(&idx, iv.shape(), ax, true);
        Ok(vec![map_num!(data, "ScatterElements", a => {
            let u = same_as(a, upd, "updates")?;
            scatter_elements(a, u, &along, r)?
        })])
    }))
}

/// Writes (or, `add`, sums) the slices of `upd` into `out` (of shape `shape`) at the rows of
/// an [.., K] index tensor.
fn scatter_nd_into<T: Copy>(
    out: &mut [T],
    shape: &[usize],
    idx: &[i64],
    idx_shape: &[usize],
    upd: &ArrayD<T>,
    f: impl Fn(T, T) -> T,
) -> Result<()> {
    let (offs, inner) = nd_offsets(shape, idx, idx_shape, false)?;
    let k = idx_shape.last().copied().unwrap_or(0);
    let mut want = idx_shape[..idx_shape.len() - 1].to_vec();
    want.extend_from_slice(&shape[k..]);
    if upd.shape() != want.as_slice() {
        return Err(Error::kernel(format!(
            "updates {:?} must have shape {want:?} (indices[:-1] + shape[{k}:])",
            upd.shape()
        )));
    }
    let u = std_slice(upd);
    for (r, off) in offs.into_iter().enumerate() {
        let dst = out
            .get_mut(off..off + inner)
            .ok_or_else(|| Error::kernel("internal error: scatter out of bounds"))?;
        let src = u
            .get(r * inner..(r + 1) * inner)
            .ok_or_else(|| Error::kernel("internal error: updates out of bounds"))?;
        for (d, &s) in dst.iter_mut().zip(src) {
            *d = f(*d, s);
        }
    }
    Ok(())
}

fn scatter_nd_factory(_: &NodeInfo) -> Result<Kernel> {
    Ok(Box::new(|inputs| {
        let iv = input(inputs, 0)?;
        let x = input(inputs, 1)?;
        let want = ints(input(inputs, 2)?);
        if let Some(d) = want.iter().find(|&&d| d < 0) {
            return Err(Error::kernel(format!(
                "shape {want:?} has a negative dim {d}"
            )));
        }
        let shape: Vec<usize> = want.iter().map(|&d| d as usize).collect();
        let idx = ints(iv);
        Ok(vec![map_num!(x, "ScatterNd", a => {
            let mut out = alloc(numel(&shape)?, Elem::from_f64(0.0))?;
            scatter_nd_into(&mut out, &shape, &idx, iv.shape(), a, Arith::add)?;
            array(&shape, out)?
        })])
    }))
}

fn scatter_nd_update_factory(_: &NodeInfo) -> Result<Kernel> {
    Ok(Box::new(|inputs| {
        let var = input(inputs, 0)?;
        let iv = input(inputs, 1)?;
        let upd = input(inputs, 2)?;
        let idx = ints(iv);
        Ok(vec![map_array!(var, a => {
            let u = same_as(a, upd, "updates")?;
            let mut out = std_slice(a).into_owned();
            scatter_nd_into(&mut out, a.shape(), &idx, iv.shape(), u, |_, n| n)?;
            array(a.shape(), out)?
        })])
    }))
}

// ---------------------------------------------------------------------------------------------
// OneHot, Range, Cumsum
// ---------------------------------------------------------------------------------------------

fn one_hot<T: Copy>(
    idx: &[i64],
    xs: &[usize],
    depth: usize,
    pos: usize,
    on: T,
    off: T,
) -> Result<ArrayD<T>> {
    let mut dims = xs.to_vec();
    dims.insert(pos, depth);
    let outer: usize = xs[..pos].iter().product();
    let inner: usize = xs[pos..].iter().product();
    let mut out = with_capacity(numel(&dims)?)?;
    for o in 0..outer {
        for k in 0..depth {
            for i in 0..inner {
                let v = idx.get(o * inner + i).copied().unwrap_or(-1);
                out.push(if v >= 0 && v as u64 == k as u64 {
                    on
                } else {
                    off
                });
            }
        }
    }
    array(&dims, out)
}

fn one_hot_factory(info: &NodeInfo) -> Result<Kernel> {
    let axis = info.int("axis", -1)?;
    let depth = IntParam::of(info, "OneHotD", "depth")?;
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        // OneHot: x, depth, on_value, off_value; OneHotD: x, on_value, off_value.
        let k = if depth.is_attr() { 1 } else { 2 };
        let depth = depth.get(inputs, 1)?;
        let on = input(inputs, k)?;
        let off = input(inputs, k + 1)?;
        let depth = usize::try_from(depth)
            .map_err(|_| Error::kernel(format!("depth must be >= 0, got {depth}")))?;
        let xs = x.shape();
        let r = xs.len() as i64;
        if axis < -1 || axis > r {
            return Err(Error::kernel(format!(
                "axis {axis} is out of range [-1, {r}]"
            )));
        }
        let pos = if axis == -1 { xs.len() } else { axis as usize };
        let idx = ints(x);
        Ok(vec![map_array!(on, a => {
            let on_v = first(a, "on_value")?;
            let off_v = first(cast_like(a, off)?.as_ref(), "off_value")?;
            one_hot(&idx, xs, depth, pos, on_v, off_v)?
        })])
    }))
}

/// The k largest (smallest) values along `axis`, sorted, ties by lower index; and their indices.
fn top_k<T: Copy + PartialOrd>(
    a: &ArrayD<T>,
    axis: usize,
    k: usize,
    largest: bool,
) -> Result<(ArrayD<T>, ArrayD<i64>)> {
    let xs = a.shape();
    let n = xs[axis];
    if k > n {
        return Err(Error::kernel(format!(
            "k {k} is more than dim {axis} of x {xs:?}"
        )));
    }
    let outer: usize = xs[..axis].iter().product();
    let inner: usize = xs[axis + 1..].iter().product();
    let src = std_slice(a);
    let mut dims = xs.to_vec();
    dims[axis] = k;
    let total = numel(&dims)?;
    let mut vals: Vec<T> = with_capacity(total)?;
    let mut idxs: Vec<i64> = alloc(total, 0)?;
    let mut order: Vec<usize> = Vec::with_capacity(n);
    for o in 0..outer {
        for i in 0..inner {
            let base = o * n * inner + i;
            let line: Vec<T> = (0..n)
                .map(|j| src.get(base + j * inner).copied())
                .collect::<Option<_>>()
                .ok_or_else(|| Error::kernel("internal error: topk out of bounds"))?;
            let cmp = |p: &usize, q: &usize| {
                let c = rank_cmp(&line[*p], &line[*q]);
                let c = if largest { c.reverse() } else { c };
                c.then(p.cmp(q))
            };
            order.clear();
            order.extend(0..n);
            if k < n && k > 0 {
                order.select_nth_unstable_by(k - 1, cmp);
            }
            order.truncate(k);
            order.sort_by(cmp);
            for (t, &j) in order.iter().enumerate() {
                let at = (o * k + t) * inner + i;
                idxs[at] = j as i64;
            }
        }
    }
    // Values in output order.
    for (at, &j) in idxs.iter().enumerate() {
        let i = at % inner.max(1);
        let o = at / (k * inner).max(1);
        let v = src
            .get((o * n + j as usize) * inner + i)
            .copied()
            .ok_or_else(|| Error::kernel("internal error: topk out of bounds"))?;
        vals.push(v);
    }
    Ok((array(&dims, vals)?, array(&dims, idxs)?))
}

fn top_k_factory(info: &NodeInfo) -> Result<Kernel> {
    let dim = info.int("dim", -1)?;
    let largest = info.bool("largest", true)?;
    let idx_dt = info.out_dtype(1).unwrap_or(DataType::INT32);
    let idx_dt = if matches!(idx_dt, DataType::INT32 | DataType::INT64) {
        idx_dt
    } else {
        DataType::INT32
    };
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let k = scalar_int(input(inputs, 1)?, "k")?;
        let k =
            usize::try_from(k).map_err(|_| Error::kernel(format!("k must be >= 0, got {k}")))?;
        let ax = axis_of("TopKV2", x.shape(), dim)?;
        let (vals, idx) = crate::with_array!(x, a => {
            let (v, i) = top_k(a, ax, k, largest)?;
            (Elem::wrap(v), i)
        });
        Ok(vec![vals, Value::I64(idx).cast(idx_dt)?])
    }))
}

// ---------------------------------------------------------------------------------------------
// Triangles, Where/NonZero
// ---------------------------------------------------------------------------------------------

/// The standard-order positions of the elements of `a` that are not zero (NaN is not zero).
fn nonzero_positions<T: Elem>(a: &ArrayD<T>) -> Vec<usize> {
    let zero = T::from_f64(0.0);
    a.iter()
        .enumerate()
        .filter(|(_, v)| **v != zero)
        .map(|(i, _)| i)
        .collect()
}

fn nonzero_factory(info: &NodeInfo) -> Result<Kernel> {
    let transpose = info.op() == "NonZero" && info.bool("transpose", false)?;
    let dt = info.out_dtype(0).unwrap_or(DataType::INT64);
    let dt = if matches!(dt, DataType::INT32 | DataType::INT64) {
        dt
    } else {
        DataType::INT64
    };
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let xs = x.shape().to_vec();
        let r = xs.len();
        let flat: Vec<usize> = crate::with_array!(x, a => nonzero_positions(a));
        let count = flat.len();
        let st = strides_of(&xs);
        let mut coords = alloc(numel(&[count, r])?, 0i64)?;
        for (c, &f) in flat.iter().enumerate() {
            for d in 0..r {
                let v = ((f / st[d].max(1)) % xs[d].max(1)) as i64;
                let at = if transpose { d * count + c } else { c * r + d };
                coords[at] = v;
            }
        }
        let dims = if transpose { [r, count] } else { [count, r] };
        Ok(vec![Value::I64(array(&dims, coords)?).cast(dt)?])
    }))
}

/// This family's kernels, which [`super::registry`] collects.
pub(super) const KERNELS: Kernels = &[
    (&["GatherV2", "GatherV2D"], gather_v2_factory),
    (&["MaskedFill"], masked::masked_fill_factory),
    (&["EmbeddingBag"], bag::embedding_bag_factory),
    (&["UniqueWithCountsAndSorting"], unique::unique_factory),
    (&["GatherElements"], gather_elements_factory),
    (&["GatherNd"], gather_nd_factory),
    (&["ScatterElements"], scatter_elements_factory),
    (&["ScatterNd"], scatter_nd_factory),
    (&["ScatterNdUpdate"], scatter_nd_update_factory),
    (&["OneHot", "OneHotD"], one_hot_factory),
    (&["TopKV2"], top_k_factory),
    (&["Where", "NonZero"], nonzero_factory),
];

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::IxDyn;

    #[test]
    fn gather_checks_indices() {
        let x = ArrayD::from_shape_vec(IxDyn(&[3, 2]), vec![0, 1, 2, 3, 4, 5]).unwrap();
        let y = gather_axis(&x, &[2, 0], &[2], 0, 0, false).unwrap();
        assert_eq!(y.iter().copied().collect::<Vec<_>>(), vec![4, 5, 0, 1]);
        assert!(gather_axis(&x, &[3], &[1], 0, 0, false).is_err());
        assert!(gather_axis(&x, &[-1], &[1], 0, 0, false).is_err());
        let y = gather_axis(&x, &[-1], &[1], 0, 0, true).unwrap();
        assert_eq!(y.iter().copied().collect::<Vec<_>>(), vec![4, 5]);
        assert!(gather_axis(&x, &[i64::MIN], &[1], 1, 0, true).is_err());
        assert!(gather_nd(&x, &[1, 2], &[1, 2], false).is_err());
        assert_eq!(
            gather_nd(&x, &[2, 1], &[1, 2], false)
                .unwrap()
                .into_raw_vec_and_offset()
                .0,
            vec![5]
        );
    }
}
