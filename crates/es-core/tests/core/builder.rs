//! The eager-style builder (`es_core::builder`).

use super::*;

#[test]
fn builder_failed_add_op_leaves_graph_unchanged() {
    let (mut b, [x, y]) = float_inputs("g", [&[2, 3], &[4, 5]]);
    let i = b
        .create_input(
            2,
            None,
            "Data",
            DataType::INT32,
            Format::ND,
            Shape::new(vec![2, 3]),
        )
        .unwrap();
    let ok = b.add_op("Relu", args(vec![one(x)], &[])).unwrap();
    let before = b.graph().clone();
    let before_names = all_names(&before);

    let mut named = args(vec![one(x)], &[]);
    named.name = Some(b.graph().node(ok).unwrap().name.to_string());
    let mut if_no_count = args(vec![one(i), vec![Some(x)]], &[]);
    if_no_count.subgraphs = vec![vec![branch("t")], vec![branch("e")]];
    let mut if_missing_branch = args(vec![one(i), vec![Some(x)]], &[]);
    if_missing_branch.output_counts.insert("output".into(), 1);
    if_missing_branch.subgraphs = vec![vec![branch("t")]];
    let stale = OutPort {
        node: NodeId::default(),
        index: 0,
    };

    let failures: Vec<(&str, OpArgs)> = vec![
        ("NoSuchOp", args(vec![], &[])),
        ("Add", args(vec![one(x)], &[])),
        ("Add", args(vec![one(x), vec![None]], &[])),
        ("Add", args(vec![one(x), vec![Some(x), Some(x)]], &[])),
        ("Pow", args(vec![one(x), one(i)], &[])),
        ("Add", args(vec![one(x), one(y)], &[])),
        (
            "Add",
            args(
                vec![
                    one(x),
                    one(OutPort {
                        node: x.node,
                        index: 7,
                    }),
                ],
                &[],
            ),
        ),
        ("Add", args(vec![one(x), one(stale)], &[])),
        ("Relu", args(vec![one(x)], &[("bogus", ints(1))])),
        ("Relu", named),
        ("ConcatD", args(vec![vec![Some(x), Some(x)]], &[])),
        (
            "ConcatD",
            args(
                vec![vec![Some(x), Some(x)]],
                &[("concat_dim", AttrValue::Float(0.0))],
            ),
        ),
        (
            "ConcatD",
            args(
                vec![vec![Some(x), Some(x)]],
                &[("concat_dim", ints(0)), ("N", ints(3))],
            ),
        ),
        (
            "ConcatD",
            args(vec![vec![Some(x), None]], &[("concat_dim", ints(0))]),
        ),
        (
            "ConcatD",
            args(vec![vec![Some(x), Some(x)]], &[("concat_dim", ints(5))]),
        ),
        (
            "ConcatD",
            args(vec![vec![Some(x), Some(y)]], &[("concat_dim", ints(0))]),
        ),
        (
            "SplitD",
            args(
                vec![one(x)],
                &[("split_dim", ints(0)), ("num_split", ints(-1))],
            ),
        ),
        (
            "SplitD",
            args(
                vec![one(x)],
                &[("split_dim", ints(0)), ("num_split", ints(2_000_000))],
            ),
        ),
        (
            "SplitD",
            args(
                vec![one(x)],
                &[("split_dim", ints(1)), ("num_split", ints(2))],
            ),
        ),
        ("If", if_no_count),
        ("If", if_missing_branch),
    ];
    for (op, a) in failures {
        let dbg = format!("{op} {:?}", a.inputs);
        assert!(b.add_op(op, a).is_err(), "{dbg} should fail");
        assert_eq!(b.graph().node_count(), before.node_count(), "{dbg}");
        assert_eq!(all_names(b.graph()), before_names, "{dbg}");
        assert!(*b.graph() == before, "{dbg}: graph changed");
        for id in b.graph().nodes() {
            assert_eq!(
                b.graph().out_edges(id).unwrap(),
                before.out_edges(id).unwrap(),
                "{dbg}"
            );
        }
    }
    // The builder still works afterwards. (A call that fails after naming, e.g. in inference,
    // currently uses up an auto name, so only the prefix is checked.)
    let a = b.add_op("Add", args(vec![one(x), one(x)], &[])).unwrap();
    let name = b.graph().node(a).unwrap().name.to_string();
    assert!(
        name.starts_with("Add_") && !before_names.contains(&name),
        "{name}"
    );
    assert_eq!(b.graph().node_count(), before.node_count() + 1);
}

