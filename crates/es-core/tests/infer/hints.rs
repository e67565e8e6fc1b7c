//! GE's building model: descriptions that are hints (inputs without a shape, descriptions set by
//! hand) never make an op call fail; the compile re-infers from the fed tensors (`infer_graph`,
//! `src/infer/mod.rs`) and names the line that built a failing node.

use std::sync::Arc;

use es_core::builder::{set_locator, GraphBuilder, OpArgs};
use es_core::graph::{Graph, NodeId, OutPort};
use es_core::infer::infer_graph;
use es_core::{DataType, Format, Shape, Tensor};

fn args(inputs: Vec<OutPort>) -> OpArgs {
    OpArgs {
        inputs: inputs.into_iter().map(|p| vec![Some(p)]).collect(),
        ..Default::default()
    }
}

/// MatMul(x1, x2) with its optional bias left out.
fn matmul(x1: OutPort, x2: OutPort) -> OpArgs {
    let mut a = args(vec![x1, x2]);
    a.inputs.push(vec![None]);
    a
}

fn out0(id: NodeId) -> OutPort {
    OutPort { node: id, index: 0 }
}

fn input(b: &mut GraphBuilder, index: i64, dtype: DataType, shape: Shape) -> OutPort {
    b.create_input(index, None, "Data", dtype, Format::ND, shape)
        .unwrap()
}

fn f32_const(b: &mut GraphBuilder, dims: &[i64]) -> OutPort {
    let n: i64 = dims.iter().product();
    let t = Tensor::from_values(&vec![1.0f32; n as usize], dims.to_vec()).unwrap();
    b.create_const(t, None).unwrap()
}

fn here() -> Option<Arc<str>> {
    Some(Arc::from("program.py:7"))
}

/// Sets the data node's output (and input) description, as a run's fed tensor would.
fn feed(g: &mut Graph, name: &str, dtype: DataType, dims: &[i64]) {
    let id = g.find(name).unwrap();
    let n = g.node_mut(id).unwrap();
    for d in n
        .outputs
        .iter_mut()
        .map(|o| &mut o.desc)
        .chain(n.inputs.iter_mut().map(|i| &mut i.desc))
    {
        d.dtype = dtype;
        d.shape = Shape::new(dims.to_vec());
    }
}

#[test]
fn an_op_on_an_unshaped_input_never_fails_while_building() {
    set_locator(here);
    let mut b = GraphBuilder::new("g");
    let x = input(&mut b, 0, DataType::FLOAT, Shape::unknown_rank());
    assert!(b.is_hinted(x.node));
    let w = f32_const(&mut b, &[5, 7]);
    // Certain with a [2, 3] input; unknown here, so it waits for the compile.
    let mm = b.add_op("MatMul", matmul(x, w)).unwrap();
    assert!(b.is_hinted(mm));
    let n = b.graph().node(mm).unwrap();
    assert_eq!(n.built_at.as_deref(), Some("program.py:7"));
    // Its consumers are hints too.
    let r = b.add_op("Relu", args(vec![out0(mm)])).unwrap();
    assert!(b.is_hinted(r));
    b.set_output(out0(r), 0).unwrap();
    let mut g = b.build_and_reset().unwrap();

    // Fed [2, 3]: the mismatch is found now, and the message names the building line.
    feed(&mut g, "input_0", DataType::FLOAT, &[2, 3]);
    let err = infer_graph(&mut g).unwrap_err().to_string();
    assert!(err.contains("MatMul"), "{err}");
    assert!(
        err.contains("(the node was built at program.py:7)"),
        "{err}"
    );

    // Fed [2, 5]: fine.
    feed(&mut g, "input_0", DataType::FLOAT, &[2, 5]);
    infer_graph(&mut g).unwrap();
    let out = g.out_desc(g.outputs[0]).unwrap();
    assert_eq!(out.shape, Shape::new(vec![2, 7]));
}

