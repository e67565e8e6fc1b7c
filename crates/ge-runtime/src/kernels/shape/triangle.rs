//! Tril, Triu and Trilu: the lower or upper triangle of the last two dims (diagonal `k`).

use crate::error::Result;
use crate::kernels::common::{array, bad_attr, need_rank, scalar_int, std_slice};
use crate::kernels::{input, Kernel, NodeInfo};
use crate::map_array;
use crate::value::Elem;
use ndarray::ArrayD;

fn triangle<T: Copy + Elem>(a: &ArrayD<T>, k: i64, upper: bool) -> Result<ArrayD<T>> {
    let xs = a.shape();
    need_rank("a triangle", xs, 2)?;
    let (h, w) = (xs[xs.len() - 2], xs[xs.len() - 1]);
    let zero = T::from_f64(0.0);
    let k = i128::from(k);
    let src = std_slice(a);
    let out: Vec<T> = src
        .iter()
        .enumerate()
        .map(|(f, &v)| {
            let j = (f % w.max(1)) as i128;
            let i = ((f / w.max(1)) % h.max(1)) as i128;
            let keep = if upper { j - i >= k } else { j - i <= k };
            if keep {
                v
            } else {
                zero
            }
        })
        .collect();
    array(xs, out)
}

pub(super) fn triangle_factory(info: &NodeInfo) -> Result<Kernel> {
    let op = info.op().to_string();
    let diagonal = info.int("diagonal", 0)?;
    let upper = match op.as_str() {
        "Triu" => true,
        "Tril" => false,
        _ => match info.int("upper", 0)? {
            0 => false,
            1 => true,
            u => {
                return Err(bad_attr(
                    info,
                    format!("attribute 'upper' must be 0 or 1, got {u}"),
                ))
            }
        },
    };
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let k = if op == "Trilu" {
            match inputs.get(1).copied().flatten() {
                Some(v) => scalar_int(v, "k")?,
                None => 0,
            }
        } else {
            diagonal
        };
        Ok(vec![map_array!(x, a => triangle(a, k, upper)?)])
    }))
}
