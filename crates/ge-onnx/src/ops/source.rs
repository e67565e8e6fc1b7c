//! Producers: constants, shapes and sizes, random values, windows.

use super::util::*;
use crate::error::{Error, Result};
use crate::translate::{NodeCtx, Registry};
use es_core::{AttrValue, DataType, OutPort, Tensor};

/// The family's translators.
pub(super) const TABLE: &[(&str, Translator)] = &[
    ("MelWeightMatrix", mel_weight_matrix),
    ("Bernoulli", bernoulli),
    ("RandomUniformLike", random_uniform_like),
    ("Shape", shape),
    ("Size", size),
    ("ConstantOfShape", constant_of_shape),
    ("EyeLike", eye_like),
    ("Constant", constant),
];

// Windows.

variants!(Win {
    Blackman,
    Hamming,
    Hann
});

/// Registers the translators of the variants of [`Win`].
pub(super) fn register_variant_ops(r: &mut Registry) {
    // BlackmanWindow, HammingWindow, HannWindow.
    register_variants(r, Win::ALL, |v| format!("{v:?}Window"), window);
}

/// ONNX's definitions over n = 0..size in f64 (N = size, or size - 1 when not periodic), cast
/// to `output_datatype`.
fn window(ctx: &mut NodeCtx<'_>, w: Win) -> Out {
    ctx.known_attrs(&["output_datatype", "periodic"])?;
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
    ctx.known_attrs(&["dtype", "seed"])?;
    let (out, seed) = random_setup(ctx)?;
    let x = ctx.input(0)?;
    let dt = ctx.in_dtype(0)?;
    let u = uniform(ctx, x, dt, seed)?;
    let c = ctx.bin("Less", u, x)?;
    one(ctx.cast(c, out)?)
}

/// low + (high - low) * RandomUniform(shape(x)).
fn random_uniform_like(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["dtype", "seed", "high", "low"])?;
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

// MelWeightMatrix.

/// Folded into a Const at import when every input is a constant, else composed at run time
/// ([`mel_weight_runtime`]); computed as ONNX's reference implementation does.
fn mel_weight_matrix(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["output_datatype"])?;
    let out = crate::types::dtype_from_onnx(ctx.attr_i("output_datatype", 1)? as i32)
        .map_err(|e| e.context("attribute 'output_datatype'"))?;
    if (0..5).any(|i| ctx.has_input(i) && ctx.const_input(i).is_none()) {
        return one(mel_weight_runtime(ctx, out)?);
    }
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

