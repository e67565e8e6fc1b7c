//! Helpers shared by the kernel families: a feature map's layout and its NCHW/NHWC
//! attributes (layout_2d, filter_positions_of, four, positive_hw, pads_attr), values as f64 and
//! back (floats, from_f64, float_out) and checked sub-slices (sub, sub_mut).

use super::NodeInfo;
use crate::error::{Error, Result};
use crate::value::{Elem, Value};
use crate::{map_array, par};
use es_core::infer::layout;
use es_core::infer::layout::filter_positions_2d as filter_positions;
use es_core::opmath::broadcast_dims;
use es_core::DataType;
use half::{bf16, f16};
use ndarray::{ArrayD, IxDyn, Zip};
use std::borrow::Cow;
use std::cmp::Ordering;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// The layout of feature map input `x` by `es_core::infer::layout::data_layout` (`default` is
/// data_format's default): true for NCHW, false for NHWC.
pub(super) fn layout_2d(info: &NodeInfo, x: usize, default: &str) -> Result<bool> {
    let df = str_attr(info, "data_format", default)?;
    let f = layout::data_layout(input_desc(info, x), &df, layout::DATA_2D)
        .map_err(|e| bad_attr(info, e))?;
    Ok(!layout::channel_last(f))
}

/// The positions of a 2-D convolution filter's [out, in/groups, kh, kw] dims (inputs `x` and
/// `filter`), its layout by `es_core::infer::layout::filter_layout`.
pub(super) fn filter_positions_of(info: &NodeInfo, x: usize, filter: usize) -> Result<[usize; 4]> {
    let fl = layout::filter_layout(
        input_desc(info, filter),
        input_desc(info, x),
        layout::FILTER_2D,
    )
    .map_err(|e| bad_attr(info, e))?;
    filter_positions(fl)
        .ok_or_else(|| Error::unsupported(format!("{} with a filter of format {fl}", info.op())))
}

/// A 4-value list attribute in data-format order: its (N, C) and (H, W) entries.
pub(super) fn four(
    info: &NodeInfo,
    name: &str,
    default: Option<[i64; 4]>,
    nchw: bool,
) -> Result<([i64; 2], [i64; 2])> {
    let v = match (info.ints(name)?, default) {
        (Some(v), _) => v,
        (None, Some(d)) => d.to_vec(),
        (None, None) => return Err(bad_attr(info, format!("attribute '{name}' is required"))),
    };
    let &[a, b, c, d] = v.as_slice() else {
        return Err(bad_attr(
            info,
            format!("attribute '{name}' must have 4 values, got {v:?}"),
        ));
    };
    Ok(if nchw {
        ([a, b], [c, d])
    } else {
        ([a, d], [b, c])
    })
}

/// The H and W entries of a list attribute, each >= 1.
pub(super) fn positive_hw(info: &NodeInfo, name: &str, hw: [i64; 2]) -> Result<[usize; 2]> {
    let f = |v: i64| {
        usize::try_from(v).ok().filter(|&v| v >= 1).ok_or_else(|| {
            bad_attr(
                info,
                format!("attribute '{name}' must have H and W values >= 1, got {hw:?}"),
            )
        })
    };
    Ok([f(hw[0])?, f(hw[1])?])
}

/// Explicit pads [top, bottom, left, right], each >= 0.
pub(super) fn pads_attr(info: &NodeInfo, name: &str) -> Result<[usize; 4]> {
    let v = info.ints(name)?.unwrap_or_else(|| vec![0; 4]);
    let bad = || {
        bad_attr(
            info,
            format!(
                "attribute '{name}' must be 4 values >= 0 [top, bottom, left, right], got {v:?}"
            ),
        )
    };
    let &[a, b, c, d] = v.as_slice() else {
        return Err(bad());
    };
    let f = |x: i64| usize::try_from(x).map_err(|_| bad());
    Ok([f(a)?, f(b)?, f(c)?, f(d)?])
}

/// The elements of a float value as f64, in standard order.
pub(super) fn floats(x: &Value, what: &str) -> Result<Vec<f64>> {
    if !x.dtype().is_float() {
        return Err(Error::kernel(format!(
            "{what} must be a float tensor, got {}",
            x.dtype()
        )));
    }
    Ok(x.to_f64_vec())
}

