//! Indexing and data-movement kernels: GatherV2(D), GatherElements, GatherNd, Slice(D),
//! StridedSlice(D), Split(D/V), Unpack, Pad(D/V3), OneHot(D), Range, Cumsum(D), ArgMaxV2/ArgMaxD/
//! ArgMin, TopKV2, Tril/Triu/Trilu, ReverseV2, Where, NonZero, ScatterElements, ScatterNd and
//! ScatterNdUpdate.
//!
//! Every index read from a tensor is checked: an index out of range is a kernel error (never a
//! panic), and sizes that come from values (Range, Pad) are computed with checked arithmetic and
//! allocated fallibly.

use super::elementwise::Arith;
use super::{input, norm_axis, Factory, Kernel, NodeInfo};
use crate::error::{Error, Result};
use crate::map_array;
use crate::value::{Elem, Value};
use es_core::attr::AttrValue;
use es_core::DataType;
use half::{bf16, f16};
use ndarray::{ArrayD, IxDyn};
use rustc_hash::FxHashMap;
use std::borrow::Cow;
use std::cmp::Ordering;

// ---------------------------------------------------------------------------------------------
// Helpers shared with the conv, pool and norm families
// ---------------------------------------------------------------------------------------------

/// An element type whose array can be taken out of a [`Value`].
pub(super) trait Pick: Elem {
    fn pick(v: &Value) -> Option<&ArrayD<Self>>;
    fn take(v: Value) -> Option<ArrayD<Self>>;
}

macro_rules! pick {
    ($t:ty, $var:ident) => {
        impl Pick for $t {
            fn pick(v: &Value) -> Option<&ArrayD<Self>> {
                match v {
                    Value::$var(a) => Some(a),
                    _ => None,
                }
            }
            fn take(v: Value) -> Option<ArrayD<Self>> {
                match v {
                    Value::$var(a) => Some(a),
                    _ => None,
                }
            }
        }
    };
}
pick!(f32, F32);
pick!(f64, F64);
pick!(f16, F16);
pick!(bf16, BF16);
pick!(i8, I8);
pick!(i16, I16);
pick!(i32, I32);
pick!(i64, I64);
pick!(u8, U8);
pick!(u16, U16);
pick!(u32, U32);
pick!(u64, U64);
pick!(bool, Bool);

/// `v` as an array of `T`, converted (numpy's `astype`) when it has another dtype.
pub(super) fn cast_to<T: Pick>(v: &Value) -> Result<Cow<'_, ArrayD<T>>> {
    if let Some(a) = T::pick(v) {
        return Ok(Cow::Borrowed(a));
    }
    T::take(v.cast(T::DTYPE)?)
        .map(Cow::Owned)
        .ok_or_else(|| Error::kernel("internal error: cast gave another dtype"))
}

/// Like [`cast_to`], the element type taken from `_like`.
fn cast_like<'v, T: Pick>(_like: &ArrayD<T>, v: &'v Value) -> Result<Cow<'v, ArrayD<T>>> {
    cast_to::<T>(v)
}

/// `v`, which must have the element type of `_like`.
fn same_as<'v, T: Pick>(_like: &ArrayD<T>, v: &'v Value, what: &str) -> Result<&'v ArrayD<T>> {
    T::pick(v).ok_or_else(|| {
        Error::kernel(format!(
            "{what} must have dtype {}, got {}",
            T::DTYPE,
            v.dtype()
        ))
    })
}

/// An error for a malformed attribute, naming the node.
pub(super) fn bad_attr(info: &NodeInfo, msg: impl std::fmt::Display) -> Error {
    Error::Compile(format!("node '{}' ({}): {msg}", info.node.name, info.op()))
}

/// A string attribute (`default` when absent).
pub(super) fn str_attr(info: &NodeInfo, name: &str, default: &str) -> Result<String> {
    match info.attr(name) {
        None => Ok(default.to_string()),
        Some(v) => v
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| bad_attr(info, format!("attribute '{name}' must be a string"))),
    }
}

/// A vector of `n` copies of `v`; running out of memory is an error, not an abort.
pub(super) fn alloc<T: Clone>(n: usize, v: T) -> Result<Vec<T>> {
    let mut out = Vec::new();
    out.try_reserve_exact(n)
        .map_err(|_| Error::kernel(format!("cannot allocate {n} elements")))?;
    out.resize(n, v);
    Ok(out)
}

/// An empty vector with room for `n` elements (fallible).
pub(super) fn with_capacity<T>(n: usize) -> Result<Vec<T>> {
    let mut out = Vec::new();
    out.try_reserve_exact(n)
        .map_err(|_| Error::kernel(format!("cannot allocate {n} elements")))?;
    Ok(out)
}

/// The element count of `dims`, an error on overflow.
pub(super) fn numel(dims: &[usize]) -> Result<usize> {
    dims.iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or_else(|| Error::kernel(format!("shape {dims:?} has too many elements")))
}

/// An array of `dims` from elements in standard order.
pub(super) fn array<T>(dims: &[usize], v: Vec<T>) -> Result<ArrayD<T>> {
    ArrayD::from_shape_vec(IxDyn(dims), v).map_err(|e| Error::kernel(e.to_string()))
}

/// The elements of `a` in standard (row-major) order, borrowed when they already are.
pub(super) fn std_slice<T: Clone>(a: &ArrayD<T>) -> Cow<'_, [T]> {
    match a.as_slice() {
        Some(s) => Cow::Borrowed(s),
        None => Cow::Owned(a.iter().cloned().collect()),
    }
}

/// Row-major strides (in elements) of `shape`.
pub(super) fn strides_of(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1usize; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1].saturating_mul(shape[i + 1]);
    }
    s
}

/// The one element of `a`.
pub(super) fn first<T: Copy>(a: &ArrayD<T>, what: &str) -> Result<T> {
    if a.len() != 1 {
        return Err(Error::kernel(format!(
            "{what} must hold one value, got shape {:?}",
            a.shape()
        )));
    }
    a.iter()
        .next()
        .copied()
        .ok_or_else(|| Error::kernel(format!("{what} is empty")))
}

/// The elements of an integer tensor as i64 (exact for 64-bit integers).
pub(super) fn ints(v: &Value) -> Vec<i64> {
    match v {
        Value::I64(a) => a.iter().copied().collect(),
        Value::I32(a) => a.iter().map(|&x| i64::from(x)).collect(),
        Value::U64(a) => a
            .iter()
            .map(|&x| i64::try_from(x).unwrap_or(i64::MAX))
            .collect(),
        _ => v.to_i64_vec(),
    }
}

