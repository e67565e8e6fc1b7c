//! The ProgramTranslator: an ONNX model (name-based values) → the SSA IR.
//!
//! Graph-level work happens here: graph inputs become Data nodes with their index,
//! initializers become Const parameters (`_is_mutable` when a graph input overrides them), graph
//! outputs are set, model-local functions are inlined, and the bodies of If/Loop/Scan become
//! subgraphs whose captured outer values are passed in as extra inputs. Each node goes to the
//! [`OpTranslator`] registered for its op type through a [`NodeCtx`], after the
//! [`crate::compat`] layer has brought it to the newest opset's form.

use crate::attrs::{self, OnnxAttr};
use crate::compat;
use crate::error::{Error, Result};
use crate::proto::{FunctionProto, GraphProto, ModelProto, NodeProto, TensorProto};
use crate::types::{desc_from_type, tensor_from_proto, DataDir, Limits};
use es_core::graph::is_data_op;
use es_core::{
    AttrValue, DataType, Format, Graph, GraphBuilder, InPort, Node, NodeId, OpArgs, OutPort, Shape,
    Tensor, TensorDesc,
};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::sync::Arc;

/// What to do with an op type that has no translator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnsupportedMode {
    /// Fail, naming every unsupported op type with one node each.
    #[default]
    Error,
    /// Keep each such node as an opaque node (op type `domain::OpType`, its ONNX attributes,
    /// outputs of unknown type) for a user pass to replace.
    Opaque,
}

/// Translates one ONNX node (already in the newest opset's form) into IR nodes; returns one
/// entry per ONNX output (None for an output the node does not produce).
pub trait OpTranslator: Send + Sync {
    fn translate(&self, ctx: &mut NodeCtx<'_>) -> Result<Vec<Option<OutPort>>>;
}

impl<F> OpTranslator for F
where
    F: Fn(&mut NodeCtx<'_>) -> Result<Vec<Option<OutPort>>> + Send + Sync,
{
    fn translate(&self, ctx: &mut NodeCtx<'_>) -> Result<Vec<Option<OutPort>>> {
        self(ctx)
    }
}

/// The key of an op type: `OpType` in the default domain, `domain::OpType` otherwise.
pub fn op_key(domain: &str, op_type: &str) -> String {
    match domain {
        "" | "ai.onnx" => op_type.to_string(),
        d => format!("{d}::{op_type}"),
    }
}

/// Op type → translator.
#[derive(Clone, Default)]
pub struct Registry {
    map: FxHashMap<String, Arc<dyn OpTranslator>>,
}

impl Registry {
    pub fn empty() -> Registry {
        Registry::default()
    }
    /// Registers (or replaces) the translator of `key` (`OpType` or `domain::OpType`).
    pub fn register(&mut self, key: &str, t: Arc<dyn OpTranslator>) {
        let key = match key.split_once("::") {
            Some((d, op)) => op_key(d, op),
            None => key.to_string(),
        };
        self.map.insert(key, t);
    }
    pub fn get(&self, domain: &str, op_type: &str) -> Option<&Arc<dyn OpTranslator>> {
        self.map.get(&op_key(domain, op_type))
    }
    pub fn contains(&self, domain: &str, op_type: &str) -> bool {
        self.get(domain, op_type).is_some()
    }
    /// Every registered key, sorted.
    pub fn keys(&self) -> Vec<String> {
        let mut k: Vec<String> = self.map.keys().cloned().collect();
        k.sort();
        k
    }
}

/// Import options.
#[derive(Clone, Default)]
pub struct Options {
    pub unsupported: UnsupportedMode,
    pub limits: Limits,
}

/// One node input as the translator sees it: a value, a literal made from an attribute by the
/// compatibility layer (materialised as a Const on first use), or absent.
#[derive(Debug, Clone)]
pub(crate) enum InputSrc {
    Port(OutPort),
    /// `like`: the input whose dtype the literal takes when it is materialised.
    Literal(Tensor, Option<usize>),
    Absent,
}

/// A subgraph translated from an ONNX body graph, with the outer values it captures.
pub struct Subgraph {
    pub graph: Graph,
    /// The outer values it reads, in the order of its extra Data inputs (which follow its
    /// formal inputs).
    pub captures: Vec<(String, OutPort)>,
    /// Number of formal inputs (Data indexes 0..formal).
    pub formal: usize,
}

/// The most elements an enclosing graph's constant may have to be copied into a subgraph that
/// reads it (larger ones are captured as inputs, like any other outer value).
const MAX_COPIED_CONST: i64 = 4096;

/// One graph under translation: its builder and its names in scope.
pub(crate) struct Frame {
    b: GraphBuilder,
    names: FxHashMap<String, OutPort>,
    captures: Vec<(String, OutPort)>,
    next_index: i64,
    /// Opset imports in effect.
    opsets: Arc<BTreeMap<String, i64>>,
}

impl Frame {
    /// Adds the frame's next Data node, for the value `name`.
    fn add_data(&mut self, name: &str, desc: TensorDesc) -> Result<OutPort> {
        let index = self.next_index;
        self.next_index += 1;
        let node_name = self.b.graph().unique_name(name);
        let port = self.b.create_input(
            index,
            Some(node_name),
            "Data",
            desc.dtype,
            Format::ND,
            desc.shape,
        )?;
        if !desc.attrs.is_empty() {
            // What a list or optional holds (see es_core::infer::sequence).
            let n = self.b.graph_mut().node_mut(port.node)?;
            for d in n.outputs.iter_mut().map(|o| &mut o.desc) {
                d.attrs.clone_from(&desc.attrs);
            }
            for d in n.inputs.iter_mut().map(|i| &mut i.desc) {
                d.attrs.clone_from(&desc.attrs);
            }
        }
        self.names.insert(name.to_string(), port);
        Ok(port)
    }
    /// The value of `p` when it is a Const node of at most [`MAX_COPIED_CONST`] elements that
    /// no graph input overrides (an initializer that is also an input is not a constant), or
    /// a small value that follows from constants and static shapes (see [`known_values`]).
    fn known_const(&self, p: OutPort) -> Result<Option<Tensor>> {
        let g = self.b.graph();
        let n = g.node(p.node)?;
        if n.private_attrs.contains_key("_is_mutable") {
            return Ok(None);
        }
        if let Some(t) = n.const_value() {
            let small = t
                .desc
                .shape
                .num_elements()
                .is_some_and(|k| k <= MAX_COPIED_CONST);
            return Ok(small.then(|| t.clone()));
        }
        let d = g.out_desc(p)?;
        if !d.shape.is_static() || d.dtype == DataType::UNDEFINED {
            return Ok(None);
        }
        Ok(known_values(g, p).and_then(|v| {
            es_core::types::tensor_from_f64(d.dtype, d.shape.dims().to_vec(), &v).ok()
        }))
    }
    fn new(name: &str, opsets: Arc<BTreeMap<String, i64>>) -> Frame {
        Frame {
            b: GraphBuilder::new(name),
            names: FxHashMap::default(),
            captures: Vec::new(),
            next_index: 0,
            opsets,
        }
    }
}

/// The state of one import: the frames (outermost first), the registry, the functions.
pub(crate) struct Program {
    frames: Vec<Frame>,
    registry: Registry,
    functions: FxHashMap<String, Arc<FunctionProto>>,
    dir: DataDir,
    options: Options,
    /// Unsupported op types found (opaque mode keeps going).
    opaque: Vec<(String, String)>,
    /// Function-call depth.
    depth: usize,
}

/// Translates a model. `dir` is the model's directory (for external data), None for bytes.
pub fn translate_model(
    model: &ModelProto,
    registry: &Registry,
    dir: DataDir,
    options: Options,
) -> Result<Graph> {
    let g = model
        .graph
        .as_ref()
        .ok_or_else(|| Error::tr("the model has no graph"))?;
    let mut opsets = BTreeMap::new();
    for o in &model.opset_import {
        let d = match o.domain.as_deref() {
            None | Some("ai.onnx") => "",
            Some(d) => d,
        };
        opsets.insert(d.to_string(), o.version.unwrap_or(1));
    }
    if model.opset_import.is_empty() {
        // IR version 1 models have no opset imports: opset 1.
        opsets.insert(String::new(), 1);
    }
    let mut functions = FxHashMap::default();
    for f in &model.functions {
        let key = op_key(
            f.domain.as_deref().unwrap_or(""),
            f.name.as_deref().unwrap_or(""),
        );
        functions.insert(key, Arc::new(f.clone()));
    }
    // Every op type without a translator, before any work.
    if options.unsupported == UnsupportedMode::Error {
        let mut scan = UnsupportedScan {
            registry,
            functions: &functions,
            missing: BTreeMap::new(),
            max_depth: options.limits.max_depth,
        };
        scan.graph(g, 0)?;
        for f in &model.functions {
            for n in &f.node {
                scan.node(n, 1)?;
            }
        }
        let missing = scan.missing;
        if !missing.is_empty() {
            return Err(Error::Unsupported(missing.into_iter().collect()));
        }
    }
    let name = g.name.clone().unwrap_or_else(|| "graph".to_string());
    let mut p = Program {
        frames: vec![Frame::new(&name, Arc::new(opsets))],
        registry: registry.clone(),
        functions,
        dir,
        options,
        opaque: Vec::new(),
        depth: 0,
    };
    p.graph_body(g, true)?;
    let mut graph = p
        .frames
        .pop()
        .ok_or_else(|| Error::tr("internal: no frame"))?
        .b
        .build_and_reset()?;
    if let Some(doc) = model.producer_name.as_deref().filter(|s| !s.is_empty()) {
        graph
            .attrs
            .insert("_onnx_producer".into(), AttrValue::String(doc.to_string()));
    }
    Ok(graph)
}

/// The walk that lists every op type without a translator (or a model function), with the
/// first node of each, through the subgraphs.
struct UnsupportedScan<'r> {
    registry: &'r Registry,
    functions: &'r FxHashMap<String, Arc<FunctionProto>>,
    missing: BTreeMap<String, String>,
    max_depth: usize,
}

impl UnsupportedScan<'_> {
    fn node(&mut self, n: &NodeProto, depth: usize) -> Result<()> {
        let key = op_key(n.onnx_domain(), n.op_type());
        if !self.registry.contains(n.onnx_domain(), n.op_type())
            && !self.functions.contains_key(&key)
        {
            self.missing
                .entry(key)
                .or_insert_with(|| unsupported_label(n));
        }
        for a in &n.attribute {
            if let Some(g) = a.g.as_ref() {
                self.graph(g, depth + 1)?;
            }
            for g in &a.graphs {
                self.graph(g, depth + 1)?;
            }
        }
        Ok(())
    }

