//! Tests of the pattern matcher and the subgraph rewriter (`es_core::pattern`).

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

// ---------------------------------------------------------------------------------------------
// Basic matching and rewriting
// ---------------------------------------------------------------------------------------------

#[test]
fn config_default() {
    let c = PatternMatcherConfig::default();
    assert!(!c.const_value_match && !c.ir_attr_match && c.commutative);
}

#[test]
fn add_relu_fused_into_replacement() {
    let mut b = GraphBuilder::new("g");
    let x = data(&mut b, 0, &[2]);
    let y = data(&mut b, 1, &[2]);
    let a = op(&mut b, "Add", &[x, y]);
    let r = op(&mut b, "Relu", &[a]);
    let n = op(&mut b, "Neg", &[r]);
    let mut g = finish(b, &[n, r]);
    let p = add_relu_pattern();
    let ms = find_matches(&g, &p, PatternMatcherConfig::default()).unwrap();
    assert_eq!(ms.len(), 1);
    let m = &ms[0];
    assert_eq!(m.pattern_name, "add_relu");
    assert_eq!(m.inputs, vec![x, y]);
    assert_eq!(m.outputs, vec![r]);
    assert_eq!(m.nodes.len(), 2);
    assert_eq!(m.captured("x0", 0), Some(x));
    assert_eq!(m.captured("Add_0", 0).map(|p| p.node), Some(a.node));
    let text = m.to_text(&g);
    assert!(text.contains("add_relu"), "{text}");
    assert!(text.contains("Relu"), "{text}");
    assert!(text.contains("x0:0"), "{text}");

    // Replacement: Relu(Mul(x, y)) — any library op will do.
    let mut rb = GraphBuilder::new("rep");
    let rx = data(&mut rb, 0, &[2]);
    let ry = data(&mut rb, 1, &[2]);
    let mu = op(&mut rb, "Mul", &[rx, ry]);
    let rr = op(&mut rb, "Relu", &[mu]);
    let rep = finish(rb, &[rr]);
    let created = SubgraphRewriter
        .rewrite(&mut g, &SubgraphBoundary::from(m), &rep)
        .unwrap();
    assert_eq!(created.len(), 2);
    check(&g);
    assert_eq!(ops_of(&g), vec!["Data", "Data", "Neg", "Mul", "Relu"]);
    let new_relu = OutPort {
        node: created[1],
        index: 0,
    };
    // The graph output and the Neg consumer both moved.
    assert_eq!(g.outputs[1], new_relu);
    assert_eq!(g.producer(n.node, 0).unwrap(), Some(new_relu));
    assert_eq!(
        g.producer(created[0], 0).unwrap(),
        Some(x),
        "replacement input 0 is wired to boundary input 0"
    );
    assert_eq!(g.producer(created[0], 1).unwrap(), Some(y));
}

#[test]
fn matmul_add_fused_into_matmul_with_bias() {
    let mut b = GraphBuilder::new("g");
    let a = data(&mut b, 0, &[2, 3]);
    let w = data(&mut b, 1, &[3, 4]);
    let bias = data(&mut b, 2, &[4]);
    let mm = op_named(
        &mut b,
        "MatMulV2",
        &[Some(a), Some(w), None, None],
        &[],
        None,
    );
    let ad = op(&mut b, "Add", &[mm, bias]);
    let out = op(&mut b, "Relu", &[ad]);
    let mut g = finish(b, &[out]);

    let mut pb = GraphBuilder::new("matmul_add");
    let px = data(&mut pb, 0, &[2, 3]);
    let pw = data(&mut pb, 1, &[3, 4]);
    let pbias = data(&mut pb, 2, &[4]);
    let pmm = op_named(
        &mut pb,
        "MatMulV2",
        &[Some(px), Some(pw), None, None],
        &[],
        None,
    );
    let pad = op(&mut pb, "Add", &[pmm, pbias]);
    let p = Pattern::new(finish(pb, &[pad])).unwrap();

    let mut rb = GraphBuilder::new("gemm");
    let rx = data(&mut rb, 0, &[2, 3]);
    let rw = data(&mut rb, 1, &[3, 4]);
    let rbias = data(&mut rb, 2, &[4]);
    let rmm = op_named(
        &mut rb,
        "MatMulV2",
        &[Some(rx), Some(rw), Some(rbias), None],
        &[],
        Some("gemm"),
    );
    let rep = finish(rb, &[rmm]);

    let ms = find_matches(&g, &p, PatternMatcherConfig::default()).unwrap();
    assert_eq!(ms.len(), 1);
    assert_eq!(ms[0].inputs, vec![a, w, bias]);
    let created = rewrite(&mut g, &ms[0].to_boundary(), &rep).unwrap();
    check(&g);
    assert_eq!(ops_of(&g), vec!["Data", "Data", "Data", "Relu", "MatMulV2"]);
    assert_eq!(g.producer(created[0], 2).unwrap(), Some(bias));
    assert_eq!(
        g.producer(out.node, 0).unwrap(),
        Some(OutPort {
            node: created[0],
            index: 0
        })
    );
    assert!(name_of(&g, created[0]).ends_with("gemm"));
}

/// Pattern Add(x, Const 0).
fn add_zero_pattern() -> Pattern {
    let mut b = GraphBuilder::new("add_zero");
    let x = data(&mut b, 0, &[1]);
    let z = cst(&mut b, 0.0);
    let a = op(&mut b, "Add", &[x, z]);
    Pattern::new(finish(b, &[a])).unwrap()
}

fn identity_replacement() -> Graph {
    let mut b = GraphBuilder::new("ident");
    let x = data(&mut b, 0, &[1]);
    let i = op(&mut b, "Identity", &[x]);
    finish(b, &[i])
}

#[test]
fn add_zero_replaced_by_identity_with_const_value_match() {
    let mut b = GraphBuilder::new("g");
    let x = data(&mut b, 0, &[1]);
    let z = cst(&mut b, 0.0);
    let one = cst(&mut b, 1.0);
    let a0 = op(&mut b, "Add", &[x, z]);
    let a1 = op(&mut b, "Add", &[a0, one]);
    let mut g = finish(b, &[a1]);
    let p = add_zero_pattern();
    // Value matching off: both Adds of a constant match.
    let ms = find_matches(&g, &p, cfg(false, false, true)).unwrap();
    assert_eq!(ms.len(), 2);
    // On: only the Add of zero.
    let ms = find_matches(&g, &p, cfg(true, false, true)).unwrap();
    assert_eq!(ms.len(), 1);
    assert_eq!(ms[0].target_of(p.graph().outputs[0].node), Some(a0.node));
    let created = rewrite(&mut g, &ms[0].to_boundary(), &identity_replacement()).unwrap();
    check(&g);
    assert_eq!(ops_of(&g), vec!["Data", "Const", "Add", "Identity"]);
    assert_eq!(
        g.producer(a1.node, 0).unwrap(),
        Some(OutPort {
            node: created[0],
            index: 0
        })
    );
    assert_eq!(g.producer(created[0], 0).unwrap(), Some(x));
}

#[test]
fn commutative_matching() {
    let mut b = GraphBuilder::new("g");
    let x = data(&mut b, 0, &[1]);
    let z = cst(&mut b, 0.0);
    let a = op(&mut b, "Add", &[z, x]); // constant first
    let g = finish(b, &[a]);
    let p = add_zero_pattern();
    let ms = find_matches(&g, &p, cfg(true, false, true)).unwrap();
    assert_eq!(ms.len(), 1);
    assert_eq!(ms[0].inputs, vec![x]);
    assert!(find_matches(&g, &p, cfg(true, false, false))
        .unwrap()
        .is_empty());
    // Sub is not commutative.
    let mut b = GraphBuilder::new("g2");
    let x = data(&mut b, 0, &[1]);
    let z = cst(&mut b, 0.0);
    let s = op(&mut b, "Sub", &[z, x]);
    let g2 = finish(b, &[s]);
    let mut pb = GraphBuilder::new("sub_zero");
    let px = data(&mut pb, 0, &[1]);
    let pz = cst(&mut pb, 0.0);
    let ps = op(&mut pb, "Sub", &[px, pz]);
    let p2 = Pattern::new(finish(pb, &[ps])).unwrap();
    assert!(find_matches(&g2, &p2, cfg(false, false, true))
        .unwrap()
        .is_empty());
}

