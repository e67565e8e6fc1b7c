//! Indexing: Gather*, Scatter*, OneHot, Compress, NonZero, TopK, Unique.

use super::util::*;
use crate::error::{Error, Result};
use crate::translate::{NodeCtx, Registry};
use es_core::OutPort;
use std::sync::Arc;

type Out = Result<Vec<Option<OutPort>>>;

pub(crate) fn register(r: &mut Registry) {
    r.register(
        "ai.onnx.ml::ArrayFeatureExtractor",
        Arc::new(array_feature_extractor),
    );
}

/// X[..., indices] (indices flattened); a 1-D X gives [1, n].
fn array_feature_extractor(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.only_attrs(&[])?;
    let x = ctx.input(0)?;
    let idx = ctx.input(1)?;
    let rank = ctx.input_rank(0)?;
    if rank == 0 {
        return Err(Error::tr(
            "ArrayFeatureExtractor: X must have at least one dim",
        ));
    }
    let flat = ctx.const_i64(&[-1], &[1])?;
    let idx = ctx.op1("Reshape", &[idx, flat], vec![])?;
    let axis = ctx.const_i64(&[rank as i64 - 1], &[])?;
    let y = ctx.op1("GatherV2", &[x, idx, axis], vec![])?;
    if rank == 1 {
        let shape = ctx.const_i64(&[1, -1], &[2])?;
        return one(ctx.op1("Reshape", &[y, shape], vec![])?);
    }
    one(y)
}
