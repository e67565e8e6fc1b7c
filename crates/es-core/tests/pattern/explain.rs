//! `explain_match`: why a pattern does not match at a node.

use super::*;

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
    let (mut b, [x, y]) = inputs("add_relu");
    let a = op_named(&mut b, "Add", &[Some(x), Some(y)], &[], Some("add"));
    let r = op_named(&mut b, "Relu", &[Some(a)], &[], Some("relu"));
    Pattern::new(finish(b, &[r])).unwrap()
}

/// Pattern add(relu(x0), x1) with nodes named relu and add; its outputs: add, or relu and add.
fn relu_add_pattern(relu_is_an_output: bool) -> Pattern {
    pattern_of("p", |b, [x, y]| {
        let r = op_named(b, "Relu", &[Some(x)], &[], Some("relu"));
        let s = op_named(b, "Add", &[Some(r), Some(y)], &[], Some("add"));
        if relu_is_an_output {
            vec![r, s]
        } else {
            vec![s]
        }
    })
}

/// The reason of a `NoMatch`, or a panic naming the match.
fn no_match(e: MatchExplanation) -> NoMatchReason {
    match e {
        MatchExplanation::NoMatch(r) => r,
        MatchExplanation::Matched(m) => panic!("unexpected match: {m:?}"),
    }
}

/// The match of a `Matched`, or a panic naming the reason.
fn matched(e: MatchExplanation) -> MatchResult {
    match e {
        MatchExplanation::Matched(m) => m,
        MatchExplanation::NoMatch(why) => panic!("{why}"),
    }
}

/// `why` names the pattern node `pattern_node` (and the target node `target`, when given) and
/// its reason contains each of `parts`.
fn assert_why(why: &NoMatchReason, pattern_node: &str, target: Option<&str>, parts: &[&str]) {
    assert_eq!(why.pattern_node, pattern_node, "{why}");
    if let Some(target) = target {
        assert_eq!(why.target_node.as_deref(), Some(target), "{why}");
    }
    for p in parts {
        assert!(why.reason.contains(p), "{why}");
    }
}

fn explain(g: &Graph, p: &Pattern, c: PatternMatcherConfig, at: OutPort) -> NoMatchReason {
    no_match(explain_match(g, p, c, at.node).unwrap())
}

#[test]
fn explain_matched_equals_find_matches() {
    let (mut b, [x, y]) = inputs("g");
    let a = op(&mut b, "Add", &[x, y]);
    let r = op(&mut b, "Relu", &[a]);
    let g = finish(b, &[r]);
    let p = named_add_relu_pattern();
    assert_eq!(p.anchor_op_type(), "Relu");
    let c = PatternMatcherConfig::default();
    let ms = find_matches(&g, &p, c).unwrap();
    assert_eq!(ms.len(), 1);
    assert_eq!(matched(explain_match(&g, &p, c, r.node).unwrap()), ms[0]);
    // A removed node is an error, not a panic.
    let mut g2 = g.clone();
    g2.remove_node(r.node).unwrap();
    assert!(explain_match(&g2, &p, c, r.node).is_err());
}

#[test]
fn explain_op_type_differs_at_the_anchor_or_inside() {
    // (the target's op under the Relu, explained at that op (the anchor's place) or at the
    // Relu, the pattern node named, what the reason says)
    let cases = [
        ("Add", true, "relu", "op type Relu != Add"),
        ("Mul", false, "add", "op type Add != Mul"),
    ];
    for (ty, at_op, pattern_node, reason) in cases {
        let (mut b, [x, y]) = inputs("g");
        let name = format!("{ty}_3");
        let a = op_named(&mut b, ty, &[Some(x), Some(y)], &[], Some(&name));
        let r = op(&mut b, "Relu", &[a]);
        let g = finish(b, &[r]);
        let at = if at_op { a } else { r };
        let why = explain(
            &g,
            &named_add_relu_pattern(),
            PatternMatcherConfig::default(),
            at,
        );
        assert_eq!(why.pattern_node, pattern_node, "{ty}");
        assert_eq!(why.target_node.as_deref(), Some(name.as_str()), "{ty}");
        assert!(why.reason.contains(reason), "{ty}: {why}");
        assert_eq!(why.reason.contains("anchor"), at_op, "{ty}: {why}");
        if at_op {
            assert_eq!(
                why.to_string(),
                format!("pattern node 'relu' vs target node 'Add_3': {}", why.reason)
            );
        }
    }
}

