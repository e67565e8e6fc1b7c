//! Helpers shared by the inference rules of several operator families.
//!
//! Conventions shared by every rule:
//! - a dim of -1 is unknown and a shape of `[-2]` has unknown rank; rules propagate both and
//!   never fail because something is unknown, only because something known is wrong;
//! - value-dependent shapes (Reshape's `shape`, Transpose's `perm`, ...) are resolved when the
//!   value comes from a Const node, otherwise the rank is kept where it is knowable;
//! - errors name the input or attribute and show expected and actual values; [`InferCtx::err`]
//!   prefixes the operator type and node name;
//! - output dtypes come from the type variables; where the prototype gives an explicit list
//!   instead, the dtype of the input the output follows is used when the list allows it.

use super::{broadcast, InferCtx};
use crate::attr::AttrValue;
use crate::error::Result;
use crate::opmath::{attr_or, FromAttr};
use crate::types::{DataType, Format, Shape, TensorDesc, UNKNOWN_DIM};

/// The dtype of output `out_ir`: its type variable's binding, else the dtype of `like` when the
/// output's type list allows it (or `like` is UNDEFINED), else UNDEFINED.
pub(super) fn dtype_like(ctx: &InferCtx, out_ir: usize, like: Option<&TensorDesc>) -> DataType {
    let t = ctx.output_dtype(out_ir);
    if t != DataType::UNDEFINED {
        return t;
    }
    let Some(d) = like else {
        return DataType::UNDEFINED;
    };
    match ctx
        .proto
        .outputs
        .get(out_ir)
        .and_then(|o| ctx.proto.allowed(&o.ty))
    {
        Some(list) if !list.contains(&d.dtype) => DataType::UNDEFINED,
        _ => d.dtype,
    }
}

/// Whether output `out_ir` may have dtype `t` (true when the prototype does not say).
pub(super) fn output_allows(ctx: &InferCtx, out_ir: usize, t: DataType) -> bool {
    match ctx
        .proto
        .outputs
        .get(out_ir)
        .and_then(|o| ctx.proto.allowed(&o.ty))
    {
        Some(list) => list.contains(&t),
        None => true,
    }
}

/// The data type attribute `name` (read by [`attr_dtype`]) of output 0, which must allow it.
pub(super) fn out_dtype_attr(
    ctx: &InferCtx,
    name: &str,
    default: Option<DataType>,
) -> Result<DataType> {
    let t = attr_dtype(ctx, name, default)?;
    if !output_allows(ctx, 0, t) {
        return Err(ctx.err(format!(
            "attribute '{name}' is {t}, which output 'y' does not allow"
        )));
    }
    Ok(t)
}

/// One output description.
pub(super) fn single(dtype: DataType, shape: Shape) -> Vec<TensorDesc> {
    vec![TensorDesc::new(dtype, shape)]
}

/// An optional attribute read as `T` ([`attr_or`]), `default` when absent; the error names the
/// wanted type ("attribute 'x' must be an Int, got ...").
fn opt<'a, T: FromAttr<'a>>(ctx: &InferCtx<'a>, name: &str, default: T) -> Result<T> {
    attr_or(ctx.attrs.get(name), default).map_err(|e| {
        let article = if e.want.starts_with(['A', 'E', 'I', 'O', 'U']) {
            "an"
        } else {
            "a"
        };
        ctx.err(format!(
            "attribute '{name}' must be {article} {}, got {}",
            e.want, e.got
        ))
    })
}

pub(super) fn opt_bool(ctx: &InferCtx, name: &str, default: bool) -> Result<bool> {
    opt(ctx, name, default)
}

pub(super) fn opt_int(ctx: &InferCtx, name: &str, default: i64) -> Result<i64> {
    opt(ctx, name, default)
}

pub(super) fn opt_str<'a>(ctx: &InferCtx<'a>, name: &str, default: &'a str) -> Result<&'a str> {
    opt(ctx, name, default)
}

pub(super) fn opt_ints<'a>(
    ctx: &InferCtx<'a>,
    name: &str,
    default: &'a [i64],
) -> Result<&'a [i64]> {
    opt(ctx, name, default)
}

/// A dtype attribute: GE stores them as Int (`Cast.dst_type`, `Shape.dtype`); Type is accepted too.
pub(super) fn attr_dtype(
    ctx: &InferCtx,
    name: &str,
    default: Option<DataType>,
) -> Result<DataType> {
    match ctx.attrs.get(name) {
        None => default.ok_or_else(|| ctx.err(format!("attribute '{name}' is not set"))),
        Some(AttrValue::Type(t)) => Ok(*t),
        Some(AttrValue::Int(v)) => DataType::from_value(*v).map_err(|_| {
            ctx.err(format!(
                "attribute '{name}' is {v}, which is not a data type value"
            ))
        }),
        Some(other) => Err(ctx.err(format!(
            "attribute '{name}' must be a data type (Int or Type), got {other}"
        ))),
    }
}

