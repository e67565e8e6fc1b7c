//! Image ops: Col2Im and ImageDecoder.
//!
//! ImageDecoder is the ge-rs operator of the same name (GE's DecodeImage family reads DT_STRING
//! contents and has no BGR): a uint8 byte stream in, [H, W, C] uint8 out.
//!
//! GE has no Col2Im operator in the library; Col2Im is composed of GE operators with its image
//! and block shapes read at run time (they are inputs, and often graph inputs): a scatter-add
//! of every column element to its flat position in the padded image, then the pads cropped.

use super::util::*;
use crate::error::{Error, Result};
use crate::translate::NodeCtx;
use es_core::infer::image::PixelFormat;
use es_core::{AttrValue, DataType, OutPort};

/// The family's translators.
pub(super) const TABLE: &[(&str, Translator)] =
    &[("Col2Im", col2im), ("ImageDecoder", image_decoder)];

/// ImageDecoder: the ge-rs operator, `pixel_format` checked here (RGB, BGR or Grayscale).
fn image_decoder(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["pixel_format"])?;
    let f = ctx.attr_s("pixel_format", "RGB")?;
    if PixelFormat::parse(&f).is_none() {
        return Err(Error::tr(format!("ImageDecoder: {}", PixelFormat::bad(&f))));
    }
    let dt = ctx.in_dtype(0)?;
    if dt != DataType::UINT8 {
        return Err(Error::tr(format!(
            "ImageDecoder: encoded_stream must be uint8, got {dt}"
        )));
    }
    let x = ctx.input(0)?;
    one(ctx.op1(
        "ImageDecoder",
        &[x],
        vec![("pixel_format", AttrValue::String(f))],
    )?)
}

/// Element `j` of the 1-D int64 port `v`, as a scalar.
fn elem(ctx: &mut NodeCtx<'_>, v: OutPort, j: usize) -> Result<OutPort> {
    let i = ctx.const_i64(&[j as i64], &[])?;
    let a = ctx.const_i64(&[0], &[])?;
    ctx.op1("GatherV2", &[v, i, a], vec![])
}

/// `(idx / stride) % dim` of int64 ports (the digit of a row-major multi-index).
fn digit(ctx: &mut NodeCtx<'_>, idx: OutPort, stride: OutPort, dim: OutPort) -> Result<OutPort> {
    let q = ctx.bin("FloorDiv", idx, stride)?;
    ctx.bin("FloorMod", q, dim)
}

