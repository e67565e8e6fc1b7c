//! Element-wise kernels writing into a given output: binary arithmetic (with numpy
//! broadcasting) and the unary float functions, for the plan's buffers
//! ([`crate::kernels::IntoOp`]). The output is a slice of a buffer; an input the plan moved
//! there (in place) is absent from the arguments. Each element is computed by exactly the
//! function the allocating kernels apply, so results are bitwise the same.

use super::{float_fn, unary_params, Arith, Bin, Cheap, FloatFn, UNARY};
use crate::arena::{out_slice, Dest, ElemArray};
use crate::error::{Error, Result};
use crate::kernels::vmath::{self, VFn};
use crate::kernels::NodeInfo;
use crate::par;
use crate::value::{Elem, Value};
use es_core::DataType;
use half::{bf16, f16};
use ndarray::{ArrayD, ArrayViewMutD, IxDyn, Zip};
use rayon::prelude::*;
use std::ops::Range;

/// Runs `$body` with `$t` the element type of a numeric dtype (not bool, not low precision);
/// another dtype evaluates `$other`.
macro_rules! numeric {
    ($dt:expr, $t:ident => $body:expr, $other:expr) => {
        match $dt {
            DataType::FLOAT => {
                type $t = f32;
                $body
            }
            DataType::DOUBLE => {
                type $t = f64;
                $body
            }
            DataType::FLOAT16 => {
                type $t = f16;
                $body
            }
            DataType::BF16 => {
                type $t = bf16;
                $body
            }
            DataType::INT8 => {
                type $t = i8;
                $body
            }
            DataType::INT16 => {
                type $t = i16;
                $body
            }
            DataType::INT32 => {
                type $t = i32;
                $body
            }
            DataType::INT64 => {
                type $t = i64;
                $body
            }
            DataType::UINT8 => {
                type $t = u8;
                $body
            }
            DataType::UINT16 => {
                type $t = u16;
                $body
            }
            DataType::UINT32 => {
                type $t = u32;
                $body
            }
            DataType::UINT64 => {
                type $t = u64;
                $body
            }
            _ => $other,
        }
    };
}

/// Whether an array of shape `x` broadcasts to `dims` with `dims` unchanged (numpy's rules:
/// right-aligned, each dim equal or 1). Allocates nothing.
pub(crate) fn broadcasts(x: &[usize], dims: &[usize]) -> bool {
    x.len() <= dims.len()
        && x.iter()
            .rev()
            .zip(dims.iter().rev())
            .all(|(&a, &d)| a == d || a == 1)
}

/// Whether `x` is of `dtype` and broadcasts to `dims`.
fn broadcasts_to(x: &Value, dtype: DataType, dims: &[usize]) -> bool {
    x.dtype() == dtype && broadcasts(x.shape(), dims)
}

/// Input `i` as an array of `T`; `None` when it is the one moved into the output.
fn operand<'a, T: ElemArray>(
    args: &[Option<&'a Value>],
    i: usize,
    alias: Option<usize>,
) -> Result<Option<&'a ArrayD<T>>> {
    if alias == Some(i) {
        return Ok(None);
    }
    let v = args
        .get(i)
        .copied()
        .flatten()
        .ok_or_else(|| Error::kernel(format!("input {i} is missing")))?;
    T::array(v)
        .map(Some)
        .ok_or_else(|| Error::kernel(format!("input {i} has dtype {}", v.dtype())))
}

fn out_part<T: ElemArray>(out: &mut Value, range: Range<usize>) -> Result<&mut [T]> {
    let dt = out.dtype();
    out_slice(out, range)
        .ok_or_else(|| Error::kernel(format!("an output buffer of {dt} does not fit")))
}

/// One operand of a step writing into its output, where no general broadcast is needed.
#[derive(Clone, Copy)]
enum Opnd<'a, T> {
    /// The output itself (the input was moved there).
    Out,
    /// Elements in the output's order.
    Slice(&'a [T]),
    /// One element, broadcast.
    Scalar(T),
}

impl<'a, T: Copy> Opnd<'a, T> {
    /// `x` (None: the output) as an operand for an output of `dims`; None where it needs the
    /// general broadcast.
    fn of(x: Option<&'a ArrayD<T>>, dims: &[usize]) -> Option<Self> {
        let Some(x) = x else {
            return Some(Opnd::Out);
        };
        if x.shape() == dims {
            return x.as_slice().map(Opnd::Slice);
        }
        (x.len() == 1).then(|| x.iter().next().map(|&v| Opnd::Scalar(v)))?
    }
    /// Elements `off..off + len` of this operand.
    fn part(self, off: usize, len: usize) -> Self {
        match self {
            Opnd::Slice(s) => Opnd::Slice(&s[off..off + len]),
            o => o,
        }
    }
}

