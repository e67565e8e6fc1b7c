//! Tests of the pattern matcher and the subgraph rewriter (`es_core::pattern`): shared helpers
//! here, one module per area.

#[path = "../common/mod.rs"]
mod common;

use es_core::attr::AttrValue;
use es_core::builder::{GraphBuilder, OpArgs};
use es_core::graph::{Graph, NodeId, OutPort};
use es_core::pattern::{
    explain_match, find_matches, rewrite, rewrite_matches, MatchExplanation, MatchResult,
    NoMatchReason, Pattern, PatternMatcherConfig, SubgraphBoundary, SubgraphRewriter,
};
use es_core::{DataType, Format, Shape, Tensor, TensorDesc};
use proptest::prelude::*;
use std::collections::{BTreeSet, HashMap, HashSet};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

fn data(b: &mut GraphBuilder, index: i64, dims: &[i64]) -> OutPort {
    b.create_input(
        index,
        Some(format!("x{index}")),
        "Data",
        DataType::FLOAT,
        Format::ND,
        Shape::from_slice(dims),
    )
    .unwrap()
}

/// A builder `name` with float inputs x0.. of the given dims.
fn inputs_dims<const N: usize>(name: &str, dims: [&[i64]; N]) -> (GraphBuilder, [OutPort; N]) {
    common::inputs_with(name, dims, data)
}

/// A builder `name` with `N` float inputs x0.. of the same dims.
fn inputs_of<const N: usize>(name: &str, dims: &[i64]) -> (GraphBuilder, [OutPort; N]) {
    inputs_dims(name, [dims; N])
}

/// A builder `name` with `N` float [2] inputs x0...
fn inputs<const N: usize>(name: &str) -> (GraphBuilder, [OutPort; N]) {
    inputs_of(name, &[2])
}

fn op_named(
    b: &mut GraphBuilder,
    op: &str,
    inputs: &[Option<OutPort>],
    attrs: &[(&str, AttrValue)],
    name: Option<&str>,
) -> OutPort {
    let mut a = OpArgs {
        inputs: inputs.iter().map(|p| vec![*p]).collect(),
        name: name.map(str::to_string),
        ..Default::default()
    };
    for (k, v) in attrs {
        a.attrs.insert((*k).into(), v.clone());
    }
    let id = b.add_op(op, a).unwrap();
    OutPort { node: id, index: 0 }
}

/// MatMulV2 on (x1, x2, bias, offset_w).
fn matmul_v2(b: &mut GraphBuilder, inputs: [Option<OutPort>; 4], name: Option<&str>) -> OutPort {
    op_named(b, "MatMulV2", &inputs, &[], name)
}

fn op(b: &mut GraphBuilder, op: &str, inputs: &[OutPort]) -> OutPort {
    let ins: Vec<Option<OutPort>> = inputs.iter().map(|p| Some(*p)).collect();
    op_named(b, op, &ins, &[], None)
}

fn cst(b: &mut GraphBuilder, v: f32) -> OutPort {
    b.create_const(Tensor::from_values(&[v], vec![1]).unwrap(), None)
        .unwrap()
}

fn finish(mut b: GraphBuilder, outs: &[OutPort]) -> Graph {
    for (i, p) in outs.iter().enumerate() {
        b.set_output(*p, i).unwrap();
    }
    b.build_and_reset().unwrap()
}

fn cfg(const_value_match: bool, ir_attr_match: bool, commutative: bool) -> PatternMatcherConfig {
    PatternMatcherConfig {
        const_value_match,
        ir_attr_match,
        commutative,
    }
}

fn ops_of(g: &Graph) -> Vec<String> {
    g.nodes()
        .iter()
        .map(|id| g.node(*id).unwrap().op_type.to_string())
        .collect()
}

fn name_of(g: &Graph, id: NodeId) -> String {
    g.node(id).unwrap().name.to_string()
}

fn check(g: &Graph) {
    g.check_integrity().unwrap();
    g.validate().unwrap();
}

/// The pattern `name` whose outputs `body` makes from `N` float [2] inputs.
fn pattern_of<const N: usize>(
    name: &str,
    body: impl FnOnce(&mut GraphBuilder, [OutPort; N]) -> Vec<OutPort>,
) -> Pattern {
    let (mut b, xs) = inputs(name);
    let outs = body(&mut b, xs);
    Pattern::new(finish(b, &outs)).unwrap()
}

/// Pattern Relu(Relu(x)).
fn relu2_pattern() -> Pattern {
    pattern_of("relu2", |b, [x]| {
        let r = op(b, "Relu", &[x]);
        vec![op(b, "Relu", &[r])]
    })
}

/// A builder `name` with x (a float [2] input), a = Add(x, x) and r = Relu(a): (b, [x, a, r]).
fn add_self_relu(name: &str) -> (GraphBuilder, [OutPort; 3]) {
    let (mut b, [x]) = inputs(name);
    let a = op(&mut b, "Add", &[x, x]);
    let r = op(&mut b, "Relu", &[a]);
    (b, [x, a, r])
}

/// Pattern Relu(Add(x, y)).
fn add_relu_pattern() -> Pattern {
    let (mut b, [x, y]) = inputs("add_relu");
    let a = op(&mut b, "Add", &[x, y]);
    let r = op(&mut b, "Relu", &[a]);
    Pattern::new(finish(b, &[r])).unwrap()
}

mod boundary;
mod carry_over;
mod explain;
mod matching;
mod owned;
mod scale;
