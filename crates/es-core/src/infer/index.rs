//! Inference rules of the indexing operators: gathers, scatters, OneHot, NonZero/Where, TopK,
//! Unique, MaskedFill and EmbeddingBag.

use super::common::{
    attr_dtype, bcast, check_min_rank, check_one_element, check_rank, const_scalar, dim,
    dims_agree, dtype_like, merge_dim, opt_bool, opt_int, opt_str, out_name, output_allows,
    product_or_unknown, shape_from_input, single, vector_len,
};
use super::{InferCtx, InferFn};
use crate::error::Result;
use crate::types::{DataType, Shape, TensorDesc, UNKNOWN_DIM};

/// The rule of an operator type of this family, if it has one.
pub(super) fn rule(op_type: &str) -> Option<InferFn> {
    Some(match op_type {
        "TopKV2" => top_k,
        "ScatterElements" => scatter_elements,
        "GatherElements" => gather_elements,
        "MaskedFill" => masked_fill,
        "OneHot" | "OneHotD" => one_hot,
        "GatherV2" | "GatherV2D" => gather_v2,
        "GatherNd" => gather_nd,
        "ScatterNd" => scatter_nd,
        "ScatterNdUpdate" => scatter_nd_update,
        "NonZero" | "Where" => nonzero,
        "EmbeddingBag" => embedding_bag,
        "UniqueWithCountsAndSorting" => unique_sorting,
        _ => return None,
    })
}

/// MaskedFill: x where mask is false, value elsewhere; shape = broadcast(x, mask).
fn masked_fill(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let mask = ctx.req("mask")?;
    check_one_element(ctx, "value", ctx.input("value")?)?;
    let s = bcast(ctx, ("x", &x.shape), ("mask", &mask.shape))?;
    Ok(single(dtype_like(ctx, 0, Some(x)), s))
}

/// TopKV2: the k largest (or smallest) along `dim`; values, and indices of `indices_dtype`
/// (int32 when the prototype has no such attribute).
fn top_k(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    check_one_element(ctx, "k", ctx.input("k")?)?;
    let k = const_scalar(ctx, "k")?;
    let dim = opt_int(ctx, "dim", -1)?;
    if let Some(k) = k {
        if k < 0 {
            return Err(ctx.err(format!("input 'k' must be >= 0, got {k}")));
        }
    }
    let shape = match x.shape.rank() {
        None => Shape::unknown_rank(),
        Some(0) => return Err(ctx.err(format!("x must have rank >= 1, got shape {}", x.shape))),
        Some(r) => {
            let a = ctx.axis(dim, r, "attribute 'dim'")?;
            let mut o = x.shape.0.clone();
            if let Some(k) = k {
                if o[a] >= 0 && k > o[a] {
                    return Err(ctx.err(format!(
                        "input 'k' is {k}, more than dim {a} of x {} ({})",
                        x.shape, o[a]
                    )));
                }
                o[a] = k;
            } else {
                o[a] = UNKNOWN_DIM;
            }
            Shape::from(o)
        }
    };
    let mut out = Vec::with_capacity(ctx.num_outputs());
    for &ir in ctx.output_ir {
        let name = out_name(ctx, ir);
        let ir = ir as usize;
        let t = if name == "indices" {
            let t = attr_dtype(ctx, "indices_dtype", Some(DataType::INT32))?;
            if !matches!(t, DataType::INT32 | DataType::INT64) || !output_allows(ctx, ir, t) {
                return Err(ctx.err(format!(
                    "attribute 'indices_dtype' must be DT_INT32 or DT_INT64, got {t}"
                )));
            }
            t
        } else {
            dtype_like(ctx, ir, Some(x))
        };
        out.push(TensorDesc::new(t, shape.clone()));
    }
    Ok(out)
}

/// GatherElements: output has index's shape; ranks of x and index match.
fn gather_elements(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let index = ctx.req("index")?;
    let dim = opt_int(ctx, "dim", 0)?;
    let dt = dtype_like(ctx, 0, Some(x));
    let r = x.shape.rank().or(index.shape.rank());
    if let (Some(rx), Some(ri)) = (x.shape.rank(), index.shape.rank()) {
        if rx != ri {
            return Err(ctx.err(format!(
                "x {} and index {} must have the same rank ({rx} vs {ri})",
                x.shape, index.shape
            )));
        }
        let a = ctx.axis(dim, rx, "attribute 'dim'")?;
        for j in 0..rx {
            let (dx, di) = (x.shape.0[j], index.shape.0[j]);
            if j != a && dx >= 0 && di > dx {
                return Err(ctx.err(format!(
                    "index {} is larger than x {} at dim {j} ({di} > {dx}), which is not 'dim' {a}",
                    index.shape, x.shape
                )));
            }
        }
    } else if let Some(r) = r {
        ctx.axis(dim, r, "attribute 'dim'")?;
    }
    let out = if index.shape.is_unknown_rank() {
        match x.shape.rank() {
            Some(r) => Shape::unknown_dims(r),
            None => Shape::unknown_rank(),
        }
    } else {
        index.shape.clone()
    };
    Ok(single(dt, out))
}

