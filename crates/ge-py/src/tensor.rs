//! The native tensor (bytes + description), wrapped by `ge.graph.Tensor` in Python.

use crate::convert::{dtype_from_py, format_from_py, shape_from_py};
use crate::errors::IntoPyResult;
use crate::guard::guarded;
use es_core::{Shape, Tensor, TensorDesc};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

#[pyclass(module = "ge._native", frozen)]
pub struct TensorData {
    pub inner: Tensor,
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
            Ok(TensorData {
                inner: Tensor::new(desc, data.to_vec()).py()?,
            })
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
            Ok(TensorData { inner })
        }
        /// The elements of a `DT_STRING` tensor, row-major.
        fn strings(&self) -> PyResult<Vec<String>> {
            self.inner.strings().py()
        }
        #[getter]
        fn data<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
            PyBytes::new(py, &self.inner.data)
        }
        /// The bytes in a new, writable bytearray (one copy; `Tensor.numpy()` views it without
        /// copying again).
        fn to_bytearray<'py>(&self, py: Python<'py>) -> Bound<'py, pyo3::types::PyByteArray> {
            pyo3::types::PyByteArray::new(py, &self.inner.data)
        }
        #[getter]
        fn dtype(&self) -> i32 {
            self.inner.desc.dtype.value()
        }
        #[getter]
        fn shape(&self) -> Vec<i64> {
            self.inner.desc.shape.0.to_vec()
        }
        #[getter]
        fn format(&self) -> i32 {
            self.inner.desc.format.value()
        }
        fn __repr__(&self) -> String {
            format!("TensorData({})", self.inner.desc)
        }
    }
}

/// A `ge.graph.Tensor` around a native tensor.
pub fn wrap_tensor(py: Python<'_>, t: Tensor) -> PyResult<PyObject> {
    let native = Py::new(py, TensorData { inner: t })?;
    Ok(py
        .import("ge.graph.tensor")?
        .getattr("Tensor")?
        .call_method1("_wrap", (native,))?
        .unbind())
}

/// A tensor from a `ge.graph.Tensor`, a native tensor, or anything numpy can make an array of.
pub fn tensor_from_py(v: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    if let Ok(t) = v.downcast::<TensorData>() {
        return Ok(t.get().inner.clone());
    }
    if let Ok(inner) = v.getattr("_tensor") {
        if let Ok(t) = inner.downcast::<TensorData>() {
            return Ok(t.get().inner.clone());
        }
    }
    let py = v.py();
    let t = py
        .import("ge.graph.tensor")?
        .getattr("_native_from_array")?
        .call1((v,))?;
    Ok(t.downcast::<TensorData>()?.get().inner.clone())
}
