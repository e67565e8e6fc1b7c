//! Shape and data-movement kernels: Reshape, Squeeze, Unsqueeze, Flatten, Transpose, concat
//! and stack (Concat takes concat_dim as its first input), Tile, BroadcastTo, Select.

use super::common::{
    array, broadcast_shape, buffer_for, by_variant, numel, same_dtype2, std_slice, to_owned_std,
};
use super::{input, norm_axes, norm_axis, Kernel, Kernels, NodeInfo};
use crate::error::{Error, Result};
use crate::par;
use crate::value::Value;
use ndarray::{ArrayD, Axis, IxDyn, Zip};

mod pad;
mod rearrange;
mod slice;
mod split;
mod strided;
mod triangle;

mod concat_into;
pub(crate) use concat_into::ConcatInto;

fn to_standard<T: Clone>(a: ndarray::ArrayViewD<'_, T>) -> ArrayD<T> {
    a.as_standard_layout().into_owned()
}

/// `x` with a new shape (same element count), in standard order.
pub(crate) fn reshape(x: &Value, dims: &[usize]) -> Result<Value> {
    if numel(dims)? != x.len() {
        return Err(Error::kernel(format!(
            "cannot reshape {} elements of shape {:?} into {dims:?}",
            x.len(),
            x.shape()
        )));
    }
    Ok(crate::map_any!(x, a => {
        let std = to_standard(a.view());
        std.into_shape_with_order(IxDyn(dims)).map_err(|e| Error::kernel(e.to_string()))?
    }))
}

/// Resolves a Reshape target: 0 copies the input dim (GE/ONNX), one -1 is inferred.
fn reshape_target(x: &[usize], want: &[i64]) -> Result<Vec<usize>> {
    let total: usize = x.iter().product();
    let mut out = Vec::with_capacity(want.len());
    let mut infer = None;
    for (i, &d) in want.iter().enumerate() {
        match d {
            -1 if infer.is_none() => {
                infer = Some(i);
                out.push(1);
            }
            0 => out.push(*x.get(i).ok_or_else(|| {
                Error::kernel(format!(
                    "reshape dim {i} is 0 but the input has rank {}",
                    x.len()
                ))
            })?),
            d if d > 0 => out.push(d as usize),
            _ => return Err(Error::kernel(format!("bad reshape target {want:?}"))),
        }
    }
    if let Some(i) = infer {
        let known: usize = out.iter().product();
        if known == 0 || !total.is_multiple_of(known) {
            return Err(Error::kernel(format!(
                "cannot reshape shape {x:?} into {want:?}"
            )));
        }
        out[i] = total / known;
    }
    Ok(out)
}

fn reshape_factory(info: &NodeInfo) -> Result<Kernel> {
    let (axis, num_axes) = (info.int("axis", 0)?, info.int("num_axes", -1)?);
    if axis != 0 || num_axes != -1 {
        return Err(Error::unsupported(format!(
            "Reshape with axis={axis}, num_axes={num_axes}"
        )));
    }
    Ok(Box::new(|inputs| {
        let x = input(inputs, 0)?;
        let want = input(inputs, 1)?.to_i64_vec();
        Ok(vec![reshape(x, &reshape_target(x.shape(), &want)?)?])
    }))
}

fn squeeze_factory(info: &NodeInfo) -> Result<Kernel> {
    // GE's Squeeze has `axis`; ONNX-style graphs name it `axes` (shape inference reads both).
    let axes = match info.ints("axis")? {
        Some(a) => a,
        None => info.ints("axes")?.unwrap_or_default(),
    };
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let rank = x.shape().len();
        let drop: Vec<usize> = if axes.is_empty() {
            (0..rank).filter(|&i| x.shape()[i] == 1).collect()
        } else {
            let mut v = Vec::new();
            for &a in &axes {
                let a = norm_axis(a, rank)?;
                if x.shape()[a] != 1 {
                    return Err(Error::kernel(format!(
                        "cannot squeeze dim {a} of size {}",
                        x.shape()[a]
                    )));
                }
                v.push(a);
            }
            v
        };
        let dims: Vec<usize> = (0..rank)
            .filter(|i| !drop.contains(i))
            .map(|i| x.shape()[i])
            .collect();
        Ok(vec![reshape(x, &dims)?])
    }))
}