fn zip_part<T: Copy>(a: Opnd<T>, b: Opnd<T>, out: &mut [T], f: &impl Fn(T, T) -> T) {
    use Opnd::*;
    match (a, b) {
        (Out, Out) => out.iter_mut().for_each(|o| *o = f(*o, *o)),
        (Out, Slice(y)) => out.iter_mut().zip(y).for_each(|(o, &y)| *o = f(*o, y)),
        (Out, Scalar(y)) => out.iter_mut().for_each(|o| *o = f(*o, y)),
        (Slice(x), Out) => out.iter_mut().zip(x).for_each(|(o, &x)| *o = f(x, *o)),
        (Scalar(x), Out) => out.iter_mut().for_each(|o| *o = f(x, *o)),
        (Slice(x), Slice(y)) => out
            .iter_mut()
            .zip(x.iter().zip(y))
            .for_each(|(o, (&x, &y))| *o = f(x, y)),
        (Slice(x), Scalar(y)) => out.iter_mut().zip(x).for_each(|(o, &x)| *o = f(x, y)),
        (Scalar(x), Slice(y)) => out.iter_mut().zip(y).for_each(|(o, &y)| *o = f(x, y)),
        (Scalar(x), Scalar(y)) => out.iter_mut().for_each(|o| *o = f(x, y)),
    }
}

/// `out = f(a, b)` element by element, `a`, `b` broadcast to `dims` (None: the output's own
/// elements); large outputs split across the run's threads.
pub(crate) fn zip_into<T: Copy + Send + Sync>(
    a: Option<&ArrayD<T>>,
    b: Option<&ArrayD<T>>,
    out: &mut [T],
    dims: &[usize],
    f: impl Fn(T, T) -> T + Sync,
) -> Result<()> {
    if let (Some(x), Some(y)) = (Opnd::of(a, dims), Opnd::of(b, dims)) {
        let chunks = par::chunks_for(par::work(out.len(), par::cost::ELEMENT));
        if chunks > 1 {
            let len = out.len().div_ceil(chunks);
            par::install(|| {
                out.par_chunks_mut(len).enumerate().for_each(|(i, o)| {
                    let n = o.len();
                    zip_part(x.part(i * len, n), y.part(i * len, n), o, &f)
                })
            });
        } else {
            zip_part(x, y, out, &f);
        }
        return Ok(());
    }
    // Broadcast or strided operands: about a strided copy's cost per element.
    let par = par::chunks_for(par::work(out.len(), par::cost::STRIDED)) > 1;
    let mut ov =
        ArrayViewMutD::from_shape(IxDyn(dims), out).map_err(|e| Error::kernel(e.to_string()))?;
    let fits = |x: &ArrayD<T>| broadcasts(x.shape(), dims);
    if !a.is_none_or(fits) || !b.is_none_or(fits) {
        return Err(Error::kernel(format!(
            "inputs do not broadcast to {dims:?}"
        )));
    }
    match (a, b) {
        (None, Some(y)) => {
            let z = Zip::from(&mut ov).and_broadcast(y);
            let g = |o: &mut T, &y: &T| *o = f(*o, y);
            if par {
                par::install(|| z.par_for_each(g))
            } else {
                z.for_each(g)
            }
        }
        (Some(x), None) => {
            let z = Zip::from(&mut ov).and_broadcast(x);
            let g = |o: &mut T, &x: &T| *o = f(x, *o);
            if par {
                par::install(|| z.par_for_each(g))
            } else {
                z.for_each(g)
            }
        }
        (Some(x), Some(y)) => {
            let z = Zip::from(&mut ov).and_broadcast(x).and_broadcast(y);
            let g = |o: &mut T, &x: &T, &y: &T| *o = f(x, y);
            if par {
                par::install(|| z.par_for_each(g))
            } else {
                z.for_each(g)
            }
        }
        (None, None) => ov.map_inplace(|o| *o = f(*o, *o)),
    }
    Ok(())
}

/// `out = f(x)` element by element (`x` None: the output's own elements; otherwise of the
/// output's shape); large outputs split across the run's threads.
pub(crate) fn map_into<T: Copy + Send + Sync>(
    x: Option<&ArrayD<T>>,
    out: &mut [T],
    dims: &[usize],
    f: impl Fn(T) -> T + Sync,
) -> Result<()> {
    zip_into(x, x, out, dims, |a, _| f(a))
}

/// Binary arithmetic into a given output (the ops of [`Bin`]; numeric dtypes; bool goes the
/// allocating way).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ArithInto(Bin);

impl ArithInto {
    pub(crate) fn of(op: &str) -> Option<Self> {
        Some(ArithInto(match op {
            "Add" | "AddV2" => Bin::Add,
            "Sub" => Bin::Sub,
            "Mul" => Bin::Mul,
            "Div" | "RealDiv" => Bin::Div,
            "DivNoNan" => Bin::DivNoNan,
            "FloorDiv" => Bin::FloorDiv,
            "FloorMod" => Bin::FloorMod,
            "Mod" => Bin::Mod,
            "Pow" => Bin::Pow,
            "Maximum" => Bin::Maximum,
            "Minimum" => Bin::Minimum,
            "SquaredDifference" => Bin::SquaredDifference,
            _ => return None,
        }))
    }

