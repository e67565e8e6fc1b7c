//! The builder side of the C ABI: `EsCGraphBuilder`, `EsCTensorHolder`, graph inputs, Const
//! helpers, descriptions, outputs, control edges, private attributes and the build.
//!
//! Ownership follows GE: the builder owns every holder (and every array of holders) it hands
//! out, until `EsDestroyGraphBuilder`; the caller owns the `EsCGraph` that
//! `EsBuildGraphAndReset` returns. Holders made before a build belong to the graph that was
//! built: using one afterwards is refused.

use crate::error::{guard, guard_status, CError, CResult};
use crate::ffi::{c_str, c_str_opt, dtype, format, slice, C_DataType, C_Format};
use crate::graph::EsCGraph;
use es_core::types::Element;
use es_core::{AttrValue, DataType, Format, GraphBuilder, NodeId, OutPort, Shape, Tensor};
use std::ffi::{c_char, CString};
use std::ptr;

/// The graph builder of the C API (opaque to C).
pub struct EsCGraphBuilder {
    pub(crate) b: GraphBuilder,
    /// Bumped by every build: holders of an earlier generation are stale.
    generation: u64,
    /// Boxed: C holds pointers to them, which must not move when the vector grows.
    #[allow(clippy::vec_box)]
    holders: Vec<Box<EsCTensorHolder>>,
    arrays: Vec<Box<[*mut EsCTensorHolder]>>,
    /// The node handles `EsGetProducer` gave out, one per node (boxed, as holders).
    #[allow(clippy::vec_box)]
    nodes: Vec<Box<EsCNode>>,
}

/// A node of the graph being built, as `EsGetProducer` gives it (GE's `EsCNode`, opaque to C):
/// owned by the builder, one per node, and of no further use after the build, as holders.
pub struct EsCNode {
    owner: *mut EsCGraphBuilder,
    generation: u64,
    node: NodeId,
    /// The node's name and type (neither changes once the node is made).
    name: CString,
    op_type: CString,
}

/// One output of a node (or a node without outputs, usable for control edges only).
pub struct EsCTensorHolder {
    owner: *mut EsCGraphBuilder,
    generation: u64,
    pub(crate) node: NodeId,
    /// None for a node without outputs.
    index: Option<u32>,
}

impl EsCGraphBuilder {
    fn new(name: &str) -> Self {
        EsCGraphBuilder {
            b: GraphBuilder::new(name),
            generation: 0,
            holders: Vec::new(),
            arrays: Vec::new(),
            nodes: Vec::new(),
        }
    }

    /// A new holder for `node`'s output `index`, owned by this builder.
    pub(crate) fn holder(&mut self, node: NodeId, index: Option<u32>) -> *mut EsCTensorHolder {
        let owner: *mut EsCGraphBuilder = self;
        let mut h = Box::new(EsCTensorHolder {
            owner,
            generation: self.generation,
            node,
            index,
        });
        let p: *mut EsCTensorHolder = &mut *h;
        self.holders.push(h);
        p
    }

    /// An array of holders owned by this builder (a dynamic output), with its length.
    pub(crate) fn holder_array(&mut self, ports: &[OutPort]) -> (*mut *mut EsCTensorHolder, i64) {
        let mut arr: Box<[*mut EsCTensorHolder]> = ports
            .iter()
            .map(|p| self.holder(p.node, Some(p.index)))
            .collect();
        let n = arr.len() as i64;
        let p = if arr.is_empty() {
            ptr::null_mut()
        } else {
            arr.as_mut_ptr()
        };
        self.arrays.push(arr);
        (p, n)
    }
}

impl EsCTensorHolder {
    /// The output port; an error for a node without outputs.
    pub(crate) fn port(&self) -> CResult<OutPort> {
        self.index
            .map(|index| OutPort {
                node: self.node,
                index,
            })
            .ok_or_else(|| {
                CError::arg(
                    "this tensor holder is a node without outputs: use it for control edges only",
                )
            })
    }
}

/// The builder behind a non-NULL builder pointer.
pub(crate) unsafe fn builder_mut<'a>(b: *mut EsCGraphBuilder) -> CResult<&'a mut EsCGraphBuilder> {
    b.as_mut()
        .ok_or_else(|| CError::arg("the graph builder is NULL"))
}

