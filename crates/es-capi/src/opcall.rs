//! One `Es<Op>` call: the generated functions (`ops_generated.rs`) collect their C arguments
//! here in prototype order and [`OpCall::finish`] adds the node through es-core's builder,
//! which validates and infers it.
//!
//! Ownership: a subgraph (`EsCGraph *`) or Tensor attribute (`EsCTensor *`) passed to an
//! `Es<Op>` belongs to ge-rs from the call on, whether the call succeeds or not (GE's rule);
//! the generated functions take them over first, before any check can fail.

use crate::builder::{builder_mut, holder_ref, EsCGraphBuilder, EsCTensorHolder};
use crate::error::{CError, CResult};
use crate::ffi::{c_str, dtype, slice, C_DataType};
use crate::graph::EsCGraph;
use crate::tensor::EsCTensor;
use es_core::builder::OpArgs;
use es_core::ops::IoKind;
use es_core::{AttrValue, Graph, NodeId, OutPort, Tensor};
use std::collections::HashMap;
use std::ffi::c_char;

/// The arguments of one operator call, gathered from C.
pub struct OpCall {
    op: &'static str,
    owner: *mut EsCGraphBuilder,
    /// By IR name: a call made through an older signature may lack inputs added since.
    inputs: Vec<(String, Vec<Option<OutPort>>)>,
    attrs: Vec<(&'static str, AttrValue)>,
    subgraphs: Vec<(String, Vec<Graph>)>,
    out_nums: HashMap<String, usize>,
    /// The failure of the call made just before this one, if it failed (see `finish`).
    previous: Option<String>,
    /// Whether a single input was given as NULL.
    null_input: bool,
}

/// The node an [`OpCall`] added, for the generated function's return value.
pub struct Added<'a> {
    b: &'a mut EsCGraphBuilder,
    node: NodeId,
    /// Output ports by IR output.
    ports: Vec<Vec<OutPort>>,
}

/// Takes over a subgraph argument (NULL: None).
pub unsafe fn take_graph(p: *mut EsCGraph) -> Option<Graph> {
    EsCGraph::take(p, "").ok()
}

/// Takes over a dynamic subgraph argument: every non-NULL graph of the array.
pub unsafe fn take_graphs(
    p: *mut *mut EsCGraph,
    n: i64,
    what: &str,
) -> CResult<Vec<Option<Graph>>> {
    Ok(slice(p, n, what)?.iter().map(|&g| take_graph(g)).collect())
}

/// Takes over a Tensor attribute argument (NULL: None).
pub unsafe fn take_tensor(p: *mut EsCTensor) -> Option<Tensor> {
    EsCTensor::take(p)
}

impl OpCall {
    pub fn new(op: &'static str) -> Self {
        OpCall {
            op,
            owner: std::ptr::null_mut(),
            inputs: Vec::new(),
            attrs: Vec::new(),
            subgraphs: Vec::new(),
            out_nums: HashMap::new(),
            previous: crate::error::previous_failure(),
            null_input: false,
        }
    }

    fn err(&self, m: impl std::fmt::Display) -> CError {
        CError::arg(format!("Es{}: {m}", self.op))
    }

    /// Records the builder of a holder: every input of a call must share one builder.
    unsafe fn port_of(&mut self, h: *mut EsCTensorHolder, what: &str) -> CResult<OutPort> {
        let (h, b) = holder_ref(h, what).map_err(|e| self.err(e.message))?;
        let b: *mut EsCGraphBuilder = b;
        if self.owner.is_null() {
            self.owner = b;
        } else if self.owner != b {
            return Err(self.err(format!(
                "{what} belongs to another graph builder than the other inputs"
            )));
        }
        h.port()
            .map_err(|e| self.err(format!("{what}: {}", e.message)))
    }

    /// A required or optional input (NULL: absent; the builder refuses a missing required one).
    pub unsafe fn input(&mut self, h: *mut EsCTensorHolder, name: &str) -> CResult<()> {
        self.null_input |= h.is_null();
        let port = if h.is_null() {
            None
        } else {
            Some(self.port_of(h, name)?)
        };
        self.inputs.push((name.to_string(), vec![port]));
        Ok(())
    }

