//! Shape and dtype inference: one rule per operator type, looked up by name.
//!
//! A rule sees the prototype, the attributes (defaults filled in), every input instance's
//! description and, where the producer is a constant, its value; it returns one description per
//! output instance. Unknown dims stay -1, unknown rank stays [-2]. Operators without a rule get
//! dtypes from their type variables and an unknown-rank shape.

mod collective;
mod common;
mod control;
mod conv;
mod elementwise;
pub mod image;
mod index;
pub mod layout;
mod matmul;
mod norm;
mod pool;
mod promote;
mod reduce;
mod sampling;
pub mod sequence;
mod shape;
mod source;
mod string;
mod transformer;
pub mod tree_ensemble;
pub use collective::REDUCTIONS;

use crate::attr::{AttrMap, AttrValue};
use crate::error::{Error, Result};
use crate::graph::InputSlot;
use crate::ops::{OpProto, TypeSpec};
use crate::types::{DataType, Shape, Tensor, TensorDesc};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

pub use promote::insert_promotion_casts;

/// A per-instance list the caller of a rule builds: inline up to four entries (most
/// operators), so building an [`InferCtx`] allocates nothing for its lists.
pub type PerInstance<T> = smallvec::SmallVec<[T; 4]>;

/// What a rule sees. The per-instance lists are slices of the caller's own lists
/// ([`PerInstance`]), so that a context costs no allocation.
pub struct InferCtx<'a> {
    pub proto: &'a OpProto,
    pub node_name: &'a str,
    pub attrs: &'a AttrMap,
    /// One entry per input instance; None for an absent optional input.
    pub inputs: &'a [Option<&'a TensorDesc>],
    /// The IR input index of each instance.
    pub input_ir: &'a [u32],
    /// Constant values of inputs whose producer is a Const node.
    pub consts: &'a [Option<&'a Tensor>],
    /// The IR output index of each output instance.
    pub output_ir: &'a [u32],
    /// Dtypes bound to type variables by the inputs.
    pub bound: &'a [(&'a str, DataType)],
    /// The output descriptions of each subgraph of the node, in order (If/Case: the branches).
    pub subgraph_outputs: Vec<Vec<&'a TensorDesc>>,
}

/// The descriptions of a graph's outputs (a subgraph's, for [`InferCtx::subgraph_outputs`]).
pub fn graph_output_descs(g: &crate::graph::Graph) -> Result<Vec<&TensorDesc>> {
    g.outputs.iter().map(|p| g.out_desc(*p)).collect()
}

/// An inference rule.
pub type InferFn = fn(&InferCtx) -> Result<Vec<TensorDesc>>;

/// A rule registered at run time (custom operators; may call back into Python).
pub type DynInferFn = Arc<dyn Fn(&InferCtx) -> Result<Vec<TensorDesc>> + Send + Sync>;

static CUSTOM: OnceLock<RwLock<HashMap<String, DynInferFn>>> = OnceLock::new();

/// Registers (or replaces) the inference rule of an operator type.
pub fn register_rule(op_type: &str, f: DynInferFn) {
    let m = CUSTOM.get_or_init(|| RwLock::new(HashMap::new()));
    let mut g = match m.write() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    g.insert(op_type.to_string(), f);
}

fn custom_rule(op_type: &str) -> Option<DynInferFn> {
    let m = CUSTOM.get()?;
    let g = match m.read() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    g.get(op_type).cloned()
}

impl<'a> InferCtx<'a> {
    /// An error that names the operator and node.
    pub fn err(&self, msg: impl std::fmt::Display) -> Error {
        Error::infer(format!("{} '{}': {msg}", self.proto.name, self.node_name))
    }

    fn ir_index(&self, name: &str) -> Result<usize> {
        self.proto
            .input(name)
            .map(|(i, _)| i)
            .ok_or_else(|| self.err(format!("the prototype has no input '{name}'")))
    }

    /// The instances of an IR input, in order (a `None` for an instance without a description).
    fn instances(&self, name: &str) -> Result<impl Iterator<Item = Option<&'a TensorDesc>> + '_> {
        let ir = self.ir_index(name)? as u32;
        Ok(self
            .input_ir
            .iter()
            .zip(self.inputs)
            .filter(move |(i, _)| **i == ir)
            .map(|(_, d)| *d))
    }

