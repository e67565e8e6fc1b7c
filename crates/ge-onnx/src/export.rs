//! ONNX export: the IR → `ModelProto`.
//!
//! Two forms:
//!
//! - [`to_onnx`] (`ge.onnx.save`): a real ONNX model (opset [`OPSET`]) that onnxruntime runs.
//!   Every GE op goes through the exporter of its type (standard ONNX ops only); Data nodes
//!   become graph inputs in their index order, Const nodes initializers, graph outputs get
//!   `Identity` nodes named `output_<i>`. A graph with op types no exporter handles is one
//!   error listing each such type. Control edges are dropped (ONNX has none; they do not
//!   change values).
//! - [`to_onnx_dump`] (`Graph.dump_to_file(DumpFormat.kOnnx)`, what GE does for Netron):
//!   every node kept as it is, op type in the custom domain [`GE_DOMAIN`], IR and private
//!   attributes as ONNX attributes, subgraphs as graph attributes, control inputs as the
//!   attribute `_control_inputs`; any graph can be dumped, none is meant to run.

use crate::error::{Error, Result};
use crate::proto::{
    AttributeProto, AttributeType as At, GraphProto, ModelProto, NodeProto, OperatorSetIdProto,
    TensorProto, ValueInfoProto,
};
use crate::types::{dtype_to_onnx, tensor_to_proto, type_from_desc};
use es_core::opmath::{attr_or, FromAttr, Padding};
use es_core::{AttrValue, DataType, Format, Graph, Node, NodeId, OutPort, TensorDesc};
use prost::Message;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

/// The ONNX opset of exported models.
pub const OPSET: i64 = 18;
/// The domain of GE op types in a dump.
pub const GE_DOMAIN: &str = "ge";

// ---------------------------------------------------------------------------------------
// Attribute helpers
// ---------------------------------------------------------------------------------------

/// Attribute `name` of type `ty`, its value set by `set`.
fn a_typed(name: &str, ty: At, set: impl FnOnce(&mut AttributeProto)) -> AttributeProto {
    let mut a = AttributeProto {
        name: Some(name.into()),
        r#type: Some(ty as i32),
        ..Default::default()
    };
    set(&mut a);
    a
}
fn a_int(name: &str, v: i64) -> AttributeProto {
    a_typed(name, At::Int, |a| a.i = Some(v))
}
fn a_ints(name: &str, v: Vec<i64>) -> AttributeProto {
    a_typed(name, At::Ints, |a| a.ints = v)
}
fn a_float(name: &str, v: f32) -> AttributeProto {
    a_typed(name, At::Float, |a| a.f = Some(v))
}
fn a_str(name: &str, v: &str) -> AttributeProto {
    a_typed(name, At::String, |a| a.s = Some(v.as_bytes().to_vec()))
}

fn value_info(name: &str, d: &TensorDesc, what: &str) -> Result<ValueInfoProto> {
    if d.dtype == DataType::UNDEFINED {
        return Err(Error::unsupported(format!(
            "{what}: its dtype is not known (infer shapes first)"
        )));
    }
    Ok(ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(type_from_desc(d).map_err(|e| e.context(what))?),
        ..Default::default()
    })
}

fn model(graph: GraphProto, extra_domain: bool) -> ModelProto {
    let mut opset_import = vec![OperatorSetIdProto {
        domain: Some(String::new()),
        version: Some(OPSET),
    }];
    if extra_domain {
        opset_import.push(OperatorSetIdProto {
            domain: Some(GE_DOMAIN.into()),
            version: Some(1),
        });
    }
    ModelProto {
        ir_version: Some(8),
        opset_import,
        producer_name: Some("ge-rs".into()),
        producer_version: Some(env!("CARGO_PKG_VERSION").into()),
        graph: Some(graph),
        ..Default::default()
    }
}

/// Unique value names for every output port of a graph.
fn port_names(g: &Graph, used: &mut HashSet<String>) -> Result<HashMap<(NodeId, u32), String>> {
    let mut out = HashMap::new();
    for id in g.nodes() {
        let n = g.node(id)?;
        for i in 0..n.outputs.len() {
            let base = if n.outputs.len() == 1 {
                n.name.to_string()
            } else {
                format!("{}:{i}", n.name)
            };
            out.insert((id, i as u32), fresh(used, &base));
        }
    }
    Ok(out)
}

fn fresh(used: &mut HashSet<String>, base: &str) -> String {
    let mut cand = base.to_string();
    let mut k = 1usize;
    while !used.insert(cand.clone()) {
        cand = format!("{base}_{k}");
        k += 1;
    }
    cand
}

// ---------------------------------------------------------------------------------------
// Dump form (Netron)
// ---------------------------------------------------------------------------------------

fn attr_to_onnx(name: &str, v: &AttrValue) -> AttributeProto {
    let mut a = AttributeProto {
        name: Some(name.into()),
        ..Default::default()
    };
    match v {
        AttrValue::Int(i) => return a_int(name, *i),
        AttrValue::Float(f) => return a_float(name, *f),
        AttrValue::String(s) => return a_str(name, s),
        AttrValue::Bool(b) => return a_int(name, *b as i64),
        AttrValue::Type(t) => return a_str(name, t.name()),
        AttrValue::ListInt(v) => return a_ints(name, v.clone()),
        AttrValue::ListBool(v) => return a_ints(name, v.iter().map(|b| *b as i64).collect()),
        AttrValue::ListFloat(v) => {
            a.r#type = Some(At::Floats as i32);
            a.floats = v.clone();
        }
        AttrValue::ListType(v) => {
            a.r#type = Some(At::Strings as i32);
            a.strings = v.iter().map(|t| t.name().as_bytes().to_vec()).collect();
        }
        AttrValue::ListString(v) => {
            a.r#type = Some(At::Strings as i32);
            a.strings = v.iter().map(|s| s.as_bytes().to_vec()).collect();
        }
        AttrValue::ListListInt(v) => {
            a.r#type = Some(At::Strings as i32);
            a.strings = v.iter().map(|r| format!("{r:?}").into_bytes()).collect();
        }
        AttrValue::Tensor(t) => match tensor_to_proto(t, "") {
            Ok(tp) => {
                a.r#type = Some(At::Tensor as i32);
                a.t = Some(tp);
            }
            Err(_) => return a_str(name, &format!("tensor {}", t.desc)),
        },
    }
    a
}

fn dump_graph(g: &Graph, depth: usize) -> Result<GraphProto> {
    if depth > es_core::serialize::MAX_SUBGRAPH_DEPTH {
        return Err(Error::unsupported("subgraphs nested too deep to dump"));
    }
    let mut used = HashSet::new();
    let names = port_names(g, &mut used)?;
    let mut gp = GraphProto {
        name: Some(g.name.clone()),
        ..Default::default()
    };
    for id in g.topo_order().unwrap_or_else(|_| g.nodes()) {
        let n = g.node(id)?;
        let mut np = NodeProto {
            name: Some(n.name.to_string()),
            op_type: Some(n.op_type.to_string()),
            domain: Some(GE_DOMAIN.into()),
            ..Default::default()
        };
        for inp in &n.inputs {
            np.input.push(
                inp.source
                    .and_then(|p| names.get(&(p.node, p.index)).cloned())
                    .unwrap_or_default(),
            );
        }
        for i in 0..n.outputs.len() {
            let name = names[&(id, i as u32)].clone();
            if let Ok(vi) = value_info(&name, &n.outputs[i].desc, "") {
                gp.value_info.push(vi);
            }
            np.output.push(name);
        }
        for (k, v) in n.attrs.iter().chain(&n.private_attrs) {
            np.attribute.push(attr_to_onnx(k, v));
        }
        if !n.in_control.is_empty() {
            let mut a = AttributeProto {
                name: Some("_control_inputs".into()),
                r#type: Some(At::Strings as i32),
                ..Default::default()
            };
            for c in &n.in_control {
                a.strings.push(g.node(*c)?.name.as_bytes().to_vec());
            }
            np.attribute.push(a);
        }
        for s in &n.subgraphs {
            np.attribute.push(AttributeProto {
                name: Some(s.name.to_string()),
                r#type: Some(At::Graph as i32),
                g: Some(dump_graph(&s.graph, depth + 1)?),
                ..Default::default()
            });
        }
        gp.node.push(np);
    }
    for p in &g.outputs {
        let name = names.get(&(p.node, p.index)).cloned().unwrap_or_default();
        let d = g.out_desc(*p)?;
        gp.output
            .push(value_info(&name, d, "").unwrap_or(ValueInfoProto {
                name: Some(name),
                ..Default::default()
            }));
    }
    Ok(gp)
}

