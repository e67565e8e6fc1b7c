"""ai.onnx.ml tree ensembles: TreeEnsemble (opset 5) and the older TreeEnsembleRegressor and
TreeEnsembleClassifier (opsets 1 and 3, as skl2onnx/onnxmltools write them) against onnx's
ReferenceEvaluator on hand-built models: every node mode, missing values, every aggregate
function and post transform, base values, classifiers with int64 and string labels, the binary
case, several targets, float and double inputs; random ensembles (hypothesis); malformed trees
refused at import with the attribute named.

Where onnx's reference implements less than the operator's definition, the expected values are
the reference's with the missing step done here by onnx's own helpers: the reference's
TreeEnsemble ignores post_transform and its TreeEnsembleRegressor implements none, so those
transforms are applied to its NONE output with onnx.reference's _common_classifier functions
(onnxruntime applies them). The older ops' regressor output is float (ONNX's type constraint;
the reference returns x's dtype)."""

import numpy as np
import pytest

pytest.importorskip("onnx")

import ge  # noqa: E402
import ge.onnx  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402
from onnx.reference.ops.aionnxml import _common_classifier as cc  # noqa: E402

from onnx_harness import assert_outputs, graph_model, reference, run_ge, run_graph  # noqa: E402

F, D, H = TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16
NP = {F: np.float32, D: np.float64, H: np.float16}
MODES = ["BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ", "BRANCH_MEMBER"]
AGGREGATES = ["AVERAGE", "SUM", "MIN", "MAX"]
POSTS = ["NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT"]
POST_FN = {"NONE": lambda v: v, "SOFTMAX": cc.softmax, "LOGISTIC": cc.logistic,
           "SOFTMAX_ZERO": cc.softmax_zero, "PROBIT": cc.probit}


def ml_model(op, attrs, x_type=F, features=2, outputs=("Y",), ml_opset=None):
    """A one-node ai.onnx.ml model: X [N, features] of ``x_type`` (None: unknown rank)."""
    ml_opset = ml_opset or (5 if op == "TreeEnsemble" else 3)
    node = helper.make_node(op, ["X"], list(outputs), domain="ai.onnx.ml", **attrs)
    shape = None if features is None else ["N", features]
    outs = [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outputs]
    return graph_model([node], [helper.make_tensor_value_info("X", x_type, shape)], outs,
                       opsets=[("", 21), ("ai.onnx.ml", ml_opset)])


def run_both(m, x):
    """ge's outputs in graph and eager mode (they must agree exactly)."""
    a, b = run_ge(m, [x], "on"), run_ge(m, [x], "off")
    for p, q in zip(a, b):
        if p.dtype.kind == "f":
            np.testing.assert_array_equal(p, q)
        else:
            assert list(p.ravel()) == list(q.ravel())
    return a


def check(m, x, expected=None, rtol=1e-5, atol=1e-5):
    """ge against ``expected`` (default: the reference's; a model: the reference's of that model,
    for forms the reference lacks), dtypes included for floats."""
    if expected is None or hasattr(expected, "graph"):
        expected = reference(m if expected is None else expected, {"X": x})
    want = expected
    got = run_both(m, x)
    for g, w in zip(got, want):
        w = np.asarray(w)
        if w.dtype.kind in "OUS":
            assert g.dtype == object and [str(s) for s in g] == [str(s) for s in w], (g, w)
        else:
            assert_outputs([g], [w], rtol, atol, equal_nan=True)
    return got


# ---------------------------------------------------------------------------------------------
# TreeEnsemble (opset 5)


