//! Boundaries given by anchors and the fusability check (`resolve_boundary`, `can_fuse`,
//! `SubgraphBoundary::input_anchors`).

use super::*;
use es_core::graph::InPort;
use es_core::pattern::{can_fuse, resolve_boundary};
use es_core::Error;

fn named(b: &mut GraphBuilder, op: &str, name: &str, inputs: &[OutPort]) -> OutPort {
    let ins: Vec<Option<OutPort>> = inputs.iter().map(|p| Some(*p)).collect();
    op_named(b, op, &ins, &[], Some(name))
}

fn at(p: OutPort, index: u32) -> InPort {
    InPort {
        node: p.node,
        index,
    }
}

fn value_msg(e: Error) -> String {
    match e {
        Error::Value(m) => m,
        other => panic!("expected a value error, got {other:?}"),
    }
}

/// x0, x1 → a = Add(x0, x1) → r = Relu(a) → m = Mul(r, x1) → output.
struct Chain {
    g: Graph,
    x0: OutPort,
    x1: OutPort,
    a: OutPort,
    r: OutPort,
    m: OutPort,
}

fn chain() -> Chain {
    let (mut b, [x0, x1]) = inputs("chain");
    let a = named(&mut b, "Add", "add", &[x0, x1]);
    let r = named(&mut b, "Relu", "relu", &[a]);
    let m = named(&mut b, "Mul", "mul", &[r, x1]);
    let g = finish(b, &[m]);
    Chain { g, x0, x1, a, r, m }
}

#[test]
fn resolve_walks_back_from_outputs_to_the_input_anchors() {
    let c = chain();
    let inputs = vec![(0, vec![at(c.a, 0)]), (1, vec![at(c.a, 1), at(c.m, 1)])];
    let b = resolve_boundary(&c.g, &inputs, &[(0, c.m)]).unwrap();
    assert_eq!(b.nodes, vec![c.a.node, c.r.node, c.m.node]);
    assert_eq!(b.inputs, vec![c.x0, c.x1]);
    assert_eq!(b.outputs, vec![c.m]);
    // Back to anchors: slot 1 feeds both Add and Mul.
    let anchors = b.input_anchors(&c.g).unwrap();
    assert_eq!(anchors[0], vec![at(c.a, 0)]);
    let mut one = anchors[1].clone();
    one.sort_by_key(|p| (p.node, p.index));
    let mut want = vec![at(c.a, 1), at(c.m, 1)];
    want.sort_by_key(|p| (p.node, p.index));
    assert_eq!(one, want);
}

#[test]
fn resolve_then_rewrite_replaces_the_region() {
    let c = chain();
    let ins = vec![(0, vec![at(c.r, 0)])];
    let b = resolve_boundary(&c.g, &ins, &[(0, c.r)]).unwrap();
    assert_eq!(b.nodes, vec![c.r.node]);
    assert_eq!(b.inputs, vec![c.a]);
    let (mut rb, [x]) = inputs("rep");
    let s = named(&mut rb, "Sigmoid", "sig", &[x]);
    let rep = finish(rb, &[s]);
    let mut g = c.g.clone();
    let created = rewrite(&mut g, &b, &rep).unwrap();
    assert_eq!(created.len(), 1);
    let mul = g.node(c.m.node).unwrap();
    assert_eq!(mul.inputs[0].source.unwrap().node, created[0]);
    assert!(!g.contains(c.r.node));
}

