//! GE's own graph file (`.air`): the `ModelDef` protobuf of `ge_ir.proto` (CANN metadef).
//!
//! The messages are generated at build time from `proto/ge_air.proto`, ge-rs's own description
//! of that format's wire layout (field names and numbers as GE's). What GE's serializer writes
//! is followed:
//!
//! - `ModelDef.graph[0]` is the main graph; subgraphs are further `GraphDef`s, referenced by
//!   name from `OpDef.subgraph_name`;
//! - `OpDef.input` lists `"src:index"` per data input (`""` for an unconnected one), then
//!   `"src:-1"` per control input (`"^src"` is read too);
//! - `TensorDescriptor.dtype` holds the value of ge_ir.proto's own `DataType` enum (GE maps
//!   `ge::DataType` through a table; `DT_FLOAT` is 1 there), `layout` the format's name; the
//!   origin format and shape are the tensor attributes `origin_format` / `origin_shape` (+
//!   `origin_shape_initialized`), the placement the attribute `placement`;
//! - an attribute of type `Type` is `AttrDef.dt` with the `ge::DataType` value, a `ListType`
//!   the proto values in `ListValue.dt`;
//! - input and output names are GE's `_input_name_key`/`_input_name_value` (and `_output_…`)
//!   attributes, the IR attribute names `_ir_attr_names`; all other attributes are private.
//!
//! What GE's format cannot hold (the IR index of each port instance and subgraph slot, the
//! original name of a renamed subgraph, `ops_version`, `parent_node`, data types outside
//! GE's table) goes into extra fields with tags from 1000 on, which GE's parser keeps as
//! unknown fields and ignores, so that a ge-rs graph round-trips exactly.

use crate::error::{Error, Result};
use es_core::graph::{InputSlot, OutputSlot, SubgraphSlot};
use es_core::{
    AttrMap, AttrValue, DataType, Format, Graph, InPort, Node, OutPort, Placement, Shape, Tensor,
    TensorDesc,
};
use prost::Message;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

// ---------------------------------------------------------------------------------------
// Messages (generated from proto/ge_air.proto)
// ---------------------------------------------------------------------------------------

/// The code prost-build generated from `proto/ge_air.proto`.
#[allow(clippy::all)]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/ge.proto.rs"));
}

pub use generated::*;

use attr_def::list_value::ListValueType as Lt;
use attr_def::{ListValue, Value};

// ---------------------------------------------------------------------------------------
// Data types and formats
// ---------------------------------------------------------------------------------------

/// GE's table from `ge::DataType` to ge_ir.proto's `DataType` (serialization_util.cc).
const DTYPE_TABLE: &[(DataType, i32)] = &[
    (DataType::UNDEFINED, 0),
    (DataType::FLOAT, 1),
    (DataType::FLOAT16, 2),
    (DataType::INT8, 3),
    (DataType::UINT8, 4),
    (DataType::INT16, 5),
    (DataType::UINT16, 6),
    (DataType::INT32, 7),
    (DataType::INT64, 8),
    (DataType::UINT32, 9),
    (DataType::UINT64, 10),
    (DataType::BOOL, 11),
    (DataType::DOUBLE, 12),
    (DataType::STRING, 13),
    (DataType::DUAL_SUB_INT8, 14),
    (DataType::DUAL_SUB_UINT8, 15),
    (DataType::COMPLEX64, 16),
    (DataType::COMPLEX128, 17),
    (DataType::QINT8, 18),
    (DataType::QINT16, 19),
    (DataType::QINT32, 20),
    (DataType::QUINT8, 21),
    (DataType::QUINT16, 22),
    (DataType::RESOURCE, 23),
    (DataType::STRING_REF, 24),
    (DataType::DUAL, 25),
    (DataType::VARIANT, 26),
    (DataType::BF16, 27),
    (DataType::INT4, 28),
    (DataType::UINT1, 29),
    (DataType::INT2, 30),
    (DataType::UINT2, 31),
];

/// The ge_ir.proto value of a data type, if GE's table has one.
pub fn dtype_to_proto(dt: DataType) -> Option<i32> {
    DTYPE_TABLE.iter().find(|p| p.0 == dt).map(|p| p.1)
}

/// The data type of a ge_ir.proto value.
pub fn dtype_from_proto(v: i64) -> Option<DataType> {
    DTYPE_TABLE.iter().find(|p| p.1 as i64 == v).map(|p| p.0)
}

fn ge_dtype(v: i64, what: &str) -> Result<DataType> {
    DataType::from_value(v).map_err(|_| Error::tr(format!("{what}: {v} is not a GE data type")))
}

fn format_name(f: Format) -> &'static str {
    let n = f.name();
    n.strip_prefix("FORMAT_").unwrap_or(n)
}

fn parse_format(s: &str, what: &str) -> Result<Format> {
    if s.is_empty() {
        return Ok(Format::ND);
    }
    if s.contains(':') {
        return Err(Error::unsupported(format!(
            "{what}: format '{s}' has a sub-format or C0 part, which ge-rs does not keep"
        )));
    }
    Format::from_name(s).map_err(|_| Error::tr(format!("{what}: unknown format '{s}'")))
}

