//! Inference rules of the shape-manipulating operators: reshapes, transposes, (un)squeezes,
//! flattens, broadcasts and tiles, concatenation and splitting, padding, slicing, reversal,
//! space/depth moves and triangles.

use super::common::{
    check_min_rank, check_one_element, check_rank, const_scalar, dim, dtype_like, layout,
    merge_dim, norm_axes, opt_bool, opt_int, opt_ints, opt_str, product, product_or_unknown,
    single, unknown_dims_of, vector_len, MAX_RANK,
};
use super::{broadcast, InferCtx, InferFn};
use crate::attr::AttrValue;
use crate::error::Result;
use crate::opmath::slice::bit;
use crate::opmath::{slice_spec, spread_over_axes, strided_len, SliceMasks, SpecDim};
use crate::types::{DataType, Shape, TensorDesc, UNKNOWN_DIM};

/// The rule of an operator type of this family, if it has one.
pub(super) fn rule(op_type: &str) -> Option<InferFn> {
    Some(match op_type {
        "Reshape" => reshape,
        "Transpose" => transpose,
        "Unsqueeze" => unsqueeze,
        "Squeeze" => squeeze,
        "ConcatV2" | "ConcatD" | "Concat" => concat,
        "Pack" => pack,
        "Split" | "SplitD" => split,
        "SplitV" => split_v,
        "BroadcastTo" => broadcast_to,
        "Tile" => tile,
        "PadV3" => pad_v3,
        "Pad" | "PadD" => pad,
        "Slice" | "SliceD" => slice,
        "StridedSlice" | "StridedSliceD" => strided_slice,
        "StridedSliceV2" => strided_slice_v2,
        "Expand" | "ExpandD" => expand,
        "Flatten" => flatten,
        "FlattenV2" => flatten_v2,
        "SpaceToDepth" | "DepthToSpace" => space_depth,
        "ReverseV2" => reverse_v2,
        "Unpack" => unpack,
        "Tril" | "Triu" | "Trilu" => triangle,
        _ => return None,
    })
}

/// Resolves a Reshape target `spec` against the dims it replaces (`src`, None when unknown):
/// 0 copies the dim at the same position, -1 is inferred from the element count.
fn resolve_reshape(
    ctx: &InferCtx,
    src: Option<&[i64]>,
    spec: &[i64],
    x: &Shape,
) -> Result<Vec<i64>> {
    let mut out = Vec::with_capacity(spec.len());
    let mut infer_at: Option<usize> = None;
    for (i, &v) in spec.iter().enumerate() {
        match v {
            -1 => {
                if let Some(j) = infer_at {
                    return Err(ctx.err(format!(
                        "input 'shape' {spec:?} has more than one -1 (at {j} and {i})"
                    )));
                }
                infer_at = Some(i);
                out.push(UNKNOWN_DIM);
            }
            0 => match src {
                Some(s) => match s.get(i) {
                    Some(&d) => out.push(d),
                    None => {
                        return Err(ctx.err(format!(
                            "input 'shape' {spec:?} has 0 (copy) at index {i}, but x {x} has no such dim"
                        )))
                    }
                },
                None => out.push(UNKNOWN_DIM),
            },
            v if v < -1 => {
                return Err(ctx.err(format!("input 'shape' {spec:?} has invalid value {v} at index {i}")))
            }
            v => out.push(v),
        }
    }
    let total = src.and_then(product);
    match infer_at {
        Some(i) => {
            let rest: Vec<i64> = out
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, &d)| d)
                .collect();
            if let (Some(t), Some(r)) = (total, product(&rest)) {
                if r == 0 {
                    return Err(ctx.err(format!(
                        "input 'shape' {spec:?}: cannot infer the -1 dim when the other dims hold 0 elements (x {x})"
                    )));
                }
                if t % r != 0 {
                    return Err(ctx.err(format!(
                        "element count mismatch: x {x} has {t} elements, which is not a multiple of {r} (shape {spec:?})"
                    )));
                }
                out[i] = t / r;
            }
        }
        None => {
            if let (Some(t), Some(r)) = (total, product(&out)) {
                if t != r {
                    return Err(ctx.err(format!(
                        "element count mismatch: x {x} has {t} elements, shape {spec:?} has {r}"
                    )));
                }
            }
        }
    }
    Ok(out)
}

/// Reshape: x to the constant `shape`; `axis` / `num_axes` (Caffe) reshape a range of dims.
fn reshape(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let shape_in = ctx.req("shape")?;
    let axis = opt_int(ctx, "axis", 0)?;
    let num_axes = opt_int(ctx, "num_axes", -1)?;
    let dt = dtype_like(ctx, 0, Some(x));
    let spec_len = vector_len(ctx, "shape", Some(shape_in))?;
    let spec = ctx.const_ints("shape")?;
    if let (Some(v), Some(n)) = (&spec, spec_len) {
        if v.len() as i64 != n {
            return Err(ctx.err(format!(
                "input 'shape' has {} values but shape {}",
                v.len(),
                shape_in.shape
            )));
        }
    }
    let full = axis == 0 && num_axes == -1;
    if num_axes < -1 {
        return Err(ctx.err(format!(
            "attribute 'num_axes' must be >= -1, got {num_axes}"
        )));
    }
    // The range [start, end) of x's dims that is replaced.
    let range = match x.shape.rank() {
        Some(r) => {
            let r = r as i64;
            let start = if axis < 0 { axis + r + 1 } else { axis };
            if start < 0 || start > r {
                return Err(ctx.err(format!(
                    "attribute 'axis' {axis} is out of range for x {} (rank {r})",
                    x.shape
                )));
            }
            let end = if num_axes == -1 {
                r
            } else {
                start.saturating_add(num_axes)
            };
            if end > r {
                return Err(ctx.err(format!(
                    "attributes 'axis' {axis} and 'num_axes' {num_axes} reach past the rank {r} of x {}",
                    x.shape
                )));
            }
            Some((start as usize, end as usize))
        }
        None => None,
    };
    let new_dims: Option<Vec<i64>> = match &spec {
        Some(v) => {
            let src = range.map(|(s, e)| &x.shape.0[s..e]);
            Some(resolve_reshape(ctx, src, v, &x.shape)?)
        }
        None => spec_len.map(|n| unknown_dims_of(n).to_vec()),
    };
    let out = match (new_dims, range) {
        (Some(d), _) if full => Shape::from(d),
        (Some(d), Some((s, e))) => {
            let mut o = x.shape.0[..s].to_vec();
            o.extend(d);
            o.extend_from_slice(&x.shape.0[e..]);
            Shape::from(o)
        }
        _ => Shape::unknown_rank(),
    };
    Ok(single(dt, out))
}