/// A holder and its (live) builder; `what` names the argument in errors.
pub(crate) unsafe fn holder_ref<'a>(
    h: *const EsCTensorHolder,
    what: &str,
) -> CResult<(&'a EsCTensorHolder, &'a mut EsCGraphBuilder)> {
    let h = h.as_ref().ok_or_else(|| {
        // A NULL holder usually comes from a failed call just before: say why it failed.
        CError::arg(match crate::error::previous_failure() {
            Some(prev) => format!("{what} is NULL (the call before failed: {prev})"),
            None => format!("{what} is NULL"),
        })
    })?;
    let b = builder_mut(h.owner)?;
    if h.generation != b.generation {
        return Err(CError::arg(format!(
            "{what} belongs to a graph that was already built (EsBuildGraphAndReset); create it again"
        )));
    }
    Ok((h, b))
}

/// The node and output description a holder names, for setters.
unsafe fn out_desc_mut<'a>(
    h: *mut EsCTensorHolder,
) -> CResult<(&'a mut es_core::TensorDesc, NodeId, &'a mut GraphBuilder)> {
    let (h, b) = holder_ref(h, "tensor")?;
    let port = h.port()?;
    let gb: *mut GraphBuilder = &mut b.b;
    let node = (*gb).graph_mut().node_mut(port.node)?;
    let slot = node
        .outputs
        .get_mut(port.index as usize)
        .ok_or_else(|| CError::arg(format!("node '{}' has no output {}", node.name, port.index)))?;
    Ok((&mut slot.desc, port.node, &mut *gb))
}

// ---- builder lifetime -------------------------------------------------------------------

/// A graph builder; `name` may be NULL ("graph"). Destroy it with `EsDestroyGraphBuilder`.
#[no_mangle]
pub unsafe extern "C" fn EsCreateGraphBuilder(name: *const c_char) -> *mut EsCGraphBuilder {
    guard(ptr::null_mut(), || {
        let name = c_str_opt(name, "name")?.unwrap_or_else(|| "graph".to_string());
        Ok(Box::into_raw(Box::new(EsCGraphBuilder::new(&name))))
    })
}

/// Frees a builder and every holder it handed out. NULL is ignored.
#[no_mangle]
pub unsafe extern "C" fn EsDestroyGraphBuilder(graph: *mut EsCGraphBuilder) {
    crate::ffi::drop_box(graph)
}

/// Finishes the graph: checks it, hands it to the caller (free it with `EsDestroyGraph`) and
/// leaves the builder empty for a new graph of the same name. NULL on failure.
#[no_mangle]
pub unsafe extern "C" fn EsBuildGraphAndReset(graph: *mut EsCGraphBuilder) -> *mut EsCGraph {
    guard(ptr::null_mut(), || {
        let b = builder_mut(graph)?;
        let g = b.b.build_and_reset()?;
        b.generation += 1;
        Ok(EsCGraph::into_raw(g))
    })
}

/// The builder that owns `tensor` (not a new reference). NULL on failure.
#[no_mangle]
pub unsafe extern "C" fn EsGetOwnerBuilder(tensor: *mut EsCTensorHolder) -> *mut EsCGraphBuilder {
    guard(ptr::null_mut(), || {
        Ok(holder_ref(tensor, "tensor")?.1 as *mut _)
    })
}

/// The node that produces `tensor` (GE's `EsGetProducer`), owned by the builder: the same
/// handle for every holder of that node. NULL on failure.
#[no_mangle]
pub unsafe extern "C" fn EsGetProducer(tensor: *mut EsCTensorHolder) -> *mut EsCNode {
    guard(ptr::null_mut(), || {
        let (h, b) = holder_ref(tensor, "tensor")?;
        let owner: *mut EsCGraphBuilder = b;
        let generation = b.generation;
        if let Some(n) = b
            .nodes
            .iter_mut()
            .find(|n| n.node == h.node && n.generation == generation)
        {
            return Ok(&mut **n as *mut EsCNode);
        }
        let node = b.b.graph().node(h.node)?;
        let text = |s: &str| CString::new(s.replace('\0', "\\0")).unwrap_or_default();
        let mut n = Box::new(EsCNode {
            owner,
            generation,
            node: h.node,
            name: text(&node.name),
            op_type: text(&node.op_type),
        });
        let p: *mut EsCNode = &mut *n;
        b.nodes.push(n);
        Ok(p)
    })
}

/// A node handle whose builder has not built its graph since.
unsafe fn node_ref<'a>(node: *const EsCNode) -> CResult<&'a EsCNode> {
    let n = node.as_ref().ok_or_else(|| CError::arg("node is NULL"))?;
    if n.generation != builder_mut(n.owner)?.generation {
        return Err(CError::arg(
            "node belongs to a graph that was already built (EsBuildGraphAndReset)",
        ));
    }
    Ok(n)
}