    pub(crate) fn accepts(&self, args: &[Option<&Value>], dtype: DataType, dims: &[usize]) -> bool {
        let numeric =
            !matches!(dtype, DataType::BOOL) && numeric!(dtype, T => T::DTYPE == dtype, false);
        numeric
            && args.len() == 2
            && args
                .iter()
                .all(|a| a.is_some_and(|x| broadcasts_to(x, dtype, dims)))
    }

    pub(crate) fn run(&self, args: &[Option<&Value>], d: Dest<'_>) -> Result<()> {
        let Dest {
            out,
            range,
            dims,
            alias,
        } = d;
        let dt = out.dtype();
        numeric!(dt, T => {
            let a = operand::<T>(args, 0, alias)?;
            let b = operand::<T>(args, 1, alias)?;
            arith_into(self.0, a, b, out_part::<T>(out, range)?, dims)
        }, Err(Error::unsupported(format!("{:?} into a buffer of {dt}", self.0))))
    }
}

/// [`super::arith`] into a given output.
fn arith_into<T: Arith>(
    op: Bin,
    a: Option<&ArrayD<T>>,
    b: Option<&ArrayD<T>>,
    out: &mut [T],
    dims: &[usize],
) -> Result<()> {
    with_bin!(op, T, f => zip_into(a, b, out, dims, f),
        g => checked_pairs!(g, T, |h| zip_into(a, b, out, dims, h)))
}

/// A unary float function into a given output: float inputs only (integers and bool go the
/// allocating way, which keeps some of them exact).
pub(crate) struct UnaryInto {
    cheap: Option<Cheap>,
    /// The vectorised f32 function of this op, if there is one.
    vec32: Option<VFn>,
    f: FloatFn,
    params: Vec<f64>,
    p32: Vec<f32>,
}

impl UnaryInto {
    pub(crate) fn of(info: &NodeInfo) -> Result<Option<Self>> {
        let op = info.op();
        let Some(f) = UNARY.contains(&op).then(|| float_fn(op)).flatten() else {
            return Ok(None);
        };
        let params = unary_params(info)?;
        Ok(Some(UnaryInto {
            cheap: Cheap::of(op),
            vec32: VFn::of_op(op, &params),
            f,
            p32: params.iter().map(|&v| v as f32).collect(),
            params,
        }))
    }

    pub(crate) fn accepts(&self, args: &[Option<&Value>], dtype: DataType, dims: &[usize]) -> bool {
        dtype.is_float()
            && matches!(
                dtype,
                DataType::FLOAT | DataType::DOUBLE | DataType::FLOAT16 | DataType::BF16
            )
            && matches!(args, [Some(x)] if x.dtype() == dtype && x.shape() == dims)
    }

    pub(crate) fn run(&self, args: &[Option<&Value>], d: Dest<'_>) -> Result<()> {
        let Dest {
            out,
            range,
            dims,
            alias,
        } = d;
        let (f, p, p32) = (self.f, &self.params, &self.p32);
        // f32 and f64: a cheap function inlined, any other through its pointer.
        macro_rules! real {
            ($t:ty, $via:ident, $params:expr) => {{
                let x = operand::<$t>(args, 0, alias)?;
                let o = out_part::<$t>(out, range)?;
                match self.cheap {
                    Some(k) => with_cheap!(k, $t, g => map_into(x, o, dims, g)),
                    None => map_into(x, o, dims, |v| (f.$via)(v, $params)),
                }
            }};
        }
        match out.dtype() {
            DataType::FLOAT if self.vec32.is_some() => {
                // The vectorised function where the input is in standard layout (or is the
                // output itself), else the scalar one.
                let x = operand::<f32>(args, 0, alias)?;
                let xs = match x {
                    None => Some(None),
                    Some(a) => a.as_slice().filter(|s| s.len() == range.len()).map(Some),
                };
                match (self.vec32, xs) {
                    (Some(v), Some(xs)) => {
                        vmath::map_par(v, xs, out_part::<f32>(out, range)?);
                        Ok(())
                    }
                    _ => real!(f32, f32, p32),
                }
            }
            DataType::FLOAT => real!(f32, f32, p32),
            DataType::DOUBLE => real!(f64, f64, p),
            DataType::FLOAT16 => {
                let x = operand::<f16>(args, 0, alias)?;
                map_into(x, out_part(out, range)?, dims, |v| {
                    f16::from_f32((f.f32)(v.to_f32(), p32))
                })
            }
            DataType::BF16 => {
                let x = operand::<bf16>(args, 0, alias)?;
                map_into(x, out_part(out, range)?, dims, |v| {
                    bf16::from_f32((f.f32)(v.to_f32(), p32))
                })
            }
            dt => Err(Error::unsupported(format!("a unary function into {dt}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::common::broadcast_shape;

    #[test]
    fn broadcasts_agrees_with_the_broadcast_shape() {
        let shapes: &[&[usize]] = &[
            &[],
            &[1],
            &[3],
            &[1, 3],
            &[2, 1],
            &[2, 3],
            &[4, 2, 3],
            &[3, 1],
        ];
        for &x in shapes {
            for &d in shapes {
                let want = broadcast_shape(x, d).is_ok_and(|b| b == d);
                assert_eq!(broadcasts(x, d), want, "{x:?} to {d:?}");
            }
        }
    }
}
