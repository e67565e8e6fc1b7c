//! Kernels of the normalisations: RmsNorm, AddRmsNorm, BatchNorm, LayerNorm, InstanceNorm,
//! GroupNorm and LRN, and SoftmaxV2 and LogSoftmaxV2. BatchNorm, LayerNorm, InstanceNorm,
//! GroupNorm, LRN and the softmaxes accumulate in f64 and round once to the output dtype.

use super::common::{
    array, count_attr, float_out, floats, from_f64, input_desc, need_rank, str_attr, sub,
    with_capacity, zip2,
};
use super::reduce::{axes_of, fold};
use super::vmath;
use super::{input, norm_axis, Kernel, Kernels, NodeInfo};
use crate::error::{Error, Result};
use crate::par;
use crate::value::{Elem, Value};
use es_core::{DataType, Format};
use ndarray::ArrayD;

// ---------------------------------------------------------------------------------------------
// RmsNorm, AddRmsNorm
// ---------------------------------------------------------------------------------------------

/// y = gamma * x * rstd and rstd = 1 / sqrt(mean(x^2) + eps) over each row of `inner` elements
/// (the dims gamma covers), in f64.
fn rms_rows(x: &[f64], gamma: &[f64], eps: f64) -> (Vec<f64>, Vec<f64>) {
    let inner = gamma.len().max(1);
    let mut y = Vec::with_capacity(x.len());
    let mut rstd = Vec::with_capacity(x.len() / inner);
    for row in x.chunks(inner) {
        let ms = row.iter().map(|v| v * v).sum::<f64>() / inner as f64;
        let r = 1.0 / (ms + eps).sqrt();
        y.extend(row.iter().zip(gamma).map(|(v, g)| g * (v * r)));
        rstd.push(r);
    }
    (y, rstd)
}

/// The shape of rstd: x's dims with 1 for the trailing dims gamma covers; gamma's shape must
/// be the trailing dims of x's.
fn rstd_dims(op: &str, x: &[usize], gamma: &[usize]) -> Result<Vec<usize>> {
    if gamma.len() > x.len() || x[x.len() - gamma.len()..] != *gamma {
        return Err(Error::kernel(format!(
            "{op}: gamma {gamma:?} must match the trailing dims of x {x:?}"
        )));
    }
    let lead = x.len() - gamma.len();
    let mut d = x[..lead].to_vec();
    d.resize(x.len(), 1);
    Ok(d)
}

fn rms_norm_factory(info: &NodeInfo) -> Result<Kernel> {
    let eps = f64::from(info.float("epsilon", 1e-6)?);
    let add = info.op() == "AddRmsNorm";
    let op = info.op().to_string();
    Ok(Box::new(move |inputs| {
        let (x, sum, gi) = if add {
            let (x1, x2) = (input(inputs, 0)?, input(inputs, 1)?);
            if x1.shape() != x2.shape() || x1.dtype() != x2.dtype() {
                return Err(Error::kernel(format!(
                    "{op}: x1 {:?} ({}) and x2 {:?} ({}) must have the same shape and dtype",
                    x1.shape(),
                    x1.dtype(),
                    x2.shape(),
                    x2.dtype()
                )));
            }
            let s: Vec<f64> = floats(x1, "x1")?
                .iter()
                .zip(floats(x2, "x2")?)
                .map(|(a, b)| a + b)
                .collect();
            (x1, s, 2)
        } else {
            let x = input(inputs, 0)?;
            (x, floats(x, "x")?, 1)
        };
        let gamma = input(inputs, gi)?;
        let sd = rstd_dims(&op, x.shape(), gamma.shape())?;
        let (y, rstd) = rms_rows(&sum, &floats(gamma, "gamma")?, eps);
        let dt = x.dtype();
        let mut out = vec![
            from_f64(dt, x.shape(), y)?,
            from_f64(DataType::FLOAT, &sd, rstd)?,
        ];
        if add {
            out.push(from_f64(dt, x.shape(), sum)?);
        }
        Ok(out)
    }))
}

