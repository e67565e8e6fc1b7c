//! Tree ensembles (the ge-rs operators TreeEnsemble and TreeEnsembleClassifier, after ONNX's
//! ai.onnx.ml TreeEnsemble, TreeEnsembleRegressor and TreeEnsembleClassifier): the attributes
//! checked and compiled once into flat node arrays ([`Trees`]), which inference (so an import
//! refuses a malformed ensemble, naming the attribute) and the CPU kernel share, and the
//! inference rules.
//!
//! The attributes are ONNX's TreeEnsemble (ai.onnx.ml opset 5) ones: `nodes_*` arrays (one entry
//! a branch node), `leaf_targetids` / `leaf_weights`, `tree_roots`, `membership_values` (the
//! sets of the BRANCH_MEMBER nodes in node order, each ended by a NaN), `n_targets`,
//! `aggregate_function` and `post_transform` as integers; two ge-rs additions carry what the
//! older TreeEnsembleRegressor and TreeEnsembleClassifier have: `leaf_ends` (when given, leaf `l`
//! is the entries `[leaf_ends[l-1], leaf_ends[l])` of the leaf arrays, so one leaf may add to
//! several targets) and `base_values` (added to every row after aggregation).

use super::common::single;
use super::{InferCtx, InferFn};
use crate::attr::AttrValue;
use crate::error::Result;
use crate::types::{DataType, Shape, TensorDesc, UNKNOWN_DIM};
use std::ops::Range;

/// The rule of an operator type of this family, if it has one.
pub(super) fn rule(op_type: &str) -> Option<InferFn> {
    Some(match op_type {
        "TreeEnsemble" => tree_ensemble,
        "TreeEnsembleClassifier" => tree_ensemble_classifier,
        _ => return None,
    })
}

/// How a branch node compares its feature with its threshold (ONNX's codes 0 to 6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Leq,
    Lt,
    Gte,
    Gt,
    Eq,
    Neq,
    Member,
}

impl Mode {
    /// ONNX's TreeEnsemble code.
    pub fn from_code(c: i64) -> Option<Mode> {
        use Mode::*;
        [Leq, Lt, Gte, Gt, Eq, Neq, Member]
            .get(usize::try_from(c).ok()?)
            .copied()
    }
    /// The older ops' name (BRANCH_LEQ, ...; LEAF is not a mode).
    pub fn from_name(s: &str) -> Option<Mode> {
        use Mode::*;
        Some(match s {
            "BRANCH_LEQ" => Leq,
            "BRANCH_LT" => Lt,
            "BRANCH_GTE" => Gte,
            "BRANCH_GT" => Gt,
            "BRANCH_EQ" => Eq,
            "BRANCH_NEQ" => Neq,
            "BRANCH_MEMBER" => Member,
            _ => return None,
        })
    }
}

/// How the trees' leaf weights combine per target (ONNX's codes: AVERAGE 0, SUM 1, MIN 2, MAX 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aggregate {
    Average,
    Sum,
    Min,
    Max,
}

/// The function applied to each row of scores last (ONNX's codes 0 to 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PostTransform {
    None,
    Softmax,
    Logistic,
    SoftmaxZero,
    Probit,
}

/// ONNX's names of the aggregate functions and post transforms, in code order.
pub const AGGREGATE_NAMES: [&str; 4] = ["AVERAGE", "SUM", "MIN", "MAX"];
pub const POST_TRANSFORM_NAMES: [&str; 5] =
    ["NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT"];

/// Where a branch leads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Child {
    Node(u32),
    Leaf(u32),
}

/// One branch node.
#[derive(Clone, Debug)]
pub struct TreeNode {
    pub feature: usize,
    pub mode: Mode,
    /// A NaN feature takes the true branch (otherwise it goes where its comparison sends it).
    pub missing_true: bool,
    pub threshold: f64,
    /// BRANCH_MEMBER: the node's set, a range of [`Trees::sets`].
    pub set: Range<usize>,
    pub on_true: Child,
    pub on_false: Child,
}