    fn graph(&mut self, g: &GraphProto, depth: usize) -> Result<()> {
        if depth > self.max_depth {
            return Err(Error::tr(format!(
                "subgraphs are nested more than {} deep",
                self.max_depth
            )));
        }
        for n in &g.node {
            self.node(n, depth)?;
        }
        Ok(())
    }
}

/// How an unsupported node is named in the error: `node 'name'` or `node producing 'y'`.
fn unsupported_label(n: &NodeProto) -> String {
    if n.name().is_empty() {
        format!(
            "node producing '{}'",
            n.output.first().map(String::as_str).unwrap_or("")
        )
    } else {
        format!("node '{}'", n.name())
    }
}

fn node_label(n: &NodeProto) -> String {
    if n.name().is_empty() {
        format!(
            "node {} (output '{}')",
            op_key(n.onnx_domain(), n.op_type()),
            n.output.first().map(String::as_str).unwrap_or("")
        )
    } else {
        format!(
            "node '{}' ({})",
            n.name(),
            op_key(n.onnx_domain(), n.op_type())
        )
    }
}

impl Program {
    fn frame(&mut self) -> &mut Frame {
        self.frames.last_mut().expect("a frame is always present")
    }

    /// Looks a value up in frame `d`, capturing it from the enclosing frames when needed.
    fn resolve(&mut self, d: usize, name: &str) -> Result<OutPort> {
        if let Some(p) = self.frames[d].names.get(name) {
            return Ok(*p);
        }
        if d == 0 {
            return Err(Error::tr(format!(
                "value '{name}' is used before it is produced (or never produced)"
            )));
        }
        let outer = self.resolve(d - 1, name)?;
        if let Some(t) = self.frames[d - 1].known_const(outer)? {
            // A constant of an enclosing graph is a constant in the subgraph too (translators
            // that need a value, e.g. Unsqueeze's axes, see it), not a captured input.
            let f = &mut self.frames[d];
            let node_name = f.b.graph().unique_name(name);
            let port = f.b.create_const(t, Some(node_name))?;
            f.names.insert(name.to_string(), port);
            return Ok(port);
        }
        let desc = self.frames[d - 1].b.graph().out_desc(outer)?.clone();
        let f = &mut self.frames[d];
        let port = f.add_data(name, desc)?;
        f.captures.push((name.to_string(), outer));
        Ok(port)
    }

