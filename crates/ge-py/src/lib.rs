//! `ge._native`: the PyO3 glue between es-core and the `ge` Python package. Glue only: every
//! rule lives in es-core.

mod air;
mod builder;
mod convert;
mod errors;
mod graph;
mod om;
mod onnx;
mod ops;
mod passes;
mod regop;
mod session;
mod tensor;

use pyo3::prelude::*;

/// Graph building allocates many small objects; mimalloc is markedly faster than the system
/// allocator for that (see BENCHMARKS.md). Only Rust allocations use it.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Names of every operator in the library.
#[pyfunction]
fn _op_names() -> Vec<String> {
    es_core::ops::global_registry()
        .iter()
        .map(|p| p.name.clone())
        .collect()
}

/// The operator library as JSON text (what codegen and `ge ops` read).
#[pyfunction]
fn _ops_json() -> String {
    es_core::ops::global_registry().to_json().to_string()
}

/// The built-in library version.
#[pyfunction]
fn _ops_version() -> String {
    es_core::ops::global_registry().version.clone()
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

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    es_core::builder::set_locator(user_line);
    // ge.device=acl/auto sessions open devices through ge-acl's backend.
    ge_acl::register();
    errors::register(m)?;
    passes::register(m)?;
    m.add_class::<builder::GraphBuilderBase>()?;
    m.add_class::<builder::PyTensorHolder>()?;
    m.add_class::<graph::PyGraph>()?;
    m.add_class::<graph::PyNode>()?;
    m.add_class::<tensor::TensorData>()?;
    m.add_class::<session::SessionCore>()?;
    m.add_class::<om::OmModelCore>()?;
    m.add_function(wrap_pyfunction!(session::_cpu_kernel_op_types, m)?)?;
    m.add_function(wrap_pyfunction!(session::_acl_op_types, m)?)?;
    m.add_function(wrap_pyfunction!(session::_session_option_keys, m)?)?;
    m.add_function(wrap_pyfunction!(session::_register_kernel, m)?)?;
    m.add_function(wrap_pyfunction!(session::_unregister_kernel, m)?)?;
    m.add_function(wrap_pyfunction!(builder::_call_op, m)?)?;
    m.add_function(wrap_pyfunction!(builder::_push_attr_scope, m)?)?;
    m.add_function(wrap_pyfunction!(builder::_pop_attr_scope, m)?)?;
    m.add_function(wrap_pyfunction!(builder::_push_control_scope, m)?)?;
    m.add_function(wrap_pyfunction!(builder::_pop_control_scope, m)?)?;
    m.add_function(wrap_pyfunction!(onnx::_onnx_load, m)?)?;
    m.add_function(wrap_pyfunction!(onnx::_onnx_translator_keys, m)?)?;
    m.add_function(wrap_pyfunction!(onnx::_onnx_register_translator, m)?)?;
    m.add_function(wrap_pyfunction!(onnx::_onnx_unregister_translator, m)?)?;
    m.add_function(wrap_pyfunction!(air::_onnx_save, m)?)?;
    m.add_function(wrap_pyfunction!(air::_onnx_export_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(air::_onnx_exporter_keys, m)?)?;
    m.add_function(wrap_pyfunction!(_op_names, m)?)?;
    m.add_function(wrap_pyfunction!(_ops_json, m)?)?;
    m.add_function(wrap_pyfunction!(_ops_version, m)?)?;
    m.add_function(wrap_pyfunction!(ops::_register_ops_json, m)?)?;
    m.add_function(wrap_pyfunction!(ops::_op_json, m)?)?;
    m.add_function(wrap_pyfunction!(ops::_register_infer, m)?)?;
    m.add_function(wrap_pyfunction!(ops::_library_versions, m)?)?;
    m.add_function(wrap_pyfunction!(ops::_adapt, m)?)?;
    m.add_function(wrap_pyfunction!(ops::_adapt_between, m)?)?;
    m.add_function(wrap_pyfunction!(regop::_register_regop, m)?)?;
    m.add_function(wrap_pyfunction!(regop::_regop_to_json, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
