//! Tests of operator-version compatibility adaptation (`es_core::compat`), the table of seed 000
//! §"`IR`语义兼容性处理" (rows 1-8) and its consistency check, on small hand-made libraries.
//!
//! Versions: 8.0.0 is the older library, 8.1.0 the newer one that adds optional attributes and
//! inputs. A graph built against 8.1.0 adapted to 8.0.0 is the "forward" case (rows 1, 2, 5, 6);
//! a graph built against 8.0.0 adapted to 8.1.0 the "backward" case (rows 3, 4, 7, 8).
//!
//! Made-up op names start with `Xc` so that no built-in inference rule applies to them.

use std::sync::Arc;

use es_core::attr::AttrValue;
use es_core::builder::{GraphBuilder, OpArgs};
use es_core::compat::{adapt, AdaptReport, Change};
use es_core::graph::{Graph, InPort, InputSlot, NodeId, OutPort};
use es_core::ops::OpRegistry;
use es_core::{Error, TensorDesc};
use proptest::prelude::*;
use serde_json::{json, Value};

mod common;
use common::float_data;

// =============================================================================================
// Helpers
// =============================================================================================

/// One operator's JSON: inputs as (name, kind), attributes as JSON objects.
fn op(name: &str, inputs: &[(&str, &str)], attrs: Vec<Value>) -> Value {
    json!({
        "name": name,
        "inputs": inputs.iter().map(|(n, k)| json!({"name": n, "kind": k, "type": "T"})).collect::<Vec<_>>(),
        "outputs": [{"name": "y", "kind": "required", "type": "T"}],
        "attrs": attrs,
        "type_vars": {"T": ["DT_FLOAT", "DT_INT32"]},
    })
}

fn int_attr(name: &str, default: i64) -> Value {
    json!({"name": name, "type": "Int", "default": default})
}
fn float_attr(name: &str, default: f32) -> Value {
    json!({"name": name, "type": "Float", "default": default})
}
fn req_attr(name: &str) -> Value {
    json!({"name": name, "type": "Int", "required": true})
}

fn reg(version: &str, ops: Vec<Value>) -> Arc<OpRegistry> {
    let doc = json!({"format_version": 1, "version": version, "operators": ops});
    Arc::new(OpRegistry::from_json_str(&doc.to_string()).expect("registry"))
}

/// A library `version` of the one operator `op(name, ios, attrs)`.
fn reg_op(version: &str, name: &str, ios: &[(&str, &str)], attrs: Vec<Value>) -> Arc<OpRegistry> {
    reg(version, vec![op(name, ios, attrs)])
}

fn data(b: &mut GraphBuilder, index: i64) -> OutPort {
    float_data(b, index, &[2, 3])
}

fn args(inputs: Vec<Option<OutPort>>, attrs: &[(&str, AttrValue)]) -> OpArgs {
    let mut a = OpArgs {
        inputs: inputs.into_iter().map(|i| vec![i]).collect(),
        ..Default::default()
    };
    for (k, v) in attrs {
        a.attrs.insert((*k).to_string(), v.clone());
    }
    a
}

/// A graph of one data input and the nodes `f` adds; the graph is taken as is (not validated:
/// `Graph::validate` looks prototypes up in the global library, which lacks the made-up ops).
fn build(r: &Arc<OpRegistry>, f: impl FnOnce(&mut GraphBuilder, OutPort)) -> Graph {
    let mut b = GraphBuilder::with_registry("g", r.clone());
    let x = data(&mut b, 0);
    f(&mut b, x);
    b.graph().clone()
}

fn node_id(g: &Graph, name: &str) -> NodeId {
    g.find(name).expect("node")
}

fn compat_msg(r: Result<AdaptReport, Error>) -> String {
    match r {
        Err(Error::Compatibility(m)) => m,
        other => panic!("expected a compatibility error, got {other:?}"),
    }
}

/// Adapts a clone of `g` expecting a refusal; checks `g` is unchanged and returns the message.
fn refused(g: &Graph, from: &OpRegistry, to: &OpRegistry) -> String {
    let mut work = g.clone();
    let m = compat_msg(adapt(&mut work, from, to));
    assert!(work == *g, "the graph changed although adaptation failed");
    m
}

/// [`refused`] with a message starting with `prefix` and containing each of `parts`.
fn refused_with(g: &Graph, from: &OpRegistry, to: &OpRegistry, prefix: &str, parts: &[&str]) {
    let m = refused(g, from, to);
    assert!(m.starts_with(prefix), "{m}");
    for p in parts {
        assert!(m.contains(p), "{m}");
    }
}

/// Adapts expecting success; checks the graph's integrity and version.
fn adapted(g: &Graph, from: &OpRegistry, to: &OpRegistry) -> (Graph, AdaptReport) {
    let mut work = g.clone();
    let rep = adapt(&mut work, from, to).expect("adapt");
    work.check_integrity().expect("integrity after adapt");
    assert_eq!(work.ops_version, to.version);
    (work, rep)
}

fn rows(rep: &AdaptReport) -> Vec<u8> {
    rep.changes.iter().map(Change::row).collect()
}

/// Attribute libraries: `XcA` gains optional attribute `c` (default 7) in 8.1.0.
fn attr_libs() -> (Arc<OpRegistry>, Arc<OpRegistry>) {
    let old = op(
        "XcA",
        &[("x", "required")],
        vec![req_attr("a"), int_attr("b", 0)],
    );
    let new = op(
        "XcA",
        &[("x", "required")],
        vec![req_attr("a"), int_attr("b", 0), int_attr("c", 7)],
    );
    (reg("8.0.0", vec![old]), reg("8.1.0", vec![new]))
}

