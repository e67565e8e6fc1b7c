//! Lists of tensors and optionals (GE's `DT_VARIANT` values, [`Variant`]): TensorFlow's list
//! ops as GE names them (EmptyTensorList, TensorListPushBack, TensorListPopBack,
//! TensorListLength, TensorListGetItem), TensorFlow's optional ops (OptionalFromValue,
//! OptionalNone, OptionalHasValue, OptionalGetValue) and the ge-rs ops with ONNX's semantics
//! (SequenceInsert, SequenceErase, SplitToSequence, ConcatFromSequence). See
//! `es_core::infer::sequence` for their descriptions.

use super::shape::{concat, reshape, stack};
use super::{input, norm_axis, Kernel, Kernels, NodeInfo};
use crate::error::{Error, Result};
use crate::value::{Value, Variant};
use es_core::DataType;
use ndarray::{Axis, Slice};

/// This family's kernels, which [`super::registry`] collects.
pub(super) const KERNELS: Kernels = &[
    (&["EmptyTensorList"], empty_list_factory),
    (&["TensorListPushBack"], push_back_factory),
    (&["TensorListPopBack"], pop_back_factory),
    (&["TensorListLength"], length_factory),
    (&["TensorListGetItem"], get_item_factory),
    (&["SequenceInsert"], insert_factory),
    (&["SequenceErase"], erase_factory),
    (&["SplitToSequence"], split_factory),
    (&["ConcatFromSequence"], concat_factory),
    (&["OptionalFromValue"], optional_from_value_factory),
    (&["OptionalNone"], optional_none_factory),
    (&["OptionalHasValue"], optional_has_value_factory),
    (&["OptionalGetValue"], optional_get_value_factory),
];

/// The list input `i` holds: its element dtype and tensors.
fn list<'a>(inputs: &[Option<&'a Value>], i: usize) -> Result<(DataType, &'a [Value])> {
    match input(inputs, i)? {
        Value::Variant(Variant::List(dt, items)) => Ok((*dt, items)),
        v => Err(Error::kernel(format!(
            "input {i} must be a list of tensors, got {}",
            what(v)
        ))),
    }
}

/// A value in words, for messages.
fn what(v: &Value) -> String {
    match v {
        Value::Variant(Variant::List(..)) => "a list".into(),
        Value::Variant(Variant::Optional(_)) => "an optional".into(),
        v => format!("a {} tensor", v.dtype()),
    }
}

/// Input `i`, which must be a tensor (not a list or optional).
fn tensor<'a>(inputs: &[Option<&'a Value>], i: usize) -> Result<&'a Value> {
    let v = input(inputs, i)?;
    if let Value::Variant(_) = v {
        return Err(Error::kernel(format!(
            "input {i} must be a tensor, got {}",
            what(v)
        )));
    }
    Ok(v)
}

/// The integer input `i` (a position or index): a scalar, or one element (as onnx's tests
/// give SequenceInsert's position).
fn scalar_int(inputs: &[Option<&Value>], i: usize, what: &str) -> Result<i64> {
    let v = tensor(inputs, i)?;
    match (v.len(), v.to_i64_vec().first()) {
        (1, Some(&x)) => Ok(x),
        _ => Err(Error::kernel(format!(
            "{what} must be a scalar, got shape {:?}",
            v.shape()
        ))),
    }
}

/// `pos` (negative counts from the end) as an index into `n` tensors; `n` itself is allowed
/// when `end_ok` (an insertion at the end).
fn position(pos: i64, n: usize, end_ok: bool, what: &str) -> Result<usize> {
    let len = n as i64;
    let p = if pos < 0 { pos + len } else { pos };
    let hi = if end_ok { len } else { len - 1 };
    if p < 0 || p > hi {
        let range = if end_ok {
            format!("[{}, {len}]", -len)
        } else {
            format!("[{}, {}]", -len, len - 1)
        };
        return Err(Error::kernel(format!(
            "{what} {pos} is out of range for a list of {n} tensors (allowed: {range})"
        )));
    }
    Ok(p as usize)
}

/// A list of `dt` tensors: `items`.
fn make_list(dt: DataType, items: Vec<Value>) -> Value {
    Value::Variant(Variant::List(dt, items))
}

/// The element dtype of a list after adding `x` (a list made without a dtype takes it).
fn element_dtype_with(dt: DataType, x: &Value) -> Result<DataType> {
    if dt == DataType::UNDEFINED || dt == x.dtype() {
        Ok(x.dtype())
    } else {
        Err(Error::kernel(format!(
            "a {} tensor cannot join a list of {dt} tensors",
            x.dtype()
        )))
    }
}

