//! Conversions of Python values to and from es-core's scalar kinds: data types, formats, shapes,
//! and the number-like checks (numpy scalars included) attribute conversion builds on.

use crate::errors::IntoPyResult;
use es_core::{DataType, Format};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::type_object::PyTypeCheck;
use pyo3::types::{PyBool, PyFloat, PyInt, PyString};
use pyo3::PyErrArguments;

static DATATYPE_CLS: GILOnceCell<PyObject> = GILOnceCell::new();
static INTEGRAL_CLS: GILOnceCell<PyObject> = GILOnceCell::new();
static REAL_CLS: GILOnceCell<PyObject> = GILOnceCell::new();
static NP_BOOL_CLS: GILOnceCell<PyObject> = GILOnceCell::new();

/// `isinstance(v, module.name)`, the class cached; false when it cannot be imported.
fn is_instance_of_cached(
    v: &Bound<'_, PyAny>,
    cell: &'static GILOnceCell<PyObject>,
    module: &str,
    name: &str,
) -> bool {
    let py = v.py();
    cell.get_or_try_init(py, || -> PyResult<PyObject> {
        Ok(py.import(module)?.getattr(name)?.unbind())
    })
    .and_then(|c| v.is_instance(c.bind(py)))
    .unwrap_or(false)
}

/// A Python bool or a numpy bool scalar.
pub fn is_bool_like(v: &Bound<'_, PyAny>) -> bool {
    v.is_instance_of::<PyBool>() || is_instance_of_cached(v, &NP_BOOL_CLS, "numpy", "bool_")
}

/// An int or an integer scalar such as numpy's (`numbers.Integral`); bools are not ints here.
pub fn is_int_like(v: &Bound<'_, PyAny>) -> bool {
    if v.is_instance_of::<PyBool>() {
        return false;
    }
    v.is_instance_of::<PyInt>() || is_instance_of_cached(v, &INTEGRAL_CLS, "numbers", "Integral")
}

/// A float or a non-integer real scalar such as numpy's float32 (`numbers.Real`).
pub fn is_float_like(v: &Bound<'_, PyAny>) -> bool {
    v.is_instance_of::<PyFloat>()
        || (!is_int_like(v)
            && !is_bool_like(v)
            && is_instance_of_cached(v, &REAL_CLS, "numbers", "Real"))
}

fn types_attr(
    py: Python<'_>,
    cell: &'static GILOnceCell<PyObject>,
    name: &str,
) -> PyResult<PyObject> {
    Ok(cell
        .get_or_try_init(py, || -> PyResult<PyObject> {
            Ok(py.import("ge.graph.types")?.getattr(name)?.unbind())
        })?
        .clone_ref(py))
}

/// A `ge.graph.types.DataType` member.
pub fn dtype_to_py(py: Python<'_>, d: DataType) -> PyResult<PyObject> {
    types_attr(py, &DATATYPE_CLS, "DataType")?.call1(py, (d.value(),))
}

/// A DataType from an int (or DataType member, an IntEnum) or a name such as "DT_FLOAT".
pub fn dtype_from_py(v: &Bound<'_, PyAny>) -> PyResult<DataType> {
    if v.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(
            "a data type must be a DataType, not a bool",
        ));
    }
    enum_from_py(
        v,
        DataType::from_value,
        DataType::from_name,
        "a data type must be a DataType",
    )
}

/// A Format from an int (or Format member, an IntEnum) or a name such as "FORMAT_ND".
pub fn format_from_py(v: &Bound<'_, PyAny>) -> PyResult<Format> {
    enum_from_py(
        v,
        Format::from_value,
        Format::from_name,
        "a format must be a Format",
    )
}

/// One of es-core's enums from its value (an int or IntEnum member) or its name; otherwise
/// `TypeError` "`{what}`, got `{type}`".
fn enum_from_py<T>(
    v: &Bound<'_, PyAny>,
    from_value: fn(i64) -> es_core::Result<T>,
    from_name: fn(&str) -> es_core::Result<T>,
    what: &str,
) -> PyResult<T> {
    if let Ok(i) = v.extract::<i64>() {
        return from_value(i).py();
    }
    if let Ok(s) = v.extract::<String>() {
        return from_name(&s).py();
    }
    Err(PyTypeError::new_err(format!(
        "{what}, got {}",
        v.get_type().name()?
    )))
}

pub fn shape_from_py(v: &Bound<'_, PyAny>) -> PyResult<Vec<i64>> {
    if v.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err("a shape must be a list of ints"));
    }
    let dims: Vec<i64> = v
        .extract()
        .map_err(|_| PyTypeError::new_err("a shape must be a list of ints"))?;
    es_core::Shape::validate(&dims).py()?;
    Ok(dims)
}

pub fn is_dtype_enum(v: &Bound<'_, PyAny>) -> bool {
    let py = v.py();
    types_attr(py, &DATATYPE_CLS, "DataType")
        .and_then(|c| v.is_instance(c.bind(py)))
        .unwrap_or(false)
}

/// An argument that must be an object of the pyclass `T`; otherwise `TypeError` with `msg`.
pub fn downcast_arg<'a, 'py, T: PyTypeCheck>(
    v: &'a Bound<'py, PyAny>,
    msg: impl PyErrArguments + 'static,
) -> PyResult<&'a Bound<'py, T>> {
    v.downcast::<T>().map_err(|_| PyTypeError::new_err(msg))
}

/// A graph's name argument (`Graph(name)`, `GraphBuilder(name)`): "graph" when absent, GE's
/// `TypeError` "Graph name must be a string" when not a str.
pub fn graph_name_arg(name: Option<&Bound<'_, PyAny>>) -> PyResult<String> {
    match name {
        None => Ok("graph".to_string()),
        Some(n) => n
            .extract::<String>()
            .map_err(|_| PyTypeError::new_err("Graph name must be a string")),
    }
}

/// `d[name] = s.name` for each named field of a record (stats and reports handed to Python as
/// dicts); a field is passed by reference, so it must convert to a Python object as `&T`.
macro_rules! set_fields {
    ($d:expr, $s:expr; $($field:ident),+ $(,)?) => {
        $( $d.set_item(stringify!($field), &$s.$field)?; )+
    };
}
pub(crate) use set_fields;
