//! Inference rules of the neural-network and tensor-manipulation operators
//! (`ops/pending/nn.json`): normalization, pooling, convolutions, padding, slicing, gathering,
//! scattering, resizing and shape queries.
//!
//! The conventions are those of `rules.rs`: unknown dims (-1) and ranks (`[-2]`) propagate
//! without errors; value-dependent shapes resolve when the value input is a constant, otherwise
//! the rank is kept where it is knowable; errors name the input or attribute and show expected
//! and actual values. The helpers `rules.rs` shares (`dtype_like`, `output_allows`, `single`,
//! `opt_bool`, `opt_int`, `attr_dtype`) are used directly; the small ones below mirror helpers
//! that are still private there.

use super::rules::{
    attr_dtype, check_one_element, check_rank, const_scalar, dtype_like, merge_dim, opt_bool,
    opt_int, opt_ints, opt_str, output_allows, product, single, unknown_dims_of, vector_len,
};
use super::{broadcast, InferCtx, InferFn};
use crate::attr::AttrValue;
use crate::error::Result;
use crate::types::{DataType, Format, Shape, TensorDesc, UNKNOWN_DIM};

/// The rule of an operator type of this module, if it has one.
pub fn rule(op_type: &str) -> Option<InferFn> {
    Some(match op_type {
        "SoftmaxV2" | "LogSoftmaxV2" => softmax,
        "LayerNorm" => layer_norm,
        "InstanceNorm" => instance_norm,
        "GroupNorm" => group_norm,
        "LRN" => lrn,
        "MaxPool" | "AvgPool" => pool_padding,
        "MaxPoolV3" | "AvgPoolV2" => pool_v2,
        "GlobalAveragePool" => global_pool,
        "Pooling" => caffe_pooling,
        "PadV3" => pad_v3,
        "Pad" | "PadD" => pad,
        "Slice" | "SliceD" => slice,
        "StridedSlice" | "StridedSliceD" => strided_slice,
        "GatherV2" | "GatherV2D" => gather_v2,
        "GatherNd" => gather_nd,
        "ScatterNd" => scatter_nd,
        "ScatterNdUpdate" => scatter_nd_update,
        "Expand" | "ExpandD" => expand,
        "ResizeNearestNeighborV2" | "ResizeBilinearV2" => resize_2d,
        "Resize" => resize,
        "Conv2DTranspose" => conv2d_transpose,
        "DepthwiseConv2D" => depthwise_conv2d,
        "Conv3D" => conv3d,
        "BiasAdd" => bias_add,
        "Flatten" => flatten,
        "FlattenV2" => flatten_v2,
        "SpaceToDepth" | "DepthToSpace" => space_depth,
        "ReverseV2" => reverse_v2,
        "Unpack" => unpack,
        "Einsum" => einsum,
        "Tril" | "Triu" | "Trilu" => triangle,
        "NonZero" | "Where" => nonzero,
        "Size" => size_op,
        "Rank" => rank_op,
        "EmbeddingBag" => embedding_bag,
        _ => return None,
    })
}

// ---------------------------------------------------------------------------------------------
// Helpers (local copies of helpers that rules.rs keeps private, and new ones)
// ---------------------------------------------------------------------------------------------

/// The name of the output with IR index `ir`.
fn out_name<'a>(ctx: &InferCtx<'a>, ir: u32) -> &'a str {
    ctx.proto
        .outputs
        .get(ir as usize)
        .map(|o| o.name.as_str())
        .unwrap_or("")
}

/// Product of dims, -1 when unknown.
fn product_or_unknown(dims: &[i64]) -> i64 {
    product(dims).unwrap_or(UNKNOWN_DIM)
}

/// The dim `i` of a shape, unknown for an unknown rank.
fn dim(s: &Shape, i: usize) -> i64 {
    if s.is_unknown_rank() {
        UNKNOWN_DIM
    } else {
        s.0.get(i).copied().unwrap_or(UNKNOWN_DIM)
    }
}

/// Checks that a known rank is at least `min`.
fn check_min_rank(ctx: &InferCtx, name: &str, s: &Shape, min: usize) -> Result<()> {
    match s.rank() {
        Some(r) if r < min => Err(ctx.err(format!(
            "input '{name}' must have rank >= {min}, got rank {r} shape {s}"
        ))),
        _ => Ok(()),
    }
}

/// Largest rank built from a length read off a description.
const MAX_RANK: i64 = 1024;

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