    /// A dynamic input: `n` holders at `hs`.
    pub unsafe fn dynamic_input(
        &mut self,
        hs: *mut *mut EsCTensorHolder,
        n: i64,
        name: &str,
    ) -> CResult<()> {
        let hs = slice(hs, n, name).map_err(|e| self.err(e.message))?;
        let mut ports = Vec::with_capacity(hs.len());
        for (i, &h) in hs.iter().enumerate() {
            ports.push(Some(self.port_of(h, &format!("{name}[{i}]"))?));
        }
        self.inputs.push((name.to_string(), ports));
        Ok(())
    }

    /// The builder given explicitly (operators without inputs, or with only optional ones).
    pub unsafe fn owner(&mut self, b: *mut EsCGraphBuilder) -> CResult<()> {
        if b.is_null() {
            if self.owner.is_null() {
                return Err(self.err("owner_graph_builder is NULL and no input names a builder"));
            }
            return Ok(());
        }
        if !self.owner.is_null() && self.owner != b {
            return Err(self.err("owner_graph_builder is not the builder of the inputs"));
        }
        self.owner = b;
        Ok(())
    }

    /// The instance count of dynamic output `name` (`<name>_num`).
    pub fn output_num(&mut self, name: &str, n: i64) -> CResult<()> {
        let n = usize::try_from(n)
            .map_err(|_| self.err(format!("{name}_num must be >= 0, got {n}")))?;
        self.out_nums.insert(name.to_string(), n);
        Ok(())
    }

    /// A static subgraph taken over by [`take_graph`].
    pub fn subgraph(&mut self, g: Option<Graph>, name: &str) -> CResult<()> {
        let g = g.ok_or_else(|| self.err(format!("subgraph {name} is NULL")))?;
        self.subgraphs.push((name.to_string(), vec![g]));
        Ok(())
    }

    /// A dynamic subgraph taken over by [`take_graphs`].
    pub fn subgraphs(&mut self, gs: Vec<Option<Graph>>, name: &str) -> CResult<()> {
        let mut v = Vec::with_capacity(gs.len());
        for (i, g) in gs.into_iter().enumerate() {
            v.push(g.ok_or_else(|| self.err(format!("subgraph {name}[{i}] is NULL")))?);
        }
        self.subgraphs.push((name.to_string(), v));
        Ok(())
    }

    /// An attribute value; an optional one equal to its default counts as not set (GE's rule).
    pub fn attr(&mut self, name: &'static str, v: CResult<AttrValue>) -> CResult<()> {
        let v = v.map_err(|e| self.err(format!("attribute '{name}': {}", e.message)))?;
        self.attrs.push((name, v));
        Ok(())
    }

    /// A Tensor attribute taken over by [`take_tensor`]; NULL keeps the default.
    pub fn tensor_attr(&mut self, name: &'static str, t: Option<Tensor>) -> CResult<()> {
        if let Some(t) = t {
            self.attrs.push((name, AttrValue::Tensor(t)));
        }
        Ok(())
    }

    /// Adds the node.
    pub unsafe fn finish<'a>(self) -> CResult<Added<'a>> {
        let previous = self.previous.clone().filter(|_| self.null_input);
        let b = match builder_mut(self.owner) {
            Ok(b) => b,
            Err(_) if self.null_input => {
                return Err(chain(self.err("every input is NULL"), &previous))
            }
            Err(_) => return Err(self.err("no input names a graph builder")),
        };
        let proto = b.b.proto(self.op)?;
        // In the current prototype's order; inputs an older signature lacks are absent.
        let mut given = self.inputs;
        let inputs = proto
            .inputs
            .iter()
            .map(|d| match take_named(&mut given, &d.name) {
                Some(v) => v,
                None if d.kind == IoKind::Dynamic => Vec::new(),
                None => vec![None],
            })
            .collect();
        let mut graphs = self.subgraphs;
        let subgraphs = proto
            .subgraphs
            .iter()
            .map(|d| take_named(&mut graphs, &d.name).unwrap_or_default())
            .collect();
        if let Some((n, _)) = given.first() {
            return Err(CError::new(
                crate::error::ES_ERR_BUILD,
                format!("Es{}: the operator library has no input '{n}'", self.op),
            ));
        }
        let mut args = OpArgs {
            inputs,
            subgraphs,
            output_counts: self.out_nums,
            ..Default::default()
        };
        for (name, v) in self.attrs {
            let is_default = proto.attr(name).and_then(|d| d.default.as_ref()) == Some(&v);
            if !is_default {
                args.attrs.insert(name.to_string(), v);
            }
        }
        let node =
            b.b.add_op(self.op, args)
                .map_err(|e| chain(e.into(), &previous))?;
        let n = b.b.graph().node(node)?;
        let mut ports = vec![Vec::new(); proto.outputs.len()];
        for (i, o) in n.outputs.iter().enumerate() {
            ports[o.ir_index as usize].push(OutPort {
                node,
                index: i as u32,
            });
        }
        Ok(Added { b, node, ports })
    }
}

