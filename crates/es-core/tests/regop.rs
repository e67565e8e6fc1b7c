//! Tests of the REG_OP prototype-text parser (`es_core::regop::parse_regop`): real-style
//! operator headers parsed into exact prototypes, malformed texts with positioned errors,
//! JSON round trips, use of parsed prototypes in a builder, and robustness (no panics).

use std::collections::BTreeMap;
use std::sync::Arc;

use es_core::attr::{AttrType, AttrValue};
use es_core::builder::{GraphBuilder, OpArgs};
use es_core::ops::{
    AttrDef, IoDef, IoKind, OpProto, OpRegistry, SubgraphDef, SubgraphKind, TypeSpec,
};
use es_core::regop::parse_regop;
use es_core::{DataType, Error, Format, Shape, Tensor};

use DataType::*;

// =============================================================================================
// Helpers
// =============================================================================================

fn parse(text: &str) -> Vec<OpProto> {
    match parse_regop(text) {
        Ok(v) => v,
        Err(e) => panic!("parse failed: {e}\n--- text ---\n{text}"),
    }
}

fn parse_one(text: &str) -> OpProto {
    let v = parse(text);
    assert_eq!(v.len(), 1, "expected one operator");
    v.into_iter().next().unwrap()
}

/// The message of the Value error `text` gives.
fn err(text: &str) -> String {
    match parse_regop(text) {
        Ok(v) => panic!(
            "expected an error, parsed {:?}\n--- text ---\n{text}",
            v.iter().map(|p| &p.name).collect::<Vec<_>>()
        ),
        Err(Error::Value(m)) => m,
        Err(other) => panic!("expected Error::Value, got {other:?}"),
    }
}

/// Asserts that `msg` starts with `prefix` and contains every one of `parts`.
fn assert_msg(msg: &str, prefix: &str, parts: &[&str]) {
    assert!(
        msg.starts_with(prefix),
        "message {msg:?} should start with {prefix:?}"
    );
    for p in parts {
        assert!(msg.contains(p), "message {msg:?} should contain {p:?}");
    }
}

/// The text of `src` (lines) must fail to parse with a message starting with `prefix` and
/// containing each of `parts`.
fn rejects(src: &[&str], prefix: &str, parts: &[&str]) {
    assert_msg(&err(&lines(src)), prefix, parts);
}

fn lines(l: &[&str]) -> String {
    l.join("\n")
}

fn io(name: &str, kind: IoKind, ty: TypeSpec) -> IoDef {
    IoDef {
        name: name.into(),
        kind,
        ty,
        since: None,
    }
}

fn list(l: &[DataType]) -> TypeSpec {
    TypeSpec::List(l.to_vec())
}

fn var(v: &str) -> TypeSpec {
    TypeSpec::Var(v.into())
}

fn attr(name: &str, ty: AttrType, default: Option<AttrValue>) -> AttrDef {
    AttrDef {
        name: name.into(),
        ty,
        default,
        since: None,
    }
}

fn proto(name: &str, doc: &str) -> OpProto {
    OpProto {
        name: name.into(),
        doc: doc.into(),
        inputs: vec![],
        outputs: vec![],
        attrs: vec![],
        subgraphs: vec![],
        type_vars: BTreeMap::new(),
        commutative: false,
        derived_attrs: BTreeMap::new(),
        output_counts: BTreeMap::new(),
    }
}

fn empty_tensor() -> AttrValue {
    AttrValue::Tensor(Tensor::from_values::<f32>(&[], vec![0]).unwrap())
}

/// `TensorType::ALL()` as GE's ops.rs defines it.
fn all_types() -> Vec<DataType> {
    es_core::ops::named_type_set("ALL").unwrap()
}

// =============================================================================================
// Real-style texts
// =============================================================================================

const MATMUL: &str = r#"/**
*@brief Multiplies matrix "a" by matrix "b", producing "a * b" . \n

*@par Inputs:
*Four inputs, including:
* @li x1: A matrix Tensor. 2D. Must be one of the following types: float16,
* float32, int32. Has format [ND, NHWC, FRACTAL_NZ].
* @li bias: A 1D Tensor. Must be one of the following types: float16,
* float32, int32. Has format [ND, NHWC] . \n

*@par Attributes:
*@li transpose_x1: A bool. If True, changes the shape of "x1" from [M, K] to [K, M].
*/
REG_OP(MatMulV2)
    .INPUT(x1, TensorType({DT_FLOAT, DT_FLOAT16, DT_INT32, DT_INT8}))
    .INPUT(x2, TensorType({DT_FLOAT, DT_FLOAT16, DT_INT32, DT_INT8}))
    .OPTIONAL_INPUT(bias, TensorType({DT_FLOAT, DT_FLOAT16, DT_INT32}))
    .OUTPUT(y, TensorType({DT_FLOAT, DT_FLOAT16, DT_INT32}))
    .OPTIONAL_INPUT(offset_w, TensorType({DT_INT8}))
    .ATTR(transpose_x1, Bool, false)
    .ATTR(transpose_x2, Bool, false)
    .ATTR(offset_x, Int, 0)
    .OP_END_FACTORY_REG(MatMulV2)
"#;

#[test]
fn matmul_v2_optional_inputs_and_attrs() {
    let p = parse_one(MATMUL);
    let mut want = proto(
        "MatMulV2",
        "Multiplies matrix \"a\" by matrix \"b\", producing \"a * b\".",
    );
    let t4 = [FLOAT, FLOAT16, INT32, INT8];
    let t3 = [FLOAT, FLOAT16, INT32];
    want.inputs = vec![
        io("x1", IoKind::Required, list(&t4)),
        io("x2", IoKind::Required, list(&t4)),
        io("bias", IoKind::Optional, list(&t3)),
        io("offset_w", IoKind::Optional, list(&[INT8])),
    ];
    want.outputs = vec![io("y", IoKind::Required, list(&t3))];
    want.attrs = vec![
        attr("transpose_x1", AttrType::Bool, Some(AttrValue::Bool(false))),
        attr("transpose_x2", AttrType::Bool, Some(AttrValue::Bool(false))),
        attr("offset_x", AttrType::Int, Some(AttrValue::Int(0))),
    ];
    assert_eq!(p, want);
}

