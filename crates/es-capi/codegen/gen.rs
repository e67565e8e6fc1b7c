//! The generator of es-capi's per-operator code, from an operator library; `build.rs` runs it
//! at build time and writes the files into `OUT_DIR` (nothing it makes is checked in):
//! - `ops_generated.rs` (included by `src/lib.rs`): one `#[no_mangle] extern "C" fn Es<Op>` per operator (and its
//!   `Es<Op>Output` struct), each collecting its arguments into an `OpCall`;
//! - `include/es_<Op>_c.h` (C declarations), `include/es_all_ops_c.h`;
//! - `include/es_<Op>.h` (header-only C++ wrappers in namespace `es`), `include/es_all_ops.h`;
//! - `include/es_c_types.h`: GE's `C_DataType` / `C_Format` enums (and `ge::DataType` /
//!   `ge::Format` for C++), from es-core's tables.
//!
//! The C signature is GE's generator's (`c_generator.h`): inputs in prototype order (dynamic
//! ones as pointer + `_num`), `owner_graph_builder` when there are no inputs (or only optional
//! ones), `<output>_num` for every dynamic output, subgraphs, then the attributes, required ones
//! first, each group in prototype order, typed by the seed's table. C++ gives optional
//! attributes their defaults. Names colliding with a C++ keyword or an input get GE's prefixes.
//!
//! Also used by `tests/generated_current.rs` (the build's files are what this makes) and by
//! the ABI test in `tests/examples.rs` (the 8.0.0 library's headers).

use es_core::attr::AttrType;
use es_core::ops::{AttrDef, IoKind, OpProto, OpRegistry, SubgraphKind};
use es_core::{AttrValue, DataType, Format};
use std::fmt::Write as _;
use std::sync::Arc;

const CPP_KEYWORDS: &[&str] = &[
    "alignas",
    "alignof",
    "and",
    "and_eq",
    "asm",
    "atomic_cancel",
    "atomic_commit",
    "atomic_noexcept",
    "auto",
    "bitand",
    "bitor",
    "bool",
    "break",
    "case",
    "catch",
    "char",
    "char16_t",
    "char32_t",
    "class",
    "compl",
    "concept",
    "const",
    "consteval",
    "constexpr",
    "constinit",
    "const_cast",
    "continue",
    "co_await",
    "co_return",
    "co_yield",
    "decltype",
    "default",
    "delete",
    "do",
    "double",
    "dynamic_cast",
    "else",
    "enum",
    "explicit",
    "export",
    "extern",
    "false",
    "float",
    "for",
    "friend",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "not",
    "not_eq",
    "nullptr",
    "operator",
    "or",
    "or_eq",
    "private",
    "protected",
    "public",
    "register",
    "reinterpret_cast",
    "requires",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "static_assert",
    "static_cast",
    "struct",
    "switch",
    "synchronized",
    "template",
    "this",
    "thread_local",
    "throw",
    "true",
    "try",
    "typedef",
    "typeid",
    "typename",
    "union",
    "unsigned",
    "using",
    "virtual",
    "void",
    "volatile",
    "wchar_t",
    "while",
    "xor",
    "xor_eq",
];

const RUST_KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub",
    "ref", "return", "self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use",
    "where", "while", "abstract", "become", "box", "do", "final", "macro", "override", "priv",
    "typeof", "unsized", "virtual", "yield", "try", "gen",
];

fn is_kw(n: &str) -> bool {
    CPP_KEYWORDS.contains(&n)
}

/// A name usable as a Rust local (C names stay GE's; Rust names do not reach the ABI).
fn rs(n: &str) -> String {
    if RUST_KEYWORDS.contains(&n) {
        format!("r_{n}")
    } else {
        n.to_string()
    }
}

fn in_name(n: &str) -> String {
    if is_kw(n) {
        format!("in_{n}")
    } else {
        n.to_string()
    }
}

fn dup_in_inputs(p: &OpProto, n: &str) -> bool {
    p.inputs.iter().any(|i| i.name == n)
}

fn out_name(p: &OpProto, n: &str) -> String {
    if dup_in_inputs(p, n) {
        format!("ref_{}", in_name(n))
    } else if is_kw(n) {
        format!("out_{n}")
    } else {
        n.to_string()
    }
}

fn attr_name(p: &OpProto, n: &str) -> String {
    if dup_in_inputs(p, n) {
        format!("attr_{}", in_name(n))
    } else if is_kw(n) {
        format!("attr_{n}")
    } else {
        n.to_string()
    }
}

