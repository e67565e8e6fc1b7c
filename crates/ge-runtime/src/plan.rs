//! Compiling a graph for one input signature into an execution plan, and running a plan.
//!
//! Compiling: validate → passes at BeforeInferShape → the inputs' descriptions set from the
//! signature and shape/dtype inference for every node → AfterInferShape → built-in
//! optimisation ([`crate::optimize`]: identities, constant folding, common subexpressions,
//! dead nodes) →
//! AfterBuiltinFusionPass → AfterOriginGraphOptimize → the plan: the nodes in topological
//! order, each with its kernel selected once, input and output slots, constants loaded once,
//! and, per step, the slots whose last use it is (freed right after it, so buffers live only
//! as long as they are needed; an output nothing reads, right after its own step), and the
//! memory plan of those buffers ([`crate::memplan`]: sizes, lifetimes, arena offsets, peak).

use crate::error::{Error, Result};
use crate::kernels::{self, Kernel, NodeInfo};
use crate::memplan::{MemoryPlan, TensorSpec};
pub use crate::value::{signature, signature_text, InputSignature, Signature};
use crate::value::{supported_dtype, Value};
use es_core::graph::is_data_op;
use es_core::{DataType, Graph, NodeId, OutPort, Shape};
use pass_bridge::{PassRegistry, PassStage, PassStats, RunOptions};
use rustc_hash::FxHashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One stage of a compile, for the report.
#[derive(Debug, Clone, PartialEq)]
pub struct StageReport {
    pub stage: String,
    pub nodes_before: usize,
    pub nodes_after: usize,
    pub passes: Vec<PassStats>,
    /// What a built-in stage did, in words.
    pub notes: Vec<String>,
    pub elapsed: Duration,
}

impl StageReport {
    /// A built-in stage (no passes) that began at `start` and took the graph from `before`
    /// nodes to `after`.
    pub fn builtin(
        stage: &str,
        (before, after): (usize, usize),
        notes: Vec<String>,
        start: Instant,
    ) -> Self {
        StageReport {
            stage: stage.into(),
            nodes_before: before,
            nodes_after: after,
            passes: Vec::new(),
            notes,
            elapsed: start.elapsed(),
        }
    }
}

/// What a compile did: nodes before and after each stage, the passes applied, the time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CompileReport {
    pub stages: Vec<StageReport>,
    pub planned_nodes: usize,
    /// The plan's memory plan (None for a backend that does not make one).
    pub memory: Option<MemoryPlan>,
    pub elapsed: Duration,
}

impl CompileReport {
    /// Ends the report of a compile that began at `start`: the Plan stage (begun at
    /// `plan_start`, over a graph of `nodes` nodes, `note` saying what it built) and the totals.
    pub fn finish_plan(
        &mut self,
        nodes: usize,
        planned_nodes: usize,
        note: String,
        (plan_start, start): (Instant, Instant),
    ) {
        self.stages.push(StageReport::builtin(
            "Plan",
            (nodes, nodes),
            vec![note],
            plan_start,
        ));
        self.planned_nodes = planned_nodes;
        self.elapsed = start.elapsed();
    }
}

impl std::fmt::Display for CompileReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "compile report ({:.3} ms):",
            self.elapsed.as_secs_f64() * 1e3
        )?;
        for s in &self.stages {
            writeln!(
                f,
                "  {:<26} nodes {:>6} -> {:<6} {:.3} ms",
                s.stage,
                s.nodes_before,
                s.nodes_after,
                s.elapsed.as_secs_f64() * 1e3
            )?;
            for p in &s.passes {
                writeln!(f, "    {p}")?;
            }
            for n in &s.notes {
                writeln!(f, "    {n}")?;
            }
        }
        write!(f, "  planned nodes: {}", self.planned_nodes)?;
        if let Some(m) = &self.memory {
            write!(f, "\n  {m}")?;
        }
        Ok(())
    }
}

/// Where a step reads an input from.
#[derive(Debug, Clone, Copy)]
enum Src {
    Slot(usize),
    Const(usize),
}

struct Step {
    name: String,
    op: String,
    kernel: Kernel,
    inputs: Vec<Option<Src>>,
    outputs: Vec<usize>,
    /// Slots whose last reader is this step.
    free: Vec<usize>,
}