#[test]
fn commutative_nested_both_orders() {
    // Pattern Mul(Add(x, c), y) against Mul(y', Add(c', x')): both nodes swapped.
    let mut b = GraphBuilder::new("g");
    let x = data(&mut b, 0, &[1]);
    let y = data(&mut b, 1, &[1]);
    let c = cst(&mut b, 2.0);
    let a = op(&mut b, "Add", &[c, x]);
    let m = op(&mut b, "Mul", &[y, a]);
    let g = finish(b, &[m]);
    let mut pb = GraphBuilder::new("p");
    let px = data(&mut pb, 0, &[1]);
    let py = data(&mut pb, 1, &[1]);
    let pc = cst(&mut pb, 2.0);
    let pa = op(&mut pb, "Add", &[px, pc]);
    let pm = op(&mut pb, "Mul", &[pa, py]);
    let p = Pattern::new(finish(pb, &[pm])).unwrap();
    let ms = find_matches(&g, &p, cfg(true, false, true)).unwrap();
    assert_eq!(ms.len(), 1);
    assert_eq!(ms[0].inputs, vec![x, y]);
    assert!(find_matches(&g, &p, cfg(true, false, false))
        .unwrap()
        .is_empty());
}

#[test]
fn ir_attr_matching() {
    let slope = |v: f32| [("negative_slope", AttrValue::Float(v))];
    let mut b = GraphBuilder::new("g");
    let x = data(&mut b, 0, &[2]);
    let l1 = op_named(&mut b, "LeakyRelu", &[Some(x)], &slope(0.1), None);
    let l2 = op_named(&mut b, "LeakyRelu", &[Some(l1)], &slope(0.2), None);
    let l3 = op_named(&mut b, "LeakyRelu", &[Some(l2)], &slope(0.100_000_1), None);
    let g = finish(b, &[l3]);
    let mut pb = GraphBuilder::new("p");
    let px = data(&mut pb, 0, &[2]);
    let pl = op_named(&mut pb, "LeakyRelu", &[Some(px)], &slope(0.1), None);
    let p = Pattern::new(finish(pb, &[pl])).unwrap();
    let all = find_matches(&g, &p, cfg(false, false, true)).unwrap();
    assert_eq!(all.len(), 3);
    let on = find_matches(&g, &p, cfg(false, true, true)).unwrap();
    let got: Vec<NodeId> = on.iter().map(|m| m.outputs[0].node).collect();
    assert_eq!(got, vec![l1.node, l3.node], "0.1000001 ~ 0.1 within 1e-5");
}

#[test]
fn multi_output_pattern() {
    // Pattern: r = Relu(x); out0 = Abs(r); out1 = Neg(r).
    let mut pb = GraphBuilder::new("fork");
    let px = data(&mut pb, 0, &[2]);
    let pr = op(&mut pb, "Relu", &[px]);
    let pa = op(&mut pb, "Abs", &[pr]);
    let pn = op(&mut pb, "Neg", &[pr]);
    let p = Pattern::new(finish(pb, &[pa, pn])).unwrap();

    let mut b = GraphBuilder::new("g");
    let x = data(&mut b, 0, &[2]);
    let e = op(&mut b, "Exp", &[x]);
    let r = op(&mut b, "Relu", &[e]);
    let n = op(&mut b, "Neg", &[r]);
    let a = op(&mut b, "Abs", &[r]);
    let s = op(&mut b, "Add", &[a, n]);
    let mut g = finish(b, &[s, n]);
    let ms = find_matches(&g, &p, PatternMatcherConfig::default()).unwrap();
    assert_eq!(ms.len(), 1);
    assert_eq!(ms[0].inputs, vec![e]);
    assert_eq!(ms[0].outputs, vec![a, n]);

    // Replacement with two outputs: (Exp(x), Relu(x)).
    let mut rb = GraphBuilder::new("rep2");
    let rx = data(&mut rb, 0, &[2]);
    let r0 = op(&mut rb, "Exp", &[rx]);
    let r1 = op(&mut rb, "Relu", &[rx]);
    let rep = finish(rb, &[r0, r1]);
    let created = rewrite(&mut g, &ms[0].to_boundary(), &rep).unwrap();
    check(&g);
    let o0 = OutPort {
        node: created[0],
        index: 0,
    };
    let o1 = OutPort {
        node: created[1],
        index: 0,
    };
    assert_eq!(g.producer(s.node, 0).unwrap(), Some(o0));
    assert_eq!(g.producer(s.node, 1).unwrap(), Some(o1));
    assert_eq!(g.outputs, vec![s, o1]);
    assert_eq!(g.node_count(), 5);

    // Count mismatch: an error, graph unchanged.
    let before = g.clone();
    let ms = find_matches(&g, &add_relu_pattern(), PatternMatcherConfig::default()).unwrap();
    assert!(ms.is_empty());
    let bad = SubgraphBoundary::new(vec![created[0]], vec![], vec![o0]);
    assert!(rewrite(&mut g, &bad, &rep).is_err());
    assert!(g == before);
}

#[test]
fn passthrough_replacement() {
    // Add(x, 0) replaced by x itself (the replacement's output is its input).
    let mut b = GraphBuilder::new("g");
    let x = data(&mut b, 0, &[1]);
    let z = cst(&mut b, 0.0);
    let a = op(&mut b, "Add", &[x, z]);
    let r = op(&mut b, "Relu", &[a]);
    let mut g = finish(b, &[r, a]);
    let mut rb = GraphBuilder::new("pass");
    let rx = data(&mut rb, 0, &[1]);
    let rep = finish(rb, &[rx]);
    let ms = find_matches(&g, &add_zero_pattern(), cfg(true, false, true)).unwrap();
    assert_eq!(ms.len(), 1);
    assert!(rewrite(&mut g, &ms[0].to_boundary(), &rep)
        .unwrap()
        .is_empty());
    check(&g);
    assert_eq!(g.producer(r.node, 0).unwrap(), Some(x));
    assert_eq!(g.outputs, vec![r, x]);
}

// ---------------------------------------------------------------------------------------------
// Validity
// ---------------------------------------------------------------------------------------------

#[test]
fn inner_tensor_used_outside_is_no_match() {
    let p = add_relu_pattern();
    // Add consumed by Neg outside the match.
    let mut b = GraphBuilder::new("g");
    let x = data(&mut b, 0, &[2]);
    let a = op(&mut b, "Add", &[x, x]);
    let r = op(&mut b, "Relu", &[a]);
    let n = op(&mut b, "Neg", &[a]);
    let g = finish(b, &[r, n]);
    assert!(find_matches(&g, &p, PatternMatcherConfig::default())
        .unwrap()
        .is_empty());
    // Add as a graph output.
    let mut b = GraphBuilder::new("g2");
    let x = data(&mut b, 0, &[2]);
    let a = op(&mut b, "Add", &[x, x]);
    let r = op(&mut b, "Relu", &[a]);
    let g = finish(b, &[r, a]);
    assert!(find_matches(&g, &p, PatternMatcherConfig::default())
        .unwrap()
        .is_empty());
    // A plain one matches, with the same port bound to both inputs.
    let mut b = GraphBuilder::new("g3");
    let x = data(&mut b, 0, &[2]);
    let a = op(&mut b, "Add", &[x, x]);
    let r = op(&mut b, "Relu", &[a]);
    let g = finish(b, &[r]);
    let ms = find_matches(&g, &p, PatternMatcherConfig::default()).unwrap();
    assert_eq!(ms.len(), 1);
    assert_eq!(ms[0].inputs, vec![x, x]);
}

#[test]
fn same_pattern_input_twice_binds_one_port() {
    let mut pb = GraphBuilder::new("square");
    let px = data(&mut pb, 0, &[2]);
    let pm = op(&mut pb, "Mul", &[px, px]);
    let p = Pattern::new(finish(pb, &[pm])).unwrap();
    let mut b = GraphBuilder::new("g");
    let x = data(&mut b, 0, &[2]);
    let y = data(&mut b, 1, &[2]);
    let m1 = op(&mut b, "Mul", &[x, y]);
    let m2 = op(&mut b, "Mul", &[m1, m1]);
    let g = finish(b, &[m2]);
    let ms = find_matches(&g, &p, PatternMatcherConfig::default()).unwrap();
    assert_eq!(ms.len(), 1);
    assert_eq!(ms[0].outputs, vec![m2]);
    assert_eq!(ms[0].inputs, vec![m1]);
}