/// The one integer held by `v`.
pub(super) fn scalar_int(v: &Value, what: &str) -> Result<i64> {
    let x = ints(v);
    match x.as_slice() {
        [a] => Ok(*a),
        _ => Err(Error::kernel(format!(
            "{what} must hold one value, got shape {:?}",
            v.shape()
        ))),
    }
}

/// An index into a dim of size `d` (negative counts from the end when `neg` is allowed).
fn resolve(raw: i64, d: usize, neg: bool) -> Result<usize> {
    let v = if raw < 0 && neg {
        i128::from(raw) + d as i128
    } else {
        i128::from(raw)
    };
    if v < 0 || v >= d as i128 {
        return Err(Error::kernel(format!(
            "index {raw} is out of range for a dim of size {d}"
        )));
    }
    Ok(v as usize)
}

/// Whether `v` is NaN (the one value not equal to itself).
#[allow(clippy::eq_op)]
fn is_nan<T: PartialEq>(v: &T) -> bool {
    v != v
}

/// A total order for ranking: NaN above everything (as PyTorch's topk/sort).
pub(super) fn rank_cmp<T: PartialOrd>(a: &T, b: &T) -> Ordering {
    match (is_nan(a), is_nan(b)) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => a.partial_cmp(b).unwrap_or(Ordering::Equal),
    }
}

/// Rebuilds a numeric value of the same dtype from the body's array; bool is an error.
macro_rules! map_num {
    ($v:expr, $what:expr, $a:ident => $body:expr) => {
        match $v {
            Value::F32($a) => Value::F32($body),
            Value::F64($a) => Value::F64($body),
            Value::F16($a) => Value::F16($body),
            Value::BF16($a) => Value::BF16($body),
            Value::I8($a) => Value::I8($body),
            Value::I16($a) => Value::I16($body),
            Value::I32($a) => Value::I32($body),
            Value::I64($a) => Value::I64($body),
            Value::U8($a) => Value::U8($body),
            Value::U16($a) => Value::U16($body),
            Value::U32($a) => Value::U32($body),
            Value::U64($a) => Value::U64($body),
            Value::Bool(_) => {
                return Err(Error::kernel(format!(
                    "{} does not take bool tensors",
                    $what
                )))
            }
        }
    };
}
pub(super) use map_num;

/// Per dim of a source tensor, the source index of each output position (`None`: a fill value).
type Maps = Vec<Vec<Option<usize>>>;

/// An array whose element at (o_0, .., o_k) is x at (maps[0][o_0], .., maps[k][o_k]), or `fill`
/// where a map entry is `None`. Map entries out of range are an error.
pub(super) fn take_axes<T: Copy>(
    x: &ArrayD<T>,
    maps: &[Vec<Option<usize>>],
    fill: T,
) -> Result<ArrayD<T>> {
    let shape = x.shape();
    if maps.len() != shape.len() {
        return Err(Error::kernel(format!(
            "internal error: {} index maps for rank {}",
            maps.len(),
            shape.len()
        )));
    }
    let dims: Vec<usize> = maps.iter().map(Vec::len).collect();
    let total = numel(&dims)?;
    let src = std_slice(x);
    if shape.is_empty() {
        return array(&[], src.iter().copied().take(1).collect());
    }
    let strides = strides_of(shape);
    let mut offs: Maps = Vec::with_capacity(maps.len());
    for ((m, &s), &d) in maps.iter().zip(&strides).zip(shape) {
        let mut v = with_capacity(m.len())?;
        for o in m {
            v.push(match *o {
                Some(i) if i < d => Some(i * s),
                Some(i) => {
                    return Err(Error::kernel(format!(
                        "index {i} is out of range for a dim of size {d}"
                    )))
                }
                None => None,
            });
        }
        offs.push(v);
    }
    fn rec<T: Copy>(
        src: &[T],
        offs: &[Vec<Option<usize>>],
        base: Option<usize>,
        out: &mut Vec<T>,
        fill: T,
    ) {
        let Some((here, rest)) = offs.split_first() else {
            return;
        };
        for o in here {
            let b = match (base, o) {
                (Some(b), Some(o)) => Some(b + o),
                _ => None,
            };
            if rest.is_empty() {
                out.push(b.and_then(|i| src.get(i).copied()).unwrap_or(fill));
            } else {
                rec(src, rest, b, out, fill);
            }
        }
    }
    let mut out = with_capacity(total)?;
    if total > 0 {
        rec(&src, &offs, Some(0), &mut out, fill);
    }
    array(&dims, out)
}

/// [`take_axes`] for any value; `fill` (cast to x's dtype) where a map entry is `None`.
fn take_value(x: &Value, maps: &[Vec<Option<usize>>], fill: Option<&Value>) -> Result<Value> {
    Ok(map_array!(x, a => {
        let f = match fill {
            Some(v) => first(cast_like(a, v)?.as_ref(), "the pad value")?,
            None => Elem::from_f64(0.0),
        };
        take_axes(a, maps, f)?
    }))
}

/// The full index map of a dim of size `d`.
fn full(d: usize) -> Vec<Option<usize>> {
    (0..d).map(Some).collect()
}

/// `x` reshaped (same element count).
fn reshaped(x: Value, dims: &[usize]) -> Result<Value> {
    super::shape::reshape(&x, dims)
}

// ---------------------------------------------------------------------------------------------
// Gather
// ---------------------------------------------------------------------------------------------

/// x[..axis] + indices[bd..] + x[axis + 1..]: gathers along `axis`, the first `bd` dims of x
/// and indices being batch dims.
fn gather_axis<T: Copy>(
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
        let rank = x.shape().len();
        if rank == 0 {
            return Err(Error::kernel("GatherV2 needs x of rank >= 1"));
        }
        let ax = norm_axis(axis, rank)?;
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
            map_array!(x, a => gather_axis(a, &idx, iv.shape(), ax, bd as usize, neg)?),
        ])
    }))
}

