//! Shape and index operators: Shape, Reshape, Concat, Slice, Transpose, Size, Gather,
//! Unsqueeze, Squeeze, Split, Pad, ConstantOfShape, GatherElements, GatherND, ScatterND,
//! OneHot, Compress, NonZero, TopK, Unique, EyeLike, Dropout, CenterCropPad, ReverseSequence,
//! Resize, Upsample. (Expand, Tile, ScatterElements, Scatter, Trilu, Range, Where,
//! DepthToSpace and SpaceToDepth are direct entries of `ops/onnx_mapping.json`.)
//!
//! Shape-like inputs (Reshape's shape, Slice's starts/ends/steps, Pad's pads, Split's sizes,
//! Resize's scales/sizes) stay run-time tensors where the GE operator takes a tensor; only the
//! values GE takes as attributes (Squeeze/Unsqueeze axes, ...) must be constants.

use super::util::{norm_axes, norm_axis};
use crate::error::{Error, Result};
use crate::translate::{NodeCtx, Registry};
use es_core::{AttrValue, DataType, OutPort, Tensor};
use std::sync::Arc;

type Out = Result<Vec<Option<OutPort>>>;

const I64: DataType = DataType::INT64;

pub(crate) fn register(r: &mut Registry) {
    r.register("Shape", Arc::new(shape));
    r.register("Size", Arc::new(size));
    r.register("Reshape", Arc::new(reshape));
    r.register("Concat", Arc::new(concat));
    r.register("Slice", Arc::new(slice));
    r.register("Transpose", Arc::new(transpose));
    r.register("Gather", Arc::new(gather));
    r.register("Unsqueeze", Arc::new(unsqueeze));
    r.register("Squeeze", Arc::new(squeeze));
    r.register("Split", Arc::new(split));
    r.register("Pad", Arc::new(pad));
    r.register("ConstantOfShape", Arc::new(constant_of_shape));
    r.register("GatherElements", Arc::new(gather_elements));
    r.register("GatherND", Arc::new(gather_nd));
    r.register("ScatterND", Arc::new(scatter_nd));
    r.register("OneHot", Arc::new(one_hot));
    r.register("Compress", Arc::new(compress));
    r.register("NonZero", Arc::new(non_zero));
    r.register("TopK", Arc::new(top_k));
    r.register("Unique", Arc::new(unique));
    r.register("EyeLike", Arc::new(eye_like));
    r.register("Dropout", Arc::new(dropout));
    r.register("CenterCropPad", Arc::new(center_crop_pad));
    r.register("ReverseSequence", Arc::new(reverse_sequence));
    r.register("Resize", Arc::new(resize));
    r.register("Upsample", Arc::new(upsample));
}

/// Refuses any attribute not in `known` (attributes the compatibility layer turned into
/// inputs are listed by the callers).
fn known_attrs(ctx: &NodeCtx<'_>, known: &[&str]) -> Result<()> {
    known_attrs_old(ctx, known, &[])
}

/// [`known_attrs`] plus attributes known before opset `.1` only (those the compatibility
/// layer turned into inputs, or that later opsets removed).
fn known_attrs_old(ctx: &NodeCtx<'_>, known: &[&str], old: &[(&str, i64)]) -> Result<()> {
    for a in &ctx.node.attribute {
        let name = a.name.as_deref().unwrap_or("");
        let was = old.iter().any(|&(n, until)| n == name && ctx.opset < until);
        if !known.contains(&name) && !was {
            return Err(Error::unsupported(format!(
                "{}: attribute '{name}' is not supported (opset {})",
                ctx.op_type(),
                ctx.opset
            )));
        }
    }
    Ok(())
}

fn dtype_attr(dt: DataType) -> AttrValue {
    AttrValue::Int(dt.value() as i64)
}

impl NodeCtx<'_> {
    /// The int64 shape of `x`.
    fn shape_i64(&mut self, x: OutPort) -> Result<OutPort> {
        self.op1("Shape", &[x], vec![("dtype", dtype_attr(I64))])
    }
    /// Input `i` cast to int64, when present.
    fn opt_input_i64(&mut self, i: usize) -> Result<Option<OutPort>> {
        match self.opt_input(i)? {
            Some(p) => Ok(Some(self.cast(p, I64)?)),
            None => Ok(None),
        }
    }
    /// The static dims of input `i` (-1 for unknown dims), None when its rank is unknown.
    fn input_dims(&self, i: usize) -> Result<Option<Vec<i64>>> {
        let d = self.input_desc(i)?;
        Ok(d.shape.rank().map(|_| d.shape.dims().to_vec()))
    }
    /// The static dims of input `i`, which must all be known.
    fn static_dims(&self, i: usize, why: &str) -> Result<Vec<i64>> {
        match self.input_dims(i)? {
            Some(d) if d.iter().all(|&v| v >= 0) => Ok(d),
            _ => Err(Error::unsupported(format!(
                "{}: the shape of input {i} must be known at import ({why})",
                self.op_type()
            ))),
        }
    }
    /// Number of elements of the 1-D input `i`, when known.
    fn vec_len(&self, i: usize) -> Result<Option<usize>> {
        let d = self.input_desc(i)?;
        Ok(match d.shape.dims() {
            [n] if *n >= 0 => Some(*n as usize),
            [] => Some(1),
            _ => None,
        })
    }
    /// `v` gathered at the constant positions `idx` (1-D).
    fn gather_const(&mut self, v: OutPort, idx: &[i64]) -> Result<OutPort> {
        let i = self.const_i64(idx, &[idx.len() as i64])?;
        let axis = self.const_i64(&[0], &[])?;
        self.op1("GatherV2", &[v, i, axis], vec![])
    }
    /// The run-time axes of input `i` (int64), negative ones wrapped by `rank`.
    fn runtime_axes(&mut self, i: usize, rank: usize) -> Result<OutPort> {
        let a = self.input(i)?;
        let a = self.cast(a, I64)?;
        let r = self.const_i64(&[rank as i64], &[])?;
        wrap_negative(self, a, r)
    }
    /// `base` (a constant 1-D vector of `len` values of `dtype`) with `vals` written at the
    /// run-time positions `pos` (ScatterElements).
    fn scatter_runtime(
        &mut self,
        dtype: DataType,
        base: &[f64],
        pos: OutPort,
        vals: OutPort,
    ) -> Result<OutPort> {
        let b = self.const_of(dtype, base, &[base.len() as i64])?;
        let vals = self.cast(vals, dtype)?;
        self.op1(
            "ScatterElements",
            &[b, pos, vals],
            vec![("axis", AttrValue::Int(0))],
        )
    }
    /// Per dim of a rank-`rank` tensor: how many of the (run-time, normalised) axes name it.
    fn axis_counts(&mut self, ax: OutPort, n: usize, rank: usize) -> Result<OutPort> {
        let col = self.const_i64(&[n as i64, 1], &[2])?;
        let ax = self.op1("Reshape", &[ax, col], vec![])?;
        let pos: Vec<i64> = (0..rank as i64).collect();
        let pos = self.const_i64(&pos, &[1, rank as i64])?;
        let eq = self.op1("Equal", &[ax, pos], vec![])?;
        let eq = self.cast(eq, I64)?;
        let zero = self.const_i64(&[0], &[1])?;
        self.op1(
            "ReduceSum",
            &[eq, zero],
            vec![("keep_dims", AttrValue::Bool(false))],
        )
    }
    /// A full-rank vector from the values `v` (1-D, one per entry of `axes`) placed at `axes`,
    /// `fill` elsewhere: constant-folded when `v` is constant.
    fn scatter_axes(
        &mut self,
        v: OutPort,
        axes: &[usize],
        rank: usize,
        fill: &[f64],
    ) -> Result<OutPort> {
        let dt = self.desc(v)?.dtype;
        if let Some(t) = self.const_value(v) {
            let vals = t.to_f64_vec()?;
            if vals.len() != axes.len() {
                return Err(Error::tr(format!(
                    "{}: {} values for {} axes",
                    self.op_type(),
                    vals.len(),
                    axes.len()
                )));
            }
            let mut full: Vec<f64> = (0..rank).map(|d| fill[d % fill.len()]).collect();
            for (k, &a) in axes.iter().enumerate() {
                full[a] = vals[k];
            }
            return self.const_of(dt, &full, &[rank as i64]);
        }
        // Run-time values: Concat([v, fill]) gathered at each axis' position.
        let n = axes.len() as i64;
        let f = self.const_of(dt, fill, &[fill.len() as i64])?;
        let axis0 = self.const_i64(&[0], &[])?;
        let both = self.op(
            "ConcatV2",
            vec![vec![Some(v), Some(f)], vec![Some(axis0)]],
            vec![],
        )?[0];
        let idx: Vec<i64> = (0..rank)
            .map(|d| match axes.iter().position(|&a| a == d) {
                Some(k) => k as i64,
                None => n + (d % fill.len()) as i64,
            })
            .collect();
        self.gather_const(both, &idx)
    }
}

