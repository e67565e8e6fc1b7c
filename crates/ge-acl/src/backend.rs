//! The ACL backend: graphs on an Ascend NPU through the safe layer ([`crate::acl`]) over
//! `acl-sys`.
//!
//! A plan for one input signature owns device buffers for the graph's inputs, constants and
//! outputs, and buffers that computed values share once the values before them are dead (views
//! such as Reshape share their input's buffer), and one step per operator, each an aclnn
//! two-phase call. Eager mode (`ge.graphMode=off`) builds a plan per run
//! and launches its steps one by one. Graph mode builds the plan on a cache miss, prepares
//! every step's executor and the workspace first, then captures the launches on the stream
//! (`aclmdlRICaptureBegin` in global mode ... `aclmdlRICaptureEnd`) and replays the captured
//! graph (`aclmdlRIExecuteAsync`) on this and every later run with the same signature; a plan
//! evicted from the cache destroys its graph and frees its buffers. Without the capture
//! functions (CANN before 8.2) graph mode keeps the plan and launches its steps each run.
//!
//! The operators it runs are [`ACL_OPS`]; compiling a graph with any other operator fails
//! with one error listing every node it cannot run.
//!
//! No NPU was available where this was written: it is tested against the ACL test double
//! (`acl_sys::test_double`), never on hardware.

use crate::acl::ops::{self as aops, Binary, Reduce, Unary};
use crate::acl::{Acl, CapturedGraph, Device, DeviceBuffer, Executor, Stream, Tensor};
use acl_sys::ffi;
use es_core::graph::is_data_op;
use es_core::{DataType, Graph, NodeId, OutPort};
use ge_runtime::backend::{Backend, BackendPlan};
use ge_runtime::kernels::NodeInfo;
use ge_runtime::plan::{check_input_count, CompileReport, Prepared, Signature};
use ge_runtime::{Error, Options, Result, Value};
use rustc_hash::FxHashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

/// The GE operators the ACL backend runs, sorted.
pub const ACL_OPS: [&str; 34] = [
    "Abs",
    "Add",
    "BatchMatMul",
    "BatchMatMulV2",
    "Cast",
    "Div",
    "Exp",
    "ExpandDims",
    "Flatten",
    "Identity",
    "MatMul",
    "MatMulV2",
    "Mul",
    "Neg",
    "RealDiv",
    "ReduceMax",
    "ReduceMaxD",
    "ReduceMean",
    "ReduceMeanD",
    "ReduceMin",
    "ReduceMinD",
    "ReduceSum",
    "ReduceSumD",
    "Relu",
    "Reshape",
    "Sigmoid",
    "SoftmaxV2",
    "Sqrt",
    "Squeeze",
    "Sub",
    "Tanh",
    "Transpose",
    "TransposeD",
    "Unsqueeze",
];

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// An ACL error as a ge-runtime one.
fn dev(e: crate::acl::Error) -> Error {
    match e {
        crate::acl::Error::Unsupported(m) => Error::Unsupported(m),
        e => Error::Device(e.to_string()),
    }
}

/// The ACL data type of a GE one.
pub fn acl_dtype(dt: DataType) -> Option<ffi::aclDataType> {
    Some(match dt {
        DataType::FLOAT => ffi::ACL_FLOAT,
        DataType::FLOAT16 => ffi::ACL_FLOAT16,
        DataType::BF16 => ffi::ACL_BF16,
        DataType::DOUBLE => ffi::ACL_DOUBLE,
        DataType::INT8 => ffi::ACL_INT8,
        DataType::INT16 => ffi::ACL_INT16,
        DataType::INT32 => ffi::ACL_INT32,
        DataType::INT64 => ffi::ACL_INT64,
        DataType::UINT8 => ffi::ACL_UINT8,
        DataType::UINT16 => ffi::ACL_UINT16,
        DataType::UINT32 => ffi::ACL_UINT32,
        DataType::UINT64 => ffi::ACL_UINT64,
        DataType::BOOL => ffi::ACL_BOOL,
        _ => return None,
    })
}