/// Input libraries: `XcI` gains optional input `o2` (at the end) in 8.1.0.
fn input_libs() -> (Arc<OpRegistry>, Arc<OpRegistry>) {
    let old = op("XcI", &[("x", "required"), ("o1", "optional")], vec![]);
    let new = op(
        "XcI",
        &[("x", "required"), ("o1", "optional"), ("o2", "optional")],
        vec![],
    );
    (reg("8.0.0", vec![old]), reg("8.1.0", vec![new]))
}

// =============================================================================================
// The table, row by row
// =============================================================================================

/// Row 1: graph IR has the optional attribute, target IR does not, the node has it (set to a
/// non-default value) → forward compatibility, a new attribute is used: refuse.
#[test]
fn row1_set_attribute_the_target_lacks_is_refused() {
    let (old, new) = attr_libs();
    let g = one_op(
        &new,
        "XcA",
        &[true],
        &[("a", 1.into()), ("c", AttrValue::Int(3))],
    );
    refused_with(
        &g,
        &new,
        &old,
        "node 'XcA_0' (XcA): attribute 'c' is set to 3 but library 8.0.0 does not have it \
             (graph built against 8.1.0)",
        &[],
    );
}

/// Row 2: graph IR has the optional attribute, target IR does not, the node does not use it
/// → forward compatibility, unused new attribute: delete it. "Unused" is both "absent" and
/// "at its default" (the builder stores defaults).
#[test]
fn row2_unset_attribute_the_target_lacks_is_deleted() {
    let (old, new) = attr_libs();
    for given in [None, Some(AttrValue::Int(7))] {
        let g = build(&new, |b, x| {
            let mut at = vec![("a", AttrValue::Int(1))];
            if let Some(v) = &given {
                at.push(("c", v.clone()));
            }
            b.add_op("XcA", args(vec![Some(x)], &at)).unwrap();
        });
        let (out, rep) = adapted(&g, &new, &old);
        let n = out.node(node_id(&out, "XcA_0")).unwrap();
        assert!(!n.attrs.contains_key("c"));
        assert_eq!(rows(&rep), vec![2]);
        assert_eq!(
            rep.changes[0],
            Change::RemovedAttr {
                graph: "g".into(),
                node: "XcA_0".into(),
                op: "XcA".into(),
                attr: "c".into(),
                value: AttrValue::Int(7),
            }
        );
        let expect = one_op(&old, "XcA", &[true], &[("a", 1.into())]);
        assert!(out == expect);
    }
    // A node that lacks the attribute altogether (made by hand) has nothing to delete.
    let mut g = one_op(&new, "XcA", &[true], &[("a", 1.into())]);
    let id = node_id(&g, "XcA_0");
    g.node_mut(id).unwrap().attrs.remove("c");
    let (out, rep) = adapted(&g, &new, &old);
    assert!(rep.is_empty());
    assert!(!out.node(id).unwrap().attrs.contains_key("c"));
}

/// Row 3: graph IR lacks the optional attribute, target IR has it, yet the node has it → error
/// scenario (the node does not match its own IR): refuse, whatever the value.
#[test]
fn row3_attribute_unknown_to_the_graph_version_is_refused() {
    let (old, new) = attr_libs();
    for v in [3, 7] {
        let mut g = one_op(&old, "XcA", &[true], &[("a", 1.into())]);
        let id = node_id(&g, "XcA_0");
        g.node_mut(id)
            .unwrap()
            .attrs
            .insert("c".into(), AttrValue::Int(v));
        refused_with(
            &g,
            &old,
            &new,
            "",
            &[
                "node 'XcA_0' (XcA)",
                "attribute 'c'",
                "8.0.0",
                "8.1.0",
                "does not match its recorded version",
            ],
        );
    }
}

/// Row 4: graph IR lacks the optional attribute, target IR has it, the node does not have it
/// → backward compatibility: use the target's default.
#[test]
fn row4_attribute_only_the_target_has_gets_its_default() {
    let (old, new) = attr_libs();
    let g = one_op(&old, "XcA", &[true], &[("a", 1.into()), ("b", 5.into())]);
    let (out, rep) = adapted(&g, &old, &new);
    let n = out.node(node_id(&out, "XcA_0")).unwrap();
    assert_eq!(n.attrs.get("c"), Some(&AttrValue::Int(7)));
    assert_eq!(n.attrs.get("b"), Some(&AttrValue::Int(5)));
    assert_eq!(rows(&rep), vec![4]);
    let expect = one_op(&new, "XcA", &[true], &[("a", 1.into()), ("b", 5.into())]);
    assert!(out == expect);
}

/// Row 5: graph IR has the optional input, target IR does not, the input is connected
/// → forward compatibility, a new input is used: refuse.
#[test]
fn row5_connected_input_the_target_lacks_is_refused() {
    let (old, new) = input_libs();
    let g = one_op(&new, "XcI", &[true, false, true], &[]);
    let m = refused(&g, &new, &old);
    assert_eq!(
        m,
        "node 'XcI_0' (XcI): optional input 'o2' is connected (to output 0 of 'input_0') but \
         library 8.0.0 does not have it (graph built against 8.1.0)"
    );
}

/// Row 6: graph IR has the optional input, target IR does not, the input is unconnected
/// → forward compatibility, unused new input: delete it.
#[test]
fn row6_unconnected_input_the_target_lacks_is_deleted() {
    let (old, new) = input_libs();
    for o1 in [None, Some(())] {
        let g = one_op(&new, "XcI", &[true, o1.is_some(), false], &[]);
        let (out, rep) = adapted(&g, &new, &old);
        assert_eq!(rows(&rep), vec![6]);
        let n = out.node(node_id(&out, "XcI_0")).unwrap();
        assert_eq!(n.inputs.len(), 2);
        assert!(n.inputs.iter().all(|s| s.name != "o2"));
        let expect = one_op(&old, "XcI", &[true, o1.is_some()], &[]);
        assert!(out == expect);
    }
}