/// The name of a node from `EsGetProducer` (owned by the builder). NULL on failure.
#[no_mangle]
pub unsafe extern "C" fn EsGetNodeName(node: *const EsCNode) -> *const c_char {
    guard(ptr::null(), || Ok(node_ref(node)?.name.as_ptr()))
}

/// The operator type of a node from `EsGetProducer` (owned by the builder). NULL on failure.
#[no_mangle]
pub unsafe extern "C" fn EsGetNodeType(node: *const EsCNode) -> *const c_char {
    guard(ptr::null(), || Ok(node_ref(node)?.op_type.as_ptr()))
}

// ---- inputs -------------------------------------------------------------------------------

unsafe fn create_input(
    graph: *mut EsCGraphBuilder,
    index: i64,
    name: Option<String>,
    op_type: &str,
    dt: DataType,
    fmt: Format,
    shape: Shape,
) -> CResult<*mut EsCTensorHolder> {
    let b = builder_mut(graph)?;
    let port = b.b.create_input(index, name, op_type, dt, fmt, shape)?;
    Ok(b.holder(port.node, Some(port.index)))
}

/// Graph input `index` (a `Data` node named `input_<index>`), float, ND, its shape given by
/// the tensor fed at run time.
#[no_mangle]
pub unsafe extern "C" fn EsCreateGraphInput(
    graph: *mut EsCGraphBuilder,
    index: i64,
) -> *mut EsCTensorHolder {
    guard(ptr::null_mut(), || {
        create_input(
            graph,
            index,
            None,
            "Data",
            DataType::FLOAT,
            Format::ND,
            Shape::unknown_rank(),
        )
    })
}

/// The seed's name for [`EsCreateGraphInput`].
#[no_mangle]
pub unsafe extern "C" fn EsCreateInput(
    graph: *mut EsCGraphBuilder,
    index: i64,
) -> *mut EsCTensorHolder {
    EsCreateGraphInput(graph, index)
}

