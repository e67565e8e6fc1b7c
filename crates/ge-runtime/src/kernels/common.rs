//! Helpers shared by the kernel families: a feature map's layout and its NCHW/NHWC
//! attributes (layout_2d, filter_positions_of, four, positive_hw, pads_attr), values as f64 and
//! back (floats, from_f64, float_out) and checked sub-slices (sub, sub_mut).

use super::conv::filter_positions;
use super::index::{array, bad_attr, str_attr};
use super::NodeInfo;
use crate::error::{Error, Result};
use crate::value::Value;
use es_core::infer::layout;
use es_core::DataType;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// The layout of feature map input `x` by `es_core::infer::layout::data_layout` (`default` is
/// data_format's default): true for NCHW, false for NHWC.
pub(super) fn layout_2d(info: &NodeInfo, x: usize, default: &str) -> Result<bool> {
    let df = str_attr(info, "data_format", default)?;
    let f = layout::data_layout(
        info.inputs.get(x).and_then(Option::as_ref),
        &df,
        layout::DATA_2D,
    )
    .map_err(|e| bad_attr(info, e))?;
    Ok(!layout::channel_last(f))
}

/// The positions of a 2-D convolution filter's [out, in/groups, kh, kw] dims (inputs `x` and
/// `filter`), its layout by `es_core::infer::layout::filter_layout`.
pub(super) fn filter_positions_of(info: &NodeInfo, x: usize, filter: usize) -> Result<[usize; 4]> {
    let fl = layout::filter_layout(
        info.inputs.get(filter).and_then(Option::as_ref),
        info.inputs.get(x).and_then(Option::as_ref),
        layout::FILTER_2D,
    )
    .map_err(|e| bad_attr(info, e))?;
    filter_positions(fl)
        .ok_or_else(|| Error::unsupported(format!("{} with a filter of format {fl}", info.op())))
}

/// A 4-value list attribute in data-format order: its (N, C) and (H, W) entries.
pub(super) fn four(
    info: &NodeInfo,
    name: &str,
    default: Option<[i64; 4]>,
    nchw: bool,
) -> Result<([i64; 2], [i64; 2])> {
    let v = match (info.ints(name)?, default) {
        (Some(v), _) => v,
        (None, Some(d)) => d.to_vec(),
        (None, None) => return Err(bad_attr(info, format!("attribute '{name}' is required"))),
    };
    let &[a, b, c, d] = v.as_slice() else {
        return Err(bad_attr(
            info,
            format!("attribute '{name}' must have 4 values, got {v:?}"),
        ));
    };
    Ok(if nchw {
        ([a, b], [c, d])
    } else {
        ([a, d], [b, c])
    })
}

/// The H and W entries of a list attribute, each >= 1.
pub(super) fn positive_hw(info: &NodeInfo, name: &str, hw: [i64; 2]) -> Result<[usize; 2]> {
    let f = |v: i64| {
        usize::try_from(v).ok().filter(|&v| v >= 1).ok_or_else(|| {
            bad_attr(
                info,
                format!("attribute '{name}' must have H and W values >= 1, got {hw:?}"),
            )
        })
    };
    Ok([f(hw[0])?, f(hw[1])?])
}

/// Explicit pads [top, bottom, left, right], each >= 0.
pub(super) fn pads_attr(info: &NodeInfo, name: &str) -> Result<[usize; 4]> {
    let v = info.ints(name)?.unwrap_or_else(|| vec![0; 4]);
    let bad = || {
        bad_attr(
            info,
            format!(
                "attribute '{name}' must be 4 values >= 0 [top, bottom, left, right], got {v:?}"
            ),
        )
    };
    let &[a, b, c, d] = v.as_slice() else {
        return Err(bad());
    };
    let f = |x: i64| usize::try_from(x).map_err(|_| bad());
    Ok([f(a)?, f(b)?, f(c)?, f(d)?])
}

/// The elements of a float value as f64, in standard order.
pub(super) fn floats(x: &Value, what: &str) -> Result<Vec<f64>> {
    if !x.dtype().is_float() {
        return Err(Error::kernel(format!(
            "{what} must be a float tensor, got {}",
            x.dtype()
        )));
    }
    Ok(x.to_f64_vec())
}

/// A value of `dt` from f64 elements in standard order.
pub(super) fn from_f64(dt: DataType, dims: &[usize], v: Vec<f64>) -> Result<Value> {
    let a = Value::F64(array(dims, v)?);
    if dt == DataType::DOUBLE {
        Ok(a)
    } else {
        a.cast(dt)
    }
}

/// The dtype to round a float result to: the node's output dtype when it is a float, else `x`'s.
pub(super) fn float_out(out: Option<DataType>, x: DataType) -> DataType {
    match out {
        Some(d) if d.is_float() => d,
        _ if x.is_float() => x,
        _ => DataType::FLOAT,
    }
}

/// `len` elements of `s` from `start`.
pub(super) fn sub<T>(s: &[T], start: usize, len: usize) -> Result<&[T]> {
    start
        .checked_add(len)
        .and_then(|end| s.get(start..end))
        .ok_or_else(|| Error::kernel("internal error: slice out of bounds"))
}

pub(super) fn sub_mut<T>(s: &mut [T], start: usize, len: usize) -> Result<&mut [T]> {
    start
        .checked_add(len)
        .and_then(|end| s.get_mut(start..end))
        .ok_or_else(|| Error::kernel("internal error: slice out of bounds"))
}

/// Test helpers shared by the families' unit tests: a node, its kernel, attribute values.
#[cfg(test)]
pub(super) mod testing {
    use crate::error::{Error, Result};
    use crate::kernels::{Factory, Kernel, NodeInfo};
    use crate::value::Value;
    use es_core::attr::AttrValue;
    use ndarray::{ArrayD, IxDyn};

    pub(in crate::kernels) fn arr<T>(dims: &[usize], v: Vec<T>) -> ArrayD<T> {
        ArrayD::from_shape_vec(IxDyn(dims), v).unwrap()
    }

    pub(in crate::kernels) fn node(op: &str, attrs: &[(&str, AttrValue)]) -> es_core::Node {
        let mut n = es_core::Node::new("n", op);
        for (k, v) in attrs {
            n.attrs.insert(k.to_string(), v.clone());
        }
        n
    }

    pub(in crate::kernels) fn factory(
        f: Factory,
        node: &es_core::Node,
        consts: Vec<Option<Value>>,
    ) -> Result<Kernel> {
        f(&NodeInfo {
            node,
            inputs: Vec::new(),
            const_inputs: consts,
        })
    }

    pub(in crate::kernels) fn li(v: &[i64]) -> AttrValue {
        AttrValue::ListInt(v.to_vec())
    }

    pub(in crate::kernels) fn unsupported(r: Result<Kernel>) -> String {
        match r {
            Err(e @ Error::Unsupported(_)) => e.to_string(),
            Err(e) => panic!("expected an unsupported error, got {e}"),
            Ok(_) => panic!("expected an unsupported error, got a kernel"),
        }
    }
}
