//! Concat into a given output (the plan's buffers): each input copied into its slice along the
//! axis, the offsets fixed at compile from the static shapes. An input missing from the
//! arguments was written straight into its slice by its producer (Concat in place), so it is
//! skipped: no copy.

use crate::error::{Error, Result};
use crate::kernels::{norm_axis, NodeInfo};
use crate::par;
use crate::value::{usize_dims, Value};
use ndarray::{Axis, Slice};
use std::ops::Range;

pub(crate) struct ConcatInto {
    axis: usize,
    /// The node's inputs that are concatenated (the others give the axis).
    data: Range<usize>,
    /// Per data input: its start along the axis and its static dims.
    parts: Vec<(usize, Vec<usize>)>,
}

impl ConcatInto {
    /// For a ConcatD, ConcatV2 or Concat node whose axis is constant and whose inputs have
    /// static shapes that concatenate to `out` (anything else: None, the allocating kernel).
    pub(crate) fn of(info: &NodeInfo, out: &[usize]) -> Result<Option<Self>> {
        let n = info.inputs.len();
        let const_axis = |i: usize| {
            info.const_inputs
                .get(i)
                .and_then(Option::as_ref)
                .and_then(|v| v.to_i64_vec().first().copied())
        };
        let (data, axis) = match info.op() {
            "ConcatD" => (0..n, Some(info.int("concat_dim", 0)?)),
            "ConcatV2" => (0..n.saturating_sub(1), const_axis(n.saturating_sub(1))),
            "Concat" => (1..n, const_axis(0)),
            _ => return Ok(None),
        };
        let Some(Ok(axis)) = axis.map(|a| norm_axis(a, out.len())) else {
            return Ok(None);
        };
        if data.is_empty() || out.is_empty() {
            return Ok(None);
        }
        let mut parts = Vec::with_capacity(data.len());
        let mut at = 0usize;
        for j in data.clone() {
            let Some(d) = info.inputs.get(j).and_then(Option::as_ref) else {
                return Ok(None);
            };
            let Some(dims) = usize_dims(d.shape.dims()).filter(|_| !d.shape.is_unknown_rank())
            else {
                return Ok(None);
            };
            let same =
                dims.len() == out.len() && (0..out.len()).all(|k| k == axis || dims[k] == out[k]);
            if !same || d.dtype != info.out_dtype(0)? {
                return Ok(None);
            }
            parts.push((at, dims.clone()));
            at += dims[axis];
        }
        Ok((at == out[axis]).then_some(ConcatInto { axis, data, parts }))
    }

    /// The node's input index of each data input.
    pub(crate) fn data(&self) -> Range<usize> {
        self.data.clone()
    }

    /// Whether every part is one contiguous range of the output: the axis is the outermost
    /// dim that is not 1.
    pub(crate) fn contiguous(&self, out: &[usize]) -> bool {
        out[..self.axis].iter().all(|&d| d == 1)
    }

    /// The elements of the output that data input `i` (counted among the data inputs) covers,
    /// where [`Self::contiguous`].
    pub(crate) fn range(&self, i: usize, out: &[usize]) -> Range<usize> {
        let inner: usize = out[self.axis + 1..].iter().product();
        let (start, dims) = &self.parts[i];
        start * inner..(start + dims[self.axis]) * inner
    }

