//! The eager-style graph builder: every op call validates against the prototype, infers the
//! outputs, and adds one node. A failed call leaves the graph as it was.

use crate::attr::{AttrMap, AttrValue};
use crate::error::{Error, Result};
use crate::graph::{
    Graph, InPort, InputSlot, Name, Node, NodeId, OutPort, OutputSlot, SubgraphSlot,
};
use crate::infer::{bind_types, infer, InferCtx, PerInstance};
use crate::ops::{global_registry, CountRule, IoKind, OpProto, OpRegistry, SubgraphKind};
use crate::types::{DataType, Format, Shape, SharedDesc, Tensor, TensorDesc};
use smallvec::SmallVec;
use smol_str::format_smolstr;
use std::collections::HashMap;
use std::sync::Arc;

/// Arguments of one op call. `inputs` has one entry per IR input: one element for a
/// required/optional input (None = absent optional), any number for a dynamic input.
#[derive(Debug, Default)]
pub struct OpArgs {
    pub inputs: Vec<Vec<Option<OutPort>>>,
    pub attrs: AttrMap,
    /// One entry per IR subgraph: one graph for a static one, any number for a dynamic one.
    pub subgraphs: Vec<Vec<Graph>>,
    /// Instance counts of dynamic outputs that have no count rule, by output name.
    pub output_counts: HashMap<String, usize>,
    /// Node name; default `<OpType>_<n>`.
    pub name: Option<String>,
}

/// Tells where the program that is building a graph stands (`file:line`). A front end sets one
/// (the Python module names the user's line); nodes whose checks wait for the compile record
/// it, so that a failure found then names the line that built the node.
pub type Locator = fn() -> Option<Arc<str>>;

static LOCATOR: std::sync::OnceLock<Locator> = std::sync::OnceLock::new();

/// Sets the process's [`Locator`] (the first call wins).
pub fn set_locator(f: Locator) {
    let _ = LOCATOR.set(f);
}

/// Builds one graph. Not thread-safe by itself; the Python layer wraps it in a mutex.
pub struct GraphBuilder {
    graph: Graph,
    registry: Arc<OpRegistry>,
    /// Nodes whose output descriptions are hints, not facts: inputs created without a shape,
    /// descriptions set by hand, and every node computed from such a node. GE checks nothing
    /// while building and takes input descriptions from the fed tensors; so an op built on a
    /// hint never fails here: its checks wait for the compile, which re-infers everything.
    hinted: rustc_hash::FxHashSet<NodeId>,
}

impl GraphBuilder {
    /// A builder over the process-wide operator registry.
    pub fn new(name: impl Into<String>) -> Self {
        Self::with_registry(name, global_registry())
    }

    pub fn with_registry(name: impl Into<String>, registry: Arc<OpRegistry>) -> Self {
        let mut graph = Graph::new(name);
        graph.ops_version = registry.version.clone();
        GraphBuilder {
            graph,
            registry,
            hinted: Default::default(),
        }
    }

    pub fn graph(&self) -> &Graph {
        &self.graph
    }
    /// Direct access for setters (descs, attributes); callers keep the graph consistent.
    pub fn graph_mut(&mut self) -> &mut Graph {
        &mut self.graph
    }
    pub fn registry(&self) -> &Arc<OpRegistry> {
        &self.registry
    }
    /// Refreshes the registry snapshot (after operators were registered at run time).
    pub fn refresh_registry(&mut self) {
        self.registry = global_registry();
    }

    /// Marks a node's outputs as hints, or as declared (see the `hinted` field).
    pub fn set_hinted(&mut self, id: NodeId, hinted: bool) {
        if hinted {
            self.hinted.insert(id);
        } else {
            self.hinted.remove(&id);
        }
    }

    /// After a description was set by hand: an input's description is a declaration (a hint
    /// only while it leaves rank or dtype open); any other node's is a hint.
    pub fn description_set(&mut self, id: NodeId) -> Result<()> {
        let n = self.graph.node(id)?;
        let hint = if crate::graph::is_data_op(&n.op_type) {
            n.outputs.first().is_none_or(|o| desc_is_hint(&o.desc))
        } else {
            true
        };
        self.set_hinted(id, hint);
        Ok(())
    }

