//! The graph arena: nodes, edges, names, order, validation (`es_core::graph`).

use super::*;

#[test]
fn graph_add_and_query_edges() {
    let (mut g, a, b, c) = chain();
    assert_eq!(g.node_count(), 3);
    assert_eq!(all_names(&g), vec!["a", "b", "c"]);
    assert_eq!(g.find("b"), Some(b));
    assert_eq!(g.find("zz"), None);
    assert_eq!(g.producer(b, 0).unwrap(), Some(out0(a)));
    assert!(g.producer(a, 0).is_err(), "a has no inputs");
    assert_eq!(g.out_edges(a).unwrap(), vec![(0, in_port(b, 0))]);
    assert!(g.node(b).unwrap().in_control.contains(&a));
    assert!(g.node(a).unwrap().out_control.contains(&b));
    assert!(g.check_integrity().is_ok());
    // A second consumer on the same output keeps edge order.
    let d = g.add_node(raw_node("d", "Add", 2, 1)).unwrap();
    link(&mut g, a, d, 1);
    link(&mut g, a, d, 0);
    assert_eq!(
        g.out_edges(a).unwrap(),
        vec![(0, in_port(b, 0)), (0, in_port(d, 1)), (0, in_port(d, 0))]
    );
    // Connected input, bad ports.
    let e = err_text(g.add_data_edge(out0(c), in_port(d, 0)));
    assert!(e.contains("already connected"), "{e}");
    assert!(g
        .add_data_edge(OutPort { node: a, index: 1 }, in_port(c, 0))
        .is_err());
    assert!(g.add_data_edge(out0(c), in_port(d, 2)).is_err());
    // Remove edge.
    g.remove_data_edge(out0(a), in_port(d, 1)).unwrap();
    assert_eq!(g.producer(d, 1).unwrap(), None);
    assert!(g.remove_data_edge(out0(a), in_port(d, 1)).is_err());
    assert!(g.remove_data_edge(out0(c), in_port(d, 0)).is_err());
    assert_eq!(g.out_edges(a).unwrap().len(), 2);
    assert!(g.check_integrity().is_ok());
    assert!(g.out_desc(out0(a)).is_ok());
    assert!(g.out_desc(OutPort { node: a, index: 3 }).is_err());
}

#[test]
fn graph_remove_node_clears_everything() {
    let (mut g, a, b, c) = chain();
    let removed = g.remove_node(b).unwrap();
    assert!(removed.name == "b");
    assert_eq!(g.node_count(), 2);
    assert!(g.out_edges(a).unwrap().is_empty(), "consumer list of a");
    assert_eq!(g.producer(c, 0).unwrap(), None, "input of c");
    assert!(g.node(a).unwrap().out_control.is_empty());
    assert!(g.node(c).unwrap().in_control.is_empty());
    assert_eq!(g.outputs, vec![out0(c)], "graph output b:0 dropped");
    assert_eq!(g.find("b"), None);
    assert!(!g.contains(b));
    assert!(g.check_integrity().is_ok());
    assert_eq!(names(&g, &g.topo_order().unwrap()), vec!["a", "c"]);
}

#[test]
fn graph_stale_node_id_is_an_error() {
    let (mut g, a, b, c) = chain();
    g.remove_node(b).unwrap();
    // The slot is reused by a new node with the same name; the old id must still be stale.
    let b2 = relu(&mut g, "b", 1);
    assert_ne!(b, b2);
    assert_eq!(g.find("b"), Some(b2));
    assert!(g.node(b).is_err());
    assert!(g.node_mut(b).is_err());
    assert!(g.remove_node(b).is_err());
    assert!(g.add_data_edge(out0(b), in_port(c, 0)).is_err());
    assert!(g.add_data_edge(out0(a), in_port(b, 0)).is_err());
    assert!(g.remove_data_edge(out0(a), in_port(b, 0)).is_err());
    assert!(g.add_control_edge(b, c).is_err());
    assert!(g.add_control_edge(a, b).is_err());
    assert!(g.remove_control_edge(a, b).is_err());
    assert!(g.rename_node(b, "zz").is_err());
    assert!(g.out_edges(b).is_err());
    assert!(g.producer(b, 0).is_err());
    assert!(g.out_desc(out0(b)).is_err());
    assert!(g.set_output(0, out0(b)).is_err());
    assert!(!g.contains(b));
    // Nothing changed by the failed calls.
    assert_eq!(all_names(&g), vec!["a", "c", "b"]);
    assert!(g.check_integrity().is_ok());
    // Ids from another graph are not followed either (they may be valid keys there).
    let other = Graph::new("other");
    assert!(other.node(a).is_err());
}