#[test]
fn cycle_is_no_match() {
    // Pattern: r = Relu(x) (output 0); s = Add(r, y) (output 1).
    let mut pb = GraphBuilder::new("p");
    let px = data(&mut pb, 0, &[2]);
    let py = data(&mut pb, 1, &[2]);
    let pr = op(&mut pb, "Relu", &[px]);
    let ps = op(&mut pb, "Add", &[pr, py]);
    let p = Pattern::new(finish(pb, &[pr, ps])).unwrap();
    // y = Neg(r): contracting {r, s} would give R -> Neg -> R.
    let mut b = GraphBuilder::new("g");
    let x = data(&mut b, 0, &[2]);
    let r = op(&mut b, "Relu", &[x]);
    let n = op(&mut b, "Neg", &[r]);
    let e = op(&mut b, "Exp", &[n]);
    let s = op(&mut b, "Add", &[r, e]);
    let g = finish(b, &[s]);
    assert!(find_matches(&g, &p, cfg(false, false, false))
        .unwrap()
        .is_empty());
    // y independent of r: a match.
    let mut b = GraphBuilder::new("g2");
    let x = data(&mut b, 0, &[2]);
    let r = op(&mut b, "Relu", &[x]);
    let n = op(&mut b, "Neg", &[x]);
    let s = op(&mut b, "Add", &[r, n]);
    let o = op(&mut b, "Abs", &[r]);
    let g = finish(b, &[s, o]);
    let ms = find_matches(&g, &p, cfg(false, false, false)).unwrap();
    assert_eq!(ms.len(), 1);
    assert_eq!(ms[0].inputs, vec![x, n]);
}

#[test]
fn cycle_through_control_edge_is_no_match() {
    // Pattern: r = Relu(x) (output 0); s = Add(r, y) (output 1).
    let mut pb = GraphBuilder::new("p");
    let px = data(&mut pb, 0, &[2]);
    let py = data(&mut pb, 1, &[2]);
    let pr = op(&mut pb, "Relu", &[px]);
    let ps = op(&mut pb, "Add", &[pr, py]);
    let p = Pattern::new(finish(pb, &[pr, ps])).unwrap();
    let mut b = GraphBuilder::new("g");
    let x = data(&mut b, 0, &[2]);
    let x2 = data(&mut b, 1, &[2]);
    let r = op(&mut b, "Relu", &[x]);
    let n = op(&mut b, "Neg", &[r]);
    let e = op(&mut b, "Exp", &[x2]);
    let s = op(&mut b, "Add", &[r, e]);
    let g0 = finish(b, &[s, n]);
    let c = cfg(false, false, false);
    assert_eq!(find_matches(&g0, &p, c).unwrap().len(), 1);
    // Neg --control--> Exp: R -> Neg -> Exp -> R after contraction.
    let mut g = g0.clone();
    g.add_control_edge(n.node, e.node).unwrap();
    g.validate().unwrap();
    assert!(find_matches(&g, &p, c).unwrap().is_empty());
    // Control edges between the match and the rest move to the replacement.
    let mut g = g0.clone();
    g.add_control_edge(x2.node, r.node).unwrap();
    g.add_control_edge(s.node, n.node).unwrap();
    let ms = find_matches(&g, &p, c).unwrap();
    assert_eq!(ms.len(), 1);
    let mut rb = GraphBuilder::new("rep");
    let rx = data(&mut rb, 0, &[2]);
    let ry = data(&mut rb, 1, &[2]);
    let r0 = op(&mut rb, "Abs", &[rx]);
    let r1 = op(&mut rb, "Mul", &[r0, ry]);
    let rep = finish(rb, &[r0, r1]);
    let created = rewrite(&mut g, &ms[0].to_boundary(), &rep).unwrap();
    check(&g);
    for id in &created {
        let node = g.node(*id).unwrap();
        assert_eq!(node.in_control, vec![x2.node]);
        assert_eq!(node.out_control, vec![n.node]);
    }
}

#[test]
fn rewrite_checks_leave_graph_unchanged() {
    let mut b = GraphBuilder::new("g");
    let x = data(&mut b, 0, &[2]);
    let a = op(&mut b, "Add", &[x, x]);
    let r = op(&mut b, "Relu", &[a]);
    let n = op(&mut b, "Neg", &[a]);
    let mut g = finish(b, &[r, n]);
    let before = g.clone();
    let mut rb = GraphBuilder::new("rep");
    let rx = data(&mut rb, 0, &[2]);
    let ry = data(&mut rb, 1, &[2]);
    let mu = op(&mut rb, "Mul", &[rx, ry]);
    let rep = finish(rb, &[mu]);
    // Inner tensor (the Add) used outside.
    let bd = SubgraphBoundary::new(vec![a.node, r.node], vec![x, x], vec![r]);
    assert!(rewrite(&mut g, &bd, &rep).is_err());
    // Input produced inside.
    let bd = SubgraphBoundary::new(vec![a.node, r.node], vec![x, a], vec![r]);
    assert!(rewrite(&mut g, &bd, &rep).is_err());
    // Output produced outside.
    let bd = SubgraphBoundary::new(vec![r.node], vec![a, x], vec![n]);
    assert!(rewrite(&mut g, &bd, &rep).is_err());
    // Node listed twice.
    let bd = SubgraphBoundary::new(vec![r.node, r.node], vec![a, x], vec![r]);
    assert!(rewrite(&mut g, &bd, &rep).is_err());
    // Wrong input count.
    let bd = SubgraphBoundary::new(vec![r.node], vec![a], vec![r]);
    assert!(rewrite(&mut g, &bd, &rep).is_err());
    assert!(g == before);
    g.check_integrity().unwrap();
    // A hand-made boundary that is fine.
    let bd = SubgraphBoundary::new(vec![r.node], vec![a, x], vec![r]);
    rewrite(&mut g, &bd, &rep).unwrap();
    check(&g);
}

#[test]
fn matches_valid_alone_but_cyclic_together_are_refused_atomically() {
    // Pattern: r = Relu(x) (output 0), s = Add(x, y) (output 1): y feeds s only.
    let mut pb = GraphBuilder::new("p");
    let px = data(&mut pb, 0, &[2]);
    let py = data(&mut pb, 1, &[2]);
    let pr = op(&mut pb, "Relu", &[px]);
    let ps = op(&mut pb, "Add", &[px, py]);
    let p = Pattern::new(finish(pb, &[pr, ps])).unwrap();
    let mut b = GraphBuilder::new("g");
    let x1 = data(&mut b, 0, &[2]);
    let x2 = data(&mut b, 1, &[2]);
    let r1 = op(&mut b, "Relu", &[x1]);
    let r2 = op(&mut b, "Relu", &[x2]);
    let y1 = op(&mut b, "Neg", &[r2]);
    let y2 = op(&mut b, "Neg", &[r1]);
    let s1 = op(&mut b, "Add", &[x1, y1]);
    let s2 = op(&mut b, "Add", &[x2, y2]);
    let mut g = finish(b, &[s1, s2]);
    let ms = find_matches(&g, &p, PatternMatcherConfig::default()).unwrap();
    assert_eq!(ms.len(), 2, "each match alone is valid");
    assert_eq!(ms[0].inputs, vec![x1, y1]);
    let mut rb = GraphBuilder::new("rep");
    let rx = data(&mut rb, 0, &[2]);
    let ry = data(&mut rb, 1, &[2]);
    // Both replacement outputs depend on both inputs (a block), so the two rewrites close
    // R1 -> Neg -> R2 -> Neg -> R1.
    let r1b = op(&mut rb, "Mul", &[rx, ry]);
    let r0 = op(&mut rb, "Abs", &[r1b]);
    let rep = finish(rb, &[r0, r1b]);
    let before = g.clone();
    assert!(rewrite_matches(&mut g, &ms, &rep).is_err());
    assert!(g == before);
    // One of them alone is fine.
    rewrite_matches(&mut g, &ms[..1], &rep).unwrap();
    check(&g);
}