/// A value of `dt` from f64 elements in standard order.
pub(super) fn from_f64(dt: DataType, dims: &[usize], v: Vec<f64>) -> Result<Value> {
    let a = Value::F64(array(dims, v)?);
    if dt == DataType::DOUBLE {
        Ok(a)
    } else {
        a.cast(dt)
    }
}

/// The dtype to round a float result to: the node's output dtype when it is a float, else `x`'s.
pub(super) fn float_out(out: Option<DataType>, x: DataType) -> DataType {
    match out {
        Some(d) if d.is_float() => d,
        _ if x.is_float() => x,
        _ => DataType::FLOAT,
    }
}

/// `len` elements of `s` from `start`.
pub(super) fn sub<T>(s: &[T], start: usize, len: usize) -> Result<&[T]> {
    start
        .checked_add(len)
        .and_then(|end| s.get(start..end))
        .ok_or_else(|| Error::kernel("internal error: slice out of bounds"))
}

pub(super) fn sub_mut<T>(s: &mut [T], start: usize, len: usize) -> Result<&mut [T]> {
    start
        .checked_add(len)
        .and_then(|end| s.get_mut(start..end))
        .ok_or_else(|| Error::kernel("internal error: slice out of bounds"))
}

// ---------------------------------------------------------------------------------------------
// Values, arrays and attributes
// ---------------------------------------------------------------------------------------------

/// An element type whose array can be taken out of a [`Value`].
pub(super) trait Pick: Elem {
    fn pick(v: &Value) -> Option<&ArrayD<Self>>;
    fn take(v: Value) -> Option<ArrayD<Self>>;
}

/// [`Pick`] for each element type `$t`, held by variant `$var`.
macro_rules! pick {
    ($($t:ty => $var:ident),*) => {$(
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
    )*};
}
pick!(
    f32 => F32, f64 => F64, f16 => F16, bf16 => BF16, i8 => I8, i16 => I16, i32 => I32,
    i64 => I64, u8 => U8, u16 => U16, u32 => U32, u64 => U64, bool => Bool
);

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
pub(super) fn cast_like<'v, T: Pick>(
    _like: &ArrayD<T>,
    v: &'v Value,
) -> Result<Cow<'v, ArrayD<T>>> {
    cast_to::<T>(v)
}

/// `v`, which must have the element type of `_like`.
pub(super) fn same_as<'v, T: Pick>(
    _like: &ArrayD<T>,
    v: &'v Value,
    what: &str,
) -> Result<&'v ArrayD<T>> {
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
    info.typed_attr(name, default).map(str::to_string)
}

/// Integer attribute `name` (`default` when absent) as a count, which must be >= `min`.
pub(super) fn count_attr(info: &NodeInfo, name: &str, default: i64, min: usize) -> Result<usize> {
    let v = info.int(name, default)?;
    usize::try_from(v)
        .ok()
        .filter(|&u| u >= min)
        .ok_or_else(|| {
            bad_attr(
                info,
                format!("attribute '{name}' must be >= {min}, got {v}"),
            )
        })
}

/// The description of the node's input `i`, where it is connected and described.
pub(super) fn input_desc<'a>(info: &'a NodeInfo, i: usize) -> Option<&'a es_core::TensorDesc> {
    info.inputs.get(i).and_then(Option::as_ref)
}

/// Axis `axis` of an x of shape `xs` normalised (negative counts from the end); x must have
/// rank >= 1 (`what` names the op in the error).
pub(super) fn axis_of(what: &str, xs: &[usize], axis: i64) -> Result<usize> {
    if xs.is_empty() {
        return Err(Error::kernel(format!("{what} needs x of rank >= 1")));
    }
    super::norm_axis(axis, xs.len())
}

/// An error unless x (of shape `xs`) has rank >= `n` (`what` names the op in the error).
pub(super) fn need_rank(what: &str, xs: &[usize], n: usize) -> Result<()> {
    if xs.len() < n {
        return Err(Error::kernel(format!(
            "{what} needs x of rank >= {n}, got {xs:?}"
        )));
    }
    Ok(())
}

/// A vector of `n` copies of `v`; running out of memory is an error, not an abort.
pub(super) fn alloc<T: Clone>(n: usize, v: T) -> Result<Vec<T>> {
    let mut out = with_capacity(n)?;
    out.resize(n, v);
    Ok(out)
}