/// The pattern `mk("p", 2)` against the target `mk("g", 3)`, explained at the node `node`:
/// no match at that node, for `reason`.
fn explain_counts_differ(mk: impl Fn(&str, usize) -> Graph, node: &str, reason: &str) {
    let p = Pattern::new(mk("p", 2)).unwrap();
    let g = mk("g", 3);
    let at = g.find(node).unwrap();
    let why = no_match(explain_match(&g, &p, PatternMatcherConfig::default(), at).unwrap());
    assert_why(&why, node, None, &[reason]);
}

#[test]
fn explain_input_count_differs() {
    let mk = |name: &str, n: usize| {
        let mut b = GraphBuilder::new(name);
        let xs: Vec<Option<OutPort>> = (0..n).map(|i| Some(data(&mut b, i as i64, &[2]))).collect();
        let id = op_dyn(&mut b, "IdentityN", vec![xs], &[], Some("idn"));
        finish(b, &[OutPort { node: id, index: 0 }])
    };
    explain_counts_differ(mk, "idn", "input count 2 != 3");
}

#[test]
fn explain_output_count_differs() {
    let mk = |name: &str, n: usize| {
        let (mut b, [x]) = inputs_of(name, &[6]);
        let attrs = [
            ("split_dim", AttrValue::Int(0)),
            ("num_split", AttrValue::Int(n as i64)),
        ];
        let id = op_dyn(&mut b, "SplitD", vec![vec![Some(x)]], &attrs, Some("split"));
        finish(b, &[OutPort { node: id, index: 0 }])
    };
    explain_counts_differ(mk, "split", "output count 2 != 3");
}

#[test]
fn explain_ir_attr_differs() {
    let slope = |v: f32| [("negative_slope", AttrValue::Float(v))];
    let (mut b, [x]) = inputs("g");
    let l = op_named(&mut b, "LeakyRelu", &[Some(x)], &slope(0.2), Some("lr"));
    let g = finish(b, &[l]);
    let (mut pb, [px]) = inputs("p");
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
    assert_why(&why, "leaky", Some("lr"), &["negative_slope", "0.1 != 0.2"]);
}

#[test]
fn explain_const_value_differs() {
    let (mut b, [x]) = inputs_of("g", &[1]);
    let one = cst(&mut b, 1.0);
    let a = op(&mut b, "Add", &[x, one]);
    let g = finish(b, &[a]);
    let (mut pb, [px]) = inputs_of("add_zero", &[1]);
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
    assert_why(
        &why,
        "zero",
        Some(name_of(&g, one.node).as_str()),
        &["const value differs", "00000000 != 0000803f"],
    );
    // Value matching off: a match.
    assert!(matches!(
        explain_match(&g, &p, cfg(false, false, false), a.node).unwrap(),
        MatchExplanation::Matched(_)
    ));
}

