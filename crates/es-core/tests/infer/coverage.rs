//! Library-wide checks: every operator has a prototype and a rule, round-trips through JSON,
//! and never fails on inputs of unknown rank.

use super::*;
use std::collections::BTreeSet;

/// The operators of the first library, besides the element-wise ones of `elementwise::BINARY`
/// and `elementwise::UNARY`.
const ALL_OPS: &[&str] = &[
    "Data",
    "RefData",
    "Const",
    "Variable",
    "Cast",
    "MatMul",
    "MatMulV2",
    "BatchMatMul",
    "BatchMatMulV2",
    "GEMM",
    "FusedMulAdd",
    "Reshape",
    "Transpose",
    "Unsqueeze",
    "Squeeze",
    "ConcatV2",
    "ConcatD",
    "Pack",
    "Split",
    "SplitD",
    "SplitV",
    "IdentityN",
    "ReduceSum",
    "ReduceSumD",
    "Fill",
    "Shape",
    "BroadcastTo",
    "Tile",
    "TopKV2",
    "ScatterElements",
    "GatherElements",
    "MaskedFill",
    "LogicalNot",
    "Conv2D",
    "BatchNorm",
    "If",
    "Case",
    "While",
];

#[test]
fn every_operator_has_a_rule_and_a_prototype() {
    let reg = global_registry();
    let element_wise = super::elementwise::BINARY
        .iter()
        .chain(super::elementwise::UNARY);
    for op in ALL_OPS.iter().chain(element_wise) {
        assert!(builtin_rule(op).is_some(), "{op} has no built-in rule");
        assert!(reg.get(op).is_some(), "{op} is not in the operator library");
    }
    assert!(builtin_rule("NoSuchOp").is_none());
}

const NN_OPS: &[&str] = &[
    "SoftmaxV2",
    "LogSoftmaxV2",
    "LayerNorm",
    "InstanceNorm",
    "GroupNorm",
    "LRN",
    "MaxPool",
    "MaxPoolV3",
    "AvgPool",
    "AvgPoolV2",
    "GlobalAveragePool",
    "Pooling",
    "PadV3",
    "Pad",
    "PadD",
    "Slice",
    "SliceD",
    "StridedSlice",
    "StridedSliceD",
    "StridedSliceV2",
    "GatherV2",
    "GatherV2D",
    "GatherNd",
    "ScatterNd",
    "ScatterNdUpdate",
    "Expand",
    "ExpandD",
    "ResizeNearestNeighborV2",
    "ResizeBilinearV2",
    "Resize",
    "Conv2DTranspose",
    "DepthwiseConv2D",
    "Conv3D",
    "BiasAdd",
    "Flatten",
    "FlattenV2",
    "SpaceToDepth",
    "DepthToSpace",
    "ReverseV2",
    "Unpack",
    "Einsum",
    "Tril",
    "Triu",
    "Trilu",
    "NonZero",
    "Where",
    "Size",
    "Rank",
    "EmbeddingBag",
];

#[test]
fn every_tested_operator_is_built_in_and_round_trips() {
    assert_built_in_and_round_trip(NN_OPS, true);
}

#[test]
fn nn_operators_have_rules() {
    // An operator without a rule gets an unknown-rank output; each of these has a known rank
    // for a known-rank input.
    let mut t = T::new();
    assert_eq!(
        t.dims_in("Rank", &[("x", F(&[2, 3]))], &[]),
        Vec::<i64>::new()
    );
    assert_eq!(t.dims_in("Where", &[("x", F(&[2, 3]))], &[]), vec![U, 2]);
}

/// Required attributes that make a call valid whatever the input shapes.
fn required_attrs(op: &str) -> Vec<(&'static str, AttrValue)> {
    match op {
        "GroupNorm" => vec![("num_groups", i(2))],
        "MaxPool" | "AvgPool" => vec![
            ("ksize", li(&[1, 2, 2, 1])),
            ("strides", li(&[1, 2, 2, 1])),
            ("padding", s("SAME")),
        ],
        "MaxPoolV3" | "AvgPoolV2" => {
            vec![("ksize", li(&[1, 1, 2, 2])), ("strides", li(&[1, 1, 2, 2]))]
        }
        "PadD" => vec![(
            "paddings",
            AttrValue::ListListInt(vec![vec![1, 1], vec![0, 0]]),
        )],
        "SliceD" => vec![("offsets", li(&[0, 0])), ("size", li(&[1, 1]))],
        "StridedSliceD" => vec![
            ("begin", li(&[0])),
            ("end", li(&[1])),
            ("strides", li(&[1])),
        ],
        "GatherV2D" => vec![("axis", i(0))],
        "ExpandD" => vec![("shape", li(&[2, 3]))],
        "Conv2DTranspose" | "DepthwiseConv2D" => {
            vec![("strides", li(&[1, 1, 1, 1])), ("pads", li(&[0, 0, 0, 0]))]
        }
        "Conv3D" => vec![
            ("strides", li(&[1, 1, 1, 1, 1])),
            ("pads", li(&[0, 0, 0, 0, 0, 0])),
        ],
        "SpaceToDepth" | "DepthToSpace" => vec![("block_size", i(2))],
        "Unpack" => vec![("num", i(2))],
        "Einsum" => vec![("equation", s("ij,jk->ik"))],
        _ => vec![],
    }
}