fn empty_list_factory(info: &NodeInfo) -> Result<Kernel> {
    let dt = info.dtype_attr("element_dtype")?.unwrap_or(DataType::INT32);
    if let Some(max) = info.const_inputs.get(1).and_then(Option::as_ref) {
        if max.to_i64_vec().first().is_some_and(|&m| m != -1) {
            return Err(Error::unsupported(
                "EmptyTensorList with max_num_elements other than -1 (a bounded list)",
            ));
        }
    }
    Ok(Box::new(move |inputs| {
        if let Some(&m) = tensor(inputs, 1)?.to_i64_vec().first() {
            if m != -1 {
                return Err(Error::unsupported(
                    "EmptyTensorList with max_num_elements other than -1 (a bounded list)",
                ));
            }
        }
        Ok(vec![make_list(dt, Vec::new())])
    }))
}

fn push_back_factory(_: &NodeInfo) -> Result<Kernel> {
    Ok(Box::new(|inputs| {
        let (dt, items) = list(inputs, 0)?;
        let x = tensor(inputs, 1)?;
        let dt = element_dtype_with(dt, x)?;
        let mut v = items.to_vec();
        v.push(x.clone());
        Ok(vec![make_list(dt, v)])
    }))
}

fn pop_back_factory(_: &NodeInfo) -> Result<Kernel> {
    Ok(Box::new(|inputs| {
        let (dt, items) = list(inputs, 0)?;
        let Some((last, rest)) = items.split_last() else {
            return Err(Error::kernel("TensorListPopBack on an empty list"));
        };
        Ok(vec![make_list(dt, rest.to_vec()), last.clone()])
    }))
}

fn length_factory(_: &NodeInfo) -> Result<Kernel> {
    Ok(Box::new(|inputs| {
        let (_, items) = list(inputs, 0)?;
        let n = i32::try_from(items.len())
            .map_err(|_| Error::kernel("the list has more than 2^31 - 1 tensors"))?;
        Ok(vec![Value::I32(ndarray::arr0(n).into_dyn())])
    }))
}

fn get_item_factory(_: &NodeInfo) -> Result<Kernel> {
    Ok(Box::new(|inputs| {
        let (_, items) = list(inputs, 0)?;
        let i = position(scalar_int(inputs, 1, "index")?, items.len(), false, "index")?;
        Ok(vec![items[i].clone()])
    }))
}

fn insert_factory(_: &NodeInfo) -> Result<Kernel> {
    Ok(Box::new(|inputs| {
        let (dt, items) = list(inputs, 0)?;
        let x = tensor(inputs, 1)?;
        let dt = element_dtype_with(dt, x)?;
        let at = match inputs.get(2).copied().flatten() {
            None => items.len(),
            Some(_) => position(
                scalar_int(inputs, 2, "position")?,
                items.len(),
                true,
                "position",
            )?,
        };
        let mut v = items.to_vec();
        v.insert(at, x.clone());
        Ok(vec![make_list(dt, v)])
    }))
}

fn erase_factory(_: &NodeInfo) -> Result<Kernel> {
    Ok(Box::new(|inputs| {
        let (dt, items) = list(inputs, 0)?;
        let pos = match inputs.get(1).copied().flatten() {
            None => -1,
            Some(_) => scalar_int(inputs, 1, "position")?,
        };
        let at = position(pos, items.len(), false, "position")?;
        let mut v = items.to_vec();
        v.remove(at);
        Ok(vec![make_list(dt, v)])
    }))
}

/// The `[start, end)` ranges `split` cuts a dim of `dim` into: a scalar, chunks of that size
/// (the last smaller); a 1-D tensor, those lengths (summing to `dim`); absent, size-1 slices.
fn split_ranges(dim: usize, split: Option<&Value>) -> Result<Vec<(usize, usize)>> {
    let lengths: Vec<usize> = match split {
        None => vec![1; dim],
        Some(s) if s.shape().is_empty() => {
            let c = s.to_i64_vec().first().copied().unwrap_or(0);
            if c <= 0 {
                return Err(Error::kernel(format!(
                    "split {c} must be a positive chunk size"
                )));
            }
            let c = c as usize;
            (0..dim.div_ceil(c)).map(|k| c.min(dim - k * c)).collect()
        }
        Some(s) if s.shape().len() == 1 => {
            let v = s.to_i64_vec();
            if v.iter().any(|&x| x < 0) || v.iter().sum::<i64>() != dim as i64 {
                return Err(Error::kernel(format!(
                    "split lengths {v:?} must be non-negative and sum to the dim {dim}"
                )));
            }
            v.into_iter().map(|x| x as usize).collect()
        }
        Some(s) => {
            return Err(Error::kernel(format!(
                "split must be a scalar or 1-D, got shape {:?}",
                s.shape()
            )))
        }
    };
    let mut start = 0;
    Ok(lengths
        .into_iter()
        .map(|l| {
            let r = (start, start + l);
            start += l;
            r
        })
        .collect())
}

