//! Shape manipulation: Reshape, Transpose, (Un)Squeeze, Flatten, Concat, Split, Slice, Pad,
//! CenterCropPad, ReverseSequence. (Expand, Tile, Trilu, DepthToSpace and SpaceToDepth are
//! direct entries of `ops/onnx_mapping.json`.)
//!
//! Shape-like inputs (Reshape's shape, Slice's starts/ends/steps, Pad's pads, Split's sizes,
//! Resize's scales/sizes) stay run-time tensors where the GE operator takes a tensor; only the
//! values GE takes as attributes (Squeeze/Unsqueeze axes, ...) must be constants.

use super::util::*;
use crate::error::{Error, Result};
use crate::translate::{NodeCtx, Registry};
use es_core::{AttrValue, OutPort};
use std::sync::Arc;

/// The family's translators.
pub(super) const TABLE: &[(&str, Translator)] = &[
    ("Reshape", reshape),
    ("Concat", concat),
    ("Slice", slice),
    ("Transpose", transpose),
    ("Unsqueeze", unsqueeze),
    ("Squeeze", squeeze),
    ("Split", split),
    ("Pad", pad),
    ("CenterCropPad", center_crop_pad),
    ("ReverseSequence", reverse_sequence),
    ("Flatten", flatten),
];

/// GE's Reshape copies the input dim for a 0 entry (ONNX allowzero=0). allowzero=1 with a 0
/// entry makes an empty tensor: a Fill of the (constant) shape.
fn reshape(ctx: &mut NodeCtx<'_>) -> Out {
    known_attrs_old(ctx, &["allowzero"], &[("consumed_inputs", 5)])?;
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
            None => return Ok(vec![Some(reshape_allowzero(ctx, x)?)]),
        }
    }
    let s = ctx.input(1)?;
    let s = ctx.cast(s, I64)?;
    Ok(vec![Some(ctx.op1("Reshape", &[x, s], vec![])?)])
}

/// allowzero=1 with a run-time shape `s`: a 0 entry must give a 0 dim, which GE's Reshape
/// (copying the input dim) cannot. The first 0 becomes -1 (the input is then empty, so it
/// resolves to 0), any other 0 becomes 1, and a Slice of sizes `s` cuts those to 0; a shape
/// without a 0 reaches Reshape unchanged (Slice's size -1 keeps a -1 entry's dim).
fn reshape_allowzero(ctx: &mut NodeCtx<'_>, x: OutPort) -> Result<OutPort> {
    let s = ctx.input(1)?;
    let s = ctx.cast(s, I64)?;
    let zero = ctx.const_i64(&[0], &[])?;
    let z = ctx.op1("Equal", &[s, zero], vec![])?;
    let z = ctx.cast(z, I64)?;
    let seen = ctx.op1("Cumsum", &[z, zero], vec![])?;
    let one = ctx.const_i64(&[1], &[])?;
    let first = ctx.op1("Equal", &[seen, one], vec![])?;
    let first = ctx.cast(first, I64)?;
    let first = ctx.op1("Mul", &[first, z], vec![])?;
    // s + z - 2 * first: the first 0 -> -1, the other 0s -> 1.
    let two = ctx.const_i64(&[2], &[])?;
    let first2 = ctx.op1("Mul", &[first, two], vec![])?;
    let t = ctx.op1("Add", &[s, z], vec![])?;
    let s2 = ctx.op1("Sub", &[t, first2], vec![])?;
    let r = ctx.op1("Reshape", &[x, s2], vec![])?;
    let offsets = ctx.op1("ZerosLike", &[s], vec![])?;
    ctx.op1("Slice", &[r, offsets, s], vec![])
}

fn concat(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["axis"])?;
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
    ctx.known_attrs(&["perm"])?;
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

/// GE's StridedSliceV2 (as GE's ONNX plugin maps Slice; every dtype, bool included) with full
/// begin/end/strides: untouched axes get begin/end mask bits. Clamping of out-of-range
/// starts/ends is the run-time kernel's (TensorFlow's, as numpy and the ONNX reference).
fn slice(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&[])?;
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
        let ends = ctx.scatter_axis0(big, ax, ends, None)?;
        let steps = match steps {
            Some(s) => s,
            None => ctx.const_i64(&vec![1; n], &[n as i64])?,
        };
        let st = ctx.scatter_runtime(I64, &vec![1.0; r], ax, steps)?;
        let b = onnx_starts(ctx, x, b, true)?;
        let y = strided_slice_v2(ctx, x, [b, ends, st], 0)?;
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
            (onnx_starts(ctx, x, starts, false)?, ends, strides, 0i64)
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
            let b = onnx_starts(ctx, x, b, true)?;
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
    let y = strided_slice_v2(ctx, x, [begin, end, strides], mask)?;
    Ok(vec![Some(y)])
}

