//! Built-in fusions of the compile pipeline:
//!
//! - **Conv+BatchNorm folding** (a graph rewrite, in [`crate::optimize`]): an inference
//!   `BatchNorm` (`is_training` false) whose input is a `Conv2D` with a constant filter (and a
//!   constant bias or none) used by nothing else, and whose scale, offset, mean and variance are
//!   constants, is folded into the convolution: with `a = scale / sqrt(variance + epsilon)`,
//!   the filter's output channel `o` is multiplied by `a[o]` and the bias becomes
//!   `(bias - mean) * a + offset` (computed in f64, rounded once to the filter's and the
//!   output's dtype). The results differ from the unfolded graph by rounding only.
//! - **Product + bias + activation** (in the execution plan, [`find`]): a matrix product or a
//!   convolution whose only consumer is an `Add` of a constant that keeps the product's shape,
//!   optionally followed by a unary activation that is the Add's only consumer, runs as one step:
//!   the product's kernel, then the bias and the activation applied in place in one pass over
//!   its output ([`crate::kernels::Epilogue`]). f32 and f64 only; the arithmetic is the Add's and
//!   the activation's own, so fused and unfused plans give identical results.

use crate::error::Result;
use crate::rewrite::{plain, redirect, tensor_const};
use crate::value::Value;
use es_core::attr::AttrValue;
use es_core::infer::layout;
use es_core::{DataType, Graph, InPort, Node, NodeId, OutPort};
use rustc_hash::FxHashMap;

/// Ops whose output can take a fused bias and activation.
const PRODUCTS: [&str; 6] = [
    "MatMul",
    "MatMulV2",
    "BatchMatMul",
    "BatchMatMulV2",
    "Conv2D",
    "DepthwiseConv2D",
];

/// Activations a fused step may apply (unary float functions of the element-wise kernels).
const ACTIVATIONS: [&str; 13] = [
    "Relu",
    "Relu6",
    "Sigmoid",
    "Tanh",
    "Gelu",
    "GeluV2",
    "Swish",
    "Elu",
    "LeakyRelu",
    "HardSigmoid",
    "Mish",
    "Softplus",
    "Selu",
];

/// The single consumer of `p`, when it has exactly one and is not a graph output.
fn only_consumer(g: &Graph, p: OutPort) -> Option<InPort> {
    let n = g.node(p.node).ok()?;
    let c = &n.outputs.get(p.index as usize)?.consumers;
    if c.len() != 1 || g.outputs.contains(&p) {
        return None;
    }
    Some(c[0])
}

fn out0(id: NodeId) -> OutPort {
    OutPort { node: id, index: 0 }
}

/// A fused step: the nodes its product absorbs.
#[derive(Debug, Clone)]
pub struct Fused {
    /// The Add and its constant operand.
    pub add: Option<(NodeId, Value)>,
    pub act: Option<NodeId>,
}

impl Fused {
    /// The node whose output the fused step produces.
    pub fn last(&self, anchor: NodeId) -> NodeId {
        self.act
            .or(self.add.as_ref().map(|(a, _)| *a))
            .unwrap_or(anchor)
    }
}

/// The products of `g` that absorb an Add of a constant and/or an activation, by product.
pub fn find(g: &Graph, order: &[NodeId]) -> Result<FxHashMap<NodeId, Fused>> {
    let mut out = FxHashMap::default();
    for &id in order {
        let n = g.node(id)?;
        if !PRODUCTS.contains(&n.op_type.as_str()) || !plain(n) || n.outputs.len() != 1 {
            continue;
        }
        let desc = &n.outputs[0].desc;
        if !matches!(desc.dtype, DataType::FLOAT | DataType::DOUBLE)
            || desc.shape.num_elements().is_none()
        {
            continue;
        }
        let mut fused = Fused {
            add: None,
            act: None,
        };
        let mut tail = out0(id);
        if let Some(c) = only_consumer(g, tail) {
            let a = g.node(c.node)?;
            let other = a
                .inputs
                .iter()
                .enumerate()
                .find(|(i, _)| *i != c.index as usize);
            if a.op_type == "Add" && plain(a) && a.inputs.len() == 2 && a.outputs.len() == 1 {
                let bias = other
                    .and_then(|(_, s)| s.source)
                    .and_then(|p| g.node(p.node).ok())
                    .and_then(Node::const_value)
                    .map(Value::from_tensor)
                    .transpose()?;
                let ad = &a.outputs[0].desc;
                if let Some(b) = bias {
                    if ad.dtype == desc.dtype && ad.shape == desc.shape && b.dtype() == desc.dtype {
                        fused.add = Some((c.node, b));
                        tail = out0(c.node);
                    }
                }
            }
        }
        if let Some(c) = only_consumer(g, tail) {
            let r = g.node(c.node)?;
            if ACTIVATIONS.contains(&r.op_type.as_str())
                && crate::kernels::Epilogue::supports(&r.op_type)
                && plain(r)
                && r.inputs.len() == 1
                && r.outputs.len() == 1
                && r.outputs[0].desc.dtype == desc.dtype
            {
                fused.act = Some(c.node);
            }
        }
        if fused.add.is_some() || fused.act.is_some() {
            out.insert(id, fused);
        }
    }
    Ok(out)
}