def v5(modes, features, splits, true_ids, true_leafs, false_ids, false_leafs, targets, weights, roots,
       n_targets, dtype=F, members=None, missing=None, **kw):
    """TreeEnsemble's attributes (splits, weights and members as tensors of ``dtype``)."""
    t = lambda name, v, dt=dtype: helper.make_tensor(name, dt, (len(v),), np.asarray(v, NP[dt]))  # noqa: E731
    attrs = dict(
        nodes_modes=helper.make_tensor("nodes_modes", TensorProto.UINT8, (len(modes),),
                                       np.asarray(modes, np.uint8)),
        nodes_featureids=features, nodes_splits=t("nodes_splits", splits),
        nodes_truenodeids=true_ids, nodes_trueleafs=true_leafs,
        nodes_falsenodeids=false_ids, nodes_falseleafs=false_leafs,
        leaf_targetids=targets, leaf_weights=t("leaf_weights", weights), tree_roots=roots, n_targets=n_targets)
    if members is not None:
        attrs["membership_values"] = t("membership_values", members)
    if missing is not None:
        attrs["nodes_missing_value_tracks_true"] = missing
    attrs.update(kw)
    return attrs


def test_onnx_node_tests_single_tree_and_set_membership():
    # The two node tests of onnx's test generator.
    single = v5([0, 0, 0], [0, 0, 0], [3.14, 1.2, 4.2], [1, 0, 1], [0, 1, 1], [2, 2, 3], [0, 1, 1],
                [0, 1, 0, 1], [5.23, 12.12, -12.23, 7.21], [0], 2, dtype=D, aggregate_function=1, post_transform=0)
    x = np.array([1.2, 3.4, -0.12, 1.66, 4.14, 1.77], np.float64).reshape(3, 2)
    got = check(ml_model("TreeEnsemble", single, D), x, [np.array([[5.23, 0], [5.23, 0], [0, 12.12]])])
    assert got[0].dtype == np.float64
    member = v5([0, 6, 6], [0, 0, 0], [11, 232344.0, np.nan], [1, 0, 1], [0, 1, 1], [2, 2, 3], [1, 0, 1],
                [0, 1, 2, 3], [1, 10, 1000, 100], [0], 4, members=[1.2, 3.7, 8, 9, np.nan, 12, 7, np.nan],
                aggregate_function=1)
    x = np.array([1.2, 3.4, -0.12, np.nan, 12, 7], np.float32).reshape(-1, 1)
    check(ml_model("TreeEnsemble", member, F, features=1), x)


def stump(mode, split, members=None, missing=None, dtype=F):
    """One branch on feature 0: true -> leaf 0 (target 0, 1.0), false -> leaf 1 (target 1, 2.0)."""
    return v5([mode], [0], [split], [0], [1], [1], [1], [0, 1], [1.0, 2.0], [0], 2, dtype=dtype,
              members=members, missing=None if missing is None else [missing])


GRID = np.array([-1.0, 0.5, 1.0, 1.5, 2.5, 3.0, np.nan], np.float32).reshape(-1, 1)


@pytest.mark.parametrize("mode", range(7))
@pytest.mark.parametrize("missing", [None, 0, 1])
def test_each_node_mode_and_missing_values(mode, missing):
    members = [1.0, 3.0, np.nan] if mode == 6 else None
    attrs = stump(mode, 1.0 if mode != 6 else np.nan, members, missing)
    m = ml_model("TreeEnsemble", attrs, F, features=1)
    got = check(m, GRID)
    # NaN goes true only where tracked (or where NaN != 1.0 is true: BRANCH_NEQ).
    nan_true = missing == 1 or mode == 5
    assert got[0][-1].tolist() == ([1.0, 0.0] if nan_true else [0.0, 2.0])


@pytest.mark.parametrize("dtype", [F, D])
@pytest.mark.parametrize("aggregate", range(4))
def test_each_aggregate_function(aggregate, dtype):
    # Three stumps on features 0, 1, 0 with three targets (target 2 reached by no leaf: 0, or
    # the dtype's max for MIN and min for MAX, as onnx's reference).
    attrs = v5([0, 1, 2], [0, 1, 0], [0.5, 1.0, 2.0], [0, 2, 4], [1, 1, 1], [1, 3, 5], [1, 1, 1],
               [0, 1, 0, 0, 1, 1], [1.0, -2.0, 4.0, 0.25, -3.0, 8.0], [0, 1, 2], 3, dtype=dtype,
               aggregate_function=aggregate)
    x = np.array([[0.0, 0.0], [1.0, 2.0], [3.0, 1.0], [2.0, 0.5]], NP[dtype])
    got = check(ml_model("TreeEnsemble", attrs, dtype), x)
    assert got[0].dtype == NP[dtype]


