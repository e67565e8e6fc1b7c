//! Element-wise operators: arithmetic, comparisons, logic, bit operations, activations, casts.
//!
//! Dtype gaps of GE's prototypes are bridged by Casts only where the result is bit-exact:
//! unsigned integers go through a signed type at least as wide (add, sub and mul wrap the same
//! way; comparisons of uint64 bias both sides by 2^63 so signed order is unsigned order);
//! anything else is refused with a message.

use super::util::*;
use crate::error::{Error, Result};
use crate::translate::{NodeCtx, Registry};
use es_core::{AttrValue, DataType, OutPort, Tensor};

/// The family's translators.
pub(super) const TABLE: &[(&str, Translator)] = &[
    ("Mod", modulo),
    ("Pow", pow),
    ("Clip", clip),
    ("Xor", xor),
    ("IsInf", is_inf),
    ("Selu", selu),
    ("Celu", celu),
    ("Gelu", gelu),
    ("Shrink", shrink),
    ("ThresholdedRelu", thresholded_relu),
    ("HardSwish", hard_swish),
    ("PRelu", prelu),
    ("Round", round),
    ("BitShift", bit_shift),
    ("BitCast", bit_cast),
    ("SwiGLU", swiglu),
    ("ai.onnx.ml::Binarizer", binarizer),
    ("Dropout", dropout),
    ("Cast", cast),
    ("CastLike", cast_like),
    ("Identity", identity),
];

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

variants!(Bin {
    Add,
    Sub,
    Mul,
    Div,
    Equal,
    Greater,
    Less,
    GreaterOrEqual,
    LessOrEqual
});

impl Bin {
    fn ge_op(self, dt: DataType) -> &'static str {
        match self {
            Bin::Add => "Add",
            Bin::Sub => "Sub",
            Bin::Mul => "Mul",
            Bin::Div if dt.is_integer() => "Div",
            Bin::Div => "RealDiv",
            Bin::Equal => "Equal",
            Bin::Greater => "Greater",
            Bin::Less => "Less",
            Bin::GreaterOrEqual => "GreaterEqual",
            Bin::LessOrEqual => "LessEqual",
        }
    }
    fn is_order(self) -> bool {
        matches!(
            self,
            Bin::Greater | Bin::Less | Bin::GreaterOrEqual | Bin::LessOrEqual
        )
    }
}

/// Opset < 7 `broadcast`/`axis`: numpy broadcasting is the same when B's dims align with the
/// end of A's (no `axis`, or `axis` = rank(A) - rank(B)).
fn check_legacy_broadcast(ctx: &NodeCtx<'_>) -> Result<()> {
    ctx.known_attrs(&["broadcast", "axis", "consumed_inputs"])?;
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
        return one(udiv64(ctx, a, b)?.0);
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

/// Quotient and remainder of uint64 `a` / `b`, bit-exact through int64 ops (Hacker's Delight
/// 9-3): a divisor of 2^63 or more gives a quotient of 0 or 1; a smaller one divides a / 2
/// (logical shift, so non-negative), doubles the quotient and corrects it by one.
fn udiv64(ctx: &mut NodeCtx<'_>, a: OutPort, b: OutPort) -> Result<(OutPort, OutPort)> {
    let i64t = DataType::INT64;
    let one_u = ctx.constant(Tensor::scalar(1u64))?;
    let ah = ctx.bin("RightShift", a, one_u)?;
    let ah = ctx.cast(ah, i64t)?;
    let (a, b) = (ctx.cast(a, i64t)?, ctx.cast(b, i64t)?);
    let bias = ctx.constant(Tensor::scalar(i64::MIN))?;
    let (one, zero) = (ctx.const_i64(&[1], &[])?, ctx.const_i64(&[0], &[])?);
    // x >= y as unsigned, as int64 0/1.
    let uge = |ctx: &mut NodeCtx<'_>, x: OutPort, y: OutPort| -> Result<OutPort> {
        let x = ctx.bin("Add", x, bias)?;
        let y = ctx.bin("Add", y, bias)?;
        let c = ctx.bin("GreaterEqual", x, y)?;
        ctx.cast(c, i64t)
    };
    let q = ctx.bin("Div", ah, b)?;
    let q = ctx.bin("LeftShift", q, one)?;
    let qb = ctx.bin("Mul", q, b)?;
    let r = ctx.bin("Sub", a, qb)?;
    let fix = uge(ctx, r, b)?;
    let q_small = ctx.bin("Add", q, fix)?;
    let big = ctx.bin("Less", b, zero)?;
    let q_big = uge(ctx, a, b)?;
    let q = ctx.op1("SelectV2", &[big, q_big, q_small], vec![])?;
    let qb = ctx.bin("Mul", q, b)?;
    let r = ctx.bin("Sub", a, qb)?;
    Ok((
        ctx.cast(q, DataType::UINT64)?,
        ctx.cast(r, DataType::UINT64)?,
    ))
}