/// The layout of a data format string (one of `allowed`).
fn layout(ctx: &InferCtx, attr: &str, fmt: &str, allowed: &[&str]) -> Result<Layout> {
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
struct Layout {
    rank: usize,
    channel_last: bool,
}

impl Layout {
    fn c(self) -> usize {
        if self.channel_last {
            self.rank - 1
        } else {
            1
        }
    }
    /// The `i`-th spatial dim.
    fn sp(self, i: usize) -> usize {
        if self.channel_last {
            1 + i
        } else {
            2 + i
        }
    }
}

/// The layout of a convolution's or pooling's feature map `x`, by [`super::layout::data_layout`]
/// (`default` is data_format's default): the layout, its format and its name.
fn data_layout(
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
fn in_layout(dtype: DataType, shape: Shape, f: Format) -> Vec<TensorDesc> {
    vec![TensorDesc::new(dtype, shape).with_format(f)]
}

/// Checks a list attribute's length.
fn check_len(ctx: &InferCtx, name: &str, v: &[i64], n: usize, order: &str) -> Result<()> {
    if v.len() != n {
        return Err(ctx.err(format!(
            "attribute '{name}' must have {n} values ({order}), got {v:?}"
        )));
    }
    Ok(())
}

/// The output size of one convolution dim (floor mode), in i128 so no attribute can overflow.
fn conv_out(
    ctx: &InferCtx,
    what: &str,
    size: i64,
    k: i64,
    (s, d): (i64, i64),
    (p0, p1): (i64, i64),
) -> Result<i64> {
    if size < 0 || k < 0 {
        return Ok(UNKNOWN_DIM);
    }
    let (size, k, s, d, p0, p1) = (
        i128::from(size),
        i128::from(k),
        i128::from(s),
        i128::from(d),
        i128::from(p0),
        i128::from(p1),
    );
    let eff = d * (k - 1) + 1;
    let padded = size + p0 + p1;
    if padded < eff {
        return Err(ctx.err(format!(
            "output {what} would be empty: padded input {padded} ({size} + pads {p0} + {p1}) is \
             smaller than the dilated kernel {eff}"
        )));
    }
    let o = (padded - eff) / s + 1;
    i64::try_from(o).map_err(|_| ctx.err(format!("output {what} {o} is too large")))
}

/// Checks that every value of a list attribute at the given positions is >= `min`.
fn check_min_at(
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

// ---------------------------------------------------------------------------------------------
// Activations and normalization
// ---------------------------------------------------------------------------------------------

/// SoftmaxV2 / LogSoftmaxV2: the input's shape; `axes` must lie in its rank.
fn softmax(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let xname = ctx
        .proto
        .inputs
        .first()
        .map(|d| d.name.as_str())
        .unwrap_or("x");
    let x = ctx.req(xname)?;
    let axes = opt_ints(ctx, "axes", &[-1])?;
    if let Some(r) = x.shape.rank() {
        let mut seen = Vec::new();
        for &a in axes {
            let n = if r == 0 && (a == 0 || a == -1) {
                0
            } else {
                ctx.axis(a, r, "attribute 'axes' value")?
            };
            if seen.contains(&n) {
                return Err(ctx.err(format!("attribute 'axes' {axes:?} repeats axis {a}")));
            }
            seen.push(n);
        }
    }
    let mut dt = dtype_like(ctx, 0, Some(x));
    if opt_bool(ctx, "half_to_float", false)?
        && x.dtype == DataType::FLOAT16
        && output_allows(ctx, 0, DataType::FLOAT)
    {
        dt = DataType::FLOAT;
    }
    Ok(single(dt, x.shape.clone()))
}

/// Checks that a parameter input (gamma, beta) has the shape `want` (dims may be unknown).
pub(super) fn check_param_shape(ctx: &InferCtx, name: &str, want: &[i64], why: &str) -> Result<()> {
    let Some(d) = ctx.input(name)? else {
        return Ok(());
    };
    let Some(r) = d.shape.rank() else {
        return Ok(());
    };
    let ok = r == want.len()
        && d.shape
            .0
            .iter()
            .zip(want)
            .all(|(&a, &b)| merge_dim(a, b).is_some());
    if !ok {
        return Err(ctx.err(format!(
            "input '{name}' {} must have shape {} ({why})",
            d.shape,
            Shape::from(want.to_vec())
        )));
    }
    Ok(())
}

/// LayerNorm: y like x; mean and variance keep the dims before begin_norm_axis, the rest are 1.
fn layer_norm(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let bna = opt_int(ctx, "begin_norm_axis", 0)?;
    let bpa = opt_int(ctx, "begin_params_axis", 0)?;
    let stat = match x.shape.rank() {
        None => Shape::unknown_rank(),
        Some(r) => {
            let n = ctx.axis(bna, r, "attribute 'begin_norm_axis'")?;
            let p = ctx.axis(bpa, r, "attribute 'begin_params_axis'")?;
            let want = &x.shape.0[p..];
            let why = format!("the dims of x {} from begin_params_axis {bpa}", x.shape);
            check_param_shape(ctx, "gamma", want, &why)?;
            check_param_shape(ctx, "beta", want, &why)?;
            let mut s = x.shape.0[..n].to_vec();
            s.resize(r, 1);
            Shape::from(s)
        }
    };
    Ok(ctx
        .output_ir
        .iter()
        .map(|&ir| {
            let shape = if out_name(ctx, ir) == "y" {
                x.shape.clone()
            } else {
                stat.clone()
            };
            TensorDesc::new(dtype_like(ctx, ir as usize, Some(x)), shape)
        })
        .collect())
}

/// The channel count of a parameter input (its element count), checked against `c`.
fn check_channel_param(ctx: &InferCtx, name: &str, c: i64, x: &Shape) -> Result<()> {
    let Some(d) = ctx.input(name)? else {
        return Ok(());
    };
    if let Some(n) = d.shape.num_elements() {
        if c >= 0 && n != c {
            return Err(ctx.err(format!(
                "input '{name}' {} has {n} elements, but x {x} has {c} channels",
                d.shape
            )));
        }
    }
    Ok(())
}

/// InstanceNorm: y like x; mean and variance keep N and C, the spatial dims become 1.
fn instance_norm(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let fmt = opt_str(ctx, "data_format", "NDHWC")?;
    let l = layout(ctx, "data_format", fmt, &["NCHW", "NHWC", "NCDHW", "NDHWC"])?;
    let stat = match x.shape.rank() {
        None => Shape::unknown_rank(),
        Some(r) if r == 4 || r == 5 => {
            let c = if l.channel_last { r - 1 } else { 1 };
            check_channel_param(ctx, "gamma", x.shape.0[c], &x.shape)?;
            check_channel_param(ctx, "beta", x.shape.0[c], &x.shape)?;
            Shape::from(
                (0..r)
                    .map(|i| if i == 0 || i == c { x.shape.0[i] } else { 1 })
                    .collect::<Vec<i64>>(),
            )
        }
        Some(r) => {
            return Err(ctx.err(format!(
                "input 'x' must be 4-D or 5-D, got rank {r} shape {}",
                x.shape
            )))
        }
    };
    let gamma = ctx.input("gamma")?;
    Ok(ctx
        .output_ir
        .iter()
        .map(|&ir| {
            if out_name(ctx, ir) == "y" {
                TensorDesc::new(dtype_like(ctx, ir as usize, Some(x)), x.shape.clone())
            } else {
                TensorDesc::new(
                    dtype_like(ctx, ir as usize, gamma.or(Some(x))),
                    stat.clone(),
                )
            }
        })
        .collect())
}

/// GroupNorm: y like x; mean and variance are [N, num_groups].
fn group_norm(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let groups = ctx.attr_int("num_groups")?;
    if groups < 1 {
        return Err(ctx.err(format!("attribute 'num_groups' must be >= 1, got {groups}")));
    }
    let fmt = opt_str(ctx, "data_format", "NHWC")?;
    let channel_last = match fmt {
        "NHWC" | "NDHWC" => true,
        "NCHW" | "NCDHW" | "ND" => false,
        other => {
            return Err(ctx.err(format!(
                "attribute 'data_format' must be \"NCHW\", \"NHWC\", \"NCDHW\", \"NDHWC\" or \"ND\", got {other:?}"
            )))
        }
    };
    check_min_rank(ctx, "x", &x.shape, 2)?;
    let (n, c) = match x.shape.rank() {
        None => (UNKNOWN_DIM, UNKNOWN_DIM),
        Some(r) => (
            x.shape.0[0],
            x.shape.0[if channel_last { r - 1 } else { 1 }],
        ),
    };
    if c >= 0 && c % groups != 0 {
        return Err(ctx.err(format!(
            "x {} has {c} channels ({fmt}), which num_groups {groups} does not divide",
            x.shape
        )));
    }
    check_channel_param(ctx, "gamma", c, &x.shape)?;
    check_channel_param(ctx, "beta", c, &x.shape)?;
    Ok(ctx
        .output_ir
        .iter()
        .map(|&ir| {
            let shape = if out_name(ctx, ir) == "y" {
                x.shape.clone()
            } else {
                Shape::from(vec![n, groups])
            };
            TensorDesc::new(dtype_like(ctx, ir as usize, Some(x)), shape)
        })
        .collect())
}

/// LRN: a 4-D x, unchanged shape.
fn lrn(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    check_rank(ctx, "x", &x.shape, 4)?;
    let r = opt_int(ctx, "depth_radius", 5)?;
    if r < 0 {
        return Err(ctx.err(format!("attribute 'depth_radius' must be >= 0, got {r}")));
    }
    let region = opt_str(ctx, "norm_region", "ACROSS_CHANNELS")?;
    if !matches!(region, "ACROSS_CHANNELS" | "WITHIN_CHANNEL") {
        return Err(ctx.err(format!(
            "attribute 'norm_region' must be \"ACROSS_CHANNELS\" or \"WITHIN_CHANNEL\", got {region:?}"
        )));
    }
    Ok(single(dtype_like(ctx, 0, Some(x)), x.shape.clone()))
}

// ---------------------------------------------------------------------------------------------
// Pooling
// ---------------------------------------------------------------------------------------------

/// How a pooling output size is computed.
#[derive(Clone, Copy, PartialEq)]
enum PoolPad {
    Same,
    Valid,
    /// Explicit pads; ceil mode (PyTorch/Caffe rule: the last window must start inside the
    /// input or the leading pad).
    Calculated {
        ceil: bool,
    },
}

/// One pooled dim.
fn pool_out(
    ctx: &InferCtx,
    what: &str,
    size: i64,
    k: i64,
    s: i64,
    (p0, p1): (i64, i64),
    mode: PoolPad,
) -> Result<i64> {
    if size < 0 {
        return Ok(UNKNOWN_DIM);
    }
    let (size, k, s, p0, p1) = (
        i128::from(size),
        i128::from(k),
        i128::from(s),
        i128::from(p0),
        i128::from(p1),
    );
    let o = match mode {
        PoolPad::Same => (size + s - 1) / s,
        PoolPad::Valid => {
            if size < k {
                return Err(ctx.err(format!(
                    "output {what} would be empty: input {size} is smaller than the window {k} (VALID padding)"
                )));
            }
            (size - k + s) / s
        }
        PoolPad::Calculated { ceil } => {
            let padded = size + p0 + p1;
            if padded < k {
                return Err(ctx.err(format!(
                    "output {what} would be empty: padded input {padded} ({size} + pads {p0} + {p1}) \
                     is smaller than the window {k}"
                )));
            }
            if ceil {
                let mut o = (padded - k + s - 1) / s + 1;
                if (o - 1) * s >= size + p0 {
                    o -= 1;
                }
                o
            } else {
                (padded - k) / s + 1
            }
        }
    };
    i64::try_from(o).map_err(|_| ctx.err(format!("output {what} {o} is too large")))
}

/// The ksize/strides of a 2-D pooling op: H and W of 4-value lists in data_format order.
fn pool_window(ctx: &InferCtx, l: Layout, fmt: &str) -> Result<[(i64, i64); 2]> {
    let ksize = ctx.attr_ints("ksize")?;
    let strides = ctx.attr_ints("strides")?;
    check_len(ctx, "ksize", ksize, 4, &format!("{fmt} order"))?;
    check_len(ctx, "strides", strides, 4, &format!("{fmt} order"))?;
    let (h, w) = (l.sp(0), l.sp(1));
    check_min_at(ctx, "ksize", ksize, &[h, w], 1, "H and W")?;
    check_min_at(ctx, "strides", strides, &[h, w], 1, "H and W")?;
    Ok([(ksize[h], strides[h]), (ksize[w], strides[w])])
}

/// The output of a 2-D pooling: x with its H and W replaced.
fn pooled(x: &Shape, l: Layout, hw: [i64; 2]) -> Shape {
    match x.rank() {
        None => {
            let mut o = vec![UNKNOWN_DIM; 4];
            o[l.sp(0)] = hw[0];
            o[l.sp(1)] = hw[1];
            Shape::from(o)
        }
        Some(_) => {
            let mut o = x.0.clone();
            o[l.sp(0)] = hw[0];
            o[l.sp(1)] = hw[1];
            Shape(o)
        }
    }
}

/// MaxPool / AvgPool: `padding` "SAME" or "VALID".
fn pool_padding(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let (l, xl, fmt) = data_layout(ctx, x, "NHWC", super::layout::DATA_2D)?;
    let win = pool_window(ctx, l, fmt)?;
    let padding = ctx.attr_str("padding")?;
    let mode = match padding {
        "SAME" => PoolPad::Same,
        "VALID" => PoolPad::Valid,
        other => {
            return Err(ctx.err(format!(
                "attribute 'padding' must be \"SAME\" or \"VALID\", got {other:?}"
            )))
        }
    };
    check_rank(ctx, "x", &x.shape, 4)?;
    let mut hw = [0i64; 2];
    for (i, name) in ["height", "width"].iter().enumerate() {
        hw[i] = pool_out(
            ctx,
            name,
            dim(&x.shape, l.sp(i)),
            win[i].0,
            win[i].1,
            (0, 0),
            mode,
        )?;
    }
    Ok(in_layout(
        dtype_like(ctx, 0, Some(x)),
        pooled(&x.shape, l, hw),
        xl,
    ))
}

/// MaxPoolV3 / AvgPoolV2: `padding_mode` CALCULATED (explicit pads), SAME or VALID; ceil_mode;
/// global_pooling.
fn pool_v2(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let (l, xl, fmt) = data_layout(ctx, x, "NCHW", super::layout::DATA_2D)?;
    let win = pool_window(ctx, l, fmt)?;
    let pads = opt_ints(ctx, "pads", &[0, 0, 0, 0])?;
    check_len(ctx, "pads", pads, 4, "top, bottom, left, right")?;
    let ceil = opt_bool(ctx, "ceil_mode", false)?;
    let global = opt_bool(ctx, "global_pooling", false)?;
    let pm = opt_str(ctx, "padding_mode", "CALCULATED")?;
    let mode = match pm {
        "SAME" => PoolPad::Same,
        "VALID" => PoolPad::Valid,
        "CALCULATED" => {
            if let Some(p) = pads.iter().find(|&&p| p < 0) {
                return Err(ctx.err(format!("attribute 'pads' {pads:?} has negative value {p}")));
            }
            PoolPad::Calculated { ceil }
        }
        other => {
            return Err(ctx.err(format!(
            "attribute 'padding_mode' must be \"CALCULATED\", \"SAME\" or \"VALID\", got {other:?}"
        )))
        }
    };
    if ctx.proto.attr("divisor_override").is_some() {
        let d = opt_int(ctx, "divisor_override", 0)?;
        if d < 0 {
            return Err(ctx.err(format!(
                "attribute 'divisor_override' must be >= 0, got {d}"
            )));
        }
    }
    check_rank(ctx, "x", &x.shape, 4)?;
    let hw = if global {
        [1, 1]
    } else {
        let mut hw = [0i64; 2];
        for (i, name) in ["height", "width"].iter().enumerate() {
            let p = (pads[2 * i], pads[2 * i + 1]);
            hw[i] = pool_out(
                ctx,
                name,
                dim(&x.shape, l.sp(i)),
                win[i].0,
                win[i].1,
                p,
                mode,
            )?;
        }
        hw
    };
    Ok(in_layout(
        dtype_like(ctx, 0, Some(x)),
        pooled(&x.shape, l, hw),
        xl,
    ))
}

/// GlobalAveragePool: N and C kept, every other dim 1.
fn global_pool(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    check_min_rank(ctx, "x", &x.shape, 3)?;
    let out = match x.shape.rank() {
        None => Shape::unknown_rank(),
        Some(r) => Shape::from(
            (0..r)
                .map(|i| if i < 2 { x.shape.0[i] } else { 1 })
                .collect::<Vec<i64>>(),
        ),
    };
    Ok(single(dtype_like(ctx, 0, Some(x)), out))
}

/// Pooling (Caffe): window/stride [h, w], pad [top, bottom, left, right], ceil_mode 0 (ceil)
/// or 1 (floor); an int8 x gives an int32 y.
fn caffe_pooling(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let (l, xl, _) = data_layout(ctx, x, "NCHW", super::layout::DATA_2D)?;
    let window = opt_ints(ctx, "window", &[1, 1])?;
    let stride = opt_ints(ctx, "stride", &[1, 1])?;
    let pad = opt_ints(ctx, "pad", &[0, 0, 0, 0])?;
    check_len(ctx, "window", window, 2, "h, w")?;
    check_len(ctx, "stride", stride, 2, "h, w")?;
    check_len(ctx, "pad", pad, 4, "top, bottom, left, right")?;
    check_min_at(ctx, "window", window, &[0, 1], 1, "all")?;
    check_min_at(ctx, "stride", stride, &[0, 1], 1, "all")?;
    check_min_at(ctx, "pad", pad, &[0, 1, 2, 3], 0, "all")?;
    let ceil = match opt_int(ctx, "ceil_mode", 0)? {
        0 => true,
        1 => false,
        other => {
            return Err(ctx.err(format!(
                "attribute 'ceil_mode' must be 0 (ceil) or 1 (floor), got {other}"
            )))
        }
    };
    check_rank(ctx, "x", &x.shape, 4)?;
    let hw = if opt_bool(ctx, "global_pooling", false)? {
        [1, 1]
    } else {
        let mut hw = [0i64; 2];
        for (i, name) in ["height", "width"].iter().enumerate() {
            let p = (pad[2 * i], pad[2 * i + 1]);
            let mode = PoolPad::Calculated { ceil };
            hw[i] = pool_out(
                ctx,
                name,
                dim(&x.shape, l.sp(i)),
                window[i],
                stride[i],
                p,
                mode,
            )?;
        }
        hw
    };
    let dt = if x.dtype == DataType::INT8 {
        DataType::INT32
    } else {
        dtype_like(ctx, 0, Some(x))
    };
    Ok(in_layout(dt, pooled(&x.shape, l, hw), xl))
}

// ---------------------------------------------------------------------------------------------
// Padding
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// Slicing
// ---------------------------------------------------------------------------------------------

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

/// The masks of a StridedSlice.
struct Masks {
    begin: i64,
    end: i64,
    ellipsis: i64,
    new_axis: i64,
    shrink: i64,
}

fn bit(mask: i64, i: usize) -> bool {
    i < 63 && (mask >> i) & 1 == 1
}

/// One sliced dim of size `d` (known): TensorFlow's canonical begin/end with clamping.
fn strided_dim(d: i64, b: i64, e: i64, s: i64, bm: bool, em: bool) -> i64 {
    let (lower, upper) = if s > 0 { (0, d) } else { (-1, d - 1) };
    let canon = |v: i64, masked: bool, begin: bool| -> i64 {
        if masked {
            if (s > 0) == begin {
                lower
            } else {
                upper
            }
        } else {
            let v = if v < 0 { v.saturating_add(d) } else { v };
            v.clamp(lower, upper)
        }
    };
    let (b, e) = (canon(b, bm, true), canon(e, em, false));
    let interval = i128::from(e) - i128::from(b);
    let s = i128::from(s);
    if interval == 0 || (interval < 0) != (s < 0) {
        0
    } else {
        let q = interval / s + i128::from(interval % s != 0);
        q as i64
    }
}

/// StridedSlice (begin/end/strides tensors) / StridedSliceD (attributes), with TensorFlow's
/// begin/end/ellipsis/new-axis/shrink-axis masks, negative indices and clamping.
fn strided_slice(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let dt = dtype_like(ctx, 0, Some(x));
    let m = Masks {
        begin: opt_int(ctx, "begin_mask", 0)?,
        end: opt_int(ctx, "end_mask", 0)?,
        ellipsis: opt_int(ctx, "ellipsis_mask", 0)?,
        new_axis: opt_int(ctx, "new_axis_mask", 0)?,
        shrink: opt_int(ctx, "shrink_axis_mask", 0)?,
    };
    if m.ellipsis.count_ones() > 1 || m.ellipsis < 0 {
        return Err(ctx.err(format!(
            "attribute 'ellipsis_mask' {} has more than one bit set; only one ellipsis is allowed",
            m.ellipsis
        )));
    }
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
    // Dims of x covered by the ellipsis (or by the implicit one at the end).
    let real = (0..n)
        .filter(|&i| !bit(m.ellipsis, i) && !bit(m.new_axis, i))
        .count();
    if real > r {
        return Err(ctx.err(format!(
            "the slice spec has {real} indices that consume dims, more than the rank {r} of x {}",
            x.shape
        )));
    }
    let ell = r - real;
    let known = vals.iter().all(Option::is_some);
    let mut out: Vec<i64> = Vec::new();
    let mut j = 0usize; // next dim of x
    let mut saw_ellipsis = false;
    for i in 0..n {
        if bit(m.ellipsis, i) {
            saw_ellipsis = true;
            out.extend_from_slice(&x.shape.0[j..j + ell]);
            j += ell;
            continue;
        }
        if bit(m.new_axis, i) {
            out.push(1);
            continue;
        }
        let d = x.shape.0[j];
        let shrink = bit(m.shrink, i);
        if !known {
            if !shrink {
                out.push(UNKNOWN_DIM);
            }
            j += 1;
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
            out.push(strided_dim(d, b, e, s, bit(m.begin, i), bit(m.end, i)));
        }
        j += 1;
    }
    if !saw_ellipsis {
        out.extend_from_slice(&x.shape.0[j..]);
    }
    Ok(single(dt, Shape::from(out)))
}

// ---------------------------------------------------------------------------------------------
// Gather and scatter
// ---------------------------------------------------------------------------------------------

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
    let (Some(ri), Some(rt), Some(ru)) = (idx.rank(), target.rank(), upd.rank()) else {
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
    let ok = ru == want.len()
        && upd
            .0
            .iter()
            .zip(&want)
            .all(|(&a, &b)| merge_dim(a, b).is_some());
    if !ok {
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
    let sin = ctx.req("shape")?;
    let dt = dtype_like(ctx, 0, Some(x));
    let len = vector_len(ctx, "shape", Some(sin))?;
    let out = match ctx.const_ints("shape")? {
        Some(v) => {
            if let Some((i, d)) = v.iter().enumerate().find(|(_, &d)| d < 0) {
                return Err(ctx.err(format!(
                    "input 'shape' {v:?} has negative dim {d} at index {i}"
                )));
            }
            Shape::from(v)
        }
        None => len.map(unknown_dims_of).unwrap_or_else(Shape::unknown_rank),
    };
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

// ---------------------------------------------------------------------------------------------
// Broadcast and resize
// ---------------------------------------------------------------------------------------------

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
                let n = (n as usize).max(xr);
                let mut o = vec![UNKNOWN_DIM; n];
                for (j, &d) in x.shape.0.iter().enumerate() {
                    if d != 1 {
                        o[n - xr + j] = d;
                    }
                }
                Shape::from(o)
            }
            _ => Shape::unknown_rank(),
        },
    };
    Ok(single(dt, out))
}

/// Positions of H and W of a 4-D image by its tensor format (NCHW, else NHWC).
fn image_hw(x: &TensorDesc) -> (usize, usize) {
    if x.format == Format::NCHW {
        (2, 3)
    } else {
        (1, 2)
    }
}

/// ResizeNearestNeighborV2 / ResizeBilinearV2: H and W from the constant `size` [h, w].
fn resize_2d(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let sin = ctx.req("size")?;
    check_rank(ctx, "x", &x.shape, 4)?;
    if opt_bool(ctx, "align_corners", false)? && opt_bool(ctx, "half_pixel_centers", false)? {
        return Err(
            ctx.err("attributes 'align_corners' and 'half_pixel_centers' cannot both be true")
        );
    }
    if let Some(n) = vector_len(ctx, "size", Some(sin))? {
        if n != 2 {
            return Err(ctx.err(format!(
                "input 'size' must hold 2 values [new_height, new_width], got shape {}",
                sin.shape
            )));
        }
    }
    let hw = match ctx.const_ints("size")? {
        Some(v) => {
            if v.len() != 2 || v.iter().any(|&d| d <= 0) {
                return Err(ctx.err(format!(
                    "input 'size' must hold 2 positive values [new_height, new_width], got {v:?}"
                )));
            }
            [v[0], v[1]]
        }
        None => [UNKNOWN_DIM, UNKNOWN_DIM],
    };
    let (h, w) = image_hw(x);
    let mut out = match x.shape.rank() {
        Some(_) => x.shape.0.to_vec(),
        None => vec![UNKNOWN_DIM; 4],
    };
    out[h] = hw[0];
    out[w] = hw[1];
    let dt = if ctx.proto.attr("dtype").is_some() {
        let t = attr_dtype(ctx, "dtype", Some(DataType::FLOAT))?;
        if !output_allows(ctx, 0, t) {
            return Err(ctx.err(format!(
                "attribute 'dtype' is {t}, which output 'y' does not allow"
            )));
        }
        t
    } else {
        dtype_like(ctx, 0, Some(x))
    };
    Ok(single(dt, Shape::from(out)))
}

/// Resize (ONNX): the constant `sizes`, or x's dims times the constant `scales` (floored); one
/// value per dim, or [h, w] for a 4-D x (placed by its format). Empty constants count as absent.
fn resize(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let dt = dtype_like(ctx, 0, Some(x));
    let mode = opt_str(ctx, "mode", "nearest")?;
    if !matches!(mode, "nearest" | "linear" | "cubic") {
        return Err(ctx.err(format!(
            "attribute 'mode' must be \"nearest\", \"linear\" or \"cubic\", got {mode:?}"
        )));
    }
    let sizes = match ctx.input("sizes")? {
        Some(_) => ctx.const_ints("sizes")?.filter(|v| !v.is_empty()),
        None => None,
    };
    let scales = match ctx.const_of("scales")? {
        Some(t) => Some(
            t.to_f64_vec()
                .map_err(|e| ctx.err(format!("input 'scales': {e}")))?,
        )
        .filter(|v| !v.is_empty()),
        None => None,
    };
    if sizes.is_some() && scales.is_some() {
        return Err(ctx
            .err("inputs 'sizes' and 'scales' are both given; only one of them may be non-empty"));
    }
    let Some(r) = x.shape.rank() else {
        return Ok(single(dt, Shape::unknown_rank()));
    };
    // Dims addressed by a list of `n` values.
    let targets = |name: &str, n: usize| -> Result<Vec<usize>> {
        if n == r {
            Ok((0..r).collect())
        } else if n == 2 && r == 4 {
            let (h, w) = image_hw(x);
            Ok(vec![h, w])
        } else {
            Err(ctx.err(format!(
                "input '{name}' has {n} values, x {} needs one per dim ({r})",
                x.shape
            )))
        }
    };
    let mut out = x.shape.0.to_vec();
    if let Some(s) = sizes {
        let pos = targets("sizes", s.len())?;
        if let Some(v) = s.iter().find(|&&v| v < 0) {
            return Err(ctx.err(format!("input 'sizes' {s:?} has negative size {v}")));
        }
        for (p, v) in pos.into_iter().zip(s) {
            out[p] = v;
        }
    } else if let Some(s) = scales {
        let pos = targets("scales", s.len())?;
        if let Some(v) = s.iter().find(|&&v| v.is_nan() || v <= 0.0) {
            return Err(ctx.err(format!("input 'scales' {s:?} has non-positive scale {v}")));
        }
        for (p, v) in pos.into_iter().zip(s) {
            if out[p] >= 0 {
                out[p] = (out[p] as f64 * v).floor() as i64;
            }
        }
    } else {
        out = vec![UNKNOWN_DIM; r];
    }
    Ok(single(dt, Shape::from(out)))
}

// ---------------------------------------------------------------------------------------------
// Convolutions
// ---------------------------------------------------------------------------------------------

/// A filter's layout by [`super::layout::filter_layout`] and the positions in it of the out
/// channels ("N"), in channels ("C") and spatial dims.
fn filter_nd<const R: usize>(
    ctx: &InferCtx,
    f: &TensorDesc,
    x: &TensorDesc,
    allowed: &[Format],
) -> Result<([usize; R], Format)> {
    let fl = super::layout::filter_layout(Some(f), Some(x), allowed).map_err(|e| ctx.err(e))?;
    let pos = super::layout::filter_positions(fl)
        .and_then(|p| <[usize; R]>::try_from(p).ok())
        .ok_or_else(|| ctx.err(format!("input 'filter' has format {fl}")))?;
    Ok((pos, fl))
}

/// The dtype of a convolution output: the bound type, else x's, with int8 giving int32.
fn conv_dtype(ctx: &InferCtx, x: &TensorDesc) -> DataType {
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

/// Checks an optional 1-D bias against the output channels.
fn check_bias(ctx: &InferCtx, oc: i64) -> Result<()> {
    let Some(b) = ctx.input("bias")? else {
        return Ok(());
    };
    match b.shape.rank() {
        Some(1) if oc >= 0 && b.shape.0[0] >= 0 && b.shape.0[0] != oc => Err(ctx.err(format!(
            "input 'bias' {} must have the {oc} output channels",
            b.shape
        ))),
        Some(1) | None => Ok(()),
        Some(r) => Err(ctx.err(format!(
            "input 'bias' must be 1-D, got rank {r} shape {}",
            b.shape
        ))),
    }
}

/// The common attributes of a 2-D convolution, checked.
struct Conv2dAttrs<'a> {
    l: Layout,
    xl: Format,
    fmt: &'static str,
    strides: &'a [i64],
    dilations: &'a [i64],
    pads: &'a [i64],
}

fn conv2d_attrs<'a>(ctx: &InferCtx<'a>, x: &TensorDesc) -> Result<Conv2dAttrs<'a>> {
    let (l, xl, fmt) = data_layout(ctx, x, "NHWC", super::layout::DATA_2D)?;
    let order = format!("{fmt} order");
    let strides = ctx.attr_ints("strides")?;
    check_len(ctx, "strides", strides, 4, &order)?;
    let dilations = opt_ints(ctx, "dilations", &[1, 1, 1, 1])?;
    check_len(ctx, "dilations", dilations, 4, &order)?;
    let pads = ctx.attr_ints("pads")?;
    check_len(ctx, "pads", pads, 4, "top, bottom, left, right")?;
    let hw = [l.sp(0), l.sp(1)];
    check_min_at(ctx, "strides", strides, &hw, 1, "H and W")?;
    check_min_at(ctx, "dilations", dilations, &hw, 1, "H and W")?;
    Ok(Conv2dAttrs {
        l,
        xl,
        fmt,
        strides,
        dilations,
        pads,
    })
}

