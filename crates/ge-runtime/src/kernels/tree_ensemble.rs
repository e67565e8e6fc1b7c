//! Tree ensembles (the ge-rs operators TreeEnsemble and TreeEnsembleClassifier: ai.onnx.ml's
//! TreeEnsemble, TreeEnsembleRegressor and TreeEnsembleClassifier). The trees are checked and
//! flattened once, when the kernel is made ([`es_core::infer::tree_ensemble::Trees`]); each row
//! walks every tree to its leaf, the leaves' weights combine per target, then the post
//! transform. Rows are split across the thread pool when the work is large. Scores are
//! computed in f64 and written in the output's dtype.

use super::{input, Kernel, Kernels, NodeInfo};
use crate::error::{Error, Result};
use crate::par;
use crate::value::Value;
use es_core::infer::tree_ensemble::{classifier_shape, Aggregate, PostTransform, Trees};
use es_core::{AttrValue, DataType};
use ndarray::{ArrayD, IxDyn};

/// This family's kernels, which [`super::registry`] collects.
pub(super) const KERNELS: Kernels = &[
    (&["TreeEnsemble"], tree_ensemble_factory),
    (
        &["TreeEnsembleClassifier"],
        tree_ensemble_classifier_factory,
    ),
];

fn trees_of(info: &NodeInfo) -> Result<Trees> {
    Trees::from_attrs(&|n| info.attr(n))
        .map_err(|e| Error::kernel(format!("{} '{}': {e}", info.op(), info.node.name)))
}

/// x as f64 rows: ([N, F] or [F], one row) the row count and the features per row.
fn rows_of(trees: &Trees, x: &Value, op: &str) -> Result<(usize, usize, Vec<f64>)> {
    let (n, f) = match x.shape() {
        [f] => (1, *f),
        [n, f] => (*n, *f),
        s => {
            return Err(Error::kernel(format!(
                "{op}: x must be [N, F] or [F], got {s:?}"
            )))
        }
    };
    if f < trees.n_features && n > 0 {
        return Err(Error::kernel(format!(
            "{op}: x has {f} features, the nodes read feature {}",
            trees.n_features - 1
        )));
    }
    Ok((n, f, x.to_f64_vec()))
}

/// The aggregated scores (`n_targets` a row, base values added) of every row.
fn aggregate(trees: &Trees, n: usize, f: usize, x: &[f64], max: f64) -> Result<Vec<f64>> {
    let t = trees.n_targets;
    let mut out = vec![0.0; n * t];
    let work = n.saturating_mul(trees.roots.len()).saturating_mul(8);
    par::for_chunks_mut(&mut out, t, work, |start, chunk| {
        for (r, acc) in chunk.chunks_mut(t).enumerate() {
            let row = &x[(start / t + r) * f..][..f];
            aggregate_row(trees, row, acc, max);
        }
        Ok(())
    })?;
    Ok(out)
}

/// One row's scores into `acc` (`max`: the output dtype's largest value, MIN's start).
fn aggregate_row(trees: &Trees, row: &[f64], acc: &mut [f64], max: f64) {
    acc.fill(match trees.aggregate {
        Aggregate::Min => max,
        Aggregate::Max => -max,
        Aggregate::Sum | Aggregate::Average => 0.0,
    });
    for &root in &trees.roots {
        let leaf = trees.leaf(root, |i| row[i]);
        for e in trees.leaves[leaf].clone() {
            let (k, w) = (trees.targets[e], trees.weights[e]);
            acc[k] = match trees.aggregate {
                Aggregate::Sum | Aggregate::Average => acc[k] + w,
                Aggregate::Min => acc[k].min(w),
                Aggregate::Max => acc[k].max(w),
            };
        }
    }
    if trees.aggregate == Aggregate::Average {
        let n = trees.roots.len() as f64;
        acc.iter_mut().for_each(|v| *v /= n);
    }
    for (v, b) in acc.iter_mut().zip(&trees.base_values) {
        *v += b;
    }
}

/// ONNX's approximation of the inverse error function (Winitzki's, a = 0.147), as the
/// reference and onnxruntime compute PROBIT.
fn erf_inv(x: f64) -> f64 {
    let sgn = if x < 0.0 { -1.0 } else { 1.0 };
    let x = (1.0 - x) * (1.0 + x);
    if x == 0.0 {
        return 0.0;
    }
    let log = x.ln();
    let v = 2.0 / (std::f64::consts::PI * 0.147) + 0.5 * log;
    let v2 = 1.0 / 0.147 * log;
    let v3 = -v + (v * v - v2).sqrt();
    sgn * v3.sqrt()
}