/// A graph of one `op` node over the library `r`: input i is fed by the graph's input x when
/// `fed[i]`, else left unconnected.
fn one_op(r: &Arc<OpRegistry>, op: &str, fed: &[bool], attrs: &[(&str, AttrValue)]) -> Graph {
    build(r, |b, x| {
        let inputs = fed.iter().map(|&f| f.then_some(x)).collect();
        b.add_op(op, args(inputs, attrs)).unwrap();
    })
}

/// XcI(x, o1 unconnected) built with `old` (which lacks the input o2), carrying by hand an
/// unconnected slot for o2; the graph and the XcI node.
fn xci_with_a_slot_for_o2(old: &Arc<OpRegistry>) -> (Graph, NodeId) {
    let mut g = one_op(old, "XcI", &[true, false], &[]);
    let id = node_id(&g, "XcI_0");
    g.node_mut(id)
        .unwrap()
        .inputs
        .push(InputSlot::new("o2", 2, TensorDesc::default()));
    (g, id)
}

/// Row 7: graph IR lacks the optional input, target IR has it, yet the node has it connected
/// → error scenario (the node does not match its own IR): refuse.
#[test]
fn row7_connected_input_unknown_to_the_graph_version_is_refused() {
    let (old, new) = input_libs();
    let (mut g, id) = xci_with_a_slot_for_o2(&old);
    let src = OutPort {
        node: node_id(&g, "input_0"),
        index: 0,
    };
    g.add_data_edge(src, InPort { node: id, index: 2 }).unwrap();
    refused_with(
        &g,
        &old,
        &new,
        "node 'XcI_0' (XcI): input 'o2' is connected",
        &["8.0.0", "8.1.0"],
    );
}

/// Row 8: graph IR lacks the optional input, target IR has it, the input is unconnected
/// → backward compatibility, unused new input: ignore (it stays unconnected).
#[test]
fn row8_input_only_the_target_has_stays_unconnected() {
    let (old, new) = input_libs();
    let g = one_op(&old, "XcI", &[true, true], &[]);
    let (out, rep) = adapted(&g, &old, &new);
    assert_eq!(
        rep.changes,
        vec![Change::AddedInput {
            graph: "g".into(),
            node: "XcI_0".into(),
            op: "XcI".into(),
            input: "o2".into(),
            index: 2,
        }]
    );
    let n = out.node(node_id(&out, "XcI_0")).unwrap();
    assert_eq!(n.inputs.len(), 3);
    assert_eq!(n.inputs[2].name, "o2");
    assert_eq!(n.inputs[2].ir_index, 2);
    assert!(n.inputs[2].source.is_none());
    let expect = one_op(&new, "XcI", &[true, true, false], &[]);
    assert!(out == expect);
}

/// Row 8 also covers a node that already carries an unconnected slot for the target-only
/// input (made by hand): nothing is used, so it is accepted and the slot is made afresh.
#[test]
fn row8_unconnected_slot_unknown_to_the_graph_version_is_ignored() {
    let (old, new) = input_libs();
    let (g, _) = xci_with_a_slot_for_o2(&old);
    let (out, rep) = adapted(&g, &old, &new);
    assert!(rep.is_empty(), "{rep}");
    let expect = one_op(&new, "XcI", &[true, false, false], &[]);
    assert!(out == expect);
}

// =============================================================================================
// Consistency check and other incompatible changes
// =============================================================================================

/// The seed's consistency check: a prototype that both has things the other version lacks and
/// lacks things it has was changed incompatibly: refuse in both directions, even when unused.
#[test]
fn added_and_removed_in_one_op_is_refused_both_ways() {
    let v1 = op(
        "XcA",
        &[("x", "required"), ("o1", "optional")],
        vec![int_attr("b", 0)],
    );
    let v2 = op(
        "XcA",
        &[("x", "required"), ("o1", "optional")],
        vec![int_attr("c", 0)],
    );
    let v3 = op(
        "XcA",
        &[("x", "required"), ("o2", "optional")],
        vec![int_attr("b", 0)],
    );
    for (a, b) in [(v1.clone(), v2.clone()), (v2, v1.clone()), (v1, v3)] {
        let ra = reg("8.0.0", vec![a]);
        let rb = reg("8.1.0", vec![b]);
        let g = one_op(&ra, "XcA", &[true, false], &[]);
        refused_with(
            &g,
            &ra,
            &rb,
            "node 'XcA_0' (XcA): operator XcA changed incompatibly",
            &["8.0.0", "8.1.0"],
        );
    }
}

#[test]
fn op_missing_from_either_library_is_refused() {
    let (old, new) = attr_libs();
    let other = reg_op("8.1.0", "XcOther", &[("x", "required")], vec![]);
    let g = one_op(&old, "XcA", &[true], &[("a", 1.into())]);
    let m = refused(&g, &old, &other);
    assert_eq!(
        m,
        "node 'XcA_0' (XcA): library 8.1.0 does not have operator XcA (graph built against 8.0.0)"
    );
    // A node whose op the graph's own library lacks cannot be interpreted.
    let mut g2 = g.clone();
    g2.ops_version = "8.1.0".into();
    refused_with(
        &g2,
        &other,
        &new,
        "",
        &["library 8.1.0, which the graph was built against, does not have operator XcA"],
    );
}