/// An execution plan for one signature. Immutable: runs from several threads share it.
pub struct Plan {
    steps: Vec<Step>,
    /// Steps that absorbed a bias Add and/or an activation.
    fused: usize,
    slots: usize,
    consts: Vec<Value>,
    /// Slot of each graph input, in input-index order (`None`: the input is not used).
    inputs: Vec<Option<usize>>,
    outputs: Vec<Src>,
    signature: Signature,
    report: CompileReport,
    memory: MemoryPlan,
}

impl std::fmt::Debug for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plan")
            .field("steps", &self.steps.len())
            .field("slots", &self.slots)
            .field("signature", &self.signature)
            .finish()
    }
}

fn run_stage(
    graph: &mut Graph,
    passes: Option<&PassRegistry>,
    stage: PassStage,
    report: &mut CompileReport,
) -> Result<()> {
    let start = Instant::now();
    let before = graph.node_count();
    let mut stats = Vec::new();
    if let Some(reg) = passes.filter(|r| r.descriptors().any(|d| d.stage == stage)) {
        let opts = RunOptions {
            stage: Some(stage),
            ..Default::default()
        };
        let r = pass_bridge::run_passes(reg, graph, &opts)
            .map_err(|e| Error::Compile(format!("at {stage}: {e}")))?;
        stats = r.passes;
    }
    report.stages.push(StageReport {
        stage: stage.to_string(),
        nodes_before: before,
        nodes_after: graph.node_count(),
        passes: stats,
        notes: Vec::new(),
        elapsed: start.elapsed(),
    });
    Ok(())
}

/// The graph's Data nodes in input-index order, one per entry of `sig`.
fn inputs_for(graph: &Graph, sig: &Signature) -> Result<Vec<NodeId>> {
    let data = graph.input_nodes();
    if data.len() != sig.len() {
        return Err(Error::Input(format!(
            "graph '{}' has {} inputs, the run gave {}",
            graph.name,
            data.len(),
            sig.len()
        )));
    }
    Ok(data)
}

/// Sets each Data node's output description from the signature.
fn bind_inputs(graph: &mut Graph, sig: &Signature) -> Result<Vec<NodeId>> {
    let data = inputs_for(graph, sig)?;
    // As in GE, the tensor fed at an index replaces the description its Data node was built
    // with (a declared shape or dtype is a hint, not a contract).
    for (&id, s) in data.iter().zip(sig) {
        let node = graph.node_mut(id)?;
        let name = node.name.to_string();
        let Some(out) = node.outputs.get_mut(0) else {
            return Err(Error::Compile(format!("input node '{name}' has no output")));
        };
        let d = &mut out.desc;
        if log::log_enabled!(log::Level::Debug) {
            let fed = Shape::new(s.dims.iter().map(|&x| x as i64).collect());
            if (d.dtype != DataType::UNDEFINED && d.dtype != s.dtype) || d.shape != fed {
                log::debug!(
                    "input '{name}': declared {} {}, fed {} {fed}; the fed tensor's description is used",
                    d.dtype,
                    d.shape,
                    s.dtype
                );
            }
        }
        d.dtype = s.dtype;
        d.shape = Shape::new(s.dims.iter().map(|&x| x as i64).collect());
        let desc = d.clone();
        if let Some(inp) = node.inputs.get_mut(0) {
            inp.desc = desc;
        }
    }
    Ok(data)
}

/// A graph taken through every compile stage before planning, for one signature: what a
/// backend builds its plan from.
pub struct Prepared {
    pub graph: Graph,
    /// The graph's Data nodes, in input-index order.
    pub data: Vec<NodeId>,
    pub report: CompileReport,
    pub start: Instant,
}

/// Compiles `graph` for `sig` into a CPU plan. `passes`: the registry whose passes run at
/// their stages.
pub fn compile(graph: &Graph, sig: &Signature, passes: Option<&PassRegistry>) -> Result<Plan> {
    check_input_dtypes(sig)?;
    plan_prepared(prepare(graph, sig, passes)?, sig)
}

/// A subgraph of a control-flow node compiled (without passes) for `sig`: what the control
/// kernels run; installed as their compiler by [`prepare`] and [`already_prepared`].
fn compile_subgraph(graph: &Graph, sig: &Signature) -> Result<Arc<dyn kernels::Subplan>> {
    Ok(Arc::new(compile(graph, sig, None)?))
}

impl kernels::Subplan for Plan {
    fn run(&self, inputs: Vec<Value>) -> Result<Vec<Value>> {
        self.execute(inputs)
    }
}