/// Transpose: y[i] = x[perm[i]].
fn transpose(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let perm_in = ctx.req("perm")?;
    let dt = dtype_like(ctx, 0, Some(x));
    let plen = vector_len(ctx, "perm", Some(perm_in))?;
    if let (Some(p), Some(r)) = (plen, x.shape.rank()) {
        if p != r as i64 {
            return Err(ctx.err(format!(
                "input 'perm' has {p} values, x {} has rank {r}",
                x.shape
            )));
        }
    }
    let out = match ctx.const_ints("perm")? {
        Some(perm) => {
            let r = x.shape.rank().unwrap_or(perm.len());
            if perm.len() != r {
                return Err(ctx.err(format!(
                    "input 'perm' {perm:?} has {} values, x {} has rank {r}",
                    perm.len(),
                    x.shape
                )));
            }
            let mut seen = vec![false; r];
            let mut o = Vec::with_capacity(r);
            for &p in &perm {
                let a = ctx.axis(p, r, "perm value")?;
                if r == 0 || seen[a] {
                    return Err(ctx.err(format!(
                        "input 'perm' {perm:?} is not a permutation of 0..{r}"
                    )));
                }
                seen[a] = true;
                o.push(if x.shape.is_unknown_rank() {
                    UNKNOWN_DIM
                } else {
                    x.shape.0[a]
                });
            }
            Shape::from(o)
        }
        None => match (x.shape.rank(), plen) {
            (Some(r), _) => Shape::unknown_dims(r),
            (None, Some(p)) => unknown_dims_of(p),
            _ => Shape::unknown_rank(),
        },
    };
    Ok(single(dt, out))
}

/// Unsqueeze: inserts dims of 1 at `axes` (positions in the output).
fn unsqueeze(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let axes = opt_ints(ctx, "axes", &[])?;
    let dt = dtype_like(ctx, 0, Some(x));
    let Some(r) = x.shape.rank() else {
        return Ok(single(dt, Shape::unknown_rank()));
    };
    let out_rank = r + axes.len();
    let pos = norm_axes(ctx, axes, out_rank, "attribute 'axes' value", false)?;
    let mut src = x.shape.0.iter();
    let mut out = Vec::with_capacity(out_rank);
    for i in 0..out_rank {
        if pos.contains(&i) {
            out.push(1);
        } else {
            out.push(src.next().copied().unwrap_or(UNKNOWN_DIM));
        }
    }
    Ok(single(dt, Shape::from(out)))
}

/// Squeeze: removes the dims of 1 at `axis` (all dims of 1 when empty).
fn squeeze(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let name = if ctx.attrs.contains_key("axis") {
        "axis"
    } else {
        "axes"
    };
    let axes = opt_ints(ctx, name, &[])?;
    let dt = dtype_like(ctx, 0, Some(x));
    let Some(r) = x.shape.rank() else {
        return Ok(single(dt, Shape::unknown_rank()));
    };
    let dims = &x.shape.0;
    if axes.is_empty() {
        if dims.contains(&UNKNOWN_DIM) {
            return Ok(single(dt, Shape::unknown_rank()));
        }
        return Ok(single(
            dt,
            Shape::from(
                dims.iter()
                    .copied()
                    .filter(|&d| d != 1)
                    .collect::<Vec<i64>>(),
            ),
        ));
    }
    if r == 0 {
        return Err(ctx.err(format!(
            "cannot squeeze a scalar x (attribute '{name}' {axes:?})"
        )));
    }
    let pos = norm_axes(ctx, axes, r, &format!("attribute '{name}' value"), true)?;
    for &p in &pos {
        if dims[p] != 1 && dims[p] != UNKNOWN_DIM {
            return Err(ctx.err(format!(
                "cannot squeeze axis {p} of x {}: the dim is {}, not 1",
                x.shape, dims[p]
            )));
        }
    }
    let out: Vec<i64> = dims
        .iter()
        .enumerate()
        .filter(|(i, _)| !pos.contains(i))
        .map(|(_, &d)| d)
        .collect();
    Ok(single(dt, Shape::from(out)))
}

/// ConcatV2 (constant `concat_dim` input) / ConcatD (`concat_dim` attribute).
fn concat(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let xs = ctx.inputs_of("x")?;
    if xs.is_empty() {
        return Err(ctx.err("input 'x' needs at least one tensor"));
    }
    let axis: Option<i64> = if ctx.proto.input("concat_dim").is_some() {
        check_one_element(ctx, "concat_dim", ctx.input("concat_dim")?)?;
        const_scalar(ctx, "concat_dim")?
    } else {
        Some(ctx.attr_int("concat_dim")?)
    };
    let dt = dtype_like(ctx, 0, xs.first().copied());
    // Rank: every known-rank input must agree.
    let mut rank: Option<(usize, usize)> = None; // (rank, index of the first input having it)
    for (i, d) in xs.iter().enumerate() {
        if let Some(r) = d.shape.rank() {
            match rank {
                None => rank = Some((r, i)),
                Some((r0, i0)) if r0 != r => {
                    let (s0, s1) = (&xs[i0].shape, &d.shape);
                    let m = format!("x{i0} {s0} has rank {r0}, x{i} {s1} has rank {r}");
                    return Err(ctx.err(format!("inputs must have the same rank: {m}")));
                }
                _ => {}
            }
        }
    }
    let Some((r, _)) = rank else {
        return Ok(single(dt, Shape::unknown_rank()));
    };
    if r == 0 {
        return Err(ctx.err("cannot concatenate scalars (inputs 'x' have rank 0)"));
    }
    let Some(axis) = axis else {
        if xs.len() == 1 {
            return Ok(single(dt, xs[0].shape.clone()));
        }
        return Ok(single(dt, Shape::unknown_dims(r)));
    };
    let a = ctx.axis(axis, r, "concat_dim")?;
    let mut out = vec![UNKNOWN_DIM; r];
    let mut first: Vec<Option<usize>> = vec![None; r];
    let mut sum: Option<i64> = Some(0);
    for (i, d) in xs.iter().enumerate() {
        if d.shape.is_unknown_rank() {
            sum = None;
            continue;
        }
        for (j, &v) in d.shape.0.iter().enumerate() {
            if j == a {
                sum = match (sum, v) {
                    (Some(s), v) if v >= 0 => s.checked_add(v),
                    _ => None,
                };
                continue;
            }
            match merge_dim(out[j], v) {
                Some(m) => {
                    if out[j] == UNKNOWN_DIM && v != UNKNOWN_DIM {
                        first[j] = Some(i);
                    }
                    out[j] = m;
                }
                None => {
                    let i0 = first[j].unwrap_or(0);
                    return Err(ctx.err(format!(
                        "x{i0} {} and x{i} {} differ at dim {j} ({} vs {v}), which is not the concat dim {a}",
                        xs[i0].shape, d.shape, out[j]
                    )));
                }
            }
        }
    }
    out[a] = sum.unwrap_or(UNKNOWN_DIM);
    Ok(single(dt, Shape::from(out)))
}

