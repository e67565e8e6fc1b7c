//! MatrixDeterminant: LU with partial pivoting in f64 per matrix, rounded once; a 0 x 0 matrix
//! has determinant 1 (numpy); complex dtypes are not supported.

use crate::error::{Error, Result};
use crate::kernels::common::{alloc, array, numel, with_capacity};
use crate::kernels::{input, Kernel, NodeInfo};
use crate::value::Value;

/// The determinant of the n x n row-major matrix `m` (overwritten): LU with partial pivoting.
fn det_lu(m: &mut [f64], n: usize) -> f64 {
    if m.iter().any(|v| v.is_nan()) {
        return f64::NAN;
    }
    let mut det = 1.0;
    for k in 0..n {
        let (mut p, mut best) = (k, m[k * n + k].abs());
        for i in k + 1..n {
            let v = m[i * n + k].abs();
            if v > best {
                (p, best) = (i, v);
            }
        }
        if best == 0.0 {
            return 0.0;
        }
        if p != k {
            for j in 0..n {
                m.swap(k * n + j, p * n + j);
            }
            det = -det;
        }
        let piv = m[k * n + k];
        det *= piv;
        for i in k + 1..n {
            let f = m[i * n + k] / piv;
            for j in k + 1..n {
                m[i * n + j] -= f * m[k * n + j];
            }
        }
    }
    det
}

pub(super) fn determinant_factory(_: &NodeInfo) -> Result<Kernel> {
    Ok(Box::new(|inputs| {
        let x = input(inputs, 0)?;
        let dt = x.dtype();
        if !dt.is_float() {
            return Err(Error::kernel(format!(
                "MatrixDeterminant needs a float tensor, got {dt}"
            )));
        }
        let xs = x.shape();
        let r = xs.len();
        if r < 2 || xs[r - 1] != xs[r - 2] {
            return Err(Error::kernel(format!(
                "MatrixDeterminant needs square matrices [..., M, M], got shape {xs:?}"
            )));
        }
        let n = xs[r - 1];
        let batch = &xs[..r - 2];
        let count = numel(batch)?;
        let data = x.to_f64_vec();
        let mut out = with_capacity(count)?;
        let mut buf = if count > 0 {
            alloc(numel(&[n, n])?, 0.0)?
        } else {
            Vec::new()
        };
        for b in 0..count {
            let src = data
                .get(b * n * n..(b + 1) * n * n)
                .ok_or_else(|| Error::kernel("internal error: matrix out of range"))?;
            buf.copy_from_slice(src);
            out.push(det_lu(&mut buf, n));
        }
        Ok(vec![Value::F64(array(batch, out)?).cast(dt)?])
    }))
}

#[cfg(test)]
mod tests {

    use crate::kernels::common::testing::{f32s, f64s, i32s, run1};

    #[test]
    fn determinants() {
        let x = f64s(&[2, 2, 2], &[1.0, 2.0, 3.0, 4.0, 0.0, 1.0, 1.0, 0.0]);
        let y = run1("MatrixDeterminant", &[], &[&x]).unwrap();
        assert_eq!(y.shape(), &[2]);
        assert_eq!(y.to_f64_vec(), vec![-2.0, -1.0]);
        let sing = f32s(&[3, 3], &[1.0, 2.0, 3.0, 2.0, 4.0, 6.0, 0.0, 1.0, 1.0]);
        assert_eq!(
            run1("MatrixDeterminant", &[], &[&sing])
                .unwrap()
                .to_f64_vec(),
            vec![0.0]
        );
        let empty = f64s(&[0, 0], &[]);
        assert_eq!(
            run1("MatrixDeterminant", &[], &[&empty])
                .unwrap()
                .to_f64_vec(),
            vec![1.0]
        );
        let nan = f64s(&[2, 2], &[0.0, f64::NAN, 1.0, 1.0]);
        assert!(run1("MatrixDeterminant", &[], &[&nan])
            .unwrap()
            .to_f64_vec()[0]
            .is_nan());
        assert!(run1("MatrixDeterminant", &[], &[&f64s(&[2, 3], &[0.0; 6])]).is_err());
        assert!(run1("MatrixDeterminant", &[], &[&i32s(&[1, 1], &[1])]).is_err());
    }
}