    /// Adds a Data node for a graph input.
    fn add_input(&mut self, name: &str, desc: TensorDesc) -> Result<OutPort> {
        self.frame().add_data(name, desc)
    }

    fn add_const(&mut self, name: &str, t: Tensor, mutable: bool) -> Result<OutPort> {
        let f = self.frame();
        let node_name = f.b.graph().unique_name(name);
        let port = f.b.create_const(t, Some(node_name))?;
        if mutable {
            f.b.graph_mut()
                .node_mut(port.node)?
                .private_attrs
                .insert("_is_mutable".into(), AttrValue::Bool(true));
        }
        f.names.insert(name.to_string(), port);
        Ok(port)
    }

    /// Inputs, initializers, nodes and (for the main graph) outputs of one graph.
    fn graph_body(&mut self, g: &GraphProto, main: bool) -> Result<()> {
        let inits: FxHashMap<&str, &TensorProto> = g
            .initializer
            .iter()
            .map(|t| (t.name.as_deref().unwrap_or(""), t))
            .collect();
        for vi in &g.input {
            let name = vi.name.as_deref().unwrap_or("");
            if name.is_empty() {
                return Err(Error::tr("a graph input has no name"));
            }
            if !main && self.frame().names.contains_key(name) {
                // A subgraph's formal input, already added by `subgraph`.
                continue;
            }
            if let Some(t) = inits.get(name) {
                // An input with an initializer: a parameter callers may override.
                let t = tensor_from_proto(t, &self.dir, &self.options.limits)
                    .map_err(|e| e.context(&format!("initializer '{name}'")))?;
                if main {
                    self.add_const(name, t, true)?;
                    continue;
                }
            }
            let desc = desc_from_type(vi.r#type.as_ref(), &format!("graph input '{name}'"))?;
            self.add_input(name, desc)?;
        }
        for t in &g.initializer {
            let name = t.name.as_deref().unwrap_or("");
            if self.frame().names.contains_key(name) {
                continue;
            }
            let v = tensor_from_proto(t, &self.dir, &self.options.limits)
                .map_err(|e| e.context(&format!("initializer '{name}'")))?;
            self.add_const(name, v, false)?;
        }
        if !g.sparse_initializer.is_empty() {
            return Err(Error::unsupported("sparse initializers"));
        }
        for n in &g.node {
            self.node(n)?;
        }
        if main {
            for (i, vi) in g.output.iter().enumerate() {
                let name = vi.name.as_deref().unwrap_or("");
                let d = self.frames.len() - 1;
                let port = self
                    .resolve(d, name)
                    .map_err(|e| e.context(&format!("graph output {i}")))?;
                self.frame().b.set_output(port, i)?;
            }
        }
        Ok(())
    }

    /// Translates one node: a function call, a registered op, or an opaque node.
    fn node(&mut self, n: &NodeProto) -> Result<()> {
        let key = op_key(n.onnx_domain(), n.op_type());
        if self.registry.get(n.onnx_domain(), n.op_type()).is_none() {
            if let Some(f) = self.functions.get(&key).cloned() {
                return self
                    .inline_function(n, &f)
                    .map_err(|e| e.context(&node_label(n)));
            }
        }
        let d = self.frames.len() - 1;
        let opset = self.frames[d]
            .opsets
            .get(n.onnx_domain())
            .copied()
            .unwrap_or(1);
        let Some(t) = self.registry.get(n.onnx_domain(), n.op_type()).cloned() else {
            return match self.options.unsupported {
                UnsupportedMode::Opaque => {
                    self.opaque.push((key, n.name().to_string()));
                    self.opaque_node(n).map_err(|e| e.context(&node_label(n)))
                }
                UnsupportedMode::Error => {
                    Err(Error::Unsupported(vec![(key, n.name().to_string())]))
                }
            };
        };
        let norm = compat::normalize(n, opset).map_err(|e| e.context(&node_label(n)))?;
        let mut inputs = Vec::with_capacity(norm.node.input.len());
        for name in &norm.node.input {
            if name.is_empty() {
                inputs.push(InputSrc::Absent);
            } else {
                let p = self
                    .resolve(d, name)
                    .map_err(|e| e.context(&node_label(n)))?;
                inputs.push(InputSrc::Port(p));
            }
        }
        for (i, lit) in norm.literals {
            if inputs.len() <= i {
                inputs.resize(i + 1, InputSrc::Absent);
            }
            inputs[i] = InputSrc::Literal(lit.tensor, lit.like);
        }
        let base = if n.name().is_empty() {
            n.output
                .iter()
                .find(|o| !o.is_empty())
                .cloned()
                .unwrap_or_else(|| n.op_type().to_string())
        } else {
            n.name().to_string()
        };
        let outputs = {
            let mut ctx = NodeCtx {
                node: &norm.node,
                opset,
                inputs,
                prog: self,
                base,
                emitted: 0,
            };
            t.translate(&mut ctx)
                .map_err(|e| e.context(&node_label(n)))?
        };
        let d = self.frames.len() - 1;
        for (i, name) in n.output.iter().enumerate() {
            if name.is_empty() {
                continue;
            }
            match outputs.get(i).copied().flatten() {
                Some(p) => {
                    self.frames[d].names.insert(name.clone(), p);
                }
                None => {
                    return Err(Error::tr(format!(
                        "{}: output {i} ('{name}') is not produced by the translation",
                        node_label(n)
                    )))
                }
            }
        }
        Ok(())
    }

    /// A node kept as is: op type `domain::OpType`, its attributes, outputs of unknown type.
    fn opaque_node(&mut self, n: &NodeProto) -> Result<()> {
        let d = self.frames.len() - 1;
        let mut srcs = Vec::new();
        for name in &n.input {
            srcs.push(if name.is_empty() {
                None
            } else {
                Some(self.resolve(d, name)?)
            });
        }
        let f = &mut self.frames[d];
        let base = if n.name().is_empty() {
            n.op_type()
        } else {
            n.name()
        };
        let mut node = Node::new(
            f.b.graph().unique_name(base),
            op_key(n.onnx_domain(), n.op_type()),
        );
        for a in &n.attribute {
            let name = a.name.clone().unwrap_or_default();
            let v = match attrs::read(a)? {
                OnnxAttr::Float(x) => AttrValue::Float(x),
                OnnxAttr::Int(x) => AttrValue::Int(x),
                OnnxAttr::String(s) => AttrValue::String(s),
                OnnxAttr::Floats(v) => AttrValue::ListFloat(v.to_vec()),
                OnnxAttr::Ints(v) => AttrValue::ListInt(v.to_vec()),
                OnnxAttr::Strings(v) => AttrValue::ListString(v),
                OnnxAttr::Tensor(t) => {
                    AttrValue::Tensor(tensor_from_proto(t, &self.dir, &self.options.limits)?)
                }
                other => {
                    return Err(Error::unsupported(format!(
                        "attribute '{name}' of kind {} on an opaque node",
                        other.kind()
                    )))
                }
            };
            node.attrs.insert(name, v);
        }
        node.private_attrs.insert(
            "_onnx_domain".into(),
            AttrValue::String(n.onnx_domain().to_string()),
        );
        for (i, src) in srcs.iter().enumerate() {
            let desc = match src {
                Some(p) => f.b.graph().out_desc(*p)?.clone(),
                None => TensorDesc::default(),
            };
            node.inputs.push(es_core::graph::InputSlot::new(
                format!("x{i}"),
                i as u32,
                desc,
            ));
        }
        for (i, _) in n.output.iter().enumerate() {
            node.outputs.push(es_core::graph::OutputSlot {
                name: format!("y{i}").into(),
                ir_index: i as u32,
                desc: TensorDesc::default().into(),
                consumers: Vec::new(),
            });
        }
        let g = f.b.graph_mut();
        let id = g.add_node(node)?;
        for (i, src) in srcs.into_iter().enumerate() {
            if let Some(src) = src {
                g.add_data_edge(
                    src,
                    InPort {
                        node: id,
                        index: i as u32,
                    },
                )?;
            }
        }
        for (i, name) in n.output.iter().enumerate() {
            if !name.is_empty() {
                f.names.insert(
                    name.clone(),
                    OutPort {
                        node: id,
                        index: i as u32,
                    },
                );
            }
        }
        Ok(())
    }

    /// Inlines a model-local function: its body's values live in a scope of their own, its
    /// attribute references take the calling node's attributes (or the function's defaults).
    fn inline_function(&mut self, call: &NodeProto, f: &FunctionProto) -> Result<()> {
        if self.depth >= self.options.limits.max_depth {
            return Err(Error::tr(format!(
                "function calls are nested more than {} deep",
                self.options.limits.max_depth
            )));
        }
        let d = self.frames.len() - 1;
        // The function's values get a prefix so they cannot collide with the caller's.
        let prefix = format!(
            "{}/",
            if call.name().is_empty() {
                f.name.as_deref().unwrap_or("function")
            } else {
                call.name()
            }
        );
        let mut rename: FxHashMap<String, String> = FxHashMap::default();
        for (i, formal) in f.input.iter().enumerate() {
            let actual = call.input.get(i).cloned().unwrap_or_default();
            rename.insert(formal.clone(), actual);
        }
        for (i, formal) in f.output.iter().enumerate() {
            let actual = call.output.get(i).cloned().unwrap_or_default();
            rename.insert(formal.clone(), actual);
        }
        let mut attr_vals: FxHashMap<String, crate::proto::AttributeProto> = FxHashMap::default();
        for a in &f.attribute_proto {
            if let Some(n) = &a.name {
                attr_vals.insert(n.clone(), a.clone());
            }
        }
        for a in &call.attribute {
            if let Some(n) = &a.name {
                attr_vals.insert(n.clone(), a.clone());
            }
        }
        let mut opsets = (*self.frames[d].opsets).clone();
        for o in &f.opset_import {
            let dom = match o.domain.as_deref() {
                None | Some("ai.onnx") => "",
                Some(d) => d,
            };
            opsets.insert(dom.to_string(), o.version.unwrap_or(1));
        }
        let saved = std::mem::replace(&mut self.frames[d].opsets, Arc::new(opsets));
        self.depth += 1;
        let result = (|| -> Result<()> {
            for n in &f.node {
                let mut m = n.clone();
                let map = |s: &String, rename: &FxHashMap<String, String>| -> String {
                    if s.is_empty() {
                        return String::new();
                    }
                    match rename.get(s) {
                        Some(a) => a.clone(),
                        None => format!("{prefix}{s}"),
                    }
                };
                m.input = n.input.iter().map(|s| map(s, &rename)).collect();
                m.output = n.output.iter().map(|s| map(s, &rename)).collect();
                if let Some(nm) = &n.name {
                    m.name = Some(format!("{prefix}{nm}"));
                }
                let mut kept = Vec::with_capacity(n.attribute.len());
                for a in &n.attribute {
                    match &a.ref_attr_name {
                        Some(r) => {
                            if let Some(v) = attr_vals.get(r) {
                                let mut v = v.clone();
                                v.name = a.name.clone();
                                kept.push(v);
                            }
                        }
                        None => kept.push(a.clone()),
                    }
                }
                m.attribute = kept;
                self.node(&m)?;
            }
            Ok(())
        })();
        self.depth -= 1;
        self.frames[d].opsets = saved;
        result
    }

    /// Translates the nodes of `g` (a graph without inputs, e.g. the branch of an If whose
    /// condition is known) into the current graph; its values are in scope only while it is
    /// translated. Returns its outputs.
    fn inline_graph(&mut self, g: &GraphProto) -> Result<Vec<OutPort>> {
        if !g.input.is_empty() {
            return Err(Error::tr(format!(
                "a graph with {} inputs cannot be inlined",
                g.input.len()
            )));
        }
        let d = self.frames.len() - 1;
        let saved = self.frames[d].names.clone();
        let captured = self.frames[d].captures.len();
        let result = (|| -> Result<Vec<OutPort>> {
            self.graph_body(g, false)?;
            let mut outs = Vec::with_capacity(g.output.len());
            for (i, vi) in g.output.iter().enumerate() {
                let name = vi.name.as_deref().unwrap_or("");
                let port = self
                    .resolve(d, name)
                    .map_err(|e| e.context(&format!("subgraph output {i}")))?;
                outs.push(port);
            }
            Ok(outs)
        })();
        // The branch's values go out of scope; outer values it captured stay captured.
        let f = &mut self.frames[d];
        let kept: Vec<(String, OutPort)> = f.captures[captured..]
            .iter()
            .filter_map(|(name, _)| f.names.get(name).map(|p| (name.clone(), *p)))
            .collect();
        f.names = saved;
        f.names.extend(kept);
        result
    }

    /// Translates `g` as a subgraph of the current frame.
    fn subgraph(&mut self, g: &GraphProto, formal: &[TensorDesc]) -> Result<Subgraph> {
        if self.frames.len() > self.options.limits.max_depth {
            return Err(Error::tr(format!(
                "subgraphs are nested more than {} deep",
                self.options.limits.max_depth
            )));
        }
        let opsets = self.frame().opsets.clone();
        let name = g.name.clone().unwrap_or_else(|| "body".to_string());
        self.frames.push(Frame::new(&name, opsets));
        let result = (|| -> Result<()> {
            for (i, vi) in g.input.iter().enumerate() {
                let name = vi.name.as_deref().unwrap_or("");
                let mut desc =
                    desc_from_type(vi.r#type.as_ref(), &format!("subgraph input '{name}'"))?;
                if let Some(f) = formal.get(i) {
                    if desc.dtype == DataType::UNDEFINED {
                        desc.dtype = f.dtype;
                    }
                    if desc.shape.is_unknown_rank() {
                        desc.shape = f.shape.clone();
                    }
                }
                self.add_input(name, desc)?;
            }
            self.graph_body(g, false)?;
            let d = self.frames.len() - 1;
            for (i, vi) in g.output.iter().enumerate() {
                let name = vi.name.as_deref().unwrap_or("");
                let port = self
                    .resolve(d, name)
                    .map_err(|e| e.context(&format!("subgraph output {i}")))?;
                self.frame().b.set_output(port, i)?;
            }
            Ok(())
        })();
        let mut f = self.frames.pop().expect("pushed above");
        result?;
        Ok(Subgraph {
            graph: f.b.build_and_reset()?,
            captures: f.captures,
            formal: g.input.len(),
        })
    }
}

/// The view a translator has of one node.
pub struct NodeCtx<'a> {
    /// The node, in the newest opset's form.
    pub node: &'a NodeProto,
    /// The opset version of the node's domain.
    pub opset: i64,
    pub(crate) inputs: Vec<InputSrc>,
    pub(crate) prog: &'a mut Program,
    base: String,
    emitted: usize,
}

impl<'a> NodeCtx<'a> {
    pub fn op_type(&self) -> &str {
        self.node.op_type()
    }
    pub fn name(&self) -> &str {
        self.node.name()
    }
    /// Number of input positions (absent optional ones included).
    pub fn num_inputs(&self) -> usize {
        self.inputs.len()
    }
    /// Number of output positions the node declares.
    pub fn num_outputs(&self) -> usize {
        self.node.output.len()
    }
    /// Whether output `i` is used (declared with a non-empty name).
    pub fn output_used(&self, i: usize) -> bool {
        self.node.output.get(i).is_some_and(|s| !s.is_empty())
    }