/// y[p] = x[p with p[axis] = index[p]]; index dims other than `axis` may be smaller than x's.
fn gather_elements<T: Copy>(
    x: &ArrayD<T>,
    idx: &[i64],
    idx_shape: &[usize],
    axis: usize,
) -> Result<ArrayD<T>> {
    let xs = x.shape();
    if xs.len() != idx_shape.len() || axis >= xs.len() {
        return Err(Error::kernel(format!(
            "x {xs:?} and index {idx_shape:?} must have the same rank"
        )));
    }
    if let Some(d) = (0..xs.len()).find(|&d| d != axis && idx_shape[d] > xs[d]) {
        return Err(Error::kernel(format!(
            "index {idx_shape:?} is larger than x {xs:?} at dim {d}"
        )));
    }
    let src = std_slice(x);
    let xst = strides_of(xs);
    let mut out = with_capacity(idx.len())?;
    for_each_index(idx_shape, |flat, pos| {
        let raw = *idx
            .get(flat)
            .ok_or_else(|| Error::kernel("index is shorter than its shape"))?;
        let i = resolve(raw, xs[axis], false)?;
        let mut off = 0usize;
        for (d, (&p, &s)) in pos.iter().zip(&xst).enumerate() {
            off += if d == axis { i * s } else { p * s };
        }
        out.push(
            *src.get(off)
                .ok_or_else(|| Error::kernel("internal error: gather out of bounds"))?,
        );
        Ok(())
    })?;
    array(idx_shape, out)
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
        Ok(vec![
            map_array!(x, a => gather_elements(a, &idx, iv.shape(), ax)?),
        ])
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
    idx: &[i64],
    idx_shape: &[usize],
    upd: &ArrayD<T>,
    axis: usize,
    r: Reduction,
) -> Result<ArrayD<T>> {
    let ds = data.shape();
    if idx_shape.len() != ds.len() || upd.shape() != idx_shape || axis >= ds.len() {
        return Err(Error::kernel(format!(
            "data {ds:?}, indices {idx_shape:?} and updates {:?}: indices and updates must have \
             one shape and data's rank",
            upd.shape()
        )));
    }
    if let Some(d) = (0..ds.len()).find(|&d| d != axis && idx_shape[d] > ds[d]) {
        return Err(Error::kernel(format!(
            "indices {idx_shape:?} are larger than data {ds:?} at dim {d}"
        )));
    }
    let mut out = std_slice(data).into_owned();
    let u = std_slice(upd);
    let st = strides_of(ds);
    for_each_index(idx_shape, |flat, pos| {
        let raw = *idx
            .get(flat)
            .ok_or_else(|| Error::kernel("indices are shorter than their shape"))?;
        let i = resolve(raw, ds[axis], true)?;
        let mut off = 0usize;
        for (d, (&p, &s)) in pos.iter().zip(&st).enumerate() {
            off += if d == axis { i * s } else { p * s };
        }
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
        Ok(vec![map_num!(data, "ScatterElements", a => {
            let u = same_as(a, upd, "updates")?;
            scatter_elements(a, &idx, iv.shape(), u, ax, r)?
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
// Slicing
// ---------------------------------------------------------------------------------------------

/// Slice maps: offsets (negative from the end) and sizes (-1: the rest).
fn slice_maps(xs: &[usize], offsets: &[i64], sizes: &[i64]) -> Result<Maps> {
    if offsets.len() != xs.len() || sizes.len() != xs.len() {
        return Err(Error::kernel(format!(
            "offsets {offsets:?} and size {sizes:?} must have one value per dim of x {xs:?}"
        )));
    }
    let mut maps = Vec::with_capacity(xs.len());
    for (i, ((&d, &o), &s)) in xs.iter().zip(offsets).zip(sizes).enumerate() {
        let di = d as i128;
        let b = if o < 0 {
            i128::from(o) + di
        } else {
            i128::from(o)
        };
        if b < 0 || b > di {
            return Err(Error::kernel(format!(
                "offset {o} is out of range for dim {i} of x {xs:?}"
            )));
        }
        let len = match s {
            -1 => di - b,
            s if s >= 0 && b + i128::from(s) <= di => i128::from(s),
            _ => {
                return Err(Error::kernel(format!(
                    "size {s} at offset {o} does not fit dim {i} of x {xs:?}"
                )))
            }
        };
        maps.push((b as usize..(b + len) as usize).map(Some).collect());
    }
    Ok(maps)
}

fn slice_factory(info: &NodeInfo) -> Result<Kernel> {
    let attrs = if info.op() == "SliceD" {
        let o = info
            .ints("offsets")?
            .ok_or_else(|| bad_attr(info, "attribute 'offsets' is required"))?;
        let s = info
            .ints("size")?
            .ok_or_else(|| bad_attr(info, "attribute 'size' is required"))?;
        Some((o, s))
    } else {
        None
    };
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let (o, s) = match &attrs {
            Some((o, s)) => (o.clone(), s.clone()),
            None => (ints(input(inputs, 1)?), ints(input(inputs, 2)?)),
        };
        let maps = slice_maps(x.shape(), &o, &s)?;
        Ok(vec![take_value(x, &maps, None)?])
    }))
}

/// StridedSlice's masks.
#[derive(Clone, Copy, Debug, Default)]
struct Masks {
    begin: i64,
    end: i64,
    ellipsis: i64,
    new_axis: i64,
    shrink: i64,
}

fn bit(mask: i64, i: usize) -> bool {
    i < 63 && (mask >> i) & 1 == 1
}

/// The indices one strided dim of size `d` reads (TensorFlow's canonical begin/end: negative
/// values count from the end, then clamp; a masked begin/end is the start/end for the stride's
/// direction).
fn strided_indices(d: usize, b: i64, e: i64, s: i64, bm: bool, em: bool) -> Vec<Option<usize>> {
    let d = d as i128;
    let s = i128::from(s);
    let (lower, upper) = if s > 0 { (0, d) } else { (-1, d - 1) };
    let canon = |v: i64, masked: bool, is_begin: bool| -> i128 {
        if masked {
            if (s > 0) == is_begin {
                lower
            } else {
                upper
            }
        } else {
            let v = i128::from(v);
            let v = if v < 0 { v + d } else { v };
            v.clamp(lower, upper)
        }
    };
    let (mut i, e) = (canon(b, bm, true), canon(e, em, false));
    let mut out = Vec::new();
    while (s > 0 && i < e) || (s < 0 && i > e) {
        if i >= 0 && i < d {
            out.push(Some(i as usize));
        }
        i += s;
    }
    out
}

fn dim_at(xs: &[usize], j: usize) -> Result<usize> {
    xs.get(j)
        .copied()
        .ok_or_else(|| Error::kernel(format!("the slice spec needs more dims than x {xs:?} has")))
}

/// A StridedSlice as index maps over x's dims plus the output dims (new axes inserted, shrunk
/// dims dropped), following TensorFlow (and the shape-inference rule).
fn strided_plan(
    xs: &[usize],
    begin: &[i64],
    end: &[i64],
    strides: &[i64],
    m: Masks,
) -> Result<(Maps, Vec<usize>)> {
    let n = begin.len();
    if end.len() != n || strides.len() != n {
        return Err(Error::kernel(format!(
            "begin {begin:?}, end {end:?} and strides {strides:?} must have the same length"
        )));
    }
    if let Some(i) = strides.iter().position(|&s| s == 0) {
        return Err(Error::kernel(format!(
            "strides {strides:?} has a zero at {i}"
        )));
    }
    if m.ellipsis < 0 || m.ellipsis.count_ones() > 1 {
        return Err(Error::kernel(format!(
            "ellipsis_mask {} must have at most one bit set",
            m.ellipsis
        )));
    }
    let r = xs.len();
    let real = (0..n)
        .filter(|&i| !bit(m.ellipsis, i) && !bit(m.new_axis, i))
        .count();
    if real > r {
        return Err(Error::kernel(format!(
            "the slice spec has {real} indices, more than the rank {r} of x {xs:?}"
        )));
    }
    let ell = r - real;
    let mut maps: Maps = Vec::with_capacity(r);
    let mut out = Vec::new();
    let mut saw_ellipsis = false;
    for i in 0..n {
        if bit(m.ellipsis, i) {
            saw_ellipsis = true;
            for _ in 0..ell {
                let d = dim_at(xs, maps.len())?;
                maps.push(full(d));
                out.push(d);
            }
            continue;
        }
        if bit(m.new_axis, i) {
            out.push(1);
            continue;
        }
        let j = maps.len();
        let d = dim_at(xs, j)?;
        if bit(m.shrink, i) {
            let idx = resolve(begin[i], d, true).map_err(|_| {
                Error::kernel(format!(
                    "shrink_axis_mask index {} (spec {i}) is out of range for dim {j} of x {xs:?}",
                    begin[i]
                ))
            })?;
            maps.push(vec![Some(idx)]);
            continue;
        }
        let map = strided_indices(
            d,
            begin[i],
            end[i],
            strides[i],
            bit(m.begin, i),
            bit(m.end, i),
        );
        out.push(map.len());
        maps.push(map);
    }
    if !saw_ellipsis {
        while maps.len() < r {
            let d = dim_at(xs, maps.len())?;
            maps.push(full(d));
            out.push(d);
        }
    }
    Ok((maps, out))
}

fn strided_slice_factory(info: &NodeInfo) -> Result<Kernel> {
    let m = Masks {
        begin: info.int("begin_mask", 0)?,
        end: info.int("end_mask", 0)?,
        ellipsis: info.int("ellipsis_mask", 0)?,
        new_axis: info.int("new_axis_mask", 0)?,
        shrink: info.int("shrink_axis_mask", 0)?,
    };
    let attrs = if info.op() == "StridedSliceD" {
        let mut v = Vec::new();
        for name in ["begin", "end", "strides"] {
            v.push(
                info.ints(name)?
                    .ok_or_else(|| bad_attr(info, format!("attribute '{name}' is required")))?,
            );
        }
        Some(v)
    } else {
        None
    };
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let (b, e, s) = match &attrs {
            Some(v) => (v[0].clone(), v[1].clone(), v[2].clone()),
            None => (
                ints(input(inputs, 1)?),
                ints(input(inputs, 2)?),
                ints(input(inputs, 3)?),
            ),
        };
        let (maps, out) = strided_plan(x.shape(), &b, &e, &s, m)?;
        let y = take_value(x, &maps, None)?;
        Ok(vec![reshaped(y, &out)?])
    }))
}

fn reverse_factory(_: &NodeInfo) -> Result<Kernel> {
    Ok(Box::new(|inputs| {
        let x = input(inputs, 0)?;
        let axes = ints(input(inputs, 1)?);
        let xs = x.shape();
        let mut maps: Maps = xs.iter().map(|&d| full(d)).collect();
        let mut seen = vec![false; xs.len()];
        for &a in &axes {
            let ax = norm_axis(a, xs.len())?;
            if xs.is_empty() {
                continue;
            }
            if std::mem::replace(&mut seen[ax], true) {
                return Err(Error::kernel(format!("axis {axes:?} repeats dim {ax}")));
            }
            maps[ax].reverse();
        }
        Ok(vec![take_value(x, &maps, None)?])
    }))
}

// ---------------------------------------------------------------------------------------------
// Split and Unpack
// ---------------------------------------------------------------------------------------------

/// x split along `axis` into parts of the given sizes.
fn split_sizes(x: &Value, axis: i64, sizes: &[usize]) -> Result<Vec<Value>> {
    let xs = x.shape();
    if xs.is_empty() {
        return Err(Error::kernel("cannot split a scalar"));
    }
    let ax = norm_axis(axis, xs.len())?;
    let total = sizes.iter().try_fold(0usize, |a, &s| a.checked_add(s));
    if total != Some(xs[ax]) {
        return Err(Error::kernel(format!(
            "split sizes {sizes:?} do not add up to dim {ax} of x {xs:?}"
        )));
    }
    let mut maps: Maps = xs.iter().map(|&d| full(d)).collect();
    let mut start = 0;
    let mut out = Vec::with_capacity(sizes.len());
    for &s in sizes {
        maps[ax] = (start..start + s).map(Some).collect();
        out.push(take_value(x, &maps, None)?);
        start += s;
    }
    Ok(out)
}

fn equal_sizes(x: &Value, axis: i64, num: usize) -> Result<Vec<usize>> {
    let xs = x.shape();
    let ax = norm_axis(axis, xs.len())?;
    if xs.is_empty() || num == 0 || !xs[ax].is_multiple_of(num) {
        return Err(Error::kernel(format!(
            "num_split {num} does not divide dim {ax} of x {xs:?}"
        )));
    }
    Ok(vec![xs[ax] / num; num])
}

fn num_split(info: &NodeInfo) -> Result<usize> {
    let n = info.int("num_split", 1)?;
    usize::try_from(n)
        .ok()
        .filter(|&n| n >= 1)
        .ok_or_else(|| bad_attr(info, format!("attribute 'num_split' must be >= 1, got {n}")))
}

fn split_factory(info: &NodeInfo) -> Result<Kernel> {
    let num = num_split(info)?;
    let op = info.op().to_string();
    let attr_dim = if op == "SplitD" {
        Some(info.int("split_dim", 0)?)
    } else {
        None
    };
    Ok(Box::new(move |inputs| match op.as_str() {
        "SplitD" => {
            let x = input(inputs, 0)?;
            let axis = attr_dim.unwrap_or(0);
            split_sizes(x, axis, &equal_sizes(x, axis, num)?)
        }
        "Split" => {
            let axis = scalar_int(input(inputs, 0)?, "split_dim")?;
            let x = input(inputs, 1)?;
            split_sizes(x, axis, &equal_sizes(x, axis, num)?)
        }
        _ => {
            // SplitV: x, size_splits, split_dim; one size may be -1.
            let x = input(inputs, 0)?;
            let sizes = ints(input(inputs, 1)?);
            let axis = scalar_int(input(inputs, 2)?, "split_dim")?;
            let xs = x.shape();
            let ax = norm_axis(axis, xs.len())?;
            let d = xs.get(ax).copied().unwrap_or(0) as i128;
            if sizes.len() != num {
                return Err(Error::kernel(format!(
                    "size_splits {sizes:?} has {} values, num_split is {num}",
                    sizes.len()
                )));
            }
            let known: i128 = sizes
                .iter()
                .filter(|&&s| s >= 0)
                .map(|&s| i128::from(s))
                .sum();
            let infer = sizes.iter().filter(|&&s| s == -1).count();
            if sizes.iter().any(|&s| s < -1) || infer > 1 || (infer == 1 && known > d) {
                return Err(Error::kernel(format!(
                    "size_splits {sizes:?} does not fit dim {ax} of x {xs:?}"
                )));
            }
            let res: Vec<usize> = sizes
                .iter()
                .map(|&s| {
                    if s == -1 {
                        (d - known) as usize
                    } else {
                        s as usize
                    }
                })
                .collect();
            split_sizes(x, axis, &res)
        }
    }))
}

fn unpack_factory(info: &NodeInfo) -> Result<Kernel> {
    let num = info.int("num", 1)?;
    let axis = info.int("axis", 0)?;
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let xs = x.shape();
        if xs.is_empty() {
            return Err(Error::kernel("cannot unpack a scalar"));
        }
        let ax = norm_axis(axis, xs.len())?;
        if xs[ax] as i64 != num {
            return Err(Error::kernel(format!(
                "dim {ax} of x {xs:?} is {}, attribute 'num' is {num}",
                xs[ax]
            )));
        }
        let mut dims = xs.to_vec();
        dims.remove(ax);
        split_sizes(x, ax as i64, &vec![1; xs[ax]])?
            .into_iter()
            .map(|v| reshaped(v, &dims))
            .collect()
    }))
}

