//! Built-in graph optimisations of the compile pipeline (after shape inference):
//!
//! - identity elimination: an `Identity` without control edges is bypassed and removed;
//! - constant folding: a node whose inputs are all constants, with a kernel, deterministic,
//!   without control edges, and whose outputs hold at most [`FOLD_LIMIT`] elements, is
//!   computed once at compile time and replaced by `Const` nodes;
//! - common-subexpression elimination: two nodes with the same op type, the same inputs and
//!   the same attributes (deterministic ops, no control edges) become one;
//! - Conv+BatchNorm folding ([`crate::fuse::fold_conv_batch_norm`]);
//! - transformer patterns ([`patterns`]): last-two-dims Transposes absorbed into the matrix
//!   products they feed, GPT-2's tanh-Gelu written out in element-wise ops replaced by `Gelu`,
//!   divisions by a power-of-two constant made multiplications (same bits), rank-2 constants
//!   read transposed by products laid out transposed once;
//! - dead nodes: nodes the outputs do not need are removed.
//!
//! Each keeps what the graph computes; the counts go to the compile report.

use crate::error::Result;
use crate::kernels::{self, NodeInfo};
use crate::rewrite::{plain, redirect, tensor_const};
use crate::value::Value;
use es_core::graph::is_data_op;
use es_core::{Graph, Node, NodeId, OutPort};
use rustc_hash::{FxHashMap, FxHashSet};

mod patterns;

/// The most elements a folded node may produce (all outputs together).
pub const FOLD_LIMIT: usize = 1 << 20;

/// Ops whose result changes from run to run: never folded or merged (the HCCL collectives
/// among them: what they give depends on the other ranks, and each one must run).
pub(crate) fn nondeterministic(op: &str) -> bool {
    op.starts_with("Random")
        || op.contains("Multinomial")
        || op == "Dropout"
        || op.starts_with("Hcom")
}

/// A node folding and merging may touch: a deterministic, plain op that computes its output
/// (not a Data or Const node).
fn computed(n: &Node) -> bool {
    !is_data_op(&n.op_type)
        && n.const_value().is_none()
        && !nondeterministic(&n.op_type)
        && plain(n)
        // A list or optional (DT_VARIANT) is no tensor a Const could hold.
        && !n
            .outputs
            .iter()
            .any(|o| o.desc.dtype == es_core::DataType::VARIANT)
}

/// What the optimisations did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OptimizeCounts {
    pub identities_removed: usize,
    pub constants_folded: usize,
    pub duplicates_merged: usize,
    pub batch_norms_folded: usize,
    pub dead_removed: usize,
    pub transposes_absorbed: usize,
    pub gelus_fused: usize,
    /// erf-Gelu chains made GeluV2 nodes (`gelus_fused` counts the tanh-Gelus).
    pub erf_gelus_fused: usize,
    pub divisions_to_products: usize,
    pub constant_operands_laid_out: usize,
}

impl std::fmt::Display for OptimizeCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "identities removed {}, constants folded {}, duplicates merged {}, \
             BatchNorms folded into convolutions {}, dead nodes removed {}, \
             transposes absorbed into products {}, transposed constant operands laid out {}, \
             tanh-Gelus fused {}, erf-Gelus fused {}, divisions by powers of two made products {}",
            self.identities_removed,
            self.constants_folded,
            self.duplicates_merged,
            self.batch_norms_folded,
            self.dead_removed,
            self.transposes_absorbed,
            self.constant_operands_laid_out,
            self.gelus_fused,
            self.erf_gelus_fused,
            self.divisions_to_products
        )
    }
}

fn remove_identities(g: &mut Graph) -> Result<usize> {
    let ids: Vec<NodeId> = g
        .nodes()
        .into_iter()
        .filter(|&id| {
            g.node(id).is_ok_and(|n| {
                n.op_type == "Identity" && plain(n) && n.inputs.len() == 1 && n.outputs.len() == 1
            })
        })
        .collect();
    let mut removed = 0;
    for id in ids {
        let Some(src) = g.node(id)?.inputs[0].source else {
            continue;
        };
        redirect(g, OutPort { node: id, index: 0 }, src)?;
        g.remove_node(id)?;
        removed += 1;
    }
    Ok(removed)
}