/// Two dims that must be equal: the known one of the two, or None when both are known and differ.
pub(super) fn merge_dim(a: i64, b: i64) -> Option<i64> {
    if a == UNKNOWN_DIM {
        Some(b)
    } else if b == UNKNOWN_DIM || a == b {
        Some(a)
    } else {
        None
    }
}

/// Whether two dim lists have the same length and dims that may be equal ([`merge_dim`]).
pub(super) fn dims_agree(a: &[i64], b: &[i64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(&x, &y)| merge_dim(x, y).is_some())
}

/// The shape a 1-D integer input `name` holds: its constant dims (none negative), else as many
/// unknown dims as it has values, else an unknown rank.
pub(super) fn shape_from_input(ctx: &InferCtx, name: &str) -> Result<Shape> {
    let len = vector_len(ctx, name, Some(ctx.req(name)?))?;
    Ok(match ctx.const_ints(name)? {
        Some(v) => {
            if let Some((i, d)) = v.iter().enumerate().find(|(_, &d)| d < 0) {
                return Err(ctx.err(format!(
                    "input '{name}' {v:?} has negative dim {d} at index {i}"
                )));
            }
            Shape::from(v)
        }
        None => len.map(unknown_dims_of).unwrap_or_else(Shape::unknown_rank),
    })
}

/// Product of dims, None when one is unknown (or it overflows).
pub(super) fn product(dims: &[i64]) -> Option<i64> {
    crate::opmath::checked_product(dims)
}

/// Broadcast with an error that names both inputs.
pub(super) fn bcast(ctx: &InferCtx, a: (&str, &Shape), b: (&str, &Shape)) -> Result<Shape> {
    broadcast(a.1, b.1).map_err(|e| {
        ctx.err(format!(
            "inputs '{}' {} and '{}' {} cannot be broadcast: {e}",
            a.0, a.1, b.0, b.1
        ))
    })
}

/// The integer values of a constant input that must hold exactly one value (scalar or [1]).
pub(super) fn const_scalar(ctx: &InferCtx, name: &str) -> Result<Option<i64>> {
    match ctx.const_ints(name)? {
        None => Ok(None),
        Some(v) if v.len() == 1 => Ok(Some(v[0])),
        Some(v) => Err(ctx.err(format!(
            "input '{name}' must hold one value, got {} values {v:?}",
            v.len()
        ))),
    }
}

/// Checks that a known-rank input is 1-D; returns its length when known.
pub(super) fn vector_len(
    ctx: &InferCtx,
    name: &str,
    d: Option<&TensorDesc>,
) -> Result<Option<i64>> {
    let Some(d) = d else { return Ok(None) };
    match d.shape.rank() {
        None => Ok(None),
        Some(1) => Ok(if d.shape.0[0] >= 0 {
            Some(d.shape.0[0])
        } else {
            None
        }),
        Some(r) => Err(ctx.err(format!(
            "input '{name}' must be 1-D, got rank {r} shape {}",
            d.shape
        ))),
    }
}

/// The largest rank a rule builds from a length it reads off a description (a shape input of
/// shape `[n]`); beyond it the rank is reported unknown rather than allocating `n` dims.
pub(super) const MAX_RANK: i64 = 1024;

/// `n` unknown dims, or unknown rank when `n` is implausibly large.
pub(super) fn unknown_dims_of(n: i64) -> Shape {
    if (0..=MAX_RANK).contains(&n) {
        Shape::unknown_dims(n as usize)
    } else {
        Shape::unknown_rank()
    }
}

/// Checks that a static input holds exactly one element.
pub(super) fn check_one_element(ctx: &InferCtx, name: &str, d: Option<&TensorDesc>) -> Result<()> {
    if let Some(d) = d {
        if let Some(n) = d.shape.num_elements() {
            if n != 1 {
                return Err(ctx.err(format!(
                    "input '{name}' must be a scalar (one element), got shape {} with {n} elements",
                    d.shape
                )));
            }
        }
    }
    Ok(())
}