fn unsqueeze_factory(info: &NodeInfo) -> Result<Kernel> {
    let axes = info.ints("axes")?.unwrap_or_default();
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let out_rank = x.shape().len() + axes.len();
        let at = norm_axes(&axes, out_rank)?;
        if at.len() != axes.len() {
            return Err(Error::kernel(format!("repeated axes {axes:?}")));
        }
        let mut src = x.shape().iter();
        let dims: Vec<usize> = (0..out_rank)
            .map(|i| {
                if at.contains(&i) {
                    1
                } else {
                    *src.next().unwrap_or(&1)
                }
            })
            .collect();
        Ok(vec![reshape(x, &dims)?])
    }))
}

fn flatten_factory(info: &NodeInfo) -> Result<Kernel> {
    let axis = info.int("axis", 1)?;
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let r = x.shape().len() as i64;
        let a = if axis < 0 { axis + r } else { axis };
        if a < 0 || a > r {
            return Err(Error::kernel(format!(
                "axis {axis} out of range for rank {r}"
            )));
        }
        let rows: usize = x.shape()[..a as usize].iter().product();
        let cols: usize = x.shape()[a as usize..].iter().product();
        Ok(vec![reshape(x, &[rows, cols])?])
    }))
}

/// `x` with its axes permuted (`perm` already validated), in standard order.
pub(crate) fn transpose(x: &Value, perm: &[usize]) -> Result<Value> {
    if let Some(y) = strided::View::permuted(x.shape(), perm).and_then(|v| v.take_value(x)) {
        return y;
    }
    Ok(crate::map_any!(x, a => to_standard(a.view().permuted_axes(IxDyn(perm)))))
}

fn check_perm(perm: &[i64], rank: usize) -> Result<Vec<usize>> {
    let p: Vec<usize> = perm
        .iter()
        .map(|&a| norm_axis(a, rank))
        .collect::<Result<_>>()?;
    let mut seen = vec![false; rank];
    for &a in &p {
        if std::mem::replace(&mut seen[a], true) {
            return Err(Error::kernel(format!("perm {perm:?} repeats an axis")));
        }
    }
    if p.len() != rank {
        return Err(Error::kernel(format!(
            "perm {perm:?} does not fit rank {rank}"
        )));
    }
    Ok(p)
}

fn transpose_factory(_: &NodeInfo) -> Result<Kernel> {
    Ok(Box::new(|inputs| {
        let x = input(inputs, 0)?;
        let perm = check_perm(&input(inputs, 1)?.to_i64_vec(), x.shape().len())?;
        Ok(vec![transpose(x, &perm)?])
    }))
}

/// Concatenates values of one dtype along `axis`.
pub(crate) fn concat(xs: &[&Value], axis: i64) -> Result<Value> {
    let first = xs
        .first()
        .ok_or_else(|| Error::kernel("nothing to concatenate"))?;
    let ax = norm_axis(axis, first.shape().len())?;
    macro_rules! go {
        ($var:ident) => {{
            let mut views = Vec::with_capacity(xs.len());
            for x in xs {
                match x {
                    Value::$var(a) => views.push(a.view()),
                    v => {
                        return Err(Error::kernel(format!(
                            "concatenating {} with {}",
                            first.dtype(),
                            v.dtype()
                        )))
                    }
                }
            }
            if let Some(y) = concat_runs(&views, ax)? {
                return Ok(Value::$var(y));
            }
            Value::$var(
                ndarray::concatenate(Axis(ax), &views).map_err(|e| Error::kernel(e.to_string()))?,
            )
        }};
    }
    Ok(by_variant!(first, go))
}

/// [`concat`] of standard-layout parts that agree off the axis: runs of `memcpy` (one per outer
/// row of each part, one per part at batch 1), split across the run's threads when large; None
/// for other layouts or shapes (ndarray's concatenate then says what is wrong).
fn concat_runs<T: Clone + Send + Sync>(
    views: &[ndarray::ArrayViewD<'_, T>],
    ax: usize,
) -> Result<Option<ArrayD<T>>> {
    let Some(first) = views.first() else {
        return Ok(None);
    };
    let rank = first.ndim();
    let fits = |v: &ndarray::ArrayViewD<'_, T>| {
        v.ndim() == rank
            && (0..rank).all(|k| k == ax || v.shape()[k] == first.shape()[k])
            && v.is_standard_layout()
    };
    if ax >= rank || !views.iter().all(fits) {
        return Ok(None);
    }
    let mut dims = first.shape().to_vec();
    dims[ax] = views.iter().map(|v| v.shape()[ax]).sum();
    let n = numel(&dims)?;
    let Some(fill) = views.iter().find_map(|v| v.iter().next()).cloned() else {
        return Ok(None);
    };
    let inner: usize = dims[ax + 1..].iter().product();
    let row = dims[ax] * inner;
    if par::chunks_for(n) <= 1 {
        // One thread: the output built as it is copied (not filled first).
        let mut out = super::common::with_capacity(n)?;
        for o in 0..n.checked_div(row).unwrap_or(0) {
            for v in views {
                let run = v.shape()[ax] * inner;
                let Some(src) = v.as_slice() else {
                    return Ok(None);
                };
                out.extend_from_slice(&src[o * run..(o + 1) * run]);
            }
        }
        return array(&dims, out).map(Some);
    }
    let mut out = super::common::alloc(n, fill)?;
    let mut at = 0;
    for v in views {
        let run = v.shape()[ax] * inner;
        if let Some(src) = v.as_slice().filter(|s| !s.is_empty()) {
            concat_into::copy_runs(&mut out, src, row, at, run)?;
        }
        at += run;
    }
    array(&dims, out).map(Some)
}