/// A checked ensemble, compiled once: the branch nodes, each leaf's (target, weight) entries and
/// the roots.
#[derive(Clone, Debug)]
pub struct Trees {
    pub nodes: Vec<TreeNode>,
    pub sets: Vec<f64>,
    /// Per leaf, its entries in `targets` and `weights`.
    pub leaves: Vec<Range<usize>>,
    pub targets: Vec<usize>,
    pub weights: Vec<f64>,
    /// The root node of each tree.
    pub roots: Vec<u32>,
    pub n_targets: usize,
    /// One more than the largest feature index a node reads (0 without nodes).
    pub n_features: usize,
    pub aggregate: Aggregate,
    pub post_transform: PostTransform,
    /// Added to each row after aggregation (empty: none).
    pub base_values: Vec<f64>,
}

/// An attribute lookup (absent: None).
pub type Attrs<'a> = &'a dyn Fn(&str) -> Option<&'a AttrValue>;

fn ints<'a>(get: Attrs<'a>, name: &str) -> std::result::Result<&'a [i64], String> {
    match get(name) {
        None => Ok(&[]),
        Some(AttrValue::ListInt(v)) => Ok(v),
        Some(other) => Err(format!("attribute '{name}' must be a ListInt, got {other}")),
    }
}

fn int(get: Attrs<'_>, name: &str, default: i64) -> std::result::Result<i64, String> {
    match get(name) {
        None => Ok(default),
        Some(AttrValue::Int(v)) => Ok(*v),
        Some(other) => Err(format!("attribute '{name}' must be an Int, got {other}")),
    }
}

/// A numeric tensor attribute's values as f64 (absent: empty).
fn floats(get: Attrs<'_>, name: &str) -> std::result::Result<Vec<f64>, String> {
    match get(name) {
        None => Ok(Vec::new()),
        Some(AttrValue::Tensor(t)) if t.desc.dtype.is_float() => t
            .to_f64_vec()
            .map_err(|e| format!("attribute '{name}': {e}")),
        Some(AttrValue::Tensor(t)) => Err(format!(
            "attribute '{name}' must be a floating-point tensor, got {}",
            t.desc.dtype
        )),
        Some(AttrValue::ListFloat(v)) => Ok(v.iter().map(|&f| f64::from(f)).collect()),
        Some(other) => Err(format!("attribute '{name}' must be a Tensor, got {other}")),
    }
}

fn index(v: i64, len: usize, name: &str, i: usize) -> std::result::Result<usize, String> {
    usize::try_from(v)
        .ok()
        .filter(|&u| u < len)
        .ok_or_else(|| format!("attribute '{name}'[{i}] is {v}, out of range [0, {len})"))
}

