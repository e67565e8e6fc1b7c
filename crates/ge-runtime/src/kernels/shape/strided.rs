//! Copies of strided views of a standard-layout tensor into a new standard-layout one: the
//! data movement of Transpose, Slice, StridedSlice, Split and ReverseV2.
//!
//! A view is a base offset and, per output dim, a size and a (signed) stride into the source.
//! Dims of size 1 are dropped and neighbours that are contiguous in the source merged (the
//! channel shuffle's [1, 2, c, h, w] -> [1, c, 2, h, w] becomes 2 x c blocks of h * w), so the
//! innermost dim is as long as it can be: with stride 1 each output row is one `memcpy`, else a
//! strided gather. Large copies split across the run's threads by whole rows (a view that is
//! one contiguous run, by pieces of it).

use crate::error::Result;
use crate::kernels::common::{array, std_slice, strides_of, with_capacity, Maps};
use crate::par;
use crate::value::Value;
use ndarray::ArrayD;

/// A strided view: element (o_0, .., o_k) is `src[base + sum(o_i * strides[i])]`.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct View {
    base: usize,
    dims: Vec<usize>,
    strides: Vec<isize>,
}

impl View {
    /// The axes of a standard-layout tensor of shape `shape` in the order `perm` (a
    /// permutation of its axes, already checked).
    pub(super) fn permuted(shape: &[usize], perm: &[usize]) -> Option<View> {
        let st = strides_of(shape);
        Some(View {
            base: 0,
            dims: perm
                .iter()
                .map(|&p| shape.get(p).copied())
                .collect::<Option<_>>()?,
            strides: perm
                .iter()
                .map(|&p| isize::try_from(st[p]).ok())
                .collect::<Option<_>>()?,
        })
    }

    /// The view [`take_axes`](crate::kernels::common) reads when every map is an arithmetic
    /// progression of in-range indices (as Slice, Split and ReverseV2 make); None otherwise
    /// (a fill value, an index out of range, an irregular map).
    pub(super) fn of_maps(shape: &[usize], maps: &Maps) -> Option<View> {
        if maps.len() != shape.len() {
            return None;
        }
        let st = strides_of(shape);
        let (mut base, mut dims, mut strides) = (0usize, Vec::new(), Vec::new());
        for ((m, &d), &s) in maps.iter().zip(shape).zip(&st) {
            let first = match m.first() {
                Some(&Some(i)) if i < d => i,
                Some(_) => return None,
                None => 0,
            };
            let step = match m.get(1) {
                Some(&Some(i)) if i < d => i as isize - first as isize,
                Some(_) => return None,
                None => 0,
            };
            let regular = m
                .iter()
                .enumerate()
                .all(|(j, &i)| i.map(|i| i as isize) == Some(first as isize + j as isize * step));
            if !regular {
                return None;
            }
            base = base.checked_add(first.checked_mul(s)?)?;
            dims.push(m.len());
            strides.push(step.checked_mul(isize::try_from(s).ok()?)?);
        }
        Some(View {
            base,
            dims,
            strides,
        })
    }

    fn len(&self) -> usize {
        self.dims.iter().product()
    }

    /// The same view with dims of size 1 dropped and source-contiguous neighbours merged
    /// (at least one dim is kept).
    fn simplified(&self) -> View {
        let mut dims: Vec<usize> = Vec::with_capacity(self.dims.len());
        let mut strides: Vec<isize> = Vec::with_capacity(self.dims.len());
        for (&d, &s) in self.dims.iter().zip(&self.strides) {
            if d == 1 {
                continue;
            }
            match (dims.last_mut(), strides.last_mut()) {
                (Some(pd), Some(ps)) if *ps == s * d as isize => {
                    *pd *= d;
                    *ps = s;
                }
                _ => {
                    dims.push(d);
                    strides.push(s);
                }
            }
        }
        if dims.is_empty() {
            dims.push(1);
            strides.push(1);
        }
        View {
            base: self.base,
            dims,
            strides,
        }
    }

