//! The built-in OpTranslator registry: the general handler driven by the declarative table
//! `ops/onnx_mapping.json` (entries with a `direct` spec), then special handlers for the
//! operators whose structure differs from GE's.

mod control;
mod conv;
mod direct;
mod elementwise;
mod gradient;
mod image;
mod index;
mod matmul;
mod ml;
mod ngram;
mod norm;
mod pool;
mod recurrent;
mod reduce;
mod sampling;
pub(crate) mod sequence;
mod shape;
mod signal;
mod source;
mod string;
mod training;
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
        shape::register_block_ops(&mut r);
        for table in [
            shape::TABLE,
            conv::TABLE,
            matmul::TABLE,
            pool::TABLE,
            norm::TABLE,
            sampling::TABLE,
            reduce::TABLE,
            control::TABLE,
            recurrent::TABLE,
            transformer::TABLE,
            training::TABLE,
            gradient::TABLE,
            elementwise::TABLE,
            index::TABLE,
            image::TABLE,
            source::TABLE,
            signal::TABLE,
            string::TABLE,
            ngram::TABLE,
            sequence::TABLE,
            ml::TABLE,
        ] {
            util::register_table(&mut r, table);
        }
        elementwise::register_variant_ops(&mut r);
        norm::register_variant_ops(&mut r);
        reduce::register_variant_ops(&mut r);
        source::register_variant_ops(&mut r);
        r
    })
}
