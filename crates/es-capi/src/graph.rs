//! `EsCGraph` (a built graph: save, load, serialise, dump) and `EsCSession` (runs graphs on
//! the CPU through ge-runtime).

use crate::error::{guard, guard_status, CError, CResult};
use crate::ffi::{c_str, slice};
use crate::tensor::EsCTensor;
use es_core::{dump, serialize, Graph};
use ge_runtime::{Session, Value};
use std::collections::BTreeMap;
use std::ffi::{c_char, CString};
use std::ptr;

/// A built graph (opaque to C), owned by the caller.
pub struct EsCGraph(pub(crate) Graph);

impl EsCGraph {
    pub(crate) fn into_raw(g: Graph) -> *mut EsCGraph {
        Box::into_raw(Box::new(EsCGraph(g)))
    }
    pub(crate) unsafe fn get<'a>(p: *const EsCGraph, what: &str) -> CResult<&'a Graph> {
        p.as_ref()
            .map(|g| &g.0)
            .ok_or_else(|| CError::arg(format!("{what} is NULL")))
    }
    /// Takes ownership of a graph the caller handed over (a subgraph argument).
    pub(crate) unsafe fn take(p: *mut EsCGraph, what: &str) -> CResult<Graph> {
        if p.is_null() {
            return Err(CError::arg(format!("{what} is NULL")));
        }
        Ok(Box::from_raw(p).0)
    }
}

/// `kTxt` of GE's `DumpFormat`: ge-rs's complete text form.
pub const ES_DUMP_TXT: i32 = 1;
/// `kReadable` of GE's `DumpFormat`.
pub const ES_DUMP_READABLE: i32 = 2;

/// Frees a graph. NULL is ignored.
#[no_mangle]
pub unsafe extern "C" fn EsDestroyGraph(graph: *mut EsCGraph) {
    crate::ffi::drop_box(graph)
}

/// Writes the graph to `path` in ge-rs's native format (that of the Python API's `Graph.save` /
/// `Graph.load`; GE's `.air` files are another format).
#[no_mangle]
pub unsafe extern "C" fn EsGraphSaveToFile(graph: *const EsCGraph, path: *const c_char) -> u32 {
    guard_status(|| {
        let g = EsCGraph::get(graph, "graph")?;
        serialize::save(g, std::path::Path::new(&c_str(path, "path")?))?;
        Ok(())
    })
}

/// Reads a graph written by [`EsGraphSaveToFile`] (or the Python API). NULL on failure.
#[no_mangle]
pub unsafe extern "C" fn EsGraphLoadFromFile(path: *const c_char) -> *mut EsCGraph {
    guard(ptr::null_mut(), || {
        let g = serialize::load(std::path::Path::new(&c_str(path, "path")?))?;
        Ok(EsCGraph::into_raw(g))
    })
}

/// Serialises the graph into a new buffer (`*data`, `*size` bytes); free it with
/// `EsFreeBuffer`.
#[no_mangle]
pub unsafe extern "C" fn EsGraphSerialize(
    graph: *const EsCGraph,
    data: *mut *mut u8,
    size: *mut i64,
) -> u32 {
    guard_status(|| {
        let g = EsCGraph::get(graph, "graph")?;
        if data.is_null() || size.is_null() {
            return Err(CError::arg("data and size must not be NULL"));
        }
        let bytes = serialize::to_bytes(g)?.into_boxed_slice();
        *size = bytes.len() as i64;
        *data = Box::into_raw(bytes).cast::<u8>();
        Ok(())
    })
}

/// A graph from bytes made by [`EsGraphSerialize`]. NULL on failure.
#[no_mangle]
pub unsafe extern "C" fn EsGraphDeserialize(data: *const u8, size: i64) -> *mut EsCGraph {
    guard(ptr::null_mut(), || {
        let g = serialize::from_bytes(slice(data, size, "data")?)?;
        Ok(EsCGraph::into_raw(g))
    })
}

/// Frees a buffer from [`EsGraphSerialize`]. NULL is ignored.
#[no_mangle]
pub unsafe extern "C" fn EsFreeBuffer(data: *mut u8, size: i64) {
    crate::error::guard_quiet(|| {
        if !data.is_null() {
            let n = usize::try_from(size).map_err(|_| CError::arg("size must be >= 0"))?;
            drop(Box::from_raw(ptr::slice_from_raw_parts_mut(data, n)));
        }
        Ok(())
    })
}