#[test]
fn unknown_rank_inputs_never_fail() {
    let reg = registry();
    for op in NN_OPS {
        let p = reg.get(op).unwrap().clone();
        let mut t = T::new();
        let mut ins: Vec<(String, Vec<OutPort>)> = Vec::new();
        for d in &p.inputs {
            if d.kind == IoKind::Optional {
                continue;
            }
            let allowed = p.allowed(&d.ty).unwrap();
            let dt = allowed
                .iter()
                .copied()
                .find(|t| *t == FLOAT || *t == INT32)
                .unwrap_or(allowed[0]);
            let n = if d.kind == IoKind::Dynamic { 2 } else { 1 };
            let ports = (0..n).map(|_| t.input(dt, &[-2])).collect();
            ins.push((d.name.clone(), ports));
        }
        let ins_ref: Vec<(&str, &[OutPort])> = ins
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_slice()))
            .collect();
        let attrs = required_attrs(op);
        let id = t
            .call(op, &ins_ref, &attrs)
            .unwrap_or_else(|e| panic!("{op}: unknown-rank inputs gave an error: {e}"));
        for (k, o) in t.outs(id).iter().enumerate() {
            assert!(
                o.1 == vec![-2] || o.1.iter().all(|&d| d >= -1),
                "{op} output {k}: {:?}",
                o.1
            );
        }
    }
}

/// The math operators (every name of the tests' tables).
fn math_names() -> Vec<String> {
    super::elementwise::MATH_UNARY
        .iter()
        .chain(super::elementwise::MATH_BINARY)
        .chain(super::reduce::REDUCE_AXES_INPUT)
        .chain(super::reduce::REDUCE_AXES_ATTR)
        .chain(OTHERS)
        .map(|s| s.to_string())
        .collect()
}

/// Operators with their own test functions below.
const OTHERS: &[&str] = &[
    "PRelu",
    "ArgMaxV2",
    "ArgMin",
    "ArgMaxD",
    "Cumsum",
    "CumsumD",
    "Cumprod",
    "ClipByValue",
    "Select",
    "SelectV2",
    "Range",
    "OneHot",
    "OneHotD",
    "Addcmul",
];

#[test]
fn every_math_operator_is_built_in_and_round_trips() {
    let names = math_names();
    assert_eq!(names.len(), 81);
    let unique: BTreeSet<&str> = names.iter().map(String::as_str).collect();
    assert_eq!(unique.len(), names.len(), "an operator is listed twice");
    assert_built_in_and_round_trip(&names, false);
}

#[test]
fn prototypes_match_ge_names() {
    let t = T::new();
    let names = |ty: &str| -> (Vec<String>, Vec<String>, Vec<String>) {
        let p = t.proto(ty);
        (
            p.inputs.iter().map(|d| d.name.clone()).collect(),
            p.outputs.iter().map(|d| d.name.clone()).collect(),
            p.attrs.iter().map(|a| a.name.clone()).collect(),
        )
    };
    let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(
        names("SelectV2"),
        (v(&["condition", "then", "else"]), v(&["result"]), v(&[]))
    );
    assert_eq!(
        names("HardSigmoid"),
        (v(&["input_x"]), v(&["output_y"]), v(&["alpha", "beta"]))
    );
    assert_eq!(
        names("ArgMaxV2"),
        (v(&["x", "dimension"]), v(&["y"]), v(&["dtype"]))
    );
    assert_eq!(
        names("OneHot"),
        (
            v(&["x", "depth", "on_value", "off_value"]),
            v(&["y"]),
            v(&["axis"])
        )
    );
    assert_eq!(
        names("ReduceMeanD"),
        (
            v(&["x"]),
            v(&["y"]),
            v(&["axes", "keep_dims", "noop_with_empty_axes"])
        )
    );
    assert_eq!(
        names("Addcmul"),
        (v(&["input_data", "x1", "x2", "value"]), v(&["y"]), v(&[]))
    );
    let argmax = t.proto("ArgMaxV2");
    assert_eq!(
        argmax.attr("dtype").unwrap().default,
        Some(AttrValue::Type(INT64))
    );
    assert!(t.proto("Equal").commutative && !t.proto("Pow").commutative);
}

const MORE_OPS: &[&str] = &[
    "GridSampler2D",
    "GridSampler3D",
    "NonMaxSuppressionV6",
    "Bitcast",
    "LeftShift",
    "RightShift",
    "ROIAlign",
    "UniqueWithCountsAndSorting",
    "DeformableConv2D",
    "MatrixDeterminant",
];

#[test]
fn every_added_operator_is_built_in_and_round_trips() {
    assert_built_in_and_round_trip(MORE_OPS, true);
}
