//! The built-in OpTranslator registry: the general handler driven by the declarative table
//! `ops/onnx_mapping.json` (entries with a `direct` spec), then special handlers for the
//! operators whose structure differs from GE's.

mod control;
mod conv;
mod direct;
mod elementwise;
mod index;
mod matmul;
mod norm;
mod pool;
mod recurrent;
mod reduce;
mod sampling;
mod shape;
mod source;
mod transformer;
pub(crate) mod util;

use crate::translate::Registry;
use std::sync::OnceLock;

/// The registry of built-in translators (built once).
pub fn builtin() -> &'static Registry {
    static R: OnceLock<Registry> = OnceLock::new();
    R.get_or_init(|| {
        let mut r = Registry::empty();
        direct::register(&mut r);
        shape::register(&mut r);
        conv::register(&mut r);
        matmul::register(&mut r);
        pool::register(&mut r);
        norm::register(&mut r);
        sampling::register(&mut r);
        reduce::register(&mut r);
        control::register(&mut r);
        recurrent::register(&mut r);
        transformer::register(&mut r);
        elementwise::register(&mut r);
        index::register(&mut r);
        source::register(&mut r);
        r
    })
}
