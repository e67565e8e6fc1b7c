//! `rewrite_owned` (the replacement moved in, as the pass executor does) against `rewrite`
//! (the replacement copied): the same graph, the same new nodes, the same outputs.

use super::*;
use es_core::pattern::{rewrite_owned, rewritten_outputs};

/// Rewrites a copy of `g` both ways and checks that they agree.
fn both_ways(g: &Graph, bd: &SubgraphBoundary, rep: &Graph) -> Graph {
    let mut copied = g.clone();
    let created = rewrite(&mut copied, bd, rep).unwrap();
    let outs = rewritten_outputs(rep, bd, &created).unwrap();
    let mut moved = g.clone();
    let (created2, outs2) = rewrite_owned(&mut moved, bd, rep.clone()).unwrap();
    check(&copied);
    check(&moved);
    assert_eq!(copied, moved, "the same graph");
    let names = |g: &Graph, ids: &[NodeId]| -> Vec<String> {
        ids.iter()
            .map(|&i| g.node(i).unwrap().name.to_string())
            .collect()
    };
    assert_eq!(names(&copied, &created), names(&moved, &created2));
    let ports = |g: &Graph, ps: &[OutPort]| -> Vec<(String, u32)> {
        ps.iter()
            .map(|p| (g.node(p.node).unwrap().name.to_string(), p.index))
            .collect()
    };
    assert_eq!(ports(&copied, &outs), ports(&moved, &outs2));
    // Every desc and attribute of the new nodes, control edges included.
    for (a, b) in created.iter().zip(&created2) {
        let (na, nb) = (copied.node(*a).unwrap(), moved.node(*b).unwrap());
        let descs = |n: &es_core::Node| {
            let ins: Vec<_> = n
                .inputs
                .iter()
                .map(|i| (i.name.clone(), i.desc.clone()))
                .collect();
            let outs: Vec<_> = n
                .outputs
                .iter()
                .map(|o| (o.name.clone(), o.desc.clone()))
                .collect();
            (ins, outs)
        };
        assert_eq!(descs(na), descs(nb));
        assert_eq!(na.in_control.len(), nb.in_control.len());
        assert_eq!(na.private_attrs, nb.private_attrs);
        assert_eq!(na.attrs, nb.attrs);
    }
    moved
}

/// x, y -> Add -> Relu -> Neg, outputs (Neg, Relu); Relu's output has a format and a tensor
/// attribute, Relu a private attribute (what a rewrite carries over). The boundary: Add and
/// Relu.
fn add_relu_neg() -> (Graph, SubgraphBoundary) {
    let (mut b, [x, y]) = inputs("g");
    let a = op(&mut b, "Add", &[x, y]);
    let r = op(&mut b, "Relu", &[a]);
    let n = op(&mut b, "Neg", &[r]);
    let mut g = finish(b, &[n, r]);
    let node = g.node_mut(r.node).unwrap();
    node.outputs[0].desc.format = Format::NCHW;
    node.outputs[0]
        .desc
        .attrs
        .insert("_a".into(), AttrValue::Int(1));
    node.private_attrs.insert("_p".into(), AttrValue::Int(2));
    let bd = SubgraphBoundary::new(vec![a.node, r.node], vec![x, y], vec![r]);
    (g, bd)
}