/// Per-group mean and (biased) variance of `x`, the group of element `i` being `gid(i)`.
fn group_stats(x: &[f64], groups: usize, gid: impl Fn(usize) -> usize) -> (Vec<f64>, Vec<f64>) {
    let mut sum = vec![0.0; groups];
    let mut cnt = vec![0usize; groups];
    for (i, &v) in x.iter().enumerate() {
        if let (Some(s), Some(c)) = (sum.get_mut(gid(i)), cnt.get_mut(gid(i))) {
            *s += v;
            *c += 1;
        }
    }
    let mean: Vec<f64> = sum.iter().zip(&cnt).map(|(&s, &c)| s / c as f64).collect();
    let mut sq = vec![0.0; groups];
    for (i, &v) in x.iter().enumerate() {
        let g = gid(i);
        if let (Some(s), Some(m)) = (sq.get_mut(g), mean.get(g)) {
            *s += (v - m) * (v - m);
        }
    }
    let var = sq.iter().zip(&cnt).map(|(&s, &c)| s / c as f64).collect();
    (mean, var)
}

/// `x` normalised per group and scaled per channel: (x - mean) / sqrt(var + eps) * g + b.
fn normalize(
    x: &[f64],
    (mean, var): (&[f64], &[f64]),
    eps: f64,
    gid: impl Fn(usize) -> usize,
    (gamma, beta): (&[f64], &[f64]),
    cid: impl Fn(usize) -> usize,
) -> Vec<f64> {
    x.iter()
        .enumerate()
        .map(|(i, &v)| {
            let (g, c) = (gid(i), cid(i));
            let m = mean.get(g).copied().unwrap_or(f64::NAN);
            let s = var.get(g).copied().unwrap_or(f64::NAN);
            let a = gamma.get(c).copied().unwrap_or(f64::NAN);
            let b = beta.get(c).copied().unwrap_or(f64::NAN);
            (v - m) / (s + eps).sqrt() * a + b
        })
        .collect()
}

/// A per-channel parameter: `len` values.
fn param(v: &Value, len: usize, what: &str) -> Result<Vec<f64>> {
    if v.len() != len {
        return Err(Error::kernel(format!(
            "{what} has {} values, expected {len}",
            v.len()
        )));
    }
    Ok(v.to_f64_vec())
}

// ---------------------------------------------------------------------------------------------
// Normalisation
// ---------------------------------------------------------------------------------------------

/// (channel axis, channels, elements after the channel axis) of `xs`.
fn channels(xs: &[usize], channel_last: bool) -> Result<(usize, usize, usize)> {
    if xs.len() < 2 {
        return Err(Error::kernel(format!(
            "x must have rank >= 2 (a channel dim), got {xs:?}"
        )));
    }
    let ca = if channel_last { xs.len() - 1 } else { 1 };
    Ok((ca, xs[ca], xs[ca + 1..].iter().product()))
}