@pytest.mark.parametrize("post", range(5))
def test_tree_ensemble_post_transforms(post):
    attrs = v5([0, 0], [0, 1], [0.5, 1.0], [0, 2], [1, 1], [1, 3], [1, 1], [0, 1, 1, 0], [0.2, 0.1, 0.3, 0.4],
               [0, 1], 2, post_transform=post)
    x = np.array([[0.0, 0.0], [1.0, 2.0], [3.0, 1.0]], np.float32)
    m = ml_model("TreeEnsemble", attrs)
    none = ml_model("TreeEnsemble", dict(attrs, post_transform=0))
    want = POST_FN[POSTS[post]](reference(none, {"X": x})[0].copy())
    check(m, x, [want])


def test_tree_ensemble_float16():
    m = ml_model("TreeEnsemble", stump(2, 1.0, dtype=H), H, features=1)
    got = check(m, GRID.astype(np.float16), rtol=1e-3, atol=1e-3)
    assert got[0].dtype == np.float16


def test_tree_ensemble_unknown_rank_and_one_dim_rows():
    attrs = stump(0, 1.0)
    m = ml_model("TreeEnsemble", attrs, F, features=None)
    check(m, np.array([[0.5], [2.0]], np.float32))
    # A 1-D x is one row (as the older ops' reference reshapes it).
    check(m, np.array([0.5], np.float32), [np.array([[1.0, 0.0]], np.float32)])


# ---------------------------------------------------------------------------------------------
# TreeEnsembleRegressor and TreeEnsembleClassifier (opsets 1 and 3)


def v3_nodes(modes, features, values, true_ids, false_ids, tree_ids=None, node_ids=None, missing=None,
             as_tensor=False):
    """The older ops' node attributes (node ids 0.. within one tree unless given)."""
    n = len(modes)
    attrs = dict(nodes_modes=modes, nodes_featureids=features, nodes_truenodeids=true_ids,
                 nodes_falsenodeids=false_ids, nodes_treeids=tree_ids or [0] * n,
                 nodes_nodeids=node_ids or list(range(n)))
    if as_tensor:
        attrs["nodes_values_as_tensor"] = helper.make_tensor("v", D, (n,), np.asarray(values, np.float64))
    else:
        attrs["nodes_values"] = values
    # The reference needs the attribute wherever a NaN is fed.
    attrs["nodes_missing_value_tracks_true"] = [0] * n if missing is None else missing
    return attrs


# Two trees: tree 0 splits feature 0 at 1.0 (leaves 1, 2), tree 1 splits feature 1 at 0.0 then
# feature 0 at 2.5 (leaves 1, 3, 4).
TWO_TREES = v3_nodes(
    ["BRANCH_LEQ", "LEAF", "LEAF", "BRANCH_GT", "LEAF", "BRANCH_LT", "LEAF", "LEAF"],
    [0, 0, 0, 1, 0, 0, 0, 0], [1.0, 0, 0, 0.0, 0, 2.5, 0, 0],
    [1, 0, 0, 1, 0, 3, 0, 0], [2, 0, 0, 2, 0, 4, 0, 0],
    tree_ids=[0, 0, 0, 1, 1, 1, 1, 1], node_ids=[0, 1, 2, 0, 1, 2, 3, 4])
X2 = np.array([[0.5, 1.0], [1.5, -1.0], [3.0, -2.0], [1.0, 0.0], [np.nan, 0.5]], np.float32)