// ---------------------------------------------------------------------------------------------
// Pad
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq)]
enum PadMode {
    Constant,
    Reflect,
    Edge,
    Symmetric,
    Circular,
}

/// The source index of each output position of one padded dim (`None`: the pad value).
/// Negative pads crop.
fn pad_map(d: usize, b: i64, e: i64, mode: PadMode) -> Result<Vec<Option<usize>>> {
    let di = d as i128;
    let n = di + i128::from(b) + i128::from(e);
    if n < 0 {
        return Err(Error::kernel(format!(
            "pads ({b}, {e}) make a dim of size {d} negative"
        )));
    }
    if d == 0 && n > 0 && mode != PadMode::Constant {
        return Err(Error::kernel(format!(
            "cannot pad an empty dim in {mode:?} mode"
        )));
    }
    let n = usize::try_from(n).map_err(|_| Error::kernel("padded dim is too large"))?;
    let mut out = with_capacity(n)?;
    for o in 0..n as i128 {
        let src = o - i128::from(b);
        let i = if (0..di).contains(&src) {
            Some(src)
        } else {
            match mode {
                PadMode::Constant => None,
                PadMode::Edge => Some(src.clamp(0, di - 1)),
                PadMode::Reflect => {
                    let p = 2 * (di - 1);
                    if p == 0 {
                        Some(0)
                    } else {
                        let m = src.rem_euclid(p);
                        Some(if m < di { m } else { p - m })
                    }
                }
                PadMode::Symmetric => {
                    let p = 2 * di;
                    let m = src.rem_euclid(p);
                    Some(if m < di { m } else { p - 1 - m })
                }
                PadMode::Circular => Some(src.rem_euclid(di)),
            }
        };
        out.push(i.map(|v| v as usize));
    }
    Ok(out)
}

