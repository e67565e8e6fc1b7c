//! Inference rules of the convolutions (Conv2D, Conv3D, DepthwiseConv2D, Conv2DTranspose,
//! DeformableConv2D) and BiasAdd.

use super::common::{
    channel_format, check_dim, check_len, check_min_at, check_min_rank, check_rank, data_layout,
    dim, dtype_like, in_layout, merge_dim, merge_named, opt_bool, opt_int, opt_ints, opt_str,
    product_dtype, single, vector_len, Layout,
};
use super::{InferCtx, InferFn};
use crate::error::Result;
use crate::opmath::{same_out, window_out, SizeError};
use crate::types::{Format, Shape, TensorDesc, UNKNOWN_DIM};

/// The rule of an operator type of this family, if it has one.
pub(super) fn rule(op_type: &str) -> Option<InferFn> {
    Some(match op_type {
        "Conv2D" => conv2d,
        "Conv2DTranspose" => conv2d_transpose,
        "DepthwiseConv2D" => depthwise_conv2d,
        "Conv3D" => conv3d,
        "BiasAdd" => bias_add,
        "DeformableConv2D" => deformable_conv2d,
        _ => return None,
    })
}

/// Conv2D: 4-D x and filter, each read in the layout [`layout`](super::layout) gives it (x's
/// stated format, else `data_format`; the filter's, else the one x states, else NCHW); y in x's
/// layout.
fn conv2d(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    use super::layout;
    let x = ctx.req("x")?;
    let filter = ctx.req("filter")?;
    let data_format = opt_str(ctx, "data_format", "NHWC")?;
    let xl = layout::data_layout(Some(x), data_format, layout::DATA_2D).map_err(|e| ctx.err(e))?;
    let fl =
        layout::filter_layout(Some(filter), Some(x), layout::FILTER_2D).map_err(|e| ctx.err(e))?;
    let fmt = if layout::channel_last(xl) {
        "NHWC"
    } else {
        "NCHW"
    };
    let (ni, ci, hi, wi) = if layout::channel_last(xl) {
        (0, 3, 1, 2)
    } else {
        (0, 1, 2, 3)
    };
    let four = |name: &str, v: &[i64]| -> Result<()> {
        if v.len() != 4 {
            return Err(ctx.err(format!(
                "attribute '{name}' must have 4 values ({fmt} order), got {v:?}"
            )));
        }
        Ok(())
    };
    let strides = ctx.attr_ints("strides")?;
    four("strides", strides)?;
    let dilations = opt_ints(ctx, "dilations", &[1, 1, 1, 1])?;
    four("dilations", dilations)?;
    let pads = ctx.attr_ints("pads")?;
    if pads.len() != 4 {
        return Err(ctx.err(format!(
            "attribute 'pads' must have 4 values [top, bottom, left, right], got {pads:?}"
        )));
    }
    let groups = groups_attr(ctx, "groups")?;
    let (sh, sw) = (strides[hi], strides[wi]);
    let (dh, dw) = (dilations[hi], dilations[wi]);
    if sh < 1 || sw < 1 {
        return Err(ctx.err(format!(
            "attribute 'strides' {strides:?} must have H and W strides >= 1"
        )));
    }
    if dh < 1 || dw < 1 {
        return Err(ctx.err(format!(
            "attribute 'dilations' {dilations:?} must have H and W dilations >= 1"
        )));
    }
    let padding = opt_str(ctx, "padding", "")?;
    if !matches!(padding, "" | "SAME" | "VALID") {
        return Err(ctx.err(format!(
            "attribute 'padding' must be \"SAME\", \"VALID\" or empty, got {padding:?}"
        )));
    }
    if padding.is_empty() {
        check_pads(ctx, pads)?;
    }
    check_rank(ctx, "x", &x.shape, 4)?;
    check_rank(ctx, "filter", &filter.shape, 4)?;
    // Filter positions: out_c, in_c / groups, kh, kw.
    let (fo, fc, fh, fw) = match layout::filter_positions(fl) {
        Some(&[o, c, h, w]) => (o, c, h, w),
        _ => return Err(ctx.err(format!("input 'filter' has format {fl}"))),
    };
    let xd = |i: usize| {
        if x.shape.is_unknown_rank() {
            UNKNOWN_DIM
        } else {
            x.shape.0[i]
        }
    };
    let fd = |i: usize| {
        if filter.shape.is_unknown_rank() {
            UNKNOWN_DIM
        } else {
            filter.shape.0[i]
        }
    };
    let (n, c, h, w) = (xd(ni), xd(ci), xd(hi), xd(wi));
    let (kn, kc, kh, kw) = (fd(fo), fd(fc), fd(fh), fd(fw));
    for (what, k) in [("height", kh), ("width", kw)] {
        if k == 0 {
            return Err(ctx.err(format!(
                "filter {} ({}) has kernel {what} 0; it must be >= 1",
                filter.shape, fl
            )));
        }
    }
    if c >= 0 && kc >= 0 && i128::from(c) != i128::from(kc) * i128::from(groups) {
        return Err(ctx.err(format!(
            "channel mismatch: x {} has {c} input channels ({fmt}), filter {} ({}) has {kc} per group x groups {groups} = {}",
            x.shape,
            filter.shape,
            fl,
            i128::from(kc) * i128::from(groups)
        )));
    }
    if kn >= 0 && kn % groups != 0 {
        return Err(ctx.err(format!(
            "filter {} has {kn} output channels, which groups {groups} does not divide",
            filter.shape
        )));
    }
    if c >= 0 && c % groups != 0 {
        return Err(ctx.err(format!(
            "x {} has {c} input channels, which groups {groups} does not divide",
            x.shape
        )));
    }
    // Output size along one spatial dim: SAME gives ceil(size / stride) whatever the kernel.
    let out_dim = |what: &str, size: i64, k: i64, s: i64, d: i64, pad: (i64, i64)| -> Result<i64> {
        match padding {
            _ if size < 0 => Ok(UNKNOWN_DIM),
            "SAME" => Ok(same_out(size, s)),
            "" => conv_out(ctx, what, size, k, (s, d), pad),
            _ => conv_out(ctx, what, size, k, (s, d), (0, 0)),
        }
    };
    let oh = out_dim("height", h, kh, sh, dh, (pads[0], pads[1]))?;
    let ow = out_dim("width", w, kw, sw, dw, (pads[2], pads[3]))?;
    if let Some(b) = ctx.input("bias")? {
        match b.shape.rank() {
            Some(1) if kn >= 0 && b.shape.0[0] >= 0 && b.shape.0[0] != kn => {
                return Err(ctx.err(format!(
                    "input 'bias' {} must have the {kn} output channels of filter {}",
                    b.shape, filter.shape
                )));
            }
            Some(1) | None => {}
            Some(r) => {
                return Err(ctx.err(format!(
                    "input 'bias' must be 1-D, got rank {r} shape {}",
                    b.shape
                )))
            }
        }
    }
    let out = if fmt == "NCHW" {
        vec![n, kn, oh, ow]
    } else {
        vec![n, oh, ow, kn]
    };
    Ok(vec![TensorDesc::new(
        product_dtype(ctx, x),
        Shape::from(out),
    )
    .with_format(xl)])
}