/// The merged shape of inputs that must all have the same shape (Pack).
fn merge_same_shapes(ctx: &InferCtx, xs: &[&TensorDesc]) -> Result<Shape> {
    let mut acc = Shape::unknown_rank();
    let mut from = 0usize;
    for (i, d) in xs.iter().enumerate() {
        if d.shape.is_unknown_rank() {
            continue;
        }
        if acc.is_unknown_rank() {
            acc = d.shape.clone();
            from = i;
            continue;
        }
        let mismatch = || {
            ctx.err(format!(
                "inputs must have the same shape: x{from} {} vs x{i} {}",
                xs[from].shape, d.shape
            ))
        };
        if acc.0.len() != d.shape.0.len() {
            return Err(mismatch());
        }
        for j in 0..acc.0.len() {
            acc.0[j] = merge_dim(acc.0[j], d.shape.0[j]).ok_or_else(mismatch)?;
        }
    }
    Ok(acc)
}

/// Pack: stacks N same-shape tensors along a new axis.
fn pack(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let xs = ctx.inputs_of("x")?;
    if xs.is_empty() {
        return Err(ctx.err("input 'x' needs at least one tensor"));
    }
    let axis = opt_int(ctx, "axis", 0)?;
    let dt = dtype_like(ctx, 0, xs.first().copied());
    let s = merge_same_shapes(ctx, &xs)?;
    let Some(r) = s.rank() else {
        return Ok(single(dt, Shape::unknown_rank()));
    };
    let a = ctx.axis(axis, r + 1, "attribute 'axis'")?;
    let mut out = s.0;
    out.insert(a, xs.len() as i64);
    Ok(single(dt, Shape::from(out)))
}

/// An output-count attribute (Split's and SplitV's `num_split`, Unpack's `num`), checked
/// against the node's output count: (the attribute, the output count).
fn count_attr(ctx: &InferCtx, name: &str) -> Result<(i64, usize)> {
    let num = ctx.attr_int(name)?;
    if num < 1 {
        return Err(ctx.err(format!("attribute '{name}' must be >= 1, got {num}")));
    }
    let n_out = ctx.num_outputs();
    if n_out as i64 != num {
        return Err(ctx.err(format!(
            "attribute '{name}' is {num} but the node has {n_out} outputs 'y'"
        )));
    }
    Ok((num, n_out))
}

/// Split (constant `split_dim` input) / SplitD (`split_dim` attribute): num_split equal parts.
fn split(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let (num, n_out) = count_attr(ctx, "num_split")?;
    let axis: Option<i64> = if ctx.proto.input("split_dim").is_some() {
        check_one_element(ctx, "split_dim", ctx.input("split_dim")?)?;
        const_scalar(ctx, "split_dim")?
    } else {
        Some(ctx.attr_int("split_dim")?)
    };
    let dt = dtype_like(ctx, 0, Some(x));
    let shape = match (x.shape.rank(), axis) {
        (None, _) => Shape::unknown_rank(),
        (Some(r), None) => Shape::unknown_dims(r),
        (Some(r), Some(axis)) => {
            if r == 0 {
                return Err(ctx.err("cannot split a scalar x"));
            }
            let a = ctx.axis(axis, r, "split_dim")?;
            let mut o = x.shape.0.clone();
            let d = o[a];
            if d >= 0 {
                if d % num != 0 {
                    return Err(ctx.err(format!(
                        "dim {a} of x {} is {d}, which num_split {num} does not divide",
                        x.shape
                    )));
                }
                o[a] = d / num;
            }
            Shape::from(o)
        }
    };
    Ok(vec![TensorDesc::new(dt, shape); n_out])
}