fn pad_value(
    x: &Value,
    pairs: &[(i64, i64)],
    mode: PadMode,
    fill: Option<&Value>,
) -> Result<Value> {
    let xs = x.shape();
    if pairs.len() != xs.len() {
        return Err(Error::kernel(format!(
            "{} pad pairs for x {xs:?} of rank {}",
            pairs.len(),
            xs.len()
        )));
    }
    let maps = xs
        .iter()
        .zip(pairs)
        .map(|(&d, &(b, e))| pad_map(d, b, e, mode))
        .collect::<Result<Vec<_>>>()?;
    take_value(x, &maps, fill)
}

fn pad_factory(info: &NodeInfo) -> Result<Kernel> {
    let op = info.op().to_string();
    let attr_pairs: Option<Vec<(i64, i64)>> = if op == "PadD" {
        match info.attr("paddings") {
            Some(AttrValue::ListListInt(v)) => Some(
                v.iter()
                    .map(|row| match row.as_slice() {
                        [b, e] => Ok((*b, *e)),
                        _ => Err(bad_attr(
                            info,
                            format!("paddings row {row:?} is not a pair"),
                        )),
                    })
                    .collect::<Result<_>>()?,
            ),
            _ => {
                return Err(bad_attr(
                    info,
                    "attribute 'paddings' must be a list of pairs",
                ))
            }
        }
    } else {
        None
    };
    let mode = match str_attr(info, "mode", "constant")?.as_str() {
        "constant" => PadMode::Constant,
        "reflect" => PadMode::Reflect,
        "edge" => PadMode::Edge,
        "symmetric" => PadMode::Symmetric,
        "circular" => PadMode::Circular,
        other => return Err(Error::unsupported(format!("{op} with mode {other:?}"))),
    };
    let contiguous = info.bool("paddings_contiguous", true)?;
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let r = x.shape().len();
        let pairs: Vec<(i64, i64)> = match &attr_pairs {
            Some(p) => p.clone(),
            None => {
                let p = ints(input(inputs, 1)?);
                if p.len() != 2 * r {
                    return Err(Error::kernel(format!(
                        "paddings {p:?} must hold 2 values per dim of x {:?}",
                        x.shape()
                    )));
                }
                (0..r)
                    .map(|i| {
                        if contiguous {
                            (p[2 * i], p[2 * i + 1])
                        } else {
                            (p[i], p[r + i])
                        }
                    })
                    .collect()
            }
        };
        let fill = if op == "PadV3" {
            inputs.get(2).copied().flatten()
        } else {
            None
        };
        Ok(vec![pad_value(x, &pairs, mode, fill)?])
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
    let attr_depth = if info.op() == "OneHotD" {
        Some(info.int("depth", 0)?)
    } else {
        None
    };
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        // OneHot: x, depth, on_value, off_value; OneHotD: x, on_value, off_value.
        let (depth, k) = match attr_depth {
            Some(d) => (d, 1),
            None => (scalar_int(input(inputs, 1)?, "depth")?, 2),
        };
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

/// The length of a range, as the shape rule computes it.
fn range_len_int(s: i128, l: i128, d: i128, closed: bool) -> Result<usize> {
    if d == 0 {
        return Err(Error::kernel("Range: delta must not be 0"));
    }
    let span = l - s;
    let (q, r) = (span / d, span % d);
    let inexact = r != 0;
    let floor = if inexact && ((span < 0) != (d < 0)) {
        q - 1
    } else {
        q
    };
    let n = if closed || inexact { floor + 1 } else { floor };
    if n < 0 {
        return Err(Error::kernel(format!(
            "Range: start {s}, limit {l}, delta {d} give a negative length"
        )));
    }
    usize::try_from(n).map_err(|_| Error::kernel("Range: too many elements"))
}

fn range_len_float(s: f64, l: f64, d: f64, closed: bool) -> Result<usize> {
    if d == 0.0 || !d.is_finite() || !s.is_finite() || !l.is_finite() {
        return Err(Error::kernel(format!(
            "Range: start {s}, limit {l} and delta {d} must be finite and delta non-zero"
        )));
    }
    let q = (l - s) / d;
    let n = if closed { q.floor() + 1.0 } else { q.ceil() };
    if n < 0.0 {
        return Err(Error::kernel(format!(
            "Range: start {s}, limit {l}, delta {d} give a negative length"
        )));
    }
    if n >= (1u64 << 48) as f64 {
        return Err(Error::kernel("Range: too many elements"));
    }
    Ok(n as usize)
}

fn scalar_i128(v: &Value, what: &str) -> Result<i128> {
    if v.len() != 1 {
        return Err(Error::kernel(format!("{what} must hold one value")));
    }
    Ok(match v {
        Value::I64(a) => a.iter().map(|&x| i128::from(x)).next().unwrap_or(0),
        Value::U64(a) => a.iter().map(|&x| i128::from(x)).next().unwrap_or(0),
        _ => v.to_f64_vec().first().map(|&x| x as i128).unwrap_or(0),
    })
}

fn range_factory(info: &NodeInfo) -> Result<Kernel> {
    let closed = info.bool("is_closed", false)?;
    Ok(Box::new(move |inputs| {
        let (s, l, d) = (input(inputs, 0)?, input(inputs, 1)?, input(inputs, 2)?);
        let dt = s.dtype();
        if dt.is_float() {
            let f = |v: &Value, w: &str| -> Result<f64> {
                match v.to_f64_vec().as_slice() {
                    [x] => Ok(*x),
                    _ => Err(Error::kernel(format!("{w} must hold one value"))),
                }
            };
            let (a, b, c) = (f(s, "start")?, f(l, "limit")?, f(d, "delta")?);
            let n = range_len_float(a, b, c, closed)?;
            let mut v = with_capacity(n)?;
            v.extend((0..n).map(|i| a + i as f64 * c));
            return Value::F64(array(&[n], v)?).cast(dt).map(|v| vec![v]);
        }
        if dt == DataType::BOOL {
            return Err(Error::kernel("Range does not take bool tensors"));
        }
        let (a, b, c) = (
            scalar_i128(s, "start")?,
            scalar_i128(l, "limit")?,
            scalar_i128(d, "delta")?,
        );
        let n = range_len_int(a, b, c, closed)?;
        let vals = (0..n as i128).map(|i| a + i * c);
        let y = match dt {
            DataType::UINT64 => {
                let mut v = with_capacity(n)?;
                v.extend(vals.map(|x| x as u64));
                Value::U64(array(&[n], v)?)
            }
            _ => {
                let mut v = with_capacity(n)?;
                v.extend(vals.map(|x| x as i64));
                let y = Value::I64(array(&[n], v)?);
                if dt == DataType::INT64 {
                    y
                } else {
                    y.cast(dt)?
                }
            }
        };
        Ok(vec![y])
    }))
}

/// An inclusive (or exclusive) scan of `f` along `axis`, from the end when `reverse`, starting
/// from `init` (Cumsum: 0 and add; Cumprod: 1 and mul).
pub(super) fn scan<T: Copy>(
    a: &ArrayD<T>,
    axis: usize,
    exclusive: bool,
    reverse: bool,
    init: T,
    f: impl Fn(T, T) -> T,
) -> Result<ArrayD<T>> {
    let xs = a.shape();
    let outer: usize = xs[..axis].iter().product();
    let n = xs[axis];
    let inner: usize = xs[axis + 1..].iter().product();
    let src = std_slice(a);
    let mut out = alloc(src.len(), init)?;
    // Row by row along the axis, each step a contiguous row of `inner` accumulators.
    let mut acc = alloc(inner, init)?;
    let bad = || Error::kernel("internal error: scan out of bounds");
    for o in 0..outer {
        acc.fill(init);
        for step in 0..n {
            let k = if reverse { n - 1 - step } else { step };
            let at = (o * n + k) * inner;
            let row = src.get(at..at + inner).ok_or_else(bad)?;
            let dst = out.get_mut(at..at + inner).ok_or_else(bad)?;
            for ((d, s), &v) in dst.iter_mut().zip(acc.iter_mut()).zip(row) {
                if exclusive {
                    *d = *s;
                    *s = f(*s, v);
                } else {
                    *s = f(*s, v);
                    *d = *s;
                }
            }
        }
    }
    array(xs, out)
}

fn cumsum_factory(info: &NodeInfo) -> Result<Kernel> {
    let exclusive = info.bool("exclusive", false)?;
    let reverse = info.bool("reverse", false)?;
    let attr_axis = if info.op() == "CumsumD" {
        Some(info.int("axis", 0)?)
    } else {
        None
    };
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let axis = match attr_axis {
            Some(a) => a,
            None => scalar_int(input(inputs, 1)?, "axis")?,
        };
        if x.shape().is_empty() {
            return Err(Error::kernel("Cumsum needs x of rank >= 1"));
        }
        let ax = norm_axis(axis, x.shape().len())?;
        Ok(vec![
            map_num!(x, "Cumsum", a => scan(a, ax, exclusive, reverse, Arith::zero(), Arith::add)?),
        ])
    }))
}