#[test]
fn graph_names_unique_and_rename() {
    let mut g = Graph::new("g");
    let a = relu(&mut g, "a", 0);
    let e = err_text(g.add_node(raw_node("a", "Add", 0, 1)));
    assert!(e.contains("'a'"), "{e}");
    assert!(g.add_node(raw_node("", "Add", 0, 1)).is_err());
    assert_eq!(g.node_count(), 1);
    let b = relu(&mut g, "b", 0);
    assert!(g.rename_node(b, "a").is_err());
    g.rename_node(b, "b").unwrap();
    g.rename_node(b, "bee").unwrap();
    assert_eq!(g.find("bee"), Some(b));
    assert_eq!(g.find("b"), None);
    assert!(g.node(b).unwrap().name == "bee");
    // The old name is free again.
    relu(&mut g, "b", 0);
    assert_eq!(g.unique_name("a"), "a_1");
    assert_eq!(g.unique_name("fresh"), "fresh");
    relu(&mut g, "a_1", 0);
    assert_eq!(g.unique_name("a"), "a_2");
    assert_eq!(g.find("a"), Some(a));
    assert!(g.check_integrity().is_ok());
}

#[test]
fn graph_add_node_ignores_stored_edges() {
    let mut g = Graph::new("g");
    let a = relu(&mut g, "a", 0);
    let mut n = raw_node("b", "Relu", 1, 1);
    n.inputs[0].source = Some(out0(a));
    n.outputs[0].consumers.push(in_port(a, 0));
    n.in_control.push(a);
    let b = g.add_node(n).unwrap();
    let nb = g.node(b).unwrap();
    assert!(
        nb.inputs[0].source.is_none()
            && nb.outputs[0].consumers.is_empty()
            && nb.in_control.is_empty()
    );
    assert!(g.check_integrity().is_ok());
}

#[test]
fn graph_control_edges() {
    let mut g = Graph::new("g");
    let a = relu(&mut g, "a", 0);
    let b = relu(&mut g, "b", 0);
    let e = err_text(g.add_control_edge(a, a));
    assert!(e.contains("itself"), "{e}");
    g.add_control_edge(a, b).unwrap();
    g.add_control_edge(a, b).unwrap();
    assert_eq!(
        g.node(b).unwrap().in_control,
        vec![a],
        "no duplicate control edge"
    );
    assert_eq!(g.node(a).unwrap().out_control, vec![b]);
    assert!(g.remove_control_edge(b, a).is_err());
    g.remove_control_edge(a, b).unwrap();
    assert!(g.node(b).unwrap().in_control.is_empty());
    assert!(g.node(a).unwrap().out_control.is_empty());
    assert!(g.remove_control_edge(a, b).is_err());
    // Control edges order topologically.
    g.add_control_edge(b, a).unwrap();
    assert_eq!(names(&g, &g.topo_order().unwrap()), vec!["b", "a"]);
}

