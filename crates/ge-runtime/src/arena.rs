//! Buffers a plan reuses across replays.
//!
//! A [`crate::plan::Plan`] gives every intermediate of a static size a buffer id at capture
//! (tensors whose lifetimes do not overlap share one, as the memory plan places them in one
//! arena region). A run takes one [`Workspace`] from the plan's [`Pool`] (one lock per run,
//! none per step; runs on several threads each hold their own), and a step that writes into a
//! given output (the "into" kernels, [`crate::kernels::IntoOp`]) gets the buffer of its id back,
//! reshaped to its output without allocating ([`fit`]). A slot whose last reader ran parks its
//! value in its buffer id for the next step (or the next run) that uses it. So after a first
//! run, a replay of a graph of such steps allocates nothing but what it returns.

use crate::error::{Error, Result};
use crate::value::{Elem, Value};
use es_core::DataType;
use half::{bf16, f16};
use ndarray::{ArrayD, IxDyn};
use std::ops::Range;
use std::sync::Mutex;

/// Where an into-kernel writes: elements `range` of `out`, the output's `dims`; `alias`: the
/// input that was moved into `out` (absent from the arguments: in place).
pub(crate) struct Dest<'a> {
    pub(crate) out: &'a mut Value,
    pub(crate) range: Range<usize>,
    pub(crate) dims: &'a [usize],
    pub(crate) alias: Option<usize>,
}

/// The array of one element type inside a [`Value`].
pub(crate) trait ElemArray: Elem + Default {
    fn array(v: &Value) -> Option<&ArrayD<Self>>;
    fn array_mut(v: &mut Value) -> Option<&mut ArrayD<Self>>;
}

macro_rules! elem_array {
    ($($t:ty => $var:ident),*) => {$(
        impl ElemArray for $t {
            fn array(v: &Value) -> Option<&ArrayD<Self>> {
                match v {
                    Value::$var(a) => Some(a),
                    _ => None,
                }
            }
            fn array_mut(v: &mut Value) -> Option<&mut ArrayD<Self>> {
                match v {
                    Value::$var(a) => Some(a),
                    _ => None,
                }
            }
        }
    )*};
}
elem_array!(f32 => F32, f64 => F64, f16 => F16, bf16 => BF16, i8 => I8, i16 => I16,
    i32 => I32, i64 => I64, u8 => U8, u16 => U16, u32 => U32, u64 => U64, bool => Bool);

/// Elements `range` of `out` (a standard-layout array of `T`) as a slice; `None` for another
/// dtype, another layout or a range past its end.
pub(crate) fn out_slice<T: ElemArray>(
    out: &mut Value,
    range: std::ops::Range<usize>,
) -> Option<&mut [T]> {
    T::array_mut(out)?.as_slice_mut()?.get_mut(range)
}

/// `raw` (recycled, any length) as an array of `dims`: grown to `cap` elements' capacity when it
/// holds fewer than it needs (the only allocation), then cut or filled to the element count.
fn refit<T: Clone + Default>(mut raw: Vec<T>, dims: &[usize], cap: usize) -> Result<ArrayD<T>> {
    let n: usize = dims.iter().product();
    if raw.capacity() < n {
        let bytes = (cap.max(n) as u128).saturating_mul(std::mem::size_of::<T>() as u128);
        crate::memplan::check_alloc(bytes)?;
        raw = Vec::new();
        raw.try_reserve_exact(cap.max(n)).map_err(|_| {
            Error::Resource(format!("could not allocate {bytes} bytes for a buffer"))
        })?;
    }
    raw.resize(n, T::default());
    ArrayD::from_shape_vec(IxDyn(dims), raw).map_err(|e| Error::kernel(e.to_string()))
}

/// A value of `dtype` and `dims` made from `old` (a parked buffer, or nothing): no allocation
/// when `old` has the capacity; `cap` is the capacity to give a new buffer (the most its id
/// holds at once). The elements are not meaningful: an into kernel overwrites all of them.
pub(crate) fn fit(
    old: Option<Value>,
    dtype: DataType,
    dims: &[usize],
    cap: usize,
) -> Result<Value> {
    macro_rules! go {
        ($var:ident) => {{
            let raw = match old {
                Some(Value::$var(a)) => a.into_raw_vec_and_offset().0,
                _ => Vec::new(),
            };
            Value::$var(refit(raw, dims, cap)?)
        }};
    }
    Ok(match dtype {
        DataType::FLOAT => go!(F32),
        DataType::DOUBLE => go!(F64),
        DataType::FLOAT16 => go!(F16),
        DataType::BF16 => go!(BF16),
        DataType::INT8 => go!(I8),
        DataType::INT16 => go!(I16),
        DataType::INT32 => go!(I32),
        DataType::INT64 => go!(I64),
        DataType::UINT8 => go!(U8),
        DataType::UINT16 => go!(U16),
        DataType::UINT32 => go!(U32),
        DataType::UINT64 => go!(U64),
        DataType::BOOL => go!(Bool),
        d if d.is_low_precision() => {
            let raw = match old {
                Some(Value::Lowp(_, a) | Value::U8(a)) => a.into_raw_vec_and_offset().0,
                _ => Vec::new(),
            };
            Value::Lowp(d, refit(raw, dims, cap)?)
        }
        d => return Err(Error::unsupported(format!("a buffer of {d}"))),
    })
}