/// ScatterElements: output has data's shape; indices and updates have data's rank and equal shapes.
fn scatter_elements(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let data = ctx.req("data")?;
    let indices = ctx.req("indices")?;
    let updates = ctx.req("updates")?;
    let axis = opt_int(ctx, "axis", 0)?;
    let reduction = opt_str(ctx, "reduction", "none")?;
    if !matches!(reduction, "none" | "add" | "mul" | "max" | "min") {
        return Err(ctx.err(format!(
            "attribute 'reduction' must be one of \"none\", \"add\", \"mul\", \"max\", \"min\", got {reduction:?}"
        )));
    }
    let dt = dtype_like(ctx, 0, Some(data));
    for (name, d) in [("indices", indices), ("updates", updates)] {
        if let (Some(r0), Some(r)) = (data.shape.rank(), d.shape.rank()) {
            if r0 != r {
                return Err(ctx.err(format!(
                    "input '{name}' {} must have the rank of data {} ({r} vs {r0})",
                    d.shape, data.shape
                )));
            }
        }
    }
    if let (Some(_), Some(_)) = (indices.shape.rank(), updates.shape.rank()) {
        if !dims_agree(&indices.shape.0, &updates.shape.0) {
            return Err(ctx.err(format!(
                "indices {} and updates {} must have the same shape",
                indices.shape, updates.shape
            )));
        }
    }
    if let Some(r) = data
        .shape
        .rank()
        .or(indices.shape.rank())
        .or(updates.shape.rank())
    {
        ctx.axis(axis, r, "attribute 'axis'")?;
    }
    Ok(single(dt, data.shape.clone()))
}

/// OneHot (`depth` input) / OneHotD (`depth` attribute): x's dims with depth inserted at axis
/// (-1: appended); on_value and off_value hold one element each.
fn one_hot(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    check_one_element(ctx, "on_value", ctx.input("on_value")?)?;
    check_one_element(ctx, "off_value", ctx.input("off_value")?)?;
    let (depth, what) = if ctx.proto.input("depth").is_some() {
        check_one_element(ctx, "depth", ctx.input("depth")?)?;
        (const_scalar(ctx, "depth")?, "input 'depth'")
    } else {
        (Some(ctx.attr_int("depth")?), "attribute 'depth'")
    };
    if let Some(d) = depth.filter(|&d| d < 0) {
        return Err(ctx.err(format!("{what} must be >= 0, got {d}")));
    }
    let axis = opt_int(ctx, "axis", -1)?;
    let dt = dtype_like(ctx, 0, ctx.input("on_value")?);
    let Some(r) = x.shape.rank() else {
        if axis < -1 {
            return Err(ctx.err(format!("attribute 'axis' must be >= -1, got {axis}")));
        }
        return Ok(single(dt, Shape::unknown_rank()));
    };
    if axis < -1 || axis > r as i64 {
        return Err(ctx.err(format!(
            "attribute 'axis' {axis} is out of range [-1, {r}] for x {} (rank {r})",
            x.shape
        )));
    }
    let pos = if axis == -1 { r } else { axis as usize };
    let mut d = x.shape.0.clone();
    d.insert(pos, depth.unwrap_or(UNKNOWN_DIM));
    Ok(single(dt, Shape(d)))
}