#[test]
fn builder_auto_names_and_collisions() {
    let mut b = GraphBuilder::new("g");
    let x = data(&mut b, 0, &[4]);
    assert!(b.graph().node(x.node).unwrap().name == "input_0");
    let mut made = Vec::new();
    for _ in 0..3 {
        made.push(b.add_op("Relu", args(vec![one(x)], &[])).unwrap());
    }
    let a0 = b.add_op("Add", args(vec![one(x), one(x)], &[])).unwrap();
    assert_eq!(names(b.graph(), &made), vec!["Relu_0", "Relu_1", "Relu_2"]);
    assert!(b.graph().node(a0).unwrap().name == "Add_0");
    // An explicit name that the counter would produce next is skipped over.
    let mut a = args(vec![one(x)], &[]);
    a.name = Some("Relu_3".into());
    b.add_op("Relu", a).unwrap();
    let r = b.add_op("Relu", args(vec![one(x)], &[])).unwrap();
    assert!(b.graph().node(r).unwrap().name == "Relu_4");
    // Explicit collisions are errors, for ops, inputs and consts.
    let mut a = args(vec![one(x)], &[]);
    a.name = Some("Add_0".into());
    let e = err_text(b.add_op("Relu", a));
    assert!(e.contains("Add_0"), "{e}");
    assert!(scalar_input(&mut b, 1, Some("Relu_0".into()), "Data").is_err());
    assert!(b
        .create_const(Tensor::scalar(1i32), Some("input_0".into()))
        .is_err());
    let c0 = b.create_const(Tensor::scalar(1i32), None).unwrap();
    assert!(b.graph().node(c0.node).unwrap().name == "Const_0");
    assert_eq!(
        b.graph().node(c0.node).unwrap().const_value(),
        Some(&Tensor::scalar(1i32))
    );
    // build_and_reset empties the builder and restarts the counters.
    b.set_output(out0(r), 0).unwrap();
    let g = b.build_and_reset().unwrap();
    assert_eq!(g.node_count(), 8);
    assert_eq!(b.graph().node_count(), 0);
    assert!(b.graph().name == "g");
    let x = data(&mut b, 0, &[4]);
    let r = b.add_op("Relu", args(vec![one(x)], &[])).unwrap();
    assert!(b.graph().node(r).unwrap().name == "Relu_0");
}

#[test]
fn builder_create_input_checks() {
    let mut b = GraphBuilder::new("g");
    data(&mut b, 0, &[2]);
    assert!(scalar_input(&mut b, -1, None, "Data").is_err());
    assert!(scalar_input(&mut b, 0, Some("other".into()), "Data").is_err());
    assert!(scalar_input(&mut b, 1, None, "Relu").is_err());
    assert!(b
        .create_input(
            1,
            None,
            "Data",
            DataType::FLOAT,
            Format::ND,
            Shape::new(vec![-5])
        )
        .is_err());
    assert_eq!(b.graph().node_count(), 1);
    let p = b
        .create_input(
            1,
            Some("nhwc".into()),
            "RefData",
            DataType::FLOAT16,
            Format::NHWC,
            Shape::new(vec![1, 2, 2, 3]),
        )
        .unwrap();
    let d = b.graph().out_desc(p).unwrap();
    assert_eq!((d.dtype, d.format), (DataType::FLOAT16, Format::NHWC));
    assert_eq!(d.shape.dims(), &[1, 2, 2, 3]);
    assert_eq!(b.graph().input_nodes().len(), 2);
}