#[test]
fn required_attribute_or_input_added_or_removed_is_refused() {
    let base = op("XcR", &[("x", "required")], vec![req_attr("a")]);
    let cases = [
        (
            op(
                "XcR",
                &[("x", "required")],
                vec![req_attr("a"), req_attr("z")],
            ),
            "requires attribute 'z'",
        ),
        (
            op(
                "XcR",
                &[("x", "required"), ("w", "required")],
                vec![req_attr("a")],
            ),
            "requires input 'w'",
        ),
    ];
    for (newer, want) in cases {
        let r0 = reg("8.0.0", vec![base.clone()]);
        let r1 = reg("8.1.0", vec![newer.clone()]);
        // Upgrading: the target requires something the graph has no value for.
        let g = one_op(&r0, "XcR", &[true], &[("a", 1.into())]);
        refused_with(&g, &r0, &r1, "", &[want, "node 'XcR_0' (XcR)"]);
        // Downgrading: a required attribute/input cannot be dropped.
        let by_input = want.contains("input");
        let g = build(&r1, |b, x| {
            let (ins, at) = if by_input {
                (vec![Some(x), Some(x)], vec![("a", AttrValue::Int(1))])
            } else {
                (
                    vec![Some(x)],
                    vec![("a", AttrValue::Int(1)), ("z", AttrValue::Int(2))],
                )
            };
            b.add_op("XcR", args(ins, &at)).unwrap();
        });
        refused_with(&g, &r1, &r0, "", &["required", "is not in library 8.0.0"]);
    }
}

#[test]
fn other_prototype_changes_are_refused() {
    let base = op(
        "XcC",
        &[("x", "required"), ("o1", "optional"), ("o2", "optional")],
        vec![int_attr("b", 0)],
    );
    let mut two_outputs = base.clone();
    two_outputs["outputs"] = json!([{"name": "y", "type": "T"}, {"name": "z", "type": "T"}]);
    let cases = [
        (
            op(
                "XcC",
                &[("x", "required"), ("o1", "optional"), ("o2", "optional")],
                vec![float_attr("b", 0.0)],
            ),
            "attribute 'b' is Int in library 8.0.0 but Float in library 8.1.0",
        ),
        (
            op(
                "XcC",
                &[("x", "required"), ("o2", "optional"), ("o1", "optional")],
                vec![int_attr("b", 0)],
            ),
            "the inputs were reordered",
        ),
        (two_outputs, "the outputs differ"),
    ];
    for (newer, want) in cases {
        let r0 = reg("8.0.0", vec![base.clone()]);
        let r1 = reg("8.1.0", vec![newer]);
        let g = one_op(&r0, "XcC", &[true, false, false], &[]);
        refused_with(
            &g,
            &r0,
            &r1,
            "node 'XcC_0' (XcC): operator XcC changed incompatibly",
            &[want],
        );
    }
}

/// Accepted differences the table does not name: a changed default keeps the node's value; an
/// input that became optional stays connected.
#[test]
fn changed_default_and_relaxed_input_keep_the_node_as_is() {
    let r0 = reg_op(
        "8.0.0",
        "XcD",
        &[("x", "required"), ("w", "required")],
        vec![int_attr("b", 1)],
    );
    let r1 = reg_op(
        "8.1.0",
        "XcD",
        &[("x", "required"), ("w", "optional"), ("o", "optional")],
        vec![int_attr("b", 2)],
    );
    let g = one_op(&r0, "XcD", &[true, true], &[]);
    let (out, rep) = adapted(&g, &r0, &r1);
    assert_eq!(rows(&rep), vec![8]);
    let n = out.node(node_id(&out, "XcD_0")).unwrap();
    assert_eq!(n.attrs.get("b"), Some(&AttrValue::Int(1)));
    assert!(n.inputs[1].source.is_some());
    // Back: 'o' is unconnected (row 6); 'w' turns required again and is connected.
    let (back, rep) = adapted(&out, &r1, &r0);
    assert_eq!(rows(&rep), vec![6]);
    assert!(back == g);
    // An unconnected input that the target requires is refused.
    let g = one_op(&r1, "XcD", &[true, false, false], &[]);
    refused_with(
        &g,
        &r1,
        &r0,
        "",
        &["input 'w' is optional in library 8.1.0 (graph) but required in library 8.0.0"],
    );
}

// =============================================================================================
// Tolerance, positions, dynamic inputs, subgraphs, errors
// =============================================================================================

/// Float defaults compare within 1e-5: 1e-6 off the default is unset, 1e-3 off is set.
#[test]
fn float_default_tolerance() {
    let r0 = reg_op("8.0.0", "XcF", &[("x", "required")], vec![]);
    let r1 = reg_op(
        "8.1.0",
        "XcF",
        &[("x", "required")],
        vec![float_attr("beta", 0.5)],
    );
    for (v, ok) in [
        (0.5f32, true),
        (0.5 + 1e-6, true),
        (0.5 - 1e-6, true),
        (0.5 + 1e-3, false),
        (0.5 - 1e-3, false),
    ] {
        let g = one_op(&r1, "XcF", &[true], &[("beta", AttrValue::Float(v))]);
        let mut work = g.clone();
        let r = adapt(&mut work, &r1, &r0);
        if ok {
            let rep = r.expect("within tolerance: unset");
            assert_eq!(rows(&rep), vec![2]);
        } else {
            let m = compat_msg(r);
            assert!(m.contains("attribute 'beta' is set to"), "{m}");
            assert!(work == g);
        }
    }
    // A large default: the tolerance is relative too.
    let r1 = reg_op(
        "8.1.0",
        "XcF",
        &[("x", "required")],
        vec![float_attr("beta", 1e6)],
    );
    let g = one_op(
        &r1,
        "XcF",
        &[true],
        &[("beta", AttrValue::Float(1e6 + 1.0))],
    );
    assert!(adapt(&mut g.clone(), &r1, &r0).is_ok());
}