/// SplitV: parts of the sizes in `size_splits` (one may be -1) along `split_dim`.
fn split_v(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let (num, n_out) = count_attr(ctx, "num_split")?;
    let n = n_out;
    let slen = vector_len(ctx, "size_splits", ctx.input("size_splits")?)?;
    if let Some(l) = slen {
        if l != num {
            return Err(ctx.err(format!(
                "input 'size_splits' has {l} values, num_split is {num}"
            )));
        }
    }
    check_one_element(ctx, "split_dim", ctx.input("split_dim")?)?;
    let axis = const_scalar(ctx, "split_dim")?;
    let sizes = ctx.const_ints("size_splits")?;
    let dt = dtype_like(ctx, 0, Some(x));
    let Some(r) = x.shape.rank() else {
        return Ok(vec![TensorDesc::new(dt, Shape::unknown_rank()); n]);
    };
    if r == 0 {
        return Err(ctx.err("cannot split a scalar x"));
    }
    let Some(axis) = axis else {
        return Ok(vec![TensorDesc::new(dt, Shape::unknown_dims(r)); n]);
    };
    let a = ctx.axis(axis, r, "split_dim")?;
    let dim = x.shape.0[a];
    let parts: Vec<i64> = match sizes {
        None => vec![UNKNOWN_DIM; n],
        Some(mut s) => {
            if s.len() != n {
                return Err(ctx.err(format!(
                    "input 'size_splits' {s:?} has {} values, num_split is {num}",
                    s.len()
                )));
            }
            let mut infer_at = None;
            for (i, &v) in s.iter().enumerate() {
                if v < -1 {
                    return Err(ctx.err(format!(
                        "input 'size_splits' {s:?} has invalid size {v} at index {i}"
                    )));
                }
                if v == -1 {
                    if infer_at.is_some() {
                        return Err(
                            ctx.err(format!("input 'size_splits' {s:?} has more than one -1"))
                        );
                    }
                    infer_at = Some(i);
                }
            }
            let known: i64 = s
                .iter()
                .filter(|&&v| v >= 0)
                .fold(0i64, |a, &v| a.saturating_add(v));
            if dim >= 0 {
                match infer_at {
                    Some(i) => {
                        if known > dim {
                            return Err(ctx.err(format!(
                                "input 'size_splits' {s:?} sums to {known}, more than dim {a} of x {} ({dim})",
                                x.shape
                            )));
                        }
                        s[i] = dim - known;
                    }
                    None => {
                        if known != dim {
                            return Err(ctx.err(format!(
                                "input 'size_splits' {s:?} sums to {known}, but dim {a} of x {} is {dim}",
                                x.shape
                            )));
                        }
                    }
                }
            }
            s
        }
    };
    Ok(parts
        .into_iter()
        .map(|p| {
            let mut o = x.shape.0.clone();
            o[a] = p;
            TensorDesc::new(dt, Shape::from(o))
        })
        .collect())
}

/// BroadcastTo: x broadcast to the constant `shape`.
fn broadcast_to(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let (x, len, dt) = x_and_vector(ctx, "shape")?;
    let xr = x.shape.rank();
    if let (Some(xr), Some(n)) = (xr, len) {
        if xr as i64 > n {
            return Err(ctx.err(format!(
                "x {} has rank {xr}, more than the {n} dims of 'shape'",
                x.shape
            )));
        }
    }
    let out = match nonneg_const_ints(ctx, "shape", "dim")? {
        Some(t) => {
            if let Some(xr) = xr {
                if xr > t.len() {
                    return Err(ctx.err(format!(
                        "x {} has rank {xr}, more than the target shape {t:?}",
                        x.shape
                    )));
                }
                let off = t.len() - xr;
                for (j, &d) in x.shape.0.iter().enumerate() {
                    if d != 1 && d != UNKNOWN_DIM && d != t[off + j] {
                        return Err(ctx.err(format!(
                            "x {} cannot be broadcast to {t:?}: dim {j} is {d}, target {}",
                            x.shape,
                            t[off + j]
                        )));
                    }
                }
            }
            Shape::from(t)
        }
        None => match len {
            Some(n) if n > MAX_RANK => Shape::unknown_rank(),
            Some(n) => broadcast_target(&x.shape, n as usize),
            None => Shape::unknown_rank(),
        },
    };
    Ok(single(dt, out))
}

/// BroadcastTo's and Tile's inputs: x, the length of the vector input `name` when known, and the
/// output dtype (x's).
fn x_and_vector<'a>(
    ctx: &InferCtx<'a>,
    name: &str,
) -> Result<(&'a TensorDesc, Option<i64>, DataType)> {
    let x = ctx.req("x")?;
    let len = vector_len(ctx, name, Some(ctx.req(name)?))?;
    Ok((x, len, dtype_like(ctx, 0, Some(x))))
}

/// The constant values of input `name` when known, an error naming the first negative one
/// (`what` names an entry: "dim", "value").
fn nonneg_const_ints(ctx: &InferCtx, name: &str, what: &str) -> Result<Option<Vec<i64>>> {
    let v = ctx.const_ints(name)?;
    if let Some(t) = &v {
        if let Some((i, d)) = t.iter().enumerate().find(|(_, &d)| d < 0) {
            return Err(ctx.err(format!(
                "input '{name}' {t:?} has negative {what} {d} at index {i}"
            )));
        }
    }
    Ok(v)
}

/// The broadcast of `x` to a target of `n` (>= x's rank) dims of unknown values: a known x dim
/// other than 1 is the output dim (right-aligned), every other dim unknown.
fn broadcast_target(x: &Shape, n: usize) -> Shape {
    let mut o = vec![UNKNOWN_DIM; n];
    if let Some(xr) = x.rank() {
        for (j, &d) in x.0.iter().enumerate() {
            if d != 1 {
                o[n - xr + j] = d;
            }
        }
    }
    Shape::from(o)
}

/// Tile: x repeated `multiples` times per dim (x is right-aligned when `multiples` is longer).
fn tile(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let (x, len, dt) = x_and_vector(ctx, "multiples")?;
    let xr = x.shape.rank();
    if let (Some(xr), Some(n)) = (xr, len) {
        if (n as usize) < xr {
            return Err(ctx.err(format!(
                "input 'multiples' has {n} values, fewer than the rank {xr} of x {}",
                x.shape
            )));
        }
    }
    let out = match nonneg_const_ints(ctx, "multiples", "value")? {
        Some(m) => match xr {
            Some(xr) => {
                if m.len() < xr {
                    return Err(ctx.err(format!(
                        "input 'multiples' {m:?} has {} values, fewer than the rank {xr} of x {}",
                        m.len(),
                        x.shape
                    )));
                }
                let off = m.len() - xr;
                Shape::from(
                    m.iter()
                        .enumerate()
                        .map(|(i, &k)| {
                            let d = if i < off { 1 } else { x.shape.0[i - off] };
                            if k == 0 {
                                0
                            } else if d < 0 {
                                UNKNOWN_DIM
                            } else {
                                d.checked_mul(k).unwrap_or(UNKNOWN_DIM)
                            }
                        })
                        .collect::<Vec<i64>>(),
                )
            }
            None => Shape::from(
                m.iter()
                    .map(|&k| if k == 0 { 0 } else { UNKNOWN_DIM })
                    .collect::<Vec<i64>>(),
            ),
        },
        None => match len {
            Some(n) => unknown_dims_of(n),
            None => Shape::unknown_rank(),
        },
    };
    Ok(single(dt, out))
}