impl Trees {
    /// Checks and compiles the ensemble's attributes; the error names the attribute at fault.
    pub fn from_attrs(get: Attrs<'_>) -> std::result::Result<Trees, String> {
        let modes = ints(get, "nodes_modes")?;
        let n = modes.len();
        let same_len = |name: &str| -> std::result::Result<&[i64], String> {
            let v = ints(get, name)?;
            if v.len() != n {
                return Err(format!(
                    "attribute '{name}' has {} entries, nodes_modes has {n}",
                    v.len()
                ));
            }
            Ok(v)
        };
        let features = same_len("nodes_featureids")?;
        let true_ids = same_len("nodes_truenodeids")?;
        let false_ids = same_len("nodes_falsenodeids")?;
        let true_leafs = same_len("nodes_trueleafs")?;
        let false_leafs = same_len("nodes_falseleafs")?;
        let missing = ints(get, "nodes_missing_value_tracks_true")?;
        if !missing.is_empty() && missing.len() != n {
            return Err(format!(
                "attribute 'nodes_missing_value_tracks_true' has {} entries, nodes_modes has {n}",
                missing.len()
            ));
        }
        let splits = floats(get, "nodes_splits")?;
        if splits.len() != n {
            return Err(format!(
                "attribute 'nodes_splits' has {} entries, nodes_modes has {n}",
                splits.len()
            ));
        }
        let targets_raw = ints(get, "leaf_targetids")?;
        let weights = floats(get, "leaf_weights")?;
        if weights.len() != targets_raw.len() {
            return Err(format!(
                "attribute 'leaf_weights' has {} entries, leaf_targetids has {}",
                weights.len(),
                targets_raw.len()
            ));
        }
        let n_targets = int(get, "n_targets", 0)?;
        if n_targets < 1 || n_targets > i64::from(u32::MAX) {
            return Err(format!(
                "attribute 'n_targets' must be at least 1, got {n_targets}"
            ));
        }
        let n_targets = n_targets as usize;
        let targets = targets_raw
            .iter()
            .enumerate()
            .map(|(i, &t)| index(t, n_targets, "leaf_targetids", i))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        // The leaves: one entry each, or the ranges `leaf_ends` gives.
        let ends = ints(get, "leaf_ends")?;
        let leaves: Vec<Range<usize>> = if ends.is_empty() {
            (0..targets.len()).map(|i| i..i + 1).collect()
        } else {
            let mut start = 0usize;
            let mut v = Vec::with_capacity(ends.len());
            for (i, &e) in ends.iter().enumerate() {
                let e = usize::try_from(e)
                    .ok()
                    .filter(|&e| e >= start && e <= targets.len())
                    .ok_or_else(|| {
                        format!(
                            "attribute 'leaf_ends'[{i}] is {e}: the ends must grow from 0 to \
                             the {} leaf entries",
                            targets.len()
                        )
                    })?;
                v.push(start..e);
                start = e;
            }
            if start != targets.len() {
                return Err(format!(
                    "attribute 'leaf_ends' ends at {start}, the leaf entries are {}",
                    targets.len()
                ));
            }
            v
        };
        // Sets of the BRANCH_MEMBER nodes, in node order, each ended by a NaN.
        let members = floats(get, "membership_values")?;
        let mut set_iter = members.iter().enumerate();
        let mut nodes = Vec::with_capacity(n);
        let mut n_features = 0usize;
        let child = |leaf: i64, id: i64, what: (&str, &str), i: usize| match leaf {
            0 => index(id, n, what.0, i).map(|j| Child::Node(j as u32)),
            1 => index(id, leaves.len(), what.0, i).map(|j| Child::Leaf(j as u32)),
            _ => Err(format!(
                "attribute '{}'[{i}] must be 0 or 1, got {leaf}",
                what.1
            )),
        };
        for i in 0..n {
            let mode = Mode::from_code(modes[i]).ok_or_else(|| {
                format!(
                    "attribute 'nodes_modes'[{i}] is {}, not a mode 0 to 6",
                    modes[i]
                )
            })?;
            let feature = usize::try_from(features[i])
                .ok()
                .filter(|&f| f < u32::MAX as usize)
                .ok_or_else(|| format!("attribute 'nodes_featureids'[{i}] is {}", features[i]))?;
            n_features = n_features.max(feature + 1);
            let set = if mode == Mode::Member {
                let start = set_iter.clone().next().map_or(members.len(), |(k, _)| k);
                let end = loop {
                    match set_iter.next() {
                        Some((k, v)) if v.is_nan() => break k,
                        Some(_) => {}
                        None => {
                            return Err(format!(
                                "attribute 'membership_values' has too few NaN-ended sets for \
                                 the BRANCH_MEMBER nodes (node {i} has none)"
                            ))
                        }
                    }
                };
                start..end
            } else {
                0..0
            };
            nodes.push(TreeNode {
                feature,
                mode,
                missing_true: missing.get(i).is_some_and(|&m| m != 0),
                threshold: splits[i],
                set,
                on_true: child(
                    true_leafs[i],
                    true_ids[i],
                    ("nodes_truenodeids", "nodes_trueleafs"),
                    i,
                )?,
                on_false: child(
                    false_leafs[i],
                    false_ids[i],
                    ("nodes_falsenodeids", "nodes_falseleafs"),
                    i,
                )?,
            });
        }
        if set_iter.any(|(_, v)| v.is_nan()) {
            return Err(
                "attribute 'membership_values' has more NaN-ended sets than BRANCH_MEMBER nodes"
                    .into(),
            );
        }
        let roots = ints(get, "tree_roots")?
            .iter()
            .enumerate()
            .map(|(i, &r)| index(r, n, "tree_roots", i).map(|r| r as u32))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        if roots.is_empty() {
            return Err("attribute 'tree_roots' is empty: the ensemble has no tree".into());
        }
        check_acyclic(&nodes, &roots)?;
        let aggregate = match int(get, "aggregate_function", 1)? {
            0 => Aggregate::Average,
            1 => Aggregate::Sum,
            2 => Aggregate::Min,
            3 => Aggregate::Max,
            a => return Err(format!("attribute 'aggregate_function' is {a}, not 0 to 3")),
        };
        let post_transform = match int(get, "post_transform", 0)? {
            0 => PostTransform::None,
            1 => PostTransform::Softmax,
            2 => PostTransform::Logistic,
            3 => PostTransform::SoftmaxZero,
            4 => PostTransform::Probit,
            p => return Err(format!("attribute 'post_transform' is {p}, not 0 to 4")),
        };
        let base_values = floats(get, "base_values")?;
        Ok(Trees {
            nodes,
            sets: members,
            leaves,
            targets,
            weights,
            roots,
            n_targets,
            n_features,
            aggregate,
            post_transform,
            base_values,
        })
    }

