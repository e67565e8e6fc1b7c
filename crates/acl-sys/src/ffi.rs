//! Raw declarations, as CANN's public headers give them (`acl/acl_base.h`, `acl/acl_rt.h`,
//! `acl/acl_mdl.h`, `aclnn/acl_meta.h`, `aclnnop/aclnn_*.h`): handle types, enum values and
//! the C signature of every function this crate loads. Nothing here is linked: [`crate::Api`]
//! resolves these symbols with `libloading` at run time.

#![allow(non_camel_case_types, non_snake_case)]

use std::os::raw::{c_char, c_int, c_void};

/// `typedef int aclError;` (0 is `ACL_SUCCESS`).
pub type aclError = c_int;
/// `typedef int32_t aclnnStatus;` (0 is success).
pub type aclnnStatus = i32;
pub const ACL_SUCCESS: aclError = 0;

pub type aclrtStream = *mut c_void;
pub type aclrtContext = *mut c_void;
/// A captured model run instance (`typedef void *aclmdlRI;`).
pub type aclmdlRI = *mut c_void;

/// Opaque nnopbase objects.
#[repr(C)]
pub struct aclTensor {
    _private: [u8; 0],
}
#[repr(C)]
pub struct aclScalar {
    _private: [u8; 0],
}
#[repr(C)]
pub struct aclIntArray {
    _private: [u8; 0],
}
#[repr(C)]
pub struct aclOpExecutor {
    _private: [u8; 0],
}

/// `aclDataType` (acl_base.h).
pub type aclDataType = c_int;
pub const ACL_DT_UNDEFINED: aclDataType = -1;
pub const ACL_FLOAT: aclDataType = 0;
pub const ACL_FLOAT16: aclDataType = 1;
pub const ACL_INT8: aclDataType = 2;
pub const ACL_INT32: aclDataType = 3;
pub const ACL_UINT8: aclDataType = 4;
pub const ACL_INT16: aclDataType = 6;
pub const ACL_UINT16: aclDataType = 7;
pub const ACL_UINT32: aclDataType = 8;
pub const ACL_INT64: aclDataType = 9;
pub const ACL_UINT64: aclDataType = 10;
pub const ACL_DOUBLE: aclDataType = 11;
pub const ACL_BOOL: aclDataType = 12;
pub const ACL_BF16: aclDataType = 27;

/// `aclFormat` (acl_base.h).
pub type aclFormat = c_int;
pub const ACL_FORMAT_UNDEFINED: aclFormat = -1;
pub const ACL_FORMAT_NCHW: aclFormat = 0;
pub const ACL_FORMAT_NHWC: aclFormat = 1;
pub const ACL_FORMAT_ND: aclFormat = 2;

/// `aclrtMemcpyKind` (acl_rt.h).
pub type aclrtMemcpyKind = c_int;
pub const ACL_MEMCPY_HOST_TO_HOST: aclrtMemcpyKind = 0;
pub const ACL_MEMCPY_HOST_TO_DEVICE: aclrtMemcpyKind = 1;
pub const ACL_MEMCPY_DEVICE_TO_HOST: aclrtMemcpyKind = 2;
pub const ACL_MEMCPY_DEVICE_TO_DEVICE: aclrtMemcpyKind = 3;

/// `aclrtMemMallocPolicy` (acl_rt.h).
pub type aclrtMemMallocPolicy = c_int;
pub const ACL_MEM_MALLOC_HUGE_FIRST: aclrtMemMallocPolicy = 0;
pub const ACL_MEM_MALLOC_HUGE_ONLY: aclrtMemMallocPolicy = 1;
pub const ACL_MEM_MALLOC_NORMAL_ONLY: aclrtMemMallocPolicy = 2;

/// `aclmdlRICaptureMode` (acl_rt.h).
pub type aclmdlRICaptureMode = c_int;
pub const ACL_MODEL_RI_CAPTURE_MODE_GLOBAL: aclmdlRICaptureMode = 0;
pub const ACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL: aclmdlRICaptureMode = 1;
pub const ACL_MODEL_RI_CAPTURE_MODE_RELAXED: aclmdlRICaptureMode = 2;

/// `aclmdlRICaptureStatus` (acl_rt.h).
pub type aclmdlRICaptureStatus = c_int;
pub const ACL_MODEL_RI_CAPTURE_STATUS_NONE: aclmdlRICaptureStatus = 0;
pub const ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE: aclmdlRICaptureStatus = 1;
pub const ACL_MODEL_RI_CAPTURE_STATUS_INVALIDATED: aclmdlRICaptureStatus = 2;

