//! ai.onnx.preview.training::Gradient by reverse-mode differentiation at import.
//!
//! The attributes `xs`, `zs` and `y` name values of the graph; the node's inputs (one per
//! name of `xs`, then of `zs`) are the values at which the derivatives are taken. When an input
//! is not the value its name refers to, the part of the graph between the named values and `y`
//! is built again reading the inputs (nodes cloned with their inputs replaced). The backward
//! graph is then emitted as GE ops over the (possibly rebuilt) forward nodes: each node on a
//! path from an `xs` value to `y` is differentiated by the rule of its GE op type, the
//! contributions to one value summed, binary ops' gradients summed over the broadcast axes and
//! reshaped to the input's shape. The seed is ones of `y`'s shape: output `i` is the gradient
//! of sum(y) with respect to `xs[i]` (for a scalar `y`, dy/dx); an `xs` value that `y` does not
//! depend on gets zeros of its shape. A node on the path whose op has no rule is refused at
//! import: `not supported: Gradient through <GE op> (node '<name>')`.

use super::util::*;
use crate::attrs::OnnxAttr;
use crate::error::{Error, Result};
use crate::translate::NodeCtx;
use es_core::ops::IoKind;
use es_core::{AttrValue, Graph, Node, NodeId, OpArgs, OutPort};
use rustc_hash::{FxHashMap, FxHashSet};

/// The family's translators.
pub(super) const TABLE: &[(&str, Translator)] = &[("ai.onnx.preview.training::Gradient", gradient)];

/// A STRINGS attribute (empty when absent).
fn strings_attr(ctx: &NodeCtx<'_>, name: &str) -> Result<Vec<String>> {
    match ctx.attr(name)? {
        None => Ok(Vec::new()),
        Some(OnnxAttr::Strings(v)) => Ok(v),
        Some(OnnxAttr::String(s)) => Ok(vec![s]),
        Some(a) => Err(Error::tr(format!(
            "Gradient: attribute '{name}' must be STRINGS, got {}",
            a.kind()
        ))),
    }
}

fn gradient(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["xs", "zs", "y"])?;
    let xs = strings_attr(ctx, "xs")?;
    let zs = strings_attr(ctx, "zs")?;
    let y = ctx.attr_s("y", "")?;
    if xs.is_empty() || y.is_empty() {
        return Err(Error::tr(
            "Gradient needs the attributes 'xs' (the values to differentiate by) and 'y'",
        ));
    }
    if ctx.num_inputs() != xs.len() + zs.len() {
        return Err(Error::tr(format!(
            "Gradient: expected {} inputs (one per name of 'xs' and 'zs'), got {}",
            xs.len() + zs.len(),
            ctx.num_inputs()
        )));
    }
    if ctx.num_outputs() > xs.len() {
        return Err(Error::tr(format!(
            "Gradient: {} outputs for {} names in 'xs' (one output per name at most)",
            ctx.num_outputs(),
            xs.len()
        )));
    }
    if ctx.in_subgraph() {
        return Err(Error::unsupported(
            "Gradient inside a body graph (If, Loop, Scan); only in the main graph",
        ));
    }
    // The named values, and the fed ones that replace them.
    let mut subst: FxHashMap<OutPort, OutPort> = FxHashMap::default();
    let mut at = Vec::with_capacity(xs.len());
    for (i, name) in xs.iter().chain(&zs).enumerate() {
        let named = ctx
            .value(name)
            .map_err(|e| e.context(&format!("Gradient: '{name}' (attribute xs/zs)")))?;
        let fed = ctx.input(i)?;
        if i < xs.len() {
            let dt = ctx.desc(fed)?.dtype;
            if !dt.is_float() {
                return Err(Error::unsupported(format!(
                    "Gradient with respect to '{name}' of dtype {dt} (float types only)"
                )));
            }
            at.push(fed);
        }
        if named != fed {
            if let Some(prev) = subst.insert(named, fed) {
                if prev != fed {
                    return Err(Error::tr(format!(
                        "Gradient: '{name}' is named twice with different inputs"
                    )));
                }
            }
        }
    }
    let y_named = ctx
        .value(&y)
        .map_err(|e| e.context(&format!("Gradient: '{y}' (attribute y)")))?;
    let y_port = if subst.is_empty() {
        y_named
    } else {
        recompute(ctx, &subst, y_named)?
    };
    let ydt = ctx.desc(y_port)?.dtype;
    if !ydt.is_float() {
        return Err(Error::unsupported(format!(
            "Gradient of '{y}' of dtype {ydt} (float types only)"
        )));
    }
    let grads = backward(ctx, y_port, &at)?;
    Ok((0..ctx.num_outputs())
        .map(|i| ctx.output_used(i).then(|| grads[i]))
        .collect())
}

/// The nodes `y` depends on (its node included), not looking past the values `stop` accepts.
fn cone(g: &Graph, y: OutPort, stop: impl Fn(OutPort) -> bool) -> Result<FxHashSet<NodeId>> {
    let mut seen = FxHashSet::default();
    if stop(y) {
        return Ok(seen);
    }
    let mut todo = vec![y.node];
    seen.insert(y.node);
    while let Some(id) = todo.pop() {
        for s in &g.node(id)?.inputs {
            if let Some(p) = s.source {
                if !stop(p) && seen.insert(p.node) {
                    todo.push(p.node);
                }
            }
        }
    }
    Ok(seen)
}