const CONCAT_D: &str = r#"
/**
*@brief Concatenates tensors along one dimension . \n

*@par Inputs:
* x: Dynamic input. A ND Tensor.
*/
REG_OP(ConcatD)
    .DYNAMIC_INPUT(x, TensorType({DT_FLOAT, DT_FLOAT16, DT_INT8, DT_INT16, DT_INT32,
                                  DT_INT64, DT_UINT8, DT_UINT16, DT_UINT32, DT_UINT64}))
    .OUTPUT(y, TensorType({DT_FLOAT, DT_FLOAT16, DT_INT8, DT_INT16, DT_INT32, \
        DT_INT64, DT_UINT8, DT_UINT16, DT_UINT32, DT_UINT64}))
    .REQUIRED_ATTR(concat_dim, Int)
    .ATTR(N, Int, 1)
    .OP_END_FACTORY_REG(ConcatD);
"#;

#[test]
fn concat_d_dynamic_input_and_required_attr() {
    let p = parse_one(CONCAT_D);
    let t = [
        FLOAT, FLOAT16, INT8, INT16, INT32, INT64, UINT8, UINT16, UINT32, UINT64,
    ];
    let mut want = proto("ConcatD", "Concatenates tensors along one dimension.");
    want.inputs = vec![io("x", IoKind::Dynamic, list(&t))];
    want.outputs = vec![io("y", IoKind::Required, list(&t))];
    want.attrs = vec![
        attr("concat_dim", AttrType::Int, None),
        attr("N", AttrType::Int, Some(AttrValue::Int(1))),
    ];
    assert_eq!(p, want);
    assert!(p.attrs[0].required());
    assert!(p.derived_attrs.is_empty());
}

const IF_OP: &str = r#"
/**
 *@brief Select one of the subgraphs to pass the input tensors and return the output tensors.
 *       If "cond" means True, the selected subgraph is "then_branch".
 */
REG_OP(If)
    .INPUT(cond, TensorType::ALL())
    .DYNAMIC_INPUT(input, TensorType::ALL())
    .DYNAMIC_OUTPUT(output, TensorType::ALL())
    .GRAPH(then_branch)
    .GRAPH(else_branch)
    .OP_END_FACTORY_REG(If)
"#;

#[test]
fn if_static_graphs() {
    let p = parse_one(IF_OP);
    let mut want = proto(
        "If",
        "Select one of the subgraphs to pass the input tensors and return the output tensors.",
    );
    want.inputs = vec![
        io("cond", IoKind::Required, TypeSpec::List(all_types())),
        io("input", IoKind::Dynamic, TypeSpec::List(all_types())),
    ];
    want.outputs = vec![io("output", IoKind::Dynamic, TypeSpec::List(all_types()))];
    want.subgraphs = vec![
        SubgraphDef {
            name: "then_branch".into(),
            kind: SubgraphKind::Static,
        },
        SubgraphDef {
            name: "else_branch".into(),
            kind: SubgraphKind::Static,
        },
    ];
    assert_eq!(p, want);
}

const CASE_OP: &str = r#"
// Select one of the subgraphs by index. A second sentence.
// More text of the same comment.
REG_OP(Case)
    .INPUT(branch_index, DT_INT32)
    .DYNAMIC_INPUT(input, TensorType::ALL())
    .DYNAMIC_OUTPUT(output, TensorType::ALL())
    .DYNAMIC_GRAPH(branches)
    .OP_END_FACTORY_REG(Case)
"#;

#[test]
fn case_dynamic_graph_and_bare_dtype() {
    let p = parse_one(CASE_OP);
    let mut want = proto("Case", "Select one of the subgraphs by index.");
    want.inputs = vec![
        io("branch_index", IoKind::Required, list(&[INT32])),
        io("input", IoKind::Dynamic, TypeSpec::List(all_types())),
    ];
    want.outputs = vec![io("output", IoKind::Dynamic, TypeSpec::List(all_types()))];
    want.subgraphs = vec![SubgraphDef {
        name: "branches".into(),
        kind: SubgraphKind::Dynamic,
    }];
    assert_eq!(p, want);
}

const TYPE_VARS: &str = r#"
REG_OP(Trilu)
    .INPUT(x, "T")
    .OPTIONAL_INPUT(k, "T_K")
    .ATTR(upper, Int, 0)
    .OUTPUT(y, "T")
    .DATATYPE(T, TensorType({DT_FLOAT16, DT_BF16, DT_FLOAT, DT_DOUBLE, DT_INT32, DT_UINT8,
                          DT_BOOL}))
    .DATATYPE(T_K, TensorType::IndexNumberType())
    .OP_END_FACTORY_REG(Trilu)

REG_OP(IdentityN)
    .DYNAMIC_INPUT(x, "T")
    .DYNAMIC_OUTPUT(y, "T")
    .DATATYPE(T, ListTensorType({DT_FLOAT, DT_FLOAT16, DT_INT8}))
    .OP_END_FACTORY_REG(IdentityN)

REG_OP(Complex)
    .INPUT(real, "T")
    .INPUT(imag, "T")
    .INPUT(scale, TensorType(DT_FLOAT))
    .OUTPUT(out, "Tout")
    .ATTR(Tout, Int, DT_COMPLEX64)
    .DATATYPE(T, ListTensorType(TensorType({DT_FLOAT16, DT_FLOAT, DT_DOUBLE})))
    .DATATYPE(Tout, TensorType({DT_COMPLEX64, DT_COMPLEX128}))
    .OP_END_FACTORY_REG(Complex)