fn subgraph_name(n: &str) -> String {
    if is_kw(n) {
        format!("subgraph_{n}")
    } else {
        n.to_string()
    }
}

/// Attributes in GE's parameter order: required ones first, then optional, each in IR order.
fn ordered_attrs(p: &OpProto) -> Vec<&AttrDef> {
    let mut v: Vec<&AttrDef> = p.attrs.iter().collect();
    v.sort_by_key(|a| !a.required());
    v
}

fn needs_owner(p: &OpProto) -> bool {
    p.inputs.is_empty() || p.inputs.iter().all(|i| i.kind == IoKind::Optional)
}

/// Whether the C function returns an `Es<Op>Output` struct (GE: several outputs or a dynamic one).
fn returns_struct(p: &OpProto) -> bool {
    p.outputs.len() > 1 || p.outputs.iter().any(|o| o.kind == IoKind::Dynamic)
}

/// One C parameter: (C type, name, Rust type).
struct Param {
    c: &'static str,
    name: String,
    rust: &'static str,
}

fn param(c: &'static str, name: String, rust: &'static str) -> Param {
    Param { c, name, rust }
}

/// The C parameters of an attribute.
fn attr_params(p: &OpProto, a: &AttrDef) -> Vec<Param> {
    let n = attr_name(p, &a.name);
    let list = |c: &'static str, r: &'static str| {
        vec![
            param(c, n.clone(), r),
            param("int64_t ", format!("{n}_num"), "i64"),
        ]
    };
    match a.ty {
        AttrType::Int => vec![param("int64_t ", n, "i64")],
        AttrType::Float => vec![param("float ", n, "f32")],
        AttrType::String => vec![param("const char *", n, "*const c_char")],
        AttrType::Bool => vec![param("bool ", n, "bool")],
        AttrType::Type => vec![param("C_DataType ", n, "C_DataType")],
        AttrType::ListInt => list("const int64_t *", "*const i64"),
        AttrType::ListFloat => list("const float *", "*const f32"),
        AttrType::ListBool => list("const bool *", "*const bool"),
        AttrType::ListType => list("const C_DataType *", "*const C_DataType"),
        AttrType::ListListInt => vec![
            param("const int64_t **", n.clone(), "*const *const i64"),
            param("int64_t ", format!("{n}_num"), "i64"),
            param("const int64_t *", format!("{n}_inner_num"), "*const i64"),
        ],
        AttrType::Tensor => vec![param("EsCTensor *", n, "*mut EsCTensor")],
        AttrType::ListString => list("const char **", "*const *const c_char"),
    }
}

/// Every C parameter of `Es<Op>`, in GE's order.
fn c_params(p: &OpProto) -> Vec<Param> {
    let mut v = Vec::new();
    for i in &p.inputs {
        let n = in_name(&i.name);
        if i.kind == IoKind::Dynamic {
            v.push(param(
                "EsCTensorHolder **",
                n.clone(),
                "*mut *mut EsCTensorHolder",
            ));
            v.push(param("int64_t ", format!("{n}_num"), "i64"));
        } else {
            v.push(param("EsCTensorHolder *", n, "*mut EsCTensorHolder"));
        }
    }
    if needs_owner(p) {
        v.push(param(
            "EsCGraphBuilder *",
            "owner_graph_builder".into(),
            "*mut EsCGraphBuilder",
        ));
    }
    for o in p.outputs.iter().filter(|o| o.kind == IoKind::Dynamic) {
        v.push(param(
            "int64_t ",
            format!("{}_num", out_name(p, &o.name)),
            "i64",
        ));
    }
    for s in &p.subgraphs {
        let n = subgraph_name(&s.name);
        if s.kind == SubgraphKind::Static {
            v.push(param("EsCGraph *", n, "*mut EsCGraph"));
        } else {
            v.push(param("EsCGraph **", n.clone(), "*mut *mut EsCGraph"));
            v.push(param("int64_t ", format!("{n}_num"), "i64"));
        }
    }
    for a in ordered_attrs(p) {
        v.extend(attr_params(p, a));
    }
    v
}

fn c_return(p: &OpProto) -> String {
    if returns_struct(p) {
        format!("Es{}Output ", p.name)
    } else {
        "EsCTensorHolder *".to_string()
    }
}

