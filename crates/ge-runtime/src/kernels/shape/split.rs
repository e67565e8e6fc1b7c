//! Split(D/V) and Unpack: x cut along an axis into parts.

use super::reshaped;
use super::strided::take;
use crate::error::{Error, Result};
use crate::kernels::common::{count_attr, full, ints, scalar_int, Maps};
use crate::kernels::{input, norm_axis, Kernel, NodeInfo};
use crate::value::Value;

/// x split along `axis` into parts of the given sizes.
fn split_sizes(x: &Value, axis: i64, sizes: &[usize]) -> Result<Vec<Value>> {
    let xs = x.shape();
    if xs.is_empty() {
        return Err(Error::kernel("cannot split a scalar"));
    }
    let ax = norm_axis(axis, xs.len())?;
    let total = sizes.iter().try_fold(0usize, |a, &s| a.checked_add(s));
    if total != Some(xs[ax]) {
        return Err(Error::kernel(format!(
            "split sizes {sizes:?} do not add up to dim {ax} of x {xs:?}"
        )));
    }
    let mut maps: Maps = xs.iter().map(|&d| full(d)).collect();
    let mut start = 0;
    let mut out = Vec::with_capacity(sizes.len());
    for &s in sizes {
        maps[ax] = (start..start + s).map(Some).collect();
        out.push(take(x, &maps)?);
        start += s;
    }
    Ok(out)
}

fn equal_sizes(x: &Value, axis: i64, num: usize) -> Result<Vec<usize>> {
    let xs = x.shape();
    let ax = norm_axis(axis, xs.len())?;
    if xs.is_empty() || num == 0 || !xs[ax].is_multiple_of(num) {
        return Err(Error::kernel(format!(
            "num_split {num} does not divide dim {ax} of x {xs:?}"
        )));
    }
    Ok(vec![xs[ax] / num; num])
}

fn num_split(info: &NodeInfo) -> Result<usize> {
    count_attr(info, "num_split", 1, 1)
}

pub(super) fn split_factory(info: &NodeInfo) -> Result<Kernel> {
    let num = num_split(info)?;
    let op = info.op().to_string();
    let attr_dim = if op == "SplitD" {
        Some(info.int("split_dim", 0)?)
    } else {
        None
    };
    Ok(Box::new(move |inputs| match op.as_str() {
        "SplitD" => {
            let x = input(inputs, 0)?;
            let axis = attr_dim.unwrap_or(0);
            split_sizes(x, axis, &equal_sizes(x, axis, num)?)
        }
        "Split" => {
            let axis = scalar_int(input(inputs, 0)?, "split_dim")?;
            let x = input(inputs, 1)?;
            split_sizes(x, axis, &equal_sizes(x, axis, num)?)
        }
        _ => {
            // SplitV: x, size_splits, split_dim; one size may be -1.
            let x = input(inputs, 0)?;
            let sizes = ints(input(inputs, 1)?);
            let axis = scalar_int(input(inputs, 2)?, "split_dim")?;
            let xs = x.shape();
            let ax = norm_axis(axis, xs.len())?;
            let d = xs.get(ax).copied().unwrap_or(0) as i128;
            if sizes.len() != num {
                return Err(Error::kernel(format!(
                    "size_splits {sizes:?} has {} values, num_split is {num}",
                    sizes.len()
                )));
            }
            let known: i128 = sizes
                .iter()
                .filter(|&&s| s >= 0)
                .map(|&s| i128::from(s))
                .sum();
            let infer = sizes.iter().filter(|&&s| s == -1).count();
            if sizes.iter().any(|&s| s < -1) || infer > 1 || (infer == 1 && known > d) {
                return Err(Error::kernel(format!(
                    "size_splits {sizes:?} does not fit dim {ax} of x {xs:?}"
                )));
            }
            let res: Vec<usize> = sizes
                .iter()
                .map(|&s| {
                    if s == -1 {
                        (d - known) as usize
                    } else {
                        s as usize
                    }
                })
                .collect();
            split_sizes(x, axis, &res)
        }
    }))
}

pub(super) fn unpack_factory(info: &NodeInfo) -> Result<Kernel> {
    let num = info.int("num", 1)?;
    let axis = info.int("axis", 0)?;
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let xs = x.shape();
        if xs.is_empty() {
            return Err(Error::kernel("cannot unpack a scalar"));
        }
        let ax = norm_axis(axis, xs.len())?;
        if xs[ax] as i64 != num {
            return Err(Error::kernel(format!(
                "dim {ax} of x {xs:?} is {}, attribute 'num' is {num}",
                xs[ax]
            )));
        }
        let mut dims = xs.to_vec();
        dims.remove(ax);
        split_sizes(x, ax as i64, &vec![1; xs[ax]])?
            .into_iter()
            .map(|v| reshaped(v, &dims))
            .collect()
    }))
}
