//! GridSampler2D / GridSampler3D (PyTorch's `grid_sample`); the semantics are in [`super`]'s
//! documentation.

use super::{real_out, Real};
use crate::error::{Error, Result};
use crate::kernels::common::{cast_to, numel, std_slice, str_attr, sub, with_capacity};
use crate::kernels::{input, Kernel, NodeInfo};
use crate::value::Value;
use es_core::DataType;

// ---------------------------------------------------------------------------------------------
// GridSampler2D / GridSampler3D (PyTorch's grid_sample)
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq)]
enum GsInterp {
    Bilinear,
    Nearest,
    Bicubic,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum GsPad {
    Zeros,
    Border,
    Reflection,
}

#[derive(Clone, Copy, Debug)]
struct GsAttrs {
    interp: GsInterp,
    pad: GsPad,
    align: bool,
    /// 2 or 3 spatial dims.
    sd: usize,
    channel_last: bool,
}

fn gs_unnormalize<W: Real>(c: W, size: usize, align: bool) -> W {
    let s = W::of_i(size as i64);
    let two = W::of(2.0);
    if align {
        (c + W::ONE) / two * (s - W::ONE)
    } else {
        ((c + W::ONE) * s - W::ONE) / two
    }
}

/// PyTorch's clip_coordinates: min(size - 1, max(c, 0)) (NaN gives size - 1).
fn gs_clip<W: Real>(c: W, size: usize) -> W {
    let m = if c < W::ZERO { W::ZERO } else { c };
    let lim = W::of_i(size as i64 - 1);
    if m < lim {
        m
    } else {
        lim
    }
}

/// PyTorch's reflect_coordinates over [twice_low / 2, twice_high / 2].
fn gs_reflect<W: Real>(c: W, twice_low: i64, twice_high: i64) -> W {
    if twice_low == twice_high {
        return W::ZERO;
    }
    let two = W::of(2.0);
    let min = W::of_i(twice_low) / two;
    let span = W::of_i(twice_high - twice_low) / two;
    let c = (c - min).abs();
    let extra = c % span;
    let flips = (c / span).floor().to_i64();
    if flips % 2 == 0 {
        extra + min
    } else {
        span - extra + min
    }
}

/// A coordinate after padding (border: clipped, reflection: reflected then clipped).
fn gs_pad<W: Real>(c: W, size: usize, pad: GsPad, align: bool) -> W {
    let s = size as i64;
    match pad {
        GsPad::Zeros => c,
        GsPad::Border => gs_clip(c, size),
        GsPad::Reflection => {
            let r = if align {
                gs_reflect(c, 0, 2 * (s - 1))
            } else {
                gs_reflect(c, -1, 2 * s - 1)
            };
            gs_clip(r, size)
        }
    }
}

/// PyTorch's bicubic coefficients (A = -0.75) at ratio `t`.
fn gs_cubic<W: Real>(t: W) -> [W; 4] {
    let a = W::of(-0.75);
    let (two, three, four, five, eight) =
        (W::of(2.0), W::of(3.0), W::of(4.0), W::of(5.0), W::of(8.0));
    let conv1 = |x: W| ((a + two) * x - (a + three)) * x * x + W::ONE;
    let conv2 = |x: W| ((a * x - five * a) * x + eight * a) * x - four * a;
    let x2 = W::ONE - t;
    [conv2(t + W::ONE), conv1(t), conv1(x2), conv2(x2 + W::ONE)]
}

/// The taps (spatial offset in the input, weight) of every output point of one image: the taps
/// of point `p` are `taps[start[p]..start[p + 1]]`. Taps outside the input are left out.
struct Taps<W> {
    taps: Vec<(usize, W)>,
    start: Vec<usize>,
}

/// The taps of the `p_out` grid points `g` (`sd` coordinates each, x first) over an input of
/// spatial `size` ([D, H, W]; D = 1 in 2D).
fn gs_taps<W: Real>(g: &[W], p_out: usize, size: [usize; 3], a: &GsAttrs) -> Result<Taps<W>> {
    let per = match (a.interp, a.sd) {
        (GsInterp::Nearest, _) => 1,
        (GsInterp::Bilinear, 2) => 4,
        (GsInterp::Bilinear, _) => 8,
        (GsInterp::Bicubic, _) => 16,
    };
    let mut t = Taps {
        taps: with_capacity(p_out.saturating_mul(per))?,
        start: with_capacity(p_out + 1)?,
    };
    let [sd_, sh, sw] = size;
    let (d_, h_, w_) = (sd_ as i64, sh as i64, sw as i64);
    // The offset of (z, y, x) when inside the input.
    let at = |z: i64, y: i64, x: i64| -> Option<usize> {
        ((0..d_).contains(&z) && (0..h_).contains(&y) && (0..w_).contains(&x))
            .then(|| ((z * h_ + y) * w_ + x) as usize)
    };
    for p in 0..p_out {
        t.start.push(t.taps.len());
        let c = sub(g, p * a.sd, a.sd)?;
        let (gx, gy) = (c[0], c[1]);
        let gz = if a.sd == 3 { c[2] } else { W::ZERO };
        match a.interp {
            GsInterp::Bicubic => {
                let ix = gs_unnormalize(gx, sw, a.align);
                let iy = gs_unnormalize(gy, sh, a.align);
                let (x0, y0) = (ix.floor(), iy.floor());
                let (cx, cy) = (gs_cubic(ix - x0), gs_cubic(iy - y0));
                for (i, &wy) in cy.iter().enumerate() {
                    let yy = gs_pad(y0 + W::of_i(i as i64 - 1), sh, a.pad, a.align).to_i64();
                    for (j, &wx) in cx.iter().enumerate() {
                        let xx = gs_pad(x0 + W::of_i(j as i64 - 1), sw, a.pad, a.align).to_i64();
                        if let Some(o) = at(0, yy, xx) {
                            t.taps.push((o, wy * wx));
                        }
                    }
                }
            }
            GsInterp::Nearest | GsInterp::Bilinear => {
                let ix = gs_pad(gs_unnormalize(gx, sw, a.align), sw, a.pad, a.align);
                let iy = gs_pad(gs_unnormalize(gy, sh, a.align), sh, a.pad, a.align);
                let iz = if a.sd == 3 {
                    gs_pad(gs_unnormalize(gz, sd_, a.align), sd_, a.pad, a.align)
                } else {
                    W::ZERO
                };
                if a.interp == GsInterp::Nearest {
                    let (x, y, z) = (
                        ix.round_even().to_i64(),
                        iy.round_even().to_i64(),
                        iz.round_even().to_i64(),
                    );
                    if let Some(o) = at(z, y, x) {
                        t.taps.push((o, W::ONE));
                    }
                    continue;
                }
                let (x0, y0, z0) = (ix.floor(), iy.floor(), iz.floor());
                let wx = [(x0 + W::ONE) - ix, ix - x0];
                let wy = [(y0 + W::ONE) - iy, iy - y0];
                let wz = [(z0 + W::ONE) - iz, iz - z0];
                let (xi, yi, zi) = (x0.to_i64(), y0.to_i64(), z0.to_i64());
                let nz = if a.sd == 3 { 2 } else { 1 };
                for dz in 0..nz {
                    for dy in 0..2 {
                        for dx in 0..2 {
                            let Some(o) = at(
                                zi.saturating_add(dz),
                                yi.saturating_add(dy),
                                xi.saturating_add(dx),
                            ) else {
                                continue;
                            };
                            let w = wx[dx as usize] * wy[dy as usize];
                            let w = if a.sd == 3 { w * wz[dz as usize] } else { w };
                            t.taps.push((o, w));
                        }
                    }
                }
            }
        }
    }
    t.start.push(t.taps.len());
    Ok(t)
}

fn grid_sample<W: Real>(x: &Value, grid: &Value, a: &GsAttrs) -> Result<(Vec<W>, Vec<usize>)> {
    let (xs, gsh) = (x.shape(), grid.shape());
    let sd = a.sd;
    if xs.len() != sd + 2 || gsh.len() != sd + 2 || gsh[sd + 1] != sd || gsh[0] != xs[0] {
        return Err(Error::kernel(format!(
            "x {xs:?} and grid {gsh:?} must be [N, C, {sp}] and [N, {sp_out}, {sd}]",
            sp = if sd == 3 { "D, H, W" } else { "H, W" },
            sp_out = if sd == 3 {
                "D_out, H_out, W_out"
            } else {
                "H_out, W_out"
            },
        )));
    }
    let n = xs[0];
    let (c, sp_in) = if a.channel_last {
        (xs[sd + 1], &xs[1..sd + 1])
    } else {
        (xs[1], &xs[2..])
    };
    let sp_out = &gsh[1..sd + 1];
    let size = if sd == 3 {
        [sp_in[0], sp_in[1], sp_in[2]]
    } else {
        [1, sp_in[0], sp_in[1]]
    };
    let (s_in, p_out) = (numel(sp_in)?, numel(sp_out)?);
    let mut dims = vec![n];
    if a.channel_last {
        dims.extend_from_slice(sp_out);
        dims.push(c);
    } else {
        dims.push(c);
        dims.extend_from_slice(sp_out);
    }
    let total = numel(&dims)?;
    let mut out: Vec<W> = with_capacity(total)?;
    if total == 0 {
        return Ok((out, dims));
    }
    if s_in == 0 {
        return Err(Error::kernel(format!(
            "x {xs:?} has an empty spatial dim to sample from"
        )));
    }
    let xw = cast_to::<W>(x)?;
    let xv = std_slice(&xw);
    let gw = cast_to::<W>(grid)?;
    let gv = std_slice(&gw);
    let img = c * s_in;
    for i in 0..n {
        let t = gs_taps(sub(&gv, i * p_out * sd, p_out * sd)?, p_out, size, a)?;
        let xi = sub(&xv, i * img, img)?;
        let point = |p: usize| &t.taps[t.start[p]..t.start[p + 1]];
        if a.channel_last {
            let mut acc = vec![W::ZERO; c];
            for p in 0..p_out {
                acc.iter_mut().for_each(|v| *v = W::ZERO);
                for &(o, w) in point(p) {
                    for (v, &s) in acc.iter_mut().zip(sub(xi, o * c, c)?) {
                        *v = *v + w * s;
                    }
                }
                out.extend_from_slice(&acc);
            }
        } else {
            for ch in 0..c {
                let plane = sub(xi, ch * s_in, s_in)?;
                for p in 0..p_out {
                    let mut v = W::ZERO;
                    for &(o, w) in point(p) {
                        v = v + w * plane.get(o).copied().unwrap_or(W::ZERO);
                    }
                    out.push(v);
                }
            }
        }
    }
    Ok((out, dims))
}

pub(super) fn grid_sampler_factory(info: &NodeInfo) -> Result<Kernel> {
    let op = info.op().to_string();
    let sd = if op == "GridSampler3D" { 3 } else { 2 };
    let interp = match str_attr(info, "interpolation_mode", "bilinear")?.as_str() {
        "bilinear" => GsInterp::Bilinear,
        "nearest" => GsInterp::Nearest,
        "bicubic" if sd == 2 => GsInterp::Bicubic,
        other => {
            return Err(Error::unsupported(format!(
                "{op} with interpolation_mode {other:?}"
            )))
        }
    };
    let pad = match str_attr(info, "padding_mode", "zeros")?.as_str() {
        "zeros" => GsPad::Zeros,
        "border" => GsPad::Border,
        "reflection" => GsPad::Reflection,
        other => {
            return Err(Error::unsupported(format!(
                "{op} with padding_mode {other:?}"
            )))
        }
    };
    let channel_last = if sd == 3 {
        match str_attr(info, "data_format", "NCDHW")?.as_str() {
            "NCDHW" => false,
            "NDHWC" => true,
            other => {
                return Err(Error::unsupported(format!(
                    "{op} with data_format {other:?}"
                )))
            }
        }
    } else {
        false
    };
    let a = GsAttrs {
        interp,
        pad,
        align: info.bool("align_corners", false)?,
        sd,
        channel_last,
    };
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let grid = input(inputs, 1)?;
        let y = match x.dtype() {
            DataType::DOUBLE => {
                let (v, dims) = grid_sample::<f64>(x, grid, &a)?;
                real_out(&dims, v, DataType::DOUBLE)?
            }
            dt => {
                let (v, dims) = grid_sample::<f32>(x, grid, &a)?;
                real_out(&dims, v, dt)?
            }
        };
        Ok(vec![y])
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::common::testing::f32v as f32s;

    fn gs(interp: GsInterp, pad: GsPad, align: bool) -> GsAttrs {
        GsAttrs {
            interp,
            pad,
            align,
            sd: 2,
            channel_last: false,
        }
    }

    #[test]
    fn grid_sample_identity_padding_and_reflection() {
        let x = f32s(&[1, 1, 2, 3], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        // The pixel centres with align_corners: x in {-1, 0, 1}, y in {-1, 1}.
        let mut g = Vec::new();
        for y in [-1.0f32, 1.0] {
            for xx in [-1.0f32, 0.0, 1.0] {
                g.extend([xx, y]);
            }
        }
        let grid = f32s(&[1, 2, 3, 2], g);
        for interp in [GsInterp::Bilinear, GsInterp::Nearest, GsInterp::Bicubic] {
            let (y, dims) = grid_sample::<f32>(&x, &grid, &gs(interp, GsPad::Zeros, true)).unwrap();
            assert_eq!(dims, vec![1, 1, 2, 3]);
            for (a, b) in y.iter().zip([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]) {
                assert!((a - b).abs() < 1e-5, "{interp:?}: {y:?}");
            }
        }
        // Far outside: zeros gives 0, border the corner value.
        let far = f32s(&[1, 1, 1, 2], vec![5.0, -5.0]);
        let (y, _) =
            grid_sample::<f32>(&x, &far, &gs(GsInterp::Bilinear, GsPad::Zeros, false)).unwrap();
        assert_eq!(y, vec![0.0]);
        let (y, _) =
            grid_sample::<f32>(&x, &far, &gs(GsInterp::Bilinear, GsPad::Border, false)).unwrap();
        assert_eq!(y, vec![3.0]);
        // Reflection about [-0.5, 2.5] (align_corners false): x = 3.0 reflects to 2.0.
        assert_eq!(gs_reflect(3.0f64, -1, 5), 2.0);
        assert_eq!(gs_reflect(-1.5f64, -1, 5), 0.5);
        assert_eq!(gs_reflect(7.0f64, 0, 4), 1.0);
        // A grid that does not match x is an error.
        assert!(grid_sample::<f32>(
            &x,
            &f32s(&[2, 1, 1, 2], vec![0.0; 4]),
            &gs(GsInterp::Bilinear, GsPad::Zeros, false)
        )
        .is_err());
    }
}
