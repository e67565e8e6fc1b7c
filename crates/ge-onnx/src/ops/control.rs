//! Control flow (If, Loop, Scan), recurrent layers and attention.
//!
//! If becomes GE's If with the two branches as subgraphs (captured outer values are extra
//! inputs, see [`unify_captures`]). Loop and Scan become GE's While: the loop values are the
//! iteration counter, the trip count, the condition (Loop), the loop-carried values, the scan
//! inputs (Scan), two accumulators per scan output (the elements so far, flattened, and the
//! shape of the last element) and the captured outer values, passed through unchanged. The
//! ONNX body is translated as a subgraph and then rewired in place into the While body.

use crate::error::{Error, Result};
use crate::translate::{unify_captures, NodeCtx, Registry, Subgraph};
use crate::types::desc_from_type;
use es_core::graph::is_data_op;
use es_core::{
    AttrValue, DataType, Format, Graph, GraphBuilder, InPort, NodeId, OpArgs, OutPort, Shape,
    TensorDesc,
};
use rustc_hash::FxHashMap;
use std::sync::Arc;

type Out = Result<Vec<Option<OutPort>>>;

pub(crate) fn register(r: &mut Registry) {
    r.register("If", Arc::new(if_op));
    r.register("Loop", Arc::new(loop_op));
    r.register("Scan", Arc::new(scan_op));
    r.register("RNN", Arc::new(rnn));
    r.register("GRU", Arc::new(gru));
    r.register("LSTM", Arc::new(lstm));
    r.register("Attention", Arc::new(attention));
    r.register("RotaryEmbedding", Arc::new(rotary_embedding));
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

impl NodeCtx<'_> {
    /// Fails on any attribute not in `known`.
    fn check_attrs(&self, known: &[&str]) -> Result<()> {
        for a in &self.node.attribute {
            let name = a.name.as_deref().unwrap_or("");
            if !known.contains(&name) {
                return Err(Error::unsupported(format!(
                    "{}: attribute '{name}' is not supported",
                    self.op_type()
                )));
            }
        }
        Ok(())
    }

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

    fn concat(&mut self, xs: &[OutPort], axis: i64) -> Result<OutPort> {
        let a = self.const_i64(&[axis], &[])?;
        let outs = self.op(
            "ConcatV2",
            vec![xs.iter().map(|p| Some(*p)).collect(), vec![Some(a)]],
            vec![],
        )?;
        first(outs, "ConcatV2")
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

fn first(outs: Vec<OutPort>, op: &str) -> Result<OutPort> {
    outs.first()
        .copied()
        .ok_or_else(|| Error::tr(format!("internal: {op} has no output")))
}

fn scalar_desc(dt: DataType) -> TensorDesc {
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
fn redirect(g: &mut Graph, old: OutPort, new: OutPort) -> Result<()> {
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
struct Rewire {
    /// Old Data index → new index; None: the Data node is replaced (see `replace`).
    map: Box<dyn Fn(i64) -> Option<i64>>,
    /// New Data nodes: (index, description, name).
    new_inputs: Vec<(i64, TensorDesc, String)>,
}

/// Renumbers the Data nodes of `sub` and adds the new ones; returns the builder over the
/// graph, the ports of the Data nodes by new index, and the Data nodes that were dropped
/// (old index → port, still in the graph).
type Rewired = (
    GraphBuilder,
    FxHashMap<i64, OutPort>,
    FxHashMap<i64, OutPort>,
);

fn rewire(sub: Subgraph, rw: Rewire) -> Result<Rewired> {
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
        let p = b.create_input(idx, Some(nm), "Data", d.dtype, Format::ND, d.shape)?;
        ports.insert(idx, p);
    }
    Ok((b, ports, dropped))
}

fn bop(
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

fn bop1(
    b: &mut GraphBuilder,
    op: &str,
    xs: &[OutPort],
    attrs: Vec<(&str, AttrValue)>,
) -> Result<OutPort> {
    bop(b, op, xs.iter().map(|p| vec![Some(*p)]).collect(), attrs)
}

fn bconst_i64(b: &mut GraphBuilder, v: &[i64], shape: &[i64]) -> Result<OutPort> {
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
fn body_out_desc(sub: &Subgraph, g: &crate::proto::GraphProto, i: usize) -> Result<TensorDesc> {
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
    ctx.check_attrs(&["then_branch", "else_branch"])?;
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

// ---------------------------------------------------------------------------------------------
// Loop
// ---------------------------------------------------------------------------------------------

/// While values: [i, M, cond, v_1..v_N, (acc_k, shape_k) for each scan output, captures].
fn loop_op(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.check_attrs(&["body"])?;
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
    if body.output.len() < 1 + nc {
        return Err(Error::tr(format!(
            "Loop: the body has {} outputs, expected at least {}",
            body.output.len(),
            1 + nc
        )));
    }
    let ns = body.output.len() - 1 - nc;
    if ctx.num_outputs() > nc + ns {
        return Err(Error::tr(format!(
            "Loop: the node has {} outputs, the body gives {}",
            ctx.num_outputs(),
            nc + ns
        )));
    }
    for (i, vi) in body.output.iter().enumerate() {
        desc_from_type(vi.r#type.as_ref(), &format!("Loop body output {i}"))?;
    }
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
        formal.push(ctx.desc(p)?);
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
    let mut accs = Vec::with_capacity(ns);
    let mut acc_descs = Vec::with_capacity(ns);
    for k in 0..ns {
        let d = body_out_desc(&sub, body, 1 + nc + k)?;
        accs.push(acc_init(ctx, &d, &format!("scan output {k}"))?);
        acc_descs.push(d);
    }
    // Body: old Data 0 (i) → 0, 1 (cond) → 2, 2 + j → 3 + j, captures 2 + nc + c → 3 + nc + 2 ns + c.
    let shift = 1 + 2 * ns as i64;
    let ncl = nc as i64;
    let mut new_inputs = vec![(1, scalar_desc(DataType::INT64), "trip_count".to_string())];
    for (k, d) in acc_descs.iter().enumerate() {
        let base = 3 + ncl + 2 * k as i64;
        new_inputs.push((
            base,
            TensorDesc::new(d.dtype, Shape::new(vec![-1])),
            format!("scan_acc_{k}"),
        ));
        let r = d.shape.rank().unwrap_or(0) as i64;
        new_inputs.push((
            base + 1,
            TensorDesc::new(DataType::INT64, Shape::new(vec![r])),
            format!("scan_shape_{k}"),
        ));
    }
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
    let port = |i: i64| -> Result<OutPort> {
        ports
            .get(&i)
            .copied()
            .ok_or_else(|| Error::tr(format!("internal: the Loop body has no input {i}")))
    };
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
    for k in 0..ns {
        let base = 3 + ncl + 2 * k as i64;
        let (a, s) = accumulate(&mut b, port(base)?, old_outs[1 + nc + k])?;
        outs.push(a);
        outs.push(s);
    }
    for c in 0..ncap {
        outs.push(port(3 + ncl + 2 * ns as i64 + c as i64)?);
    }
    b.graph_mut().outputs.clear();
    for (i, p) in outs.iter().enumerate() {
        b.set_output(*p, i)?;
    }
    let body_g = b.build_and_reset()?;
    // The While.
    let mut ins = vec![ctx.const_i64(&[0], &[])?, m, cond];
    ins.extend(vs);
    for (a, s) in &accs {
        ins.push(*a);
        ins.push(*s);
    }
    ins.extend(caps);
    let descs = ins
        .iter()
        .map(|p| ctx.desc(*p))
        .collect::<Result<Vec<_>>>()?;
    let cond_g = cond_graph(&descs, true)?;
    let n = ins.len();
    let res = ctx.op_with_subgraphs(
        "While",
        vec![ins.into_iter().map(Some).collect()],
        vec![vec![cond_g], vec![body_g]],
        n,
    )?;
    let mut out = Vec::with_capacity(nc + ns);
    for j in 0..nc {
        out.push(Some(res[3 + j]));
    }
    for k in 0..ns {
        let base = 3 + nc + 2 * k;
        if ctx.output_used(nc + k) {
            out.push(Some(acc_result(ctx, res[base], res[base + 1], res[0])?));
        } else {
            out.push(None);
        }
    }
    Ok(out)
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
    ctx.check_attrs(&[
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
    if body.output.len() < n {
        return Err(Error::tr(format!(
            "Scan: the body has {} outputs, expected at least {n}",
            body.output.len()
        )));
    }
    let k_out = body.output.len() - n;
    if ctx.num_outputs() > n + k_out {
        return Err(Error::tr(format!(
            "Scan: the node has {} outputs, the body gives {}",
            ctx.num_outputs(),
            n + k_out
        )));
    }
    for (i, vi) in body.output.iter().enumerate() {
        desc_from_type(vi.r#type.as_ref(), &format!("Scan body output {i}"))?;
    }
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
    let mut accs = Vec::with_capacity(k_out);
    let mut acc_descs = Vec::with_capacity(k_out);
    for k in 0..k_out {
        let d = body_out_desc(&sub, body, n + k)?;
        accs.push(acc_init(ctx, &d, &format!("scan output {k}"))?);
        acc_descs.push(d);
    }
    // Body: old Data j (state) → 2 + j; n + i (slice) → dropped (GatherV2 of x_i at 2 + n + i);
    // captures n + m + c → 2 + n + m + 2 k_out + c.
    let (nl, ml, kl) = (n as i64, m as i64, k_out as i64);
    let mut new_inputs = vec![(1, scalar_desc(DataType::INT64), "seq_len".to_string())];
    new_inputs.push((0, scalar_desc(DataType::INT64), "iteration".to_string()));
    for (i, x) in xs.iter().enumerate() {
        let d = ctx.desc(*x)?;
        new_inputs.push((2 + nl + i as i64, d, format!("scan_input_{i}")));
    }
    for (k, d) in acc_descs.iter().enumerate() {
        let base = 2 + nl + ml + 2 * k as i64;
        new_inputs.push((
            base,
            TensorDesc::new(d.dtype, Shape::new(vec![-1])),
            format!("scan_acc_{k}"),
        ));
        let r = d.shape.rank().unwrap_or(0) as i64;
        new_inputs.push((
            base + 1,
            TensorDesc::new(DataType::INT64, Shape::new(vec![r])),
            format!("scan_shape_{k}"),
        ));
    }
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
    let port = |i: i64| -> Result<OutPort> {
        ports
            .get(&i)
            .copied()
            .ok_or_else(|| Error::tr(format!("internal: the Scan body has no input {i}")))
    };
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
    for k in 0..k_out {
        let base = 2 + nl + ml + 2 * k as i64;
        let (a, s) = accumulate(&mut b, port(base)?, old_outs[n + k])?;
        outs.push(a);
        outs.push(s);
    }
    for c in 0..ncap {
        outs.push(port(2 + nl + ml + 2 * kl + c as i64)?);
    }
    b.graph_mut().outputs.clear();
    for (i, p) in outs.iter().enumerate() {
        b.set_output(*p, i)?;
    }
    let body_g = b.build_and_reset()?;
    let mut ins = vec![ctx.const_i64(&[0], &[])?, t];
    ins.extend(states);
    ins.extend(xs);
    for (a, s) in &accs {
        ins.push(*a);
        ins.push(*s);
    }
    ins.extend(caps);
    let descs = ins
        .iter()
        .map(|p| ctx.desc(*p))
        .collect::<Result<Vec<_>>>()?;
    // Less(i, T) only: the third loop value is not a condition here.
    let cond_g = cond_graph(&descs, false)?;
    let total = ins.len();
    let res = ctx.op_with_subgraphs(
        "While",
        vec![ins.into_iter().map(Some).collect()],
        vec![vec![cond_g], vec![body_g]],
        total,
    )?;
    let mut out = Vec::with_capacity(n + k_out);
    for j in 0..n {
        out.push(Some(res[2 + j]));
    }
    for k in 0..k_out {
        if !ctx.output_used(n + k) {
            out.push(None);
            continue;
        }
        let base = 2 + n + m + 2 * k;
        let mut y = acc_result(ctx, res[base], res[base + 1], res[0])?;
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
        out.push(Some(y));
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// RNN, GRU, LSTM: unrolled over the static sequence length
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq)]
enum Cell {
    Rnn,
    Gru,
    Lstm,
}

impl Cell {
    fn gates(self) -> usize {
        match self {
            Cell::Rnn => 1,
            Cell::Gru => 3,
            Cell::Lstm => 4,
        }
    }
    fn n_act(self) -> usize {
        match self {
            Cell::Rnn => 1,
            Cell::Gru => 2,
            Cell::Lstm => 3,
        }
    }
    fn default_acts(self) -> &'static [&'static str] {
        match self {
            Cell::Rnn => &["Tanh"],
            Cell::Gru => &["Sigmoid", "Tanh"],
            Cell::Lstm => &["Sigmoid", "Tanh", "Tanh"],
        }
    }
}

/// One activation function of a recurrent layer with its alpha/beta.
#[derive(Clone)]
struct Act {
    name: String,
    alpha: Option<f32>,
    beta: Option<f32>,
}

fn rnn_acts(ctx: &NodeCtx<'_>, cell: Cell, dirs: usize) -> Result<Vec<Act>> {
    let n = cell.n_act() * dirs;
    let names: Vec<String> = match ctx.attr("activations")? {
        None => {
            let d = cell.default_acts();
            (0..n).map(|i| d[i % d.len()].to_string()).collect()
        }
        Some(crate::attrs::OnnxAttr::Strings(v)) => v,
        Some(o) => {
            return Err(Error::tr(format!(
                "attribute 'activations' must be STRINGS, got {}",
                o.kind()
            )))
        }
    };
    if names.len() != n {
        return Err(Error::tr(format!(
            "{}: 'activations' has {} entries, expected {n}",
            ctx.op_type(),
            names.len()
        )));
    }
    let alphas = ctx.attr_floats("activation_alpha")?.unwrap_or_default();
    let betas = ctx.attr_floats("activation_beta")?.unwrap_or_default();
    let (mut ia, mut ib) = (0usize, 0usize);
    let mut out = Vec::with_capacity(n);
    for name in names {
        let lower = name.to_ascii_lowercase();
        let (ua, ub) = match lower.as_str() {
            "relu" | "tanh" | "sigmoid" | "softsign" | "softplus" => (false, false),
            "leakyrelu" | "thresholdedrelu" | "elu" => (true, false),
            "affine" | "scaledtanh" | "hardsigmoid" => (true, true),
            _ => {
                return Err(Error::unsupported(format!(
                    "{}: activation '{name}'",
                    ctx.op_type()
                )))
            }
        };
        let alpha = if ua {
            ia += 1;
            alphas.get(ia - 1).copied()
        } else {
            None
        };
        let beta = if ub {
            ib += 1;
            betas.get(ib - 1).copied()
        } else {
            None
        };
        out.push(Act {
            name: lower,
            alpha,
            beta,
        });
    }
    Ok(out)
}

impl NodeCtx<'_> {
    fn scalar_like(&mut self, v: f64, dt: DataType) -> Result<OutPort> {
        self.const_of(dt, &[v], &[])
    }

    fn activate(&mut self, x: OutPort, a: &Act, dt: DataType) -> Result<OutPort> {
        let f = |v: Option<f32>, d: f32| AttrValue::Float(v.unwrap_or(d));
        Ok(match a.name.as_str() {
            "relu" => self.op1("Relu", &[x], vec![])?,
            "tanh" => self.op1("Tanh", &[x], vec![])?,
            "sigmoid" => self.op1("Sigmoid", &[x], vec![])?,
            "softsign" => self.op1("Softsign", &[x], vec![])?,
            "softplus" => self.op1("Softplus", &[x], vec![])?,
            "leakyrelu" => self.op1(
                "LeakyRelu",
                &[x],
                vec![("negative_slope", f(a.alpha, 0.01))],
            )?,
            "elu" => self.op1("Elu", &[x], vec![("alpha", f(a.alpha, 1.0))])?,
            "hardsigmoid" => self.op1(
                "HardSigmoid",
                &[x],
                vec![("alpha", f(a.alpha, 0.2)), ("beta", f(a.beta, 0.5))],
            )?,
            "thresholdedrelu" => {
                let t = self.scalar_like(a.alpha.unwrap_or(1.0) as f64, dt)?;
                let z = self.scalar_like(0.0, dt)?;
                let m = self.op1("Greater", &[x, t], vec![])?;
                self.op1("SelectV2", &[m, x, z], vec![])?
            }
            "affine" => {
                let al = self.scalar_like(a.alpha.unwrap_or(1.0) as f64, dt)?;
                let be = self.scalar_like(a.beta.unwrap_or(0.0) as f64, dt)?;
                let y = self.op1("Mul", &[x, al], vec![])?;
                self.op1("Add", &[y, be], vec![])?
            }
            "scaledtanh" => {
                let al = self.scalar_like(a.alpha.unwrap_or(1.0) as f64, dt)?;
                let be = self.scalar_like(a.beta.unwrap_or(1.0) as f64, dt)?;
                let y = self.op1("Mul", &[x, be], vec![])?;
                let y = self.op1("Tanh", &[y], vec![])?;
                self.op1("Mul", &[y, al], vec![])?
            }
            other => return Err(Error::unsupported(format!("activation '{other}'"))),
        })
    }

    fn split_n(&mut self, x: OutPort, axis: i64, n: usize) -> Result<Vec<OutPort>> {
        if n == 1 {
            return Ok(vec![x]);
        }
        let a = self.const_i32(&[axis as i32], &[])?;
        self.op(
            "Split",
            vec![vec![Some(a)], vec![Some(x)]],
            vec![("num_split", AttrValue::Int(n as i64))],
        )
    }

    fn unpack(&mut self, x: OutPort, n: usize) -> Result<Vec<OutPort>> {
        if n == 1 {
            return Ok(vec![self.op1(
                "Squeeze",
                &[x],
                vec![("axis", AttrValue::ListInt(vec![0]))],
            )?]);
        }
        self.op(
            "Unpack",
            vec![vec![Some(x)]],
            vec![
                ("num", AttrValue::Int(n as i64)),
                ("axis", AttrValue::Int(0)),
            ],
        )
    }

    fn pack(&mut self, xs: &[OutPort], axis: i64) -> Result<OutPort> {
        let outs = self.op(
            "Pack",
            vec![xs.iter().map(|p| Some(*p)).collect()],
            vec![("axis", AttrValue::Int(axis))],
        )?;
        first(outs, "Pack")
    }

    fn transpose(&mut self, x: OutPort, perm: &[i64]) -> Result<OutPort> {
        let p = self.const_i64(perm, &[perm.len() as i64])?;
        self.op1("Transpose", &[x, p], vec![])
    }

    /// Index `d` of axis 0 of `x` (that axis removed).
    fn take0(&mut self, x: OutPort, d: usize) -> Result<OutPort> {
        let idx = self.const_i64(&[d as i64], &[])?;
        let axis = self.const_i64(&[0], &[])?;
        self.op1("GatherV2", &[x, idx, axis], vec![])
    }
}

fn rnn(ctx: &mut NodeCtx<'_>) -> Out {
    recurrent(ctx, Cell::Rnn)
}
fn gru(ctx: &mut NodeCtx<'_>) -> Out {
    recurrent(ctx, Cell::Gru)
}
fn lstm(ctx: &mut NodeCtx<'_>) -> Out {
    recurrent(ctx, Cell::Lstm)
}

fn recurrent(ctx: &mut NodeCtx<'_>, cell: Cell) -> Out {
    let mut known = vec![
        "activation_alpha",
        "activation_beta",
        "activations",
        "clip",
        "direction",
        "hidden_size",
        "layout",
    ];
    match cell {
        Cell::Gru => known.push("linear_before_reset"),
        Cell::Lstm => known.push("input_forget"),
        Cell::Rnn => {}
    }
    ctx.check_attrs(&known)?;
    let op = ctx.op_type().to_string();
    let direction = ctx.attr_s("direction", "forward")?;
    let dirs: Vec<bool> = match direction.as_str() {
        "forward" => vec![false],
        "reverse" => vec![true],
        "bidirectional" => vec![false, true],
        d => return Err(Error::tr(format!("{op}: direction '{d}'"))),
    };
    let nd = dirs.len();
    let layout = ctx.attr_i("layout", 0)?;
    if layout != 0 && layout != 1 {
        return Err(Error::tr(format!("{op}: layout {layout} must be 0 or 1")));
    }
    let lbr = ctx.attr_i("linear_before_reset", 0)? != 0;
    let input_forget = ctx.attr_i("input_forget", 0)? != 0;
    let clip = if ctx.has_attr("clip") {
        Some(ctx.attr_f("clip", 0.0)?)
    } else {
        None
    };
    let acts = rnn_acts(ctx, cell, nd)?;
    let g = cell.gates();
    let mut x = ctx.input(0)?;
    let xd = ctx.desc(x)?;
    let dt = xd.dtype;
    if !matches!(dt, DataType::FLOAT | DataType::FLOAT16 | DataType::BF16) {
        return Err(Error::unsupported(format!(
            "{op} on {dt} (GE's MatMulV2 takes float, float16 and bfloat16)"
        )));
    }
    if ctx.input_rank(0)? != 3 {
        return Err(Error::tr(format!("{op}: X must be 3-D")));
    }
    if layout == 1 {
        x = ctx.transpose(x, &[1, 0, 2])?;
    }
    let t_len = ctx.desc(x)?.shape.dims()[0];
    if t_len < 1 {
        return Err(Error::unsupported(format!(
            "{op}: the sequence length must be known (and positive) at import to unroll it"
        )));
    }
    // Each step becomes nodes: bound the unrolling (a model may declare any length).
    const MAX_STEPS: i64 = 4096;
    if t_len > MAX_STEPS {
        return Err(Error::unsupported(format!(
            "{op}: a sequence of {t_len} steps is longer than the {MAX_STEPS} ge unrolls"
        )));
    }
    let t_len = t_len as usize;
    let w = ctx.input(1)?;
    let r = ctx.input(2)?;
    let hidden = {
        let rd = ctx.desc(r)?;
        let h = rd.shape.dims().get(2).copied().unwrap_or(-1);
        let attr_h = ctx.attr_i("hidden_size", h)?;
        if h >= 0 && attr_h != h {
            return Err(Error::tr(format!(
                "{op}: hidden_size {attr_h} differs from R's last dim {h}"
            )));
        }
        attr_h
    };
    let b = ctx.opt_input(3)?;
    let seq_lens = match ctx.opt_input(4)? {
        Some(p) => {
            let p = ctx.cast(p, DataType::INT64)?;
            Some(p)
        }
        None => None,
    };
    let init_h = ctx.opt_input(5)?;
    let init_c = if cell == Cell::Lstm {
        ctx.opt_input(6)?
    } else {
        None
    };
    let peep = if cell == Cell::Lstm {
        ctx.opt_input(7)?
    } else {
        None
    };
    // Initial states as [num_directions, batch, hidden].
    let init_h = match init_h {
        Some(p) if layout == 1 => Some(ctx.transpose(p, &[1, 0, 2])?),
        o => o,
    };
    let init_c = match init_c {
        Some(p) if layout == 1 => Some(ctx.transpose(p, &[1, 0, 2])?),
        o => o,
    };
    // Masks per step: t < sequence_lens[b], as [batch, 1].
    let mut masks: Vec<Option<OutPort>> = vec![None; t_len];
    if let Some(l) = seq_lens {
        let col = ctx.const_i64(&[-1, 1], &[2])?;
        let l2 = ctx.op1("Reshape", &[l, col], vec![])?;
        for (t, m) in masks.iter_mut().enumerate() {
            let tc = ctx.const_i64(&[t as i64], &[])?;
            *m = Some(ctx.op1("Less", &[tc, l2], vec![])?);
        }
    }
    let _ = hidden;
    let mut ys = Vec::with_capacity(nd);
    let mut hs = Vec::with_capacity(nd);
    let mut cs = Vec::with_capacity(nd);
    for (d, &reverse) in dirs.iter().enumerate() {
        let act = &acts[d * cell.n_act()..(d + 1) * cell.n_act()];
        let wd = ctx.take0(w, d)?;
        let rd = ctx.take0(r, d)?;
        let wg = ctx.split_n(wd, 0, g)?;
        let rg = ctx.split_n(rd, 0, g)?;
        let (wb, rb) = match b {
            Some(b) => {
                let bd = ctx.take0(b, d)?;
                let parts = ctx.split_n(bd, 0, 2 * g)?;
                (
                    parts[..g].iter().map(|p| Some(*p)).collect::<Vec<_>>(),
                    parts[g..].iter().map(|p| Some(*p)).collect::<Vec<_>>(),
                )
            }
            None => (vec![None; g], vec![None; g]),
        };
        // X W_g^T (+ biases) for every step: [T, batch, hidden] → T tensors.
        let mut xw: Vec<Vec<OutPort>> = Vec::with_capacity(g);
        for k in 0..g {
            let mut y = ctx.op1(
                "BatchMatMulV2",
                &[x, wg[k]],
                vec![("adj_x2", AttrValue::Bool(true))],
            )?;
            // GRU with linear_before_reset: R's bias of the h gate goes inside r * (...).
            let rb_here = !(cell == Cell::Gru && lbr && k == 2);
            let bias = match (wb[k], rb[k]) {
                (Some(a), Some(c)) if rb_here => Some(ctx.op1("Add", &[a, c], vec![])?),
                (Some(a), _) => Some(a),
                _ => None,
            };
            if let Some(bias) = bias {
                y = ctx.op1("Add", &[y, bias], vec![])?;
            }
            xw.push(ctx.unpack(y, t_len)?);
        }
        let zeros = ctx.op1("ZerosLike", &[xw[0][0]], vec![])?;
        let mut h = match init_h {
            Some(p) => ctx.take0(p, d)?,
            None => zeros,
        };
        let mut c = match init_c {
            Some(p) => ctx.take0(p, d)?,
            None => zeros,
        };
        let pd = match peep {
            Some(p) => {
                let pp = ctx.take0(p, d)?;
                ctx.split_n(pp, 0, 3)?.into_iter().map(Some).collect()
            }
            None => vec![None; 3],
        };
        let clip_c = match clip {
            Some(v) => Some((
                ctx.scalar_like(-(v as f64), dt)?,
                ctx.scalar_like(v as f64, dt)?,
            )),
            None => None,
        };
        let mut y_steps: Vec<Option<OutPort>> = vec![None; t_len];
        let order: Vec<usize> = if reverse {
            (0..t_len).rev().collect()
        } else {
            (0..t_len).collect()
        };
        for t in order {
            let rec = |ctx: &mut NodeCtx<'_>, hh: OutPort, k: usize| -> Result<OutPort> {
                ctx.op1(
                    "MatMulV2",
                    &[hh, rg[k]],
                    vec![("transpose_x2", AttrValue::Bool(true))],
                )
            };
            let clipped = |ctx: &mut NodeCtx<'_>, v: OutPort| -> Result<OutPort> {
                match clip_c {
                    Some((lo, hi)) => ctx.op1("ClipByValue", &[v, lo, hi], vec![]),
                    None => Ok(v),
                }
            };
            let (h_new, c_new) = match cell {
                Cell::Rnn => {
                    let pre = rec(ctx, h, 0)?;
                    let pre = ctx.op1("Add", &[xw[0][t], pre], vec![])?;
                    let pre = clipped(ctx, pre)?;
                    (ctx.activate(pre, &act[0], dt)?, None)
                }
                Cell::Gru => {
                    let zp = rec(ctx, h, 0)?;
                    let zp = ctx.op1("Add", &[xw[0][t], zp], vec![])?;
                    let zp = clipped(ctx, zp)?;
                    let z = ctx.activate(zp, &act[0], dt)?;
                    let rp = rec(ctx, h, 1)?;
                    let rp = ctx.op1("Add", &[xw[1][t], rp], vec![])?;
                    let rp = clipped(ctx, rp)?;
                    let rr = ctx.activate(rp, &act[0], dt)?;
                    let hp = if lbr {
                        let mut hr = rec(ctx, h, 2)?;
                        if let Some(rbh) = rb[2] {
                            hr = ctx.op1("Add", &[hr, rbh], vec![])?;
                        }
                        let hr = ctx.op1("Mul", &[rr, hr], vec![])?;
                        ctx.op1("Add", &[xw[2][t], hr], vec![])?
                    } else {
                        let rh = ctx.op1("Mul", &[rr, h], vec![])?;
                        let hr = rec(ctx, rh, 2)?;
                        ctx.op1("Add", &[xw[2][t], hr], vec![])?
                    };
                    let hp = clipped(ctx, hp)?;
                    let hh = ctx.activate(hp, &act[1], dt)?;
                    // (1 - z) * hh + z * h = hh + z * (h - hh)
                    let diff = ctx.op1("Sub", &[h, hh], vec![])?;
                    let zd = ctx.op1("Mul", &[z, diff], vec![])?;
                    (ctx.op1("Add", &[hh, zd], vec![])?, None)
                }
                Cell::Lstm => {
                    // Gate order in W/R/B: i, o, f, c; peepholes: i, o, f.
                    let pre = |ctx: &mut NodeCtx<'_>, k: usize| -> Result<OutPort> {
                        let r = rec(ctx, h, k)?;
                        ctx.op1("Add", &[xw[k][t], r], vec![])
                    };
                    let mut ip = pre(ctx, 0)?;
                    if let Some(pi) = pd[0] {
                        let m = ctx.op1("Mul", &[pi, c], vec![])?;
                        ip = ctx.op1("Add", &[ip, m], vec![])?;
                    }
                    let ip = clipped(ctx, ip)?;
                    let i_g = ctx.activate(ip, &act[0], dt)?;
                    let f_g = if input_forget {
                        let one = ctx.scalar_like(1.0, dt)?;
                        ctx.op1("Sub", &[one, i_g], vec![])?
                    } else {
                        let mut fp = pre(ctx, 2)?;
                        if let Some(pf) = pd[2] {
                            let m = ctx.op1("Mul", &[pf, c], vec![])?;
                            fp = ctx.op1("Add", &[fp, m], vec![])?;
                        }
                        let fp = clipped(ctx, fp)?;
                        ctx.activate(fp, &act[0], dt)?
                    };
                    let cp = pre(ctx, 3)?;
                    let cp = clipped(ctx, cp)?;
                    let c_t = ctx.activate(cp, &act[1], dt)?;
                    let fc = ctx.op1("Mul", &[f_g, c], vec![])?;
                    let ic = ctx.op1("Mul", &[i_g, c_t], vec![])?;
                    let c2 = ctx.op1("Add", &[fc, ic], vec![])?;
                    let mut op_ = pre(ctx, 1)?;
                    if let Some(po) = pd[1] {
                        let m = ctx.op1("Mul", &[po, c2], vec![])?;
                        op_ = ctx.op1("Add", &[op_, m], vec![])?;
                    }
                    let op_ = clipped(ctx, op_)?;
                    let o_g = ctx.activate(op_, &act[0], dt)?;
                    let hc = ctx.activate(c2, &act[2], dt)?;
                    (ctx.op1("Mul", &[o_g, hc], vec![])?, Some(c2))
                }
            };
            match masks[t] {
                Some(m) => {
                    y_steps[t] = Some(ctx.op1("SelectV2", &[m, h_new, zeros], vec![])?);
                    h = ctx.op1("SelectV2", &[m, h_new, h], vec![])?;
                    if let Some(c2) = c_new {
                        c = ctx.op1("SelectV2", &[m, c2, c], vec![])?;
                    }
                }
                None => {
                    y_steps[t] = Some(h_new);
                    h = h_new;
                    if let Some(c2) = c_new {
                        c = c2;
                    }
                }
            }
        }
        let y_steps: Vec<OutPort> = y_steps.into_iter().flatten().collect();
        ys.push(ctx.pack(&y_steps, 0)?);
        hs.push(h);
        cs.push(c);
    }
    // Y: [T, D, batch, hidden]; Y_h, Y_c: [D, batch, hidden].
    let mut y = ctx.pack(&ys, 1)?;
    let mut yh = ctx.pack(&hs, 0)?;
    if layout == 1 {
        y = ctx.transpose(y, &[2, 0, 1, 3])?;
        yh = ctx.transpose(yh, &[1, 0, 2])?;
    }
    let mut out = vec![Some(y), Some(yh)];
    if cell == Cell::Lstm {
        let mut yc = ctx.pack(&cs, 0)?;
        if layout == 1 {
            yc = ctx.transpose(yc, &[1, 0, 2])?;
        }
        out.push(Some(yc));
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Attention (opset 23), following onnx's reference: 3-D inputs split into heads, past key/value
// concatenated (present outputs), sqrt(scale) on Q and K, GQA by repeating K/V heads, softcap,
// mask (bool or additive, padded to the key length) and offset causal bias, softmax (in
// softmax_precision), fully masked rows zeroed, * V.
// ---------------------------------------------------------------------------------------------

fn static_dims(ctx: &NodeCtx<'_>, p: OutPort, what: &str) -> Result<Vec<i64>> {
    let d = ctx.desc(p)?;
    if !d.shape.is_static() || d.shape.is_unknown_rank() {
        return Err(Error::unsupported(format!(
            "{}: the shape of {what} must be static at import",
            ctx.op_type()
        )));
    }
    Ok(d.shape.dims().to_vec())
}

fn attention(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.check_attrs(&[
        "is_causal",
        "kv_num_heads",
        "q_num_heads",
        "qk_matmul_output_mode",
        "scale",
        "softcap",
        "softmax_precision",
    ])?;
    let q = ctx.input(0)?;
    let k = ctx.input(1)?;
    let v = ctx.input(2)?;
    let dt = ctx.desc(q)?.dtype;
    if !matches!(dt, DataType::FLOAT | DataType::FLOAT16 | DataType::BF16) {
        return Err(Error::unsupported(format!(
            "Attention on {dt} (GE's BatchMatMulV2 takes float, float16 and bfloat16)"
        )));
    }
    let qd = static_dims(ctx, q, "Q")?;
    let kd = static_dims(ctx, k, "K")?;
    let vd = static_dims(ctx, v, "V")?;
    if qd.len() != kd.len() || qd.len() != vd.len() || !(qd.len() == 3 || qd.len() == 4) {
        return Err(Error::tr(
            "Attention: Q, K and V must all be 3-D or all 4-D",
        ));
    }
    let three = qd.len() == 3;
    let (mut q4, mut k4, mut v4) = (q, k, v);
    let (qh, kvh);
    if three {
        qh = ctx.attr_i("q_num_heads", 0)?;
        kvh = ctx.attr_i("kv_num_heads", 0)?;
        if qh <= 0 || kvh <= 0 || qd[2] % qh != 0 || kd[2] % kvh != 0 || vd[2] % kvh != 0 {
            return Err(Error::tr(
                "Attention: 3-D inputs need q_num_heads and kv_num_heads dividing the hidden sizes",
            ));
        }
        let split = |ctx: &mut NodeCtx<'_>, x: OutPort, d: &[i64], h: i64| -> Result<OutPort> {
            let s = ctx.const_i64(&[d[0], d[1], h, d[2] / h], &[4])?;
            let y = ctx.op1("Reshape", &[x, s], vec![])?;
            ctx.transpose(y, &[0, 2, 1, 3])
        };
        q4 = split(ctx, q, &qd, qh)?;
        k4 = split(ctx, k, &kd, kvh)?;
        v4 = split(ctx, v, &vd, kvh)?;
    } else {
        if ctx.has_attr("q_num_heads") || ctx.has_attr("kv_num_heads") {
            return Err(Error::tr(
                "Attention: q_num_heads and kv_num_heads must not be given for 4-D inputs",
            ));
        }
        qh = qd[1];
        kvh = kd[1];
    }
    let q4d = static_dims(ctx, q4, "Q")?;
    let (b, sq, dq) = (q4d[0], q4d[2], q4d[3]);
    // Cache.
    let past = match (ctx.opt_input(4)?, ctx.opt_input(5)?) {
        (Some(pk), Some(pv)) => Some((pk, pv)),
        (None, None) => None,
        _ => {
            return Err(Error::tr(
                "Attention: past_key and past_value must be given together",
            ))
        }
    };
    let mut past_len = 0;
    if let Some((pk, pv)) = past {
        past_len = static_dims(ctx, pk, "past_key")?
            .get(2)
            .copied()
            .unwrap_or(0);
        k4 = ctx.concat(&[pk, k4], 2)?;
        v4 = ctx.concat(&[pv, v4], 2)?;
    }
    let (present_k, present_v) = (k4, v4);
    let total = static_dims(ctx, k4, "the keys")?[2];
    let dv = static_dims(ctx, v4, "the values")?[3];
    // Scale: sqrt(scale) on Q and on K, in the input dtype.
    let scale = if ctx.has_attr("scale") {
        ctx.attr_f("scale", 1.0)? as f64
    } else {
        1.0 / (dq as f64).sqrt()
    };
    let s = (scale.sqrt() as f32) as f64;
    let sc = ctx.const_of(dt, &[s], &[])?;
    let qs = ctx.op1("Mul", &[q4, sc], vec![])?;
    let mut ks = ctx.op1("Mul", &[k4, sc], vec![])?;
    let mut vr = v4;
    if qh != kvh {
        if kvh <= 0 || qh % kvh != 0 {
            return Err(Error::tr(format!(
                "Attention: {qh} query heads are not a multiple of {kvh} key/value heads"
            )));
        }
        let reps = qh / kvh;
        let rep = |ctx: &mut NodeCtx<'_>, x: OutPort, d: i64| -> Result<OutPort> {
            let s5 = ctx.const_i64(&[b, kvh, 1, total, d], &[5])?;
            let y = ctx.op1("Reshape", &[x, s5], vec![])?;
            let m = ctx.const_i64(&[1, 1, reps, 1, 1], &[5])?;
            let y = ctx.op1("Tile", &[y, m], vec![])?;
            let s4 = ctx.const_i64(&[b, qh, total, d], &[4])?;
            ctx.op1("Reshape", &[y, s4], vec![])
        };
        ks = rep(ctx, ks, dq)?;
        vr = rep(ctx, vr, dv)?;
    }
    let mut scores = ctx.op1(
        "BatchMatMulV2",
        &[qs, ks],
        vec![("adj_x2", AttrValue::Bool(true))],
    )?;
    let softcap = ctx.attr_f("softcap", 0.0)?;
    if softcap > 0.0 {
        let c = ctx.const_of(dt, &[softcap as f64], &[])?;
        let y = ctx.op1("RealDiv", &[scores, c], vec![])?;
        let y = ctx.op1("Tanh", &[y], vec![])?;
        scores = ctx.op1("Mul", &[y, c], vec![])?;
    }
    // The additive bias.
    let mut bias: Option<OutPort> = None;
    if let Some(mask) = ctx.opt_input(3)? {
        let md = static_dims(ctx, mask, "attn_mask")?;
        let mdt = ctx.desc(mask)?.dtype;
        let last = md.last().copied().unwrap_or(0);
        let mut m = mask;
        if last < total {
            let mut pshape = md.clone();
            if let Some(l) = pshape.last_mut() {
                *l = total - last;
            }
            let n = pshape.iter().product::<i64>().max(0) as usize;
            let pad = if mdt == DataType::BOOL {
                ctx.constant(es_core::Tensor::from_values(
                    &vec![false; n],
                    pshape.clone(),
                )?)?
            } else {
                ctx.const_of(mdt, &vec![f64::NEG_INFINITY; n], &pshape)?
            };
            m = ctx.concat(&[m, pad], md.len() as i64 - 1)?;
        }
        if mdt == DataType::BOOL {
            let z = ctx.const_of(dt, &[0.0], &[])?;
            let ninf = ctx.const_of(dt, &[f64::NEG_INFINITY], &[])?;
            m = ctx.op1("SelectV2", &[m, z, ninf], vec![])?;
        } else {
            m = ctx.cast(m, dt)?;
        }
        bias = Some(m);
    }
    let nonpad = match ctx.opt_input(6)? {
        Some(n) if past.is_some() => {
            let _ = n;
            return Err(Error::tr(
                "Attention: nonpad_kv_seqlen cannot be combined with past_key/past_value",
            ));
        }
        Some(n) => {
            let n = ctx.cast(n, DataType::INT64)?;
            let s = ctx.const_i64(&[-1, 1, 1, 1], &[4])?;
            Some(ctx.op1("Reshape", &[n, s], vec![])?)
        }
        None => None,
    };
    let causal = ctx.attr_i("is_causal", 0)? != 0;
    if let Some(n) = nonpad {
        // Per batch item: keys j < nonpad[b]; causal: j <= i + nonpad[b] - Sq.
        let jv: Vec<i64> = (0..total).collect();
        let j = ctx.const_i64(&jv, &[1, 1, 1, total])?;
        let z = ctx.const_of(dt, &[0.0], &[])?;
        let ninf = ctx.const_of(dt, &[f64::NEG_INFINITY], &[])?;
        let ok = ctx.op1("Less", &[j, n], vec![])?;
        let mut nb = ctx.op1("SelectV2", &[ok, z, ninf], vec![])?;
        if causal {
            let iv: Vec<i64> = (0..sq).map(|i| i - sq).collect();
            let i = ctx.const_i64(&iv, &[1, 1, sq, 1])?;
            let lim = ctx.op1("Add", &[i, n], vec![])?;
            let ok = ctx.op1("LessEqual", &[j, lim], vec![])?;
            let cb = ctx.op1("SelectV2", &[ok, z, ninf], vec![])?;
            nb = ctx.op1("Add", &[nb, cb], vec![])?;
        }
        bias = Some(match bias {
            Some(m) => ctx.op1("Add", &[m, nb], vec![])?,
            None => nb,
        });
    }
    if causal && nonpad.is_none() {
        super::util::const_elems(&[sq, total], "Attention causal mask")?;
        let mut vals = Vec::with_capacity((sq * total).max(0) as usize);
        for i in 0..sq {
            for j in 0..total {
                vals.push(if j <= i + past_len {
                    0.0
                } else {
                    f64::NEG_INFINITY
                });
            }
        }
        let c = ctx.const_of(dt, &vals, &[sq, total])?;
        bias = Some(match bias {
            Some(m) => ctx.op1("Add", &[m, c], vec![])?,
            None => c,
        });
    }
    let with_bias = match bias {
        Some(bb) => ctx.op1("Add", &[scores, bb], vec![])?,
        None => scores,
    };
    let mode = ctx.attr_i("qk_matmul_output_mode", 0)?;
    if !(0..=3).contains(&mode) {
        return Err(Error::tr(format!(
            "Attention: qk_matmul_output_mode {mode} must be 0..3"
        )));
    }
    let mut x = with_bias;
    if ctx.has_attr("softmax_precision") {
        let sp = crate::types::dtype_from_onnx(ctx.attr_i("softmax_precision", 1)? as i32)?;
        x = ctx.cast(x, sp)?;
    }
    let mut p = ctx.op1(
        "SoftmaxV2",
        &[x],
        vec![("axes", AttrValue::ListInt(vec![-1]))],
    )?;
    p = ctx.cast(p, dt)?;
    if let Some(bb) = bias {
        // Rows whose bias is -inf everywhere give 0.
        let ax = ctx.const_i64(&[-1], &[1])?;
        let mx = ctx.op1(
            "ReduceMax",
            &[bb, ax],
            vec![("keep_dims", AttrValue::Bool(true))],
        )?;
        let ninf = ctx.const_of(dt, &[f64::NEG_INFINITY], &[])?;
        let all = ctx.op1("Equal", &[mx, ninf], vec![])?;
        let z = ctx.const_of(dt, &[0.0], &[])?;
        p = ctx.op1("SelectV2", &[all, z, p], vec![])?;
    }
    let qk_out = match mode {
        2 => with_bias,
        3 => p,
        _ => scores,
    };
    let mut y = ctx.op1("BatchMatMulV2", &[p, vr], vec![])?;
    if three {
        y = ctx.transpose(y, &[0, 2, 1, 3])?;
        let s = ctx.const_i64(&[b, sq, qh * dv], &[3])?;
        y = ctx.op1("Reshape", &[y, s], vec![])?;
    }
    Ok(vec![
        Some(y),
        Some(present_k),
        Some(present_v),
        Some(qk_out),
    ])
}

// ---------------------------------------------------------------------------------------------
// RotaryEmbedding (opset 23)
// ---------------------------------------------------------------------------------------------

fn rotary_embedding(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.check_attrs(&["interleaved", "num_heads", "rotary_embedding_dim"])?;
    let x = ctx.input(0)?;
    let cos = ctx.input(1)?;
    let sin = ctx.input(2)?;
    let dt = ctx.desc(x)?.dtype;
    let xd = static_dims(ctx, x, "the input")?;
    let interleaved = ctx.attr_i("interleaved", 0)? != 0;
    // To [batch, seq, heads, head_size].
    let (x4, d4) = match xd.len() {
        4 => {
            let y = ctx.transpose(x, &[0, 2, 1, 3])?;
            (y, vec![xd[0], xd[2], xd[1], xd[3]])
        }
        3 => {
            let nh = ctx.attr_i("num_heads", 0)?;
            if nh <= 0 || xd[2] % nh != 0 {
                return Err(Error::tr(
                    "RotaryEmbedding: a 3-D input needs num_heads dividing its hidden size",
                ));
            }
            let d = vec![xd[0], xd[1], nh, xd[2] / nh];
            let s = ctx.const_i64(&d, &[4])?;
            (ctx.op1("Reshape", &[x, s], vec![])?, d)
        }
        _ => return Err(Error::tr("RotaryEmbedding: the input must be 3-D or 4-D")),
    };
    let head = d4[3];
    let mut rd = ctx.attr_i("rotary_embedding_dim", 0)?;
    if rd == 0 {
        rd = head;
    }
    if rd <= 0 || rd > head || rd % 2 != 0 {
        return Err(Error::tr(format!(
            "RotaryEmbedding: rotary_embedding_dim {rd} must be even and at most the head size {head}"
        )));
    }
    let half = rd / 2;
    let (x_rot, x_pass) = if rd < head {
        let sizes = ctx.const_i64(&[rd, head - rd], &[2])?;
        let ax = ctx.const_i64(&[3], &[])?;
        let parts = ctx.op(
            "SplitV",
            vec![vec![Some(x4)], vec![Some(sizes)], vec![Some(ax)]],
            vec![("num_split", AttrValue::Int(2))],
        )?;
        (parts[0], Some(parts[1]))
    } else {
        (x4, None)
    };
    let (mut c, mut s) = (cos, sin);
    if let Some(pos) = ctx.opt_input(3)? {
        let ax = ctx.const_i64(&[0], &[])?;
        c = ctx.op1("GatherV2", &[c, pos, ax], vec![])?;
        s = ctx.op1("GatherV2", &[s, pos, ax], vec![])?;
    }
    let cs = ctx.const_i64(&[d4[0], d4[1], 1, half], &[4])?;
    let c = ctx.op1("Reshape", &[c, cs], vec![])?;
    let s = ctx.op1("Reshape", &[s, cs], vec![])?;
    let c = ctx.cast(c, dt)?;
    let s = ctx.cast(s, dt)?;
    let (x1, x2) = if interleaved {
        let sh = ctx.const_i64(&[d4[0], d4[1], d4[2], half, 2], &[5])?;
        let y = ctx.op1("Reshape", &[x_rot, sh], vec![])?;
        let parts = ctx.op(
            "Unpack",
            vec![vec![Some(y)]],
            vec![("num", AttrValue::Int(2)), ("axis", AttrValue::Int(4))],
        )?;
        (parts[0], parts[1])
    } else {
        let parts = ctx.split_n(x_rot, 3, 2)?;
        (parts[0], parts[1])
    };
    let a = ctx.op1("Mul", &[c, x1], vec![])?;
    let bb = ctx.op1("Mul", &[s, x2], vec![])?;
    let real = ctx.op1("Sub", &[a, bb], vec![])?;
    let a = ctx.op1("Mul", &[s, x1], vec![])?;
    let bb = ctx.op1("Mul", &[c, x2], vec![])?;
    let imag = ctx.op1("Add", &[a, bb], vec![])?;
    let mut rot = if interleaved {
        let y = ctx.pack(&[real, imag], 4)?;
        let sh = ctx.const_i64(&[d4[0], d4[1], d4[2], rd], &[4])?;
        ctx.op1("Reshape", &[y, sh], vec![])?
    } else {
        ctx.concat(&[real, imag], 3)?
    };
    if let Some(p) = x_pass {
        rot = ctx.concat(&[rot, p], 3)?;
    }
    let y = if xd.len() == 4 {
        ctx.transpose(rot, &[0, 2, 1, 3])?
    } else {
        let sh = ctx.const_i64(&xd, &[3])?;
        ctx.op1("Reshape", &[rot, sh], vec![])?
    };
    Ok(vec![Some(y)])
}