/// The post transform of one row, in place.
fn post_transform(pt: PostTransform, row: &mut [f64]) {
    match pt {
        PostTransform::None => {}
        PostTransform::Softmax => {
            let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let mut sum = 0.0;
            for v in row.iter_mut() {
                *v = (*v - max).exp();
                sum += *v;
            }
            row.iter_mut().for_each(|v| *v /= sum);
        }
        PostTransform::Logistic => row.iter_mut().for_each(|v| {
            let e = 1.0 / (1.0 + (-v.abs()).exp());
            *v = if *v < 0.0 { 1.0 - e } else { e };
        }),
        PostTransform::SoftmaxZero => {
            let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let exp_neg_max = (-max).exp();
            let mut sum = 0.0;
            for v in row.iter_mut() {
                *v = if v.abs() > 1e-7 {
                    (*v - max).exp()
                } else {
                    *v * exp_neg_max
                };
                sum += *v;
            }
            if sum == 0.0 {
                row.fill(0.5);
            } else {
                row.iter_mut().for_each(|v| *v /= sum);
            }
        }
        PostTransform::Probit => row
            .iter_mut()
            .for_each(|v| *v = std::f64::consts::SQRT_2 * erf_inv(*v * 2.0 - 1.0)),
    }
}

/// The largest finite value of a float dtype (MIN's and MAX's start, as ONNX's `finfo`).
fn dtype_max(dt: DataType) -> f64 {
    match dt {
        DataType::FLOAT16 => 65504.0,
        DataType::DOUBLE => f64::MAX,
        _ => f64::from(f32::MAX),
    }
}

fn array(dims: &[usize], v: Vec<f64>) -> Result<Value> {
    ArrayD::from_shape_vec(IxDyn(dims), v)
        .map(Value::F64)
        .map_err(|e| Error::kernel(e.to_string()))
}

/// TreeEnsemble: y [N, n_targets] in x's dtype.
fn tree_ensemble_factory(info: &NodeInfo) -> Result<Kernel> {
    let trees = trees_of(info)?;
    if !trees.base_values.is_empty() && trees.base_values.len() != trees.n_targets {
        return Err(Error::kernel(format!(
            "TreeEnsemble '{}': base_values has {} entries, n_targets is {}",
            info.node.name,
            trees.base_values.len(),
            trees.n_targets
        )));
    }
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let dt = x.dtype();
        if !dt.is_float() {
            return Err(Error::kernel(format!(
                "TreeEnsemble: x must be a float tensor, got {dt}"
            )));
        }
        let (n, f, xs) = rows_of(&trees, x, "TreeEnsemble")?;
        let mut y = aggregate(&trees, n, f, &xs, dtype_max(dt))?;
        let t = trees.n_targets;
        if trees.post_transform != PostTransform::None {
            y.chunks_mut(t)
                .for_each(|row| post_transform(trees.post_transform, row));
        }
        Ok(vec![array(&[n, t], y)?.cast(dt)?])
    }))
}

/// The class labels: integers or strings.
enum Labels {
    Int(Vec<i64>),
    Str(Vec<String>),
}

