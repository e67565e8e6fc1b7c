//! Tests of the pattern matcher and the subgraph rewriter (`es_core::pattern`): shared helpers
//! here, one module per area.

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

/// Pattern Relu(Add(x, y)).
fn add_relu_pattern() -> Pattern {
    let mut b = GraphBuilder::new("add_relu");
    let x = data(&mut b, 0, &[2]);
    let y = data(&mut b, 1, &[2]);
    let a = op(&mut b, "Add", &[x, y]);
    let r = op(&mut b, "Relu", &[a]);
    Pattern::new(finish(b, &[r])).unwrap()
}

mod boundary;
mod carry_over;
mod explain;
mod matching;
mod scale;