/// GatherV2 (constant `axis` input, `batch_dims`) / GatherV2D (`axis` attribute):
/// x[:axis] + indices[batch_dims:] + x[axis + 1:].
fn gather_v2(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let idx = ctx.req("indices")?;
    let dt = dtype_like(ctx, 0, Some(x));
    let axis = if ctx.proto.input("axis").is_some() {
        check_one_element(ctx, "axis", ctx.input("axis")?)?;
        const_scalar(ctx, "axis")?
    } else {
        Some(ctx.attr_int("axis")?)
    };
    let mut bd = opt_int(ctx, "batch_dims", 0)?;
    if let Some(ri) = idx.shape.rank() {
        let ri = ri as i64;
        if bd < -ri || bd > ri {
            return Err(ctx.err(format!(
                "attribute 'batch_dims' {bd} is out of range for indices {} (rank {ri})",
                idx.shape
            )));
        }
        if bd < 0 {
            bd += ri;
        }
    } else if bd < 0 {
        return Ok(single(dt, Shape::unknown_rank()));
    }
    let (Some(rx), Some(ri)) = (x.shape.rank(), idx.shape.rank()) else {
        return Ok(single(dt, Shape::unknown_rank()));
    };
    if rx == 0 {
        return Err(ctx.err(format!("x must have rank >= 1, got shape {}", x.shape)));
    }
    let bd = bd as usize;
    let Some(axis) = axis else {
        let r = (rx + ri).saturating_sub(1 + bd);
        return Ok(single(dt, Shape::unknown_dims(r)));
    };
    let a = ctx.axis(axis, rx, "axis")?;
    if bd > a {
        return Err(ctx.err(format!(
            "attribute 'batch_dims' {bd} must not exceed the gather axis {a}"
        )));
    }
    for k in 0..bd {
        if merge_dim(x.shape.0[k], idx.shape.0[k]).is_none() {
            return Err(ctx.err(format!(
                "batch dim {k} differs: x {} has {}, indices {} has {}",
                x.shape, x.shape.0[k], idx.shape, idx.shape.0[k]
            )));
        }
    }
    let mut out = x.shape.0[..a].to_vec();
    out.extend_from_slice(&idx.shape.0[bd..]);
    out.extend_from_slice(&x.shape.0[a + 1..]);
    Ok(single(dt, Shape::from(out)))
}

/// GatherNd: indices[:-1] + x[indices[-1]:].
fn gather_nd(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let idx = ctx.req("indices")?;
    let dt = dtype_like(ctx, 0, Some(x));
    check_min_rank(ctx, "indices", &idx.shape, 1)?;
    let Some(ri) = idx.shape.rank() else {
        return Ok(single(dt, Shape::unknown_rank()));
    };
    let k = idx.shape.0[ri - 1];
    if let (Some(rx), true) = (x.shape.rank(), k >= 0) {
        if k as usize > rx {
            return Err(ctx.err(format!(
                "the last dim of indices {} is {k}, more than the rank {rx} of x {}",
                idx.shape, x.shape
            )));
        }
    }
    if x.shape.is_unknown_rank() || k < 0 {
        return Ok(single(dt, Shape::unknown_rank()));
    }
    let mut out = idx.shape.0[..ri - 1].to_vec();
    out.extend_from_slice(&x.shape.0[k as usize..]);
    Ok(single(dt, Shape::from(out)))
}

/// Checks that `updates` has the shape indices[:-1] + target[K:].
fn check_scatter_updates(
    ctx: &InferCtx,
    (un, upd): (&str, &Shape),
    idx: &Shape,
    (tn, target): (&str, &Shape),
) -> Result<()> {
    let (Some(ri), Some(rt), Some(_)) = (idx.rank(), target.rank(), upd.rank()) else {
        return Ok(());
    };
    if ri == 0 {
        return Err(ctx.err(format!(
            "input 'indices' must have rank >= 1, got shape {idx}"
        )));
    }
    let k = idx.0[ri - 1];
    if k < 0 {
        return Ok(());
    }
    if k as usize > rt {
        return Err(ctx.err(format!(
            "the last dim of indices {idx} is {k}, more than the rank {rt} of {tn} {target}"
        )));
    }
    let mut want = idx.0[..ri - 1].to_vec();
    want.extend_from_slice(&target.0[k as usize..]);
    if !dims_agree(&upd.0, &want) {
        return Err(ctx.err(format!(
            "input '{un}' {upd} must have shape {} (indices[:-1] + {tn}[{k}:])",
            Shape::from(want)
        )));
    }
    Ok(())
}

/// ScatterNd: a tensor of the constant `shape`, x scattered into it.
fn scatter_nd(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let idx = ctx.req("indices")?;
    let x = ctx.req("x")?;
    let dt = dtype_like(ctx, 0, Some(x));
    let out = shape_from_input(ctx, "shape")?;
    check_scatter_updates(ctx, ("x", &x.shape), &idx.shape, ("shape", &out))?;
    Ok(single(dt, out))
}

/// ScatterNdUpdate: var's shape.
fn scatter_nd_update(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let var = ctx.req("var")?;
    let idx = ctx.req("indices")?;
    let upd = ctx.req("updates")?;
    check_scatter_updates(
        ctx,
        ("updates", &upd.shape),
        &idx.shape,
        ("var", &var.shape),
    )?;
    Ok(single(dtype_like(ctx, 0, Some(var)), var.shape.clone()))
}

