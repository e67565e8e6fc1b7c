//! REG_OP text import for `ge.ops` (the parser lives in es-core).

use crate::errors::IntoPyResult;
use crate::guard::guarded;
use pyo3::prelude::*;

guarded! {
    /// Parses REG_OP text and registers every operator in it; returns their names.
    #[pyfunction]
    pub fn _register_regop(text: &str) -> PyResult<Vec<String>> {
        let protos = es_core::regop::parse_regop(text).py()?;
        crate::ops::register(protos)
    }
}

guarded! {
    /// Parses REG_OP text into the operator-library JSON document (nothing is registered).
    #[pyfunction]
    pub fn _regop_to_json(text: &str) -> PyResult<String> {
        let protos = es_core::regop::parse_regop(text).py()?;
        let mut reg = es_core::OpRegistry::new("imported");
        for p in protos {
            reg.insert(p);
        }
        serde_json::to_string_pretty(&reg.to_json())
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))
    }
}