fn c_declaration(p: &OpProto) -> String {
    let params: Vec<String> = c_params(p)
        .iter()
        .map(|x| format!("{}{}", x.c, x.name))
        .collect();
    format!("{}Es{}({})", c_return(p), p.name, params.join(", "))
}

/// The first sentence-ish line of an operator's doc, safe inside a C comment.
fn brief(p: &OpProto) -> String {
    let line = p
        .doc
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    line.replace("*/", "* /")
}

const BANNER: &str =
    "Generated by crates/es-capi/codegen/gen.rs from the operator library; do not edit.";

fn guard_macro(file: &str) -> String {
    format!(
        "ES_CAPI_{}_",
        file.chars()
            .map(|c| if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            })
            .collect::<String>()
    )
}

fn c_output_struct(p: &OpProto) -> String {
    let mut s = String::from("typedef struct {\n");
    for o in &p.outputs {
        let n = out_name(p, &o.name);
        if o.kind == IoKind::Dynamic {
            let _ = writeln!(s, "  EsCTensorHolder **{n};\n  int64_t {n}_num;");
        } else {
            let _ = writeln!(s, "  EsCTensorHolder *{n};");
        }
    }
    let _ = writeln!(s, "}} Es{}Output;", p.name);
    s
}

fn c_header(p: &OpProto, version: &str, sig_index: usize) -> String {
    let file = format!("es_{}_c.h", p.name);
    let g = guard_macro(&file);
    let mut s = format!("/* {BANNER} (library {version}) */\n#ifndef {g}\n#define {g}\n#include \"esb_funcs.h\"\n#ifdef __cplusplus\nextern \"C\" {{\n#endif\n\n");
    if returns_struct(p) {
        s.push_str(&c_output_struct(p));
        s.push('\n');
    } else if p.outputs.is_empty() {
        let _ = writeln!(
            s,
            "// {} does not produce an output, so the returned EsCTensorHolder cannot be used to connect edges.",
            p.name
        );
    }
    let dyn_outs: Vec<String> = p
        .outputs
        .iter()
        .filter(|o| o.kind == IoKind::Dynamic)
        .map(|o| out_name(p, &o.name))
        .collect();
    let _ = writeln!(s, "/**\n * {}: {}", p.name, brief(p));
    if !dyn_outs.is_empty() {
        s.push_str(" * @note user needs to provide following inputs for dynamic output numbers:\n");
        for n in &dyn_outs {
            let _ = writeln!(s, " *   {n}_num: dynamic output number of {n}");
        }
    }
    s.push_str(" */\n");
    if sig_index > 1 {
        // The operator's signature changed since its first library version: this header binds
        // its name to the symbol of this signature; programs built with older headers keep
        // calling the older symbols, which the library still exports.
        let _ = writeln!(s, "#define Es{} {}", p.name, symbol(&p.name, sig_index));
    }
    let _ = writeln!(s, "{};", c_declaration(p));
    s.push_str("\n#ifdef __cplusplus\n}\n#endif\n#endif\n");
    s
}

// ---- Rust ----------------------------------------------------------------------------------

fn attr_value_expr(p: &OpProto, a: &AttrDef) -> String {
    let n = rs(&attr_name(p, &a.name));
    match a.ty {
        AttrType::Int => format!("a_int({n})"),
        AttrType::Float => format!("a_float({n})"),
        AttrType::String => format!("a_str({n})"),
        AttrType::Bool => format!("a_bool({n})"),
        AttrType::Type => format!("a_type({n})"),
        AttrType::ListInt => format!("a_list_int({n}, {n}_num)"),
        AttrType::ListFloat => format!("a_list_float({n}, {n}_num)"),
        AttrType::ListBool => format!("a_list_bool({n}, {n}_num)"),
        AttrType::ListType => format!("a_list_type({n}, {n}_num)"),
        AttrType::ListListInt => format!("a_list_list_int({n}, {n}_num, {n}_inner_num)"),
        AttrType::ListString => format!("a_list_str({n}, {n}_num)"),
        AttrType::Tensor => unreachable!("Tensor attributes are taken over first"),
    }
}

