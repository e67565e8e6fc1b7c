//! No Rust panic crosses the Python boundary: every entry point of `ge._native` runs its body
//! through [`guard`], which turns a panic into `ge.InternalError` ("internal error, please
//! report: <panic text>"), a `ge.GeError`, instead of PyO3's `pyo3_runtime.PanicException` (a
//! `BaseException` outside the tree).
//!
//! Entry points are declared inside [`guarded!`], which wraps each function's body; PyO3 offers
//! no hook of its own (its trampolines turn a caught panic into `PanicException`
//! unconditionally). `tests/reliability/test_no_panic.py` checks that every `#[pyfunction]` and
//! `#[pymethods]` of this crate is written inside `guarded!`, and raises a real panic through a
//! callback to check the mapping.

use pyo3::PyResult;
use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::errors::InternalError;

/// Runs an entry point's body; a panic becomes `ge.InternalError`.
///
/// `AssertUnwindSafe`: the objects a panicking call touched may be left half-updated, which
/// the error's text tells the user to report; nothing is reused silently by this function.
pub fn guard<T>(body: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|payload| Err(internal_error(&*payload)))
}

/// What an entry point returns, as an `Ok` value: a `PyResult<T>` is `T`; the plain values
/// entry points return (a `bool`, a `String`, a list, ...) are themselves. [`guarded!`]
/// declares each function to Python as returning [`Returns<R>`] of its written return type `R`,
/// so that a panic can become an error even where the body cannot fail otherwise.
pub trait EntryResult {
    type Value;
    fn into_result(self) -> PyResult<Self::Value>;
}

/// The return type [`guarded!`] declares for a function written as returning `R`.
pub type Returns<R> = PyResult<<R as EntryResult>::Value>;

impl<T> EntryResult for PyResult<T> {
    type Value = T;
    fn into_result(self) -> PyResult<T> {
        self
    }
}

/// `EntryResult` for the plain (infallible) return types of the entry points.
macro_rules! plain_results {
    ($([$($g:tt),*] $ty:ty;)*) => {
        $(impl<$($g),*> EntryResult for $ty {
            type Value = Self;
            fn into_result(self) -> PyResult<Self> {
                Ok(self)
            }
        })*
    };
}

plain_results! {
    [] bool;
    [] i32;
    [] i64;
    [] u32;
    [] u64;
    [] usize;
    [] String;
    [] &'static str;
    [T] Vec<T>;
    [T] Option<T>;
    [T] pyo3::Py<T>;
    ['py, T] pyo3::Bound<'py, T>;
    [A, B, C, D, E] (A, B, C, D, E);
}

/// The `ge.InternalError` for a panic's payload (its text when it has one).
fn internal_error(payload: &(dyn Any + Send)) -> pyo3::PyErr {
    let text = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("a panic without a message");
    InternalError::new_err(format!("internal error, please report: {text}"))
}

/// Declares PyO3 entry points whose bodies run through [`guard`]: either one `#[pymethods]
/// impl Class { ... }` block, or free functions (each with its own `#[pyfunction]`). Each
/// function is declared as returning [`Returns`] of its written return type (a `PyResult` or a
/// plain value), which a function without `->` must still write (`-> PyResult<()>`).
macro_rules! guarded {
    (
        #[pymethods]
        impl $class:ident {
            $(
                $(#[$($attr:tt)*])*
                $vis:vis fn $name:ident $(<$($lt:lifetime),+>)? ($($args:tt)*) -> $ret:ty
                $body:block
            )*
        }
    ) => {
        #[pyo3::pymethods]
        impl $class {
            $(
                $(#[$($attr)*])*
                $vis fn $name $(<$($lt),+>)? ($($args)*) -> $crate::guard::Returns<$ret> {
                    $crate::guard::guard(move || <$ret as $crate::guard::EntryResult>::into_result($body))
                }
            )*
        }
    };
    (
        $(
            $(#[$($attr:tt)*])*
            $vis:vis fn $name:ident $(<$($lt:lifetime),+>)? ($($args:tt)*) -> $ret:ty
            $body:block
        )+
    ) => {
        $(
            $(#[$($attr)*])*
            $vis fn $name $(<$($lt),+>)? ($($args)*) -> $crate::guard::Returns<$ret> {
                $crate::guard::guard(move || <$ret as $crate::guard::EntryResult>::into_result($body))
            }
        )+
    };
}
pub(crate) use guarded;
