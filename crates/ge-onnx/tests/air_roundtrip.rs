//! GE's `.air` format: random graphs round-trip exactly; damaged files are errors.

use es_core::graph::{InputSlot, OutputSlot, SubgraphSlot};
use es_core::{
    AttrMap, AttrValue, DataType, Format, Graph, InPort, Node, OutPort, Placement, Shape, Tensor,
    TensorDesc,
};
use ge_onnx::air::{self, AttrDef, GraphDef, ModelDef, OpDef};
use proptest::prelude::*;
use prost::Message;

fn dtype() -> impl Strategy<Value = DataType> {
    prop::sample::select(DataType::VALUES.to_vec())
}

fn format() -> impl Strategy<Value = Format> {
    prop::sample::select(Format::VALUES.to_vec())
}

fn shape() -> impl Strategy<Value = Shape> {
    prop_oneof![
        Just(Shape::unknown_rank()),
        prop::collection::vec(-1i64..5, 0..4).prop_map(Shape::new),
    ]
}

fn tensor() -> impl Strategy<Value = Tensor> {
    prop_oneof![
        prop::collection::vec(any::<f32>(), 0..6).prop_map(|v| {
            let n = v.len() as i64;
            Tensor::from_values(&v, vec![n]).unwrap()
        }),
        prop::collection::vec(any::<i32>(), 0..6).prop_map(|v| {
            let n = v.len() as i64;
            Tensor::from_values(&v, vec![1, n]).unwrap()
        }),
        any::<u8>().prop_map(Tensor::scalar),
    ]
}

fn attr_value() -> impl Strategy<Value = AttrValue> {
    prop_oneof![
        any::<i64>().prop_map(AttrValue::Int),
        any::<f32>().prop_map(AttrValue::Float),
        "[a-z\\u{e9}]{0,6}".prop_map(AttrValue::String),
        any::<bool>().prop_map(AttrValue::Bool),
        dtype().prop_map(AttrValue::Type),
        prop::collection::vec(any::<i64>(), 0..4).prop_map(AttrValue::ListInt),
        prop::collection::vec(any::<f32>(), 0..4).prop_map(AttrValue::ListFloat),
        prop::collection::vec(any::<bool>(), 0..4).prop_map(AttrValue::ListBool),
        prop::collection::vec(dtype(), 0..4).prop_map(AttrValue::ListType),
        prop::collection::vec(prop::collection::vec(any::<i64>(), 0..3), 0..3)
            .prop_map(AttrValue::ListListInt),
        tensor().prop_map(AttrValue::Tensor),
        prop::collection::vec("[a-z]{0,4}", 0..3).prop_map(AttrValue::ListString),
    ]
}

fn attrs(prefix: &'static str) -> impl Strategy<Value = AttrMap> {
    prop::collection::btree_map("[a-z]{1,5}", attr_value(), 0..3).prop_map(move |m| {
        m.into_iter()
            .map(|(k, v)| (format!("{prefix}{k}"), v))
            .collect()
    })
}

fn desc() -> impl Strategy<Value = TensorDesc> {
    (
        dtype(),
        format(),
        shape(),
        format(),
        shape(),
        any::<bool>(),
        attrs("t_"),
    )
        .prop_map(|(dt, f, s, of, os, dev, a)| TensorDesc {
            dtype: dt,
            format: f,
            shape: s,
            origin_format: of,
            origin_shape: os,
            placement: if dev {
                Placement::DEVICE
            } else {
                Placement::HOST
            },
            attrs: a,
        })
}

type InSpec = (TensorDesc, u32, Option<(usize, usize)>);

/// One node's makings: op type, input/output descs and IR indexes, attrs, edge choices.
#[derive(Debug, Clone)]
struct NodeSpec {
    op: String,
    ins: Vec<InSpec>,
    outs: Vec<(TensorDesc, u32)>,
    attrs: AttrMap,
    private: AttrMap,
    controls: Vec<usize>,
}

fn node_spec() -> impl Strategy<Value = NodeSpec> {
    (
        prop::sample::select(vec!["Add", "Relu", "MyOp", "Data", "Const", "If"]),
        prop::collection::vec(
            (desc(), 0u32..3, prop::option::of((0usize..8, 0usize..3))),
            0..3,
        ),
        prop::collection::vec((desc(), 0u32..3), 0..3),
        attrs("a_"),
        attrs("_p"),
        prop::collection::vec(0usize..8, 0..2),
    )
        .prop_map(|(op, ins, outs, attrs, private, controls)| NodeSpec {
            op: op.to_string(),
            ins,
            outs,
            attrs,
            private,
            controls,
        })
}