/// The graph as an ONNX model for viewing: GE op types as they are (domain `ge`).
pub fn to_onnx_dump(g: &Graph) -> Result<ModelProto> {
    Ok(model(dump_graph(g, 0)?, true))
}

// ---------------------------------------------------------------------------------------
// Real ONNX
// ---------------------------------------------------------------------------------------

/// The exporter of one GE op type.
pub type ExportFn = fn(&mut Ex<'_>, &Node, &Io) -> Result<()>;

/// The ONNX values of a node's inputs (`None`: unconnected) and outputs.
pub struct Io {
    pub ins: Vec<Option<String>>,
    pub outs: Vec<String>,
}

impl Io {
    fn input(&self, i: usize, n: &Node) -> Result<String> {
        self.ins.get(i).cloned().flatten().ok_or_else(|| {
            Error::tr(format!(
                "node '{}' ({}): input {i} is not connected",
                n.name, n.op_type
            ))
        })
    }
    fn has(&self, i: usize) -> bool {
        self.ins.get(i).is_some_and(Option::is_some)
    }
}

/// The state of an export: the ONNX nodes and initializers made so far.
pub struct Ex<'g> {
    g: &'g Graph,
    nodes: Vec<NodeProto>,
    inits: Vec<TensorProto>,
    used: HashSet<String>,
}

impl Ex<'_> {
    fn tmp(&mut self, base: &str) -> String {
        fresh(&mut self.used, base)
    }
    /// Emits `op` as node `n`, with its outputs.
    fn emit_as(
        &mut self,
        n: &Node,
        io: &Io,
        op: &str,
        inputs: Vec<String>,
        attrs: Vec<AttributeProto>,
    ) {
        self.emit(op, &n.name, inputs, io.outs.clone(), attrs);
    }
    fn emit(
        &mut self,
        op: &str,
        name: &str,
        inputs: Vec<String>,
        outputs: Vec<String>,
        attrs: Vec<AttributeProto>,
    ) {
        let name = self.tmp(&format!("{name}/{op}"));
        self.nodes.push(NodeProto {
            input: inputs,
            output: outputs,
            name: Some(name),
            op_type: Some(op.into()),
            attribute: attrs,
            ..Default::default()
        });
    }
    /// A node with one fresh output; returns it.
    fn op1(
        &mut self,
        op: &str,
        n: &Node,
        inputs: Vec<String>,
        attrs: Vec<AttributeProto>,
    ) -> String {
        let out = self.tmp(&format!("{}/{op}_out", n.name));
        self.emit(op, &n.name, inputs, vec![out.clone()], attrs);
        out
    }
    fn init(&mut self, base: &str, t: &es_core::Tensor) -> Result<String> {
        let name = self.tmp(base);
        self.inits.push(tensor_to_proto(t, &name)?);
        Ok(name)
    }
    fn const_i64(&mut self, n: &Node, v: &[i64]) -> Result<String> {
        let t = es_core::Tensor::from_values(v, vec![v.len() as i64])?;
        self.init(&format!("{}/const", n.name), &t)
    }
    fn scalar(&mut self, n: &Node, dtype: DataType, v: f64) -> Result<String> {
        let t = es_core::types::tensor_from_f64(dtype, vec![], &[v])?;
        self.init(&format!("{}/const", n.name), &t)
    }
    /// The constant value of input `i`, where its producer is a Const node.
    fn const_ints(&self, n: &Node, i: usize) -> Option<Vec<i64>> {
        let src = n.inputs.get(i)?.source?;
        self.g.node(src.node).ok()?.const_value()?.to_i64_vec().ok()
    }
    fn need_const_ints(&self, n: &Node, i: usize, what: &str) -> Result<Vec<i64>> {
        self.const_ints(n, i).ok_or_else(|| {
            Error::unsupported(format!(
                "node '{}' ({}): {what} (input {i}) must be a constant for ONNX",
                n.name, n.op_type
            ))
        })
    }
    /// Input `i` as int64 (ONNX's index inputs are int64).
    fn as_i64(&mut self, n: &Node, io: &Io, i: usize) -> Result<String> {
        let v = io.input(i, n)?;
        if in_dtype(n, i) == DataType::INT64 {
            return Ok(v);
        }
        Ok(self.op1(
            "Cast",
            n,
            vec![v],
            vec![a_int("to", crate::proto::ElemType::Int64 as i64)],
        ))
    }
}

fn in_dtype(n: &Node, i: usize) -> DataType {
    n.inputs
        .get(i)
        .map_or(DataType::UNDEFINED, |s| s.desc.dtype)
}

fn in_rank(n: &Node, i: usize) -> Option<usize> {
    n.inputs.get(i).and_then(|s| s.desc.shape.rank())
}

fn need_rank(n: &Node, i: usize) -> Result<usize> {
    in_rank(n, i).ok_or_else(|| {
        Error::unsupported(format!(
            "node '{}' ({}): the rank of input {i} must be known to export it",
            n.name, n.op_type
        ))
    })
}

fn bad(n: &Node, msg: impl std::fmt::Display) -> Error {
    Error::unsupported(format!("node '{}' ({}): {msg}", n.name, n.op_type))
}

/// Attribute `k` of `n` as a `T`, `default` when absent.
fn attr<'a, T: FromAttr<'a>>(n: &'a Node, k: &str, default: T) -> Result<T> {
    attr_or(n.attrs.get(k), default)
        .map_err(|e| bad(n, format!("attribute '{k}' is {}, not {}", e.got, e.words)))
}
/// An int attribute; a bool reads as 0 or 1.
/// The dtype an int attribute names; a value that is no DataType is the node's error.
fn dtype_of(n: &Node, k: &str, v: i64) -> Result<DataType> {
    DataType::from_value(v).map_err(|_| {
        Error::Translation(format!(
            "node '{}' ({}): attribute '{k}' = {v} is not a DataType",
            n.name, n.op_type
        ))
    })
}
fn attr_i(n: &Node, k: &str, default: i64) -> Result<i64> {
    match n.attrs.get(k) {
        Some(AttrValue::Bool(b)) => Ok(*b as i64),
        _ => attr(n, k, default),
    }
}
fn attr_b(n: &Node, k: &str, default: bool) -> Result<bool> {
    Ok(attr_i(n, k, default as i64)? != 0)
}
fn attr_f(n: &Node, k: &str, default: f32) -> Result<f32> {
    attr(n, k, default)
}
fn attr_s(n: &Node, k: &str, default: &str) -> Result<String> {
    attr(n, k, default).map(str::to_string)
}
fn attr_ints(n: &Node, k: &str) -> Result<Option<Vec<i64>>> {
    match n.attrs.get(k) {
        None => Ok(None),
        Some(_) => attr::<&[i64]>(n, k, &[]).map(|v| Some(v.to_vec())),
    }
}

/// Every IR attribute not in `handled` must have its prototype default: the exporter has no
/// ONNX form for any other value.
fn check_attrs(n: &Node, handled: &[&str]) -> Result<()> {
    let reg = es_core::ops::global_registry();
    let proto = reg.get(&n.op_type);
    for (k, v) in &n.attrs {
        if handled.contains(&k.as_str()) {
            continue;
        }
        let default = proto
            .and_then(|p| p.attr(k))
            .and_then(|a| a.default.as_ref());
        if default != Some(v) {
            return Err(bad(
                n,
                format!("attribute {k}={v} has no ONNX equivalent in this exporter"),
            ));
        }
    }
    Ok(())
}

fn no_input(n: &Node, io: &Io, i: usize, what: &str) -> Result<()> {
    if io.has(i) {
        return Err(bad(n, format!("{what} (input {i}) has no ONNX equivalent")));
    }
    Ok(())
}

