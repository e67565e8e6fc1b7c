//! The native tensor behind `ge.graph.Tensor`: IR bytes and a description, or a run's result
//! held as the runtime made it (its memory viewed by `numpy()`, bytes made only on demand); and
//! the conversions of run inputs and outputs (one copy in, none out).

use crate::convert::{dtype_from_py, format_from_py, shape_from_py};
use crate::errors::IntoPyResult;
use crate::guard::guarded;
use es_core::{DataType, Shape, Tensor, TensorDesc};
use ge_runtime::Value;
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyBytes, PyDict, PyTuple};
use std::sync::OnceLock;

#[pyclass(module = "ge._native", frozen)]
pub struct TensorData {
    /// A run's result: a numeric or low-precision array in standard layout, never changed
    /// (`numpy()` gives read-only views of its memory); None for a tensor made from bytes.
    value: Option<Value>,
    /// The IR tensor: given, or made from `value` the first time something needs the bytes.
    tensor: OnceLock<Tensor>,
}

impl TensorData {
    /// A native tensor of IR bytes.
    pub fn from_tensor(t: Tensor) -> Self {
        TensorData {
            value: None,
            tensor: OnceLock::from(t),
        }
    }

    /// A run's result, its elements not copied (an array not in standard layout is made
    /// standard first); a string tensor is held as its IR bytes.
    pub fn from_value(v: Value) -> ge_runtime::Result<Self> {
        if let Value::Str(_) = v {
            return Ok(Self::from_tensor(v.to_tensor()?));
        }
        let v = ge_runtime::map_array!(v, a => {
            if a.is_standard_layout() {
                a
            } else {
                a.as_standard_layout().into_owned()
            }
        }, s => Value::Str(s));
        Ok(TensorData {
            value: Some(v),
            tensor: OnceLock::new(),
        })
    }

    /// The IR tensor (for a run's result, its bytes made on the first call).
    pub fn tensor(&self) -> PyResult<&Tensor> {
        if let Some(t) = self.tensor.get() {
            return Ok(t);
        }
        let v = self.value.as_ref().ok_or_else(|| {
            PyRuntimeError::new_err(
                "internal error: a native tensor holds neither bytes nor an array",
            )
        })?;
        let t = v.to_tensor().py()?;
        Ok(self.tensor.get_or_init(|| t))
    }

    /// The runtime value of this tensor, in one copy of its elements.
    pub fn to_value(&self) -> PyResult<ge_runtime::Result<Value>> {
        Ok(match &self.value {
            Some(v) => Ok(v.clone()),
            None => Value::from_tensor(self.tensor()?),
        })
    }
}

/// numpy's `__array_interface__` typestr of a held array's elements (bf16 as its raw bits,
/// uint16; the low-precision types as one bit pattern a byte, uint8).
fn typestr(v: &Value) -> Option<String> {
    let (kind, size) = match v {
        Value::F32(_) => ('f', 4),
        Value::F64(_) => ('f', 8),
        Value::F16(_) => ('f', 2),
        Value::BF16(_) | Value::U16(_) => ('u', 2),
        Value::I8(_) => ('i', 1),
        Value::I16(_) => ('i', 2),
        Value::I32(_) => ('i', 4),
        Value::I64(_) => ('i', 8),
        Value::U8(_) | Value::Lowp(..) => ('u', 1),
        Value::U32(_) => ('u', 4),
        Value::U64(_) => ('u', 8),
        Value::Bool(_) => ('b', 1),
        Value::Str(_) | Value::Variant(_) => return None,
    };
    let order = match size {
        1 => '|',
        _ if cfg!(target_endian = "little") => '<',
        _ => '>',
    };
    Some(format!("{order}{kind}{size}"))
}

