//! Carry-over of descriptions and attributes in `rewrite`.

use super::*;

/// Graph relu(add(x, y)) → Neg, with the Relu's output description and attributes set; the
/// boundary is {add, relu}.
fn carry_graph() -> (Graph, SubgraphBoundary, OutPort) {
    let (mut b, [x, y]) = inputs("g");
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
    let (mut b, [x, y]) = inputs("rep");
    let m = op_named(&mut b, "Mul", &[Some(x), Some(y)], &[], Some("mul"));
    let mut rep = finish(b, &[m]);
    edit(rep.node_mut(m.node).unwrap());
    rep
}

#[test]
fn carry_over_desc_when_unknown() {
    let (mut g, bd, _) = carry_graph();
    let old = g.out_desc(bd.outputs[0]).unwrap().clone();
    let rep = carry_replacement(|n| *n.outputs[0].desc = TensorDesc::default());
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
        *n.outputs[0].desc = TensorDesc::new(DataType::UNDEFINED, Shape::from_slice(&[7]))
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
        *n.outputs[0].desc = TensorDesc::new(DataType::FLOAT16, Shape::unknown_rank())
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
        *n.outputs[0].desc = TensorDesc::new(DataType::FLOAT, Shape::from_slice(&[-1]))
    });
    let created = rewrite(&mut g, &bd, &rep).unwrap();
    assert_eq!(
        g.node(created[0]).unwrap().outputs[0].desc.shape.dims(),
        &[2]
    );

    // Another rank, or a known dim, is the replacement's to keep.
    let (mut g, bd, _) = carry_graph();
    let rep = carry_replacement(|n| {
        *n.outputs[0].desc = TensorDesc::new(DataType::FLOAT, Shape::from_slice(&[-1, 2]))
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
    let rep = carry_replacement(|n| *n.outputs[0].desc = set.clone());
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
    let (rb, [rx, _ry]) = inputs("pass");
    let rep = finish(rb, &[rx]);
    let before = g.node(x.node).unwrap().clone();
    assert!(rewrite(&mut g, &bd, &rep).unwrap().is_empty());
    check(&g);
    assert_eq!(g.producer(n.node, 0).unwrap(), Some(x));
    let after = g.node(x.node).unwrap();
    assert_eq!(after.private_attrs, before.private_attrs);
    assert_eq!(after.outputs[0].desc, before.outputs[0].desc);
}