    /// Where the front end says the node being built comes from (see [`set_locator`]).
    fn locate(&self) -> Option<Arc<str>> {
        LOCATOR.get().and_then(|f| f())
    }

    /// Whether a node's outputs are hints: its checks are left to the compile.
    pub fn is_hinted(&self, id: NodeId) -> bool {
        self.hinted.contains(&id)
    }

    pub fn proto(&self, op_type: &str) -> Result<Arc<OpProto>> {
        if let Some(p) = self.registry.get(op_type) {
            return Ok(p.clone());
        }
        let fresh = global_registry();
        fresh.get(op_type).cloned().ok_or_else(|| {
            Error::build(format!(
                "unknown operator '{op_type}': it is not in the operator library"
            ))
        })
    }

    /// A node name: the given one (which must be free) or the next automatic one with the
    /// counter value [`GraphBuilder::add_named`] hands to the graph.
    fn node_name(&mut self, op_type: &str, name: Option<String>) -> Result<(Name, Option<u64>)> {
        match name {
            Some(n) => {
                if self.graph.find(&n).is_some() {
                    return Err(Error::build(format!(
                        "graph '{}' already has a node named '{n}'",
                        self.graph.name
                    )));
                }
                Ok((Name::new(n), None))
            }
            None => {
                let (n, next) = self.graph.next_auto_name(op_type);
                Ok((n, Some(next)))
            }
        }
    }

    /// Adds `node` named by [`GraphBuilder::node_name`]: an automatic name (`next`) is not
    /// indexed until a lookup needs it.
    fn add_named(&mut self, node: Node, next: Option<u64>) -> Result<NodeId> {
        match next {
            Some(next) => self.graph.add_auto_named(node, next),
            None => self.graph.add_node(node),
        }
    }

    /// Adds a graph input (`Data`, `RefData`, `AippData` or `AnyData`).
    pub fn create_input(
        &mut self,
        index: i64,
        name: Option<String>,
        op_type: &str,
        dtype: DataType,
        format: Format,
        shape: Shape,
    ) -> Result<OutPort> {
        if index < 0 {
            return Err(Error::value(format!(
                "input index must be >= 0, got {index}"
            )));
        }
        Shape::validate(shape.dims())?;
        if !crate::graph::is_data_op(op_type) {
            return Err(Error::value(format!(
                "input type must be Data, RefData, AippData or AnyData, got '{op_type}'"
            )));
        }
        if let Some(id) = self.graph.input_with_index(index) {
            return Err(Error::value(format!(
                "graph '{}' already has input {index} ('{}')",
                self.graph.name,
                self.graph.node(id)?.name
            )));
        }
        // A name in use is refused when the node is added (the same error as `node_name`'s).
        let name = match name {
            Some(n) => Name::from(n),
            None => format_smolstr!("input_{index}"),
        };
        let desc = TensorDesc::new(dtype, shape).with_format(format);
        let hint = desc_is_hint(&desc);
        self.add_graph_input(Node::new(name, op_type), index, desc, hint)
    }

    /// Adds a graph-input node (Data-like or Variable): attribute `index`, input `x` and output
    /// `y` both described by `desc`. A `hint` description may be replaced at build time.
    fn add_graph_input(
        &mut self,
        mut node: Node,
        index: i64,
        desc: TensorDesc,
        hint: bool,
    ) -> Result<OutPort> {
        node.attrs.insert("index".into(), AttrValue::Int(index));
        // One description for both slots (copy-on-write: either may change alone).
        let desc = SharedDesc::new(desc);
        node.inputs.push(InputSlot::new("x", 0, desc.clone()));
        node.outputs.push(OutputSlot::new("y", 0, desc));
        let id = self.graph.add_node(node)?;
        if hint {
            self.hinted.insert(id);
        }
        Ok(OutPort { node: id, index: 0 })
    }

