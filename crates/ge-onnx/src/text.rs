//! ONNX messages in protobuf text format (what GE writes for `DumpFormat.kOnnx`): fields in
//! field-number order, two spaces per level, strings and bytes C-escaped (octal for anything
//! outside printable ASCII), enums by name.

use crate::proto::{
    tensor_shape_proto::dimension, type_proto, AttributeProto, AttributeType, FunctionProto,
    GraphProto, ModelProto, NodeProto, OperatorSetIdProto, SparseTensorProto,
    StringStringEntryProto, TensorProto, TensorShapeProto, TypeProto, ValueInfoProto,
};
use std::fmt::{Display, Write};

/// A model as protobuf text.
pub fn model(m: &ModelProto) -> String {
    let mut w = W::default();
    w.opt("ir_version", &m.ir_version);
    w.opt_str("producer_name", &m.producer_name);
    w.opt_str("producer_version", &m.producer_version);
    w.opt_str("domain", &m.domain);
    w.opt("model_version", &m.model_version);
    w.opt_str("doc_string", &m.doc_string);
    if let Some(g) = &m.graph {
        w.msg("graph", |w| w.graph(g));
    }
    w.msgs("opset_import", &m.opset_import, W::opset);
    w.entries("metadata_props", &m.metadata_props);
    w.msgs("functions", &m.functions, W::function);
    w.out
}

fn float_text(v: f64, short: usize, exact: impl Fn(&str) -> bool, long: usize) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.into();
    }
    let t = printf_g(v, short);
    if exact(&t) {
        t
    } else {
        printf_g(v, long)
    }
}

/// C's `%.<p>g` of a finite value.
fn printf_g(v: f64, p: usize) -> String {
    let sci = format!("{:.*e}", p - 1, v);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if exp < -4 || exp >= p as i32 {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.abs())
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        trim(&format!("{v:.decimals$}"))
    }
}

#[derive(Default)]
struct W {
    out: String,
    depth: usize,
}