/// `$body` with `$a` the array of `$v` (a reference to a value), for the dtypes buffers hold
/// and the low-precision patterns; any other value evaluates `$other`.
macro_rules! each_array {
    ($v:expr, $a:ident => $body:expr, $other:expr) => {{
        #[allow(unreachable_patterns)]
        match $v {
            Value::F32($a) => $body,
            Value::F64($a) => $body,
            Value::F16($a) => $body,
            Value::BF16($a) => $body,
            Value::I8($a) => $body,
            Value::I16($a) => $body,
            Value::I32($a) => $body,
            Value::I64($a) => $body,
            Value::U8($a) => $body,
            Value::U16($a) => $body,
            Value::U32($a) => $body,
            Value::U64($a) => $body,
            Value::Bool($a) => $body,
            Value::Lowp(_, $a) => $body,
            _ => $other,
        }
    }};
}

/// Whether an output of `dtype` and `dims` can be written over `v`: it has that dtype and
/// shape, in standard layout.
pub(crate) fn writable(v: &Value, dtype: DataType, dims: &[usize]) -> bool {
    v.dtype() == dtype && v.shape() == dims && each_array!(v, a => a.is_standard_layout(), false)
}

/// The address of `v`'s first element (0 for a value of another kind).
pub(crate) fn address(v: &Value) -> usize {
    each_array!(v, a => a.as_ptr() as usize, 0)
}

/// Whether `v` is an array a buffer can be made from again ([`fit`]): a numeric, boolean or
/// low-precision tensor.
pub(crate) fn recyclable(v: &Value) -> bool {
    each_array!(v, _a => true, false)
}

/// `v` given the shape `dims` (same element count) without a copy; `Err(v)` where it is not in
/// standard layout or the count differs.
pub(crate) fn reshaped(v: Value, dims: &[usize]) -> std::result::Result<Result<Value>, Value> {
    let n: usize = dims.iter().product();
    if v.len() != n || !each_array!(&v, a => a.is_standard_layout(), false) {
        return Err(v);
    }
    let bad = |e: ndarray::ShapeError| Error::kernel(e.to_string());
    macro_rules! go {
        ($($var:ident),*) => {
            #[allow(unreachable_patterns)]
            match v {
                $(Value::$var(a) => Ok(a.into_shape_with_order(IxDyn(dims)).map(Value::$var).map_err(bad)),)*
                Value::Lowp(dt, a) => {
                    Ok(a.into_shape_with_order(IxDyn(dims)).map(|a| Value::Lowp(dt, a)).map_err(bad))
                }
                v => Err(v),
            }
        };
    }
    go!(F32, F64, F16, BF16, I8, I16, I32, I64, U8, U16, U32, U64, Bool)
}

/// What one run holds: its slots (the values alive) and the parked buffers.
#[derive(Default)]
pub(crate) struct Workspace {
    pub slots: Vec<Option<Value>>,
    pub bufs: Vec<Option<Value>>,
}

impl Workspace {
    /// Parks the value of `slot` (whose last reader ran) in buffer `buf`, or drops it.
    #[inline]
    pub fn release(&mut self, slot: usize, buf: Option<usize>) {
        let v = self.slots[slot].take();
        if let (Some(b), Some(v)) = (buf, v) {
            self.bufs[b] = Some(v);
        }
    }
}

/// The workspaces of a plan's finished runs, for its next runs.
#[derive(Default)]
pub(crate) struct Pool(Mutex<Vec<Workspace>>);

impl Pool {
    /// A workspace for one run: a parked one, or a new one of `slots` slots and `bufs` buffers.
    pub fn take(&self, slots: usize, bufs: usize) -> Workspace {
        let ws = self.0.lock().unwrap_or_else(|p| p.into_inner()).pop();
        ws.unwrap_or_else(|| {
            let mut w = Workspace::default();
            w.slots.resize_with(slots, || None);
            w.bufs.resize_with(bufs, || None);
            w
        })
    }
    /// Parks `ws` (every slot emptied) for a later run.
    pub fn give(&self, ws: Workspace) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(ws);
    }
    /// Drops every parked workspace (their buffers freed).
    pub fn clear(&self) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_reuses_a_buffer_with_the_capacity_and_grows_one_without() {
        let v = fit(None, DataType::FLOAT, &[2, 3], 8).unwrap();
        let Value::F32(a) = &v else { panic!() };
        assert_eq!(a.shape(), &[2, 3]);
        let p = a.as_ptr();
        let w = fit(Some(v), DataType::FLOAT, &[8], 8).unwrap();
        let Value::F32(b) = &w else { panic!() };
        assert_eq!((b.shape(), b.as_ptr()), (&[8usize][..], p));
        // Too small: a new buffer of the requested element count.
        let x = fit(Some(w), DataType::FLOAT, &[3, 4], 8).unwrap();
        assert_eq!(x.shape(), &[3, 4]);
        // Another dtype: a new buffer of that dtype.
        let y = fit(Some(x), DataType::INT64, &[5], 5).unwrap();
        assert_eq!((y.dtype(), y.shape()), (DataType::INT64, &[5usize][..]));
        assert!(fit(None, DataType::STRING, &[1], 1).is_err());
    }

    #[test]
    fn out_slice_checks_dtype_and_range() {
        let mut v = fit(None, DataType::FLOAT, &[4], 4).unwrap();
        assert_eq!(out_slice::<f32>(&mut v, 1..3).map(|s| s.len()), Some(2));
        assert!(out_slice::<f32>(&mut v, 3..5).is_none());
        assert!(out_slice::<f64>(&mut v, 0..1).is_none());
    }
}