struct Inner {
    device: Device,
    stream: Stream,
}

/// One device and its stream, shared by the plans compiled for it. Runs take turns (one
/// stream).
pub struct AclBackend {
    acl: Acl,
    device_id: i32,
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for AclBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AclBackend(device {})", self.device_id)
    }
}

impl AclBackend {
    /// Loads ACL (see `acl_sys::search_dirs`), initialises it and opens `device_id` with a
    /// stream.
    pub fn open(device_id: i32) -> Result<AclBackend> {
        let acl = Acl::init().map_err(dev)?;
        let count = acl.device_count().map_err(dev)?;
        if device_id < 0 || device_id as u32 >= count {
            return Err(Error::Device(format!(
                "ge.exec.deviceId is {device_id}, but ACL reports {count} device(s)"
            )));
        }
        let device = acl.open_device(device_id).map_err(dev)?;
        let stream = device.create_stream().map_err(dev)?;
        Ok(AclBackend {
            acl,
            device_id,
            inner: Mutex::new(Inner { device, stream }),
        })
    }

    pub fn device_id(&self) -> i32 {
        self.device_id
    }

    /// Whether graph mode captures (the ACL found has the `aclmdlRI*` functions).
    pub fn has_capture(&self) -> bool {
        self.acl.api().has_capture()
    }
}

/// A value on the device: a contiguous view of one of the plan's buffers.
#[derive(Debug, Clone)]
struct View {
    buf: usize,
    dtype: DataType,
    dims: Vec<i64>,
}

impl View {
    fn elems(&self) -> usize {
        self.dims.iter().map(|&d| d as usize).product()
    }
    fn bytes(&self) -> usize {
        self.elems() * self.dtype.size().unwrap_or(0)
    }
}

#[derive(Debug, Clone)]
enum Kind {
    Binary(Binary),
    Unary(Unary),
    MatMul { ta: bool, tb: bool },
    Softmax(i64),
    Cast,
    Permute(Vec<i64>),
    Reduce(Reduce, Vec<i64>, bool),
}

#[derive(Debug)]
struct Step {
    name: String,
    op: String,
    kind: Kind,
    inputs: Vec<View>,
    output: View,
}

struct State {
    workspace: Option<DeviceBuffer>,
    graph: Option<CapturedGraph>,
}

/// An execution plan on the ACL backend for one signature.
pub struct AclPlan {
    backend: Arc<AclBackend>,
    buffers: Vec<DeviceBuffer>,
    inputs: Vec<Option<View>>,
    steps: Vec<Step>,
    outputs: Vec<View>,
    state: Mutex<State>,
    signature: Signature,
    report: CompileReport,
}

impl std::fmt::Debug for AclPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AclPlan")
            .field("steps", &self.steps.len())
            .field("buffers", &self.buffers.len())
            .finish()
    }
}

fn dims_of(g: &Graph, p: OutPort) -> Result<(DataType, Vec<i64>)> {
    let d = g.out_desc(p)?;
    let dims = d.shape.dims().to_vec();
    if d.shape.rank().is_none() || dims.iter().any(|&x| x < 0) {
        return Err(Error::unsupported(format!(
            "a value of unknown shape ({}) on the ACL backend",
            d.shape
        )));
    }
    Ok((d.dtype, dims))
}

fn const_ints(g: &Graph, node: &es_core::Node, i: usize, what: &str) -> Result<Vec<i64>> {
    let src =
        node.inputs.get(i).and_then(|x| x.source).ok_or_else(|| {
            Error::unsupported(format!("{} without its {what} input", node.op_type))
        })?;
    let t = g.node(src.node)?.const_value().ok_or_else(|| {
        Error::unsupported(format!(
            "{} with a non-constant {what} on the ACL backend",
            node.op_type
        ))
    })?;
    Ok(Value::from_tensor(t)?.to_i64_vec())
}