/// A new optional input in the middle: later slots move to the target's indices, edges follow
/// (the producer's consumer list is renumbered too), in both directions.
#[test]
fn inserted_input_renumbers_later_slots_and_edges() {
    let r0 = reg_op(
        "8.0.0",
        "XcM",
        &[("x", "required"), ("y", "optional")],
        vec![],
    );
    let r1 = reg_op(
        "8.1.0",
        "XcM",
        &[("x", "required"), ("m", "optional"), ("y", "optional")],
        vec![],
    );
    let g = build(&r0, |b, x| {
        let a = b.add_op("XcM", args(vec![Some(x), None], &[])).unwrap();
        let a = OutPort { node: a, index: 0 };
        b.add_op("XcM", args(vec![Some(x), Some(a)], &[])).unwrap();
        b.add_op("XcM", args(vec![Some(a), Some(a)], &[])).unwrap();
    });
    let (up, rep) = adapted(&g, &r0, &r1);
    assert_eq!(rows(&rep), vec![8, 8, 8]);
    let n = up.node(node_id(&up, "XcM_1")).unwrap();
    assert_eq!(
        n.inputs
            .iter()
            .map(|s| (s.name.as_str(), s.ir_index))
            .collect::<Vec<_>>(),
        vec![("x", 0), ("m", 1), ("y", 2)]
    );
    let prod = up.node(node_id(&up, "XcM_0")).unwrap();
    let id1 = node_id(&up, "XcM_1");
    let id2 = node_id(&up, "XcM_2");
    assert_eq!(
        prod.outputs[0].consumers,
        vec![
            InPort {
                node: id1,
                index: 2
            },
            InPort {
                node: id2,
                index: 0
            },
            InPort {
                node: id2,
                index: 2
            },
        ]
    );
    let expect = build(&r1, |b, x| {
        let a = b
            .add_op("XcM", args(vec![Some(x), None, None], &[]))
            .unwrap();
        let a = OutPort { node: a, index: 0 };
        b.add_op("XcM", args(vec![Some(x), None, Some(a)], &[]))
            .unwrap();
        b.add_op("XcM", args(vec![Some(a), None, Some(a)], &[]))
            .unwrap();
    });
    assert!(up == expect);
    let (down, rep) = adapted(&up, &r1, &r0);
    assert_eq!(rows(&rep), vec![6, 6, 6]);
    assert!(down == g);
    let prod = down.node(node_id(&down, "XcM_0")).unwrap();
    assert_eq!(
        prod.outputs[0].consumers,
        vec![
            InPort {
                node: id1,
                index: 1
            },
            InPort {
                node: id2,
                index: 0
            },
            InPort {
                node: id2,
                index: 1
            },
        ]
    );
}

fn dyn_op(extra_inputs: &[(&str, &str)], extra_attrs: Vec<Value>) -> Value {
    let mut ins = vec![("x", "dynamic")];
    ins.extend_from_slice(extra_inputs);
    let mut attrs = vec![int_attr("N", 1)];
    attrs.extend(extra_attrs);
    let mut o = op("XcPack", &ins, attrs);
    o["derived_attrs"] = json!({"N": "len(x)"});
    o
}

/// Dynamic inputs declared identically in both versions: optional changes around them adapt.
#[test]
fn dynamic_inputs_declared_identically_adapt() {
    let r0 = reg("8.0.0", vec![dyn_op(&[], vec![])]);
    let r1 = reg(
        "8.1.0",
        vec![dyn_op(&[("w", "optional")], vec![int_attr("axis", 0)])],
    );
    let mk = |r: &Arc<OpRegistry>, with_w: bool| {
        build(r, |b, x| {
            let mut a = OpArgs {
                inputs: vec![vec![Some(x), Some(x), Some(x)]],
                ..Default::default()
            };
            if with_w {
                a.inputs.push(vec![None]);
            }
            b.add_op("XcPack", a).unwrap();
        })
    };
    let (up, rep) = adapted(&mk(&r0, false), &r0, &r1);
    assert_eq!(rows(&rep), vec![4, 8]);
    assert!(up == mk(&r1, true));
    let n = up.node(node_id(&up, "XcPack_0")).unwrap();
    assert_eq!(n.attrs.get("N"), Some(&AttrValue::Int(3)));
    let (down, rep) = adapted(&up, &r1, &r0);
    assert_eq!(rows(&rep), vec![2, 6]);
    assert!(down == mk(&r0, false));
}

/// A dynamic input that one version has and the other lacks is refused (not a table row).
#[test]
fn dynamic_input_added_or_removed_is_refused() {
    let r0 = reg("8.0.0", vec![dyn_op(&[], vec![])]);
    let r1 = reg("8.1.0", vec![dyn_op(&[("more", "dynamic")], vec![])]);
    let g = build(&r0, |b, x| {
        b.add_op(
            "XcPack",
            OpArgs {
                inputs: vec![vec![Some(x)]],
                ..Default::default()
            },
        )
        .unwrap();
    });
    refused_with(
        &g,
        &r0,
        &r1,
        "",
        &["dynamic input 'more' is in library 8.1.0 but not in library 8.0.0"],
    );
    let g = build(&r1, |b, x| {
        b.add_op(
            "XcPack",
            OpArgs {
                inputs: vec![vec![Some(x)], vec![]],
                ..Default::default()
            },
        )
        .unwrap();
    });
    refused_with(&g, &r1, &r0, "", &["dynamic input 'more'"]);
}

