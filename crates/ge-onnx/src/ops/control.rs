//! Control flow: If, Loop, Scan.
//!
//! If becomes GE's If with the two branches as subgraphs (captured outer values are extra
//! inputs, see [`unify_captures`]). Loop and Scan become GE's While: the loop values are the
//! iteration counter, the trip count, the condition (Loop), the loop-carried values, the scan
//! inputs (Scan), two accumulators per scan output (the elements so far, flattened, and the
//! shape of the last element) and the captured outer values, passed through unchanged. The
//! ONNX body is translated as a subgraph and then rewired in place into the While body.

use super::util::{Out, Translator};
use crate::error::{Error, Result};
use crate::proto::GraphProto;
use crate::translate::{known_values, unify_captures, NodeCtx, Subgraph};
use crate::types::desc_from_type;
use es_core::graph::is_data_op;
use es_core::{
    AttrValue, DataType, Format, Graph, GraphBuilder, InPort, NodeId, OpArgs, OutPort, Shape,
    TensorDesc,
};
use rustc_hash::FxHashMap;

/// The family's translators.
pub(super) const TABLE: &[(&str, Translator)] =
    &[("If", if_op), ("Loop", loop_op), ("Scan", scan_op)];

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

impl NodeCtx<'_> {
    /// `p` reshaped to a scalar.
    fn as_scalar(&mut self, p: OutPort) -> Result<OutPort> {
        if self.desc(p)?.shape.is_scalar() {
            return Ok(p);
        }
        let s = self.const_i64(&[], &[0])?;
        self.op1("Reshape", &[p, s], vec![])
    }

    /// `p` with the same value and dtype but a description whose dims are unknown (its rank
    /// kept): for the initial value of a loop value whose shape changes, since a While's
    /// outputs are inferred with the descriptions of its inputs.
    fn relax(&mut self, p: OutPort) -> Result<OutPort> {
        let s = self.op1("Shape", &[p], vec![("dtype", AttrValue::Int(i64dt()))])?;
        self.op1("Reshape", &[p, s], vec![])
    }

    /// Element `i` of the 1-D tensor `p`, as a scalar.
    fn element(&mut self, p: OutPort, i: i64) -> Result<OutPort> {
        let idx = self.const_i64(&[i], &[])?;
        let axis = self.const_i64(&[0], &[])?;
        self.op1("GatherV2", &[p, idx, axis], vec![])
    }

    /// A node with subgraphs and `n_out` outputs of its dynamic output.
    fn op_with_subgraphs(
        &mut self,
        op_type: &str,
        inputs: Vec<Vec<Option<OutPort>>>,
        subgraphs: Vec<Vec<Graph>>,
        n_out: usize,
    ) -> Result<Vec<OutPort>> {
        let name = self.fresh_name(op_type);
        let mut counts = std::collections::HashMap::new();
        counts.insert("output".to_string(), n_out);
        self.add(
            op_type,
            OpArgs {
                inputs,
                attrs: Default::default(),
                subgraphs,
                output_counts: counts,
                name: Some(name),
            },
        )
    }
}

fn i64dt() -> i64 {
    DataType::INT64.value() as i64
}

pub(super) fn scalar_desc(dt: DataType) -> TensorDesc {
    TensorDesc::new(dt, Shape::scalar())
}

/// Data nodes of `g` by their index.
fn data_by_index(g: &Graph) -> Result<Vec<(i64, NodeId)>> {
    let mut v = Vec::new();
    for id in g.input_nodes() {
        let n = g.node(id)?;
        if !is_data_op(&n.op_type) {
            continue;
        }
        let idx = n
            .attrs
            .get("index")
            .and_then(AttrValue::as_int)
            .unwrap_or(0);
        v.push((idx, id));
    }
    Ok(v)
}

/// Moves every consumer of `old` (and graph outputs equal to it) to `new`.
pub(super) fn redirect(g: &mut Graph, old: OutPort, new: OutPort) -> Result<()> {
    let consumers: Vec<InPort> = g
        .node(old.node)?
        .outputs
        .get(old.index as usize)
        .map(|o| o.consumers.clone())
        .unwrap_or_default();
    for c in consumers {
        g.remove_data_edge(old, c)?;
        g.add_data_edge(new, c)?;
    }
    for o in g.outputs.iter_mut() {
        if *o == old {
            *o = new;
        }
    }
    Ok(())
}

/// The rewiring of a translated ONNX body into a While body: what each of its Data indexes
/// becomes, and the loop values it lacks.
pub(super) struct Rewire {
    /// Old Data index → new index; None: the Data node is replaced (see `replace`).
    pub(super) map: Box<dyn Fn(i64) -> Option<i64>>,
    /// New Data nodes: (index, description, name).
    pub(super) new_inputs: Vec<(i64, TensorDesc, String)>,
}