/// TreeEnsembleClassifier: the labels y [N] and the scores z [N, C] (float; [N, 2] binary).
fn tree_ensemble_classifier_factory(info: &NodeInfo) -> Result<Kernel> {
    let trees = trees_of(info)?;
    let fail =
        |e: String| Error::kernel(format!("TreeEnsembleClassifier '{}': {e}", info.node.name));
    let (_, c, binary) = classifier_shape(&trees, info.attr("classlabels")).map_err(fail)?;
    let labels = match info.attr("classlabels") {
        Some(AttrValue::Tensor(t)) if t.desc.dtype == DataType::STRING => {
            Labels::Str(t.strings().map_err(|e| fail(e.to_string()))?)
        }
        Some(AttrValue::Tensor(t)) => Labels::Int(t.to_i64_vec().map_err(|e| fail(e.to_string()))?),
        _ => {
            return Err(fail(
                "attribute 'classlabels' (a Tensor) is required".into(),
            ))
        }
    };
    // The binary case reads the one class id's column; one label (the integer 1) means y is 0 or 1.
    let column = trees.targets.first().copied().unwrap_or(0);
    let one_label = c == 1;
    let width = if binary { 2 } else { c };
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let (n, f, xs) = rows_of(&trees, x, "TreeEnsembleClassifier")?;
        let scores = aggregate(&trees, n, f, &xs, f64::from(f32::MAX))?;
        let mut z = Vec::with_capacity(n * width);
        let mut best = Vec::with_capacity(n);
        for row in scores.chunks(c.max(1)).take(n) {
            let start = z.len();
            if binary {
                let s = row[column];
                let neg = match trees.post_transform {
                    PostTransform::None | PostTransform::Probit => 1.0 - s,
                    _ => -s,
                };
                z.extend([neg, s]);
            } else {
                z.extend_from_slice(row);
            }
            let out = &mut z[start..];
            post_transform(trees.post_transform, out);
            // The first largest score, or the first NaN (numpy's argmax, as the reference).
            let mut k = 0;
            for (i, &v) in out.iter().enumerate() {
                if out[k].is_nan() {
                    break;
                }
                if v.is_nan() || v > out[k] {
                    k = i;
                }
            }
            best.push(k);
        }
        let y = match &labels {
            Labels::Int(_) if one_label => {
                let v = best.iter().map(|&k| i64::from(k == 1)).collect();
                Value::I64(
                    ArrayD::from_shape_vec(IxDyn(&[n]), v)
                        .map_err(|e| Error::kernel(e.to_string()))?,
                )
            }
            Labels::Int(l) => {
                let v = best.iter().map(|&k| l[k]).collect();
                Value::I64(
                    ArrayD::from_shape_vec(IxDyn(&[n]), v)
                        .map_err(|e| Error::kernel(e.to_string()))?,
                )
            }
            Labels::Str(l) => Value::strings(&[n], best.iter().map(|&k| l[k].clone()).collect())?,
        };
        Ok(vec![y, array(&[n, width], z)?.cast(DataType::FLOAT)?])
    }))
}

#[cfg(test)]
mod tests {
    use super::super::common::testing;
    use super::*;
    use es_core::Tensor;

    fn li(v: &[i64]) -> AttrValue {
        AttrValue::ListInt(v.to_vec())
    }
    fn tf(v: &[f64]) -> AttrValue {
        AttrValue::Tensor(Tensor::from_values(v, vec![v.len() as i64]).unwrap())
    }