    /// The name of the prototype's input `k`, `default` when it has fewer inputs.
    pub fn input_name(&self, k: usize, default: &'a str) -> &'a str {
        self.proto
            .inputs
            .get(k)
            .map(|d| d.name.as_str())
            .unwrap_or(default)
    }

    /// First instance of an IR input (None if absent).
    pub fn input(&self, name: &str) -> Result<Option<&'a TensorDesc>> {
        Ok(self.instances(name)?.next().flatten())
    }

    /// A required input's description.
    pub fn req(&self, name: &str) -> Result<&'a TensorDesc> {
        self.input(name)?
            .ok_or_else(|| self.err(format!("input '{name}' is missing")))
    }

    /// Every instance of a (dynamic) IR input.
    pub fn inputs_of(&self, name: &str) -> Result<Vec<&'a TensorDesc>> {
        Ok(self.instances(name)?.flatten().collect())
    }

    /// The constant value of the first instance of an IR input, when known.
    pub fn const_of(&self, name: &str) -> Result<Option<&'a Tensor>> {
        let ir = self.ir_index(name)? as u32;
        Ok(self
            .input_ir
            .iter()
            .position(|&i| i == ir)
            .and_then(|p| self.consts[p]))
    }

    /// Integer values of a constant input, when known.
    pub fn const_ints(&self, name: &str) -> Result<Option<Vec<i64>>> {
        match self.const_of(name)? {
            Some(t) => Ok(Some(
                t.to_i64_vec()
                    .map_err(|e| self.err(format!("input '{name}': {e}")))?,
            )),
            None => Ok(None),
        }
    }

    pub fn attr(&self, name: &str) -> Result<&'a AttrValue> {
        self.attrs
            .get(name)
            .ok_or_else(|| self.err(format!("attribute '{name}' is not set")))
    }
    /// An attribute read by `get` (one of [`AttrValue`]'s `as_*`), an error naming the kind
    /// `what` when it is of another kind.
    fn attr_as<T>(
        &self,
        name: &str,
        what: &str,
        get: impl FnOnce(&'a AttrValue) -> Option<T>,
    ) -> Result<T> {
        get(self.attr(name)?).ok_or_else(|| self.err(format!("attribute '{name}' is not {what}")))
    }
    pub fn attr_int(&self, name: &str) -> Result<i64> {
        self.attr_as(name, "an Int", AttrValue::as_int)
    }
    pub fn attr_float(&self, name: &str) -> Result<f32> {
        self.attr_as(name, "a Float", AttrValue::as_float)
    }
    pub fn attr_bool(&self, name: &str) -> Result<bool> {
        self.attr_as(name, "a Bool", AttrValue::as_bool)
    }
    pub fn attr_str(&self, name: &str) -> Result<&'a str> {
        self.attr_as(name, "a String", AttrValue::as_str)
    }
    pub fn attr_ints(&self, name: &str) -> Result<&'a [i64]> {
        self.attr_as(name, "a ListInt", AttrValue::as_list_int)
    }
    pub fn attr_type(&self, name: &str) -> Result<DataType> {
        self.attr_as(name, "a Type", AttrValue::as_type)
    }

    /// The dtype an output's type spec gets from the inputs, if bound.
    pub fn output_dtype(&self, out_ir: usize) -> DataType {
        match self.proto.outputs.get(out_ir).map(|o| &o.ty) {
            Some(TypeSpec::Var(v)) => self.bound_type(v).unwrap_or(DataType::UNDEFINED),
            Some(TypeSpec::List(l)) if l.len() == 1 => l[0],
            _ => DataType::UNDEFINED,
        }
    }

    /// The dtype bound to a type variable by the inputs.
    pub fn bound_type(&self, var: &str) -> Option<DataType> {
        self.bound.iter().find(|(k, _)| *k == var).map(|(_, d)| *d)
    }

    /// Number of output instances.
    pub fn num_outputs(&self) -> usize {
        self.output_ir.len()
    }

    /// One description per output instance: each from its type spec, with `shape`.
    pub fn outputs_like(&self, shape: Shape) -> Vec<TensorDesc> {
        self.output_ir
            .iter()
            .map(|&ir| TensorDesc::new(self.output_dtype(ir as usize), shape.clone()))
            .collect()
    }

    /// Normalises an axis into [0, rank); errors name the attribute/input. A scalar has no
    /// axis, so every axis is out of range for rank 0.
    pub fn axis(&self, axis: i64, rank: usize, what: &str) -> Result<usize> {
        let r = rank as i64;
        let a = if axis < 0 { axis + r } else { axis };
        if a < 0 || a >= r {
            return Err(self.err(format!("{what} {axis} is out of range for rank {rank}")));
        }
        Ok(a as usize)
    }
}