#[test]
fn overlapping_matches_greedy_in_order() {
    let mut pb = GraphBuilder::new("relu2");
    let px = data(&mut pb, 0, &[2]);
    let p1 = op(&mut pb, "Relu", &[px]);
    let p2 = op(&mut pb, "Relu", &[p1]);
    let p = Pattern::new(finish(pb, &[p2])).unwrap();
    let mut b = GraphBuilder::new("g");
    let x = data(&mut b, 0, &[2]);
    let mut cur = x;
    let mut relus = Vec::new();
    for _ in 0..5 {
        cur = op(&mut b, "Relu", &[cur]);
        relus.push(cur.node);
    }
    let g = finish(b, &[cur]);
    let ms = find_matches(&g, &p, PatternMatcherConfig::default()).unwrap();
    let got: Vec<Vec<NodeId>> = ms.iter().map(MatchResult::target_nodes).collect();
    assert_eq!(
        got,
        vec![vec![relus[0], relus[1]], vec![relus[2], relus[3]]]
    );
    // Deterministic.
    assert_eq!(
        ms,
        find_matches(&g, &p, PatternMatcherConfig::default()).unwrap()
    );
}

#[test]
fn bad_patterns_are_errors() {
    // No output.
    let mut b = GraphBuilder::new("p");
    let x = data(&mut b, 0, &[2]);
    let _ = op(&mut b, "Relu", &[x]);
    assert!(Pattern::new(b.graph().clone()).is_err());
    // Output on a Data node.
    let mut b = GraphBuilder::new("p");
    let x = data(&mut b, 0, &[2]);
    assert!(Pattern::new(finish(b, &[x])).is_err());
    // Not connected.
    let mut b = GraphBuilder::new("p");
    let x = data(&mut b, 0, &[2]);
    let y = data(&mut b, 1, &[2]);
    let r = op(&mut b, "Relu", &[x]);
    let a = op(&mut b, "Abs", &[y]);
    assert!(Pattern::new(finish(b, &[r, a])).is_err());
}

// ---------------------------------------------------------------------------------------------
// explain_match
// ---------------------------------------------------------------------------------------------

/// An op with dynamic (or several) inputs: `inputs[i]` are the instances of IR input i.
fn op_dyn(
    b: &mut GraphBuilder,
    op: &str,
    inputs: Vec<Vec<Option<OutPort>>>,
    attrs: &[(&str, AttrValue)],
    name: Option<&str>,
) -> NodeId {
    let mut a = OpArgs {
        inputs,
        name: name.map(str::to_string),
        ..Default::default()
    };
    for (k, v) in attrs {
        a.attrs.insert((*k).into(), v.clone());
    }
    b.add_op(op, a).unwrap()
}

/// Pattern relu(add(x0, x1)) with named nodes.
fn named_add_relu_pattern() -> Pattern {
    let mut b = GraphBuilder::new("add_relu");
    let x = data(&mut b, 0, &[2]);
    let y = data(&mut b, 1, &[2]);
    let a = op_named(&mut b, "Add", &[Some(x), Some(y)], &[], Some("add"));
    let r = op_named(&mut b, "Relu", &[Some(a)], &[], Some("relu"));
    Pattern::new(finish(b, &[r])).unwrap()
}

/// The reason of a `NoMatch`, or a panic naming the match.
fn no_match(e: MatchExplanation) -> NoMatchReason {
    match e {
        MatchExplanation::NoMatch(r) => r,
        MatchExplanation::Matched(m) => panic!("unexpected match: {m:?}"),
    }
}

fn explain(g: &Graph, p: &Pattern, c: PatternMatcherConfig, at: OutPort) -> NoMatchReason {
    no_match(explain_match(g, p, c, at.node).unwrap())
}

#[test]
fn explain_matched_equals_find_matches() {
    let mut b = GraphBuilder::new("g");
    let x = data(&mut b, 0, &[2]);
    let y = data(&mut b, 1, &[2]);
    let a = op(&mut b, "Add", &[x, y]);
    let r = op(&mut b, "Relu", &[a]);
    let g = finish(b, &[r]);
    let p = named_add_relu_pattern();
    assert_eq!(p.anchor_op_type(), "Relu");
    let c = PatternMatcherConfig::default();
    let ms = find_matches(&g, &p, c).unwrap();
    assert_eq!(ms.len(), 1);
    match explain_match(&g, &p, c, r.node).unwrap() {
        MatchExplanation::Matched(m) => assert_eq!(m, ms[0]),
        MatchExplanation::NoMatch(why) => panic!("{why}"),
    }
    // A removed node is an error, not a panic.
    let mut g2 = g.clone();
    g2.remove_node(r.node).unwrap();
    assert!(explain_match(&g2, &p, c, r.node).is_err());
}

#[test]
fn explain_anchor_op_type_differs() {
    let mut b = GraphBuilder::new("g");
    let x = data(&mut b, 0, &[2]);
    let y = data(&mut b, 1, &[2]);
    let a = op_named(&mut b, "Add", &[Some(x), Some(y)], &[], Some("Add_3"));
    let r = op(&mut b, "Relu", &[a]);
    let g = finish(b, &[r]);
    let why = explain(
        &g,
        &named_add_relu_pattern(),
        PatternMatcherConfig::default(),
        a,
    );
    assert_eq!(why.pattern_node, "relu");
    assert_eq!(why.target_node.as_deref(), Some("Add_3"));
    assert!(why.reason.contains("op type Relu != Add"), "{why}");
    assert!(why.reason.contains("anchor"), "{why}");
    assert_eq!(
        why.to_string(),
        format!("pattern node 'relu' vs target node 'Add_3': {}", why.reason)
    );
}

#[test]
fn explain_inner_op_type_differs() {
    let mut b = GraphBuilder::new("g");
    let x = data(&mut b, 0, &[2]);
    let y = data(&mut b, 1, &[2]);
    let m = op_named(&mut b, "Mul", &[Some(x), Some(y)], &[], Some("Mul_3"));
    let r = op(&mut b, "Relu", &[m]);
    let g = finish(b, &[r]);
    let why = explain(
        &g,
        &named_add_relu_pattern(),
        PatternMatcherConfig::default(),
        r,
    );
    assert_eq!(why.pattern_node, "add");
    assert_eq!(why.target_node.as_deref(), Some("Mul_3"));
    assert!(why.reason.contains("op type Add != Mul"), "{why}");
    assert!(!why.reason.contains("anchor"), "{why}");
}

#[test]
fn explain_input_count_differs() {
    let mk = |name: &str, n: usize| {
        let mut b = GraphBuilder::new(name);
        let xs: Vec<Option<OutPort>> = (0..n).map(|i| Some(data(&mut b, i as i64, &[2]))).collect();
        let id = op_dyn(&mut b, "IdentityN", vec![xs], &[], Some("idn"));
        finish(b, &[OutPort { node: id, index: 0 }])
    };
    let p = Pattern::new(mk("p", 2)).unwrap();
    let g = mk("g", 3);
    let at = g.find("idn").unwrap();
    let why = no_match(explain_match(&g, &p, PatternMatcherConfig::default(), at).unwrap());
    assert_eq!(why.pattern_node, "idn");
    assert!(why.reason.contains("input count 2 != 3"), "{why}");
}

#[test]
fn explain_output_count_differs() {
    let mk = |name: &str, n: i64| {
        let mut b = GraphBuilder::new(name);
        let x = data(&mut b, 0, &[6]);
        let attrs = [
            ("split_dim", AttrValue::Int(0)),
            ("num_split", AttrValue::Int(n)),
        ];
        let id = op_dyn(&mut b, "SplitD", vec![vec![Some(x)]], &attrs, Some("split"));
        finish(b, &[OutPort { node: id, index: 0 }])
    };
    let p = Pattern::new(mk("p", 2)).unwrap();
    let g = mk("g", 3);
    let at = g.find("split").unwrap();
    let why = no_match(explain_match(&g, &p, PatternMatcherConfig::default(), at).unwrap());
    assert_eq!(why.pattern_node, "split");
    assert!(why.reason.contains("output count 2 != 3"), "{why}");
}

#[test]
fn explain_ir_attr_differs() {
    let slope = |v: f32| [("negative_slope", AttrValue::Float(v))];
    let mut b = GraphBuilder::new("g");
    let x = data(&mut b, 0, &[2]);
    let l = op_named(&mut b, "LeakyRelu", &[Some(x)], &slope(0.2), Some("lr"));
    let g = finish(b, &[l]);
    let mut pb = GraphBuilder::new("p");
    let px = data(&mut pb, 0, &[2]);
    let pl = op_named(
        &mut pb,
        "LeakyRelu",
        &[Some(px)],
        &slope(0.1),
        Some("leaky"),
    );
    let p = Pattern::new(finish(pb, &[pl])).unwrap();
    // Off: a match.
    assert!(matches!(
        explain_match(&g, &p, cfg(false, false, true), l.node).unwrap(),
        MatchExplanation::Matched(_)
    ));
    let why = explain(&g, &p, cfg(false, true, true), l);
    assert_eq!(why.pattern_node, "leaky");
    assert_eq!(why.target_node.as_deref(), Some("lr"));
    assert!(why.reason.contains("negative_slope"), "{why}");
    assert!(why.reason.contains("0.1 != 0.2"), "{why}");
}