// ---------------------------------------------------------------------------------------
// IR -> ModelDef
// ---------------------------------------------------------------------------------------

/// Version of the ge-rs extension fields.
pub const GE_RS_AIR_VERSION: u32 = 1;

/// Tensor attributes GE itself uses for fields of the IR's description.
const DESC_RESERVED: &[&str] = &[
    "origin_format",
    "origin_shape",
    "origin_shape_initialized",
    "placement",
];

/// Node attributes GE's serializer uses for its own metadata (stripped when reading).
const NODE_RESERVED: &[&str] = &[
    "_ir_attr_names",
    "_ir_inputs_key",
    "_ir_inputs_value",
    "_ir_outputs_key",
    "_ir_outputs_value",
    "_input_name_key",
    "_input_name_value",
    "_output_name_key",
    "_output_name_value",
    "_opt_input",
    "_src_out_peer_index_for_ge_txt_load",
];

fn list(val_type: Lt, f: impl FnOnce(&mut ListValue)) -> AttrDef {
    let mut l = ListValue {
        val_type: val_type as i32,
        ..Default::default()
    };
    f(&mut l);
    AttrDef {
        value: Some(Value::List(l)),
    }
}

fn strings_attr(v: impl IntoIterator<Item = String>) -> AttrDef {
    list(Lt::VtListString, |l| {
        l.s = v.into_iter().map(String::into_bytes).collect()
    })
}

fn ints_attr(v: impl IntoIterator<Item = i64>) -> AttrDef {
    list(Lt::VtListInt, |l| l.i = v.into_iter().collect())
}

/// An attribute value as GE's `AttrDef`.
pub fn attr_to_def(v: &AttrValue) -> Result<AttrDef> {
    let value = match v {
        AttrValue::Int(i) => Value::I(*i),
        AttrValue::Float(f) => Value::F(*f),
        AttrValue::String(s) => Value::S(s.clone().into_bytes()),
        AttrValue::Bool(b) => Value::B(*b),
        AttrValue::Type(t) => Value::Dt(t.value() as i64),
        AttrValue::ListInt(v) => return Ok(ints_attr(v.iter().copied())),
        AttrValue::ListFloat(v) => return Ok(list(Lt::VtListFloat, |l| l.f = v.clone())),
        AttrValue::ListBool(v) => return Ok(list(Lt::VtListBool, |l| l.b = v.clone())),
        AttrValue::ListString(v) => return Ok(strings_attr(v.iter().cloned())),
        AttrValue::ListType(v) => {
            return Ok(list(Lt::VtListDataType, |l| {
                l.dt = v
                    .iter()
                    .map(|t| dtype_to_proto(*t).unwrap_or(0) as i64)
                    .collect();
                if v.iter().any(|t| dtype_to_proto(*t).is_none()) {
                    l.ge_rs_dt = v.iter().map(|t| t.value() as i64).collect();
                }
            }))
        }
        AttrValue::ListListInt(v) => Value::ListListInt(attr_def::ListListInt {
            list_list_i: v
                .iter()
                .map(|r| attr_def::list_list_int::ListInt { list_i: r.clone() })
                .collect(),
        }),
        AttrValue::Tensor(t) => Value::T(tensor_to_def(t)?),
    };
    Ok(AttrDef { value: Some(value) })
}

fn attrs_to_map(a: &AttrMap, out: &mut BTreeMap<String, AttrDef>, what: &str) -> Result<()> {
    for (k, v) in a {
        let d = attr_to_def(v).map_err(|e| e.context(&format!("{what}, attribute '{k}'")))?;
        out.insert(k.clone(), d);
    }
    Ok(())
}

/// A tensor description as GE's `TensorDescriptor`.
pub fn desc_to_def(d: &TensorDesc, what: &str) -> Result<TensorDescriptor> {
    let mut attr = BTreeMap::new();
    for k in DESC_RESERVED {
        if d.attrs.contains_key(*k) {
            return Err(Error::unsupported(format!(
                "{what}: the tensor attribute '{k}' has the name GE's format uses for a field \
                 of the description"
            )));
        }
    }
    attrs_to_map(&d.attrs, &mut attr, what)?;
    attr.insert(
        "origin_format".into(),
        AttrDef {
            value: Some(Value::S(format_name(d.origin_format).as_bytes().to_vec())),
        },
    );
    attr.insert(
        "origin_shape".into(),
        ints_attr(d.origin_shape.dims().iter().copied()),
    );
    attr.insert(
        "origin_shape_initialized".into(),
        AttrDef {
            value: Some(Value::B(true)),
        },
    );
    if d.placement != Placement::HOST {
        attr.insert(
            "placement".into(),
            AttrDef {
                value: Some(Value::I(d.placement.value() as i64)),
            },
        );
    }
    let proto_dt = dtype_to_proto(d.dtype);
    Ok(TensorDescriptor {
        dtype: proto_dt.unwrap_or(0),
        ge_rs_dtype: if proto_dt.is_none() {
            Some(d.dtype.value())
        } else {
            None
        },
        shape: Some(ShapeDef {
            dim: d.shape.dims().to_vec(),
        }),
        layout: format_name(d.format).to_string(),
        attr,
        ..Default::default()
    })
}

