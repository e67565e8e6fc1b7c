//! nnopbase objects (tensors, scalars, int arrays) and the aclnn operators' first phase.
//!
//! An aclnn operator runs in two phases: `aclnnXGetWorkspaceSize` checks the arguments and
//! returns an executor with the workspace it needs; `aclnnX` launches it on a stream. The
//! functions here do the first phase and return an [`Executor`]; [`super::Stream::launch`] or
//! [`super::Capture::launch`] do the second. An executor runs once.

use super::error::{Error, Result};
use super::memory::DeviceBuffer;
use acl_sys::{ffi, Api, OpFns};
use std::os::raw::c_void;

/// The size in bytes of one element of `dtype`, for the types this crate handles.
pub fn dtype_size(dtype: ffi::aclDataType) -> Option<usize> {
    Some(match dtype {
        ffi::ACL_BOOL | ffi::ACL_INT8 | ffi::ACL_UINT8 => 1,
        ffi::ACL_FLOAT16 | ffi::ACL_BF16 | ffi::ACL_INT16 | ffi::ACL_UINT16 => 2,
        ffi::ACL_FLOAT | ffi::ACL_INT32 | ffi::ACL_UINT32 => 4,
        ffi::ACL_DOUBLE | ffi::ACL_INT64 | ffi::ACL_UINT64 => 8,
        _ => return None,
    })
}

/// Row-major strides (in elements) of `dims`.
pub fn contiguous_strides(dims: &[i64]) -> Vec<i64> {
    let mut s = vec![1i64; dims.len()];
    for i in (0..dims.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * dims[i + 1].max(1);
    }
    s
}