"#;

#[test]
fn datatype_type_variables() {
    let ps = parse(TYPE_VARS);
    assert_eq!(
        ps.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
        ["Trilu", "IdentityN", "Complex"]
    );

    let mut trilu = proto("Trilu", "");
    trilu.inputs = vec![
        io("x", IoKind::Required, var("T")),
        io("k", IoKind::Optional, var("T_K")),
    ];
    trilu.outputs = vec![io("y", IoKind::Required, var("T"))];
    trilu.attrs = vec![attr("upper", AttrType::Int, Some(AttrValue::Int(0)))];
    trilu.type_vars.insert(
        "T".into(),
        vec![FLOAT16, BF16, FLOAT, DOUBLE, INT32, UINT8, BOOL],
    );
    trilu.type_vars.insert("T_K".into(), vec![INT32, INT64]);
    assert_eq!(ps[0], trilu);

    let mut idn = proto("IdentityN", "");
    idn.inputs = vec![io("x", IoKind::Dynamic, var("T"))];
    idn.outputs = vec![io("y", IoKind::Dynamic, var("T"))];
    idn.type_vars.insert("T".into(), vec![FLOAT, FLOAT16, INT8]);
    assert_eq!(ps[1], idn);

    let mut cplx = proto("Complex", "");
    cplx.inputs = vec![
        io("real", IoKind::Required, var("T")),
        io("imag", IoKind::Required, var("T")),
        io("scale", IoKind::Required, list(&[FLOAT])),
    ];
    cplx.outputs = vec![io("out", IoKind::Required, var("Tout"))];
    // An Int attribute defaulting to a DT_ enumerator takes its numeric value.
    cplx.attrs = vec![attr(
        "Tout",
        AttrType::Int,
        Some(AttrValue::Int(i64::from(COMPLEX64.value()))),
    )];
    cplx.type_vars
        .insert("T".into(), vec![FLOAT16, FLOAT, DOUBLE]);
    cplx.type_vars
        .insert("Tout".into(), vec![COMPLEX64, COMPLEX128]);
    assert_eq!(ps[2], cplx);
    for p in &ps {
        p.check().unwrap();
        assert!(p.allowed(&p.inputs[0].ty).is_some());
    }
}

const ALL_ATTRS: &str = r#"
/* Every attribute type and default form. */
REG_OP(AllAttrs)
    .INPUT(x, TensorType::RealNumberType())
    .OUTPUT(y, TensorType::FLOAT())
    .REQUIRED_ATTR(ri, Int)
    .REQUIRED_ATTR(rs, Str)
    .REQUIRED_ATTR(rlli, ListListInt)
    .ATTR(i, Int, -7)
    .ATTR(ih, Int, 0x10)
    .ATTR(il, Int, 42L)
    .ATTR(imin, Int, -9223372036854775808)
    .ATTR(f, Float, 1.0)
    .ATTR(f2, Float, 1e-5)
    .ATTR(f3, Float, -0.5f)
    .ATTR(f4, Float, 3)
    .ATTR(f5, Float, 1E-8)
    .ATTR(finf, Float, -INFINITY)
    .ATTR(s, String, "NCHW")
    .ATTR(s0, String, "")
    .ATTR(s2, AscendString, AscendString("abc"))
    .ATTR(s3, String, "a\"b" "c")
    .ATTR(b, Bool, true)
    .ATTR(t, Type, DT_FLOAT)
    .ATTR(t2, DataType, ge::DT_INT64)
    .ATTR(li, ListInt, {1, -2, 3})
    .ATTR(li0, ListInt, {})
    .ATTR(lf, ListFloat, {0.75f, 1.5, 2})
    .ATTR(lb, ListBool, {true, false})
    .ATTR(lt, ListType, {DT_FLOAT, DT_INT32})
    .ATTR(ldt, ListDataType, {})
    .ATTR(lli, ListListInt, {{}, {}})
    .ATTR(lli2, ListListInt, {{1, 2}, {3}, })
    .ATTR(lli0, ListListInt, {})
    .ATTR(ten, Tensor, Tensor())
    .ATTR(ls, ListString, {"a", "b"})
    .ATTR(ls2, ListStr, {})
    .ATTR(
        pads,
        ListInt,
        {0, 0,
         0, 0}
    )
    .OP_END_FACTORY_REG(AllAttrs)
"#;