fn const_node(g: &Graph, base: &str, v: &Value) -> Result<Node> {
    Ok(tensor_const(g, base, v.to_tensor()?))
}

fn fold_constants(g: &mut Graph) -> Result<usize> {
    let mut folded = 0;
    for id in g.topo_order()? {
        let n = g.node(id)?;
        if !computed(n) {
            continue;
        }
        let Some(factory) = kernels::lookup(&n.op_type) else {
            continue;
        };
        let elements: Option<usize> = n
            .outputs
            .iter()
            .map(|o| {
                o.desc
                    .shape
                    .num_elements()
                    .and_then(|e| usize::try_from(e).ok())
            })
            .sum();
        if !matches!(elements, Some(e) if e <= FOLD_LIMIT) {
            continue;
        }
        let mut values = Vec::with_capacity(n.inputs.len());
        let mut all_const = true;
        for inp in &n.inputs {
            match inp.source {
                None => values.push(None),
                Some(p) => match g.node(p.node)?.const_value() {
                    Some(t) => values.push(Some(Value::from_tensor(t)?)),
                    None => {
                        all_const = false;
                        break;
                    }
                },
            }
        }
        if !all_const || values.iter().all(Option::is_none) {
            continue;
        }
        let info = NodeInfo {
            node: n,
            inputs: n
                .inputs
                .iter()
                .map(|i| i.source.and_then(|p| g.out_desc(p).ok().cloned()))
                .collect(),
            const_inputs: values.clone(),
        };
        // A node the backend cannot compute now (an unsupported attribute, a bad value) is
        // left for the plan, which reports it with the node's name.
        let Ok(kernel) = factory(&info) else {
            continue;
        };
        let args: Vec<Option<&Value>> = values.iter().map(Option::as_ref).collect();
        let Ok(outs) = kernel(&args) else {
            continue;
        };
        if outs.len() != n.outputs.len() {
            continue;
        }
        let name = n.name.to_string();
        for (i, v) in outs.iter().enumerate() {
            let c = const_node(g, &format!("{name}_folded"), v)?;
            let cid = g.add_node(c)?;
            redirect(
                g,
                OutPort {
                    node: id,
                    index: i as u32,
                },
                OutPort {
                    node: cid,
                    index: 0,
                },
            )?;
        }
        g.remove_node(id)?;
        folded += 1;
    }
    Ok(folded)
}

fn merge_duplicates(g: &mut Graph) -> Result<usize> {
    // Key: op type and input sources; attributes compared within a bucket.
    let mut seen: FxHashMap<(String, Vec<Option<OutPort>>), Vec<NodeId>> = FxHashMap::default();
    let mut merged = 0;
    for id in g.topo_order()? {
        let n = g.node(id)?;
        if !computed(n) || n.inputs.is_empty() {
            continue;
        }
        let key = (
            n.op_type.to_string(),
            n.inputs.iter().map(|i| i.source).collect::<Vec<_>>(),
        );
        let bucket = seen.entry(key).or_default();
        let twin = bucket.iter().copied().find(|&o| {
            g.node(o)
                .is_ok_and(|m| m.attrs == n.attrs && m.outputs.len() == n.outputs.len())
        });
        match twin {
            Some(o) => {
                for i in 0..n.outputs.len() as u32 {
                    redirect(
                        g,
                        OutPort { node: id, index: i },
                        OutPort { node: o, index: i },
                    )?;
                }
                g.remove_node(id)?;
                merged += 1;
            }
            None => bucket.push(id),
        }
    }
    Ok(merged)
}

/// The nodes the graph outputs depend on (through data and control edges), and the nodes
/// that run for their effect alone (an `HcomSend`: a collective without outputs) with what they
/// depend on, in topological order.
pub fn needed_nodes(g: &Graph) -> Result<Vec<NodeId>> {
    let order = g.topo_order()?;
    let mut need: FxHashSet<NodeId> = g.outputs.iter().map(|p| p.node).collect();
    for &id in &order {
        let n = g.node(id)?;
        if n.outputs.is_empty() && n.op_type.starts_with("Hcom") {
            need.insert(id);
        }
    }
    for &id in order.iter().rev() {
        if !need.contains(&id) {
            continue;
        }
        let n = g.node(id)?;
        need.extend(n.inputs.iter().filter_map(|i| i.source).map(|p| p.node));
        need.extend(n.in_control.iter().copied());
    }
    Ok(order.into_iter().filter(|id| need.contains(id)).collect())
}