guarded! {
    #[pymethods]
    impl TensorData {
        /// A tensor from raw little-endian bytes.
        #[new]
        #[pyo3(signature = (data, dtype, shape, format = None))]
        fn new(
            data: &[u8],
            dtype: &Bound<'_, PyAny>,
            shape: &Bound<'_, PyAny>,
            format: Option<&Bound<'_, PyAny>>,
        ) -> PyResult<Self> {
            let dt = dtype_from_py(dtype)?;
            let dims = shape_from_py(shape)?;
            let mut desc = TensorDesc::new(dt, Shape::new(dims));
            if let Some(f) = format {
                desc = desc.with_format(format_from_py(f)?);
            }
            Ok(TensorData::from_tensor(Tensor::new(desc, data.to_vec()).py()?))
        }

        /// A tensor of `dtype` and `shape` from the memory of a C-contiguous `numpy.ndarray`
        /// (its bytes, little-endian, copied once); TypeError for anything else.
        #[staticmethod]
        #[pyo3(signature = (array, dtype, shape, format = None))]
        fn from_array(
            array: &Bound<'_, PyAny>,
            dtype: &Bound<'_, PyAny>,
            shape: &Bound<'_, PyAny>,
            format: Option<&Bound<'_, PyAny>>,
        ) -> PyResult<Self> {
            let Some(data) = with_contiguous(array, |_, _, bytes| bytes.to_vec())? else {
                return Err(PyTypeError::new_err(
                    "TensorData.from_array needs a C-contiguous numpy.ndarray of numbers",
                ));
            };
            let mut desc = TensorDesc::new(dtype_from_py(dtype)?, Shape::new(shape_from_py(shape)?));
            if let Some(f) = format {
                desc = desc.with_format(format_from_py(f)?);
            }
            Ok(TensorData::from_tensor(Tensor::new(desc, data).py()?))
        }

        /// These bytes under another description (`dtype`, `shape`, `format`), not copied: the
        /// checks (and errors) of a tensor made from them.
        #[pyo3(signature = (dtype, shape, format = None))]
        fn with_desc(
            &self,
            dtype: &Bound<'_, PyAny>,
            shape: &Bound<'_, PyAny>,
            format: Option<&Bound<'_, PyAny>>,
        ) -> PyResult<Self> {
            let mut desc = TensorDesc::new(dtype_from_py(dtype)?, Shape::new(shape_from_py(shape)?));
            if let Some(f) = format {
                desc = desc.with_format(format_from_py(f)?);
            }
            Ok(TensorData::from_tensor(share_bytes(self.tensor()?, desc)?))
        }

        /// A `DT_STRING` tensor of `strings` (row-major) and `shape`, in GE's layout.
        #[staticmethod]
        #[pyo3(signature = (strings, shape, format = None))]
        fn from_strings(
            strings: Vec<String>,
            shape: &Bound<'_, PyAny>,
            format: Option<&Bound<'_, PyAny>>,
        ) -> PyResult<Self> {
            let mut inner = Tensor::from_strings(&strings, shape_from_py(shape)?).py()?;
            if let Some(f) = format {
                inner.desc = inner.desc.with_format(format_from_py(f)?);
            }
            Ok(TensorData::from_tensor(inner))
        }
        /// The elements of a `DT_STRING` tensor, row-major.
        fn strings(&self) -> PyResult<Vec<String>> {
            self.tensor()?.strings().py()
        }
        #[getter]
        fn data<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
            Ok(PyBytes::new(py, &self.tensor()?.data))
        }
        /// The bytes in a new, writable bytearray (one copy; `Tensor.numpy()` views it without
        /// copying again).
        fn to_bytearray<'py>(
            &self,
            py: Python<'py>,
        ) -> PyResult<Bound<'py, pyo3::types::PyByteArray>> {
            Ok(pyo3::types::PyByteArray::new(py, &self.tensor()?.data))
        }
        /// Whether this is a run's result, whose memory `numpy.asarray` views (read-only)
        /// through `__array_interface__`.
        #[getter]
        fn viewable(&self) -> bool {
            self.value.is_some()
        }
        /// numpy's array interface (version 3) of a run's result: a read-only view of the
        /// memory this object owns (the view keeps it alive); AttributeError for a tensor made
        /// from bytes.
        #[getter]
        fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
            let Some((v, ts)) = self.value.as_ref().and_then(|v| Some((v, typestr(v)?))) else {
                return Err(pyo3::exceptions::PyAttributeError::new_err(
                    "__array_interface__: only a run's result is viewed in place",
                ));
            };
            // (Strings and variants have no typestr: never here.)
            let ptr = ge_runtime::with_array!(v, a => a.as_ptr() as usize, _s => 0, _h => 0);
            let d = PyDict::new(py);
            d.set_item("version", 3)?;
            d.set_item("shape", PyTuple::new(py, v.shape())?)?;
            d.set_item("typestr", ts)?;
            d.set_item("data", (ptr, true))?;
            d.set_item("strides", py.None())?;
            Ok(d)
        }
        #[getter]
        fn dtype(&self) -> i32 {
            match &self.value {
                Some(v) => v.dtype().value(),
                None => self.tensor.get().map_or(DataType::UNDEFINED, |t| t.desc.dtype).value(),
            }
        }
        #[getter]
        fn shape(&self) -> Vec<i64> {
            match &self.value {
                Some(v) => v.dims(),
                None => self.tensor.get().map_or_else(Vec::new, |t| t.desc.shape.0.to_vec()),
            }
        }
        #[getter]
        fn format(&self) -> i32 {
            match (&self.value, self.tensor.get()) {
                (_, Some(t)) => t.desc.format.value(),
                // A result's format: ND, as its IR tensor would have.
                _ => es_core::Format::ND.value(),
            }
        }
        fn __repr__(&self) -> PyResult<String> {
            Ok(match &self.value {
                Some(v) => format!(
                    "TensorData({})",
                    TensorDesc::new(v.dtype(), Shape::new(v.dims()))
                ),
                None => format!("TensorData({})", self.tensor()?.desc),
            })
        }
    }
}