    /// The source offset of element `i` of the innermost dim's row number `row`.
    fn row_start(&self, mut row: usize) -> isize {
        let mut off = self.base as isize;
        let outer = self.dims.len() - 1;
        for (&d, &s) in self.dims[..outer].iter().zip(&self.strides[..outer]).rev() {
            off += (row % d) as isize * s;
            row /= d;
        }
        off
    }

    /// The view's elements of `src`, in standard order, into `out` (`self.len()` elements;
    /// every offset of the view inside `src`, as [`View::of_maps`] and [`View::permuted`]
    /// make them: an offset outside is an error, never a panic).
    pub(super) fn copy_into<T: Copy + Send + Sync>(&self, src: &[T], out: &mut [T]) -> Result<()> {
        let v = self.simplified();
        let inner = *v.dims.last().unwrap_or(&1);
        let step = *v.strides.last().unwrap_or(&1);
        if out.len() != v.len() {
            return Err(crate::error::Error::kernel(format!(
                "internal error: a strided copy of {} elements into {}",
                v.len(),
                out.len()
            )));
        }
        let bad =
            || crate::error::Error::kernel("internal error: a strided view outside its source");
        if step == 1 && v.dims.len() == 1 {
            // One contiguous run (a Slice or Split of the outermost axis): pieces of it.
            let at = v.base;
            let s = src.get(at..at + out.len()).ok_or_else(bad)?;
            let work = par::work(out.len(), par::cost::ELEMENT);
            return par::for_chunks_mut(out, 1, work, |start, o| {
                o.copy_from_slice(&s[start..start + o.len()]);
                Ok(())
            });
        }
        // Rows gathered from apart cost about twice a contiguous copy's element.
        let work = par::work(out.len(), par::cost::STRIDED);
        par::for_chunks_mut(out, inner.max(1), work, |start, rows| {
            for (row, o) in (start / inner.max(1)..).zip(rows.chunks_exact_mut(inner.max(1))) {
                let at = usize::try_from(v.row_start(row)).map_err(|_| bad())?;
                if step == 1 {
                    o.copy_from_slice(src.get(at..at + inner).ok_or_else(bad)?);
                } else if step > 0 {
                    let last = at + (inner - 1) * step as usize;
                    let s = src.get(at..=last).ok_or_else(bad)?;
                    o.iter_mut()
                        .zip(s.iter().step_by(step as usize))
                        .for_each(|(o, &x)| *o = x);
                } else {
                    let back = step.unsigned_abs();
                    let first = at.checked_sub((inner - 1) * back).ok_or_else(bad)?;
                    let s = src.get(first..=at).ok_or_else(bad)?;
                    o.iter_mut()
                        .zip(s.iter().rev().step_by(back))
                        .for_each(|(o, &x)| *o = x);
                }
            }
            Ok(())
        })
    }

    /// The view's elements of `a` (standard order or not) as a new standard-layout array.
    fn take<T: Copy + Send + Sync>(&self, a: &ArrayD<T>) -> Result<ArrayD<T>> {
        let src = std_slice(a);
        let n = self.len();
        let mut out = with_capacity(n)?;
        if let Some(&x) = src.first() {
            out.resize(n, x);
            self.copy_into(&src, &mut out)?;
        }
        array(&self.dims, out)
    }

    /// [`View::take`] for any value but strings (None for a string tensor).
    pub(super) fn take_value(&self, x: &Value) -> Option<Result<Value>> {
        if matches!(x, Value::Str(_) | Value::Variant(_)) {
            return None;
        }
        let r = (|| Ok(crate::map_array!(x, a => self.take(a)?)))();
        Some(r)
    }
}

/// `x` read through `maps` as [`take_value`](crate::kernels::common) reads it (no fill value),
/// through a strided copy when the maps are regular.
pub(super) fn take(x: &Value, maps: &Maps) -> Result<Value> {
    match View::of_maps(x.shape(), maps).and_then(|v| v.take_value(x)) {
        Some(r) => r,
        None => crate::kernels::common::take_value(x, maps, None),
    }
}

#[cfg(test)]
#[path = "strided_tests.rs"]
mod tests;