/// Numpy-style broadcast of two shapes with unknown dims and ranks
/// ([`crate::opmath::broadcast_dims`]).
pub fn broadcast(a: &Shape, b: &Shape) -> std::result::Result<Shape, String> {
    if a.is_unknown_rank() || b.is_unknown_rank() {
        return Ok(Shape::unknown_rank());
    }
    crate::opmath::broadcast_dims(a.dims(), b.dims())
        .map(Shape::from)
        .map_err(|crate::opmath::Mismatch(x, y)| {
            format!("shapes {a} and {b} cannot be broadcast (dim {x} vs {y})")
        })
}

/// The rule tables, one per operator family; each family file registers its operators in its
/// `rule` table.
const FAMILIES: &[fn(&str) -> Option<InferFn>] = &[
    source::rule,
    elementwise::rule,
    reduce::rule,
    matmul::rule,
    conv::rule,
    pool::rule,
    norm::rule,
    shape::rule,
    index::rule,
    sampling::rule,
    control::rule,
    sequence::rule,
    transformer::rule,
    collective::rule,
    string::rule,
    image::rule,
    tree_ensemble::rule,
];

/// The built-in rule of an operator type, if it has one.
pub fn builtin_rule(op_type: &str) -> Option<InferFn> {
    FAMILIES.iter().find_map(|rule| rule(op_type))
}

/// Runs inference for one node. Rules are looked up: run-time registered, then built-in,
/// then the default (type variables, unknown rank).
pub fn infer(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let out = if let Some(f) = custom_rule(&ctx.proto.name) {
        f(ctx)?
    } else if let Some(f) = builtin_rule(&ctx.proto.name) {
        f(ctx)?
    } else {
        ctx.outputs_like(Shape::unknown_rank())
    };
    if out.len() != ctx.num_outputs() {
        return Err(ctx.err(format!(
            "inference produced {} outputs, the node has {}",
            out.len(),
            ctx.num_outputs()
        )));
    }
    let mut out = out;
    carry_format(ctx, &mut out);
    Ok(out)
}

/// Operators whose outputs keep the layout of their inputs (GE's format inference treats them as
/// format-insensitive and carries a neighbour's origin format through them; GE's default
/// InferFormat gives every input and output the first non-ND format): element-wise unary math
/// and activations, element-wise binary and ternary ops, Cast and copies. Ops that move, add or
/// drop dims (Transpose, Reshape, (Un)Squeeze, reductions, ...) and ops reading a channel from a
/// format (PRelu, BiasAdd, BatchNorm, ...) are not in the list.
pub const LAYOUT_AGNOSTIC: &[&str] = &[
    // Unary math.
    "Abs",
    "Acos",
    "Acosh",
    "Asin",
    "Asinh",
    "Atan",
    "Atanh",
    "Ceil",
    "Cos",
    "Cosh",
    "Erf",
    "Exp",
    "Expm1",
    "Floor",
    "Invert",
    "IsInf",
    "IsNan",
    "Log",
    "Log1p",
    "LogicalNot",
    "Neg",
    "Reciprocal",
    "Round",
    "Rsqrt",
    "Sign",
    "Sin",
    "Sinh",
    "Sqrt",
    "Square",
    "Tan",
    // Activations.
    "Elu",
    "Gelu",
    "GeluV2",
    "HardSigmoid",
    "LeakyRelu",
    "Mish",
    "Relu",
    "Relu6",
    "Selu",
    "Sigmoid",
    "Softplus",
    "Softsign",
    "Swish",
    "Tanh",
    // Binary and ternary element-wise ops.
    "Add",
    "AddV2",
    "Atan2",
    "BitwiseAnd",
    "BitwiseOr",
    "BitwiseXor",
    "Div",
    "DivNoNan",
    "Equal",
    "FloorDiv",
    "FloorMod",
    "Greater",
    "GreaterEqual",
    "Less",
    "LessEqual",
    "LogicalAnd",
    "LogicalOr",
    "Maximum",
    "Minimum",
    "Mod",
    "Mul",
    "NotEqual",
    "Pow",
    "RealDiv",
    "SquaredDifference",
    "Sub",
    "Addcmul",
    "ClipByValue",
    "Select",
    "SelectV2",
    "FusedMulAdd",
    // Dtype changes and copies.
    "Cast",
    "Identity",
    "TensorMove",
    "ZerosLike",
    "Fills",
];