/// A `ge.graph.Tensor` around a native tensor.
pub fn wrap_tensor(py: Python<'_>, t: Tensor) -> PyResult<PyObject> {
    wrap_native(py, TensorData::from_tensor(t))
}

/// A `ge.graph.Tensor` holding a run's result without copying its elements.
pub fn wrap_value(py: Python<'_>, v: Value) -> PyResult<PyObject> {
    wrap_native(py, TensorData::from_value(v).py()?)
}

fn wrap_native(py: Python<'_>, native: TensorData) -> PyResult<PyObject> {
    let native = Py::new(py, native)?;
    Ok(py
        .import("ge.graph.tensor")?
        .getattr("Tensor")?
        .call_method1("_wrap", (native,))?
        .unbind())
}

/// A tensor from a `ge.graph.Tensor`, a native tensor, or anything numpy can make an array of.
pub fn tensor_from_py(v: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    if let Some(t) = native_of(v) {
        return Ok(t.get().tensor()?.clone());
    }
    Ok(native_from_array(v)?.get().tensor()?.clone())
}

/// The native tensor of a `ge.graph.Tensor` or of a native tensor itself.
fn native_of<'py>(v: &Bound<'py, PyAny>) -> Option<Bound<'py, TensorData>> {
    if let Ok(t) = v.downcast::<TensorData>() {
        return Some(t.clone());
    }
    let inner = v.getattr("_tensor").ok()?;
    inner.downcast_into::<TensorData>().ok()
}

/// `ge.graph.tensor._native_from_array(v)`: the general conversion (every dtype numpy has,
/// byte order, strides, lists, scalars) and its errors.
fn native_from_array<'py>(v: &Bound<'py, PyAny>) -> PyResult<Bound<'py, TensorData>> {
    let t = v
        .py()
        .import("ge.graph.tensor")?
        .getattr("_native_from_array")?
        .call1((v,))?;
    Ok(t.downcast_into::<TensorData>()?)
}

static NDARRAY: GILOnceCell<PyObject> = GILOnceCell::new();

/// A run's input (or a Python kernel's output) as a runtime value, in one copy of its elements:
/// a `ge.graph.Tensor` or native tensor (its array cloned, or its bytes converted), or a numpy
/// array ([`value_from_ndarray`]); anything else through `_native_from_array` as before. The
/// outer error is Python's (the conversion raised), the inner one the runtime's (the bytes do
/// not make a value: an unsupported dtype, ...).
pub fn value_from_py(v: &Bound<'_, PyAny>) -> PyResult<ge_runtime::Result<Value>> {
    if let Ok(t) = v.downcast::<TensorData>() {
        return t.get().to_value();
    }
    if let Some(value) = value_from_ndarray(v)? {
        return Ok(value);
    }
    if let Some(t) = native_of(v) {
        return t.get().to_value();
    }
    native_from_array(v)?.get().to_value()
}

/// The dtype of a numpy `typestr` whose bytes [`Value::from_le_bytes`] reads as they are:
/// little-endian (or one byte an element) plain numbers and bool.
fn dtype_of_typestr(ts: &str) -> Option<DataType> {
    Some(match ts {
        "<f4" => DataType::FLOAT,
        "<f8" => DataType::DOUBLE,
        "<f2" => DataType::FLOAT16,
        "|i1" => DataType::INT8,
        "<i2" => DataType::INT16,
        "<i4" => DataType::INT32,
        "<i8" => DataType::INT64,
        "|u1" => DataType::UINT8,
        "<u2" => DataType::UINT16,
        "<u4" => DataType::UINT32,
        "<u8" => DataType::UINT64,
        "|b1" => DataType::BOOL,
        _ => return None,
    })
}