/// fmod=0: FloorMod (the divisor's sign, as numpy's mod); fmod=1: Mod (truncated, C's fmod).
fn modulo(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["fmod"])?;
    let fmod = ctx.attr_i("fmod", 0)?;
    let (a, b) = (ctx.input(0)?, ctx.input(1)?);
    let dt = ctx.in_dtype(0)?;
    let name = if fmod != 0 { "Mod" } else { "FloorMod" };
    if ctx.accepts(name, dt)? {
        return one(ctx.bin(name, a, b)?);
    }
    if dt == DataType::UINT64 {
        // Unsigned: floored and truncated remainders agree.
        return one(udiv64(ctx, a, b)?.1);
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
    ctx.known_attrs(&["broadcast", "axis"])?;
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

variants!(Var {
    Max,
    Min,
    Sum,
    Mean
});

/// Registers the translators of the variants of [`Bin`] and [`Var`].
pub(super) fn register_variant_ops(r: &mut Registry) {
    // Binary arithmetic and comparisons with the unsigned-dtype bridges, and the variadic
    // ones: the ONNX name is the variant's name.
    register_variants(r, Bin::ALL, |v| format!("{v:?}"), binary);
    register_variants(r, Var::ALL, |v| format!("{v:?}"), variadic);
}

fn variadic(ctx: &mut NodeCtx<'_>, v: Var) -> Out {
    ctx.known_attrs(&["consumed_inputs"])?;
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

// Clip.

/// Absent bounds are the dtype's lowest/highest value (infinities for floats: an infinite
/// input stays infinite); opsets < 11 default to float's finite limits, as ONNX's Clip-6 does.
fn clip(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["min", "max", "consumed_inputs"])?;
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
    ctx.known_attrs(&["detect_negative", "detect_positive"])?;
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
    ctx.known_attrs(&["alpha", "gamma", "consumed_inputs"])?;
    let alpha = ctx.attr_f("alpha", 1.673_263_2)?;
    let gamma = ctx.attr_f("gamma", 1.050_701)?;
    let x = ctx.input(0)?;
    elu(ctx, x, alpha, gamma, 1.0)
}

/// Celu(x; a) = max(0, x) + min(0, a * (exp(x / a) - 1)) = Elu(alpha=a, input_scale=1/a).
fn celu(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["alpha"])?;
    let alpha = ctx.attr_f("alpha", 1.0)?;
    if alpha == 0.0 {
        return Err(Error::tr("Celu: alpha must not be 0"));
    }
    let x = ctx.input(0)?;
    elu(ctx, x, alpha, 1.0, 1.0 / alpha)
}

