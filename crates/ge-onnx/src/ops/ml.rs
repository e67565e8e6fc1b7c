//! ai.onnx.ml tree ensembles: TreeEnsemble (opset 5), and TreeEnsembleRegressor and
//! TreeEnsembleClassifier (opsets 1 and 3, with the `*_as_tensor` attributes) as scikit-learn,
//! LightGBM and XGBoost converters write them. All become the ge-rs operators TreeEnsemble and
//! TreeEnsembleClassifier (GE has none; see the operator library), whose attributes are
//! TreeEnsemble's flat node arrays: the older ops' (tree id, node id) pairs are resolved here,
//! their LEAF nodes become leaves and their target/class entries the leaves' (target, weight)
//! lists (`leaf_ends`). Inference checks the result (ids in range, no cycles, matching
//! lengths), so a malformed ensemble is refused at import, naming the attribute.

use super::string::attr_strings;
use super::util::*;
use crate::error::{Error, Result};
use crate::translate::NodeCtx;
use es_core::infer::tree_ensemble::{Mode, AGGREGATE_NAMES, POST_TRANSFORM_NAMES};
use es_core::{AttrValue, DataType, OutPort, Tensor};
use std::collections::{BTreeMap, HashMap};

/// The family's translators.
pub(super) const TABLE: &[(&str, Translator)] = &[
    ("ai.onnx.ml::TreeEnsemble", tree_ensemble),
    ("ai.onnx.ml::TreeEnsembleRegressor", tree_ensemble_regressor),
    (
        "ai.onnx.ml::TreeEnsembleClassifier",
        tree_ensemble_classifier,
    ),
];

/// A 1-D double tensor.
fn doubles(v: &[f64]) -> Result<AttrValue> {
    Ok(AttrValue::Tensor(Tensor::from_values(
        v,
        vec![v.len() as i64],
    )?))
}

/// TreeEnsemble (opset 5): its attributes as they are (the tensors keep their dtypes).
fn tree_ensemble(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&[
        "aggregate_function",
        "leaf_targetids",
        "leaf_weights",
        "membership_values",
        "n_targets",
        "nodes_falseleafs",
        "nodes_falsenodeids",
        "nodes_featureids",
        "nodes_hitrates",
        "nodes_missing_value_tracks_true",
        "nodes_modes",
        "nodes_splits",
        "nodes_trueleafs",
        "nodes_truenodeids",
        "post_transform",
        "tree_roots",
    ])?;
    let mut attrs: Vec<(&str, AttrValue)> = Vec::new();
    for name in [
        "leaf_targetids",
        "nodes_falseleafs",
        "nodes_falsenodeids",
        "nodes_featureids",
        "nodes_missing_value_tracks_true",
        "nodes_trueleafs",
        "nodes_truenodeids",
        "tree_roots",
    ] {
        if let Some(v) = ctx.attr_ints(name)? {
            attrs.push((name, li(&v)));
        }
    }
    for name in ["leaf_weights", "membership_values", "nodes_splits"] {
        if let Some(t) = ctx.attr_tensor(name)? {
            attrs.push((name, AttrValue::Tensor(t)));
        }
    }
    let modes = match ctx.attr_tensor("nodes_modes")? {
        Some(t) => t.to_i64_vec()?,
        None => ctx.attr_ints("nodes_modes")?.unwrap_or_default(),
    };
    attrs.push(("nodes_modes", li(&modes)));
    let n_targets = match ctx.attr("n_targets")? {
        Some(_) => ctx.attr_i("n_targets", 1)?,
        None => ctx
            .attr_ints("leaf_targetids")?
            .unwrap_or_default()
            .iter()
            .max()
            .map_or(1, |m| m + 1),
    };
    attrs.push(("n_targets", AttrValue::Int(n_targets)));
    attrs.push((
        "aggregate_function",
        AttrValue::Int(ctx.attr_i("aggregate_function", 1)?),
    ));
    attrs.push((
        "post_transform",
        AttrValue::Int(ctx.attr_i("post_transform", 0)?),
    ));
    let x = ctx.input(0)?;
    one(ctx.op1("TreeEnsemble", &[x], attrs)?)
}