pub(crate) fn check_input_dtypes(sig: &Signature) -> Result<()> {
    for s in sig {
        if !supported_dtype(s.dtype) {
            return Err(Error::unsupported(format!(
                "input dtype {} on the CPU backend",
                s.dtype
            )));
        }
    }
    Ok(())
}

/// A graph that went through [`prepare`] before (an offline model's, see [`crate::om`]) as
/// a [`Prepared`] for `sig`: no pass, inference or optimisation runs again.
pub fn already_prepared(graph: Graph, sig: &Signature) -> Result<Prepared> {
    kernels::install_subgraph_compiler(compile_subgraph);
    let data = inputs_for(&graph, sig)?;
    Ok(Prepared {
        graph,
        data,
        report: CompileReport::default(),
        start: Instant::now(),
    })
}

/// Plans a graph compiled before (an offline model's): only the CPU plan is built.
pub fn compile_prepared(graph: &Graph, sig: &Signature) -> Result<Plan> {
    check_input_dtypes(sig)?;
    plan_prepared(already_prepared(graph.clone(), sig)?, sig)
}

pub(crate) fn plan_prepared(mut p: Prepared, sig: &Signature) -> Result<Plan> {
    let t = Instant::now();
    let before = p.graph.node_count();
    let mut plan = build(&p.graph, &p.data, sig.clone())?;
    p.report.memory = Some(plan.memory.clone());
    p.report.finish_plan(
        before,
        plan.steps.len(),
        format!(
            "products fused with their bias and activation: {}",
            plan.fused
        ),
        (t, p.start),
    );
    plan.report = p.report;
    Ok(plan)
}

/// Validation, passes at their stages, inference from `sig`, built-in optimisation: every
/// stage before a backend plans.
pub fn prepare(graph: &Graph, sig: &Signature, passes: Option<&PassRegistry>) -> Result<Prepared> {
    kernels::install_subgraph_compiler(compile_subgraph);
    let start = Instant::now();
    let mut report = CompileReport::default();
    let mut g = graph.clone();
    g.validate()
        .map_err(|e| Error::Compile(format!("graph '{}' is not valid: {e}", graph.name)))?;
    run_stage(&mut g, passes, PassStage::BeforeInferShape, &mut report)?;
    // Inference from the actual inputs.
    let t = Instant::now();
    let before = g.node_count();
    let data = bind_inputs(&mut g, sig)?;
    es_core::infer::infer_graph(&mut g).map_err(|e| {
        Error::ShapeInference(format!("shape inference for the given inputs failed: {e}"))
    })?;
    let casts = es_core::infer::insert_promotion_casts(&mut g)?;
    report.stages.push(StageReport::builtin(
        "InferShape",
        (before, g.node_count()),
        if casts > 0 {
            vec![format!("casts inserted for dtype promotion: {casts}")]
        } else {
            Vec::new()
        },
        t,
    ));
    run_stage(&mut g, passes, PassStage::AfterInferShape, &mut report)?;
    let t = Instant::now();
    let before = g.node_count();
    let counts = crate::optimize::optimize(&mut g)?;
    report.stages.push(StageReport::builtin(
        "BuiltinOptimize",
        (before, g.node_count()),
        vec![counts.to_string()],
        t,
    ));
    run_stage(
        &mut g,
        passes,
        PassStage::AfterBuiltinFusionPass,
        &mut report,
    )?;
    run_stage(
        &mut g,
        passes,
        PassStage::AfterOriginGraphOptimize,
        &mut report,
    )?;
    // Passes may have changed the graph: plan from what it is now.
    let data_after = g.input_nodes();
    if data_after != data {
        return Err(Error::Compile(
            "a pass added or removed graph inputs; inputs must stay as they are".into(),
        ));
    }
    Ok(Prepared {
        graph: g,
        data,
        report,
        start,
    })
}

