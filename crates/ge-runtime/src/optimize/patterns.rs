//! Pattern rewrites of the built-in optimisations ([`super::optimize`]) for transformer graphs:
//!
//! - **Transposes absorbed into products**: a `Transpose` that swaps only the last two dims
//!   (perm a constant `[0, .., r-1, r-2]`) feeding a matrix product's `x1` or `x2` is bypassed and
//!   the product's transpose flag for that operand (`transpose_x1/2` of MatMul/MatMulV2, which
//!   are 2-D, `adj_x1/2` of BatchMatMul/BatchMatMulV2) flipped. The product kernels take a
//!   transposed operand as a strided view, so a tied LM head (`x @ Transpose(embedding)`) no
//!   longer copies the whole table on every run. Exact: the same products, no copy.
//! - **Transposed constant operands laid out once**: a rank-2 f32/f64 constant read transposed
//!   as a product's `x2` (after the step above: a tied LM head, ONNX's `Gemm` with `transB`) is
//!   replaced by a constant holding its transpose and the flag cleared, unless the product's
//!   rows are known to be 1. The `gemm` crate packs a transposed right operand on every run
//!   (a strided gather: GPT's 8192×256 LM head 1.1× slower, a 16×768×768 product 3.8×; measured
//!   in docs/perf-runtime.md "Transformers, session 26"), and reads a contiguous one in place; a
//!   one-row product (a matrix-vector product) is faster on the transposed layout and keeps it.
//!   The copy is made once at compile time; the original stays only while something else reads
//!   it (a tied embedding's Gather), and is then copied only up to [`CONTIGUOUS_COPY_LIMIT`]
//!   elements. Exact: the same products of the same values.
//! - **tanh-Gelu**: GPT-2's `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))` written out in
//!   element-wise ops (the cube as `Pow(x, 3)`, `x * x * x` or `(x * x) * x`, products and sums in
//!   any operand order, the factors `x`, `0.5` and `1 + tanh(..)` multiplied in any grouping,
//!   every constant a one-element tensor within 1e-6 relative of its value, every intermediate
//!   used only there, all of x's shape and dtype: f32, f16 or bf16) becomes one `Gelu` node,
//!   GE's Gelu being that function. The fused result is the vectorised Gelu's (3 ulp of the
//!   formula in f32; see kernels/vmath.rs), not the op-by-op rounding of the unfused chain; the
//!   two agree within a few ulp where the result is not near zero (tests below).
//! - **erf-Gelu** (BERT's and ViT's exporters, torch's exact `gelu`): `0.5 x (1 + erf(x / sqrt 2))`
//!   with the division written `Div(x, sqrt 2)`, `RealDiv(x, sqrt 2)` or `Mul(x, 1/sqrt 2)` and
//!   the factors `x`, `0.5` and `1 + erf(..)` in any grouping (the same conditions as the
//!   tanh-Gelu) becomes one `GeluV2` node with `approximate` "none", GE's erf-Gelu. Its kernel
//!   (kernels/vmath.rs `gelu_erf`) is within 3 ulp + |x| 2^-22 of the exact function; the
//!   unfused chain, in f32 with its own roundings, agrees with it to that order.
//! - **Division by a power of two** (`scores / sqrt(64)` in attention): `Div(x, c)` or
//!   `RealDiv(x, c)` (ONNX's float Div) with `c` a
//!   one-element float constant ±2^k (|k| <= 100) becomes `Mul(x, 1/c)`, which gives the same
//!   bits (both are x·2^-k rounded once), through the cheaper multiplication kernel.

use crate::error::Result;
use crate::rewrite::{plain, redirect};
use es_core::attr::AttrValue;
use es_core::graph::{InputSlot, OutputSlot};
use es_core::{DataType, Graph, InPort, Node, NodeId, OutPort};

