//! Reading C arguments: strings, arrays, and GE's data-type and format enums.

use crate::error::{CError, CResult};
use es_core::{DataType, Format};
use std::ffi::{c_char, CStr};

/// GE's `C_DataType` (the values of `ge::DataType`).
#[allow(non_camel_case_types)]
pub type C_DataType = i32;
/// GE's `C_Format` (the values of `ge::Format`).
#[allow(non_camel_case_types)]
pub type C_Format = i32;

/// A NUL-terminated UTF-8 string argument that must be there.
pub unsafe fn c_str(p: *const c_char, what: &str) -> CResult<String> {
    c_str_opt(p, what)?.ok_or_else(|| CError::arg(format!("{what} is NULL")))
}

/// A string argument that may be NULL.
pub unsafe fn c_str_opt(p: *const c_char, what: &str) -> CResult<Option<String>> {
    if p.is_null() {
        return Ok(None);
    }
    CStr::from_ptr(p)
        .to_str()
        .map(|s| Some(s.to_string()))
        .map_err(|_| CError::arg(format!("{what} is not valid UTF-8")))
}

/// `n` elements at `p` (`p` may be NULL when `n` is 0).
pub unsafe fn slice<'a, T>(p: *const T, n: i64, what: &str) -> CResult<&'a [T]> {
    let n = usize::try_from(n)
        .map_err(|_| CError::arg(format!("{what}: count must be >= 0, got {n}")))?;
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(CError::arg(format!("{what} is NULL but its count is {n}")));
    }
    Ok(std::slice::from_raw_parts(p, n))
}

pub fn dtype(v: C_DataType) -> CResult<DataType> {
    DataType::from_value(v as i64).map_err(|_| CError::arg(format!("unknown C_DataType {v}")))
}

pub fn format(v: C_Format) -> CResult<Format> {
    Format::from_value(v as i64).map_err(|_| CError::arg(format!("unknown C_Format {v}")))
}

/// Frees a `Box` handed to C (NULL is ignored), under the panic guard.
pub unsafe fn drop_box<T>(p: *mut T) {
    crate::error::guard_quiet(|| {
        if !p.is_null() {
            drop(Box::from_raw(p));
        }
        Ok(())
    })
}