fn build(g: &Graph, data: &[NodeId], signature: Signature) -> Result<Plan> {
    let order = crate::optimize::needed_nodes(g)?;
    let fusions = crate::fuse::find(g, &order)?;
    let absorbed: rustc_hash::FxHashSet<NodeId> = fusions
        .values()
        .flat_map(|f| f.add.iter().map(|(a, _)| *a).chain(f.act))
        .collect();
    let mut fused = 0usize;
    let mut slot_of: FxHashMap<OutPort, Src> = FxHashMap::default();
    let mut slots = 0usize;
    let mut consts: Vec<Value> = Vec::new();
    let mut inputs = vec![None; data.len()];
    let mut steps = Vec::new();
    // Per slot a step produces: (slot, step, output index, node), for the memory plan.
    let mut produced: Vec<(usize, usize, usize, NodeId)> = Vec::new();
    let mut unsupported: Vec<String> = Vec::new();
    for &id in &order {
        let n = g.node(id)?;
        if is_data_op(&n.op_type) {
            let k = data.iter().position(|&d| d == id).ok_or_else(|| {
                Error::Compile(format!("input node '{}' is not a graph input", n.name))
            })?;
            inputs[k] = Some(slots);
            slot_of.insert(OutPort { node: id, index: 0 }, Src::Slot(slots));
            slots += 1;
            continue;
        }
        if let Some(t) = n.const_value() {
            let v = Value::from_tensor(t).map_err(|e| e.at(&n.name, &n.op_type))?;
            slot_of.insert(OutPort { node: id, index: 0 }, Src::Const(consts.len()));
            consts.push(v);
            continue;
        }
        if absorbed.contains(&id) {
            continue;
        }
        let Some(factory) = kernels::lookup(&n.op_type) else {
            unsupported.push(format!("{} (node '{}')", n.op_type, n.name));
            continue;
        };
        if !unsupported.is_empty() {
            continue;
        }
        let mut in_src = Vec::with_capacity(n.inputs.len());
        let mut in_desc = Vec::with_capacity(n.inputs.len());
        let mut in_const = Vec::with_capacity(n.inputs.len());
        for inp in &n.inputs {
            match inp.source {
                Some(p) => {
                    let src = *slot_of.get(&p).ok_or_else(|| {
                        Error::Compile(format!(
                            "node '{}' reads a value that is not planned",
                            n.name
                        ))
                    })?;
                    in_src.push(Some(src));
                    in_desc.push(Some(g.out_desc(p)?.clone()));
                    in_const.push(match src {
                        Src::Const(c) => Some(consts[c].clone()),
                        Src::Slot(_) => None,
                    });
                }
                None => {
                    in_src.push(None);
                    in_desc.push(None);
                    in_const.push(None);
                }
            }
        }
        let info = NodeInfo {
            node: n,
            inputs: in_desc,
            const_inputs: in_const,
        };
        let mut kernel = factory(&info).map_err(|e| e.at(&n.name, &n.op_type))?;
        let fusion = fusions.get(&id);
        if let Some(f) = fusion {
            let act_node = f.act.map(|a| g.node(a)).transpose()?;
            let act_info = act_node.map(|a| NodeInfo {
                node: a,
                inputs: vec![Some(n.outputs[0].desc.clone())],
                const_inputs: vec![None],
            });
            let ep =
                kernels::Epilogue::new(f.add.as_ref().map(|(_, b)| b.clone()), act_info.as_ref())
                    .map_err(|e| e.at(&n.name, &n.op_type))?;
            let inner = kernel;
            kernel = Box::new(move |inputs| {
                let mut outs = inner(inputs)?;
                if let Some(y) = outs.first_mut() {
                    ep.apply(y)?;
                }
                Ok(outs)
            });
            fused += 1;
        }
        let mut outs = Vec::with_capacity(n.outputs.len());
        for a in 0..n.outputs.len() {
            slot_of.insert(
                OutPort {
                    node: id,
                    index: a as u32,
                },
                Src::Slot(slots),
            );
            outs.push(slots);
            produced.push((slots, steps.len(), a, id));
            slots += 1;
        }
        if let Some(f) = fusion {
            // The fused step's output stands for the last absorbed node's.
            slot_of.insert(
                OutPort {
                    node: f.last(id),
                    index: 0,
                },
                Src::Slot(outs[0]),
            );
        }
        steps.push(Step {
            name: n.name.to_string(),
            op: n.op_type.to_string(),
            kernel,
            inputs: in_src,
            outputs: outs,
            free: Vec::new(),
        });
    }
    if !unsupported.is_empty() {
        return Err(Error::unsupported(format!(
            "no CPU kernel for: {}",
            unsupported.join(", ")
        )));
    }
    let outputs = g
        .outputs
        .iter()
        .map(|p| {
            slot_of
                .get(p)
                .copied()
                .ok_or_else(|| Error::Compile("a graph output is not planned".into()))
        })
        .collect::<Result<Vec<_>>>()?;
    // Liveness: a slot is freed after its last reader (an output nothing reads, right after
    // its own step), unless it is a graph output.
    let mut last: FxHashMap<usize, usize> = FxHashMap::default();
    for &(k, i, _, _) in &produced {
        last.insert(k, i);
    }
    for (i, s) in steps.iter().enumerate() {
        for src in s.inputs.iter().flatten() {
            if let Src::Slot(k) = src {
                last.insert(*k, i);
            }
        }
    }
    for o in &outputs {
        if let Src::Slot(k) = o {
            last.remove(k);
        }
    }
    let end = steps.len().saturating_sub(1);
    let mut specs = Vec::with_capacity(produced.len());
    for &(k, i, a, id) in &produced {
        let n = g.node(id)?;
        let desc = &n.outputs[a].desc;
        specs.push(TensorSpec {
            name: if a == 0 {
                n.name.to_string()
            } else {
                format!("{}:{a}", n.name)
            },
            op: &n.op_type,
            dtype: desc.dtype,
            shape: &desc.shape,
            first: i,
            last: last.get(&k).copied().unwrap_or(end),
        });
    }
    for (k, i) in last {
        steps[i].free.push(k);
    }
    let const_bytes = consts.iter().fold(0u64, |a, v| {
        a.saturating_add((v.len() as u64).saturating_mul(v.dtype().size().unwrap_or(1) as u64))
    });
    let input_bytes = signature.iter().fold(0u64, |a, s| {
        let n = s.dims.iter().fold(1u64, |n, &d| n.saturating_mul(d as u64));
        a.saturating_add(n.saturating_mul(s.dtype.size().unwrap_or(1) as u64))
    });
    let memory = MemoryPlan::new(specs, const_bytes, input_bytes)?;
    Ok(Plan {
        steps,
        fused,
        slots,
        consts,
        inputs,
        outputs,
        signature,
        report: CompileReport::default(),
        memory,
    })
}

