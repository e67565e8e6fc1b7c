//! Inference rules of operators that GE programs use beside the common library: the RMS
//! normalizations (RmsNorm, AddRmsNorm), Threshold, Concat (concat_dim as an input) and the
//! HCCL collectives (HcomAllReduce, HcomAllGather, HcomReduceScatter, HcomBroadcast).
//!
//! The shape rules are those of the operators' infer functions in CANN (ops-nn
//! `rms_norm_infershape.cpp`, `add_rms_norm_infershape.cpp`; the collectives' GE rules:
//! all-gather multiplies dim 0 by rank_size, reduce-scatter divides it). The conventions are
//! those of `rules.rs`: unknown dims (-1) and ranks (`[-2]`) propagate without errors; errors
//! name the input or attribute and show expected and actual values.

use super::rules::{dtype_like, merge_dim, opt_int, single};
use super::{InferCtx, InferFn};
use crate::error::Result;
use crate::types::{DataType, Shape, TensorDesc, UNKNOWN_DIM};

/// The rule of an operator type of this module, if it has one.
pub fn rule(op_type: &str) -> Option<InferFn> {
    Some(match op_type {
        "RmsNorm" | "AddRmsNorm" => rms_norm,
        "Threshold" => same_as_x,
        "HcomAllReduce" => all_reduce,
        "HcomAllGather" | "HcomReduceScatter" => gather_scatter,
        "HcomBroadcast" => broadcast_collective,
        _ => return None,
    })
}

/// The reductions the collectives take (HCCL's names).
pub const REDUCTIONS: &[&str] = &["sum", "prod", "max", "min"];

/// y like x.
fn same_as_x(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let x = ctx.req("x")?;
    Ok(single(dtype_like(ctx, 0, Some(x)), x.shape.clone()))
}

/// x1 and x2 of AddRmsNorm: the same shape (dims merged), no broadcasting.
fn merged(ctx: &InferCtx, a: &TensorDesc, b: &TensorDesc) -> Result<Shape> {
    match (a.shape.rank(), b.shape.rank()) {
        (None, _) => Ok(b.shape.clone()),
        (_, None) => Ok(a.shape.clone()),
        (Some(ra), Some(rb)) => {
            let dims: Option<Vec<i64>> = (ra == rb)
                .then(|| {
                    a.shape
                        .0
                        .iter()
                        .zip(b.shape.0.iter())
                        .map(|(&p, &q)| merge_dim(p, q))
                        .collect()
                })
                .flatten();
            dims.map(Shape::from).ok_or_else(|| {
                ctx.err(format!(
                    "inputs 'x1' {} and 'x2' {} must have the same shape",
                    a.shape, b.shape
                ))
            })
        }
    }
}

/// RmsNorm (x, gamma) -> (y like x, rstd float32) and AddRmsNorm (x1, x2, gamma) -> (y, rstd,
/// x = x1 + x2). gamma covers the trailing dims of x; rstd keeps the leading dims and has 1 for
/// the dims gamma covers.
fn rms_norm(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let add = ctx.proto.name == "AddRmsNorm";
    let (x, x_shape) = if add {
        let (x1, x2) = (ctx.req("x1")?, ctx.req("x2")?);
        (x1, merged(ctx, x1, x2)?)
    } else {
        let x = ctx.req("x")?;
        (x, x.shape.clone())
    };
    let gamma = ctx.req("gamma")?;
    let rstd = match (x_shape.rank(), gamma.shape.rank()) {
        (Some(r), Some(g)) => {
            let x_name = if add { "x1 + x2" } else { "x" };
            if g > r {
                return Err(ctx.err(format!(
                    "input 'gamma' {} has more dims than {x_name} {x_shape}",
                    gamma.shape
                )));
            }
            let lead = r - g;
            let fits = x_shape.0[lead..]
                .iter()
                .zip(gamma.shape.0.iter())
                .all(|(&a, &b)| merge_dim(a, b).is_some());
            if !fits {
                return Err(ctx.err(format!(
                    "input 'gamma' {} must match the trailing dims of {x_name} {x_shape}",
                    gamma.shape
                )));
            }
            let mut s = x_shape.0[..lead].to_vec();
            s.resize(r, 1);
            Shape::from(s)
        }
        _ => Shape::unknown_rank(),
    };
    let dt = dtype_like(ctx, 0, Some(x));
    let mut out = vec![
        TensorDesc::new(dt, x_shape.clone()),
        TensorDesc::new(DataType::FLOAT, rstd),
    ];
    if add {
        out.push(TensorDesc::new(dt, x_shape));
    }
    Ok(out)
}

/// The `reduction` attribute of a collective, checked.
fn check_reduction(ctx: &InferCtx) -> Result<()> {
    let r = ctx.attr_str("reduction")?;
    if !REDUCTIONS.contains(&r) {
        return Err(ctx.err(format!(
            "attribute 'reduction' is {r:?}; expected one of {}",
            REDUCTIONS.join(", ")
        )));
    }
    Ok(())
}

/// HcomAllReduce: y like x.
fn all_reduce(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    check_reduction(ctx)?;
    ctx.attr_str("group")?;
    same_as_x(ctx)
}

/// HcomAllGather (dim 0 times rank_size) and HcomReduceScatter (dim 0 divided by rank_size,
/// which must divide it).
fn gather_scatter(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    let gather = ctx.proto.name == "HcomAllGather";
    if !gather {
        check_reduction(ctx)?;
    }
    ctx.attr_str("group")?;
    let n = ctx.attr_int("rank_size")?;
    if n < 1 {
        return Err(ctx.err(format!(
            "attribute 'rank_size' is {n}; it must be at least 1"
        )));
    }
    let x = ctx.req("x")?;
    let dt = dtype_like(ctx, 0, Some(x));
    let Some(r) = x.shape.rank() else {
        return Ok(single(dt, Shape::unknown_rank()));
    };
    if r == 0 {
        return Err(ctx.err(format!("input 'x' {} must have at least one dim", x.shape)));
    }
    let mut dims = x.shape.0.to_vec();
    let d0 = dims[0];
    dims[0] = if d0 == UNKNOWN_DIM {
        UNKNOWN_DIM
    } else if gather {
        d0.checked_mul(n)
            .ok_or_else(|| ctx.err(format!("dim 0 of x {} times {n} overflows", x.shape)))?
    } else if d0 % n != 0 {
        return Err(ctx.err(format!(
            "dim 0 of input 'x' {} is not divisible by attribute 'rank_size' {n}",
            x.shape
        )));
    } else {
        d0 / n
    };
    Ok(single(dt, Shape::from(dims)))
}

/// HcomBroadcast: each y like its x.
fn broadcast_collective(ctx: &InferCtx) -> Result<Vec<TensorDesc>> {
    ctx.attr_str("group")?;
    let root = opt_int(ctx, "root_rank", 0)?;
    if root < 0 {
        return Err(ctx.err(format!("attribute 'root_rank' is {root}; it must be >= 0")));
    }
    let xs = ctx.inputs_of("x")?;
    if xs.len() != ctx.num_outputs() {
        return Err(ctx.err(format!(
            "{} inputs 'x' but {} outputs 'y'",
            xs.len(),
            ctx.num_outputs()
        )));
    }
    Ok(xs
        .iter()
        .map(|x| TensorDesc::new(dtype_like(ctx, 0, Some(x)), x.shape.clone()))
        .collect())
}