/// BatchNorm (TensorFlow's FusedBatchNormV3). Inference (`is_training` false): y from the mean
/// and variance inputs, which batch_mean/batch_variance and reserve_space_1/2 pass through.
/// Training: y from the batch statistics (biased variance); batch_mean and batch_variance are
/// the running statistics, `(1 - f) * input + f * batch` with f = exponential_avg_factor (the
/// batch's own when f is 1 or the inputs are absent; the variance Bessel-corrected);
/// reserve_space_1/2 the batch mean and biased variance. reserve_space_3 is [0.0].
fn batch_norm_factory(info: &NodeInfo) -> Result<Kernel> {
    let eps = f64::from(info.float("epsilon", 1e-4)?);
    let channel_last = match str_attr(info, "data_format", "NHWC")?.as_str() {
        "NHWC" | "NDHWC" => true,
        "NCHW" | "NCDHW" => false,
        other => {
            return Err(Error::unsupported(format!(
                "BatchNorm with data_format {other:?}"
            )))
        }
    };
    let training = info.bool("is_training", true)?;
    let factor = f64::from(info.float("exponential_avg_factor", 1.0)?);
    let n_out = info.node.outputs.len();
    let y_dt = info.out_dtype(0).ok();
    let stat_dt = float_out(info.out_dtype(1).ok(), DataType::FLOAT);
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let xs = x.shape();
        let (_, c, inner) = channels(xs, channel_last)?;
        let cid = |i: usize| (i / inner.max(1)) % c.max(1);
        let scale = param(input(inputs, 1)?, c, "scale")?;
        let offset = param(input(inputs, 2)?, c, "offset")?;
        let mean_in = match inputs.get(3).copied().flatten() {
            Some(v) => Some(param(v, c, "mean")?),
            None => None,
        };
        let var_in = match inputs.get(4).copied().flatten() {
            Some(v) => Some(param(v, c, "variance")?),
            None => None,
        };
        if !training {
            if let (Some(m), Some(v)) = (&mean_in, &var_in) {
                let factor: Vec<f64> = scale
                    .iter()
                    .zip(v)
                    .map(|(&a, &s)| a / (s + eps).sqrt())
                    .collect();
                let per = Affine {
                    shift: m,
                    factor: &factor,
                    offset: &offset,
                };
                let y = match x {
                    Value::F32(a) => per_channel_affine(a, channel_last, c, inner, per)?,
                    Value::F64(a) => per_channel_affine(a, channel_last, c, inner, per)?,
                    Value::F16(a) => per_channel_affine(a, channel_last, c, inner, per)?,
                    Value::BF16(a) => per_channel_affine(a, channel_last, c, inner, per)?,
                    _ => None,
                };
                if let Some(y) = y.filter(|_| float_out(y_dt, x.dtype()) == x.dtype()) {
                    let mut out = vec![y];
                    for s in [m, v, m, v] {
                        out.push(from_f64(stat_dt, &[c], s.clone())?);
                    }
                    out.push(from_f64(stat_dt, &[1], vec![0.0])?);
                    out.truncate(n_out);
                    return Ok(out);
                }
            }
        }
        let xv = floats(x, "x")?;
        let (m, v, stats) = if training {
            let (bm, bv) = group_stats(&xv, c, cid);
            let count = xv.len().checked_div(c).unwrap_or(0);
            let adjust = if count > 1 {
                count as f64 / (count - 1) as f64
            } else {
                1.0
            };
            let blend = |old: &Option<Vec<f64>>, new: Vec<f64>| -> Vec<f64> {
                match old {
                    Some(o) if factor != 1.0 => o
                        .iter()
                        .zip(&new)
                        .map(|(&a, &b)| (1.0 - factor) * a + factor * b)
                        .collect(),
                    _ => new,
                }
            };
            let running_mean = blend(&mean_in, bm.clone());
            let running_var = blend(&var_in, bv.iter().map(|&s| s * adjust).collect());
            let stats = [running_mean, running_var, bm.clone(), bv.clone()];
            (bm, bv, stats)
        } else {
            let (Some(m), Some(v)) = (mean_in, var_in) else {
                return Err(Error::kernel(
                    "BatchNorm in inference (is_training=false) needs the mean and variance inputs",
                ));
            };
            let stats = [m.clone(), v.clone(), m.clone(), v.clone()];
            (m, v, stats)
        };
        let y = normalize(&xv, (&m, &v), eps, cid, (&scale, &offset), cid);
        let mut out = vec![from_f64(float_out(y_dt, x.dtype()), xs, y)?];
        for s in stats {
            out.push(from_f64(stat_dt, &[c], s)?);
        }
        out.push(from_f64(stat_dt, &[1], vec![0.0])?);
        out.truncate(n_out);
        Ok(out)
    }))
}

/// Per channel k: `y = (x - shift[k]) * factor[k] + offset[k]`.
#[derive(Clone, Copy)]
struct Affine<'a> {
    shift: &'a [f64],
    factor: &'a [f64],
    offset: &'a [f64],
}