/// The products and the attribute names of their operands' transpose flags.
fn transpose_flags(op: &str) -> Option<([&'static str; 2], bool)> {
    match op {
        "MatMul" | "MatMulV2" => Some((["transpose_x1", "transpose_x2"], true)),
        "BatchMatMul" | "BatchMatMulV2" => Some((["adj_x1", "adj_x2"], false)),
        _ => None,
    }
}

/// The node producing `p`.
fn producer(g: &Graph, p: OutPort) -> Option<&Node> {
    g.node(p.node).ok()
}

/// The values of the constant at `p` as f64 (None when `p` is not a Const's output).
fn const_f64(g: &Graph, p: OutPort) -> Option<Vec<f64>> {
    producer(g, p)?.const_value()?.to_f64_vec().ok()
}

/// The input `x` of a Transpose at `p` that swaps only the last two of its rank-`r` input
/// (`two_d`: rank 2 only).
fn swap_last_two(g: &Graph, p: OutPort, two_d: bool) -> Option<OutPort> {
    let t = producer(g, p)?;
    if t.op_type != "Transpose" || !plain(t) || t.inputs.len() != 2 || t.outputs.len() != 1 {
        return None;
    }
    let perm = const_f64(g, t.inputs[1].source?)?;
    let r = perm.len();
    if r < 2 || (two_d && r != 2) {
        return None;
    }
    let want = (0..r - 2).chain([r - 1, r - 2]);
    if !perm.iter().zip(want).all(|(&a, b)| a == b as f64) {
        return None;
    }
    t.inputs[0].source
}

/// Absorbs last-two-dims Transposes into the products they feed; the number absorbed.
pub(super) fn absorb_transposes(g: &mut Graph) -> Result<usize> {
    let mut absorbed = 0;
    for id in g.topo_order()? {
        let n = g.node(id)?;
        let Some((flags, two_d)) = transpose_flags(&n.op_type) else {
            continue;
        };
        if !plain(n) || n.inputs.len() < 2 {
            continue;
        }
        for (i, flag_name) in flags.into_iter().enumerate() {
            let n = g.node(id)?;
            let Some(src) = n.inputs[i].source else {
                continue;
            };
            let Some(x) = swap_last_two(g, src, two_d) else {
                continue;
            };
            let flag = n
                .attr(flag_name)
                .and_then(AttrValue::as_bool)
                .unwrap_or(false);
            let desc = g.out_desc(x)?.clone();
            let dst = InPort {
                node: id,
                index: i as u32,
            };
            g.remove_data_edge(src, dst)?;
            g.add_data_edge(x, dst)?;
            let n = g.node_mut(id)?;
            n.inputs[i].desc.set(desc);
            n.attrs.insert(flag_name.into(), AttrValue::Bool(!flag));
            absorbed += 1;
        }
    }
    Ok(absorbed)
}

/// The most elements a transposed constant still read by other nodes is copied for (64 MiB of
/// f32): the copy then adds to the model's memory.
pub(crate) const CONTIGUOUS_COPY_LIMIT: usize = 1 << 24;

/// The rows of a product's `x1` (all its dims but the contracted one): None when not known.
fn product_rows(g: &Graph, n: &Node, flag: &str) -> Option<i64> {
    let x1 = g.out_desc(n.inputs[0].source?).ok()?;
    let dims = x1.shape.dims();
    let r = x1.shape.rank()?;
    if r < 2 || dims.iter().any(|&d| d < 0) {
        return None;
    }
    let t = n.attr(flag).and_then(AttrValue::as_bool).unwrap_or(false);
    let k = if t { r - 2 } else { r - 1 };
    Some(
        dims.iter()
            .enumerate()
            .filter(|&(i, _)| i != k)
            .map(|(_, &d)| d)
            .product(),
    )
}

/// The transpose of the rank-2 f32/f64 constant `t`, as a Value (None for other constants).
fn transposed_const(t: &es_core::Tensor) -> Option<crate::value::Value> {
    use crate::value::Value;
    match Value::from_tensor(t).ok()? {
        Value::F32(a) if a.ndim() == 2 => Some(Value::F32(a.t().as_standard_layout().into_owned())),
        Value::F64(a) if a.ndim() == 2 => Some(Value::F64(a.t().as_standard_layout().into_owned())),
        _ => None,
    }
}

/// Replaces rank-2 f32/f64 constants read transposed as a product's `x2` by their transpose
/// (the flag cleared), except where the product has one row; the number of products changed.
pub(super) fn contiguous_const_operands(g: &mut Graph) -> Result<usize> {
    let mut made: Vec<(OutPort, OutPort)> = Vec::new();
    let mut changed = 0;
    for id in g.topo_order()? {
        let n = g.node(id)?;
        let Some(([flag1, flag2], _)) = transpose_flags(&n.op_type) else {
            continue;
        };
        if !plain(n) || n.inputs.len() < 2 {
            continue;
        }
        if !n.attr(flag2).and_then(AttrValue::as_bool).unwrap_or(false) {
            continue;
        }
        let Some(src) = n.inputs[1].source else {
            continue;
        };
        if matches!(product_rows(g, n, flag1), Some(1)) {
            continue;
        }
        let new = match made.iter().find(|(old, _)| *old == src) {
            Some(&(_, new)) => new,
            None => {
                let c = producer(g, src);
                let Some(t) = c.filter(|c| plain(c)).and_then(Node::const_value) else {
                    continue;
                };
                let shared = g.node(src.node)?.outputs[src.index as usize]
                    .consumers
                    .len()
                    > 1
                    || g.outputs.iter().any(|o| o.node == src.node);
                let elements = t.desc.shape.num_elements().unwrap_or(i64::MAX);
                if shared && elements > CONTIGUOUS_COPY_LIMIT as i64 {
                    continue;
                }
                let Some(v) = transposed_const(t) else {
                    continue;
                };
                let base = format!("{}_t", c.map_or("const", |c| c.name.as_str()));
                let node = crate::rewrite::tensor_const(g, &base, v.to_tensor()?);
                let new = OutPort {
                    node: g.add_node(node)?,
                    index: 0,
                };
                made.push((src, new));
                new
            }
        };
        let dst = InPort { node: id, index: 1 };
        let desc = g.out_desc(new)?.clone();
        g.remove_data_edge(src, dst)?;
        g.add_data_edge(new, dst)?;
        let n = g.node_mut(id)?;
        n.inputs[1].desc.set(desc);
        n.attrs.insert(flag2.into(), AttrValue::Bool(false));
        changed += 1;
    }
    Ok(changed)
}

/// Whether `v` is ±2^k with |k| <= 100 (its reciprocal exact in every float dtype's f32
/// arithmetic).
fn power_of_two(v: f64) -> bool {
    let a = v.abs();
    a.is_normal() && a.log2().fract() == 0.0 && a.log2().abs() <= 100.0
}

/// Replaces divisions by a power-of-two constant with multiplications by its reciprocal; the
/// number replaced.
pub(super) fn div_to_mul(g: &mut Graph) -> Result<usize> {
    let mut replaced = 0;
    for id in g.topo_order()? {
        let n = g.node(id)?;
        let div = n.op_type == "Div" || n.op_type == "RealDiv";
        if !div || !plain(n) || n.inputs.len() != 2 || n.outputs.len() != 1 {
            continue;
        }
        let Some(cp) = n.inputs[1].source else {
            continue;
        };
        let Some(t) = producer(g, cp).and_then(Node::const_value) else {
            continue;
        };
        if !matches!(
            t.desc.dtype,
            DataType::FLOAT | DataType::FLOAT16 | DataType::BF16 | DataType::DOUBLE
        ) || t.desc.dtype != n.outputs[0].desc.dtype
        {
            continue;
        }
        let v = match t.to_f64_vec().ok().as_deref() {
            Some(&[v]) if power_of_two(v) => v,
            _ => continue,
        };
        // The constant's own shape and dtype, the reciprocal's bytes.
        let bytes = crate::value::Value::scalar_f64(t.desc.dtype, 1.0 / v)?.to_le_bytes();
        let recip = es_core::Tensor::new(t.desc.clone(), bytes)?;
        let c = crate::rewrite::tensor_const(g, &format!("{}_reciprocal", n.name), recip);
        let cid = g.add_node(c)?;
        let dst = InPort { node: id, index: 1 };
        g.remove_data_edge(cp, dst)?;
        g.add_data_edge(
            OutPort {
                node: cid,
                index: 0,
            },
            dst,
        )?;
        g.node_mut(id)?.op_type = "Mul".into();
        replaced += 1;
    }
    Ok(replaced)
}

/// Whether `a` is within 1e-6 relative of `want`.
fn near(a: f64, want: f64) -> bool {
    (a - want).abs() <= 1e-6 * want.abs()
}

/// The two written-out Gelu forms.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum GeluForm {
    /// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): GE's `Gelu`.
    Tanh,
    /// 0.5 x (1 + erf(x / sqrt(2))): GE's `GeluV2` with `approximate` "none".
    Erf,
}