// ---------------------------------------------------------------------------------------------
// Shape, Size, Reshape, Concat, Transpose
// ---------------------------------------------------------------------------------------------

/// Shape (int64); start/end (opset 15) slice the result as ONNX clamps them.
fn shape(ctx: &mut NodeCtx<'_>) -> Out {
    known_attrs(ctx, &["start", "end"])?;
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
    let y = ctx.op1(
        "StridedSlice",
        &[s, b, en, st],
        vec![("end_mask", AttrValue::Int(if end { 0 } else { 1 }))],
    )?;
    Ok(vec![Some(y)])
}

fn size(ctx: &mut NodeCtx<'_>) -> Out {
    known_attrs(ctx, &[])?;
    let x = ctx.input(0)?;
    Ok(vec![Some(ctx.op1(
        "Size",
        &[x],
        vec![("dtype", dtype_attr(I64))],
    )?)])
}

/// GE's Reshape copies the input dim for a 0 entry (ONNX allowzero=0). allowzero=1 with a 0
/// entry makes an empty tensor: a Fill of the (constant) shape.
fn reshape(ctx: &mut NodeCtx<'_>) -> Out {
    known_attrs_old(ctx, &["allowzero"], &[("shape", 5), ("consumed_inputs", 5)])?;
    let x = ctx.input(0)?;
    let allowzero = ctx.attr_i("allowzero", 0)? != 0;
    if allowzero {
        match ctx.const_input(1) {
            Some(t) => {
                let v = t.to_i64_vec()?;
                if v.contains(&0) {
                    if v.iter().any(|&d| d < 0) {
                        return Err(Error::tr(
                            "Reshape: allowzero=1 forbids -1 beside a 0 in shape",
                        ));
                    }
                    let dt = ctx.desc(x)?.dtype;
                    let dims = ctx.const_i64(&v, &[v.len() as i64])?;
                    let zero = ctx.const_of(dt, &[0.0], &[])?;
                    return Ok(vec![Some(ctx.op1("Fill", &[dims, zero], vec![])?)]);
                }
            }
            None => {
                return Err(Error::unsupported(
                    "Reshape with allowzero=1 and a run-time shape (GE's Reshape copies the input dim for a 0 entry)",
                ))
            }
        }
    }
    let s = ctx.input(1)?;
    let s = ctx.cast(s, I64)?;
    Ok(vec![Some(ctx.op1("Reshape", &[x, s], vec![])?)])
}

fn concat(ctx: &mut NodeCtx<'_>) -> Out {
    known_attrs(ctx, &["axis"])?;
    let mut xs = Vec::new();
    let mut rank = None;
    for i in 0..ctx.num_inputs() {
        if let Some(p) = ctx.opt_input(i)? {
            if rank.is_none() {
                rank = ctx.input_dims(i)?.map(|d| d.len());
            }
            xs.push(Some(p));
        }
    }
    if xs.is_empty() {
        return Err(Error::tr("Concat needs at least one input"));
    }
    // Concat-1's axis defaults to 1; from opset 4 on it is required.
    if ctx.opset >= 4 && !ctx.has_attr("axis") {
        return Err(Error::tr("Concat needs the attribute 'axis'"));
    }
    let mut axis = ctx.attr_i("axis", 1)?;
    if let Some(r) = rank {
        axis = norm_axis(axis, r, "Concat axis")? as i64;
    }
    let dim = ctx.const_i64(&[axis], &[])?;
    let y = ctx.op("ConcatV2", vec![xs, vec![Some(dim)]], vec![])?[0];
    Ok(vec![Some(y)])
}

fn transpose(ctx: &mut NodeCtx<'_>) -> Out {
    known_attrs(ctx, &["perm"])?;
    let x = ctx.input(0)?;
    let perm: Vec<i64> = match ctx.attr_ints("perm")? {
        Some(p) => {
            if p.iter().any(|&a| a < 0) {
                return Err(Error::tr(format!(
                    "Transpose: perm {p:?} has a negative entry"
                )));
            }
            if let Some(r) = ctx.input_dims(0)?.map(|d| d.len()) {
                let n = norm_axes(&p, r, "Transpose perm")?;
                if n.len() != r {
                    return Err(Error::tr(format!(
                        "Transpose: perm {p:?} does not list the {r} dims"
                    )));
                }
            }
            p
        }
        None => {
            let r = ctx.input_rank(0)?;
            (0..r as i64).rev().collect()
        }
    };
    let p = ctx.const_i64(&perm, &[perm.len() as i64])?;
    Ok(vec![Some(ctx.op1("Transpose", &[x, p], vec![])?)])
}

// ---------------------------------------------------------------------------------------------
// Slice
// ---------------------------------------------------------------------------------------------

/// StridedSlice with full begin/end/strides: untouched axes get begin/end mask bits. Clamping
/// of out-of-range starts/ends is the run-time kernel's (TensorFlow's, as numpy and the ONNX
/// reference).
fn slice(ctx: &mut NodeCtx<'_>) -> Out {
    known_attrs_old(ctx, &[], &[("starts", 10), ("ends", 10), ("axes", 10)])?;
    let x = ctx.input(0)?;
    let starts = ctx.input(1)?;
    let starts = ctx.cast(starts, I64)?;
    let ends = ctx.input(2)?;
    let ends = ctx.cast(ends, I64)?;
    let steps = ctx.opt_input_i64(4)?;
    let n = ctx.vec_len(1)?.or(ctx.vec_len(2)?);
    let axes = if ctx.has_input(3) && ctx.const_input(3).is_none() {
        // Run-time axes: full-rank begin/end/strides scattered from them (untouched axes:
        // 0, INT64_MAX, 1).
        let r = ctx.input_rank(0)?;
        let n = ctx.vec_len(3)?.ok_or_else(|| {
            Error::unsupported("Slice: the length of run-time axes must be known at import")
        })?;
        let ax = ctx.runtime_axes(3, r)?;
        let b = ctx.scatter_runtime(I64, &vec![0.0; r], ax, starts)?;
        let big = ctx.const_i64(&vec![i64::MAX; r], &[r as i64])?;
        let ends = ctx.op1(
            "ScatterElements",
            &[big, ax, ends],
            vec![("axis", AttrValue::Int(0))],
        )?;
        let steps = match steps {
            Some(s) => s,
            None => ctx.const_i64(&vec![1; n], &[n as i64])?,
        };
        let st = ctx.scatter_runtime(I64, &vec![1.0; r], ax, steps)?;
        let y = ctx.op1("StridedSlice", &[x, b, ends, st], vec![])?;
        return Ok(vec![Some(y)]);
    } else {
        ctx.const_ints(3, "axes")?
    };
    let (begin, end, strides, mask) = match axes {
        None => {
            // Axes 0..n: the spec is a prefix, trailing axes are taken whole.
            let strides = match steps {
                Some(s) => s,
                None => {
                    let n = n.ok_or_else(|| {
                        Error::unsupported(
                            "Slice: the length of starts must be known at import when steps are absent",
                        )
                    })?;
                    ctx.const_i64(&vec![1; n], &[n as i64])?
                }
            };
            (starts, ends, strides, 0i64)
        }
        Some(axes) => {
            let nonneg = axes.iter().all(|&a| a >= 0);
            let rank = match ctx.input_dims(0)? {
                Some(d) => d.len(),
                None if nonneg => axes.iter().map(|&a| a as usize + 1).max().unwrap_or(0),
                None => {
                    return Err(Error::unsupported(
                        "Slice: negative axes need the rank of data at import",
                    ))
                }
            };
            let ax = norm_axes(&axes, rank, "Slice axes")?;
            if let Some(n) = n {
                if n != ax.len() {
                    return Err(Error::tr(format!(
                        "Slice: {n} starts for {} axes",
                        ax.len()
                    )));
                }
            }
            let steps = match steps {
                Some(s) => s,
                None => ctx.const_i64(&vec![1; ax.len()], &[ax.len() as i64])?,
            };
            let b = ctx.scatter_axes(starts, &ax, rank, &[0.0])?;
            let e = ctx.scatter_axes(ends, &ax, rank, &[0.0])?;
            let s = ctx.scatter_axes(steps, &ax, rank, &[1.0])?;
            let mut mask = 0i64;
            for d in 0..rank.min(63) {
                if !ax.contains(&d) {
                    mask |= 1 << d;
                }
            }
            (b, e, s, mask)
        }
    };
    if let Some(t) = ctx.const_value(strides) {
        if t.to_i64_vec()?.contains(&0) {
            return Err(Error::tr("Slice: steps must not be 0"));
        }
    }
    let y = ctx.op1(
        "StridedSlice",
        &[x, begin, end, strides],
        vec![
            ("begin_mask", AttrValue::Int(mask)),
            ("end_mask", AttrValue::Int(mask)),
        ],
    )?;
    Ok(vec![Some(y)])
}