/// NonZero / Where: [count, rank] (NonZero with transpose: [rank, count]); the count is known
/// when x is a constant.
fn nonzero(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let dt = if ctx.proto.attr("dtype").is_some() {
        let t = attr_dtype(ctx, "dtype", Some(DataType::INT64))?;
        if !matches!(t, DataType::INT32 | DataType::INT64) || !output_allows(ctx, 0, t) {
            return Err(ctx.err(format!(
                "attribute 'dtype' must be DT_INT32 or DT_INT64, got {t}"
            )));
        }
        t
    } else {
        DataType::INT64
    };
    let rank = x.shape.rank().map_or(UNKNOWN_DIM, |r| r as i64);
    let count = match ctx.const_of("x")? {
        Some(t) => t
            .to_f64_vec()
            .map(|v| v.iter().filter(|&&e| e != 0.0).count() as i64)
            .unwrap_or(UNKNOWN_DIM),
        None if x.shape.num_elements() == Some(0) => 0,
        None => UNKNOWN_DIM,
    };
    let out = if opt_bool(ctx, "transpose", false)? {
        vec![rank, count]
    } else {
        vec![count, rank]
    };
    Ok(single(dt, Shape::from(out)))
}

/// EmbeddingBag: y [bags, D]; offset2bag [len(indices)]; bag_size [bags]; max_indices
/// [bags, D] in max mode, else [bags]. Bags: len(offsets) (- 1 with include_last_offset), or
/// the rows of a 2-D indices without offsets.
fn embedding_bag(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let w = ctx.req("weight")?;
    let idx = ctx.req("indices")?;
    let offsets = ctx.input("offsets")?;
    let mode = opt_str(ctx, "mode", "mean")?;
    if !matches!(mode, "sum" | "mean" | "max") {
        return Err(ctx.err(format!(
            "attribute 'mode' must be \"sum\", \"mean\" or \"max\", got {mode:?}"
        )));
    }
    let last = opt_bool(ctx, "include_last_offset", false)?;
    check_rank(ctx, "weight", &w.shape, 2)?;
    let d = dim(&w.shape, 1);
    let bags = match offsets {
        Some(o) => match vector_len(ctx, "offsets", Some(o))? {
            Some(n) if last => {
                if n < 1 {
                    return Err(ctx.err(
                        "input 'offsets' is empty, but include_last_offset needs at least one value",
                    ));
                }
                n - 1
            }
            Some(n) => n,
            None => UNKNOWN_DIM,
        },
        None => match idx.shape.rank() {
            Some(2) => idx.shape.0[0],
            Some(1) | None => UNKNOWN_DIM,
            Some(r) => {
                return Err(ctx.err(format!(
                    "input 'indices' must be 1-D (with offsets) or 2-D, got rank {r} shape {}",
                    idx.shape
                )))
            }
        },
    };
    if offsets.is_some() {
        check_rank(ctx, "indices", &idx.shape, 1)?;
    }
    if let Some(p) = ctx.input("per_sample_weights")? {
        if let (Some(_), Some(_)) = (p.shape.rank(), idx.shape.rank()) {
            if !dims_agree(&p.shape.0, &idx.shape.0) {
                return Err(ctx.err(format!(
                    "input 'per_sample_weights' {} must have the shape of indices {}",
                    p.shape, idx.shape
                )));
            }
        }
    }
    let n_idx = match idx.shape.rank() {
        Some(_) => product_or_unknown(&idx.shape.0),
        None => UNKNOWN_DIM,
    };
    Ok(ctx
        .output_ir
        .iter()
        .map(|&ir| {
            let (like, shape) = match out_name(ctx, ir) {
                "y" => (w, vec![bags, d]),
                "offset2bag" => (idx, vec![n_idx]),
                "bag_size" => (idx, vec![bags]),
                _ if mode == "max" => (idx, vec![bags, d]),
                _ => (idx, vec![bags]),
            };
            TensorDesc::new(dtype_like(ctx, ir as usize, Some(like)), Shape::from(shape))
        })
        .collect())
}

/// UniqueWithCountsAndSorting: y [-1] (the unique count is data-dependent); indices has x's
/// shape when return_inverse, else [0]; counts [-1] when return_counts, else [0].
fn unique_sorting(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let idx = attr_dtype(ctx, "out_idx", Some(DataType::INT64))?;
    if idx != DataType::INT32 && idx != DataType::INT64 {
        return Err(ctx.err(format!(
            "attribute 'out_idx' must be DT_INT32 or DT_INT64, got {idx}"
        )));
    }
    let inverse = opt_bool(ctx, "return_inverse", false)?;
    let counts = opt_bool(ctx, "return_counts", false)?;
    let y_len = match x.shape.rank() {
        Some(0) => 1,
        Some(_) if x.shape.0.contains(&0) => 0,
        _ => UNKNOWN_DIM,
    };
    Ok(vec![
        TensorDesc::new(dtype_like(ctx, 0, Some(x)), Shape::from_slice(&[y_len])),
        TensorDesc::new(
            idx,
            if inverse {
                x.shape.clone()
            } else {
                Shape::from_slice(&[0])
            },
        ),
        TensorDesc::new(idx, Shape::from_slice(&[if counts { y_len } else { 0 }])),
    ])
}