/// StridedSliceV2 of `x` by begin/end/strides (no axes input: they cover the leading dims),
/// `mask` as begin_mask and end_mask.
fn strided_slice_v2(
    ctx: &mut NodeCtx<'_>,
    x: OutPort,
    [begin, end, strides]: [OutPort; 3],
    mask: i64,
) -> Result<OutPort> {
    let ins = vec![
        vec![Some(x)],
        vec![Some(begin)],
        vec![Some(end)],
        vec![None],
        vec![Some(strides)],
    ];
    let masks = vec![
        ("begin_mask", AttrValue::Int(mask)),
        ("end_mask", AttrValue::Int(mask)),
    ];
    let outs = ctx.op("StridedSliceV2", ins, masks)?;
    outs.first()
        .copied()
        .ok_or_else(|| Error::tr("internal: StridedSliceV2 has no output"))
}

/// ONNX's starts for StridedSlice: `max(start, -dim)` per sliced dim. ONNX clamps a start
/// below -dim to 0 whatever the step; StridedSlice (TensorFlow's and numpy's rule) clamps it
/// to -1 for a negative step, which takes nothing. Ends need nothing: both rules clamp an end
/// below -dim to "through element 0" for a negative step and to 0 for a positive one.
/// `begin` covers dims 0.. of `x`: all of them when `full`, else a prefix of its own length.
/// Constant-folded when the starts are constant and the dims they name known (or the starts
/// are not below -1); otherwise Maximum(begin, -Shape(x)) at run time.
fn onnx_starts(ctx: &mut NodeCtx<'_>, x: OutPort, begin: OutPort, full: bool) -> Result<OutPort> {
    let dims = ctx.desc(x)?.shape;
    let dims = dims.rank().map(|_| dims.dims().to_vec());
    if let Some(b) = ctx.const_value(begin) {
        let b = b.to_i64_vec()?;
        if b.iter().all(|&v| v >= -1) {
            return Ok(begin);
        }
        if let Some(d) = dims.as_ref().filter(|d| d.len() >= b.len()) {
            if d[..b.len()]
                .iter()
                .zip(&b)
                .all(|(&d, &v)| d >= 0 || v >= -1)
            {
                let c: Vec<i64> = b
                    .iter()
                    .zip(d)
                    .map(|(&v, &d)| if d >= 0 { v.max(-d) } else { v })
                    .collect();
                return ctx.const_i64(&c, &[c.len() as i64]);
            }
        }
    }
    let shape = ctx.shape_i64(x)?;
    let shape = if full {
        shape
    } else {
        let n = ctx.shape_i64(begin)?;
        let zero = ctx.const_i64(&[0], &[1])?;
        let one = ctx.const_i64(&[1], &[1])?;
        ctx.op1("StridedSlice", &[shape, zero, n, one], vec![])?
    };
    let neg = ctx.op1("Neg", &[shape], vec![])?;
    ctx.op1("Maximum", &[begin, neg], vec![])
}

// ---------------------------------------------------------------------------------------------
// DepthToSpace, SpaceToDepth
// ---------------------------------------------------------------------------------------------

/// DepthToSpace and SpaceToDepth with blocksize 1 are identities ONNX allows and GE's
/// operators refuse (block_size >= 2): Identity, after the checks of the attributes and the
/// rank. Other sizes keep the table's direct translation (registered before).
pub(crate) fn register_block_ops(r: &mut Registry) {
    for op in ["DepthToSpace", "SpaceToDepth"] {
        let Some(inner) = r.get("", op).cloned() else {
            continue;
        };
        let translate = move |ctx: &mut NodeCtx<'_>| -> Out {
            if op == "SpaceToDepth" && ctx.has_attr("mode") {
                return space_to_depth_mode(ctx);
            }
            if ctx.attr_i("blocksize", 0)? != 1 {
                return inner.translate(ctx);
            }
            let mode = op == "DepthToSpace";
            ctx.known_attrs(if mode {
                &["blocksize", "mode"]
            } else {
                &["blocksize"]
            })?;
            if mode {
                let m = ctx.attr_s("mode", "DCR")?;
                if m != "DCR" && m != "CRD" {
                    return Err(Error::tr(format!(
                        "DepthToSpace: mode '{m}' is not DCR or CRD"
                    )));
                }
            }
            let x = ctx.input(0)?;
            if let Some(r) = ctx.input_dims(0)?.map(|d| d.len()).filter(|&r| r != 4) {
                return Err(Error::tr(format!("{op}: the input has rank {r}, not 4")));
            }
            one(ctx.op1("Identity", &[x], vec![])?)
        };
        r.register(op, Arc::new(translate));
    }
}