fn tensor_to_def(t: &Tensor) -> Result<TensorDef> {
    Ok(TensorDef {
        desc: Some(desc_to_def(&t.desc, "tensor")?),
        data: t.data.as_ref().clone(),
    })
}

struct Writer {
    graphs: Vec<GraphDef>,
    used: HashSet<String>,
}

impl Writer {
    fn unique(&mut self, name: &str) -> String {
        let mut cand = name.to_string();
        let mut k = 1usize;
        while self.used.contains(&cand) {
            cand = format!("{name}_{k}");
            k += 1;
        }
        self.used.insert(cand.clone());
        cand
    }

    /// Writes `g` (name already chosen) at `slot`, then its subgraphs.
    fn graph(&mut self, g: &Graph, slot: usize) -> Result<()> {
        let ctx = |n: &Node| format!("graph '{}', node '{}'", g.name, n.name);
        let reg = es_core::ops::global_registry();
        let mut ops = Vec::with_capacity(g.node_count());
        for (pos, id) in g.nodes().into_iter().enumerate() {
            let n = g.node(id)?;
            let what = ctx(n);
            let mut op = OpDef {
                name: n.name.to_string(),
                r#type: n.op_type.to_string(),
                id: pos as i64,
                ..Default::default()
            };
            for inp in &n.inputs {
                op.input.push(match inp.source {
                    Some(p) => format!("{}:{}", g.node(p.node)?.name, p.index),
                    None => String::new(),
                });
            }
            for c in &n.in_control {
                op.input.push(format!("{}:-1", g.node(*c)?.name));
            }
            for (i, inp) in n.inputs.iter().enumerate() {
                op.input_desc
                    .push(desc_to_def(&inp.desc, &format!("{what}, input {i}"))?);
                op.ge_rs_input_ir_index.push(inp.ir_index);
            }
            for (i, o) in n.outputs.iter().enumerate() {
                op.output_desc
                    .push(desc_to_def(&o.desc, &format!("{what}, output {i}"))?);
                op.ge_rs_output_ir_index.push(o.ir_index);
            }
            for k in n.attrs.keys().chain(n.private_attrs.keys()) {
                if NODE_RESERVED.contains(&k.as_str()) {
                    return Err(Error::unsupported(format!(
                        "{what}: the attribute '{k}' has a name GE's format reserves"
                    )));
                }
            }
            if let Some(k) = n.attrs.keys().find(|k| n.private_attrs.contains_key(*k)) {
                return Err(Error::unsupported(format!(
                    "{what}: '{k}' is both an IR and a private attribute; GE's format holds one \
                     attribute per name"
                )));
            }
            attrs_to_map(&n.attrs, &mut op.attr, &what)?;
            attrs_to_map(&n.private_attrs, &mut op.attr, &what)?;
            // IR attribute names, in the prototype's order where there is one.
            let mut ir_names: Vec<String> = Vec::new();
            if let Some(p) = reg.get(&n.op_type) {
                ir_names.extend(
                    p.attrs
                        .iter()
                        .filter(|a| n.attrs.contains_key(&a.name))
                        .map(|a| a.name.clone()),
                );
            }
            for k in n.attrs.keys() {
                if !ir_names.contains(k) {
                    ir_names.push(k.clone());
                }
            }
            if !ir_names.is_empty() {
                op.attr
                    .insert("_ir_attr_names".into(), strings_attr(ir_names));
            }
            // GE names each input and output once: `_<kind>_name_key` (the names) and
            // `_<kind>_name_value` (their indices).
            let port_names: [(&str, Vec<String>); 2] = [
                (
                    "input",
                    n.inputs.iter().map(|i| i.name.to_string()).collect(),
                ),
                (
                    "output",
                    n.outputs.iter().map(|o| o.name.to_string()).collect(),
                ),
            ];
            for (kind, names) in port_names {
                if names.is_empty() {
                    continue;
                }
                if names.iter().collect::<HashSet<_>>().len() != names.len() {
                    return Err(Error::unsupported(format!(
                        "{what}: two {kind}s have the same name; GE's format names each once"
                    )));
                }
                let count = names.len() as i64;
                op.attr
                    .insert(format!("_{kind}_name_key"), strings_attr(names));
                op.attr
                    .insert(format!("_{kind}_name_value"), ints_attr(0..count));
            }
            for s in &n.subgraphs {
                let gname = self.unique(&s.graph.name);
                op.subgraph_name.push(gname.clone());
                op.ge_rs_subgraph_slot.push(s.name.to_string());
                op.ge_rs_subgraph_ir_index.push(s.ir_index);
                let idx = self.graphs.len();
                self.graphs.push(GraphDef {
                    ge_rs_name: (gname != s.graph.name).then(|| s.graph.name.clone()),
                    name: gname,
                    ..Default::default()
                });
                self.graph(&s.graph, idx).map_err(|e| {
                    e.context(&format!("subgraph '{}' of node '{}'", s.name, n.name))
                })?;
            }
            ops.push(op);
        }
        let mut input = Vec::new();
        for id in g.input_nodes() {
            input.push(format!("{}:0", g.node(id)?.name));
        }
        let mut output = Vec::new();
        for p in &g.outputs {
            output.push(format!("{}:{}", g.node(p.node)?.name, p.index));
        }
        let mut attr = BTreeMap::new();
        attrs_to_map(&g.attrs, &mut attr, &format!("graph '{}'", g.name))?;
        let gd = &mut self.graphs[slot];
        gd.input = input;
        gd.output = output;
        gd.op = ops;
        gd.attr = attr;
        gd.ge_rs_ops_version = Some(g.ops_version.clone());
        gd.ge_rs_parent_node = g.parent_node.as_ref().map(|p| p.to_string());
        Ok(())
    }
}