    /// Adds a Const node holding `value`.
    pub fn create_const(&mut self, value: Tensor, name: Option<String>) -> Result<OutPort> {
        let (name, next) = self.node_name("Const", name)?;
        let mut node = Node::new(name, "Const");
        let desc = value.desc.clone();
        node.attrs.insert("value".into(), AttrValue::Tensor(value));
        node.outputs.push(OutputSlot::new("y", 0, desc));
        let id = self.add_named(node, next)?;
        Ok(OutPort { node: id, index: 0 })
    }

    /// Adds a Variable node named `name` with input index `index`.
    pub fn create_variable(&mut self, index: i64, name: &str) -> Result<OutPort> {
        let (name, _) = self.node_name("Variable", Some(name.to_string()))?;
        self.add_graph_input(
            Node::new(name, "Variable"),
            index,
            TensorDesc::default(),
            true,
        )
    }

    /// Adds one operator node, validated and inferred. On error nothing is added.
    pub fn add_op(&mut self, op_type: &str, args: OpArgs) -> Result<NodeId> {
        let proto = self.proto(op_type)?;
        self.add_op_with(&proto, args)
    }

    /// [`GraphBuilder::add_op`] with the prototype already looked up (by [`GraphBuilder::proto`]),
    /// for callers that read it before building the arguments.
    pub fn add_op_with(&mut self, p: &OpProto, args: OpArgs) -> Result<NodeId> {
        let OpArgs {
            inputs,
            attrs,
            subgraphs,
            output_counts,
            name,
        } = args;
        let given = inputs.iter().map(Vec::as_slice);
        self.add_op_parts(p, given, attrs, subgraphs, output_counts, name)
    }

    /// [`GraphBuilder::add_op_with`] for a call that gives one tensor per input and nothing
    /// else (no attributes, subgraphs, output counts or name): the same node and the same
    /// errors, without building the argument vectors.
    pub fn add_op_ports(&mut self, p: &OpProto, inputs: &[OutPort]) -> Result<NodeId> {
        let given: SmallVec<[[Option<OutPort>; 1]; 4]> =
            inputs.iter().map(|s| [Some(*s)]).collect();
        self.add_op_parts(
            p,
            given.iter().map(|g| &g[..]),
            AttrMap::new(),
            Vec::new(),
            HashMap::new(),
            None,
        )
    }