/// A Gelu match: its input and the node whose output it replaces.
struct Gelu {
    x: OutPort,
    last: NodeId,
}

/// Walks one candidate: `g`'s node `last` (a Mul) and the x it is a Gelu of, if it is one.
struct Matcher<'g> {
    g: &'g Graph,
    /// x's shape and dtype, once x is known (every intermediate must have them).
    desc: Option<&'g es_core::TensorDesc>,
}

impl<'g> Matcher<'g> {
    /// The node producing `p` if it is a plain `op` with one output used only once (inside the
    /// pattern), of x's shape and dtype when x is known.
    fn interior(&self, p: OutPort, op: &str) -> Option<&'g Node> {
        let n = producer(self.g, p)?;
        if n.op_type != op || !plain(n) || n.outputs.len() != 1 {
            return None;
        }
        if n.outputs[0].consumers.len() != 1 || self.g.outputs.contains(&p) {
            return None;
        }
        if let Some(d) = self.desc {
            if n.outputs[0].desc != *d {
                return None;
            }
        }
        Some(n)
    }

    /// The two operand sources of a binary interior node `op` at `p`.
    fn binary(&self, p: OutPort, op: &str) -> Option<(OutPort, OutPort)> {
        let n = self.interior(p, op)?;
        if n.inputs.len() != 2 {
            return None;
        }
        Some((n.inputs[0].source?, n.inputs[1].source?))
    }

    /// Of two operands, the other one when one is a one-element constant near `want`.
    fn with_const(&self, (a, b): (OutPort, OutPort), want: f64) -> Option<OutPort> {
        let is =
            |p: OutPort| matches!(const_f64(self.g, p).as_deref(), Some([v]) if near(*v, want));
        if is(b) {
            Some(a)
        } else if is(a) {
            Some(b)
        } else {
            None
        }
    }

    /// Whether `p` is x^3 of `x`: Pow(x, 3), x * (x * x) or (x * x) * x.
    fn cube(&self, p: OutPort, x: OutPort) -> bool {
        if let Some(ops) = self.binary(p, "Pow") {
            return ops.0 == x
                && matches!(const_f64(self.g, ops.1).as_deref(), Some([v]) if *v == 3.0);
        }
        let square = |q: OutPort| self.binary(q, "Mul") == Some((x, x));
        match self.binary(p, "Mul") {
            Some((a, b)) if a == x => square(b),
            Some((a, b)) if b == x => square(a),
            _ => false,
        }
    }

    /// Whether `p` is 1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)).
    fn one_plus_tanh(&self, p: OutPort, x: OutPort) -> bool {
        let inner = || -> Option<bool> {
            let t = self.with_const(self.binary(p, "Add")?, 1.0)?;
            let tn = self.interior(t, "Tanh")?;
            let u = tn.inputs.first()?.source?;
            let sum =
                self.with_const(self.binary(u, "Mul")?, (2.0 / std::f64::consts::PI).sqrt())?;
            let (a, b) = self.binary(sum, "Add")?;
            let w = if a == x {
                b
            } else if b == x {
                a
            } else {
                return None;
            };
            let c = self.with_const(self.binary(w, "Mul")?, 0.044715)?;
            Some(self.cube(c, x))
        };
        inner().unwrap_or(false)
    }

    /// Whether `p` is 1 + erf(x / sqrt(2)), the division written `Div(x, sqrt 2)`,
    /// `RealDiv(x, sqrt 2)` or `Mul(x, 1 / sqrt 2)`.
    fn one_plus_erf(&self, p: OutPort, x: OutPort) -> bool {
        let inner = || -> Option<bool> {
            let e = self.with_const(self.binary(p, "Add")?, 1.0)?;
            let en = self.interior(e, "Erf")?;
            let t = en.inputs.first()?.source?;
            let sqrt2 = std::f64::consts::SQRT_2;
            let scaled = |op: &str, c: f64| {
                self.binary(t, op)
                    .filter(|&(_, d)| matches!(const_f64(self.g, d).as_deref(), Some([v]) if near(*v, c)))
                    .map(|(a, _)| a)
            };
            let over = scaled("Div", sqrt2)
                .or_else(|| scaled("RealDiv", sqrt2))
                .or_else(|| self.with_const(self.binary(t, "Mul")?, 1.0 / sqrt2));
            Some(over? == x)
        };
        inner().unwrap_or(false)
    }

    /// The Gelu of `form` whose last Mul is `last`.
    fn gelu(&mut self, last: NodeId, form: GeluForm) -> Option<Gelu> {
        let out = OutPort {
            node: last,
            index: 0,
        };
        let n = producer(self.g, out)?;
        if n.op_type != "Mul" || !plain(n) || n.inputs.len() != 2 || n.outputs.len() != 1 {
            return None;
        }
        let desc = &n.outputs[0].desc;
        if !matches!(
            desc.dtype,
            DataType::FLOAT | DataType::FLOAT16 | DataType::BF16
        ) {
            return None;
        }
        // The three factors: x, 0.5 and 1 + tanh(..), in any grouping of two Muls.
        let mut leaves = Vec::with_capacity(3);
        for s in &n.inputs {
            let s = s.source?;
            match self.binary(s, "Mul") {
                Some((a, b)) if producer(self.g, s)?.outputs[0].desc == *desc => {
                    leaves.extend([a, b])
                }
                _ => leaves.push(s),
            }
        }
        if leaves.len() != 3 {
            return None;
        }
        let half = leaves
            .iter()
            .position(|&p| matches!(const_f64(self.g, p).as_deref(), Some([v]) if *v == 0.5))?;
        leaves.remove(half);
        for (x, t) in [(leaves[0], leaves[1]), (leaves[1], leaves[0])] {
            let xd = self.g.out_desc(x).ok()?;
            if xd != desc {
                continue;
            }
            self.desc = Some(xd);
            let hit = match form {
                GeluForm::Tanh => self.one_plus_tanh(t, x),
                GeluForm::Erf => self.one_plus_erf(t, x),
            };
            if hit {
                return Some(Gelu { x, last });
            }
            self.desc = None;
        }
        None
    }
}