/// `axis` normalised for `rank` (the kernels' rule), as a compile error.
fn norm(axis: i64, rank: usize) -> Result<i64> {
    ge_runtime::kernels::norm_axis(axis, rank)
        .map(|a| a as i64)
        .map_err(|e| match e {
            Error::Execution { message, .. } => Error::Compile(message),
            e => e,
        })
}

/// What a node is on the ACL backend: a step, a view of its first input, or unsupported.
enum Lowered {
    Step(Kind),
    View,
}

fn lower(g: &Graph, n: &es_core::Node, in_rank: usize) -> Result<Lowered> {
    let info = NodeInfo {
        node: n,
        inputs: Vec::new(),
        const_inputs: Vec::new(),
    };
    let op = n.op_type.as_str();
    Ok(match op {
        "Add" => Lowered::Step(Kind::Binary(Binary::Add)),
        "Sub" => Lowered::Step(Kind::Binary(Binary::Sub)),
        "Mul" => Lowered::Step(Kind::Binary(Binary::Mul)),
        "Div" | "RealDiv" => Lowered::Step(Kind::Binary(Binary::Div)),
        "Relu" => Lowered::Step(Kind::Unary(Unary::Relu)),
        "Exp" => Lowered::Step(Kind::Unary(Unary::Exp)),
        "Sigmoid" => Lowered::Step(Kind::Unary(Unary::Sigmoid)),
        "Tanh" => Lowered::Step(Kind::Unary(Unary::Tanh)),
        "Sqrt" => Lowered::Step(Kind::Unary(Unary::Sqrt)),
        "Neg" => Lowered::Step(Kind::Unary(Unary::Neg)),
        "Abs" => Lowered::Step(Kind::Unary(Unary::Abs)),
        "Cast" => Lowered::Step(Kind::Cast),
        "MatMul" | "MatMulV2" | "BatchMatMul" | "BatchMatMulV2" => {
            if n.inputs.iter().skip(2).any(|i| i.source.is_some()) {
                return Err(Error::unsupported(format!(
                    "{op} with a bias or offset input on the ACL backend"
                )));
            }
            let (ta, tb) = if op.starts_with("Batch") {
                (info.bool("adj_x1", false)?, info.bool("adj_x2", false)?)
            } else {
                (
                    info.bool("transpose_x1", false)?,
                    info.bool("transpose_x2", false)?,
                )
            };
            Lowered::Step(Kind::MatMul { ta, tb })
        }
        "SoftmaxV2" => {
            let axes = info.ints("axes")?.unwrap_or_else(|| vec![-1]);
            if axes.len() != 1 {
                return Err(Error::unsupported(format!(
                    "SoftmaxV2 over {} axes on the ACL backend (one axis only)",
                    axes.len()
                )));
            }
            Lowered::Step(Kind::Softmax(norm(axes[0], in_rank)?))
        }
        "Transpose" | "TransposeD" => {
            let perm = if op == "TransposeD" {
                info.ints("perm")?.unwrap_or_default()
            } else {
                const_ints(g, n, 1, "perm")?
            };
            Lowered::Step(Kind::Permute(perm))
        }
        "ReduceSum" | "ReduceSumD" | "ReduceMean" | "ReduceMeanD" | "ReduceMax" | "ReduceMaxD"
        | "ReduceMin" | "ReduceMinD" => {
            let r = match op.trim_end_matches('D') {
                "ReduceSum" => Reduce::Sum,
                "ReduceMean" => Reduce::Mean,
                "ReduceMax" => Reduce::Max,
                _ => Reduce::Min,
            };
            let d_form = op.ends_with('D');
            let keep = info.bool("keep_dims", false)?;
            let axes = if d_form {
                info.ints("axes")?.unwrap_or_default()
            } else if n.inputs.get(1).and_then(|i| i.source).is_some() {
                const_ints(g, n, 1, "axes")?
            } else {
                Vec::new()
            };
            if axes.is_empty() {
                // The tensor-axes forms reduce nothing without axes (noop_with_empty_axes,
                // true by default); the *D forms reduce every dim.
                if !d_form && info.bool("noop_with_empty_axes", true)? {
                    return Ok(Lowered::View);
                }
                Lowered::Step(Kind::Reduce(r, (0..in_rank as i64).collect(), keep))
            } else {
                let mut dims = axes
                    .iter()
                    .map(|&a| norm(a, in_rank))
                    .collect::<Result<Vec<_>>>()?;
                dims.sort_unstable();
                dims.dedup();
                Lowered::Step(Kind::Reduce(r, dims, keep))
            }
        }
        "Reshape" | "Squeeze" | "Unsqueeze" | "Flatten" | "ExpandDims" | "Identity" => {
            Lowered::View
        }
        _ => {
            return Err(Error::unsupported(format!(
                "{op} has no ACL implementation"
            )))
        }
    })
}

