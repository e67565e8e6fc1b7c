//! Attribute values between Python and es-core: typed (`attr_from_py`), inferred from the value
//! (`attr_infer_from_py`), back to Python (`attr_to_py`), and setting a node's attribute.

use crate::convert::{
    dtype_from_py, dtype_to_py, is_bool_like, is_dtype_enum, is_float_like, is_int_like,
};
use crate::errors::IntoPyResult;
use crate::tensor::{tensor_from_py, wrap_tensor};
use es_core::{AttrType, AttrValue, Graph as CoreGraph, NodeId};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyList, PyString, PyTuple};

fn int(v: &Bound<'_, PyAny>, what: &str) -> PyResult<i64> {
    if !is_int_like(v) {
        return Err(PyTypeError::new_err(format!(
            "{what} must be an int, got {}",
            v.get_type().name()?
        )));
    }
    let i = if v.is_instance_of::<PyInt>() {
        v.clone()
    } else {
        v.call_method0("__index__")?
    };
    i.extract::<i64>()
        .map_err(|_| PyValueError::new_err(format!("{what} does not fit in int64")))
}

fn float(v: &Bound<'_, PyAny>, what: &str) -> PyResult<f32> {
    if !(v.is_instance_of::<PyFloat>() || is_int_like(v) || is_float_like(v)) {
        return Err(PyTypeError::new_err(format!(
            "{what} must be a float, got {}",
            v.get_type().name()?
        )));
    }
    v.extract::<f64>().map(|x| x as f32)
}

fn boolean(v: &Bound<'_, PyAny>, what: &str) -> PyResult<bool> {
    if !is_bool_like(v) {
        return Err(PyTypeError::new_err(format!(
            "{what} must be a bool, got {}",
            v.get_type().name()?
        )));
    }
    v.is_truthy()
}

fn list<'py>(v: &Bound<'py, PyAny>, what: &str) -> PyResult<Vec<Bound<'py, PyAny>>> {
    if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        Ok(v.try_iter()?.collect::<PyResult<Vec<_>>>()?)
    } else {
        Err(PyTypeError::new_err(format!(
            "{what} must be a list, got {}",
            v.get_type().name()?
        )))
    }
}

/// Converts a Python value to an attribute of a known type; errors name `what`.
pub fn attr_from_py(v: &Bound<'_, PyAny>, ty: AttrType, what: &str) -> PyResult<AttrValue> {
    Ok(match ty {
        AttrType::Int => AttrValue::Int(int(v, what)?),
        AttrType::Float => AttrValue::Float(float(v, what)?),
        AttrType::Bool => AttrValue::Bool(boolean(v, what)?),
        AttrType::String => {
            if !v.is_instance_of::<PyString>() {
                return Err(PyTypeError::new_err(format!(
                    "{what} must be a str, got {}",
                    v.get_type().name()?
                )));
            }
            AttrValue::String(v.extract()?)
        }
        AttrType::Type => AttrValue::Type(dtype_from_py(v)?),
        AttrType::ListInt => AttrValue::ListInt(
            list(v, what)?
                .iter()
                .map(|x| int(x, what))
                .collect::<PyResult<_>>()?,
        ),
        AttrType::ListFloat => AttrValue::ListFloat(
            list(v, what)?
                .iter()
                .map(|x| float(x, what))
                .collect::<PyResult<_>>()?,
        ),
        AttrType::ListBool => AttrValue::ListBool(
            list(v, what)?
                .iter()
                .map(|x| {
                    boolean(x, what)
                        .map_err(|_| PyTypeError::new_err(format!("{what} must be a list of bool")))
                })
                .collect::<PyResult<_>>()?,
        ),
        AttrType::ListType => AttrValue::ListType(
            list(v, what)?
                .iter()
                .map(dtype_from_py)
                .collect::<PyResult<_>>()?,
        ),
        AttrType::ListListInt => AttrValue::ListListInt(
            list(v, what)?
                .iter()
                .map(|row| {
                    list(row, what)?
                        .iter()
                        .map(|x| int(x, what))
                        .collect::<PyResult<Vec<_>>>()
                })
                .collect::<PyResult<_>>()?,
        ),
        AttrType::ListString => AttrValue::ListString(
            list(v, what)?
                .iter()
                .map(|x| {
                    if x.is_instance_of::<PyString>() {
                        x.extract::<String>()
                    } else {
                        Err(PyTypeError::new_err(format!(
                            "{what} must be a list of str"
                        )))
                    }
                })
                .collect::<PyResult<_>>()?,
        ),
        AttrType::Tensor => AttrValue::Tensor(tensor_from_py(v)?),
    })
}

/// The attribute type of a scalar Python value (numpy scalars included), if it is one.
fn scalar_attr_type(v: &Bound<'_, PyAny>) -> Option<AttrType> {
    if is_bool_like(v) {
        Some(AttrType::Bool)
    } else if is_dtype_enum(v) {
        Some(AttrType::Type)
    } else if is_int_like(v) {
        Some(AttrType::Int)
    } else if is_float_like(v) {
        Some(AttrType::Float)
    } else if v.is_instance_of::<PyString>() {
        Some(AttrType::String)
    } else {
        None
    }
}