/// MelWeightMatrix from run-time inputs, in f64: the num_mel_bins + 2 band edges (mel scale,
/// spread evenly between the edge frequencies, mapped to spectrogram bins by floor), then per
/// bin j and band i with edges (l, c, h): (j - l) / (c - l) on [l, c], 1 at j = c when c = l,
/// and (h - j) / (h - c) on [c, h) (which wins at j = c), 0 elsewhere. Bins outside the
/// spectrogram are dropped.
fn mel_weight_runtime(ctx: &mut NodeCtx<'_>, out: DataType) -> Result<OutPort> {
    let f64_ = DataType::DOUBLE;
    let i64_ = DataType::INT64;
    let mut vals = Vec::with_capacity(5);
    for (i, what) in [
        "num_mel_bins",
        "dft_length",
        "sample_rate",
        "lower_edge_hertz",
        "upper_edge_hertz",
    ]
    .into_iter()
    .enumerate()
    {
        if ctx.vec_len(i)?.is_some_and(|n| n != 1) {
            return Err(Error::tr(format!(
                "MelWeightMatrix: input {i} ({what}) must hold one value"
            )));
        }
        let v = ctx.input(i)?;
        let scalar = ctx.const_i64(&[], &[0])?;
        let v = ctx.op1("Reshape", &[v, scalar], vec![])?;
        vals.push(v);
    }
    let bins = ctx.cast(vals[0], i64_)?;
    let dft = ctx.cast(vals[1], i64_)?;
    let one_i = ctx.const_i64(&[1], &[])?;
    let two_i = ctx.const_i64(&[2], &[])?;
    let spec = ctx.bin("FloorDiv", dft, two_i)?;
    let spec = ctx.bin("Add", spec, one_i)?;
    let rate = ctx.cast(vals[2], f64_)?;
    // hz -> mel: 2595 log10(1 + hz / 700).
    let c700 = ctx.scalar(f64_, 700.0)?;
    let c2595 = ctx.scalar(f64_, 2595.0)?;
    let ln10 = ctx.scalar(f64_, std::f64::consts::LN_10)?;
    let one_f = ctx.scalar(f64_, 1.0)?;
    let mel = |ctx: &mut NodeCtx<'_>, hz: OutPort| -> Result<OutPort> {
        let hz = ctx.cast(hz, f64_)?;
        let t = ctx.bin("RealDiv", hz, c700)?;
        let t = ctx.bin("Add", t, one_f)?;
        let t = ctx.un("Log", t)?;
        let t = ctx.bin("RealDiv", t, ln10)?;
        ctx.bin("Mul", t, c2595)
    };
    let low = mel(ctx, vals[3])?;
    let high = mel(ctx, vals[4])?;
    let n_edges = ctx.bin("Add", bins, two_i)?;
    let span = ctx.bin("Sub", high, low)?;
    let n_f = ctx.cast(n_edges, f64_)?;
    let step = ctx.bin("RealDiv", span, n_f)?;
    let k = ctx.iota(n_edges, &[-1])?;
    let k = ctx.cast(k, f64_)?;
    let m = ctx.bin("Mul", k, step)?;
    let m = ctx.bin("Add", m, low)?;
    // mel -> hz: 700 (10^(mel / 2595) - 1); bin floor((dft + 1) hz / rate).
    let t = ctx.bin("RealDiv", m, c2595)?;
    let t = ctx.bin("Mul", t, ln10)?;
    let t = ctx.un("Exp", t)?;
    let t = ctx.bin("Sub", t, one_f)?;
    let hz = ctx.bin("Mul", t, c700)?;
    let d1 = ctx.bin("Add", dft, one_i)?;
    let d1 = ctx.cast(d1, f64_)?;
    let e = ctx.bin("Mul", hz, d1)?;
    let e = ctx.bin("RealDiv", e, rate)?;
    let e = ctx.un("Floor", e)?;
    // l, c, h of band i, as [1, bins] rows; j as a [spec, 1] column.
    let i = ctx.iota(bins, &[1, -1])?;
    let zero_ax = ctx.const_i64(&[0], &[])?;
    let edge = |ctx: &mut NodeCtx<'_>, off: i64| -> Result<OutPort> {
        let o = ctx.const_i64(&[off], &[])?;
        let idx = ctx.bin("Add", i, o)?;
        ctx.op1("GatherV2", &[e, idx, zero_ax], vec![])
    };
    let l = edge(ctx, 0)?;
    let c = edge(ctx, 1)?;
    let h = edge(ctx, 2)?;
    let j = ctx.iota(spec, &[-1, 1])?;
    let j = ctx.cast(j, f64_)?;
    let zero_f = ctx.scalar(f64_, 0.0)?;
    // Rising edge on [l, c] (0/0 at j = c = l, which the spike rule replaces), a one-bin band
    // 1 at j = c = l, falling edge on [c, h).
    let w = ramp(ctx, j, zero_f, (l, "LessEqual", c), (l, c))?;
    let eq = ctx.bin("Equal", c, l)?;
    let at = ctx.bin("Equal", j, c)?;
    let spike = ctx.bin("LogicalAnd", eq, at)?;
    let w = ctx.op1("SelectV2", &[spike, one_f, w], vec![])?;
    let w = ramp(ctx, j, w, (c, "Less", h), (h, c))?;
    ctx.cast(w, out)
}

/// `(j - from) / (to - from)` where `lo <= j` and `j <hi_op> hi`, `w` elsewhere.
fn ramp(
    ctx: &mut NodeCtx<'_>,
    j: OutPort,
    w: OutPort,
    (lo, hi_op, hi): (OutPort, &str, OutPort),
    (from, to): (OutPort, OutPort),
) -> Result<OutPort> {
    let a = ctx.bin("GreaterEqual", j, lo)?;
    let b = ctx.bin(hi_op, j, hi)?;
    let inside = ctx.bin("LogicalAnd", a, b)?;
    let num = ctx.bin("Sub", j, from)?;
    let den = ctx.bin("Sub", to, from)?;
    let v = ctx.bin("RealDiv", num, den)?;
    ctx.op1("SelectV2", &[inside, v, w], vec![])
}

// ---------------------------------------------------------------------------------------------
// Shape, Size, Reshape, Concat, Transpose
// ---------------------------------------------------------------------------------------------