#[test]
fn graph_topo_order_is_stable() {
    let mut g = Graph::new("g");
    // Created: z (consumes s), m (independent), s (source), k (independent).
    let [z, _m, s, _k] = relus(&mut g, [("z", 1), ("m", 0), ("s", 0), ("k", 0)]);
    link(&mut g, s, z, 0);
    // Ties in creation order: z becomes ready after s and goes before k (its seq is lower).
    assert_eq!(
        names(&g, &g.topo_order().unwrap()),
        vec!["m", "s", "z", "k"]
    );
    // Same answer every time.
    for _ in 0..5 {
        assert_eq!(
            names(&g, &g.topo_order().unwrap()),
            vec!["m", "s", "z", "k"]
        );
    }
    // Without edges: creation order.
    let mut h = Graph::new("h");
    for n in ["d", "c", "b", "a"] {
        relu(&mut h, n, 0);
    }
    assert_eq!(
        names(&h, &h.topo_order().unwrap()),
        vec!["d", "c", "b", "a"]
    );
    assert_eq!(all_names(&h), vec!["d", "c", "b", "a"]);
}

#[test]
fn graph_cycle_detection_names_nodes() {
    let mut g = Graph::new("cyc");
    let [free, a, b, after] = relus(
        &mut g,
        [
            ("free_node", 0),
            ("cyc_a", 1),
            ("cyc_b", 1),
            ("after_cycle", 1),
        ],
    );
    link(&mut g, a, b, 0);
    link(&mut g, b, a, 0);
    g.add_data_edge(
        out0(free),
        InPort {
            node: after,
            index: 0,
        },
    )
    .unwrap();
    let e = err_text(g.topo_order());
    assert!(
        e.contains("cycle") && e.contains("cyc_a") && e.contains("cyc_b"),
        "{e}"
    );
    assert!(
        !e.contains("free_node") && !e.contains("after_cycle"),
        "{e}"
    );
    assert!(g.validate().is_err());
    // A control-edge cycle too.
    let mut h = Graph::new("ctl");
    let x = relu(&mut h, "x", 0);
    let y = relu(&mut h, "y", 0);
    h.add_control_edge(x, y).unwrap();
    h.add_control_edge(y, x).unwrap();
    let e = err_text(h.topo_order());
    assert!(e.contains("x") && e.contains("y"), "{e}");
    // Dumps of a cyclic graph do not fail.
    assert!(dump::readable(&g).contains("cyc_a"));
    assert!(dump::txt(&h).contains("control_input"));
}