// ---------------------------------------------------------------------------------------------
// ArgMax/ArgMin, TopK
// ---------------------------------------------------------------------------------------------

/// The index of the first largest (smallest) value along `axis`; NaN wins (numpy).
fn arg_reduce<T: Copy + PartialOrd>(a: &ArrayD<T>, axis: usize, max: bool) -> Result<ArrayD<i64>> {
    let xs = a.shape();
    let n = xs[axis];
    if n == 0 {
        return Err(Error::kernel(format!(
            "arg max/min over an empty dim {axis} of {xs:?}"
        )));
    }
    let outer: usize = xs[..axis].iter().product();
    let inner: usize = xs[axis + 1..].iter().product();
    let src = std_slice(a);
    let get = |i: usize| {
        src.get(i)
            .copied()
            .ok_or_else(|| Error::kernel("internal error: argmax out of bounds"))
    };
    let mut out = with_capacity(outer * inner)?;
    for o in 0..outer {
        for i in 0..inner {
            let mut best = get(o * n * inner + i)?;
            let mut bi = 0usize;
            for k in 1..n {
                if is_nan(&best) {
                    break;
                }
                let v = get((o * n + k) * inner + i)?;
                if is_nan(&v) || (max && v > best) || (!max && v < best) {
                    best = v;
                    bi = k;
                }
            }
            out.push(bi as i64);
        }
    }
    let mut dims = xs.to_vec();
    dims.remove(axis);
    array(&dims, out)
}