def targets(prefix, entries, as_tensor=False):
    """(tree, node, id, weight) entries as the ``prefix`` (target or class) attributes."""
    tr, nd, ids, w = (list(c) for c in zip(*entries))
    attrs = {f"{prefix}_treeids": tr, f"{prefix}_nodeids": nd, f"{prefix}_ids": ids}
    if as_tensor:
        attrs[f"{prefix}_weights_as_tensor"] = helper.make_tensor("w", D, (len(w),), np.asarray(w, np.float64))
    else:
        attrs[f"{prefix}_weights"] = w
    return attrs


# Several targets, one leaf adding to two of them.
REG_ENTRIES = [(0, 1, 0, 1.0), (0, 2, 1, 2.0), (0, 2, 0, 0.5), (1, 1, 0, -1.0), (1, 3, 1, 4.0), (1, 4, 0, 8.0)]


@pytest.mark.parametrize("aggregate", AGGREGATES)
@pytest.mark.parametrize("as_tensor", [False, True])
def test_regressor_aggregates_targets_and_base_values(aggregate, as_tensor):
    attrs = dict(TWO_TREES, **targets("target", REG_ENTRIES, as_tensor), n_targets=2,
                 aggregate_function=aggregate)
    if as_tensor:
        attrs["base_values_as_tensor"] = helper.make_tensor("b", D, (2,), np.array([0.5, -0.25]))
    else:
        attrs["base_values"] = [0.5, -0.25]
    # The reference reads no *_as_tensor attribute: the list form's results are the same.
    listed = dict(TWO_TREES, **targets("target", REG_ENTRIES), n_targets=2, aggregate_function=aggregate,
                  base_values=[0.5, -0.25])
    got = check(ml_model("TreeEnsembleRegressor", attrs), X2, ml_model("TreeEnsembleRegressor", listed))
    assert got[0].dtype == np.float32


@pytest.mark.parametrize("post", POSTS[1:])
def test_regressor_post_transforms(post):
    # Scores in (0, 1), where PROBIT is defined.
    attrs = dict(TWO_TREES, **targets("target", [(t, n, i, w / 20) for t, n, i, w in REG_ENTRIES]),
                 n_targets=2, base_values=[0.5, 0.25])
    want = POST_FN[post](reference(ml_model("TreeEnsembleRegressor", attrs), {"X": X2})[0].copy())
    check(ml_model("TreeEnsembleRegressor", dict(attrs, post_transform=post)), X2, [want.astype(np.float32)])


@pytest.mark.parametrize("x_type", [D, TensorProto.INT64])
def test_regressor_double_and_integer_inputs_give_float(x_type):
    attrs = dict(TWO_TREES, **targets("target", REG_ENTRIES), n_targets=2)
    x = np.array([[0, 1], [2, -1], [3, -2], [1, 0]], {D: np.float64, TensorProto.INT64: np.int64}[x_type])
    m = ml_model("TreeEnsembleRegressor", attrs, x_type)
    # The reference computes in x's dtype (integers truncate the weights): float x is the truth.
    want = reference(ml_model("TreeEnsembleRegressor", attrs, F), {"X": x.astype(np.float32)})
    got = check(m, x, want)
    assert got[0].dtype == np.float32


def test_regressor_missing_values_and_opset_1():
    nodes = dict(TWO_TREES, nodes_missing_value_tracks_true=[1, 0, 0, 0, 0, 1, 0, 0])
    attrs = dict(nodes, **targets("target", REG_ENTRIES), n_targets=2)
    x = np.array([[np.nan, np.nan], [np.nan, -1.0], [3.0, np.nan]], np.float32)
    check(ml_model("TreeEnsembleRegressor", attrs), x)
    check(ml_model("TreeEnsembleRegressor", attrs, ml_opset=1), x)


