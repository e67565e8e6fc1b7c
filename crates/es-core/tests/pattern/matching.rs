//! Basic matching and rewriting, and the validity of matches.

use super::*;

#[test]
fn config_default() {
    let c = PatternMatcherConfig::default();
    assert!(!c.const_value_match && !c.ir_attr_match && c.commutative);
}

#[test]
fn add_relu_fused_into_replacement() {
    let (mut b, [x, y]) = inputs("g");
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
    let (mut rb, [rx, ry]) = inputs("rep");
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
    let (mut b, [a, w, bias]) = inputs_dims("g", [&[2, 3], &[3, 4], &[4]]);
    let mm = matmul_v2(&mut b, [Some(a), Some(w), None, None], None);
    let ad = op(&mut b, "Add", &[mm, bias]);
    let out = op(&mut b, "Relu", &[ad]);
    let mut g = finish(b, &[out]);

    let (mut pb, [px, pw, pbias]) = inputs_dims("matmul_add", [&[2, 3], &[3, 4], &[4]]);
    let pmm = matmul_v2(&mut pb, [Some(px), Some(pw), None, None], None);
    let pad = op(&mut pb, "Add", &[pmm, pbias]);
    let p = Pattern::new(finish(pb, &[pad])).unwrap();

    let (mut rb, [rx, rw, rbias]) = inputs_dims("gemm", [&[2, 3], &[3, 4], &[4]]);
    let rmm = matmul_v2(
        &mut rb,
        [Some(rx), Some(rw), Some(rbias), None],
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
    let (mut b, [x]) = inputs_of("add_zero", &[1]);
    let z = cst(&mut b, 0.0);
    let a = op(&mut b, "Add", &[x, z]);
    Pattern::new(finish(b, &[a])).unwrap()
}

fn identity_replacement() -> Graph {
    let (mut b, [x]) = inputs_of("ident", &[1]);
    let i = op(&mut b, "Identity", &[x]);
    finish(b, &[i])
}

#[test]
fn add_zero_replaced_by_identity_with_const_value_match() {
    let (mut b, [x]) = inputs_of("g", &[1]);
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
    let (mut b, [x]) = inputs_of("g", &[1]);
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
    let (mut b, [x]) = inputs_of("g2", &[1]);
    let z = cst(&mut b, 0.0);
    let s = op(&mut b, "Sub", &[z, x]);
    let g2 = finish(b, &[s]);
    let (mut pb, [px]) = inputs_of("sub_zero", &[1]);
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
    let (mut b, [x, y]) = inputs_of("g", &[1]);
    let c = cst(&mut b, 2.0);
    let a = op(&mut b, "Add", &[c, x]);
    let m = op(&mut b, "Mul", &[y, a]);
    let g = finish(b, &[m]);
    let (mut pb, [px, py]) = inputs_of("p", &[1]);
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
    let (mut b, [x]) = inputs("g");
    let l1 = op_named(&mut b, "LeakyRelu", &[Some(x)], &slope(0.1), None);
    let l2 = op_named(&mut b, "LeakyRelu", &[Some(l1)], &slope(0.2), None);
    let l3 = op_named(&mut b, "LeakyRelu", &[Some(l2)], &slope(0.100_000_1), None);
    let g = finish(b, &[l3]);
    let (mut pb, [px]) = inputs("p");
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
    let (mut pb, [px]) = inputs("fork");
    let pr = op(&mut pb, "Relu", &[px]);
    let pa = op(&mut pb, "Abs", &[pr]);
    let pn = op(&mut pb, "Neg", &[pr]);
    let p = Pattern::new(finish(pb, &[pa, pn])).unwrap();

    let (mut b, [x]) = inputs("g");
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
    let (mut rb, [rx]) = inputs("rep2");
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
    let (mut b, [x]) = inputs_of("g", &[1]);
    let z = cst(&mut b, 0.0);
    let a = op(&mut b, "Add", &[x, z]);
    let r = op(&mut b, "Relu", &[a]);
    let mut g = finish(b, &[r, a]);
    let (rb, [rx]) = inputs_of("pass", &[1]);
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
    let (mut b, [_, a, r]) = add_self_relu("g");
    let n = op(&mut b, "Neg", &[a]);
    let g = finish(b, &[r, n]);
    assert!(find_matches(&g, &p, PatternMatcherConfig::default())
        .unwrap()
        .is_empty());
    // Add as a graph output.
    let (b, [_, a, r]) = add_self_relu("g2");
    let g = finish(b, &[r, a]);
    assert!(find_matches(&g, &p, PatternMatcherConfig::default())
        .unwrap()
        .is_empty());
    // A plain one matches, with the same port bound to both inputs.
    let (b, [x, _, r]) = add_self_relu("g3");
    let g = finish(b, &[r]);
    let ms = find_matches(&g, &p, PatternMatcherConfig::default()).unwrap();
    assert_eq!(ms.len(), 1);
    assert_eq!(ms[0].inputs, vec![x, x]);
}

#[test]
fn same_pattern_input_twice_binds_one_port() {
    let (mut pb, [px]) = inputs("square");
    let pm = op(&mut pb, "Mul", &[px, px]);
    let p = Pattern::new(finish(pb, &[pm])).unwrap();
    let (mut b, [x, y]) = inputs("g");
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
    let p = pattern_of("p", |b, [x, y]| {
        let r = op(b, "Relu", &[x]);
        vec![r, op(b, "Add", &[r, y])]
    });
    // y = Neg(r): contracting {r, s} would give R -> Neg -> R.
    let (mut b, [x]) = inputs("g");
    let r = op(&mut b, "Relu", &[x]);
    let n = op(&mut b, "Neg", &[r]);
    let e = op(&mut b, "Exp", &[n]);
    let s = op(&mut b, "Add", &[r, e]);
    let g = finish(b, &[s]);
    assert!(find_matches(&g, &p, cfg(false, false, false))
        .unwrap()
        .is_empty());
    // y independent of r: a match.
    let (mut b, [x]) = inputs("g2");
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
    let p = pattern_of("p", |b, [x, y]| {
        let r = op(b, "Relu", &[x]);
        vec![r, op(b, "Add", &[r, y])]
    });
    let (mut b, [x, x2]) = inputs("g");
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
    let (mut rb, [rx, ry]) = inputs("rep");
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
    let (mut b, [x, a, r]) = add_self_relu("g");
    let n = op(&mut b, "Neg", &[a]);
    let mut g = finish(b, &[r, n]);
    let before = g.clone();
    let (mut rb, [rx, ry]) = inputs("rep");
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
    let p = pattern_of("p", |b, [x, y]| {
        vec![op(b, "Relu", &[x]), op(b, "Add", &[x, y])]
    });
    let (mut b, [x1, x2]) = inputs("g");
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
    let (mut rb, [rx, ry]) = inputs("rep");
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
    let p = relu2_pattern();
    let (mut b, [x]) = inputs("g");
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
    let (mut b, [x]) = inputs("p");
    let _ = op(&mut b, "Relu", &[x]);
    assert!(Pattern::new(b.graph().clone()).is_err());
    // Output on a Data node.
    let (b, [x]) = inputs("p");
    assert!(Pattern::new(finish(b, &[x])).is_err());
    // Not connected.
    let (mut b, [x, y]) = inputs("p");
    let r = op(&mut b, "Relu", &[x]);
    let a = op(&mut b, "Abs", &[y]);
    assert!(Pattern::new(finish(b, &[r, a])).is_err());
}