fn arg_factory(info: &NodeInfo) -> Result<Kernel> {
    let max = info.op() != "ArgMin";
    let attr_axis = if info.op() == "ArgMaxD" {
        Some(info.int("dimension", 0)?)
    } else {
        None
    };
    let out = info.out_dtype(0)?;
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let axis = match attr_axis {
            Some(a) => a,
            None => scalar_int(input(inputs, 1)?, "dimension")?,
        };
        if x.shape().is_empty() {
            return Err(Error::kernel("arg max/min needs x of rank >= 1"));
        }
        let ax = norm_axis(axis, x.shape().len())?;
        let y = Value::I64(crate::with_array!(x, a => arg_reduce(a, ax, max)?));
        let dt = if matches!(out, DataType::INT32 | DataType::INT64) {
            out
        } else {
            DataType::INT64
        };
        Ok(vec![y.cast(dt)?])
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
        if x.shape().is_empty() {
            return Err(Error::kernel("TopKV2 needs x of rank >= 1"));
        }
        let ax = norm_axis(dim, x.shape().len())?;
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

fn triangle<T: Copy + Elem>(a: &ArrayD<T>, k: i64, upper: bool) -> Result<ArrayD<T>> {
    let xs = a.shape();
    if xs.len() < 2 {
        return Err(Error::kernel(format!(
            "a triangle needs x of rank >= 2, got {xs:?}"
        )));
    }
    let (h, w) = (xs[xs.len() - 2], xs[xs.len() - 1]);
    let zero = T::from_f64(0.0);
    let k = i128::from(k);
    let src = std_slice(a);
    let out: Vec<T> = src
        .iter()
        .enumerate()
        .map(|(f, &v)| {
            let j = (f % w.max(1)) as i128;
            let i = ((f / w.max(1)) % h.max(1)) as i128;
            let keep = if upper { j - i >= k } else { j - i <= k };
            if keep {
                v
            } else {
                zero
            }
        })
        .collect();
    array(xs, out)
}

fn triangle_factory(info: &NodeInfo) -> Result<Kernel> {
    let op = info.op().to_string();
    let diagonal = info.int("diagonal", 0)?;
    let upper = match op.as_str() {
        "Triu" => true,
        "Tril" => false,
        _ => match info.int("upper", 0)? {
            0 => false,
            1 => true,
            u => {
                return Err(bad_attr(
                    info,
                    format!("attribute 'upper' must be 0 or 1, got {u}"),
                ))
            }
        },
    };
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let k = if op == "Trilu" {
            match inputs.get(1).copied().flatten() {
                Some(v) => scalar_int(v, "k")?,
                None => 0,
            }
        } else {
            diagonal
        };
        Ok(vec![map_array!(x, a => triangle(a, k, upper)?)])
    }))
}

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