/// Plans `p` (a graph prepared for `signature`) on `backend`: checks every node, then
/// allocates the buffers and loads the constants. Every node the backend cannot run is named
/// in one error.
pub fn build(backend: &Arc<AclBackend>, p: Prepared, signature: Signature) -> Result<AclPlan> {
    let Prepared {
        graph: g,
        data,
        mut report,
        start,
    } = p;
    let t = Instant::now();
    let order = ge_runtime::optimize::needed_nodes(&g)?;
    let mut problems: Vec<String> = Vec::new();
    let mut lowered: FxHashMap<NodeId, Lowered> = FxHashMap::default();
    for &id in &order {
        let n = g.node(id)?;
        if is_data_op(&n.op_type) || n.const_value().is_some() {
            continue;
        }
        let in_rank = match n.inputs.first().and_then(|i| i.source) {
            Some(src) => g.out_desc(src)?.shape.rank().unwrap_or(0),
            None => 0,
        };
        let checked = lower(&g, n, in_rank).and_then(|l| {
            for o in 0..n.outputs.len() {
                let (dt, _) = dims_of(
                    &g,
                    OutPort {
                        node: id,
                        index: o as u32,
                    },
                )?;
                if acl_dtype(dt).is_none() {
                    return Err(Error::unsupported(format!("dtype {dt} on the ACL backend")));
                }
            }
            Ok(l)
        });
        match checked {
            Ok(l) => {
                lowered.insert(id, l);
            }
            Err(e) => {
                let why = e.to_string();
                let why = why.strip_prefix("not supported: ").unwrap_or(&why);
                problems.push(format!("node '{}' ({}): {why}", n.name, n.op_type));
            }
        }
    }
    if !problems.is_empty() {
        return Err(Error::unsupported(format!(
            "the ACL backend cannot run {} node(s): {} (it runs: {})",
            problems.len(),
            problems.join("; "),
            ACL_OPS.join(", ")
        )));
    }

    // Values get virtual buffers first (views share their input's); liveness then maps them
    // onto fewer device buffers.
    let mut virt: Vec<usize> = Vec::new();
    let mut alloc = |bytes: usize| -> usize {
        virt.push(bytes);
        virt.len() - 1
    };
    let mut view_of: FxHashMap<OutPort, View> = FxHashMap::default();
    let mut inputs: Vec<Option<View>> = vec![None; data.len()];
    let mut steps = Vec::new();
    let mut consts: Vec<(usize, Vec<u8>)> = Vec::new();
    for &id in &order {
        let n = g.node(id)?;
        let port0 = OutPort { node: id, index: 0 };
        if is_data_op(&n.op_type) {
            let k = data.iter().position(|&d| d == id).ok_or_else(|| {
                Error::Compile(format!("input node '{}' is not a graph input", n.name))
            })?;
            let (dtype, dims) = dims_of(&g, port0)?;
            acl_dtype(dtype).ok_or_else(|| {
                Error::unsupported(format!("input dtype {dtype} on the ACL backend"))
            })?;
            let mut v = View {
                buf: 0,
                dtype,
                dims,
            };
            v.buf = alloc(v.bytes());
            inputs[k] = Some(v.clone());
            view_of.insert(port0, v);
            continue;
        }
        if let Some(tv) = n.const_value() {
            let dtype = tv.desc.dtype;
            acl_dtype(dtype).ok_or_else(|| {
                Error::unsupported(format!(
                    "constant '{}' of dtype {dtype} on the ACL backend",
                    n.name
                ))
            })?;
            let dims = tv.desc.shape.dims().to_vec();
            let mut v = View {
                buf: 0,
                dtype,
                dims,
            };
            v.buf = alloc(tv.data.len());
            consts.push((v.buf, tv.data.to_vec()));
            view_of.insert(port0, v);
            continue;
        }
        let ins = n
            .inputs
            .iter()
            .filter_map(|i| i.source)
            .map(|p| {
                view_of.get(&p).cloned().ok_or_else(|| {
                    Error::Compile(format!(
                        "node '{}' reads a value that is not planned",
                        n.name
                    ))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let (dtype, dims) = dims_of(&g, port0)?;
        match lowered.remove(&id) {
            Some(Lowered::View) => {
                let first = ins
                    .first()
                    .ok_or_else(|| Error::Compile(format!("node '{}' has no input", n.name)))?;
                view_of.insert(
                    port0,
                    View {
                        buf: first.buf,
                        dtype,
                        dims,
                    },
                );
            }
            Some(Lowered::Step(kind)) => {
                let mut out = View {
                    buf: 0,
                    dtype,
                    dims,
                };
                out.buf = alloc(out.bytes());
                view_of.insert(port0, out.clone());
                let arity = match kind {
                    Kind::Binary(_) | Kind::MatMul { .. } => 2,
                    _ => 1,
                };
                if ins.len() < arity {
                    return Err(Error::Compile(format!(
                        "node '{}' ({}) has {} inputs, needs {arity}",
                        n.name,
                        n.op_type,
                        ins.len()
                    )));
                }
                steps.push(Step {
                    name: n.name.to_string(),
                    op: n.op_type.to_string(),
                    kind,
                    inputs: ins[..arity].to_vec(),
                    output: out,
                });
            }
            None => {
                return Err(Error::Compile(format!(
                    "node '{}' was not checked for the ACL backend",
                    n.name
                )))
            }
        }
    }
    let mut outputs = g
        .outputs
        .iter()
        .map(|p| {
            view_of
                .get(p)
                .cloned()
                .ok_or_else(|| Error::Compile("a graph output is not planned".into()))
        })
        .collect::<Result<Vec<_>>>()?;
    let values = virt.len();
    let phys = assign_buffers(&virt, &inputs, &consts, &steps, &outputs);
    let mut sizes: Vec<usize> = Vec::new();
    for (v, &p) in phys.iter().enumerate() {
        if p >= sizes.len() {
            sizes.resize(p + 1, 0);
        }
        sizes[p] = sizes[p].max(virt[v]);
    }
    let inner = lock(&backend.inner);
    let device = &inner.device;
    let buffers = sizes
        .iter()
        .map(|&b| device.alloc(b).map_err(dev))
        .collect::<Result<Vec<_>>>()?;
    for (v, bytes) in consts {
        device
            .copy_to_device(&buffers[phys[v]], 0, &bytes)
            .map_err(dev)?;
    }
    drop(inner);
    for v in inputs.iter_mut().flatten().chain(outputs.iter_mut()) {
        v.buf = phys[v.buf];
    }
    for s in &mut steps {
        for v in s.inputs.iter_mut().chain(std::iter::once(&mut s.output)) {
            v.buf = phys[v.buf];
        }
    }
    report.finish_plan(
        g.node_count(),
        steps.len(),
        format!(
            "ACL device {}: {} aclnn launches, {} values in {} device buffers",
            backend.device_id,
            steps.len(),
            values,
            buffers.len()
        ),
        (t, start),
    );
    Ok(AclPlan {
        backend: backend.clone(),
        buffers,
        inputs,
        steps,
        outputs,
        state: Mutex::new(State {
            workspace: None,
            graph: None,
        }),
        signature,
        report,
    })
}

/// Maps each virtual buffer (index into `sizes`) to a device buffer. Graph inputs, constants
/// and graph outputs keep buffers of their own; a step's output reuses a buffer whose values
/// are all read by earlier steps (one stream runs the steps in order, so a later step may
/// overwrite it; a step never writes a buffer it reads).
fn assign_buffers(
    sizes: &[usize],
    inputs: &[Option<View>],
    consts: &[(usize, Vec<u8>)],
    steps: &[Step],
    outputs: &[View],
) -> Vec<usize> {
    const NONE: usize = usize::MAX;
    let mut pinned = vec![false; sizes.len()];
    for v in inputs.iter().flatten().chain(outputs) {
        pinned[v.buf] = true;
    }
    for (v, _) in consts {
        pinned[*v] = true;
    }
    // The last step reading each virtual buffer (its writer when nothing reads it).
    let mut last = vec![0usize; sizes.len()];
    for (i, s) in steps.iter().enumerate() {
        last[s.output.buf] = last[s.output.buf].max(i);
        for v in &s.inputs {
            last[v.buf] = last[v.buf].max(i);
        }
    }
    let mut phys = vec![NONE; sizes.len()];
    let mut next = 0usize;
    for (v, p) in phys.iter_mut().enumerate() {
        if pinned[v] {
            *p = next;
            next += 1;
        }
    }
    let mut cap: Vec<usize> = vec![0; next]; // the size each device buffer needs
    let mut free: Vec<usize> = Vec::new(); // device buffers no live value uses
    let mut live: Vec<(usize, usize)> = Vec::new(); // (last reader, device buffer)
    for (i, s) in steps.iter().enumerate() {
        live.retain(|&(l, p)| {
            if l < i {
                free.push(p);
                false
            } else {
                true
            }
        });
        let v = s.output.buf;
        if phys[v] != NONE {
            continue;
        }
        // Best fit: the smallest free buffer that holds it, else the largest (it grows).
        let pick = free
            .iter()
            .enumerate()
            .filter(|(_, &p)| cap[p] >= sizes[v])
            .min_by_key(|(_, &p)| cap[p])
            .or_else(|| free.iter().enumerate().max_by_key(|(_, &p)| cap[p]))
            .map(|(k, _)| k);
        let p = match pick {
            Some(k) => free.swap_remove(k),
            None => {
                cap.push(0);
                next += 1;
                next - 1
            }
        };
        cap[p] = cap[p].max(sizes[v]);
        phys[v] = p;
        live.push((last[v], p));
    }
    // Anything left unassigned (not written by a step) gets its own buffer.
    for p in phys.iter_mut().filter(|p| **p == NONE) {
        *p = next;
        next += 1;
    }
    phys
}

/// How a run executes a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunMode {
    /// Launch every step now (eager mode).
    Eager,
    /// Replay the captured graph, capturing it first if this plan has none yet.
    Graph,
}

impl AclPlan {
    pub fn report(&self) -> &CompileReport {
        &self.report
    }
    /// The aclnn launches per eager run.
    pub fn len(&self) -> usize {
        self.steps.len()
    }
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }
    /// Whether the plan holds a captured graph.
    pub fn is_captured(&self) -> bool {
        lock(&self.state).graph.is_some()
    }
    pub fn signature(&self) -> &Signature {
        &self.signature
    }

    fn tensor(&self, v: &View, transpose: bool) -> Result<Tensor> {
        let api = self.backend.acl.api();
        let dt = acl_dtype(v.dtype)
            .ok_or_else(|| Error::unsupported(format!("dtype {} on the ACL backend", v.dtype)))?;
        let mut dims = v.dims.clone();
        let mut strides = aops::contiguous_strides(&dims);
        if transpose && dims.len() >= 2 {
            let r = dims.len();
            dims.swap(r - 1, r - 2);
            strides.swap(r - 1, r - 2);
        }
        Tensor::new(api, dt, &dims, &strides, 0, &self.buffers[v.buf]).map_err(dev)
    }

    /// The first phase of step `s`: its executor (and the tensors it was made from, which
    /// must live until the launch).
    fn prepare(&self, s: &Step) -> Result<(Executor, Vec<Tensor>)> {
        let api = self.backend.acl.api();
        let out = self.tensor(&s.output, false)?;
        let at = |e: Error| match e {
            Error::Device(m) => Error::Execution {
                node: s.name.clone(),
                op: s.op.clone(),
                message: m,
            },
            e => e.at(&s.name, &s.op),
        };
        let r = (|| -> Result<(Executor, Vec<Tensor>)> {
            Ok(match &s.kind {
                Kind::Binary(b) => {
                    let (x, y) = (
                        self.tensor(&s.inputs[0], false)?,
                        self.tensor(&s.inputs[1], false)?,
                    );
                    let e = aops::binary(api, *b, &x, &y, &out).map_err(dev)?;
                    (e, vec![x, y, out])
                }
                Kind::Unary(u) => {
                    let x = self.tensor(&s.inputs[0], false)?;
                    let e = aops::unary(api, *u, &x, &out).map_err(dev)?;
                    (e, vec![x, out])
                }
                Kind::MatMul { ta, tb } => {
                    let (x, y) = (
                        self.tensor(&s.inputs[0], *ta)?,
                        self.tensor(&s.inputs[1], *tb)?,
                    );
                    let e = aops::matmul(api, &x, &y, &out).map_err(dev)?;
                    (e, vec![x, y, out])
                }
                Kind::Softmax(dim) => {
                    let x = self.tensor(&s.inputs[0], false)?;
                    let e = aops::softmax(api, &x, *dim, &out).map_err(dev)?;
                    (e, vec![x, out])
                }
                Kind::Cast => {
                    let x = self.tensor(&s.inputs[0], false)?;
                    let dt = acl_dtype(s.output.dtype).unwrap_or(ffi::ACL_DT_UNDEFINED);
                    let e = aops::cast(api, &x, dt, &out).map_err(dev)?;
                    (e, vec![x, out])
                }
                Kind::Permute(perm) => {
                    let x = self.tensor(&s.inputs[0], false)?;
                    let e = aops::permute(api, &x, perm, &out).map_err(dev)?;
                    (e, vec![x, out])
                }
                Kind::Reduce(r, dims, keep) => {
                    let x = self.tensor(&s.inputs[0], false)?;
                    let dt = acl_dtype(s.output.dtype).unwrap_or(ffi::ACL_DT_UNDEFINED);
                    let e = aops::reduce(api, *r, &x, dims, *keep, dt, &out).map_err(dev)?;
                    (e, vec![x, out])
                }
            })
        })();
        r.map_err(at)
    }

    /// Grows the plan's workspace to `need` bytes (outside any capture).
    fn ensure_workspace(device: &Device, st: &mut State, need: u64) -> Result<()> {
        if need > 0
            && st
                .workspace
                .as_ref()
                .is_none_or(|w| (w.len() as u64) < need)
        {
            st.workspace = None;
            st.workspace = Some(device.alloc(need as usize).map_err(dev)?);
        }
        Ok(())
    }

    fn live_steps(&self) -> impl Iterator<Item = &Step> {
        // A step with an empty output computes nothing.
        self.steps.iter().filter(|s| s.output.elems() > 0)
    }

    fn launch_all(&self, inner: &mut Inner, st: &mut State) -> Result<()> {
        for s in self.live_steps() {
            let (exec, _tensors) = self.prepare(s)?;
            Self::ensure_workspace(&inner.device, st, exec.workspace_size())?;
            inner
                .stream
                .launch(exec, st.workspace.as_ref())
                .map_err(|e| step_error(s, e))?;
        }
        Ok(())
    }

    /// Captures every launch into a graph: the executors and the workspace are made first,
    /// since nothing may be allocated while the stream captures.
    fn capture(&self, inner: &mut Inner, st: &mut State) -> Result<()> {
        let mut prepared = Vec::with_capacity(self.steps.len());
        let mut need = 0u64;
        for s in self.live_steps() {
            let (exec, tensors) = self.prepare(s)?;
            need = need.max(exec.workspace_size());
            prepared.push((s, exec, tensors));
        }
        Self::ensure_workspace(&inner.device, st, need)?;
        let Inner { device, stream } = inner;
        let mut cap = stream.capture(device).map_err(dev)?;
        for (s, exec, _tensors) in prepared {
            cap.launch(exec, st.workspace.as_ref())
                .map_err(|e| step_error(s, e))?;
        }
        st.graph = Some(cap.end().map_err(dev)?);
        Ok(())
    }

    /// Runs the plan on `inputs` (of its signature): copies them to the device, launches or
    /// replays, waits, and copies the outputs back.
    pub fn run(&self, inputs: Vec<Value>, mode: RunMode) -> Result<Vec<Value>> {
        check_input_count(self.inputs.len(), inputs.len())?;
        let mut inner = lock(&self.backend.inner);
        let inner = &mut *inner;
        for (x, v) in inputs.iter().zip(&self.inputs) {
            if let Some(v) = v {
                inner
                    .device
                    .copy_to_device(&self.buffers[v.buf], 0, &x.to_le_bytes())
                    .map_err(dev)?;
            }
        }
        let mut st = lock(&self.state);
        let capture = mode == RunMode::Graph && self.backend.has_capture();
        if capture && st.graph.is_none() {
            self.capture(inner, &mut st)?;
        }
        match (&st.graph, capture) {
            (Some(g), true) => g.replay(&mut inner.stream).map_err(dev)?,
            _ => self.launch_all(inner, &mut st)?,
        }
        inner.stream.synchronize().map_err(dev)?;
        let mut outs = Vec::with_capacity(self.outputs.len());
        for v in &self.outputs {
            let mut bytes = vec![0u8; v.bytes()];
            inner
                .device
                .copy_from_device(&mut bytes, &self.buffers[v.buf], 0)
                .map_err(dev)?;
            let dims: Vec<usize> = v.dims.iter().map(|&d| d as usize).collect();
            outs.push(Value::from_le_bytes(v.dtype, &dims, &bytes)?);
        }
        Ok(outs)
    }
}

fn step_error(s: &Step, e: crate::acl::Error) -> Error {
    Error::Execution {
        node: s.name.clone(),
        op: s.op.clone(),
        message: e.to_string(),
    }
}

/// [`AclBackend`] as a session's [`Backend`] (what [`crate::register`] makes `ge.device=acl`
/// open): plans with [`build`], runs in graph or eager mode as `ge.graphMode` says.
#[derive(Debug, Clone)]
pub struct AclDevice(pub Arc<AclBackend>);

impl AclDevice {
    /// Opens `device_id` (see [`AclBackend::open`]).
    pub fn open(device_id: i32) -> Result<AclDevice> {
        Ok(AclDevice(Arc::new(AclBackend::open(device_id)?)))
    }
}

impl Backend for AclDevice {
    fn name(&self) -> &'static str {
        "acl"
    }
    fn plan(&self, prepared: Prepared, sig: &Signature) -> Result<Box<dyn BackendPlan>> {
        Ok(Box::new(build(&self.0, prepared, sig.clone())?))
    }
}

impl BackendPlan for AclPlan {
    fn report(&self) -> &CompileReport {
        AclPlan::report(self)
    }
    fn run(&self, inputs: Vec<Value>, options: &Options) -> Result<Vec<Value>> {
        AclPlan::run(
            self,
            inputs,
            if options.graph_mode {
                RunMode::Graph
            } else {
                RunMode::Eager
            },
        )
    }
}