#[test]
fn owned_rewrite_equals_copied_rewrite() {
    let (g, bd) = add_relu_neg();
    // A replacement of two nodes (inner edge, control edge), output description left unknown
    // (carried over from the old output).
    let (mut b, [x, y]) = inputs("rep");
    let m = op_named(&mut b, "Mul", &[Some(x), Some(y)], &[], Some("mul"));
    let s = op_named(&mut b, "Sigmoid", &[Some(m)], &[], Some("sig"));
    let mut rep = finish(b, &[s]);
    rep.add_control_edge(m.node, s.node).unwrap();
    *rep.node_mut(s.node).unwrap().outputs[0].desc = TensorDesc::default();
    let first = g.node(bd.nodes[0]).unwrap().name.to_string();
    let out = both_ways(&g, &bd, &rep);
    assert!(out.find(&format!("{first}/mul")).is_some());
    assert!(out.find(&format!("{first}/sig")).is_some());

    // A replacement that passes an input through (nothing carried over).
    let (b, [x, _y]) = inputs("rep2");
    let rep2 = finish(b, &[x]);
    both_ways(&g, &bd, &rep2);

    // Names already taken in the target get a suffix the same way.
    let mut g2 = g.clone();
    let id = g2
        .add_node(es_core::Node::new(format!("{first}/mul"), "NoOp"))
        .unwrap();
    let moved = both_ways(&g2, &bd, &rep);
    assert!(moved.contains(id));
    assert!(moved.find(&format!("{first}/mul_1")).is_some());
}

#[test]
fn owned_rewrite_errors_leave_the_target_unchanged() {
    let (mut b, [x, y]) = inputs("g");
    let a = op(&mut b, "Add", &[x, y]);
    let r = op(&mut b, "Relu", &[a]);
    let g = finish(b, &[r]);
    // The replacement has one input, the boundary two.
    let (mut b, [u]) = inputs("rep");
    let n = op(&mut b, "Neg", &[u]);
    let rep = finish(b, &[n]);
    let bd = SubgraphBoundary::new(vec![a.node, r.node], vec![x, y], vec![r]);
    let mut t = g.clone();
    let e = rewrite_owned(&mut t, &bd, rep).unwrap_err();
    assert!(
        e.to_string()
            .contains("the replacement has 1 inputs, the boundary 2"),
        "{e}"
    );
    assert_eq!(t, g);
    // A boundary node listed twice.
    let (mut b, [u, v]) = inputs("rep");
    let m = op(&mut b, "Mul", &[u, v]);
    let rep = finish(b, &[m]);
    let bd = SubgraphBoundary::new(vec![a.node, r.node, a.node], vec![x, y], vec![r]);
    let e = rewrite_owned(&mut t, &bd, rep).unwrap_err();
    assert!(e.to_string().contains("listed twice"), "{e}");
    assert_eq!(t, g);
}

#[test]
fn a_rewrite_leaves_an_earlier_copy_of_the_graph_as_it_was() {
    // The pass executor's undo copy shares node records with the graph it rewrites (copy on
    // write): rewriting, carrying descriptions over and removing the match change the
    // rewritten graph only.
    let (mut g, bd) = add_relu_neg();
    let (pristine, _) = add_relu_neg();
    let undo = g.clone();
    // The replacement's output description is unknown: carried over from Relu's.
    let (mut b, [x, y]) = inputs("rep");
    let m = op(&mut b, "Mul", &[x, y]);
    let mut rep = finish(b, &[m]);
    *rep.node_mut(m.node).unwrap().outputs[0].desc = TensorDesc::default();
    let (_, outs) = rewrite_owned(&mut g, &bd, rep).unwrap();
    check(&g);
    check(&undo);
    assert_eq!(undo, pristine);
    assert_ne!(g, undo);
    let new = g.node(outs[0].node).unwrap();
    assert_eq!(
        new.outputs[0].desc.attrs.get("_a"),
        Some(&AttrValue::Int(1))
    );
    assert_eq!(new.outputs[0].desc.dtype, DataType::FLOAT);
    assert_eq!(new.private_attrs.get("_p"), Some(&AttrValue::Int(2)));
    let relu = undo.node(bd.outputs[0].node).unwrap();
    assert_eq!(
        relu.outputs[0].desc.attrs.get("_a"),
        Some(&AttrValue::Int(1))
    );
    assert_eq!(relu.outputs[0].consumers.len(), 1);
    assert!(!g.contains(bd.outputs[0].node));
}