/// Integer values of a value input (an input of the `*D` variants' attribute when the prototype
/// has no such input): `Some` when known.
fn ints_of(ctx: &InferCtx, name: &str) -> Result<Option<Vec<i64>>> {
    if ctx.proto.input(name).is_some() {
        ctx.const_ints(name)
    } else {
        Ok(Some(ctx.attr_ints(name)?.to_vec()))
    }
}

/// The length of a 1-D value input or attribute, when known.
fn ints_len(ctx: &InferCtx, name: &str) -> Result<Option<i64>> {
    if ctx.proto.input(name).is_some() {
        vector_len(ctx, name, ctx.input(name)?)
    } else {
        Ok(Some(ctx.attr_ints(name)?.len() as i64))
    }
}

/// "input 'x'" or "attribute 'x'", by where the prototype takes `name` from.
fn what(ctx: &InferCtx, name: &str) -> String {
    if ctx.proto.input(name).is_some() {
        format!("input '{name}'")
    } else {
        format!("attribute '{name}'")
    }
}

/// x padded by (begin, end) per dim; a negative result is an error.
fn padded(ctx: &InferCtx, x: &Shape, pads: &[(i64, i64)], src: &str) -> Result<Shape> {
    let mut out = Vec::with_capacity(pads.len());
    for (i, &(b, e)) in pads.iter().enumerate() {
        let d = x.0[i];
        if d < 0 {
            out.push(UNKNOWN_DIM);
            continue;
        }
        let o = i128::from(d) + i128::from(b) + i128::from(e);
        if o < 0 {
            return Err(ctx.err(format!(
                "{src} pads dim {i} of x {x} ({d}) by {b} and {e}, giving a negative size {o}"
            )));
        }
        out.push(i64::try_from(o).map_err(|_| ctx.err(format!("padded dim {i} is too large")))?);
    }
    Ok(Shape::from(out))
}

/// PadV3: `paddings` of 2 * rank values, [b0, e0, b1, e1, ...] when paddings_contiguous, else
/// [b0, b1, ..., e0, e1, ...].
fn pad_v3(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let mode = opt_str(ctx, "mode", "constant")?;
    if !matches!(
        mode,
        "constant" | "reflect" | "edge" | "symmetric" | "circular"
    ) {
        return Err(ctx.err(format!(
            "attribute 'mode' must be \"constant\", \"reflect\", \"edge\", \"symmetric\" or \"circular\", got {mode:?}"
        )));
    }
    let contiguous = opt_bool(ctx, "paddings_contiguous", true)?;
    check_one_element(ctx, "constant_values", ctx.input("constant_values")?)?;
    let pin = ctx.req("paddings")?;
    let plen = pin.shape.num_elements();
    let dt = dtype_like(ctx, 0, Some(x));
    if let (Some(r), Some(n)) = (x.shape.rank(), plen) {
        if n != 2 * r as i64 {
            return Err(ctx.err(format!(
                "input 'paddings' {} has {n} values, x {} needs 2 * rank = {}",
                pin.shape,
                x.shape,
                2 * r
            )));
        }
    }
    let Some(r) = x.shape.rank() else {
        let out = match plen {
            Some(n) if n % 2 == 0 => unknown_dims_of(n / 2),
            _ => Shape::unknown_rank(),
        };
        return Ok(single(dt, out));
    };
    let Some(p) = ctx.const_ints("paddings")? else {
        return Ok(single(dt, Shape::unknown_dims(r)));
    };
    if p.len() != 2 * r {
        return Err(ctx.err(format!(
            "input 'paddings' {p:?} has {} values, x {} needs 2 * rank = {}",
            p.len(),
            x.shape,
            2 * r
        )));
    }
    let pads: Vec<(i64, i64)> = (0..r)
        .map(|i| {
            if contiguous {
                (p[2 * i], p[2 * i + 1])
            } else {
                (p[i], p[r + i])
            }
        })
        .collect();
    Ok(single(
        dt,
        padded(ctx, &x.shape, &pads, "input 'paddings'")?,
    ))
}

/// Pad (`paddings` tensor [rank, 2]) / PadD (`paddings` attribute [[begin, end], ...]).
fn pad(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let dt = dtype_like(ctx, 0, Some(x));
    let by_input = ctx.proto.input("paddings").is_some();
    let (pairs, rows): (Option<Vec<(i64, i64)>>, Option<i64>) = if by_input {
        let pin = ctx.req("paddings")?;
        let rows = match pin.shape.rank() {
            None => None,
            Some(2) => {
                if pin.shape.0[1] >= 0 && pin.shape.0[1] != 2 {
                    return Err(ctx.err(format!(
                        "input 'paddings' must have shape [rank, 2], got {}",
                        pin.shape
                    )));
                }
                (pin.shape.0[0] >= 0).then_some(pin.shape.0[0])
            }
            Some(r) => {
                return Err(ctx.err(format!(
                    "input 'paddings' must be 2-D [rank, 2], got rank {r} shape {}",
                    pin.shape
                )))
            }
        };
        let pairs = ctx.const_ints("paddings")?.map(|v| {
            v.chunks(2)
                .map(|c| (c[0], c.get(1).copied().unwrap_or(0)))
                .collect()
        });
        (pairs, rows)
    } else {
        let v = match ctx.attr("paddings")? {
            AttrValue::ListListInt(v) => v,
            other => {
                return Err(ctx.err(format!(
                    "attribute 'paddings' must be a ListListInt, got {other}"
                )))
            }
        };
        if let Some(row) = v.iter().find(|row| row.len() != 2) {
            return Err(ctx.err(format!(
                "attribute 'paddings' must hold [begin, end] pairs, got {row:?} in {v:?}"
            )));
        }
        let pairs: Vec<(i64, i64)> = v.iter().map(|row| (row[0], row[1])).collect();
        let n = pairs.len() as i64;
        (Some(pairs), Some(n))
    };
    let src = what(ctx, "paddings");
    if let Some(pairs) = &pairs {
        if let Some((i, p)) = pairs.iter().enumerate().find(|(_, p)| p.0 < 0 || p.1 < 0) {
            return Err(ctx.err(format!(
                "{src} has a negative pad {p:?} for dim {i}; Pad only adds elements"
            )));
        }
    }
    if let (Some(r), Some(n)) = (
        x.shape.rank(),
        pairs.as_ref().map(|p| p.len() as i64).or(rows),
    ) {
        if n != r as i64 {
            return Err(ctx.err(format!("{src} has {n} rows, x {} has rank {r}", x.shape)));
        }
    }
    let out = match (x.shape.rank(), pairs) {
        (Some(_), Some(p)) => padded(ctx, &x.shape, &p, &src)?,
        (Some(r), None) => Shape::unknown_dims(r),
        (None, Some(p)) => Shape::unknown_dims(p.len()),
        (None, None) => rows
            .map(unknown_dims_of)
            .unwrap_or_else(Shape::unknown_rank),
    };
    Ok(single(dt, out))
}