/// A FLOATS attribute or its `_as_tensor` form, as f64 (None when neither is given).
fn floats_or_tensor(ctx: &NodeCtx<'_>, name: &str) -> Result<Option<Vec<f64>>> {
    let tensor = ctx.attr_tensor(&format!("{name}_as_tensor"))?;
    match (ctx.attr_floats(name)?, tensor) {
        (Some(_), Some(_)) => Err(Error::tr(format!(
            "both '{name}' and '{name}_as_tensor' are given"
        ))),
        (Some(v), None) => Ok(Some(v.iter().map(|&f| f64::from(f)).collect())),
        (None, Some(t)) => Ok(Some(t.to_f64_vec()?)),
        (None, None) => Ok(None),
    }
}

/// An INTS attribute that must have `n` entries (absent: empty, and an error when `n` > 0).
fn ints_n(ctx: &NodeCtx<'_>, name: &str, n: usize) -> Result<Vec<i64>> {
    let v = ctx.attr_ints(name)?.unwrap_or_default();
    if v.len() != n {
        return Err(Error::tr(format!(
            "attribute '{name}' has {} entries, nodes_modes has {n}",
            v.len()
        )));
    }
    Ok(v)
}

/// A name of `names` as its index (ONNX's codes), the error naming the attribute.
fn code_of(ctx: &NodeCtx<'_>, name: &str, default: &str, names: &[&str]) -> Result<AttrValue> {
    let s = ctx.attr_s(name, default)?;
    let k = names.iter().position(|n| *n == s).ok_or_else(|| {
        Error::tr(format!(
            "attribute '{name}' must be one of {names:?}, got {s:?}"
        ))
    })?;
    Ok(AttrValue::Int(k as i64))
}

