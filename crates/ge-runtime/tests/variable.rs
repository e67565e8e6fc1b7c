//! Variable nodes: the input when connected, else the `value` attribute (the initial value),
//! else an error naming the variable.

mod common;

use es_core::attr::AttrValue;
use es_core::builder::OpArgs;
use es_core::graph::InPort;
use es_core::{GraphBuilder, Tensor};
use ge_runtime::{Session, Value};
use std::collections::BTreeMap;

/// y = x + var, where var is a Variable whose input edge is removed when `detach`.
fn graph(value: Option<Tensor>, detach: bool) -> es_core::Graph {
    let mut b = GraphBuilder::new("g");
    let x = common::float_input(&mut b);
    let init = b
        .create_const(
            Tensor::from_values(&[10.0f32, 20.0], vec![2]).unwrap(),
            None,
        )
        .unwrap();
    let mut args = OpArgs {
        inputs: vec![vec![Some(init)]],
        name: Some("weights".into()),
        ..Default::default()
    };
    if let Some(v) = value {
        args.attrs.insert("value".into(), AttrValue::Tensor(v));
    }
    let var = b.add_op("Variable", args).unwrap();
    let y = es_core::es::add(
        &mut b,
        x,
        es_core::OutPort {
            node: var,
            index: 0,
        },
    )
    .unwrap();
    b.set_output(y, 0).unwrap();
    let mut g = b.build_and_reset().unwrap();
    if detach {
        g.remove_data_edge(
            init,
            InPort {
                node: var,
                index: 0,
            },
        )
        .unwrap();
    }
    g
}

fn run(g: es_core::Graph, mode: &str) -> ge_runtime::Result<Vec<f64>> {
    let opts = BTreeMap::from([("ge.graphMode".to_string(), mode.to_string())]);
    let s = Session::new(&opts)?;
    s.add_graph(1, g, &BTreeMap::new())?;
    let x = Value::F32(ndarray::ArrayD::from_shape_vec(vec![2], vec![1.0, 2.0]).unwrap());
    Ok(s.run_graph(1, vec![x])?[0].to_f64_vec())
}

#[test]
fn a_connected_variable_reads_its_input() {
    for mode in ["on", "off"] {
        assert_eq!(run(graph(None, false), mode).unwrap(), vec![11.0, 22.0]);
    }
}

#[test]
fn an_unconnected_variable_reads_its_value_attribute() {
    let v = Tensor::from_values(&[100.0f32, 200.0], vec![2]).unwrap();
    for mode in ["on", "off"] {
        assert_eq!(
            run(graph(Some(v.clone()), true), mode).unwrap(),
            vec![101.0, 202.0]
        );
    }
}

#[test]
fn a_variable_without_a_value_is_an_error_naming_it() {
    let e = run(graph(None, true), "on").unwrap_err().to_string();
    assert!(e.contains("variable 'weights' has no value"), "{e}");
}