/// `ids` in creation order (a topological order: a node is built after its inputs).
fn in_order(g: &Graph, ids: impl IntoIterator<Item = NodeId>) -> Result<Vec<NodeId>> {
    let mut v: Vec<(u64, NodeId)> = Vec::new();
    for id in ids {
        v.push((g.node(id)?.seq, id));
    }
    v.sort_unstable_by_key(|e| e.0);
    Ok(v.into_iter().map(|e| e.1).collect())
}

/// `y` computed again with the values of `subst` replaced: every node between them and `y`
/// is cloned reading the replacements.
fn recompute(
    ctx: &mut NodeCtx<'_>,
    subst: &FxHashMap<OutPort, OutPort>,
    y: OutPort,
) -> Result<OutPort> {
    let g = ctx.graph();
    let order = in_order(g, cone(g, y, |p| subst.contains_key(&p))?)?;
    let mut remap = subst.clone();
    for id in order {
        let reads = g_reads(ctx.graph(), id, |p| remap.contains_key(&p))?;
        if reads {
            let new = clone_node(ctx, id, &remap)?;
            let n = ctx.graph().node(id)?.outputs.len() as u32;
            for index in 0..n {
                remap.insert(OutPort { node: id, index }, OutPort { node: new, index });
            }
        }
    }
    Ok(remap.get(&y).copied().unwrap_or(y))
}

/// Whether node `id` reads a value `hit` accepts.
fn g_reads(g: &Graph, id: NodeId, hit: impl Fn(OutPort) -> bool) -> Result<bool> {
    Ok(g.node(id)?
        .inputs
        .iter()
        .any(|s| s.source.is_some_and(&hit)))
}

/// A copy of node `id` (attributes, private attributes, subgraphs) reading `remap`'s
/// replacements of its inputs.
fn clone_node(
    ctx: &mut NodeCtx<'_>,
    id: NodeId,
    remap: &FxHashMap<OutPort, OutPort>,
) -> Result<NodeId> {
    let n: Node = ctx.graph().node(id)?.clone();
    let proto = ctx.graph_op_proto(&n.op_type).map_err(|_| {
        Error::unsupported(format!(
            "Gradient at fed values: rebuilding {} (node '{}')",
            n.op_type, n.name
        ))
    })?;
    let mut inputs: Vec<Vec<Option<OutPort>>> = vec![Vec::new(); proto.inputs.len()];
    for s in &n.inputs {
        let src = s.source.map(|p| remap.get(&p).copied().unwrap_or(p));
        inputs
            .get_mut(s.ir_index as usize)
            .ok_or_else(|| Error::tr(format!("internal: node '{}' input index", n.name)))?
            .push(src);
    }
    for (v, def) in inputs.iter_mut().zip(&proto.inputs) {
        if v.is_empty() && def.kind != IoKind::Dynamic {
            v.push(None);
        }
    }
    let mut subgraphs: Vec<Vec<Graph>> = vec![Vec::new(); proto.subgraphs.len()];
    for s in &n.subgraphs {
        if let Some(v) = subgraphs.get_mut(s.ir_index as usize) {
            v.push(s.graph.clone());
        }
    }
    let mut output_counts = std::collections::HashMap::new();
    for (ir, def) in proto.outputs.iter().enumerate() {
        if def.kind == IoKind::Dynamic {
            let k = n
                .outputs
                .iter()
                .filter(|o| o.ir_index as usize == ir)
                .count();
            output_counts.insert(def.name.clone(), k);
        }
    }
    let name = ctx.fresh_name(&n.op_type);
    let outs = ctx.add(
        &n.op_type,
        OpArgs {
            inputs,
            attrs: n.attrs.clone(),
            subgraphs,
            output_counts,
            name: Some(name),
        },
    )?;
    let new = outs.first().map_or_else(
        || {
            // An op without outputs has nothing `y` could read.
            Err(Error::tr(format!("internal: {} has no output", n.op_type)))
        },
        |p| Ok(p.node),
    )?;
    if !n.private_attrs.is_empty() {
        let mut b = ctx.take_builder();
        let r = b
            .graph_mut()
            .node_mut(new)
            .map(|m| m.private_attrs.clone_from(&n.private_attrs));
        ctx.put_builder(b);
        r?;
    }
    Ok(new)
}