    fn builder(&mut self) -> &mut GraphBuilder {
        &mut self.prog.frame().b
    }
    pub fn graph(&self) -> &Graph {
        self.prog
            .frames
            .last()
            .expect("a frame is always present")
            .b
            .graph()
    }

    /// Input `i` when present.
    pub fn opt_input(&mut self, i: usize) -> Result<Option<OutPort>> {
        match self.inputs.get(i).cloned() {
            None | Some(InputSrc::Absent) => Ok(None),
            Some(InputSrc::Port(p)) => Ok(Some(p)),
            Some(InputSrc::Literal(mut t, like)) => {
                if let Some(l) = like {
                    let dt = self.input_desc(l)?.dtype;
                    if dt != DataType::UNDEFINED && dt != t.desc.dtype {
                        let vals = t.to_f64_vec()?;
                        t = es_core::types::tensor_from_f64(
                            dt,
                            t.desc.shape.dims().to_vec(),
                            &vals,
                        )?;
                    }
                }
                let p = self.constant(t)?;
                self.inputs[i] = InputSrc::Port(p);
                Ok(Some(p))
            }
        }
    }
    /// Input `i`, which must be present.
    pub fn input(&mut self, i: usize) -> Result<OutPort> {
        self.opt_input(i)?
            .ok_or_else(|| Error::tr(format!("input {i} is required")))
    }
    /// Whether input `i` is present.
    pub fn has_input(&self, i: usize) -> bool {
        !matches!(self.inputs.get(i), None | Some(InputSrc::Absent))
    }
    /// The description of input `i` (dtype, shape as far as known).
    pub fn input_desc(&self, i: usize) -> Result<TensorDesc> {
        match self.inputs.get(i) {
            Some(InputSrc::Port(p)) => Ok(self.desc(*p)?),
            Some(InputSrc::Literal(t, _)) => Ok(t.desc.clone()),
            _ => Err(Error::tr(format!("input {i} is required"))),
        }
    }
    pub fn desc(&self, p: OutPort) -> Result<TensorDesc> {
        Ok(self.graph().out_desc(p)?.clone())
    }
    /// The rank of input `i`; an error when it is not known at import.
    pub fn input_rank(&self, i: usize) -> Result<usize> {
        self.input_desc(i)?.shape.rank().ok_or_else(|| {
            Error::unsupported(format!(
                "{}: the rank of input {i} must be known at import",
                self.op_type()
            ))
        })
    }
    /// The value of a port when it is a constant.
    pub fn const_value(&self, p: OutPort) -> Option<Tensor> {
        self.graph()
            .node(p.node)
            .ok()
            .and_then(Node::const_value)
            .cloned()
    }
    /// The value of input `i` when it is a constant (initializer, Constant, literal).
    pub fn const_input(&self, i: usize) -> Option<Tensor> {
        match self.inputs.get(i)? {
            InputSrc::Port(p) => self.const_value(*p),
            InputSrc::Literal(t, _) => Some(t.clone()),
            InputSrc::Absent => None,
        }
    }
    /// The value of input `i`, which must be a constant; None when absent.
    pub fn need_const(&self, i: usize, what: &str) -> Result<Option<Tensor>> {
        if !self.has_input(i) {
            return Ok(None);
        }
        self.const_input(i).map(Some).ok_or_else(|| {
            Error::unsupported(format!(
                "{}: input {i} ({what}) must be a constant (an initializer or a Constant node)",
                self.op_type()
            ))
        })
    }
    /// Input `i` as integers, which must be a constant; None when absent.
    pub fn const_ints(&self, i: usize, what: &str) -> Result<Option<Vec<i64>>> {
        Ok(match self.need_const(i, what)? {
            Some(t) => Some(t.to_i64_vec()?),
            None => None,
        })
    }
    /// Input `i` as floats, which must be a constant; None when absent.
    pub fn const_floats(&self, i: usize, what: &str) -> Result<Option<Vec<f64>>> {
        Ok(match self.need_const(i, what)? {
            Some(t) => Some(t.to_f64_vec()?),
            None => None,
        })
    }