fn build(
    name: String,
    specs: Vec<NodeSpec>,
    outs: Vec<(usize, usize)>,
    gattrs: AttrMap,
    version: String,
    parent: Option<String>,
    subs: Vec<(usize, String, u32, Graph)>,
) -> Graph {
    let mut g = Graph::new(name);
    g.attrs = gattrs;
    g.ops_version = version;
    g.parent_node = parent.map(Into::into);
    let mut ids = Vec::new();
    for (k, s) in specs.iter().enumerate() {
        let mut n = Node::new(format!("n{k}"), s.op.as_str());
        for (i, (d, ir, _)) in s.ins.iter().enumerate() {
            n.inputs
                .push(InputSlot::new(format!("x{i}"), *ir, d.clone()));
        }
        for (i, (d, ir)) in s.outs.iter().enumerate() {
            n.outputs.push(OutputSlot {
                name: format!("y{i}").into(),
                ir_index: *ir,
                desc: d.clone().into(),
                consumers: vec![],
            });
        }
        n.attrs = s.attrs.clone();
        n.private_attrs = s.private.clone();
        for (at, slot, ir, sg) in &subs {
            if *at == k {
                n.subgraphs.push(SubgraphSlot {
                    name: slot.as_str().into(),
                    ir_index: *ir,
                    graph: sg.clone(),
                });
            }
        }
        ids.push(g.add_node(n).unwrap());
    }
    // Data edges from earlier nodes only (no cycles), control edges likewise.
    for (k, s) in specs.iter().enumerate() {
        for (i, (_, _, src)) in s.ins.iter().enumerate() {
            if let Some((sn, so)) = src {
                if k == 0 {
                    continue;
                }
                let sn = sn % k;
                let nouts = specs[sn].outs.len();
                if nouts == 0 {
                    continue;
                }
                g.add_data_edge(
                    OutPort {
                        node: ids[sn],
                        index: (so % nouts) as u32,
                    },
                    InPort {
                        node: ids[k],
                        index: i as u32,
                    },
                )
                .unwrap();
            }
        }
        for c in &s.controls {
            if k > 0 {
                g.add_control_edge(ids[c % k], ids[k]).unwrap();
            }
        }
    }
    let mut oi = 0;
    for (n, o) in outs {
        let n = n % specs.len().max(1);
        if let Some(s) = specs.get(n) {
            if !s.outs.is_empty() {
                g.set_output(
                    oi,
                    OutPort {
                        node: ids[n],
                        index: (o % s.outs.len()) as u32,
                    },
                )
                .unwrap();
                oi += 1;
            }
        }
    }
    g
}

fn leaf_graph() -> impl Strategy<Value = Graph> {
    (
        prop::sample::select(vec!["body", "then", "g"]),
        prop::collection::vec(node_spec(), 1..4),
        prop::collection::vec((0usize..4, 0usize..3), 0..3),
        attrs("g_"),
        prop::option::of(Just("n0".to_string())),
    )
        .prop_map(|(name, specs, outs, ga, parent)| {
            build(name.into(), specs, outs, ga, "8.5.0".into(), parent, vec![])
        })
}