/// GE's forward format inference for a [`LAYOUT_AGNOSTIC`] operator: each output its rule left
/// without a format (ND) takes the format the inputs state (origin format, else format) when
/// every input stating one states the same NCHW-like layout (not an internal format such as
/// NC1HWC0). Scalar inputs state nothing (GE: a scalar has no format semantics); an input of
/// another rank than the output (a broadcast operand) stops the propagation. Shapes are not
/// touched.
fn carry_format(ctx: &InferCtx, out: &mut [TensorDesc]) {
    use crate::types::Format;
    // Most graphs state no format at all: settle that before scanning the operator list, which
    // runs on every op a builder adds.
    let states_one = |d: &TensorDesc| !matches!(layout::stated(d), Format::ND | Format::RESERVED);
    if !ctx.inputs.iter().flatten().any(|d| states_one(d)) {
        return;
    }
    if !LAYOUT_AGNOSTIC.contains(&ctx.proto.name.as_str()) {
        return;
    }
    let mut found: Option<Format> = None;
    for d in ctx.inputs.iter().flatten() {
        let rank = d.shape.rank();
        if rank == Some(0) {
            continue;
        }
        if out
            .iter()
            .filter_map(|o| o.shape.rank())
            .any(|r| rank.is_some_and(|x| x != r))
        {
            return;
        }
        let f = layout::stated(d);
        if f == Format::ND || f == Format::RESERVED {
            continue;
        }
        if !layout::is_origin_layout(f) || found.is_some_and(|g| g != f) {
            return;
        }
        found = Some(f);
    }
    let Some(f) = found else { return };
    for o in out.iter_mut() {
        if o.shape.rank() == Some(0) {
            continue;
        }
        if layout::stated(o) == Format::ND {
            o.format = f;
            o.origin_format = f;
        }
    }
}

/// Operators whose two operands may have different dtypes: they are computed in the dtype
/// [`DataType::promote`] gives (GE: Add's dtype inference; the aclnn element-wise and comparison
/// kernels promote the same way). The output takes that dtype (comparisons give bool).
pub fn promotes(op_type: &str) -> bool {
    matches!(
        op_type,
        "Add"
            | "AddV2"
            | "Sub"
            | "Mul"
            | "Div"
            | "RealDiv"
            | "Maximum"
            | "Minimum"
            | "Equal"
            | "NotEqual"
            | "Less"
            | "LessEqual"
            | "Greater"
            | "GreaterEqual"
    )
}