/// Renumbers the Data nodes of `sub` and adds the new ones; returns the builder over the
/// graph, the ports of the Data nodes by new index, and the Data nodes that were dropped
/// (old index → port, still in the graph).
pub(super) type Rewired = (
    GraphBuilder,
    FxHashMap<i64, OutPort>,
    FxHashMap<i64, OutPort>,
);

/// The lookup of the rewired body's input ports of an `op` node.
pub(super) fn body_port<'p>(
    ports: &'p FxHashMap<i64, OutPort>,
    op: &'p str,
) -> impl Fn(i64) -> Result<OutPort> + 'p {
    move |i| {
        ports
            .get(&i)
            .copied()
            .ok_or_else(|| Error::tr(format!("internal: the {op} body has no input {i}")))
    }
}

pub(super) fn rewire(sub: Subgraph, rw: Rewire) -> Result<Rewired> {
    let mut b = GraphBuilder::new(sub.graph.name.clone());
    *b.graph_mut() = sub.graph;
    let mut ports = FxHashMap::default();
    let mut dropped = FxHashMap::default();
    for (old, id) in data_by_index(b.graph())? {
        let port = OutPort { node: id, index: 0 };
        match (rw.map)(old) {
            Some(new) => {
                b.graph_mut()
                    .node_mut(id)?
                    .attrs
                    .insert("index".into(), AttrValue::Int(new));
                ports.insert(new, port);
            }
            None => {
                // Moved out of the way of the new indexes; removed by the caller.
                b.graph_mut()
                    .node_mut(id)?
                    .attrs
                    .insert("index".into(), AttrValue::Int(-1 - old));
                dropped.insert(old, port);
            }
        }
    }
    for (idx, d, name) in rw.new_inputs {
        let nm = b.graph().unique_name(&name);
        let attrs = d.attrs.clone();
        let p = b.create_input(idx, Some(nm), "Data", d.dtype, Format::ND, d.shape)?;
        // What a list or optional holds (see es_core::infer::sequence).
        let n = b.graph_mut().node_mut(p.node)?;
        for o in n.outputs.iter_mut() {
            o.desc.attrs.clone_from(&attrs);
        }
        ports.insert(idx, p);
    }
    Ok((b, ports, dropped))
}

pub(super) fn bop(
    b: &mut GraphBuilder,
    op: &str,
    inputs: Vec<Vec<Option<OutPort>>>,
    attrs: Vec<(&str, AttrValue)>,
) -> Result<OutPort> {
    let proto = b.proto(op)?;
    let mut inputs = inputs;
    while inputs.len() < proto.inputs.len() {
        inputs.push(vec![None]);
    }
    let id = b.add_op(
        op,
        OpArgs {
            inputs,
            attrs: attrs.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            subgraphs: Vec::new(),
            output_counts: Default::default(),
            name: None,
        },
    )?;
    Ok(OutPort { node: id, index: 0 })
}

pub(super) fn bop1(
    b: &mut GraphBuilder,
    op: &str,
    xs: &[OutPort],
    attrs: Vec<(&str, AttrValue)>,
) -> Result<OutPort> {
    bop(b, op, xs.iter().map(|p| vec![Some(*p)]).collect(), attrs)
}

pub(super) fn bconst_i64(b: &mut GraphBuilder, v: &[i64], shape: &[i64]) -> Result<OutPort> {
    Ok(b.create_const(es_core::Tensor::from_values(v, shape.to_vec())?, None)?)
}

/// In a body builder: `acc` with `x` flattened appended, and the shape of `x`.
fn accumulate(b: &mut GraphBuilder, acc: OutPort, x: OutPort) -> Result<(OutPort, OutPort)> {
    let flat = bconst_i64(b, &[-1], &[1])?;
    let xf = bop1(b, "Reshape", &[x, flat], vec![])?;
    let axis = bconst_i64(b, &[0], &[])?;
    let acc2 = bop(
        b,
        "ConcatV2",
        vec![vec![Some(acc), Some(xf)], vec![Some(axis)]],
        vec![],
    )?;
    let shp = bop1(b, "Shape", &[x], vec![("dtype", AttrValue::Int(i64dt()))])?;
    Ok((acc2, shp))
}