#[test]
fn graph_validate_errors() {
    // A valid graph: Data(0) -> Relu -> output.
    let valid = || {
        let mut g = Graph::new("v");
        let d = g.add_node(raw_data("d0", 0)).unwrap();
        let r = relu(&mut g, "r", 1);
        link(&mut g, d, r, 0);
        g.set_output(0, out0(r)).unwrap();
        (g, d, r)
    };
    let (g, _, _) = valid();
    g.validate().unwrap();

    // Unconnected required input.
    let (mut g, d, r) = valid();
    g.remove_data_edge(out0(d), in_port(r, 0)).unwrap();
    let e = err_text(g.validate());
    assert!(e.contains("not connected") && e.contains("'r'"), "{e}");

    // Unconnected optional input is fine (BatchNorm-like: use a prototype with an optional input).
    let reg = global_registry();
    if let Some((op, ir)) = reg.iter().find_map(|p| {
        p.inputs
            .iter()
            .position(|i| i.kind == es_core::ops::IoKind::Optional)
            .map(|ir| (p.name.to_string(), ir))
    }) {
        let mut g = Graph::new("opt");
        let mut n = raw_node("o", &op, 0, 1);
        n.inputs
            .push(InputSlot::new("opt", ir as u32, TensorDesc::default()));
        for a in &reg.get(&op).unwrap().attrs {
            n.attrs
                .insert(a.name.to_string(), a.default.clone().unwrap_or(ints(0)));
        }
        g.add_node(n).unwrap();
        g.validate().unwrap();
    }

    // Missing required attribute.
    let (mut g, d, _) = valid();
    let c = g.add_node(raw_node("cat", "ConcatD", 1, 1)).unwrap();
    link(&mut g, d, c, 0);
    let e = err_text(g.validate());
    assert!(e.contains("concat_dim") && e.contains("'cat'"), "{e}");
    g.node_mut(c)
        .unwrap()
        .attrs
        .insert("concat_dim".into(), ints(0));
    g.validate().unwrap();

    // Data index gap.
    let (mut g, _, _) = valid();
    g.add_node(raw_data("d2", 2)).unwrap();
    let e = err_text(g.validate());
    assert!(e.contains("gaps") && e.contains("d2"), "{e}");
    g.add_node(raw_data("d1", 1)).unwrap();
    g.validate().unwrap();

    // Data index repeated.
    let (mut g, _, _) = valid();
    g.add_node(raw_data("again", 0)).unwrap();
    let e = err_text(g.validate());
    assert!(e.contains("both have index 0"), "{e}");
    assert!(e.contains("d0") && e.contains("again"), "{e}");

    // Unset output.
    let (mut g, _, r) = valid();
    g.set_output(3, out0(r)).unwrap();
    let e = err_text(g.validate());
    assert!(e.contains("output 1 is not set"), "{e}");
    g.set_output(1, out0(r)).unwrap();
    g.set_output(2, out0(r)).unwrap();
    g.validate().unwrap();
    assert_eq!(g.outputs.len(), 4);
    assert!(g.set_output(10_000_000, out0(r)).is_err());
    assert!(g.set_output(0, OutPort { node: r, index: 9 }).is_err());

    // A broken subgraph fails the parent, naming the subgraph.
    let (mut g, _, r) = valid();
    let (mut sub, sd, sr) = valid();
    sub.remove_data_edge(out0(sd), in_port(sr, 0)).unwrap();
    g.node_mut(r)
        .unwrap()
        .subgraphs
        .push(es_core::graph::SubgraphSlot {
            name: "body".into(),
            ir_index: 0,
            graph: sub,
        });
    let e = err_text(g.validate());
    assert!(e.contains("body"), "{e}");
}

#[test]
fn graph_input_nodes_sorted_by_index() {
    let mut g = Graph::new("g");
    g.add_node(raw_data("i2", 2)).unwrap();
    relu(&mut g, "not_input", 0);
    g.add_node(raw_data("i0", 0)).unwrap();
    let mut v = raw_node("i1", "RefData", 1, 1);
    v.attrs.insert("index".into(), ints(1));
    g.add_node(v).unwrap();
    assert_eq!(names(&g, &g.input_nodes()), vec!["i0", "i1", "i2"]);
}

#[test]
fn remove_nodes_matches_removing_one_by_one() {
    // Many consumers of one shared constant: batch removal leaves the same graph as one-by-one.
    let build = || {
        let mut b = GraphBuilder::new("shared");
        let x = data(&mut b, 0, &[2]);
        let c = b.create_const(Tensor::scalar(1.0f32), None).expect("const");
        let mut adds = Vec::new();
        for _ in 0..50 {
            adds.push(
                b.add_op("Add", args(vec![one(x), one(c)], &[]))
                    .expect("add"),
            );
        }
        let keep = b
            .add_op("Relu", args(vec![one(out0(adds[0]))], &[]))
            .expect("relu");
        b.add_control_dependency(keep, &[adds[1]]).expect("ctl");
        b.set_output(out0(keep), 0).expect("out");
        b.set_output(out0(adds[2]), 1).expect("out");
        (b.build_and_reset().expect("build"), adds)
    };
    let (mut one_by_one, adds) = build();
    for &id in &adds[1..] {
        one_by_one.remove_node(id).expect("remove");
    }
    let (mut batch, adds2) = build();
    batch.remove_nodes(&adds2[1..]).expect("remove_nodes");
    assert_eq!(batch, one_by_one);
    batch.check_integrity().expect("integrity");
    assert!(
        batch.remove_nodes(&[adds2[0], adds2[0]]).is_err(),
        "duplicates are refused"
    );
    assert!(
        batch.remove_nodes(&[adds2[1]]).is_err(),
        "a removed node is refused"
    );
}