fn split_factory(info: &NodeInfo) -> Result<Kernel> {
    let axis = info.int("axis", 0)?;
    let keepdims = info.int("keepdims", 1)? != 0;
    Ok(Box::new(move |inputs| {
        let x = tensor(inputs, 0)?;
        let split = match inputs.get(1).copied().flatten() {
            None => None,
            Some(_) => Some(tensor(inputs, 1)?),
        };
        let ax = norm_axis(axis, x.shape().len())?;
        let drop_axis = split.is_none() && !keepdims;
        let mut items = Vec::new();
        for (s, e) in split_ranges(x.shape()[ax], split)? {
            let part = crate::map_any!(x, a => a
                .slice_axis(Axis(ax), Slice::from(s..e))
                .as_standard_layout()
                .into_owned());
            items.push(if drop_axis {
                let mut dims = part.shape().to_vec();
                dims.remove(ax);
                reshape(&part, &dims)?
            } else {
                part
            });
        }
        Ok(vec![make_list(x.dtype(), items)])
    }))
}

fn concat_factory(info: &NodeInfo) -> Result<Kernel> {
    let axis = info.int("axis", 0)?;
    let new_axis = info.int("new_axis", 0)? != 0;
    Ok(Box::new(move |inputs| {
        let (_, items) = list(inputs, 0)?;
        if items.is_empty() {
            return Err(Error::kernel("ConcatFromSequence of an empty list"));
        }
        let xs: Vec<&Value> = items.iter().collect();
        Ok(vec![if new_axis {
            stack(&xs, axis)?
        } else {
            concat(&xs, axis)?
        }])
    }))
}

fn optional_from_value_factory(_: &NodeInfo) -> Result<Kernel> {
    Ok(Box::new(|inputs| {
        let x = input(inputs, 0)?;
        if let Value::Variant(Variant::Optional(_)) = x {
            return Err(Error::kernel("an optional of an optional"));
        }
        Ok(vec![Value::Variant(Variant::Optional(Some(Box::new(
            x.clone(),
        ))))])
    }))
}

fn optional_none_factory(_: &NodeInfo) -> Result<Kernel> {
    Ok(Box::new(|_| {
        Ok(vec![Value::Variant(Variant::Optional(None))])
    }))
}

fn optional_has_value_factory(_: &NodeInfo) -> Result<Kernel> {
    Ok(Box::new(|inputs| {
        // A tensor or list fed where an optional is expected is present.
        let has = !matches!(input(inputs, 0)?, Value::Variant(Variant::Optional(None)));
        Ok(vec![Value::Bool(ndarray::arr0(has).into_dyn())])
    }))
}