/// Conv2DTranspose: y has the shape held in the constant `input_size`; otherwise
/// (in - 1) * stride - pads + dilation * (k - 1) + 1 + output_padding per spatial dim, and
/// filter C * groups channels.
fn conv2d_transpose(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let filter = ctx.req("filter")?;
    let Conv2dAttrs {
        l,
        xl,
        fmt,
        strides,
        dilations,
        pads,
    } = conv2d_attrs(ctx, x)?;
    let op = opt_ints(ctx, "output_padding", &[0, 0, 0, 0])?;
    check_len(ctx, "output_padding", op, 4, &format!("{fmt} order"))?;
    let groups = opt_int(ctx, "groups", 1)?;
    if groups < 1 {
        return Err(ctx.err(format!("attribute 'groups' must be >= 1, got {groups}")));
    }
    check_rank(ctx, "x", &x.shape, 4)?;
    check_rank(ctx, "filter", &filter.shape, 4)?;
    let (fp, fl) = filter_nd::<4>(ctx, filter, x, super::layout::FILTER_2D)?;
    let (fn_, fc) = (dim(&filter.shape, fp[0]), dim(&filter.shape, fp[1]));
    let xc = dim(&x.shape, l.c());
    if merge_dim(xc, fn_).is_none() {
        return Err(ctx.err(format!(
            "channel mismatch: x {} has {xc} channels ({fmt}), filter {} ({fl}) has {fn_} in its N dim",
            x.shape, filter.shape
        )));
    }
    let oc = if fc >= 0 {
        fc.saturating_mul(groups)
    } else {
        UNKNOWN_DIM
    };
    check_bias(ctx, oc)?;
    let dt = conv_dtype(ctx, x);
    let isz = ctx.req("input_size")?;
    if let Some(n) = vector_len(ctx, "input_size", Some(isz))? {
        if n != 4 {
            return Err(ctx.err(format!(
                "input 'input_size' must hold 4 values ({fmt} order), got shape {}",
                isz.shape
            )));
        }
    }
    if let Some(v) = ctx.const_ints("input_size")? {
        if v.len() != 4 || v.iter().any(|&d| d < 0) {
            return Err(ctx.err(format!(
                "input 'input_size' must hold 4 dims >= 0 ({fmt} order), got {v:?}"
            )));
        }
        if merge_dim(v[l.c()], oc).is_none() {
            return Err(ctx.err(format!(
                "input 'input_size' {v:?} has {} channels, filter {} with groups {groups} gives {oc}",
                v[l.c()],
                filter.shape
            )));
        }
        return Ok(in_layout(dt, Shape::from(v), xl));
    }
    let mut out = vec![UNKNOWN_DIM; 4];
    out[0] = dim(&x.shape, 0);
    out[l.c()] = oc;
    for i in 0..2 {
        let (p, size, k) = (
            l.sp(i),
            dim(&x.shape, l.sp(i)),
            dim(&filter.shape, fp[2 + i]),
        );
        if size < 0 || k < 0 {
            continue;
        }
        let o = (i128::from(size) - 1) * i128::from(strides[p])
            - i128::from(pads[2 * i])
            - i128::from(pads[2 * i + 1])
            + i128::from(dilations[p]) * (i128::from(k) - 1)
            + 1
            + i128::from(op[p]);
        if o < 0 {
            return Err(ctx.err(format!(
                "the transposed convolution gives a negative output size {o} for dim {p}"
            )));
        }
        out[p] = i64::try_from(o).map_err(|_| ctx.err("output size is too large"))?;
    }
    Ok(in_layout(dt, Shape::from(out), xl))
}