/// One-to-one ops: GE type → ONNX type, inputs and output as they are.
const SIMPLE: &[(&str, &str)] = &[
    ("Add", "Add"),
    ("AddV2", "Add"),
    ("Sub", "Sub"),
    ("Mul", "Mul"),
    ("RealDiv", "Div"),
    ("Pow", "Pow"),
    ("Maximum", "Max"),
    ("Minimum", "Min"),
    ("Equal", "Equal"),
    ("Greater", "Greater"),
    ("GreaterEqual", "GreaterOrEqual"),
    ("Less", "Less"),
    ("LessEqual", "LessOrEqual"),
    ("LogicalAnd", "And"),
    ("LogicalOr", "Or"),
    ("LogicalNot", "Not"),
    ("BitwiseAnd", "BitwiseAnd"),
    ("BitwiseOr", "BitwiseOr"),
    ("BitwiseXor", "BitwiseXor"),
    ("Invert", "BitwiseNot"),
    ("Abs", "Abs"),
    ("Neg", "Neg"),
    ("Exp", "Exp"),
    ("Log", "Log"),
    ("Sqrt", "Sqrt"),
    ("Sin", "Sin"),
    ("Cos", "Cos"),
    ("Tan", "Tan"),
    ("Asin", "Asin"),
    ("Acos", "Acos"),
    ("Atan", "Atan"),
    ("Sinh", "Sinh"),
    ("Cosh", "Cosh"),
    ("Asinh", "Asinh"),
    ("Acosh", "Acosh"),
    ("Atanh", "Atanh"),
    ("Tanh", "Tanh"),
    ("Sigmoid", "Sigmoid"),
    ("Relu", "Relu"),
    ("Erf", "Erf"),
    ("Floor", "Floor"),
    ("Ceil", "Ceil"),
    ("Sign", "Sign"),
    ("Reciprocal", "Reciprocal"),
    ("Softplus", "Softplus"),
    ("Softsign", "Softsign"),
    ("Mish", "Mish"),
    ("IsNan", "IsNaN"),
    ("Identity", "Identity"),
    ("SelectV2", "Where"),
    ("Range", "Range"),
];

fn simple(ex: &mut Ex<'_>, n: &Node, io: &Io) -> Result<()> {
    let onnx = SIMPLE
        .iter()
        .find(|p| p.0 == n.op_type)
        .map(|p| p.1)
        .ok_or_else(|| bad(n, "no exporter"))?;
    check_attrs(n, &[])?;
    let ins = (0..n.inputs.len())
        .map(|i| io.input(i, n))
        .collect::<Result<Vec<_>>>()?;
    ex.emit_as(n, io, onnx, ins, vec![]);
    Ok(())
}

fn div(ex: &mut Ex<'_>, n: &Node, io: &Io) -> Result<()> {
    if !in_dtype(n, 0).is_float() {
        return Err(bad(
            n,
            format!(
                "Div of {} (GE's integer Div rounds unlike ONNX's)",
                in_dtype(n, 0)
            ),
        ));
    }
    let (a, b) = (io.input(0, n)?, io.input(1, n)?);
    ex.emit_as(n, io, "Div", vec![a, b], vec![]);
    Ok(())
}

/// Attribute-mapped activations: (GE type, ONNX type, [(GE attr, ONNX attr)]).
fn activation(ex: &mut Ex<'_>, n: &Node, io: &Io) -> Result<()> {
    let (onnx, map): (&str, &[(&str, &str, f32)]) = match n.op_type.as_str() {
        "Elu" => ("Elu", &[("alpha", "alpha", 1.0)]),
        "LeakyRelu" => ("LeakyRelu", &[("negative_slope", "alpha", 0.0)]),
        "HardSigmoid" => (
            "HardSigmoid",
            &[("alpha", "alpha", 0.16666666), ("beta", "beta", 0.5)],
        ),
        "Swish" => ("Swish", &[("scale", "alpha", 1.0)]),
        _ => return Err(bad(n, "no exporter")),
    };
    check_attrs(n, &map.iter().map(|m| m.0).collect::<Vec<_>>())?;
    let mut attrs = Vec::new();
    for (k, o, d) in map {
        attrs.push(a_float(o, attr_f(n, k, *d)?));
    }
    if onnx == "Swish" {
        // Swish(x) = x * Sigmoid(alpha * x); ONNX's Swish is opset 24.
        let x = io.input(0, n)?;
        let alpha = ex.scalar(n, in_dtype(n, 0), attr_f(n, "scale", 1.0)? as f64)?;
        let ax = ex.op1("Mul", n, vec![x.clone(), alpha], vec![]);
        let s = ex.op1("Sigmoid", n, vec![ax], vec![]);
        ex.emit_as(n, io, "Mul", vec![x, s], vec![]);
        return Ok(());
    }
    let x = io.input(0, n)?;
    ex.emit_as(n, io, onnx, vec![x], attrs);
    Ok(())
}

/// GE's Gelu (the tanh form) and GeluV2 (`approximate` "none": the erf form, or "tanh") as
/// their formulas: ONNX's Gelu is opset 20, above the exported opset. onnxruntime fuses both
/// back into its Gelu / FastGelu.
fn gelu(ex: &mut Ex<'_>, n: &Node, io: &Io) -> Result<()> {
    let approx = if n.op_type == "GeluV2" {
        check_attrs(n, &["approximate"])?;
        attr_s(n, "approximate", "none")?
    } else {
        check_attrs(n, &[])?;
        "tanh".to_string()
    };
    let dt = in_dtype(n, 0);
    let x = io.input(0, n)?;
    let inner = match approx.as_str() {
        "none" => {
            let c = ex.scalar(n, dt, std::f64::consts::FRAC_1_SQRT_2)?;
            let u = ex.op1("Mul", n, vec![x.clone(), c], vec![]);
            ex.op1("Erf", n, vec![u], vec![])
        }
        "tanh" => {
            // tanh(sqrt(2/pi) * (x + 0.044715 x^3))
            let x2 = ex.op1("Mul", n, vec![x.clone(), x.clone()], vec![]);
            let x3 = ex.op1("Mul", n, vec![x2, x.clone()], vec![]);
            let k = ex.scalar(n, dt, 0.044715)?;
            let t = ex.op1("Mul", n, vec![x3, k], vec![]);
            let s = ex.op1("Add", n, vec![x.clone(), t], vec![]);
            let c = ex.scalar(n, dt, (2.0 / std::f64::consts::PI).sqrt())?;
            let u = ex.op1("Mul", n, vec![s, c], vec![]);
            ex.op1("Tanh", n, vec![u], vec![])
        }
        other => {
            return Err(bad(
                n,
                format!("approximate must be \"none\" or \"tanh\", got {other:?}"),
            ))
        }
    };
    let one = ex.scalar(n, dt, 1.0)?;
    let half = ex.scalar(n, dt, 0.5)?;
    let p = ex.op1("Add", n, vec![inner, one], vec![]);
    let hx = ex.op1("Mul", n, vec![x, half], vec![]);
    ex.emit_as(n, io, "Mul", vec![hx, p], vec![]);
    Ok(())
}

fn cast(ex: &mut Ex<'_>, n: &Node, io: &Io) -> Result<()> {
    check_attrs(n, &["dst_type"])?;
    let dt = match n.attrs.get("dst_type") {
        Some(AttrValue::Int(v)) => dtype_of(n, "dst_type", *v)?,
        Some(AttrValue::Type(t)) => *t,
        _ => n
            .outputs
            .first()
            .map_or(DataType::UNDEFINED, |o| o.desc.dtype),
    };
    let to = dtype_to_onnx(dt).ok_or_else(|| bad(n, format!("{dt} has no ONNX type")))?;
    let x = io.input(0, n)?;
    ex.emit_as(n, io, "Cast", vec![x], vec![a_int("to", to as i64)]);
    Ok(())
}

/// Swaps the last two dims of input `i` (rank must be known).
fn transpose_last2(ex: &mut Ex<'_>, n: &Node, v: String, rank: usize) -> String {
    let mut perm: Vec<i64> = (0..rank as i64).collect();
    if rank >= 2 {
        perm.swap(rank - 2, rank - 1);
    }
    ex.op1("Transpose", n, vec![v], vec![a_ints("perm", perm)])
}

fn matmul(ex: &mut Ex<'_>, n: &Node, io: &Io) -> Result<()> {
    let batch = n.op_type.starts_with("Batch");
    let (ta, tb) = if batch {
        ("adj_x1", "adj_x2")
    } else {
        ("transpose_x1", "transpose_x2")
    };
    check_attrs(n, &[ta, tb])?;
    no_input(n, io, 3, "offset_w")?;
    let mut a = io.input(0, n)?;
    let mut b = io.input(1, n)?;
    if attr_b(n, ta, false)? {
        let r = need_rank(n, 0)?;
        a = transpose_last2(ex, n, a, r);
    }
    if attr_b(n, tb, false)? {
        let r = need_rank(n, 1)?;
        b = transpose_last2(ex, n, b, r);
    }
    if io.has(2) {
        let y = ex.op1("MatMul", n, vec![a, b], vec![]);
        let bias = io.input(2, n)?;
        ex.emit_as(n, io, "Add", vec![y, bias], vec![]);
    } else {
        ex.emit_as(n, io, "MatMul", vec![a, b], vec![]);
    }
    Ok(())
}