/// A Const node holding `v` with the description `like` (its format kept).
fn const_like(g: &Graph, base: &str, v: &Value, like: &es_core::TensorDesc) -> Result<Node> {
    let mut t = v.to_tensor()?;
    t.desc.format = like.format;
    t.desc.origin_format = like.origin_format;
    Ok(tensor_const(g, base, t))
}

fn attr_str<'a>(n: &'a Node, name: &str, default: &'a str) -> &'a str {
    n.attr(name).and_then(AttrValue::as_str).unwrap_or(default)
}

fn const_of(g: &Graph, n: &Node, i: usize) -> Option<Value> {
    let p = n.inputs.get(i)?.source?;
    Value::from_tensor(g.node(p.node).ok()?.const_value()?).ok()
}

/// Folds inference BatchNorms into the Conv2D before them; returns how many.
pub fn fold_conv_batch_norm(g: &mut Graph) -> Result<usize> {
    let mut folded = 0;
    let bns: Vec<NodeId> = g
        .nodes()
        .into_iter()
        .filter(|&id| g.node(id).is_ok_and(|n| n.op_type == "BatchNorm"))
        .collect();
    for bn_id in bns {
        let Some(plan) = conv_bn_plan(g, bn_id)? else {
            continue;
        };
        let FoldPlan { conv, filter, bias } = plan;
        let (conv_name, fdesc, odesc) = {
            let c = g.node(conv)?;
            let fsrc = c.inputs[1]
                .source
                .ok_or_else(|| crate::error::Error::Compile("Conv2D without a filter".into()))?;
            (
                c.name.to_string(),
                g.out_desc(fsrc)?.clone(),
                c.outputs[0].desc.clone(),
            )
        };
        let fnode = const_like(g, &format!("{conv_name}_bn_filter"), &filter, &fdesc)?;
        let fid = g.add_node(fnode)?;
        let bnode = const_like(g, &format!("{conv_name}_bn_bias"), &bias, &odesc)?;
        let bid = g.add_node(bnode)?;
        for (i, new) in [(1u32, fid), (2u32, bid)] {
            let dst = InPort {
                node: conv,
                index: i,
            };
            if let Some(old) = g.node(conv)?.inputs[i as usize].source {
                g.remove_data_edge(old, dst)?;
            }
            g.add_data_edge(out0(new), dst)?;
        }
        redirect(g, out0(bn_id), out0(conv))?;
        g.remove_node(bn_id)?;
        folded += 1;
    }
    Ok(folded)
}

struct FoldPlan {
    conv: NodeId,
    filter: Value,
    bias: Value,
}

