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
//!
//! Running: a step whose kernel can write into a given buffer ([`IntoOp`]: element-wise
//! arithmetic and float functions, Concat) writes into a buffer the plan keeps across runs
//! ([`crate::arena`]); an element-wise step whose input dies there writes over that input (in
//! place); a Concat's producers write straight into their slices of its output when the slices
//! are contiguous (Concat in place); Reshape, Squeeze, Unsqueeze and Flatten of a value that
//! dies there move it (no copy). The memory plan places those tensors as they run: in their
//! input's or their Concat's region. Every other step calls its allocating kernel. So after a
//! first run, a replay of a graph of such steps allocates only what it returns (the outputs'
//! buffers and the vector holding them). Results are those of the allocating kernels, bit for
//! bit ([`Plan::execute_reference`] runs every step through them, for comparison).

use crate::arena::{self, Pool, Workspace};
use crate::collective::worker::{self, Pending};
use crate::collective::WORLD_GROUP;
use crate::error::{Error, Result};
use crate::kernels::{self, IntoOp, Kernel, NodeInfo};
use crate::memplan::{MemoryPlan, TensorSpec};
pub use crate::value::{signature, signature_text, InputSignature, Signature};
use crate::value::{supported_dtype, Value};
use es_core::graph::is_data_op;
use es_core::{DataType, Graph, NodeId, OutPort, Shape};
use pass_bridge::{PassRegistry, PassStage, PassStats, RunOptions};
use rustc_hash::FxHashMap;
use std::ops::Range;
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
    /// The graph's collectives (HCCL's `Hcom*` operators), in plan order.
    pub collectives: Vec<CollectiveReport>,
    pub elapsed: Duration,
}

/// One collective of a compiled graph as the compile report lists it: the operator, its group,
/// reduction or root, each input's dtype and shape, and the bytes it moves per rank.
#[derive(Debug, Clone, PartialEq)]
pub struct CollectiveReport {
    pub node: String,
    pub op: String,
    pub group: String,
    /// The reduction (`sum`, `prod`, `max`, `min`) of an all-reduce or reduce-scatter.
    pub reduction: Option<String>,
    /// The root of a broadcast.
    pub root_rank: Option<i64>,
    /// The ranks of its group: `rank_size` where the node has it, else the size of its group on
    /// this rank (None where neither is known).
    pub ranks: Option<usize>,
    /// Each input's dtype and shape.
    pub inputs: Vec<(DataType, Shape)>,
    /// The bytes of its inputs and of its outputs on each rank (None where a shape is unknown).
    pub input_bytes: Option<u64>,
    pub output_bytes: Option<u64>,
    /// The plan steps that run between its start and the wait for its result: the compute it
    /// overlaps (0: it runs where it stands, blocking; see [`crate::collective::worker`]).
    pub overlapped_steps: usize,
    /// The bytes each rank sends for it with the ring algorithms (NCCL's bus bytes):
    /// all-reduce 2 (n - 1) / n of its input, all-gather (n - 1) / n of its output,
    /// reduce-scatter (n - 1) / n of its input, broadcast its inputs (0 on one rank), a send
    /// its input, a receive nothing. None for an operator without a rule here (an
    /// all-to-all-v: its counts are data) or where sizes are unknown.
    pub moved_bytes: Option<u64>,
}

impl CollectiveReport {
    /// The entry of node `id` of `g` (shapes inferred), or None when it is not a collective.
    /// `group_size`: the size of a group, by name (None where it is not known).
    pub fn of_node(
        g: &Graph,
        id: NodeId,
        group_size: &dyn Fn(&str) -> Option<usize>,
    ) -> Result<Option<Self>> {
        let node = g.node(id)?;
        if !node.op_type.starts_with("Hcom") {
            return Ok(None);
        }
        let text = |k: &str| match node.attr(k) {
            Some(es_core::AttrValue::String(s)) => Some(s.clone()),
            _ => None,
        };
        let int = |k: &str| match node.attr(k) {
            Some(es_core::AttrValue::Int(n)) => Some(*n),
            _ => None,
        };
        let group = text("group").unwrap_or_else(|| WORLD_GROUP.to_string());
        let ranks = match int("rank_size") {
            Some(n) if n > 0 => Some(n as usize),
            _ => group_size(&group),
        };
        let bytes = |d: &es_core::TensorDesc| {
            let n = usize::try_from(d.shape.num_elements()?).ok()?;
            d.dtype.bytes_for(n).map(|b| b as u64)
        };
        let mut inputs = Vec::new();
        let mut input_bytes = Some(0u64);
        for i in 0..node.inputs.len() {
            let Some(p) = g.producer(id, i)? else {
                continue;
            };
            let d = g.out_desc(p)?;
            inputs.push((d.dtype, d.shape.clone()));
            input_bytes = input_bytes.zip(bytes(d)).map(|(a, b)| a + b);
        }
        let output_bytes = node
            .outputs
            .iter()
            .try_fold(0u64, |a, o| Some(a + bytes(&o.desc)?));
        let op = node.op_type.to_string();
        let share = |b: Option<u64>, twice: bool| {
            let n = ranks? as u64;
            let k = if twice { 2 } else { 1 };
            b.map(|b| k * (n - 1) * b / n)
        };
        let moved_bytes = match op.as_str() {
            "HcomAllReduce" => share(input_bytes, true),
            "HcomAllGather" => share(output_bytes, false),
            "HcomReduceScatter" => share(input_bytes, false),
            "HcomBroadcast" => ranks.and_then(|n| if n > 1 { input_bytes } else { Some(0) }),
            "HcomSend" => input_bytes,
            "HcomReceive" => Some(0),
            _ => None,
        };
        Ok(Some(CollectiveReport {
            node: node.name.to_string(),
            reduction: text("reduction"),
            root_rank: int("root_rank").filter(|_| op == "HcomBroadcast"),
            op,
            group,
            ranks,
            inputs,
            input_bytes,
            output_bytes,
            moved_bytes,
            overlapped_steps: 0,
        }))
    }
}