/// The attributes the older ops share, for the ge-rs operators: the nodes resolved from
/// (tree id, node id) pairs, and the `prefix` entries (`target_*` or `class_*`) as the leaves'
/// lists. Returns the attributes and the largest target id plus one.
fn old_form(ctx: &NodeCtx<'_>, prefix: &str) -> Result<(Vec<(&'static str, AttrValue)>, i64)> {
    let modes = attr_strings(ctx, "nodes_modes")?
        .ok_or_else(|| Error::tr("attribute 'nodes_modes' is required"))?;
    let n = modes.len();
    let tree_ids = ints_n(ctx, "nodes_treeids", n)?;
    let node_ids = ints_n(ctx, "nodes_nodeids", n)?;
    let features = ints_n(ctx, "nodes_featureids", n)?;
    let true_ids = ints_n(ctx, "nodes_truenodeids", n)?;
    let false_ids = ints_n(ctx, "nodes_falsenodeids", n)?;
    let values = floats_or_tensor(ctx, "nodes_values")?.unwrap_or_else(|| vec![0.0; n]);
    if values.len() != n {
        return Err(Error::tr(format!(
            "attribute 'nodes_values' has {} entries, nodes_modes has {n}",
            values.len()
        )));
    }
    let missing = ctx
        .attr_ints("nodes_missing_value_tracks_true")?
        .unwrap_or_default();
    if !missing.is_empty() && missing.len() != n {
        return Err(Error::tr(format!(
            "attribute 'nodes_missing_value_tracks_true' has {} entries, nodes_modes has {n}",
            missing.len()
        )));
    }
    // Each (tree, node) pair's index; LEAF nodes numbered as leaves, the others as branches.
    let mut at: HashMap<(i64, i64), usize> = HashMap::with_capacity(n);
    let mut number = vec![0usize; n];
    let (mut n_branches, mut n_leaves) = (0, 0);
    let mut branch_modes = Vec::new();
    for i in 0..n {
        if at.insert((tree_ids[i], node_ids[i]), i).is_some() {
            return Err(Error::tr(format!(
                "attribute 'nodes_nodeids'[{i}]: tree {} has node {} twice",
                tree_ids[i], node_ids[i]
            )));
        }
        if modes[i] == "LEAF" {
            number[i] = n_leaves;
            n_leaves += 1;
        } else {
            let m = Mode::from_name(&modes[i]).ok_or_else(|| {
                Error::tr(format!(
                    "attribute 'nodes_modes'[{i}] is {:?}, not LEAF or a BRANCH_ mode",
                    modes[i]
                ))
            })?;
            if m == Mode::Member {
                return Err(Error::unsupported(
                    "TreeEnsemble BRANCH_MEMBER in the older ops (no set attribute)",
                ));
            }
            number[i] = n_branches;
            n_branches += 1;
            branch_modes.push(m as i64);
        }
    }
    // Where a branch leads: (is a leaf, its number).
    let child = |i: usize, id: i64, what: &str| -> Result<(i64, i64)> {
        let j = *at.get(&(tree_ids[i], id)).ok_or_else(|| {
            Error::tr(format!(
                "attribute '{what}'[{i}] is {id}: tree {} has no node {id}",
                tree_ids[i]
            ))
        })?;
        Ok((i64::from(modes[j] == "LEAF"), number[j] as i64))
    };
    let mut b = Branches::default();
    for i in (0..n).filter(|&i| modes[i] != "LEAF") {
        let (tl, t) = child(i, true_ids[i], "nodes_truenodeids")?;
        let (fl, f) = child(i, false_ids[i], "nodes_falsenodeids")?;
        b.push(
            features[i],
            values[i],
            [tl, t, fl, f],
            missing.get(i).copied().unwrap_or(0),
        );
    }
    // Each tree's root: its first node (a LEAF root gets a branch whose both sides are it).
    let mut roots: BTreeMap<i64, usize> = BTreeMap::new();
    for (i, &t) in tree_ids.iter().enumerate() {
        roots.entry(t).or_insert(i);
    }
    let mut tree_roots = Vec::with_capacity(roots.len());
    for &r in roots.values() {
        if modes[r] == "LEAF" {
            tree_roots.push(b.features.len() as i64);
            branch_modes.push(Mode::Leq as i64);
            let leaf = number[r] as i64;
            b.push(0, 0.0, [1, leaf, 1, leaf], 0);
        } else {
            tree_roots.push(number[r] as i64);
        }
    }
    // The target (or class) entries, grouped by leaf in their order.
    let ids = ctx.attr_ints(&format!("{prefix}_ids"))?.unwrap_or_default();
    let e_nodes = ctx
        .attr_ints(&format!("{prefix}_nodeids"))?
        .unwrap_or_default();
    let e_trees = ctx
        .attr_ints(&format!("{prefix}_treeids"))?
        .unwrap_or_default();
    let weights = floats_or_tensor(ctx, &format!("{prefix}_weights"))?.unwrap_or_default();
    let m = ids.len();
    if e_nodes.len() != m || e_trees.len() != m || weights.len() != m {
        return Err(Error::tr(format!(
            "attributes '{prefix}_ids', '{prefix}_nodeids', '{prefix}_treeids' and \
             '{prefix}_weights' must have as many entries ({m}, {}, {}, {})",
            e_nodes.len(),
            e_trees.len(),
            weights.len()
        )));
    }
    let mut per_leaf: Vec<Vec<usize>> = vec![Vec::new(); n_leaves];
    for k in 0..m {
        let j = at
            .get(&(e_trees[k], e_nodes[k]))
            .copied()
            .filter(|&j| modes[j] == "LEAF")
            .ok_or_else(|| {
                Error::tr(format!(
                    "attribute '{prefix}_nodeids'[{k}] is {}: tree {} has no LEAF node {}",
                    e_nodes[k], e_trees[k], e_nodes[k]
                ))
            })?;
        per_leaf[number[j]].push(k);
    }
    let (mut targets, mut leaf_weights, mut ends) = (Vec::new(), Vec::new(), Vec::new());
    for entries in &per_leaf {
        for &k in entries {
            targets.push(ids[k]);
            leaf_weights.push(weights[k]);
        }
        ends.push(targets.len() as i64);
    }
    let max_id = ids.iter().max().map_or(0, |m| m + 1);
    let mut attrs = vec![
        ("nodes_modes", li(&branch_modes)),
        ("nodes_featureids", li(&b.features)),
        ("nodes_splits", doubles(&b.splits)?),
        ("nodes_trueleafs", li(&b.true_leafs)),
        ("nodes_truenodeids", li(&b.true_ids)),
        ("nodes_falseleafs", li(&b.false_leafs)),
        ("nodes_falsenodeids", li(&b.false_ids)),
        ("nodes_missing_value_tracks_true", li(&b.missing)),
        ("leaf_targetids", li(&targets)),
        ("leaf_weights", doubles(&leaf_weights)?),
        ("leaf_ends", li(&ends)),
        ("tree_roots", li(&tree_roots)),
        (
            "post_transform",
            code_of(ctx, "post_transform", "NONE", &POST_TRANSFORM_NAMES)?,
        ),
    ];
    if let Some(base) = floats_or_tensor(ctx, "base_values")? {
        if !base.is_empty() {
            attrs.push(("base_values", doubles(&base)?));
        }
    }
    Ok((attrs, max_id))
}

/// The branch nodes being built, one entry each.
#[derive(Default)]
struct Branches {
    features: Vec<i64>,
    splits: Vec<f64>,
    true_leafs: Vec<i64>,
    true_ids: Vec<i64>,
    false_leafs: Vec<i64>,
    false_ids: Vec<i64>,
    missing: Vec<i64>,
}

