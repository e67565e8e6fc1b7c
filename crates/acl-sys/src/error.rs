//! Errors of loading ACL: the libraries and the functions the loader resolves.

use std::path::PathBuf;

/// Why the ACL libraries could not be loaded. (Errors of calling ACL belong to the safe
/// layer over this crate, `ge_acl::acl`.)
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
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
}

pub type Result<T> = std::result::Result<T, LoadError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_says_where_it_looked_and_how_to_fix() {
        let e = LoadError::NotFound {
            searched: vec![PathBuf::from("/opt/cann/lib64")],
        };
        let m = e.to_string();
        assert!(
            m.contains("/opt/cann/lib64") && m.contains("set_env.sh"),
            "{m}"
        );
        let e = LoadError::MissingSymbol {
            library: PathBuf::from("/x/libascendcl.so"),
            symbol: "aclInit".into(),
        };
        assert!(e.to_string().contains("does not export aclInit"), "{e}");
    }
}