#[test]
fn every_attr_type_and_default_form() {
    let p = parse_one(ALL_ATTRS);
    assert_eq!(p.doc, "Every attribute type and default form.");
    assert_eq!(
        p.inputs,
        vec![io(
            "x",
            IoKind::Required,
            TypeSpec::List(es_core::ops::named_type_set("RealNumberType").unwrap())
        )]
    );
    assert_eq!(
        p.outputs,
        vec![io("y", IoKind::Required, list(&[FLOAT, FLOAT16, BF16]))]
    );
    use AttrType as T;
    use AttrValue as A;
    let want = vec![
        attr("ri", T::Int, None),
        attr("rs", T::String, None),
        attr("rlli", T::ListListInt, None),
        attr("i", T::Int, Some(A::Int(-7))),
        attr("ih", T::Int, Some(A::Int(16))),
        attr("il", T::Int, Some(A::Int(42))),
        attr("imin", T::Int, Some(A::Int(i64::MIN))),
        attr("f", T::Float, Some(A::Float(1.0))),
        attr("f2", T::Float, Some(A::Float(1e-5))),
        attr("f3", T::Float, Some(A::Float(-0.5))),
        attr("f4", T::Float, Some(A::Float(3.0))),
        attr("f5", T::Float, Some(A::Float(1e-8))),
        attr("finf", T::Float, Some(A::Float(f32::NEG_INFINITY))),
        attr("s", T::String, Some(A::String("NCHW".into()))),
        attr("s0", T::String, Some(A::String(String::new()))),
        attr("s2", T::String, Some(A::String("abc".into()))),
        attr("s3", T::String, Some(A::String("a\"bc".into()))),
        attr("b", T::Bool, Some(A::Bool(true))),
        attr("t", T::Type, Some(A::Type(FLOAT))),
        attr("t2", T::Type, Some(A::Type(INT64))),
        attr("li", T::ListInt, Some(A::ListInt(vec![1, -2, 3]))),
        attr("li0", T::ListInt, Some(A::ListInt(vec![]))),
        attr("lf", T::ListFloat, Some(A::ListFloat(vec![0.75, 1.5, 2.0]))),
        attr("lb", T::ListBool, Some(A::ListBool(vec![true, false]))),
        attr("lt", T::ListType, Some(A::ListType(vec![FLOAT, INT32]))),
        attr("ldt", T::ListType, Some(A::ListType(vec![]))),
        attr(
            "lli",
            T::ListListInt,
            Some(A::ListListInt(vec![vec![], vec![]])),
        ),
        attr(
            "lli2",
            T::ListListInt,
            Some(A::ListListInt(vec![vec![1, 2], vec![3]])),
        ),
        attr("lli0", T::ListListInt, Some(A::ListListInt(vec![]))),
        attr("ten", T::Tensor, Some(empty_tensor())),
        attr(
            "ls",
            T::ListString,
            Some(A::ListString(vec!["a".into(), "b".into()])),
        ),
        attr("ls2", T::ListString, Some(A::ListString(vec![]))),
        attr("pads", T::ListInt, Some(A::ListInt(vec![0, 0, 0, 0]))),
    ];
    assert_eq!(p.attrs.len(), want.len());
    for (got, w) in p.attrs.iter().zip(&want) {
        assert_eq!(got, w, "attribute {}", w.name);
    }
    // The empty tensor default is the one the built-in library uses (DT_FLOAT, shape [0]).
    let t = p.attr("ten").unwrap().default.as_ref().unwrap();
    assert_eq!(
        t.to_json(),
        serde_json::json!({"dtype": "DT_FLOAT", "shape": [0], "values": []})
    );
}

/// A whole header: license, include guard, includes, namespace, doc comments of both
/// styles, a `#define` mentioning REG_OP, C++ code between the blocks, one-line and spaced
/// formatting, an end without a leading dot, commented-out and ignored methods.
const HEADER: &str = r#"/**
 * Copyright (c) Huawei Technologies Co., Ltd. 2019-2024. All rights reserved.
 * Licensed under the Apache License, Version 2.0.
 */
#ifndef OPS_BUILT_IN_OP_PROTO_INC_DEMO_OPS_H_
#define OPS_BUILT_IN_OP_PROTO_INC_DEMO_OPS_H_

#include "graph/operator_reg.h"
#include "graph/operator.h"
#define FAKE_OP(x) REG_OP(x) \
    .INPUT(a, TensorType::ALL()) \
    .OP_END_FACTORY_REG(x)

namespace ge {
/**
*@brief Adds all input tensors element-wise. \n

*@par Inputs:
*x: A list of tensors. It's a dynamic input.
*/
REG_OP (AddN) . DYNAMIC_INPUT (x, TensorType:: NumberType ()) . OUTPUT (y, TensorType:: NumberType ()) . REQUIRED_ATTR (N, Int) . OP_END_FACTORY_REG (AddN)

static const char *kNote = "REG_OP(NotAnOp) inside a string";
int Helper(int a) { return a + 1; }  // not an operator

// Returns x unchanged; a union of types.
#ifndef OPS_PROTO_DEF_IDENTITY2
#define OPS_PROTO_DEF_IDENTITY2
REG_OP(Identity2)
    .INPUT(x, TensorType({DT_BOOL}, TensorType::IndexNumberType()))  /* trailing */
    .OUTPUT(y, TensorType{DT_FLOAT, DT_INT8})
    // .ATTR(disabled, Int, 3)
    /* .ATTR(also_disabled, Int, 4) */
    .INFER_SHAPE_AND_TYPE(ELMTWISE_INFER("x", "y"))
    .ATTR(mode, String,
          "fast")  // an inline comment
    OP_END_FACTORY_REG(Identity2)
#endif

REG_OP(Relu6)
    .INPUT(x, ge::TensorType::All())
    .OUTPUT(y, TensorType::UnsignedDataType())
    .OP_END_FACTORY_REG(Relu6);
}  // namespace ge

#endif  // OPS_BUILT_IN_OP_PROTO_INC_DEMO_OPS_H_
"#;

#[test]
fn header_with_three_ops_comments_includes_namespace() {
    let ps = parse(HEADER);
    assert_eq!(
        ps.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
        ["AddN", "Identity2", "Relu6"]
    );
    let number = es_core::ops::named_type_set("NumberType").unwrap();
    let mut addn = proto("AddN", "Adds all input tensors element-wise.");
    addn.inputs = vec![io("x", IoKind::Dynamic, TypeSpec::List(number.clone()))];
    addn.outputs = vec![io("y", IoKind::Required, TypeSpec::List(number))];
    addn.attrs = vec![attr("N", AttrType::Int, None)];
    assert_eq!(ps[0], addn);

    let mut id2 = proto("Identity2", "Returns x unchanged; a union of types.");
    id2.inputs = vec![io("x", IoKind::Required, list(&[BOOL, INT32, INT64]))];
    id2.outputs = vec![io("y", IoKind::Required, list(&[FLOAT, INT8]))];
    id2.attrs = vec![attr(
        "mode",
        AttrType::String,
        Some(AttrValue::String("fast".into())),
    )];
    assert_eq!(ps[1], id2);

    let mut relu6 = proto("Relu6", "");
    relu6.inputs = vec![io("x", IoKind::Required, TypeSpec::List(all_types()))];
    relu6.outputs = vec![io(
        "y",
        IoKind::Required,
        list(&[UINT16, UINT32, UINT64, UINT8]),
    )];
    assert_eq!(ps[2], relu6);
}