impl std::fmt::Display for CollectiveReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let opt = |b: Option<u64>| b.map_or_else(|| "?".to_string(), |b| b.to_string());
        write!(f, "{} '{}': group {}", self.op, self.node, self.group)?;
        if let Some(n) = self.ranks {
            write!(f, " ({n} ranks)")?;
        }
        if let Some(r) = &self.reduction {
            write!(f, ", reduction {r}")?;
        }
        if let Some(r) = self.root_rank {
            write!(f, ", root {r}")?;
        }
        let ins: Vec<String> = self
            .inputs
            .iter()
            .map(|(dt, s)| format!("{dt} {s}"))
            .collect();
        write!(
            f,
            ", {}; per rank: {} bytes in, {} bytes out, {} bytes moved",
            ins.join(", "),
            opt(self.input_bytes),
            opt(self.output_bytes),
            opt(self.moved_bytes)
        )?;
        if self.overlapped_steps > 0 {
            write!(f, "; overlaps {} steps", self.overlapped_steps)?;
        }
        Ok(())
    }
}

/// The collectives of `g` (shapes inferred) among `order`, the nodes the plan runs, in that
/// order.
fn collectives_of(g: &Graph, order: &[NodeId]) -> Result<Vec<CollectiveReport>> {
    if !g.iter().any(|(_, n)| n.op_type.starts_with("Hcom")) {
        return Ok(Vec::new());
    }
    // The kernels asked for their groups when they were built: these are lookups.
    let size = |name: &str| crate::collective::group(name).ok().map(|c| c.size());
    let mut out = Vec::new();
    for &id in order {
        out.extend(CollectiveReport::of_node(g, id, &size)?);
    }
    Ok(out)
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
        if !self.collectives.is_empty() {
            write!(f, "\n  collectives: {}", self.collectives.len())?;
            for c in &self.collectives {
                write!(f, "\n    {c}")?;
            }
        }
        if let Some(m) = &self.memory {
            write!(f, "\n  {m}")?;
        }
        Ok(())
    }
}

/// Where a step reads an input from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Src {
    Slot(usize),
    Const(usize),
}

struct Step {
    name: String,
    op: String,
    kernel: Kernel,
    exec: Exec,
    inputs: Vec<Option<Src>>,
    outputs: Vec<usize>,
    /// Slots whose last reader is this step.
    free: Vec<usize>,
}

/// How a step runs besides its allocating kernel.
enum Exec {
    /// Its allocating kernel.
    Kernel,
    /// Its into-kernel, in a reused buffer (its allocating kernel where the into-kernel does
    /// not take the inputs of a run).
    Into(Box<IntoStep>),
    /// A collective that waits for other ranks, run where it stands on inputs it owns (each
    /// one this step reads last moved in: an all-reduce then works in place on it).
    Collective(Arc<kernels::Collective>),
    /// A collective handed to the communication thread with its inputs (its allocating kernel,
    /// blocking, in a reference run); the `Wait` step of the same id takes its outputs.
    Start(usize, Arc<kernels::Collective>),
    /// Takes the outputs of the collective started with this id.
    Wait(usize),
    /// A Reshape, Squeeze, Unsqueeze or Flatten whose input (a step's output) dies here: the
    /// value moved and given the output's `dims`, no copy (its kernel where the value is not in
    /// standard layout).
    Move(Vec<usize>),
}

struct IntoStep {
    op: IntoOp,
    dtype: DataType,
    dims: Vec<usize>,
    /// The input written over (in place): its index among the step's inputs and its slot.
    alias: Option<(usize, usize)>,
    /// For a producer of a Concat in place: that Concat's step, and the elements of its output
    /// this step writes.
    place: Option<(usize, Range<usize>)>,
    /// The bias and activation fused into a product (applied to what it wrote).
    epilogue: Option<std::sync::Arc<kernels::Epilogue>>,
}

/// The steps whose product packed its constant weight once, and the bytes those copies hold.
fn packed_weights(steps: &[Step]) -> (usize, u64) {
    steps.iter().fold((0, 0), |(n, b), s| match &s.exec {
        Exec::Into(i) => match &i.op {
            IntoOp::Matmul(m) if m.packed_bytes() > 0 => (n + 1, b + m.packed_bytes() as u64),
            _ => (n, b),
        },
        _ => (n, b),
    })
}

/// Drops a constant from the plan as soon as its last reader is planned, where every reader
/// is a product that packed a copy of it (input 1) and it is no graph output: so that the
/// originals and their packed copies are not all held at once while a plan is built (the
/// steps learn it from [`drop_packed_weights`] when the plan is finished).
struct EarlyDrop {
    /// Steps yet to read each constant node, and whether it is a graph output.
    reads: FxHashMap<NodeId, (usize, bool)>,
    /// Per constant of the plan: its steps yet to read it, and whether a reader was not a
    /// packed product's weight.
    left: Vec<(usize, bool)>,
}

impl EarlyDrop {
    fn new(
        g: &Graph,
        order: &[NodeId],
        absorbed: &rustc_hash::FxHashSet<NodeId>,
    ) -> Result<EarlyDrop> {
        let mut reads: FxHashMap<NodeId, (usize, bool)> = FxHashMap::default();
        for &id in order {
            let n = g.node(id)?;
            if is_data_op(&n.op_type) || n.const_value().is_some() || absorbed.contains(&id) {
                continue;
            }
            for p in n.inputs.iter().filter_map(|i| i.source) {
                if g.node(p.node)?.const_value().is_some() {
                    reads.entry(p.node).or_default().0 += 1;
                }
            }
        }
        for p in &g.outputs {
            reads.entry(p.node).or_default().1 = true;
        }
        Ok(EarlyDrop {
            reads,
            left: Vec::new(),
        })
    }

    /// The plan's next constant is node `id`'s value.
    fn constant(&mut self, id: NodeId) {
        let (n, output) = self.reads.get(&id).copied().unwrap_or_default();
        self.left.push((n, output));
    }

    /// `step` is planned: the constants whose last reader it was, each read only as a packed
    /// weight, become empty placeholders.
    fn read_by(&mut self, step: &Step, consts: &mut [Value]) {
        let packed = matches!(&step.exec, Exec::Into(i)
            if matches!(&i.op, IntoOp::Matmul(m) if m.has_packed_weight()));
        for (j, src) in step.inputs.iter().enumerate() {
            let Some(Src::Const(c)) = src else { continue };
            let Some((left, other)) = self.left.get_mut(*c) else {
                continue;
            };
            *left = left.saturating_sub(1);
            *other |= !(packed && j == 1);
            if *left == 0 && !*other {
                if let Some(v) = consts.get_mut(*c) {
                    *v = Value::F32(ndarray::ArrayD::zeros(ndarray::IxDyn(&[0, 0])));
                }
            }
        }
    }
}