/// The output size of one convolution dim (floor mode, [`window_out`]); unknown when the size
/// or the kernel is.
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
    window_out(size, k, s, d, (p0, p1), false).map_err(|e| {
        ctx.err(match e {
            SizeError::Empty { padded, span } => format!(
                "output {what} would be empty: padded input {padded} ({size} + pads {p0} + {p1}) \
                 is smaller than the dilated kernel {span}"
            ),
            SizeError::TooLarge(o) => format!("output {what} {o} is too large"),
            SizeError::NotPositive => {
                format!("output {what}: kernel {k}, stride {s} and dilation {d} must be >= 1")
            }
        })
    })
}

/// `groups` (or another group count), checked >= 1.
fn groups_attr(ctx: &InferCtx, name: &str) -> Result<i64> {
    let g = opt_int(ctx, name, 1)?;
    if g < 1 {
        return Err(ctx.err(format!("attribute '{name}' must be >= 1, got {g}")));
    }
    Ok(g)
}

/// Refuses negative explicit pads.
fn check_pads(ctx: &InferCtx, pads: &[i64]) -> Result<()> {
    match pads.iter().find(|&&p| p < 0) {
        Some(p) => Err(ctx.err(format!("attribute 'pads' {pads:?} has negative value {p}"))),
        None => Ok(()),
    }
}