/// The gradients of sum(`y`) with respect to each of `at`.
fn backward(ctx: &mut NodeCtx<'_>, y: OutPort, at: &[OutPort]) -> Result<Vec<OutPort>> {
    let targets: FxHashSet<OutPort> = at.iter().copied().collect();
    let g = ctx.graph();
    let order = in_order(g, cone(g, y, |_| false)?)?;
    // Active: the nodes of the cone with a float output that read a target (directly or
    // through active nodes).
    let mut active: FxHashSet<NodeId> = FxHashSet::default();
    for &id in &order {
        let n = g.node(id)?;
        let floats = n.outputs.iter().any(|o| o.desc.dtype.is_float());
        let reads = n.inputs.iter().any(|s| {
            s.source
                .is_some_and(|p| targets.contains(&p) || active.contains(&p.node))
        });
        if floats && reads {
            active.insert(id);
        }
    }
    let mut grads: FxHashMap<OutPort, OutPort> = FxHashMap::default();
    if active.contains(&y.node) || targets.contains(&y) {
        let one = ones_like(ctx, y)?;
        grads.insert(y, one);
    }
    for &id in order.iter().rev() {
        if !active.contains(&id) {
            continue;
        }
        let n: Node = ctx.graph().node(id)?.clone();
        let gy: Vec<Option<OutPort>> = (0..n.outputs.len() as u32)
            .map(|index| grads.get(&OutPort { node: id, index }).copied())
            .collect();
        if gy.iter().all(Option::is_none) {
            continue;
        }
        let mut need = Vec::with_capacity(n.inputs.len());
        for s in &n.inputs {
            need.push(match s.source {
                Some(p) => {
                    (targets.contains(&p) || active.contains(&p.node))
                        && ctx.desc(p)?.dtype.is_float()
                }
                None => false,
            });
        }
        if !need.iter().any(|&b| b) {
            continue;
        }
        let site = Site {
            n: &n,
            id,
            need: &need,
        };
        let dx = rule(ctx, &site, &gy)?;
        for (j, d) in dx.into_iter().enumerate() {
            let (Some(d), true, Some(src)) = (d, need[j], n.inputs[j].source) else {
                continue;
            };
            let d = match grads.get(&src) {
                Some(&prev) => ctx.bin("Add", prev, d)?,
                None => d,
            };
            grads.insert(src, d);
        }
    }
    let mut out = Vec::with_capacity(at.len());
    for &x in at {
        out.push(match grads.get(&x) {
            Some(&d) => {
                let dt = ctx.desc(x)?.dtype;
                ctx.cast(d, dt)?
            }
            None => ctx.un("ZerosLike", x)?,
        });
    }
    Ok(out)
}

/// One node being differentiated.
struct Site<'n> {
    n: &'n Node,
    id: NodeId,
    /// Per input instance: whether its gradient is wanted.
    need: &'n [bool],
}

impl Site<'_> {
    fn input(&self, j: usize) -> Result<OutPort> {
        self.n
            .inputs
            .get(j)
            .and_then(|s| s.source)
            .ok_or_else(|| Error::tr(format!("internal: node '{}' input {j}", self.n.name)))
    }
    fn output(&self, index: u32) -> OutPort {
        OutPort {
            node: self.id,
            index,
        }
    }
    fn need(&self, j: usize) -> bool {
        self.need.get(j).copied().unwrap_or(false)
    }
    fn attr_f(&self, name: &str, default: f32) -> f64 {
        f64::from(
            self.n
                .attrs
                .get(name)
                .and_then(AttrValue::as_float)
                .unwrap_or(default),
        )
    }
    fn attr_b(&self, name: &str) -> bool {
        self.n
            .attrs
            .get(name)
            .and_then(AttrValue::as_bool)
            .unwrap_or(false)
    }
    fn refuse(&self, why: &str) -> Error {
        Error::unsupported(format!(
            "Gradient through {} (node '{}'){why}",
            self.n.op_type, self.n.name
        ))
    }
    /// The constant integers of input `j` (an axes or permutation input).
    fn const_ints(&self, ctx: &NodeCtx<'_>, j: usize, what: &str) -> Result<Vec<i64>> {
        let p = self.input(j)?;
        match ctx.const_value(p) {
            Some(t) => Ok(t.to_i64_vec()?),
            None => Err(self.refuse(&format!(": its {what} must be a constant"))),
        }
    }
}

/// Ones of `p`'s shape and dtype.
fn ones_like(ctx: &mut NodeCtx<'_>, p: OutPort) -> Result<OutPort> {
    let dt = ctx.desc(p)?.dtype;
    let s = shape_port(ctx, p)?;
    let one = ctx.scalar(dt, 1.0)?;
    ctx.op1("Fill", &[s, one], vec![])
}

/// `p`'s shape as a 1-D int64 value: a constant when static, else Shape(p).
fn shape_port(ctx: &mut NodeCtx<'_>, p: OutPort) -> Result<OutPort> {
    let d = ctx.desc(p)?;
    if d.shape.rank().is_some() && d.shape.is_static() {
        let dims = d.shape.dims().to_vec();
        return ctx.const_i64(&dims, &[dims.len() as i64]);
    }
    ctx.shape_i64(p)
}

/// The static dims of `p` (-1 where unknown), or an error naming the site.
fn dims_of(ctx: &NodeCtx<'_>, site: &Site<'_>, p: OutPort) -> Result<Vec<i64>> {
    let d = ctx.desc(p)?;
    match d.shape.rank() {
        Some(_) => Ok(d.shape.dims().to_vec()),
        None => Err(site.refuse(": the ranks of its values must be known at import")),
    }
}

/// `d` reshaped to `like`'s shape (no node when both are the same static shape).
fn reshape_like(ctx: &mut NodeCtx<'_>, d: OutPort, like: OutPort) -> Result<OutPort> {
    let (a, b) = (ctx.desc(d)?.shape, ctx.desc(like)?.shape);
    if a.rank().is_some() && a.is_static() && a == b {
        return Ok(d);
    }
    let s = shape_port(ctx, like)?;
    ctx.op1("Reshape", &[d, s], vec![])
}