/// Infers the attribute type of a Python value (the Pythonic `set_attr`).
pub fn attr_infer_from_py(v: &Bound<'_, PyAny>, what: &str) -> PyResult<AttrValue> {
    if let Some(ty) = scalar_attr_type(v) {
        return attr_from_py(v, ty, what);
    }
    if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        let items = list(v, what)?;
        let Some(first) = items.first() else {
            return Ok(AttrValue::ListInt(Vec::new()));
        };
        let ty = match scalar_attr_type(first) {
            Some(AttrType::Bool) => AttrType::ListBool,
            Some(AttrType::Type) => AttrType::ListType,
            Some(AttrType::Int) if items.iter().any(is_float_like) => AttrType::ListFloat,
            Some(AttrType::Int) => AttrType::ListInt,
            Some(AttrType::Float) => AttrType::ListFloat,
            Some(AttrType::String) => AttrType::ListString,
            _ if first.is_instance_of::<PyList>() || first.is_instance_of::<PyTuple>() => {
                AttrType::ListListInt
            }
            _ => return Err(unsupported_attr(v, what)),
        };
        // A list whose items do not all fit the first one's type is GE's ValueError.
        return attr_from_py(v, ty, what).map_err(|e| {
            if e.is_instance_of::<PyTypeError>(v.py()) {
                unsupported_attr(v, what)
            } else {
                e
            }
        });
    }
    if let Ok(t) = tensor_from_py(v) {
        return Ok(AttrValue::Tensor(t));
    }
    Err(unsupported_attr(v, what))
}

/// GE's ValueError and wording (ge.graph._attr) for a value no attribute type takes.
fn unsupported_attr(v: &Bound<'_, PyAny>, what: &str) -> PyErr {
    let shown = |o: PyResult<Bound<'_, pyo3::types::PyString>>| {
        o.map(|s| s.to_string()).unwrap_or_else(|_| "?".to_string())
    };
    PyValueError::new_err(format!(
        "{what}: Unsupported attribute type: {} for value: {}",
        shown(v.get_type().str()),
        shown(v.str())
    ))
}

/// The Python form of an attribute value.
pub fn attr_to_py(py: Python<'_>, a: &AttrValue) -> PyResult<PyObject> {
    Ok(match a {
        AttrValue::Int(v) => v.into_pyobject(py)?.into_any().unbind(),
        AttrValue::Float(v) => (*v as f64).into_pyobject(py)?.into_any().unbind(),
        AttrValue::String(v) => v.into_pyobject(py)?.into_any().unbind(),
        AttrValue::Bool(v) => PyBool::new(py, *v).to_owned().into_any().unbind(),
        AttrValue::Type(d) => dtype_to_py(py, *d)?,
        AttrValue::ListInt(v) => PyList::new(py, v)?.into_any().unbind(),
        AttrValue::ListFloat(v) => PyList::new(py, v.iter().map(|x| *x as f64))?
            .into_any()
            .unbind(),
        AttrValue::ListBool(v) => PyList::new(py, v)?.into_any().unbind(),
        AttrValue::ListType(v) => {
            let items = v
                .iter()
                .map(|d| dtype_to_py(py, *d))
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_any().unbind()
        }
        AttrValue::ListListInt(v) => PyList::new(
            py,
            v.iter()
                .map(|r| PyList::new(py, r).map(|l| l.unbind()))
                .collect::<PyResult<Vec<_>>>()?,
        )?
        .into_any()
        .unbind(),
        AttrValue::ListString(v) => PyList::new(py, v)?.into_any().unbind(),
        AttrValue::Tensor(t) => wrap_tensor(py, t.clone())?,
    })
}

/// An attribute value from Python, of a named type or inferred.
pub fn attr_value(value: &Bound<'_, PyAny>, ty: Option<&str>, name: &str) -> PyResult<AttrValue> {
    let what = format!("attribute '{name}'");
    match ty {
        Some(t) => attr_from_py(value, es_core::AttrType::parse(t).py()?, &what),
        None => attr_infer_from_py(value, &what),
    }
}

/// Sets a node attribute: an IR attribute (type-checked) when the prototype declares it,
/// otherwise a private attribute.
pub fn set_node_attr(
    g: &mut CoreGraph,
    id: NodeId,
    name: &str,
    value: &Bound<'_, PyAny>,
    ty: Option<&str>,
) -> PyResult<()> {
    let reg = es_core::ops::global_registry();
    let n = g
        .node_mut(id)
        .map_err(|_| PyRuntimeError::new_err("the node has been removed from its graph"))?;
    let ir = reg.get(&n.op_type).and_then(|p| p.attr(name).cloned());
    match ir {
        Some(def) => {
            let a = attr_from_py(value, def.ty, &format!("{}: attribute '{name}'", n.op_type))?;
            n.attrs.insert(name.to_string(), a);
        }
        None => {
            let a = attr_value(value, ty, name)?;
            n.private_attrs.insert(name.to_string(), a);
        }
    }
    Ok(())
}