/// An empty vector with room for `n` elements (fallible: a size over Rust's allocation limit is
/// a kernel error; one over the run's memory limit (`ge.memoryLimit`,
/// [`crate::memplan::check_alloc`]) or memory the allocator refuses is an [`Error::Resource`];
/// never a panic or an abort).
pub(super) fn with_capacity<T>(n: usize) -> Result<Vec<T>> {
    let bytes = (n as u128) * (std::mem::size_of::<T>() as u128);
    if bytes > isize::MAX as u128 {
        return Err(Error::kernel(format!(
            "cannot allocate {n} elements ({bytes} bytes): more than one buffer may hold"
        )));
    }
    crate::memplan::check_alloc(bytes)?;
    let mut out = Vec::new();
    out.try_reserve_exact(n).map_err(|_| {
        Error::Resource(format!(
            "cannot allocate {n} elements ({bytes} bytes): out of memory"
        ))
    })?;
    Ok(out)
}

/// The element count of `dims`, an error naming the shape when it overflows (or when the
/// product of its non-zero dims passes `isize::MAX`, ndarray's limit for any array).
pub(super) fn numel(dims: &[usize]) -> Result<usize> {
    let nonzero = dims
        .iter()
        .filter(|&&d| d != 0)
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .filter(|&n| n <= isize::MAX as usize);
    match nonzero {
        Some(_) if dims.contains(&0) => Ok(0),
        Some(n) => Ok(n),
        None => Err(Error::kernel(format!(
            "shape {dims:?} has more elements than can be stored"
        ))),
    }
}

/// An empty vector with room for the elements of an array of shape `dims`: its size checked and
/// its buffer allocated fallibly, an error naming the shape.
pub(super) fn buffer_for<T>(dims: &[usize]) -> Result<Vec<T>> {
    let n = numel(dims)?;
    with_capacity(n).map_err(|e| match e {
        Error::Execution { message, .. } => {
            Error::kernel(format!("an output of shape {dims:?}: {message}"))
        }
        Error::Resource(message) => {
            Error::Resource(format!("an output of shape {dims:?}: {message}"))
        }
        e => e,
    })
}

/// An array of `dims` filled with `v`, its size checked and its buffer allocated fallibly.
pub(super) fn alloc_array<T: Clone>(dims: &[usize], v: T) -> Result<ArrayD<T>> {
    let mut out = buffer_for(dims)?;
    out.resize(numel(dims)?, v);
    array(dims, out)
}

/// The elements of view `a` copied into a standard-layout array, its size checked and its
/// buffer allocated fallibly (a broadcast view may be far larger than the data under it).
pub(super) fn to_owned_std<T: Clone>(a: ndarray::ArrayViewD<'_, T>) -> Result<ArrayD<T>> {
    let mut out = buffer_for(a.shape())?;
    extend_std(&mut out, &a);
    array(a.shape(), out)
}

/// Appends the elements of `a` to `out` in standard (row-major) order: one slice copy when `a`
/// is contiguous, whole rows where its rows are, else ndarray's folding iterator (a tight loop
/// over the innermost axis). Not `out.extend(a.iter())`: that steps the `IxDyn` index once per
/// element, several times slower (the transformer block's BatchMatMul copies took a quarter of
/// its time through it).
pub(super) fn extend_std<T: Clone>(out: &mut Vec<T>, a: &ndarray::ArrayViewD<'_, T>) {
    if let Some(s) = a.as_slice() {
        out.extend_from_slice(s);
        return;
    }
    let r = a.ndim();
    if r > 1 && a.strides()[r - 1] == 1 {
        for row in a.rows() {
            match row.as_slice() {
                Some(s) => out.extend_from_slice(s),
                None => row.iter().for_each(|x| out.push(x.clone())),
            }
        }
        return;
    }
    a.iter().for_each(|x| out.push(x.clone()));
}

/// An array of `dims` from elements in standard order.
pub(super) fn array<T>(dims: &[usize], v: Vec<T>) -> Result<ArrayD<T>> {
    ArrayD::from_shape_vec(IxDyn(dims), v).map_err(|e| Error::kernel(e.to_string()))
}