    // Attributes.

    pub fn attr(&self, name: &str) -> Result<Option<OnnxAttr<'a>>> {
        match self.node.attr(name) {
            None => Ok(None),
            Some(a) => attrs::read(a)
                .map(Some)
                .map_err(|e| e.context(&format!("attribute '{name}'"))),
        }
    }
    pub fn has_attr(&self, name: &str) -> bool {
        self.node.attr(name).is_some()
    }
    /// Attribute `name` as `get` reads it; a value of another kind is an error naming `want`.
    fn attr_as<T>(
        &self,
        name: &str,
        want: &str,
        get: impl FnOnce(&OnnxAttr<'a>) -> Option<T>,
    ) -> Result<Option<T>> {
        match self.attr(name)? {
            None => Ok(None),
            Some(a) => get(&a).map(Some).ok_or_else(|| {
                Error::tr(format!(
                    "attribute '{name}' must be {want}, got {}",
                    a.kind()
                ))
            }),
        }
    }
    pub fn attr_i(&self, name: &str, default: i64) -> Result<i64> {
        let v = self.attr_as(name, "INT", |a| match a {
            OnnxAttr::Int(v) => Some(*v),
            _ => None,
        })?;
        Ok(v.unwrap_or(default))
    }
    pub fn attr_f(&self, name: &str, default: f32) -> Result<f32> {
        let v = self.attr_as(name, "FLOAT", |a| match a {
            OnnxAttr::Float(v) => Some(*v),
            OnnxAttr::Int(v) => Some(*v as f32),
            _ => None,
        })?;
        Ok(v.unwrap_or(default))
    }
    pub fn attr_s(&self, name: &str, default: &str) -> Result<String> {
        let v = self.attr_as(name, "STRING", |a| match a {
            OnnxAttr::String(v) => Some(v.clone()),
            _ => None,
        })?;
        Ok(v.unwrap_or_else(|| default.to_string()))
    }
    pub fn attr_ints(&self, name: &str) -> Result<Option<Vec<i64>>> {
        self.attr_as(name, "INTS", |a| match a {
            OnnxAttr::Ints(v) => Some(v.to_vec()),
            OnnxAttr::Int(v) => Some(vec![*v]),
            _ => None,
        })
    }
    pub fn attr_floats(&self, name: &str) -> Result<Option<Vec<f32>>> {
        self.attr_as(name, "FLOATS", |a| match a {
            OnnxAttr::Floats(v) => Some(v.to_vec()),
            OnnxAttr::Float(v) => Some(vec![*v]),
            _ => None,
        })
    }
    pub fn attr_tensor(&self, name: &str) -> Result<Option<Tensor>> {
        let t = self.attr_as(name, "TENSOR", |a| match a {
            OnnxAttr::Tensor(t) => Some(*t),
            _ => None,
        })?;
        t.map(|t| {
            tensor_from_proto(t, &self.prog.dir, &self.prog.options.limits)
                .map_err(|e| e.context(&format!("attribute '{name}'")))
        })
        .transpose()
    }
    pub fn attr_graph(&self, name: &str) -> Result<Option<&'a GraphProto>> {
        self.attr_as(name, "GRAPH", |a| match a {
            OnnxAttr::Graph(g) => Some(*g),
            _ => None,
        })
    }
    /// The ONNX attribute `name` coerced to the type GE op `ge_op` declares for `ge_attr`.
    pub fn attr_for(&self, name: &str, ge_op: &str, ge_attr: &str) -> Result<Option<AttrValue>> {
        let Some(v) = self.attr(name)? else {
            return Ok(None);
        };
        let proto = self.graph_op_proto(ge_op)?;
        let def = proto.attr(ge_attr).ok_or_else(|| {
            Error::tr(format!(
                "internal: GE op {ge_op} has no attribute '{ge_attr}'"
            ))
        })?;
        attrs::coerce(&v, def.ty, name).map(Some)
    }
    /// The prototype of GE op `ge_op`.
    pub fn graph_op_proto(&self, ge_op: &str) -> Result<Arc<es_core::OpProto>> {
        Ok(self
            .prog
            .frames
            .last()
            .expect("a frame is always present")
            .b
            .proto(ge_op)?)
    }