/// `t`'s bytes under `desc`, shared (not copied) where they fit it; otherwise (strings, whose
/// layout is checked, or bytes that do not fit) what [`Tensor::new`] makes of a copy: its error.
fn share_bytes(t: &Tensor, desc: TensorDesc) -> PyResult<Tensor> {
    if desc.dtype != DataType::STRING && t.desc.dtype != DataType::STRING {
        let want = es_core::opmath::byte_size("tensor", desc.dtype, &desc.shape).py()?;
        if want == Some(t.data.len()) {
            return Ok(Tensor {
                desc,
                data: t.data.clone(),
            });
        }
    }
    Tensor::new(desc, t.data.to_vec()).py()
}

/// Lends `f` the memory of `v` (its `__array_interface__` typestr, its shape and its bytes)
/// where `v` is exactly a `numpy.ndarray` (no subclass), C-contiguous, of numbers or bool (no
/// object, string or structured elements); None for anything else.
fn with_contiguous<R>(
    v: &Bound<'_, PyAny>,
    f: impl FnOnce(&str, &[usize], &[u8]) -> R,
) -> PyResult<Option<R>> {
    let py = v.py();
    let nd = NDARRAY.get_or_try_init(py, || -> PyResult<PyObject> {
        Ok(py.import("numpy")?.getattr("ndarray")?.unbind())
    })?;
    if !v.get_type().is(nd.bind(py)) {
        return Ok(None);
    }
    let iface = v.getattr("__array_interface__")?;
    let Ok(d) = iface.downcast::<PyDict>() else {
        return Ok(None);
    };
    // strides None: C-contiguous (numpy's array interface).
    if d.get_item("strides")?.is_some_and(|s| !s.is_none()) {
        return Ok(None);
    }
    let Some(typestr) = d
        .get_item("typestr")?
        .and_then(|t| t.extract::<String>().ok())
    else {
        return Ok(None);
    };
    // Plain numbers and bool: the digits after the kind are the element size in bytes.
    if !matches!(
        typestr.as_bytes().get(1),
        Some(b'b' | b'i' | b'u' | b'f' | b'c')
    ) {
        return Ok(None);
    }
    let Some(itemsize) = typestr.get(2..).and_then(|n| n.parse::<usize>().ok()) else {
        return Ok(None);
    };
    let (Some(shape), Some(data)) = (d.get_item("shape")?, d.get_item("data")?) else {
        return Ok(None);
    };
    let dims: Vec<usize> = shape.extract()?;
    let (ptr, _read_only): (usize, bool) = data.extract()?;
    let Some(nbytes) = dims.iter().try_fold(itemsize, |n, &d| n.checked_mul(d)) else {
        return Ok(None);
    };
    let bytes: &[u8] = if nbytes == 0 || ptr == 0 {
        &[]
    } else {
        // SAFETY: `v` is a live, C-contiguous numpy.ndarray of plain elements (checked above)
        // whose data starts at `ptr` and spans `nbytes` bytes; the GIL is held until `f`
        // returns and `v` is borrowed throughout, so the array (and its memory) cannot be freed
        // or resized meanwhile; the slice is only read, and does not outlive this call.
        unsafe { std::slice::from_raw_parts(ptr as *const u8, nbytes) }
    };
    Ok(Some(f(&typestr, &dims, bytes)))
}

/// A value read straight from a numpy array's memory in one copy ([`with_contiguous`]), where
/// its dtype is one [`dtype_of_typestr`] knows; None for anything else (the general path
/// converts it, with today's checks and errors). The result is the value the general path gives
/// for the same array (`_native_from_array` keeps an ndarray's dtype and shape).
fn value_from_ndarray(v: &Bound<'_, PyAny>) -> PyResult<Option<ge_runtime::Result<Value>>> {
    Ok(with_contiguous(v, |typestr, dims, bytes| {
        dtype_of_typestr(typestr).map(|dt| Value::from_le_bytes(dt, dims, bytes))
    })?
    .flatten())
}