#[test]
fn declared_descriptions_are_still_checked_at_once() {
    let mut b = GraphBuilder::new("g");
    let x = input(&mut b, 0, DataType::FLOAT, Shape::new(vec![2, 3]));
    assert!(!b.is_hinted(x.node));
    let w = f32_const(&mut b, &[5, 7]);
    let before = b.graph().node_count();
    assert!(b.add_op("MatMul", matmul(x, w)).is_err());
    assert_eq!(b.graph().node_count(), before);
}

#[test]
fn a_description_set_by_hand_is_a_hint_except_on_an_input() {
    let mut b = GraphBuilder::new("g");
    let x = input(&mut b, 0, DataType::FLOAT, Shape::new(vec![2, 3]));
    let r = b.add_op("Relu", args(vec![x])).unwrap();
    assert!(!b.is_hinted(r));
    b.description_set(r).unwrap();
    assert!(b.is_hinted(r));
    // An input given a full description is declared; one left without a rank is a hint.
    let u = input(&mut b, 1, DataType::FLOAT, Shape::unknown_rank());
    assert!(b.is_hinted(u.node));
    let id = u.node;
    b.graph_mut().node_mut(id).unwrap().outputs[0].desc.shape = Shape::new(vec![4]);
    b.description_set(id).unwrap();
    assert!(!b.is_hinted(id));
    // A hinted intermediate lets a mismatching op through.
    let w = f32_const(&mut b, &[5, 7]);
    assert!(b.add_op("MatMul", matmul(out0(r), w)).is_ok());
}

#[test]
fn a_failure_that_does_not_depend_on_the_hints_is_still_raised() {
    let mut b = GraphBuilder::new("g");
    let x = input(&mut b, 0, DataType::FLOAT, Shape::unknown_rank());
    let mut bad = args(vec![x]);
    bad.attrs
        .insert("dst_type".into(), es_core::attr::AttrValue::Int(999));
    let before = b.graph().node_count();
    let e = b.add_op("Cast", bad).unwrap_err().to_string();
    assert!(e.contains("dst_type"), "{e}");
    assert_eq!(b.graph().node_count(), before);
    // What can be inferred without the hint is kept: Cast's dtype.
    let mut ok = args(vec![x]);
    ok.attrs.insert(
        "dst_type".into(),
        es_core::attr::AttrValue::Int(DataType::INT32.value() as i64),
    );
    let id = b.add_op("Cast", ok).unwrap();
    assert_eq!(
        b.graph().node(id).unwrap().outputs[0].desc.dtype,
        DataType::INT32
    );
}

#[test]
fn a_given_output_count_must_agree_with_the_librarys_rule_and_be_bounded() {
    let mut b = GraphBuilder::new("g");
    let x = input(&mut b, 0, DataType::FLOAT, Shape::new(vec![4, 2]));
    let split = |n: usize| {
        let mut a = args(vec![x]);
        a.attrs
            .insert("split_dim".into(), es_core::attr::AttrValue::Int(0));
        a.attrs
            .insert("num_split".into(), es_core::attr::AttrValue::Int(2));
        a.output_counts.insert("y".into(), n);
        a
    };
    let e = b.add_op("SplitD", split(3)).unwrap_err().to_string();
    assert!(
        e.contains("y_num is 3 but attribute 'num_split' is 2"),
        "{e}"
    );
    let id = b.add_op("SplitD", split(2)).unwrap();
    assert_eq!(b.graph().node(id).unwrap().outputs.len(), 2);
    // A count without a rule (If's outputs) is bounded: no output list of a billion names.
    let c = b
        .create_const(Tensor::from_values(&[true], vec![]).unwrap(), None)
        .unwrap();
    let mut huge = args(vec![c, x]);
    huge.output_counts.insert("output".into(), 1 << 40);
    let e = b.add_op("If", huge).unwrap_err().to_string();
    assert!(e.contains("output_num must be in 0..=1000000"), "{e}");
}