/// DepthwiseConv2D: each input channel convolved with K filters; y has C * K channels (the
/// product of the filter's N and C dims, [H, W, C, K] for HWCN).
fn depthwise_conv2d(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let filter = ctx.req("filter")?;
    let Conv2dAttrs {
        l,
        xl,
        fmt,
        strides,
        dilations,
        pads,
    } = conv2d_attrs(ctx, x)?;
    if let Some(p) = pads.iter().find(|&&p| p < 0) {
        return Err(ctx.err(format!("attribute 'pads' {pads:?} has negative value {p}")));
    }
    check_rank(ctx, "x", &x.shape, 4)?;
    check_rank(ctx, "filter", &filter.shape, 4)?;
    let (fp, fl) = filter_nd::<4>(ctx, filter, x, super::layout::FILTER_2D)?;
    let (fn_, fc) = (dim(&filter.shape, fp[0]), dim(&filter.shape, fp[1]));
    let xc = dim(&x.shape, l.c());
    if fc >= 0 && fc != 1 && merge_dim(xc, fc).is_none() {
        return Err(ctx.err(format!(
            "channel mismatch: x {} has {xc} channels ({fmt}), filter {} ({fl}) has {fc}",
            x.shape, filter.shape
        )));
    }
    let oc = match (fn_, fc) {
        (a, b) if a >= 0 && b >= 0 => a.saturating_mul(b),
        _ => UNKNOWN_DIM,
    };
    check_bias(ctx, oc)?;
    let mut out = vec![UNKNOWN_DIM; 4];
    out[0] = dim(&x.shape, 0);
    out[l.c()] = oc;
    for (i, name) in ["height", "width"].iter().enumerate() {
        let p = l.sp(i);
        let k = dim(&filter.shape, fp[2 + i]);
        if k == 0 {
            return Err(ctx.err(format!("filter {} has kernel {name} 0", filter.shape)));
        }
        out[p] = conv_out(
            ctx,
            name,
            dim(&x.shape, p),
            k,
            (strides[p], dilations[p]),
            (pads[2 * i], pads[2 * i + 1]),
        )?;
    }
    Ok(in_layout(conv_dtype(ctx, x), Shape::from(out), xl))
}