#[test]
fn explain_pattern_edge_not_in_target() {
    // Pattern mul(add(x, y), add): target Mul_3(Add(x, y), x).
    let (mut pb, [px, py]) = inputs("p");
    let pa = op_named(&mut pb, "Add", &[Some(px), Some(py)], &[], Some("add"));
    let pm = op_named(&mut pb, "Mul", &[Some(pa), Some(pa)], &[], Some("mul"));
    let p = Pattern::new(finish(pb, &[pm])).unwrap();
    let (mut b, [x, y]) = inputs("g");
    let a = op(&mut b, "Add", &[x, y]);
    let m = op_named(&mut b, "Mul", &[Some(a), Some(x)], &[], Some("Mul_3"));
    let g = finish(b, &[m]);
    let why = explain(&g, &p, cfg(false, false, false), m);
    assert_why(&why, "add", Some(name_of(&g, a.node).as_str()), &["input 1 of 'Mul_3' (matched by pattern node 'mul') in the target is produced by 'x0:0'", "the pattern needs output 0 of"]);
    // The same pattern input used twice must bind one port.
    let (mut pb, [px]) = inputs("square");
    let pm = op_named(&mut pb, "Mul", &[Some(px), Some(px)], &[], Some("sq"));
    let p = Pattern::new(finish(pb, &[pm])).unwrap();
    let (mut b, [x, y]) = inputs("g");
    let m = op(&mut b, "Mul", &[x, y]);
    let g = finish(b, &[m]);
    let why = explain(&g, &p, cfg(false, false, false), m);
    assert_why(
        &why,
        "x0",
        None,
        &[
            "produced by 'x1:0'",
            "the pattern needs 'x0:0' (the tensor bound to pattern input 'x0')",
        ],
    );
    // An input the target leaves unconnected.
    let (mut pb, [pa, pw, pbias]) = inputs_dims("mm_bias", [&[2, 3], &[3, 4], &[4]]);
    let pmm = matmul_v2(&mut pb, [Some(pa), Some(pw), Some(pbias), None], Some("mm"));
    let p = Pattern::new(finish(pb, &[pmm])).unwrap();
    let (mut b, [a, w]) = inputs_dims("g", [&[2, 3], &[3, 4]]);
    let mm = matmul_v2(&mut b, [Some(a), Some(w), None, None], None);
    let g = finish(b, &[mm]);
    let why = explain(&g, &p, PatternMatcherConfig::default(), mm);
    assert_why(
        &why,
        "mm",
        None,
        &[
            "input 2 of 'MatMulV2_0' in the target is unconnected",
            "pattern node 'x2'",
        ],
    );
    // The other way round: the pattern leaves the bias unconnected, the target does not.
    let (mut b, [a, w, bias]) = inputs_dims("g", [&[2, 3], &[3, 4], &[4]]);
    let mm = matmul_v2(&mut b, [Some(a), Some(w), Some(bias), None], None);
    let g = finish(b, &[mm]);
    let (mut pb, [pa, pw]) = inputs_dims("mm", [&[2, 3], &[3, 4]]);
    let pmm = matmul_v2(&mut pb, [Some(pa), Some(pw), None, None], Some("mm"));
    let p = Pattern::new(finish(pb, &[pmm])).unwrap();
    let why = explain(&g, &p, PatternMatcherConfig::default(), mm);
    assert_why(
        &why,
        "mm",
        None,
        &[
            "is produced by 'x2:0'",
            "the pattern leaves its input 2 unconnected",
        ],
    );
}

#[test]
fn explain_target_node_already_used() {
    // Pattern mul(r1(x0), r2(x1)) against Mul(r, r): r2 cannot take r, r1 has it.
    let (mut pb, [px, py]) = inputs("p");
    let r1 = op_named(&mut pb, "Relu", &[Some(px)], &[], Some("r1"));
    let r2 = op_named(&mut pb, "Relu", &[Some(py)], &[], Some("r2"));
    let pm = op_named(&mut pb, "Mul", &[Some(r1), Some(r2)], &[], Some("mul"));
    let p = Pattern::new(finish(pb, &[pm])).unwrap();
    let (mut b, [x]) = inputs("g");
    let r = op_named(&mut b, "Relu", &[Some(x)], &[], Some("the_relu"));
    let m = op(&mut b, "Mul", &[r, r]);
    let g = finish(b, &[m]);
    let why = explain(&g, &p, PatternMatcherConfig::default(), m);
    assert_why(
        &why,
        "r2",
        Some("the_relu"),
        &["already matched by pattern node 'r1'"],
    );
}