    fn add_op_parts<'g>(
        &mut self,
        p: &OpProto,
        given_inputs: impl ExactSizeIterator<Item = &'g [Option<OutPort>]>,
        given_attrs: AttrMap,
        subgraphs: Vec<Vec<Graph>>,
        output_counts: HashMap<String, usize>,
        name: Option<String>,
    ) -> Result<NodeId> {
        let n_given = given_inputs.len();
        if n_given != p.inputs.len() {
            return Err(Error::build(format!(
                "{}: expected {} inputs ({}), got {}",
                p.name,
                p.inputs.len(),
                p.input_names(),
                n_given
            )));
        }
        // Expand inputs into instances, with their producers' descriptions.
        let mut slots: Vec<InputSlot> = Vec::with_capacity(n_given);
        let mut dyn_len: Vec<(&str, usize)> = Vec::new();
        for (ir, (def, given)) in p.inputs.iter().zip(given_inputs).enumerate() {
            match def.kind {
                IoKind::Required | IoKind::Optional => {
                    if given.len() > 1 {
                        return Err(Error::build(format!(
                            "{}: input '{}' takes one tensor, got {}",
                            p.name,
                            def.name,
                            given.len()
                        )));
                    }
                    let src = given.first().copied().flatten();
                    if src.is_none() && def.kind == IoKind::Required {
                        return Err(Error::build(format!(
                            "{}: input '{}' is required",
                            p.name, def.name
                        )));
                    }
                    slots.push(self.input_slot(p, Name::new(&def.name), ir, src)?);
                }
                IoKind::Dynamic => {
                    dyn_len.push((&def.name, given.len()));
                    for (k, src) in given.iter().enumerate() {
                        let Some(src) = src else {
                            return Err(Error::build(format!(
                                "{}: instance {k} of dynamic input '{}' is missing",
                                p.name, def.name
                            )));
                        };
                        slots.push(self.input_slot(
                            p,
                            format_smolstr!("{}{k}", def.name),
                            ir,
                            Some(*src),
                        )?);
                    }
                }
            }
        }
        let len_of = |name: &str| {
            dyn_len
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, l)| *l)
                .unwrap_or(0)
        };
        // Attributes: check the given ones, fill defaults, compute derived ones.
        let mut attrs = AttrMap::new();
        for (k, v) in given_attrs {
            let Some(def) = p.attr(&k) else {
                return Err(Error::build(format!(
                    "{}: unknown attribute '{k}' (attributes: {})",
                    p.name,
                    p.attr_names()
                )));
            };
            if v.attr_type() != def.ty {
                return Err(Error::build(format!(
                    "{}: attribute '{k}' must be {}, got {} ({v})",
                    p.name,
                    def.ty,
                    v.attr_type()
                )));
            }
            attrs.insert(k, v);
        }
        for (a, rule) in &p.derived_attrs {
            if let CountRule::LenOf(i) = rule {
                let n = len_of(i) as i64;
                if let Some(given) = attrs.get(a).and_then(AttrValue::as_int) {
                    if given != n {
                        return Err(Error::value(format!(
                            "{}: attribute '{a}' is {given} but input '{i}' has {n} tensors",
                            p.name
                        )));
                    }
                }
                attrs.insert(a.clone(), AttrValue::Int(n));
            }
        }
        for def in &p.attrs {
            if !attrs.contains_key(&def.name) {
                match &def.default {
                    Some(d) => {
                        attrs.insert(def.name.clone(), d.clone());
                    }
                    None => {
                        return Err(Error::build(format!(
                            "{}: required attribute '{}' ({}) is missing",
                            p.name, def.name, def.ty
                        )))
                    }
                }
            }
        }
        // Output instances: (name, IR index).
        let mut out_names: SmallVec<[(Name, u32); 2]> = SmallVec::with_capacity(p.outputs.len());
        for (ir, def) in p.outputs.iter().enumerate() {
            if def.kind != IoKind::Dynamic {
                out_names.push((Name::new(&def.name), ir as u32));
                continue;
            }
            // A count the library can derive; one the caller gives too (GE's `<output>_num`,
            // always passed) must agree with it.
            let derived = match p.output_counts.get(&def.name) {
                Some(CountRule::LenOf(i)) => {
                    Some((len_of(i), format!("input '{i}' has {} tensors", len_of(i))))
                }
                Some(CountRule::Attr(a)) => {
                    let v = attrs.get(a).and_then(AttrValue::as_int).unwrap_or(0);
                    if !(0..=1_000_000).contains(&v) {
                        return Err(Error::value(format!(
                            "{}: attribute '{a}' must be in 0..=1000000, got {v}",
                            p.name
                        )));
                    }
                    Some((v as usize, format!("attribute '{a}' is {v}")))
                }
                None => None,
            };
            let count = match derived {
                Some((n, why)) => {
                    if let Some(&given) = output_counts.get(def.name.as_str()) {
                        if given != n {
                            return Err(Error::value(format!(
                                "{}: {}_num is {given} but {why}",
                                p.name, def.name
                            )));
                        }
                    }
                    n
                }
                None => *output_counts.get(&def.name).ok_or_else(|| {
                    Error::value(format!(
                        "{}: dynamic output '{}' needs its count ({}_num)",
                        p.name, def.name, def.name
                    ))
                })?,
            };
            if count > 1_000_000 {
                return Err(Error::value(format!(
                    "{}: {}_num must be in 0..=1000000, got {count}",
                    p.name, def.name
                )));
            }
            for k in 0..count {
                out_names.push((format_smolstr!("{}{k}", def.name), ir as u32));
            }
        }
        // Subgraphs.
        if subgraphs.len() > p.subgraphs.len()
            || p.subgraphs.iter().enumerate().any(|(i, s)| {
                s.kind == SubgraphKind::Static && subgraphs.get(i).map(Vec::len) != Some(1)
            })
        {
            return Err(Error::build(format!(
                "{}: expected subgraphs ({}), got {} groups",
                p.name,
                p.subgraph_names(),
                subgraphs.len()
            )));
        }
        // Types and inference. On hinted inputs a failure is final only when it stays with
        // the hinted descriptions made unknown (a bad attribute, a bad constant); otherwise
        // the node gets what can be inferred without the hints, and the compile, which infers
        // from the fed tensors, decides.
        let hinted = !self.hinted.is_empty()
            && slots
                .iter()
                .any(|s| s.source.is_some_and(|src| self.hinted.contains(&src.node)));
        let (node_name, next_name) = self.node_name(&p.name, name)?;
        let graph = &self.graph;
        let output_ir: PerInstance<u32> = out_names.iter().map(|o| o.1).collect();
        let run = |slots: &[InputSlot]| -> Result<Vec<TensorDesc>> {
            let inputs: PerInstance<_> = slots.iter().map(|s| s.source.map(|_| &*s.desc)).collect();
            let input_ir: PerInstance<_> = slots.iter().map(|s| s.ir_index).collect();
            let consts: PerInstance<_> = slots
                .iter()
                .map(|s| {
                    s.source
                        .and_then(|src| graph.node(src.node).ok())
                        .and_then(Node::const_value)
                })
                .collect();
            let bound = bind_types(p, slots)?;
            let ctx = InferCtx {
                proto: p,
                node_name: &node_name,
                attrs: &attrs,
                inputs: &inputs,
                input_ir: &input_ir,
                consts: &consts,
                output_ir: &output_ir,
                bound: &bound,
                subgraph_outputs: subgraphs
                    .iter()
                    .flatten()
                    .map(crate::infer::graph_output_descs)
                    .collect::<Result<_>>()?,
            };
            infer(&ctx)
        };
        let descs = match run(&slots) {
            Ok(d) => d,
            Err(e) if hinted => {
                let loose: Vec<InputSlot> = slots
                    .iter()
                    .map(|s| {
                        let mut s = s.clone();
                        if s.source.is_some_and(|src| self.hinted.contains(&src.node)) {
                            s.desc
                                .set(TensorDesc::new(DataType::UNDEFINED, Shape::unknown_rank()));
                        }
                        s
                    })
                    .collect();
                run(&loose).map_err(|_| e)?
            }
            Err(e) => return Err(e),
        };
        // An output described exactly as one of the inputs (elementwise ops: most nodes of a
        // network) shares that input's description, copy-on-write like every shared one,
        // instead of holding an equal copy of its own: one allocation less per node.
        let outputs: Vec<OutputSlot> = out_names
            .into_iter()
            .zip(descs)
            .map(|((name, ir_index), desc)| {
                let desc = match slots.iter().find(|s| s.source.is_some() && *s.desc == desc) {
                    Some(s) => s.desc.clone(),
                    None => desc.into(),
                };
                OutputSlot::new(name, ir_index, desc)
            })
            .collect();
        // Commit.
        let mut node = Node::new(node_name, p.name.clone());
        node.attrs = attrs;
        if hinted {
            node.built_at = self.locate();
        }
        let sources: SmallVec<[Option<OutPort>; 4]> = slots.iter().map(|s| s.source).collect();
        node.inputs = slots;
        node.outputs = outputs;
        for (ir, group) in subgraphs.into_iter().enumerate() {
            let def = &p.subgraphs[ir];
            let dynamic = def.kind == SubgraphKind::Dynamic;
            for (k, mut g) in group.into_iter().enumerate() {
                g.parent_node = Some(node.name.clone());
                let name = if dynamic {
                    format_smolstr!("{}{k}", def.name)
                } else {
                    Name::new(&def.name)
                };
                node.subgraphs.push(SubgraphSlot {
                    name,
                    ir_index: ir as u32,
                    graph: g,
                });
            }
        }
        let id = self.add_named(node, next_name)?;
        if hinted {
            self.hinted.insert(id);
        }
        for (i, src) in sources.into_iter().enumerate() {
            if let Some(src) = src {
                self.graph.add_data_edge(
                    src,
                    InPort {
                        node: id,
                        index: i as u32,
                    },
                )?;
            }
        }
        Ok(id)
    }

    fn input_slot(
        &self,
        p: &OpProto,
        name: Name,
        ir: usize,
        src: Option<OutPort>,
    ) -> Result<InputSlot> {
        let desc: SharedDesc = match src {
            Some(src) => {
                let out = self
                    .graph
                    .out_desc_shared(src)
                    .map_err(|e| Error::build(format!("{}: input '{name}': {e}", p.name)))?;
                // The producer's own attributes stay with it; what a list or optional holds
                // (crate::infer::sequence) travels with the value. Without such attributes
                // the input's description is the producer's, shared until either changes.
                let is_content = crate::infer::sequence::is_content_attr;
                if out.attrs.keys().all(|k| is_content(k)) {
                    out.clone()
                } else {
                    let mut d = TensorDesc::clone(out);
                    d.attrs.retain(|k, _| is_content(k));
                    d.into()
                }
            }
            None => TensorDesc::new(DataType::UNDEFINED, Shape::scalar()).into(),
        };
        let mut slot = InputSlot::new(name, ir as u32, desc);
        slot.source = src;
        Ok(slot)
    }

    /// Sets graph output `index`.
    pub fn set_output(&mut self, port: OutPort, index: usize) -> Result<()> {
        self.graph.set_output(index, port)
    }

    /// Control edges from every `srcs` node to `dst`.
    pub fn add_control_dependency(&mut self, dst: NodeId, srcs: &[NodeId]) -> Result<()> {
        for &s in srcs {
            self.graph.add_control_edge(s, dst)?;
        }
        Ok(())
    }

    /// Finishes the graph: checks it and hands it over, leaving the builder empty.
    pub fn build_and_reset(&mut self) -> Result<Graph> {
        let name = self.graph.name.clone();
        self.graph.validate()?;
        let mut fresh = Graph::new(name);
        fresh.ops_version = self.registry.version.clone();
        self.hinted.clear();
        Ok(std::mem::replace(&mut self.graph, fresh))
    }
}