    /// Two stumps on feature 0: x <= 1 -> (target 0, 1.0) else (target 1, 2.0); x < 3 -> (target
    /// 0, 4.0) else (target 1, 8.0).
    fn stumps<'a>(extra: &[(&'a str, AttrValue)]) -> Vec<(&'a str, AttrValue)> {
        let mut a: Vec<(&str, AttrValue)> = vec![
            ("nodes_modes", li(&[0, 1])),
            ("nodes_featureids", li(&[0, 0])),
            ("nodes_splits", tf(&[1.0, 3.0])),
            ("nodes_truenodeids", li(&[0, 2])),
            ("nodes_trueleafs", li(&[1, 1])),
            ("nodes_falsenodeids", li(&[1, 3])),
            ("nodes_falseleafs", li(&[1, 1])),
            ("leaf_targetids", li(&[0, 1, 0, 1])),
            ("leaf_weights", tf(&[1.0, 2.0, 4.0, 8.0])),
            ("tree_roots", li(&[0, 1])),
            ("n_targets", AttrValue::Int(2)),
        ];
        for (k, v) in extra {
            a.retain(|(n, _)| n != k);
            a.push((k, v.clone()));
        }
        a
    }

    fn run(op: &str, attrs: &[(&str, AttrValue)], x: &[f64], dims: &[usize]) -> Result<Vec<Value>> {
        let node = testing::node(op, attrs);
        let x = array(dims, x.to_vec())?.cast(DataType::FLOAT)?;
        testing::run(&node, &[Some(&x)])
    }

    fn f64s(v: &Value) -> Vec<f64> {
        v.to_f64_vec()
    }

    #[test]
    fn aggregates() {
        let x = [0.5, 2.0, 5.0];
        let y = run("TreeEnsemble", &stumps(&[]), &x, &[3, 1]).unwrap();
        assert_eq!(y[0].shape(), &[3, 2]);
        assert_eq!(f64s(&y[0]), [5.0, 0.0, 4.0, 2.0, 0.0, 10.0]);
        let avg = run(
            "TreeEnsemble",
            &stumps(&[("aggregate_function", AttrValue::Int(0))]),
            &x,
            &[3, 1],
        )
        .unwrap();
        assert_eq!(f64s(&avg[0]), [2.5, 0.0, 2.0, 1.0, 0.0, 5.0]);
        let min = run(
            "TreeEnsemble",
            &stumps(&[("aggregate_function", AttrValue::Int(2))]),
            &x,
            &[3, 1],
        )
        .unwrap();
        let m = f64::from(f32::MAX);
        assert_eq!(f64s(&min[0]), [1.0, m, 4.0, 2.0, m, 2.0]);
        let base = run(
            "TreeEnsemble",
            &stumps(&[("base_values", tf(&[10.0, 20.0]))]),
            &x,
            &[3, 1],
        )
        .unwrap();
        assert_eq!(f64s(&base[0]), [15.0, 20.0, 14.0, 22.0, 10.0, 30.0]);
    }

    #[test]
    fn post_transforms_follow_onnx() {
        let mut r = [1.0, 2.0];
        post_transform(PostTransform::Softmax, &mut r);
        assert!((r[0] - 1.0 / (1.0 + 1f64.exp())).abs() < 1e-12);
        let mut r = [0.0, -2.0];
        post_transform(PostTransform::Logistic, &mut r);
        assert!((r[0] - 0.5).abs() < 1e-12 && (r[1] - 1.0 / (1.0 + 2f64.exp())).abs() < 1e-12);
        let mut r = [0.0, 0.0];
        post_transform(PostTransform::SoftmaxZero, &mut r);
        assert_eq!(r, [0.5, 0.5]);
        let mut r = [0.5, 0.975];
        post_transform(PostTransform::Probit, &mut r);
        assert!(r[0].abs() < 1e-12 && (r[1] - 1.96).abs() < 1e-2, "{r:?}");
    }

    #[test]
    fn classifier_labels_and_binary_case() {
        let labels = AttrValue::Tensor(Tensor::from_strings(&["a", "b"], vec![2]).unwrap());
        let out = run(
            "TreeEnsembleClassifier",
            &stumps(&[("classlabels", labels)]),
            &[0.5, 5.0],
            &[2, 1],
        )
        .unwrap();
        assert_eq!(
            out[0],
            Value::strings(&[2], vec!["a".into(), "b".into()]).unwrap()
        );
        assert_eq!(f64s(&out[1]), [5.0, 0.0, 0.0, 10.0]);
        // One class id: column 1 is the score, column 0 its complement.
        let one = Tensor::from_values(&[1i64], vec![1]).unwrap();
        let a = stumps(&[
            ("leaf_targetids", li(&[0, 0, 0, 0])),
            ("leaf_weights", tf(&[0.1, 0.2, 0.3, 0.4])),
            ("classlabels", AttrValue::Tensor(one)),
            ("n_targets", AttrValue::Int(1)),
        ]);
        let out = run("TreeEnsembleClassifier", &a, &[0.5, 5.0], &[2, 1]).unwrap();
        assert_eq!(out[0].to_i64_vec(), [0, 1]);
        let z = f64s(&out[1]);
        for (got, want) in z.iter().zip([0.6, 0.4, 0.4, 0.6]) {
            assert!((got - want).abs() < 1e-6, "{z:?}");
        }
    }

    #[test]
    fn rows_split_across_threads_give_the_same_scores() {
        // 64 copies of the stumps (128 trees) over 4096 rows: above the parallel threshold.
        let mut a = stumps(&[]);
        let roots: Vec<i64> = (0..128).map(|i| i % 2).collect();
        a.retain(|(n, _)| *n != "tree_roots");
        a.push(("tree_roots", li(&roots)));
        let x: Vec<f64> = (0..4096).map(|i| f64::from(i % 7) * 0.75).collect();
        let one = run("TreeEnsemble", &a, &x, &[4096, 1]).unwrap();
        let two = crate::par::run_with(2, || run("TreeEnsemble", &a, &x, &[4096, 1])).unwrap();
        assert!(par::run_with(2, || Ok(par::chunks_for(4096 * 128 * 8))).unwrap() > 1);
        assert_eq!(one, two);
        // Row 0 (x = 0): 64 trees give (0, 1.0), 64 give (0, 4.0).
        assert_eq!(f64s(&one[0])[..2], [320.0, 0.0]);
    }

    #[test]
    fn short_rows_are_an_error() {
        let a = stumps(&[("nodes_featureids", li(&[0, 3]))]);
        let e = run("TreeEnsemble", &a, &[0.5, 1.0], &[1, 2]).unwrap_err();
        assert!(e.to_string().contains("x has 2 features"), "{e}");
    }
}