/// The Rust implementation of one C signature of an operator: `fname` is its symbol,
/// `sname` its output struct's Rust name.
fn rust_fn(p: &OpProto, fname: &str, sname: &str) -> String {
    let mut s = String::new();
    let out_ty = if returns_struct(p) {
        let _ = writeln!(
            s,
            "/// The outputs of [`{fname}`].\n#[repr(C)]\npub struct {sname} {{"
        );
        for o in &p.outputs {
            let n = rs(&out_name(p, &o.name));
            if o.kind == IoKind::Dynamic {
                let _ = writeln!(
                    s,
                    "    pub {n}: *mut *mut EsCTensorHolder,\n    pub {n}_num: i64,"
                );
            } else {
                let _ = writeln!(s, "    pub {n}: *mut EsCTensorHolder,");
            }
        }
        s.push_str("}\n\n");
        sname.to_string()
    } else {
        "*mut EsCTensorHolder".to_string()
    };
    let params: Vec<String> = c_params(p)
        .iter()
        .map(|x| format!("{}: {}", rs(&x.name), x.rust))
        .collect();
    let _ = writeln!(
        s,
        "/// `{}`: {}\n#[no_mangle]\npub unsafe extern \"C\" fn {fname}({}) -> {out_ty} {{",
        c_declaration(p).replace('`', "'"),
        brief(p).replace('`', "'"),
        params.join(", ")
    );
    let failed = if returns_struct(p) {
        "std::mem::zeroed()"
    } else {
        "std::ptr::null_mut()"
    };
    // Take over what the call owns from now on, before anything can fail.
    let mut body = String::new();
    for sg in &p.subgraphs {
        let n = rs(&subgraph_name(&sg.name));
        if sg.kind == SubgraphKind::Static {
            let _ = writeln!(body, "    let {n}_g = take_graph({n});");
        } else {
            let _ = writeln!(body, "    let {n}_g = take_graphs({n}, {n}_num, \"{n}\");");
        }
    }
    for a in p.attrs.iter().filter(|a| a.ty == AttrType::Tensor) {
        let n = rs(&attr_name(p, &a.name));
        let _ = writeln!(body, "    let {n}_t = take_tensor({n});");
    }
    let _ = writeln!(
        body,
        "    guard({failed}, || {{\n        let mut es_call = OpCall::new(\"{}\");",
        p.name
    );
    for i in &p.inputs {
        let n = rs(&in_name(&i.name));
        if i.kind == IoKind::Dynamic {
            let _ = writeln!(
                body,
                "        es_call.dynamic_input({n}, {n}_num, \"{}\")?;",
                i.name
            );
        } else {
            let _ = writeln!(body, "        es_call.input({n}, \"{}\")?;", i.name);
        }
    }
    if needs_owner(p) {
        body.push_str("        es_call.owner(owner_graph_builder)?;\n");
    }
    for o in p.outputs.iter().filter(|o| o.kind == IoKind::Dynamic) {
        let _ = writeln!(
            body,
            "        es_call.output_num(\"{}\", {}_num)?;",
            o.name,
            rs(&out_name(p, &o.name))
        );
    }
    for sg in &p.subgraphs {
        let n = rs(&subgraph_name(&sg.name));
        if sg.kind == SubgraphKind::Static {
            let _ = writeln!(body, "        es_call.subgraph({n}_g, \"{}\")?;", sg.name);
        } else {
            let _ = writeln!(body, "        es_call.subgraphs({n}_g?, \"{}\")?;", sg.name);
        }
    }
    for a in ordered_attrs(p) {
        if a.ty == AttrType::Tensor {
            let _ = writeln!(
                body,
                "        es_call.tensor_attr(\"{}\", {}_t)?;",
                a.name,
                rs(&attr_name(p, &a.name))
            );
        } else {
            let _ = writeln!(
                body,
                "        es_call.attr(\"{}\", {})?;",
                a.name,
                attr_value_expr(p, a)
            );
        }
    }
    if p.outputs.is_empty() {
        body.push_str("        Ok(es_call.finish()?.node_only())\n");
    } else if !returns_struct(p) {
        body.push_str("        Ok(es_call.finish()?.one(0))\n");
    } else {
        body.push_str("        let mut es_added = es_call.finish()?;\n");
        let mut fields = Vec::new();
        for (ir, o) in p.outputs.iter().enumerate() {
            let n = rs(&out_name(p, &o.name));
            if o.kind == IoKind::Dynamic {
                let _ = writeln!(body, "        let ({n}, {n}_num) = es_added.many({ir});");
                fields.push(format!("{n}, {n}_num"));
            } else {
                let _ = writeln!(body, "        let {n} = es_added.one({ir});");
                fields.push(n);
            }
        }
        let _ = writeln!(body, "        Ok({sname} {{ {} }})", fields.join(", "));
    }
    body.push_str("    })\n");
    s.push_str(&body);
    s.push_str("}\n\n");
    s
}