#[test]
fn empty_and_op_free_texts() {
    assert!(parse("").is_empty());
    assert!(parse("// nothing\n#include <x>\nnamespace ge {}\n").is_empty());
    assert!(parse("int main() { return 0; }").is_empty());
}

#[test]
fn all_type_sets_and_windows_line_endings() {
    let sets = [
        "ALL",
        "NumberType",
        "RealNumberType",
        "BasicType",
        "IndexNumberType",
        "FloatingDataType",
        "IntegerDataType",
        "UnaryDataType",
        "FLOAT",
        "QuantifiedType",
        "OrdinaryType",
        "ComplexDataType",
        "SignedDataType",
        "UnsignedDataType",
    ];
    let mut text = String::from("REG_OP(Sets)\r\n");
    for (k, s) in sets.iter().enumerate() {
        text.push_str(&format!("    .INPUT(x{k}, TensorType::{s}())\r\n"));
    }
    text.push_str("    .OP_END_FACTORY_REG(Sets)\r\n");
    let p = parse_one(&text);
    assert_eq!(p.inputs.len(), sets.len());
    for (d, s) in p.inputs.iter().zip(sets) {
        let TypeSpec::List(l) = &d.ty else {
            panic!("{s}: not a list")
        };
        assert!(!l.is_empty(), "{s}");
        if let Some(want) = es_core::ops::named_type_set(s) {
            assert_eq!(l, &want, "{s}");
        }
    }
}

// =============================================================================================
// Malformed texts
// =============================================================================================

#[test]
fn error_missing_comma_after_input_name() {
    rejects(
        &[
            "REG_OP(Foo)",
            "    .INPUT(x TensorType({DT_FLOAT}))",
            "    .OP_END_FACTORY_REG(Foo)",
        ],
        "line 2, col 14:",
        &[
            "expected ',' after the input name in INPUT(...)",
            "'TensorType'",
        ],
    );
}

#[test]
fn error_block_not_closed() {
    rejects(
        &[
            "// doc",
            "",
            "REG_OP(Foo)",
            "    .INPUT(x, TensorType({DT_FLOAT}))",
            "    .OUTPUT(y, TensorType({DT_FLOAT}))",
        ],
        "line 3:",
        &["REG_OP(Foo) is not closed by OP_END_FACTORY_REG(Foo)"],
    );
    // Another block, or other code, before the end.
    rejects(
        &[
            "REG_OP(Foo)",
            "    .INPUT(x, TensorType({DT_FLOAT}))",
            "REG_OP(Bar)",
            "    .OP_END_FACTORY_REG(Bar)",
        ],
        "line 1:",
        &[
            "REG_OP(Foo) is not closed by OP_END_FACTORY_REG(Foo)",
            "line 3, col 1",
        ],
    );
    let m = err("REG_OP(Foo)\n    .INPUT(x, TensorType({DT_FLOAT}));\n");
    assert_msg(&m, "line 1:", &["is not closed", "';'"]);
}

#[test]
fn error_end_name_mismatch() {
    rejects(
        &[
            "namespace ge {",
            "REG_OP(Foo)",
            "    .INPUT(x, TensorType({DT_FLOAT}))",
            "    .OUTPUT(y, TensorType({DT_FLOAT}))",
            "",
            "",
            "",
            "",
            "    .OP_END_FACTORY_REG(Bar)",
            "}",
        ],
        "line 9:",
        &[
            "OP_END_FACTORY_REG(Bar) does not match REG_OP(Foo)",
            "line 2",
        ],
    );
    let m = err("OP_END_FACTORY_REG(Lonely)\n");
    assert_msg(
        &m,
        "line 1:",
        &["OP_END_FACTORY_REG(Lonely) has no matching REG_OP"],
    );
}

#[test]
fn error_unknown_dtype() {
    rejects(
        &[
            "REG_OP(Foo)",
            "    .INPUT(x, TensorType({DT_FLOAT, DT_FLAOT}))",
            "    .OP_END_FACTORY_REG(Foo)",
        ],
        "line 2, col 37:",
        &["unknown data type 'DT_FLAOT'", "INPUT"],
    );
    rejects(
        &[
            "REG_OP(Foo)",
            "    .INPUT(x, \"T\")",
            "    .DATATYPE(T, TensorType({DT_FLOAT, DT_INTT32}))",
            "    .OP_END_FACTORY_REG(Foo)",
        ],
        "line 3, col 40:",
        &["unknown data type 'DT_INTT32'", "DATATYPE(T"],
    );
}

#[test]
fn error_unknown_type_set() {
    rejects(
        &[
            "REG_OP(Foo)",
            "    .INPUT(x, TensorType::RealNumberTypes())",
            "    .OP_END_FACTORY_REG(Foo)",
        ],
        "line 2, col 15:",
        &[
            "unknown type set 'TensorType::RealNumberTypes()'",
            "RealNumberType",
        ],
    );
    let m = err("REG_OP(Foo)\n  .INPUT(x, TensorType({}))\n  .OP_END_FACTORY_REG(Foo)");
    assert_msg(&m, "line 2, col 24:", &["empty type list"]);
    let m = err("REG_OP(Foo)\n  .INPUT(x, Tensor({DT_FLOAT}))\n  .OP_END_FACTORY_REG(Foo)");
    assert_msg(
        &m,
        "line 2, col 13:",
        &["expected a type", "found 'Tensor'"],
    );
}

