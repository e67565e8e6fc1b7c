//! Element-wise math, reductions and activations that need more than the table's one-to-one form.
//!
//! Dtype gaps of GE's prototypes are bridged by Casts only where the result is bit-exact:
//! unsigned integers go through a signed type at least as wide (add, sub and mul wrap the same
//! way; comparisons of uint64 bias both sides by 2^63 so signed order is unsigned order);
//! anything else is refused with a message.

use crate::error::{Error, Result};
use crate::translate::{NodeCtx, Registry};
use es_core::{AttrValue, DataType, OutPort, Tensor};
use std::sync::Arc;

use super::util::{norm_axes, norm_axis};

type Out = Result<Vec<Option<OutPort>>>;

fn one(p: OutPort) -> Out {
    Ok(vec![Some(p)])
}

pub(crate) fn register(r: &mut Registry) {
    // Binary arithmetic and comparisons with the unsigned-dtype bridges.
    r.register("Add", Arc::new(|c: &mut NodeCtx<'_>| binary(c, Bin::Add)));
    r.register("Sub", Arc::new(|c: &mut NodeCtx<'_>| binary(c, Bin::Sub)));
    r.register("Mul", Arc::new(|c: &mut NodeCtx<'_>| binary(c, Bin::Mul)));
    r.register("Div", Arc::new(|c: &mut NodeCtx<'_>| binary(c, Bin::Div)));
    r.register("Equal", Arc::new(|c: &mut NodeCtx<'_>| binary(c, Bin::Eq)));
    r.register(
        "Greater",
        Arc::new(|c: &mut NodeCtx<'_>| binary(c, Bin::Gt)),
    );
    r.register("Less", Arc::new(|c: &mut NodeCtx<'_>| binary(c, Bin::Lt)));
    r.register(
        "GreaterOrEqual",
        Arc::new(|c: &mut NodeCtx<'_>| binary(c, Bin::Ge)),
    );
    r.register(
        "LessOrEqual",
        Arc::new(|c: &mut NodeCtx<'_>| binary(c, Bin::Le)),
    );
    r.register("Mod", Arc::new(modulo));
    r.register("Pow", Arc::new(pow));
    r.register("Max", Arc::new(|c: &mut NodeCtx<'_>| variadic(c, Var::Max)));
    r.register("Min", Arc::new(|c: &mut NodeCtx<'_>| variadic(c, Var::Min)));
    r.register("Sum", Arc::new(|c: &mut NodeCtx<'_>| variadic(c, Var::Sum)));
    r.register(
        "Mean",
        Arc::new(|c: &mut NodeCtx<'_>| variadic(c, Var::Mean)),
    );
    for (name, red) in [
        ("ReduceMax", Red::Max),
        ("ReduceMin", Red::Min),
        ("ReduceSum", Red::Sum),
        ("ReduceMean", Red::Mean),
        ("ReduceProd", Red::Prod),
        ("ReduceL1", Red::L1),
        ("ReduceL2", Red::L2),
        ("ReduceLogSum", Red::LogSum),
        ("ReduceLogSumExp", Red::LogSumExp),
        ("ReduceSumSquare", Red::SumSquare),
    ] {
        r.register(name, Arc::new(move |c: &mut NodeCtx<'_>| reduce(c, red)));
    }
    r.register("ArgMax", Arc::new(|c: &mut NodeCtx<'_>| arg(c, true)));
    r.register("ArgMin", Arc::new(|c: &mut NodeCtx<'_>| arg(c, false)));
    r.register(
        "Softmax",
        Arc::new(|c: &mut NodeCtx<'_>| softmax(c, Soft::Softmax)),
    );
    r.register(
        "LogSoftmax",
        Arc::new(|c: &mut NodeCtx<'_>| softmax(c, Soft::LogSoftmax)),
    );
    r.register(
        "Hardmax",
        Arc::new(|c: &mut NodeCtx<'_>| softmax(c, Soft::Hardmax)),
    );
    r.register("Clip", Arc::new(clip));
    r.register("Xor", Arc::new(xor));
    r.register("IsInf", Arc::new(is_inf));
    r.register("Selu", Arc::new(selu));
    r.register("Celu", Arc::new(celu));
    r.register("Gelu", Arc::new(gelu));
    r.register("Shrink", Arc::new(shrink));
    r.register("ThresholdedRelu", Arc::new(thresholded_relu));
    r.register("HardSwish", Arc::new(hard_swish));
    r.register("PRelu", Arc::new(prelu));
    r.register("Round", Arc::new(round));
    r.register("BitShift", Arc::new(bit_shift));
    r.register("BitCast", Arc::new(bit_cast));
    r.register("Einsum", Arc::new(einsum));
    r.register("SwiGLU", Arc::new(swiglu));
    r.register("MeanVarianceNormalization", Arc::new(mvn));
    r.register("LpNormalization", Arc::new(lp_normalization));
    r.register(
        "BlackmanWindow",
        Arc::new(|c: &mut NodeCtx<'_>| window(c, Win::Blackman)),
    );
    r.register(
        "HammingWindow",
        Arc::new(|c: &mut NodeCtx<'_>| window(c, Win::Hamming)),
    );
    r.register(
        "HannWindow",
        Arc::new(|c: &mut NodeCtx<'_>| window(c, Win::Hann)),
    );
    r.register("MelWeightMatrix", Arc::new(mel_weight_matrix));
    r.register("DFT", Arc::new(dft));
    r.register("Bernoulli", Arc::new(bernoulli));
    r.register("RandomUniformLike", Arc::new(random_uniform_like));
    r.register("ai.onnx.ml::Binarizer", Arc::new(binarizer));
    r.register(
        "ai.onnx.ml::ArrayFeatureExtractor",
        Arc::new(array_feature_extractor),
    );
}

// Helpers.

impl NodeCtx<'_> {
    /// Every attribute of the node must be in `known`.
    fn only_attrs(&self, known: &[&str]) -> Result<()> {
        for a in &self.node.attribute {
            let name = a.name.as_deref().unwrap_or("");
            if !known.contains(&name) {
                return Err(Error::unsupported(format!(
                    "attribute '{name}' of {}",
                    self.op_type()
                )));
            }
        }
        Ok(())
    }
    /// The dtype of input `i`, which must be known at import.
    fn in_dtype(&self, i: usize) -> Result<DataType> {
        let dt = self.input_desc(i)?.dtype;
        if dt == DataType::UNDEFINED {
            return Err(Error::unsupported(format!(
                "{}: the dtype of input {i} must be known at import",
                self.op_type()
            )));
        }
        Ok(dt)
    }
    /// The dtype of port `p`, which must be known.
    fn port_dtype(&self, p: OutPort) -> Result<DataType> {
        let dt = self.desc(p)?.dtype;
        if dt == DataType::UNDEFINED {
            return Err(Error::unsupported(format!(
                "{}: a dtype must be known at import",
                self.op_type()
            )));
        }
        Ok(dt)
    }
    /// A scalar constant of `dt`.
    fn scalar(&mut self, dt: DataType, v: f64) -> Result<OutPort> {
        self.const_of(dt, &[v], &[])
    }
    fn bin(&mut self, op: &str, a: OutPort, b: OutPort) -> Result<OutPort> {
        self.op1(op, &[a, b], vec![])
    }
    fn un(&mut self, op: &str, a: OutPort) -> Result<OutPort> {
        self.op1(op, &[a], vec![])
    }
    /// `p`'s static dim `axis`, when known.
    fn static_dim(&self, p: OutPort, axis: usize) -> Result<Option<i64>> {
        let d = self.desc(p)?;
        Ok(d.shape
            .rank()
            .and_then(|_| d.shape.dims().get(axis).copied())
            .filter(|&v| v >= 0))
    }
    /// Whether GE op `op` accepts dtype `dt` for its first input.
    fn accepts(&self, op: &str, dt: DataType) -> Result<bool> {
        self.accepts_at(op, 0, dt)
    }
    /// Whether GE op `op` accepts dtype `dt` for its input `i`.
    fn accepts_at(&self, op: &str, i: usize, dt: DataType) -> Result<bool> {
        let proto = self.graph_op_proto(op)?;
        Ok(proto
            .inputs
            .get(i)
            .and_then(|i| proto.allowed(&i.ty))
            .is_some_and(|l| l.contains(&dt)))
    }
}

fn unsupported(ctx: &NodeCtx<'_>, why: impl std::fmt::Display) -> Error {
    Error::unsupported(format!("{}: {why}", ctx.op_type()))
}

/// A signed (or wider float) type that holds every value of `dt` and that more GE ops take.
fn widen(dt: DataType) -> Option<DataType> {
    use DataType::*;
    Some(match dt {
        INT8 | INT16 | UINT8 | UINT16 => INT32,
        UINT32 | UINT64 => INT64,
        FLOAT16 | BF16 => FLOAT,
        _ => return None,
    })
}

fn is_unsigned(dt: DataType) -> bool {
    matches!(
        dt,
        DataType::UINT8 | DataType::UINT16 | DataType::UINT32 | DataType::UINT64
    )
}

/// The lowest and highest value of `dt` (infinities for floating types).
fn dtype_range(dt: DataType) -> Option<(f64, f64)> {
    use DataType::*;
    Some(match dt {
        FLOAT | DOUBLE | FLOAT16 | BF16 => (f64::NEG_INFINITY, f64::INFINITY),
        INT8 => (i8::MIN as f64, i8::MAX as f64),
        INT16 => (i16::MIN as f64, i16::MAX as f64),
        INT32 => (i32::MIN as f64, i32::MAX as f64),
        INT64 => (i64::MIN as f64, i64::MAX as f64),
        UINT8 => (0.0, u8::MAX as f64),
        UINT16 => (0.0, u16::MAX as f64),
        UINT32 => (0.0, u32::MAX as f64),
        UINT64 => (0.0, u64::MAX as f64),
        _ => return None,
    })
}

/// A scalar constant holding the lowest (`hi` false) or highest value of `dt`, exactly.
fn extreme(ctx: &mut NodeCtx<'_>, dt: DataType, hi: bool) -> Result<OutPort> {
    use DataType::*;
    let t = match dt {
        INT64 => Tensor::scalar(if hi { i64::MAX } else { i64::MIN }),
        UINT64 => Tensor::scalar(if hi { u64::MAX } else { 0u64 }),
        _ => {
            let (lo, h) = dtype_range(dt)
                .ok_or_else(|| unsupported(ctx, format_args!("inputs of dtype {dt}")))?;
            es_core::types::tensor_from_f64(dt, vec![], &[if hi { h } else { lo }])?
        }
    };
    ctx.constant(t)
}

// Binary arithmetic and comparisons.

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Bin {
    Add,
    Sub,
    Mul,
    Div,
    Eq,
    Gt,
    Lt,
    Ge,
    Le,
}

impl Bin {
    fn ge_op(self, dt: DataType) -> &'static str {
        match self {
            Bin::Add => "Add",
            Bin::Sub => "Sub",
            Bin::Mul => "Mul",
            Bin::Div if dt.is_integer() => "Div",
            Bin::Div => "RealDiv",
            Bin::Eq => "Equal",
            Bin::Gt => "Greater",
            Bin::Lt => "Less",
            Bin::Ge => "GreaterEqual",
            Bin::Le => "LessEqual",
        }
    }
    fn is_order(self) -> bool {
        matches!(self, Bin::Gt | Bin::Lt | Bin::Ge | Bin::Le)
    }
}

/// Opset < 7 `broadcast`/`axis`: numpy broadcasting is the same when B's dims align with the
/// end of A's (no `axis`, or `axis` = rank(A) - rank(B)).
fn check_legacy_broadcast(ctx: &NodeCtx<'_>) -> Result<()> {
    ctx.only_attrs(&["broadcast", "axis", "consumed_inputs"])?;
    if ctx.has_attr("axis") {
        let axis = ctx.attr_i("axis", 0)?;
        let (ra, rb) = (ctx.input_rank(0)? as i64, ctx.input_rank(1)? as i64);
        let axis = if axis < 0 { axis + ra } else { axis };
        if axis != ra - rb {
            return Err(unsupported(
                ctx,
                format_args!("legacy broadcast with axis={axis} (B does not align with A's end)"),
            ));
        }
    }
    Ok(())
}

fn binary(ctx: &mut NodeCtx<'_>, op: Bin) -> Out {
    check_legacy_broadcast(ctx)?;
    let (a, b) = (ctx.input(0)?, ctx.input(1)?);
    let dt = ctx.in_dtype(0)?;
    let name = op.ge_op(dt);
    if ctx.accepts(name, dt)? {
        return one(ctx.bin(name, a, b)?);
    }
    let Some(w) = widen(dt).filter(|_| dt.is_integer()) else {
        return Err(unsupported(ctx, format_args!("inputs of dtype {dt}")));
    };
    let same_width = dt == DataType::UINT64;
    if same_width && op == Bin::Div {
        return Err(unsupported(
            ctx,
            "uint64 division (GE's Div has no uint64 and int64 does not hold every uint64)",
        ));
    }
    let (mut a2, mut b2) = (ctx.cast(a, w)?, ctx.cast(b, w)?);
    if same_width && op.is_order() {
        // Flipping the sign bit (adding 2^63, wrapping) maps unsigned order onto signed order.
        let bias = ctx.constant(Tensor::scalar(i64::MIN))?;
        a2 = ctx.bin("Add", a2, bias)?;
        b2 = ctx.bin("Add", b2, bias)?;
    }
    let y = ctx.bin(op.ge_op(w), a2, b2)?;
    let y = match op {
        Bin::Add | Bin::Sub | Bin::Mul | Bin::Div => ctx.cast(y, dt)?,
        _ => y,
    };
    one(y)
}

/// fmod=0: FloorMod (the divisor's sign, as numpy's mod); fmod=1: Mod (truncated, C's fmod).
fn modulo(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.only_attrs(&["fmod"])?;
    let fmod = ctx.attr_i("fmod", 0)?;
    let (a, b) = (ctx.input(0)?, ctx.input(1)?);
    let dt = ctx.in_dtype(0)?;
    let name = if fmod != 0 { "Mod" } else { "FloorMod" };
    if ctx.accepts(name, dt)? {
        return one(ctx.bin(name, a, b)?);
    }
    if dt == DataType::UINT64 {
        return Err(unsupported(
            ctx,
            "uint64 inputs (GE's Mod/FloorMod take no unsigned type that holds them)",
        ));
    }
    let Some(w) = widen(dt) else {
        return Err(unsupported(ctx, format_args!("inputs of dtype {dt}")));
    };
    let (a2, b2) = (ctx.cast(a, w)?, ctx.cast(b, w)?);
    let y = ctx.bin(name, a2, b2)?;
    one(ctx.cast(y, dt)?)
}

/// Pow with an exponent of another dtype: float bases with an integer or wider float exponent
/// are computed in the wider float (numpy's promotion; f64 for integer exponents); integer
/// bases with a float exponent in f64, truncated back; integer bases with integer exponents in
/// int64 (wrapping, whose low bits are the narrower type's result).
fn pow(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.only_attrs(&["broadcast", "axis"])?;
    if ctx.has_attr("axis") {
        check_legacy_broadcast(ctx)?;
    }
    let (a, b) = (ctx.input(0)?, ctx.input(1)?);
    let (da, db) = (ctx.in_dtype(0)?, ctx.in_dtype(1)?);
    use DataType::*;
    let work = if da == db && ctx.accepts("Pow", da)? {
        da
    } else if da.is_float() {
        if db.is_float() {
            if da == db {
                da
            } else if da == DOUBLE || db == DOUBLE {
                DOUBLE
            } else {
                FLOAT
            }
        } else if db.is_integer() {
            DOUBLE
        } else {
            return Err(unsupported(ctx, format_args!("an exponent of dtype {db}")));
        }
    } else if da.is_integer() {
        if db.is_float() {
            DOUBLE
        } else if db.is_integer() {
            if da == UINT64 || db == UINT64 {
                return Err(unsupported(
                    ctx,
                    "uint64 operands with an integer partner (no exact GE dtype)",
                ));
            }
            INT64
        } else {
            return Err(unsupported(ctx, format_args!("an exponent of dtype {db}")));
        }
    } else {
        return Err(unsupported(ctx, format_args!("a base of dtype {da}")));
    };
    if work == UINT64 || !ctx.accepts("Pow", work)? {
        return Err(unsupported(ctx, format_args!("a base of dtype {da}")));
    }
    let (a2, b2) = (ctx.cast(a, work)?, ctx.cast(b, work)?);
    let y = ctx.bin("Pow", a2, b2)?;
    one(ctx.cast(y, da)?)
}

// Variadic Max/Min/Sum/Mean.

#[derive(Clone, Copy, PartialEq, Eq)]
enum Var {
    Max,
    Min,
    Sum,
    Mean,
}

fn variadic(ctx: &mut NodeCtx<'_>, v: Var) -> Out {
    ctx.only_attrs(&["consumed_inputs"])?;
    let mut xs = Vec::new();
    for i in 0..ctx.num_inputs() {
        if let Some(p) = ctx.opt_input(i)? {
            xs.push(p);
        }
    }
    let Some(&first) = xs.first() else {
        return Err(Error::tr(format!(
            "{} needs at least one input",
            ctx.op_type()
        )));
    };
    let dt = ctx.port_dtype(first)?;
    if xs.len() == 1 {
        return one(ctx.un("Identity", first)?);
    }
    let y = match v {
        Var::Max | Var::Min => {
            let (m, cmp) = if v == Var::Max {
                ("Maximum", "Greater")
            } else {
                ("Minimum", "Less")
            };
            let direct = ctx.accepts(m, dt)?;
            let select = ctx.accepts(cmp, dt)? && ctx.accepts_at("SelectV2", 1, dt)?;
            if !direct && !select {
                return Err(unsupported(ctx, format_args!("inputs of dtype {dt}")));
            }
            let mut acc = first;
            for &x in &xs[1..] {
                acc = if direct {
                    ctx.bin(m, acc, x)?
                } else {
                    // Integer types only here: no NaN to propagate.
                    let c = ctx.bin(cmp, acc, x)?;
                    ctx.op1("SelectV2", &[c, acc, x], vec![])?
                };
            }
            acc
        }
        Var::Sum | Var::Mean => {
            if v == Var::Mean && !dt.is_float() {
                return Err(unsupported(ctx, format_args!("inputs of dtype {dt}")));
            }
            let w = if ctx.accepts("Add", dt)? {
                dt
            } else {
                match widen(dt).filter(|_| dt.is_integer()) {
                    Some(w) => w,
                    None => return Err(unsupported(ctx, format_args!("inputs of dtype {dt}"))),
                }
            };
            let mut acc = ctx.cast(first, w)?;
            for &x in &xs[1..] {
                let x = ctx.cast(x, w)?;
                acc = ctx.bin("Add", acc, x)?;
            }
            if v == Var::Mean {
                let n = ctx.scalar(w, xs.len() as f64)?;
                acc = ctx.bin("RealDiv", acc, n)?;
            }
            ctx.cast(acc, dt)?
        }
    };
    one(y)
}

// Reductions.

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Red {
    Max,
    Min,
    Sum,
    Mean,
    Prod,
    L1,
    L2,
    LogSum,
    LogSumExp,
    SumSquare,
}

/// The axes a reduction works on.
#[derive(Clone)]
enum Axes {
    /// Empty axes with noop_with_empty_axes: no reduction.
    Noop,
    /// Every axis.
    All,
    /// Constant axes (normalised when the rank is known).
    List(Vec<i64>),
    /// Axes known only at run time; `noop` says what an empty tensor means.
    Dyn(OutPort, bool),
}

fn reduce_axes(ctx: &mut NodeCtx<'_>) -> Result<Axes> {
    let noop = ctx.attr_i("noop_with_empty_axes", 0)? != 0;
    if !ctx.has_input(1) {
        return Ok(if noop { Axes::Noop } else { Axes::All });
    }
    if let Some(t) = ctx.const_input(1) {
        let v = t.to_i64_vec()?;
        if v.is_empty() {
            return Ok(if noop { Axes::Noop } else { Axes::All });
        }
        let v = match ctx.input_desc(0)?.shape.rank() {
            Some(r) => norm_axes(&v, r, "axes")?
                .into_iter()
                .map(|a| a as i64)
                .collect(),
            None => v,
        };
        return Ok(Axes::List(v));
    }
    let p = ctx.input(1)?;
    let p = ctx.cast(p, DataType::INT64)?;
    Ok(Axes::Dyn(p, noop))
}

/// One GE reduction `op` of `x` (Noop: `x` itself).
fn reduce_op(
    ctx: &mut NodeCtx<'_>,
    op: &str,
    x: OutPort,
    axes: &Axes,
    keep: bool,
) -> Result<OutPort> {
    let has_noop = ctx
        .graph_op_proto(op)?
        .attr("noop_with_empty_axes")
        .is_some();
    let (axes_port, noop) = match axes {
        Axes::Noop => return ctx.un("Identity", x),
        Axes::List(v) => (ctx.const_i64(v, &[v.len() as i64])?, false),
        Axes::All => match ctx.desc(x)?.shape.rank() {
            Some(r) => {
                let v: Vec<i64> = (0..r as i64).collect();
                (ctx.const_i64(&v, &[r as i64])?, false)
            }
            None if has_noop => (ctx.const_i64(&[], &[0])?, false),
            None => {
                return Err(unsupported(
                    ctx,
                    "reducing every axis of an input of unknown rank",
                ))
            }
        },
        Axes::Dyn(p, noop) => {
            if !has_noop && !*noop {
                return Err(unsupported(ctx, "axes known only at run time here"));
            }
            (*p, *noop)
        }
    };
    let mut attrs = vec![("keep_dims", AttrValue::Bool(keep))];
    if has_noop {
        attrs.push(("noop_with_empty_axes", AttrValue::Bool(noop)));
    }
    ctx.op1(op, &[x, axes_port], attrs)
}

fn reduce(ctx: &mut NodeCtx<'_>, red: Red) -> Out {
    let axes_since = if red == Red::Sum { 13 } else { 18 };
    if ctx.opset >= axes_since && ctx.has_attr("axes") {
        return Err(Error::tr(format!(
            "{} (opset {}) takes axes as an input, not an attribute",
            ctx.op_type(),
            ctx.opset
        )));
    }
    ctx.only_attrs(&["keepdims", "noop_with_empty_axes", "axes"])?;
    let keep = ctx.attr_i("keepdims", 1)? != 0;
    let axes = reduce_axes(ctx)?;
    let x = ctx.input(0)?;
    let dt = ctx.in_dtype(0)?;
    use DataType::*;
    if matches!(red, Red::Max | Red::Min | Red::LogSumExp) {
        if let Some(y) = empty_reduction(ctx, red, x, &axes, keep)? {
            return one(y);
        }
    }
    let y = match red {
        Red::Max | Red::Min if dt == BOOL => {
            if let Axes::Dyn(..) = axes {
                // Max/Min of 0/1 values is any/all; the uint8 reductions take axes tensors.
                let u = ctx.cast(x, UINT8)?;
                let op = if red == Red::Max {
                    "ReduceMax"
                } else {
                    "ReduceMin"
                };
                let r = reduce_op(ctx, op, u, &axes, keep)?;
                ctx.cast(r, BOOL)?
            } else {
                let op = if red == Red::Max {
                    "ReduceAny"
                } else {
                    "ReduceAll"
                };
                reduce_op(ctx, op, x, &axes, keep)?
            }
        }
        Red::Max => reduce_op(ctx, "ReduceMax", x, &axes, keep)?,
        Red::Min => reduce_op(ctx, "ReduceMin", x, &axes, keep)?,
        Red::Sum => reduce_op(ctx, "ReduceSum", x, &axes, keep)?,
        Red::Mean => reduce_op(ctx, "ReduceMean", x, &axes, keep)?,
        Red::Prod => reduce_op(ctx, "ReduceProd", x, &axes, keep)?,
        Red::L1 => {
            let a = if is_unsigned(dt) {
                x
            } else {
                ctx.un("Abs", x)?
            };
            reduce_op(ctx, "ReduceSum", a, &axes, keep)?
        }
        Red::SumSquare => {
            let sq = ctx.bin("Mul", x, x)?;
            reduce_op(ctx, "ReduceSum", sq, &axes, keep)?
        }
        Red::L2 | Red::LogSum | Red::LogSumExp => {
            if !dt.is_float() && red != Red::L2 {
                return Err(unsupported(
                    ctx,
                    format_args!("inputs of dtype {dt} (Exp and Log take floats)"),
                ));
            }
            // Integer L2 as numpy: in f64, truncated back.
            let xf = if dt.is_float() {
                x
            } else {
                ctx.cast(x, DOUBLE)?
            };
            let wt = ctx.port_dtype(xf)?;
            let y = match red {
                Red::L2 => {
                    let sq = ctx.bin("Mul", xf, xf)?;
                    let s = reduce_op(ctx, "ReduceSum", sq, &axes, keep)?;
                    ctx.un("Sqrt", s)?
                }
                Red::LogSum => {
                    let s = reduce_op(ctx, "ReduceSum", xf, &axes, keep)?;
                    ctx.un("Log", s)?
                }
                _ => {
                    let direct = matches!(axes, Axes::List(_) | Axes::All)
                        && ctx.accepts("ReduceLogSumExp", wt)?;
                    if direct {
                        reduce_op(ctx, "ReduceLogSumExp", xf, &axes, keep)?
                    } else {
                        // max + log(sum(exp(x - max))), an infinite max taken as 0 (as ONNX's
                        // reference does), so all -inf rows give -inf and +inf rows +inf.
                        let m = reduce_op(ctx, "ReduceMax", xf, &axes, true)?;
                        let inf = ctx.un("IsInf", m)?;
                        let zero = ctx.scalar(wt, 0.0)?;
                        let m = ctx.op1("SelectV2", &[inf, zero, m], vec![])?;
                        let d = ctx.bin("Sub", xf, m)?;
                        let e = ctx.un("Exp", d)?;
                        let s = reduce_op(ctx, "ReduceSum", e, &axes, keep)?;
                        let l = ctx.un("Log", s)?;
                        let m = if keep {
                            m
                        } else {
                            reduce_op(ctx, "ReduceMax", m, &axes, false)?
                        };
                        ctx.bin("Add", l, m)?
                    }
                }
            };
            ctx.cast(y, dt)?
        }
    };
    one(y)
}

/// A reduction over an empty set of a statically shaped input: a constant of the result's
/// shape holding the reduction's identity (-inf for Max and LogSumExp, +inf for Min; the
/// dtype's lowest/highest value for integers), as ONNX defines it.
fn empty_reduction(
    ctx: &mut NodeCtx<'_>,
    red: Red,
    x: OutPort,
    axes: &Axes,
    keep: bool,
) -> Result<Option<OutPort>> {
    let d = ctx.desc(x)?;
    if !d.shape.is_static() || d.shape.rank().is_none() {
        return Ok(None);
    }
    let dims = d.shape.dims().to_vec();
    let ax: Vec<usize> = match axes {
        Axes::All => (0..dims.len()).collect(),
        Axes::List(v) => v.iter().map(|&a| a as usize).collect(),
        _ => return Ok(None),
    };
    if ax.iter().any(|&a| a >= dims.len()) || !ax.iter().any(|&a| dims[a] == 0) {
        return Ok(None);
    }
    let mut out = Vec::new();
    for (i, &n) in dims.iter().enumerate() {
        if !ax.contains(&i) {
            out.push(n);
        } else if keep {
            out.push(1);
        }
    }
    // The result is materialised: bound it (a model may declare any static shape).
    let count = out
        .iter()
        .try_fold(1i64, |acc, &n| acc.checked_mul(n))
        .filter(|&c| (0..=1 << 24).contains(&c))
        .ok_or_else(|| {
            Error::unsupported(format!(
                "a reduction over an empty axis with an output of shape {out:?} (more than 2^24 \
                 elements)"
            ))
        })?;
    let dt = d.dtype;
    let hi = red == Red::Min;
    let t = match (dt, dtype_range(dt)) {
        (DataType::BOOL, _) => Tensor::from_values(&vec![hi; count as usize], out.clone())?,
        (DataType::INT64, _) => Tensor::from_values(
            &vec![if hi { i64::MAX } else { i64::MIN }; count as usize],
            out.clone(),
        )?,
        (DataType::UINT64, _) => Tensor::from_values(
            &vec![if hi { u64::MAX } else { 0 }; count as usize],
            out.clone(),
        )?,
        (_, Some((lo, h))) => es_core::types::tensor_from_f64(
            dt,
            out.clone(),
            &vec![if hi { h } else { lo }; count as usize],
        )?,
        _ => return Ok(None),
    };
    Ok(Some(ctx.constant(t)?))
}

// ArgMax/ArgMin.

fn arg(ctx: &mut NodeCtx<'_>, max: bool) -> Out {
    ctx.only_attrs(&["axis", "keepdims", "select_last_index"])?;
    let x = ctx.input(0)?;
    let rank = ctx.input_rank(0)?;
    let axis = norm_axis(ctx.attr_i("axis", 0)?, rank, "axis")?;
    let keep = ctx.attr_i("keepdims", 1)? != 0;
    let last = ctx.attr_i("select_last_index", 0)? != 0;
    let op = if max { "ArgMaxV2" } else { "ArgMin" };
    let dim = ctx.const_i64(&[axis as i64], &[])?;
    let attrs = || vec![("dtype", AttrValue::Type(DataType::INT64))];
    let y = if last {
        let Some(n) = ctx.static_dim(x, axis)? else {
            return Err(unsupported(
                ctx,
                "select_last_index=1 needs the size of the reduced axis at import",
            ));
        };
        let ax = ctx.const_i64(&[axis as i64], &[1])?;
        let r = ctx.op1("ReverseV2", &[x, ax], vec![])?;
        let i = ctx.op1(op, &[r, dim], attrs())?;
        let top = ctx.const_i64(&[n - 1], &[])?;
        ctx.bin("Sub", top, i)?
    } else {
        ctx.op1(op, &[x, dim], attrs())?
    };
    let y = if keep {
        ctx.op1(
            "Unsqueeze",
            &[y],
            vec![("axes", AttrValue::ListInt(vec![axis as i64]))],
        )?
    } else {
        y
    };
    one(y)
}

// Softmax, LogSoftmax, Hardmax.

#[derive(Clone, Copy, PartialEq, Eq)]
enum Soft {
    Softmax,
    LogSoftmax,
    Hardmax,
}

/// The op along `axis` (normalised) of `x` (rank `rank`).
fn soft_along(ctx: &mut NodeCtx<'_>, s: Soft, x: OutPort, axis: usize) -> Result<OutPort> {
    match s {
        Soft::Softmax => ctx.op1(
            "SoftmaxV2",
            &[x],
            vec![("axes", AttrValue::ListInt(vec![axis as i64]))],
        ),
        Soft::LogSoftmax => ctx.op1(
            "LogSoftmaxV2",
            &[x],
            vec![("axes", AttrValue::ListInt(vec![axis as i64]))],
        ),
        Soft::Hardmax => {
            let Some(n) = ctx.static_dim(x, axis)? else {
                return Err(unsupported(
                    ctx,
                    "the size of the axis must be known at import",
                ));
            };
            let dt = ctx.port_dtype(x)?;
            let dim = ctx.const_i64(&[axis as i64], &[])?;
            let i = ctx.op1(
                "ArgMaxV2",
                &[x, dim],
                vec![("dtype", AttrValue::Type(DataType::INT64))],
            )?;
            let depth = ctx.const_i64(&[n], &[])?;
            let on = ctx.scalar(dt, 1.0)?;
            let off = ctx.scalar(dt, 0.0)?;
            ctx.op1(
                "OneHot",
                &[i, depth, on, off],
                vec![("axis", AttrValue::Int(axis as i64))],
            )
        }
    }
}

fn softmax(ctx: &mut NodeCtx<'_>, s: Soft) -> Out {
    ctx.only_attrs(&["axis"])?;
    let x = ctx.input(0)?;
    let rank = ctx.input_rank(0)?;
    let old = ctx.opset < 13;
    let axis = norm_axis(ctx.attr_i("axis", if old { 1 } else { -1 })?, rank, "axis")?;
    if !old || axis + 1 == rank || rank == 0 {
        return one(soft_along(ctx, s, x, axis)?);
    }
    // Opsets < 13: the input is coerced to 2-D [d0*..*d(axis-1), d(axis)*..*d(n-1)].
    let flat = if axis == 0 {
        let shape = ctx.const_i64(&[1, -1], &[2])?;
        ctx.op1("Reshape", &[x, shape], vec![])?
    } else {
        ctx.op1("Flatten", &[x], vec![("axis", AttrValue::Int(axis as i64))])?
    };
    let y = soft_along(ctx, s, flat, 1)?;
    let shape = ctx.op1("Shape", &[x], vec![("dtype", AttrValue::Int(9))])?;
    one(ctx.op1("Reshape", &[y, shape], vec![])?)
}

// Clip.

/// Absent bounds are the dtype's lowest/highest value (infinities for floats: an infinite
/// input stays infinite); opsets < 11 default to float's finite limits, as ONNX's Clip-6 does.
fn clip(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.only_attrs(&["min", "max", "consumed_inputs"])?;
    let x = ctx.input(0)?;
    let dt = ctx.in_dtype(0)?;
    let bound = |ctx: &mut NodeCtx<'_>, i: usize, hi: bool| -> Result<OutPort> {
        if let Some(p) = ctx.opt_input(i)? {
            return Ok(p);
        }
        if ctx.opset < 11 && dt.is_float() {
            let v = if hi { f32::MAX } else { f32::MIN };
            return ctx.scalar(dt, v as f64);
        }
        extreme(ctx, dt, hi)
    };
    let lo = bound(ctx, 1, false)?;
    let hi = bound(ctx, 2, true)?;
    if ctx.accepts("ClipByValue", dt)? {
        return one(ctx.op1("ClipByValue", &[x, lo, hi], vec![])?);
    }
    let w = match widen(dt) {
        Some(w) if dt != DataType::UINT64 => w,
        _ => return Err(unsupported(ctx, format_args!("inputs of dtype {dt}"))),
    };
    let (x2, lo2, hi2) = (ctx.cast(x, w)?, ctx.cast(lo, w)?, ctx.cast(hi, w)?);
    let y = ctx.op1("ClipByValue", &[x2, lo2, hi2], vec![])?;
    one(ctx.cast(y, dt)?)
}

// Element-wise logic and activations.

/// a xor b = not(a == b) on bool.
fn xor(ctx: &mut NodeCtx<'_>) -> Out {
    check_legacy_broadcast(ctx)?;
    let (a, b) = (ctx.input(0)?, ctx.input(1)?);
    let e = ctx.bin("Equal", a, b)?;
    one(ctx.un("LogicalNot", e)?)
}

fn is_inf(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.only_attrs(&["detect_negative", "detect_positive"])?;
    let neg = ctx.attr_i("detect_negative", 1)? != 0;
    let pos = ctx.attr_i("detect_positive", 1)? != 0;
    let x = ctx.input(0)?;
    let dt = ctx.in_dtype(0)?;
    let mut y = ctx.un("IsInf", x)?;
    if !neg || !pos {
        let zero = ctx.scalar(dt, 0.0)?;
        if !neg {
            let p = ctx.bin("Greater", x, zero)?;
            y = ctx.bin("LogicalAnd", y, p)?;
        }
        if !pos {
            let n = ctx.bin("Less", x, zero)?;
            y = ctx.bin("LogicalAnd", y, n)?;
        }
    }
    one(y)
}

fn elu(ctx: &mut NodeCtx<'_>, x: OutPort, alpha: f32, scale: f32, input_scale: f32) -> Out {
    one(ctx.op1(
        "Elu",
        &[x],
        vec![
            ("alpha", AttrValue::Float(alpha)),
            ("scale", AttrValue::Float(scale)),
            ("input_scale", AttrValue::Float(input_scale)),
        ],
    )?)
}

/// Selu(x) = gamma * (x > 0 ? x : alpha * (exp(x) - 1)) = Elu(alpha, scale=gamma), with the
/// attributes' own (float) values.
fn selu(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.only_attrs(&["alpha", "gamma", "consumed_inputs"])?;
    let alpha = ctx.attr_f("alpha", 1.673_263_2)?;
    let gamma = ctx.attr_f("gamma", 1.050_701)?;
    let x = ctx.input(0)?;
    elu(ctx, x, alpha, gamma, 1.0)
}

/// Celu(x; a) = max(0, x) + min(0, a * (exp(x / a) - 1)) = Elu(alpha=a, input_scale=1/a).
fn celu(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.only_attrs(&["alpha"])?;
    let alpha = ctx.attr_f("alpha", 1.0)?;
    if alpha == 0.0 {
        return Err(Error::tr("Celu: alpha must not be 0"));
    }
    let x = ctx.input(0)?;
    elu(ctx, x, alpha, 1.0, 1.0 / alpha)
}

/// approximate="none": 0.5 x (1 + erf(x / sqrt 2)); "tanh": GE's Gelu (the tanh form), or the
/// formula for dtypes it does not take.
fn gelu(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.only_attrs(&["approximate"])?;
    let approx = ctx.attr_s("approximate", "none")?;
    let x = ctx.input(0)?;
    let dt = ctx.in_dtype(0)?;
    let inner = match approx.as_str() {
        "none" => {
            let c = ctx.scalar(dt, std::f64::consts::FRAC_1_SQRT_2)?;
            let u = ctx.bin("Mul", x, c)?;
            ctx.un("Erf", u)?
        }
        "tanh" => {
            if ctx.accepts("Gelu", dt)? {
                return one(ctx.un("Gelu", x)?);
            }
            // tanh(sqrt(2/pi) * (x + 0.044715 x^3))
            let x2 = ctx.bin("Mul", x, x)?;
            let x3 = ctx.bin("Mul", x2, x)?;
            let k = ctx.scalar(dt, 0.044715)?;
            let t = ctx.bin("Mul", x3, k)?;
            let s = ctx.bin("Add", x, t)?;
            let c = ctx.scalar(dt, (2.0 / std::f64::consts::PI).sqrt())?;
            let u = ctx.bin("Mul", s, c)?;
            ctx.un("Tanh", u)?
        }
        other => {
            return Err(Error::tr(format!(
                "Gelu: approximate must be 'none' or 'tanh', got '{other}'"
            )))
        }
    };
    let one_ = ctx.scalar(dt, 1.0)?;
    let half = ctx.scalar(dt, 0.5)?;
    let p = ctx.bin("Add", inner, one_)?;
    let hx = ctx.bin("Mul", x, half)?;
    one(ctx.bin("Mul", hx, p)?)
}

/// x < -lambd: x + bias; x > lambd: x - bias; else 0.
fn shrink(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.only_attrs(&["bias", "lambd"])?;
    let bias = ctx.attr_f("bias", 0.0)? as f64;
    let lambd = ctx.attr_f("lambd", 0.5)? as f64;
    let x = ctx.input(0)?;
    let dt = ctx.in_dtype(0)?;
    let (lo, hi) = if dt.is_float() {
        (-lambd, lambd)
    } else if dt.is_integer() && !is_unsigned(dt) && bias.fract() == 0.0 && lambd >= 0.0 {
        // Integers: x > l <=> x > floor(l) and x < -l <=> x < -floor(l) for l >= 0.
        (-lambd.floor(), lambd.floor())
    } else {
        return Err(unsupported(
            ctx,
            format_args!("dtype {dt} with bias {bias} and lambd {lambd}"),
        ));
    };
    let (lo, hi) = (ctx.scalar(dt, lo)?, ctx.scalar(dt, hi)?);
    let b = ctx.scalar(dt, bias)?;
    let zero = ctx.scalar(dt, 0.0)?;
    let below = ctx.bin("Less", x, lo)?;
    let above = ctx.bin("Greater", x, hi)?;
    let xp = ctx.bin("Add", x, b)?;
    let xm = ctx.bin("Sub", x, b)?;
    let inner = ctx.op1("SelectV2", &[above, xm, zero], vec![])?;
    one(ctx.op1("SelectV2", &[below, xp, inner], vec![])?)
}

/// x > alpha ? x : 0.
fn thresholded_relu(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.only_attrs(&["alpha"])?;
    let alpha = ctx.attr_f("alpha", 1.0)? as f64;
    let x = ctx.input(0)?;
    let dt = ctx.in_dtype(0)?;
    let a = ctx.scalar(dt, alpha)?;
    let zero = ctx.scalar(dt, 0.0)?;
    let c = ctx.bin("Greater", x, a)?;
    one(ctx.op1("SelectV2", &[c, x, zero], vec![])?)
}

/// x * HardSigmoid(x; alpha=1/6, beta=0.5) (clip(x/6 + 0.5, 0, 1) for dtypes HardSigmoid
/// does not take).
fn hard_swish(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.only_attrs(&[])?;
    let x = ctx.input(0)?;
    let dt = ctx.in_dtype(0)?;
    let hs = if ctx.accepts("HardSigmoid", dt)? && dt.is_float() {
        ctx.op1(
            "HardSigmoid",
            &[x],
            vec![
                ("alpha", AttrValue::Float(1.0 / 6.0)),
                ("beta", AttrValue::Float(0.5)),
            ],
        )?
    } else {
        let a = ctx.scalar(dt, 1.0 / 6.0)?;
        let b = ctx.scalar(dt, 0.5)?;
        let t = ctx.bin("Mul", x, a)?;
        let t = ctx.bin("Add", t, b)?;
        let lo = ctx.scalar(dt, 0.0)?;
        let hi = ctx.scalar(dt, 1.0)?;
        ctx.op1("ClipByValue", &[t, lo, hi], vec![])?
    };
    one(ctx.bin("Mul", x, hs)?)
}

/// x < 0 ? x * slope : x (slope broadcasts onto x; before opset 7 a 1-D slope is per channel).
fn prelu(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.only_attrs(&["consumed_inputs"])?;
    let (x, slope) = (ctx.input(0)?, ctx.input(1)?);
    let dt = ctx.in_dtype(0)?;
    if is_unsigned(dt) {
        return one(ctx.un("Identity", x)?);
    }
    // Opsets < 7: a 1-D slope of C values is per channel (dim 1), not numpy-broadcast.
    let mut slope = slope;
    if ctx.opset < 7 {
        let (rx, rs) = (ctx.input_rank(0)?, ctx.input_rank(1)?);
        if rs == 1 && rx > 2 {
            let mut shape = vec![-1i64];
            shape.resize(rx - 1, 1);
            let sc = ctx.const_i64(&shape, &[shape.len() as i64])?;
            slope = ctx.op1("Reshape", &[slope, sc], vec![])?;
        }
    }
    let zero = ctx.scalar(dt, 0.0)?;
    let neg = ctx.bin("Less", x, zero)?;
    let m = ctx.bin("Mul", x, slope)?;
    one(ctx.op1("SelectV2", &[neg, m, x], vec![])?)
}

/// Round halves to even, as ONNX.
fn round(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.only_attrs(&[])?;
    let x = ctx.input(0)?;
    one(ctx.un("Round", x)?)
}

fn bit_shift(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.only_attrs(&["direction"])?;
    let op = match ctx.attr_s("direction", "")?.as_str() {
        "LEFT" => "LeftShift",
        "RIGHT" => "RightShift",
        other => {
            return Err(Error::tr(format!(
                "BitShift: direction must be LEFT or RIGHT, got '{other}'"
            )))
        }
    };
    let (a, b) = (ctx.input(0)?, ctx.input(1)?);
    one(ctx.bin(op, a, b)?)
}

/// Same-width reinterpretation (ONNX requires equal bit widths).
fn bit_cast(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.only_attrs(&["to"])?;
    let to = ctx.attr_i("to", -1)?;
    if to < 0 {
        return Err(Error::tr("BitCast needs the attribute 'to'"));
    }
    let to = crate::types::dtype_from_onnx(to as i32).map_err(|e| e.context("attribute 'to'"))?;
    let x = ctx.input(0)?;
    let dt = ctx.in_dtype(0)?;
    match (dt.size(), to.size()) {
        (Some(a), Some(b)) if a == b => {}
        _ => {
            return Err(unsupported(
                ctx,
                format_args!("{dt} to {to} (the bit widths must be equal and whole bytes)"),
            ))
        }
    }
    if dt == to {
        return one(ctx.un("Identity", x)?);
    }
    one(ctx.op1(
        "Bitcast",
        &[x],
        vec![
            ("type", AttrValue::Type(to)),
            ("keep_dim", AttrValue::Bool(true)),
        ],
    )?)
}

/// GE's Einsum takes float16, float32 and int32; other dtypes are refused (a cast would not be
/// exact for every value).
fn einsum(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.only_attrs(&["equation"])?;
    let eq = ctx.attr_s("equation", "")?;
    if eq.is_empty() {
        return Err(Error::tr("Einsum needs the attribute 'equation'"));
    }
    let mut xs = Vec::new();
    for i in 0..ctx.num_inputs() {
        xs.push(Some(ctx.input(i)?));
    }
    let dt = ctx.in_dtype(0)?;
    if !ctx.accepts("Einsum", dt)? && ctx.accepts("Mul", dt)? && ctx.accepts("ReduceSum", dt)? {
        let ports: Vec<OutPort> = xs.iter().flatten().copied().collect();
        return one(einsum_composite(ctx, &eq, &ports)?);
    }
    if !ctx.accepts("Einsum", dt)? {
        return Err(unsupported(
            ctx,
            format_args!(
                "inputs of dtype {dt} (GE's Einsum takes float16, float32 and int32; a cast \
                 would not be exact for every value)"
            ),
        ));
    }
    let n = xs.len() as i64;
    let outs = ctx.op(
        "Einsum",
        vec![xs],
        vec![
            ("equation", AttrValue::String(eq)),
            ("N", AttrValue::Int(n)),
        ],
    )?;
    Ok(outs.into_iter().take(1).map(Some).collect())
}

/// Swish(A; alpha) * B.
fn swiglu(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.only_attrs(&["alpha"])?;
    let alpha = ctx.attr_f("alpha", 1.0)?;
    let (a, b) = (ctx.input(0)?, ctx.input(1)?);
    let dt = ctx.in_dtype(0)?;
    let s = if ctx.accepts("Swish", dt)? {
        ctx.op1("Swish", &[a], vec![("scale", AttrValue::Float(alpha))])?
    } else {
        let k = ctx.scalar(dt, alpha as f64)?;
        let t = ctx.bin("Mul", a, k)?;
        let sg = ctx.un("Sigmoid", t)?;
        ctx.bin("Mul", a, sg)?
    };
    one(ctx.bin("Mul", s, b)?)
}

/// ONNX's function body: (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9) over `axes`.
fn mvn(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.only_attrs(&["axes"])?;
    let x = ctx.input(0)?;
    let dt = ctx.in_dtype(0)?;
    let rank = ctx.input_rank(0)?;
    let axes = ctx.attr_ints("axes")?.unwrap_or_else(|| vec![0, 2, 3]);
    let axes: Vec<i64> = norm_axes(&axes, rank, "axes")?
        .into_iter()
        .map(|a| a as i64)
        .collect();
    let ax = Axes::List(axes);
    let mean = reduce_op(ctx, "ReduceMean", x, &ax, true)?;
    let mean2 = ctx.bin("Mul", mean, mean)?;
    let x2 = ctx.bin("Mul", x, x)?;
    let ex2 = reduce_op(ctx, "ReduceMean", x2, &ax, true)?;
    let var = ctx.bin("Sub", ex2, mean2)?;
    let std = ctx.un("Sqrt", var)?;
    let eps = ctx.scalar(dt, 1e-9)?;
    let den = ctx.bin("Add", std, eps)?;
    let num = ctx.bin("Sub", x, mean)?;
    one(ctx.bin("RealDiv", num, den)?)
}

/// x / ||x||_p along `axis` (p = 1: sum |x|, or 2).
fn lp_normalization(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.only_attrs(&["axis", "p"])?;
    let x = ctx.input(0)?;
    let rank = ctx.input_rank(0)?;
    let axis = norm_axis(ctx.attr_i("axis", -1)?, rank, "axis")?;
    let p = ctx.attr_i("p", 2)?;
    let ax = Axes::List(vec![axis as i64]);
    let norm = match p {
        1 => {
            let a = ctx.un("Abs", x)?;
            reduce_op(ctx, "ReduceSum", a, &ax, true)?
        }
        2 => {
            let sq = ctx.bin("Mul", x, x)?;
            let s = reduce_op(ctx, "ReduceSum", sq, &ax, true)?;
            ctx.un("Sqrt", s)?
        }
        _ => {
            return Err(Error::tr(format!(
                "LpNormalization: p must be 1 or 2, got {p}"
            )))
        }
    };
    // A zero norm gives 0 (not NaN), as ONNX's reference implementation.
    let dt = ctx.in_dtype(0)?;
    let zero = ctx.scalar(dt, 0.0)?;
    let is0 = ctx.bin("Equal", norm, zero)?;
    let q = ctx.bin("RealDiv", x, norm)?;
    one(ctx.op1("SelectV2", &[is0, zero, q], vec![])?)
}

/// X > threshold ? 1 : 0, in X's dtype.
fn binarizer(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.only_attrs(&["threshold"])?;
    let t = ctx.attr_f("threshold", 0.0)? as f64;
    let x = ctx.input(0)?;
    let dt = ctx.in_dtype(0)?;
    let th = ctx.scalar(dt, t)?;
    let g = ctx.bin("Greater", x, th)?;
    one(ctx.cast(g, dt)?)
}

/// X[..., indices] (indices flattened); a 1-D X gives [1, n].
fn array_feature_extractor(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.only_attrs(&[])?;
    let x = ctx.input(0)?;
    let idx = ctx.input(1)?;
    let rank = ctx.input_rank(0)?;
    if rank == 0 {
        return Err(Error::tr(
            "ArrayFeatureExtractor: X must have at least one dim",
        ));
    }
    let flat = ctx.const_i64(&[-1], &[1])?;
    let idx = ctx.op1("Reshape", &[idx, flat], vec![])?;
    let axis = ctx.const_i64(&[rank as i64 - 1], &[])?;
    let y = ctx.op1("GatherV2", &[x, idx, axis], vec![])?;
    if rank == 1 {
        let shape = ctx.const_i64(&[1, -1], &[2])?;
        return one(ctx.op1("Reshape", &[y, shape], vec![])?);
    }
    one(y)
}

// Windows.

#[derive(Clone, Copy, PartialEq, Eq)]
enum Win {
    Blackman,
    Hamming,
    Hann,
}

/// ONNX's definitions over n = 0..size in f64 (N = size, or size - 1 when not periodic), cast
/// to `output_datatype`.
fn window(ctx: &mut NodeCtx<'_>, w: Win) -> Out {
    ctx.only_attrs(&["output_datatype", "periodic"])?;
    let out = crate::types::dtype_from_onnx(ctx.attr_i("output_datatype", 1)? as i32)
        .map_err(|e| e.context("attribute 'output_datatype'"))?;
    let periodic = ctx.attr_i("periodic", 1)? != 0;
    let size = ctx.input(0)?;
    let size = ctx.cast(size, DataType::INT64)?;
    let scalar_shape = ctx.const_i64(&[], &[0])?;
    let size = ctx.op1("Reshape", &[size, scalar_shape], vec![])?;
    let (zero, one_) = (ctx.const_i64(&[0], &[])?, ctx.const_i64(&[1], &[])?);
    let n = ctx.op1("Range", &[zero, size, one_], vec![])?;
    let n = ctx.cast(n, DataType::DOUBLE)?;
    let mut den = ctx.cast(size, DataType::DOUBLE)?;
    if !periodic {
        let o = ctx.scalar(DataType::DOUBLE, 1.0)?;
        den = ctx.bin("Sub", den, o)?;
    }
    let pi = std::f64::consts::PI;
    // cos(k * pi * n / N)
    let cos_k = |ctx: &mut NodeCtx<'_>, k: f64| -> Result<OutPort> {
        let c = ctx.scalar(DataType::DOUBLE, k * pi)?;
        let t = ctx.bin("Mul", n, c)?;
        let t = ctx.bin("RealDiv", t, den)?;
        ctx.un("Cos", t)
    };
    let terms: &[(f64, f64)] = match w {
        Win::Blackman => &[(2.0, -0.5), (4.0, 0.08)],
        Win::Hamming => &[(2.0, -(1.0 - 25.0 / 46.0))],
        Win::Hann => &[(2.0, -0.5)],
    };
    let a0 = match w {
        Win::Blackman => 0.42,
        Win::Hamming => 25.0 / 46.0,
        Win::Hann => 0.5,
    };
    let mut y = ctx.scalar(DataType::DOUBLE, a0)?;
    for &(k, a) in terms {
        let c = cos_k(ctx, k)?;
        let a = ctx.scalar(DataType::DOUBLE, a)?;
        let t = ctx.bin("Mul", c, a)?;
        y = ctx.bin("Add", y, t)?;
    }
    one(ctx.cast(y, out)?)
}

// Random.

/// The `dtype` attribute (default: `x`'s dtype) and the seed.
fn random_setup(ctx: &NodeCtx<'_>) -> Result<(DataType, i64)> {
    let dt = if ctx.has_attr("dtype") {
        crate::types::dtype_from_onnx(ctx.attr_i("dtype", 1)? as i32)
            .map_err(|e| e.context("attribute 'dtype'"))?
    } else {
        ctx.in_dtype(0)?
    };
    let seed = if ctx.has_attr("seed") {
        ctx.attr_f("seed", 0.0)? as i64
    } else {
        0
    };
    Ok((dt, seed))
}

fn uniform(ctx: &mut NodeCtx<'_>, x: OutPort, dt: DataType, seed: i64) -> Result<OutPort> {
    let shape = ctx.op1("Shape", &[x], vec![("dtype", AttrValue::Int(9))])?;
    ctx.op1(
        "RandomUniform",
        &[shape],
        vec![
            ("dtype", AttrValue::Type(dt)),
            ("seed", AttrValue::Int(seed)),
            ("seed2", AttrValue::Int(0)),
        ],
    )
}

/// Cast(RandomUniform(shape(x)) < x, dtype).
fn bernoulli(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.only_attrs(&["dtype", "seed"])?;
    let (out, seed) = random_setup(ctx)?;
    let x = ctx.input(0)?;
    let dt = ctx.in_dtype(0)?;
    let u = uniform(ctx, x, dt, seed)?;
    let c = ctx.bin("Less", u, x)?;
    one(ctx.cast(c, out)?)
}

/// low + (high - low) * RandomUniform(shape(x)).
fn random_uniform_like(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.only_attrs(&["dtype", "seed", "high", "low"])?;
    let (dt, seed) = random_setup(ctx)?;
    if !dt.is_float() {
        return Err(unsupported(ctx, format_args!("output dtype {dt}")));
    }
    let high = ctx.attr_f("high", 1.0)? as f64;
    let low = ctx.attr_f("low", 0.0)? as f64;
    let x = ctx.input(0)?;
    let u = uniform(ctx, x, dt, seed)?;
    let s = ctx.scalar(dt, high - low)?;
    let l = ctx.scalar(dt, low)?;
    let t = ctx.bin("Mul", u, s)?;
    one(ctx.bin("Add", t, l)?)
}

// Einsum as products and sums.

/// The terms of `eq` (inputs, output) with `...` replaced by capital letters (ranks must be
/// known), and the output made explicit.
fn einsum_terms(
    ctx: &NodeCtx<'_>,
    eq: &str,
    ranks: &[usize],
) -> Result<(Vec<Vec<char>>, Vec<char>)> {
    let eq: String = eq.chars().filter(|c| !c.is_whitespace()).collect();
    let (lhs, rhs) = match eq.split_once("->") {
        Some((l, r)) => (l.to_string(), Some(r.to_string())),
        None => (eq.clone(), None),
    };
    let ins: Vec<&str> = lhs.split(',').collect();
    if ins.len() != ranks.len() {
        return Err(Error::tr(format!(
            "Einsum: the equation has {} operands, the node {}",
            ins.len(),
            ranks.len()
        )));
    }
    let mut ell = 0usize;
    for (t, &r) in ins.iter().zip(ranks) {
        if t.contains("...") {
            let named = t.replace("...", "").chars().count();
            ell = ell.max(r.checked_sub(named).ok_or_else(|| {
                Error::tr(format!("Einsum: term '{t}' has more letters than rank {r}"))
            })?);
        }
    }
    if ell > 26 {
        return Err(unsupported(ctx, "more than 26 ellipsis dims"));
    }
    let caps: Vec<char> = ('A'..='Z').take(ell).collect();
    let expand = |t: &str, r: Option<usize>| -> Result<Vec<char>> {
        let mut out = Vec::new();
        let parts: Vec<&str> = t.split("...").collect();
        if parts.len() > 2 {
            return Err(Error::tr(format!("Einsum: term '{t}' has two ellipses")));
        }
        for c in parts[0].chars() {
            if !c.is_ascii_lowercase() && !c.is_ascii_uppercase() {
                return Err(Error::tr(format!("Einsum: bad character '{c}' in '{t}'")));
            }
            out.push(c);
        }
        if parts.len() == 2 {
            let named = parts[0].chars().count() + parts[1].chars().count();
            let k = match r {
                Some(r) => r - named,
                None => ell,
            };
            out.extend_from_slice(&caps[ell - k..]);
            for c in parts[1].chars() {
                if !c.is_ascii_lowercase() && !c.is_ascii_uppercase() {
                    return Err(Error::tr(format!("Einsum: bad character '{c}' in '{t}'")));
                }
                out.push(c);
            }
        }
        Ok(out)
    };
    let mut terms = Vec::new();
    for (t, &r) in ins.iter().zip(ranks) {
        let e = expand(t, Some(r))?;
        if e.len() != r {
            return Err(Error::tr(format!(
                "Einsum: term '{t}' does not match rank {r}"
            )));
        }
        if ell > 0
            && e.iter()
                .any(|c| c.is_ascii_uppercase() && !caps.contains(c))
        {
            return Err(unsupported(
                ctx,
                "capital letters together with an ellipsis",
            ));
        }
        terms.push(e);
    }
    let out = match rhs {
        Some(r) => expand(&r, None)?,
        None => {
            let mut counts: std::collections::BTreeMap<char, usize> = Default::default();
            for t in &terms {
                for &c in t {
                    if !caps.contains(&c) {
                        *counts.entry(c).or_default() += 1;
                    }
                }
            }
            let mut o = caps.clone();
            o.extend(counts.into_iter().filter(|e| e.1 == 1).map(|e| e.0));
            o
        }
    };
    Ok((terms, out))
}

/// Einsum for dtypes GE's Einsum does not take: diagonals by masking, then every operand
/// transposed and unsqueezed onto one letter order, multiplied (broadcasting), the letters
/// not in the output summed, and the rest transposed into the output order. Exact products;
/// the sums' order may differ from other implementations.
fn einsum_composite(ctx: &mut NodeCtx<'_>, eq: &str, xs: &[OutPort]) -> Result<OutPort> {
    let mut ranks = Vec::new();
    for &x in xs {
        ranks.push(
            ctx.desc(x)?
                .shape
                .rank()
                .ok_or_else(|| unsupported(ctx, "inputs of unknown rank"))?,
        );
    }
    let (terms, out) = einsum_terms(ctx, eq, &ranks)?;
    let mut order: Vec<char> = Vec::new();
    for t in &terms {
        for &c in t {
            if !order.contains(&c) {
                order.push(c);
            }
        }
    }
    for c in &out {
        if !order.contains(c) {
            return Err(Error::tr(format!(
                "Einsum: output letter '{c}' is in no input"
            )));
        }
    }
    let mut acc: Option<OutPort> = None;
    for (&x0, t0) in xs.iter().zip(&terms) {
        let mut x = x0;
        let mut t = t0.clone();
        // Diagonals: a letter at positions p < q keeps x where index p == index q, summed
        // over q.
        while let Some((p, q)) =
            (0..t.len()).find_map(|p| ((p + 1)..t.len()).find(|&q| t[q] == t[p]).map(|q| (p, q)))
        {
            let n = ctx.static_dim(x, p)?.ok_or_else(|| {
                unsupported(ctx, "a repeated letter over a dim unknown at import")
            })?;
            let mut shape = vec![1i64; t.len()];
            shape[p] = n;
            shape[q] = n;
            let nn = (n * n) as usize;
            let mask: Vec<bool> = (0..nn).map(|k| k / n as usize == k % n as usize).collect();
            let m = ctx.constant(Tensor::from_values(&mask, shape)?)?;
            let dt = ctx.port_dtype(x)?;
            let zero = ctx.scalar(dt, 0.0)?;
            let sel = ctx.op1("SelectV2", &[m, x, zero], vec![])?;
            x = reduce_op(ctx, "ReduceSum", sel, &Axes::List(vec![q as i64]), false)?;
            t.remove(q);
        }
        // Transpose into `order`'s relative order, then unsqueeze the missing letters.
        let mut perm: Vec<usize> = (0..t.len()).collect();
        perm.sort_by_key(|&i| order.iter().position(|c| *c == t[i]));
        if perm.iter().enumerate().any(|(i, &p)| i != p) {
            let pv: Vec<i64> = perm.iter().map(|&p| p as i64).collect();
            let pc = ctx.const_i64(&pv, &[pv.len() as i64])?;
            x = ctx.op1("Transpose", &[x, pc], vec![])?;
        }
        let missing: Vec<i64> = order
            .iter()
            .enumerate()
            .filter(|(_, c)| !t.contains(c))
            .map(|(i, _)| i as i64)
            .collect();
        if !missing.is_empty() {
            x = ctx.op1(
                "Unsqueeze",
                &[x],
                vec![("axes", AttrValue::ListInt(missing))],
            )?;
        }
        acc = Some(match acc {
            None => x,
            Some(a) => ctx.bin("Mul", a, x)?,
        });
    }
    let mut y = acc.ok_or_else(|| Error::tr("Einsum needs at least one input"))?;
    let summed: Vec<i64> = order
        .iter()
        .enumerate()
        .filter(|(_, c)| !out.contains(c))
        .map(|(i, _)| i as i64)
        .collect();
    let kept: Vec<char> = order.iter().copied().filter(|c| out.contains(c)).collect();
    if !summed.is_empty() {
        y = reduce_op(ctx, "ReduceSum", y, &Axes::List(summed), false)?;
    }
    let perm: Vec<i64> = out
        .iter()
        .map(|c| kept.iter().position(|k| k == c).map(|p| p as i64))
        .collect::<Option<_>>()
        .ok_or_else(|| Error::tr("Einsum: an output letter repeats"))?;
    if perm.len() != kept.len() {
        return Err(Error::tr("Einsum: an output letter repeats"));
    }
    if perm.iter().enumerate().any(|(i, &p)| i as i64 != p) {
        let pc = ctx.const_i64(&perm, &[perm.len() as i64])?;
        y = ctx.op1("Transpose", &[y, pc], vec![])?;
    }
    Ok(y)
}

// MelWeightMatrix.

/// Folded into a Const at import (its shape depends on the input values, which must be
/// constants), computed as ONNX's reference implementation does.
fn mel_weight_matrix(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.only_attrs(&["output_datatype"])?;
    let out = crate::types::dtype_from_onnx(ctx.attr_i("output_datatype", 1)? as i32)
        .map_err(|e| e.context("attribute 'output_datatype'"))?;
    let scalar = |ctx: &NodeCtx<'_>, i: usize, what: &str| -> Result<f64> {
        let v = ctx
            .const_floats(i, what)?
            .ok_or_else(|| Error::tr(format!("MelWeightMatrix: input {i} ({what}) is required")))?;
        match v.as_slice() {
            [x] => Ok(*x),
            _ => Err(Error::tr(format!(
                "MelWeightMatrix: input {i} ({what}) must hold one value"
            ))),
        }
    };
    let bins = scalar(ctx, 0, "num_mel_bins")?;
    let dft = scalar(ctx, 1, "dft_length")?;
    let rate = scalar(ctx, 2, "sample_rate")?;
    let lo = scalar(ctx, 3, "lower_edge_hertz")?;
    let hi = scalar(ctx, 4, "upper_edge_hertz")?;
    if bins < 1.0 || dft < 1.0 || rate <= 0.0 || bins > 1e6 || dft > 1e8 {
        return Err(Error::tr(format!(
            "MelWeightMatrix: num_mel_bins {bins}, dft_length {dft} and sample_rate {rate} \
             must be positive (and reasonable)"
        )));
    }
    let (nb, nd) = (bins as i64, dft as i64);
    let spec = nd / 2 + 1;
    if spec.saturating_mul(nb) > 1 << 26 {
        return Err(unsupported(ctx, "a matrix of more than 2^26 elements"));
    }
    let ln10 = std::f64::consts::LN_10;
    let low_mel = 2595.0 * (lo / 700.0).ln_1p() / ln10;
    let high_mel = 2595.0 * (hi / 700.0).ln_1p() / ln10;
    let step = (high_mel - low_mel) / (nb + 2) as f64;
    let edges: Vec<i64> = (0..nb + 2)
        .map(|k| {
            let mel = k as f64 * step + low_mel;
            let hz = 700.0 * (mel / 2595.0 * ln10).exp_m1();
            (((nd + 1) as f64 * hz) / rate).floor() as i64
        })
        .collect();
    super::util::const_elems(&[spec, nb], "MelWeightMatrix")?;
    let (rows, cols) = (spec as usize, nb as usize);
    let mut m = vec![0f64; rows * cols];
    let mut set = |j: i64, i: usize, v: f64| -> Result<()> {
        if !(0..spec).contains(&j) {
            return Err(Error::tr(format!(
                "MelWeightMatrix: bin {j} is outside the {spec} spectrogram bins"
            )));
        }
        m[j as usize * cols + i] = v;
        Ok(())
    };
    for i in 0..cols {
        let (l, c, h) = (edges[i], edges[i + 1], edges[i + 2]);
        if c == l {
            set(c, i, 1.0)?;
        } else {
            for j in l..=c {
                set(j, i, (j - l) as f64 / (c - l) as f64)?;
            }
        }
        if h > c {
            for j in c..h {
                set(j, i, (h - j) as f64 / (h - c) as f64)?;
            }
        }
    }
    let t = es_core::types::tensor_from_f64(out, vec![spec, nb], &m)?;
    one(ctx.constant(t)?)
}

// DFT.

/// A product with a constant matrix along `axis`: the input [..., N, c_in] (axis moved next to
/// the last) flattened to [B, N * c_in] times W [N * c_in, K * c_out], whose entries are the
/// DFT's cos/sin terms (angles reduced mod the length, in f64): forward (onesided keeps
/// L/2 + 1 bins), inverse (1/L, conjugate), and inverse onesided (numpy's irfft: the Hermitian
/// extension, a real output). The input's shape and dft_length/axis must be known at import.
fn dft(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.only_attrs(&["axis", "inverse", "onesided"])?;
    let inverse = ctx.attr_i("inverse", 0)? != 0;
    let onesided = ctx.attr_i("onesided", 0)? != 0;
    let x = ctx.input(0)?;
    let d = ctx.input_desc(0)?;
    let dt = ctx.in_dtype(0)?;
    let dims = d.shape.dims().to_vec();
    if d.shape.rank().is_none() || !d.shape.is_static() {
        return Err(unsupported(
            ctx,
            "the input's shape must be known at import",
        ));
    }
    let r = dims.len();
    if r < 2 {
        return Err(Error::tr(
            "DFT: the input needs a signal dim and a component dim",
        ));
    }
    let axis = if ctx.opset >= 20 {
        match ctx.const_ints(2, "axis")? {
            Some(v) if v.len() == 1 => v[0],
            Some(_) => return Err(Error::tr("DFT: axis must be a scalar")),
            None => -2,
        }
    } else {
        if ctx.has_input(2) {
            return Err(Error::tr("DFT: axis is an attribute before opset 20"));
        }
        ctx.attr_i("axis", 1)?
    };
    let a = norm_axis(axis, r, "DFT axis")?;
    if a == r - 1 {
        return Err(Error::tr("DFT: axis must not be the last (component) dim"));
    }
    let c_in = dims[r - 1] as usize;
    if c_in != 1 && c_in != 2 {
        return Err(Error::tr(format!(
            "DFT: the last dim must be 1 (real) or 2 (complex), got {c_in}"
        )));
    }
    let n = dims[a];
    let len = match ctx.const_ints(1, "dft_length")? {
        Some(v) if v.len() == 1 => v[0],
        Some(_) => return Err(Error::tr("DFT: dft_length must be a scalar")),
        None if inverse && onesided => 2 * (n - 1),
        None => n,
    };
    if len < 1 {
        return Err(Error::tr(format!("DFT: dft_length {len} must be positive")));
    }
    let half = len / 2 + 1;
    let (k_out, c_out) = match (inverse, onesided) {
        (false, true) => (half, 2),
        (true, true) => (len, 1),
        _ => (len, 2),
    };
    let rows = n as usize * c_in;
    let cols = k_out as usize * c_out;
    if rows.saturating_mul(cols) > 1 << 26 {
        return Err(unsupported(ctx, "a DFT matrix of more than 2^26 elements"));
    }
    // W[row(i, comp_in), col(j, comp_out)].
    let mut w = vec![0f64; rows * cols];
    let lf = len as f64;
    let angle = |p: i64, q: i64| 2.0 * std::f64::consts::PI * ((p * q) % len) as f64 / lf;
    for i in 0..n {
        for j in 0..k_out {
            let base_r = i as usize * c_in;
            let base_c = j as usize * c_out;
            let mut put = |ci: usize, co: usize, v: f64| {
                if ci < c_in {
                    w[(base_r + ci) * cols + base_c + co] = v;
                }
            };
            if !inverse {
                // Input sample i, output bin j: re += xr cos + xi sin, im += xi cos - xr sin.
                if i >= len {
                    continue;
                }
                let t = angle(i, j);
                let (c, s) = (t.cos(), t.sin());
                put(0, 0, c);
                put(1, 0, s);
                put(0, 1, -s);
                put(1, 1, c);
            } else if !onesided {
                // Input bin i, output sample j: (Xr cos - Xi sin, Xi cos + Xr sin) / L.
                if i >= len {
                    continue;
                }
                let t = angle(i, j);
                let (c, s) = (t.cos() / lf, t.sin() / lf);
                put(0, 0, c);
                put(1, 0, -s);
                put(0, 1, s);
                put(1, 1, c);
            } else {
                // irfft: bins 0..=L/2 with Hermitian weights, real output.
                if i >= half {
                    continue;
                }
                let wgt = if i == 0 || (len % 2 == 0 && i == len / 2) {
                    1.0
                } else {
                    2.0
                };
                let t = angle(i, j);
                put(0, 0, wgt * t.cos() / lf);
                if i != 0 && !(len % 2 == 0 && i == len / 2) {
                    put(1, 0, -wgt * t.sin() / lf);
                }
            }
        }
    }
    // Move the axis next to the component dim, flatten, multiply, restore.
    let mut perm: Vec<usize> = (0..r - 1).filter(|&i| i != a).collect();
    perm.push(a);
    perm.push(r - 1);
    let moved = perm.iter().enumerate().any(|(i, &p)| i != p);
    let mut xt = x;
    if moved {
        let pv: Vec<i64> = perm.iter().map(|&p| p as i64).collect();
        let pc = ctx.const_i64(&pv, &[r as i64])?;
        xt = ctx.op1("Transpose", &[x, pc], vec![])?;
    }
    let flat = ctx.const_i64(&[-1, rows as i64], &[2])?;
    let x2 = ctx.op1("Reshape", &[xt, flat], vec![])?;
    let y = if ctx.accepts("BatchMatMulV2", dt)? && dt.is_float() {
        let wt = es_core::types::tensor_from_f64(dt, vec![rows as i64, cols as i64], &w)?;
        let wc = ctx.constant(wt)?;
        ctx.op1("BatchMatMulV2", &[x2, wc], vec![])?
    } else if dt == DataType::DOUBLE {
        // sum over rows of x[:, :, None] * W
        let wt = es_core::types::tensor_from_f64(dt, vec![rows as i64, cols as i64], &w)?;
        let wc = ctx.constant(wt)?;
        let x3 = ctx.op1(
            "Unsqueeze",
            &[x2],
            vec![("axes", AttrValue::ListInt(vec![2]))],
        )?;
        let p = ctx.bin("Mul", x3, wc)?;
        reduce_op(ctx, "ReduceSum", p, &Axes::List(vec![1]), false)?
    } else {
        return Err(unsupported(ctx, format_args!("inputs of dtype {dt}")));
    };
    let mut out_dims: Vec<i64> = perm[..r - 2].iter().map(|&p| dims[p]).collect();
    out_dims.push(k_out);
    out_dims.push(c_out as i64);
    let sc = ctx.const_i64(&out_dims, &[r as i64])?;
    let mut y = ctx.op1("Reshape", &[y, sc], vec![])?;
    if moved {
        // Inverse permutation.
        let mut inv = vec![0i64; r];
        for (i, &p) in perm.iter().enumerate() {
            inv[p] = i as i64;
        }
        let pc = ctx.const_i64(&inv, &[r as i64])?;
        y = ctx.op1("Transpose", &[y, pc], vec![])?;
    }
    one(y)
}
