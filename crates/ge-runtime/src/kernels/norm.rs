//! Kernels of the normalisations: RmsNorm, AddRmsNorm.

use super::nn::{floats, from_f64};
use super::{input, Factory, Kernel, NodeInfo};
use crate::error::{Error, Result};
use es_core::DataType;
use rustc_hash::FxHashMap;

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

pub(super) fn register(m: &mut FxHashMap<&'static str, Factory>) {
    m.insert("RmsNorm", rms_norm_factory);
    m.insert("AddRmsNorm", rms_norm_factory);
}