/// An error unless a run gave the `want` inputs its plan takes (`got`).
pub fn check_input_count(want: usize, got: usize) -> Result<()> {
    if want != got {
        return Err(Error::Input(format!(
            "the plan takes {want} inputs, got {got}"
        )));
    }
    Ok(())
}

impl Plan {
    pub fn signature(&self) -> &Signature {
        &self.signature
    }
    pub fn report(&self) -> &CompileReport {
        &self.report
    }
    /// Its memory plan: each intermediate's size, lifetime and offset in one arena.
    pub fn memory(&self) -> &MemoryPlan {
        &self.memory
    }
    /// The number of kernel calls per run.
    pub fn len(&self) -> usize {
        self.steps.len()
    }
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// Runs the plan on inputs of its signature.
    pub fn execute(&self, inputs: Vec<Value>) -> Result<Vec<Value>> {
        check_input_count(self.inputs.len(), inputs.len())?;
        let mut slots: Vec<Option<Value>> = Vec::with_capacity(self.slots);
        slots.resize_with(self.slots, || None);
        for (v, s) in inputs.into_iter().zip(&self.inputs) {
            if let Some(k) = s {
                slots[*k] = Some(v);
            }
        }
        for step in &self.steps {
            let outs = {
                // On the stack for up to 4 inputs: no allocation per step.
                let args: smallvec::SmallVec<[Option<&Value>; 4]> = step
                    .inputs
                    .iter()
                    .map(|s| match s {
                        None => None,
                        Some(Src::Const(c)) => Some(&self.consts[*c]),
                        Some(Src::Slot(k)) => slots[*k].as_ref(),
                    })
                    .collect();
                (step.kernel)(&args).map_err(|e| e.at(&step.name, &step.op))?
            };
            if outs.len() != step.outputs.len() {
                return Err(Error::Execution {
                    node: step.name.clone(),
                    op: step.op.clone(),
                    message: format!(
                        "the kernel made {} outputs, the node has {}",
                        outs.len(),
                        step.outputs.len()
                    ),
                });
            }
            for (v, &k) in outs.into_iter().zip(&step.outputs) {
                slots[k] = Some(v);
            }
            for &k in &step.free {
                slots[k] = None;
            }
        }
        self.outputs
            .iter()
            .map(|s| match s {
                Src::Const(c) => Ok(self.consts[*c].clone()),
                Src::Slot(k) => slots[*k]
                    .clone()
                    .ok_or_else(|| Error::Compile("a graph output was not computed".into())),
            })
            .collect()
    }
}