/// The elements of `a` in standard (row-major) order, borrowed when they already are.
pub(super) fn std_slice<T: Clone>(a: &ArrayD<T>) -> Cow<'_, [T]> {
    match a.as_slice() {
        Some(s) => Cow::Borrowed(s),
        None => {
            let mut v = Vec::with_capacity(a.len());
            extend_std(&mut v, &a.view());
            Cow::Owned(v)
        }
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

/// An integer parameter that an op's `D` variant takes as an attribute (read at compile time)
/// and the others as a one-value input (read on each run), both named `name`.
#[derive(Clone, Copy)]
pub(super) struct IntParam {
    attr: Option<i64>,
    name: &'static str,
}

impl IntParam {
    /// The parameter `name` of node `info`: its attribute (default 0) when the op is `d_op`.
    pub(super) fn of(info: &NodeInfo, d_op: &str, name: &'static str) -> Result<Self> {
        let attr = if info.op() == d_op {
            Some(info.int(name, 0)?)
        } else {
            None
        };
        Ok(IntParam { attr, name })
    }
    /// Whether the op takes the parameter as an attribute (and has no input for it).
    pub(super) fn is_attr(self) -> bool {
        self.attr.is_some()
    }
    /// The attribute, else the value of input `i`.
    pub(super) fn get(self, inputs: &[Option<&Value>], i: usize) -> Result<i64> {
        match self.attr {
            Some(a) => Ok(a),
            None => scalar_int(super::input(inputs, i)?, self.name),
        }
    }
}

/// An index into a dim of size `d` (negative counts from the end when `neg` is allowed).
pub(super) fn resolve(raw: i64, d: usize, neg: bool) -> Result<usize> {
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
pub(super) fn is_nan<T: PartialEq>(v: &T) -> bool {
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
        map_num!(@[F32, F64, F16, BF16, I8, I16, I32, I64, U8, U16, U32, U64], $v, $what, $a => $body)
    };
    (@[$($var:ident),*], $v:expr, $what:expr, $a:ident => $body:expr) => {
        match $v {
            $($crate::value::Value::$var($a) => $crate::value::Value::$var($body),)*
            $crate::value::Value::Bool(_) => {
                return Err($crate::error::Error::kernel(format!(
                    "{} does not take bool tensors",
                    $what
                )))
            }
            $crate::value::Value::Lowp(dt, _) => {
                return Err($crate::error::Error::unsupported(format!("{} on {}", $what, dt)))
            }
            $crate::value::Value::Str(_) => return Err($crate::value::numeric_only()),
            $crate::value::Value::Variant(_) => return Err($crate::value::not_a_tensor()),
        }
    };
}
pub(super) use map_num;

/// `$go!(Variant)` for the variant of value `$v`, whatever its dtype.
macro_rules! by_variant {
    ($v:expr, $go:ident) => {
        by_variant!(@[F32, F64, F16, BF16, I8, I16, I32, I64, U8, U16, U32, U64, Bool, Str], $v, $go)
    };
    (@[$($var:ident),*], $v:expr, $go:ident) => {
        match $v {
            $($crate::value::Value::$var(_) => $go!($var),)*
            $crate::value::Value::Lowp(dt, _) => {
                return Err($crate::error::Error::unsupported(format!("{dt} tensors here")))
            }
            $crate::value::Value::Variant(_) => return Err($crate::value::not_a_tensor()),
        }
    };
}
pub(super) use by_variant;

/// `$go!(Variant, x, y)` for two values of one dtype among the listed variants; any other pair
/// evaluates `$other`.
macro_rules! same_dtype2 {
    ($a:expr, $b:expr, $go:ident, [$($v:ident),*], $other:expr) => {
        match ($a, $b) {
            $(($crate::value::Value::$v(x), $crate::value::Value::$v(y)) => $go!($v, x, y),)*
            _ => $other,
        }
    };
}
pub(super) use same_dtype2;

/// Per dim of a source tensor, the source index of each output position (`None`: a fill value).
pub(super) type Maps = Vec<Vec<Option<usize>>>;

/// An array whose element at (o_0, .., o_k) is x at (maps[0][o_0], .., maps[k][o_k]), or `fill`
/// where a map entry is `None`. Map entries out of range are an error.
pub(super) fn take_axes<T: Clone>(
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
        return array(&[], src.iter().take(1).cloned().collect());
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
    fn rec<T: Clone>(
        src: &[T],
        offs: &[Vec<Option<usize>>],
        base: Option<usize>,
        out: &mut Vec<T>,
        fill: &T,
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
                out.push(b.and_then(|i| src.get(i)).unwrap_or(fill).clone());
            } else {
                rec(src, rest, b, out, fill);
            }
        }
    }
    let mut out = with_capacity(total)?;
    if total > 0 {
        rec(&src, &offs, Some(0), &mut out, &fill);
    }
    array(&dims, out)
}