fn gemm(ex: &mut Ex<'_>, n: &Node, io: &Io) -> Result<()> {
    check_attrs(n, &["transpose_a", "transpose_b"])?;
    let mut a = io.input(0, n)?;
    let mut b = io.input(1, n)?;
    // GEMM is a 2-D operator.
    if attr_b(n, "transpose_a", false)? {
        a = transpose_last2(ex, n, a, 2);
    }
    if attr_b(n, "transpose_b", false)? {
        b = transpose_last2(ex, n, b, 2);
    }
    let (c, alpha, beta) = (io.input(2, n)?, io.input(3, n)?, io.input(4, n)?);
    // alpha * (a @ b) + beta * c, as GE's GEMM computes it.
    let ab = ex.op1("MatMul", n, vec![a, b], vec![]);
    let l = ex.op1("Mul", n, vec![alpha, ab], vec![]);
    let r = ex.op1("Mul", n, vec![beta, c], vec![]);
    ex.emit_as(n, io, "Add", vec![l, r], vec![]);
    Ok(())
}

/// `[N, C, H, W]`-ordered values of a 4-entry attribute given in `data_format` order.
fn hw_of(v: &[i64], nchw: bool) -> Option<[i64; 2]> {
    if v.len() != 4 {
        return None;
    }
    Some(if nchw { [v[2], v[3]] } else { [v[1], v[2]] })
}

/// The description of input `i` as its producer gives it (the node's slot copy otherwise).
fn in_desc<'a>(ex: &Ex<'a>, n: &'a Node, i: usize) -> Option<&'a TensorDesc> {
    let slot = n.inputs.get(i)?;
    match slot.source {
        Some(p) => ex.g.out_desc(p).ok().or(Some(&slot.desc)),
        None => None,
    }
}

/// Whether x (input 0) is read as NCHW, by the layout decision the shape rules and the CPU
/// kernels share (`es_core::infer::layout`): x's format, else `data_format` (`default` unset).
fn layout(ex: &Ex<'_>, n: &Node, default: &str) -> Result<bool> {
    let df = attr_s(n, "data_format", default)?;
    let f = es_core::infer::layout::data_layout(
        in_desc(ex, n, 0),
        &df,
        es_core::infer::layout::DATA_2D,
    )
    .map_err(|e| bad(n, e))?;
    Ok(!es_core::infer::layout::channel_last(f))
}

const TO_NCHW: [i64; 4] = [0, 3, 1, 2];
const TO_NHWC: [i64; 4] = [0, 2, 3, 1];

fn conv2d(ex: &mut Ex<'_>, n: &Node, io: &Io) -> Result<()> {
    check_attrs(
        n,
        &["strides", "pads", "dilations", "groups", "data_format"],
    )?;
    no_input(n, io, 3, "offset_w")?;
    let nchw = layout(ex, n, "NHWC")?;
    let strides = attr_ints(n, "strides")?.unwrap_or_else(|| vec![1; 4]);
    let dil = attr_ints(n, "dilations")?.unwrap_or_else(|| vec![1; 4]);
    let s = hw_of(&strides, nchw).ok_or_else(|| bad(n, "strides must have 4 entries"))?;
    let d = hw_of(&dil, nchw).ok_or_else(|| bad(n, "dilations must have 4 entries"))?;
    let mut attrs = vec![
        a_ints("strides", s.to_vec()),
        a_ints("dilations", d.to_vec()),
        a_int("group", attr_i(n, "groups", 1)?),
    ];
    let mode = n
        .private_attrs
        .get("padding")
        .and_then(AttrValue::as_str)
        .unwrap_or("");
    attrs.push(padding_attr(n, mode, Some(""))?);
    let x = to_nchw(ex, n, io.input(0, n)?, nchw);
    let mut w = io.input(1, n)?;
    // The filter's layout as the rule and the kernel read it; [out, in, kh, kw] for ONNX.
    let fl: Format = es_core::infer::layout::filter_layout(
        in_desc(ex, n, 1),
        in_desc(ex, n, 0),
        es_core::infer::layout::FILTER_2D,
    )
    .map_err(|e| bad(n, e))?;
    let perm = es_core::infer::layout::filter_positions(fl)
        .ok_or_else(|| bad(n, format!("a filter of format {fl}")))?;
    if perm != [0, 1, 2, 3] {
        let perm: Vec<i64> = perm.iter().map(|&p| p as i64).collect();
        w = ex.op1("Transpose", n, vec![w], vec![a_ints("perm", perm)]);
    }
    let mut ins = vec![x, w];
    if io.has(2) {
        ins.push(io.input(2, n)?);
    }
    emit_nchw(ex, n, io, ("Conv", ins, attrs), nchw);
    Ok(())
}

/// `x` in NCHW: transposed from NHWC unless `nchw`.
fn to_nchw(ex: &mut Ex<'_>, n: &Node, x: String, nchw: bool) -> String {
    if nchw {
        return x;
    }
    ex.op1(
        "Transpose",
        n,
        vec![x],
        vec![a_ints("perm", TO_NCHW.to_vec())],
    )
}

/// Emits the NCHW ONNX op `(op, inputs, attributes)` as node `n` with its outputs, transposed
/// back to NHWC unless `nchw`.
fn emit_nchw(
    ex: &mut Ex<'_>,
    n: &Node,
    io: &Io,
    (op, ins, attrs): (&str, Vec<String>, Vec<AttributeProto>),
    nchw: bool,
) {
    if nchw {
        ex.emit_as(n, io, op, ins, attrs);
    } else {
        let y = ex.op1(op, n, ins, attrs);
        ex.emit_as(
            n,
            io,
            "Transpose",
            vec![y],
            vec![a_ints("perm", TO_NHWC.to_vec())],
        );
    }
}

/// The ONNX padding attribute of a GE padding `mode`: SAME and VALID as `auto_pad`, the mode
/// named `explicit` (when the op has one) as `pads` from the attribute `pads` ([top, bottom,
/// left, right]).
fn padding_attr(n: &Node, mode: &str, explicit: Option<&str>) -> Result<AttributeProto> {
    // Without an explicit mode, a name that parses as one is refused.
    let parsed = Padding::parse(mode, explicit.unwrap_or(""), (0, 0))
        .filter(|p| explicit.is_some() || !matches!(p, Padding::Explicit(..)));
    Ok(match parsed {
        Some(Padding::Same) => a_str("auto_pad", "SAME_UPPER"),
        Some(Padding::Valid) => a_str("auto_pad", "VALID"),
        Some(Padding::Explicit(..)) => {
            let p = attr_ints(n, "pads")?.unwrap_or_else(|| vec![0; 4]);
            if p.len() != 4 {
                return Err(bad(n, "pads must have 4 entries"));
            }
            a_ints("pads", vec![p[0], p[2], p[1], p[3]])
        }
        None => return Err(bad(n, format!("padding {mode:?}"))),
    })
}