/// The gradient `d` of a broadcast result summed over the axes along which `target` was
/// broadcast, with `target`'s shape.
fn unbroadcast(
    ctx: &mut NodeCtx<'_>,
    site: &Site<'_>,
    d: OutPort,
    target: OutPort,
) -> Result<OutPort> {
    let gd = dims_of(ctx, site, d)?;
    let td = dims_of(ctx, site, target)?;
    if td.len() > gd.len() {
        return Err(Error::tr(format!(
            "internal: Gradient through node '{}': a gradient of rank {} for a value of rank {}",
            site.n.name,
            gd.len(),
            td.len()
        )));
    }
    let lead = gd.len() - td.len();
    let mut axes: Vec<i64> = (0..lead as i64).collect();
    let mut runtime = false;
    for (i, &t) in td.iter().enumerate() {
        let gdim = gd[lead + i];
        match t {
            // Summing a dim of 1 is harmless, so a target dim of 1 is always summed.
            1 => axes.push((lead + i) as i64),
            // An unknown dim may be 1 when it runs (two unknown dims are not known equal).
            t if t < 0 && gdim != 1 => runtime = true,
            _ => {}
        }
    }
    let summed = if runtime {
        // Which dims of the target are 1 is known only when it runs: the axes come from
        // Where(Shape(target) padded with leading ones == 1).
        let st = ctx.shape_i64(target)?;
        let padded = if lead > 0 {
            let ones = ctx.const_i64(&vec![1; lead], &[lead as i64])?;
            ctx.concat(&[ones, st], 0)?
        } else {
            st
        };
        let one = ctx.const_i64(&[1], &[])?;
        let mask = ctx.bin("Equal", padded, one)?;
        let w = ctx.un("Where", mask)?;
        let flat = ctx.const_i64(&[-1], &[1])?;
        let axes = ctx.op1("Reshape", &[w, flat], vec![])?;
        ctx.op1(
            "ReduceSum",
            &[d, axes],
            vec![
                ("keep_dims", AttrValue::Bool(true)),
                ("noop_with_empty_axes", AttrValue::Bool(true)),
            ],
        )?
    } else if axes.is_empty() {
        return Ok(d);
    } else {
        ctx.reduce_keep("ReduceSum", d, &axes)?
    };
    reshape_like(ctx, summed, target)
}

/// `d` times a scalar constant of its dtype.
fn scale(ctx: &mut NodeCtx<'_>, d: OutPort, k: f64) -> Result<OutPort> {
    let c = ctx.scalar_as(d, k)?;
    ctx.bin("Mul", d, c)
}

/// A zero scalar of `like`'s dtype.
fn zero_as(ctx: &mut NodeCtx<'_>, like: OutPort) -> Result<OutPort> {
    ctx.scalar_as(like, 0.0)
}