/// [`take_axes`] for any value; `fill` (cast to x's dtype) where a map entry is `None`.
pub(super) fn take_value(
    x: &Value,
    maps: &[Vec<Option<usize>>],
    fill: Option<&Value>,
) -> Result<Value> {
    Ok(map_array!(x, a => {
        let f = match fill {
            Some(v) => first(cast_like(a, v)?.as_ref(), "the pad value")?,
            None => Elem::from_f64(0.0),
        };
        take_axes(a, maps, f)?
    }, s => match fill {
        // Strings are moved (Slice, Split, ReverseV2); a fill value (padding) is numeric.
        None => Value::Str(take_axes(s, maps, String::new())?),
        Some(_) => return Err(crate::value::numeric_only()),
    }))
}

/// The full index map of a dim of size `d`.
pub(super) fn full(d: usize) -> Vec<Option<usize>> {
    (0..d).map(Some).collect()
}

/// `v` in standard order with the shape `dims` (same element count), allocated fallibly.
pub(super) fn owned<C: Clone>(v: ndarray::ArrayViewD<'_, C>, dims: &[usize]) -> Result<ArrayD<C>> {
    let mut out = with_capacity(numel(v.shape())?)?;
    extend_std(&mut out, &v);
    array(dims, out)
}

// ---------------------------------------------------------------------------------------------
// Broadcasting
// ---------------------------------------------------------------------------------------------

/// The numpy broadcast of two shapes (`es_core::opmath::broadcast_dims`).
pub(crate) fn broadcast_shape(a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    broadcast_dims(a, b)
        .map_err(|_| Error::kernel(format!("shapes {a:?} and {b:?} do not broadcast")))
}

/// `f` applied pairwise after broadcasting `a` and `b`.
/// Large arrays are split across the run's threads.
pub(crate) fn zip2<A: Copy + Send + Sync, B: Copy + Send + Sync, O: Send>(
    a: &ArrayD<A>,
    b: &ArrayD<B>,
    f: impl Fn(A, B) -> O + Sync,
) -> Result<ArrayD<O>> {
    let shape = if a.shape() == b.shape() {
        a.shape().to_vec()
    } else {
        broadcast_shape(a.shape(), b.shape())?
    };
    let parallel = par::chunks_for(shape.iter().product()) > 1;
    if a.shape() == b.shape() {
        let z = Zip::from(a).and(b);
        return Ok(if parallel {
            par::install(|| z.par_map_collect(|&x, &y| f(x, y)))
        } else {
            z.map_collect(|&x, &y| f(x, y))
        });
    }
    if b.len() == 1 && a.shape() == shape.as_slice() {
        let y = first(b, "operand")?;
        return Ok(map1(a, parallel, |x| f(x, y)));
    }
    if a.len() == 1 && b.shape() == shape.as_slice() {
        let x = first(a, "operand")?;
        return Ok(map1(b, parallel, |y| f(x, y)));
    }
    let av = a
        .broadcast(IxDyn(&shape))
        .ok_or_else(|| Error::kernel("broadcast failed"))?;
    let bv = b
        .broadcast(IxDyn(&shape))
        .ok_or_else(|| Error::kernel("broadcast failed"))?;
    let z = Zip::from(&av).and(&bv);
    Ok(if parallel {
        par::install(|| z.par_map_collect(|&x, &y| f(x, y)))
    } else {
        z.map_collect(|&x, &y| f(x, y))
    })
}

/// `f` of each element, across the run's threads when `parallel`.
fn map1<A: Copy + Send + Sync, O: Send>(
    a: &ArrayD<A>,
    parallel: bool,
    f: impl Fn(A) -> O + Sync,
) -> ArrayD<O> {
    if parallel {
        par::install(|| Zip::from(a).par_map_collect(|&x| f(x)))
    } else {
        a.mapv(f)
    }
}

/// `f` of each element; large arrays are split across the run's threads.
pub(crate) fn map<A: Copy + Send + Sync, O: Send>(
    a: &ArrayD<A>,
    f: impl Fn(A) -> O + Sync,
) -> ArrayD<O> {
    map1(a, par::chunks_for(a.len()) > 1, f)
}