def test_regressor_single_leaf_tree():
    # A tree that is one leaf (skl2onnx writes one for a constant model).
    nodes = v3_nodes(["LEAF", "BRANCH_LEQ", "LEAF", "LEAF"], [0, 0, 0, 0], [0, 1.0, 0, 0], [0, 1, 0, 0],
                     [0, 2, 0, 0], tree_ids=[0, 1, 1, 1], node_ids=[0, 0, 1, 2])
    attrs = dict(nodes, **targets("target", [(0, 0, 0, 3.0), (1, 1, 0, 1.0), (1, 2, 0, 2.0)]), n_targets=1)
    check(ml_model("TreeEnsembleRegressor", attrs, features=1), np.array([[0.0], [2.0]], np.float32))


CLS_ENTRIES = [(0, 1, 0, 0.8), (0, 1, 1, 0.2), (0, 2, 2, 0.7), (0, 2, 0, 0.3), (1, 1, 1, 0.6),
               (1, 3, 2, 0.9), (1, 4, 0, 0.5), (1, 4, 1, 0.5)]


@pytest.mark.parametrize("post", POSTS)
@pytest.mark.parametrize("labels", ["int", "str"])
def test_classifier_labels_and_post_transforms(post, labels):
    lab = {"classlabels_int64s": [3, 7, 9]} if labels == "int" else {"classlabels_strings": ["a", "bb", "c"]}
    attrs = dict(TWO_TREES, **targets("class", CLS_ENTRIES), **lab, post_transform=post,
                 base_values=[0.1, 0.0, -0.1])
    if post == "PROBIT":  # scores in (0, 1), where PROBIT is defined
        attrs = dict(attrs, **targets("class", [(t, n, i, w / 4) for t, n, i, w in CLS_ENTRIES]),
                     base_values=[0.1, 0.05, 0.1])
    got = check(ml_model("TreeEnsembleClassifier", attrs, outputs=("label", "probabilities")), X2)
    assert got[0].dtype == (np.int64 if labels == "int" else object)
    assert got[1].dtype == np.float32


@pytest.mark.parametrize("post", POSTS)
@pytest.mark.parametrize("labels", [[1], [0, 1], ["no", "yes"]])
def test_binary_classifier(post, labels):
    # One class id among the leaves (GradientBoostingClassifier's form): scores [N, 2].
    entries = [(0, 1, 0, 0.25), (0, 2, 0, 0.75), (1, 1, 0, -0.125), (1, 3, 0, 0.0625), (1, 4, 0, 0.125)]
    key = "classlabels_strings" if isinstance(labels[0], str) else "classlabels_int64s"
    attrs = dict(TWO_TREES, **targets("class", entries), **{key: labels}, post_transform=post)
    got = check(ml_model("TreeEnsembleClassifier", attrs, outputs=("label", "probabilities")), X2)
    assert got[1].shape == (len(X2), 2)


@pytest.mark.parametrize("x_type", [D, TensorProto.INT64, TensorProto.INT32])
def test_classifier_double_and_integer_inputs(x_type):
    dt = {D: np.float64, TensorProto.INT64: np.int64, TensorProto.INT32: np.int32}[x_type]
    attrs = dict(TWO_TREES, **targets("class", CLS_ENTRIES, as_tensor=True), classlabels_int64s=[0, 1, 2])
    listed = dict(TWO_TREES, **targets("class", CLS_ENTRIES), classlabels_int64s=[0, 1, 2])
    outs = ("label", "probabilities")
    check(ml_model("TreeEnsembleClassifier", attrs, x_type, outputs=outs),
          np.array([[0, 1], [2, -1], [3, -2], [1, 0]], dt), ml_model("TreeEnsembleClassifier", listed, x_type, outputs=outs))


# ---------------------------------------------------------------------------------------------
# Random ensembles against the reference