/// [`Affine`] over the channels of a standard-layout `x` ([n, c, inner] or [n, inner, c] with
/// `channel_last`), in f64 per element and rounded once to x's dtype, split across the run's
/// threads; `None` when x is not in standard layout.
fn per_channel_affine<T: Elem>(
    x: &ArrayD<T>,
    channel_last: bool,
    c: usize,
    inner: usize,
    per: Affine<'_>,
) -> Result<Option<Value>> {
    let Some(xs) = x.as_slice() else {
        return Ok(None);
    };
    let Affine {
        shift,
        factor,
        offset,
    } = per;
    if shift.len() != c || factor.len() != c || offset.len() != c {
        return Err(Error::kernel(format!(
            "BatchNorm parameters need {c} values per channel"
        )));
    }
    // One unit: a channel's run of `inner` elements, or one position's `c` channels.
    let unit = if channel_last { c } else { inner }.max(1);
    let at = |e: T, ch: usize| T::from_f64((e.to_f64() - shift[ch]) * factor[ch] + offset[ch]);
    let work = par::work(xs.len(), par::cost::NORM);
    let out = if par::chunks_for(work) <= 1 {
        // One thread: the output built as it is computed (not zeroed first).
        let mut out = with_capacity(xs.len())?;
        for (k, src) in xs.chunks(unit).enumerate() {
            if channel_last {
                out.extend(src.iter().enumerate().map(|(j, &e)| at(e, j)));
            } else {
                let ch = k % c;
                let (m, f, b) = (shift[ch], factor[ch], offset[ch]);
                out.extend(src.iter().map(|&e| T::from_f64((e.to_f64() - m) * f + b)));
            }
        }
        out
    } else {
        // Written in place of uninitialised capacity (a zeroed buffer cost a serial pass).
        let mut out: Vec<T> = with_capacity(xs.len())?;
        let spare = &mut out.spare_capacity_mut()[..xs.len()];
        par::for_chunks_mut(spare, unit, work, |start, chunk| {
            let src = &xs[start..start + chunk.len()];
            for (k, (dst, src)) in chunk.chunks_mut(unit).zip(src.chunks(unit)).enumerate() {
                if channel_last {
                    for (j, (d, &e)) in dst.iter_mut().zip(src).enumerate() {
                        d.write(at(e, j));
                    }
                } else {
                    let ch = (start / unit + k) % c;
                    let (m, f, b) = (shift[ch], factor[ch], offset[ch]);
                    for (d, &e) in dst.iter_mut().zip(src) {
                        d.write(T::from_f64((e.to_f64() - m) * f + b));
                    }
                }
            }
            Ok(())
        })?;
        // SAFETY: the chunks cover the first `xs.len()` slots (`for_chunks_mut` calls the
        // closure on every chunk of the slice, which never fails) and every slot of a chunk
        // was written above (`src` and the chunk have the same length).
        unsafe { out.set_len(xs.len()) };
        out
    };
    let y = ArrayD::from_shape_vec(x.raw_dim(), out)
        .map_err(|e| Error::kernel(format!("internal error: {e}")))?;
    Ok(Some(T::wrap(y)))
}

/// A normalised tensor with each row's mean and variance.
type Normalised<Y> = (Y, Vec<f64>, Vec<f64>);

/// Runs `chunk(x, y, stats)` over consecutive chunks of whole rows (`inner` elements each) of
/// a standard-layout `a` and its output, split across the run's threads; returns the output
/// and each row's mean and variance (which `chunk` writes into `stats`). `None` for another
/// layout.
fn norm_rows<T: Elem + Default>(
    a: &ArrayD<T>,
    inner: usize,
    chunk: impl Fn(&[T], &mut [T], &mut [(f64, f64)]) + Sync,
) -> Result<Option<Normalised<ArrayD<T>>>> {
    let Some(data) = a.as_slice() else {
        return Ok(None);
    };
    let n_rows = data.len() / inner;
    let mut out = vec![T::default(); data.len()];
    let mut stats = vec![(0.0f64, 0.0f64); n_rows];
    let work = data.len().saturating_mul(4);
    let chunk_rows = n_rows.div_ceil(par::chunks_for(work).max(1)).max(1);
    type Part<'a, T> = (usize, (&'a mut [T], &'a mut [(f64, f64)]));
    let run = |(i, (ys, st)): Part<'_, T>| -> Result<()> {
        chunk(sub(data, i * chunk_rows * inner, ys.len())?, ys, st);
        Ok(())
    };
    let parts: Vec<_> = out
        .chunks_mut(chunk_rows * inner)
        .zip(stats.chunks_mut(chunk_rows))
        .enumerate()
        .collect();
    if parts.len() > 1 {
        use rayon::prelude::*;
        par::install(|| parts.into_par_iter().try_for_each(run))?;
    } else {
        parts.into_iter().try_for_each(run)?;
    }
    let (mean, var) = stats.into_iter().unzip();
    Ok(Some((array(a.shape(), out)?, mean, var)))
}