/// Conv3D: 5-D x (NDHWC or NCDHW) and filter (NCDHW, NDHWC or DHWCN), in the layouts
/// [`super::layout`] gives them; y in x's layout.
fn conv3d(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let filter = ctx.req("filter")?;
    let (l, xl, fmt) = data_layout(ctx, x, "NDHWC", super::layout::DATA_3D)?;
    let order = format!("{fmt} order");
    let strides = ctx.attr_ints("strides")?;
    check_len(ctx, "strides", strides, 5, &order)?;
    let dilations = opt_ints(ctx, "dilations", &[1, 1, 1, 1, 1])?;
    check_len(ctx, "dilations", dilations, 5, &order)?;
    let pads = ctx.attr_ints("pads")?;
    check_len(ctx, "pads", pads, 6, "head, tail, top, bottom, left, right")?;
    let sp = [l.sp(0), l.sp(1), l.sp(2)];
    check_min_at(ctx, "strides", strides, &sp, 1, "D, H and W")?;
    check_min_at(ctx, "dilations", dilations, &sp, 1, "D, H and W")?;
    if let Some(p) = pads.iter().find(|&&p| p < 0) {
        return Err(ctx.err(format!("attribute 'pads' {pads:?} has negative value {p}")));
    }
    let groups = opt_int(ctx, "groups", 1)?;
    if groups < 1 {
        return Err(ctx.err(format!("attribute 'groups' must be >= 1, got {groups}")));
    }
    check_rank(ctx, "x", &x.shape, 5)?;
    check_rank(ctx, "filter", &filter.shape, 5)?;
    // Filter positions: out channels, in channels / groups, D, H, W.
    let (fp, fl) = filter_nd::<5>(ctx, filter, x, super::layout::FILTER_3D)?;
    let (kn, kc) = (dim(&filter.shape, fp[0]), dim(&filter.shape, fp[1]));
    let c = dim(&x.shape, l.c());
    if c >= 0 && kc >= 0 && i128::from(c) != i128::from(kc) * i128::from(groups) {
        return Err(ctx.err(format!(
            "channel mismatch: x {} has {c} input channels ({fmt}), filter {} ({fl}) has {kc} per group x groups {groups}",
            x.shape, filter.shape
        )));
    }
    if kn >= 0 && kn % groups != 0 {
        return Err(ctx.err(format!(
            "filter {} has {kn} output channels, which groups {groups} does not divide",
            filter.shape
        )));
    }
    check_bias(ctx, kn)?;
    let mut out = vec![UNKNOWN_DIM; 5];
    out[0] = dim(&x.shape, 0);
    out[l.c()] = kn;
    for (i, name) in ["depth", "height", "width"].iter().enumerate() {
        let p = l.sp(i);
        let k = dim(&filter.shape, fp[2 + i]);
        if k == 0 {
            return Err(ctx.err(format!("filter {} has kernel {name} 0", filter.shape)));
        }
        out[p] = conv_out(
            ctx,
            name,
            dim(&x.shape, p),
            k,
            (strides[p], dilations[p]),
            (pads[2 * i], pads[2 * i + 1]),
        )?;
    }
    Ok(in_layout(conv_dtype(ctx, x), Shape::from(out), xl))
}

