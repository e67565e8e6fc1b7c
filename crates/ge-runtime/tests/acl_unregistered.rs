//! A program that never registered the ACL backend (ge-runtime alone, without ge-acl):
//! `ge.device=acl` is a device error that says so, and `auto` runs on the CPU with a note.

mod common;

use es_core::{es, GraphBuilder};
use ge_runtime::{Error, Session};
use std::collections::BTreeMap;

fn opts(device: &str) -> BTreeMap<String, String> {
    [("ge.device".to_string(), device.to_string())].into()
}

#[test]
fn acl_without_a_registered_backend_is_a_device_error_and_auto_uses_the_cpu() {
    let e = Session::new(&opts("acl")).unwrap_err();
    assert!(matches!(e, Error::Device(_)), "{e}");
    assert!(e.to_string().contains("ge_acl::register()"), "{e}");
    let s = Session::new(&opts("auto")).unwrap();
    let notes = s.take_device_notes();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("running on the CPU"), "{}", notes[0]);
    let mut b = GraphBuilder::new("g");
    let x = common::float_input(&mut b);
    let y = es::relu(&mut b, x).unwrap();
    b.set_output(y, 0).unwrap();
    let graph = b.build_and_reset().unwrap();
    s.add_graph(1, graph, &BTreeMap::new()).unwrap();
    assert!(!s.runs_on_acl(1).unwrap());
    let x = ge_runtime::Value::F32(
        ge_runtime::ndarray::ArrayD::from_shape_vec(vec![2], vec![-1.0, 2.0]).unwrap(),
    );
    assert_eq!(
        s.run_graph(1, vec![x]).unwrap()[0].to_f64_vec(),
        vec![0.0, 2.0]
    );
}