    /// Whether a feature value takes node `k`'s true branch.
    #[inline]
    pub fn goes_true(&self, node: &TreeNode, x: f64) -> bool {
        let t = node.threshold;
        let r = match node.mode {
            Mode::Leq => x <= t,
            Mode::Lt => x < t,
            Mode::Gte => x >= t,
            Mode::Gt => x > t,
            Mode::Eq => x == t,
            Mode::Neq => x != t,
            Mode::Member => self.sets[node.set.clone()].contains(&x),
        };
        r || (node.missing_true && x.is_nan())
    }

    /// The leaf that tree `root` sends a row to (`feature(i)` reads feature `i`; every index is
    /// below [`Trees::n_features`]).
    #[inline]
    pub fn leaf(&self, root: u32, feature: impl Fn(usize) -> f64) -> usize {
        let mut at = Child::Node(root);
        loop {
            match at {
                Child::Leaf(l) => return l as usize,
                Child::Node(k) => {
                    let node = &self.nodes[k as usize];
                    at = if self.goes_true(node, feature(node.feature)) {
                        node.on_true
                    } else {
                        node.on_false
                    };
                }
            }
        }
    }
}

/// Every path from a root ends at a leaf: no branch leads back to a node on its own path.
fn check_acyclic(nodes: &[TreeNode], roots: &[u32]) -> std::result::Result<(), String> {
    // 0: unseen, 1: on the current path, 2: done.
    let mut state = vec![0u8; nodes.len()];
    let mut stack: Vec<(u32, u8)> = Vec::new();
    for &r in roots {
        if state[r as usize] == 2 {
            continue;
        }
        stack.push((r, 0));
        state[r as usize] = 1;
        while let Some(top) = stack.last_mut() {
            let (k, step) = *top;
            if step == 2 {
                state[k as usize] = 2;
                stack.pop();
                continue;
            }
            top.1 += 1;
            let node = &nodes[k as usize];
            let next = if step == 0 {
                node.on_true
            } else {
                node.on_false
            };
            if let Child::Node(j) = next {
                match state[j as usize] {
                    0 => {
                        state[j as usize] = 1;
                        stack.push((j, 0));
                    }
                    1 => {
                        return Err(format!(
                            "attributes 'nodes_truenodeids'/'nodes_falsenodeids' make a cycle: \
                             node {k} leads back to node {j}"
                        ))
                    }
                    _ => {}
                }
            }
        }
    }
    Ok(())
}

/// The ensemble of a node's attributes, the error an inference error of the node.
fn trees_of(ctx: &InferCtx) -> Result<Trees> {
    Trees::from_attrs(&|n| ctx.attrs.get(n)).map_err(|e| ctx.err(e))
}

/// x's row count: [N, F] gives N, [F] one row.
fn rows(ctx: &InferCtx, trees: &Trees) -> Result<i64> {
    let x = ctx.req(ctx.input_name(0, "x"))?;
    Ok(match x.shape.rank() {
        None => UNKNOWN_DIM,
        Some(1) => 1,
        Some(2) => {
            let f = x.shape.dims()[1];
            if f != UNKNOWN_DIM && (f as usize) < trees.n_features {
                return Err(ctx.err(format!(
                    "x has {f} features, the nodes read feature {}",
                    trees.n_features - 1
                )));
            }
            x.shape.dims()[0]
        }
        Some(r) => return Err(ctx.err(format!("x must be [N, F] or [F], got rank {r}"))),
    })
}

