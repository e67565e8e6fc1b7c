//! Tests of es-core through its public API, one module per source module: types, attributes,
//! operator prototypes, the graph arena, the builder, serialization and dumps, plus property
//! tests. Regression tests for bugs this suite found sit with the area they test (each failed
//! before its fix).
//!
//! Only the stable surface is used (`Shape::new`/`dims`/`rank`/`num_elements`, names compared
//! with `==`), so internal representation changes do not break these tests.

#[path = "../common/mod.rs"]
mod common;

mod attr;
mod builder;
mod graph;
mod ops;
mod oversized;
mod properties;
mod serialize_and_dump;
mod types;

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};

use common::{float_data as data, float_inputs};
use es_core::attr::{AttrType, AttrValue};
use es_core::builder::{GraphBuilder, OpArgs};
use es_core::dump;
use es_core::graph::{Graph, InPort, InputSlot, Node, NodeId, OutPort, OutputSlot};
use es_core::ops::{builtin_registry, global_registry, OpProto, OpRegistry, BUILTIN_VERSION};
use es_core::serialize::{self, from_bytes, to_bytes, FORMAT_VERSION, MAGIC};
use es_core::types::{Element, UNKNOWN_DIM, UNKNOWN_RANK};
use es_core::{DataType, Error, Format, Shape, Tensor, TensorDesc};
use proptest::prelude::*;

// =============================================================================================
// Helpers
// =============================================================================================

fn ints(v: i64) -> AttrValue {
    AttrValue::Int(v)
}

/// Every DataType, found through `from_value` (independent of the name of the list constant).
fn all_dtypes() -> Vec<DataType> {
    // GE's values, then ge-rs's extensions (ONNX types GE lacks) from 1000.
    (-5..200)
        .chain(990..1100)
        .filter_map(|v| DataType::from_value(v).ok())
        .collect()
}

/// Every Format, found through `from_value`.
fn all_formats() -> Vec<Format> {
    (-5..200)
        .filter_map(|v| Format::from_value(v).ok())
        .collect()
}

/// OpArgs from per-IR-input producers and attributes.
fn args(inputs: Vec<Vec<Option<OutPort>>>, attrs: &[(&str, AttrValue)]) -> OpArgs {
    let mut a = OpArgs {
        inputs,
        ..Default::default()
    };
    for (k, v) in attrs {
        a.attrs.insert((*k).into(), v.clone());
    }
    a
}

fn one(p: OutPort) -> Vec<Option<OutPort>> {
    vec![Some(p)]
}

fn out0(id: NodeId) -> OutPort {
    OutPort { node: id, index: 0 }
}

/// Adds a Relu node (made by hand, see [`raw_node`]) with `n_in` inputs and one output.
fn relu(g: &mut Graph, name: &str, n_in: usize) -> NodeId {
    g.add_node(raw_node(name, "Relu", n_in, 1)).unwrap()
}

/// [`relu`] for each (name, input count).
fn relus<const N: usize>(g: &mut Graph, specs: [(&str, usize); N]) -> [NodeId; N] {
    specs.map(|(name, n_in)| relu(g, name, n_in))
}

/// Input `index` of `node`.
fn in_port(node: NodeId, index: u32) -> InPort {
    InPort { node, index }
}

/// Connects output 0 of `from` to input `index` of `to`.
fn link(g: &mut Graph, from: NodeId, to: NodeId, index: u32) {
    g.add_data_edge(out0(from), InPort { node: to, index })
        .unwrap();
}

/// SplitD of `x` along dim 0 into `n` outputs.
fn split_d(b: &mut GraphBuilder, x: OutPort, n: i64) -> NodeId {
    let attrs = [("split_dim", ints(0)), ("num_split", ints(n))];
    b.add_op("SplitD", args(vec![one(x)], &attrs)).unwrap()
}

/// A node with `n_in` unconnected inputs and `n_out` outputs, built by hand.
fn raw_node(name: &str, op: &str, n_in: usize, n_out: usize) -> Node {
    let mut n = Node::new(name, op);
    for i in 0..n_in {
        n.inputs.push(InputSlot::new(
            format!("x{i}"),
            i as u32,
            TensorDesc::default(),
        ));
    }
    for i in 0..n_out {
        n.outputs.push(OutputSlot {
            name: format!("y{i}").into(),
            ir_index: i as u32,
            desc: TensorDesc::default().into(),
            consumers: Vec::new(),
        });
    }
    n
}

fn raw_data(name: &str, index: i64) -> Node {
    let mut n = raw_node(name, "Data", 1, 1);
    n.attrs.insert("index".into(), ints(index));
    n
}

fn names(g: &Graph, ids: &[NodeId]) -> Vec<String> {
    ids.iter()
        .map(|id| g.node(*id).unwrap().name.to_string())
        .collect()
}

fn all_names(g: &Graph) -> Vec<String> {
    names(g, &g.nodes())
}

fn err_text<T: std::fmt::Debug>(r: es_core::Result<T>) -> String {
    match r {
        Ok(v) => panic!("expected an error, got Ok({v:?})"),
        Err(e) => e.to_string(),
    }
}

/// A branch graph for If/Case/While: Data(0) -> Relu -> output 0.
fn branch(name: &str) -> Graph {
    let mut b = GraphBuilder::new(name);
    let x = data(&mut b, 0, &[2, 3]);
    let r = b.add_op("Relu", args(vec![one(x)], &[])).unwrap();
    b.set_output(out0(r), 0).unwrap();
    b.build_and_reset().unwrap()
}