/// A NULL input usually comes from a failed call just before: `previous` (set when an input
/// was NULL and the call before failed) says why that one failed.
fn chain(mut e: CError, previous: &Option<String>) -> CError {
    if let Some(prev) = previous {
        e.message = format!(
            "{} (an input is NULL; the call before failed: {prev})",
            e.message
        );
    }
    e
}

/// Removes and returns the value named `name`.
fn take_named<T>(v: &mut Vec<(String, T)>, name: &str) -> Option<T> {
    let i = v.iter().position(|(n, _)| n == name)?;
    Some(v.swap_remove(i).1)
}

impl Added<'_> {
    /// The holder of IR output `ir` (a plain output).
    pub fn one(&mut self, ir: usize) -> *mut EsCTensorHolder {
        match self.ports.get(ir).and_then(|v| v.first()) {
            Some(p) => self.b.holder(p.node, Some(p.index)),
            None => std::ptr::null_mut(),
        }
    }
    /// The holders of dynamic IR output `ir` and their count.
    pub fn many(&mut self, ir: usize) -> (*mut *mut EsCTensorHolder, i64) {
        let ports = self.ports.get(ir).cloned().unwrap_or_default();
        self.b.holder_array(&ports)
    }
    /// A holder for a node without outputs (for control edges).
    pub fn node_only(&mut self) -> *mut EsCTensorHolder {
        self.b.holder(self.node, None)
    }
}

// ---- attribute values from C arguments ----------------------------------------------------

pub fn a_int(v: i64) -> CResult<AttrValue> {
    Ok(AttrValue::Int(v))
}
pub fn a_float(v: f32) -> CResult<AttrValue> {
    Ok(AttrValue::Float(v))
}
pub fn a_bool(v: bool) -> CResult<AttrValue> {
    Ok(AttrValue::Bool(v))
}
pub unsafe fn a_str(v: *const c_char) -> CResult<AttrValue> {
    c_str(v, "the string").map(AttrValue::String)
}
pub fn a_type(v: C_DataType) -> CResult<AttrValue> {
    dtype(v).map(AttrValue::Type)
}
pub unsafe fn a_list_int(p: *const i64, n: i64) -> CResult<AttrValue> {
    Ok(AttrValue::ListInt(slice(p, n, "the list")?.to_vec()))
}
pub unsafe fn a_list_float(p: *const f32, n: i64) -> CResult<AttrValue> {
    Ok(AttrValue::ListFloat(slice(p, n, "the list")?.to_vec()))
}
pub unsafe fn a_list_bool(p: *const bool, n: i64) -> CResult<AttrValue> {
    Ok(AttrValue::ListBool(slice(p, n, "the list")?.to_vec()))
}
pub unsafe fn a_list_type(p: *const C_DataType, n: i64) -> CResult<AttrValue> {
    let v = slice(p, n, "the list")?
        .iter()
        .map(|&t| dtype(t))
        .collect::<CResult<Vec<_>>>()?;
    Ok(AttrValue::ListType(v))
}
pub unsafe fn a_list_list_int(
    p: *const *const i64,
    n: i64,
    inner: *const i64,
) -> CResult<AttrValue> {
    let rows = slice(p, n, "the list")?;
    let lens = slice(inner, n, "the inner sizes")?;
    let mut v = Vec::with_capacity(rows.len());
    for (i, (&r, &l)) in rows.iter().zip(lens).enumerate() {
        v.push(slice(r, l, &format!("row {i}"))?.to_vec());
    }
    Ok(AttrValue::ListListInt(v))
}
pub unsafe fn a_list_str(p: *const *const c_char, n: i64) -> CResult<AttrValue> {
    let v = slice(p, n, "the list")?
        .iter()
        .enumerate()
        .map(|(i, &s)| c_str(s, &format!("element {i}")))
        .collect::<CResult<Vec<_>>>()?;
    Ok(AttrValue::ListString(v))
}