fn rust_file(reg: &OpRegistry, ops: &[Vec<&OpProto>]) -> String {
    let mut s = format!(
        "// {BANNER} (library {})\n// One `Es<Op>` per operator: see `codegen/gen.rs` for the signature rules.\n// Included by `src/lib.rs` (module `ops_generated`, which carries the lint allowances).\n\nuse crate::builder::{{EsCGraphBuilder, EsCTensorHolder}};\nuse crate::error::guard;\n#[allow(unused_imports)]\nuse crate::ffi::C_DataType;\n#[allow(unused_imports)]\nuse crate::graph::EsCGraph;\n#[allow(unused_imports)]\nuse crate::opcall::*;\n#[allow(unused_imports)]\nuse crate::tensor::EsCTensor;\n#[allow(unused_imports)]\nuse std::ffi::c_char;\n\n",
        reg.version
    );
    for history in ops {
        let last = history.len();
        for (k, p) in history.iter().enumerate() {
            let k = k + 1;
            let sname = if k == last {
                format!("Es{}Output", p.name)
            } else {
                format!("Es{}OutputV{k}", p.name)
            };
            s.push_str(&rust_fn(p, &symbol(&p.name, k), &sname));
        }
    }
    s.truncate(s.trim_end().len());
    s.push('\n');
    s
}

// ---- C++ -----------------------------------------------------------------------------------

fn cpp_float(v: f32) -> String {
    if v.is_nan() {
        "std::numeric_limits<float>::quiet_NaN()".into()
    } else if v.is_infinite() {
        format!(
            "{}std::numeric_limits<float>::infinity()",
            if v < 0.0 { "-" } else { "" }
        )
    } else {
        let t = format!("{v:?}");
        if t.contains(['.', 'e']) {
            format!("{t}f")
        } else {
            format!("{t}.0f")
        }
    }
}

