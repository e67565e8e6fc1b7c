//! Matrix products: MatMul, Gemm, Einsum, DFT.

use super::util::*;
use crate::error::Result;
use crate::translate::{NodeCtx, Registry};
use es_core::{AttrValue, OutPort};
use std::sync::Arc;

type Out = Result<Vec<Option<OutPort>>>;

pub(crate) fn register(r: &mut Registry) {
    r.register("MatMul", Arc::new(matmul));
    r.register("Gemm", Arc::new(gemm));
}

// ---------------------------------------------------------------------------------------------
// MatMul, Gemm
// ---------------------------------------------------------------------------------------------

fn matmul(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&[])?;
    let (ra, rb) = (ctx.input_rank(0)?, ctx.input_rank(1)?);
    let (a, b) = (ctx.input(0)?, ctx.input(1)?);
    Ok(vec![Some(matmul_ports(ctx, a, b, ra, rb)?)])
}

fn gemm(ctx: &mut NodeCtx<'_>) -> Out {
    ctx.known_attrs(&["alpha", "beta", "transA", "transB", "broadcast"])?;
    let alpha = f64::from(ctx.attr_f("alpha", 1.0)?);
    let beta = f64::from(ctx.attr_f("beta", 1.0)?);
    let ta = ctx.attr_i("transA", 0)? != 0;
    let tb = ctx.attr_i("transB", 0)? != 0;
    let (a, b) = (ctx.input(0)?, ctx.input(1)?);
    let mut y = ctx.op1(
        "MatMulV2",
        &[a, b],
        vec![
            ("transpose_x1", AttrValue::Bool(ta)),
            ("transpose_x2", AttrValue::Bool(tb)),
        ],
    )?;
    if alpha != 1.0 {
        let k = ctx.scalar_as(y, alpha)?;
        y = ctx.op1("Mul", &[y, k], vec![])?;
    }
    if let Some(mut c) = ctx.opt_input(2)? {
        if beta != 1.0 {
            let k = ctx.scalar_as(c, beta)?;
            c = ctx.op1("Mul", &[c, k], vec![])?;
        }
        y = ctx.op1("Add", &[y, c], vec![])?;
    }
    Ok(vec![Some(y)])
}
