//! The compile report's collectives (crates/ge-runtime/src/plan.rs, `CollectiveReport`): each
//! HCCL collective of the compiled graph with its group, reduction or root, inputs and the bytes
//! it moves per rank, in plan order; at world size 1 (this process) and, from the inferred graph
//! alone, at 4 ranks.

use es_core::{AttrValue, DataType, Format, Graph, GraphBuilder, NodeId, OpArgs, OutPort, Shape};
use ge_runtime::ndarray::ArrayD;
use ge_runtime::CollectiveReport;
use ge_runtime::{Session, Value};
use std::collections::BTreeMap;

fn hcom(b: &mut GraphBuilder, op: &str, x: OutPort, attrs: &[(&str, AttrValue)]) -> NodeId {
    let mut args = OpArgs {
        inputs: vec![vec![Some(x)]],
        name: Some(op.to_lowercase()),
        ..Default::default()
    };
    for (k, v) in attrs {
        args.attrs.insert(k.to_string(), v.clone());
    }
    b.add_op(op, args).expect(op)
}

fn out(node: NodeId) -> OutPort {
    OutPort { node, index: 0 }
}

fn input(b: &mut GraphBuilder, dims: &[i64]) -> OutPort {
    let shape = Shape::new(dims.to_vec());
    b.create_input(0, None, "Data", DataType::FLOAT, Format::ND, shape)
        .unwrap()
}

/// x [4, 8] float -> HcomAllReduce(max) -> HcomAllGather(rank_size).
fn graph(rank_size: i64) -> Graph {
    let mut b = GraphBuilder::new("collectives");
    let x = input(&mut b, &[4, 8]);
    let group = ("group", AttrValue::from("hccl_world_group".to_string()));
    let ar = hcom(
        &mut b,
        "HcomAllReduce",
        x,
        &[
            group.clone(),
            ("reduction", AttrValue::from("max".to_string())),
        ],
    );
    let ag = hcom(
        &mut b,
        "HcomAllGather",
        out(ar),
        &[group.clone(), ("rank_size", AttrValue::Int(rank_size))],
    );
    b.set_output(out(ag), 0).unwrap();
    b.build_and_reset().unwrap()
}

#[test]
fn the_report_lists_each_collective_at_world_size_1() {
    let s = Session::new(&BTreeMap::new()).unwrap();
    s.add_graph(1, graph(1), &BTreeMap::new()).unwrap();
    let x = Value::F32(ArrayD::from_shape_fn(vec![4, 8], |i| {
        i[0] as f32 - i[1] as f32
    }));
    let y = s.run_graph(1, vec![x.clone()]).unwrap();
    assert_eq!(y[0], x, "one rank: both collectives hand x through");
    let r = s.compile_report(1).unwrap().unwrap();
    let c = &r.collectives;
    assert_eq!(c.len(), 2, "{r}");
    assert_eq!(
        (c[0].op.as_str(), c[0].node.as_str(), c[1].op.as_str()),
        ("HcomAllReduce", "hcomallreduce", "HcomAllGather")
    );
    assert_eq!(c[0].group, "hccl_world_group");
    assert_eq!(c[0].reduction.as_deref(), Some("max"));
    assert_eq!((c[1].reduction.as_deref(), c[1].root_rank), (None, None));
    for e in c {
        assert_eq!(e.ranks, Some(1));
        assert_eq!(e.inputs, vec![(DataType::FLOAT, Shape::new(vec![4, 8]))]);
        assert_eq!((e.input_bytes, e.output_bytes), (Some(128), Some(128)));
        assert_eq!(e.moved_bytes, Some(0), "one rank moves nothing");
    }
    let text = r.to_string();
    assert!(text.contains("\n  collectives: 2\n"), "{text}");
    assert!(
        text.contains(
            "    HcomAllReduce 'hcomallreduce': group hccl_world_group (1 ranks), reduction max, \
             DT_FLOAT [4, 8]; per rank: 128 bytes in, 128 bytes out, 0 bytes moved"
        ),
        "{text}"
    );
    let plain = Session::new(&BTreeMap::new()).unwrap();
    let mut b = GraphBuilder::new("none");
    let x = input(&mut b, &[2]);
    b.set_output(x, 0).unwrap();
    plain
        .add_graph(1, b.build_and_reset().unwrap(), &BTreeMap::new())
        .unwrap();
    plain
        .run_graph(1, vec![Value::F32(ArrayD::zeros(vec![2]))])
        .unwrap();
    let r = plain.compile_report(1).unwrap().unwrap();
    assert!(r.collectives.is_empty());
    assert!(!r.to_string().contains("collectives"), "{r}");
}

#[test]
fn bytes_moved_follow_the_ring_algorithms_at_4_ranks() {
    let mut g = graph(4);
    es_core::infer::infer_graph(&mut g).unwrap();
    let find = |op: &str| g.iter().find(|(_, n)| n.op_type == op).unwrap().0;
    let four = |name: &str| (name == "hccl_world_group").then_some(4);
    let ar = CollectiveReport::of_node(&g, find("HcomAllReduce"), &four)
        .unwrap()
        .unwrap();
    // 128 bytes reduced over 4 ranks: each sends 2 * 3/4 of it.
    assert_eq!((ar.ranks, ar.moved_bytes), (Some(4), Some(192)));
    let ag = CollectiveReport::of_node(&g, find("HcomAllGather"), &|_: &str| None)
        .unwrap()
        .unwrap();
    // rank_size gives the ranks; the output is 4 x 128 bytes, 3/4 of which come from peers.
    assert_eq!(
        (ag.ranks, ag.input_bytes, ag.output_bytes, ag.moved_bytes),
        (Some(4), Some(128), Some(512), Some(384))
    );
    let data = find("Data");
    assert_eq!(CollectiveReport::of_node(&g, data, &four).unwrap(), None);
}