/// Adaptation reaches nodes inside subgraphs; refusals there say where.
#[test]
fn subgraphs_are_adapted_recursively() {
    let lp = {
        let mut o = op("XcLoop", &[("x", "required")], vec![]);
        o["subgraphs"] = json!([{"name": "body", "kind": "static"}]);
        o
    };
    let (old, new) = attr_libs();
    let r0 = reg("8.0.0", vec![old.get("XcA").unwrap().to_json(), lp.clone()]);
    let r1 = reg("8.1.0", vec![new.get("XcA").unwrap().to_json(), lp]);
    let mk = |r: &Arc<OpRegistry>, c: Option<i64>| {
        let mut sb = GraphBuilder::with_registry("body", r.clone());
        let sx = data(&mut sb, 0);
        let mut at = vec![("a", AttrValue::Int(1))];
        if let Some(c) = c {
            at.push(("c", AttrValue::Int(c)));
        }
        sb.add_op("XcA", args(vec![Some(sx)], &at)).unwrap();
        let body = sb.graph().clone();
        build(r, |b, x| {
            b.add_op(
                "XcLoop",
                OpArgs {
                    inputs: vec![vec![Some(x)]],
                    subgraphs: vec![vec![body]],
                    ..Default::default()
                },
            )
            .unwrap();
        })
    };
    let (out, rep) = adapted(&mk(&r1, None), &r1, &r0);
    assert_eq!(rows(&rep), vec![2]);
    match &rep.changes[0] {
        Change::RemovedAttr { graph, node, .. } => {
            assert_eq!((graph.as_str(), node.as_str()), ("body", "XcA_0"));
        }
        c => panic!("{c:?}"),
    }
    let lpn = out.node(node_id(&out, "XcLoop_0")).unwrap();
    let body = lpn.subgraph("body").unwrap();
    assert_eq!(body.ops_version, "8.0.0");
    assert!(out == mk(&r0, None));
    refused_with(
        &mk(&r1, Some(3)),
        &r1,
        &r0,
        "subgraph 'body' of node 'XcLoop_0': node 'XcA_0' (XcA): attribute 'c' is set to 3",
        &[],
    );
}

/// On any refusal the graph is exactly as before, even when earlier nodes had been adapted.
#[test]
fn graph_unchanged_after_error() {
    let (old, new) = attr_libs();
    let g = build(&new, |b, x| {
        for c in [7, 7, 9] {
            b.add_op(
                "XcA",
                args(vec![Some(x)], &[("a", 1.into()), ("c", c.into())]),
            )
            .unwrap();
        }
    });
    let mut work = g.clone();
    let m = compat_msg(adapt(&mut work, &new, &old));
    assert!(
        m.starts_with("node 'XcA_2' (XcA): attribute 'c' is set to 9"),
        "{m}"
    );
    assert!(work == g);
    assert_eq!(work.ops_version, "8.1.0");
    for id in work.nodes() {
        assert_eq!(work.node(id).unwrap(), g.node(id).unwrap());
    }
}

#[test]
fn version_mismatch_and_identity() {
    let (old, new) = attr_libs();
    let g = one_op(&old, "XcA", &[true], &[("a", 1.into())]);
    refused_with(
        &g,
        &new,
        &old,
        "",
        &["records operator library 8.0.0 but was to be adapted from library 8.1.0"],
    );
    let (same, rep) = adapted(&g, &old, &old);
    assert!(rep.is_empty());
    assert_eq!(rep.to_string(), "no changes");
    assert!(same == g);
}

#[test]
fn report_names_rows_and_nodes() {
    let (old, new) = attr_libs();
    let g = one_op(&old, "XcA", &[true], &[("a", 1.into())]);
    let (_, rep) = adapted(&g, &old, &new);
    assert_eq!(rep.changes[0].node(), "XcA_0");
    assert_eq!(
        rep.to_string(),
        "graph 'g', node 'XcA_0' (XcA): added attribute 'c' with its default 7"
    );
}

// =============================================================================================
// Property: adapt agrees with an independent reading of the table
// =============================================================================================

/// An optional attribute: (name, is_float, default as an integer seed).
type AttrSpec = (String, bool, i64);

#[derive(Debug, Clone)]
struct Evolution {
    /// Optional inputs i0..i2 present in the base version.
    base_inputs: Vec<bool>,
    /// Optional attributes a0..a2 present in the base version: (present, is_float, default).
    base_attrs: Vec<(bool, bool, i64)>,
    /// Whether the evolution only adds (keeps every base input and attribute); else it may also
    /// drop some, which mostly trips the consistency check.
    pure: bool,
    keep_inputs: Vec<bool>,
    keep_attrs: Vec<bool>,
    /// New optional inputs n0, n1: (present, insert position seed).
    new_inputs: Vec<(bool, usize)>,
    /// New optional attributes m0, m1: (present, is_float, default).
    new_attrs: Vec<(bool, bool, i64)>,
    add_req_attr: bool,
    add_req_input: bool,
    drop_req_attr: bool,
    /// Whether the graph is built against the base version (else against the evolved one).
    graph_is_base: bool,
    nodes: Vec<NodeCase>,
}

#[derive(Debug, Clone)]
struct NodeCase {
    /// Per optional input of the graph's version (by position): connected or not.
    connect: Vec<bool>,
    /// Per optional attribute of the graph's version: 0 not given, 1 default, 2 within
    /// tolerance of the default, 3 a different value.
    attr_choice: Vec<u8>,
    r: i64,
    /// Put a target-only attribute on the node by hand (row 3).
    inject: bool,
}

/// One version of the op: its optional inputs (in order), optional attributes, and whether it
/// has the required attribute `r`, the required attribute `rq` and the required input `xq`.
#[derive(Debug, Clone)]
struct Version {
    inputs: Vec<String>,
    attrs: Vec<AttrSpec>,
    has_r: bool,
    has_rq: bool,
    has_xq: bool,
}

fn default_of(a: &AttrSpec) -> AttrValue {
    if a.1 {
        AttrValue::Float(a.2 as f32 * 0.25)
    } else {
        AttrValue::Int(a.2)
    }
}