// ---- libascendcl: runtime ----
pub type aclInit = unsafe extern "C" fn(configPath: *const c_char) -> aclError;
pub type aclFinalize = unsafe extern "C" fn() -> aclError;
pub type aclrtSetDevice = unsafe extern "C" fn(deviceId: i32) -> aclError;
pub type aclrtResetDevice = unsafe extern "C" fn(deviceId: i32) -> aclError;
pub type aclrtGetDeviceCount = unsafe extern "C" fn(count: *mut u32) -> aclError;
pub type aclrtCreateContext =
    unsafe extern "C" fn(context: *mut aclrtContext, deviceId: i32) -> aclError;
pub type aclrtDestroyContext = unsafe extern "C" fn(context: aclrtContext) -> aclError;
pub type aclrtSetCurrentContext = unsafe extern "C" fn(context: aclrtContext) -> aclError;
pub type aclrtCreateStream = unsafe extern "C" fn(stream: *mut aclrtStream) -> aclError;
pub type aclrtDestroyStream = unsafe extern "C" fn(stream: aclrtStream) -> aclError;
pub type aclrtSynchronizeStream = unsafe extern "C" fn(stream: aclrtStream) -> aclError;
pub type aclrtMalloc = unsafe extern "C" fn(
    devPtr: *mut *mut c_void,
    size: usize,
    policy: aclrtMemMallocPolicy,
) -> aclError;
pub type aclrtFree = unsafe extern "C" fn(devPtr: *mut c_void) -> aclError;
pub type aclrtMallocHost = unsafe extern "C" fn(hostPtr: *mut *mut c_void, size: usize) -> aclError;
pub type aclrtFreeHost = unsafe extern "C" fn(hostPtr: *mut c_void) -> aclError;
pub type aclrtMemcpy = unsafe extern "C" fn(
    dst: *mut c_void,
    destMax: usize,
    src: *const c_void,
    count: usize,
    kind: aclrtMemcpyKind,
) -> aclError;
pub type aclrtMemcpyAsync = unsafe extern "C" fn(
    dst: *mut c_void,
    destMax: usize,
    src: *const c_void,
    count: usize,
    kind: aclrtMemcpyKind,
    stream: aclrtStream,
) -> aclError;
pub type aclrtMemset = unsafe extern "C" fn(
    devPtr: *mut c_void,
    maxCount: usize,
    value: i32,
    count: usize,
) -> aclError;
pub type aclGetRecentErrMsg = unsafe extern "C" fn() -> *const c_char;

// ---- libascendcl: graph capture (optional: absent from older CANN) ----
pub type aclmdlRICaptureBegin =
    unsafe extern "C" fn(stream: aclrtStream, mode: aclmdlRICaptureMode) -> aclError;
pub type aclmdlRICaptureGetInfo = unsafe extern "C" fn(
    stream: aclrtStream,
    status: *mut aclmdlRICaptureStatus,
    modelRI: *mut aclmdlRI,
) -> aclError;
pub type aclmdlRICaptureEnd =
    unsafe extern "C" fn(stream: aclrtStream, modelRI: *mut aclmdlRI) -> aclError;
pub type aclmdlRICaptureThreadExchangeMode =
    unsafe extern "C" fn(mode: *mut aclmdlRICaptureMode) -> aclError;
pub type aclmdlRIExecuteAsync =
    unsafe extern "C" fn(modelRI: aclmdlRI, stream: aclrtStream) -> aclError;
pub type aclmdlRIDestroy = unsafe extern "C" fn(modelRI: aclmdlRI) -> aclError;

// ---- libnnopbase ----
pub type aclCreateTensor = unsafe extern "C" fn(
    viewDims: *const i64,
    viewDimsNum: u64,
    dataType: aclDataType,
    stride: *const i64,
    offset: i64,
    format: aclFormat,
    storageDims: *const i64,
    storageDimsNum: u64,
    tensorData: *mut c_void,
) -> *mut aclTensor;
pub type aclDestroyTensor = unsafe extern "C" fn(tensor: *const aclTensor) -> aclnnStatus;
pub type aclCreateScalar =
    unsafe extern "C" fn(value: *mut c_void, dataType: aclDataType) -> *mut aclScalar;