fn cpp_string(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn cpp_default(v: &AttrValue) -> String {
    let join = |v: Vec<String>| format!("{{{}}}", v.join(", "));
    match v {
        AttrValue::Int(i) => i.to_string(),
        AttrValue::Float(f) => cpp_float(*f),
        AttrValue::String(s) => cpp_string(s),
        AttrValue::Bool(b) => b.to_string(),
        AttrValue::Type(t) => format!("ge::{}", t.name()),
        AttrValue::ListInt(l) => join(l.iter().map(i64::to_string).collect()),
        AttrValue::ListFloat(l) => join(l.iter().map(|f| cpp_float(*f)).collect()),
        AttrValue::ListBool(l) => join(l.iter().map(|b| (*b as u8).to_string()).collect()),
        AttrValue::ListType(l) => join(l.iter().map(|t| format!("ge::{}", t.name())).collect()),
        AttrValue::ListListInt(l) => join(
            l.iter()
                .map(|r| join(r.iter().map(i64::to_string).collect()))
                .collect(),
        ),
        AttrValue::ListString(l) => join(l.iter().map(|s| cpp_string(s)).collect()),
        AttrValue::Tensor(_) => "nullptr".into(),
        #[allow(unreachable_patterns)]
        _ => "{}".into(),
    }
}

/// The C++ parameter of an attribute and the C arguments it becomes.
fn cpp_attr(p: &OpProto, a: &AttrDef) -> (String, Vec<String>) {
    let n = attr_name(p, &a.name);
    let (ty, args) = match a.ty {
        AttrType::Int => ("int64_t ", vec![n.clone()]),
        AttrType::Float => ("float ", vec![n.clone()]),
        AttrType::String => ("const char *", vec![n.clone()]),
        AttrType::Bool => ("bool ", vec![n.clone()]),
        AttrType::Type => (
            "ge::DataType ",
            vec![format!("static_cast<C_DataType>({n})")],
        ),
        AttrType::ListInt => (
            "const std::vector<int64_t> &",
            vec![
                format!("{n}.data()"),
                format!("static_cast<int64_t>({n}.size())"),
            ],
        ),
        AttrType::ListFloat => (
            "const std::vector<float> &",
            vec![
                format!("{n}.data()"),
                format!("static_cast<int64_t>({n}.size())"),
            ],
        ),
        AttrType::ListBool => (
            "const std::vector<uint8_t> &",
            vec![
                format!("detail::Bools({n}).data()"),
                format!("static_cast<int64_t>({n}.size())"),
            ],
        ),
        AttrType::ListType => (
            "const std::vector<ge::DataType> &",
            vec![
                format!("detail::CTypes({n}).data()"),
                format!("static_cast<int64_t>({n}.size())"),
            ],
        ),
        AttrType::ListListInt => (
            "const std::vector<std::vector<int64_t>> &",
            vec![
                format!("detail::Rows({n}).data()"),
                format!("static_cast<int64_t>({n}.size())"),
                format!("detail::RowSizes({n}).data()"),
            ],
        ),
        AttrType::Tensor => ("TensorPtr ", vec![format!("{n}.release()")]),
        AttrType::ListString => (
            "const std::vector<const char *> &",
            vec![
                format!("const_cast<const char **>({n}.data())"),
                format!("static_cast<int64_t>({n}.size())"),
            ],
        ),
    };
    let decl = match &a.default {
        Some(d) => format!("{ty}{n} = {}", cpp_default(d)),
        None => format!("{ty}{n}"),
    };
    (decl, args)
}

fn cpp_header(history: &[&OpProto], version: &str) -> String {
    let p = *history.last().expect("at least one signature");
    let file = format!("es_{}.h", p.name);
    let g = guard_macro(&file);
    let mut s = format!(
        "// {BANNER} (library {version})\n#ifndef {g}\n#define {g}\n#include \"es_graph_builder.h\"\n#include \"es_{}_c.h\"\n\nnamespace es {{\n",
        p.name
    );
    let single_dyn = p.outputs.len() == 1 && p.outputs[0].kind == IoKind::Dynamic;
    let ret = if p.outputs.len() <= 1 && !single_dyn {
        "EsTensorHolder".to_string()
    } else if single_dyn {
        "std::vector<EsTensorHolder>".to_string()
    } else {
        let _ = writeln!(s, "struct {}Output {{", p.name);
        for o in &p.outputs {
            let t = if o.kind == IoKind::Dynamic {
                "std::vector<EsTensorHolder>"
            } else {
                "EsTensorHolder"
            };
            let _ = writeln!(s, "  {t} {};", out_name(p, &o.name));
        }
        s.push_str("};\n");
        format!("{}Output", p.name)
    };
    let _ = writeln!(s, "/// {}: {}", p.name, brief(p));
    s.push_str(&cpp_function(p, p, &ret).expect("the current signature"));
    // The seed's C++ compatibility: an older signature with fewer inputs stays callable (as
    // an overload filling the inputs added since as absent and the attributes as defaults).
    for old in &history[..history.len() - 1] {
        if old.inputs.len() < p.inputs.len() {
            if let Some(f) = cpp_function(old, p, &ret) {
                let missing: Vec<&str> = p
                    .inputs
                    .iter()
                    .filter(|i| !old.inputs.iter().any(|o| o.name == i.name))
                    .map(|i| i.name.as_str())
                    .collect();
                let _ = writeln!(
                    s,
                    "/// {} with an earlier library version's inputs ({} absent).",
                    p.name,
                    missing.join(", ")
                );
                s.push_str(&f);
            }
        }
    }
    s.push_str("}  // namespace es\n#endif\n");
    s
}

/// The C++ parameter type of an attribute without the reference, for a local holding its default.
fn cpp_local(decl_with_default: &str) -> String {
    decl_with_default
        .replacen("const ", "", 1)
        .replacen(" &", " ", 1)
}

/// An inline C++ function with `sig`'s parameters calling the C function of `cur` (the current
/// signature); None when `sig` cannot be expressed so (an input or attribute it lacks cannot be
/// left out, or its outputs or subgraphs differ).
fn cpp_function(sig: &OpProto, cur: &OpProto, ret: &str) -> Option<String> {
    if sig.outputs.len() != cur.outputs.len() || sig.subgraphs != cur.subgraphs {
        return None;
    }
    let has_input = |n: &str| sig.inputs.iter().any(|i| i.name == n);
    // The seed's rule for numeric inputs: more than one input, not all dynamic.
    let like = sig.inputs.len() > 1 && sig.inputs.iter().any(|i| i.kind != IoKind::Dynamic);
    let has_attr = |n: &str| sig.attrs.iter().any(|a| a.name == n);
    let mut params = Vec::new();
    let mut locals = String::new();
    let mut args = Vec::new();
    for i in &sig.inputs {
        let n = in_name(&i.name);
        if i.kind == IoKind::Dynamic {
            params.push(format!("const std::vector<EsTensorHolder> &{n}"));
        } else if like {
            params.push(format!("const EsTensorLike &{n}"));
        } else {
            params.push(format!("const EsTensorHolder &{n}"));
        }
    }
    if like {
        // Numbers become Consts of the builder of the tensor inputs (the seed's numeric inputs).
        let found: Vec<String> = sig
            .inputs
            .iter()
            .map(|i| {
                let n = in_name(&i.name);
                if i.kind == IoKind::Dynamic {
                    format!("detail::BuilderOf({n})")
                } else {
                    format!("{n}.Builder()")
                }
            })
            .collect();
        let _ = writeln!(
            locals,
            "  EsCGraphBuilder *es_b_ = detail::FirstBuilder({{{}}});",
            found.join(", ")
        );
    }
    for i in &cur.inputs {
        let n = in_name(&i.name);
        let given = has_input(&i.name);
        if !given && i.kind == IoKind::Required {
            return None;
        }
        if i.kind == IoKind::Dynamic {
            if given {
                args.push(format!("detail::Holders({n}).data()"));
                args.push(format!("static_cast<int64_t>({n}.size())"));
            } else {
                args.extend(["nullptr".to_string(), "0".to_string()]);
            }
        } else if given && like {
            args.push(format!("{n}.ToTensorHolder(es_b_)"));
        } else if given {
            args.push(format!("{n}.GetCTensorHolder()"));
        } else {
            args.push("nullptr".into());
        }
    }
    if needs_owner(cur) != needs_owner(sig) {
        return None;
    }
    if needs_owner(cur) {
        params.push("EsGraphBuilder *owner_builder".into());
        args.push("owner_builder == nullptr ? nullptr : owner_builder->GetCGraphBuilder()".into());
    }
    for o in cur.outputs.iter().filter(|o| o.kind == IoKind::Dynamic) {
        let n = format!("{}_num", out_name(cur, &o.name));
        params.push(format!("int64_t {n}"));
        args.push(n);
    }
    for sg in &cur.subgraphs {
        let n = subgraph_name(&sg.name);
        if sg.kind == SubgraphKind::Static {
            params.push(format!("GraphPtr {n}"));
            args.push(format!("{n}.release()"));
        } else {
            params.push(format!("std::vector<GraphPtr> {n}"));
            args.push(format!("detail::ReleaseGraphs({n}).data()"));
            args.push(format!("static_cast<int64_t>({n}.size())"));
        }
    }
    for a in ordered_attrs(sig) {
        params.push(cpp_attr(sig, a).0);
    }
    for a in ordered_attrs(cur) {
        let (decl, a_args) = cpp_attr(cur, a);
        if !has_attr(&a.name) {
            if a.default.is_none() || attr_name(cur, &a.name) != attr_name(sig, &a.name) {
                return None;
            }
            let _ = writeln!(locals, "  {};", cpp_local(&decl));
        }
        args.extend(a_args);
    }
    let mut s = format!(
        "inline {ret} {}({}) {{\n{locals}",
        cur.name,
        params.join(", ")
    );
    let call = format!("Es{}({})", cur.name, args.join(", "));
    let single_dyn = cur.outputs.len() == 1 && cur.outputs[0].kind == IoKind::Dynamic;
    if ret == "EsTensorHolder" {
        let _ = writeln!(s, "  return EsTensorHolder({call});");
    } else if single_dyn {
        let n = out_name(cur, &cur.outputs[0].name);
        let _ = writeln!(
            s,
            "  auto es_out_ = {call};\n  return detail::Wrap(es_out_.{n}, es_out_.{n}_num);"
        );
    } else {
        let _ = writeln!(s, "  auto es_out_ = {call};\n  {ret} es_ret_;");
        for o in &cur.outputs {
            let n = out_name(cur, &o.name);
            if o.kind == IoKind::Dynamic {
                let _ = writeln!(
                    s,
                    "  es_ret_.{n} = detail::Wrap(es_out_.{n}, es_out_.{n}_num);"
                );
            } else {
                let _ = writeln!(s, "  es_ret_.{n} = EsTensorHolder(es_out_.{n});");
            }
        }
        s.push_str("  return es_ret_;\n");
    }
    s.push_str("}\n");
    Some(s)
}

fn c_types_header() -> String {
    let mut s = format!("/* {BANNER} */\n#ifndef ES_CAPI_ES_C_TYPES_H_\n#define ES_CAPI_ES_C_TYPES_H_\n\n/* GE's data types and formats, with GE's values. */\ntypedef enum {{\n");
    for d in DataType::VALUES {
        let _ = writeln!(s, "  C_{} = {},", d.name(), d.value());
    }
    s.push_str("} C_DataType;\n\ntypedef enum {\n");
    for f in Format::VALUES {
        let _ = writeln!(s, "  C_{} = {},", f.name(), f.value());
    }
    s.push_str("} C_Format;\n\n#ifdef __cplusplus\nnamespace ge {\nenum DataType {\n");
    for d in DataType::VALUES {
        let _ = writeln!(s, "  {} = {},", d.name(), d.value());
    }
    s.push_str("};\nenum Format {\n");
    for f in Format::VALUES {
        let _ = writeln!(s, "  {} = {},", f.name(), f.value());
    }
    s.push_str("};\n}  // namespace ge\n#endif\n#endif\n");
    s
}

/// The exported symbol of signature `k` (from 1) of an operator: `Es<Op>` for its first
/// signature, `Es<Op>_V<k>` for each later one.
pub fn symbol(op: &str, k: usize) -> String {
    if k == 1 {
        format!("Es{op}")
    } else {
        format!("Es{op}_V{k}")
    }
}

/// The distinct C signatures of `op` across `libs` (oldest library first), in order.
fn history<'a>(libs: &'a [Arc<OpRegistry>], op: &str) -> Vec<&'a OpProto> {
    let mut v: Vec<&OpProto> = Vec::new();
    for l in libs {
        if let Some(p) = l.get(op) {
            let key = |p: &OpProto| (c_declaration(p), c_output_struct(p));
            if v.last().is_none_or(|q| key(q) != key(p)) {
                v.push(p);
            }
        }
    }
    v
}