/// LayerNorm of a float `x` whose parameters cover the normalised dims (the usual case), row by
/// row: mean and variance in f64, y rounded once to x's dtype (f32 through the vectorised row
/// kernel, [`vmath::layer_norm_rows`], with the same arithmetic); rows split across the run's
/// threads. Returns y and each row's mean and variance; `None` for a layout or dtype this path
/// does not take.
fn layer_norm_rows(
    x: &Value,
    inner: usize,
    eps: f64,
    gamma: &[f64],
    beta: &[f64],
) -> Result<Option<Normalised<Value>>> {
    if gamma.len() != inner || beta.len() != inner {
        return Ok(None);
    }
    fn rows<T: Elem + Default>(
        a: &ArrayD<T>,
        inner: usize,
        eps: f64,
        gamma: &[f64],
        beta: &[f64],
    ) -> Result<Option<Normalised<ArrayD<T>>>> {
        norm_rows(a, inner, |xs, ys, stats| {
            let mut row = Vec::with_capacity(inner);
            for ((x, y), st) in xs
                .chunks_exact(inner)
                .zip(ys.chunks_exact_mut(inner))
                .zip(stats)
            {
                row.clear();
                row.extend(x.iter().map(|v| v.to_f64()));
                let mean = row.iter().sum::<f64>() / inner as f64;
                let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / inner as f64;
                let sd = (var + eps).sqrt();
                for (((y, &v), &g), &b) in y.iter_mut().zip(&row).zip(gamma).zip(beta) {
                    *y = T::from_f64((v - mean) / sd * g + b);
                }
                *st = (mean, var);
            }
        })
    }
    let f32_rows = |a| {
        norm_rows(a, inner, |xs, ys, st| {
            vmath::layer_norm_rows(xs, ys, gamma, beta, eps, st)
        })
    };
    Ok(match x {
        Value::F32(a) => f32_rows(a)?.map(|(y, m, v)| (Value::F32(y), m, v)),
        Value::F64(a) => rows(a, inner, eps, gamma, beta)?.map(|(y, m, v)| (Value::F64(y), m, v)),
        Value::F16(a) => rows(a, inner, eps, gamma, beta)?.map(|(y, m, v)| (Value::F16(y), m, v)),
        Value::BF16(a) => rows(a, inner, eps, gamma, beta)?.map(|(y, m, v)| (Value::BF16(y), m, v)),
        _ => None,
    })
}