// ---------------------------------------------------------------------------------------------
// Float arithmetic and typed attributes
// ---------------------------------------------------------------------------------------------

/// The float types kernels compute in.
pub(super) trait Real:
    Copy
    + PartialOrd
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::AddAssign
{
    fn zero() -> Self;
    fn one() -> Self;
    fn from_f64(v: f64) -> Self;
    /// An element converted to this type (rounded once).
    fn of<T: Elem>(x: T) -> Self;
    /// This value as an element (rounded once).
    fn to<T: Elem>(self) -> T;
    /// Round half to even.
    fn rint(self) -> Self;
    fn is_infinite(self) -> bool;
}

/// [`Real`] for the float type `$t`, which `$of` converts an element to.
macro_rules! real_impl {
    ($t:ident, $of:ident) => {
        impl Real for $t {
            fn zero() -> Self {
                0.0
            }
            fn one() -> Self {
                1.0
            }
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            fn of<T: Elem>(x: T) -> Self {
                x.$of()
            }
            fn to<T: Elem>(self) -> T {
                T::from_f64(f64::from(self))
            }
            fn rint(self) -> Self {
                self.round_ties_even()
            }
            fn is_infinite(self) -> bool {
                $t::is_infinite(self)
            }
        }
    };
}
real_impl!(f32, to_f32);
real_impl!(f64, to_f64);

/// A data-type attribute given as a Type or as an Int (a DataType value).
pub(super) fn type_attr(info: &NodeInfo, name: &str) -> Result<Option<DataType>> {
    match info.attr(name) {
        None => Ok(None),
        Some(v) => match (v.as_type(), v.as_int()) {
            (Some(t), _) => Ok(Some(t)),
            (None, Some(i)) => DataType::from_value(i)
                .map(Some)
                .map_err(|_| bad_attr(info, format!("attribute '{name}' {i} is not a data type"))),
            _ => Err(bad_attr(
                info,
                format!("attribute '{name}' must be a data type"),
            )),
        },
    }
}

/// An attribute the prototype requires.
pub(super) fn required<'a>(info: &'a NodeInfo, name: &str) -> Result<&'a es_core::attr::AttrValue> {
    info.attr(name)
        .ok_or_else(|| bad_attr(info, format!("attribute '{name}' is required")))
}

/// Test helpers shared by the families' unit tests: a node, its kernel, attribute values.
#[cfg(test)]
pub(super) mod testing {
    use crate::error::{Error, Result};
    use crate::kernels::{Factory, Kernel, NodeInfo};
    use crate::value::Value;
    use es_core::attr::AttrValue;
    use es_core::{DataType, Shape, TensorDesc};
    use ndarray::{ArrayD, IxDyn};

    pub(in crate::kernels) fn arr<T>(dims: &[usize], v: Vec<T>) -> ArrayD<T> {
        ArrayD::from_shape_vec(IxDyn(dims), v).unwrap()
    }

    pub(in crate::kernels) fn node(op: &str, attrs: &[(&str, AttrValue)]) -> es_core::Node {
        let mut n = es_core::Node::new("n", op);
        for (k, v) in attrs {
            n.attrs.insert(k.to_string(), v.clone());
        }
        n
    }

    pub(in crate::kernels) fn factory(
        f: Factory,
        node: &es_core::Node,
        consts: Vec<Option<Value>>,
    ) -> Result<Kernel> {
        f(&NodeInfo {
            node,
            inputs: Vec::new(),
            const_inputs: consts,
        })
    }

    pub(in crate::kernels) fn li(v: &[i64]) -> AttrValue {
        AttrValue::ListInt(v.to_vec())
    }

    /// A node with outputs of dtypes `outs` (scalar shapes).
    pub(in crate::kernels) fn node_with_outputs(
        op: &str,
        attrs: &[(&str, AttrValue)],
        outs: &[DataType],
    ) -> es_core::Node {
        let mut n = es_core::Node::new(op, op);
        for (k, v) in attrs {
            n.attrs.insert(k.to_string(), v.clone());
        }
        for (i, &dt) in outs.iter().enumerate() {
            n.outputs.push(es_core::graph::OutputSlot {
                name: format!("y{i}").into(),
                ir_index: i as u32,
                desc: TensorDesc::new(dt, Shape::scalar()).into(),
                consumers: Vec::new(),
            });
        }
        n
    }