pub type aclDestroyScalar = unsafe extern "C" fn(scalar: *const aclScalar) -> aclnnStatus;
pub type aclCreateIntArray = unsafe extern "C" fn(value: *const i64, size: u64) -> *mut aclIntArray;
pub type aclDestroyIntArray = unsafe extern "C" fn(array: *const aclIntArray) -> aclnnStatus;
/// Frees an executor that will not be launched (CANN 8.0 and later; optional).
pub type aclDestroyAclOpExecutor =
    unsafe extern "C" fn(executor: *mut aclOpExecutor) -> aclnnStatus;

// ---- libopapi: the aclnn two-phase calls ----
/// The second phase, the same for every operator:
/// `aclnnStatus aclnnX(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
/// aclrtStream stream)`.
pub type aclnnLaunch = unsafe extern "C" fn(
    workspace: *mut c_void,
    workspaceSize: u64,
    executor: *mut aclOpExecutor,
    stream: aclrtStream,
) -> aclnnStatus;

/// Declares the types of aclnn first phases. Each is
/// `aclnnStatus aclnnXGetWorkspaceSize(<the operator's arguments>, uint64_t *workspaceSize,
/// aclOpExecutor **executor)`: an entry gives the operator's own arguments, the macro adds the
/// two every first phase ends with.
macro_rules! get_workspace_size {
    ($($(#[$doc:meta])* $name:ident($($arg:ident: $ty:ty,)*);)*) => {
        $(
            $(#[$doc])*
            pub type $name = unsafe extern "C" fn(
                $($arg: $ty,)*
                workspaceSize: *mut u64,
                executor: *mut *mut aclOpExecutor,
            ) -> aclnnStatus;
        )*
    };
}

get_workspace_size! {
    /// `aclnnAdd`/`aclnnSub`: `(self, other, alpha, out, workspaceSize, executor)`.
    aclnnBinaryAlphaGetWorkspaceSize(
        self_: *const aclTensor,
        other: *const aclTensor,
        alpha: *const aclScalar,
        out: *mut aclTensor,
    );
    /// `aclnnMul`/`aclnnDiv`: `(self, other, out, workspaceSize, executor)`.
    aclnnBinaryGetWorkspaceSize(
        self_: *const aclTensor,
        other: *const aclTensor,
        out: *mut aclTensor,
    );
    /// `aclnnMatmul`: `(self, mat2, out, int8_t cubeMathType, workspaceSize, executor)`.
    aclnnMatmulGetWorkspaceSize(
        self_: *const aclTensor,
        mat2: *const aclTensor,
        out: *mut aclTensor,
        cubeMathType: i8,
    );
    /// `aclnnRelu`, `aclnnExp`, `aclnnSigmoid`, `aclnnTanh`, `aclnnSqrt`, `aclnnNeg`, `aclnnAbs`:
    /// `(self, out, workspaceSize, executor)`.
    aclnnUnaryGetWorkspaceSize(
        self_: *const aclTensor,
        out: *mut aclTensor,
    );
    /// `aclnnSoftmax`: `(self, int64_t dim, out, workspaceSize, executor)`.
    aclnnSoftmaxGetWorkspaceSize(
        self_: *const aclTensor,
        dim: i64,
        out: *mut aclTensor,
    );
    /// `aclnnCast`: `(self, const aclDataType dtype, out, workspaceSize, executor)`.
    aclnnCastGetWorkspaceSize(
        self_: *const aclTensor,
        dtype: aclDataType,
        out: *mut aclTensor,
    );
    /// `aclnnPermute`: `(self, const aclIntArray *dims, out, workspaceSize, executor)`.
    aclnnPermuteGetWorkspaceSize(
        self_: *const aclTensor,
        dims: *const aclIntArray,
        out: *mut aclTensor,
    );
    /// `aclnnReduceSum`/`aclnnMean`: `(self, dim, bool keepDim, aclDataType dtype, out, ...)`.
    aclnnReduceDtypeGetWorkspaceSize(
        self_: *const aclTensor,
        dim: *const aclIntArray,
        keepDim: bool,
        dtype: aclDataType,
        out: *mut aclTensor,
    );
    /// `aclnnAmax`/`aclnnAmin`: `(self, dim, bool keepDim, out, workspaceSize, executor)`.
    aclnnReduceGetWorkspaceSize(
        self_: *const aclTensor,
        dim: *const aclIntArray,
        keepDim: bool,
        out: *mut aclTensor,
    );
}
