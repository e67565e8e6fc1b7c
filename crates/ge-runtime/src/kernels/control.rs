//! Control flow: If, Case and While run their subgraphs.
//!
//! Each subgraph is compiled (without passes) the first time it runs with a given input
//! signature, and the plan is kept in the kernel for later runs (at most [`MAX_PLANS`]
//! signatures: a While whose loop values grow every iteration would otherwise keep one plan
//! per iteration, memory without bound); a subgraph's inputs are its
//! Data nodes by index, fed from the node's `input` instances, and its outputs become the
//! node's outputs.

use super::{input, Kernel, Kernels, NodeInfo};
use crate::error::{Error, Result};
use crate::value::{signature, Signature, Value};
use es_core::Graph;
use rustc_hash::FxHashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// A compiled subgraph, run with its inputs.
pub(crate) trait Subplan: Send + Sync {
    fn run(&self, inputs: Vec<Value>) -> Result<Vec<Value>>;
}

/// Compiles a subgraph for an input signature.
pub(crate) type SubgraphCompiler = fn(&Graph, &Signature) -> Result<Arc<dyn Subplan>>;

static COMPILER: OnceLock<SubgraphCompiler> = OnceLock::new();

/// Gives the control-flow kernels the planner's compile (`plan` sits above the kernels, so
/// they reach it through this hook, which it installs before it selects kernels).
pub(crate) fn install_subgraph_compiler(f: SubgraphCompiler) {
    COMPILER.get_or_init(|| f);
}

fn compile(graph: &Graph, sig: &Signature) -> Result<Arc<dyn Subplan>> {
    let f = COMPILER
        .get()
        .ok_or_else(|| Error::kernel("internal error: no subgraph compiler installed"))?;
    f(graph, sig)
}

/// The most plans a subgraph keeps (by input signature); one more evicts another.
const MAX_PLANS: usize = 16;

/// A subgraph with its plans by signature.
struct Branch {
    name: String,
    graph: Graph,
    plans: Mutex<FxHashMap<Signature, Arc<dyn Subplan>>>,
}

impl Branch {
    fn new(name: &str, graph: &Graph) -> Branch {
        Branch {
            name: name.to_string(),
            graph: graph.clone(),
            plans: Mutex::new(FxHashMap::default()),
        }
    }

    fn run(&self, inputs: Vec<Value>) -> Result<Vec<Value>> {
        let sig = signature(&inputs);
        let cached = self
            .plans
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&sig)
            .cloned();
        let plan = match cached {
            Some(p) => p,
            None => {
                let p = compile(&self.graph, &sig)
                    .map_err(|e| Error::kernel(format!("subgraph '{}': {e}", self.name)))?;
                let mut plans = self.plans.lock().unwrap_or_else(|p| p.into_inner());
                remember(&mut plans, sig, p.clone());
                p
            }
        };
        plan.run(inputs)
            .map_err(|e| Error::kernel(format!("in subgraph '{}': {e}", self.name)))
    }
}

/// Keeps `plan` for `sig`, evicting another plan when [`MAX_PLANS`] are kept already.
fn remember(
    plans: &mut FxHashMap<Signature, Arc<dyn Subplan>>,
    sig: Signature,
    plan: Arc<dyn Subplan>,
) {
    if plans.len() >= MAX_PLANS && !plans.contains_key(&sig) {
        if let Some(old) = plans.keys().next().cloned() {
            plans.remove(&old);
        }
    }
    plans.insert(sig, plan);
}

fn subgraph(info: &NodeInfo, name: &str) -> Result<Branch> {
    info.node
        .subgraph(name)
        .map(|g| Branch::new(name, g))
        .ok_or_else(|| {
            Error::Compile(format!(
                "node '{}' ({}) has no subgraph '{name}'",
                info.node.name, info.node.op_type
            ))
        })
}

/// The loop or branch values: every input from `first` on, all required.
fn values(inputs: &[Option<&Value>], first: usize) -> Result<Vec<Value>> {
    (first..inputs.len())
        .map(|i| input(inputs, i).cloned())
        .collect()
}