/// BiasAdd: x's shape; bias is 1-D with x's channel count.
fn bias_add(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let b = ctx.req("bias")?;
    let fmt = opt_str(ctx, "data_format", "NHWC")?;
    let channel_last = match fmt {
        "NHWC" | "NDHWC" => true,
        "NCHW" | "NCDHW" => false,
        other => {
            return Err(ctx.err(format!(
                "attribute 'data_format' must be \"NHWC\", \"NCHW\", \"NDHWC\" or \"NCDHW\", got {other:?}"
            )))
        }
    };
    check_min_rank(ctx, "x", &x.shape, 2)?;
    let c = match x.shape.rank() {
        Some(r) => x.shape.0[if channel_last { r - 1 } else { 1 }],
        None => UNKNOWN_DIM,
    };
    if let Some(n) = vector_len(ctx, "bias", Some(b))? {
        if merge_dim(n, c).is_none() {
            return Err(ctx.err(format!(
                "input 'bias' {} has {n} values, x {} has {c} channels ({fmt})",
                b.shape, x.shape
            )));
        }
    }
    Ok(single(dtype_like(ctx, 0, Some(x)), x.shape.clone()))
}

// ---------------------------------------------------------------------------------------------
// Shape manipulation
// ---------------------------------------------------------------------------------------------

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
            let d = out[p];
            if d >= 0 && d % b != 0 {
                return Err(ctx.err(format!(
                    "the {name} of x {} is {d}, which block_size {b} does not divide",
                    x.shape
                )));
            }
            if d >= 0 {
                out[p] = d / b;
            }
        }
        if out[c] >= 0 {
            out[c] = out[c].saturating_mul(bb);
        }
    } else {
        let d = out[c];
        if d >= 0 && d % bb != 0 {
            return Err(ctx.err(format!(
                "the channels of x {} are {d}, which block_size^2 = {bb} does not divide",
                x.shape
            )));
        }
        if d >= 0 {
            out[c] = d / bb;
        }
        for p in [h, w] {
            if out[p] >= 0 {
                out[p] = out[p].saturating_mul(b);
            }
        }
    }
    Ok(single(dt, Shape::from(out)))
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
    let num = ctx.attr_int("num")?;
    let axis = opt_int(ctx, "axis", 0)?;
    if num < 1 {
        return Err(ctx.err(format!("attribute 'num' must be >= 1, got {num}")));
    }
    let n_out = ctx.num_outputs();
    if n_out as i64 != num {
        return Err(ctx.err(format!(
            "attribute 'num' is {num} but the node has {n_out} outputs 'y'"
        )));
    }
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