    // Building.

    fn next_name(&mut self, op_type: &str) -> String {
        let base = if self.emitted == 0 {
            self.base.clone()
        } else {
            format!("{}/{op_type}", self.base)
        };
        self.emitted += 1;
        self.graph().unique_name(&base)
    }

    /// Adds GE op `op_type`: one entry of `inputs` per IR input (one port for a required or
    /// optional input, None when absent, any number for a dynamic input). Returns every
    /// output port.
    pub fn op(
        &mut self,
        op_type: &str,
        inputs: Vec<Vec<Option<OutPort>>>,
        attrs: Vec<(&str, AttrValue)>,
    ) -> Result<Vec<OutPort>> {
        self.op_with_counts(op_type, inputs, attrs, &[])
    }

    /// [`NodeCtx::op`] with instance counts of dynamic outputs (`(output name, count)`).
    pub fn op_with_counts(
        &mut self,
        op_type: &str,
        mut inputs: Vec<Vec<Option<OutPort>>>,
        attrs: Vec<(&str, AttrValue)>,
        counts: &[(&str, usize)],
    ) -> Result<Vec<OutPort>> {
        let proto = self.graph_op_proto(op_type)?;
        while inputs.len() < proto.inputs.len() {
            inputs.push(
                if proto.inputs[inputs.len()].kind == es_core::ops::IoKind::Dynamic {
                    vec![]
                } else {
                    vec![None]
                },
            );
        }
        let name = self.next_name(op_type);
        let args = OpArgs {
            inputs,
            attrs: attrs.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            subgraphs: Vec::new(),
            output_counts: counts.iter().map(|(k, n)| (k.to_string(), *n)).collect(),
            name: Some(name),
        };
        self.add(op_type, args)
    }

