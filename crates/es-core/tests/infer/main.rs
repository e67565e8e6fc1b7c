//! Tests of the shape and dtype inference rules through the builder over the built-in library
//! (so prototype validation runs too), one module per operator family with the names of
//! `src/infer/`: for each operator a known-shape case, an unknown-dim/rank case and, where the
//! rule can reject something, a wrong-input case.

#[path = "../common/mod.rs"]
mod common;

mod control;
mod conv;
mod coverage;
mod elementwise;
mod index;
mod matmul;
mod norm;
mod pool;
mod reduce;
mod sampling;
mod shape;
mod source;

use common::*;
use es_core::attr::AttrValue;
use es_core::infer::{builtin_rule, infer, InferCtx};
use es_core::ops::{global_registry, IoKind};
use es_core::{DataType, Error, Format, Graph, NodeId, OutPort, Shape, Tensor, TensorDesc};

use DataType::{BOOL, FLOAT, FLOAT16, INT32, INT64, INT8, UINT8, UNDEFINED};

/// Runs a rule on a hand-made context (for cases the builder cannot produce).
fn infer_raw(
    ty: &str,
    inputs: Vec<Option<&TensorDesc>>,
    input_ir: Vec<u32>,
    output_ir: Vec<u32>,
    attrs: &es_core::AttrMap,
) -> es_core::Result<Vec<TensorDesc>> {
    let reg = global_registry();
    let proto = reg.get(ty).unwrap().clone();
    let consts = vec![None; inputs.len()];
    let ctx = InferCtx {
        proto: &proto,
        node_name: "n",
        attrs,
        inputs,
        input_ir,
        consts,
        output_ir,
        bound: Default::default(),
    };
    infer(&ctx)
}