impl W {
    fn field(&mut self, name: &str, value: impl Display) {
        let _ = writeln!(self.out, "{:1$}{name}: {value}", "", self.depth * 2);
    }
    fn opt<T: Display>(&mut self, name: &str, v: &Option<T>) {
        if let Some(v) = v {
            self.field(name, v);
        }
    }
    /// A float field as protobuf's C++ printer writes it (`SimpleFtoa`): `%.6g`, or
    /// `%.9g` when that does not read back as the same float.
    fn float(&mut self, name: &str, v: f32) {
        let text = float_text(f64::from(v), 6, |t| t.parse::<f32>().ok() == Some(v), 9);
        self.field(name, text);
    }
    /// A double field (`SimpleDtoa`): `%.15g`, or `%.17g`.
    fn double(&mut self, name: &str, v: f64) {
        let text = float_text(v, 15, |t| t.parse::<f64>().ok() == Some(v), 17);
        self.field(name, text);
    }
    fn bytes(&mut self, name: &str, v: &[u8]) {
        let mut s = String::with_capacity(v.len() + 2);
        s.push('"');
        for &b in v {
            match b {
                b'\n' => s.push_str("\\n"),
                b'\r' => s.push_str("\\r"),
                b'\t' => s.push_str("\\t"),
                b'"' => s.push_str("\\\""),
                b'\'' => s.push_str("\\'"),
                b'\\' => s.push_str("\\\\"),
                0x20..=0x7e => s.push(b as char),
                _ => {
                    let _ = write!(s, "\\{b:03o}");
                }
            }
        }
        s.push('"');
        self.field(name, s);
    }
    fn opt_str(&mut self, name: &str, v: &Option<String>) {
        if let Some(v) = v {
            self.bytes(name, v.as_bytes());
        }
    }
    fn fields<T: Display>(&mut self, name: &str, values: &[T]) {
        values.iter().for_each(|v| self.field(name, v));
    }
    fn strings<T: AsRef<[u8]>>(&mut self, name: &str, values: &[T]) {
        values.iter().for_each(|v| self.bytes(name, v.as_ref()));
    }
    fn msgs<T>(&mut self, name: &str, items: &[T], body: impl Fn(&mut W, &T)) {
        items.iter().for_each(|x| self.msg(name, |w| body(w, x)));
    }
    fn msg(&mut self, name: &str, body: impl FnOnce(&mut W)) {
        let _ = writeln!(self.out, "{:1$}{name} {{", "", self.depth * 2);
        self.depth += 1;
        body(self);
        self.depth -= 1;
        let _ = writeln!(self.out, "{:1$}}}", "", self.depth * 2);
    }
    fn entries(&mut self, name: &str, entries: &[StringStringEntryProto]) {
        for e in entries {
            self.msg(name, |w| {
                w.opt_str("key", &e.key);
                w.opt_str("value", &e.value);
            });
        }
    }
    fn opset(&mut self, o: &OperatorSetIdProto) {
        self.opt_str("domain", &o.domain);
        self.opt("version", &o.version);
    }
    fn graph(&mut self, g: &GraphProto) {
        self.msgs("node", &g.node, W::node);
        self.opt_str("name", &g.name);
        self.msgs("initializer", &g.initializer, W::tensor);
        self.opt_str("doc_string", &g.doc_string);
        self.msgs("input", &g.input, W::value_info);
        self.msgs("output", &g.output, W::value_info);
        self.msgs("value_info", &g.value_info, W::value_info);
        self.msgs("sparse_initializer", &g.sparse_initializer, W::sparse);
        self.entries("metadata_props", &g.metadata_props);
    }
    fn node(&mut self, n: &NodeProto) {
        self.strings("input", &n.input);
        self.strings("output", &n.output);
        self.opt_str("name", &n.name);
        self.opt_str("op_type", &n.op_type);
        self.msgs("attribute", &n.attribute, W::attribute);
        self.opt_str("doc_string", &n.doc_string);
        self.opt_str("domain", &n.domain);
        self.opt_str("overload", &n.overload);
    }
    fn attribute(&mut self, a: &AttributeProto) {
        self.opt_str("name", &a.name);
        if let Some(f) = a.f {
            self.float("f", f);
        }
        self.opt("i", &a.i);
        if let Some(s) = &a.s {
            self.bytes("s", s);
        }
        if let Some(t) = &a.t {
            self.msg("t", |w| w.tensor(t));
        }
        if let Some(g) = &a.g {
            self.msg("g", |w| w.graph(g));
        }
        a.floats.iter().for_each(|&v| self.float("floats", v));
        self.fields("ints", &a.ints);
        self.strings("strings", &a.strings);
        self.msgs("tensors", &a.tensors, W::tensor);
        self.msgs("graphs", &a.graphs, W::graph);
        self.opt_str("doc_string", &a.doc_string);
        if let Some(tp) = &a.tp {
            self.msg("tp", |w| w.type_proto(tp));
        }
        self.msgs("type_protos", &a.type_protos, W::type_proto);
        if let Some(t) = a.r#type {
            match AttributeType::try_from(t) {
                Ok(n) => self.field("type", n.as_str_name()),
                Err(_) => self.field("type", t),
            }
        }
        self.opt_str("ref_attr_name", &a.ref_attr_name);
        if let Some(t) = &a.sparse_tensor {
            self.msg("sparse_tensor", |w| w.sparse(t));
        }
        self.msgs("sparse_tensors", &a.sparse_tensors, W::sparse);
    }
    fn value_info(&mut self, v: &ValueInfoProto) {
        self.opt_str("name", &v.name);
        if let Some(t) = &v.r#type {
            self.msg("type", |w| w.type_proto(t));
        }
        self.opt_str("doc_string", &v.doc_string);
    }
    fn tensor(&mut self, t: &TensorProto) {
        self.fields("dims", &t.dims);
        self.opt("data_type", &t.data_type);
        t.float_data
            .iter()
            .for_each(|&v| self.float("float_data", v));
        self.fields("int32_data", &t.int32_data);
        self.strings("string_data", &t.string_data);
        self.fields("int64_data", &t.int64_data);
        self.opt_str("name", &t.name);
        if let Some(raw) = &t.raw_data {
            self.bytes("raw_data", raw);
        }
        t.double_data
            .iter()
            .for_each(|&v| self.double("double_data", v));
        self.fields("uint64_data", &t.uint64_data);
        self.opt_str("doc_string", &t.doc_string);
        self.entries("external_data", &t.external_data);
        match t.data_location {
            Some(0) => self.field("data_location", "DEFAULT"),
            Some(1) => self.field("data_location", "EXTERNAL"),
            other => self.opt("data_location", &other),
        }
    }
    fn sparse(&mut self, t: &SparseTensorProto) {
        if let Some(v) = &t.values {
            self.msg("values", |w| w.tensor(v));
        }
        if let Some(i) = &t.indices {
            self.msg("indices", |w| w.tensor(i));
        }
        self.fields("dims", &t.dims);
    }
    fn shape(&mut self, s: &TensorShapeProto) {
        for d in &s.dim {
            self.msg("dim", |w| {
                match &d.value {
                    Some(dimension::Value::DimValue(v)) => w.field("dim_value", v),
                    Some(dimension::Value::DimParam(p)) => w.bytes("dim_param", p.as_bytes()),
                    None => {}
                }
                w.opt_str("denotation", &d.denotation);
            });
        }
    }
    /// A `TypeProto.Tensor` or `TypeProto.SparseTensor` (the same fields).
    fn tensor_type(&mut self, elem_type: &Option<i32>, shape: &Option<TensorShapeProto>) {
        self.opt("elem_type", elem_type);
        if let Some(s) = shape {
            self.msg("shape", |w| w.shape(s));
        }
    }
    fn type_proto(&mut self, t: &TypeProto) {
        use type_proto::Value;
        // Fields 1, 4, 5 come before the denotation (6), 7, 8, 9 after it.
        let early = matches!(
            t.value,
            Some(Value::TensorType(_) | Value::SequenceType(_) | Value::MapType(_))
        );
        if !early {
            self.opt_str("denotation", &t.denotation);
        }
        match &t.value {
            Some(Value::TensorType(x)) => {
                self.msg("tensor_type", |w| w.tensor_type(&x.elem_type, &x.shape))
            }
            Some(Value::SequenceType(x)) => self.msg("sequence_type", |w| {
                if let Some(e) = &x.elem_type {
                    w.msg("elem_type", |w| w.type_proto(e));
                }
            }),
            Some(Value::MapType(x)) => self.msg("map_type", |w| {
                w.opt("key_type", &x.key_type);
                if let Some(v) = &x.value_type {
                    w.msg("value_type", |w| w.type_proto(v));
                }
            }),
            Some(Value::OpaqueType(x)) => self.msg("opaque_type", |w| {
                w.opt_str("domain", &x.domain);
                w.opt_str("name", &x.name);
            }),
            Some(Value::SparseTensorType(x)) => self.msg("sparse_tensor_type", |w| {
                w.tensor_type(&x.elem_type, &x.shape)
            }),
            Some(Value::OptionalType(x)) => self.msg("optional_type", |w| {
                if let Some(e) = &x.elem_type {
                    w.msg("elem_type", |w| w.type_proto(e));
                }
            }),
            None => {}
        }
        if early {
            self.opt_str("denotation", &t.denotation);
        }
    }
    fn function(&mut self, f: &FunctionProto) {
        self.opt_str("name", &f.name);
        self.strings("input", &f.input);
        self.strings("output", &f.output);
        self.strings("attribute", &f.attribute);
        self.msgs("node", &f.node, W::node);
        self.opt_str("doc_string", &f.doc_string);
        self.msgs("opset_import", &f.opset_import, W::opset);
        self.opt_str("domain", &f.domain);
        self.msgs("attribute_proto", &f.attribute_proto, W::attribute);
        self.msgs("value_info", &f.value_info, W::value_info);
        self.opt_str("overload", &f.overload);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_nest_and_strings_are_c_escaped() {
        let m = ModelProto {
            ir_version: Some(8),
            producer_name: Some("g\u{e9}\"".into()),
            graph: Some(GraphProto {
                name: Some("main".into()),
                node: vec![NodeProto {
                    op_type: Some("Relu".into()),
                    input: vec!["x".into()],
                    ..Default::default()
                }],
                ..Default::default()
            }),
            ..Default::default()
        };
        let t = model(&m);
        assert!(t.starts_with("ir_version: 8\n"), "{t}");
        assert!(t.contains("producer_name: \"g\\303\\251\\\"\"\n"), "{t}");
        assert!(t.contains("graph {\n  node {\n    input: \"x\"\n"), "{t}");
        assert!(
            t.contains("    op_type: \"Relu\"\n  }\n  name: \"main\"\n}"),
            "{t}"
        );
    }
}