/// Every built-in library version (`es_core::ops::builtin_versions`), oldest first, the
/// current one (`BUILTIN_VERSION`) last: what the build generates from.
pub fn builtin_libraries() -> Vec<Arc<OpRegistry>> {
    let mut v: Vec<_> = es_core::ops::builtin_versions()
        .into_iter()
        .map(|v| es_core::ops::builtin_library(v).expect("a built-in library parses"))
        .collect();
    let current = v
        .iter()
        .position(|l| l.version == es_core::ops::BUILTIN_VERSION)
        .expect("the current version is built in");
    let cur = v.remove(current);
    v.push(cur);
    v
}

/// Every generated file (path relative to the generated directory, `OUT_DIR`: `ops_generated.rs`
/// and `include/<header>`; contents) for `libs`, the library
/// versions oldest first: the headers declare the last one's operators; the Rust code exports
/// every signature any of them had (see [`symbol`]).
pub fn generate(libs: &[Arc<OpRegistry>]) -> Vec<(String, String)> {
    let reg = libs.last().expect("at least one library");
    let mut names: Vec<&str> = reg.iter().map(|p| p.name.as_str()).collect();
    names.sort();
    let histories: Vec<Vec<&OpProto>> = names.iter().map(|n| history(libs, n)).collect();
    let v = &reg.version;
    let mut files = vec![("ops_generated.rs".to_string(), rust_file(reg, &histories))];
    let mut all_c = format!("/* {BANNER} (library {v}) */\n#ifndef ES_CAPI_ES_ALL_OPS_C_H_\n#define ES_CAPI_ES_ALL_OPS_C_H_\n");
    let mut all_cpp = format!(
        "// {BANNER} (library {v})\n#ifndef ES_CAPI_ES_ALL_OPS_H_\n#define ES_CAPI_ES_ALL_OPS_H_\n"
    );
    for h in &histories {
        let p = *h.last().expect("the op is in the last library");
        files.push((
            format!("include/es_{}_c.h", p.name),
            c_header(p, v, h.len()),
        ));
        files.push((format!("include/es_{}.h", p.name), cpp_header(h, v)));
        let _ = writeln!(all_c, "#include \"es_{}_c.h\"", p.name);
        let _ = writeln!(all_cpp, "#include \"es_{}.h\"", p.name);
    }
    all_c.push_str("#endif\n");
    all_cpp.push_str("#endif\n");
    files.push(("include/es_all_ops_c.h".into(), all_c));
    files.push(("include/es_all_ops.h".into(), all_cpp));
    files.push(("include/es_c_types.h".into(), c_types_header()));
    files
}

/// The hand-written headers (checked in, in the crate's `include/`).
pub const HAND_WRITTEN: &[&str] = &["esb_funcs.h", "es_graph_builder.h"];
