//! Errors of loading and calling ACL, and [`ApiExt::check`], which turns an ACL status code
//! into one.

use acl_sys::{ffi, Api, LoadError};

/// What went wrong with ACL. [`Error::Acl`] carries the runtime's own explanation
/// (`aclGetRecentErrMsg()`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The libraries could not be loaded (not found, not loadable, a function missing).
    #[error(transparent)]
    Load(#[from] LoadError),
    /// An ACL call returned an error code.
    #[error("{call} failed with error {code}{}", if message.is_empty() { String::new() } else { format!(": {message}") })]
    Acl {
        call: &'static str,
        code: i32,
        message: String,
    },
    /// Something this ACL installation (or this crate) does not offer, such as graph capture
    /// on a CANN without the `aclmdlRI*` functions, or an operator without its aclnn functions.
    #[error("not supported: {0}")]
    Unsupported(String),
    /// Bad arguments to a wrapper (sizes, shapes), caught before calling ACL.
    #[error("{0}")]
    Invalid(String),
}

pub type Result<T> = std::result::Result<T, Error>;

/// The status check every safe wrapper makes after an ACL call.
pub trait ApiExt {
    /// `Ok` for `ACL_SUCCESS`, else an [`Error::Acl`] with the runtime's message.
    fn check(&self, call: &'static str, code: i32) -> Result<()>;
}

impl ApiExt for Api {
    fn check(&self, call: &'static str, code: i32) -> Result<()> {
        if code == ffi::ACL_SUCCESS {
            Ok(())
        } else {
            Err(Error::Acl {
                call,
                code,
                message: self.recent_error(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_say_what_and_how_to_fix() {
        let e = Error::from(LoadError::NotFound {
            searched: vec![std::path::PathBuf::from("/opt/cann/lib64")],
        });
        let m = e.to_string();
        assert!(
            m.contains("/opt/cann/lib64") && m.contains("set_env.sh"),
            "{m}"
        );
        let e = Error::Acl {
            call: "aclrtMalloc",
            code: 207001,
            message: "out of memory".into(),
        };
        assert_eq!(
            e.to_string(),
            "aclrtMalloc failed with error 207001: out of memory"
        );
        let e = Error::Acl {
            call: "aclrtFree",
            code: 100000,
            message: String::new(),
        };
        assert_eq!(e.to_string(), "aclrtFree failed with error 100000");
        assert!(Error::Unsupported("graph capture".into())
            .to_string()
            .starts_with("not supported: "));
    }
}