/// GE's (TensorFlow's) truth of a condition tensor: a scalar is true when nonzero; any other
/// tensor is true when it has elements.
fn truth(v: &Value) -> bool {
    if v.shape().is_empty() {
        v.to_f64_vec().first().is_some_and(|&x| x != 0.0)
    } else {
        !v.is_empty()
    }
}

fn check_outputs(outs: &[Value], want: usize, what: &str) -> Result<()> {
    if outs.len() != want {
        return Err(Error::kernel(format!(
            "{what} produced {} outputs, the node has {want}",
            outs.len()
        )));
    }
    Ok(())
}

fn if_factory(info: &NodeInfo) -> Result<Kernel> {
    let then_b = subgraph(info, "then_branch")?;
    let else_b = subgraph(info, "else_branch")?;
    let n_out = info.node.outputs.len();
    Ok(Box::new(move |inputs| {
        let branch = if truth(input(inputs, 0)?) {
            &then_b
        } else {
            &else_b
        };
        let outs = branch.run(values(inputs, 1)?)?;
        check_outputs(&outs, n_out, &format!("branch '{}'", branch.name))?;
        Ok(outs)
    }))
}

fn case_factory(info: &NodeInfo) -> Result<Kernel> {
    let branches: Vec<Branch> = info
        .node
        .subgraphs
        .iter()
        .map(|s| Branch::new(&s.name, &s.graph))
        .collect();
    if branches.is_empty() {
        return Err(Error::Compile(format!(
            "Case node '{}' has no branches",
            info.node.name
        )));
    }
    let n_out = info.node.outputs.len();
    Ok(Box::new(move |inputs| {
        let idx = *input(inputs, 0)?
            .to_i64_vec()
            .first()
            .ok_or_else(|| Error::kernel("branch_index is empty"))?;
        // An index out of range runs the last branch (TensorFlow's Case, which GE follows).
        let k = usize::try_from(idx)
            .ok()
            .filter(|&k| k < branches.len())
            .unwrap_or(branches.len() - 1);
        let outs = branches[k].run(values(inputs, 1)?)?;
        check_outputs(&outs, n_out, &format!("branch '{}'", branches[k].name))?;
        Ok(outs)
    }))
}

fn while_factory(info: &NodeInfo) -> Result<Kernel> {
    let cond = subgraph(info, "cond")?;
    let body = subgraph(info, "body")?;
    let n_out = info.node.outputs.len();
    Ok(Box::new(move |inputs| {
        let mut vals = values(inputs, 0)?;
        check_outputs(&vals, n_out, "the loop inputs")?;
        loop {
            let c = cond.run(vals.clone())?;
            let first = c
                .first()
                .ok_or_else(|| Error::kernel("the cond subgraph has no output"))?;
            if !truth(first) {
                return Ok(vals);
            }
            let next = body.run(vals)?;
            check_outputs(&next, n_out, "the body subgraph")?;
            vals = next;
        }
    }))
}

/// This family's kernels, which [`super::registry`] collects.
pub(super) const KERNELS: Kernels = &[
    (&["If"], if_factory),
    (&["Case"], case_factory),
    (&["While"], while_factory),
];

#[cfg(test)]
mod tests {
    use super::*;

    struct Nothing;
    impl Subplan for Nothing {
        fn run(&self, inputs: Vec<Value>) -> Result<Vec<Value>> {
            Ok(inputs)
        }
    }

    /// A While whose loop value grows every iteration (a Range written as a Loop) met a new
    /// signature each time: the plans kept stay bounded (found by tools/fuzz_pipeline.py).
    #[test]
    fn plans_kept_per_subgraph_are_bounded() {
        let mut plans = FxHashMap::default();
        for n in 0..1000usize {
            let v = Value::F32(ndarray::ArrayD::zeros(ndarray::IxDyn(&[n])));
            remember(&mut plans, signature(&[v]), Arc::new(Nothing));
            assert!(plans.len() <= MAX_PLANS);
        }
        assert_eq!(plans.len(), MAX_PLANS);
        let last = signature(&[Value::F32(ndarray::ArrayD::zeros(ndarray::IxDyn(&[999])))]);
        assert!(plans.contains_key(&last), "the newest plan is kept");
    }
}
