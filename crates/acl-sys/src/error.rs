//! Errors of loading and calling ACL.

use std::path::PathBuf;

/// What went wrong with ACL. [`Error::Acl`] carries the runtime's own explanation
/// (`aclGetRecentErrMsg()`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// `libascendcl.so` is in none of the searched directories.
    #[error(
        "the ACL runtime was not found: libascendcl.so is in none of {searched:?} (searched \
         $ASCEND_HOME_PATH/lib64, $ASCEND_TOOLKIT_HOME/lib64, then \
         /usr/local/Ascend/ascend-toolkit/latest/lib64). On a machine with CANN installed, \
         source its environment first: `source /usr/local/Ascend/ascend-toolkit/set_env.sh` \
         (or <your CANN install>/set_env.sh)"
    )]
    NotFound { searched: Vec<PathBuf> },
    /// A library exists but could not be loaded (a missing dependency, a wrong architecture).
    #[error("could not load {path:?}: {message} (did you source CANN's set_env.sh, which sets LD_LIBRARY_PATH?)")]
    Load { path: PathBuf, message: String },
    /// A required function is not exported by the library (an unsupported CANN version).
    #[error("{library:?} does not export {symbol}: this CANN version is not supported")]
    MissingSymbol { library: PathBuf, symbol: String },
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_say_what_and_how_to_fix() {
        let e = Error::NotFound {
            searched: vec![PathBuf::from("/opt/cann/lib64")],
        };
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