    pub(crate) fn run(
        &self,
        args: &[Option<&Value>],
        out: &mut Value,
        dims: &[usize],
    ) -> Result<()> {
        if out.shape() != dims {
            return Err(Error::kernel("the concat buffer does not fit"));
        }
        for (j, (start, pdims)) in self.data.clone().zip(&self.parts) {
            // Absent: written in place by its producer.
            let Some(x) = args.get(j).copied().flatten() else {
                continue;
            };
            if x.shape() != pdims.as_slice() {
                return Err(Error::kernel(format!(
                    "concat input {j} has shape {:?}, not {pdims:?}",
                    x.shape()
                )));
            }
            // Standard layouts: runs of memcpy, split across the run's threads when large.
            let inner: usize = dims[self.axis + 1..].iter().product();
            let run = pdims[self.axis] * inner;
            let row = dims[self.axis] * inner;
            macro_rules! runs {
                ($($v:ident),*) => {
                    match (&mut *out, x) {
                        $((Value::$v(o), Value::$v(a)) => match (o.as_slice_mut(), a.as_slice()) {
                            (Some(o), Some(a)) => copy_runs(o, a, row, start * inner, run).map(|()| true),
                            _ => Ok(false),
                        },)*
                        _ => Ok(false),
                    }
                };
            }
            if runs!(F32, F64, F16, BF16, I8, I16, I32, I64, U8, U16, U32, U64, Bool)? {
                continue;
            }
            let s = Slice::from(*start..start + pdims[self.axis]);
            macro_rules! copy {
                ($($v:ident),*) => {
                    match (&mut *out, x) {
                        $((Value::$v(o), Value::$v(a)) => o.slice_axis_mut(Axis(self.axis), s).assign(a),)*
                        (o, a) => {
                            return Err(Error::kernel(format!(
                                "concatenating {} with {}",
                                o.dtype(),
                                a.dtype()
                            )))
                        }
                    }
                };
            }
            copy!(F32, F64, F16, BF16, I8, I16, I32, I64, U8, U16, U32, U64, Bool);
        }
        Ok(())
    }
}

/// Copies `src` (rows of `run` elements) into `out` (rows of `row`), each row at `off`: one
/// `memcpy` per row for plain values (one for the whole part when there is one row), split across the run's
/// threads by rows, or by pieces of the one row, when the copy is large.
pub(super) fn copy_runs<T: Clone + Send + Sync>(
    out: &mut [T],
    src: &[T],
    row: usize,
    off: usize,
    run: usize,
) -> Result<()> {
    if src.is_empty() {
        return Ok(());
    }
    let rows = src.len().checked_div(run).unwrap_or(0);
    if run == 0 || rows * run != src.len() || out.len() != rows * row || off + run > row {
        return Err(Error::kernel("internal error: concat runs do not fit"));
    }
    if rows == 1 {
        return par::for_chunks_mut(&mut out[off..off + run], 1, run, |start, dst| {
            dst.clone_from_slice(&src[start..start + dst.len()]);
            Ok(())
        });
    }
    par::for_chunks_mut(out, row, src.len(), |start, dst| {
        let first = start / row;
        for (i, r) in dst.chunks_exact_mut(row).enumerate() {
            let s = &src[(first + i) * run..(first + i + 1) * run];
            r[off..off + run].clone_from_slice(s);
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`copy_runs`] against a plain loop, one row and several, at 1 and 2 threads (the large
    /// cases split).
    #[test]
    fn copy_runs_writes_each_row_at_its_offset() {
        for (rows, row, off, run) in [
            (1, 700_000, 123, 600_001),
            (3, 400_000, 0, 399_999),
            (5, 9, 4, 5),
        ] {
            let src: Vec<u32> = (0..rows * run).map(|i| i as u32).collect();
            let mut want = vec![u32::MAX; rows * row];
            for r in 0..rows {
                want[r * row + off..r * row + off + run]
                    .copy_from_slice(&src[r * run..(r + 1) * run]);
            }
            for threads in [1, 2] {
                let mut out = vec![u32::MAX; rows * row];
                par::run_with(threads, || copy_runs(&mut out, &src, row, off, run)).unwrap();
                assert!(
                    out == want,
                    "{rows} rows of {run} at {off} in {row}, {threads} threads"
                );
            }
        }
        let mut out = vec![0u8; 10];
        assert!(copy_runs(&mut out, &[1, 2, 3], 5, 3, 3).is_err());
        assert!(copy_runs(&mut out, &[], 5, 3, 3).is_ok());
    }
}
