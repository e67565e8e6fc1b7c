//! Small helpers shared by the special handlers.

use crate::error::{Error, Result};
use crate::translate::NodeCtx;
use es_core::{AttrValue, OutPort};

/// `axis` (ONNX allows negative values counting from the end) as an index into `rank` dims.
pub(crate) fn norm_axis(axis: i64, rank: usize, what: &str) -> Result<usize> {
    let r = rank as i64;
    let a = if axis < 0 { axis + r } else { axis };
    if !(0..r.max(1)).contains(&a) {
        return Err(Error::tr(format!(
            "{what} {axis} is out of range for rank {rank}"
        )));
    }
    Ok(a as usize)
}

/// Every axis of `axes` normalised with [`norm_axis`]; repeats are an error.
#[allow(dead_code)] // for the reduction and squeeze handlers
pub(crate) fn norm_axes(axes: &[i64], rank: usize, what: &str) -> Result<Vec<usize>> {
    let mut out = Vec::with_capacity(axes.len());
    for &a in axes {
        let n = norm_axis(a, rank, what)?;
        if out.contains(&n) {
            return Err(Error::tr(format!("{what} {axes:?} repeats axis {n}")));
        }
        out.push(n);
    }
    Ok(out)
}

/// Largest number of elements a translator materialises as a constant (index tables, DFT
/// matrices, fills): model-given shapes must not make the importer allocate without bound.
pub(crate) const MAX_CONST_ELEMS: i64 = 1 << 26;

/// The product of `dims`, when it is at most [`MAX_CONST_ELEMS`].
pub(crate) fn const_elems(dims: &[i64], what: &str) -> Result<usize> {
    dims.iter()
        .try_fold(1i64, |a, &d| if d < 0 { None } else { a.checked_mul(d) })
        .filter(|&n| n <= MAX_CONST_ELEMS)
        .map(|n| n as usize)
        .ok_or_else(|| {
            Error::unsupported(format!(
                "{what} of shape {dims:?}: more than {MAX_CONST_ELEMS} elements to build at import"
            ))
        })
}

pub(crate) fn first(outs: Vec<OutPort>, op: &str) -> Result<OutPort> {
    outs.first()
        .copied()
        .ok_or_else(|| Error::tr(format!("internal: {op} has no output")))
}

// NodeCtx helpers shared by several families.
impl NodeCtx<'_> {
    /// Fails on any attribute not in `known`.
    pub(crate) fn check_attrs(&self, known: &[&str]) -> Result<()> {
        for a in &self.node.attribute {
            let name = a.name.as_deref().unwrap_or("");
            if !known.contains(&name) {
                return Err(Error::unsupported(format!(
                    "{}: attribute '{name}' is not supported",
                    self.op_type()
                )));
            }
        }
        Ok(())
    }

    pub(crate) fn concat(&mut self, xs: &[OutPort], axis: i64) -> Result<OutPort> {
        let a = self.const_i64(&[axis], &[])?;
        let outs = self.op(
            "ConcatV2",
            vec![xs.iter().map(|p| Some(*p)).collect(), vec![Some(a)]],
            vec![],
        )?;
        first(outs, "ConcatV2")
    }

    pub(crate) fn transpose(&mut self, x: OutPort, perm: &[i64]) -> Result<OutPort> {
        let p = self.const_i64(perm, &[perm.len() as i64])?;
        self.op1("Transpose", &[x, p], vec![])
    }

    pub(crate) fn split_n(&mut self, x: OutPort, axis: i64, n: usize) -> Result<Vec<OutPort>> {
        if n == 1 {
            return Ok(vec![x]);
        }
        let a = self.const_i32(&[axis as i32], &[])?;
        self.op(
            "Split",
            vec![vec![Some(a)], vec![Some(x)]],
            vec![("num_split", AttrValue::Int(n as i64))],
        )
    }

    pub(crate) fn pack(&mut self, xs: &[OutPort], axis: i64) -> Result<OutPort> {
        let outs = self.op(
            "Pack",
            vec![xs.iter().map(|p| Some(*p)).collect()],
            vec![("axis", AttrValue::Int(axis))],
        )?;
        first(outs, "Pack")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_are_normalised_and_checked() {
        assert_eq!(norm_axis(-1, 4, "axis").unwrap(), 3);
        assert!(norm_axis(4, 4, "axis").is_err());
        assert!(norm_axis(-5, 4, "axis").is_err());
        assert_eq!(norm_axes(&[0, -1], 3, "axes").unwrap(), vec![0, 2]);
        assert!(norm_axes(&[1, -2], 3, "axes").is_err());
    }
}