/// Input gradients of one node from its output gradients `gy` (one entry per input instance,
/// None where none is wanted or none flows).
fn rule(
    ctx: &mut NodeCtx<'_>,
    site: &Site<'_>,
    gy: &[Option<OutPort>],
) -> Result<Vec<Option<OutPort>>> {
    let n = site.n;
    let op = n.op_type.as_str();
    let k = n.inputs.len();
    let mut dx: Vec<Option<OutPort>> = vec![None; k];
    // Every rule is of an op's first output.
    if gy.iter().skip(1).any(Option::is_some) {
        return Err(site.refuse(""));
    }
    let Some(g) = gy.first().copied().flatten() else {
        return Ok(dx);
    };
    let y = site.output(0);
    if let Some(d) = unary_rule(ctx, site, g, y)? {
        dx[0] = d;
        return Ok(dx);
    }
    match op {
        "Add" | "AddV2" | "Sub" => {
            for (j, slot) in dx.iter_mut().enumerate().take(2) {
                if site.need(j) {
                    let d = if j == 1 && op == "Sub" {
                        ctx.un("Neg", g)?
                    } else {
                        g
                    };
                    *slot = Some(unbroadcast(ctx, site, d, site.input(j)?)?);
                }
            }
        }
        "Mul" => {
            for (j, slot) in dx.iter_mut().enumerate().take(2) {
                if site.need(j) {
                    let d = ctx.bin("Mul", g, site.input(1 - j)?)?;
                    *slot = Some(unbroadcast(ctx, site, d, site.input(j)?)?);
                }
            }
        }
        "RealDiv" | "Div" => {
            let (a, b) = (site.input(0)?, site.input(1)?);
            if site.need(0) {
                let d = ctx.bin("RealDiv", g, b)?;
                dx[0] = Some(unbroadcast(ctx, site, d, a)?);
            }
            if site.need(1) {
                // d(a/b)/db = -(a/b)/b
                let gy = ctx.bin("Mul", g, y)?;
                let d = ctx.bin("RealDiv", gy, b)?;
                let d = ctx.un("Neg", d)?;
                dx[1] = Some(unbroadcast(ctx, site, d, b)?);
            }
        }
        "Pow" => {
            let (a, b) = (site.input(0)?, site.input(1)?);
            if site.need(0) {
                // b * a^(b-1)
                let one = ctx.scalar_as(b, 1.0)?;
                let bm1 = ctx.bin("Sub", b, one)?;
                let p = ctx.bin("Pow", a, bm1)?;
                let p = ctx.bin("Mul", b, p)?;
                let d = ctx.bin("Mul", g, p)?;
                dx[0] = Some(unbroadcast(ctx, site, d, a)?);
            }
            if site.need(1) {
                // y * ln(a), 0 where a is 0 (the limit for b > 0)
                let la = ctx.un("Log", a)?;
                let d = ctx.bin("Mul", y, la)?;
                let d = ctx.bin("Mul", g, d)?;
                let z = zero_as(ctx, a)?;
                let is0 = ctx.bin("Equal", a, z)?;
                let zd = zero_as(ctx, d)?;
                let d = ctx.op1("SelectV2", &[is0, zd, d], vec![])?;
                dx[1] = Some(unbroadcast(ctx, site, d, b)?);
            }
        }
        "Maximum" | "Minimum" => {
            let (a, b) = (site.input(0)?, site.input(1)?);
            let cmp = if op == "Maximum" {
                "GreaterEqual"
            } else {
                "LessEqual"
            };
            // Ties go to the first input.
            let first = ctx.bin(cmp, a, b)?;
            let z = zero_as(ctx, g)?;
            if site.need(0) {
                let d = ctx.op1("SelectV2", &[first, g, z], vec![])?;
                dx[0] = Some(unbroadcast(ctx, site, d, a)?);
            }
            if site.need(1) {
                let d = ctx.op1("SelectV2", &[first, z, g], vec![])?;
                dx[1] = Some(unbroadcast(ctx, site, d, b)?);
            }
        }
        "SelectV2" | "Select" => {
            let c = site.input(0)?;
            let z = zero_as(ctx, g)?;
            for (j, pick) in [(1, [g, z]), (2, [z, g])] {
                if site.need(j) {
                    let d = ctx.op1("SelectV2", &[c, pick[0], pick[1]], vec![])?;
                    dx[j] = Some(unbroadcast(ctx, site, d, site.input(j)?)?);
                }
            }
        }
        "ClipByValue" => {
            let (x, lo, hi) = (site.input(0)?, site.input(1)?, site.input(2)?);
            let z = zero_as(ctx, g)?;
            if site.need(0) {
                let ge = ctx.bin("GreaterEqual", x, lo)?;
                let le = ctx.bin("LessEqual", x, hi)?;
                let d = ctx.op1("SelectV2", &[le, g, z], vec![])?;
                dx[0] = Some(ctx.op1("SelectV2", &[ge, d, z], vec![])?);
            }
            for (j, cmp, bound) in [(1, "Less", lo), (2, "Greater", hi)] {
                if site.need(j) {
                    let out = ctx.bin(cmp, x, bound)?;
                    let d = ctx.op1("SelectV2", &[out, g, z], vec![])?;
                    dx[j] = Some(unbroadcast(ctx, site, d, bound)?);
                }
            }
        }
        "MatMul" | "MatMulV2" | "BatchMatMul" | "BatchMatMulV2" => {
            matmul_rule(ctx, site, g, &mut dx)?;
        }
        "ConcatV2" => concat_rule(ctx, site, g, &mut dx)?,
        _ => return Err(site.refuse("")),
    }
    Ok(dx)
}