fn layer_norm_factory(info: &NodeInfo) -> Result<Kernel> {
    let bna = info.int("begin_norm_axis", 0)?;
    let bpa = info.int("begin_params_axis", 0)?;
    let eps = f64::from(info.float("epsilon", 1e-7)?);
    let outs = info.out_dtypes();
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let xs = x.shape();
        let r = xs.len();
        let (n, p) = (norm_axis(bna, r)?, norm_axis(bpa, r)?);
        let inner: usize = xs[n.min(r)..].iter().product();
        let plen: usize = xs[p.min(r)..].iter().product();
        let gamma = param(input(inputs, 1)?, plen, "gamma")?;
        let beta = param(input(inputs, 2)?, plen, "beta")?;
        let dt = |i: usize| float_out(outs.get(i).copied(), x.dtype());
        let fast = if plen == inner && inner > 0 && dt(0) == x.dtype() {
            layer_norm_rows(x, inner, eps, &gamma, &beta)?
        } else {
            None
        };
        let (y, mean, var) = match fast {
            Some(r) => r,
            None => {
                let xv = floats(x, "x")?;
                let groups = xv.len().checked_div(inner).unwrap_or(0);
                let gid = |i: usize| i / inner.max(1);
                let cid = |i: usize| i % plen.max(1);
                let (mean, var) = group_stats(&xv, groups, gid);
                let y = normalize(&xv, (&mean, &var), eps, gid, (&gamma, &beta), cid);
                (from_f64(dt(0), xs, y)?, mean, var)
            }
        };
        let mut sd = xs[..n.min(r)].to_vec();
        sd.resize(r, 1);
        let mut out = vec![y, from_f64(dt(1), &sd, mean)?, from_f64(dt(2), &sd, var)?];
        out.truncate(outs.len());
        Ok(out)
    }))
}

/// Whether attribute data_format (`default` when absent) puts the channels last (NHWC,
/// NDHWC); `first` lists the formats this op takes with the channels at axis 1.
fn channel_last_attr(info: &NodeInfo, default: &str, first: &[&str]) -> Result<bool> {
    match str_attr(info, "data_format", default)?.as_str() {
        "NHWC" | "NDHWC" => Ok(true),
        f if first.contains(&f) => Ok(false),
        other => Err(Error::unsupported(format!(
            "{} with data_format {other:?}",
            info.op()
        ))),
    }
}

fn instance_norm_factory(info: &NodeInfo) -> Result<Kernel> {
    let channel_last = channel_last_attr(info, "NDHWC", &["NCHW", "NCDHW"])?;
    let eps = f64::from(info.float("epsilon", 1e-6)?);
    let outs = info.out_dtypes();
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let xs = x.shape();
        need_rank("InstanceNorm", xs, 3)?;
        let (ca, c, inner) = channels(xs, channel_last)?;
        let per_n: usize = xs[1..].iter().product();
        let gamma = param(input(inputs, 1)?, c, "gamma")?;
        let beta = param(input(inputs, 2)?, c, "beta")?;
        let xv = floats(x, "x")?;
        let cid = |i: usize| (i / inner.max(1)) % c.max(1);
        let gid = |i: usize| (i / per_n.max(1)) * c + cid(i);
        let (mean, var) = group_stats(&xv, xs[0] * c, gid);
        let y = normalize(&xv, (&mean, &var), eps, gid, (&gamma, &beta), cid);
        let sd: Vec<usize> = (0..xs.len())
            .map(|i| if i == 0 || i == ca { xs[i] } else { 1 })
            .collect();
        let dt = |i: usize, like: DataType| float_out(outs.get(i).copied(), like);
        let sdt = input(inputs, 1)?.dtype();
        let mut out = vec![
            from_f64(dt(0, x.dtype()), xs, y)?,
            from_f64(dt(1, sdt), &sd, mean)?,
            from_f64(dt(2, sdt), &sd, var)?,
        ];
        out.truncate(outs.len());
        Ok(out)
    }))
}

fn group_norm_factory(info: &NodeInfo) -> Result<Kernel> {
    let groups = count_attr(info, "num_groups", 1, 1)?;
    let channel_last = channel_last_attr(info, "NHWC", &["NCHW", "NCDHW", "ND"])?;
    let eps = f64::from(info.float("eps", 1e-4)?);
    let outs = info.out_dtypes();
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let xs = x.shape();
        let (_, c, inner) = channels(xs, channel_last)?;
        if c % groups != 0 {
            return Err(Error::kernel(format!(
                "x {xs:?} has {c} channels, which num_groups {groups} does not divide"
            )));
        }
        let cpg = (c / groups).max(1);
        let per_n: usize = xs[1..].iter().product();
        let gamma = param(input(inputs, 1)?, c, "gamma")?;
        let beta = param(input(inputs, 2)?, c, "beta")?;
        let xv = floats(x, "x")?;
        let cid = |i: usize| (i / inner.max(1)) % c.max(1);
        let gid = |i: usize| (i / per_n.max(1)) * groups + cid(i) / cpg;
        let (mean, var) = group_stats(&xv, xs[0] * groups, gid);
        let y = normalize(&xv, (&mean, &var), eps, gid, (&gamma, &beta), cid);
        let sd = [xs[0], groups];
        let dt = |i: usize| float_out(outs.get(i).copied(), x.dtype());
        let mut out = vec![
            from_f64(dt(0), xs, y)?,
            from_f64(dt(1), &sd, mean)?,
            from_f64(dt(2), &sd, var)?,
        ];
        out.truncate(outs.len());
        Ok(out)
    }))
}

