//! `EsCTensor`: a tensor the caller owns (Tensor attributes, run inputs and outputs).

use crate::error::{guard, CError, CResult};
use crate::ffi::{dtype, format, slice, C_DataType, C_Format};
use es_core::{Shape, Tensor, TensorDesc};
use std::ffi::{c_char, c_void};
use std::ptr;

/// A tensor (opaque to C).
pub struct EsCTensor(pub(crate) Tensor);

impl EsCTensor {
    pub(crate) fn into_raw(t: Tensor) -> *mut EsCTensor {
        Box::into_raw(Box::new(EsCTensor(t)))
    }
    pub(crate) unsafe fn get<'a>(p: *const EsCTensor, what: &str) -> CResult<&'a Tensor> {
        p.as_ref()
            .map(|t| &t.0)
            .ok_or_else(|| CError::arg(format!("{what} is NULL")))
    }
    /// Takes ownership of a tensor the caller handed over (NULL: None).
    pub(crate) unsafe fn take(p: *mut EsCTensor) -> Option<Tensor> {
        (!p.is_null()).then(|| Box::from_raw(p).0)
    }
}

unsafe fn make(
    data: &[u8],
    dims: &[i64],
    data_type: C_DataType,
    format_: C_Format,
) -> CResult<*mut EsCTensor> {
    Shape::validate(dims)?;
    let desc =
        TensorDesc::new(dtype(data_type)?, Shape::from_slice(dims)).with_format(format(format_)?);
    Ok(EsCTensor::into_raw(Tensor::new(desc, data.to_vec())?))
}

/// The byte size of a tensor of `data_type` and `dims`.
fn byte_size(data_type: C_DataType, dims: &[i64]) -> CResult<i64> {
    let dt = dtype(data_type)?;
    if dt.size().is_none() {
        return Err(CError::arg(format!(
            "not supported: tensors of {dt} in the C API"
        )));
    }
    // es-core's checked size (None: a negative dim; an error: more than MAX_BYTES).
    let n = es_core::opmath::byte_size("EsCreateEsCTensor", dt, &Shape::new(dims.to_vec()))
        .map_err(|e| CError::arg(e.to_string()))?
        .ok_or_else(|| CError::arg(format!("bad tensor shape {dims:?}")))?;
    Ok(n as i64)
}

/// A tensor of `data_type` and shape `dim`/`dim_num` (0: a scalar) with a copy of `data`. The
/// caller owns it: free it with `EsDestroyEsCTensor`, or hand it to an `Es<Op>` Tensor
/// attribute, which takes it over. NULL on failure.
#[no_mangle]
pub unsafe extern "C" fn EsCreateEsCTensor(
    data: *const c_void,
    dim: *const i64,
    dim_num: i64,
    data_type: C_DataType,
    format_: C_Format,
) -> *mut EsCTensor {
    guard(ptr::null_mut(), || {
        let dims = slice(dim, dim_num, "dim")?;
        let n = byte_size(data_type, dims)?;
        make(
            slice(data.cast::<u8>(), n, "data")?,
            dims,
            data_type,
            format_,
        )
    })
}

/// [`EsCreateEsCTensor`] with the data read from a binary file (exactly the tensor's bytes).
#[no_mangle]
pub unsafe extern "C" fn EsCreateEsCTensorFromFile(
    data_file_path: *const c_char,
    dim: *const i64,
    dim_num: i64,
    data_type: C_DataType,
    format_: C_Format,
) -> *mut EsCTensor {
    guard(ptr::null_mut(), || {
        let path = crate::ffi::c_str(data_file_path, "data_file_path")?;
        let dims = slice(dim, dim_num, "dim")?;
        let n = byte_size(data_type, dims)?;
        let bytes = std::fs::read(&path).map_err(|e| {
            CError::new(
                crate::error::ES_ERR_IO,
                format!("cannot read '{path}': {e}"),
            )
        })?;
        if bytes.len() as i64 != n {
            return Err(CError::arg(format!(
                "'{path}' has {} bytes, the tensor needs {n}",
                bytes.len()
            )));
        }
        make(&bytes, dims, data_type, format_)
    })
}

/// Frees a tensor the caller owns. NULL is ignored.
#[no_mangle]
pub unsafe extern "C" fn EsDestroyEsCTensor(tensor: *mut EsCTensor) {
    crate::error::guard_quiet(|| {
        drop(EsCTensor::take(tensor));
        Ok(())
    })
}

/// The tensor's data type, or -1 for NULL.
#[no_mangle]
pub unsafe extern "C" fn EsGetTensorDataType(tensor: *const EsCTensor) -> C_DataType {
    guard(-1, || {
        Ok(EsCTensor::get(tensor, "tensor")?.desc.dtype.value())
    })
}

/// The tensor's rank, or -1 for NULL.
#[no_mangle]
pub unsafe extern "C" fn EsGetTensorDimNum(tensor: *const EsCTensor) -> i64 {
    guard(-1, || {
        Ok(EsCTensor::get(tensor, "tensor")?.desc.shape.dims().len() as i64)
    })
}

/// The tensor's dimensions (`EsGetTensorDimNum` of them), valid while the tensor lives.
#[no_mangle]
pub unsafe extern "C" fn EsGetTensorDims(tensor: *const EsCTensor) -> *const i64 {
    guard(ptr::null(), || {
        Ok(EsCTensor::get(tensor, "tensor")?.desc.shape.dims().as_ptr())
    })
}

/// The tensor's bytes (little-endian, row-major), valid while the tensor lives.
#[no_mangle]
pub unsafe extern "C" fn EsGetTensorData(tensor: *const EsCTensor) -> *const c_void {
    guard(ptr::null(), || {
        Ok(EsCTensor::get(tensor, "tensor")?.data.as_ptr().cast())
    })
}

/// The size of the tensor's data in bytes, or -1 for NULL.
#[no_mangle]
pub unsafe extern "C" fn EsGetTensorDataSize(tensor: *const EsCTensor) -> i64 {
    guard(-1, || {
        Ok(EsCTensor::get(tensor, "tensor")?.data.len() as i64)
    })
}
