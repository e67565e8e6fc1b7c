//! With no ACL installed: `ge.device=acl` is a device error that says where it looked and how
//! to fix it; `auto` falls back to the CPU. (Its own test binary: ACL, once loaded, stays
//! loaded for the process.)

use ge_runtime::{Error, Session};
use std::collections::BTreeMap;

#[test]
fn acl_without_the_libraries_is_a_device_error_and_auto_uses_the_cpu() {
    let dir = tempfile::tempdir().unwrap();
    std::env::set_var("ASCEND_HOME_PATH", dir.path());
    std::env::remove_var("ASCEND_TOOLKIT_HOME");
    ge_acl::register();
    if std::path::Path::new("/usr/local/Ascend/ascend-toolkit/latest/lib64/libascendcl.so").exists()
    {
        return; // a machine with CANN installed: nothing missing to test
    }
    let o: BTreeMap<String, String> = [("ge.device".to_string(), "acl".to_string())].into();
    let e = Session::new(&o).unwrap_err();
    let m = e.to_string();
    assert!(matches!(e, Error::Device(_)), "{m}");
    assert!(
        m.contains(&dir.path().join("lib64").display().to_string()),
        "{m}"
    );
    assert!(
        m.contains("/usr/local/Ascend/ascend-toolkit/latest/lib64"),
        "{m}"
    );
    assert!(m.contains("set_env.sh"), "{m}");
    // Per graph too.
    let s = Session::new(&BTreeMap::new()).unwrap();
    let g = es_core::GraphBuilder::new("empty");
    let e = s.add_graph(1, g.graph().clone(), &o).unwrap_err();
    assert!(matches!(e, Error::Device(_)));
    // auto: the CPU.
    let a: BTreeMap<String, String> = [("ge.device".to_string(), "auto".to_string())].into();
    let s = Session::new(&a).unwrap();
    let mut b = es_core::GraphBuilder::new("g");
    let x = b
        .create_input(
            0,
            None,
            "Data",
            es_core::DataType::FLOAT,
            es_core::Format::ND,
            es_core::Shape::new(vec![2]),
        )
        .unwrap();
    let y = es_core::es::relu(&mut b, x).unwrap();
    b.set_output(y, 0).unwrap();
    s.add_graph(1, b.build_and_reset().unwrap(), &BTreeMap::new())
        .unwrap();
    assert!(!s.runs_on_acl(1).unwrap());
}