    /// Adds a GE op from fully specified arguments (subgraphs included).
    pub fn add(&mut self, op_type: &str, args: OpArgs) -> Result<Vec<OutPort>> {
        let id: NodeId = self.builder().add_op(op_type, args)?;
        let n = self.graph().node(id)?.outputs.len();
        Ok((0..n as u32)
            .map(|index| OutPort { node: id, index })
            .collect())
    }

    /// Adds GE op `op_type` with one port per IR input, in order (missing trailing inputs are
    /// absent), and returns its first output.
    pub fn op1(
        &mut self,
        op_type: &str,
        inputs: &[OutPort],
        attrs: Vec<(&str, AttrValue)>,
    ) -> Result<OutPort> {
        let ins = inputs.iter().map(|p| vec![Some(*p)]).collect();
        let outs = self.op(op_type, ins, attrs)?;
        outs.first()
            .copied()
            .ok_or_else(|| Error::tr(format!("internal: {op_type} has no output")))
    }

    /// Takes the builder of the graph under construction out of the translator, for code that
    /// builds through another front end (the Python translators). It must be given back with
    /// [`NodeCtx::put_builder`] before the translator returns; until then the graph is empty.
    pub fn take_builder(&mut self) -> GraphBuilder {
        std::mem::replace(&mut self.prog.frame().b, GraphBuilder::new("taken"))
    }
    /// Gives back a builder taken with [`NodeCtx::take_builder`].
    pub fn put_builder(&mut self, b: GraphBuilder) {
        self.prog.frame().b = b;
    }

    /// A GE name for the node being built, for callers of [`NodeCtx::add`].
    pub fn fresh_name(&mut self, op_type: &str) -> String {
        self.next_name(op_type)
    }

    /// The value named `name` in scope (an enclosing graph's value is captured), for
    /// translators that name values in attributes (Gradient's `xs`, `zs` and `y`).
    pub fn value(&mut self, name: &str) -> Result<OutPort> {
        let d = self.prog.frames.len() - 1;
        self.prog.resolve(d, name)
    }
    /// Whether the node is in a body graph (If, Loop, Scan) rather than the main graph.
    pub fn in_subgraph(&self) -> bool {
        self.prog.frames.len() > 1
    }

    /// A Const node.
    pub fn constant(&mut self, t: Tensor) -> Result<OutPort> {
        let name = self.next_name("Const");
        Ok(self.builder().create_const(t, Some(name))?)
    }
    pub fn const_i64(&mut self, v: &[i64], shape: &[i64]) -> Result<OutPort> {
        self.constant(Tensor::from_values(v, shape.to_vec())?)
    }
    pub fn const_i32(&mut self, v: &[i32], shape: &[i64]) -> Result<OutPort> {
        self.constant(Tensor::from_values(v, shape.to_vec())?)
    }
    /// A scalar (or shaped) constant of `dtype` holding `v`.
    pub fn const_of(&mut self, dtype: DataType, v: &[f64], shape: &[i64]) -> Result<OutPort> {
        self.constant(es_core::types::tensor_from_f64(dtype, shape.to_vec(), v)?)
    }
    /// `p` cast to `to` (no node when it already has that dtype).
    pub fn cast(&mut self, p: OutPort, to: DataType) -> Result<OutPort> {
        if self.desc(p)?.dtype == to {
            return Ok(p);
        }
        self.op1(
            "Cast",
            &[p],
            vec![("dst_type", AttrValue::Int(to.value() as i64))],
        )
    }

    /// Translates the nodes of `g`, a graph without inputs, into the graph under construction
    /// (its values scoped to it) and returns its outputs: the branch of an If whose condition
    /// is known at import.
    pub fn inline_graph(&mut self, g: &GraphProto) -> Result<Vec<OutPort>> {
        self.prog.inline_graph(g)
    }

    /// Translates a body graph (attribute `name`) as a subgraph; `formal` gives the
    /// descriptions of its inputs where the body leaves them open.
    pub fn subgraph(&mut self, g: &GraphProto, formal: &[TensorDesc]) -> Result<Subgraph> {
        // SAFETY of the reborrow: `prog` is exclusively ours for the duration of the call.
        self.prog.subgraph(g, formal)
    }
}

/// Gives `subs` (branches of one node) the same input list: their formal inputs, then every
/// capture of any branch, in one order. Returns the outer values to pass after the formal
/// inputs.
pub fn unify_captures(subs: &mut [Subgraph]) -> Result<Vec<OutPort>> {
    let mut all: Vec<(String, OutPort)> = Vec::new();
    for s in subs.iter() {
        for c in &s.captures {
            if !all.iter().any(|a| a.0 == c.0) {
                all.push(c.clone());
            }
        }
    }
    for s in subs.iter_mut() {
        let formal = s.formal as i64;
        // Renumber: capture k of the union gets index formal + k.
        let mut by_name: FxHashMap<String, NodeId> = FxHashMap::default();
        for id in s.graph.input_nodes() {
            let n = s.graph.node(id)?;
            let idx = n
                .attrs
                .get("index")
                .and_then(AttrValue::as_int)
                .unwrap_or(0);
            if idx >= formal {
                let k = (idx - formal) as usize;
                if let Some(c) = s.captures.get(k) {
                    by_name.insert(c.0.clone(), id);
                }
            }
        }
        for (k, (name, outer)) in all.iter().enumerate() {
            let index = AttrValue::Int(formal + k as i64);
            match by_name.get(name) {
                Some(id) => {
                    s.graph.node_mut(*id)?.attrs.insert("index".into(), index);
                }
                None => {
                    let _ = outer;
                    let dname = s.graph.unique_name(name);
                    let mut node = Node::new(dname, "Data");
                    node.attrs.insert("index".into(), index);
                    let desc = TensorDesc::default();
                    node.inputs
                        .push(es_core::graph::InputSlot::new("x", 0, desc.clone()));
                    node.outputs.push(es_core::graph::OutputSlot {
                        name: "y".into(),
                        ir_index: 0,
                        desc: desc.into(),
                        consumers: Vec::new(),
                    });
                    s.graph.add_node(node)?;
                }
            }
        }
        s.captures = all.clone();
        debug_assert!(s.graph.input_nodes().iter().all(|id| s
            .graph
            .node(*id)
            .map(|n| is_data_op(&n.op_type))
            .unwrap_or(false)));
    }
    Ok(all.into_iter().map(|c| c.1).collect())
}