    /// The registered kernel of `n` run on `inputs` (an error from the factory or the run).
    pub(in crate::kernels) fn run(
        n: &es_core::Node,
        inputs: &[Option<&Value>],
    ) -> Result<Vec<Value>> {
        let info = NodeInfo {
            node: n,
            inputs: inputs
                .iter()
                .map(|v| v.map(|v| TensorDesc::new(v.dtype(), Shape::new(v.dims()))))
                .collect(),
            const_inputs: Vec::new(),
        };
        let f = crate::kernels::registry()[n.op_type.as_str()];
        f(&info)?(inputs)
    }

    /// The first output of the registered kernel of `op` (no declared outputs).
    pub(in crate::kernels) fn run1(
        op: &str,
        attrs: &[(&str, AttrValue)],
        inputs: &[&Value],
    ) -> Result<Value> {
        let n = node_with_outputs(op, attrs, &[]);
        let args: Vec<Option<&Value>> = inputs.iter().map(|v| Some(*v)).collect();
        Ok(run(&n, &args)?.remove(0))
    }

    pub(in crate::kernels) fn f32s(dims: &[usize], v: &[f32]) -> Value {
        Value::F32(arr(dims, v.to_vec()))
    }
    pub(in crate::kernels) fn f64s(dims: &[usize], v: &[f64]) -> Value {
        Value::F64(arr(dims, v.to_vec()))
    }
    pub(in crate::kernels) fn i64s(dims: &[usize], v: &[i64]) -> Value {
        Value::I64(arr(dims, v.to_vec()))
    }
    pub(in crate::kernels) fn i32s(dims: &[usize], v: &[i32]) -> Value {
        Value::I32(arr(dims, v.to_vec()))
    }
    pub(in crate::kernels) fn i8s(dims: &[usize], v: &[i8]) -> Value {
        Value::I8(arr(dims, v.to_vec()))
    }
    pub(in crate::kernels) fn f32v(dims: &[usize], v: Vec<f32>) -> Value {
        Value::F32(arr(dims, v))
    }
    pub(in crate::kernels) fn vals(v: &Value) -> Vec<f64> {
        v.to_f64_vec()
    }
    /// Every index present.
    pub(in crate::kernels) fn some(v: &[usize]) -> Vec<Option<usize>> {
        v.iter().copied().map(Some).collect()
    }
    pub(in crate::kernels) fn s(v: &str) -> AttrValue {
        AttrValue::String(v.to_string())
    }

    pub(in crate::kernels) fn unsupported(r: Result<Kernel>) -> String {
        match r {
            Err(e @ Error::Unsupported(_)) => e.to_string(),
            Err(e) => panic!("expected an unsupported error, got {e}"),
            Ok(_) => panic!("expected an unsupported error, got a kernel"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Contiguous, row-contiguous (a slice, a broadcast) and strided (transposed, stepped)
    /// views copy in standard order, as ndarray's own standard-layout copy does.
    #[test]
    fn views_copy_in_standard_order() {
        use ndarray::{s, Axis};
        let a = ArrayD::from_shape_vec(IxDyn(&[3, 4, 5]), (0..60).collect::<Vec<i32>>()).unwrap();
        let b = a.slice(s![.., 1..3, ..]).into_dyn();
        let c = a.index_axis(Axis(0), 1).insert_axis(Axis(0));
        let c = c.broadcast(IxDyn(&[2, 4, 5])).unwrap();
        let t = a.view().permuted_axes(IxDyn(&[2, 0, 1]));
        let st = a.slice(s![..;2, .., ..;-2]).into_dyn();
        for v in [a.view(), b, c, t, st, a.index_axis(Axis(1), 2).into_dyn()] {
            let want = v.as_standard_layout().into_owned();
            assert_eq!(to_owned_std(v.clone()).unwrap(), want);
            assert_eq!(owned(v.clone(), v.shape()).unwrap(), want);
        }
        let owned_t = a.clone().permuted_axes(IxDyn(&[2, 0, 1]));
        let want = owned_t.as_standard_layout().into_owned();
        assert_eq!(&*std_slice(&owned_t), want.as_slice().unwrap());
    }
}