/// The body outputs after the loop values: per scan output `scanned[k]`, its accumulator
/// (body input `acc_at + 2k`) with it appended and its shape, then the `ncap` captured values
/// passed through (the body inputs after the accumulators).
fn push_accumulated(
    b: &mut GraphBuilder,
    port: &impl Fn(i64) -> Result<OutPort>,
    outs: &mut Vec<OutPort>,
    scanned: &[OutPort],
    acc_at: i64,
    ncap: usize,
) -> Result<()> {
    for (k, &x) in scanned.iter().enumerate() {
        let (a, s) = accumulate(b, port(acc_at + 2 * k as i64)?, x)?;
        outs.push(a);
        outs.push(s);
    }
    let caps_at = acc_at + 2 * scanned.len() as i64;
    for c in 0..ncap {
        outs.push(port(caps_at + c as i64)?);
    }
    Ok(())
}

/// The cond graph of a While over `descs`: `Less(v0, v1)`, and-ed with `v2` when `with_cond`.
fn cond_graph(descs: &[TensorDesc], with_cond: bool) -> Result<Graph> {
    let mut b = GraphBuilder::new("cond");
    let mut ports = Vec::new();
    for (i, d) in descs.iter().enumerate() {
        ports.push(b.create_input(
            i as i64,
            Some(format!("v{i}")),
            "Data",
            d.dtype,
            Format::ND,
            d.shape.clone(),
        )?);
    }
    if ports.len() < 3 {
        return Err(Error::tr(
            "internal: a While has fewer than three loop values",
        ));
    }
    let mut c = bop1(&mut b, "Less", &[ports[0], ports[1]], vec![])?;
    if with_cond {
        c = bop1(&mut b, "LogicalAnd", &[c, ports[2]], vec![])?;
    }
    b.set_output(c, 0)?;
    Ok(b.build_and_reset()?)
}