/// The input gradient of an op of one differentiable input (None: `op` is not one; Some(None):
/// no gradient flows, as through Floor).
fn unary_rule(
    ctx: &mut NodeCtx<'_>,
    site: &Site<'_>,
    g: OutPort,
    y: OutPort,
) -> Result<Option<Option<OutPort>>> {
    let n = site.n;
    let op = n.op_type.as_str();
    let mut out: Option<OutPort> = None;
    match op {
        "Identity" | "Snapshot" => out = Some(g),
        "StopGradient" | "Sign" | "Floor" | "Ceil" | "Round" | "Rint" | "ZerosLike" => {}
        "Cast" => {
            let dt = ctx.desc(site.input(0)?)?.dtype;
            out = Some(ctx.cast(g, dt)?);
        }
        "Neg" => out = Some(ctx.un("Neg", g)?),
        "Exp" => {
            // y = base^(scale*x + shift); base -1 is e.
            let base = site.attr_f("base", -1.0);
            let s = site.attr_f("scale", 1.0);
            let k = s * if base == -1.0 { 1.0 } else { base.ln() };
            let d = ctx.bin("Mul", g, y)?;
            out = Some(if k == 1.0 { d } else { scale(ctx, d, k)? });
        }
        "Log" => {
            // y = ln(scale*x + shift) / ln(base); base -1 is e.
            let base = site.attr_f("base", -1.0);
            let s = site.attr_f("scale", 1.0);
            let shift = site.attr_f("shift", 0.0);
            let x = site.input(0)?;
            let mut den = x;
            if s != 1.0 {
                den = scale(ctx, den, s)?;
            }
            if shift != 0.0 {
                let c = ctx.scalar_as(den, shift)?;
                den = ctx.bin("Add", den, c)?;
            }
            let k = s / if base == -1.0 { 1.0 } else { base.ln() };
            let d = ctx.bin("RealDiv", g, den)?;
            out = Some(if k == 1.0 { d } else { scale(ctx, d, k)? });
        }
        "Sqrt" => {
            let d = ctx.bin("RealDiv", g, y)?;
            out = Some(scale(ctx, d, 0.5)?);
        }
        "Rsqrt" => {
            let y2 = ctx.bin("Mul", y, y)?;
            let y3 = ctx.bin("Mul", y2, y)?;
            let d = ctx.bin("Mul", g, y3)?;
            out = Some(scale(ctx, d, -0.5)?);
        }
        "Reciprocal" => {
            let y2 = ctx.bin("Mul", y, y)?;
            let d = ctx.bin("Mul", g, y2)?;
            out = Some(ctx.un("Neg", d)?);
        }
        "Square" => {
            let d = ctx.bin("Mul", g, site.input(0)?)?;
            out = Some(scale(ctx, d, 2.0)?);
        }
        "Abs" => {
            let s = ctx.un("Sign", site.input(0)?)?;
            out = Some(ctx.bin("Mul", g, s)?);
        }
        "Relu" | "LeakyRelu" => {
            let x = site.input(0)?;
            let z = zero_as(ctx, x)?;
            let pos = ctx.bin("Greater", x, z)?;
            let slope = if op == "Relu" {
                0.0
            } else {
                site.attr_f("negative_slope", 0.0)
            };
            let other = if slope == 0.0 {
                zero_as(ctx, g)?
            } else {
                scale(ctx, g, slope)?
            };
            out = Some(ctx.op1("SelectV2", &[pos, g, other], vec![])?);
        }
        "Sigmoid" => {
            let one = ctx.scalar_as(y, 1.0)?;
            let c = ctx.bin("Sub", one, y)?;
            let s = ctx.bin("Mul", y, c)?;
            out = Some(ctx.bin("Mul", g, s)?);
        }
        "Tanh" => {
            let one = ctx.scalar_as(y, 1.0)?;
            let y2 = ctx.bin("Mul", y, y)?;
            let c = ctx.bin("Sub", one, y2)?;
            out = Some(ctx.bin("Mul", g, c)?);
        }
        "Softplus" => {
            let s = ctx.un("Sigmoid", site.input(0)?)?;
            out = Some(ctx.bin("Mul", g, s)?);
        }
        "Erf" => {
            let x = site.input(0)?;
            let x2 = ctx.bin("Mul", x, x)?;
            let e = ctx.un("Neg", x2)?;
            let e = ctx.un("Exp", e)?;
            let d = ctx.bin("Mul", g, e)?;
            out = Some(scale(ctx, d, 2.0 / std::f64::consts::PI.sqrt())?);
        }
        "Sin" => {
            let c = ctx.un("Cos", site.input(0)?)?;
            out = Some(ctx.bin("Mul", g, c)?);
        }
        "Cos" => {
            let s = ctx.un("Sin", site.input(0)?)?;
            let d = ctx.bin("Mul", g, s)?;
            out = Some(ctx.un("Neg", d)?);
        }
        "Reshape" | "Squeeze" | "Unsqueeze" | "Flatten" | "ExpandDims" => {
            out = Some(reshape_like(ctx, g, site.input(0)?)?);
        }
        "Transpose" => {
            let perm = site.const_ints(ctx, 1, "permutation")?;
            let r = perm.len();
            let mut inv = vec![0i64; r];
            for (i, &p) in perm.iter().enumerate() {
                let p = norm_axis(p, r, "Transpose permutation entry")?;
                inv[p] = i as i64;
            }
            out = Some(ctx.transpose(g, &inv)?);
        }
        "BroadcastTo" | "Expand" => {
            out = Some(unbroadcast(ctx, site, g, site.input(0)?)?);
        }
        "ReduceSum" | "ReduceMean" => {
            out = Some(reduce_rule(ctx, site, g)?);
        }
        "SoftmaxV2" => {
            // y * (g - sum(g * y))
            let axes = list_attr(n, "axes", &[-1]);
            let gy = ctx.bin("Mul", g, y)?;
            let s = ctx.reduce_keep("ReduceSum", gy, &axes)?;
            let d = ctx.bin("Sub", g, s)?;
            out = Some(ctx.bin("Mul", y, d)?);
        }
        "LogSoftmaxV2" => {
            // g - softmax * sum(g)
            let axes = list_attr(n, "axes", &[-1]);
            let s = ctx.reduce_keep("ReduceSum", g, &axes)?;
            let p = ctx.un("Exp", y)?;
            let ps = ctx.bin("Mul", p, s)?;
            out = Some(ctx.bin("Sub", g, ps)?);
        }
        _ => return Ok(None),
    }
    Ok(Some(out))
}

/// A ListInt attribute of an IR node.
fn list_attr(n: &Node, name: &str, default: &[i64]) -> Vec<i64> {
    n.attrs
        .get(name)
        .and_then(AttrValue::as_list_int)
        .map_or_else(|| default.to_vec(), <[i64]>::to_vec)
}