/// Slice (`offsets`, `size` tensors) / SliceD (attributes): size -1 takes the rest of the dim;
/// a negative offset counts from the end.
fn slice(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let dt = dtype_like(ctx, 0, Some(x));
    let offsets = ints_of(ctx, "offsets")?;
    let sizes = ints_of(ctx, "size")?;
    let olen = offsets
        .as_ref()
        .map(|v| v.len() as i64)
        .or(ints_len(ctx, "offsets")?);
    let slen = sizes
        .as_ref()
        .map(|v| v.len() as i64)
        .or(ints_len(ctx, "size")?);
    if let (Some(a), Some(b)) = (olen, slen) {
        if a != b {
            return Err(ctx.err(format!(
                "{} has {a} values but {} has {b}",
                what(ctx, "offsets"),
                what(ctx, "size")
            )));
        }
    }
    let n = olen.or(slen);
    if let (Some(r), Some(n)) = (x.shape.rank(), n) {
        if n != r as i64 {
            return Err(ctx.err(format!(
                "{} has {n} values, x {} has rank {r}",
                what(ctx, "offsets"),
                x.shape
            )));
        }
    }
    let Some(r) = x.shape.rank().or(n.map(|n| n as usize)) else {
        return Ok(single(dt, Shape::unknown_rank()));
    };
    let mut out = vec![UNKNOWN_DIM; r];
    for (i, o) in out.iter_mut().enumerate() {
        let d = dim(&x.shape, i);
        let off = offsets.as_ref().map(|v| v[i]);
        let sz = sizes.as_ref().map(|v| v[i]);
        if let Some(s) = sz {
            if s < -1 {
                return Err(ctx.err(format!(
                    "{} has invalid size {s} at dim {i} (sizes are >= 0, or -1 for the rest)",
                    what(ctx, "size")
                )));
            }
        }
        let off = match (off, d) {
            (Some(b), d) if d >= 0 => {
                let b2 = if b < 0 { b + d } else { b };
                if b2 < 0 || b2 > d {
                    return Err(ctx.err(format!(
                        "{} value {b} is out of range for dim {i} of x {} ({d})",
                        what(ctx, "offsets"),
                        x.shape
                    )));
                }
                Some(b2)
            }
            (Some(b), _) if b >= 0 => Some(b),
            _ => None,
        };
        *o = match (sz, off, d) {
            (Some(-1), Some(b), d) if d >= 0 => d - b,
            (Some(-1), _, _) | (None, _, _) => UNKNOWN_DIM,
            (Some(s), Some(b), d) if d >= 0 => {
                if b.saturating_add(s) > d {
                    return Err(ctx.err(format!(
                        "slice [{b}, {b} + {s}) exceeds dim {i} of x {} ({d})",
                        x.shape
                    )));
                }
                s
            }
            (Some(s), _, _) => s,
        };
    }
    Ok(single(dt, Shape::from(out)))
}

/// StridedSlice (begin/end/strides tensors) / StridedSliceD (attributes), with TensorFlow's
/// begin/end/ellipsis/new-axis/shrink-axis masks, negative indices and clamping.
fn strided_slice(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let dt = dtype_like(ctx, 0, Some(x));
    let m = slice_masks(ctx)?;
    let vals: Vec<Option<Vec<i64>>> = ["begin", "end", "strides"]
        .iter()
        .map(|n| ints_of(ctx, n))
        .collect::<Result<_>>()?;
    let mut lens: Vec<(&str, i64)> = Vec::new();
    for (k, n) in ["begin", "end", "strides"].iter().enumerate() {
        let l = match &vals[k] {
            Some(v) => Some(v.len() as i64),
            None => ints_len(ctx, n)?,
        };
        if let Some(l) = l {
            lens.push((n, l));
        }
    }
    if let Some(&(n0, l0)) = lens.first() {
        if let Some(&(n1, l1)) = lens.iter().find(|(_, l)| *l != l0) {
            return Err(ctx.err(format!(
                "{} has {l0} values but {} has {l1}; begin, end and strides must have the same length",
                what(ctx, n0),
                what(ctx, n1)
            )));
        }
    }
    if let Some(st) = &vals[2] {
        if let Some(i) = st.iter().position(|&s| s == 0) {
            return Err(ctx.err(format!(
                "{} {st:?} has a zero stride at index {i}",
                what(ctx, "strides")
            )));
        }
    }
    let n = lens.first().map(|&(_, l)| l as usize);
    strided_slice_out(ctx, (x, dt), &m, &vals, n)
}

/// The five StridedSlice masks; at most one ellipsis.
fn slice_masks(ctx: &InferCtx) -> Result<SliceMasks> {
    let m = SliceMasks {
        begin: opt_int(ctx, "begin_mask", 0)?,
        end: opt_int(ctx, "end_mask", 0)?,
        ellipsis: opt_int(ctx, "ellipsis_mask", 0)?,
        new_axis: opt_int(ctx, "new_axis_mask", 0)?,
        shrink: opt_int(ctx, "shrink_axis_mask", 0)?,
    };
    if !m.one_ellipsis() {
        return Err(ctx.err(format!(
            "attribute 'ellipsis_mask' {} has more than one bit set; only one ellipsis is allowed",
            m.ellipsis
        )));
    }
    Ok(m)
}