#[test]
fn error_unknown_attr_type() {
    rejects(
        &[
            "REG_OP(Foo)",
            "    .INPUT(x, TensorType({DT_FLOAT}))",
            "    .ATTR(axis, Integer, 0)",
            "    .OP_END_FACTORY_REG(Foo)",
        ],
        "line 3, col 17:",
        &["unknown attribute type 'Integer'"],
    );
    rejects(
        &[
            "REG_OP(Foo)",
            "    .REQUIRED_ATTR(fn, NamedAttrs)",
            "    .OP_END_FACTORY_REG(Foo)",
        ],
        "line 2, col 24:",
        &["'NamedAttrs' is not supported"],
    );
}

#[test]
fn error_default_does_not_fit_type() {
    let cases: &[(&str, &str, &[&str])] = &[
        (
            ".ATTR(a, Int, 1.5)",
            "col 19:",
            &["attribute 'a' (Int)", "must be an integer"],
        ),
        (".ATTR(a, Int, \"1\")", "col 19:", &["must be an integer"]),
        (
            ".ATTR(a, Int, 99999999999999999999)",
            "col 19:",
            &["invalid number"],
        ),
        (
            ".ATTR(a, Int, 9223372036854775808)",
            "col 19:",
            &["out of range for Int"],
        ),
        (
            ".ATTR(a, Bool, 1)",
            "col 20:",
            &["(Bool)", "must be true or false"],
        ),
        (".ATTR(a, Float, true)", "col 21:", &["must be a number"]),
        (
            ".ATTR(a, Float, 1e40)",
            "col 21:",
            &["out of range for Float"],
        ),
        (
            ".ATTR(a, String, NCHW)",
            "col 22:",
            &["must be a string literal", "found NCHW"],
        ),
        (
            ".ATTR(a, Type, DT_FLAOT)",
            "col 20:",
            &["unknown data type 'DT_FLAOT'"],
        ),
        (".ATTR(a, Type, 1.0)", "col 20:", &["must be a data type"]),
        (
            ".ATTR(a, ListInt, {1, 2.5})",
            "col 27:",
            &["(ListInt)", "must be an integer"],
        ),
        (
            ".ATTR(a, ListInt, 3)",
            "col 23:",
            &["must be a {...} list of integers"],
        ),
        (
            ".ATTR(a, ListInt, val_list_int)",
            "col 23:",
            &["found val_list_int"],
        ),
        (
            ".ATTR(a, ListListInt, {1, 2})",
            "col 28:",
            &["must be a {...} list of integers"],
        ),
        (
            ".ATTR(a, ListListInt, 7)",
            "col 27:",
            &["{...} integer lists"],
        ),
        (
            ".ATTR(a, ListBool, {true, 0})",
            "col 31:",
            &["must be true or false"],
        ),
        (
            ".ATTR(a, ListString, {\"a\", b})",
            "col 32:",
            &["must be a string literal"],
        ),
        (
            ".ATTR(a, ListType, {DT_FLOAT, 1.5})",
            "col 35:",
            &["must be a data type"],
        ),
        (
            ".ATTR(a, Tensor, Tensor(1))",
            "col 22:",
            &["must be Tensor()"],
        ),
        (".ATTR(a, Tensor, {})", "col 22:", &["must be Tensor()"]),
        (
            ".ATTR(a, Int, )",
            "col 19:",
            &["expected a default value", "found ')'"],
        ),
        (
            ".ATTR(a, Int, 1, 2)",
            "col 20:",
            &["expected ')' after the default value of attribute 'a'"],
        ),
        (
            ".ATTR(a, Int)",
            "col 17:",
            &["expected ',' before the default value in ATTR(a, Int, ...)"],
        ),
        (".ATTR(a, Int, --1)", "col 20:", &["must follow '-'"]),
    ];
    for (method, col, parts) in cases {
        let text = format!("REG_OP(Foo)\n    {method}\n    .OP_END_FACTORY_REG(Foo)\n");
        let m = err(&text);
        assert_msg(&m, &format!("line 2, {col}"), parts);
    }
}

#[test]
fn error_duplicate_names() {
    rejects(
        &[
            "REG_OP(Foo)",
            "    .INPUT(x, TensorType({DT_FLOAT}))",
            "    .INPUT(x, TensorType({DT_INT32}))",
            "    .OP_END_FACTORY_REG(Foo)",
        ],
        "line 3, col 12:",
        &["input 'x' is declared twice in REG_OP(Foo)"],
    );
    rejects(
        &[
            "REG_OP(Foo)",
            "    .OUTPUT(y, TensorType({DT_FLOAT}))",
            "    .ATTR(k, Int, 1)",
            "    .ATTR(k, Float, 1.0)",
            "    .OP_END_FACTORY_REG(Foo)",
        ],
        "line 4, col 11:",
        &["attribute 'k' is declared twice"],
    );
    // Across kinds, OpProto::check finds it.
    rejects(
        &[
            "",
            "REG_OP(Foo)",
            "    .INPUT(x, TensorType({DT_FLOAT}))",
            "    .ATTR(x, Int, 1)",
            "    .OP_END_FACTORY_REG(Foo)",
        ],
        "line 2:",
        &["REG_OP(Foo)", "the name 'x' is used twice"],
    );
    rejects(
        &[
            "REG_OP(Foo)",
            "    .DATATYPE(T, TensorType({DT_FLOAT}))",
            "    .DATATYPE(T, TensorType({DT_INT32}))",
            "    .OP_END_FACTORY_REG(Foo)",
        ],
        "line 3, col 15:",
        &["type variable 'T' is declared twice"],
    );
    rejects(
        &[
            "REG_OP(Foo)",
            "    .GRAPH(body)",
            "    .DYNAMIC_GRAPH(body)",
            "    .OP_END_FACTORY_REG(Foo)",
        ],
        "line 3, col 20:",
        &["subgraph 'body' is declared twice"],
    );
    // The same operator twice in one text.
    let m = err("REG_OP(A)\n.OP_END_FACTORY_REG(A)\n\nREG_OP(A)\n.OP_END_FACTORY_REG(A)\n");
    assert_msg(
        &m,
        "line 4:",
        &["REG_OP(A) is defined twice (first on line 1)"],
    );
}