fn graph() -> impl Strategy<Value = Graph> {
    (
        prop::collection::vec(node_spec(), 1..8),
        prop::collection::vec((0usize..8, 0usize..3), 0..4),
        attrs("g_"),
        prop::sample::select(vec!["", "9.0.0", "custom"]),
        prop::collection::vec(
            (
                0usize..8,
                prop::sample::select(vec!["then_branch", "body", "branches0"]),
                0u32..2,
                leaf_graph(),
            ),
            0..3,
        ),
    )
        .prop_map(|(specs, outs, ga, v, subs)| {
            let n = specs.len();
            let subs = subs
                .into_iter()
                .map(|(k, s, ir, g)| (k % n, s.to_string(), ir, g))
                .collect();
            build("body".into(), specs, outs, ga, v.into(), None, subs)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn random_graphs_round_trip(g in graph()) {
        let bytes = air::to_bytes(&g).unwrap();
        let back = air::from_bytes(&bytes).unwrap();
        prop_assert_eq!(&back, &g);
        prop_assert_eq!(es_core::dump::txt(&back), es_core::dump::txt(&g));
        // Writing the loaded graph again gives the same bytes (deterministic).
        prop_assert_eq!(air::to_bytes(&back).unwrap(), bytes);
    }

    #[test]
    fn random_bytes_are_errors_not_crashes(b in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = air::from_bytes(&b);
    }

    #[test]
    fn truncated_and_flipped_files_do_not_crash(g in graph(), cut in any::<prop::sample::Index>(), flip in any::<prop::sample::Index>()) {
        let bytes = air::to_bytes(&g).unwrap();
        if !bytes.is_empty() {
            let _ = air::from_bytes(&bytes[..cut.index(bytes.len())]);
            let mut b = bytes.clone();
            let i = flip.index(b.len());
            b[i] ^= 0x5A;
            let _ = air::from_bytes(&b);
        }
    }
}

fn op(name: &str, ty: &str) -> OpDef {
    OpDef {
        name: name.into(),
        r#type: ty.into(),
        ..Default::default()
    }
}

fn model(graphs: Vec<GraphDef>) -> Vec<u8> {
    ModelDef {
        graph: graphs,
        ..Default::default()
    }
    .encode_to_vec()
}

fn err(b: &[u8]) -> String {
    air::from_bytes(b).unwrap_err().to_string()
}

#[test]
fn malformed_models_are_errors() {
    assert!(err(&model(vec![])).contains("no graph"));
    assert!(err(b"\xff\xff\xff").contains("not a valid .air file"));
    // A subgraph naming itself (a cycle), and the main graph as a subgraph.
    let mut o = op("a", "If");
    o.subgraph_name = vec!["sub".into()];
    let mut s = op("b", "If");
    s.subgraph_name = vec!["sub".into()];
    let b = model(vec![
        GraphDef {
            name: "main".into(),
            op: vec![o.clone()],
            ..Default::default()
        },
        GraphDef {
            name: "sub".into(),
            op: vec![s],
            ..Default::default()
        },
    ]);
    assert!(err(&b).contains("used more than once"), "{}", err(&b));
    let mut m = op("a", "If");
    m.subgraph_name = vec!["main".into()];
    let b = model(vec![GraphDef {
        name: "main".into(),
        op: vec![m],
        ..Default::default()
    }]);
    assert!(err(&b).contains("used more than once"));
    // Missing subgraph, unreferenced graph, duplicate graph names.
    let b = model(vec![GraphDef {
        name: "main".into(),
        op: vec![o],
        ..Default::default()
    }]);
    assert!(err(&b).contains("not in the file"));
    let g = |n: &str| GraphDef {
        name: n.into(),
        ..Default::default()
    };
    assert!(err(&model(vec![g("main"), g("x")])).contains("not the subgraph of any node"));
    assert!(err(&model(vec![g("main"), g("main")])).contains("two graphs named"));
    // Bad edges: unknown node, bad index, more inputs than descriptions, bad output.
    let mut c = op("c", "Relu");
    c.input = vec!["nope:0".into()];
    c.input_desc = vec![Default::default()];
    let one = |o: OpDef| {
        model(vec![GraphDef {
            name: "main".into(),
            op: vec![op("a", "Data"), o],
            ..Default::default()
        }])
    };
    assert!(err(&one(c.clone())).contains("names no node"));
    c.input = vec!["a:x".into()];
    assert!(err(&one(c.clone())).contains("no valid output index"));
    c.input = vec!["a".into()];
    assert!(err(&one(c.clone())).contains("node:index"));
    c.input = vec!["a:0".into()];
    let e = err(&one(c.clone()));
    assert!(e.contains("has 0 outputs"), "{e}");
    c.input_desc.clear();
    assert!(err(&one(c.clone())).contains("more data inputs"));
    // Duplicate node names, self control edge.
    let b = model(vec![GraphDef {
        name: "main".into(),
        op: vec![op("a", "Data"), op("a", "Data")],
        ..Default::default()
    }]);
    assert!(err(&b).contains("already has a node named"));
    let mut s = op("s", "Relu");
    s.input = vec!["^s".into()];
    assert!(err(&one(s)).contains("itself"));
    // Bad descriptions and attributes.
    let mut d = op("d", "Relu");
    d.output_desc = vec![air::TensorDescriptor {
        dtype: 99,
        ..Default::default()
    }];
    assert!(err(&one(d.clone())).contains("not a GE proto data type"));
    d.output_desc = vec![air::TensorDescriptor {
        layout: "WEIRD".into(),
        dtype: 1,
        ..Default::default()
    }];
    assert!(err(&one(d.clone())).contains("unknown format"));
    d.output_desc = vec![air::TensorDescriptor {
        dtype: 1,
        shape: Some(air::ShapeDef { dim: vec![-5] }),
        ..Default::default()
    }];
    assert!(err(&one(d.clone())).contains("invalid shape"));
    let mut e = op("e", "Relu");
    e.attr.insert(
        "f".into(),
        AttrDef {
            value: Some(air::attr_def::Value::Bt(vec![1])),
        },
    );
    assert!(err(&one(e.clone())).contains("no type for"));
    e.attr.insert(
        "f".into(),
        AttrDef {
            value: Some(air::attr_def::Value::T(air::TensorDef {
                desc: Some(air::TensorDescriptor {
                    dtype: 1,
                    shape: Some(air::ShapeDef { dim: vec![2] }),
                    ..Default::default()
                }),
                data: vec![0; 3],
            })),
        },
    );
    assert!(err(&one(e)).contains("needs 8 bytes"));
}

#[test]
fn deep_nesting_is_an_error() {
    let depth = es_core::serialize::MAX_SUBGRAPH_DEPTH + 2;
    let mut graphs = Vec::new();
    for k in 0..depth {
        let mut o = op(&format!("n{k}"), "If");
        if k + 1 < depth {
            o.subgraph_name = vec![format!("g{}", k + 1)];
        }
        graphs.push(GraphDef {
            name: format!("g{k}"),
            op: vec![o],
            ..Default::default()
        });
    }
    let e = err(&model(graphs));
    assert!(e.contains("levels deep"), "{e}");
}

#[test]
fn ge_style_file_reads() {
    // What GE itself writes: control inputs as "src:-1", names from _input_name_key, IR
    // attribute names from _ir_attr_names, proto dtype values, origin attributes.
    let desc = |dt: i32| air::TensorDescriptor {
        dtype: dt,
        layout: "NCHW".into(),
        shape: Some(air::ShapeDef { dim: vec![1, 2] }),
        attr: [(
            "origin_format".to_string(),
            AttrDef {
                value: Some(air::attr_def::Value::S(b"ND".to_vec())),
            },
        )]
        .into_iter()
        .collect(),
        ..Default::default()
    };
    let mut data = op("x", "Data");
    data.output_desc = vec![desc(1)];
    data.attr.insert(
        "index".into(),
        AttrDef {
            value: Some(air::attr_def::Value::I(0)),
        },
    );
    let mut relu = op("r", "Relu");
    relu.input = vec!["x:0".into(), "x:-1".into()];
    relu.input_desc = vec![desc(1)];
    relu.output_desc = vec![desc(1)];
    relu.attr.insert(
        "_private".into(),
        AttrDef {
            value: Some(air::attr_def::Value::Dt(9)),
        },
    );
    let b = model(vec![GraphDef {
        name: "main".into(),
        input: vec!["x:0".into()],
        output: vec!["r:0".into()],
        op: vec![data, relu],
        ..Default::default()
    }]);
    let g = air::from_bytes(&b).unwrap();
    let r = g.node(g.find("r").unwrap()).unwrap();
    assert_eq!(r.inputs[0].name, "x");
    assert_eq!(r.outputs[0].name, "y");
    assert_eq!(r.inputs[0].desc.dtype, DataType::FLOAT);
    assert_eq!(r.inputs[0].desc.format, Format::NCHW);
    assert_eq!(r.inputs[0].desc.origin_format, Format::ND);
    assert_eq!(r.in_control.len(), 1);
    assert_eq!(
        r.private_attrs.get("_private"),
        Some(&AttrValue::Type(DataType::INT64))
    );
    let x = g.node(g.find("x").unwrap()).unwrap();
    assert_eq!(x.attrs.get("index"), Some(&AttrValue::Int(0)));
    assert_eq!(g.outputs.len(), 1);
}

#[test]
fn writes_what_ge_writes() {
    let mut g = Graph::new("m");
    let mut n = Node::new("a", "MyOp");
    n.outputs.push(OutputSlot {
        name: "y".into(),
        ir_index: 0,
        desc: TensorDesc::new(DataType::INT32, Shape::new(vec![3])).into(),
        consumers: vec![],
    });
    n.attrs.insert("t".into(), AttrValue::Type(DataType::INT64));
    n.attrs
        .insert("l".into(), AttrValue::ListType(vec![DataType::FLOAT16]));
    let a = g.add_node(n).unwrap();
    let mut n = Node::new("b", "MyOp");
    n.inputs.push(InputSlot::new(
        "x",
        0,
        TensorDesc::new(DataType::INT32, Shape::new(vec![3])),
    ));
    let b = g.add_node(n).unwrap();
    g.add_data_edge(OutPort { node: a, index: 0 }, InPort { node: b, index: 0 })
        .unwrap();
    g.add_control_edge(a, b).unwrap();
    let m = air::to_model_def(&g).unwrap();
    let ops = &m.graph[0].op;
    assert_eq!(ops[1].input, vec!["a:0", "a:-1"]);
    assert_eq!(ops[0].output_desc[0].dtype, 7); // DT_INT32 of ge_ir.proto
    assert_eq!(ops[0].output_desc[0].layout, "ND");
    match &ops[0].attr["t"].value {
        Some(air::attr_def::Value::Dt(v)) => assert_eq!(*v, 9), // ge::DT_INT64
        other => panic!("{other:?}"),
    }
    match &ops[0].attr["l"].value {
        Some(air::attr_def::Value::List(l)) => assert_eq!(l.dt, vec![2]), // proto DT_FLOAT16
        other => panic!("{other:?}"),
    }
}

#[test]
fn save_errors() {
    let mut g = Graph::new("m");
    let mut n = Node::new("a", "MyOp");
    n.private_attrs
        .insert("_input_name_key".into(), AttrValue::Int(1));
    g.add_node(n).unwrap();
    let e = air::to_bytes(&g).unwrap_err().to_string();
    assert!(e.contains("reserves"), "{e}");
    let mut g = Graph::new("m");
    let mut n = Node::new("a", "MyOp");
    n.attrs.insert("k".into(), AttrValue::Int(1));
    n.private_attrs.insert("k".into(), AttrValue::Int(2));
    g.add_node(n).unwrap();
    let e = air::to_bytes(&g).unwrap_err().to_string();
    assert!(e.contains("both an IR and a private"), "{e}");
    let mut g = Graph::new("m");
    let mut n = Node::new("a", "MyOp");
    let mut d = TensorDesc::default();
    d.attrs.insert("placement".into(), AttrValue::Int(1));
    n.inputs.push(InputSlot::new("x", 0, d));
    g.add_node(n).unwrap();
    let e = air::to_bytes(&g).unwrap_err().to_string();
    assert!(e.contains("tensor attribute 'placement'"), "{e}");
    let mut g = Graph::new("m");
    let mut n = Node::new("a", "MyOp");
    n.inputs.push(InputSlot::new("x", 0, TensorDesc::default()));
    n.inputs.push(InputSlot::new("x", 1, TensorDesc::default()));
    g.add_node(n).unwrap();
    let e = air::to_bytes(&g).unwrap_err().to_string();
    assert!(e.contains("same name"), "{e}");
}

#[test]
fn list_attributes_by_their_list_type() {
    use air::attr_def::list_value::ListValueType as Lt;
    let list = |val_type: i32| AttrDef {
        value: Some(air::attr_def::Value::List(air::attr_def::ListValue {
            val_type,
            i: vec![4, 5],
            ..Default::default()
        })),
    };
    assert_eq!(
        air::attr_from_def(&list(Lt::VtListInt as i32), "a").unwrap(),
        Some(AttrValue::ListInt(vec![4, 5]))
    );
    assert_eq!(
        air::attr_from_def(&list(Lt::VtListNone as i32), "a").unwrap(),
        None
    );
    let e = air::attr_from_def(&list(Lt::VtListBytes as i32), "a").unwrap_err();
    assert!(e.to_string().contains("list of bytes"), "{e}");
    let e = air::attr_from_def(&list(42), "a").unwrap_err();
    assert!(e.to_string().contains("a: unknown list type 42"), "{e}");
}