/// approximate="none": GE's GeluV2 (approximate "none", the erf form); "tanh": GE's Gelu (the
/// tanh form); for dtypes they do not take (double), the formula 0.5 x (1 + erf(x / sqrt 2)) or
/// its tanh form.
fn gelu(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["approximate"])?;
    let approx = ctx.attr_s("approximate", "none")?;
    let x = ctx.input(0)?;
    let dt = ctx.in_dtype(0)?;
    let inner = match approx.as_str() {
        "none" => {
            if ctx.accepts("GeluV2", dt)? {
                return one(ctx.op1(
                    "GeluV2",
                    &[x],
                    vec![("approximate", AttrValue::String("none".into()))],
                )?);
            }
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
    ctx.known_attrs(&["bias", "lambd"])?;
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
    ctx.known_attrs(&["alpha"])?;
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
    ctx.known_attrs(&[])?;
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
    ctx.known_attrs(&["consumed_inputs"])?;
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
    ctx.known_attrs(&[])?;
    let x = ctx.input(0)?;
    one(ctx.un("Round", x)?)
}

fn bit_shift(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["direction"])?;
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
    ctx.known_attrs(&["to"])?;
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

/// Swish(A; alpha) * B.
fn swiglu(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["alpha"])?;
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

/// X > threshold ? 1 : 0, in X's dtype.
fn binarizer(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["threshold"])?;
    let t = ctx.attr_f("threshold", 0.0)? as f64;
    let x = ctx.input(0)?;
    let dt = ctx.in_dtype(0)?;
    let th = ctx.scalar(dt, t)?;
    let g = ctx.bin("Greater", x, th)?;
    one(ctx.cast(g, dt)?)
}

/// Inference behaviour: the output is the input, the mask all true.
fn dropout(ctx: &mut NodeCtx<'_>) -> Out {
    known_attrs_old(ctx, &["seed"], &[("is_test", 7), ("consumed_inputs", 6)])?;
    let zero_ratio = match ctx.const_input(1) {
        Some(t) => t.to_f64_vec()?.iter().all(|&v| v == 0.0),
        None => false,
    };
    // Some(mode) when known at import; None: the run-time training_mode input decides.
    let training = match ctx.const_input(2) {
        _ if zero_ratio => Some(false),
        Some(t) => Some(t.to_i64_vec()?.iter().any(|&v| v != 0)),
        None if ctx.has_input(2) => None,
        None => Some(ctx.opset < 7 && ctx.attr_i("is_test", 0)? == 0),
    };
    let x = ctx.input(0)?;
    if training == Some(false) {
        let y = ctx.op1("Identity", &[x], vec![])?;
        let mask = if ctx.output_used(1) {
            let v = if ctx.opset >= 10 {
                ctx.constant(Tensor::scalar(true))?
            } else {
                let dt = ctx.desc(x)?.dtype;
                ctx.const_of(dt, &[1.0], &[])?
            };
            let s = ctx.shape_i64(x)?;
            Some(ctx.op1("Fill", &[s, v], vec![])?)
        } else {
            None
        };
        return Ok(vec![Some(y), mask]);
    }
    training_dropout(ctx, x, training.is_none())
}