/// TreeEnsemble: y is [N, n_targets] of x's dtype.
fn tree_ensemble(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let trees = trees_of(ctx)?;
    if !trees.base_values.is_empty() && trees.base_values.len() != trees.n_targets {
        return Err(ctx.err(format!(
            "attribute 'base_values' has {} entries, n_targets is {}",
            trees.base_values.len(),
            trees.n_targets
        )));
    }
    let n = rows(ctx, &trees)?;
    let dt = ctx.req(ctx.input_name(0, "x"))?.dtype;
    Ok(single(dt, Shape::new(vec![n, trees.n_targets as i64])))
}

/// A classifier's labels (`classlabels`, INT64 or STRING) and whether it is binary (one class
/// id among the leaves and at most two labels: one score column becomes two).
pub fn classifier_shape(
    trees: &Trees,
    labels: Option<&AttrValue>,
) -> std::result::Result<(DataType, usize, bool), String> {
    let t = match labels {
        Some(AttrValue::Tensor(t))
            if matches!(t.desc.dtype, DataType::INT64 | DataType::STRING) =>
        {
            t
        }
        Some(AttrValue::Tensor(t)) => {
            return Err(format!(
                "attribute 'classlabels' must be INT64 or STRING, got {}",
                t.desc.dtype
            ))
        }
        _ => return Err("attribute 'classlabels' (a Tensor) is required".into()),
    };
    let c = t.desc.shape.num_elements().unwrap_or(0) as usize;
    if c == 0 {
        return Err("attribute 'classlabels' is empty".into());
    }
    if trees.n_targets != c {
        return Err(format!(
            "the class ids count {} classes (n_targets), classlabels has {c}",
            trees.n_targets
        ));
    }
    if !trees.base_values.is_empty() && trees.base_values.len() != c {
        return Err(format!(
            "attribute 'base_values' has {} entries, there are {c} classes",
            trees.base_values.len()
        ));
    }
    let first = trees.targets.first().copied();
    let binary = c <= 2 && first.is_some() && trees.targets.iter().all(|&t| Some(t) == first);
    if c == 1 {
        let one =
            t.desc.dtype == DataType::INT64 && t.to_i64_vec().ok().as_deref() == Some(&[1][..]);
        if !(binary && one) {
            return Err(
                "not supported: one class label other than the integer 1 (ONNX's reference \
                 refuses it too)"
                    .into(),
            );
        }
    }
    Ok((t.desc.dtype, c, binary))
}