fn value_for(a: &AttrSpec, choice: u8) -> Option<AttrValue> {
    match (choice, a.1) {
        (0, _) => None,
        (1, _) => Some(default_of(a)),
        (2, true) => Some(AttrValue::Float(a.2 as f32 * 0.25 + 1e-6)),
        (2, false) => Some(AttrValue::Int(a.2)),
        (_, true) => Some(AttrValue::Float(a.2 as f32 * 0.25 + 0.5)),
        (_, false) => Some(AttrValue::Int(a.2 + 1)),
    }
}

fn versions(e: &Evolution) -> (Version, Version) {
    let base_inputs: Vec<String> = (0..3)
        .filter(|&k| e.base_inputs[k])
        .map(|k| format!("i{k}"))
        .collect();
    let base_attrs: Vec<AttrSpec> = (0..3)
        .filter(|&k| e.base_attrs[k].0)
        .map(|k| (format!("a{k}"), e.base_attrs[k].1, e.base_attrs[k].2))
        .collect();
    let base = Version {
        inputs: base_inputs.clone(),
        attrs: base_attrs.clone(),
        has_r: true,
        has_rq: false,
        has_xq: false,
    };
    let mut inputs: Vec<String> = base_inputs
        .iter()
        .enumerate()
        .filter(|(k, _)| e.pure || e.keep_inputs[*k])
        .map(|(_, n)| n.clone())
        .collect();
    for (k, (present, pos)) in e.new_inputs.iter().enumerate() {
        if *present {
            let p = pos % (inputs.len() + 1);
            inputs.insert(p, format!("n{k}"));
        }
    }
    let mut attrs: Vec<AttrSpec> = base_attrs
        .iter()
        .enumerate()
        .filter(|(k, _)| e.pure || e.keep_attrs[*k])
        .map(|(_, a)| a.clone())
        .collect();
    for (k, (present, fl, d)) in e.new_attrs.iter().enumerate() {
        if *present {
            attrs.push((format!("m{k}"), *fl, *d));
        }
    }
    let evolved = Version {
        inputs,
        attrs,
        has_r: !e.drop_req_attr,
        has_rq: e.add_req_attr,
        has_xq: e.add_req_input,
    };
    (base, evolved)
}

fn op_of(v: &Version) -> Value {
    let mut ins: Vec<(&str, &str)> = vec![("x", "required")];
    ins.extend(v.inputs.iter().map(|n| (n.as_str(), "optional")));
    if v.has_xq {
        ins.push(("xq", "required"));
    }
    let mut attrs: Vec<Value> = Vec::new();
    if v.has_r {
        attrs.push(req_attr("r"));
    }
    if v.has_rq {
        attrs.push(req_attr("rq"));
    }
    for a in &v.attrs {
        attrs.push(match default_of(a) {
            AttrValue::Float(f) => float_attr(&a.0, f),
            AttrValue::Int(i) => int_attr(&a.0, i),
            _ => unreachable!(),
        });
    }
    op("XcP", &ins, attrs)
}

/// The call a node makes, described per name: connected optional inputs and given attributes.
struct Call {
    connected: Vec<String>,
    attrs: Vec<(String, AttrValue)>,
    r: i64,
}

fn call_for(v: &Version, n: &NodeCase) -> Call {
    Call {
        connected: v
            .inputs
            .iter()
            .enumerate()
            .filter(|(k, _)| n.connect[*k])
            .map(|(_, s)| s.clone())
            .collect(),
        attrs: v
            .attrs
            .iter()
            .enumerate()
            .filter_map(|(k, a)| value_for(a, n.attr_choice[k]).map(|val| (a.0.clone(), val)))
            .collect(),
        r: n.r,
    }
}

/// Builds the graph of `calls` against version `v`; unknown names in a call are dropped (the
/// same call made against another version).
fn build_calls(v: &Version, r: &Arc<OpRegistry>, calls: &[Call]) -> Graph {
    build(r, |b, x| {
        for c in calls {
            let mut inputs = vec![Some(x)];
            for name in &v.inputs {
                inputs.push(c.connected.contains(name).then_some(x));
            }
            if v.has_xq {
                inputs.push(Some(x));
            }
            let mut at: Vec<(&str, AttrValue)> = Vec::new();
            if v.has_r {
                at.push(("r", AttrValue::Int(c.r)));
            }
            if v.has_rq {
                at.push(("rq", AttrValue::Int(0)));
            }
            for (k, val) in &c.attrs {
                if v.attrs.iter().any(|a| &a.0 == k) {
                    at.push((k.as_str(), val.clone()));
                }
            }
            b.add_op("XcP", args(inputs, &at)).unwrap();
        }
    })
}