/// Dropout in training mode, as onnx's reference: keep = U[0, 1) >= ratio, y = x * keep /
/// (1 - ratio). A given `seed` fixes the draws (RandomUniform seed, seed2 = 1); without one
/// every run draws fresh. With a run-time training_mode, false gives x and an all-true mask.
fn training_dropout(ctx: &mut NodeCtx<'_>, x: OutPort, runtime_mode: bool) -> Out {
    let dt = ctx.desc(x)?.dtype;
    if !dt.is_float() {
        return Err(unsupported(ctx, format_args!("training mode on {dt}")));
    }
    let ratio = match ctx.opt_input(1)? {
        Some(r) => ctx.cast(r, dt)?,
        None => ctx.scalar(dt, 0.5)?,
    };
    let (seed, seed2) = match ctx.attr("seed")? {
        Some(_) => (ctx.attr_i("seed", 0)?, 1),
        None => (0, 0),
    };
    let shape = ctx.shape_i64(x)?;
    let u = ctx.op1(
        "RandomUniform",
        &[shape],
        vec![
            ("dtype", AttrValue::Type(dt)),
            ("seed", AttrValue::Int(seed)),
            ("seed2", AttrValue::Int(seed2)),
        ],
    )?;
    let mut keep = ctx.bin("GreaterEqual", u, ratio)?;
    let one_f = ctx.scalar(dt, 1.0)?;
    let rest = ctx.bin("Sub", one_f, ratio)?;
    let scale = ctx.bin("RealDiv", one_f, rest)?;
    let k = ctx.cast(keep, dt)?;
    let y = ctx.bin("Mul", k, x)?;
    let mut y = ctx.bin("Mul", y, scale)?;
    if runtime_mode {
        let t = ctx.input(2)?;
        let t = ctx.cast(t, DataType::BOOL)?;
        y = ctx.op1("SelectV2", &[t, y, x], vec![])?;
        let all = ctx.constant(Tensor::scalar(true))?;
        keep = ctx.op1("SelectV2", &[t, keep, all], vec![])?;
    }
    let mask = if ctx.opset >= 10 {
        keep
    } else {
        ctx.cast(keep, dt)?
    };
    Ok(vec![Some(y), Some(mask)])
}

/// The IR dtype of the ONNX element type in attribute `to`.
fn to_dtype(ctx: &NodeCtx<'_>) -> Result<DataType> {
    let to = ctx.attr_i("to", -1)?;
    if to < 0 {
        return Err(Error::tr("Cast needs the attribute 'to'"));
    }
    crate::types::dtype_from_onnx(to as i32).map_err(|e| e.context("attribute 'to'"))
}

fn cast_to(ctx: &mut NodeCtx<'_>, to: DataType) -> Out {
    if let Some(y) = super::string::string_cast(ctx, to)? {
        return one(y);
    }
    let saturate = ctx.attr_i("saturate", 1)? != 0;
    let round = ctx.attr_s("round_mode", "up")?;
    let x = ctx.input(0)?;
    one(cast_with(ctx, x, to, saturate, &round)?)
}

/// A GE Cast of `x` to `to` with ONNX's `saturate` and `round_mode` (how values reach the
/// float8 types) as the private attributes `_saturate` and `_round_mode` where they are not the
/// defaults: GE's Cast prototype has only `dst_type`.
pub(super) fn cast_with(
    ctx: &mut NodeCtx<'_>,
    x: OutPort,
    to: DataType,
    saturate: bool,
    round: &str,
) -> Result<OutPort> {
    if !matches!(round, "up" | "down" | "nearest") {
        return Err(Error::tr(format!(
            "{}: round_mode must be \"up\", \"down\" or \"nearest\", got \"{round}\"",
            ctx.op_type()
        )));
    }
    let y = ctx.op1(
        "Cast",
        &[x],
        vec![("dst_type", AttrValue::Int(to.value() as i64))],
    )?;
    if saturate && round == "up" {
        return Ok(y);
    }
    let mut b = ctx.take_builder();
    let set = b.graph_mut().node_mut(y.node).map(|n| {
        if !saturate {
            n.private_attrs
                .insert("_saturate".into(), AttrValue::Int(0));
        }
        if round != "up" {
            n.private_attrs
                .insert("_round_mode".into(), AttrValue::String(round.to_string()));
        }
    });
    ctx.put_builder(b);
    set?;
    Ok(y)
}

fn cast(ctx: &mut NodeCtx<'_>) -> Out {
    let to = to_dtype(ctx)?;
    cast_to(ctx, to)
}

fn cast_like(ctx: &mut NodeCtx<'_>) -> Out {
    let to = ctx.input_desc(1)?.dtype;
    if to == DataType::UNDEFINED {
        return Err(Error::unsupported(
            "CastLike: the dtype of target_type must be known at import",
        ));
    }
    cast_to(ctx, to)
}

fn identity(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    Ok(vec![Some(ctx.op1("Identity", &[x], vec![])?)])
}