#[test]
fn explain_const_value_differs() {
    let mut b = GraphBuilder::new("g");
    let x = data(&mut b, 0, &[1]);
    let one = cst(&mut b, 1.0);
    let a = op(&mut b, "Add", &[x, one]);
    let g = finish(b, &[a]);
    let mut pb = GraphBuilder::new("add_zero");
    let px = data(&mut pb, 0, &[1]);
    let pz = pb
        .create_const(
            Tensor::from_values(&[0.0f32], vec![1]).unwrap(),
            Some("zero".into()),
        )
        .unwrap();
    let pa = op_named(&mut pb, "Add", &[Some(px), Some(pz)], &[], Some("add"));
    let p = Pattern::new(finish(pb, &[pa])).unwrap();
    // Without commutative matching, the search fails exactly at the constant.
    let why = explain(&g, &p, cfg(true, false, false), a);
    assert_eq!(why.pattern_node, "zero");
    assert_eq!(
        why.target_node.as_deref(),
        Some(name_of(&g, one.node).as_str())
    );
    assert!(why.reason.contains("const value differs"), "{why}");
    assert!(why.reason.contains("00000000 != 0000803f"), "{why}");
    // Value matching off: a match.
    assert!(matches!(
        explain_match(&g, &p, cfg(false, false, false), a.node).unwrap(),
        MatchExplanation::Matched(_)
    ));
}

#[test]
fn explain_pattern_edge_not_in_target() {
    // Pattern mul(add(x, y), add): target Mul_3(Add(x, y), x).
    let mut pb = GraphBuilder::new("p");
    let px = data(&mut pb, 0, &[2]);
    let py = data(&mut pb, 1, &[2]);
    let pa = op_named(&mut pb, "Add", &[Some(px), Some(py)], &[], Some("add"));
    let pm = op_named(&mut pb, "Mul", &[Some(pa), Some(pa)], &[], Some("mul"));
    let p = Pattern::new(finish(pb, &[pm])).unwrap();
    let mut b = GraphBuilder::new("g");
    let x = data(&mut b, 0, &[2]);
    let y = data(&mut b, 1, &[2]);
    let a = op(&mut b, "Add", &[x, y]);
    let m = op_named(&mut b, "Mul", &[Some(a), Some(x)], &[], Some("Mul_3"));
    let g = finish(b, &[m]);
    let why = explain(&g, &p, cfg(false, false, false), m);
    assert_eq!(why.pattern_node, "add");
    assert_eq!(
        why.target_node.as_deref(),
        Some(name_of(&g, a.node).as_str())
    );
    assert!(
        why.reason
            .contains("input 1 of 'Mul_3' (matched by pattern node 'mul') in the target is produced by 'x0:0'"),
        "{why}"
    );
    assert!(
        why.reason.contains("the pattern needs output 0 of"),
        "{why}"
    );
    // The same pattern input used twice must bind one port.
    let mut pb = GraphBuilder::new("square");
    let px = data(&mut pb, 0, &[2]);
    let pm = op_named(&mut pb, "Mul", &[Some(px), Some(px)], &[], Some("sq"));
    let p = Pattern::new(finish(pb, &[pm])).unwrap();
    let mut b = GraphBuilder::new("g");
    let x = data(&mut b, 0, &[2]);
    let y = data(&mut b, 1, &[2]);
    let m = op(&mut b, "Mul", &[x, y]);
    let g = finish(b, &[m]);
    let why = explain(&g, &p, cfg(false, false, false), m);
    assert_eq!(why.pattern_node, "x0");
    assert!(why.reason.contains("produced by 'x1:0'"), "{why}");
    assert!(
        why.reason
            .contains("the pattern needs 'x0:0' (the tensor bound to pattern input 'x0')"),
        "{why}"
    );
    // An input the target leaves unconnected.
    let mut pb = GraphBuilder::new("mm_bias");
    let pa = data(&mut pb, 0, &[2, 3]);
    let pw = data(&mut pb, 1, &[3, 4]);
    let pbias = data(&mut pb, 2, &[4]);
    let pmm = op_named(
        &mut pb,
        "MatMulV2",
        &[Some(pa), Some(pw), Some(pbias), None],
        &[],
        Some("mm"),
    );
    let p = Pattern::new(finish(pb, &[pmm])).unwrap();
    let mut b = GraphBuilder::new("g");
    let a = data(&mut b, 0, &[2, 3]);
    let w = data(&mut b, 1, &[3, 4]);
    let mm = op_named(
        &mut b,
        "MatMulV2",
        &[Some(a), Some(w), None, None],
        &[],
        None,
    );
    let g = finish(b, &[mm]);
    let why = explain(&g, &p, PatternMatcherConfig::default(), mm);
    assert_eq!(why.pattern_node, "mm");
    assert!(
        why.reason
            .contains("input 2 of 'MatMulV2_0' in the target is unconnected"),
        "{why}"
    );
    assert!(why.reason.contains("pattern node 'x2'"), "{why}");
    // The other way round: the pattern leaves the bias unconnected, the target does not.
    let mut b = GraphBuilder::new("g");
    let a = data(&mut b, 0, &[2, 3]);
    let w = data(&mut b, 1, &[3, 4]);
    let bias = data(&mut b, 2, &[4]);
    let mm = op_named(
        &mut b,
        "MatMulV2",
        &[Some(a), Some(w), Some(bias), None],
        &[],
        None,
    );
    let g = finish(b, &[mm]);
    let mut pb = GraphBuilder::new("mm");
    let pa = data(&mut pb, 0, &[2, 3]);
    let pw = data(&mut pb, 1, &[3, 4]);
    let pmm = op_named(
        &mut pb,
        "MatMulV2",
        &[Some(pa), Some(pw), None, None],
        &[],
        Some("mm"),
    );
    let p = Pattern::new(finish(pb, &[pmm])).unwrap();
    let why = explain(&g, &p, PatternMatcherConfig::default(), mm);
    assert_eq!(why.pattern_node, "mm");
    assert!(why.reason.contains("is produced by 'x2:0'"), "{why}");
    assert!(
        why.reason
            .contains("the pattern leaves its input 2 unconnected"),
        "{why}"
    );
}

#[test]
fn explain_target_node_already_used() {
    // Pattern mul(r1(x0), r2(x1)) against Mul(r, r): r2 cannot take r, r1 has it.
    let mut pb = GraphBuilder::new("p");
    let px = data(&mut pb, 0, &[2]);
    let py = data(&mut pb, 1, &[2]);
    let r1 = op_named(&mut pb, "Relu", &[Some(px)], &[], Some("r1"));
    let r2 = op_named(&mut pb, "Relu", &[Some(py)], &[], Some("r2"));
    let pm = op_named(&mut pb, "Mul", &[Some(r1), Some(r2)], &[], Some("mul"));
    let p = Pattern::new(finish(pb, &[pm])).unwrap();
    let mut b = GraphBuilder::new("g");
    let x = data(&mut b, 0, &[2]);
    let r = op_named(&mut b, "Relu", &[Some(x)], &[], Some("the_relu"));
    let m = op(&mut b, "Mul", &[r, r]);
    let g = finish(b, &[m]);
    let why = explain(&g, &p, PatternMatcherConfig::default(), m);
    assert_eq!(why.pattern_node, "r2");
    assert_eq!(why.target_node.as_deref(), Some("the_relu"));
    assert!(
        why.reason.contains("already matched by pattern node 'r1'"),
        "{why}"
    );
}