fn pool(ex: &mut Ex<'_>, n: &Node, io: &Io) -> Result<()> {
    let op = n.op_type.as_str();
    let v1 = op == "MaxPool" || op == "AvgPool";
    let avg = op.starts_with("Avg");
    let mut handled = vec![
        "ksize",
        "strides",
        "data_format",
        "padding",
        "padding_mode",
        "pads",
        "ceil_mode",
        "global_pooling",
    ];
    if avg {
        handled.push("exclusive");
    }
    check_attrs(n, &handled)?;
    let nchw = layout(ex, n, if v1 { "NHWC" } else { "NCHW" })?;
    let x = to_nchw(ex, n, io.input(0, n)?, nchw);
    let (onnx, attrs) = if !v1 && attr_b(n, "global_pooling", false)? {
        (
            if avg {
                "GlobalAveragePool"
            } else {
                "GlobalMaxPool"
            },
            vec![],
        )
    } else {
        let ks = attr_ints(n, "ksize")?.ok_or_else(|| bad(n, "no ksize"))?;
        let st = attr_ints(n, "strides")?.ok_or_else(|| bad(n, "no strides"))?;
        let k = hw_of(&ks, nchw).ok_or_else(|| bad(n, "ksize must have 4 entries"))?;
        let s = hw_of(&st, nchw).ok_or_else(|| bad(n, "strides must have 4 entries"))?;
        let nc = |v: &[i64]| if nchw { [v[0], v[1]] } else { [v[0], v[3]] };
        if nc(&ks) != [1, 1] || nc(&st) != [1, 1] {
            return Err(bad(n, "pooling over N or C"));
        }
        let mut attrs = vec![
            a_ints("kernel_shape", k.to_vec()),
            a_ints("strides", s.to_vec()),
        ];
        let mode = if v1 {
            attr_s(n, "padding", "")?
        } else {
            attr_s(n, "padding_mode", "CALCULATED")?
        };
        // The V2 poolings' explicit mode is CALCULATED; the V1 ones have none.
        let explicit = (!v1).then_some("CALCULATED");
        attrs.push(padding_attr(n, &mode, explicit)?);
        if explicit == Some(mode.as_str()) {
            let ceil = attr_b(n, "ceil_mode", false)? && ceil_adds_window(ex, n, nchw, k, s)?;
            attrs.push(a_int("ceil_mode", ceil as i64));
        }
        if avg {
            let exclusive = v1 || attr_b(n, "exclusive", true)?;
            attrs.push(a_int("count_include_pad", (!exclusive) as i64));
        }
        (if avg { "AveragePool" } else { "MaxPool" }, attrs)
    };
    emit_nchw(ex, n, io, (onnx, vec![x], attrs), nchw);
    Ok(())
}

/// Whether ceil mode gives a pool with explicit pads more windows than floor mode on some
/// spatial dim (true when the input's spatial dims are unknown). ONNX's opset-18 shape
/// inference counts a last window that starts in the end padding, which GE's kernels, the
/// runtimes and the reference drop; when every such extra window is dropped the counts are
/// floor mode's and ceil_mode is written as 0, so that the inferred and run shapes agree.
fn ceil_adds_window(ex: &Ex<'_>, n: &Node, nchw: bool, k: [i64; 2], s: [i64; 2]) -> Result<bool> {
    let dims = in_desc(ex, n, 0).and_then(|d| d.shape.rank().map(|_| d.shape.dims().to_vec()));
    let Some(hw) = dims.as_deref().and_then(|d| hw_of(d, nchw)) else {
        return Ok(true);
    };
    let p = attr_ints(n, "pads")?.unwrap_or_else(|| vec![0; 4]);
    if p.len() != 4 || hw.iter().any(|&d| d < 0) {
        return Ok(true);
    }
    for (i, &size) in hw.iter().enumerate() {
        let pads = (p[2 * i], p[2 * i + 1]);
        let count = |ceil| es_core::opmath::window::window_out(size, k[i], s[i], 1, pads, ceil);
        match (count(true), count(false)) {
            (Ok(c), Ok(f)) if c == f => {}
            _ => return Ok(true),
        }
    }
    Ok(false)
}

fn softmax(ex: &mut Ex<'_>, n: &Node, io: &Io) -> Result<()> {
    check_attrs(n, &["axes"])?;
    let axes = attr_ints(n, "axes")?.unwrap_or_else(|| vec![-1]);
    if axes.len() != 1 {
        return Err(bad(
            n,
            format!("softmax over axes {axes:?} (ONNX takes one axis)"),
        ));
    }
    let onnx = if n.op_type == "LogSoftmaxV2" {
        "LogSoftmax"
    } else {
        "Softmax"
    };
    let x = io.input(0, n)?;
    ex.emit_as(n, io, onnx, vec![x], vec![a_int("axis", axes[0])]);
    Ok(())
}

fn reshape(ex: &mut Ex<'_>, n: &Node, io: &Io) -> Result<()> {
    check_attrs(n, &[])?;
    let x = io.input(0, n)?;
    let s = ex.as_i64(n, io, 1)?;
    ex.emit_as(n, io, "Reshape", vec![x, s], vec![]);
    Ok(())
}

fn transpose(ex: &mut Ex<'_>, n: &Node, io: &Io) -> Result<()> {
    check_attrs(n, &[])?;
    let perm = ex.need_const_ints(n, 1, "perm")?;
    let x = io.input(0, n)?;
    ex.emit_as(n, io, "Transpose", vec![x], vec![a_ints("perm", perm)]);
    Ok(())
}

fn concat(ex: &mut Ex<'_>, n: &Node, io: &Io) -> Result<()> {
    check_attrs(n, &["N", "concat_dim"])?;
    let (count, axis) = if n.op_type == "ConcatD" {
        (n.inputs.len(), attr_i(n, "concat_dim", 0)?)
    } else {
        let last = n
            .inputs
            .len()
            .checked_sub(1)
            .ok_or_else(|| bad(n, "no inputs"))?;
        let v = ex.need_const_ints(n, last, "concat_dim")?;
        (last, *v.first().ok_or_else(|| bad(n, "empty concat_dim"))?)
    };
    let ins = (0..count)
        .map(|i| io.input(i, n))
        .collect::<Result<Vec<_>>>()?;
    ex.emit_as(n, io, "Concat", ins, vec![a_int("axis", axis)]);
    Ok(())
}

fn pack(ex: &mut Ex<'_>, n: &Node, io: &Io) -> Result<()> {
    check_attrs(n, &["N", "axis"])?;
    let axis = attr_i(n, "axis", 0)?;
    let ax = ex.const_i64(n, &[axis])?;
    let mut parts = Vec::new();
    for i in 0..n.inputs.len() {
        let x = io.input(i, n)?;
        parts.push(ex.op1("Unsqueeze", n, vec![x, ax.clone()], vec![]));
    }
    ex.emit_as(n, io, "Concat", parts, vec![a_int("axis", axis)]);
    Ok(())
}

fn reduce(ex: &mut Ex<'_>, n: &Node, io: &Io) -> Result<()> {
    let op = n.op_type.as_str();
    let d = op.ends_with('D');
    let onnx = op.trim_end_matches('D');
    if !matches!(
        onnx,
        "ReduceSum" | "ReduceMean" | "ReduceMax" | "ReduceMin" | "ReduceProd"
    ) {
        return Err(bad(n, "no exporter"));
    }
    check_attrs(n, &["axes", "keep_dims", "noop_with_empty_axes"])?;
    let keep = attr_b(n, "keep_dims", false)? as i64;
    let x = io.input(0, n)?;
    let (axes, noop) = if d {
        let axes = attr_ints(n, "axes")?.unwrap_or_default();
        let noop = match n.attrs.get("noop_with_empty_axes") {
            Some(_) => attr_b(n, "noop_with_empty_axes", false)?,
            None if axes.is_empty() => {
                return Err(bad(n, "empty axes (GE's meaning is not ONNX's)"));
            }
            None => false,
        };
        (ex.const_i64(n, &axes)?, noop)
    } else {
        (
            ex.as_i64(n, io, 1)?,
            attr_b(n, "noop_with_empty_axes", true)?,
        )
    };
    ex.emit_as(
        n,
        io,
        onnx,
        vec![x, axes],
        vec![
            a_int("keepdims", keep),
            a_int("noop_with_empty_axes", noop as i64),
        ],
    );
    Ok(())
}

fn split(ex: &mut Ex<'_>, n: &Node, io: &Io) -> Result<()> {
    check_attrs(n, &["num_split", "split_dim"])?;
    let num = attr_i(n, "num_split", n.outputs.len() as i64)?;
    if num != n.outputs.len() as i64 {
        return Err(bad(
            n,
            format!("num_split {num} but {} outputs", n.outputs.len()),
        ));
    }
    let (x, axis, sizes) = match n.op_type.as_str() {
        "Split" => {
            let d = ex.need_const_ints(n, 0, "split_dim")?;
            (
                io.input(1, n)?,
                *d.first().ok_or_else(|| bad(n, "empty split_dim"))?,
                None,
            )
        }
        "SplitD" => (io.input(0, n)?, attr_i(n, "split_dim", 0)?, None),
        _ => {
            let d = ex.need_const_ints(n, 2, "split_dim")?;
            let axis = *d.first().ok_or_else(|| bad(n, "empty split_dim"))?;
            let mut s = ex.need_const_ints(n, 1, "size_splits")?;
            if let Some(k) = s.iter().position(|&v| v == -1) {
                let r = need_rank(n, 0)? as i64;
                let a = if axis < 0 { axis + r } else { axis };
                let dim = n.inputs[0]
                    .desc
                    .shape
                    .dims()
                    .get(a as usize)
                    .copied()
                    .filter(|&v| v >= 0)
                    .ok_or_else(|| bad(n, "size_splits has -1 and the split dim is unknown"))?;
                s[k] = dim - s.iter().filter(|&&v| v != -1).sum::<i64>();
            }
            (io.input(0, n)?, axis, Some(s))
        }
    };
    let mut ins = vec![x];
    let mut attrs = vec![a_int("axis", axis)];
    match sizes {
        Some(s) => ins.push(ex.const_i64(n, &s)?),
        None => attrs.push(a_int("num_outputs", num)),
    }
    ex.emit_as(n, io, "Split", ins, attrs);
    Ok(())
}

