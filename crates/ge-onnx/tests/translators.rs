//! Translators of single-node models, checked on the graph `load_bytes` builds: the shapes
//! inferred at import and the ops emitted (the values are pytest's, against onnxruntime).

use es_core::Graph;
use ge_onnx::proto::{
    attribute_proto::AttributeType, tensor_shape_proto::dimension, tensor_shape_proto::Dimension,
    type_proto, AttributeProto, ElemType, GraphProto, ModelProto, NodeProto, OperatorSetIdProto,
    TensorProto, TensorShapeProto, TypeProto, ValueInfoProto,
};
use ge_onnx::Options;
use prost::Message;

/// A float input `name` of `dims` (-1: a symbolic dim).
fn input(name: &str, dims: &[i64]) -> ValueInfoProto {
    typed_input(name, dims, ElemType::Float)
}

fn typed_input(name: &str, dims: &[i64], elem: ElemType) -> ValueInfoProto {
    let dim = dims
        .iter()
        .map(|&d| Dimension {
            value: Some(if d >= 0 {
                dimension::Value::DimValue(d)
            } else {
                dimension::Value::DimParam(format!("n{}", -d))
            }),
            ..Default::default()
        })
        .collect();
    ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(TypeProto {
            value: Some(type_proto::Value::TensorType(type_proto::Tensor {
                elem_type: Some(elem as i32),
                shape: Some(TensorShapeProto { dim }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A 1-D initializer `name` of `n` elements of `elem` (its values to be filled in).
fn vector(name: &str, n: usize, elem: ElemType) -> TensorProto {
    TensorProto {
        name: Some(name.into()),
        dims: vec![n as i64],
        data_type: Some(elem as i32),
        ..Default::default()
    }
}

fn int64s(name: &str, v: &[i64]) -> TensorProto {
    TensorProto {
        int64_data: v.to_vec(),
        ..vector(name, v.len(), ElemType::Int64)
    }
}

fn floats(name: &str, v: &[f32]) -> TensorProto {
    TensorProto {
        float_data: v.to_vec(),
        ..vector(name, v.len(), ElemType::Float)
    }
}

fn attr(name: &str, ty: AttributeType) -> AttributeProto {
    AttributeProto {
        name: Some(name.into()),
        r#type: Some(ty as i32),
        ..Default::default()
    }
}

fn attr_i(name: &str, v: i64) -> AttributeProto {
    AttributeProto {
        i: Some(v),
        ..attr(name, AttributeType::Int)
    }
}

fn attr_f(name: &str, v: f32) -> AttributeProto {
    AttributeProto {
        f: Some(v),
        ..attr(name, AttributeType::Float)
    }
}

/// One node `op` over `inputs` (graph inputs `feeds`, initializers `inits`), `n_out` outputs,
/// imported at `opset`.
fn load(
    op: &str,
    feeds: Vec<ValueInfoProto>,
    inits: Vec<TensorProto>,
    inputs: &[&str],
    attrs: Vec<AttributeProto>,
    (n_out, opset): (usize, i64),
) -> ge_onnx::Result<Graph> {
    let outs: Vec<String> = (0..n_out).map(|i| format!("y{i}")).collect();
    let m = ModelProto {
        ir_version: Some(8),
        opset_import: vec![OperatorSetIdProto {
            domain: Some(String::new()),
            version: Some(opset),
        }],
        graph: Some(GraphProto {
            name: Some("g".into()),
            node: vec![NodeProto {
                op_type: Some(op.into()),
                input: inputs.iter().map(|s| s.to_string()).collect(),
                output: outs.clone(),
                attribute: attrs,
                ..Default::default()
            }],
            input: feeds,
            initializer: inits,
            output: outs
                .iter()
                .map(|o| ValueInfoProto {
                    name: Some(o.clone()),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
        ..Default::default()
    };
    ge_onnx::load_bytes(&m.encode_to_vec(), &Options::default())
}

/// The dims of graph output `i` as inferred at import.
fn out_dims(g: &Graph, i: usize) -> Vec<i64> {
    g.out_desc(g.outputs[i]).unwrap().shape.dims().to_vec()
}

fn op_types(g: &Graph) -> Vec<String> {
    g.nodes()
        .into_iter()
        .map(|n| g.node(n).unwrap().op_type.to_string())
        .collect()
}

/// A Slice of `x` by constant starts/ends/axes/steps.
fn slice(x: &[i64], [starts, ends, axes, steps]: [&[i64]; 4]) -> Graph {
    let inits = vec![
        int64s("starts", starts),
        int64s("ends", ends),
        int64s("axes", axes),
        int64s("steps", steps),
    ];
    let ins = ["x", "starts", "ends", "axes", "steps"];
    load("Slice", vec![input("x", x)], inits, &ins, vec![], (1, 18)).unwrap()
}

#[test]
fn slice_negative_step_start_below_minus_dim_is_clamped_to_0() {
    // ONNX: x=[1,2,3], starts=[-4], ends=[-5], steps=[-1] gives [1] (StridedSlice's rule: []).
    let g = slice(&[3], [&[-4], &[-5], &[0], &[-1]]);
    assert_eq!(out_dims(&g, 0), vec![1]);
    assert!(!op_types(&g).contains(&"Maximum".to_string()));
    // Far below -dim, and an end below -dim ("through element 0"), on the second axis.
    let g = slice(&[2, 4], [&[-100], &[-100], &[1], &[-2]]);
    assert_eq!(out_dims(&g, 0), vec![2, 1]);
    // A positive step is unchanged (start below -dim is 0 by both rules).
    let g = slice(&[2, 4], [&[-9], &[3], &[-1], &[1]]);
    assert_eq!(out_dims(&g, 0), vec![2, 3]);
}

#[test]
fn slice_start_below_minus_symbolic_dim_is_clamped_at_run_time() {
    let g = slice(&[-1, 4], [&[-4], &[-9], &[0], &[-1]]);
    assert!(
        op_types(&g).contains(&"Maximum".to_string()),
        "{:?}",
        op_types(&g)
    );
    // In-range (>= -1) starts need no run-time clamp.
    let g = slice(&[-1, 4], [&[-1], &[-9], &[0], &[-1]]);
    assert!(!op_types(&g).contains(&"Maximum".to_string()));
}

#[test]
fn depth_space_blocksize_1_is_identity() {
    for op in ["DepthToSpace", "SpaceToDepth"] {
        let block = |dims: &[i64], size: i64| {
            let attrs = vec![attr_i("blocksize", size)];
            load(op, vec![input("x", dims)], vec![], &["x"], attrs, (1, 21))
        };
        let g = block(&[1, 4, 2, 3], 1).unwrap();
        assert_eq!(out_dims(&g, 0), vec![1, 4, 2, 3], "{op}");
        assert!(op_types(&g).contains(&"Identity".to_string()), "{op}");
        // The rank is still checked; other sizes keep GE's operator.
        assert!(block(&[4, 2, 3], 1).is_err());
        let g = block(&[1, 4, 4, 4], 2).unwrap();
        assert!(op_types(&g).contains(&op.to_string()), "{op}");
    }
}

#[test]
fn instance_norm_of_rank_3_and_6() {
    for (dims, want) in [
        (vec![2, 3, 5], vec![2, 3, 5]),
        (vec![2, 3, 2, 1, 2, 2], vec![]),
    ] {
        let inits = vec![floats("s", &[1.0, 2.0, 3.0]), floats("b", &[0.0; 3])];
        let attrs = vec![attr_f("epsilon", 1e-5)];
        let ins = ["x", "s", "b"];
        let feeds = vec![input("x", &dims)];
        let g = load("InstanceNormalization", feeds, inits, &ins, attrs, (1, 21)).unwrap();
        let types = op_types(&g);
        assert!(types.contains(&"InstanceNorm".to_string()), "{types:?}");
        if !want.is_empty() {
            assert_eq!(out_dims(&g, 0), want);
        }
    }
}

#[test]
fn topk_with_constant_k_gives_the_axis_its_size() {
    for (dims, axis, want) in [(vec![3, 5], -1, vec![3, 2]), (vec![4, -1], 0, vec![2, -1])] {
        let inits = vec![int64s("k", &[2])];
        let attrs = vec![attr_i("axis", axis)];
        let g = load(
            "TopK",
            vec![input("x", &dims)],
            inits,
            &["x", "k"],
            attrs,
            (2, 21),
        )
        .unwrap();
        assert_eq!(out_dims(&g, 0), want);
        assert_eq!(out_dims(&g, 1), want);
    }
    // A run-time k still loads (the axis size is then unknown at import).
    let feeds = vec![input("x", &[3, 5]), typed_input("k", &[1], ElemType::Int64)];
    let g = load("TopK", feeds, vec![], &["x", "k"], vec![], (2, 21)).unwrap();
    assert_eq!(out_dims(&g, 0), vec![3, -1]);
}

#[test]
fn attention_with_symbolic_lengths() {
    // 3-D Q/K/V with symbolic batch and sequence, a symbolic past: only the hidden size is
    // static; the head split, the present length and the causal mask are run-time ops.
    let feeds = vec![
        input("q", &[-1, -2, 8]),
        input("k", &[-1, -2, 8]),
        input("v", &[-1, -2, 8]),
        input("pk", &[-1, 2, -3, 4]),
        input("pv", &[-1, 2, -3, 4]),
    ];
    let attrs = vec![
        attr_i("q_num_heads", 2),
        attr_i("kv_num_heads", 2),
        attr_i("is_causal", 1),
    ];
    let ins = ["q", "k", "v", "", "pk", "pv"];
    let g = load("Attention", feeds, vec![], &ins, attrs, (3, 23)).unwrap();
    let types = op_types(&g);
    assert!(types.contains(&"Range".to_string()), "{types:?}");
    assert_eq!(out_dims(&g, 0).len(), 3);
    assert_eq!(out_dims(&g, 1).len(), 4);
    // The hidden size must still be known.
    let feeds = vec![
        input("q", &[-1, -2, -4]),
        input("k", &[1, 2, 8]),
        input("v", &[1, 2, 8]),
    ];
    let attrs = vec![attr_i("q_num_heads", 2), attr_i("kv_num_heads", 2)];
    let e = load("Attention", feeds, vec![], &["q", "k", "v"], attrs, (1, 23)).unwrap_err();
    assert!(e.to_string().contains("hidden size of Q"), "{e}");
}

#[test]
fn attention_with_static_lengths_keeps_a_constant_causal_mask() {
    let feeds = vec![
        input("q", &[1, 3, 8]),
        input("k", &[1, 3, 8]),
        input("v", &[1, 3, 8]),
    ];
    let attrs = vec![
        attr_i("q_num_heads", 2),
        attr_i("kv_num_heads", 2),
        attr_i("is_causal", 1),
    ];
    let g = load("Attention", feeds, vec![], &["q", "k", "v"], attrs, (1, 23)).unwrap();
    assert!(!op_types(&g).contains(&"Range".to_string()));
    assert_eq!(out_dims(&g, 0), vec![1, 3, 8]);
}

fn attr_s(name: &str, v: &str) -> AttributeProto {
    AttributeProto {
        s: Some(v.as_bytes().to_vec()),
        ..attr(name, AttributeType::String)
    }
}

/// Gelu (opset 20): approximate "none" (the default) is GE's GeluV2 with approximate "none",
/// "tanh" GE's Gelu; double (neither takes it) the formulas; another value an error.
#[test]
fn gelu_imports_to_gelu_v2_and_gelu() {
    let gelu = |attrs: Vec<AttributeProto>, elem: ElemType| {
        let x = typed_input("x", &[2, 3], elem);
        load("Gelu", vec![x], vec![], &["x"], attrs, (1, 20))
    };
    for attrs in [vec![], vec![attr_s("approximate", "none")]] {
        let g = gelu(attrs, ElemType::Float).unwrap();
        let v2: Vec<_> = g
            .nodes()
            .into_iter()
            .map(|n| g.node(n).unwrap())
            .filter(|n| n.op_type == "GeluV2")
            .collect();
        assert_eq!(v2.len(), 1, "{:?}", op_types(&g));
        assert_eq!(
            v2[0].attr("approximate").and_then(|a| a.as_str()),
            Some("none")
        );
        assert!(!op_types(&g).contains(&"Erf".to_string()));
        assert_eq!(out_dims(&g, 0), vec![2, 3]);
    }
    let g = gelu(vec![attr_s("approximate", "tanh")], ElemType::Float).unwrap();
    assert!(op_types(&g).contains(&"Gelu".to_string()));
    let g = gelu(vec![], ElemType::Double).unwrap();
    assert!(
        op_types(&g).contains(&"Erf".to_string()),
        "{:?}",
        op_types(&g)
    );
    assert!(!op_types(&g).contains(&"GeluV2".to_string()));
    let e = gelu(vec![attr_s("approximate", "fast")], ElemType::Float).unwrap_err();
    assert!(e.to_string().contains("approximate"), "{e}");
}