#[test]
fn explain_boundary_not_self_contained() {
    let p = named_add_relu_pattern();
    // The Add is consumed by a Neg outside the match.
    let mut b = GraphBuilder::new("g");
    let x = data(&mut b, 0, &[2]);
    let a = op(&mut b, "Add", &[x, x]);
    let r = op(&mut b, "Relu", &[a]);
    let n = op_named(&mut b, "Neg", &[Some(a)], &[], Some("outsider"));
    let g = finish(b, &[r, n]);
    let why = explain(&g, &p, PatternMatcherConfig::default(), r);
    assert_eq!(why.pattern_node, "add");
    assert_eq!(
        why.target_node.as_deref(),
        Some(name_of(&g, a.node).as_str())
    );
    assert!(why.reason.contains("not self-contained"), "{why}");
    assert!(
        why.reason.contains("used outside the match by 'outsider'"),
        "{why}"
    );
    // The Add is a graph output.
    let mut b = GraphBuilder::new("g2");
    let x = data(&mut b, 0, &[2]);
    let a = op(&mut b, "Add", &[x, x]);
    let r = op(&mut b, "Relu", &[a]);
    let g = finish(b, &[r, a]);
    let why = explain(&g, &p, PatternMatcherConfig::default(), r);
    assert_eq!(why.pattern_node, "add");
    assert!(why.reason.contains("graph output"), "{why}");
}

#[test]
fn explain_pattern_input_produced_inside() {
    // Pattern s = add(r = relu(x0), x1) against Add(r, r): x1 would be bound to r's output.
    let mut pb = GraphBuilder::new("p");
    let px = data(&mut pb, 0, &[2]);
    let py = data(&mut pb, 1, &[2]);
    let pr = op_named(&mut pb, "Relu", &[Some(px)], &[], Some("relu"));
    let ps = op_named(&mut pb, "Add", &[Some(pr), Some(py)], &[], Some("add"));
    let p = Pattern::new(finish(pb, &[ps])).unwrap();
    let mut b = GraphBuilder::new("g");
    let x = data(&mut b, 0, &[2]);
    let r = op_named(&mut b, "Relu", &[Some(x)], &[], Some("R"));
    let s = op(&mut b, "Add", &[r, r]);
    let g = finish(b, &[s]);
    assert!(find_matches(&g, &p, PatternMatcherConfig::default())
        .unwrap()
        .is_empty());
    let why = explain(&g, &p, PatternMatcherConfig::default(), s);
    assert_eq!(why.pattern_node, "x1");
    assert_eq!(why.target_node.as_deref(), Some("R"));
    assert!(
        why.reason
            .contains("produced inside the match (by pattern node 'relu')"),
        "{why}"
    );
}

#[test]
fn explain_rewrite_would_create_cycle() {
    // As in `cycle_is_no_match`: contracting {r, s} would give R -> Neg -> Exp -> R.
    let mut pb = GraphBuilder::new("p");
    let px = data(&mut pb, 0, &[2]);
    let py = data(&mut pb, 1, &[2]);
    let pr = op_named(&mut pb, "Relu", &[Some(px)], &[], Some("relu"));
    let ps = op_named(&mut pb, "Add", &[Some(pr), Some(py)], &[], Some("add"));
    let p = Pattern::new(finish(pb, &[pr, ps])).unwrap();
    assert_eq!(p.anchor_op_type(), "Relu");
    let mut b = GraphBuilder::new("g");
    let x = data(&mut b, 0, &[2]);
    let r = op_named(&mut b, "Relu", &[Some(x)], &[], Some("R"));
    let n = op_named(&mut b, "Neg", &[Some(r)], &[], Some("N"));
    let e = op_named(&mut b, "Exp", &[Some(n)], &[], Some("E"));
    let s = op(&mut b, "Add", &[r, e]);
    let g = finish(b, &[s]);
    let why = explain(&g, &p, cfg(false, false, false), r);
    assert_eq!(why.pattern_node, "relu");
    assert_eq!(why.target_node.as_deref(), Some("R"));
    assert!(why.reason.contains("cycle"), "{why}");
    assert!(
        why.reason
            .contains("'N' uses the output of 'R' and reaches 'E', which feeds the match as pattern input 'x1'"),
        "{why}"
    );
}