fn concat_v2_factory(_: &NodeInfo) -> Result<Kernel> {
    Ok(Box::new(|inputs| {
        let (data, dim) = inputs.split_at(inputs.len().saturating_sub(1));
        let axis = *input(dim, 0)?
            .to_i64_vec()
            .first()
            .ok_or_else(|| Error::kernel("concat_dim is empty"))?;
        let xs: Vec<&Value> = data.iter().flatten().copied().collect();
        Ok(vec![concat(&xs, axis)?])
    }))
}

fn concat_d_factory(info: &NodeInfo) -> Result<Kernel> {
    let axis = info.int("concat_dim", 0)?;
    Ok(Box::new(move |inputs| {
        let xs: Vec<&Value> = inputs.iter().flatten().copied().collect();
        Ok(vec![concat(&xs, axis)?])
    }))
}

/// Stacks values of one dtype and shape along a new axis `axis` (in `[-rank-1, rank]`).
pub(crate) fn stack(xs: &[&Value], axis: i64) -> Result<Value> {
    let first = xs
        .first()
        .ok_or_else(|| Error::kernel("nothing to stack"))?;
    let rank = first.shape().len();
    let ax = norm_axis(axis, rank + 1)?;
    let mut expanded = Vec::with_capacity(xs.len());
    for x in xs {
        if x.shape() != first.shape() {
            return Err(Error::kernel(format!(
                "stacking shapes {:?} and {:?}",
                first.shape(),
                x.shape()
            )));
        }
        let mut dims = x.shape().to_vec();
        dims.insert(ax, 1);
        expanded.push(reshape(x, &dims)?);
    }
    let refs: Vec<&Value> = expanded.iter().collect();
    concat(&refs, ax as i64)
}

fn pack_factory(info: &NodeInfo) -> Result<Kernel> {
    let axis = info.int("axis", 0)?;
    Ok(Box::new(move |inputs| {
        let xs: Vec<&Value> = inputs.iter().flatten().copied().collect();
        Ok(vec![stack(&xs, axis)?])
    }))
}

fn tile_factory(_: &NodeInfo) -> Result<Kernel> {
    Ok(Box::new(|inputs| {
        let x = input(inputs, 0)?;
        let reps = input(inputs, 1)?.to_i64_vec();
        if reps.iter().any(|&r| r < 0) {
            return Err(Error::kernel(format!(
                "multiples {reps:?} do not fit shape {:?}",
                x.shape()
            )));
        }
        // numpy's tile: x is right-aligned with longer multiples (leading dims of 1), and
        // shorter multiples repeat the trailing dims.
        let n = reps.len().max(x.shape().len());
        let mut dims = vec![1; n - x.shape().len()];
        dims.extend_from_slice(x.shape());
        let mut full = vec![1; n - reps.len()];
        full.extend(reps.iter().map(|&r| r as usize));
        Ok(vec![crate::map_any!(x, a => tile(a, &dims, &full)?)])
    }))
}

/// `a` (of shape `dims` once right-aligned) repeated `reps[i]` times along each axis, its size
/// checked before any copy and its buffer allocated fallibly.
fn tile<T: Clone>(a: &ArrayD<T>, dims: &[usize], reps: &[usize]) -> Result<ArrayD<T>> {
    let out_dims = dims
        .iter()
        .zip(reps)
        .map(|(&d, &r)| d.checked_mul(r))
        .collect::<Option<Vec<usize>>>()
        .ok_or_else(|| {
            Error::kernel(format!(
                "tiling shape {dims:?} by {reps:?} has more elements than can be stored"
            ))
        })?;
    let mut out = buffer_for(&out_dims)?;
    if numel(&out_dims)? > 0 {
        tile_into(&std_slice(a), dims, reps, &mut out);
    }
    array(&out_dims, out)
}