// ---------------------------------------------------------------------------------------------
// Gather, Unsqueeze, Squeeze, Split
// ---------------------------------------------------------------------------------------------

fn gather(ctx: &mut NodeCtx<'_>) -> Out {
    known_attrs(ctx, &["axis"])?;
    let x = ctx.input(0)?;
    let idx = ctx.input(1)?;
    let dt = ctx.desc(idx)?.dtype;
    let idx = if matches!(dt, DataType::INT32 | DataType::INT64) {
        idx
    } else {
        ctx.cast(idx, I64)?
    };
    let mut axis = ctx.attr_i("axis", 0)?;
    if let Some(d) = ctx.input_dims(0)? {
        axis = norm_axis(axis, d.len(), "Gather axis")? as i64;
    }
    let a = ctx.const_i64(&[axis], &[])?;
    let y = ctx.op1(
        "GatherV2",
        &[x, idx, a],
        vec![("negative_index_support", AttrValue::Bool(true))],
    )?;
    Ok(vec![Some(y)])
}

fn unsqueeze(ctx: &mut NodeCtx<'_>) -> Out {
    known_attrs_old(ctx, &[], &[("axes", 13)])?;
    let x = ctx.input(0)?;
    if ctx.has_input(1) && ctx.const_input(1).is_none() {
        return unsqueeze_runtime(ctx, x);
    }
    let axes = ctx
        .const_ints(1, "axes")?
        .ok_or_else(|| Error::tr("Unsqueeze needs axes"))?;
    let out_rank = match ctx.input_dims(0)? {
        Some(d) => d.len() + axes.len(),
        None if axes.iter().all(|&a| a >= 0) => 0,
        None => {
            return Err(Error::unsupported(
                "Unsqueeze: negative axes need the rank of data at import",
            ))
        }
    };
    let mut ax: Vec<i64> = if out_rank > 0 {
        norm_axes(&axes, out_rank, "Unsqueeze axes")?
            .into_iter()
            .map(|a| a as i64)
            .collect()
    } else {
        axes.clone()
    };
    ax.sort_unstable();
    if ax.windows(2).any(|w| w[0] == w[1]) {
        return Err(Error::tr(format!("Unsqueeze axes {axes:?} repeat an axis")));
    }
    let y = ctx.op1("Unsqueeze", &[x], vec![("axes", AttrValue::ListInt(ax))])?;
    Ok(vec![Some(y)])
}

fn squeeze(ctx: &mut NodeCtx<'_>) -> Out {
    known_attrs_old(ctx, &[], &[("axes", 13)])?;
    let x = ctx.input(0)?;
    if ctx.has_input(1) && ctx.const_input(1).is_none() {
        return squeeze_runtime(ctx, x);
    }
    let axes = ctx.const_ints(1, "axes")?.unwrap_or_default();
    let ax: Vec<i64> = match ctx.input_dims(0)? {
        Some(d) => {
            let ax = norm_axes(&axes, d.len(), "Squeeze axes")?;
            for &a in &ax {
                if d[a] > 1 || d[a] == 0 {
                    return Err(Error::tr(format!(
                        "Squeeze: dim {a} of input shape {d:?} is not 1"
                    )));
                }
            }
            ax.into_iter().map(|a| a as i64).collect()
        }
        None if axes.iter().all(|&a| a >= 0) => axes.clone(),
        None => {
            return Err(Error::unsupported(
                "Squeeze: negative axes need the rank of data at import",
            ))
        }
    };
    let y = ctx.op1("Squeeze", &[x], vec![("axis", AttrValue::ListInt(ax))])?;
    Ok(vec![Some(y)])
}

/// Unsqueeze by run-time axes: a Reshape to the computed shape (1 at the axes, X's dims in
/// order elsewhere). X's rank and the number of axes must be known.
fn unsqueeze_runtime(ctx: &mut NodeCtx<'_>, x: OutPort) -> Out {
    let r = ctx.input_rank(0)?;
    let n = ctx.vec_len(1)?.ok_or_else(|| {
        Error::unsupported("Unsqueeze: the number of run-time axes must be known at import")
    })?;
    let big = r + n;
    let ax = ctx.runtime_axes(1, big)?;
    let cnt = ctx.axis_counts(ax, n, big)?;
    let shape = if r == 0 {
        ctx.const_i64(&vec![1; big], &[big as i64])?
    } else {
        // Source dim of output position p: p - (axes at or before p), clamped.
        let zero = ctx.const_i64(&[0], &[])?;
        let before = ctx.op1("Cumsum", &[cnt, zero], vec![])?;
        let pos: Vec<i64> = (0..big as i64).collect();
        let pos = ctx.const_i64(&pos, &[big as i64])?;
        let src = ctx.op1("Sub", &[pos, before], vec![])?;
        let src = ctx.op1("Maximum", &[src, zero], vec![])?;
        let top = ctx.const_i64(&[r as i64 - 1], &[])?;
        let src = ctx.op1("Minimum", &[src, top], vec![])?;
        let xs = ctx.shape_i64(x)?;
        let dims = ctx.op1("GatherV2", &[xs, src, zero], vec![])?;
        let keep = ctx.op1("Equal", &[cnt, zero], vec![])?;
        let one = ctx.const_i64(&[1], &[])?;
        ctx.op1("SelectV2", &[keep, dims, one], vec![])?
    };
    Ok(vec![Some(ctx.op1("Reshape", &[x, shape], vec![])?)])
}

/// Squeeze by run-time axes: a Reshape to X's dims other than the axes.
fn squeeze_runtime(ctx: &mut NodeCtx<'_>, x: OutPort) -> Out {
    let r = ctx.input_rank(0)?;
    let n = ctx.vec_len(1)?.ok_or_else(|| {
        Error::unsupported("Squeeze: the number of run-time axes must be known at import")
    })?;
    let ax = ctx.runtime_axes(1, r)?;
    let cnt = ctx.axis_counts(ax, n, r)?;
    let zero = ctx.const_i64(&[0], &[])?;
    let keep = ctx.op1("Equal", &[cnt, zero], vec![])?;
    let idx = ctx.op1("NonZero", &[keep], vec![])?;
    let idx = ctx.cast(idx, I64)?;
    let m1 = ctx.const_i64(&[-1], &[1])?;
    let idx = ctx.op1("Reshape", &[idx, m1], vec![])?;
    let xs = ctx.shape_i64(x)?;
    let dims = ctx.op1("GatherV2", &[xs, idx, zero], vec![])?;
    Ok(vec![Some(ctx.op1("Reshape", &[x, dims], vec![])?)])
}