fn squeeze(ex: &mut Ex<'_>, n: &Node, io: &Io) -> Result<()> {
    let key = if n.op_type == "Squeeze" {
        "axis"
    } else {
        "axes"
    };
    check_attrs(n, &[key])?;
    let axes = attr_ints(n, key)?.unwrap_or_default();
    let x = io.input(0, n)?;
    let mut ins = vec![x];
    if !axes.is_empty() {
        ins.push(ex.const_i64(n, &axes)?);
    } else if n.op_type == "Unsqueeze" {
        return Err(bad(n, "Unsqueeze without axes"));
    }
    ex.emit_as(n, io, &n.op_type, ins, vec![]);
    Ok(())
}

fn with_i64_second(ex: &mut Ex<'_>, n: &Node, io: &Io) -> Result<()> {
    check_attrs(n, &[])?;
    let onnx = match n.op_type.as_str() {
        "Tile" => "Tile",
        "Expand" | "BroadcastTo" => "Expand",
        _ => return Err(bad(n, "no exporter")),
    };
    let x = io.input(0, n)?;
    let s = ex.as_i64(n, io, 1)?;
    ex.emit_as(n, io, onnx, vec![x, s], vec![]);
    Ok(())
}

fn fill(ex: &mut Ex<'_>, n: &Node, io: &Io) -> Result<()> {
    check_attrs(n, &[])?;
    let dims = ex.as_i64(n, io, 0)?;
    let v = io.input(1, n)?;
    ex.emit_as(n, io, "Expand", vec![v, dims], vec![]);
    Ok(())
}

fn gather(ex: &mut Ex<'_>, n: &Node, io: &Io) -> Result<()> {
    check_attrs(n, &["axis", "batch_dims", "negative_index_support"])?;
    if attr_i(n, "batch_dims", 0)? != 0 {
        return Err(bad(n, "batch_dims != 0"));
    }
    let axis = if n.op_type == "GatherV2D" {
        attr_i(n, "axis", 0)?
    } else {
        *ex.need_const_ints(n, 2, "axis")?
            .first()
            .ok_or_else(|| bad(n, "empty axis"))?
    };
    let (x, i) = (io.input(0, n)?, io.input(1, n)?);
    ex.emit_as(n, io, "Gather", vec![x, i], vec![a_int("axis", axis)]);
    Ok(())
}

fn bias_add(ex: &mut Ex<'_>, n: &Node, io: &Io) -> Result<()> {
    check_attrs(n, &["data_format"])?;
    let nchw = match attr_s(n, "data_format", "NHWC")?.as_str() {
        "NHWC" | "NDHWC" => false,
        "NCHW" | "NCDHW" => true,
        other => return Err(bad(n, format!("data_format {other:?}"))),
    };
    let (x, mut b) = (io.input(0, n)?, io.input(1, n)?);
    if nchw {
        let r = need_rank(n, 0)?;
        if r > 2 {
            let axes: Vec<i64> = (1..(r as i64 - 1)).collect();
            let ax = ex.const_i64(n, &axes)?;
            b = ex.op1("Unsqueeze", n, vec![b, ax], vec![]);
        }
    }
    ex.emit_as(n, io, "Add", vec![x, b], vec![]);
    Ok(())
}

fn composite(ex: &mut Ex<'_>, n: &Node, io: &Io) -> Result<()> {
    check_attrs(n, &[])?;
    let x = io.input(0, n)?;
    let out = io.outs.clone();
    match n.op_type.as_str() {
        "Square" => ex.emit("Mul", &n.name, vec![x.clone(), x], out, vec![]),
        "Rsqrt" => {
            let s = ex.op1("Sqrt", n, vec![x], vec![]);
            ex.emit("Reciprocal", &n.name, vec![s], out, vec![]);
        }
        "SquaredDifference" => {
            let d = ex.op1("Sub", n, vec![x, io.input(1, n)?], vec![]);
            ex.emit("Mul", &n.name, vec![d.clone(), d], out, vec![]);
        }
        "Relu6" => {
            let dt = in_dtype(n, 0);
            let lo = ex.scalar(n, dt, 0.0)?;
            let hi = ex.scalar(n, dt, 6.0)?;
            ex.emit("Clip", &n.name, vec![x, lo, hi], out, vec![]);
        }
        "ClipByValue" => {
            let m = ex.op1("Max", n, vec![x, io.input(1, n)?], vec![]);
            ex.emit("Min", &n.name, vec![m, io.input(2, n)?], out, vec![]);
        }
        "ZerosLike" => {
            let dt = in_dtype(n, 0);
            let s = ex.op1("Shape", n, vec![x], vec![]);
            let zero = es_core::types::tensor_from_f64(dt, vec![1], &[0.0])?;
            let mut tp = tensor_to_proto(&zero, "")?;
            tp.name = None;
            let a = AttributeProto {
                name: Some("value".into()),
                r#type: Some(At::Tensor as i32),
                t: Some(tp),
                ..Default::default()
            };
            ex.emit("ConstantOfShape", &n.name, vec![s], out, vec![a]);
        }
        _ => return Err(bad(n, "no exporter")),
    }
    Ok(())
}

fn shape(ex: &mut Ex<'_>, n: &Node, io: &Io) -> Result<()> {
    check_attrs(n, &["dtype"])?;
    let dt = dtype_of(n, "dtype", attr_i(n, "dtype", 3)?)?;
    let x = io.input(0, n)?;
    if dt == DataType::INT64 {
        ex.emit_as(n, io, "Shape", vec![x], vec![]);
    } else {
        let to = dtype_to_onnx(dt).ok_or_else(|| bad(n, format!("dtype {dt}")))?;
        let s = ex.op1("Shape", n, vec![x], vec![]);
        ex.emit_as(n, io, "Cast", vec![s], vec![a_int("to", to as i64)]);
    }
    Ok(())
}

fn flatten(ex: &mut Ex<'_>, n: &Node, io: &Io) -> Result<()> {
    check_attrs(n, &["axis"])?;
    let x = io.input(0, n)?;
    ex.emit_as(
        n,
        io,
        "Flatten",
        vec![x],
        vec![a_int("axis", attr_i(n, "axis", 1)?)],
    );
    Ok(())
}

fn slice(ex: &mut Ex<'_>, n: &Node, io: &Io) -> Result<()> {
    check_attrs(n, &["offsets", "size"])?;
    let (off, size) = if n.op_type == "SliceD" {
        (
            attr_ints(n, "offsets")?.ok_or_else(|| bad(n, "no offsets"))?,
            attr_ints(n, "size")?.ok_or_else(|| bad(n, "no size"))?,
        )
    } else {
        (
            ex.need_const_ints(n, 1, "offsets")?,
            ex.need_const_ints(n, 2, "size")?,
        )
    };
    if off.len() != size.len() {
        return Err(bad(n, "offsets and size differ in length"));
    }
    let ends: Vec<i64> = off
        .iter()
        .zip(&size)
        .map(|(&o, &s)| if s == -1 { i64::MAX } else { o + s })
        .collect();
    let axes: Vec<i64> = (0..off.len() as i64).collect();
    let x = io.input(0, n)?;
    let s = ex.const_i64(n, &off)?;
    let e = ex.const_i64(n, &ends)?;
    let a = ex.const_i64(n, &axes)?;
    ex.emit_as(n, io, "Slice", vec![x, s, e, a], vec![]);
    Ok(())
}

/// Each of GE's op types `$op` with its `$opD` form (the same op with its constant inputs as
/// attributes).
macro_rules! with_d_forms {
    ($($op:literal),*) => {
        [$($op, concat!($op, "D")),*]
    };
}