/// TreeEnsembleClassifier: y (the labels) is [N] of the labels' dtype, z (the scores) [N, C]
/// float, [N, 2] when binary.
fn tree_ensemble_classifier(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let trees = trees_of(ctx)?;
    let (dt, c, binary) =
        classifier_shape(&trees, ctx.attrs.get("classlabels")).map_err(|e| ctx.err(e))?;
    let n = rows(ctx, &trees)?;
    let width = if binary { 2 } else { c as i64 };
    Ok(vec![
        TensorDesc::new(dt, Shape::new(vec![n])),
        TensorDesc::new(DataType::FLOAT, Shape::new(vec![n, width])),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Tensor;
    use std::collections::BTreeMap;

    fn attrs(extra: &[(&str, AttrValue)]) -> BTreeMap<String, AttrValue> {
        let li = |v: &[i64]| AttrValue::ListInt(v.to_vec());
        let t =
            |v: &[f64]| AttrValue::Tensor(Tensor::from_values(v, vec![v.len() as i64]).unwrap());
        let mut m: BTreeMap<String, AttrValue> = [
            ("nodes_modes", li(&[0, 0])),
            ("nodes_featureids", li(&[0, 1])),
            ("nodes_splits", t(&[1.0, 2.0])),
            ("nodes_truenodeids", li(&[1, 0])),
            ("nodes_trueleafs", li(&[0, 1])),
            ("nodes_falsenodeids", li(&[2, 1])),
            ("nodes_falseleafs", li(&[1, 1])),
            ("leaf_targetids", li(&[0, 1, 0])),
            ("leaf_weights", t(&[1.0, 2.0, 3.0])),
            ("tree_roots", li(&[0])),
            ("n_targets", AttrValue::Int(2)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        for (k, v) in extra {
            m.insert(k.to_string(), v.clone());
        }
        m
    }

    fn compile(m: &BTreeMap<String, AttrValue>) -> std::result::Result<Trees, String> {
        Trees::from_attrs(&|n| m.get(n))
    }

    #[test]
    fn compiles_and_walks() {
        let t = compile(&attrs(&[])).unwrap();
        assert_eq!(t.n_features, 2);
        // x0 <= 1 -> node 1: x1 <= 2 -> leaf 0, else leaf 1; x0 > 1 -> leaf 2.
        assert_eq!(t.leaf(0, |i| [0.5, 1.0][i]), 0);
        assert_eq!(t.leaf(0, |i| [0.5, 3.0][i]), 1);
        assert_eq!(t.leaf(0, |i| [1.5, 0.0][i]), 2);
        // NaN: false unless tracked.
        assert_eq!(t.leaf(0, |i| [f64::NAN, 0.0][i]), 2);
        let m = attrs(&[(
            "nodes_missing_value_tracks_true",
            AttrValue::ListInt(vec![1, 0]),
        )]);
        assert_eq!(compile(&m).unwrap().leaf(0, |i| [f64::NAN, 0.0][i]), 0);
    }

    #[test]
    fn membership_sets_in_node_order() {
        let sets = Tensor::from_values(&[1.0f32, 3.0, f32::NAN], vec![3]).unwrap();
        let m = attrs(&[
            ("nodes_modes", AttrValue::ListInt(vec![6, 0])),
            ("membership_values", AttrValue::Tensor(sets)),
        ]);
        let t = compile(&m).unwrap();
        assert_eq!(t.leaf(0, |i| [3.0, 0.0][i]), 0);
        assert_eq!(t.leaf(0, |i| [2.0, 0.0][i]), 2);
        let e = compile(&attrs(&[("nodes_modes", AttrValue::ListInt(vec![6, 6]))])).unwrap_err();
        assert!(e.contains("membership_values"), "{e}");
    }

    #[test]
    fn malformed_attributes_name_the_attribute() {
        let cases: &[(&str, AttrValue, &str)] = &[
            (
                "nodes_truenodeids",
                AttrValue::ListInt(vec![5, 0]),
                "nodes_truenodeids",
            ),
            (
                "nodes_featureids",
                AttrValue::ListInt(vec![0]),
                "nodes_featureids",
            ),
            ("nodes_modes", AttrValue::ListInt(vec![0, 9]), "nodes_modes"),
            (
                "leaf_targetids",
                AttrValue::ListInt(vec![0, 2, 0]),
                "leaf_targetids",
            ),
            (
                "nodes_trueleafs",
                AttrValue::ListInt(vec![0, 3]),
                "nodes_trueleafs",
            ),
            ("tree_roots", AttrValue::ListInt(vec![2]), "tree_roots"),
            ("n_targets", AttrValue::Int(0), "n_targets"),
            (
                "aggregate_function",
                AttrValue::Int(7),
                "aggregate_function",
            ),
            ("leaf_ends", AttrValue::ListInt(vec![2, 1]), "leaf_ends"),
            // Node 1's true branch back to node 0: a cycle.
            ("nodes_trueleafs", AttrValue::ListInt(vec![0, 0]), "cycle"),
        ];
        for (name, v, want) in cases {
            let e = compile(&attrs(&[(name, v.clone())])).unwrap_err();
            assert!(e.contains(want), "{name}: {e}");
        }
    }

    #[test]
    fn leaf_ends_group_entries() {
        let m = attrs(&[("leaf_ends", AttrValue::ListInt(vec![1, 1, 3]))]);
        let t = compile(&m).unwrap();
        assert_eq!(t.leaves, vec![0..1, 1..1, 1..3]);
    }
}