/// Graph input `index` with every detail: `name` NULL gives `input_<index>`, `type` NULL gives
/// `Data` (else `Data`, `RefData`, `AippData` or `AnyData`); `shape` NULL leaves the shape to
/// the fed tensor, a non-NULL `shape` with `dim_num` 0 is a scalar.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn EsCreateGraphInputWithDetails(
    graph: *mut EsCGraphBuilder,
    index: i64,
    name: *const c_char,
    r#type: *const c_char,
    data_type: C_DataType,
    format_: C_Format,
    shape: *const i64,
    dim_num: i64,
) -> *mut EsCTensorHolder {
    guard(ptr::null_mut(), || {
        let name = c_str_opt(name, "name")?;
        let ty = c_str_opt(r#type, "type")?.unwrap_or_else(|| "Data".to_string());
        let shape = if shape.is_null() {
            if dim_num != 0 {
                return Err(CError::arg("shape is NULL but dim_num is not 0"));
            }
            Shape::unknown_rank()
        } else {
            Shape::from_slice(slice(shape, dim_num, "shape")?)
        };
        create_input(
            graph,
            index,
            name,
            &ty,
            dtype(data_type)?,
            format(format_)?,
            shape,
        )
    })
}

/// A `Variable` node named `name` with input index `index`.
#[no_mangle]
pub unsafe extern "C" fn EsCreateVariable(
    graph: *mut EsCGraphBuilder,
    index: i32,
    name: *const c_char,
) -> *mut EsCTensorHolder {
    guard(ptr::null_mut(), || {
        let b = builder_mut(graph)?;
        let name = c_str(name, "name")?;
        let port = b.b.create_variable(index as i64, &name)?;
        Ok(b.holder(port.node, Some(port.index)))
    })
}

// ---- descriptions ---------------------------------------------------------------------------

/// Sets the data type of a tensor's description. 0 on success.
#[no_mangle]
pub unsafe extern "C" fn EsSetDataType(tensor: *mut EsCTensorHolder, data_type: C_DataType) -> u32 {
    guard_status(|| {
        let dt = dtype(data_type)?;
        let (d, node, b) = out_desc_mut(tensor)?;
        d.dtype = dt;
        b.description_set(node)?;
        Ok(())
    })
}

/// Sets the format of a tensor's description. 0 on success.
#[no_mangle]
pub unsafe extern "C" fn EsSetFormat(tensor: *mut EsCTensorHolder, format_: C_Format) -> u32 {
    guard_status(|| {
        let f = format(format_)?;
        let (d, node, b) = out_desc_mut(tensor)?;
        d.format = f;
        b.description_set(node)?;
        Ok(())
    })
}

/// Sets the shape of a tensor's description (`dim_num` 0: a scalar). 0 on success.
#[no_mangle]
pub unsafe extern "C" fn EsSetShape(
    tensor: *mut EsCTensorHolder,
    shape: *const i64,
    dim_num: i64,
) -> u32 {
    guard_status(|| {
        let dims = slice(shape, dim_num, "shape")?;
        Shape::validate(dims)?;
        let (d, node, b) = out_desc_mut(tensor)?;
        d.set_shape(Shape::from_slice(dims));
        b.description_set(node)?;
        Ok(())
    })
}

/// GE's symbolic shape of a tensor (`shape[i]` an expression such as "s0"): ge-rs has no
/// symbolic shapes, so after checking the arguments this fails with `ES_ERR_NOT_SUPPORTED`.
#[no_mangle]
pub unsafe extern "C" fn EsSetOriginSymbolShape(
    tensor: *mut EsCTensorHolder,
    shape: *const *const c_char,
    dim_num: i64,
) -> u32 {
    guard_status(|| {
        holder_ref(tensor, "tensor")?.0.port()?;
        for (i, &d) in slice(shape, dim_num, "shape")?.iter().enumerate() {
            c_str(d, &format!("shape[{i}]"))?;
        }
        Err(CError::new(
            crate::error::ES_ERR_NOT_SUPPORTED,
            "not supported: EsSetOriginSymbolShape: ge-rs has no symbolic shapes (set the dims with EsSetShape, -1 for an unknown one)",
        ))
    })
}

// ---- constants ------------------------------------------------------------------------------

unsafe fn create_const<T: Element>(
    graph: *mut EsCGraphBuilder,
    value: *const T,
    dims: Option<&[i64]>,
) -> CResult<*mut EsCTensorHolder> {
    let b = builder_mut(graph)?;
    let dims = dims.unwrap_or(&[]);
    Shape::validate(dims)?;
    let n = dims.iter().product::<i64>();
    let values = slice(value, n, "value")?;
    let t = Tensor::from_values(values, dims.to_vec())?;
    let port = b.b.create_const(t, None)?;
    Ok(b.holder(port.node, Some(port.index)))
}

macro_rules! const_fns {
    ($($t:ty => $cst:ident, $vec:ident, $scalar:ident;)*) => {$(
        /// A Const of shape `dims` (`dim_num` 0: a scalar) holding `value` (copied).
        #[no_mangle]
        pub unsafe extern "C" fn $cst(
            graph: *mut EsCGraphBuilder,
            value: *const $t,
            dims: *const i64,
            dim_num: i64,
        ) -> *mut EsCTensorHolder {
            guard(ptr::null_mut(), || {
                let dims = slice(dims, dim_num, "dims")?;
                create_const(graph, value, Some(dims))
            })
        }
        /// A one-dimensional Const of `dim` elements.
        #[no_mangle]
        pub unsafe extern "C" fn $vec(
            graph: *mut EsCGraphBuilder,
            value: *const $t,
            dim: i64,
        ) -> *mut EsCTensorHolder {
            guard(ptr::null_mut(), || create_const(graph, value, Some(&[dim])))
        }
        /// A scalar Const.
        #[no_mangle]
        pub unsafe extern "C" fn $scalar(graph: *mut EsCGraphBuilder, value: $t) -> *mut EsCTensorHolder {
            guard(ptr::null_mut(), || create_const(graph, &value, None))
        }
    )*};
}

const_fns! {
    i64 => EsCreateConstInt64, EsCreateVectorInt64, EsCreateScalarInt64;
    i32 => EsCreateConstInt32, EsCreateVectorInt32, EsCreateScalarInt32;
    u64 => EsCreateConstUInt64, EsCreateVectorUInt64, EsCreateScalarUInt64;
    u32 => EsCreateConstUInt32, EsCreateVectorUInt32, EsCreateScalarUInt32;
    f32 => EsCreateConstFloat, EsCreateVectorFloat, EsCreateScalarFloat;
}

// ---- outputs and control edges ------------------------------------------------------------

/// Makes `tensor` graph output `output_index`. 0 on success.
#[no_mangle]
pub unsafe extern "C" fn EsSetGraphOutput(tensor: *mut EsCTensorHolder, output_index: i64) -> u32 {
    guard_status(|| {
        let (h, b) = holder_ref(tensor, "tensor")?;
        let index = usize::try_from(output_index)
            .map_err(|_| CError::arg(format!("output_index must be >= 0, got {output_index}")))?;
        b.b.set_output(h.port()?, index)?;
        Ok(())
    })
}

/// The seed's name for [`EsSetGraphOutput`].
#[no_mangle]
pub unsafe extern "C" fn EsSetOutput(tensor: *mut EsCTensorHolder, output_index: i64) -> u32 {
    EsSetGraphOutput(tensor, output_index)
}

/// Control edges from the producer of each `src_ctrl_tensors[i]` to the producer of
/// `dest_ctrl_tensor`. 0 on success.
#[no_mangle]
pub unsafe extern "C" fn EsAddControlEdge(
    dest_ctrl_tensor: *mut EsCTensorHolder,
    src_ctrl_tensors: *mut *mut EsCTensorHolder,
    ctrl_tensors_num: i64,
) -> u32 {
    guard_status(|| {
        let (dst, b) = holder_ref(dest_ctrl_tensor, "dest_ctrl_tensor")?;
        let owner: *const EsCGraphBuilder = b;
        let mut srcs = Vec::new();
        for (i, &s) in slice(src_ctrl_tensors, ctrl_tensors_num, "src_ctrl_tensors")?
            .iter()
            .enumerate()
        {
            let (s, sb) = holder_ref(s, &format!("src_ctrl_tensors[{i}]"))?;
            if !ptr::eq(sb, owner) {
                return Err(CError::arg(format!(
                    "src_ctrl_tensors[{i}] belongs to another graph builder"
                )));
            }
            srcs.push(s.node);
        }
        b.b.add_control_dependency(dst.node, &srcs)?;
        Ok(())
    })
}

// ---- private attributes -------------------------------------------------------------------

unsafe fn set_graph_attr(graph: *mut EsCGraphBuilder, name: *const c_char, v: AttrValue) -> u32 {
    guard_status(|| {
        let b = builder_mut(graph)?;
        let name = c_str(name, "attr_name")?;
        b.b.graph_mut().attrs.insert(name, v);
        Ok(())
    })
}

unsafe fn set_tensor_attr(tensor: *mut EsCTensorHolder, name: *const c_char, v: AttrValue) -> u32 {
    guard_status(|| {
        let name = c_str(name, "attr_name")?;
        let (d, _, _) = out_desc_mut(tensor)?;
        d.attrs.insert(name, v);
        Ok(())
    })
}

unsafe fn set_node_attr(tensor: *mut EsCTensorHolder, name: *const c_char, v: AttrValue) -> u32 {
    guard_status(|| {
        let name = c_str(name, "attr_name")?;
        let (h, b) = holder_ref(tensor, "tensor")?;
        let n = b.b.graph_mut().node_mut(h.node)?;
        n.private_attrs.insert(name, v);
        Ok(())
    })
}

macro_rules! attr_setters {
    ($($t:ty, $conv:expr => $g:ident, $tn:ident, $n:ident;)*) => {$(
        /// Sets a private attribute of the graph. 0 on success.
        #[no_mangle]
        pub unsafe extern "C" fn $g(graph: *mut EsCGraphBuilder, attr_name: *const c_char, value: $t) -> u32 {
            match $conv(value) {
                Ok(v) => set_graph_attr(graph, attr_name, v),
                Err(e) => guard_status(|| Err(e)),
            }
        }
        /// Sets a private attribute of a tensor (its producer's output description).
        #[no_mangle]
        pub unsafe extern "C" fn $tn(tensor: *mut EsCTensorHolder, attr_name: *const c_char, value: $t) -> u32 {
            match $conv(value) {
                Ok(v) => set_tensor_attr(tensor, attr_name, v),
                Err(e) => guard_status(|| Err(e)),
            }
        }
        /// Sets a private attribute of a tensor's producer node.
        #[no_mangle]
        pub unsafe extern "C" fn $n(tensor: *mut EsCTensorHolder, attr_name: *const c_char, value: $t) -> u32 {
            match $conv(value) {
                Ok(v) => set_node_attr(tensor, attr_name, v),
                Err(e) => guard_status(|| Err(e)),
            }
        }
    )*};
}

fn int_attr(v: i64) -> CResult<AttrValue> {
    Ok(AttrValue::Int(v))
}
fn bool_attr(v: bool) -> CResult<AttrValue> {
    Ok(AttrValue::Bool(v))
}
unsafe fn string_attr(v: *const c_char) -> CResult<AttrValue> {
    c_str(v, "value").map(AttrValue::String)
}

attr_setters! {
    i64, int_attr => EsSetInt64AttrForGraph, EsSetInt64AttrForTensor, EsSetInt64AttrForNode;
    *const c_char, |v| string_attr(v) => EsSetStringAttrForGraph, EsSetStringAttrForTensor, EsSetStringAttrForNode;
    bool, bool_attr => EsSetBoolAttrForGraph, EsSetBoolAttrForTensor, EsSetBoolAttrForNode;
}