/// Replaces tanh-Gelu chains by Gelu nodes and erf-Gelu chains by GeluV2 nodes
/// (`approximate` "none"); the numbers replaced, tanh and erf.
pub(super) fn fuse_gelus(g: &mut Graph) -> Result<(usize, usize)> {
    let mut found = Vec::new();
    for id in g.topo_order()? {
        for form in [GeluForm::Tanh, GeluForm::Erf] {
            let mut m = Matcher { g, desc: None };
            if let Some(hit) = m.gelu(id, form) {
                found.push((hit, form));
                break;
            }
        }
    }
    // A chain whose x is an earlier chain's result takes that chain's Gelu.
    let mut moved: Vec<(OutPort, OutPort)> = Vec::new();
    for (Gelu { x, last }, form) in &found {
        let x = moved
            .iter()
            .find(|(old, _)| old == x)
            .map_or(*x, |&(_, new)| new);
        let n = g.node(*last)?;
        let (name, desc) = (n.name.to_string(), n.outputs[0].desc.clone());
        let mut gelu = match form {
            GeluForm::Tanh => Node::new(g.unique_name(&format!("{name}_gelu")), "Gelu"),
            GeluForm::Erf => {
                let mut v2 = Node::new(g.unique_name(&format!("{name}_gelu")), "GeluV2");
                v2.attrs
                    .insert("approximate".into(), AttrValue::String("none".into()));
                v2
            }
        };
        gelu.inputs.push(InputSlot::new("x", 0, desc.clone()));
        gelu.outputs.push(OutputSlot::new("y", 0, desc));
        let gid = g.add_node(gelu)?;
        g.add_data_edge(
            x,
            InPort {
                node: gid,
                index: 0,
            },
        )?;
        let (old, new) = (
            OutPort {
                node: *last,
                index: 0,
            },
            OutPort {
                node: gid,
                index: 0,
            },
        );
        redirect(g, old, new)?;
        moved.push((old, new));
    }
    // The chains' nodes are dead now; the dead-node pass removes them.
    let erf = found.iter().filter(|(_, f)| *f == GeluForm::Erf).count();
    Ok((found.len() - erf, erf))
}

#[cfg(test)]
mod tests {
    use super::super::optimize;
    use crate::value::{signature, Value};
    use es_core::attr::AttrValue;
    use es_core::{es, DataType, Format, Graph, GraphBuilder, OutPort, Shape, Tensor};
    use ndarray::{ArrayD, IxDyn};

    fn input(b: &mut GraphBuilder, index: i64, dims: &[usize]) -> OutPort {
        let shape = Shape::new(dims.iter().map(|&d| d as i64).collect());
        b.create_input(index, None, "Data", DataType::FLOAT, Format::ND, shape)
            .unwrap()
    }

    fn konst<T: es_core::types::Element>(b: &mut GraphBuilder, dims: &[i64], v: &[T]) -> OutPort {
        b.create_const(Tensor::from_values(v, dims.to_vec()).unwrap(), None)
            .unwrap()
    }