/// The most elements a value may have for [`known_values`] to compute it.
const MAX_KNOWN_ELEMS: usize = 64;

/// The value of `p` (flattened, as f64) when it follows at import from constants and the
/// static dims of the shapes declared so far: Const; Shape, Size and Rank of a value of
/// static shape; Cast (to a type that holds the values exactly), Identity and the reshaping
/// ops of a known value; comparisons, logical ops and integer Add/Sub/Mul of known values (one
/// side a single element, or both of one size). None otherwise. ONNX function bodies branch
/// on such values (an attribute turned into a Constant, the length of a shape input), so an
/// If over them can keep only the branch taken.
pub(crate) fn known_values(g: &Graph, p: OutPort) -> Option<Vec<f64>> {
    known_values_at(g, p, 0)
}

fn known_values_at(g: &Graph, p: OutPort, depth: usize) -> Option<Vec<f64>> {
    if depth > 32 {
        return None;
    }
    let n = g.node(p.node).ok()?;
    if let Some(t) = n.const_value() {
        let k = t.desc.shape.num_elements()?;
        return (k as usize <= MAX_KNOWN_ELEMS)
            .then(|| t.to_f64_vec().ok())
            .flatten();
    }
    let input = |i: usize| -> Option<OutPort> { n.inputs.get(i)?.source };
    let static_dims = |i: usize| -> Option<Vec<i64>> {
        let d = g.out_desc(input(i)?).ok()?;
        d.shape.is_static().then(|| d.shape.dims().to_vec())
    };
    let arg = |i: usize| known_values_at(g, input(i)?, depth + 1);
    let out_dtype = g.out_desc(p).ok()?.dtype;
    let v = match &*n.op_type {
        "Shape" => static_dims(0)?.into_iter().map(|d| d as f64).collect(),
        "Size" => vec![static_dims(0)?.iter().product::<i64>() as f64],
        "Rank" => vec![static_dims(0)?.len() as f64],
        "Identity" | "Reshape" | "Squeeze" | "Unsqueeze" | "ExpandDims" => arg(0)?,
        "Cast" => {
            let v = arg(0)?;
            if out_dtype == DataType::BOOL {
                v.into_iter()
                    .map(|x| f64::from(u8::from(x != 0.0)))
                    .collect()
            } else {
                // Only values the target holds exactly (no rounding or wrapping to model).
                let (lo, hi, integral) = exact_range(out_dtype)?;
                let v: Vec<f64> = if integral {
                    v.into_iter().map(f64::trunc).collect()
                } else {
                    v
                };
                if !v
                    .iter()
                    .all(|&x| x.fract() == 0.0 && (lo..=hi).contains(&x))
                {
                    return None;
                }
                v
            }
        }
        "LogicalNot" => arg(0)?
            .into_iter()
            .map(|x| f64::from(u8::from(x == 0.0)))
            .collect(),
        op => {
            let f: fn(f64, f64) -> f64 = match op {
                "Equal" => |a, b| f64::from(u8::from(a == b)),
                "NotEqual" => |a, b| f64::from(u8::from(a != b)),
                "Less" => |a, b| f64::from(u8::from(a < b)),
                "LessEqual" => |a, b| f64::from(u8::from(a <= b)),
                "Greater" => |a, b| f64::from(u8::from(a > b)),
                "GreaterEqual" => |a, b| f64::from(u8::from(a >= b)),
                "LogicalAnd" => |a, b| f64::from(u8::from(a != 0.0 && b != 0.0)),
                "LogicalOr" => |a, b| f64::from(u8::from(a != 0.0 || b != 0.0)),
                "Add" => |a, b| a + b,
                "Sub" => |a, b| a - b,
                "Mul" => |a, b| a * b,
                _ => return None,
            };
            if matches!(op, "Add" | "Sub" | "Mul") && !out_dtype.is_integer() {
                // Float arithmetic at import could differ from the kernels' rounding.
                return None;
            }
            let (a, b) = (arg(0)?, arg(1)?);
            match (a.len(), b.len()) {
                (x, y) if x == y => a.iter().zip(&b).map(|(&x, &y)| f(x, y)).collect(),
                (1, _) => b.iter().map(|&y| f(a[0], y)).collect(),
                (_, 1) => a.iter().map(|&x| f(x, b[0])).collect(),
                _ => return None,
            }
        }
    };
    (v.len() <= MAX_KNOWN_ELEMS).then_some(v)
}

/// The whole numbers a cast to `dt` keeps exactly, and whether it truncates (integer types).
fn exact_range(dt: DataType) -> Option<(f64, f64, bool)> {
    let two = |bits: i32| 2f64.powi(bits);
    Some(match dt {
        DataType::INT8 => (-two(7), two(7) - 1.0, true),
        DataType::UINT8 => (0.0, two(8) - 1.0, true),
        DataType::INT16 => (-two(15), two(15) - 1.0, true),
        DataType::UINT16 => (0.0, two(16) - 1.0, true),
        DataType::INT32 => (-two(31), two(31) - 1.0, true),
        DataType::UINT32 => (0.0, two(32) - 1.0, true),
        DataType::INT64 => (-two(53), two(53), true),
        DataType::UINT64 => (0.0, two(53), true),
        DataType::FLOAT16 | DataType::BF16 => (-two(8), two(8), false),
        DataType::FLOAT => (-two(24), two(24), false),
        DataType::DOUBLE => (-two(53), two(53), false),
        _ => return None,
    })
}

/// A shape from integers, for messages.
pub fn shape_of(dims: &[i64]) -> Shape {
    Shape::new(dims.to_vec())
}