fn remove_dead(g: &mut Graph) -> Result<usize> {
    let need: FxHashSet<NodeId> = needed_nodes(g)?.into_iter().collect();
    // Graph inputs stay: they define the run's signature.
    let dead: Vec<NodeId> = g
        .nodes()
        .into_iter()
        .filter(|id| !need.contains(id) && g.node(*id).is_ok_and(|n| !is_data_op(&n.op_type)))
        .collect();
    g.remove_nodes(&dead)?;
    Ok(dead.len())
}

/// Runs the built-in optimisations on an inferred graph.
pub fn optimize(g: &mut Graph) -> Result<OptimizeCounts> {
    let identities_removed = remove_identities(g)?;
    // Before folding: a transposed constant too large to fold becomes a flag of its products,
    // and then, where it is rank 2 and the product has several rows, a constant laid out
    // transposed once (a one-row product reads the original in place).
    let transposes_absorbed = patterns::absorb_transposes(g)?;
    let constant_operands_laid_out = patterns::contiguous_const_operands(g)?;
    let (gelus_fused, erf_gelus_fused) = patterns::fuse_gelus(g)?;
    let divisions_to_products = patterns::div_to_mul(g)?;
    let constants_folded = fold_constants(g)?;
    let duplicates_merged = merge_duplicates(g)?;
    let batch_norms_folded = crate::fuse::fold_conv_batch_norm(g)?;
    let dead_removed = remove_dead(g)?;
    Ok(OptimizeCounts {
        identities_removed,
        constants_folded,
        duplicates_merged,
        batch_norms_folded,
        dead_removed,
        transposes_absorbed,
        gelus_fused,
        erf_gelus_fused,
        divisions_to_products,
        constant_operands_laid_out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_common::float_input as input;
    use es_core::{es, GraphBuilder, Tensor};

    #[test]
    fn folds_identities_duplicates_and_dead_nodes() {
        let mut b = GraphBuilder::new("g");
        let x = input(&mut b);
        let c1 = b
            .create_const(Tensor::from_values(&[1.0f32, 2.0], vec![2]).unwrap(), None)
            .unwrap();
        let c2 = b
            .create_const(Tensor::from_values(&[3.0f32, 4.0], vec![2]).unwrap(), None)
            .unwrap();
        let folded = es::add(&mut b, c1, c2).unwrap(); // constant: folded
        let id = es::identity(&mut b, x).unwrap(); // removed
        let a1 = es::mul(&mut b, id, folded).unwrap();
        let a2 = es::mul(&mut b, id, folded).unwrap(); // duplicate of a1
        let _dead = es::relu(&mut b, x).unwrap();
        let y = es::add(&mut b, a1, a2).unwrap();
        b.set_output(y, 0).unwrap();
        let mut g = b.build_and_reset().unwrap();
        let counts = optimize(&mut g).unwrap();
        assert_eq!(
            counts,
            OptimizeCounts {
                identities_removed: 1,
                constants_folded: 1,
                duplicates_merged: 1,
                batch_norms_folded: 0,
                dead_removed: 3,
                transposes_absorbed: 0,
                gelus_fused: 0,
                erf_gelus_fused: 0,
                divisions_to_products: 0,
                constant_operands_laid_out: 0,
            }
        );
        g.validate().unwrap();
        let types: Vec<String> = g
            .nodes()
            .iter()
            .map(|&n| g.node(n).unwrap().op_type.to_string())
            .collect();
        assert_eq!(types.iter().filter(|t| *t == "Mul").count(), 1);
        assert!(!types.contains(&"Identity".to_string()) && !types.contains(&"Relu".to_string()));
        let c = g
            .nodes()
            .into_iter()
            .find_map(|n| g.node(n).unwrap().const_value().cloned())
            .unwrap();
        assert_eq!(c.values::<f32>().unwrap(), vec![4.0, 6.0]);
    }
}