    fn f32s(dims: &[usize], f: impl Fn(usize) -> f32) -> Value {
        let n = dims.iter().product();
        Value::F32(ArrayD::from_shape_vec(IxDyn(dims), (0..n).map(f).collect()).unwrap())
    }

    fn ops(g: &Graph) -> Vec<String> {
        g.iter().map(|(_, n)| n.op_type.to_string()).collect()
    }

    fn run(g: &Graph, xs: Vec<Value>) -> Vec<Vec<f64>> {
        let p = crate::plan::compile(g, &signature(&xs), None).unwrap();
        p.execute(xs)
            .unwrap()
            .iter()
            .map(Value::to_f64_vec)
            .collect()
    }

    /// x [3, 5] and w [7, 5]: x @ Transpose(w) (MatMulV2), [2, 3, 5] @ Transpose(w)
    /// (BatchMatMulV2), Transpose(x3, [0, 2, 1]) with adj_x1 already set, and a Transpose that
    /// moves a batch dim (not absorbed); every result against a naive product.
    #[test]
    fn last_two_dims_transposes_are_absorbed() {
        let mut b = GraphBuilder::new("g");
        let x = input(&mut b, 0, &[3, 5]);
        let x3 = input(&mut b, 1, &[2, 3, 5]);
        let wv: Vec<f32> = (0..35).map(|i| ((i * 7) % 11) as f32 / 4.0 - 1.2).collect();
        let w = konst(&mut b, &[7, 5], &wv);
        let p2 = konst(&mut b, &[2], &[1i64, 0]);
        let wt = es::transpose(&mut b, w, p2).unwrap();
        let y1 = es::mat_mul_v2(&mut b, x, wt, None, None, Default::default()).unwrap();
        let y2 = es::batch_mat_mul_v2(&mut b, x3, wt, None, None, Default::default()).unwrap();
        // (x3^T)^T @ x3^T: [2, 3, 5] @ [2, 5, 3] = [2, 3, 3].
        let p3 = konst(&mut b, &[3], &[0i64, 2, 1]);
        let x3t = es::transpose(&mut b, x3, p3).unwrap();
        let adj = es::BatchMatMulV2Attrs {
            adj_x1: Some(true),
            ..Default::default()
        };
        let y3 = es::batch_mat_mul_v2(&mut b, x3t, x3t, None, None, adj).unwrap();
        // A batch-moving perm: [3, 2, 5] @ [5, 7] is not a swap of the last two dims.
        let p4 = konst(&mut b, &[3], &[1i64, 0, 2]);
        let x3b = es::transpose(&mut b, x3, p4).unwrap();
        let y4 = es::batch_mat_mul_v2(&mut b, x3b, wt, None, None, Default::default()).unwrap();
        for (i, y) in [y1, y2, y3, y4].into_iter().enumerate() {
            b.set_output(y, i).unwrap();
        }
        let g = b.build_and_reset().unwrap();
        let mut h = g.clone();
        let counts = optimize(&mut h).unwrap();
        // y1, y2 (each an edge from wt), y3's two operands; not y4's batch move.
        assert_eq!(counts.transposes_absorbed, 5);
        assert_eq!(ops(&h).iter().filter(|o| *o == "Transpose").count(), 1);
        h.validate().unwrap();

        let xv = f32s(&[3, 5], |i| (i as f32 * 0.3).sin());
        let x3v = f32s(&[2, 3, 5], |i| (i as f32 * 0.7).cos());
        let got = run(&g, vec![xv.clone(), x3v.clone()]);
        let (xa, x3a) = (xv.to_f64_vec(), x3v.to_f64_vec());
        let wa: Vec<f64> = wv.iter().map(|&v| f64::from(v)).collect();
        // a [m, k] @ w^T: w [7, 5].
        let by_w = |a: &[f64], m: usize| -> Vec<f64> {
            let mut out = vec![0.0; m * 7];
            for r in 0..m {
                for c in 0..7 {
                    out[r * 7 + c] = (0..5).map(|k| a[r * 5 + k] * wa[c * 5 + k]).sum();
                }
            }
            out
        };
        let close = |a: &[f64], b: &[f64]| {
            assert_eq!(a.len(), b.len());
            for (x, y) in a.iter().zip(b) {
                assert!((x - y).abs() <= 1e-5 * (1.0 + y.abs()), "{x} vs {y}");
            }
        };
        close(&got[0], &by_w(&xa, 3));
        close(&got[1], &by_w(&x3a, 6));
        let mut want3 = vec![0.0; 18];
        for bt in 0..2 {
            let a = &x3a[bt * 15..bt * 15 + 15];
            for r in 0..3 {
                for c in 0..3 {
                    want3[bt * 9 + r * 3 + c] = (0..5).map(|k| a[r * 5 + k] * a[c * 5 + k]).sum();
                }
            }
        }
        close(&got[2], &want3);
        // y4[i, j] = x3[j, i] @ w^T.
        let mut moved = vec![0.0; 30];
        for i in 0..3 {
            for j in 0..2 {
                for k in 0..5 {
                    moved[(i * 2 + j) * 5 + k] = x3a[(j * 3 + i) * 5 + k];
                }
            }
        }
        close(&got[3], &by_w(&moved, 6));
    }