/// One parsed einsum operand: labels before and after an optional ellipsis.
struct Term {
    pre: Vec<char>,
    post: Vec<char>,
    ellipsis: bool,
}

fn parse_term(ctx: &InferCtx, t: &str, eq: &str) -> Result<Term> {
    let bad = || {
        ctx.err(format!(
            "attribute 'equation' {eq:?} has an invalid term {t:?}"
        ))
    };
    let (pre, post, ellipsis) = match t.find("...") {
        Some(p) => (&t[..p], &t[p + 3..], true),
        None => (t, "", false),
    };
    let ok = |s: &str| s.chars().all(|c| c.is_ascii_alphabetic());
    if !ok(pre) || !ok(post) {
        return Err(bad());
    }
    Ok(Term {
        pre: pre.chars().collect(),
        post: post.chars().collect(),
        ellipsis,
    })
}

/// Einsum: the output dims from the equation's labels; ellipsis dims broadcast.
fn einsum(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let xs = ctx.inputs_of("x")?;
    let eq: String = ctx
        .attr_str("equation")?
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let dt = dtype_like(ctx, 0, xs.first().copied());
    let (lhs, rhs) = match eq.split_once("->") {
        Some((l, r)) => (l, Some(r)),
        None => (eq.as_str(), None),
    };
    let terms: Vec<Term> = lhs
        .split(',')
        .map(|t| parse_term(ctx, t, &eq))
        .collect::<Result<_>>()?;
    if terms.len() != xs.len() {
        return Err(ctx.err(format!(
            "attribute 'equation' {eq:?} has {} operands, input 'x' has {} tensors",
            terms.len(),
            xs.len()
        )));
    }
    // Label dims, label counts, and the broadcast ellipsis dims.
    let mut dims: Vec<(char, i64)> = Vec::new();
    let mut counts: Vec<(char, usize)> = Vec::new();
    let mut ell: Option<Shape> = Some(Shape::scalar());
    for (k, (t, x)) in terms.iter().zip(&xs).enumerate() {
        let labels: Vec<char> = t.pre.iter().chain(&t.post).copied().collect();
        for &c in &labels {
            match counts.iter_mut().find(|(l, _)| *l == c) {
                Some(e) => e.1 += 1,
                None => counts.push((c, 1)),
            }
        }
        let Some(r) = x.shape.rank() else {
            if t.ellipsis {
                ell = None;
            }
            continue;
        };
        let nl = labels.len();
        if (t.ellipsis && r < nl) || (!t.ellipsis && r != nl) {
            return Err(ctx.err(format!(
                "operand {k} of equation {eq:?} has {nl} labels, but x{k} {} has rank {r}",
                x.shape
            )));
        }
        let ne = r - nl;
        let mut pos = 0usize;
        let mut assign = |c: char, d: i64| -> Result<()> {
            match dims.iter_mut().find(|(l, _)| *l == c) {
                Some(e) => {
                    e.1 = merge_dim(e.1, d).ok_or_else(|| {
                        ctx.err(format!(
                            "label '{c}' of equation {eq:?} has size {} and {d} (x{k} {})",
                            e.1, x.shape
                        ))
                    })?;
                }
                None => dims.push((c, d)),
            }
            Ok(())
        };
        for &c in &t.pre {
            assign(c, x.shape.0[pos])?;
            pos += 1;
        }
        if t.ellipsis {
            let e = Shape::from(x.shape.0[pos..pos + ne].to_vec());
            if let Some(acc) = &ell {
                ell = Some(broadcast(acc, &e).map_err(|m| {
                    ctx.err(format!(
                        "the ellipsis dims of equation {eq:?} cannot be broadcast: {m}"
                    ))
                })?);
            }
            pos += ne;
        }
        for &c in &t.post {
            assign(c, x.shape.0[pos])?;
            pos += 1;
        }
    }
    let any_ellipsis = terms.iter().any(|t| t.ellipsis);
    let out_term = match rhs {
        Some(r) => parse_term(ctx, r, &eq)?,
        None => {
            let mut once: Vec<char> = counts
                .iter()
                .filter(|(_, n)| *n == 1)
                .map(|(c, _)| *c)
                .collect();
            once.sort_unstable();
            Term {
                pre: Vec::new(),
                post: once,
                ellipsis: any_ellipsis,
            }
        }
    };
    let mut out = Vec::new();
    let dim_of = |c: char| -> Result<i64> {
        if !counts.iter().any(|(l, _)| *l == c) {
            return Err(ctx.err(format!(
                "output label '{c}' of equation {eq:?} appears in no operand"
            )));
        }
        Ok(dims
            .iter()
            .find(|(l, _)| *l == c)
            .map_or(UNKNOWN_DIM, |e| e.1))
    };
    for &c in &out_term.pre {
        out.push(dim_of(c)?);
    }
    if out_term.ellipsis {
        match &ell {
            Some(e) => out.extend_from_slice(&e.0),
            None => {
                for &c in &out_term.post {
                    dim_of(c)?;
                }
                return Ok(single(dt, Shape::unknown_rank()));
            }
        }
    }
    for &c in &out_term.post {
        out.push(dim_of(c)?);
    }
    Ok(single(dt, Shape::from(out)))
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

/// Size: a scalar of `dtype` (int32 or int64).
fn size_op(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    ctx.req("x")?;
    let t = attr_dtype(ctx, "dtype", Some(DataType::INT32))?;
    if !matches!(t, DataType::INT32 | DataType::INT64) {
        return Err(ctx.err(format!(
            "attribute 'dtype' must be DT_INT32 (3) or DT_INT64 (9), got {t}"
        )));
    }
    Ok(single(t, Shape::scalar()))
}

/// Rank: an int32 scalar.
fn rank_op(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    ctx.req("x")?;
    Ok(single(DataType::INT32, Shape::scalar()))
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
            let same = p.shape.0.len() == idx.shape.0.len()
                && p.shape
                    .0
                    .iter()
                    .zip(&idx.shape.0)
                    .all(|(&a, &b)| merge_dim(a, b).is_some());
            if !same {
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
