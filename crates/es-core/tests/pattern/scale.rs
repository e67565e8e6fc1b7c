//! Large graphs and invariants.

use super::*;

#[test]
fn rewrite_20k_block_chain() {
    const N: usize = 20_000;
    let (mut b, [x]) = inputs("chain");
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
    let (mut rb, [rx, ry]) = inputs("rep");
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
    let (mut b, [x, y]) = inputs("fork");
    let a = op(&mut b, "Add", &[x, y]);
    let r = op(&mut b, "Relu", &[a]);
    let s = op(&mut b, "Abs", &[a]);
    Pattern::new(finish(b, &[r, s])).unwrap()
}

/// Pattern with an internal diamond: out = Add(Relu(x), Abs(Relu(x))).
fn diamond_pattern() -> Pattern {
    let (mut b, [x]) = inputs("diamond");
    let r = op(&mut b, "Relu", &[x]);
    let a = op(&mut b, "Abs", &[r]);
    let s = op(&mut b, "Add", &[a, r]);
    Pattern::new(finish(b, &[s])).unwrap()
}

/// Pattern whose output 0 does not depend on input 1, so that a match can close a cycle:
/// r = Relu(x) (output 0); s = Add(r, y) (output 1).
fn open_pattern() -> Pattern {
    let (mut b, [x, y]) = inputs("open");
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
            let (mut rb, [rx, ry]) = inputs("rep");
            let mu = op(&mut rb, "Mul", &[rx, ry]);
            let rep = finish(rb, &[mu]);
            rewrite(&mut g2, &m.to_boundary(), &rep).unwrap();
            g2.check_integrity().unwrap();
            g2.validate().unwrap();
        }
    }
}