/// The table, read independently: Some(reason) when adaptation must refuse.
fn reference(from: &Version, to: &Version, calls: &[Call], injected: bool) -> Option<&'static str> {
    let names = |v: &Version| -> Vec<(String, bool)> {
        let mut s: Vec<(String, bool)> = v
            .inputs
            .iter()
            .map(|n| (format!("in:{n}"), false))
            .chain(v.attrs.iter().map(|a| (format!("attr:{}", a.0), false)))
            .collect();
        if v.has_r {
            s.push(("attr:r".into(), true));
        }
        if v.has_rq {
            s.push(("attr:rq".into(), true));
        }
        if v.has_xq {
            s.push(("in:xq".into(), true));
        }
        s
    };
    let (nf, nt) = (names(from), names(to));
    let graph_extra: Vec<&(String, bool)> = nf
        .iter()
        .filter(|a| !nt.iter().any(|b| b.0 == a.0))
        .collect();
    let target_extra: Vec<&(String, bool)> = nt
        .iter()
        .filter(|a| !nf.iter().any(|b| b.0 == a.0))
        .collect();
    if calls.is_empty() {
        return None;
    }
    if !graph_extra.is_empty() && !target_extra.is_empty() {
        return Some("consistency check");
    }
    if graph_extra.iter().chain(&target_extra).any(|a| a.1) {
        return Some("required added or removed");
    }
    if injected {
        return Some("row 3");
    }
    for c in calls {
        for (k, val) in &c.attrs {
            if !to.attrs.iter().any(|a| &a.0 == k) {
                let spec = from.attrs.iter().find(|a| &a.0 == k).unwrap();
                // Choices 1 and 2 are at the default (2: within 1e-6); 3 is 0.5 or 1 off.
                let used = match (val, default_of(spec)) {
                    (AttrValue::Float(a), AttrValue::Float(d)) => (a - d).abs() > 0.1,
                    (a, d) => *a != d,
                };
                if used {
                    return Some("row 1");
                }
            }
        }
        if c.connected.iter().any(|n| !to.inputs.contains(n)) {
            return Some("row 5");
        }
    }
    None
}

fn evolution() -> impl Strategy<Value = Evolution> {
    let attr = || (any::<bool>(), any::<bool>(), -3i64..4);
    let node = (
        prop::collection::vec(any::<bool>(), 6),
        prop::collection::vec(0u8..4, 6),
        -5i64..5,
        prop::bool::weighted(0.1),
    )
        .prop_map(|(connect, attr_choice, r, inject)| NodeCase {
            connect,
            attr_choice,
            r,
            inject,
        });
    (
        (
            prop::collection::vec(any::<bool>(), 3),
            prop::collection::vec(attr(), 3),
            prop::collection::vec(any::<bool>(), 3),
            prop::collection::vec(any::<bool>(), 3),
            prop::collection::vec((any::<bool>(), 0usize..8), 2),
            prop::collection::vec(attr(), 2),
            prop::bool::weighted(0.7),
        ),
        (
            prop::bool::weighted(0.1),
            prop::bool::weighted(0.1),
            prop::bool::weighted(0.1),
            any::<bool>(),
            prop::collection::vec(node, 1..4),
        ),
    )
        .prop_map(
            |(
                (base_inputs, base_attrs, keep_inputs, keep_attrs, new_inputs, new_attrs, pure),
                (add_req_attr, add_req_input, drop_req_attr, graph_is_base, nodes),
            )| Evolution {
                base_inputs,
                base_attrs,
                pure,
                keep_inputs,
                keep_attrs,
                new_inputs,
                new_attrs,
                add_req_attr,
                add_req_input,
                drop_req_attr,
                graph_is_base,
                nodes,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Random prototype evolutions and graphs: adapt refuses exactly when the table (read
    /// independently above) says so, leaves the graph unchanged then, and otherwise yields
    /// exactly the graph `GraphBuilder::add_op` builds for the same calls under the target.
    #[test]
    fn adapt_matches_the_table(e in evolution()) {
        let (base, evolved) = versions(&e);
        let (from, to) = if e.graph_is_base { (base, evolved) } else { (evolved, base) };
        let rf = reg("1.0.0", vec![op_of(&from)]);
        let rt = reg("2.0.0", vec![op_of(&to)]);
        let calls: Vec<Call> = e.nodes.iter().map(|n| call_for(&from, n)).collect();
        let mut g = build_calls(&from, &rf, &calls);
        // Row 3 by hand: a target-only attribute on the first node that asks for it.
        let target_only: Vec<&AttrSpec> = to
            .attrs
            .iter()
            .filter(|a| !from.attrs.iter().any(|b| b.0 == a.0))
            .collect();
        let mut injected = false;
        if let (Some(k), Some(a)) = (e.nodes.iter().position(|n| n.inject), target_only.first()) {
            let id = node_id(&g, &format!("XcP_{k}"));
            g.node_mut(id).unwrap().attrs.insert(a.0.clone(), default_of(a));
            injected = true;
        }
        let before = g.clone();
        let expect_refusal = reference(&from, &to, &calls, injected);
        let result = adapt(&mut g, &rf, &rt);
        match (expect_refusal, result) {
            (Some(_), Err(Error::Compatibility(m))) => {
                prop_assert!(g == before, "graph changed after refusal: {}", m);
                prop_assert!(m.contains("XcP"), "{}", m);
                prop_assert!(m.contains("1.0.0") || m.contains("2.0.0"), "{}", m);
            }
            (None, Ok(rep)) => {
                let expect = build_calls(&to, &rt, &calls);
                prop_assert!(g.check_integrity().is_ok());
                prop_assert_eq!(&g.ops_version, "2.0.0");
                for (a, b) in g.nodes().into_iter().zip(expect.nodes()) {
                    let (na, nb) = (g.node(a).unwrap(), expect.node(b).unwrap());
                    prop_assert_eq!(&na.attrs, &nb.attrs, "attrs of {}", na.name);
                    prop_assert_eq!(&na.inputs.iter().map(|s| (s.name.clone(), s.ir_index, s.source.is_some(), s.desc.clone())).collect::<Vec<_>>(),
                                    &nb.inputs.iter().map(|s| (s.name.clone(), s.ir_index, s.source.is_some(), s.desc.clone())).collect::<Vec<_>>(),
                                    "inputs of {}", na.name);
                }
                prop_assert!(g == expect, "adapted graph differs from the target build");
                prop_assert!(rep.changes.iter().all(|c| [2, 4, 6, 8].contains(&c.row())));
            }
            (want, got) => {
                prop_assert!(false, "reference says {:?}, adapt gave {:?}", want, got);
            }
        }
    }
}