/// The graph as GE's `ModelDef`.
pub fn to_model_def(g: &Graph) -> Result<ModelDef> {
    let d = es_core::serialize::subgraph_depth(g);
    if d > es_core::serialize::MAX_SUBGRAPH_DEPTH {
        return Err(Error::unsupported(format!(
            "saving graph '{}': subgraphs nested {d} levels deep (at most {})",
            g.name,
            es_core::serialize::MAX_SUBGRAPH_DEPTH
        )));
    }
    let mut w = Writer {
        graphs: Vec::new(),
        used: HashSet::new(),
    };
    let name = w.unique(&g.name);
    w.graphs.push(GraphDef {
        name,
        ..Default::default()
    });
    w.graph(g, 0)?;
    Ok(ModelDef {
        name: g.name.clone(),
        version: 1,
        graph: w.graphs,
        ge_rs_version: Some(GE_RS_AIR_VERSION),
        ..Default::default()
    })
}

/// The graph as the bytes of a `.air` file.
pub fn to_bytes(g: &Graph) -> Result<Vec<u8>> {
    Ok(to_model_def(g)?.encode_to_vec())
}

/// Writes the graph to a `.air` file.
pub fn save(g: &Graph, path: &Path) -> Result<()> {
    let bytes = to_bytes(g)?;
    std::fs::write(path, bytes).map_err(|e| Error::Io(format!("{}: {e}", path.display())))
}

// ---------------------------------------------------------------------------------------
// ModelDef -> IR
// ---------------------------------------------------------------------------------------

/// Largest `.air` file read (GE's own reader stops at 2 GiB).
pub const MAX_AIR_BYTES: u64 = (2 << 30) - 1;

fn list_kind(l: &ListValue) -> &'static str {
    match Lt::try_from(l.val_type).unwrap_or(Lt::VtListNone) {
        Lt::VtListBytes => "list of bytes",
        Lt::VtListTensorDesc => "list of tensor descriptions",
        Lt::VtListTensor => "list of tensors",
        Lt::VtListGraph => "list of graphs",
        Lt::VtListNamedAttrs => "list of named attributes",
        _ => "list",
    }
}