fn optional_get_value_factory(_: &NodeInfo) -> Result<Kernel> {
    Ok(Box::new(|inputs| {
        Ok(vec![match input(inputs, 0)? {
            Value::Variant(Variant::Optional(None)) => {
                return Err(Error::kernel("the optional is empty"))
            }
            Value::Variant(Variant::Optional(Some(v))) => (**v).clone(),
            v => v.clone(),
        }])
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{ArrayD, IxDyn};

    fn f32s(dims: &[usize], v: &[f32]) -> Value {
        Value::F32(ArrayD::from_shape_vec(IxDyn(dims), v.to_vec()).unwrap())
    }
    fn i64s(v: i64) -> Value {
        Value::I64(ndarray::arr0(v).into_dyn())
    }

    #[test]
    fn positions_count_from_the_end_and_name_the_range() {
        assert_eq!(position(-1, 3, false, "index").unwrap(), 2);
        assert_eq!(position(3, 3, true, "position").unwrap(), 3);
        let e = position(3, 3, false, "index").unwrap_err().to_string();
        assert!(
            e.contains("index 3 is out of range") && e.contains("[-3, 2]"),
            "{e}"
        );
        assert!(position(-4, 3, true, "position").is_err());
        assert!(position(0, 0, false, "index").is_err());
    }

    #[test]
    fn split_ranges_follow_onnx() {
        assert_eq!(
            split_ranges(5, Some(&i64s(2))).unwrap(),
            vec![(0, 2), (2, 4), (4, 5)]
        );
        assert_eq!(split_ranges(3, None).unwrap(), vec![(0, 1), (1, 2), (2, 3)]);
        let lens = Value::I64(ArrayD::from_shape_vec(IxDyn(&[2]), vec![1, 4]).unwrap());
        assert_eq!(split_ranges(5, Some(&lens)).unwrap(), vec![(0, 1), (1, 5)]);
        assert!(split_ranges(6, Some(&lens)).is_err());
        assert!(split_ranges(6, Some(&i64s(0))).is_err());
    }

    fn run(k: &Kernel, xs: &[Option<&Value>]) -> Result<Vec<Value>> {
        k(xs)
    }

    fn node(op: &str) -> es_core::Node {
        es_core::Node::new(op.to_string(), op)
    }

    #[test]
    fn list_ops_build_read_and_refuse_mismatches() {
        let n = node("SequenceInsert");
        let info = NodeInfo {
            node: &n,
            inputs: vec![],
            const_inputs: vec![],
        };
        let empty = make_list(DataType::UNDEFINED, vec![]);
        let a = f32s(&[2], &[1.0, 2.0]);
        let b = f32s(&[1], &[3.0]);
        let ins = insert_factory(&info).unwrap();
        let l = run(&ins, &[Some(&empty), Some(&a)]).unwrap().remove(0);
        let l = run(&ins, &[Some(&l), Some(&b), Some(&i64s(0))])
            .unwrap()
            .remove(0);
        assert_eq!(l, make_list(DataType::FLOAT, vec![b.clone(), a.clone()]));
        let get = get_item_factory(&info).unwrap();
        assert_eq!(run(&get, &[Some(&l), Some(&i64s(-1))]).unwrap()[0], a);
        let e = run(&get, &[Some(&l), Some(&i64s(2))])
            .unwrap_err()
            .to_string();
        assert!(e.contains("index 2 is out of range for a list of 2"), "{e}");
        let wrong = Value::I64(ArrayD::zeros(IxDyn(&[1])));
        assert!(run(&ins, &[Some(&l), Some(&wrong)]).is_err());
        assert!(
            run(&ins, &[Some(&a), Some(&a)]).is_err(),
            "a tensor is no list"
        );
        let erase = erase_factory(&info).unwrap();
        let l1 = run(&erase, &[Some(&l), None]).unwrap().remove(0);
        assert_eq!(l1, make_list(DataType::FLOAT, vec![b.clone()]));
        let len = length_factory(&info).unwrap();
        assert_eq!(run(&len, &[Some(&l)]).unwrap()[0].to_i64_vec(), vec![2]);
        let pop = pop_back_factory(&info).unwrap();
        let popped = run(&pop, &[Some(&l1), None]).unwrap();
        assert_eq!(popped[1], b);
        assert!(run(&pop, &[Some(&popped[0]), None]).is_err());
    }

    #[test]
    fn split_and_concat_round_trip() {
        let mut n = node("SplitToSequence");
        n.attrs.insert("axis".into(), es_core::AttrValue::Int(1));
        n.attrs
            .insert("keepdims".into(), es_core::AttrValue::Int(0));
        n.attrs
            .insert("new_axis".into(), es_core::AttrValue::Int(1));
        let info = NodeInfo {
            node: &n,
            inputs: vec![],
            const_inputs: vec![],
        };
        let x = f32s(&[2, 3], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        let l = run(&split_factory(&info).unwrap(), &[Some(&x), None])
            .unwrap()
            .remove(0);
        let Value::Variant(Variant::List(dt, items)) = &l else {
            panic!("a list")
        };
        assert_eq!((*dt, items.len()), (DataType::FLOAT, 3));
        assert_eq!(items[1], f32s(&[2], &[1.0, 4.0]));
        let back = run(&concat_factory(&info).unwrap(), &[Some(&l)]).unwrap();
        assert_eq!(back[0], x);
        let empty = make_list(DataType::FLOAT, vec![]);
        assert!(run(&concat_factory(&info).unwrap(), &[Some(&empty)]).is_err());
    }

    #[test]
    fn optionals_hold_a_value_or_nothing() {
        let n = node("OptionalGetValue");
        let info = NodeInfo {
            node: &n,
            inputs: vec![],
            const_inputs: vec![],
        };
        let x = f32s(&[1], &[1.0]);
        let some = run(&optional_from_value_factory(&info).unwrap(), &[Some(&x)])
            .unwrap()
            .remove(0);
        let none = run(&optional_none_factory(&info).unwrap(), &[])
            .unwrap()
            .remove(0);
        let has = optional_has_value_factory(&info).unwrap();
        let get = optional_get_value_factory(&info).unwrap();
        assert_eq!(run(&has, &[Some(&some)]).unwrap()[0].to_i64_vec(), vec![1]);
        assert_eq!(run(&has, &[Some(&none)]).unwrap()[0].to_i64_vec(), vec![0]);
        assert_eq!(run(&has, &[Some(&x)]).unwrap()[0].to_i64_vec(), vec![1]);
        assert_eq!(run(&get, &[Some(&some)]).unwrap()[0], x);
        assert_eq!(run(&get, &[Some(&x)]).unwrap()[0], x);
        let e = run(&get, &[Some(&none)]).unwrap_err().to_string();
        assert!(e.contains("the optional is empty"), "{e}");
    }
}
