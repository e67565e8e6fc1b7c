//! Pad, PadD and PadV3 (constant, reflect, symmetric and edge modes); sizes that come from
//! values are computed with checked arithmetic and allocated fallibly.

use crate::error::{Error, Result};
use crate::kernels::common::{bad_attr, ints, str_attr, take_value, with_capacity};
use crate::kernels::{input, Kernel, NodeInfo};
use crate::value::Value;
use es_core::attr::AttrValue;

#[derive(Clone, Copy, Debug, PartialEq)]
enum PadMode {
    Constant,
    Reflect,
    Edge,
    Symmetric,
    Circular,
}

/// The source index of each output position of one padded dim (`None`: the pad value).
/// Negative pads crop.
fn pad_map(d: usize, b: i64, e: i64, mode: PadMode) -> Result<Vec<Option<usize>>> {
    let di = d as i128;
    let n = di + i128::from(b) + i128::from(e);
    if n < 0 {
        return Err(Error::kernel(format!(
            "pads ({b}, {e}) make a dim of size {d} negative"
        )));
    }
    if d == 0 && n > 0 && mode != PadMode::Constant {
        return Err(Error::kernel(format!(
            "cannot pad an empty dim in {mode:?} mode"
        )));
    }
    let n = usize::try_from(n).map_err(|_| Error::kernel("padded dim is too large"))?;
    let mut out = with_capacity(n)?;
    for o in 0..n as i128 {
        let src = o - i128::from(b);
        let i = if (0..di).contains(&src) {
            Some(src)
        } else {
            match mode {
                PadMode::Constant => None,
                PadMode::Edge => Some(src.clamp(0, di - 1)),
                PadMode::Reflect => {
                    let p = 2 * (di - 1);
                    if p == 0 {
                        Some(0)
                    } else {
                        let m = src.rem_euclid(p);
                        Some(if m < di { m } else { p - m })
                    }
                }
                PadMode::Symmetric => {
                    let p = 2 * di;
                    let m = src.rem_euclid(p);
                    Some(if m < di { m } else { p - 1 - m })
                }
                PadMode::Circular => Some(src.rem_euclid(di)),
            }
        };
        out.push(i.map(|v| v as usize));
    }
    Ok(out)
}

fn pad_value(
    x: &Value,
    pairs: &[(i64, i64)],
    mode: PadMode,
    fill: Option<&Value>,
) -> Result<Value> {
    let xs = x.shape();
    if pairs.len() != xs.len() {
        return Err(Error::kernel(format!(
            "{} pad pairs for x {xs:?} of rank {}",
            pairs.len(),
            xs.len()
        )));
    }
    let maps = xs
        .iter()
        .zip(pairs)
        .map(|(&d, &(b, e))| pad_map(d, b, e, mode))
        .collect::<Result<Vec<_>>>()?;
    take_value(x, &maps, fill)
}

pub(super) fn pad_factory(info: &NodeInfo) -> Result<Kernel> {
    let op = info.op().to_string();
    let attr_pairs: Option<Vec<(i64, i64)>> = if op == "PadD" {
        match info.attr("paddings") {
            Some(AttrValue::ListListInt(v)) => Some(
                v.iter()
                    .map(|row| match row.as_slice() {
                        [b, e] => Ok((*b, *e)),
                        _ => Err(bad_attr(
                            info,
                            format!("paddings row {row:?} is not a pair"),
                        )),
                    })
                    .collect::<Result<_>>()?,
            ),
            _ => {
                return Err(bad_attr(
                    info,
                    "attribute 'paddings' must be a list of pairs",
                ))
            }
        }
    } else {
        None
    };
    let mode = match str_attr(info, "mode", "constant")?.as_str() {
        "constant" => PadMode::Constant,
        "reflect" => PadMode::Reflect,
        "edge" => PadMode::Edge,
        "symmetric" => PadMode::Symmetric,
        "circular" => PadMode::Circular,
        other => return Err(Error::unsupported(format!("{op} with mode {other:?}"))),
    };
    let contiguous = info.bool("paddings_contiguous", true)?;
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let r = x.shape().len();
        let pairs: Vec<(i64, i64)> = match &attr_pairs {
            Some(p) => p.clone(),
            None => {
                let p = ints(input(inputs, 1)?);
                if p.len() != 2 * r {
                    return Err(Error::kernel(format!(
                        "paddings {p:?} must hold 2 values per dim of x {:?}",
                        x.shape()
                    )));
                }
                (0..r)
                    .map(|i| {
                        if contiguous {
                            (p[2 * i], p[2 * i + 1])
                        } else {
                            (p[i], p[r + i])
                        }
                    })
                    .collect()
            }
        };
        let fill = if op == "PadV3" {
            inputs.get(2).copied().flatten()
        } else {
            None
        };
        Ok(vec![pad_value(x, &pairs, mode, fill)?])
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::common::testing::some;

    #[test]
    fn pad_maps() {
        assert_eq!(
            pad_map(3, 2, 1, PadMode::Constant).unwrap(),
            vec![None, None, Some(0), Some(1), Some(2), None]
        );
        for (mode, want) in [
            (PadMode::Reflect, [2, 1, 0, 1, 2, 1, 0]),
            (PadMode::Symmetric, [1, 0, 0, 1, 2, 2, 1]),
            (PadMode::Edge, [0, 0, 0, 1, 2, 2, 2]),
            (PadMode::Circular, [1, 2, 0, 1, 2, 0, 1]),
        ] {
            assert_eq!(pad_map(3, 2, 2, mode).unwrap(), some(&want), "{mode:?}");
        }
        assert_eq!(pad_map(3, -1, 0, PadMode::Constant).unwrap(), some(&[1, 2]));
        assert!(pad_map(3, -2, -2, PadMode::Constant).is_err());
        assert!(pad_map(0, 1, 0, PadMode::Edge).is_err());
        assert!(pad_map(3, i64::MAX, i64::MAX, PadMode::Constant).is_err());
    }
}