/// The graph as text: `ES_DUMP_READABLE` (2) or `ES_DUMP_TXT` (1), GE's `DumpFormat` values.
/// Free the string with `EsFreeString`. NULL on failure.
#[no_mangle]
pub unsafe extern "C" fn EsGraphDumpToString(graph: *const EsCGraph, format: i32) -> *mut c_char {
    guard(ptr::null_mut(), || {
        let g = EsCGraph::get(graph, "graph")?;
        let text = match format {
            ES_DUMP_READABLE => dump::readable(g),
            ES_DUMP_TXT => dump::txt(g),
            0 => return Err(CError::new(
                crate::error::ES_ERR_NOT_SUPPORTED,
                "not supported: the kOnnx dump in the C API (use the Python API's dump_to_stream)",
            )),
            f => {
                return Err(CError::arg(format!(
                    "format must be 1 (kTxt) or 2 (kReadable), got {f}"
                )))
            }
        };
        Ok(CString::new(text)
            .map_err(|_| CError::arg("the dump holds a NUL byte"))?
            .into_raw())
    })
}

/// Frees a string from [`EsGraphDumpToString`]. NULL is ignored.
#[no_mangle]
pub unsafe extern "C" fn EsFreeString(s: *mut c_char) {
    crate::error::guard_quiet(|| {
        if !s.is_null() {
            drop(CString::from_raw(s));
        }
        Ok(())
    })
}

/// A session (opaque to C): graphs by id, run on the CPU.
pub struct EsCSession(Session);

/// A session with `option_num` options (`keys[i]` = `values[i]`, GE's option names such as
/// `ge.graphRunMode`). Free it with `EsDestroySession`. NULL on failure.
#[no_mangle]
pub unsafe extern "C" fn EsCreateSession(
    keys: *const *const c_char,
    values: *const *const c_char,
    option_num: i64,
) -> *mut EsCSession {
    guard(ptr::null_mut(), || {
        let keys = slice(keys, option_num, "keys")?;
        let values = slice(values, option_num, "values")?;
        let mut opts = BTreeMap::new();
        for (i, (&k, &v)) in keys.iter().zip(values).enumerate() {
            opts.insert(
                c_str(k, &format!("keys[{i}]"))?,
                c_str(v, &format!("values[{i}]"))?,
            );
        }
        Ok(Box::into_raw(Box::new(EsCSession(Session::new(&opts)?))))
    })
}

/// Frees a session. NULL is ignored.
#[no_mangle]
pub unsafe extern "C" fn EsDestroySession(session: *mut EsCSession) {
    crate::ffi::drop_box(session)
}

/// Adds a copy of `graph` under `graph_id` (the caller keeps `graph`).
#[no_mangle]
pub unsafe extern "C" fn EsSessionAddGraph(
    session: *mut EsCSession,
    graph_id: u32,
    graph: *const EsCGraph,
) -> u32 {
    guard_status(|| {
        let s = session
            .as_ref()
            .ok_or_else(|| CError::arg("session is NULL"))?;
        let g = EsCGraph::get(graph, "graph")?;
        s.0.add_graph(graph_id, g.clone(), &BTreeMap::new())?;
        Ok(())
    })
}

/// Runs graph `graph_id` on `input_num` inputs (in input-index order; the caller keeps them).
/// Writes the number of outputs to `*output_num` and, when it is at most `output_capacity`,
/// one new tensor per output to `outputs` (the caller frees each with `EsDestroyEsCTensor`);
/// with too small a capacity it fails and writes nothing else, so a call with capacity 0 asks
/// for the count. 0 on success.
#[no_mangle]
pub unsafe extern "C" fn EsSessionRunGraph(
    session: *mut EsCSession,
    graph_id: u32,
    inputs: *const *const EsCTensor,
    input_num: i64,
    outputs: *mut *mut EsCTensor,
    output_capacity: i64,
    output_num: *mut i64,
) -> u32 {
    guard_status(|| {
        let s = session
            .as_ref()
            .ok_or_else(|| CError::arg("session is NULL"))?;
        if output_num.is_null() {
            return Err(CError::arg("output_num is NULL"));
        }
        let mut vals = Vec::new();
        for (i, &t) in slice(inputs, input_num, "inputs")?.iter().enumerate() {
            vals.push(Value::from_tensor(EsCTensor::get(
                t,
                &format!("inputs[{i}]"),
            )?)?);
        }
        let outs = s.0.run_graph(graph_id, vals)?;
        *output_num = outs.len() as i64;
        if (outs.len() as i64) > output_capacity {
            return Err(CError::arg(format!(
                "the graph has {} outputs but output_capacity is {output_capacity}",
                outs.len()
            )));
        }
        if !outs.is_empty() && outputs.is_null() {
            return Err(CError::arg("outputs is NULL"));
        }
        let tensors = outs
            .iter()
            .map(Value::to_tensor)
            .collect::<Result<Vec<_>, _>>()?;
        for (i, t) in tensors.into_iter().enumerate() {
            *outputs.add(i) = EsCTensor::into_raw(t);
        }
        Ok(())
    })
}