/// LRN (TensorFlow's formula): y = x / (bias + alpha * sum of x^2 over channels c - r ..= c + r)
/// ^ beta. The channel axis is 1, or the last for an x of format NHWC.
fn lrn_factory(info: &NodeInfo) -> Result<Kernel> {
    let r = count_attr(info, "depth_radius", 5, 0)?;
    let bias = f64::from(info.float("bias", 1.0)?);
    let alpha = f64::from(info.float("alpha", 1.0)?);
    let beta = f64::from(info.float("beta", 0.5)?);
    let region = str_attr(info, "norm_region", "ACROSS_CHANNELS")?;
    if region != "ACROSS_CHANNELS" {
        return Err(Error::unsupported(format!(
            "LRN with norm_region {region:?}"
        )));
    }
    let channel_last = input_desc(info, 0).is_some_and(|d| d.format == Format::NHWC);
    let out = info.out_dtype(0).ok();
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let xs = x.shape();
        let (_, c, inner) = channels(xs, channel_last)?;
        let xv = floats(x, "x")?;
        let sq: Vec<f64> = xv.iter().map(|v| v * v).collect();
        let y: Vec<f64> = xv
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                let ci = (i / inner.max(1)) % c.max(1);
                let base = i - ci * inner;
                let lo = ci.saturating_sub(r);
                let hi = ci.saturating_add(r).min(c.saturating_sub(1));
                let s: f64 = (lo..=hi).filter_map(|k| sq.get(base + k * inner)).sum();
                v / (bias + alpha * s).powf(beta)
            })
            .collect();
        Ok(vec![from_f64(float_out(out, x.dtype()), xs, y)?])
    }))
}

// ---------------------------------------------------------------------------------------------
// SoftmaxV2, LogSoftmaxV2
// ---------------------------------------------------------------------------------------------

/// Softmax (or log-softmax) over the last axis of a standard-layout array, row by row: f64
/// arithmetic per row, each result rounded once to `O` (no full-size temporaries). Rows are
/// split across the run's threads when there are many.
fn softmax_rows<T: Elem, O: Elem + Default>(a: &ArrayD<T>, log: bool) -> Option<ArrayD<O>> {
    let n = *a.shape().last()?;
    let data = a.as_slice()?;
    let mut out: Vec<O> = vec![O::default(); data.len()];
    if n > 0 {
        // exp costs about 8 simple operations.
        let work = data.len().saturating_mul(8);
        crate::par::for_chunks_mut(&mut out, n, work, |start, rows| {
            let mut row = Vec::with_capacity(n);
            for (i, o) in rows.chunks_exact_mut(n).enumerate() {
                let s = start + i * n;
                row.clear();
                row.extend(data[s..s + n].iter().map(|&v| v.to_f64()));
                let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                if log {
                    let l = row.iter().map(|&v| (v - max).exp()).sum::<f64>().ln();
                    for (o, &v) in o.iter_mut().zip(&row) {
                        *o = O::from_f64(v - max - l);
                    }
                } else {
                    // One exp per element: the row keeps exp(v - max) for the division.
                    let mut sum = 0.0;
                    for v in row.iter_mut() {
                        *v = (*v - max).exp();
                        sum += *v;
                    }
                    for (o, &e) in o.iter_mut().zip(&row) {
                        *o = O::from_f64(e / sum);
                    }
                }
            }
            Ok(())
        })
        .ok()?;
    }
    ArrayD::from_shape_vec(a.raw_dim(), out).ok()
}