/// A graph with a bit of everything: inputs, a const, binary/dynamic ops, a control edge, an
/// If node with two subgraphs, private attributes, output-desc attributes, NaN attributes.
fn rich_graph() -> Graph {
    let (mut b, [x, y]) = float_inputs("rich", [&[2, 3], &[2, 3]]);
    let c = b
        .create_const(
            Tensor::from_values(&[1.0f32, 2.0, 3.0, 4.0, 5.0, f32::NAN], vec![2, 3]).unwrap(),
            None,
        )
        .unwrap();
    let add = b.add_op("Add", args(vec![one(x), one(y)], &[])).unwrap();
    let mul = b
        .add_op("Mul", args(vec![one(out0(add)), one(c)], &[]))
        .unwrap();
    let cat = b
        .add_op(
            "ConcatD",
            args(
                vec![vec![Some(out0(mul)), Some(x), Some(y)]],
                &[("concat_dim", ints(0))],
            ),
        )
        .unwrap();
    let split = split_d(&mut b, out0(cat), 3);
    let cond = scalar_of(&mut b, 2, Some("cond".into()), "Data", DataType::BOOL).unwrap();
    let mut if_args = args(
        vec![
            one(cond),
            vec![Some(OutPort {
                node: split,
                index: 1,
            })],
        ],
        &[],
    );
    if_args.output_counts.insert("output".into(), 1);
    if_args.subgraphs = vec![vec![branch("then")], vec![branch("else")]];
    if_args.name = Some("branchy".into());
    let iff = b.add_op("If", if_args).unwrap();
    b.add_control_dependency(iff, &[add]).unwrap();
    {
        let g = b.graph_mut();
        let n = g.node_mut(mul).unwrap();
        n.private_attrs
            .insert("_nan".into(), AttrValue::Float(f32::NAN));
        n.private_attrs.insert(
            "_list".into(),
            AttrValue::ListFloat(vec![f32::INFINITY, -0.0, f32::NEG_INFINITY]),
        );
        n.outputs[0]
            .desc
            .attrs
            .insert("_out_attr".into(), AttrValue::String("tag".into()));
        n.outputs[0].desc.format = Format::NCHW;
        g.attrs.insert(
            "graph_attr".into(),
            AttrValue::ListString(vec!["a".into(), "".into()]),
        );
    }
    b.set_output(
        OutPort {
            node: split,
            index: 2,
        },
        0,
    )
    .unwrap();
    b.set_output(out0(iff), 1).unwrap();
    b.build_and_reset().unwrap()
}

/// A small graph: two inputs, Add, Relu, a control edge.
fn small_graph() -> Graph {
    let (mut b, [x, y]) = float_inputs("s", [&[2], &[2]]);
    let a = b.add_op("Add", args(vec![one(x), one(y)], &[])).unwrap();
    let r = b.add_op("Relu", args(vec![one(out0(a))], &[])).unwrap();
    b.add_control_dependency(r, &[x.node]).unwrap();
    b.graph_mut()
        .node_mut(r)
        .unwrap()
        .private_attrs
        .insert("_p".into(), ints(7));
    b.set_output(out0(r), 0).unwrap();
    b.build_and_reset().unwrap()
}

/// Everything a caller might do with a graph that loaded; none of it may panic.
fn exercise(g: &Graph) {
    let _ = g.topo_order();
    let _ = g.validate();
    let _ = g.input_nodes();
    let _ = dump::readable(g);
    let _ = dump::txt(g);
    let _ = to_bytes(g);
    let _ = g.check_integrity();
    for id in g.nodes() {
        let _ = g.out_edges(id);
        let _ = g.producer(id, 0);
    }
    let _ = g.clone() == *g;
}

/// Runs `from_bytes` (and, on success, [`exercise`]) catching panics.
fn load_no_panic(bytes: &[u8]) -> std::result::Result<bool, String> {
    catch_unwind(AssertUnwindSafe(|| match from_bytes(bytes) {
        Ok(g) => {
            exercise(&g);
            true
        }
        Err(_) => false,
    }))
    .map_err(|p| {
        p.downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    })
}

/// Deterministic pseudo-random bytes (xorshift64*).
fn pseudo_random(seed: u64, n: usize) -> Vec<u8> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            (s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
        })
        .collect()
}

/// a -> b -> c by data edges, a => b => c by control edges, graph output b:0.
fn chain() -> (Graph, NodeId, NodeId, NodeId) {
    let mut g = Graph::new("chain");
    let [a, b, c] = relus(&mut g, [("a", 0), ("b", 1), ("c", 1)]);
    link(&mut g, a, b, 0);
    link(&mut g, b, c, 0);
    g.add_control_edge(a, b).unwrap();
    g.add_control_edge(b, c).unwrap();
    g.set_output(0, out0(b)).unwrap();
    g.set_output(1, out0(c)).unwrap();
    (g, a, b, c)
}

/// A FLOAT scalar graph input of type `op_type` (the builder's checks under test).
fn scalar_input(
    b: &mut GraphBuilder,
    index: i64,
    name: Option<String>,
    op_type: &str,
) -> es_core::Result<OutPort> {
    scalar_of(b, index, name, op_type, DataType::FLOAT)
}

/// A scalar graph input of type `op_type` and dtype `dt`.
fn scalar_of(
    b: &mut GraphBuilder,
    index: i64,
    name: Option<String>,
    op_type: &str,
    dt: DataType,
) -> es_core::Result<OutPort> {
    b.create_input(index, name, op_type, dt, Format::ND, Shape::scalar())
}