/// Declares an nnopbase object wrapper: the API that made it and its handle, destroyed with
/// `$destroy` in `Drop`.
macro_rules! nnopbase_object {
    ($(#[$meta:meta])* $name:ident($raw:ident), $destroy:ident) => {
        $(#[$meta])*
        pub struct $name {
            api: &'static Api,
            raw: *mut ffi::$raw,
        }

        impl Drop for $name {
            fn drop(&mut self) {
                // SAFETY: our live object, destroyed once.
                unsafe { (self.api.nnopbase.$destroy)(self.raw) };
            }
        }
    };
}

/// The object an nnopbase `call` (`aclCreateTensor`, ...) returned, or its error when it
/// returned NULL.
fn created<T>(api: &'static Api, call: &'static str, raw: *mut T) -> Result<*mut T> {
    if raw.is_null() {
        return Err(Error::Acl {
            call,
            code: -1,
            message: api.recent_error(),
        });
    }
    Ok(raw)
}

nnopbase_object! {
    /// An `aclTensor`: a view (dims, strides and offset in elements, dtype) of device memory.
    /// Destroyed (`aclDestroyTensor`) in `Drop`; the memory is not owned.
    Tensor(aclTensor), aclDestroyTensor
}

nnopbase_object! {
    /// An `aclScalar` (a copy of the value), destroyed in `Drop`.
    Scalar(aclScalar), aclDestroyScalar
}

nnopbase_object! {
    /// An `aclIntArray` (a copy of the values), destroyed in `Drop`.
    IntArray(aclIntArray), aclDestroyIntArray
}

impl Tensor {
    /// A view of `buffer`. The view must lie inside the buffer.
    pub fn new(
        api: &'static Api,
        dtype: ffi::aclDataType,
        dims: &[i64],
        strides: &[i64],
        offset: i64,
        buffer: &DeviceBuffer,
    ) -> Result<Tensor> {
        let size = dtype_size(dtype)
            .ok_or_else(|| Error::Invalid(format!("unsupported ACL data type {dtype}")))?;
        if dims.len() != strides.len() || dims.iter().any(|&d| d < 0) || offset < 0 {
            return Err(Error::Invalid(format!(
                "bad tensor view: dims {dims:?}, strides {strides:?}, offset {offset}"
            )));
        }
        let empty = dims.contains(&0);
        let last = dims
            .iter()
            .zip(strides)
            .map(|(&d, &s)| (d - 1).max(0) * s)
            .sum::<i64>()
            + offset;
        if !empty && ((last as u128 + 1) * size as u128 > buffer.len() as u128 || last < 0) {
            return Err(Error::Invalid(format!(
                "tensor view dims {dims:?} strides {strides:?} offset {offset} of {size}-byte \
                 elements does not fit a buffer of {} bytes",
                buffer.len()
            )));
        }
        // Storage: the whole buffer as a flat array (a view describes the rest).
        let storage = [(buffer.len() / size) as i64];
        // SAFETY: declared `aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t
        // viewDimsNum, aclDataType, const int64_t *stride, int64_t offset, aclFormat, const
        // int64_t *storageDims, uint64_t storageDimsNum, void *tensorData)`; the arrays live
        // for the call.
        let raw = unsafe {
            (api.nnopbase.aclCreateTensor)(
                dims.as_ptr(),
                dims.len() as u64,
                dtype,
                strides.as_ptr(),
                offset,
                ffi::ACL_FORMAT_ND,
                storage.as_ptr(),
                1,
                buffer.device_ptr(),
            )
        };
        let raw = created(api, "aclCreateTensor", raw)?;
        Ok(Tensor { api, raw })
    }

    /// A contiguous (row-major) view of `buffer` from its start.
    pub fn contiguous(
        api: &'static Api,
        dtype: ffi::aclDataType,
        dims: &[i64],
        buffer: &DeviceBuffer,
    ) -> Result<Tensor> {
        Tensor::new(api, dtype, dims, &contiguous_strides(dims), 0, buffer)
    }

    pub fn raw(&self) -> *mut ffi::aclTensor {
        self.raw
    }
}

impl Scalar {
    pub fn f32(api: &'static Api, v: f32) -> Result<Scalar> {
        let mut v = v;
        Scalar::make(api, &mut v as *mut f32 as *mut c_void, ffi::ACL_FLOAT)
    }
    pub fn i64(api: &'static Api, v: i64) -> Result<Scalar> {
        let mut v = v;
        Scalar::make(api, &mut v as *mut i64 as *mut c_void, ffi::ACL_INT64)
    }
    fn make(api: &'static Api, p: *mut c_void, dtype: ffi::aclDataType) -> Result<Scalar> {
        // SAFETY: `aclScalar *aclCreateScalar(void *value, aclDataType)` copies the value.
        let raw = unsafe { (api.nnopbase.aclCreateScalar)(p, dtype) };
        let raw = created(api, "aclCreateScalar", raw)?;
        Ok(Scalar { api, raw })
    }
}

impl IntArray {
    pub fn new(api: &'static Api, values: &[i64]) -> Result<IntArray> {
        // SAFETY: `aclIntArray *aclCreateIntArray(const int64_t *value, uint64_t size)`.
        let raw = unsafe { (api.nnopbase.aclCreateIntArray)(values.as_ptr(), values.len() as u64) };
        let raw = created(api, "aclCreateIntArray", raw)?;
        Ok(IntArray { api, raw })
    }
}

/// A prepared aclnn operator, ready to launch once.
pub struct Executor {
    op: &'static str,
    raw: *mut ffi::aclOpExecutor,
    workspace: u64,
    launch: ffi::aclnnLaunch,
    destroy: Option<ffi::aclDestroyAclOpExecutor>,
    /// Scalars and int arrays made for the first phase, kept until the launch.
    _keep: Vec<Keep>,
}

/// An nnopbase object an executor keeps alive until its launch.
enum Keep {
    Scalar(#[allow(dead_code)] Scalar),
    Array(#[allow(dead_code)] IntArray),
}

// SAFETY: scalars and int arrays are host objects owned by one value at a time.
unsafe impl Send for Keep {}

// SAFETY: an opaque handle consumed by one launch.
unsafe impl Send for Executor {}

impl Executor {
    /// The operator's name (`aclnnAdd`, ...).
    pub fn op(&self) -> &'static str {
        self.op
    }
    /// The workspace the launch needs, in bytes.
    pub fn workspace_size(&self) -> u64 {
        self.workspace
    }
    pub(super) fn launch(
        mut self,
        workspace: *mut c_void,
        size: u64,
        stream: ffi::aclrtStream,
    ) -> (&'static str, i32) {
        // SAFETY: `aclnnStatus aclnnX(void *workspace, uint64_t workspaceSize, aclOpExecutor *,
        // aclrtStream)` with the executor its first phase made, launched once (self is consumed).
        let code = unsafe { (self.launch)(workspace, size, self.raw, stream) };
        // The launch owns it now (even when it failed).
        self.raw = std::ptr::null_mut();
        (self.op, code)
    }
}

impl Drop for Executor {
    /// An executor never launched is destroyed (`aclDestroyAclOpExecutor`, where the CANN
    /// version has it).
    fn drop(&mut self) {
        if let (false, Some(destroy)) = (self.raw.is_null(), self.destroy) {
            // SAFETY: a live executor from the first phase, not launched.
            unsafe { destroy(self.raw) };
        }
    }
}

fn prepare<G: Copy>(
    api: &'static Api,
    op: &'static str,
    fns: Option<OpFns<G>>,
    keep: Vec<Keep>,
    call: impl FnOnce(G, *mut u64, *mut *mut ffi::aclOpExecutor) -> ffi::aclnnStatus,
) -> Result<Executor> {
    let f = fns.ok_or_else(|| {
        Error::Unsupported(format!(
            "{op}: {} does not export it",
            api.dir().join(acl_sys::OPAPI_LIBRARY).display()
        ))
    })?;
    let mut ws = 0u64;
    let mut exec: *mut ffi::aclOpExecutor = std::ptr::null_mut();
    let code = call(f.get_workspace_size, &mut ws, &mut exec);
    if code != 0 {
        return Err(Error::Acl {
            call: op,
            code,
            message: api.recent_error(),
        });
    }
    if exec.is_null() {
        return Err(Error::Acl {
            call: op,
            code: 0,
            message: "returned no executor".into(),
        });
    }
    Ok(Executor {
        op,
        raw: exec,
        workspace: ws,
        launch: f.launch,
        destroy: api.nnopbase.aclDestroyAclOpExecutor,
        _keep: keep,
    })
}

/// Binary element-wise operators with broadcasting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binary {
    Add,
    Sub,
    Mul,
    Div,
}

/// Unary element-wise operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unary {
    Relu,
    Exp,
    Sigmoid,
    Tanh,
    Sqrt,
    Neg,
    Abs,
}

/// Reductions over a list of dims.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reduce {
    Sum,
    Mean,
    Max,
    Min,
}