/// The folded filter and bias for BatchNorm `bn_id`, when it can be folded.
fn conv_bn_plan(g: &Graph, bn_id: NodeId) -> Result<Option<FoldPlan>> {
    let bn = g.node(bn_id)?;
    let training = bn
        .attr("is_training")
        .and_then(AttrValue::as_bool)
        .unwrap_or(true);
    if training || !plain(bn) || bn.inputs.len() < 5 {
        return Ok(None);
    }
    // Only y may be used.
    for (i, o) in bn.outputs.iter().enumerate().skip(1) {
        let p = OutPort {
            node: bn_id,
            index: i as u32,
        };
        if !o.consumers.is_empty() || g.outputs.contains(&p) {
            return Ok(None);
        }
    }
    let Some(src) = bn.inputs[0].source else {
        return Ok(None);
    };
    if src.index != 0 || only_consumer(g, src).is_none() {
        return Ok(None);
    }
    let conv = g.node(src.node)?;
    if conv.op_type != "Conv2D" || !plain(conv) || conv.outputs.len() != 1 || conv.inputs.len() < 3
    {
        return Ok(None);
    }
    if conv.inputs.get(3).is_some_and(|i| i.source.is_some()) {
        return Ok(None);
    }
    // The channel axis of the convolution's y (x's layout, as its kernel reads it) must be the
    // one BatchNorm normalises (its data_format, as its kernel reads it).
    let x_desc = match conv.inputs[0].source {
        Some(p) => Some(g.out_desc(p)?),
        None => return Ok(None),
    };
    let df = attr_str(conv, "data_format", "NHWC");
    let Ok(xl) = layout::data_layout(x_desc, df, layout::DATA_2D) else {
        return Ok(None);
    };
    let bn_channel_last = match attr_str(bn, "data_format", "NHWC") {
        "NHWC" | "NDHWC" => true,
        "NCHW" | "NCDHW" => false,
        _ => return Ok(None),
    };
    if layout::channel_last(xl) != bn_channel_last {
        return Ok(None);
    }
    let out_dt = conv.outputs[0].desc.dtype;
    if !matches!(
        out_dt,
        DataType::FLOAT | DataType::DOUBLE | DataType::FLOAT16
    ) {
        return Ok(None);
    }
    let Some(filter) = const_of(g, conv, 1).filter(|f| f.dtype().is_float()) else {
        return Ok(None);
    };
    let Some(fsrc) = conv.inputs[1].source else {
        return Ok(None);
    };
    // The filter's output channels sit where its kernel reads them.
    let Ok(fl) = layout::filter_layout(Some(g.out_desc(fsrc)?), x_desc, layout::FILTER_2D) else {
        return Ok(None);
    };
    let Some(pos) = crate::kernels::filter_out_channel(fl) else {
        return Ok(None);
    };
    let fshape = filter.shape().to_vec();
    let Some(&channels) = fshape.get(pos) else {
        return Ok(None);
    };
    if fshape.len() != 4 {
        return Ok(None);
    }
    let bias = match conv.inputs.get(2).and_then(|i| i.source) {
        None => vec![0.0; channels],
        Some(_) => match const_of(g, conv, 2) {
            Some(b) if b.len() == channels => b.to_f64_vec(),
            _ => return Ok(None),
        },
    };
    let mut params = Vec::with_capacity(4);
    for i in 1..5 {
        match const_of(g, bn, i) {
            Some(v) if v.len() == channels && v.dtype().is_float() => params.push(v.to_f64_vec()),
            _ => return Ok(None),
        }
    }
    let eps = f64::from(
        bn.attr("epsilon")
            .and_then(AttrValue::as_float)
            .unwrap_or(1e-4),
    );
    let (scale, offset, mean, var) = (&params[0], &params[1], &params[2], &params[3]);
    let a: Vec<f64> = scale
        .iter()
        .zip(var)
        .map(|(s, v)| s / (v + eps).sqrt())
        .collect();
    let new_bias: Vec<f64> = (0..channels)
        .map(|o| (bias[o] - mean[o]) * a[o] + offset[o])
        .collect();
    // Scale each filter element by its output channel's factor.
    let stride: usize = fshape[pos + 1..].iter().product();
    let fv = filter.to_f64_vec();
    let scaled: Vec<f64> = fv
        .iter()
        .enumerate()
        .map(|(i, &w)| w * a[(i / stride.max(1)) % channels])
        .collect();
    let to = |dt: DataType, dims: &[usize], v: Vec<f64>| -> Result<Value> {
        let a = ndarray::ArrayD::from_shape_vec(dims.to_vec(), v)
            .map_err(|e| crate::error::Error::Compile(e.to_string()))?;
        Value::F64(a).cast(dt)
    };
    Ok(Some(FoldPlan {
        conv: src.node,
        filter: to(filter.dtype(), &fshape, scaled)?,
        bias: to(out_dt, &[channels], new_bias)?,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_activation_has_a_fusable_kernel() {
        for op in ACTIVATIONS {
            assert!(crate::kernels::Epilogue::supports(op), "{op}");
        }
    }
}