/// Constants read only as the weight (input 1) of products that packed a copy of it, and
/// not a graph output: each such product is told to take its packed copy for the weight and
/// the constant becomes an empty placeholder, so the plan does not hold the weight twice.
fn drop_packed_weights(steps: &mut [Step], consts: &mut [Value], outputs: &[Src]) {
    fn packed(s: &Step) -> bool {
        matches!(&s.exec, Exec::Into(i) if matches!(&i.op, IntoOp::Matmul(m) if m.has_packed_weight()))
    }
    // Per constant: (read as a packed weight, read otherwise).
    let mut uses = vec![(false, false); consts.len()];
    for o in outputs {
        if let Src::Const(c) = o {
            uses[*c].1 = true;
        }
    }
    for s in steps.iter() {
        let p = packed(s);
        for (j, src) in s.inputs.iter().enumerate() {
            if let Some(Src::Const(c)) = src {
                if p && j == 1 {
                    uses[*c].0 = true;
                } else {
                    uses[*c].1 = true;
                }
            }
        }
    }
    let only = |c: usize| uses[c] == (true, false);
    for s in steps.iter_mut() {
        if let (Some(Some(Src::Const(c))), Exec::Into(i)) = (s.inputs.get(1), &mut s.exec) {
            if let IntoOp::Matmul(m) = &mut i.op {
                if only(*c) {
                    m.drop_weight();
                }
            }
        }
    }
    for (c, v) in consts.iter_mut().enumerate() {
        if only(c) {
            *v = Value::F32(ndarray::ArrayD::zeros(ndarray::IxDyn(&[0, 0])));
        }
    }
}

/// Reshape-like ops whose kernel only gives its input the output's shape.
const MOVE_OPS: &[&str] = &["Reshape", "Squeeze", "Unsqueeze", "Flatten", "ExpandDims"];

/// The dtypes of the reused buffers ([`arena::fit`]).
fn bufferable(dt: DataType) -> bool {
    use DataType as D;
    matches!(
        dt,
        D::FLOAT
            | D::DOUBLE
            | D::FLOAT16
            | D::BF16
            | D::INT8
            | D::INT16
            | D::INT32
            | D::INT64
            | D::UINT8
            | D::UINT16
            | D::UINT32
            | D::UINT64
            | D::BOOL
    )
}

/// The dims of a static description (None with an unknown dim or rank).
fn static_dims(d: &es_core::TensorDesc) -> Option<Vec<usize>> {
    if d.shape.is_unknown_rank() {
        return None;
    }
    crate::value::usize_dims(d.shape.dims())
}