#[test]
fn error_undeclared_type_variable() {
    rejects(
        &[
            "REG_OP(Foo)",
            "    .INPUT(x, \"T\")",
            "    .OUTPUT(y, \"T2\")",
            "    .DATATYPE(T, TensorType({DT_FLOAT}))",
            "    .OP_END_FACTORY_REG(Foo)",
        ],
        "line 3, col 16:",
        &["type variable \"T2\" of output 'y' is not declared by a DATATYPE(T2, ...)"],
    );
    let m = err("REG_OP(Foo)\n  .INPUT(x, \"\")\n  .OP_END_FACTORY_REG(Foo)");
    assert_msg(&m, "line 2, col 13:", &["not a valid type variable name"]);
    let m = err("REG_OP(Foo)\n  .DATATYPE(T, \"U\")\n  .OP_END_FACTORY_REG(Foo)");
    assert_msg(
        &m,
        "line 2, col 16:",
        &["cannot be used inside a type expression"],
    );
}

#[test]
fn error_unknown_method_and_bad_punctuation() {
    rejects(
        &[
            "REG_OP(Foo)",
            "    .INPUTS(x, TensorType({DT_FLOAT}))",
            "    .OP_END_FACTORY_REG(Foo)",
        ],
        "line 2, col 6:",
        &["unknown REG_OP method 'INPUTS'"],
    );
    let m = err("REG_OP(Foo)\n    .INPUT(x, TensorType({DT_FLOAT})\n    .OP_END_FACTORY_REG(Foo)");
    assert_msg(
        &m,
        "line 3, col 5:",
        &["expected ')' to close INPUT(x, ...)", "found '.'"],
    );
    let m =
        err("REG_OP(Foo)\n    .INPUT(x, TensorType({DT_FLOAT DT_INT8}))\n.OP_END_FACTORY_REG(Foo)");
    assert_msg(&m, "line 2, col 36:", &["expected ',' or '}'", "'DT_INT8'"]);
    let m = err("REG_OP(Foo\n  .OP_END_FACTORY_REG(Foo)");
    assert_msg(
        &m,
        "line 2, col 3:",
        &["expected ')' after the operator name in REG_OP(...)"],
    );
    let m = err("REG_OP(1Foo)\n.OP_END_FACTORY_REG(Foo)");
    assert_msg(
        &m,
        "line 1, col 8:",
        &["expected the operator name in REG_OP(...)", "'1Foo'"],
    );
    let m = err("REG_OP(Foo)\n  .\n");
    assert_msg(
        &m,
        "line 3, col 1:",
        &["expected a method name", "end of input"],
    );
    let m = err("REG_OP(Foo)\n  .INFER_SHAPE_AND_TYPE(f(x)\n");
    assert_msg(
        &m,
        "line 2, col 4:",
        &["INFER_SHAPE_AND_TYPE( is not closed"],
    );
}

#[test]
fn error_unterminated_string_and_comment() {
    let m = err("REG_OP(Foo)\n  .ATTR(s, String, \"abc)\n  .OP_END_FACTORY_REG(Foo)\n");
    assert_msg(&m, "line 2, col 20:", &["unterminated string literal"]);
    let m = err("REG_OP(Foo)\n  /* .ATTR(s, String, \"abc\")\n  .OP_END_FACTORY_REG(Foo)\n");
    assert_msg(&m, "line 2, col 3:", &["unterminated block comment"]);
    let m = err("REG_OP(Foo)\n  .INPUT(x, \"T)\n  .OP_END_FACTORY_REG(Foo)\n");
    assert_msg(&m, "line 2, col 13:", &["unterminated string literal"]);
}

#[test]
fn error_nesting_too_deep() {
    let deep = format!(
        "REG_OP(Foo)\n  .ATTR(a, ListListInt, {}{})\n  .OP_END_FACTORY_REG(Foo)",
        "{".repeat(5000),
        "}".repeat(5000)
    );
    assert!(err(&deep).contains("nested too deeply"));
    let deep = format!(
        "REG_OP(Foo)\n  .INPUT(x, {}DT_FLOAT{})\n  .OP_END_FACTORY_REG(Foo)",
        "TensorType(".repeat(5000),
        ")".repeat(5000)
    );
    assert!(err(&deep).contains("nested too deeply"));
    let deep = format!(
        "REG_OP(Foo)\n  .INPUT(x, TensorType({}DT_FLOAT{}))\n  .OP_END_FACTORY_REG(Foo)",
        "{".repeat(5000),
        "}".repeat(5000)
    );
    assert!(err(&deep).contains("nested too deeply"));
}

// =============================================================================================
// Round trip and use
// =============================================================================================

#[test]
fn json_round_trip() {
    let mut n = 0;
    for text in [
        MATMUL, CONCAT_D, IF_OP, CASE_OP, TYPE_VARS, ALL_ATTRS, HEADER,
    ] {
        for p in parse(text) {
            let j = p.to_json();
            let back = OpProto::from_json(&j).unwrap();
            assert_eq!(back, p, "{}", p.name);
            // And through the text form of a whole library.
            let mut reg = OpRegistry::new("custom");
            reg.insert(p.clone());
            let again = OpRegistry::from_json_str(&reg.to_json().to_string()).unwrap();
            assert_eq!(**again.get(&p.name).unwrap(), p);
            n += 1;
        }
    }
    assert_eq!(n, 11);
}

const CUSTOM: &str = r#"
/**
 * @brief Scales x by alpha and adds an optional bias.
 */
REG_OP(MyScaleAdd)
    .INPUT(x, "T")
    .OPTIONAL_INPUT(bias, "T")
    .OUTPUT(y, "T")
    .ATTR(alpha, Float, 2.0)
    .REQUIRED_ATTR(mode, String)
    .DATATYPE(T, TensorType({DT_FLOAT, DT_FLOAT16}))
    .OP_END_FACTORY_REG(MyScaleAdd)