/// Shape (int64); start/end (opset 15) slice the result as ONNX clamps them.
fn shape(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["start", "end"])?;
    let x = ctx.input(0)?;
    let s = ctx.shape_i64(x)?;
    let start = ctx.attr_i("start", 0)?;
    let end = ctx.attr("end")?.is_some();
    if start == 0 && !end {
        return Ok(vec![Some(s)]);
    }
    let e = ctx.attr_i("end", 0)?;
    let b = ctx.const_i64(&[start], &[1])?;
    let en = ctx.const_i64(&[e], &[1])?;
    let st = ctx.const_i64(&[1], &[1])?;
    one(ctx.op1(
        "StridedSlice",
        &[s, b, en, st],
        vec![("end_mask", AttrValue::Int(if end { 0 } else { 1 }))],
    )?)
}

fn size(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&[])?;
    let x = ctx.input(0)?;
    Ok(vec![Some(ctx.op1(
        "Size",
        &[x],
        vec![("dtype", dtype_attr(I64))],
    )?)])
}

fn constant_of_shape(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["value"])?;
    let dims = ctx.input(0)?;
    let dims = ctx.cast(dims, I64)?;
    let v = match ctx.attr_tensor("value")? {
        Some(t) => {
            if t.desc.shape.num_elements() != Some(1) {
                return Err(Error::tr(
                    "ConstantOfShape: value must hold exactly one element",
                ));
            }
            let desc = es_core::TensorDesc::new(t.desc.dtype, es_core::Shape::scalar());
            Tensor::new(desc, t.data.to_vec())?
        }
        None => Tensor::scalar(0f32),
    };
    let v = ctx.constant(v)?;
    Ok(vec![Some(ctx.op1("Fill", &[dims, v], vec![])?)])
}

// ---------------------------------------------------------------------------------------------
// EyeLike, Dropout, ReverseSequence
// ---------------------------------------------------------------------------------------------

/// A constant (the input's shape is static): ones on diagonal k.
fn eye_like(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["dtype", "k"])?;
    let dims = ctx.static_dims(0, "the output is built at import")?;
    let [n, m] = dims[..] else {
        return Err(Error::tr(format!(
            "EyeLike needs a 2-D input, got shape {dims:?}"
        )));
    };
    let dt = if ctx.has_attr("dtype") {
        crate::types::dtype_from_onnx(ctx.attr_i("dtype", 1)? as i32)
            .map_err(|e| e.context("attribute 'dtype'"))?
    } else {
        ctx.input_desc(0)?.dtype
    };
    let k = ctx.attr_i("k", 0)?;
    let total = n
        .checked_mul(m)
        .filter(|&t| t <= 1 << 28)
        .ok_or_else(|| Error::unsupported("EyeLike: the output is too large to build"))?;
    let mut v = vec![0f64; total as usize];
    for i in 0..n {
        let j = i + k;
        if (0..m).contains(&j) {
            v[(i * m + j) as usize] = 1.0;
        }
    }
    Ok(vec![Some(ctx.const_of(dt, &v, &[n, m])?)])
}

/// `value` (tensor), `value_float(s)`, `value_int(s)`, `value_string(s)`; sparse values are refused.
fn constant(ctx: &mut NodeCtx<'_>) -> Out {
    let t = if let Some(t) = ctx.attr_tensor("value")? {
        t
    } else if ctx.has_attr("value_float") {
        Tensor::scalar(ctx.attr_f("value_float", 0.0)?)
    } else if let Some(v) = ctx.attr_floats("value_floats")? {
        Tensor::from_values(&v, vec![v.len() as i64])?
    } else if ctx.has_attr("value_int") {
        Tensor::scalar(ctx.attr_i("value_int", 0)?)
    } else if let Some(v) = ctx.attr_ints("value_ints")? {
        Tensor::from_values(&v, vec![v.len() as i64])?
    } else if ctx.has_attr("value_string") {
        Tensor::from_strings(&[ctx.attr_s("value_string", "")?], vec![])?
    } else if ctx.has_attr("value_strings") {
        let v = super::string::attr_strings(ctx, "value_strings")?.unwrap_or_default();
        Tensor::from_strings(&v, vec![v.len() as i64])?
    } else if ctx.has_attr("sparse_value") {
        return Err(Error::unsupported("sparse constants"));
    } else {
        return Err(Error::tr("Constant has no value attribute"));
    };
    Ok(vec![Some(ctx.constant(t)?)])
}