    /// A [7, 5] constant read transposed: by x [3, 5] @ Transpose(w) (laid out once, shared by
    /// a [2, 3, 5] BatchMatMulV2, the original still read by a Relu), by a one-row product
    /// (kept transposed) and by a flagged MatMulV2 of a second, unshared constant (whose
    /// original is then dead); every result against a naive product.
    #[test]
    fn transposed_constant_operands_are_laid_out_once() {
        let mut b = GraphBuilder::new("g");
        let x = input(&mut b, 0, &[3, 5]);
        let x3 = input(&mut b, 1, &[2, 3, 5]);
        let x1 = input(&mut b, 2, &[1, 5]);
        let wv: Vec<f32> = (0..35).map(|i| ((i * 7) % 11) as f32 / 4.0 - 1.2).collect();
        let vv: Vec<f32> = (0..35).map(|i| ((i * 5) % 13) as f32 / 8.0 - 0.7).collect();
        let w = konst(&mut b, &[7, 5], &wv);
        let v = konst(&mut b, &[7, 5], &vv);
        let p2 = konst(&mut b, &[2], &[1i64, 0]);
        let wt = es::transpose(&mut b, w, p2).unwrap();
        let y1 = es::mat_mul_v2(&mut b, x, wt, None, None, Default::default()).unwrap();
        let y2 = es::batch_mat_mul_v2(&mut b, x3, wt, None, None, Default::default()).unwrap();
        let y3 = es::mat_mul_v2(&mut b, x1, wt, None, None, Default::default()).unwrap();
        let tr = es::MatMulV2Attrs {
            transpose_x2: Some(true),
            ..Default::default()
        };
        let y4 = es::mat_mul_v2(&mut b, x, v, None, None, tr).unwrap();
        let y5 = es::relu(&mut b, w).unwrap();
        for (i, y) in [y1, y2, y3, y4, y5].into_iter().enumerate() {
            b.set_output(y, i).unwrap();
        }
        let g = b.build_and_reset().unwrap();
        let mut h = g.clone();
        let counts = optimize(&mut h).unwrap();
        assert_eq!(counts.constant_operands_laid_out, 3);
        h.validate().unwrap();
        // w (still read by the one-row product), the folded Relu of it, w's transpose and v's
        // (v itself is dead).
        let consts: Vec<Vec<i64>> = h
            .nodes()
            .into_iter()
            .filter_map(|n| {
                h.node(n)
                    .unwrap()
                    .const_value()
                    .map(|t| t.desc.shape.dims().to_vec())
            })
            .collect();
        assert_eq!(
            consts.iter().filter(|d| *d == &vec![5, 7]).count(),
            2,
            "{consts:?}"
        );
        assert_eq!(
            consts.iter().filter(|d| *d == &vec![7, 5]).count(),
            2,
            "{consts:?}"
        );
        let flags: Vec<bool> = h
            .nodes()
            .into_iter()
            .map(|n| h.node(n).unwrap())
            .filter(|n| n.op_type == "MatMulV2")
            .map(|n| {
                n.attr("transpose_x2")
                    .and_then(|a| a.as_bool())
                    .unwrap_or(false)
            })
            .collect();
        assert_eq!(
            flags.iter().filter(|f| **f).count(),
            1,
            "the one-row product: {flags:?}"
        );

        let xv = f32s(&[3, 5], |i| (i as f32 * 0.3).sin());
        let x3v = f32s(&[2, 3, 5], |i| (i as f32 * 0.7).cos());
        let x1v = f32s(&[1, 5], |i| i as f32 - 2.5);
        let got = run(&h, vec![xv.clone(), x3v.clone(), x1v.clone()]);
        let by = |a: &[f64], m: usize, w: &[f32]| -> Vec<f64> {
            let mut out = vec![0.0; m * 7];
            for r in 0..m {
                for c in 0..7 {
                    out[r * 7 + c] = (0..5).map(|k| a[r * 5 + k] * f64::from(w[c * 5 + k])).sum();
                }
            }
            out
        };
        let close = |a: &[f64], b: &[f64]| {
            assert_eq!(a.len(), b.len());
            for (x, y) in a.iter().zip(b) {
                assert!((x - y).abs() <= 1e-5 * (1.0 + y.abs()), "{x} vs {y}");
            }
        };
        close(&got[0], &by(&xv.to_f64_vec(), 3, &wv));
        close(&got[1], &by(&x3v.to_f64_vec(), 6, &wv));
        close(&got[2], &by(&x1v.to_f64_vec(), 1, &wv));
        close(&got[3], &by(&xv.to_f64_vec(), 3, &vv));
        let relu: Vec<f64> = wv.iter().map(|&v| f64::from(v.max(0.0))).collect();
        close(&got[4], &relu);
    }

    /// (p q) r, or p (q r) where `right`.
    fn mul3(b: &mut GraphBuilder, [p, q, r]: [OutPort; 3], right: bool) -> OutPort {
        if right {
            let qr = es::mul(b, q, r).unwrap();
            es::mul(b, p, qr).unwrap()
        } else {
            let pq = es::mul(b, p, q).unwrap();
            es::mul(b, pq, r).unwrap()
        }
    }