"#;

#[test]
fn parsed_prototype_is_usable_in_a_builder() {
    let protos = parse(&format!("{CUSTOM}\n{MATMUL}"));
    let mut reg = OpRegistry::new("custom");
    for p in protos {
        reg.insert(p);
    }
    assert_eq!(reg.len(), 2);
    let mut b = GraphBuilder::with_registry("g", Arc::new(reg));
    let x = b
        .create_input(0, None, "Data", FLOAT, Format::ND, Shape::new(vec![2, 3]))
        .unwrap();
    let mut a = OpArgs {
        inputs: vec![vec![Some(x)], vec![None]],
        ..Default::default()
    };
    a.attrs
        .insert("mode".into(), AttrValue::String("fast".into()));
    let id = b.add_op("MyScaleAdd", a).unwrap();
    let node = b.graph().node(id).unwrap();
    assert_eq!(node.op_type.as_str(), "MyScaleAdd");
    assert_eq!(node.attrs.get("alpha"), Some(&AttrValue::Float(2.0)));
    assert_eq!(node.outputs.len(), 1);
    assert_eq!(node.outputs[0].desc.dtype, FLOAT);

    // The prototype's rules are enforced: required attribute, allowed dtypes.
    let missing = OpArgs {
        inputs: vec![vec![Some(x)], vec![None]],
        ..Default::default()
    };
    let e = b.add_op("MyScaleAdd", missing).unwrap_err();
    assert!(e.to_string().contains("mode"), "{e}");
    let i = b
        .create_input(1, None, "Data", INT32, Format::ND, Shape::new(vec![2]))
        .unwrap();
    let mut bad = OpArgs {
        inputs: vec![vec![Some(i)], vec![None]],
        ..Default::default()
    };
    bad.attrs
        .insert("mode".into(), AttrValue::String("f".into()));
    let e = b.add_op("MyScaleAdd", bad).unwrap_err();
    assert!(e.to_string().contains("DT_INT32"), "{e}");

    // MatMulV2 from the same text, with its optional inputs left out.
    let w = b
        .create_input(2, None, "Data", FLOAT, Format::ND, Shape::new(vec![3, 4]))
        .unwrap();
    let mm = OpArgs {
        inputs: vec![vec![Some(x)], vec![Some(w)], vec![None], vec![None]],
        ..Default::default()
    };
    let id = b.add_op("MatMulV2", mm).unwrap();
    let node = b.graph().node(id).unwrap();
    assert_eq!(
        node.attrs.get("transpose_x1"),
        Some(&AttrValue::Bool(false))
    );
    assert_eq!(node.attrs.get("offset_x"), Some(&AttrValue::Int(0)));
}

// =============================================================================================
// Robustness
// =============================================================================================

/// A small deterministic generator (no dependency, reproducible).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn never_panics_on_prefixes_deletions_and_garbage() {
    // Every prefix of valid texts.
    for text in [HEADER, ALL_ATTRS, TYPE_VARS, CASE_OP] {
        for (k, _) in text.char_indices() {
            let _ = parse_regop(&text[..k]);
        }
    }
    // Every single-character deletion of one text.
    let chars: Vec<char> = MATMUL.chars().collect();
    for k in 0..chars.len() {
        let s: String = chars
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != k)
            .map(|(_, c)| c)
            .collect();
        let _ = parse_regop(&s);
    }
    // Random token soup and random characters.
    let pieces = [
        "REG_OP",
        "(",
        ")",
        "{",
        "}",
        ".",
        ",",
        ";",
        "INPUT",
        "OUTPUT",
        "DYNAMIC_INPUT",
        "ATTR",
        "REQUIRED_ATTR",
        "GRAPH",
        "DATATYPE",
        "OP_END_FACTORY_REG",
        "Foo",
        "x",
        "T",
        "\"T\"",
        "\"",
        "'",
        "/*",
        "*/",
        "//",
        "\n",
        "#",
        "\\",
        "\\\n",
        "TensorType",
        "::",
        "ALL",
        "DT_FLOAT",
        "-",
        "+",
        "1e",
        "0x",
        "1.5f",
        "-9223372036854775808",
        "R\"(",
        "é",
        "日本",
        "ListListInt",
        "Tensor",
        "Int",
        "Float",
        "String",
        "ListInt",
        "true",
        " ",
        "\t",
        "\r",
        "INFER_SHAPE_AND_TYPE",
        "ListTensorType",
        "INFINITY",
        "{{",
        "}}",
        "\0",
    ];
    let mut rng = Lcg(0x5eed);
    for _ in 0..4000 {
        let n = rng.below(60);
        let s: String = (0..n).map(|_| pieces[rng.below(pieces.len())]).collect();
        let _ = parse_regop(&s);
        // Splice garbage into a valid text.
        let cut = rng.below(MATMUL.len());
        if MATMUL.is_char_boundary(cut) {
            let spliced = format!("{}{}{}", &MATMUL[..cut], s, &MATMUL[cut..]);
            let _ = parse_regop(&spliced);
        }
    }
    for _ in 0..500 {
        let n = rng.below(200);
        let bytes: Vec<u8> = (0..n).map(|_| rng.below(256) as u8).collect();
        let _ = parse_regop(&String::from_utf8_lossy(&bytes));
    }
    // Results are Ok or a Value error, never another kind.
    for _ in 0..500 {
        let n = rng.below(40);
        let s: String = (0..n).map(|_| pieces[rng.below(pieces.len())]).collect();
        match parse_regop(&s) {
            Ok(ps) => {
                for p in ps {
                    p.check().unwrap();
                }
            }
            Err(Error::Value(m)) => assert!(m.starts_with("line "), "{m}"),
            Err(other) => panic!("unexpected error kind {other:?}"),
        }
    }
}