/// Split sizes (input or old attribute): SplitV; equal parts: Split; opset 18 num_outputs with
/// a smaller last chunk: SplitV with static sizes.
fn split(ctx: &mut NodeCtx<'_>) -> Out {
    known_attrs_old(ctx, &["axis", "num_outputs"], &[("split", 13)])?;
    let x = ctx.input(0)?;
    let dims = ctx.input_dims(0)?;
    let mut axis = ctx.attr_i("axis", 0)?;
    if let Some(d) = &dims {
        axis = norm_axis(axis, d.len(), "Split axis")? as i64;
    }
    let n = ctx.num_outputs();
    if n == 0 {
        return Err(Error::tr("Split has no outputs"));
    }
    let num_outputs = ctx.attr("num_outputs")?.is_some();
    if num_outputs {
        let k = ctx.attr_i("num_outputs", 0)?;
        if k != n as i64 {
            return Err(Error::tr(format!(
                "Split: num_outputs {k} but the node has {n} outputs"
            )));
        }
        if ctx.has_input(1) {
            return Err(Error::tr("Split: both num_outputs and split are given"));
        }
    }
    let dim = dims
        .as_ref()
        .and_then(|d| d.get(axis as usize).copied())
        .filter(|&v| v >= 0);
    let outs = if ctx.has_input(1) {
        let s = ctx.input(1)?;
        let s = ctx.cast(s, I64)?;
        if let Some(t) = ctx.const_value(s) {
            let v = t.to_i64_vec()?;
            if v.len() != n {
                return Err(Error::tr(format!(
                    "Split: {} sizes for {n} outputs",
                    v.len()
                )));
            }
            if let Some(d) = dim {
                if v.iter().sum::<i64>() != d {
                    return Err(Error::tr(format!(
                        "Split: sizes {v:?} do not add up to dim {d}"
                    )));
                }
            }
        }
        let a = ctx.const_i64(&[axis], &[])?;
        ctx.op_with_counts(
            "SplitV",
            vec![vec![Some(x)], vec![Some(s)], vec![Some(a)]],
            vec![("num_split", AttrValue::Int(n as i64))],
            &[("y", n)],
        )?
    } else {
        let uneven = match dim {
            Some(d) => d % n as i64 != 0,
            None => false,
        };
        if uneven {
            let d = dim.unwrap_or(0);
            if !num_outputs {
                return Err(Error::tr(format!(
                    "Split: dim {d} does not divide into {n} equal parts"
                )));
            }
            let c = (d + n as i64 - 1) / n as i64;
            let mut sizes = vec![c; n];
            let last = d - c * (n as i64 - 1);
            if last < 0 {
                return Err(Error::unsupported(format!(
                    "Split: dim {d} cannot give {n} outputs of ceil size {c}"
                )));
            }
            sizes[n - 1] = last;
            let s = ctx.const_i64(&sizes, &[n as i64])?;
            let a = ctx.const_i64(&[axis], &[])?;
            ctx.op_with_counts(
                "SplitV",
                vec![vec![Some(x)], vec![Some(s)], vec![Some(a)]],
                vec![("num_split", AttrValue::Int(n as i64))],
                &[("y", n)],
            )?
        } else {
            if dim.is_none() && num_outputs {
                return Err(Error::unsupported(
                    "Split: num_outputs needs the split dim at import (the last chunk may be smaller)",
                ));
            }
            let a = ctx.const_i32(&[axis as i32], &[])?;
            ctx.op_with_counts(
                "Split",
                vec![vec![Some(a)], vec![Some(x)]],
                vec![("num_split", AttrValue::Int(n as i64))],
                &[("y", n)],
            )?
        }
    };
    Ok(outs.into_iter().map(Some).collect())
}

// ---------------------------------------------------------------------------------------------
// Pad, ConstantOfShape, CenterCropPad
// ---------------------------------------------------------------------------------------------

/// PadV3 with ONNX's pads layout (all begins, then all ends: paddings_contiguous=false);
/// wrap is PadV3's circular mode; negative pads crop.
fn pad(ctx: &mut NodeCtx<'_>) -> Out {
    known_attrs_old(
        ctx,
        &["mode"],
        &[("pads", 11), ("paddings", 11), ("value", 11)],
    )?;
    let x = ctx.input(0)?;
    let mode = ctx.attr_s("mode", "constant")?;
    let ge_mode = match mode.as_str() {
        "constant" => "constant",
        "reflect" => "reflect",
        "edge" => "edge",
        "wrap" => "circular",
        m => return Err(Error::unsupported(format!("Pad mode {m:?}"))),
    };
    let pads = ctx.input(1)?;
    let pads = ctx.cast(pads, I64)?;
    let runtime_axes = ctx.has_input(3) && ctx.const_input(3).is_none();
    let pads = match if runtime_axes {
        None
    } else {
        ctx.const_ints(3, "axes")?
    } {
        None if runtime_axes => {
            let r = ctx.input_rank(0)?;
            let ax = ctx.runtime_axes(3, r)?;
            let rr = ctx.const_i64(&[r as i64], &[])?;
            let ends = ctx.op1("Add", &[ax, rr], vec![])?;
            let zero = ctx.const_i64(&[0], &[])?;
            let pos = ctx.op(
                "ConcatV2",
                vec![vec![Some(ax), Some(ends)], vec![Some(zero)]],
                vec![],
            )?[0];
            ctx.scatter_runtime(I64, &vec![0.0; 2 * r], pos, pads)?
        }
        None => pads,
        Some(axes) => {
            let r = ctx.input_rank(0)?;
            let ax = norm_axes(&axes, r, "Pad axes")?;
            // [b(axes), e(axes)] -> [b(0..r), e(0..r)]: positions r + a for the ends.
            let mut full_axes = ax.clone();
            full_axes.extend(ax.iter().map(|a| a + r));
            ctx.scatter_axes(pads, &full_axes, 2 * r, &[0.0])?
        }
    };
    let value = if mode == "constant" {
        match ctx.opt_input(2)? {
            Some(v) => {
                let dt = ctx.desc(x)?.dtype;
                let v = ctx.cast(v, dt)?;
                let scalar = ctx.const_i64(&[], &[0])?;
                Some(ctx.op1("Reshape", &[v, scalar], vec![])?)
            }
            None => None,
        }
    } else {
        None
    };
    let y = ctx.op(
        "PadV3",
        vec![vec![Some(x)], vec![Some(pads)], vec![value]],
        vec![
            ("mode", AttrValue::String(ge_mode.into())),
            ("paddings_contiguous", AttrValue::Bool(false)),
        ],
    )?[0];
    Ok(vec![Some(y)])
}