/// Appends block `src` (of shape `dims`, no dim 0) tiled by `reps` (none 0) to `out`.
fn tile_into<T: Clone>(src: &[T], dims: &[usize], reps: &[usize], out: &mut Vec<T>) {
    let start = out.len();
    match dims {
        [] => out.extend_from_slice(src),
        [_] => out.extend_from_slice(src),
        [d, rest @ ..] => {
            let inner = src.len() / d;
            for row in src.chunks_exact(inner) {
                tile_into(row, rest, &reps[1..], out);
            }
        }
    }
    let end = out.len();
    for _ in 1..reps.first().copied().unwrap_or(1) {
        out.extend_from_within(start..end);
    }
}

/// `x` broadcast to `dims` (numpy rules), materialised.
pub(crate) fn broadcast_to(x: &Value, dims: &[usize]) -> Result<Value> {
    let shape = broadcast_shape(x.shape(), dims)?;
    if shape != dims {
        return Err(Error::kernel(format!(
            "shape {:?} does not broadcast to {dims:?}",
            x.shape()
        )));
    }
    numel(dims)?;
    Ok(crate::map_any!(x, a => {
        let v = a.broadcast(IxDyn(dims)).ok_or_else(|| Error::kernel("broadcast failed"))?;
        to_owned_std(v)?
    }))
}

fn broadcast_to_factory(_: &NodeInfo) -> Result<Kernel> {
    Ok(Box::new(|inputs| {
        let x = input(inputs, 0)?;
        let want = input(inputs, 1)?.to_i64_vec();
        if want.iter().any(|&d| d < 0) {
            return Err(Error::kernel(format!("bad shape {want:?}")));
        }
        let want: Vec<usize> = want.iter().map(|&d| d as usize).collect();
        // ONNX Expand semantics too: the result is the broadcast of both shapes.
        let dims = broadcast_shape(x.shape(), &want)?;
        Ok(vec![broadcast_to(x, &dims)?])
    }))
}

fn select_factory(info: &NodeInfo) -> Result<Kernel> {
    let legacy = info.op() == "Select";
    Ok(Box::new(move |inputs| {
        let c = match input(inputs, 0)? {
            Value::Bool(c) => c,
            v => {
                return Err(Error::kernel(format!(
                    "condition must be bool, got {}",
                    v.dtype()
                )))
            }
        };
        let (a, b) = (input(inputs, 1)?, input(inputs, 2)?);
        let mut cond = c.clone();
        // Select: a vector condition picks whole rows of x1 (TensorFlow's rule).
        if legacy && c.ndim() == 1 && a.shape().len() > 1 && c.len() == a.shape()[0] {
            let mut dims = vec![1; a.shape().len()];
            dims[0] = c.len();
            cond = c
                .clone()
                .into_shape_with_order(IxDyn(&dims))
                .map_err(|e| Error::kernel(e.to_string()))?;
        }
        let ab = broadcast_shape(a.shape(), b.shape())?;
        let shape = broadcast_shape(cond.shape(), &ab)?;
        let cv = cond
            .broadcast(IxDyn(&shape))
            .ok_or_else(|| Error::kernel("broadcast failed"))?;
        macro_rules! go {
            ($var:ident, $x:expr, $y:expr) => {{
                let xv = $x
                    .broadcast(IxDyn(&shape))
                    .ok_or_else(|| Error::kernel("broadcast failed"))?;
                let yv = $y
                    .broadcast(IxDyn(&shape))
                    .ok_or_else(|| Error::kernel("broadcast failed"))?;
                Value::$var(
                    Zip::from(&cv)
                        .and(&xv)
                        .and(&yv)
                        .map_collect(|&k, &p, &q| if k { p } else { q }),
                )
            }};
        }
        if let (Value::Str(x), Value::Str(y)) = (a, b) {
            let xv = x.broadcast(IxDyn(&shape));
            let yv = y.broadcast(IxDyn(&shape));
            let (Some(xv), Some(yv)) = (xv, yv) else {
                return Err(Error::kernel("broadcast failed"));
            };
            let pick = |&k: &bool, p: &String, q: &String| if k { p.clone() } else { q.clone() };
            return Ok(vec![Value::Str(
                Zip::from(&cv).and(&xv).and(&yv).map_collect(pick),
            )]);
        }
        let out = same_dtype2!(
            a,
            b,
            go,
            [F32, F64, F16, BF16, I8, I16, I32, I64, U8, U16, U32, U64, Bool],
            {
                return Err(Error::kernel(format!(
                    "the two branches have dtypes {} and {}",
                    a.dtype(),
                    b.dtype()
                )));
            }
        );
        Ok(vec![out])
    }))
}