/// `out = a op b` (`aclnnAdd`/`aclnnSub` with alpha 1, `aclnnMul`, `aclnnDiv`).
pub fn binary(
    api: &'static Api,
    op: Binary,
    a: &Tensor,
    b: &Tensor,
    out: &Tensor,
) -> Result<Executor> {
    let (x, y, o) = (a.raw as *const _, b.raw as *const _, out.raw);
    match op {
        Binary::Add | Binary::Sub => {
            let alpha = Scalar::f32(api, 1.0)?;
            let (name, fns) = if op == Binary::Add {
                ("aclnnAdd", api.ops.add)
            } else {
                ("aclnnSub", api.ops.sub)
            };
            // SAFETY (all calls below): the first-phase signature CANN declares for the
            // operator, with live objects and out-pointers to locals.
            let a = alpha.raw as *const _;
            prepare(
                api,
                name,
                fns,
                vec![Keep::Scalar(alpha)],
                |f, ws, ex| unsafe { f(x, y, a, o, ws, ex) },
            )
        }
        Binary::Mul => prepare(api, "aclnnMul", api.ops.mul, vec![], |f, ws, ex| unsafe {
            f(x, y, o, ws, ex)
        }),
        Binary::Div => prepare(api, "aclnnDiv", api.ops.div, vec![], |f, ws, ex| unsafe {
            f(x, y, o, ws, ex)
        }),
    }
}

/// `out = op(x)`.
pub fn unary(api: &'static Api, op: Unary, x: &Tensor, out: &Tensor) -> Result<Executor> {
    let (name, fns) = match op {
        Unary::Relu => ("aclnnRelu", api.ops.relu),
        Unary::Exp => ("aclnnExp", api.ops.exp),
        Unary::Sigmoid => ("aclnnSigmoid", api.ops.sigmoid),
        Unary::Tanh => ("aclnnTanh", api.ops.tanh),
        Unary::Sqrt => ("aclnnSqrt", api.ops.sqrt),
        Unary::Neg => ("aclnnNeg", api.ops.neg),
        Unary::Abs => ("aclnnAbs", api.ops.abs),
    };
    let (x, o) = (x.raw as *const _, out.raw);
    prepare(api, name, fns, vec![], |f, ws, ex| unsafe {
        f(x, o, ws, ex)
    })
}