/// A GE `AttrDef` as an attribute value; `None` for an unset one (GE skips those too).
pub fn attr_from_def(d: &AttrDef, what: &str) -> Result<Option<AttrValue>> {
    let unsupported = |kind: &str| {
        Err(Error::unsupported(format!(
            "{what}: GE attribute of kind {kind}, which the ge-rs IR has no type for"
        )))
    };
    let v = match &d.value {
        None => return Ok(None),
        Some(Value::S(s)) => AttrValue::String(
            String::from_utf8(s.clone())
                .map_err(|_| Error::tr(format!("{what}: a string attribute is not UTF-8")))?,
        ),
        Some(Value::I(i)) => AttrValue::Int(*i),
        Some(Value::F(f)) => AttrValue::Float(*f),
        Some(Value::B(b)) => AttrValue::Bool(*b),
        Some(Value::Dt(t)) => AttrValue::Type(ge_dtype(*t, what)?),
        Some(Value::ListListInt(l)) => {
            AttrValue::ListListInt(l.list_list_i.iter().map(|r| r.list_i.clone()).collect())
        }
        Some(Value::T(t)) => AttrValue::Tensor(tensor_from_def(t, what)?),
        Some(Value::List(l)) => match Lt::try_from(l.val_type) {
            Ok(Lt::VtListNone) => return Ok(None),
            Ok(Lt::VtListInt) => AttrValue::ListInt(l.i.clone()),
            Ok(Lt::VtListFloat) => AttrValue::ListFloat(l.f.clone()),
            Ok(Lt::VtListBool) => AttrValue::ListBool(l.b.clone()),
            Ok(Lt::VtListString) => AttrValue::ListString(
                l.s.iter()
                    .map(|s| String::from_utf8(s.clone()))
                    .collect::<std::result::Result<_, _>>()
                    .map_err(|_| Error::tr(format!("{what}: a string in a list is not UTF-8")))?,
            ),
            Ok(Lt::VtListDataType) => {
                if !l.ge_rs_dt.is_empty() {
                    if l.ge_rs_dt.len() != l.dt.len() {
                        return Err(Error::tr(format!(
                            "{what}: {} data types but {} ge-rs data types",
                            l.dt.len(),
                            l.ge_rs_dt.len()
                        )));
                    }
                    AttrValue::ListType(
                        l.ge_rs_dt
                            .iter()
                            .map(|v| ge_dtype(*v, what))
                            .collect::<Result<_>>()?,
                    )
                } else {
                    AttrValue::ListType(
                        l.dt.iter()
                            .map(|v| {
                                dtype_from_proto(*v).ok_or_else(|| {
                                    Error::tr(format!("{what}: {v} is not a GE proto data type"))
                                })
                            })
                            .collect::<Result<_>>()?,
                    )
                }
            }
            Ok(
                Lt::VtListBytes
                | Lt::VtListTensorDesc
                | Lt::VtListTensor
                | Lt::VtListGraph
                | Lt::VtListNamedAttrs,
            ) => return unsupported(list_kind(l)),
            Err(_) => {
                let t = l.val_type;
                return Err(Error::tr(format!("{what}: unknown list type {t}")));
            }
        },
        Some(Value::Bt(_)) => return unsupported("bytes"),
        Some(Value::Func(_)) => return unsupported("named attributes"),
        Some(Value::Td(_)) => return unsupported("tensor description"),
        Some(Value::G(_)) => return unsupported("graph"),
        Some(Value::ListListFloat(_)) => return unsupported("list of lists of floats"),
    };
    Ok(Some(v))
}

fn attrs_from_map(m: &BTreeMap<String, AttrDef>, skip: &[&str], what: &str) -> Result<AttrMap> {
    let mut out = AttrMap::new();
    for (k, d) in m {
        if skip.contains(&k.as_str()) {
            continue;
        }
        if let Some(v) = attr_from_def(d, &format!("{what}, attribute '{k}'"))? {
            out.insert(k.clone(), v);
        }
    }
    Ok(out)
}

/// A GE `TensorDescriptor` as a tensor description.
pub fn desc_from_def(d: &TensorDescriptor, what: &str) -> Result<TensorDesc> {
    let dtype = match d.ge_rs_dtype {
        Some(v) => ge_dtype(v as i64, what)?,
        None => dtype_from_proto(d.dtype as i64)
            .ok_or_else(|| Error::tr(format!("{what}: {} is not a GE proto data type", d.dtype)))?,
    };
    let dims = d.shape.as_ref().map(|s| s.dim.clone()).unwrap_or_default();
    let shape = shape_from(&dims, what)?;
    let format = parse_format(&d.layout, what)?;
    let mut desc = TensorDesc::new(dtype, shape.clone());
    desc.format = format;
    desc.origin_format = match d.attr.get("origin_format").map(|a| &a.value) {
        Some(Some(Value::S(s))) => parse_format(&String::from_utf8_lossy(s), what)?,
        None => format,
        Some(_) => {
            return Err(Error::tr(format!(
                "{what}: the tensor attribute 'origin_format' is not a string"
            )))
        }
    };
    let initialized = !matches!(
        d.attr.get("origin_shape_initialized").map(|a| &a.value),
        Some(Some(Value::B(false)))
    );
    desc.origin_shape = match d.attr.get("origin_shape").map(|a| &a.value) {
        Some(Some(Value::List(l))) if initialized => shape_from(&l.i, what)?,
        Some(Some(Value::List(_))) | None => shape,
        Some(_) => {
            return Err(Error::tr(format!(
                "{what}: the tensor attribute 'origin_shape' is not a list of ints"
            )))
        }
    };
    desc.placement = match d.attr.get("placement").map(|a| &a.value) {
        None => Placement::HOST,
        Some(Some(Value::I(v))) => Placement::from_value(*v)
            .map_err(|_| Error::tr(format!("{what}: unknown placement {v}")))?,
        Some(_) => {
            return Err(Error::tr(format!(
                "{what}: the tensor attribute 'placement' is not an int"
            )))
        }
    };
    desc.attrs = attrs_from_map(&d.attr, DESC_RESERVED, what)?;
    Ok(desc)
}

fn shape_from(dims: &[i64], what: &str) -> Result<Shape> {
    let bad =
        dims.len() > 64 || dims.iter().any(|&d| d < -2) || (dims.contains(&-2) && dims.len() != 1);
    if bad {
        return Err(Error::tr(format!("{what}: invalid shape {dims:?}")));
    }
    Ok(Shape::from_slice(dims))
}