#[test]
fn explain_ignores_claims_of_other_matches() {
    // Relu chain of 3 against relu(relu(x)): find_matches claims relus 0 and 1, so relu 2
    // is no anchor there; alone, relu 2 (over relu 1) matches.
    let mut pb = GraphBuilder::new("relu2");
    let px = data(&mut pb, 0, &[2]);
    let p1 = op(&mut pb, "Relu", &[px]);
    let p2 = op(&mut pb, "Relu", &[p1]);
    let p = Pattern::new(finish(pb, &[p2])).unwrap();
    let mut b = GraphBuilder::new("g");
    let x = data(&mut b, 0, &[2]);
    let r0 = op(&mut b, "Relu", &[x]);
    let r1 = op(&mut b, "Relu", &[r0]);
    let r2 = op(&mut b, "Relu", &[r1]);
    let g = finish(b, &[r2]);
    let c = PatternMatcherConfig::default();
    assert_eq!(find_matches(&g, &p, c).unwrap().len(), 1);
    // r1's output is consumed by r2 (outside {r0, r1}) but is the pattern output: fine.
    match explain_match(&g, &p, c, r1.node).unwrap() {
        MatchExplanation::Matched(m) => assert_eq!(m.target_nodes(), vec![r0.node, r1.node]),
        MatchExplanation::NoMatch(why) => panic!("{why}"),
    }
    // r2 over r1: r1's output is the inner tensor; only r2 consumes it, so a match.
    match explain_match(&g, &p, c, r2.node).unwrap() {
        MatchExplanation::Matched(m) => assert_eq!(m.target_nodes(), vec![r1.node, r2.node]),
        MatchExplanation::NoMatch(why) => panic!("{why}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Carry-over in rewrite
// ---------------------------------------------------------------------------------------------

/// Graph relu(add(x, y)) → Neg, with the Relu's output description and attributes set; the
/// boundary is {add, relu}.
fn carry_graph() -> (Graph, SubgraphBoundary, OutPort) {
    let mut b = GraphBuilder::new("g");
    let x = data(&mut b, 0, &[2]);
    let y = data(&mut b, 1, &[2]);
    let a = op(&mut b, "Add", &[x, y]);
    let r = op(&mut b, "Relu", &[a]);
    let n = op(&mut b, "Neg", &[r]);
    let mut g = finish(b, &[n]);
    let node = g.node_mut(r.node).unwrap();
    let d = &mut node.outputs[0].desc;
    d.format = Format::NCHW;
    d.origin_format = Format::NCHW;
    d.attrs.insert("_a".into(), AttrValue::Int(1));
    d.attrs.insert("_b".into(), AttrValue::Int(2));
    node.private_attrs
        .insert("_p".into(), AttrValue::String("old".into()));
    node.private_attrs.insert("_q".into(), AttrValue::Int(1));
    let bd = SubgraphBoundary::new(vec![a.node, r.node], vec![x, y], vec![r]);
    (g, bd, n)
}

/// Replacement mul(x, y); `edit` changes its Mul node before the rewrite.
fn carry_replacement(edit: impl FnOnce(&mut es_core::Node)) -> Graph {
    let mut b = GraphBuilder::new("rep");
    let x = data(&mut b, 0, &[2]);
    let y = data(&mut b, 1, &[2]);
    let m = op_named(&mut b, "Mul", &[Some(x), Some(y)], &[], Some("mul"));
    let mut rep = finish(b, &[m]);
    edit(rep.node_mut(m.node).unwrap());
    rep
}

#[test]
fn carry_over_desc_when_unknown() {
    let (mut g, bd, _) = carry_graph();
    let old = g.out_desc(bd.outputs[0]).unwrap().clone();
    let rep = carry_replacement(|n| n.outputs[0].desc = TensorDesc::default());
    let created = rewrite(&mut g, &bd, &rep).unwrap();
    check(&g);
    let d = &g.node(created[0]).unwrap().outputs[0].desc;
    assert_eq!(d.dtype, DataType::FLOAT);
    assert_eq!(d.shape.dims(), &[2]);
    assert_eq!(d.format, Format::NCHW);
    let mut without_attrs = old.clone();
    without_attrs.attrs = d.attrs.clone();
    assert_eq!(*d, without_attrs, "the whole description is carried");

    // Only the dtype unknown: the shape set by the replacement stays.
    let (mut g, bd, _) = carry_graph();
    let rep = carry_replacement(|n| {
        n.outputs[0].desc = TensorDesc::new(DataType::UNDEFINED, Shape::from_slice(&[7]))
    });
    let created = rewrite(&mut g, &bd, &rep).unwrap();
    let d = &g.node(created[0]).unwrap().outputs[0].desc;
    assert_eq!(d.dtype, DataType::FLOAT);
    assert_eq!(d.shape.dims(), &[7]);
    assert_eq!(
        d.format,
        Format::ND,
        "a partly known description keeps its format"
    );

    // Only the rank unknown: the dtype set by the replacement stays.
    let (mut g, bd, _) = carry_graph();
    let rep = carry_replacement(|n| {
        n.outputs[0].desc = TensorDesc::new(DataType::FLOAT16, Shape::unknown_rank())
    });
    let created = rewrite(&mut g, &bd, &rep).unwrap();
    let d = &g.node(created[0]).unwrap().outputs[0].desc;
    assert_eq!(d.dtype, DataType::FLOAT16);
    assert_eq!(d.shape.dims(), &[2]);
    assert_eq!(d.origin_shape.dims(), &[2]);
}

#[test]
fn carry_over_fills_unknown_dims_of_the_same_rank() {
    let (mut g, bd, _) = carry_graph();
    let rep = carry_replacement(|n| {
        n.outputs[0].desc = TensorDesc::new(DataType::FLOAT, Shape::from_slice(&[-1]))
    });
    let created = rewrite(&mut g, &bd, &rep).unwrap();
    assert_eq!(
        g.node(created[0]).unwrap().outputs[0].desc.shape.dims(),
        &[2]
    );

    // Another rank, or a known dim, is the replacement's to keep.
    let (mut g, bd, _) = carry_graph();
    let rep = carry_replacement(|n| {
        n.outputs[0].desc = TensorDesc::new(DataType::FLOAT, Shape::from_slice(&[-1, 2]))
    });
    let created = rewrite(&mut g, &bd, &rep).unwrap();
    assert_eq!(
        g.node(created[0]).unwrap().outputs[0].desc.shape.dims(),
        &[-1, 2]
    );
}

#[test]
fn carry_over_desc_not_when_set() {
    let (mut g, bd, _) = carry_graph();
    let set = TensorDesc::new(DataType::FLOAT16, Shape::from_slice(&[3]));
    let rep = carry_replacement(|n| n.outputs[0].desc = set.clone());
    let created = rewrite(&mut g, &bd, &rep).unwrap();
    let d = &g.node(created[0]).unwrap().outputs[0].desc;
    assert_eq!(d.dtype, DataType::FLOAT16);
    assert_eq!(d.shape.dims(), &[3]);
    assert_eq!(d.format, Format::ND);
}

#[test]
fn carry_over_output_attrs() {
    let (mut g, bd, n) = carry_graph();
    let rep = carry_replacement(|m| {
        m.outputs[0]
            .desc
            .attrs
            .insert("_b".into(), AttrValue::Int(9));
    });
    let created = rewrite(&mut g, &bd, &rep).unwrap();
    check(&g);
    let attrs = &g.node(created[0]).unwrap().outputs[0].desc.attrs;
    assert_eq!(attrs.get("_a"), Some(&AttrValue::Int(1)), "carried");
    assert_eq!(attrs.get("_b"), Some(&AttrValue::Int(9)), "not overwritten");
    assert_eq!(
        g.producer(n.node, 0).unwrap(),
        Some(OutPort {
            node: created[0],
            index: 0
        })
    );
}

#[test]
fn carry_over_private_attrs() {
    let (mut g, bd, _) = carry_graph();
    // The old Relu also gets an IR-like attribute that must not be carried.
    let relu = bd.outputs[0].node;
    g.node_mut(relu)
        .unwrap()
        .attrs
        .insert("negative_slope".into(), AttrValue::Float(0.5));
    let rep = carry_replacement(|m| {
        m.private_attrs.insert("_q".into(), AttrValue::Int(5));
    });
    let created = rewrite(&mut g, &bd, &rep).unwrap();
    let node = g.node(created[0]).unwrap();
    assert_eq!(
        node.private_attrs.get("_p"),
        Some(&AttrValue::String("old".into()))
    );
    assert_eq!(node.private_attrs.get("_q"), Some(&AttrValue::Int(5)));
    assert!(
        !node.attrs.contains_key("negative_slope"),
        "IR attributes are not carried"
    );
}

#[test]
fn carry_over_nothing_on_pass_through() {
    let (mut g, bd, n) = carry_graph();
    let x = bd.inputs[0];
    let mut rb = GraphBuilder::new("pass");
    let rx = data(&mut rb, 0, &[2]);
    let _ry = data(&mut rb, 1, &[2]);
    let rep = finish(rb, &[rx]);
    let before = g.node(x.node).unwrap().clone();
    assert!(rewrite(&mut g, &bd, &rep).unwrap().is_empty());
    check(&g);
    assert_eq!(g.producer(n.node, 0).unwrap(), Some(x));
    let after = g.node(x.node).unwrap();
    assert_eq!(after.private_attrs, before.private_attrs);
    assert_eq!(after.outputs[0].desc, before.outputs[0].desc);
}

// ---------------------------------------------------------------------------------------------
// Scale
// ---------------------------------------------------------------------------------------------

#[test]
fn rewrite_20k_block_chain() {
    const N: usize = 20_000;
    let mut b = GraphBuilder::new("chain");
    let x = data(&mut b, 0, &[2]);
    let mut cur = x;
    for _ in 0..N {
        // One constant per block: a constant shared by all blocks would make every removal
        // scan its 20k consumers (`Graph::remove_node`), which is not the rewriter's cost.
        let c = cst(&mut b, 1.0);
        let a = op(&mut b, "Add", &[cur, c]);
        cur = op(&mut b, "Relu", &[a]);
    }
    let mut g = finish(b, &[cur]);
    let p = add_relu_pattern();
    let ms = find_matches(&g, &p, PatternMatcherConfig::default()).unwrap();
    assert_eq!(ms.len(), N);
    let mut rb = GraphBuilder::new("rep");
    let rx = data(&mut rb, 0, &[2]);
    let ry = data(&mut rb, 1, &[2]);
    let mu = op(&mut rb, "Mul", &[rx, ry]);
    let rep = finish(rb, &[mu]);
    // One by one: a later match's input was an earlier match's output, so go backwards.
    let mut g1 = g.clone();
    for m in ms.iter().rev() {
        rewrite(&mut g1, &m.to_boundary(), &rep).unwrap();
    }
    assert_eq!(g1.node_count(), 2 * N + 1);
    check(&g1);
    // All at once, in order, following replaced inputs.
    let created = rewrite_matches(&mut g, &ms, &rep).unwrap();
    assert_eq!(created.len(), N);
    assert_eq!(g.node_count(), 2 * N + 1);
    check(&g);
    assert!(find_matches(&g, &p, PatternMatcherConfig::default())
        .unwrap()
        .is_empty());
}

// ---------------------------------------------------------------------------------------------
// Property test against a brute-force reference matcher
// ---------------------------------------------------------------------------------------------

/// A reference assignment: sorted (pattern node, target node) pairs.
type Assign = Vec<(NodeId, NodeId)>;

/// Every valid match of `p` in `g`, by exhaustive enumeration of injective assignments of the
/// pattern's non-Data nodes (and both input orders of commutative two-input nodes), with the
/// validity rules checked literally (cycle: a path leaving the match and coming back to it).
fn reference(g: &Graph, p: &Pattern, commutative: bool) -> BTreeSet<Assign> {
    let pg = p.graph();
    let pnodes: Vec<NodeId> = pg
        .nodes()
        .into_iter()
        .filter(|id| pg.node(*id).unwrap().op_type != "Data")
        .collect();
    let tnodes = g.nodes();
    let reg = es_core::ops::global_registry();
    let mut out = BTreeSet::new();
    let k = pnodes.len();
    let mut idx = vec![0usize; k];
    'outer: loop {
        let assign: Vec<NodeId> = idx.iter().map(|&i| tnodes[i]).collect();
        let distinct: HashSet<NodeId> = assign.iter().copied().collect();
        if distinct.len() == k {
            let comm: Vec<bool> = pnodes
                .iter()
                .map(|q| {
                    let n = pg.node(*q).unwrap();
                    commutative
                        && n.inputs.len() == 2
                        && reg.get(&n.op_type).map(|p| p.commutative).unwrap_or(false)
                })
                .collect();
            let nswap = comm.iter().filter(|c| **c).count();
            for mask in 0..(1u32 << nswap) {
                let mut bit = 0;
                let swaps: Vec<bool> = comm
                    .iter()
                    .map(|c| {
                        if *c {
                            bit += 1;
                            mask >> (bit - 1) & 1 == 1
                        } else {
                            false
                        }
                    })
                    .collect();
                if ref_valid(g, p, &pnodes, &assign, &swaps) {
                    let mut a: Assign = pnodes.iter().copied().zip(assign.clone()).collect();
                    a.sort();
                    out.insert(a);
                    break;
                }
            }
        }
        // Next tuple.
        let mut i = 0;
        loop {
            if i == k {
                break 'outer;
            }
            idx[i] += 1;
            if idx[i] < tnodes.len() {
                break;
            }
            idx[i] = 0;
            i += 1;
        }
    }
    out
}

fn ref_valid(g: &Graph, p: &Pattern, pnodes: &[NodeId], assign: &[NodeId], swaps: &[bool]) -> bool {
    let pg = p.graph();
    let t_of: HashMap<NodeId, usize> = pnodes.iter().enumerate().map(|(i, q)| (*q, i)).collect();
    let matched: HashSet<NodeId> = assign.iter().copied().collect();
    let mut data_bind: HashMap<NodeId, OutPort> = HashMap::new();
    for (i, &q) in pnodes.iter().enumerate() {
        let pn = pg.node(q).unwrap();
        let tn = g.node(assign[i]).unwrap();
        if pn.op_type != tn.op_type
            || pn.inputs.len() != tn.inputs.len()
            || pn.outputs.len() != tn.outputs.len()
        {
            return false;
        }
        for (k, inp) in pn.inputs.iter().enumerate() {
            let tk = if swaps[i] { 1 - k } else { k };
            let ts = tn.inputs[tk].source;
            match inp.source {
                None => {
                    if ts.is_some() {
                        return false;
                    }
                }
                Some(src) => {
                    let Some(ts) = ts else { return false };
                    if let Some(&j) = t_of.get(&src.node) {
                        if ts
                            != (OutPort {
                                node: assign[j],
                                index: src.index,
                            })
                        {
                            return false;
                        }
                    } else if *data_bind.entry(src.node).or_insert(ts) != ts {
                        return false;
                    }
                }
            }
        }
    }
    if data_bind.values().any(|p| matched.contains(&p.node)) {
        return false;
    }
    let outs: HashSet<OutPort> = pg
        .outputs
        .iter()
        .map(|o| OutPort {
            node: assign[t_of[&o.node]],
            index: o.index,
        })
        .collect();
    let mut stack = Vec::new();
    for &t in assign {
        for (a, o) in g.node(t).unwrap().outputs.iter().enumerate() {
            let port = OutPort {
                node: t,
                index: a as u32,
            };
            let ext: Vec<NodeId> = o
                .consumers
                .iter()
                .map(|c| c.node)
                .filter(|n| !matched.contains(n))
                .collect();
            if !outs.contains(&port) && (!ext.is_empty() || g.outputs.contains(&port)) {
                return false;
            }
            stack.extend(ext);
        }
    }
    // Leaving the match and coming back to it is a cycle after contraction.
    let mut seen = HashSet::new();
    while let Some(n) = stack.pop() {
        if matched.contains(&n) {
            return false;
        }
        if !seen.insert(n) {
            continue;
        }
        for (_, c) in g.out_edges(n).unwrap() {
            stack.push(c.node);
        }
    }
    true
}

/// A random DAG: 2 inputs, then nodes of the given ops on random earlier tensors.
fn random_dag(spec: &[(u8, usize, usize)], outs: &[usize]) -> Graph {
    let mut b = GraphBuilder::new("rand");
    let mut ports = vec![data(&mut b, 0, &[2]), data(&mut b, 1, &[2])];
    for &(kind, i, j) in spec {
        let x = ports[i % ports.len()];
        let y = ports[j % ports.len()];
        let p = match kind % 4 {
            0 => op(&mut b, "Relu", &[x]),
            1 => op(&mut b, "Abs", &[x]),
            2 => op(&mut b, "Add", &[x, y]),
            _ => op(&mut b, "Neg", &[x]),
        };
        ports.push(p);
    }
    let mut chosen: Vec<OutPort> = outs.iter().map(|&o| ports[o % ports.len()]).collect();
    chosen.dedup();
    finish(b, &chosen)
}

fn check_against_reference(g: &Graph, p: &Pattern, commutative: bool) {
    let c = cfg(false, false, commutative);
    let ms = find_matches(g, p, c).unwrap();
    let refs = reference(g, p, commutative);
    let mut claimed = HashSet::new();
    for m in &ms {
        let mut a = m.nodes.clone();
        a.sort();
        assert!(refs.contains(&a), "match not valid per reference: {a:?}");
        for (_, t) in &m.nodes {
            assert!(claimed.insert(*t), "overlapping matches");
        }
    }
    for r in &refs {
        assert!(
            r.iter().any(|(_, t)| claimed.contains(t)),
            "valid match {r:?} missed although disjoint from all found"
        );
    }
    // explain_match at every anchor candidate: a match exactly where a valid assignment puts
    // the anchor (claims ignored), and that match is valid.
    let anchor = p.graph().outputs[0].node;
    for t in g.nodes() {
        if g.node(t).unwrap().op_type != p.anchor_op_type() {
            continue;
        }
        let expected = refs.iter().any(|r| r.contains(&(anchor, t)));
        match explain_match(g, p, c, t).unwrap() {
            MatchExplanation::Matched(m) => {
                let mut a = m.nodes.clone();
                a.sort();
                assert!(refs.contains(&a), "explained match not valid: {a:?}");
            }
            MatchExplanation::NoMatch(why) => {
                assert!(
                    !expected,
                    "explain_match missed a valid match at {t:?}: {why}"
                );
            }
        }
    }
}

/// Pattern with a fork: r = Add(x, y); out0 = Relu(r); out1 = Abs(r).
fn fork_pattern() -> Pattern {
    let mut b = GraphBuilder::new("fork");
    let x = data(&mut b, 0, &[2]);
    let y = data(&mut b, 1, &[2]);
    let a = op(&mut b, "Add", &[x, y]);
    let r = op(&mut b, "Relu", &[a]);
    let s = op(&mut b, "Abs", &[a]);
    Pattern::new(finish(b, &[r, s])).unwrap()
}

/// Pattern with an internal diamond: out = Add(Relu(x), Abs(Relu(x))).
fn diamond_pattern() -> Pattern {
    let mut b = GraphBuilder::new("diamond");
    let x = data(&mut b, 0, &[2]);
    let r = op(&mut b, "Relu", &[x]);
    let a = op(&mut b, "Abs", &[r]);
    let s = op(&mut b, "Add", &[a, r]);
    Pattern::new(finish(b, &[s])).unwrap()
}

/// Pattern whose output 0 does not depend on input 1, so that a match can close a cycle:
/// r = Relu(x) (output 0); s = Add(r, y) (output 1).
fn open_pattern() -> Pattern {
    let mut b = GraphBuilder::new("open");
    let x = data(&mut b, 0, &[2]);
    let y = data(&mut b, 1, &[2]);
    let r = op(&mut b, "Relu", &[x]);
    let s = op(&mut b, "Add", &[r, y]);
    Pattern::new(finish(b, &[r, s])).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn matches_agree_with_brute_force(
        spec in proptest::collection::vec((0u8..4, 0usize..64, 0usize..64), 1..10),
        outs in proptest::collection::vec(0usize..64, 1..4),
        commutative in any::<bool>(),
    ) {
        let g = random_dag(&spec, &outs);
        check_against_reference(&g, &add_relu_pattern(), commutative);
        check_against_reference(&g, &fork_pattern(), commutative);
        check_against_reference(&g, &diamond_pattern(), commutative);
        check_against_reference(&g, &open_pattern(), commutative);
        // Greedy single-output pattern: one node set per anchor, so the list is exact.
        let ms = find_matches(&g, &add_relu_pattern(), cfg(false, false, commutative)).unwrap();
        for m in &ms {
            // The same match as explained alone at its anchor.
            let e = explain_match(&g, &add_relu_pattern(), cfg(false, false, commutative), m.outputs[0].node).unwrap();
            prop_assert_eq!(e, MatchExplanation::Matched(m.clone()));
            let mut g2 = g.clone();
            let mut rb = GraphBuilder::new("rep");
            let rx = data(&mut rb, 0, &[2]);
            let ry = data(&mut rb, 1, &[2]);
            let mu = op(&mut rb, "Mul", &[rx, ry]);
            let rep = finish(rb, &[mu]);
            rewrite(&mut g2, &m.to_boundary(), &rep).unwrap();
            g2.check_integrity().unwrap();
            g2.validate().unwrap();
        }
    }
}