/// y = op(a) @ op(b) (op: the transpose the attributes ask for), batched or not:
/// the products of TensorFlow's MatMulGrad, summed over broadcast batch dims.
fn matmul_rule(
    ctx: &mut NodeCtx<'_>,
    site: &Site<'_>,
    g: OutPort,
    dx: &mut [Option<OutPort>],
) -> Result<()> {
    let op = site.n.op_type.as_str();
    let batched = op.starts_with("Batch");
    let (ka, kb) = if batched {
        ("adj_x1", "adj_x2")
    } else {
        ("transpose_x1", "transpose_x2")
    };
    let (ta, tb) = (site.attr_b(ka), site.attr_b(kb));
    let gop = if batched { "BatchMatMulV2" } else { "MatMulV2" };
    let mm = |ctx: &mut NodeCtx<'_>, l: OutPort, r: OutPort, t1: bool, t2: bool| {
        let attrs = if batched {
            vec![
                ("adj_x1", AttrValue::Bool(t1)),
                ("adj_x2", AttrValue::Bool(t2)),
            ]
        } else {
            vec![
                ("transpose_x1", AttrValue::Bool(t1)),
                ("transpose_x2", AttrValue::Bool(t2)),
            ]
        };
        ctx.op1(gop, &[l, r], attrs)
    };
    let (a, b) = (site.input(0)?, site.input(1)?);
    if site.need(0) {
        let d = match (ta, tb) {
            (false, false) => mm(ctx, g, b, false, true)?,
            (false, true) => mm(ctx, g, b, false, false)?,
            (true, false) => mm(ctx, b, g, false, true)?,
            (true, true) => mm(ctx, b, g, true, true)?,
        };
        dx[0] = Some(unbroadcast(ctx, site, d, a)?);
    }
    if site.need(1) {
        let d = match (ta, tb) {
            (false, false) => mm(ctx, a, g, true, false)?,
            (false, true) => mm(ctx, g, a, true, false)?,
            (true, false) => mm(ctx, a, g, false, false)?,
            (true, true) => mm(ctx, g, a, true, true)?,
        };
        dx[1] = Some(unbroadcast(ctx, site, d, b)?);
    }
    if site.need(2) {
        // The bias is added to the product.
        dx[2] = Some(unbroadcast(ctx, site, g, site.input(2)?)?);
    }
    if (3..site.n.inputs.len()).any(|j| site.need(j)) {
        return Err(site.refuse(": through its offset input"));
    }
    Ok(())
}

/// ReduceSum/ReduceMean: the gradient with the reduced dims back (as 1s), broadcast to the
/// input's shape (ReduceMean: divided by the number of elements reduced).
fn reduce_rule(ctx: &mut NodeCtx<'_>, site: &Site<'_>, g: OutPort) -> Result<OutPort> {
    let x = site.input(0)?;
    let xd = dims_of(ctx, site, x)?;
    let r = xd.len();
    let raw = site.const_ints(ctx, 1, "axes")?;
    let noop = site
        .n
        .attrs
        .get("noop_with_empty_axes")
        .and_then(AttrValue::as_bool)
        .unwrap_or(true);
    if raw.is_empty() && noop {
        return Ok(g);
    }
    let mut axes: Vec<i64> = if raw.is_empty() {
        (0..r as i64).collect()
    } else {
        let mut v = Vec::with_capacity(raw.len());
        for &a in &raw {
            v.push(norm_axis(a, r, "ReduceSum axis")? as i64);
        }
        v
    };
    axes.sort_unstable();
    axes.dedup();
    let mut d = g;
    if !site.attr_b("keep_dims") && !axes.is_empty() {
        d = ctx.unsqueeze(d, &axes)?;
    }
    if site.n.op_type == "ReduceMean" {
        let counts: Option<Vec<i64>> = axes
            .iter()
            .map(|&a| Some(xd[a as usize]).filter(|&v| v >= 0))
            .collect();
        d = match counts {
            Some(c) => {
                let k: i64 = c.iter().product();
                scale(ctx, d, 1.0 / k.max(1) as f64)?
            }
            None => {
                let ones = ones_like(ctx, x)?;
                let cnt = ctx.reduce_keep("ReduceSum", ones, &axes)?;
                ctx.bin("RealDiv", d, cnt)?
            }
        };
    }
    let s = shape_port(ctx, x)?;
    ctx.op1("BroadcastTo", &[d, s], vec![])
}