/// Concat: concat_dim (a one-element tensor) first, then the tensors of x.
fn concat_factory(_: &NodeInfo) -> Result<Kernel> {
    Ok(Box::new(|inputs| {
        let axis = *input(inputs, 0)?
            .to_i64_vec()
            .first()
            .ok_or_else(|| Error::kernel("concat_dim is empty"))?;
        let xs: Vec<&Value> = inputs.iter().skip(1).flatten().copied().collect();
        Ok(vec![concat(&xs, axis)?])
    }))
}

/// `x` reshaped (same element count).
fn reshaped(x: Value, dims: &[usize]) -> Result<Value> {
    reshape(&x, dims)
}

/// This family's kernels, which [`super::registry`] collects.
pub(super) const KERNELS: Kernels = &[
    (&["Reshape"], reshape_factory),
    (&["Squeeze"], squeeze_factory),
    (&["Unsqueeze"], unsqueeze_factory),
    (&["Flatten"], flatten_factory),
    (&["Transpose"], transpose_factory),
    (&["ConcatV2"], concat_v2_factory),
    (&["ConcatD"], concat_d_factory),
    (&["Pack"], pack_factory),
    (&["Tile"], tile_factory),
    (&["BroadcastTo", "Expand"], broadcast_to_factory),
    (&["Select", "SelectV2"], select_factory),
    (&["Concat"], concat_factory),
    (&["Slice", "SliceD"], slice::slice_factory),
    (
        &["StridedSlice", "StridedSliceD"],
        slice::strided_slice_factory,
    ),
    (&["StridedSliceV2"], slice::strided_slice_v2_factory),
    (&["ReverseV2"], slice::reverse_factory),
    (&["Split", "SplitD", "SplitV"], split::split_factory),
    (&["Unpack"], split::unpack_factory),
    (&["Pad", "PadD", "PadV3"], pad::pad_factory),
    (&["Tril", "Triu", "Trilu"], triangle::triangle_factory),
    (&["ExpandD"], rearrange::expand_d_factory),
    (&["FlattenV2"], rearrange::flatten_v2_factory),
    (
        &["SpaceToDepth", "DepthToSpace"],
        rearrange::space_depth_factory,
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    /// [`concat`] by runs of memcpy at 1, 2 and 3 threads against ndarray's concatenate: large
    /// enough to split (checked), parts of odd sizes, an empty part, batch 1 and batch 3, and
    /// strings (cloned) and a part that is not in standard layout (ndarray's path).
    #[test]
    fn concat_runs_match_ndarray_at_every_thread_count() {
        let iota = |dims: &[usize], from: usize| {
            let n: usize = dims.iter().product();
            ArrayD::from_shape_vec(IxDyn(dims), (from..from + n).map(|i| i as f32).collect())
                .unwrap()
        };
        for (parts, axis) in [
            (
                vec![
                    vec![1, 301, 29, 31],
                    vec![1, 0, 29, 31],
                    vec![1, 17, 29, 31],
                ],
                1,
            ),
            (vec![vec![3, 101, 33, 31], vec![3, 5, 33, 31]], 1),
            (vec![vec![2, 8, 300, 57], vec![2, 8, 1, 57]], 2),
        ] {
            let arrays: Vec<ArrayD<f32>> = parts
                .iter()
                .enumerate()
                .map(|(i, d)| iota(d, i * 1_000_000))
                .collect();
            let total: usize = arrays.iter().map(|a| a.len()).sum();
            assert!(par::run_with(2, || Ok(par::chunks_for(total))).unwrap() > 1);
            let views: Vec<_> = arrays.iter().map(|a| a.view()).collect();
            let want = Value::F32(ndarray::concatenate(Axis(axis), &views).unwrap());
            let vals: Vec<Value> = arrays.into_iter().map(Value::F32).collect();
            let refs: Vec<&Value> = vals.iter().collect();
            for n in [1, 2, 3] {
                let got = par::run_with(n, || concat(&refs, axis as i64)).unwrap();
                assert_eq!(got, want, "{parts:?} axis {axis}, {n} threads");
            }
        }
        let s = |v: &[&str], d: &[usize]| {
            Value::Str(
                ArrayD::from_shape_vec(IxDyn(d), v.iter().map(|x| x.to_string()).collect())
                    .unwrap(),
            )
        };
        let got = concat(&[&s(&["a", "b"], &[2, 1]), &s(&["c", "d"], &[2, 1])], 1).unwrap();
        assert_eq!(got, s(&["a", "c", "b", "d"], &[2, 2]));
        let t = iota(&[4, 3], 0).reversed_axes();
        let u = iota(&[3, 2], 100);
        let want = ndarray::concatenate(Axis(1), &[t.view(), u.view()]).unwrap();
        let got = concat(&[&Value::F32(t), &Value::F32(u)], 1).unwrap();
        assert_eq!(got, Value::F32(want));
        assert!(concat(&[&s(&["a"], &[1, 1]), &s(&["b", "c"], &[1, 2])], 0).is_err());
    }
    use crate::kernels::common::testing::run1;

    #[test]
    fn tile_right_aligns_x_like_numpy() {
        let x = Value::I32(ArrayD::from_shape_vec(IxDyn(&[2]), vec![1, 2]).unwrap());
        let reps = Value::I64(ArrayD::from_shape_vec(IxDyn(&[2]), vec![2, 3]).unwrap());
        let y = &run1("Tile", &[], &[&x, &reps]).unwrap();
        assert_eq!(y.shape(), &[2, 6]);
        assert_eq!(y.to_i64_vec(), [1, 2, 1, 2, 1, 2].repeat(2));
    }

    #[test]
    fn tile_matches_numpy_on_3d_with_zero_and_one_reps() {
        let x = Value::I32(ArrayD::from_shape_vec(IxDyn(&[2, 1, 3]), (0..6).collect()).unwrap());
        let reps = Value::I64(ArrayD::from_shape_vec(IxDyn(&[3]), vec![2, 2, 1]).unwrap());
        let y = &run1("Tile", &[], &[&x, &reps]).unwrap();
        assert_eq!(y.shape(), &[4, 2, 3]);
        // np.tile(np.arange(6).reshape(2, 1, 3), (2, 2, 1)).ravel()
        let half = [0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5];
        assert_eq!(y.to_i64_vec(), [half, half].concat());
        let zero = Value::I64(ArrayD::from_shape_vec(IxDyn(&[3]), vec![2, 0, 1]).unwrap());
        let y = &run1("Tile", &[], &[&x, &zero]).unwrap();
        assert_eq!(y.shape(), &[4, 0, 3]);
    }

    #[test]
    fn oversized_tile_and_broadcast_are_errors_naming_the_shape() {
        let x = Value::F32(ArrayD::from_elem(IxDyn(&[2, 2]), 1.0));
        let reps = Value::I64(ArrayD::from_shape_vec(IxDyn(&[2]), vec![1 << 62, 1 << 62]).unwrap());
        let e = run1("Tile", &[], &[&x, &reps]).unwrap_err().to_string();
        assert!(e.contains("more elements than can be stored"), "{e}");
        // Fits usize as a count, not as bytes: the allocation fails, it does not abort.
        let reps = Value::I64(ArrayD::from_shape_vec(IxDyn(&[2]), vec![1 << 30, 1 << 30]).unwrap());
        let e = run1("Tile", &[], &[&x, &reps]).unwrap_err().to_string();
        assert!(e.contains("cannot allocate"), "{e}");
        let one = Value::F32(ArrayD::from_elem(IxDyn(&[]), 1.0));
        for (dims, want) in [
            (
                vec![1i64 << 31, 1 << 31, 1 << 31],
                "more elements than can be stored",
            ),
            (vec![1 << 31, 1 << 31], "cannot allocate"),
        ] {
            let n = dims.len();
            let shape = Value::I64(ArrayD::from_shape_vec(IxDyn(&[n]), dims).unwrap());
            let e = run1("BroadcastTo", &[], &[&one, &shape])
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{e}");
        }
    }

    #[test]
    fn reshape_targets() {
        assert_eq!(reshape_target(&[2, 3, 4], &[0, -1]).unwrap(), vec![2, 12]);
        assert_eq!(reshape_target(&[2, 3, 4], &[-1]).unwrap(), vec![24]);
        assert!(reshape_target(&[2, 3, 4], &[5, -1]).is_err());
        assert!(reshape_target(&[2, 3], &[-1, -1]).is_err());
    }
}