/// SpaceToDepth-28 with its `mode`: DCR is GE's SpaceToDepth (channel `k * C + c` for block
/// offset `k` and input channel `c`); CRD puts the block offsets inside each channel
/// (`c * bs² + k`), a GatherV2 of GE's result along the channels (C known at import).
fn space_to_depth_mode(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["blocksize", "mode"])?;
    let m = ctx.attr_s("mode", "DCR")?;
    if m != "DCR" && m != "CRD" {
        return Err(Error::tr(format!(
            "SpaceToDepth: mode '{m}' is not DCR or CRD"
        )));
    }
    let bs = ctx.attr_i("blocksize", 0)?;
    if bs < 1 {
        return Err(Error::tr(format!(
            "SpaceToDepth: blocksize must be >= 1, got {bs}"
        )));
    }
    let dims = ctx.input_dims(0)?;
    if let Some(r) = dims.as_ref().map(|d| d.len()).filter(|&r| r != 4) {
        return Err(Error::tr(format!(
            "SpaceToDepth: the input has rank {r}, not 4"
        )));
    }
    let x = ctx.input(0)?;
    if bs == 1 {
        return one(ctx.op1("Identity", &[x], vec![])?);
    }
    let y = ctx.op1(
        "SpaceToDepth",
        &[x],
        vec![
            ("block_size", AttrValue::Int(bs)),
            ("data_format", st("NCHW")),
        ],
    )?;
    if m == "DCR" {
        return one(y);
    }
    let c = match dims.as_deref() {
        Some(&[_, c, _, _]) if c >= 0 => c,
        _ => {
            return Err(Error::unsupported(
                "SpaceToDepth mode CRD with a channel count unknown at import",
            ))
        }
    };
    let k = bs * bs;
    let total = c.checked_mul(k).filter(|&t| t <= MAX_CONST_ELEMS);
    let Some(total) = total else {
        return Err(Error::unsupported(format!(
            "SpaceToDepth mode CRD with {c} channels of blocksize {bs} (too many channels)"
        )));
    };
    let idx: Vec<i64> = (0..total).map(|j| (j % k) * c + j / k).collect();
    let i = ctx.const_i64(&idx, &[total])?;
    let axis = ctx.const_i64(&[1], &[])?;
    one(ctx.op1("GatherV2", &[y, i, axis], vec![])?)
}

/// Unsqueeze and Squeeze: checks the attributes; true when the axes are a run-time input.
fn runtime_axes_input(ctx: &NodeCtx<'_>) -> Result<bool> {
    ctx.known_attrs(&[])?;
    Ok(ctx.has_input(1) && ctx.const_input(1).is_none())
}