/// A declared input description is a hint when it says nothing certain: unknown rank or an
/// undefined dtype.
fn desc_is_hint(d: &TensorDesc) -> bool {
    d.shape.is_unknown_rank() || d.dtype == DataType::UNDEFINED
}

#[cfg(test)]
mod plain_call_tests {
    use super::*;

    /// Input 0 of `b`: a FLOAT `Data` of shape `dims`.
    pub(super) fn data_input(b: &mut GraphBuilder, dims: Vec<i64>) -> OutPort {
        b.create_input(
            0,
            None,
            "Data",
            DataType::FLOAT,
            Format::ND,
            Shape::new(dims),
        )
        .unwrap()
    }

    /// The same chain through `add_op` (argument vectors) and `add_op_ports`.
    fn chain(plain: bool, ops: &[&str]) -> (Graph, Vec<Result<NodeId>>) {
        let mut b = GraphBuilder::new("g");
        let x = data_input(&mut b, vec![2, 3]);
        let mut cur = x;
        let mut results = Vec::new();
        for op in ops {
            let p = b.proto(op).unwrap();
            let ports: Vec<OutPort> = (0..p.inputs.len()).map(|_| cur).collect();
            let r = if plain {
                b.add_op_ports(&p, &ports)
            } else {
                let args = OpArgs {
                    inputs: ports.iter().map(|s| vec![Some(*s)]).collect(),
                    ..Default::default()
                };
                b.add_op(op, args)
            };
            if let Ok(id) = r {
                cur = OutPort { node: id, index: 0 };
            }
            results.push(r);
        }
        b.set_output(cur, 0).unwrap();
        (b.build_and_reset().unwrap(), results)
    }