/// The description of body output `i`: as translated, else as declared.
pub(super) fn body_out_desc(
    sub: &Subgraph,
    g: &crate::proto::GraphProto,
    i: usize,
) -> Result<TensorDesc> {
    let port = *sub
        .graph
        .outputs
        .get(i)
        .ok_or_else(|| Error::tr(format!("the body has no output {i}")))?;
    let mut d = sub.graph.out_desc(port)?.clone();
    if let Some(vi) = g.output.get(i) {
        let decl = desc_from_type(vi.r#type.as_ref(), &format!("body output {i}"))?;
        if d.dtype == DataType::UNDEFINED {
            d.dtype = decl.dtype;
        }
        if d.shape.is_unknown_rank() {
            d.shape = decl.shape;
        }
    }
    Ok(d)
}

/// The initial value of a scan accumulator: an empty 1-D tensor (dims relaxed).
/// Closes the body `b` with the outputs `outs` and adds the While over the loop values `head`,
/// then each accumulator with its shape, then the captures `caps`; `with_cond`: the third loop
/// value is a condition too (see [`cond_graph`]). Returns the While's outputs.
pub(super) fn build_while(
    ctx: &mut NodeCtx<'_>,
    b: &mut GraphBuilder,
    outs: &[OutPort],
    head: Vec<OutPort>,
    accs: &[(OutPort, OutPort)],
    caps: Vec<OutPort>,
    with_cond: bool,
) -> Result<Vec<OutPort>> {
    b.graph_mut().outputs.clear();
    for (i, p) in outs.iter().enumerate() {
        b.set_output(*p, i)?;
    }
    let body_g = b.build_and_reset()?;
    let mut ins = head;
    for (a, s) in accs {
        ins.push(*a);
        ins.push(*s);
    }
    ins.extend(caps);
    let descs = ins
        .iter()
        .map(|p| ctx.desc(*p))
        .collect::<Result<Vec<_>>>()?;
    let cond_g = cond_graph(&descs, with_cond)?;
    let n = ins.len();
    ctx.op_with_subgraphs(
        "While",
        vec![ins.into_iter().map(Some).collect()],
        vec![vec![cond_g], vec![body_g]],
        n,
    )
}

/// The body inputs of the accumulators of the values `acc_descs` from body input `first` on:
/// each a flat accumulator and its shape, as `(input, description, name)`.
fn acc_inputs(acc_descs: &[TensorDesc], first: i64) -> Vec<(i64, TensorDesc, String)> {
    let mut out = Vec::with_capacity(2 * acc_descs.len());
    for (k, d) in acc_descs.iter().enumerate() {
        let base = first + 2 * k as i64;
        let acc = TensorDesc::new(d.dtype, Shape::new(vec![-1]));
        out.push((base, acc, format!("scan_acc_{k}")));
        let r = d.shape.rank().unwrap_or(0) as i64;
        let shape = TensorDesc::new(DataType::INT64, Shape::new(vec![r]));
        out.push((base + 1, shape, format!("scan_shape_{k}")));
    }
    out
}

fn acc_init(ctx: &mut NodeCtx<'_>, d: &TensorDesc, what: &str) -> Result<(OutPort, OutPort)> {
    if d.dtype == DataType::UNDEFINED {
        return Err(Error::unsupported(format!(
            "{}: the dtype of {what} must be known at import",
            ctx.op_type()
        )));
    }
    let rank = d.shape.rank().ok_or_else(|| {
        Error::unsupported(format!(
            "{}: the rank of {what} must be known at import",
            ctx.op_type()
        ))
    })?;
    let empty = ctx.constant(es_core::types::tensor_from_f64(d.dtype, vec![0], &[])?)?;
    let acc = ctx.relax(empty)?;
    // The element shape a loop that runs no iteration reports: the static dims where known
    // (1 elsewhere; the scan output has no element either way).
    let dims: Vec<i64> = d
        .shape
        .dims()
        .iter()
        .map(|&x| if x > 0 { x } else { 1 })
        .collect();
    let shp = ctx.const_i64(&dims, &[rank as i64])?;
    Ok((acc, shp))
}

/// A scan output's two accumulators: its elements so far (flattened) and the shape of the
/// last one.
type Accumulator = (OutPort, OutPort);

/// The initial accumulators of the `count` scan outputs (body outputs `first..first + count`)
/// and the descriptions of those outputs.
fn scan_accumulators(
    ctx: &mut NodeCtx<'_>,
    sub: &Subgraph,
    body: &GraphProto,
    first: usize,
    count: usize,
) -> Result<(Vec<Accumulator>, Vec<TensorDesc>)> {
    let mut accs = Vec::with_capacity(count);
    let mut descs = Vec::with_capacity(count);
    for k in 0..count {
        let d = body_out_desc(sub, body, first + k)?;
        accs.push(acc_init(ctx, &d, &format!("scan output {k}"))?);
        descs.push(d);
    }
    Ok((accs, descs))
}

/// The node's outputs from the results `res` of its While: the `carried` loop values at
/// `res[carried_at..]`, then per scan output `k` (None where the node does not use it) the
/// elements stacked from its two accumulators at `res[acc_at + 2k..]`, passed through `post`.
fn while_outputs(
    ctx: &mut NodeCtx<'_>,
    res: &[OutPort],
    (carried_at, carried): (usize, usize),
    (acc_at, scanned): (usize, usize),
    mut post: impl FnMut(&mut NodeCtx<'_>, usize, OutPort) -> Result<OutPort>,
) -> Out {
    let mut out: Vec<Option<OutPort>> = res[carried_at..carried_at + carried]
        .iter()
        .map(|&p| Some(p))
        .collect();
    for k in 0..scanned {
        if !ctx.output_used(carried + k) {
            out.push(None);
            continue;
        }
        let base = acc_at + 2 * k;
        let y = acc_result(ctx, res[base], res[base + 1], res[0])?;
        out.push(Some(post(ctx, k, y)?));
    }
    Ok(out)
}

/// A scan output from its final accumulator, shape and count.
fn acc_result(
    ctx: &mut NodeCtx<'_>,
    acc: OutPort,
    shp: OutPort,
    count: OutPort,
) -> Result<OutPort> {
    let one = ctx.const_i64(&[1], &[1])?;
    let n = ctx.op1("Reshape", &[count, one], vec![])?;
    let shape = ctx.concat(&[n, shp], 0)?;
    ctx.op1("Reshape", &[acc, shape], vec![])
}

// ---------------------------------------------------------------------------------------------
// If
// ---------------------------------------------------------------------------------------------

fn if_op(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["then_branch", "else_branch"])?;
    let then_g = ctx
        .attr_graph("then_branch")?
        .ok_or_else(|| Error::tr("If needs the attribute 'then_branch'"))?;
    let else_g = ctx
        .attr_graph("else_branch")?
        .ok_or_else(|| Error::tr("If needs the attribute 'else_branch'"))?;
    let n = ctx.num_outputs();
    for (g, what) in [(then_g, "then_branch"), (else_g, "else_branch")] {
        if g.output.len() != n {
            return Err(Error::tr(format!(
                "If: {what} has {} outputs, the node has {n}",
                g.output.len()
            )));
        }
        for (i, vi) in g.output.iter().enumerate() {
            desc_from_type(vi.r#type.as_ref(), &format!("{what} output {i}"))?;
        }
    }
    let c = ctx.input(0)?;
    if let Some(v) = known_values(ctx.graph(), c) {
        // The condition is known at import: the branch taken, inlined; the other one is never
        // run (and may not even be valid for these shapes, as in ONNX function bodies).
        let [taken] = v[..] else {
            return Err(Error::tr(format!(
                "If: the condition has {} elements, expected one",
                v.len()
            )));
        };
        let g = if taken != 0.0 { then_g } else { else_g };
        let outs = ctx.inline_graph(g)?;
        return Ok(outs.into_iter().map(Some).collect());
    }
    let c = ctx.as_scalar(c)?;
    let t = ctx.subgraph(then_g, &[])?;
    let e = ctx.subgraph(else_g, &[])?;
    let mut subs = vec![t, e];
    let caps = unify_captures(&mut subs)?;
    let mut it = subs.into_iter();
    let (Some(t), Some(e)) = (it.next(), it.next()) else {
        return Err(Error::tr("internal: two branches"));
    };
    let outs = ctx.op_with_subgraphs(
        "If",
        vec![vec![Some(c)], caps.into_iter().map(Some).collect()],
        vec![vec![t.graph], vec![e.graph]],
        n,
    )?;
    Ok(outs.into_iter().map(Some).collect())
}

/// Checks the outputs of a Loop or Scan `body`: `extra` leading outputs (Loop's condition),
/// then the `carried` state values, then the scan outputs, whose count it returns; the node
/// may not ask for more outputs than the carried values and scan outputs, and each body output
/// needs a tensor type.
fn body_scan_outputs(
    ctx: &NodeCtx<'_>,
    body: &GraphProto,
    op: &str,
    extra: usize,
    carried: usize,
) -> Result<usize> {
    if body.output.len() < extra + carried {
        return Err(Error::tr(format!(
            "{op}: the body has {} outputs, expected at least {}",
            body.output.len(),
            extra + carried
        )));
    }
    let scanned = body.output.len() - extra - carried;
    if ctx.num_outputs() > carried + scanned {
        return Err(Error::tr(format!(
            "{op}: the node has {} outputs, the body gives {}",
            ctx.num_outputs(),
            carried + scanned
        )));
    }
    for (i, vi) in body.output.iter().enumerate() {
        desc_from_type(vi.r#type.as_ref(), &format!("{op} body output {i}"))?;
    }
    Ok(scanned)
}

// ---------------------------------------------------------------------------------------------
// Loop
// ---------------------------------------------------------------------------------------------

/// The body's description of a loop-carried value whose initial description is `d`: a list
/// may gain tensors of other shapes in the body, so its element shape is not known there.
fn loop_value_desc(d: TensorDesc) -> TensorDesc {
    match es_core::infer::sequence::VariantInfo::of(&d) {
        Some(v) => es_core::infer::sequence::VariantInfo {
            elem_shape: Shape::unknown_rank(),
            ..v
        }
        .desc(),
        None => d,
    }
}

/// While values: [i, M, cond, v_1..v_N, (acc_k, shape_k) for each scan output, captures].
fn loop_op(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["body"])?;
    let body = ctx
        .attr_graph("body")?
        .ok_or_else(|| Error::tr("Loop needs the attribute 'body'"))?;
    let n_in = ctx.num_inputs().max(2);
    let nc = n_in - 2;
    if body.input.len() != 2 + nc {
        return Err(Error::tr(format!(
            "Loop: the body has {} inputs, expected {} (iteration, condition and {nc} loop-carried values)",
            body.input.len(),
            2 + nc
        )));
    }
    let ns = body_scan_outputs(ctx, body, "Loop", 1, nc)?;
    let (has_m, has_cond) = (ctx.has_input(0), ctx.has_input(1));
    if !has_m && !has_cond {
        return Err(Error::unsupported(
            "Loop without a trip count and a condition (an infinite loop)",
        ));
    }
    let m = if has_m {
        let p = ctx.input(0)?;
        let p = ctx.cast(p, DataType::INT64)?;
        ctx.as_scalar(p)?
    } else {
        ctx.const_i64(&[i64::MAX], &[])?
    };
    let cond = if has_cond {
        let p = ctx.input(1)?;
        let p = ctx.cast(p, DataType::BOOL)?;
        ctx.as_scalar(p)?
    } else {
        ctx.constant(es_core::Tensor::scalar(true))?
    };
    let mut vs = Vec::with_capacity(nc);
    let mut formal = vec![scalar_desc(DataType::INT64), scalar_desc(DataType::BOOL)];
    for j in 0..nc {
        let p = ctx.input(2 + j)?;
        formal.push(loop_value_desc(ctx.desc(p)?));
        vs.push(p);
    }
    let sub = ctx.subgraph(body, &formal)?;
    let caps: Vec<OutPort> = sub.captures.iter().map(|c| c.1).collect();
    let ncap = caps.len();
    // Loop-carried values whose description changes get relaxed initial values.
    for (j, v) in vs.iter_mut().enumerate() {
        let d = body_out_desc(&sub, body, 1 + j)?;
        let init = ctx.desc(*v)?;
        if d.shape != init.shape || !init.shape.is_static() {
            *v = ctx.relax(*v)?;
        }
    }
    let (accs, acc_descs) = scan_accumulators(ctx, &sub, body, 1 + nc, ns)?;
    // Body: old Data 0 (i) → 0, 1 (cond) → 2, 2 + j → 3 + j, captures 2 + nc + c → 3 + nc + 2 ns + c.
    let shift = 1 + 2 * ns as i64;
    let ncl = nc as i64;
    let mut new_inputs = vec![(1, scalar_desc(DataType::INT64), "trip_count".to_string())];
    new_inputs.extend(acc_inputs(&acc_descs, 3 + ncl));
    let old_outs = sub.graph.outputs.clone();
    let (mut b, ports, _) = rewire(
        sub,
        Rewire {
            map: Box::new(move |old| {
                Some(match old {
                    0 => 0,
                    1 => 2,
                    o if o < 2 + ncl => o + 1,
                    o => o + shift,
                })
            }),
            new_inputs,
        },
    )?;
    let port = body_port(&ports, "Loop");
    let one = bconst_i64(&mut b, &[1], &[])?;
    let i_next = bop1(&mut b, "Add", &[port(0)?, one], vec![])?;
    let cond_next = if has_cond {
        let c = old_outs[0];
        let c = if b.graph().out_desc(c)?.dtype != DataType::BOOL {
            bop1(
                &mut b,
                "Cast",
                &[c],
                vec![("dst_type", AttrValue::Int(DataType::BOOL.value() as i64))],
            )?
        } else {
            c
        };
        let s = bconst_i64(&mut b, &[], &[0])?;
        bop1(&mut b, "Reshape", &[c, s], vec![])?
    } else {
        port(2)?
    };
    let mut outs = vec![i_next, port(1)?, cond_next];
    outs.extend_from_slice(&old_outs[1..1 + nc]);
    let scanned = &old_outs[1 + nc..1 + nc + ns];
    push_accumulated(&mut b, &port, &mut outs, scanned, 3 + ncl, ncap)?;
    // The While.
    let mut head = vec![ctx.const_i64(&[0], &[])?, m, cond];
    head.extend(vs);
    let res = build_while(ctx, &mut b, &outs, head, &accs, caps, true)?;
    while_outputs(ctx, &res, (3, nc), (3 + nc, ns), |_, _, y| Ok(y))
}

// ---------------------------------------------------------------------------------------------
// Scan
// ---------------------------------------------------------------------------------------------

/// `ints` attribute `name` with `n` entries (default all `def`).
fn per_item(ctx: &NodeCtx<'_>, name: &str, n: usize, def: i64) -> Result<Vec<i64>> {
    match ctx.attr_ints(name)? {
        None => Ok(vec![def; n]),
        Some(v) if v.len() == n => Ok(v),
        Some(v) => Err(Error::tr(format!(
            "Scan: attribute '{name}' has {} entries, expected {n}",
            v.len()
        ))),
    }
}

/// While values: [i, T, s_1..s_N, x_1..x_M (scan axis first, reversed where asked),
/// (acc_k, shape_k) for each scan output, captures].
fn scan_op(ctx: &mut NodeCtx<'_>) -> Out {
    if ctx.opset < 9 {
        return Err(Error::unsupported(
            "Scan before opset 9 (batch axis and sequence_lens)",
        ));
    }
    ctx.known_attrs(&[
        "body",
        "num_scan_inputs",
        "scan_input_axes",
        "scan_input_directions",
        "scan_output_axes",
        "scan_output_directions",
    ])?;
    let body = ctx
        .attr_graph("body")?
        .ok_or_else(|| Error::tr("Scan needs the attribute 'body'"))?;
    let m = ctx.attr_i("num_scan_inputs", -1)?;
    let n_in = ctx.num_inputs();
    if m < 1 || m as usize > n_in {
        return Err(Error::tr(format!(
            "Scan: num_scan_inputs {m} is out of range for {n_in} inputs"
        )));
    }
    let m = m as usize;
    let n = n_in - m;
    if body.input.len() != n + m {
        return Err(Error::tr(format!(
            "Scan: the body has {} inputs, expected {}",
            body.input.len(),
            n + m
        )));
    }
    let k_out = body_scan_outputs(ctx, body, "Scan", 0, n)?;
    let in_axes = per_item(ctx, "scan_input_axes", m, 0)?;
    let in_dirs = per_item(ctx, "scan_input_directions", m, 0)?;
    let out_axes = per_item(ctx, "scan_output_axes", k_out, 0)?;
    let out_dirs = per_item(ctx, "scan_output_directions", k_out, 0)?;
    for &d in in_dirs.iter().chain(&out_dirs) {
        if d != 0 && d != 1 {
            return Err(Error::tr(format!("Scan: direction {d} must be 0 or 1")));
        }
    }
    let mut states = Vec::with_capacity(n);
    let mut formal = Vec::with_capacity(n + m);
    for j in 0..n {
        let p = ctx.input(j)?;
        formal.push(ctx.desc(p)?);
        states.push(p);
    }
    let mut xs = Vec::with_capacity(m);
    for i in 0..m {
        let mut x = ctx.input(n + i)?;
        let rank = ctx.input_rank(n + i)?;
        if rank == 0 {
            return Err(Error::tr(format!("Scan: scan input {i} is a scalar")));
        }
        let ax = super::util::norm_axis(in_axes[i], rank, "Scan scan_input_axes")?;
        if ax != 0 {
            let mut perm: Vec<i64> = vec![ax as i64];
            perm.extend((0..rank as i64).filter(|&a| a != ax as i64));
            let pm = ctx.const_i64(&perm, &[rank as i64])?;
            x = ctx.op1("Transpose", &[x, pm], vec![])?;
        }
        if in_dirs[i] == 1 {
            let a = ctx.const_i64(&[0], &[1])?;
            x = ctx.op1("ReverseV2", &[x, a], vec![])?;
        }
        let d = ctx.desc(x)?;
        let dims = d.shape.dims().to_vec();
        formal.push(TensorDesc::new(d.dtype, Shape::new(dims[1..].to_vec())));
        xs.push(x);
    }
    // The sequence length: dim 0 of the first (moved) scan input.
    let t = {
        let d0 = ctx.desc(xs[0])?.shape.dims().first().copied().unwrap_or(-1);
        if d0 >= 0 {
            ctx.const_i64(&[d0], &[])?
        } else {
            let s = ctx.op1("Shape", &[xs[0]], vec![("dtype", AttrValue::Int(i64dt()))])?;
            ctx.element(s, 0)?
        }
    };
    let sub = ctx.subgraph(body, &formal)?;
    let caps: Vec<OutPort> = sub.captures.iter().map(|c| c.1).collect();
    let ncap = caps.len();
    for (j, s) in states.iter_mut().enumerate() {
        let d = body_out_desc(&sub, body, j)?;
        let init = ctx.desc(*s)?;
        if d.shape != init.shape || !init.shape.is_static() {
            *s = ctx.relax(*s)?;
        }
    }
    let (accs, acc_descs) = scan_accumulators(ctx, &sub, body, n, k_out)?;
    // Body: old Data j (state) → 2 + j; n + i (slice) → dropped (GatherV2 of x_i at 2 + n + i);
    // captures n + m + c → 2 + n + m + 2 k_out + c.
    let (nl, ml, kl) = (n as i64, m as i64, k_out as i64);
    let mut new_inputs = vec![(1, scalar_desc(DataType::INT64), "seq_len".to_string())];
    new_inputs.push((0, scalar_desc(DataType::INT64), "iteration".to_string()));
    for (i, x) in xs.iter().enumerate() {
        let d = ctx.desc(*x)?;
        new_inputs.push((2 + nl + i as i64, d, format!("scan_input_{i}")));
    }
    new_inputs.extend(acc_inputs(&acc_descs, 2 + nl + ml));
    let (mut b, ports, dropped) = rewire(
        sub,
        Rewire {
            map: Box::new(move |old| {
                if old < nl {
                    Some(old + 2)
                } else if old < nl + ml {
                    None
                } else {
                    Some(old + 2 + 2 * kl)
                }
            }),
            new_inputs,
        },
    )?;
    let port = body_port(&ports, "Scan");
    let axis0 = bconst_i64(&mut b, &[0], &[])?;
    for i in 0..m {
        let Some(&old) = dropped.get(&(nl + i as i64)) else {
            return Err(Error::tr("internal: a Scan slice input is missing"));
        };
        let sl = bop1(
            &mut b,
            "GatherV2",
            &[port(2 + nl + i as i64)?, port(0)?, axis0],
            vec![],
        )?;
        redirect(b.graph_mut(), old, sl)?;
        b.graph_mut().remove_node(old.node)?;
    }
    let old_outs = b.graph().outputs.clone();
    let one = bconst_i64(&mut b, &[1], &[])?;
    let i_next = bop1(&mut b, "Add", &[port(0)?, one], vec![])?;
    let mut outs = vec![i_next, port(1)?];
    outs.extend_from_slice(&old_outs[..n]);
    for i in 0..m {
        outs.push(port(2 + nl + i as i64)?);
    }
    let scanned = &old_outs[n..n + k_out];
    push_accumulated(&mut b, &port, &mut outs, scanned, 2 + nl + ml, ncap)?;
    let mut head = vec![ctx.const_i64(&[0], &[])?, t];
    head.extend(states);
    head.extend(xs);
    // Less(i, T) only: the third loop value is not a condition here.
    let res = build_while(ctx, &mut b, &outs, head, &accs, caps, false)?;
    while_outputs(ctx, &res, (2, n), (2 + n + m, k_out), |ctx, k, mut y| {
        if out_dirs[k] == 1 {
            let a = ctx.const_i64(&[0], &[1])?;
            y = ctx.op1("ReverseV2", &[y, a], vec![])?;
        }
        let r = acc_descs[k].shape.rank().unwrap_or(0) + 1;
        let ax = super::util::norm_axis(out_axes[k], r, "Scan scan_output_axes")?;
        if ax != 0 {
            let mut perm: Vec<i64> = (1..=ax as i64).collect();
            perm.push(0);
            perm.extend(ax as i64 + 1..r as i64);
            let pm = ctx.const_i64(&perm, &[r as i64])?;
            y = ctx.op1("Transpose", &[y, pm], vec![])?;
        }
        Ok(y)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(b: &mut GraphBuilder, dims: &[i64]) -> OutPort {
        b.create_input(
            0,
            Some("x".into()),
            "Data",
            DataType::FLOAT,
            Format::ND,
            Shape::new(dims.to_vec()),
        )
        .unwrap()
    }

    /// Shape or Size of `x`, as int64.
    fn shape_op(b: &mut GraphBuilder, op: &str, x: OutPort) -> OutPort {
        bop1(b, op, &[x], vec![("dtype", AttrValue::Int(i64dt()))]).unwrap()
    }

    fn size_equals(dims: &[i64], n: i64) -> (GraphBuilder, OutPort) {
        let mut b = GraphBuilder::new("g");
        let x = input(&mut b, dims);
        let s = shape_op(&mut b, "Size", x);
        let c = bconst_i64(&mut b, &[n], &[]).unwrap();
        let e = bop1(&mut b, "Equal", &[s, c], vec![]).unwrap();
        (b, e)
    }

    #[test]
    fn a_comparison_of_a_static_size_is_known() {
        let (b, e) = size_equals(&[2, 5], 10);
        assert_eq!(known_values(b.graph(), e), Some(vec![1.0]));
        let (b, e) = size_equals(&[2, 5], 11);
        assert_eq!(known_values(b.graph(), e), Some(vec![0.0]));
    }

    #[test]
    fn a_size_of_an_unknown_dim_is_not_known() {
        let (b, e) = size_equals(&[2, -1], 10);
        assert_eq!(known_values(b.graph(), e), None);
        let (b, e) = size_equals(&[], 1);
        assert_eq!(known_values(b.graph(), e), Some(vec![1.0]));
    }

    #[test]
    fn shapes_logic_and_integer_arithmetic_fold_float_arithmetic_does_not() {
        let mut b = GraphBuilder::new("g");
        let x = input(&mut b, &[3, 4]);
        let s = shape_op(&mut b, "Shape", x);
        let one = bconst_i64(&mut b, &[1], &[]).unwrap();
        let s1 = bop1(&mut b, "Add", &[s, one], vec![]).unwrap();
        assert_eq!(known_values(b.graph(), s1), Some(vec![4.0, 5.0]));
        let four = bconst_i64(&mut b, &[4, 4], &[2]).unwrap();
        let eq = bop1(&mut b, "Equal", &[s1, four], vec![]).unwrap();
        let not = bop1(&mut b, "LogicalNot", &[eq], vec![]).unwrap();
        assert_eq!(known_values(b.graph(), not), Some(vec![0.0, 1.0]));
        let f = b
            .create_const(es_core::Tensor::scalar(0.1f32), None)
            .unwrap();
        let ff = bop1(&mut b, "Add", &[f, f], vec![]).unwrap();
        assert_eq!(known_values(b.graph(), ff), None);
        let fx = bop1(&mut b, "Add", &[x, x], vec![]).unwrap();
        assert_eq!(known_values(b.graph(), fx), None);
    }
}
