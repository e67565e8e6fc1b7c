//! Tests of the shape and dtype inference rules through the builder over the built-in library
//! (so prototype validation runs too), one module per operator family with the names of
//! `src/infer/`: for each operator a known-shape case, an unknown-dim/rank case and, where the
//! rule can reject something, a wrong-input case.

#[path = "../common/mod.rs"]
mod common;

mod collective;
mod control;
mod conv;
mod coverage;
mod elementwise;
mod hints;
mod index;
mod layout;
mod matmul;
mod norm;
mod pool;
mod promote;
mod reduce;
mod sampling;
mod sequence;
mod shape;
mod source;
mod string;
mod transformer;

use common::*;
use es_core::attr::AttrValue;
use es_core::infer::{builtin_rule, infer, InferCtx};
use es_core::ops::{global_registry, IoKind, OpProto, TypeSpec};
use es_core::{DataType, Error, Format, Graph, NodeId, OutPort, Shape, Tensor, TensorDesc};

use DataType::{BF16, BOOL, DOUBLE, FLOAT, FLOAT16, INT32, INT64, INT8, UINT8, UNDEFINED};

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
        inputs: &inputs,
        input_ir: &input_ir,
        consts: &consts,
        output_ir: &output_ir,
        bound: &[],
        subgraph_outputs: Vec::new(),
    };
    infer(&ctx)
}

/// The dtypes an input of `ty` accepts.
fn allowed(p: &OpProto, input: &str) -> Vec<DataType> {
    let (_, d) = p.input(input).unwrap();
    p.allowed(&d.ty).unwrap().to_vec()
}

/// FLOAT when the input accepts it, else the first of a few common dtypes it accepts.
fn pick(p: &OpProto, input: &str) -> DataType {
    let a = allowed(p, input);
    [FLOAT, INT32, BOOL, INT64, FLOAT16]
        .into_iter()
        .find(|t| a.contains(t))
        .unwrap_or(a[0])
}

/// A dtype the input rejects.
fn reject(p: &OpProto, input: &str) -> DataType {
    let a = allowed(p, input);
    [
        DataType::STRING,
        DataType::COMPLEX64,
        BOOL,
        INT8,
        DataType::UINT64,
        FLOAT,
    ]
    .into_iter()
    .find(|t| !a.contains(t))
    .unwrap()
}

/// Output 0's single allowed dtype, or None when it follows a type variable / longer list.
fn fixed_out(p: &OpProto) -> Option<DataType> {
    match &p.outputs[0].ty {
        TypeSpec::List(l) if l.len() == 1 => Some(l[0]),
        _ => None,
    }
}