    #[test]
    fn plain_calls_make_the_same_graph_and_errors_as_argument_vectors() {
        let ops = ["Add", "Relu", "Mul", "Relu", "Add", "Concat", "Relu", "Sub"];
        let (a, ra) = chain(false, &ops);
        let (b, rb) = chain(true, &ops);
        assert_eq!(a, b);
        let names = |g: &Graph| -> Vec<String> {
            g.nodes()
                .iter()
                .map(|id| g.node(*id).unwrap().name.to_string())
                .collect()
        };
        assert_eq!(names(&a), names(&b));
        let errs = |r: &[Result<NodeId>]| -> Vec<Option<String>> {
            r.iter()
                .map(|r| r.as_ref().err().map(|e| e.to_string()))
                .collect()
        };
        assert_eq!(errs(&ra), errs(&rb));
    }

    #[test]
    fn a_plain_call_with_a_removed_producer_fails_as_the_general_one() {
        let mut b = GraphBuilder::new("g");
        let x = data_input(&mut b, vec![2]);
        let r = b.add_op(
            "Relu",
            OpArgs {
                inputs: vec![vec![Some(x)]],
                ..Default::default()
            },
        );
        let gone = OutPort {
            node: r.unwrap(),
            index: 0,
        };
        b.graph_mut().remove_node(gone.node).unwrap();
        let p = b.proto("Relu").unwrap();
        let plain = b.add_op_ports(&p, &[gone]).unwrap_err().to_string();
        let general = b
            .add_op(
                "Relu",
                OpArgs {
                    inputs: vec![vec![Some(gone)]],
                    ..Default::default()
                },
            )
            .unwrap_err()
            .to_string();
        assert_eq!(plain, general);
        // A wrong input count too.
        let two = b.add_op_ports(&p, &[x, x]).unwrap_err().to_string();
        assert!(two.contains("expected 1 inputs"), "{two}");
    }
}

