//! Errors across the C boundary: every entry point runs its body under [`guard`], which catches
//! panics, turns errors into a status code (or a NULL / zeroed return) and records the message
//! in a thread-local that `EsGetLastErrorMessage` reads.

use std::cell::RefCell;
use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Success.
pub const ES_SUCCESS: u32 = 0;
/// A bad argument: a NULL where a value is needed, a negative count, an unknown enum value.
pub const ES_ERR_INVALID_ARGUMENT: u32 = 1;
/// The graph cannot be built as asked (a bad op call, inference, validation).
pub const ES_ERR_BUILD: u32 = 2;
/// A feature ge-rs does not have (the message starts with "not supported: ").
pub const ES_ERR_NOT_SUPPORTED: u32 = 3;
/// Reading or writing a file, or a file that is not a graph.
pub const ES_ERR_IO: u32 = 4;
/// Running a graph failed.
pub const ES_ERR_RUN: u32 = 5;
/// A bug in ge-rs (a panic caught at the boundary).
pub const ES_ERR_INTERNAL: u32 = 6;

/// An error on its way to the C caller: a status code and a message.
#[derive(Debug, Clone, PartialEq)]
pub struct CError {
    pub code: u32,
    pub message: String,
}

pub type CResult<T> = Result<T, CError>;

impl CError {
    pub fn new(code: u32, message: impl Into<String>) -> Self {
        CError {
            code,
            message: message.into(),
        }
    }
    pub fn arg(message: impl Into<String>) -> Self {
        Self::new(ES_ERR_INVALID_ARGUMENT, message)
    }
}

impl From<es_core::Error> for CError {
    fn from(e: es_core::Error) -> Self {
        use es_core::Error as E;
        let code = match &e {
            E::NotSupported(_) => ES_ERR_NOT_SUPPORTED,
            E::Serialization(_) => ES_ERR_IO,
            E::Value(_) | E::Type(_) => ES_ERR_INVALID_ARGUMENT,
            _ => ES_ERR_BUILD,
        };
        CError::new(code, e.to_string())
    }
}

impl From<ge_runtime::Error> for CError {
    fn from(e: ge_runtime::Error) -> Self {
        let code = match &e {
            ge_runtime::Error::Unsupported(_) => ES_ERR_NOT_SUPPORTED,
            _ => ES_ERR_RUN,
        };
        CError::new(code, e.to_string())
    }
}

thread_local! {
    static LAST: RefCell<(u32, CString)> = RefCell::new((ES_SUCCESS, CString::default()));
}

fn record(code: u32, message: &str) {
    // An interior NUL would cut the message; show it instead.
    let text = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    LAST.with(|l| *l.borrow_mut() = (code, text));
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

/// Runs an entry point's body: on success returns its value and clears the last error; on an
/// error or a panic records it and returns `failed`.
pub fn guard<T>(failed: T, body: impl FnOnce() -> CResult<T>) -> T {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(v)) => {
            record(ES_SUCCESS, "");
            v
        }
        Ok(Err(e)) => {
            record(e.code, &e.message);
            failed
        }
        Err(p) => {
            record(
                ES_ERR_INTERNAL,
                &format!("internal error (please report): {}", panic_text(&*p)),
            );
            failed
        }
    }
}

/// [`guard`] for the destroy and free functions: a failure (or panic) is recorded, a success
/// leaves the last error as it was, so that a program may clean up before reading it.
pub fn guard_quiet(body: impl FnOnce() -> CResult<()>) {
    let before = LAST.with(|l| l.borrow().clone());
    guard((), body);
    if EsGetLastErrorCode() == ES_SUCCESS {
        LAST.with(|l| *l.borrow_mut() = before);
    }
}

/// [`guard`] for entry points that return a status code.
pub fn guard_status(body: impl FnOnce() -> CResult<()>) -> u32 {
    guard((), body);
    EsGetLastErrorCode()
}

/// The message of the previous call on this thread when it failed (read at the start of a
/// call, before that call's own outcome replaces it).
pub fn previous_failure() -> Option<String> {
    LAST.with(|l| {
        let l = l.borrow();
        (l.0 != ES_SUCCESS).then(|| l.1.to_string_lossy().into_owned())
    })
}

/// The message of the last failed call on this thread, or "" when the last call succeeded.
/// The text stays valid until the next ES call on the same thread.
#[no_mangle]
pub extern "C" fn EsGetLastErrorMessage() -> *const c_char {
    LAST.with(|l| l.borrow().1.as_ptr())
}

/// The status code of the last call on this thread (`ES_SUCCESS` when it succeeded).
#[no_mangle]
pub extern "C" fn EsGetLastErrorCode() -> u32 {
    LAST.with(|l| l.borrow().0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    fn last() -> String {
        unsafe { CStr::from_ptr(EsGetLastErrorMessage()) }
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn errors_and_panics_become_codes_and_messages() {
        assert_eq!(guard_status(|| Err(CError::arg("bad x"))), 1);
        assert_eq!(last(), "bad x");
        assert_eq!(EsGetLastErrorCode(), ES_ERR_INVALID_ARGUMENT);
        assert_eq!(guard_status(|| Ok(())), ES_SUCCESS);
        assert_eq!(last(), "");
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let v = guard(7, || -> CResult<i32> { panic!("boom") });
        std::panic::set_hook(prev);
        assert_eq!(v, 7);
        assert_eq!(EsGetLastErrorCode(), ES_ERR_INTERNAL);
        assert!(last().contains("boom"), "{}", last());
    }
}