/// An execution plan for one signature. Immutable: runs from several threads share it.
pub struct Plan {
    steps: Vec<Step>,
    /// Steps that absorbed a bias Add and/or an activation.
    fused: usize,
    /// Products whose constant weight was packed once for their kernel, and its bytes.
    packed: (usize, u64),
    slots: usize,
    consts: Vec<Value>,
    /// Slot of each graph input, in input-index order (`None`: the input is not used).
    inputs: Vec<Option<usize>>,
    outputs: Vec<Src>,
    signature: Signature,
    report: CompileReport,
    memory: MemoryPlan,
    /// The buffer id of each slot whose value an into-step makes (see [`crate::arena`]).
    slot_buf: Vec<Option<usize>>,
    /// Each buffer's capacity in elements: the most any of its tensors holds.
    buf_cap: Vec<usize>,
    /// The workspaces of finished runs.
    pool: Pool,
    /// The collectives started in one step and waited for in a later one.
    started: usize,
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
        // DT_VARIANT: a list or optional (crate::value::Variant).
        if !supported_dtype(s.dtype) && s.dtype != es_core::DataType::VARIANT {
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
    let order = collectives_first(&p.graph, crate::optimize::needed_nodes(&p.graph)?)?;
    let mut plan = build(&p.graph, &order, &p.data, sig.clone())?;
    p.report.memory = Some(plan.memory.clone());
    p.report.collectives = collectives_of(&p.graph, &order)?;
    for (name, between) in plan.overlaps() {
        if let Some(c) = p.report.collectives.iter_mut().find(|c| c.node == name) {
            c.overlapped_steps = between;
        }
    }
    p.report.finish_plan(
        before,
        plan.steps.len() - plan.started,
        format!(
            "products fused with their bias and activation: {}; weights packed once: {} \
             ({} bytes)",
            plan.fused, plan.packed.0, plan.packed.1
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

/// New slots for a node's `count` outputs (from `*slots` on), recorded in `slot_of`.
pub(crate) fn output_slots(
    slot_of: &mut FxHashMap<OutPort, Src>,
    node: NodeId,
    count: usize,
    slots: &mut usize,
) -> Vec<usize> {
    (0..count)
        .map(|a| {
            let port = OutPort {
                node,
                index: a as u32,
            };
            slot_of.insert(port, Src::Slot(*slots));
            *slots += 1;
            *slots - 1
        })
        .collect()
}

/// Where each of the graph's outputs is read from.
pub(crate) fn graph_outputs(g: &Graph, slot_of: &FxHashMap<OutPort, Src>) -> Result<Vec<Src>> {
    g.outputs
        .iter()
        .map(|p| {
            slot_of
                .get(p)
                .copied()
                .ok_or_else(|| Error::Compile("a graph output is not planned".into()))
        })
        .collect()
}

/// The plan of `g`'s nodes `order` (its needed nodes, in topological order).
fn build(g: &Graph, order: &[NodeId], data: &[NodeId], signature: Signature) -> Result<Plan> {
    let fusions = crate::fuse::find(g, order)?;
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
    let mut weights = EarlyDrop::new(g, order, &absorbed)?;
    for &id in order {
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
            weights.constant(id);
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
        let epilogue = match fusion {
            Some(f) => {
                let act_node = f.act.map(|a| g.node(a)).transpose()?;
                let act_info = act_node.map(|a| NodeInfo {
                    node: a,
                    inputs: vec![Some(es_core::TensorDesc::clone(&n.outputs[0].desc))],
                    const_inputs: vec![None],
                });
                let bias = f.add.as_ref().map(|(_, b)| b.clone());
                let ep = kernels::Epilogue::new(bias, act_info.as_ref())
                    .map_err(|e| e.at(&n.name, &n.op_type))?;
                Some(std::sync::Arc::new(ep))
            }
            None => None,
        };
        let out_static = match n.outputs.as_slice() {
            [o] if bufferable(o.desc.dtype) => static_dims(&o.desc).map(|d| (o.desc.dtype, d)),
            _ => None,
        };
        let collective = waiting_collective(&info)?;
        let exec = match out_static {
            _ if collective.is_some() => collective.map_or(Exec::Kernel, Exec::Collective),
            Some((dtype, dims)) => {
                match IntoOp::of(&info, &dims).map_err(|e| e.at(&n.name, &n.op_type))? {
                    Some(op) if fusion.is_none() || op.takes_epilogue() => {
                        Exec::Into(Box::new(IntoStep {
                            op,
                            dtype,
                            dims,
                            alias: None,
                            place: None,
                            epilogue: epilogue.clone(),
                        }))
                    }
                    None if fusion.is_none()
                        && MOVE_OPS.contains(&n.op_type.as_str())
                        && !kernels::is_custom(&n.op_type) =>
                    {
                        Exec::Move(dims)
                    }
                    _ => Exec::Kernel,
                }
            }
            _ => Exec::Kernel,
        };
        if let Some(ep) = epilogue {
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
        let outs = output_slots(&mut slot_of, id, n.outputs.len(), &mut slots);
        for (a, &k) in outs.iter().enumerate() {
            produced.push((k, steps.len(), a, id));
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
        let step = Step {
            name: n.name.to_string(),
            op: n.op_type.to_string(),
            kernel,
            exec,
            inputs: in_src,
            outputs: outs,
            free: Vec::new(),
        };
        weights.read_by(&step, &mut consts);
        steps.push(step);
    }
    if !unsupported.is_empty() {
        return Err(Error::unsupported(format!(
            "no CPU kernel for: {}",
            unsupported.join(", ")
        )));
    }
    let outputs = graph_outputs(g, &slot_of)?;
    let (mut steps, started) = split_collectives(steps, &mut produced);
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
    for (&k, &i) in &last {
        steps[i].free.push(k);
    }
    let producer = place_and_alias(&mut steps, &produced, &last, &outputs, slots);
    let (slot_buf, buf_cap) = assign_buffers(&steps, slots);
    // Per slot, its spec's index (a step's output) and the region it shares.
    let mut spec_of = vec![None; slots];
    for (x, &(k, _, _, _)) in produced.iter().enumerate() {
        spec_of[k] = Some(x);
    }
    let shares = |k: usize| -> Option<(usize, u64)> {
        let s = match &steps[producer[k]?].exec {
            Exec::Into(s) => s,
            _ => return None,
        };
        if let Some((c, r)) = &s.place {
            let size = s.dtype.size().unwrap_or(1) as u64;
            return Some((spec_of[steps[*c].outputs[0]]?, r.start as u64 * size));
        }
        s.alias.and_then(|(_, a)| Some((spec_of[a]?, 0)))
    };
    let moved = |k: usize| -> Option<(usize, u64)> {
        let st = &steps[producer[k]?];
        match (&st.exec, st.inputs.first()) {
            (Exec::Move(_), Some(Some(Src::Slot(a)))) => Some((spec_of[*a]?, 0)),
            _ => None,
        }
    };
    let end = steps.len().saturating_sub(1);
    let mut specs = Vec::with_capacity(produced.len());
    for &(k, i, a, id) in &produced {
        let n = g.node(id)?;
        let desc = &n.outputs[a].desc;
        specs.push(TensorSpec {
            alias: shares(k).or_else(|| moved(k)),
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
    drop_packed_weights(&mut steps, &mut consts, &outputs);
    let const_bytes = consts.iter().fold(0u64, |a, v| {
        a.saturating_add((v.len() as u64).saturating_mul(v.dtype().size().unwrap_or(1) as u64))
    });
    // Weights packed once for a product's kernel are constants the plan holds too.
    let packed = packed_weights(&steps);
    let const_bytes = const_bytes.saturating_add(packed.1);
    let input_bytes = signature.iter().fold(0u64, |a, s| {
        let n = s.dims.iter().fold(1u64, |n, &d| n.saturating_mul(d as u64));
        a.saturating_add(n.saturating_mul(s.dtype.size().unwrap_or(1) as u64))
    });
    let memory = MemoryPlan::new(specs, const_bytes, input_bytes)?;
    Ok(Plan {
        steps,
        fused,
        packed,
        slots,
        consts,
        inputs,
        outputs,
        signature,
        report: CompileReport::default(),
        memory,
        slot_buf,
        buf_cap,
        pool: Pool::default(),
        started,
    })
}

/// The collective of a node that waits for other ranks (unless a custom kernel replaced it):
/// what a plan runs on inputs it owns, and may start in one step and wait for in a later one.
fn waiting_collective(info: &NodeInfo) -> Result<Option<Arc<kernels::Collective>>> {
    let op = info.op();
    if !kernels::COLLECTIVE_OPS.contains(&op) || kernels::is_custom(op) {
        return Ok(None);
    }
    let c = kernels::collective_of(info).map_err(|e| e.at(&info.node.name, op))?;
    Ok(c.waits_for_peers().then(|| Arc::new(c)))
}

/// Splits each collective with steps between it and its first reader into its start (where it
/// stands) and a wait step right before that reader (at the end, for a graph output nothing
/// reads), so the steps between run while it communicates; a collective its next step reads
/// stays one blocking step, as does every one where overlapping is off
/// (`GE_COLLECTIVE_OVERLAP=0`). Renumbers `produced`'s steps; returns the steps and the number
/// of collectives split.
fn split_collectives(
    mut steps: Vec<Step>,
    produced: &mut [(usize, usize, usize, NodeId)],
) -> (Vec<Step>, usize) {
    if !crate::collective::worker::overlap_enabled()
        || !steps.iter().any(|s| matches!(s.exec, Exec::Collective(_)))
    {
        return (steps, 0);
    }
    let n = steps.len();
    let mut first_reader: FxHashMap<usize, usize> = FxHashMap::default();
    for (i, s) in steps.iter().enumerate() {
        for src in s.inputs.iter().flatten() {
            if let Src::Slot(k) = src {
                first_reader.entry(*k).or_insert(i);
            }
        }
    }
    let mut waits: Vec<Vec<Step>> = (0..=n).map(|_| Vec::new()).collect();
    let mut id = 0;
    for (i, st) in steps.iter_mut().enumerate() {
        let Exec::Collective(c) = &st.exec else {
            continue;
        };
        let c = c.clone();
        let j = st
            .outputs
            .iter()
            .filter_map(|k| first_reader.get(k).copied())
            .min()
            .unwrap_or(n);
        if j == i + 1 {
            continue;
        }
        st.exec = Exec::Start(id, c);
        let (name, op) = (st.name.clone(), st.op.clone());
        let what = format!("the wait for collective '{name}' ({op}) runs no kernel");
        waits[j].push(Step {
            name,
            op,
            kernel: Box::new(move |_| Err(Error::kernel(what.clone()))),
            exec: Exec::Wait(id),
            inputs: Vec::new(),
            outputs: st.outputs.clone(),
            free: Vec::new(),
        });
        id += 1;
    }
    let mut at = vec![0usize; n];
    let mut out = Vec::with_capacity(n + id);
    for (i, st) in steps.into_iter().enumerate() {
        out.append(&mut waits[i]);
        at[i] = out.len();
        out.push(st);
    }
    out.append(&mut waits[n]);
    for p in produced.iter_mut() {
        p.1 = at[p.1];
    }
    (out, id)
}

/// `order` (topological) with the ancestors of every collective, send or receive on more than
/// one rank (and those nodes) first, in `order`'s order among themselves, then the other nodes:
/// a collective starts as early as the graph allows and the compute that does not lead to it
/// runs while it communicates. The collectives, sends and receives keep their order (a send
/// moved after a collective that another rank reaches only after receiving it would deadlock),
/// so every rank still issues them alike. `order` itself where there is none or overlapping is
/// off.
fn collectives_first(g: &Graph, order: Vec<NodeId>) -> Result<Vec<NodeId>> {
    if !crate::collective::worker::overlap_enabled() {
        return Ok(order);
    }
    let waits = |n: &es_core::Node| {
        let op = n.op_type.as_str();
        if !kernels::COLLECTIVE_OPS.contains(&op) || kernels::is_custom(op) {
            return false;
        }
        let group = match n.attr("group") {
            Some(es_core::AttrValue::String(s)) => s.as_str(),
            _ => WORLD_GROUP,
        };
        crate::collective::group(group).is_ok_and(|c| c.size() > 1)
    };
    let mut first: rustc_hash::FxHashSet<NodeId> = rustc_hash::FxHashSet::default();
    for &id in order.iter().rev() {
        let n = g.node(id)?;
        if first.contains(&id) || waits(n) {
            first.insert(id);
            first.extend(n.inputs.iter().filter_map(|i| i.source).map(|p| p.node));
            first.extend(n.in_control.iter().copied());
        }
    }
    if first.is_empty() {
        return Ok(order);
    }
    let (mut ahead, rest): (Vec<NodeId>, Vec<NodeId>) =
        order.into_iter().partition(|id| first.contains(id));
    ahead.extend(rest);
    Ok(ahead)
}

/// Decides, once the slots' last readers are known (`last`, graph outputs left out), which
/// Concat inputs their producers write in place, which element-wise steps write over their
/// dying input, and which moves stay moves (the others become kernel calls). Returns each
/// slot's producing step.
fn place_and_alias(
    steps: &mut [Step],
    produced: &[(usize, usize, usize, NodeId)],
    last: &FxHashMap<usize, usize>,
    outputs: &[Src],
    slots: usize,
) -> Vec<Option<usize>> {
    let mut producer = vec![None; slots];
    for &(k, i, _, _) in produced {
        producer[k] = Some(i);
    }
    let mut readers = vec![0usize; slots];
    for s in steps.iter() {
        for src in s.inputs.iter().flatten() {
            if let Src::Slot(k) = src {
                readers[*k] += 1;
            }
        }
    }
    let mut is_output = vec![false; slots];
    for o in outputs {
        if let Src::Slot(k) = o {
            is_output[*k] = true;
        }
    }
    // Concat in place: a producer whose output only this Concat reads writes its slice.
    let mut places = Vec::new();
    for (c, st) in steps.iter().enumerate() {
        let Exec::Into(cs) = &st.exec else { continue };
        let Some(cc) = cs.op.concat().filter(|cc| cc.contiguous(&cs.dims)) else {
            continue;
        };
        for (i, j) in cc.data().enumerate() {
            let Some(Some(Src::Slot(k))) = st.inputs.get(j) else {
                continue;
            };
            if readers[*k] != 1 || is_output[*k] {
                continue;
            }
            let Some(p) = producer[*k] else { continue };
            if matches!(&steps[p].exec, Exec::Into(ps) if ps.op.placeable() && ps.dtype == cs.dtype)
            {
                places.push((p, c, cc.range(i, &cs.dims)));
            }
        }
    }
    for (p, c, r) in places {
        if let Exec::Into(ps) = &mut steps[p].exec {
            ps.place = Some((c, r));
        }
    }
    let placed = |steps: &[Step], k: usize| {
        producer[k].is_some_and(|p| matches!(&steps[p].exec, Exec::Into(s) if s.place.is_some()))
    };
    // Where an input (a step's output, not a graph output, read once here) dies at its step.
    let dying = |steps: &[Step], i: usize, k: usize| {
        producer[k].is_some()
            && last.get(&k) == Some(&i)
            && !is_output[k]
            && !placed(steps, k)
            && steps[i]
                .inputs
                .iter()
                .filter(|s| matches!(s, Some(Src::Slot(x)) if *x == k))
                .count()
                == 1
    };
    for i in 0..steps.len() {
        let into =
            matches!(&steps[i].exec, Exec::Into(s) if s.op.elementwise() && s.place.is_none());
        if into {
            let alias = steps[i]
                .inputs
                .iter()
                .enumerate()
                .find_map(|(j, src)| match src {
                    Some(Src::Slot(k)) if dying(steps, i, *k) => Some((j, *k)),
                    _ => None,
                });
            if let Exec::Into(s) = &mut steps[i].exec {
                s.alias = alias;
            }
        } else if matches!(steps[i].exec, Exec::Move(_)) {
            let moves =
                matches!(steps[i].inputs.first(), Some(Some(Src::Slot(k))) if dying(steps, i, *k));
            if !moves {
                steps[i].exec = Exec::Kernel;
            }
        }
    }
    producer
}

/// Buffer ids for the slots into-steps make: one id per set of tensors whose lifetimes do not
/// overlap (of one dtype, the best fitting free one first); an in-place output or a move keeps
/// its input's id, a Concat's output gets its id at its first producer writing in place.
/// Values made by allocating kernels get none (their buffers are the kernels').
fn assign_buffers(steps: &[Step], slots: usize) -> (Vec<Option<usize>>, Vec<usize>) {
    let mut slot_buf: Vec<Option<usize>> = vec![None; slots];
    let mut bufs: Vec<(DataType, usize)> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    let mut donated = vec![false; slots];
    let mut pick = |dt: DataType, n: usize, free: &mut Vec<usize>| -> usize {
        let same = free.iter().enumerate().filter(|(_, &b)| bufs[b].0 == dt);
        let fit = same
            .clone()
            .filter(|(_, &b)| bufs[b].1 >= n)
            .min_by_key(|(_, &b)| bufs[b].1);
        let chosen = fit.or_else(|| same.max_by_key(|(_, &b)| bufs[b].1));
        match chosen.map(|(x, &b)| (x, b)) {
            Some((x, b)) => {
                free.swap_remove(x);
                bufs[b].1 = bufs[b].1.max(n);
                b
            }
            None => {
                bufs.push((dt, n));
                bufs.len() - 1
            }
        }
    };
    for st in steps {
        match &st.exec {
            Exec::Into(s) => {
                let n: usize = s.dims.iter().product();
                match (&s.alias, &s.place) {
                    (Some((_, k)), _) => {
                        slot_buf[st.outputs[0]] = slot_buf[*k];
                        donated[*k] = true;
                    }
                    (None, Some((c, _))) => {
                        let co = steps[*c].outputs[0];
                        if let (None, Exec::Into(cs)) = (slot_buf[co], &steps[*c].exec) {
                            let cn = cs.dims.iter().product();
                            slot_buf[co] = Some(pick(cs.dtype, cn, &mut free));
                        }
                    }
                    (None, None) => {
                        if slot_buf[st.outputs[0]].is_none() {
                            slot_buf[st.outputs[0]] = Some(pick(s.dtype, n, &mut free));
                        }
                    }
                }
            }
            Exec::Move(_) => {
                if let Some(Some(Src::Slot(k))) = st.inputs.first() {
                    slot_buf[st.outputs[0]] = slot_buf[*k];
                    donated[*k] = true;
                }
            }
            Exec::Kernel | Exec::Collective(_) | Exec::Start(..) | Exec::Wait(_) => {}
        }
        for &k in &st.free {
            if let (false, Some(b)) = (donated[k], slot_buf[k]) {
                free.push(b);
            }
        }
    }
    let caps = bufs.into_iter().map(|(_, n)| n).collect();
    (slot_buf, caps)
}

/// Where the one step of a plan that [`Plan::one_step`] accepts reads each input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StepArg {
    Absent,
    /// The plan's input of this index.
    Input(usize),
    /// The plan's constant of this index ([`Plan::const_value`]).
    Const(usize),
}

/// For eager runs ([`crate::eager`]): a plan of one node, whose one step runs on values held
/// outside the plan (no workspace, no pool).
impl Plan {
    /// The arguments of the plan's step, when the plan is one step reading only the plan's
    /// inputs and constants and giving the plan's outputs, in order (None otherwise: the node
    /// was folded, or a promotion cast came before it).
    pub(crate) fn one_step(&self) -> Option<Vec<StepArg>> {
        let [st] = self.steps.as_slice() else {
            return None;
        };
        let outs_match = self.outputs.len() == st.outputs.len()
            && self
                .outputs
                .iter()
                .zip(&st.outputs)
                .all(|(o, k)| matches!(o, Src::Slot(x) if x == k));
        if !outs_match {
            return None;
        }
        st.inputs
            .iter()
            .map(|s| match s {
                None => Some(StepArg::Absent),
                Some(Src::Const(c)) => Some(StepArg::Const(*c)),
                Some(Src::Slot(k)) => self
                    .inputs
                    .iter()
                    .position(|x| *x == Some(*k))
                    .map(StepArg::Input),
            })
            .collect()
    }

    pub(crate) fn const_value(&self, c: usize) -> &Value {
        &self.consts[c]
    }

    /// The one step's into-kernel, if it has one: the dtype and dims it writes, and whether
    /// it is element-wise (may write over an input of its output's dtype and shape).
    pub(crate) fn one_step_into(&self) -> Option<(DataType, Vec<usize>, bool)> {
        match &self.steps.first()?.exec {
            Exec::Into(s) if s.place.is_none() && s.epilogue.is_none() => {
                Some((s.dtype, s.dims.clone(), s.op.elementwise()))
            }
            _ => None,
        }
    }

    /// Whether the one step's into-kernel computes from `args` (all present).
    pub(crate) fn one_step_accepts(&self, args: &[Option<&Value>]) -> bool {
        match self.steps.first().map(|s| &s.exec) {
            Some(Exec::Into(s)) => s.op.accepts(args, s.dtype, &s.dims),
            _ => false,
        }
    }

    /// Runs the one step's into-kernel into `out` (`alias`: the argument moved into `out`,
    /// absent from `args`).
    pub(crate) fn run_one_into(
        &self,
        args: &[Option<&Value>],
        out: &mut Value,
        alias: Option<usize>,
    ) -> Result<()> {
        let step = &self.steps[0];
        let Exec::Into(s) = &step.exec else {
            return Err(Error::Compile("the eager step has no into-kernel".into()));
        };
        let n = s.dims.iter().product();
        s.op.run(
            args,
            kernels::Dest {
                out,
                range: 0..n,
                dims: &s.dims,
                alias,
            },
        )
        .map_err(|e| e.at(&step.name, &step.op))
    }

    /// Runs the one step's allocating kernel.
    pub(crate) fn run_one_kernel(&self, args: &[Option<&Value>]) -> Result<Vec<Value>> {
        let step = &self.steps[0];
        let outs = (step.kernel)(args).map_err(|e| e.at(&step.name, &step.op))?;
        check_output_count(step, outs.len())?;
        Ok(outs)
    }
}

/// An error unless a step's kernel made as many outputs as its node has.
fn check_output_count(step: &Step, made: usize) -> Result<()> {
    if made != step.outputs.len() {
        return Err(Error::Execution {
            node: step.name.clone(),
            op: step.op.clone(),
            message: format!(
                "the kernel made {made} outputs, the node has {}",
                step.outputs.len()
            ),
        });
    }
    Ok(())
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

    /// Runs the plan on inputs of its signature: in a workspace of the plan's pool (buffers
    /// reused from earlier runs, see [`crate::arena`]).
    pub fn execute(&self, inputs: Vec<Value>) -> Result<Vec<Value>> {
        self.run(inputs, true, None)
    }

    /// Runs every step through its allocating kernel in fresh slots (no buffer reused, nothing
    /// in place): the path [`Plan::execute`] gives the same results as, bit for bit.
    pub fn execute_reference(&self, inputs: Vec<Value>) -> Result<Vec<Value>> {
        self.run(inputs, false, None)
    }

    /// [`Plan::execute`], also giving the address of each step's first output's elements (0
    /// where it has none): which steps wrote in place, and where.
    #[doc(hidden)]
    pub fn execute_traced(&self, inputs: Vec<Value>) -> Result<(Vec<Value>, Vec<usize>)> {
        let mut trace = Vec::with_capacity(self.steps.len());
        let outs = self.run(inputs, true, Some(&mut trace))?;
        Ok((outs, trace))
    }

    /// The names and op types of the steps, in run order.
    #[doc(hidden)]
    pub fn step_names(&self) -> Vec<(String, String)> {
        self.steps
            .iter()
            .map(|s| (s.name.clone(), s.op.clone()))
            .collect()
    }

    /// Drops the buffers kept for later runs.
    pub fn release_buffers(&self) {
        self.pool.clear();
    }

    fn run(
        &self,
        inputs: Vec<Value>,
        reuse: bool,
        mut trace: Option<&mut Vec<usize>>,
    ) -> Result<Vec<Value>> {
        check_input_count(self.inputs.len(), inputs.len())?;
        let mut ws = if reuse {
            self.pool.take(self.slots, self.buf_cap.len())
        } else {
            let mut w = Workspace::default();
            w.slots.resize_with(self.slots, || None);
            w
        };
        for (v, s) in inputs.into_iter().zip(&self.inputs) {
            if let Some(k) = s {
                ws.slots[*k] = Some(v);
            }
        }
        // The collectives handed to the communication thread, by id, until their wait steps.
        let mut pending: Vec<Option<Pending>> = (0..self.started).map(|_| None).collect();
        for step in &self.steps {
            let done = match &step.exec {
                Exec::Start(id, c) if reuse => {
                    pending[*id] = Some(self.start(step, c, &mut ws));
                    true
                }
                Exec::Wait(id) if reuse => {
                    let p = pending[*id].take().ok_or_else(|| {
                        Error::kernel("a collective was waited for before it started")
                    });
                    let outs = p
                        .and_then(Pending::wait)
                        .map_err(|e| e.at(&step.name, &step.op))?;
                    check_output_count(step, outs.len())?;
                    for (v, &k) in outs.into_iter().zip(&step.outputs) {
                        ws.slots[k] = Some(v);
                    }
                    true
                }
                Exec::Collective(c) if reuse => {
                    worker::wait_idle();
                    let outs = c
                        .call_owned(self.owned_args(step, &mut ws))
                        .map_err(|e| e.at(&step.name, &step.op))?;
                    check_output_count(step, outs.len())?;
                    for (v, &k) in outs.into_iter().zip(&step.outputs) {
                        ws.slots[k] = Some(v);
                    }
                    true
                }
                // A reference run: the start step ran the collective where it stands.
                Exec::Wait(_) => true,
                _ if !reuse => false,
                Exec::Start(..) | Exec::Collective(_) | Exec::Kernel => false,
                Exec::Into(s) => self.run_into(step, s, &mut ws)?,
                Exec::Move(dims) => Self::run_move(step, dims, &mut ws)?,
            };
            if !done {
                self.run_kernel(step, &mut ws)?;
            }
            if let Some(t) = trace.as_deref_mut() {
                t.push(self.out_address(step, &ws));
            }
            for &k in &step.free {
                ws.release(k, if reuse { self.slot_buf[k] } else { None });
            }
        }
        let mut outs = Vec::with_capacity(self.outputs.len());
        for (i, s) in self.outputs.iter().enumerate() {
            outs.push(match s {
                Src::Const(c) => self.consts[*c].clone(),
                Src::Slot(k) => {
                    // The last output of a slot takes its value; an earlier one copies it.
                    let again = self.outputs[i + 1..]
                        .iter()
                        .any(|o| matches!(o, Src::Slot(x) if x == k));
                    let v = if again {
                        ws.slots[*k].clone()
                    } else {
                        ws.slots[*k].take()
                    };
                    v.ok_or_else(|| Error::Compile("a graph output was not computed".into()))?
                }
            });
        }
        if reuse {
            for k in 0..self.slots {
                ws.release(k, self.slot_buf[k]);
            }
            self.pool.give(ws);
        }
        Ok(outs)
    }

    /// A collective step's inputs, owned: each one this step reads last moved out of its slot
    /// (no copy), the others copied.
    fn owned_args(&self, step: &Step, ws: &mut Workspace) -> Vec<Option<Value>> {
        let mut owned: Vec<Option<Value>> = Vec::with_capacity(step.inputs.len());
        for src in &step.inputs {
            owned.push(match src {
                None => None,
                Some(Src::Const(i)) => Some(self.consts[*i].clone()),
                Some(Src::Slot(k)) => {
                    let reads = step.inputs.iter().filter(|s| **s == Some(Src::Slot(*k)));
                    if reads.count() == 1 && step.free.contains(k) {
                        ws.slots[*k].take()
                    } else {
                        ws.slots[*k].clone()
                    }
                }
            });
        }
        owned
    }

    /// Hands a start step's collective to the communication thread with its inputs.
    fn start(&self, step: &Step, c: &Arc<kernels::Collective>, ws: &mut Workspace) -> Pending {
        let owned = self.owned_args(step, ws);
        let c = c.clone();
        worker::start(move || c.call_owned(owned))
    }

    /// For each collective started in one step and waited for in a later one: its node's
    /// name and the steps between.
    fn overlaps(&self) -> Vec<(String, usize)> {
        let mut at = vec![0usize; self.started];
        let mut out = Vec::new();
        for (i, st) in self.steps.iter().enumerate() {
            match st.exec {
                Exec::Start(id, _) => at[id] = i,
                Exec::Wait(id) => out.push((st.name.clone(), i - at[id] - 1)),
                _ => {}
            }
        }
        out
    }

    /// The step's arguments: its inputs' values (None: unconnected, or moved away).
    fn args<'a>(
        &'a self,
        step: &Step,
        slots: &'a [Option<Value>],
    ) -> smallvec::SmallVec<[Option<&'a Value>; 4]> {
        // On the stack for up to 4 inputs: no allocation per step.
        step.inputs
            .iter()
            .map(|s| match s {
                None => None,
                Some(Src::Const(c)) => Some(&self.consts[*c]),
                Some(Src::Slot(k)) => slots[*k].as_ref(),
            })
            .collect()
    }

    fn run_kernel(&self, step: &Step, ws: &mut Workspace) -> Result<()> {
        let outs = {
            let args = self.args(step, &ws.slots);
            (step.kernel)(&args).map_err(|e| e.at(&step.name, &step.op))?
        };
        check_output_count(step, outs.len())?;
        for (v, &k) in outs.into_iter().zip(&step.outputs) {
            ws.slots[k] = Some(v);
        }
        Ok(())
    }

    /// The buffer of `slot`'s id (parked by an earlier step or run) made into a value of
    /// `dtype` and `dims`.
    fn buffer(
        &self,
        ws: &mut Workspace,
        slot: usize,
        dtype: DataType,
        dims: &[usize],
    ) -> Result<Value> {
        match self.slot_buf[slot] {
            Some(b) => arena::fit(ws.bufs[b].take(), dtype, dims, self.buf_cap[b]),
            None => arena::fit(None, dtype, dims, 0),
        }
    }

    /// Runs an into-step; false where its into-kernel does not take this run's inputs.
    fn run_into(&self, step: &Step, s: &IntoStep, ws: &mut Workspace) -> Result<bool> {
        if !s.op.accepts(&self.args(step, &ws.slots), s.dtype, &s.dims) {
            return Ok(false);
        }
        let at = |e: Error| e.at(&step.name, &step.op);
        // Where it writes: its Concat's buffer, its input's (in place), or its own.
        let (slot, mut out, range, alias) = match &s.place {
            Some((c, range)) => {
                let (cs, co) = (&self.steps[*c], self.steps[*c].outputs[0]);
                let Exec::Into(cx) = &cs.exec else {
                    return Ok(false);
                };
                let v = match ws.slots[co].take() {
                    Some(v) => v,
                    None => self.buffer(ws, co, cx.dtype, &cx.dims).map_err(at)?,
                };
                (co, v, range.clone(), None)
            }
            None => {
                let o = step.outputs[0];
                let n = s.dims.iter().product();
                let alias = s.alias.filter(|&(_, k)| {
                    ws.slots[k]
                        .as_ref()
                        .is_some_and(|v| arena::writable(v, s.dtype, &s.dims))
                });
                let v = match (alias, ws.slots[o].take()) {
                    (Some((_, k)), _) => ws.slots[k].take(),
                    (None, Some(v)) => Some(v),
                    (None, None) => Some(self.buffer(ws, o, s.dtype, &s.dims).map_err(at)?),
                };
                let v = v.ok_or_else(|| at(Error::kernel("the in-place input is missing")))?;
                (o, v, 0..n, alias.map(|a| a.0))
            }
        };
        let r =
            s.op.run(
                &self.args(step, &ws.slots),
                kernels::Dest {
                    out: &mut out,
                    range: range.clone(),
                    dims: &s.dims,
                    alias,
                },
            )
            .and_then(|()| match &s.epilogue {
                Some(ep) => ep.apply_into(&mut out, range, &s.dims),
                None => Ok(()),
            });
        ws.slots[slot] = Some(out);
        r.map_err(at)?;
        Ok(true)
    }

    /// Moves a reshaped value; false (the value left where it was) where it cannot.
    fn run_move(step: &Step, dims: &[usize], ws: &mut Workspace) -> Result<bool> {
        let Some(Some(Src::Slot(k))) = step.inputs.first() else {
            return Ok(false);
        };
        let Some(v) = ws.slots[*k].take() else {
            return Ok(false);
        };
        match arena::reshaped(v, dims) {
            Ok(v) => {
                ws.slots[step.outputs[0]] = Some(v.map_err(|e| e.at(&step.name, &step.op))?);
                Ok(true)
            }
            Err(v) => {
                ws.slots[*k] = Some(v);
                Ok(false)
            }
        }
    }

    /// The address of the elements a step wrote (its first output's; for a producer of a
    /// Concat in place, its slice of the Concat's buffer).
    fn out_address(&self, step: &Step, ws: &Workspace) -> usize {
        if let Exec::Into(s) = &step.exec {
            if let (Some((c, r)), None) = (&s.place, &ws.slots[step.outputs[0]]) {
                let base = ws.slots[self.steps[*c].outputs[0]]
                    .as_ref()
                    .map_or(0, arena::address);
                return base + r.start * s.dtype.size().unwrap_or(1);
            }
        }
        step.outputs
            .first()
            .and_then(|&o| ws.slots[o].as_ref())
            .map_or(0, arena::address)
    }
}