/// Softmax (or log-softmax) of f32 over the last axis of a standard-layout array with the
/// vectorised row kernel ([`vmath::softmax_rows`]); rows split across the run's threads.
fn softmax_rows_f32(a: &ArrayD<f32>, log: bool) -> Option<ArrayD<f32>> {
    let n = *a.shape().last()?;
    let data = a.as_slice()?;
    let mut out = vec![0.0f32; data.len()];
    if n > 0 {
        let work = data.len().saturating_mul(4);
        crate::par::for_chunks_mut(&mut out, n, work, |start, rows| {
            vmath::softmax_rows(&data[start..start + rows.len()], rows, n, log);
            Ok(())
        })
        .ok()?;
    }
    ArrayD::from_shape_vec(a.raw_dim(), out).ok()
}

/// The row-wise softmax when the axes are just the last one and the layout is standard.
fn softmax_fast(x: &Value, ax: &[usize], log: bool, out: DataType) -> Option<Value> {
    if ax != [x.shape().len().checked_sub(1)?] {
        return None;
    }
    Some(match (x, out) {
        (Value::F32(a), DataType::FLOAT) => Value::F32(softmax_rows_f32(a, log)?),
        (Value::F64(a), DataType::DOUBLE) => Value::F64(softmax_rows(a, log)?),
        (Value::F16(a), DataType::FLOAT16) => Value::F16(softmax_rows(a, log)?),
        (Value::F16(a), DataType::FLOAT) => Value::F32(softmax_rows(a, log)?),
        (Value::BF16(a), DataType::BF16) => Value::BF16(softmax_rows(a, log)?),
        (Value::BF16(a), DataType::FLOAT) => Value::F32(softmax_rows(a, log)?),
        _ => return None,
    })
}

/// Softmax (or log-softmax) over `axes`, in f64, rounded to the output dtype.
fn softmax(x: &Value, axes: &[i64], log: bool, out: DataType) -> Result<Value> {
    if let Some(v) = softmax_fast(x, &axes_of(axes, x.shape().len())?, log, out) {
        return Ok(v);
    }
    let Value::F64(a) = x.cast(DataType::DOUBLE)? else {
        return Err(Error::kernel("internal cast error"));
    };
    let ax = axes_of(axes, a.ndim())?;
    let max = fold(&a, &ax, true, f64::NEG_INFINITY, f64::max);
    let shifted = zip2(&a, &max, |v, m| v - m)?;
    let sum = fold(&shifted.mapv(f64::exp), &ax, true, 0.0, |p, q| p + q);
    let y = if log {
        zip2(&shifted, &sum, |v, s| v - s.ln())?
    } else {
        zip2(&shifted, &sum, |v, s| v.exp() / s)?
    };
    Value::F64(y).cast(out)
}

fn softmax_factory(info: &NodeInfo) -> Result<Kernel> {
    let axes = info.ints("axes")?.unwrap_or_else(|| vec![-1]);
    let log = info.op() == "LogSoftmaxV2";
    let out = info.out_dtype(0)?;
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        if !x.dtype().is_float() {
            return Err(Error::kernel(format!(
                "softmax needs a float input, got {}",
                x.dtype()
            )));
        }
        let dt = if out.is_float() { out } else { x.dtype() };
        Ok(vec![softmax(x, &axes, log, dt)?])
    }))
}

/// This family's kernels, which [`super::registry`] collects.
pub(super) const KERNELS: Kernels = &[
    (&["RmsNorm", "AddRmsNorm"], rms_norm_factory),
    (&["BatchNorm"], batch_norm_factory),
    (&["LayerNorm"], layer_norm_factory),
    (&["InstanceNorm"], instance_norm_factory),
    (&["GroupNorm"], group_norm_factory),
    (&["LRN"], lrn_factory),
    (&["SoftmaxV2", "LogSoftmaxV2"], softmax_factory),
];