fn constant_of_shape(ctx: &mut NodeCtx<'_>) -> Out {
    known_attrs(ctx, &["value"])?;
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

/// Per axis: a centred StridedSlice crop and a centred constant-0 PadV3, the amounts computed
/// from Shape(X) and the target shape at run time (X's rank must be known).
fn center_crop_pad(ctx: &mut NodeCtx<'_>) -> Out {
    known_attrs(ctx, &["axes"])?;
    let x = ctx.input(0)?;
    let r = ctx.input_rank(0)?;
    let axes = match ctx.attr_ints("axes")? {
        Some(a) => norm_axes(&a, r, "CenterCropPad axes")?,
        None => (0..r).collect(),
    };
    if let Some(n) = ctx.vec_len(1)? {
        if n != axes.len() {
            return Err(Error::tr(format!(
                "CenterCropPad: shape has {n} entries for {} axes",
                axes.len()
            )));
        }
    }
    let t = ctx.input(1)?;
    let t = ctx.cast(t, I64)?;
    let xs = ctx.shape_i64(x)?;
    let ax: Vec<i64> = axes.iter().map(|&a| a as i64).collect();
    let d = ctx.gather_const(xs, &ax)?;
    let (zero, two) = (ctx.const_i64(&[0], &[])?, ctx.const_i64(&[2], &[])?);
    let over = ctx.op1("Sub", &[d, t], vec![])?;
    let crop = ctx.op1("Maximum", &[over, zero], vec![])?;
    let cb = ctx.op1("FloorDiv", &[crop, two], vec![])?;
    let keep = ctx.op1("Minimum", &[t, d], vec![])?;
    let ce = ctx.op1("Add", &[cb, keep], vec![])?;
    let under = ctx.op1("Sub", &[t, d], vec![])?;
    let padn = ctx.op1("Maximum", &[under, zero], vec![])?;
    let pb = ctx.op1("FloorDiv", &[padn, two], vec![])?;
    let pe = ctx.op1("Sub", &[padn, pb], vec![])?;
    let b = ctx.scatter_axes(cb, &axes, r, &[0.0])?;
    let e = ctx.scatter_axes(ce, &axes, r, &[0.0])?;
    let st = ctx.const_i64(&vec![1; r], &[r as i64])?;
    let mut mask = 0i64;
    for dd in 0..r.min(63) {
        if !axes.contains(&dd) {
            mask |= 1 << dd;
        }
    }
    let y = ctx.op1(
        "StridedSlice",
        &[x, b, e, st],
        vec![
            ("begin_mask", AttrValue::Int(mask)),
            ("end_mask", AttrValue::Int(mask)),
        ],
    )?;
    let zero0 = ctx.const_i64(&[0], &[])?;
    let pv = ctx.op(
        "ConcatV2",
        vec![vec![Some(pb), Some(pe)], vec![Some(zero0)]],
        vec![],
    )?[0];
    let mut pos = axes.clone();
    pos.extend(axes.iter().map(|a| a + r));
    let pads = scatter_fill(ctx, pv, &pos, &vec![0.0; 2 * r])?;
    let y = ctx.op1(
        "PadV3",
        &[y, pads],
        vec![
            ("mode", AttrValue::String("constant".into())),
            ("paddings_contiguous", AttrValue::Bool(false)),
        ],
    )?;
    Ok(vec![Some(y)])
}

// ---------------------------------------------------------------------------------------------
// GatherElements, GatherND, ScatterND
// ---------------------------------------------------------------------------------------------

/// `idx` (int64) with negative entries wrapped by `size` (a broadcastable int64 port):
/// nothing is added when `idx` is a constant without negative entries.
fn wrap_negative(ctx: &mut NodeCtx<'_>, idx: OutPort, size: OutPort) -> Result<OutPort> {
    if let Some(t) = ctx.const_value(idx) {
        if t.to_i64_vec()?.iter().all(|&v| v >= 0) {
            return Ok(idx);
        }
    }
    let zero = ctx.const_i64(&[0], &[])?;
    let neg = ctx.op1("Less", &[idx, zero], vec![])?;
    let up = ctx.op1("Add", &[idx, size], vec![])?;
    ctx.op1("SelectV2", &[neg, up, idx], vec![])
}

fn gather_elements(ctx: &mut NodeCtx<'_>) -> Out {
    known_attrs(ctx, &["axis"])?;
    let x = ctx.input(0)?;
    let r = ctx.input_rank(0)?;
    let axis = norm_axis(ctx.attr_i("axis", 0)?, r, "GatherElements axis")?;
    let idx = ctx.input(1)?;
    let idx = ctx.cast(idx, I64)?;
    let s = ctx.shape_i64(x)?;
    let d = ctx.gather_const(s, &[axis as i64])?;
    let idx = wrap_negative(ctx, idx, d)?;
    let y = ctx.op1(
        "GatherElements",
        &[x, idx],
        vec![("dim", AttrValue::Int(axis as i64))],
    )?;
    Ok(vec![Some(y)])
}

/// A constant [B1, .., Bb, I.., b] of the batch coordinates of every index position (indices
/// of static shape `idims` = [B1, .., Bb, I.., k]).
fn batch_coords(idims: &[i64], b: usize) -> Result<Tensor> {
    let outer = &idims[..idims.len() - 1];
    let mut table = outer.to_vec();
    table.push(b as i64);
    super::util::const_elems(&table, "GatherND batch coordinates")?;
    let n: i64 = outer.iter().product();
    let mut vals = Vec::with_capacity((n as usize).saturating_mul(b));
    for flat in 0..n {
        let mut rem = flat;
        let mut coord = vec![0i64; outer.len()];
        for (j, &d) in outer.iter().enumerate().rev() {
            coord[j] = if d > 0 { rem % d } else { 0 };
            rem = if d > 0 { rem / d } else { 0 };
        }
        vals.extend_from_slice(&coord[..b]);
    }
    let mut shape = outer.to_vec();
    shape.push(b as i64);
    Ok(Tensor::from_values(&vals, shape)?)
}

/// GatherNd (negative indices supported); batch_dims > 0: the batch coordinates are
/// prepended to the indices (static index shape).
fn gather_nd(ctx: &mut NodeCtx<'_>) -> Out {
    known_attrs(ctx, &["batch_dims"])?;
    let x = ctx.input(0)?;
    let idx = ctx.input(1)?;
    let idx = ctx.cast(idx, I64)?;
    let b = ctx.attr_i("batch_dims", 0)?;
    let idx = if b == 0 {
        idx
    } else {
        let idims = ctx.static_dims(1, "batch_dims > 0")?;
        if b < 0 || b as usize >= idims.len() {
            return Err(Error::tr(format!(
                "GatherND: batch_dims {b} is out of range for indices of rank {}",
                idims.len()
            )));
        }
        let c = batch_coords(&idims, b as usize)?;
        let c = ctx.constant(c)?;
        let last = ctx.const_i64(&[-1], &[])?;
        ctx.op(
            "ConcatV2",
            vec![vec![Some(c), Some(idx)], vec![Some(last)]],
            vec![],
        )?[0]
    };
    let y = ctx.op1(
        "GatherNd",
        &[x, idx],
        vec![("negative_index_support", AttrValue::Bool(true))],
    )?;
    Ok(vec![Some(y)])
}

/// reduction none: ScatterNdUpdate on a TensorMove copy of data; add/mul/max/min: flat
/// element indices and ScatterElements(axis 0) on the flattened data (static data shape).
/// Negative indices are wrapped by the data dims.
fn scatter_nd(ctx: &mut NodeCtx<'_>) -> Out {
    known_attrs(ctx, &["reduction"])?;
    let data = ctx.input(0)?;
    let k = match ctx.input_dims(1)?.and_then(|d| d.last().copied()) {
        Some(k) if k >= 0 => k as usize,
        _ => {
            return Err(Error::unsupported(
                "ScatterND: the last dim of indices (the index depth) must be known at import",
            ))
        }
    };
    if let Some(r) = ctx.input_dims(0)?.map(|d| d.len()) {
        if k > r {
            return Err(Error::tr(format!(
                "ScatterND: index depth {k} exceeds the data rank {r}"
            )));
        }
    }
    let idx = ctx.input(1)?;
    let idx = ctx.cast(idx, I64)?;
    let xs = ctx.shape_i64(data)?;
    let kk: Vec<i64> = (0..k as i64).collect();
    let size = ctx.gather_const(xs, &kk)?;
    let idx = wrap_negative(ctx, idx, size)?;
    let upd = ctx.input(2)?;
    let reduction = ctx.attr_s("reduction", "none")?;
    let y = match reduction.as_str() {
        "none" => {
            let copy = ctx.op1("TensorMove", &[data], vec![])?;
            ctx.op1("ScatterNdUpdate", &[copy, idx, upd], vec![])?
        }
        "add" | "mul" | "max" | "min" => {
            let dims = ctx.static_dims(0, "ScatterND with a reduction flattens data")?;
            // Element strides of data; the flat offset of each index tuple.
            let mut strides = vec![1i64; dims.len()];
            for i in (0..dims.len().saturating_sub(1)).rev() {
                strides[i] = strides[i + 1] * dims[i + 1];
            }
            let slice: i64 = dims[k..].iter().product();
            let st = ctx.const_i64(&strides[..k], &[k as i64])?;
            let prod = ctx.op1("Mul", &[idx, st], vec![])?;
            let axis = ctx.const_i64(&[-1], &[1])?;
            let base = ctx.op1(
                "ReduceSum",
                &[prod, axis],
                vec![("keep_dims", AttrValue::Bool(true))],
            )?;
            let within: Vec<i64> = (0..slice).collect();
            let within = ctx.const_i64(&within, &[slice])?;
            let flat = ctx.op1("Add", &[base, within], vec![])?;
            let m1 = ctx.const_i64(&[-1], &[1])?;
            let flat = ctx.op1("Reshape", &[flat, m1], vec![])?;
            let fu = ctx.op1("Reshape", &[upd, m1], vec![])?;
            let fd = ctx.op1("Reshape", &[data, m1], vec![])?;
            let r = ctx.op1(
                "ScatterElements",
                &[fd, flat, fu],
                vec![
                    ("axis", AttrValue::Int(0)),
                    ("reduction", AttrValue::String(reduction.clone())),
                ],
            )?;
            let shp = ctx.const_i64(&dims, &[dims.len() as i64])?;
            ctx.op1("Reshape", &[r, shp], vec![])?
        }
        other => return Err(Error::unsupported(format!("ScatterND reduction {other:?}"))),
    };
    Ok(vec![Some(y)])
}

// ---------------------------------------------------------------------------------------------
// OneHot, Compress, NonZero, TopK, Unique
// ---------------------------------------------------------------------------------------------

fn one_hot(ctx: &mut NodeCtx<'_>) -> Out {
    known_attrs(ctx, &["axis"])?;
    let idx = ctx.input(0)?;
    let r = ctx.input_rank(0)?;
    let axis = ctx.attr_i("axis", -1)?;
    let axis = norm_axis(axis, r + 1, "OneHot axis")? as i64;
    let depth = ctx.input(1)?;
    // A float depth is truncated to an integer, as ONNX does.
    let depth = ctx.cast(depth, I64)?;
    let scalar = ctx.const_i64(&[], &[0])?;
    let depth = ctx.op1("Reshape", &[depth, scalar], vec![])?;
    let idx = ctx.cast(idx, I64)?;
    let idx = wrap_negative(ctx, idx, depth)?;
    let values = ctx.input(2)?;
    let parts = ctx.op_with_counts(
        "Unpack",
        vec![vec![Some(values)]],
        vec![("num", AttrValue::Int(2)), ("axis", AttrValue::Int(0))],
        &[("y", 2)],
    )?;
    let (off, on) = (parts[0], parts[1]);
    let y = ctx.op1(
        "OneHot",
        &[idx, depth, on, off],
        vec![("axis", AttrValue::Int(axis))],
    )?;
    Ok(vec![Some(y)])
}

fn compress(ctx: &mut NodeCtx<'_>) -> Out {
    known_attrs(ctx, &["axis"])?;
    let x = ctx.input(0)?;
    let cond = ctx.input(1)?;
    let cond = ctx.cast(cond, DataType::BOOL)?;
    let (x, axis) = match ctx.attr("axis")? {
        Some(_) => {
            let r = ctx.input_rank(0)?;
            (
                x,
                norm_axis(ctx.attr_i("axis", 0)?, r, "Compress axis")? as i64,
            )
        }
        None => {
            let m1 = ctx.const_i64(&[-1], &[1])?;
            (ctx.op1("Reshape", &[x, m1], vec![])?, 0)
        }
    };
    let nz = ctx.op1("NonZero", &[cond], vec![])?;
    let m1 = ctx.const_i64(&[-1], &[1])?;
    let nz = ctx.op1("Reshape", &[nz, m1], vec![])?;
    let a = ctx.const_i64(&[axis], &[])?;
    Ok(vec![Some(ctx.op1("GatherV2", &[x, nz, a], vec![])?)])
}

fn non_zero(ctx: &mut NodeCtx<'_>) -> Out {
    known_attrs(ctx, &[])?;
    let x = ctx.input(0)?;
    if ctx.input_dims(0)?.is_some_and(|d| d.is_empty()) {
        // A scalar: ONNX gives [0, count] (the reference: [1, count] of zeros is numpy's
        // 1-D view); keep GE's rank-0 rule out of it.
        return Err(Error::unsupported("NonZero of a scalar"));
    }
    let y = ctx.op1("NonZero", &[x], vec![("transpose", AttrValue::Bool(true))])?;
    let y = ctx.cast(y, I64)?;
    Ok(vec![Some(y)])
}

fn top_k(ctx: &mut NodeCtx<'_>) -> Out {
    known_attrs_old(ctx, &["axis", "largest", "sorted"], &[("k", 10)])?;
    let x = ctx.input(0)?;
    let r = ctx.input_rank(0)?;
    let axis = norm_axis(ctx.attr_i("axis", -1)?, r, "TopK axis")?;
    let k = ctx.input(1)?;
    let k = ctx.cast(k, I64)?;
    let scalar = ctx.const_i64(&[], &[0])?;
    let k = ctx.op1("Reshape", &[k, scalar], vec![])?;
    let largest = ctx.attr_i("largest", 1)? != 0;
    // sorted=0 leaves the order unspecified: the sorted order is one of them.
    ctx.attr_i("sorted", 1)?;
    let outs = ctx.op(
        "TopKV2",
        vec![vec![Some(x)], vec![Some(k)]],
        vec![
            ("dim", AttrValue::Int(axis as i64)),
            ("largest", AttrValue::Bool(largest)),
            ("sorted", AttrValue::Bool(true)),
            ("indices_dtype", dtype_attr(I64)),
        ],
    )?;
    let idx = ctx.cast(outs[1], I64)?;
    Ok(vec![Some(outs[0]), Some(idx)])
}

/// Without axis: UniqueWithCountsAndSorting on the flattened input; the first-occurrence
/// indices are the ScatterElements-min of the positions by inverse index.
fn unique(ctx: &mut NodeCtx<'_>) -> Out {
    known_attrs(ctx, &["axis", "sorted"])?;
    if ctx.has_attr("axis") {
        return Err(Error::unsupported(
            "Unique with axis (GE's UniqueWithCountsAndSorting works on the flattened input)",
        ));
    }
    let sorted = ctx.attr_i("sorted", 1)? != 0;
    let x = ctx.input(0)?;
    let m1 = ctx.const_i64(&[-1], &[1])?;
    let flat = ctx.op1("Reshape", &[x, m1], vec![])?;
    let outs = ctx.op(
        "UniqueWithCountsAndSorting",
        vec![vec![Some(flat)]],
        vec![
            ("return_inverse", AttrValue::Bool(true)),
            ("return_counts", AttrValue::Bool(true)),
            ("sorted", AttrValue::Bool(true)),
            ("out_idx", AttrValue::Type(I64)),
        ],
    )?;
    let (y, inv, counts) = (outs[0], outs[1], outs[2]);
    let inv = ctx.cast(inv, I64)?;
    let counts = ctx.cast(counts, I64)?;
    let first = if ctx.output_used(1) || !sorted {
        // first[j] = min{i : inv[i] == j}: ScatterElements(min) of 0..n into a big fill.
        let n = ctx.op1("Size", &[flat], vec![("dtype", dtype_attr(I64))])?;
        let (z, one) = (ctx.const_i64(&[0], &[])?, ctx.const_i64(&[1], &[])?);
        let pos = ctx.op1("Range", &[z, n, one], vec![])?;
        let u = ctx.op1("Shape", &[y], vec![("dtype", dtype_attr(I64))])?;
        let init = ctx.op1("Fill", &[u, n], vec![])?;
        Some(ctx.op1(
            "ScatterElements",
            &[init, inv, pos],
            vec![
                ("axis", AttrValue::Int(0)),
                ("reduction", AttrValue::String("min".into())),
            ],
        )?)
    } else {
        None
    };
    let (Some(first), false) = (first, sorted) else {
        return Ok(vec![Some(y), first, Some(inv), Some(counts)]);
    };
    // sorted=0: the unique values in order of first occurrence: perm = argsort(first).
    let k = ctx.op1("Size", &[first], vec![("dtype", dtype_attr(I64))])?;
    let tk = ctx.op(
        "TopKV2",
        vec![vec![Some(first)], vec![Some(k)]],
        vec![
            ("dim", AttrValue::Int(0)),
            ("largest", AttrValue::Bool(false)),
            ("sorted", AttrValue::Bool(true)),
            ("indices_dtype", dtype_attr(I64)),
        ],
    )?;
    let (first, perm) = (tk[0], ctx.cast(tk[1], I64)?);
    let zero = ctx.const_i64(&[0], &[])?;
    let y = ctx.op1("GatherV2", &[y, perm, zero], vec![])?;
    let counts = ctx.op1("GatherV2", &[counts, perm, zero], vec![])?;
    // The new position of each sorted unique: the inverse permutation.
    let one = ctx.const_i64(&[1], &[])?;
    let pos = ctx.op1("Range", &[zero, k, one], vec![])?;
    let ps = ctx.op1("Shape", &[perm], vec![("dtype", dtype_attr(I64))])?;
    let base = ctx.op1("Fill", &[ps, zero], vec![])?;
    let invperm = ctx.op1(
        "ScatterElements",
        &[base, perm, pos],
        vec![("axis", AttrValue::Int(0))],
    )?;
    let inv = ctx.op1("GatherV2", &[invperm, inv, zero], vec![])?;
    Ok(vec![Some(y), Some(first), Some(inv), Some(counts)])
}

// ---------------------------------------------------------------------------------------------
// EyeLike, Dropout, ReverseSequence
// ---------------------------------------------------------------------------------------------

/// A constant (the input's shape is static): ones on diagonal k.
fn eye_like(ctx: &mut NodeCtx<'_>) -> Out {
    known_attrs(ctx, &["dtype", "k"])?;
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

/// Inference behaviour: the output is the input, the mask all true.
fn dropout(ctx: &mut NodeCtx<'_>) -> Out {
    known_attrs_old(
        ctx,
        &["seed"],
        &[("ratio", 12), ("is_test", 7), ("consumed_inputs", 6)],
    )?;
    let zero_ratio = match ctx.const_input(1) {
        Some(t) => t.to_f64_vec()?.iter().all(|&v| v == 0.0),
        None => false,
    };
    let training = match ctx.const_input(2) {
        _ if zero_ratio => false,
        Some(t) => t.to_i64_vec()?.iter().any(|&v| v != 0),
        None if ctx.has_input(2) => {
            return Err(Error::unsupported(
                "Dropout: training_mode must be a constant (training with a non-zero ratio draws random masks)",
            ))
        }
        None => ctx.opset < 7 && ctx.attr_i("is_test", 0)? == 0,
    };
    if training {
        let ratio = match ctx.const_input(1) {
            Some(t) => t.to_f64_vec()?.first().copied().unwrap_or(0.5),
            None if ctx.has_input(1) => {
                return Err(Error::unsupported(
                    "Dropout in training mode with a run-time ratio",
                ))
            }
            None => 0.5,
        };
        if ratio != 0.0 {
            return Err(Error::unsupported(
                "Dropout in training mode with a non-zero ratio (random masks)",
            ));
        }
    }
    let x = ctx.input(0)?;
    let y = ctx.op1("Identity", &[x], vec![])?;
    let mask = if ctx.output_used(1) {
        let s = ctx.shape_i64(x)?;
        let v = if ctx.opset >= 10 {
            ctx.constant(Tensor::scalar(true))?
        } else {
            let dt = ctx.desc(x)?.dtype;
            ctx.const_of(dt, &[1.0], &[])?
        };
        Some(ctx.op1("Fill", &[s, v], vec![])?)
    } else {
        None
    };
    Ok(vec![Some(y), mask])
}

/// index[t, b] = len[b] - 1 - t where t < len[b], else t; GatherElements along time_axis.
fn reverse_sequence(ctx: &mut NodeCtx<'_>) -> Out {
    known_attrs(ctx, &["batch_axis", "time_axis"])?;
    let x = ctx.input(0)?;
    let dims = ctx.input_dims(0)?.ok_or_else(|| {
        Error::unsupported("ReverseSequence: the rank of input must be known at import")
    })?;
    let r = dims.len();
    if r < 2 {
        return Err(Error::tr("ReverseSequence needs an input of rank >= 2"));
    }
    let ta = ctx.attr_i("time_axis", 0)?;
    let ba = ctx.attr_i("batch_axis", 1)?;
    let (ta, ba) = match (ta, ba) {
        (0, 1) => (0usize, 1usize),
        (1, 0) => (1, 0),
        _ => {
            return Err(Error::tr(format!(
                "ReverseSequence: time_axis {ta} and batch_axis {ba} must be 0 and 1"
            )))
        }
    };
    let t = dims[ta];
    if t < 0 {
        return Err(Error::unsupported(
            "ReverseSequence: the time dim must be known at import",
        ));
    }
    let tv: Vec<i64> = (0..t).collect();
    // t along time_axis, lens along batch_axis, 1 elsewhere (rank r).
    let mut tshape = vec![1i64; r];
    tshape[ta] = t;
    let tp = ctx.const_i64(&tv, &tshape)?;
    let lens = ctx.input(1)?;
    let lens = ctx.cast(lens, I64)?;
    let mut lshape = vec![1i64; r];
    lshape[ba] = -1;
    let ls = ctx.const_i64(&lshape, &[r as i64])?;
    let lens = ctx.op1("Reshape", &[lens, ls], vec![])?;
    let lt = ctx.op1("Less", &[tp, lens], vec![])?;
    let one = ctx.const_i64(&[1], &[])?;
    let lm1 = ctx.op1("Sub", &[lens, one], vec![])?;
    let rev = ctx.op1("Sub", &[lm1, tp], vec![])?;
    let idx = ctx.op1("SelectV2", &[lt, rev, tp], vec![])?;
    let s = ctx.shape_i64(x)?;
    let idx = ctx.op1("BroadcastTo", &[idx, s], vec![])?;
    let y = ctx.op1(
        "GatherElements",
        &[x, idx],
        vec![("dim", AttrValue::Int(ta as i64))],
    )?;
    Ok(vec![Some(y)])
}

// ---------------------------------------------------------------------------------------------
// Resize, Upsample
// ---------------------------------------------------------------------------------------------

/// GE's Resize is ONNX Resize (opsets 11-13). Opset 18's axes are resolved into full-rank
/// scales/sizes/roi, keep_aspect_ratio_policy into sizes (static shapes); antialias and
/// half_pixel_symmetric are refused.
fn resize(ctx: &mut NodeCtx<'_>) -> Out {
    known_attrs(
        ctx,
        &[
            "mode",
            "coordinate_transformation_mode",
            "cubic_coeff_a",
            "exclude_outside",
            "extrapolation_value",
            "nearest_mode",
            "antialias",
            "axes",
            "keep_aspect_ratio_policy",
        ],
    )?;
    let old = ctx.opset < 11;
    let mode = ctx.attr_s("mode", "nearest")?;
    let mode = match mode.as_str() {
        "nearest" | "linear" | "cubic" => mode,
        "bilinear" if old => "linear".to_string(),
        m => return Err(Error::unsupported(format!("Resize mode {m:?}"))),
    };
    if ctx.attr_i("antialias", 0)? != 0 {
        return Err(Error::unsupported(
            "Resize with antialias=1 (GE's Resize has no antialiasing filter)",
        ));
    }
    let coord = if old {
        "asymmetric".to_string()
    } else {
        ctx.attr_s("coordinate_transformation_mode", "half_pixel")?
    };
    if !matches!(
        coord.as_str(),
        "half_pixel"
            | "pytorch_half_pixel"
            | "align_corners"
            | "asymmetric"
            | "tf_half_pixel_for_nn"
            | "tf_crop_and_resize"
    ) {
        return Err(Error::unsupported(format!(
            "Resize coordinate_transformation_mode {coord:?}"
        )));
    }
    let x = ctx.input(0)?;
    let dims = ctx.input_dims(0)?;
    let rank = dims.as_ref().map(Vec::len);
    let axes = match ctx.attr_ints("axes")? {
        Some(a) => {
            let r = rank
                .ok_or_else(|| Error::unsupported("Resize: axes need the rank of X at import"))?;
            Some(norm_axes(&a, r, "Resize axes")?)
        }
        None => None,
    };
    // Empty inputs count as absent.
    let present = |ctx: &NodeCtx<'_>, i: usize| -> Result<bool> {
        if !ctx.has_input(i) {
            return Ok(false);
        }
        Ok(ctx.input_desc(i)?.shape.num_elements() != Some(0))
    };
    let has_scales = present(ctx, 2)?;
    let has_sizes = present(ctx, 3)?;
    if has_scales == has_sizes {
        return Err(Error::tr(
            "Resize needs exactly one of scales and sizes (non-empty)",
        ));
    }
    let mut nearest = ctx.attr_s("nearest_mode", "round_prefer_floor")?;
    if old && mode == "nearest" {
        // Opsets before 11 (and Upsample): asymmetric coordinates, floor when upsampling
        // (onnxruntime's rule; it rounds up when downsampling).
        let sc = ctx
            .const_floats(2, "scales")?
            .ok_or_else(|| Error::unsupported("Resize-10 nearest: scales must be a constant"))?;
        nearest = if sc.iter().all(|&s| s >= 1.0) {
            "floor".into()
        } else if sc.iter().all(|&s| s <= 1.0) {
            "ceil".into()
        } else {
            return Err(Error::unsupported(
                "Resize-10 nearest with both up- and downsampled dims",
            ));
        };
    }
    let policy = ctx.attr_s("keep_aspect_ratio_policy", "stretch")?;
    let mut scales = None;
    let mut sizes = None;
    if has_scales {
        let s = ctx.input(2)?;
        let s = ctx.cast(s, DataType::FLOAT)?;
        scales = Some(match (&axes, rank) {
            (Some(ax), Some(r)) => ctx.scatter_axes(s, ax, r, &[1.0])?,
            _ => s,
        });
    } else {
        let s = ctx.input(3)?;
        let s = ctx.cast(s, I64)?;
        if policy != "stretch" {
            // Static: the scale is the min (not_larger) / max (not_smaller) ratio over the
            // axes, the sizes round(scale * dim); GE's Resize derives the coordinate scale
            // from sizes, so the two must agree: use scales when floor and round match.
            let d = ctx.static_dims(0, "keep_aspect_ratio_policy")?;
            let want = ctx
                .const_ints(3, "sizes")?
                .ok_or_else(|| Error::tr("Resize: sizes missing"))?;
            let ax: Vec<usize> = axes.clone().unwrap_or_else(|| (0..d.len()).collect());
            if want.len() != ax.len() {
                return Err(Error::tr("Resize: sizes has not one entry per axis"));
            }
            let ratios = ax.iter().zip(&want).map(|(&a, &w)| w as f64 / d[a] as f64);
            let scale = match policy.as_str() {
                "not_larger" => ratios.fold(f64::INFINITY, f64::min),
                "not_smaller" => ratios.fold(f64::NEG_INFINITY, f64::max),
                p => {
                    return Err(Error::tr(format!(
                        "Resize: unknown keep_aspect_ratio_policy {p:?}"
                    )))
                }
            };
            let mut sc = vec![1f32; d.len()];
            for &a in &ax {
                let exact = (scale * d[a] as f64 + 0.5).floor();
                let floor = (d[a] as f64 * f64::from(scale as f32)).floor();
                if exact != floor {
                    return Err(Error::unsupported(format!(
                        "Resize keep_aspect_ratio_policy {policy:?}: size {exact} of dim {a} is \
                         not floor(dim * scale); GE's Resize cannot take both"
                    )));
                }
                sc[a] = scale as f32;
            }
            let t = Tensor::from_values(&sc, vec![d.len() as i64])?;
            scales = Some(ctx.constant(t)?);
        } else {
            sizes = Some(match (&axes, rank) {
                (Some(ax), Some(r)) => {
                    // Untouched axes keep X's dims: Concat([sizes, Shape(X)]) gathered.
                    let shp = ctx.shape_i64(x)?;
                    let axis0 = ctx.const_i64(&[0], &[])?;
                    let both = ctx.op(
                        "ConcatV2",
                        vec![vec![Some(s), Some(shp)], vec![Some(axis0)]],
                        vec![],
                    )?[0];
                    let n = ax.len() as i64;
                    let idx: Vec<i64> = (0..r)
                        .map(|d| match ax.iter().position(|&a| a == d) {
                            Some(k) => k as i64,
                            None => n + d as i64,
                        })
                        .collect();
                    ctx.gather_const(both, &idx)?
                }
                _ => s,
            });
        }
    }
    let roi = if coord == "tf_crop_and_resize" {
        let r = ctx
            .opt_input(1)?
            .ok_or_else(|| Error::tr("Resize: tf_crop_and_resize needs roi"))?;
        let r = ctx.cast(r, DataType::FLOAT)?;
        Some(match (&axes, rank) {
            (Some(ax), Some(rk)) => {
                let mut full = ax.clone();
                full.extend(ax.iter().map(|a| a + rk));
                // starts 0 and ends 1 for untouched axes.
                let fill: Vec<f64> = (0..2 * rk)
                    .map(|i| if i < rk { 0.0 } else { 1.0 })
                    .collect();
                scatter_fill(ctx, r, &full, &fill)?
            }
            _ => r,
        })
    } else {
        None
    };
    let y = ctx.op(
        "Resize",
        vec![vec![Some(x)], vec![roi], vec![scales], vec![sizes]],
        vec![
            ("mode", AttrValue::String(mode)),
            ("coordinate_transformation_mode", AttrValue::String(coord)),
            ("nearest_mode", AttrValue::String(nearest)),
            (
                "cubic_coeff_a",
                AttrValue::Float(ctx.attr_f("cubic_coeff_a", -0.75)?),
            ),
            (
                "exclude_outside",
                AttrValue::Int(ctx.attr_i("exclude_outside", 0)?),
            ),
            (
                "extrapolation_value",
                AttrValue::Float(ctx.attr_f("extrapolation_value", 0.0)?),
            ),
        ],
    )?[0];
    Ok(vec![Some(y)])
}

/// [`NodeCtx::scatter_axes`] with a per-position fill (`fill.len()` = the full length).
fn scatter_fill(ctx: &mut NodeCtx<'_>, v: OutPort, pos: &[usize], fill: &[f64]) -> Result<OutPort> {
    let dt = ctx.desc(v)?.dtype;
    let len = fill.len();
    if let Some(t) = ctx.const_value(v) {
        let vals = t.to_f64_vec()?;
        if vals.len() != pos.len() {
            return Err(Error::tr(format!(
                "{}: {} values for {} positions",
                ctx.op_type(),
                vals.len(),
                pos.len()
            )));
        }
        let mut full = fill.to_vec();
        for (k, &p) in pos.iter().enumerate() {
            full[p] = vals[k];
        }
        return ctx.const_of(dt, &full, &[len as i64]);
    }
    let n = pos.len() as i64;
    let f = ctx.const_of(dt, fill, &[len as i64])?;
    let axis0 = ctx.const_i64(&[0], &[])?;
    let both = ctx.op(
        "ConcatV2",
        vec![vec![Some(v), Some(f)], vec![Some(axis0)]],
        vec![],
    )?[0];
    let idx: Vec<i64> = (0..len)
        .map(|d| match pos.iter().position(|&a| a == d) {
            Some(k) => k as i64,
            None => n + d as i64,
        })
        .collect();
    ctx.gather_const(both, &idx)
}

/// Upsample (opsets 7-9): Resize-10's behaviour (the compatibility layer moved scales to
/// input 2).
fn upsample(ctx: &mut NodeCtx<'_>) -> Out {
    known_attrs_old(
        ctx,
        &["mode"],
        &[("scales", 9), ("height_scale", 7), ("width_scale", 7)],
    )?;
    if ctx.has_attr("height_scale") || ctx.has_attr("width_scale") {
        return Err(Error::unsupported(
            "Upsample-1 (height_scale/width_scale attributes)",
        ));
    }
    let x = ctx.input(0)?;
    let mode = ctx.attr_s("mode", "nearest")?;
    let mode = match mode.as_str() {
        "nearest" => "nearest",
        "linear" | "bilinear" => "linear",
        m => return Err(Error::unsupported(format!("Upsample mode {m:?}"))),
    };
    // Upsample's scales are >= 1 (the spec): nearest takes the floor of the source
    // coordinate (onnxruntime's rule when upsampling).
    if let Some(sc) = ctx.const_input(2) {
        if sc.to_f64_vec()?.iter().any(|&s| s < 1.0) {
            return Err(Error::tr("Upsample: scales must be >= 1"));
        }
    }
    let nearest = if mode == "nearest" {
        "floor"
    } else {
        "round_prefer_floor"
    };
    let s = ctx.input(2)?;
    let s = ctx.cast(s, DataType::FLOAT)?;
    let y = ctx.op(
        "Resize",
        vec![vec![Some(x)], vec![None], vec![Some(s)], vec![None]],
        vec![
            ("mode", AttrValue::String(mode.into())),
            (
                "coordinate_transformation_mode",
                AttrValue::String("asymmetric".into()),
            ),
            ("nearest_mode", AttrValue::String(nearest.into())),
        ],
    )?[0];
    Ok(vec![Some(y)])
}