impl Branches {
    fn push(&mut self, feature: i64, split: f64, [tl, t, fl, f]: [i64; 4], missing: i64) {
        self.features.push(feature);
        self.splits.push(split);
        self.true_leafs.push(tl);
        self.true_ids.push(t);
        self.false_leafs.push(fl);
        self.false_ids.push(f);
        self.missing.push(missing);
    }
}

/// The older ops' nodes attributes (both ops have them).
const OLD_NODE_ATTRS: &[&str] = &[
    "base_values",
    "base_values_as_tensor",
    "nodes_falsenodeids",
    "nodes_featureids",
    "nodes_hitrates",
    "nodes_hitrates_as_tensor",
    "nodes_missing_value_tracks_true",
    "nodes_modes",
    "nodes_nodeids",
    "nodes_treeids",
    "nodes_truenodeids",
    "nodes_values",
    "nodes_values_as_tensor",
    "post_transform",
];

/// x for the ge-rs operators: float and double as they are, integers as double.
fn float_input(ctx: &mut NodeCtx<'_>) -> Result<OutPort> {
    let x = ctx.input(0)?;
    match ctx.input_desc(0)?.dtype {
        DataType::FLOAT | DataType::DOUBLE => Ok(x),
        DataType::INT64 | DataType::INT32 => ctx.cast(x, DataType::DOUBLE),
        dt => Err(Error::tr(format!(
            "{}: x must be float, double, int64 or int32, got {dt}",
            ctx.op_type()
        ))),
    }
}

/// TreeEnsembleRegressor: y [N, n_targets] float.
fn tree_ensemble_regressor(ctx: &mut NodeCtx<'_>) -> Out {
    let mut known = OLD_NODE_ATTRS.to_vec();
    known.extend([
        "aggregate_function",
        "n_targets",
        "target_ids",
        "target_nodeids",
        "target_treeids",
        "target_weights",
        "target_weights_as_tensor",
    ]);
    ctx.known_attrs(&known)?;
    let (mut attrs, max_id) = old_form(ctx, "target")?;
    let n_targets = match ctx.attr("n_targets")? {
        Some(_) => ctx.attr_i("n_targets", 1)?,
        None => max_id.max(1),
    };
    attrs.push(("n_targets", AttrValue::Int(n_targets)));
    attrs.push((
        "aggregate_function",
        code_of(ctx, "aggregate_function", "SUM", &AGGREGATE_NAMES)?,
    ));
    let x = float_input(ctx)?;
    let y = ctx.op1("TreeEnsemble", &[x], attrs)?;
    one(ctx.cast(y, DataType::FLOAT)?)
}

/// TreeEnsembleClassifier: the labels [N] (int64 or string) and the scores [N, C] float.
fn tree_ensemble_classifier(ctx: &mut NodeCtx<'_>) -> Out {
    let mut known = OLD_NODE_ATTRS.to_vec();
    known.extend([
        "class_ids",
        "class_nodeids",
        "class_treeids",
        "class_weights",
        "class_weights_as_tensor",
        "classlabels_int64s",
        "classlabels_strings",
    ]);
    ctx.known_attrs(&known)?;
    let labels = match (
        ctx.attr_ints("classlabels_int64s")?,
        attr_strings(ctx, "classlabels_strings")?,
    ) {
        (Some(v), None) => Tensor::from_values(&v, vec![v.len() as i64])?,
        (None, Some(v)) => Tensor::from_strings(&v, vec![v.len() as i64])?,
        _ => {
            return Err(Error::tr(
                "TreeEnsembleClassifier: exactly one of 'classlabels_int64s' and \
                 'classlabels_strings' must be given",
            ))
        }
    };
    let c = labels.desc.shape.num_elements().unwrap_or(0);
    let (mut attrs, max_id) = old_form(ctx, "class")?;
    if max_id > c.max(1) {
        return Err(Error::tr(format!(
            "attribute 'class_ids' has class {}, there are {c} class labels",
            max_id - 1
        )));
    }
    attrs.push(("n_targets", AttrValue::Int(c)));
    attrs.push(("aggregate_function", AttrValue::Int(1)));
    attrs.push(("classlabels", AttrValue::Tensor(labels)));
    let x = float_input(ctx)?;
    let outs = ctx.op("TreeEnsembleClassifier", vec![vec![Some(x)]], attrs)?;
    Ok(outs.into_iter().map(Some).collect())
}