/// Col2Im: input [N, C * prod(block), L] with channel `c * prod(block) + k` (k row-major over
/// the block) and L row-major over the sliding positions. Column element (k, l) lands at
/// padded position `l_j * stride_j + k_j * dilation_j` on each spatial dim j; overlapping
/// elements add up (ScatterElements with reduction add on the flattened padded image), then
/// the pads are cut away.
fn col2im(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["dilations", "pads", "strides"])?;
    let nd = match (ctx.vec_len(1)?, ctx.vec_len(2)?) {
        (Some(a), Some(b)) if a == b && a >= 1 => a,
        (Some(a), Some(b)) => {
            return Err(Error::tr(format!(
                "Col2Im image_shape ({a} values) and block_shape ({b} values) must have the \
                 same length >= 1"
            )))
        }
        _ => {
            return Err(Error::unsupported(
                "Col2Im: the lengths of image_shape and block_shape must be known at import",
            ))
        }
    };
    if ctx.input_rank(0)? != 3 {
        return Err(Error::tr(
            "Col2Im input must have rank 3 [N, C * prod(block), L]",
        ));
    }
    let d = spatial_list(ctx, "dilations", nd, 1, 1)?;
    let s = spatial_list(ctx, "strides", nd, 1, 1)?;
    let p = ctx.attr_ints("pads")?.unwrap_or_else(|| vec![0; 2 * nd]);
    if p.len() != 2 * nd || p.iter().any(|&v| v < 0) {
        return Err(Error::tr(format!(
            "attribute 'pads' must have {} values >= 0, got {p:?}",
            2 * nd
        )));
    }
    check_bound(&p, MAX_WINDOW, "attribute 'pads'")?;
    let x = ctx.input(0)?;
    let dt = ctx.in_dtype(0)?;
    let img = ctx.input(1)?;
    let img = ctx.cast(img, I64)?;
    let blk = ctx.input(2)?;
    let blk = ctx.cast(blk, I64)?;
    let one_i = ctx.const_i64(&[1], &[])?;
    let zero_i = ctx.const_i64(&[0], &[])?;
    // Per dim: padded size P_j and the count of sliding positions Lc_j.
    let mut padded = Vec::with_capacity(nd);
    let mut blocks = Vec::with_capacity(nd);
    let mut counts = Vec::with_capacity(nd);
    for j in 0..nd {
        let i_j = elem(ctx, img, j)?;
        let b_j = elem(ctx, blk, j)?;
        let pad = ctx.const_i64(&[p[j] + p[nd + j]], &[])?;
        let p_j = ctx.bin("Add", i_j, pad)?;
        let dil = ctx.const_i64(&[d[j]], &[])?;
        let bm1 = ctx.bin("Sub", b_j, one_i)?;
        let eff = ctx.bin("Mul", bm1, dil)?;
        let eff = ctx.bin("Add", eff, one_i)?;
        let span = ctx.bin("Sub", p_j, eff)?;
        let st = ctx.const_i64(&[s[j]], &[])?;
        let lc = ctx.bin("FloorDiv", span, st)?;
        let lc = ctx.bin("Add", lc, one_i)?;
        padded.push(p_j);
        blocks.push(b_j);
        counts.push(lc);
    }
    let mut k_total = one_i;
    let mut l_total = one_i;
    for j in 0..nd {
        k_total = ctx.bin("Mul", k_total, blocks[j])?;
        l_total = ctx.bin("Mul", l_total, counts[j])?;
    }
    let kidx = ctx.op1("Range", &[zero_i, k_total, one_i], vec![])?;
    let col = ctx.const_i64(&[-1, 1], &[2])?;
    let kidx = ctx.op1("Reshape", &[kidx, col], vec![])?;
    let lidx = ctx.op1("Range", &[zero_i, l_total, one_i], vec![])?;
    let row = ctx.const_i64(&[1, -1], &[2])?;
    let lidx = ctx.op1("Reshape", &[lidx, row], vec![])?;
    // Flat positions [K, L] in the padded image, innermost dim first.
    let (mut sk, mut sl, mut sp) = (one_i, one_i, one_i);
    let mut flat = None;
    for j in (0..nd).rev() {
        let k_j = digit(ctx, kidx, sk, blocks[j])?;
        let l_j = digit(ctx, lidx, sl, counts[j])?;
        sk = ctx.bin("Mul", sk, blocks[j])?;
        sl = ctx.bin("Mul", sl, counts[j])?;
        let st = ctx.const_i64(&[s[j]], &[])?;
        let dil = ctx.const_i64(&[d[j]], &[])?;
        let a = ctx.bin("Mul", l_j, st)?;
        let b = ctx.bin("Mul", k_j, dil)?;
        let pos = ctx.bin("Add", a, b)?;
        let pos = ctx.bin("Mul", pos, sp)?;
        flat = Some(match flat {
            None => pos,
            Some(f) => ctx.bin("Add", f, pos)?,
        });
        sp = ctx.bin("Mul", sp, padded[j])?;
    }
    let flat = flat.ok_or_else(|| Error::tr("internal: Col2Im without spatial dims"))?;
    // Updates [N, C, K * L]; indices broadcast to them; zeros [N, C, prod(P)].
    let kl = ctx.bin("Mul", k_total, l_total)?;
    let one1 = ctx.const_i64(&[1], &[1])?;
    let kl1 = ctx.op1("Reshape", &[kl, one1], vec![])?;
    let n1 = ctx.shape_from(&[Dim::Of(x, 0)])?;
    let m1 = ctx.const_i64(&[-1], &[1])?;
    let shape = ctx.concat(&[n1, m1, kl1], 0)?;
    let upd = ctx.op1("Reshape", &[x, shape], vec![])?;
    let us = ctx.shape_i64(upd)?;
    let idx_shape = ctx.const_i64(&[1, 1, -1], &[3])?;
    let idx = ctx.op1("Reshape", &[flat, idx_shape], vec![])?;
    let idx = ctx.op1("BroadcastTo", &[idx, us], vec![])?;
    let nc = ctx.gather_const(us, &[0, 1])?;
    let total = ctx.op1("Reshape", &[sp, one1], vec![])?;
    let dims = ctx.concat(&[nc, total], 0)?;
    let zero = ctx.scalar(dt, 0.0)?;
    let data = ctx.op1("Fill", &[dims, zero], vec![])?;
    let y = ctx.op1(
        "ScatterElements",
        &[data, idx, upd],
        vec![("axis", AttrValue::Int(2)), ("reduction", st("add"))],
    )?;
    let pv = ctx.pack(&padded, 0)?;
    let shape = ctx.concat(&[nc, pv], 0)?;
    let y = ctx.op1("Reshape", &[y, shape], vec![])?;
    if p.iter().all(|&v| v == 0) {
        return one(y);
    }
    // Crop: [p0_j, p0_j + I_j) on each spatial dim; N and C whole (mask bits 0 and 1).
    let mut b = vec![0i64, 0];
    b.extend_from_slice(&p[..nd]);
    let r = nd as i64 + 2;
    let begin = ctx.const_i64(&b, &[r])?;
    let head = ctx.const_i64(&p[..nd], &[nd as i64])?;
    let e = ctx.bin("Add", img, head)?;
    let z2 = ctx.const_i64(&[0, 0], &[2])?;
    let end = ctx.concat(&[z2, e], 0)?;
    let strides = ctx.const_i64(&vec![1; nd + 2], &[r])?;
    one(ctx.strided_slice(y, [begin, end, strides], 3)?)
}