    /// GPT-2's tanh-Gelu in the groupings exporters write, with Pow or products for the cube:
    /// one Gelu each, the chain gone, results within a few ulp of the formula.
    #[test]
    fn tanh_gelu_chains_become_gelu() {
        let c = (2.0 / std::f64::consts::PI).sqrt() as f32;
        for variant in 0..4 {
            let mut b = GraphBuilder::new("g");
            let x = input(&mut b, 0, &[3, 37]);
            let k = |b: &mut GraphBuilder, v: f32| konst(b, &[], &[v]);
            let cube = match variant {
                0 | 2 => {
                    let three = k(&mut b, 3.0);
                    es::pow(&mut b, x, three).unwrap()
                }
                v => mul3(&mut b, [x, x, x], v == 3),
            };
            let k1 = k(&mut b, 0.044715);
            let t = es::mul(&mut b, k1, cube).unwrap();
            let s = es::add(&mut b, t, x).unwrap();
            let kc = k(&mut b, c);
            let u = es::mul(&mut b, s, kc).unwrap();
            let th = es::tanh(&mut b, u).unwrap();
            let one = k(&mut b, 1.0);
            let a = es::add(&mut b, one, th).unwrap();
            let half = k(&mut b, 0.5);
            let y = match variant {
                0 => mul3(&mut b, [x, half, a], false),
                1 => mul3(&mut b, [x, half, a], true),
                _ => mul3(&mut b, [half, x, a], true),
            };
            b.set_output(y, 0).unwrap();
            let g = b.build_and_reset().unwrap();
            let mut h = g.clone();
            let counts = optimize(&mut h).unwrap();
            assert_eq!(counts.gelus_fused, 1, "variant {variant}");
            assert_eq!(
                ops(&h).iter().filter(|o| *o != "Data").count(),
                1,
                "{:?}",
                ops(&h)
            );
            let xv = f32s(&[3, 37], |i| (i as f32 - 55.0) / 9.0);
            let got = run(&g, vec![xv.clone()]);
            for (&x, &y) in xv.to_f64_vec().iter().zip(&got[0]) {
                let w = 0.5 * x * (1.0 + (c as f64 * (x + 0.044715 * x * x * x)).tanh());
                assert!(
                    (y - w).abs() <= 1e-6 * w.abs() + 1e-7,
                    "gelu({x}) = {y}, want {w}"
                );
            }
        }
    }

    /// Near misses stay unfused: a wrong constant, an intermediate used twice, a cube of
    /// another tensor, and a constant that broadcasts x to a larger shape.
    #[test]
    fn near_misses_are_left_alone() {
        for miss in 0..4 {
            let mut b = GraphBuilder::new("g");
            let x = input(&mut b, 0, &[2, 5]);
            let z = input(&mut b, 1, &[2, 5]);
            let k = |b: &mut GraphBuilder, v: f32| konst(b, &[], &[v]);
            let three = k(&mut b, 3.0);
            let base = if miss == 2 { z } else { x };
            let cube = es::pow(&mut b, base, three).unwrap();
            let k1 = k(&mut b, if miss == 0 { 0.05 } else { 0.044715 });
            let t = es::mul(&mut b, cube, k1).unwrap();
            let s = es::add(&mut b, x, t).unwrap();
            let kc = if miss == 3 {
                konst(&mut b, &[1, 1, 1], &[0.797_884_6f32])
            } else {
                k(&mut b, 0.797_884_6)
            };
            let u = es::mul(&mut b, s, kc).unwrap();
            let th = es::tanh(&mut b, u).unwrap();
            let one = k(&mut b, 1.0);
            let a = es::add(&mut b, th, one).unwrap();
            let half = k(&mut b, 0.5);
            let h = es::mul(&mut b, x, half).unwrap();
            let y = es::mul(&mut b, h, a).unwrap();
            b.set_output(y, 0).unwrap();
            if miss == 1 {
                b.set_output(th, 1).unwrap();
            }
            let mut g = b.build_and_reset().unwrap();
            let counts = optimize(&mut g).unwrap();
            assert_eq!(counts.gelus_fused, 0, "miss {miss}");
            assert!(ops(&g).contains(&"Tanh".to_string()));
        }
    }

    /// The erf-Gelu 0.5 x (1 + erf(x / sqrt 2)) built with the division `form` (0 Div,
    /// 1 RealDiv, 2 Mul by 1/sqrt 2) and the factors grouped by `group` (as `mul3`'s
    /// variants); `share` also makes the Erf's result a graph output.
    fn erf_gelu(form: usize, group: usize, share: bool) -> Graph {
        let mut b = GraphBuilder::new("g");
        let x = input(&mut b, 0, &[3, 37]);
        let k = |b: &mut GraphBuilder, v: f32| konst(b, &[], &[v]);
        let t = match form {
            0 => {
                let c = k(&mut b, std::f32::consts::SQRT_2);
                es::div(&mut b, x, c).unwrap()
            }
            1 => {
                let c = k(&mut b, std::f32::consts::SQRT_2);
                es::real_div(&mut b, x, c).unwrap()
            }
            _ => {
                let c = k(&mut b, std::f32::consts::FRAC_1_SQRT_2);
                es::mul(&mut b, c, x).unwrap()
            }
        };
        let e = es::erf(&mut b, t).unwrap();
        let one = k(&mut b, 1.0);
        let a = if group == 1 {
            es::add(&mut b, one, e).unwrap()
        } else {
            es::add(&mut b, e, one).unwrap()
        };
        let half = k(&mut b, 0.5);
        let y = match group {
            0 => mul3(&mut b, [x, half, a], false),
            1 => mul3(&mut b, [x, a, half], false),
            2 => mul3(&mut b, [x, half, a], true),
            _ => mul3(&mut b, [a, x, half], true),
        };
        b.set_output(y, 0).unwrap();
        if share {
            b.set_output(e, 1).unwrap();
        }
        b.build_and_reset().unwrap()
    }

