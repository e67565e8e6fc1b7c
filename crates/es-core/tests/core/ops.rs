//! Operator prototypes and the operator library (`es_core::ops`).

use super::*;

#[test]
fn builtin_registry_parses_and_checks() {
    let reg = builtin_registry().expect("built-in operator library parses");
    assert!(reg.len() >= 54, "{}", reg.len());
    assert!(!reg.is_empty());
    assert_eq!(reg.version, BUILTIN_VERSION);
    assert_eq!(reg.iter().count(), reg.len());
    for p in reg.iter() {
        p.check().unwrap_or_else(|e| panic!("{}: {e}", p.name));
    }
    for name in [
        "Data",
        "Const",
        "Add",
        "ConcatD",
        "SplitD",
        "IdentityN",
        "If",
        "Case",
        "While",
    ] {
        assert!(reg.get(name).is_some(), "{name}");
    }
    assert!(reg.get("NoSuchOp").is_none());
    // The global registry starts from the built-in library.
    let g = global_registry();
    for p in reg.iter() {
        assert_eq!(**g.get(&p.name).unwrap(), **p);
    }
}

#[test]
fn every_prototype_json_round_trips() {
    let reg = builtin_registry().unwrap();
    for p in reg.iter() {
        let j = p.to_json();
        let back = OpProto::from_json(&j).unwrap_or_else(|e| panic!("{}: {e}", p.name));
        assert_eq!(back, **p, "{}", p.name);
        // And through text.
        let text = serde_json::to_string(&j).unwrap();
        let back2 = OpProto::from_json(&serde_json::from_str(&text).unwrap()).unwrap();
        assert_eq!(back2, **p, "{}", p.name);
    }
    // The whole registry.
    let text = serde_json::to_string(&reg.to_json()).unwrap();
    let reg2 = OpRegistry::from_json_str(&text).unwrap();
    assert_eq!(reg2.version, reg.version);
    let a: Vec<_> = reg.iter().map(|p| (**p).clone()).collect();
    let b: Vec<_> = reg2.iter().map(|p| (**p).clone()).collect();
    assert_eq!(a, b);
}

#[test]
fn prototype_details() {
    let reg = builtin_registry().unwrap();
    let concat = reg.get("ConcatD").unwrap();
    assert_eq!(concat.input("x").unwrap().0, 0);
    assert!(concat.attr("concat_dim").unwrap().required());
    assert!(!concat.attr("N").unwrap().required());
    // Derived attributes are not asked for; required ones come first.
    let user: Vec<String> = concat
        .user_attrs()
        .iter()
        .map(|a| a.name.to_string())
        .collect();
    assert_eq!(user, vec!["concat_dim".to_string()]);
    assert!(reg.get("Add").unwrap().commutative);
    assert!(!reg.get("Relu").unwrap().commutative);
}

/// A valid operator definition to break in different ways.
fn foo_op() -> serde_json::Value {
    serde_json::json!({
        "name": "Foo",
        "inputs": [{"name": "x", "kind": "dynamic", "type": "T"},
                   {"name": "w", "kind": "optional", "type": ["DT_FLOAT"]}],
        "outputs": [{"name": "y", "kind": "dynamic", "type": "T"}],
        "attrs": [{"name": "n", "type": "Int", "default": 1},
                  {"name": "axis", "type": "Int", "required": true}],
        "type_vars": {"T": ["DT_FLOAT", "@IndexNumberType"]},
        "derived_attrs": {"n": "len(x)"},
        "output_counts": {"y": "attr(axis)"}
    })
}

/// An edit of an operator's JSON definition.
type Edit = fn(&mut serde_json::Value);

fn foo_err(edit: impl FnOnce(&mut serde_json::Value)) -> String {
    let mut j = foo_op();
    edit(&mut j);
    let e = OpProto::from_json(&j).expect_err("malformed operator must not parse");
    let s = e.to_string();
    assert!(s.contains("Foo"), "error does not name the operator: {s}");
    s
}

#[test]
fn malformed_operator_json_errors_name_the_operator() {
    use serde_json::json;
    let p = OpProto::from_json(&foo_op()).expect("the base definition is valid");
    assert_eq!(
        p.type_vars["T"],
        vec![DataType::FLOAT, DataType::INT32, DataType::INT64]
    );

    // (an edit of the valid definition, a part of the error it must give)
    let cases: [(Edit, &str); 15] = [
        (|j| j["inputs"][0]["type"] = json!("U"), "'U'"),
        (|j| j["inputs"][0]["kind"] = json!("variadic"), "variadic"),
        (|j| j["outputs"][0]["kind"] = json!("optional"), "optional"),
        (
            |j| j["inputs"][0]["kind"] = json!("required"),
            "not a dynamic input",
        ),
        (
            |j| j["derived_attrs"] = json!({"n": "len(w)"}),
            "not a dynamic input",
        ),
        (
            |j| j["derived_attrs"] = json!({"n": "count(x)"}),
            "count(x)",
        ),
        (
            |j| j["derived_attrs"] = json!({"missing": "len(x)"}),
            "missing",
        ),
        (|j| j["output_counts"] = json!({"y": "attr(nope)"}), "nope"),
        (
            |j| j["outputs"][0]["kind"] = json!("required"),
            "not a dynamic output",
        ),
        (
            |j| j["attrs"][0] = json!({"name": "n", "type": "Int"}),
            "neither required nor defaulted",
        ),
        (|j| j["attrs"][0]["type"] = json!("Integer"), "Integer"),
        (|j| j["attrs"][0]["default"] = json!("one"), "attribute n"),
        (|j| j["attrs"][1]["name"] = json!("x"), "used twice"),
        (|j| j["type_vars"]["T"] = json!(["@Nope"]), "@Nope"),
        (|j| j["type_vars"]["T"] = json!(["DT_FLAOT"]), "DT_FLAOT"),
    ];
    for (k, (edit, part)) in cases.into_iter().enumerate() {
        let e = foo_err(edit);
        assert!(e.contains(part), "case {k}: {e}");
    }
    foo_err(|j| j["type_vars"] = json!([]));
    foo_err(|j| j["inputs"][1] = json!({"name": "w", "kind": "optional"}));
    foo_err(|j| j["inputs"][1] = json!({"kind": "optional", "type": ["DT_FLOAT"]}));
    foo_err(|j| j["subgraphs"] = json!([{"name": "body", "kind": "sometimes"}]));

    assert!(OpProto::from_json(&json!({"inputs": []})).is_err());
    assert!(OpProto::from_json(&json!([1, 2])).is_err());
}

#[test]
fn malformed_operator_library_errors() {
    let one_op =
        |p: &serde_json::Value| serde_json::json!({"version": "9", "operators": [p]}).to_string();
    let reg = OpRegistry::from_json_str(&one_op(&foo_op())).unwrap();
    assert_eq!(reg.version, "9");
    assert_eq!(reg.len(), 1);

    let dup = serde_json::json!({"operators": [foo_op(), foo_op()]}).to_string();
    let e = OpRegistry::from_json_str(&dup).unwrap_err().to_string();
    assert!(e.contains("Foo") && e.contains("twice"), "{e}");

    let mut broken = foo_op();
    broken["inputs"][0]["type"] = serde_json::json!("U");
    let e = OpRegistry::from_json_str(&one_op(&broken))
        .unwrap_err()
        .to_string();
    assert!(e.contains("Foo"), "{e}");

    assert!(OpRegistry::from_json_str("not json").is_err());
    assert!(OpRegistry::from_json_str("{}").is_err());
    assert!(OpRegistry::from_json_str(r#"{"operators": {}}"#).is_err());
}