#[cfg(test)]
mod shared_desc_tests {
    use super::plain_call_tests::data_input;
    use super::*;

    fn relu_of_input(b: &mut GraphBuilder) -> (OutPort, NodeId) {
        let x = data_input(b, vec![2, 3]);
        let p = b.proto("Relu").unwrap();
        (x, b.add_op_ports(&p, &[x]).unwrap())
    }

    #[test]
    fn a_graph_input_describes_its_input_and_output_once_until_either_changes() {
        let mut b = GraphBuilder::new("g");
        let x = data_input(&mut b, vec![2, 3]);
        let g = b.graph_mut();
        let n = g.node(x.node).unwrap();
        assert!(n.inputs[0].desc.is_shared_with(&n.outputs[0].desc));
        g.node_mut(x.node).unwrap().outputs[0].desc.shape = Shape::new(vec![5]);
        let n = g.node(x.node).unwrap();
        assert_eq!(n.inputs[0].desc.shape, Shape::new(vec![2, 3]));
        assert_eq!(n.outputs[0].desc.shape, Shape::new(vec![5]));
    }

    #[test]
    fn an_input_description_is_the_producers_shared_until_either_changes() {
        let mut b = GraphBuilder::new("g");
        let (x, relu) = relu_of_input(&mut b);
        let g = b.graph_mut();
        let out = g.out_desc_shared(x).unwrap().clone();
        assert!(g.node(relu).unwrap().inputs[0].desc.is_shared_with(&out));
        drop(out);
        // Changing the producer's output leaves the consumer's copy as it was (GE's OpDesc:
        // the input description is the consumer's own).
        g.node_mut(x.node).unwrap().outputs[0].desc.shape = Shape::new(vec![5]);
        let n = g.node(relu).unwrap();
        assert_eq!(n.inputs[0].desc.shape, Shape::new(vec![2, 3]));
        assert!(!n.inputs[0]
            .desc
            .is_shared_with(&g.node(x.node).unwrap().outputs[0].desc));
        // And the reverse: changing the input leaves the producer's output alone.
        let g = b.graph_mut();
        g.node_mut(relu).unwrap().inputs[0].desc.dtype = DataType::INT8;
        assert_eq!(g.out_desc(x).unwrap().dtype, DataType::FLOAT);
        assert_eq!(g.out_desc(x).unwrap().shape, Shape::new(vec![5]));
    }

