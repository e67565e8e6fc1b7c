//! Indexing: Gather*, Scatter*, OneHot, Compress, NonZero, TopK, Unique.

use super::util::*;
use crate::error::{Error, Result};
use crate::translate::NodeCtx;
use es_core::{AttrValue, DataType, OutPort, Tensor};

/// The family's translators.
pub(super) const TABLE: &[(&str, Translator)] = &[
    ("ai.onnx.ml::ArrayFeatureExtractor", array_feature_extractor),
    ("Gather", gather),
    ("GatherElements", gather_elements),
    ("GatherND", gather_nd),
    ("ScatterND", scatter_nd),
    ("OneHot", one_hot),
    ("Compress", compress),
    ("NonZero", non_zero),
    ("TopK", top_k),
    ("Unique", unique),
    ("TensorScatter", tensor_scatter),
];

/// X[..., indices] (indices flattened); a 1-D X gives [1, n].
fn array_feature_extractor(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&[])?;
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

// ---------------------------------------------------------------------------------------------
// Gather, Unsqueeze, Squeeze, Split
// ---------------------------------------------------------------------------------------------

fn gather(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["axis"])?;
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
    gather_from_end("GatherV2", ctx, &[x, idx, a])
}

/// GE's gather `op` (GatherV2, GatherNd) with negative indices counted from the end, as in
/// ONNX.
fn gather_from_end(op: &str, ctx: &mut NodeCtx<'_>, inputs: &[OutPort]) -> Out {
    let attrs = vec![("negative_index_support", AttrValue::Bool(true))];
    one(ctx.op1(op, inputs, attrs)?)
}

fn gather_elements(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["axis"])?;
    let x = ctx.input(0)?;
    let r = ctx.input_rank(0)?;
    let axis = norm_axis(ctx.attr_i("axis", 0)?, r, "GatherElements axis")?;
    let idx = ctx.input(1)?;
    let idx = ctx.cast(idx, I64)?;
    let s = ctx.shape_i64(x)?;
    let d = ctx.gather_const(s, &[axis as i64])?;
    let idx = wrap_negative(ctx, idx, d)?;
    one(ctx.op1(
        "GatherElements",
        &[x, idx],
        vec![("dim", AttrValue::Int(axis as i64))],
    )?)
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
    ctx.known_attrs(&["batch_dims"])?;
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
        ctx.concat(&[c, idx], -1)?
    };
    gather_from_end("GatherNd", ctx, &[x, idx])
}

/// reduction none: ScatterNdUpdate on a TensorMove copy of data; add/mul/max/min: flat
/// element indices and ScatterElements(axis 0) on the flattened data (static data shape).
/// Negative indices are wrapped by the data dims.
fn scatter_nd(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["reduction"])?;
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
            let base = ctx.reduce_keep("ReduceSum", prod, &[-1])?;
            let within: Vec<i64> = (0..slice).collect();
            let within = ctx.const_i64(&within, &[slice])?;
            let flat = ctx.op1("Add", &[base, within], vec![])?;
            let m1 = ctx.const_i64(&[-1], &[1])?;
            let flat = ctx.op1("Reshape", &[flat, m1], vec![])?;
            let fu = ctx.op1("Reshape", &[upd, m1], vec![])?;
            let fd = ctx.op1("Reshape", &[data, m1], vec![])?;
            let r = ctx.scatter_axis0(fd, flat, fu, Some(&reduction))?;
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
    ctx.known_attrs(&["axis"])?;
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
    one(ctx.op1(
        "OneHot",
        &[idx, depth, on, off],
        vec![("axis", AttrValue::Int(axis))],
    )?)
}

fn compress(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["axis"])?;
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
    ctx.known_attrs(&[])?;
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
    ctx.known_attrs(&["axis", "largest", "sorted"])?;
    let x = ctx.input(0)?;
    // A non-negative axis needs no rank at import.
    let axis = match ctx.attr_i("axis", -1)? {
        a if a >= 0 && ctx.input_dims(0)?.is_none() => a as usize,
        a => norm_axis(a, ctx.input_rank(0)?, "TopK axis")?,
    };
    // A constant k stays a constant scalar, so that the inference gives the axis its size.
    let k = match ctx.const_input(1).map(|t| t.to_i64_vec()).transpose()? {
        Some(v) if v.len() == 1 => ctx.const_i64(&v, &[])?,
        _ => {
            let k = ctx.input(1)?;
            let k = ctx.cast(k, I64)?;
            let scalar = ctx.const_i64(&[], &[0])?;
            ctx.op1("Reshape", &[k, scalar], vec![])?
        }
    };
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
    ctx.known_attrs(&["axis", "sorted"])?;
    let sorted = ctx.attr_i("sorted", 1)? != 0;
    if ctx.has_attr("axis") {
        return unique_axis(ctx, sorted);
    }
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
        let u = ctx.shape_i64(y)?;
        let init = ctx.op1("Fill", &[u, n], vec![])?;
        Some(ctx.scatter_axis0(init, inv, pos, Some("min"))?)
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
    let ps = ctx.shape_i64(perm)?;
    let base = ctx.op1("Fill", &[ps, zero], vec![])?;
    let invperm = ctx.scatter_axis0(base, perm, pos, None)?;
    let inv = ctx.op1("GatherV2", &[invperm, inv, zero], vec![])?;
    Ok(vec![Some(y), Some(first), Some(inv), Some(counts)])
}