#[test]
fn explain_boundary_not_self_contained() {
    let p = named_add_relu_pattern();
    // The Add is consumed by a Neg outside the match.
    let (mut b, [_, a, r]) = add_self_relu("g");
    let n = op_named(&mut b, "Neg", &[Some(a)], &[], Some("outsider"));
    let g = finish(b, &[r, n]);
    let why = explain(&g, &p, PatternMatcherConfig::default(), r);
    assert_why(
        &why,
        "add",
        Some(name_of(&g, a.node).as_str()),
        &["not self-contained", "used outside the match by 'outsider'"],
    );
    // The Add is a graph output.
    let (b, [_, a, r]) = add_self_relu("g2");
    let g = finish(b, &[r, a]);
    let why = explain(&g, &p, PatternMatcherConfig::default(), r);
    assert_why(&why, "add", None, &["graph output"]);
}

#[test]
fn explain_pattern_input_produced_inside() {
    // Pattern s = add(r = relu(x0), x1) against Add(r, r): x1 would be bound to r's output.
    let p = relu_add_pattern(false);
    let (mut b, [x]) = inputs("g");
    let r = op_named(&mut b, "Relu", &[Some(x)], &[], Some("R"));
    let s = op(&mut b, "Add", &[r, r]);
    let g = finish(b, &[s]);
    assert!(find_matches(&g, &p, PatternMatcherConfig::default())
        .unwrap()
        .is_empty());
    let why = explain(&g, &p, PatternMatcherConfig::default(), s);
    assert_why(
        &why,
        "x1",
        Some("R"),
        &["produced inside the match (by pattern node 'relu')"],
    );
}

#[test]
fn explain_rewrite_would_create_cycle() {
    // As in `cycle_is_no_match`: contracting {r, s} would give R -> Neg -> Exp -> R.
    let p = relu_add_pattern(true);
    assert_eq!(p.anchor_op_type(), "Relu");
    let (mut b, [x]) = inputs("g");
    let r = op_named(&mut b, "Relu", &[Some(x)], &[], Some("R"));
    let n = op_named(&mut b, "Neg", &[Some(r)], &[], Some("N"));
    let e = op_named(&mut b, "Exp", &[Some(n)], &[], Some("E"));
    let s = op(&mut b, "Add", &[r, e]);
    let g = finish(b, &[s]);
    let why = explain(&g, &p, cfg(false, false, false), r);
    assert_why(&why, "relu", Some("R"), &["cycle", "'N' uses the output of 'R' and reaches 'E', which feeds the match as pattern input 'x1'"]);
}

#[test]
fn explain_ignores_claims_of_other_matches() {
    // Relu chain of 3 against relu(relu(x)): find_matches claims relus 0 and 1, so relu 2
    // is no anchor there; alone, relu 2 (over relu 1) matches.
    let p = relu2_pattern();
    let (mut b, [x]) = inputs("g");
    let r0 = op(&mut b, "Relu", &[x]);
    let r1 = op(&mut b, "Relu", &[r0]);
    let r2 = op(&mut b, "Relu", &[r1]);
    let g = finish(b, &[r2]);
    let c = PatternMatcherConfig::default();
    assert_eq!(find_matches(&g, &p, c).unwrap().len(), 1);
    // r1's output is consumed by r2 (outside {r0, r1}) but is the pattern output: fine.
    assert_eq!(
        matched(explain_match(&g, &p, c, r1.node).unwrap()).target_nodes(),
        vec![r0.node, r1.node]
    );
    // r2 over r1: r1's output is the inner tensor; only r2 consumes it, so a match.
    assert_eq!(
        matched(explain_match(&g, &p, c, r2.node).unwrap()).target_nodes(),
        vec![r1.node, r2.node]
    );
}