/// The exporters other than [`SIMPLE`]'s: the GE op types each one handles.
const EXPORTERS: &[(&[&str], ExportFn)] = &[
    (&["Div"], div),
    (&["Elu", "LeakyRelu", "HardSigmoid", "Swish"], activation),
    (&["Gelu", "GeluV2"], gelu),
    (&["Cast"], cast),
    (
        &["MatMul", "MatMulV2", "BatchMatMul", "BatchMatMulV2"],
        matmul,
    ),
    (&["GEMM"], gemm),
    (&["Conv2D"], conv2d),
    (&["MaxPool", "MaxPoolV3", "AvgPool", "AvgPoolV2"], pool),
    (&["SoftmaxV2", "LogSoftmaxV2"], softmax),
    (&["Reshape"], reshape),
    (&["Transpose"], transpose),
    (&["ConcatV2", "ConcatD"], concat),
    (&["Pack"], pack),
    (
        &with_d_forms![
            "ReduceSum",
            "ReduceMean",
            "ReduceMax",
            "ReduceMin",
            "ReduceProd"
        ],
        reduce,
    ),
    (&["Split", "SplitD", "SplitV"], split),
    (&["Squeeze", "Unsqueeze"], squeeze),
    (&["Tile", "Expand", "BroadcastTo"], with_i64_second),
    (&["Fill"], fill),
    (&["GatherV2", "GatherV2D"], gather),
    (&["BiasAdd"], bias_add),
    (
        &[
            "Square",
            "Rsqrt",
            "SquaredDifference",
            "Relu6",
            "ClipByValue",
            "ZerosLike",
        ],
        composite,
    ),
    (&["Shape"], shape),
    (&["Flatten"], flatten),
    (&["Slice", "SliceD"], slice),
    (&["StringNormalizer"], string_normalizer),
    (&["AsString", "StringToNumber"], string_cast),
    (&["TreeEnsemble", "TreeEnsembleClassifier"], tree_ensemble),
];

/// StringNormalizer: ONNX's, with the same attributes.
fn string_normalizer(ex: &mut Ex<'_>, n: &Node, io: &Io) -> Result<()> {
    let known = [
        "case_change_action",
        "is_case_sensitive",
        "locale",
        "stopwords",
    ];
    check_attrs(n, &known)?;
    let text = |k: &str, d: &str| {
        n.attrs
            .get(k)
            .and_then(AttrValue::as_str)
            .unwrap_or(d)
            .to_string()
    };
    let sensitive = n.attrs.get(known[1]).and_then(AttrValue::as_bool);
    let mut attrs = vec![
        a_str(known[0], &text(known[0], "NONE")),
        a_int(known[1], i64::from(sensitive.unwrap_or(false))),
    ];
    let locale = text(known[2], "");
    if !locale.is_empty() {
        attrs.push(a_str(known[2], &locale));
    }
    if let Some(AttrValue::ListString(v)) = n.attrs.get(known[3]) {
        if !v.is_empty() {
            attrs.push(a_typed(known[3], At::Strings, |a| {
                a.strings = v.iter().map(|s| s.as_bytes().to_vec()).collect()
            }));
        }
    }
    let x = io.input(0, n)?;
    ex.emit_as(n, io, "StringNormalizer", vec![x], attrs);
    Ok(())
}

/// AsString (with `shortest`, ONNX's text, and the other attributes at their defaults) and
/// StringToNumber: ONNX's Cast to and from strings.
fn string_cast(ex: &mut Ex<'_>, n: &Node, io: &Io) -> Result<()> {
    let to = if n.op_type == "AsString" {
        check_attrs(n, &["shortest"])?;
        if n.attrs.get("shortest").and_then(AttrValue::as_bool) != Some(true) {
            return Err(bad(n, "AsString without shortest has no ONNX equivalent"));
        }
        DataType::STRING
    } else {
        check_attrs(n, &["out_type"])?;
        n.attrs
            .get("out_type")
            .and_then(AttrValue::as_type)
            .unwrap_or(DataType::FLOAT)
    };
    let to = dtype_to_onnx(to).ok_or_else(|| bad(n, format!("{to} has no ONNX type")))?;
    let x = io.input(0, n)?;
    ex.emit_as(n, io, "Cast", vec![x], vec![a_int("to", to as i64)]);
    Ok(())
}

/// The domain and version of the exported tree ensembles (TreeEnsembleRegressor and
/// TreeEnsembleClassifier: opset 5's TreeEnsemble has no labels nor per-leaf target lists).
const ML_DOMAIN: (&str, i64) = ("ai.onnx.ml", 3);

/// FLOATS attribute `name`, or `name_as_tensor` (double) where a value is not a float exactly.
fn a_floats_or_tensor(name: &str, v: &[f64]) -> Result<AttributeProto> {
    if v.iter().all(|&x| f64::from(x as f32) == x || x.is_nan()) {
        let f: Vec<f32> = v.iter().map(|&x| x as f32).collect();
        return Ok(a_typed(name, At::Floats, |a| a.floats = f));
    }
    let t = es_core::Tensor::from_values(v, vec![v.len() as i64])?;
    let t = tensor_to_proto(&t, "")?;
    Ok(a_typed(&format!("{name}_as_tensor"), At::Tensor, |a| {
        a.t = Some(t)
    }))
}

/// TreeEnsemble and TreeEnsembleClassifier (ge-rs): ai.onnx.ml's TreeEnsembleRegressor and
/// TreeEnsembleClassifier (opset 3), each tree's nodes numbered from its root; the regressor's
/// float y cast back to x's dtype, float16 x cast to float. BRANCH_MEMBER has no form there.
fn tree_ensemble(ex: &mut Ex<'_>, n: &Node, io: &Io) -> Result<()> {
    use es_core::infer::tree_ensemble::{
        Child, Mode, Trees, AGGREGATE_NAMES, POST_TRANSFORM_NAMES,
    };
    let t = Trees::from_attrs(&|k| n.attrs.get(k)).map_err(|e| bad(n, e))?;
    let classifier = n.op_type == "TreeEnsembleClassifier";
    let prefix = if classifier { "class" } else { "target" };
    const NAMES: [&str; 6] = [
        "BRANCH_LEQ",
        "BRANCH_LT",
        "BRANCH_GTE",
        "BRANCH_GT",
        "BRANCH_EQ",
        "BRANCH_NEQ",
    ];
    let mut nodes: [Vec<i64>; 6] = Default::default(); // tree, node, feature, true, false, missing
    let (mut modes, mut values) = (Vec::new(), Vec::new());
    let mut entries: [Vec<i64>; 3] = Default::default(); // tree, node, id
    let mut weights = Vec::new();
    for (tree, &root) in t.roots.iter().enumerate() {
        // Node ids in visiting order; a node reached twice keeps its first id.
        let mut ids: HashMap<Child, i64> = HashMap::new();
        let mut order = vec![Child::Node(root)];
        ids.insert(Child::Node(root), 0);
        let mut k = 0;
        while k < order.len() {
            let c = order[k];
            k += 1;
            let id = ids[&c];
            let mut row = [tree as i64, id, 0, 0, 0, 0];
            match c {
                Child::Leaf(l) => {
                    modes.push("LEAF".to_string());
                    values.push(0.0);
                    for e in t.leaves[l as usize].clone() {
                        for (v, x) in entries
                            .iter_mut()
                            .zip([tree as i64, id, t.targets[e] as i64])
                        {
                            v.push(x);
                        }
                        weights.push(t.weights[e]);
                    }
                }
                Child::Node(j) => {
                    let node = &t.nodes[j as usize];
                    if node.mode == Mode::Member {
                        return Err(bad(n, "BRANCH_MEMBER has no ai.onnx.ml opset-3 form"));
                    }
                    modes.push(NAMES[node.mode as usize].to_string());
                    values.push(node.threshold);
                    for (slot, next) in [(3, node.on_true), (4, node.on_false)] {
                        let fresh = ids.len() as i64;
                        let nid = *ids.entry(next).or_insert_with(|| {
                            order.push(next);
                            fresh
                        });
                        row[slot] = nid;
                    }
                    row[2] = node.feature as i64;
                    row[5] = i64::from(node.missing_true);
                }
            }
            for (v, x) in nodes.iter_mut().zip(row) {
                v.push(x);
            }
        }
    }
    let [trees, node_ids, features, trues, falses, missing] = nodes;
    let [e_trees, e_nodes, e_ids] = entries;
    let mut attrs = vec![
        a_ints("nodes_treeids", trees),
        a_ints("nodes_nodeids", node_ids),
        a_ints("nodes_featureids", features),
        a_typed("nodes_modes", At::Strings, |a| {
            a.strings = modes.iter().map(|m| m.as_bytes().to_vec()).collect()
        }),
        a_floats_or_tensor("nodes_values", &values)?,
        a_ints("nodes_truenodeids", trues),
        a_ints("nodes_falsenodeids", falses),
        a_ints("nodes_missing_value_tracks_true", missing),
        a_ints(&format!("{prefix}_treeids"), e_trees),
        a_ints(&format!("{prefix}_nodeids"), e_nodes),
        a_ints(&format!("{prefix}_ids"), e_ids),
        a_floats_or_tensor(&format!("{prefix}_weights"), &weights)?,
        a_str(
            "post_transform",
            POST_TRANSFORM_NAMES[t.post_transform as usize],
        ),
    ];
    if !t.base_values.is_empty() {
        attrs.push(a_floats_or_tensor("base_values", &t.base_values)?);
    }
    let x_dt = in_dtype(n, 0);
    let mut x = io.input(0, n)?;
    if x_dt == DataType::FLOAT16 {
        x = ex.op1(
            "Cast",
            n,
            vec![x],
            vec![a_int("to", crate::proto::ElemType::Float as i64)],
        );
    }
    let op = if classifier {
        let labels = match n.attrs.get("classlabels") {
            Some(AttrValue::Tensor(l)) => l,
            _ => return Err(bad(n, "no classlabels")),
        };
        attrs.push(if labels.desc.dtype == DataType::STRING {
            let v = labels.strings()?;
            a_typed("classlabels_strings", At::Strings, |a| {
                a.strings = v.iter().map(|s| s.as_bytes().to_vec()).collect()
            })
        } else {
            a_ints("classlabels_int64s", labels.to_i64_vec()?)
        });
        ex.emit_as(n, io, "TreeEnsembleClassifier", vec![x], attrs);
        "TreeEnsembleClassifier"
    } else {
        attrs.push(a_int("n_targets", t.n_targets as i64));
        attrs.push(a_str(
            "aggregate_function",
            AGGREGATE_NAMES[t.aggregate as usize],
        ));
        if x_dt == DataType::FLOAT {
            ex.emit_as(n, io, "TreeEnsembleRegressor", vec![x], attrs);
        } else {
            let y = ex.op1("TreeEnsembleRegressor", n, vec![x], attrs);
            let to =
                dtype_to_onnx(x_dt).ok_or_else(|| bad(n, format!("{x_dt} has no ONNX type")))?;
            ex.emit_as(n, io, "Cast", vec![y], vec![a_int("to", to as i64)]);
        }
        "TreeEnsembleRegressor"
    };
    for node in ex
        .nodes
        .iter_mut()
        .filter(|p| p.op_type.as_deref() == Some(op))
    {
        node.domain = Some(ML_DOMAIN.0.into());
    }
    Ok(())
}