/// TensorScatter (opset 24): update written into a copy of past_cache along `axis`, batch item
/// b from write_indices[b] (0 without it; wrapping at the cache length in circular mode), as a
/// ScatterElements with the positions broadcast over the update.
fn tensor_scatter(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["axis", "mode"])?;
    let (cache, upd) = (ctx.input(0)?, ctx.input(1)?);
    let r = ctx.input_rank(0)?;
    if ctx.input_rank(1)? != r {
        return Err(Error::tr(
            "TensorScatter: past_cache and update must have the same rank",
        ));
    }
    let axis = norm_axis(ctx.attr_i("axis", -2)?, r, "TensorScatter axis")?;
    if axis == 0 {
        return Err(Error::tr(
            "TensorScatter: axis must not be the batch axis 0",
        ));
    }
    let mode = ctx.attr_s("mode", "linear")?;
    if mode != "linear" && mode != "circular" {
        return Err(Error::tr(format!(
            "TensorScatter: mode '{mode}' is not linear or circular"
        )));
    }
    let mut at = vec![1i64; r];
    // The update's positions along the axis, [1, .., S, .., 1].
    at[axis] = -1;
    let s = ctx.dim_scalar(upd, axis)?;
    let pos = ctx.iota(s, &at)?;
    let mut idx = match ctx.opt_input_i64(2)? {
        Some(w) => {
            at[axis] = 1;
            at[0] = -1;
            let shape = ctx.const_i64(&at, &[r as i64])?;
            let w = ctx.op1("Reshape", &[w, shape], vec![])?;
            ctx.bin("Add", pos, w)?
        }
        None => pos,
    };
    if mode == "circular" {
        let len = ctx.dim_scalar(cache, axis)?;
        idx = ctx.bin("FloorMod", idx, len)?;
    }
    let us = ctx.shape_i64(upd)?;
    let idx = ctx.op1("BroadcastTo", &[idx, us], vec![])?;
    one(ctx.op1(
        "ScatterElements",
        &[cache, idx, upd],
        vec![("axis", AttrValue::Int(axis as i64))],
    )?)
}

/// Unique along an axis (sorted): the slices along `axis` as rows of a matrix M [n, m],
/// compared pairwise: row i < row j lexicographically where the first differing column
/// (an exclusive Cumsum of the differences is 0 before it) is smaller. A row is a first
/// occurrence when no earlier row equals it; its rank among the distinct rows is the number
/// of first occurrences below it: that is every row's inverse index. O(n^2 m) work.
fn unique_axis(ctx: &mut NodeCtx<'_>, sorted: bool) -> Out {
    if !sorted {
        return Err(Error::unsupported(
            "Unique with axis and sorted=0 (the slices are ordered by value)",
        ));
    }
    let x = ctx.input(0)?;
    let r = ctx.input_rank(0)?;
    let axis = norm_axis(ctx.attr_i("axis", 0)?, r, "Unique axis")?;
    let mut perm = vec![axis as i64];
    perm.extend((0..r as i64).filter(|&d| d != axis as i64));
    let mt = ctx.transpose(x, &perm)?;
    let n = ctx.dim_scalar(x, axis)?;
    let s = ctx.const_i64(&[0, -1], &[2])?;
    let mt = ctx.op1("Reshape", &[mt, s], vec![])?;
    let reduce = |ctx: &mut NodeCtx<'_>, op: &str, x: OutPort, axis: OutPort| {
        ctx.op1(op, &[x, axis], vec![("keep_dims", AttrValue::Bool(false))])
    };
    let a = ctx.unsqueeze(mt, &[1])?;
    let b = ctx.unsqueeze(mt, &[0])?;
    let eq = ctx.bin("Equal", a, b)?;
    let lt = ctx.bin("Less", a, b)?;
    let eqi = ctx.cast(eq, I64)?;
    let one = ctx.const_i64(&[1], &[])?;
    let zero = ctx.const_i64(&[0], &[])?;
    let ne = ctx.bin("Sub", one, eqi)?;
    let two = ctx.const_i64(&[2], &[])?;
    let pre = ctx.op1(
        "Cumsum",
        &[ne, two],
        vec![("exclusive", AttrValue::Bool(true))],
    )?;
    let same_before = ctx.bin("Equal", pre, zero)?;
    let decides = ctx.bin("LogicalAnd", same_before, lt)?;
    let decides = ctx.cast(decides, I64)?;
    let less = reduce(ctx, "ReduceMax", decides, two)?;
    let all_eq = reduce(ctx, "ReduceMin", eqi, two)?;
    // first[i]: no j < i with row j == row i.
    let i_col = ctx.iota(n, &[-1, 1])?;
    let j_row = ctx.iota(n, &[1, -1])?;
    let earlier = ctx.bin("Less", j_row, i_col)?;
    let earlier = ctx.cast(earlier, I64)?;
    let dup = ctx.bin("Mul", all_eq, earlier)?;
    let dup = reduce(ctx, "ReduceMax", dup, one)?;
    let first = ctx.bin("Sub", one, dup)?;
    // inverse[i] = #{j first with row j < row i}.
    let fcol = ctx.unsqueeze(first, &[1])?;
    let below = ctx.bin("Mul", fcol, less)?;
    let inv = reduce(ctx, "ReduceSum", below, zero)?;
    let u = reduce(ctx, "ReduceSum", first, zero)?;
    let slots = ctx.iota(u, &[1, -1])?;
    let inv_col = ctx.unsqueeze(inv, &[1])?;
    let hit = ctx.bin("Equal", inv_col, slots)?;
    let hit_i = ctx.cast(hit, I64)?;
    let counts = reduce(ctx, "ReduceSum", hit_i, zero)?;
    let pos = ctx.op1("SelectV2", &[hit, i_col, n], vec![])?;
    let idx = reduce(ctx, "ReduceMin", pos, zero)?;
    let ax = ctx.const_i64(&[axis as i64], &[])?;
    let y = ctx.op1("GatherV2", &[x, idx, ax], vec![])?;
    Ok(vec![Some(y), Some(idx), Some(inv), Some(counts)])
}