    /// The erf-Gelu in the groupings exporters write (x / sqrt 2 or x * (1 / sqrt 2), the 0.5
    /// on either side): one GeluV2 with `approximate` "none" each, the chain gone, the results
    /// within the kernel's bound of x Phi(x).
    #[test]
    fn erf_gelu_chains_become_gelu_v2() {
        for form in 0..3 {
            for group in 0..4 {
                let g = erf_gelu(form, group, false);
                let mut h = g.clone();
                let counts = optimize(&mut h).unwrap();
                assert_eq!(counts.erf_gelus_fused, 1, "form {form}, group {group}");
                assert_eq!(counts.gelus_fused, 0);
                let rest: Vec<_> = h.iter().filter(|(_, n)| n.op_type != "Data").collect();
                assert_eq!(rest.len(), 1, "{:?}", ops(&h));
                let n = rest[0].1;
                assert_eq!(n.op_type, "GeluV2");
                assert_eq!(
                    n.attr("approximate").and_then(AttrValue::as_str),
                    Some("none")
                );
                let xv = f32s(&[3, 37], |i| (i as f32 - 55.0) / 9.0);
                let got = run(&g, vec![xv.clone()]);
                for (&x, &y) in xv.to_f64_vec().iter().zip(&got[0]) {
                    let w = 0.5 * x * libm::erfc(-x / std::f64::consts::SQRT_2);
                    let tol = 3.0 * f64::from(f32::EPSILON) * w.abs() + x.abs() * 2f64.powi(-22);
                    assert!((y - w).abs() <= tol, "gelu({x}) = {y}, want {w}");
                }
            }
        }
    }

    /// Erf-Gelu near misses stay unfused: the Erf's result read elsewhere, a wrong divisor,
    /// a Div with the constant first, and 1 + erf of another tensor.
    #[test]
    fn erf_gelu_near_misses_are_left_alone() {
        let mut g = erf_gelu(0, 0, true);
        assert_eq!(optimize(&mut g).unwrap().erf_gelus_fused, 0);
        assert!(ops(&g).contains(&"Erf".to_string()));
        for miss in 0..3 {
            let mut b = GraphBuilder::new("g");
            let x = input(&mut b, 0, &[2, 5]);
            let z = input(&mut b, 1, &[2, 5]);
            let k = |b: &mut GraphBuilder, v: f32| konst(b, &[], &[v]);
            let t = match miss {
                0 => {
                    let c = k(&mut b, 1.5);
                    es::div(&mut b, x, c).unwrap()
                }
                1 => {
                    let c = k(&mut b, std::f32::consts::SQRT_2);
                    es::div(&mut b, c, x).unwrap()
                }
                _ => {
                    let c = k(&mut b, std::f32::consts::SQRT_2);
                    es::div(&mut b, z, c).unwrap()
                }
            };
            let e = es::erf(&mut b, t).unwrap();
            let one = k(&mut b, 1.0);
            let a = es::add(&mut b, e, one).unwrap();
            let half = k(&mut b, 0.5);
            let y = mul3(&mut b, [x, half, a], false);
            b.set_output(y, 0).unwrap();
            let mut g = b.build_and_reset().unwrap();
            assert_eq!(optimize(&mut g).unwrap().erf_gelus_fused, 0, "miss {miss}");
            assert!(ops(&g).contains(&"Erf".to_string()));
        }
    }

    /// Divisions by ±2^k (2^-100 too) become products with the same bits (subnormal results
    /// included); by 3 or by a tensor stays a division.
    #[test]
    fn power_of_two_divisions_become_exact_products() {
        let mut b = GraphBuilder::new("g");
        let x = input(&mut b, 0, &[2, 9]);
        let mut outs = Vec::new();
        for d in [8.0f32, 0.25, -4.0, 3.0, 2f32.powi(-100)] {
            let c = konst(&mut b, &[1], &[d]);
            outs.push(es::div(&mut b, x, c).unwrap());
        }
        let c = konst(&mut b, &[], &[16.0f32]);
        outs.push(es::real_div(&mut b, x, c).unwrap());
        outs.push(es::div(&mut b, x, x).unwrap());
        for (i, &y) in outs.iter().enumerate() {
            b.set_output(y, i).unwrap();
        }
        let g = b.build_and_reset().unwrap();
        let mut h = g.clone();
        assert_eq!(optimize(&mut h).unwrap().divisions_to_products, 5);
        assert_eq!(ops(&h).iter().filter(|o| *o == "Div").count(), 2);
        let mut xv: Vec<f32> = (0..18)
            .map(|i| (i as f32 * 1.37).sin() * 10f32.powi(i % 7 - 3))
            .collect();
        xv[0] = f32::from_bits(3); // a subnormal
        xv[1] = f32::MAX;
        let xs = Value::F32(ArrayD::from_shape_vec(IxDyn(&[2, 9]), xv.clone()).unwrap());
        let p = crate::plan::compile(&g, &signature(std::slice::from_ref(&xs)), None).unwrap();
        let got = p.execute(vec![xs]).unwrap();
        for (o, d) in got
            .iter()
            .zip([8.0f32, 0.25, -4.0, 3.0, 2f32.powi(-100), 16.0])
        {
            let Value::F32(a) = o else { panic!() };
            for (g, x) in a.iter().zip(&xv) {
                assert_eq!(g.to_bits(), (x / d).to_bits(), "{x} / {d}");
            }
        }
    }
}