fn tensor_from_def(t: &TensorDef, what: &str) -> Result<Tensor> {
    let d = t
        .desc
        .as_ref()
        .ok_or_else(|| Error::tr(format!("{what}: a tensor without a description")))?;
    let desc = desc_from_def(d, what)?;
    Tensor::new(desc, t.data.clone()).map_err(|e| Error::tr(format!("{what}: {e}")))
}

/// Parses `"name:index"` (GE's form) or `"^name"`; `None` index for a control input.
fn parse_ref(s: &str, what: &str) -> Result<(String, Option<u32>)> {
    if let Some(n) = s.strip_prefix('^') {
        return Ok((n.to_string(), None));
    }
    let (name, idx) = s
        .rsplit_once(':')
        .ok_or_else(|| Error::tr(format!("{what}: '{s}' is not of the form 'node:index'")))?;
    let idx: i64 = idx
        .parse()
        .map_err(|_| Error::tr(format!("{what}: '{s}' has no valid output index")))?;
    match idx {
        -1 => Ok((name.to_string(), None)),
        0..=0xFFFF_FFFF => Ok((name.to_string(), Some(idx as u32))),
        _ => Err(Error::tr(format!(
            "{what}: '{s}' has an invalid output index"
        ))),
    }
}

struct Reader<'a> {
    model: &'a ModelDef,
    by_name: HashMap<&'a str, usize>,
    used: Vec<bool>,
    ge_rs: bool,
}

/// The IR index of each port instance of a GE file without ge-rs's fields: from the
/// prototype (a dynamic input `x` has instances `x0`, `x1`, ...), else the position.
fn ir_indexes(defs: Option<&[es_core::ops::IoDef]>, names: &[String]) -> Vec<u32> {
    names
        .iter()
        .enumerate()
        .map(|(pos, n)| {
            defs.and_then(|defs| {
                defs.iter().position(|d| {
                    d.name == *n
                        || (d.kind == es_core::ops::IoKind::Dynamic
                            && n.strip_prefix(d.name.as_str()).is_some_and(|r| {
                                !r.is_empty() && r.bytes().all(|b| b.is_ascii_digit())
                            }))
                })
            })
            .unwrap_or(pos) as u32
        })
        .collect()
}

/// Port names from GE's `_<kind>_name_key`/`_value` attributes, else from the prototype, else
/// `<kind><i>`.
fn port_names(
    op: &OpDef,
    kind: &str,
    count: usize,
    defs: Option<&[es_core::ops::IoDef]>,
    what: &str,
) -> Result<Vec<String>> {
    let key = op.attr.get(&format!("_{kind}_name_key"));
    let val = op.attr.get(&format!("_{kind}_name_value"));
    let mut names: Vec<Option<String>> = vec![None; count];
    if let (
        Some(AttrDef {
            value: Some(Value::List(k)),
        }),
        Some(AttrDef {
            value: Some(Value::List(v)),
        }),
    ) = (key, val)
    {
        if k.s.len() != v.i.len() {
            return Err(Error::tr(format!(
                "{what}: {} {kind} names but {} indexes",
                k.s.len(),
                v.i.len()
            )));
        }
        for (n, &i) in k.s.iter().zip(&v.i) {
            let slot = usize::try_from(i)
                .ok()
                .and_then(|i| names.get_mut(i))
                .ok_or_else(|| Error::tr(format!("{what}: {kind} name index {i} out of range")))?;
            *slot = Some(
                String::from_utf8(n.clone())
                    .map_err(|_| Error::tr(format!("{what}: a {kind} name is not UTF-8")))?,
            );
        }
    }
    let from_proto = |i: usize| -> Option<String> {
        let defs = defs?;
        if defs.len() == count && defs.iter().all(|d| d.kind != es_core::ops::IoKind::Dynamic) {
            Some(defs[i].name.clone())
        } else {
            None
        }
    };
    Ok(names
        .into_iter()
        .enumerate()
        .map(|(i, n)| {
            n.or_else(|| from_proto(i))
                .unwrap_or_else(|| format!("{kind}{i}"))
        })
        .collect())
}

