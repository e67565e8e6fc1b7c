//! `ge._native`: the PyO3 glue between es-core and the `ge` Python package. Glue only: every
//! rule lives in es-core.

mod air;
mod attrs;
mod builder;
mod convert;
mod errors;
mod graph;
mod guard;
mod om;
mod onnx;
mod ops;
mod passes;
mod regop;
mod session;
mod source;
mod tensor;

use crate::guard::guarded;
use pyo3::prelude::*;

/// Graph building allocates many small objects; mimalloc is markedly faster than the system
/// allocator for that (see BENCHMARKS.md). Only Rust allocations use it.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

guarded! {
    /// Names of every operator in the library.
    #[pyfunction]
    fn _op_names() -> Vec<String> {
        es_core::ops::global_registry()
            .iter()
            .map(|p| p.name.clone())
            .collect()
    }
}

guarded! {
    /// The operator library as JSON text (what codegen and `ge ops` read).
    #[pyfunction]
    fn _ops_json() -> String {
        es_core::ops::global_registry().to_json().to_string()
    }
}

guarded! {
    /// The current built-in library's `operators.json` as shipped (type classes unexpanded, unlike
    /// `_ops_json`, and without operators registered at run time): what the built-in `ge.es` op
    /// modules are generated from.
    #[pyfunction]
    fn _builtin_ops_json() -> &'static str {
        let libraries = es_core::ops::BUILTIN_LIBRARIES;
        libraries[libraries.len() - 1].1
    }
}

guarded! {
    /// The built-in library version.
    #[pyfunction]
    fn _ops_version() -> String {
        es_core::ops::global_registry().version.clone()
    }
}

/// The user's line: the innermost Python frame outside the `ge` package (generated op
/// functions and `ge` helpers are skipped).
fn user_line() -> Option<std::sync::Arc<str>> {
    static GE_DIR: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    Python::with_gil(|py| {
        let ge_dir = GE_DIR
            .get_or_init(|| {
                let file: String = py
                    .import("ge")
                    .ok()?
                    .getattr("__file__")
                    .ok()?
                    .extract()
                    .ok()?;
                let dir = std::path::Path::new(&file).parent()?;
                Some(format!("{}{}", dir.display(), std::path::MAIN_SEPARATOR))
            })
            .as_deref()?;
        let mut frame = py
            .import("sys")
            .ok()?
            .call_method1("_getframe", (0,))
            .ok()?;
        loop {
            if frame.is_none() {
                return None;
            }
            let file: String = frame
                .getattr("f_code")
                .ok()?
                .getattr("co_filename")
                .ok()?
                .extract()
                .ok()?;
            if !file.starts_with(ge_dir) {
                let line: i64 = frame.getattr("f_lineno").ok()?.extract().ok()?;
                return Some(std::sync::Arc::from(format!("{file}:{line}")));
            }
            frame = frame.getattr("f_back").ok()?;
        }
    })
}

/// The extension module, declared: every class, function and exception it exports is listed
/// here once. The exception classes are created under `ge` (their `__module__`; see errors.rs).
#[pymodule]
mod _native {
    use pyo3::prelude::*;

    #[pymodule_export]
    use crate::errors::{
        CompatibilityError, DeviceError, ExecutionError, GeError, GraphBuildError, InternalError,
        PassError, ResourceError, ShapeInferenceError, TranslationError,
    };

    #[pymodule_export]
    use crate::passes::{
        _can_fuse, _clear_passes, _infer_shape, _register_pass, _registered_pass_keys,
        _report_fuse, _run_passes, _unregister_pass, MatchResult, PassContext, Pattern,
        PatternMatcherConfig, PatternMatcherConfigBuilder, SubgraphBoundary, SubgraphInput,
        SubgraphOutput, SubgraphRewriter,
    };

    #[pymodule_export]
    use crate::builder::{
        _call_op, _pop_attr_scope, _pop_control_scope, _push_attr_scope, _push_control_scope,
        GraphBuilderBase, TensorHolder,
    };

    #[pymodule_export]
    use crate::graph::{Graph, Node};

    #[pymodule_export]
    use crate::tensor::TensorData;

    #[pymodule_export]
    use crate::session::{
        _acl_op_types, _collective_create_group, _collective_destroy_group,
        _collective_group_ranks, _collective_world, _cpu_kernel_op_types, _launched_world_size,
        _register_kernel, _session_option_keys, _unregister_kernel, SessionCore,
    };

    #[pymodule_export]
    use crate::om::OmModelCore;

    #[pymodule_export]
    use crate::onnx::{
        _onnx_load, _onnx_register_translator, _onnx_translator_keys, _onnx_unregister_translator,
    };

    #[pymodule_export]
    use crate::air::{_onnx_export_bytes, _onnx_exporter_keys, _onnx_save};

    #[pymodule_export]
    use crate::ops::{
        _adapt, _adapt_between, _library_versions, _op_json, _register_infer, _register_ops_json,
    };

    #[pymodule_export]
    use crate::regop::{_register_regop, _regop_to_json};

    #[pymodule_export]
    use super::{_builtin_ops_json, _op_names, _ops_json, _ops_version};

    #[pymodule_init]
    fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
        crate::guard::guard(|| {
            es_core::builder::set_locator(super::user_line);
            // ge.device=acl/auto sessions open devices through ge-acl's backend.
            ge_acl::register();
            m.add("__version__", env!("CARGO_PKG_VERSION"))
        })
    }
}