/// The output of a forward convolution of `x` with `filter` (floor mode, explicit pads) and
/// `oc` output channels, in x's layout `xl`, after checking the bias: `fp` gives the filter's
/// dims (out, in, spatial...), `attrs` the strides, dilations (in x's order) and pads ([begin,
/// end] per spatial dim).
fn conv_output(
    ctx: &InferCtx,
    (x, filter): (&TensorDesc, &TensorDesc),
    a: &ConvAttrs,
    fp: &[usize],
    oc: i64,
) -> Result<Vec<TensorDesc>> {
    let (l, strides, dilations, pads) = (a.l, a.strides, a.dilations, a.pads);
    check_bias(ctx, oc)?;
    let mut out = vec![UNKNOWN_DIM; fp.len()];
    out[0] = dim(&x.shape, 0);
    out[l.c()] = oc;
    const AXES: [&str; 3] = ["depth", "height", "width"];
    let n = fp.len() - 2;
    for (i, name) in AXES[3 - n..].iter().enumerate() {
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
    Ok(in_layout(product_dtype(ctx, x), Shape::from(out), a.xl))
}

/// Checks that x and the filter have rank R; the filter's layout by
/// [`super::layout::filter_layout`], the positions in it of the out channels ("N"), in channels
/// ("C") and spatial dims, and its (out, in) channel counts.
fn filter_nd<const R: usize>(
    ctx: &InferCtx,
    f: &TensorDesc,
    x: &TensorDesc,
    allowed: &[Format],
) -> Result<([usize; R], Format, (i64, i64))> {
    check_rank(ctx, "x", &x.shape, R)?;
    check_rank(ctx, "filter", &f.shape, R)?;
    let fl = super::layout::filter_layout(Some(f), Some(x), allowed).map_err(|e| ctx.err(e))?;
    let pos = super::layout::filter_positions(fl)
        .and_then(|p| <[usize; R]>::try_from(p).ok())
        .ok_or_else(|| ctx.err(format!("input 'filter' has format {fl}")))?;
    let channels = (dim(&f.shape, pos[0]), dim(&f.shape, pos[1]));
    Ok((pos, fl, channels))
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

/// The common attributes of a 2-D or 3-D convolution, checked.
struct ConvAttrs<'a> {
    l: Layout,
    xl: Format,
    fmt: &'static str,
    strides: &'a [i64],
    dilations: &'a [i64],
    pads: &'a [i64],
}

/// Reads and checks the layout, strides, dilations and pads of a convolution with `nd` (2 or 3)
/// spatial dims.
fn conv_attrs<'a>(ctx: &InferCtx<'a>, x: &TensorDesc, nd: usize) -> Result<ConvAttrs<'a>> {
    let (default_fmt, allowed, pads_order, sp_names) = if nd == 3 {
        let order = "head, tail, top, bottom, left, right";
        ("NDHWC", super::layout::DATA_3D, order, "D, H and W")
    } else {
        let order = "top, bottom, left, right";
        ("NHWC", super::layout::DATA_2D, order, "H and W")
    };
    let (l, xl, fmt) = data_layout(ctx, x, default_fmt, allowed)?;
    let order = format!("{fmt} order");
    let strides = ctx.attr_ints("strides")?;
    check_len(ctx, "strides", strides, nd + 2, &order)?;
    let dilations = opt_ints(ctx, "dilations", &[1, 1, 1, 1, 1][..nd + 2])?;
    check_len(ctx, "dilations", dilations, nd + 2, &order)?;
    let pads = ctx.attr_ints("pads")?;
    check_len(ctx, "pads", pads, 2 * nd, pads_order)?;
    let sp: Vec<usize> = (0..nd).map(|i| l.sp(i)).collect();
    check_min_at(ctx, "strides", strides, &sp, 1, sp_names)?;
    check_min_at(ctx, "dilations", dilations, &sp, 1, sp_names)?;
    Ok(ConvAttrs {
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
    let a = conv_attrs(ctx, x, 2)?;
    let (l, xl, fmt) = (a.l, a.xl, a.fmt);
    let (strides, dilations, pads) = (a.strides, a.dilations, a.pads);
    let op = opt_ints(ctx, "output_padding", &[0, 0, 0, 0])?;
    check_len(ctx, "output_padding", op, 4, &format!("{fmt} order"))?;
    let groups = groups_attr(ctx, "groups")?;
    let (fp, fl, (fn_, fc)) = filter_nd::<4>(ctx, filter, x, super::layout::FILTER_2D)?;
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
    let dt = product_dtype(ctx, x);
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

/// The inputs x and filter of an `nd`-D convolution and its attributes ([`conv_attrs`]), the
/// pads checked.
fn conv_inputs<'a>(
    ctx: &InferCtx<'a>,
    nd: usize,
) -> Result<(&'a TensorDesc, &'a TensorDesc, ConvAttrs<'a>)> {
    let x = ctx.req("x")?;
    let filter = ctx.req("filter")?;
    let a = conv_attrs(ctx, x, nd)?;
    check_pads(ctx, a.pads)?;
    Ok((x, filter, a))
}

/// DepthwiseConv2D: each input channel convolved with K filters; y has C * K channels (the
/// product of the filter's N and C dims, [H, W, C, K] for HWCN).
fn depthwise_conv2d(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let (x, filter, a) = conv_inputs(ctx, 2)?;
    let (l, fmt) = (a.l, a.fmt);
    let (fp, fl, (fn_, fc)) = filter_nd::<4>(ctx, filter, x, super::layout::FILTER_2D)?;
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
    conv_output(ctx, (x, filter), &a, &fp, oc)
}

/// Conv3D: 5-D x (NDHWC or NCDHW) and filter (NCDHW, NDHWC or DHWCN), in the layouts
/// [`super::layout`] gives them; y in x's layout.
fn conv3d(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let (x, filter, a) = conv_inputs(ctx, 3)?;
    let (l, fmt) = (a.l, a.fmt);
    let groups = groups_attr(ctx, "groups")?;
    // Filter positions: out channels, in channels / groups, D, H, W.
    let (fp, fl, (kn, kc)) = filter_nd::<5>(ctx, filter, x, super::layout::FILTER_3D)?;
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
    conv_output(ctx, (x, filter), &a, &fp, kn)
}

/// BiasAdd: x's shape; bias is 1-D with x's channel count.
fn bias_add(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let b = ctx.req("bias")?;
    let (fmt, channel_last) = channel_format(ctx)?;
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

/// DeformableConv2D: Conv2D's output sizes; offsets carry deformable_groups x kh x kw x
/// (3 when modulated, else 2) channels at the output's spatial size.
fn deformable_conv2d(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    let filter = ctx.req("filter")?;
    let offsets = ctx.req("offsets")?;
    let xl = super::layout::data_layout(
        Some(x),
        opt_str(ctx, "data_format", "NHWC")?,
        super::layout::DATA_2D,
    )
    .map_err(|e| ctx.err(e))?;
    let fmt = xl.name().trim_start_matches("FORMAT_");
    let (ci, hi, wi) = if super::layout::channel_last(xl) {
        (3, 1, 2)
    } else {
        (1, 2, 3)
    };
    let strides = ctx.attr_ints("strides")?;
    let pads = ctx.attr_ints("pads")?;
    let dilations = opt_ints(ctx, "dilations", &[1, 1, 1, 1])?;
    for (name, v) in [
        ("strides", strides),
        ("pads", pads),
        ("dilations", dilations),
    ] {
        if v.len() != 4 {
            return Err(ctx.err(format!("attribute '{name}' must have 4 values, got {v:?}")));
        }
    }
    let (sh, sw, dh, dw) = (strides[hi], strides[wi], dilations[hi], dilations[wi]);
    if sh < 1 || sw < 1 || dh < 1 || dw < 1 {
        return Err(ctx.err(format!(
            "H/W strides {strides:?} and dilations {dilations:?} must be >= 1"
        )));
    }
    check_pads(ctx, pads)?;
    let groups = groups_attr(ctx, "groups")?;
    let dgroups = groups_attr(ctx, "deformable_groups")?;
    let modulated = opt_bool(ctx, "modulated", true)?;
    check_rank(ctx, "x", &x.shape, 4)?;
    check_rank(ctx, "filter", &filter.shape, 4)?;
    check_rank(ctx, "offsets", &offsets.shape, 4)?;
    let fl = super::layout::filter_layout(Some(filter), Some(x), super::layout::FILTER_2D)
        .map_err(|e| ctx.err(e))?;
    let (fo, fc, fh, fw) = match super::layout::filter_positions(fl) {
        Some(&[o, c, h, w]) => (o, c, h, w),
        _ => return Err(ctx.err(format!("input 'filter' has format {fl}"))),
    };
    let (n, c, h, w) = (
        dim(&x.shape, 0),
        dim(&x.shape, ci),
        dim(&x.shape, hi),
        dim(&x.shape, wi),
    );
    let (kn, kc, kh, kw) = (
        dim(&filter.shape, fo),
        dim(&filter.shape, fc),
        dim(&filter.shape, fh),
        dim(&filter.shape, fw),
    );
    if c >= 0 && kc >= 0 && i128::from(c) != i128::from(kc) * i128::from(groups) {
        return Err(ctx.err(format!(
            "channel mismatch: x {} has {c} input channels ({fmt}), filter {} has {kc} per group x groups {groups}",
            x.shape, filter.shape
        )));
    }
    let out = |size: i64, k: i64, s: i64, d: i64, p: i64| -> Result<i64> {
        if size < 0 || k < 0 {
            return Ok(UNKNOWN_DIM);
        }
        window_out(size, k, s, d, (p, 0), false).map_err(|e| {
            ctx.err(match e {
                SizeError::Empty { span, .. } => format!(
                    "input {} (padded by {p}) is smaller than the dilated kernel ({span})",
                    x.shape
                ),
                e => format!("input {} (padded by {p}): output size {e:?}", x.shape),
            })
        })
    };
    let ho = out(h, kh, sh, dh, pads[0] + pads[1])?;
    let wo = out(w, kw, sw, dw, pads[2] + pads[3])?;
    // Offsets: [N, dg*kh*kw*k, Ho, Wo] (NCHW) or [N, Ho, Wo, dg*kh*kw*k] (NHWC).
    merge_named(ctx, ("x", &x.shape, 0), ("offsets", &offsets.shape, 0))?;
    if kh >= 0 && kw >= 0 {
        let per = if modulated { 3 } else { 2 };
        let want = dgroups * kh * kw * per;
        check_dim(
            ctx,
            "offsets",
            &offsets.shape,
            ci,
            want,
            "deformable_groups x kh x kw x (3 modulated / 2)",
        )?;
    }
    let oh = merge_dim(ho, dim(&offsets.shape, hi));
    let ow = merge_dim(wo, dim(&offsets.shape, wi));
    let (Some(oh), Some(ow)) = (oh, ow) else {
        return Err(ctx.err(format!(
            "input 'offsets' {} must have the output's spatial size {ho} x {wo}",
            offsets.shape
        )));
    };
    if let Some(b) = ctx.input("bias")? {
        check_rank(ctx, "bias", &b.shape, 1)?;
        let bl = dim(&b.shape, 0);
        if merge_dim(bl, kn).is_none() {
            return Err(ctx.err(format!(
                "input 'bias' {} must have the filter's {kn} output channels",
                b.shape
            )));
        }
    }
    let dims = if ci == 1 {
        [n, kn, oh, ow]
    } else {
        [n, oh, ow, kn]
    };
    Ok(vec![TensorDesc::new(
        dtype_like(ctx, 0, Some(x)),
        Shape::from_slice(&dims),
    )
    .with_format(xl)])
}