/// Checks that a known rank equals `want`.
pub(super) fn check_rank(ctx: &InferCtx, name: &str, s: &Shape, want: usize) -> Result<()> {
    match s.rank() {
        Some(r) if r != want => Err(ctx.err(format!(
            "input '{name}' must be {want}-D, got rank {r} shape {s}"
        ))),
        _ => Ok(()),
    }
}

/// Normalises a list of axes against `rank`, rejecting repeats.
pub(super) fn norm_axes(
    ctx: &InferCtx,
    axes: &[i64],
    rank: usize,
    what: &str,
    allow_repeat: bool,
) -> Result<Vec<usize>> {
    let mut out: Vec<usize> = Vec::with_capacity(axes.len());
    for &a in axes {
        let n = ctx.axis(a, rank, what)?;
        if out.contains(&n) {
            if allow_repeat {
                continue;
            }
            return Err(ctx.err(format!("{what} {a} is repeated in {axes:?}")));
        }
        out.push(n);
    }
    Ok(out)
}

/// `data_format` ("NHWC" by default) of an op taking channels first or last in 2 or 3 spatial
/// dims: the name, and whether channels are last.
pub(super) fn channel_format<'a>(ctx: &InferCtx<'a>) -> Result<(&'a str, bool)> {
    let fmt = opt_str(ctx, "data_format", "NHWC")?;
    match fmt {
        "NHWC" | "NDHWC" => Ok((fmt, true)),
        "NCHW" | "NCDHW" => Ok((fmt, false)),
        other => Err(ctx.err(format!(
            "attribute 'data_format' must be \"NHWC\", \"NCHW\", \"NDHWC\" or \"NCDHW\", got {other:?}"
        ))),
    }
}

/// One output per input `xs`, each with its input's shape and the dtype `dt(x)`; when the
/// counts differ, the error is `what(inputs, outputs)`.
pub(super) fn one_per_input(
    ctx: &InferCtx,
    xs: &[&TensorDesc],
    dt: impl Fn(&TensorDesc) -> DataType,
    what: impl FnOnce(usize, usize) -> String,
) -> Result<Vec<TensorDesc>> {
    if xs.len() != ctx.num_outputs() {
        return Err(ctx.err(what(xs.len(), ctx.num_outputs())));
    }
    Ok(xs
        .iter()
        .map(|x| TensorDesc::new(dt(x), x.shape.clone()))
        .collect())
}

/// [`one_per_input`] over every given input, each output keeping its input's dtype.
pub(super) fn outputs_are_inputs(
    ctx: &InferCtx,
    what: impl FnOnce(usize, usize) -> String,
) -> Result<Vec<TensorDesc>> {
    let xs: Vec<&TensorDesc> = ctx.inputs.iter().filter_map(|d| *d).collect();
    one_per_input(ctx, &xs, |d| d.dtype, what)
}

/// Output dtype of a matrix product: the bound type, else x's dtype, with int8/int4 giving int32.
pub(super) fn product_dtype(ctx: &InferCtx, x: &TensorDesc) -> DataType {
    let t = ctx.output_dtype(0);
    if t != DataType::UNDEFINED {
        return t;
    }
    if matches!(x.dtype, DataType::INT8 | DataType::INT4) && output_allows(ctx, 0, DataType::INT32)
    {
        return DataType::INT32;
    }
    dtype_like(ctx, 0, Some(x))
}

/// The name of the output with IR index `ir`.
pub(super) fn out_name<'a>(ctx: &InferCtx<'a>, ir: u32) -> &'a str {
    ctx.proto
        .outputs
        .get(ir as usize)
        .map(|o| o.name.as_str())
        .unwrap_or("")
}

/// Product of dims, -1 when unknown.
pub(super) fn product_or_unknown(dims: &[i64]) -> i64 {
    product(dims).unwrap_or(UNKNOWN_DIM)
}

/// The dim `i` of a shape, unknown for an unknown rank.
pub(super) fn dim(s: &Shape, i: usize) -> i64 {
    if s.is_unknown_rank() {
        UNKNOWN_DIM
    } else {
        s.0.get(i).copied().unwrap_or(UNKNOWN_DIM)
    }
}

/// Checks that a known rank is at least `min`.
pub(super) fn check_min_rank(ctx: &InferCtx, name: &str, s: &Shape, min: usize) -> Result<()> {
    match s.rank() {
        Some(r) if r < min => Err(ctx.err(format!(
            "input '{name}' must have rank >= {min}, got rank {r} shape {s}"
        ))),
        _ => Ok(()),
    }
}