/// ConcatV2: the gradient split along the concat axis into the inputs' sizes.
fn concat_rule(
    ctx: &mut NodeCtx<'_>,
    site: &Site<'_>,
    g: OutPort,
    dx: &mut [Option<OutPort>],
) -> Result<()> {
    let parts: Vec<usize> = (0..site.n.inputs.len())
        .filter(|&j| site.n.inputs[j].ir_index == 0)
        .collect();
    let dim_slot = site
        .n
        .inputs
        .iter()
        .position(|s| s.ir_index == 1)
        .ok_or_else(|| site.refuse(": no concat_dim"))?;
    let axis = site.const_ints(ctx, dim_slot, "concat_dim")?;
    let first = site.input(parts[0])?;
    let r = dims_of(ctx, site, first)?.len();
    let axis = norm_axis(*axis.first().unwrap_or(&0), r, "ConcatV2 concat_dim")?;
    let mut sizes = Vec::with_capacity(parts.len());
    for &j in &parts {
        sizes.push(Dim::Of(site.input(j)?, axis));
    }
    let sizes = ctx.shape_from(&sizes)?;
    let ax = ctx.const_i64(&[axis as i64], &[])?;
    let outs = ctx.op_with_counts(
        "SplitV",
        vec![vec![Some(g)], vec![Some(sizes)], vec![Some(ax)]],
        vec![("num_split", AttrValue::Int(parts.len() as i64))],
        &[("y", parts.len())],
    )?;
    for (k, &j) in parts.iter().enumerate() {
        if site.need(j) {
            dx[j] = outs.get(k).copied();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::proto::{
        attribute_proto::AttributeType, AttributeProto, GraphProto, ModelProto, NodeProto,
        OperatorSetIdProto, ValueInfoProto,
    };
    use crate::{DataDir, Options};
    use es_core::{DataType, Graph, OutPort, Shape, TensorDesc};

    fn value(name: &str, dims: &[i64]) -> ValueInfoProto {
        let desc = TensorDesc::new(DataType::FLOAT, Shape::new(dims.to_vec()));
        ValueInfoProto {
            name: Some(name.into()),
            r#type: Some(crate::types::type_from_desc(&desc).unwrap()),
            ..Default::default()
        }
    }

    fn node(op: &str, i: &[&str], o: &[&str]) -> NodeProto {
        NodeProto {
            op_type: Some(op.into()),
            name: Some(format!("my_{}", op.to_lowercase())),
            input: i.iter().map(|s| s.to_string()).collect(),
            output: o.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    /// Gradient(xs = inputs, y) after `nodes`, over inputs `ins` (name, dims); outputs y and
    /// the gradients.
    fn model(nodes: Vec<NodeProto>, ins: &[(&str, &[i64])], y: &str) -> ModelProto {
        let xs: Vec<&str> = ins.iter().map(|i| i.0).collect();
        let outs: Vec<String> = xs.iter().map(|x| format!("d_{x}")).collect();
        let outs: Vec<&str> = outs.iter().map(String::as_str).collect();
        let mut grad = node("Gradient", &xs, &outs);
        grad.domain = Some("ai.onnx.preview.training".into());
        grad.attribute = vec![
            AttributeProto {
                name: Some("xs".into()),
                r#type: Some(AttributeType::Strings as i32),
                strings: xs.iter().map(|s| s.as_bytes().to_vec()).collect(),
                ..Default::default()
            },
            AttributeProto {
                name: Some("y".into()),
                r#type: Some(AttributeType::String as i32),
                s: Some(y.as_bytes().to_vec()),
                ..Default::default()
            },
        ];
        let mut node = nodes;
        node.push(grad);
        let opset = |d: &str, v| OperatorSetIdProto {
            domain: Some(d.into()),
            version: Some(v),
        };
        ModelProto {
            ir_version: Some(8),
            opset_import: vec![opset("", 17), opset("ai.onnx.preview.training", 1)],
            graph: Some(GraphProto {
                name: Some("g".into()),
                node,
                input: ins.iter().map(|(n, d)| value(n, d)).collect(),
                output: outs.iter().map(|n| value(n, &[])).collect(),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn load(m: &ModelProto) -> crate::Result<Graph> {
        crate::translate::translate_model(
            m,
            crate::ops::builtin(),
            DataDir::default(),
            Options::default(),
        )
    }

    /// The op type producing graph output `i`, and its shape.
    fn output(g: &Graph, i: usize) -> (String, Vec<i64>) {
        let p: OutPort = g.outputs[i];
        let n = g.node(p.node).unwrap();
        let d = g.out_desc(p).unwrap();
        (n.op_type.to_string(), d.shape.dims().to_vec())
    }

    #[test]
    fn broadcast_input_gets_the_sum_over_broadcast_axes_in_its_shape() {
        // y = a * b with a [2, 3] and b [3]: db is reduced over axis 0 to [3].
        let m = model(
            vec![node("Mul", &["a", "b"], &["y"])],
            &[("a", &[2, 3]), ("b", &[3])],
            "y",
        );
        let g = load(&m).unwrap();
        assert_eq!(output(&g, 0).1, vec![2, 3]);
        assert_eq!(output(&g, 1), ("Reshape".to_string(), vec![3]));
    }

    #[test]
    fn a_value_y_does_not_depend_on_gets_zeros() {
        let m = model(
            vec![node("Exp", &["a"], &["y"])],
            &[("a", &[4]), ("b", &[2, 2])],
            "y",
        );
        let g = load(&m).unwrap();
        assert_eq!(output(&g, 1), ("ZerosLike".to_string(), vec![2, 2]));
        assert_eq!(output(&g, 0), ("Mul".to_string(), vec![4]));
    }

    #[test]
    fn an_op_without_a_rule_is_refused_naming_op_and_node() {
        let m = model(
            vec![node("Atan", &["a"], &["t"]), node("Relu", &["t"], &["y"])],
            &[("a", &[4])],
            "y",
        );
        let e = load(&m).unwrap_err().to_string();
        assert!(
            e.starts_with("not supported: ")
                && e.contains("Gradient through Atan (node 'my_atan')"),
            "{e}"
        );
    }
}