/// The built-in exporters by GE op type.
pub fn exporters() -> &'static BTreeMap<&'static str, ExportFn> {
    use std::sync::OnceLock;
    static M: OnceLock<BTreeMap<&'static str, ExportFn>> = OnceLock::new();
    M.get_or_init(|| {
        let mut m: BTreeMap<&'static str, ExportFn> = BTreeMap::new();
        for (ge, _) in SIMPLE {
            m.insert(ge, simple);
        }
        for &(ops, f) in EXPORTERS {
            for op in ops {
                m.insert(op, f);
            }
        }
        m
    })
}

/// The graph as a real ONNX model (standard ops only).
pub fn to_onnx(g: &Graph) -> Result<ModelProto> {
    let table = exporters();
    // Every op type without an exporter, in one error.
    let mut missing: BTreeMap<String, String> = BTreeMap::new();
    for id in g.nodes() {
        let n = g.node(id)?;
        let t = n.op_type.as_str();
        if es_core::graph::is_data_op(t) || t == "Const" || t == "Constant" {
            continue;
        }
        if !n.subgraphs.is_empty() || !table.contains_key(t) {
            missing
                .entry(t.to_string())
                .or_insert_with(|| n.name.to_string());
        }
    }
    if !missing.is_empty() {
        let list: Vec<String> = missing
            .iter()
            .map(|(t, n)| format!("{t} (node '{n}')"))
            .collect();
        return Err(Error::unsupported(format!(
            "{} GE op type{} without an ONNX exporter: {}; DumpFormat.kOnnx writes any graph \
             (GE op types kept) for viewing",
            missing.len(),
            if missing.len() == 1 { "" } else { "s" },
            list.join(", ")
        )));
    }
    let order = g
        .topo_order()
        .map_err(|e| Error::from(e).context(&format!("graph '{}'", g.name)))?;
    let mut used = HashSet::new();
    let names = port_names(g, &mut used)?;
    let mut ex = Ex {
        g,
        nodes: Vec::new(),
        inits: Vec::new(),
        used,
    };
    let mut gp = GraphProto {
        name: Some(g.name.clone()),
        ..Default::default()
    };
    for id in g.input_nodes() {
        let n = g.node(id)?;
        let d = &n
            .outputs
            .first()
            .ok_or_else(|| Error::tr(format!("input node '{}' has no output", n.name)))?
            .desc;
        gp.input.push(value_info(
            &names[&(id, 0)],
            d,
            &format!("graph input '{}'", n.name),
        )?);
    }
    for id in order {
        let n = g.node(id)?;
        if es_core::graph::is_data_op(&n.op_type) {
            continue;
        }
        let outs: Vec<String> = (0..n.outputs.len())
            .map(|i| names[&(id, i as u32)].clone())
            .collect();
        if let Some(t) = n.const_value() {
            let name = outs.first().cloned().unwrap_or_default();
            ex.inits.push(
                tensor_to_proto(t, &name).map_err(|e| e.context(&format!("Const '{}'", n.name)))?,
            );
            continue;
        }
        let io = Io {
            ins: n
                .inputs
                .iter()
                .map(|s| s.source.map(|p| names[&(p.node, p.index)].clone()))
                .collect(),
            outs,
        };
        let f = table[n.op_type.as_str()];
        f(&mut ex, n, &io)?;
    }
    for (i, p) in g.outputs.iter().enumerate() {
        let OutPort { node, index } = *p;
        let src = names
            .get(&(node, index))
            .cloned()
            .ok_or_else(|| Error::tr(format!("graph output {i} points at no node")))?;
        let name = fresh(&mut ex.used, &format!("output_{i}"));
        ex.nodes.push(NodeProto {
            input: vec![src],
            output: vec![name.clone()],
            name: Some(format!("output_{i}/Identity")),
            op_type: Some("Identity".into()),
            ..Default::default()
        });
        gp.output.push(value_info(
            &name,
            g.out_desc(*p)?,
            &format!("graph output {i}"),
        )?);
    }
    // Consts read only as attributes (perm, axes, ...) leave no initializer behind.
    let read: HashSet<&str> = ex
        .nodes
        .iter()
        .flat_map(|n| n.input.iter().map(String::as_str))
        .collect();
    let inits: Vec<TensorProto> = ex
        .inits
        .iter()
        .filter(|t| read.contains(t.name.as_deref().unwrap_or("")))
        .cloned()
        .collect();
    let ml = ex
        .nodes
        .iter()
        .any(|p| p.domain.as_deref() == Some(ML_DOMAIN.0));
    gp.node = ex.nodes;
    gp.initializer = inits;
    let mut m = model(gp, false);
    if ml {
        m.opset_import.push(OperatorSetIdProto {
            domain: Some(ML_DOMAIN.0.into()),
            version: Some(ML_DOMAIN.1),
        });
    }
    Ok(m)
}

/// Writes the graph as a real ONNX model.
pub fn save(g: &Graph, path: &Path) -> Result<()> {
    let bytes = to_onnx(g)?.encode_to_vec();
    std::fs::write(path, bytes).map_err(|e| Error::Io(format!("{}: {e}", path.display())))
}

/// Writes the graph as an ONNX model for viewing.
pub fn save_dump(g: &Graph, path: &Path) -> Result<()> {
    let bytes = to_onnx_dump(g)?.encode_to_vec();
    std::fs::write(path, bytes).map_err(|e| Error::Io(format!("{}: {e}", path.display())))
}

/// [`to_onnx`], serialized.
pub fn to_onnx_bytes(g: &Graph) -> Result<Vec<u8>> {
    Ok(to_onnx(g)?.encode_to_vec())
}

/// [`to_onnx_dump`], serialized.
pub fn to_onnx_dump_bytes(g: &Graph) -> Result<Vec<u8>> {
    Ok(to_onnx_dump(g)?.encode_to_vec())
}