#[test]
fn resolve_errors() {
    let c = chain();
    let g = &c.g;
    let outs = [(0, c.m)];
    type Case = (Vec<(u32, Vec<InPort>)>, Vec<(u32, OutPort)>, &'static str);
    let cases: Vec<Case> = vec![
        (
            vec![(1, vec![at(c.a, 0)])],
            outs.to_vec(),
            "the boundary's input slots must be 0..n without gaps, got [1]",
        ),
        (
            vec![],
            vec![(0, c.m), (2, c.r)],
            "the boundary's output slots must be 0..n without gaps, got [0, 2]",
        ),
        (
            vec![(0, vec![at(c.r, 3)])],
            outs.to_vec(),
            "boundary input 0: node 'relu' has no input 3",
        ),
        (
            vec![(0, vec![at(c.a, 0), at(c.a, 1)])],
            outs.to_vec(),
            "boundary input 0: its anchors are fed by different tensors",
        ),
        (
            vec![(0, vec![])],
            outs.to_vec(),
            "boundary input 0 has no anchor",
        ),
        (
            vec![(0, vec![at(c.r, 0)])],
            outs.to_vec(),
            "the boundary is not closed: walking back from its outputs reaches the graph input 'x1'; add a boundary input before it",
        ),
        (
            vec![
                (0, vec![at(c.a, 0)]),
                (1, vec![at(c.a, 1), at(c.m, 1)]),
                (2, vec![at(c.m, 0)]),
            ],
            vec![(0, c.m), (1, c.r)],
            "boundary input 2 is produced by 'relu', which is inside the boundary",
        ),
    ];
    for (inputs, outputs, want) in cases {
        let e = resolve_boundary(g, &inputs, &outputs).unwrap_err();
        assert_eq!(value_msg(e), want);
    }
}

#[test]
fn resolve_reports_an_unconnected_anchor() {
    let c = chain();
    let mut g = c.g.clone();
    g.remove_data_edge(c.a, at(c.r, 0)).unwrap();
    let e = resolve_boundary(&g, &[(0, vec![at(c.r, 0)])], &[(0, c.r)]).unwrap_err();
    assert_eq!(
        value_msg(e),
        "boundary input 0: input 0 of 'relu' is not connected"
    );
}

#[test]
fn resolve_rejects_a_removed_node() {
    let c = chain();
    let mut g = c.g.clone();
    g.remove_node(c.r.node).unwrap();
    assert!(resolve_boundary(&g, &[(0, vec![at(c.r, 0)])], &[(0, c.m)]).is_err());
    assert!(resolve_boundary(&g, &[(0, vec![at(c.m, 1)])], &[(0, c.r)]).is_err());
}

#[test]
fn can_fuse_accepts_a_chain_and_rejects_a_detour() {
    let c = chain();
    let g = &c.g;
    assert_eq!(can_fuse(g, &[c.a.node, c.r.node, c.m.node]), Ok(()));
    assert_eq!(can_fuse(g, &[c.r.node]), Ok(()));
    // Add and Mul without Relu: Add → Relu → Mul leaves the set and comes back.
    assert_eq!(
        can_fuse(g, &[c.a.node, c.m.node]),
        Err(
            "fusing would create a cycle: 'relu' (outside) depends on a fused node and feeds 'mul'"
                .to_string()
        )
    );
    assert_eq!(can_fuse(g, &[]), Err("no nodes to fuse".to_string()));
    let mut g2 = g.clone();
    g2.remove_node(c.r.node).unwrap();
    assert_eq!(
        can_fuse(&g2, &[c.a.node, c.r.node]),
        Err("a node has been removed from the graph".to_string())
    );
}

#[test]
fn can_fuse_follows_control_edges() {
    // x0 → Add → Mul ← Relu ← x1, and a control edge Add → Relu.
    let (mut b, [x0, x1]) = inputs("ctrl");
    let a = named(&mut b, "Add", "add", &[x0, x0]);
    let r = named(&mut b, "Relu", "relu", &[x1]);
    let m = named(&mut b, "Mul", "mul", &[a, r]);
    let mut g = finish(b, &[m]);
    assert_eq!(can_fuse(&g, &[a.node, m.node]), Ok(()));
    g.add_control_edge(a.node, r.node).unwrap();
    assert!(can_fuse(&g, &[a.node, m.node])
        .unwrap_err()
        .starts_with("fusing would create a cycle: 'relu' (outside)"));
}