/// `out = a @ b` (`aclnnMatmul`; transposes are strided views; cubeMathType 1 = ALLOW_FP32_DOWN_PRECISION
/// is not used: 0 keeps the dtype's precision).
pub fn matmul(api: &'static Api, a: &Tensor, b: &Tensor, out: &Tensor) -> Result<Executor> {
    let (x, y, o) = (a.raw as *const _, b.raw as *const _, out.raw);
    prepare(
        api,
        "aclnnMatmul",
        api.ops.matmul,
        vec![],
        |f, ws, ex| unsafe { f(x, y, o, 0, ws, ex) },
    )
}

/// Softmax over `dim`.
pub fn softmax(api: &'static Api, x: &Tensor, dim: i64, out: &Tensor) -> Result<Executor> {
    let (x, o) = (x.raw as *const _, out.raw);
    prepare(
        api,
        "aclnnSoftmax",
        api.ops.softmax,
        vec![],
        |f, ws, ex| unsafe { f(x, dim, o, ws, ex) },
    )
}

/// Converts `x` to `dtype` (out's dtype).
pub fn cast(
    api: &'static Api,
    x: &Tensor,
    dtype: ffi::aclDataType,
    out: &Tensor,
) -> Result<Executor> {
    let (x, o) = (x.raw as *const _, out.raw);
    prepare(api, "aclnnCast", api.ops.cast, vec![], |f, ws, ex| unsafe {
        f(x, dtype, o, ws, ex)
    })
}

/// `out = x` with its dims permuted.
pub fn permute(api: &'static Api, x: &Tensor, dims: &[i64], out: &Tensor) -> Result<Executor> {
    let dims = IntArray::new(api, dims)?;
    let (x, o, d) = (x.raw as *const _, out.raw, dims.raw as *const _);
    let keep = vec![Keep::Array(dims)];
    prepare(
        api,
        "aclnnPermute",
        api.ops.permute,
        keep,
        |f, ws, ex| unsafe { f(x, d, o, ws, ex) },
    )
}

/// A reduction of `x` over `dims` (an empty list: every dim).
pub fn reduce(
    api: &'static Api,
    op: Reduce,
    x: &Tensor,
    dims: &[i64],
    keep_dims: bool,
    dtype: ffi::aclDataType,
    out: &Tensor,
) -> Result<Executor> {
    let dims = IntArray::new(api, dims)?;
    let (x, o, d) = (x.raw as *const _, out.raw, dims.raw as *const _);
    let keep = vec![Keep::Array(dims)];
    match op {
        Reduce::Sum => prepare(
            api,
            "aclnnReduceSum",
            api.ops.reduce_sum,
            keep,
            |f, ws, ex| unsafe { f(x, d, keep_dims, dtype, o, ws, ex) },
        ),
        Reduce::Mean => prepare(api, "aclnnMean", api.ops.mean, keep, |f, ws, ex| unsafe {
            f(x, d, keep_dims, dtype, o, ws, ex)
        }),
        Reduce::Max => prepare(api, "aclnnAmax", api.ops.amax, keep, |f, ws, ex| unsafe {
            f(x, d, keep_dims, o, ws, ex)
        }),
        Reduce::Min => prepare(api, "aclnnAmin", api.ops.amin, keep, |f, ws, ex| unsafe {
            f(x, d, keep_dims, o, ws, ex)
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strides_are_row_major_in_elements() {
        assert_eq!(contiguous_strides(&[2, 3, 4]), vec![12, 4, 1]);
        assert_eq!(contiguous_strides(&[5]), vec![1]);
        assert_eq!(contiguous_strides(&[]), Vec::<i64>::new());
        // A zero-size dim does not zero the strides before it.
        assert_eq!(contiguous_strides(&[2, 0, 3]), vec![3, 3, 1]);
    }

    #[test]
    fn element_sizes_follow_acl_data_types() {
        assert_eq!(dtype_size(ffi::ACL_FLOAT), Some(4));
        assert_eq!(dtype_size(ffi::ACL_FLOAT16), Some(2));
        assert_eq!(dtype_size(ffi::ACL_BF16), Some(2));
        assert_eq!(dtype_size(ffi::ACL_INT64), Some(8));
        assert_eq!(dtype_size(ffi::ACL_BOOL), Some(1));
        assert_eq!(dtype_size(ffi::ACL_DT_UNDEFINED), None);
        assert_eq!(dtype_size(13), None); // ACL_STRING
    }
}