@st.composite
def ensembles(draw):
    """Random trees in preorder: a list per tree of ("branch", mode, feature, split, members,
    missing, true, false) and ("leaf", target, weight) with indices into the tree's list."""
    n_features = draw(st.integers(1, 3))
    n_targets = draw(st.integers(1, 3))
    values = st.sampled_from([-1.0, 0.5, 1.0, 2.0, 3.5])
    trees = []
    for _ in range(draw(st.integers(1, 4))):
        nodes = []

        def build(depth):
            k = len(nodes)
            if depth > 0 and (depth == 3 or draw(st.booleans())):
                mode = draw(st.integers(0, 6))
                members = sorted(set(draw(st.lists(values, min_size=1, max_size=3)))) if mode == 6 else None
                nodes.append(["branch", mode, draw(st.integers(0, n_features - 1)), draw(values), members,
                              draw(st.integers(0, 1))])
                t = build(depth - 1)
                f = build(depth - 1)
                nodes[k] += [t, f]
            else:
                nodes.append(["leaf", draw(st.integers(0, n_targets - 1)),
                              draw(st.sampled_from([-2.0, -0.5, 0.25, 1.0, 3.0]))])
            return k

        build(3)
        trees.append(nodes)
    rows = draw(st.lists(st.lists(st.sampled_from([-1.0, 0.5, 1.0, 2.0, 3.5, 5.0, np.nan]),
                                  min_size=n_features, max_size=n_features), min_size=1, max_size=6))
    return trees, n_features, n_targets, np.array(rows, np.float32)


def as_v5(trees, n_targets, aggregate):
    """The ensemble as TreeEnsemble attributes (branches and leaves numbered in preorder)."""
    b = dict(modes=[], features=[], splits=[], true_ids=[], true_leafs=[], false_ids=[], false_leafs=[],
             missing=[])
    members, leaf_t, leaf_w, roots = [], [], [], []
    for nodes in trees:
        num, counts = {}, [0, 0]
        for k, n in enumerate(nodes):
            is_leaf = n[0] == "leaf"
            num[k] = (is_leaf, len(leaf_t if is_leaf else b["modes"]) + counts[is_leaf])
            counts[is_leaf] += 1
        base_b, base_l = len(b["modes"]), len(leaf_t)
        roots.append(base_b)
        for n in nodes:
            if n[0] == "leaf":
                leaf_t.append(n[1])
                leaf_w.append(n[2])
                continue
            _, mode, feat, split, mem, miss, t, f = n
            b["modes"].append(mode)
            b["features"].append(feat)
            b["splits"].append(split)
            b["missing"].append(miss)
            if mem is not None:
                members += mem + [np.nan]
            for side, child in (("true", t), ("false", f)):
                leaf, j = num[child]
                b[f"{side}_leafs"].append(int(leaf))
                b[f"{side}_ids"].append(j)
        assert (len(b["modes"]), len(leaf_t)) == (base_b + counts[0], base_l + counts[1])
    return v5(b["modes"], b["features"], b["splits"], b["true_ids"], b["true_leafs"], b["false_ids"],
              b["false_leafs"], leaf_t, leaf_w, roots, n_targets, members=members or None, missing=b["missing"],
              aggregate_function=aggregate)


@settings(max_examples=40, deadline=None)
@given(ensembles(), st.integers(0, 3))
def test_random_tree_ensembles_match_the_reference(ens, aggregate):
    trees, n_features, n_targets, x = ens
    m = ml_model("TreeEnsemble", as_v5(trees, n_targets, aggregate), F, n_features)
    check(m, x)


def as_v3_regressor(trees, n_targets, aggregate):
    """The ensemble as TreeEnsembleRegressor attributes (BRANCH_MEMBER and NaN-with-NEQ aside)."""
    modes, feats, vals, tids, fids, trees_, ids, miss, entries = [], [], [], [], [], [], [], [], []
    for t, nodes in enumerate(trees):
        for k, n in enumerate(nodes):
            trees_.append(t)
            ids.append(k)
            if n[0] == "leaf":
                modes.append("LEAF")
                feats.append(0), vals.append(0.0), tids.append(0), fids.append(0), miss.append(0)
                entries.append((t, k, n[1], n[2]))
            else:
                modes.append(MODES[n[1]])
                feats.append(n[2]), vals.append(n[3]), tids.append(n[6]), fids.append(n[7]), miss.append(n[5])
    return dict(v3_nodes(modes, feats, vals, tids, fids, trees_, ids, miss), **targets("target", entries),
                n_targets=n_targets, aggregate_function=AGGREGATES[aggregate])