/// The output of a StridedSlice of `x` by the spec begin/end/strides `vals` (each None when
/// not constant) of `n` entries (None: unknown).
fn strided_slice_out(
    ctx: &InferCtx,
    (x, dt): (&TensorDesc, DataType),
    m: &SliceMasks,
    vals: &[Option<Vec<i64>>],
    n: Option<usize>,
) -> Result<Vec<TensorDesc>> {
    let Some(r) = x.shape.rank() else {
        return Ok(single(dt, Shape::unknown_rank()));
    };
    let Some(n) = n else {
        // Unknown spec length: the rank is knowable only without rank-changing masks.
        let out = if m.new_axis == 0 && m.shrink == 0 {
            Shape::unknown_dims(r)
        } else {
            Shape::unknown_rank()
        };
        return Ok(single(dt, out));
    };
    let spec = slice_spec(n, r, m).map_err(|real| {
        ctx.err(format!(
            "the slice spec has {real} indices that consume dims, more than the rank {r} of x {}",
            x.shape
        ))
    })?;
    let known = vals.iter().all(Option::is_some);
    let mut out: Vec<i64> = Vec::new();
    for sd in spec {
        let (i, j, shrink) = match sd {
            SpecDim::Keep { dim } => {
                out.push(x.shape.0[dim]);
                continue;
            }
            SpecDim::NewAxis => {
                out.push(1);
                continue;
            }
            SpecDim::Shrink { spec, dim } => (spec, dim, true),
            SpecDim::Slice { spec, dim } => (spec, dim, false),
        };
        let d = x.shape.0[j];
        if !known {
            if !shrink {
                out.push(UNKNOWN_DIM);
            }
            continue;
        }
        let (b, e, s) = (
            vals[0].as_ref().map_or(0, |v| v[i]),
            vals[1].as_ref().map_or(0, |v| v[i]),
            vals[2].as_ref().map_or(1, |v| v[i]),
        );
        if shrink {
            if d >= 0 {
                let idx = if b < 0 { b.saturating_add(d) } else { b };
                if idx < 0 || idx >= d {
                    return Err(ctx.err(format!(
                        "shrink_axis_mask index {b} (spec {i}) is out of range for dim {j} of x {} ({d})",
                        x.shape
                    )));
                }
            }
        } else if d < 0 {
            out.push(UNKNOWN_DIM);
        } else {
            out.push(strided_len(d, b, e, s, bit(m.begin, i), bit(m.end, i)));
        }
    }
    Ok(single(dt, Shape::from(out)))
}

/// StridedSliceV2 (GE's form of ONNX Slice): begin, end and (optional) strides along `axes`
/// (optional: every dim), the other dims whole. As GE's InferShape4StridedSliceV2, the values
/// are spread over x's dims (begin 0, end the whole dim, stride 1 where no axis names a dim)
/// and the StridedSlice masks then apply.
fn strided_slice_v2(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let dt = dtype_like(ctx, 0, Some(x));
    let m = slice_masks(ctx)?;
    let Some(r) = x.shape.rank() else {
        return Ok(single(dt, Shape::unknown_rank()));
    };
    // Each input's constant values: Some(None) when it is not a constant, None when absent.
    let mut vals: [Option<Option<Vec<i64>>>; 4] = Default::default();
    for (v, name) in vals.iter_mut().zip(["begin", "end", "axes", "strides"]) {
        if ctx.input(name)?.is_some() {
            *v = Some(ctx.const_ints(name)?);
        }
    }
    let unknown = || strided_slice_out(ctx, (x, dt), &m, &[None, None, None], None);
    let [Some(Some(b)), Some(Some(e)), axes, strides] = vals else {
        return unknown();
    };
    let axes = match axes {
        None => None,
        Some(None) => return unknown(),
        Some(Some(a)) => Some(norm_axes(ctx, &a, r, "axis", false)?),
    };
    let strides = match strides {
        None => None,
        Some(None) => return unknown(),
        Some(Some(s)) => Some(s),
    };
    let [fb, fe, fs] = spread_over_axes(r, &b, &e, axes.as_deref(), strides.as_deref())
        .map_err(|m| ctx.err(format!("{m} (x {})", x.shape)))?;
    strided_slice_out(ctx, (x, dt), &m, &[Some(fb), Some(fe), Some(fs)], Some(r))
}

/// Expand (constant `shape` input) / ExpandD (`shape` attribute): two-way broadcast of x and
/// the target shape.
fn expand(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let dt = dtype_like(ctx, 0, Some(x));
    let src = what(ctx, "shape");
    let len = ints_len(ctx, "shape")?;
    let out = match ints_of(ctx, "shape")? {
        Some(t) => {
            if let Some((i, d)) = t.iter().enumerate().find(|(_, &d)| d < 0) {
                return Err(ctx.err(format!("{src} {t:?} has negative dim {d} at index {i}")));
            }
            broadcast(&x.shape, &Shape::from(t.clone())).map_err(|e| {
                ctx.err(format!(
                    "x {} cannot be expanded to {src} {t:?}: {e}",
                    x.shape
                ))
            })?
        }
        None => match (x.shape.rank(), len) {
            (Some(xr), Some(n)) if n <= MAX_RANK => {
                broadcast_target(&x.shape, (n as usize).max(xr))
            }
            _ => Shape::unknown_rank(),
        },
    };
    Ok(single(dt, out))
}

/// Flatten: [prod(x[:axis]), prod(x[axis:])], axis in [-rank, rank].
fn flatten(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let axis = opt_int(ctx, "axis", 1)?;
    let dt = dtype_like(ctx, 0, Some(x));
    let Some(r) = x.shape.rank() else {
        return Ok(single(dt, Shape::unknown_dims(2)));
    };
    let ri = r as i64;
    if axis < -ri || axis > ri {
        return Err(ctx.err(format!(
            "attribute 'axis' {axis} is out of range [-{ri}, {ri}] for x {}",
            x.shape
        )));
    }
    let a = if axis < 0 { axis + ri } else { axis } as usize;
    let out = vec![
        product_or_unknown(&x.shape.0[..a]),
        product_or_unknown(&x.shape.0[a..]),
    ];
    Ok(single(dt, Shape::from(out)))
}