/// The layout of a data format string (one of `allowed`).
pub(super) fn layout(ctx: &InferCtx, attr: &str, fmt: &str, allowed: &[&str]) -> Result<Layout> {
    if !allowed.contains(&fmt) {
        let list: Vec<String> = allowed.iter().map(|f| format!("{f:?}")).collect();
        return Err(ctx.err(format!(
            "attribute '{attr}' must be one of {}, got {fmt:?}",
            list.join(", ")
        )));
    }
    let channel_last = fmt.ends_with('C');
    Ok(Layout {
        rank: fmt.len(),
        channel_last,
    })
}

/// A data layout: rank, and whether the channel is the last dim.
#[derive(Clone, Copy)]
pub(super) struct Layout {
    pub(super) rank: usize,
    pub(super) channel_last: bool,
}

impl Layout {
    pub(super) fn c(self) -> usize {
        if self.channel_last {
            self.rank - 1
        } else {
            1
        }
    }
    /// The `i`-th spatial dim.
    pub(super) fn sp(self, i: usize) -> usize {
        if self.channel_last {
            1 + i
        } else {
            2 + i
        }
    }
}

/// The layout of a convolution's or pooling's feature map `x`, by [`super::layout::data_layout`]
/// (`default` is data_format's default): the layout, its format and its name.
pub(super) fn data_layout(
    ctx: &InferCtx,
    x: &TensorDesc,
    default: &str,
    allowed: &[Format],
) -> Result<(Layout, Format, &'static str)> {
    let df = opt_str(ctx, "data_format", default)?;
    let f = super::layout::data_layout(Some(x), df, allowed).map_err(|e| ctx.err(e))?;
    let name = f.name().trim_start_matches("FORMAT_");
    Ok((
        Layout {
            rank: name.len(),
            channel_last: super::layout::channel_last(f),
        },
        f,
        name,
    ))
}

/// A feature map's description in layout `f` (y of a convolution or pooling).
pub(super) fn in_layout(dtype: DataType, shape: Shape, f: Format) -> Vec<TensorDesc> {
    vec![TensorDesc::new(dtype, shape).with_format(f)]
}

/// Checks a list attribute's length.
pub(super) fn check_len(
    ctx: &InferCtx,
    name: &str,
    v: &[i64],
    n: usize,
    order: &str,
) -> Result<()> {
    if v.len() != n {
        return Err(ctx.err(format!(
            "attribute '{name}' must have {n} values ({order}), got {v:?}"
        )));
    }
    Ok(())
}

/// Checks that every value of a list attribute at the given positions is >= `min`.
pub(super) fn check_min_at(
    ctx: &InferCtx,
    name: &str,
    v: &[i64],
    pos: &[usize],
    min: i64,
    what: &str,
) -> Result<()> {
    if pos.iter().any(|&p| v[p] < min) {
        return Err(ctx.err(format!(
            "attribute '{name}' {v:?} must have {what} values >= {min}"
        )));
    }
    Ok(())
}

/// Checks that a parameter input (gamma, beta) has the shape `want` (dims may be unknown).
pub(super) fn check_param_shape(ctx: &InferCtx, name: &str, want: &[i64], why: &str) -> Result<()> {
    let Some(d) = ctx.input(name)? else {
        return Ok(());
    };
    if d.shape.rank().is_some() && !dims_agree(&d.shape.0, want) {
        return Err(ctx.err(format!(
            "input '{name}' {} must have shape {} ({why})",
            d.shape,
            Shape::from(want.to_vec())
        )));
    }
    Ok(())
}

/// Merges dim `ia` of `a` with dim `ib` of `b`; an error names both inputs.
pub(super) fn merge_named(
    ctx: &InferCtx,
    (na, a, ia): (&str, &Shape, usize),
    (nb, b, ib): (&str, &Shape, usize),
) -> Result<i64> {
    let (x, y) = (dim(a, ia), dim(b, ib));
    merge_dim(x, y).ok_or_else(|| {
        ctx.err(format!(
            "dim {ia} of input '{na}' {a} ({x}) must equal dim {ib} of input '{nb}' {b} ({y})"
        ))
    })
}

/// Checks that a known dim equals `want`.
pub(super) fn check_dim(
    ctx: &InferCtx,
    name: &str,
    s: &Shape,
    i: usize,
    want: i64,
    what: &str,
) -> Result<()> {
    let d = dim(s, i);
    if d != UNKNOWN_DIM && d != want {
        return Err(ctx.err(format!(
            "input '{name}' {s}: dim {i} ({what}) must be {want}, got {d}"
        )));
    }
    Ok(())
}

/// y like x.
pub(super) fn same_as_x(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    Ok(single(dtype_like(ctx, 0, Some(x)), x.shape.clone()))
}