@settings(max_examples=40, deadline=None)
@given(ensembles(), st.integers(0, 3))
def test_random_regressors_match_the_reference(ens, aggregate):
    trees, n_features, n_targets, x = ens
    # The older ops have no sets; the reference sends a NaN by nodes_missing_value_tracks_true
    # alone, onnxruntime and ge compare it (NaN != v is true): keep NaN away from BRANCH_NEQ.
    trees = [[n if n[0] == "leaf" or n[1] < 5 else n[:1] + [n[1] - 5] + n[2:] for n in t] for t in trees]
    m = ml_model("TreeEnsembleRegressor", as_v3_regressor(trees, n_targets, aggregate), F, n_features)
    check(m, x, [reference(m, {"X": x})[0].astype(np.float32)])


# ---------------------------------------------------------------------------------------------
# Export: ai.onnx.ml opset 3 (TreeEnsembleRegressor, TreeEnsembleClassifier)


def export_round_trip(m, x):
    """The model loaded, exported, and the export run by the reference and by ge again: both
    give ge's outputs of the original."""
    import onnx

    got = run_ge(m, [x])
    exported = onnx.load_from_string(ge.onnx.to_bytes(ge.onnx.load(m.SerializeToString())))
    assert ("ai.onnx.ml", 3) in [(o.domain, o.version) for o in exported.opset_import]
    names = [i.name for i in exported.graph.input]
    want = [np.asarray(r) for r in ReferenceEvaluator(exported).run(None, {names[0]: x})]
    again = run_graph(ge.onnx.load(exported.SerializeToString()), [x])
    for g, w, a in zip(got, want, again):
        if g.dtype.kind == "f":
            np.testing.assert_allclose(w.astype(np.float64), g.astype(np.float64), rtol=1e-5, atol=1e-6)
            # The export computes in float (the older regressor's y is float).
            np.testing.assert_allclose(a.astype(np.float64), g.astype(np.float64), rtol=1e-6, atol=1e-7)
        else:
            assert [str(v) for v in w] == [str(v) for v in g] == [str(v) for v in a]
    return exported


@pytest.mark.parametrize("dtype", [F, D])
def test_export_of_tree_ensembles(dtype):
    attrs = v5([0, 1, 2], [0, 1, 0], [0.5, 1.0, 2.0], [0, 2, 4], [1, 1, 1], [1, 3, 5], [1, 1, 1],
               [0, 1, 0, 0, 1, 1], [1.0, -2.0, 4.0, 0.25, -3.0, 8.0], [0, 1, 2], 3, dtype=dtype,
               aggregate_function=0)  # the reference's regressor has no post transform
    x = np.array([[0.0, 0.0], [1.0, 2.0], [3.0, 1.0], [2.0, 0.5]], NP[dtype])
    export_round_trip(ml_model("TreeEnsemble", attrs, dtype), x)
    # The older regressor (several targets a leaf, base values) as well.
    attrs = dict(TWO_TREES, **targets("target", REG_ENTRIES), n_targets=2, base_values=[0.5, -0.25])
    export_round_trip(ml_model("TreeEnsembleRegressor", attrs), X2)


@pytest.mark.parametrize("labels", [{"classlabels_strings": ["a", "bb", "c"]}, {"classlabels_int64s": [3, 7, 9]}])
def test_export_of_classifiers(labels):
    attrs = dict(TWO_TREES, **targets("class", CLS_ENTRIES), **labels, post_transform="SOFTMAX",
                 base_values=[0.1, 0.0, -0.1])
    export_round_trip(ml_model("TreeEnsembleClassifier", attrs, outputs=("label", "probabilities")), X2)