/// FlattenV2: dims axis..=end_axis merged into one.
fn flatten_v2(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let axis = opt_int(ctx, "axis", 1)?;
    let end = opt_int(ctx, "end_axis", -1)?;
    let dt = dtype_like(ctx, 0, Some(x));
    let Some(r) = x.shape.rank() else {
        return Ok(single(dt, Shape::unknown_rank()));
    };
    let a = ctx.axis(axis, r, "attribute 'axis'")?;
    let e = ctx.axis(end, r, "attribute 'end_axis'")?;
    if a > e {
        return Err(ctx.err(format!(
            "attribute 'axis' {axis} (dim {a}) comes after 'end_axis' {end} (dim {e}) for x {}",
            x.shape
        )));
    }
    let mut out = x.shape.0[..a].to_vec();
    out.push(product_or_unknown(&x.shape.0[a..=e]));
    out.extend_from_slice(&x.shape.0[e + 1..]);
    Ok(single(dt, Shape::from(out)))
}

/// SpaceToDepth / DepthToSpace: block_size x block_size blocks between H/W and C.
fn space_depth(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let to_depth = ctx.proto.name == "SpaceToDepth";
    let b = ctx.attr_int("block_size")?;
    if b < 2 {
        return Err(ctx.err(format!("attribute 'block_size' must be >= 2, got {b}")));
    }
    if !to_depth {
        let mode = opt_str(ctx, "mode", "DCR")?;
        if !matches!(mode, "DCR" | "CRD") {
            return Err(ctx.err(format!(
                "attribute 'mode' must be \"DCR\" or \"CRD\", got {mode:?}"
            )));
        }
    }
    let fmt = opt_str(ctx, "data_format", "NHWC")?;
    let l = layout(ctx, "data_format", fmt, &["NHWC", "NCHW"])?;
    check_rank(ctx, "x", &x.shape, 4)?;
    let dt = dtype_like(ctx, 0, Some(x));
    let mut out = match x.shape.rank() {
        Some(_) => x.shape.0.to_vec(),
        None => vec![UNKNOWN_DIM; 4],
    };
    let bb = b.saturating_mul(b);
    let (c, h, w) = (l.c(), l.sp(0), l.sp(1));
    if to_depth {
        for (p, name) in [(h, "height"), (w, "width")] {
            let what = format!("the {name} of x {} is", x.shape);
            out[p] = exact_div(ctx, out[p], (b, &format!("block_size {b}")), &what)?;
        }
        if out[c] >= 0 {
            out[c] = out[c].saturating_mul(bb);
        }
    } else {
        let what = format!("the channels of x {} are", x.shape);
        out[c] = exact_div(ctx, out[c], (bb, &format!("block_size^2 = {bb}")), &what)?;
        for p in [h, w] {
            if out[p] >= 0 {
                out[p] = out[p].saturating_mul(b);
            }
        }
    }
    Ok(single(dt, Shape::from(out)))
}

/// `d / by` for a known dim `d` (an unknown one stays unknown); a known `d` that `by` (named
/// `by_name`) does not divide is an error: "`what` `d`, which `by_name` does not divide".
fn exact_div(ctx: &InferCtx, d: i64, (by, by_name): (i64, &str), what: &str) -> Result<i64> {
    match d {
        d if d < 0 => Ok(d),
        d if d % by != 0 => Err(ctx.err(format!("{what} {d}, which {by_name} does not divide"))),
        d => Ok(d / by),
    }
}

/// ReverseV2: x's shape; the constant axes must lie in its rank, without repeats.
fn reverse_v2(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let ain = ctx.req("axis")?;
    let n = match ain.shape.rank() {
        Some(0) => Some(1),
        _ => vector_len(ctx, "axis", Some(ain))?,
    };
    if let (Some(r), Some(n)) = (x.shape.rank(), n) {
        if n > r as i64 {
            return Err(ctx.err(format!(
                "input 'axis' has {n} values, more than the rank {r} of x {}",
                x.shape
            )));
        }
    }
    if let (Some(r), Some(v)) = (x.shape.rank(), ctx.const_ints("axis")?) {
        let mut seen = Vec::new();
        for &a in &v {
            let p = ctx.axis(a, r, "input 'axis' value")?;
            if seen.contains(&p) {
                return Err(ctx.err(format!("input 'axis' {v:?} repeats dim {p}")));
            }
            seen.push(p);
        }
    }
    Ok(single(dtype_like(ctx, 0, Some(x)), x.shape.clone()))
}

/// Unpack: `num` outputs, each x without the `axis` dim.
fn unpack(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let (num, n_out) = count_attr(ctx, "num")?;
    let axis = opt_int(ctx, "axis", 0)?;
    let dt = dtype_like(ctx, 0, Some(x));
    let shape = match x.shape.rank() {
        None => Shape::unknown_rank(),
        Some(0) => return Err(ctx.err(format!("cannot unpack a scalar x {}", x.shape))),
        Some(r) => {
            let a = ctx.axis(axis, r, "attribute 'axis'")?;
            let d = x.shape.0[a];
            if d >= 0 && d != num {
                return Err(ctx.err(format!(
                    "dim {a} of x {} is {d}, but attribute 'num' is {num}",
                    x.shape
                )));
            }
            let mut o = x.shape.0.to_vec();
            o.remove(a);
            Shape::from(o)
        }
    };
    Ok(vec![TensorDesc::new(dt, shape); n_out])
}

/// Tril / Triu / Trilu: x's shape; x has rank >= 2; Trilu's k holds one value.
fn triangle(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    check_min_rank(ctx, "x", &x.shape, 2)?;
    if ctx.proto.input("k").is_some() {
        check_one_element(ctx, "k", ctx.input("k")?)?;
    }
    if ctx.proto.attr("upper").is_some() {
        let u = opt_int(ctx, "upper", 0)?;
        if !matches!(u, 0 | 1) {
            return Err(ctx.err(format!("attribute 'upper' must be 0 or 1, got {u}")));
        }
    }
    Ok(single(dtype_like(ctx, 0, Some(x)), x.shape.clone()))
}