#[test]
fn builder_derived_attrs_and_dynamic_outputs() {
    let (mut b, [x, y]) = float_inputs("g", [&[2, 3], &[4, 3]]);
    // ConcatD: N is derived from the number of inputs.
    let cat = b
        .add_op(
            "ConcatD",
            args(
                vec![vec![Some(x), Some(y), Some(x)]],
                &[("concat_dim", ints(0))],
            ),
        )
        .unwrap();
    let n = b.graph().node(cat).unwrap();
    assert_eq!(n.attr("N"), Some(&ints(3)));
    assert_eq!(n.inputs.len(), 3);
    let in_names: Vec<String> = n.inputs.iter().map(|i| i.name.to_string()).collect();
    assert_eq!(in_names, vec!["x0", "x1", "x2"]);
    assert_eq!(b.graph().out_desc(out0(cat)).unwrap().shape.dims(), &[8, 3]);
    // Giving the right N is fine.
    b.add_op(
        "ConcatD",
        args(
            vec![vec![Some(x), Some(y)]],
            &[("concat_dim", ints(0)), ("N", ints(2))],
        ),
    )
    .unwrap();

    // SplitD: output count from the num_split attribute.
    let sp = split_d(&mut b, out0(cat), 4);
    let n = b.graph().node(sp).unwrap();
    let out_names: Vec<String> = n.outputs.iter().map(|o| o.name.to_string()).collect();
    assert_eq!(out_names, vec!["y0", "y1", "y2", "y3"]);
    for o in &n.outputs {
        assert_eq!(o.desc.shape.dims(), &[2, 3]);
        assert_eq!(o.desc.dtype, DataType::FLOAT);
    }
    let sp0 = split_d(&mut b, out0(cat), 1);
    assert_eq!(b.graph().node(sp0).unwrap().outputs.len(), 1);

    // IdentityN: output count = number of inputs.
    let idn = b
        .add_op(
            "IdentityN",
            args(
                vec![vec![Some(x), Some(y), Some(OutPort { node: sp, index: 3 })]],
                &[],
            ),
        )
        .unwrap();
    let n = b.graph().node(idn).unwrap();
    assert_eq!(n.outputs.len(), 3);
    assert_eq!(n.outputs[1].desc.shape.dims(), &[4, 3]);

    // If: output count has to be given; subgraphs attach with their parent set.
    let cond = scalar_of(&mut b, 2, None, "Data", DataType::BOOL).unwrap();
    let e = err_text(b.add_op("If", {
        let mut a = args(vec![one(cond), vec![Some(x)]], &[]);
        a.subgraphs = vec![vec![branch("t")], vec![branch("e")]];
        a
    }));
    assert!(e.contains("output_num"), "{e}");
    let mut a = args(vec![one(cond), vec![Some(x), Some(y)]], &[]);
    a.output_counts.insert("output".into(), 2);
    a.subgraphs = vec![vec![branch("t")], vec![branch("e")]];
    a.name = Some("iff".into());
    let iff = b.add_op("If", a).unwrap();
    let n = b.graph().node(iff).unwrap();
    assert_eq!(n.outputs.len(), 2);
    let sub_names: Vec<String> = n.subgraphs.iter().map(|s| s.name.to_string()).collect();
    assert_eq!(sub_names, vec!["then_branch", "else_branch"]);
    for s in &n.subgraphs {
        assert_eq!(s.graph.parent_node.as_deref(), Some("iff"));
    }
    assert!(n.subgraph("then_branch").unwrap().name == "t");
    assert!(n.subgraph("nope").is_none());

    // Case: a dynamic subgraph list, instances named branches0, branches1, ...
    let bi = b.create_const(Tensor::scalar(0i32), None).unwrap();
    let mut a = args(vec![one(bi), vec![Some(x)]], &[]);
    a.output_counts.insert("output".into(), 1);
    a.subgraphs = vec![vec![branch("b0"), branch("b1"), branch("b2")]];
    let case = b.add_op("Case", a).unwrap();
    let n = b.graph().node(case).unwrap();
    let sub_names: Vec<String> = n.subgraphs.iter().map(|s| s.name.to_string()).collect();
    assert_eq!(sub_names, vec!["branches0", "branches1", "branches2"]);
    let parent = n.name.to_string();
    for s in &n.subgraphs {
        assert_eq!(s.graph.parent_node.as_deref(), Some(parent.as_str()));
    }

    // While: one output per loop variable.
    let mut a = args(vec![vec![Some(x), Some(y)]], &[]);
    a.output_counts.insert("output".into(), 2);
    a.subgraphs = vec![vec![branch("cond")], vec![branch("body")]];
    let w = b.add_op("While", a).unwrap();
    assert_eq!(
        b.graph().node(w).unwrap().attr("parallel_iterations"),
        Some(&ints(10))
    );

    b.set_output(out0(iff), 0).unwrap();
    let g = b.build_and_reset().unwrap();
    assert_eq!(g.all_subgraphs().len(), 7);
    g.validate().unwrap();
}

#[test]
fn builder_defaults_and_control_dependencies() {
    let mut b = GraphBuilder::new("g");
    let x = data(&mut b, 0, &[2]);
    let r1 = b.add_op("Relu", args(vec![one(x)], &[])).unwrap();
    let r2 = b.add_op("Relu", args(vec![one(x)], &[])).unwrap();
    b.add_control_dependency(r2, &[r1, x.node]).unwrap();
    assert_eq!(b.graph().node(r2).unwrap().in_control, vec![r1, x.node]);
    assert!(b.add_control_dependency(r2, &[r2]).is_err());
    assert!(b.proto("Relu").is_ok());
    assert!(b.proto("Nope").is_err());
    assert!(b.registry().get("Add").is_some());
}

#[test]
fn failed_op_does_not_use_up_an_auto_name() {
    let (mut b, [x, y]) = float_inputs("g", [&[2, 3], &[4, 5]]);
    assert!(b.add_op("Add", args(vec![one(x), one(y)], &[])).is_err());
    let ok = b
        .add_op("Add", args(vec![one(x), one(x)], &[]))
        .expect("add");
    assert_eq!(b.graph().node(ok).expect("node").name, "Add_0");
}
