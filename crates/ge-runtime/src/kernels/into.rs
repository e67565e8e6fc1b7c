//! Kernels that write into a given output buffer: what a plan replays in its reused buffers
//! ([`crate::arena`]). One enum, matched per step (no boxed closure); each variant computes
//! exactly what its allocating kernel computes. A step whose inputs a variant does not take
//! at run time ([`IntoOp::accepts`]) runs its allocating kernel instead.

use super::conv::nd::ConvInto;
use super::elementwise::{ArithInto, UnaryInto};
use super::matmul::MatmulInto;
use super::pool::MaxPoolInto;
use super::shape::ConcatInto;
use super::NodeInfo;
use crate::arena::Dest;
use crate::error::Result;
use crate::value::Value;
use es_core::DataType;

/// A kernel writing into a given output.
pub(crate) enum IntoOp {
    /// Binary arithmetic with broadcasting; may run in place on an input of the output's shape.
    Arith(ArithInto),
    /// A unary float function; may run in place.
    Unary(UnaryInto),
    /// Concat: copies the inputs its producers did not write in place.
    Concat(ConcatInto),
    /// A matrix product (and its bias) where b has no batch dims.
    Matmul(MatmulInto),
    /// A channels-first convolution (Conv2D, DepthwiseConv2D, Conv3D).
    Conv(Box<ConvInto>),
    /// An NCHW max pool of f32 or f64.
    MaxPool(MaxPoolInto),
}

impl IntoOp {
    /// The into-kernel of a node with one output of static `dims`, if it has one and no
    /// kernel was registered for its op type at run time (a registered kernel wins).
    pub(crate) fn of(info: &NodeInfo, dims: &[usize]) -> Result<Option<IntoOp>> {
        if super::is_custom(info.op()) || info.node.outputs.len() != 1 {
            return Ok(None);
        }
        if let Some(a) = ArithInto::of(info.op()) {
            return Ok(Some(IntoOp::Arith(a)));
        }
        if let Some(u) = UnaryInto::of(info)? {
            return Ok(Some(IntoOp::Unary(u)));
        }
        if let Some(m) = MatmulInto::of(info)? {
            return Ok(Some(IntoOp::Matmul(m)));
        }
        if let Some(c) = ConvInto::of(info)? {
            return Ok(Some(IntoOp::Conv(Box::new(c))));
        }
        if let Some(m) = MaxPoolInto::of(info)? {
            return Ok(Some(IntoOp::MaxPool(m)));
        }
        Ok(ConcatInto::of(info, dims)?.map(IntoOp::Concat))
    }

    /// Whether it may write its output over an input of the output's dtype and shape.
    pub(crate) fn elementwise(&self) -> bool {
        matches!(self, IntoOp::Arith(_) | IntoOp::Unary(_))
    }

    /// Whether a fused bias and activation may follow it (a product: convolution, MatMul).
    pub(crate) fn takes_epilogue(&self) -> bool {
        matches!(self, IntoOp::Conv(_) | IntoOp::Matmul(_))
    }

    /// Whether it may write into a slice of a Concat's output.
    pub(crate) fn placeable(&self) -> bool {
        !matches!(self, IntoOp::Concat(_))
    }

    pub(crate) fn concat(&self) -> Option<&ConcatInto> {
        match self {
            IntoOp::Concat(c) => Some(c),
            _ => None,
        }
    }

    /// Whether it computes this step from `args` (all present) into an output of `dtype` and
    /// `dims`.
    pub(crate) fn accepts(&self, args: &[Option<&Value>], dtype: DataType, dims: &[usize]) -> bool {
        match self {
            IntoOp::Arith(a) => a.accepts(args, dtype, dims),
            IntoOp::Unary(u) => u.accepts(args, dtype, dims),
            IntoOp::Concat(_) => true,
            IntoOp::Matmul(m) => m.accepts(args, dtype, dims),
            IntoOp::Conv(c) => c.accepts(args, dtype, dims),
            IntoOp::MaxPool(m) => m.accepts(args, dtype, dims),
        }
    }

    /// Computes the output into `d`.
    pub(crate) fn run(&self, args: &[Option<&Value>], d: Dest<'_>) -> Result<()> {
        match self {
            IntoOp::Arith(a) => a.run(args, d),
            IntoOp::Unary(u) => u.run(args, d),
            IntoOp::Concat(c) => c.run(args, d.out, d.dims),
            IntoOp::Matmul(m) => m.run(args, d),
            IntoOp::Conv(c) => c.run(args, d),
            IntoOp::MaxPool(m) => m.run(args, d),
        }
    }
}