impl<'a> Reader<'a> {
    fn graph(&mut self, idx: usize, depth: usize, owner: Option<&str>) -> Result<Graph> {
        if depth > es_core::serialize::MAX_SUBGRAPH_DEPTH {
            return Err(Error::tr(format!(
                "subgraphs nested more than {} levels deep",
                es_core::serialize::MAX_SUBGRAPH_DEPTH
            )));
        }
        let gd = &self.model.graph[idx];
        let gname = gd.ge_rs_name.clone().unwrap_or_else(|| gd.name.clone());
        let gwhat = format!("graph '{gname}'");
        let mut g = Graph::new(gname.clone());
        if let Some(v) = &gd.ge_rs_ops_version {
            g.ops_version = v.clone();
        }
        g.parent_node = if self.ge_rs {
            gd.ge_rs_parent_node.as_deref().map(Into::into)
        } else {
            owner.map(Into::into)
        };
        g.attrs = attrs_from_map(&gd.attr, &[], &gwhat)?;
        let reg = es_core::ops::global_registry();
        g.reserve(gd.op.len());
        for op in &gd.op {
            let what = format!("{gwhat}, node '{}'", op.name);
            let proto = reg.get(&op.r#type);
            let mut node = Node::new(op.name.as_str(), op.r#type.as_str());
            // The names and IR indices of the inputs or outputs (`kind`).
            let io = |kind: &str| -> Result<_> {
                let input = kind == "input";
                let (count, stored) = if input {
                    (op.input_desc.len(), &op.ge_rs_input_ir_index)
                } else {
                    (op.output_desc.len(), &op.ge_rs_output_ir_index)
                };
                let defs = proto.map(|p| if input { &p.inputs } else { &p.outputs }.as_slice());
                let names = port_names(op, kind, count, defs, &what)?;
                let ir = self.ir_index_list(stored, defs, &names, kind, &what)?;
                Ok((names, ir))
            };
            let (in_names, in_ir) = io("input")?;
            let (out_names, out_ir) = io("output")?;
            for (i, d) in op.input_desc.iter().enumerate() {
                let desc = desc_from_def(d, &format!("{what}, input {i}"))?;
                node.inputs
                    .push(InputSlot::new(in_names[i].as_str(), in_ir[i], desc));
            }
            for (i, d) in op.output_desc.iter().enumerate() {
                node.outputs.push(OutputSlot {
                    name: out_names[i].as_str().into(),
                    ir_index: out_ir[i],
                    desc: desc_from_def(d, &format!("{what}, output {i}"))?.into(),
                    consumers: Vec::new(),
                });
            }
            let all = attrs_from_map(&op.attr, NODE_RESERVED, &what)?;
            let ir_names: Option<HashSet<String>> = match op.attr.get("_ir_attr_names") {
                Some(AttrDef {
                    value: Some(Value::List(l)),
                }) => Some(
                    l.s.iter()
                        .map(|s| String::from_utf8_lossy(s).into_owned())
                        .collect(),
                ),
                _ => None,
            };
            for (k, v) in all {
                let is_ir = match &ir_names {
                    Some(s) => s.contains(&k),
                    None => proto.is_some_and(|p| p.attr(&k).is_some()),
                };
                if is_ir {
                    node.attrs.insert(k, v);
                } else {
                    node.private_attrs.insert(k, v);
                }
            }
            // Subgraphs.
            let nsub = op.subgraph_name.iter().filter(|s| !s.is_empty()).count();
            if self.ge_rs
                && (op.ge_rs_subgraph_slot.len() != nsub
                    || op.ge_rs_subgraph_ir_index.len() != nsub)
            {
                return Err(Error::tr(format!(
                    "{what}: {nsub} subgraphs but {} slot names and {} slot indexes",
                    op.ge_rs_subgraph_slot.len(),
                    op.ge_rs_subgraph_ir_index.len()
                )));
            }
            for (k, sname) in op
                .subgraph_name
                .iter()
                .filter(|s| !s.is_empty())
                .enumerate()
            {
                let sidx = *self.by_name.get(sname.as_str()).ok_or_else(|| {
                    Error::tr(format!("{what}: subgraph '{sname}' is not in the file"))
                })?;
                if sidx == 0 || self.used[sidx] {
                    return Err(Error::tr(format!(
                        "{what}: subgraph '{sname}' is used more than once (or is the main graph)"
                    )));
                }
                self.used[sidx] = true;
                let sub = self
                    .graph(sidx, depth + 1, Some(&op.name))
                    .map_err(|e| e.context(&format!("subgraph '{sname}' of node '{}'", op.name)))?;
                let (slot, ir_index) = if self.ge_rs {
                    (
                        op.ge_rs_subgraph_slot[k].clone(),
                        op.ge_rs_subgraph_ir_index[k],
                    )
                } else {
                    subgraph_slot(proto.map(|p| p.subgraphs.as_slice()), nsub, k)
                };
                node.subgraphs.push(SubgraphSlot {
                    name: slot.as_str().into(),
                    ir_index,
                    graph: sub,
                });
            }
            g.add_node(node)
                .map_err(|e| Error::from(e).context(&what))?;
        }
        // Edges.
        for op in &gd.op {
            let what = format!("{gwhat}, node '{}'", op.name);
            let dst = g
                .find(&op.name)
                .ok_or_else(|| Error::tr(format!("{what}: node missing")))?;
            let mut slot = 0usize;
            for s in &op.input {
                if s.is_empty() {
                    slot += 1;
                    continue;
                }
                let (src_name, idx) = parse_ref(s, &what)?;
                let src = g.find(&src_name).ok_or_else(|| {
                    Error::tr(format!("{what}: input '{s}' names no node of the graph"))
                })?;
                match idx {
                    None => g
                        .add_control_edge(src, dst)
                        .map_err(|e| Error::from(e).context(&what))?,
                    Some(i) => {
                        if slot >= op.input_desc.len() {
                            return Err(Error::tr(format!(
                                "{what}: more data inputs than the {} input descriptions",
                                op.input_desc.len()
                            )));
                        }
                        g.add_data_edge(
                            OutPort {
                                node: src,
                                index: i,
                            },
                            InPort {
                                node: dst,
                                index: slot as u32,
                            },
                        )
                        .map_err(|e| Error::from(e).context(&what))?;
                        slot += 1;
                    }
                }
            }
        }
        for s in &gd.input {
            let (n, _) = parse_ref(s, &gwhat)?;
            if g.find(&n).is_none() {
                return Err(Error::tr(format!(
                    "{gwhat}: graph input '{s}' names no node"
                )));
            }
        }
        for (i, s) in gd.output.iter().enumerate() {
            let (n, idx) = parse_ref(s, &gwhat)?;
            let node = g
                .find(&n)
                .ok_or_else(|| Error::tr(format!("{gwhat}: graph output '{s}' names no node")))?;
            let index =
                idx.ok_or_else(|| Error::tr(format!("{gwhat}: graph output '{s}' has no index")))?;
            g.set_output(i, OutPort { node, index })
                .map_err(|e| Error::from(e).context(&format!("{gwhat}, output {i}")))?;
        }
        Ok(g)
    }

    fn ir_index_list(
        &self,
        stored: &[u32],
        defs: Option<&[es_core::ops::IoDef]>,
        names: &[String],
        kind: &str,
        what: &str,
    ) -> Result<Vec<u32>> {
        if self.ge_rs {
            if stored.len() != names.len() {
                return Err(Error::tr(format!(
                    "{what}: {} {kind}s but {} IR indexes",
                    names.len(),
                    stored.len()
                )));
            }
            Ok(stored.to_vec())
        } else {
            Ok(ir_indexes(defs, names))
        }
    }
}

/// Slot name and IR index of the `k`-th of `n` subgraphs of a GE node, from the prototype.
fn subgraph_slot(defs: Option<&[es_core::ops::SubgraphDef]>, n: usize, k: usize) -> (String, u32) {
    if let Some(defs) = defs {
        if defs.len() == n {
            return (defs[k].name.clone(), k as u32);
        }
        if defs.len() == 1 {
            return (format!("{}{k}", defs[0].name), 0);
        }
    }
    (format!("subgraph{k}"), k as u32)
}

/// Reads GE's `ModelDef` into a graph.
pub fn from_model_def(m: &ModelDef) -> Result<Graph> {
    if m.graph.is_empty() {
        return Err(Error::tr("the .air model holds no graph"));
    }
    let mut by_name = HashMap::new();
    for (i, g) in m.graph.iter().enumerate() {
        if by_name.insert(g.name.as_str(), i).is_some() {
            return Err(Error::tr(format!(
                "the .air model holds two graphs named '{}'",
                g.name
            )));
        }
    }
    let mut r = Reader {
        model: m,
        by_name,
        used: vec![false; m.graph.len()],
        ge_rs: m.ge_rs_version.is_some(),
    };
    if let Some(v) = m.ge_rs_version {
        if v == 0 || v > GE_RS_AIR_VERSION {
            return Err(Error::tr(format!(
                "the .air file has ge-rs extension version {v}; this build reads 1..={GE_RS_AIR_VERSION}"
            )));
        }
    }
    r.used[0] = true;
    let g = r.graph(0, 0, None)?;
    if let Some(i) = r.used.iter().position(|u| !u) {
        return Err(Error::tr(format!(
            "graph '{}' of the .air model is not the subgraph of any node",
            m.graph[i].name
        )));
    }
    Ok(g)
}

/// Parses the bytes of a `.air` file.
pub fn from_bytes(b: &[u8]) -> Result<Graph> {
    if b.len() as u64 > MAX_AIR_BYTES {
        return Err(Error::tr(format!(
            "the .air file is {} bytes, larger than the limit of {MAX_AIR_BYTES} bytes",
            b.len()
        )));
    }
    let m = ModelDef::decode(b)
        .map_err(|e| Error::tr(format!("not a valid .air file (GE ModelDef protobuf): {e}")))?;
    from_model_def(&m)
}

/// Reads a `.air` file.
pub fn load(path: &Path) -> Result<Graph> {
    let meta =
        std::fs::metadata(path).map_err(|e| Error::Io(format!("{}: {e}", path.display())))?;
    if meta.len() > MAX_AIR_BYTES {
        return Err(Error::tr(format!(
            "{}: the .air file is {} bytes, larger than the limit of {MAX_AIR_BYTES} bytes",
            path.display(),
            meta.len()
        )));
    }
    let bytes = std::fs::read(path).map_err(|e| Error::Io(format!("{}: {e}", path.display())))?;
    from_bytes(&bytes).map_err(|e| e.context(&path.display().to_string()))
}