pub(super) fn register(m: &mut FxHashMap<&'static str, Factory>) {
    m.insert("GatherV2", gather_v2_factory);
    m.insert("GatherV2D", gather_v2_factory);
    m.insert("GatherElements", gather_elements_factory);
    m.insert("GatherNd", gather_nd_factory);
    m.insert("ScatterElements", scatter_elements_factory);
    m.insert("ScatterNd", scatter_nd_factory);
    m.insert("ScatterNdUpdate", scatter_nd_update_factory);
    m.insert("Slice", slice_factory);
    m.insert("SliceD", slice_factory);
    m.insert("StridedSlice", strided_slice_factory);
    m.insert("StridedSliceD", strided_slice_factory);
    m.insert("ReverseV2", reverse_factory);
    m.insert("Split", split_factory);
    m.insert("SplitD", split_factory);
    m.insert("SplitV", split_factory);
    m.insert("Unpack", unpack_factory);
    m.insert("Pad", pad_factory);
    m.insert("PadD", pad_factory);
    m.insert("PadV3", pad_factory);
    m.insert("OneHot", one_hot_factory);
    m.insert("OneHotD", one_hot_factory);
    m.insert("Range", range_factory);
    m.insert("Cumsum", cumsum_factory);
    m.insert("CumsumD", cumsum_factory);
    m.insert("ArgMaxV2", arg_factory);
    m.insert("ArgMaxD", arg_factory);
    m.insert("ArgMin", arg_factory);
    m.insert("TopKV2", top_k_factory);
    m.insert("Tril", triangle_factory);
    m.insert("Triu", triangle_factory);
    m.insert("Trilu", triangle_factory);
    m.insert("Where", nonzero_factory);
    m.insert("NonZero", nonzero_factory);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn some(v: &[usize]) -> Vec<Option<usize>> {
        v.iter().copied().map(Some).collect()
    }

    #[test]
    fn strided_indices_follow_tensorflow() {
        // x[1:5:2] of 6
        assert_eq!(strided_indices(6, 1, 5, 2, false, false), some(&[1, 3]));
        // x[::-1]
        assert_eq!(
            strided_indices(4, 0, 0, -1, true, true),
            some(&[3, 2, 1, 0])
        );
        // x[-2:] and clamped ends
        assert_eq!(strided_indices(5, -2, 100, 1, false, false), some(&[3, 4]));
        assert_eq!(strided_indices(5, -100, 2, 1, false, false), some(&[0, 1]));
        // x[3:0:-1], x[-1:-10:-2]
        assert_eq!(strided_indices(5, 3, 0, -1, false, false), some(&[3, 2, 1]));
        assert_eq!(
            strided_indices(5, -1, -10, -2, false, false),
            some(&[4, 2, 0])
        );
        // empty and extreme values: no overflow
        assert!(strided_indices(5, 3, 1, 1, false, false).is_empty());
        assert!(strided_indices(0, 0, 5, 1, false, false).is_empty());
        assert_eq!(
            strided_indices(3, i64::MIN, i64::MAX, i64::MAX, false, false),
            some(&[0])
        );
        assert_eq!(
            strided_indices(3, i64::MAX, i64::MIN, i64::MIN, false, false),
            some(&[2])
        );
    }

    #[test]
    fn strided_plan_masks() {
        let xs = [2, 3, 4];
        let m = |begin, end, ellipsis, new_axis, shrink| Masks {
            begin,
            end,
            ellipsis,
            new_axis,
            shrink,
        };
        // x[1, :, ::2] with shrink on dim 0 and begin/end masks on dim 1.
        let (maps, out) =
            strided_plan(&xs, &[1, 0, 0], &[2, 0, 4], &[1, 1, 2], m(2, 2, 0, 0, 1)).unwrap();
        assert_eq!(out, vec![3, 2]);
        assert_eq!(maps, vec![some(&[1]), some(&[0, 1, 2]), some(&[0, 2])]);
        // x[..., 1] (ellipsis then shrink): [2, 3]
        let (maps, out) = strided_plan(&xs, &[0, 1], &[0, 2], &[1, 1], m(0, 0, 1, 0, 2)).unwrap();
        assert_eq!(out, vec![2, 3]);
        assert_eq!(maps[2], some(&[1]));
        // x[:, None, 0] (new axis, shrink; implicit rest): [2, 1, 4]
        let (_, out) =
            strided_plan(&xs, &[0, 0, 0], &[0, 0, 1], &[1, 1, 1], m(1, 1, 0, 2, 4)).unwrap();
        assert_eq!(out, vec![2, 1, 4]);
        // x[-1] shrink with a negative index; x[3] is out of range.
        let (maps, out) = strided_plan(&xs, &[-1], &[0], &[1], m(0, 0, 0, 0, 1)).unwrap();
        assert_eq!((maps[0].clone(), out), (some(&[1]), vec![3, 4]));
        assert!(strided_plan(&xs, &[2], &[3], &[1], m(0, 0, 0, 0, 1)).is_err());
        // Zero stride, two ellipses, too many indices, mismatched lengths.
        assert!(strided_plan(&xs, &[0], &[1], &[0], Masks::default()).is_err());
        assert!(strided_plan(&xs, &[0, 0], &[1, 1], &[1, 1], m(0, 0, 3, 0, 0)).is_err());
        assert!(strided_plan(&xs, &[0; 4], &[1; 4], &[1; 4], Masks::default()).is_err());
        assert!(strided_plan(&xs, &[0], &[1, 1], &[1], Masks::default()).is_err());
        // Masks with high bits do not overflow a shift.
        assert!(strided_plan(&xs, &[0], &[1], &[1], m(i64::MIN, -1, 0, 0, 0)).is_ok());
    }

    #[test]
    fn pad_maps() {
        assert_eq!(
            pad_map(3, 2, 1, PadMode::Constant).unwrap(),
            vec![None, None, Some(0), Some(1), Some(2), None]
        );
        assert_eq!(
            pad_map(3, 2, 2, PadMode::Reflect).unwrap(),
            some(&[2, 1, 0, 1, 2, 1, 0])
        );
        assert_eq!(
            pad_map(3, 2, 2, PadMode::Symmetric).unwrap(),
            some(&[1, 0, 0, 1, 2, 2, 1])
        );
        assert_eq!(
            pad_map(3, 2, 2, PadMode::Edge).unwrap(),
            some(&[0, 0, 0, 1, 2, 2, 2])
        );
        assert_eq!(
            pad_map(3, 2, 2, PadMode::Circular).unwrap(),
            some(&[1, 2, 0, 1, 2, 0, 1])
        );
        assert_eq!(pad_map(3, -1, 0, PadMode::Constant).unwrap(), some(&[1, 2]));
        assert!(pad_map(3, -2, -2, PadMode::Constant).is_err());
        assert!(pad_map(0, 1, 0, PadMode::Edge).is_err());
        assert!(pad_map(3, i64::MAX, i64::MAX, PadMode::Constant).is_err());
    }

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

    #[test]
    fn range_lengths() {
        assert_eq!(range_len_int(0, 10, 3, false).unwrap(), 4);
        assert_eq!(range_len_int(0, 9, 3, false).unwrap(), 3);
        assert_eq!(range_len_int(0, 9, 3, true).unwrap(), 4);
        assert_eq!(range_len_int(5, 0, -2, false).unwrap(), 3);
        assert!(range_len_int(0, 5, -1, false).is_err());
        assert!(range_len_int(0, 5, 0, false).is_err());
        assert_eq!(range_len_float(0.0, 1.0, 0.3, false).unwrap(), 4);
        assert!(range_len_float(0.0, f64::INFINITY, 1.0, false).is_err());
        assert!(range_len_float(0.0, 1e300, 1e-300, false).is_err());
    }
}