/// Checks the dtype of every connected input instance against the prototype and binds type
/// variables (for a [`promotes`] operator, to the operands' promoted dtype). Instances whose
/// dtype is UNDEFINED are skipped.
pub fn bind_types<'a>(
    proto: &'a OpProto,
    slots: &[InputSlot],
) -> Result<PerInstance<(&'a str, DataType)>> {
    let mut bound: PerInstance<(&'a str, DataType, usize)> = PerInstance::new();
    for (k, slot) in slots.iter().enumerate() {
        if slot.source.is_none() || slot.desc.dtype == DataType::UNDEFINED {
            continue;
        }
        let d = &slot.desc;
        let Some(def) = proto.inputs.get(slot.ir_index as usize) else {
            continue;
        };
        if let Some(allowed) = proto.allowed(&def.ty) {
            if !allowed.contains(&d.dtype) {
                let list: Vec<&str> = allowed.iter().map(|t| t.name()).collect();
                return Err(Error::build(format!(
                    "{}: input '{}' has dtype {}, expected one of [{}]",
                    proto.name,
                    slot.name,
                    d.dtype,
                    list.join(", ")
                )));
            }
        }
        if let TypeSpec::Var(v) = &def.ty {
            match bound.iter_mut().find(|(name, _, _)| *name == v.as_str()) {
                Some((_, t, from)) if *t != d.dtype => {
                    let promoted = if promotes(&proto.name) {
                        t.promote(d.dtype)
                    } else {
                        None
                    };
                    match promoted {
                        Some(p) if proto.allowed(&def.ty).is_some_and(|a| !a.contains(&p)) => {
                            return Err(Error::build(format!(
                                "{}: inputs '{}' ({}) and '{}' ({}) promote to {p}, which {} does \
                                 not take",
                                proto.name, slots[*from].name, t, slot.name, d.dtype, proto.name
                            )));
                        }
                        Some(p) => *t = p,
                        None if promotes(&proto.name) => {
                            return Err(Error::build(format!(
                                "{}: input '{}' has dtype {}, input '{}' has {}, and GE has no \
                                 common dtype for the two",
                                proto.name, slot.name, d.dtype, slots[*from].name, t
                            )));
                        }
                        None => {
                            return Err(Error::build(format!(
                                "{}: input '{}' has dtype {}, but input '{}' has {} and both must \
                                 have the same dtype (type {})",
                                proto.name, slot.name, d.dtype, slots[*from].name, t, v
                            )));
                        }
                    }
                }
                Some(_) => {}
                None => bound.push((v.as_str(), d.dtype, k)),
            }
        }
    }
    Ok(bound.into_iter().map(|(k, t, _)| (k, t)).collect())
}

/// Re-infers one node of a graph: copies each connected input's description from its producer,
/// checks the input dtypes, runs the node's rule and writes the output descriptions. Data-like
/// nodes, constants and ops without a prototype in the global library keep their descriptions.
pub fn infer_node(graph: &mut crate::graph::Graph, id: crate::graph::NodeId) -> Result<()> {
    let reg = crate::ops::global_registry();
    let (op_type, sources) = {
        let n = graph.node(id)?;
        let sources: Vec<Option<crate::graph::OutPort>> =
            n.inputs.iter().map(|i| i.source).collect();
        (n.op_type.clone(), sources)
    };
    if crate::graph::is_data_op(&op_type) || op_type == "Const" || op_type == "Constant" {
        return Ok(());
    }
    let Some(proto) = reg.get(&op_type) else {
        return Ok(());
    };
    let mut descs = Vec::with_capacity(sources.len());
    for s in &sources {
        descs.push(match s {
            Some(p) => Some(graph.out_desc(*p)?.clone()),
            None => None,
        });
    }
    {
        let n = graph.node_mut(id)?;
        for (slot, d) in n.inputs.iter_mut().zip(descs) {
            if let Some(d) = d {
                slot.desc.set(d);
            }
        }
    }
    let n = graph.node(id)?;
    let bound = bind_types(proto, &n.inputs)?;
    let consts: PerInstance<Option<&Tensor>> = n
        .inputs
        .iter()
        .map(|s| {
            s.source
                .and_then(|src| graph.node(src.node).ok())
                .and_then(crate::graph::Node::const_value)
        })
        .collect();
    let mut attrs = n.attrs.clone();
    for a in &proto.attrs {
        if let (false, Some(v)) = (attrs.contains_key(a.name.as_str()), a.default.as_ref()) {
            attrs.insert(a.name.clone(), v.clone());
        }
    }
    let inputs: PerInstance<_> = n
        .inputs
        .iter()
        .map(|s| s.source.map(|_| &*s.desc))
        .collect();
    let input_ir: PerInstance<_> = n.inputs.iter().map(|s| s.ir_index).collect();
    let output_ir: PerInstance<_> = n.outputs.iter().map(|o| o.ir_index).collect();
    let ctx = InferCtx {
        proto,
        node_name: &n.name,
        attrs: &attrs,
        inputs: &inputs,
        input_ir: &input_ir,
        consts: &consts,
        output_ir: &output_ir,
        bound: &bound,
        subgraph_outputs: n
            .subgraphs
            .iter()
            .map(|s| graph_output_descs(&s.graph))
            .collect::<Result<_>>()?,
    };
    let out = infer(&ctx)?;
    drop(ctx);
    drop((inputs, input_ir, consts, output_ir, bound, attrs));
    let n = graph.node_mut(id)?;
    for (slot, d) in n.outputs.iter_mut().zip(out) {
        slot.desc.set(d);
    }
    Ok(())
}

/// Re-infers every node of a graph in topological order (see [`infer_node`]).
/// An error names the program line that built the failing node where the front end recorded
/// it ([`Node::built_at`](crate::graph::Node::built_at)).
pub fn infer_graph(graph: &mut crate::graph::Graph) -> Result<()> {
    for id in graph.topo_order()? {
        if let Err(e) = infer_node(graph, id) {
            return Err(match graph.node(id).ok().and_then(|n| n.built_at.clone()) {
                Some(at) => Error::infer(format!("{e} (the node was built at {at})")),
                None => e,
            });
        }
    }
    Ok(())
}