def test_export_refuses_set_membership():
    m = ml_model("TreeEnsemble", stump(6, np.nan, [1.0, 3.0, np.nan]), F, features=1)
    with pytest.raises(ge.GeError, match="BRANCH_MEMBER"):
        ge.onnx.to_bytes(ge.onnx.load(m.SerializeToString()))


# ---------------------------------------------------------------------------------------------
# Malformed trees: refused at import, the attribute named


BAD = [
    (dict(nodes_truenodeids=[7]), "nodes_truenodeids"),
    (dict(nodes_featureids=[0, 0]), "nodes_featureids"),
    (dict(nodes_trueleafs=[2]), "nodes_trueleafs"),
    (dict(leaf_targetids=[0, 5]), "leaf_targetids"),
    (dict(tree_roots=[3]), "tree_roots"),
    (dict(nodes_modes=helper.make_tensor("nodes_modes", TensorProto.UINT8, (1,), np.array([9], np.uint8))),
     "nodes_modes"),
    (dict(nodes_modes=helper.make_tensor("nodes_modes", TensorProto.UINT8, (1,), np.array([6], np.uint8))),
     "membership_values"),
    (dict(aggregate_function=9), "aggregate_function"),
    (dict(post_transform=7), "post_transform"),
    # The node's true branch back to itself: a cycle.
    (dict(nodes_trueleafs=[0], nodes_truenodeids=[0]), "cycle"),
]


@pytest.mark.parametrize("change,name", BAD)
def test_malformed_tree_ensembles_are_refused_at_import(change, name):
    m = ml_model("TreeEnsemble", dict(stump(0, 1.0), **change), F, features=1)
    with pytest.raises(ge.GeError, match=name):
        ge.onnx.load(m.SerializeToString())


BAD_V3 = [
    (dict(nodes_truenodeids=[1, 0, 0, 9, 0, 3, 0, 0]), "nodes_truenodeids"),
    (dict(nodes_modes=["BRANCH_LEQ", "LEAF", "LEAF", "BRANCH_XX", "LEAF", "BRANCH_LT", "LEAF", "LEAF"]),
     "nodes_modes"),
    (dict(nodes_featureids=[0]), "nodes_featureids"),
    (dict(nodes_nodeids=[0, 1, 2, 0, 1, 2, 3, 3]), "nodes_nodeids"),
    (dict(target_nodeids=[1, 2, 2, 1, 3, 2]), "target_nodeids"),
    (dict(target_weights=[1.0]), "target_weights"),
    (dict(aggregate_function="MEDIAN"), "aggregate_function"),
    # Tree 1's node 2 leads back to its root.
    (dict(nodes_falsenodeids=[2, 0, 0, 2, 0, 0, 0, 0]), "cycle"),
]


@pytest.mark.parametrize("change,name", BAD_V3)
def test_malformed_regressors_are_refused_at_import(change, name):
    attrs = dict(TWO_TREES, **targets("target", REG_ENTRIES), n_targets=2)
    attrs.update(change)
    with pytest.raises(ge.GeError, match=name):
        ge.onnx.load(ml_model("TreeEnsembleRegressor", attrs).SerializeToString())


def test_classifier_class_ids_beyond_the_labels_are_refused():
    attrs = dict(TWO_TREES, **targets("class", CLS_ENTRIES), classlabels_int64s=[0, 1])
    with pytest.raises(ge.GeError, match="class_ids"):
        ge.onnx.load(ml_model("TreeEnsembleClassifier", attrs, outputs=("l", "p")).SerializeToString())


def test_too_few_features_at_run_time():
    m = ml_model("TreeEnsemble", v5([0], [2], [1.0], [0], [1], [1], [1], [0, 0], [1.0, 2.0], [0], 1), F,
                 features=None)
    with pytest.raises(ge.GeError, match="x has 1 features"):
        run_ge(m, [np.zeros((2, 1), np.float32)])