fn unsqueeze(ctx: &mut NodeCtx<'_>) -> Out {
    let runtime = runtime_axes_input(ctx)?;
    let x = ctx.input(0)?;
    if runtime {
        return unsqueeze_runtime(ctx, x);
    }
    let axes = ctx
        .const_ints(1, "axes")?
        .ok_or_else(|| Error::tr("Unsqueeze needs axes"))?;
    let out_rank = match ctx.input_dims(0)? {
        Some(d) => d.len() + axes.len(),
        None if axes.iter().all(|&a| a >= 0) => 0,
        None => {
            // Negative axes count from the output's rank, known at compile.
            let ax = ctx.const_i64(&axes, &[axes.len() as i64])?;
            return one(unsqueeze_any_rank(ctx, x, ax, axes.len())?);
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
    one(ctx.op1("Unsqueeze", &[x], vec![("axes", AttrValue::ListInt(ax))])?)
}

fn squeeze(ctx: &mut NodeCtx<'_>) -> Out {
    let runtime = runtime_axes_input(ctx)?;
    let x = ctx.input(0)?;
    if runtime {
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
            // Negative axes count from the input's rank, known at compile.
            let ax = ctx.const_i64(&axes, &[axes.len() as i64])?;
            return one(squeeze_any_rank(ctx, x, ax, axes.len())?);
        }
    };
    one(ctx.op1("Squeeze", &[x], vec![("axis", AttrValue::ListInt(ax))])?)
}

/// Unsqueeze by run-time axes: a Reshape to the computed shape (1 at the axes, X's dims in
/// order elsewhere). X's rank and the number of axes must be known.
fn unsqueeze_runtime(ctx: &mut NodeCtx<'_>, x: OutPort) -> Out {
    let n = ctx.vec_len(1)?.ok_or_else(|| {
        Error::unsupported("Unsqueeze: the number of run-time axes must be known at import")
    })?;
    let Some(r) = ctx.input_desc(0)?.shape.rank() else {
        let ax = ctx.input(1)?;
        let ax = ctx.cast(ax, I64)?;
        return one(unsqueeze_any_rank(ctx, x, ax, n)?);
    };
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

/// Squeeze by run-time axes: a Reshape to X's dims other than the axes (see
/// [`squeeze_any_rank`]).
fn squeeze_runtime(ctx: &mut NodeCtx<'_>, x: OutPort) -> Out {
    let n = ctx.vec_len(1)?.ok_or_else(|| {
        Error::unsupported("Squeeze: the number of run-time axes must be known at import")
    })?;
    let ax = ctx.input(1)?;
    let ax = ctx.cast(ax, I64)?;
    one(squeeze_any_rank(ctx, x, ax, n)?)
}

/// X's shape (int64), its rank as a scalar, `rank + extra` (the rank of a result `extra` dims
/// longer) and `0..rank + extra` (its positions), all computed at run time.
fn runtime_rank(ctx: &mut NodeCtx<'_>, x: OutPort, extra: usize) -> Result<[OutPort; 4]> {
    let xs = ctx.shape_i64(x)?;
    let r = ctx.op1("Size", &[xs], vec![("dtype", dtype_attr(I64))])?;
    let e = ctx.const_i64(&[extra as i64], &[])?;
    let big = ctx.op1("Add", &[r, e], vec![])?;
    let (zero, one) = (ctx.const_i64(&[0], &[])?, ctx.const_i64(&[1], &[])?);
    let pos = ctx.op1("Range", &[zero, big, one], vec![])?;
    Ok([xs, r, big, pos])
}

/// Unsqueeze of `x` by the `n` axes `ax` (int64, 1-D, negative ones counted from the output's
/// rank) when X's rank is not known at import: a Reshape to the shape computed at run time
/// (1 at the axes, X's dims in order elsewhere), whose rank is resolved at compile.
fn unsqueeze_any_rank(ctx: &mut NodeCtx<'_>, x: OutPort, ax: OutPort, n: usize) -> Result<OutPort> {
    let [xs, r, big, pos] = runtime_rank(ctx, x, n)?;
    let ax = wrap_negative(ctx, ax, big)?;
    let cnt = ctx.axis_counts_at(ax, n, pos)?;
    // Source dim of output position p: p - (axes at or before p), within X's dims and a
    // trailing 1 (at the axes, where it is not used).
    let zero = ctx.const_i64(&[0], &[])?;
    let before = ctx.op1("Cumsum", &[cnt, zero], vec![])?;
    let src = ctx.op1("Sub", &[pos, before], vec![])?;
    let src = ctx.op1("Maximum", &[src, zero], vec![])?;
    let src = ctx.op1("Minimum", &[src, r], vec![])?;
    let one = ctx.const_i64(&[1], &[1])?;
    let ext = ctx.concat(&[xs, one], 0)?;
    let dims = ctx.op1("GatherV2", &[ext, src, zero], vec![])?;
    let keep = ctx.op1("Equal", &[cnt, zero], vec![])?;
    let shape = ctx.op1("SelectV2", &[keep, dims, one], vec![])?;
    ctx.op1("Reshape", &[x, shape], vec![])
}

/// Squeeze of `x` by the `n` axes `ax` (int64, 1-D, negative ones counted from X's rank) when
/// X's rank is not known at import: a Reshape to X's other dims, computed at run time.
fn squeeze_any_rank(ctx: &mut NodeCtx<'_>, x: OutPort, ax: OutPort, n: usize) -> Result<OutPort> {
    let [xs, r, _, pos] = runtime_rank(ctx, x, 0)?;
    let ax = wrap_negative(ctx, ax, r)?;
    let cnt = ctx.axis_counts_at(ax, n, pos)?;
    let zero = ctx.const_i64(&[0], &[])?;
    let keep = ctx.op1("Equal", &[cnt, zero], vec![])?;
    ctx.reshape_to_kept(x, xs, keep)
}

/// Split sizes (input or old attribute): SplitV; equal parts: Split; opset 18 num_outputs with
/// a smaller last chunk: SplitV with static sizes.
/// SplitV of `x` along `axis` into `n` parts of the sizes `s`.
fn split_v(
    ctx: &mut NodeCtx<'_>,
    x: OutPort,
    s: OutPort,
    axis: i64,
    n: usize,
) -> Result<Vec<OutPort>> {
    let a = ctx.const_i64(&[axis], &[])?;
    ctx.op_with_counts(
        "SplitV",
        vec![vec![Some(x)], vec![Some(s)], vec![Some(a)]],
        vec![("num_split", AttrValue::Int(n as i64))],
        &[("y", n)],
    )
}

fn split(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["axis", "num_outputs"])?;
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
        split_v(ctx, x, s, axis, n)?
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
            split_v(ctx, x, s, axis, n)?
        } else {
            if dim.is_none() && num_outputs {
                // Sizes at run time: n-1 chunks of ceil(d / n), the rest last.
                if axis < 0 {
                    return Err(Error::unsupported(
                        "Split: num_outputs with a negative axis needs the input rank at import",
                    ));
                }
                let d = ctx.dim_scalar(x, axis as usize)?;
                let (m, k) = (
                    ctx.const_i64(&[n as i64 - 1], &[])?,
                    ctx.const_i64(&[n as i64], &[])?,
                );
                let c = ctx.bin("Add", d, m)?;
                let c = ctx.bin("FloorDiv", c, k)?;
                let used = ctx.bin("Mul", c, m)?;
                let last = ctx.bin("Sub", d, used)?;
                let mut parts = vec![ctx.unsqueeze(c, &[0])?; n - 1];
                parts.push(ctx.unsqueeze(last, &[0])?);
                let s = ctx.concat(&parts, 0)?;
                return Ok(split_v(ctx, x, s, axis, n)?.into_iter().map(Some).collect());
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
    ctx.known_attrs(&["mode"])?;
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
            let pos = ctx.concat(&[ax, ends], 0)?;
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

/// Per axis: a centred StridedSlice crop and a centred constant-0 PadV3, the amounts computed
/// from Shape(X) and the target shape at run time (X's rank must be known).
fn center_crop_pad(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["axes"])?;
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
    let y = ctx.strided_slice(x, [b, e, st], mask)?;
    let pv = ctx.concat(&[pb, pe], 0)?;
    let mut pos = axes.clone();
    pos.extend(axes.iter().map(|a| a + r));
    let pads = scatter_fill(ctx, pv, &pos, &vec![0.0; 2 * r])?;
    one(ctx.op1(
        "PadV3",
        &[y, pads],
        vec![
            ("mode", AttrValue::String("constant".into())),
            ("paddings_contiguous", AttrValue::Bool(false)),
        ],
    )?)
}

/// index[t, b] = len[b] - 1 - t where t < len[b], else t; GatherElements along time_axis.
fn reverse_sequence(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["batch_axis", "time_axis"])?;
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
    let c1 = ctx.const_i64(&[1], &[])?;
    let lm1 = ctx.op1("Sub", &[lens, c1], vec![])?;
    let rev = ctx.op1("Sub", &[lm1, tp], vec![])?;
    let idx = ctx.op1("SelectV2", &[lt, rev, tp], vec![])?;
    let s = ctx.shape_i64(x)?;
    let idx = ctx.op1("BroadcastTo", &[idx, s], vec![])?;
    one(ctx.op1(
        "GatherElements",
        &[x, idx],
        vec![("dim", AttrValue::Int(ta as i64))],
    )?)
}

/// axis > 0: Flatten(axis); axis = 0: Reshape to [1, -1].
fn flatten(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    let rank = ctx.input_rank(0)?;
    // ONNX allows axis in [-rank, rank]; a negative one counts from the end (-1 = rank - 1).
    let a = ctx.attr_i("axis", 1)?;
    let axis = if a < 0 { a + rank as i64 } else { a };
    if !(0..=rank as i64).contains(&axis) {
        return Err(Error::tr(format!(
            "Flatten axis {a} is out of range for rank {rank}"
        )));
    }
    let axis = axis as usize;
    let y = if axis == 0 {
        let shape = ctx.const_i64(&[1, -1], &[2])?;
        ctx.op1("Reshape", &[x, shape], vec![])?
    } else {
        ctx.op1("Flatten", &[x], vec![("axis", AttrValue::Int(axis as i64))])?
    };
    Ok(vec![Some(y)])
}