    #[test]
    fn an_output_described_as_its_input_shares_it_until_either_changes() {
        let mut b = GraphBuilder::new("g");
        let (x, relu) = relu_of_input(&mut b);
        // A Cast to another dtype is described differently: an own description.
        let p = b.proto("Cast").unwrap();
        let mut args = OpArgs {
            inputs: vec![vec![Some(x)]],
            ..Default::default()
        };
        args.attrs.insert(
            "dst_type".into(),
            AttrValue::Int(DataType::INT32.value() as i64),
        );
        let cast = b.add_op_with(&p, args).unwrap();
        let g = b.graph_mut();
        let n = g.node(relu).unwrap();
        assert!(n.outputs[0].desc.is_shared_with(&n.inputs[0].desc));
        let c = g.node(cast).unwrap();
        assert!(!c.outputs[0].desc.is_shared_with(&c.inputs[0].desc));
        assert_eq!(c.outputs[0].desc.dtype, DataType::INT32);
        // Value semantics: changing the Relu's output leaves its input (and the producer's
        // output) as they were, and the reverse.
        g.node_mut(relu).unwrap().outputs[0].desc.shape = Shape::new(vec![7]);
        let n = g.node(relu).unwrap();
        assert_eq!(n.inputs[0].desc.shape, Shape::new(vec![2, 3]));
        assert_eq!(g.out_desc(x).unwrap().shape, Shape::new(vec![2, 3]));
        g.node_mut(relu).unwrap().inputs[0].desc.dtype = DataType::INT8;
        assert_eq!(g.out_desc(x).unwrap().dtype, DataType::FLOAT);
        assert_eq!(
            g.out_desc(OutPort {
                node: relu,
                index: 0
            })
            .unwrap()
            .dtype,
            DataType::FLOAT
        );
    }

    #[test]
    fn a_producer_attribute_is_not_shared_into_the_input() {
        let mut b = GraphBuilder::new("g");
        let (x, _) = relu_of_input(&mut b);
        b.graph_mut().node_mut(x.node).unwrap().outputs[0]
            .desc
            .attrs
            .insert("mine".into(), AttrValue::Int(1));
        let p = b.proto("Relu").unwrap();
        let r2 = b.add_op_ports(&p, &[x]).unwrap();
        let g = b.graph();
        let input = &g.node(r2).unwrap().inputs[0].desc;
        assert!(input.attrs.is_empty());
        assert_eq!(input.shape, Shape::new(vec![2, 3]));
        assert!(!input.is_shared_with(g.out_desc_shared(x).unwrap()));
    }

    #[test]
    fn shared_descriptions_save_and_compare_as_copies() {
        let mut b = GraphBuilder::new("g");
        let (_, relu) = relu_of_input(&mut b);
        b.set_output(
            OutPort {
                node: relu,
                index: 0,
            },
            0,
        )
        .unwrap();
        let g = b.build_and_reset().unwrap();
        let mut copy = g.clone();
        // Unshare every description of the copy: equal graphs still.
        for id in copy.nodes() {
            let n = copy.node_mut(id).unwrap();
            for i in &mut n.inputs {
                i.desc = SharedDesc::new(TensorDesc::clone(&i.desc));
            }
        }
        assert_eq!(g, copy);
        let d = SharedDesc::new(TensorDesc::new(DataType::FLOAT, Shape::new(vec![4])));
        assert_eq!(
            serde_json::to_string(&d).unwrap(),
            serde_json::to_string(&*d).unwrap()
        );
        let back: SharedDesc = serde_json::from_str(&serde_json::to_string(&d).unwrap()).unwrap();
        assert_eq!(back, d);
    }
}
